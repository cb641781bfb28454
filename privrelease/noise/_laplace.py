"""Laplace noise that is safe to use on a privacy path.

Two hazards are addressed:

* **Where the randomness comes from.** With ``random_state=None`` every draw
  reads the operating system's entropy (see :mod:`privrelease.utils`); a seed
  is accepted for tests and reproducible experiments only.
* **Floating-point artefacts.** The textbook ``mu - b * sign(u) * log(1 - 2|u|)``
  leaves tell-tale patterns in the low-order bits of the output that let an
  attacker recover ``mu`` (Mironov, CCS 2012). The default sampler follows
  Holohan and Braghin (2021), as diffprivlib does: a standard Laplace variate
  is drawn as ``X1 * X2 + X3 * X4`` with four independent standard normals (its
  characteristic function is ``1 / (1 + t**2)``), which has no such lattice
  structure. For a proven guarantee, pass ``snapping_bound`` to use Mironov's
  snapping mechanism instead: clamp, add noise, round to a power-of-two grid,
  clamp again. Its uniform is drawn at full precision (a geometric exponent and
  a 52-bit mantissa, :func:`uniform_full_precision`), as Mironov's proof
  assumes: a uniform on the grid ``k / 2**53`` would cap the noise at about
  37.4 scale units (``ln 2**54``).

**epsilon = inf.** Both :class:`Laplace` and :class:`VectorLaplace` accept
``epsilon=np.inf`` and then add no noise at all (the value is released exactly:
no privacy). They warn with :class:`~privrelease.exceptions.PrivacyLeakWarning`
when constructed so. It is meant for tests and non-private baselines.

References
----------
.. [1] I. Mironov, "On significance of the least significant bits for
   differential privacy", ACM CCS 2012, Sec. 5 (the snapping mechanism).
.. [2] N. Holohan and S. Braghin, "Secure random sampling in differential
   privacy", ESORICS 2021.
.. [3] OpenDP, ``sample_uniform_float`` / Google differential-privacy library,
   ``SecureNoiseMath.uniformDouble``: a geometric exponent plus a uniform mantissa.
"""

from fractions import Fraction
import math
import numbers
import warnings

import numpy as np

from ..exceptions import PrivacyLeakWarning
from ..utils import check_number, check_random_source
from ..utils._random import check_size
from ..utils._validation import (check_allocation, check_real_target, format_bound, largest_passing, plain_value,
                                refuse_masked, user_stacklevel)

__all__ = ["Laplace", "VectorLaplace", "laplace_noise", "uniform_full_precision"]

_MAX_EXPONENT = 1073    # G <= 1073 keeps U >= 2**-1074, the smallest positive float


def uniform_full_precision(source, size=None):
    """Uniform on (0, 1) at full floating-point precision: geometric exponent, 52-bit mantissa.

    ``U = (1 + M / 2**52) * 2**-(G + 1)`` with ``G`` the number of leading zero bits
    of an infinite stream of fair bits (``P(G = g) = 2**-(g + 1)``, read 53 bits at
    a time from ``source``) and ``M`` uniform on ``[0, 2**52)``. Given ``G = g``,
    ``U`` is uniform on the binade ``[2**-(g+1), 2**-g)`` and takes every float
    there with equal probability, so ``P(U <= x) = x`` for every float ``x``: every
    float in (0, 1) can occur, down to ``2**-1074`` (``G`` is capped at 1073), and
    ``-log(U)`` is an exponential variate with an unbounded tail, as Mironov's
    analysis of the snapping mechanism assumes. A uniform on the grid
    ``(k + 1/2) / 2**53`` (:meth:`RandomSource.uniform`) stops at ``2**-54``.

    Parameters
    ----------
    source : None, int, numpy Generator or RandomState, or RandomSource
        Read by :func:`~privrelease.utils.check_random_source` (``None``: the operating system's entropy),
        as every ``random_state`` of privrelease.
    size : int or tuple, optional
        Checked as the samplers' ``size`` (2.5 drew 2 values, ``True`` one, a numpy Generator as ``source``
        failed with numpy's "low >= high").

    Returns
    -------
    u : float or ndarray

    References
    ----------
    I. Mironov, "On significance of the least significant bits for differential
    privacy", CCS 2012, Sec. 5; OpenDP ``sample_uniform_float``; Google's
    differential-privacy library, ``SecureNoiseMath``.

    Examples
    --------
    >>> from privrelease.noise import uniform_full_precision
    >>> from privrelease.utils import check_random_source
    >>> u = uniform_full_precision(check_random_source(0), 1000)
    >>> bool((u > 0).all() and (u < 1).all())
    True
    """
    source = check_random_source(source)
    size = _size(size)
    shape = () if size is None else size
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    geo = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        word = np.asarray(source.integers(2**53, pending.size), dtype=np.int64)
        _, bit_length = np.frexp(word.astype(np.float64))     # exact: word < 2**53
        geo[pending] += 53 - bit_length                        # 53 when the word is 0
        pending = pending[(word == 0) & (geo[pending] < _MAX_EXPONENT)]
    geo = np.minimum(geo, _MAX_EXPONENT)
    mant = np.asarray(source.integers(2**52, n), dtype=np.float64)
    u = np.ldexp(1.0 + mant / 2.0**52, -(geo + 1))
    return u.reshape(shape) if shape else u[0]


#: Bytes a Laplace draw holds per value at its peak (the random bytes, their integer and float copies, the four
#: normals and the products): measured as 52 for :meth:`Laplace.sample`, 60 for :meth:`Laplace.randomise` (with its
#: value) and :func:`uniform_full_precision`, 76 with snapping; rounded up.
_DRAW_PEAK_BYTES = 80
#: Bytes a Gamma draw (:meth:`RandomSource.gamma`, the norms of :class:`VectorLaplace`) holds per value at its peak:
#: measured as 122 (the rejection step's normals, uniforms and masks); rounded up.
_GAMMA_PEAK_BYTES = 128
#: Bytes :meth:`VectorLaplace.sample` holds per coordinate at its peak (the normals, their bits and the scaled
#: result): measured as 28; rounded up. The norms add :data:`_GAMMA_PEAK_BYTES` per vector.
_VECTOR_PEAK_BYTES = 32


def _size(size, peak=_DRAW_PEAK_BYTES):
    """``size`` checked (None, an int >= 0 or a tuple of them), in the form numpy takes; a draw whose peak memory
    (``peak`` bytes per value) cannot fit in the memory available is refused before anything is drawn."""
    shape = check_size(size)
    check_allocation(math.prod(shape), f"size={size!r}: the draws", itemsize=peak)
    return None if size is None else shape


#: The largest standard normal :meth:`RandomSource.normal` can draw: Box-Muller's radius
#: ``sqrt(-2 log u)`` at its smallest uniform ``u = 2**-54``, about 8.65.
_NORMAL_REACH = math.sqrt(2.0 * 54 * math.log(2.0))
#: The largest ``|X1 X2 + X3 X4|`` of :func:`_standard_laplace` (about 149.7 scale units).
_LAPLACE_REACH = 2.0 * _NORMAL_REACH**2


def _gamma_reach(shape):
    """The largest Gamma(``shape``, 1) draw of :meth:`RandomSource.gamma` (Marsaglia and Tsang: ``d (1 + c x)**3``
    with ``|x| <= _NORMAL_REACH``; shapes below 1 are boosted to ``shape + 1``, then shrunk by ``U**(1/shape)``)."""
    d = max(shape, 1.0) + (1.0 if shape < 1 else 0.0) - 1.0 / 3.0
    return d * (1.0 + _NORMAL_REACH / math.sqrt(9.0 * d)) ** 3


def _check_reach(scale, reach, value_bound=0.0, *, what):
    """Refuse a noise scale (and values) whose noisy release could overflow float64 (an infinite release).

    The samplers' draws are bounded (``reach`` scale units: :data:`_LAPLACE_REACH`, :func:`_gamma_reach`), so
    ``value_bound + scale * reach`` finite means no draw can overflow. ``laplace_noise(1e308)`` used to release
    inf (with a numpy RuntimeWarning at most). The check depends on the scale and the value's magnitude, never on
    a draw.
    """
    if math.isfinite(value_bound + scale * reach):
        return scale
    with np.errstate(over="ignore"):
        largest = largest_passing((_MAX_FLOAT - value_bound) / reach,
                                  lambda s: math.isfinite(value_bound + s * reach))
    raise ValueError(f"{what}: the noise reaches {reach:.4g} times its scale {scale:.6g}, so the release could "
                     f"overflow float64 (an infinite value); expected a scale <= {format_bound(largest)}"
                     + (f" for values of magnitude {value_bound:.6g}" if value_bound else ""))


_MAX_FLOAT = float(np.finfo(np.float64).max)


def _standard_laplace(source, size):
    """Standard Laplace(0, 1) from four standard normals (Holohan and Braghin, 2021)."""
    n1, n2, n3, n4 = (source.normal(size) for _ in range(4))
    return n1 * n2 + n3 * n4


def _noise_scale(sensitivity, epsilon):
    """``sensitivity / epsilon`` (0 for ``epsilon = inf``); a ratio that overflows float64 is refused.

    ``epsilon = 5e-324`` with sensitivity 1 would give an infinite scale: noise of inf / NaN
    released without a word (and NaN estimates downstream).
    """
    if np.isinf(epsilon):
        return 0.0
    with np.errstate(under="ignore"):
        scale = sensitivity / epsilon
    if not np.isfinite(scale):
        raise ValueError(f"epsilon={epsilon!r} is too small for sensitivity={sensitivity!r}: the noise scale "
                         "sensitivity / epsilon overflows float64 (the release would be infinite); expected a "
                         f"ratio of at most {format_bound(_MAX_FLOAT)}")
    return check_normal_scale(scale, f"sensitivity / epsilon = {sensitivity!r} / {epsilon!r}",
                              positive=sensitivity > 0)


_NORMAL = float(np.finfo(np.float64).tiny)   # smallest normal float64


def check_normal_scale(scale, what, *, positive=True, advice="expected a larger sensitivity or a smaller epsilon"):
    """Refuse a calibrated noise ``scale`` that rounds below the smallest normal float64 (``positive``: the exact
    scale is > 0, so a 0 is an underflow too).

    A subnormal float has lost relative precision: sensitivity 2.5e-323 and epsilon 2 gave the scale 1.25e-323,
    rounded to 1e-323, so the noise delivered epsilon 2.5 where 2 was asked for. :class:`Laplace`,
    :class:`VectorLaplace` and :class:`~privrelease.auctions.DCLEF` refuse such a scale alike.
    """
    if positive and scale < _NORMAL:
        raise ValueError(f"the noise scale {what} rounds to {scale!r}, below the smallest normal float64 "
                         f"({_NORMAL!r}): a subnormal scale has lost the relative precision the privacy guarantee "
                         f"needs (the noise would deliver a larger epsilon than asked for); {advice}")
    return scale


def _ratio_up(num, den):
    """The least float >= ``num / den`` in exact arithmetic (``inf`` beyond float64): a privacy loss computed from
    the scale actually used, never below what it delivers (``1 / fl(1 / 3)`` is ``3 + 1.7e-16``)."""
    exact = Fraction(num) / Fraction(den)
    try:
        out = float(exact)
    except OverflowError:
        return np.inf
    return out if Fraction(out) >= exact else float(np.nextafter(out, np.inf))


_ETA = 2.0**-53  # Mironov's eta: the relative precision of float64


def _mironov_bound(sensitivity, scale, bound):
    """Mironov's (2012) Theorem 1 bound ``(Delta + 12 B eta) / scale + 2 eta``, in exact arithmetic."""
    eta = Fraction(_ETA)
    return (Fraction(sensitivity) + 12 * eta * Fraction(bound)) / Fraction(scale) + 2 * eta


def _proven_epsilon(sensitivity, scale, bound=None):
    """The differential privacy proven for Laplace noise of ``scale`` on a query of ``sensitivity``: ``Delta /
    scale``, or with snapping at ``bound`` Mironov's (2012) Theorem 1, ``(Delta + 12 B eta) / scale + 2 eta``,
    valid for ``scale < B < 2**46 scale`` (``inf`` outside it), rounded up."""
    if sensitivity == 0:
        return 0.0
    if scale == 0:
        return np.inf
    if bound is None:
        return _ratio_up(sensitivity, scale)
    if not scale < bound < 2.0**46 * scale:
        return np.inf
    exact = _mironov_bound(sensitivity, scale, bound)
    out = float(exact)
    return out if Fraction(out) >= exact else float(np.nextafter(out, np.inf))


def _snapping_scale(sensitivity, epsilon, bound):
    """The least scale (to an ulp) whose snapping guarantee at ``bound`` is at most ``epsilon``: Mironov's bound
    solved for the scale, ``(Delta + 12 B eta) / (epsilon - 2 eta)``, then raised an ulp at a time until the
    bound holds in exact arithmetic. Refused where no scale can prove ``epsilon`` within the theorem's range
    ``B < 2**46 scale``."""
    if not epsilon > 2.0 * _ETA:
        raise ValueError(f"epsilon={epsilon!r} is below what snapping can prove (Mironov's Theorem 1 adds "
                         f"2 * 2**-53 = {2.0 * _ETA!r}); expected a larger epsilon")
    with np.errstate(over="ignore"):
        scale = float((sensitivity + 12.0 * _ETA * bound) / (epsilon - 2.0 * _ETA))
    if not np.isfinite(scale):
        raise ValueError(f"epsilon={epsilon!r} is too small for sensitivity={sensitivity!r} and "
                         f"snapping_bound={bound!r}: the snapping scale overflows float64")
    target = Fraction(epsilon)
    for _ in range(64):  # the float quotient is within a few ulps of the exact one
        if _mironov_bound(sensitivity, scale, bound) <= target:
            break
        scale = float(np.nextafter(scale, np.inf))
    check_normal_scale(scale, f"for sensitivity={sensitivity!r}, epsilon={epsilon!r} and snapping_bound={bound!r}")
    if not bound < 2.0**46 * scale:
        raise ValueError(
            f"snapping_bound={bound!r} is too large for epsilon={epsilon!r} with sensitivity={sensitivity!r}: "
            f"Mironov's Theorem 1 proves the guarantee only for snapping_bound < 2**46 * scale "
            f"({format_bound(2.0**46 * scale)} at the calibrated scale {scale!r}); expected a smaller bound (or a "
            "smaller epsilon)")
    return scale


def _snapping_grid(scale):
    """The smallest power of two >= ``scale`` (> 0), exactly: ``2**ceil(log2(scale))`` rounded ``log2`` of a
    scale a few ulps above a power of two down to it, and gave a grid below the scale."""
    m, e = math.frexp(scale)
    return scale if m == 0.5 else math.ldexp(1.0, e)


class Laplace:
    """Laplace mechanism: noise of scale ``sensitivity / epsilon`` (or a given ``scale``).

    Parameters
    ----------
    epsilon : float, optional
        Privacy parameter, > 0. Give either ``epsilon`` or ``scale``.
        ``np.inf`` is accepted and means NO noise (the value is returned
        unchanged, or only clamped with snapping): a
        :class:`~privrelease.exceptions.PrivacyLeakWarning` says so, as for
        :class:`VectorLaplace`.
    sensitivity : float, default=1.0
        L1 sensitivity of the released quantity, >= 0.
    scale : float, optional
        The Laplace scale ``b`` directly (density ``exp(-|x| / b) / (2 b)``), >= 0
        (0: no noise, for a quantity of sensitivity 0).
    random_state : None, int or Generator, default=None
        ``None`` draws from the operating system's entropy. An integer seed
        makes draws reproducible: for tests and experiments only.
    snapping_bound : float, optional
        When given, use Mironov's snapping mechanism with clamping bound ``B``:
        outputs lie in ``[-B, B]`` on a grid of spacing ``Lambda``, the smallest
        power of two >= the scale. Requires ``scale < B``. The uniform behind the
        noise is drawn at full precision (:func:`uniform_full_precision`).
        Mironov (2012, Theorem 1) proves ``((Delta + 12 B eta) / scale + 2 eta)``-
        differential privacy for a query of sensitivity ``Delta``, ``eta = 2**-53``,
        when ``scale < B < 2**46 scale``. So with ``epsilon`` the scale is
        calibrated to that bound (``(Delta + 12 B eta) / (epsilon - 2 eta)``, not
        ``Delta / epsilon``), and a bound ``B >= 2**46 scale`` is refused; with
        ``scale`` the proven guarantee is ``effective_epsilon`` (``inf``, with a
        :class:`~privrelease.exceptions.PrivacyLeakWarning`, outside the
        theorem's range).

    Attributes
    ----------
    scale : float
        The Laplace scale ``b``.
    effective_epsilon : float
        The differential privacy proven for the released values: ``sensitivity /
        scale`` without snapping, computed from the scale actually used and rounded
        up (``Laplace(epsilon=3)`` has the scale ``fl(1/3)`` and delivers ``3 +
        1.7e-16``; ``epsilon`` itself for sensitivity 0 or ``epsilon=inf``),
        Mironov's bound above with snapping (at most ``epsilon`` when given).
        A calibrated scale (from ``epsilon``) that rounds below the smallest normal
        float64 is refused (ValueError): a subnormal scale has lost the relative
        precision the guarantee needs. ``scale=0`` with a positive sensitivity, a
        given subnormal scale (below 2.2250738585072014e-308, whose noise cannot
        move the value) or one whose ``sensitivity / scale`` overflows float64
        warns with a :class:`~privrelease.exceptions.PrivacyLeakWarning`
        (``effective_epsilon=inf``).

    Examples
    --------
    >>> from privrelease.noise import Laplace
    >>> mech = Laplace(epsilon=0.5, sensitivity=1.0, random_state=0)
    >>> mech.scale
    2.0
    >>> float(mech.randomise(10.0)) != 10.0
    True
    """

    def __init__(self, *, epsilon=None, sensitivity=1.0, scale=None, random_state=None,
                 snapping_bound=None):
        if (epsilon is None) == (scale is None):
            raise ValueError(
                f"give exactly one of epsilon and scale, got epsilon={epsilon!r}, scale={scale!r}"
            )
        sensitivity = check_number(sensitivity, "sensitivity", low=0)
        if snapping_bound is not None:
            snapping_bound = check_number(snapping_bound, "snapping_bound", low=0, low_inclusive=False)
        if epsilon is not None:
            # an epsilon beyond float64 is refused, not read as inf (which draws no noise at all)
            epsilon = check_number(epsilon, "epsilon", low=0, low_inclusive=False, allow_inf=True,
                                   overflow_to_inf=False)
            self.scale = _noise_scale(sensitivity, epsilon)
            if snapping_bound is not None and not np.isinf(epsilon) and sensitivity > 0:
                self.scale = _snapping_scale(sensitivity, epsilon, snapping_bound)
            if np.isinf(epsilon):
                _warn_infinite_epsilon("Laplace")
        else:
            self.scale = check_number(scale, "scale", low=0)
        if snapping_bound is None:  # snapping clamps its output to [-B, B]
            _check_reach(self.scale, _LAPLACE_REACH, what=(
                f"scale={scale!r}" if epsilon is None else f"epsilon={epsilon!r} with sensitivity={sensitivity!r}"))
        self.epsilon = epsilon
        self.sensitivity = sensitivity
        self.snapping_bound = None
        if snapping_bound is None:
            # from the scale actually used, rounded up: 1 / fl(1 / 3) is 3 + 1.7e-16, not 3
            self.effective_epsilon = (epsilon if epsilon is not None and (sensitivity == 0 or np.isinf(epsilon))
                                      else _proven_epsilon(sensitivity, self.scale))
            if epsilon is None and 0 < self.scale < _NORMAL and sensitivity > 0:
                # a subnormal scale (5e-324, 1e-310) has lost its relative precision: scale * noise rounds to a few
                # multiples of 5e-324 (no Laplace noise, and none at all beside a value of magnitude 1), as the
                # epsilon path refuses such a calibrated scale (check_normal_scale). It used to report a finite
                # effective_epsilon or none at all, with no warning
                self.effective_epsilon = np.inf
            if epsilon is None and np.isinf(self.effective_epsilon) and sensitivity > 0:
                what = ("adds no noise" if self.scale == 0 else
                        f"adds noise that cannot move the value (a scale below the smallest normal float64, "
                        f"{_NORMAL!r})" if self.scale < _NORMAL else
                        "has no proven differential privacy (sensitivity / scale overflows float64)")
                warnings.warn(f"Laplace(scale={self.scale!r}) with sensitivity={sensitivity!r} {what}: the value is "
                              f"released{' exactly,' if self.scale == 0 else ''} with no differential privacy "
                              "(effective_epsilon=inf)",
                              PrivacyLeakWarning, stacklevel=user_stacklevel())
        else:
            self.snapping_bound = snapping_bound
            if not self.scale < self.snapping_bound:
                raise ValueError(
                    f"snapping needs scale < snapping_bound, got scale={self.scale!r} and "
                    f"snapping_bound={self.snapping_bound!r}"
                )
            if self.scale > 2.0**1023:  # the grid 2**ceil(log2(scale)) was inf: every release NaN
                raise ValueError(
                    f"snapping rounds to a grid of spacing 2**ceil(log2(scale)), which overflows float64 for "
                    f"scale={self.scale!r}; expected a scale <= 2**1023 (8.98846567e+307)"
                )
            self.effective_epsilon = _proven_epsilon(sensitivity, self.scale, snapping_bound)
            if epsilon is None and np.isinf(self.effective_epsilon) and sensitivity > 0:
                warnings.warn(
                    f"Laplace(scale={self.scale!r}, snapping_bound={snapping_bound!r}) has no proven differential "
                    f"privacy: Mironov's Theorem 1 needs snapping_bound < 2**46 * scale "
                    f"({2.0**46 * self.scale:.6g}); effective_epsilon=inf",
                    PrivacyLeakWarning, stacklevel=user_stacklevel())
        self._source = check_random_source(random_state)

    def sample(self, size=None):
        """Draw noise alone (mean zero).

        Parameters
        ----------
        size : None, int or tuple of int, default=None
            Shape of the draws; ``None`` draws one value (a 0-d result).

        Returns
        -------
        noise : float or ndarray
            Laplace(0, ``scale``) noise (with snapping: the snapped, clamped
            release of 0).
        """
        size = _size(size)
        if self.snapping_bound is not None:
            return self.randomise(np.zeros(() if size is None else size))
        if self.scale == 0:
            return np.zeros(() if size is None else size)[()]
        return self.scale * _standard_laplace(self._source, size)

    def _check_value(self, value):
        """``value`` as a float64 array, refused (before any draw) where :meth:`randomise` could not release it: not
        real and finite, or so large that value plus noise could overflow float64. A caller that records the
        release first checks here, so that a refused release is never on the ledger."""
        # strings ("1" was read as 1.0) and complex numbers (the imaginary part was dropped) are refused
        value = check_real_target(np.asarray(refuse_masked(value, "value")), "value").astype(np.float64)
        # the noise's temporaries (numpy's MemoryError named no argument)
        check_allocation(value.size, f"value of {value.size:,} entries: the noisy release", itemsize=_DRAW_PEAK_BYTES)
        if not np.all(np.isfinite(value)):
            raise ValueError(f"value must be finite, got {plain_value(value)!r}")
        if self.snapping_bound is None and self.scale != 0:
            _check_reach(self.scale, _LAPLACE_REACH, float(np.max(np.abs(value), initial=0.0)),
                         what="value + noise")
        return value

    def randomise(self, value):
        """Return ``value`` plus Laplace noise (elementwise for arrays).

        Parameters
        ----------
        value : float or array-like of float
            The exact value(s) to release; finite real numbers.

        Returns
        -------
        noisy : float or ndarray
            ``value`` plus independent Laplace(0, ``scale``) noise, of the shape of
            ``value`` (with ``snapping_bound``: clamped to ``[-B, B]`` and rounded to
            the snapping grid).
        """
        value = self._check_value(value)
        if self.snapping_bound is None:
            if self.scale == 0:
                return value[()]
            return (value + self.scale * _standard_laplace(self._source, value.shape or None))[()]
        B = self.snapping_bound
        lam = self.scale
        if lam == 0:
            return np.clip(value, -B, B)[()]
        grid = _snapping_grid(lam)
        shape = value.shape or None
        sign = np.where(self._source.integers(2, shape) == 0, -1.0, 1.0)
        u = uniform_full_precision(self._source, shape)
        with np.errstate(over="ignore"):  # a noisy value beyond float64 is +-inf, which the clamp takes to +-B
            noisy = np.clip(value, -B, B) + sign * lam * (-np.log(u))
            # a float at least 2**52 grid steps from 0 is a multiple of the (power of two) grid already: it is its
            # own rounding. Dividing it by the grid overflowed for a tiny scale (scale 1e-300 or 5e-324: 0.5 / grid
            # = inf), and every release was clamped to +-B
            snapped = np.where(np.abs(noisy) >= grid * 2.0**52, noisy, grid * np.round(noisy / grid))
            # + 0.0 turns a rounded -0.0 into +0.0: the sign of a zero told which side of 0 the noisy value was on
            snapped = snapped + 0.0
            return np.clip(snapped, -B, B)[()]

    def variance(self):
        """Variance of the noise, ``2 * scale**2`` (without snapping)."""
        return 2.0 * self.scale**2

    def __repr__(self):
        return (f"Laplace(scale={self.scale!r}, secure={self._source.secure}, "
                f"snapping_bound={self.snapping_bound!r})")


def biased_laplace_mse(bias, scale):
    """``bias^2 + 2 scale^2``: the mean squared error of an estimate off by ``bias`` plus ``Lap(scale)`` noise
    (squared bias plus the Laplace variance), ``inf`` beyond float64 (Python's float power raised
    OverflowError for ``scale = 1e200``). The worst-case error of DCLEF (``bias = Delta/2 sum_i |w_i| (1 - x_i)``)
    and of the contracts' biased Laplace mechanism (``bias = sum_i (1 - a_i) / 2``)."""
    with np.errstate(over="ignore"):
        return float(np.float64(bias) ** 2 + 2.0 * np.float64(scale) ** 2)


def _warn_infinite_epsilon(name, released="the value is"):
    """The :class:`PrivacyLeakWarning` of an ``epsilon=inf`` release (``released``: what goes out exactly)."""
    warnings.warn(
        f"{name}(epsilon=inf) adds no noise: {released} released exactly, with no "
        "differential privacy (meant for tests and non-private baselines)",
        PrivacyLeakWarning,
        stacklevel=user_stacklevel(),
    )


def laplace_noise(scale, size=None, random_state=None):
    """Laplace(0, ``scale``) noise, floating-point safe, secure by default.

    A functional shortcut for ``Laplace(scale=scale, random_state=random_state).sample(size)``.

    Parameters
    ----------
    scale : float
        The Laplace scale ``b`` (density ``exp(-|x| / b) / (2 b)``), >= 0; 0 gives
        zeros.
    size : None, int or tuple of int, default=None
        Shape of the draws; ``None`` draws one value.
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        ``None`` draws from the operating system's entropy; an integer seed is for
        tests and experiments only.

    Returns
    -------
    noise : float or ndarray
        The draws, of shape ``size``.

    Examples
    --------
    >>> from privrelease.noise import laplace_noise
    >>> laplace_noise(2.0, size=3, random_state=0).shape
    (3,)
    """
    return Laplace(scale=scale, sensitivity=0.0, random_state=random_state).sample(size)


class VectorLaplace:
    """High-dimensional Laplace noise with density proportional to ``exp(-epsilon ||v||_2 / sensitivity)``.

    The vector is drawn as a norm ``R ~ Gamma(d, sensitivity / epsilon)`` times a
    direction uniform on the unit sphere (a normalised standard normal vector):
    integrating the density over spheres of radius ``r`` gives a density of ``r``
    proportional to ``r**(d-1) exp(-epsilon r / sensitivity)``, the Gamma law.
    Releasing ``f(D) + v`` is ``epsilon``-differentially private when
    ``||f(D) - f(D')||_2 <= sensitivity`` for neighbouring data sets
    (Chaudhuri, Monteleoni and Sarwate, JMLR 2011, output perturbation).
    ``epsilon=np.inf`` gives zero noise, with a
    :class:`~privrelease.exceptions.PrivacyLeakWarning`, exactly as :class:`Laplace`.

    Parameters
    ----------
    dimension : int
        Length ``d`` of the noise vector, >= 1.
    epsilon : float
        Privacy parameter, > 0 (``np.inf`` gives zero noise and a
        :class:`~privrelease.exceptions.PrivacyLeakWarning`).
    sensitivity : float
        L2 sensitivity of the released vector, >= 0.
    random_state : None, int or Generator, default=None
        ``None`` draws from the operating system's entropy.

    Attributes
    ----------
    scale : float
        ``sensitivity / epsilon`` as a float (0 for ``epsilon=np.inf``).
    effective_epsilon : float
        The privacy the noise of ``scale`` delivers, ``sensitivity / scale`` in exact arithmetic rounded up
        (``epsilon`` itself or one ulp above it, where the division rounded the scale down; 0 for a zero
        sensitivity, ``inf`` for zero noise), as :class:`Laplace` reports it.

    Examples
    --------
    >>> from privrelease.noise import VectorLaplace
    >>> v = VectorLaplace(dimension=3, epsilon=1.0, sensitivity=0.1, random_state=0).sample()
    >>> v.shape
    (3,)
    """

    def __init__(self, *, dimension, epsilon, sensitivity, random_state=None):
        self.dimension = check_number(dimension, "dimension", low=1, integer=True)
        self.epsilon = check_number(epsilon, "epsilon", low=0, low_inclusive=False, allow_inf=True,
                                    overflow_to_inf=False)  # beyond float64: refused, not read as no noise
        self.sensitivity = check_number(sensitivity, "sensitivity", low=0)
        self.scale = _noise_scale(self.sensitivity, self.epsilon)
        _check_reach(self.scale, _gamma_reach(self.dimension),
                     what=f"epsilon={epsilon!r} with sensitivity={sensitivity!r} in dimension {self.dimension}")
        self.effective_epsilon = np.inf if np.isinf(self.epsilon) else _proven_epsilon(self.sensitivity, self.scale)
        if np.isinf(self.epsilon):
            _warn_infinite_epsilon("VectorLaplace")
        self._source = check_random_source(random_state)

    def sample_norm(self, size=None):
        """Draw only the norm ``||v||``: Gamma(d, sensitivity / epsilon).

        Parameters
        ----------
        size : None, int or tuple of int, default=None
            Shape of the draws; ``None`` draws one norm.

        Returns
        -------
        norms : float or ndarray
            The norms (zeros when the scale is 0).
        """
        size = _size(size, _GAMMA_PEAK_BYTES)
        if self.scale == 0:
            return np.zeros(() if size is None else size)[()]
        return self.scale * self._source.gamma(self.dimension, size)

    def sample(self, size=None):
        """Draw noise vectors, shape ``(d,)`` or ``(size, d)``.

        Parameters
        ----------
        size : None or int, default=None
            Number of vectors; ``None`` draws one vector of shape ``(d,)``.

        Returns
        -------
        noise : ndarray of shape (dimension,) or (size, dimension)
            Independent noise vectors.
        """
        if size is not None and (isinstance(size, (bool, np.bool_)) or not isinstance(size, numbers.Integral)):
            raise TypeError(f"size must be None or a non-negative integer (the number of vectors), got {size!r}")
        n = 1 if size is None else int(check_size(size)[0])
        d = self.dimension
        # the normal draws, their norms and the result: numpy's MemoryError named neither d nor size (and d = 10**9
        # had the process killed, checked as 8 GB of output against the total memory)
        check_allocation(n, f"dimension={d}" + ("" if size is None else f", size={n}") + ": the noise vectors",
                         itemsize=d * _VECTOR_PEAK_BYTES + _GAMMA_PEAK_BYTES, unit="vectors")
        z = self._source.normal((n, d))
        norms = np.linalg.norm(z, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        v = z / norms * np.reshape(self.sample_norm(n), (n, 1))
        return v[0] if size is None else v

    def __repr__(self):
        return (f"VectorLaplace(dimension={self.dimension}, scale={self.scale!r}, "
                f"secure={self._source.secure})")
