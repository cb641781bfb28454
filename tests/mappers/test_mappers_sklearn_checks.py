"""scikit-learn's estimator checks on the two mappers."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from privrelease.mappers import ErasureMapper, QuantizedPrivacyMapper

EXPECTED_FAILED = {
    "QuantizedPrivacyMapper": {},
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
