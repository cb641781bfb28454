"""Injected solver failures: the engine falls back or raises SolverError, never returns a silent wrong answer.

A broken fast solver (exception, NaN, negative, uncertifiable or wrongly shaped
answer), a failing or lying cvxpy, a failing HiGHS: every case ends either in a
certified optimal mapping from another solver, in a ``status="inaccurate"``
answer announced by a ConvergenceWarning (``solver="auto"`` only), or in a
:class:`SolverError` -- and every mapping returned is feasible.
"""

import warnings

import cvxpy
import numpy as np
import pytest
import scipy.optimize

import privrelease.mapping._fast as fast_module
import privrelease.mapping._lp as lp_module
from privrelease.exceptions import ConvergenceWarning, SolverError
from privrelease.mapping import solve_mapping
from privrelease.mappers import QuantizedPrivacyMapper

PRIOR = np.array([[0.3, 0.1, 0.1], [0.05, 0.15, 0.3]])
D = 1.0 - np.eye(3)
DELTA = 0.3


def _independent_reference(prior, d, delta):
    """min I(A; C_hat) s.t. E d <= delta, written directly in cvxpy (bits)."""
    k, kh = d.shape
    P = cvxpy.Variable((k, kh), nonneg=True)
    pa = prior.sum(axis=1)
    pc = prior.sum(axis=0)
    J = prior @ P
    q = pc @ P
    info = cvxpy.sum(cvxpy.rel_entr(J, pa[:, None] @ cvxpy.reshape(q, (1, kh), order="C")))
    problem = cvxpy.Problem(cvxpy.Minimize(info / np.log(2)),
                            [cvxpy.sum(P, axis=1) == 1, cvxpy.sum(cvxpy.multiply(pc[:, None] * d, P)) <= delta])
    problem.solve(solver="CLARABEL")
    return problem.value


REFERENCE_BITS = _independent_reference(PRIOR, D, DELTA)


def _assert_feasible(result, delta=DELTA):
    M = result.mapping
    assert np.all(M >= 0)
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-12)
    assert result.distortion <= delta + 1e-9


class Spy:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def _raise(exc):
    def fn(*args, **kwargs):
        raise exc

    return fn


BROKEN_FAST = {
    "raises SolverError": _raise(SolverError("injected failure")),
    "returns NaN": lambda prob, delta, **kw: np.full((prob.k, prob.kh), np.nan),
    "returns negative": lambda prob, delta, **kw: -np.ones((prob.k, prob.kh)),
    "returns uniform (not optimal)": lambda prob, delta, **kw: np.full((prob.k, prob.kh), 1.0 / prob.kh),
    "returns infeasible distortion": lambda prob, delta, **kw: np.tile(np.eye(prob.k, prob.kh)[::-1], 1),
}


@pytest.mark.parametrize("case", sorted(BROKEN_FAST))
def test_auto_falls_back_to_cvxpy(monkeypatch, case):
    spy = Spy(BROKEN_FAST[case])
    monkeypatch.setattr(fast_module, "solve_fast", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_mapping(PRIOR, D, DELTA, solver="auto")
    assert spy.calls >= 1
    assert res.solver.startswith("cvxpy") and res.status == "optimal"
    assert res.certificate["gap_bits"] <= 1e-6
    assert res.leakage == pytest.approx(REFERENCE_BITS, abs=1e-6)
    _assert_feasible(res)


@pytest.mark.parametrize("case", sorted(BROKEN_FAST))
def test_explicit_fast_raises(monkeypatch, case):
    monkeypatch.setattr(fast_module, "solve_fast", Spy(BROKEN_FAST[case]))
    with pytest.raises(SolverError, match="solver 'fast' could not certify|no solver returned a mapping"):
        solve_mapping(PRIOR, D, DELTA, solver="fast")


NUMERICAL_FAILURES = [np.linalg.LinAlgError("injected singular matrix"), FloatingPointError("injected overflow"),
                      ZeroDivisionError("injected division by zero"),
                      ValueError("injected NaN in a Newton system")]


@pytest.mark.parametrize("exc", NUMERICAL_FAILURES, ids=lambda e: type(e).__name__)
def test_auto_falls_back_when_fast_fails_numerically(monkeypatch, exc):
    spy = Spy(_raise(exc))
    monkeypatch.setattr(fast_module, "solve_fast", spy)
    res = solve_mapping(PRIOR, D, DELTA, solver="auto")
    assert spy.calls >= 1
    assert res.solver.startswith("cvxpy") and res.status == "optimal"
    assert res.leakage == pytest.approx(REFERENCE_BITS, abs=1e-6)
    _assert_feasible(res)


@pytest.mark.parametrize("exc", NUMERICAL_FAILURES, ids=lambda e: type(e).__name__)
def test_explicit_fast_numerical_failure_is_a_solver_error(monkeypatch, exc):
    monkeypatch.setattr(fast_module, "solve_fast", _raise(exc))
    with pytest.raises(SolverError, match=type(exc).__name__):
        solve_mapping(PRIOR, D, DELTA, solver="fast")


def _cvxpy_raises(self, *args, **kwargs):
    raise cvxpy.error.SolverError("injected cvxpy failure")


def _cvxpy_no_value(self, *args, **kwargs):
    return None  # "solved" without a point: variables keep value None


def _cvxpy_lies(self, *args, **kwargs):
    """Claims optimality with a uniform (feasible but far from optimal) point: every entry of ``D`` is allowed,
    so the program's variables (one per allowed entry, row by row) are the whole mapping."""
    assert np.isfinite(D).all()
    for v in self.variables():
        v.value = np.full(v.shape, 1.0 / D.shape[1])
    self._status = "optimal"
    return 0.0


@pytest.mark.parametrize("fake", [_cvxpy_raises, _cvxpy_no_value, _cvxpy_lies])
def test_explicit_cvxpy_failure_raises(monkeypatch, fake):
    monkeypatch.setattr(cvxpy.Problem, "solve", fake)
    with pytest.raises(SolverError):
        solve_mapping(PRIOR, D, DELTA, solver="cvxpy")


@pytest.mark.parametrize("fake", [_cvxpy_raises, _cvxpy_no_value])
def test_auto_with_everything_broken_raises(monkeypatch, fake):
    monkeypatch.setattr(fast_module, "solve_fast", _raise(SolverError("injected")))
    monkeypatch.setattr(cvxpy.Problem, "solve", fake)
    with pytest.raises(SolverError, match="no solver returned a mapping"):
        solve_mapping(PRIOR, D, DELTA, solver="auto")


def test_auto_with_lying_solvers_is_flagged_not_silent(monkeypatch):
    monkeypatch.setattr(fast_module, "solve_fast", BROKEN_FAST["returns uniform (not optimal)"])
    monkeypatch.setattr(cvxpy.Problem, "solve", _cvxpy_lies)
    with pytest.warns(ConvergenceWarning, match="no solver certified"):
        res = solve_mapping(PRIOR, D, DELTA, solver="auto")
    assert res.status == "inaccurate"
    assert res.certificate["gap_bits"] > 1e-6  # the certificate tells how far from optimal it may be
    assert res.leakage >= REFERENCE_BITS - 1e-9  # and it is indeed no better than the optimum
    _assert_feasible(res)


def test_cvxpy_failure_does_not_matter_when_fast_certifies(monkeypatch):
    monkeypatch.setattr(cvxpy.Problem, "solve", _cvxpy_raises)
    res = solve_mapping(PRIOR, D, DELTA, solver="auto")
    assert res.solver == "fast" and res.status == "optimal"
    assert res.leakage == pytest.approx(REFERENCE_BITS, abs=1e-6)


def test_highs_failure_raises(monkeypatch):
    def failing_linprog(*args, **kwargs):
        return scipy.optimize.OptimizeResult(status=4, message="injected numerical difficulties",
                                             x=None, fun=None, success=False)

    monkeypatch.setattr(lp_module, "linprog", failing_linprog)
    # an explicit solver raises; "auto" returns the best feasible mapping it has, warned (the module's policy)
    with pytest.raises(SolverError, match="HiGHS did not solve the maximal-leakage LP: injected"):
        solve_mapping(PRIOR, D, DELTA, leakage="maximal_leakage", solver="fast")
    with pytest.warns(ConvergenceWarning):
        res = solve_mapping(PRIOR, D, DELTA, leakage="maximal_leakage")
    assert res.status == "inaccurate" and res.distortion <= DELTA * (1 + 1e-12)


def test_mapper_surfaces_solver_failure(monkeypatch):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    X = np.where(y[:, None] == 1, 4.0, 1.0) + rng.integers(0, 2, (120, 6))
    spy = Spy(_raise(SolverError("injected")))
    monkeypatch.setattr(fast_module, "solve_fast", spy)
    with pytest.raises(SolverError):
        QuantizedPrivacyMapper(n_clusters=4, delta=1.3, space="raw", solver="fast", random_state=0).fit(X, y)
    assert spy.calls == 1
    m = QuantizedPrivacyMapper(n_clusters=4, delta=1.3, space="raw", solver="auto", random_state=0).fit(X, y)
    assert spy.calls == 2
    assert m.solver_result_.status == "optimal" and m.solver_result_.solver.startswith("cvxpy")
    np.testing.assert_allclose(m.mapping_.sum(axis=1), 1.0)
