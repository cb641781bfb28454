import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline

from privrelease.exceptions import PrivacyLeakWarning
from privrelease.evaluation import lowest_rmse_within, make_privacy_scorer, privacy_scoring
from privrelease.recommender import SurpriseRecommender, holdout_split

from evaluation_doubles import BiasRecommender, ErasingMapper, SpyMapper, planted_ratings

X, Y = planted_ratings(n_users=200, n_items=20, strength=0.9, seed=0)


def _search(refit, recommender=None, cv=3):
    pipe = Pipeline([("privacy", ErasingMapper()), ("recommender", recommender or BiasRecommender())])
    return GridSearchCV(pipe, {"privacy__delta": [0.0, 1.0, 2.0, 3.0]}, scoring=privacy_scoring(random_state=0),
                        refit=refit, cv=KFold(cv, shuffle=True, random_state=0))


def test_grid_search_picks_lowest_rmse_meeting_the_leakage_target():
    search = _search(lowest_rmse_within(max_leakage_bits=0.5)).fit(X, Y)
    res = search.cv_results_
    leak = -res["mean_test_neg_leakage_bits"]
    rmse = -res["mean_test_neg_rmse"]
    ok = np.flatnonzero(leak <= 0.5)
    assert ok.size and ok.size < 4
    assert search.best_index_ == ok[np.argmin(rmse[ok])]
    assert search.best_estimator_.named_steps["privacy"].leakage_ <= 0.5 + 0.1
    # leakage falls with delta (ErasingMapper removes the planted items one by one)
    assert np.all(np.diff(leak) <= 1e-9)


def test_rmse_scorer_matches_a_direct_computation():
    pipe = Pipeline([("privacy", ErasingMapper(delta=1.0)), ("recommender", BiasRecommender())])
    pipe.fit(X[:150], Y[:150])
    scorer = make_privacy_scorer("rmse", random_state=3)
    visible, held = holdout_split(X[150:], 0.1, random_state=scorer.seed)
    expected = pipe[-1].rmse(pipe[0].transform(visible), held)
    assert scorer(pipe, X[150:], Y[150:]) == pytest.approx(-expected)
    # the same scorer holds out the same ratings every time: candidates are compared fairly
    assert scorer(pipe, X[150:], Y[150:]) == scorer(pipe, X[150:], Y[150:])


def test_heldout_ratings_never_pass_through_the_mapper():
    SpyMapper.seen.clear()
    pipe = Pipeline([("privacy", SpyMapper()), ("recommender", BiasRecommender())])
    scorer = make_privacy_scorer("rmse", random_state=1)
    pipe.fit(X[:150], Y[:150])
    SpyMapper.seen.clear()
    scorer(pipe, X[150:], Y[150:])
    _, held = holdout_split(X[150:], 0.1, random_state=scorer.seed)
    assert held.nnz > 0
    assert len(SpyMapper.seen) == 1
    where, shown = SpyMapper.seen[0]
    assert where == "transform"
    assert shown.multiply(held).nnz == 0          # no held-out entry was shown
    assert ((shown + held) != X[150:]).nnz == 0   # everything else was


def test_grid_search_with_surprise_recommender_and_spy():
    """The full pipeline of the brief: GridSearchCV over privacy__delta with the Surprise adapter."""
    SpyMapper.seen.clear()
    pipe = Pipeline([("privacy", SpyMapper()),
                     ("recommender", SurpriseRecommender(rating_scale=(1, 5), random_state=0,
                                                         algo_params={"n_factors": 5, "n_epochs": 5}))])
    search = GridSearchCV(pipe, {"privacy__delta": [0.0, 1.0]}, scoring=privacy_scoring(random_state=0),
                          refit=lowest_rmse_within(max_leakage_bits=0.6), cv=KFold(2, shuffle=True, random_state=0))
    search.fit(X, Y)
    assert search.best_params_ == {"privacy__delta": 1.0}  # leakage 1/(1+delta): only delta=1 meets 0.6
    assert np.all(np.isfinite(search.cv_results_["mean_test_neg_rmse"]))
    # in every test fold, what the mapper transformed excludes that fold's held-out ratings
    scorer = search.scorer_["neg_rmse"]
    for train, test in KFold(2, shuffle=True, random_state=0).split(X):
        _, held = holdout_split(X[test], 0.1, random_state=scorer.seed)
        shown = [M for w, M in SpyMapper.seen if w == "transform" and M.shape[0] == test.size
                 and ((M + held) != X[test]).nnz == 0]
        assert shown, "the test fold's visible ratings were transformed"
        assert all(M.multiply(held).nnz == 0 for M in shown)


def test_adaptive_auc_scorer():
    pipe0 = Pipeline([("privacy", ErasingMapper(delta=0.0)), ("recommender", BiasRecommender())]).fit(X, Y)
    pipe3 = Pipeline([("privacy", ErasingMapper(delta=3.0)), ("recommender", BiasRecommender())]).fit(X, Y)
    scorer = make_privacy_scorer("adaptive_auc", random_state=0)
    assert -scorer(pipe0, X, Y) > 0.9
    assert -scorer(pipe3, X, Y) < 0.65


def test_refit_falls_back_with_a_warning():
    refit = lowest_rmse_within(max_leakage_bits=0.01)
    res = {"mean_test_neg_rmse": np.array([-1.0, -1.1]), "mean_test_neg_leakage_bits": np.array([-0.5, -0.2])}
    with pytest.warns(PrivacyLeakWarning, match="no candidate meets max_leakage_bits=0.01"):
        assert refit(res) == 1
    assert lowest_rmse_within(max_leakage_bits=1.0)(res) == 0


def test_scorer_errors():
    with pytest.raises(ValueError, match="metric must be one of .* got 'auc'"):
        make_privacy_scorer("auc")
    with pytest.raises(ValueError, match=r"heldout_fraction must be < 1.0, got 2"):
        make_privacy_scorer(heldout_fraction=2)
    with pytest.raises(ValueError, match=r"max_leakage_bits must be >= 0, got -1"):
        lowest_rmse_within(max_leakage_bits=-1)
    with pytest.raises(TypeError, match="need a fitted Pipeline"):
        make_privacy_scorer(random_state=0)(BiasRecommender().fit(X), X, Y)


def test_adaptive_auc_scorer_leaves_undisclosed_users_out():
    pipe = Pipeline([("privacy", ErasingMapper(delta=0.0)), ("recommender", BiasRecommender())]).fit(X, Y)
    scorer = make_privacy_scorer("adaptive_auc", random_state=0)
    labels = np.array(["f", "m"], dtype=object)[Y]
    hidden = labels.copy()
    hidden[::5] = "-1"                     # the string marker is not a third class
    keep = np.arange(len(Y)) % 5 != 0
    assert scorer(pipe, X, hidden) == pytest.approx(scorer(pipe, X[np.flatnonzero(keep)], labels[keep]))
    hidden[::5] = None
    assert scorer(pipe, X, hidden) == pytest.approx(scorer(pipe, X[np.flatnonzero(keep)], labels[keep]))


def test_adaptive_auc_scorer_multiclass_is_macro_ovr():
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    from privrelease.evaluation import InferenceAttack

    rng = np.random.default_rng(1)
    y3 = rng.integers(0, 3, 150)
    R = rng.integers(1, 6, (150, 12)) * (rng.random((150, 12)) < 0.4)
    R[:, 0] = y3 + 1                        # the class, written in item 0
    Xm = sp.csr_matrix(R.astype(float))
    pipe = Pipeline([("privacy", ErasingMapper(delta=0.0)), ("recommender", BiasRecommender())]).fit(Xm, y3)
    scorer = make_privacy_scorer("adaptive_auc", random_state=0)
    proba = cross_val_predict(InferenceAttack(random_state=scorer.seed), Xm, y3, method="predict_proba",
                              cv=StratifiedKFold(3, shuffle=True, random_state=scorer.seed))
    by_hand = np.mean([roc_auc_score(y3 == c, proba[:, c]) for c in range(3)])
    assert -scorer(pipe, Xm, y3) == pytest.approx(max(by_hand, 1 - by_hand))
    assert by_hand > 0.9
