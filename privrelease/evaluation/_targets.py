"""Private attributes the evaluation scores: one column, several columns, and their joint.

A private attribute ``y`` is either 1-D (one label per user, binary or
multi-class) or 2-D of shape ``(n_users, n_attributes)``: one column per
attribute (for example gender and age band). For a 2-D attribute the
evaluation attacks the JOINT attribute (the tuple of the columns, encoded as one
label per distinct tuple) and every MARGINAL (each column on its own).
"Not disclosed" has the one definition of :func:`privrelease.utils.undisclosed_mask`.
"""

import numpy as np

from ..utils import check_private_labels, undisclosed_mask
from ..utils._validation import UNDISCLOSED_SHORT, check_label_input, plain_labels

__all__ = ["joint_attribute", "attribute_targets", "check_attribute"]


def _column_names(y, n_columns):
    cols = getattr(y, "columns", None)
    if cols is not None:
        names = [str(c) for c in cols]
        if len(set(names)) != len(names):
            raise ValueError(f"the private attribute's column names must be distinct, got {names!r}")
        if "joint" in names:
            raise ValueError(f"'joint' is reserved for the joint attribute; rename that column in {names!r}")
        return names
    return [f"attr{k}" for k in range(n_columns)]


def check_attribute(y, n_samples, *, name="y"):
    """Validate a 1-D or 2-D private attribute.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, n_attributes), or DataFrame
        Labels; every column is checked by :func:`privrelease.utils.check_private_labels`
        (one kind of label per column; undisclosed markers allowed).
    n_samples : int

    Returns
    -------
    y : ndarray of shape (n_samples,) or (n_samples, n_attributes)
        A 2-D array is of dtype object when its columns are of different dtypes.
    labeled : ndarray of bool of shape (n_samples,)
        Users who disclosed the attribute (for 2-D: every column).
    names : list of str or None
        Column names of a 2-D attribute (DataFrame columns, else ``attr0, attr1, ...``);
        ``None`` for a 1-D attribute.
    """
    if y is None:
        raise ValueError(f"{name} is None; expected the private attribute, one label per user")
    check_label_input(y, name)
    if hasattr(y, "columns") and hasattr(y, "iloc"):  # DataFrame: one column per attribute
        if y.shape[1] == 1:
            return (*check_private_labels(y.iloc[:, 0], n_samples, name=name), None)
        names = _column_names(y, y.shape[1])
        cols = [check_private_labels(y.iloc[:, k], n_samples, name=f"{name}[{names[k]!r}]")
                for k in range(y.shape[1])]
    else:
        arr = np.asarray(y) if not hasattr(y, "to_numpy") else y
        if np.ndim(arr) == 2 and np.shape(arr)[1] > 1:
            arr = np.asarray(arr)
            if arr.shape[0] != n_samples:
                raise ValueError(f"{name} has {arr.shape[0]} rows but X has {n_samples} users")
            names = _column_names(y, arr.shape[1])
            cols = [check_private_labels(arr[:, k], n_samples, name=f"{name}[:, {k}]")
                    for k in range(arr.shape[1])]
        else:
            out, labeled = check_private_labels(y, n_samples, name=name)
            return out, labeled, None
    labeled = np.logical_and.reduce([lab for _, lab in cols])
    values = [c for c, _ in cols]
    if len({v.dtype for v in values}) == 1:
        Y = np.column_stack(values)
    else:
        Y = np.empty((n_samples, len(values)), dtype=object)
        for k, v in enumerate(values):
            Y[:, k] = v
    return Y, labeled, names


def joint_attribute(y):
    """Encode a 2-D private attribute as one label per distinct tuple of its columns.

    Parameters
    ----------
    y : array-like of shape (n_samples, n_attributes)
        Every entry disclosed (no undisclosed marker).

    Returns
    -------
    codes : ndarray of int64 of shape (n_samples,)
        ``codes[u] == codes[v]`` exactly when users ``u`` and ``v`` have the same
        value in every column. The codes number the distinct tuples that occur,
        ``0, 1, ...``, in lexicographic order of the columns' sorted values.
    tuples : list of tuple
        ``tuples[c]`` is the tuple of column values of code ``c``: one per
        distinct row of ``y`` (at most ``n_samples``, whatever the number of
        columns; enumerating every combination of the columns' values, as
        before, took memory exponential in the number of columns and wrapped
        the int64 codes around past 2**63 combinations).

    Examples
    --------
    >>> import numpy as np
    >>> from privrelease.evaluation import joint_attribute
    >>> codes, tuples = joint_attribute(np.array([["f", "young"], ["m", "old"], ["f", "old"]]))
    >>> codes.tolist(), tuples
    ([1, 2, 0], [('f', 'old'), ('f', 'young'), ('m', 'old')])
    """
    Y = np.asarray(y, dtype=object) if not isinstance(y, np.ndarray) else y
    if hasattr(y, "to_numpy"):
        Y = y.to_numpy(dtype=object)
    if Y.ndim != 2:
        raise ValueError(f"joint_attribute needs a 2-D attribute (one column per attribute), got shape {Y.shape}")
    if undisclosed_mask(Y.ravel()).any():
        raise ValueError("joint_attribute needs every label disclosed; the attribute holds undisclosed markers "
                         f"({UNDISCLOSED_SHORT})")
    column_codes = np.empty(Y.shape, dtype=np.int64)
    uniques = []
    for k in range(Y.shape[1]):
        u, inv = np.unique(Y[:, k], return_inverse=True)
        uniques.append(u.tolist())
        column_codes[:, k] = inv.ravel()
    if Y.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), []
    rows, codes = np.unique(column_codes, axis=0, return_inverse=True)  # lexicographic, as the values
    tuples = [tuple(uniques[k][c] for k, c in enumerate(row)) for row in rows.tolist()]
    return codes.ravel().astype(np.int64), tuples


def attribute_targets(y_train, y_test, names=None):
    """What the attackers are asked to guess: ``[(target, y_train, y_test), ...]``.

    A 1-D attribute (or a single column) gives one target, ``"attribute"``. A 2-D attribute gives
    ``"joint"`` (both sets encoded together by :func:`joint_attribute`, so the
    codes agree; ``-1``, undisclosed, for a user who hides any column)
    followed by one target per column (``names``, default a DataFrame's column names, else
    ``attr0, attr1, ...``).

    Parameters
    ----------
    y_train, y_test : array-like of shape (n_users,) or (n_users, n_attributes)
        The attribute of the users the attackers learn from and of those they
        attack (the same columns, in the same order).
    names : sequence of str, default=None
        Names of the columns of a 2-D attribute (default: a DataFrame's column
        names, else ``attr0, attr1, ...``).

    Returns
    -------
    targets : list of tuple
        ``(target, y_train, y_test)`` per target: ``"attribute"`` alone for a
        1-D attribute; ``"joint"`` then one per column for a 2-D one.

    Raises
    ------
    ValueError
        ``names`` not one per column, repeated, or holding ``"joint"`` (the joint attribute's name).
    """
    train_columns, test_columns = getattr(y_train, "columns", None), getattr(y_test, "columns", None)
    if train_columns is not None and test_columns is not None and list(train_columns) != list(test_columns):
        # the columns are paired by position: swapped columns of one value set were scored against each other
        raise ValueError(f"y_test's columns {list(test_columns)!r} are not y_train's {list(train_columns)!r}; the "
                         "columns are paired by position: give y_test y_train's columns in the same order "
                         "(y_test[y_train.columns])")
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    if y_train.ndim == 2 and y_train.shape[1] == 1 and (y_test.ndim == 1 or y_test.shape[1:] == (1,)):
        # one column is one attribute, as check_attribute reads it for rmse_cost and the curve (it was scored
        # twice, as "joint" and as its column)
        y_train, y_test = y_train[:, 0], y_test.reshape(-1)
    if y_train.ndim == 1:
        return [("attribute", y_train, y_test)]
    n_cols = y_train.shape[1]
    if y_test.ndim != 2 or y_test.shape[1] != n_cols:
        raise ValueError(f"y_train has {n_cols} attribute column(s) but y_test has shape {y_test.shape}")
    names = _check_names(names, n_cols, train_columns)
    both = np.concatenate([y_train.astype(object), y_test.astype(object)], axis=0)
    for k in range(n_cols):  # one kind of label per column ('1' in y_test beside 1 in y_train: numpy's '<' failed)
        check_private_labels(both[:, k], both.shape[0], name=f"column {names[k]!r} of y_train and y_test together")
    hidden = np.logical_or.reduce([undisclosed_mask(both[:, k]) for k in range(n_cols)])
    codes = np.full(both.shape[0], -1, dtype=np.int64)  # a user hiding any column hides the joint
    if not hidden.all():
        codes[~hidden] = joint_attribute(both[~hidden])[0]
    out = [("joint", codes[: y_train.shape[0]], codes[y_train.shape[0]:])]
    out += [(names[k], _column(y_train, k), _column(y_test, k)) for k in range(n_cols)]
    return out


def _check_names(names, n_cols, columns):
    """One distinct name per column of a 2-D attribute, none of them ``"joint"``; they key its targets."""
    what = "attribute_names"
    if names is None:
        if columns is None:
            return [f"attr{k}" for k in range(n_cols)]
        names, what = [str(c) for c in columns], "y_train's column names"
    elif isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
        raise TypeError(f"attribute_names must be a list of column names, one per column, got {names!r}")
    names = list(names)
    if len(names) != n_cols:
        raise ValueError(f"{what} has {len(names)} name{'s' if len(names) != 1 else ''} {names!r} but the private "
                         f"attribute has {n_cols} columns; give one name per column")
    shown = [str(n) for n in names]
    repeated = [n for k, n in enumerate(shown) if n in shown[:k]]
    if repeated:
        raise ValueError(f"{what} must be distinct, got {repeated[0]!r} twice in {names!r}: each column is "
                         "scored under its name")
    if "joint" in shown:
        raise ValueError(f"'joint' is reserved for the joint attribute (the tuple of the columns); rename that "
                         f"column in {what} {names!r}")
    return names


def _column(Y, k):
    """Column ``k`` with its own dtype (an object column of ints would not be a classification target)."""
    col = Y[:, k]
    return plain_labels(col)
