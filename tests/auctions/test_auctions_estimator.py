"""Linear-predictor weights (Sec. 5) and DCLEFEstimator."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.neighbors import KNeighborsRegressor

from privrelease.accounting import PrivacyAccountant, get_default_accountant
from privrelease.auctions import (
    DCLEF,
    DCLEFEstimator,
    fair_inner_product,
    knn_weights,
    nadaraya_watson_weights,
    ridge_weights,
)
from privrelease.exceptions import BudgetExceededError, PrivacyLeakWarning


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(60, 4))
    d = np.clip(np.round(3 + Y[:, 0] - 0.5 * Y[:, 1] + 0.3 * rng.normal(size=60)), 1, 5)
    Yq = rng.normal(size=(7, 4))
    costs = rng.exponential(size=60)
    return Y, d, Yq, costs


# ---------------------------------------------------------------- predictors

@pytest.mark.parametrize("alpha", [0.0, 0.1, 3.0])
def test_ridge_weights_reproduce_sklearn_ridge(data, alpha):
    Y, d, Yq, _ = data
    W = ridge_weights(Y, Yq, alpha=alpha)
    ref = (LinearRegression(fit_intercept=False) if alpha == 0
           else Ridge(alpha=alpha, fit_intercept=False)).fit(Y, d).predict(Yq)
    np.testing.assert_allclose(W @ d, ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ridge_weights(Y, Yq[0], alpha=alpha), W[0])
    assert (W < 0).any()  # ridge weights may be negative


@pytest.mark.parametrize("k", [1, 5, 60, 100])
def test_knn_weights_reproduce_kneighbors(data, k):
    Y, d, Yq, _ = data
    W = knn_weights(Y, Yq, n_neighbors=k)
    kk = min(k, 60)
    ref = KNeighborsRegressor(n_neighbors=kk).fit(Y, d).predict(Yq)
    np.testing.assert_allclose(W @ d, ref)
    assert np.all((W == 0) | np.isclose(W, 1 / kk))
    np.testing.assert_array_equal((W > 0).sum(axis=1), kk)


def test_nadaraya_watson_closed_form_and_limits(data):
    Y, d, Yq, _ = data
    h = 0.7
    W = nadaraya_watson_weights(Y, Yq, bandwidth=h)
    K = np.exp(-((Yq[:, None, :] - Y[None, :, :]) ** 2).sum(-1) / (2 * h * h))
    np.testing.assert_allclose(W, K / K.sum(1, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(W.sum(1), 1.0)
    # the paper's kernel exp(-||y - y'||^2) is bandwidth 1/sqrt(2)
    Kp = np.exp(-((Yq[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(nadaraya_watson_weights(Y, Yq, 2**-0.5), Kp / Kp.sum(1, keepdims=True))
    # small bandwidth -> 1-NN, large -> plain average
    np.testing.assert_allclose(nadaraya_watson_weights(Y, Yq, 1e-3), knn_weights(Y, Yq, 1), atol=1e-8)
    np.testing.assert_allclose(nadaraya_watson_weights(Y, Yq, 1e4), 1 / 60, rtol=1e-6)


@pytest.mark.parametrize("fn, kw, match", [
    (knn_weights, dict(n_neighbors=0), "n_neighbors must be >= 1"),
    (nadaraya_watson_weights, dict(bandwidth=0.0), "bandwidth must be > 0"),
    (ridge_weights, dict(alpha=-1.0), "alpha must be >= 0"),
])
def test_predictor_bad_parameters(data, fn, kw, match):
    Y, _, Yq, _ = data
    with pytest.raises(ValueError, match=match):
        fn(Y, Yq, **kw)
    with pytest.raises(ValueError, match="must have 4 features"):
        fn(Y, Yq[:, :3])


# ---------------------------------------------------------------- estimator

def test_estimator_records_the_auctions_on_the_accountant(data):
    Y, d, Yq, costs = data
    acc = PrivacyAccountant()
    est = DCLEFEstimator(budget=2.0, predictor="ridge", alpha=1.0, data_range=(1, 5),
                         accountant=acc, random_state=0).fit(Y, d, unit_costs=costs)
    before = dict(est.__dict__)
    pred = est.predict(Yq)
    assert est.__dict__.keys() == before.keys()
    assert all(est.__dict__[k] is before[k] for k in before)   # predict is pure
    assert pred.shape == (7,)
    W = ridge_weights(Y, Yq, alpha=1.0)
    pays, eps = acc.payments(est.population_), acc.individual_epsilons(est.population_)
    records = acc.population_records(est.population_)
    for q in range(7):
        res = fair_inner_product(costs, W[q], 2.0, data_range=(1, 5))
        np.testing.assert_allclose(pays[q].toarray()[0], res.payments)
        np.testing.assert_allclose(eps[q].toarray()[0], res.epsilons)
        assert records.loc[q, "distortion"] == pytest.approx(res.distortion)
        assert records.loc[q, "epsilon"] == pytest.approx(res.epsilons.max())   # max_i eps_i-DP
    np.testing.assert_allclose(est.epsilon_spent(), np.asarray(eps.sum(axis=0))[0])
    # sequential composition at data-set level: the sum of the per-query maxima
    assert acc.spent == pytest.approx(sum(fair_inner_product(costs, w, 2.0).epsilons.max() for w in W))
    assert records["total_payment"].sum() == pytest.approx(pays.sum())
    assert np.all(pays.sum(axis=1) <= 2.0 * (1 + 1e-12))
    est.predict(Yq[:2])
    assert acc.payments(est.population_).shape == (9, 60) and len(acc) == 9


def test_default_accountant_records_when_none_is_passed(data):
    Y, d, Yq, costs = data
    est = DCLEFEstimator(budget=2.0, data_range=(1, 5), random_state=0).fit(Y, d, unit_costs=costs)
    with PrivacyAccountant() as acc:
        assert get_default_accountant() is acc
        est.predict(Yq[:3])
    assert get_default_accountant() is not acc
    assert len(acc) == 3 and acc.populations() == [est.population_]
    np.testing.assert_allclose(est.epsilon_spent(acc),
                               np.asarray(acc.individual_epsilons(est.population_).sum(0))[0])
    # outside the block the default accountant is another one, which saw none of them
    np.testing.assert_array_equal(est.epsilon_spent(), np.zeros(60))
    assert est.epsilon_spent(acc).max() > 0


def test_accountant_budget_refuses_a_query_past_it(data):
    Y, d, Yq, costs = data
    W = knn_weights(Y, Yq[:1], 5)[0]
    per_query = fair_inner_product(costs, W, 5.0).epsilons.max()
    budget = 3.5 * per_query                    # room for exactly three queries
    acc = PrivacyAccountant(epsilon=budget)
    est = DCLEFEstimator(budget=5.0, data_range=(1, 5), accountant=acc,
                         random_state=0).fit(Y, d, unit_costs=costs)
    with pytest.raises(BudgetExceededError, match="release refused"):
        est.predict(np.repeat(Yq[:1], 10, axis=0))
    assert len(acc) == 3
    assert acc.spent == pytest.approx(3 * per_query)
    assert acc.remaining() == pytest.approx(0.5 * per_query)


def test_clone_shares_the_accountant(data):
    Y, d, Yq, costs = data
    acc = PrivacyAccountant()
    est = DCLEFEstimator(data_range=(1, 5), accountant=acc, random_state=0)
    twin = clone(est)
    assert twin.accountant is acc
    twin.fit(Y, d).predict(Yq)
    assert len(acc) == 7


def test_estimator_prediction_is_the_dclef_law(data):
    Y, d, Yq, costs = data
    est = DCLEFEstimator(budget=3.0, predictor="knn", n_neighbors=10, data_range=(1, 5),
                         accountant=PrivacyAccountant(), random_state=1).fit(Y, d, unit_costs=costs)
    reps = np.repeat(Yq[:1], 1500, axis=0)
    pred = est.predict(reps)
    w = knn_weights(Y, Yq[0], 10)
    dclef = DCLEF(w, fair_inner_product(costs, w, 3.0).x, (1, 5))
    assert pred.mean() == pytest.approx(dclef.mean(d), abs=5 * dclef.sigma * np.sqrt(2 / 1500))
    assert pred.var() == pytest.approx(2 * dclef.sigma**2, rel=0.2)


def test_estimator_is_secure_by_default_and_seeded_reproducible(data):
    Y, d, Yq, costs = data
    acc = PrivacyAccountant()
    a = DCLEFEstimator(data_range=(1, 5), accountant=acc, random_state=3).fit(Y, d).predict(Yq)
    b = DCLEFEstimator(data_range=(1, 5), accountant=acc, random_state=3).fit(Y, d).predict(Yq)
    np.testing.assert_array_equal(a, b)
    c = DCLEFEstimator(data_range=(1, 5), accountant=acc).fit(Y, d).predict(Yq)
    e = DCLEFEstimator(data_range=(1, 5), accountant=acc).fit(Y, d).predict(Yq)
    assert not np.array_equal(c, e)


def test_epsilon_cap_exclude_keeps_everyone_under_the_cap(data):
    Y, d, Yq, costs = data
    cap = 0.3
    acc = PrivacyAccountant()
    est = DCLEFEstimator(budget=5.0, predictor="knn", n_neighbors=5, data_range=(1, 5),
                         epsilon_cap=cap, accountant=acc, random_state=0).fit(Y, d, unit_costs=costs)
    est.predict(np.repeat(Yq[:2], 20, axis=0))
    est.predict(np.repeat(Yq[:2], 20, axis=0))       # the cap holds across calls
    spent = est.epsilon_spent()
    assert np.all(spent <= cap * (1 + 1e-9))
    assert acc.population_records(est.population_)["n_excluded"].max() > 0
    assert spent.max() > 0.5 * cap  # the cap binds
    # without a cap the same queries overspend
    free = DCLEFEstimator(budget=5.0, predictor="knn", n_neighbors=5, data_range=(1, 5),
                          accountant=acc, random_state=0).fit(Y, d, unit_costs=costs)
    free.predict(np.repeat(Yq[:2], 40, axis=0))
    assert free.epsilon_spent().max() > cap


def test_epsilon_cap_raise_refuses_and_keeps_earlier_queries(data):
    Y, d, Yq, costs = data
    acc = PrivacyAccountant()
    est = DCLEFEstimator(budget=5.0, predictor="knn", data_range=(1, 5), epsilon_cap=2.5,
                         cap_policy="raise", accountant=acc, random_state=0).fit(Y, d, unit_costs=costs)
    with pytest.raises(BudgetExceededError, match="above epsilon_cap=2.5"):
        est.predict(np.repeat(Yq[:1], 50, axis=0))
    answered = len(acc)
    assert 0 < answered < 50 and acc.payments(est.population_).shape[0] == answered
    assert np.all(est.epsilon_spent() <= 2.5 * (1 + 1e-9))


def test_data_range_inferred_with_warning_and_checked(data):
    Y, d, _, _ = data
    with pytest.warns(PrivacyLeakWarning, match="computed from the private"):
        est = DCLEFEstimator().fit(Y, d)
    assert est.data_range_ == (1.0, 5.0)
    with pytest.raises(ValueError, match="outside data_range"):
        DCLEFEstimator(data_range=(1, 4)).fit(Y, d)
    with pytest.raises(ValueError, match="R_min < R_max"):
        DCLEFEstimator(data_range=(5, 1)).fit(Y, d)
    with pytest.raises(ValueError, match="unit_costs has 3 entries but X has 60"):
        DCLEFEstimator(data_range=(1, 5)).fit(Y, d, unit_costs=[1, 2, 3])
    with pytest.raises(ValueError, match="unit_costs must be >= 0"):
        DCLEFEstimator(data_range=(1, 5)).fit(Y, d, unit_costs=-np.ones(60))
    with pytest.raises(ValueError, match="budget"):
        DCLEFEstimator(budget=-1.0, data_range=(1, 5)).fit(Y, d)
    with pytest.raises(ValueError, match="predictor"):
        DCLEFEstimator(predictor="svm", data_range=(1, 5)).fit(Y, d)
    with pytest.raises(ValueError, match="accountant"):
        DCLEFEstimator(accountant=1.0, data_range=(1, 5)).fit(Y, d)


def test_per_individual_caps(data):
    Y, d, Yq, costs = data
    caps = np.where(np.arange(60) % 2 == 0, 0.5, np.inf)   # even individuals capped
    est = DCLEFEstimator(budget=5.0, predictor="knn", n_neighbors=8, data_range=(1, 5),
                         epsilon_cap=caps, accountant=PrivacyAccountant(),
                         random_state=0).fit(Y, d, unit_costs=costs)
    est.predict(np.repeat(Yq[:3], 30, axis=0))
    spent = est.epsilon_spent()
    assert np.all(spent[::2] <= 0.5 * (1 + 1e-9))
    assert spent[1::2].max() > 0.5
    with pytest.raises(ValueError, match="epsilon_cap has 3 entries but X has 60"):
        DCLEFEstimator(data_range=(1, 5), epsilon_cap=[1, 2, 3]).fit(Y, d)
    with pytest.raises(ValueError, match="epsilon_cap must be >= 0"):
        DCLEFEstimator(data_range=(1, 5), epsilon_cap=-np.ones(60)).fit(Y, d)


@pytest.mark.parametrize("seed, budget, cap", [(5, 3.0, None), (5, 3.0, 5.0), (5, 3.0, 0.4), (0, 1.0, 1.0)])
@pytest.mark.parametrize("predictor", ["knn", "nadaraya_watson", "ridge"])
def test_batched_queries_release_what_one_query_at_a_time_releases(seed, budget, cap, predictor):
    """predict runs a call's auctions in batches; with or without epsilon_cap (0.4, 1.0: individuals reach it
    during the call and are excluded from later queries) every prediction, guarantee and record equals
    those of the same queries asked one per call (a call with one query runs one auction). Seed 0 with knn:
    a batch kept after an individual reached the cap would pay others a different price (payments in the
    records), though it selects the same individuals. The calls are
    made on the query weights (_predict_queries): a predictor's weights for one row and for a block of rows
    may differ in the last bit (matrix products), which is not what is tested here."""
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(60, 3)), rng.uniform(1, 5, 60)
    costs = rng.exponential(size=60)   # unequal: an excluded individual's cost would change others' prices
    Xq = rng.normal(size=(40, 3))
    runs = []
    for one_by_one in (False, True):
        acc = PrivacyAccountant()
        est = DCLEFEstimator(predictor=predictor, epsilon_cap=cap, data_range=(1, 5), budget=budget,
                             random_state=0, accountant=acc).fit(X, y, unit_costs=costs)
        Wq = est.auction_weights(Xq)
        pred = (np.concatenate([est._predict_queries(Wq[i:i + 1], acc) for i in range(len(Xq))]) if one_by_one
                else est._predict_queries(Wq, acc))
        runs.append((pred, est.epsilon_spent(), acc.records.drop(columns="population")))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert len(runs[0][2]) == len(Xq)
    pd.testing.assert_frame_equal(runs[0][2], runs[1][2])
    if cap is not None:
        assert np.all(runs[0][1] <= cap * (1 + 1e-12))
