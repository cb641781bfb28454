"""Atomic ``fit``: the fitted state is replaced whole, or not at all."""

import copy
import functools


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
