"""ErasureMapper: erasure-only privacy mapping of categorical features (Salamatian et al., Sec. VI-A)."""

import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import _persistence
from ..exceptions import LargeProgramWarning, UnseenCategoryWarning
from ..mapping import _presolve, erasure_alphabet, erasure_distortion
from ..utils import check_random_source
from ..utils._validation import (_format_bytes, _physical_memory, check_bool_number_mix, check_label_kinds, check_table,
                                 is_sparse_frame, plain_value, refuse_surprise_data, undisclosed_mask, user_stacklevel)
from . import _dask
from ._base import PriorEstimate, _BaseMapper
from ._columns import _frame_columns, check_column_labels, record_column_labels
from ._common import BUDGET_CONSTRAINT, LEAKAGE_CONSTRAINT, PROTECT_CONSTRAINT, RANDOM_STATE_CONSTRAINT

__all__ = ["ErasureMapper"]

#: cells of a dense table beyond which the message for sparse input does not suggest densifying it
_MAX_DENSE_CELLS = 2**31 - 1

_UNSEEN = -2  # code of a category never seen in fit
#: above this many (input, output) cells the alphabet is stored sparsely (only the reachable pairs): the
#: engine's own limit, above which a (presolved) program is solved over its allowed transitions
DENSE_CELLS_LIMIT = _presolve.DENSE_CELLS_LIMIT
#: input x output cells of the program the engine solves (after its presolve), times the number of such programs
#: (about ten for a leakage cap, whose search solves one budget after another; one otherwise), from which a fit
#: is announced as slow (LargeProgramWarning). Measured on two busy cores: 500 tuples of eight six-valued
#: fields, 500 x 10,821 cells, took about 6 minutes under a 0.01-bit cap, 36 s under a budget and 17 s for
#: perfect privacy; 500 x 7,080 cells took 60 to 120 s under the cap, 500 x 4,339 cells 18 s
SLOW_PROGRAM_CELLS = 30_000_000
#: the number of budget programs a mutual-information cap's search typically solves (8 to 11 on erasure alphabets)
_CAP_SOLVES = 10


def _nullable_integer(dtype):
    """The nullable dtype of a released integer column: ``Int64``, or ``UInt64`` for ``uint64``
    (``Int64`` cannot hold values above 2**63 - 1); a nullable column (``Int8``, ``UInt64`` ...) keeps its dtype
    (``np.dtype`` of it was "Cannot interpret 'Int64Dtype()' as a data type": a frame with an ``Int64`` column could
    be fitted but not released)."""
    if not isinstance(dtype, np.dtype):
        return dtype
    return "UInt64" if dtype == np.uint64 else "Int64"


def _column_release_dtype(dtype):
    """The dtype (as a string pandas reads) of a released column for a fitted frame column of ``dtype``: nullable
    integers and booleans (an erased cell is missing), ``"category"`` for a categorical column (released with the
    fitted categories, never the caller's), the dtype itself otherwise."""
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype):
        return str(_nullable_integer(dtype))
    return str(dtype)


def _dask_text_dtypes(dtypes):
    """The in-memory dtype of each text column dask converted: ``{column: dtype}`` for a dask fit's table.

    With its pyarrow strings on (the default), dask stores every text column (``str``, ``object`` or ``string``)
    as ``string`` (missing: ``pd.NA``), so the frame fit saw no longer tells which it was; such a column is
    recorded as pandas' own dtype for text (``str`` in pandas 3, missing: NaN; ``object`` before), the dtype an
    in-memory fit of the same data records (``column_dtypes_`` said ``string`` on dask and ``str`` in memory).
    """
    try:
        from dask.dataframe.utils import pyarrow_strings_enabled
        converted = bool(pyarrow_strings_enabled())
    except ImportError:  # pragma: no cover - dask without the helper: nothing known to be converted
        converted = False
    default = pd.Series(["x"]).dtype
    if not converted:
        return {}
    return {c: default for c, d in dtypes.items() if isinstance(d, pd.StringDtype) and d != default}


def _dtype_of_categories(cats):
    """The released column's dtype for a mapper fitted without a DataFrame: from the fitted categories."""
    kind = cats.dtype.kind
    if kind == "b":
        return "boolean"
    if kind in "iu":
        return _nullable_integer(cats.dtype)
    return "float64" if kind == "f" else "object"


def _float_exact(Xa):
    """True when float64 holds every value of ``Xa`` exactly (integers up to 2**53 in magnitude).

    Larger integer categories (64-bit hashes, ids) are released in an object array instead:
    through float64 they would come back as a different number.
    """
    if Xa.dtype.kind not in "iu" or Xa.dtype.itemsize < 8 or Xa.size == 0:
        return True
    return -(2**53) <= int(Xa.min()) and int(Xa.max()) <= 2**53


def _is_missing(values):
    """Elementwise missing test for an object/number column."""
    return np.asarray(pd.isna(pd.Series(values, dtype=object)), dtype=bool)


@_persistence.register
class ErasureMapper(_BaseMapper):
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
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        Source of the privacy draws in ``transform``. ``None`` reads the
        operating system's entropy; an integer (tests, experiments) makes every
        ``transform`` call replay the same seeded stream.
    protect : {"joint", "marginal"}, default="joint"
        Used when ``y`` is 2-D (one column per private attribute).
        ``"joint"``: the attribute is the tuple of columns; users who disclosed
        every column enter the prior. ``"marginal"``: each attribute is
        protected separately: the engine runs on the stacked marginal prior
        (:func:`~privrelease.mappers._base.stack_marginal_priors`), whose leakage
        is the average ``(1/m) sum_i I(A_i; C_hat)``; perfect privacy makes
        every marginal independent of the release, a ``max_leakage`` cap bounds
        the average (see ``leakage_per_attribute_`` for each), and the joint may
        leak (``joint_leakage_``). With ``leakage="maximal_leakage"`` the
        stacked measure is at least each marginal's maximal leakage (row
        ``(i, a_i)`` of the stack has the conditional ``p_i(c_hat | a_i)``), so a
        cap then bounds every marginal.

    Attributes
    ----------
    categories_ : list of ndarray
        Categories of each feature seen in ``fit`` (all rows, labeled or not).
    classes_ : ndarray or list of ndarray
        Values of the private attribute (one array per column for a 2-D ``y``).
    input_tuples_ : ndarray of int, shape (n_inputs, n_features)
        Category-code tuples seen among labeled rows (codes index ``categories_``).
    output_tuples_ : ndarray of int, shape (n_outputs, n_features)
        Output alphabet; ``-1`` marks an erased feature.
    prior_ : ndarray of shape (n_classes, n_inputs)
        Empirical joint ``p(a, b)`` over labeled rows (rows: the attribute
        tuples for ``protect="joint"``, the stacked marginal blocks for
        ``protect="marginal"``).
    cost_matrix_ : ndarray or scipy.sparse.csr_array of shape (n_inputs, n_outputs)
        Erasure distortion (``inf`` = forbidden). Above ``DENSE_CELLS_LIMIT``
        (4,194,304) input-output cells, for example one column with thousands
        of categories, it is a ``csr_array`` that stores only the reachable
        pairs (``2^n_features`` per input, explicit zeros included); every
        other transition is forbidden. The engine then solves over those pairs
        (:func:`~privrelease.mapping.solve_mapping` with a sparse distortion),
        in memory proportional to their number. Either way the engine first
        drops the outputs another output dominates (those erasing more than
        needed to leave the same tuples compatible, and a tuple's outputs that
        no other tuple can produce), an exact presolve: many features stay fast.
    mapping_ : ndarray or scipy.sparse.csr_array of shape (n_inputs, n_outputs)
        ``p(b_hat | b)``; sparse with the same stored entries as ``cost_matrix_``
        when that is sparse.
    leakage_ : float
        Leakage in bits under ``prior_``.
    prior_leakage_ : float
        ``I(A; B)`` with no erasure.
    distortion_ : float
        Expected number of erasures under ``prior_``.
    smallest_delta_ : float
        Smallest feasible ``delta``: ``sum_b p(b) min_j cost_matrix_[b, j]``, the
        expected erasures when every row takes its cheapest allowed output (0.0
        when every seen tuple may be released unchanged, as usual).
    map_accuracy_ : float
        MAP attacker's accuracy on the released tuples under ``prior_``.
    mismatch_bound_ : float
        Proposition 1 + Theorem 1 bound (95 %) on the leakage error due to the
        empirical prior, by the engine's :func:`~privrelease.mapping.mismatch_bounds`
        (capped by ``log2 min(|A|, |B|)``).
    n_labeled_ : int
        Number of labeled rows that enter the prior (those of nonzero weight), whatever the scale of
        ``sample_weight``: the ``n`` of Theorem 1 behind ``mismatch_bound_``.
    guarantee_params_ : dict
        The parameters the fitted guarantee was established under: ``leakage``,
        ``delta``, ``max_leakage`` (and ``protect`` for a 2-D ``y``) as fit read
        them. ``transform`` and ``save`` refuse a mapper whose parameters now
        differ from them (``set_params`` after fit): call fit again.
    fit_params_ : dict
        Every constructor parameter as fit read it, ``random_state`` excepted
        (read when releasing). ``save`` refuses a mapper whose parameters now
        differ from them: a file states the parameters its state was fitted with.
    solver_result_ : object
        The engine's result (``status``, ``certificate``).
    leakage_per_attribute_ : ndarray of shape (n_attributes,)
        Leakage of each private attribute (column of ``y``; one entry for a
        1-D ``y``) under its fitted prior, in the measure ``leakage``.
    joint_leakage_ : float
        Leakage of the tuple of attributes under the prior of the users who
        disclosed every column (``leakage_`` itself for a 1-D ``y`` or
        ``protect="joint"``; NaN when nobody disclosed every column).
    attribute_tuples_ : ndarray of int, shape (n_tuples, n_attributes)
        2-D ``y`` only: the attribute tuples seen among users who disclosed
        every column (codes into ``classes_[i]``); the rows of ``joint_prior_``.
    joint_prior_ : ndarray of shape (n_tuples, n_inputs) or None
        2-D ``y`` only: the joint prior of the tuples (``prior_`` itself when
        ``protect="joint"``).
    n_labeled_per_attribute_ : ndarray of int
        2-D ``y`` only: users who disclosed each column.
    column_dtypes_ : list of str
        Defined when ``X`` is a DataFrame: the dtype of each column of a released
        DataFrame, from the frame given to ``fit`` (integers as nullable ``Int64``
        or ``UInt64``, booleans as ``boolean``, a categorical column as
        ``"category"``, released with the fitted categories ``categories_[j]``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.
    feature_labels_in_ : ndarray of object
        Defined when ``X`` is a DataFrame whose column labels are not all strings
        (integer item ids of a pivot, a MultiIndex's tuples). A DataFrame given
        to ``transform`` must carry the same labels in the same order (columns are
        read by position); another one is refused, naming the first mismatch.

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

    For a 2-D ``y`` with ``protect="marginal"``, ``map_accuracy_`` is the
    average over the attributes of the MAP attacker's accuracy on each, and
    ``mismatch_bound_`` the largest per-attribute bound (each block estimated
    from the users who disclosed that column).

    Data formats: ``X`` is a table of categorical fields (a DataFrame comes
    back as a DataFrame with its index and columns). Per-user private labels
    kept by user id (a Series, or a DataFrame with one column per attribute)
    are put in the rows' order with
    :meth:`privrelease.recommender.RatingsFrame.align` (``-1`` where unknown);
    rating data in long form goes to :class:`QuantizedPrivacyMapper` through
    :class:`~privrelease.recommender.RatingsFrame`.

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
        "protect": PROTECT_CONSTRAINT,
    }

    def __init__(self, delta=None, *, max_leakage=None, leakage="mutual_information", random_state=None,
                 protect="joint"):
        self.delta = delta
        self.max_leakage = max_leakage
        self.leakage = leakage
        self.random_state = random_state
        self.protect = protect

    # ------------------------------------------------------------------ helpers
    def _check_X(self, X, reset):
        refuse_surprise_data(X)
        if isinstance(X, pd.Series):
            # one field as a Series reached dtypes.items() ("'StringDtype' object has no attribute 'items'")
            raise TypeError(f"ErasureMapper needs a 2-D table of categorical fields (one column per field), got a "
                            f"pandas Series {X.name!r} of {len(X)} values: pass X.to_frame() for one field")
        if sp.issparse(X) or is_sparse_frame(X):
            # scikit-learn's "Use '.toarray()' to convert to a dense numpy array": a DataFrame has no .toarray()
            how = "X.sparse.to_dense()" if is_sparse_frame(X) else "X.toarray()"
            kind = "a DataFrame of sparse columns" if is_sparse_frame(X) else f"a scipy sparse {type(X).__name__}"
            cells = int(X.shape[0]) * int(X.shape[1])
            need = cells * np.dtype(getattr(X, "dtype", np.float64)).itemsize if sp.issparse(X) else cells * 8
            total = _physical_memory()
            subset = "X[:, columns].toarray()" if sp.issparse(X) else "X[columns].sparse.to_dense()"
            if cells > _MAX_DENSE_CELLS or (total is not None and need > total // 2):
                # X.toarray() was suggested for a matrix whose dense form could not be held (a MemoryError)
                raise TypeError(
                    f"ErasureMapper needs a dense table of categorical fields, got {kind} of shape {X.shape}, "
                    f"whose dense form ({cells:,} cells, {_format_bytes(need)}) would not fit in memory: do not "
                    f"densify it. A sparse matrix of ratings is for QuantizedPrivacyMapper (it takes sparse input); "
                    f"to erase fields, keep the columns that are fields and densify those ({subset})")
            raise TypeError(f"ErasureMapper needs a dense table of categorical fields, got {kind} of shape "
                            f"{X.shape}: densify it first with {how} (every cell is a category, 0 included, and "
                            "an erased field is missing in the release)")
        check_table(X)
        if reset:
            record_column_labels(self, _frame_columns(X))
        else:
            check_column_labels(self, _frame_columns(X))
        if reset:
            # the released frame's dtypes come from the frame fit saw, never from the one being released: a dtype
            # inferred from the values (int64 or uint64 or object, categories of a categorical) revealed erased cells
            if isinstance(X, pd.DataFrame):
                self.column_dtypes_ = [_column_release_dtype(d) for d in X.dtypes]
            elif hasattr(self, "column_dtypes_"):
                del self.column_dtypes_
        for name, dtype in getattr(X, "dtypes", pd.Series(dtype=object)).items():
            # a date column beside a number column failed inside scikit-learn ("DTypePromotionError: The DType
            # <class 'numpy.dtypes.DateTime64DType'> could not be promoted"); alone it was refused here
            if getattr(dtype, "kind", None) in "mM":
                raise TypeError(f"ErasureMapper needs categorical values, got column {name!r} of dtype {dtype} "
                                "(bin dates into categories first, for example as strings)")
        dtypes = list(getattr(X, "dtypes", []))
        if (any(not isinstance(d, np.dtype) for d in dtypes)
                and not all(pd.api.types.is_numeric_dtype(d) or pd.api.types.is_bool_dtype(d) for d in dtypes)):
            # scikit-learn casts a frame holding a nullable column (Int64, boolean) to float64: a column of
            # categories or strings beside it failed there ("Cannot cast str dtype to float64")
            X = X.astype(object)
        elif len(set(dtypes)) > 1 and any(
                isinstance(d, np.dtype) and d.kind in "iu" and d.itemsize == 8 and not _float_exact(X[c].to_numpy())
                for c, d in zip(X.columns, dtypes)):
            # numpy reads a frame of several dtypes as their common type: float64 beside a 64-bit integer column,
            # where ids beyond 2**53 became other numbers (2**63 + 4 and 2**63 + 5 one category): kept as objects
            X = X.astype(object)
        Xa = validate_data(self, X, dtype=None, ensure_all_finite=False, reset=reset)
        Xa = np.asarray(Xa)
        if Xa.dtype.kind in "cmMV":
            raise TypeError(f"ErasureMapper needs categorical values, got dtype {Xa.dtype}")
        if Xa.dtype.kind == "f" and np.isinf(Xa).any():
            bad = Xa[np.isinf(Xa)][0]
            raise ValueError(
                f"X contains {int(np.isinf(Xa).sum())} infinite value(s) (for example {plain_value(bad)!r}); "
                "categories must be finite"
            )
        missing = np.column_stack([_is_missing(Xa[:, j]) for j in range(Xa.shape[1])])
        if missing.any():
            r, c = np.argwhere(missing)[0]
            raise ValueError(
                f"X contains {int(missing.sum())} missing value(s) (for example row {r}, column {c}: "
                f"{plain_value(Xa[r, c])!r}); ErasureMapper needs every category present (NaN/None are refused)"
            )
        for j in range(Xa.shape[1]) if Xa.dtype == object else ():
            check_bool_number_mix(Xa[:, j], f"column {j} of X")
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
        """Sorted categories of a column; a float zero is stored as ``0.0`` (``-0.0`` is the same category)."""
        try:
            out = np.unique(col)
        except TypeError:  # mixed types: order by their repr, keep them as objects
            vals = list(dict.fromkeys(col.tolist()))
            out = np.empty(len(vals), dtype=object)
            out[:] = sorted(vals, key=lambda v: (type(v).__name__, repr(v)))
        if out.dtype.kind == "f":
            return out + 0.0  # -0.0 + 0.0 is 0.0
        if out.dtype == object:
            out[:] = [v + 0.0 if isinstance(v, (float, np.floating)) and v == 0 else v for v in out.tolist()]
        return out

    # ------------------------------------------------------------ fit hooks
    _saved_attributes = _BaseMapper._saved_attributes + ("categories_", "input_tuples_", "output_tuples_",
                                                         "column_dtypes_")
    _optional_attributes = _BaseMapper._optional_attributes + ("column_dtypes_",)

    _validate_X = _check_X

    def _fit_prior(self, Xa, labeled, a_idx, weights):
        """Empirical joint ``p(a, b)`` of the labeled rows and the erasure distortion (Sec. VI-A)."""
        self.categories_ = [self._uniques(Xa[:, j]) for j in range(Xa.shape[1])]
        codes = self._encode(Xa)[labeled]
        self.input_tuples_, b_idx = np.unique(codes, axis=0, return_inverse=True)
        counts = np.zeros((self.classes_.size, self.input_tuples_.shape[0]))
        np.add.at(counts, (a_idx, b_idx.ravel()), weights)
        self.output_tuples_ = erasure_alphabet(self.input_tuples_)
        sparse = self.input_tuples_.shape[0] * self.output_tuples_.shape[0] > DENSE_CELLS_LIMIT
        cost = erasure_distortion(self.input_tuples_, self.output_tuples_, sparse=sparse)
        self._warn_large_program(cost)
        # n of Proposition 1 / Theorem 1 is the number of users behind the prior, not the total of sample_weight
        # (census weights of 2,000 rows counted 381,845,404 users and made the bound 0.038 bits instead of 1);
        # the dask path, whose weights are row counts, sets it from the counts
        return PriorEstimate(counts, cost, int(np.count_nonzero(weights)), inputs=b_idx.ravel())

    def _warn_large_program(self, cost):
        """Say before the solve when the program is large enough to take minutes (LargeProgramWarning).

        The erasure alphabet holds every seen tuple with every subset of its features erased: up to
        ``2^n_features`` outputs per input tuple, so the program grows with the number of distinct tuples and
        exponentially with the features; the engine's exact presolve removes the dominated outputs first, and the
        size that remains (input x output cells) is what the solves' time follows. A leakage cap solves about
        ten budget programs of that size. Nothing is changed: the warning names the sizes and what to do.
        """
        delta, max_leakage = self._check_budget()
        # a mutual-information cap is found by a search over budgets; a maximal-leakage cap is a linear program
        cap = delta is None and max_leakage is not None and max_leakage > 0
        solves = _CAP_SOLVES if cap and self.leakage == "mutual_information" else 1
        n_in, n_out = cost.shape
        if n_in * n_out * solves < SLOW_PROGRAM_CELLS and n_in * n_out <= _presolve.REDUCED_DENSE_CELLS_LIMIT:
            return  # the presolve only removes outputs: the program is smaller still
        reduction = _presolve.reduce_outputs(cost)
        kept = n_out if reduction is None else reduction.n_outputs
        cells = n_in * kept
        if cells * solves < SLOW_PROGRAM_CELLS and cells <= _presolve.REDUCED_DENSE_CELLS_LIMIT:
            return
        F = self.input_tuples_.shape[1]
        how = (f"a leakage cap (max_leakage={plain_value(max_leakage)!r}) solves about {_CAP_SOLVES} programs of "
               "that size one after another" if solves > 1 else "the fit solves a program of that size")
        sparse = (f"; above {_presolve.REDUCED_DENSE_CELLS_LIMIT:,} cells it is solved over its allowed "
                  "transitions, slower still" if cells > _presolve.REDUCED_DENSE_CELLS_LIMIT else "")
        faster = ("a budget (delta=..., one program) or perfect privacy (max_leakage=0, a linear program) instead "
                  "of the cap, or " if solves > 1 else "")
        warnings.warn(
            f"ErasureMapper: the erasure alphabet of the {n_in:,} distinct input tuples ({F} features, up to "
            f"2^{F} = {2 ** F:,} releases of each tuple) has {n_out:,} outputs, {kept:,} after the exact presolve "
            f"removes the dominated ones: {cells:,} input-output cells; {how}{sparse}, which can take minutes "
            f"(500 x 10,821 cells under a 0.01-bit cap took about 6 minutes). To fit faster: {faster}fewer distinct "
            "tuples (fewer features, or fewer categories per feature: merge rare categories into one); the "
            "program grows with the tuples and exponentially with the features",
            LargeProgramWarning, stacklevel=user_stacklevel())

    def _fit_prior_dask(self, X, y):
        """The prior counted per partition.

        Each partition is reduced to the counts of its distinct (row, label)
        pairs; only that table (at most the number of distinct category
        combinations times the number of labels) comes back, and the in-memory
        estimate is computed on it with the counts as weights, which gives the
        same prior as counting every row.
        """
        import dask

        # the in-memory fit's refusals, before any block is read (a Series' blocks raised a raw KeyError, sparse
        # blocks pandas' "Must pass 2-d input")
        meta = getattr(X, "_meta", None)
        if isinstance(meta, pd.Series):
            raise TypeError(f"ErasureMapper needs a 2-D table of categorical fields (one column per field), got a "
                            f"dask Series {meta.name!r}: pass X.to_frame() for one field")
        if sp.issparse(meta):
            raise TypeError(f"ErasureMapper needs a dense table of categorical fields, got a dask array of scipy "
                            f"sparse blocks: densify the blocks first, X.map_blocks(lambda b: b.toarray()) (every "
                            "cell is a category, 0 included, and an erased field is missing in the release)")
        parts, lengths, columns, frame = _dask.block_lengths(X)
        y_parts = _dask.y_blocks(y, _RowBlocks(lengths))
        tables = dask.compute(*[dask.delayed(_erasure_counts)(p, yb, columns) for p, yb in zip(parts, y_parts)])
        for j in range(len(columns)):  # 1 in one block and True in another, before the grouping merges them
            check_bool_number_mix(np.concatenate([np.asarray(t.index.get_level_values(j), dtype=object)
                                                  for t in tables]) if tables else np.empty(0, dtype=object),
                                  f"column {j} of X")
        # the kinds of the labels across the blocks, before pandas' grouping merges 1 and True (each block's own
        # were checked where it was counted)
        labels = [np.asarray(t.index.get_level_values(_LABEL), dtype=object) for t in tables]
        labels = np.concatenate(labels) if labels else np.empty(0, dtype=object)
        check_label_kinds(labels[~undisclosed_mask(labels)].tolist())
        total = pd.concat(tables).groupby(level=list(range(len(columns) + 1)), observed=True, dropna=False,
                                          sort=False).sum()
        table = total.reset_index(name="__count__")
        rows = table[columns] if frame else table[columns].to_numpy()
        if frame:
            rows = rows.astype(_dask_text_dtypes(rows.dtypes))
        estimate = self._fit_in_memory(rows, table[_LABEL].to_numpy(), table["__count__"].to_numpy(float))
        # here the weights are how many rows each distinct (row, label) pair stands for: n is their total
        estimate.n_labeled = max(int(round(float(np.asarray(estimate.counts).sum()))), 1)
        return estimate

    # ---------------------------------------------------------------- transform
    def _inputs(self, codes, source, values=None):
        """Input symbol of each row (-1: no input symbol, every feature erased) and the unseen cells.

        A row holding a category never seen in fit goes through the mapping of a
        seen input tuple that agrees with its seen cells, drawn from the fitted
        prior ``p(b)``; a new combination of seen categories has no input symbol.
        """
        index = {tuple(t): i for i, t in enumerate(self.input_tuples_.tolist())}  # derived, never saved
        idx = np.array([index.get(tuple(r), -1) for r in codes.tolist()], dtype=np.int64)
        unseen = codes == _UNSEEN
        unseen_row = unseen.any(axis=1)
        new_combo = (idx < 0) & ~unseen_row
        if new_combo.any():
            _dask.warn(
                self,
                f"{int(new_combo.sum())} row(s) hold a combination of categories never seen in fit "
                "(for example "
                f"{[self.categories_[f][c] for f, c in enumerate(codes[np.flatnonzero(new_combo)[0]])]!r}); "
                "every feature of these rows is erased",
                UnseenCategoryWarning,
                key="new-combination",
            )
        if unseen_row.any():
            rows = np.flatnonzero(unseen_row)
            first = rows[0]
            feats = np.flatnonzero(codes[first] == _UNSEEN)
            _dask.warn(
                self,
                f"{int(unseen_row.sum())} row(s) hold a category never seen in fit (for example feature "
                f"{int(feats[0])} of row {int(first)}{self._type_hint(values, unseen)}); those cells are erased and "
                "the rest of the row is released through the mapping of a seen row that agrees with it (drawn from "
                "the prior)",
                UnseenCategoryWarning,
                key="unseen-category",
            )
            p_b = self.prior_.sum(axis=0)
            for r in rows:
                known = ~unseen[r]
                agree = np.all(self.input_tuples_[:, known] == codes[r, known], axis=1)
                w = np.where(agree, p_b, 0.0)
                if w.sum() > 0:  # else no seen tuple agrees: erase everything
                    idx[r] = int(source.categorical(w / w.sum())[0])
        return idx, unseen

    def _type_hint(self, values, unseen):
        """The end of the unseen-category warning when a feature's unseen values differ from its fitted categories
        only in type (``'0'`` (str) where fit saw ``0`` (int): a column read as text, every cell erased), naming the
        feature, the first such value and the category; ``""`` otherwise (or without ``values``)."""
        if values is None:
            return ""
        for j in np.flatnonzero(unseen.any(axis=0)):
            cats = self.categories_[j].tolist()
            by_text = {}
            for c in cats:
                by_text.setdefault(str(c), c)
            col = values[unseen[:, j], j].tolist()
            same = [v for v in col if str(v) in by_text]
            if same:
                v, c = same[0], by_text[str(same[0])]
                names = getattr(self, "feature_names_in_", None)
                label = f" ({names[j]!r})" if names is not None else ""
                return (f": {len(same)} of the {len(col)} unseen value(s) of feature {int(j)}{label} differ from a "
                        f"fitted category only in type, for example {plain_value(v)!r} ({type(v).__name__}) where fit saw "
                        f"{plain_value(c)!r} ({type(c).__name__}); convert the column to the type it had in fit")
        return ""

    def transform(self, X):
        """Erase cells according to the fitted mapping.

        The fitted arrays are read-only, and one assigned anew or edited after fit is refused (ValueError naming
        it): ``leakage_`` holds for fit's.

        Parameters
        ----------
        X : DataFrame, array-like or dask collection of shape (n_samples, n_features)

        Returns
        -------
        X_released : DataFrame or ndarray
            A DataFrame keeps its columns and index; its dtypes are those of the
            frame given to ``fit`` (``column_dtypes_``): categorical columns stay
            categorical, with the fitted categories (``categories_[j]``), integer
            columns become pandas nullable ``Int64`` (``UInt64`` for ``uint64``),
            erased cells are missing (NaN / pd.NA). An ndarray comes back as a float
            array (every fitted category a number, NaN = erased) or an object array
            (None = erased; also when a fitted category is an integer beyond 2**53,
            which float64 would change). The format is the fitted state's, never the
            input's: it cannot reveal an erased value. A kept cell is released as the fitted
            category it equals (``categories_[j][code]``), so values that are one category
            (``0.0`` and ``-0.0``, ``1`` and ``1.0``) come back written one way: how a user wrote a
            value does not reveal what the mapping hides. A
            dask collection is released lazily, partition by partition.
        """
        if _dask.is_dask_collection(X):
            return _dask.transform(self, X)
        check_is_fitted(self)
        self._check_release_state()
        Xa = self._check_X(X, reset=False)
        source = check_random_source(self.random_state)
        codes = self._encode(Xa)
        idx, unseen = self._inputs(codes, source, Xa)
        j = self._sample(idx, source)
        erased = np.ones(Xa.shape, dtype=bool)
        erased[j >= 0] = self.output_tuples_[j[j >= 0]] == -1
        erased |= unseen
        # a kept cell is released as its fitted category, never as the user wrote it: values that are one
        # category (0.0 and -0.0, 1 and 1.0, np.int64(1) and 1) but differ in sign bit or type revealed what the
        # mapping hides (the release must be a function of the output tuple only)
        released = self._categories_of(codes, erased)
        # the format (dtypes, a categorical's categories) is the fitted state's too, never the input's: a one-row
        # array of an id beyond 2**53 came back as objects and a small one as floats, a categorical column's
        # categories were those of the caller's column, whatever was erased
        if isinstance(X, pd.DataFrame):
            out = X.copy()
            for col_idx, dtype in enumerate(self._frame_dtypes()):
                # straight from objects to the fitted dtype: ints beyond 2**63 never pass through numpy's uint64
                s = pd.Series(released[:, col_idx], index=X.index, dtype=object).astype(dtype)
                out.isetitem(col_idx, s.mask(erased[:, col_idx]))
            return out
        if self._array_as_float():
            out = released.astype(np.float64)
            out[erased] = np.nan
            return out
        out = released
        out[erased] = None
        return out

    def _frame_dtypes(self):
        """The dtype of each released DataFrame column: the fitted frame's (``column_dtypes_``; a categorical column
        with the fitted categories), else from the fitted categories (a mapper fitted without a DataFrame)."""
        dtypes = getattr(self, "column_dtypes_", None)
        if dtypes is None:
            dtypes = [_dtype_of_categories(c) for c in self.categories_]
        return [pd.CategoricalDtype(cats) if d == "category" else d for d, cats in zip(dtypes, self.categories_)]

    def _array_as_float(self):
        """Whether an array is released as float64 (NaN = erased): every fitted category is a number float64 holds
        exactly; else an object array (None = erased)."""
        return all(c.dtype.kind in "fiub" and _float_exact(c) for c in self.categories_)

    def _categories_of(self, codes, erased):
        """Object array of the fitted category of every cell (the first category where the cell is erased)."""
        out = np.empty(codes.shape, dtype=object)
        for j, cats in enumerate(self.categories_):
            col = np.where(erased[:, j] | (codes[:, j] < 0), 0, codes[:, j])
            out[:, j] = cats.astype(object)[col]
        return out

    def _release_meta(self, meta):
        """Released dtypes: nullable integers and booleans in frames; float (NaN) or object arrays."""
        if isinstance(meta, pd.DataFrame):
            out = meta.copy()
            for col_idx, dtype in enumerate(self._frame_dtypes()):
                out.isetitem(col_idx, out.iloc[:, col_idx].astype(object).astype(dtype))
            return out
        dtype = np.dtype(np.float64) if self._array_as_float() else np.dtype(object)
        return np.empty((0,) + tuple(meta.shape[1:]), dtype=dtype)

    # ---------------------------------------------------------------- persistence
    def _check_structure(self):
        cats = self.categories_
        F = self.n_features_in_
        if not isinstance(cats, list) or len(cats) != F:
            raise ValueError(f"fitted.categories_ must list the categories of each of the {F} features, "
                             f"got {type(cats).__name__} of length {len(cats) if hasattr(cats, '__len__') else '?'}")
        for f, c in enumerate(cats):
            if not isinstance(c, np.ndarray) or c.ndim != 1 or c.size == 0:
                raise ValueError(f"fitted.categories_[{f}] must be a non-empty 1-D array")
            if c.dtype.kind == "f" and not np.all(np.isfinite(c)):
                raise ValueError(f"fitted.categories_[{f}] holds a non-finite category")
            if len(set(c.tolist())) != c.size:
                raise ValueError(f"fitted.categories_[{f}] holds a category twice")
        self._check_column_dtypes()
        sizes = np.array([len(c) for c in cats])
        n_in, n_out = self.mapping_.shape
        for key, rows, low in (("input_tuples_", n_in, 0), ("output_tuples_", n_out, -1)):
            T = getattr(self, key)
            if not isinstance(T, np.ndarray) or T.ndim != 2 or T.shape != (rows, F) or T.dtype.kind not in "iu":
                raise ValueError(f"fitted.{key} must be an integer array of shape {(rows, F)} "
                                 f"(one row per {key.split('_')[0]} symbol), got shape {getattr(T, 'shape', None)}")
            if np.any(T < low) or np.any(T >= sizes[None, :]):
                r, f = np.argwhere((T < low) | (T >= sizes[None, :]))[0]
                raise ValueError(f"fitted.{key}[{r}, {f}] = {T[r, f]} is not a category code of feature {f} "
                                 f"(expected {low} <= code < {sizes[f]})")
        if np.unique(self.input_tuples_, axis=0).shape[0] != n_in:
            raise ValueError("fitted.input_tuples_ holds an input tuple twice")
        expected = erasure_alphabet(self.input_tuples_)
        if expected.shape != self.output_tuples_.shape or not np.array_equal(expected, self.output_tuples_):
            raise ValueError("fitted.output_tuples_ is not the erasure alphabet of input_tuples_ "
                             "(every input with any subset of its features erased)")
        C = self.cost_matrix_
        cost = erasure_distortion(self.input_tuples_, self.output_tuples_, sparse=sp.issparse(C))
        same = ((np.array_equal(cost.indptr, C.indptr) and np.array_equal(cost.indices, C.indices)
                 and np.array_equal(cost.data, C.data)) if sp.issparse(C) else np.array_equal(cost, C))
        if not same:
            raise ValueError("fitted.cost_matrix_ is not the erasure distortion of the stored alphabets "
                             "(number of erasures, inf where a value would change)")

    def _check_column_dtypes(self):
        """``column_dtypes_`` (when present): one dtype per feature that holds its fitted categories unchanged."""
        dtypes = getattr(self, "column_dtypes_", None)
        if dtypes is None:
            return
        F = self.n_features_in_
        if not isinstance(dtypes, list) or len(dtypes) != F or not all(isinstance(d, str) for d in dtypes):
            raise ValueError(f"fitted.column_dtypes_ must list the released dtype of each of the {F} features as a "
                             f"string, got {dtypes!r:.80}")
        for f, (d, cats) in enumerate(zip(dtypes, self.categories_)):
            if d == "category":
                continue
            try:
                back = pd.Series(cats, dtype=object).astype(pd.api.types.pandas_dtype(d)).astype(object).tolist()
            except (TypeError, ValueError, OverflowError, ArithmeticError):
                back = None
            if back is None or back != cats.tolist():
                raise ValueError(f"fitted.column_dtypes_[{f}] = {d!r:.40} does not hold the categories of feature "
                                 f"{f} unchanged ({cats.tolist()!r:.60}); expected the dtype of the column fit saw")

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
            the input; for a 2-D ``y``, each attribute tuple ``(v1, v2)`` when
            ``protect="joint"``, each ``column=value`` when ``protect="marginal"``), ``skew`` (the majority class if its share exceeds its
            overall share by more than 10 points, else ``"N"`` for neutral as in
            Fig. 5), the most probable output's features (``-`` = erased, under
            ``released <feature>``), its probability and the expected erasures.
        """
        check_is_fitted(self)
        if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
            raise ValueError(f"top must be a positive integer, got {top!r}")
        labels = getattr(self, "feature_labels_in_", None)  # a frame's non-string labels: theirs, not x0, x1, ...
        names = [str(n) for n in (self.get_feature_names_out() if labels is None else labels.tolist())]
        p_b = self.prior_.sum(axis=0)
        labels = self._prior_row_labels()
        scale = len(self.classes_) if self._attribute_kind() == "marginal" else 1  # each block sums to 1/m
        p_a = scale * self.prior_.sum(axis=1)
        order = np.argsort(-p_b, kind="stable")[:top]
        rows = []
        for b in order:
            row = {n: self.categories_[f][c] for f, (n, c) in enumerate(zip(names, self.input_tuples_[b]))}
            row["frequency"] = float(p_b[b])
            cond = scale * self.prior_[:, b] / p_b[b]
            for a, cls in enumerate(labels):
                row[f"p({cls})"] = float(cond[a])
            lift = cond - p_a
            row["skew"] = str(labels[int(np.argmax(lift))]) if lift.max() > 0.10 else "N"
            outs, probs, costs = self._mapping_row(b)
            i = int(np.argmax(probs))
            j = int(outs[i])
            for f, (n, c) in enumerate(zip(names, self.output_tuples_[j])):
                row[f"released {n}"] = "-" if c == -1 else self.categories_[f][c]
            row["p(release)"] = float(probs[i])
            row["expected erasures"] = float(probs @ costs)
            rows.append(row)
        return pd.DataFrame(rows)

    def _mapping_row(self, b):
        """Allowed outputs of input ``b`` with their probabilities and erasure counts."""
        M, C = self.mapping_, self.cost_matrix_
        if sp.issparse(M):
            seg = slice(M.indptr[b], M.indptr[b + 1])
            return M.indices[seg], M.data[seg], C.data[seg]
        allowed = np.flatnonzero(np.isfinite(C[b]))
        return allowed, M[b, allowed], C[b, allowed]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.non_deterministic = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags


_LABEL = "__privrelease_label__"


class _RowBlocks:
    """Shape and row chunks of a collection, for :func:`_dask.y_blocks`."""

    def __init__(self, lengths):
        self.shape = (sum(lengths),)
        self.chunks = (tuple(lengths),)


def _erasure_counts(part, yb, columns):
    """One partition's counts of each distinct (row, label) pair."""
    if hasattr(part, "columns"):
        df = part.reset_index(drop=True)
    else:
        df = pd.DataFrame(np.asarray(part), columns=columns)
    labels = np.asarray(yb, dtype=object)
    check_label_kinds(labels[~undisclosed_mask(labels)].tolist())  # before the grouping merges 1 and True
    for j, col in enumerate(columns):
        check_bool_number_mix(df[col].to_numpy(), f"column {j} of X")
    df[_LABEL] = np.asarray(yb)
    return df.groupby(list(df.columns), observed=True, dropna=False, sort=False).size()
