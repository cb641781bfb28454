"""Hostile inputs, seventeenth audit: the evaluation (attackers, scorers, the curve)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from doubles import ItemMean
from privrelease.evaluation import (BlurMe, InferenceAttack, attack, evaluate_attacks, make_privacy_scorer,
                                    privacy_utility_curve, rmse_cost)
from privrelease.recommender import SurpriseRecommender, holdout_split


class Rigged(ClassifierMixin, BaseEstimator):
    """An attacker whose posterior is the first three rating columns, normalised: its one-vs-rest AUCs are set by
    the data."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        P = (X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float))[:, :3]
        return P / P.sum(axis=1, keepdims=True)


class _Recommender(BaseEstimator):
    """The last step of a pipeline (the adaptive_auc scorer never asks it anything)."""

    def fit(self, X, y=None):
        return self


#: class 0 users look like class 1 and class 1 users like class 0 (AUC 0 for both), class 2 users are found (AUC 1)
_ROWS = {0: [1, 3, 1], 1: [3, 1, 1], 2: [3, 3, 4]}


def _rigged_data(n_per_class=20, n_extra=6, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n_per_class)
    X = np.hstack([np.array([_ROWS[c] for c in y], dtype=float),
                   rng.integers(1, 6, (y.size, n_extra)).astype(float)])
    return X, y


def test_a_multiclass_attacker_ranking_classes_backwards_is_folded_class_by_class():
    # per-class AUCs [0, 0, 1]: the attacker finds class 2 outright and ranks classes 0 and 1 reliably backwards.
    # The macro AUC is 1/3 and the old folded figure max(1/3, 2/3) = 0.667 reported it near chance; every class is
    # in fact exposed (flip the ranking of classes 0 and 1): folded class by class, 1.0
    X, y = _rigged_data()
    res = InferenceAttack(model=Rigged()).fit(X, y).evaluate(X, y)
    P = Rigged().fit(X, y).predict_proba(X)
    per = [roc_auc_score(y == k, P[:, k]) for k in range(3)]
    assert per == [0.0, 0.0, 1.0]
    assert res.auc == roc_auc_score(y, P, multi_class="ovr", average="macro") == np.mean(per)
    assert res.class_aucs == {0: 0.0, 1: 0.0, 2: 1.0}
    assert res.folded_auc == 1.0
    table, _ = evaluate_attacks(X, None, y, X, y, models=[Rigged()], features="values", verbose=0)
    assert table["folded_auc"].tolist() == [1.0]
    # two classes: the fold of the one AUC, as before
    two = y < 2
    res2 = InferenceAttack(model=Rigged()).fit(X[two], y[two]).evaluate(X[two], y[two])
    assert res2.auc == 0.0 and res2.folded_auc == 1.0


def test_the_curve_worst_auc_folds_each_class_before_averaging():
    # was 0.6667 for an attacker whose ranking exposes every class (see above); the binary curves are unchanged
    X, y = _rigged_data()
    curve = privacy_utility_curve(FunctionTransformer(accept_sparse=True), X, y, cv=2, recommender=ItemMean(),
                                  attack_models=[Rigged()], attack_features="values", random_state=0, verbose=0)
    f = curve.frame.iloc[0]
    assert f["auc_fixed_Rigged_values"] == np.float64(1 / 3)
    assert f["worst_auc_fixed"] == 1.0 and f["worst_auc_adaptive"] == 1.0


def test_the_adaptive_auc_scorer_folds_each_class_before_averaging():
    # the scorer folded the macro AUC: a class ranked below 0.5 by the cross-validated attacker cancelled part of
    # another's exposure. It now equals minus the mean over classes of max(AUC_k, 1 - AUC_k), computed here by hand
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1, 2], 30)
    X = rng.integers(1, 6, (y.size, 8)).astype(float)  # noise: per-class AUCs on both sides of 0.5
    pipe = Pipeline([("privacy", FunctionTransformer()), ("recommender", _Recommender())]).fit(X)
    scorer = make_privacy_scorer("adaptive_auc", random_state=7)
    att = InferenceAttack(model="logistic", random_state=scorer.seed)
    P = cross_val_predict(att, X, y, method="predict_proba", cv=StratifiedKFold(3, shuffle=True,
                                                                                 random_state=scorer.seed))
    per = np.array([roc_auc_score(y == k, P[:, k]) for k in range(3)])
    assert per.min() < 0.5 < per.max()  # the case the fix is about
    macro = per.mean()
    expected = -np.mean(np.maximum(per, 1 - per))
    assert expected < -max(macro, 1 - macro)
    assert scorer(pipe, X, y) == expected


# --------------------------------------------------------------------------- dask collections in the evaluation
def _sparse_blocks(X, rows):
    da = pytest.importorskip("dask.array")
    return da.from_array(X, chunks=(rows, X.shape[1])).map_blocks(sp.csr_matrix, dtype=X.dtype)


@pytest.mark.parametrize("rows", [(60,), (0, 25, 35), (20, 20, 20)])
def test_a_dask_array_of_sparse_blocks_is_evaluated_as_in_memory(rows):
    # the dask form the mappers take (scipy sparse blocks) was read by numpy as an array of matrix objects:
    # rmse_cost said "ratings must hold numbers, got object", the attackers and BlurMe.fit "setting an array element
    # with a sequence", BlurMe.transform "Expected 2D array, got scalar array". Now computed first: same figures
    rng = np.random.default_rng(1)
    y = np.arange(60) % 2
    X = rng.integers(1, 6, (60, 10)) * (rng.random((60, 10)) < 0.6)
    X[:, 0] = np.where(y == 1, 5, 1)
    X = X.astype(float)
    D = _sparse_blocks(X, rows)
    kw = dict(recommender=ItemMean(), cv=2, random_state=0, verbose=0)
    assert rmse_cost(BlurMe(), D, y, **kw).summary == rmse_cost(BlurMe(), X, y, **kw).summary
    table_d, _ = evaluate_attacks(D, D, y, D, y, models="logistic", random_state=0, verbose=0)
    table_m, _ = evaluate_attacks(X, X, y, X, y, models="logistic", random_state=0, verbose=0)
    assert table_d.equals(table_m)
    blur = BlurMe(fraction=0.5).fit(D, y)
    out = blur.transform(D)
    assert sp.issparse(out) and out.shape == X.shape
    assert (out != sp.csr_matrix(BlurMe(fraction=0.5).fit(X, y).transform(X))).nnz == 0
    assert InferenceAttack(random_state=0).fit(D, y).evaluate(D, y).auc == attack(X, y, X, y, random_state=0).auc
    visible, held = holdout_split(D, 0.3, random_state=0)
    visible_m, held_m = holdout_split(X, 0.3, random_state=0)
    assert (visible != visible_m).nnz == 0 and (held != held_m).nnz == 0
    rec = SurpriseRecommender("BaselineOnly", rating_scale=(1, 5)).fit(D)
    assert rec.rmse(D, D) == SurpriseRecommender("BaselineOnly", rating_scale=(1, 5)).fit(X).rmse(X, X)


# --------------------------------------------------------------------------- mappers and attackers in a Pipeline
def _planted(n=60, m=12, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = (rng.integers(1, 6, (n, m)) * (rng.random((n, m)) < 0.5)).astype(float)
    X[:, 0] = np.where(y == 1, 5.0, 1.0)
    return X, y


def _in_pipeline(mapper):
    return Pipeline([("id", FunctionTransformer(accept_sparse=True)), ("privacy", mapper)])


def test_an_integer_random_state_seeds_a_mapper_inside_a_pipeline():
    # only the mapper's own random_state was seeded: BlurMe(strategy="random") in a Pipeline drew from the operating
    # system, and rmse_cost(random_state=0) gave 1.56666, 1.56625, 1.56665 on three calls. Now the nested
    # privacy__random_state is seeded as the plain mapper's is: the same figures, call after call
    X, y = _planted()
    kw = dict(cv=2, recommender=ItemMean(), random_state=0, verbose=0)
    mapper = BlurMe(fraction=1.0, strategy="random")
    runs = [rmse_cost(_in_pipeline(mapper), X, y, **kw)["rmse_released"] for _ in range(2)]
    assert runs[0] == runs[1] == rmse_cost(mapper, X, y, **kw)["rmse_released"]


def test_the_curve_sweeps_a_parameter_of_a_pipeline_step():
    # "Pipeline has no parameter 'privacy__fraction' to sweep; its parameters are ['memory', 'steps', ...]": the
    # check read the shallow parameters, although set_params sets the step's
    X, y = _planted()
    kw = dict(values=[0.0, 1.0], cv=2, recommender=ItemMean(), attack_models="logistic", attack_features="values",
              random_state=0, verbose=0)
    nested = privacy_utility_curve(_in_pipeline(BlurMe()), X, y, param="privacy__fraction", **kw).frame
    plain = privacy_utility_curve(BlurMe(), X, y, param="fraction", **kw).frame
    assert nested["privacy__fraction"].tolist() == [0.0, 1.0]
    np.testing.assert_array_equal(nested.drop(columns="privacy__fraction").to_numpy(),
                                  plain.drop(columns="fraction").to_numpy())


def test_an_attacker_pipeline_is_seeded_by_random_state():
    # a custom attacker Pipeline(scaler, RandomForestClassifier()) was left unseeded: attack(..., random_state=0) gave
    # AUC 0.596, 0.554, 0.624 on three calls
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    X, y = _planted(80, 10, seed=1)
    model = make_pipeline(MaxAbsScaler(), RandomForestClassifier(n_estimators=10))
    probas = [InferenceAttack(model=model, random_state=0).fit(X, y).predict_proba(X) for _ in range(2)]
    np.testing.assert_array_equal(probas[0], probas[1])


def test_a_pipeline_mapper_reports_its_privacy_step_leakage_and_distortion():
    # a Pipeline has no leakage_ of its own: rmse_cost's summary and the curve's leakage_bits / distortion were NaN
    # for Pipeline([..., ("privacy", QuantizedPrivacyMapper(...))]); they are now its privacy step's
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(200, 20, mean_ratings_per_user=8, random_state=0)
    kw = dict(cv=2, recommender=ItemMean(), random_state=0, verbose=0)
    mapper = QuantizedPrivacyMapper(n_clusters=3, max_leakage=0.05)
    nested, plain = rmse_cost(_in_pipeline(mapper), R, a, **kw), rmse_cost(mapper, R, a, **kw)
    assert np.isfinite(plain["leakage"]) and np.isfinite(plain["distortion"])
    assert (nested["leakage"], nested["distortion"]) == (plain["leakage"], plain["distortion"])
    assert nested["leakage"] == nested.mapper.named_steps["privacy"].leakage_


def test_nested_seeds_are_distinct_where_several_are_unset_and_the_seed_itself_where_one_is():
    # the attackers derived a seed per nested estimator while the protocol gave every nested one the same seed (a
    # voting attacker of two forests seeded 7 and 7 is one forest twice): one rule for both now
    from sklearn.ensemble import RandomForestClassifier, VotingClassifier

    from privrelease.evaluation._attacks import _make_model
    from privrelease.evaluation._protocol import _seed_unset

    vote = VotingClassifier([("a", RandomForestClassifier()), ("b", RandomForestClassifier())], voting="soft")
    for seeded in (_make_model(vote, 7), _seed_unset(clone(vote), 7)):
        params = seeded.get_params()
        assert params["a__random_state"] != params["b__random_state"]
        assert params["a__random_state"] is not None and params["b__random_state"] is not None
    one = _seed_unset(_in_pipeline(BlurMe(strategy="random")), 7)
    assert one.get_params()["privacy__random_state"] == 7
    assert vote.get_params()["a__random_state"] is None  # the user's model is not modified by _make_model
