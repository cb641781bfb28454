"""Parameter constraints shared by the mappers (the fit template is in ``_base.py``)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import StrOptions

from ..utils import RandomSource
from ..utils._constraints import NumberInterval

__all__ = ["RANDOM_STATE_CONSTRAINT", "LEAKAGE_CONSTRAINT", "BUDGET_CONSTRAINT", "PROTECT_CONSTRAINT"]

RANDOM_STATE_CONSTRAINT = [
    None,
    NumberInterval(Integral, 0, None, closed="left"),
    np.random.RandomState,
    np.random.Generator,
    RandomSource,
]
LEAKAGE_CONSTRAINT = [StrOptions({"mutual_information", "maximal_leakage"})]
BUDGET_CONSTRAINT = [NumberInterval(Real, 0, None, closed="left"), None]
PROTECT_CONSTRAINT = [StrOptions({"joint", "marginal"})]
