"""Cheapest contracts for buying private data (Khalili, Zhang and Liu).

A broker answers a buyer's sum query ``Q(D) = sum_i d_i`` with the biased
Laplace mechanism :class:`~privrelease.contracts.BiasedLaplaceMechanism` and
must pay each seller at least her privacy cost ``c(v_i, epsilon_i)``. Given the
buyer's accuracy target ``K`` (worst-case mean squared error), the functions
here find the contracts ``(p_i, epsilon_i)`` of least total payment:

* :func:`design_contract`: full information (valuations known);
* :func:`design_menu`: two sellers whose valuation is ``v_high`` with
  probability ``prob_high`` and ``v_low`` otherwise, known only to them: a menu
  of two contracts satisfying individual rationality (IR) and incentive
  compatibility (IC);
* :func:`unbiased_contract`: the best contract using the unbiased Laplace
  mechanism ``A_u`` (all weights 1), the baseline both are compared with.
"""

from dataclasses import dataclass, field
import functools
import numbers

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from ..exceptions import InfeasibleBudgetError, SolverError
from ..noise._laplace import biased_laplace_mse
from ..utils import check_number
from ..utils._validation import (as_float_array, format_bound, holds_only, largest_passing, plain_value,
                                 refuse_booleans, refuse_masked)
from ._mechanism import BiasedLaplaceMechanism, seller_epsilons

__all__ = [
    "Contract",
    "Menu",
    "design_contract",
    "design_menu",
    "privacy_cost",
    "unbiased_contract",
]

_REL_TOL = 1e-9


# ----------------------------------------------------------------------------- costs


@functools.lru_cache(maxsize=64)
def _broadcast_shape(shape1, shape2):
    """``np.broadcast_shapes``, remembered: the water-filling asks for the same few shapes each time."""
    return np.broadcast_shapes(shape1, shape2)


class _Cost:
    """A privacy cost ``c(v, eps)``: increasing in ``v`` and ``eps``, convex in ``eps``, ``c(v, 0) = 0``."""

    def __init__(self, name, fn, deriv=None, inv_deriv=None, *, builtin=False):
        self.name = name
        self.fn = fn
        # a built-in cost is v g(eps): designs scale with v, so they are computed on v / max(v) (v near
        # float64's max overflowed inside the searches) and a valuation limit follows from g alone
        self.builtin = builtin
        self._deriv = deriv
        self._inv = inv_deriv

    def _evaluate(self, v, eps):
        """``fn(v, eps)`` as a float array of the broadcast shape of ``v`` and ``eps``, or an error naming the cost
        (a callable returning a string or an array of another shape failed inside numpy, naming neither)."""
        with np.errstate(over="ignore", invalid="ignore"):  # inf at a large eps is the right answer, as built in
            try:
                out = self.fn(v, eps)
            except (TypeError, ValueError) as err:
                if self.builtin:
                    raise
                # a cost written for scalars (math.exp, float(eps), ``if eps > 1``) failed inside numpy with
                # "only 0-dimensional arrays can be converted to Python scalars", naming neither the cost nor the fix
                raise type(err)(f"cost {self.name}(v, eps) failed on numpy arrays (v of shape {np.shape(v)}, eps of "
                                f"shape {np.shape(eps)}): {type(err).__name__}: {err}; expected a cost that works "
                                "elementwise on arrays (np.exp, not math.exp; np.where, not if)") from err
        shape = _broadcast_shape(np.shape(v), np.shape(eps))
        if type(out) is np.ndarray and out.dtype == np.float64 and out.shape == shape:
            return out  # the usual answer: nothing to convert or broadcast (the searches call this ~10^5 times)
        if type(out) is np.float64 and shape == ():
            return np.asarray(out)
        kind = np.asarray(out).dtype.kind
        if kind not in "biuf":
            raise TypeError(f"cost {self.name}(v, eps) must return real numbers, got {out!r:.80} "
                            f"(dtype {np.asarray(out).dtype})")
        try:
            return np.broadcast_to(np.asarray(out, dtype=float), shape)
        except ValueError:
            raise ValueError(f"cost {self.name}(v, eps) must work elementwise (return an array of the shape of its "
                             f"arguments, {shape}), got shape {np.shape(out)}") from None

    def check_shape(self, v, K):
        """Refuse a callable cost that is not increasing in ``v`` and ``eps`` or not convex in ``eps``.

        The designs assume both (Section 3): a cost decreasing in ``eps`` gave a contract buying
        ``eps = 400`` for a payment of 1e-174, and a concave one a SolverError. Probed at the valuations ``v``
        on a grid of ``eps`` around the unbiased contract's ``sqrt(2 / K)``; the built-in costs are exact.
        """
        if self.builtin:
            return
        vs = np.unique(np.asarray(v, dtype=float))
        vs = vs[np.unique(np.linspace(0, vs.size - 1, min(vs.size, 16)).round().astype(int))]
        eps = np.concatenate([[0.0], np.sqrt(2.0 / K) * np.geomspace(1e-3, 10.0, 24)])
        with np.errstate(all="ignore"):
            c = self(vs[:, None], eps[None, :])
            slopes = np.diff(c, axis=1) / np.diff(eps)[None, :]
            at_zero = self._evaluate(vs, np.zeros(vs.shape))  # the callable's own value: __call__ puts 0 there
        top = np.max(np.abs(c[np.isfinite(c)]), initial=0.0)
        tol = 1e-9 * max(top, np.finfo(float).tiny)
        # checked first: c(v, 0) = 1 was replaced by 0, and the jump that made was refused as "not convex in eps"
        # (NaN is left: 0 * log(0) of a cost whose limit at 0 is 0)
        off = np.flatnonzero(np.abs(at_zero) > tol)
        if off.size:
            i = off[0]
            raise ValueError(f"cost {self.name}(v, eps): cost({vs[i]:.6g}, 0) = {at_zero[i]:.6g}, expected 0; a "
                             "privacy cost must be 0 at eps = 0 (nothing sold costs nothing), increasing in v and "
                             "eps and convex in eps (the designs assume it)")
        checks = (("decreasing in eps", np.diff(c, axis=1) < -tol, lambda i, j: (vs[i], eps[j + 1], vs[i], eps[j])),
                  ("decreasing in v", np.diff(c, axis=0) < -tol, lambda i, j: (vs[i + 1], eps[j], vs[i], eps[j])),
                  ("not convex in eps", np.diff(slopes, axis=1) < -tol * np.max(1.0 / np.diff(eps)),
                   lambda i, j: None))
        for what, bad, where in checks:
            if not np.any(bad):  # (a comparison with NaN, inf - inf, is False: an overflowing cost passes)
                continue
            i, j = np.argwhere(bad)[0]
            at = where(i, j)
            detail = (f": cost({at[0]:.6g}, {at[1]:.6g}) = {self(at[0], at[1]):.6g} < cost({at[2]:.6g}, {at[3]:.6g}) "
                      f"= {self(at[2], at[3]):.6g}" if at is not None else
                      f": its slope in eps falls after eps = {eps[j + 1]:.6g} at v = {vs[i]:.6g}")
            raise ValueError(f"cost {self.name}(v, eps) is {what}{detail}; a privacy cost must be increasing in v and "
                             "eps and convex in eps, with cost(v, 0) = 0 (the designs assume it)")

    def __call__(self, v, eps):
        v = np.asarray(v, dtype=float)
        eps = np.asarray(eps, dtype=float)
        out = np.where(eps > 0, self._evaluate(v, np.where(eps > 0, eps, 0.0)), 0.0)
        if not (out >= 0).all():
            bad = np.isnan(out) | (out < 0)
            # a callable cost returning NaN gave a contract paying 0 with a = 0 and no error
            i = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
            vi, ei = np.broadcast_to(v, out.shape)[i], np.broadcast_to(eps, out.shape)[i]
            raise ValueError(f"cost {self.name}(v, eps) returned {float(out[i])!r} at v={float(vi)!r}, "
                             f"eps={float(ei)!r}; a privacy cost must be a non-negative number "
                             "(increasing in v and eps, convex in eps, cost(v, 0) = 0)")
        return out

    def deriv(self, v, eps):
        if self._deriv is not None:
            return self._deriv(v, eps)
        h = 1e-6 * np.maximum(1.0, eps)
        lo = np.maximum(eps - h, 0.0)
        with np.errstate(invalid="ignore"):  # inf - inf where the cost overflows: an infeasible b (see payments)
            return (self._evaluate(v, eps + h) - self._evaluate(v, lo)) / (eps + h - lo)

    def inv_deriv(self, v, mu, upper):
        """``eps in [0, upper]`` with ``deriv(v, eps) = mu`` (clipped at the ends)."""
        if self._inv is not None:   # (np.clip's own checks took a tenth of a small design_contract)
            return np.minimum(np.maximum(self._inv(v, mu), 0.0), upper)
        v, mu, upper = np.broadcast_arrays(np.asarray(v, float), np.asarray(mu, float),
                                           np.asarray(upper, float))
        lo = np.zeros(v.shape)
        hi = upper.astype(float).copy()
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            below = self.deriv(v, mid) < mu
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        # the ends exactly: a seller whose marginal cost at ``upper`` is below ``mu`` is full, one whose marginal
        # cost at 0 is at least ``mu`` sells nothing (the bisection's midpoint left a full seller an ulp short of
        # ``upper`` and an idle one at ``upper`` 2^-51, which the water-filling took for a partial share)
        with np.errstate(invalid="ignore"):
            full = self.deriv(v, upper) < mu
            idle = self.deriv(v, np.zeros(v.shape)) >= mu
        return np.where(full, upper, np.where(idle, 0.0, 0.5 * (lo + hi)))


def _linear(v, eps):
    # a valuation of 0 costs 0 at any epsilon (0 * inf was nan)
    with np.errstate(invalid="ignore"):
        return np.where(np.asarray(v) == 0, 0.0, v * eps)


def _exponential(v, eps):
    with np.errstate(over="ignore", invalid="ignore"):  # eps up to 1/b: inf is the right answer (0 at v = 0)
        return np.where(np.asarray(v) == 0, 0.0, v * np.expm1(eps))


def _exponential_deriv(v, eps):
    with np.errstate(over="ignore"):
        return v * np.exp(eps)


def _resolve_cost(cost):
    if isinstance(cost, _Cost):
        return cost
    if cost == "linear":
        return _Cost("linear", _linear, deriv=lambda v, e: v * np.ones_like(e),
                     inv_deriv=None, builtin=True)
    if cost == "exponential":
        def inv(v, mu):
            with np.errstate(divide="ignore", over="ignore"):
                return np.log(np.maximum(mu, 0.0) / v)
        return _Cost("exponential", _exponential, deriv=_exponential_deriv, inv_deriv=inv, builtin=True)
    if callable(cost):
        return _Cost(getattr(cost, "__name__", "custom"), cost)
    raise ValueError(
        "cost must be 'linear' (v * eps), 'exponential' (v * (exp(eps) - 1)) or a callable "
        f"cost(v, eps), got {cost!r}"
    )


def privacy_cost(valuation, epsilon, cost="linear"):
    """Privacy cost ``c(v, epsilon)`` of a seller: ``v * epsilon`` or ``v * (exp(epsilon) - 1)``.

    Parameters
    ----------
    valuation, epsilon : float or array-like
    cost : {'linear', 'exponential'} or callable, default='linear'

    Returns
    -------
    cost : ndarray or float

    Examples
    --------
    >>> from privrelease.contracts import privacy_cost
    >>> float(privacy_cost(5.0, 0.5)), round(float(privacy_cost(5.0, 0.5, "exponential")), 4)
    (2.5, 3.2436)
    """
    v = _as_reals(valuation, "valuation")
    eps = _as_reals(epsilon, "epsilon")
    try:
        np.broadcast_shapes(v.shape, eps.shape)
    except ValueError:  # numpy's "operands could not be broadcast together" named neither argument
        raise ValueError(f"valuation (shape {v.shape}) and epsilon (shape {eps.shape}) must have the same shape, "
                         "or one of them be a single number") from None
    for arr, name in ((v, "valuation"), (eps, "epsilon")):
        bad = np.isnan(arr) | (arr < 0)
        if bad.any():
            raise ValueError(f"{name} must be >= 0 (and not NaN), got {plain_value(arr[bad].ravel()[0])!r}")
    fn = _resolve_cost(cost)
    out = fn(v, eps)
    # the cost returns inf where it overflows (the designs read that as infeasible); here it would be the answer:
    # privacy_cost(1.0, 1000.0, 'exponential') returned inf without a word, where design_contract refuses it
    over = np.isinf(out) & np.isfinite(np.broadcast_to(v, out.shape)) & np.isfinite(np.broadcast_to(eps, out.shape))
    if over.any():
        i = np.unravel_index(int(np.flatnonzero(over)[0]), over.shape)
        vi, ei = float(np.broadcast_to(v, out.shape)[i]), float(np.broadcast_to(eps, out.shape)[i])
        raise ValueError(f"privacy_cost is infinite: cost {fn.name}(v, eps) at valuation={vi!r}, epsilon={ei!r} "
                         f"returned inf (beyond float64's largest number {_MAX:.6g}, or infinite by the cost's own "
                         "definition); expected a finite cost: a smaller epsilon or valuation"
                         + (f" (epsilon <= {format_bound(_largest_exponent(vi))} for this valuation)"
                            if fn.builtin and fn.name == "exponential" and vi > 0 else ""))
    return out[()]


def _largest_exponent(v):
    """The largest ``eps`` at which the exponential cost ``v * expm1(eps)`` is computed within float64: ``expm1``
    itself overflows above ``log(max)`` (709.78), and ``v * expm1(eps)`` above ``log1p(max / v)``."""
    with np.errstate(over="ignore"):
        ratio = _MAX / v
        # log1p(max / v) rounded can lie above the last eps at which the cost is finite: the stated bound must pass
        return largest_passing(min(float(np.log(_MAX)), float(np.log1p(ratio))),
                               lambda e: bool(np.isfinite(_exponential(v, e))))


# ----------------------------------------------------------------------------- validation


#: smallest accuracy target: K / 2 must be a normal float64 (K = 5e-324 made K / 2 = 0)
_SMALLEST_ACCURACY = 2.0 * float(np.finfo(np.float64).tiny)


def _check_accuracy(accuracy):
    K = check_number(accuracy, "accuracy", allow_inf=False)
    if K <= 0:
        raise InfeasibleBudgetError(
            f"accuracy K must be > 0: a mean squared error of {accuracy!r} cannot be met by "
            "any differentially private mechanism (it would need Laplace scale b = 0 and "
            "every seller's data at full weight, i.e. epsilon = infinity)",
            smallest_feasible=None,
        )
    if K < _SMALLEST_ACCURACY:
        raise ValueError(
            f"accuracy K = {accuracy!r} is below {_SMALLEST_ACCURACY!r}: the Laplace scale b = sqrt(K / 2) "
            "is computed from K / 2, which must be a normal float64; expected K >= 2 * (smallest normal float64)"
        )
    return K


def _as_reals(values, name):
    """``values`` as a float array; strings, complex numbers and objects get a TypeError naming them."""
    arr = np.asarray(refuse_masked(values, name, "used"))
    refuse_booleans(values, name)  # True / False read as 1 / 0, where a boolean epsilon or budget is no number
    if arr.dtype.kind not in "iuf" and not (
            arr.dtype.kind == "O" and holds_only(arr, numbers.Real)):
        raise TypeError(f"{name} must be real numbers, got {plain_value(values)!r}")
    return as_float_array(arr, name)


def _check_valuations(valuations):
    v = _as_reals(valuations, "valuations")
    if v.ndim == 0:
        v = v[None]
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"valuations must be a non-empty 1-d array, got shape {v.shape}")
    bad = ~np.isfinite(v) | (v <= 0)
    if bad.any():
        raise ValueError(
            f"valuations must be finite and > 0, got {float(v[bad][0])!r} at index "
            f"{int(np.flatnonzero(bad)[0])}"
        )
    _check_normal(v, "valuations")
    return v


_TINY = float(np.finfo(np.float64).tiny)
#: the smallest valuation accepted: a normal float64 number (see :func:`_check_normal`)
SMALLEST_VALUATION = _TINY


def _check_normal(values, name):
    """Refuse subnormal valuations (below 2.2e-308): the payments, proportional to them, kept a bit or two
    (design_menu(1e-323, 1e-323, ...) failed its own incentive check with a SolverError)."""
    values = np.atleast_1d(np.asarray(values, dtype=np.float64))
    small = values < _TINY
    if small.any():
        i = int(np.flatnonzero(small)[0])
        where = f" at index {i}" if values.size > 1 else ""
        what = "normal float64 numbers" if values.size > 1 or name == "valuations" else "a normal float64 number"
        raise ValueError(f"{name} must be {what} (>= {_TINY!r}), got {float(values[i])!r}{where}: "
                         "payments proportional to it keep only a few bits; expected valuations in a smaller "
                         "currency unit (all multiplied by the same factor)")


_MAX = float(np.finfo(np.float64).max)


def largest_valuation(accuracy, cost="linear", *, menu_option=None):
    """Largest valuation whose contracts' payments are finite float64 numbers, at accuracy ``K``.

    Built-in costs ``c(v, eps) = v g(eps)`` only. Full information (``menu_option=None``): the largest
    SUM of valuations; the unbiased contract pays ``sum_i c(v_i, sqrt(2 / K))``, and the designed
    contract less (``A_u`` is one of the contracts it chooses from). Menus (``menu_option`` 1 or 2): the
    largest ``v_high``; ``A_u`` pays ``2 c(v_high, sqrt(2 / K))``, at least what option 1 pays, and
    option 2 (one seller) pays at most the pooled contract ``a = 1``, ``b = sqrt((K - 1/4) / 2)``:
    ``c(v_high, sqrt(2 / (K - 1/4)))``. ``0.0`` when ``g`` itself overflows (the exponential cost
    below :data:`SMALLEST_EXPONENTIAL_ACCURACY`).
    """
    K = _check_accuracy(accuracy)
    cost = _resolve_cost(cost)
    g = _payment_bound(np.array([1.0]), K, cost, menu_option)
    if not np.isfinite(g):
        return 0.0
    limit = min(_MAX, _MAX / g)
    while not np.isfinite(limit * g):  # the division may round up by an ulp
        limit = float(np.nextafter(limit, 0.0))
    return limit


def _unbiased_epsilon(K):
    """``sqrt(2 / K)`` as the unbiased contract (``1 / b``, ``b = sqrt(K / 2)``, rounded up as
    :func:`seller_epsilons` delivers it) and the menus compute it (the roundings differ by an ulp)."""
    b = np.sqrt(K / 2.0)
    return max(float(np.sqrt(2.0 / K)), float(1.0 / b), float(seller_epsilons(np.ones(1), b)[0]))


def _smallest_exponential_accuracy():
    """The smallest ``K`` at which the exponential cost ``v (exp(eps) - 1)`` of the unbiased contract's
    ``eps`` (:func:`_unbiased_epsilon`) is finite: ``2 / log(MAX)**2`` moved up by the ulps the roundings of
    ``eps`` take (at ``2 / log(MAX)**2`` itself the delivered ``eps`` was an ulp above ``log(MAX)``, and the
    unbiased payment of a valuation of 1, which ``largest_valuation`` allowed, was inf)."""
    K = 2.0 / float(np.log(_MAX)) ** 2
    with np.errstate(over="ignore"):
        while not np.isfinite(np.expm1(_unbiased_epsilon(K))):
            K = float(np.nextafter(K, np.inf))
    return K


#: exp(eps) - 1 is finite up to eps = log(MAX): the exponential cost's unbiased contract (eps = sqrt(2 / K))
#: overflows for every valuation below this accuracy target
SMALLEST_EXPONENTIAL_ACCURACY = _smallest_exponential_accuracy()


def _payment_bound(values, K, cost, menu_option):
    """The bound of :func:`largest_valuation` on what the contracts pay for ``values`` (inf when it
    overflows): ``sum_i c(v_i, sqrt(2 / K))`` (full information), twice it (menus), and for option 2 also
    the pooled contract's ``c(v_high, sqrt(2 / (K - 1/4)))``."""
    with np.errstate(over="ignore", divide="ignore"):
        pay = float(np.sum(cost(values, _unbiased_epsilon(K)))) * (1.0 if menu_option is None else 2.0)
        if menu_option == 2 and K > 0.25:
            pay = max(pay, float(np.sum(cost(values, np.sqrt(2.0 / (K - 0.25))))))
    return pay


def _check_payable(values, K, cost, *, name, menu_option=None):
    """Refuse valuations whose payments overflow float64, by the bounds of :func:`largest_valuation`
    (``[1e308]`` gave inf payments and NaN savings, the linear closed form and the menus a SolverError)."""
    with np.errstate(over="ignore"):
        total = float(np.sum(values))
    pay = _payment_bound(values, K, cost, menu_option)
    if np.isfinite(total) and np.isfinite(pay):
        return
    what = f"{name} = {float(values[0])!r}" if values.size == 1 else (
        f"{name} summing to {plain_value(total)!r} (largest {float(np.max(values))!r})")
    bound = ("the unbiased contract's payment " + ("sum_i c(v_i, sqrt(2/K))" if menu_option is None else
             "2 c(v_high, sqrt(2/K))" if menu_option == 1 else
             "2 c(v_high, sqrt(2/K)) or option 2's bound c(v_high, sqrt(2/(K - 1/4)))"))
    head = f"{what}: {bound} at accuracy K = {K!r} overflows float64"
    if not cost.builtin:
        raise ValueError(f"{head} (cost {cost.name}); expected smaller valuations (another currency unit)")
    limit = largest_valuation(K, cost, menu_option=menu_option)
    if limit == 0.0:
        raise ValueError(f"{head}: exp(sqrt(2/K)) overflows for K < {SMALLEST_EXPONENTIAL_ACCURACY!r}; expected "
                         f"K >= {SMALLEST_EXPONENTIAL_ACCURACY!r} with the exponential cost")
    raise ValueError(f"{head}; expected {'a sum of ' if values.size > 1 else ''}{name} <= {format_bound(limit)} with "
                     f"cost {cost.name!r} at this K (rescale them, for example to another currency unit)")


# ----------------------------------------------------------------------------- full information


@dataclass
class Contract:
    """Contracts offered to sellers whose valuations are known (full information).

    Attributes
    ----------
    valuations : ndarray
    a : ndarray
        Weights of :class:`BiasedLaplaceMechanism`, in ``[0, 1]``.
    b : float
        Laplace scale.
    epsilons : ndarray
        ``a_i / b`` in exact arithmetic rounded up: never below what the noise delivers.
    payments : ndarray
        ``p_i = c(v_i, epsilon_i)`` (IR binds at the optimum).
    total_payment : float
    accuracy : float
        ``K`` achieved, ``(sum (1 - a_i) / 2)^2 + 2 b^2``.
    target_accuracy : float
    cost : str
    unbiased_payment : float
        Total payment of the best contract with the unbiased mechanism ``A_u``
        at the same target (:func:`unbiased_contract`).
    """

    valuations: np.ndarray
    a: np.ndarray
    b: float
    epsilons: np.ndarray
    payments: np.ndarray
    total_payment: float
    accuracy: float
    target_accuracy: float
    cost: str
    unbiased_payment: float = float("nan")

    def mechanism(self, random_state=None):
        """The :class:`BiasedLaplaceMechanism` implementing this contract.

        Parameters
        ----------
        random_state : None, int or Generator, default=None
            Source of the mechanism's noise (``None``: the operating system's
            entropy; a seed for tests and experiments only).

        Returns
        -------
        BiasedLaplaceMechanism
            With this contract's weights ``a`` and scale ``b``.
        """
        return BiasedLaplaceMechanism(self.a, self.b, random_state=random_state)


def _make_contract(v, a, b, K, cost):
    a = np.clip(np.asarray(a, dtype=float), 0.0, 1.0)
    eps = seller_epsilons(a, b)  # what the mechanism's noise delivers, rounded up (a / b could be an ulp below)
    pay = cost(v, eps)
    achieved = biased_laplace_mse(np.sum(1.0 - a) / 2.0, b)
    return Contract(valuations=v, a=a, b=float(b), epsilons=eps, payments=pay,
                    total_payment=float(pay.sum()), accuracy=achieved, target_accuracy=K,
                    cost=cost.name)


def unbiased_contract(valuations, accuracy, cost="linear"):
    """Best contract using the unbiased Laplace mechanism ``A_u`` (all ``a_i = 1``).

    ``A_u`` has MSE ``2 b^2`` and gives every seller ``epsilon = 1 / b``; payments
    decrease with ``b``, so the best choice is ``b = sqrt(K / 2)`` and
    ``p_i = c(v_i, sqrt(2 / K))``.

    Parameters
    ----------
    valuations : array-like of shape (n_sellers,)
        Privacy valuations, > 0.
    accuracy : float
        Target ``K`` > 0.
    cost : {'linear', 'exponential'} or callable, default='linear'

    Returns
    -------
    contract : Contract
    """
    v = _check_valuations(valuations)
    K = _check_accuracy(accuracy)
    cost = _resolve_cost(cost)
    _check_payable(v, K, cost, name="valuations")
    out = _make_contract(v, np.ones(v.size), np.sqrt(K / 2.0), K, cost)
    out.unbiased_payment = out.total_payment
    return out


def _linear_closed_form(v, K):
    r"""Exact optimum for ``c = v eps`` (the slides' closed-form theorem).

    For a fixed ``b`` the accuracy constraint reads ``sum_i a_i >= A(b) =
    n - 2 s`` with ``s = sqrt(K - 2 b^2)``, and ``min sum_i v_i a_i / b`` is a
    fractional knapsack: fill the cheapest sellers first. On the segment where
    ``k`` sellers are full and seller ``k + 1`` is partial (``A in [k, k + 1]``),
    the payment is ``P(s) = (c_0 - 2 v_{k+1} s) / b(s)`` with
    ``c_0 = V_k + (n - k) v_{k+1}``, ``V_k`` the sum of the ``k`` smallest
    valuations and ``b(s) = sqrt((K - s^2) / 2)``. Its derivative in ``b`` has
    the sign of ``2 v_{k+1} K / s - c_0``, which increases with ``b``: ``P`` is
    unimodal on the segment with minimum at ``s* = 2 v_{k+1} K / c_0``, clipped
    to the segment. The optimum is the best of these ``n`` candidates.
    """
    n = v.size
    order = np.argsort(v, kind="stable")
    vs = v[order]
    V = np.concatenate([[0.0], np.cumsum(vs)])
    sqK = np.sqrt(K)
    # all n segments at once, elementwise the same operations as one segment at a time (a loop building the
    # weights each time the best improved took 11 s for 10^5 sellers, 1.6 s for 3 10^4)
    k = np.arange(n)
    m = (n - k).astype(float)
    s_lo = np.maximum(0.0, (m - 1.0) / 2.0)
    s_hi = np.minimum(m / 2.0, sqK)
    Vk = V[:-1]
    c0 = Vk + m * vs
    with np.errstate(divide="ignore", invalid="ignore"):
        q, r = Vk / c0, vs / c0            # q + (n - k) r = 1
    s_star = 2.0 * K * r                   # 2 vk K overflowed for vk near float64's max
    s = np.clip(s_star, s_lo, s_hi)
    b2 = (K - s * s) / 2.0
    partial = m - 2.0 * s                  # a_{k+1} = A - k, A = n - 2 s
    # near the end s* -> sqrt(K) (b -> 0) or a_{k+1} -> 0, K - s*^2 = K (1 - 4 K r^2) and (n - k) - 2 s*
    # cancel: from q and r instead, 1 - 4 K r^2 = q^2 + 2 (n - k) q r + ((n - k)^2 - 4 K) r^2 and
    # (n - k) - 2 s* = (n - k) q + ((n - k)^2 - 4 K) r (exact integers and 4 K, no square root). K - s*^2
    # computed directly was 0 for v = (1, 1e-17), K = 1/4 (s* = 0.5 / (1 + 1e-17) rounds to 0.5): that
    # segment, the optimal one, was skipped (a dearer contract, or none at all: SolverError)
    inner = s == s_star
    e = m * m - 4.0 * K
    b2 = np.where(inner & (s * s > K / 2.0), K * (q * q + 2.0 * m * q * r + e * r * r) / 2.0, b2)
    partial = np.where(inner & (partial < 0.5), np.minimum(np.maximum(m * q + e * r, 0.0), 1.0), partial)
    ok = (s_lo < sqK) & (b2 > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.sqrt(np.where(ok, b2, 1.0))
        pay = np.where(ok, (Vk + partial * vs) / b, np.inf)
    pay = np.where(np.isnan(pay), np.inf, pay)
    if not np.isfinite(pay).any():  # pragma: no cover - K < n^2/4 always leaves a feasible segment
        raise SolverError(f"no feasible segment for valuations {v.tolist()!r} and K = {K!r}")
    best = int(np.argmin(pay))             # the first of equal payments, as the loop kept it
    a_sorted = np.zeros(n)
    a_sorted[:best] = 1.0
    a_sorted[best] = partial[best]
    a = np.empty(n)
    a[order] = a_sorted
    return a, float(b[best])


def _remainder(m, K, bs, s, r):
    """``m - 2 s`` with ``s = sqrt(K - 2 b^2)`` (``r = K - 2 b^2``), without cancellation:
    ``(m^2 - 4 K + 8 b^2) / (m + 2 s)``; ``m`` where ``r <= 0`` (no noise budget left: every weight 1)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r > 0, ((m * m - 4.0 * K) + 8.0 * bs**2) / (m + 2.0 * s), m)


#: the first bisection step of the water-filling that may stop it early (80: never; the tests compare both)
_STOP_FROM = 40


def _water_fill(cost, v, bs, K):
    """``min sum_i c(v_i, eps_i)`` s.t. ``sum_i eps_i >= A(b) / b``, ``0 <= eps_i <= 1 / b``.

    ``A(b) = n - 2 sqrt(K - 2 b^2)``. Vectorised over rows: ``bs`` has shape ``(G,)``; returns
    ``eps`` of shape ``(G, n)``. KKT for this convex separable problem: ``eps_i
    = clip((dc/deps)^{-1}(v_i, mu), 0, 1 / b)`` with the multiplier ``mu`` set by
    bisection so that the sum constraint binds.

    The constraint is tested on the sellers not yet full: with ``j`` sellers at ``eps = 1 / b`` the others
    must sum to ``(n - j - 2 s) / b``, computed without cancellation (:func:`_remainder`). A partial seller's
    share below an ulp of ``A / b`` was lost in ``sum_i eps_i`` (a callable ``v * eps`` with ``v = (1, 1e-30)``
    and ``K = 1/4`` paid 1.9e7 times the optimum: the optimum's partial weight is ``1e-30``).
    """
    n = v.size
    v = v[None, :]
    bs = np.asarray(bs, dtype=float)[:, None]
    upper = 1.0 / bs
    r = K - 2.0 * bs**2
    s = np.sqrt(np.maximum(r, 0.0))
    # what the sellers not full must sum to (times b), for each count m = n - j of them: one table per block
    need_by_m = _remainder(np.arange(n + 1, dtype=float)[None, :], K, bs, s, r)
    need_by_m[:, 0] = -np.inf                        # every seller full: nothing more to buy
    required = need_by_m[:, n:].copy()               # A(b), for the rows needing nothing
    # the same table times 1 / b, indexed by the count j of full sellers (column j: m = n - j), so that a
    # bisection step reads its requirement with one index (the same products as need_by_m[m] * upper)
    need_by_j = need_by_m[:, ::-1] * upper
    row = np.arange(bs.shape[0])[:, None]

    def state(mu):
        eps = cost.inv_deriv(v, mu, upper)
        full = eps >= upper
        rest = np.add.reduce(np.where(full, 0.0, eps), axis=1, keepdims=True)
        need = need_by_j[row, np.add.reduce(full, axis=1, keepdims=True, dtype=np.intp)]
        return eps, full, rest, need

    ups = np.broadcast_to(upper, (upper.shape[0], v.shape[1]))
    with np.errstate(invalid="ignore", over="ignore"):
        mu_hi = np.max(cost.deriv(v, ups), axis=1, keepdims=True) * (1 + 1e-9) + 1e-300
        # below every seller's marginal cost at 0 nobody sells: a positive start for a bisection on log(mu)
        # (the multiplier of a partial seller with v = 1e-300 is 1e-300, beyond 80 halvings of [0, 1])
        floor = np.min(cost.deriv(v, np.zeros_like(ups)), axis=1, keepdims=True) * (1 - 1e-9)
    mu_lo = np.where(np.isfinite(floor) & (floor > 0) & (floor < mu_hi), floor, 0.0)
    spans = True
    for step in range(80):
        # geometric midpoint while the bracket spans decades (mu_lo + mu_hi overflowed near float64's max)
        mu = 0.5 * mu_lo + 0.5 * mu_hi
        if spans:
            geo = (mu_lo > 0) & (mu_hi > 4.0 * mu_lo)
            mu = np.where(geo, np.sqrt(mu_lo) * np.sqrt(mu_hi), mu)
            # a bracket only shrinks: once every row's is within a factor 4 above 0, it stays so
            spans = bool(geo.any()) or not (mu_lo > 0).all()
        _, _, rest, need = state(mu)
        short = rest < need
        new_lo = np.where(short, mu, mu_lo)
        new_hi = np.where(short, mu_hi, mu)
        # a step leaving every row's bracket as it was (its ends adjacent floats, ~55 steps in) leaves it so
        # from then on: the remaining steps would change nothing (they took a third of a small design_contract)
        if step >= _STOP_FROM and not ((new_lo != mu_lo) | (new_hi != mu_hi)).any():
            break
        mu_lo, mu_hi = new_lo, new_hi
    # at a kink (linear pieces, non-strictly convex costs) the sum jumps across the requirement between
    # mu_lo and mu_hi: both are KKT points of the same multiplier, so the convex combination meeting the
    # constraint exactly is optimal; the sellers full at mu_lo stay full, the others share what is missing
    eps_hi = cost.inv_deriv(v, mu_hi, upper)
    eps_lo, full_lo, rest_lo, need_lo = state(mu_lo)
    gain = np.where(full_lo, 0.0, eps_hi - eps_lo).sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = np.where(gain > 0, (need_lo - rest_lo) / gain, 1.0)
    theta = np.clip(theta, 0.0, 1.0)
    eps = np.where(full_lo, eps_lo, eps_lo + theta * (eps_hi - eps_lo))
    eps = np.where(required <= 0, 0.0, eps)
    return eps


#: entries (rows x sellers) the numeric contract search water-fills at once
_FILL_ENTRIES = 2**20


def _numeric_full_info(v, K, cost):
    """Outer search over ``b`` (grid, then bounded Brent refinement) of the convex inner problem."""
    n = v.size
    b_max = np.sqrt(K / 2.0)

    def payments(bs):
        bs = np.atleast_1d(np.asarray(bs, dtype=float))
        # blocks of rows, each row on its own: the grid's 360 rows of n sellers held ~15 arrays of 360 n floats
        # at once (1.4 GB for 10^5 sellers)
        rows = max(1, _FILL_ENTRIES // n)
        if bs.size <= rows:
            return block(bs)
        return np.concatenate([block(bs[i:i + rows])[0] for i in range(0, bs.size, rows)]), None   # (no eps)

    def block(bs):
        r = K - 2.0 * bs**2
        s = np.sqrt(np.maximum(r, 0.0))
        # A = n - 2 s = (n^2 - 4 K + 8 b^2) / (n + 2 s): n - 2 s cancelled for a tiny b (K - 2 b^2 rounded to K)
        A = np.maximum(_remainder(float(n), K, bs, s, r), 0.0)
        eps = _water_fill(cost, v, bs, K)
        with np.errstate(over="ignore", invalid="ignore"):  # a tiny b can cost more than float64 holds: inf,
            pay = cost(v[None, :], eps).sum(axis=1)             # never the optimum
        # where the water-filling could not meet the accuracy (a callable cost's numerical derivative at eps = 1 / b
        # overflowed, inf - inf), its eps cost next to nothing: that b is infeasible, not the cheapest (a callable
        # v * expm1(eps) was given that b and missed every K <= 0.1 with a SolverError; the built-in cost was not)
        met = eps.sum(axis=1) >= (A / bs) * (1.0 - 1e-9)
        return np.where(met & ~np.isnan(pay), pay, np.inf), eps

    # a geometric grid below b_max / 200 (one point per decade): with valuations far apart the optimum b is
    # about sqrt(K v_min / v_max) for a cost linear in eps, and the linear grid's floor b_max / 200 paid 1.9 times
    # the optimum for v = (1, 1e-6) and 5.6e5 times for v = (1, 1e-17) (cost=lambda v, e: v * e)
    grid = b_max * np.concatenate([np.logspace(-160, np.log10(1.0 / 200), 160, endpoint=False),
                                   np.linspace(1.0 / 200, 1.0, 200)])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        pay, _ = payments(grid)
    j = int(np.argmin(pay))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # inf payments (tiny b, exponential cost)
        res = minimize_scalar(lambda b: payments(b)[0][0], bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-12 * hi})
    b = float(res.x) if res.fun <= pay[j] else float(grid[j])
    eps = payments(b)[1][0]
    return np.where(eps >= 1.0 / b, 1.0, np.clip(eps * b, 0.0, 1.0)), b   # (1 / b) b may round below 1


def design_contract(valuations, accuracy, cost="linear"):
    r"""Cheapest contracts under full information, with the biased Laplace mechanism.

    Solves (slides, "Under full information: n sellers")

    .. math::

        \min_{a \in [0,1]^n,\ b > 0,\ p} \sum_i p_i \quad \text{s.t.}\quad
        p_i \ge c(v_i, a_i / b)\ \text{(IR)},\qquad
        \Big(\sum_i \tfrac{1 - a_i}{2}\Big)^2 + 2 b^2 \le K\ \text{(AC)}.

    IR binds at the optimum. If ``K >= n^2 / 4`` the broker answers with pure
    noise (all ``a_i = 0``) and pays nothing. Otherwise:

    * ``cost='linear'`` (``c = v eps``): closed form (the slides' theorem),
      see :func:`_linear_closed_form`: sellers are filled in increasing order of
      valuation, and the optimal ``b`` on each segment is explicit.
    * convex costs (``'exponential'``, ``c = v (e^eps - 1)``, or a callable
      ``cost(v, eps)`` vectorised, increasing and convex in ``eps`` with
      ``cost(v, 0) = 0``): for fixed ``b`` the problem in ``eps_i = a_i / b`` is
      convex and separable (``sum eps_i >= (n - 2 sqrt(K - 2 b^2)) / b``,
      ``0 <= eps_i <= 1 / b``) and is solved exactly by water-filling; the
      one-dimensional search over ``b`` uses a grid and
      ``scipy.optimize.minimize_scalar``.

    Sellers with higher valuations get lower ``epsilon_i``: personalised privacy.

    Parameters
    ----------
    valuations : array-like of shape (n_sellers,)
        Privacy valuations ``v_i``, > 0 and normal float64 numbers (subnormal ones are refused).
    accuracy : float
        Target ``K`` > 0 on the worst-case mean squared error.
    cost : {'linear', 'exponential'} or callable, default='linear'

    Returns
    -------
    contract : Contract
        With ``unbiased_payment``, the total payment of :func:`unbiased_contract`.

    Raises
    ------
    InfeasibleBudgetError
        ``accuracy <= 0``: no differentially private mechanism meets it.

    References
    ----------
    .. [1] M. M. Khalili, X. Zhang, M. Liu, "Contract Design for Purchasing
       Private Data Using a Biased Differentially Private Algorithm" (slides:
       contract under full information; theorem "optimal solution under linear
       cost"; numerical example v = 5, 10 with c = v (e^eps - 1)).

    Examples
    --------
    >>> from privrelease.contracts import design_contract
    >>> c = design_contract([5.0, 10.0], accuracy=0.5, cost="exponential")
    >>> bool(c.total_payment < c.unbiased_payment), bool(c.epsilons[0] > c.epsilons[1])
    (True, True)
    >>> design_contract([1.0], accuracy=0.3).total_payment  # K > 1/4: pure noise
    0.0
    """
    v = _check_valuations(valuations)
    K = _check_accuracy(accuracy)
    cost = _resolve_cost(cost)
    _check_payable(v, K, cost, name="valuations")
    cost.check_shape(v, K)
    n = v.size
    if K >= n * n / 4.0:
        out = _make_contract(v, np.zeros(n), np.sqrt((K - n * n / 4.0) / 2.0), K, cost)
    else:
        w = v / v.max() if cost.builtin else v  # the same a and b; no overflow inside the search
        if cost.builtin and cost.name == "linear":  # (a callable named 'linear' is not v * eps)
            a, b = _linear_closed_form(w, K)
        else:
            a, b = _numeric_full_info(w, K, cost)
        out = _make_contract(v, a, b, K, cost)
    if not out.accuracy <= K * (1 + 1e-7):
        raise SolverError(f"contract misses the accuracy target: K = {out.accuracy!r} > {K!r}")
    out.unbiased_payment = unbiased_contract(v, K, cost).total_payment
    return out


# ----------------------------------------------------------------------------- menus


@dataclass
class Menu:
    """A menu of two contracts for two sellers of unknown type (information asymmetry).

    Attributes
    ----------
    option : int
        1: both sellers are offered the menu; 2: one seller is (the other's data
        enter with weight 0).
    a_high, a_low : float
        Weights for a seller who picks the high- / low-valuation contract.
    b : float
        Laplace scale.
    eps_high, eps_low : float
        ``a / b``, rounded up as :attr:`Contract.epsilons` (``eps_high <= eps_low``: high valuations sell
        less privacy).
    p_high, p_low : float
        Payments (IR binds for the high type, IC for the low type).
    expected_payment : float
        Expected total payment over the sellers' types.
    accuracy : float
        Expected mean squared error ``e(a_L, a_H, b)`` achieved.
    target_accuracy : float
    unbiased_payment : float
        Total payment of the best single contract with ``A_u`` (both sellers,
        ``b = sqrt(K/2)``, each paid ``c(v_high, 1/b)`` so that both types accept).
    regime : str
        ``'menu'`` (``0 < a_high < a_low``), ``'pooling'`` (``a_high = a_low > 0``),
        ``'low type only'`` (``a_high = 0 < a_low``: a single contract that only
        the low-valuation type accepts) or ``'pure noise'``.
    v_low, v_high, prob_high : float
    cost : str
    """

    option: int
    a_high: float
    a_low: float
    b: float
    eps_high: float
    eps_low: float
    p_high: float
    p_low: float
    expected_payment: float
    accuracy: float
    target_accuracy: float
    unbiased_payment: float
    regime: str
    v_low: float
    v_high: float
    prob_high: float
    cost: str
    _cost: object = field(default=None, repr=False, compare=False)

    def utilities(self, *, unit=1.0):
        """Utility of each type for each contract: ``{(type, contract): p - c(v_type, eps)}``.

        ``unit`` divides valuations and payments (built-in costs scale with ``v``): the high type's
        cost of the low contract may exceed float64 (then ``-inf``) where its utility in units of
        ``v_high`` does not.

        Parameters
        ----------
        unit : float, default=1.0
            Unit of valuations and payments in the result.

        Returns
        -------
        dict
            ``(type, contract) -> utility`` for type and contract in ``"high"``, ``"low"``.
        """
        c = self._cost
        out = {}
        for t, v in (("high", self.v_high), ("low", self.v_low)):
            for k, p, e in (("high", self.p_high, self.eps_high), ("low", self.p_low, self.eps_low)):
                with np.errstate(over="ignore"):
                    out[(t, k)] = float(p / unit - c(v / unit, e))
        return out


def _menu_accuracy(option, pi, a_h, a_l, b):
    """Expected MSE ``e(a_L, a_H, b)`` of the slides, for options 1 and 2."""
    u, w = 1.0 - a_h, 1.0 - a_l
    if option == 1:
        q = pi**2 * u**2 + (1 - pi) ** 2 * w**2 + 2 * pi * (1 - pi) * ((u + w) / 2) ** 2
    else:
        q = pi * ((1 + u) / 2) ** 2 + (1 - pi) * ((1 + w) / 2) ** 2
    return 2.0 * b**2 + q


def _largest_w(option, pi, u, r):
    """Largest ``w = 1 - a_L`` with ``Q(u, w) <= r`` (``-inf`` where none, ``inf`` if unconstrained)."""
    u = np.asarray(u, dtype=float)
    r = np.asarray(r, dtype=float)
    if option == 1:
        A = (1 - pi) ** 2 + pi * (1 - pi) / 2.0
        B = pi * (1 - pi) * u
        C = (pi**2 + pi * (1 - pi) / 2.0) * u**2 - r
    else:
        # pi ((1+u)/2)^2 + (1-pi) ((1+w)/2)^2 <= r  <=>  (1 - pi)/4 (1 + w)^2 <= r - pi ((1+u)/2)^2
        A = (1 - pi) / 4.0
        B = (1 - pi) / 2.0
        C = (1 - pi) / 4.0 + pi * ((1 + u) / 2) ** 2 - r
    if A <= 1e-15:
        return np.where(C <= 0, np.inf, -np.inf)
    disc = B * B - 4 * A * C
    with np.errstate(invalid="ignore"):
        root = (-B + np.sqrt(np.maximum(disc, 0.0))) / (2 * A)
    return np.where(disc >= 0, root, -np.inf)


def design_menu(v_low, v_high, prob_high, accuracy, *, option=1, cost="linear"):
    r"""Cheapest menu of contracts for two sellers of private type (information asymmetry).

    Each seller's valuation is ``v_high`` with probability ``pi = prob_high``
    and ``v_low`` otherwise, independently, and known only to her. The broker
    offers ``{(p_H, eps_H), (p_L, eps_L)}`` and uses weights ``a_H, a_L`` and a
    common noise scale ``b`` (``eps = a / b``). Slides' problem:

    .. math::

        \min\ \mathbb{E}[p] \quad\text{s.t.}\quad
        p_i \ge c(v_i, \epsilon_i)\ \text{(IR)},\quad
        p_i - c(v_i, \epsilon_i) \ge p_j - c(v_i, \epsilon_j)\ \text{(IC)},\quad
        e(a_L, a_H, b) \le K\ \text{(AC)},

    with, for option 1 (both sellers get the menu),
    ``E[p] = 2 (pi p_H + (1 - pi) p_L)`` and
    ``e = 2b^2 + pi^2 (1-a_H)^2 + (1-pi)^2 (1-a_L)^2 + 2 pi (1-pi) ((2 - a_H - a_L)/2)^2``;
    for option 2 (one seller gets it, the other's weight is 0)
    ``E[p] = pi p_H + (1 - pi) p_L`` and
    ``e = 2b^2 + pi ((2 - a_H)/2)^2 + (1 - pi) ((2 - a_L)/2)^2``.

    **Reduction** (as on the slides: IR binds for the high type, IC for the low
    type, IR of the low type is redundant). For costs ``c(v, eps)`` whose
    difference ``c(v_H, .) - c(v_L, .)`` is non-decreasing (true for
    ``v g(eps)``, so for both built-in costs), adding the two IC constraints
    shows ``eps_H <= eps_L`` is necessary, and for fixed ``eps`` the least
    payments are ``p_H = c(v_H, eps_H)`` and
    ``p_L = c(v_L, eps_L) + c(v_H, eps_H) - c(v_L, eps_H)``. Then ``E[p]``
    increases in ``a_L``, so for given ``(b, a_H)`` the best ``a_L`` is the
    smallest one meeting AC and ``a_L >= a_H`` (a root of a quadratic). The
    remaining two-dimensional problem over ``(b, a_H)`` is solved by a grid
    search refined with Nelder-Mead (``scipy.optimize.minimize``); the
    returned menu is then checked against IR, IC and AC, and a
    :class:`~privrelease.exceptions.SolverError` is raised if any fails.

    Parameters
    ----------
    v_low, v_high : float
        Valuations, ``0 < v_low <= v_high``.
    prob_high : float
        ``pi``, probability of the high valuation, in ``[0, 1]``.
    accuracy : float
        Target ``K`` on the expected mean squared error; option 2 needs ``K > 1/4``.
    option : {1, 2}, default=1
    cost : {'linear', 'exponential'} or callable, default='linear'

    Returns
    -------
    menu : Menu

    Raises
    ------
    ValueError
        Negative or unordered valuations, ``prob_high`` outside ``[0, 1]``.
    InfeasibleBudgetError
        ``K <= 0``, or ``K <= 1/4`` with option 2 (``smallest_feasible`` is then 0.25,
        as an infimum).

    References
    ----------
    .. [1] M. M. Khalili, X. Zhang, M. Liu, "Contract Design for Purchasing
       Private Data Using a Biased Differentially Private Algorithm" (slides:
       contract under information asymmetry, options 1 and 2, "Simplifying the
       optimization", "Broker's decision", example v_H = 5, v_L = 1, pi = 0.5).

    Examples
    --------
    >>> from privrelease.contracts import design_menu
    >>> m = design_menu(1.0, 5.0, 0.5, accuracy=0.2)
    >>> bool(m.expected_payment < m.unbiased_payment), bool(m.eps_high <= m.eps_low)
    (True, True)
    """
    vl = check_number(v_low, "v_low")
    vh = check_number(v_high, "v_high")
    if vl <= 0 or vh <= 0:
        raise ValueError(f"valuations must be > 0, got v_low={v_low!r}, v_high={v_high!r}")
    _check_normal(vl, "v_low")
    _check_normal(vh, "v_high")
    if vl > vh:
        raise ValueError(f"valuations must be ordered, v_low <= v_high; got v_low={v_low!r} > "
                         f"v_high={v_high!r}")
    pi = check_number(prob_high, "prob_high", low=0.0, high=1.0)
    K = _check_accuracy(accuracy)
    # an integer only: 1.0 was accepted (and stored in the Menu) while True is refused
    if (isinstance(option, (bool, np.bool_)) or not isinstance(option, numbers.Integral)
            or option not in (1, 2)):
        raise ValueError(f"option must be 1 (menu to both sellers) or 2 (menu to one seller), as an integer, "
                         f"got {plain_value(option)!r}")
    option = int(option)
    cost = _resolve_cost(cost)
    _check_payable(np.array([vh]), K, cost, name="v_high", menu_option=option)
    cost.check_shape(np.array([vl, vh]), K)
    q_min = 0.0 if option == 1 else 0.25
    if K <= q_min:
        raise InfeasibleBudgetError(
            f"option 2 leaves one seller out, so its expected MSE exceeds 1/4 + 2 b^2; "
            f"accuracy K = {accuracy!r} <= 0.25 cannot be met", smallest_feasible=0.25)
    weight = 2.0 if option == 1 else 1.0
    # the search on valuations scaled by v_high (the same menu for a built-in cost v g(eps)): no overflow
    sl, sh = (vl / vh, 1.0) if cost.builtin else (vl, vh)

    def expected_payment(a_h, a_l, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            e_h = np.where(a_h > 0, a_h / b, 0.0)
            e_l = np.where(a_l > 0, a_l / b, 0.0)
        p_h = cost(sh, e_h)
        p_l = cost(sl, e_l) + p_h - cost(sl, e_h)
        return weight * (pi * p_h + (1 - pi) * p_l)

    def evaluate(t, u):
        """Objective over (t = b / b_max, u = 1 - a_H); returns (E[p], a_h, a_l, b)."""
        b = t * b_max
        # K - 2 b^2 = q_min + (K - q_min) (1 - t^2): 0 at t = 1, where K - 2 b_max^2 rounded below 0 for one K in
        # three (1e-300, 1e-250, ...), the unbiased contract a = 1, b = b_max was infeasible and the menu found
        # paid 4.6e-4 more than it
        w = np.minimum(np.minimum(_largest_w(option, pi, u, q_min + (K - q_min) * ((1.0 - t) * (1.0 + t))), 1.0), u)
        feasible = (w >= 0) & (b > 0)
        a_h, a_l = 1.0 - u, 1.0 - np.where(feasible, w, 0.0)
        with np.errstate(invalid="ignore", over="ignore"):
            val = expected_payment(a_h, a_l, np.where(b > 0, b, 1.0))
        # inf - inf (exponential cost at tiny b) is no candidate
        val = np.where(feasible & ~np.isnan(val), val, np.inf)
        return val, a_h, a_l, b

    if _menu_accuracy(option, pi, 0.0, 0.0, 0.0) <= K:  # pure noise meets the target
        a_h = a_l = 0.0
        b = float(np.sqrt((K - _menu_accuracy(option, pi, 0.0, 0.0, 0.0)) / 2.0))
    else:
        b_max = np.sqrt((K - q_min) / 2.0)

        def best_over_t(u):
            """For each ``u``, the best ``t`` in ``(0, t_max(u)]`` (``t_max``: the largest feasible, by bisection;
            feasibility falls with ``t``), by a grid then golden sections: ``(values, t)``."""
            u = np.asarray(u, dtype=float)
            lo, hi = np.zeros_like(u), np.ones_like(u)
            ok_hi = np.isfinite(evaluate(hi, u)[0])
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                ok = np.isfinite(evaluate(mid, u)[0])
                lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
            t_max = np.where(ok_hi, 1.0, lo)
            grid = t_max[:, None] * np.linspace(1.0 / 48, 1.0, 48)[None, :]
            vals = evaluate(grid, np.broadcast_to(u[:, None], grid.shape))[0]
            k = np.argmin(vals, axis=1)
            rows = np.arange(u.size)
            a = grid[rows, np.maximum(k - 1, 0)] * np.where(k > 0, 1.0, 0.5)
            c = grid[rows, np.minimum(k + 1, grid.shape[1] - 1)]
            g = (np.sqrt(5.0) - 1.0) / 2.0
            for _ in range(50):
                x1, x2 = c - g * (c - a), a + g * (c - a)
                f1, f2 = evaluate(x1, u)[0], evaluate(x2, u)[0]
                a, c = np.where(f1 < f2, a, x1), np.where(f1 < f2, x2, c)
            t = 0.5 * (a + c)
            cand = np.stack([t, grid[rows, k], t_max])
            cv = np.stack([evaluate(x, u)[0] for x in cand])
            pick = np.argmin(cv, axis=0)
            return cv[pick, rows], cand[pick, rows]

        # for each u = 1 - a_H the best b up to the accuracy boundary, then u by zooming: the optimum often sits
        # on that boundary (a_L = 1, w clipped to 0, with a small a_H), beside infeasible points a simplex in
        # (t, u) could not cross; a grid of steps 1/150 in t and 0.01 in a_H paid up to 10.8 % more
        us = np.linspace(0.0, 1.0, 201)
        vals, ts = best_over_t(us)
        j = int(np.argmin(vals))
        best, start = float(vals[j]), np.array([ts[j], us[j]])
        du = 2.0 / 200
        for _ in range(6):
            us = np.linspace(max(start[1] - du, 0.0), min(start[1] + du, 1.0), 41)
            vals, ts = best_over_t(us)
            j = int(np.argmin(vals))
            if vals[j] <= best:
                best, start = float(vals[j]), np.array([ts[j], us[j]])
            du /= 10.0

        def f(z):
            t, u = z
            if not (0 < t <= 1 and 0 <= u <= 1):
                return np.inf
            return float(evaluate(t, u)[0])

        res = minimize(f, start, method="Nelder-Mead",
                       options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000})
        z = res.x if res.fun <= best else start
        _, a_h, a_l, b = evaluate(z[0], z[1])
        a_h, a_l, b = float(a_h), float(a_l), float(b)
        if not np.isfinite(f(z)):
            raise SolverError(f"no feasible menu found for K = {K!r}")

    menu = _build_menu(option, pi, vl, vh, a_h, a_l, b, K, cost, weight)
    _verify_menu(menu)
    figures = [menu.p_high, menu.p_low, menu.expected_payment, menu.unbiased_payment]
    if not np.all(np.isfinite(figures)):  # p_low = expected / (1 - pi) at most: beyond the bound above
        unit = _build_menu(option, pi, vl / vh, 1.0, a_h, a_l, b, K, cost, weight)
        largest = _MAX / max(unit.p_high, unit.p_low, unit.expected_payment, unit.unbiased_payment)
        raise ValueError(f"v_high = {v_high!r}: this menu's payments (p_high, p_low) overflow float64 at "
                         f"K = {K!r}, prob_high = {prob_high!r}; expected v_high <= {format_bound(largest)} for these "
                         "parameters (rescale the valuations, for example to another currency unit)")
    return menu


def _build_menu(option, pi, vl, vh, a_h, a_l, b, K, cost, weight):
    # the levels the mechanism's noise delivers, rounded up (fl(a / b) was below a / b for 16 of 28 random menus'
    # entries: IR and IC held for a guarantee smaller than the one given)
    e_h, e_l = (float(e) for e in seller_epsilons(np.array([a_h, a_l]), b))
    with np.errstate(over="ignore"):  # inf: refused by design_menu, naming the largest v_high accepted
        p_h = float(cost(vh, e_h))
        p_l = float((cost(vl, e_l) - cost(vl, e_h)) + p_h)  # each step <= p_l: no overflow below the max
    tol = 1e-9
    if a_l <= tol and a_h <= tol:
        regime = "pure noise"
    elif a_h <= tol:
        regime = "low type only"
    elif abs(a_l - a_h) <= 1e-7:
        regime = "pooling"
    else:
        regime = "menu"
    with np.errstate(over="ignore"):
        unbiased = 2.0 * float(cost(vh, np.sqrt(2.0 / K)))
        expected = weight * (pi * p_h + (1 - pi) * p_l)
    return Menu(option=option, a_high=a_h, a_low=a_l, b=b, eps_high=e_h, eps_low=e_l,
                p_high=p_h, p_low=p_l, expected_payment=expected,
                accuracy=float(_menu_accuracy(option, pi, a_h, a_l, b)), target_accuracy=K,
                unbiased_payment=unbiased, regime=regime, v_low=vl, v_high=vh, prob_high=pi,
                cost=cost.name, _cost=cost)


def _verify_menu(m):
    """IR, IC and AC at the returned menu; a violated constraint is a solver failure."""
    # in units of v_high for a built-in cost (the same menu): no overflow near float64's max
    unit = m.v_high if m._cost.builtin else 1.0
    u = m.utilities(unit=unit)
    scale = max(1.0, abs(m.p_high) / unit, abs(m.p_low) / unit)
    tol = 1e-8 * scale
    problems = []
    if u[("high", "high")] < -tol or u[("low", "low")] < -tol:
        problems.append(f"IR violated: utilities {u!r}")
    if u[("high", "high")] < u[("high", "low")] - tol or u[("low", "low")] < u[("low", "high")] - tol:
        problems.append(f"IC violated: utilities {u!r} (is c(v_high, .) - c(v_low, .) "
                        "non-decreasing for this cost?)")
    if m.accuracy > m.target_accuracy * (1 + 1e-7):
        problems.append(f"accuracy {m.accuracy!r} > target {m.target_accuracy!r}")
    if problems:
        raise SolverError("; ".join(problems))
