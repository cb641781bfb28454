"""Validation of priors, distortion matrices and mappings (shared by the mapping engine)."""

import warnings

import numpy as np
import scipy.sparse as sp

from ..utils import check_number
from ..utils._validation import check_table, plain_value

__all__ = ["check_prior", "check_distortion", "check_mapping", "check_budget"]

#: absolute tolerance on ``sum(prior) == 1``
PRIOR_SUM_TOL = 1e-8
#: a float32 / float16 prior may miss 1 by this many of its own epsilons (it was normalised at its precision)
PRIOR_SUM_EPS = 8


def check_prior(prior, *, name="prior"):
    """Return ``prior`` as a 2-D float array after checking it is a joint distribution.

    A scipy sparse prior is densified (a joint distribution is small: ``n_private x n_public``).
    A float32 (float16) prior only has to sum to 1 within ``8`` epsilons of its dtype
    (``9.5e-7`` for float32): normalised at that precision it missed ``1e-8``.

    Raises
    ------
    ValueError
        Not 2-D, empty, non-finite, negative entries, or not summing to 1
        within ``1e-8`` (the message quotes the offending value).
    """
    check_table(prior, name)  # complex values (the imaginary part was dropped), masked entries, ragged rows
    if sp.issparse(prior):  # np.asarray wrapped it in a 0-d object array ("setting an array element ...")
        prior = prior.toarray()
    _refuse_strings(prior, name, "probabilities")
    dtypes = [prior.dtype] if hasattr(prior, "dtype") else list(getattr(prior, "dtypes", []))  # array / DataFrame
    tol = PRIOR_SUM_TOL
    if dtypes and all(isinstance(d, np.dtype) and d.kind == "f" and d.itemsize < 8 for d in dtypes):
        tol = max(tol, PRIOR_SUM_EPS * max(float(np.finfo(d).eps) for d in dtypes))
    try:
        P = np.asarray(prior, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of probabilities, got {type(prior).__name__}: {exc}") from None
    if P.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D joint distribution p(a, c) of shape (n_private, n_public), "
            f"got an array of shape {P.shape}"
        )
    if P.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError(f"{name} must be finite, got {float(P[~np.isfinite(P)].ravel()[0])!r}")
    if np.any(P < 0):
        raise ValueError(f"{name} must be non-negative, got a smallest entry of {float(P.min())!r}")
    total = P.sum()
    if abs(total - 1.0) > tol:
        raise ValueError(f"{name} must sum to 1 (a joint distribution), got a sum of {float(total)!r}")
    return P / total


def check_distortion(distortion, n_public, *, name="distortion"):
    """Return ``distortion`` as a float array of shape (n_public, n_outputs).

    ``np.inf`` marks a forbidden transition. Negative or NaN entries, ``-inf``,
    a wrong number of rows, or a row with no finite entry raise ``ValueError``.

    A scipy sparse matrix is the sparse form: its *stored* entries (explicit
    zeros included) are the allowed transitions, every other one is forbidden;
    it comes back as a ``csr_array`` with sorted indices (stored ``inf`` entries
    are dropped as forbidden; a pair stored twice is refused). A square sparse distortion
    that stores neither a zero nor any diagonal entry warns: ``scipy.sparse.csr_matrix(D)``
    drops the zeros, which silently forbids the zero-cost transitions.
    """
    check_table(distortion, name)
    if sp.issparse(distortion):
        return _check_sparse_distortion(distortion, n_public, name)
    _refuse_strings(distortion, name, "numbers")
    try:
        D = np.asarray(distortion, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers, got {type(distortion).__name__}: {exc}") from None
    _check_shape(D.shape, n_public, name)
    if np.any(np.isnan(D)):
        bad = tuple(int(i) for i in np.argwhere(np.isnan(D))[0])
        raise ValueError(f"{name} must not contain NaN (use np.inf to forbid a transition), got nan at {bad}")
    if np.any(D < 0):
        raise ValueError(f"{name} must be non-negative, got a smallest entry of {float(D.min())!r}")
    return D


def _refuse_strings(values, name, what):
    """Strings of numbers ("0.5") were parsed by ``np.asarray(..., dtype=float)``; the scalar budgets refuse them."""
    try:
        kind = np.asarray(values).dtype.kind
    except (TypeError, ValueError):
        return  # ragged: the conversion below says so
    if kind in "US":
        raise TypeError(f"{name} must be an array of {what}, got strings (dtype {np.asarray(values).dtype})")


def _check_shape(shape, n_public, name):
    if len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D matrix d(c, c_hat), got an array of shape {shape}")
    if shape[0] != n_public:
        raise ValueError(
            f"{name} has {shape[0]} rows but the prior has {n_public} public symbols "
            f"(columns); expected shape ({n_public}, n_outputs), got {shape}"
        )
    if shape[1] == 0:
        raise ValueError(f"{name} must have at least one output column, got shape {shape}")


def _check_sparse_distortion(distortion, n_public, name):
    D = sp.coo_array(distortion)
    _check_shape(D.shape, n_public, name)
    data = np.asarray(D.data, dtype=float)
    if np.any(np.isnan(data)):
        i = int(np.flatnonzero(np.isnan(data))[0])
        raise ValueError(f"{name} must not contain NaN (leave a forbidden transition unstored), got nan at "
                         f"({int(D.coords[0][i])}, {int(D.coords[1][i])})")
    if np.any(data < 0):
        raise ValueError(f"{name} must be non-negative, got a smallest entry of {float(data.min())!r}")
    keep = np.isfinite(data)
    row, col = np.asarray(D.coords[0])[keep], np.asarray(D.coords[1])[keep]
    key = row.astype(np.int64) * D.shape[1] + col
    order = np.argsort(key, kind="stable")
    dup = np.flatnonzero(np.diff(key[order]) == 0)
    if dup.size:
        i = order[dup[0]]
        raise ValueError(f"{name} stores the transition ({int(row[i])}, {int(col[i])}) more than once; "
                         "store each allowed transition once")
    row, col, data = row[order], col[order], data[keep][order]
    if D.shape[0] == D.shape[1] and D.shape[0] > 1 and not np.any(row == col) and not np.any(data == 0):
        # scipy.sparse.csr_matrix(dense) drops the zeros, and a sparse distortion forbids every
        # pair it does not store: the typical zero-cost diagonal then silently becomes forbidden
        warnings.warn(
            f"{name} is sparse, square ({D.shape[0]} x {D.shape[1]}) and stores neither a zero nor any "
            "diagonal entry, so every c -> c transition is forbidden (a sparse distortion allows only "
            "the pairs it stores). If it was built from a dense matrix (scipy.sparse.csr_matrix(D) drops "
            "the zeros), pass the dense matrix instead, or store the allowed zero-cost pairs explicitly.",
            UserWarning, stacklevel=3)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=D.shape[0]))]).astype(np.int64)
    return sp.csr_array((data, col.astype(np.int64), indptr), shape=D.shape)


def check_mapping(mapping, n_public, n_outputs=None, *, name="mapping", atol=1e-6):
    """Return a row-stochastic mapping of shape (n_public, n_outputs) as a float array
    (a ``csr_array`` for a sparse mapping)."""
    check_table(mapping, name)
    if sp.issparse(mapping):
        M = sp.csr_array(mapping, dtype=float)
        if M.ndim != 2 or M.shape[0] != n_public or (n_outputs is not None and M.shape[1] != n_outputs):
            want = f"({n_public}, {'n_outputs' if n_outputs is None else n_outputs})"
            raise ValueError(f"{name} must have shape {want}, got {M.shape}")
        rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))  # the stored entries only
        _check_mapping_entries(M.data, name, atol, lambda e: (int(rows[e]), int(M.indices[e])))
        rs = np.asarray(M.sum(axis=1)).ravel()
        if np.any(np.abs(rs - 1) > atol):
            bad = int(np.argmax(np.abs(rs - 1)))
            raise ValueError(f"{name} rows must sum to 1 (a conditional distribution), row {bad} sums to "
                             f"{plain_value(rs[bad])!r}")
        M = M.copy()
        M.data = np.clip(M.data, 0.0, None)
        return M
    _refuse_strings(mapping, name, "probabilities")  # numpy's "could not convert string to float: 'a'"
    M = np.asarray(mapping, dtype=float)
    if M.ndim != 2 or M.shape[0] != n_public or (n_outputs is not None and M.shape[1] != n_outputs):
        want = f"({n_public}, {'n_outputs' if n_outputs is None else n_outputs})"
        raise ValueError(f"{name} must have shape {want}, got {M.shape}")
    _check_mapping_entries(M.ravel(), name, atol, lambda e: tuple(int(i) for i in np.unravel_index(e, M.shape)))
    rs = M.sum(axis=1)
    if np.any(np.abs(rs - 1) > atol):
        bad = int(np.argmax(np.abs(rs - 1)))
        raise ValueError(f"{name} rows must sum to 1 (a conditional distribution), row {bad} sums to "
                         f"{plain_value(rs[bad])!r}")
    return np.clip(M, 0.0, None)


def _check_mapping_entries(values, name, atol, position):
    """Finite and non-negative ``values`` (a mapping's entries), or a ValueError naming the first bad one
    and its cell (``position(i)`` of the ``i``-th value)."""
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"{name} must have finite entries (probabilities), got {float(values[bad[0]])!r} "
                         f"at {position(bad[0])}")
    if values.size and values.min() < -atol:
        e = int(np.argmin(values))
        raise ValueError(f"{name} must have non-negative entries (probabilities), got {float(values[e])!r} "
                         f"at {position(e)}")


def check_budget(value, name):
    """A non-negative budget (``np.inf`` allowed); TypeError/ValueError quoting the value."""
    return check_number(value, name, low=0.0, allow_inf=True)
