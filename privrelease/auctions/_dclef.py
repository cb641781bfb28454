"""Laplace estimator functions for a linear predictor (Dandekar, Fawaz and Ioannidis, Sec. 3).

A linear predictor ``s(d) = <w, d>`` over private entries ``d_i`` in a public
interval ``I = [R_min, R_max]`` is released through a Laplace estimator function
(LEF, eq. 4)::

    s_hat(d; x, sigma) = sum_i w_i d_i x_i + R_bar sum_i w_i (1 - x_i) + Lap(sigma)

with ``R_bar`` the midpoint of ``I``. It is *canonical* when
``sigma = Delta * sum_i |w_i| (1 - x_i)`` (eq. 5) and *discrete* (a DCLEF) when
``x`` is in ``{0, 1}^n``.

References
----------
.. [1] P. Dandekar, N. Fawaz and S. Ioannidis, "Privacy Auctions for Recommender
   Systems", WINE 2012 (full version: arXiv:1111.2885), Sec. 3, Lemma 2,
   Definitions 3 and 4, eqs. (3)-(6) and (8).
"""

from fractions import Fraction
import numbers
import warnings

import numpy as np

from ..noise import Laplace
from ..exceptions import PrivacyLeakWarning
from ..noise._laplace import (_LAPLACE_REACH, _NORMAL, _check_reach, _ratio_up, biased_laplace_mse,
                              check_normal_scale)
from ..utils import check_number
from ..utils._validation import (as_float_array, check_real_target, check_same_index, holds_only, plain_value,
                                 refuse_booleans, refuse_masked, user_stacklevel)

__all__ = ["DCLEF", "privacy_index", "check_data_range"]

#: most individuals with ``0 < eps_i < threshold`` the exact privacy index enumerates, whatever
#: ``max_exact`` says: two halves of ``2**24`` subset sums (about half a GiB of float64 arrays and
#: their copies); one more individual doubles it
_MAX_EXACT_LIMIT = 48


def _two_product(p, q):
    """``(P, e)`` with ``P = fl(p q)`` and ``P + e = p q`` exactly (Dekker's product by Veltkamp's split), for
    factors and products far from float64's overflow and underflow thresholds."""
    prod = p * q
    cp, cq = 134217729.0 * p, 134217729.0 * q
    ph, qh = cp - (cp - p), cq - (cq - q)
    pl, ql = p - ph, q - qh
    return prod, ((ph * qh - prod) + ph * ql + pl * qh) + pl * ql


_SAFE = (2.0**-400, 2.0**400)   # magnitudes whose products and quotients the two-product test handles exactly


def delivered_epsilons(a, x, data_range, sigma):
    """``eps_i >= Delta |w_i| x_i / sigma`` in exact arithmetic (``Delta = R_max - R_min`` exactly): the guarantees
    Laplace noise of scale ``sigma`` (> 0, finite) delivers, never below them.

    The least such float when ``Delta |w_i| x_i`` is exact in float64 (the quotient rounded up by an exact
    two-product test), at most five ulps above it otherwise (each of the four rounded steps is off by at most
    half an ulp); in exact rationals for magnitudes near float64's limits.
    """
    a = np.asarray(a, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    low, high = data_range
    delta = high - low
    delta_f = Fraction(high) - Fraction(low)
    pos = (a > 0) & (x > 0)
    eps = np.zeros(a.shape)
    lo, hi = _SAFE
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        n1, e1 = _two_product(delta, a)
        num, e2 = _two_product(n1, x)
        q = num / sigma
        # Delta |w_i| x_i = n1 + e1 exactly: the least of fl(q) - 1 ulp .. + 2 ulps with c sigma >= n1 + e1
        exact_num = (Fraction(delta) == delta_f) & (e2 == 0)
        fast = q
        for _ in range(5):
            fast = np.nextafter(fast, np.inf)
        unsure = np.zeros(a.shape, dtype=bool)
        above = np.nextafter(q, np.inf)
        for c in (np.nextafter(above, np.inf), above, q, np.nextafter(q, -np.inf)):
            prod, err = _two_product(c, sigma)
            t = e1 - err
            r = (n1 - prod) + t                          # n1 - prod is exact (Sterbenz)
            doubt = (t != 0) & (np.abs(r) <= 4.0 * 2.0**-53 * np.abs(t))   # the sign of r could be wrong
            covers = ~doubt & (r <= 0)
            fast = np.where(exact_num & covers, c, fast)
            unsure |= exact_num & doubt
    safe = (pos & (lo <= delta <= hi) & (lo <= sigma <= hi) & (a >= lo) & (a <= hi) & (x >= lo)
            & (n1 >= lo) & (n1 <= hi) & (num >= lo) & (num <= hi) & (q >= lo) & (q <= hi))
    eps[safe] = fast[safe]
    for i in np.flatnonzero(pos & (~safe | unsure)).tolist():
        eps[i] = _ratio_up(delta_f * Fraction(float(a[i])) * Fraction(float(x[i])), sigma)
    return eps


def check_data_range(data_range, name="data_range"):
    """Validate the public data interval ``(R_min, R_max)``; return it as floats.

    Parameters
    ----------
    data_range : tuple (R_min, R_max)
        Finite real end points with ``R_min < R_max``.
    name : str, default="data_range"
        Name used in error messages.

    Returns
    -------
    tuple of float
        ``(R_min, R_max)``.

    Raises
    ------
    TypeError
        Not a pair of real numbers.
    ValueError
        Non-finite end points, or ``R_min >= R_max`` (an empty or reversed interval).
    """
    try:
        low, high = data_range
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a pair (R_min, R_max) of real numbers, got {data_range!r}"
        ) from None
    low = check_number(low, f"{name}[0] (R_min)")
    high = check_number(high, f"{name}[1] (R_max)")
    if not low < high:
        raise ValueError(
            f"{name} must satisfy R_min < R_max (a non-empty interval), got {data_range!r}"
        )
    if not np.isfinite(high - low):
        # the noise scale Delta sum |w_i| (1 - x_i) with Delta = R_max - R_min was inf: "scale must be finite"
        raise ValueError(f"{name} must have a finite width R_max - R_min (the sensitivity Delta), got "
                         f"{data_range!r}, whose width overflows float64")
    return low, high


def _check_vector(values, name, *, allow_inf=False, nonnegative=False, allow_bool=False):
    """``values`` as a 1-D float64 array of real numbers; booleans are refused unless ``allow_bool`` (the
    interpolation vector ``x`` of :class:`DCLEF`, whose ``{0, 1}`` entries say who was bought: an auction's
    ``selected`` mask)."""
    if isinstance(values, (list, tuple)) and not allow_bool:
        # numpy reads [1.0, True] as the floats 1.0, 1.0: look at the values as given
        refuse_booleans(values, name)
    arr = np.asarray(refuse_masked(values, name, "used"))
    if not allow_bool:
        refuse_booleans(arr, name)
    if arr.dtype.kind in "USO" and not (arr.dtype.kind == "O" and holds_only(arr, numbers.Number)):
        # "1.5" was read as 1.5 without a word, while every scalar parameter refuses strings
        first = next((v for v in arr.ravel().tolist() if not isinstance(v, numbers.Number)), None)
        raise TypeError(f"{name} must be an array of real numbers, got an array of dtype {arr.dtype} "
                        f"holding {first!r}")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        try:
            arr = arr.astype(np.float64)
        except OverflowError:   # the int 10**400: a ValueError naming it (it was a bare OverflowError)
            arr = as_float_array(arr, name)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be an array of real numbers, got {values!r}") from None
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got complex values {values!r}")
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one entry per individual), got shape {arr.shape}")
    bad = np.isnan(arr) | (np.isinf(arr) if not allow_inf else np.isneginf(arr))
    if bad.any():
        raise ValueError(
            f"{name} must be {'finite' if not allow_inf else 'non-NaN'} numbers, got "
            f"{np.count_nonzero(bad)} bad entr{'y' if bad.sum() == 1 else 'ies'} such as "
            f"{float(arr[bad][0])!r} at index {int(np.flatnonzero(bad)[0])}"
        )
    if nonnegative and (arr < 0).any():
        i = int(np.flatnonzero(arr < 0)[0])
        raise ValueError(f"{name} must be >= 0, got {float(arr[i])!r} at index {i}")
    return arr


def privacy_index(epsilons, weights, *, threshold=0.5, max_exact=40):
    """Privacy index ``beta`` of an estimator (Definition 3, eq. 2), computed exactly.

    ``beta = max { w(H) : H subset of [n], sum_{i in H} eps_i < threshold }`` with
    ``w(H) = sum_{i in H} |w_i|`` and ``threshold = 1/2`` in the paper.

    Individuals with ``eps_i = 0`` always belong to the optimal ``H`` and those
    with ``eps_i >= threshold`` never do; the remaining ``m`` individuals form a
    0-1 knapsack, solved exactly by meet-in-the-middle enumeration in
    ``O(2**(m/2) * m)`` time and ``O(2**(m/2))`` memory (the problem is NP-hard
    in general: for a DCLEF it is a subset-sum problem). The strict inequality is
    decided exactly on the given floats: subset sums are compared in floating point
    where they are clear of the threshold by more than a bound on their rounding
    error, in exact integer arithmetic otherwise (``0.1 + 0.25 + 0.15`` is exactly
    ``1/2``, and twenty ``0.1`` exceed ``2``, although their float sums round onto it).

    Parameters
    ----------
    epsilons : array-like of shape (n,)
        Per-individual privacy guarantees, >= 0 (``inf`` allowed).
    weights : array-like of shape (n,)
        Weights ``w_i`` of the linear predictor (only ``|w_i|`` matters).
    threshold : float, default=0.5
        The bound on the total privacy of ``H`` (strict inequality).
    max_exact : int, default=40
        Refuse (ValueError) when more than this many individuals have
        ``0 < eps_i < threshold``: the enumeration would be too large.
        More than 48 such individuals are refused whatever ``max_exact`` says
        (the enumeration would need several GiB of memory).

    Returns
    -------
    beta : float

    References
    ----------
    Dandekar, Fawaz and Ioannidis (2012), Definition 3.

    Examples
    --------
    >>> from privrelease.auctions import privacy_index
    >>> privacy_index([0.0, 0.3, 0.3], [1.0, 2.0, 5.0])
    6.0
    """
    eps = _check_vector(epsilons, "epsilons", allow_inf=True, nonnegative=True)
    w = np.abs(_check_vector(weights, "weights"))
    check_same_index(epsilons, weights, "weights", x_name="epsilons",
                     consequence="individuals would get other individuals' weights")
    if eps.shape != w.shape:
        raise ValueError(f"epsilons has shape {eps.shape} but weights has shape {w.shape}")
    threshold = check_number(threshold, "threshold", low=0, low_inclusive=False)
    max_exact = check_number(max_exact, "max_exact", low=0, integer=True)
    free = eps == 0
    with np.errstate(over="ignore"):   # a weight sum beyond float64 is inf
        base = float(w[free].sum())
    items = np.flatnonzero((eps > 0) & (eps < threshold))
    m = items.size
    if _MAX_EXACT_LIMIT < m <= max_exact:
        raise ValueError(
            f"the exact privacy index needs a 2**({m}/2) enumeration ({m} individuals with "
            f"0 < eps_i < {threshold}): about {2 ** (m - m // 2) * 64 / 2**30:.3g} GiB of memory; at most "
            f"{_MAX_EXACT_LIMIT} such individuals are enumerated whatever max_exact says (got max_exact={max_exact})"
        )
    if m > max_exact:
        raise ValueError(
            f"the exact privacy index needs a 2**({m}/2) enumeration ({m} individuals with "
            f"0 < eps_i < {threshold}); raise max_exact (got {max_exact}) if you can afford it"
        )
    if m == 0:
        return base
    c, v = eps[items], w[items]
    half = m // 2

    def sums(cc, vv):
        sc, sv = np.zeros(1), np.zeros(1)
        for ci, vi in zip(cc, vv):
            sc = np.concatenate([sc, sc + ci])
            sv = np.concatenate([sv, sv + vi])
        return sc, sv

    with np.errstate(over="ignore"):
        ca, va = sums(c[:half], v[:half])
        cb, vb = sums(c[half:], v[half:])
    order = np.argsort(cb, kind="stable")
    cb, vb_raw = cb[order], vb[order]
    vb = np.maximum.accumulate(vb_raw)
    # The subset sums are rounded (0.1 + 0.15 + 0.25 is 0.5 in floating point, above 1/2 exactly): an index
    # below lo is surely below threshold - ca exactly, one above hi surely not (the margin bounds every
    # rounding error, see _privacy_index_margin); the few in between are decided in exact arithmetic.
    margin = _privacy_index_margin(threshold, m)
    with np.errstate(over="ignore", invalid="ignore"):
        room = threshold - ca
        lo = np.searchsorted(cb, room - margin, side="left") - 1
        # the band is not empty when the next sum after lo is within the margin (one gather, not a second search)
        close = np.flatnonzero(cb[np.minimum(lo + 1, cb.size - 1)] <= room + margin)
        close = close[lo[close] + 1 < cb.size]
    ok = lo >= 0
    best_b = np.where(ok, vb[np.maximum(lo, 0)], -np.inf)
    if close.size:
        with np.errstate(over="ignore", invalid="ignore"):
            hi = np.searchsorted(cb, room[close] + margin, side="right") - 1
        best_b[close] = np.maximum(best_b[close], _exact_best_b(c, half, threshold, order, vb_raw, lo[close],
                                                                hi, close))
    ok = best_b > -np.inf
    with np.errstate(over="ignore"):
        best = np.max(va[ok] + best_b[ok]) if ok.any() else 0.0
        return base + float(best)


def _privacy_index_margin(threshold, m):
    """Bound on the rounding error of comparing ``ca + cb < threshold`` as ``cb < threshold - ca`` in floating point.

    Each float subset sum of ``h <= m`` terms ``>= 0`` is within ``gamma_h`` (relative) of the exact sum (Higham,
    Sec. 4.2); only sums up to a few times ``threshold`` are near the comparison, and ``threshold - ca`` and the
    margin itself add a rounding each: ``8 gamma_{m+2} threshold`` covers them with room to spare. The absolute
    ``2**-1068`` covers a margin that underflows (additions of subnormals are exact).
    """
    k = m + 2
    return 8.0 * (k * 2.0**-53 / (1.0 - k * 2.0**-53)) * threshold + 2.0**-1068


_LIMB = 55   # bits per limb of the exact subset sums below (sums of 48 limbs stay below 2**62)


def _limbs(x, top, n_limbs=None):
    """Exact base-``2**55`` digits of floats ``0 <= x < 2**top``: ``x = sum_j L_j 2**(top - 55 (j + 1))``.

    Returns an int64 array of shape ``(len(x), n_limbs)``, as many limbs as the smallest bit of ``x`` needs
    when ``n_limbs`` is None. Each digit is ``floor`` of an exact power-of-two rescaling (``ldexp``), and the
    remainder ``x - L_j 2**e`` is exact (its bits are a subset of ``x``'s).
    """
    rem = np.array(x, dtype=np.float64)
    out = []
    j = 0
    while (n_limbs is None and (rem > 0).any()) or (n_limbs is not None and j < n_limbs):
        shift = _LIMB * (j + 1) - top
        digit = np.floor(np.ldexp(rem, shift))
        rem = rem - np.ldexp(digit, -shift)
        out.append(digit.astype(np.int64))
        j += 1
    return np.stack(out, axis=1) if out else np.zeros((len(rem), 0), dtype=np.int64)


def _subset_limbs(limbs, subsets):
    """Limb sums (unnormalized, each below ``2**60``) of the subsets whose bit ``i`` says item ``i`` is in."""
    h = limbs.shape[0]
    bits = (subsets[:, None] >> np.arange(h)[None, :]) & 1
    return bits @ limbs


def _normalize(limbs):
    """Carry each limb into the one above (in place), leaving limbs ``1, 2, ...`` in ``[0, 2**55)``."""
    for j in range(limbs.shape[1] - 1, 0, -1):
        carry = limbs[:, j] >> _LIMB
        limbs[:, j] -= carry << _LIMB
        limbs[:, j - 1] += carry
    return limbs


def _exact_best_b(c, half, threshold, order, vb_raw, lo, hi, rows):
    """Best weight of a second-half subset ``b`` with ``A + B < threshold`` exactly, for the first-half subsets
    ``rows`` whose float comparison was too close to call (``B`` on float-sorted positions ``lo + 1 .. hi``).

    The positions in any such band form a set ``U``; sorted by their exact sums, the ``b`` in ``U`` with
    ``A + B < threshold`` are a prefix of it, found by a binary search with exact comparisons on integer limbs
    (vectorized over ``rows``). Positions up to ``lo`` are surely below, and the caller has them already.
    """
    top = int(np.frexp(threshold)[1])           # every eps_i < threshold < 2**top
    n_limbs = max(_limbs(np.append(c, threshold), top).shape[1], 1)
    L = _limbs(c, top, n_limbs)
    T = _limbs([threshold], top, n_limbs)[0]
    mark = np.zeros(vb_raw.size + 1, dtype=np.int64)
    np.add.at(mark, lo + 1, 1)
    np.add.at(mark, hi + 1, -1)
    U = np.flatnonzero(np.cumsum(mark[:-1]) > 0)          # float-sorted positions in some band
    BU = _normalize(_subset_limbs(L[half:], order[U]))
    rank = np.lexsort(BU.T[::-1])                          # exact order (limb 0 the primary key)
    BU, vU = BU[rank], np.maximum.accumulate(vb_raw[U][rank])
    A = _subset_limbs(L[:half], rows)
    # largest q with B_U[q - 1] + A < threshold: binary search over q in [0, |U|]
    q_lo, q_hi = np.zeros(rows.size, dtype=np.int64), np.full(rows.size, U.size, dtype=np.int64)
    while (q_lo < q_hi).any():
        mid = (q_lo + q_hi) // 2
        live = q_lo < q_hi
        D = _normalize(A + BU[np.minimum(mid, U.size - 1)] - T[None, :])
        below = live & (D[:, 0] < 0)                      # A + B_U[mid] < threshold
        q_lo = np.where(below, mid + 1, q_lo)
        q_hi = np.where(live & ~below, mid, q_hi)
    return np.where(q_lo > 0, vU[np.maximum(q_lo - 1, 0)], -np.inf)


class DCLEF:
    """A (discrete) canonical Laplace estimator function of ``s(d) = <w, d>`` (Def. 4, eqs. 4-5).

    Parameters
    ----------
    weights : array-like of shape (n,)
        Public weights ``w_i`` of the linear predictor (any sign). ``n = 0`` (no
        individual) is the empty sum ``s = 0``: eqs. (4)-(6) give the estimate
        ``0.0`` exactly, ``sigma = 0``, distortion 0 and no ``eps_i``, so
        :meth:`sample` of ``d = []`` returns ``0.0`` (nobody's data is used, no
        privacy is spent); an auction of no individual is refused
        (:func:`~privrelease.auctions.fair_inner_product`).
    x : array-like of shape (n,)
        Interpolation vector, entries in ``[0, 1]``: ``x_i = 1`` uses ``d_i``,
        ``x_i = 0`` replaces it by the midpoint ``R_bar`` (a DCLEF has
        ``x`` in ``{0, 1}^n``; fractional values give a canonical LEF).
    data_range : pair of float
        The public interval ``[R_min, R_max]`` holding every ``d_i``.
    sigma : float, optional
        Laplace scale. Default: the canonical ``Delta * sum_i |w_i| (1 - x_i)`` (eq. 5).

    Attributes
    ----------
    delta : float
        ``Delta = R_max - R_min``.
    midpoint : float
        ``R_bar = (R_min + R_max) / 2``.
    residual_weight : float
        ``sum_i |w_i| (1 - x_i)`` (the weight not bought).
    sigma : float
        The Laplace scale used by :meth:`sample`.
    epsilons : ndarray of shape (n,)
        ``eps_i = Delta |w_i| x_i / sigma`` (Lemma 2); for the canonical scale this is
        eq. (8), ``|w_i| x_i / sum_j |w_j| (1 - x_j)``, which does not depend on the scale
        of the weights or of ``Delta`` (it stays right where ``sigma`` overflows to ``inf``;
        :meth:`sample` then refuses). ``inf`` when ``sigma = 0`` and ``|w_i| x_i > 0``
        (no privacy at all).
    distortion : float
        ``max_d E|s(d) - s_hat(d)|^2 = (Delta/2 * residual_weight)^2 + 2 sigma^2``
        (Lemma 2 with ``a_i = R_bar``); for the canonical scale
        ``(9/4) Delta^2 residual_weight^2`` (eq. 6).

    Raises
    ------
    ValueError
        The canonical ``sigma = Delta * residual_weight`` is positive but rounds below the
        smallest normal float64: a subnormal scale has lost the relative precision the
        guarantees of eq. (8) need.

    References
    ----------
    Dandekar, Fawaz and Ioannidis (2012), Lemma 2, Definition 4, eqs. (4)-(6), (8).

    Examples
    --------
    >>> from privrelease.auctions import DCLEF
    >>> est = DCLEF([1.0, 1.0, 2.0], [1, 1, 0], data_range=(1, 5))
    >>> est.epsilons.tolist(), est.sigma, est.distortion
    ([0.5, 0.5, 0.0], 8.0, 144.0)
    >>> s_hat = est.sample([5, 1, 3], random_state=0)   # 5 + 1 + 2 * 3 + Lap(8)
    """

    def __init__(self, weights, x, data_range, *, sigma=None):
        w = _check_vector(weights, "weights")
        check_same_index(weights, x, "x", x_name="weights",
                         consequence="individuals would get other individuals' interpolation x_i")
        x = _check_vector(x, "x", allow_bool=True)
        if x.shape != w.shape:
            raise ValueError(f"x has shape {x.shape} but weights has shape {w.shape}")
        if ((x < 0) | (x > 1)).any():
            i = int(np.flatnonzero((x < 0) | (x > 1))[0])
            raise ValueError(f"x must lie in [0, 1], got {float(x[i])!r} at index {i}")
        low, high = check_data_range(data_range)
        self.weights = w
        self.x = x
        self.data_range = (low, high)
        self.delta = high - low
        self.midpoint = (low + high) / 2.0
        a = np.abs(w)
        with np.errstate(over="ignore"):
            self.residual_weight = float(np.sum(a * (1.0 - x)))
        if sigma is None:
            with np.errstate(over="ignore", under="ignore"):
                self.sigma = self.delta * self.residual_weight
            self.canonical = True
            # Delta = 1.5e-323 and a residual of 0.4 gave sigma = 5e-324 (rounded from 6e-324): the noise had
            # eps_i = 3.0 where eq. (8), and the auction paying for it, said 2.5
            check_normal_scale(self.sigma, f"sigma = Delta * residual_weight = {self.delta!r} * "
                               f"{self.residual_weight!r}", positive=self.residual_weight > 0,
                               advice="expected a wider data_range or larger weights (rescale the data or the "
                               "weights)")
        else:
            self.sigma = check_number(sigma, "sigma", low=0)
            self.canonical = False
        self.epsilons = self._guarantees(a, x)
        if 0 < self.sigma < np.inf:
            # the guarantees the noise of scale sigma delivers, rounded up (eq. (8) in floating point was an ulp
            # below Delta |w_i| x_i / sigma for about half the individuals)
            self.epsilons = delivered_epsilons(a, x, self.data_range, self.sigma)
        if self.sigma == 0 and bool(np.any(np.isinf(self.epsilons))):
            warnings.warn(f"DCLEF with sigma=0 adds no noise: the individuals with x_i > 0 and w_i != 0 are released "
                          "exactly, with no differential privacy (eps_i = inf)",
                          PrivacyLeakWarning, stacklevel=user_stacklevel())
        self.distortion = biased_laplace_mse(self.delta * self.residual_weight / 2.0, self.sigma)

    def _guarantees(self, a, x):
        """``eps_i = Delta |w_i| x_i / sigma``: ``|w_i| x_i / residual_weight`` for the canonical scale (eq. 8).

        Computed in floating point, and exactly (fractions, correctly rounded) when a step left float64's range:
        the canonical ratio does not depend on the scale of the weights or of ``Delta``, but ``Delta *
        residual_weight`` overflowed for weights of 1e308 (or a data range of width 1e308) and every ``eps_i``
        came out 0; ``Delta |w_i| x_i`` overflowed for a given ``sigma`` of the same size.
        """
        if self.canonical:
            num, den = a * x, self.residual_weight
        else:
            with np.errstate(over="ignore", under="ignore"):
                num, den = self.delta * a * x, self.sigma
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            eps = np.where(num > 0, num / den if den > 0 else np.inf, 0.0)
        suspect = (a > 0) & (x > 0) & (~np.isfinite(num) | (num < _NORMAL) | (eps < _NORMAL) | ~np.isfinite(eps))
        if den > 0 and suspect.any():
            from fractions import Fraction

            if self.canonical:
                den_f = sum((Fraction(float(t)) * (1 - Fraction(float(u))) for t, u in zip(a, x)), Fraction(0))
                scale = Fraction(1)
            else:
                den_f, scale = Fraction(self.sigma), Fraction(self.delta)
            for i in np.flatnonzero(suspect).tolist():
                e = scale * Fraction(float(a[i])) * Fraction(float(x[i])) / den_f
                try:
                    eps[i] = float(e)
                except OverflowError:
                    eps[i] = np.inf
        return eps

    @property
    def discrete(self):
        """True when ``x`` is in ``{0, 1}^n``."""
        return bool(np.all((self.x == 0) | (self.x == 1)))

    def _check_d(self, d):
        # strings ("1" was read as 1.0) and complex numbers (the imaginary part was dropped) are refused
        d = check_real_target(np.asarray(refuse_masked(d, "d")), "d",
                              "the private values as real numbers").astype(np.float64)
        n = self.weights.shape[0]
        if d.ndim not in (1, 2) or d.shape[-1] != n:
            raise ValueError(
                f"d must have shape ({n},) or (n_databases, {n}), got {d.shape}"
            )
        low, high = self.data_range
        bad = ~np.isfinite(d) | (d < low) | (d > high)
        if bad.any():
            raise ValueError(
                f"every d_i must lie in data_range {plain_value(self.data_range)!r} (the privacy guarantee "
                f"relies on it), got {plain_value(d[bad].ravel()[0])!r}"
            )
        return d

    def mean(self, d):
        """The noiseless part ``sum w_i d_i x_i + R_bar sum w_i (1 - x_i)`` of eq. (4).

        Parameters
        ----------
        d : array-like of shape (n,) or (n_databases, n)
            Private data (real numbers).

        Returns
        -------
        float or ndarray of shape (n_databases,)
        """
        d = self._check_d(d)
        return (d * self.x) @ self.weights + self.midpoint * float(self.weights @ (1.0 - self.x))

    def sample(self, d, random_state=None):
        """Draw the estimate ``s_hat(d)`` (eq. 4) with floating-point-safe Laplace noise.

        Parameters
        ----------
        d : array-like of shape (n,) or (n_databases, n)
            Private data, every entry inside ``data_range``.
        random_state : None, int or Generator, default=None
            ``None`` draws the noise from the operating system's entropy; a seed is
            for tests and reproducible experiments only.

        Returns
        -------
        s_hat : float or ndarray of shape (n_databases,)
            For ``n = 0`` (``d = []``, or of shape ``(n_databases, 0)``) the
            estimate of the empty sum: ``0.0`` exactly with the canonical
            ``sigma = 0`` (Laplace noise of a given ``sigma`` around 0 otherwise).
        """
        return self._release(d, random_state)()

    def _release(self, d, random_state=None):
        """Every check of :meth:`sample` (``d``, the noise scale, the overflow of the noisy value), then a function
        that draws the estimate: a caller that records the release in between records only releases that happen."""
        mu = self.mean(d)
        if self.sigma == 0 and not np.any(self.epsilons > 0):
            # every |w_i| x_i is 0: the estimate does not depend on d and is released as it is, with eps_i = 0 for
            # everybody (Laplace noise of scale 0 warned that the value had "no differential privacy": a query whose
            # ridge weights are all 0 drew that warning from DCLEFEstimator.predict while recording eps = 0)
            const = np.asarray(mu, dtype=np.float64)[()]
            return lambda: const
        mech = Laplace(scale=self.sigma, random_state=random_state)
        # the overflow check on the largest |mean| any data inside data_range can give (public), not on this data's
        # mean: refused or not then says nothing about the private values (a check on the mean itself refused some
        # databases and released others, a refusal that depended on d)
        low, high = self.data_range
        with np.errstate(over="ignore"):
            reach = (max(abs(low), abs(high)) * float(np.abs(self.weights) @ self.x)
                     + abs(self.midpoint) * float(np.abs(self.weights) @ (1.0 - self.x))) * (1 + 1e-12)
        _check_reach(self.sigma, _LAPLACE_REACH, reach, what="the estimate plus its noise over data_range")
        mu = mech._check_value(mu)
        return lambda: mech.randomise(mu)

    def privacy_index(self, *, max_exact=40):
        """Privacy index ``beta`` (Definition 3) of this estimator; see :func:`privacy_index`.

        Parameters
        ----------
        max_exact : int, default=40
            As in :func:`privacy_index`: refuse (ValueError) when more individuals
            than this have ``0 < eps_i < 1/2`` (the enumeration would be too large).

        Returns
        -------
        float
        """
        return privacy_index(self.epsilons, self.weights, max_exact=max_exact)

    def __repr__(self):
        return (f"DCLEF(n={self.weights.shape[0]}, bought={int(np.count_nonzero(self.x))}, "
                f"sigma={self.sigma!r}, data_range={self.data_range!r})")

