"""``solve_mapping`` on instance families aimed at the fast engine's working-set path (``|C| x |C_hat| > 40000``:
column generation over a working set) and at sparse distortions, k = 201 .. 600.

Same counts, checks and options as ``bench_solver_families.py`` (``--n --seed --reference --families --dump``): its
reference, ``check``, run loop and the mappers' capture (``bench_solver_families2.py``) are imported, not copied. What
this script adds around them:

* the reference (plain cvxpy, CLARABEL: ~30 s at k = 300) only up to ``REF_K`` inputs and on every third draw
  (delta and maximal-leakage budgets, and the 0.1 share of the max_leakage targets); every answer is checked further
  without it: the leakage recomputed, the certificate's gap within ``tol``, and an **independent Lagrangian bound**
  computed here (posteriors of the returned mapping, smoothed by 1e-12 of ``p(a)``, the unused outputs at ``p(a)``,
  the multiplier maximised by golden section): ``sum_c min_j [sum_a p(a, c) log2(pi(a|j) / p(a)) + lam p(c) d(c, j)]
  - lam delta``. A gap to it of at most 1e-6 bits (for a target: the bound exceeding the target at the returned
  distortion minus ``1e-6`` of the range) proves the answer within tolerance whatever the library's certificate says;
  a larger gap proves nothing (the bound may be loose on unused outputs) and is listed after the table, never counted
  as silent;
* along a curve, every point's certified line ``LB_i - lam_i (delta - delta_i)`` (valid at every budget) must lie
  below every other point's leakage, and the leakage must not grow with the budget (beyond ``tol``): a violation is a
  silent failure;
* sparse distortions (``scipy.sparse``, unstored = forbidden) are checked as the dense matrix with ``inf``; the
  ``solver="fast"`` run (refused for a sparse distortion) counts the ``"auto"`` answer as fast-certified when it was
  optimal without cvxpy; ``--dump`` saves them dense with ``sparse=True`` (stored = finite there);
* the ``solver="fast"`` rerun is skipped when the ``"auto"`` answer already came from the fast path alone (optimal,
  no cvxpy in its solver name; same code path), which halves the time;
* after the table, per family: the fast path's time per solve (median / max; a curve's time divided by its points)
  and the Newton systems it factored per solve (``bench_solver._Counts``), and every call above ``SLOW_S``.

Families (k 201 .. 600, square or k x kh with k kh > 40000; |A| 2 .. 10; priors Dirichlet(0.05 .. 1) over the joint,
p(c) over 10 decades, multinomial counts of a few users (exact zeros), or classes that are exact multiples of each
other on a subset of the inputs):

* distortions, each at four budgets (the smallest feasible + 1e-7 of the range, 5%, 30%, 80% of the range):
  ``sqeuc``, ``l1``, ``hamming`` (points in 1-D, 2-D or 10-D; Hamming on integer-rounded coordinates),
  ``dup_block`` (a block of outputs duplicated, exactly or 1e-12 apart), ``far_cluster`` (a third of the points
  far away), ``inf_band`` (1-D points, transitions at distances in a band forbidden), ``ratings_q`` and
  ``realistic_q`` (the prior and cost ``QuantizedPrivacyMapper`` builds on ``make_ratings`` /
  ``make_realistic_ratings`` with 200 .. 400 clusters), ``sparse`` (one of the above as a sparse distortion: each
  row stores its m = 5 .. 40 cheapest outputs);
* modes on any of these (dense, or sparse with probability 0.3): ``targets`` (max_leakage = 0.5, 0.1, 0.01 of the
  leakage at the smallest distortion), ``curve`` (a 5-point ``privacy_distortion_curve``), ``ml_delta``
  (leakage="maximal_leakage", a budget at 5 .. 80% of the range).

Usage::

    python benchmarks/bench_solver_families5.py --n 3 --seed 0 --reference
    python benchmarks/bench_solver_families5.py --families sparse curve --n 2 --reference --dump findings/
    python benchmarks/bench_solver_families5.py --quick    # one draw of sqeuc

``--quick`` (as in ``bench_solver_families.py``): one draw of one family, to check the script works.
"""

import math
import os
import sys
import warnings
from collections import defaultdict

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_solver_families as base  # noqa: E402 - the reference, checks and run loop
import bench_solver_families2 as fam2  # noqa: E402 - the mappers' capture
import bench_solver_families3 as fam3  # noqa: E402 - the mappers' warnings silenced (and its wrappers in base)
from bench_solver import _Counts  # noqa: E402 - Newton systems of the fast path

from privrelease.mapping import solve_mapping, squared_euclidean_distortion  # noqa: E402

REF_K = 300  # the reference up to this many inputs, on every third draw
SLOW_S = 60.0
BUDGETS = (("min+1e-7", 1e-7), ("5%", 0.05), ("30%", 0.3), ("80%", 0.8))
SHARES = (0.5, 0.1, 0.01)
TIMES = defaultdict(list)  # family -> (seconds per solve, Newton systems per solve) of fast-path answers
SLOW = []
INDEP = defaultdict(lambda: [0, 0])  # family -> [proved within tolerance, not proved]
LOOSE = []  # answers the independent bound did not prove
_FAMILY = [None]


# ----------------------------------------------------------------------------- sizes and priors
def _sizes(rng):
    na, k = int(rng.integers(2, 11)), int(rng.integers(201, 601))
    if rng.random() < 0.5:
        return na, k, k
    lo = max(40001 // k + 1, k // 2)
    return na, k, int(rng.integers(lo, max(lo + 1, int(1.5 * k))))


def _prior(rng, na, k):
    """``(prior, kind)``: Dirichlet(0.05 .. 1) joint, p(c) over 10 decades, a few users' counts, exact multiples."""
    kind = ("dir", "pc10", "users", "multiples")[rng.integers(4)]
    if kind == "dir":
        return rng.dirichlet(np.full(na * k, rng.uniform(0.05, 1.0))).reshape(na, k), kind
    if kind == "pc10":
        pc = 10.0 ** rng.uniform(-10, 0, size=k)
        post = rng.dirichlet(np.full(na, rng.uniform(0.2, 1.0)), size=k).T
        return base._with_posterior(rng, pc / pc.sum(), post), kind
    p = rng.dirichlet(np.full(na * k, rng.uniform(0.2, 1.0))).reshape(na, k)
    if kind == "users":  # multinomial counts of n = k / 3 .. 3 k users: exact zeros
        counts = rng.multinomial(int(rng.integers(k // 3, 3 * k + 1)), p.ravel()).reshape(na, k).astype(float)
        for a in range(2):  # at least two classes and two inputs in use
            counts[a, a] += 1.0
        return counts / counts.sum(), kind
    sub = rng.random(k) < rng.uniform(0.3, 0.9)  # p(a | c) the same for every c of the subset
    p[:, sub] = rng.choice([0.25, 0.5, 1.0, 2.0, 3.0], size=na)[:, None] * p[0, sub][None, :]
    return p / p.sum(), kind


# ----------------------------------------------------------------------------- distortions
def _points(rng, k, kh, dim):
    """Inputs and outputs in R^dim: outputs = the inputs (square) or some of them and new points."""
    X = rng.normal(size=(k, dim))
    if kh == k:
        return X, X
    Y = np.vstack([X[rng.choice(k, size=min(k, kh), replace=False)], rng.normal(size=(max(kh - k, 0), dim))])
    return X, Y[rng.permutation(kh)]


def _metric_d(kind, X, Y):
    if kind == "sqeuc":
        return squared_euclidean_distortion(X, Y)
    if kind == "l1":
        return np.abs(X[:, None] - Y[None]).sum(axis=2)
    Xi, Yi = np.round(1.5 * X), np.round(1.5 * Y)  # hamming on integer-rounded coordinates (many ties)
    return (Xi[:, None] != Yi[None]).sum(axis=2).astype(float)


def _metric(kind):
    def gen(rng, k, kh):
        dim = int(rng.choice([1, 2, 10]))
        return _metric_d(kind, *_points(rng, k, kh, dim)), f"{kind} {dim}-D"
    return gen


def d_dup_block(rng, k, kh):
    kind = ("sqeuc", "l1", "hamming")[rng.integers(3)]
    d, lab = _metric(kind)(rng, k, kh)
    cols = rng.choice(kh, size=int(rng.integers(10, max(11, kh // 4))), replace=False)
    extra = d[:, cols] * rng.choice([1.0, 1.0 + 1e-12], size=cols.size)
    return np.hstack([d, extra]), lab + f" +{cols.size} dup"


def d_far_cluster(rng, k, kh):
    dim = int(rng.choice([1, 2, 10]))
    X, Y = _points(rng, k, kh, dim)
    shift = rng.uniform(5, 30)
    X, Y = X.copy(), Y.copy()
    X[: k // 3] += shift
    Y[: kh // 3] += shift
    kind = ("sqeuc", "l1")[rng.integers(2)]
    return _metric_d(kind, X, Y), f"{kind} {dim}-D far"


def d_inf_band(rng, k, kh):
    X, Y = _points(rng, k, kh, 1)
    dist = np.abs(X - Y.T)
    lo = np.quantile(dist, rng.uniform(0.05, 0.3))
    hi = lo + np.quantile(dist, rng.uniform(0.1, 0.4))
    d = dist ** 2 if rng.random() < 0.5 else dist
    band = (dist > lo) & (dist < hi)
    band[np.arange(k), dist.argmin(axis=1)] = False  # every input keeps its nearest output
    return np.where(band, np.inf, d), f"1-D band ({band.mean():.0%} inf)"


def gen_ratings_q(rng):
    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    na, k = int(rng.integers(2, 11)), int(rng.integers(200, 401))
    w = rng.dirichlet(np.full(na, 2.0)) + 0.02
    R, y, _ = make_ratings(n_users=int(rng.integers(3, 7)) * k, n_items=int(rng.integers(20, 80)),
                           attribute_proportion=list(w / w.sum()), attribute_strength=float(rng.uniform(0.3, 2.0)),
                           random_state=int(rng.integers(2**31)), return_dense=True)
    metric = ("euclidean", "sqeuclidean", "hamming")[rng.integers(3)]
    m = QuantizedPrivacyMapper(n_clusters=k, delta=1.0, metric=metric, random_state=0)
    prior, d = fam2._capture(lambda: m.fit(R, y))
    return prior, d, f"ratings {metric}"


def gen_realistic_q(rng):
    from privrelease.datasets import make_realistic_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    attrs = {"a": list(rng.dirichlet(np.full(int(rng.integers(2, 9)), 2.0)) + 0.03)}
    k = int(rng.integers(200, 401))
    X, A, _ = make_realistic_ratings(n_users=int(rng.integers(3, 6)) * k, n_items=int(rng.integers(200, 501)),
                                     attributes=attrs, random_state=int(rng.integers(2**31)))
    metric = ("euclidean", "sqeuclidean", "hamming")[rng.integers(3)]
    m = QuantizedPrivacyMapper(n_clusters=k, delta=1.0, metric=metric, smoothing=float(rng.choice([0.0, 1.0])),
                               random_state=0)
    prior, d = fam2._capture(lambda: m.fit(X, A.to_numpy()[:, 0]))
    return prior, d, f"realistic {metric}"


DISTS = {"sqeuc": _metric("sqeuc"), "l1": _metric("l1"), "hamming": _metric("hamming"), "dup_block": d_dup_block,
         "far_cluster": d_far_cluster, "inf_band": d_inf_band}
MAPPERS = {"ratings_q": fam3._quiet(gen_ratings_q), "realistic_q": fam3._quiet(gen_realistic_q)}
MODES = ("targets", "curve", "ml_delta")
ALL = list(DISTS) + list(MAPPERS) + ["sparse"] + list(MODES)
QUICK = ["sqeuc"]  # --quick: one draw; at k = 201 .. 600 the other families can take minutes


def to_sparse(rng, d):
    """Each row's ``m`` (5 .. 40) cheapest allowed outputs stored (explicit zeros kept), the rest forbidden."""
    m = int(rng.integers(5, 41))
    fin = np.where(np.isfinite(d), d, np.inf)
    cols = np.argsort(fin, axis=1, kind="stable")[:, :m]
    rows = np.repeat(np.arange(d.shape[0]), m)
    vals = fin[rows, cols.ravel()]
    keep = np.isfinite(vals)
    return sp.csr_array((vals[keep], (rows[keep], cols.ravel()[keep])), shape=d.shape), m


def draw(rng, family):
    """``(prior, d, label)`` for one draw: a distortion family, a mapper, or (modes) any of them."""
    if family in MODES or family == "sparse":
        pool = list(DISTS) + (list(MAPPERS) if rng.random() < 0.25 else [])
        name = pool[rng.integers(len(pool))]
        prior, d, lab = draw(rng, name)
        if family == "sparse" or rng.random() < 0.3:
            d, m = to_sparse(rng, d)
            lab += f" sparse m={m}"
        return prior, d, lab
    if family in MAPPERS:
        prior, d, lab = MAPPERS[family](rng)
        return prior, d, f"{lab} k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]}"
    na, k, kh = _sizes(rng)
    d, dlab = DISTS[family](rng, k, kh)
    prior, pkind = _prior(rng, na, k)
    return prior, d, f"{pkind} {dlab} k={d.shape[0]}x{d.shape[1]} |A|={na}"


def _dense(d):
    """A sparse distortion as the dense matrix with ``inf`` where nothing is stored."""
    if not sp.issparse(d):
        return d
    C = sp.coo_array(d)
    out = np.full(d.shape, np.inf)
    out[C.row, C.col] = C.data
    return out


def _f0_bits(prior, d):
    return float(solve_mapping(prior, d, base.d_bounds(prior, _dense(d))[0]).leakage)


_DRAWS = defaultdict(int)  # family -> draws so far (the reference on every third)


def cases(family, rng):
    """Yield ``(prior, d, mode, value, label, with_reference)`` for one draw of a family."""
    _FAMILY[0] = family
    i = _DRAWS[family]
    _DRAWS[family] += 1
    prior, d, lab = draw(rng, family)
    dense = _dense(d)
    ref = d.shape[0] <= REF_K and i % 3 == 0
    dmin, dmax = base.d_bounds(prior, dense)
    if family == "targets":
        f0 = _f0_bits(prior, d)
        for s in SHARES:
            yield prior, d, "target", s * f0, f"{lab} f0={f0:.3g} share={s}", ref and s == 0.1
    elif family == "curve":
        deltas = dmin + np.array([1e-6, 0.03, 0.1, 0.3, 0.7]) * (dmax - dmin)
        yield prior, d, "curve", deltas, lab + " curve", False
    elif family == "ml_delta":
        s = float(rng.uniform(0.05, 0.8))
        yield prior, d, "ml_delta", dmin + s * (dmax - dmin), f"{lab} ml {s:.0%}", ref
    else:
        for what, s in BUDGETS:
            yield prior, d, "delta", dmin + s * (dmax - dmin), f"{lab} delta={what}", ref


# ----------------------------------------------------------------------------- independent bound
def _bound_terms(prior, d, M):
    """``T (k x kh)`` in bits and ``W = p(c) d`` of the Lagrangian bound at the returned mapping's posteriors."""
    pa = prior.sum(axis=1)
    pc = prior.sum(axis=0)
    J = prior @ M
    q = J.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        post = np.where(q > 0, J / np.where(q > 0, q, 1.0), pa[:, None])
    pi = (1 - 1e-12) * post + 1e-12 * pa[:, None]
    logr = np.zeros_like(pi)
    pos = pa > 0
    logr[pos] = np.log2(pi[pos] / pa[pos, None])
    T = prior.T @ logr
    fin = np.isfinite(d)
    T = np.where(fin, T, np.inf)
    W = np.where(fin, pc[:, None] * np.where(fin, d, 0.0), 0.0)
    return T, W


def indep_bound(prior, d, M, delta):
    """``max_lam sum_c min_j (T + lam W) - lam delta`` (bits), golden section over ``lam >= 0``."""
    T, W = _bound_terms(prior, d, M)

    def lb(lam):
        return float(np.min(T + lam * W, axis=1).sum() - (lam * delta if lam > 0 else 0.0))

    if not np.isfinite(delta):
        return lb(0.0)
    hi = 1.0
    while lb(2 * hi) > lb(hi) and hi < 1e300:
        hi *= 2
    lo, hi = 0.0, 2 * hi
    g = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if lb(a) < lb(b):
            lo = a
        else:
            hi = b
        if hi - lo <= 1e-13 * hi:
            break
    return max(lb(0.0), lb(0.5 * (lo + hi)))


_run_one, _check, _dump = base.run_one, base.check, base._dump
_AUTO = {}  # key of a case -> the "auto" run's outcome (reused by the "fast" run when it came from the fast path)
_CURVE = {}  # id of a curve point's result -> its cross-check problems


def _key(prior, d, mode, value):
    return id(prior), id(d), mode, id(value)


def _curve_problems(prior, d, deltas, outs):
    """Each point's certified line below every other point's leakage; the leakage non-increasing in the budget."""
    pts = []
    for v, r in zip(deltas, outs):
        M = np.asarray(r.mapping.toarray() if hasattr(r.mapping, "toarray") else r.mapping)
        f = base.mi_bits(prior, M)
        ok = r.status == "optimal"
        mu = r.certificate.get("multiplier", 0.0) if ok else None
        pts.append((float(v), f, f - r.certificate.get("gap_bits", np.inf) if ok else -np.inf,
                    mu if mu is not None and np.isfinite(mu) else 0.0))
    for r, (vi, fi, lbi, mui) in zip(outs, pts):
        probs = []
        for vm, fm, _, _ in pts:
            line = lbi - mui * (vm - vi)
            if line > fm + 1e-9 * max(1.0, fm):
                probs.append(f"the line at delta={vi:.6g} is {line - fm:.3g} bits above the leakage at {vm:.6g}")
            if vm < vi and fi > fm + 1e-6:
                probs.append(f"leakage {fi:.9g} at delta={vi:.6g} above {fm:.9g} at the smaller {vm:.6g}")
        _CURVE[id(r)] = probs


def run_one(prior, d, mode, value, solver):
    """The run loop's solve, timed and counted; the "fast" run reuses a fast-path "auto" answer (same path)."""
    key = _key(prior, d, mode, value)
    if solver == "fast":
        got = _AUTO.pop(key, None)
        if got is not None:
            (out, warned, t, err), newton = got
            fast_only = err is None and all(r.status == "optimal" and "cvxpy" not in r.solver for r in out)
            if sp.issparse(d) or (fast_only and not mode.startswith("ml")):
                if fast_only:
                    n = len(out)
                    TIMES[_FAMILY[0]].append((mode, t / n, newton / n))
                return out, warned, t, err
    with _Counts() as cnt:
        res = _run_one(prior, d, mode, value, solver)
    out, warned, t, err = res
    if t > SLOW_S:
        SLOW.append(f"{_FAMILY[0]} {mode} solver={solver} k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]}: {t:.1f} s"
                    f" ({cnt['newton']} Newton systems)")
    if solver == "fast" and err is None and all(r.status == "optimal" for r in out):
        TIMES[_FAMILY[0]].append((mode, t / len(out), cnt["newton"] / len(out)))
    if solver == "auto":
        _AUTO.clear()
        _AUTO[key] = (res, cnt["newton"])
        if mode == "curve" and out is not None:
            _curve_problems(prior, d, value, out)
    return res


def check(prior, d, mode, value, res, with_ref):
    """The imported check (sparse distortions as dense with inf), the certificate's consistency, the independent
    bound and the curve's cross-check."""
    dd = _dense(d)
    probs, ref = _check(prior, dd, mode, value, res, with_ref)
    M = np.asarray(res.mapping.toarray() if hasattr(res.mapping, "toarray") else res.mapping)
    fam = _FAMILY[0]
    if mode in ("delta", "curve", "target"):
        f = base.mi_bits(prior, M)
        if abs(res.leakage - f) > 1e-9 * max(1.0, f):
            probs.append(f"reported leakage {res.leakage:.12g} != recomputed {f:.12g}")
        gap = res.certificate.get("gap_bits", 0.0)
        if mode != "target" and not gap <= 1e-6:
            probs.append(f"status optimal with gap_bits {gap!r}")
        lab = f"{fam} {mode} k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]} v={float(np.asarray(value)):.6g}"
        if mode == "target":
            dmin, dmax = base.d_bounds(prior, dd)
            dist = base.exp_dist(prior, M, dd)
            below = dist - 1e-6 * (dmax - dmin)
            ok = below <= dmin or indep_bound(prior, dd, M, below) > float(value)
            what = "the bound at distortion - 1e-6 range stays at or below the target"
        else:
            lbi = indep_bound(prior, dd, M, float(value))
            ok = f - lbi <= 1e-6
            what = f"gap {f - lbi:.3g} bits to the independent bound (certificate {gap:.3g})"
        INDEP[fam][0 if ok else 1] += 1
        if not ok:
            LOOSE.append(f"{lab}: {what}")
    probs += _CURVE.pop(id(res), [])
    return probs, ref


def dump(folder, name, prior, d, mode, value):
    if sp.issparse(d):
        if folder:
            os.makedirs(folder, exist_ok=True)
            np.savez(os.path.join(folder, f"{name}.npz"), prior=prior, d=_dense(d), mode=np.asarray(mode),
                     value=np.asarray(value, dtype=float), sparse=True)
        return
    _dump(folder, name, prior, d, mode, value)


base.run_one, base.check, base._dump = run_one, check, dump


def summary():
    print("\nfast path per solve (answers certified without cvxpy; a curve's time over its points):")
    print(f"{'family':>12} {'n':>4} {'median s':>9} {'max s':>8} {'median newton':>13} {'max newton':>10}")
    for fam, rows in TIMES.items():
        t = np.array([r[1] for r in rows])
        nw = np.array([r[2] for r in rows])
        print(f"{fam:>12} {t.size:>4} {np.median(t):>9.2f} {t.max():>8.2f} {np.median(nw):>13.0f} {nw.max():>10.0f}")
    print("\nindependent Lagrangian bound (proved within tolerance / not proved):")
    for fam, (ok, no) in INDEP.items():
        print(f" {fam:>12}: {ok} / {no}")
    for s in LOOSE:
        print(" - NOT PROVED", s)
    for s in SLOW:
        print(" - SLOW", s)


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        base.main(cases=cases, families=ALL, doc=__doc__, quick_families=QUICK)
    summary()
