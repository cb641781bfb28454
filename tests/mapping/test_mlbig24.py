"""The maximal-leakage target mode's dual LP (``_lp.maximal_leakage_target_multipliers``) on a tall instance.

The dual LP has one row per allowed entry and ``|A|`` columns per output; HiGHS's own choice for it, the dual
simplex, works with a basis of the rows' size: at k = 425, k_hat = 566, |A| = 9 (205,308 rows) it was stopped by
its time limit without multipliers, and a target certified without them took 171 s CPU, 89 s of them in that LP.
Above ``_lp.DUAL_IPM_ROWS`` rows it is solved by the interior point (with its crossover). The multipliers and the
vertex complementary to them must still be the optimum's, against an independent LP (``ml_target_reference``), and
within a time limit the dual simplex does not meet.
"""

import math
import warnings

import numpy as np
import pytest
from shared_helpers import ml_target_reference  # tests/shared_helpers.py

from privrelease.mapping import _lp, _solver, solve_mapping


def _tall(seed, k, na=9):
    """|A| = na classes (one of mass 1e-6), a quarter of the inputs of probability 0, Chebyshev distance of 2-D
    points; the target 0.3 of the cheapest mapping's maximal leakage (bits)."""
    rng = np.random.default_rng([seed, 2410])
    prior = rng.dirichlet(np.full(na * k, 0.5)).reshape(na, k)
    prior[:, rng.choice(k, size=k // 4, replace=False)] = 0.0
    prior[0] *= 1e-6 / prior[0].sum()
    prior[1:] *= (1 - 1e-6) / prior[1:].sum()
    X = rng.normal(size=(k, 2))
    d = np.abs(X[:, None] - X[None]).max(axis=2)
    pa = prior.sum(axis=1)
    cheapest = np.eye(k)[d.argmin(axis=1)]
    target = 0.3 * math.log2(((prior @ cheapest) / pa[:, None]).max(axis=0).sum())
    return prior, d, target


def _dual(prior, d, target):
    prob, _ = _solver._presolved_problem(*_solver._check_problem(prior, d, "maximal_leakage", "auto"))
    lp_bits = math.log2(2.0 ** target * (1 - _solver.LP_TARGET_RTOL))
    _, info = _lp.solve_maximal_leakage_lp(prob, target_bits=lp_bits, bound_bits=target)
    scale = info["lp_objective"] - prob.delta_min
    return prob, _lp.maximal_leakage_target_multipliers(prob, target, scale, vertex_bits=lp_bits)


def _dual_bounds_the_optimum(prior, d, target):
    """The dual LP's multipliers, checked: a bound (weak duality) within 1e-6 of the optimum's distance to the
    smallest distortion (the independent ``ml_target_reference``). Returns ``(prob, (lam, nu, x), ref, dmin)``."""
    ref, dmin = ml_target_reference(prior, d, target)
    prob, out = _dual(prior, d, target)
    assert out is not None
    lam, nu, _ = out
    lb = prob.to_user(_lp.maximal_leakage_distortion_bound(prob, lam, nu, target, 1.0))
    assert ref - 1e-6 * (ref - dmin) <= lb <= ref * (1 + 1e-12)
    return prob, out, ref, dmin


def _ml_bits(prior, M):
    pa = prior.sum(axis=1)
    return math.log2(max(float(((prior @ M) / pa[:, None]).max(axis=0).sum()), 1.0))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_dual_lps_multipliers_and_vertex_are_the_independent_optimum(seed):
    prior, d, target = _tall(seed, 40)
    prob, (_, _, x), ref, dmin = _dual_bounds_the_optimum(prior, d, target)
    # the vertex complementary to them: a mapping within the target at the optimum
    assert x is not None and x.min() >= 0.0
    full = prob.expand(prob.from_edges(x))
    assert np.abs(full.sum(axis=1) - 1.0).max() <= 1e-12
    assert _ml_bits(prior, full) <= target + 1e-12
    dist = float((prior.sum(axis=0)[:, None] * d * full).sum())
    assert abs(dist - ref) <= 1e-6 * (ref - dmin)


def test_the_dual_lp_finishes_within_a_time_limit_the_dual_simplex_does_not_meet(monkeypatch):
    # k = 120 inputs of positive mass, k_hat = 160, |A| = 9: 19,360 rows, 1,409 columns. The interior point: 29
    # iterations, 0.6 s CPU; HiGHS's dual simplex: 42,258 iterations, 12 s CPU. Every LP of the engine limited to
    # 5 s (wall: a loaded machine slows both)
    prior, d, target = _tall(3, 160)
    monkeypatch.setattr(_lp, "HIGHS_TIME_LIMIT_FLOOR", 5.0)
    monkeypatch.setattr(_lp, "HIGHS_SECONDS_PER_NONZERO", 0.0)
    _dual_bounds_the_optimum(prior, d, target)


@pytest.mark.parametrize("seed", [0, 4])
def test_the_answer_is_certified_and_the_independent_optimum(seed):
    prior, d, target = _tall(seed, 40)
    ref, dmin = ml_target_reference(prior, d, target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(prior, d, max_leakage=target, leakage="maximal_leakage", solver="fast")
    assert res.status == "optimal"
    assert _ml_bits(prior, res.mapping) <= target + 1e-12
    assert abs(res.distortion - ref) <= 1e-6 * (ref - dmin) + res.certificate["distortion_tolerance"]
