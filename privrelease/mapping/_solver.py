"""``solve_mapping``: Algorithm 1 (paper eq. 6) with certified solvers.

Solvers
-------
``"cvxpy"``
    The plain formulation, kept as the reference: variables ``P >= 0`` with rows
    summing to 1, ``P[d = inf] == 0``, objective
    ``sum_{a, j} rel_entr(J(a, j), p(a) q(j)) / ln 2`` with ``J = prior @ P`` and
    ``q = p_C @ P``, distortion ``<= delta``. CLARABEL is tried, then SCS. The
    answer is cleaned (clipped, forbidden entries set to exactly 0, rows
    renormalised, distortion restored to ``<= delta``) and certified.
``"fast"``
    The structured interior-point solver of :mod:`privrelease.mapping._fast`.
``"auto"``
    ``"fast"``, then ``"cvxpy"`` if the fast answer does not certify.

Certification
-------------
Every answer is checked independently of the solver that produced it: the
returned mapping is feasible by construction and ``certificate['gap_bits']`` is
a rigorous Lagrangian duality gap (see :mod:`privrelease.mapping._problem`).
Policy when nothing certifies to ``tol``: an explicit ``solver="fast"`` or
``solver="cvxpy"`` raises :class:`~privrelease.exceptions.SolverError`;
``solver="auto"`` returns the best feasible answer with ``status="inaccurate"``
and emits a :class:`~privrelease.exceptions.ConvergenceWarning` (never silently).
``"auto"`` skips the cvxpy fallback above ``CVXPY_FALLBACK_MAX_VARIABLES``
(250,000 mapping entries), where the plain formulation takes minutes.
"""

import math
import warnings

import numpy as np

from ..exceptions import ConvergenceWarning, InfeasibleBudgetError, SolverError
from ..utils import check_number
from ._checks import check_budget, check_distortion, check_prior
from ._leakage import expected_distortion, leakage as _leakage
from ._lp import perfect_privacy_mapping, solve_maximal_leakage_lp
from ._problem import LN2, Problem, lagrangian_bound
from ._result import MappingResult

__all__ = ["solve_mapping"]

_KINDS = ("mutual_information", "maximal_leakage")
#: ``solver="auto"`` does not fall back to the plain formulation above this many variables
#: (it needs minutes and gigabytes there); it returns the fast answer with a warning instead.
CVXPY_FALLBACK_MAX_VARIABLES = 250_000
_SOLVERS = ("auto", "fast", "cvxpy")


# ---------------------------------------------------------------------------- cvxpy reference
def _check_problem(prior, distortion, leakage, solver):
    """Validate the inputs shared by :func:`solve_mapping` and the curve; returns ``(P, D)``."""
    P = check_prior(prior)
    D = check_distortion(distortion, P.shape[1])
    if leakage not in _KINDS:
        raise ValueError(f"leakage must be one of {_KINDS}, got {leakage!r}")
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
    return P, D


def _cvxpy_candidates(prob, *, delta=None, target_nats=None, solvers=("CLARABEL", "SCS"), tight=True):
    """Yield ``(name, P)`` for each cvxpy solver that returns a point (plain formulation).

    ``tight=False`` keeps each solver's default tolerances (used by the benchmark).
    """
    import cvxpy as cp

    k, kh = prob.k, prob.kh
    for name in solvers:
        X = cp.Variable((k, kh), nonneg=True)
        cons = [cp.sum(X, axis=1) == 1]
        forb = ~prob.mask
        if forb.any():
            cons.append(cp.multiply(forb.astype(float), X) == 0)
        J = prob.M @ X
        q = prob.pc @ X
        outer = prob.pA[:, None] @ cp.reshape(q, (1, kh), order="C")
        info = cp.sum(cp.rel_entr(J, outer))
        dist = cp.sum(cp.multiply(prob.W, X))
        if target_nats is None:
            if np.isfinite(delta):
                cons.append(dist <= delta)
            problem = cp.Problem(cp.Minimize(info), cons)  # nats: same minimiser, better scaled
        else:
            cons.append(info <= target_nats)
            problem = cp.Problem(cp.Minimize(dist), cons)
        if not tight:
            opts = {}
        elif name == "SCS":
            opts = {"max_iters": 200000, "eps_abs": 1e-9, "eps_rel": 1e-9}
        elif name == "CLARABEL":  # tight tolerances: the certificate needs accurate small entries
            opts = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10,
                    "max_iter": 500}
        else:
            opts = {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                problem.solve(solver=name, **opts)
        except (cp.error.SolverError, ValueError, ArithmeticError):
            continue
        if problem.status in ("optimal", "optimal_inaccurate") and X.value is not None:
            yield f"cvxpy-{name}", np.asarray(X.value, dtype=float)


# ---------------------------------------------------------------------------- helpers
def _make_result(prob, P_red, *, prior, distortion, status, certificate, solver, delta, max_leakage, kind):
    full = prob.expand(P_red)
    return MappingResult(
        mapping=full,
        leakage=float(_leakage(prior, full, kind=kind)),
        distortion=float(expected_distortion(prior, full, distortion)),
        status=status,
        certificate=certificate,
        solver=solver,
        delta=delta,
        max_leakage=max_leakage,
        kind=kind,
    )


def _warm(prob, warm_start):
    if warm_start is None:
        return None
    W = warm_start.mapping if isinstance(warm_start, MappingResult) else warm_start
    W = np.asarray(W, dtype=float)
    if W.shape != (prob.n_public, prob.n_outputs):
        raise ValueError(
            f"warm_start must be a mapping of shape {(prob.n_public, prob.n_outputs)}, got {W.shape}"
        )
    return prob.reduce(W)


def _solve_mi_delta(prob, delta, solver, tol, warm=None):
    """Reduced mapping minimising I(A; C_hat) under ``distortion <= delta``: (P, cert, name, status)."""
    # the cheapest mapping already leaks nothing: optimal
    if prob.objective(prob.P_min) <= 0.0:
        return prob.P_min.copy(), {"gap_bits": 0.0, "multiplier": 0.0, "method": "zero leakage at minimum distortion"}, "exact", "optimal"
    if prob.argmin_mask.sum(axis=1).max() == 1 and delta <= prob.delta_min * (1 + 1e-12):
        return prob.P_min.copy(), {"gap_bits": 0.0, "multiplier": float("inf"), "method": "unique feasible mapping"}, "exact", "optimal"
    attempts = ["fast", "cvxpy"] if solver == "auto" else [solver]
    best = None
    notes = []
    if solver == "auto" and prob.k * prob.kh > CVXPY_FALLBACK_MAX_VARIABLES:
        attempts = ["fast"]
        notes.append(f"cvxpy fallback skipped ({prob.k * prob.kh} variables > {CVXPY_FALLBACK_MAX_VARIABLES})")
    for s in attempts:
        if s == "fast":
            from ._fast import solve_fast

            try:
                cands = [("fast", solve_fast(prob, delta, tol=tol, warm=warm))]
            except (SolverError, np.linalg.LinAlgError, ArithmeticError, ValueError) as exc:
                # any numerical failure of the fast solver falls back to the reference
                notes.append(f"fast: {type(exc).__name__}: {exc}")
                cands = []
        else:
            cands = _cvxpy_candidates(prob, delta=delta)
        for name, P in cands:
            P = prob.clean(P, delta)
            gap, mu, _ = prob.certificate(P, delta, target_bits=tol)
            cert = {"gap_bits": float(gap), "multiplier": float(mu / LN2)}
            if best is None or gap < best[1]["gap_bits"]:
                best = (P, cert, name)
            if gap <= tol:
                return P, cert, name, "optimal"
            notes.append(f"{name}: gap {gap:.3g} bits")
    if best is None:
        raise SolverError(f"no solver returned a mapping for delta={delta!r} ({'; '.join(notes) or 'all failed'})")
    if solver != "auto":
        raise SolverError(
            f"solver {solver!r} could not certify optimality to tol={tol!r} bits for delta={delta!r}: "
            f"{'; '.join(notes)}"
        )
    warnings.warn(
        f"no solver certified the mapping to tol={tol!r} bits for delta={delta!r} "
        f"({'; '.join(notes)}); returning the best one with status='inaccurate'",
        ConvergenceWarning,
        stacklevel=3,
    )
    return best[0], best[1], best[2], "inaccurate"


def _solve_mi_target(prob, target_bits, solver, tol):
    """Smallest distortion with ``I(A; C_hat) <= target_bits`` (bisection/Newton on the curve)."""
    L = target_bits * LN2
    if solver == "cvxpy":
        best = None
        for name, P in _cvxpy_candidates(prob, target_nats=L):
            P = prob.clean(P, None)
            f = prob.objective(P)
            if f > L:  # pull back inside with the perfect-privacy mapping (f convex, f(P_pp) = 0)
                Ppp, _ = perfect_privacy_mapping(prob)
                if Ppp is None:
                    continue
                theta = min(1.0, (f - L) / f * (1 + 1e-9))
                P = (1 - theta) * P + theta * Ppp
            d = prob.distortion(P)
            if best is None or d < best[1]:
                best = (P, d, name)
        if best is None:
            raise SolverError(f"cvxpy found no mapping with leakage <= {target_bits!r} bits")
        gap, _, _ = prob.certificate(best[0], best[1])
        return best[0], {"gap_bits": float(gap), "distortion_gap": float("nan"), "method": "cvxpy direct"}, best[2], "optimal"

    scale = max(prob.delta_max - prob.delta_min, 1e-300)
    dist_tol = max(tol, 1e-12) * max(1.0, scale)

    def run(d):
        P, cert, name, status = _solve_mi_delta(prob, d, solver, tol)
        return P, prob.objective(P), cert["gap_bits"] * LN2, cert["multiplier"] * LN2, name

    lo = prob.delta_min
    P, f, gap, lam, name = run(lo)
    if f <= L:
        return P, {"gap_bits": gap / LN2, "distortion_gap": 0.0, "method": "minimum distortion suffices"}, name, "optimal"
    Ppp, dpp = perfect_privacy_mapping(prob)
    if Ppp is not None:
        hi, P_hi, name_hi, gap_hi = dpp, Ppp, "highs", prob.objective(Ppp)
    else:
        Pm, fm, gm, _, nm = run(np.inf)
        if fm > L:
            smallest = max(fm - gm, 0.0) / LN2
            raise InfeasibleBudgetError(
                f"max_leakage={target_bits!r} bits cannot be reached by any allowed mapping; "
                f"the smallest achievable leakage is about {smallest:.6g} bits (up to {fm / LN2:.6g})",
                smallest_feasible=fm / LN2,
            )
        hi, P_hi, name_hi, gap_hi = prob.distortion(Pm), Pm, nm, gm
    cur, f_cur, lam_cur = lo, f, lam
    for _ in range(80):
        if hi - lo <= dist_tol:
            break
        if lam_cur > 0 and np.isfinite(lam_cur):
            cand = cur + (f_cur - L) / lam_cur
        else:
            cand = 0.5 * (lo + hi)
        if not (lo < cand < hi):
            cand = 0.5 * (lo + hi)
        P, f, gap, lam, name = run(cand)
        if f <= L:
            hi, P_hi, name_hi, gap_hi = cand, P, name, gap
            continue
        if f - gap > L:
            lo = cand
        cur, f_cur, lam_cur = cand, f, lam
        if f - L <= 4 * gap + 1e-15 or (lam > 0 and (f - L) / lam <= dist_tol):
            # Newton has converged from the left: step just past the root
            margin = max(2 * (gap + 1e-15) / max(lam, 1e-300), dist_tol / 4)
            for _ in range(30):
                trial = min(cand + (f - L) / max(lam, 1e-300) + margin, hi)
                if trial >= hi:
                    break
                P2, f2, g2, _, n2 = run(trial)
                if f2 <= L:
                    hi, P_hi, name_hi, gap_hi = trial, P2, n2, g2
                    break
                margin *= 4
            break
    # dual lower bound on the smallest distortion: leakage(P) >= <S_pi, P> for every pi, so
    # min {<w, P> : leakage <= L} >= max_mu sum_c min_j (w + mu S_pi)(c, j) - mu L
    S_hi = prob.scores(prob.posteriors(P_hi))
    lb_dual, _ = lagrangian_bound(np.where(prob.mask, prob.W, np.inf), np.where(prob.mask, S_hi, 0.0), L)
    lo = max(lo, lb_dual)
    cert = {
        "gap_bits": float(gap_hi / LN2),
        "distortion_gap": float(max(prob.distortion(P_hi) - lo, 0.0)),
        "method": "Newton on the privacy-distortion curve",
    }
    # the leakage certificate (tol bits) only resolves the distortion to about tol / slope,
    # slope = the multiplier lambda (nats per unit of distortion) at the target
    resolution = 20.0 * tol * LN2 / lam_cur if lam_cur > 0 and np.isfinite(lam_cur) else 0.0
    cert["resolution"] = float(resolution)
    allowed = max(10 * dist_tol, 1e-8 * max(1.0, hi), resolution)
    status = "optimal" if cert["distortion_gap"] <= allowed else "inaccurate"
    if status != "optimal":
        if solver != "auto":
            raise SolverError(
                f"could not bracket the smallest distortion for max_leakage={target_bits!r} to the tolerance "
                f"(distortion gap {cert['distortion_gap']:.3g})"
            )
        warnings.warn(
            f"distortion for max_leakage={target_bits!r} only certified to {cert['distortion_gap']:.3g}",
            ConvergenceWarning, stacklevel=3,
        )
    return P_hi, cert, name_hi, status


def _solve_ml(prob, delta, target_bits, solver):
    """Maximal-leakage mode: one exact LP (HiGHS), or the same LP through cvxpy."""
    if solver == "cvxpy":
        import cvxpy as cp

        X = cp.Variable((prob.k, prob.kh), nonneg=True)
        cons = [cp.sum(X, axis=1) == 1]
        if (~prob.mask).any():
            cons.append(cp.multiply((~prob.mask).astype(float), X) == 0)
        cond = cp.multiply(1.0 / prob.pA[:, None], prob.M @ X)
        total = cp.sum(cp.max(cond, axis=0))
        dist = cp.sum(cp.multiply(prob.W, X))
        if target_bits is None:
            if np.isfinite(delta):
                cons.append(dist <= delta)
            pr = cp.Problem(cp.Minimize(total), cons)
        else:
            cons.append(total <= 2.0 ** target_bits)
            pr = cp.Problem(cp.Minimize(dist), cons)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            pr.solve(solver="HIGHS")
        if pr.status != "optimal" or X.value is None:
            raise SolverError(f"cvxpy/HiGHS did not solve the maximal-leakage program: status {pr.status!r}")
        P, info, name = X.value, {}, "cvxpy-HIGHS"
    else:
        P, info = solve_maximal_leakage_lp(prob, delta=delta, target_bits=target_bits)
        name = "highs"
    P = prob.clean(P, delta)
    cert = {"gap_bits": 0.0, "method": "linear program (HiGHS)"}
    if info:
        if target_bits is None:
            primal, dual = info["lp_objective"], info["lp_dual_objective"]
            cert["gap_bits"] = float(max(math.log2(max(primal, 1.0)) - math.log2(max(dual, 1.0)), 0.0))
        else:
            cert["distortion_gap"] = float(info["lp_gap"])
        cert["lp_gap"] = info["lp_gap"]
    return P, cert, name, "optimal"


# ---------------------------------------------------------------------------- public API
def solve_mapping(prior, distortion, delta=None, *, max_leakage=None, leakage="mutual_information",
                  solver="auto", tol=1e-6, warm_start=None):
    """Optimal privacy-preserving mapping (Algorithm 1, problem (6)) with a certificate.

    Minimise the leakage ``I(A; C_hat)`` of releasing ``C_hat ~ mapping(. | C)``
    subject to an expected distortion ``<= delta`` (``delta`` mode), or minimise
    the expected distortion subject to leakage ``<= max_leakage`` bits
    (``max_leakage`` mode). Exactly one of the two must be given.

    Parameters
    ----------
    prior : array-like of shape (n_private, n_public)
        Joint ``p(a, c)``; non-negative and summing to 1 (within 1e-8).
    distortion : array-like of shape (n_public, n_outputs)
        Non-negative ``d(c, c_hat)``; ``np.inf`` forbids a transition exactly
        (the mapping is exactly 0 there), e.g. erasure-only outputs.
    delta : float, optional
        Distortion budget ``Delta >= 0`` (``np.inf`` allowed). Below the smallest
        feasible budget ``sum_c p(c) min_j d(c, j)`` an
        :class:`~privrelease.exceptions.InfeasibleBudgetError` is raised.
    max_leakage : float, optional
        Privacy target in bits (``>= 0``).
    leakage : {"mutual_information", "maximal_leakage"}
        The privacy measure. ``"maximal_leakage"`` (``log2 sum_j max_a p(j|a)``)
        is minimised exactly by one linear program (HiGHS).
    solver : {"auto", "fast", "cvxpy"}
        See the module notes: ``"fast"`` is the structured interior-point
        solver, ``"cvxpy"`` the plain reference formulation (CLARABEL then SCS),
        ``"auto"`` tries fast then cvxpy.
    tol : float, default=1e-6
        Required certified optimality gap in bits.
    warm_start : MappingResult or array-like, optional
        A previous mapping (same shape); its support seeds the fast solver's
        working set of allowed transitions (used along a curve).

    Returns
    -------
    MappingResult
        ``mapping``, ``leakage`` (bits, recomputed from the mapping),
        ``distortion``, ``status``, ``certificate`` (``gap_bits`` ...), ``solver``,
        ``delta``, ``max_leakage``.

    Raises
    ------
    InfeasibleBudgetError
        ``delta`` below the smallest feasible distortion (message and
        ``.smallest_feasible`` give it), a row of ``distortion`` without a finite
        entry, or an unreachable ``max_leakage``.
    SolverError
        An explicitly chosen solver could not certify its answer to ``tol``.

    See Also
    --------
    privacy_distortion_curve : the whole trade-off curve, warm-started.

    References
    ----------
    Salamatian et al., "Managing your private and public data", Algorithm 1,
    eq. (4)-(6); the maximal-leakage variant is the worst-case measure of their
    Sec. II-B.

    Examples
    --------
    >>> import numpy as np
    >>> prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    >>> d = 1.0 - np.eye(2)
    >>> res = solve_mapping(prior, d, delta=0.5)
    >>> round(res.leakage, 6), res.status
    (0.0, 'optimal')
    >>> round(solve_mapping(prior, d, delta=0.0).leakage, 4)
    0.2781
    """
    P, D = _check_problem(prior, distortion, leakage, solver)
    tol = check_number(tol, "tol", low=0.0, low_inclusive=False)
    if (delta is None) == (max_leakage is None):
        raise ValueError(
            "give exactly one of delta (a distortion budget) and max_leakage (a privacy target in bits); "
            f"got delta={delta!r}, max_leakage={max_leakage!r}"
        )
    prob = Problem(P, D)
    if delta is not None:
        delta = check_budget(delta, "delta")
        if delta < prob.delta_min - 1e-12 * max(1.0, prob.delta_min):
            raise InfeasibleBudgetError(
                f"delta={delta!r} is below the smallest feasible expected distortion "
                f"{prob.delta_min!r} (= sum_c p(c) min_c_hat d(c, c_hat))",
                smallest_feasible=prob.delta_min,
            )
        delta_eff = max(delta, prob.delta_min)
        if leakage == "maximal_leakage":
            Pr, cert, name, status = _solve_ml(prob, delta_eff, None, solver)
        else:
            Pr, cert, name, status = _solve_mi_delta(prob, delta_eff, solver, tol, _warm(prob, warm_start))
        return _make_result(prob, Pr, prior=P, distortion=D, status=status, certificate=cert, solver=name,
                            delta=float(delta), max_leakage=None, kind=leakage)
    target = check_budget(max_leakage, "max_leakage")
    if leakage == "maximal_leakage":
        Pr, cert, name, status = _solve_ml(prob, None, min(target, 1e3), solver)
    else:
        Pr, cert, name, status = _solve_mi_target(prob, min(target, 1e3), solver, tol)
    return _make_result(prob, Pr, prior=P, distortion=D, status=status, certificate=cert, solver=name,
                        delta=None, max_leakage=float(target), kind=leakage)
