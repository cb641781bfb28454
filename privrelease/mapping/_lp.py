"""Linear programs of the mapping engine, solved exactly with HiGHS.

* :func:`perfect_privacy_mapping`: the smallest distortion of a mapping whose
  output is independent of A. ``I(A; C_hat) = 0`` iff ``J(a, j) = p(a) q(j)``,
  which is linear in the mapping, so this end point of the privacy-distortion
  curve is an LP. With two classes it is a transportation problem between the
  inputs on either side of ``p(a)``, solved by column generation over paths
  (:func:`_two_class_transport`).
* :func:`solve_maximal_leakage_lp`: minimise the maximal leakage
  ``log2 sum_j max_a p(j | a)`` under a distortion budget (or the distortion
  under a maximal-leakage target). ``sum_j max_a`` is convex piecewise linear:
  with epigraph variables ``z_j >= p(j | a)`` it is an LP, written in the slack form ``z_j = p(j | ref_j) + u_j``,
  ``F = sum_j p(j | ref_j)`` for every mapping (:func:`_ml_references`): the delta mode minimises ``sum_j u_j`` (in
  units of its answer, :func:`_maximal_leakage_lp`), the target mode has ``sum_j u_j <= 2^target - F``
  (:func:`_maximal_leakage_target_lp`).
"""

import hashlib
import math
import threading
import warnings
import weakref
from collections import OrderedDict

import numpy as np
import scipy.sparse as sp
from scipy.optimize import OptimizeWarning, linprog

from ..exceptions import InfeasibleBudgetError, SolverError
from ._problem import Problem, maximize_multiplier
from ._sparse import SparseProblem

__all__ = ["perfect_privacy_mapping", "independence_lower_bound", "sharpest_independence_multipliers",
           "solve_maximal_leakage_lp"]


#: seconds HiGHS may spend on one LP of the mapping engine: this floor plus HIGHS_SECONDS_PER_NONZERO per nonzero of
#: its constraint matrix (the perfect-privacy LP at k = 1000, two classes, ~3e6 nonzeros: 60 .. 80 s, within the
#: limit's 360 s). An LP stopped by it is unsuccessful (HiGHS's status 1), as any other: its caller falls back, or its
#: answer is warned ("auto") or raised as not certified, never "optimal". Row coefficients of ~1e12 at tolerances of
#: 1e-10 made HiGHS not return at all. The limit counts wall time (HiGHS has no other), so on a loaded machine an LP
#: may stop early; it is not retried with a longer one (stop 46): stopped, the answer is warned or raised, never wrong;
#: the limit is already 4.5 times the largest LP measured (the k = 1000 perfect-privacy LP above), which covers a
#: machine shared four or five ways; and a retry at twice the limit would triple the wait on the LPs the limit exists
#: for (those HiGHS does not return from) before the same unsuccessful answer. A caller on a busier machine raises the
#: two constants. The cvxpy programs of the engine (the maximal-leakage program of ``solver="cvxpy"``, the sharpened
#: multipliers' cone program) carry the same limit for their estimated nonzeros (time_limit_for_nonzeros)
HIGHS_TIME_LIMIT_FLOOR = 60.0
HIGHS_SECONDS_PER_NONZERO = 1e-4


def highs_time_limit(*matrices):
    """The time limit (seconds) of an LP whose constraint matrices are ``matrices`` (None entries skipped): see
    HIGHS_TIME_LIMIT_FLOOR."""
    nnz = 0
    for A in matrices:
        if A is not None:
            nnz += int(A.nnz) if sp.issparse(A) else int(np.count_nonzero(A))
    return time_limit_for_nonzeros(nnz)


def time_limit_for_nonzeros(nnz):
    """The time limit (seconds) of a program of ``nnz`` constraint nonzeros: see HIGHS_TIME_LIMIT_FLOOR (also the
    cvxpy programs of the engine, whose matrices cvxpy builds: their count estimated by the caller)."""
    return float(HIGHS_TIME_LIMIT_FLOOR + HIGHS_SECONDS_PER_NONZERO * int(nnz))


def highs_linprog(c, A_ub=None, b_ub=None, A_eq=None, b_eq=None, bounds=(0, None), method="highs", options=None):
    """scipy's ``linprog`` by HiGHS (``method``) with the time limit of :func:`highs_time_limit` added to
    ``options``."""
    opts = {**dict(options or {}), "time_limit": highs_time_limit(A_ub, A_eq)}
    return linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method=method, options=opts)


def _entries(prob):
    return prob.edges()


def _row_sum_matrix(prob, r, n):
    return sp.csr_matrix((np.ones(n), (r, np.arange(n))), shape=(prob.k, n))


def _dual_bound(res, b_ub, b_eq):
    """Objective of the LP dual read from HiGHS's marginals (a lower bound when they are feasible)."""
    val = 0.0
    if b_ub is not None and res.ineqlin is not None:
        val += float(np.dot(res.ineqlin.marginals, b_ub))
    if b_eq is not None and res.eqlin is not None:
        val += float(np.dot(res.eqlin.marginals, b_eq))
    return val


def perfect_privacy_mapping(prob, return_duals=False):
    """Cheapest reduced mapping with ``I(A; C_hat) = 0``; returns ``(P, distortion)`` (user units)
    or ``(None, inf)``.

    ``return_duals=True`` appends the multipliers ``t`` (``(|A| - 1) x |C_hat|``, or None) of the
    independence equations ``sum_c g_a(c) P(c, j) = 0``, ``g_a(c) = p(a, c) - p(a) p(c)``, read from
    the LP: :func:`independence_lower_bound` turns them into a lower bound on the distortion of every
    mapping that leaks at most a given amount.
    """
    key = _problem_key(prob)
    with _PP_LOCK:
        hit = _PP_CACHE.get(key)
        if hit is not None:
            _PP_CACHE.move_to_end(key)
    if hit is None:
        P, _, t = _perfect_privacy_mapping(prob)
        hit = (P, t)
        with _PP_LOCK:
            _PP_CACHE[key] = hit
            while len(_PP_CACHE) > _PP_CACHE_SIZE:
                _PP_CACHE.popitem(last=False)
    P, t = hit
    if P is None:
        out = (None, float("inf"), None)
    else:  # copies: callers own what they get; the distortion in this problem's own units
        out = (P.copy(), prob.to_user(prob.distortion(P)), None if t is None else t.copy())
    return out if return_duals else out[:2]


#: the perfect-privacy LP divides each class's independence equations by their largest coefficient when it is above
#: this share of the terms it is the difference of (below, the difference is rounding, p(a, c) = p(a) p(c))
ROW_SCALE_FLOOR = 1e-12
#: ... and below this share (a class nearly independent of the inputs); other LPs are left as HiGHS scales them
ROW_SCALE_BELOW = 1e-4

#: inputs whose masses span more than this ratio (smallest to largest) have the perfect-privacy LP solved in
#: the joint masses first (see _perfect_privacy_mapping)
WIDE_PRIOR = 1e-5

#: the perfect-privacy LP of the last few reduced problems: one QuantizedPrivacyMapper fit per leakage cap
#: solves it again on the same prior and costs (6 classes, 200 clusters: 38 s a solve, 7 solves a curve)
_PP_CACHE = OrderedDict()
_PP_CACHE_SIZE = 4
_PP_LOCK = threading.Lock()


def _problem_key(prob):
    """Digest of what the LP depends on: the reduced joint ``M``, the costs and the allowed entries (in
    the problem's normalised units: ``D`` and ``1e-13 D`` share an LP, each reports in its own units)."""
    h = hashlib.blake2b(digest_size=20)
    r, c, _ = prob.edges()
    for a in (prob.M, r, c, prob.edge_weights()):
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    h.update(str((prob.k, prob.kh, bool(prob.sparse))).encode())
    return h.hexdigest()


def _perfect_privacy_mapping(prob):
    r_all, c_all, n_all = _entries(prob)
    na = prob.M.shape[0]
    # an output reached by a single row c (with mass) is independent of A only if p(. | c) = p_A:
    # otherwise its entry is 0 in every perfectly private mapping, so it is removed before the LP
    # (for an erasure alphabet these are the non-erased tuples: the LP shrinks to the shared outputs)
    private = np.bincount(c_all, minlength=prob.kh)[c_all] == 1
    dev = np.abs(prob.M[:, r_all] - prob.pA[:, None] * prob.pc[r_all][None, :]).max(axis=0)
    keep = ~(private & (dev > 1e-12 * prob.pc[r_all]))
    if not np.all(np.bincount(r_all[keep], minlength=prob.k) > 0):
        return None, float("inf"), None
    if na == 2 and not prob.sparse:
        # two classes: the same LP as a transportation problem on paths, by column generation
        # (k = 1000: 6 s against 79 s for the plain LP below; the plain LP stays the fallback)
        P, t = _two_class_transport(prob)
        if P is not None and prob.objective(P) <= 1e-12 * math.log(2.0):
            P = _merge_leaky_outputs(prob, P)
            return P, prob.to_user(prob.distortion(P)), t
    sel = np.flatnonzero(keep)
    r, c, n = r_all[sel], c_all[sel], sel.size
    pc_r = prob.pc[r]
    w = prob.edge_weights()[sel]
    # first in the mapping variables P (HiGHS's defaults): fast (k = 1000: ~60 s; in y, 4x that). Beyond two
    # classes by HiGHS's interior point (with its crossover to a vertex, so the same optimum and multipliers):
    # the |A| - 1 blocks of independence equations made the dual simplex slow, 63 s against 17 s at 21 classes
    # x 200 clusters (an occupation attribute), 3.8 s against 2.3 s at 7 x 200
    method = "highs-ipm" if na > 2 else "highs"
    # inputs whose masses span more than WIDE_PRIOR (five decades) go straight to the joint masses (below):
    # in P their coefficients span as many decades, HiGHS's interior point took 2-4x the time of the LP in the
    # joint masses and its answer leaked (1.6e-10 .. 2.9e-9 nats at six to ten decades, |A| = 4, k = 158;
    # docs/benchmarks.md, stop 32), so the LP in P was solved for nothing
    def lp_in_p():
        return _independence_lp(prob, r, c, n, sel, n_all, w, np.ones(n), {}, method)

    pcs = pc_r[pc_r > 0]
    wide = pcs.size > 0 and float(pcs.min()) < WIDE_PRIOR * float(pcs.max())
    P, status, t = (None, None, None) if wide else lp_in_p()
    if P is None or prob.objective(P) > 1e-12 * math.log(2.0):
        # in P the independence coefficients p(c) (p(a | c) - p(a)) of a rare input are tiny (1e-10
        # for p(c) = 1e-10): HiGHS drops matrix entries below 1e-9 and its feasibility tolerance is
        # absolute (1e-7), so such rows leak through outputs they alone use (6e-9 bits at "perfect
        # privacy"), or the LP is declared infeasible. Then in the joint masses y(c, j) = p(c) P(c, j),
        # where every coefficient is p(a | c) - p(a) or 1, with tight tolerances; without presolve
        # first (with inputs of mass 1e-7 .. 1e-10 it declares this feasible LP infeasible)
        tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
        statuses = [] if wide else [status]
        for opts in ({**tight, "presolve": False}, tight):
            Py, status_y, ty = _independence_lp(prob, r, c, n, sel, n_all, w, pc_r, opts)
            statuses.append(status_y)
            if Py is not None:
                if P is None or prob.objective(Py) < prob.objective(P):
                    P, t = Py, ty
                break
        if P is None and wide and 2 not in statuses:  # the LP in P, skipped above, as the last resort
            P, status, t = lp_in_p()
            statuses.append(status)
        if P is None:
            if 2 in statuses:  # infeasible
                return None, float("inf"), None
            raise SolverError(f"HiGHS failed on the perfect-privacy LP (statuses {statuses})")
    P = _merge_leaky_outputs(prob, P)
    return P, prob.to_user(prob.distortion(P)), t


def _merge_leaky_outputs(prob, P, rtol=1e-7):
    """Light outputs that carry the LP's rounding merged into another output (a garbling).

    HiGHS meets the independence equations to an absolute tolerance (~1e-10 in its scaling): an
    output used only by inputs of mass 1e-10 then has a posterior off p(a) by a large factor and
    carries ``~|r|^2 / q`` of leakage (up to 1.7e-10 bits at "perfect privacy", inherited by a
    ``max_leakage=0`` answer). Merging its mass into another output ``j'`` allowed to every input
    that uses it is a post-processing of the release: the leakage never grows (mutual information
    is subadditive over the joint's columns) and here drops to the rounding of the merged column;
    the distortion grows by ``sum_c p(c) P(c, j) (W(c, j') - W(c, j))``. Outputs are merged, most
    leaky first, into their cheapest heavier target while the distortion added stays within
    ``rtol`` of the distortion range (inputs of mass 1e-10 cost ~1e-10 of it); each merge is kept
    only when the leakage drops.
    """
    if prob.sparse:
        return P
    f = prob.objective(P)
    if f <= 1e-14:  # the leakage's own rounding: nothing to merge
        return P
    from scipy.special import rel_entr

    budget = rtol * max(prob.delta_max - prob.delta_min, 0.0)
    if not np.isfinite(budget) or budget <= 0.0:
        return P
    P = P.copy()
    J = prob.joint(P)
    q = J.sum(axis=0)

    def col(v):  # one column's share of I(A; C_hat), nats
        return float(rel_entr(v, prob.pA * v.sum()).sum())

    contrib = rel_entr(J, prob.pA[:, None] * q[None, :]).sum(axis=0)
    W = np.where(prob.mask, prob.W, np.inf)
    spent = 0.0
    # passes until one merges nothing (the budget shared by all): a merge changes the targets' weights and
    # contributions, and an output passed over in the first pass can merge in the next (families seed 33,
    # pc_range, k = 45: 1.1e-12 nats left after one pass, 7.6e-17 after two, 4.6e-11 more of the distortion)
    for _ in range(10):
        merged_any = False
        # work: the LP's mapping is sparse (a basic solution), and each output costs its rows times kh
        for j in np.argsort(-contrib):
            if contrib[j] <= 0.0:
                break
            if q[j] <= 0.0:
                continue
            rows = np.flatnonzero(P[:, j] > 0)
            cost = P[rows, j] @ (W[rows] - W[rows, j][:, None])  # per target output (W = p(c) d)
            cost[j] = np.inf
            cost[q < q[j]] = np.inf  # into heavier outputs only
            t = int(np.argmin(cost))
            if not np.isfinite(cost[t]) or spent + max(cost[t], 0.0) > budget:
                continue
            merged = J[:, j] + J[:, t]
            gain = contrib[j] + contrib[t] - col(merged)
            if gain > 0.0:
                P[rows, t] += P[rows, j]
                P[rows, j] = 0.0
                J[:, t], J[:, j] = merged, 0.0
                q[t], q[j] = merged.sum(), 0.0
                contrib[t], contrib[j] = col(merged), 0.0
                spent += max(cost[t], 0.0)
                merged_any = True
        if not merged_any:
            break
    return P


def _half_range(t):
    """``max_j (max_a t~(a, j) - min_a t~(a, j)) / 2`` with ``t~`` = ``t`` and a row of zeros (the last class)."""
    if t.size == 0:
        return 0.0
    return 0.5 * float((np.maximum(t.max(axis=0), 0.0) - np.minimum(t.min(axis=0), 0.0)).max())


def _deviation_slack(t, pA, leak_nats):
    """Upper bound on ``-sum_{a,j} t~(a, j) (J - p_A q)(a, j)`` over every joint ``J`` (output marginal ``q``)
    with ``I(A; C_hat) <= leak_nats`` (nats), ``t~`` = ``t`` and a row of zeros (the last class): the smaller of
    Pinsker's ``h sqrt(2 L)`` (``h``: :func:`_half_range`) and a Donsker-Varadhan bound.

    With ``m_j = sum_a p(a) t~(a, j)``, ``g = t~ - m`` and ``Q = p_A x q``, the sum is ``E_J[g] - E_Q[g]``
    (``m`` has the same mean under ``J`` and ``Q``, which share the output marginal), and for every
    ``beta > 0`` the variational formula ``KL(J || Q) >= -beta E_J[g] - log E_Q[exp(-beta g)]`` with
    ``KL(J || Q) = I(A; C_hat)`` gives ``-E_J[g] <= (L + psi(beta)) / beta``. From ``e^y <= 1 + y + y^2 / 2
    e^|y|`` and ``log(1 + x) <= x``, ``psi(beta) <= max_j (beta |mu_j| + beta^2 / 2 exp(beta G_j) V_j)`` with
    ``mu_j = sum_a p(a) g(a, j)`` (0 up to rounding), ``V_j = sum_a p(a) g(a, j)^2`` and ``G_j = max_a |g(a, j)|``;
    any ``beta`` gives a valid bound, and near the best one, ``sqrt(2 L / max V)``, it is about ``sqrt(2 L
    max_j V_j)``: the multipliers' spread weighted by the classes' probabilities, where Pinsker takes their
    whole range (a class of probability 1e-7 with a large multiplier: 3.1 against 2.2e-3 on a five-class
    instance of the families benchmark). A relative 1e-9 covers the rounding of ``V``, ``mu`` and ``psi``.
    """
    L = max(float(leak_nats), 0.0)
    h = _half_range(t)
    pinsker = h * math.sqrt(2.0 * L)
    if L == 0.0 or pinsker == 0.0:
        return pinsker
    tt = np.vstack([t, np.zeros((1, t.shape[1]))])
    p = np.asarray(pA, dtype=float)[:, None]
    g = tt - (p * tt).sum(axis=0)[None, :]
    mu = np.abs((p * g).sum(axis=0))
    V = (p * g * g).sum(axis=0)
    G = np.abs(g).max(axis=0)
    vmax = float(V.max())
    if not vmax > 0.0:
        return pinsker
    beta0 = math.sqrt(2.0 * L / vmax)
    best = math.inf
    for beta in beta0 * 2.0 ** np.arange(-12.0, 13.0):
        with np.errstate(over="ignore"):
            psi = float(np.max(beta * mu + 0.5 * beta * beta * np.exp(np.minimum(beta * G, 700.0)) * V))
            best = min(best, (L + psi) / beta)
    dv = (best + float(mu.max())) * (1.0 + 1e-9)
    return min(pinsker, dv) if math.isfinite(dv) else pinsker


def _shift_classes(t, pA, n_iter=200):
    """``t`` shifted by a constant per class, ``t(a, j) + s_a - s_{|A| - 1}``, that makes the largest weighted spread
    ``max_j sum_a p(a) (t~(a, j) - m_j)^2`` of :func:`_deviation_slack` (about) the smallest.

    Each class's column of the joint's departure from independence sums to 0 (``sum_j J(a, j) = p(a) = sum_j p(a)
    q(j)``), so a constant per class changes neither the Lagrangian's row minima (``sum_c g_a(c) = 0``) nor the
    deviation ``sum_{a,j} t~(a, j) (J - p_A q)(a, j)`` it bounds: only the bound of that deviation, which sees each
    column's spread over the classes, where a multiplier common to a class's outputs adds to it (the LP's
    multipliers are defined up to such constants; at |A| = 19 they sat at 100 .. 300 per class and spread by about
    10 within one). The columns ``t~(., j)`` are points in ``R^|A|`` under the seminorm ``sum_a p(a) (y_a -
    sum_b p(b) y_b)^2``; the shift is the centre of their smallest enclosing ball (Badoiu and Clarkson's
    iteration from their mean: within ``1 / sqrt(n_iter)`` of the radius). Any shift leaves the bound valid
    (:func:`independence_lower_bound` evaluates the shifted multipliers as they are).
    """
    tt = np.vstack([t, np.zeros((1, t.shape[1]))])
    p = np.asarray(pA, dtype=float)
    X = tt - (p @ tt)[None, :]  # weighted-centred columns: the seminorm is p-weighted Euclidean on them
    # the farthest column from z is the argmax of |X_j|^2 - 2 <z, X_j>: one product a step, not the |A| x |C_hat|
    # differences (3-4x faster at |A| = 2 .. 4, |C_hat| = 3 .. 12, where numpy's calls are most of the time)
    XT = np.ascontiguousarray(X.T)
    sq = (XT * XT) @ p
    z = X.mean(axis=1)
    for i in range(1, n_iter + 1):
        far = int((sq - 2.0 * (XT @ (p * z))).argmax())
        z += (XT[far] - z) / (i + 1)
    z -= p @ z
    return t - z[:-1, None] + z[-1]


def independence_lower_bound(prob, t, leak_nats):
    """Lower bound on the distortion (internal units) of every allowed mapping that leaks at most
    ``leak_nats`` (mutual information, nats); ``-inf`` without multipliers.

    Lagrangian duality of the perfect-privacy LP, relaxed by Pinsker's inequality: for any
    multipliers ``t`` (``(|A| - 1) x |C_hat|``) and any row-stochastic allowed ``P``,
    ``<W, P> = sum_{c,j} P(c, j) (W(c, j) - sum_a g_a(c) t(a, j)) + sum_{a,j} t(a, j) r(a, j)``
    with ``g_a(c) = p(a, c) - p(a) p(c)`` and ``r = J - p_A q`` the joint's departure from
    independence. The first sum is at least ``sum_c min_j (W(c, j) - sum_a g_a(c) t(a, j))`` and
    ``|sum t r| <= max |t| ||J - p_A q||_1 <= max |t| sqrt(2 I(A; C_hat))``; sharper, since each column of
    ``r`` sums to 0 over all the classes (the last one's multiplier being 0), ``max |t|`` is replaced by the
    largest half-range ``max_j (max_a t~(a, j) - min_a t~(a, j)) / 2`` of ``t~ = (t, 0)`` (up to twice smaller),
    and sharper still by the Donsker-Varadhan bound of :func:`_deviation_slack` (about
    ``sqrt(2 I max_j sum_a p(a) (t~(a, j) - m_j)^2)``: the multipliers' spread weighted by the classes'
    probabilities). At a leakage above 0 the multipliers are also tried shifted by a constant per class
    (:func:`_shift_classes`: the same row minima, a smaller spread). With the LP's own
    multipliers the first term is the LP's optimum (up to its tolerances), so the bound is
    ``d_pp - h(t) sqrt(2 I)`` or better (``h``: that half-range): it certifies the distortion of the perfect-privacy
    mapping for
    targets below the leakage's rounding (a target of ``1e-30`` bits), where a solve cannot tell
    ``I`` from 0. An output that a single input can reach (the non-erased tuple of an erasure
    alphabet) is forced to 0 by independence; its multiplier is raised so that its entry prices at
    the row's best other entry (when that is higher), the better of the two bounds is returned.
    """
    if t is None:
        return -math.inf
    t = np.asarray(t, dtype=float)
    na = prob.M.shape[0]
    if t.shape != (na - 1, prob.kh) or not np.all(np.isfinite(t)):
        return -math.inf
    r, c, n = prob.edges()
    if n == 0:
        return -math.inf
    # in extended precision where the platform has it (x86: 64-bit mantissa): the multipliers of a nearly
    # independent class reach 1e12, and the rounding of p(a, c) - p(a) p(c) times them is the bound's error
    LD = np.longdouble
    w = prob.edge_weights().astype(LD)
    G = prob.M[: na - 1].astype(LD) - prob.pA[: na - 1, None].astype(LD) * prob.pc[None, :].astype(LD)
    ordered = bool(np.all(np.diff(r) >= 0))
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]]) if ordered else None

    def row_min(v):
        if ordered and starts.size == prob.k:
            return np.minimum.reduceat(v, starts)
        m = np.full(prob.k, np.inf, dtype=v.dtype)
        np.minimum.at(m, r, v)
        return m

    best = -math.inf
    gr = G[:, r]
    def lagrangian(tt):
        return w - np.einsum("ae,ae->e", gr, tt[:, c].astype(LD))

    v = lagrangian(t)
    cands = [(v, t)]
    private = np.bincount(c, minlength=prob.kh)[c] == 1
    if private.any():
        m_other = row_min(np.where(private, np.inf, v))
        ga = np.abs(gr).argmax(axis=0)
        gmax = gr[ga, np.arange(n)]
        raise_ = private & (v < m_other[r]) & np.isfinite(m_other[r]) & (gmax != 0)
        if raise_.any():
            t2 = t.copy()
            e = np.flatnonzero(raise_)
            t2[ga[e], c[e]] += ((v[e] - m_other[r[e]]) / gmax[e]).astype(float)
            cands.append((lagrangian(t2), t2))
    if leak_nats > 0.0 and na > 1:
        # the same multipliers shifted by a constant per class: the same row minima (up to rounding), a smaller
        # slack (see _shift_classes); the better bound is kept, each evaluated as it is
        for vv, tt in list(cands):
            ts = _shift_classes(tt, prob.pA)
            cands.append((lagrangian(ts), ts))
    # the rounding of the Lagrangian's terms, bounded: G carries the rounding of M - p_A p_C (p_A, p_C themselves sums
    # of M), a few ulps of M plus (|A| + k + 3) of p(a) p(c), and the sum over the classes its own; times multipliers
    # of 3e12 (a nearly independent prior) the float bound stood 1.6e-4 relative above the same Lagrangian in exact
    # arithmetic. Each row's minimum moves by at most its largest entry's error
    u = float(np.finfo(LD).eps)
    u64 = float(np.finfo(float).eps)
    mass = prob.M[: na - 1, r] + (na + prob.k + 3) * prob.pA[: na - 1, None] * prob.pc[None, r]
    gabs = np.abs(gr).astype(float)
    wabs = np.abs(w).astype(float)

    def rounding(tt):
        at = np.abs(tt[:, c])
        err = u * (np.einsum("ae,ae->e", mass, at) + (na + 1) * np.einsum("ae,ae->e", gabs, at) + wabs)
        worst = np.zeros(prob.k)
        np.maximum.at(worst, r, err)
        return float(worst.sum())

    for vv, tt in cands:
        m = row_min(vv)
        if np.all(np.isfinite(m)):
            total = m.sum()
            # the sum's rounding (extended), then its conversion to a double, rounded down
            # and the marginals' own rounding (p_A, p_C are float sums of M): at an independent joint r = J - p_A q
            # is then not 0 but within (k + |A|) ulps of p(a) q(j), times the multipliers
            marg = (prob.k + na) * u64 * float((np.abs(tt) * prob.pA[: na - 1, None]).sum(axis=0).max(initial=0.0))
            slack = rounding(tt) + prob.k * u * float(np.abs(m).sum()) + marg
            low = float(total)
            if low > total:
                low = float(np.nextafter(low, -np.inf))
            best = max(best, low - slack - _deviation_slack(tt, prob.pA, leak_nats))
    return best


def allowed_blocks(prob):
    """``(labels, out_labels, n_blocks)``: the connected component of each input (``labels``, length ``k``) and of
    each output (``out_labels``, length ``k_hat``; -1 for an output no input may reach) in the bipartite graph of
    the allowed entries (inputs and outputs the nodes, an allowed entry an edge)."""
    from scipy.sparse.csgraph import connected_components

    r, c, n = prob.edges()
    g = sp.csr_matrix((np.ones(n), (r, prob.k + c)), shape=(prob.k + prob.kh, prob.k + prob.kh))
    _, lab = connected_components(g, directed=False)
    ids, labels = np.unique(lab[: prob.k], return_inverse=True)
    labels = labels.reshape(-1)
    out = np.full(prob.kh, -1)
    out[c] = labels[r]
    return labels, out, int(ids.size)


class BlockFloor:
    """The smallest leakage when the allowed entries split the inputs and outputs into several blocks, and the
    cheapest mappings that reach it.

    The block ``B`` of an input (:func:`allowed_blocks`) is also the block of every output it may reach, so
    ``C_hat`` determines ``B`` and ``I(A; C_hat) = I(A; B) + I(A; C_hat | B) >= I(A; B)``, with equality iff
    ``p(c_hat | a, B)`` does not depend on ``a`` within each block (perfect privacy given the block). The distortion
    is a sum over the blocks, so the cheapest such mapping is the perfect-privacy LP of each block's own problem
    (its prior ``p(a, c | B = b)``, its inputs and outputs; :func:`perfect_privacy_mapping`), and the bound of its
    multipliers (:func:`independence_lower_bound`) bounds every mapping leaking at most ``I(A; B) + e``: then
    ``I(A; C_hat | B = b) <= e / p(b)`` in each block. (Maximal leakage: ``sum_j max_a p(j | a) >= sum_b max_a p(b
    | a)``, :func:`_ml_references`.)

    Attributes
    ----------
    n_blocks : int
        The number of blocks (1: the ordinary case, where the floor is 0).
    mi_floor : float
        ``I(A; B)`` in nats.
    mi_magnitude : float
        The magnitude of the terms summed into it (its rounding is relative to that).
    """

    def __init__(self, prob):
        self.prob = prob
        self.labels, _, self.n_blocks = allowed_blocks(prob)
        # p(a, b), the joint of the class and the block (columns of M summed per block)
        self.pab = np.zeros((prob.M.shape[0], self.n_blocks))
        np.add.at(self.pab.T, self.labels, prob.M.T)
        pb = self.pab.sum(axis=0)
        from scipy.special import rel_entr

        terms = rel_entr(self.pab, prob.pA[:, None] * pb[None, :])
        self.mi_floor = max(float(terms.sum()), 0.0)
        #: the magnitude the floor's rounding is relative to: its terms (and the masses, which sum to 1), not the
        #: floor itself, which cancels them (the floor computed in another order differs by the rounding of its terms)
        self.mi_magnitude = float(np.abs(terms).sum()) + 1.0
        self._parts = None
        self._mapping = None  # (P, ts, each block's mapping): mapping()'s, which lower_bound() measures from

    def parts(self):
        """Per block ``(rows, cols, p(b), sub-problem)`` (cached). A sub-problem's distortion is ``prob``'s internal
        one on the block (each row's minimum 0, so no offset): its user units are ``prob``'s internal units, and a
        difference of its distortions converts by its ``gap_to_user``. For a sparse ``prob``
        (:class:`~privrelease.mapping._sparse.SparseProblem`) ``cols`` are the indices of the block's edges in
        ``prob``'s edge vector (row by row, outputs increasing: the sub-problem's own edges in the same order) and
        the sub-problem is sparse too."""
        if self._parts is None:
            prob = self.prob
            self._parts = []
            if prob.sparse:
                r, c, _ = prob.edges()
            else:
                d = np.where(prob.mask, prob.d, np.inf)
            for b in range(self.n_blocks):
                rows = np.flatnonzero(self.labels == b)
                pb = float(prob.pc[rows].sum())
                if prob.sparse:
                    cols = np.flatnonzero(self.labels[r] == b)
                    outs, c_sub = np.unique(c[cols], return_inverse=True)
                    r_sub = np.searchsorted(rows, r[cols])
                    D_sub = sp.csr_array((prob.d[cols], (r_sub, c_sub.reshape(-1))), shape=(rows.size, outs.size))
                    D_sub.sort_indices()
                    sub = SparseProblem(prob.M[:, rows] / pb, D_sub)
                else:
                    cols = np.flatnonzero(prob.mask[rows].any(axis=0))
                    sub = Problem(prob.M[:, rows] / pb, d[np.ix_(rows, cols)])
                self._parts.append((rows, cols, pb, sub))
        return self._parts

    def mapping(self):
        """``(P, t)``: the cheapest reduced mapping of leakage ``I(A; B)`` (per-block perfect privacy) and each
        block's multipliers (None for a block whose cheapest mapping is private: one input or one class), or
        ``(None, None)`` when some block has no perfectly private mapping (computed once; copies returned)."""
        if self._mapping is None:
            self._mapping = self._solve_blocks()
        P, ts, _ = self._mapping
        if P is None:
            return None, None
        return P.copy(), [None if t is None else t.copy() for t in ts]

    def _solve_blocks(self):
        """``(P, ts, blocks)`` of :meth:`mapping` (each block's own mapping in ``blocks``), or ``(None, None,
        None)``."""
        prob = self.prob
        P = np.zeros(prob.edges()[2]) if prob.sparse else np.zeros((prob.k, prob.kh))
        ts, blocks = [], []
        for rows, cols, _, sub in self.parts():
            if sub.k == 1 or sub.M.shape[0] == 1:  # p(c_hat | a, b) is the one row's: private whatever it is
                Pb, t = sub.P_min, None
            else:
                Pb, _, t = perfect_privacy_mapping(sub, return_duals=True)
                if Pb is None:
                    return None, None, None
            # every input of a block has mass: the sub-problem drops none (nor, sparse, any of their edges)
            if prob.sparse:
                P[cols] = Pb
            else:
                P[np.ix_(rows, cols)] = Pb
            ts.append(t)
            blocks.append(Pb)
        return P, ts, blocks

    def sharpest(self, ts, leak_nats):
        """Each block's multipliers re-optimised for the leakage ``leak_nats``
        (:func:`sharpest_independence_multipliers` at ``e / p(b)``, ``e`` the excess over the floor) where that raises
        its bound; ``ts`` otherwise."""
        excess = float(leak_nats) - self.mi_floor
        if ts is None or excess <= 0.0:
            return ts
        out = []
        for (_, _, pb, sub), t in zip(self.parts(), ts):
            if t is not None:
                t_best = sharpest_independence_multipliers(sub, excess / pb)
                if t_best is not None and independence_lower_bound(sub, t_best, excess / pb) > \
                        independence_lower_bound(sub, t, excess / pb):
                    t = t_best
            out.append(t)
        return out

    def lower_bound(self, ts, leak_nats):
        """Lower bound (internal units of ``prob``) on the distortion of every mapping leaking at most ``leak_nats``
        (``-inf`` below ``I(A; B)``, without a block's multipliers or without a per-block mapping; ``ts`` from
        :meth:`mapping` or :meth:`sharpest`; the blocks' mappings are solved here if :meth:`mapping` was not called).

        The distortion of :meth:`mapping`'s answer less each block's distance to its bound, ``p(b)`` times the
        difference of two distortions of the block's problem in user units (its ``gap_to_user``: a difference carries
        no offset; mappings' distortions differ by the same in ``prob``'s units)."""
        excess = float(leak_nats) - self.mi_floor
        if ts is None or excess < 0.0:
            return -math.inf
        if self._mapping is None:
            self._mapping = self._solve_blocks()
        P, _, blocks = self._mapping
        if P is None:
            return -math.inf
        total = self.prob.distortion(P)
        for (_, _, pb, sub), t, Pb in zip(self.parts(), ts, blocks):
            if t is None and (sub.k == 1 or sub.M.shape[0] == 1):
                continue  # the cheapest mapping itself is private: no distance
            lb = independence_lower_bound(sub, t, excess / pb)
            if not np.isfinite(lb):
                return -math.inf
            total -= pb * max(sub.gap_to_user(sub.distortion(Pb) - max(lb, sub.delta_min)), 0.0)
        return total


#: largest Lagrangian (allowed entries x (|A| - 1)) for which sharpest_independence_multipliers solves its cone program
SHARPEN_MAX_ENTRIES = 400_000

#: the same on a sparse problem (the large ones): its cone program took 181 s at 202,260 allowed entries (k = 2000,
#: 95 % forbidden, 2 classes) to raise the bound by 1.8e-4 of itself; about 1 ms an entry
SHARPEN_MAX_SPARSE_ENTRIES = 20_000


def sharpest_independence_multipliers(prob, leak_nats, max_entries=SHARPEN_MAX_ENTRIES):
    """Multipliers ``t`` (``(|A| - 1) x |C_hat|``) that (nearly) maximise :func:`independence_lower_bound` at a
    leakage of ``leak_nats`` > 0 (nats); None when the cone program is too large, cvxpy is missing or it fails.

    The bound is ``sum_c min_j (W(c, j) - sum_a g_a(c) t(a, j))`` minus a slack that grows with the multipliers'
    spread over the classes, about ``sqrt(2 L max_j V_j(t))`` with ``V_j = sum_a p(a) (t~(a, j) - m_j)^2``
    (:func:`_deviation_slack`): concave in ``t``. The perfect-privacy LP's own multipliers maximise the first term
    alone; at ``L > 0`` trading a little of it for a smaller spread pays, like ``sqrt(L)``. Maximising the row
    minima minus ``sqrt(2 L) z`` with ``z >= sqrt(V_j(t))`` for every output is a second-order cone program (the LP
    dual plus one cone per output), solved by CLARABEL. Whatever its accuracy, the caller evaluates the returned
    multipliers by :func:`independence_lower_bound`, which is valid for any ``t``: |A| = 19, k = 24 (families2,
    odd_values on big_a), the bound 8.9e-7 below the LP's distortion at 1e-13 bits (the LP's own multipliers,
    shifted by a constant per class: 1.9e-6), 8.87e-5 at 1e-9 bits where the curve itself is 8.6e-5 below it;
    0.1 s.
    """
    L = float(leak_nats)
    na = prob.M.shape[0]
    if not L > 0.0 or na < 2:
        return None
    r, c, n = prob.edges()  # the allowed entries only: a sparse problem's edges, never densified
    m, kh = na - 1, prob.kh
    if n == 0 or n * m > (min(max_entries, SHARPEN_MAX_SPARSE_ENTRIES) if prob.sparse else max_entries):
        return None
    try:
        import cvxpy as cp
    except ImportError:  # pragma: no cover - cvxpy is a dependency of the reference path
        return None
    from ._cvx import solve_quietly

    G = prob.M[:m] - prob.pA[:m, None] * prob.pc[None, :]
    # the Lagrangian's entries: u_{r_e} + sum_a g_a(r_e) t(a, c_e) <= w_e, t in column-major order (a + m j)
    cols = (np.arange(m)[None, :] + m * c[:, None]).ravel()
    A = sp.csr_matrix((G[:, r].T.ravel(), (np.repeat(np.arange(n), m), cols)), shape=(n, m * kh))
    R = sp.csr_matrix((np.ones(n), (np.arange(n), r)), shape=(n, prob.k))
    p = np.asarray(prob.pA, dtype=float)
    # sqrt(p) (t~_j - p . t~_j) for t~ = (t, 0): the last class's column of (I - 1 p^T) meets the zero row
    C = (np.sqrt(p)[:, None] * (np.eye(na) - np.outer(np.ones(na), p)))[:, :m]
    T = cp.Variable((m, kh))
    u = cp.Variable(prob.k)
    z = cp.Variable()
    cons = [R @ u + A @ cp.vec(T, order="F") <= prob.edge_weights(), cp.norm(C @ T, 2, axis=0) <= z]
    problem = cp.Problem(cp.Maximize(cp.sum(u) - math.sqrt(2.0 * L) * z), cons)
    # bounded in time as the engine's LPs; a stopped solve (cvxpy's "user_limit") gives no multipliers here, and
    # the bound falls back to the unsharpened one (weaker, never wrong)
    limit = time_limit_for_nonzeros(A.nnz + R.nnz + m * na * kh)
    if not solve_quietly(problem, "CLARABEL", {"time_limit": limit}) or T.value is None:
        return None
    t = np.asarray(T.value, dtype=float)
    return t if np.all(np.isfinite(t)) else None


def _north_west(s, t):
    """Pairs of the north-west corner plan of supplies ``s`` against demands ``t``."""
    i = l = 0
    s, t = s.copy(), t.copy()
    ri, cl = [], []
    while i < s.size and l < t.size:
        ri.append(i)
        cl.append(l)
        if s[i] <= t[l]:
            t[l] -= s[i]
            i += 1
        else:
            s[i] -= t[l]
            l += 1
    return np.array(ri, dtype=np.int64), np.array(cl, dtype=np.int64)


def _two_class_transport(prob, max_rounds=200):
    """The perfect-privacy LP for ``|A| = 2`` by column generation on its paths; the mapping or None.

    With two classes independence is one equation per output, ``sum_c g_c P(c, j) = 0`` with
    ``g_c = p(a_0, c) - p(a_0) p(c)`` (which sum to 0 over c). In the masses ``z(c, j) =
    |g_c| P(c, j)`` every output balances the mass of the inputs with ``g > 0`` against that of
    the inputs with ``g < 0``; splitting each output's balance into paths, the perfectly private
    mappings are the flows ``f(i, l, j) >= 0`` on paths from an input ``i`` with ``g > 0`` through
    an output ``j`` to an input ``l`` with ``g < 0`` with supplies ``|g_c|`` (a transportation
    problem), at the price ``Cp(i, j) + Cn(l, j)``, ``Cp = W / |g|`` on either side; the
    inputs with ``g = 0`` take their cheapest output. The LP is solved on a working set of
    paths (a north-west-corner plan, so that it is feasible, and the cheapest path of every
    output and of every input); with the duals ``u, v`` of the supplies, a path prices out iff
    ``min_i (Cp(i, j) - u_i) + min_l (Cn(l, j) - v_l) < 0`` for its output ``j``
    (``O(k |C_hat|)``, no ``k^2 |C_hat|`` table), and the cheapest such paths of every output
    and of every input are added until none is left: the optimality condition of the full LP
    (up to HiGHS's dual tolerance). k = 1000: 16 LPs of at most 2 10^4 paths instead of one
    of 10^6 entries.
    ``(None, None)`` when a side is empty, HiGHS fails or the working set cannot carry the supplies
    (forbidden entries): the caller then solves the plain LP. Otherwise ``(P, t)``, ``t`` (``1 x
    |C_hat|``) the multipliers of the independence equations of the certificate below."""
    g = prob.M[0] - prob.pA[0] * prob.pc
    pos, neg = np.flatnonzero(g > 0), np.flatnonzero(g < 0)
    if pos.size == 0 or neg.size == 0:
        return None, None
    Wm = np.where(prob.mask, prob.W, np.inf)
    Cp, Cn = Wm[pos] / g[pos, None], Wm[neg] / -g[neg, None]
    npos, nneg, kh = pos.size, neg.size, prob.kh
    # supplies normalised to sum 1 on each side (the sides' sums agree up to rounding)
    b = np.concatenate([g[pos] / g[pos].sum(), g[neg] / g[neg].sum()])
    fin = np.concatenate([Cp[np.isfinite(Cp)], Cn[np.isfinite(Cn)]])
    tol = 1e-10 * float(np.abs(fin).max()) if fin.size else 0.0

    def key(i, l, j):
        return (i * nneg + l) * kh + j

    # a feasible start: the north-west-corner plan of the two sides ordered by cheapest output
    oi = np.argsort(Cp.argmin(axis=1), kind="stable")
    ol = np.argsort(Cn.argmin(axis=1), kind="stable")
    ri, cl = _north_west(b[:npos][oi], b[npos:][ol])
    ri, cl = oi[ri], ol[cl]
    jn = (Cp[ri] + Cn[cl]).argmin(axis=1)
    keys = [key(ri, cl, jn)]
    u, v = np.zeros(npos), np.zeros(nneg)
    tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    res = None
    for _ in range(max_rounds):
        # the cheapest path of every output, of every input i and of every input l under the
        # current duals (O(k |C_hat|)): reduced cost A(i, j) + B(l, j)
        A, B = Cp - u[:, None], Cn - v[:, None]
        ia, lb = A.argmin(axis=0), B.argmin(axis=0)
        Am, Bm = A[ia, np.arange(kh)], B[lb, np.arange(kh)]
        ji, jl = (A + Bm[None, :]).argmin(axis=1), (B + Am[None, :]).argmin(axis=1)
        ii = np.concatenate([ia, np.arange(npos), ia[jl]])
        jj = np.concatenate([np.arange(kh), ji, jl])
        ll = np.concatenate([lb, lb[ji], np.arange(nneg)])
        with np.errstate(invalid="ignore"):
            red = A[ii, jj] + B[ll, jj]
        new = np.isfinite(red) & ((red < -tol) | (res is None))  # first round: every cheapest path
        if not new.any():
            break
        cand = key(ii[new], ll[new], jj[new])
        if res is not None and np.all(np.isin(cand, keys[0])):
            break  # only paths already in the working set price out: HiGHS's tolerance
        keys.append(cand)
        allk = np.unique(np.concatenate(keys))
        keys = [allk]
        si, rem = np.divmod(allk, nneg * kh)
        sl, sj = np.divmod(rem, kh)
        ok = np.isfinite(Cp[si, sj] + Cn[sl, sj])
        si, sl, sj = si[ok], sl[ok], sj[ok]
        n = si.size
        Aeq = sp.csr_matrix((np.ones(2 * n), (np.concatenate([si, npos + sl]), np.tile(np.arange(n), 2))),
                            shape=(npos + nneg, n))
        res = highs_linprog(Cp[si, sj] + Cn[sl, sj], A_eq=Aeq, b_eq=b, bounds=(0, None), method="highs",
                            options=tight)
        if res.status != 0:
            return None, None
        y = res.eqlin.marginals
        u, v = y[:npos], y[npos:]
    else:
        return None, None
    if res is None:
        return None, None
    f = np.maximum(res.x, 0.0)
    P = np.zeros((prob.k, prob.kh))
    # P(c, j) = z(c, j) / |g_c|, z in units of each side's total
    np.add.at(P, (pos[si], sj), f * (g[pos].sum() / g[pos[si]]))
    np.add.at(P, (neg[sl], sj), f * (g[neg].sum() / g[neg[sl]]))
    zero = np.flatnonzero(g == 0)
    P[zero, Wm[zero].argmin(axis=1)] = 1.0
    if np.any(P.sum(axis=1) <= 0):
        return None, None
    P = prob.clean(P, None)
    # certificate, independent of HiGHS's tolerances: for any t, sum_c min_j (W(c, j) - g_c t_j)
    # bounds the LP from below (weak duality, the row sums' duals eliminated; independence_lower_bound
    # at leakage 0); t_j = min_i (Cp(i, j) - u_i) from the supply duals makes it tight at the optimum
    with np.errstate(invalid="ignore"):
        t = (Cp - u[:, None]).min(axis=0)
        t = np.where(np.isfinite(t), t, 0.0)
    lower = independence_lower_bound(prob, t[None, :], 0.0)
    dist = prob.distortion(P)
    if not dist - lower <= 1e-9 * dist + 1e-15:
        return None, None
    return P, t[None, :]


def _independence_lp(prob, r, c, n, sel, n_all, w, s, opts, method="highs"):
    """The perfect-privacy LP in the variables ``P(c, j) s(c)`` (``s = 1``: the mapping; ``s = p(c)``:
    the joint masses); ``(P, 0, t)`` or ``(None, HiGHS status, None)``, ``t`` (``(|A| - 1) x
    |C_hat|``) HiGHS's marginals of the independence equations (the same equations in either
    variables, so the same Lagrangian: ``W(c, j) - sum_a g_a(c) t(a, j)`` per entry)."""
    na = prob.M.shape[0]
    blocks = [_row_sum_matrix(prob, r, n)]
    b = [np.ones(prob.k) if np.all(s == 1) else prob.pc]
    # independence: p(j | a) = q(j), i.e. sum_c (p(c | a) - p(c)) P(c, j) = 0, for all j and every class
    # but the most likely one (implied by the others). Each class's equations are divided by p(a):
    # written as sum_c (p(a, c) - p(a) p(c)) P(c, j) = 0, a class of prior 1e-7 had coefficients below
    # HiGHS's tolerances, and the "perfectly private" mapping left its posterior 60% off (3.7e-11 bits);
    # dropping a rare class instead of the likeliest left it to cancellation in the others
    # Each class's equations are also divided by their largest coefficient: where A is nearly independent of C
    # (p(a, c) = p(a) p(c) (1 + 1e-7 e), |A| = 10, k = 40) the coefficients were ~1e-9, below HiGHS's drop
    # threshold and at its tolerances, and its "optimal" mapping cost 97.7 where 85.2 is perfectly private
    big = int(np.argmax(prob.pA))
    classes = [a for a in range(na) if a != big]
    row_unit = np.ones(len(classes))
    for i, a in enumerate(classes):
        coef = (prob.M[a, r] / prob.pA[a] - prob.pc[r]) / s
        m = float(np.abs(coef).max(initial=0.0))
        # not where the coefficients are the subtraction's rounding (an independent prior): scaled, its noise
        # became equations (a target of 1e-20 bits on an exactly independent prior was then "undecided")
        mag = float((np.maximum(prob.M[a, r] / prob.pA[a], prob.pc[r]) / s).max(initial=0.0))
        if ROW_SCALE_FLOOR * mag < m < ROW_SCALE_BELOW * mag and np.isfinite(m):
            # g(c) = p(c | a) - p(c) sums to 0 over the inputs (a constant mapping is independent of A), but its
            # rounding (1e-17) divided by m (2.5e-11 at p(a, c) = p(a) p(c) (1 + 1e-9 e)) is above HiGHS's
            # feasibility tolerance: every perfectly private mapping was "infeasible". The residual is taken out in
            # proportion to p(c) (inputs without mass keep 0) before the scaling
            g = prob.M[a] / prob.pA[a] - prob.pc
            g = g - math.fsum(g) * prob.pc
            coef = g[r] / s
            m = float(np.abs(coef).max(initial=0.0))
            row_unit[i] = m
            coef = coef / m
        blocks.append(sp.csr_matrix((coef, (c, np.arange(n))), shape=(prob.kh, n)))
        b.append(np.zeros(prob.kh))
    xs, status, y = _independence_lp_by_cost(w / s, sp.vstack(blocks, format="csr"), np.concatenate(b), r,
                                             prob.k, method, opts)
    if xs is None:
        return None, status, None
    x = np.zeros(n_all)
    x[sel] = xs / s
    t = None
    if y is not None:
        # multipliers of sum_c g_a(c) P(c, j) = 0 (g_a = p(a, c) - p(a) p(c)) for the classes solved, then
        # rewritten for the classes 0 .. |A| - 2 (sum_a g_a = 0): the form independence_lower_bound takes
        ts = y[prob.k:].reshape(na - 1, prob.kh)
        ts = ts / (row_unit * prob.pA[classes])[:, None]  # the multipliers of the equations before their scaling
        full = np.zeros((na, prob.kh))
        full[classes] = ts
        t = full[: na - 1] - full[na - 1][None, :]
    return prob.clean(prob.from_edges(x), None), 0, t


def _class_differences(prob, ref):
    """``(H, E, classes)``: for every class ``a`` but ``ref`` (with mass), ``H[i] = p(. | a) - p(. | ref)`` computed so
    that each entry is exact to a few ulps of the conditionals it is the difference of, and ``E[i]`` a bound on each
    entry's error.

    ``p(c | a) - p(c)`` (or ``p(a, c) - p(a) p(c)``) of a symbol near ``p(c | a) = 1`` cancels: its rounding, 1e-16,
    is the whole difference of a class whose other symbols have mass 1e-11. Here every entry but the one of each
    class's largest conditional is the difference of two conditionals (relative precision), and that one is minus
    their sum, exact since both conditionals sum to 1."""
    eps = np.finfo(float).eps
    cond = prob.M / prob.pA[:, None]
    classes = [a for a in range(prob.M.shape[0]) if a != ref and prob.pA[a] > 0]
    H = np.zeros((len(classes), prob.k))
    E = np.zeros((len(classes), prob.k))
    for i, a in enumerate(classes):
        h = cond[a] - cond[ref]
        # p(c | a) carries the rounding of p(a) (a sum of k terms) and of the division; the difference one more
        E[i] = 2.0 * (prob.k + 3) * eps * (cond[a] + cond[ref])
        big = int(np.argmax(cond[a] + cond[ref]))
        h[big] = 0.0
        h[big] = -math.fsum(h)
        E[i, big] = E[i].sum() - E[i, big] + 2.0 * eps * abs(h[big])
        H[i] = h
    return H, E, classes


#: the conditional perfect-privacy LP is also solved in the mapping's own units with its independence rows multiplied by
#: these gains (see conditional_perfect_privacy)
CONDITIONAL_ROW_GAINS = (1.0, 1e2, 1e4)
#: the conditional perfect-privacy LP's answer is refined at most this many times (a correction LP for its residual, in
#: units of the residual): HiGHS's feasibility tolerance is absolute (1e-10 at the tightest), and a rare symbol's row
#: sum, of the order of its coefficients, is below it
CONDITIONAL_REFINE_ROUNDS = 4


def conditional_perfect_privacy(prob, spread_tol):
    """The perfect-privacy LP in conditional form, for priors with rare public symbols; ``(P, lower)`` (internal units)
    or ``(None, -inf)``.

    Independence is written ``sum_c (p(c | a) - p(c | ref)) P(c, j) = 0`` for every class ``a`` but the likeliest
    ``ref`` and every output ``j``, each class's equations divided by their largest coefficient
    (:func:`_class_differences`: the differences without cancellation). In the joint masses, or in ``p(c | a) -
    p(c)``, a symbol of mass 1e-11 sits below HiGHS's absolute tolerances and its rows leak (1e-12 bits at "perfect
    privacy", its multipliers bounding 0.101 where 0.632 is optimal). Here each symbol's row is in units of its own
    largest coefficient ``s(c)`` (unknowns ``z(c, j) = s(c) P(c, j)``, row sums ``s(c)``), so that no coefficient is
    below HiGHS's drop threshold (1e-9; a symbol whose conditionals differ by 1e-12 was dropped and the LP declared
    infeasible); the row sums, below HiGHS's feasibility tolerance, are then met by iterative refinement: the LP of
    the correction, its right-hand side the residual scaled to 1 (``CONDITIONAL_REFINE_ROUNDS`` at most); then, until
    an answer is private to ``spread_tol``, in the mapping's own units with the independence rows multiplied by each
    of ``CONDITIONAL_ROW_GAINS``. Each answer is polished on its support (the equations on the entries it uses
    solved again by least squares from its point) and taken when that makes the conditionals ``p(j | a)`` closer;
    the closest is returned whatever their difference ``sum_j max_a - min_a`` (the caller checks its leakage), the
    refinement stopping once it is at most
    ``spread_tol``. ``lower`` bounds the distortion of every exactly private allowed mapping: weak duality of the
    equations with HiGHS's multipliers, evaluated in extended precision, less the multipliers times each
    coefficient's error bound and the evaluation's rounding.
    """
    if prob.sparse:
        return None, -math.inf
    r, c, n = prob.edges()
    if n == 0:
        return None, -math.inf
    ref = int(np.argmax(prob.pA))
    H, E, classes = _class_differences(prob, ref)
    unit = np.abs(H).max(axis=1, initial=0.0)
    keep = unit > 0
    H, E = H[keep] / unit[keep, None], E[keep] / unit[keep, None]
    m, kh = H.shape[0], prob.kh
    w = prob.edge_weights()

    def spread(P):
        cond = prob.joint(P) / prob.pA[:, None]
        return float((cond.max(axis=0) - cond.min(axis=0)).sum())

    sym = np.abs(H).max(axis=0, initial=0.0)
    # each symbol's unit: its largest coefficient (1 without any); then, where that leaves the conditionals apart
    # beyond spread_tol, every unit 1 (the unknowns P themselves: a support with a consistent exact point where the
    # units' made the refinement end 3.7e-12 apart), with the independence rows multiplied by CONDITIONAL_ROW_GAINS in
    # turn (a support HiGHS accepted at a residual of 1e-12 had no exact point: |A| = 2, a class of mass 1e-13, the
    # conditionals 1.2e-13 apart; with the rows 100 times larger its support was exact)
    best, lower = None, -math.inf
    variants = [(np.where(sym > 0, sym, 1.0), 1.0)] + [(np.ones(prob.k), g) for g in CONDITIONAL_ROW_GAINS]
    for units, gain in variants:
        P, low = _conditional_solve(prob, H, E, units, gain, r, c, n, w, spread, spread_tol)
        lower = max(lower, low)
        if P is not None and (best is None or spread(P) < spread(best)):
            best = P
        if best is not None and spread(best) <= spread_tol:
            break
    return best, lower


def _conditional_solve(prob, H, E, sym, gain, r, c, n, w, spread, spread_tol):
    """One solve of :func:`conditional_perfect_privacy`'s LP with the symbols' units ``sym`` and the independence rows
    multiplied by ``gain``: ``(P, lower)`` or ``(None, -inf)``."""
    m, kh = H.shape[0], prob.kh
    se = sym[r]
    rows = sp.csr_matrix((np.ones(n), (r, np.arange(n))), shape=(prob.k, n))
    indep = [sp.csr_matrix((gain * H[i, r] / se, (c, np.arange(n))), shape=(kh, n)) for i in range(m)]
    A = sp.vstack([rows] + indep, format="csr")
    b = np.concatenate([sym, np.zeros(m * kh)])
    cost = w / se
    scale = float(np.abs(cost).max(initial=0.0)) or 1.0
    tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    res = highs_linprog(cost / scale, A_eq=A, b_eq=b, bounds=(0, None), method="highs", options=tight)
    if res.status != 0:
        return None, -math.inf
    lower = -math.inf
    if res.eqlin is not None and res.eqlin.marginals is not None:
        # the multipliers of gain sum_c H(a, c) / s(c) z(c, j) = 0, i.e. of sum_c H(a, c) P(c, j) = 0 times gain
        s = np.asarray(res.eqlin.marginals, dtype=float)[prob.k:].reshape(m, kh) * (scale * gain)
        lower = _conditional_bound(prob, H, E, s, r, c, w)

    def mapping(z):
        return prob.clean(prob.from_edges(np.maximum(z, 0.0) / se), None)

    z = np.maximum(res.x, 0.0)
    for _ in range(CONDITIONAL_REFINE_ROUNDS):
        if spread(mapping(z)) <= spread_tol:
            break
        # the residual of each equation relative to its scale (a row sum: s(c); an independence row: gain)
        resid = b - A @ z
        big = float(np.abs(resid / np.concatenate([sym, np.full(m * kh, gain)])).max(initial=0.0))
        if not big > 0:
            break
        gain = 1.0 / big
        corr = highs_linprog(cost / scale, A_eq=A, b_eq=gain * resid, bounds=np.c_[-gain * z, np.full(n, np.inf)],
                             method="highs", options=tight)
        if corr.status != 0:
            break
        z = np.maximum(z + corr.x / gain, 0.0)
    P = mapping(z)
    # the exact point of the support: moved by the least-norm correction of its residual in P's units (row sums 1),
    # twice; the support's system may have more unknowns than independent equations, and the correction, of the
    # residual's order, keeps the point near the LP's
    S = np.flatnonzero(z / se > POLISH_SUPPORT_FLOOR)
    if S.size and spread(P) > 0.0 and (prob.k + m * kh) * S.size <= POLISH_MAX_CELLS:  # a dense system
        AS = sp.vstack([sp.csr_matrix((np.ones(n), (r, np.arange(n))), shape=(prob.k, n))]
                       + [sp.csr_matrix((H[i, r], (c, np.arange(n))), shape=(kh, n)) for i in range(m)],
                       format="csr")[:, S].toarray()
        bP = np.concatenate([np.ones(prob.k), np.zeros(m * kh)])
        xs = P[r[S], c[S]].copy()
        for _ in range(2):
            xs = xs + np.linalg.lstsq(AS, bP - AS @ xs, rcond=None)[0]
        if xs.min(initial=0.0) >= 0.0:
            x = np.zeros(n)
            x[S] = xs
            Q = prob.clean(prob.from_edges(x), None)
            if spread(Q) <= spread(P):
                P = Q
    return P, lower


def _conditional_bound(prob, H, E, s, r, c, w):
    """``sum_c min_j (W(c, j) - sum_a H(a, c) s(a, j))`` over the allowed entries, less ``sum_c max_j sum_a |s(a, j)|
    (E(a, c) + eps |H(a, c)|)`` (the coefficients' error: the exact equations' residual at any exactly private
    mapping, whose rows sum to 1) and the rounding of its evaluation: a lower bound on the distortion of every
    exactly private allowed mapping (internal units)."""
    LD = np.longdouble
    u = float(np.finfo(LD).eps)
    eps = np.finfo(float).eps
    m = H.shape[0]
    sc = s[:, c]
    lag = w.astype(LD) - np.einsum("ae,ae->e", H[:, r].astype(LD), sc.astype(LD))
    err = np.einsum("ae,ae->e", E[:, r] + eps * np.abs(H[:, r]), np.abs(sc))
    err = err + u * ((m + 2) * np.einsum("ae,ae->e", np.abs(H[:, r]), np.abs(sc)) + np.abs(w))
    mins = np.full(prob.k, np.inf, dtype=LD)
    np.minimum.at(mins, r, lag)
    worst = np.zeros(prob.k)
    np.maximum.at(worst, r, err)
    if not np.all(np.isfinite(mins)):
        return -math.inf
    total = mins.sum()
    low = float(total)
    if low > total:
        low = float(np.nextafter(low, -np.inf))
    return low - float(worst.sum()) * (1.0 + 1e-9) - prob.k * u * float(np.abs(mins).sum())


def perfect_privacy_unreachable(prob):
    """Whether no allowed mapping is exactly perfectly private, proven by a Farkas certificate of the perfect-privacy
    LP in conditional form (False when none is found, or for a sparse problem).

    The equations ``sum_c H(a, c) P(c, j) = 0`` (:func:`_class_differences`, each class's row in units of its largest
    coefficient) have no row-stochastic allowed solution when multipliers ``s`` make ``sum_c min_j -sum_a H(a, c) s(a,
    j)`` positive (the minima over the allowed entries): every such ``P`` has ``sum_{a, j} s(a, j) (H P)(a, j) < 0``.
    The multipliers are those of the LP maximising that sum for ``|s| <= 1``, in the symbols' own units and in units of
    their largest coefficients (a public symbol of mass 1e-13 has coefficients of that order); the sum is evaluated by
    :func:`_conditional_bound` (costs 0), less the coefficients' error bounds and its rounding, so a positive value is a
    proof. With rare masses the smallest leakage may be 1e-12 bits, below what any Lagrangian bound of the leakage
    resolves, and a target of 0 was "could not decide". A third LP in the symbols' own units keeps every row's minimum
    at least 0 (a rare symbol's row, weighted by its mass, was below HiGHS's tolerances), and each LP's multipliers are
    also tried with those of the outputs of the rows that prove nothing set to 0."""
    if prob.sparse:
        return False
    r, c, n = prob.edges()
    H, E, _ = _class_differences(prob, int(np.argmax(prob.pA)))
    unit = np.abs(H).max(axis=1, initial=0.0)
    keep = unit > 0
    H, E = H[keep] / unit[keep, None], E[keep] / unit[keep, None]
    m, kh, k = H.shape[0], prob.kh, prob.k
    if m == 0 or n == 0:
        return False
    sym = np.abs(H).max(axis=0, initial=0.0)
    # per allowed entry e: u_{r_e} + sum_a H(a, r_e) / units(r_e) s(a, c_e) <= 0; s in column-major order (a + m j)
    cols = (np.arange(m)[None, :] + m * c[:, None]).ravel()
    own = np.where(sym > 0, sym, 1.0)
    # a third time in the symbols' own units with every row's minimum u_c at least 0 and their plain sum maximised:
    # weighted by the units (1e-13 for a rare symbol), a rare symbol's row, the only one to prove anything, was below
    # HiGHS's tolerances (rare_instance(324): a symbol of mass 4.8e-14 whose one allowed output no other symbol
    # reaches, so that output's p(j | a) = p(c | a) differs over the classes; "could not decide"). With every u_c >= 0
    # any positive one is a proof whatever the weights (the sum evaluated below, as for the others)
    for units, floor in ((np.ones(k), None), (own, None), (own, 0.0)):
        A_s = sp.csr_matrix(((H[:, r] / units[r]).T.ravel(), (np.repeat(np.arange(n), m), cols)), shape=(n, m * kh))
        A = sp.hstack([A_s, _row_sum_matrix(prob, r, n).T], format="csr")
        weights = units / units.max() if floor is None else np.ones(k)
        cost = np.concatenate([np.zeros(m * kh), -weights])
        bounds = [(-1.0, 1.0)] * (m * kh) + [(floor, None)] * k
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            res = highs_linprog(cost, A_ub=A, b_ub=np.zeros(n), bounds=bounds, method="highs",
                                options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
        if res.status != 0 or not -res.fun > 0.0:
            continue
        s_ray = np.asarray(res.x[: m * kh], dtype=float).reshape(kh, m).T
        if _conditional_bound(prob, H, E, s_ray, r, c, np.zeros(n)) > 0.0:
            return True
        # the rows that prove nothing (u_c <= 0) held at 0 exactly: the multipliers of every output they reach set to
        # 0 (HiGHS meets their rows to its tolerance only, -3e-13 in all where the rare rows proved 2e-13), so their
        # minima are 0 and the rows left prove by themselves (their outputs reached by no other row)
        idle = np.asarray(res.x[m * kh:], dtype=float) <= 0.0
        s_own = s_ray.copy()
        s_own[:, np.unique(c[idle[r]])] = 0.0
        if s_own.any() and _conditional_bound(prob, H, E, s_own, r, c, np.zeros(n)) > 0.0:
            return True
    return False

#: the perfect-privacy LP is solved again, in units of its own optimum, when its answer is more than this share of its
#: distortion above the Lagrangian bound of its multipliers (see _independence_lp_by_cost)
PP_GAP_RTOL = 1e-9
#: ... on the entries costing at most this many optima (the others priced by the multipliers, added when they price in)
PP_COST_RANGE = 1e6
#: ... in at most this many rounds of rescaling, each of at most PP_PRICE_ROUNDS rounds of pricing
PP_SCALE_ROUNDS = 6
PP_PRICE_ROUNDS = 20


def _lagrangian_bound(cost, A, b, y, r, k):
    """The Lagrangian bound ``sum_c b_c min_e (cost_e - sum_i A(i, e) y_i)`` (the minimum over row ``c``'s entries
    ``e``, ``i`` over the independence equations: every row of ``A`` but the first ``k``, the row sums ``sum_e x_e =
    b_c``) of the LP ``min cost x, A x = b, x >= 0``: a lower bound on its optimum for any ``y``; and the reduced costs
    ``cost - A_indep^T y``."""
    red = cost - A[k:].T @ y[k:]
    m = np.full(k, np.inf)
    np.minimum.at(m, r, red)
    return float(np.dot(b[:k], m)), red


def _independence_lp_by_cost(cost, A, b, r, k, method, opts):
    """``(x, 0, y)`` of ``min cost x, A x = b, x >= 0`` (the perfect-privacy LP; ``y`` its multipliers, in the units
    of ``cost``), or ``(None, HiGHS status, None)``.

    HiGHS's dual feasibility tolerance is absolute (1e-7, or the one in ``opts``): internal costs are in units of the
    largest distortion, and where the distortion spans many decades (0, 1, 1e6, 1e12) the optimum (1e-14 internal)
    is far below it, so every entry of cost below ~1e-7 looked free and HiGHS's "optimal" vertex cost 80198 where
    0.012 is perfectly private. When the answer is not within PP_GAP_RTOL of the Lagrangian bound of its own
    multipliers, the LP is solved again in units of its answer's distortion ``f``, on the entries costing at most
    PP_COST_RANGE ``f`` (a bounded dynamic range; the range grown by that factor while the LP is infeasible), the
    others priced by the multipliers and added while any prices in (reduced cost below ``-tol``); then again in
    units of the new answer while that is much smaller. The best answer by the same bound is returned.
    """
    res = highs_linprog(cost, A_eq=A, b_eq=b, bounds=(0, None), method=method, options=opts)
    if res.status != 0:
        return None, res.status, None
    x = res.x
    if res.eqlin is None or res.eqlin.marginals is None:
        return x, 0, None
    y = np.asarray(res.eqlin.marginals, dtype=float)
    f = float(np.dot(cost, x))
    low, _ = _lagrangian_bound(cost, A, b, y, r, k)
    tol = float(opts.get("dual_feasibility_tolerance", 1e-7))
    n = cost.size
    for _ in range(PP_SCALE_ROUNDS):
        if not f - low > PP_GAP_RTOL * f or not f > 0:
            break
        unit = f
        c_u = cost / unit
        rng_ = PP_COST_RANGE
        while True:  # a feasible working set: the entries costing at most rng_ answers
            work = c_u <= rng_
            if work.all():
                break
            sub = highs_linprog(c_u[work], A_eq=A[:, work], b_eq=b, bounds=(0, None), method=method, options=opts)
            if sub.status != 2:
                break
            rng_ *= PP_COST_RANGE
        xn = yn = None
        for _ in range(PP_PRICE_ROUNDS):
            sub = highs_linprog(c_u[work], A_eq=A[:, work], b_eq=b, bounds=(0, None), method=method, options=opts)
            if sub.status != 0 or sub.eqlin is None or sub.eqlin.marginals is None:
                xn = None
                break
            xn = np.zeros(n)
            xn[work] = sub.x
            yn = np.asarray(sub.eqlin.marginals, dtype=float)
            _, red = _lagrangian_bound(c_u, A, b, yn, r, k)
            enter = ~work & (red < -tol)
            if not enter.any():
                break
            work = work | enter
        if xn is None:
            break
        yn = yn * unit
        fn = float(np.dot(cost, xn))
        lown, _ = _lagrangian_bound(cost, A, b, yn, r, k)
        if not fn - lown < f - low:  # no better certified
            break
        shrink = fn < 0.5 * f
        x, y, f, low = xn, yn, fn, lown
        if not shrink:
            break
    return x, 0, y


#: the maximal-leakage LP's budget row is written in units of the budget's slack above the smallest distortion; an
#: entry whose excess cost over its row's cheapest output is more than this many slacks is fixed at 0 (it could carry
#: at most 1/BUDGET_ROW_MAX_COEF of its row), so the row's coefficients stay within [0, BUDGET_ROW_MAX_COEF]
BUDGET_ROW_MAX_COEF = 1e9

#: an entry whose cost is within this share of its row's cheapest cost is one of the row's cheapest (Problem's ties)
BUDGET_TIE_RTOL = 1e-12


def _budget_excess(prob, delta):
    """``(e, s)``: each allowed entry's cost above its row's cheapest (``prob.edges()`` order, ties at 0) and the
    budget's slack ``delta - sum_c min_j w(c, j)`` (at least 0), internal units: every mapping of distortion
    ``<= delta`` has ``sum e x <= s`` (its rows sum to 1)."""
    r, _, _ = _entries(prob)
    w = prob.edge_weights()
    row_min = np.full(prob.k, np.inf)
    np.minimum.at(row_min, r, w)
    e = np.maximum(w - row_min[r], 0.0)
    e[e <= BUDGET_TIE_RTOL * np.abs(row_min[r])] = 0.0
    return e, max(float(delta) - float(row_min.sum()), 0.0)


#: target mode: the leakage rows are written in units of the target's slack ``2^target - F`` when it is at least this
#: (below, in units of 1: the rows' coefficients, up to 1 / slack, would near HiGHS's largest allowed, and at a target
#: of 0, the perfect-privacy LP, rows in units of 1e-12 made HiGHS call a perfectly private instance infeasible)
ML_SLACK_FLOOR = 1e-12


def _ml_reference_class(prob):
    """The class ``a0`` whose conditional ``p(. | a0)`` the target mode's leakage rows are written against (the
    outputs of a block where another class is likelier get that class: :func:`_ml_references`)."""
    return int(np.argmax(prob.pA))


def _ml_references(prob):
    """``(ref, excess)``: the reference class of each output in the target mode's slack form and ``F - 1``, ``F =
    sum_j p(j | ref_j)`` for every mapping.

    The slack form holds for any reference classes: ``u_j = max_a p(j | a) - p(j | ref_j) >= 0`` and ``sum_j u_j =
    sum_j max_a p(j | a) - F``, so a target is ``sum_j u_j <= 2^target - F``. With one block of allowed entries
    (:func:`allowed_blocks`) ``ref_j = a0`` (:func:`_ml_reference_class`) and ``F = 1``. With several, an output's
    block ``b`` is fixed by its inputs, ``F = sum_b p(b | ref_b)``, and the reference of a block is its likeliest
    class ``argmax_a p(b | a)`` (``a0`` where it is as likely, up to rounding): then ``F = sum_b max_a p(b | a)``, a
    lower bound on ``2^maximal leakage`` of every mapping (reached when each block has a mapping with ``p(j | ref_b)
    >= p(j | a)`` on its outputs; forbidden entries inside a block may raise the true minimum), and a target at ``F``
    leaves a slack of 0: the LP's feasible set is then the mappings of leakage ``F`` (every ``p(j | ref_b) >= p(j |
    a)``). ``excess = sum_b (p(b | ref_b) - p(b | a0))`` (``sum_b p(b | a0) = 1``), a sum of non-negative terms."""
    with _PP_LOCK:
        hit = _ML_REFS.get(prob)
    if hit is None:  # every consumer of the slack form asks (a dozen times a solve): once per problem
        hit = _ml_references_of(prob)
        with _PP_LOCK:
            _ML_REFS[prob] = hit
    return hit[0].copy(), hit[1]


#: the reference classes of the problems alive (:func:`_ml_references`)
_ML_REFS = weakref.WeakKeyDictionary()


def _ml_references_of(prob):
    a0 = _ml_reference_class(prob)
    labels, out, nb = allowed_blocks(prob)
    ref = np.full(prob.kh, a0)
    if nb < 2:
        return ref, 0.0
    cond = prob.M / prob.pA[:, None]
    pb = np.zeros((nb, cond.shape[0]))
    np.add.at(pb, labels, cond.T)  # p(b | a), (blocks, classes)
    diff = pb - pb[:, [a0]]
    best = np.argmax(diff, axis=1)
    # ties within the rounding of the sums (each p(b | a) a sum over the block's inputs): a0 kept
    tie = diff[np.arange(nb), best] <= 4.0 * prob.k * np.finfo(float).eps * pb.max(axis=1)
    best[tie] = a0
    reach = out >= 0
    ref[reach] = best[out[reach]]
    return ref, math.fsum(diff[np.arange(nb), best])


def _ml_target_slack(target_bits, prob=None):
    """``2^target - F`` (:func:`_ml_references`; ``F = 1`` without ``prob`` or with one block) to relative precision
    (``expm1``): the room above ``F`` of ``sum_j max_a p(j | a)``."""
    s = math.expm1(float(target_bits) * math.log(2.0))
    return s if prob is None else s - _ml_references(prob)[1]


def _ml_row_unit(target_bits, prob=None):
    """The unit the target mode's leakage rows are written in: the slack ``2^target - F`` (:func:`_ml_target_slack`),
    1 below ML_SLACK_FLOOR."""
    s = _ml_target_slack(target_bits, prob)
    return s if s >= ML_SLACK_FLOOR else 1.0


def _ml_floor_rounding(prob):
    """The rounding of ``F`` (:func:`_ml_references`), a sum over the inputs of each block: a slack ``2^target - F``
    above ``-`` this is a target at the smallest maximal leakage."""
    return 4.0 * (prob.k + prob.kh) * np.finfo(float).eps * (1.0 + _ml_references(prob)[1])


def _ml_class_pairs(prob):
    """``(p_row, p_ref, a0)``: ``p(c | a')`` per row and allowed entry (input ``c``, output ``j``, ``prob.edges()``
    order) and ``p(c | ref_j)`` per entry (:func:`_ml_references`), ``a'`` the class of the row except where ``ref_j
    != a0``: there the classes ``a0`` and ``ref_j`` trade rows (the row of ``ref_j`` holds ``a0``, the row of ``a0``
    holds ``ref_j``), so that the row of ``a0`` pairs the reference with itself and every consumer skips it alone."""
    r, c, _ = _entries(prob)
    a0 = _ml_reference_class(prob)
    cond = prob.M / prob.pA[:, None]
    ref_e = _ml_references(prob)[0][c]
    cls = np.repeat(np.arange(cond.shape[0])[:, None], r.size, axis=1)
    swap = np.flatnonzero(ref_e != a0)
    cls[ref_e[swap], swap] = a0
    cls[a0, swap] = ref_e[swap]
    return cond[cls, r[None, :]], cond[ref_e, r], a0


def _ml_class_differences(prob):
    """``(Delta, a0)``: ``Delta[a, e] = p(c | a') - p(c | ref_j)`` on each allowed entry ``e`` (:func:`_ml_class_pairs`:
    ``a' = a`` but for the trade of the rows of ``a0`` and ``ref_j``), and the reference class ``a0``, whose row is
    0."""
    p_row, p_ref, a0 = _ml_class_pairs(prob)
    return p_row - p_ref[None, :], a0


def _ml_class_magnitudes(prob):
    """``|p(c | a')| + |p(c | ref_j)|`` per row and entry of :func:`_ml_class_differences`: the magnitudes of their
    rounding."""
    p_row, p_ref, _ = _ml_class_pairs(prob)
    return np.abs(p_row) + np.abs(p_ref)[None, :]


def _maximal_leakage_lp(prob, delta, target_bits, unit=1.0):
    """``(cost, A_ub, b_ub, A_eq, b_eq, budget_unit, ub)`` of the maximal-leakage LP.

    Delta mode: over ``[x (the allowed entries, prob.edges()), v (one per output)]`` in the slack form ``z_j = p(j |
    ref_j) + unit v_j`` (:func:`_ml_references`; the objective ``sum_j v_j`` is ``(sum_j max_a p(j | a) - F) /
    unit``), rows ``(p(j | a) - p(j | ref_j)) / unit - v_j <= 0`` per class but ``a0`` (:func:`_ml_class_differences`)
    then the budget row; ``budget_unit`` is the slack the budget row (the last of ``A_ub``) is divided by (None
    without one). Target mode: over ``[x, v]`` in the slack form
    ``z_j = p(j | ref_j) + sigma v_j`` (:func:`_ml_references`), rows ``(p(j | a) - p(j | ref_j)) / sigma - v_j <=
    0`` per class (:func:`_ml_class_differences`) then ``sum_j v_j <= s / sigma``, ``s = 2^target - F``, ``sigma = s``
    (1 below ML_SLACK_FLOOR; ``budget_unit``). ``ub``: the variables' upper bounds (inf where free)."""
    r, c, n = _entries(prob)
    na = prob.M.shape[0]
    kh = prob.kh
    A_eq = sp.hstack([_row_sum_matrix(prob, r, n), sp.csr_matrix((prob.k, kh))], format="csr")
    b_eq = np.ones(prob.k)
    ub = np.full(n + kh, np.inf)
    if target_bits is not None:
        return _maximal_leakage_target_lp(prob, target_bits, A_eq, b_eq, ub)
    # (p(j | a) - p(j | ref_j)) / unit - v_j <= 0. Written as p(j | a) - z_j <= 0 (the epigraph form), the part that
    # matters, sum_j z_j - F (2.2e-8 at a budget 1e-6 of the range below the perfect-privacy distortion), sat at
    # HiGHS's absolute tolerances: its answer leaked 15 times the optimum and its marginals bounded nothing above F.
    # In units of that part (solve_maximal_leakage_lp solves again in units of its first answer) they apply to it
    delta_c, a0 = _ml_class_differences(prob)
    rows_ub = []
    for a in range(na):
        if a == a0:
            continue
        block = sp.hstack([sp.csr_matrix((delta_c[a] / unit, (c, np.arange(n))), shape=(kh, n)), -sp.identity(kh)])
        rows_ub.append(block)
    if not rows_ub:  # one class: no leakage rows (a row 0 <= 0 keeps the shapes)
        rows_ub.append(sp.csr_matrix((1, n + kh)))
    b_ub = [np.zeros(sum(b.shape[0] for b in rows_ub))]
    budget_unit = None
    cost = np.concatenate([np.zeros(n), np.ones(kh)])
    if delta is not None and np.isfinite(delta) and delta < prob.delta_max:
        # the budget row as the distortion above each input's cheapest output, in units of the budget's slack
        # above the smallest distortion: sum_c (e / s) x <= 1. Written as the distortion in units of the budget
        # (internal units: the largest distortion 1), a distortion spanning 1e-8 .. 1e8 at the smallest budget
        # had coefficients 6e-8 .. 1e9 against a right-hand side of 3e-5, and HiGHS's unscaled answer broke
        # the row ("model_status is Unknown", every method). An entry costing more than BUDGET_ROW_MAX_COEF
        # slacks is fixed at 0 (no bound s / e on the others: its multiplier would be missing from the
        # certificate's, which are the rows'); at the smallest budget (s = 0) only the rows' cheapest entries
        # remain and the row goes
        e, s = _budget_excess(prob, delta)
        big = e > BUDGET_ROW_MAX_COEF * s
        ub[:n][big] = 0.0
        some = (e > 0) & ~big
        if some.any():
            rows_ub.append(sp.csr_matrix(np.concatenate([np.where(some, e / s, 0.0), np.zeros(kh)])[None, :]))
            b_ub.append(np.array([1.0]))
            budget_unit = s
    return cost, sp.vstack(rows_ub, format="csr"), np.concatenate(b_ub), A_eq, b_eq, budget_unit, ub


def _maximal_leakage_target_lp(prob, target_bits, A_eq, b_eq, ub):
    """The target mode of :func:`_maximal_leakage_lp`: the slack form, in units of the target's slack.

    Written as ``sum_j z_j <= 2^target`` with ``z_j >= p(j | a)``, the budget row's right-hand side would differ from
    ``sum_j p(j | ref_j) = F`` (met by every mapping, :func:`_ml_references`) by ``s = 2^target - F``: 6.9e-8 at
    1e-7 bits with one block, below HiGHS's absolute feasibility tolerance (1e-7), so the LP could not see the
    target. With ``z_j = p(j | ref_j) + u_j`` the budget is ``sum_j u_j <= s`` (``s`` to relative precision) and
    ``u_j >= p(j | a) - p(j | ref_j)`` per class (:func:`_ml_class_differences`; the row of ``ref_j`` is ``u_j >=
    0``); in units of ``sigma`` (``s``; 1 below ML_SLACK_FLOOR) HiGHS's tolerances apply relative to the slack.
    """
    r, c, n = _entries(prob)
    kh = prob.kh
    s = _ml_target_slack(target_bits, prob)
    sigma = _ml_row_unit(target_bits, prob)
    delta_c, a0 = _ml_class_differences(prob)
    rows_ub = []
    for a in range(prob.M.shape[0]):
        if a == a0:
            continue
        block = sp.hstack([sp.csr_matrix((delta_c[a] / sigma, (c, np.arange(n))), shape=(kh, n)), -sp.identity(kh)])
        rows_ub.append(block)
    rows_ub.append(sp.csr_matrix(np.concatenate([np.zeros(n), np.ones(kh)])[None, :]))
    b_ub = np.zeros((prob.M.shape[0] - 1) * kh + 1)
    # a slack below 0 by more than the rounding of F (blocks of allowed entries: a target under the smallest maximal
    # leakage) is kept, and the LP is infeasible
    b_ub[-1] = (max(s, 0.0) if s >= -_ml_floor_rounding(prob) else s) / sigma
    # the distortion above each input's cheapest output (the objective minus delta_min, a constant): HiGHS's
    # absolute tolerances then apply to the answer's distance to the smallest distortion, which the
    # certificate measures, not to a distortion that may be mostly delta_min
    w = prob.edge_weights()
    row_min = np.full(prob.k, np.inf)
    np.minimum.at(row_min, r, w)
    cost = np.concatenate([np.maximum(w - row_min[r], 0.0), np.zeros(kh)])
    return cost, sp.vstack(rows_ub, format="csr"), b_ub, A_eq, b_eq, sigma, ub


def maximal_leakage_lower_bound(prob, lam, mu, delta):
    """Rigorous lower bound on ``sum_j max_a p(j | a)`` over the mappings of distortion ``<= delta``.

    In the slack form of the LP (:func:`_maximal_leakage_lp`): every mapping has ``sum_j max_a p(j | a) = F + sum_j
    u_j``, ``u_j = max_a (p(j | a) - p(j | ref_j)) >= 0`` (:func:`_ml_references`). For multipliers ``lam(a, j) >=
    0`` of the rows of :func:`_ml_class_differences` with ``sum_a lam(a, j) <= 1`` (rescaled to it; the row of
    ``a0`` ignored) and ``mu >= 0``, ``u_j >= sum_a lam(a, j) (p(j | a') - p(j | ref_j))`` and ``mu (distortion -
    delta) <= 0``, so every feasible mapping has ``sum_j u_j >= sum_c min_j [sum_a lam(a, j) (p(c | a') - p(c |
    ref_j)) + mu w(c, j)] - mu delta`` (weak duality, any multipliers: no trust in the LP's dual feasibility is
    needed). The bound is that on ``sum_j u_j``, plus ``F``: computed on ``sum_j p(j | a)`` itself, it was the
    difference of sums near 1 and multipliers whose error (HiGHS's absolute tolerances) exceeded a ``sum_j u_j`` of
    2.2e-8. Evaluated in the form of the LP's budget row, ``w`` and ``delta`` less the rows' cheapest costs (the same
    value), and also at the multiplier that leaves only the rows' cheapest entries in the minima; the larger of
    the two.

    Parameters
    ----------
    prob : Problem or SparseProblem
        The (reduced) program.
    lam : ndarray of shape (n_private, n_outputs)
        Multipliers of the rows ``p(j | a') - p(j | ref_j) <= u_j`` (:func:`_ml_class_differences`; the row of the
        reference class ``a0`` ignored).
    mu : float
        Multiplier of the distortion budget (ignored when ``delta`` is not finite).
    delta : float or None
        The internal distortion budget.

    Returns
    -------
    float
        The bound (the LP's optimal value when the multipliers are its optimal duals).
    """
    r, c, n = _entries(prob)
    delta_c, a0 = _ml_class_differences(prob)
    floor = 1.0 + _ml_references(prob)[1]
    lam = np.clip(np.nan_to_num(np.asarray(lam, dtype=float), nan=0.0, posinf=0.0), 0.0, None)
    lam[a0] = 0.0
    lam = lam / np.maximum(lam.sum(axis=0), 1.0)
    g = (delta_c * lam[:, c]).sum(axis=0)
    budgeted = delta is not None and np.isfinite(delta) and delta < prob.delta_max
    mu = float(mu) if budgeted and np.isfinite(mu) and mu > 0 else 0.0
    if budgeted:
        # in the excess form of the LP's budget row (_budget_excess): sum_c min_j [.. + mu e(c, j)] - mu s, the same
        # bound without the cancellation of mu w against mu delta (the smallest budget: s = 0, mu up to 1 / s); at
        # s = 0 a feasible mapping uses only its rows' cheapest entries, the minimum is over those
        e, slack = _budget_excess(prob, delta)
        if slack <= 0.0:
            g = np.where(e > 0, np.inf, g)
        elif (e > 0).any():
            # also at the multiplier that prices every entry above its row's cheapest out of the minima (the LP's
            # row may be gone: all its entries above BUDGET_ROW_MAX_COEF slacks, fixed at 0): the bound of the
            # rows' cheapest entries less at most max(g) / BUDGET_ROW_MAX_COEF
            mu_cut = float(g.max(initial=0.0)) / float(e[e > 0].min())

            def ev(m):  # the bound at the multiplier m, and its slope in m (the minimisers' excess less the slack)
                v = g + m * e
                row_min = np.full(prob.k, np.inf)
                np.minimum.at(row_min, r, v)
                at_min = np.flatnonzero(v <= row_min[r])
                first = np.full(prob.k, -1)
                first[r[at_min[::-1]]] = at_min[::-1]
                return float(row_min.sum() - m * slack), float(e[first[first >= 0]].sum() - slack)

            # an infinite mu_cut (an excess of subnormal size: g / e overflowed) bounds by -inf at a positive slack
            # and its inf * 0 made the minima NaN: left out
            best = max(ev(m)[0] for m in {mu, mu_cut, 0.0} if math.isfinite(m))
            # and the best multiplier for these lam (concave, piecewise linear in it): within a slack of 1e-24 of the
            # smallest budget, with entries 16 decades apart, neither the LP's multiplier (none: the LP at the
            # smallest budget has no budget row) nor mu_cut (every entry above its row's cheapest priced out, at
            # mu_cut times the slack) came within 1e-7 bits of the LP's optimum, the best one did (1e-16)
            return floor + max(best, maximize_multiplier(ev, slack, mu0=mu if mu > 0 else mu_cut)[0], 0.0)
    row_min = np.full(prob.k, np.inf)
    np.minimum.at(row_min, r, g)
    return floor + max(float(row_min.sum()), 0.0)


def maximal_leakage_distortion_bound(prob, lam, nu, target_bits, unit=1.0):
    """Rigorous lower bound on the distortion of every mapping with maximal leakage ``<= target_bits``.

    The target mode's counterpart of :func:`maximal_leakage_lower_bound` (weak duality, any multipliers), in the
    slack form of the target mode's LP (:func:`_maximal_leakage_target_lp`): every mapping within the target has
    ``u_j = max_a p(j | a) - p(j | ref_j) >= 0`` with ``sum_j u_j <= s = 2^target - F`` (:func:`_ml_references`),
    so for ``lam(a, j) >= 0`` on the rows ``p(j | a) - p(j | ref_j) <= u_j`` (:func:`_ml_class_differences`) and
    ``nu >= max_j sum_a lam(a, j)`` on ``sum_j u_j <= s`` its distortion is ``>= sum_c min_j [w(c, j) + sum_a lam(a,
    j) (p(c | a) - p(c | ref_j))] - nu s``, less the rounding of that sum (a few ulps of the magnitudes summed: the
    multipliers per unit of a slack of 1e-9 are 1e9 times the distortion's scale). Written with ``2^target`` itself
    (``nu 2^target`` against sums that carry ``nu`` once per mapping), the bound would lose what the slack is to the
    cancellation. HiGHS's dual objective is no such bound: its marginals meet the dual constraints to an absolute
    1e-7 only, while the edge weights (the internal distortion, divided by its largest entry, times ``p(c)``) of a
    distortion with one far symbol are ~1e-7 themselves, so a mapping 10% above the optimum would show a distortion
    gap of 4e-9.

    Parameters
    ----------
    prob : Problem or SparseProblem
        The (reduced) program.
    lam : ndarray of shape (n_private, n_outputs)
        Multipliers of the rows of :func:`_ml_class_differences` divided by ``unit`` (the row of ``a0`` ignored).
    nu : float
        Multiplier of the row ``sum_j u_j / unit <= s / unit`` (raised to ``max_j sum_a lam(a, j)`` when below it).
    target_bits : float
        The maximal-leakage target.
    unit : float, default=1.0
        The unit of the slack the LP's rows were written in (its ``budget_unit``).

    Returns
    -------
    float
        The bound in internal distortion units (at least ``prob.delta_min``).
    """
    r, c, n = _entries(prob)
    delta_c, a0 = _ml_class_differences(prob)
    lam = np.clip(np.nan_to_num(np.asarray(lam, dtype=float), nan=0.0, posinf=0.0), 0.0, None) / float(unit)
    lam[a0] = 0.0
    nu = max(float(nu) / float(unit) if np.isfinite(nu) else 0.0, float(lam.sum(axis=0).max(initial=0.0)), 0.0)
    w = prob.edge_weights()
    g = w + (delta_c * lam[:, c]).sum(axis=0)
    # rounding: each entry's sum over the classes (and each difference p(c | a) - p(c | a0)), a few ulps of its
    # magnitudes, taken off that entry before the row's minimum (the true minimum is at least the least entry less
    # its own rounding: an entry far above its row's cheapest carries a large rounding but is not the minimum;
    # charging each row its largest entry's rounding cost 3% of a bound of 6e-14 whose rows held entries of 1e-2),
    # then the sum of the row minima, a few ulps of their magnitudes
    mag_e = np.abs(w) + (lam[:, c] * _ml_class_magnitudes(prob)).sum(axis=0)
    depth = prob.M.shape[0] + math.log2(max(prob.k, 2)) + 4.0
    ulps = 2.0 * depth * np.finfo(float).eps
    row_min = np.full(prob.k, np.inf)
    np.minimum.at(row_min, r, g - ulps * mag_e)
    # blocks of allowed entries: the slack above F, widened by F's own rounding (_ml_references)
    s = max(_ml_target_slack(target_bits, prob) + (_ml_floor_rounding(prob) if _ml_references(prob)[1] else 0.0), 0.0)
    bound = float(row_min.sum() - nu * s)
    if not np.isfinite(bound):
        return float(prob.delta_min)
    bound -= ulps * (float(np.abs(row_min).sum()) + nu * s)
    return max(bound, float(prob.delta_min))


#: target mode: an LP whose optimum is below this share of its largest cost is solved again in units of that optimum
TARGET_COST_RESCALE = 1e-3

#: target mode: at most this many such solves in units of the previous answer
TARGET_RESCALE_ROUNDS = 4

#: delta mode: HiGHS's options for the solves in units of the answer (its smallest tolerances)
ML_TIGHT_TOLERANCE = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}

#: delta mode: an answer leaking less above F (:func:`_ml_references`; 1.4e-9 bits) is not solved again in its units:
#: its leakage is within the certificate's tolerance (ML_GAP_BITS) already, and in units of 1.6e-12 (rows' coefficients
#: up to 1e12) HiGHS at its smallest tolerances did not return
ML_DELTA_RESCALE_FLOOR = 1e-9

#: delta mode: at most this many solves in units of the previous answer's leakage above F (:func:`_ml_references`)
ML_DELTA_RESCALE_ROUNDS = 4

#: delta mode: a bound from the first solve's multipliers this many bits or more below the LP's objective is derived
#: again from the same LP solved at ML_TIGHT_TOLERANCE (its marginals met the dual constraints to 1e-7 only)
ML_BOUND_RESOLVE_BITS = 1e-8

#: the exact polish of a maximal-leakage vertex (a dense least-squares solve) is skipped above this many cells
POLISH_MAX_CELLS = 4_000_000


def _ml_excess(prob, x, total=True):
    """``u_j = max(0, max_a (p(j | a') - p(j | ref_j)))`` of the mapping ``x`` (on ``prob.edges()``; the rows of
    :func:`_ml_class_differences`), or their sum: ``sum_j max_a p(j | a) - F`` (:func:`_ml_references`) without the
    cancellation against ``F``."""
    _, c, _ = _entries(prob)
    delta_c, _ = _ml_class_differences(prob)
    u = np.zeros((delta_c.shape[0], prob.kh))
    for a in range(delta_c.shape[0]):
        np.add.at(u[a], c, delta_c[a] * np.asarray(x, dtype=float))
    u = np.maximum(u.max(axis=0), 0.0)
    return float(u.sum()) if total else u


def _ml_excess_in_budget(prob, x, delta):
    """An upper bound on :func:`_ml_excess` of ``x`` brought within the budget ``delta`` (internal units) by mixing
    it with the cheapest mapping (each row on its first cheapest entry), maximal leakage being convex in the
    mapping; that of ``x`` itself without a finite budget or where ``x`` meets it."""
    u = _ml_excess(prob, x)
    if delta is None or not np.isfinite(delta) or delta >= prob.delta_max:
        return u
    r, _, n = _entries(prob)
    e, slack = _budget_excess(prob, delta)
    used = float(np.dot(e, np.clip(x, 0.0, None)))
    if used <= slack:
        return u
    cheap = np.zeros(n)
    first = np.full(prob.k, -1)
    zero = np.flatnonzero(e == 0.0)
    first[r[zero[::-1]]] = zero[::-1]
    cheap[first[first >= 0]] = 1.0
    t = (used - slack) / used
    return (1.0 - t) * u + t * _ml_excess(prob, cheap)


def polish_maximal_leakage(prob, P, delta, unit=1.0):
    """The LP vertex near ``P`` (delta mode) solved exactly from its active constraints, or None.

    HiGHS's answer meets the constraints to its feasibility tolerance (1e-7): a mapping whose maximal
    leakage is 0 came back at 1e-10 bits. The entries of ``P`` above POLISH_SUPPORT_FLOOR and the rows of the LP in
    the slack form, in units of ``unit`` (:func:`_maximal_leakage_lp`), it meets within POLISH_DELTA_ACTIVE_RTOL of
    their magnitude define the vertex (an absolute 1e-9 on the rows ``p(j | a) <= z_j`` was 0.05 of a leakage above
    ``F`` of 2.2e-8, and the vertex it found was not the LP's); solving them (least squares) in double precision
    gives the vertex to rounding, kept only if it meets every constraint within 1e-13 (in those units) and no entry
    is negative.

    Parameters
    ----------
    prob : Problem or SparseProblem
        The (reduced) program.
    P : ndarray
        The LP's (reduced) mapping, or its values on the allowed entries for a sparse program.
    delta : float or None
        The internal distortion budget.
    unit : float, default=1.0
        The unit of the LP's leakage rows (``info['lp_unit']`` of :func:`solve_maximal_leakage_lp`).

    Returns
    -------
    ndarray or None
        The polished mapping (same form as ``P``), or None when the active system does not give a feasible one.
    """
    r, c, n = _entries(prob)
    _, A_ub, b_ub, A_eq, b_eq, _, _ = _maximal_leakage_lp(prob, delta, None, unit)
    x = np.asarray(P, dtype=float)[r, c] if not getattr(prob, "sparse", False) else np.asarray(P, dtype=float)
    v = np.concatenate([x, _ml_excess(prob, x, total=False) / unit])
    mag = abs(A_ub) @ np.abs(v) + np.abs(b_ub)
    act = b_ub - A_ub @ v <= POLISH_DELTA_ACTIVE_RTOL * mag
    S = v > POLISH_SUPPORT_FLOOR
    A = sp.vstack([A_ub[act], A_eq], format="csc")[:, S]
    if A.shape[0] * A.shape[1] > POLISH_MAX_CELLS or not S.any():
        return None
    b = np.concatenate([b_ub[act], b_eq])
    vs = _refined_lstsq(A.toarray(), b)
    w = np.zeros_like(v)
    w[S] = vs
    if (not np.all(np.isfinite(vs)) or vs.min() < -1e-13 or np.any(A_ub @ w > b_ub + 1e-13)
            or np.abs(A_eq @ w - b_eq).max() > 1e-13):
        return None
    return prob.from_edges(np.clip(w[:n], 0.0, None))


#: delta-mode polish: a row whose slack is at most this share of its magnitude (``|A| |v| + |b|``, in the LP's units)
#: is active
POLISH_DELTA_ACTIVE_RTOL = 1e-9


#: target-mode polish: a variable above this is in the vertex's support; a row whose slack is at most
#: POLISH_ACTIVE_RTOL of its magnitude (``|A| |v| + |b|``: the rows' coefficients are up to 1 / slack, 1e8 and more,
#: so their rounding alone is ~1e-8 in the rows' units) is active
POLISH_SUPPORT_FLOOR = 1e-12
POLISH_ACTIVE_RTOL = 1e-12
#: target-mode polish: at most this many solves, each dropping the support's entries that came out negative
POLISH_ROUNDS = 4


def _refined_lstsq(A, b):
    """Least-squares solution of ``A y = b`` (dense) with one step of iterative refinement."""
    y = np.linalg.lstsq(A, b, rcond=None)[0]
    return y + np.linalg.lstsq(A, b - A @ y, rcond=None)[0]


def _ml_target_vertex(prob, A_ub, b_ub, A_eq, b_eq, act, S, target_bits):
    """``(x, A, S)``: the target mode's LP vertex with the rows ``act`` of ``A_ub`` active (and the rows' sums) on the
    support ``S`` (variables ``[x, v]``), its system ``A`` and final support ``S``; or None when it is not feasible.

    Least squares with iterative refinement in double precision; entries below ``-POLISH_SUPPORT_FLOOR`` leave the
    support and the system is solved again (at most POLISH_ROUNDS times), the others are clipped at 0. Kept only if
    exactly feasible after the clip: rows renormalised to sum to 1, and ``sum_j max_a p(j | a) - F <= 2^target - F``
    (:func:`_ml_references`; ``target_bits``: the LP's vertex is on its own boundary, a hair inside the target, so
    checked against the target) computed as the sum of ``max(0, max_a sum_c (p(c | a) - p(c | ref_j)) x(c, j))``
    against :func:`_ml_target_slack` (relative precision; written with ``2^target``, the slack of 1e-9 would be lost
    to the rounding of 1), or against the rounding of ``F`` when that slack is 0 up to it."""
    r, c, n = _entries(prob)
    na, kh = prob.M.shape[0], prob.kh
    A_all = sp.vstack([A_ub[act], A_eq], format="csc")
    b = np.concatenate([b_ub[act], b_eq])
    S = np.array(S, dtype=bool)
    w = None
    for _ in range(POLISH_ROUNDS):
        if not S.any() or A_all.shape[0] * int(S.sum()) > POLISH_MAX_CELLS:
            return None
        A = A_all[:, S].toarray()
        ws = _refined_lstsq(A, b)
        if not np.all(np.isfinite(ws)):
            return None
        if ws.min() >= -POLISH_SUPPORT_FLOOR:
            w = np.zeros(n + kh)
            w[S] = np.maximum(ws, 0.0)
            break
        S[np.flatnonzero(S)[ws < -POLISH_SUPPORT_FLOOR]] = False
    if w is None:
        return None
    x = w[:n]
    rows = np.zeros(prob.k)
    np.add.at(rows, r, x)
    if np.any(rows <= 0.0):
        return None
    x = x / rows[r]
    delta_c, _ = _ml_class_differences(prob)
    u = np.zeros((na, kh))
    for a in range(na):
        np.add.at(u[a], c, delta_c[a] * x)
    slack, fr = _ml_target_slack(target_bits, prob), _ml_floor_rounding(prob)
    room = max(slack, 0.0)
    if _ml_references(prob)[1] > 0.0 and abs(slack) <= fr:
        # a target at the smallest maximal leakage of blocks of allowed entries: a slack of 0, which the rounding of
        # the differences summed (each p(c | a) - p(c | ref_j) rounded) exceeds at every vertex; the caller checks the
        # mapping's sum against the target up to its rounding
        room = fr
    if float(np.maximum(u.max(axis=0), 0.0).sum()) > room:
        return None
    return x, A, S


def polish_maximal_leakage_target(prob, v, y_ub, y_eq, lp_bits, target_bits):
    """The target mode's LP vertex near HiGHS's answer ``v``, and multipliers from its active constraints, or None.

    HiGHS's interior point (after its own cost scaling) answers within its 1e-7 feasibility tolerance of the scaled
    model: on costs spanning 16 decades at a target of 2.8e-9 bits an entry of the mapping came back at -4.6e-8 and
    the clipped answer's leakage slack ``sum_j max_a p(j | a) - 1`` was 2.4 times the target's. The vertex is the
    solution of the constraints active at ``v`` (rows within POLISH_ACTIVE_RTOL of their magnitude, the rows sum to
    1) on its support (variables above POLISH_SUPPORT_FLOOR), solved by least squares with iterative refinement in
    double precision (:func:`_ml_target_vertex`; entries that come out negative leave the support). The
    multipliers solve ``A_S^T y = c_S`` on the same system (zero reduced costs on the support), signs clipped:
    :func:`maximal_leakage_distortion_bound` turns any multipliers into a bound, so they need no exactness. The
    mapping is returned only if it is exactly feasible (entries ``>= 0``, rows summing to 1 after the clip) with
    ``sum_j max_a p(j | a) - F <= 2^target - F`` computed as the sum of ``max_a (p(j | a) - p(j | ref_j))``, against
    the slack to relative precision (:func:`_ml_target_vertex`).

    Parameters
    ----------
    prob : Problem or SparseProblem
        The (reduced) program.
    v : ndarray
        HiGHS's answer on the LP's variables ``[x (prob.edges()), v (one per output)]``.
    y_ub, y_eq : ndarray
        HiGHS's marginals of the inequality rows (``<= 0``) and of the rows' sums, for the costs in internal units.
    lp_bits : float
        The target the LP was solved at (a hair inside ``target_bits``: its vertex is on that boundary).
    target_bits : float
        The target the vertex must meet.

    Returns
    -------
    tuple or None
        ``(x, lam, nu)``: the polished mapping on ``prob.edges()`` and the multipliers in the form of
        :func:`solve_maximal_leakage_lp`'s (``lam`` of shape ``(n_private, n_outputs)``, ``nu``; rows in the LP's
        unit, costs in internal units), or None when the active system gives no feasible vertex.
    """
    r, c, n = _entries(prob)
    na, kh = prob.M.shape[0], prob.kh
    cost, A_ub, b_ub, A_eq, b_eq, _, ub = _maximal_leakage_lp(prob, None, lp_bits)
    v = np.asarray(v, dtype=float)
    if v.shape != (n + kh,) or not np.all(np.isfinite(v)):
        return None
    mag = abs(A_ub) @ np.abs(v) + np.abs(b_ub)
    act = b_ub - A_ub @ v <= POLISH_ACTIVE_RTOL * mag
    out = _ml_target_vertex(prob, A_ub, b_ub, A_eq, b_eq, act, (v > POLISH_SUPPORT_FLOOR) & (ub > 0), target_bits)
    if out is None:
        return None
    x, A, S = out
    # HiGHS's multipliers on the active rows (zero on the others, by complementary slackness), moved by the least
    # change that zeroes the reduced costs on the support (A_S^T y = c_S: a vertex of a degenerate program has more
    # active rows than support, and the least-norm solution alone put its weight on the rows' sums, bounding nothing)
    y0 = np.concatenate([np.minimum(np.asarray(y_ub, dtype=float)[act], 0.0), np.asarray(y_eq, dtype=float)])
    y = y0 + _refined_lstsq(A.T, cost[S] - A.T @ y0)
    marg = np.zeros(A_ub.shape[0])
    marg[act] = np.maximum(-y[:int(act.sum())], 0.0)
    lam = np.zeros((na, kh))
    lam[np.arange(na) != _ml_reference_class(prob)] = marg[:(na - 1) * kh].reshape(na - 1, kh)
    return x, lam, float(marg[-1])


#: the target mode's dual LP (its variables of order 1): a row within this of its bound is tight, a multiplier above
#: it positive (the support and the active rows of the primal vertex, by complementary slackness)
DUAL_TIGHT = 1e-9

#: the target mode's dual LP: an entry's cost, in units of the answer's distance to the smallest distortion, is capped
#: at this (a smaller right-hand side only shrinks the dual's feasible set, so its multipliers stay valid for the
#: true costs; the optimum's row minima are within a few units, far below it)
DUAL_COST_CAP = 1e6


#: the target mode's dual LP: solved by HiGHS's interior point (with its crossover to a vertex) above this many rows,
#: by its dual simplex (HiGHS's choice) up to it. The LP is tall (one row per allowed entry, |A| columns per output)
#: and the dual simplex's basis is of the rows' size: |A| = 9, 10,005 / 19,200 / 204,742 entries: 3.9 s / 12 s CPU /
#: stopped by its time limit after 89 s without multipliers, the interior point 0.2 s / 0.6 s / 20 s (the same bound
#: to 1e-10 of it). On small LPs the dual simplex stays: its basis gives the vertex complementary to the multipliers;
#: with the crossover's, 3 of 16 answers on distortions over 16 decades (k <= 40) changed, two without that vertex,
#: up to 1.8e-7 of the optimum's distance above it (certified; 2e-11 by the dual simplex); docs/benchmarks.md, stop
#: 47 (mlbig24)
DUAL_IPM_ROWS = 5_000


def maximal_leakage_target_multipliers(prob, target_bits, scale, vertex_bits=None):
    """Multipliers ``(lam, nu)`` of the target mode's rows, from its dual LP solved with the multipliers in units
    of ``scale`` (the answer's distance to the smallest distortion), and the primal vertex they are complementary
    to; or None.

    The primal LP's leakage rows are written in units of the slack ``s = 2^target - F`` (HiGHS's primal tolerance
    then applies relative to it), so their multipliers are ``s`` times those of the rows ``p(j | a) - p(j | ref_j)
    <= u_j``: 3e-8 of the costs' unit at a slack of 2.8e-9, below HiGHS's dual tolerance (1e-7), and their signs came
    back as noise (``-1e-18`` in the LP's units, each multiplying coefficients up to 1e8): clipped, the bound was the
    smallest distortion against an optimal answer. Here the dual is the LP: maximise ``sum_c y_c - nu s`` over
    ``y_c <= e(c, j) + sum_a lam(a, j) (p(c | a) - p(c | ref_j))`` (the rows of :func:`_ml_class_differences`; each
    allowed entry; ``e`` its cost above its row's cheapest, divided by ``scale`` and capped at DUAL_COST_CAP),
    ``sum_a lam(a, j) <= nu``, ``lam, nu >= 0``, whose variables are of order 1. Any multipliers give a bound
    (:func:`maximal_leakage_distortion_bound`, weak duality), so HiGHS's tolerances here cost the bound at most
    their size, not its validity.

    The primal vertex (with ``vertex_bits``): the entries whose rows are tight (within DUAL_TIGHT) are its support,
    the leakage rows with a positive multiplier (and the budget row, with a positive ``nu``) are active, solved
    exactly by :func:`_ml_target_vertex` for the LP at ``vertex_bits`` and kept if within ``target_bits``. Where
    HiGHS's own answer to the primal had an entry at -6.9e-8 in a basis whose exact solution kept it negative (the
    polish of that answer failed), this system was square and its solution feasible and optimal to 3e-11.

    Parameters
    ----------
    prob : Problem or SparseProblem
        The (reduced) program.
    target_bits : float
        The maximal-leakage target.
    scale : float
        The unit of the multipliers (internal distortion units, ``> 0``).
    vertex_bits : float, optional
        The target of the LP whose vertex is wanted (the LP's, a hair inside the target); no vertex without it.

    Returns
    -------
    tuple or None
        ``(lam, nu, x)``: ``lam, nu`` for :func:`maximal_leakage_distortion_bound` with ``unit=1`` (``lam`` of shape
        ``(n_private, n_outputs)``, the row of ``a0`` zero), ``x`` the vertex on ``prob.edges()`` (None when not
        asked for or not feasible); None when HiGHS does not solve the dual.
    """
    r, c, n = _entries(prob)
    na, kh, k = prob.M.shape[0], prob.kh, prob.k
    if not (np.isfinite(scale) and scale > 0.0) or na < 2:
        return None
    delta_c, a0 = _ml_class_differences(prob)
    others = [a for a in range(na) if a != a0]
    m = len(others) * kh
    w = prob.edge_weights()
    row_min = np.full(k, np.inf)
    np.minimum.at(row_min, r, w)
    e = np.minimum(np.maximum(w - row_min[r], 0.0) / scale, DUAL_COST_CAP)
    # variables [y (k), lam (others x kh), nu]; rows: one per allowed entry, then one per output
    idx = np.arange(n)
    blocks = [sp.csr_matrix((np.ones(n), (idx, r)), shape=(n, k))]
    for a in others:
        blocks.append(sp.csr_matrix((-delta_c[a], (idx, c)), shape=(n, kh)))
    blocks.append(sp.csr_matrix((n, 1)))
    top = sp.hstack(blocks, format="csr")
    bottom = sp.hstack([sp.csr_matrix((kh, k)), sp.hstack([sp.identity(kh)] * len(others)),
                        -sp.csr_matrix(np.ones((kh, 1)))], format="csr")
    A_ub = sp.vstack([top, bottom], format="csr")
    b_ub = np.concatenate([e, np.zeros(kh)])
    cost = np.concatenate([-np.ones(k), np.zeros(m), [max(_ml_target_slack(target_bits, prob), 0.0)]])
    bounds = [(None, None)] * k + [(0, None)] * (m + 1)
    # HiGHS's choice, its dual simplex, up to DUAL_IPM_ROWS rows; above, its interior point (with its crossover)
    method = "highs-ipm" if A_ub.shape[0] > DUAL_IPM_ROWS else "highs"
    # a tall LP whose interior point fails: its retries without crossover first (the dual simplex is the method that
    # ran into its time limit there; 3.1 s against 0.5 s at 10,920 rows)
    retries = ML_LP_RETRIES if method == "highs" else \
        tuple(r for r in ML_LP_RETRIES if r[0] == "highs-ipm") + tuple(r for r in ML_LP_RETRIES if r[0] != "highs-ipm")
    res = _ml_linprog(cost, A_ub, b_ub, None, None, bounds, method, retries=retries)
    if res.status != 0 or res.x is None:
        return None
    lam = np.zeros((na, kh))
    lam[others] = scale * np.clip(res.x[k:k + m], 0.0, None).reshape(len(others), kh)
    nu = scale * max(float(res.x[-1]), 0.0)
    x = None
    if vertex_bits is not None:
        _, P_ub, p_ub, P_eq, p_eq, _, ub = _maximal_leakage_lp(prob, None, vertex_bits)
        tight = b_ub - A_ub @ res.x <= DUAL_TIGHT
        act = np.concatenate([res.x[k:k + m] > DUAL_TIGHT, [res.x[-1] > DUAL_TIGHT]])
        out = _ml_target_vertex(prob, P_ub, p_ub, P_eq, p_eq, act, tight & (ub > 0), target_bits)
        x = out[0] if out is not None else None
    return lam, nu, x


#: HiGHS's methods tried in turn on the maximal-leakage LP when one ends without an answer (an unknown model status
#: or a solve error): its dual simplex with tolerances of 1e-9, its interior point without the crossover, then both
#: without presolve
ML_LP_RETRIES = (
    ("highs-ds", {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9}),
    ("highs-ipm", {"run_crossover": "off"}),
    ("highs-ds", {"presolve": False}),
    ("highs-ipm", {"presolve": False}),
)


def _ml_linprog(cost, A_ub, b_ub, A_eq, b_eq, bounds, method, retry_infeasible=False, options=None,
                retries=None):
    """``linprog`` by ``method``, then by the ML_LP_RETRIES while HiGHS returns neither an optimum nor (unless
    ``retry_infeasible``: the delta mode's LP is always feasible) infeasibility; the first result when all fail, and at
    once the result of a solve stopped by its time limit (:func:`highs_time_limit`; status 1, unsuccessful).

    A nearly independent prior (|A| = 10) had its LP's unscaled answer miss the dual tolerances by 3e6 times
    ("model_status is Unknown" by either method, with or without presolve) where the dual simplex at tolerances of
    1e-9 or the interior point without crossover solve it; integer distortions with ties were a "Solve error" of
    the interior point that the dual simplex solves. ``options``: HiGHS's options for the first solve; ``retries``:
    the retries in their order (default ML_LP_RETRIES)."""
    first = None
    for meth, opts in ((method, dict(options or {})),) + (ML_LP_RETRIES if retries is None else tuple(retries)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)  # run_crossover: passed to HiGHS, unknown to linprog
            res = highs_linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method=meth,
                                options=opts)
        first = res if first is None else first
        if res.status == 0 or (res.status == 2 and not retry_infeasible):
            return res
        if res.status == 1:  # stopped by its time limit (highs_time_limit): no retry, each would take as long
            return res
    return first


def _ml_bits_up(ml_total):
    """``log2(ml_total)`` (at least 0) rounded up to the smallest float ``b`` with ``2^b >= ml_total``: the maximal
    leakage's ``smallest_feasible`` read back as a target at least the sum of the mapping that meets it."""
    b = math.log2(max(float(ml_total), 1.0))
    while math.isfinite(b) and 2.0 ** b < ml_total:
        b = float(np.nextafter(b, math.inf))
    return b


def solve_maximal_leakage_lp(prob, *, delta=None, target_bits=None, bound_bits=None, bound_delta=None):
    """Minimise maximal leakage (delta mode) or distortion (target mode) by one HiGHS LP.

    Returns ``(P, info)`` with ``info['lp_gap']`` = primal minus dual objective; in delta mode also
    ``info['lower_bound']``, the rigorous bound of :func:`maximal_leakage_lower_bound` at the LP's duals, for the
    budget ``bound_delta`` (default ``delta``: the multipliers bound the leakage at every budget); in target
    mode the bound of :func:`maximal_leakage_distortion_bound` at the LP's multipliers, for the target
    ``bound_bits`` (default ``target_bits``: the multipliers bound the distortion at every target).
    """
    n = _entries(prob)[2]
    na = prob.M.shape[0]
    kh = prob.kh
    cost, A_ub, b_ub, A_eq, b_eq, budget_unit, ub = _maximal_leakage_lp(prob, delta, target_bits)
    # beyond two classes by HiGHS's interior point (with its crossover to a vertex: the same optimum, basis
    # multipliers), as the perfect-privacy LP: the |A| blocks of epigraph rows are degenerate for the dual
    # simplex. Paired on squared-Euclidean instances with a far cluster and a Dirichlet(0.5) joint: 54 draws at
    # k = 20 .. 80, |A| = 3 .. 6, 11.0 s against 17.6 s in all, the same objectives (6.9e-12); 10 draws at
    # k = 150 .. 300, |A| = 3 .. 10, faster on 7 (up to 8.7x), slower on 3 (up to 2.3x: |A| = 10, k = 300,
    # 216 s against 93 s); docs/benchmarks.md, stop 33
    method = "highs-ipm" if na > 2 else "highs"
    bounds = np.column_stack([np.zeros(ub.size), ub])
    res = _ml_linprog(cost, A_ub, b_ub, A_eq, b_eq, bounds, method, retry_infeasible=target_bits is None)
    if res.status == 2 and target_bits is not None:
        # the hint is the maximal leakage of the least-leaking LP's mapping (cleaned, as the solver returns it), rounded
        # up: HiGHS's objective was up to 8e-13 bits below it, and that hint passed back was refused again
        Pz, _ = solve_maximal_leakage_lp(prob)
        Pz = prob.clean(Pz, None)
        smallest = _ml_bits_up((prob.joint(Pz) / prob.pA[:, None]).max(axis=0).sum())
        exc = InfeasibleBudgetError(
            f"max_leakage={target_bits!r} bits cannot be reached by any allowed mapping; the smallest "
            f"achievable maximal leakage is {smallest!r} bits", smallest_feasible=smallest)
        exc.least_leaking = Pz  # its leakage as the result reports it raises the hint (_solver._reported_hint)
        raise exc
    if res.status != 0:
        raise SolverError(f"HiGHS did not solve the maximal-leakage LP: {res.message}")
    row_unit = 1.0  # delta mode: the unit of the leakage rows (and of the objective) in the LP HiGHS solved
    for _ in range(ML_DELTA_RESCALE_ROUNDS if target_bits is None else 0):
        # the part of sum_j max_a p(j | a) above F (the objective) near 0 (a budget just below the perfect-privacy
        # distortion): solved again in units of its answer, where HiGHS's absolute tolerances apply relative to it,
        # until the answer stays within TARGET_COST_RESCALE of its unit (nothing to do at 0, perfect privacy). The
        # answer's own value of that part, not HiGHS's objective: its rows met to 1e-7 only, the objective came back
        # 0 where the answer's mapping (and the optimum) had 8.9e-8
        # 0 where the answer's mapping (and the optimum) had 8.9e-8. And that answer brought within the budget: the
        # budget row is met to 1e-7 of its unit (the budget's slack above the smallest distortion) only, and a budget
        # 1e-7 of the range below the perfect-privacy distortion came back as the perfect-privacy mapping (leakage 0,
        # as its multipliers' bound), 1e-9 above the budget; the solves in units of the answer then ask HiGHS for
        # ML_TIGHT_TOLERANCE on every row (a budget 1e-10 of its slack below the perfect-privacy distortion leaks
        # 1e-10 of the range's leakage at most, far below the certificate's tolerance)
        unit2 = max(row_unit * float(res.fun), _ml_excess_in_budget(prob, res.x[:n], delta))
        if not ML_DELTA_RESCALE_FLOOR < unit2 < TARGET_COST_RESCALE * row_unit:
            break
        lp2 = _maximal_leakage_lp(prob, delta, None, unit2)
        res2 = _ml_linprog(lp2[0], lp2[1], lp2[2], lp2[3], lp2[4], bounds, method, retry_infeasible=True,
                           options=ML_TIGHT_TOLERANCE)
        if res2.status != 0:
            break
        row_unit, res, A_ub, b_ub = unit2, res2, lp2[1], lp2[2]
    unit = 1.0  # target mode: the costs are divided by ``unit`` in the LP HiGHS solved
    for _ in range(TARGET_RESCALE_ROUNDS if target_bits is not None else 0):
        # the internal costs are p(c) d / max(d): with one far symbol (d up to 1e5 times the others) the costs that
        # matter were ~1e-7, within HiGHS's absolute dual tolerance, and its mapping 9% above the optimum
        # distortion. Solved again in units of its answer (the distance to the smallest distortion), where they are
        # ~1, until the answer stays within TARGET_COST_RESCALE of its unit: with costs over 16 decades the first
        # answer was 1.8e8 times the optimum, the second (in its units) still 68 times it, 3.8e-7 of its unit (within
        # the dual tolerance of 0), and its multipliers bounded nothing
        if not 0.0 < res.fun < TARGET_COST_RESCALE * (cost.max() / unit if unit == 1.0 else 1.0):
            break
        # the entries costing more than PP_COST_RANGE answers are fixed at 0 there (a bounded dynamic range: a
        # distortion of 0 .. 1e12 had costs up to 1e14 answers at a target of 0, and HiGHS's interior point did not
        # return); the certificate's bound prices them with the multipliers (all entries), so it stays a bound
        bounds2 = bounds.copy()
        bounds2[:n, 1][cost[:n] > PP_COST_RANGE * unit * float(res.fun)] = 0.0
        res2 = _ml_linprog(cost / (unit * float(res.fun)), A_ub, b_ub, A_eq, b_eq, bounds2, method)
        if res2.status != 0:
            break
        unit, res = unit * float(res.fun), res2
    P = prob.from_edges(res.x[:n])
    dual = _dual_bound(res, b_ub, b_eq) * unit * row_unit
    info = {"lp_objective": float(res.fun) * unit * row_unit, "lp_dual_objective": dual,
            "lp_gap": max(float(res.fun) * unit * row_unit - dual, 0.0)}
    if target_bits is None:  # the LP minimised sum_j max_a p(j | a) - F, in units of row_unit
        floor = 1.0 + _ml_references(prob)[1]
        info["lp_objective"] += floor
        info["lp_dual_objective"] += floor
        info["lp_unit"] = row_unit
    if target_bits is not None:  # the target mode's LP minimised the distortion above delta_min
        # for polish_maximal_leakage_target: the answer and the marginals for the costs in internal units
        info["lp_solution"] = np.asarray(res.x, dtype=float)
        if res.ineqlin is not None and res.eqlin is not None:
            info["lp_marginals"] = (unit * np.asarray(res.ineqlin.marginals, dtype=float),
                                    unit * np.asarray(res.eqlin.marginals, dtype=float))
        info["lp_objective"] += float(prob.delta_min)
        info["lp_dual_objective"] += float(prob.delta_min)
    if target_bits is None and res.ineqlin is not None:
        # the multipliers of the rows in units of row_unit are those of the rows in units of 1 (the objective is in
        # the same units); the budget row's, per unit of the objective, are row_unit times smaller
        def bound_of(res):
            marg = -np.asarray(res.ineqlin.marginals, dtype=float)
            lam = np.zeros((na, kh))
            if na > 1:
                lam[np.arange(na) != _ml_reference_class(prob)] = marg[:(na - 1) * kh].reshape(na - 1, kh)
            return maximal_leakage_lower_bound(prob, lam, row_unit * marg[-1] / budget_unit if budget_unit else 0.0,
                                               delta if bound_delta is None else bound_delta)

        info["lower_bound"] = bound_of(res)
        if row_unit == 1.0 and math.log2(info["lp_objective"]) - math.log2(max(info["lower_bound"], 1.0)) > \
                ML_BOUND_RESOLVE_BITS:
            # the first solve's marginals meet the dual constraints to HiGHS's default 1e-7 only, and the bound
            # counts every input's violation: after the interior point's crossover (|A| = 6, k = 69, an asymmetric
            # distortion with forbidden entries) it fell 1.8e-7 bits below an optimal answer (the dual simplex's
            # marginals, or the interior point's at ML_TIGHT_TOLERANCE: within 2e-9 bits), and the answer was
            # refused as not certified. The same LP again at the tight tolerances; the larger of the two bounds
            # (each is one by weak duality, whatever the multipliers)
            res2 = _ml_linprog(cost, A_ub, b_ub, A_eq, b_eq, bounds, method, retry_infeasible=True,
                               options=ML_TIGHT_TOLERANCE)
            if res2.status == 0 and res2.ineqlin is not None:
                info["lower_bound"] = max(info["lower_bound"], bound_of(res2))
    elif res.ineqlin is not None:  # target mode: the distortion bound of the same multipliers (rigorous)
        marg = -np.asarray(res.ineqlin.marginals, dtype=float)
        lam = np.zeros((na, kh))
        lam[np.arange(na) != _ml_reference_class(prob)] = unit * marg[:(na - 1) * kh].reshape(na - 1, kh)
        nu = unit * marg[-1]
        info["lower_bound"] = maximal_leakage_distortion_bound(
            prob, lam, nu, target_bits if bound_bits is None else bound_bits, budget_unit)
        info["lower_bound_lp_target"] = maximal_leakage_distortion_bound(prob, lam, nu, target_bits, budget_unit)
    return P, info
