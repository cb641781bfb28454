"""Regressions found by ``benchmarks/bench_solver_families.py`` (instance families beyond the
stress suite), each checked against an independent plain cvxpy formulation."""

import math

import cvxpy as cp
import numpy as np

from privrelease.mapping import leakage, privacy_distortion_curve, solve_mapping
from privrelease.mapping import expected_distortion, squared_euclidean_distortion


def _independence_lp(prior, d):
    """Smallest expected distortion of a mapping with I(A; C_hat) = 0: J(a, j) = p(a) q(j)."""
    pa, pc = prior.sum(axis=1), prior.sum(axis=0)
    X = cp.Variable(d.shape, nonneg=True)
    q = pc @ X
    cons = [cp.sum(X, axis=1) == 1,
            prior @ X == cp.reshape(pa, (pa.size, 1), order="C") @ cp.reshape(q, (1, d.shape[1]), order="C")]
    pr = cp.Problem(cp.Minimize(cp.sum(cp.multiply(pc[:, None] * d, X))), cons)
    pr.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return pr.value


def test_perfect_privacy_with_rare_inputs():
    # two inputs of mass 7e-10 and 5e-8: in the mapping variables their independence coefficients
    # p(c) (p(a | c) - p(a)) fell below HiGHS's 1e-9 drop threshold, and the LP was declared
    # infeasible (the curve said perfect privacy was unreachable; max_leakage=0 raised SolverError)
    post = np.array([[0.06, 0.47, 0.037, 0.82], [0.94, 0.53, 0.963, 0.18]])
    pc = np.array([0.51, 6.9e-10, 0.49, 4.8e-8])
    prior = post * pc / (post * pc).sum()
    X = np.array([[0.0, 0.0], [0.9, 0.2], [0.3, -0.1], [0.5, 0.1]])
    d = squared_euclidean_distortion(X)
    ref = _independence_lp(prior, d)
    curve = privacy_distortion_curve(prior, d, [float(d.max())])
    assert math.isclose(curve.attrs["perfect_privacy_delta"], ref, rel_tol=1e-7)
    res = solve_mapping(prior, d, max_leakage=0.0)
    assert res.status == "optimal"
    assert leakage(prior, res.mapping) <= 1e-12
    np.testing.assert_allclose(res.mapping.sum(axis=1), 1.0, atol=1e-12)
    assert math.isclose(expected_distortion(prior, res.mapping, d), ref, rel_tol=1e-7)


def test_tiny_target_with_independent_prior():
    # p(a, c) = p(a) p(c): every mapping leaks 0 bits, so the answer to any target is the cheapest
    # mapping. Rounding leaves I(A; C) ~ 1e-16 bits, and targets between 0 and that rounding
    # (1e-20, 1e-16 bits) raised SolverError with solver="auto" ("could not decide")
    rng = np.random.default_rng(3)
    prior = np.outer(rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(16)))
    d = 0.1 + squared_euclidean_distortion(rng.normal(size=(16, 2)))
    d_min = float(prior.sum(axis=0) @ d.min(axis=1))
    for target in (1e-20, 1e-16, 1e-9):
        res = solve_mapping(prior, d, max_leakage=target)
        assert res.status == "optimal"
        assert leakage(prior, res.mapping) <= 1e-12
        np.testing.assert_allclose(res.mapping.sum(axis=1), 1.0, atol=1e-12)
        assert math.isclose(expected_distortion(prior, res.mapping, d), d_min, rel_tol=1e-9)
