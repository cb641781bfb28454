"""Hostile inputs, round 16: noise scales, recorded guarantees and random streams."""

from fractions import Fraction
import warnings

import numpy as np
import pytest

from privrelease.auctions import DCLEF, fair_inner_product
from privrelease.exceptions import PrivacyLeakWarning
from privrelease.noise import Laplace, VectorLaplace, laplace_noise


def _least_float_above(exact):
    out = float(exact)
    return out if Fraction(out) >= exact else float(np.nextafter(out, np.inf))


# --------------------------------------------------------------------------- 1. subnormal and rounded scales
@pytest.mark.parametrize("make, match", [
    # 2.5e-323 / 2 = 1.25e-323 rounded to 1e-323: the noise delivered epsilon 2.5 where 2.0 was reported
    (lambda: Laplace(epsilon=2.0, sensitivity=2.5e-323), r"2\.5e-323 / 2\.0 rounds to 1e-323, below the smallest"),
    (lambda: Laplace(epsilon=10.0, sensitivity=5e-324), r"5e-324 / 10\.0 rounds to 0\.0, below the smallest normal"),
    (lambda: VectorLaplace(dimension=2, epsilon=1.2, sensitivity=1.5e-323), r"rounds to 1\.5e-323, below the small"),
    (lambda: Laplace(epsilon=1.0, sensitivity=5e-324, snapping_bound=1e-321), r"below the smallest normal float64"),
])
def test_a_calibrated_subnormal_scale_is_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("epsilon, sensitivity", [(3.0, 1.0), (7.0, 1.0), (3.0, 0.1), (6.0, 1.0)])
def test_effective_epsilon_is_never_below_what_the_scale_delivers(epsilon, sensitivity):
    # fl(sensitivity / epsilon) rounded down: the scale delivers a little more than epsilon
    m = Laplace(epsilon=epsilon, sensitivity=sensitivity)
    exact = Fraction(sensitivity) / Fraction(m.scale)
    assert m.effective_epsilon == _least_float_above(exact)
    assert Fraction(m.effective_epsilon) >= exact
    for e, sens in [(10.0, 1.0), (0.7, 0.3), (1.2, 1e-300), (0.5, 1.0)]:
        other = Laplace(epsilon=e, sensitivity=sens)
        assert other.effective_epsilon == _least_float_above(Fraction(sens) / Fraction(other.scale))


def test_laplace_epsilon_three_reports_the_rounded_up_loss():
    m = Laplace(epsilon=3.0)
    assert m.effective_epsilon == float(np.nextafter(3.0, np.inf))
    assert Laplace(epsilon=0.5).effective_epsilon == 0.5          # an exact scale keeps its epsilon


# --------------------------------------------------------------------------- 2. the auction's record
def test_auction_records_the_epsilons_of_the_dclef_noise():
    w = [0.7, 0.12, 0.11, 0.21000000000000002]
    v = [0.89, 0.6900000000000001, 0.86, 0.65]
    res = fair_inner_product(v, w, 1.28, data_range=(0, 1))
    est = res.to_dclef()
    assert res.selected[2]
    assert res.epsilons[2] == 0.15714285714285717                # was 0.15714285714285714, an ulp below
    for i in np.flatnonzero(res.selected):
        exact = Fraction(est.delta) * Fraction(abs(w[i])) / Fraction(est.sigma)
        assert res.epsilons[i] == _least_float_above(exact) == est.epsilons[i]


def test_auction_records_never_fall_below_the_delivered_epsilons():
    rng = np.random.default_rng(2)
    for _ in range(150):
        w = np.round(rng.random(4), 2) + 0.01
        v = np.round(rng.random(4), 2) + 0.01
        B = float(np.round(rng.uniform(0.1, 3), 2))
        high = float(rng.choice([1.0, 3.0, 0.7]))
        res = fair_inner_product(v, w, B, data_range=(0.0, high))
        est = DCLEF(w, res.selected, (0.0, high))
        for i in np.flatnonzero(res.selected):
            exact = Fraction(high) * Fraction(float(w[i])) / Fraction(est.sigma)
            assert Fraction(float(res.epsilons[i])) >= exact
            assert Fraction(float(est.epsilons[i])) >= exact


# --------------------------------------------------------------------------- 3. snapping and the sign of zero
def test_snapping_never_releases_negative_zero():
    m = Laplace(epsilon=1.0, snapping_bound=100.0, random_state=0)
    for x in (0.0, 0.9, -0.4):
        out = np.asarray(m.randomise(np.full(20000, x)))
        zeros = out[out == 0]
        assert zeros.size > 0 and not np.signbit(zeros).any()


# --------------------------------------------------------------------------- 4. scale 0 leaks without noise
def test_scale_zero_on_a_sensitive_query_warns():
    with pytest.warns(PrivacyLeakWarning, match=r"Laplace\(scale=0\.0\) with sensitivity=1\.0 adds no noise"):
        m = Laplace(scale=0.0)
    assert m.effective_epsilon == np.inf
    with pytest.warns(PrivacyLeakWarning, match=r"DCLEF with sigma=0 adds no noise"):
        DCLEF([1.0, 2.0], [1, 1], (0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert laplace_noise(0.0, 3).tolist() == [0.0] * 3       # noise alone: nothing is released
        Laplace(scale=0.0, sensitivity=0.0)
        DCLEF([1.0, 2.0], [1, 0], (0, 1))


# --------------------------------------------------------------------------- 5. regression rows a hair outside
@pytest.mark.parametrize("clip", [False, True])
def test_regression_scales_rows_within_the_rounding_tolerance_onto_the_ball(clip):
    from privrelease.regression import TruthfulRegressionMechanism
    from privrelease.regression._truthful import ridge_svd

    X = np.array([[1 + 9e-10, 0.0], [0.0, 1.0], [0.6, 0.8], [0.0, -(1 + 5e-10)]])
    y = np.array([1.0, -1.0, 0.5, 0.2])
    m = TruthfulRegressionMechanism(clip=clip, random_state=0)
    used, _, n_bad = m._check_domain(X, y)
    assert n_bad == 0 and (np.linalg.norm(used, axis=1) <= 1.0).all()   # the ball the sensitivity assumes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.fit(X, y)
    assert m.n_clipped_ == 0
    # epsilon=inf releases the exact ridge estimator: that of the rows scaled onto the ball
    with pytest.warns(PrivacyLeakWarning):
        exact = TruthfulRegressionMechanism(clip=clip, epsilon=np.inf, random_state=0).fit(X, y)
    U, s, Vt, f = ridge_svd(used, 1.0)
    np.testing.assert_allclose(exact.coef_, Vt.T @ (f * (U.T @ y)), rtol=1e-15, atol=0)
    U, s, Vt, f = ridge_svd(X, 1.0)
    assert not np.allclose(exact.coef_, Vt.T @ (f * (U.T @ y)), rtol=1e-12, atol=0)


# --------------------------------------------------------------------------- 6. dask streams per purpose
def test_dask_fit_subsample_and_transform_noise_draw_from_different_streams():
    from privrelease.mappers import _dask

    rows = np.arange(1000)
    Xb, yb = rows[:, None].astype(float), np.zeros(1000, dtype=int)
    first, _ = _dask.sample_block(Xb, yb, 50, 7, 3)
    again, _ = _dask.sample_block(Xb, yb, 50, 7, 3)
    np.testing.assert_array_equal(first, again)                  # reproducible for a fixed seed
    # the transform noise of block 3 reads SeedSequence(7, spawn_key=(3,)): the subsample used to draw from it
    noise_stream = np.random.Generator(np.random.PCG64(np.random.SeedSequence(7, spawn_key=(3,))))
    assert not np.array_equal(first[:, 0], np.sort(noise_stream.choice(rows, size=50, replace=False)))
    assert np.random.SeedSequence(7, spawn_key=(3,)).generate_state(4).tolist() != \
        np.random.SeedSequence(7, spawn_key=(_dask._SAMPLE_STREAM, 3)).generate_state(4).tolist()
    # other blocks and seeds give other samples
    assert not np.array_equal(first, _dask.sample_block(Xb, yb, 50, 7, 4)[0])
    assert not np.array_equal(first, _dask.sample_block(Xb, yb, 50, 8, 3)[0])


# --------------------------------------------------------------------------- 7. categorical draws below the grid
class _Scripted:
    """A random source whose 53-bit words are given in order."""

    def __new__(cls, words):
        from privrelease.utils import RandomSource

        class Source(RandomSource):
            secure = False

            def __init__(self):
                self.words = list(words)

            def _bits53(self, n):
                out, self.words = self.words[:n], self.words[n:]
                return np.asarray(out, dtype=np.uint64)

        return Source()


def test_categorical_reaches_outcomes_below_the_uniform_grid():
    p = [[0.5, 1e-17, 0.5]]
    # the uniform 0.5 + (0 .. 2**-106): the middle cell [0.5, 0.5 + 1e-17) (scaled) holds it
    assert _Scripted([2**52, 0]).categorical(p).tolist() == [1]
    assert _Scripted([2**52, 2**53 - 1]).categorical(p).tolist() == [2]    # past 0.5 + 1e-17
    assert _Scripted([2**52 - 1, 0]).categorical(p).tolist() == [0]
    # 0.5 - 2**-106, times the total 1 + 1e-17, is above 0.5: in the middle cell as well
    assert _Scripted([2**52 - 1, 2**53 - 1]).categorical(p).tolist() == [1]
    # an outcome of probability 1e-17 first: drawn iff the uniform is below 1e-17
    q = [[1e-17, 1 - 1e-17]]
    assert _Scripted([0, 0]).categorical(q).tolist() == [0]
    assert _Scripted([0, 2**53 - 1]).categorical(q).tolist() == [1]        # 2**-53 * (1 - 2**-53) > 1e-17
    # where the first 53 bits settle the outcome, the draws are those of before (seeded releases replay)
    from privrelease.utils import check_random_source

    rng = np.random.default_rng(0)
    p = rng.random((3000, 5))
    new = check_random_source(11).categorical(p)
    k = check_random_source(11)._bits53(3000).astype(float)
    cdf = np.cumsum(p, axis=1)
    old = (cdf <= ((k + 0.5) / 2.0**53 * cdf[:, -1])[:, None]).sum(axis=1)
    np.testing.assert_array_equal(new, old)
