"""Multi-class and 2-D private attributes in the evaluation, and undisclosed labels never being a class."""

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.metrics import roc_auc_score

from privrelease.evaluation import (
    InferenceAttack,
    evaluate_attacks,
    joint_attribute,
    privacy_utility_curve,
    rmse_cost,
)

from evaluation_doubles import BiasRecommender, planted_ratings


def two_attributes(n_users=400, seed=0):
    """Ratings where column 0 (binary) shows in items 0-2 and column 1 (3 classes) in items 3-5."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n_users)
    b = rng.integers(0, 3, n_users)
    R = rng.integers(1, 6, (n_users, 20)) * (rng.random((n_users, 20)) < 0.4)
    R[:, 0:3] = np.where(a[:, None] == 1, 5, 1)
    R[:, 3:6] = (b[:, None] + 1) * 1 + np.zeros((1, 3), dtype=int)  # value 1, 2 or 3 by class
    return sp.csr_matrix(R.astype(float)), np.column_stack([a, b])


class ColumnEraser(TransformerMixin, BaseEstimator):
    """Erases fixed item columns (a release that removes one attribute's signal)."""

    def __init__(self, columns=()):
        self.columns = columns

    def fit(self, X, y=None):
        self.y_shape_ = np.shape(y)
        self.y_ = np.asarray(y)
        self.n_fit_ = X.shape[0]
        return self

    def transform(self, X):
        X = sp.csr_matrix(X, copy=True).tolil()
        for c in self.columns:
            X[:, c] = 0
        X = X.tocsr()
        X.eliminate_zeros()
        return X


@pytest.mark.parametrize("marker", [-1, "-1", None, np.nan, pd.NA, ""])
def test_undisclosed_labels_are_never_a_class(marker):
    X, y = planted_ratings(n_users=200, strength=0.8, seed=3)
    labels = np.array(["f", "m"], dtype=object)[y] if isinstance(marker, str) else y.astype(object)
    hidden = labels.copy()
    hidden[::4] = marker
    att = InferenceAttack(random_state=0).fit(X, hidden)
    ref = InferenceAttack(random_state=0).fit(X[np.flatnonzero(np.arange(200) % 4 != 0)],
                                             np.asarray(labels[np.arange(200) % 4 != 0].tolist()))
    assert att.classes_.tolist() == ref.classes_.tolist() and len(att.classes_) == 2
    np.testing.assert_allclose(att.predict_proba(X), ref.predict_proba(X))
    # scoring leaves the undisclosed users out: the same figures as on the disclosed users alone
    res, res_ref = att.evaluate(X, hidden), ref.evaluate(X[np.arange(200) % 4 != 0],
                                                       np.asarray(labels[np.arange(200) % 4 != 0].tolist()))
    assert res.n_samples == 150
    assert res.auc == pytest.approx(res_ref.auc) and res.accuracy == pytest.approx(res_ref.accuracy)


def test_all_undisclosed_and_mixed_kinds_are_refused():
    X, y = planted_ratings(n_users=50, seed=1)
    with pytest.raises(ValueError, match="every label is undisclosed"):
        InferenceAttack().fit(X, np.full(50, -1))
    mixed = y.astype(object)
    mixed[0] = True
    with pytest.raises(TypeError, match="mixes label types"):
        InferenceAttack().fit(X, mixed)


def test_multiclass_scores_agree_with_an_independent_computation():
    X, Y = two_attributes(300, seed=1)
    b = Y[:, 1]
    att = InferenceAttack(random_state=0).fit(X[:150], b[:150])
    res = att.evaluate(X[150:], b[150:])
    proba = att.predict_proba(X[150:])
    # macro one-vs-rest AUC by hand: the mean over classes of the binary AUC of "this class"
    by_hand = np.mean([roc_auc_score(b[150:] == c, proba[:, k]) for k, c in enumerate(att.classes_)])
    assert res.auc == pytest.approx(by_hand)
    counts = np.bincount(b[:150], minlength=3)
    assert res.majority_accuracy == pytest.approx(np.mean(b[150:] == np.argmax(counts)))
    assert res.accuracy == pytest.approx(np.mean(att.classes_[proba.argmax(axis=1)] == b[150:]))
    assert res.auc > 0.95 and res.advantage > 0.5  # the class is written in items 3-5


def test_joint_attribute_matches_the_tuples():
    rng = np.random.default_rng(0)
    Y = np.column_stack([rng.choice(["f", "m"], 60), rng.choice(["a", "b", "c"], 60), rng.integers(0, 2, 60)])
    codes, tuples = joint_attribute(Y)
    assert len(tuples) == 2 * 3 * 2
    for u, v in itertools.combinations(range(60), 2):
        assert (codes[u] == codes[v]) == bool(np.all(Y[u] == Y[v]))
    assert all(tuples[c] == tuple(row) for c, row in zip(codes, Y.tolist()))
    with pytest.raises(ValueError, match="undisclosed"):
        joint_attribute(np.array([[0, 1], [-1, 0]]))
    with pytest.raises(ValueError, match="2-D"):
        joint_attribute(np.array([0, 1]))


def test_evaluate_attacks_scores_joint_and_marginals():
    X, Y = two_attributes(400, seed=2)
    Xr = ColumnEraser(columns=(0, 1, 2)).fit(X, Y).transform(X)   # attribute 0's signal removed
    table, res = evaluate_attacks(X[:200], Xr[:200], Y[:200], Xr[200:], Y[200:], models=["logistic"],
                                  features=["values"], random_state=0, attribute_names=["a", "b"])
    assert table.target.tolist() == ["joint", "joint", "a", "a", "b", "b"]
    auc = table.set_index(["target", "attacker"])["auc"]
    # attribute a is erased: the adaptive attacker is at chance on it; b is still written in the release
    assert abs(auc["a", "adaptive"] - 0.5) < 0.12
    assert auc["b", "adaptive"] > 0.95 and auc["b", "fixed"] > 0.95
    # the joint has 6 classes; it is scored against its own majority rate
    codes, _ = joint_attribute(Y)
    joint = res[("adaptive", "logistic", "values")]
    majority = np.bincount(codes[:200]).argmax()
    assert joint.majority_accuracy == pytest.approx(np.mean(codes[200:] == majority))
    assert ("adaptive", "logistic", "values", "b") in res
    # a DataFrame names the columns itself
    frame = pd.DataFrame(Y, columns=["gender", "age"])
    table2, _ = evaluate_attacks(X[:200], None, frame[:200], Xr[200:], frame[200:], models=["logistic"],
                                 features=["values"], random_state=0)
    assert table2.target.tolist() == ["joint", "gender", "age"]
    np.testing.assert_allclose(table2.auc, table[table.attacker == "fixed"].auc)


def test_curve_reports_joint_and_marginals_for_a_dataframe_attribute():
    X, Y = two_attributes(200, seed=3)
    private = pd.DataFrame({"gender": np.array(["f", "m"])[Y[:, 0]], "age": Y[:, 1]})
    curve = privacy_utility_curve(ColumnEraser(), X, private, param="columns", values=None,
                                  cv=2, recommender=BiasRecommender(), attack_models=["logistic"],
                                  attack_features=["values"], random_state=0, verbose=0)
    f = curve.frame
    for col in ("worst_auc_adaptive", "worst_auc_adaptive__gender", "worst_auc_adaptive__age",
                "worst_advantage_fixed__age", "worst_advantage_adaptive"):
        assert col in f.columns
    assert f["worst_auc_adaptive__gender"].iloc[0] > 0.95 and f["worst_auc_adaptive__age"].iloc[0] > 0.95
    assert set(curve.attacks.target) == {"joint", "gender", "age"}
    # the mapper received the opted-in users' 2-D attribute
    assert curve.mappers[0].y_shape_ == (100, 2)


def test_rmse_cost_accepts_multiclass_and_rejects_undisclosed_entries():
    X, Y = two_attributes(200, seed=4)
    cost = rmse_cost(ColumnEraser(), X, Y[:, 1], cv=2, recommender=BiasRecommender(), random_state=0)
    assert cost["rmse_released"] == cost["rmse_original"]
    bad = Y.copy()
    bad[5, 1] = -1
    with pytest.raises(ValueError, match="1 value"):
        rmse_cost(ColumnEraser(), X, bad, cv=2, recommender=BiasRecommender(), random_state=0)


def test_mapper_target_chooses_what_the_mapper_is_fitted_on():
    X, Y = two_attributes(200, seed=5)
    private = pd.DataFrame({"a": Y[:, 0], "b": Y[:, 1]})
    kw = dict(cv=2, recommender=BiasRecommender(), random_state=0)
    as_given = rmse_cost(ColumnEraser(), X, private, **kw).mapper
    joint = rmse_cost(ColumnEraser(), X, private, mapper_target="joint", **kw).mapper
    only_b = rmse_cost(ColumnEraser(), X, private, mapper_target="b", **kw).mapper
    assert as_given.y_.shape == (100, 2) and joint.y_.shape == (100,) and only_b.y_.shape == (100,)
    # same opted-in users in every run (same seed): the joint codes are those of the given rows' tuples
    codes, tuples = joint_attribute(as_given.y_)
    assert [tuples[c] for c in codes] == [tuple(r) for r in as_given.y_.tolist()]
    all_tuples = joint_attribute(Y)[1]
    assert [tuple(r) for r in as_given.y_.tolist()] == [all_tuples[c] for c in joint.y_]
    np.testing.assert_array_equal(only_b.y_, as_given.y_[:, 1])
    with pytest.raises(ValueError, match="one of the attribute columns \\['a', 'b'\\], got 'c'"):
        rmse_cost(ColumnEraser(), X, private, mapper_target="c", **kw)
    with pytest.raises(ValueError, match="needs a 2-D private attribute"):
        rmse_cost(ColumnEraser(), X, Y[:, 0], mapper_target="joint", **kw)


def test_a_user_hiding_one_column_hides_the_joint_attribute():
    X, Y = two_attributes(300, seed=6)
    Yh = Y.astype(object)
    Yh[:40, 1] = None                         # 40 training users hide their second attribute
    table, _ = evaluate_attacks(X[:150], None, Yh[:150], X[150:], Yh[150:], models=["logistic"],
                                features=["values"], random_state=0)
    full, _ = evaluate_attacks(X[40:150], None, Y[40:150], X[150:], Y[150:], models=["logistic"],
                               features=["values"], random_state=0)
    # the joint and column 1 attackers learn from the 110 users who disclosed both; column 0 from all 150
    np.testing.assert_allclose(table.auc.iloc[[0, 2]], full.auc.iloc[[0, 2]])
    assert table.n_samples.tolist() == [150, 150, 150]


def test_attribute_column_names_are_checked():
    X, Y = two_attributes(100, seed=7)
    kw = dict(cv=2, recommender=BiasRecommender(), random_state=0)
    with pytest.raises(ValueError, match="'joint' is reserved"):
        rmse_cost(ColumnEraser(), X, pd.DataFrame(Y, columns=["joint", "b"]), **kw)
    with pytest.raises(ValueError, match="private is a DataFrame with duplicate column names \\('a' \\(2 times\\)\\)"):
        rmse_cost(ColumnEraser(), X, pd.DataFrame(Y, columns=["a", "a"]), **kw)
    with pytest.raises(ValueError, match="private has 99 values but ratings has 100 users"):
        rmse_cost(ColumnEraser(), X, Y[:99], **kw)


@pytest.mark.parametrize("absent", [[3], [2, 3]])
def test_multiclass_auc_with_classes_absent_from_the_scored_users(absent):
    """Each present class ranked by the attacker's own probability of it (renormalising the present classes'
    columns ranked users otherwise: 0.9643 where the one-vs-rest AUC was 0.9529 with one of four classes absent)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 400)
    R = rng.integers(1, 6, (400, 20)) * (rng.random((400, 20)) < 0.4)
    R[:, 0] = np.where((y == 1) & (rng.random(400) < 0.6), 5, R[:, 0])  # weak signs of classes 1 and 2
    R[:, 1] = np.where((y == 2) & (rng.random(400) < 0.6), 5, R[:, 1])
    X = sp.csr_matrix(R.astype(float))
    att = InferenceAttack(random_state=0).fit(X[:200], y[:200])
    keep = ~np.isin(y[200:], absent)
    Xt, yt = X[200:][keep], y[200:][keep]
    res = att.evaluate(Xt, yt)
    proba = att.predict_proba(Xt)
    by_hand = np.mean([roc_auc_score(yt == c, proba[:, list(att.classes_).index(c)]) for c in np.unique(yt)])
    assert 0.55 < by_hand < 0.99
    assert res.auc == pytest.approx(by_hand, abs=1e-12)
