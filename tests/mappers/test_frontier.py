"""QuantizedPrivacyMapper's frontier: posterior-mixture profiles and barycenter refinement (docs/frontier.md)."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.exceptions import PrivacyLeakWarning
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mapping import mutual_information


@pytest.fixture(scope="module")
def data(class_shifted_ratings):
    return class_shifted_ratings()


@pytest.fixture(scope="module")
def pair(data):
    X, y = data
    post = QuantizedPrivacyMapper(n_clusters=10, random_state=0).fit(X, y)
    clus = QuantizedPrivacyMapper(n_clusters=10, profile="cluster", random_state=0).fit(X, y)
    return post, clus


def test_mixture_weights_are_the_posterior_exactly(pair):
    m, _ = pair
    k = m.n_clusters_
    q = [Fraction(v) for v in m.prior_.sum(axis=0)]  # exact arithmetic on the stored floats
    M = [[Fraction(v) for v in row] for row in m.mapping_]
    for j in range(k):
        joint = [q[c] * M[c][j] for c in range(k)]
        total = sum(joint)
        if total == 0:
            np.testing.assert_array_equal(m.profile_weights_[:, j], np.eye(k)[:, j])
            continue
        expected = np.array([float(v / total) for v in joint])
        np.testing.assert_allclose(m.profile_weights_[:, j], expected, rtol=1e-12, atol=1e-15)
    # at perfect privacy the posterior is a real mixture (not the identity)
    assert np.max(1.0 - m.profile_weights_.max(axis=0)) > 0.05


def test_posterior_profiles_are_conditional_means(data, pair):
    """Row j rates its items E[predicted rating | c_hat=j] (mean of the predictions at the centres)."""
    X, y = data
    m, _ = pair
    k = m.n_clusters_
    P = m.release_profiles_.toarray()
    W = m.profile_weights_
    pred_at_centres = m.embedding_.predicted_ratings(m.cluster_centers_)  # k x items
    lo, hi = m.rating_range_
    Xl = X.toarray()  # every user is labeled here
    lengths = np.array([np.median((Xl[m.labels_ == c] != 0).sum(axis=1)) for c in range(k)])
    share = np.array([(Xl[m.labels_ == c] != 0).mean(axis=0) for c in range(k)])
    for j in range(k):
        expected = np.clip(W[:, j] @ pred_at_centres, lo, hi)
        kept = np.flatnonzero(P[j])
        np.testing.assert_allclose(P[j, kept], expected[kept], rtol=1e-10)
        # the items are the mixture's most-rated ones, as many as its expected profile length
        assert kept.size == min(int(np.rint(W[:, j] @ lengths)), int(np.count_nonzero(W[:, j] @ share)))
        mix_share = W[:, j] @ share
        assert mix_share[kept].min() >= np.delete(mix_share, kept).max(initial=0.0) - 1e-12
    assert not P[-1].any()  # the empty profile stays empty


def test_profile_choice_leaves_the_mapping_and_leakage_unchanged(pair):
    post, clus = pair
    np.testing.assert_array_equal(post.mapping_, clus.mapping_)
    assert post.leakage_ == clus.leakage_ and post.distortion_ == clus.distortion_
    assert post.leakage_ < 1e-6
    np.testing.assert_array_equal(clus.profile_weights_, np.eye(clus.n_clusters_))
    assert (post.release_profiles_ != clus.release_profiles_).nnz > 0


def test_release_is_a_function_of_c_hat_and_of_opted_in_data_only(data):
    X, y = data
    y2 = y.copy()
    y2[:60] = -1  # 60 users do not opt in
    rng = np.random.default_rng(5)
    X2 = X.toarray()
    X2[:60] = np.where(X2[:60] != 0, rng.integers(1, 6, X2[:60].shape), 0)  # change only their ratings
    a = QuantizedPrivacyMapper(n_clusters=8, random_state=0).fit(X, y2)
    b = QuantizedPrivacyMapper(n_clusters=8, random_state=0).fit(sp.csr_matrix(X2), y2)
    assert (a.release_profiles_ != b.release_profiles_).nnz == 0
    R = a.transform(X).toarray()
    P = a.release_profiles_.toarray()
    assert (R[:, None, :] == P[None]).all(axis=2).any(axis=1).all()


# every budget kind with both metrics between the cases; the euclidean max_leakage=0.05 case took
# 95 s of solver time (max_leakage mode on refined points, issue 10), so a leakage cap runs on sqeuclidean
@pytest.mark.parametrize("metric, budget, k", [
    ("euclidean", dict(max_leakage=0.0), 10), ("sqeuclidean", dict(max_leakage=0.0), 10),
    ("sqeuclidean", dict(max_leakage=0.05), 5), ("euclidean", "delta", 5), ("sqeuclidean", "delta", 5)])
def test_refinement_never_worsens_the_certified_objective(data, metric, budget, k):
    X, y = data
    if budget == "delta":  # a distortion budget: the leakage is the objective
        ref = QuantizedPrivacyMapper(n_clusters=k, metric=metric, clustering="plain", random_state=0).fit(X, y)
        budget = dict(delta=float(0.5 * (ref.distortion_ + ref.smallest_delta_)))
    # plain clusters: attribute-free ones (the default with these three classes) can leave too little leakage
    kw = dict(n_clusters=k, metric=metric, clustering="plain", random_state=0)
    m0 = QuantizedPrivacyMapper(**kw, **budget).fit(X, y)
    m3 = QuantizedPrivacyMapper(**kw, n_refine=3, **budget).fit(X, y)
    np.testing.assert_array_equal(m0.cluster_centers_, m3.cluster_centers_)
    if "delta" in budget:
        assert m3.leakage_ <= m0.leakage_
        assert m3.distortion_ <= budget["delta"] * (1 + 1e-6)
    else:
        assert m3.distortion_ <= m0.distortion_
        assert m3.leakage_ <= budget["max_leakage"] + 1e-6
    assert 0 <= m3.n_refine_ <= 3
    if "delta" in budget:
        assert m0.leakage_ > 1e-3  # the budget binds: there is leakage to lower


def test_sqeuclidean_refinement_step_is_the_exact_barycenter(data):
    X, y = data
    kw = dict(n_clusters=10, metric="sqeuclidean", random_state=0)
    m0 = QuantizedPrivacyMapper(**kw).fit(X, y)
    m1 = QuantizedPrivacyMapper(n_refine=1, **kw).fit(X, y)
    assert m1.n_refine_ == 1  # the step was kept on this data
    E = m0.embedding_.transform(X)
    lab = m0.labels_
    k = m0.n_clusters_
    size = np.bincount(lab, minlength=k)
    q = m0.empirical_prior_.sum(axis=0)  # the labeled users' cluster shares n(c) / n weigh the distortion
    for j in range(k):
        w = q[lab] * m0.mapping_[lab, j] / size[lab]  # n(c) p(j|c) / |c| for each member
        if w.sum() == 0:
            continue
        z = w @ E / w.sum()
        np.testing.assert_allclose(m1.output_points_[j], z, rtol=1e-9, atol=1e-12)
        # the barycenter minimises the weighted squared distance: any nudge costs more
        f = lambda p: float(w @ ((E - p) ** 2).sum(axis=1))  # noqa: E731
        for d in np.eye(E.shape[1])[:3]:
            assert f(z) <= f(z + 1e-3 * d) and f(z) <= f(z - 1e-3 * d)
    # costs are the members' mean squared distances to the moved points (independent recomputation)
    pts = np.vstack([m1.output_points_, np.zeros(E.shape[1])])
    D = ((E[:, None, :] - pts[None]) ** 2).sum(axis=2)
    cost = np.vstack([D[lab == c].mean(axis=0) for c in range(k)])
    np.testing.assert_allclose(m1.cost_matrix_, cost, rtol=1e-9, atol=1e-12)
    # chain: old mapping at the new points is no worse, and the re-solved mapping no worse still
    moved = float(np.sum(q[:, None] * m0.mapping_ * cost))
    assert m1.distortion_ <= moved + 1e-9 <= m0.distortion_ + 1e-9
    assert mutual_information(m1.prior_ @ m1.mapping_) < 1e-6


def test_refined_mapper_round_trips_and_tampering_is_refused(data, tmp_path):
    import privrelease

    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=8, n_refine=2, random_state=0).fit(X, y)
    assert m.n_refine_ >= 1
    path = m.save(tmp_path / "m.npz")
    with pytest.warns(PrivacyLeakWarning, match="integer random_state"):
        back = privrelease.load(path)
    np.testing.assert_array_equal(back.output_points_, m.output_points_)
    np.testing.assert_array_equal(back.profile_weights_, m.profile_weights_)
    m.profile_weights_ = m.profile_weights_[:, ::-1].copy()
    with pytest.raises(ValueError, match="profile_weights_"):
        m._check_fitted_state()


def test_bad_frontier_parameters(data):
    X, y = data
    with pytest.raises(ValueError, match="profile"):
        QuantizedPrivacyMapper(profile="mixture").fit(X, y)
    with pytest.raises(ValueError, match="n_refine"):
        QuantizedPrivacyMapper(n_refine=-1).fit(X, y)


def test_without_privacy_the_posterior_profile_is_the_cluster_profile(data):
    """An identity mapping makes p(c | c_hat=j) one-hot: same items as cluster j's own profile, rated at its centre."""
    X, y = data
    # plain k-means: each cluster's members are closest, on average, to their own centre
    kw = dict(n_clusters=8, max_leakage=10.0, clustering="plain", random_state=0)
    post = QuantizedPrivacyMapper(**kw).fit(X, y)
    clus = QuantizedPrivacyMapper(**kw, profile="cluster").fit(X, y)
    k = post.n_clusters_
    np.testing.assert_allclose(post.mapping_[:, :k], np.eye(k), atol=1e-6)
    np.testing.assert_allclose(post.profile_weights_, np.eye(k), atol=1e-5)
    A, B = post.release_profiles_.toarray(), clus.release_profiles_.toarray()
    np.testing.assert_array_equal(A != 0, B != 0)
    lo, hi = post.rating_range_
    pred = np.clip(post.embedding_.predicted_ratings(post.cluster_centers_), lo, hi)
    np.testing.assert_allclose(A[:k][A[:k] != 0], pred[A[:k] != 0], atol=1e-4)


def test_refinement_needs_the_users_in_memory(data):
    da = pytest.importorskip("dask.array")
    X, y = data
    with pytest.raises(ValueError, match="n_refine=2 needs the labeled users in memory"):
        QuantizedPrivacyMapper(n_refine=2).fit(da.from_array(X.toarray(), chunks=(60, 40)), y)


# ------------------------------------------------------------- attribute-free clustering
def _dense_raw(seed=1, n=180, m=12, n_classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, m)) + 2.0 * rng.normal(size=(n_classes, m))[y]
    return X, y


def test_attribute_directions_span_the_class_mean_offsets():
    X, y = _dense_raw()
    m = QuantizedPrivacyMapper(n_clusters=6, space="raw", clustering="attribute_free", random_state=0).fit(X, y)
    V = m.attribute_directions_
    offsets = np.array([X[y == a].mean(axis=0) - X.mean(axis=0) for a in range(3)])  # independent, by class
    assert V.shape == (np.linalg.matrix_rank(offsets), X.shape[1]) == (2, 12)
    np.testing.assert_allclose(V @ V.T, np.eye(2), atol=1e-12)
    residual = offsets - offsets @ V.T @ V          # every offset lies in the span of V
    assert np.abs(residual).max() < 1e-10 * np.abs(offsets).max()


def test_attribute_free_clusters_ignore_what_the_attribute_explains():
    """Moving each class along the between-class span changes nothing of the clustering."""
    X, y = _dense_raw()
    offsets = np.array([X[y == a].mean(axis=0) - X.mean(axis=0) for a in range(3)])
    X_shifted = X + 1.5 * offsets[y]                # class means move within their own span
    kw = dict(n_clusters=6, space="raw", clustering="attribute_free", random_state=0)
    a = QuantizedPrivacyMapper(**kw).fit(X, y)
    b = QuantizedPrivacyMapper(**kw).fit(X_shifted, y)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    plain = QuantizedPrivacyMapper(n_clusters=6, space="raw", clustering="plain", random_state=0).fit(X, y)
    # the plain clusters follow the classes; the attribute-free ones mix them (higher conditional entropy)
    def class_purity(labels):
        return sum(np.bincount(y[labels == j]).max() for j in np.unique(labels)) / y.size
    assert class_purity(a.labels_) < class_purity(plain.labels_)


def test_attribute_free_centres_are_member_means_and_the_guarantee_holds(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=10, clustering="attribute_free", random_state=0).fit(X, y)
    E = m._embed(X)
    for j in range(m.n_clusters_):
        np.testing.assert_allclose(m.cluster_centers_[j], E[m.labels_ == j].mean(axis=0), atol=1e-10)
    assert m.leakage_ < 1e-6 and m.solver_result_.status == "optimal"     # perfect privacy, certified
    released = m.transform(X)
    profiles = {tuple(r) for r in m.release_profiles_.toarray()}
    assert {tuple(r) for r in released.toarray()} <= profiles               # a function of c_hat alone


def test_attribute_free_users_join_the_partition_the_prior_counts(data):
    """The quantizer applied at transform time is the k-means partition whose class split the prior counts.

    Section (j): with class-dependent tastes, the whole-space centres of attribute-free clusters still differ
    along the between-class directions, so the nearest centre in the whole space is another, class-dependent
    partition. Users must join the nearest centre after the same projection as the clustering.
    """
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=10, clustering="attribute_free", random_state=0).fit(X, y)
    E, V, C = m._embed(X), m.attribute_directions_, m.cluster_centers_
    assert V.shape[0] == 2
    # independent computation: nearest centre once both are projected (the constant cancels)
    proj = ((E - E @ V.T @ V)[:, None, :] - (C - C @ V.T @ V)[None]) ** 2
    np.testing.assert_array_equal(m._quantize(X), proj.sum(axis=2).argmin(axis=1))
    np.testing.assert_array_equal(m._quantize(X), m.labels_)    # the labeled users' own clusters
    whole = ((E[:, None, :] - C[None]) ** 2).sum(axis=2).argmin(axis=1)
    assert np.mean(whole != m.labels_) > 0.05   # the whole-space rule would be another partition on these data
    # so the class split the certificate is computed for is the one transform applies
    counts = np.zeros((3, m.n_clusters_))
    np.add.at(counts, (y, m._quantize(X)), 1.0)
    lab = np.zeros_like(counts)
    np.add.at(lab, (y, m.labels_), 1.0)
    np.testing.assert_array_equal(counts, lab)


def test_plain_clusters_join_the_nearest_centre_in_the_whole_space(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=10, clustering="plain", random_state=0).fit(X, y)
    assert m.attribute_directions_.shape[0] == 0
    E, C = m._embed(X), m.cluster_centers_
    np.testing.assert_array_equal(m._quantize(X), ((E[:, None, :] - C[None]) ** 2).sum(axis=2).argmin(axis=1))


def test_attribute_free_clustering_refused_on_dask(data):
    da = pytest.importorskip("dask.array")
    X, y = data
    Xd = da.from_array(X.toarray(), chunks=(80, X.shape[1]))
    with pytest.raises(ValueError, match="clustering='attribute_free'"):
        QuantizedPrivacyMapper(n_clusters=5, clustering="attribute_free", random_state=0).fit(Xd, y)


def test_auto_clustering_is_attribute_free_beyond_two_classes(data):
    X, y = data                                                          # three classes
    y2 = np.where(y >= 0, (y > 0).astype(int), -1)                       # merged into two
    for labels, expected in ((y2, "plain"), (y, "attribute_free")):
        auto = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(X, labels)
        same = QuantizedPrivacyMapper(n_clusters=6, clustering=expected, random_state=0).fit(X, labels)
        np.testing.assert_array_equal(auto.labels_, same.labels_)
        np.testing.assert_allclose(auto.mapping_, same.mapping_, atol=1e-12)
        n_classes = np.unique(labels[labels >= 0]).size
        # attribute_free: one direction per class beyond the first; none for plain
        assert auto.attribute_directions_.shape[0] == (n_classes - 1 if expected == "attribute_free" else 0)


@pytest.mark.parametrize("n_users, n_classes, clustering", [
    (240, 3, "auto"),             # attribute-free: one cluster per 10 labeled users -> 24
    (240, 2, "auto"),             # plain (binary): one per 20 -> 12
    (240, 3, "plain"),            # the rule follows the clustering actually used -> 12
    (240, 2, "attribute_free"),   # ... also when asked for explicitly -> 24
    (40, 3, "auto"),              # 4
    (15, 3, "auto"),              # floor of 2
    (2030, 3, "auto"),            # capped at 200
    (1030, 2, "auto"),            # capped at 50
])
def test_auto_number_of_clusters_follows_the_clustering(n_users, n_classes, clustering, class_shifted_ratings):
    """n_clusters='auto' (counted prior): n_labeled // 10 in [2, 200] for attribute-free clusters, n_labeled // 20
    in [2, 50] otherwise, and the fit is exactly the fit with that integer."""
    X, y = class_shifted_ratings(n=n_users, n_classes=n_classes, seed=1)
    auto = QuantizedPrivacyMapper(clustering=clustering, random_state=0).fit(X, y)
    free = auto.attribute_directions_.shape[0] > 0
    assert free == (clustering == "attribute_free" or (clustering == "auto" and n_classes > 2))
    expected = min(max(n_users // 10, 2), 200) if free else min(max(n_users // 20, 2), 50)
    assert auto.n_clusters_ == expected
    same = QuantizedPrivacyMapper(n_clusters=expected, clustering=clustering, random_state=0).fit(X, y)
    np.testing.assert_array_equal(auto.labels_, same.labels_)
    np.testing.assert_allclose(auto.mapping_, same.mapping_, atol=1e-12)
