"""Tags of TruthfulRegressionMechanism (the estimator checks themselves run in tests/test_common.py).

The generic check data are not in the unit ball and their responses are not
bounded: the instances below use ``clip=True`` (each fit warns with a
PrivacyLeakWarning, silenced here) and a response bound wide enough for the
checks' targets. One instance is private (``epsilon=1``), one is not
(``epsilon=np.inf``) so that the fitting path is checked without noise too.
No check is expected to fail: the estimator declares the ``poor_score``
regressor tag (its coefficients are noisy, and clipping the check data into the
unit ball changes the regression problem), which is what
``check_regressors_train`` consults before demanding R^2 > 0.5.
"""

import numpy as np
import pytest
from sklearn.utils import get_tags

from privrelease.exceptions import PrivacyLeakWarning
from privrelease.regression import TruthfulRegressionMechanism

pytestmark = pytest.mark.filterwarnings("ignore", category=PrivacyLeakWarning)


def test_tags():
    tags = get_tags(TruthfulRegressionMechanism())
    assert tags.regressor_tags.poor_score
    assert tags.non_deterministic  # random_state=None: OS entropy
    assert not get_tags(TruthfulRegressionMechanism(random_state=0)).non_deterministic
    assert not tags.input_tags.sparse
