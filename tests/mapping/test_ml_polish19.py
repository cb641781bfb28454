"""Maximal-leakage targets of 1e-9 .. 1e-5 bits on distortions spanning 16 decades, against independent LPs.

The answers were right but unproven (warned) on 52 of 73 seeds, for three reasons, each tested here:

* the LP solved again in units of its first answer was still 68 times the optimum there (3.8e-7 of its unit, within
  HiGHS's dual tolerance of 0): it is now solved again until its answer stays within 1e-3 of its unit;
* HiGHS's answer carried an entry at -4.6e-8 that, clipped, left the answer 1.2 .. 2.4 times the target's slack over
  the target: the vertex is recovered from the constraints active at that answer
  (``_lp.polish_maximal_leakage_target``) and checked to relative precision;
* the multipliers of the LP's leakage rows (written in units of the slack) are the slack times those of the rows
  ``p(j | a) - p(j | a0) <= u_j``, below HiGHS's dual tolerance, so their signs were noise and the bound the smallest
  distortion: the dual LP is solved with its multipliers of order 1 (``_lp.maximal_leakage_target_multipliers``).

The reference is the slack form written here from the definitions (scipy's HiGHS at tolerances of 1e-10, in units
of its own answer); the leakage of an answer is checked in exact rational arithmetic.
"""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from shared_helpers import ml_span_instance, ml_target_reference  # tests/shared_helpers.py

from privrelease.exceptions import ConvergenceWarning
from privrelease.mapping import _lp, _solver, maximal_leakage, solve_mapping

_span = ml_span_instance  # tests/shared_helpers.py


def _exact_slack(prior, mapping):
    """``sum_j max_a p(j | a) - 1`` of the mapping, exactly (rationals of the float inputs)."""
    na, k = prior.shape
    pa = [sum(Fraction(float(v)) for v in prior[a]) for a in range(na)]
    total = Fraction(0)
    for j in range(mapping.shape[1]):
        col = [Fraction(float(mapping[c, j])) for c in range(k)]
        total += max(sum(Fraction(float(prior[a, c])) * col[c] for c in range(k)) / pa[a] for a in range(na))
    return total - 1


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return solve_mapping(*args, **kwargs)


# seeds of the family that were warned, with their reason: 2, 26 (the second solve still 68 .. 1e4 times the
# optimum), 1, 38 (an entry at -4.6e-8 / -3.4e-8, the clipped answer over the target), 35, 37, 74 (the answer
# optimal, the leakage rows' multipliers noise), 204 (HiGHS's basis infeasible in exact arithmetic: its polish
# fails, the vertex complementary to the dual LP's multipliers is the answer)
WARNED = [0, 1, 2, 26, 35, 37, 38, 74, 204]


@pytest.mark.parametrize("seed", WARNED)
def test_a_target_on_a_sixteen_decade_distortion_is_certified_at_the_independent_optimum(seed):
    prior, d, target = _span(seed)
    ref, dmin = ml_target_reference(prior, d, target)
    res = _quiet(prior, d, max_leakage=target, leakage="maximal_leakage")
    assert res.status == "optimal", res.certificate
    assert maximal_leakage(prior, res.mapping) <= target
    assert _exact_slack(prior, res.mapping) <= Fraction(math.expm1(target * math.log(2.0)))
    cert = res.certificate
    # the bound is a bound, the answer is the optimum to 1e-3 of its distance to the smallest distortion (the
    # certificate's tolerance)
    assert cert["distortion_lower_bound"] <= ref * (1 + 1e-9)
    assert res.distortion - ref <= 1e-3 * (ref - dmin) + 1e-12 * ref
    assert res.distortion - cert["distortion_lower_bound"] <= cert["distortion_tolerance"]


@pytest.mark.parametrize("seed", [1, 38])
def test_the_polished_vertex_is_within_the_target_exactly_where_highs_answer_clipped_was_over_it(seed):
    prior, d, target = _span(seed)
    ref, dmin = ml_target_reference(prior, d, target)
    prob, _ = _solver._presolved_problem(*_solver._check_problem(prior, d, "maximal_leakage", "auto"))
    lp_bits = math.log2(2.0 ** target * (1 - _solver.LP_TARGET_RTOL))
    _, info = _lp.solve_maximal_leakage_lp(prob, target_bits=lp_bits, bound_bits=target)
    s = Fraction(math.expm1(target * math.log(2.0)))
    # HiGHS's answer had an entry below 0 (within its tolerance), over the target once clipped, until the re-solve
    # left out the entries costing above 1e6 answers (pplp19): the polish must still give the exact vertex
    out = _lp.polish_maximal_leakage_target(prob, info["lp_solution"], *info["lp_marginals"], lp_bits, target)
    assert out is not None
    x = out[0]
    assert x.min() >= 0.0
    P = prob.from_edges(x)
    assert np.abs(P.sum(1) - 1).max() <= 1e-15
    full = prob.expand(P)
    assert _exact_slack(prior, full) <= s
    dist = float((prior.sum(0)[:, None] * d * full).sum())
    assert abs(dist - ref) <= 1e-6 * (ref - dmin)


@pytest.mark.parametrize("seed", [1, 35, 37, 74])
def test_the_dual_lps_multipliers_bound_the_optimum_within_its_tolerance_where_the_lps_bound_nothing(seed):
    prior, d, target = _span(seed)
    ref, dmin = ml_target_reference(prior, d, target)
    prob, _ = _solver._presolved_problem(*_solver._check_problem(prior, d, "maximal_leakage", "auto"))
    lp_bits = math.log2(2.0 ** target * (1 - _solver.LP_TARGET_RTOL))
    _, info = _lp.solve_maximal_leakage_lp(prob, target_bits=lp_bits, bound_bits=target)
    # the LP's own multipliers (the slack times those of the unscaled rows) certified nothing here until the
    # re-solve's limited cost range (pplp19); the dual LP's, solved on their own, must bound the optimum either way
    scale = info["lp_objective"] - prob.delta_min
    lam, nu, _ = _lp.maximal_leakage_target_multipliers(prob, target, scale)
    lb = prob.to_user(_lp.maximal_leakage_distortion_bound(prob, lam, nu, target, 1.0))
    # the optimum to 1e-6 of its distance to the smallest distortion (charged each row its largest entry's rounding,
    # entries of 1e-2 against an optimum of 6e-14 above the smallest, the same multipliers bounded 3% less)
    assert ref - 1e-6 * (ref - dmin) <= lb <= ref * (1 + 1e-12)
    # weak duality: the same multipliers scaled any way stay below the optimum
    for f in (1e-3, 0.5, 2.0, 1e3):
        assert prob.to_user(_lp.maximal_leakage_distortion_bound(prob, f * lam, f * nu, target, 1.0)) <= ref * (
            1 + 1e-12)


def _exact_bound(prob, lam, nu, target_bits):
    """``sum_c min_j [w(c, j) + sum_a lam(a, j) (p(c | a) - p(c | a0))] - nu' s`` in rationals of the float inputs
    (``nu' = max(nu, max_j sum_a lam(a, j))``, ``s`` the float slack), the reference class the heaviest."""
    r, c, n = _lp._entries(prob)
    na = prob.M.shape[0]
    a0 = int(np.argmax(prob.pA))
    pA = [sum(Fraction(float(v)) for v in prob.M[a]) for a in range(na)]
    cond = [[Fraction(float(prob.M[a, i])) / pA[a] for i in range(prob.k)] for a in range(na)]
    lamq = [[Fraction(float(v)) for v in row] for row in lam]
    lamq[a0] = [Fraction(0)] * prob.kh
    w = prob.edge_weights()
    best = {}
    for e in range(n):
        i, j = int(r[e]), int(c[e])
        g = Fraction(float(w[e])) + sum(lamq[a][j] * (cond[a][i] - cond[a0][i]) for a in range(na))
        best[i] = g if i not in best else min(best[i], g)
    nuq = max(Fraction(float(nu)), max(sum(lamq[a][j] for a in range(na)) for j in range(prob.kh)))
    return sum(best.values()) - nuq * Fraction(math.expm1(target_bits * math.log(2.0)))


@pytest.mark.parametrize("seed", [1, 35])
def test_the_bound_charges_each_entry_its_own_rounding_and_stays_below_its_exact_value(seed):
    prior, d, target = _span(seed)
    prob, _ = _solver._presolved_problem(*_solver._check_problem(prior, d, "maximal_leakage", "auto"))
    lp_bits = math.log2(2.0 ** target * (1 - _solver.LP_TARGET_RTOL))
    _, info = _lp.solve_maximal_leakage_lp(prob, target_bits=lp_bits, bound_bits=target)
    lam, nu, _ = _lp.maximal_leakage_target_multipliers(prob, target, info["lp_objective"] - prob.delta_min)
    exact = _exact_bound(prob, lam, nu, target)
    lb = _lp.maximal_leakage_distortion_bound(prob, lam, nu, target, 1.0)
    # a bound on the exact value of the same multipliers, within 1e-9 of its distance to the smallest distortion
    # (each row charged its largest entry's rounding, it was 3% below on seed 1)
    assert Fraction(lb) <= exact
    assert float(exact - Fraction(lb)) <= 1e-9 * (float(exact) - prob.delta_min)


@pytest.mark.parametrize("seed", [137, 204])
def test_the_vertex_complementary_to_the_dual_lps_multipliers_is_the_optimum_where_highs_basis_is_infeasible(seed):
    prior, d, target = _span(seed)
    ref, dmin = ml_target_reference(prior, d, target)
    prob, _ = _solver._presolved_problem(*_solver._check_problem(prior, d, "maximal_leakage", "auto"))
    lp_bits = math.log2(2.0 ** target * (1 - _solver.LP_TARGET_RTOL))
    _, info = _lp.solve_maximal_leakage_lp(prob, target_bits=lp_bits, bound_bits=target)
    # HiGHS's basis here was infeasible in exact arithmetic (no feasible polish) until the re-solve's limited cost
    # range (pplp19); the vertex complementary to the dual LP's multipliers must be the optimum either way
    lam, nu, x = _lp.maximal_leakage_target_multipliers(prob, target, info["lp_objective"] - prob.delta_min,
                                                        vertex_bits=lp_bits)
    assert x is not None and x.min() >= 0.0
    full = prob.expand(prob.from_edges(x))
    assert np.abs(full.sum(1) - 1).max() <= 1e-15
    assert _exact_slack(prior, full) <= Fraction(math.expm1(target * math.log(2.0)))
    dist = float((prior.sum(0)[:, None] * d * full).sum())
    lb = prob.to_user(_lp.maximal_leakage_distortion_bound(prob, lam, nu, target, 1.0))
    assert lb <= ref * (1 + 1e-12)
    assert abs(dist - ref) <= 1e-6 * (ref - dmin)
    assert dist - lb <= 1e-6 * (ref - dmin)
