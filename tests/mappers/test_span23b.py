"""class_directions="significant" without permutations (docs/frontier.md, section (t)): the threshold on the Fisher
eigenvalues is the null quantile of Roy's largest root by Johnstone's Tracy-Widom approximation, a closed form of the
shape of the data, so the directions kept depend on the data only, not on ``random_state``; row 0 of
``attribute_directions_`` (the direction ``class_bins`` cuts along) is the largest eigenvalue's class-mean pattern;
a file that claims the significant directions without their eigenvalues is refused.

Checked against brute force: the largest root of Gaussian Wishart matrices (its 95th percentile), the generalized
eigenproblem ``B w = theta T w`` solved by scipy, and the rule's directions refitted under other seeds.
"""

import warnings

import numpy as np
import pytest
import scipy.linalg

import privrelease
from privrelease._persistence import _read, _write
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mappers._quantized import _largest_root_threshold, _significant_directions


@pytest.mark.parametrize("n_dims, n_classes, n_users", [(6, 3, 500), (11, 6, 500), (21, 6, 500), (4, 3, 60)])
def test_threshold_is_the_95th_percentile_of_the_largest_root(n_dims, n_classes, n_users):
    """Brute force: with no class effect ``B`` and the within-class scatter are independent Wisharts of ``n_classes
    - 1`` and ``n_users - n_classes`` degrees of freedom; the largest eigenvalue of ``(H + W)^-1 H`` exceeds the
    threshold in 5 % of 4,000 draws or a little less (the approximation is slightly conservative at these sizes:
    between 2 % and 6.5 %, the Monte Carlo standard error being 0.35 %)."""
    rng = np.random.default_rng(n_dims * 1000 + n_users)
    threshold = _largest_root_threshold(n_dims, n_classes, n_users)
    assert 0.0 < threshold < 1.0
    above = 0
    for _ in range(4000):
        G = rng.normal(size=(n_classes - 1, n_dims))
        S = rng.normal(size=(n_users - n_classes, n_dims))
        H, W = G.T @ G, S.T @ S
        above += scipy.linalg.eigh(H, H + W, eigvals_only=True)[-1] > threshold
    assert 0.02 <= above / 4000 <= 0.065, above / 4000


def test_threshold_has_nothing_to_keep_where_the_users_are_too_few():
    """Fewer users than dimensions: the approximation does not apply, and the threshold (1.0) keeps nothing."""
    assert _largest_root_threshold(20, 3, 15) == 1.0
    assert 0.0 < _largest_root_threshold(20, 3, 40) < 1.0


def _raw_ratings(seed, n=400, d=8, m=4, scales=(0.35, 0.12)):
    """Dense rows around 3 (every item rated; the raw space does not depend on the seed of the fit) whose class
    means differ along len(scales) coordinates, the weakest near the noise of the class means."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, m, n)
    contrasts = np.linalg.qr(np.column_stack([np.ones(m), rng.normal(size=(m, m - 1))]))[0][:, 1:len(scales) + 1]
    E = rng.normal(size=(n, d)) * np.linspace(0.5, 1.5, d)
    E[:, :len(scales)] += (np.sqrt(m) * contrasts * np.asarray(scales))[a]
    return 3.0 + 0.4 * E, a


def test_the_directions_do_not_depend_on_random_state():
    """The same ratings fitted under five seeds: one threshold, the same eigenvalues, the same kept directions (a
    permutation null's quantile moved with the seed, and a marginal eigenvalue with it)."""
    for data_seed in range(3):
        X, a = _raw_ratings(data_seed)
        fits = []
        for seed in range(5):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits.append(QuantizedPrivacyMapper(n_clusters=8, space="raw", clustering="attribute_free",
                                                   class_directions="significant", random_state=seed).fit(X, a))
        for m in fits[1:]:
            assert m.class_direction_threshold_ == fits[0].class_direction_threshold_
            np.testing.assert_allclose(m.class_direction_eigenvalues_, fits[0].class_direction_eigenvalues_,
                                       rtol=1e-10)
            np.testing.assert_allclose(m.attribute_directions_, fits[0].attribute_directions_, atol=1e-10)


def test_row_0_is_the_largest_eigenvalues_pattern():
    """Two planted directions: coordinate 0 with a small spread and a large Fisher eigenvalue, coordinate 1 with a
    large spread (large class-mean offsets) and a smaller eigenvalue. Row 0 is the class-mean pattern ``T w_1`` of
    the largest eigenvalue of ``B w = theta T w`` (scipy), here about coordinate 0, not the largest offset's; the
    rows are orthonormal and span both patterns."""
    rng = np.random.default_rng(0)
    n, m = 3000, 4
    a = rng.integers(0, m, n)
    E = rng.normal(size=(n, 5)) * np.array([0.1, 3.0, 1.0, 1.0, 1.0])
    E[:, 0] += np.array([0.1, -0.1, 0.0, 0.0])[a]   # Fisher eigenvalue about 0.5 (offsets 0.1 on a 0.1 spread)
    E[:, 1] += np.array([0.0, 0.0, 1.5, -1.5])[a]   # about 0.12 (offsets 1.5 on a 3.0 spread, uncorrelated)
    V, theta, threshold = _significant_directions(E, a, np.ones(n))
    assert V.shape == (2, 5) and theta[1] > threshold
    R = E - E.mean(axis=0)
    T = R.T @ R / n
    means = np.array([E[a == c].mean(axis=0) for c in range(m)]) - E.mean(axis=0)
    p = np.bincount(a) / n
    B = (means * p[:, None]).T @ means
    vals, W = scipy.linalg.eigh(B, T)
    np.testing.assert_allclose(theta, vals[::-1][:m - 1], rtol=1e-8)
    patterns = (T @ W[:, ::-1][:, :2]).T
    patterns /= np.linalg.norm(patterns, axis=1, keepdims=True)
    assert abs(V[0] @ patterns[0]) == pytest.approx(1.0, abs=1e-8)
    # about coordinate 0 (up to the sampled covariance with the wide coordinate 1), where the largest offset's
    # singular direction is about coordinate 1
    assert abs(V[0, 0]) > 0.9 and abs(V[1, 1]) > 0.9
    np.testing.assert_allclose(V @ V.T, np.eye(2), atol=1e-10)
    np.testing.assert_allclose(patterns - patterns @ V.T @ V, 0.0, atol=1e-8)


def _drop_figures(path):
    """``path`` rewritten without class_direction_eigenvalues_ and class_direction_threshold_, digest renewed (an
    edited file whose checksum matches)."""
    meta, arrays = _read(path)

    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if "class_direction_eigenvalues_" not in k
                    and "class_direction_threshold_" not in k}
        return node

    meta = strip(meta)
    arrays = {k: v for k, v in arrays.items() if "class_direction_eigenvalues_" not in k}
    _write(path, meta, arrays, redigest=True)
    return path


def test_significant_directions_without_their_eigenvalues_are_refused(tmp_path):
    """class_directions='significant' with a kept direction: saved without the eigenvalues and threshold (the
    figures that choose the directions), the mapper is refused at save and at load; the intact file loads."""
    X, a = _raw_ratings(0)
    m = QuantizedPrivacyMapper(n_clusters=8, space="raw", clustering="attribute_free", class_directions="significant",
                               random_state=0).fit(X, a)
    assert m.n_class_directions_ >= 1
    m.save(tmp_path / "m.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = privrelease.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back._quantize(X), m._quantize(X))
    with pytest.raises(ValueError, match="attribute_directions_ has [12] rows but class_directions='significant'"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            privrelease.load(_drop_figures(tmp_path / "m.npz"))
    del m.class_direction_eigenvalues_, m.class_direction_threshold_
    with pytest.raises(ValueError, match="cannot be saved.*neither is saved"):
        m.save(tmp_path / "bad.npz")
