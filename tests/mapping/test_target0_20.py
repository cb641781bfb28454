"""Targets at (or a hair above) zero leakage on priors with rare public symbols, an unreachable maximal-leakage
target with solver="cvxpy", and budgets given as 0-d arrays or Decimals.

Every leakage is computed here from its definition (not by the library): the maximal leakage
``log2 sum_j max_a p(j | a)`` and the mutual information ``sum J log2(J / (p(a) q(j)))``.
"""

import math
import warnings
from decimal import Decimal

import numpy as np
import pytest

from privrelease.exceptions import ConvergenceWarning, InfeasibleBudgetError, SolverError
from privrelease.mapping import privacy_distortion_curve, solve_mapping

EPS = np.finfo(float).eps


def ml_bits(prior, mapping):
    """Maximal leakage from its definition (Issa et al.), bits."""
    cond = (prior @ mapping) / prior.sum(1)[:, None]
    return math.log2(max(float(cond.max(0).sum()), 1.0))


def mi_bits(prior, mapping):
    """I(A; C_hat) from its definition, bits (0 log 0 = 0)."""
    J = prior @ mapping
    ref = prior.sum(1)[:, None] * J.sum(0)[None, :]
    pos = J > 0
    return float((J[pos] * np.log2(J[pos] / ref[pos])).sum())


def distortion(prior, mapping, d):
    return float((prior.sum(0)[:, None] * np.where(mapping > 0, d, 0.0) * mapping).sum())


def cheapest_constant(prior, d):
    """The cheapest constant mapping (every input to one output allowed for all): exactly independent of A."""
    cost = np.where(np.isfinite(d).all(0), (prior.sum(0)[:, None] * np.where(np.isfinite(d), d, 0.0)).sum(0), np.inf)
    C = np.zeros(d.shape)
    C[:, int(np.argmin(cost))] = 1.0
    return C


def solve_recorded(*args, **kwargs):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = solve_mapping(*args, **kwargs)
    return r, [x for x in w if issubclass(x.category, ConvergenceWarning)]


# a public symbol of mass ~1e-12 (the hunt's repro_ml_tiny_symbol.py)
P_ML = np.array([[5.8805847640944008e-02, 1.0404856370200001e-04, 5.5000000000000005e-14],
                 [3.0004681649948106e-01, 6.4104328729481008e-01, 1.0080000000000001e-12]])
D_ML = np.array([[0.62, 0.35, 0.9], [0.94, 0.35, 0.09], [0.87, 0.66, 0.23]])


@pytest.mark.parametrize("solver", ["auto", "fast", "cvxpy"])
@pytest.mark.parametrize("target", [0.0, 1e-15, 1e-13])
def test_ml_target_near_zero_is_met_with_a_rare_symbol(solver, target):
    """An "optimal" answer meets the target up to the documented rounding (ROUNDING_ULPS = 4 ulps per input and
    output symbol of 2^target), and is no dearer than the constant mapping, which leaks exactly 0 (the perfect-
    privacy LP's mapping, 1.98e-13 bits, came back "optimal" for all three targets)."""
    r, w = solve_recorded(P_ML, D_ML, max_leakage=target, leakage="maximal_leakage", solver=solver)
    allowance = 4 * (P_ML.shape[1] + D_ML.shape[1]) * EPS * 2.0 ** target / math.log(2)
    assert r.status == "optimal" and not w
    assert ml_bits(P_ML, r.mapping) <= target + allowance
    C = cheapest_constant(P_ML, D_ML)
    assert ml_bits(P_ML, C) == 0.0
    assert r.distortion <= distortion(P_ML, C, D_ML) * (1 + 1e-12)


# public symbols of mass 2.8e-12 and 2.7e-11 (the hunt's repro_mi_target0_rare_inputs.py)
P_MI = np.array([[2.2669844731579846e-14, 5.7409430674106576e-12, 3.0169813474614271e-01],
                 [1.8115042015544284e-12, 1.8264458796153922e-11, 3.4231247834123006e-02],
                 [6.7711138757133644e-23, 6.2335652210940112e-23, 3.6037752806353011e-12],
                 [1.0148213045366253e-12, 3.2676458531894842e-12, 6.6407061738600848e-01]])
_inf = np.inf
D_MI = np.array([[0.4857491422956892, _inf, 0.2577209812990404, _inf, 0.47368863474950484],
                 [_inf, 0.09779097111466106, 0.6406919379698764, _inf, _inf],
                 [0.13897068408494118, 0.10136703985129003, 0.6323894126003353, _inf, _inf]])


def exact_private_optimum_mi():
    """The constant mapping to output 2 (allowed to every symbol): exactly independent of A, with distortion
    0.63239 (a perfect-privacy LP in the conditional form, each equation divided by its largest coefficient, finds
    it optimal: the rare symbols' conditionals differ between the classes and cannot make a mapping that sends the
    heavy symbol elsewhere independent)."""
    C = np.zeros(D_MI.shape)
    C[:, 2] = 1.0
    assert mi_bits(P_MI, C) == 0.0
    return C, distortion(P_MI, C, D_MI)


def test_mi_target_zero_with_rare_symbols_is_exactly_private_or_warned():
    """max_leakage=0 promises independence: the perfect-privacy LP's mapping, 6.6e-12 bits at distortion 0.101
    (the rows of symbols of mass 1e-11 under HiGHS's tolerance), came back "optimal" with no warning. Now
    "auto" returns an exactly private mapping (the cheapest constant one, distortion 0.632) and warns when the
    LP's multipliers cannot certify it; an explicit solver raises or returns an exactly private mapping."""
    C, d_exact = exact_private_optimum_mi()
    r, w = solve_recorded(P_MI, D_MI, max_leakage=0.0)
    assert mi_bits(P_MI, r.mapping) <= 1e-15
    assert r.distortion <= d_exact * (1 + 1e-12)
    if r.status == "optimal":
        assert not w
    else:
        assert r.status == "inaccurate" and w
    for solver in ("fast", "cvxpy"):
        try:
            r = solve_mapping(P_MI, D_MI, max_leakage=0.0, solver=solver)
        except SolverError:
            continue
        assert r.status == "optimal" and mi_bits(P_MI, r.mapping) <= 1e-15


@pytest.mark.parametrize("offset", [1e3, 1e6])
def test_the_constant_answers_certificate_holds_differences_not_the_offset(offset):
    """The certificate of that answer gives its gap and tolerance as distortion differences: the same for ``D`` and
    ``D + offset`` (the distortion's common offset was added to both, a gap of 1000.63 beside an answer 0.53 above
    its bound), and the gap is the answer less its lower bound."""
    r0, _ = solve_recorded(P_MI, D_MI, max_leakage=0.0)
    r1, _ = solve_recorded(P_MI, D_MI + offset, max_leakage=0.0)
    c0, c1 = r0.certificate, r1.certificate
    assert c0["distortion_gap"] == pytest.approx(r0.distortion - c0["distortion_lower_bound"], abs=1e-9)
    assert c1["distortion_gap"] == pytest.approx(c0["distortion_gap"], abs=1e-9 * offset)
    assert c1["distortion_tolerance"] == pytest.approx(c0["distortion_tolerance"], abs=1e-9 * offset)
    assert c1["distortion_lower_bound"] == pytest.approx(c0["distortion_lower_bound"] + offset, rel=1e-12)


def test_mi_target_below_rounding_with_rare_symbols_is_met():
    """A target of 1e-15 bits, below the leakage's rounding: answered as a target of 0, under the same rule."""
    r, w = solve_recorded(P_MI, D_MI, max_leakage=1e-15)
    assert mi_bits(P_MI, r.mapping) <= 1e-15
    assert r.status == "optimal" or w


def test_cvxpy_unreachable_ml_target_names_the_smallest():
    """Only the identity is allowed: its maximal leakage is log2(0.8 + 0.8) = log2(1.6) bits. Every solver raises
    InfeasibleBudgetError naming it (cvxpy raised SolverError "status 'infeasible'")."""
    P = np.array([[0.4, 0.1], [0.1, 0.4]])
    D = np.array([[0.0, np.inf], [np.inf, 0.0]])
    for solver in ("auto", "fast", "cvxpy"):
        with pytest.raises(InfeasibleBudgetError) as exc:
            solve_mapping(P, D, max_leakage=0.1, leakage="maximal_leakage", solver=solver)
        assert exc.value.smallest_feasible == pytest.approx(math.log2(1.6), rel=1e-9)
    # at the smallest value itself cvxpy answers with the identity
    r = solve_mapping(P, D, max_leakage=math.log2(1.6), leakage="maximal_leakage", solver="cvxpy")
    assert r.status == "optimal" and np.allclose(r.mapping, np.eye(2), atol=0)


PRIOR2 = np.array([[0.4, 0.1], [0.1, 0.4]])


@pytest.mark.parametrize("kw,value", [("delta", 0.1), ("max_leakage", 0.1), ("max_leakage", 0.0)])
@pytest.mark.parametrize("wrap", [np.array, lambda v: Decimal(repr(v)), lambda v: np.array(Decimal(repr(v)))])
def test_0d_array_and_decimal_budgets_are_their_number(kw, value, wrap):
    """A 0-d array and a Decimal give the float budget's answer (solve_mapping raised TypeError for both)."""
    d = 1.0 - np.eye(2)
    ref = solve_mapping(PRIOR2, d, **{kw: value})
    r = solve_mapping(PRIOR2, d, **{kw: wrap(value)})
    assert r.leakage == ref.leakage and r.distortion == ref.distortion
    assert getattr(r, kw) == value and type(getattr(r, kw)) is float


@pytest.mark.parametrize("bad,err", [(np.array([0.1]), TypeError), (np.array(True), TypeError),
                                     (np.array("0.1"), TypeError), (Decimal("NaN"), ValueError),
                                     (Decimal("sNaN"), ValueError), (Decimal("-0.1"), ValueError),
                                     (np.array(-0.1), ValueError)])
def test_bad_budgets_still_refused(bad, err):
    with pytest.raises(err, match="delta"):
        solve_mapping(PRIOR2, 1.0 - np.eye(2), delta=bad)


def test_curve_takes_decimal_budgets():
    d = 1.0 - np.eye(2)
    a = privacy_distortion_curve(PRIOR2, d, [Decimal("0.1"), Decimal("0.2")])
    b = privacy_distortion_curve(PRIOR2, d, [0.1, 0.2])
    assert a["leakage_bits"].tolist() == b["leakage_bits"].tolist()
    assert a["delta"].tolist() == [0.1, 0.2]
