"""Warnings and errors raised by privrelease.

Errors subclass the built-in ``ValueError`` or ``RuntimeError`` so that callers
that catch those keep working; warnings subclass ``UserWarning``.
"""

from sklearn.exceptions import ConvergenceWarning as _SkConvergenceWarning

__all__ = [
    "PrivacyLeakWarning",
    "ConvergenceWarning",
    "InfeasibleBudgetError",
    "SolverError",
    "BudgetExceededError",
    "UnseenCategoryWarning",
    "ComplexDataError",
    "LargeProgramWarning",
]


class PrivacyLeakWarning(UserWarning):
    """The privacy guarantee actually delivered is weaker than the one asked for.

    Raised, for example, when inputs had to be clipped so that a sensitivity
    bound holds, or when ``epsilon=inf`` releases a value exactly. A seeded
    (non-secure) random source on a privacy path is the documented setting of
    ``random_state=int`` (tests and experiments) and is not warned about: the
    estimators that record on an accountant mark such releases
    ``secure_noise=False`` in its records.
    """


class ConvergenceWarning(_SkConvergenceWarning):
    """A solver stopped before it could certify optimality to the requested tolerance."""


class UnseenCategoryWarning(UserWarning):
    """A category never seen during ``fit`` was met in ``transform`` and handled as documented."""


class InfeasibleBudgetError(ValueError):
    """A distortion budget or privacy target that no mapping can meet.

    Attributes
    ----------
    smallest_feasible : float or None
        A budget or target that can be met, the smallest known (None when unknown; ``inf`` when no mapping is
        allowed at all). From the mapping solvers it is reachable: passed back as the ``delta`` or ``max_leakage``
        it was refused for, it is accepted and answered. A distortion budget's is the smallest distortion itself;
        a leakage target's is the leakage of an allowed mapping the solver found (the least-leaking one as far as
        its solves resolve, so the true smallest may be a little below it), rounded up so that the value read back
        as a target is at least that leakage, and where one of a few targets up to 1e-9 (relative) above it is
        answered with a certified mapping by the same solver, the first such target (the message then names it). Elsewhere it may be an infimum that is not attained
        (:func:`~privrelease.contracts.design_contract`'s accuracy of 1/4).
    """

    def __init__(self, message, smallest_feasible=None):
        super().__init__(message)
        self.smallest_feasible = smallest_feasible


class SolverError(RuntimeError):
    """No solver reached a certified optimal answer."""


class BudgetExceededError(ValueError):
    """A release would spend more privacy than a budget allows.

    Raised by :class:`~privrelease.accounting.PrivacyAccountant` when a release
    would take the accountant's overall spending past its budget ``epsilon``
    (:meth:`~privrelease.accounting.PrivacyAccountant.check`, ``spend``), and by
    :class:`~privrelease.auctions.DCLEFEstimator` with ``cap_policy="raise"`` when
    a query would take an individual past her ``epsilon_cap``. The message says
    which budget, what was asked and what remains.
    """


class ComplexDataError(TypeError, ValueError):
    """Complex numbers where real numbers are expected (ratings, features, categories).

    A ``TypeError`` (the wrong kind of number) and a ``ValueError`` (what scikit-learn's
    estimator checks expect for complex data), so callers catching either keep working.
    """


class LargeProgramWarning(UserWarning):
    """The program a ``fit`` solves is large enough to take minutes.

    Issued before the solve, naming the size of the program (for ``ErasureMapper``, the
    erasure alphabet) and how to make it smaller, so that a long fit is never a silent one.
    """
