"""Maximal-leakage LPs that HiGHS failed on: solve_mapping(solver="auto") must answer, certified where it can.

* distortions spanning 1e-8 .. 1e8 at (twice) the smallest budget: the budget row in units of the budget had
  coefficients 6e-8 .. 1e9 against a right-hand side of 3e-5 ("model_status is Unknown", every HiGHS method);
* nearly independent priors (|A| = 10): the unscaled answer missed the dual tolerances ("Unknown");
* whatever HiGHS still cannot solve: the best feasible mapping, status "inaccurate", a ConvergenceWarning.

The answers are checked against an independent LP written here from the definition (epigraph variables).
"""

import warnings

import numpy as np
import pytest
from shared_helpers import nearly_independent  # tests/shared_helpers.py
import scipy.sparse as sp
from scipy.optimize import linprog

from privrelease.exceptions import ConvergenceWarning, SolverError
from privrelease.mapping import maximal_leakage, solve_mapping
from privrelease.mapping import _lp


def _ref_ml_bits(prior, d, delta=None, excess=False):
    """min log2 sum_j max_a p(j | a) over mappings with sum_c p(c) sum_j d(c, j) P(c, j) <= delta (scipy linprog,
    variables [P (row-major), z]). ``excess``: the budget row written as the distortion above each row's cheapest
    output, divided by the slack above the smallest distortion (the same inequality, well scaled), with the bounds it
    implies on each entry."""
    na, k = prior.shape
    kh = d.shape[1]
    n = k * kh
    pa, pc = prior.sum(1), prior.sum(0)
    rows = []
    for a in range(na):
        blk = sp.kron(sp.csr_matrix(prior[a][None, :] / pa[a]), sp.identity(kh))  # sum_c p(c | a) P(c, j)
        rows.append(sp.hstack([blk, -sp.identity(kh)]))
    b_ub = [np.zeros(na * kh)]
    if delta is not None:
        if excess:
            e = pc[:, None] * (d - d.min(1)[:, None])
            slack = delta - float(pc @ d.min(1))
            rows.append(sp.csr_matrix(np.concatenate([e.ravel() / slack, np.zeros(kh)])[None, :]))
            b_ub.append(np.ones(1))
        else:
            rows.append(sp.csr_matrix(np.concatenate([(pc[:, None] * d).ravel(), np.zeros(kh)])[None, :]))
            b_ub.append(np.array([delta]))
    ub = np.full(n + kh, np.inf)
    if delta is not None and excess:  # the bounds the budget implies: P(c, j) <= slack / e(c, j)
        with np.errstate(divide="ignore"):
            ub[:n] = np.minimum(1.0, slack / e.ravel())
    A_eq = sp.hstack([sp.kron(sp.identity(k), np.ones((1, kh))), sp.csr_matrix((k, kh))])
    cost = np.concatenate([np.zeros(n), np.ones(kh)])
    for method, opts in (("highs", {}), ("highs-ds", {"primal_feasibility_tolerance": 1e-10,
                                                      "dual_feasibility_tolerance": 1e-10})):
        res = linprog(cost, A_ub=sp.vstack(rows), b_ub=np.concatenate(b_ub), A_eq=A_eq, b_eq=np.ones(k),
                      bounds=np.column_stack([np.zeros(n + kh), ub]), method=method, options=opts)
        if res.status == 0:
            return float(np.log2(res.fun))
    raise AssertionError(f"the reference LP failed: {res.message}")


def _span_instance(seed):
    rng = np.random.default_rng(seed)
    k, na, kh = 20, 3, 9
    prior = rng.dirichlet(np.ones(na * k)).reshape(na, k)
    d = 10.0 ** rng.uniform(-8, 8, (k, kh))
    d[np.arange(k), rng.integers(0, kh, k)] = 10.0 ** rng.uniform(-8, -6, k)
    return prior, d, float(prior.sum(0) @ d.min(1))


def _near_independent(seed, k=20, eps=1e-6, na=10):
    return nearly_independent(seed, na=na, k=k, eps=eps)


def _certified(res, prior):
    assert res.status == "optimal", res.certificate
    assert res.leakage == pytest.approx(maximal_leakage(prior, res.mapping), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_smallest_budget_on_a_distortion_spanning_16_decades_is_certified(seed):
    prior, d, dmin = _span_instance(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_mapping(prior, d, dmin, leakage="maximal_leakage")
    _certified(res, prior)
    assert res.distortion <= dmin * (1 + 1e-9)
    # at the smallest budget every row goes to its (unique) cheapest output: the only feasible mapping
    only = np.zeros(d.shape)
    only[np.arange(d.shape[0]), d.argmin(1)] = 1.0
    ref = maximal_leakage(prior, only)
    assert abs(res.leakage - ref) <= res.certificate["gap_bits"] + 1e-9


@pytest.mark.parametrize("seed", [0, 3])
def test_twice_the_smallest_budget_on_a_distortion_spanning_16_decades_agrees_with_an_independent_lp(seed):
    prior, d, dmin = _span_instance(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_mapping(prior, d, 2 * dmin, leakage="maximal_leakage")
    _certified(res, prior)
    assert res.distortion <= 2 * dmin * (1 + 1e-9)
    ref = _ref_ml_bits(prior, d, 2 * dmin, excess=True)
    assert res.leakage <= ref + res.certificate["gap_bits"] + 1e-7
    assert res.leakage >= ref - 1e-7


@pytest.mark.parametrize("seed,frac", [(0, 0.3), (3, 0.1)])
def test_a_nearly_independent_prior_in_delta_mode_agrees_with_an_independent_lp(seed, frac):
    prior, d = _near_independent(seed)
    pc = prior.sum(0)
    dmin, dmax = float(pc @ d.min(1)), float(pc @ d.max(1))
    delta = dmin + frac * (dmax - dmin)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_mapping(prior, d, delta, leakage="maximal_leakage")
    _certified(res, prior)
    assert res.distortion <= delta * (1 + 1e-9)
    ref = _ref_ml_bits(prior, d, delta)
    assert abs(res.leakage - ref) <= res.certificate["gap_bits"] + 1e-7


def test_a_nearly_independent_prior_at_a_tiny_target_is_answered():
    prior, d = _near_independent(2, k=20, eps=1e-5)
    res = solve_mapping(prior, d, max_leakage=1e-12, leakage="maximal_leakage")
    assert res.status == "optimal", res.certificate
    assert maximal_leakage(prior, res.mapping) <= 1e-12
    # no mapping within the target is cheaper than the certified bound, and the cheapest constant mapping
    # (leakage 0) is no cheaper than the answer
    pc = prior.sum(0)
    assert res.distortion <= float((pc @ d).min()) * (1 + 1e-9)
    assert res.distortion - res.certificate["distortion_lower_bound"] <= res.certificate["distortion_tolerance"]


class _Failing:
    """linprog replaced in the LP module: HiGHS's "Unknown" status for the first ``n`` calls (all: None)."""

    def __init__(self, n=None):
        self.n, self.calls = n, []

    def __call__(self, *args, **kwargs):
        self.calls.append(kwargs.get("method"))
        if self.n is None or len(self.calls) <= self.n:
            from scipy.optimize import OptimizeResult
            return OptimizeResult(status=4, x=None, fun=None, success=False,
                                  message="(HiGHS Status 15: model_status is Unknown)")
        return linprog(*args, **kwargs)


def test_an_unknown_status_is_retried_with_another_method(monkeypatch):
    prior, d = _near_independent(0)
    pc = prior.sum(0)
    delta = float(pc @ d.min(1)) + 0.3 * float(pc @ (d.max(1) - d.min(1)))
    fail = _Failing(1)
    monkeypatch.setattr(_lp, "linprog", fail)
    res = solve_mapping(prior, d, delta, leakage="maximal_leakage")
    assert len(fail.calls) >= 2 and fail.calls[1] != fail.calls[0]
    _certified(res, prior)
    monkeypatch.undo()
    assert abs(res.leakage - _ref_ml_bits(prior, d, delta)) <= res.certificate["gap_bits"] + 1e-7


def test_when_highs_solves_nothing_auto_returns_the_best_feasible_mapping_with_a_warning(monkeypatch):
    rng = np.random.default_rng(5)
    prior = rng.dirichlet(np.ones(12)).reshape(3, 4)
    d = rng.uniform(0, 1, (4, 4))
    np.fill_diagonal(d, 0.0)
    pc = prior.sum(0)
    delta = 0.5 * float(pc @ d.max(1))
    monkeypatch.setattr(_lp, "linprog", _Failing())
    with pytest.warns(ConvergenceWarning, match="not certified"):
        res = solve_mapping(prior, d, delta, leakage="maximal_leakage")
    assert res.status == "inaccurate"
    assert res.distortion <= delta * (1 + 1e-12)
    np.testing.assert_allclose(res.mapping.sum(1), 1.0)
    # no worse than the cheapest mapping (always within the budget)
    assert res.leakage <= maximal_leakage(prior, np.eye(4)) + 1e-12
    # target mode: a feasible mapping (the constant one meets every target)
    with pytest.warns(ConvergenceWarning, match="not certified"):
        tgt = solve_mapping(prior, d, max_leakage=0.1, leakage="maximal_leakage")
    assert tgt.status == "inaccurate" and maximal_leakage(prior, tgt.mapping) <= 0.1 + 1e-12
    # an explicit solver still raises
    with pytest.raises(SolverError):
        solve_mapping(prior, d, delta, leakage="maximal_leakage", solver="fast")


def test_the_maximal_leakage_curve_on_a_distortion_spanning_16_decades_keeps_every_point():
    from privrelease.mapping import privacy_distortion_curve

    prior, d, dmin = _span_instance(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        curve = privacy_distortion_curve(prior, d, [dmin, 2 * dmin, 1.0, np.inf], leakage="maximal_leakage")
    assert list(curve["status"]) == ["optimal"] * 4
    ml = curve["leakage_bits"].to_numpy()
    assert np.all(np.diff(ml) <= 1e-9)
    assert ml[1] == pytest.approx(_ref_ml_bits(prior, d, 2 * dmin, excess=True), abs=1e-7)
