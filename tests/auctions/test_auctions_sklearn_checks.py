"""Tags of DCLEFEstimator (the estimator checks themselves run in tests/test_common.py,
with no expected failure: ``predict`` records what it spends on a PrivacyAccountant and
leaves the estimator unchanged).

The estimator declares ``non_deterministic`` (skipping the subset/sample-order
invariance checks, which would compare two independent noisy releases) and
``poor_score``. ``unit_costs`` defaults to ones so that the generic checks can fit it;
``data_range=None`` infers the interval from the targets with a PrivacyLeakWarning,
silenced here.
"""

import pytest
from sklearn.utils import get_tags

from privrelease.auctions import DCLEFEstimator
from privrelease.exceptions import PrivacyLeakWarning

pytestmark = pytest.mark.filterwarnings("ignore", category=PrivacyLeakWarning)


def test_tags():
    tags = get_tags(DCLEFEstimator())
    assert tags.non_deterministic and tags.regressor_tags.poor_score
    assert not tags.input_tags.sparse
