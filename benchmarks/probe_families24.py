"""``solve_mapping`` and ``privacy_distortion_curve`` on a new round of instance families (issue 10, stop 47):
rating-cluster geometry under Chebyshev and asymmetric costs, exact ties with duplicated inputs and outputs, a
class of mass 1e-6 or 0 among |A| = 5 .. 10, and distortion scales of 1e-9 and 1e9.

Same counts, checks and options as ``bench_solver_families.py`` (``--n --seed --reference --families --dump``):
its reference (plain cvxpy, CLARABEL), ``check`` and run loop are imported, not copied; this script only draws the
instances.

Families (k = 8 .. 200 inputs, a few draws at 300 .. 600 with ``--big``):

* ``kc_cheb``: k-means centres (k clusters) of ``make_ratings`` users' dense rating rows, the prior the counts of
  (attribute, cluster) (exact zeros; a class without users is a whole zero row); Chebyshev distance between the
  centres, or (half the draws) an asymmetric one-sided cost ``sum_i max(0, y_i - x_i) + 4 max(0, x_i - y_i)``;
* ``asym_dir``: points in 1-D or 3-D, the directional cost ``alpha max(0, y - x) + beta max(0, x - y)`` summed
  over coordinates with ``beta / alpha`` 1 .. 1000, or its L-infinity form; skewed Dirichlet(0.05 .. 0.3) prior;
* ``dup_ties``: integer costs 0 .. 2 with duplicated inputs (identical cost rows, prior columns multiples of each
  other) and duplicated outputs (identical cost columns): many exact ties;
* ``tiny_a``: |A| = 5 .. 10, one class of mass 1e-6 and (half the draws) another of mass 0, a quarter of the inputs
  of probability 0; Chebyshev distance of 2-D points;
* ``scaled``: one of the above with its distortion multiplied by 1e-9 or 1e9.

Each draw forbids 15% of the transitions (never a row's cheapest) with probability 0.3, and is solved at the
budgets ``d_min (1 + 1e-6)`` (``d_min + 1e-6`` of the range when ``d_min = 0``), the no-privacy point ``d_pp``
(the cheapest zero-leakage distortion) and ``d_pp (1 - 1e-6)``, and one between; then in one further mode drawn
from ``target`` (max_leakage = 0.3 of the leakage at ``d_min``), ``ml_delta``, ``ml_target`` (0.3 of the maximal
leakage at ``d_min``) and ``curve`` (6 points from ``d_min`` to ``1.05 d_pp``).

Usage::

    python benchmarks/probe_families24.py --n 4 --seed 0 --reference
    python benchmarks/probe_families24.py --families tiny_a --n 2 --reference --dump findings/
    python benchmarks/probe_families24.py --quick
"""

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_solver_families as base  # noqa: E402 - the reference, checks and run loop

from privrelease.datasets import make_ratings  # noqa: E402
from privrelease.mapping._lp import perfect_privacy_mapping  # noqa: E402
from privrelease.mapping._problem import Problem  # noqa: E402
from privrelease.mappers._quantize import kmeans  # noqa: E402

BIG = "--big" in sys.argv
if BIG:
    sys.argv.remove("--big")


def _k(rng):
    if BIG:
        return int(rng.integers(300, 601))
    u = rng.random()
    return int(rng.integers(8, 41)) if u < 0.7 else int(rng.integers(41, 101)) if u < 0.93 else \
        int(rng.integers(150, 201))


def _cheb(X, Y=None):
    Y = X if Y is None else Y
    return np.abs(X[:, None] - Y[None]).max(axis=2)


def _directional(X, beta, linf=False):
    diff = X[None] - X[:, None]  # y - x
    cost = np.maximum(diff, 0.0) + beta * np.maximum(-diff, 0.0)
    return cost.max(axis=2) if linf else cost.sum(axis=2)


def gen_kc_cheb(rng):
    na, k = int(rng.integers(2, 8)), _k(rng)
    w = rng.dirichlet(np.full(na, 0.5)) + 1e-3
    R, attr, _ = make_ratings(n_users=max(4 * k, 200), n_items=25, attribute_proportion=list(w),
                              attribute_strength=float(rng.uniform(0.5, 3)), random_state=int(rng.integers(1 << 30)),
                              return_dense=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        C, lab = kmeans(R.astype(float), k, int(rng.integers(1 << 30)))
    prior = np.zeros((na, k))
    np.add.at(prior, (np.asarray(attr, dtype=int), lab), 1.0)
    prior /= prior.sum()
    if rng.random() < 0.5:
        return prior, _cheb(C), "cheb"
    return prior, _directional(C, 4.0), "onesided"


def gen_asym_dir(rng):
    na, k = int(rng.integers(2, 11)), _k(rng)
    X = rng.normal(size=(k, int(rng.choice([1, 3]))))
    prior = rng.dirichlet(np.full(na * k, rng.uniform(0.05, 0.3))).reshape(na, k)
    beta = float(10 ** rng.uniform(0, 3))
    linf = bool(rng.random() < 0.4)
    return prior, _directional(X, beta, linf), f"beta={beta:.3g}{' linf' if linf else ''}"


def gen_dup_ties(rng):
    na, k0 = int(rng.integers(2, 8)), max(4, _k(rng) // 2)
    d0 = rng.integers(0, 3, size=(k0, k0)).astype(float)
    np.fill_diagonal(d0, 0.0)
    rows = np.concatenate([np.arange(k0), rng.choice(k0, size=int(rng.integers(2, k0 + 1)))])
    cols = np.concatenate([np.arange(k0), rng.choice(k0, size=int(rng.integers(1, k0 + 1)))])
    d = d0[np.ix_(rows, cols)]
    p0 = rng.dirichlet(np.full(na * k0, rng.uniform(0.2, 1.0))).reshape(na, k0)
    prior = p0[:, rows] * rng.choice([0.5, 1.0, 2.0], size=rows.size)[None, :]
    return prior / prior.sum(), d, f"{k0}->{d.shape[0]}x{d.shape[1]}"


def gen_tiny_a(rng):
    na, k = int(rng.integers(5, 11)), _k(rng)
    prior = rng.dirichlet(np.full(na * k, rng.uniform(0.1, 1.0))).reshape(na, k)
    prior[:, rng.choice(k, size=k // 4, replace=False)] = 0.0
    prior[rng.integers(1, na)] = 0.0
    prior /= prior.sum()
    prior[0] *= 1e-6 / prior[0].sum()
    if rng.random() < 0.5:
        prior[1:] /= prior[1:].sum() / (1 - 1e-6)
    else:  # keep the zero row
        live = prior[1:].sum(axis=1) > 0
        prior[1:][live] /= prior[1:][live].sum() / (1 - 1e-6)
    prior /= prior.sum()
    return prior, _cheb(rng.normal(size=(k, 2))), "tiny"


def gen_scaled(rng):
    gen = (gen_asym_dir, gen_dup_ties, gen_tiny_a)[rng.integers(3)]
    prior, d, lab = gen(rng)
    s = float(rng.choice([1e-9, 1e9]))
    return prior, d * s, f"{gen.__name__[4:]} {lab} x{s:g}"


GENS = {"kc_cheb": gen_kc_cheb, "asym_dir": gen_asym_dir, "dup_ties": gen_dup_ties, "tiny_a": gen_tiny_a,
        "scaled": gen_scaled}


def cases(family, rng):
    """Yield ``(prior, d, mode, value, label, with_reference)`` for one draw of a family."""
    prior, d, lab = GENS[family](rng)
    if rng.random() < 0.3:
        forb = rng.random(d.shape) < 0.15
        forb[np.arange(d.shape[0]), d.argmin(axis=1)] = False
        d = np.where(forb, np.inf, d)
        lab += " forb"
    lab = f"{lab} k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]}"
    dmin, dmax = base.d_bounds(prior, d)
    _, dpp = perfect_privacy_mapping(Problem(prior, d))
    lo = dmin * (1 + 1e-6) if dmin > 0 else dmin + 1e-6 * (dmax - dmin)
    for name, b in (("dmin(1+1e-6)", lo), ("d_pp", dpp), ("d_pp(1-1e-6)", dpp * (1 - 1e-6)),
                    ("between", dmin + rng.uniform(0.05, 0.9) * (dpp - dmin))):
        if np.isfinite(b) and b >= dmin:
            yield prior, d, "delta", float(b), f"{lab} {name}", True
    mode = ("target", "ml_delta", "ml_target", "curve")[rng.integers(4)]
    cheapest = base._argmin_mapping(d)
    if mode == "target":
        yield prior, d, "target", 0.3 * max(base.mi_bits(prior, cheapest), 0.0), f"{lab} L=0.3", True
    elif mode == "ml_delta":
        yield prior, d, "ml_delta", float(dmin + rng.uniform(0.05, 0.9) * (dpp - dmin)), f"{lab} between", True
    elif mode == "ml_target":
        yield prior, d, "ml_target", 0.3 * base.ml_bits(prior, cheapest), f"{lab} ML=0.3", True
    else:
        pts = dmin + np.linspace(0, 1.05, 6) ** 2 * (dpp - dmin)
        yield prior, d, "curve", pts, lab, True


if __name__ == "__main__":
    base.main(cases=cases, families=list(GENS), doc=__doc__, quick_families=["asym_dir", "dup_ties"])
