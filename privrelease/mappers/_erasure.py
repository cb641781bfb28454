"""ErasureMapper: erasure-only privacy mapping of categorical features (Salamatian et al., Sec. VI-A)."""

import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ..exceptions import UnseenCategoryWarning
from ..utils import check_random_source
from ._common import (
    BUDGET_CONSTRAINT,
    LEAKAGE_CONSTRAINT,
    RANDOM_STATE_CONSTRAINT,
    map_accuracy,
    mismatch_bound_bits,
    mutual_information_bits,
    private_labels,
    require_private_labels,
    solve,
)
from . import _dask

__all__ = ["ErasureMapper"]

_UNSEEN = -2  # code of a category never seen in fit


def _is_missing(values):
    """Elementwise missing test for an object/number column."""
    return np.asarray(pd.isna(pd.Series(values, dtype=object)), dtype=bool)


class ErasureMapper(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Release categorical features after erasing some of them, never lying.

    The input alphabet is the set of category tuples ``b`` seen among labeled
    users; the output alphabet holds every such tuple with any subset of its
    features erased; ``d(b, b_hat)`` is the number of erasures when ``b_hat``
    agrees with ``b`` on every non-erased feature and ``inf`` otherwise, so the
    mapping can only erase (Salamatian et al., Sec. VI-A). The mapping
    ``p(b_hat | b)`` minimises the leakage ``I(A; B_hat)`` about the private
    attribute under a budget ``delta`` on the expected number of erasures (or
    the expected erasures under a leakage cap), solved by
    :func:`privrelease.mapping.solve_mapping` (Algorithm 1).

    Parameters
    ----------
    delta : float or None, default=None
        Budget on the expected number of erased features per row.
    max_leakage : float or None, default=None
        Leakage cap in bits; minimise the expected erasures subject to it.
        When both are None, perfect privacy (``max_leakage=0``) under the
        fitted prior. Give at most one of the two.
    leakage : {"mutual_information", "maximal_leakage"}, default="mutual_information"
    random_state : None, int, numpy Generator or RandomSource, default=None
        Source of the privacy draws in ``transform``. ``None`` reads the
        operating system's entropy; an integer (tests, experiments) makes every
        ``transform`` call replay the same seeded stream.

    Attributes
    ----------
    categories_ : list of ndarray
        Categories of each feature seen in ``fit`` (all rows, labeled or not).
    classes_ : ndarray
        Values of the private attribute.
    input_tuples_ : ndarray of int, shape (n_inputs, n_features)
        Category-code tuples seen among labeled rows (codes index ``categories_``).
    output_tuples_ : ndarray of int, shape (n_outputs, n_features)
        Output alphabet; ``-1`` marks an erased feature.
    prior_ : ndarray of shape (n_classes, n_inputs)
        Empirical joint ``p(a, b)`` over labeled rows.
    cost_matrix_ : ndarray of shape (n_inputs, n_outputs)
        Erasure distortion (``inf`` = forbidden).
    mapping_ : ndarray of shape (n_inputs, n_outputs)
    leakage_ : float
        Leakage in bits under ``prior_``.
    prior_leakage_ : float
        ``I(A; B)`` with no erasure.
    distortion_ : float
        Expected number of erasures under ``prior_``.
    map_accuracy_ : float
        MAP attacker's accuracy on the released tuples under ``prior_``.
    mismatch_bound_ : float
        Proposition 1 + Theorem 1 bound (95 %) on the leakage error due to the
        empirical prior (``inf`` when the sample is too small for it).
    solver_result_ : object
        The engine's result (``status``, ``certificate``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    Notes
    -----
    Rows ``transform`` has not seen in ``fit`` are handled conservatively
    (each case issues an :class:`~privrelease.exceptions.UnseenCategoryWarning`):

    * a **category never seen in fit** is erased. The row's other features go
      through the mapping as if the unseen cell held one of the seen values:
      an input tuple agreeing with the row's seen cells is drawn from the fitted
      prior ``p(b)``, its mapping is sampled, and the unseen cell is erased in
      the output. The release is therefore a mixture of releases of real inputs
      (and still only erases the row's own values). When no seen tuple agrees
      with the row's seen cells, every feature is erased;
    * a **new combination of seen categories** has no mapping row and no prior
      mass: every feature is erased (the all-erased output reveals nothing about
      the row, whatever the attacker knows).

    Missing values in the input are refused (an erased cell cannot be released again
    through the mapping).

    See Also
    --------
    QuantizedPrivacyMapper : quantized mappings of rating matrices (Alg. 2).
    privrelease.mapping.erasure_alphabet, privrelease.mapping.erasure_distortion

    References
    ----------
    S. Salamatian et al., "Managing your Private and Public Data: Bringing down
    Inference Attacks against your Privacy", Algorithm 1, eq. (6), Sec. VI-A
    (Census erasures, Fig. 4 and 5); Theorem 1 and Proposition 1.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from privrelease.mappers import ErasureMapper
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> X = pd.DataFrame({"sex": np.where(rng.random(400) < 0.7, y, 1 - y),
    ...                   "city": rng.choice(["a", "b"], 400)})
    >>> m = ErasureMapper(delta=0.0, random_state=0).fit(X, y)
    >>> round(m.leakage_, 3) == round(m.prior_leakage_, 3)
    True
    >>> m = ErasureMapper(random_state=0).fit(X, y)   # perfect privacy
    >>> m.leakage_ < 1e-6
    True
    >>> out = m.transform(X)
    >>> bool(((out == X) | out.isna()).all().all())   # values are only erased
    True
    """

    _parameter_constraints = {
        "delta": BUDGET_CONSTRAINT,
        "max_leakage": BUDGET_CONSTRAINT,
        "leakage": LEAKAGE_CONSTRAINT,
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, delta=None, *, max_leakage=None, leakage="mutual_information", random_state=None):
        self.delta = delta
        self.max_leakage = max_leakage
        self.leakage = leakage
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _check_X(self, X, reset):
        Xa = validate_data(self, X, dtype=None, ensure_all_finite=False, reset=reset)
        Xa = np.asarray(Xa)
        if Xa.dtype.kind in "cmMV":
            raise TypeError(f"ErasureMapper needs categorical values, got dtype {Xa.dtype}")
        if Xa.dtype.kind == "f" and np.isinf(Xa).any():
            bad = Xa[np.isinf(Xa)][0]
            raise ValueError(
                f"X contains {int(np.isinf(Xa).sum())} infinite value(s) (for example {bad!r}); "
                "categories must be finite"
            )
        missing = np.column_stack([_is_missing(Xa[:, j]) for j in range(Xa.shape[1])])
        if missing.any():
            r, c = np.argwhere(missing)[0]
            raise ValueError(
                f"X contains {int(missing.sum())} missing value(s) (for example row {r}, column {c}: "
                f"{Xa[r, c]!r}); ErasureMapper needs every category present (NaN/None are refused)"
            )
        return Xa

    def _encode(self, Xa):
        """Category codes (index into ``categories_``), ``-2`` for unseen categories."""
        codes = np.empty(Xa.shape, dtype=np.int64)
        for j, cats in enumerate(self.categories_):
            lookup = {v: i for i, v in enumerate(cats.tolist())}
            col = Xa[:, j]
            values = col.tolist()
            codes[:, j] = [lookup.get(v, _UNSEEN) for v in values]
        return codes

    @staticmethod
    def _uniques(col):
        try:
            return np.unique(col)
        except TypeError:  # mixed types: order by their repr, keep them as objects
            vals = list(dict.fromkeys(col.tolist()))
            out = np.empty(len(vals), dtype=object)
            out[:] = sorted(vals, key=lambda v: (type(v).__name__, repr(v)))
            return out

    # --------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Estimate the prior on labeled rows and solve for the erasure mapping.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Categorical features (strings, integers, pandas categoricals...).
            A row-chunked dask DataFrame or Array is counted per partition
            (only the table of distinct rows is brought into memory).
        y : array-like of shape (n_samples,)
            Private attribute; ``-1`` or NaN for rows that did not disclose it.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each row in the prior counts (a row of weight
            2 counts as two identical rows); None weighs every row 1.

        Returns
        -------
        self : ErasureMapper
        """
        if _dask.is_dask_collection(X):
            return _dask.fit(self, X, y, sample_weight=sample_weight)
        require_private_labels(self, y)
        Xa = self._check_X(X, reset=True)
        y, labeled = private_labels(y, Xa.shape[0])
        if not labeled.any():
            raise ValueError(
                f"no labeled rows: all {Xa.shape[0]} entries of y are missing (-1 or NaN); "
                "the prior is estimated from rows that disclosed the private attribute"
            )
        self.categories_ = []
        for j in range(Xa.shape[1]):
            col = Xa[:, j]
            self.categories_.append(self._uniques(col))
        w = np.ones(Xa.shape[0]) if sample_weight is None else _check_sample_weight(sample_weight, Xa)
        if w[labeled].sum() <= 0:
            raise ValueError(
                "sample_weight gives the labeled rows a total weight of 0; expected a positive total"
            )
        codes = self._encode(Xa)[labeled]
        self.classes_, a_idx = np.unique(y[labeled], return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"y has a single class among labeled rows ({self.classes_[0]!r}); one class is not "
                "enough: a private attribute needs at least two values to be protected"
            )
        from ..mapping import erasure_alphabet, erasure_distortion

        self.input_tuples_, b_idx = np.unique(codes, axis=0, return_inverse=True)
        b_idx = b_idx.ravel()
        counts = np.zeros((self.classes_.size, self.input_tuples_.shape[0]))
        np.add.at(counts, (a_idx, b_idx), w[labeled])
        self.prior_ = counts / counts.sum()
        self.prior_leakage_ = mutual_information_bits(self.prior_)
        self.output_tuples_ = erasure_alphabet(self.input_tuples_)
        self.cost_matrix_ = erasure_distortion(self.input_tuples_, self.output_tuples_)
        result = solve(self.prior_, self.cost_matrix_, delta=self.delta, max_leakage=self.max_leakage,
                       leakage=self.leakage, solver="auto")
        M = np.where(np.isfinite(self.cost_matrix_), np.clip(np.asarray(result.mapping, float), 0, None), 0.0)
        self.mapping_ = M / M.sum(axis=1, keepdims=True)
        self.solver_result_ = result
        self.leakage_ = float(result.leakage)
        p_b = self.prior_.sum(axis=0)
        finite_cost = np.where(np.isfinite(self.cost_matrix_), self.cost_matrix_, 0.0)
        self.distortion_ = float(np.sum(p_b[:, None] * self.mapping_ * finite_cost))
        self.map_accuracy_ = map_accuracy(self.prior_ @ self.mapping_)
        self.mismatch_bound_ = mismatch_bound_bits(int(round(w[labeled].sum())), self.classes_.size,
                                                   self.input_tuples_.shape[0])
        self._index = {tuple(t): i for i, t in enumerate(self.input_tuples_.tolist())}
        return self

    # ---------------------------------------------------------------- transform
    def _erased_cells(self, codes, source):
        """Boolean (n, n_features): which cells the release erases."""
        n, F = codes.shape
        erased = np.ones((n, F), dtype=bool)
        idx = np.array([self._index.get(tuple(r), -1) for r in codes.tolist()], dtype=np.int64)
        unseen_cat = (codes == _UNSEEN).any(axis=1)
        seen = idx >= 0
        if seen.any():
            j = source.categorical(self.mapping_[idx[seen]])
            erased[seen] = self.output_tuples_[j] == -1
        new_combo = (~seen) & (~unseen_cat)
        if new_combo.any():
            warnings.warn(
                f"{int(new_combo.sum())} row(s) hold a combination of categories never seen in fit "
                "(for example "
                f"{[self.categories_[f][c] for f, c in enumerate(codes[np.flatnonzero(new_combo)[0]])]!r}); "
                "every feature of these rows is erased",
                UnseenCategoryWarning,
                stacklevel=3,
            )
        if unseen_cat.any():
            rows = np.flatnonzero(unseen_cat)
            first = rows[0]
            feats = np.flatnonzero(codes[first] == _UNSEEN)
            warnings.warn(
                f"{int(unseen_cat.sum())} row(s) hold a category never seen in fit (for example feature "
                f"{int(feats[0])} of row {int(first)}); those cells are erased and the rest of the row is "
                "released through the mapping of a seen row that agrees with it (drawn from the prior)",
                UnseenCategoryWarning,
                stacklevel=3,
            )
            p_b = self.prior_.sum(axis=0)
            for r in rows:
                known = codes[r] != _UNSEEN
                agree = np.all(self.input_tuples_[:, known] == codes[r, known], axis=1)
                w = np.where(agree, p_b, 0.0)
                if w.sum() <= 0:
                    continue  # no seen tuple agrees: erase everything
                b = int(source.categorical(w / w.sum())[0])
                j = int(source.categorical(self.mapping_[b])[0])
                erased[r] = (self.output_tuples_[j] == -1) | ~known
        return erased

    def transform(self, X):
        """Erase cells according to the fitted mapping.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        X_released : DataFrame or ndarray
            A DataFrame keeps its columns, index and (where possible) dtypes:
            categorical columns stay categorical, integer columns become pandas
            nullable ``Int64``, erased cells are missing (NaN / pd.NA). An ndarray
            comes back as a float array (numeric input, NaN = erased) or an
            object array (None = erased). Non-erased cells are never changed.
        """
        if _dask.is_dask_collection(X):
            return _dask.transform(self, X)
        check_is_fitted(self)
        Xa = self._check_X(X, reset=False)
        source = check_random_source(self.random_state)
        erased = self._erased_cells(self._encode(Xa), source)
        if isinstance(X, pd.DataFrame):
            out = X.copy()
            for j, col in enumerate(out.columns):
                s = out[col]
                if pd.api.types.is_bool_dtype(s.dtype):
                    s = s.astype("boolean")
                elif pd.api.types.is_integer_dtype(s.dtype):
                    s = s.astype("Int64")
                out[col] = s.mask(erased[:, j])
            return out
        if Xa.dtype.kind in "fiub":
            out = Xa.astype(np.float64)
            out[erased] = np.nan
            return out
        out = Xa.astype(object)
        out[erased] = None
        return out

    def save(self, path):
        """Save the fitted mapper to a portable ``.npz`` file (no pickle); read it with ``privrelease.load``."""
        from .._persistence import save

        return save(self, path)

    def mapping_table(self, top=8):
        """Most probable release of the most frequent inputs (the paper's Fig. 5).

        Parameters
        ----------
        top : int, default=8
            Number of input tuples shown, most frequent first.

        Returns
        -------
        table : pandas.DataFrame
            One row per input tuple: its features, ``frequency`` (share of
            labeled rows), ``p(<class>)`` for each private class (the skew given
            the input), ``skew`` (the majority class if its share exceeds its
            overall share by more than 10 points, else ``"N"`` for neutral as in
            Fig. 5), the most probable output's features (``-`` = erased, under
            ``released <feature>``), its probability and the expected erasures.
        """
        check_is_fitted(self)
        if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
            raise ValueError(f"top must be a positive integer, got {top!r}")
        names = [str(n) for n in self.get_feature_names_out()]
        p_b = self.prior_.sum(axis=0)
        p_a = self.prior_.sum(axis=1)
        order = np.argsort(-p_b, kind="stable")[:top]
        rows = []
        finite_cost = np.where(np.isfinite(self.cost_matrix_), self.cost_matrix_, 0.0)
        for b in order:
            row = {n: self.categories_[f][c] for f, (n, c) in enumerate(zip(names, self.input_tuples_[b]))}
            row["frequency"] = float(p_b[b])
            cond = self.prior_[:, b] / p_b[b]
            for a, cls in enumerate(self.classes_):
                row[f"p({cls})"] = float(cond[a])
            lift = cond - p_a
            row["skew"] = str(self.classes_[int(np.argmax(lift))]) if lift.max() > 0.10 else "N"
            j = int(np.argmax(self.mapping_[b]))
            for f, (n, c) in enumerate(zip(names, self.output_tuples_[j])):
                row[f"released {n}"] = "-" if c == -1 else self.categories_[f][c]
            row["p(release)"] = float(self.mapping_[b, j])
            row["expected erasures"] = float(self.mapping_[b] @ finite_cost[b])
            rows.append(row)
        return pd.DataFrame(rows)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.non_deterministic = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags
