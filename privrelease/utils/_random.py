"""Sources of randomness for privacy paths.

Every random draw that protects somebody's privacy in privrelease goes through a
:class:`RandomSource`. By default (``random_state=None``) that source reads the
operating system's entropy (:func:`os.urandom`, the same pool :mod:`secrets` uses),
never a seeded pseudo-random generator whose state could be recovered. An integer
seed (or a :class:`numpy.random.Generator`) gives a reproducible source for tests
and experiments: it is documented as such and must not be used in production.

Both sources share one code path: the subclass only supplies uniform bits, and
every distribution (uniform, exponential, normal, gamma, categorical, permutation)
is built from them here, so a distribution test on the seeded source also covers
the secure one.
"""

import math
import numbers
import os

import numpy as np
from ._validation import plain_value

__all__ = [
    "RandomSource",
    "SecureRandomSource",
    "SeededRandomSource",
    "check_random_source",
]

_TWO53 = float(2**53)


def check_size(size, name="size"):
    """The shape a ``size`` argument asks for: None -> ``()``, an int ``n >= 0`` -> ``(n,)``, a tuple of them.

    A negative or fractional size used to be read as an empty draw (``size=-1`` gave an array of
    shape ``(0,)``) or truncated (``2.7`` gave 2 draws).
    """
    if size is None:
        return ()
    dims = tuple(size) if np.iterable(size) and not isinstance(size, (str, bytes)) else (size,)
    for v in dims:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be None, a non-negative integer or a tuple of them, got {size!r}")
        if v < 0:
            raise ValueError(f"{name} must be None, a non-negative integer or a tuple of them, got {size!r}")
    return tuple(int(v) for v in dims)


class RandomSource:
    """Base class: distributions built from 53-bit uniform integers.

    Subclasses implement :meth:`_bits53`, returning unsigned integers uniform on
    ``[0, 2**53)``.
    """

    #: ``True`` when draws come from the operating system's entropy.
    secure = False

    def _bits53(self, n):  # pragma: no cover - abstract
        raise NotImplementedError

    def _draw(self, size, fn):
        shape = check_size(size)
        n = math.prod(shape) if shape else 1
        out = fn(n)
        return out.reshape(shape) if shape else out[0]

    def _uniform_n(self, n):
        return (self._bits53(n).astype(np.float64) + 0.5) / _TWO53

    def _normal_n(self, n):
        # u1 and u2 from one call: the same bits as two calls of m each (both sources read their bits in order)
        m = (n + 1) // 2
        u = (self._bits53(2 * m).astype(np.float64) + 0.5) / _TWO53
        u1, u2 = u[:m], u[m:]
        r = np.sqrt(-2.0 * np.log(u1))
        z = np.concatenate([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)])
        return z[:n]

    def uniform(self, size=None):
        """Uniform on the open interval (0, 1), 53 bits of resolution.

        The value ``(k + 1/2) / 2**53`` never equals 0 or 1, so ``log`` of it is
        always finite.

        Parameters
        ----------
        size : None, int or tuple of int, default=None
            Shape of the draws; None draws one value (a scalar).

        Returns
        -------
        float or ndarray of float64
        """
        return self._draw(size, self._uniform_n)

    def exponential(self, size=None):
        """Standard exponential, by inversion of an open-interval uniform.

        Parameters
        ----------
        size : None, int or tuple of int, default=None
            Shape of the draws; None draws one value (a scalar).

        Returns
        -------
        float or ndarray of float64
        """
        return -np.log(self.uniform(size))

    def normal(self, size=None):
        """Standard normal, by the Box-Muller transform.

        Parameters
        ----------
        size : None, int or tuple of int, default=None
            Shape of the draws; None draws one value (a scalar).

        Returns
        -------
        float or ndarray of float64
        """
        return self._draw(size, self._normal_n)

    def gamma(self, shape_param, size=None):
        """Gamma(shape, 1) by Marsaglia and Tsang (2000), built on :meth:`normal`.

        Valid for any ``shape_param > 0`` (shapes below 1 use the ``U**(1/a)`` boost).

        Parameters
        ----------
        shape_param : float
            The Gamma shape ``a``, > 0.
        size : None, int or tuple of int, default=None
            Shape of the draws; None draws one value (a scalar).

        Returns
        -------
        float or ndarray of float64
        """
        a = float(shape_param)
        if not a > 0:
            raise ValueError(f"gamma shape must be > 0, got {shape_param!r}")
        boost = a < 1
        a_eff = a + 1.0 if boost else a
        d = a_eff - 1.0 / 3.0
        c = 1.0 / np.sqrt(9.0 * d)

        def fn(n):
            out = np.empty(n)
            filled = 0
            while filled < n:
                m = max(2 * (n - filled), 16)
                x = self._normal_n(m)
                v = (1.0 + c * x) ** 3
                u = self._uniform_n(m)
                ok = (v > 0) & (np.log(u) < 0.5 * x**2 + d - d * v + d * np.log(np.where(v > 0, v, 1.0)))
                acc = (d * v)[ok]
                take = min(acc.size, n - filled)
                out[filled:filled + take] = acc[:take]
                filled += take
            if boost:
                out *= self._uniform_n(n) ** (1.0 / a)
            return out

        return self._draw(size, fn)

    def integers(self, high, size=None):
        """Uniform integers on ``[0, high)`` (exact: rejection sampling, no modulo bias).

        Parameters
        ----------
        high : int
            Exclusive upper bound, in ``[1, 2**53]``.
        size : None, int or tuple of int, default=None
            Shape of the draws; None draws one value (a scalar).

        Returns
        -------
        int or ndarray of int64
        """
        high = int(high)
        if high <= 0:
            raise ValueError(f"high must be a positive integer, got {high!r}")
        if high > 2**53:
            # the rejection limit below would be 0 and the loop would never end
            raise ValueError(f"high must be at most 2**53, got {high!r}")
        limit = (2**53 // high) * high

        def fn(n):
            out = np.empty(n, dtype=np.int64)
            filled = 0
            while filled < n:
                b = self._bits53(max(n - filled, 8))
                b = b[b < limit]
                take = min(b.size, n - filled)
                out[filled:filled + take] = (b[:take] % high).astype(np.int64)
                filled += take
            return out

        return self._draw(size, fn)

    def permutation(self, n):
        """A uniformly random permutation of ``range(n)`` (sort by random keys).

        Parameters
        ----------
        n : int
            Number of elements, >= 0.

        Returns
        -------
        ndarray of int64, shape (n,)
        """
        n = int(n)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        keys = self._bits53(n)
        # ties among 53-bit keys are astronomically rare; break them by a second key
        second = self._bits53(n)
        # without a tie the order by the first key alone is the one lexsort gives (one argsort: a third of the time)
        order = np.argsort(keys)
        ranked = keys[order]
        if np.any(ranked[1:] == ranked[:-1]):
            order = np.lexsort((second, keys))
        return order.astype(np.int64)

    def categorical(self, probabilities):
        """One draw per row of a row-stochastic matrix (inverse CDF), each outcome with exactly its probability.

        The uniform's first 53 bits settle the outcome unless its interval ``[k, k + 1) / 2**53`` comes within
        rounding of a cumulative sum; such a row is decided in exact arithmetic, drawing further bits as needed.
        So an outcome of probability below ``2**-54`` can be drawn, and is, with that probability.

        Parameters
        ----------
        probabilities : ndarray of shape (n_rows, n_outcomes)
            Each row sums to one (a row of non-negative weights with a positive finite total is normalised).

        Returns
        -------
        index : ndarray of shape (n_rows,)

        Raises
        ------
        ValueError
            An entry that is NaN, infinite or negative, or a row without positive weight: such a row
            drew outcome 0 (NaN, negative) or its last outcome (all zeros), an outcome of probability 0.
        """
        p = np.asarray(probabilities, dtype=np.float64)
        if p.ndim == 1:
            p = p[None, :]
        if p.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        bad = ~np.isfinite(p) | (p < 0)
        with np.errstate(over="ignore"):
            total = p.sum(axis=1)
        if bad.any() or not np.all((total > 0) & np.isfinite(total)):
            if bad.any():
                r, c = np.argwhere(bad)[0]
                what = f"entry ({r}, {c}) is {plain_value(p[r, c])!r}"
            else:
                r = int(np.flatnonzero(~((total > 0) & np.isfinite(total)))[0])
                what = f"row {r} sums to {plain_value(total[r])!r}"
            raise ValueError(f"probabilities must be finite, non-negative and give each row a positive total, but "
                             f"{what}; expected a row-stochastic matrix")
        cdf = np.cumsum(p, axis=1)
        tot = cdf[:, -1]
        k = self._bits53(p.shape[0]).astype(np.float64)
        u = (k + 0.5) / _TWO53 * tot
        # first j with cdf[j] > u: that outcome has p[j] > 0 since cdf strictly rises there
        idx = (cdf <= u[:, None]).sum(axis=1)
        # the uniform lies in [k, k + 1) / 2**53: the outcome is settled when no cumulative sum (each within
        # (n + 2) ulps of its exact value, as is the scaled uniform) falls in that interval widened by the errors
        margin = (2.0 * p.shape[1] + 4.0) * 2.0**-52 * tot
        with np.errstate(over="ignore"):
            low = (k / _TWO53 * tot - margin)[:, None]
            high = ((k + 1.0) / _TWO53 * tot + margin)[:, None]
        unsettled = np.flatnonzero(((cdf >= low) & (cdf <= high)).any(axis=1))
        for r, kr in zip(unsettled.tolist(), k[unsettled].tolist()):
            idx[r] = self._categorical_exact(p[r], int(kr))
        return idx.astype(np.int64)

    def _categorical_exact(self, row, k):
        """The outcome of ``row`` for a uniform whose first 53 bits are ``k``, in exact arithmetic: further bits
        are drawn (53 at a time) until the uniform's interval lies inside one outcome's cell. An outcome of any
        positive probability is drawn with exactly that probability (``[0.5, 1e-17, 0.5]``'s middle one was
        unreachable on the grid ``(k + 1/2) / 2**53``, as was any outcome of probability below ``2**-54``)."""
        from fractions import Fraction

        cum, acc = [], Fraction(0)
        for t in row.tolist():
            acc += Fraction(t)
            cum.append(acc)
        total = cum[-1]
        start, width = Fraction(k, 2**53), Fraction(1, 2**53)
        while True:
            j = sum(1 for c in cum if c <= start * total)       # the cell holding the interval's start
            if j < len(cum) and (start + width) * total <= cum[j]:
                return j
            start += width * Fraction(int(self._bits53(1)[0]), 2**53)
            width /= 2**53

    def spawn_seed(self):
        """An integer seed for a third-party routine that needs one (k-means, SVD).

        Only for non-privacy steps such as clustering initialisation.
        """
        return int(self._bits53(1)[0] % (2**31 - 1))


class SecureRandomSource(RandomSource):
    """Draws from the operating system's entropy (:func:`os.urandom`).

    Nothing is seeded, nothing is stored: two runs never repeat.
    """

    secure = True

    def _bits53(self, n):
        raw = np.frombuffer(os.urandom(8 * int(n)), dtype=np.uint64)
        return raw >> np.uint64(11)

    def __repr__(self):
        return "SecureRandomSource()"


class SeededRandomSource(RandomSource):
    """Reproducible draws from a seeded :class:`numpy.random.Generator`.

    For tests and reproducible experiments only: the seed determines every draw.

    Parameters
    ----------
    seed : None, int, numpy Generator or RandomState, default=None
        An integer (or None: fresh entropy, not reproducible) seeds a new
        :class:`numpy.random.Generator`; a Generator is used as it is (its stream
        is shared); a RandomState gives one seed to a new Generator.
    """

    secure = False

    def __init__(self, seed=None):
        if isinstance(seed, np.random.Generator):
            self._rng = seed
        elif isinstance(seed, np.random.RandomState):
            self._rng = np.random.default_rng(seed.randint(0, 2**31 - 1))
        else:
            self._rng = np.random.default_rng(seed)

    def _bits53(self, n):
        return self._rng.integers(0, 2**53, size=int(n), dtype=np.uint64)

    def __repr__(self):
        return "SeededRandomSource(...)"


def check_random_source(random_state):
    """Turn a ``random_state`` parameter into a :class:`RandomSource`.

    Parameters
    ----------
    random_state : None, int, numpy Generator or RandomState, or RandomSource
        ``None`` (the default everywhere in privrelease) gives a
        :class:`SecureRandomSource` reading the operating system's entropy. An
        integer or a numpy generator gives a reproducible
        :class:`SeededRandomSource`, meant for tests and experiments.

    Returns
    -------
    source : RandomSource
    """
    if random_state is None:
        return SecureRandomSource()
    if isinstance(random_state, RandomSource):
        return random_state
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        return SeededRandomSource(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state!r}")
        return SeededRandomSource(int(random_state))
    raise TypeError(
        "random_state must be None (operating-system entropy), a non-negative int, "
        f"a numpy Generator/RandomState or a RandomSource; got {random_state!r}"
    )
