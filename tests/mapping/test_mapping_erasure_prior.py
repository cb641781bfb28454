import numpy as np
import pytest

from privrelease.mapping import (
    census_prior,
    empirical_prior,
    erasure_alphabet,
    erasure_distortion,
    kde_prior,
    squared_euclidean_distortion,
)


def test_erasure_alphabet_is_every_erased_subset():
    inputs = np.array([[0, 0, 1], [1, 2, 1]])
    out = erasure_alphabet(inputs)
    # each input gives 2^3 tuples; shared ones (-1, -1, 1), (-1, -1, -1) and (-1, x, 1)... counted once
    expected = set()
    for row in inputs:
        for mask in range(8):
            expected.add(tuple(-1 if (mask >> j) & 1 else int(row[j]) for j in range(3)))
    assert set(map(tuple, out.tolist())) == expected
    assert len(out) == len(expected)
    n_erased = (out == -1).sum(1)
    assert np.all(np.diff(n_erased) >= 0)


def test_erasure_distortion_counts_erasures_and_forbids_lies():
    inputs = np.array([[0, 1], [1, 1]])
    out = erasure_alphabet(inputs)
    D = erasure_distortion(inputs, out)
    for i, x in enumerate(inputs):
        for j, y in enumerate(out):
            ok = all(yy == -1 or yy == xx for xx, yy in zip(x, y))
            assert D[i, j] == ((y == -1).sum() if ok else np.inf)
    assert np.all(D.min(axis=1) == 0)


def test_erasure_bad_inputs():
    with pytest.raises(ValueError, match=">= 0"):
        erasure_alphabet([[0, -1]])
    with pytest.raises(ValueError, match="features"):
        erasure_distortion([[0, 1]], [[0, 1, 1]])
    with pytest.raises(ValueError, match="integer"):
        erasure_alphabet([[0.5, 1]])


def test_squared_euclidean_distortion():
    D = squared_euclidean_distortion([[0.0, 0.0], [1.0, 2.0]], [[1.0, 0.0]])
    np.testing.assert_allclose(D, [[1.0], [4.0]])
    with pytest.raises(ValueError, match="same number of features"):
        squared_euclidean_distortion([[0.0, 0.0]], [[1.0]])


def test_empirical_prior_counts_and_smoothing():
    a = [0, 0, 1, 1, 1]
    c = [0, 1, 1, 2, 2]
    P = empirical_prior(a, c)
    np.testing.assert_allclose(P, np.array([[1, 1, 0], [0, 1, 2]]) / 5)
    Ps = empirical_prior(a, c, n_public=4, smoothing=1.0)
    assert Ps.shape == (2, 4)
    np.testing.assert_allclose(Ps, (np.array([[1, 1, 0, 0], [0, 1, 2, 0]]) + 1) / 13)
    with pytest.raises(ValueError, match="n_public"):
        empirical_prior(a, c, n_public=2)
    with pytest.raises(ValueError, match="same length"):
        empirical_prior([0, 1], [0])
    with pytest.raises(ValueError, match=">= 0"):
        empirical_prior([0, -1], [0, 1])


def test_kde_prior_marginals_and_grid():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (40, 2)), rng.normal(4, 1, (20, 2))]
    y = np.r_[np.zeros(40, int), np.ones(20, int)]
    kp = kde_prior(X, y, cv=3)
    assert kp.prior.shape == (2, len(np.unique(X, axis=0)))
    np.testing.assert_allclose(kp.prior.sum(axis=1), [40 / 60, 20 / 60])
    assert np.all(kp.bandwidths > 0)
    # points near the class-1 mode carry mostly class 1
    grid = np.array([[0.0, 0.0], [4.0, 4.0]])
    kg = kde_prior(X, y, grid=grid, cv=3)
    post = kg.prior / kg.prior.sum(axis=0)
    assert post[0, 0] > 0.9 and post[1, 1] > 0.9
    ks = kde_prior(X, y, n_grid=30, cv=3, random_state=0)
    assert ks.points.shape == (30, 2)
    np.testing.assert_allclose(ks.points, kde_prior(X, y, n_grid=30, cv=3, random_state=0).points)
    with pytest.raises(ValueError, match="one label per row"):
        kde_prior(X, y[:-1])


def test_census_prior_structure():
    prior, tuples, names, levels = census_prior()
    assert names == ["sex", "age", "education"]
    assert prior.shape == (2, len(tuples)) and tuples.shape[1] == 3
    assert prior.sum() == pytest.approx(1.0)
    assert [len(v) for v in levels] == [2, 3, 4]
    # about 76% of people earn <= 50K (paper Sec. V-A)
    assert 0.74 < prior[0].sum() < 0.78
