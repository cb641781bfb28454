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

from dataclasses import dataclass, field

import numpy as np

from ..exceptions import SolverError
from ..utils import check_number
from ._dclef import DCLEF, _check_vector, check_data_range

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
        low, high = self.data_range
        return 2.25 * (high - low) ** 2 * self.residual_weight**2

    @property
    def total_payment(self):
        return float(self.payments.sum())

    @property
    def costs(self):
        """Each individual's privacy cost ``v_i * eps_i`` (0 when not bought)."""
        with np.errstate(invalid="ignore"):
            return np.where(self.selected, self.unit_costs * self.epsilons, 0.0)

    @property
    def utilities(self):
        """``p_i - v_i eps_i``: non-negative for every individual (individual rationality)."""
        return self.payments - self.costs

    def to_dclef(self, data_range=None):
        """The released estimator as a :class:`DCLEF` (``data_range`` defaults to the auction's)."""
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
    budget = check_number(budget, "budget", low=0)
    return v, w, budget


def _eligible(v, a, budget):
    """Nonzero weight and Assumption 5: ``a_i v_i <= B (W - a_i)`` with ``W - a_i > 0``."""
    W = a.sum(axis=-1, keepdims=True)
    rest = W - a
    with np.errstate(invalid="ignore"):
        ok = (a > 0) & (rest > 0) & (a * v <= budget * rest)
    return ok


def _fip_core(v, a, budget):
    """FairInnerProduct on a batch of instances (rows), vectorized, O(n log n) per row.

    Parameters
    ----------
    v, a : ndarray of shape (m, n)
        Unit costs (>= 0, inf allowed) and absolute weights ``|w_i|``.
    budget : float or ndarray of shape (m,)

    Returns
    -------
    dict of arrays: selected, payments, epsilons (m, n); branch, k, i_star, r, p_hat (m,);
    eligible (m, n).
    """
    v = np.atleast_2d(np.asarray(v, dtype=np.float64))
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    m, n = a.shape
    B = np.broadcast_to(np.asarray(budget, dtype=np.float64), (m,))[:, None]
    rows = np.arange(m)[:, None]
    elig = _eligible(v, a, B)
    has = elig.any(axis=1)

    # sort eligible individuals by cost (ties by index); the rest go last with cost inf
    key = np.where(elig, v, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    vs = key[rows, order]
    as_ = a[rows, order]
    pref = np.cumsum(as_, axis=1)                              # w([t]), t = 1..n
    suf = np.cumsum(as_[:, ::-1], axis=1)[:, ::-1]
    resid = np.concatenate([suf[:, 1:], np.zeros((m, 1))], axis=1)   # W - w([t])

    # k: the largest t with B / w([t]) >= v_t / (W - w([t])), i.e. B (W - w[t]) >= v_t w[t]
    with np.errstate(invalid="ignore"):
        cond_k = (resid > 0) & (B * resid >= vs * pref) & np.isfinite(vs)
    any_k = cond_k.any(axis=1)
    k = np.where(any_k, n - np.argmax(cond_k[:, ::-1], axis=1), 0)

    # i*: largest |w_i| among the eligible, ties by input index
    i_star = np.argmax(np.where(elig, a, -1.0), axis=1)
    a_star = a[np.arange(m), i_star]
    inv = np.empty_like(order)
    inv[rows, order] = np.arange(n)[None, :]
    pos_star = inv[np.arange(m), i_star]

    # w([t] \ {i*}) and W - w([t] \ {i*})
    is_star = np.arange(n)[None, :] == pos_star[:, None]
    pref_m = np.cumsum(np.where(is_star, 0.0, as_), axis=1)
    after_star = np.arange(n)[None, :] >= pos_star[:, None]
    resid_m = resid + np.where(after_star, a_star[:, None], 0.0)

    kk = np.maximum(k, 1) - 1
    wk_minus = np.where(k > 0, pref_m[np.arange(m), kk], 0.0)
    star_branch = has & (a_star > wk_minus)
    greedy = has & ~star_branch

    # eq. (9): S_{-i*} = S1 & S2, r = min S_{-i*}
    with np.errstate(invalid="ignore", divide="ignore"):
        s1 = (resid_m > 0) & (B * resid_m >= vs * pref_m) & np.isfinite(vs)
    s2 = pref_m >= a_star[:, None]
    s_set = s1 & s2 & ~is_star
    has_r = s_set.any(axis=1)
    r_pos = np.argmax(s_set, axis=1)
    # W - |w_{i*}| = w(before i*) + w(after i*)
    W_minus_star = (np.where(pos_star > 0, pref[np.arange(m), np.maximum(pos_star, 1) - 1], 0.0)
                    + resid[np.arange(m), pos_star])
    with np.errstate(invalid="ignore", divide="ignore"):
        p_hat = np.where(has_r, a_star * vs[np.arange(m), r_pos] / W_minus_star, B[:, 0])
    p_hat = np.where(star_branch, p_hat, np.nan)

    # greedy payments: p_i = |w_i| min{B / w([k]), v_{k+1} / (W - w([k]))}
    wk = pref[np.arange(m), kk]
    rk = resid[np.arange(m), kk]
    v_next = np.where(k < n, vs[np.arange(m), np.minimum(k, n - 1)], np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        price = np.minimum(B[:, 0] / wk, v_next / rk)
        eps_scale = 1.0 / rk
    in_k = np.arange(n)[None, :] < k[:, None]

    sel_sorted = np.where(greedy[:, None], in_k, False) | (star_branch[:, None] & is_star)
    pay_sorted = np.zeros((m, n))
    eps_sorted = np.zeros((m, n))
    with np.errstate(invalid="ignore", divide="ignore"):
        g = greedy[:, None] & in_k
        pay_sorted = np.where(g, as_ * price[:, None], pay_sorted)
        eps_sorted = np.where(g, as_ * eps_scale[:, None], eps_sorted)
        st = star_branch[:, None] & is_star
        pay_sorted = np.where(st, p_hat[:, None], pay_sorted)
        eps_sorted = np.where(st, (a_star / W_minus_star)[:, None], eps_sorted)

    selected = np.zeros((m, n), dtype=bool)
    payments = np.zeros((m, n))
    epsilons = np.zeros((m, n))
    selected[rows, order] = sel_sorted
    payments[rows, order] = pay_sorted
    epsilons[rows, order] = eps_sorted
    branch = np.where(~has, 0, np.where(greedy, 1, 2))
    r_idx = np.where(star_branch & has_r, order[np.arange(m), r_pos], -1)
    return dict(selected=selected, payments=payments, epsilons=epsilons, branch=branch,
                k=np.where(has, k, 0), i_star=np.where(has, i_star, -1), r=r_idx,
                p_hat=p_hat, eligible=elig)


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
    ``S_{-i*}`` (each is an interval of the sorted order, so ``r`` is its first
    element).

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
        would make her ``eps_i`` infinite.

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
    a = np.abs(w)
    out = _fip_core(v[None, :], a[None, :], budget)
    return AuctionResult(
        selected=out["selected"][0], payments=out["payments"][0], epsilons=out["epsilons"][0],
        weights=w, unit_costs=v, budget=budget, data_range=data_range,
        branch=_BRANCH_NAMES[int(out["branch"][0])], k=int(out["k"][0]),
        i_star=int(out["i_star"][0]), r=int(out["r"][0]), p_hat=float(out["p_hat"][0]),
        zero_weight=a == 0, violates_assumption=(a > 0) & ~out["eligible"][0],
    )


def ghosh_roth(unit_costs, budget, *, data_range=(0.0, 1.0)):
    """The Ghosh-Roth mechanism: FairInnerProduct with equal weights (Sec. 4.2).

    With ``w_i = 1`` the ``k`` cheapest individuals are bought (the ``i*`` branch
    never fires when ``n >= 2``), each paid ``min{B / k, v_{k+1} / (n - k)}``; the
    estimate is 2-approximate with respect to ``OPT`` (Theorem 3).

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
                  rtol=1e-12):
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
    rtol : float, default=1e-12
        Relative tolerance on the budget constraint (tight optima are common).

    Returns
    -------
    result : AuctionResult
        ``branch="optimal"``; ``payments = v_i eps_i`` (the cheapest IR payments).

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
    if method not in ("auto", "brute_force", "milp"):
        raise ValueError(f"method must be 'auto', 'brute_force' or 'milp', got {method!r}")
    a = np.abs(w)
    nz = np.flatnonzero(a > 0)
    m = nz.size
    if method == "auto":
        method = "brute_force" if m <= 16 else "milp"
    W = float(a.sum())
    x = np.zeros(a.size, dtype=bool)
    if m >= 2:
        an, vn = a[nz], v[nz]
        if method == "brute_force":
            if m > 22:
                raise ValueError(f"brute force enumerates 2**m subsets; m = {m} > 22 is too many")
            masks = ((np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)
            best = _best_mask(masks, vn, an, budget, W, rtol)
            x[nz[best]] = True
        else:
            x[nz] = _milp(vn, an, budget, W, rtol)
    resid = float(a[~x].sum())
    eps = np.where(x, a / resid if resid > 0 else np.inf, 0.0)
    with np.errstate(invalid="ignore"):
        pay = np.where(x, v * eps, 0.0)
    return AuctionResult(selected=x, payments=pay, epsilons=eps, weights=w, unit_costs=v,
                         budget=budget, data_range=data_range, branch="optimal",
                         zero_weight=a == 0, violates_assumption=(a > 0) & ~_eligible(v, a, budget))


def _feasible(masks, v, a, budget, rtol):
    """IR at cost + budget: sum_{i in H} v_i a_i <= B (W - w(H)), and W - w(H) > 0."""
    with np.errstate(invalid="ignore"):
        va = np.where(np.isinf(v), np.inf, v * a)
        cost = np.where(masks, va[None, :], 0.0).sum(axis=1)
    resid = (~masks).astype(np.float64) @ a
    return (resid > 0) & (cost <= budget * resid * (1 + rtol))


def _best_mask(masks, v, a, budget, W, rtol):
    ok = _feasible(masks, v, a, budget, rtol)
    val = np.where(ok, masks.astype(np.float64) @ a, -1.0)
    return masks[int(np.argmax(val))]


def _milp(v, a, budget, W, rtol):
    from scipy.optimize import Bounds, LinearConstraint, milp

    m = a.size
    fin = np.isfinite(v)
    ub = np.where(fin, 1.0, 0.0)        # infinite unit costs can never be bought
    size = np.where(fin, (v + budget) * a, 0.0)
    cons = [LinearConstraint(size[None, :], -np.inf, budget * W * (1 + rtol)),
            LinearConstraint(np.ones((1, m)), 0, m - 1)]
    res = milp(-a, constraints=cons, integrality=np.ones(m), bounds=Bounds(np.zeros(m), ub),
               options={"mip_rel_gap": 0.0})
    if res.status != 0 or res.x is None:
        raise SolverError(f"MILP for problem (7) did not reach an optimum: status {res.status}, "
                          f"{res.message!r}")
    x = res.x > 0.5
    if not _feasible(x[None, :], v, a, budget, 1e-9)[0]:
        raise SolverError("MILP solution for problem (7) violates the budget when verified")
    return x
