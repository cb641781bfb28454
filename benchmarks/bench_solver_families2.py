"""``solve_mapping`` on instance families of another kind than ``bench_solver_families.py``'s.

Same checks, counts and options as ``bench_solver_families.py`` (its reference, ``check``
and run loop are imported, not copied): per instance ``solve_mapping(solver="auto")`` and
``solver="fast"``, each answer checked for feasibility and, with ``--reference``, against
the plain cvxpy formulation (CLARABEL).

Families:

1. made by the library itself: ``mapper_q`` (the prior and cost that
   ``QuantizedPrivacyMapper`` builds on ``make_ratings`` data, 2-10 classes, 10-150
   clusters, metric euclidean / sqeuclidean / hamming, delta or max_leakage, both leakage
   kinds), ``mapper_e`` (``ErasureMapper`` on random categorical columns);
2. priors: ``denormal_prior`` (a third of the entries 1e-320 .. 1e-300), ``zero_class`` (a
   private class of zero mass), ``one_heavy`` (one entry holds ``1 - 1e-12`` of the mass),
   ``big_a`` (``|A|`` = 10..21, k = 5..40), ``tiny_sizes`` (k and ``|A|`` of 2 or 3, 1 to 3
   outputs);
3. distortions with structure: ``hamming_codes`` (Hamming distance between binary codes,
   massive ties), ``dup_outputs`` (duplicated inputs and outputs), ``block_const`` (block-constant),
   ``rank_one`` (``d(c, j) = u_c + v_j``),
   ``free_col`` (a column of zeros: a free output for everybody), ``huge_entry`` (one
   ``1e12`` per row next to ``[0, 1]`` entries), ``float_limits`` (entries from 1e-300 to
   1, times 1e-300 .. 1e300), ``inf_but_two`` (inf except the diagonal and one entry per row);
4. budgets and targets on breakpoints and at the ends: ``near_min`` (delta = d_min + 1e-15 ..
   1e-5 of the range, d_min (1 + 1e-13), d_min (1 + 1e-11)), ``odd_values`` (delta = inf, 1e308;
   targets of 5e-324 .. 1e-12 bits, both leakage kinds), ``breakpoints`` (delta = the
   distortion of the nearest-output mapping, of the perfect-privacy LP, of a random deterministic mapping,
   each +- 1 ulp), ``vertex_targets`` (max_leakage = the leakage of a deterministic mapping
   that merges outputs, +- 1 ulp);
5. ``ml_struct``: leakage="maximal_leakage" (both modes) on the families of 2 and 3;
6. ``curve_odd``: privacy_distortion_curve with repeated, unsorted and denormal-spaced deltas.

Usage::

    python benchmarks/bench_solver_families2.py --n 10 --seed 0 --reference
    python benchmarks/bench_solver_families2.py --families mapper_q breakpoints --n 5 --reference --dump findings/
    python benchmarks/bench_solver_families2.py --quick    # one draw of tiny_sizes, block_const, breakpoints

``--quick`` (as in ``bench_solver_families.py``): one draw of these few families, to check the script works.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_solver_families as base  # noqa: E402 - the reference, checks and run loop

from privrelease.mapping._lp import perfect_privacy_mapping  # noqa: E402
from privrelease.mapping._problem import Problem  # noqa: E402


# ----------------------------------------------------------------------------- made by the library
class _Captured(Exception):
    pass


def _capture(fit):
    """The ``(prior, cost)`` a mapper hands to the engine (its solve is cut short)."""
    import privrelease.mappers._base as mb

    got = {}

    def grab(prior, cost, *args, **kwargs):
        got["prior"], got["cost"] = np.array(prior, dtype=float), np.array(cost, dtype=float)
        raise _Captured()

    saved = mb.solve_mapping, mb.privacy_distortion_curve
    mb.solve_mapping = mb.privacy_distortion_curve = grab
    try:
        fit()
    except _Captured:
        pass
    finally:
        mb.solve_mapping, mb.privacy_distortion_curve = saved
    if "prior" not in got:
        raise RuntimeError("the mapper did not call the engine")
    return got["prior"], got["cost"]


def gen_mapper_q(rng):
    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    na = int(rng.integers(2, 11))
    k = int(rng.integers(10, 151))
    w = rng.dirichlet(np.full(na, 2.0)) + 0.02
    R, y, _ = make_ratings(n_users=int(rng.integers(4, 9)) * k, n_items=int(rng.integers(20, 80)),
                        attribute_proportion=list(w), attribute_strength=float(rng.uniform(0.3, 2.0)),
                        random_state=int(rng.integers(2**31)), return_dense=True)
    metric = ("euclidean", "sqeuclidean", "hamming")[rng.integers(3)]
    m = QuantizedPrivacyMapper(n_clusters=k, delta=1.0, metric=metric, random_state=0)
    prior, d = _capture(lambda: m.fit(R, y))
    return prior, d, metric


def gen_mapper_e(rng):
    import pandas as pd

    from privrelease.mappers import ErasureMapper

    n = int(rng.integers(300, 1500))
    na = int(rng.integers(2, 6))
    y = rng.integers(0, na, n)
    cols = {}
    for j in range(int(rng.integers(2, 5))):
        card = int(rng.integers(2, 4))
        v = rng.integers(0, card, n)
        cols[f"x{j}"] = np.where(rng.random(n) < rng.uniform(0.2, 0.8), y % card, v)
    m = ErasureMapper(delta=1.0, random_state=0)
    prior, d = _capture(lambda: m.fit(pd.DataFrame(cols), y))
    return prior, d, "erasure"


# ----------------------------------------------------------------------------- priors
def gen_zero_class(rng):
    prior, d = base.gen_asym(rng)
    prior[rng.integers(prior.shape[0])] = 0.0
    if prior.sum() == 0 or (prior.sum(axis=1) > 0).sum() < 2:
        prior = np.vstack([prior, base._dirichlet_prior(rng, 1, d.shape[0])])
    return prior / prior.sum(), d


def gen_one_heavy(rng):
    na, k = base._sizes(rng, False)
    prior = base._dirichlet_prior(rng, na, k)
    i, j = rng.integers(na), rng.integers(k)
    prior[i, j] = 0.0
    prior *= 1e-12 / prior.sum()
    prior[i, j] = 1.0 - 1e-12
    d = base._points_d(rng, k) if rng.random() < 0.5 else rng.random((k, k))
    return prior, d


def gen_big_a(rng):
    na, k = int(rng.integers(10, 22)), int(rng.integers(5, 41))
    prior = base._dirichlet_prior(rng, na, k)
    return prior, (base._points_d(rng, k), 1.0 - np.eye(k), rng.random((k, k)))[rng.integers(3)]


# ----------------------------------------------------------------------------- structured distortions
def gen_hamming_codes(rng):
    na, k = base._sizes(rng, False)
    bits = int(rng.integers(3, 9))
    codes = rng.integers(0, 2, size=(k, bits))
    return base._dirichlet_prior(rng, na, k), (codes[:, None, :] != codes[None, :, :]).sum(axis=2).astype(float)


def gen_block_const(rng):
    na, k = base._sizes(rng, False)
    nb = int(rng.integers(2, 6))
    lab = rng.integers(nb, size=k)
    B = rng.integers(0, 4, size=(nb, nb)).astype(float)
    np.fill_diagonal(B, 0.0)
    return base._dirichlet_prior(rng, na, k), B[lab][:, lab]


def gen_rank_one(rng):
    na, k = base._sizes(rng, False)
    kh = int(rng.integers(2, k + 1))
    return base._dirichlet_prior(rng, na, k), rng.random(k)[:, None] + rng.random(kh)[None, :]


def gen_free_col(rng):
    prior, d = (base.gen_asym, base.gen_ties, base.gen_free)[rng.integers(3)](rng)
    d[:, rng.integers(d.shape[1])] = 0.0
    return prior, d


def gen_huge_entry(rng):
    na, k = base._sizes(rng, False)
    d = rng.random((k, k))
    d[np.arange(k), rng.integers(k, size=k)] = 1e12
    return base._dirichlet_prior(rng, na, k), d


def gen_float_limits(rng):
    na, k = base._sizes(rng, False)
    d = 10.0 ** rng.uniform(-300, 0, size=(k, k))
    if rng.random() < 0.5:
        np.fill_diagonal(d, 0.0)
    return base._dirichlet_prior(rng, na, k), d * 10.0 ** rng.choice([-300, -150, 0, 150, 300])


def gen_inf_but_two(rng):
    na, k = base._sizes(rng, False)
    d = np.full((k, k), np.inf)
    np.fill_diagonal(d, rng.random(k) * rng.integers(0, 2))
    other = (np.arange(k) + rng.integers(1, k, size=k)) % k
    d[np.arange(k), other] = rng.random(k) + 0.5
    return base._dirichlet_prior(rng, na, k), d


def gen_tiny_sizes(rng):
    """k and |A| of 2 or 3, 1 to 3 outputs (a single output too)."""
    na, k, kh = int(rng.integers(2, 4)), int(rng.integers(2, 4)), int(rng.integers(1, 4))  # |A| = 1, k = 1 refused
    d = rng.integers(0, 3, size=(k, kh)).astype(float) if rng.random() < 0.5 else rng.random((k, kh))
    return base._dirichlet_prior(rng, na, k), d


def gen_dup_outputs(rng):
    """Every output and input duplicated (identical rows and columns of the distortion)."""
    prior, d = (base.gen_asym, base.gen_ties, base.gen_free)[rng.integers(3)](rng)
    k = d.shape[0]
    idx = rng.integers(k, size=min(2 * k, 60))
    return base._dirichlet_prior(rng, prior.shape[0], idx.size), d[idx][:, idx]


def gen_denormal_prior(rng):
    """A third of the prior's entries denormal (1e-320 .. 1e-308) or at 1e-300."""
    prior, d = (base.gen_asym, base.gen_ties, base.gen_ratings)[rng.integers(3)](rng)
    tiny = rng.random(prior.shape) < 0.33
    prior[tiny] = rng.choice([1e-320, 1e-310, 1e-300], size=int(tiny.sum()))
    return prior / prior.sum(), d


PRIORS = {"denormal_prior": gen_denormal_prior, "zero_class": gen_zero_class, "one_heavy": gen_one_heavy,
          "big_a": gen_big_a,
          "tiny_sizes": gen_tiny_sizes}
STRUCT = {"hamming_codes": gen_hamming_codes, "block_const": gen_block_const, "rank_one": gen_rank_one,
          "free_col": gen_free_col, "huge_entry": gen_huge_entry, "float_limits": gen_float_limits,
          "inf_but_two": gen_inf_but_two, "dup_outputs": gen_dup_outputs}
BASE2 = {**PRIORS, **STRUCT}
MAPPERS = {"mapper_q": gen_mapper_q, "mapper_e": gen_mapper_e}
SPECIAL = ("breakpoints", "near_min", "odd_values", "vertex_targets", "ml_struct", "curve_odd")
ALL = list(MAPPERS) + list(BASE2) + list(SPECIAL)
QUICK = ["tiny_sizes", "block_const", "breakpoints"]  # --quick: one draw of each


def _pick(rng, table):
    name = list(table)[rng.integers(len(table))]
    return name, table[name]


def _det_dist(prior, d, cols):
    M = np.zeros(d.shape)
    M[np.arange(d.shape[0]), cols] = 1.0
    return base.exp_dist(prior, M, d), M


def _ulps(x):
    return (("-1ulp", np.nextafter(x, -np.inf)), ("", x), ("+1ulp", np.nextafter(x, np.inf)))


def mapper_cases(rng, prior, d, lab, iac, *, ref=True, ml_up_to=60):
    """A mapper's instance in every mode: a budget, a target below the no-privacy leakage ``iac``, and (up to
    ``ml_up_to`` inputs) both maximal-leakage modes; ``ref``: check the first two against the reference."""
    yield prior, d, "delta", base._mid(rng, prior, d), lab + " delta", ref
    yield prior, d, "target", float(rng.uniform(0.05, 0.6)) * iac, lab + " target", ref
    if d.shape[0] <= ml_up_to:
        yield prior, d, "ml_delta", base._mid(rng, prior, d), lab + " ml delta", True
        iml = base.ml_bits(prior, base._argmin_mapping(d))
        yield prior, d, "ml_target", float(rng.uniform(0.05, 0.6)) * iml, lab + " ml target", True


def cases(family, rng):
    """Yield ``(prior, d, mode, value, label, with_reference)`` for one draw of a family."""
    if family in MAPPERS:
        prior, d, metric = MAPPERS[family](rng)
        lab = f"{metric} k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]}"
        iac = max(base.mi_bits(prior, np.eye(d.shape[0], d.shape[1]) if d.shape[0] == d.shape[1]
                               else base._argmin_mapping(d)), 0.0)
        yield from mapper_cases(rng, prior, d, lab, iac)
    elif family in BASE2:
        prior, d = BASE2[family](rng)
        yield prior, d, "delta", base._mid(rng, prior, d), f"k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]}", True
    elif family == "breakpoints":
        name, gen = _pick(rng, {**BASE2, **{n: base.BASE[n] for n in ("asym", "ties", "ratings")}})
        prior, d = gen(rng)
        fin = np.where(np.isfinite(d), d, np.inf)
        dnear, _ = _det_dist(prior, d, fin.argmin(axis=1))
        _, dpp = perfect_privacy_mapping(Problem(prior / prior.sum(), d))
        ok = np.isfinite(fin)
        cols = np.array([rng.choice(np.flatnonzero(r)) for r in ok])
        drand, _ = _det_dist(prior, d, cols)
        for what, x in (("near", dnear), ("pp", dpp), ("det", drand)):
            for u, b in _ulps(float(x)):
                if np.isfinite(b) and b >= dnear:
                    yield prior, d, "delta", b, f"{name} k={d.shape[0]} {what}{u}", True
    elif family == "near_min":
        name, gen = _pick(rng, {**BASE2, **{n: base.BASE[n] for n in ("asym", "dyn_range", "pc_range")}})
        prior, d = gen(rng)
        dmin, dmax = base.d_bounds(prior, d)
        for r in (1e-15, 1e-12, 1e-10, 1e-8, 1e-7, 1e-5):
            yield prior, d, "delta", dmin + r * (dmax - dmin), f"{name} k={d.shape[0]} dmin+{r:g} range", True
        if dmin > 0:
            for r in (1e-13, 1e-11):
                yield prior, d, "delta", dmin * (1 + r), f"{name} k={d.shape[0]} dmin(1+{r:g})", True
    elif family == "odd_values":
        name, gen = _pick(rng, {**BASE2, **{n: base.BASE[n] for n in ("asym", "ties", "ratings")}})
        prior, d = gen(rng)
        lab = f"{name} k={d.shape[0]}"
        for b in (np.inf, 1e308):
            yield prior, d, "delta", b, f"{lab} delta={b:g}", True
        if not np.isinf(d).any():  # a constant mapping reaches every target
            for t in (5e-324, 1e-300, 1e-15, 1e-12):
                yield prior, d, "target", t, f"{lab} L={t:g}", True
                yield prior, d, "ml_target", t, f"{lab} ML={t:g}", True
    elif family == "vertex_targets":
        name, gen = _pick(rng, {**BASE2, **{n: base.BASE[n] for n in ("asym", "ties", "ratings")}})
        prior, d = gen(rng)
        fin = np.where(np.isfinite(d), d, np.inf)
        cols = fin.argmin(axis=1)
        merged = cols.copy()
        outs = np.unique(cols)
        if outs.size > 2:  # merge about half the outputs in use into others (a vertex of lower leakage)
            drop = rng.choice(outs, size=outs.size // 2, replace=False)
            for c in np.flatnonzero(np.isin(cols, drop)):
                allowed = np.flatnonzero(np.isfinite(fin[c]) & ~np.isin(np.arange(d.shape[1]), drop))
                if allowed.size:
                    merged[c] = allowed[np.argmin(fin[c, allowed])]
        for what, cc in (("near", cols), ("merged", merged)):
            _, M = _det_dist(prior, d, cc)
            L = max(base.mi_bits(prior, M), 0.0)
            for u, t in _ulps(L):
                if t >= 0:
                    yield prior, d, "target", t, f"{name} k={d.shape[0]} L={what}{u}", True
    elif family == "ml_struct":
        name, gen = _pick(rng, BASE2)
        prior, d = gen(rng)
        yield prior, d, "ml_delta", base._mid(rng, prior, d), f"{name} k={d.shape[0]} delta", True
        iac = base.ml_bits(prior, base._argmin_mapping(d) if d.shape[0] != d.shape[1] else np.eye(d.shape[0]))
        # forbidden entries can keep every mapping above a positive maximal leakage (no constant mapping):
        # the target then lies between that least value (the epigraph LP) and the identity's
        lo = base.ref_maxleak(prior, d, np.inf) if np.isinf(d).any() else 0.0
        yield prior, d, "ml_target", lo + float(rng.uniform(0.1, 0.6)) * max(iac - lo, 0.0), \
            f"{name} k={d.shape[0]} target", True
    elif family == "curve_odd":
        name, gen = _pick(rng, {**BASE2, **{n: base.BASE[n] for n in ("asym", "ties", "ratings")}})
        prior, d = gen(rng)
        dmin, dmax = base.d_bounds(prior, d)
        mid = dmin + rng.uniform(0.1, 0.9) * (dmax - dmin)
        deltas = np.concatenate([dmin + rng.random(4) * (dmax - dmin),  # unsorted
                                 [mid, mid],  # repeated
                                 mid + np.arange(3) * 5e-324,  # denormal-spaced
                                 [dmin, np.nextafter(dmin, np.inf)]])
        yield prior, d, "curve", rng.permutation(deltas), f"{name} k={d.shape[0]}", True


if __name__ == "__main__":
    base.main(cases=cases, families=ALL, doc=__doc__, quick_families=QUICK)
