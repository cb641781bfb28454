"""BlurMore (Strucks, Slokom, Larson 2019): additions AND removals, profile sizes and item counts kept."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.evaluation import BlurMe, BlurMore, attack

from test_blurme import _planted_two_sided


def _scores(coef):
    """score[c, j] = max_{c' != c} w[c', j] - w[c, j], computed independently with plain loops."""
    K, n = coef.shape
    return np.array([[max(coef[o, j] for o in range(K) if o != c) - coef[c, j] for j in range(n)]
                     for c in range(K)])


def _reference_greedy(X, cls, score, item_mean, fraction):
    """A plain dense, one-entry-at-a-time reading of the documented greedy algorithm."""
    X = X.copy()
    m = (X != 0).sum(axis=0)
    add_left = [math.ceil(fraction * v) for v in m]
    rem_left = [min(math.ceil(fraction * v), max(v - 1, 0)) for v in m]
    for u in range(X.shape[0]):
        rated = [j for j in range(X.shape[1]) if X[u, j] != 0]
        want = int(math.floor(fraction * len(rated) + 0.5))
        c = cls[u]
        own = sorted((j for j in rated if score[c, j] < 0 and rem_left[j] > 0), key=lambda j: (score[c, j], j))
        cand = sorted((j for j in range(X.shape[1]) if score[c, j] > 0 and X[u, j] == 0 and add_left[j] > 0),
                      key=lambda j: (-score[c, j], j))
        k = min(want, len(own), len(cand))
        for j in cand[:k]:
            X[u, j] = item_mean[j]
            add_left[j] -= 1
        for j in own[:k]:
            X[u, j] = 0
            rem_left[j] -= 1
    return X


@pytest.mark.parametrize("fraction", [0.2, 0.6])
def test_greedy_matches_a_plain_reading_of_the_algorithm(fraction):
    X, y = _planted_two_sided(n=120, seed=1)
    bm = BlurMore(fraction=fraction).fit(X, y)
    cls = np.searchsorted(bm.classes_, bm.classifier_.predict(X))
    expected = _reference_greedy(X.toarray(), cls, _scores(bm.coef_), bm.item_mean_, fraction)
    np.testing.assert_array_equal(bm.transform(X).toarray(), expected)


@pytest.mark.parametrize("strategy", ["greedy", "random", "sampled"])
def test_profiles_items_and_changed_entries(strategy):
    X, y = _planted_two_sided(n=300, seed=2)
    bm = BlurMore(fraction=0.4, strategy=strategy, random_state=0).fit(X, y)
    Xb = bm.transform(X)
    assert sp.issparse(Xb) and Xb.format == "csr" and Xb.shape == X.shape
    D, B = X.toarray(), Xb.toarray()
    # every user keeps exactly her number of ratings: nobody is lost
    np.testing.assert_array_equal((B != 0).sum(axis=1), (D != 0).sum(axis=1))
    assert Xb.nnz == X.nnz
    score = _scores(bm.coef_)
    cls = np.searchsorted(bm.classes_, bm.classifier_.predict(X))
    added, removed = (B != 0) & (D == 0), (B == 0) & (D != 0)
    kept = (B != 0) & (D != 0)
    np.testing.assert_array_equal(B[kept], D[kept])                       # kept ratings unchanged
    np.testing.assert_array_equal(added.sum(axis=1), removed.sum(axis=1))  # one removal per addition
    assert added.sum() > 0.1 * X.nnz
    for u in range(D.shape[0]):
        assert np.all(score[cls[u], added[u]] > 0)      # added: indicative of another class
        assert np.all(score[cls[u], removed[u]] < 0)    # removed: indicative of her own class
        np.testing.assert_allclose(B[u, added[u]], bm.item_mean_[added[u]])
        assert added[u].sum() <= np.floor(0.4 * (D[u] != 0).sum() + 0.5)
    # item balance: no item gains or loses more than ceil(fraction * m_j); no item is lost or created
    m = (D != 0).sum(axis=0)
    assert np.all(added.sum(axis=0) <= np.ceil(0.4 * m))
    assert np.all(removed.sum(axis=0) <= np.ceil(0.4 * m))
    m_after = (B != 0).sum(axis=0)
    assert np.all(m_after[m > 0] >= 1) and np.all(m_after[m == 0] == 0)


def test_blurme_concentrates_items_and_blurmore_does_not():
    """The flaw BlurM(or)e fixes: BlurMe's greedy additions pile up on a few items."""
    X, y = _planted_two_sided(n=400, seed=3)
    m = X.getnnz(axis=0)
    growth_me = BlurMe(fraction=0.5).fit(X, y).transform(X).getnnz(axis=0) / np.maximum(m, 1)
    growth_more = BlurMore(fraction=0.5).fit(X, y).transform(X).getnnz(axis=0) / np.maximum(m, 1)
    assert growth_me.max() > 2.0             # some item more than doubles its ratings under BlurMe
    assert growth_more.max() <= 1.5 + 1e-12  # at most +fraction under BlurMore
    assert growth_more.min() >= 0.5 - 1e-12


def test_lowers_the_fixed_attacker_auc():
    X, y = _planted_two_sided(n=600, seed=4)
    tr, te = slice(0, 300), slice(300, 600)
    before = attack(X[tr], y[tr], X[te], y[te], random_state=0).auc
    after = attack(X[tr], y[tr], BlurMore(fraction=0.5).fit(X[tr], y[tr]).transform(X[te]), y[te],
                   random_state=0).auc
    assert before > 0.9 and after < before - 0.2


def test_multiclass_and_joint_attribute():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 300)
    R = rng.integers(1, 6, (300, 30)) * (rng.random((300, 30)) < 0.3)
    for c in range(3):                      # class c rates items 3c..3c+2 with probability 0.8
        rows = np.flatnonzero(y == c)
        R[np.ix_(rows, range(3 * c, 3 * c + 3))] = 5 * (rng.random((rows.size, 3)) < 0.8)
    R[R.sum(axis=1) == 0, -1] = 3
    X = sp.csr_matrix(R.astype(float))
    bm = BlurMore(fraction=0.5).fit(X, y)
    assert bm.coef_.shape == (3, 30)
    Xb = bm.transform(X)
    np.testing.assert_array_equal(Xb.getnnz(axis=1), X.getnnz(axis=1))
    assert (Xb != X).nnz > 0
    # two columns: the joint attribute (6 tuples) is what is obfuscated
    Y = np.column_stack([y, rng.integers(0, 2, 300)])
    joint = BlurMore(fraction=0.5).fit(X, Y)
    assert joint.classes_.size == 6 and len(joint.joint_tuples_) == 6


def test_formats_identity_and_errors():
    X, y = _planted_two_sided(n=100, seed=6)
    bm = BlurMore(fraction=0.3).fit(X, y)
    dense = bm.transform(X.toarray())
    assert isinstance(dense, np.ndarray)
    for fmt in ("csc", "coo", "lil"):
        out = bm.transform(X.asformat(fmt))
        assert out.format == fmt
        np.testing.assert_array_equal(out.toarray(), dense)
    assert (BlurMore(fraction=0.0).fit(X, y).transform(X) != X).nnz == 0
    y_hidden = y.astype(object)
    y_hidden[::3] = None
    assert set(BlurMore().fit(X, y_hidden).classes_.tolist()) == {0, 1}
    with pytest.raises(ValueError, match="fraction"):
        BlurMore(fraction=-1).fit(X, y)
    with pytest.raises(ValueError, match="BlurMore needs users who disclosed"):
        BlurMore().fit(X, np.full(100, -1))
