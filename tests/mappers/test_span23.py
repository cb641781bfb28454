"""QuantizedPrivacyMapper(class_directions=...): attribute-free clustering that removes only the between-class
directions whose signal exceeds the sampling noise of the class means (docs/frontier.md, section (s)).

The rule (``_significant_directions``): the Fisher eigenvalues of the labeled users' between-class scatter in their
total-covariance metric against the null quantile of the largest one (section (t)). Checked against closed forms on
Gaussian points with planted class offsets (the planted span, and no direction with no class effect); the certificate
is checked whatever the rule keeps (the prior is counted on the partition the release applies, which reads the
ratings only).
"""

import warnings

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

import privrelease
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mappers._quantized import _significant_directions


def _planted(seed, n=2000, d=8, m=6, r=2, scale=1.0):
    """Gaussian points of ``m`` classes (equally likely) whose means differ along ``r`` orthonormal directions (rows of
    the third value; none for ``r = 0``), each direction carrying a between-class variance of about ``scale ** 2``
    (the class codes are ``r`` orthonormal contrasts, so no planted direction is weak), an anisotropic within-class
    covariance (standard deviations 0.5 to 2)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, m, n)
    planted = np.linalg.qr(rng.normal(size=(d, d)))[0][:, :r].T
    contrasts = np.linalg.qr(np.column_stack([np.ones(m), rng.normal(size=(m, m - 1))]))[0][:, 1:r + 1]
    E = rng.normal(size=(n, d)) * np.linspace(0.5, 2.0, d)
    if r:
        E += (np.sqrt(m) * scale * contrasts)[a] @ planted
    return E, a, planted


@pytest.mark.parametrize("r", [1, 2, 3])
def test_planted_offsets_along_r_directions_keep_exactly_those_r(r):
    """Six classes whose means differ along r < 5 directions, 2,000 labeled users: the r planted directions are far
    above the null and the 5 - r others are noise, so the rule keeps exactly r except when a noise direction passes
    the null's 95th percentile (at most about 5 % of fits): exactly r on at least 8 of 10 seeds, never fewer than r,
    and the kept span holds the planted directions (closed form: the class-mean offsets lie in the planted span)."""
    kept = []
    for seed in range(10):
        E, a, planted = _planted(seed, r=r)
        V, theta, threshold = _significant_directions(E, a, np.ones(a.size))
        assert theta.shape == (5,) and V.shape[1] == E.shape[1]
        np.testing.assert_allclose(V @ V.T, np.eye(V.shape[0]), atol=1e-10)
        assert np.sum(theta > threshold) == V.shape[0] >= r
        # the planted directions lie in the kept span, up to the sampling error of the class means (~ 1/sqrt(n))
        assert np.linalg.norm(planted - planted @ V.T @ V) < 0.1 * np.sqrt(r)
        kept.append(V.shape[0])
    assert sum(k == r for k in kept) >= 8, kept


def test_no_class_effect_keeps_no_direction_most_of_the_time():
    """Labels independent of the points: the largest eigenvalue exceeds its null 95th percentile at most about
    5 % of the time (binomial: at most 4 of 30 seeds fail with probability above 0.98)."""
    kept = [_significant_directions(*_planted(seed, r=0)[:2], np.ones(2000))[0].shape[0]
            for seed in range(30)]
    assert sum(k > 0 for k in kept) <= 4, kept


def test_weights_enter_as_repeated_users():
    """Integer weights give the eigenvalues of the rows repeated that many times (the threshold differs)."""
    E, a, _ = _planted(0, n=300, r=2)
    w = np.random.default_rng(1).integers(1, 4, a.size).astype(float)
    theta_w = _significant_directions(E, a, w)[1]
    theta_rep = _significant_directions(np.repeat(E, w.astype(int), axis=0), np.repeat(a, w.astype(int)),
                                        np.ones(int(w.sum())))[1]
    np.testing.assert_allclose(theta_w, theta_rep, rtol=1e-10, atol=1e-12)


def _ratings(seed, r, n=600, d=8, m=4):
    """Dense rows around 3 (every item rated) for the raw space: the planted points shifted and scaled."""
    E, a, planted = _planted(seed, n=n, d=d, m=m, r=r)
    return 3.0 + 0.4 * E, a, planted


def _leakage_bits(prior, mapping):
    """I(A; C_hat) in bits from the joint prior (classes x cells) and the mapping (cells x outputs)."""
    J = np.asarray(prior) @ np.asarray(mapping)
    pa, q = J.sum(axis=1, keepdims=True), J.sum(axis=0, keepdims=True)
    nz = J > 0
    return float(np.sum(J[nz] * np.log2(J[nz] / (pa @ q)[nz])))


@pytest.mark.parametrize("r", [0, 1, 3])
def test_the_certificate_holds_whatever_the_rule_keeps(r):
    """0, 1 or all 3 directions kept: the mapping is certified optimal, its leakage recomputed from the fitted prior
    and mapping is leakage_ (0 at perfect privacy, and at 0.05 bits the cap), and the partition is a function of the
    ratings: every user, labeled or not, joins the nearest centre after projecting out the kept directions, the
    labeled users' cells are labels_, and their class x cell counts are the empirical prior."""
    X, a, planted = _ratings(0, r)
    y = np.where(np.arange(a.size) % 3 == 0, -1, a)       # a third of the users undisclosed
    for budget in (0.0, 0.05):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = QuantizedPrivacyMapper(n_clusters=12, space="raw", clustering="attribute_free", max_leakage=budget,
                                       class_directions="significant", random_state=0).fit(X, y)
        assert m.n_class_directions_ == r == m.attribute_directions_.shape[0]
        assert np.sum(m.class_direction_eigenvalues_ > m.class_direction_threshold_) == r
        assert m.solver_result_.status == "optimal"
        assert _leakage_bits(m.prior_, m.mapping_) == pytest.approx(m.leakage_, abs=1e-7)
        assert m.leakage_ <= budget + 1e-7
        V, C = m.attribute_directions_, m.cluster_centers_
        d = (((X - X @ V.T @ V)[:, None, :] - (C - C @ V.T @ V)[None]) ** 2).sum(axis=2)
        cells = m._quantize(X)
        np.testing.assert_array_equal(cells, d.argmin(axis=1))
        np.testing.assert_array_equal(cells[y >= 0], m.labels_)
        counts = np.zeros((4, m.n_clusters_))
        np.add.at(counts, (y[y >= 0], cells[y >= 0]), 1.0)
        np.testing.assert_allclose(counts / counts.sum(), m.empirical_prior_, rtol=0, atol=1e-15)


def test_a_user_with_another_label_gets_the_same_cell():
    """The partition reads the ratings only: 30 users appear twice among the labeled users, once under their class
    and once under another; each pair gets one cell (labels_, and _quantize of either row)."""
    X, a, _ = _ratings(1, 2)
    n = a.size
    X2, y2 = np.vstack([X, X[:30]]), np.concatenate([a, (a[:30] + 1) % 4])
    m = QuantizedPrivacyMapper(n_clusters=10, space="raw", clustering="attribute_free", random_state=0).fit(X2, y2)
    assert m.n_class_directions_ == 2
    np.testing.assert_array_equal(m.labels_[:30], m.labels_[n:])
    np.testing.assert_array_equal(m._quantize(X2)[:30], m._quantize(X2)[n:])


def test_auto_is_significant_beyond_two_classes_and_all_for_two():
    X, a, _ = _ratings(2, 1)
    kw = dict(n_clusters=10, space="raw", clustering="attribute_free", random_state=0)
    many = QuantizedPrivacyMapper(**kw).fit(X, a)
    assert many.n_class_directions_ == 1 and hasattr(many, "class_direction_threshold_")
    every = QuantizedPrivacyMapper(class_directions="all", **kw).fit(X, a)
    assert every.n_class_directions_ == 3 and not hasattr(every, "class_direction_threshold_")
    two = QuantizedPrivacyMapper(**kw).fit(X, a % 2)
    assert two.n_class_directions_ == 1 and not hasattr(two, "class_direction_threshold_")
    plain = QuantizedPrivacyMapper(n_clusters=10, space="raw", clustering="plain", random_state=0).fit(X, a)
    assert plain.n_class_directions_ == 0 and not hasattr(plain, "class_direction_threshold_")


def test_significant_is_refused_where_the_covariance_cannot_be_estimated():
    X, a, _ = _ratings(3, 1, n=40, d=8)
    with pytest.raises(ValueError,
                       match="class_directions='significant'.*12 labeled users in 8 dimensions and 4 classes"):
        QuantizedPrivacyMapper(n_clusters=4, space="raw", clustering="attribute_free",
                               class_directions="significant", random_state=0).fit(X[:12], a[:12])
    with pytest.raises(InvalidParameterError, match="class_directions"):
        QuantizedPrivacyMapper(class_directions="some").fit(X, a)


def test_saved_and_loaded_with_its_figures(tmp_path):
    X, a, _ = _ratings(4, 1)
    m = QuantizedPrivacyMapper(n_clusters=10, space="raw", clustering="attribute_free", random_state=0).fit(X, a)
    path = tmp_path / "m.npz"
    m.save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = privrelease.load(path)
    assert back.n_class_directions_ == m.n_class_directions_ == 1
    np.testing.assert_array_equal(back.class_direction_eigenvalues_, m.class_direction_eigenvalues_)
    np.testing.assert_array_equal(back._quantize(X), m._quantize(X))
    m.class_direction_threshold_ = float(m.class_direction_eigenvalues_[0]) + 1.0   # claims no direction
    with pytest.raises(ValueError, match="cannot be saved.*0 of the class_direction_eigenvalues_"):
        m.save(tmp_path / "bad.npz")
