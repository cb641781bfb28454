"""Contracts for private data (Khalili, Zhang, Liu): mechanism, full information, menus."""

import itertools

import numpy as np
import pytest

from privrelease.contracts import (
    BiasedLaplaceMechanism,
    design_contract,
    design_menu,
    privacy_cost,
    unbiased_contract,
)
from privrelease.exceptions import InfeasibleBudgetError

# ------------------------------------------------------------------ mechanism


def test_mechanism_privacy_accuracy_bias_table():
    mech = BiasedLaplaceMechanism([1.0, 0.4, 0.0], b=0.5)
    np.testing.assert_allclose(mech.epsilons, [2.0, 0.8, 0.0])
    assert mech.max_bias == pytest.approx(0.8)
    assert mech.accuracy == pytest.approx(0.8**2 + 2 * 0.25)
    d = np.array([0.2, 0.9, 0.3])
    assert mech.bias(d) == pytest.approx(0.6 * (0.5 - 0.9) + 1.0 * (0.5 - 0.3))
    u = BiasedLaplaceMechanism.unbiased(4, b=2.0)
    assert u.accuracy == pytest.approx(8.0) and u.bias(np.full(4, 0.7)) == 0.0
    np.testing.assert_allclose(u.epsilons, 0.5)


@pytest.mark.parametrize("d", [np.zeros(3), np.array([0.1, 0.8, 0.5])])
def test_accuracy_formula_against_monte_carlo(d):
    """MSE = bias^2 + 2 b^2; at the extreme D = 0 it equals K."""
    mech = BiasedLaplaceMechanism([0.9, 0.3, 0.6], b=0.4, random_state=0)
    out = mech.release(d, size=200_000)
    truth = d.sum()
    mse = np.mean((out - truth) ** 2)
    assert np.mean(out - truth) == pytest.approx(mech.bias(d), abs=0.005)
    assert np.var(out) == pytest.approx(2 * 0.4**2, rel=0.02)
    assert mse == pytest.approx(mech.mse(d), rel=0.02)
    assert mech.mse(d) <= mech.accuracy + 1e-12
    if not d.any():
        assert mech.mse(d) == pytest.approx(mech.accuracy)


def test_mechanism_noise_is_secure_by_default():
    a = BiasedLaplaceMechanism([1.0], b=1.0).release([0.5])
    b = BiasedLaplaceMechanism([1.0], b=1.0).release([0.5])
    assert a != b


def test_mechanism_bad_input():
    with pytest.raises(ValueError, match=r"weights a must lie in \[0, 1\], got 1.5"):
        BiasedLaplaceMechanism([0.5, 1.5], b=1.0)
    with pytest.raises(ValueError, match="b must be >= 0, got -1"):
        BiasedLaplaceMechanism([0.5], b=-1)
    with pytest.raises(ValueError, match="only allowed when every weight is 0"):
        BiasedLaplaceMechanism([0.5], b=0.0)
    mech = BiasedLaplaceMechanism([0.5, 0.5], b=1.0)
    with pytest.raises(ValueError, match=r"d_i must lie in \[0, 1\], got 2.0"):
        mech.release([0.1, 2.0])
    with pytest.raises(ValueError, match=r"shape \(2,\), got \(3,\)"):
        mech.release([0.1, 0.2, 0.3])


# ------------------------------------------------------------------ full information


def _brute_force_full_info(v, K, cost, a_steps=41, b_steps=400):
    """Minimum payment over a grid of (a, b) that meets the accuracy target."""
    n = len(v)
    grid = np.linspace(0, 1, a_steps)
    best = np.inf
    bs = np.linspace(1e-3, np.sqrt(K / 2), b_steps)
    for a in itertools.product(grid, repeat=n):
        a = np.array(a)
        bias2 = (np.sum(1 - a) / 2) ** 2
        if bias2 > K:
            continue
        b_ok = bs[bias2 + 2 * bs**2 <= K]
        if b_ok.size == 0:
            continue
        b = b_ok[-1]  # payments decrease in b: the largest feasible b is best for this a
        eps = np.where(a > 0, a / b, 0.0)
        best = min(best, float(privacy_cost(v, eps, cost).sum()))
    return best


@pytest.mark.parametrize("v, K", [([5.0, 10.0], 0.2), ([1.0, 3.0], 0.6), ([2.0, 2.5, 4.0], 0.9)])
def test_linear_closed_form_matches_brute_force(v, K):
    c = design_contract(v, K, cost="linear")
    steps = 41 if len(v) == 2 else 21
    brute = _brute_force_full_info(np.array(v), K, "linear", a_steps=steps)
    assert c.total_payment <= brute + 1e-9
    assert c.total_payment >= brute * 0.97
    assert c.accuracy == pytest.approx(K)
    np.testing.assert_allclose(c.payments, np.array(v) * c.a / c.b)


@pytest.mark.parametrize("K", [0.05, 0.3, 0.7])
def test_exponential_cost_matches_brute_force(K):
    v = np.array([5.0, 10.0])
    c = design_contract(v, K, cost="exponential")
    brute = _brute_force_full_info(v, K, "exponential")
    assert c.total_payment <= brute + 1e-9
    assert c.total_payment >= brute * 0.97
    np.testing.assert_allclose(c.payments, v * np.expm1(c.epsilons))


def test_numeric_path_agrees_with_linear_closed_form():
    v = np.array([1.0, 2.0, 7.0])
    for K in (0.1, 1.5):
        closed = design_contract(v, K, cost="linear")
        numeric = design_contract(v, K, cost=lambda val, eps: val * eps)
        assert numeric.total_payment == pytest.approx(closed.total_payment, rel=1e-5)


def test_single_seller_closed_form_and_pure_noise():
    """n = 1, c = v eps: a = 1 - 4K, b = sqrt((K - 4K^2)/2) when K < 1/4; pure noise above."""
    v = 3.0
    for K in (0.02, 0.1, 0.2):
        c = design_contract([v], K)
        assert c.a[0] == pytest.approx(1 - 4 * K)
        assert c.b == pytest.approx(np.sqrt((K - 4 * K**2) / 2))
        assert c.total_payment == pytest.approx(v * (1 - 4 * K) / np.sqrt((K - 4 * K**2) / 2))
        assert c.unbiased_payment == pytest.approx(v * np.sqrt(2 / K))
    for K in (0.25, 0.3, 2.0):
        c = design_contract([v], K)
        assert c.total_payment == 0.0 and c.a[0] == 0.0
        assert c.accuracy <= K + 1e-12


def test_pure_noise_when_accuracy_above_n_squared_over_4():
    c = design_contract([5.0, 10.0], 1.0, cost="exponential")
    assert c.total_payment == 0.0
    assert design_contract([5.0, 10.0], 0.99, cost="exponential").total_payment > 0.0


def test_biased_beats_unbiased_and_personalises_privacy():
    rng = np.random.default_rng(0)
    for _ in range(15):
        v = np.sort(rng.uniform(0.5, 10, size=rng.integers(2, 5)))
        K = rng.uniform(0.05, 1.0)
        for cost in ("linear", "exponential"):
            c = design_contract(v, K, cost=cost)
            u = unbiased_contract(v, K, cost=cost)
            assert c.total_payment <= u.total_payment * (1 + 1e-9)
            assert c.unbiased_payment == pytest.approx(u.total_payment)
            # higher valuation, no more privacy loss
            assert np.all(np.diff(c.epsilons) <= 1e-7)


def test_contract_mechanism_roundtrip():
    c = design_contract([1.0, 4.0], 0.3)
    mech = c.mechanism(random_state=0)
    assert mech.accuracy == pytest.approx(c.accuracy)
    np.testing.assert_allclose(mech.epsilons, c.epsilons)


def test_full_information_bad_input():
    with pytest.raises(ValueError, match=r"valuations must be finite and > 0, got -1.0 at index 1"):
        design_contract([2.0, -1.0], 0.5)
    with pytest.raises(InfeasibleBudgetError, match="accuracy K must be > 0"):
        design_contract([2.0], 0.0)
    with pytest.raises(TypeError, match="accuracy"):
        design_contract([2.0], "high")
    with pytest.raises(ValueError, match="cost must be 'linear'"):
        design_contract([2.0], 0.5, cost="quadratic")


# ------------------------------------------------------------------ menus


# rows of the 2-d LP below: G @ (p_H, p_L) >= h; its vertices are the solutions of the nonsingular row pairs
_G = np.array([[1, 0], [0, 1], [1, -1], [-1, 1], [1, 0], [0, 1]], dtype=float)
_PAIRS = np.array([(i, j) for i, j in itertools.combinations(range(len(_G)), 2)
                   if abs(np.linalg.det(_G[[i, j]])) >= 1e-12])


def _lp_min_payments(vl, vh, pi, e_h, e_l, weight, cost):
    """Least expected payment under IR + IC for fixed (eps_H, eps_L): vertex enumeration of the 2-d LP.

    The nonsingular row pairs are found once (_PAIRS) and their vertices solved in one stacked call (the same
    solves as one np.linalg.solve per pair); each of the four costs is computed once."""
    c = lambda v, e: float(privacy_cost(v, e, cost))  # noqa: E731
    c_hh, c_ll = c(vh, e_h), c(vl, e_l)
    h = np.array([c_hh, c_ll, c_hh - c(vh, e_l), c_ll - c(vl, e_h), 0, 0])
    p = np.linalg.solve(_G[_PAIRS], h[_PAIRS][:, :, None])[:, :, 0]
    feasible = np.all(p @ _G.T >= h - 1e-9, axis=1)
    if not feasible.any():
        return np.inf
    return float(np.min(weight * (pi * p[feasible, 0] + (1 - pi) * p[feasible, 1])))


def _brute_force_menu(vl, vh, pi, K, option, cost, steps=26, b_steps=120):
    weight = 2.0 if option == 1 else 1.0
    grid = np.linspace(0, 1, steps)
    best = np.inf
    bs = np.linspace(1e-3, np.sqrt(K / 2), b_steps)
    for a_h, a_l in itertools.product(grid, repeat=2):
        u, w = 1 - a_h, 1 - a_l
        if option == 1:
            q = pi**2 * u**2 + (1 - pi) ** 2 * w**2 + 2 * pi * (1 - pi) * ((u + w) / 2) ** 2
        else:
            q = pi * ((1 + u) / 2) ** 2 + (1 - pi) * ((1 + w) / 2) ** 2
        ok = bs[q + 2 * bs**2 <= K]
        if ok.size == 0:
            continue
        for b in ok[-3:]:  # payments decrease in b for fixed a: look at the largest ones
            e_h, e_l = a_h / b, a_l / b
            best = min(best, _lp_min_payments(vl, vh, pi, e_h, e_l, weight, cost))
    return best


@pytest.mark.parametrize("option, K, cost", [(1, 0.3, "linear"), (1, 0.55, "linear"),
                                             (2, 0.5, "linear"), (1, 0.4, "exponential")])
def test_menu_matches_brute_force(option, K, cost):
    vl, vh, pi = 1.0, 5.0, 0.5
    m = design_menu(vl, vh, pi, K, option=option, cost=cost)
    brute = _brute_force_menu(vl, vh, pi, K, option, cost)
    assert m.expected_payment <= brute + 1e-9
    assert m.expected_payment >= brute * 0.95


def test_ir_and_ic_hold_at_every_returned_menu():
    for option, pi, K, cost, (vl, vh) in itertools.product(
            (1, 2), (0.0, 0.3, 0.7, 1.0), (0.1, 0.4, 0.8, 1.2), ("linear", "exponential"),
            ((1.0, 5.0),)):
        if option == 2 and K <= 0.25:
            continue
        m = design_menu(vl, vh, pi, K, option=option, cost=cost)
        u = m.utilities()
        tol = 1e-8 * max(1.0, m.p_high, m.p_low)
        assert u[("high", "high")] >= -tol and u[("low", "low")] >= -tol  # IR
        assert u[("high", "high")] >= u[("high", "low")] - tol  # IC, high type
        assert u[("low", "low")] >= u[("low", "high")] - tol  # IC, low type
        assert m.accuracy <= K * (1 + 1e-7)
        assert m.eps_high <= m.eps_low + 1e-9
        assert 0 <= m.a_high <= 1 and 0 <= m.a_low <= 1
        if option == 1:
            assert m.expected_payment <= m.unbiased_payment * (1 + 1e-9)


def test_slides_menu_example_regimes():
    """v_H = 5, v_L = 1, pi = 0.5, linear cost: a menu for K <= 0.4, then a single
    contract only the low type accepts; pure noise from K = 1 (slides, 'Broker's decision')."""
    regimes = {K: design_menu(1.0, 5.0, 0.5, K).regime for K in (0.1, 0.3, 0.38, 0.42, 0.5, 0.6, 1.0)}
    assert regimes[0.1] == regimes[0.3] == regimes[0.38] == "menu"
    assert regimes[0.42] == regimes[0.5] == regimes[0.6] == "low type only"
    assert regimes[1.0] == "pure noise"
    m = design_menu(1.0, 5.0, 0.5, 0.3)
    assert m.eps_high < m.eps_low  # A_new tells types apart
    assert m.expected_payment < 0.7 * m.unbiased_payment  # and lowers the payment a lot


def test_equal_valuations_need_no_rent():
    m = design_menu(2.0, 2.0, 0.3, 0.2)
    assert m.p_low == pytest.approx(float(privacy_cost(2.0, m.eps_low)))


def test_menu_bad_input():
    with pytest.raises(ValueError, match=r"v_low <= v_high; got v_low=5.0 > v_high=1.0"):
        design_menu(5.0, 1.0, 0.5, 0.3)
    with pytest.raises(ValueError, match=r"valuations must be > 0, got v_low=-1"):
        design_menu(-1, 1.0, 0.5, 0.3)
    with pytest.raises(ValueError, match=r"prob_high must be <= 1.0, got 1.5"):
        design_menu(1.0, 5.0, 1.5, 0.3)
    with pytest.raises(ValueError, match=r"prob_high must be >= 0.0, got -0.1"):
        design_menu(1.0, 5.0, -0.1, 0.3)
    with pytest.raises(InfeasibleBudgetError) as err:
        design_menu(1.0, 5.0, 0.5, 0.2, option=2)
    assert err.value.smallest_feasible == 0.25
    assert "0.2" in str(err.value)
    with pytest.raises(InfeasibleBudgetError, match="accuracy K must be > 0: a mean squared error of -1 "):
        design_menu(1.0, 5.0, 0.5, -1)
    with pytest.raises(ValueError, match="option must be 1 .* got 3"):
        design_menu(1.0, 5.0, 0.5, 0.3, option=3)


def test_the_water_filling_stopped_early_is_bit_for_bit_the_80_step_one(monkeypatch):
    # the bisection stops once a step leaves every row's bracket as it was (speed of small design_contract
    # calls): the steps it skips would have changed nothing, so eps is the same floats, valuations 300 decades apart
    # included
    from privrelease.contracts import _design

    rng = np.random.default_rng(3)
    costs = ("exponential", "linear", lambda v, e: v * (e + e * e))
    cases = [(np.array([1.0, 1e-300]), 0.25), (np.array([1.0, 1e-150, 1e-300]), 1.0), (np.array([2.0, 3e-100]), 0.5)]
    cases += [(10.0 ** rng.uniform(-300, 2, n), float(rng.uniform(0.05, 1.0) * n * n / 4)) for n in (1, 2, 3, 5)]
    cases += [(rng.uniform(0.1, 10.0, n), float(rng.uniform(0.05, 1.0) * n * n / 4)) for n in (2, 4, 6)]
    for v, K in cases:
        bs = np.sqrt(K / 2) * np.concatenate([10.0 ** rng.uniform(-160, 0, 4), rng.uniform(0, 1, 4)])
        for cost in costs:
            c = _design._resolve_cost(cost)
            with np.errstate(all="ignore"):
                early = _design._water_fill(c, v, bs, K)
                monkeypatch.setattr(_design, "_STOP_FROM", 80)
                full = _design._water_fill(c, v, bs, K)
                monkeypatch.setattr(_design, "_STOP_FROM", 40)
            assert early.tobytes() == full.tobytes(), (v, K, cost)
