"""One place that runs a cvxpy solver quietly (the reference formulations of the engine)."""

import warnings

__all__ = ["solve_quietly"]


def solve_quietly(problem, name, opts):
    """Solve ``problem`` with solver ``name``; True when it returned a point (optimal or inaccurate).

    Solver failures (``SolverError``, numerical errors) and the solvers' warnings are swallowed:
    every caller certifies the point independently, or moves on to the next solver.
    """
    import cvxpy as cp

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem.solve(solver=name, **opts)
    except (cp.error.SolverError, ValueError, ArithmeticError):
        return False
    return problem.status in ("optimal", "optimal_inaccurate")
