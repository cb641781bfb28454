"""The template shared by the mappers: validate, estimate the prior, solve, build the release.

:class:`_BaseMapper` follows imbalanced-learn's ``base.py``: the public
``fit`` validates once for every mapper and then calls three hooks,

``_fit_prior(X, labeled, a_idx, weights)`` / ``_fit_prior_dask(X, y)``
    The joint counts ``n(a, b)`` of the private attribute and the mapper's
    input symbols, the distortion matrix, in memory or reduced from dask blocks
    (:class:`PriorEstimate`).
``_solve(prior, cost)``
    The engine (Salamatian et al., Algorithm 1 / problem (6)); perfect privacy
    included. Shared, not overridden.
``_build_release(estimate)``
    What each output symbol releases.

and ``transform`` samples ``c_hat ~ mapping_[c]`` through one shared path
(:meth:`_BaseMapper._sample`). Every reported figure (leakage, distortion,
attacker accuracy, Theorem 1 bound) is computed by the engine's functions in
:mod:`privrelease.mapping`, so the figures a file claims can be recomputed by
the same functions when it is loaded (:meth:`_BaseMapper._check_fitted_state`).

References
----------
S. Salamatian et al., "Managing your Private and Public Data: Bringing down
Inference Attacks against your Privacy", Algorithms 1 and 2, Theorem 1,
Proposition 1.
"""

import copy
import math
import numbers
import warnings
import zlib
from dataclasses import dataclass, field
from decimal import Decimal
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from .. import _persistence
from ..exceptions import ComplexDataError, ConvergenceWarning, InfeasibleBudgetError, PrivacyLeakWarning
from ..mapping import (
    MappingResult,
    expected_distortion,
    leakage as engine_leakage,
    map_attack_accuracy,
    mismatch_bounds,
    mutual_information,
    privacy_distortion_curve,
    solve_mapping,
)
from ..mapping._checks import check_distortion
from ..mapping._problem import row_offset
from ..mapping._solver import budget_slack
from ..utils import check_private_labels
from ..utils._fit import check_params_unchanged
from ..utils._validation import (_as_label_array, check_label_input, check_number, check_same_index,
                                 fit_transform_said_once, plain_value, refuse_masked, undisclosed_note, user_stacklevel)
from . import _dask
from ._columns import _plain_label, keep_column_labels

__all__ = ["PriorEstimate", "theorem1_bound", "check_sample_weight", "stack_marginal_priors"]

#: tolerance on a recomputed claim (the same engine functions on the same arrays agree exactly;
#: this only absorbs the order of floating-point sums)
_CLAIM_TOL = 1e-9
#: a saved certificate's distortion gap against its distortion minus its lower bound (relative to them)
_GAP_CLAIM_RTOL = 1e-12
#: tolerance on a privacy budget (the solver certifies to 1e-6 bits)
_BUDGET_TOL = 1e-6
#: confidence of the Proposition 1 + Theorem 1 bound reported as ``mismatch_bound_``
_CONFIDENCE = 0.95


@dataclass
class PriorEstimate:
    """What ``_fit_prior`` hands to the shared solve and to ``_build_release``.

    Attributes
    ----------
    counts : ndarray of shape (n_classes, n_inputs)
        Weighted joint counts ``n(a, b)`` of the labeled users.
    cost : ndarray of shape (n_inputs, n_outputs)
        Distortion ``d(b, b_hat)`` (``inf`` = forbidden).
    n_labeled : int
        Number of labeled users (the ``n`` of Proposition 1).
    extra : dict
        Whatever the mapper's ``_build_release`` needs.
    inputs : ndarray of int, shape (n_labeled,), optional
        Input symbol ``b`` of each labeled row, in the order of the rows
        ``_fit_prior`` received (needed for a 2-D ``y``: the base recounts
        the joint and marginal priors from it).
    attributes : dict or None
        Set by the base for a 2-D ``y`` (several private attributes).
    """

    counts: np.ndarray
    cost: np.ndarray
    n_labeled: int
    extra: dict = field(default_factory=dict)
    inputs: np.ndarray = None
    attributes: dict = None


def theorem1_bound(n_samples, n_private, n_public, d_max, confidence=_CONFIDENCE, shift=0.0):
    """Bound (bits) on the leakage error due to an empirical prior, with probability ``confidence``.

    Proposition 1 gives ``P(||q - p||_1 >= eps) <= (n + 1)^{|A||B|} 2^{-2 n eps^2}``;
    the ``eps`` at which that bound equals ``1 - confidence`` is
    ``sqrt((|A||B| log2(n + 1) + log2(1 / (1 - confidence))) / (2 n))``, and the
    engine's :func:`~privrelease.mapping.mismatch_bounds` turns it into Theorem 1's
    bound (capped by ``log2 min(|A|, |B|)``, which is also what it returns when
    Lemma 1 does not apply). ``shift``: the L1 distance between the prior the
    mapping was certified under and the raw counts ``q`` (a smoothed or
    model-based estimate), added to ``eps`` by the triangle inequality.
    """
    n = int(n_samples)
    if n < 1:
        return float(math.log2(min(n_private, n_public)))
    eps = math.sqrt((n_private * n_public * math.log2(n + 1.0) + math.log2(1.0 / (1.0 - confidence))) / (2.0 * n))
    return float(mismatch_bounds(min(eps + float(shift), 2.0), n_private, n_public, d_max)["leakage_bits"])


def check_sample_weight(sample_weight, n_samples):
    """Non-negative, finite weights of shape (n_samples,) (None: every row weighs 1).

    Weights are real numbers, checked as ``X`` and ``y`` are before numpy converts them: a masked array with
    masked entries (the mask was ignored), complex numbers (:class:`~privrelease.exceptions.ComplexDataError`;
    the imaginary part was dropped), dates and durations (read as nanoseconds), texts and other objects that
    are not numbers (``"1"`` was parsed as 1.0) are refused, naming a value.
    """
    if sample_weight is None:
        return np.ones(n_samples)
    refuse_masked(sample_weight, "sample_weight", "used as weights",
                  "fill it first (sample_weight.filled(0) gives the masked rows no weight)")
    try:
        raw = np.asarray(sample_weight)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sample_weight must hold numbers, got {type(sample_weight).__name__} ({exc})") from None
    flat = raw.ravel()
    kind = raw.dtype.kind
    if kind == "c" or (kind == "O" and any(isinstance(v, (complex, np.complexfloating)) for v in flat.tolist())):
        at = next(i for i, v in enumerate(flat.tolist()) if isinstance(v, (complex, np.complexfloating)))
        raise ComplexDataError(f"Complex data not supported: sample_weight must hold real numbers, got "
                               f"{plain_value(flat[at])!r} at row {at} (dtype {raw.dtype})")
    bad = None
    if kind in "mMUSV":  # dates and durations were read as nanoseconds, "1" as 1.0
        if not flat.size:
            raise TypeError(f"sample_weight must hold numbers, got dtype {raw.dtype}")
        bad = 0
    elif kind == "O":
        bad = next((i for i, v in enumerate(flat.tolist())
                    if isinstance(v, (complex, str, bytes)) or not isinstance(v, (numbers.Real, np.number, Decimal))),
                   None)
    if bad is not None:
        shown = str(flat[bad]) if kind in "mM" else plain_value(flat[bad])
        raise TypeError(f"sample_weight must hold numbers, got {raw.dtype} values (for example {shown!r} of type "
                        f"{type(flat[bad]).__name__} at row {bad}); expected real numbers: convert the weights first")
    try:
        w = raw.astype(np.float64)
    except (TypeError, ValueError, ArithmeticError):
        raise TypeError(f"sample_weight must hold numbers, got {raw.dtype}") from None
    if w.ndim == 0:
        w = np.full(n_samples, float(w))
    if w.shape != (n_samples,):
        raise ValueError(f"sample_weight has shape {w.shape}, expected ({n_samples},) like X")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"sample_weight must be finite and non-negative, got {float(w[i])!r} at row {i} "
                         f"({int(bad.sum())} such weight(s))")
    tiny = (w > 0) & (w < np.finfo(np.float64).tiny)
    if tiny.any():  # weighted means of such weights are 0 / 0 (was "distortion must not contain NaN")
        i = int(np.flatnonzero(tiny)[0])
        raise ValueError(f"sample_weight holds a subnormal weight {float(w[i])!r} at row {i}; expected 0 or a "
                         "weight >= 2.2e-308 (rescale the weights)")
    with np.errstate(over="ignore"):
        total = w.sum()
    if not np.isfinite(total):  # was numpy's "probabilities do not sum to 1" or an OverflowError
        raise ValueError(f"sample_weight sums to {float(total)!r}: the total of {w.size} weights (largest "
                         f"{float(w.max())!r}) overflows float64; rescale the weights")
    return w


def _zero_weight_classes(disclosed, kept, weighted):
    """The end of the single-class error when ``sample_weight`` is what left one class: the other classes the
    users disclosed, every one of whose users has weight 0 ("" when there are none, or no weights were given)."""
    if not weighted:
        return ""
    others = [v for v in np.unique(disclosed) if v not in set(kept.tolist())]
    if not others:
        return ""
    shown = ", ".join(repr(plain_value(v)) for v in others[:5]) + (", ..." if len(others) > 5 else "")
    return (f"; the users disclosed {len(others) + len(kept)} classes, but sample_weight is zero on every user of "
            f"the other class{'es' if len(others) > 1 else ''} ({shown}): give them a positive weight")


def _is_fitted_attr(name):
    return name.endswith("_") and not name.startswith("_")


def _leaves(value, depth=0):
    """The numpy arrays ``value`` holds: itself, a sparse array's three, those of a list, tuple or dict, and those of
    a privrelease object's attributes (``solver_result_``, ``embedding_``)."""
    if isinstance(value, np.ndarray):
        return [value]
    if sp.issparse(value):
        return [value.data, value.indices, value.indptr] if hasattr(value, "indptr") else []
    if depth > 2:
        return []
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, dict):
        items = list(value.values())
    elif type(value).__module__.startswith("privrelease.") and hasattr(value, "__dict__"):
        items = list(vars(value).values())
    else:
        return []
    return [leaf for v in items for leaf in _leaves(v, depth + 1)]


def _fitted_leaves(est):
    """``(attribute name, array)`` for every numpy array the fitted attributes hold."""
    return [(name, leaf) for name, value in vars(est).items() if _is_fitted_attr(name) for leaf in _leaves(value)]


def _fitted_digest(est, leaves=None):
    """Per fitted attribute that holds arrays: a CRC-32 of their dtypes, shapes and values (what an edit changes;
    a cryptographic digest took 4 times as long, a few per cent of a transform of 10,000 users)."""
    out = {}
    for name, leaf in _fitted_leaves(est) if leaves is None else leaves:
        crc = zlib.crc32(f"{leaf.dtype.str}{leaf.shape}".encode(), out.get(name, 0))
        if leaf.dtype.kind == "O":
            crc = zlib.crc32(repr(leaf.tolist()).encode(), crc)
        else:
            crc = zlib.crc32(np.ascontiguousarray(leaf).reshape(-1).view(np.uint8), crc)
        out[name] = crc
    return out


class _BaseMapper(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Template of the privacy mappers (see the module notes)."""

    #: fitted attributes written by ``save`` (subclasses extend it)
    _saved_attributes = (
        "n_features_in_", "feature_names_in_", "classes_", "prior_", "cost_matrix_", "mapping_",
        "leakage_", "prior_leakage_", "distortion_", "map_accuracy_", "smallest_delta_",
        "mismatch_bound_", "n_labeled_", "solver_result_", "leakage_per_attribute_", "joint_leakage_",
        "attribute_tuples_", "joint_prior_", "n_labeled_per_attribute_", "feature_labels_in_",
    )
    #: of those, the ones a fitted mapper may lack (the names and labels of a frame's columns; ``attribute_tuples_``,
    #: ``joint_prior_`` and ``n_labeled_per_attribute_`` exist for a 2-D ``y`` only)
    _optional_attributes = ("feature_names_in_", "attribute_tuples_", "joint_prior_", "n_labeled_per_attribute_",
                            "feature_labels_in_")

    #: parameters added after files were written, with the value that reproduces what such a file's fit did (read
    #: silently for a file without them; any other missing parameter is warned)
    _legacy_params = {}

    #: of those, the arrays fit always computes in float64 (a file holding them in another float dtype is refused)
    _float64_attributes = ("prior_", "cost_matrix_", "mapping_", "joint_prior_")

    def __init_subclass__(cls, **kwargs):
        # scikit-learn's set_output wrapping first, then the fitted column labels put back over its renaming
        # (a frame of integer item ids came back with columns x0, x1, ... under set_output(transform="pandas"))
        super().__init_subclass__(**kwargs)
        if "transform" in cls.__dict__:
            cls.transform = keep_column_labels(cls.__dict__["transform"])

    # ---------------------------------------------------------------- hooks
    def _validate_X(self, X, reset):  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit_prior(self, X, labeled, a_idx, weights):  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit_prior_dask(self, X, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def _build_release(self, estimate):
        """What each output symbol releases (default: nothing to build)."""

    def _prior_from_counts(self, counts):
        """The prior the mapping is designed for (default: the empirical joint)."""
        return counts / counts.sum()

    def _n_inputs(self):
        return self.prior_.shape[1]

    # ---------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Estimate the prior from the labeled users and solve for the mapping.

        The fit is atomic: it runs on a copy, and the fitted state is replaced
        only when everything succeeded (a failed refit leaves the previous fit intact).

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or dask collection of shape (n_samples, n_features)
            See the class documentation for what each mapper accepts.
        y : array-like of shape (n_samples,) or (n_samples, n_attributes)
            Private attribute. ``-1``, ``"-1"``, None, NaN, ``pd.NA`` and ``""``
            mean "not disclosed" (:func:`privrelease.utils.undisclosed_mask`);
            only the other rows enter the prior. Labels of mixed kinds (``1``
            beside ``True``) are refused. A 2-D ``y`` (array or DataFrame)
            holds one private attribute per column, each cell disclosed or not
            on its own; ``protect`` says how they are protected.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each row in the prior (and, for the quantized
            mapper, the clustering and the costs). Not supported on dask collections.

        Returns
        -------
        self
        """
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None (y is the private "
                "attribute, -1 for users who did not disclose it)"
            )
        self._check_budget()
        check_same_index(X, y)
        check_same_index(X, sample_weight, "sample_weight")
        if _dask.is_dask_collection(X) or _dask.is_dask_collection(y):
            # a dask frame's index is lazy, so the check above passed it: dd.from_pandas sorts the rows by their
            # index, and a y in the frame's original order was paired by position (a prior of 0.13 bits read 0.001)
            _dask.check_same_index(X, y)
            _dask.check_same_index(X, sample_weight, "sample_weight")
        work = copy.copy(self)  # shallow: shares random_state (a Generator advances as it would)
        for name in [k for k in vars(work) if _is_fitted_attr(k)]:
            delattr(work, name)
        if _dask.is_dask_collection(X):
            if np.ndim(y) == 2 and np.shape(y)[1] > 1:
                raise ValueError(
                    f"a 2-D y (shape {np.shape(y)}: several private attributes) is not supported when X is a "
                    "dask collection; fit in memory, or give one attribute (or the tuple as one label)"
                )
            if sample_weight is not None:
                raise ValueError(
                    f"sample_weight is not supported when X is a dask collection, got "
                    f"{type(sample_weight).__name__}; fit in memory to weight users"
                )
            estimate = work._fit_prior_dask(X, y)
        else:
            estimate = work._fit_in_memory(X, y, sample_weight)
        work._solve_and_report(estimate)
        work._build_release(estimate)
        # success: replace the fitted state at once
        for name in [k for k in vars(self) if _is_fitted_attr(k)]:
            delattr(self, name)
        self.__dict__.update({k: v for k, v in vars(work).items() if _is_fitted_attr(k)})
        self._guard_fitted_state()
        return self

    def _fit_in_memory(self, X, y, sample_weight):
        """Validate ``X``, ``y`` and the weights, then call ``_fit_prior`` on the labeled rows.

        During the hook, ``self.classes_`` holds the rows of the counts
        ``_fit_prior`` returns (``a_idx`` indexes it): the classes for a 1-D
        ``y``; for a 2-D ``y`` the attribute tuples (``protect="joint"``) or a
        single row (``protect="marginal"``: the input marginal of every user who
        disclosed any attribute), and the base then recounts the priors from
        ``PriorEstimate.inputs`` (:meth:`_multi_attribute_counts`).
        """
        Xv = self._validate_X(X, reset=True)
        n = Xv.shape[0]
        columns = _label_columns(y, n)
        w = check_sample_weight(sample_weight, n)
        if columns is None:
            y, labeled = check_private_labels(y, n)
        else:
            masks = []
            names = _label_names(y, len(columns))
            for j, col in enumerate(columns):
                columns[j], lab_j = check_private_labels(col, n, name=names[j])
                masks.append(lab_j)
            masks = np.column_stack(masks)
            labeled = masks.all(axis=1) if self.protect == "joint" else masks.any(axis=1)
        if sample_weight is not None and labeled.any() and w[labeled].sum() <= 0:
            raise ValueError(
                "sample_weight gives the labeled rows a total weight of 0 (every weight zero); expected a positive total"
            )
        disclosed = labeled.copy()  # before the rows of weight 0 are dropped: to name them in the errors below
        labeled &= w > 0
        if not labeled.any():
            if columns is not None and self.protect == "joint":
                # "all 120 entries of y are missing" was false when one column was disclosed by everybody
                empty = [j for j in range(masks.shape[1]) if not masks[:, j].any()]
                which = (f"{names[empty[0]]} is undisclosed for every user" if empty
                         else "every user left at least one column undisclosed")
                raise ValueError(f"no labeled users: no user disclosed every column of y ({which}); "
                                 "protect='joint' needs them, protect='marginal' uses every user who disclosed "
                                 "any column")
            raise ValueError(f"no labeled users: all {n} entries of y are missing (-1 or NaN); the prior is "
                             "estimated from users who disclosed the private attribute")
        if columns is not None:
            return self._fit_multi(Xv, columns, masks & (w > 0)[:, None], labeled, w,
                                   disclosed=masks if sample_weight is not None else None, names=names)
        self.classes_, a_idx = np.unique(y[labeled], return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"y has a single class among labeled users ({plain_value(self.classes_[0])!r}); one class is not "
                "enough: a private attribute needs at least two values to be protected"
                + _zero_weight_classes(y[disclosed], self.classes_, sample_weight is not None)
                + undisclosed_note(y, disclosed)
            )
        return self._fit_prior(Xv, labeled, a_idx.ravel(), w[labeled])

    def _fit_multi(self, Xv, columns, masks, labeled, w, disclosed=None, names=None):
        """Several private attributes (2-D ``y``): codes per column, the hook, then the recounted priors.

        ``disclosed``: the disclosure masks before the rows of weight 0 were dropped (``sample_weight`` given),
        to name those weights when they leave an attribute a single class."""
        m = len(columns)
        names = names or [f"y[:, {j}]" for j in range(m)]
        full = masks.all(axis=1)
        classes, codes = [], np.full(masks.shape, -1, dtype=np.int64)
        for j, col in enumerate(columns):
            rows = full if self.protect == "joint" else masks[:, j]
            if not rows.any():
                raise ValueError(f"{names[j]} is undisclosed for every user; each attribute needs labeled users")
            cls, idx = np.unique(col[rows], return_inverse=True)
            if cls.size < 2:
                raise ValueError(
                    f"{names[j]} has a single class among labeled users ({plain_value(cls[0])!r}); one class is not "
                    "enough: a private attribute needs at least two values to be protected"
                    + ("" if disclosed is None else _zero_weight_classes(
                        col[disclosed.all(axis=1) if self.protect == "joint" else disclosed[:, j]], cls, True))
                    + undisclosed_note(col, masks[:, j])
                )
            classes.append(cls)
            codes[rows, j] = idx.ravel()
        lab_codes = codes[labeled]
        full_lab = full[labeled]
        if full_lab.any():
            tuples, t_idx = np.unique(lab_codes[full_lab], axis=0, return_inverse=True)
        else:
            tuples, t_idx = np.zeros((0, m), dtype=np.int64), np.zeros(0, dtype=np.int64)
        if self.protect == "joint":
            self.classes_ = np.arange(tuples.shape[0])
            a_idx = t_idx.ravel()
        else:
            self.classes_ = np.zeros(1, dtype=np.int64)
            a_idx = np.zeros(int(labeled.sum()), dtype=np.int64)
        estimate = self._fit_prior(Xv, labeled, a_idx, w[labeled])
        if estimate.inputs is None:  # pragma: no cover - every mapper sets it
            raise NotImplementedError(f"{type(self).__name__}._fit_prior does not report the input of each row")
        self.classes_ = classes
        self.attribute_tuples_ = tuples.astype(np.int64)
        self.n_labeled_per_attribute_ = masks[labeled].sum(axis=0).astype(np.int64)
        inputs = np.asarray(estimate.inputs, dtype=np.int64)
        wl = w[labeled]
        n_in = estimate.counts.shape[1]
        joint = np.zeros((tuples.shape[0], n_in))
        np.add.at(joint, (t_idx.ravel(), inputs[full_lab]), wl[full_lab])
        blocks = []
        for j in range(m):
            rows = lab_codes[:, j] >= 0
            b = np.zeros((classes[j].size, n_in))
            np.add.at(b, (lab_codes[rows, j], inputs[rows]), wl[rows])
            blocks.append(b)
        estimate.attributes = {"joint": joint, "common": np.asarray(estimate.counts, dtype=np.float64).sum(axis=0),
                               "blocks": blocks}
        return estimate

    def _check_budget(self):
        """``(delta, max_leakage)`` as the solver reads them (floats or None), checked before any work.

        Giving both is refused, and so is a budget beyond float64 (``delta=10**400``: scikit-learn's
        interval check took it, and the solver's ``float(delta)`` failed with an OverflowError naming
        nothing, once the prior had been estimated).
        """
        delta, max_leakage = self.delta, self.max_leakage
        if delta is not None and max_leakage is not None:
            raise ValueError(
                f"give either delta (got {plain_value(delta)!r}) or max_leakage (got {plain_value(max_leakage)!r}), "
                "not both: delta minimises leakage under a distortion budget, max_leakage minimises "
                "distortion under a leakage cap"
            )
        return tuple(None if v is None else check_number(v, name, low=0)
                     for name, v in (("delta", delta), ("max_leakage", max_leakage)))

    def _solve(self, prior, cost):
        """The engine's optimal mapping (Salamatian et al., Algorithm 1 / eq. 6).

        ``delta`` minimises the leakage under a distortion budget, ``max_leakage``
        the distortion under a leakage cap; both None ask for perfect privacy
        (``I(A; C_hat) = 0`` iff ``p(a, c_hat) = p(a) p(c_hat)``, a linear
        program): the engine's privacy-distortion curve at an unlimited budget
        returns exactly that LP's least-distortion solution. Giving both is refused.
        """
        delta, max_leakage = self._check_budget()
        return self._engine_solve(prior, cost, delta, max_leakage)

    def _engine_solve(self, prior, cost, delta, max_leakage, warm_start=None):
        """One engine solve at the budget ``delta`` or the cap ``max_leakage`` (both None: perfect privacy)."""
        solver = getattr(self, "solver", "auto")
        if min(prior.shape) < 2:
            return _degenerate_result(prior, cost, delta, max_leakage, self.leakage)
        if delta is not None:
            return solve_mapping(prior, cost, float(delta), leakage=self.leakage, solver=solver)
        if max_leakage is None or max_leakage == 0:
            _, results = privacy_distortion_curve(prior, cost, [np.inf], leakage=self.leakage, solver=solver,
                                                  return_mappings=True)
            return results[0]
        return solve_mapping(prior, cost, max_leakage=float(max_leakage), leakage=self.leakage, solver=solver,
                             warm_start=warm_start)

    def _solve_and_report(self, estimate):
        """Prior, the engine's mapping and every reported figure (through the engine's functions)."""
        multi = estimate.attributes
        if multi is None:
            self.prior_ = self._prior_from_counts(np.asarray(estimate.counts, dtype=np.float64))
        elif self.protect == "joint":
            self.prior_ = self._prior_from_counts(np.asarray(multi["joint"], dtype=np.float64))
            self.joint_prior_ = self.prior_
        else:
            joint = np.asarray(multi["joint"], dtype=np.float64)
            self.joint_prior_ = self._prior_from_counts(joint) if joint.sum() > 0 else None
            if self.joint_prior_ is None:
                warnings.warn("no user disclosed every column of y: joint_leakage_ is NaN (the joint prior "
                              "cannot be estimated)", UserWarning, stacklevel=user_stacklevel())
            self.prior_ = self._marginal_prior(multi["common"], multi["blocks"])
        cost = estimate.cost
        # a sparse cost stores only the allowed transitions (see solve_mapping); kept canonical
        self.cost_matrix_ = (check_distortion(cost, cost.shape[0]) if sp.issparse(cost)
                             else np.asarray(cost, dtype=np.float64))
        self.n_labeled_ = int(estimate.n_labeled)
        result = self._solve(self.prior_, self.cost_matrix_)
        self.mapping_ = _row_stochastic(result.mapping, self.cost_matrix_)
        self.solver_result_ = result
        self._set_figures()
        self._record_guarantee()

    #: constructor parameters read when releasing only (the seed of the draws): ``set_params`` may change them
    #: after fit, and a file may state another value than the fit's (``random_state=None`` before saving)
    _release_params = ("random_state",)

    def _record_guarantee(self):
        """``guarantee_params_``: the current values of the parameters the fitted guarantee holds under;
        ``fit_params_``: those of every constructor parameter the fitted state was computed with."""
        self.guarantee_params_ = {name: getattr(self, name) for name in self._guarantee_names()}
        self.fit_params_ = {name: value for name, value in self.get_params(deep=False).items()
                            if name not in self._release_params}

    def _guarantee_names(self):
        """The constructor parameters the fitted guarantee was established under (``guarantee_params_``).

        ``leakage`` is the measure ``leakage_`` is stated in, ``delta`` / ``max_leakage`` the budget the
        mapping was solved for, and ``protect`` (2-D ``y`` only) whether the joint tuple or each attribute
        is what the mapping protects.
        """
        names = ["leakage", "delta", "max_leakage"]
        if isinstance(self.classes_, list):
            names.append("protect")
        return names

    def _check_guarantee_unchanged(self):
        """Refuse to release when ``set_params`` changed a parameter of the guarantee after fit.

        The mapping, ``leakage_`` and the budget check were computed under the fitted values: releasing
        under other ones would present a guarantee the mapping was never solved for (a cap lowered to 0.05
        after a fit at 0.2 would go on releasing at 0.2 bits, ``leakage_`` stated in the fitted measure).
        """
        self._check_params_unchanged("guarantee_params_", "its mapping and leakage_ hold for the fitted value only")

    def _check_release_state(self):
        """What a release checks first: the fitted arrays are fit's (:meth:`_check_fitted_arrays`), and the
        parameters of the guarantee unchanged (:meth:`_check_guarantee_unchanged`)."""
        self._check_fitted_arrays()
        self._check_guarantee_unchanged()

    def _guard_fitted_state(self):
        """Make every fitted array read-only and record a digest of them (:meth:`_check_fitted_arrays`).

        ``transform`` samples ``mapping_`` and releases through the other fitted arrays, while ``leakage_`` and
        the other figures were computed at fit: an array edited in place (``m.mapping_[:] = identity``) or
        assigned anew released through a mapping that leaks more than ``leakage_`` says.
        """
        for _, leaf in _fitted_leaves(self):
            leaf.setflags(write=False)
        self._fitted_digest = _fitted_digest(self)

    def _check_fitted_arrays(self):
        """Refuse (ValueError naming the attribute) when a fitted array is not the one fit computed: assigned
        anew, or made writeable and edited (its digest differs from the one taken at fit or load)."""
        record = self.__dict__.get("_fitted_digest")
        if record is None:
            # a mapper unpickled from a version that kept no digest: checked as load checks a file, then guarded
            self._check_unrecorded_state("figures")
            self._guard_fitted_state()
            return
        leaves = _fitted_leaves(self)
        writeable = next((name for name, leaf in leaves if leaf.flags.writeable), None)
        current = _fitted_digest(self, leaves)
        if writeable is None and current == record:
            return
        changed = writeable or next((k for k in sorted(set(record) | set(current)) if record.get(k) != current.get(k)))
        raise ValueError(
            f"fitted.{changed} is not the array this {type(self).__name__} was fitted with (assigned anew or edited "
            "after fit): leakage_, distortion_ and the other figures hold for the fitted arrays only, and releasing "
            "through other ones would state a guarantee they do not have; call fit again (or load a saved mapper)")

    def _check_unrecorded_state(self, what):
        """A mapper unpickled from a version that kept no record of its fit: checked as ``load`` checks a file (its
        figures against its parameters), ValueError saying its ``what`` ("figures", "parameters") state a guarantee
        it does not hold."""
        try:
            self._check_fitted_state()
        except ValueError as exc:
            raise ValueError(f"this {type(self).__name__} does not hold the guarantee its {what} state ({exc}); call "
                             "fit again") from None

    def __setstate__(self, state):
        # pickle, copy and joblib give new arrays (writeable again): guarded anew when they hold what was guarded
        super().__setstate__(state)
        record = self.__dict__.get("_fitted_digest")
        if record is not None and _fitted_digest(self) == record:
            for _, leaf in _fitted_leaves(self):
                leaf.setflags(write=False)

    def _check_params_unchanged(self, record, why):
        """Refuse when ``set_params`` changed a parameter of the fit record ``record`` (``guarantee_params_`` or
        ``fit_params_``) after fit: ValueError naming it, both values and ``why`` the fitted value matters.

        A mapper unpickled from a version that kept no record is checked as ``load`` checks a file (its figures
        against its current parameters, :meth:`_check_fitted_state`) and those parameters are recorded.
        """
        if not hasattr(self, record):
            self._check_unrecorded_state("parameters")
            self._record_guarantee()
        check_params_unchanged(self, getattr(self, record), why, set_back=True)

    def _marginal_prior(self, common, blocks):
        """The stacked marginal prior ``Q'`` of ``protect="marginal"`` (see :func:`stack_marginal_priors`).

        ``common`` holds the input counts ``n(b)`` of every user who disclosed
        any attribute, ``blocks[i]`` the counts ``n_i(a_i, b)`` of the users who
        disclosed attribute ``i``. Each goes through :meth:`_prior_from_counts`
        (the mapper's own estimate, smoothing included); the input marginal
        ``q(b)`` is the common one and block ``i`` contributes its conditional
        ``q_i(a_i | b)``, so every block has the same column sums.
        """
        q_b = self._prior_from_counts(np.asarray(common, dtype=np.float64)[None, :])[0]
        return stack_marginal_priors(q_b, [self._prior_from_counts(np.asarray(b, dtype=np.float64))
                                           for b in blocks])

    def _attribute_kind(self):
        """``"single"`` (1-D ``y``), ``"joint"`` or ``"marginal"`` (2-D ``y``), from the fitted state."""
        return "single" if isinstance(self.classes_, np.ndarray) else self.protect

    def _prior_row_labels(self):
        """A printable label for each row of ``prior_`` (class, attribute tuple or ``column=value``)."""
        kind = self._attribute_kind()
        if kind == "single":
            return list(self.classes_)
        if kind == "joint":
            return ["(" + ", ".join(str(self.classes_[j][c]) for j, c in enumerate(t)) + ")"
                    for t in self.attribute_tuples_.tolist()]
        return [f"{j}={v}" for j, cls in enumerate(self.classes_) for v in cls.tolist()]

    def _attribute_priors(self):
        """The fitted prior of each attribute, ``q_i(a_i, b)`` (rows: ``classes_[i]``)."""
        kind = self._attribute_kind()
        if kind == "single":
            return [self.prior_]
        if kind == "joint":
            out = []
            for j, cls in enumerate(self.classes_):
                P = np.zeros((cls.size, self.prior_.shape[1]))
                np.add.at(P, self.attribute_tuples_[:, j], self.prior_)
                out.append(P)
            return out
        m = len(self.classes_)
        offsets = np.cumsum([0] + [c.size for c in self.classes_])
        return [m * self.prior_[offsets[j]:offsets[j + 1]] for j in range(m)]

    def _estimate_shifts(self):
        """Per attribute, the L1 distance between its fitted prior and its raw counts (``empirical_prior_``).

        0 where the mapper certifies under the raw counts themselves (no
        ``empirical_prior_``); a smoothed or model-based prior moves the
        certified leakage away from the counts Proposition 1 is about.
        """
        emp = getattr(self, "empirical_prior_", None)
        if emp is None or np.shape(emp) != np.shape(self.prior_):
            return [0.0] * len(self._attribute_priors())
        diff = np.asarray(self.prior_, dtype=np.float64) - np.asarray(emp, dtype=np.float64)
        if self._attribute_kind() != "marginal":
            return [float(np.abs(diff).sum())]
        m = len(self.classes_)
        offsets = np.cumsum([0] + [c.size for c in self.classes_])
        return [float(np.abs(m * diff[offsets[j]:offsets[j + 1]]).sum()) for j in range(m)]

    def _figures(self):
        """Every figure derived from ``prior_``, ``mapping_`` and ``cost_matrix_`` (engine functions)."""
        p_in = self.prior_.sum(axis=0)
        C = self.cost_matrix_
        if sp.issparse(C):
            d_max = float(C.data.max()) if C.nnz else 0.0
            smallest = float(np.sum(p_in * np.minimum.reduceat(C.data, C.indptr[:-1]))) if C.nnz else np.inf
        else:
            finite = np.isfinite(C)
            d_max = float(C[finite].max()) if finite.any() else 0.0
            smallest = float(np.sum(p_in * np.where(finite, C, np.inf).min(axis=1)))
        kind = self._attribute_kind()
        per = [_norm(P) for P in self._attribute_priors()]
        leak = float(engine_leakage(self.prior_, self.mapping_, kind=self.leakage))
        shifts = self._estimate_shifts()
        if kind == "marginal":
            map_acc = float(np.mean([map_attack_accuracy(P, self.mapping_) for P in per]))
            bound = max(theorem1_bound(n_i, P.shape[0], self._n_inputs(), d_max, shift=sh)
                        for n_i, P, sh in zip(self.n_labeled_per_attribute_, per, shifts))
            jp = getattr(self, "joint_prior_", None)
            joint = float("nan") if jp is None else float(engine_leakage(jp, self.mapping_, kind=self.leakage))
        else:
            map_acc = float(map_attack_accuracy(self.prior_, self.mapping_))
            bound = theorem1_bound(self.n_labeled_, self.prior_.shape[0], self._n_inputs(), d_max, shift=shifts[0])
            joint = leak
        return {
            "leakage_": leak,
            "prior_leakage_": float(mutual_information(self.prior_)),
            "map_accuracy_": map_acc,
            "distortion_": float(expected_distortion(self.prior_, self.mapping_, self.cost_matrix_)),
            "smallest_delta_": smallest,
            "mismatch_bound_": bound,
            "leakage_per_attribute_": np.array([engine_leakage(P, self.mapping_, kind=self.leakage) for P in per]),
            "joint_leakage_": joint,
        }

    def _set_figures(self):
        for name, value in self._figures().items():
            setattr(self, name, value)

    # ---------------------------------------------------------------- transform
    def _sample(self, inputs, source):
        """Output symbol of each row: ``c_hat ~ mapping_[c]`` (eq. 21), -1 where ``inputs`` is -1."""
        out = np.full(inputs.shape[0], -1, dtype=np.int64)
        ok = inputs >= 0
        if not ok.any():
            return out
        M = self.mapping_
        if not sp.issparse(M):
            M = sp.csr_array(M)  # the positive entries only (a zero-probability output is never drawn)
        # the rows with the same number of possible outputs are drawn together by the inverse-CDF
        # sampler on those entries (one block per degree): memory n_rows x degree, never
        # n_rows x n_outputs
        rows = np.flatnonzero(ok)
        symbols = inputs[ok]
        deg = np.diff(M.indptr)[symbols]
        for d in np.unique(deg):
            sel = np.flatnonzero(deg == d)
            starts = M.indptr[symbols[sel]]
            pos = starts[:, None] + np.arange(d)[None, :]
            out[rows[sel]] = M.indices[pos[np.arange(sel.size), source.categorical(M.data[pos])]]
        return out

    def _release_meta(self, meta):
        """The (empty) dask meta of the released blocks, given the input's meta (default: the same)."""
        return meta

    # ---------------------------------------------------------------- persistence
    def save(self, path, key=None):
        """Save the fitted mapper to a portable ``.npz`` file (no pickle); read it with :func:`privrelease.load`.

        Parameters
        ----------
        path : str or path-like
        key : bytes, optional
            Secret (at least 16 bytes): the file carries an HMAC-SHA256 tag over
            all its bytes, checked by ``privrelease.load(path, key=key)`` before
            anything is decoded.

        Returns
        -------
        path : str
        """
        return _persistence.save(self, path, key=key)

    def _persist_params(self):
        params = self.get_params(deep=False)
        rs = params.get("random_state")
        if getattr(rs, "secure", False):
            params["random_state"] = rs = None  # a SecureRandomSource is what None means
        if rs is not None and not (isinstance(rs, Integral) and not isinstance(rs, bool)):
            raise ValueError(
                f"random_state of type {type(rs).__name__} cannot be saved portably; use random_state=None "
                "(operating-system entropy, the production setting) or an integer seed (tests) before saving"
            )
        return params

    def _persist_state(self):
        check_is_fitted(self)
        self._check_guarantee_unchanged()
        # the file's parameters must be those its state was fitted with, every one of them (prior, smoothing,
        # n_clusters ... changed after fit were written beside a state computed with the old values)
        self._check_params_unchanged("fit_params_", "the file would state it beside a state fitted with the other "
                                                    "value")
        try:
            self._check_fitted_state()  # never write a file that load would refuse
        except ValueError as exc:
            raise ValueError(f"this {type(self).__name__} cannot be saved: its fitted state does not hold ({exc})") from None
        state = {}
        for name in self._saved_attributes:
            if hasattr(self, name):
                state[name] = self._encode_attribute(name, getattr(self, name))
        return state

    def _encode_attribute(self, name, value):
        if name == "solver_result_":
            mapping = (sp.csr_array(value.mapping, dtype=np.float64) if sp.issparse(value.mapping)
                       else np.asarray(value.mapping, dtype=np.float64))
            return {"mapping": mapping, "leakage": float(value.leakage),
                    "distortion": float(value.distortion), "status": str(value.status),
                    "certificate": dict(value.certificate), "solver": str(value.solver),
                    "delta": value.delta, "max_leakage": value.max_leakage, "kind": str(value.kind)}
        return value

    def _decode_attribute(self, name, value):
        if name in self._float64_attributes:
            dtype = getattr(value, "dtype", None)
            if isinstance(dtype, np.dtype) and dtype.kind == "f" and dtype != np.float64:
                # fit computes them in float64 and save writes them so; the checks recompute the claims on float64
                # copies, and a float128 or float32 array kept as loaded would be what transform samples from
                raise ValueError(f"fitted.{name} must hold float64 values, as save writes it, got dtype {dtype}")
        if name == "solver_result_":
            if not isinstance(value, dict):
                raise ValueError(f"fitted.solver_result_ must be a mapping of fields, got {type(value).__name__}")
            fields = ("mapping", "leakage", "distortion", "status", "certificate", "solver", "delta",
                      "max_leakage", "kind")
            if set(value) != set(fields):
                raise ValueError(f"fitted.solver_result_ has fields {sorted(value)}, expected {sorted(fields)}")
            dtype = getattr(value["mapping"], "dtype", None)
            if not (isinstance(dtype, np.dtype) and dtype.kind == "f" and dtype.itemsize == 8):
                # save writes it as float64: a complex mapping loaded (its imaginary part unseen by the checks), and
                # a float16 or float32 one that happened to round to mapping_
                raise ValueError(f"fitted.solver_result_.mapping must hold float64 probabilities, as save writes "
                                 f"it, got {f'dtype {dtype}' if dtype is not None else type(value['mapping']).__name__}")
            if value["status"] not in ("optimal", "inaccurate"):
                # a fit stores one of these two (solve_mapping's statuses); an edited "infeasible" loaded and the
                # mapper went on releasing under a status that contradicted its use
                raise ValueError(f"fitted.solver_result_.status = {plain_value(value['status'])!r:.60}, expected "
                                 "'optimal' or 'inaccurate' (what a fit stores)")
            return MappingResult(**value)
        return value

    @classmethod
    def _restore(cls, params, state):
        """Build a fitted mapper from a file's parameters and state, refusing any claim that does not hold."""
        est = cls()
        unknown = sorted(set(params) - set(est.get_params(deep=False)))
        if unknown:
            raise ValueError(f"params: {unknown[0]!r} is not a parameter of {cls.__name__}")
        legacy = {n: v for n, v in cls._legacy_params.items() if n not in params}
        missing = sorted(set(est.get_params(deep=False)) - set(params) - set(legacy))
        params = {**params, **legacy}
        if missing:
            # save writes every parameter: a file without one was written before it existed, or edited; what it
            # now reads (the default) is said, not assumed (the claims checked below cover the privacy figures, not
            # e.g. how the release is drawn)
            defaults = ", ".join(f"{n}={est.get_params(deep=False)[n]!r}" for n in missing)
            warnings.warn(f"the file does not record the parameter(s) {', '.join(missing)} of {cls.__name__}: "
                          f"loaded with the default(s) {defaults} (a file written before the parameter existed, or "
                          "edited); save it again to record them", UserWarning, stacklevel=user_stacklevel())
        est.set_params(**params)
        try:
            est._validate_params()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"params: the constructor parameters are not valid for {cls.__name__}: {exc}") from None
        allowed = set(cls._saved_attributes)
        for name in state:
            if name not in allowed:
                raise ValueError(f"fitted.{name}: {name!r} is not a fitted attribute name that "
                                 f"{cls.__name__} saves")
        for name in cls._saved_attributes:
            if name not in state and name not in cls._optional_attributes:
                raise ValueError(f"fitted.{name}: fitted attribute {name} is missing from the file")
        for name, value in state.items():
            setattr(est, name, est._decode_attribute(name, value))
        # save wrote the parameters of the fit (it refuses others), and the checks below verify them against the figures
        est._record_guarantee()
        try:
            est._check_fitted_state()
        except (TypeError, KeyError, IndexError, AttributeError) as exc:
            raise ValueError(f"the fitted state of {cls.__name__} is malformed: {type(exc).__name__}: {exc}") from None
        est._guard_fitted_state()
        res = est.solver_result_
        if res.status != "optimal":
            # what fit said of this answer (the solver's ConvergenceWarning) is said again by the file that holds it
            warnings.warn(
                f"the loaded {cls.__name__}'s mapping is not certified optimal (solver_result_.status="
                f"{res.status!r}, certified gap {float(res.certificate['gap_bits']):.3g} bits, solver {res.solver!r}): "
                "its leakage_ and distortion_ hold (recomputed from the file), but a better mapping may exist at "
                "this budget; fit again to certify one",
                ConvergenceWarning,
                stacklevel=user_stacklevel(),
            )
        rs = est.random_state
        if isinstance(rs, Integral) and not isinstance(rs, bool):
            warnings.warn(
                f"the loaded {cls.__name__} has an integer random_state ({rs}): every transform replays the same "
                "seeded stream, so its releases are reproducible by anyone holding the file; set "
                "random_state=None (operating-system entropy) for production releases",
                PrivacyLeakWarning,
                stacklevel=user_stacklevel(),
            )
        return est

    # ---------------------------------------------------------------- validation of a fitted state
    def _check_fitted_state(self):
        """Check the structure of the fitted state and recompute every claim (ValueError naming it)."""
        n_features = self.n_features_in_
        if isinstance(n_features, bool) or not isinstance(n_features, Integral) or n_features < 1:
            raise ValueError(f"fitted.n_features_in_ must be a positive integer, got {n_features!r}")
        names = getattr(self, "feature_names_in_", None)
        if names is not None and (not isinstance(names, np.ndarray) or names.shape != (n_features,)):
            raise ValueError(f"fitted.feature_names_in_ has {np.shape(names)} names, expected "
                             f"n_features_in_={n_features}")
        labels = getattr(self, "feature_labels_in_", None)
        if labels is not None:
            if not isinstance(labels, np.ndarray) or labels.shape != (n_features,):
                raise ValueError(f"fitted.feature_labels_in_ has {np.shape(labels)} labels, expected "
                                 f"n_features_in_={n_features}")
            plain = [_plain_label(v) for v in labels.tolist()]
            if plain != labels.tolist() or all(isinstance(v, str) for v in plain):
                raise ValueError(f"fitted.feature_labels_in_ must hold the column labels fit saw (numbers, texts, "
                                 f"tuples of them; not all texts: those are feature_names_in_), got "
                                 f"{labels.tolist()!r:.80}")
        classes = self.classes_
        n_rows = self._check_classes(classes)
        prior = _matrix(self.prior_, "prior_")
        sparse = sp.issparse(self.mapping_) or sp.issparse(self.cost_matrix_)
        if sparse:
            M, C = _sparse_pair(self.mapping_, self.cost_matrix_)
        else:
            M = _matrix(self.mapping_, "mapping_")
            C = _matrix(self.cost_matrix_, "cost_matrix_", allow_posinf=True)
        if prior.shape[0] != n_rows:
            raise ValueError(f"fitted.prior_ has {prior.shape[0]} rows but classes_ gives {n_rows} prior rows")
        if np.any(prior < 0):
            r, c = np.argwhere(prior < 0)[0]
            raise ValueError(f"fitted.prior_ entry ({r}, {c}) is negative ({float(prior[r, c])!r}); "
                             "a prior is a distribution")
        total = prior.sum()
        if abs(total - 1.0) > _CLAIM_TOL:
            raise ValueError(f"fitted.prior_ sums to {total:.12g}, expected 1 (within {_CLAIM_TOL:g})")
        if prior.shape[1] != M.shape[0]:
            raise ValueError(f"fitted.prior_ has {prior.shape[1]} columns but mapping_ has {M.shape[0]} rows; "
                             "both count the input symbols")
        if sparse:
            sums = np.add.reduceat(M.data, M.indptr[:-1])
        else:
            if np.any(M < 0):
                r, c = np.argwhere(M < 0)[0]
                raise ValueError(f"fitted.mapping_ entry ({r}, {c}) is negative ({float(M[r, c])!r}); "
                                 "a mapping holds probabilities")
            sums = M.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > _CLAIM_TOL)
        if bad.size:
            r = int(bad[0])
            raise ValueError(f"fitted.mapping_ row {r} sums to {sums[r]:.12g}, expected 1 (within {_CLAIM_TOL:g})")
        if not sparse:
            if C.shape != M.shape:
                raise ValueError(f"fitted.cost_matrix_ has shape {C.shape}, expected {M.shape} like mapping_")
            if np.any(C < 0):
                r, c = np.argwhere(C < 0)[0]
                raise ValueError(f"fitted.cost_matrix_ entry ({r}, {c}) is negative ({float(C[r, c])!r}); "
                                 "distortions are >= 0")
            if np.any(M[np.isinf(C)] != 0):
                r, c = np.argwhere(np.isinf(C) & (M != 0))[0]
                raise ValueError(f"fitted.mapping_ puts probability {float(M[r, c])!r} on the forbidden "
                                 f"transition ({r}, {c}) (infinite cost_matrix_)")
        n = self.n_labeled_
        if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
            raise ValueError(f"fitted.n_labeled_ must be a positive integer, got {n!r}")
        self._check_structure()
        if self._attribute_kind() != "single":
            self._check_attributes(prior)
        for name, value in self._figures().items():
            _check_claim(self, name, value)
        res = self.solver_result_
        if sparse:
            R = res.mapping
            if (not isinstance(R, sp.csr_array) or R.shape != M.shape or not np.array_equal(R.indptr, M.indptr)
                    or not np.array_equal(R.indices, M.indices)):
                raise ValueError(f"fitted.solver_result_.mapping must be a csr_array with mapping_'s entries, "
                                 f"got {type(R).__name__} of shape {getattr(R, 'shape', None)}")
            if not np.all(np.isfinite(R.data)) or np.max(np.abs(R.data - M.data), initial=0.0) > _BUDGET_TOL:
                raise ValueError("fitted.solver_result_.mapping is not the mapping_ the file holds")
        else:
            if not isinstance(res.mapping, np.ndarray) or res.mapping.shape != M.shape:
                raise ValueError(f"fitted.solver_result_.mapping has shape {np.shape(res.mapping)}, "
                                 f"expected {M.shape}")
            if not np.all(np.isfinite(res.mapping)) or np.max(np.abs(res.mapping - M)) > _BUDGET_TOL:
                raise ValueError("fitted.solver_result_.mapping is not the mapping_ the file holds")
        # the parameters' promise holds for the stored mapping
        if self.delta is not None and self.distortion_ > self.delta + _BUDGET_TOL * max(1.0, self.delta):
            raise ValueError(f"fitted.distortion_ = {self.distortion_!r} exceeds the budget delta = {self.delta!r}")
        cap = self.max_leakage if self.max_leakage is not None else (0.0 if self.delta is None else None)
        if cap is not None and self.leakage_ > cap + _BUDGET_TOL:
            raise ValueError(f"fitted.leakage_ = {self.leakage_!r} bits exceeds the cap of {cap!r} bits that "
                             "the parameters promise")
        if cap is not None:
            self._check_raw_cap(cap)
        self._check_solver_result(res)

    def _solver_distortion(self, mapping):
        """The expected distortion the engine states for ``mapping`` (``solver_result_.distortion``): under
        ``prior_`` and ``cost_matrix_`` (a mapper that hands the engine other costs says so here)."""
        return float(expected_distortion(self.prior_, mapping, self.cost_matrix_))

    def _check_solver_result(self, res):
        """Recompute the claims of ``solver_result_`` from the stored state; refuse the impossible ones.

        Its ``leakage`` and ``distortion`` are those of its mapping under ``prior_`` (the engine's functions),
        its ``kind`` the ``leakage`` parameter, its ``delta`` / ``max_leakage`` the budget of the parameters
        (perfect privacy: ``delta = inf``; a quantized mapper may record a tighter cap). The certificate's
        bound is not recomputed (a solve of its own); a ``gap_bits`` that no solve returns (missing, not a
        number, NaN, negative) is refused, and so is ``status = 'optimal'`` beside a gap above the solver's
        tolerance (the solver calls such an answer ``'inaccurate'``).
        """
        where = "fitted.solver_result_"
        for name in ("leakage", "distortion"):
            v = getattr(res, name)
            if not _is_real(v) or not math.isfinite(float(v)):
                raise ValueError(f"{where}.{name} must be a finite number, got {v!r:.60}")
        if res.kind != self.leakage:
            raise ValueError(f"{where}.kind = {plain_value(res.kind)!r:.60} does not hold: the mapper's leakage "
                             f"parameter is {self.leakage!r}, the measure the mapping was solved in")
        recomputed = {"leakage": float(engine_leakage(self.prior_, res.mapping, kind=self.leakage)),
                      "distortion": self._solver_distortion(res.mapping)}
        for name, expected in recomputed.items():
            got = float(getattr(res, name))
            if not (got == expected or abs(got - expected) <= _CLAIM_TOL * max(1.0, abs(expected))):
                raise ValueError(f"{where}.{name} = {got!r} does not hold: recomputed from its mapping under the "
                                 f"stored prior it is {expected!r}; the file's claim is false")
        self._check_solver_budget(res, where)
        if not isinstance(res.solver, str) or not res.solver:
            raise ValueError(f"{where}.solver must name the solver (a non-empty text), got {res.solver!r:.60}")
        cert = res.certificate
        if not isinstance(cert, dict) or "gap_bits" not in cert:
            raise ValueError(f"{where}.certificate must hold 'gap_bits' (the certified duality gap every solve "
                             f"reports), got {sorted(cert) if isinstance(cert, dict) else type(cert).__name__}")
        for name in ("gap_bits", "distortion_gap", "distortion_tolerance"):
            if name not in cert:
                continue
            v = cert[name]
            if not _is_real(v) or not (float(v) >= 0.0 and math.isfinite(float(v))):
                raise ValueError(f"{where}.certificate['{name}'] = {v!r:.60} is not a bound a solve returns: "
                                 "expected a finite number >= 0")
        lb, d = cert.get("distortion_lower_bound"), float(res.distortion)
        if lb is not None and not (_is_real(lb) and float(lb) <= d + _CLAIM_TOL * max(1.0, abs(d))):
            raise ValueError(f"{where}.certificate['distortion_lower_bound'] = {lb!r:.60} does not hold: expected a "
                             f"lower bound on the distortion, at most the mapping's own distortion {d!r}")
        gap_d = cert.get("distortion_gap")
        if gap_d is not None and lb is not None and math.isfinite(float(lb)):
            # the engine states the gap as the distortion minus its lower bound (a subtraction, rounded in its own
            # units): a gap that is not that difference is a claim the stored figures do not make
            implied = max(d - float(lb), 0.0)
            # relative to the distortions subtracted (their rounding: 1e-16 of them on honest files, offsets of 1e9
            # and scales of 1e-300 included), not to 1: an edit of a 6e-12 gap to 0 passed under an absolute 1e-9
            if abs(float(gap_d) - implied) > _GAP_CLAIM_RTOL * max(abs(d), abs(float(lb)), np.finfo(float).tiny):
                raise ValueError(f"{where}.certificate['distortion_gap'] = {float(gap_d)!r} does not hold: the "
                                 f"distortion {d!r} minus its stated lower bound {float(lb)!r} is {implied!r}")
        if res.status == "optimal" and float(cert["gap_bits"]) > _BUDGET_TOL:
            raise ValueError(f"{where}.status = 'optimal' does not hold: its certificate's gap_bits = "
                             f"{float(cert['gap_bits'])!r} is above the solver's tolerance of {_BUDGET_TOL!r} bits "
                             "(the solver calls such an answer 'inaccurate')")
        tol_d = cert.get("distortion_tolerance")
        if res.status == "optimal" and gap_d is not None and tol_d is not None and float(gap_d) > float(tol_d):
            raise ValueError(f"{where}.status = 'optimal' does not hold: its certificate's distortion_gap = "
                             f"{float(cert['distortion_gap'])!r} is above its distortion_tolerance = {float(tol_d)!r}")

    def _check_solver_budget(self, res, where):
        """``solver_result_.delta`` / ``max_leakage``: the budget the parameters gave, and the result within it."""
        def shown(v):
            return "None" if v is None else repr(plain_value(v))

        delta, cap = res.delta, res.max_leakage
        for name, v in (("delta", delta), ("max_leakage", cap)):
            if v is not None and (not _is_real(v) or math.isnan(float(v)) or float(v) < 0):
                raise ValueError(f"{where}.{name} must be None or a number >= 0, got {v!r:.60}")
        params = (f"the parameters give delta={shown(self.delta)}, max_leakage={shown(self.max_leakage)}")
        if self.delta is not None:
            ok = cap is None and delta is not None and float(delta) == float(self.delta)
            expected = f"delta = {float(self.delta)!r}, max_leakage = None"
        elif self.max_leakage is not None and float(self.max_leakage) > 0:
            # a tighter cap than max_leakage (QuantizedPrivacyMapper's search under the raw counts), or perfect
            # privacy (the end of that search: delta = inf)
            ok = ((delta is None and cap is not None and float(cap) <= float(self.max_leakage))
                  or (cap is None and delta is not None and float(delta) == np.inf))
            expected = (f"max_leakage <= {float(self.max_leakage)!r} with delta = None, or delta = inf (perfect "
                        "privacy)")
        else:
            # perfect privacy: the least-leakage mapping with no budget (delta = inf), or a one-symbol prior's
            ok = ((cap is None and delta is not None and float(delta) == np.inf)
                  or (delta is None and (cap is None or float(cap) == 0.0) and min(self.prior_.shape) < 2))
            expected = "delta = inf, max_leakage = None (perfect privacy)"
        if not ok:
            raise ValueError(f"{where} states delta = {shown(delta)}, max_leakage = {shown(cap)}, which does not "
                             f"hold: {params}, so a fit records {expected}")
        if cap is not None and float(res.leakage) > float(cap) + _BUDGET_TOL:
            raise ValueError(f"{where}.leakage = {float(res.leakage)!r} bits exceeds its own max_leakage = "
                             f"{float(cap)!r}")

    def _check_raw_cap(self, cap):
        """A mapper whose cap also holds under other figures checks them here (loaded files)."""

    def _check_structure(self):
        """Mapper-specific structure checks (run before the claims are recomputed)."""

    def _check_classes(self, classes):
        """Check ``classes_`` (1-D array, or a list of them for a 2-D ``y``); return the prior's row count."""
        arrays = classes if isinstance(classes, list) else [classes]
        if isinstance(classes, list) and len(classes) < 2:
            raise ValueError(f"fitted.classes_ lists {len(classes)} attribute(s); a list needs at least 2 "
                             "(one array per column of y)")
        for j, cls in enumerate(arrays):
            where = "classes_" if len(arrays) == 1 and not isinstance(classes, list) else f"classes_[{j}]"
            if not isinstance(cls, np.ndarray) or cls.ndim != 1 or cls.size < 2:
                raise ValueError(f"fitted.{where} must be a 1-D array of at least 2 classes, got {cls!r:.80}")
            if len(set(cls.tolist())) != cls.size:
                raise ValueError(f"fitted.{where} holds a class twice: {cls.tolist()!r:.80}")
            # fit's classes are np.unique's: sorted labels that are numbers, strings, bytes or booleans; the prior's
            # rows follow that order (a complex, a date, a NaN or an unsorted list was loaded as it came)
            if cls.dtype.kind not in "biufSUO" or (cls.dtype.kind == "f" and not np.all(np.isfinite(cls))):
                raise ValueError(f"fitted.{where} must hold finite numbers, strings, bytes or booleans (the labels fit "
                                 f"saw), got dtype {cls.dtype}: {cls.tolist()!r:.80}")
            if cls.dtype.kind != "O":
                unsorted = bool(np.any(cls[1:] <= cls[:-1]))
            else:
                # object classes (a categorical, string or nullable y) are sorted by fit too: skipping them loaded a
                # file whose classes were swapped, each prior row attributed to the other class
                items = cls.tolist()
                try:
                    unsorted = any(not a < b for a, b in zip(items, items[1:]))
                except TypeError:  # labels of kinds that do not compare ('a' and 1): fit refuses such a y
                    unsorted = True
            if unsorted:
                raise ValueError(f"fitted.{where} must be sorted as fit sorts the labels (the prior's rows follow "
                                 f"that order), got {cls.tolist()!r:.80}")
        if not isinstance(classes, list):
            return classes.size
        sizes = np.array([c.size for c in classes])
        T = getattr(self, "attribute_tuples_", None)
        if not isinstance(T, np.ndarray) or T.ndim != 2 or T.shape[1] != len(classes) or T.dtype.kind not in "iu":
            raise ValueError(f"fitted.attribute_tuples_ must be an integer array with {len(classes)} columns, "
                             f"got shape {getattr(T, 'shape', None)}")
        if T.size and (np.any(T < 0) or np.any(T >= sizes[None, :])):
            r, f = np.argwhere((T < 0) | (T >= sizes[None, :]))[0]
            raise ValueError(f"fitted.attribute_tuples_[{r}, {f}] = {T[r, f]} is not a class code of attribute "
                             f"{f} (expected 0 <= code < {sizes[f]})")
        if np.unique(T, axis=0).shape[0] != T.shape[0]:
            raise ValueError("fitted.attribute_tuples_ holds a tuple twice")
        n = getattr(self, "n_labeled_per_attribute_", None)
        if not isinstance(n, np.ndarray) or n.shape != (len(classes),) or n.dtype.kind not in "iu" or np.any(n < 1):
            raise ValueError(f"fitted.n_labeled_per_attribute_ must hold {len(classes)} positive integers, "
                             f"got {n!r:.80}")
        if self.protect == "joint":
            if T.shape[0] < 2:
                raise ValueError(f"fitted.attribute_tuples_ has {T.shape[0]} tuple(s), expected at least 2")
            return T.shape[0]
        return int(sizes.sum())

    def _check_attributes(self, prior):
        """Several attributes: the joint prior's shape, and the marginal blocks' common input marginal."""
        jp = getattr(self, "joint_prior_", None)
        if self.protect == "joint":
            if not isinstance(jp, np.ndarray) or jp.shape != prior.shape or np.max(np.abs(jp - prior)) > _CLAIM_TOL:
                raise ValueError("fitted.joint_prior_ must be the prior_ itself when protect='joint'")
            return
        if jp is not None:
            jp = _matrix(jp, "joint_prior_")
            if jp.shape != (self.attribute_tuples_.shape[0], prior.shape[1]) or np.any(jp < 0) \
                    or abs(jp.sum() - 1.0) > _CLAIM_TOL:
                raise ValueError(f"fitted.joint_prior_ must be a distribution of shape "
                                 f"{(self.attribute_tuples_.shape[0], prior.shape[1])} (attribute tuples x inputs)")
        q_b = prior.sum(axis=0)
        for j, P in enumerate(self._attribute_priors()):
            if np.max(np.abs(P.sum(axis=0) - q_b)) > _CLAIM_TOL:
                raise ValueError(f"fitted.prior_ block {j} (attribute {j}) has input marginal different from the "
                                 "other blocks'; the stacked marginal prior needs one common q(b)")


# TransformerMixin.fit_transform (scikit-learn's set_output wrapper included), with the fitted labels put back last
# (keep_column_labels reads a dask frame's release past scikit-learn's wrapper: it must wrap that method itself);
# fit and transform check the same X: a sparse matrix storing a (user, item) pair twice is said once
_BaseMapper.fit_transform = fit_transform_said_once(keep_column_labels(TransformerMixin.fit_transform))


def stack_marginal_priors(q_b, joints):
    """Stack marginal priors into the one matrix ``Q'`` whose leakage is the average marginal leakage.

    Given the input marginal ``q(b)`` and, for each private attribute ``A_i``
    (``i = 1..m``), a joint ``q_i(a_i, b)``, returns the
    ``(sum_i |A_i|) x |B|`` matrix whose block ``i`` is
    ``(1/m) q(b) q_i(a_i | b)``. Its column sums are ``q(b)`` and, since the
    blocks' rows are disjoint,

    ``I'(C_hat) = sum_{i, a_i, c_hat} p'(a_i, c_hat) log p'(a_i, c_hat) / (p'(a_i) p(c_hat))
    = (1/m) sum_i I(A_i; C_hat)``

    (``p'(a_i) = p_i(a_i) / m`` and the ``1/m`` cancels inside the logarithm).
    The engine's perfect-privacy constraints on ``Q'``,
    ``p'(a_i, c_hat) = p'(a_i) p(c_hat)``, are exactly
    ``p_i(a_i, c_hat) = p_i(a_i) p(c_hat)`` for every ``i``. So the engine
    (Salamatian et al., Algorithm 1 / problem (6)) run on ``Q'`` minimises the
    average marginal leakage, and its perfect-privacy solution gives every
    marginal zero leakage. Where ``q_i(b) = 0`` (no user who disclosed
    attribute ``i`` has input ``b``) the conditional is the attribute's
    marginal ``q_i(a_i)`` (independence: no leakage invented).

    Parameters
    ----------
    q_b : array-like of shape (n_inputs,)
        Input marginal (normalised here).
    joints : list of array-like of shape (n_classes_i, n_inputs)
        Each attribute's joint prior (normalised here).

    Returns
    -------
    prior : ndarray of shape (sum_i n_classes_i, n_inputs)

    Examples
    --------
    >>> import numpy as np
    >>> from privrelease.mapping import mutual_information
    >>> from privrelease.mappers._base import stack_marginal_priors
    >>> q1 = np.array([[0.4, 0.1], [0.1, 0.4]]); q2 = np.array([[0.25, 0.25], [0.25, 0.25]])
    >>> Q = stack_marginal_priors(q1.sum(axis=0), [q1, q2])
    >>> bool(np.isclose(mutual_information(Q), (mutual_information(q1) + mutual_information(q2)) / 2))
    True
    """
    q_b = np.asarray(q_b, dtype=np.float64)
    q_b = q_b / q_b.sum()
    m = len(joints)
    out = []
    for P in joints:
        P = np.asarray(P, dtype=np.float64)
        P = P / P.sum()
        col = P.sum(axis=0)
        marginal = P.sum(axis=1)
        cond = np.where(col > 0, P / np.where(col > 0, col, 1.0), marginal[:, None])
        out.append(cond * q_b[None, :] / m)
    return np.vstack(out)


def _norm(P):
    return P / P.sum()


def _degenerate_result(prior, cost, delta, max_leakage, kind):
    """One input symbol (one cluster, one distinct record) or one private value: every mapping
    leaks exactly 0 bits, so the cheapest one (each input on its first cheapest output) is optimal.

    The engine refuses such priors (there is nothing to protect); a mapper meets them on data
    where every labeled user falls in one cluster, and releases at the smallest distortion.
    """
    p_in = prior.sum(axis=0)
    if sp.issparse(cost):
        C = check_distortion(cost, cost.shape[0])
        rows = np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))
        row_min = np.minimum.reduceat(C.data, C.indptr[:-1])
        pos = np.where(C.data <= row_min[rows], np.arange(C.nnz), C.nnz)
        first = np.minimum.reduceat(pos, C.indptr[:-1])
        data = np.zeros(C.nnz)
        data[first] = 1.0
        mapping = sp.csr_array((data, C.indices.copy(), C.indptr.copy()), shape=C.shape)
    else:
        C = np.asarray(cost, dtype=np.float64)
        row_min = np.where(np.isfinite(C), C, np.inf).min(axis=1)
        mapping = np.zeros(C.shape)
        mapping[np.arange(C.shape[0]), np.argmin(np.where(np.isfinite(C), C, np.inf), axis=1)] = 1.0
    # the engine's smallest feasible distortion (correctly rounded) and its rule for a budget below it
    smallest = row_offset(p_in, row_min)[0]
    if delta is not None and float(delta) < smallest - budget_slack(smallest, np.count_nonzero(p_in > 0)):
        raise InfeasibleBudgetError(f"delta={delta!r} is below the smallest feasible expected distortion "
                                    f"{smallest!r}", smallest_feasible=smallest)
    return MappingResult(mapping=mapping, leakage=0.0, distortion=smallest, status="optimal",
                         certificate={"gap_bits": 0.0, "method": f"prior of shape {prior.shape}: every mapping "
                                      "leaks 0 bits; the cheapest one"},
                         solver="exact", delta=None if delta is None else float(delta),
                         max_leakage=None if max_leakage is None else float(max_leakage), kind=kind)


def _row_stochastic(mapping, cost):
    """The engine's mapping, clipped to the allowed transitions and renormalised row by row."""
    if sp.issparse(cost):
        M = sp.csr_array(mapping, dtype=np.float64).copy()
        if not (np.array_equal(M.indptr, cost.indptr) and np.array_equal(M.indices, cost.indices)):
            raise ValueError("the engine returned a sparse mapping whose pattern differs from the cost's")
        M.data = np.clip(M.data, 0.0, None)
        rs = np.add.reduceat(M.data, M.indptr[:-1])
        M.data = M.data / np.repeat(rs, np.diff(M.indptr))
        return M
    allowed = np.isfinite(cost)
    M = np.where(allowed, np.clip(np.asarray(mapping, dtype=np.float64), 0.0, None), 0.0)
    return M / M.sum(axis=1, keepdims=True)


def _sparse_pair(M, C):
    """Check a stored sparse mapping and cost (same pattern: the allowed transitions); ValueError."""
    for a, name in ((M, "mapping_"), (C, "cost_matrix_")):
        if not isinstance(a, sp.csr_array) or a.ndim != 2 or 0 in a.shape or a.data.dtype.kind not in "biuf":
            raise ValueError(f"fitted.{name} must be a non-empty 2-D numeric csr_array when either of mapping_ "
                             f"and cost_matrix_ is sparse, got {type(a).__name__}")
        if not np.all(np.isfinite(a.data)):
            i = int(np.flatnonzero(~np.isfinite(a.data))[0])
            raise ValueError(f"fitted.{name} has a non-finite stored entry ({float(a.data[i])!r}); a sparse "
                             "cost stores the allowed transitions only")
    if M.shape != C.shape or not (np.array_equal(M.indptr, C.indptr) and np.array_equal(M.indices, C.indices)):
        raise ValueError("fitted.mapping_ and fitted.cost_matrix_ must store the same entries (the allowed "
                         "transitions)")
    if np.any(np.diff(C.indptr) == 0):
        raise ValueError(f"fitted.cost_matrix_ row {int(np.flatnonzero(np.diff(C.indptr) == 0)[0])} allows no "
                         "output")
    if np.any(M.data < 0):
        raise ValueError(f"fitted.mapping_ holds a negative probability ({float(M.data.min())!r})")
    if np.any(C.data < 0):
        raise ValueError(f"fitted.cost_matrix_ holds a negative distortion ({float(C.data.min())!r})")
    return M.astype(np.float64), C.astype(np.float64)


def _matrix(a, name, allow_posinf=False):
    if not isinstance(a, np.ndarray) or a.ndim != 2 or a.dtype.kind not in "biuf" or 0 in a.shape:
        raise ValueError(f"fitted.{name} must be a non-empty 2-D numeric array, got {type(a).__name__} "
                         f"with shape {getattr(a, 'shape', None)}")
    ok = np.isfinite(a) | (allow_posinf & (a == np.inf))
    if not np.all(ok):
        bad = np.argwhere(~ok)[0]
        raise ValueError(f"fitted.{name} has a non-finite entry at {tuple(int(i) for i in bad)}: "
                         f"{float(a[tuple(bad)])!r}")
    return a.astype(np.float64, copy=False)


def _is_real(v):
    """Whether ``v`` is a real number as a solve records one (a Python or numpy float or int, not a bool)."""
    return isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, (bool, np.bool_))


def _check_claim(est, name, expected):
    got = getattr(est, name)
    if isinstance(expected, np.ndarray):
        if not isinstance(got, np.ndarray) or got.shape != expected.shape or got.dtype.kind != "f":
            raise ValueError(f"fitted.{name} must be a float array of shape {expected.shape}, got {got!r:.60}")
        if not np.allclose(got, expected, rtol=_CLAIM_TOL, atol=_CLAIM_TOL):
            raise ValueError(f"fitted.{name} = {got.tolist()!r} does not hold: recomputed from the stored arrays "
                             f"it is {expected.tolist()!r}; the file's claim is false")
        return
    if isinstance(expected, float) and math.isnan(expected):
        if not (isinstance(got, float) and math.isnan(got)):
            raise ValueError(f"fitted.{name} = {got!r} does not hold: recomputed it is NaN (no joint prior)")
        return
    if isinstance(got, bool) or not isinstance(got, (int, float, np.floating, np.integer)):
        raise ValueError(f"fitted.{name} must be a number, got {got!r:.60}")
    got = float(got)
    if not (got == expected or abs(got - expected) <= _CLAIM_TOL * max(1.0, abs(expected))):
        raise ValueError(f"fitted.{name} = {got!r} does not hold: recomputed from the stored arrays it is "
                         f"{expected!r}; the file's claim is false")


def _label_names(y, m):
    """How the errors name the columns of a 2-D ``y``: ``y['h']`` for a DataFrame's, else ``y[:, 1]``."""
    columns = getattr(y, "columns", None)
    if columns is not None and hasattr(y, "iloc") and len(columns) == m:
        return [f"y[{plain_value(c)!r}]" for c in columns]
    return [f"y[:, {j}]" for j in range(m)]


def _label_columns(y, n_samples):
    """The columns of a 2-D ``y`` with at least two columns (one per private attribute), else None."""
    check_label_input(y)
    if hasattr(y, "iloc") and getattr(y, "ndim", 1) == 2:  # DataFrame: keep each column's dtype and pd.NA
        if y.shape[1] < 2:
            return None
        return [y.iloc[:, j] for j in range(y.shape[1])]
    try:
        arr = _as_label_array(y)  # a list whose columns mix label kinds stays objects (refused per column)
    except (TypeError, ValueError):
        return None
    if arr.ndim > 2:  # check_private_labels' "y must be 1-D" hid that a 2-D y is allowed
        raise ValueError(f"y must be 1-D (one label per user) or 2-D (one row per user, one column per private "
                         f"attribute), got shape {arr.shape}")
    if arr.ndim != 2 or arr.shape[1] < 2 or (arr.shape[0] == 1 and n_samples != 1):
        return None  # 1-D, one column, or one row of labels (check_private_labels ravels both)
    if arr.shape[0] != n_samples:
        hint = " (it looks transposed: pass y.T)" if arr.shape[1] == n_samples else ""
        raise ValueError(f"y has {arr.shape[0]} rows but X has {n_samples} users; a 2-D y holds one row per user "
                         f"and one column per private attribute{hint}")
    return [arr[:, j] for j in range(arr.shape[1])]
