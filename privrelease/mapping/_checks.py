"""Validation of priors, distortion matrices and mappings (shared by the mapping engine)."""

import datetime
import math
import numbers
import warnings
from decimal import Decimal

import numpy as np
import scipy.sparse as sp

from ..exceptions import ComplexDataError
from ..utils import check_number
from ..utils._validation import check_table, plain_value, user_stacklevel

__all__ = ["check_prior", "check_distortion", "check_mapping", "check_budget", "check_paired_labels"]

#: absolute tolerance on ``sum(prior) == 1``
PRIOR_SUM_TOL = 1e-8
#: a float32 / float16 prior may miss 1 by this many of its own epsilons (it was normalised at its precision)
PRIOR_SUM_EPS = 8
#: 1 and its two neighbours: a prior whose exact sum rounds to one of them is returned as it is. Divided by its
#: correctly rounded sum, a prior's exact sum is within half an ulp (of the quotients' total) of 1, so its own
#: correctly rounded sum is one of these three: ``check_prior(check_prior(P))`` is ``check_prior(P)``
_ONE_ULP = (float(np.nextafter(1.0, 0.0)), float(np.nextafter(1.0, 2.0)))


def check_prior(prior, *, name="prior"):
    """Return ``prior`` as a 2-D float array after checking it is a joint distribution.

    A scipy sparse prior is densified (a joint distribution is small: ``n_private x n_public``).
    A float32 (float16) prior only has to sum to 1 within ``8`` epsilons of its dtype
    (``9.5e-7`` for float32): normalised at that precision it missed ``1e-8``.

    The prior is divided by its sum (correctly rounded), unless that sum is 1 or one of its neighbours: then it
    is returned as it is (a copy), so that the result passed again comes back unchanged and every caller works
    with the same normalised prior.

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
    total = math.fsum(P.ravel())
    if abs(total - 1.0) > tol:
        raise ValueError(f"{name} must sum to 1 (a joint distribution), got a sum of {float(total)!r}")
    if _ONE_ULP[0] <= total <= _ONE_ULP[1]:
        return P.copy()  # a copy, as the division's: the caller's array is never returned
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
    _refuse_strings(distortion, name, "numbers", missing_hint=" (use np.inf to forbid a transition)")
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


def _refuse_strings(values, name, what, *, missing_hint=""):
    """Refuse what ``np.asarray(..., dtype=float)`` would parse or misread as numbers (TypeError naming ``name``).

    Strings (``"0.5"``, ``"inf"``: a string array, a DataFrame of strings or an object array holding
    them), bytes, datetimes and timedeltas (their integer counts were taken as numbers) and other
    non-numbers; complex values raise :class:`~privrelease.exceptions.ComplexDataError`. ``None`` (or ``pd.NA``) in
    an object array is a ValueError naming its cell (it became NaN, reported as "got nan").
    Numbers of any kind (``Decimal``, ``Fraction``, booleans, pandas' nullable dtypes) pass.
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        return  # ragged: the conversion below says so
    kind = arr.dtype.kind
    if kind in "US":
        raise TypeError(f"{name} must be an array of {what}, got strings (dtype {arr.dtype})")
    if kind in "Mm":
        what_got = "datetimes" if kind == "M" else "timedeltas"
        raise TypeError(f"{name} must be an array of {what}, got {what_got} (dtype {arr.dtype})")
    if kind == "c":
        raise ComplexDataError(f"{name} must be an array of real {what}, got complex values (dtype {arr.dtype})")
    if kind != "O":
        return
    import pandas as pd

    flat = arr.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, (bool, np.bool_, numbers.Real, np.number, Decimal)) and not isinstance(
                v, (complex, np.complexfloating)):
            continue
        pos = tuple(int(t) for t in np.unravel_index(i, arr.shape))
        if v is None or v is pd.NA:
            raise ValueError(f"{name} must not contain missing values, got {v!r} at {pos}{missing_hint}")
        if isinstance(v, (complex, np.complexfloating)):
            raise ComplexDataError(f"{name} must be an array of real {what}, got {plain_value(v)!r} at {pos}")
        if isinstance(v, (str, bytes, np.str_, np.bytes_)):
            got = "a string"
        elif v is pd.NaT or isinstance(v, (np.datetime64, np.timedelta64, datetime.date, datetime.time,
                                           datetime.timedelta)):
            got = "a datetime or timedelta"
        else:
            got = f"a {type(v).__name__}"
        raise TypeError(f"{name} must be an array of {what}, got {got} ({v!r}) at {pos}")


def _index_labels(obj, axis):
    """The pandas labels of ``obj`` along ``axis`` ("index" or "columns"), or None."""
    import pandas as pd

    labels = getattr(obj, axis, None) if isinstance(obj, (pd.DataFrame, pd.Series)) else None
    return labels if isinstance(labels, pd.Index) else None


def check_paired_labels(left, left_name, left_axis, right, right_name, right_axis, what):
    """Refuse two pandas objects whose labels of the paired axis differ (ValueError naming both).

    The engine pairs a prior's columns with a distortion's (or mapping's) rows, and a mapping's columns
    with a distortion's, by position: a distortion indexed ``["y", "x"]`` beside a prior with columns
    ``["x", "y"]`` silently gave each public symbol another one's costs. As :func:`check_same_index`: a
    default ``0, 1, 2 ...`` labelling on either side means "by position", unless the other side holds the
    same labels in another order.

    Parameters
    ----------
    left, right : object
        The two arguments (only pandas objects carry labels; anything else passes).
    left_name, right_name : str
        Their names in the message.
    left_axis, right_axis : {"index", "columns"}
        The paired axes.
    what : str
        What the paired positions are ("public symbol", "output").
    """
    import pandas as pd

    lx, rx = _index_labels(left, left_axis), _index_labels(right, right_axis)
    if lx is None or rx is None or len(lx) != len(rx) or lx.equals(rx):
        return
    try:
        same = lx.sort_values().equals(rx.sort_values())
    except TypeError:  # labels that cannot be ordered: not one set of labels in two orders
        same = False
    if not same and any(isinstance(i, pd.RangeIndex) and i.start == 0 and i.step == 1 for i in (lx, rx)):
        return
    k = int(np.flatnonzero(lx.to_numpy(dtype=object) != rx.to_numpy(dtype=object))[0])
    how = "the same labels in another order" if same else "other labels"
    raise ValueError(
        f"the labels of {right_name}'s {right_axis} differ from {left_name}'s {left_axis} ({how}: {what} {k} is "
        f"{plain_value(lx[k])!r} in {left_name} but {plain_value(rx[k])!r} in {right_name}); they are paired by "
        f"position, so each {what} would get another one's values: reorder {right_name} to {left_name}'s "
        f"{left_axis} first, or pass {right_name}.to_numpy() if the positions already match")


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
            UserWarning, stacklevel=user_stacklevel())
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
    """A non-negative budget (``np.inf`` allowed) as a float; TypeError/ValueError quoting the value.

    A 0-d numpy array of a real number (``np.array(0.1)``) and a ``Decimal`` are the number they hold, in
    :func:`~privrelease.mapping.solve_mapping` as in :func:`~privrelease.mapping.privacy_distortion_curve`; a
    ``Decimal`` beyond float64 is the infinite budget, as the int ``10**400``.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iufO":
        value = value[()]
    if isinstance(value, Decimal):
        if value.is_snan():
            raise ValueError(f"{name} must be a number, got {value!r}")
        value = float(value)
    return check_number(value, name, low=0.0, allow_inf=True)
