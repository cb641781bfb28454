"""Hostile inputs for the auctions, DCLEFs, contracts and truthful regression at their numerical edges (fifteenth
audit): subset sums on the privacy threshold, noise scales beyond float64, budgets exceeded by rounding, norms that
overflow, pandas labels and integers beyond float64. Each test checks a property or an independent exact computation
(fractions, brute force)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from privrelease.auctions import DCLEF, fair_inner_product, fractional_dclef, optimal_dclef, privacy_index


# ---------------------------------------------------------------- privacy index: sums exactly on the threshold
def _privacy_index_brute(eps, w, threshold=0.5):
    """``max w(H)`` over every subset with ``sum eps_i < threshold`` in exact rationals (the floats as given)."""
    ef = [None if math.isinf(e) else Fraction(e) for e in map(float, eps)]
    t, best = Fraction(float(threshold)), Fraction(0)
    n = len(ef)
    for r in range(n + 1):
        for S in itertools.combinations(range(n), r):
            if any(ef[i] is None for i in S):
                continue
            if sum((ef[i] for i in S), Fraction(0)) < t:
                best = max(best, sum((Fraction(abs(float(w[i]))) for i in S), Fraction(0)))
    return float(best) if best <= Fraction(np.finfo(np.float64).max) else math.inf


@pytest.mark.parametrize("eps, w, expected", [
    ([0.1, 0.25, 0.15, 0.4], [1, 1, 1, 1], 2.0),           # 0.1 + 0.25 + 0.15 is 0.5 exactly, not below it
    ([0.25, 0.1, 0.15], [1, 1, 1], 2.0),
    ([0.1] * 5, [1] * 5, 4.0),                             # 5 fl(0.1) exceed 1/2 by 2.8e-17
    ([0.15, 0.35], [1, 1], 2.0),                          # below 1/2 exactly, 0.5 in floating point
])
def test_privacy_index_does_not_count_sets_whose_epsilons_sum_exactly_to_the_threshold(eps, w, expected):
    assert privacy_index(eps, w) == expected == _privacy_index_brute(eps, w)


def test_dclef_privacy_index_of_an_estimator_on_the_threshold():
    # eps = (0.1, 0.25, 0.15, 0.4, 0): {0, 1, 2} sums to 1/2 exactly, so beta = 4.0 + max(1.6, 1.0 + 0.6) = 5.6
    est = DCLEF([0.4, 1.0, 0.6, 1.6, 4.0], [1, 1, 1, 1, 0], (0, 1))
    assert est.privacy_index() == pytest.approx(5.6) == _privacy_index_brute(est.epsilons, est.weights)


def test_privacy_index_agrees_with_exact_brute_force_on_random_and_decimal_instances():
    rng = np.random.default_rng(150)
    decimals = np.array([0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 1 / 3, 1 / 6, 0.7, np.inf])
    for t in range(700):
        n = int(rng.integers(1, 8))
        kind = t % 4
        if kind == 0:
            eps = rng.choice(decimals, n)
        elif kind == 1:     # decimal-looking values next to tiny ones: several limbs of exact digits
            eps = rng.choice(decimals[:9], n) * rng.choice([1.0, 1.0, 1e-20, 3e-300], n)
        elif kind == 2:
            eps = rng.exponential(0.2, n)
        else:               # one sum placed on the threshold in floating point
            eps = rng.uniform(0, 0.3, n)
        w = rng.choice([1.0, 2.0, 0.5, 3.0], n) * rng.choice([-1, 1], n)
        thr = float(rng.choice([0.5, 0.6, 0.7, 1.0, 0.3]))
        if kind == 3 and n >= 2:
            thr = float(np.sum(eps[: int(rng.integers(1, n + 1))]))
        assert privacy_index(eps, w, threshold=thr) == pytest.approx(_privacy_index_brute(eps, w, thr),
                                                                     rel=1e-12), (eps.tolist(), w.tolist(), thr)


def test_privacy_index_does_not_depend_on_the_order_of_the_individuals():
    rng = np.random.default_rng(151)
    eps = np.array([0.1, 0.25, 0.15, 0.4, 0.05, 0.2, 0.3, 0.1, 0.15, 0.35])
    w = np.ones(10)
    expected = _privacy_index_brute(eps, w)
    for _ in range(30):
        p = rng.permutation(10)
        assert privacy_index(eps[p], w[p]) == expected


def test_privacy_index_of_many_equal_epsilons_whose_float_sum_rounds_onto_the_threshold():
    # 20 fl(0.1) sum to 2 + 1.1e-16 exactly, so 19 individuals at most; the float sums are all equal to 2.0
    assert Fraction(0.1) * 20 > 2
    assert privacy_index(np.full(24, 0.1), np.ones(24), threshold=2.0) == 19.0
    assert privacy_index(np.full(24, 0.125), np.ones(24), threshold=2.0) == 15.0   # exact sums: 16 on it



def test_privacy_index_of_many_decimal_epsilons_matches_the_exact_greedy_count():
    # equal weights: beta is the largest number of individuals whose smallest eps sum below the threshold exactly
    rng = np.random.default_rng(154)
    for t in range(12):
        n = int(rng.integers(20, 31))
        eps = rng.choice([0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35], n)
        thr = float(rng.choice([0.5, 1.0, 1.5, 2.0, 0.7]))
        if t % 2:           # on the float sum of the k smallest: exactly on, above or below it
            thr = float(np.cumsum(np.sort(eps))[int(rng.integers(3, 10))])
        total, count = Fraction(0), 0
        for e in sorted(map(Fraction, eps.tolist())):
            if total + e >= Fraction(thr):
                break
            total, count = total + e, count + 1
        assert privacy_index(eps, np.ones(n), threshold=thr) == count

# ---------------------------------------------------------------- DCLEF guarantees when the noise scale overflows
def _eq8(w, x):
    """eq. (8) in exact rationals, correctly rounded: ``|w_i| x_i / sum_j |w_j| (1 - x_j)``."""
    a = [abs(Fraction(float(t))) for t in w]
    xs = [Fraction(float(t)) for t in x]
    rest = sum((ai * (1 - xi) for ai, xi in zip(a, xs)), Fraction(0))
    return [float(ai * xi / rest) for ai, xi in zip(a, xs)]


@pytest.mark.parametrize("w, x, data_range", [
    ([1e308] * 3, [1, 0, 0], (0, 1)),                  # residual weight 2e308 overflows
    ([1.0, 1.0, 1.0], [1, 0, 0], (0, 1e308)),          # Delta * residual overflows
    ([1e10, 1e-290], [1, 0], (0, 1e300)),              # Delta |w_0| overflows, sigma = 1e10 does not
    ([1.7e308, 1.7e308, 3.0], [1, 0.5, 0], (-1.0, 1.0)),
])
def test_dclef_guarantees_are_those_of_eq8_whatever_the_scale(w, x, data_range):
    est = DCLEF(w, x, data_range)
    assert est.epsilons.tolist() == _eq8(w, x)
    assert est.privacy_index() == pytest.approx(_privacy_index_brute(est.epsilons, np.abs(w)))


def test_dclef_guarantees_with_a_given_scale_beyond_the_products_range():
    # eps_0 = Delta |w_0| / sigma = 1e308 * 10 / 1e308 = 10: the product 1e309 overflowed to inf
    est = DCLEF([10.0, 1.0], [1, 0], (0, 1e308), sigma=1e308)
    assert est.epsilons.tolist() == [float(Fraction(1e308) * 10 / Fraction(1e308)), 0.0]


def test_dclef_refuses_a_canonical_scale_that_rounds_into_the_subnormals():
    # sigma = 1.5e-323 * 0.4 = 6e-324 rounds to 5e-324: the noise had eps = 3, eq. (8) and the auction said 2.5
    res = fair_inner_product([0, 0, 0, 0], [1, 1, 1, 0.4], 1.0, data_range=(0.0, 1.5e-323))
    assert res.epsilons[:3].tolist() == [2.5] * 3
    with pytest.raises(ValueError, match=r"sigma = Delta \* residual_weight = 1\.5e-323 \* 0\.4 rounds to 5e-324"):
        res.to_dclef()
    with pytest.raises(ValueError, match="below the smallest normal float64"):
        DCLEF([1.0, 1.0], [1, 0], (0.0, 5e-324))       # 5e-324 * 1 is exact but subnormal
    # a normal scale (however small its factors) is kept, and its guarantees are those of eq. (8)
    est = DCLEF([1.0, 1.0, 1.0, 0.4], [1, 1, 1, 0], (0.0, 1e-300))
    assert est.sigma == 1e-300 * 0.4 and est.epsilons.tolist() == _eq8([1, 1, 1, 0.4], [1, 1, 1, 0])


# ---------------------------------------------------------------- optimal DCLEF: payments within the budget, exactly
def _exact_sum(x):
    return sum((Fraction(float(t)) for t in x), Fraction(0))


def _exactly_feasible(v, w, B, sel):
    """``sum_H v_i |w_i| <= B (W - w(H))`` and ``W - w(H) > 0`` in exact rationals."""
    a = [abs(Fraction(float(t))) for t in w]
    rest = sum((ai for ai, s in zip(a, sel) if not s), Fraction(0))
    paid = sum((Fraction(float(vi)) * ai for vi, ai, s in zip(v, a, sel) if s), Fraction(0))
    return rest > 0 and paid <= Fraction(float(B)) * rest


def test_optimal_dclef_refuses_a_set_over_budget_by_less_than_the_old_tolerance():
    # {0} costs 2 (1 + 1e-13) * 1 against B (W - 1) = 2: over budget, bought and paid 1.0000000000001 before
    res = optimal_dclef([2 * (1 + 1e-13), 100, 100], [1, 1, 1], 1.0)
    assert not res.selected.any() and res.total_payment == 0.0
    assert res.violates_assumption.tolist() == [True, True, True]


@pytest.mark.parametrize("n, B", [(10, 1.0), (4, 1 / 3), (7, 0.4), (12, 0.2), (6, 0.1)])
def test_optimal_dclef_on_tight_equal_instances_pays_at_most_the_budget_exactly(n, B):
    # ones(10), budget 1: five individuals, each paid fl(0.2); five fl(0.2) sum to 1 + 5.6e-17 exactly
    res = optimal_dclef(np.ones(n), np.ones(n), B, rtol=0.0)
    k = max(k for k in range(n) if Fraction(k) <= Fraction(B) * (n - k))     # exact optimum of equal weights
    assert res.selected.sum() == k
    assert _exact_sum(res.payments) <= Fraction(B)


def test_optimal_dclef_payments_fit_the_budget_exactly_on_random_instances():
    rng = np.random.default_rng(152)
    for t in range(1000):
        n = int(rng.integers(2, 7))
        if t % 2:
            v = rng.integers(0, 5, n) / rng.integers(1, 4)
            w = rng.integers(1, 4, n).astype(float)
            B = float(rng.integers(1, 10) / rng.integers(1, 7))
        else:
            v, w, B = rng.exponential(size=n), rng.normal(size=n), float(rng.exponential(2))
        res = optimal_dclef(v, w, B)
        assert _exact_sum(res.payments) <= Fraction(B), (v.tolist(), w.tolist(), B)
        assert _exactly_feasible(v, w, B, res.selected) or not res.selected.any()
        assert not (res.selected & res.violates_assumption).any()
        # the exact optimum over every subset, in rationals
        best = max((sum(abs(w[list(S)])) for r in range(n) for S in itertools.combinations(range(n), r)
                    if _exactly_feasible(v, w, B, [i in S for i in range(n)])), default=0.0)
        assert res.value == pytest.approx(best, rel=1e-12)


def test_optimal_dclef_milp_answer_is_exactly_feasible():
    rng = np.random.default_rng(153)
    for t in range(6):
        m = 18
        a = rng.integers(1, 20, m).astype(float) if t % 2 else np.ones(m)
        v = rng.choice([0.5, 1.0, 2.0], m) if t % 2 else np.full(m, 1 + 1e-13)   # many sets a hair over budget
        B = float(rng.choice([0.5, 1.0, 2.0]))
        mi = optimal_dclef(v, a, B, method="milp")
        bf = optimal_dclef(v, a, B, method="brute_force")
        assert mi.value == bf.value
        assert _exactly_feasible(v, a, B, mi.selected)
        assert _exact_sum(mi.payments) <= Fraction(B)


def test_optimal_dclef_rtol_is_validated():
    with pytest.raises(ValueError, match="rtol must be >= 0, got -1e-12"):
        optimal_dclef([1.0, 2.0], [1.0, 1.0], 1.0, rtol=-1e-12)


# ---------------------------------------------------------------- truthful regression: a row whose norm overflows
@pytest.mark.filterwarnings("ignore::privrelease.exceptions.PrivacyLeakWarning")
@pytest.mark.parametrize("row, unit", [([3e200, 4e200], [0.6, 0.8]), ([-3e300, 4e300], [-0.6, 0.8]),
                                       ([1.2e308, -1.6e308], [0.6, -0.8])])
def test_clipping_scales_a_row_whose_norm_overflows_to_unit_norm(row, unit):
    # ||row|| = 5e200 overflowed when numpy squared the entries: the row was divided by inf and became 0
    from privrelease.regression import TruthfulRegressionMechanism

    rest = [[0.6, 0.8], [0.6, -0.8], [1.0, 0.0]]
    y = np.array([1.0, 0.5, -0.5, 0.2])
    def fit(X):
        return TruthfulRegressionMechanism(alpha=1.0, epsilon=np.inf, clip=True, random_state=0).fit(X, y)

    huge, ref = fit(np.array([row] + rest)), fit(np.array([unit] + rest))
    assert huge.n_clipped_ == 1
    np.testing.assert_allclose(huge.coef_, ref.coef_, rtol=1e-12)
    assert np.all(np.isfinite(huge.best_response_factors_))


# ---------------------------------------------------------------- pandas vectors paired by label, not position
def _labelled():
    import pandas as pd

    v = pd.Series({"alice": 0.1, "bob": 5.0, "carol": 0.2, "dave": 0.3})
    w = pd.Series({"bob": 3.0, "alice": 1.0, "carol": 1.0, "dave": 1.0})
    return v, w


@pytest.mark.parametrize("call", [
    lambda v, w: fair_inner_product(v, w, 1.0),
    lambda v, w: optimal_dclef(v, w, 1.0),
    lambda v, w: fractional_dclef(v, w, 1.0),
    lambda v, w: privacy_index(v, w),
])
def test_auctions_refuse_labelled_vectors_in_another_order(call):
    v, w = _labelled()
    # by position, alice (cost 0.1) got bob's weight 3 and was bought alone; by label she, carol and dave are
    with pytest.raises(ValueError, match=r"weights is indexed differently from (unit_costs|epsilons) \(the same "
                                         r"labels in another order: row 0 is 'alice' in .* but 'bob' in weights\)"):
        call(v, w)
    aligned = call(v, w.reindex(v.index))
    by_position = call(v.to_numpy(), w.reindex(v.index).to_numpy())
    assert aligned == by_position if np.isscalar(aligned) else np.array_equal(aligned.x, by_position.x)


def test_fair_inner_product_of_aligned_labelled_vectors_buys_by_label():
    v, w = _labelled()
    res = fair_inner_product(v, w.reindex(v.index), 1.0)
    assert res.selected.tolist() == [True, False, True, True]


def test_dclef_and_brier_payment_refuse_labelled_vectors_in_another_order():
    import pandas as pd

    from privrelease.regression import brier_payment

    v, w = _labelled()
    with pytest.raises(ValueError, match=r"x is indexed differently from weights"):
        DCLEF(w, pd.Series({"alice": 1, "bob": 0, "carol": 0, "dave": 0}), (0, 1))
    with pytest.raises(ValueError, match=r"prediction is indexed differently from outcome"):
        brier_payment(pd.Series([1.0, -1.0], index=[0, 1]), pd.Series([-1.0, 1.0], index=[1, 0]))
    # the same labels in the same order, or a default index on one side, are paired as given
    assert brier_payment(pd.Series([1.0, -1.0]), pd.Series([1.0, -1.0])).tolist() == [1.0, 1.0]
    assert DCLEF(w, np.array([0, 1, 0, 0]), (0, 1)).epsilons.tolist() == [0.0, 1 / 5, 0.0, 0.0]


# ---------------------------------------------------------------- integers beyond float64 in vectors
@pytest.mark.parametrize("call, name", [
    (lambda: fair_inner_product([10**400, 1], [1, 1], 1.0), "unit_costs"),
    (lambda: fair_inner_product([1, 1, 1], [1, 10**400, 1], 1.0), "weights"),
    (lambda: privacy_index([0.1, 10**400], [1, 1]), "epsilons"),
    (lambda: optimal_dclef([1, 2], [1, -10**400], 1.0), "weights"),
])
def test_auction_vectors_refuse_integers_beyond_float64_with_a_message(call, name):
    with pytest.raises(ValueError, match=rf"{name} must be finite numbers, got a number of 13\d\d bits at index "
                                         r"\d, beyond the float64 range"):
        call()


def test_contract_vectors_refuse_integers_beyond_float64_with_a_message():
    from privrelease.contracts import BiasedLaplaceMechanism, design_contract, privacy_cost

    with pytest.raises(ValueError, match=r"valuations must be finite numbers, got a number of 1329 bits at index 0"):
        design_contract([10**400, 1.0], 0.5)
    with pytest.raises(ValueError, match=r"valuation must be finite, got a number of 1329 bits, beyond the float64"):
        privacy_cost(10**400, 1.0)
    with pytest.raises(ValueError, match=r"epsilon must be finite numbers, got a number of 1329 bits at index 1"):
        privacy_cost(1.0, [1, 10**400])
    with pytest.raises(ValueError, match=r"weights a must be finite numbers, got a number of 1329 bits at index 0"):
        BiasedLaplaceMechanism([10**400], 1.0)
    # a large int inside float64's range is still a number
    assert privacy_cost(10**300, 1.0) == 1e300
