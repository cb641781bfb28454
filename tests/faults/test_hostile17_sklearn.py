"""Hostile use of the estimators as scikit-learn objects: refits that fail, refits that change the kind of y,
custom attack models whose randomness sits in a nested estimator.

A failed ``fit`` must leave the previous fit whole (the mappers already did: their ``fit`` runs on a copy);
a successful one must leave nothing of the previous fit behind.
"""

import numpy as np
import pytest
from sklearn.ensemble import BaggingClassifier, RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from privrelease import (BlurMe, BlurMore, DCLEFEstimator, InferenceAttack, SurpriseRecommender,
                         TruthfulRegressionMechanism)
from privrelease.accounting import PrivacyAccountant
from privrelease.exceptions import PrivacyLeakWarning

from doubles import ItemMean

pytestmark = pytest.mark.filterwarnings("ignore", category=PrivacyLeakWarning)


def _ratings(n=90, m=8, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.clip(np.round(rng.normal(3 + 0.8 * y[:, None], 1, (n, m))), 1, 5)
    X[rng.random((n, m)) < 0.3] = 0
    return X, y


def _fitted_state(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _same_state(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] is b[k], k


def test_attack_keeps_its_classes_when_a_refit_fails():
    # the failed refit left classes_ = [0] beside the old two-class model: every user was predicted 0 and
    # predict_proba had one column
    X, y = _ratings()
    attack = InferenceAttack(random_state=0).fit(X, y)
    proba, before = attack.predict_proba(X), _fitted_state(attack)
    with pytest.raises(ValueError, match="at least two classes"):
        attack.fit(X[:10, :5], np.zeros(10, dtype=int))
    _same_state(before, _fitted_state(attack))
    assert attack.n_features_in_ == 8 and attack.classes_.tolist() == [0, 1]
    assert np.array_equal(attack.predict_proba(X), proba)
    assert set(attack.predict(X)) == {0, 1}


@pytest.mark.parametrize("Est", [BlurMe, BlurMore])
def test_blurme_keeps_its_fit_when_a_refit_fails(Est):
    X, y = _ratings()
    est = Est(random_state=0).fit(X, y)
    out, before = est.transform(X), _fitted_state(est)
    with pytest.raises(ValueError, match="at least two classes"):
        est.fit(X[:, :6], np.zeros(len(y), dtype=int))
    _same_state(before, _fitted_state(est))
    assert np.array_equal(est.transform(X), out)  # was refused: "X has 8 features, but ... expecting 6"


def test_blurme_refit_on_one_attribute_drops_the_joint_tuples_of_two():
    X, y = _ratings()
    est = BlurMe(random_state=0).fit(X, np.column_stack([y, np.arange(len(y)) % 2]))
    assert est.joint_tuples_ is not None
    est.fit(X, y)
    assert not hasattr(est, "joint_tuples_")  # the previous fit's tuples described classes_ no more


def test_dclef_keeps_its_data_range_when_a_refit_fails():
    # the refused refit set data_range_ = (2, 3) beside d_ in [1, 5]; predict then recorded the query's spend
    # on the accountant and failed with "every d_i must lie in data_range (2.0, 3.0)"
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(50, 3))
    d = np.clip(np.round(3 + Y[:, 0]), 1, 5)
    acc = PrivacyAccountant()
    est = DCLEFEstimator(budget=5.0, data_range=(1, 5), random_state=0, accountant=acc).fit(Y, d)
    before = _fitted_state(est)
    with pytest.raises(ValueError, match="outside data_range"):
        est.set_params(data_range=(2, 3)).fit(Y, d)
    _same_state(before, _fitted_state(est))
    assert est.data_range_ == (1.0, 5.0)
    pred = est.predict(Y[:2])
    assert pred.shape == (2,) and len(acc) == 2


def test_dclef_keeps_its_cap_when_a_refit_fails_on_the_cap():
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(30, 2))
    d = np.clip(np.round(3 + Y[:, 0]), 1, 5)
    est = DCLEFEstimator(data_range=(0, 10), epsilon_cap=0.5, random_state=0).fit(Y, d)
    before = _fitted_state(est)
    with pytest.raises(ValueError, match="epsilon_cap has 3 entries"):
        est.set_params(data_range=(1, 5), epsilon_cap=[1.0, 2.0, 3.0]).fit(Y, d)
    _same_state(before, _fitted_state(est))
    assert est.data_range_ == (0.0, 10.0)


def test_truthful_regression_keeps_its_fit_when_the_accountant_refuses_a_refit():
    # n_clipped_ was written before the accountant refused the refit: it counted the new data's clipped rows
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3)) / 4
    y = X @ np.array([0.3, -0.2, 0.1])
    acc = PrivacyAccountant(epsilon=2.5)
    mech = TruthfulRegressionMechanism(clip=True, random_state=0, accountant=acc).fit(X, y)
    before = _fitted_state(mech)
    assert mech.n_clipped_ == 0
    X2 = X.copy()
    X2[:5] *= 10
    with pytest.raises(Exception, match="refused"):
        mech.fit(X2, y)
    _same_state(before, _fitted_state(mech))
    assert mech.n_clipped_ == 0


def test_truthful_regression_warnings_still_point_at_the_callers_fit():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2)) / 4
    X[0] = [3.0, 4.0]
    with pytest.warns(PrivacyLeakWarning) as record:
        TruthfulRegressionMechanism(clip=True, epsilon=np.inf, random_state=0).fit(X, X[:, 0])
    leaks = [w for w in record if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 2 and all(w.filename == __file__ for w in leaks)


def test_dclef_data_range_warning_points_at_the_callers_fit():
    rng = np.random.default_rng(4)
    Y = rng.normal(size=(20, 2))
    with pytest.warns(PrivacyLeakWarning, match="data_range=None") as record:
        DCLEFEstimator(random_state=0).fit(Y, Y[:, 0])
    assert record[0].filename == __file__


def test_surprise_keeps_its_fit_when_a_refit_fails_on_user_ids():
    # user_ids_ and n_features_in_ of the refused refit were written beside the previous model
    pytest.importorskip("surprise")
    X, _ = _ratings(40, 6)
    rec = SurpriseRecommender("BaselineOnly", random_state=0).fit(X)
    pred, before = rec.predict(X), _fitted_state(rec)
    with pytest.raises(ValueError, match="user_ids"):
        rec.fit(X[:, :4], user_ids=list(range(3)))
    _same_state(before, _fitted_state(rec))
    assert np.array_equal(rec.predict(X), pred)


@pytest.mark.parametrize("model", [
    make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=10)),
    BaggingClassifier(DecisionTreeClassifier(), n_estimators=4, random_state=None),
], ids=["pipeline", "bagging-of-trees"])
def test_attack_seeds_the_randomness_of_nested_models(model):
    # only a top-level random_state was seeded: a forest inside a Pipeline drew a new forest at every fit
    X, y = _ratings()
    a = InferenceAttack(model=model, random_state=0).fit(X, y)
    b = InferenceAttack(model=model, random_state=0).fit(X, y)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    assert model.get_params()["random_state" if hasattr(model, "random_state") else "randomforestclassifier__"
                               "random_state"] is None  # the user's model is not modified


def test_attack_keeps_a_nested_seed_the_user_gave():
    X, y = _ratings()
    model = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=10, random_state=7))
    attack = InferenceAttack(model=model, random_state=0).fit(X, y)
    assert attack.model_.get_params()["randomforestclassifier__random_state"] == 7
    other = InferenceAttack(model=model, random_state=1).fit(X, y)
    assert np.array_equal(attack.predict_proba(X), other.predict_proba(X))


@pytest.mark.parametrize("Est", [BlurMe, BlurMore])
def test_blurme_releases_a_dense_frame_as_a_frame_with_its_users_and_items(Est):
    # "X_blurred: same type, shape and dtype as X": a dense DataFrame came back as an ndarray (the user ids of
    # its index and the item names lost), while a sparse DataFrame and QuantizedPrivacyMapper kept the frame
    import pandas as pd

    X, y = _ratings()
    df = pd.DataFrame(X.astype(np.int64), columns=[f"item{j}" for j in range(X.shape[1])],
                      index=pd.Index(np.arange(1000, 1000 + len(X)), name="user"))
    out = Est(random_state=0).fit(df, y).transform(df)
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(df.index) and list(out.columns) == list(df.columns)
    assert out.dtypes.tolist() == df.dtypes.tolist()
    assert np.array_equal(out.to_numpy(), Est(random_state=0).fit(X.astype(np.int64), y).transform(X.astype(np.int64)))
    assert (out.to_numpy() != 0).sum() >= (X != 0).sum()
    nullable = df.astype({"item0": "Int64"})
    assert Est(random_state=0).fit(nullable, y).transform(nullable).dtypes.tolist() == nullable.dtypes.tolist()


@pytest.mark.parametrize("missing", [None, float("inf")], ids=["None", "inf"])
@pytest.mark.parametrize("as_series", [False, True], ids=["object-array", "Series"])
def test_dclef_refuses_a_missing_private_value_in_an_object_y(missing, as_series):
    # scikit-learn checks an object y for NaN before converting it, and None is no NaN there: d_ held NaN,
    # the data_range check (NaN < low is False) let it through, and every predict recorded its spend on the
    # accountant before failing with "every d_i must lie in data_range (1.0, 5.0) ..., got nan"
    import pandas as pd

    rng = np.random.default_rng(5)
    Y = rng.normal(size=(30, 2))
    d = np.clip(np.round(3 + Y[:, 0]), 1, 5).astype(object)
    d[4] = missing
    acc = PrivacyAccountant()
    est = DCLEFEstimator(data_range=(1, 5), random_state=0, accountant=acc)
    with pytest.raises(ValueError, match=r"y must hold the private values d as real numbers, got (None|nan|inf) at "
                                         r"position 4"):
        est.fit(Y, pd.Series(d) if as_series else d)
    assert len(acc) == 0 and not hasattr(est, "d_")


def test_truthful_regression_refuses_a_missing_response_before_spending():
    # the None became NaN: the fit drew its noise, recorded a failed release of 2 epsilon on the accountant
    # and failed in the payments with "outcome must not contain NaN, got array([nan, nan, ...])"
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 2)) / 4
    y = (X @ np.array([0.3, -0.2])).astype(object)
    y[2] = None
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="y must hold the reported responses as real numbers, got None at position 2"):
        TruthfulRegressionMechanism(random_state=0, accountant=acc).fit(X, y)
    assert acc.spent == 0.0 and len(acc) == 0


@pytest.mark.parametrize("weights, error, match", [
    (np.array([None] + [1.0] * 89, dtype=object), TypeError, "sample_weight must hold numbers.*None.*row 0"),
    (np.array([-5.0] + [1.0] * 89), ValueError, "finite and non-negative, got -5.0 at row 0"),
    (np.r_[np.ones(15), np.zeros(75)], ValueError, "the 75 users who disclosed the attribute a total weight of 0"),
], ids=["None", "negative", "zero-on-the-disclosed"])
def test_attack_score_checks_its_weights(weights, error, match):
    # None reached accuracy_score ("unsupported operand type(s) for +: 'NoneType' and 'float'"), a weight of -5
    # gave an accuracy of 0.69, weights only on the undisclosed users divided 0 by 0
    X, y = _ratings()
    y_disclosed = y.copy()
    y_disclosed[:15] = -1
    attack = InferenceAttack(random_state=0).fit(X, y_disclosed)
    with pytest.raises(error, match=match):
        attack.score(X, y_disclosed, sample_weight=weights)
    w = np.r_[np.zeros(15), np.full(75, 2.5)]  # all-equal weights on the scored users: the plain accuracy
    assert attack.score(X, y_disclosed, sample_weight=w) == attack.score(X, y_disclosed)


class _MustNotFit:
    """A mapper whose fit must not run: verbose is to be checked before any work."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y=None):
        raise AssertionError("the mapper was fitted before verbose was checked")

    def transform(self, X):
        return X


@pytest.mark.parametrize("verbose, error", [(-1, ValueError), (2.5, TypeError)])
@pytest.mark.parametrize("which", ["rmse_cost", "privacy_utility_curve"])
def test_verbose_is_checked_before_any_work(which, verbose, error):
    # verbose was read by the progress bar only: the mapper(s) were fitted (and the folds sent to joblib) first,
    # and a negative count was a TypeError
    from privrelease.evaluation import privacy_utility_curve, rmse_cost

    X, y = _ratings(60, 10)
    func = rmse_cost if which == "rmse_cost" else privacy_utility_curve
    with pytest.raises(error, match=f"verbose must be a non-negative int or a bool .*got {verbose!r}"):
        func(_MustNotFit(), X, y, cv=2, recommender=ItemMean(), random_state=0, verbose=verbose)
