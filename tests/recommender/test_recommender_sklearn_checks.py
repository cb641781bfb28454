"""scikit-learn's estimator checks on SurpriseRecommender.

The recommender is not a classic regressor: ``y`` in ``fit`` is ignored (it is
the private attribute in a privacy Pipeline), ``predict`` returns a matrix of
predicted ratings (users x items) and ``score(X, y)`` takes a matrix of held-out
ratings of the same shape as ``X``. Checks that assume a 1-D target in ``score``
or a 1-D ``predict`` output are expected to fail, for the reasons below; all
other checks (parameter handling, cloning, fitted-state, n_features_in_, NaN/inf
refusal, pickling, idempotent fit, ...) must pass.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from privrelease.recommender import SurpriseRecommender

_SCORE_2D = ("score(X, y) takes y = held-out ratings, a matrix of the same shape as X "
             "(users x items), not a 1-D target")
_PREDICT_2D = ("sparse input is supported; the check fails only because it asserts that "
               "predict returns shape (n_samples,), while predict returns the (n_users, "
               "n_items) matrix of predicted ratings")

EXPECTED_FAILED = {
    "check_fit_score_takes_y": _SCORE_2D,
    "check_pipeline_consistency": _SCORE_2D,
    "check_estimator_sparse_array": _PREDICT_2D,
    "check_estimator_sparse_matrix": _PREDICT_2D,
}


@parametrize_with_checks(
    [SurpriseRecommender(algo_params={"n_factors": 3, "n_epochs": 5}),
     SurpriseRecommender("BaselineOnly")],
    expected_failed_checks=lambda est: EXPECTED_FAILED,
)
def test_sklearn_compatible_recommender(estimator, check):
    check(estimator)
