"""Hostile inputs for the economic mechanisms at their numerical edges: contracts (Khalili, Zhang, Liu), auctions
(Dandekar, Fawaz, Ioannidis) and truthful regression (Cummings, Ioannidis, Ligett), each against a property or an
independent computation (earlier audits: test_hostile_inputs*.py)."""

import math
from fractions import Fraction

import numpy as np
import pytest


# ---------------------------------------------------------------- contracts: valuations spanning 300 decades
def _knapsack(vs, A):
    """``min sum_i v_i a_i`` s.t. ``sum_i a_i >= A``, ``a in [0, 1]^n``: the cheapest first (exact)."""
    total, left = Fraction(0), A
    for x in sorted(vs):
        if left <= 0:
            break
        take = min(left, Fraction(1))
        total, left = total + x * take, left - take
    return total


def _brute_force_linear_pay2(v, K):
    """The squared least payment of the cost ``v eps`` by brute force over the noise, in exact rationals.

    ``s = sqrt(K - 2 b^2)`` runs over rationals (``K`` a rational square, so ``s`` up to ``sqrt(K)``); for a fixed
    ``s`` the least payment is a fractional knapsack ``min sum v_i a_i`` s.t. ``sum a_i >= n - 2 s`` divided by
    ``b``, so its square ``knapsack^2 2 / (K - s^2)`` is exact. The grid: offsets ``2^-j`` (j <= 1100) on both sides
    of the kinks ``s = (n - k) / 2``, 0 and ``sqrt(K)``, then a geometric zoom around the best point.
    """
    vs = [Fraction(float(x)) for x in v]
    n, K = len(vs), Fraction(K)
    top = Fraction(math.isqrt(K.numerator), math.isqrt(K.denominator))
    assert top * top == K

    def pay2(s):
        return _knapsack(vs, n - 2 * s) ** 2 * 2 / (K - s * s) if 0 <= s < top else None

    anchors = {Fraction(n - k, 2) for k in range(n + 1)} | {top, Fraction(0)}
    best = None
    for a in anchors:
        for sign in (-1, 1):
            for j in range(1101):
                p = pay2(a + sign * Fraction(2) ** -j)
                if p is not None and (best is None or p < best[0]):
                    best = (p, a, sign, Fraction(2) ** -j)
    p, a, sign, d = best
    lo, hi = d / 2, d * 2
    for _ in range(40):
        pts = [Fraction(float(lo + (hi - lo) * Fraction(i, 8))) for i in range(9)]
        q, x = min((pay2(a + sign * x), x) for x in pts if pay2(a + sign * x) is not None)
        p = min(p, q)
        i = pts.index(x)
        lo, hi = pts[max(i - 1, 0)], pts[min(i + 1, 8)]
    return p


def _exact_accuracy(c):
    return (sum((1 - Fraction(float(x))) / 2 for x in c.a)) ** 2 + 2 * Fraction(float(c.b)) ** 2


@pytest.mark.parametrize("valuations, K", [
    ([1.0, 1e-3], Fraction(1, 4)),
    ([1.0, 1e-17], Fraction(1, 4)),          # paid 4.2 times the optimum
    ([1.0, 1e-30], Fraction(1, 4)),          # 1.9e7 times
    ([1.0, 1e-300], Fraction(1, 4)),         # 1.3e142 times
    ([1.0, 1e-100], Fraction(1, 100)),
    ([1.0, 1e-150, 1e-300], Fraction(1, 4)),  # 2.2e67 times
    ([1.0, 1e-150, 1e-300], Fraction(1)),
    ([2.0, 1e-200, 3e-100], Fraction(9, 16)),
])
def test_a_callable_linear_cost_pays_the_brute_force_optimum_across_300_decades(valuations, K):
    # the water-filling compared sum_i eps_i with A / b: a partial seller's share below an ulp of A / b was lost,
    # so the search moved to a larger noise where it was not (v = (1, 1e-17), K = 1/4: 4.2 times the optimum)
    from privrelease.contracts import design_contract

    best = _brute_force_linear_pay2(valuations, K)
    for cost in ("linear", lambda v, e: v * e):
        c = design_contract(valuations, float(K), cost=cost)
        assert _exact_accuracy(c) <= K * (1 + Fraction(1, 10**9))
        pay = sum(Fraction(float(x)) * Fraction(float(a)) for x, a in zip(valuations, c.a)) / Fraction(float(c.b))
        assert pay ** 2 >= best * (1 - Fraction(1, 10**9))       # feasible: not below the optimum
        assert pay ** 2 <= best * (1 + Fraction(1, 10**6))       # and at it
        np.testing.assert_allclose(c.total_payment, float(pay), rtol=1e-12)


@pytest.mark.parametrize("small", [1e-17, 1e-100, 1e-300])
@pytest.mark.parametrize("cost", ["exponential", lambda v, e: v * (e + e * e)])
def test_a_convex_cost_contract_with_valuations_far_apart_beats_the_cheap_seller_full_candidates(small, cost):
    # the same lost share with convex costs: the exponential cost paid 0.0747 at v = (1, 1e-300), K = 1/4, where
    # the cheap seller full and the other one at weight A - 1 = 8 b^2 / (1 + 2 s) costs 0.0059
    from privrelease.contracts import design_contract, privacy_cost

    K = 0.25
    c = design_contract([1.0, small], K, cost=cost)
    assert _exact_accuracy(c) <= Fraction(K) * (1 + Fraction(1, 10**9))
    bs = np.geomspace(1e-160, np.sqrt(K / 2), 4000)[:-1]
    s = np.sqrt(K - 2 * bs**2)
    partial = 8 * bs**2 / (1 + 2 * s)                  # 1 - 2 s without cancellation: K = 1/4 exactly
    # the costs in closed form: inf where one overflows float64 (never the least; privacy_cost refuses it)
    fn = (lambda v, e: v * np.expm1(e)) if cost == "exponential" else cost
    with np.errstate(over="ignore"):
        candidates = fn(1.0, partial / bs) + fn(small, 1 / bs)
    finite = np.isfinite(candidates)
    np.testing.assert_allclose(candidates[finite], privacy_cost(1.0, (partial / bs)[finite], cost)
                               + privacy_cost(small, (1 / bs)[finite], cost), rtol=1e-12)
    assert c.total_payment <= np.min(candidates) * (1 + 1e-6)


# ---------------------------------------------------------------- auctions: payments below 1e-271
def _instances(rng, count, low=-305, high=-272):
    for t in range(count):
        n = int(rng.integers(2, 8))
        scale = 10.0 ** rng.uniform(low, high)
        v = rng.uniform(0.0, 2.0, n) * scale
        if t % 3 == 0:
            v = np.round(v / scale * 4) * scale                     # ties
        w = rng.uniform(0.1, 2.0, n) * 10.0 ** rng.uniform(-20, 20)
        if t % 4 == 1:
            w[0] *= 1e3                                             # i*'s branch
        yield v, w, scale * n * rng.uniform(0.05, 2.0)


def test_auction_payments_below_1e_271_are_decided_in_floating_point_and_are_the_exact_mechanisms():
    # every row paying less than 2**-900 was recomputed in exact integers (out of range), though a normal
    # result has relative error <= u at any magnitude: 30 to 50 times slower at n = 10**4 or 2000 rows
    from privrelease.auctions import fair_inner_product
    from privrelease.auctions._mechanism import _fip_core
    from privrelease.auctions._reference import fair_inner_product_reference

    rng = np.random.default_rng(7)
    n = 1000
    v = rng.uniform(0.5, 2.0, n) * 1e-300
    w = rng.uniform(0.5, 2.0, n)
    assert not _fip_core(v[None], w[None], 1e-298)["exact"][0]          # the float path: no close call here
    for v, w, B in _instances(rng, 150):
        res = fair_inner_product(v, w, B)
        ref = fair_inner_product_reference(v, w, B, exact=True)
        assert res.branch == ref["branch"]
        np.testing.assert_array_equal(res.selected, ref["selected"])
        np.testing.assert_allclose(res.payments, ref["payments"], rtol=1e-12, atol=0)
        assert sum(Fraction(float(p)) for p in res.payments) <= Fraction(B) * (1 + Fraction(1, 10**12))
        a = [abs(Fraction(float(x))) for x in w]
        rest = sum(a) - sum(a[j] for j in np.flatnonzero(res.selected))
        for i in np.flatnonzero(res.selected):                        # individually rational
            assert Fraction(float(res.payments[i])) >= Fraction(float(v[i])) * a[i] / rest * (1 - Fraction(1, 10**12))


@pytest.mark.parametrize("v, w, B", [
    # price min(B / w([k]), v_3 / (W - w([k]))) = 1.2e-320, subnormal (11 bits), times |w_i| = 1e20: a normal
    # payment 1.2347e-300 off by 8e-5 of the exact 1.234567e-300 if the intermediate is not checked
    ([1e-305, 1e-305, 1.234567e-300], [1e20, 1e20, 1e20], 1e-299),
    # i*'s a_star v_r = 3e-330 underflows to 0
    ([1e-300, 3.3e-300, 2e-300], [1e-30, 1e-30, 3e-30], 1e-300),
])
def test_auction_payment_through_a_subnormal_price_is_the_exact_mechanisms(v, w, B):
    from privrelease.auctions import fair_inner_product
    from privrelease.auctions._reference import fair_inner_product_reference

    res = fair_inner_product(v, w, B)
    ref = fair_inner_product_reference(v, w, B, exact=True)
    np.testing.assert_array_equal(res.selected, ref["selected"])
    np.testing.assert_allclose(res.payments, ref["payments"], rtol=1e-12, atol=0)


@pytest.mark.parametrize("seed", [0, 1])
def test_auction_below_1e_271_is_truthful_by_brute_force(seed):
    # a seller misreporting her cost on a grid (true cost times 0 .. 8, and the others' costs) never gains:
    # utility p_i - v_i eps_i (exact rationals), at costs and budgets near 1e-300
    from privrelease.auctions import fair_inner_product

    rng = np.random.default_rng(seed)
    for v, w, B in _instances(rng, 12, -303, -290):
        def utility(i, report):
            r = v.copy()
            r[i] = report
            res = fair_inner_product(r, w, B)
            if not res.selected[i]:
                return Fraction(0)
            return Fraction(float(res.payments[i])) - Fraction(float(v[i])) * Fraction(float(res.epsilons[i]))
        for i in range(v.size):
            honest = utility(i, v[i])
            assert honest >= -Fraction(B) * Fraction(1, 10**12)          # IR
            grid = np.concatenate([v[i] * np.linspace(0.0, 8.0, 33), v, [B, B * 10]])
            for report in grid:
                assert utility(i, report) <= honest + Fraction(B) * Fraction(1, 10**12)


# ---------------------------------------------------------------- contracts: menus at tiny accuracy targets
@pytest.mark.parametrize("K", [1e-307, 1e-300, 1e-250, 1e-100])
@pytest.mark.parametrize("prob_high", [0.2, 0.9])
def test_a_menu_at_a_tiny_accuracy_pays_at_most_the_unbiased_contract(K, prob_high):
    # K - 2 b_max^2 rounded below 0 for one K in three: the pooled contract a = 1, b = sqrt(K / 2) (the unbiased
    # mechanism, always feasible) was out of the search, and the menu paid 4.6e-4 more than it
    from privrelease.contracts import design_menu

    m = design_menu(1.0, 5.0, prob_high, K)
    assert m.expected_payment <= m.unbiased_payment * (1 + 1e-12)
    u = m.utilities(unit=m.v_high)
    tol = 1e-12 * max(m.p_high, m.p_low) / m.v_high                                           # rounding
    assert u[("high", "high")] >= -tol and u[("low", "low")] >= -tol                            # IR
    assert u[("high", "high")] >= u[("high", "low")] - tol and u[("low", "low")] >= u[("low", "high")] - tol
    pi, w_h, w_l = Fraction(prob_high), 1 - Fraction(m.a_high), 1 - Fraction(m.a_low)
    q = pi**2 * w_h**2 + (1 - pi)**2 * w_l**2 + 2 * pi * (1 - pi) * ((w_h + w_l) / 2) ** 2
    assert 2 * Fraction(m.b) ** 2 + q <= Fraction(K) * (1 + Fraction(1, 10**7))               # AC, exactly


# ---------------------------------------------------------------- truthful regression: features of 1e-170
@pytest.mark.parametrize("scale", [1e-150, 1e-170, 1e-300])
@pytest.mark.parametrize("prior_variance", [np.inf, 1.0, 1e300])
def test_truthful_regression_pays_by_the_players_own_prediction_at_tiny_features(scale, prior_variance):
    # q_i was 0 where ||x_i||^2 underflowed (||x_i|| below 1e-162) though x_i != 0: every such player was paid
    # the same whatever she reported (flat prior: q_i = y_i); best_response_factors_ were NaN there
    import warnings

    from privrelease.regression import TruthfulRegressionMechanism, brier_payment

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
    y = np.clip(X @ [0.5, -0.2] + 0.1 * rng.normal(size=40), -1, 1)
    X *= scale
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                      # epsilon = inf: the exact estimators
        m = TruthfulRegressionMechanism(epsilon=np.inf, prior_variance=prior_variance, random_state=0).fit(X, y)
    own = []
    for x, yi in zip(X, y):                                  # the posterior mean, in exact rationals
        sq = sum(Fraction(float(t)) ** 2 for t in x)
        if prior_variance == np.inf:
            own.append(float(yi))
        else:
            tau2 = Fraction(prior_variance)
            own.append(float(tau2 * sq * Fraction(float(yi)) / (1 + tau2 * sq)))
    peer = np.einsum("ij,ij->i", X, m.group_coef_[1 - m.group_])
    np.testing.assert_allclose(m.payments_, brier_payment(peer, np.array(own)), rtol=1e-12, atol=1e-15)
    assert np.all((m.payments_ >= 0) & (m.payments_ <= 1)) and m.budget_ == pytest.approx(m.payments_.sum())
    assert np.all((m.best_response_factors_ >= 0) & (m.best_response_factors_ <= 1))      # not NaN


# ---------------------------------------------------------------- contracts: 10^5 sellers
def test_linear_contract_for_100000_sellers_fills_the_cheapest_first():
    # (the closed form looped over the n segments building the weights each time the best improved: 11 s for
    # 10^5 sellers; now one vectorised pass, the same floats)
    from privrelease.contracts import design_contract

    rng = np.random.default_rng(0)
    v = rng.uniform(0.5, 2.0, 100_000)
    K = v.size ** 2 / 8.0
    c = design_contract(v, K)
    assert _exact_accuracy(c) <= Fraction(K) * (1 + Fraction(1, 10**9))
    assert c.total_payment <= c.unbiased_payment
    a = c.a[np.argsort(v, kind="stable")]
    assert np.all(np.diff(a) <= 0)                                  # cheapest first
    assert np.count_nonzero((a > 0) & (a < 1)) <= 1                  # at most one partial seller
    # no cheaper b on a fine grid around the optimum for the same fill (fractional knapsack for each b)
    vs = np.sort(v)
    cum = np.concatenate([[0.0], np.cumsum(vs)])
    for f in np.linspace(0.9, 1.1, 41):
        b = c.b * f
        s = np.sqrt(K - 2 * b * b)
        A = v.size - 2 * s
        k = int(np.floor(A))
        pay = (cum[k] + (A - k) * (vs[k] if k < v.size else 0.0)) / b
        assert c.total_payment <= pay * (1 + 1e-9)
