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
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils import check_private_labels, check_random_source, restore_sparse_format

__all__ = ["BlurMe"]


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
    random_state : None, int or RandomSource, default=None
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
        "fraction": [Interval(numbers.Real, 0, None, closed="left")],
        "strategy": [StrOptions({"greedy", "random", "sampled"})],
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state", object],
    }

    def __init__(self, fraction=0.1, strategy="greedy", *, C=1.0, random_state=None):
        self.fraction = fraction
        self.strategy = strategy
        self.C = C
        self.random_state = random_state

    def fit(self, X, y):
        """Learn the items indicative of each class from the labeled users.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)
            Ratings, 0 = not rated.
        y : array-like of shape (n_users,)
            Private attribute; ``-1`` (or NaN) marks users who did not disclose
            it: they only contribute to the item averages.

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
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=True)
        y, labeled = check_private_labels(y, X.shape[0])
        if not np.any(labeled):
            raise ValueError("BlurMe needs users who disclosed the attribute; every label is missing (-1)")
        y_lab = y[labeled]
        check_classification_targets(y_lab)
        self.classes_ = np.unique(y_lab)
        if self.classes_.size < 2:
            raise ValueError(
                "BlurMe needs at least two classes among the labeled users, got only one class: "
                f"{self.classes_.tolist()!r}"
            )
        Xs = sp.csr_matrix(X)
        n = np.asarray(Xs.getnnz(axis=0)).ravel()
        s = np.asarray(Xs.sum(axis=0)).ravel()
        overall = s.sum() / max(n.sum(), 1)
        self.item_mean_ = np.where(n > 0, s / np.maximum(n, 1), overall)
        clf = LogisticRegression(C=self.C, max_iter=2000)
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
        X_blurred : same type and shape as ``X``
        """
        check_is_fitted(self, "classifier_")
        fmt = X.format if sp.issparse(X) else None
        X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=np.float64,
                          ensure_all_finite=True)
        Xs = sp.csr_matrix(X, copy=True)
        Xs.eliminate_zeros()
        cls = np.searchsorted(self.classes_, self.classifier_.predict(Xs))
        n_add = np.floor(self.fraction * np.diff(Xs.indptr) + 0.5).astype(np.int64)
        rs = check_random_source(self.random_state) if self.strategy != "greedy" else None
        K = self.coef_.shape[0]
        # score[c, j] = max over other classes c' of w[c', j] - w[c, j]
        score = np.empty_like(self.coef_)
        for c in range(K):
            others = np.delete(self.coef_, c, axis=0)
            score[c] = others.max(axis=0) - self.coef_[c]
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
            if self.strategy == "greedy":
                pick = cand[:k]
            elif self.strategy == "random":
                pick = cand[rs.permutation(cand.size)[:k]]
            else:  # sampled: weighted sampling without replacement (Efraimidis-Spirakis keys)
                keys = np.log(rs.uniform(cand.size)) / score[c, cand]
                pick = cand[np.argsort(-keys, kind="stable")[:k]]
            rows.append(np.full(k, u))
            cols.append(pick)
        if rows:
            r, cidx = np.concatenate(rows), np.concatenate(cols)
            add = sp.csr_matrix((self.item_mean_[cidx], (r, cidx)), shape=Xs.shape)
            Xs = (Xs + add).tocsr()
        if fmt is None:
            return Xs.toarray()
        return restore_sparse_format(Xs, fmt)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
