"""Hostile inputs, tenth audit: the money side at float64's limits (auction payments and guarantees, contracts,
the truthful regression's payments, whose float computation overflowed, underflowed or cancelled though the true
values are in range), ridge with a tiny alpha, and the accountant shared by threads or entered twice. One test per
finding (earlier audits: test_hostile_inputs.py to test_hostile_inputs9.py)."""

import warnings
from fractions import Fraction

import numpy as np
import pytest


# ---------------------------------------------------------------- auctions at float64's limits
def _exact_cost(v, w, selected, i):
    """``v_i eps_i`` with ``eps_i = |w_i| / (W - w(O))``, in exact arithmetic."""
    a = [abs(Fraction(float(x))) for x in w]
    rest = sum(a) - sum(a[j] for j in np.flatnonzero(selected))
    return Fraction(float(v[i])) * a[i] / rest


@pytest.mark.parametrize("v, w, B", [
    # B / w([k]) overflowed: payments inf (the budget "spent" was inf)
    ([1e-150, np.inf, 8.5e307, 0.0], [2e-310, 0.0, 2e-300, 2e-300], 1.7e308),
    # v_{k+1} / (W - w([k])) = 2e-450 underflowed to 0: three individuals bought and paid 0
    ([1e-300, 0.0, 1.7e308, 0.0, 9.9e-324], [5e149, 1e150, 2e-300, 1e150, 1e150], 1e150),
    ([3e-150, 1e-150, 0.0, 2e-150, 1e-300], [8.5e307, 0.0, 8.5e307, 1e-310, 5e299], 1.0),
    # a_i v_i = 1e-310 * 5e-324 underflowed to 0 <= B (W - a_i) = 0: bought at zero budget, paid 0 below her cost
    ([5e-324, 1e-300], [1e-310, 5e-324], 0.0),
    ([1.7e308, 1.5e-323], [2e-310, 5e-311], 0.0),
    # W = sum |w_i| beyond float64: every float comparison was meaningless (paid 0, below cost)
    ([0.0, np.inf, 5e-151, np.inf, 5e-301], [8.5e307, -1.7e308, -1.7e308, 2e300, 1.7e308], 1e-150),
])
def test_auction_payments_are_the_exact_mechanisms_at_float64s_limits(v, w, B):
    from privrelease.auctions import fair_inner_product
    from privrelease.auctions._reference import fair_inner_product_reference

    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # no overflow warning either
        res = fair_inner_product(v, w, B)
    ref = fair_inner_product_reference(v, w, B, exact=True)
    assert res.branch == ref["branch"]
    np.testing.assert_array_equal(res.selected, ref["selected"])
    np.testing.assert_allclose(res.payments, ref["payments"], rtol=1e-12, atol=0)
    assert np.all(np.isfinite(res.payments)) and np.all(res.payments >= 0)
    assert sum(Fraction(float(p)) for p in res.payments) <= Fraction(B) * (1 + Fraction(1, 10**12))
    for i in np.flatnonzero(res.selected):   # individually rational, up to rounding (below 5e-324 is 0)
        cost = _exact_cost(v, w, res.selected, i)
        assert Fraction(float(res.payments[i])) >= cost * (1 - Fraction(1, 10**12)) - Fraction(5e-324)


@pytest.mark.parametrize("v, w, B", [
    ([0.0, 2e-150], [2e150, 5e-301], 1.7e308),            # i* bought: eps = 2e150 / 5e-301
    ([0.0, 0.0, 2.0, 0.0, 0.0], [-1.7e308, 1.7e308, -5e-324, -1.7e308, 0.0], 1e-150),  # greedy, W beyond float64
])
def test_auction_guarantee_beyond_float64_is_inf_not_an_overflow_error(v, w, B):
    # the exact fallback raised "OverflowError: integer division result too large for a float"
    from privrelease.auctions import fair_inner_product

    res = fair_inner_product(v, w, B)
    assert res.selected.any()
    assert np.all(np.isinf(res.epsilons[res.selected]))   # |w_i| / (W - w(O)) > 1.8e308
    assert np.all(np.isfinite(res.payments)) and res.payments.sum() <= B


# ---------------------------------------------------------------- truthful regression at float64's limits
@pytest.mark.parametrize("offset, scale, n, match", [
    (1e308, 1e308, 6, r"payment_offset=1e\+308 and payment_scale=1e\+308: a payment could reach inf"),
    (1e307, 0.0, 100, r"payment_offset=1e\+307 and payment_scale=0\.0: the 100 payments together could reach"),
])
def test_payments_beyond_float64_are_refused_before_the_mechanism_runs(offset, scale, n, match):
    # payments_ held inf (offset + scale * B overflowed) and budget_ was inf
    from privrelease.regression import TruthfulRegressionMechanism, brier_payment

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    mech = TruthfulRegressionMechanism(payment_offset=offset, payment_scale=scale, random_state=0)
    with pytest.raises(ValueError, match=match):
        mech.fit(X, np.zeros(n))
    assert not hasattr(mech, "coef_")
    if n == 6:
        with pytest.raises(ValueError, match=r"offset=1e\+308 and scale=1e\+308: a payment could reach inf"):
            brier_payment(0.5, 0.5, scale=scale, offset=offset)


def test_ridge_with_a_tiny_alpha_and_fewer_players_than_features_is_the_ridge_estimator():
    # X^T X + alpha I solved by elimination: LinAlgError "Singular matrix" (n = 4 < d = 6, alpha = 1e-100)
    from privrelease.exceptions import PrivacyLeakWarning
    from privrelease.regression import TruthfulRegressionMechanism

    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 6))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.uniform(-1, 1, 4)
    with pytest.warns(PrivacyLeakWarning, match="adds no noise"):
        mech = TruthfulRegressionMechanism(alpha=1e-100, epsilon=np.inf, random_state=0).fit(X, y)
    # the limit alpha -> 0 of ridge is the minimum-norm least-squares solution
    np.testing.assert_allclose(mech.coef_, np.linalg.pinv(X) @ y, rtol=1e-9)
    for g in (0, 1):
        Xg, yg = X[mech.group_ == g], y[mech.group_ == g]
        np.testing.assert_allclose(mech.group_coef_[g], np.linalg.pinv(Xg) @ yg, rtol=1e-9)
    # every player's direction lies in the span of the peer rows or not: factors in [0, 1]
    assert np.all((mech.best_response_factors_ >= -1e-12) & (mech.best_response_factors_ <= 1 + 1e-12))


# ---------------------------------------------------------------- contracts at float64's limits
def _exact_accuracy(c):
    return (sum((1 - Fraction(float(x))) / 2 for x in c.a)) ** 2 + 2 * Fraction(float(c.b)) ** 2


@pytest.mark.parametrize("valuations, K, most", [
    # s* = 0.5 / (1 + 1e-17) rounded to sqrt(K) = 0.5: K - s*^2 = 0, the only segment skipped (SolverError)
    ([1.0, 1e-17], 0.25, 2e-8),
    # the optimal segment skipped the same way: a contract paying 3.27 where 1.3e-8 buys the same accuracy
    ([3.0, 1e-17, 2.0], 1.0, 1e-7),
    ([5e149, 1e-8, 5e-151, 2.0], 0.25, 5e75),
])
def test_linear_contract_near_the_end_of_a_segment_is_the_cheapest(valuations, K, most):
    from privrelease.contracts import design_contract

    c = design_contract(valuations, K)
    assert _exact_accuracy(c) <= Fraction(K) * (1 + Fraction(1, 10**12))
    assert np.all((c.a >= 0) & (c.a <= 1)) and c.b > 0
    assert np.all(c.payments >= 0) and c.total_payment <= most


def test_linear_contract_at_an_accuracy_just_below_a_segment_end_has_its_noise_to_full_precision():
    # one seller, K = 1/4 (1 - 1e-12): b came from K - s^2, which cancels (b off by 1e-4 relative, and the
    # payment with it)
    from privrelease.contracts import design_contract

    for K in (0.25 * (1 - 1e-12), 0.25 * (1 - 1e-9)):
        c = design_contract([1.0], K)
        assert _exact_accuracy(c) <= Fraction(K) * (1 + Fraction(1, 10**12))
        # the optimum: a = 1 - 4K, b^2 = K (1 - 4K) / 2 (s* = 2K)
        np.testing.assert_allclose(c.a, [1 - 4 * K], rtol=1e-12)
        np.testing.assert_allclose(c.b, np.sqrt(K * (1 - 4 * K) / 2), rtol=1e-12)


@pytest.mark.parametrize("call, match", [
    # failed its own incentive check (SolverError "IC violated"): payments of a bit or two
    (lambda m: m.design_menu(1e-323, 1e-323, 1e-300, 0.25), r"v_low must be a normal float64 number .*got 1e-323"),
    (lambda m: m.design_menu(5e-324, 5e-324, 0.3, 0.1, cost="exponential"), r"got 5e-324: payments"),
    (lambda m: m.design_contract([1.0, 5e-324], 0.5), r"valuations must be normal .*got 5e-324 at index 1"),
    (lambda m: m.unbiased_contract([3e-320], 0.5), r"got 3e-320"),
])
def test_subnormal_valuations_are_refused_naming_them(call, match):
    from privrelease import contracts

    with pytest.raises(ValueError, match=match):
        call(contracts)


def test_the_smallest_normal_valuations_still_get_a_menu():
    from privrelease import contracts

    tiny = float(np.finfo(np.float64).tiny)
    menu = contracts.design_menu(tiny, tiny, 0.5, 0.25)
    assert menu is not None
    c = contracts.design_contract([tiny, 1.0], 0.5)
    assert np.all(np.isfinite(c.payments)) and np.all(c.payments >= 0)


# ---------------------------------------------------------------- threads sharing an accountant
def test_concurrent_predictions_never_take_an_individual_past_the_epsilon_cap():
    # each predict read the ledger, ran its auctions and recorded later: two threads read the same ledger,
    # both bought the same individuals, and took them to twice their cap
    import threading

    from privrelease.accounting import PrivacyAccountant
    from privrelease.auctions import DCLEFEstimator

    barrier = threading.Barrier(2)

    class Interleaved(DCLEFEstimator):
        def _run_query(self, w, spent):
            try:                         # both threads inside, with the ledger they read, if the code lets them
                barrier.wait(timeout=1.0)
            except threading.BrokenBarrierError:
                pass
            return super()._run_query(w, spent)

    rng = np.random.default_rng(0)
    Y = rng.normal(size=(200, 3))
    d = np.clip(np.round(3 + Y[:, 0]), 1, 5)
    acc = PrivacyAccountant()
    cap = 0.06                                           # one query: eps_i up to 1/19
    est = Interleaved(budget=50.0, n_neighbors=20, data_range=(1, 5), epsilon_cap=cap, accountant=acc,
                      random_state=0).fit(Y, d, unit_costs=rng.exponential(size=200) * 0.01)
    q = rng.normal(size=(1, 3))
    threads = [threading.Thread(target=est.predict, args=(q,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(acc) == 2
    one = acc.individual_epsilons(est.population_).toarray()
    assert one[0].max() > cap / 2                        # one query alone brings someone past half the cap
    assert est.epsilon_spent().max() <= cap * (1 + 1e-12)


# ---------------------------------------------------------------- benchmark auctions at float64's limits
@pytest.mark.parametrize("v, w, B", [
    # v_i a_i and B (W - w(H)) both beyond float64: inf <= inf made a set paying 1e450 on a budget of 1e300 the optimum
    ([1e150, 1.0, 1e300, 1e-300, 1e300], [-1e-150, 0.0, 1e300, 1e300, 1e150], 1e300),
    # eps_i = 1e300 / 1e-150 beyond float64: the free individual's payment 0 * inf was NaN
    ([0.0, 5e-324, 1e-150, 1e-300], [-1e300, -1e-150, 1e-300, -1e-300], 1e150),
    # an individual of infinite cost bought (inf <= inf)
    ([1e-150, np.inf, 1.7e308, 1e150], [-1.0, -5e-324, -1e300, 1e150], 1.7e308),
])
def test_the_optimal_dclef_is_affordable_at_float64s_limits(v, w, B):
    from privrelease.auctions import optimal_dclef

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = optimal_dclef(v, w, B)
    assert not np.any(np.isinf(v) & res.selected)
    assert np.all(np.isfinite(res.payments)) and np.all(res.payments >= 0)
    assert sum(Fraction(float(p)) for p in res.payments) <= Fraction(B) * (1 + Fraction(1, 10**11))
    for i in np.flatnonzero(res.selected):                 # paid at cost, exactly rounded
        assert float(_exact_cost(v, w, res.selected, i)) == res.payments[i]


@pytest.mark.parametrize("name", ["optimal_dclef", "fractional_dclef"])
def test_benchmark_auctions_refuse_weights_whose_total_is_beyond_float64(name):
    # fractional_dclef: "zero-size array to reduction operation maximum which has no identity"
    from privrelease import auctions

    with pytest.raises(ValueError, match=r"weights sum to inf in absolute value \(largest 1\.7e\+308\)"):
        getattr(auctions, name)([1.0, 2.0, 3.0], [1.7e308, -1.7e308, 1.0], 1.0)


# ---------------------------------------------------------------- truthful regression's payments at float64's limits
def test_brier_payment_on_a_scale_near_float64s_max_is_the_payment_not_nan():
    # (t + Y) / (2 Y) overflowed: NaN
    from privrelease.regression import brier_payment

    Y = 1e308
    got = brier_payment([Y, -Y, 0.0, Y], [-Y, -Y, 0.0, 0.5 * Y], response_bound=Y)
    np.testing.assert_allclose(got, [0.0, 1.0, 0.75, 1.0 - 0.25**2], rtol=1e-15)
    # the payment does not depend on the unit: the same reports in units of Y
    np.testing.assert_allclose(got, brier_payment([1.0, -1.0, 0.0, 1.0], [-1.0, -1.0, 0.0, 0.5]), rtol=1e-15)


def test_a_schedule_whose_payments_overflow_names_its_constants():
    # OverflowError: (34, 'Numerical result out of range') from epsilon ** 2
    from privrelease.regression import parameter_schedule

    with pytest.raises(ValueError, match=r"cost_threshold=1e\+308 and epsilon_constant=1e\+308: the payment offset"):
        parameter_schedule(10**6, 2, epsilon_constant=1e308, cost_threshold=1e308)


# ---------------------------------------------------------------- ridge with a tiny alpha
@pytest.mark.parametrize("alpha", [1e-300, 1e-30])
def test_ridge_weights_with_a_tiny_alpha_are_the_ridge_limit(alpha):
    # Y^T Y + alpha I solved by elimination: weights far from the limit (more features than individuals),
    # or LinAlgError "Singular matrix" (collinear features)
    from privrelease.auctions import ridge_weights

    rng = np.random.default_rng(0)
    Y, q = rng.normal(size=(3, 6)), rng.normal(size=6)
    np.testing.assert_allclose(ridge_weights(Y, q, alpha), q @ np.linalg.pinv(Y), rtol=1e-9)
    Yc = np.ones((5, 2))                                   # two identical features
    np.testing.assert_allclose(ridge_weights(Yc, [1.0, 1.0], alpha), np.full(5, 0.2), rtol=1e-12)


def test_a_ridge_dclef_estimator_on_collinear_features_with_a_tiny_alpha_predicts():
    from privrelease.accounting import PrivacyAccountant
    from privrelease.auctions import DCLEFEstimator

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 1))
    Y = np.hstack([x, x])                                  # collinear
    d = np.clip(np.round(3 + x[:, 0]), 1, 5)
    est = DCLEFEstimator(budget=5.0, predictor="ridge", alpha=1e-300, data_range=(1, 5),
                         accountant=PrivacyAccountant(), random_state=0).fit(Y, d)
    W = est.auction_weights(Y[:2])
    np.testing.assert_allclose(W, Y[:2] @ np.linalg.pinv(Y), rtol=1e-9, atol=1e-15)
    assert np.all(np.isfinite(est.predict(Y[:2])))


def test_truthful_regression_on_collinear_features_with_a_tiny_alpha_is_the_ridge_limit():
    from privrelease.exceptions import PrivacyLeakWarning
    from privrelease.regression import TruthfulRegressionMechanism

    rng = np.random.default_rng(2)
    x = rng.uniform(-0.5, 0.5, size=(30, 1))
    X = np.hstack([x, x])
    y = np.clip(0.8 * x[:, 0], -1, 1)
    with pytest.warns(PrivacyLeakWarning, match="adds no noise"):
        mech = TruthfulRegressionMechanism(alpha=1e-30, epsilon=np.inf, random_state=0).fit(X, y)
    np.testing.assert_allclose(mech.coef_, np.linalg.pinv(X) @ y, rtol=1e-9)
    np.testing.assert_allclose(mech.best_response_factors_, 1.0, rtol=1e-9)   # no shrinkage left


# ---------------------------------------------------------------- the accountant as a context
def test_an_accountant_entered_twice_restores_the_default_it_replaced():
    # with acc: with acc: -- the inner block overwrote the saved default; the outer exit raised AttributeError
    # and left acc the default accountant for good
    import pickle

    from privrelease.accounting import PrivacyAccountant, get_default_accountant

    before = get_default_accountant()
    acc, other = PrivacyAccountant(epsilon=1.0), PrivacyAccountant()
    with acc:
        with other:
            with acc:
                assert get_default_accountant() is acc
                copy = pickle.loads(pickle.dumps(acc))       # a copy does not carry this process's defaults
            assert get_default_accountant() is other
        assert get_default_accountant() is acc
    assert get_default_accountant() is before
    with copy:
        assert get_default_accountant() is copy
    assert get_default_accountant() is before


# ---------------------------------------------------------------- contracts: the numeric search over the noise
def test_a_callable_cost_contract_finds_a_small_optimal_noise():
    # the search over b started at b_max / 200: with valuations far apart the optimum lies below (b about
    # sqrt(K v_min / v_max)) and a cost linear in eps paid 1.9 times the closed form's optimum for v = (1, 1e-6)
    from privrelease.contracts import design_contract

    valuations, K = [1.0, 1e-6], 0.25
    closed = design_contract(valuations, K)
    numeric = design_contract(valuations, K, cost=lambda v, e: v * e)
    assert numeric.b < np.sqrt(K / 2) / 200
    np.testing.assert_allclose(numeric.total_payment, closed.total_payment, rtol=1e-6)
    assert _exact_accuracy(numeric) <= Fraction(K) * (1 + Fraction(1, 10**7))
