"""A scikit-learn estimator around the Surprise recommender library.

The estimator learns an item model from a user x item rating matrix and
predicts ratings for the rows of ANY rating matrix with the same items: a row
seen at fit time or a new user (for example the released profile of a test
user coming out of a privacy mapper). New rows are *folded in*: their user
parameters are the regularised least-squares fit against the fitted item
parameters, in closed form, vectorised over users.
"""

import copy
import numbers
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils import check_random_source, check_rating_matrix, check_rating_scale
from ..utils._constraints import RANDOM_STATE_CONSTRAINT, NumberInterval
from ..utils._fit import atomic_fit
from ..utils._threads import single_threaded_blas
from ._split import _in_memory
from ..utils._validation import (canonical_sparse, check_allocation, check_bool_number_mix, check_rating_container,
                                 check_same_columns, check_same_index, check_table, is_sparse_frame, plain_value,
                                 refuse_nan_ratings, sparse_frame_as_csr, zero_fill_sparse_frame, user_stacklevel)

__all__ = ["SurpriseRecommender"]

_ALGORITHMS = ("SVD", "SVDpp", "BaselineOnly", "KNNBaseline")
# bound on the (users x d*d) / (items x d*d) scratch arrays of the fold-in
_FOLD_CELLS = 4_000_000
#: bytes held at the peak per value counted by the memory checks (measured, rounded up): per factor of SVD's and SVD++'s
#: factor matrices (31.5: Surprise's draws and the matrices), per cell of KNNBaseline's similarity matrix (43 user
#: based, 41 item based: the similarities, the counts and the sums of products Surprise keeps beside them), per cell
#: of a dense ``predict`` without ``mask=`` (119.5 for SVD: the fold-in and the prediction's temporaries)
_FACTOR_PEAK_BYTES, _SIMILARITY_PEAK_BYTES, _PREDICT_PEAK_BYTES = 40, 48, 128
#: the scale the Surprise algorithm is trained on: its default learning rates, regularisation and initialisation
#: are tuned for 1..5 stars (on 0..1 ratings SVD did worse than the global mean, and the relative RMSE costs
#: changed with the ratings' units), so ratings are mapped linearly from ``rating_scale_`` onto it and back
MODEL_SCALE = (1.0, 5.0)


def _surprise():
    import surprise

    return surprise


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _is_real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def algo_param_kinds(algorithm):
    """What each keyword argument of the Surprise algorithm named ``algorithm`` takes.

    Returns a dict ``{name: (expected, accepts)}``: ``expected`` says in words
    what the argument takes, ``accepts(value)`` tells whether a value is of
    that kind. Read from the algorithm's signature (``random_state`` left out:
    it is the estimator's parameter): a boolean default takes a boolean, a dict
    default a dict, an integer default a count (``init_mean`` a number), any
    other default a real number (None too where None is the default).
    """
    import inspect

    sig = inspect.signature(getattr(_surprise(), algorithm).__init__)
    kinds = {}
    for name, par in sig.parameters.items():
        if name in ("self", "random_state") or par.kind in (par.VAR_KEYWORD, par.VAR_POSITIONAL):
            continue
        default = par.default
        if isinstance(default, bool):
            kinds[name] = ("a boolean", lambda v: isinstance(v, (bool, np.bool_)))
        elif isinstance(default, dict):
            kinds[name] = ("a dict", lambda v: isinstance(v, dict))
        elif isinstance(default, int) and name != "init_mean":
            kinds[name] = ("an integer", _is_int)
        elif default is None:
            kinds[name] = ("a real number or None", lambda v: v is None or _is_real(v))
        else:
            kinds[name] = ("a real number", _is_real)
    return kinds


#: Surprise's similarity measures (``AlgoBase.compute_similarities``; it lower-cases the name)
SIM_NAMES = ("cosine", "msd", "pearson", "pearson_baseline")
_INT32_MAX = 2**31 - 1  # Surprise's similarity functions take min_support as a C int

#: the keys of a KNN algorithm's ``sim_options``: ``{key: (expected, right type, right value)}``
SIM_OPTIONS = {
    "name": ("one of " + ", ".join(repr(n) for n in SIM_NAMES), lambda v: isinstance(v, str),
             lambda v: v.lower() in SIM_NAMES),
    "user_based": ("a boolean", lambda v: isinstance(v, (bool, np.bool_)), lambda v: True),
    "min_support": (f"an integer in [0, {_INT32_MAX}]", _is_int, lambda v: 0 <= v <= _INT32_MAX),
    "shrinkage": ("a finite number >= 0", _is_real, lambda v: 0 <= v < np.inf),
}


def sim_options_problem(sim_options):
    """The first entry of a KNN algorithm's ``sim_options`` (a dict) that Surprise would misuse.

    ``(key, expected, kind)`` with ``kind`` ``"key"`` (Surprise ignores a key it does not know:
    ``{"nmae": "cosine"}`` ran the default similarity), ``"type"`` (``user_based="no"`` counted as
    true) or ``"value"`` (an unknown similarity name failed only in fit, after the baselines); None
    when every entry is right.
    """
    for key, value in sim_options.items():
        if key not in SIM_OPTIONS:
            return key, "a key among " + ", ".join(sorted(SIM_OPTIONS)), "key"
        expected, right_type, right_value = SIM_OPTIONS[key]
        if not right_type(value):
            return key, expected, "type"
        if not right_value(value):
            return key, expected, "value"
    return None


#: the most epochs an algorithm is asked for: each epoch is a pass over every rating, refitted in every fold
#: and at every privacy level; n_epochs=100000000 was accepted and never finished
MAX_EPOCHS = 10_000
#: counts that must be at least 1 (a count of 0 or less fails in Surprise's fit or fits nothing)
_COUNTS = ("n_factors", "n_epochs", "k", "n_cltr_u", "n_cltr_i")


def algo_param_range(key, value):
    """What the ``algo_params`` value ``value`` of ``key`` should be when it is out of range, else None.

    Counts (``n_factors``, ``n_epochs``, ``k``, ``n_cltr_u``, ``n_cltr_i``) at least 1 (``n_epochs`` at most
    :data:`MAX_EPOCHS`); learning rates (``lr_*``) finite and > 0; regularisation (``reg_*``), ``init_std_dev``,
    and NMF's ``init_low`` / ``init_high`` finite and >= 0; any other real number finite. Surprise failed
    mid-fit (``n_factors=-1``: "negative dimensions"), diverged (``lr_all=-1``) or ran without end."""
    if key in _COUNTS and _is_int(value):
        if value < 1:
            return "an integer >= 1"
        if key == "n_epochs" and value > MAX_EPOCHS:
            return (f"an integer in [1, {MAX_EPOCHS}] (each epoch is a pass over every rating, repeated in "
                    "every fold and at every privacy level)")
        return None
    if not _is_real(value) or isinstance(value, numbers.Integral) and key in _COUNTS:
        return None
    finite = bool(np.isfinite(value))
    if key.startswith("lr_"):
        return None if finite and value > 0 else "a finite number > 0 (a learning rate)"
    if key.startswith("reg_") or key in ("init_std_dev", "init_low", "init_high"):
        return None if finite and value >= 0 else "a finite number >= 0"
    return None if finite else "a finite number"


def algo_params_problem(algorithm, params):
    """The first fault of ``params`` (a dict) as keyword arguments of ``surprise.<algorithm>``, or None:
    ``(kind, key, expected)``. Kinds: ``"random_state"`` (set by the caller, never here), ``"key"`` (unknown;
    ``expected`` lists the keys it takes), ``"type"`` (``expected`` from :func:`algo_param_kinds`), ``"value"``
    (out of range, ``expected`` from :func:`algo_param_range`), and for
    ``sim_options`` ``"sim_key"``, ``"sim_type"``, ``"sim_value"`` (``key`` is the ``sim_options`` key, see
    :func:`sim_options_problem`). Shared by :func:`check_algo_params` and the pipelines' recommender table, which
    word their errors each their own way."""
    kinds = algo_param_kinds(algorithm)
    for key, value in params.items():
        if key == "random_state":
            return "random_state", key, None
        if key not in kinds:
            return "key", key, ", ".join(sorted(kinds))
        expected, accepts = kinds[key]
        if not accepts(value):
            return "type", key, expected
        if (expected_range := algo_param_range(key, value)) is not None:
            return "value", key, expected_range
        if key == "sim_options" and (problem := sim_options_problem(value)) is not None:
            sub, expected, kind = problem
            return "sim_" + kind, sub, expected
    return None


def check_algo_params(algorithm, algo_params):
    """Refuse an ``algo_params`` key the Surprise algorithm ``algorithm`` (a name) does not take, or a value
    of the wrong kind, before any fit: Surprise failed deep inside its fit (``reg_all="x"``), or
    took the value silently (``biased="no"`` as True, ``n_epochs=True`` as one epoch, an unknown
    key of KNNBaseline ignored). KNNBaseline's ``sim_options`` are checked key by key
    (:data:`SIM_OPTIONS`, :func:`sim_options_problem`)."""
    params = dict(algo_params or {})
    if "random_state" in params:
        raise ValueError("algo_params must not contain 'random_state' (got "
                         f"{params['random_state']!r}); use SurpriseRecommender(random_state=...)")
    problem = algo_params_problem(algorithm, params)
    if problem is None:
        return
    kind, key, expected = problem
    head = f"algo_params={algo_params!r} rejected by surprise.{algorithm}"
    if kind == "key":
        raise ValueError(f"{head}: unknown key {key!r}; it takes {expected}")
    if kind == "type":
        value = params[key]
        raise TypeError(f"{head}: {key} must be {expected}, got {value!r} ({type(value).__name__})")
    if kind == "value":
        raise ValueError(f"{head}: {key} must be {expected}, got {params[key]!r}")
    if kind == "sim_key":
        raise ValueError(f"{head}: sim_options has an unknown key {key!r}; it takes " + ", ".join(sorted(SIM_OPTIONS)))
    v = params["sim_options"][key]
    raise (TypeError if kind == "sim_type" else ValueError)(
        f"{head}: sim_options[{key!r}] must be {expected}, got {v!r} ({type(v).__name__})")


def _id_kind(v):
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, numbers.Number):
        return "number"
    return type(v).__name__ if not isinstance(v, (str, bytes)) else ("str" if isinstance(v, str) else "bytes")


def _id_array(ids):
    """Raw ids as a numpy array, object-typed where numpy would change an id.

    ``np.asarray`` turned ``["a", 5, 6.5]`` into the strings ``'5'`` and ``'6.5'`` (the user ``5`` then unknown),
    ints beyond int64 into float64 and ``[2**53, 2**53 + 1, 0.5]`` into two equal floats. An array, a pandas
    Index or Series keeps its own dtype.
    """
    if isinstance(ids, (np.ndarray, pd.Index, pd.Series)):
        return np.asarray(ids)
    values = list(ids) if not isinstance(ids, (str, bytes)) and np.ndim(ids) > 0 else [ids]
    if any(isinstance(v, tuple) for v in values):
        # tuple ids (RatingsFrame keeps them): np.asarray made a 2-D array of their fields, refused as "got shape
        # (20, 2)" by fit and flattened into separate ids by predict_pairs
        out = np.empty(len(values), dtype=object)
        for k, v in enumerate(values):
            out[k] = v
        return out
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype == object:
        return arr
    exact = len({_id_kind(v) for v in values}) <= 1
    if exact and arr.dtype.kind in "fc":  # an int beyond float64's precision, or beyond int64
        exact = bool(np.all(np.array(values, dtype=object) == arr.astype(object)))
    if exact:
        return arr
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _lookup_ids(known, requested, what):
    """Positions of the ``requested`` raw ids among the ``known`` ones (-1: unknown), warning about unknown ids
    (and naming the known id one of them differs from only in type)."""
    known = pd.Index(known)
    at = known.get_indexer(requested)
    missing = at < 0
    if missing.any():
        unknown = pd.unique(pd.Series(requested[missing], dtype=object))
        example = plain_value(unknown[0])
        hint = ""
        by_text = pd.Index([str(k) for k in known])
        match = next(((u, known[j]) for u in unknown for j in [by_text.get_indexer([str(u)])[0]] if j >= 0), None)
        if match is not None:
            u, k = plain_value(match[0]), plain_value(match[1])
            hint = f"; {u!r} ({type(u).__name__}) differs from {what} {k!r} ({type(k).__name__}) only in type"
        fallback = "mu + b_i" if what == "user" else "mu + b_u"
        warnings.warn(f"{len(unknown)} of the {len(pd.unique(pd.Series(requested, dtype=object)))} {what} ids "
                      f"requested match no {what} of the fit, for example {example!r}{hint}; they get the "
                      f"prediction of an unknown {what} ({fallback})", UserWarning, stacklevel=user_stacklevel())
    return at


def _mask_matrix(mask):
    """``predict``'s ``mask`` as a CSR matrix of its support, never densified; a missing cell refused.

    ``sp.csr_matrix(mask)`` read a NaN (the held-out ratings in pivot form, NaN where not held out; a sparse frame
    filled with NaN) as nonzero, so every such cell was predicted without a word; a pandas nullable boolean frame
    failed with "scipy.sparse does not support dtype object" (with a pd.NA: "boolean value of NA is ambiguous"),
    and a sparse frame was densified.
    """
    check_table(mask, "mask")
    if is_sparse_frame(mask):
        return sp.csr_matrix(sparse_frame_as_csr(mask, "mask"))  # unstored NaN cells refused there
    if sp.issparse(mask):
        M = sp.csr_matrix(mask)
        values = M.data
        missing, first = (np.isnan(values) if values.dtype.kind == "f" else np.zeros(values.shape, bool)), None
        if missing.any():
            C = M.tocoo()
            k = int(np.flatnonzero(np.isnan(C.data))[0])
            first = (int(C.row[k]), int(C.col[k]))
    else:
        if isinstance(mask, pd.DataFrame):
            missing = mask.isna().to_numpy(dtype=bool)
            arr = None if missing.any() else mask.to_numpy(dtype=np.float64)
        else:
            arr = np.asarray(mask)
            missing = np.asarray(pd.isna(arr), dtype=bool) if arr.dtype == object or arr.dtype.kind == "f" else None
        first = tuple(int(v) for v in np.argwhere(missing)[0]) if missing is not None and missing.ndim == 2 \
            and missing.any() else None
        M = None if first is not None else sp.csr_matrix(arr)
    if first is not None:
        raise ValueError(f"mask holds {int(np.sum(missing))} missing cell(s) (NaN, None or pd.NA; the first at row "
                         f"{first[0]}, column {first[1]}); expected nonzero (True) where a prediction is wanted and 0 "
                         "(False) elsewhere: a NaN is nonzero, so such a cell would be predicted; fill them with 0 "
                         "(mask.fillna(0) or np.nan_to_num(mask, nan=0.0))")
    return M


def _check_same_labels(X, y, name):
    """Refuse two user x item frames whose rows or columns are labelled differently (they are paired cell by
    cell, by position)."""
    check_same_index(X, y, name)
    check_same_columns(X, y, name)


class SurpriseRecommender(BaseEstimator):
    r"""Matrix-factorisation / baseline / neighbourhood recommender (Surprise).

    Learns from a user x item rating matrix (0 = not rated; dense or sparse)
    and predicts ratings. Usable as the last step of a
    :class:`sklearn.pipeline.Pipeline` after a privacy mapper: ``fit(X, y)``
    ignores ``y`` (the private attribute), and ``score(X, Y)`` rates the
    held-out true ratings ``Y`` of the users whose (possibly released)
    profiles are the rows of ``X``.

    **Rating units.** Surprise's default learning rates, regularisation and
    initialisation assume ratings of 1 to 5 stars: on other units the same
    ratings gave another model (on 0..1 ratings SVD did worse than the global
    mean), so RMSE costs relative to a reference changed with the units. The
    algorithm is therefore trained on the ratings mapped linearly from
    ``rating_scale_`` onto 1..5 (the identity for a 1..5 scale), the rows of
    ``X`` are folded in on that scale too, and every prediction (hence
    :meth:`rmse`, :meth:`score` and :meth:`predict_pairs`) is mapped back to
    ``rating_scale_``: the RMSE is in the caller's units, and multiplying the
    ratings and the scale by a constant multiplies it by that constant. The
    fitted parameters (``global_mean_``, biases, factors) and ``algo_params``
    / ``fold_in_reg`` are in the 1..5 units.

    **Predictions for a rating matrix (fold-in).** :meth:`predict`,
    :meth:`score` and :meth:`rmse` treat every row of ``X`` as a user
    described by that row only: its user parameters are computed from its
    ratings against the fitted item parameters, whether or not the row was in
    the training matrix (so a prediction never depends on row order or on
    which users happened to be trained on). For SVD (and SVD++ with the
    implicit term computed from the row's rated items, Koren 2008) the user
    bias and factors ``z_u = (b_u, p_u)`` solve

    .. math::

        \min_{b_u, p_u} \sum_{i \in I_u} (r_{ui} - \mu - b_i - b_u - q_i^\top p_u)^2
        + \lambda_u (b_u^2 + \|p_u\|^2),

    i.e. ``(F_u^T F_u + Lambda_u) z_u = F_u^T t_u`` with rows ``[1, q_i]`` in
    ``F_u`` and ``t_ui = r_ui - mu - b_i``. With ``fold_in_reg="auto"``,
    ``Lambda_u = n_u * diag(reg_bu, reg_pu, ...)``: Surprise's SGD applies the
    regulariser once per rating, so this is the stationary point of the very
    objective Surprise minimises with the item side held fixed; with a number
    ``lam``, ``Lambda_u = lam * I``. For BaselineOnly/KNNBaseline the user
    baseline is Surprise's own ALS (``sum(r - mu - b_i) / (reg_u + n_u)``) or
    SGD (``sum(r - mu - b_i) / (n_u (1 + reg))``) user step. KNNBaseline uses
    item-item similarities (``user_based=False``, set by default here), so a
    new row's prediction is its baseline plus the similarity-weighted
    deviations on its own k most similar rated items, exactly Surprise's
    ``KNNBaseline.estimate``. A row without ratings gets the baseline
    ``mu + b_i`` (the global mean for unbiased SVD).

    The fitted Surprise user parameters are used only by
    :meth:`predict_pairs`, which addresses users and items by raw id.

    Parameters
    ----------
    algorithm : {"SVD", "SVDpp", "BaselineOnly", "KNNBaseline"} or surprise algorithm, default="SVD"
        The Surprise algorithm, by name or as an (unfitted) instance of one of
        these four classes (deep-copied at fit).
    rating_scale : tuple (low, high) or None, default=None
        The rating scale; predictions are clipped to it and training ratings
        must lie in it (the algorithm sees them mapped from it onto 1..5,
        see above). None infers it from the training ratings (min, max).
        A scale given must not hold 0, which means "not rated" in a rating matrix.
    algo_params : dict or None, default=None
        Keyword arguments of the Surprise algorithm (for example
        ``{"n_factors": 50, "n_epochs": 30, "reg_all": 0.05}``); must not
        contain ``random_state`` (use the estimator's parameter). Checked
        before the data is read; KNNBaseline's ``sim_options`` key by key:
        ``name`` (``"cosine"``, ``"msd"``, ``"pearson"`` or
        ``"pearson_baseline"``, the default here), ``user_based`` (False here),
        ``min_support`` and ``shrinkage``.
    fold_in_reg : "auto" or float >= 0, default="auto"
        Regularisation of the fold-in (see above); only for SVD / SVD++.
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        Seed of Surprise's factor initialisation. ``None`` takes a seed from
        the operating system's entropy (also for an ``algorithm`` instance
        whose own ``random_state`` is None; an instance's own seed is kept);
        an int makes fits reproducible.

    Attributes
    ----------
    algorithm_ : surprise.AlgoBase
        The fitted Surprise algorithm (its inner ids are not row indices; use
        the arrays below).
    rating_scale_ : tuple of float
        The scale (given or inferred) mapped onto the model's 1..5.
    global_mean_ : float
        The training ratings' mean in the model's 1..5 units (as the biases
        and factors below).
    user_bias_ : ndarray of shape (n_users,)
        Fitted user biases in row order (0 for rows without ratings).
    item_bias_ : ndarray of shape (n_features_in_,)
        Item biases in column order (0 for items never rated).
    user_factors_, item_factors_ : ndarray or None
        SVD / SVD++ factors in row / column order (zeros where unseen).
    user_ids_ : ndarray of shape (n_users,)
        Raw user ids of the training rows (``arange`` unless given to fit).
    item_ids_ : ndarray of shape (n_features_in_,)
        Raw item ids of the columns.
    n_features_in_ : int
        Number of items.
    kind_ : str
        Class name of the fitted Surprise algorithm (``"SVD"``, ``"SVDpp"``,
        ``"BaselineOnly"`` or ``"KNNBaseline"``).
    biased_ : bool
        Whether the model has baselines ``mu + b_u + b_i`` (unbiased SVD has not).
    implicit_factors_ : ndarray of shape (n_features_in_, n_factors) or None
        SVD++ implicit item factors ``y_j`` in column order; None otherwise.
    item_similarity_ : ndarray of shape (n_features_in_, n_features_in_) or None
        KNNBaseline item-item similarities in column order (item-based only).
    item_based_, k_, min_k_ : bool, int, int
        KNNBaseline's similarity kind and neighbourhood sizes (KNNBaseline only).
    X_fit_ : scipy.sparse.csr_matrix of shape (n_users, n_features_in_)
        The training ratings, used by :meth:`predict_pairs` (SVD++ implicit term
        and KNN neighbourhoods of known users).

    See Also
    --------
    privrelease.recommender.holdout_split : Hide a fraction of each user's ratings.

    References
    ----------
    N. Hug, "Surprise: A Python library for recommender systems", JOSS 2020.
    Y. Koren, "Factorization meets the neighborhood", KDD 2008 (SVD++ and
    baselines). Salamatian et al., Sec. VI-C and Table I: RMSE of a matrix
    factorisation recommender on original vs privacy-mapped ratings.

    Examples
    --------
    >>> from privrelease.datasets import make_ratings
    >>> from privrelease.recommender import SurpriseRecommender, holdout_split
    >>> X, a, _ = make_ratings(300, 40, random_state=0)
    >>> X_train, X_test = holdout_split(X, 0.2, random_state=0)
    >>> rec = SurpriseRecommender(random_state=0).fit(X_train)
    >>> rmse = rec.rmse(X_train, X_test)
    >>> bool(0.5 < rmse < 1.5)
    True
    """

    _parameter_constraints = {
        "algorithm": [StrOptions(set(_ALGORITHMS)), HasMethods(["fit", "estimate"])],
        "rating_scale": [tuple, list, None],
        "algo_params": [dict, None],
        "fold_in_reg": [StrOptions({"auto"}), NumberInterval(numbers.Real, 0, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, algorithm="SVD", *, rating_scale=None, algo_params=None,
                 fold_in_reg="auto", random_state=None):
        self.algorithm = algorithm
        self.rating_scale = rating_scale
        self.algo_params = algo_params
        self.fold_in_reg = fold_in_reg
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = None
        tags.target_tags.required = False
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = False
        tags.non_deterministic = False
        return tags

    # ------------------------------------------------------------------ fit
    def _check_scale(self):
        return None if self.rating_scale is None else check_rating_scale(self.rating_scale)

    def _to_model(self, values):
        """Ratings in ``rating_scale_`` mapped linearly onto :data:`MODEL_SCALE` (1..5: unchanged)."""
        low, high = self.rating_scale_
        if (low, high) == MODEL_SCALE:
            return values
        return MODEL_SCALE[0] + (values - low) * ((MODEL_SCALE[1] - MODEL_SCALE[0]) / (high - low))

    def _to_user(self, est):
        """The model's estimates clipped to :data:`MODEL_SCALE`, mapped back onto ``rating_scale_``."""
        est = np.clip(est, *MODEL_SCALE)
        low, high = self.rating_scale_
        if (low, high) == MODEL_SCALE:
            return est
        return np.clip(low + (est - MODEL_SCALE[0]) * ((high - low) / (MODEL_SCALE[1] - MODEL_SCALE[0])), low, high)

    def _model_rows(self, Xr):
        """A copy of the CSR rows ``Xr`` with their ratings in the model's units."""
        if tuple(self.rating_scale_) == MODEL_SCALE:
            return Xr
        Xm = Xr.copy()
        Xm.data = self._to_model(Xm.data)
        return Xm

    def _make_algorithm(self):
        surprise = _surprise()
        params = dict(self.algo_params or {})
        if isinstance(self.algorithm, str):
            cls = getattr(surprise, self.algorithm)
            if self.algorithm == "KNNBaseline":
                sim = {"name": "pearson_baseline", "user_based": False}
                sim.update(params.get("sim_options") or {})
                params["sim_options"] = sim
                params.setdefault("verbose", False)
            if self.algorithm in ("BaselineOnly", "KNNBaseline"):
                params.setdefault("verbose", False)
            if self.algorithm in ("SVD", "SVDpp"):
                params["random_state"] = check_random_source(self.random_state).spawn_seed()
            try:
                return cls(**params)
            except TypeError as exc:
                raise ValueError(f"algo_params {self.algo_params!r} rejected by surprise."
                                 f"{self.algorithm}: {exc}") from None
        algo = copy.deepcopy(self.algorithm)
        kind = type(algo).__name__
        if kind not in _ALGORITHMS:
            raise ValueError(f"algorithm must be one of {_ALGORITHMS} (name or instance), "
                             f"got an instance of {kind}")
        if hasattr(algo, "random_state") and (self.random_state is not None or algo.random_state is None):
            # random_state=None: a seed from the operating system's entropy, as for a name; an instance left
            # unseeded took its initialisation from numpy's global state (np.random.seed(k) replayed it)
            algo.random_state = check_random_source(self.random_state).spawn_seed()
        return algo

    @atomic_fit
    def fit(self, X, y=None, *, user_ids=None, item_ids=None):
        """Fit the Surprise algorithm on the nonzero entries of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)
            Ratings, 0 = not rated. At least one rating.
        y : ignored
            Accepted so the recommender can end a Pipeline whose ``fit``
            receives the private attribute (used by the mapper only).
        user_ids : array-like of shape (n_users,), default=None
            Raw ids of the rows (default ``0 .. n_users - 1``).
        item_ids : array-like of shape (n_items,), default=None
            Raw ids of the columns (default ``0 .. n_items - 1``).

        Returns
        -------
        self
        """
        self._validate_params()
        if isinstance(self.algorithm, str) and self.algorithm not in _ALGORITHMS:
            raise ValueError(f"algorithm must be one of {_ALGORITHMS}, got {self.algorithm!r}")
        if isinstance(self.algorithm, str):
            check_algo_params(self.algorithm, self.algo_params)  # before the data is read
        elif self.algo_params:
            raise ValueError("algo_params must be None when algorithm is an instance, got "
                             f"{self.algo_params!r}")
        scale = self._check_scale()
        X = _in_memory(X)
        check_rating_container(X)
        X = canonical_sparse(X)  # warned of once: validate_data kept a COO matrix non-canonical
        check_table(X)
        X = zero_fill_sparse_frame(X)  # NaN-filled sparse columns: pandas' "fill value must be 0" in scikit-learn
        refuse_nan_ratings(X)  # a pivot table: scikit-learn's "consider HistGradientBoostingClassifier"
        X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"), dtype=np.float64,
                          reset=True)
        Xc, _ = check_rating_matrix(X, rating_range=scale)
        Xc = sp.csr_matrix(Xc)
        Xc.sort_indices()
        if Xc.nnz == 0:
            raise ValueError(f"X has no ratings (all {Xc.shape[0]} x {Xc.shape[1]} entries are 0); "
                             "the recommender needs at least one")
        n_users, n_items = Xc.shape
        self.user_ids_ = self._check_ids(user_ids, n_users, "user_ids")
        self.item_ids_ = self._check_ids(item_ids, n_items, "item_ids")
        if scale is None:
            scale = (float(Xc.data.min()), float(Xc.data.max()))
            if scale[0] == scale[1]:
                scale = (scale[0] - 1.0, scale[1]) if scale[0] > 1 else (scale[0], scale[0] + 1.0)
        self.rating_scale_ = scale

        surprise = _surprise()
        rows = np.repeat(np.arange(n_users), np.diff(Xc.indptr))
        df = pd.DataFrame({"u": rows, "i": Xc.indices.astype(np.int64), "r": self._to_model(Xc.data)})
        reader = surprise.Reader(rating_scale=MODEL_SCALE)
        trainset = surprise.Dataset.load_from_df(df, reader).build_full_trainset()
        algo = self._make_algorithm()
        self._check_model_size(algo, trainset, n_items)
        if isinstance(self.algorithm, str):
            try:
                algo.fit(trainset)
            except (ValueError, TypeError, NameError, ZeroDivisionError, OverflowError) as exc:
                # a bad algo_params value (n_factors=-5, init_std_dev=-1, an unknown similarity) fails
                # deep inside surprise / numpy
                kind = TypeError if isinstance(exc, TypeError) else ValueError
                raise kind(f"surprise.{self.algorithm} could not be fitted with algo_params="
                           f"{self.algo_params!r}: {type(exc).__name__}: {exc}") from None
        else:
            algo.fit(trainset)
        self.algorithm_ = algo
        self.kind_ = type(algo).__name__

        u_rows = np.array([trainset.to_raw_uid(k) for k in range(trainset.n_users)], dtype=np.int64)
        i_cols = np.array([trainset.to_raw_iid(k) for k in range(trainset.n_items)], dtype=np.int64)
        self.global_mean_ = float(trainset.global_mean)
        self.user_bias_ = np.zeros(n_users)
        self.item_bias_ = np.zeros(n_items)
        self.user_factors_ = self.item_factors_ = self.implicit_factors_ = None
        self.item_similarity_ = None
        kind = self.kind_
        if kind in ("SVD", "SVDpp"):
            biased = getattr(algo, "biased", True)
            self.biased_ = bool(biased)
            if self.biased_:
                self.user_bias_[u_rows] = np.asarray(algo.bu)
                self.item_bias_[i_cols] = np.asarray(algo.bi)
            f = np.asarray(algo.pu).shape[1]
            self.user_factors_ = np.zeros((n_users, f))
            self.user_factors_[u_rows] = np.asarray(algo.pu)
            self.item_factors_ = np.zeros((n_items, f))
            self.item_factors_[i_cols] = np.asarray(algo.qi)
            if kind == "SVDpp":
                self.implicit_factors_ = np.zeros((n_items, f))
                self.implicit_factors_[i_cols] = np.asarray(algo.yj)
        else:
            self.biased_ = True
            self.user_bias_[u_rows] = np.asarray(algo.bu)
            self.item_bias_[i_cols] = np.asarray(algo.bi)
            if kind == "KNNBaseline":
                self.item_based_ = not algo.sim_options.get("user_based", True)
                self.k_ = int(algo.k)
                self.min_k_ = int(algo.min_k)
                if self.k_ < 1 or self.min_k_ < 0:
                    raise ValueError(f"KNNBaseline needs k >= 1 neighbours and min_k >= 0, got k={algo.k!r}, "
                                     f"min_k={algo.min_k!r} (algo_params={self.algo_params!r})")
                if self.item_based_:
                    sim = np.zeros((n_items, n_items))
                    sim[np.ix_(i_cols, i_cols)] = np.asarray(algo.sim)
                    self.item_similarity_ = sim
        learned = [("global mean", np.array([self.global_mean_])), ("user biases", self.user_bias_),
                   ("item biases", self.item_bias_), ("user factors", self.user_factors_),
                   ("item factors", self.item_factors_), ("implicit factors", self.implicit_factors_),
                   ("item similarities", self.item_similarity_)]
        for what, arr in learned:
            if arr is not None and not np.all(np.isfinite(arr)):
                # lr_all=1e10, reg_all=inf or lr_all=nan used to give NaN for every predicted rating
                raise ValueError(
                    f"{self.kind_} diverged: its {what} hold {int(np.sum(~np.isfinite(arr)))} non-finite "
                    f"value(s) with algo_params={self.algo_params!r}; every prediction would be NaN. Use a "
                    "smaller learning rate (lr_all) or finite regularisation (reg_all)"
                )
        self.X_fit_ = Xc
        return self

    @staticmethod
    def _check_model_size(algo, trainset, n_items):
        """Refuse an algorithm whose factor matrices (SVD, SVD++, or an instance with ``n_factors``) or
        dense similarity matrix (KNN: users x users or items x items, computed by Surprise, then an items x
        items copy in column order) cannot fit in memory, before Surprise allocates it (numpy's bare
        MemoryError, or the machine swapping)."""
        from surprise.prediction_algorithms.knns import SymmetricAlgo

        factors = getattr(algo, "n_factors", None)
        if isinstance(factors, numbers.Integral) and factors > 0:
            # SVD and SVD++ hold users x factors and items x factors matrices (SVD++ a second items x factors
            # one): n_factors=10**9 reached numpy's bare "Unable to allocate 224. GiB" inside Surprise
            check_allocation((trainset.n_users + 2 * trainset.n_items) * int(factors),
                             f"algo_params n_factors={int(factors)}: {type(algo).__name__}'s factor matrices "
                             f"({trainset.n_users} users and {trainset.n_items} items x {int(factors)} factors)",
                             itemsize=_FACTOR_PEAK_BYTES)
        if not isinstance(algo, SymmetricAlgo):  # BaselineOnly has sim_options too, and no similarity
            return
        user_based = algo.sim_options.get("user_based", True)
        n = trainset.n_users if user_based else trainset.n_items
        if user_based:
            check_allocation(n * n, f"{type(algo).__name__}'s user similarities ({n} rated users squared)",
                             itemsize=_SIMILARITY_PEAK_BYTES)
        else:
            # the two are held one after the other (measured: the peak is the larger, not the sum)
            check_allocation(max(n * n, n_items * n_items), f"{type(algo).__name__}'s item similarities ({n} rated "
                                                            f"items squared, then {n_items} items squared)",
                             itemsize=_SIMILARITY_PEAK_BYTES)

    @staticmethod
    def _check_ids(ids, n, name):
        if ids is None:
            return np.arange(n)
        ids = _id_array(ids)
        if ids.ndim != 1 or ids.shape[0] != n:
            raise ValueError(f"{name} must have one id per {'row' if name == 'user_ids' else 'column'} "
                             f"({n}), got shape {ids.shape}")
        check_bool_number_mix(ids, name, what="id", whole="the ids")
        # a missing id (as RatingsFrame refuses it): NaN != NaN, so two NaN ids passed the uniqueness test below,
        # and predict_pairs could never find the user again
        missing = [i for i, v in enumerate(ids.tolist()) if v is None or v is pd.NA or v is pd.NaT
                   or (isinstance(v, float) and v != v)]
        if missing:
            raise ValueError(f"{name} must not hold missing values (None, NaN, NA): got {ids.tolist()[missing[0]]!r} "
                             f"at position {missing[0]} ({len(missing)} in all); expected one id per "
                             f"{'row' if name == 'user_ids' else 'column'}")
        if pd.Index(ids).has_duplicates:
            raise ValueError(f"{name} must be unique, got duplicates such as "
                             f"{plain_value(pd.Index(ids)[pd.Index(ids).duplicated()][0])!r}")
        return ids

    # ------------------------------------------------------------ fold-in
    def _baseline_fold_in(self, Xr):
        """User baselines of the rows of ``Xr`` (BaselineOnly / KNNBaseline)."""
        opts = self.algorithm_.bsl_options
        n_u = np.diff(Xr.indptr).astype(np.float64)
        dev = Xr.copy()
        dev.data = dev.data - self.global_mean_ - self.item_bias_[Xr.indices]
        s = np.asarray(dev.sum(axis=1)).ravel()
        if opts.get("method", "als") == "sgd":
            den = n_u * (1.0 + opts.get("reg", 0.02))
        else:
            den = opts.get("reg_u", 15) + n_u
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n_u > 0, s / np.where(den > 0, den, 1.0), 0.0)

    def _mf_fold_in(self, Xr):
        """Closed-form ridge fold-in for SVD / SVD++ rows: (b_u, p_u, implicit_u)."""
        algo = self.algorithm_
        Q = self.item_factors_
        n_rows, n_items = Xr.shape
        f = Q.shape[1]
        n_u = np.diff(Xr.indptr).astype(np.float64)
        implicit = np.zeros((n_rows, f))
        if self.implicit_factors_ is not None:
            ind = Xr.copy()
            ind.data = np.ones_like(ind.data)
            with np.errstate(invalid="ignore", divide="ignore"):
                scale = np.where(n_u > 0, 1.0 / np.sqrt(np.maximum(n_u, 1)), 0.0)
            implicit = np.asarray(ind @ self.implicit_factors_) * scale[:, None]
        if self.biased_:
            F = np.hstack([np.ones((n_items, 1)), Q])
            reg_diag = np.r_[algo.reg_bu, np.full(f, algo.reg_pu)]
        else:
            F = Q
            reg_diag = np.full(f, algo.reg_pu)
        d = F.shape[1]
        rows = np.repeat(np.arange(n_rows), np.diff(Xr.indptr))
        mu = self.global_mean_ if self.biased_ else 0.0
        t = Xr.data - mu - self.item_bias_[Xr.indices]
        if self.implicit_factors_ is not None:  # SVD++: subtract q_i . implicit_u
            t = t - np.einsum("ij,ij->i", Q[Xr.indices], implicit[rows])
        if self.fold_in_reg == "auto":
            lam = n_u[:, None] * reg_diag[None, :]
        else:
            lam = np.full((n_rows, d), float(self.fold_in_reg))
        Z = np.zeros((n_rows, d))
        # Users are bucketed by their number of ratings (next power of two), so each
        # bucket is a dense batch (users, L, d) with little padding: the Gram
        # matrices F_u^T F_u and right-hand sides F_u^T t_u are batched matmuls.
        counts = np.diff(Xr.indptr)
        bucket = np.where(counts > 0, np.ceil(np.log2(np.maximum(counts, 1))), -1).astype(int)
        idx = np.arange(d)
        with single_threaded_blas():
            for bkt in np.unique(bucket):
                members = np.flatnonzero(bucket == bkt)
                if bkt < 0:  # users without ratings: z = 0 (the baseline)
                    continue
                L = int(2 ** bkt)
                chunk = max(1, _FOLD_CELLS // (d * max(L, d)))
                for s in range(0, members.size, chunk):
                    users = members[s:s + chunk]
                    sub_ptr = Xr.indptr[users]
                    sub_n = counts[users]
                    local = np.repeat(np.arange(users.size), sub_n)
                    pos = np.arange(local.size) - np.repeat(np.cumsum(sub_n) - sub_n, sub_n)
                    gather = np.repeat(sub_ptr, sub_n) + pos
                    Fpad = np.zeros((users.size, L, d))
                    Fpad[local, pos] = F[Xr.indices[gather]]
                    tpad = np.zeros((users.size, L))
                    tpad[local, pos] = t[gather]
                    G = np.matmul(Fpad.transpose(0, 2, 1), Fpad)
                    rhs = np.matmul(Fpad.transpose(0, 2, 1), tpad[:, :, None])
                    G[:, idx, idx] += lam[users] + 1e-12  # jitter: fold_in_reg=0 guard
                    Z[users] = np.linalg.solve(G, rhs)[:, :, 0]
        if self.biased_:
            return Z[:, 0], Z[:, 1:], implicit
        return np.zeros(n_rows), Z, implicit

    def _knn_deviation(self, Xr, b_u, rows, cols):
        """Surprise KNNBaseline (item-based) neighbourhood term for (row, col) pairs."""
        out = np.zeros(rows.shape[0])
        sim, k, min_k = self.item_similarity_, self.k_, self.min_k_
        order = np.argsort(rows, kind="stable")
        bounds = np.searchsorted(rows[order], np.arange(Xr.shape[0] + 1))
        mu, bi = self.global_mean_, self.item_bias_
        for r in range(Xr.shape[0]):
            sel = order[bounds[r]:bounds[r + 1]]
            if sel.size == 0:
                continue
            lo, hi = Xr.indptr[r], Xr.indptr[r + 1]
            if hi == lo:
                continue
            J = Xr.indices[lo:hi]
            dev = Xr.data[lo:hi] - (mu + bi[J] + b_u[r])
            S = sim[np.ix_(cols[sel], J)]
            if J.size > k:
                top = np.argpartition(-S, k - 1, axis=1)[:, :k]
                S = np.take_along_axis(S, top, axis=1)
                D = dev[top]
            else:
                D = np.broadcast_to(dev, S.shape)
            pos = S > 0
            Sp = np.where(pos, S, 0.0)
            sum_sim = Sp.sum(axis=1)
            ok = (pos.sum(axis=1) >= min_k) & (sum_sim > 0)
            val = np.zeros(sel.size)
            val[ok] = (Sp * D).sum(axis=1)[ok] / sum_sim[ok]
            out[sel] = val
        return out

    def _predict_entries(self, Xr, rows, cols):
        """Predicted ratings at (rows, cols) for users described by the rows of Xr (both in the user's units)."""
        return self._to_user(self._model_entries(self._model_rows(Xr), rows, cols))

    def _model_entries(self, Xr, rows, cols):
        """The model's estimates (its units, unclipped) at (rows, cols) for the rows of Xr (in its units)."""
        kind = self.kind_
        mu = self.global_mean_
        n_u = np.diff(Xr.indptr)
        if kind in ("SVD", "SVDpp"):
            b_u, P, implicit = self._mf_fold_in(Xr)
            Q = self.item_factors_
            U = P + implicit
            est = np.empty(rows.shape[0])
            step = max(1, _FOLD_CELLS // max(Q.shape[1], 1))  # bound the gathered factors
            for s in range(0, rows.shape[0], step):
                est[s:s + step] = np.einsum("ij,ij->i", Q[cols[s:s + step]], U[rows[s:s + step]])
            if self.biased_:
                est += mu + b_u[rows] + self.item_bias_[cols]
            else:
                est = np.where(n_u[rows] > 0, est, mu)
        else:
            b_u = self._baseline_fold_in(Xr)
            est = mu + b_u[rows] + self.item_bias_[cols]
            if kind == "KNNBaseline":
                if self.item_similarity_ is not None:
                    est += self._knn_deviation(Xr, b_u, rows, cols)
                else:
                    warnings.warn(
                        "KNNBaseline with user_based=True cannot fold in new rows; their "
                        "predictions are the baselines mu + b_u + b_i (use the default "
                        "item-based similarity for neighbourhood fold-in)", UserWarning,
                        stacklevel=user_stacklevel())
        return est

    def _check_X(self, X, name="X"):
        check_is_fitted(self)
        X = _in_memory(X)
        check_rating_container(X)
        X = canonical_sparse(X)  # warned of once: validate_data kept a COO matrix non-canonical
        check_table(X)
        X = zero_fill_sparse_frame(X, name)
        refuse_nan_ratings(X, name)  # a pivot table: scikit-learn's "consider HistGradientBoostingClassifier"
        X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"), dtype=np.float64,
                          reset=False)
        Xc, _ = check_rating_matrix(X, name=name)
        Xc = sp.csr_matrix(Xc)
        Xc.sort_indices()
        return Xc

    # ------------------------------------------------------------ public API
    def predict(self, X, *, mask=None):
        """Predicted ratings of every item for the users described by the rows of ``X``.

        Each row is folded in (see the class docstring).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_rows, n_items)
            The users' (released) ratings, 0 = not rated.
        mask : {array-like, sparse matrix} of shape (n_rows, n_items), default=None
            When given, only the entries where ``mask`` is nonzero are
            predicted and a CSR matrix with that support is returned (use this
            for large matrices). Otherwise a dense array.

        Returns
        -------
        ndarray of shape (n_rows, n_items) or csr_matrix
        """
        X, mask = _in_memory(X), _in_memory(mask)
        if mask is not None:
            _check_same_labels(X, mask, "mask")
        Xr = self._check_X(X)
        if mask is not None:
            M = _mask_matrix(mask)
            if M.shape != Xr.shape:
                raise ValueError(f"mask has shape {M.shape} but X has shape {Xr.shape}")
            M.eliminate_zeros()
            M.sort_indices()
            rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
            vals = self._predict_entries(Xr, rows, M.indices)
            return sp.csr_matrix((vals, M.indices.copy(), M.indptr.copy()), shape=M.shape)
        return self._predict_full(Xr)

    def _predict_full(self, Xr):
        """Dense (n_rows, n_items) predictions without per-entry gathers of factors."""
        n_rows, n_items = Xr.shape
        check_allocation(n_rows * n_items, f"predict(X) of {n_rows} users x {n_items} items without mask= "
                                           "(dense predictions of every cell; pass mask= to predict some)",
                         itemsize=_PREDICT_PEAK_BYTES)
        kind = self.kind_
        mu = self.global_mean_
        Xr = self._model_rows(Xr)
        if kind in ("SVD", "SVDpp"):
            b_u, P, implicit = self._mf_fold_in(Xr)
            out = (P + implicit) @ self.item_factors_.T
            if self.biased_:
                out += mu + b_u[:, None] + self.item_bias_[None, :]
            else:
                out[np.diff(Xr.indptr) == 0] = mu
            return self._to_user(out)
        if kind == "BaselineOnly":
            b_u = self._baseline_fold_in(Xr)
            return self._to_user(mu + b_u[:, None] + self.item_bias_[None, :])
        out = np.empty((n_rows, n_items))
        chunk = max(1, _FOLD_CELLS // max(n_items, 1))
        cols_one = np.arange(n_items)
        for s in range(0, n_rows, chunk):
            e = min(n_rows, s + chunk)
            rows = np.repeat(np.arange(e - s), n_items)
            cols = np.tile(cols_one, e - s)
            out[s:e] = self._to_user(self._model_entries(Xr[s:e], rows, cols)).reshape(e - s, n_items)
        return out

    def rmse(self, X, y):
        """Root mean squared error on held-out true ratings.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_rows, n_items)
            What the users released / what the recommender sees of them
            (training rows or new users; folded in).
        y : {array-like, sparse matrix} of shape (n_rows, n_items)
            Their held-out TRUE ratings (0 = not held out). At least one.

        Returns
        -------
        float
        """
        X, y = _in_memory(X), _in_memory(y)
        _check_same_labels(X, y, "y")
        Xr = self._check_X(X)
        Y, _ = check_rating_matrix(y, name="y")
        Y = sp.csr_matrix(Y)
        if Y.shape != Xr.shape:
            raise ValueError(f"y (held-out ratings) has shape {Y.shape} but X has shape {Xr.shape}; "
                             "they must describe the same users and items")
        if Y.nnz == 0:
            raise ValueError("y has no held-out ratings (all entries are 0)")
        Y.sort_indices()
        rows = np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr))
        pred = self._predict_entries(Xr, rows, Y.indices)
        return float(np.sqrt(np.mean((pred - Y.data) ** 2)))

    def score(self, X, y, sample_weight=None):
        """Negative RMSE on held-out ratings (greater is better, scikit-learn style).

        See :meth:`rmse`. ``sample_weight`` is not supported (must be None).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_rows, n_items)
            What the users released / what the recommender sees of them.
        y : {array-like, sparse matrix} of shape (n_rows, n_items)
            Their held-out TRUE ratings (0 = not held out).
        sample_weight : None
            Must be None.

        Returns
        -------
        float
            ``-rmse(X, y)``.
        """
        if sample_weight is not None:
            raise ValueError(f"sample_weight is not supported, got {type(sample_weight).__name__}")
        return -self.rmse(X, y)

    def predict_pairs(self, users, items):
        """Predict ratings for (user, item) pairs given by raw id.

        Users seen in fit use the parameters Surprise fitted for them (their
        training row for SVD++'s implicit term and KNN neighbourhoods);
        unknown users get ``mu + b_i`` (the global mean for unbiased SVD),
        unknown items ``mu + b_u``, as Surprise does.

        Parameters
        ----------
        users : array-like of shape (n_pairs,)
            Raw user ids (see ``user_ids_``).
        items : array-like of shape (n_pairs,)
            Raw item ids (see ``item_ids_``).

        Returns
        -------
        ndarray of shape (n_pairs,)

        Warns
        -----
        UserWarning
            Some requested ids are unknown (they get the prediction above);
            the warning says how many, gives an example, and says when it
            differs from a known id only in type (``'5'`` for the user ``5``).
        """
        check_is_fitted(self)
        users = _id_array(users).ravel()
        items = _id_array(items).ravel()
        if users.shape != items.shape:
            raise ValueError(f"users and items must have the same length, got {users.shape[0]} "
                             f"and {items.shape[0]}")
        u = _lookup_ids(self.user_ids_, users, "user")
        i = _lookup_ids(self.item_ids_, items, "item")
        ku, ki = u >= 0, i >= 0
        uu, ii = np.where(ku, u, 0), np.where(ki, i, 0)
        mu = self.global_mean_
        bu = np.where(ku, self.user_bias_[uu], 0.0)
        bi = np.where(ki, self.item_bias_[ii], 0.0)
        kind = self.kind_
        if kind in ("SVD", "SVDpp"):
            P = self.user_factors_[uu]
            if kind == "SVDpp":
                Xf = self.X_fit_[uu]
                ind = Xf.copy()
                ind.data = np.ones_like(ind.data)
                n = np.maximum(np.diff(Xf.indptr), 1)
                P = P + np.asarray(ind @ self.implicit_factors_) / np.sqrt(n)[:, None]
            dot = np.einsum("ij,ij->i", self.item_factors_[ii], P) * (ku & ki)
            if self.biased_:
                est = mu + bu + bi + dot
            else:
                est = np.where(ku & ki, dot, mu)
        else:
            est = mu + bu + bi
            if kind == "KNNBaseline" and (ku & ki).any():
                both = np.flatnonzero(ku & ki)
                if self.item_similarity_ is not None:
                    Xf = self._model_rows(self.X_fit_[uu[both]])
                    est[both] += self._knn_deviation(Xf, self.user_bias_[uu[both]],
                                                     np.arange(both.size), ii[both])
                else:
                    algo = self.algorithm_
                    for k in both:
                        est[k] = algo.predict(int(uu[k]), int(ii[k]), clip=False).est
        return self._to_user(est)
