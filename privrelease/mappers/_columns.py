"""Column labels of the mappers' frames: recorded at ``fit`` (``feature_labels_in_``) and checked at ``transform``.

Shared by the mappers' in-memory paths (:mod:`privrelease.mappers._base` and the mapper classes) and their dask
path (:mod:`privrelease.mappers._dask`), which checks a dask DataFrame's columns before its graph is built.
"""

import functools

import numpy as np
import pandas as pd

__all__ = ["check_column_labels", "record_column_labels", "keep_column_labels"]


def _plain_label(label):
    """A column label as it is recorded and compared: numpy scalars as the Python values they hold, tuples (a
    MultiIndex's) item by item, labels of other types (dates, ...) as their text."""
    if isinstance(label, tuple):
        return tuple(_plain_label(v) for v in label)
    if isinstance(label, np.generic):
        label = label.item()
    if label is None or isinstance(label, (str, bool, int, float)):
        return label
    return str(label)


def _same_label(a, b):
    """Whether two plain column labels are one label (``1`` and ``1.0`` are, ``1`` and ``True`` or ``'1'`` not)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(_same_label(x, y) for x, y in zip(a, b)))
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b
    return a == b or (a != a and b != b)  # numbers (NaN labels alike)


def _frame_columns(X):
    """The column labels of a pandas or dask DataFrame, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or getattr(X, "ndim", 2) != 2 or isinstance(X, np.ndarray):
        return None
    return list(columns)


def record_column_labels(est, columns):
    """Record ``feature_labels_in_``: the fitted frame's column labels when they are not all strings (integer item
    ids of a pivot, a MultiIndex's tuples); string names are scikit-learn's ``feature_names_in_``."""
    if columns is not None and len(columns) and not all(isinstance(c, str) for c in columns):
        labels = np.empty(len(columns), dtype=object)
        labels[:] = [_plain_label(c) for c in columns]
        est.feature_labels_in_ = labels
    elif hasattr(est, "feature_labels_in_"):
        del est.feature_labels_in_


def check_column_labels(est, columns, name="X"):
    """Refuse a frame whose column labels differ (in content or order) from ``feature_labels_in_`` (ValueError
    naming the first mismatch): columns are read by position, so a reordered frame of item ids misassigned every
    item. scikit-learn does this for string names only; a frame without labels to compare passes."""
    fitted = getattr(est, "feature_labels_in_", None)
    if fitted is None or columns is None:
        return
    got = [_plain_label(c) for c in columns]
    fitted = fitted.tolist()
    if len(got) != len(fitted):
        return  # scikit-learn's count of features says it
    for i, (want, have) in enumerate(zip(fitted, got)):
        if not _same_label(want, have):
            if all(any(_same_label(w, h) for h in got) for w in fitted):
                how = f"reorder them as in fit: {name}.reindex(columns=list(mapper.feature_labels_in_))"
            else:
                missing = next(w for w in fitted if not any(_same_label(w, h) for h in got))
                how = f"fit saw a column {missing!r} that {name} lacks"
            raise ValueError(
                f"{name} has column {have!r} at position {i} where fit saw column {want!r}: the columns of a frame "
                f"must be the ones given to fit, in the same order (they are read by position, so its values would "
                f"be taken for another column's); {how}")



def keep_column_labels(method):
    """Wrap ``transform`` / ``fit_transform`` so that a released pandas DataFrame carries the fitted column labels.

    scikit-learn's ``set_output(transform="pandas")`` renames the columns of the output to
    ``get_feature_names_out()``, which holds strings only: a frame fitted with column labels that are not all strings
    (integer item ids of a pivot, a MultiIndex's tuples; ``feature_labels_in_``) came back with columns
    ``x0, x1, ...`` under that setting, while the default output of the same call keeps the frame's labels. The
    output's columns are put back to the input frame's labels (checked against ``feature_labels_in_`` by
    ``transform``), or to ``feature_labels_in_`` for an input without labels. This wrapper must be the outermost
    one (it runs after scikit-learn's renaming). A dask DataFrame skips scikit-learn's wrapping (``__wrapped__``):
    its release stays a lazy dask DataFrame that keeps its index and labels.
    """

    @functools.wraps(method)
    def wrapped(self, X, *args, **kwargs):
        if _is_dask_frame(X):
            # a dask DataFrame is released lazily, as a dask DataFrame with its index and labels, whatever the
            # output setting: scikit-learn's pandas wrapping read it with pd.DataFrame(...), which computed the
            # whole release at once and dropped its index (user ids 100, 101, ... came back as 0, 1, ...)
            return getattr(method, "__wrapped__", method)(self, X, *args, **kwargs)
        out = method(self, X, *args, **kwargs)
        labels = getattr(self, "feature_labels_in_", None)
        if labels is None or not isinstance(out, pd.DataFrame) or out.shape[1] != len(labels):
            return out
        if isinstance(X, pd.DataFrame) and X.shape[1] == len(labels):
            columns = X.columns
        else:
            columns = pd.Index(labels.tolist(), tupleize_cols=True)
        if not out.columns.equals(columns):
            out.columns = columns
        return out

    return wrapped


def _is_dask_frame(X):
    """A dask DataFrame (dask is imported only if ``X`` comes from it)."""
    return (type(X).__module__ or "").startswith("dask") and hasattr(X, "columns") and hasattr(X, "npartitions")
