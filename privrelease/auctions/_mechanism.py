"""Privacy auctions that buy a DCLEF: FairInnerProduct (Alg. 1), the optimum of problem (7).

Notation of Dandekar, Fawaz and Ioannidis (2012): individual ``i`` reports a unit
cost ``v_i`` (her cost for a guarantee ``eps_i`` is ``v_i * eps_i``), the analyst
has a budget ``B`` and a linear predictor with weights ``w``; ``a_i = |w_i|``,
``W = sum_i a_i`` and, for a set ``H``, ``w(H) = sum_{i in H} a_i``. A DCLEF that
buys the set ``O`` (``x_i = 1`` for ``i`` in ``O``) gives
``eps_i = a_i / (W - w(O))`` to ``i`` in ``O`` and 0 to the others (eq. 8).

Conventions used throughout (and reported in :class:`AuctionResult`):

* individuals with ``w_i = 0`` do not contribute to the predictor (Sec. 2): they
  are never bought, never paid and receive ``eps_i = 0``;
* individuals violating Assumption 5, ``a_i v_i > B (W - a_i)`` (or with
  ``W - a_i = 0``, the only individual of nonzero weight), cannot be paid their
  cost within the budget by ANY DCLEF mechanism (Sec. 4.1); they are treated as
  if their unit cost were infinite: never bought, never the ``i*`` of Alg. 1,
  but their weight stays in ``W`` (the predictor still interpolates them to the
  midpoint and the Laplace scale covers them);
* unit costs may be ``+inf`` (the individual refuses to sell) or 0;
* ties in unit costs are broken by input index (a fixed, report-independent order),
  and ``i* = argmax |w_i|`` over the eligible individuals, ties by input index.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ..exceptions import SolverError
from ..utils import check_number
from ..utils._validation import check_same_index
from ._dclef import DCLEF, _check_vector, check_data_range, delivered_epsilons

__all__ = [
    "AuctionResult",
    "FractionalResult",
    "fair_inner_product",
    "ghosh_roth",
    "optimal_dclef",
    "fractional_dclef",
]

_BRANCH_NAMES = {0: "none", 1: "greedy", 2: "max_weight"}


@dataclass(eq=False)
class AuctionResult:
    """Outcome of a DCLEF privacy auction, every array in the INPUT order.

    Attributes
    ----------
    selected : ndarray of bool, shape (n,)
        The set ``O`` of individuals bought (``x_i = 1``).
    x : ndarray of float, shape (n,)
        The interpolation vector of the released DCLEF (``selected`` as 0/1).
    payments : ndarray of shape (n,)
        Payment to each individual (0 outside ``O``).
    epsilons : ndarray of shape (n,)
        Privacy guarantee ``eps_i`` of the released DCLEF (eq. 8).
    weights : ndarray of shape (n,)
        The predictor's weights ``w_i`` the auction was run on (checked, as floats).
    unit_costs : ndarray of shape (n,)
        The reported unit privacy costs ``v_i`` (checked, as floats; ``+inf`` for an
        individual who refuses to sell).
    value : float
        ``S(x; w) = w(O)``, the objective of problem (7).
    total_weight : float
        ``W = sum_i |w_i|``.
    distortion : float
        ``(9/4) Delta^2 (W - w(O))^2`` (eq. 6), with ``Delta`` from ``data_range``.
    data_range : tuple of float
        The public data interval used for ``distortion`` and :meth:`to_dclef`.
    branch : str
        ``"greedy"`` (``O = [k]``), ``"max_weight"`` (``O = {i*}``), ``"none"``
        (nobody eligible) or ``"optimal"`` (from :func:`optimal_dclef`).
    k : int
        The ``k`` of Algorithm 1 (number of cheapest eligible individuals passing
        the test ``B / w([k]) >= v_k / (W - w([k]))``); -1 when not applicable.
    i_star : int
        Input index of ``i*``; -1 when nobody is eligible or not applicable.
    r : int
        Input index of ``r = min S_{-i*}`` (eq. 9); -1 when ``S_{-i*}`` is empty or
        not applicable.
    p_hat : float
        The payment ``p_hat`` of eq. (9) (NaN when not applicable).
    zero_weight : ndarray of bool
        Individuals with ``w_i = 0`` (left out, Sec. 2).
    violates_assumption : ndarray of bool
        Individuals violating Assumption 5 (left out, Sec. 4.1).
    budget : float
        The budget ``B`` the payments must fit in.
    """

    selected: np.ndarray
    payments: np.ndarray
    epsilons: np.ndarray
    weights: np.ndarray
    unit_costs: np.ndarray
    budget: float
    data_range: tuple
    branch: str
    k: int = -1
    i_star: int = -1
    r: int = -1
    p_hat: float = float("nan")
    zero_weight: np.ndarray = field(default=None)
    violates_assumption: np.ndarray = field(default=None)

    @property
    def x(self):
        return self.selected.astype(np.float64)

    @property
    def total_weight(self):
        return float(np.abs(self.weights).sum())

    @property
    def value(self):
        return float(np.abs(self.weights)[self.selected].sum())

    @property
    def residual_weight(self):
        return float(np.abs(self.weights)[~self.selected].sum())

    @property
    def distortion(self):
        """Mean squared error of the released DCLEF, ``2.25 Delta^2 W^2`` (``inf`` beyond float64: Python's float
        power raised OverflowError for a data range of width 1e308); the DCLEF computes it."""
        return self.to_dclef().distortion

    @property
    def total_payment(self):
        return float(self.payments.sum())

    @property
    def costs(self):
        """Each individual's privacy cost ``v_i * eps_i`` (0 when not bought, and 0 for ``v_i = 0`` whatever
        ``eps_i``: a guarantee beyond float64 is ``inf``, and ``0 * inf`` was NaN). Where ``eps_i`` is ``inf``
        only because it is beyond float64, the cost ``v_i a_i / (W - w(O))`` is computed exactly (a unit cost
        of 2.2e-308 times a guarantee near 1e310 is about 2, not ``inf``)."""
        with np.errstate(invalid="ignore", over="ignore"):
            cost = np.where(self.selected & (self.unit_costs != 0), self.unit_costs * self.epsilons, 0.0)
        if not np.all(np.isfinite(cost)):
            cost = np.where(np.isfinite(cost), cost,
                            _at_cost_exact(self.unit_costs, np.abs(self.weights), self.selected)[1])
        return cost

    @property
    def utilities(self):
        """``p_i - v_i eps_i``: non-negative for every individual (individual rationality), to the ulp or two a
        payment is lowered by where the budget binds at an exact tie (``ghosh_roth(np.ones(10), 1.0)`` pays
        five times ``fl(0.2)``, whose exact sum exceeds 1: the payments are then an ulp below their cost, since no
        float payments meet both)."""
        return self.payments - self.costs

    def to_dclef(self, data_range=None):
        """The released estimator as a :class:`DCLEF` (``data_range`` defaults to the auction's).

        Parameters
        ----------
        data_range : tuple (R_min, R_max), default=None
            Public data interval of the estimator; None: the auction's ``data_range``.

        Returns
        -------
        DCLEF
            With this auction's ``weights`` and interpolation vector ``x``.
        """
        return DCLEF(self.weights, self.x, self.data_range if data_range is None else data_range)

    def __repr__(self):
        return (f"AuctionResult(branch={self.branch!r}, bought={int(self.selected.sum())}/"
                f"{self.selected.size}, value={self.value:.6g}, total_payment="
                f"{self.total_payment:.6g}, budget={self.budget:.6g})")


def _check_auction_input(unit_costs, weights, budget):
    v = _check_vector(unit_costs, "unit_costs", allow_inf=True, nonnegative=True)
    w = _check_vector(weights, "weights")
    if v.shape != w.shape:
        raise ValueError(
            f"unit_costs has {v.shape[0]} entries but weights has {w.shape[0]}: one of each "
            "per individual"
        )
    if v.shape[0] == 0:
        raise ValueError("an auction needs at least one individual, got n = 0")
    check_same_index(unit_costs, weights, "weights", x_name="unit_costs",
                     consequence="individuals would get other individuals' weights")
    budget = check_number(budget, "budget", low=0)
    return v, w, budget


def _eligible(v, a, budget, rtol=0.0):
    """Nonzero weight and Assumption 5: ``a_i v_i <= B (1 + rtol) (W - a_i)`` with ``W - a_i > 0``, exactly.

    For one instance (1-D ``v``, ``a``): the test is the budget constraint of the set ``{i}``, decided in
    floating point where clear and on exact integers otherwise (:func:`_budget_ints`), as :func:`_fip_core`
    decides it for FairInnerProduct.
    """
    n = a.size
    g = 2.0 * _gamma(n + 4)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        W = a.sum()
        rest = W - a
        lhs = np.where(np.isinf(v), np.inf, a * v)
        rhs = budget * rest * (1 + rtol)
        ok = (a > 0) & (rest > 0) & (lhs <= rhs) & np.isfinite(v)
        unsure = ((a > 0) & np.isfinite(v) & (rest > 0 if np.isfinite(W) else True)
                  & ~(np.abs(lhs - rhs) > g * (lhs + rhs) + _ETA))
        unsure |= (a > 0) & np.isfinite(v) & ((lhs < _TINY) & (v > 0) | ~np.isfinite(rhs) | (rhs < _TINY)
                                              | ~np.isfinite(lhs))
    if unsure.any():
        A, C, cap, Wi = _budget_ints(v, a, budget, rtol)
        for i in np.flatnonzero(unsure).tolist():
            ok[i] = Wi - A[i] > 0 and C[i] <= cap
    return ok


def _budget_ints(v, a, budget, rtol):
    """Exact integers for the budget constraint ``sum_H v_i a_i <= B (1 + rtol) (W - w(H))`` of problem (7).

    With ``a_i = A_i 2**-sa``, ``v_i = V_i 2**-sv``, ``B = B' 2**-sv`` and ``rtol = p / q``, the constraint reads
    ``sum_H C_i <= cap`` with ``C_i = q V_i A_i + (q + p) B' A_i`` and ``cap = (q + p) B' sum_i A_i``; ``W - w(H)
    > 0`` reads ``sum_i A_i - sum_H A_i > 0``. Returns ``A, C, cap, sum_i A_i`` (Python ints; ``C_i = 0`` for an
    infinite ``v_i``, never affordable).
    """
    A, _ = _scaled_ints(a.tolist())
    fin = np.flatnonzero(np.isfinite(v)).tolist()
    VB, _ = _scaled_ints([float(v[i]) for i in fin] + [float(budget)])
    V = dict(zip(fin, VB))
    Bi = VB[-1]
    p, q = float(rtol).as_integer_ratio()
    C = [q * V[i] * A[i] + (q + p) * Bi * A[i] if i in V else 0 for i in range(len(A))]
    Wi = sum(A)
    return A, C, (q + p) * Bi * Wi, Wi


# ------------------------------------------------------------------ exact comparisons
#
# Every decision of Algorithm 1 is a comparison between sums and products of the
# given floats: ``B (W - w(P)) >= v_t w(P)`` (the test defining k, S_1 and
# Assumption 5), ``|w_{i*}| > w([k] \ {i*})`` and ``w(P) >= |w_{i*}|`` (S_2).
# They are first evaluated in floating point together with a rigorous bound on
# the rounding error (all summands are >= 0, so a sequential or pairwise sum of
# n terms has relative error <= gamma_n = n u / (1 - n u), u = 2**-53, and each
# product adds u; Higham, "Accuracy and Stability of Numerical Algorithms",
# Sec. 3.1 and 4.2). A comparison whose two sides differ by more than the bound
# is decided in floating point, and that decision is the exact one. When every
# weight sum of a row is exact (a common "grain", e.g. integer weights) and both
# products are exact too, a close call -- a tie included -- is certified in floating
# point as well. The other close calls (a tie on a threshold, or a near-tie) are
# decided on exact integers: one at a time by :func:`_fip_row_precise` (long rows:
# vectorized exact sums, linear time), or by recomputing the row with
# :func:`_fip_exact_row` (short rows, or too many close calls). The outcome is
# therefore always the exact mechanism's on the given floats.

_U = 2.0**-53
_TINY = 2.0**-900     # below this a product may be subnormal: no relative error bound
_ETA = 2.0**-1068     # bounds the absolute error of the few products that may underflow
_NORMAL = 2.0**-1022  # smallest normal float64: a product or quotient at least this large has relative error <= u


def _subnormal(x):
    """``0 < |x| < 2**-1022``: a result that underflowed into the subnormals and lost relative precision."""
    with np.errstate(invalid="ignore"):
        return (x != 0) & (np.abs(x) < _NORMAL)


def _gamma(k):
    return k * _U / (1.0 - k * _U)


def _odd_significand(x):
    """Odd part of the integer significand of each finite ``x >= 0`` (0 for 0), and the
    value of its lowest set bit: ``x = odd * low``."""
    mant, expo = np.frexp(np.where(np.isfinite(x), x, 0.0))   # inf: callers check isfinite
    M = (mant * 2.0**53).astype(np.int64)          # exact: 53-bit integer significand
    lowbit = M & -M
    odd = M // np.where(lowbit == 0, 1, lowbit)
    return odd, np.ldexp(lowbit.astype(np.float64), expo - 53)


def _sums_exact(a, W, g):
    """Rows whose every partial sum of ``a`` (any order, any subset) is exact in floating point.

    True when every weight is a multiple of the smallest "grain" ``2**e`` (lowest set
    bit) among the nonzero weights and ``W <= 2**53 grain``: every partial sum is then
    an integer multiple of the grain below ``2**53`` grains, hence a float.
    """
    _, low = _odd_significand(a)
    grain = np.where(a > 0, low, np.inf).min(axis=1)
    with np.errstate(over="ignore"):  # W beyond float64: not exact (inf <= ... is False)
        return W[:, 0] * (1 + g) <= 2.0**53 * grain


def _product_exact(x, y):
    """``x * y`` is exact in floating point (odd significands multiply below 2**53)."""
    ox, _ = _odd_significand(x)
    oy, _ = _odd_significand(y)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        p = x * y
    # p == 0 is exact only for a zero factor: 1e-310 * 5e-324 underflows to 0 (and then a_i v_i <= B (W - a_i)
    # held at B = 0 for an individual whose cost is positive: bought, paid 0, below her cost)
    return (ox.astype(np.float64) * oy < 2.0**53) & np.isfinite(p) & (((p == 0) & ((x == 0) | (y == 0)))
                                                                     | (p >= _TINY))


def _ge(x1, y1, x2, y2, rel, live, exact_rows=None):
    """Decide ``x1 y1 >= x2 y2`` for non-negative factors; return (decision, uncertain).

    ``rel`` bounds the relative error of each computed product against the exact
    product of the exact quantities; only entries where ``live`` holds count;
    ``_ETA`` covers the absolute error of a product that underflows; overflow (NaN)
    is reported as uncertain. ``exact_rows`` (a callable returning a bool per row,
    for rows whose sums are exact) lets close calls be certified when both
    products are exact too: the floating-point comparison is then the exact one,
    ties included.
    """
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        left = x1 * y1
        right = np.multiply(x2, y2)
        dec = left >= right
        diff = np.subtract(left, right)
        np.abs(diff, out=diff)
        left += right
        left *= rel
        left += _ETA
        # NaN (overflow) compares False, hence counts as too close to call
        unc = diff > left
        np.logical_not(unc, out=unc)
        unc &= live
    if exact_rows is not None and unc.any():
        shape = unc.shape
        ii = np.nonzero(unc)
        X1, Y1, X2, Y2 = (np.broadcast_to(t, shape)[ii] for t in (x1, y1, x2, y2))
        ok = exact_rows()[ii[0]] & _product_exact(X1, Y1) & _product_exact(X2, Y2)
        unc[ii] = ~ok
    return dec, unc


def _scaled_ints(values):
    """Exact integers ``X_i`` and a shift ``s`` with ``values_i = X_i 2**-s`` (finite, >= 0)."""
    ratios = [t.as_integer_ratio() for t in values]
    s = max((q.bit_length() - 1 for _, q in ratios), default=0)
    return [p << (s - (q.bit_length() - 1)) for p, q in ratios], s


def _int_ratio(p, q):
    """``p / q`` for integers ``p >= 0``, ``q > 0``, correctly rounded; ``inf`` beyond float64 (Python's
    int division raised OverflowError there)."""
    try:
        return p / q
    except OverflowError:
        return float("inf")


def _fip_exact_row(v, a, budget):
    """One instance of Algorithm 1 in exact integer arithmetic on the given floats, O(n log n).

    Weights are written ``a_i = A_i 2**-sa`` and costs and budget
    ``v_i = V_i 2**-sv``, ``B = B' 2**-sv`` with integers ``A_i, V_i, B'``; every
    comparison of the mechanism is homogeneous in each scale, so it is decided
    on the integers. Payments and guarantees are rounded to floats at the end.
    Plain Python (it runs on the rare rows with a close call); same conventions
    and output as one row of :func:`_fip_core`, as a dict of Python scalars and
    lists (``sel``: the bought input indices, ``pay``/``eps`` their payments and
    guarantees; ``elig``: the eligible input indices).
    """
    n = len(a)
    af = a.tolist()
    vf = v.tolist()
    A, sa = _scaled_ints(af)
    fin = [i for i in range(n) if vf[i] != float("inf")]
    VB, sv = _scaled_ints([vf[i] for i in fin] + [float(budget)])
    Bi = VB[-1]
    V = dict(zip(fin, VB))
    W = sum(A)
    elig = [i for i in fin if A[i] > 0 and W - A[i] > 0 and A[i] * V[i] <= Bi * (W - A[i])]
    out = dict(branch=0, k=0, i_star=-1, r=-1, p_hat=float("nan"), elig=elig, sel=[],
               pay=[], eps=[])
    if not elig:
        return out
    order = sorted(elig, key=lambda i: (vf[i], i))
    k, pref = 0, 0
    for t, i in enumerate(order, start=1):
        pref += A[i]
        rest = W - pref
        if rest > 0 and Bi * rest >= V[i] * pref:
            k = t
    i_star = max(elig, key=lambda i: (af[i], -i))
    a_star = A[i_star]
    wk_minus = sum(A[i] for i in order[:k] if i != i_star)
    out["k"], out["i_star"] = k, i_star
    if a_star > wk_minus:
        out["branch"] = 2
        c, r = 0, -1
        for i in order:
            if i == i_star:
                continue
            c += A[i]
            if c >= a_star and W - c > 0 and Bi * (W - c) >= V[i] * c:
                r = i
                break
        if r >= 0:
            # a_star v_r / (W - a_star): the weight scale cancels (int / int rounds correctly)
            p_hat = a_star * V[r] / ((W - a_star) << sv)
        else:
            p_hat = float(budget)
        out["r"], out["p_hat"] = r, p_hat
        out["sel"], out["pay"] = [i_star], [p_hat]
        out["eps"] = [_int_ratio(a_star, W - a_star)]
    else:
        out["branch"] = 1
        wk = sum(A[i] for i in order[:k])
        rk = W - wk
        # min{B / w([k]), v_{k+1} / (W - w([k]))}, in units of 2**(sa - sv)
        num, den = Bi, wk
        if k < len(order) and V[order[k]] * wk < Bi * rk:
            num, den = V[order[k]], rk
        # |w_i| times that price is A_i num / (den 2**sv) (at most B), and eps_i = A_i / rk: one exact,
        # correctly rounded division each (a float price B / w([k]) overflowed for tiny weights, and
        # the payment with it, though the payment itself is at most B)
        den_pay = den << sv
        out["sel"] = order[:k]
        out["pay"] = [_int_ratio(A[i] * num, den_pay) for i in order[:k]]
        out["eps"] = [_int_ratio(A[i], rk) for i in order[:k]]
    return out


_UNITS = 1074         # every finite double is an integer multiple of 2**-1074
_PRECISE_MIN_N = 64   # flagged rows at least this long try _fip_row_precise first
_PRECISE_MAX_CALLS = 256


def _units(x):
    """``x * 2**1074`` as an exact integer (finite ``x >= 0``)."""
    p, q = float(x).as_integer_ratio()
    return p << (_UNITS - (q.bit_length() - 1))


def _exact_sum_units(x):
    """Exact sum of finite floats ``>= 0``, as an integer in units of ``2**-1074``.

    Vectorized: each float is ``M 2**E`` with a 53-bit integer ``M``; ``M`` is split
    into 27 + 26 bits and the halves are summed per exponent with ``bincount``,
    whose float accumulators stay exact (below ``2**53``) for up to ``2**26``
    terms per call; the at most 2100 per-exponent sums are combined as integers.
    """
    x = np.asarray(x, dtype=np.float64)
    total = 0
    for start in range(0, x.size, 2**25):
        chunk = x[start:start + 2**25]
        mant, expo = np.frexp(chunk)
        M = (mant * 2.0**53).astype(np.int64)
        E = expo.astype(np.int64) - 53 + _UNITS
        low = E < 0                      # subnormals: M carries trailing zeros
        if low.any():
            M[low] >>= -E[low]
            E[low] = 0
        hi = np.bincount(E, weights=(M >> 26).astype(np.float64))
        lo = np.bincount(E, weights=(M & (2**26 - 1)).astype(np.float64))
        for e in np.flatnonzero((hi != 0) | (lo != 0)).tolist():
            total += ((int(hi[e]) << 26) + int(lo[e])) << e
    return total


class _ExactPrefix:
    """Exact prefix sums ``w([t])`` of a sorted weight vector, on demand, in units of 2**-1074."""

    def __init__(self, as_):
        self._as = as_
        self._known = {0: 0}

    def __call__(self, t):
        """``sum(as_[:t])`` exactly (computed from the nearest known prefix below ``t``)."""
        if t not in self._known:
            base = max(k for k in self._known if k < t)
            self._known[t] = self._known[base] + _exact_sum_units(self._as[base:t])
        return self._known[t]


def _fip_row_precise(v, a, budget):
    """One instance of Algorithm 1: float decisions, exact resolution of each close call.

    The floating-point pass of :func:`_fip_core` restricted to one row, where every
    comparison too close to call is decided on exact integers (sums by
    :func:`_exact_sum_units`), one comparison at a time: this is the fallback for a
    long row on a threshold (a budget placed exactly on the test defining ``k``, for
    example), linear time plus one sort. Returns ``None`` when more than
    ``_PRECISE_MAX_CALLS`` comparisons are close (then :func:`_fip_exact_row` runs).
    Same output as :func:`_fip_exact_row`, with arrays in place of lists
    (``elig`` a boolean mask).
    """
    n = a.size
    B = float(budget)
    g = 2.0 * _gamma(n + 4)
    calls = [0]
    cache = {}

    def W_units():
        if "W" not in cache:
            cache["W"] = _exact_sum_units(a)
        return cache["W"]

    def B_units():
        if "B" not in cache:
            cache["B"] = _units(B)
        return cache["B"]

    def budget_call():
        calls[0] += 1
        if calls[0] > _PRECISE_MAX_CALLS:
            raise OverflowError

    try:
        # Assumption 5
        fin = np.isfinite(v)
        W = float(a.sum())
        cand = (a > 0) & fin & (np.count_nonzero(a) >= 2)
        with np.errstate(invalid="ignore", over="ignore"):
            lhs = a * v
            rest = W - a
            elig = cand & (lhs <= B * rest)
            unc = cand & ~(np.abs(lhs - B * rest) > g * (lhs + 2.0 * B * W) + _ETA)
        for i in np.flatnonzero(unc).tolist():
            budget_call()
            Wu, au = W_units(), _units(a[i])
            elig[i] = au * _units(v[i]) <= B_units() * (Wu - au)
        out = dict(branch=0, k=0, i_star=-1, r=-1, p_hat=float("nan"), elig=elig, sel=[],
                   pay=[], eps=[])
        idx = np.flatnonzero(elig)
        if idx.size == 0:
            return out
        order = idx[np.argsort(v[idx], kind="stable")]          # ties by input index
        vs, as_ = v[order], a[order]
        mm = order.size
        w_out = float(a[~elig].sum())                            # weight never sorted in
        pref = np.cumsum(as_)
        resid = np.zeros(mm)
        if mm > 1:
            np.cumsum(as_[:0:-1], out=resid[-2::-1])
        resid += w_out                                           # W - w([t]), t = 1..mm
        P = _ExactPrefix(as_)

        def exact_ge_B(t, minus_star=0):
            """B (W - c) >= v_t c with c = w([t+1]) - minus_star, exactly."""
            budget_call()
            c = P(t + 1) - minus_star
            return B_units() * (W_units() - c) >= _units(vs[t]) * c, c

        # k: the largest t with B (W - w([t])) >= v_t w([t]), W - w([t]) > 0
        live = resid > 0
        with np.errstate(over="ignore", invalid="ignore"):
            left, right = B * resid, vs * pref
            dec = left >= right
            unc = live & ~(np.abs(left - right) > g * (left + right) + _ETA)
        sure = np.flatnonzero(live & dec & ~unc)
        k = int(sure[-1]) + 1 if sure.size else 0
        for t in np.flatnonzero(unc)[::-1].tolist():
            if t < k:
                break
            if exact_ge_B(t)[0]:
                k = t + 1
                break
        i_star = int(np.argmax(np.where(elig, a, -1.0)))
        a_star = float(a[i_star])
        ps = int(np.flatnonzero(order == i_star)[0])
        wk_minus = float(as_[:min(ps, k)].sum() + as_[ps + 1:k].sum())
        if wk_minus > 0 and not abs(a_star - wk_minus) > g * wk_minus:
            budget_call()
            star = _units(a_star) > P(k) - (_units(a_star) if ps < k else 0)
        else:
            star = a_star > wk_minus
        out["k"], out["i_star"] = k, i_star
        if star:
            out["branch"] = 2
            is_star = np.arange(mm) == ps
            pm = np.cumsum(np.where(is_star, 0.0, as_))             # w([t] \ {i*})
            resid_m = resid + np.where(np.arange(mm) >= ps, a_star, 0.0)
            with np.errstate(over="ignore", invalid="ignore"):
                l1, r1 = B * resid_m, vs * pm
                u1 = ~(np.abs(l1 - r1) > g * (l1 + r1) + _ETA)
                u2 = ~(np.abs(pm - a_star) > g * (pm + a_star) + _ETA)
                ok = ~is_star & (resid_m > 0)
                d1, d2 = l1 >= r1, pm >= a_star
            surely = ok & d1 & ~u1 & d2 & ~u2
            maybe = ok & (u1 | u2) & (d1 | u1) & (d2 | u2)
            first = int(np.argmax(surely)) if surely.any() else mm
            r_pos = first
            a_u = _units(a_star)
            for t in np.flatnonzero(maybe[:first]).tolist():
                budget_call()
                c = P(t + 1) - (a_u if t >= ps else 0)
                if c >= a_u and B_units() * (W_units() - c) >= _units(vs[t]) * c:
                    r_pos = t
                    break
            W_minus_star = (float(pref[ps - 1]) if ps > 0 else 0.0) + float(resid[ps])
            if r_pos < mm:
                out["r"] = int(order[r_pos])
                if _subnormal(a_star * float(vs[r_pos])):
                    raise OverflowError          # underflowed on the way: the exact row
                p_hat = a_star * float(vs[r_pos]) / W_minus_star
            else:
                p_hat = B
            out["p_hat"] = p_hat
            out["sel"], out["pay"], out["eps"] = [i_star], [p_hat], [a_star / W_minus_star]
        else:
            out["branch"] = 1
            wk, rk = float(pref[k - 1]), float(resid[k - 1])
            v_next = float(vs[k]) if k < mm else np.inf
            with np.errstate(over="ignore", divide="ignore"):
                price = min(B / wk, v_next / rk)
            if _subnormal(price) or _subnormal(1.0 / rk):
                raise OverflowError              # underflowed on the way: the exact row
            sel = order[:k]
            out["sel"] = sel
            out["pay"] = a[sel] * price
            out["eps"] = a[sel] / rk
        return out
    except OverflowError:
        return None


def _out_of_range(payments, epsilons, selected, paid, W, steps=None):
    """Rows whose floating-point payments or guarantees may have overflowed or underflowed.

    A weight sum beyond float64 (``W = inf``), a selected payment or guarantee that is infinite, NaN or
    subnormal, an intermediate result that is subnormal (``steps``, per row: the price, ``1 / (W - w([k]))``
    or ``a_star v_r``; a normal payment computed from a subnormal price has lost its relative precision),
    or a payment of 0 in a row whose true payments are positive (``paid``, per row: the product
    ``|w_i| price`` or ``a_star v_r`` underflowed): the true payment is at most the budget and the true ``eps_i`` may be finite, but the
    float pass (``B / w([k])``, ``1 / (W - w([k]))``, ``a_star v_r``) can leave the range of float64
    on the way. These rows are recomputed in exact arithmetic, where only a true ``eps_i`` beyond float64
    is ``inf``.
    """
    bad = ~np.isfinite(W)
    with np.errstate(invalid="ignore"):
        # a normal result has relative error <= u whatever its magnitude: the threshold was 2**-900 (about
        # 1e-271), and every row paying less went through the exact integer path (30 to 50 times slower)
        for x in (payments, epsilons):
            bad |= (selected & ~((x == 0) | ((x >= _NORMAL) & (x < np.inf)))).any(axis=1)
        bad |= (selected & (payments == 0) & np.asarray(paid)[:, None]).any(axis=1)
    for x in steps or ():
        bad |= _subnormal(np.asarray(x))
    return bad


def _precise_out_of_range(ex, v, a, budget):
    """:func:`_out_of_range` for the output of :func:`_fip_row_precise` (one row)."""
    n = a.size
    sel = np.zeros((1, n), dtype=bool)
    pay, eps = np.zeros((1, n)), np.zeros((1, n))
    sel[0, ex["sel"]] = True
    pay[0, ex["sel"]] = ex["pay"]
    eps[0, ex["sel"]] = ex["eps"]
    if ex["branch"] == 2:
        paid = v[ex["r"]] > 0 if ex["r"] >= 0 else budget > 0
    else:
        elig = np.zeros(n, dtype=bool)
        elig[ex["elig"]] = True
        costs = np.sort(v[elig])
        paid = budget > 0 and (ex["k"] >= costs.size or costs[ex["k"]] > 0)
    with np.errstate(over="ignore"):
        W = np.array([a.sum()])
    return bool(_out_of_range(pay, eps, sel, np.array([paid]), W)[0])


def _gather(x, order):
    """``take_along_axis(x, order, axis=1)``; a plain ``take`` for one row (faster)."""
    if x.shape[0] == 1:
        return x[0].take(order[0])[None, :]
    return np.take_along_axis(x, order, axis=1)


def _within_budget(payments, budget):
    """Lower, in place, the rows of ``payments`` whose exact sum exceeds ``budget`` until it does not.

    The mechanism's exact payments sum to at most ``B`` (the greedy branch pays ``|w_i| B / w([k])`` at most,
    eq. (9) at most ``B``), but each float payment is rounded (and the greedy price divides by a rounded
    ``w([k])``): their exact sum was above ``B`` by a few ulps on about 2 % of random instances. A row whose
    float sum, with its rounding-error bound, may exceed ``B`` is tested exactly (``math.fsum`` is the correctly
    rounded exact sum, so its sign is exact) and, if over, scaled by ``B / sum`` and stepped one ulp towards 0,
    the step doubled until the exact sum is at most ``B``. Each payment moves by a few ulps; the exact mechanism's
    individual rationality then holds to those ulps (a payment that equals its cost exactly can be an ulp below
    the rounded cost).
    """
    m, n = payments.shape
    B = np.broadcast_to(np.asarray(budget, dtype=np.float64), (m,))
    with np.errstate(over="ignore", invalid="ignore"):
        total = payments.sum(axis=1)
        maybe = ~(total * (1.0 + 2.0 * _gamma(n + 1)) <= B)   # NaN / inf rows included
    for row in np.flatnonzero(maybe & np.isfinite(B)).tolist():
        p = payments[row]
        if not np.all(np.isfinite(p)):
            continue
        b = float(B[row])
        over = _excess(p, b)
        if not over > 0:
            continue
        share = 1.0 / (1.0 + over / b)   # B / (exact sum), rounded (no overflow near float64's largest)
        step = 0.0
        while over > 0:   # the least lowering first (an ulp or two): ties at the budget keep what they can
            p = np.nextafter(payments[row] * (share * (1.0 - step * _U)), 0.0)
            over = _excess(p, b)
            step = max(1.0, 2.0 * step)
        payments[row] = p


def _excess(p, b):
    """``sum(p) - b`` with its sign exact: ``math.fsum`` (the correctly rounded exact sum), or fractions where a
    partial sum overflows (payments near float64's largest, whose exact sum is a few ulps over the budget)."""
    try:
        return math.fsum(p.tolist() + [-b])
    except OverflowError:
        from fractions import Fraction

        d = sum(map(Fraction, p.tolist())) - Fraction(b)
        return float(d) if abs(d) <= Fraction(np.finfo(np.float64).max) else math.copysign(math.inf, d)


@np.errstate(over="ignore", invalid="ignore")  # rows that leave float64's range are recomputed exactly
def _fip_core(v, a, budget):
    """FairInnerProduct on a batch of instances (rows), vectorized, O(n log n) per row.

    One unstable ``argsort`` per row (ties among equal costs are then put in input
    order by sorting an integer key, only when ties exist), two cumulative sums
    and O(n) vectorized passes. Every comparison is exact (see the notes above):
    rows with a comparison too close to call are recomputed by :func:`_fip_exact_row`.

    Parameters
    ----------
    v, a : ndarray of shape (m, n)
        Unit costs (>= 0, inf allowed) and absolute weights ``|w_i|``.
    budget : float or ndarray of shape (m,)

    Returns
    -------
    dict of arrays: selected, payments, epsilons, eligible (m, n); branch, k,
    i_star, r, p_hat, exact (m,) (``exact``: the row was decided in exact arithmetic).
    """
    v = np.atleast_2d(np.asarray(v, dtype=np.float64))
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    m, n = a.shape
    B1 = np.array(np.broadcast_to(np.asarray(budget, dtype=np.float64), (m,)))
    B = B1[:, None]
    ar = np.arange(m)
    pos = np.arange(n)[None, :]
    g = 2.0 * _gamma(n + 4)              # bound on every relative error below, doubled
    flag = np.zeros(m, dtype=bool)        # rows to recompute exactly

    # Assumption 5: a_i v_i <= B (W - a_i), W - a_i > 0 (decided by counting nonzeros)
    fin = np.isfinite(v)
    with np.errstate(over="ignore"):
        W = a.sum(axis=1, keepdims=True)     # inf beyond float64: the row is recomputed exactly
    nnz = np.count_nonzero(a, axis=1)[:, None]
    cand = (a > 0) & fin & (nnz >= 2)
    with np.errstate(invalid="ignore", over="ignore"):
        lhs = a * v
        rhs = np.subtract(W, a)
        rhs *= B                                        # B (W - a_i)
        elig = lhs <= rhs
        elig &= cand
        # |fl(W) - W| <= gamma_n W, one more rounding in the subtraction and each product
        # (W + rest <= 2 W); _ETA: underflow. In place: few temporaries.
        rhs -= lhs
        np.abs(rhs, out=rhs)
        lhs *= g
        lhs += g * 2.0 * B * W + _ETA
        unc = rhs > lhs
        np.logical_not(unc, out=unc)
        unc &= cand
    del lhs, rhs
    cache = {}

    def exact_rows():
        if "rows" not in cache:
            cache["rows"] = _sums_exact(a, W, g)
        return cache["rows"]

    if unc.any():
        ii = np.nonzero(unc)
        Bb = np.broadcast_to(B, unc.shape)[ii]
        rest = np.broadcast_to(W, unc.shape)[ii] - a[ii]
        ok = (exact_rows()[ii[0]] & _product_exact(a[ii], v[ii])
              & _product_exact(Bb, rest))
        unc[ii] = ~ok
    flag |= unc.any(axis=1)
    has = elig.any(axis=1)

    # sort eligible individuals by cost, ties by input index; the others go last
    key = np.where(elig, v, np.inf)
    order = np.argsort(key, axis=1)
    vs = _gather(key, order)
    ties = (vs[:, 1:] == vs[:, :-1]) & np.isfinite(vs[:, 1:])
    if ties.any():
        run = np.concatenate([np.zeros((m, 1), np.int64), np.cumsum(~ties, axis=1)], axis=1)
        comp = run * n + order
        comp.sort(axis=1)
        order = comp % n
        vs = _gather(key, order)
    as_ = _gather(a, order)
    fin_s = np.isfinite(vs)
    pref = np.cumsum(as_, axis=1)                                    # w([t]), t = 1..n
    resid = np.zeros((m, n))                                          # W - w([t]) >= 0
    if n > 1:
        np.cumsum(as_[:, :0:-1], axis=1, out=resid[:, -2::-1])

    # k: the largest t with B (W - w([t])) >= v_t w([t]), W - w([t]) > 0
    live = fin_s & (resid > 0)
    dec, unc = _ge(B, resid, vs, pref, g, live, exact_rows)
    cond = live & dec & ~unc
    any_k = cond.any(axis=1)
    k = np.where(any_k, n - np.argmax(cond[:, ::-1], axis=1), 0)
    flag |= (unc & (pos >= k[:, None])).any(axis=1)

    # i*: largest |w_i| among the eligible, ties by input index
    i_star = np.argmax(np.where(elig, a, -1.0), axis=1)
    a_star = a[ar, i_star]
    pos_star = np.argmax(order == i_star[:, None], axis=1)
    is_star = pos == pos_star[:, None]
    kk = np.maximum(k, 1) - 1
    if m == 1:      # w([k] \ {i*}) by two (pairwise) sums
        ps, k0 = int(pos_star[0]), int(k[0])
        wk_minus = np.array([as_[0, :min(ps, k0)].sum() + as_[0, ps + 1:k0].sum()])
        pref_m = None
    else:
        pref_m = np.cumsum(np.where(is_star, 0.0, as_), axis=1)     # w([t] \ {i*})
        wk_minus = np.where(k > 0, pref_m[ar, kk], 0.0)
    star_branch = has & (a_star > wk_minus)
    close = has & (wk_minus > 0) & ~(np.abs(a_star - wk_minus) > g * wk_minus)
    if close.any():
        close &= ~exact_rows()
    flag |= close
    greedy = has & ~star_branch

    # eq. (9) on the i* rows: S_{-i*} = S_1 & S_2, r = min S_{-i*}
    r_idx = np.full(m, -1)
    p_hat = np.full(m, np.nan)
    W_minus_star = (np.where(pos_star > 0, pref[ar, np.maximum(pos_star, 1) - 1], 0.0)
                    + resid[ar, pos_star])
    sr = np.flatnonzero(star_branch)
    if sr.size:
        after = pos >= pos_star[sr, None]
        resid_m = resid[sr] + np.where(after, a_star[sr, None], 0.0)     # W - w([t] \ {i*})
        pm = (np.cumsum(np.where(is_star[sr], 0.0, as_[sr]), axis=1) if pref_m is None
              else pref_m[sr])
        live = fin_s[sr] & (resid_m > 0) & ~is_star[sr]
        sub_rows = lambda: exact_rows()[sr]  # noqa: E731
        d1, u1 = _ge(B[sr], resid_m, vs[sr], pm, g, live, sub_rows)
        d2, u2 = _ge(pm, 1.0, a_star[sr, None], 1.0, g, live, sub_rows)
        sure = live & d1 & ~u1 & d2 & ~u2
        maybe = live & (u1 | u2) & (d1 | u1) & (d2 | u2)
        has_r = sure.any(axis=1)
        r_pos = np.where(has_r, np.argmax(sure, axis=1), n)
        flag[sr] |= (maybe & (pos < r_pos[:, None])).any(axis=1)
        rp = np.minimum(r_pos, n - 1)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            p_hat[sr] = np.where(has_r, a_star[sr] * vs[sr, rp] / W_minus_star[sr], B1[sr])
        r_idx[sr] = np.where(has_r, order[sr, rp], -1)

    # greedy payments: p_i = |w_i| min{B / w([k]), v_{k+1} / (W - w([k]))}, in input order
    wk = pref[ar, kk]
    rk = resid[ar, kk]
    v_next = np.where(k < n, vs[ar, np.minimum(k, n - 1)], np.inf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        price = np.minimum(B1 / wk, v_next / rk)
        eps_scale = 1.0 / rk
    v_k = vs[ar, kk]
    last = order[ar, kk]
    in_k = elig & ((v < v_k[:, None]) | ((v == v_k[:, None]) & (pos <= last[:, None])))
    sel_g = greedy[:, None] & in_k
    sel_s = star_branch[:, None] & (pos == i_star[:, None])
    selected = sel_g | sel_s
    payments = np.zeros((m, n))
    epsilons = np.zeros((m, n))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        np.multiply(a, price[:, None], out=payments, where=sel_g)
        np.multiply(a, eps_scale[:, None], out=epsilons, where=sel_g)
        rs = np.flatnonzero(star_branch)
        payments[rs, i_star[rs]] = p_hat[rs]
        epsilons[rs, i_star[rs]] = a_star[rs] / W_minus_star[rs]
    # the true payment is positive: greedy, min{B / w([k]), v_{k+1} / (W - w([k]))} > 0 (the float price
    # underflows to 0 for v_{k+1} = 1e-300 and W - w([k]) = 1e150); i*, eq. (9)'s a_star v_r / (W - a_star)
    # with v_r > 0 (the budget B when S_{-i*} is empty)
    v_r = np.where(r_idx >= 0, v[ar, np.maximum(r_idx, 0)], B1)
    with np.errstate(under="ignore", over="ignore"):
        steps = (np.where(greedy, price, 0.0), np.where(greedy, eps_scale, 0.0),
                 np.where(star_branch & (r_idx >= 0), a_star * v_r, 0.0))
    ranged = _out_of_range(payments, epsilons, selected, np.where(star_branch, v_r > 0, (B1 > 0) & (v_next > 0)),
                            W[:, 0], steps)
    flag |= ranged
    out = dict(selected=selected, payments=payments, epsilons=epsilons,
               branch=np.where(~has, 0, np.where(greedy, 1, 2)), k=np.where(has, k, 0),
               i_star=np.where(has, i_star, -1), r=r_idx, p_hat=p_hat, eligible=elig,
               exact=flag)
    rows = np.flatnonzero(flag)
    if rows.size == 0:
        _within_budget(out["payments"], B1)
        return out
    exs = []
    for row in rows.tolist():
        # the long-row fallback computes payments in floating point as the pass above did
        ex = _fip_row_precise(v[row], a[row], B1[row]) if n >= _PRECISE_MIN_N and not ranged[row] else None
        if ex is not None and _precise_out_of_range(ex, v[row], a[row], B1[row]):
            ex = None
        if ex is None:
            ex = _fip_exact_row(v[row], a[row], float(B1[row]))
        exs.append(ex)
    # written back all at once (a loop of a dozen numpy writes per row cost more than the exact rows
    # themselves when a batch holds thousands of close calls)
    for name in ("selected", "payments", "epsilons", "eligible"):
        out[name][rows] = 0
    elig = [np.flatnonzero(e["elig"]) if np.asarray(e["elig"]).dtype == bool else np.asarray(e["elig"], np.int64)
            for e in exs]
    out["eligible"][np.repeat(rows, [e.size for e in elig]),
                    np.concatenate(elig).astype(np.int64)] = True
    sel = [np.asarray(e["sel"], dtype=np.int64) for e in exs]
    r_sel = np.repeat(rows, [t.size for t in sel])
    c_sel = np.concatenate(sel)
    out["selected"][r_sel, c_sel] = True
    out["payments"][r_sel, c_sel] = np.concatenate([np.asarray(e["pay"], dtype=np.float64) for e in exs])
    out["epsilons"][r_sel, c_sel] = np.concatenate([np.asarray(e["eps"], dtype=np.float64) for e in exs])
    for name in ("branch", "k", "i_star", "r", "p_hat"):
        out[name][rows] = [e[name] for e in exs]
    _within_budget(out["payments"], B1)
    return out


def fair_inner_product(unit_costs, weights, budget, *, data_range=(0.0, 1.0)):
    """FairInnerProduct (Algorithm 1 with eq. 9): a truthful auction that buys a DCLEF.

    Individuals are sorted by reported unit cost; ``k`` is the largest integer with
    ``B / w([k]) >= v_k / (W - w([k]))`` and ``i* = argmax |w_i|``. If
    ``|w_{i*}| > w([k] \\ {i*})`` only ``i*`` is bought, at the price ``p_hat`` of
    eq. (9); otherwise the ``k`` cheapest are bought, each paid
    ``|w_i| min{B / w([k]), v_{k+1} / (W - w([k]))}``. The released estimator is
    the DCLEF with ``x = 1`` on the bought set.

    The mechanism is truthful, individually rational and budget feasible, and its
    value ``w(O)`` is at least ``OPT / 5`` (``OPT / 2`` for equal weights), where
    ``OPT`` is the optimum of problem (7) (Theorem 3). It runs in ``O(n log n)``:
    one sort, prefix sums, and ``O(n)`` vectorized scans for ``k`` and for
    ``S_{-i*}`` (``r`` is its first element); at ``n = 10**6`` about three to five
    times one ``numpy.argsort`` (``benchmarks/bench_auction.py``).

    **Exact at thresholds.** Every comparison of the mechanism (Assumption 5, the
    test defining ``k``, ``|w_{i*}| > w([k] \\ {i*})``, ``S_1`` and ``S_2``) is
    decided exactly on the given floats: in floating point when the two sides
    differ by more than a rigorous rounding-error bound, in exact integer
    arithmetic otherwise. On an instance whose budget, cost or weight sits exactly
    on a threshold the outcome is therefore the exact mechanism's, so the
    guarantees of Theorem 3 hold as stated (plain floating point can select a
    different set there, with an approximation ratio above 5).

    Parameters
    ----------
    unit_costs : array-like of shape (n,)
        Reported unit costs ``v_i >= 0`` (``inf`` = refuses to sell).
    weights : array-like of shape (n,)
        Public weights ``w_i`` of the linear predictor (any sign).
    budget : float
        ``B >= 0``.
    data_range : pair of float, default=(0, 1)
        The public data interval; only used for ``distortion`` and ``to_dclef``.

    Returns
    -------
    result : AuctionResult
        Every array in the input order. Zero weights and violators of
        Assumption 5 are reported in ``zero_weight`` and ``violates_assumption``
        and never bought (see the module notes). With a single individual of
        nonzero weight (n = 1 included) nobody can be bought: ``W - |w_i| = 0``
        would make her ``eps_i`` infinite. Payments are the exact mechanism's to a few
        ulps, at any magnitude, and the exact sum of the float payments is at most
        ``budget`` (where rounding put it above, they are lowered by those ulps); a
        guarantee ``eps_i`` beyond float64 (weights 1e300 and 1e-300 together) is ``inf``.

    Raises
    ------
    ValueError
        n = 0, shape mismatch, NaN / negative costs, non-finite weights, negative,
        NaN or infinite budget, or an invalid ``data_range``.
    TypeError
        Non-numeric input.

    See Also
    --------
    optimal_dclef : the exact (non-truthful) optimum of problem (7).
    ghosh_roth : the equal-weights special case.

    References
    ----------
    P. Dandekar, N. Fawaz and S. Ioannidis, "Privacy Auctions for Recommender
    Systems", Algorithm 1, eq. (9), Assumption 5, Theorem 3.

    Examples
    --------
    >>> from privrelease.auctions import fair_inner_product
    >>> res = fair_inner_product([1.0, 2.0, 3.0, 10.0], [1.0, 1.0, 1.0, 1.0], budget=3.0)
    >>> res.selected.tolist(), res.payments.tolist()
    ([True, True, False, False], [1.5, 1.5, 0.0, 0.0])
    >>> res.epsilons.tolist()
    [0.5, 0.5, 0.0, 0.0]
    """
    v, w, budget = _check_auction_input(unit_costs, weights, budget)
    if np.isinf(budget):
        raise ValueError(f"budget must be finite, got {budget!r}")
    data_range = check_data_range(data_range)
    out = _fip_core(v[None, :], np.abs(w)[None, :], budget)
    return _auction_result(out, 0, w, v, budget, data_range)


def _recorded_epsilons(eps, a, selected, data_range):
    """The guarantees to record for the bought set: those the released DCLEF's noise delivers, ``Delta |w_i| /
    sigma`` with its own ``sigma = Delta * sum_{j not bought} |w_j|`` (summed in input order, as
    :class:`DCLEF` does), rounded up. The auction's ``|w_i| / (W - w([k]))``, a cumulative sum in cost order,
    was an ulp below it for about half the individuals. ``eps`` (the auction's) is kept where that scale is 0,
    not finite or subnormal (:class:`DCLEF` refuses the latter)."""
    x = selected.astype(np.float64)
    delta = data_range[1] - data_range[0]
    with np.errstate(over="ignore", under="ignore"):
        sigma = delta * float(np.sum(a * (1.0 - x)))
    if not _NORMAL <= sigma < np.inf:
        return eps
    return np.where(selected, delivered_epsilons(a, x, data_range, sigma), eps)


def _auction_result(out, j, w, v, budget, data_range):
    """The :class:`AuctionResult` of row ``j`` of a :func:`_fip_core` pass (weights ``w`` of that row)."""
    a = np.abs(w)
    return AuctionResult(
        selected=out["selected"][j], payments=out["payments"][j],
        epsilons=_recorded_epsilons(out["epsilons"][j], a, out["selected"][j], data_range),
        weights=w, unit_costs=v, budget=budget, data_range=data_range,
        branch=_BRANCH_NAMES[int(out["branch"][j])], k=int(out["k"][j]),
        i_star=int(out["i_star"][j]), r=int(out["r"][j]), p_hat=float(out["p_hat"][j]),
        zero_weight=a == 0, violates_assumption=(a > 0) & ~out["eligible"][j],
    )


_BATCH_ENTRIES = 2**16   # entries of the (rows, n) arrays per _fip_core call in _fair_inner_product_rows


def _fair_inner_product_rows(unit_costs, weights, budget, *, data_range=(0.0, 1.0), first_block=None):
    """:func:`fair_inner_product` on each row of ``weights`` with the same costs and budget, in batches.

    Yields one :class:`AuctionResult` per row, equal to ``fair_inner_product(unit_costs, weights[q], budget,
    data_range=data_range)``: :func:`_fip_core` decides every row on its own (a row's outcome does not depend
    on the others in its batch). One vectorized pass over a block of rows replaces one pass per row, whose
    fixed cost (about a hundred numpy calls) dominated short rows: ``DCLEFEstimator.predict`` of 100 queries
    on 100 individuals took about half the time. Rows are taken ``_BATCH_ENTRIES // n`` at a time (at least
    one) to bound the memory; ``first_block`` rows first, then twice as many each block up to that size,
    for a caller that may stop early (fewer rows computed for nothing).

    Validation is :func:`fair_inner_product`'s, on the whole matrix: ``weights`` must be a finite
    2-D array with one column per individual.
    """
    v = _check_vector(unit_costs, "unit_costs", allow_inf=True, nonnegative=True)
    budget = check_number(budget, "budget", low=0)
    if np.isinf(budget):
        raise ValueError(f"budget must be finite, got {budget!r}")
    data_range = check_data_range(data_range)
    w_all = np.asarray(weights, dtype=np.float64)
    if w_all.ndim != 2 or w_all.shape[1] != v.shape[0] or v.shape[0] == 0:
        raise ValueError(f"weights must have shape (n_rows, {v.shape[0]}), got {w_all.shape}")
    if not np.isfinite(w_all).all():
        raise ValueError("weights must be finite numbers")
    n = v.shape[0]
    top = max(1, _BATCH_ENTRIES // n)
    step = top if first_block is None else max(1, min(int(first_block), top))
    start = 0
    while start < w_all.shape[0]:
        w_blk = w_all[start:start + step]
        start += w_blk.shape[0]
        step = min(2 * step, top)
        out = _fip_core(np.repeat(v[None, :], w_blk.shape[0], axis=0), np.abs(w_blk), budget)
        for j in range(w_blk.shape[0]):
            yield _auction_result(out, j, w_blk[j].copy(), v, budget, data_range)


def ghosh_roth(unit_costs, budget, *, data_range=(0.0, 1.0)):
    """The Ghosh-Roth mechanism: FairInnerProduct with equal weights (Sec. 4.2).

    With ``w_i = 1`` the ``k`` cheapest individuals are bought, each paid
    ``min{B / k, v_{k+1} / (n - k)}``; the estimate is 2-approximate with respect
    to ``OPT`` (Theorem 3). The ``i*`` branch can fire (``branch='max_weight'``)
    only when one individual is bought (``k = 1``, ``i*`` the cheapest by index);
    it then buys and pays as the greedy rule does.

    Parameters
    ----------
    unit_costs : array-like of shape (n,)
        Reported unit costs ``v_i >= 0``.
    budget : float
        ``B >= 0``.
    data_range : pair of float, default=(0, 1)

    Returns
    -------
    result : AuctionResult

    See Also
    --------
    fair_inner_product : the general (weighted) mechanism.

    References
    ----------
    A. Ghosh and A. Roth, "Selling privacy at auction", ACM EC 2011; Dandekar,
    Fawaz and Ioannidis (2012), Sec. 4.2 and Theorem 3.

    Examples
    --------
    >>> from privrelease.auctions import ghosh_roth
    >>> ghosh_roth([0.1, 0.2, 0.3, 5.0], budget=1.0).selected.tolist()
    [True, True, True, False]
    """
    v = _check_vector(unit_costs, "unit_costs", allow_inf=True, nonnegative=True)
    return fair_inner_product(v, np.ones_like(v), budget, data_range=data_range)


@dataclass(eq=False)
class FractionalResult:
    """Optimum of the fractional relaxation (20) of problem (7) (Lemma 6).

    Attributes
    ----------
    x : ndarray of shape (n,)
        Optimal ``x*`` in ``[0, 1]^n`` (input order): 1 for the ``ell`` cheapest,
        a fraction for the next one, 0 for the rest.
    value : float
        ``sum_i |w_i| x*_i``, an upper bound on ``OPT``.
    ell : int
        The ``ell`` of Lemma 6.
    """

    x: np.ndarray
    value: float
    ell: int


def fractional_dclef(unit_costs, weights, budget):
    """Closed-form optimum of the fractional relaxation (20)/(21) of problem (7) (Lemma 6).

    With costs sorted increasingly, ``q(k) = sum_{i<=k} v_i |w_i|`` and
    ``p(k) = sum_{i>k} |w_i|``, ``ell`` is the largest ``k`` with
    ``q(k) - B p(k) <= 0``; ``x*_i = 1`` for ``i <= ell``,
    ``x*_{ell+1} = (B p(ell) - q(ell)) / ((v_{ell+1} + B) |w_{ell+1}|)`` and 0 after.
    ``O(n log n)``. Its value bounds ``OPT`` from above (used in the proof of
    Theorem 3, and usable for large ``n`` where the exact optimum is out of reach).

    Parameters
    ----------
    unit_costs, weights, budget
        As for :func:`fair_inner_product`.

    Returns
    -------
    result : FractionalResult

    References
    ----------
    Dandekar, Fawaz and Ioannidis (2012), full version, appendix D.2, problem (20)
    and Lemma 6.

    Examples
    --------
    >>> from privrelease.auctions import fractional_dclef
    >>> fractional_dclef([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], budget=1.0).value
    1.5
    """
    v, w, budget = _check_auction_input(unit_costs, weights, budget)
    if np.isinf(budget):
        raise ValueError(f"budget must be finite, got {budget!r}")
    a = np.abs(w)
    _check_total_weight(a)
    n = a.size
    order = np.argsort(v, kind="stable")
    vs, as_ = v[order], a[order]
    with np.errstate(invalid="ignore"):
        va = np.where(as_ > 0, vs * as_, 0.0)
    q = np.concatenate([[0.0], np.cumsum(va)])
    p = np.concatenate([np.cumsum(as_[::-1])[::-1], [0.0]])
    g = q - budget * p
    ell = int(np.flatnonzero(g <= 0).max())
    xs = np.zeros(n)
    xs[:ell] = 1.0
    if ell < n and as_[ell] > 0:
        denom = (vs[ell] + budget) * as_[ell]
        xs[ell] = 0.0 if np.isinf(denom) else min(1.0, max(0.0, (budget * p[ell] - q[ell]) / denom))
    x = np.zeros(n)
    x[order] = xs
    x[a == 0] = 0.0
    return FractionalResult(x=x, value=float(a @ x), ell=ell)


def optimal_dclef(unit_costs, weights, budget, *, method="auto", data_range=(0.0, 1.0),
                  rtol=0.0):
    """The optimal individually rational, budget-feasible DCLEF: problem (7), solved exactly.

    With payments at cost (``p_i = v_i eps_i``, eq. 8) problem (7) is the 0-1 knapsack
    ``max sum |w_i| x_i`` s.t. ``sum_i (v_i + B) |w_i| x_i <= B W`` plus at least one
    individual of nonzero weight left out (otherwise ``sigma = 0`` and the
    guarantees are infinite). This optimum is not truthful; it is the benchmark
    ``OPT`` of Theorem 3.

    Parameters
    ----------
    unit_costs, weights, budget
        As for :func:`fair_inner_product` (true unit costs).
    method : {"auto", "brute_force", "milp"}, default="auto"
        ``"brute_force"`` enumerates all ``2**m`` subsets of the ``m`` individuals
        of nonzero weight (``O(2**m m)``, ``m <= 22``); ``"milp"`` solves the integer
        program with :func:`scipy.optimize.milp` (HiGHS) and verifies the solution;
        ``"auto"`` uses brute force for ``m <= 16`` and MILP above.
    data_range : pair of float, default=(0, 1)
    rtol : float, default=0.0
        Relative slack on the budget constraint: a set ``H`` is accepted when
        ``sum_{i in H} v_i |w_i| <= B (1 + rtol) (W - w(H))``. The constraint is decided
        exactly on the given floats (a tight optimum, on the budget to the last bit, is
        found with ``rtol=0``); with ``rtol > 0`` a set over budget by that fraction is
        accepted and its payments are lowered to the budget, below cost by at most that
        fraction.

    Returns
    -------
    result : AuctionResult
        ``branch="optimal"``; ``payments = v_i eps_i`` (the cheapest IR payments), each
        correctly rounded, then lowered by an ulp or two where their exact sum exceeds the
        budget (as :func:`fair_inner_product` does): the payments never exceed ``B``.
        ``violates_assumption`` is decided exactly too.

    Raises
    ------
    SolverError
        The MILP solver did not return a verified optimal solution.

    See Also
    --------
    fractional_dclef : the relaxation bound, ``O(n log n)`` for any ``n``.

    Examples
    --------
    >>> from privrelease.auctions import optimal_dclef
    >>> optimal_dclef([0.5, 2, 2, 2], [1, 1, 1, 1], budget=1.25).value   # Theorem 4 instance
    2.0
    """
    v, w, budget = _check_auction_input(unit_costs, weights, budget)
    if np.isinf(budget):
        raise ValueError(f"budget must be finite, got {budget!r}")
    data_range = check_data_range(data_range)
    rtol = check_number(rtol, "rtol", low=0)
    if method not in ("auto", "brute_force", "milp"):
        raise ValueError(f"method must be 'auto', 'brute_force' or 'milp', got {method!r}")
    a = np.abs(w)
    nz = np.flatnonzero(a > 0)
    m = nz.size
    if method == "auto":
        method = "brute_force" if m <= 16 else "milp"
    W = _check_total_weight(a)
    x = np.zeros(a.size, dtype=bool)
    if m >= 2:
        an, vn = a[nz], v[nz]
        sol = _milp(vn, an, budget, W, rtol) if method == "milp" else None
        if sol is None and method == "milp" and m > 22:
            raise SolverError(f"MILP for problem (7): {_MILP_CUTS} solutions within HiGHS's tolerance of the budget "
                              f"were infeasible when verified exactly, and m = {m} individuals of nonzero weight are "
                              "too many for brute force (at most 22)")
        if sol is None:     # brute force, asked for or where the MILP's answers were a hair over budget
            if m > 22:
                raise ValueError(f"brute force enumerates 2**m subsets; m = {m} > 22 is too many")
            masks = ((np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)
            sol = _best_mask(masks, vn, an, budget, W, rtol)
        x[nz] = sol
    resid = float(a[~x].sum())
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        eps = np.where(x, a / resid if resid > 0 else np.inf, 0.0)
        pay = np.where(x & (v > 0), v * eps, 0.0)
    if not (np.all(np.isfinite(eps)) and np.all(np.isfinite(pay))):
        # eps_i = a_i / (W - w(O)) beyond float64 (weights 1e300 and 1e-300): the payment at cost v_i eps_i is
        # at most the budget but was inf, or NaN (0 * inf) for a free individual; exactly instead
        eps, pay = _at_cost_exact(v, a, x)
    # each payment at cost is rounded: five fl(0.2) sum to 1 + 5.6e-17 exactly, over a budget of 1
    _within_budget(pay[None, :], budget)
    return AuctionResult(selected=x, payments=pay, epsilons=_recorded_epsilons(eps, a, x, data_range),
                         weights=w, unit_costs=v,
                         budget=budget, data_range=data_range, branch="optimal",
                         zero_weight=a == 0, violates_assumption=(a > 0) & ~_eligible(v, a, budget))


def _at_cost_exact(v, a, x):
    """``eps_i = a_i / (W - w(O))`` and payments at cost ``v_i eps_i`` of the bought set ``x``, in exact
    arithmetic, correctly rounded (``inf`` for a guarantee beyond float64)."""
    from fractions import Fraction

    rest = sum((Fraction(float(t)) for t in a[~x]), Fraction(0))
    eps, pay = np.zeros(a.size), np.zeros(a.size)
    for i in np.flatnonzero(x).tolist():
        if rest == 0:
            eps[i], pay[i] = np.inf, (0.0 if v[i] == 0 else np.inf)
            continue
        e = Fraction(float(a[i])) / rest
        eps[i] = _int_ratio(e.numerator, e.denominator)
        p = Fraction(float(v[i])) * e
        pay[i] = _int_ratio(p.numerator, p.denominator)
    return eps, pay


def _check_total_weight(a):
    """Refuse weights whose total ``W = sum |w_i|`` is beyond float64 (the float problem is meaningless)."""
    with np.errstate(over="ignore"):
        W = float(a.sum())
    if not np.isfinite(W):
        raise ValueError(f"weights sum to {W!r} in absolute value (largest {float(a.max())!r}), beyond float64; the "
                         "problem does not change when every weight is multiplied by one factor: expected "
                         "weights / max|w| (fair_inner_product takes them as they are)")
    return W


def _feasible(masks, v, a, budget, rtol):
    """IR at cost + budget: ``sum_{i in H} v_i a_i <= B (1 + rtol) (W - w(H))``, and ``W - w(H) > 0``, exactly.

    Decided in floating point where the two sides differ by more than a bound on their rounding errors, and on
    exact integers (:func:`_budget_ints`) otherwise: a set on the budget to the last bit (``ones(10)`` costs,
    budget 1: five individuals pay exactly 1), a set over it by less than the rounding, and the subsets where a
    side left float64's range (``v_i a_i`` beyond float64 on both sides compared ``inf <= inf``: a set paying
    1e450 on a budget of 1e300 was "feasible"; a product that underflowed to 0 made a positive cost free).
    """
    m = a.size
    g = 2.0 * _gamma(m + 4)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        va = np.where(np.isinf(v), np.inf, v * a)
        cost = np.where(masks, va[None, :], 0.0).sum(axis=1)
        resid = (~masks).astype(np.float64) @ a
        rhs = budget * resid * (1 + rtol)
        ok = (resid > 0) & (cost <= rhs)
        infinite = (masks & np.isinf(v)[None, :]).any(axis=1)   # never affordable (inf <= inf held)
        ok &= ~infinite
        off = (masks & ((va < _TINY) & (v > 0))[None, :]).any(axis=1)
        close = ~(np.abs(cost - rhs) > g * (cost + rhs) + _ETA)
        unsure = ~infinite & (resid > 0) & (~np.isfinite(cost) | ~np.isfinite(rhs) | off
                                            | ((rhs < _TINY) & (rhs > 0)) | close)
    rows = np.flatnonzero(unsure)
    if rows.size:
        A, C, cap, Wi = _budget_ints(v, a, budget, rtol)
        A, C = np.array(A, dtype=object), np.array(C, dtype=object)
        for start in range(0, rows.size, 2**14):
            r = rows[start:start + 2**14]
            sel = masks[r]
            paid = np.where(sel, C[None, :], 0).sum(axis=1)
            taken = np.where(sel, A[None, :], 0).sum(axis=1)
            ok[r] = [t < Wi and c <= cap for c, t in zip(paid.tolist(), taken.tolist())]
    return ok


def _best_mask(masks, v, a, budget, W, rtol):
    ok = _feasible(masks, v, a, budget, rtol)
    val = np.where(ok, masks.astype(np.float64) @ a, -1.0)
    return masks[int(np.argmax(val))]


_MILP_CUTS = 30   # exactly infeasible MILP solutions excluded one at a time before giving up


def _milp(v, a, budget, W, rtol):
    """Problem (7) by HiGHS, its answer verified exactly (:func:`_feasible`).

    The budget row is scaled to ``sum_i (v_i / (B (1 + rtol)) + 1) (a_i / W) x_i <= 1`` (HiGHS's feasibility
    tolerance is absolute). HiGHS accepts a set over budget by its tolerance (about 1e-6): two solves bracket
    the optimum, one with the right-hand side lowered past that tolerance (its answer is exactly feasible) and
    one raised past it (its value bounds the optimum); equal values certify the first. Otherwise the raised
    problem is solved again without each exactly infeasible answer until one is feasible (optimal, since the
    raised problem holds every feasible set) or the value falls to the lowered one's. ``None`` when
    ``_MILP_CUTS`` such answers were infeasible (many sets a hair over budget: equal costs of ``1 + 1e-13``).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    m = a.size
    elig = _eligible(v, a, budget, rtol)     # the others are in no feasible set
    ub = elig.astype(np.float64)
    obj = -(a / a.max())
    base = [LinearConstraint(np.ones((1, m)), 0, m - 1)]
    if budget > 0:
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            share = a / W
            size = np.where(elig, (v * share) / (budget * (1 + rtol)) + share, 0.0)
        row = size[None, :]
    else:
        row = None      # only free individuals are eligible: every set of them costs 0 <= 0

    def solve(slack, cuts):
        cons = list(base)
        if row is not None:
            cons.append(LinearConstraint(row, -np.inf, 1.0 + slack))
        cons += [LinearConstraint(c[None, :], -np.inf, k) for c, k in cuts]
        res = milp(obj, constraints=cons, integrality=np.ones(m), bounds=Bounds(np.zeros(m), ub),
                   options={"mip_rel_gap": 0.0})
        if res.status != 0 or res.x is None:
            raise SolverError(f"MILP for problem (7) did not reach an optimum: status {res.status}, "
                              f"{res.message!r}")
        return res.x > 0.5

    def value(x):
        return math.fsum(a[x].tolist())

    low = solve(-1e-5, [])
    if not _feasible(low[None, :], v, a, budget, rtol)[0]:
        raise SolverError("MILP solution for problem (7) violates the budget when verified exactly (with the "
                          "budget row lowered by 1e-5)")
    cuts = []
    for _ in range(_MILP_CUTS):
        high = solve(1e-5, cuts)
        if value(high) <= value(low):
            return low
        if _feasible(high[None, :], v, a, budget, rtol)[0]:
            return high
        # no-good cut: not this set again (sum_{i in x} x_i - sum_{i not in x} x_i <= |x| - 1)
        cuts.append((np.where(high, 1.0, -1.0), float(high.sum()) - 1.0))
    return None
