"""Linear programs of the mapping engine, solved exactly with HiGHS.

* :func:`perfect_privacy_mapping`: the smallest distortion of a mapping whose
  output is independent of A. ``I(A; C_hat) = 0`` iff ``J(a, j) = p(a) q(j)``,
  which is linear in the mapping, so this end point of the privacy-distortion
  curve is an LP.
* :func:`solve_maximal_leakage_lp`: minimise the maximal leakage
  ``log2 sum_j max_a p(j | a)`` under a distortion budget (or the distortion
  under a maximal-leakage target). ``sum_j max_a`` is convex piecewise linear:
  with epigraph variables ``z_j >= p(j | a)`` it is an LP.
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..exceptions import InfeasibleBudgetError, SolverError

__all__ = ["perfect_privacy_mapping", "solve_maximal_leakage_lp"]


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


def perfect_privacy_mapping(prob):
    """Cheapest reduced mapping with ``I(A; C_hat) = 0``; returns ``(P, distortion)`` (user units)
    or ``(None, inf)``."""
    r_all, c_all, n_all = _entries(prob)
    na = prob.M.shape[0]
    # an output reached by a single row c (with mass) is independent of A only if p(. | c) = p_A:
    # otherwise its entry is 0 in every perfectly private mapping, so it is removed before the LP
    # (for an erasure alphabet these are the non-erased tuples: the LP shrinks to the shared outputs)
    private = np.bincount(c_all, minlength=prob.kh)[c_all] == 1
    dev = np.abs(prob.M[:, r_all] - prob.pA[:, None] * prob.pc[r_all][None, :]).max(axis=0)
    keep = ~(private & (dev > 1e-12 * prob.pc[r_all]))
    if not np.all(np.bincount(r_all[keep], minlength=prob.k) > 0):
        return None, float("inf")
    sel = np.flatnonzero(keep)
    r, c, n = r_all[sel], c_all[sel], sel.size
    pc_r = prob.pc[r]
    w = prob.edge_weights()[sel]
    # first in the mapping variables P (HiGHS's defaults): fast (k = 1000: ~60 s; in y, 4x that)
    P, status = _independence_lp(prob, r, c, n, sel, n_all, w, np.ones(n), {})
    if P is None or prob.objective(P) > 1e-12 * math.log(2.0):
        # in P the independence coefficients p(c) (p(a | c) - p(a)) of a rare input are tiny (1e-10
        # for p(c) = 1e-10): HiGHS drops matrix entries below 1e-9 and its feasibility tolerance is
        # absolute (1e-7), so such rows leak through outputs they alone use (6e-9 bits at "perfect
        # privacy"), or the LP is declared infeasible. Then in the joint masses y(c, j) = p(c) P(c, j),
        # where every coefficient is p(a | c) - p(a) or 1, with tight tolerances; without presolve
        # first (with inputs of mass 1e-7 .. 1e-10 it declares this feasible LP infeasible)
        tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
        statuses = [status]
        for opts in ({**tight, "presolve": False}, tight):
            Py, status_y = _independence_lp(prob, r, c, n, sel, n_all, w, pc_r, opts)
            statuses.append(status_y)
            if Py is not None:
                if P is None or prob.objective(Py) < prob.objective(P):
                    P = Py
                break
        if P is None:
            if 2 in statuses:  # infeasible
                return None, float("inf")
            raise SolverError(f"HiGHS failed on the perfect-privacy LP (statuses {statuses})")
    return P, prob.to_user(prob.distortion(P))


def _independence_lp(prob, r, c, n, sel, n_all, w, s, opts):
    """The perfect-privacy LP in the variables ``P(c, j) s(c)`` (``s = 1``: the mapping; ``s = p(c)``:
    the joint masses); ``(P, 0)`` or ``(None, HiGHS status)``."""
    na = prob.M.shape[0]
    blocks = [_row_sum_matrix(prob, r, n)]
    b = [np.ones(prob.k) if np.all(s == 1) else prob.pc]
    # independence: sum_c (p(a, c) - p(a) p(c)) P(c, j) = 0 for all j and all but one a
    for a in range(na - 1):
        coef = (prob.M[a, r] - prob.pA[a] * prob.pc[r]) / s
        blocks.append(sp.csr_matrix((coef, (c, np.arange(n))), shape=(prob.kh, n)))
        b.append(np.zeros(prob.kh))
    res = linprog(w / s, A_eq=sp.vstack(blocks, format="csr"), b_eq=np.concatenate(b), bounds=(0, None),
                  method="highs", options=opts)
    if res.status != 0:
        return None, res.status
    x = np.zeros(n_all)
    x[sel] = res.x / s
    return prob.clean(prob.from_edges(x), None), 0


def solve_maximal_leakage_lp(prob, *, delta=None, target_bits=None):
    """Minimise maximal leakage (delta mode) or distortion (target mode) by one HiGHS LP.

    Returns ``(P, info)`` with ``info['lp_gap']`` = primal minus dual objective.
    """
    r, c, n = _entries(prob)
    na = prob.M.shape[0]
    kh = prob.kh
    # p(j | a) - z_j <= 0
    rows_ub = []
    for a in range(na):
        coef = prob.M[a, r] / prob.pA[a]
        block = sp.hstack([sp.csr_matrix((coef, (c, np.arange(n))), shape=(kh, n)), -sp.identity(kh)])
        rows_ub.append(block)
    b_ub = [np.zeros(na * kh)]
    A_eq = sp.hstack([_row_sum_matrix(prob, r, n), sp.csr_matrix((prob.k, kh))], format="csr")
    b_eq = np.ones(prob.k)
    if target_bits is None:
        cost = np.concatenate([np.zeros(n), np.ones(kh)])
        if delta is not None and np.isfinite(delta) and delta < prob.delta_max:
            rows_ub.append(sp.csr_matrix(np.concatenate([prob.edge_weights(), np.zeros(kh)])[None, :]))
            b_ub.append(np.array([float(delta)]))
    else:
        cost = np.concatenate([prob.edge_weights(), np.zeros(kh)])
        rows_ub.append(sp.csr_matrix(np.concatenate([np.zeros(n), np.ones(kh)])[None, :]))
        b_ub.append(np.array([2.0 ** float(target_bits)]))
    A_ub = sp.vstack(rows_ub, format="csr")
    b_ub = np.concatenate(b_ub)
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status == 2 and target_bits is not None:
        _, info = solve_maximal_leakage_lp(prob)
        smallest = float(np.log2(max(info["lp_objective"], 1.0)))
        raise InfeasibleBudgetError(
            f"max_leakage={target_bits!r} bits cannot be reached by any allowed mapping; the smallest "
            f"achievable maximal leakage is {smallest!r} bits", smallest_feasible=smallest)
    if res.status != 0:
        raise SolverError(f"HiGHS did not solve the maximal-leakage LP: {res.message}")
    P = prob.from_edges(res.x[:n])
    dual = _dual_bound(res, b_ub, b_eq)
    return P, {"lp_objective": float(res.fun), "lp_dual_objective": dual,
               "lp_gap": max(float(res.fun) - dual, 0.0)}
