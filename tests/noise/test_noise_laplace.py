"""Distribution tests for privrelease.noise and the random sources it is built on.

Goodness-of-fit tests use fixed seeds for the seeded source. The secure source
(``random_state=None``, operating-system entropy) cannot be seeded: its tests use
a p-value floor of 1e-6, so a correct sampler fails them about once in a million
runs, while a wrong law (tested below: a scale off by 5 %) fails every time.
"""

import numpy as np
import pytest
from scipy import stats

from privrelease.exceptions import PrivacyLeakWarning
from privrelease.noise import Laplace, VectorLaplace, laplace_noise, uniform_full_precision
from privrelease.utils import (
    RandomSource,
    SecureRandomSource,
    SeededRandomSource,
    check_random_source,
)

P_FLOOR = 1e-6
MODES = [pytest.param(0, id="seeded"), pytest.param(None, id="secure")]


def _seed(mode, k):
    return None if mode is None else mode + k


# ---------------------------------------------------------------- Laplace

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scale", [0.3, 1.0, 17.0])
def test_laplace_ks_and_variance(mode, scale):
    x = Laplace(scale=scale, random_state=_seed(mode, 1)).sample(100_000)
    assert stats.kstest(x, "laplace", args=(0, scale)).pvalue > P_FLOOR
    # variance 2 b^2; the sample variance has relative s.e. sqrt(5 / n) ~ 0.7 %
    assert np.var(x) == pytest.approx(2 * scale**2, rel=0.04)
    assert abs(np.mean(x)) < 6 * np.sqrt(2) * scale / np.sqrt(x.size)


@pytest.mark.parametrize("mode", MODES)
def test_laplace_from_epsilon_and_randomise(mode):
    mech = Laplace(epsilon=0.5, sensitivity=2.0, random_state=_seed(mode, 2))
    assert mech.scale == 4.0 and mech.variance() == 32.0
    y = mech.randomise(np.full(50_000, 10.0))
    assert stats.kstest(y - 10.0, "laplace", args=(0, 4.0)).pvalue > P_FLOOR


def test_ks_detects_a_wrong_scale():
    # the test above has power: a 5 % scale error is rejected
    x = Laplace(scale=1.05, random_state=3).sample(100_000)
    assert stats.kstest(x, "laplace", args=(0, 1.0)).pvalue < 1e-4


def test_laplace_seeded_reproducible_secure_not():
    a = Laplace(scale=1.0, random_state=4).sample(5)
    b = Laplace(scale=1.0, random_state=4).sample(5)
    np.testing.assert_array_equal(a, b)
    c = Laplace(scale=1.0).sample(5)
    d = Laplace(scale=1.0).sample(5)
    assert not np.array_equal(c, d)
    assert Laplace(scale=1.0)._source.secure and not Laplace(scale=1.0, random_state=1)._source.secure


def test_laplace_noise_function_and_zero_scale():
    x = laplace_noise(2.0, 40_000, random_state=5)
    assert stats.kstest(x, "laplace", args=(0, 2.0)).pvalue > P_FLOOR
    np.testing.assert_array_equal(laplace_noise(0.0, 3, random_state=0), np.zeros(3))
    with pytest.warns(PrivacyLeakWarning, match="no noise"):
        assert Laplace(epsilon=np.inf, random_state=0).randomise(2.5) == 2.5
    assert np.ndim(Laplace(scale=1.0, random_state=0).sample()) == 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scale, bound", [(0.3, 5.0), (1.0, 3.0), (2.5, 40.0)])
def test_snapping_outputs_on_grid_within_bound(mode, scale, bound):
    mech = Laplace(scale=scale, snapping_bound=bound, random_state=_seed(mode, 6))
    grid = 2.0 ** np.ceil(np.log2(scale))
    for value in (0.0, 1.3, -2.0, 1e6):
        y = mech.randomise(np.full(20_000, value))
        assert np.all(np.abs(y) <= bound)
        np.testing.assert_array_equal(y / grid, np.round(y / grid))
        # far from the bound, snapping keeps the mean and (up to grid rounding) the spread
        if abs(value) + 10 * scale < bound:
            assert np.mean(y) == pytest.approx(value, abs=0.05 * scale + grid / 2)
            assert np.std(y) == pytest.approx(np.sqrt(2) * scale, rel=0.1, abs=grid)
    assert np.all(np.abs(mech.sample(100)) <= bound)


# ---------------------------------------------------------------- full-precision uniform, snapping tail

class _ScriptedSource(RandomSource):
    """53-bit words from a seeded generator, except the calls listed in ``zero_calls``
    (0-based), which return all-zero words: forces the leading bits of a draw."""

    def __init__(self, seed, zero_calls):
        self._rng = np.random.default_rng(seed)
        self._zero = set(zero_calls)
        self._calls = 0

    def _bits53(self, n):
        call, self._calls = self._calls, self._calls + 1
        if call in self._zero:
            return np.zeros(int(n), dtype=np.uint64)
        return self._rng.integers(0, 2**53, size=int(n), dtype=np.uint64)


@pytest.mark.parametrize("mode", MODES)
def test_uniform_full_precision_law(mode):
    src = check_random_source(_seed(mode, 20))
    u = uniform_full_precision(src, 400_000)
    assert u.min() > 0 and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > P_FLOOR
    # binade index G = floor(-log2 U) is geometric: P(G = g) = 2**-(g + 1)
    g = np.floor(-np.log2(u)).astype(int)
    counts = np.bincount(np.minimum(g, 12), minlength=13)
    probs = np.append(0.5 ** np.arange(1, 13), 0.5**12)
    assert stats.chisquare(counts, probs * u.size).pvalue > P_FLOOR
    # inside a binade the 52-bit mantissa is uniform: U 2**(G+1) - 1 ~ U[0, 1)
    assert stats.kstest(u * 2.0 ** (g + 1) - 1.0, "uniform").pvalue > P_FLOOR
    # below 2**-10 the values are NOT on the grid (k + 1/2) / 2**53 of a 53-bit uniform
    small = u[u < 2.0**-10]
    assert small.size > 200
    assert np.mean(small * 2.0**54 != np.round(small * 2.0**54)) > 0.9


def test_uniform_full_precision_reaches_far_below_two_to_minus_53():
    # three all-zero 53-bit words, then random bits: U < 2**-159
    u = uniform_full_precision(_ScriptedSource(0, zero_calls=[0, 1, 2]), 5)
    assert np.all(u < 2.0**-159) and np.all(u > 0)
    # all bits zero: the exponent is capped at the smallest subnormal, never 0
    u = uniform_full_precision(_ScriptedSource(0, zero_calls=range(30)), 3)
    np.testing.assert_array_equal(u, np.full(3, 2.0**-1074))


def test_snapping_noise_tail_beyond_the_old_grid_cap():
    # A uniform on the grid (k + 1/2) / 2**53 caps the snapping noise at ln(2**54) = 37.4
    # scale units. Force the first 53 bits of every uniform to be 0 (the words right after
    # the sign bits): the noise then exceeds 53 ln 2 = 36.7 units, and by memorylessness the
    # excess |X| / lambda - 53 ln 2 is Exp(1) (up to the grid rounding, here 1/64 unit).
    lam, n = 1.0, 20_000           # grid = 1: the old code could only output 37 here
    mech = Laplace(scale=lam, snapping_bound=1e3, random_state=_ScriptedSource(1, [1]))
    y = np.abs(mech.randomise(np.zeros(n)))
    assert y.min() >= 37 and np.mean(y > 37.4) > 0.4 and y.max() >= 45
    # exact law: y = round(lam (53 ln 2 + E)), E ~ Exp(1): chi-square on the integers
    c = 53 * np.log(2)
    ks = np.arange(37, 45)            # round(36.74 + E) >= 37
    edges = np.clip((np.append(ks - 0.5, ks[-1] + 0.5) / lam) - c, 0, None)
    probs = np.diff(-np.exp(-edges))
    probs = np.append(probs, np.exp(-edges[-1]))
    counts = np.append([np.sum(y == k) for k in ks], np.sum(y > ks[-1]))
    assert counts.sum() == n
    assert stats.chisquare(counts, probs / probs.sum() * n).pvalue > P_FLOOR
    # far in the tail: three zero words push the noise beyond 159 ln 2 = 110 units
    mech = Laplace(scale=1.0, snapping_bound=1e4, random_state=_ScriptedSource(2, [1, 2, 3]))
    assert np.all(np.abs(mech.randomise(np.zeros(4))) >= 110)


def test_infinite_epsilon_is_consistent_across_the_noise_module():
    with pytest.warns(PrivacyLeakWarning, match=r"Laplace\(epsilon=inf\) adds no noise"):
        lap = Laplace(epsilon=np.inf, random_state=0)
    assert lap.scale == 0 and lap.randomise(1.25) == 1.25
    with pytest.warns(PrivacyLeakWarning, match=r"VectorLaplace\(epsilon=inf\) adds no noise"):
        vec = VectorLaplace(dimension=3, epsilon=np.inf, sensitivity=1.0, random_state=0)
    assert vec.scale == 0
    np.testing.assert_array_equal(vec.sample(2), np.zeros((2, 3)))
    # with snapping, epsilon=inf only clamps
    with pytest.warns(PrivacyLeakWarning):
        snap = Laplace(epsilon=np.inf, snapping_bound=2.0, random_state=0)
    assert snap.randomise(5.0) == 2.0


# ---------------------------------------------------------------- VectorLaplace

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [1, 3, 10])
def test_vector_laplace_norm_gamma_and_direction_uniform(mode, dim):
    mech = VectorLaplace(dimension=dim, epsilon=2.0, sensitivity=0.5, random_state=_seed(mode, 7))
    assert mech.scale == 0.25
    v = mech.sample(30_000)
    assert v.shape == (30_000, dim)
    norms = np.linalg.norm(v, axis=1)
    assert stats.kstest(norms, "gamma", args=(dim, 0, 0.25)).pvalue > P_FLOOR
    assert stats.kstest(mech.sample_norm(30_000), "gamma", args=(dim, 0, 0.25)).pvalue > P_FLOOR
    u = v / norms[:, None]
    # a uniform direction has mean 0 and covariance I / d
    assert np.all(np.abs(u.mean(axis=0)) < 6 / np.sqrt(dim * u.shape[0]))
    np.testing.assert_allclose(u.T @ u / u.shape[0], np.eye(dim) / dim, atol=0.02)


def test_vector_laplace_angle_uniform_in_2d():
    v = VectorLaplace(dimension=2, epsilon=1.0, sensitivity=1.0, random_state=8).sample(30_000)
    angle = np.arctan2(v[:, 1], v[:, 0])
    assert stats.kstest(angle, "uniform", args=(-np.pi, 2 * np.pi)).pvalue > P_FLOOR
    assert VectorLaplace(dimension=4, epsilon=1.0, sensitivity=1.0, random_state=0).sample().shape == (4,)


# ---------------------------------------------------------------- RandomSource

SOURCES = [pytest.param(lambda: SeededRandomSource(11), id="seeded"),
           pytest.param(SecureRandomSource, id="secure")]


@pytest.mark.parametrize("make", SOURCES)
def test_uniform_open_interval(make):
    u = make().uniform(200_000)
    assert u.min() > 0 and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > P_FLOOR
    assert np.isfinite(np.log(u)).all() and np.isfinite(np.log1p(-u)).all()


@pytest.mark.parametrize("make", SOURCES)
def test_normal_exponential_gamma(make):
    src = make()
    assert stats.kstest(src.normal(50_000), "norm").pvalue > P_FLOOR
    assert stats.kstest(src.normal(50_001), "norm").pvalue > P_FLOOR  # odd sizes
    assert stats.kstest(src.exponential(50_000), "expon").pvalue > P_FLOOR
    for shape in (0.3, 1.0, 3.7, 25.0):
        assert stats.kstest(src.gamma(shape, 30_000), "gamma", args=(shape,)).pvalue > P_FLOOR
    assert src.normal((3, 4)).shape == (3, 4) and np.ndim(src.normal()) == 0


@pytest.mark.parametrize("make", SOURCES)
@pytest.mark.parametrize("high", [1, 3, 7, 10, 2**40 + 3])
def test_integers_unbiased(make, high):
    x = make().integers(high, 60_000)
    assert x.min() >= 0 and x.max() < high
    if high <= 10:
        counts = np.bincount(x, minlength=high)
        if high > 1:
            assert stats.chisquare(counts).pvalue > P_FLOOR
    else:
        assert stats.kstest(x / high, "uniform").pvalue > P_FLOOR


@pytest.mark.parametrize("make", SOURCES)
def test_permutation_uniform(make):
    src = make()
    perms = np.array([src.permutation(3) for _ in range(6000)])
    assert np.all(np.sort(perms, axis=1) == np.arange(3))
    codes = perms[:, 0] * 9 + perms[:, 1] * 3 + perms[:, 2]
    _, counts = np.unique(codes, return_counts=True)
    assert counts.size == 6 and stats.chisquare(counts).pvalue > P_FLOOR
    assert src.permutation(0).size == 0
    big = src.permutation(1000)
    np.testing.assert_array_equal(np.sort(big), np.arange(1000))


@pytest.mark.parametrize("make", SOURCES)
def test_categorical_frequencies(make):
    P = np.array([[0.2, 0.0, 0.5, 0.3], [0.0, 0.0, 0.0, 1.0], [0.25, 0.25, 0.25, 0.25]])
    rows = np.repeat(P, 20_000, axis=0)
    draws = make().categorical(rows).reshape(3, 20_000)
    for r in range(3):
        counts = np.bincount(draws[r], minlength=4)
        assert np.all(counts[P[r] == 0] == 0)
        pos = P[r] > 0
        if pos.sum() > 1:
            assert stats.chisquare(counts[pos], 20_000 * P[r][pos]).pvalue > P_FLOOR
    assert make().categorical([0.0, 1.0]).tolist() == [1]


def test_seeded_source_accepts_generators():
    a = check_random_source(np.random.default_rng(3)).uniform(3)
    b = check_random_source(np.random.default_rng(3)).uniform(3)
    np.testing.assert_array_equal(a, b)
    assert isinstance(check_random_source(np.random.RandomState(0)), SeededRandomSource)
    src = SecureRandomSource()
    assert check_random_source(src) is src
    assert 0 <= src.spawn_seed() < 2**31 - 1


# ---------------------------------------------------------------- bad parameters

@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(epsilon="1"), TypeError, "epsilon must be a real number"),
    (dict(epsilon=True), TypeError, "epsilon must be a real number"),
    (dict(epsilon=0.0), ValueError, "epsilon must be > 0, got 0.0"),
    (dict(epsilon=-1.0), ValueError, "epsilon must be > 0, got -1.0"),
    (dict(epsilon=float("nan")), ValueError, "NaN"),
    (dict(epsilon=1.0, scale=1.0), ValueError, "exactly one of epsilon and scale"),
    (dict(), ValueError, "exactly one of epsilon and scale"),
    (dict(scale=-0.5), ValueError, "scale must be >= 0, got -0.5"),
    (dict(scale=float("inf")), ValueError, "scale must be finite"),
    (dict(epsilon=1.0, sensitivity=-1.0), ValueError, "sensitivity must be >= 0"),
    (dict(scale=2.0, snapping_bound=1.0), ValueError, "snapping needs scale < snapping_bound"),
    (dict(scale=1.0, snapping_bound=0.0), ValueError, "snapping_bound must be > 0"),
    (dict(scale=1.0, random_state=-3), ValueError, "non-negative integer, got -3"),
    (dict(scale=1.0, random_state="seed"), TypeError, "random_state must be None"),
])
def test_laplace_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Laplace(**kwargs)


def test_randomise_refuses_non_finite():
    with pytest.raises(ValueError, match="finite"):
        Laplace(scale=1.0, random_state=0).randomise([1.0, np.nan])


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(dimension=0, epsilon=1.0, sensitivity=1.0), ValueError, "dimension must be >= 1"),
    (dict(dimension=1.5, epsilon=1.0, sensitivity=1.0), TypeError, "dimension must be an integer"),
    (dict(dimension=2, epsilon=0.0, sensitivity=1.0), ValueError, "epsilon must be > 0"),
    (dict(dimension=2, epsilon=1.0, sensitivity=-1.0), ValueError, "sensitivity must be >= 0"),
    (dict(dimension=2, epsilon="x", sensitivity=1.0), TypeError, "epsilon must be a real number"),
])
def test_vector_laplace_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        VectorLaplace(**kwargs)


def test_source_bad_parameters():
    src = SeededRandomSource(0)
    with pytest.raises(ValueError, match="gamma shape must be > 0, got 0"):
        src.gamma(0, 3)
    with pytest.raises(ValueError, match="high must be a positive integer, got 0"):
        src.integers(0, 3)
    with pytest.raises(ValueError, match="at most 2\\*\\*53"):
        src.integers(2**53 + 1, 3)  # used to loop forever (rejection limit 0)
