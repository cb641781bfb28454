"""Parameter constraints for ``_parameter_constraints`` that scikit-learn's own do not give.

scikit-learn's ``Interval(Integral, ...)`` and ``Interval(Real, ...)`` accept ``True`` and
``False`` (``bool`` is a subclass of ``int``), so ``n_clusters=True`` reached k-means as a
cluster count (and failed there with "an integer is required") and ``delta=True`` became a
budget of 1.0 without a word. :class:`NumberInterval` is the same interval with booleans
refused, as :func:`privrelease.utils.check_number` refuses them for the functions.
"""

import numpy as np
from sklearn.utils._param_validation import Interval

__all__ = ["NumberInterval"]


class NumberInterval(Interval):
    """``sklearn.utils._param_validation.Interval`` that a boolean never satisfies.

    The message scikit-learn raises is unchanged ("must be an int in the range [1, inf) ...
    Got True instead.").
    """

    def is_satisfied_by(self, val):
        if isinstance(val, (bool, np.bool_)):
            return False
        return super().is_satisfied_by(val)
