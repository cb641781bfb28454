"""QuantizedPrivacyMapper(n_clusters="heldout"): the number of clusters the held-out users vouch for.

The rule (docs/frontier.md, section (h)) refits the clusters, prior and mapping on folds of the labeled
users and measures the leakage the held-out users actually get, against a permutation null.
"""

import itertools

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from privrelease.exceptions import PrivacyLeakWarning
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mappers._quantized import (
    _HELDOUT_FOLDS,
    _HELDOUT_USERS_PER_CLUSTER,
    _heldout_choice,
    _heldout_null,
    _heldout_statistic,
)


def _points(n=300, seed=0, attribute="independent"):
    """Users as points in the plane (space="raw"); the attribute independent of them or the side of a line."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = rng.integers(0, 2, n) if attribute == "independent" else (X[:, 0] > 0).astype(int)
    return X, y


def _mapper(**kw):
    return QuantizedPrivacyMapper(n_clusters="heldout", space="raw", release="representative", random_state=0, **kw)


@pytest.fixture(scope="module")
def independent():
    X, y = _points()
    return X, y, _mapper().fit(X, y)


@pytest.fixture(scope="module")
def sharp():
    X, y = _points(attribute="sharp")
    return X, y, _mapper(smoothing=5.0).fit(X, y)


def _brute_force_mi(a, c, w, M, n_classes):
    """I(A; C_hat) by explicit sums over users, classes and outputs."""
    P = np.zeros((n_classes, M.shape[1]))
    for u in range(a.size):
        for j in range(M.shape[1]):
            P[a[u], j] += w[u] * M[c[u], j]
    P /= P.sum()
    pa, pj = P.sum(axis=1), P.sum(axis=0)
    return sum(P[i, j] * np.log2(P[i, j] / (pa[i] * pj[j]))
               for i in range(n_classes) for j in range(M.shape[1]) if P[i, j] > 0)


def test_heldout_statistic_is_the_plug_in_leakage_with_the_draw_integrated_out():
    rng = np.random.default_rng(3)
    a, c, w = rng.integers(0, 3, 9), rng.integers(0, 4, 9), rng.random(9) + 0.5
    M = rng.random((4, 5))
    M /= M.sum(axis=1, keepdims=True)
    assert _heldout_statistic(a, c, w, M, 3) == pytest.approx(_brute_force_mi(a, c, w, M, 3), abs=1e-12)
    # a constant release leaks nothing; the identity on class-pure clusters leaks H(A) of the held-out users
    assert _heldout_statistic(a, c, w, np.ones((4, 1)), 3) == pytest.approx(0.0, abs=1e-12)
    p = np.bincount(a, weights=w, minlength=3) / w.sum()
    entropy = -np.sum(p[p > 0] * np.log2(p[p > 0]))
    assert _heldout_statistic(a, a, w, np.eye(3), 3) == pytest.approx(entropy, abs=1e-12)
    # the vectorised permutation null is the statistic of each permuted labelling
    perms = np.array([rng.permutation(9) for _ in range(5)])
    for kind in ("mutual_information", "maximal_leakage"):
        np.testing.assert_allclose(_heldout_null(a, perms, c, w, M, 3, kind),
                                   [_heldout_statistic(a[p], c, w, M, 3, kind) for p in perms], atol=1e-12)


def test_choice_is_a_step_down_scan_and_monotone_in_the_tolerance():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = rng.integers(1, 8)
        excess, noise, dist = rng.normal(0, 0.02, n), rng.random(n) * 0.02, rng.random(n)
        chosen = []
        for tol in np.linspace(0, 0.06, 13):
            i = _heldout_choice(excess, noise, dist, tol)
            ok = excess + noise <= tol
            assert 0 <= i < n
            # every candidate up to the chosen one passed, unless the smallest failed and was taken as the fallback
            assert ok[: i + 1].all() or (i == 0 and not ok[0])
            if ok[0]:
                stop = n if ok.all() else int(np.argmin(ok))
                assert dist[i] == dist[:stop].min()
            chosen.append(dist[i])
        accepted = [d for d, t in zip(chosen, np.linspace(0, 0.06, 13)) if excess[0] + noise[0] <= t]
        assert all(x >= y for x, y in itertools.pairwise(accepted))  # more tolerance: never more distortion


def test_grid_and_fitted_figures(independent):
    X, y, m = independent
    n = X.shape[0]
    expected = sorted({int(np.clip(round(n / u), 2, n)) for u in _HELDOUT_USERS_PER_CLUSTER})
    np.testing.assert_array_equal(m.heldout_n_clusters_, expected)
    for name in ("heldout_leakage_excess_", "heldout_noise_", "heldout_distortion_"):
        assert getattr(m, name).shape == m.heldout_n_clusters_.shape
        assert np.all(np.isfinite(getattr(m, name)))
    assert np.all(m.heldout_noise_ > 0)
    i = _heldout_choice(m.heldout_leakage_excess_, m.heldout_noise_, m.heldout_distortion_, m.heldout_tolerance)
    assert m.n_clusters_ <= m.heldout_n_clusters_[i]  # never a k outside the grid (empty clusters may drop)
    assert m.leakage_ < 1e-6  # the final mapping is still perfectly private under its fitted prior


def test_more_clusters_cost_less_on_the_held_out_users(independent):
    """The held-out distortion falls with k (k-means on the same users): the rule's reason to want more."""
    _, _, m = independent
    assert m.heldout_distortion_[-1] < m.heldout_distortion_[0]


def test_an_independent_attribute_shows_no_excess(independent):
    """No dependence to misestimate: the held-out leakage stays within noise of its permutation null at every k."""
    _, _, m = independent
    assert np.all(np.abs(m.heldout_leakage_excess_) <= 3 * m.heldout_noise_)


def test_a_dishonest_prior_at_large_k_is_rejected(sharp):
    """The attribute is a noise-free function of the position, so fine clusters are pure; with a few users per
    cluster the smoothed prior (5 pseudo-users) understates that purity, the perfectly private mapping
    under-corrects, and the held-out users see the leak: the excess grows with k and the rule keeps few clusters."""
    _, _, m = sharp
    ex, noise = m.heldout_leakage_excess_, m.heldout_noise_
    assert ex[-1] > 2.5 * noise[-1] and ex[-1] > m.heldout_tolerance
    # 1.5 noise sd: since the distortion is weighted by the labeled users' cluster shares (not the smoothed
    # prior's), the mapping at large k leaks less on the held-out users (0.039 / 0.061 against 0.069 / 0.084 bits)
    assert ex[-2:].mean() > ex[:2].mean() + 1.5 * noise[-1]
    assert m.n_clusters_ == m.heldout_n_clusters_[0]


def test_reproducible_and_tolerance_zero_never_accepts_more(independent):
    """Same seed: the same folds, permutations and figures (the tolerance only enters the choice)."""
    X, y, m = independent
    strict = _mapper(heldout_tolerance=0.0).fit(X, y)
    for name in ("heldout_n_clusters_", "heldout_leakage_excess_", "heldout_noise_", "heldout_distortion_"):
        np.testing.assert_array_equal(getattr(strict, name), getattr(m, name))
    assert strict.n_clusters_ <= m.n_clusters_ or strict.n_clusters_ == m.heldout_n_clusters_[0]
    i0 = _heldout_choice(m.heldout_leakage_excess_, m.heldout_noise_, m.heldout_distortion_, 0.0)
    i1 = _heldout_choice(m.heldout_leakage_excess_, m.heldout_noise_, m.heldout_distortion_, m.heldout_tolerance)
    assert m.heldout_distortion_[i1] <= m.heldout_distortion_[i0]


def test_bad_values_are_named():
    X, y = _points(n=100)
    with pytest.raises(InvalidParameterError, match="n_clusters"):
        QuantizedPrivacyMapper(n_clusters="cv").fit(X, y)
    with pytest.raises(InvalidParameterError, match="heldout_tolerance"):
        QuantizedPrivacyMapper(n_clusters="heldout", heldout_tolerance=-0.1).fit(X, y)
    few = np.full(100, -1)
    few[:30] = y[:30]
    with pytest.raises(ValueError, match=f"at least {_HELDOUT_FOLDS * 10} labeled users.*got 30"):
        _mapper().fit(X, few)
    Y = np.column_stack([y, 1 - y])
    with pytest.raises(ValueError, match="protect='marginal'"):
        _mapper(protect="marginal").fit(X, Y)


def test_round_trip_and_tampering(independent, tmp_path):
    import privrelease

    X, _, m = independent
    path = m.save(tmp_path / "m.npz")
    with pytest.warns(PrivacyLeakWarning, match="integer random_state"):
        back = privrelease.load(path)
    for name in ("heldout_n_clusters_", "heldout_leakage_excess_", "heldout_noise_", "heldout_distortion_"):
        np.testing.assert_array_equal(getattr(back, name), getattr(m, name))
    np.testing.assert_array_equal(back.transform(X), m.transform(X))
    bad = back
    bad.heldout_leakage_excess_ = np.full_like(m.heldout_leakage_excess_, 1.0)  # every candidate fails: the smallest
    bad.heldout_n_clusters_ = m.heldout_n_clusters_ - m.heldout_n_clusters_[0] + 2  # ... is now 2 clusters
    assert m.n_clusters_ > 2
    with pytest.raises(ValueError, match="held-out figures choose 2 clusters"):
        bad._check_fitted_state()
    bad.heldout_n_clusters_ = m.heldout_n_clusters_
    bad.heldout_noise_ = m.heldout_noise_[:-1]
    with pytest.raises(ValueError, match="heldout_noise_"):
        bad._check_fitted_state()


def test_two_attributes_protected_jointly():
    """A 2-D y with protect="joint": the rule measures the leakage of the tuple (4 classes here)."""
    X, y = _points(attribute="sharp")
    Y = np.column_stack([y, np.random.default_rng(1).integers(0, 2, y.size)])
    m = _mapper().fit(X, Y)
    assert m.prior_.shape[0] == 4 and m.leakage_ < 1e-6
    assert m.n_clusters_ <= m.heldout_n_clusters_.max()
    assert np.all(np.isfinite(m.heldout_leakage_excess_))
