"""Ridge regression by the singular value decomposition, shared by the mechanisms that solve it."""

import numpy as np

__all__ = ["ridge_svd"]


def ridge_svd(X, alpha):
    """Thin SVD of ``X`` and the ridge factors ``f_j = s_j / (s_j^2 + alpha)``.

    The ridge estimator ``(X^T X + alpha I)^{-1} X^T y`` is ``V diag(f) U^T y``. Solving the normal equations
    by elimination broke for a tiny ``alpha`` with rank-deficient ``X`` (fewer rows than columns, collinear
    columns): ``X^T X + alpha I`` is singular in float64, so the solve raised ``LinAlgError: Singular matrix``
    or returned weights far from the ridge limit (``alpha = 1e-30``: not the minimum-norm least-squares
    weights). Singular values below ``max(X.shape) * eps * s_max`` are numerical zeros (the exact ``X``'s
    would be 0) and get ``f = 0``, what ``numpy.linalg.pinv`` does at ``alpha = 0``.

    Parameters
    ----------
    X : ndarray of shape (n, m)
    alpha : float
        ``>= 0``.

    Returns
    -------
    U : ndarray of shape (n, k)
    s : ndarray of shape (k,)
        Singular values, numerical zeros set to 0.
    Vt : ndarray of shape (k, m)
    f : ndarray of shape (k,)
    """
    U, s, Vt = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)
    cut = max(X.shape) * np.finfo(np.float64).eps * (s[0] if s.size else 0.0)
    s = np.where(s > cut, s, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(s > 0, s / (s * s + alpha), 0.0)
    return U, s, Vt, f
