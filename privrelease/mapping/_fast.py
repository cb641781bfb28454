"""Placeholder: the structured fast solver lands in the next commit."""
from ..exceptions import SolverError


def solve_fast(prob, delta, *, tol=1e-6, warm=None):
    raise SolverError("the fast solver is not available yet")
