"""Atomic ``fit``: the fitted state is replaced whole, or not at all."""

import copy
import functools
from numbers import Integral


def is_fitted_attribute(name):
    """Whether ``name`` is a fitted attribute in scikit-learn's convention (``coef_``, not ``_cache`` or ``C``)."""
    return name.endswith("_") and not name.startswith("_")


def atomic_fit(fit):
    """Make ``fit`` run on a shallow copy of the estimator and replace the fitted state only when it succeeds.

    A refit that raised (one class among the labels, a bad ``user_ids``, a refused budget) used to leave the
    attributes it had already written (``n_features_in_``, ``classes_``, ``data_range_``) beside the previous
    fit's model: ``InferenceAttack.predict`` then returned one class for every user with a one-column
    ``predict_proba``. A refit that succeeds drops every attribute of the previous fit, including those the
    new fit does not write (``BlurMe.joint_tuples_`` of an earlier 2-D ``y``).

    The copy is shallow, as the mappers' (:class:`privrelease.mappers._base._BaseMapper`): parameters such
    as a ``random_state`` Generator or an ``accountant`` are shared, so a Generator advances and a spend is
    recorded as they would be without the copy.

    Parameters
    ----------
    fit : callable
        The estimator's ``fit(self, *args, **kwargs)``.

    Returns
    -------
    wrapped : callable
        ``fit`` made atomic; it returns the estimator itself.
    """
    @functools.wraps(fit)
    def wrapped(self, *args, **kwargs):
        work = copy.copy(self)
        for name in [k for k in vars(work) if is_fitted_attribute(k)]:
            delattr(work, name)
        fit(work, *args, **kwargs)
        for name in [k for k in vars(self) if is_fitted_attribute(k)]:
            delattr(self, name)
        self.__dict__.update({k: v for k, v in vars(work).items() if is_fitted_attribute(k)})
        return self

    return wrapped


def same_param(a, b):
    """Whether two values of a parameter are the same: both None, equal texts or equal numbers (1 and 1.0)."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and str(a) == str(b)
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, Integral) and isinstance(b, Integral):
        return int(a) == int(b)  # exactly: an integer beyond float64 (10**400) was unequal to itself
    try:
        return float(a) == float(b)
    except (TypeError, ValueError, OverflowError):
        return False


def check_params_unchanged(estimator, recorded, why, *, set_back=False):
    """Refuse when ``set_params`` changed, after fit, a parameter whose fitted value ``recorded`` holds
    (``{name: value at fit}``): ValueError naming it, both values and ``why`` the fitted value matters, advising
    to fit again (``set_back``: or to set the parameter back). The mappers' and the DCLEFEstimator's check.
    """
    from ._validation import plain_value

    for name, fitted in recorded.items():
        current = getattr(estimator, name)
        if not same_param(current, fitted):
            raise ValueError(
                f"{name}={plain_value(current)!r} is not the value this {type(estimator).__name__} was fitted with "
                f"({name}={plain_value(fitted)!r}): {why}; call fit again after set_params"
                + (f" (or set {name} back)" if set_back else ""))
