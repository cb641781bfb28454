"""Parameter constraints for ``_parameter_constraints`` that scikit-learn's own do not give.

scikit-learn's ``Interval(Integral, ...)`` and ``Interval(Real, ...)`` accept ``True`` and
``False`` (``bool`` is a subclass of ``int``), so ``n_clusters=True`` reached k-means as a
cluster count (and failed there with "an integer is required") and ``delta=True`` became a
budget of 1.0 without a word. :class:`NumberInterval` is the same interval with booleans
refused, as :func:`privrelease.utils.check_number` refuses them for the functions.
"""

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ._random import RandomSource

__all__ = ["NumberInterval", "RANDOM_STATE_CONSTRAINT"]


class NumberInterval(Interval):
    """``sklearn.utils._param_validation.Interval`` that a boolean never satisfies.

    The message scikit-learn raises is unchanged ("must be an int in the range [1, inf) ...
    Got True instead.").
    """

    def is_satisfied_by(self, val):
        if isinstance(val, (bool, np.bool_)):
            return False
        return super().is_satisfied_by(val)


#: what every public estimator's ``random_state`` accepts: everything
#: :func:`privrelease.utils.check_random_source` turns into a source (scikit-learn's
#: ``"random_state"`` constraint less numpy's Generator and privrelease's RandomSource;
#: negative seeds are refused here rather than at fit)
RANDOM_STATE_CONSTRAINT = [
    None,
    NumberInterval(Integral, 0, None, closed="left"),
    np.random.RandomState,
    np.random.Generator,
    RandomSource,
]
