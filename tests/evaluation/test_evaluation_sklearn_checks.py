"""scikit-learn's estimator checks on the evaluation's two estimators (all pass, none expected to fail)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from privrelease.evaluation import BlurMe, InferenceAttack


@parametrize_with_checks(
    # the forest and the random strategies pass too (checked by hand); kept out for the suite's time
    [BlurMe(), InferenceAttack(random_state=0)],
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
