"""Shared input validation for privrelease.

Every error quotes the value received and says what was expected.
"""

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_number",
    "check_rating_matrix",
    "restore_sparse_format",
    "check_private_labels",
]


def check_number(value, name, *, low=None, high=None, low_inclusive=True,
                 high_inclusive=True, allow_inf=False, integer=False):
    """Validate one real number and return it as ``float`` (or ``int``).

    Raises
    ------
    TypeError
        ``value`` is not a real number (booleans are refused too).
    ValueError
        ``value`` is NaN, infinite (unless ``allow_inf``) or outside the range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        kind = "an integer" if integer else "a real number"
        raise TypeError(f"{name} must be {kind}, got {value!r} of type {type(value).__name__}")
    if integer and not (isinstance(value, numbers.Integral) or float(value).is_integer()):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = float(value)
    if np.isnan(v):
        raise ValueError(f"{name} must be a number, got NaN")
    if np.isinf(v) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (v < low or (v == low and not low_inclusive)):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {op} {low}, got {value!r}")
    if high is not None and (v > high or (v == high and not high_inclusive)):
        op = "<=" if high_inclusive else "<"
        raise ValueError(f"{name} must be {op} {high}, got {value!r}")
    return int(v) if integer else v


def check_rating_matrix(X, *, name="X", rating_range=None, dtype=(np.float64, np.float32)):
    """Validate a user x item rating matrix (0 = not rated).

    Dense arrays and every scipy sparse format are accepted; sparse input is
    returned as CSR (the format is remembered so a transform can give back the
    caller's format, see :func:`restore_sparse_format`). Explicitly stored zeros
    are dropped: 0 means "not rated".

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_users, n_items)
    name : str
        Name used in error messages.
    rating_range : tuple (low, high) or None
        When given, every stored (nonzero) rating must lie in it.

    Returns
    -------
    X_checked : ndarray or csr_matrix / csr_array
    sparse_format : str or None
        The input's sparse format (``"csr"``, ``"csc"``, ``"coo"`` ...) or None for dense.
    """
    fmt = None
    if sp.issparse(X):
        fmt = X.format
        Xc = X.tocsr(copy=True)
        if Xc.dtype not in dtype:
            Xc = Xc.astype(np.float64)
        Xc.sum_duplicates()
        data = Xc.data
        Xc.eliminate_zeros()
        data = Xc.data
    else:
        Xc = np.asarray(X)
        if Xc.dtype == object:
            try:
                Xc = Xc.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{name} must hold numbers, got {Xc.dtype}: {exc}") from None
        if not np.issubdtype(Xc.dtype, np.number) and Xc.dtype != bool:
            raise TypeError(f"{name} must hold numbers, got dtype {Xc.dtype}")
        if Xc.dtype not in dtype:
            Xc = Xc.astype(np.float64)
        data = Xc
    if Xc.ndim != 2:
        raise ValueError(f"{name} must be 2-D (users x items), got shape {Xc.shape}")
    if Xc.shape[0] == 0 or Xc.shape[1] == 0:
        raise ValueError(f"{name} must have at least one user and one item, got shape {Xc.shape}")
    finite = np.isfinite(data)
    if not finite.all():
        bad = data[~finite].ravel()[0]
        raise ValueError(
            f"{name} contains {np.count_nonzero(~finite)} non-finite rating(s) (for example {bad!r}); "
            "ratings must be finite numbers with 0 meaning 'not rated'"
        )
    if rating_range is not None:
        low, high = rating_range
        vals = data[data != 0] if not sp.issparse(Xc) else data
        out = (vals < low) | (vals > high)
        if np.any(out):
            raise ValueError(
                f"{name} has {np.count_nonzero(out)} rating(s) outside the rating scale "
                f"[{low}, {high}] (for example {vals[out].ravel()[0]!r}); 0 means 'not rated'"
            )
    return Xc, fmt


def restore_sparse_format(X_csr, sparse_format):
    """Convert a CSR result back to the caller's sparse format (no-op for CSR or dense)."""
    if sparse_format is None or sparse_format == "csr" or not sp.issparse(X_csr):
        return X_csr
    return X_csr.asformat(sparse_format)


def check_private_labels(y, n_samples, *, name="y", missing=-1):
    """Validate the private attribute: one label per user, ``missing`` for undisclosed.

    Returns
    -------
    y : ndarray of shape (n_samples,)
    labeled : ndarray of bool
        Which users disclosed the attribute.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.ravel() if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one private attribute per user), got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} labels but X has {n_samples} users")
    if y.dtype.kind == "f" and np.isnan(y).any():
        labeled = ~np.isnan(y)
    else:
        labeled = y != missing
    return y, labeled
