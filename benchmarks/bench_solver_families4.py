"""``solve_mapping``'s ``max_leakage`` mode on instance families aimed at its lazy path (the search bracketed by the
cheapest constant mapping, the perfect-privacy LP solved only when that search ends uncertified).

Same checks, counts and options as ``bench_solver_families.py`` (``--n --seed --reference --families --dump``): the
reference, ``check``, the run loop and the options' wrappers are imported from the three scripts, not copied. Each
draw asks for targets at shares of ``f0`` (the leakage at the smallest distortion): just below ``LAZY_LP_SHARE``
(``1e-3 (1 - 1e-6)`` and ``9e-4``), at it, and ``1.5e-3, 0.01, 0.1, 0.5, 0.9, 0.999``. The label says ``lazy`` when
the constant mapping brackets the search (``LAZY_LP_SHARE`` met, an output allowed for every input). After the table:
the number of delta solves (``certificate['n_delta_solves']``) per family, and every target taking more than
``MAX_SOLVES``.

Families (priors: Dirichlet(0.1 .. 1) or p(c) over 10 decades; |A| 2 .. 24, k 5 .. 200; the reference up to
``REF_K`` inputs):

* ``const_far``: squared-Euclidean points with a far cluster: the cheapest constant mapping is far from the answer;
* ``const_near``: one output nearly free for every input (``d[:, j] = eps``, ``1 - I`` elsewhere): the constant
  mapping nearly as cheap as the identity, so targets near ``f0`` are answered near it;
* ``forbid_one``: an output forbidden for one input only: every output (no constant mapping: the LP path) or a
  single one (the lazy path, the constant mapping on another output);
* ``dup_metric``: Hamming codes, L1 or squared-Euclidean points, with duplicated outputs (exact or 1e-12 apart);
* ``big_a``: |A| 12 .. 24 classes, k 5 .. 40, any of the distortions above;
* ``large_k``: k 100 .. 200, |A| 2 .. 6 (no reference above ``REF_K``).

Usage::

    python benchmarks/bench_solver_families4.py --n 3 --seed 0 --reference
    python benchmarks/bench_solver_families4.py --families forbid_one --n 3 --reference --dump findings/
    python benchmarks/bench_solver_families4.py --quick    # one draw of const_far, forbid_one

``--quick`` (as in ``bench_solver_families.py``): one draw of these few families, to check the script works.
"""

import os
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_solver_families as base  # noqa: E402 - the reference, checks and run loop
import bench_solver_families3 as fam3  # noqa: E402, F401 - its run_one / check wrappers (installed in base)

from privrelease.mapping import solve_mapping, squared_euclidean_distortion  # noqa: E402
from privrelease.mapping._solver import LAZY_LP_SHARE  # noqa: E402

SHARES = (("1e-3(1-1e-6)", LAZY_LP_SHARE * (1 - 1e-6)), ("9e-4", 9e-4), ("1e-3", LAZY_LP_SHARE), ("1.5e-3", 1.5e-3),
          ("0.01", 0.01), ("0.1", 0.1), ("0.5", 0.5), ("0.9", 0.9), ("0.999", 0.999))
MAX_SOLVES = 12
REF_K = 80
SOLVES = defaultdict(list)  # family -> n_delta_solves of each certified target
MANY = []  # targets taking more than MAX_SOLVES delta solves
_FAMILY = [None]


# ----------------------------------------------------------------------------- priors and distortions
def _prior(rng, na, k):
    """Dirichlet(0.1 .. 1) over the joint, or p(c) over 10 decades with Dirichlet posteriors."""
    if rng.random() < 0.6:
        return base._dirichlet_prior(rng, na, k), "dir"
    pc = 10.0 ** rng.uniform(-10, 0, size=k)
    post = rng.dirichlet(np.full(na, rng.uniform(0.2, 1.0)), size=k).T
    return base._with_posterior(rng, pc / pc.sum(), post), "pc10"


def _hamming(rng, k):
    bits = rng.integers(0, 2, size=(k, int(rng.integers(3, 9))))
    return (bits[:, None] != bits[None]).sum(axis=2).astype(float)


def _l1(rng, k):
    X = rng.normal(size=(k, 3))
    return np.abs(X[:, None] - X[None]).sum(axis=2)


def _metric(rng, k):
    kind = ("hamming", "l1", "sqeuc")[rng.integers(3)]
    d = {"hamming": _hamming, "l1": _l1, "sqeuc": base._points_d}[kind](rng, k)
    return d, kind


def d_far(rng, k):
    """Points with a far cluster holding a third of the outputs: constant mappings pay the distance between them."""
    X = rng.normal(size=(k, 2))
    X[: max(1, k // 3)] += rng.uniform(5, 30)
    return squared_euclidean_distortion(X), "far"


def d_near(rng, k):
    """``1 - I`` with one output nearly free for every input: the constant mapping on it nearly as cheap as the
    identity."""
    d = 1.0 - np.eye(k)
    j = int(rng.integers(k))
    d[:, j] = float(rng.choice([1e-3, 1e-2, 0.1]))
    d[j, j] = 0.0
    return d, "near"


def d_forbid(rng, k):
    """A metric with an output forbidden for one input only: for every output (a derangement) or one."""
    d, kind = _metric(rng, k)
    if rng.random() < 0.6:
        perm = (np.arange(k) + int(rng.integers(1, k))) % k  # input perm[j] may not go to output j
        d[perm, np.arange(k)] = np.inf
        return d, kind + " inf-all"
    i, j = rng.choice(k, size=2, replace=False)
    d[i, j] = np.inf
    return d, kind + " inf-one"


def d_dup(rng, k):
    """A metric with duplicated outputs (exact copies or 1e-12 relative apart)."""
    d, kind = _metric(rng, k)
    dup = rng.choice(k, size=int(rng.integers(1, k + 1)))
    extra = d[:, dup] * rng.choice([1.0, 1.0 + 1e-12], size=dup.size)
    return np.hstack([d, extra]), kind + " dup"


DISTS = {"const_far": d_far, "const_near": d_near, "forbid_one": d_forbid, "dup_metric": d_dup}
ALL = list(DISTS) + ["big_a", "large_k"]
QUICK = ["const_far", "forbid_one"]  # --quick: one draw of each


def _f0_bits(prior, d):
    """The optimal leakage at the smallest distortion (bits), as the solver's search starts from it."""
    dmin = base.d_bounds(prior, d)[0]
    return float(solve_mapping(prior, d, dmin).leakage)


def _lazy(prior, d, t, f0):
    const = np.isfinite(d).all(axis=0).any()
    return const and t * (1 - 1e-12) >= max(LAZY_LP_SHARE * f0, 1e3 * 1e-6)


def cases(family, rng):
    """Yield ``(prior, d, mode, value, label, with_reference)`` for one draw of a family."""
    _FAMILY[0] = family
    if family in DISTS:
        na, k = int(rng.integers(2, 7)), int(rng.integers(5, 61))
        gen = DISTS[family]
    elif family == "big_a":
        na, k = int(rng.integers(12, 25)), int(rng.integers(5, 41))
        gen = DISTS[list(DISTS)[rng.integers(len(DISTS))]]
    else:
        na, k = int(rng.integers(2, 7)), int(rng.integers(100, 201))
        gen = DISTS[list(DISTS)[rng.integers(len(DISTS))]]
    d, dkind = gen(rng, k)
    prior, pkind = _prior(rng, na, k)
    f0 = _f0_bits(prior, d)
    lab = f"{pkind} {dkind} k={d.shape[0]}x{d.shape[1]} |A|={na} f0={f0:.3g}"
    for what, share in SHARES:
        t = share * f0
        yield prior, d, "target", t, f"{lab} share={what}{' lazy' if _lazy(prior, d, t, f0) else ''}", \
            k <= REF_K


_check = base.check


def check(prior, d, mode, value, res, with_ref):
    """``check`` recording each target's delta solves (the family from the running ``cases``)."""
    n = res.certificate.get("n_delta_solves")
    if mode == "target" and n is not None:
        SOLVES[_FAMILY[0]].append(n)
        if n > MAX_SOLVES:
            MANY.append(f"{_FAMILY[0]} k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]} target={float(value)!r}: "
                        f"{n} delta solves")
    return _check(prior, d, mode, value, res, with_ref)


base.check = check


def summary():
    print(f"\ndelta solves per certified target (n_delta_solves; > {MAX_SOLVES} listed):")
    for fam, ns in SOLVES.items():
        ns = np.asarray(ns)
        hist = ", ".join(f"{v}: {c}" for v, c in zip(*np.unique(ns, return_counts=True)))
        print(f" {fam:>12}: n={ns.size} median {np.median(ns):g} max {ns.max()} | {hist}")
    for m in MANY:
        print(" - MANY SOLVES", m)


if __name__ == "__main__":
    base.main(cases=cases, families=ALL, doc=__doc__, quick_families=QUICK)
    summary()
