"""Hide a fraction of every user's ratings for offline evaluation."""

import numpy as np
import scipy.sparse as sp

from ..utils import check_number, check_random_source, check_rating_matrix

__all__ = ["holdout_split"]


def _in_memory(X):
    """``X``, or a dask collection computed (:func:`privrelease.mappers._dask.computed`; the mappers are imported
    only then): a dask array of sparse blocks was read as an array of matrix objects."""
    if not (type(X).__module__ or "").startswith("dask"):
        return X
    from ..mappers._dask import computed

    return computed(X)


def holdout_split(X, fraction=0.1, *, random_state=None, min_train=1):
    """Split each user's ratings into a training part and a held-out part.

    For user ``u`` with ``n_u`` ratings, ``h_u = floor(fraction * n_u + U)``
    ratings (``U`` uniform on (0, 1): stochastic rounding, so ``E[h_u] =
    fraction * n_u`` even for users with few ratings), capped so that at least
    ``min_train`` ratings stay in training, are chosen uniformly at random
    and moved to the held-out matrix. This is the paper's protocol of
    "randomly removing 10 % of the ratings in each test set" (Sec. VI-C,
    Table I). Fully vectorised over the stored ratings.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_users, n_items)
        Ratings, 0 = not rated.
    fraction : float, default=0.1
        Share of each user's ratings to hold out, in [0, 1].
    random_state : None, int or numpy Generator, default=None
        ``None`` draws from the operating system's entropy; an int makes the
        split reproducible (tests, experiments).
    min_train : int, default=1
        Ratings every user keeps in training (users with fewer keep all).

    Returns
    -------
    X_train : scipy.sparse.csr_matrix of shape (n_users, n_items)
    X_heldout : scipy.sparse.csr_matrix of shape (n_users, n_items)
        Disjoint supports, ``X_train + X_heldout == X``.

    Examples
    --------
    >>> from privrelease.datasets import make_ratings
    >>> from privrelease.recommender import holdout_split
    >>> X, a, _ = make_ratings(100, 30, random_state=0)
    >>> X_train, X_test = holdout_split(X, 0.2, random_state=0)
    >>> (X_train + X_test != X).nnz, X_train.multiply(X_test).nnz
    (0, 0)
    """
    fraction = check_number(fraction, "fraction", low=0, high=1)
    min_train = check_number(min_train, "min_train", low=0, integer=True)
    Xc, _ = check_rating_matrix(_in_memory(X))
    X = sp.csr_matrix(Xc) if not sp.issparse(Xc) else sp.csr_matrix(Xc)
    X.sort_indices()
    rng = check_random_source(random_state)
    n_users = X.shape[0]
    counts = np.diff(X.indptr)
    n_hide = np.floor(fraction * counts + rng.uniform(n_users)).astype(np.int64)
    n_hide = np.clip(np.minimum(n_hide, counts - min_train), 0, None)
    rows = np.repeat(np.arange(n_users), counts)
    keys = rng.uniform(X.nnz) if X.nnz else np.empty(0)
    order = np.lexsort((keys, rows))  # by row, then random key
    rank = np.empty(X.nnz, dtype=np.int64)
    rank[order] = np.arange(X.nnz) - X.indptr[rows[order]]
    hide = rank < n_hide[rows]
    train = X.copy()
    train.data = np.where(hide, 0.0, X.data)
    train.eliminate_zeros()
    held = X.copy()
    held.data = np.where(hide, X.data, 0.0)
    held.eliminate_zeros()
    return train, held
