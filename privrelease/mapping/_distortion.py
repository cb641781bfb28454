"""Distortion matrices: squared Euclidean between representative points, and erasures."""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from ..utils._validation import as_int64_codes, check_allocation, check_table, holds_only, plain_value

__all__ = ["squared_euclidean_distortion", "erasure_alphabet", "erasure_distortion", "ERASED"]

#: marker of an erased feature in erasure outputs
ERASED = -1


#: the bytes per entry ``squared_euclidean_distortion`` holds at its peak: the distances and their finiteness mask
#: (measured 9.0 at 1,500 x 1,500 centers), rounded up
_DISTANCE_PEAK_BYTES = 16
#: ``erasure_distortion`` (dense) per (input, output) pair: these bytes plus 2 per feature (the feature-wise
#: comparisons and their union with the erasures, alive together); measured 10.4 with 1 feature, 13.5 with 4
_ERASURE_PEAK_BYTES = 16

def squared_euclidean_distortion(centers_in, centers_out=None):
    """``d(c, c_hat) = ||x_c - x_c_hat||^2`` between two sets of points (paper Sec. VI-B).

    Parameters
    ----------
    centers_in : array-like of shape (n_in, n_features)
    centers_out : array-like of shape (n_out, n_features), default=centers_in

    Returns
    -------
    ndarray of shape (n_in, n_out), non-negative, exactly 0 on identical points.

    Examples
    --------
    >>> squared_euclidean_distortion([[0.0, 0.0], [3.0, 4.0]])
    array([[ 0., 25.],
           [25.,  0.]])
    """
    A = _check_centers(centers_in, "centers_in")
    B = A if centers_out is None else _check_centers(centers_out, "centers_out")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(
            f"centers_in and centers_out must be 2-D with the same number of features, got shapes "
            f"{np.shape(centers_in)} and {np.shape(centers_out) if centers_out is not None else np.shape(centers_in)}"
        )
    for name, C in (("centers_in", A), ("centers_out", B)):
        bad = np.argwhere(~np.isfinite(C))
        if bad.size:
            i, j = (int(v) for v in bad[0])
            raise ValueError(f"{name} must hold finite coordinates, got {float(C[i, j])!r} at ({i}, {j})")
    check_allocation(A.shape[0] * B.shape[0], f"the distortion of {A.shape[0]} x {B.shape[0]} centers",
                     itemsize=_DISTANCE_PEAK_BYTES)
    # differences first (scipy's cdist): ||a||^2 + ||b||^2 - 2 a.b cancelled to 0 between points far from
    # the origin (1e8 and 1e8 + 1 were at distance 0, so the mapping took them for one point)
    with np.errstate(over="ignore"):
        D = cdist(A, B, "sqeuclidean") if A.size and B.size else np.zeros((A.shape[0], B.shape[0]))
    if not np.all(np.isfinite(D)):
        i, j = (int(v) for v in np.argwhere(~np.isfinite(D))[0])
        raise ValueError(f"the squared distance between centers_in[{i}] and "
                         f"{'centers_in' if centers_out is None else 'centers_out'}[{j}] overflows float64 "
                         f"(largest coordinate {max(np.abs(A).max(), np.abs(B).max()):.3g}); rescale the centers")
    if centers_out is None:
        np.fill_diagonal(D, 0.0)
    return D


def _check_centers(x, name):
    """Points as a float array; strings, complex numbers and sparse matrices refused naming ``name``."""
    check_table(x, name)
    if sp.issparse(x):
        x = x.toarray()
    X = np.asarray(x)
    if X.dtype.kind not in "biuf" and not (X.dtype.kind == "O" and holds_only(X, numbers.Real)):
        raise TypeError(f"{name} must hold real coordinates, got an array of dtype {X.dtype}"
                        + (f" (for example {plain_value(X.ravel()[0])!r})" if X.size else ""))
    X = X.astype(np.float64)
    return X[:, None] if X.ndim == 1 else X


def _check_symbols(x, name, *, low=None):
    """Tuples of category codes as an int64 matrix; codes below ``low`` (when given) refused naming ``name``."""
    if sp.issparse(x):  # np.asarray wrapped it in a 0-d object array: "got shape (1, 2)" of a (1, 2) matrix
        raise TypeError(f"{name} must be a dense array of category codes, got a scipy sparse {type(x).__name__} of "
                        f"shape {x.shape} (0 is a category there, not 'not rated'): pass {name}.toarray()")
    shape = np.shape(x)
    if len(shape) == 1:
        shape = (shape[0], 1)
    if len(shape) != 2 or shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (n_tuples, n_features), got shape {np.shape(x)}")
    X = as_int64_codes(x, name, "integer category codes")  # as given: it names a bad value as the caller wrote it
    if X.ndim == 1:
        X = X[:, None]
    if low is not None and X.size and X.min() < low:
        what = "codes >= 0 (-1 marks an erasure)" if low == 0 else "codes >= 0, or -1 for an erased field"
        raise ValueError(f"{name} must be {what}, got {int(X.min())}")
    return X


#: largest number of (input, erased subset) pairs erasure_alphabet enumerates
MAX_ERASURE_CANDIDATES = 5_000_000


def erasure_alphabet(input_symbols):
    """Output alphabet of an erasure mapping (paper Sec. VI-A).

    Every input tuple with every subset of its features replaced by
    ``ERASED = -1``, deduplicated. Outputs are ordered by number of erasures,
    then lexicographically.

    Parameters
    ----------
    input_symbols : array-like of int, shape (n_inputs, n_features)
        Observed input tuples of category codes (codes must be >= 0).

    Returns
    -------
    ndarray of int, shape (n_outputs, n_features)

    Examples
    --------
    >>> erasure_alphabet([[0, 1], [1, 1]]).tolist()
    [[0, 1], [1, 1], [-1, 1], [0, -1], [1, -1], [-1, -1]]
    """
    X = _check_symbols(input_symbols, "input_symbols", low=0)
    F = X.shape[1]
    if X.shape[0] * 2.0**F > MAX_ERASURE_CANDIDATES:
        raise ValueError(
            f"{X.shape[0]} input tuple(s) of {F} feature(s) give up to {X.shape[0]} x 2**{F} erasure "
            f"outputs, more than {MAX_ERASURE_CANDIDATES:,}; erasure mappings are for a few categorical "
            "features (bin or group features first, or quantize with QuantizedPrivacyMapper)"
        )
    subsets = ((np.arange(2 ** F)[:, None] >> np.arange(F)) & 1).astype(bool)
    out = np.concatenate([np.where(s[None, :], ERASED, X) for s in subsets])
    out = np.unique(out, axis=0)
    n_erased = (out == ERASED).sum(axis=1)
    order = np.lexsort(tuple(out[:, j] for j in range(F - 1, -1, -1)) + (n_erased,))
    return out[order]


def _row_keys(A):
    """One comparable key per row of an integer matrix (rows equal iff keys equal)."""
    A = np.ascontiguousarray(A, dtype=np.int64)
    return A.view(np.dtype((np.void, A.dtype.itemsize * A.shape[1]))).ravel()


def _sparse_erasure_distortion(X, Y):
    """The reachable pairs only: each input's ``2^F`` erasure patterns looked up among the outputs."""
    F = X.shape[1]
    keys = _row_keys(Y)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    rows, cols, vals = [], [], []
    subsets = ((np.arange(2 ** F)[:, None] >> np.arange(F)) & 1).astype(bool)
    for s in subsets:
        cand = _row_keys(np.where(s[None, :], ERASED, X))
        # every output equal to the candidate (a duplicate output row is allowed as the dense form allows it)
        lo = np.searchsorted(sorted_keys, cand, side="left")
        cnt = np.searchsorted(sorted_keys, cand, side="right") - lo
        total = int(cnt.sum())
        first = np.repeat(np.cumsum(cnt) - cnt, cnt)
        rows.append(np.repeat(np.arange(X.shape[0]), cnt))
        cols.append(order[np.repeat(lo, cnt) + np.arange(total) - first])
        vals.append(np.full(total, float(s.sum())))
    r, c, v = (np.concatenate(a) for a in (rows, cols, vals))
    o = np.lexsort((c, r))
    r, c, v = r[o], c[o], v[o]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=X.shape[0]))]).astype(np.int64)
    return sp.csr_array((v, c.astype(np.int64), indptr), shape=(X.shape[0], Y.shape[0]))


def erasure_distortion(inputs, outputs, *, sparse=False):
    """Number of erasures, or ``inf`` when the output contradicts the input (paper Sec. VI-A).

    ``d(b, b_hat)`` is the number of erased positions of ``b_hat`` when ``b_hat``
    agrees with ``b`` on every non-erased position, ``np.inf`` otherwise, so a
    mapping can only erase, never lie.

    Parameters
    ----------
    inputs : array-like of int, shape (n_inputs, n_features)
    outputs : array-like of int, shape (n_outputs, n_features), ``-1`` = erased
    sparse : bool, default=False
        Return only the reachable pairs as a ``scipy.sparse.csr_array`` whose
        stored entries (explicit zeros included) are the allowed transitions, in
        memory proportional to ``n_inputs x 2^n_features`` rather than
        ``n_inputs x n_outputs`` (the form :func:`solve_mapping` accepts for
        large alphabets).

    Returns
    -------
    ndarray of shape (n_inputs, n_outputs), or csr_array with ``sparse=True``

    Examples
    --------
    >>> erasure_distortion([[0, 1]], [[0, 1], [-1, 1], [1, -1], [-1, -1]])
    array([[ 0.,  1., inf,  2.]])
    >>> D = erasure_distortion([[0, 1]], [[0, 1], [-1, 1], [1, -1], [-1, -1]], sparse=True)
    >>> D.indices.tolist(), D.data.tolist()
    ([0, 1, 3], [0.0, 1.0, 2.0])
    """
    # an input -1 (dense) was taken for a category the outputs' erasure marker matched, an output -2 for
    # a tuple no input reaches; the sparse form refused the first only
    X = _check_symbols(inputs, "inputs", low=0)
    Y = _check_symbols(outputs, "outputs", low=ERASED)
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"inputs have {X.shape[1]} features but outputs have {Y.shape[1]}")
    if sparse:
        if X.shape[0] * 2.0 ** X.shape[1] > MAX_ERASURE_CANDIDATES:
            raise ValueError(f"{X.shape[0]} input tuple(s) of {X.shape[1]} feature(s) give more than "
                             f"{MAX_ERASURE_CANDIDATES:,} (input, erased subset) pairs")
        return _sparse_erasure_distortion(X, Y)
    check_allocation(X.shape[0] * Y.shape[0], f"erasure_distortion of {X.shape[0]} inputs x {Y.shape[0]} outputs "
                     f"of {X.shape[1]} features (dense; sparse=True stores the reachable pairs only)",
                     itemsize=_ERASURE_PEAK_BYTES + 2 * X.shape[1])
    erased = Y == ERASED
    agree = (X[:, None, :] == Y[None, :, :]) | erased[None, :, :]
    ok = agree.all(axis=2)
    return np.where(ok, erased.sum(axis=1)[None, :].astype(float), np.inf)
