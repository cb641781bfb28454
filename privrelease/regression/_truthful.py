"""The Private Regression Mechanism (Algorithm 2 of Cummings, Ioannidis and Ligett).

The text copy of the paper lost its formulas. What is implemented here is
rebuilt from what the text still states (the mechanism's structure, Algorithm 2)
and from the standard results it cites; every constant is derived in the
docstrings below, so that it can be checked independently of the paper.

Notation used throughout: ``n`` players, ``d`` features, features ``x_i`` with
``||x_i||_2 <= 1``, responses ``|y_i| <= Y`` (``response_bound``), scikit-learn's
ridge objective ``||y - X w||^2 + alpha ||w||^2``.
"""

import math
import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Options
from sklearn.utils.validation import check_is_fitted, validate_data

from ..accounting import PrivacyAccountant
from ..accounting._accountant import AccountedMixin
from ..exceptions import PrivacyLeakWarning
from ..noise import VectorLaplace
from ..noise._laplace import _noise_scale, _proven_epsilon, _warn_infinite_epsilon
from ..utils import check_number, check_random_source
from ..utils._linalg import ridge_svd
from ..utils._validation import (check_real_target, check_same_index, check_table, format_bound, largest_passing,
                                 plain_value, refuse_masked, refuse_missing_target, user_stacklevel)
from ..utils._constraints import RANDOM_STATE_CONSTRAINT, NumberInterval
from ..utils._fit import atomic_fit

__all__ = [
    "TruthfulRegressionMechanism",
    "best_response_factor",
    "brier_payment",
    "parameter_schedule",
    "ridge_sensitivity",
]

# features whose norm exceeds 1 by less than this are rounding, not data outside the ball
_NORM_TOL = 1e-9


#: ulps the computed sensitivity is rounded up by (each of its at most seven operations rounds by half an ulp)
_SENSITIVITY_ULPS = 4


def _sensitivity(Y, alpha, n):
    """``2 Y / alpha + Y sqrt(n) / alpha^1.5`` in float64 (inf where it overflows).

    ``2 Y`` or ``Y sqrt(n)`` alone overflowed for a Y whose sensitivity is a float64 (Y = 1.5e308 at alpha = 3,
    n = 7): the sensitivity is ``Y`` times ``2 / alpha + sqrt(n) / alpha^1.5``, and the terms are summed first only
    where that factor overflows (a tiny alpha, with a Y small enough).
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        # math.sqrt: numpy's sqrt of an int beyond 2**64 (an object) failed with "no callable sqrt method";
        # sqrt(n) / alpha / sqrt(alpha), not / alpha ** 1.5: alpha ** 1.5 overflowed to inf above alpha ~ 1e205 and
        # the term read 0 (ridge_sensitivity(10**300, 1e206) was 2e-206 where it is 1e-159)
        a = np.float64(alpha)
        term = math.sqrt(n) / a / np.sqrt(a)
        sens = np.float64(Y) * (2.0 / a + term)
        if not np.isfinite(sens):
            sens = 2.0 * Y / a + Y * term
        if not np.isfinite(sens):  # a tiny alpha beside a tiny Y: (Y / alpha) (2 + sqrt(n / alpha)) stays finite
            sens = (np.float64(Y) / a) * (2.0 + math.sqrt(n) / np.sqrt(a))
        # an upper bound: the half-ulp roundings of the few operations above could otherwise leave the noise
        # calibrated to a sensitivity an ulp or two below the exact one
        # (Y = 0 is exactly 0; a positive Y whose sensitivity underflowed to 0 gets the smallest positive float)
        for _ in range(_SENSITIVITY_ULPS if Y != 0 else 0):
            sens = np.nextafter(sens, np.inf)
        return float(sens)


def ridge_sensitivity(n_samples, alpha, response_bound=1.0):
    r"""L2 sensitivity of the ridge estimator on the unit ball with bounded responses.

    For data sets of ``n_samples`` records ``(x_i, y_i)`` with ``||x_i||_2 <= 1``
    and ``|y_i| <= Y``, and the ridge estimator
    ``theta(D) = argmin ||y - X theta||^2 + alpha ||theta||^2 = (X^T X + alpha I)^{-1} X^T y``,
    replacing one record changes ``theta`` by at most

    .. math::

        \Delta(n, \alpha, Y) = \frac{2Y}{\alpha}\Big(1 + \frac{\sqrt{n}}{2\sqrt{\alpha}}\Big)
                            = \frac{2Y}{\alpha} + \frac{Y\sqrt{n}}{\alpha^{3/2}}.

    **Derivation** (Chaudhuri, Monteleoni and Sarwate 2011, Lemma 7; the paper's
    Lemma 6 follows the same route but its constants were lost in the text copy).

    1. *Strong convexity.* ``F_D(theta) = sum_i l(theta; x_i, y_i) + alpha ||theta||^2``
       with ``l = (y - theta^T x)^2`` has Hessian ``2 X^T X + 2 alpha I``, which is
       ``>= 2 alpha I``: ``F_D`` is ``2 alpha``-strongly convex (paper, Lemma 13).
    2. *Lemma 7 of CMS11.* If ``G`` is ``lambda``-strongly convex, ``theta_1``
       minimises ``G`` and ``theta_2`` minimises ``G + g``, then
       ``lambda ||theta_1 - theta_2||^2 <= (grad G(theta_2) - grad G(theta_1))^T (theta_2 - theta_1)
       = -grad g(theta_2)^T (theta_2 - theta_1)``, hence
       ``||theta_1 - theta_2|| <= ||grad g(theta_2)|| / lambda``. Take ``G = F_D`` and
       ``g = F_D' - F_D = l(.; x', y') - l(.; x, y)`` for the neighbour ``D'``.
    3. *Lipschitz constant on the relevant domain.* ``||grad l(theta; x, y)|| =
       2 |theta^T x - y| ||x|| <= 2 (||theta|| + Y)``, so
       ``||grad g(theta_2)|| <= 4 (||theta_2|| + Y)``: the squared loss is
       ``L = 2 (R + Y)``-Lipschitz on the ball of radius ``R`` that holds the estimator.
    4. *Where the estimator lives* (the ``Y / sqrt(lambda)``-type argument).
       ``theta(D) = (X^T X + alpha I)^{-1} X^T y``; each singular value ``s`` of ``X``
       gives a factor ``s / (s^2 + alpha) <= 1 / (2 sqrt(alpha))`` (AM-GM), and
       ``||y|| <= Y sqrt(n)``, so ``R = Y sqrt(n) / (2 sqrt(alpha))``.
    5. Hence ``Delta <= 4 (R + Y) / (2 alpha) = 2 (Y + R) / alpha``, the formula above.

    In the normalised form of CMS11, ``(1/n) sum_i l + (lambda/2) ||theta||^2``,
    scikit-learn's ``alpha`` is ``lambda = 2 alpha / n`` and the bound reads
    ``2 L / (n lambda)`` with ``L = 2 (R + Y)``, CMS11's Corollary 8. The
    ``sqrt(n)`` term is not an artefact: with ``n - 1`` records
    ``x = sqrt(alpha / n) e_1, y = Y`` the estimator does reach norm of order
    ``R``, and one record's pull on it is then of order ``Y sqrt(n) / alpha^{3/2}``.

    Parameters
    ----------
    n_samples : int
        Number of records the estimator is computed on, >= 1.
    alpha : float
        Ridge regularisation, > 0 (scikit-learn's ``Ridge(alpha=...)``).
    response_bound : float, default=1.0
        ``Y`` with ``|y_i| <= Y``, >= 0.

    Returns
    -------
    sensitivity : float

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially private
       empirical risk minimization", JMLR 12, 2011, Lemma 7 and Corollary 8.
    .. [2] R. Cummings, S. Ioannidis, K. Ligett, "Truthful Linear Regression",
       COLT 2015, Lemma 6 and Lemma 13.

    Examples
    --------
    >>> from privrelease.regression import ridge_sensitivity
    >>> round(ridge_sensitivity(100, alpha=4.0, response_bound=1.0), 4)
    1.75
    """
    n = check_number(n_samples, "n_samples", low=1, integer=True)
    alpha = check_number(alpha, "alpha", low=0, low_inclusive=False)
    Y = check_number(response_bound, "response_bound", low=0)
    sens = _sensitivity(Y, alpha, n)
    if not np.isfinite(sens):
        # the largest Y whose sensitivity is a float64 at this alpha and n: blaming alpha alone sent a user with
        # response_bound=1e308 (and alpha=1) to raise alpha enormously instead of rescaling y
        with np.errstate(over="ignore", divide="ignore", under="ignore"):
            a = np.float64(alpha)
            # max / (2 / alpha + sqrt(n) / alpha^1.5), as alpha * max / (2 + sqrt(n / alpha)): the factor per unit
            # of Y overflowed for alpha ~ 1e-206 where a response bound of 0.1 still fits
            largest = float(np.finfo(np.float64).max / (2.0 + math.sqrt(n) / np.sqrt(a)) * a)
        per_y = largest > 0.0
        # the quotient can be a few ulps above the largest Y whose sensitivity is computed finite: the bound stated
        # is one that passes (1.5288563654189253e+308 was stated at alpha = 3, n = 7, and refused)
        for _ in range(64):
            if np.isfinite(_sensitivity(largest, alpha, n)):
                break
            largest = float(np.nextafter(largest, 0.0))
        what = (f"expected response_bound <= {format_bound(largest)} at this alpha (rescale the responses y), "
                "or a larger alpha" if per_y else
                f"alpha={alpha!r} is too small for any response bound: expected a larger alpha")
        raise ValueError(f"the sensitivity 2 Y / alpha + Y sqrt(n) / alpha^1.5 overflows float64 for "
                         f"response_bound={Y!r}, alpha={alpha!r} and n={n}: {what}")
    return sens


def _check_payment_range(scale, offset, n_payments=1, names=("payment_scale", "payment_offset")):
    """``scale`` and ``offset`` whose largest payment ``offset + scale`` (and total over ``n_payments``)
    is a float64 (1e308 + 1e308 paid ``inf``); ``names`` are the parameters' names in the message."""
    with np.errstate(over="ignore"):
        top = np.float64(offset) + np.float64(scale)
        total = top * np.float64(n_payments)
    if not np.isfinite(total):
        what = "a payment" if not np.isfinite(top) else f"the {n_payments} payments together"
        raise ValueError(f"{names[1]}={offset!r} and {names[0]}={scale!r}: {what} could reach "
                         f"{float(total)!r}, beyond float64; expected offset + scale at most "
                         f"{format_bound(_largest_top(n_payments))}")


def _largest_top(n_payments):
    """The largest ``offset + scale`` whose total over ``n_payments`` payments is a float64 (``max / n`` rounded
    can overflow once multiplied back)."""
    with np.errstate(over="ignore"):
        return largest_passing(np.finfo(np.float64).max / n_payments,
                               lambda t: bool(np.isfinite(np.float64(t) * np.float64(n_payments))))


def brier_payment(outcome, prediction, *, response_bound=1.0, scale=1.0, offset=0.0):
    r"""Rescaled Brier payment ``offset + scale * B(p, q)`` on ``[-Y, Y]``.

    Both arguments are first clipped to ``[-Y, Y]`` and mapped to ``[0, 1]`` by
    ``t -> (t + Y) / (2 Y)``; then

    .. math:: B(p, q) = 1 - (p - 2 p q + q^2) = 1 - (q - p)^2 - p (1 - p),

    the expected Brier score of the forecast ``q`` for an event of probability
    ``p`` (paper, Appendix A.1). ``B`` is affine in the outcome ``p`` and strictly
    concave in the prediction ``q``, so ``E_p[B(p, q)] = B(E[p], q)`` is uniquely
    maximised at ``q = E[p]``: a strictly proper scoring rule, and so is every
    positive-affine rescaling ``offset + scale * B`` (Bickel 2007). On
    ``[0, 1]^2``, ``B`` ranges over ``[0, 1]`` (0 at ``(p, q) = (0, 1), (1, 0)``,
    1 at ``p = q in {0, 1}``), so payments lie in ``[offset, offset + scale]``
    and are non-negative whenever ``offset >= 0`` and ``scale >= 0``.

    Parameters
    ----------
    outcome : array-like
        The peer quantity ``p`` (here: the other group's noisy prediction).
    prediction : array-like
        The player's prediction ``q`` derived from her own report, of the shape of
        ``outcome`` (one prediction per outcome; two scalars are one payment).
        Shapes that differ are refused, not broadcast: a 1-element prediction
        would be scored against every outcome, and an ``(n, 1)`` column against
        ``n`` outcomes would pay ``n x n`` times (broadcast them first with
        ``numpy.broadcast_arrays`` when that is meant).
    response_bound : float, default=1.0
        ``Y``; both arguments are clipped to ``[-Y, Y]``. Must be > 0.
    scale, offset : float
        Non-negative rescaling constants.

    Returns
    -------
    payment : ndarray
        Of the shape of ``outcome`` and ``prediction``.

    Raises
    ------
    ValueError
        ``outcome`` and ``prediction`` of different shapes (naming both), or holding NaN.

    Examples
    --------
    >>> from privrelease.regression import brier_payment
    >>> float(brier_payment(1.0, 1.0)), float(brier_payment(-1.0, 1.0))
    (1.0, 0.0)
    """
    Y = check_number(response_bound, "response_bound", low=0, low_inclusive=False)
    scale = check_number(scale, "scale", low=0)
    offset = check_number(offset, "offset", low=0)
    _check_payment_range(scale, offset, names=("scale", "offset"))
    check_same_index(outcome, prediction, "prediction", x_name="outcome",
                     consequence="each outcome would be scored against another record's prediction")
    arrays = []
    for name, value in (("outcome", outcome), ("prediction", prediction)):
        arr = check_real_target(np.asarray(refuse_masked(value, name, "used")), name).astype(float)
        if np.any(np.isnan(arr)):
            # clipping keeps NaN: the payment would be NaN
            raise ValueError(f"{name} must not contain NaN, got {plain_value(value)!r}")
        arrays.append(arr)
    if arrays[0].shape != arrays[1].shape:
        # numpy broadcast them: one prediction (shape (1,)) was scored against every outcome, and a column of
        # predictions (n, 1) against a row of outcomes (n,) gave n x n payments, each record paid n times
        raise ValueError(f"outcome and prediction must have the same shape (one prediction per outcome), got "
                         f"shapes {arrays[0].shape} and {arrays[1].shape}; to score one value against many, "
                         "broadcast them first (numpy.broadcast_arrays(outcome, prediction))")
    # t -> (t / Y + 1) / 2 on [-Y, Y]: (t + Y) / (2 Y) overflowed for Y near float64's max (a NaN payment)
    with np.errstate(over="ignore"):
        p = (np.clip(arrays[0] / Y, -1.0, 1.0) + 1.0) / 2.0
        q = (np.clip(arrays[1] / Y, -1.0, 1.0) + 1.0) / 2.0
    b = 1.0 - (p - 2.0 * p * q + q * q)
    # rounding can leave -1e-17; the exact value lies in [0, 1]
    return offset + scale * np.clip(b, 0.0, 1.0)


def _row_norms(X):
    """Euclidean norms of the rows of ``X`` as ``max_j |x_j|`` times the norm of ``x / max_j |x_j|``.

    The second factor lies in ``[1, sqrt(d)]`` (1 for a zero row), so neither overflows nor underflows where
    the norm itself is in float64's range, and a row whose norm is beyond it (``[3e200, 4e200]``) still scales
    to unit norm (numpy's ``norm`` squares the entries: ``inf``, or 0 for ``[1e-200, 1e-200]``).
    """
    top = np.max(np.abs(X), axis=1) if X.shape[1] else np.zeros(X.shape[0])
    safe = np.where(top > 0, top, 1.0)
    return top, np.linalg.norm(X / safe[:, None], axis=1)


def _onto_ball(X, over):
    """``X`` with the rows ``over`` (norm above 1) scaled onto the unit ball, so that every row's computed norm is
    at most 1: the sensitivity of :func:`ridge_sensitivity` assumes ``||x_i|| <= 1``, and a row of norm
    ``1 + 1e-9`` (accepted as rounding, within ``_NORM_TOL``) was used unscaled. ``x / ||x||`` can still round a
    hair above 1; such rows are shrunk by an ulp per entry until they are not."""
    if not over.any():
        return X
    X = X.copy()
    top, unit = _row_norms(X[over])
    X[over] = X[over] / top[:, None] / unit[:, None]
    rows = np.flatnonzero(over)
    for _ in range(64):
        top, unit = _row_norms(X[rows])
        rows = rows[top * unit > 1.0]
        if rows.size == 0:
            break
        X[rows] = np.nextafter(X[rows], 0.0)
    return X


def best_response_factor(n_samples, n_features, alpha):
    r"""Predicted ratio of a player's payoff-maximising report to her true response.

    The peer estimator is ridge regression, which shrinks: a player who expects
    the other group's prediction ``p_i`` to be ``E[p_i] = f q_i(y_i)`` maximises
    her expected Brier payment by reporting ``y_hat_i = f y_i`` (her prediction
    ``q_i`` is linear in her report). This function gives ``f`` for features
    uniform in the unit ball:

    .. math:: f(n, d, \alpha) = \frac{m}{m + \alpha (d + 2)}, \qquad m = \lfloor n / 2 \rfloor .

    **Derivation.** (1) The Brier rule is strictly proper and ``B(p, q)`` is
    affine in ``p``, so ``E[B(p, q)] = B(E[p], q)`` is maximised at
    ``q = E[p]`` (:func:`brier_payment`); the Laplace noise has mean 0.
    (2) With the peer group's features ``X_o`` fixed and their responses from the
    model ``y = X_o theta + z``, ``E[theta_hat_o | theta] = S theta`` with
    ``S = (X_o^T X_o + alpha I)^{-1} X_o^T X_o``, so
    ``E[p_i] = x_i^T S E[theta | x_i, y_i]``. (3) Her posterior mean of ``theta``
    is ``c x_i y_i`` (Gaussian prior ``N(0, tau^2 I)``:
    ``c = tau^2 / (sigma^2 + tau^2 ||x_i||^2)``; the flat prior is the limit), and
    her truthful prediction is ``q_i(y_i) = c ||x_i||^2 y_i``. Hence
    ``E[p_i] = f_i q_i(y_i)`` with the Rayleigh quotient
    ``f_i = x_i^T S x_i / ||x_i||^2`` (reported exactly, per player, by
    :attr:`TruthfulRegressionMechanism.best_response_factors_`). (4) For ``m``
    features uniform in the unit ball ``X_o^T X_o ~ m E[x x^T] = m I / (d + 2)``
    (paper, Lemma 11), which gives ``f``. The smaller group (``m = floor(n/2)``)
    is the peer of the larger one, the worst case. Clipping of ``p`` and ``q``
    to ``[-Y, Y]`` is ignored (it matters only near the bound).

    **Within 10 %.** ``f >= 1 - t`` exactly when ``alpha (d + 2) <= m t / (1 - t)``:
    ``alpha <= m / (9 (d + 2))`` for ``t = 0.1``. The per-player ``f_i`` spread
    around ``f`` by the fluctuations of ``X_o^T X_o`` (relative size about
    ``1 / sqrt(m)``), so :func:`parameter_schedule` aims at ``1 - t / 2``.

    Parameters
    ----------
    n_samples : int
        Number of players ``n``, >= 2.
    n_features : int
        Dimension ``d``, >= 1.
    alpha : float
        Ridge parameter, > 0.

    Returns
    -------
    factor : float
        In (0, 1); 1 means truthful reports are optimal.

    See Also
    --------
    parameter_schedule : the default schedule keeps this factor >= 0.95.

    References
    ----------
    .. [1] R. Cummings, S. Ioannidis, K. Ligett, "Truthful Linear Regression",
       COLT 2015, Algorithm 2, Lemma 11, Theorem 3 (approximate truthfulness).

    Examples
    --------
    >>> from privrelease.regression import best_response_factor
    >>> round(best_response_factor(2000, 2, alpha=5.0), 3)
    0.98
    """
    n = check_number(n_samples, "n_samples", low=2, integer=True)
    d = check_number(n_features, "n_features", low=1, integer=True)
    alpha = check_number(alpha, "alpha", low=0, low_inclusive=False)
    m = n // 2
    return float(m / (m + alpha * (d + 2)))


def parameter_schedule(n_samples, n_features, *, response_bound=1.0, cost_threshold=1.0,
                       privacy_exponent=0.6, epsilon_constant=1.0, alpha_constant=1.0,
                       response_tolerance=0.1):
    r"""Parameters of the Private Regression Mechanism as functions of ``n``.

    The paper's Corollary 1 fixes ``epsilon``, the ridge parameter and the
    payment constants as powers of ``n``, but the exponents were lost in the text
    copy. This function re-derives a schedule that has the four properties the
    text states (approximately truthful, accurate, individually rational for
    players with cost below a threshold, budget tending to zero), from the
    bounds used in this module. With ``q = privacy_exponent`` in ``(1/2, 1)``:

    * ``epsilon(n) = c_eps n^{-q}``. Under the paper's Assumption 1 a player's
      privacy cost is at most ``c_i epsilon_J^2`` where ``epsilon_J = 2 epsilon``
      is the joint-DP level (:attr:`TruthfulRegressionMechanism.epsilon_`).
    * ``payment_offset(n) = 4 tau epsilon(n)^2`` (``tau = cost_threshold``):
      every player with ``c_i <= tau`` is paid at least her privacy cost
      (the Brier part is >= 0), so the mechanism is IR for them.
    * ``payment_scale(n) = n^{-(1 + 2 q) / 2}``, the geometric mean of ``1/n``
      and ``epsilon^2``: ``n * scale -> 0`` (budget) while ``scale / epsilon^2 =
      n^{q - 1/2} -> infinity``, so the proper-scoring incentive dominates the
      privacy saving a misreport can bring.
    * Budget ``<= n (offset + scale) = 4 tau c_eps^2 n^{1 - 2q} + n^{(1 - 2q)/2} -> 0``
      because ``q > 1/2``.
    * ``alpha(n) = c_alpha n^p`` with ``p = (3 + 2 q) / 5``. Two errors compete:
      the ridge bias, of relative size ``alpha (d + 2) / n`` for features uniform
      in the ball (``E[x x^T] = I / (d + 2)``, paper Lemma 11), which needs
      ``p < 1``; and the noise, ``E||v|| = d Delta / epsilon`` with
      ``Delta ~ Y sqrt(n) / alpha^{3/2}`` (:func:`ridge_sensitivity`), of order
      ``n^{1/2 - 3p/2 + q}``, which needs ``p > (1 + 2q) / 3``. The choice
      ``p = (3 + 2q)/5`` equates both exponents and lies inside the interval
      for every ``q < 1``; the resulting accuracy rate is ``n^{-(2 - 2q)/5}``.
      Smaller bias also makes truthfulness approximate: the optimal report
      differs from the truth by the peer estimator's bias, which vanishes.

    The rates are slow (``n^{-0.16}`` for ``q = 0.6``): the worst-case
    sensitivity grows like ``sqrt(n)`` (see :func:`ridge_sensitivity`), which the
    paper's lost constants may have avoided with an explicit parameter bound.

    **Reports within ``response_tolerance`` of the truth (the default).** A
    player's payoff-maximising report is ``f y_i`` with
    ``f = m / (m + alpha (d + 2))``, ``m = floor(n / 2)``
    (:func:`best_response_factor`). With ``alpha = n^p`` alone, ``f`` is about
    0.30 at ``n = 2000`` (d = 2) and reaches 0.9 only near ``n = 10**12``:
    "approximately truthful" holds only asymptotically. The default therefore
    caps the ridge parameter,

    .. math:: \alpha(n) = \min\Big(c_\alpha n^p,\;
              \frac{m}{d + 2}\,\frac{t/2}{1 - t/2}\Big), \qquad t = \text{response\_tolerance},

    the largest ``alpha`` with predicted ``f >= 1 - t/2`` (0.95 for ``t = 0.1``; the
    half margin absorbs the spread of the per-player factors, see
    :func:`best_response_factor`, so that measured factors stay above ``1 - t``
    for a few hundred players on). Privacy and budget are untouched: ``epsilon``,
    ``payment_scale`` and ``payment_offset`` do not depend on ``alpha``, so
    ``epsilon -> 0`` and the budget ``-> 0`` exactly as above. The price is
    accuracy at practical sizes: while the cap binds (until
    ``n = (2 c_alpha (d + 2) (2 - t) / t)^{1/(1-p)}``, about ``4e13`` for the
    defaults and d = 2) the ridge
    bias stays near ``t/2`` of ``theta`` and the noise norm decays as
    ``n^{q - 1}`` (``Delta ~ sqrt(n) / alpha^{3/2}`` with ``alpha`` linear in ``n``),
    both still vanishing in the limit since the cap eventually stops binding.
    Pass ``response_tolerance=None`` for the uncapped, accuracy-first schedule.

    Parameters
    ----------
    n_samples : int
        Number of players ``n``, >= 2.
    n_features : int
        Dimension ``d`` (enters the expected noise norm only).
    response_bound : float, default=1.0
        ``Y``.
    cost_threshold : float, default=1.0
        ``tau``: players with privacy cost coefficient ``c_i <= tau`` are IR.
    privacy_exponent : float, default=0.6
        ``q``, in the open interval ``(0.5, 1)``.
    epsilon_constant, alpha_constant : float, default=1.0
        ``c_eps`` and ``c_alpha``.
    response_tolerance : float or None, default=0.1
        ``t`` in (0, 1): cap ``alpha`` so that the predicted best-response factor
        is at least ``1 - t/2``. ``None``: no cap.

    Returns
    -------
    schedule : dict
        ``epsilon``, ``alpha``, ``payment_scale``, ``payment_offset`` (the
        arguments of :class:`TruthfulRegressionMechanism`), and the predicted
        ``sensitivity`` (full data), ``expected_noise_norm``, ``budget_bound``,
        ``privacy_cost_bound`` (``4 tau epsilon^2``), ``ridge_shrinkage``
        (``alpha (d + 2) / n``), ``best_response_factor`` (predicted, see
        :func:`best_response_factor`), ``alpha_capped`` (whether the
        ``response_tolerance`` cap binds) and the exponents ``privacy_exponent``
        and ``alpha_exponent`` (of the uncapped ``c_alpha n^p``).

    References
    ----------
    .. [1] R. Cummings, S. Ioannidis, K. Ligett, "Truthful Linear Regression",
       COLT 2015, Corollary 1, Theorems 2-6.

    Examples
    --------
    >>> from privrelease.regression import parameter_schedule
    >>> s = parameter_schedule(10_000, 2)
    >>> round(s["epsilon"], 6), round(s["alpha_exponent"], 2)
    (0.003981, 0.84)
    >>> round(s["best_response_factor"], 3), s["alpha_capped"]
    (0.95, True)
    >>> round(parameter_schedule(2_000, 2, response_tolerance=None)["best_response_factor"], 2)
    0.3
    """
    n = check_number(n_samples, "n_samples", low=2, integer=True)
    d = check_number(n_features, "n_features", low=1, integer=True)
    Y = check_number(response_bound, "response_bound", low=0, low_inclusive=False)
    tau = check_number(cost_threshold, "cost_threshold", low=0)
    q = check_number(privacy_exponent, "privacy_exponent", low=0.5, high=1.0,
                     low_inclusive=False, high_inclusive=False)
    c_eps = check_number(epsilon_constant, "epsilon_constant", low=0, low_inclusive=False)
    c_alpha = check_number(alpha_constant, "alpha_constant", low=0, low_inclusive=False)
    if response_tolerance is not None:
        t = check_number(response_tolerance, "response_tolerance", low=0, high=1,
                         low_inclusive=False, high_inclusive=False)
    p = (3.0 + 2.0 * q) / 5.0
    epsilon = c_eps * n ** (-q)
    alpha = c_alpha * n**p
    capped = False
    if response_tolerance is not None:
        cap = (n // 2) / (d + 2) * (t / 2) / (1 - t / 2)
        capped = bool(cap < alpha)
        alpha = min(alpha, cap)
    with np.errstate(over="ignore"):
        # Python's float ** raised "OverflowError: (34, 'Numerical result out of range')" for epsilon_constant=1e308
        offset = float(4.0 * np.float64(tau) * np.float64(epsilon) ** 2)
    scale = n ** (-(1.0 + 2.0 * q) / 2.0)
    try:
        _check_payment_range(scale, offset, n)
    except ValueError:
        raise ValueError(f"cost_threshold={cost_threshold!r} and epsilon_constant={epsilon_constant!r}: the payment "
                         f"offset 4 tau epsilon^2 = {offset!r} (epsilon = {epsilon!r}) paid to each of the {n} players "
                         "totals beyond float64; expected a smaller cost_threshold or epsilon_constant") from None
    sens = ridge_sensitivity(n, alpha, Y)
    return {
        "epsilon": float(epsilon),
        "alpha": float(alpha),
        "payment_scale": float(scale),
        "payment_offset": float(offset),
        "sensitivity": float(sens),
        "expected_noise_norm": float(d * sens / epsilon),
        "budget_bound": float(n * (offset + scale)),
        "privacy_cost_bound": float(offset),
        "ridge_shrinkage": float(alpha * (d + 2) / n),
        "best_response_factor": best_response_factor(n, d, alpha),
        "alpha_capped": capped,
        "privacy_exponent": float(q),
        "alpha_exponent": float(p),
    }


def _unit_scaled(X):
    """``X`` with each row whose squared norm is not a normal float64 (``0 < ||x_i|| < 1.5e-154``) divided by its
    largest entry (the other rows as they are)."""
    sq = np.einsum("ij,ij->i", X, X)
    small = (sq < np.finfo(np.float64).tiny) & (X != 0).any(axis=1)
    if not small.any():
        return X
    X = X.copy()
    X[small] /= np.abs(X[small]).max(axis=1, keepdims=True)
    return X


class TruthfulRegressionMechanism(AccountedMixin, RegressorMixin, BaseEstimator):
    r"""Ridge regression bought from privacy-aware players, paid by peer prediction.

    The Private Regression Mechanism (Algorithm 2 of Cummings, Ioannidis and
    Ligett). On reports ``(x_i, y_i)``, ``i = 1..n``:

    1. Compute the ridge estimator ``theta(D) = (X^T X + alpha I)^{-1} X^T y``
       (scikit-learn's ``Ridge(alpha=alpha, fit_intercept=False)``) and release
       ``coef_ = theta(D) + v`` with ``v`` drawn from the high-dimensional
       Laplace density ``proportional to exp(-epsilon ||v||_2 / Delta_n)``
       (:class:`privrelease.noise.VectorLaplace`: norm ``Gamma(d, Delta_n / epsilon)``,
       uniform direction), ``Delta_n = ridge_sensitivity(n, alpha, Y)``. This is
       ``epsilon``-differentially private (output perturbation, CMS11).
    2. Split the players uniformly at random into two groups of sizes
       ``floor(n/2)`` and ``ceil(n/2)`` (a uniformly random permutation from the
       secure source), and release a noisy ridge estimator per group in the same
       way (``group_coef_``), calibrated to the group's own size.
    3. Pay player ``i`` in group ``g`` with the rescaled Brier rule
       (:func:`brier_payment`) comparing the prediction ``q_i`` made from her own
       report with the other group's prediction ``x_i^T group_coef_[1 - g]``.
       The player's prediction is her posterior mean of ``x_i^T theta`` given
       her report, under a Gaussian model ``theta ~ N(0, prior_variance I)``,
       ``y = x^T theta + z``, ``z ~ N(0, noise_variance)``:
       ``q_i = prior_variance ||x_i||^2 y_i / (noise_variance + prior_variance ||x_i||^2)``;
       ``prior_variance=np.inf`` (default, a flat prior) gives ``q_i = y_i``.
       Truthfulness needs this model to match the players' beliefs: with a
       proper prior the truthful ``q_i`` shrinks ``y_i`` towards 0, and
       paying with the flat-prior ``q_i = y_i`` would reward shrunken reports.

    **Privacy.** Each of the three releases is ``epsilon``-DP; the two group
    estimators use disjoint data (parallel composition: ``epsilon``), then
    sequential composition with the full estimator gives ``2 epsilon``, and by
    the billboard lemma the released estimators together with the payments
    (player ``i``'s payment depends on the public output and her own data only)
    are ``2 epsilon``-jointly differentially private (paper, Theorem 2). That
    level is stored in ``epsilon_``. The number of players is public.

    **What is public.** ``coef_`` and ``group_coef_`` are the differentially
    private release. ``payments_[i]`` is meant for player ``i`` alone (joint DP);
    ``budget_``, ``n_clipped_`` and the clipping warning are diagnostics for the
    analyst and are not differentially private.

    **Truthfulness.** Player ``i`` is not in the other group, so her report
    moves only ``q_i``; her expected payment ``B(E[p_i], q_i)`` is maximised at
    ``q_i = E[x_i^T group_coef_[1 - g] | x_i, y_i]``, which equals her truthful
    prediction up to the ridge bias of the peer estimator (the noise has mean
    zero), a bias that vanishes under :func:`parameter_schedule` (paper,
    Theorem 3). Clipping the peer prediction to ``[-Y, Y]``, needed for
    non-negative payments, adds a deviation that vanishes with the noise.

    Parameters
    ----------
    alpha : float, default=1.0
        Ridge regularisation, > 0, with scikit-learn's objective
        ``||y - X w||^2 + alpha ||w||^2`` (the paper's ``gamma``; CMS11's
        normalised ``lambda`` is ``2 alpha / n``).
    epsilon : float, default=1.0
        Privacy parameter of each released estimator, > 0; ``np.inf`` releases
        the exact ridge estimators (no privacy, for testing), with one
        :class:`~privrelease.exceptions.PrivacyLeakWarning` per fit. The whole
        output is ``2 epsilon``-jointly DP.
    response_bound : float, default=1.0
        ``Y``: responses must satisfy ``|y_i| <= Y``.
    clip : bool, default=False
        Features must lie in the unit ball and responses in ``[-Y, Y]``. With
        ``clip=False`` anything else raises ``ValueError``; with ``clip=True``
        rows with ``||x_i|| > 1`` are rescaled to unit norm and responses clipped,
        with a :class:`~privrelease.exceptions.PrivacyLeakWarning`: the guarantee
        then holds for the clipped data, and rests on the clipping being
        applied to every record. A row of norm above 1 by at most ``1e-9`` is
        taken as rounding (neither refused nor counted as clipped) and scaled onto
        the unit ball in both modes, as the sensitivity assumes.
    prior_variance : float, default=np.inf
        Variance of each coordinate of ``theta`` under the players' prior (> 0);
        ``np.inf`` is a flat prior.
    noise_variance : float, default=1.0
        Variance of the response noise ``z`` in the players' model (> 0).
    payment_scale : float, default=1.0
        ``scale`` of the Brier payment, >= 0.
    payment_offset : float, default=0.0
        ``offset`` added to every payment, >= 0 (pays for privacy costs, Theorem 5).
        ``n * (payment_offset + payment_scale)``, the most the payments can total, must
        be a float64 (``ValueError`` before anything is drawn otherwise).
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        ``None`` (the default) draws the split and the noise from the operating
        system's entropy. An integer seed is for tests and reproducible
        experiments only: it makes the privacy noise predictable (each record of
        the accountant says ``secure_noise=False``).
    accountant : PrivacyAccountant or None, default=None
        Where each ``fit`` records the ``2 epsilon`` it releases (``None``: the
        process-wide default, :func:`~privrelease.accounting.get_default_accountant`),
        before any noise is drawn: a fit that would take the accountant past its
        budget raises :class:`~privrelease.exceptions.BudgetExceededError` and
        releases nothing. Cloning the estimator shares the accountant.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Noisy ridge estimator on all players (the public model).
    intercept_ : float
        Always 0.0: the paper's model ``y = theta^T x + z`` has no intercept.
        Append a constant feature (scaled so that rows stay in the unit ball)
        to fit one.
    group_ : ndarray of shape (n_samples,)
        Group (0 or 1) of each player.
    group_coef_ : ndarray of shape (2, n_features)
        Noisy ridge estimator of each group.
    payments_ : ndarray of shape (n_samples,)
        Payment to each player, in ``[payment_offset, payment_offset + payment_scale]``.
    budget_ : float
        Sum of the payments.
    epsilon_ : float
        Joint differential privacy level of the whole output, ``2 * epsilon`` (Theorem 2), with ``epsilon`` as
        the noise delivers it: the largest ``effective_epsilon`` of the three ridge releases'
        :class:`~privrelease.noise.VectorLaplace` noise (``epsilon`` or one ulp above it). The accountant
        records this level.
    sensitivity_ : float
        L2 sensitivity bound the full estimator's noise is calibrated to.
    group_sensitivity_ : ndarray of shape (2,)
        The same bound for each group's estimator.
    n_clipped_ : int
        Number of records changed by clipping (0 unless ``clip=True``).
    best_response_factors_ : ndarray of shape (n_samples,)
        For each player, the ratio of her payoff-maximising report to her true
        response given the peer group's features: the Rayleigh quotient
        ``x_i^T S x_i / ||x_i||^2`` with ``S = (X_o^T X_o + alpha I)^{-1} X_o^T X_o``
        (derivation in :func:`best_response_factor`, which predicts it from ``n``,
        ``d`` and ``alpha``). NaN for ``x_i = 0`` (her report does not matter). A
        diagnostic for the analyst (it uses the features), not part of the release.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    See Also
    --------
    ridge_sensitivity : the sensitivity bound and its derivation.
    parameter_schedule : parameters as functions of ``n`` (Corollary 1).
    sklearn.linear_model.Ridge : the non-private estimator.

    References
    ----------
    .. [1] R. Cummings, S. Ioannidis, K. Ligett, "Truthful Linear Regression",
       COLT 2015, Algorithm 2, Theorems 2-6, Corollary 1.
    .. [2] K. Chaudhuri, C. Monteleoni, A. D. Sarwate, "Differentially private
       empirical risk minimization", JMLR 12, 2011 (output perturbation).

    Examples
    --------
    >>> import numpy as np
    >>> from privrelease.regression import TruthfulRegressionMechanism
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); X /= np.linalg.norm(X, axis=1, keepdims=True)
    >>> y = np.clip(X @ np.array([0.5, -0.3]) + 0.1 * rng.normal(size=200), -1, 1)
    >>> mech = TruthfulRegressionMechanism(alpha=5.0, epsilon=np.inf, random_state=0).fit(X, y)
    >>> mech.coef_.round(2)
    array([ 0.46, -0.28])
    >>> bool((mech.payments_ >= 0).all()), mech.epsilon_
    (True, inf)
    """

    _parameter_constraints = {
        "alpha": [NumberInterval(Real, 0, None, closed="neither")],
        "epsilon": [NumberInterval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "response_bound": [NumberInterval(Real, 0, None, closed="neither")],
        "clip": ["boolean"],
        "prior_variance": [NumberInterval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "noise_variance": [NumberInterval(Real, 0, None, closed="neither")],
        "payment_scale": [NumberInterval(Real, 0, None, closed="left")],
        "payment_offset": [NumberInterval(Real, 0, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "accountant": [PrivacyAccountant, None],
    }

    def __init__(self, *, alpha=1.0, epsilon=1.0, response_bound=1.0, clip=False,
                 prior_variance=np.inf, noise_variance=1.0, payment_scale=1.0,
                 payment_offset=0.0, random_state=None, accountant=None):
        self.alpha = alpha
        self.epsilon = epsilon
        self.response_bound = response_bound
        self.clip = clip
        self.prior_variance = prior_variance
        self.noise_variance = noise_variance
        self.payment_scale = payment_scale
        self.payment_offset = payment_offset
        self.random_state = random_state
        self.accountant = accountant

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        tags.input_tags.sparse = False
        # released coefficients are noisy and only unit-ball data are modelled faithfully
        tags.regressor_tags.poor_score = True
        return tags

    def _check_domain(self, X, y):
        """Validate (or clip) features into the unit ball and responses into [-Y, Y]."""
        Y = float(self.response_bound)
        top, unit = _row_norms(X)
        with np.errstate(over="ignore"):
            norms = top * unit                     # inf beyond float64, as the error message shows it
        bad_x = norms > 1.0 + _NORM_TOL
        bad_y = np.abs(y) > Y
        n_bad = int(np.count_nonzero(bad_x | bad_y))
        if n_bad == 0:
            return _onto_ball(X, norms > 1.0), y, 0
        if not self.clip:
            if bad_x.any():
                i = int(np.argmax(norms))
                raise ValueError(
                    "features must lie in the unit ball (||x_i||_2 <= 1) for the sensitivity "
                    f"bound to hold; got ||x_{i}||_2 = {float(norms[i])!r} ({int(bad_x.sum())} rows "
                    "outside). Rescale the features, or pass clip=True"
                )
            i = int(np.argmax(np.abs(y)))
            raise ValueError(
                f"responses must satisfy |y_i| <= response_bound = {Y!r}; got y_{i} = {float(y[i])!r} "
                f"({int(bad_y.sum())} responses outside). Rescale y, raise response_bound, "
                "or pass clip=True"
            )
        warnings.warn(
            f"{n_bad} of {X.shape[0]} records were clipped (features into the unit ball, "
            f"responses into [-{Y}, {Y}]): the privacy guarantee holds for the clipped data "
            "and rests on the clipping being applied to every record",
            PrivacyLeakWarning,
            stacklevel=user_stacklevel(),
        )
        X = X.copy()
        # x / ||x|| as (x / max|x_j|) / ||x / max|x_j|||: ||[3e200, 4e200]|| overflowed, and the row became 0
        X[bad_x] = X[bad_x] / top[bad_x, None] / unit[bad_x, None]
        return _onto_ball(X, norms > 1.0), np.clip(y, -Y, Y), n_bad

    def _joint_epsilon(self, n):
        """The joint-DP level of the release, ``2 epsilon`` (Theorem 2) with ``epsilon`` the largest privacy the three
        ridge releases' noise delivers (:attr:`VectorLaplace.effective_epsilon`: ``sensitivity / scale`` rounded up,
        one ulp above ``epsilon`` where the scale's division rounded down), from the sizes alone: known, and
        refused or recorded, before any noise is drawn."""
        eps = float(self.epsilon)
        if np.isinf(eps):
            return np.inf
        alpha, bound = float(self.alpha), float(self.response_bound)
        delivered = [_proven_epsilon(s, _noise_scale(s, eps))
                     for s in (ridge_sensitivity(m, alpha, bound) for m in dict.fromkeys((n, n // 2, n - n // 2)))]
        return 2.0 * max(delivered)

    def _check_noise(self, n, d):
        """Refuse, before anything is recorded, noise the three ridge releases could not draw: ``VectorLaplace``
        checks its scale against overflow (``epsilon = 6.5e-307`` with sensitivity 6.5 was refused inside the
        first release, after the fit's ``2 epsilon`` went on the ledger as spent, with no noise drawn)."""
        eps = float(self.epsilon)
        if np.isinf(eps):
            return
        alpha, bound = float(self.alpha), float(self.response_bound)
        for m in dict.fromkeys((n, n // 2, n - n // 2)):
            VectorLaplace(dimension=d, epsilon=eps, sensitivity=ridge_sensitivity(m, alpha, bound))

    def _private_ridge(self, X, y, source, svd=None):
        """Ridge estimator plus high-dimensional Laplace noise; returns (coef, sensitivity).

        ``epsilon = inf`` releases the estimator exactly (``fit`` has warned once for the three
        releases; a ``VectorLaplace(epsilon=inf)`` would warn again for each). ``svd``: a list that
        receives ``ridge_svd(X, alpha)`` (the groups' are used again by :meth:`_best_response_factors`).
        """
        n, d = X.shape
        alpha = float(self.alpha)
        sens = ridge_sensitivity(n, alpha, float(self.response_bound))
        U, s, Vt, f = ridge_svd(X, alpha)   # by elimination: LinAlgError for a tiny alpha with n < d
        if svd is not None:
            svd.append((U, s, Vt, f))
        theta = Vt.T @ (f * (U.T @ y))
        if np.isinf(float(self.epsilon)):
            return theta, sens
        noise = VectorLaplace(dimension=d, epsilon=float(self.epsilon), sensitivity=sens,
                              random_state=source)
        return theta + noise.sample(), sens

    def _best_response_factors(self, X, group, group_svd=None):
        """Rayleigh quotients ``x_i^T S_o x_i / ||x_i||^2`` of the peer group's shrinkage.

        ``group_svd``: ``ridge_svd`` of each group's rows (``fit`` has them), else computed here.
        """
        out = np.full(X.shape[0], np.nan)
        # the quotient does not change with ||x_i||: a row whose squared norm underflows (||x_i|| below 1e-162,
        # NaN before) is divided by its largest entry first
        Xq = _unit_scaled(X)
        sq = np.einsum("ij,ij->i", Xq, Xq)
        for g in (0, 1):
            # S = V diag(s^2 / (s^2 + alpha)) V^T from the peer group's singular values
            _, s, Vt, f = (ridge_svd(X[group == 1 - g], float(self.alpha)) if group_svd is None
                           else group_svd[1 - g])
            mine = (group == g) & (sq > 0)
            P = Xq[mine] @ Vt.T
            out[mine] = (P * P) @ (s * f) / sq[mine]
        return out

    def _own_prediction(self, X, y):
        """Posterior mean of x^T theta given one report, under the Gaussian model."""
        sq = np.einsum("ij,ij->i", X, X)
        tau2 = float(self.prior_variance)
        nonzero = (X != 0).any(axis=1)
        if np.isinf(tau2):
            # x_i != 0, not ||x_i||^2 > 0: the square underflowed for ||x_i|| below 1e-162 and her prediction was
            # 0, every such player paid the same whatever she reported
            return np.where(nonzero, y, 0.0)
        nv = float(self.noise_variance)
        with np.errstate(over="ignore", under="ignore"):
            t = tau2 * sq
            q = t * y / (nv + t)
        tiny = np.finfo(np.float64).tiny
        odd = nonzero & ~((sq >= tiny) & (t >= tiny) & np.isfinite(nv + t))
        if odd.any():
            # q = y / (1 + nv / (tau2 ||x||^2)) with the ratio in logarithms: ||x||^2, tau2 ||x||^2 or the sum left
            # float64's range
            c = np.abs(X[odd]).max(axis=1)
            u = X[odd] / c[:, None]
            log_ratio = np.log(nv) - np.log(tau2) - 2.0 * np.log(c) - np.log(np.einsum("ij,ij->i", u, u))
            with np.errstate(over="ignore"):
                q[odd] = y[odd] / (1.0 + np.exp(log_ratio))
        return np.where(nonzero, q, 0.0)

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y):
        """Run the mechanism on the players' reports.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, one row per player, each in the unit ball.
        y : array-like of shape (n_samples,)
            Reported responses, ``|y_i| <= response_bound``.

        Returns
        -------
        self : object
        """
        # the parameters are read as float64 below: one beyond its range is refused by name (epsilon is not read as
        # inf, which would release the estimators without noise)
        check_number(self.epsilon, "epsilon", low=0, low_inclusive=False, allow_inf=True, overflow_to_inf=False)
        for name in ("alpha", "response_bound", "payment_scale", "payment_offset"):
            check_number(getattr(self, name), name, low=0)
        check_table(X)
        check_table(y, "y")
        check_same_index(X, y)
        refuse_missing_target(y, "y", "the reported responses as real numbers")
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        check_real_target(y, "y", "the reported responses as real numbers", finite=True)
        n = X.shape[0]
        if n < 2:
            raise ValueError(
                "the mechanism splits the players into two non-empty groups and needs at "
                f"least 2 players, got n_samples = {n}"
            )
        _check_payment_range(float(self.payment_scale), float(self.payment_offset), n)
        X, y, self.n_clipped_ = self._check_domain(X, y)
        if np.isinf(float(self.epsilon)):
            _warn_infinite_epsilon("TruthfulRegressionMechanism",
                                   "the ridge estimators (coef_ and group_coef_) are")
        source = check_random_source(self.random_state)
        acc = self._accountant()
        # the whole output (the public model, the two group models, the payments) is 2 epsilon-jointly DP
        # (Theorem 2): checked before any noise is drawn, so a release past the budget is refused whole, and
        # recorded with the payments, no other thread's release in between
        eps_joint = self._joint_epsilon(n)
        self._check_noise(n, X.shape[1])
        with acc.atomic():
            acc.check(eps_joint)
            try:
                self.coef_, self.sensitivity_ = self._private_ridge(X, y, source)
                self.intercept_ = 0.0

                perm = source.permutation(n)
                group = np.zeros(n, dtype=np.int64)
                group[perm[n // 2:]] = 1
                self.group_ = group
                coefs, sens, group_svd = [], [], []
                for g in (0, 1):
                    c, s = self._private_ridge(X[group == g], y[group == g], source, svd=group_svd)
                    coefs.append(c)
                    sens.append(s)
                self.group_coef_ = np.vstack(coefs)
                self.group_sensitivity_ = np.asarray(sens)
                self.best_response_factors_ = self._best_response_factors(X, group, group_svd)

                peer = np.einsum("ij,ij->i", X, self.group_coef_[1 - group])
                own = self._own_prediction(X, y)
                self.payments_ = brier_payment(peer, own, response_bound=float(self.response_bound),
                                               scale=float(self.payment_scale),
                                               offset=float(self.payment_offset))
                self.budget_ = float(self.payments_.sum())
            except BaseException:  # noise was drawn: recorded even though the fit did not finish
                acc.spend(eps_joint, mechanism="TruthfulRegressionMechanism", n_samples=n, status="failed",
                          secure_noise=source.secure)
                raise
            acc.spend(eps_joint, mechanism="TruthfulRegressionMechanism", n_samples=n, total_payment=self.budget_,
                      secure_noise=source.secure)
        self.epsilon_ = eps_joint
        return self

    def predict(self, X):
        """Predict with the public (noisy) model, ``X @ coef_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        check_table(X)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_
