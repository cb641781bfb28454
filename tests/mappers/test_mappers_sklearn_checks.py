"""scikit-learn's estimator checks on the two mappers."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from privrelease.mappers import ErasureMapper, QuantizedPrivacyMapper

EXPECTED_FAILED = {
    "QuantizedPrivacyMapper": {
        "check_sample_weight_equivalence_on_dense_data": (
            "not guaranteed: transform samples a random output per row, and the taste-space SVD and "
            "the k-means initialisation see repeated rows differently from weights, so outputs are "
            "equal in distribution only (it happens to pass on the check's tiny data with 2 clusters)"
        ),
        "check_sample_weight_equivalence_on_sparse_data": (
            "same reason as check_sample_weight_equivalence_on_dense_data (randomized release)"
        ),
    },
    "ErasureMapper": {},
}


def _expected(estimator):
    return EXPECTED_FAILED[type(estimator).__name__]


@parametrize_with_checks(
    [QuantizedPrivacyMapper(random_state=0), ErasureMapper(random_state=0)],
    expected_failed_checks=_expected,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
