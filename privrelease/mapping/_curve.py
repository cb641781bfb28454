"""The privacy-distortion curve: one certified solve per budget, warm-started along the sweep."""

import dataclasses
import numbers
import warnings
from decimal import Decimal

import numpy as np
import pandas as pd

from ..exceptions import ConvergenceWarning, InfeasibleBudgetError
from ..utils._threads import single_threaded_blas
from ..utils._validation import check_n_jobs, user_stacklevel
from ._checks import check_budget
from ._leakage import leakage as _leakage, map_attack_accuracy
from ._lp import perfect_privacy_mapping
from ._result import MappingResult
from ._solver import (_below_smallest, _check_problem, _full_mapping, _internal_budget, _presolved_problem, check_tol,
                      reported_distortion, solve_mapping)

__all__ = ["privacy_distortion_curve"]

_COLUMNS = ["delta", "leakage_bits", "distortion", "map_accuracy", "status", "gap_bits", "solver"]


def privacy_distortion_curve(prior, distortion, deltas, *, leakage="mutual_information", solver="auto",
                             n_jobs=None, tol=1e-6, return_mappings=False):
    """Optimal leakage for each distortion budget (the paper's Fig. 4, 8, 10).

    The budgets are solved in increasing order, each warm-started from the
    previous mapping; budgets that pose the same problem (equal, or at most the
    smallest feasible distortion) are solved once. The end point "perfect privacy at minimum distortion" is a
    linear program (``I(A; C_hat) = 0`` iff ``J(a, j) = p(a) q(j)``, linear in the
    mapping) solved once with HiGHS: every budget at or beyond its distortion
    (``df.attrs['perfect_privacy_delta']``) gets that mapping and zero leakage.

    Parameters
    ----------
    prior : array-like of shape (n_private, n_public)
    distortion : array-like of shape (n_public, n_outputs)
    deltas : array-like of float
        Distortion budgets (each ``>=`` the smallest feasible distortion).
    leakage : {"mutual_information", "maximal_leakage"}
    solver : {"auto", "fast", "cvxpy"}
        Passed to :func:`solve_mapping`.
    n_jobs : int or None
        ``None`` or 1: sequential with warm starts; otherwise the budgets are
        solved in parallel with joblib threads (no warm start), BLAS on one
        thread meanwhile (restored after), and each uncertified point warned
        once the workers are done.
    tol : float, default=1e-6
        Certified gap in bits required at each point, below the most any
        mapping can leak (see :func:`solve_mapping`).
    return_mappings : bool, default=False
        Also return the list of :class:`MappingResult`, one per budget, in the
        order of ``deltas``.

    Returns
    -------
    curve : pandas.DataFrame
        Columns ``delta, leakage_bits, distortion, map_accuracy, status,
        gap_bits, solver``, one row per budget in the order given.
        ``curve.attrs['perfect_privacy_delta']`` is the smallest distortion with
        zero leakage (``inf`` if no allowed mapping reaches it), rounded up: a budget
        equal to it gets the perfect-privacy mapping.
    results : list of MappingResult
        Only with ``return_mappings=True``.

    References
    ----------
    Salamatian et al., Algorithm 1 and Sec. VI (privacy-distortion curves).

    Examples
    --------
    >>> import numpy as np
    >>> prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    >>> curve = privacy_distortion_curve(prior, 1 - np.eye(2), [0.0, 0.1, 0.5])
    >>> curve["leakage_bits"].round(4).tolist()
    [0.2781, 0.1733, 0.0]
    """
    P, D = _check_problem(prior, distortion, leakage, solver)
    # checked before any answer is compared with it (the perfect-privacy answers below were "optimal" at any tol)
    tol = check_tol(tol, P, D.shape[1])
    n_jobs = check_n_jobs(n_jobs)
    # a masked budget is no budget: solve_mapping refuses np.ma.masked (a TypeError), and np.asarray read a masked
    # array's hidden value (solved as a real budget) and a list's np.ma.masked as nan
    n_masked = (int(np.ma.count_masked(deltas)) if isinstance(deltas, np.ma.MaskedArray) else
                sum(v is np.ma.masked for v in deltas) if isinstance(deltas, (list, tuple)) else 0)
    if n_masked:
        entries = "1 masked entry" if n_masked == 1 else f"{n_masked} masked entries"
        raise TypeError(f"deltas must be real-number budgets, got {entries} in {deltas!r}: a masked budget would be "
                        "solved at the value it hides; give the budgets to solve only (deltas.compressed() of a masked "
                        "array)")
    try:
        raw = np.asarray(deltas)
    except (TypeError, ValueError):  # ragged
        raw = np.asarray([None])
    items = raw.ravel().tolist() if raw.dtype.kind == "O" else []
    if raw.dtype.kind not in "iufO" or not all(
            isinstance(v, (numbers.Real, Decimal)) and not isinstance(v, (bool, np.bool_)) for v in items):
        raise TypeError(f"deltas must be a 1-D list of real-number budgets, got {deltas!r}")
    if raw.ndim > 1 or raw.size == 0:
        raise ValueError(f"deltas must be a non-empty 1-D list of budgets, got {deltas!r}")
    # each budget checked as given: an int beyond float64 (10**400) is the infinite budget, as for
    # solve_mapping, where raw.astype(float) raised OverflowError
    budgets = [check_budget(d, "delta") for d in np.atleast_1d(raw).tolist()]
    prob, reduction = _presolved_problem(P, D)  # the exact presolve solve_mapping applies
    low = [d for d in budgets if _below_smallest(prob, d)]
    if low:
        raise InfeasibleBudgetError(
            f"delta={min(low)!r} is below the smallest feasible expected distortion "
            f"{prob.to_user(prob.delta_min)!r}",
            smallest_feasible=prob.to_user(prob.delta_min),
        )
    Ppp, _ = perfect_privacy_mapping(prob)
    # the budgets are compared with the perfect-privacy distortion in the problem's units, as solve_mapping
    # judges a mapping against its budget: in user units the offset's rounding (an ulp of 1e9 is 0.12 of a
    # spread of 1e-6) let a budget below that distortion take the mapping
    d_pp = prob.distortion(Ppp) if Ppp is not None else np.inf
    dpp = prob.to_user_up(d_pp) if Ppp is not None else float("inf")

    def pp_result(d):
        full = _full_mapping(prob, reduction, Ppp)
        lk = float(_leakage(P, full, kind=leakage))
        if lk > tol:
            warnings.warn(f"the perfect-privacy mapping used for delta={d!r} leaks {lk:.3g} bits (> tol={tol!r}); "
                          "status='inaccurate'", ConvergenceWarning, stacklevel=user_stacklevel())
        return MappingResult(
            mapping=full, leakage=lk, distortion=reported_distortion(P, full, D),
            status="optimal" if lk <= tol else "inaccurate",
            certificate={"gap_bits": lk, "method": "perfect-privacy LP (leakage >= 0)"},
            solver="highs", delta=float(d), max_leakage=None, kind=leakage,
        )

    results = [None] * len(budgets)
    # budgets that pose the same problem are solved once: equal budgets, and every budget at or
    # below the smallest feasible distortion (solve_mapping solves them all at delta_min)
    groups = {}
    for i, d in enumerate(budgets):
        if Ppp is not None and _internal_budget(prob, d) >= d_pp:
            results[i] = pp_result(d)
        else:
            groups.setdefault(-np.inf if _internal_budget(prob, d) <= prob.delta_min else d, []).append(i)
    # one sweep in increasing budget, each solve warm-started from the previous mapping
    todo = sorted(groups, key=lambda key: budgets[groups[key][0]])
    if n_jobs in (None, 1):
        prev = None
        solved = []
        for key in todo:
            res = solve_mapping(P, D, budgets[groups[key][0]], leakage=leakage, solver=solver, tol=tol,
                                warm_start=prev if leakage == "mutual_information" else None)
            solved.append(res)
            prev = res
    else:
        import functools

        from ..utils._jobs import run_jobs

        # BLAS's thread count is one setting of the whole process (OpenBLAS): set here, in the calling thread,
        # for all the workers. Each worker's own limit in the solver, opened and closed at other times, left the
        # process on one BLAS thread after the curve (and a worker on every thread while another's had closed).
        # So are the warning filters (Python < 3.14): a worker that quiets a cvxpy solve (catch_warnings) also
        # quieted another worker's ConvergenceWarning meanwhile, an uncertified point with no warning. The
        # workers' ConvergenceWarnings are held back here and the uncertified points warned below, from this
        # thread; the caller's filters are restored after the workers
        with single_threaded_blas(), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            # run_jobs: under a process backend (parallel_backend("loky") takes precedence over prefer) a
            # worker's warnings are issued here too
            solve = functools.partial(solve_mapping, leakage=leakage, solver=solver, tol=tol)
            solved = list(run_jobs([(solve, (P, D, budgets[groups[key][0]])) for key in todo], n_jobs,
                                   prefer="threads"))
        for key, res in zip(todo, solved):
            if res.status != "optimal":
                gap = res.certificate.get("gap_bits", np.nan)
                warnings.warn(f"the mapping for delta={budgets[groups[key][0]]!r} is not certified to tol={tol!r} "
                              f"bits (certified gap {gap:.3g} bits, solver {res.solver!r}); status='inaccurate'",
                              ConvergenceWarning, stacklevel=user_stacklevel())
    for key, res in zip(todo, solved):
        for i in groups[key]:
            results[i] = res if budgets[i] == res.delta else dataclasses.replace(res, delta=float(budgets[i]))
    rows = []
    for d, res in zip(budgets, results):
        rows.append({
            "delta": d,
            "leakage_bits": res.leakage,
            "distortion": res.distortion,
            "map_accuracy": map_attack_accuracy(P, res.mapping),
            "status": res.status,
            "gap_bits": float(res.certificate.get("gap_bits", np.nan)),
            "solver": res.solver,
        })
    df = pd.DataFrame(rows, columns=_COLUMNS)
    df.attrs["perfect_privacy_delta"] = float(dpp)
    return (df, results) if return_mappings else df
