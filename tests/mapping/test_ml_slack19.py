"""Maximal leakage near its floor: tiny targets and budgets a hair above the smallest, against independent LPs.

* Targets below ~1.4e-6 bits. ``sum_j max_a p(j | a) <= 2^target`` has a right-hand side within HiGHS's absolute
  feasibility tolerance (1e-7) of 1, which every mapping meets: the LP answered the cheapest mapping (5e-7 above 1
  where 4.6e-7 were allowed), and the pull-back's partner at ``2^target (1 - 1e-6) < 1`` did not exist, so the answer
  was mixed with the perfect-privacy mapping (a distortion 60 times the optimum's, warned). The LP is now written
  in the slack form ``z_j = p(j | a0) + u_j``, ``sum_j u_j <= 2^target - 1``, in units of that slack.
* A budget a hair above the smallest with tied cheapest outputs and a distortion spanning 16 decades: the LP's answer
  came back 1e-7 .. 3.9e-7 bits (once 0.036 bits) above the bound (warned), above the optimum at the smallest
  budget, which is feasible there (9 of 450 budgets of seeds 0 .. 149 at the smallest, 1 + 1e-13 and 1 + 1e-9 times
  it; all 9 at 1 + 1e-9).

The references are LPs written here from the definitions: the slack form in the target's units (scipy's HiGHS at
tolerances of 1e-10), and the LP over each row's cheapest entries (the feasible set at the smallest budget).
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog
from shared_helpers import ml_target_reference, nearly_independent  # tests/shared_helpers.py

from privrelease.exceptions import ConvergenceWarning
from privrelease.mapping import _lp, _solver, maximal_leakage, solve_mapping

TIGHT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def _ref_at_smallest_budget(prior, d):
    """min log2 sum_j max_a p(j | a) over the mappings supported on each row's cheapest entries (the feasible set at
    the smallest budget, ties within 1e-12 relative), epigraph form."""
    na, k = prior.shape
    kh = d.shape[1]
    n = k * kh
    pa = prior.sum(1)
    cheapest = (d <= d.min(1, keepdims=True) * (1 + 1e-12)).ravel()
    rows = [sp.hstack([sp.kron(sp.csr_matrix(prior[a][None, :] / pa[a]), sp.identity(kh)), -sp.identity(kh)])
            for a in range(na)]
    A_eq = sp.hstack([sp.kron(sp.identity(k), np.ones((1, kh))), sp.csr_matrix((k, kh))], format="csr")
    bounds = [(0, None) if ok else (0, 0) for ok in cheapest] + [(0, None)] * kh
    res = linprog(np.concatenate([np.zeros(n), np.ones(kh)]), A_ub=sp.vstack(rows, format="csr"),
                  b_ub=np.zeros(na * kh), A_eq=A_eq, b_eq=np.ones(k), bounds=bounds, method="highs", options=TIGHT)
    assert res.status == 0, res.message
    return float(np.log2(res.fun))


def _tied_span(seed):
    """Distortions spanning 1e-8 .. 1e8, one to three cheapest entries tied per row, two duplicated outputs."""
    rng = np.random.default_rng(seed)
    k, na, kh = int(rng.integers(6, 25)), int(rng.integers(2, 5)), int(rng.integers(4, 10))
    prior = rng.dirichlet(np.ones(na * k)).reshape(na, k)
    d = 10.0 ** rng.uniform(-8, 8, (k, kh))
    d[np.arange(k), rng.integers(0, kh, k)] = 10.0 ** rng.uniform(-8, -6, k)
    for c in range(k):
        d[c, rng.choice(kh, int(rng.integers(1, 4)), replace=False)] = d[c].min()
    d = np.hstack([d, d[:, rng.integers(0, kh, 2)]])
    return prior, d, float(prior.sum(0) @ d.min(1))


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return solve_mapping(*args, **kwargs)


# the instances of the random hunt (nearly independent priors, squared index distances) that were warned, with a
# distortion 1.0 .. 60 times the optimum's distance to the smallest distortion
NEAR_ZERO = [(130, 4, 21, 2.05e-7, 1.67e-8), (166, 4, 31, 4.76e-7, 6.62e-7), (189, 3, 23, 3.65e-7, 6.95e-8),
             (196, 2, 36, 4.66e-6, 8.10e-7), (137, 3, 36, 1.26e-6, 5.10e-8)]


@pytest.mark.parametrize("seed,na,k,eps,target", NEAR_ZERO)
def test_a_target_below_the_budget_rows_tolerance_is_certified_at_the_independent_optimum(seed, na, k, eps, target):
    prior, d = nearly_independent(seed, na=na, k=k, eps=eps)
    ref, dmin = ml_target_reference(prior, d, target)
    res = _quiet(prior, d, max_leakage=target, leakage="maximal_leakage")
    assert res.status == "optimal", res.certificate
    assert maximal_leakage(prior, res.mapping) <= target
    cert = res.certificate
    # the bound is a bound, and the answer is the optimum to the certified tolerance (1e-3 of its distance to the
    # smallest distortion)
    assert cert["distortion_lower_bound"] <= ref * (1 + 1e-9)
    assert res.distortion - ref <= cert["distortion_tolerance"] + 1e-12 * ref
    assert res.distortion - ref <= 1e-3 * (ref - dmin)


@pytest.mark.parametrize("seed,na,k,eps,target", NEAR_ZERO[:3])
def test_the_slack_form_bound_at_the_lps_multipliers_is_the_optimum_and_random_multipliers_stay_below(
        seed, na, k, eps, target):
    prior, d = nearly_independent(seed, na=na, k=k, eps=eps)
    ref, dmin = ml_target_reference(prior, d, target)
    prob, _ = _solver._presolved_problem(prior, d)
    _, info = _lp.solve_maximal_leakage_lp(prob, target_bits=target)
    # a bound, within a small share of the certificate's tolerance (1e-3 of the distance to the smallest distortion)
    # of the optimum (HiGHS's multipliers meet the dual constraints to its tolerances only)
    lb = prob.to_user(info["lower_bound"])
    assert ref - 1e-5 * (ref - dmin) <= lb <= ref * (1 + 1e-12)
    # weak duality: any multipliers, any unit
    rng = np.random.default_rng(seed)
    for unit in (1.0, math.expm1(target * math.log(2.0))):
        for scale in (1e-3, 1.0, 1e3):
            lam = scale * rng.exponential(size=(prob.M.shape[0], prob.kh))
            lb = _lp.maximal_leakage_distortion_bound(prob, lam, 0.0, target, unit)
            assert prob.to_user(lb) <= ref * (1 + 1e-12)


@pytest.mark.parametrize("seed", [4, 13, 65, 106])
def test_a_hair_above_the_smallest_budget_with_tied_outputs_is_certified(seed):
    prior, d, dmin = _tied_span(seed)
    at_min = _ref_at_smallest_budget(prior, d)
    delta = dmin * (1 + 1e-9)
    res = _quiet(prior, d, delta, leakage="maximal_leakage")
    assert res.status == "optimal", res.certificate
    assert res.certificate["gap_bits"] <= 1e-7
    assert res.distortion <= delta * (1 + 1e-12)
    # the optimum at the smallest budget is feasible here: the answer is no leakier than it (the LP's answer at this
    # budget was 1.1e-7 bits above it), and the bound no higher (it bounds every mapping within the budget)
    assert res.leakage <= at_min + 1e-12
    assert res.leakage - res.certificate["gap_bits"] <= at_min + 1e-12


@pytest.mark.parametrize("seed", [4, 13, 65, 106])
def test_at_the_smallest_budget_the_bound_is_the_optimum_over_the_cheapest_entries(seed):
    prior, d, dmin = _tied_span(seed)
    at_min = _ref_at_smallest_budget(prior, d)
    prob, _ = _solver._presolved_problem(prior, d)
    _, info = _lp.solve_maximal_leakage_lp(prob, delta=prob.delta_min)
    assert math.log2(info["lower_bound"]) == pytest.approx(at_min, abs=1e-9)
    res = _quiet(prior, d, dmin, leakage="maximal_leakage")
    assert res.status == "optimal" and res.leakage == pytest.approx(at_min, abs=1e-9)
    # carried to a budget a hair above, the same multipliers still bound (below the optimum there, which is at most
    # at_min) and stay within the certificate's 1e-7 bits of it
    delta = prob.to_internal(dmin * (1 + 1e-9))
    _, info = _lp.solve_maximal_leakage_lp(prob, delta=prob.delta_min, bound_delta=delta)
    assert at_min - 1e-7 <= math.log2(info["lower_bound"]) <= at_min + 1e-12
