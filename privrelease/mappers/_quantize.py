"""Quantization helpers for :class:`QuantizedPrivacyMapper` (Salamatian et al., Alg. 2).

Two spaces in which users are clustered and distortion is measured:

* the *taste* space (:class:`TasteEmbedding`): a user is described by what a
  matrix-factorisation recommender would predict for her, relative to the
  item baseline ``g + b_i``: her (shrunk) mean-rating offset plus a low-rank
  taste vector learnt sparsely with a truncated SVD of the mean-centred
  ratings. Coordinates are chosen so that the Euclidean distance between two
  embedded users is the root-mean-square difference, over all items, of their
  predicted ratings; the origin is the prediction for a user with no ratings.
* the *raw* space: the input vectors as given (the paper's Iris and
  Politics-and-TV experiments).

And a Hamming clustering for binarized ratings (the paper's exchange
distortion, Sec. VI-C), with majority-vote centres.

Clustering is a non-privacy step, seeded from :meth:`RandomSource.spawn_seed`,
and never sees the private attribute. The cluster statistics at the end
(:func:`profile_stats`, :func:`block_stats`) are the sufficient statistics of
Algorithm 2: :func:`block_stats` counts the private attribute of the labeled
users of one dask block (the prior of eq. 20).
"""

import contextlib

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD

from ..utils._threads import single_thread
from ..utils._validation import plain_value
from . import _dask

__all__ = ["TasteEmbedding", "hamming_kmodes", "hamming_distances", "row_chunks", "profile_stats", "block_stats",
           "combine_stats", "median_from_hist"]

#: rows processed at once when a rating matrix is streamed
CHUNK_ROWS = 16384


def row_chunks(n_rows, chunk=CHUNK_ROWS):
    """Yield ``(start, stop)`` pairs covering ``range(n_rows)``."""
    for start in range(0, n_rows, chunk):
        yield start, min(start + chunk, n_rows)


def _rated_pattern(X):
    """0/1 CSR of the same pattern as the CSR ``X`` (explicit zeros dropped)."""
    P = X.copy()
    P.eliminate_zeros()
    P.data = np.ones_like(P.data, dtype=np.float64)
    return P


class TasteEmbedding:
    """Embed users by the ratings a recommender would predict for them.

    Model: ``r_ui ~ g + b_i + m_u + w_u . v_i`` where ``g`` is the global
    mean, ``b_i`` a shrunk item offset, ``m_u`` the user's shrunk mean offset
    and ``w_u`` the user's taste in the span of the top right singular vectors
    ``V`` of the centred residuals (a truncated SVD of the sparse residual
    matrix, never densified). ``w_u`` is a ridge fit of the user's residuals on
    ``V`` restricted to her rated items, with the Gram matrix replaced by its
    diagonal (the components are orthogonal over all items, nearly so over one
    user's items): ``w_uj = z_uj / (sum_{i rated} v_ij^2 + lambda)`` with
    ``z_u = V e_u``. The rank and ``lambda`` are chosen in ``fit`` by the RMSE
    on 10 % of the ratings held out (a recommender-style validation), so the
    embedding never predicts worse than the user-mean baseline on the fit data;
    the components are those of the 90 % split (one SVD), the baselines are
    refitted on all ratings.
    The predicted offset ``p_u = m_u 1 + V^T w_u`` is expressed in an
    orthonormal basis of ``span(1, V)`` scaled by ``1/sqrt(n_items)``, so that
    ``||e_u - e_v||_2^2 = mean_i (p_ui - p_vi)^2``: squared distances are mean
    squared differences of predicted ratings, and the origin is the prediction
    for a user with no ratings.

    Parameters
    ----------
    n_components : int
        Largest rank tried.
    mean_shrinkage, item_shrinkage : float
        Pseudo-counts pulling user means to ``g`` and item offsets to 0.
    random_state : int
        Seed of the (non-privacy) randomized SVD and validation split.
    """

    _RIDGE_GRID = (0.03, 0.1, 0.3, 1.0, 3.0)

    def __init__(self, n_components=20, *, mean_shrinkage=5.0, item_shrinkage=10.0, random_state=0):
        self.n_components = n_components
        self.mean_shrinkage = mean_shrinkage
        self.item_shrinkage = item_shrinkage
        self.random_state = random_state

    def _fit_baseline(self, X):
        n_users, n_items = X.shape
        n_u = np.diff(X.indptr).astype(np.float64)
        nnz = X.data.size
        self.global_mean_ = float(X.data.sum() / nnz) if nnz else 0.0
        user_offset = self._user_offsets(X, n_u)
        rows = np.repeat(np.arange(n_users), np.diff(X.indptr))
        res = X.data - self.global_mean_ - user_offset[rows]
        item_sum = np.bincount(X.indices, weights=res, minlength=n_items)
        item_cnt = np.bincount(X.indices, minlength=n_items).astype(np.float64)
        self.item_offset_ = item_sum / (item_cnt + self.item_shrinkage)

    def _fit_components(self, X, k):
        E, _ = self._residuals(X)
        if k >= 1 and E.nnz > 0:
            svd = TruncatedSVD(n_components=k, algorithm="randomized", n_iter=7,
                               random_state=self.random_state)
            with np.errstate(invalid="ignore", divide="ignore"):
                # residuals all 0 (every rating equal): scikit-learn's explained_variance_ratio_ is 0 / 0,
                # a RuntimeWarning about a figure nothing here reads
                svd.fit(E)
            return svd.components_
        return np.zeros((0, X.shape[1]))

    def fit(self, X):
        """Fit on a CSR rating matrix (0 = not rated). Returns ``self``."""
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.eliminate_zeros()
        n_users, n_items = X.shape
        self.n_items_ = n_items
        k_max = int(min(self.n_components, n_items - 1, max(n_users - 1, 1)))
        # validation: hold out ~10 % of the ratings, pick rank and ridge by RMSE
        rng = np.random.default_rng(self.random_state)
        held = rng.random(X.data.size) < 0.1
        self.rank_, self.ridge_ = k_max, self._RIDGE_GRID[2]
        V = None
        if k_max >= 1 and held.sum() >= 10 and (~held).sum() >= 10:
            rows = np.repeat(np.arange(n_users), np.diff(X.indptr))
            Xt = sp.csr_matrix((X.data[~held], (rows[~held], X.indices[~held])), shape=X.shape)
            self._fit_baseline(Xt)
            V = self._fit_components(Xt, k_max)
            self.components_ = V
            C = self._coefficient_parts(Xt)
            hr, hc, hv = rows[held], X.indices[held], X.data[held]
            base = self.global_mean_ + self.item_offset_[hc] + C[0][hr]
            best = (np.sqrt(np.mean((base - hv) ** 2)), 0, self._RIDGE_GRID[2])
            ranks = sorted({r for r in (2, 5, 10, 20, 40, k_max) if r <= min(k_max, V.shape[0])})
            for lam in self._RIDGE_GRID:
                W = C[1] / (C[2] + lam)
                for r in ranks:
                    pred = base + np.einsum("ij,ij->i", W[hr, :r], V[:r, hc].T)
                    score = np.sqrt(np.mean((pred - hv) ** 2))
                    if score < best[0] - 1e-12:
                        best = (score, r, lam)
            self.validation_rmse_, self.rank_, self.ridge_ = best
        self._fit_baseline(X)
        if V is None:
            V = self._fit_components(X, k_max)
        # the components learnt on the 90 % split are kept (one SVD instead of two)
        V = V[: self.rank_]
        self.components_ = V
        B = np.vstack([np.ones((1, n_items)), V])
        G = B @ B.T / n_items + 1e-12 * np.eye(V.shape[0] + 1)
        self.basis_chol_ = np.linalg.cholesky(G)  # G = L L^T
        return self

    _STATE_NUMBERS = ("n_components", "mean_shrinkage", "item_shrinkage", "random_state", "n_items_",
                      "global_mean_", "rank_", "ridge_")

    def get_state(self):
        """The fitted embedding as plain values (numbers and arrays), for a portable file."""
        state = {k: getattr(self, k) for k in self._STATE_NUMBERS}
        state.update(item_offset_=self.item_offset_, components_=self.components_, basis_chol_=self.basis_chol_)
        if hasattr(self, "validation_rmse_"):
            state["validation_rmse_"] = float(self.validation_rmse_)
        return state

    @classmethod
    def from_state(cls, state, where="embedding"):
        """Rebuild a fitted embedding from :meth:`get_state`, checking every value (ValueError naming it)."""
        if not isinstance(state, dict):
            raise ValueError(f"{where} must be a mapping of fitted values, got {type(state).__name__}")
        allowed = set(cls._STATE_NUMBERS) | {"item_offset_", "components_", "basis_chol_", "validation_rmse_"}
        for key in state:
            if key not in allowed:
                raise ValueError(f"{where}.{key}: not a value of a taste embedding")
        for key in allowed - {"validation_rmse_"}:
            if key not in state:
                raise ValueError(f"{where}.{key}: missing from the file")
        for key in cls._STATE_NUMBERS + ("validation_rmse_",):
            if key not in state:
                continue
            v = state[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise ValueError(f"{where}.{key} must be a finite number, got {v!r:.60}")
        n_items, rank = state["n_items_"], state["rank_"]
        if not isinstance(n_items, int) or n_items < 1 or not isinstance(rank, int) or rank < 0:
            raise ValueError(f"{where}: n_items_ = {n_items!r} and rank_ = {rank!r} must be integers >= 1 and >= 0")
        if state["ridge_"] <= 0:
            raise ValueError(f"{where}.ridge_ must be > 0, got {plain_value(state['ridge_'])!r}")
        shapes = {"item_offset_": (n_items,), "components_": (rank, n_items), "basis_chol_": (rank + 1, rank + 1)}
        for key, shape in shapes.items():
            a = state[key]
            if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or a.shape != shape:
                raise ValueError(f"{where}.{key} must be a float array of shape {shape}, got "
                                 f"{getattr(a, 'dtype', type(a).__name__)} of shape {getattr(a, 'shape', None)}")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{where}.{key} holds a non-finite value")
        if np.any(np.diag(state["basis_chol_"]) <= 0) or np.any(np.triu(state["basis_chol_"], 1) != 0):
            raise ValueError(f"{where}.basis_chol_ is not a Cholesky factor (lower triangular, positive diagonal)")
        obj = cls.__new__(cls)
        obj.__dict__.update(state)
        return obj

    def _user_offsets(self, X, n_u):
        sums = np.asarray(X.sum(axis=1)).ravel()
        return (sums - n_u * self.global_mean_) / (n_u + self.mean_shrinkage)

    def _residuals(self, X):
        n_u = np.diff(X.indptr).astype(np.float64)
        m = self._user_offsets(X, n_u)
        res = X.data - np.repeat(m + self.global_mean_, np.diff(X.indptr))
        res -= self.item_offset_[X.indices]
        return sp.csr_matrix((res, X.indices, X.indptr), shape=X.shape), m

    def _coefficient_parts(self, X):
        E, m = self._residuals(X)
        V = self.components_
        Z = np.asarray(E @ V.T)
        P = sp.csr_matrix((np.ones_like(E.data), E.indices, E.indptr), shape=E.shape)
        G = np.asarray(P @ (V.T ** 2))
        return m, Z, G

    def coefficients(self, X, copy=True):
        """``[m_u, w_u]`` for each row of the CSR ``X``: shape (n_users, 1 + rank).

        ``copy=False`` lets a float64 ``X`` be modified in place (explicit zeros dropped).
        """
        if X.dtype != np.float64:
            X = X.astype(np.float64)
        elif copy:
            X = X.copy()
        X.eliminate_zeros()
        m, Z, G = self._coefficient_parts(X)
        return np.hstack([m[:, None], Z / (G + self.ridge_)])

    def transform(self, X, copy=True):
        """Embedding coordinates, shape (n_users, 1 + rank); origin = empty user."""
        return self.coefficients(X, copy=copy) @ self.basis_chol_

    def predicted_offsets(self, E):
        """Map embedding coordinates back to per-item predicted offsets ``p``."""
        C = np.linalg.solve(self.basis_chol_.T, np.atleast_2d(E).T).T
        return C[:, :1] + C[:, 1:] @ self.components_

    def predicted_ratings(self, E):
        """Predicted ratings ``g + b_i + p_i`` for embedding coordinates ``E``."""
        return self.global_mean_ + self.item_offset_[None, :] + self.predicted_offsets(E)


def hamming_distances(B, centers):
    """Hamming distances between binary rows of ``B`` (CSR or dense) and dense 0/1 ``centers``."""
    centers = np.asarray(centers, dtype=np.float64)
    if sp.issparse(B):
        nb = np.asarray(B.sum(axis=1)).ravel()
        inner = np.asarray(B @ centers.T)
    else:
        B = np.asarray(B, dtype=np.float64)
        nb = B.sum(axis=1)
        inner = B @ centers.T
    return nb[:, None] + centers.sum(axis=1)[None, :] - 2.0 * inner


def hamming_kmodes(B, n_clusters, *, sample_weight=None, n_init=4, max_iter=100, random_state=0):
    """Cluster binary vectors under the Hamming distance (k-modes).

    Lloyd iterations: assign each row to the nearest centre in Hamming
    distance, then replace each centre by the coordinate-wise majority vote of
    its members (the minimiser of the summed Hamming distance). Initialised by
    k-means++ seeding with Hamming distances; the best of ``n_init`` runs (lowest
    total distance) is kept.

    Parameters
    ----------
    B : CSR matrix or ndarray of 0/1, shape (n, d)
    n_clusters : int
    sample_weight : ndarray of shape (n,), optional
        Weights of the rows (weighted majority votes and total distance).

    Returns
    -------
    centers : ndarray of shape (n_clusters, d), values 0/1
    labels : ndarray of shape (n,)
    inertia : float
        Sum of Hamming distances to the assigned centres.
    """
    rng = np.random.default_rng(random_state)
    n = B.shape[0]
    sw = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    dense_rows = (lambda idx: np.asarray(B[idx].todense())) if sp.issparse(B) else (lambda idx: np.asarray(B[idx]))
    best = None
    for _ in range(n_init):
        first = rng.choice(n, p=sw / sw.sum())
        centers = dense_rows([first]).astype(np.float64)
        closest = hamming_distances(B, centers)[:, 0]
        for _j in range(1, n_clusters):
            w = closest * sw
            if w.sum() <= 0:
                idx = rng.integers(n)
            else:
                idx = rng.choice(n, p=w / w.sum())
            c = dense_rows([idx]).astype(np.float64)
            centers = np.vstack([centers, c])
            closest = np.minimum(closest, hamming_distances(B, c)[:, 0])
        labels = None
        for _it in range(max_iter):
            D = hamming_distances(B, centers)
            new_labels = D.argmin(axis=1)
            if labels is not None and np.array_equal(new_labels, labels):
                break
            labels = new_labels
            for j in range(n_clusters):
                members = np.flatnonzero(labels == j)
                if members.size == 0:
                    continue  # keep the old centre
                wm = sw[members]
                votes = np.asarray(B[members].T @ wm).ravel()
                centers[j] = (votes * 2 > wm.sum()).astype(np.float64)
        D = hamming_distances(B, centers)
        labels = D.argmin(axis=1)
        inertia = float(D[np.arange(n), labels] @ sw)
        if best is None or inertia < best[2]:
            best = (centers.copy(), labels.copy(), inertia)
    return best


def kmeans(E, n_clusters, random_state, sample_weight=None):
    """k-means (Euclidean) returning ``(centers, labels)``; sparse ``E`` accepted.

    scikit-learn's KMeans runs on one BLAS thread through threadpoolctl's own limit, which concurrent fits
    (joblib's threading backend) restore out of order, leaving the process on one BLAS thread for good: it runs
    inside the shared, counted limit of :mod:`privrelease.utils._threads` instead, which puts the process's
    counts back when the last fit ends.
    """
    km = KMeans(n_clusters=n_clusters, n_init=4, random_state=random_state)
    with contextlib.ExitStack() as stack:
        stack.enter_context(single_thread("blas"))
        if E.shape[0] < 50000:
            # small problems: OpenMP start-up costs more than it saves (10x slower on 2 cores)
            stack.enter_context(single_thread("openmp"))
        labels = km.fit_predict(E, sample_weight=sample_weight)
    return np.asarray(km.cluster_centers_), labels


# ----------------------------------------------------------------------------- cluster statistics
# Sufficient statistics of Algorithm 2 (prior counts, costs, profiles), in memory or per dask block.
def profile_stats(X_lab, w_lab, labels, k):
    """Per-cluster item statistics of the labeled rows (in memory)."""
    Xs = (X_lab.tocsr().astype(np.float64) if sp.issparse(X_lab)
          else sp.csr_matrix(np.asarray(X_lab, dtype=np.float64)))
    Xs.eliminate_zeros()
    n = Xs.shape[0]
    onehot = sp.csr_matrix((w_lab, (labels, np.arange(n))), shape=(k, n))
    pattern = Xs.copy()
    pattern.data = np.ones_like(pattern.data)
    n_u = np.diff(Xs.indptr)
    lengths = np.array([int(np.rint(np.median(n_u[labels == j]))) if np.any(labels == j) else 0
                        for j in range(k)], dtype=np.int64)
    return {
        "counts": np.asarray((onehot @ pattern).todense()),
        "sums": np.asarray((onehot @ Xs).todense()),
        "size": np.bincount(labels, weights=w_lab, minlength=k),
        "lengths": lengths,
        "value_range": (Xs.data.min(), Xs.data.max(), np.abs(Xs.data).min()) if Xs.nnz else None,
    }


def block_stats(Xb, yb, assign, classes, n_clusters, n_out):
    """Sufficient statistics of one dask block for the prior, costs and profiles (labeled users only).

    ``assign(X)`` returns the distances of the rows of ``X`` to the ``n_out``
    output points and their clusters (the fitted quantizer ``psi``).
    """
    y, mask = _dask.labeled_block(yb)
    rows = np.flatnonzero(mask)
    k = n_clusters
    n_items = Xb.shape[1]
    Xl = _dask.take_rows(Xb, rows)
    a_idx = np.searchsorted(classes, y[rows])
    stats = {
        "counts": np.zeros((classes.size, k)),
        "dist_sum": np.zeros((k, n_out)),
        "own_max": np.full(1, -np.inf),
        "own_sum": np.zeros(1),
        "size": np.zeros(k),
        "item_counts": np.zeros((k, n_items)),
        "item_sums": np.zeros((k, n_items)),
        "length_hist": np.zeros((k, n_items + 1)),
        "lo_hi_absmin": np.array([np.inf, -np.inf, np.inf]),
    }
    if rows.size == 0:
        return stats
    D, labels = assign(Xl)
    n = rows.size
    np.add.at(stats["counts"], (a_idx, labels), 1.0)
    onehot = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    stats["dist_sum"] = np.asarray(onehot @ D)
    own = D[np.arange(n), labels]
    stats["own_max"][0] = own.max()
    stats["own_sum"][0] = own.sum()
    stats["size"] = np.bincount(labels, minlength=k).astype(np.float64)
    Xs = Xl.tocsr().astype(np.float64) if sp.issparse(Xl) else sp.csr_matrix(np.asarray(Xl, dtype=np.float64))
    Xs.eliminate_zeros()
    pattern = Xs.copy()
    pattern.data = np.ones_like(pattern.data)
    stats["item_counts"] = np.asarray((onehot @ pattern).todense())
    stats["item_sums"] = np.asarray((onehot @ Xs).todense())
    n_u = np.diff(Xs.indptr)
    np.add.at(stats["length_hist"], (labels, n_u), 1.0)
    if Xs.data.size:
        stats["lo_hi_absmin"] = np.array([Xs.data.min(), Xs.data.max(), np.abs(Xs.data).min()])
    return stats


def combine_stats(s, t):
    out = {}
    for key in s:
        if key == "own_max":
            out[key] = np.maximum(s[key], t[key])
        elif key == "lo_hi_absmin":
            out[key] = np.array([min(s[key][0], t[key][0]), max(s[key][1], t[key][1]),
                                 min(s[key][2], t[key][2])])
        else:
            out[key] = s[key] + t[key]
    return out


def median_from_hist(hist):
    """``np.median`` of the integers described by a histogram (bin ``v`` counts value ``v``)."""
    m = int(hist.sum())
    if m == 0:
        return 0.0
    cum = np.cumsum(hist)
    lo = int(np.searchsorted(cum, (m - 1) // 2 + 1))
    hi = int(np.searchsorted(cum, m // 2 + 1))
    return 0.5 * (lo + hi)
