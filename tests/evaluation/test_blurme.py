import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.evaluation import BlurMe, attack

from evaluation_doubles import planted_ratings


def _planted_two_sided(n=400, seed=0):
    """Class 0 rates items 0-2 high, class 1 rates items 3-5 high; 20 neutral items."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    R = rng.integers(1, 6, (n, 26)) * (rng.random((n, 26)) < 0.3)
    own = np.where(y[:, None] == 0, np.arange(3), np.arange(3, 6))
    follow = rng.random((n, 3)) < 0.8
    R[:, :6] = 0
    rows = np.repeat(np.arange(n), 3)[follow.ravel()]
    R[rows, own.ravel()[follow.ravel()]] = 5
    R[R.sum(axis=1) == 0, -1] = 3
    return sp.csr_matrix(R.astype(float)), y


@pytest.mark.parametrize("strategy", ["greedy", "random", "sampled"])
def test_only_adds_ratings(strategy):
    X, y = _planted_two_sided(seed=1)
    Xb = BlurMe(fraction=0.5, strategy=strategy, random_state=0).fit(X, y).transform(X)
    assert sp.issparse(Xb) and Xb.format == "csr" and Xb.shape == X.shape
    # existing ratings kept exactly, nothing removed
    np.testing.assert_array_equal(Xb[X.nonzero()], X[X.nonzero()])
    added = (Xb != 0).astype(int) - (X != 0).astype(int)
    assert added.min() == 0
    # the number added per user is round(0.5 * n_u) (capped by the number of candidates)
    n_u = np.diff(X.indptr)
    n_added = np.asarray(added.sum(axis=1)).ravel()
    assert np.all(n_added <= np.floor(0.5 * n_u + 0.5))
    assert n_added.sum() > 0


def test_greedy_adds_top_other_class_items_at_their_mean():
    X, y = _planted_two_sided(seed=2)
    bm = BlurMe(fraction=0.1).fit(X, y)
    Xb = bm.transform(X).toarray()
    Xd = X.toarray()
    pred = bm.classifier_.predict(X)
    w = bm.coef_[1] - bm.coef_[0]            # > 0: indicative of class 1
    for u in range(40):
        new = np.flatnonzero((Xb[u] != 0) & (Xd[u] == 0))
        if new.size == 0:
            continue
        score = w if pred[u] == 0 else -w     # items of the OTHER class
        cand = [j for j in np.argsort(-score, kind="stable") if score[j] > 0 and Xd[u, j] == 0]
        assert sorted(new.tolist()) == sorted(cand[: new.size])
        np.testing.assert_allclose(Xb[u, new], bm.item_mean_[new])
    # item means are those of the training ratings
    j = 7
    col = Xd[:, j]
    assert bm.item_mean_[j] == pytest.approx(col[col != 0].mean())


def test_lowers_the_fixed_attacker_auc():
    X, y = _planted_two_sided(n=600, seed=3)
    tr, te = slice(0, 300), slice(300, 600)
    before = attack(X[tr], y[tr], X[te], y[te], random_state=0).auc
    bm = BlurMe(fraction=0.3).fit(X[tr], y[tr])
    after = attack(X[tr], y[tr], bm.transform(X[te]), y[te], random_state=0).auc
    assert before > 0.9
    assert after < before - 0.2


def test_keeps_dense_and_sparse_formats():
    X, y = _planted_two_sided(n=100, seed=4)
    bm = BlurMe(fraction=0.2).fit(X, y)
    dense = bm.transform(X.toarray())
    assert isinstance(dense, np.ndarray)
    csc = bm.transform(X.tocsc())
    assert csc.format == "csc"
    np.testing.assert_array_equal(csc.toarray(), dense)


def test_unlabeled_users_only_feed_item_means():
    X, y = _planted_two_sided(n=200, seed=5)
    y_part = y.copy()
    y_part[100:] = -1
    a = BlurMe().fit(X, y_part)
    b = BlurMe().fit(X[:100], y[:100])
    np.testing.assert_allclose(a.coef_, b.coef_)
    assert not np.allclose(a.item_mean_, b.item_mean_)


def test_fraction_zero_is_identity():
    X, y = planted_ratings(n_users=80, seed=6)
    Xb = BlurMe(fraction=0.0).fit(X, y).transform(X)
    assert (Xb != X).nnz == 0


def test_errors():
    X, y = planted_ratings(n_users=60, seed=7)
    with pytest.raises(ValueError, match="fraction"):
        BlurMe(fraction=-0.1).fit(X, y)
    with pytest.raises(ValueError, match="strategy"):
        BlurMe(strategy="smart").fit(X, y)
    with pytest.raises(ValueError, match="requires y"):
        BlurMe().fit(X, None)
    with pytest.raises(ValueError, match=r"one class: \[1\]"):
        BlurMe().fit(X, np.ones(60, dtype=int))
    with pytest.raises(ValueError, match="every label is missing"):
        BlurMe().fit(X, -np.ones(60, dtype=int))
    with pytest.raises(ValueError, match="features"):
        BlurMe().fit(X, y).transform(X[:, :5])
