"""Evaluation findings of stop 38's audit: a scorer's made-up AUC, silent progress bars, one column scored twice."""

import io

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import Pipeline

from privrelease.evaluation import BlurMe, evaluate_attacks, make_privacy_scorer, privacy_utility_curve

from evaluation_doubles import BiasRecommender, ErasingMapper, planted_ratings


def test_adaptive_auc_scorer_refuses_a_class_of_one_user():
    # it returned -1.0 (an AUC of 1.0, the worst) without a word: a search on small data marked the candidate leaky
    X, y = planted_ratings(60, seed=1)
    pipe = Pipeline([("privacy", ErasingMapper(delta=0.0)), ("recommender", BiasRecommender())]).fit(X, y)
    lone = np.zeros_like(y)
    lone[5] = 1
    with pytest.raises(ValueError, match=r"class\(es\) \[1\] have 1 \(class counts \{0: 59, 1: 1\}\)"):
        make_privacy_scorer("adaptive_auc", random_state=0)(pipe, X, lone)


def test_curve_attack_jobs_follow_verbose_zero(monkeypatch):
    # the attack jobs ran evaluate_attacks at its default verbose=1: a progress bar per value on a terminal
    import sys

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    X, y = planted_ratings(80, seed=2)
    privacy_utility_curve(BlurMe(random_state=0), X, y, param="fraction", values=[0.0, 0.5], cv=2,
                          attack_models=["logistic"], random_state=0, verbose=0)
    assert err.getvalue() == ""


@pytest.mark.parametrize("as_frame", [False, True])
def test_one_column_attribute_is_one_target(as_frame):
    # a one-column y was scored twice, as "joint" and as its column, where rmse_cost and the curve read it as 1-D
    X, y = planted_ratings(120, seed=3)
    col = pd.DataFrame({"gender": y}) if as_frame else y.reshape(-1, 1)
    table, _ = evaluate_attacks(X[:60], X[:60], col[:60], X[60:], col[60:], models=["logistic"],
                                features=["values"], random_state=0, verbose=0)
    flat, _ = evaluate_attacks(X[:60], X[:60], y[:60], X[60:], y[60:], models=["logistic"],
                               features=["values"], random_state=0, verbose=0)
    assert table["target"].unique().tolist() == ["attribute"]
    pd.testing.assert_frame_equal(table, flat)


def test_a_training_release_missing_users_is_named():
    # "y has 30 labels but X has 20 users" blamed y for what the release had lost
    X, y = planted_ratings(60, seed=4)
    with pytest.raises(ValueError, match="X_train_released has 20 users but X_train_original has 30"):
        evaluate_attacks(X[:30], X[:20], y[:30], X[30:], y[30:], models=["logistic"], features=["values"],
                         random_state=0, verbose=0)
