"""``solve_mapping`` on instance families beyond the stress suite and ``bench_solver.py``.

The stress suite (``tests/mapping/test_mapping_stress.py``) and ``bench_solver.py``
draw Dirichlet priors with 2-D points and sq-Euclidean / Hamming / L1 distortions.
This script draws other families, per instance runs ``solve_mapping(solver="auto")``
(and ``solver="fast"`` alone, to count fast-path certifications) and checks every
answer independently of the library:

* feasibility: entries >= 0, rows sum to 1 (1e-9), forbidden entries exactly 0,
  expected distortion <= delta (relative 1e-9), in max_leakage mode the leakage
  (recomputed here) <= the target (relative 1e-9, absolute 1e-12 bits);
* optimality: the plain cvxpy formulation with CLARABEL at tight tolerances (delta
  mode: min I s.t. distortion <= delta; max_leakage mode: min distortion s.t.
  I <= target, an LP for the target 0; maximal leakage: the epigraph LP). An
  answer claimed optimal that is > 1e-6 bits worse than the reference (delta mode),
  or whose distortion exceeds the reference by more than 1e-6 of the distortion
  range (target modes), is a silent failure.

Families (``--families`` picks some; ``large_*`` run without the reference):

1. distortions that are not metrics: ``asym`` (random asymmetric), ``free`` (zero
   off-diagonal entries), ``ties`` (integers in {0, 1, 2}), ``zero_row``,
   ``dyn_range`` (1e-8 .. 1e4), ``rect_wide`` (outputs = 2 k), ``rect_narrow``
   (outputs = k / 2);
2. priors: ``near_det`` (p(a|c) within 1e-9 of 0/1), ``indep`` (I(A; C) = 0),
   ``tiny_class`` (one p(a) = 1e-7), ``pc_range`` (p(c) from 1e-10 to 1),
   ``a10k10``, ``a_gt_k`` (|A| > k), ``half_zero`` (half the inputs with p(c) = 0);
3. features: ``ratings`` (cluster centres in R^20 .. R^100, sq-Euclidean),
   ``linf``, ``cosine``;
4. budgets: ``budgets`` (delta = d_min, d_min (1 + 1e-9), mid, the perfect-privacy
   point, delta_max, 10 delta_max), ``targets`` (max_leakage = 0, 1e-9, 1e-3 I(A;C),
   0.5 I(A;C)), ``maxleak`` (leakage="maximal_leakage", both modes), ``curve``
   (privacy_distortion_curve, every point checked);
5. ``large_asym``, ``large_ratings``, ``large_ties``: k = 100 .. 200, no reference.

Usage::

    python benchmarks/bench_solver_families.py --n 10 --seed 0 --reference
    python benchmarks/bench_solver_families.py --families ties budgets --n 20
    python benchmarks/bench_solver_families.py --n 10 --seed 7 --reference --dump findings/
    python benchmarks/bench_solver_families.py --quick     # one draw of asym, ties, budgets: seconds

``--quick`` runs a small configuration that checks the script works: one draw (unless ``--n`` is given)
of a few fast families (unless ``--families`` is given); with ``--reference`` it also runs the reference.

``--dump DIR`` saves every instance with a finding (not certified by the fast path, fell back,
flagged, silent, crashed) as ``DIR/<family>_<seed>_<draw>_<case>.npz`` (keys ``prior``, ``d``,
``mode``, ``value``): the file a regression test in ``tests/mapping/data/`` starts from.
"""

import argparse
import os
import math
import signal
import time
import traceback
import warnings
import zlib

import numpy as np
from scipy.special import rel_entr

from privrelease.exceptions import ConvergenceWarning, InfeasibleBudgetError, SolverError
from privrelease.mapping import privacy_distortion_curve, solve_mapping, squared_euclidean_distortion
from privrelease.mapping._lp import perfect_privacy_mapping
from privrelease.mapping._problem import Problem

LN2 = math.log(2.0)
TOL_BITS = 1e-6
DIST_RTOL = 1e-6
HANG_S = 60.0


# ----------------------------------------------------------------------------- independent checks
def mi_bits(prior, M):
    J = prior @ M
    pa = prior.sum(axis=1)
    q = J.sum(axis=0)
    return float(rel_entr(J, pa[:, None] * q[None, :]).sum()) / LN2


def ml_bits(prior, M):
    pa = prior.sum(axis=1)
    keep = pa > 0
    cond = (prior[keep] @ M) / pa[keep, None]
    return math.log2(max(float(cond.max(axis=0).sum()), 1.0))


def exp_dist(prior, M, d):
    pc = prior.sum(axis=0)
    return float((pc[:, None] * np.where(np.isfinite(d), d, 0.0) * M).sum())


def d_bounds(prior, d):
    pc = prior.sum(axis=0)
    dm = np.where(np.isfinite(d), d, np.nan)
    return float(np.nansum(pc * np.nanmin(dm, axis=1))), float(np.nansum(pc * np.nanmax(dm, axis=1)))


def feasible(prior, d, M, delta=None):
    M = np.asarray(M.toarray() if hasattr(M, "toarray") else M)
    ok = bool(np.all(M >= 0) and np.all(np.abs(M.sum(axis=1) - 1) <= 1e-9) and np.all(M[np.isinf(d)] == 0))
    if delta is not None and np.isfinite(delta):
        ok = ok and exp_dist(prior, M, d) <= delta * (1 + 1e-9) + 1e-300
    return ok


def _cvx_setup(prior, d):
    import cvxpy as cp

    pc = prior.sum(axis=0)
    pa = prior.sum(axis=1)
    fin = np.isfinite(d)
    scale = float(d[fin].max()) or 1.0
    k, kh = d.shape
    X = cp.Variable((k, kh), nonneg=True)
    cons = [cp.sum(X, axis=1) == 1]
    if (~fin).any():
        cons.append(cp.multiply((~fin).astype(float), X) == 0)
    W = pc[:, None] * np.where(fin, d, 0.0) / scale
    dist = cp.sum(cp.multiply(W, X))
    return cp, X, cons, dist, scale, pa, pc


def _clarabel(problem):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10, max_iter=400)
        except Exception:  # noqa: BLE001 - a reference that fails is reported as such
            return None
    return problem


def _argmin_mapping(d):
    P = np.zeros(d.shape)
    P[np.arange(d.shape[0]), np.argmin(np.where(np.isfinite(d), d, np.inf), axis=1)] = 1.0
    return P


def _repair(X, good, ok):
    """Smallest mixture ``(1 - t) X + t good`` with ``ok`` (bisection): the reference's own
    tolerances can leave its point a hair infeasible, which would make it look better than it is."""
    if ok(X):
        return X
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if ok((1 - mid) * X + mid * good):
            hi = mid
        else:
            lo = mid
    return (1 - hi) * X + hi * good


def _clean(X, d):
    X = np.where(np.isfinite(d), np.clip(np.asarray(X, dtype=float), 0.0, None), 0.0)
    return X / X.sum(axis=1, keepdims=True)


def ref_delta(prior, d, delta):
    """Plain formulation (nats inside): min I(A; C_hat) s.t. distortion <= delta; the leakage in bits
    of the reference's point made exactly feasible (so a larger leakage of ours is a real failure)."""
    cp, X, cons, dist, scale, pa, pc = _cvx_setup(prior, d)
    info = cp.sum(cp.rel_entr(prior @ X, np.outer(pa, pc) @ X))
    if np.isfinite(delta):
        cons = cons + [dist <= delta / scale]
    pr = _clarabel(cp.Problem(cp.Minimize(info), cons))
    if pr is None or X.value is None:
        return np.nan
    Xr = _repair(_clean(X.value, d), _argmin_mapping(d), lambda Y: exp_dist(prior, Y, d) <= delta)
    return mi_bits(prior, Xr)


def _pp_reference(prior, d):
    """Cheapest mapping with I(A; C_hat) = 0 (the independence LP, CLARABEL)."""
    cp, X, cons, dist, scale, pa, pc = _cvx_setup(prior, d)
    q = pc @ X
    cons = cons + [prior @ X == cp.reshape(pa, (len(pa), 1), order="C") @ cp.reshape(q, (1, d.shape[1]),
                                                                                      order="C")]
    pr = _clarabel(cp.Problem(cp.Minimize(dist), cons))
    if pr is None or X.value is None:
        return None
    return _clean(X.value, d)


def ref_target(prior, d, target_bits):
    """min distortion s.t. I <= target (the perfect-privacy LP for a target of 0); the distortion of
    the reference's point made feasible (mixed with the independence LP's point), or nan."""
    cp, X, cons, dist, scale, pa, pc = _cvx_setup(prior, d)
    Xpp = _pp_reference(prior, d)
    if target_bits == 0:
        return np.nan if Xpp is None else exp_dist(prior, Xpp, d)
    J = prior @ X
    cons = cons + [cp.sum(cp.rel_entr(J, np.outer(pa, pc) @ X)) <= target_bits * LN2]
    pr = _clarabel(cp.Problem(cp.Minimize(dist), cons))
    if pr is None or X.value is None or Xpp is None:
        return np.nan
    if mi_bits(prior, Xpp) > target_bits:
        return np.nan
    Xr = _repair(_clean(X.value, d), Xpp, lambda Y: mi_bits(prior, Y) <= target_bits)
    return exp_dist(prior, Xr, d)


def ref_maxleak(prior, d, delta):
    """min log2 sum_j max_a p(j|a) s.t. distortion <= delta (epigraph LP, CLARABEL)."""
    cp, X, cons, dist, scale, pa, pc = _cvx_setup(prior, d)
    keep = pa > 0
    t = cp.Variable(d.shape[1])
    cond = cp.multiply(1.0 / pa[keep][:, None], prior[keep] @ X)
    cons = cons + [cond <= np.ones((int(keep.sum()), 1)) @ cp.reshape(t, (1, d.shape[1]), order="C")]
    if np.isfinite(delta):
        cons.append(dist <= delta / scale)
    pr = _clarabel(cp.Problem(cp.Minimize(cp.sum(t)), cons))
    if pr is None or pr.value is None:
        return np.nan
    return math.log2(max(pr.value, 1.0))


def _dense_inf(d):
    """A sparse distortion as the dense matrix (unstored = forbidden = inf)."""
    if not hasattr(d, "tocoo"):
        return np.asarray(d, dtype=float)
    coo = d.tocoo()
    out = np.full(coo.shape, np.inf)
    out[coo.row, coo.col] = coo.data
    return out


def refusal_ok(prior, d, mode, value, err):
    """Whether an InfeasibleBudgetError is a correct refusal, checked by the independent computation here: the
    value really is below the smallest achievable one (by more than the tolerance, so that the reference's own
    precision cannot decide it) and the error names that smallest value (within the tolerance). ``(ok, why)``."""
    if not isinstance(err, InfeasibleBudgetError) or mode == "curve":
        return False, "not a refusal of one budget"
    d = _dense_inf(d)
    named = getattr(err, "smallest_feasible", None)
    if mode in ("delta", "ml_delta"):
        smallest, tol = d_bounds(prior, d)[0], 1e-9 * max(abs(d_bounds(prior, d)[0]), 1e-300)
    elif mode == "ml_target":
        smallest, tol = ref_maxleak(prior, d, np.inf), TOL_BITS
    else:  # the smallest mutual information over every allowed mapping (no distortion budget)
        smallest, tol = ref_delta(prior, d, np.inf), TOL_BITS
    if not np.isfinite(smallest):
        return False, "the reference failed"
    if not float(value) < smallest - tol:
        return False, f"{float(value)!r} is not below the smallest achievable {smallest!r} by the tolerance {tol:.2g}"
    if named is None or abs(float(named) - smallest) > max(tol, 1e-6 * abs(smallest)):
        return False, f"the error names {named!r}, the reference's smallest is {smallest!r}"
    return True, f"{float(value):.4g} < smallest {smallest:.6g} (named {float(named):.6g})"


# ----------------------------------------------------------------------------- generators
def _dirichlet_prior(rng, na, k):
    return rng.dirichlet(np.full(na * k, rng.uniform(0.1, 1.0))).reshape(na, k)


def _sizes(rng, large):
    if large:
        return int(rng.integers(2, 5)), int(rng.integers(100, 201))
    return int(rng.integers(2, 6)), int(rng.integers(5, 61))


def _mid(rng, prior, d):
    dmin, dmax = d_bounds(prior, d)
    return dmin + rng.uniform(0.02, 0.8) * (dmax - dmin)


def gen_asym(rng, large=False):
    na, k = _sizes(rng, large)
    prior = _dirichlet_prior(rng, na, k)
    d = rng.random((k, k)) * rng.uniform(0.1, 10)
    if rng.random() < 0.5:
        np.fill_diagonal(d, 0.0)
    return prior, d


def gen_free(rng, large=False):
    na, k = _sizes(rng, large)
    prior = _dirichlet_prior(rng, na, k)
    X = rng.normal(size=(k, 2))
    d = squared_euclidean_distortion(X)
    d[rng.random((k, k)) < rng.uniform(0.05, 0.3)] = 0.0  # free transitions
    return prior, d


def gen_ties(rng, large=False):
    na, k = _sizes(rng, large)
    prior = _dirichlet_prior(rng, na, k)
    d = rng.integers(0, 3, size=(k, k)).astype(float)
    if rng.random() < 0.5:
        np.fill_diagonal(d, 0.0)
    return prior, d


def gen_zero_row(rng, large=False):
    prior, d = gen_asym(rng, large)
    d[rng.integers(d.shape[0])] = 0.0
    return prior, d


def gen_dyn_range(rng, large=False):
    na, k = _sizes(rng, large)
    prior = _dirichlet_prior(rng, na, k)
    d = 10.0 ** rng.uniform(-8, 4, size=(k, k))
    np.fill_diagonal(d, 10.0 ** rng.uniform(-8, -4, size=k))
    return prior, d


def gen_rect_wide(rng, large=False):
    na, k = _sizes(rng, large)
    k = min(k, 40)
    prior = _dirichlet_prior(rng, na, k)
    X = rng.normal(size=(2 * k, 2))
    return prior, squared_euclidean_distortion(X[:k], X)


def gen_rect_narrow(rng, large=False):
    na, k = _sizes(rng, large)
    prior = _dirichlet_prior(rng, na, k)
    X = rng.normal(size=(k, 2))
    return prior, squared_euclidean_distortion(X, X[: max(2, k // 2)])


def _with_posterior(rng, pc, post):
    """Joint from p(c) (k,) and p(a | c) (na, k)."""
    prior = post * pc[None, :]
    return prior / prior.sum()


def _points_d(rng, k):
    X = rng.normal(size=(k, 2))
    return squared_euclidean_distortion(X)


def gen_near_det(rng, large=False):
    na, k = _sizes(rng, large)
    pc = rng.dirichlet(np.ones(k))
    post = np.full((na, k), 1e-9)
    post[rng.integers(na, size=k), np.arange(k)] = 1.0 - (na - 1) * 1e-9
    return _with_posterior(rng, pc, post), _points_d(rng, k)


def gen_indep(rng, large=False):
    na, k = _sizes(rng, large)
    pa = rng.dirichlet(np.ones(na))
    pc = rng.dirichlet(np.ones(k))
    return np.outer(pa, pc), _points_d(rng, k)


def gen_tiny_class(rng, large=False):
    na, k = _sizes(rng, large)
    prior = _dirichlet_prior(rng, na, k)
    a = rng.integers(na)
    prior[a] *= 1e-7 / prior[a].sum()
    prior /= prior.sum()
    return prior, _points_d(rng, k)


def gen_pc_range(rng, large=False):
    na, k = _sizes(rng, large)
    pc = 10.0 ** rng.uniform(-10, 0, size=k)
    pc /= pc.sum()
    post = rng.dirichlet(np.ones(na), size=k).T
    return _with_posterior(rng, pc, post), _points_d(rng, k)


def gen_a10k10(rng, large=False):
    prior = _dirichlet_prior(rng, 10, 10)
    kind = rng.integers(3)
    X = rng.normal(size=(10, 2))
    d = (squared_euclidean_distortion(X), 1.0 - np.eye(10), np.abs(X[:, None] - X[None]).sum(axis=2))[kind]
    return prior, d


def gen_a_gt_k(rng, large=False):
    k = int(rng.integers(3, 8))
    na = int(rng.integers(k + 1, 13))
    return _dirichlet_prior(rng, na, k), _points_d(rng, k)


def gen_half_zero(rng, large=False):
    na, k = _sizes(rng, large)
    prior = _dirichlet_prior(rng, na, k)
    prior[:, rng.choice(k, size=k // 2, replace=False)] = 0.0
    prior /= prior.sum()
    return prior, _points_d(rng, k)


def _features(rng, k):
    dim = int(rng.integers(20, 101))
    n_clusters = int(rng.integers(2, 6))
    centres = rng.normal(size=(n_clusters, dim)) * 2
    lab = rng.integers(n_clusters, size=k)
    X = np.clip(np.round(3 + centres[lab] + rng.normal(size=(k, dim))), 1, 5)  # ratings-like 1..5
    return X, lab


def gen_ratings(rng, large=False):
    na, k = _sizes(rng, large)
    X, lab = _features(rng, k)
    pc = rng.dirichlet(np.full(k, 2.0))
    w = rng.normal(size=X.shape[1])
    logits = np.outer(np.arange(na), (X - 3) @ w / np.sqrt(X.shape[1]))
    post = np.exp(logits - logits.max(axis=0))
    post /= post.sum(axis=0)
    return _with_posterior(rng, pc, post), squared_euclidean_distortion(X)


def gen_linf(rng, large=False):
    na, k = _sizes(rng, large)
    X = rng.normal(size=(k, int(rng.integers(2, 8))))
    return _dirichlet_prior(rng, na, k), np.abs(X[:, None] - X[None]).max(axis=2)


def gen_cosine(rng, large=False):
    na, k = _sizes(rng, large)
    X, _ = _features(rng, k)
    X = X - X.mean(axis=0)
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    return _dirichlet_prior(rng, na, k), np.clip(1.0 - Xn @ Xn.T, 0.0, None)


BASE = {
    "asym": gen_asym, "free": gen_free, "ties": gen_ties, "zero_row": gen_zero_row, "dyn_range": gen_dyn_range,
    "rect_wide": gen_rect_wide, "rect_narrow": gen_rect_narrow, "near_det": gen_near_det, "indep": gen_indep,
    "tiny_class": gen_tiny_class, "pc_range": gen_pc_range, "a10k10": gen_a10k10, "a_gt_k": gen_a_gt_k,
    "half_zero": gen_half_zero, "ratings": gen_ratings, "linf": gen_linf, "cosine": gen_cosine,
}
LARGE = {"large_asym": gen_asym, "large_ratings": gen_ratings, "large_ties": gen_ties}
SPECIAL = ("budgets", "targets", "maxleak", "curve")
ALL = list(BASE) + list(SPECIAL) + list(LARGE)
QUICK = ["asym", "ties", "budgets"]  # --quick: one draw of each (a few seconds)


def cases(family, rng):
    """Yield ``(prior, d, mode, value, label, with_reference)`` for one draw of a family."""
    if family in BASE:
        prior, d = BASE[family](rng)
        if rng.random() < 0.3:  # some forbidden transitions (never a whole row)
            forb = rng.random(d.shape) < 0.15
            forb[np.arange(d.shape[0]), d.argmin(axis=1)] = False
            d = np.where(forb, np.inf, d)
        yield prior, d, "delta", _mid(rng, prior, d), f"k={d.shape[0]}x{d.shape[1]} |A|={prior.shape[0]}", True
    elif family in LARGE:
        prior, d = LARGE[family](rng, large=True)
        yield prior, d, "delta", _mid(rng, prior, d), f"k={d.shape[0]} |A|={prior.shape[0]}", False
    elif family == "budgets":
        gen = BASE[list(BASE)[rng.integers(len(BASE))]]
        prior, d = gen(rng)
        dmin, dmax = d_bounds(prior, d)
        prob = Problem(prior / prior.sum(), d)
        _, dpp = perfect_privacy_mapping(prob)
        budgets = [("dmin", dmin), ("dmin(1+1e-9)", dmin * (1 + 1e-9)), ("mid", 0.5 * (dmin + dmax)),
                   ("d_pp", dpp), ("dmax", dmax), ("10 dmax", 10 * dmax)]
        for name, b in budgets:
            if np.isfinite(b):
                yield prior, d, "delta", b, f"{gen.__name__[4:]} k={d.shape[0]} {name}", True
    elif family == "targets":
        gen = BASE[list(BASE)[rng.integers(len(BASE))]]
        prior, d = gen(rng)
        iac = max(mi_bits(prior, np.eye(prior.shape[1])), 0.0)  # rounding can make it -1e-19
        for name, t in (("0", 0.0), ("1e-9", 1e-9), ("1e-3 I", 1e-3 * iac), ("0.5 I", 0.5 * iac)):
            yield prior, d, "target", t, f"{gen.__name__[4:]} k={d.shape[0]} L={name}", True
    elif family == "maxleak":
        gen = BASE[list(BASE)[rng.integers(len(BASE))]]
        prior, d = gen(rng)
        if d.shape[0] > 25:
            prior, d = gen(rng)
        yield prior, d, "ml_delta", _mid(rng, prior, d), f"{gen.__name__[4:]} k={d.shape[0]} delta", True
        iac = ml_bits(prior, np.eye(prior.shape[1]))
        yield prior, d, "ml_target", 0.3 * iac, f"{gen.__name__[4:]} k={d.shape[0]} target", True
    elif family == "curve":
        gen = BASE[list(BASE)[rng.integers(len(BASE))]]
        prior, d = gen(rng)
        dmin, dmax = d_bounds(prior, d)
        yield prior, d, "curve", dmin + np.linspace(0, 1.05, 8) ** 2 * (dmax - dmin), \
            f"{gen.__name__[4:]} k={d.shape[0]}", True


# ----------------------------------------------------------------------------- running
class Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise Hang()


def guarded(solve):
    """Run ``solve()`` (a list of MappingResults) under the hang alarm, recording ConvergenceWarnings:
    ``(results or None, warned, seconds, error)``; a crash keeps its traceback (``error.tb``)."""
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        signal.alarm(int(3 * HANG_S))
        try:
            out, err = solve(), None
        except (SolverError, InfeasibleBudgetError) as exc:
            out, err = None, exc
        except Hang:
            out, err = None, Hang(f"> {3 * HANG_S:.0f} s")
        except Exception as exc:  # noqa: BLE001 - a crash is a finding
            out, err = None, exc
            err.tb = traceback.format_exc()
        finally:
            signal.alarm(0)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return out, warned, time.perf_counter() - t0, err


def run_one(prior, d, mode, value, solver):
    """``(results list, warned, seconds, error)``; results are MappingResults (several for a curve)."""
    def solve():
        if mode == "delta":
            return [solve_mapping(prior, d, value, solver=solver)]
        if mode == "target":
            return [solve_mapping(prior, d, max_leakage=value, solver=solver)]
        if mode == "ml_delta":
            return [solve_mapping(prior, d, value, leakage="maximal_leakage", solver=solver)]
        if mode == "ml_target":
            return [solve_mapping(prior, d, max_leakage=value, leakage="maximal_leakage", solver=solver)]
        return privacy_distortion_curve(prior, d, value, solver=solver, return_mappings=True)[1]

    return guarded(solve)


REFUSALS = []  # correct refusals (InfeasibleBudgetError for an unreachable value, confirmed by refusal_ok)
UNCHECKED = []  # answers whose reference failed (nan): checked for feasibility (and targets) only


def check(prior, d, mode, value, res, with_ref):
    """List of problems with one claimed-optimal answer (empty = fine); and the reference value.

    An answer whose reference came back nan (CLARABEL gave no usable point) is checked for feasibility (and its
    target) only: it is listed in ``UNCHECKED`` and printed after the table, never counted as verified silently.
    """
    probs = []
    delta = value if mode in ("delta", "ml_delta", "curve") else None
    if not feasible(prior, d, res.mapping, delta):
        probs.append("infeasible")
    M = np.asarray(res.mapping.toarray() if hasattr(res.mapping, "toarray") else res.mapping)
    dmin, dmax = d_bounds(prior, d)
    ref = np.nan
    budget_modes = {"delta": (mi_bits, ref_delta, "leakage"), "curve": (mi_bits, ref_delta, "leakage"),
                    "ml_delta": (ml_bits, ref_maxleak, "maximal leakage")}
    if mode in budget_modes:
        measure, reference, what = budget_modes[mode]
        f = measure(prior, M)
        if with_ref:
            ref = reference(prior, d, value)
            if f - ref > TOL_BITS:
                probs.append(f"{what} {f:.9g} > reference {ref:.9g} + 1e-6")
    elif mode == "target":
        f = mi_bits(prior, M)
        if f > value * (1 + 1e-9) + 1e-12:
            probs.append(f"leakage {f:.3g} bits above the target {value:.3g}")
        if with_ref:
            ref = ref_target(prior, d, value)
            dist = exp_dist(prior, M, d)
            if dist - ref > DIST_RTOL * (dmax - dmin) + 1e-12 * dmax:
                probs.append(f"distortion {dist:.9g} > reference {ref:.9g} (+{(dist - ref) / (dmax - dmin):.2g} "
                             "of the range)")
    if with_ref and mode != "ml_target" and not np.isfinite(ref):
        UNCHECKED.append(f"{mode} k={d.shape[0]} |A|={prior.shape[0]} v={float(value):.4g}")
    elif mode == "ml_target":
        f = ml_bits(prior, M)
        if f > value + 1e-12:
            probs.append(f"maximal leakage {f:.3g} above the target {value:.3g}")
    return probs, ref


def _dump(folder, name, prior, d, mode, value):
    """Save one instance (``--dump``) for a regression test: ``folder/name.npz``."""
    if folder:
        os.makedirs(folder, exist_ok=True)
        np.savez(os.path.join(folder, f"{name}.npz"), prior=prior, d=d, mode=np.asarray(mode),
                 value=np.asarray(value, dtype=float))


def main(cases=cases, families=ALL, doc=__doc__, quick_families=QUICK):
    """Run the families (``cases(family, rng)`` yields their instances; another script passes its own).

    ``--quick`` runs one draw of each of ``quick_families`` (a small, fast subset) unless ``--n`` or
    ``--families`` is given.
    """
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--n", type=int, default=None, help="draws per family (default 8; 1 with --quick)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--families", nargs="*", default=None, choices=families,
                    help="default: every family (a small fast subset with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help=f"small, fast configuration: one draw of {', '.join(quick_families)}")
    ap.add_argument("--reference", action="store_true", help="check optimality against plain cvxpy (CLARABEL)")
    ap.add_argument("--no-fast", action="store_true", help="skip the solver='fast' run")
    ap.add_argument("--verbose", action="store_true", help="print every instance")
    ap.add_argument("--dump", metavar="DIR", help="save every instance with a finding as DIR/<family>_<seed>_<draw>_<case>.npz")
    args = ap.parse_args()
    if args.n is None:
        args.n = 1 if args.quick else 8
    if args.families is None:
        args.families = list(quick_families) if args.quick else list(families)
    signal.signal(signal.SIGALRM, _alarm)
    hdr = (f"{'family':>13} {'n':>4} {'fast cert':>9} {'fell back':>9} {'flagged':>7} {'silent':>6} "
           f"{'refused':>7} {'crash':>5} {'unwarned':>8} {'max s':>7}")
    findings = []
    rows = []
    for fam in args.families:
        rng = np.random.default_rng([args.seed, zlib.crc32(fam.encode()), 19])
        c = dict(n=0, fast=0, back=0, flag=0, silent=0, refused=0, crash=0, unwarned=0, tmax=0.0)
        for i in range(args.n):
            for case, (prior, d, mode, value, label, want_ref) in enumerate(cases(fam, rng)):
                n_findings = len(findings)
                out, warned, t, err = run_one(prior, d, mode, value, "auto")
                outs = out if out is not None else [None]
                c["n"] += len(outs)
                c["tmax"] = max(c["tmax"], t)
                tag = f"{fam} #{i} {label} mode={mode}"
                if isinstance(err, Hang) or (t > HANG_S and d.shape[0] <= 60):
                    findings.append(f"HANG {tag}: {t:.1f} s")
                if err is not None:
                    # a refusal of an unreachable value (below the smallest achievable one, checked here by the
                    # independent computation, and named by the error) is correct: counted apart. Any other
                    # exception, and a refusal the check does not confirm, is a crash
                    ok, why = refusal_ok(prior, d, mode, value, err)
                    if ok:
                        c["refused"] += 1
                        REFUSALS.append(f"{tag}: {why}")
                        continue
                    c["crash"] += 1
                    findings.append(f"CRASH {tag}: {type(err).__name__}: {err}"
                                    + (f"\n{err.tb}" if hasattr(err, "tb") else ""))
                    _dump(args.dump, f"{fam}_{args.seed}_{i}_{case}", prior, d, mode, value)
                    continue
                fast_ok = None
                if not args.no_fast:
                    fo, _, _, ferr = run_one(prior, d, mode, value, "fast")
                    fast_ok = ferr is None and all(r.status == "optimal" for r in fo)
                    if not fast_ok:
                        findings.append(f"NOT FAST {tag}: " + (f"{type(ferr).__name__}: {ferr}" if ferr else
                                                              str([r.status for r in fo])))
                    if ferr is not None and not isinstance(ferr, SolverError):
                        findings.append(f"CRASH(fast) {tag}: {type(ferr).__name__}: {ferr}")
                values = value if mode == "curve" else [value]
                for res, v in zip(outs, values):
                    if res.status != "optimal":
                        c["flag"] += 1
                        findings.append(f"FLAGGED {tag} v={v!r}: {res.solver} {res.certificate}")
                        if not warned:
                            c["unwarned"] += 1
                            findings.append(f"UNWARNED {tag} v={v!r}: status {res.status}")
                        continue
                    probs, ref = check(prior, d, mode if mode != "curve" else "curve", v, res,
                                       with_ref=want_ref and args.reference)
                    if probs:
                        c["silent"] += 1
                        findings.append(f"SILENT {tag} v={v!r}: {'; '.join(probs)} (solver {res.solver}, "
                                        f"cert {res.certificate})")
                    elif "cvxpy" in res.solver:
                        c["back"] += 1
                        findings.append(f"FALLBACK {tag} v={v!r}: solver {res.solver}")
                    if args.verbose:
                        print(f"   {tag} v={v:.4g} {res.solver} {res.status} gap={res.certificate.get('gap_bits')}"
                              f" ref={ref:.6g} t={t:.2f}", flush=True)
                if fast_ok:
                    c["fast"] += len(outs)
                if len(findings) > n_findings:
                    _dump(args.dump, f"{fam}_{args.seed}_{i}_{case}", prior, d, mode, value)
        rows.append((fam, c))
        print(f"{fam:>13} {c['n']:>4} {c['fast']:>9} {c['back']:>9} {c['flag']:>7} {c['silent']:>6} "
              f"{c['refused']:>7} {c['crash']:>5} {c['unwarned']:>8} {c['tmax']:>7.2f}", flush=True)
    print()
    print(hdr)
    print("-" * len(hdr))
    for fam, c in rows:
        print(f"{fam:>13} {c['n']:>4} {c['fast']:>9} {c['back']:>9} {c['flag']:>7} {c['silent']:>6} "
              f"{c['refused']:>7} {c['crash']:>5} {c['unwarned']:>8} {c['tmax']:>7.2f}")
    tot = {key: sum(c[key] for _, c in rows)
           for key in ("n", "fast", "back", "flag", "silent", "refused", "crash", "unwarned")}
    print(f"{'total':>13} {tot['n']:>4} {tot['fast']:>9} {tot['back']:>9} {tot['flag']:>7} {tot['silent']:>6} "
          f"{tot['refused']:>7} {tot['crash']:>5} {tot['unwarned']:>8}")
    if REFUSALS:
        print("\ncorrect refusals (the value below the smallest achievable, by the independent computation):")
        for r in REFUSALS:
            print(" -", r)
    if findings:
        print("\nfindings:")
        for f in findings:
            print(" -", f)
    if UNCHECKED:
        print(f"\nreference unavailable (nan) for {len(UNCHECKED)} answers, checked for feasibility only "
              "(ml_target has no reference):")
        for u in UNCHECKED:
            print(" -", u)


if __name__ == "__main__":
    main()
