"""The biased Laplace mechanism of Khalili, Zhang and Liu, beside the unbiased one."""

import numbers

import numpy as np

from ..auctions._dclef import delivered_epsilons
from ..noise import Laplace
from ..noise._laplace import biased_laplace_mse
from ..utils import check_number, check_random_source
from ..utils._validation import as_float_array, holds_only, refuse_booleans, refuse_masked

__all__ = ["BiasedLaplaceMechanism"]


def _real_array(values, name):
    """``values`` as float64; strings ("0.5", parsed before) and other non-numbers are a TypeError."""
    raw = np.asarray(refuse_masked(values, name, "used"))
    refuse_booleans(values, name)
    if raw.dtype.kind in "USV" or (raw.dtype.kind == "O" and not holds_only(raw, numbers.Real,
                                                                               but=(bool, np.bool_))):
        raise TypeError(f"{name} must hold real numbers, got {values!r:.80}")
    return as_float_array(raw, name)


def _check_weights(a):
    a = _real_array(a, "weights a")
    if a.ndim == 0:
        a = a[None]
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"weights a must be a non-empty 1-d array, got shape {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        bad = a[~(np.isfinite(a) & (a >= 0) & (a <= 1))][0]
        raise ValueError(f"weights a must lie in [0, 1], got {float(bad)!r}")
    return a


def seller_epsilons(a, b):
    """``epsilon_i = a_i / b``, the privacy Laplace noise of scale ``b`` gives seller ``i`` of the query
    ``sum_i a_i d_i`` over ``d_i in [0, 1]`` (sensitivity ``a_i``), in exact arithmetic rounded up (0 where ``a_i =
    0``, ``inf`` for ``b = 0``). The float quotient ``a_i / b`` was below the exact ratio for about half the sellers
    (493 of 1,000 random weights at ``b = 0.37``): a guarantee reported an ulp stronger than the noise gives."""
    a = np.asarray(a, dtype=np.float64)
    b = float(b)
    if b == 0:
        return np.where(a > 0, np.inf, 0.0)
    if np.isinf(b):
        return np.zeros(a.shape)
    return delivered_epsilons(a, np.ones(a.shape), (0.0, 1.0), b)


class BiasedLaplaceMechanism:
    r"""``A_new(D) = sum_i a_i d_i + sum_i (1 - a_i) / 2 + Lap(b)`` for the sum query.

    Each seller ``i`` holds ``d_i in [0, 1]``; the buyer wants ``Q(D) = sum_i d_i``.
    Seller ``i``'s record enters with weight ``a_i in [0, 1]``; the missing
    weight is replaced by the midpoint ``1/2`` of the data range, which caps the
    bias. With ``a_i = 1`` for all ``i`` this is the unbiased Laplace mechanism
    ``A_u(D) = sum_i d_i + Lap(b)`` (:meth:`unbiased`).

    * Privacy: changing ``d_i`` moves the noiseless output by at most ``a_i``,
      so ``A_new`` is ``epsilon_i = a_i / b``-differentially private with
      respect to seller ``i`` (``epsilon_i = 0`` when ``a_i = 0``, whatever ``b``).
    * Bias: ``E[A_new(D)] - Q(D) = sum_i (1 - a_i)(1/2 - d_i)``, at most
      ``sum_i (1 - a_i) / 2`` in absolute value (attained at ``d = 0`` or ``d = 1``).
    * Accuracy: the worst-case mean squared error over ``D in [0, 1]^n`` is
      ``K = (sum_i (1 - a_i) / 2)^2 + 2 b^2`` (squared bias plus Laplace variance).

    Parameters
    ----------
    a : array-like of shape (n_sellers,)
        Weights in ``[0, 1]``.
    b : float
        Laplace scale, >= 0; ``b = 0`` is allowed only when every ``a_i = 0``
        (the output then ignores the data).
    random_state : None, int or Generator, default=None
        ``None`` draws noise from the operating system's entropy; a seed is for
        tests and experiments only.

    Attributes
    ----------
    a : ndarray of shape (n_sellers,)
    b : float
    n_sellers : int

    References
    ----------
    .. [1] M. M. Khalili, X. Zhang, M. Liu, "Contract Design for Purchasing
       Private Data Using a Biased Differentially Private Algorithm" (slides:
       "Two differentially private algorithms", table of privacy, accuracy, bias).

    Examples
    --------
    >>> from privrelease.contracts import BiasedLaplaceMechanism
    >>> mech = BiasedLaplaceMechanism([1.0, 0.5], b=0.5, random_state=0)
    >>> mech.epsilons.tolist(), mech.accuracy
    ([2.0, 1.0], 0.5625)
    >>> float(mech.bias([0.0, 0.0]))
    0.25
    """

    def __init__(self, a, b, *, random_state=None):
        self.a = _check_weights(a)
        self.b = check_number(b, "b", low=0)
        if self.b == 0 and np.any(self.a > 0):
            raise ValueError(
                "b = 0 releases a deterministic function of the data and is only allowed when "
                f"every weight is 0; got a = {self.a.tolist()!r}"
            )
        self.n_sellers = self.a.size
        # the query's sensitivity to one seller is at most max_i a_i: with every a_i = 0 and b = 0 the noise of scale 0
        # (on a constant) warned 'no differential privacy' under the default sensitivity 1, while every eps_i is 0
        self._noise = Laplace(scale=self.b, sensitivity=float(np.max(self.a)),
                              random_state=check_random_source(random_state))

    @classmethod
    def unbiased(cls, n_sellers, b, *, random_state=None):
        """The unbiased Laplace mechanism ``A_u``: all weights 1.

        Parameters
        ----------
        n_sellers : int
            Number of sellers, >= 1.
        b : float
            Laplace scale, > 0.
        random_state : None, int or Generator, default=None
            As for the constructor.

        Returns
        -------
        BiasedLaplaceMechanism
        """
        n = check_number(n_sellers, "n_sellers", low=1, integer=True)
        return cls(np.ones(n), b, random_state=random_state)

    @property
    def epsilons(self):
        """Per-seller privacy ``epsilon_i = a_i / b`` (0 where ``a_i = 0``), rounded up: never below what the noise of
        scale ``b`` delivers (see :func:`seller_epsilons`)."""
        return seller_epsilons(self.a, self.b)

    @property
    def max_bias(self):
        """``sum_i (1 - a_i) / 2``, the largest absolute bias over ``[0, 1]^n``."""
        return float(np.sum(1.0 - self.a) / 2.0)

    @property
    def accuracy(self):
        """Worst-case MSE ``K = (sum_i (1 - a_i) / 2)^2 + 2 b^2``."""
        return biased_laplace_mse(self.max_bias, self.b)

    def _check_data(self, d):
        d = _real_array(d, "data")
        if d.shape != (self.n_sellers,):
            raise ValueError(f"data must have shape ({self.n_sellers},), got {d.shape}")
        if not np.all(np.isfinite(d)) or np.any(d < 0) or np.any(d > 1):
            bad = d[~(np.isfinite(d) & (d >= 0) & (d <= 1))][0]
            raise ValueError(f"every d_i must lie in [0, 1], got {float(bad)!r}")
        return d

    def bias(self, d):
        """``E[A_new(D)] - Q(D) = sum_i (1 - a_i) (1/2 - d_i)``.

        Parameters
        ----------
        d : array-like of shape (n_sellers,)
            The sellers' records, each in ``[0, 1]``.

        Returns
        -------
        float
        """
        d = self._check_data(d)
        return float(np.sum((1.0 - self.a) * (0.5 - d)))

    def mse(self, d):
        """Mean squared error at ``D``: ``bias(D)^2 + 2 b^2`` (at most :attr:`accuracy`).

        Parameters
        ----------
        d : array-like of shape (n_sellers,)
            The sellers' records, each in ``[0, 1]``.

        Returns
        -------
        float
        """
        return biased_laplace_mse(self.bias(d), self.b)

    def release(self, d, size=None):
        """Answer the sum query on ``d`` (``size`` independent answers if given).

        Parameters
        ----------
        d : array-like of shape (n_sellers,)
            The sellers' records, each in ``[0, 1]``.
        size : None, int or tuple of int, default=None
            Shape of independent answers; None gives one.

        Returns
        -------
        float or ndarray
            ``sum_i a_i d_i + sum_i (1 - a_i) / 2`` plus Laplace(0, ``b``) noise.
        """
        d = self._check_data(d)
        centre = float(self.a @ d + np.sum(1.0 - self.a) / 2.0)
        return centre + self._noise.sample(size)

    def __repr__(self):
        return f"BiasedLaplaceMechanism(a={self.a.tolist()!r}, b={self.b!r})"
