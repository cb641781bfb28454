"""Hostile inputs, fourteenth audit: the evaluation (one test per finding)"""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from doubles import ItemMean
from privrelease.evaluation import (InferenceAttack, attack, evaluate_attacks, make_privacy_scorer,
                                    privacy_utility_curve)


class Identity(TransformerMixin, BaseEstimator):
    """Releases the ratings as they are; counts its fits."""

    fits = 0

    def __init__(self, delta=0.0):
        self.delta = delta

    def fit(self, X, y=None):
        type(self).fits += 1
        return self

    def transform(self, X):
        return X


def _planted(n=400, m=12, seed=0):
    """Ratings whose item 0 gives a binary attribute away."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.integers(1, 6, (n, m)).astype(float)
    X[:, 0] = np.where(y == 1, 5.0, 1.0)
    return X, y


# ----------------------------------------------------------------------- 1. y indexed differently from X
def _pairings():
    X, y = _planted()
    X, y = pd.DataFrame(X), pd.Series(y)
    Xtr, ytr, Xte, yte = X.iloc[:200], y.iloc[:200], X.iloc[200:], y.iloc[200:]
    att = InferenceAttack(random_state=0).fit(Xtr, ytr)
    kw = dict(models=["logistic"], features=["values"], random_state=0, verbose=0)
    scorer = make_privacy_scorer("adaptive_auc", random_state=0)
    pipe = Pipeline([("privacy", FunctionTransformer()), ("recommender", FunctionTransformer())]).fit(Xte)
    return {
        "evaluate": (lambda: att.evaluate(Xte, yte.sort_values()), "y", "X"),
        "score": (lambda: att.score(Xte, yte.sort_values()), "y", "X"),
        "evaluate_attacks y_test": (lambda: evaluate_attacks(Xtr, None, ytr, Xte, yte.sort_values(), **kw),
                                    "y_test", "X_test_released"),
        "evaluate_attacks y_train": (lambda: evaluate_attacks(Xtr, Xtr, ytr.sort_values(), Xte, yte, **kw),
                                     "y_train", "X_train_original"),
        "evaluate_attacks X_train_released": (
            lambda: evaluate_attacks(Xtr, Xtr.sample(frac=1.0, random_state=0), ytr, Xte, yte, **kw),
            "X_train_released", "X_train_original"),
        "adaptive_auc scorer": (lambda: scorer(pipe, Xte, yte.sort_values()), "y", "X"),
    }


PAIRINGS = _pairings()


@pytest.mark.parametrize("case", PAIRINGS, ids=list(PAIRINGS))
def test_a_y_indexed_differently_from_X_is_refused_wherever_the_evaluation_pairs_them(case):
    # y.sort_values() beside X was paired by position: the attacker's AUC 1.0 was reported as 0.518
    call, name, x_name = PAIRINGS[case]
    with pytest.raises(ValueError, match=rf"^{name} is indexed differently from {x_name} \(the same labels in "
                                         r"another order: row \d+ is \d+ in"):
        call()


# ----------------------------------------------------------------------- 2. targets named like the main one
def test_a_column_named_attribute_is_its_own_target_and_bad_attribute_names_are_refused():
    X, a = _planted(600, 10, seed=0)
    b = np.random.default_rng(1).integers(0, 2, 600)
    X[:, 1] = np.where(b == 1, 5.0, 1.0)
    kw = dict(models=["logistic"], features=["values"], random_state=0, verbose=0)
    figures = {}
    for first in ("sex", "attribute"):
        Y = pd.DataFrame({first: a, "other": b})
        table, res = evaluate_attacks(X[:300], X[:300], Y.iloc[:300], X[300:], Y.iloc[300:].reset_index(drop=True),
                                      **kw)
        # the marginal 'attribute' reused the joint's fixed attacker (AUC 0.396, accuracy 0.23 against 1.0)
        assert set(res["fixed_attackers"]) == {("logistic", "values"), ("logistic", "values", first),
                                                ("logistic", "values", "other")}
        figures[first] = table.drop(columns="target").to_numpy(dtype=object)
        assert table.target.tolist() == ["joint", "joint", first, first, "other", "other"]
        curve = privacy_utility_curve(FunctionTransformer(), X, Y, cv=2, attack_models=["logistic"],
                                      attack_features=["values"], recommender=ItemMean(), random_state=0, verbose=0)
        f = curve.frame.iloc[0]
        assert f[f"worst_auc_fixed__{first}"] == 1.0 and f["auc_fixed_logistic_values"] == 1.0
    np.testing.assert_array_equal(figures["sex"], figures["attribute"])
    # attribute_names: one per column, distinct, and never the joint's name
    Y = np.column_stack([a, b])
    for names, expected in [(["g"], r"attribute_names has 1 name \['g'\] but the private attribute has 2 columns"),
                            (["g", "g"], r"attribute_names must be distinct, got 'g' twice in \['g', 'g'\]"),
                            (["joint", "x"], r"'joint' is reserved for the joint attribute.*\['joint', 'x'\]")]:
        with pytest.raises(ValueError, match=expected):
            evaluate_attacks(X[:300], None, Y[:300], X[300:], Y[300:], attribute_names=names, **kw)


# ----------------------------------------------------------------------- 3. two custom models of one class
def test_two_custom_attack_models_of_one_class_each_get_their_own_name_and_attacker():
    X, y = _planted(400, 10, seed=0)
    X[:, 0] = np.where(np.random.default_rng(1).random(400) < 0.8, X[:, 0], 3.0)
    weak, strong = LogisticRegression(C=1e-8), LogisticRegression(C=10.0)
    table, res = evaluate_attacks(X[:200], X[:200], y[:200], X[200:], y[200:], models=[weak, strong],
                                  features=["values"], random_state=0, verbose=0)
    # both rows showed the weak model's figures (accuracy 0.55 twice): the second reused the first's attacker
    assert table.model.tolist() == ["LogisticRegression"] * 2 + ["LogisticRegression_2"] * 2
    assert set(res["fixed_attackers"]) == {("LogisticRegression", "values"), ("LogisticRegression_2", "values")}
    fixed = table[table.attacker == "fixed"].set_index("model")["accuracy"]
    for name, model in (("LogisticRegression", weak), ("LogisticRegression_2", strong)):
        assert fixed[name] == attack(X[:200], y[:200], X[200:], y[200:], model=model).accuracy
    assert fixed["LogisticRegression_2"] > fixed["LogisticRegression"] + 0.2
    curve = privacy_utility_curve(FunctionTransformer(), X, y, cv=2, attack_models=[weak, strong],
                                  attack_features=["values"], recommender=ItemMean(), random_state=0, verbose=0)
    f = curve.frame.iloc[0]
    assert f["auc_fixed_LogisticRegression_2_values"] != f["auc_fixed_LogisticRegression_values"]


# ----------------------------------------------------------------------- 4. pandas rows with undisclosed labels
@pytest.mark.parametrize("columns", ["default", "named"])
def test_undisclosed_users_of_a_pandas_X_are_left_out_by_row(columns):
    X, y = _planted(400, 300, seed=0)
    df = pd.DataFrame(X, columns=None if columns == "default" else [f"item{j}" for j in range(X.shape[1])])
    att = InferenceAttack(random_state=0).fit(X[:200], y[:200])
    att_df = InferenceAttack(random_state=0).fit(df.iloc[:200], y[:200])
    yt = y[200:].copy()
    yt[::2] = -1  # half the users did not disclose
    Xt = df.iloc[200:].reset_index(drop=True)
    # X[flatnonzero(labeled)] picked COLUMNS of a frame: 'X has 100 features' or a KeyError
    assert att_df.evaluate(Xt, yt).as_dict() == att.evaluate(X[200:], yt).as_dict()
    assert att_df.score(Xt, yt) == att.score(X[200:], yt)
    kw = dict(models=["logistic"], features=["values"], random_state=0, verbose=0)
    table, _ = evaluate_attacks(df.iloc[:200], None, y[:200], Xt, yt, **kw)
    assert table.n_samples.tolist() == [100] and table.auc.tolist() == [att.evaluate(X[200:], yt).auc]
    pipe = Pipeline([("privacy", FunctionTransformer()), ("recommender", FunctionTransformer())]).fit(Xt)
    scorer = make_privacy_scorer("adaptive_auc", random_state=0)
    assert scorer(pipe, Xt, yt) == scorer(pipe, X[200:], yt)


# ----------------------------------------------------------------------- 5. attackers given as one string
def test_one_attacker_given_as_a_string_is_a_list_of_one_and_a_bad_one_is_refused_before_any_fit():
    X, y = _planted(100, 8, seed=0)
    for kw, expected in [(dict(models="logistic"), [["logistic", "values"], ["logistic", "indicators"]]),
                         (dict(features="values"), [["logistic", "values"], ["forest", "values"]])]:
        # read letter by letter: "Got 'l' instead"
        table, _ = evaluate_attacks(X[:50], None, y[:50], X[50:], y[50:], verbose=0, random_state=0, **kw)
        assert table[["model", "features"]].to_numpy().tolist() == expected
    with pytest.raises(ValueError, match=r"attack_models holds 'logstic', expected 'logistic' or 'forest' or a "
                                         r"classifier with fit and predict_proba, in \['logstic'\]"):
        privacy_utility_curve(Identity(), X, y, deltas=[0.0, 1.0, 2.0], cv=2, recommender=ItemMean(),
                              attack_models=["logstic"], random_state=0, verbose=0)
    with pytest.raises(ValueError, match=r"^features holds 'value', expected 'values' or 'indicators', in"):
        evaluate_attacks(X[:50], None, y[:50], X[50:], y[50:], features=["values", "value"], verbose=0)
    assert Identity.fits == 0  # every mapper was fitted before the list was read
    curve = privacy_utility_curve(Identity(), X, y, cv=2, recommender=ItemMean(), attack_models="logistic",
                                  attack_features="values", random_state=0, verbose=0)
    assert [c for c in curve.frame.columns if c.startswith("auc_")] == ["auc_fixed_logistic_values",
                                                                          "auc_adaptive_logistic_values"]
