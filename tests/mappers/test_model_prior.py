"""QuantizedPrivacyMapper(prior="model"): each cluster's class split from a cross-fitted model (docs/frontier.md)."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from privrelease.exceptions import PrivacyLeakWarning
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mapping import mutual_information
from privrelease.utils import check_random_source


@pytest.fixture(scope="module")
def data(class_shifted_ratings):
    return class_shifted_ratings(n=200, m=30, n_classes=2)


@pytest.fixture(scope="module")
def pair(data):
    X, y = data
    kw = dict(n_clusters=15, random_state=0)
    return (QuantizedPrivacyMapper(**kw).fit(X, y), QuantizedPrivacyMapper(prior="model", **kw).fit(X, y))


def test_model_prior_is_the_cross_fitted_soft_count(data, pair):
    """prior_ = (sum over members of the out-of-fold logistic posterior + smoothing * p(a)) / total, recomputed."""
    X, y = data
    counts, model = pair
    np.testing.assert_array_equal(counts.cluster_centers_, model.cluster_centers_)  # same clusters
    np.testing.assert_array_equal(counts.empirical_prior_, model.empirical_prior_)  # the raw counts stay reported
    E = StandardScaler().fit_transform(model.embedding_.transform(X))
    a = np.searchsorted(model.classes_, y)
    seed = check_random_source(0).spawn_seed()
    folds = list(StratifiedKFold(5, shuffle=True, random_state=seed).split(E, a))
    best, best_loss = None, np.inf
    with threadpool_limits(limits=1):
        for C in (0.01, 0.1, 1.0, 10.0):
            proba = np.empty((E.shape[0], 2))
            for train, test in folds:
                assert np.intersect1d(train, test).size == 0  # no user's label enters her own prediction
                proba[test] = LogisticRegression(C=C, max_iter=1000).fit(E[train], a[train]).predict_proba(E[test])
            loss = -np.mean(np.log(proba[np.arange(a.size), a]))
            if loss < best_loss:
                best, best_loss = proba, loss
    soft = np.zeros((2, model.n_clusters_))
    for c in range(model.n_clusters_):
        soft[:, c] = best[model.labels_ == c].sum(axis=0)
    p_a = np.bincount(a) / a.size
    expected = soft + 1.0 * p_a[:, None]  # smoothing=1
    np.testing.assert_allclose(model.prior_, expected / expected.sum(), rtol=1e-6, atol=1e-9)
    # the cluster shares q(c) are the counts' (each member's posterior sums to one)
    np.testing.assert_allclose(model.prior_.sum(axis=0), counts.prior_.sum(axis=0), rtol=1e-9)


def test_model_prior_tracks_a_real_dependence_and_the_mapping_removes_it(pair):
    counts, model = pair
    share = lambda q: q[1] / q.sum(axis=0)  # noqa: E731  q(a=1 | c)
    assert np.corrcoef(share(counts.prior_), share(model.prior_))[0, 1] > 0.9
    assert model.prior_leakage_ > 0.3  # the attribute shifts the tastes: clusters are far from independent
    assert model.leakage_ < 1e-6  # perfect privacy under the fitted (model) prior, by default
    assert mutual_information(model.prior_ @ model.mapping_) < 1e-6


def test_model_prior_does_not_invent_leakage_from_sampling_noise(data):
    """An attribute independent of the ratings: counts in 20 small clusters show spurious dependence, the model little.

    (Less leakage to remove does not mean less distortion: the model's dependence, however small, is smooth along
    one direction of the taste space, and removing it mixes far-apart clusters; measured in docs/frontier.md.)
    """
    X, _ = data
    y = np.random.default_rng(7).integers(0, 2, X.shape[0])
    kw = dict(n_clusters=20, random_state=0)
    counts = QuantizedPrivacyMapper(**kw).fit(X, y)
    model = QuantizedPrivacyMapper(prior="model", **kw).fit(X, y)
    assert model.prior_leakage_ < counts.prior_leakage_ / 3


def test_model_prior_release_is_a_function_of_c_hat(data, pair):
    X, _ = data
    _, model = pair
    R = model.transform(X).toarray()
    P = model.release_profiles_.toarray()
    assert (R[:, None, :] == P[None]).all(axis=2).any(axis=1).all()


def test_model_prior_auto_clusters_and_round_trip(data, tmp_path):
    import privrelease

    X, y = data
    m = QuantizedPrivacyMapper(prior="model", random_state=0).fit(X, y)
    assert QuantizedPrivacyMapper(random_state=0).fit(X, y).n_clusters_ == 200 // 20
    assert 200 // 20 < m.n_clusters_ <= 200 // 5  # one cluster per 5 labeled users (empty ones dropped)
    path = m.save(tmp_path / "m.npz")
    with pytest.warns(PrivacyLeakWarning, match="integer random_state"):
        back = privrelease.load(path)
    np.testing.assert_array_equal(back.prior_, m.prior_)
    np.testing.assert_array_equal(back.transform(X).toarray(), m.transform(X).toarray())


def test_model_prior_refusals(data):
    X, y = data
    y_small = y.copy()
    y_small[np.flatnonzero(y == 1)[6:]] = 0  # class 1 keeps 6 labeled users
    with pytest.raises(ValueError, match=r"class 1 has 6"):
        QuantizedPrivacyMapper(prior="model", n_clusters=5, random_state=0).fit(X, y_small)
    Y = np.column_stack([y, np.random.default_rng(1).integers(0, 2, y.size)])
    with pytest.raises(ValueError, match="protect='marginal'"):
        QuantizedPrivacyMapper(prior="model", protect="marginal", n_clusters=5, random_state=0).fit(X, Y)
    joint = QuantizedPrivacyMapper(prior="model", protect="joint", n_clusters=5, random_state=0).fit(X, Y)
    assert joint.leakage_ < 1e-6
    with pytest.raises(ValueError, match="prior"):
        QuantizedPrivacyMapper(prior="logistic").fit(X, y)
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="prior='model'"):
        QuantizedPrivacyMapper(prior="model", n_clusters=5).fit(da.from_array(X.toarray(), chunks=(50, -1)), y)
