"""Tags of DCLEFEstimator (the estimator checks themselves run in tests/test_common.py).

One expected failure, for a reason that is the point of the estimator:
``check_dict_unchanged``: ``predict`` spends privacy; it records the payments and
guarantees of each query (``payments_``, ``epsilons_``, ``queries_``) and adds them
to ``epsilon_spent_`` (sequential composition).

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

EXPECTED = {
    "check_dict_unchanged": "predict records payments and spent privacy (sequential composition)",
}


def test_tags():
    tags = get_tags(DCLEFEstimator())
    assert tags.non_deterministic and tags.regressor_tags.poor_score
    assert not tags.input_tags.sparse
