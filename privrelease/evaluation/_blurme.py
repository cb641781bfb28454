"""BlurMe: obfuscation by adding ratings (Weinsberg et al., RecSys 2012), a baseline.

BlurMe learns, on users who disclosed the attribute, which items are most
indicative of each class (the coefficients of a logistic regression on the
ratings), then, for every user, ADDS ratings of items indicative of the OTHER
class, at the item's average rating, up to a fraction of the user's own number
of ratings. It never removes or changes a rating. It is a heuristic with no
information-theoretic guarantee: it aims at a given classifier (the fixed
attacker), which is why the evaluation also runs an adaptive attacker.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..mappers._dask import computed
from ..utils import check_random_source, restore_sparse_format
from ..utils._constraints import RANDOM_STATE_CONSTRAINT, NumberInterval
from ..utils._fit import atomic_fit
from ..utils._threads import single_threaded_blas
from ..utils._validation import (UNDISCLOSED_SHORT, canonical_sparse, check_numeric_text, check_rating_container,
                                 check_same_index, check_table, fit_transform_said_once, is_sparse_frame,
                                 nullable_numpy_dtype, plain_labels, ratings_in_dtype, refuse_nan_ratings,
                                 sparse_frame_like, undisclosed_mask, undisclosed_note, zero_fill_sparse_frame)
from ._targets import check_attribute, joint_attribute

__all__ = ["BlurMe", "BlurMore"]



def _share_of(fraction, counts, cap, rounding, offset=0.0):
    """``rounding(fraction * counts + offset)`` as integers, capped at ``cap`` (the most that can be added): a
    huge ``fraction`` (1e18, 1e300) overflowed the int64 cast to negative numbers and nothing was added."""
    with np.errstate(over="ignore", invalid="ignore"):
        share = np.where(counts > 0, np.minimum(fraction * counts, cap), 0.0)
    return rounding(share + offset).astype(np.int64)

class BlurMe(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Add ratings of items typical of the other class (Weinsberg et al., 2012).

    Parameters
    ----------
    fraction : float >= 0, default=0.1
        Each user receives ``round(fraction * n_u)`` extra ratings, ``n_u`` being
        her number of ratings (fewer when she has already rated every candidate).
    strategy : {"greedy", "random", "sampled"}, default="greedy"
        Which candidates to add. A candidate is an unrated item whose score for
        the other class is positive, the score of item ``j`` for a user whose
        class is ``c`` being ``max_{c' != c} (w[c', j] - w[c, j])``, with ``w``
        the logistic-regression coefficients. ``"greedy"``: the highest scores
        first (the BlurMe greedy strategy). ``"random"``: uniformly among the
        candidates. ``"sampled"``: with probability proportional to the score.
    C : float > 0, default=1.0
        Inverse regularisation strength of the logistic regression.
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        Draws of the ``"random"`` and ``"sampled"`` strategies (``"greedy"`` is
        deterministic). ``None`` uses the operating system's entropy; an integer
        is for tests and reproducible experiments.

    Attributes
    ----------
    classes_ : ndarray
        Classes of the private attribute seen in ``fit``.
    coef_ : ndarray of shape (n_classes, n_items)
        Per-class logistic-regression weights (two classes: ``-w/2`` and ``w/2``).
    item_mean_ : ndarray of shape (n_items,)
        Average rating of each item in the training data (the value added;
        the overall mean for items nobody rated).
    classifier_ : LogisticRegression
        Predicts each user's class at transform time.
    n_features_in_ : int

    Notes
    -----
    ``transform(X)`` does not receive the users' attribute (a protected user's
    attribute is never used anywhere), so each user's class is the one
    ``classifier_`` predicts from her ratings: the user is pushed away from the
    class she APPEARS to belong to. In Weinsberg et al. the user supplies her own
    gender; on the users the classifier gets right, both coincide.

    References
    ----------
    .. [1] U. Weinsberg, S. Bhagat, S. Ioannidis, N. Taft, "BlurMe: Inferring and
       Obfuscating User Gender Based on Ratings", RecSys 2012, the section on
       gender obfuscation (the random, sampled and greedy strategies; items ranked
       by logistic-regression coefficients; added at the item's average rating).

    Examples
    --------
    >>> import numpy as np
    >>> from privrelease.evaluation import BlurMe
    >>> X = np.array([[5, 0, 3, 0], [4, 0, 0, 2], [0, 5, 0, 3], [0, 4, 2, 0]], dtype=float)
    >>> y = np.array([0, 0, 1, 1])
    >>> Xb = BlurMe(fraction=0.5).fit(X, y).transform(X)
    >>> bool(np.all(Xb[X != 0] == X[X != 0]))      # existing ratings untouched
    True
    >>> int((Xb != 0).sum() - (X != 0).sum())        # one rating added per user
    4
    """

    _parameter_constraints = {
        "fraction": [NumberInterval(numbers.Real, 0, None, closed="left")],
        "strategy": [StrOptions({"greedy", "random", "sampled"})],
        "C": [NumberInterval(numbers.Real, 0, None, closed="neither")],
        # was ["random_state", object]: any object (random_state="x", -1) passed, and the greedy strategy,
        # which draws nothing, never looked at it
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    #: parameters only transform reads: privacy_utility_curve fits once for a sweep over one of them
    _transform_only_params = ("fraction", "strategy")

    def __init__(self, fraction=0.1, strategy="greedy", *, C=1.0, random_state=None):
        self.fraction = fraction
        self.strategy = strategy
        self.C = C
        self.random_state = random_state

    @atomic_fit
    def fit(self, X, y):
        """Learn the items indicative of each class from the labeled users.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)
            Ratings, 0 = not rated.
        y : array-like of shape (n_users,) or (n_users, n_attributes)
            Private attribute, binary or multi-class, or one column per
            attribute (then the JOINT attribute, the tuple of the columns, is
            obfuscated). Undisclosed labels (``-1``, ``"-1"``, ``None``, NaN,
            ``pd.NA``, ``""``: :func:`privrelease.utils.undisclosed_mask`) mark
            users who did not disclose it: they only contribute to the item averages.

        Returns
        -------
        self
        """
        self._validate_params()
        if y is None:
            raise ValueError(
                "BlurMe requires y to be passed, but the target y is None: it learns from the users "
                "who disclosed the private attribute"
            )
        X, y = computed(X), computed(y)  # a dask array of sparse blocks: "setting an array element with a sequence"
        check_rating_container(X)
        check_table(X)
        X = check_numeric_text(X)  # numbers written as text: an array of them as a DataFrame of them
        refuse_nan_ratings(X)
        check_same_index(X, y)
        X = zero_fill_sparse_frame(X)  # NaN-filled sparse columns: pandas' "fill value must be 0" in scikit-learn
        X = canonical_sparse(validate_data(self, X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=True))
        name = type(self).__name__
        y, labeled, names = check_attribute(y, X.shape[0])
        if not np.any(labeled):
            if y.ndim == 2:  # "every label is missing" was false when another column was disclosed
                empty = [names[k] for k in range(y.shape[1]) if undisclosed_mask(y[:, k]).all()]
                which = (f"column {empty[0]!r} is undisclosed for every user" if empty
                         else "every user left at least one column undisclosed")
                raise ValueError(f"{name} needs users who disclosed every column of the attribute (it obfuscates "
                                 f"their joint value); {which} ({UNDISCLOSED_SHORT})")
            raise ValueError(f"{name} needs users who disclosed the attribute; every label is missing "
                             f"({UNDISCLOSED_SHORT})")
        y_lab = y[labeled]
        if y_lab.ndim == 2:  # one column per attribute: obfuscate the joint attribute
            y_lab, tuples = joint_attribute(y_lab)
            self.joint_tuples_ = tuples
        else:
            y_lab = plain_labels(y_lab)
        check_classification_targets(y_lab)
        self.classes_ = np.unique(y_lab)
        if self.classes_.size < 2:
            one = (f"the combination {self.joint_tuples_[0]!r} of the columns {names!r}" if y.ndim == 2
                   else f"{self.classes_.tolist()!r}")
            raise ValueError(f"{name} needs at least two classes among the labeled users, got only one class: {one}"
                             + (undisclosed_note(y, labeled) if y.ndim == 1 else ""))
        Xs = sp.csr_matrix(X)
        n = np.asarray(Xs.getnnz(axis=0)).ravel()
        s = np.asarray(Xs.sum(axis=0)).ravel()
        overall = s.sum() / max(n.sum(), 1)
        self.item_mean_ = np.where(n > 0, s / np.maximum(n, 1), overall)
        clf = LogisticRegression(C=self.C, max_iter=2000)
        with single_threaded_blas():  # L-BFGS on sparse rows (see privrelease.utils._threads)
            clf.fit(Xs[labeled], y_lab)
        self.classifier_ = clf
        coef = clf.coef_
        self.coef_ = np.vstack([-coef[0] / 2, coef[0] / 2]) if self.classes_.size == 2 else coef.copy()
        return self

    def transform(self, X):
        """Add other-class ratings to every user; existing ratings are kept as they are.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)

        Returns
        -------
        X_blurred : same type, shape and dtype as ``X``
            Added ratings (item means) are rounded for an integer dtype. A
            DataFrame (dense or sparse) keeps its index and columns. A dask
            array is computed first (BlurMe works in memory): its release is a
            scipy sparse matrix for sparse blocks, an array for dense ones.
        """
        Xs, fmt, dtype = self._working_copy(X)
        with single_threaded_blas():
            cls = np.searchsorted(self.classes_, self.classifier_.predict(Xs))
        n_add = _share_of(self.fraction, np.diff(Xs.indptr), Xs.shape[1], np.floor, 0.5)
        rs = check_random_source(self.random_state) if self.strategy != "greedy" else None
        score = self._scores()
        order = np.argsort(-score, axis=1, kind="stable")
        rows, cols = [], []
        for u in np.flatnonzero(n_add > 0):
            c = cls[u]
            rated = Xs.indices[Xs.indptr[u]:Xs.indptr[u + 1]]
            cand = order[c][score[c, order[c]] > 0]
            cand = cand[~np.isin(cand, rated)]
            k = min(int(n_add[u]), cand.size)
            if k == 0:
                continue
            pick = self._pick(cand, k, score[c, cand], rs)
            rows.append(np.full(k, u))
            cols.append(pick)
        if rows:
            r, cidx = np.concatenate(rows), np.concatenate(cols)
            add = sp.csr_matrix((self._added(cidx, dtype), (r, cidx)), shape=Xs.shape)
            Xs = (Xs + add).tocsr()
        return self._as_caller(Xs, fmt, dtype)

    def _working_copy(self, X):
        """A validated float64 CSR copy of ``X`` without stored zeros (sorted indices), the caller's sparse
        format and the caller's dtype (that of the release)."""
        check_is_fitted(self, "classifier_")
        X = computed(X)  # BlurMe works in memory: a dask array of sparse blocks was "Expected 2D array, got scalar"
        # the caller's sparse format, and whether it was a sparse array (csr_array came back as csr_matrix)
        # (a DataFrame of sparse columns comes back as one, with its index and columns)
        fmt = (X.format, isinstance(X, sp.sparray)) if sp.issparse(X) else None
        fmt = ("frame", X) if is_sparse_frame(X) else fmt
        # a dense DataFrame stays one too, with its index (the users) and columns (the items), as
        # QuantizedPrivacyMapper releases it: it came back as an ndarray, against "same type as X"
        fmt = ("dense_frame", X) if fmt is None and hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2 else fmt
        check_rating_container(X)
        check_table(X)
        X = check_numeric_text(X)
        refuse_nan_ratings(X)
        X = zero_fill_sparse_frame(X)
        # dtype="numeric" keeps the caller's dtype (integer ratings came back as float64 means); scikit-learn
        # reads an Int64 frame as float64, so its integer dtype is taken before
        nullable = nullable_numpy_dtype(X)
        X = validate_data(self, X, reset=False, accept_sparse="csr", dtype="numeric", ensure_all_finite=True)
        dtype = X.dtype if nullable is None else nullable
        Xs = canonical_sparse(sp.csr_matrix(X, dtype=np.float64, copy=True))
        Xs.sort_indices()
        return Xs, fmt, dtype

    def _added(self, items, dtype):
        """The ratings added for ``items`` (their training means) as the release's ``dtype`` holds them
        (``ratings_in_dtype``): rounded for an integer dtype (as QuantizedPrivacyMapper rounds its
        profiles), never to 0 (0 is 'not rated': the added rating would be lost); refused if ``dtype``
        cannot hold them."""
        return ratings_in_dtype(self.item_mean_[items], dtype, what="added ratings",
                                source=f"item means of the data {type(self).__name__} was fitted on")

    @staticmethod
    def _as_caller(out, fmt, dtype):
        """``out`` (CSR) back in the caller's type and dtype: dense for dense input, else the input's sparse
        format (a sparse array for a sparse array)."""
        if fmt is None:  # float16 too (scipy's sparse matrices cannot store it: cast the dense release)
            return out.toarray().astype(dtype, copy=False)
        if fmt[0] == "dense_frame":
            import pandas as pd

            frame = fmt[1]
            released = pd.DataFrame(out.toarray().astype(dtype, copy=False), index=frame.index,
                                    columns=frame.columns, copy=False)
            nullable = {c: d for c, d in frame.dtypes.items() if not isinstance(d, np.dtype)}
            # pandas' nullable integer columns (Int64, UInt8, boolean) stay nullable, their ratings whole numbers
            return released.astype(nullable) if nullable and nullable_numpy_dtype(frame) is not None else released
        out = out.astype(dtype, copy=False)
        if fmt[0] == "frame":  # a sparse DataFrame stays one (same index and columns)
            return sparse_frame_like(out, fmt[1])
        fmt, is_array = fmt
        return restore_sparse_format(sp.csr_array(out) if is_array else out, fmt)

    def _scores(self):
        """``score[c, j] = max_{c' != c} w[c', j] - w[c, j]``: how indicative item j is of another class than c."""
        K = self.coef_.shape[0]
        score = np.empty_like(self.coef_)
        for c in range(K):
            others = np.delete(self.coef_, c, axis=0)
            score[c] = others.max(axis=0) - self.coef_[c]
        return score

    def _pick(self, cand, k, weights, rs):
        """``k`` of the candidates (in ranked order): greedy, uniform or score-weighted without replacement."""
        if self.strategy == "greedy":
            return cand[:k]
        if self.strategy == "random":
            return cand[rs.permutation(cand.size)[:k]]
        keys = np.log(rs.uniform(cand.size)) / weights  # Efraimidis-Spirakis keys
        return cand[np.argsort(-keys, kind="stable")[:k]]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


# fit and transform check the same X: a sparse matrix storing a (user, item) pair twice is said once per call
BlurMe.fit_transform = fit_transform_said_once(TransformerMixin.fit_transform)


class BlurMore(BlurMe):
    """BlurMe's imputation plus removal of indicative ratings, profile sizes and item counts kept (BlurM(or)e).

    Strucks, Slokom and Larson (2019) observed that BlurMe's greedy additions are
    visible: the few items most indicative of each class receive many extra
    ratings, so a plot of item popularity before and after shows that the data
    were obfuscated, and which items. BlurM(or)e therefore also REMOVES ratings
    and keeps the data's shape: each user's number of ratings and each item's
    number of ratings stay (close to) what they were.

    For every user ``u`` (in index order), whose class ``c`` is the one the
    fitted classifier predicts from her ratings:

    1. **add** up to ``k_u = round(fraction * n_u)`` unrated items indicative of
       another class (``score[c, j] > 0``, as in :class:`BlurMe`; highest score
       first for ``"greedy"``), each at the item's average rating;
    2. **remove** as many of her own ratings of items indicative of HER class
       (``score[c, j] < 0``, most indicative first): her profile size is
       unchanged. ``k_u`` is lowered to the number of items she can remove, so
       additions and removals always match.

    Item balance: item ``j`` receives at most ``ceil(fraction * m_j)`` added
    ratings and loses at most ``min(ceil(fraction * m_j), m_j - 1)``, ``m_j``
    being its number of ratings in the matrix transformed; the greedy choice
    skips an item whose quota is spent and takes the next one. So no item gains
    or loses more than a ``fraction`` of its ratings, an item that had ratings
    keeps at least one, an item nobody rated stays unrated, and no user loses
    her last rating.

    Parameters
    ----------
    fraction : float >= 0, default=0.1
        Share of each user's ratings replaced (added and removed), and share of
        each item's ratings that may be added or removed.
    strategy : {"greedy", "random", "sampled"}, default="greedy"
        How the ADDED items are chosen among the eligible candidates (see
        :class:`BlurMe`); removals are always greedy (most indicative first).
    C : float > 0, default=1.0
        Inverse regularisation strength of the logistic regression.
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        Draws of the ``"random"`` and ``"sampled"`` strategies.

    Attributes
    ----------
    classes_, coef_, item_mean_, classifier_, n_features_in_
        As in :class:`BlurMe`.

    See Also
    --------
    BlurMe : additions only.

    Notes
    -----
    Like BlurMe this is a heuristic against one classifier (the fixed
    attacker) with no information-theoretic guarantee; the evaluation runs an
    adaptive attacker next to it. Multi-class and 2-D attributes (the joint
    attribute) are handled as in :class:`BlurMe`. The per-item quotas are this
    implementation's reading of the paper's requirement that the item
    distribution stay balanced.

    References
    ----------
    .. [1] C. Strucks, M. Slokom, M. Larson, "BlurM(or)e: Revisiting Gender
       Obfuscation in the User-Item Matrix", RMSE workshop at RecSys 2019,
       CEUR-WS vol. 2440 (the BlurM(or)e extension: removal as well as
       imputation, profile sizes and item distribution kept).
    .. [2] U. Weinsberg, S. Bhagat, S. Ioannidis, N. Taft, "BlurMe: Inferring and
       Obfuscating User Gender Based on Ratings", RecSys 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from privrelease.evaluation import BlurMore
    >>> X = np.array([[5, 4, 0, 0], [4, 5, 0, 3], [0, 0, 5, 4], [0, 3, 4, 5]], dtype=float)
    >>> y = np.array([0, 0, 1, 1])
    >>> Xb = BlurMore(fraction=0.5).fit(X, y).transform(X)
    >>> (Xb != 0).sum(axis=1).tolist() == (X != 0).sum(axis=1).tolist()   # profile sizes kept
    True
    """

    def transform(self, X):
        """Replace indicative ratings of each user's class by ratings typical of another class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)

        Returns
        -------
        X_blurred : same type, shape and dtype as ``X``
            Every user has as many ratings as in ``X``; added ratings (item
            means) are rounded for an integer dtype. A DataFrame (dense or
            sparse) keeps its index and columns.
        """
        Xs, fmt, dtype = self._working_copy(X)
        n_users = Xs.shape[0]
        with single_threaded_blas():
            cls = np.searchsorted(self.classes_, self.classifier_.predict(Xs)) if n_users else np.zeros(0, int)
        n_u = np.diff(Xs.indptr)
        n_add = _share_of(self.fraction, n_u, Xs.shape[1], np.floor, 0.5)
        m = np.asarray(Xs.getnnz(axis=0)).ravel()
        add_quota = _share_of(self.fraction, m, n_users, np.ceil)
        rem_quota = np.minimum(add_quota, np.maximum(m - 1, 0))
        rs = check_random_source(self.random_state) if self.strategy != "greedy" else None
        score = self._scores()
        order = np.argsort(-score, axis=1, kind="stable")
        keep = np.ones(Xs.nnz, dtype=bool)
        add_rows, add_cols = [], []
        for u in np.flatnonzero(n_add > 0):
            c = cls[u]
            lo, hi = Xs.indptr[u], Xs.indptr[u + 1]
            rated = Xs.indices[lo:hi]
            # removal candidates: her ratings of items indicative of her own class, most indicative first
            own = np.flatnonzero((score[c, rated] < 0) & (rem_quota[rated] > 0))
            own = own[np.argsort(score[c, rated[own]], kind="stable")]
            # addition candidates: unrated items indicative of another class, within their quota
            cand = order[c][score[c, order[c]] > 0]
            cand = cand[(add_quota[cand] > 0) & ~np.isin(cand, rated)]
            k = min(int(n_add[u]), cand.size, own.size)
            if k == 0:
                continue
            pick = self._pick(cand, k, score[c, cand], rs)
            drop = own[:k]
            add_quota[pick] -= 1
            rem_quota[rated[drop]] -= 1
            keep[lo + drop] = False
            add_rows.append(np.full(k, u))
            add_cols.append(pick)
        rows = np.repeat(np.arange(n_users), n_u)[keep]
        cols, vals = Xs.indices[keep], Xs.data[keep]
        if add_rows:
            r, cidx = np.concatenate(add_rows), np.concatenate(add_cols)
            rows, cols = np.concatenate([rows, r]), np.concatenate([cols, cidx])
            vals = np.concatenate([vals, self._added(cidx, dtype)])
        out = sp.csr_matrix((vals, (rows, cols)), shape=Xs.shape)
        out.sort_indices()
        return self._as_caller(out, fmt, dtype)
