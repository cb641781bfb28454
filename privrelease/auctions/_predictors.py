"""Weights of linear predictors ``s(d) = <w, d>`` from public features (Sec. 5).

Each individual ``i`` has public features ``Y[i]``; a new individual has
features ``y``. The three textbook predictors of Section 5 of Dandekar, Fawaz and
Ioannidis are linear in the private data ``d``, with weights ``w = w(y, Y)`` that
depend on public information only; so the weights can be published and a
privacy auction (:func:`~privrelease.auctions.fair_inner_product`) can be run on them.

All functions accept one query ``y`` of shape ``(m,)`` (returning ``(n,)``) or a
batch of shape ``(n_queries, m)`` (returning ``(n_queries, n)``).
"""

import numbers

import numpy as np

from ..utils import check_number
from ..utils._linalg import ridge_svd
from ..utils._validation import holds_only

__all__ = ["knn_weights", "nadaraya_watson_weights", "ridge_weights"]


def _as_features(values, name):
    """``values`` as a float64 array; ragged rows and non-numbers get errors naming ``name``."""
    try:
        arr = np.asarray(values)
    except ValueError:  # numpy: "setting an array element with a sequence ... inhomogeneous shape"
        raise ValueError(f"{name} must be a rectangular array of numbers, got rows of different lengths") from None
    if arr.dtype.kind in "USOcmMV":
        try:
            if arr.dtype.kind in "USc" or not holds_only(arr, numbers.Real):
                raise TypeError
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold real numbers, got an array of dtype {arr.dtype}") from None
    return arr.astype(np.float64, copy=False)


def _check_features(Y, y):
    Y = _as_features(Y, "Y")
    if Y.ndim != 2 or Y.shape[0] == 0:
        raise ValueError(f"Y must be 2-D (individuals x features) with at least one row, got shape {Y.shape}")
    q = _as_features(y, "y")
    single = q.ndim == 1
    q = np.atleast_2d(q)
    if q.ndim != 2 or q.shape[1] != Y.shape[1]:
        raise ValueError(
            f"y must have {Y.shape[1]} features like Y (shape ({Y.shape[1]},) or "
            f"(n_queries, {Y.shape[1]})), got shape {np.shape(y)}"
        )
    if not (np.isfinite(Y).all() and np.isfinite(q).all()):
        raise ValueError("Y and y must be finite")
    return Y, q, single


#: features whose largest magnitude lies outside [2**-200, 2**200] are divided by a power of two first:
#: their squares (and ``Y^T Y``) would overflow to inf or underflow to 0, and the order of the
#: distances would be lost (kNN then picked individuals by index); inside it nothing changes
_SAFE_EXPONENT = 200


def _feature_scale(Y, q):
    """A power of two ``s`` making the features O(1) when their magnitude is extreme, else 1.0.

    Dividing by a power of two is exact, so scaled distances keep their order.
    """
    top = max(float(np.max(np.abs(Y), initial=0.0)), float(np.max(np.abs(q), initial=0.0)))
    if top == 0.0 or 2.0 ** -_SAFE_EXPONENT <= top <= 2.0 ** _SAFE_EXPONENT:
        return 1.0
    return float(2.0 ** np.frexp(top)[1])


def _sq_distances(Y, q, s=1.0):
    """Squared Euclidean distances between ``q`` and ``Y``, in units of ``s**2`` (``s`` from ``_feature_scale``).

    Summed over the differences, a block of queries at a time (about 2**22 differences held): the expansion
    ``|q|^2 + |Y|^2 - 2 q.Y`` cancelled for features far from the origin (around 1.7e9 every distance below
    about 25 was lost, and kNN picked the wrong neighbour).
    """
    if s != 1.0:
        Y, q = Y / s, q / s
    n, m = Y.shape
    out = np.empty((q.shape[0], n))
    step = max(1, (1 << 22) // max(n * m, 1))
    for start in range(0, q.shape[0], step):
        diff = q[start:start + step, None, :] - Y[None, :, :]
        np.einsum("qnm,qnm->qn", diff, diff, out=out[start:start + step])
    return out


def knn_weights(Y, y, n_neighbors=5):
    """k-nearest-neighbour weights: ``w_i = 1/k`` on the ``k`` closest individuals (Sec. 5).

    ``s(d) = (1/k) sum_{i in N_k(y)} d_i`` with the Euclidean distance; ties in
    distance are broken by index. ``k`` is capped at the number of individuals.

    Parameters
    ----------
    Y : array-like of shape (n, m)
        Public features of the individuals.
    y : array-like of shape (m,) or (n_queries, m)
        Public features of the new individual(s).
    n_neighbors : int, default=5

    Returns
    -------
    w : ndarray of shape (n,) or (n_queries, n)

    References
    ----------
    Dandekar, Fawaz and Ioannidis (2012), Sec. 5; Hastie, Tibshirani and
    Friedman, *The Elements of Statistical Learning* (2009).

    Examples
    --------
    >>> from privrelease.auctions import knn_weights
    >>> knn_weights([[0.0], [1.0], [5.0]], [0.2], n_neighbors=2).tolist()
    [0.5, 0.5, 0.0]
    """
    Y, q, single = _check_features(Y, y)
    k = min(check_number(n_neighbors, "n_neighbors", low=1, integer=True), Y.shape[0])
    D = _sq_distances(Y, q, _feature_scale(Y, q))  # only the order matters
    nn = np.argsort(D, axis=1, kind="stable")[:, :k]
    W = np.zeros_like(D)
    np.put_along_axis(W, nn, 1.0 / k, axis=1)
    return W[0] if single else W


def nadaraya_watson_weights(Y, y, bandwidth=1.0):
    """Nadaraya-Watson weights with a Gaussian kernel (Sec. 5).

    ``w_i = K(y, Y_i) / sum_j K(y, Y_j)`` with
    ``K(y, y') = exp(-||y - y'||^2 / (2 h^2))``; the paper's example kernel
    ``exp(-||y - y'||^2)`` is ``h = 1 / sqrt(2)``. Computed stably (the smallest
    distance is subtracted before exponentiating).

    Parameters
    ----------
    Y : array-like of shape (n, m)
    y : array-like of shape (m,) or (n_queries, m)
    bandwidth : float, default=1.0
        ``h > 0``.

    Returns
    -------
    w : ndarray of shape (n,) or (n_queries, n)
        Non-negative, summing to one.

    References
    ----------
    Dandekar, Fawaz and Ioannidis (2012), Sec. 5; Hastie, Tibshirani and
    Friedman, *The Elements of Statistical Learning* (2009).

    Examples
    --------
    >>> from privrelease.auctions import nadaraya_watson_weights
    >>> w = nadaraya_watson_weights([[0.0], [1.0]], [0.5], bandwidth=1.0)
    >>> w.tolist()
    [0.5, 0.5]
    """
    Y, q, single = _check_features(Y, y)
    h = check_number(bandwidth, "bandwidth", low=0, low_inclusive=False)
    s = _feature_scale(Y, q)
    D = _sq_distances(Y, q, s)
    excess = D - D.min(axis=1, keepdims=True)
    if s != 1.0:
        # excess is in units of s**2: exp(-(excess * (s / h)**2) / 2), the nearest points
        # (excess 0) keep weight 1 even when s / h overflows
        r = s / h
        with np.errstate(over="ignore", invalid="ignore"):
            K = np.where(excess > 0, np.exp(-((excess * r) * r) / 2.0), 1.0)
        W = K / K.sum(axis=1, keepdims=True)
        return W[0] if single else W
    denom = 2.0 * h * h
    if denom > 0.0:
        K = np.exp(-excess / denom)
    else:
        # h * h underflows to 0 (h < ~1e-154): dividing by h twice keeps 0 / h^2 = 0 for the nearest
        # points (weight 1) and sends the others to inf (weight 0) instead of 0 / 0 = NaN
        with np.errstate(over="ignore"):
            K = np.exp(-(excess / h / h) / 2.0)
    W = K / K.sum(axis=1, keepdims=True)
    return W[0] if single else W


def ridge_weights(Y, y, alpha=1.0):
    """Ridge-regression weights ``w = y^T (Y^T Y + alpha I)^{-1} Y^T`` (Sec. 5, eq. 10).

    ``<w, d>`` is the ridge prediction ``<y, b>`` with
    ``b = argmin ||d - Y b||^2 + alpha ||b||^2`` (no intercept: add a constant
    column to ``Y`` for one). Weights may be negative. ``alpha = 0`` gives the
    minimum-norm least-squares weights ``y^T pinv(Y)``.

    Parameters
    ----------
    Y : array-like of shape (n, m)
    y : array-like of shape (m,) or (n_queries, m)
    alpha : float, default=1.0
        ``lambda >= 0`` of eq. (10).

    Returns
    -------
    w : ndarray of shape (n,) or (n_queries, n)

    References
    ----------
    Dandekar, Fawaz and Ioannidis (2012), Sec. 5; Hastie, Tibshirani and
    Friedman, *The Elements of Statistical Learning* (2009).

    Examples
    --------
    >>> from privrelease.auctions import ridge_weights
    >>> ridge_weights([[1.0], [2.0]], [1.0], alpha=0.0).round(12).tolist()
    [0.2, 0.4]
    """
    Y, q, single = _check_features(Y, y)
    alpha = check_number(alpha, "alpha", low=0)
    s = _feature_scale(Y, q)
    if s != 1.0:
        # w = y^T (Y^T Y + alpha I)^{-1} Y^T is unchanged when Y, y are divided by s and alpha by s**2
        # (Y^T Y would overflow to inf or underflow to 0 unscaled)
        Y, q = Y / s, q / s
        alpha = alpha / s / s
    if np.isinf(alpha):  # tiny features, alpha > 0: the weights y^T Y / alpha are below float64's range
        W = np.zeros((q.shape[0], Y.shape[0]))
    elif alpha == 0:
        W = q @ np.linalg.pinv(Y)
    else:
        # by the SVD Y = U diag(s) Vt, w = q V diag(s / (s^2 + alpha)) U^T: solving Y^T Y + alpha I by elimination
        # raised LinAlgError for collinear features and a tiny alpha, or returned weights far from the ridge
        # limit (alpha = 1e-30 with more features than individuals)
        U, _, Vt, f = ridge_svd(Y, alpha)
        W = ((q @ Vt.T) * f) @ U.T
    return W[0] if single else W
