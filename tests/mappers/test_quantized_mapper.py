"""QuantizedPrivacyMapper: Algorithm 2, Theorem 2, the release, bad input."""

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.exceptions import InfeasibleBudgetError
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mappers._quantize import TasteEmbedding, hamming_kmodes
from privrelease.mapping import erasure_alphabet  # noqa: F401  (engine importable)
from privrelease.mapping import mutual_information


def _ratings(n=300, m=40, seed=0, strength=2.0):
    """Ratings 1-5 whose first items depend on a binary attribute."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    taste = rng.normal(size=(n, 3)) + strength * np.c_[y, -y, np.zeros(n)]
    items = rng.normal(size=(3, m))
    R = np.clip(np.rint(3 + 0.6 * taste @ items / np.sqrt(3) + rng.normal(0, 0.5, (n, m))), 1, 5)
    mask = rng.random((n, m)) < 0.35
    mask[np.arange(n), rng.integers(0, m, n)] = True  # at least one rating each
    return sp.csr_matrix(np.where(mask, R, 0.0)), y


@pytest.fixture(scope="module")
def data():
    return _ratings()


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return QuantizedPrivacyMapper(n_clusters=12, random_state=0).fit(X, y)


def test_perfect_privacy_by_default(fitted):
    m = fitted
    assert m.prior_leakage_ > 0.05  # the attribute does leak through the clusters
    assert m.leakage_ < 1e-6
    joint = m.prior_ @ m.mapping_
    pa, pc = joint.sum(1), joint.sum(0)
    np.testing.assert_allclose(joint, np.outer(pa, pc), atol=1e-7)  # independence
    assert m.map_accuracy_ == pytest.approx(pa.max(), abs=1e-6)
    np.testing.assert_allclose(m.mapping_.sum(axis=1), 1.0)
    assert m.mapping_.shape == (m.n_clusters_, m.n_clusters_ + 1)  # + the empty profile


def test_theorem2_leakage_of_lift_equals_cluster_leakage(data):
    X, y = data
    probe = QuantizedPrivacyMapper(n_clusters=10, max_leakage=50.0, smoothing=0.0, random_state=1).fit(X, y)
    m = QuantizedPrivacyMapper(n_clusters=10, delta=probe.smallest_delta_ + 0.03, smoothing=0.0,
                               random_state=1).fit(X, y)
    # lift to users: p(a, c_hat) = sum_b p(c_hat | psi(b)) p(a, b) with the empirical p(a, b)
    labels = m.quantize(X)
    np.testing.assert_array_equal(labels, m.labels_)
    joint_users = np.zeros((2, m.mapping_.shape[1]))
    for a in (0, 1):
        joint_users[a] = m.mapping_[labels[y == a]].sum(axis=0)
    joint_users /= joint_users.sum()
    assert mutual_information(joint_users) == pytest.approx(m.leakage_, abs=1e-9)
    assert 1e-4 < m.leakage_ < probe.leakage_
    # distortion of the lift (exact, member-averaged) <= centre-level distortion + r (Theorem 2)
    assert m.distortion_ <= m.center_distortion_ + m.quantization_radius_ + 1e-9
    # and the member-averaged cost is what the users pay on average
    E = m.embedding_.transform(X)
    pts = np.vstack([m.cluster_centers_, np.zeros((1, E.shape[1]))])
    d_users = np.sqrt(((E[:, None, :] - pts[None]) ** 2).sum(-1))
    direct = np.mean(np.sum(m.mapping_[labels] * d_users, axis=1))
    assert m.distortion_ == pytest.approx(direct, rel=1e-9)


def test_no_privacy_cap_gives_identity(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=8, max_leakage=50.0, smoothing=0.0, random_state=0).fit(X, y)
    np.testing.assert_allclose(m.mapping_[:, : m.n_clusters_], np.eye(m.n_clusters_), atol=1e-6)
    assert m.leakage_ == pytest.approx(m.prior_leakage_, abs=1e-6)
    assert m.distortion_ == pytest.approx(m.quantization_distortion_, rel=1e-6)


def test_delta_trades_leakage(data):
    X, y = data
    base = QuantizedPrivacyMapper(n_clusters=8, max_leakage=50.0, random_state=0).fit(X, y)
    q = base.smallest_delta_
    assert q == pytest.approx(base.quantization_distortion_, rel=0.05)
    leaks = [QuantizedPrivacyMapper(n_clusters=8, delta=q + s, random_state=0).fit(X, y).leakage_
             for s in (0.0, 0.05, 0.2)]
    assert leaks[0] == pytest.approx(base.prior_leakage_, abs=1e-4)
    assert leaks[0] > leaks[1] > leaks[2] - 1e-9


def test_delta_below_quantization_distortion(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=8, max_leakage=50.0, random_state=0).fit(X, y)
    smallest = m.smallest_delta_
    with pytest.raises(InfeasibleBudgetError, match="smallest feasible") as err:
        QuantizedPrivacyMapper(n_clusters=8, delta=0.0, random_state=0).fit(X, y)
    assert err.value.smallest_feasible == pytest.approx(smallest, rel=1e-9)
    assert smallest > 0


def test_release_is_a_function_of_c_hat_alone(data, fitted):
    X, _ = data
    R = fitted.transform(X)
    P = fitted.release_profiles_.toarray()
    Rd = R.toarray()
    # every released row is one of the profiles
    match = (Rd[:, None, :] == P[None, :, :]).all(axis=2)
    assert match.any(axis=1).all()
    assert P[-1].sum() == 0  # the last symbol releases nothing
    # profiles are on the rating scale
    vals = fitted.release_profiles_.data
    assert vals.min() >= 1 and vals.max() <= 5


def test_sampling_follows_the_mapping():
    X, y = _ratings(n=300, seed=3)
    m = QuantizedPrivacyMapper(n_clusters=6, delta=None, max_leakage=0.0, random_state=0).fit(X, y)
    c = int(np.argmax(1.0 - m.mapping_.max(axis=1)))  # the most mixed cluster
    row = X[np.flatnonzero(m.labels_ == c)[0]]
    n = 20000
    Xrep = sp.vstack([row] * n).tocsr()
    R = m.transform(Xrep).toarray()
    P = m.release_profiles_.toarray()
    idx = np.argmax((R[:, None, :] == P[None, :, :]).all(axis=2), axis=1)
    # identical profiles are merged before comparing frequencies
    _, group = np.unique(P, axis=0, return_inverse=True)
    freq = np.bincount(group[idx], minlength=group.max() + 1) / n
    expected = np.bincount(group, weights=m.mapping_[c], minlength=group.max() + 1)
    assert np.abs(freq - expected).max() < 0.015


def test_formats_and_dtypes(data, fitted):
    X, y = data
    for fmt in ("csr", "csc", "coo", "lil"):
        R = fitted.transform(X.asformat(fmt))
        assert sp.issparse(R) and R.format == fmt and R.shape == X.shape
    Ra = fitted.transform(sp.csr_array(X))
    assert isinstance(Ra, sp.sparray)
    D = fitted.transform(X.toarray())
    assert isinstance(D, np.ndarray) and D.shape == X.shape
    Xi = X.astype(np.int8)
    mi = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(Xi, y)
    Ri = mi.transform(Xi)
    assert Ri.dtype == np.int8
    assert set(np.unique(Ri.data)) <= {1, 2, 3, 4, 5}
    R32 = fitted.transform(X.astype(np.float32))
    assert R32.dtype == np.float32


def test_reproducible_with_seed_and_secure_by_default(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(X, y)
    assert (m.transform(X) != m.transform(X)).nnz == 0
    m2 = QuantizedPrivacyMapper(n_clusters=6).fit(X, y)  # OS entropy
    assert m2.transform(X).shape == X.shape
    assert m2.leakage_ < 1e-6


def test_users_without_ratings_go_through_the_mapping(data, fitted):
    X, y = data
    Z = sp.csr_matrix((5, X.shape[1]))
    R = fitted.transform(Z)
    assert R.shape == (5, X.shape[1])
    # an empty user lands in a cluster and gets that cluster's draw, like everyone
    labels = fitted.quantize(Z)
    assert labels.shape == (5,) and np.all(labels == labels[0])
    Xe = sp.vstack([X, Z]).tocsr()
    ye = np.r_[y, [0, 1, 0, 1, 0]]
    m = QuantizedPrivacyMapper(n_clusters=8, random_state=0).fit(Xe, ye)
    assert m.leakage_ < 1e-6


def test_unlabeled_users_are_ignored(data):
    X, y = data
    y2 = y.copy()
    y2[::3] = -1
    a = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(X, y2)
    b = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(X[y2 != -1], y[y2 != -1])
    np.testing.assert_allclose(a.prior_, b.prior_)
    yf = y.astype(float)
    yf[::3] = np.nan
    c = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(X, yf)
    np.testing.assert_allclose(a.prior_, c.prior_)


def test_smoothing_shrinks_towards_independence(data):
    X, y = data
    raw = QuantizedPrivacyMapper(n_clusters=8, smoothing=0.0, random_state=0).fit(X, y)
    big = QuantizedPrivacyMapper(n_clusters=8, smoothing=1e6, random_state=0).fit(X, y)
    assert raw.prior_leakage_ > 0.05
    assert big.prior_leakage_ < 1e-6
    np.testing.assert_allclose(big.prior_.sum(1), raw.prior_.sum(1), atol=1e-6)


def test_taste_embedding_distances_are_rms_prediction_differences(data):
    X, _ = data
    emb = TasteEmbedding(n_components=5, random_state=0).fit(X)
    E = emb.transform(X[:20])
    P = emb.predicted_offsets(E)
    d2 = ((E[:, None, :] - E[None]) ** 2).sum(-1)
    p2 = ((P[:, None, :] - P[None]) ** 2).mean(-1)
    np.testing.assert_allclose(d2, p2, rtol=1e-8, atol=1e-10)
    # the empty user sits at the origin: predicted ratings = g + b_i
    e0 = emb.transform(sp.csr_matrix((1, X.shape[1])))
    np.testing.assert_allclose(e0, 0.0, atol=1e-12)
    np.testing.assert_allclose(emb.predicted_ratings(e0)[0], emb.global_mean_ + emb.item_offset_)
    # the validated model predicts held-out ratings no worse than the user-mean baseline
    assert emb.validation_rmse_ > 0


def test_hamming_metric_on_binary_ratings():
    X, y = _ratings(n=250, m=30, seed=5)
    B = (X >= 4).astype(np.float64)
    m = QuantizedPrivacyMapper(n_clusters=6, metric="hamming", random_state=0).fit(B, y)
    assert set(np.unique(m.cluster_centers_)) <= {0.0, 1.0}
    # majority-vote centres: each is the coordinate-wise majority of its members
    Bd = B.toarray()
    for j in range(m.n_clusters_):
        members = Bd[m.labels_ == j]
        np.testing.assert_array_equal(m.cluster_centers_[j], (members.sum(0) * 2 > len(members)).astype(float))
    # costs are mean Hamming distances to centres (and to the empty vector)
    j0 = 0
    members = Bd[m.labels_ == j0]
    pts = np.vstack([m.cluster_centers_, np.zeros(B.shape[1])])
    expect = np.abs(members[:, None, :] - pts[None]).sum(-1).mean(0)
    np.testing.assert_allclose(m.cost_matrix_[j0], expect)
    R = m.transform(B)
    assert set(np.unique(R.data)) <= {1.0}


def test_hamming_kmodes_weights_equal_repeats():
    rng = np.random.default_rng(0)
    B = (rng.random((40, 8)) < 0.4).astype(float)
    w = rng.integers(1, 4, 40)
    c1, l1, i1 = hamming_kmodes(B, 3, sample_weight=w, random_state=0)
    rep = np.repeat(B, w, axis=0)
    D = np.abs(rep[:, None, :] - c1[None]).sum(-1)
    assert i1 == pytest.approx(D.min(axis=1).sum())


def test_representative_release(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=6, release="representative", random_state=0).fit(X, y)
    assert m.mapping_.shape == (m.n_clusters_, m.n_clusters_)  # no empty symbol
    P = m.release_profiles_.toarray()
    Xd = X.toarray()
    for j in range(m.n_clusters_):
        centroid = Xd[m.labels_ == j].mean(0)
        keep = centroid >= 0.5
        np.testing.assert_allclose(P[j][keep], np.clip(centroid[keep], 1, 5))
        assert np.all(P[j][~keep] == 0)


def test_raw_space_matches_kmeans_centroids(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=5, space="raw", random_state=0).fit(X.toarray(), y)
    Xd = X.toarray()
    for j in range(m.n_clusters_):
        np.testing.assert_allclose(m.cluster_centers_[j], Xd[m.labels_ == j].mean(0), atol=1e-8)


def test_sample_weight_aggregates_the_prior(data):
    X, y = data
    w = np.where(y == 1, 3.0, 1.0)
    m = QuantizedPrivacyMapper(n_clusters=6, smoothing=0.0, space="raw", random_state=0).fit(X, y, sample_weight=w)
    counts = np.zeros_like(m.prior_)
    np.add.at(counts, (y, m.labels_), w)
    np.testing.assert_allclose(m.prior_, counts / counts.sum())


# ----------------------------------------------------------------- bad input
def test_nan_and_inf_ratings_are_refused(data):
    X, y = data
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb.data[0] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            QuantizedPrivacyMapper(n_clusters=4).fit(Xb, y)


def test_negative_delta_and_both_budgets(data):
    X, y = data
    with pytest.raises(ValueError, match="delta.*-0.5"):
        QuantizedPrivacyMapper(delta=-0.5).fit(X, y)
    with pytest.raises(ValueError, match="not both"):
        QuantizedPrivacyMapper(n_clusters=4, delta=1.0, max_leakage=0.1).fit(X, y)
    with pytest.raises(TypeError, match="n_clusters"):
        QuantizedPrivacyMapper(n_clusters="many").fit(X, y)


def test_no_labels_and_single_class(data):
    X, y = data
    with pytest.raises(ValueError, match="no labeled users: all 300"):
        QuantizedPrivacyMapper().fit(X, np.full(X.shape[0], -1))
    with pytest.raises(ValueError, match="single class"):
        QuantizedPrivacyMapper().fit(X, np.where(y == 1, 1, -1))
    with pytest.raises(ValueError, match="requires y"):
        QuantizedPrivacyMapper().fit(X, None)


def test_too_many_clusters_is_clipped_with_a_warning(data):
    X, y = data
    with pytest.warns(UserWarning, match="n_clusters=500 is larger than the number of labeled users \\(30\\)"):
        m = QuantizedPrivacyMapper(n_clusters=500, random_state=0).fit(X[:30], y[:30])
    assert m.n_clusters_ <= 30


def test_feature_count_mismatch(fitted, data):
    X, _ = data
    with pytest.raises(ValueError, match="40 features"):
        fitted.transform(X[:, :30])


def test_unfitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        QuantizedPrivacyMapper().transform(np.ones((2, 3)))


def test_auto_number_of_clusters(data):
    X, y = data
    m = QuantizedPrivacyMapper(random_state=0).fit(X, y)  # 300 labeled users -> 15 clusters
    assert m.n_clusters_ == 15
    small = QuantizedPrivacyMapper(random_state=0).fit(X[:30], y[:30])
    assert small.n_clusters_ == 2


def test_transform_never_densifies():
    """Peak extra memory of a sparse transform stays near the input's size (dense would be 130x)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n, m, per = 60000, 4000, 15
    indices = (rng.integers(0, m // per, (n, per)) + np.arange(per) * (m // per)).ravel().astype(np.int32)
    data = rng.integers(1, 6, n * per).astype(np.float64)
    X = sp.csr_matrix((data, indices, np.arange(n + 1) * per), shape=(n, m))
    y = rng.integers(0, 2, n)
    mapper = QuantizedPrivacyMapper(n_clusters=10, random_state=0).fit(X[:2000], y[:2000])
    size = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        R = mapper.transform(X)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert R.shape == X.shape and sp.issparse(R)
    assert peak < 3 * size, (peak, size)
