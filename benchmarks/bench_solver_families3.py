"""``solve_mapping`` on a third round of instance families, of another kind than ``bench_solver_families.py``'s and ``bench_solver_families2.py``'s.

Same checks, counts and options (``--n --seed --reference --families --dump``): the reference, ``check``,
the run loop and the mappers' capture are imported from the two scripts, not copied. The API's other
arguments (``tol``, ``solver``, ``warm_start``, ``n_jobs``) travel with the value of a case (a float or an
array carrying ``.opts``); ``run_one`` and ``check`` are wrapped to pass them on (a looser ``tol`` widens the
reference check to ``tol`` bits: the certificate promises no more).

Families:

1. made by the library from the data it ships: ``adult_q`` (``QuantizedPrivacyMapper`` on the UCI Adult
   numeric columns, attribute sex / race / income / sex x income / race x sex, 10-300 clusters, every
   metric, prior counts or model, smoothing 0 or 1, 100% / 10% / 5% of the users disclosing),
   ``adult_e`` (``ErasureMapper`` on Adult's categorical columns, same attributes and shares),
   ``iris_q`` (Iris, 3 species), ``politics_q`` (``make_politics_tv``, plain or binarized),
   ``realistic_q`` (``make_realistic_ratings`` with one attribute of 2-6 classes or two attributes);
   each: delta, max_leakage and both maximal-leakage modes;
2. priors estimated from few users: ``few_users`` (multinomial counts / n, n = k / 3 .. 3 k: exact zeros and
   ties), ``row_multiples`` (classes whose rows are exact multiples of each other on a subset of the inputs:
   independence there), ``tied_cols`` (p(a, c) equal for many c);
3. distortions of another kind: ``one_way`` (asymmetric, free moves one way: a zero triangle),
   ``tri_violation`` (a metric with random shortcuts and detours), ``plus_eps`` (``d + 1e-9``, ``d + 1e-9 max d``),
   ``dup_costs`` (duplicated outputs with different costs), ``neg_zero`` (``-0.0`` entries),
   ``ulp_apart`` (entries, rows and columns 1 ulp apart);
4. the API at its edges: ``tol_edge`` (tol 1e-12 .. 1e-2, delta and max_leakage), ``solver_arg``
   (``solver="fast"`` / ``"cvxpy"`` given explicitly), ``warm`` (``warm_start`` from another budget's result,
   the identity, a uniform and an infeasible mapping), ``curve_api`` (``n_jobs=2``, a list with duplicates,
   unsorted, one point), ``target_edge`` (max_leakage = the no-privacy leakage, 1 ulp and 1e-9 above,
   1e-12 relative and 1e-6 below; maximal-leakage targets 1e-12 .. 1e-6), ``medium_k`` (k = 150 .. 260,
   |A| = 3 .. 10).

Usage::

    python benchmarks/bench_solver_families3.py --n 4 --seed 0 --reference
    python benchmarks/bench_solver_families3.py --families adult_q tol_edge --n 3 --reference --dump findings/
    python benchmarks/bench_solver_families3.py --quick    # one draw of one_way, dup_costs, tol_edge

``--quick`` (as in ``bench_solver_families.py``): one draw of these few families, to check the script works.
"""

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_solver_families as base  # noqa: E402 - the reference, checks and run loop
import bench_solver_families2 as fam2  # noqa: E402 - the mappers' capture

from privrelease.mapping import privacy_distortion_curve, solve_mapping  # noqa: E402


# ----------------------------------------------------------------------------- options carried by the value
class OptFloat(float):
    """A budget or target with the call's other arguments (``opts``)."""

    def __new__(cls, x, **opts):
        self = super().__new__(cls, x)
        self.opts = opts
        return self

    def __repr__(self):
        return f"{float(self)!r}{self.opts}"


class OptList(list):
    """A curve's deltas (kept as the type the user passes: list, tuple or array) with options."""

    def __init__(self, xs, deltas=None, **opts):
        super().__init__(float(x) for x in xs)
        self.deltas = xs if deltas is None else deltas
        self.opts = opts


_run_one, _check = base.run_one, base.check


def run_one(prior, d, mode, value, solver):
    opts = getattr(value, "opts", None)
    if not opts:
        return _run_one(prior, d, mode, value, solver)
    kw = {k: v for k, v in opts.items() if k in ("tol", "warm_start", "n_jobs")}
    if "solver" in opts and solver == "auto":
        solver = opts["solver"]

    def solve():
        if mode == "curve":
            return privacy_distortion_curve(prior, d, value.deltas, solver=solver, return_mappings=True, **kw)[1]
        kw.pop("n_jobs", None)
        if callable(kw.get("warm_start")):
            kw["warm_start"] = kw["warm_start"](prior, d)
        val = float(value)
        lk = "maximal_leakage" if mode.startswith("ml_") else "mutual_information"
        if mode in ("delta", "ml_delta"):
            return [solve_mapping(prior, d, val, leakage=lk, solver=solver, **kw)]
        return [solve_mapping(prior, d, max_leakage=val, leakage=lk, solver=solver, **kw)]

    return base.guarded(solve)


def check(prior, d, mode, value, res, with_ref):
    tol = getattr(value, "opts", {}).get("tol", 1e-6)
    saved = base.TOL_BITS, base.DIST_RTOL
    base.TOL_BITS = max(saved[0], tol)
    base.DIST_RTOL = saved[1] * max(1.0, tol / 1e-6)
    try:
        probs, ref = _check(prior, d, mode, float(value), res, with_ref)
    finally:
        base.TOL_BITS, base.DIST_RTOL = saved
    return probs, ref


base.run_one, base.check = run_one, check


# ----------------------------------------------------------------------------- made by the library
_ADULT = None


def _adult():
    global _ADULT
    if _ADULT is None:
        from privrelease.datasets import load_adult

        _ADULT = load_adult()
    return _ADULT


def _adult_y(rng, df):
    """An attribute of Adult: sex, race (5), income, or a joint one (2-D y)."""
    what = ("sex", "race", "income", "sex x income", "race x sex")[rng.integers(5)]
    cols = what.split(" x ")
    Y = np.column_stack([df[c].cat.codes.to_numpy() for c in cols]).astype(np.int64)
    return what, (Y[:, 0] if Y.shape[1] == 1 else Y)


def _opt_in(rng, y):
    """Every user, or only 10% / 5% disclosing their attribute (the others -1)."""
    share = (1.0, 0.1, 0.05)[rng.integers(3)]
    if share < 1:
        hide = rng.random(y.shape[0]) >= share
        y = y.copy()
        y[hide] = -1
    return share, y


def gen_adult_q(rng):
    from privrelease.mappers import QuantizedPrivacyMapper

    df = _adult()
    idx = rng.choice(len(df), size=int(rng.integers(3000, 12001)), replace=False)
    sub = df.iloc[idx]
    X = np.column_stack([sub["age"] / 10, sub["education-num"] / 2, sub["hours-per-week"] / 10,
                         np.log1p(sub["capital-gain"]), np.log1p(sub["capital-loss"])]).astype(float)
    what, y = _adult_y(rng, sub)
    share, y = _opt_in(rng, y)
    metric = ("euclidean", "sqeuclidean", "hamming")[rng.integers(3)]
    k = int(rng.integers(10, 301)) if rng.random() < 0.3 else int(rng.integers(10, 61))
    m = QuantizedPrivacyMapper(n_clusters=k, delta=1.0, metric=metric, space="raw",
                               prior=("counts", "model")[int(rng.random() < 0.3 and y.ndim == 1)],
                               smoothing=float(rng.choice([0.0, 1.0])), random_state=0)
    prior, d = fam2._capture(lambda: m.fit(X, y))
    return prior, d, f"{what} {share:.0%} {metric} s={m.smoothing:g} {m.prior}"


def gen_adult_e(rng):
    from privrelease.mappers import ErasureMapper

    df = _adult()
    idx = rng.choice(len(df), size=int(rng.integers(500, 8001)), replace=False)
    sub = df.iloc[idx]
    what, y = _adult_y(rng, sub)
    share, y = _opt_in(rng, y)
    pool = ["workclass", "education", "marital-status", "occupation", "relationship", "native-country"]
    pool = [c for c in pool if c not in what]
    cols = list(rng.choice(pool, size=int(rng.integers(1, 3)), replace=False))
    if "education" in cols or "occupation" in cols or "native-country" in cols:
        cols = cols[:1]
    X = sub[cols].astype(object).fillna("?").astype(str).reset_index(drop=True)  # '?' in the file: missing
    m = ErasureMapper(delta=1.0, random_state=0)
    prior, d = fam2._capture(lambda: m.fit(X, y))
    return prior, d, f"{what} {share:.0%} {'+'.join(cols)}"


def gen_iris_q(rng):
    from sklearn.datasets import load_iris

    from privrelease.mappers import QuantizedPrivacyMapper

    X, y = load_iris(return_X_y=True)
    share, y = _opt_in(rng, y) if rng.random() < 0.3 else (1.0, y)
    if share < 1 and np.unique(y[y >= 0]).size < 2:
        share, y = 1.0, load_iris(return_X_y=True)[1]
    metric = ("euclidean", "sqeuclidean")[rng.integers(2)]
    m = QuantizedPrivacyMapper(n_clusters=int(rng.integers(10, 61)), delta=1.0, metric=metric, space="raw",
                               smoothing=float(rng.choice([0.0, 1.0])), random_state=0)
    prior, d = fam2._capture(lambda: m.fit(X, y))
    return prior, d, f"iris {share:.0%} {metric} s={m.smoothing:g}"


def gen_politics_q(rng):
    from privrelease.datasets import make_politics_tv

    from privrelease.mappers import QuantizedPrivacyMapper

    binarize = bool(rng.random() < 0.5)
    X, y = make_politics_tv(random_state=int(rng.integers(1000)), binarize=binarize)[:2]
    y = np.asarray(y)
    share, y = _opt_in(rng, y)
    metric = ("euclidean", "sqeuclidean", "hamming")[rng.integers(3)]
    k = int(rng.integers(10, 301)) if rng.random() < 0.3 else int(rng.integers(10, 61))
    m = QuantizedPrivacyMapper(n_clusters=k, delta=1.0, metric=metric, space="raw" if binarize else "auto",
                               profile=("posterior", "cluster")[rng.integers(2)],
                               smoothing=float(rng.choice([0.0, 1.0])), random_state=0)
    prior, d = fam2._capture(lambda: m.fit(X, y))
    return prior, d, f"politics bin={binarize} {share:.0%} {metric}"


def gen_realistic_q(rng):
    from privrelease.datasets import make_realistic_ratings

    from privrelease.mappers import QuantizedPrivacyMapper

    n_att = 1 if rng.random() < 0.6 else 2
    attrs = {f"a{i}": list(rng.dirichlet(np.full(int(rng.integers(2, 7)), 2.0)) + 0.03) for i in range(n_att)}
    X, A, _ = make_realistic_ratings(n_users=int(rng.integers(800, 2501)), n_items=int(rng.integers(200, 601)),
                                     attributes=attrs, random_state=int(rng.integers(2**31)))
    y = A.to_numpy()
    y = y[:, 0] if n_att == 1 else y
    share, y = _opt_in(rng, y) if rng.random() < 0.4 else (1.0, y)
    metric = ("euclidean", "sqeuclidean", "hamming")[rng.integers(3)]
    k = int(rng.integers(10, 201)) if rng.random() < 0.3 else int(rng.integers(10, 61))
    m = QuantizedPrivacyMapper(n_clusters=k, delta=1.0, metric=metric, smoothing=float(rng.choice([0.0, 1.0])),
                               random_state=0)
    prior, d = fam2._capture(lambda: m.fit(X, y))
    return prior, d, f"realistic {[len(v) for v in attrs.values()]} {share:.0%} {metric}"


def _quiet(gen):
    """A mapper family with the mappers' own UserWarnings (few users per cluster ...) silenced."""
    def run(rng):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return gen(rng)
    return run


MAPPERS = {"adult_q": gen_adult_q, "adult_e": gen_adult_e, "iris_q": gen_iris_q, "politics_q": gen_politics_q,
           "realistic_q": gen_realistic_q}
MAPPERS = {name: _quiet(gen) for name, gen in MAPPERS.items()}


# ----------------------------------------------------------------------------- priors from few users
def _d_any(rng, k):
    kind = rng.integers(3)
    if kind == 0:
        return base._points_d(rng, k)
    if kind == 1:
        return rng.integers(0, 3, size=(k, k)).astype(float)
    return 1.0 - np.eye(k)


def gen_few_users(rng):
    na, k = base._sizes(rng, False)
    p = base._dirichlet_prior(rng, na, k).ravel()
    n = int(rng.integers(max(k // 3, 2), 3 * k + 1))
    counts = rng.multinomial(n, p).astype(float)
    if counts.reshape(na, k).sum(axis=0).max() == n or (counts.reshape(na, k).sum(axis=1) > 0).sum() < 2:
        counts[rng.integers(counts.size)] += 1  # two inputs and two classes in use
        counts[(np.argmax(counts) + 1) % counts.size] += 1
    return (counts / counts.sum()).reshape(na, k), _d_any(rng, k)


def gen_row_multiples(rng):
    na, k = base._sizes(rng, False)
    prior = base._dirichlet_prior(rng, na, k)
    sub = rng.random(k) < rng.uniform(0.3, 0.9)
    # on the subset, every class's row a multiple of the first's (p(a | c) the same for each c there)
    factors = rng.choice([0.5, 1.0, 2.0, 3.0, 0.25], size=na)
    prior[:, sub] = factors[:, None] * prior[0, sub][None, :]
    return prior / prior.sum(), _d_any(rng, k)


def gen_tied_cols(rng):
    na, k = base._sizes(rng, False)
    n = int(rng.integers(2, 8))
    cols = rng.integers(0, 4, size=(na, n)).astype(float)  # few distinct columns of small counts
    cols[0, cols.sum(axis=0) == 0] = 1.0
    prior = cols[:, rng.integers(n, size=k)]
    if (prior.sum(axis=1) > 0).sum() < 2:
        prior[1 - int(prior[0].sum() > 0), 0] += 1.0
    return prior / prior.sum(), _d_any(rng, k)


# ----------------------------------------------------------------------------- distortions of another kind
def gen_one_way(rng):
    na, k = base._sizes(rng, False)
    d = rng.random((k, k)) * rng.uniform(0.1, 10)
    d[np.tril_indices(k)] = 0.0  # moving to a lower index is free
    if rng.random() < 0.5:
        d = d[rng.permutation(k)][:, rng.permutation(k)]
    return base._dirichlet_prior(rng, na, k), d


def gen_tri_violation(rng):
    na, k = base._sizes(rng, False)
    X = rng.normal(size=(k, 2))
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(axis=2))
    m = rng.random((k, k))
    d = np.where(m < 0.15, d * 1e-3, np.where(m > 0.85, d * 50, d))  # shortcuts and detours
    return base._dirichlet_prior(rng, na, k), d


def gen_plus_eps(rng):
    prior, d = (base.gen_ties, base.gen_free, base.gen_asym)[rng.integers(3)](rng)
    eps = 1e-9 if rng.random() < 0.5 else 1e-9 * float(d.max())
    return prior, d + eps


def gen_dup_costs(rng):
    na, k = base._sizes(rng, False)
    prior = base._dirichlet_prior(rng, na, k)
    d = base._points_d(rng, k) if rng.random() < 0.5 else rng.integers(0, 3, size=(k, k)).astype(float)
    dup = rng.choice(k, size=int(rng.integers(1, k + 1)), replace=True)
    extra = d[:, dup] * rng.choice([1.0 + 1e-12, 1.001, 1.5, 0.999], size=dup.size) + \
        rng.choice([0.0, 1e-12, 0.1], size=dup.size)
    return prior, np.hstack([d, extra])


def gen_neg_zero(rng):
    prior, d = (base.gen_ties, base.gen_free, base.gen_asym)[rng.integers(3)](rng)
    d = np.where(d == 0.0, -0.0, d)
    d[rng.random(d.shape) < 0.1] = -0.0
    return prior, d


def gen_ulp_apart(rng):
    na, k = base._sizes(rng, False)
    d = rng.integers(1, 4, size=(k, k)).astype(float) * (1.0 if rng.random() < 0.5 else 0.1)
    np.fill_diagonal(d, 0.0)
    up = rng.random(d.shape) < 0.4
    d[up] = np.nextafter(d[up], np.inf)
    j = rng.integers(k)  # a column 1 ulp above another one
    d = np.hstack([d, np.nextafter(d[:, [j]], np.inf)])
    prior = base._dirichlet_prior(rng, na, k)
    i = rng.integers(k)  # a row of the prior 1 ulp from another
    prior[:, i] = np.nextafter(prior[:, (i + 1) % k], np.inf)
    return prior / prior.sum(), d


PRIORS = {"few_users": gen_few_users, "row_multiples": gen_row_multiples, "tied_cols": gen_tied_cols}
DISTS = {"one_way": gen_one_way, "tri_violation": gen_tri_violation, "plus_eps": gen_plus_eps,
         "dup_costs": gen_dup_costs, "neg_zero": gen_neg_zero, "ulp_apart": gen_ulp_apart}
BASE3 = {**PRIORS, **DISTS}
SPECIAL = ("tol_edge", "solver_arg", "warm", "curve_api", "target_edge", "medium_k")
ALL = list(MAPPERS) + list(BASE3) + list(SPECIAL)
QUICK = ["one_way", "dup_costs", "tol_edge"]  # --quick: one draw of each


def _any(rng):
    name, gen = fam2._pick(rng, {**BASE3, **{n: base.BASE[n] for n in ("asym", "ties", "ratings", "pc_range")}})
    return (name,) + gen(rng)


def _iac(prior, d):
    """Leakage of the nearest-output mapping (the no-privacy point)."""
    return max(base.mi_bits(prior, base._argmin_mapping(d)), 0.0)


def cases(family, rng):
    """Yield ``(prior, d, mode, value, label, with_reference)`` for one draw of a family."""
    if family in MAPPERS:
        prior, d, what = MAPPERS[family](rng)
        lab = f"{what} k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]}"
        yield from fam2.mapper_cases(rng, prior, d, lab, _iac(prior, d), ref=d.shape[0] <= 200, ml_up_to=80)
    elif family in BASE3:
        prior, d = BASE3[family](rng)
        lab = f"k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]}"
        yield prior, d, "delta", base._mid(rng, prior, d), lab, True
        if rng.random() < 0.5:
            yield prior, d, "target", float(rng.uniform(0.01, 0.7)) * _iac(prior, d), lab + " target", True
    elif family == "tol_edge":
        name, prior, d = _any(rng)
        for tol in (1e-12, 1e-10, 1e-8, 1e-4, 1e-2):
            yield prior, d, "delta", OptFloat(base._mid(rng, prior, d), tol=tol), f"{name} tol={tol:g}", True
        t = float(rng.uniform(0.05, 0.6)) * _iac(prior, d)
        for tol in (1e-12, 1e-9, 1e-3):
            yield prior, d, "target", OptFloat(t, tol=tol), f"{name} target tol={tol:g}", True
    elif family == "solver_arg":
        name, prior, d = _any(rng)
        for s in ("fast", "cvxpy"):
            yield prior, d, "delta", OptFloat(base._mid(rng, prior, d), solver=s), f"{name} solver={s}", True
            yield prior, d, "target", OptFloat(float(rng.uniform(0.05, 0.6)) * _iac(prior, d), solver=s), \
                f"{name} target solver={s}", True
            yield prior, d, "ml_delta", OptFloat(base._mid(rng, prior, d), solver=s), f"{name} ml solver={s}", True
    elif family == "warm":
        name, prior, d = _any(rng)
        k, kh = d.shape
        dmin, dmax = base.d_bounds(prior, d)
        other = dmin + float(rng.uniform(0, 1)) * (dmax - dmin)

        def from_other(p, dd, other=other):
            return solve_mapping(p, dd, other)

        ident = base._argmin_mapping(d)
        unif = np.where(np.isfinite(d), 1.0, 0.0)
        unif /= unif.sum(axis=1, keepdims=True)
        bad = np.zeros((k, kh))
        bad[:, int(np.argmax(np.where(np.isfinite(d), d, -1).sum(axis=0)))] = 1.0  # may use forbidden entries
        for what, w in (("other", from_other), ("nearest", ident), ("uniform", unif), ("bad", bad)):
            yield prior, d, "delta", OptFloat(base._mid(rng, prior, d), warm_start=w), f"{name} warm={what}", True
    elif family == "curve_api":
        name, prior, d = _any(rng)
        dmin, dmax = base.d_bounds(prior, d)
        pts = list(dmin + rng.random(5) * (dmax - dmin))
        lab = f"{name} k={d.shape[0]}"
        yield prior, d, "curve", OptList(pts, n_jobs=2), lab + " n_jobs=2", True
        dup = pts[:3] + pts[:2] + [pts[0]]
        yield prior, d, "curve", OptList(dup, deltas=list(dup), n_jobs=None), lab + " list with duplicates", True
        yield prior, d, "curve", OptList(pts[:1], deltas=np.array(pts[:1]), n_jobs=None), lab + " one point", True
        yield prior, d, "curve", OptList(pts[:1], deltas=tuple(pts[:1]), n_jobs=2), lab + " one point tuple", True
    elif family == "target_edge":
        name, prior, d = _any(rng)
        L = _iac(prior, d)
        lab = f"{name} k={d.shape[0]}"
        if not np.isinf(d).any():
            for what, t in (("L", L), ("L+1ulp", np.nextafter(L, np.inf)), ("L+1e-9", L + 1e-9),
                            ("L(1-1e-12)", L * (1 - 1e-12)), ("L-1e-6", L - 1e-6)):
                if t >= 0:
                    yield prior, d, "target", t, f"{lab} target={what}", True
            for t in (1e-12, 1e-9, 1e-6):
                yield prior, d, "ml_target", t, f"{lab} ML={t:g}", True
    elif family == "medium_k":
        na, k = int(rng.integers(3, 11)), int(rng.integers(150, 261))
        kind = rng.integers(3)
        prior = base._dirichlet_prior(rng, na, k)
        d = (base._points_d(rng, k), rng.integers(0, 3, size=(k, k)).astype(float),
             np.abs(rng.normal(size=(k, 3))[:, None] - rng.normal(size=(k, 3))[None]).sum(axis=2))[kind]
        lab = f"k={k} |A|={na} d{kind}"
        yield prior, d, "delta", base._mid(rng, prior, d), lab, True
        if rng.random() < 0.5:
            yield prior, d, "target", float(rng.uniform(0.05, 0.6)) * _iac(prior, d), lab + " target", True


if __name__ == "__main__":
    base.main(cases=cases, families=ALL, doc=__doc__, quick_families=QUICK)
