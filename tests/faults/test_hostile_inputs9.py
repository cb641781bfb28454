"""Hostile inputs, ninth audit: a recommender's ``algo_params`` checked against the Surprise algorithm's keyword
arguments (names and kinds of value) before anything runs, in the estimator and in a pipeline; integer codes
beyond int64 named by their value; scikit-learn's search tooling with the privacy scorers (a failed scoring never
refitted as the best, a 2-column attribute scored jointly). One test per finding (earlier audits: test_hostile_inputs.py to
test_hostile_inputs8.py)."""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _ratings():
    rng = np.random.default_rng(0)
    R = rng.integers(1, 6, (20, 10)).astype(float) * (rng.random((20, 10)) < 0.6)
    return sp.csr_array(R)


# ---------------------------------------------------------------- the estimator
@pytest.mark.parametrize("algorithm, params, exc, match", [
    # Surprise failed deep inside its fit, after the data was read and converted
    ("SVD", {"reg_all": "x"}, TypeError, r"rejected by surprise\.SVD: reg_all must be a real number, got 'x' \(str\)"),
    # taken silently: "no" as True (a biased model), True as one epoch, an unknown key of KNNBaseline ignored
    ("SVD", {"biased": "no"}, TypeError, r"surprise\.SVD: biased must be a boolean, got 'no' \(str\)"),
    ("SVD", {"n_epochs": True}, TypeError, r"surprise\.SVD: n_epochs must be an integer, got True \(bool\)"),
    ("SVDpp", {"lr_yj": "0.1"}, TypeError, r"lr_yj must be a real number or None, got '0\.1'"),
    ("KNNBaseline", {"k": "3"}, TypeError, r"surprise\.KNNBaseline: k must be an integer, got '3' \(str\)"),
    ("KNNBaseline", {"neighbours": 3}, ValueError,
     r"surprise\.KNNBaseline: unknown key 'neighbours'; it takes bsl_options, k, min_k, sim_options, verbose"),
    ("BaselineOnly", {"reg_all": 0.1}, ValueError, r"unknown key 'reg_all'; it takes bsl_options, verbose"),
])
def test_algo_params_are_checked_against_the_algorithm_before_the_data_is_read(algorithm, params, exc, match):
    from privrelease.recommender import SurpriseRecommender

    rec = SurpriseRecommender(algorithm, algo_params=params, random_state=0)
    with pytest.raises(exc, match=match):
        rec.fit(_ratings())
    with pytest.raises(exc, match=match):  # before the ratings are looked at
        rec.fit([["not", "ratings"]])


@pytest.mark.parametrize("sim_options, exc, match", [
    # Surprise ignored a key it does not know (the default similarity ran), counted "no" as true, and named an
    # unknown similarity only in fit, after computing the baselines
    ({"nmae": "cosine"}, ValueError, r"sim_options has an unknown key 'nmae'; it takes min_support, name, shrinkage, "
                                     r"user_based$"),
    ({"user_based": "no"}, TypeError, r"sim_options\['user_based'\] must be a boolean, got 'no' \(str\)$"),
    ({"name": "cos"}, ValueError, r"sim_options\['name'\] must be one of 'cosine', 'msd', 'pearson', "
                                  r"'pearson_baseline', got 'cos' \(str\)$"),
    ({"min_support": 1.5}, TypeError, r"sim_options\['min_support'\] must be an integer in \[0, 2147483647\]"),
    ({"min_support": -1}, ValueError, r"sim_options\['min_support'\] must be an integer in \[0, 2147483647\], got -1"),
    ({"shrinkage": float("nan")}, ValueError, r"sim_options\['shrinkage'\] must be a finite number >= 0, got nan"),
])
def test_a_knn_similarity_is_checked_key_by_key_before_the_data_is_read(sim_options, exc, match):
    from privrelease.recommender import SurpriseRecommender

    rec = SurpriseRecommender("KNNBaseline", algo_params={"k": 5, "sim_options": sim_options})
    with pytest.raises(exc, match=r"rejected by surprise\.KNNBaseline: " + match):
        rec.fit([["not", "ratings"]])


def test_algo_params_of_the_right_kinds_still_fit():
    from privrelease.recommender import SurpriseRecommender

    params = {"n_factors": np.int64(3), "n_epochs": 5, "lr_bu": None, "reg_all": np.float32(0.1), "init_mean": 0.5,
              "biased": np.True_}
    a = SurpriseRecommender(algo_params=params, random_state=0).fit(_ratings())
    b = SurpriseRecommender(algo_params={"n_factors": 3, "n_epochs": 5, "reg_all": float(np.float32(0.1)),
                                         "init_mean": 0.5}, random_state=0).fit(_ratings())
    np.testing.assert_allclose(a.item_factors_, b.item_factors_)
    knn = SurpriseRecommender("KNNBaseline", algo_params={"k": 5, "sim_options": {"name": "cosine"}}).fit(_ratings())
    assert knn.k_ == 5
    sim = {"name": "Pearson_Baseline", "user_based": np.False_, "min_support": np.int64(2), "shrinkage": 50}
    knn = SurpriseRecommender("KNNBaseline", algo_params={"sim_options": sim}).fit(_ratings())
    assert knn.item_based_ and knn.algorithm_.sim_options["shrinkage"] == 50


# ---------------------------------------------------------------- a pipeline
@pytest.mark.parametrize("value, text", [
    ("{reg_all = 'x'}", "parameter ratings_recommender.algo_params.reg_all = 'x' (string): expected a real number "
                        "(an option of surprise.SVD)"),
    ("{biased = 'no'}", "parameter ratings_recommender.algo_params.biased = 'no' (string): expected a boolean"),
    ("{n_factors = 2.5}", "algo_params.n_factors = 2.5 (float): expected an integer"),
    ("{n_factorz = 3}", "parameter ratings_recommender.algo_params has an unknown key 'n_factorz': surprise.SVD "
                        "takes biased, init_mean"),
    ("{random_state = 3}", "algo_params.random_state is set by the experiment itself: use the experiment "
                           "parameter random_state"),
])
def test_a_pipelines_algo_params_are_refused_before_anything_runs(tmp_path, capsys, monkeypatch, value, text):
    _assert_refused_before_running(tmp_path, capsys, monkeypatch, f"ratings_recommender.algo_params={value}", text)


def _assert_refused_before_running(tmp_path, capsys, monkeypatch, setting, text):
    """``--set setting`` on synthetic_ratings exits 2 with ``text`` on stderr, and the experiment never runs."""
    from privrelease.cli import main
    from privrelease.runner.experiments import synthetic_ratings

    def run(*args, **kwargs):  # pragma: no cover - reached only if the refusal is missing
        raise AssertionError("the experiment ran")

    monkeypatch.setattr(synthetic_ratings, "run", run)
    code = main(["run", str(PIPELINES / "synthetic_ratings.toml"), "--set", setting, "-o", str(tmp_path / "out")])
    assert code == 2
    assert text in capsys.readouterr().err


def test_a_pipelines_algo_params_follow_the_chosen_algorithm(tmp_path, monkeypatch):
    from privrelease.cli import main
    from privrelease.runner.experiments import synthetic_ratings

    seen = {}
    monkeypatch.setattr(synthetic_ratings, "run", lambda report, **kw: seen.update(kw) or {"status": "ok"})
    assert main(["run", str(PIPELINES / "synthetic_ratings.toml"), "--set",
                 "ratings_recommender={algorithm = 'KNNBaseline', algo_params = {k = 7, min_k = 2}}",
                 "-o", str(tmp_path / "out")]) == 0
    assert seen["ratings_recommender"] == {"algorithm": "KNNBaseline", "algo_params": {"k": 7, "min_k": 2}}


@pytest.mark.parametrize("sim_options, text", [
    ("{nmae = 'cosine'}", "parameter ratings_recommender.algo_params.sim_options has an unknown key 'nmae': expected a "
                          "key among min_support, name, shrinkage, user_based"),
    ("{user_based = 'no'}", "parameter ratings_recommender.algo_params.sim_options.user_based = 'no' (string): "
                            "expected a boolean"),
    ("{name = 'cos'}", "parameter ratings_recommender.algo_params.sim_options.name = 'cos': expected one of 'cosine', "
                       "'msd', 'pearson', 'pearson_baseline'"),
    ("{min_support = -1}", "parameter ratings_recommender.algo_params.sim_options.min_support = -1: expected an "
                           "integer in [0, 2147483647]"),
    ("{shrinkage = [1]}", "parameter ratings_recommender.algo_params.sim_options.shrinkage = [1] (array): expected a "
                          "finite number, a boolean or a string"),
])
def test_a_pipelines_knn_similarity_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch, sim_options, text):
    setting = f"ratings_recommender={{algorithm = 'KNNBaseline', algo_params = {{sim_options = {sim_options}}}}}"
    _assert_refused_before_running(tmp_path, capsys, monkeypatch, setting, text)


def test_a_pipeline_sets_a_knn_similarity(tmp_path, capsys, monkeypatch):
    from privrelease.cli import main
    from privrelease.runner.experiments import synthetic_ratings

    seen = {}
    monkeypatch.setattr(synthetic_ratings, "run", lambda report, **kw: seen.update(kw) or {"status": "ok"})
    sim = "{name = 'cosine', user_based = false, min_support = 2, shrinkage = 50}"
    assert main(["run", str(PIPELINES / "synthetic_ratings.toml"), "--set",
                 f"ratings_recommender={{algorithm = 'KNNBaseline', algo_params = {{k = 7, sim_options = {sim}}}}}",
                 "-o", str(tmp_path / "out")]) == 0
    spec = seen["ratings_recommender"]
    assert spec == {"algorithm": "KNNBaseline", "algo_params": {"k": 7, "sim_options": {
        "name": "cosine", "user_based": False, "min_support": 2, "shrinkage": 50}}}
    rec = synthetic_ratings._recommender(spec, (1, 5)).fit(_ratings())
    assert rec.algorithm_.sim_options == {"name": "cosine", "user_based": False, "min_support": 2, "shrinkage": 50}
    # an algorithm without a similarity refuses the table by name
    _assert_refused_before_running(tmp_path / "svd", capsys, monkeypatch,
                                   "ratings_recommender.algo_params={sim_options = {name = 'cosine'}}",
                                   "ratings_recommender.algo_params has an unknown key 'sim_options': surprise.SVD")


# ---------------------------------------------------------------- integer codes beyond int64
@pytest.mark.parametrize("codes, shown", [([2**64, 1], "18446744073709551616"), ([1, -2**70], "-1180591620717411303424"),
                                          (np.array([0, 2**65], dtype=object), "36893488147419103232"),
                                          # numpy reads these lists as float64: the value as given, not 9.22e+18
                                          ([-1, 2**63], "9223372036854775808"),
                                          ([[-1, 2**63 - 1], [2, 2**63 + 5]], "9223372036854775813"),
                                          ([1.0, 2**63], "9223372036854775808"), ([-1, 2.5, 2**63], "2.5")])
def test_integer_codes_beyond_int64_are_named_by_their_value(codes, shown):
    from privrelease.utils._validation import as_int64_codes

    # numpy keeps such Python ints as objects: the message said "got dtype object"
    with pytest.raises(ValueError, match=rf"y must hold integer codes \(whole numbers within the int64 range\), "
                                         rf"got {shown}$"):
        as_int64_codes(codes, "y")
    np.testing.assert_array_equal(as_int64_codes(np.array([3, -4], dtype=object), "y"), [3, -4])
    with pytest.raises(ValueError, match="got dtype object"):
        as_int64_codes(np.array([True, 1], dtype=object), "y")


# ---------------------------------------------------------------- the refit rule of a search
def test_the_refit_rule_never_chooses_a_candidate_whose_scoring_failed():
    from privrelease.evaluation import lowest_rmse_within

    # GridSearchCV records a failed scoring as NaN (error_score=nan): np.argmin took the NaN RMSE for the lowest
    results = {"mean_test_neg_rmse": [-1.0, np.nan, -0.9], "mean_test_neg_leakage_bits": [-0.1, -0.1, -0.5]}
    assert lowest_rmse_within(0.2)(results) == 0
    assert lowest_rmse_within()(results) == 2
    # nobody meets the target: the most private candidate among those scored, not a NaN one
    results = {"mean_test_neg_rmse": [-1.0, -0.9, -0.8], "mean_test_neg_adaptive_auc": [-0.9, np.nan, -0.95]}
    with pytest.warns(Warning, match="no candidate meets"):
        assert lowest_rmse_within(max_adaptive_auc=0.6)(results) == 0
    with pytest.raises(ValueError, match=r"every candidate's mean scores hold NaN \(rmse \[nan, nan\]\)"):
        lowest_rmse_within()({"mean_test_neg_rmse": [np.nan, np.nan]})


def test_the_adaptive_auc_scorer_scores_a_two_column_attribute_jointly():
    import warnings

    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import Pipeline

    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_realistic_ratings
    from privrelease.evaluation import joint_attribute, make_privacy_scorer
    from privrelease.recommender import SurpriseRecommender

    X, Y = make_realistic_ratings(160, 30, random_state=0)[:2]
    Y = np.asarray(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("map", QuantizedPrivacyMapper(protect="joint", max_leakage=0.05, random_state=0)),
                         ("rec", SurpriseRecommender(algo_params={"n_epochs": 2}, random_state=0))]).fit(X[:80], Y[:80])
        scorer = make_privacy_scorer("adaptive_auc", random_state=0)
        # the scorer refused y of shape (n, 2): inside cross_val_score / GridSearchCV every score became NaN
        both = scorer(pipe, X[80:], Y[80:])
        assert both == scorer(pipe, X[80:], joint_attribute(Y[80:])[0])
        assert -1 <= both <= -0.5
        hidden = Y[80:].astype(object)
        hidden[:10, 1] = -1  # a user hiding one column hides the joint attribute: left out, as in 1-D
        codes = joint_attribute(Y[80:])[0].copy()
        codes[:10] = -1
        assert scorer(pipe, X[80:], hidden) == scorer(pipe, X[80:], codes)
        scores = cross_val_score(pipe, X, Y, cv=2, scoring=scorer)
    assert np.all(np.isfinite(scores))
