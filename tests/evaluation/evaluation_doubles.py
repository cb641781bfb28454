"""Test doubles for the evaluation tests: a tiny deterministic recommender, spy and toy mappers,
and planted-signal data. Imported by the test modules of this folder."""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin


class BiasRecommender(BaseEstimator):
    """r_hat(u, i) = mu + b_i + b_u: item biases learnt in fit, the user bias from the row passed to rmse.

    Deterministic, so every protocol identity can be checked exactly.
    """

    def __init__(self, shrinkage=2.0, random_state=None):
        self.shrinkage = shrinkage
        self.random_state = random_state

    def fit(self, X, y=None):
        X = sp.csr_matrix(X)
        self.n_fit_rows_ = X.shape[0]
        self.mu_ = float(X.data.mean()) if X.nnz else 3.0
        n = np.asarray(X.getnnz(axis=0)).ravel()
        s = np.asarray(X.sum(axis=0)).ravel()
        self.b_item_ = (s - n * self.mu_) / (n + self.shrinkage)
        return self

    def predict_rows(self, X):
        X = sp.csr_matrix(X)
        coo = X.tocoo()
        resid = coo.data - self.mu_ - self.b_item_[coo.col]
        s = np.bincount(coo.row, weights=resid, minlength=X.shape[0])
        n = np.bincount(coo.row, minlength=X.shape[0])
        return s / (n + self.shrinkage)

    def rmse(self, X, y):
        b_user = self.predict_rows(X)
        y = sp.coo_matrix(y)
        pred = np.clip(self.mu_ + self.b_item_[y.col] + b_user[y.row], 1, 5)
        return float(np.sqrt(np.mean((y.data - pred) ** 2)))

    def transform(self, X):  # lets it sit at the end of a Pipeline used only for scoring
        return X

    def score(self, X, y):
        return -self.rmse(X, y)


class EmptyMapper(TransformerMixin, BaseEstimator):
    """Releases nothing: every row empty (same shape, same sparse type)."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        if sp.issparse(X):
            return sp.csr_matrix(X.shape).asformat(X.format)
        return np.zeros_like(np.asarray(X, dtype=float))


class SpyMapper(TransformerMixin, BaseEstimator):
    """Identity that records every (row content) it is shown, in fit and in transform."""

    seen = []  # class-level: clones share the record (the protocol clones the mapper)
    seen_labels = []

    def __init__(self, delta=0.0):
        self.delta = delta

    def _record(self, X, where):
        X = sp.csr_matrix(X)
        SpyMapper.seen.append((where, X.copy()))

    def fit(self, X, y=None):
        self._record(X, "fit")
        SpyMapper.seen_labels.append(None if y is None else np.asarray(y).copy())
        self.leakage_ = 1.0 / (1.0 + self.delta)
        self.distortion_ = float(self.delta)
        return self

    def transform(self, X):
        self._record(X, "transform")
        return X


class ErasingMapper(TransformerMixin, BaseEstimator):
    """Erases, for every user, the ``round(delta)`` items most correlated with the attribute.

    ``leakage_`` is the plug-in mutual information (bits) between the attribute and the
    pattern of the remaining indicators of the planted items; it cannot increase with delta.
    """

    def __init__(self, delta=0.0, planted=3):
        self.delta = delta
        self.planted = planted

    def fit(self, X, y):
        X = sp.csr_matrix(X)
        y = np.asarray(y)
        Xd = X.toarray()
        score = np.abs([np.corrcoef(Xd[:, j], y)[0, 1] if Xd[:, j].std() > 0 else 0.0
                        for j in range(X.shape[1])])
        self.order_ = np.argsort(-score, kind="stable")
        self.erased_ = self.order_[: int(round(self.delta))]
        kept = [j for j in self.order_[: self.planted] if j not in self.erased_]
        self.leakage_ = _plugin_mi(Xd[:, kept] != 0, y) if kept else 0.0
        self.distortion_ = float(np.mean((Xd[:, self.erased_] != 0).sum(axis=1))) if self.erased_.size else 0.0
        return self

    def transform(self, X):
        fmt = X.format if sp.issparse(X) else None
        X = sp.csr_matrix(X, dtype=float, copy=True)
        X = X.tocsc()
        for j in self.erased_:
            X.data[X.indptr[j]:X.indptr[j + 1]] = 0
        X = X.tocsr()
        X.eliminate_zeros()
        return X.asformat(fmt) if fmt else X.toarray()


def _plugin_mi(B, y):
    keys = np.packbits(B.astype(np.uint8), axis=1)
    _, b = np.unique(keys, axis=0, return_inverse=True)
    b = b.ravel()
    _, a = np.unique(y, return_inverse=True)
    joint = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(joint, (a, b), 1)
    joint /= joint.sum()
    pa, pb = joint.sum(1, keepdims=True), joint.sum(0, keepdims=True)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log2(joint[nz] / (pa @ pb)[nz])))


def planted_ratings(n_users=300, n_items=30, planted=3, strength=0.9, density=0.3, seed=0):
    """Ratings in 1..5 where class-1 users rate (and rate high) the first ``planted`` items.

    ``strength`` = probability that the planted items follow the class; 0 = independent.
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_users)
    mask = rng.random((n_users, n_items)) < density
    vals = rng.integers(1, 6, (n_users, n_items)).astype(float)
    follow = rng.random((n_users, planted)) < strength
    mask[:, :planted] = np.where(follow, y[:, None] == 1, mask[:, :planted])
    vals[:, :planted] = np.where(follow & (y[:, None] == 1), 5.0, vals[:, :planted])
    R = np.where(mask, vals, 0.0)
    R[R.sum(axis=1) == 0, n_items - 1] = 3.0  # everyone rates something
    return sp.csr_matrix(R), y


class RollingMapper(TransformerMixin, BaseEstimator):
    """Moves every rating ``shift`` items to the right (cyclically): fools a fixed attacker only."""

    def __init__(self, shift=5):
        self.shift = shift

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        X = sp.csr_matrix(X, copy=True)
        X.indices = (X.indices + self.shift) % X.shape[1]
        X.has_sorted_indices = False
        X.sort_indices()
        return X


class UncertifiedErasingMapper(ErasingMapper):
    """An ErasingMapper whose solve is not certified at ``delta >= 2``: ``solver_result_.status`` is
    ``"inaccurate"`` and fit warns a ConvergenceWarning, as QuantizedPrivacyMapper's does."""

    def fit(self, X, y):
        import types
        import warnings

        from privrelease.exceptions import ConvergenceWarning

        super().fit(X, y)
        status = "inaccurate" if self.delta >= 2 else "optimal"
        self.solver_result_ = types.SimpleNamespace(status=status, certificate={"gap_bits": 3e-5}, solver="fast")
        if status != "optimal":
            warnings.warn("the mapping is not certified; status='inaccurate'", ConvergenceWarning)
        return self
