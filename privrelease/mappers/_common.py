"""Parameter constraints shared by the mappers (the fit template is in ``_base.py``)."""

from numbers import Real

from sklearn.utils._param_validation import StrOptions

from ..utils._constraints import RANDOM_STATE_CONSTRAINT, NumberInterval

__all__ = ["RANDOM_STATE_CONSTRAINT", "LEAKAGE_CONSTRAINT", "BUDGET_CONSTRAINT", "PROTECT_CONSTRAINT"]

LEAKAGE_CONSTRAINT = [StrOptions({"mutual_information", "maximal_leakage"})]
BUDGET_CONSTRAINT = [NumberInterval(Real, 0, None, closed="left"), None]
PROTECT_CONSTRAINT = [StrOptions({"joint", "marginal"})]
