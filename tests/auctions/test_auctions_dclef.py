"""DCLEFs and the privacy index (Dandekar et al., Sec. 3: Lemma 2, Def. 3-4, eqs. 4-6, 8)."""

import itertools

import numpy as np
import pytest

from privrelease.auctions import DCLEF, privacy_index


def test_epsilons_and_distortion_closed_forms():
    w = np.array([1.0, -2.0, 0.5, 3.0])
    x = np.array([1, 1, 0, 0])
    est = DCLEF(w, x, data_range=(1, 5))
    R = 0.5 + 3.0
    assert est.sigma == pytest.approx(4 * R)                       # eq. 5
    np.testing.assert_allclose(est.epsilons, [1 / R, 2 / R, 0, 0])  # eq. 8
    assert est.distortion == pytest.approx(9 / 4 * 16 * R**2)       # eq. 6
    assert est.discrete and est.canonical


def test_noncanonical_scale_follows_lemma2():
    w = np.array([1.0, 2.0, 3.0])
    x = np.array([1.0, 0.5, 0.0])
    est = DCLEF(w, x, data_range=(0, 2), sigma=3.0)
    np.testing.assert_allclose(est.epsilons, 2 * np.abs(w) * x / 3.0)
    R = 2 * 0.5 + 3
    assert est.distortion == pytest.approx((2 / 2 * R) ** 2 + 2 * 9.0)
    assert not est.discrete


def test_examples_1_and_2_of_the_paper():
    w = np.array([1.0, -2.0, 3.0])
    none = DCLEF(w, [0, 0, 0], data_range=(0, 1))   # Example 1 plus noise of scale W
    assert none.privacy_index() == pytest.approx(6.0)   # beta = W
    full = DCLEF(w, [1, 1, 1], data_range=(0, 1))   # Example 2: sigma = 0, eps = inf
    assert full.sigma == 0 and np.all(np.isinf(full.epsilons))
    assert full.privacy_index() == 0.0
    assert full.distortion == 0.0
    assert full.sample([0.2, 0.4, 1.0], random_state=0) == pytest.approx(0.2 - 0.8 + 3.0)


def test_mean_interpolates_to_midpoint():
    w = np.array([2.0, -1.0, 4.0])
    est = DCLEF(w, [1, 0, 1], data_range=(1, 5))
    d = np.array([5.0, 1.0, 2.0])
    assert est.mean(d) == pytest.approx(2 * 5 + (-1) * 3 + 4 * 2)


def test_worst_case_mean_squared_error_matches_eq6():
    # worst case: d_i at the end of I that maximises the interpolation bias
    w = np.array([1.0, -2.0, 0.5, 1.5])
    x = np.array([1, 0, 0, 1])
    est = DCLEF(w, x, data_range=(0, 4))
    d = np.where(w > 0, 4.0, 0.0)
    draws = est.sample(np.repeat(d[None, :], 200_000, axis=0), random_state=1)
    mse = np.mean((draws - w @ d) ** 2)
    assert mse == pytest.approx(est.distortion, rel=0.03)


def test_worst_case_error_is_the_contracts_biased_laplace_accuracy():
    # the same mathematics (squared worst bias + Laplace variance): a DCLEF of unit weights on [0, 1] with
    # x = a is the contracts' biased Laplace mechanism of weights a, and both overflow to inf alike
    from privrelease.contracts import BiasedLaplaceMechanism

    a = np.array([0.9, 0.25, 0.0, 1.0])
    for b, expected in ((0.3, 0.925**2 + 0.18), (7.0, 0.925**2 + 98.0), (1e200, np.inf)):
        est = DCLEF(np.ones(4), a, data_range=(0, 1), sigma=b)
        assert est.distortion == BiasedLaplaceMechanism(a, b=b).accuracy == pytest.approx(expected)
    assert DCLEF(np.ones(4), a, data_range=(0, 1e200)).distortion == np.inf


def test_privacy_guarantee_is_the_laplace_density_ratio():
    # changing d_i inside I shifts the mean by at most Delta |w_i| x_i = eps_i * sigma
    rng = np.random.default_rng(3)
    w, x = rng.normal(size=6), rng.integers(0, 2, 6)
    x[0] = 0
    est = DCLEF(w, x, data_range=(-1, 2))
    d = rng.uniform(-1, 2, size=6)
    for i in range(6):
        d2 = d.copy()
        d2[i] = -1.0 if d[i] > 0.5 else 2.0
        shift = abs(est.mean(d) - est.mean(d2))
        worst = 3 * abs(w[i]) * x[i]
        assert shift <= worst + 1e-12
        assert est.epsilons[i] == pytest.approx(worst / est.sigma)


def test_sample_reproducible_seeded_and_secure_by_default():
    est = DCLEF([1.0, 1.0, 1.0], [1, 0, 0], data_range=(0, 1))
    d = [0.5, 0.5, 0.5]
    assert est.sample(d, random_state=5) == est.sample(d, random_state=5)
    a, b = est.sample(d), est.sample(d)
    assert a != b
    draws = est.sample(np.full((100_000, 3), 0.5), random_state=7)
    assert draws.mean() == pytest.approx(1.5, abs=0.03)
    assert draws.var() == pytest.approx(2 * est.sigma**2, rel=0.03)


def _privacy_index_brute(eps, w, threshold=0.5):
    best = 0.0
    n = len(eps)
    for r in range(n + 1):
        for H in itertools.combinations(range(n), r):
            if sum(eps[list(H)]) < threshold:
                best = max(best, float(np.abs(w)[list(H)].sum()))
    return best


def test_privacy_index_matches_brute_force():
    rng = np.random.default_rng(4)
    for _ in range(150):
        n = int(rng.integers(1, 10))
        eps = rng.exponential(0.2, size=n) * rng.integers(0, 2, n)
        w = rng.normal(size=n)
        assert privacy_index(eps, w) == pytest.approx(_privacy_index_brute(eps, w))


def test_privacy_index_of_dclef_and_theorem1_tradeoff():
    # Theorem 1 with alpha: distortion <= (alpha W Delta)^2 / 48  =>  beta <= 2 alpha W.
    rng = np.random.default_rng(5)
    for _ in range(100):
        n = 8
        w = rng.normal(size=n)
        x = rng.integers(0, 2, n)
        est = DCLEF(w, x, data_range=(0, 1))
        W = np.abs(w).sum()
        alpha = np.sqrt(48 * est.distortion) / W
        if alpha < 1:
            assert est.privacy_index() <= 2 * alpha * W + 1e-12


def test_privacy_index_refuses_huge_enumeration():
    with pytest.raises(ValueError, match="raise max_exact"):
        privacy_index(np.full(50, 0.001), np.ones(50), max_exact=40)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(weights=[1.0, 2.0], x=[1, 0, 1], data_range=(0, 1)), ValueError, "x has shape"),
    (dict(weights=[1.0, 2.0], x=[1.5, 0], data_range=(0, 1)), ValueError, r"x must lie in \[0, 1\], got 1.5"),
    (dict(weights=[1.0, 2.0], x=[1, 0], data_range=(1, 1)), ValueError, "R_min < R_max"),
    (dict(weights=[1.0, 2.0], x=[1, 0], data_range=(2, 1)), ValueError, "R_min < R_max"),
    (dict(weights=[1.0, np.nan], x=[1, 0], data_range=(0, 1)), ValueError, "weights must be finite"),
    (dict(weights=[1.0, 2.0], x=[1, 0], data_range=(0, 1), sigma=-1.0), ValueError, "sigma must be >= 0"),
])
def test_dclef_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        DCLEF(**kwargs)


def test_sample_refuses_data_outside_interval():
    est = DCLEF([1.0, 1.0], [1, 0], data_range=(1, 5))
    with pytest.raises(ValueError, match="data_range"):
        est.sample([6.0, 1.0], random_state=0)
    with pytest.raises(ValueError, match="shape"):
        est.sample([1.0, 1.0, 1.0], random_state=0)
