"""FairInnerProduct, the optimal DCLEF and the fractional relaxation (Dandekar et al., Sec. 4).

Property tests run the vectorized core on thousands of random instances at once.
"""

from fractions import Fraction
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from privrelease.auctions import (
    fair_inner_product,
    fractional_dclef,
    ghosh_roth,
    optimal_dclef,
)
from privrelease.auctions import _mechanism
from privrelease.auctions._mechanism import _fair_inner_product_rows, _fip_core
from privrelease.auctions._reference import fair_inner_product_reference

TOL = 1e-9


def _instances(rng, m, n, kind):
    """Random (v, w, B) batches; 'int' instances have many exact ties."""
    if kind == "int":
        v = rng.integers(0, 6, size=(m, n)).astype(float)
        w = rng.integers(-4, 5, size=(m, n)).astype(float)
        B = rng.integers(0, 8, size=m).astype(float) / 2
    elif kind == "heavy":  # one dominant weight: exercises the i* branch
        v = rng.exponential(1.0, size=(m, n))
        w = rng.uniform(0.1, 1.0, size=(m, n)) * rng.choice([-1, 1], size=(m, n))
        w[np.arange(m), rng.integers(0, n, m)] *= rng.uniform(1, 20, m)
        B = rng.exponential(1.0, size=m)
    else:
        v = rng.exponential(1.0, size=(m, n))
        w = rng.normal(size=(m, n))
        B = rng.exponential(2.0, size=m)
    return v, w, B


def _brute_force_opt(v, a, B):
    """OPT of problem (7) for a batch, enumerating every subset."""
    m, n = a.shape
    masks = ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1).astype(float)
    cost = (v * a) @ masks.T
    resid = a @ (1 - masks).T
    feas = (resid > 0) & (cost <= B[:, None] * resid * (1 + 1e-12))
    val = a @ masks.T
    return np.where(feas, val, 0.0).max(axis=1)


# ---------------------------------------------------------------- worked examples

def test_equal_weights_example_by_hand():
    # n = 4, w = 1, B = 3: k = 2 since 3/2 >= 2/2 and 3/3 < 3/1; price min(3/2, 3/2)
    res = fair_inner_product([1.0, 2.0, 3.0, 10.0], [1, 1, 1, 1], 3.0, data_range=(1, 5))
    assert res.branch == "greedy" and res.k == 2
    np.testing.assert_allclose(res.payments, [1.5, 1.5, 0, 0])
    np.testing.assert_allclose(res.epsilons, [0.5, 0.5, 0, 0])
    assert res.distortion == pytest.approx(2.25 * 16 * 4)
    est = res.to_dclef()
    np.testing.assert_allclose(est.epsilons, res.epsilons)
    assert est.distortion == pytest.approx(res.distortion)


def test_max_weight_branch_by_hand():
    # i* = 2 (|w| = 10) beats the cheap prefix; S_{-i*} is empty -> p_hat = B
    v = [0.1, 0.2, 0.1]
    w = [1.0, 1.0, -10.0]
    res = fair_inner_product(v, w, budget=1.0)
    assert res.branch == "max_weight" and res.i_star == 2 and res.r == -1
    np.testing.assert_allclose(res.payments, [0, 0, 1.0])
    np.testing.assert_allclose(res.epsilons, [0, 0, 10 / 2])
    assert res.utilities[2] >= 0


def test_input_order_is_preserved():
    rng = np.random.default_rng(0)
    v, w = rng.exponential(size=50), rng.normal(size=50)
    res = fair_inner_product(v, w, 3.0)
    perm = rng.permutation(50)
    res_p = fair_inner_product(v[perm], w[perm], 3.0)
    np.testing.assert_array_equal(res_p.selected, res.selected[perm])
    np.testing.assert_allclose(res_p.payments, res.payments[perm])


# ---------------------------------------------------------------- reference agreement

@pytest.mark.parametrize("kind", ["int", "float", "heavy"])
def test_fast_matches_quadratic_reference(kind):
    rng = np.random.default_rng({"int": 1, "float": 2, "heavy": 3}[kind])
    for trial in range(300):
        n = int(rng.integers(1, 12))
        v, w, B = _instances(rng, 1, n, kind)
        v, w, B = v[0], w[0], float(B[0])
        if trial % 10 == 0:
            v[rng.integers(0, n)] = np.inf
        fast = fair_inner_product(v, w, B)
        ref = fair_inner_product_reference(v, w, B, exact=True)
        assert fast.branch == ref["branch"], (v, w, B)
        np.testing.assert_array_equal(fast.selected, ref["selected"])
        if ref["branch"] != "none":
            assert fast.k == ref["k"] and fast.i_star == ref["i_star"] and fast.r == ref["r"]
        np.testing.assert_allclose(fast.payments, ref["payments"], rtol=1e-12, atol=0)
        np.testing.assert_allclose(fast.epsilons, ref["epsilons"], rtol=1e-12, atol=0)


@pytest.mark.parametrize("kind", ["int", "float", "heavy"])
@pytest.mark.parametrize("block", [None, 1])
def test_rows_in_batches_equal_one_auction_per_row(kind, block, monkeypatch):
    """DCLEFEstimator.predict's batched auctions: each row's result is fair_inner_product's on that row."""
    if block is not None:
        monkeypatch.setattr(_mechanism, "_BATCH_ENTRIES", block)   # one row per _fip_core call
    rng = np.random.default_rng({"int": 11, "float": 12, "heavy": 13}[kind])
    for n in (2, 7, 70):   # 70: long rows, whose close calls go to _fip_row_precise
        v, w, B = _instances(rng, 40, n, kind)
        v = v[0]
        v[rng.integers(0, n)] = np.inf
        w[:3, : n // 2] = 0.0
        rows = list(_fair_inner_product_rows(v, w, float(B[0]), data_range=(1.0, 5.0)))
        assert len(rows) == w.shape[0]
        for q, got in enumerate(rows):
            ref = fair_inner_product(v, w[q], float(B[0]), data_range=(1.0, 5.0))
            for name in ("selected", "payments", "epsilons", "weights", "zero_weight", "violates_assumption"):
                np.testing.assert_array_equal(getattr(got, name), getattr(ref, name))
            assert (got.branch, got.k, got.i_star, got.r, got.data_range) == (
                ref.branch, ref.k, ref.i_star, ref.r, ref.data_range)
            assert got.p_hat == ref.p_hat or (np.isnan(got.p_hat) and np.isnan(ref.p_hat))


# ---------------------------------------------------------------- exact at thresholds

def _threshold_instances(rng, count):
    """(v, w, B) with a budget, a cost or a weight put ON a threshold by float arithmetic.

    Weights and costs are decimals such as 0.1 or 0.3 (not dyadic), so the float
    sums and quotients that place the instance on the threshold are rounded: the
    exact comparison on the given floats may go either way, and plain floating
    point often gets it wrong. Four kinds, in turn: the budget on the k-test of a
    position t (``B (W - w([t])) = v_t w([t])``); a cost on its Assumption-5
    threshold (``a_i v_i = B (W - a_i)``); the largest weight equal to the float sum
    of other weights (the ``i*`` test and S_2); a budget on a ratio of a cost and
    weights, as in ``fair_inner_product([1, 1], [0.1, 0.3], 0.3 / 0.1)``.
    """
    out = []
    while len(out) < count:
        n = int(rng.integers(2, 7))
        v = np.round(rng.uniform(0.1, 3.0, n), 1)
        a = np.round(rng.uniform(0.05, 1.0, n), 1)
        sign = rng.choice([-1.0, 1.0], n)
        kind = len(out) % 4
        order = np.lexsort((np.arange(n), v))
        W = float(np.sum(a))
        if kind == 0:
            t = int(rng.integers(1, n))
            pref = float(np.cumsum(a[order])[t - 1])
            B = v[order[t - 1]] * pref / (W - pref)
        elif kind == 1:
            B = float(np.round(rng.uniform(0.1, 2.0), 1))
            i = int(rng.integers(n))
            v[i] = B * (W - a[i]) / a[i]
        elif kind == 2:
            size = int(rng.integers(1, n))
            sub = rng.choice(n, size=size, replace=False)
            other = next(i for i in range(n) if i not in sub)
            a[other] = float(np.sum(a[sub]))
            B = float(np.round(rng.uniform(0.1, 3.0), 1))
        else:
            i, j = rng.choice(n, 2, replace=False)
            B = a[j] / a[i] * v[i] if rng.random() < 0.5 else v[i] * a[i] / (W - a[i])
        out.append((v, a * sign, float(B)))
    return out


def _same_outcome(res, ref):
    return (res.branch == ref["branch"] and np.array_equal(res.selected, ref["selected"])
            and (ref["branch"] == "none"
                 or (res.k, res.i_star, res.r) == (ref["k"], ref["i_star"], ref["r"])))


def test_audit_example_on_a_threshold():
    # B = 0.3 / 0.1 rounds to 2.9999999999999996. Individual 1 (|w| = 0.3, v = 1) sits on
    # her Assumption-5 threshold: 0.3 * 1 <= B * 0.1 holds in floats but not exactly, so
    # she is not eligible and only individual 0 can be bought (at p_hat = B, S empty).
    B = 0.3 / 0.1
    ref = fair_inner_product_reference([1.0, 1.0], [0.1, 0.3], B, exact=True)
    res = fair_inner_product([1.0, 1.0], [0.1, 0.3], B)
    assert _same_outcome(res, ref)
    assert res.selected.tolist() == [True, False] and res.violates_assumption.tolist() == [
        False, True]
    # plain floating point buys the other individual: the instance sits on a threshold
    flt = fair_inner_product_reference([1.0, 1.0], [0.1, 0.3], B, exact=False)
    assert not np.array_equal(flt["selected"], ref["selected"])


def test_exact_on_threshold_instances():
    rng = np.random.default_rng(70)
    instances = _threshold_instances(rng, 800)
    float_wrong = np.zeros(4, dtype=int)
    for c, (v, w, B) in enumerate(instances):
        ref = fair_inner_product_reference(v, w, B, exact=True)
        res = fair_inner_product(v, w, B)
        assert _same_outcome(res, ref), (v.tolist(), w.tolist(), B)
        np.testing.assert_allclose(res.payments, ref["payments"], rtol=1e-12, atol=0)
        np.testing.assert_allclose(res.epsilons, ref["epsilons"], rtol=1e-12, atol=0)
        flt = fair_inner_product_reference(v, w, B, exact=False)
        float_wrong[c % 4] += not (flt["branch"] == ref["branch"] and flt["r"] == ref["r"]
                                   and np.array_equal(flt["selected"], ref["selected"]))
    # the instances do sit on thresholds: plain floating point errs on every kind
    assert np.all(float_wrong >= 5), float_wrong


def _exact_opt(v, a, B):
    """OPT of problem (7) in exact fractions: every subset, IR at cost plus budget."""
    n = len(a)
    v = [Fraction(x) for x in v]
    a = [Fraction(x) for x in a]
    B = Fraction(B)
    W = sum(a)
    best = Fraction(0)
    for mask in range(1, 2**n):
        H = [i for i in range(n) if mask >> i & 1]
        wH = sum(a[i] for i in H)
        if W - wH > 0 and sum(v[i] * a[i] for i in H) <= B * (W - wH):
            best = max(best, wH)
    return best


def test_five_approximation_exact_on_threshold_instances():
    # Theorem 3 in exact arithmetic, on the instances where float rounding used to pick
    # a selection with ratio OPT / w(O) of 8.2 and 14.3
    rng = np.random.default_rng(71)
    for v, w, B in _threshold_instances(rng, 240):
        res = fair_inner_product(v, w, B)
        a = np.abs(w)
        got = sum((Fraction(x) for x in a[res.selected]), Fraction(0))
        assert 5 * got >= _exact_opt(v, a, B), (v.tolist(), w.tolist(), B)


def test_exact_row_matches_reference_across_magnitudes():
    # the exact fallback alone, on integer ties and on weights, costs and budgets
    # spanning 600 orders of magnitude (sums that lose every small term in floats)
    from privrelease.auctions._mechanism import _fip_exact_row

    rng = np.random.default_rng(72)
    for trial in range(300):
        n = int(rng.integers(1, 8))
        if trial % 2:
            v = rng.integers(0, 4, n).astype(float)
            a = rng.integers(0, 4, n).astype(float)
            B = float(rng.integers(0, 6)) / 2
        else:
            v = rng.exponential(size=n) * 10.0 ** rng.integers(-300, 300, n)
            a = rng.exponential(size=n) * 10.0 ** rng.integers(-300, 300, n)
            B = float(rng.exponential() * 10.0 ** rng.integers(-300, 300))
        if trial % 7 == 0:
            v[rng.integers(n)] = np.inf
        ref = fair_inner_product_reference(v, a, B, exact=True)
        ex = _fip_exact_row(v, a, B)
        assert ex["branch"] == {"none": 0, "greedy": 1, "max_weight": 2}[ref["branch"]]
        assert sorted(ex["sel"]) == np.flatnonzero(ref["selected"]).tolist()
        if ref["branch"] != "none":
            assert (ex["k"], ex["i_star"], ex["r"]) == (ref["k"], ref["i_star"], ref["r"])
        res = fair_inner_product(v, a, B)          # the fast path agrees too
        assert _same_outcome(res, ref)
        np.testing.assert_allclose(res.payments, ref["payments"], rtol=1e-12, atol=0)


def test_precise_row_resolves_each_close_call_exactly():
    # the long-row fallback (float pass, exact integers for each close call only) on the
    # threshold instances, and its give-up path
    from privrelease.auctions import _mechanism as mech

    rng = np.random.default_rng(73)
    for v, w, B in _threshold_instances(rng, 400):
        ex = mech._fip_row_precise(v, np.abs(w), B)
        ref = fair_inner_product_reference(v, w, B, exact=True)
        assert ex["branch"] == {"none": 0, "greedy": 1, "max_weight": 2}[ref["branch"]]
        assert sorted(np.asarray(ex["sel"]).tolist()) == np.flatnonzero(ref["selected"]).tolist()
        if ref["branch"] != "none":
            assert (ex["k"], ex["i_star"], ex["r"]) == (ref["k"], ref["i_star"], ref["r"])
    # integer weights all tied on the threshold: too many close calls -> None (exact row runs)
    n = mech._PRECISE_MAX_CALLS + 10
    assert mech._fip_row_precise(np.zeros(n), np.full(n, 0.1), 0.0) is None
    res = fair_inner_product(np.zeros(n), np.full(n, 0.1), 0.0)
    assert res.selected.sum() == n - 1          # free individuals: all but one are bought


@pytest.mark.parametrize("branch_seed", [0, 1])
def test_long_row_on_a_threshold_matches_exact_reference(branch_seed):
    # n = 300 (past _PRECISE_MIN_N), the budget placed on the k-test of position t
    rng = np.random.default_rng(74 + branch_seed)
    n = 300
    v = np.round(rng.uniform(0.1, 3.0, n), 1)
    w = np.round(rng.uniform(0.05, 1.0, n), 1)
    if branch_seed:
        w[7] = 40.0                                # one dominant weight
    a = np.abs(w)
    order = np.lexsort((np.arange(n), v))
    pref = np.cumsum(a[order])
    for t in (40, 150, 260):
        B = v[order[t - 1]] * pref[t - 1] / (a.sum() - pref[t - 1])
        assert _fip_core(v[None], a[None], B)["exact"][0]     # a close call was resolved
        res = fair_inner_product(v, w, B)
        ref = fair_inner_product_reference(v, w, B, exact=True)
        assert _same_outcome(res, ref), t
        np.testing.assert_allclose(res.payments, ref["payments"], rtol=1e-12, atol=0)


# ---------------------------------------------------------------- Theorem 3 properties

@pytest.mark.parametrize("kind", ["int", "float", "heavy"])
def test_budget_feasible_and_individually_rational(kind):
    rng = np.random.default_rng(10)
    for n in (2, 3, 5, 8, 30):
        v, w, B = _instances(rng, 2000, n, kind)
        out = _fip_core(v, np.abs(w), B)
        # the exact sum of the float payments, not their rounded sum: math.fsum's sign is exact
        assert all(math.fsum(p + [-b]) <= 0 for p, b in zip(out["payments"].tolist(), B.tolist()))
        cost = np.where(out["selected"], v * out["epsilons"], 0.0)
        assert np.all(out["payments"] >= cost - TOL * (1 + cost))
        assert np.all(np.isfinite(out["epsilons"]))
        # unbought individuals get no payment and no privacy loss
        assert np.all(out["payments"][~out["selected"]] == 0)
        assert np.all(out["epsilons"][~out["selected"]] == 0)
        # epsilons are those of the released DCLEF (eq. 8)
        a = np.abs(w)
        resid = np.where(out["selected"], 0.0, a).sum(axis=1, keepdims=True)
        assert np.all(resid[out["selected"].any(axis=1)] > 0)   # never buys everybody
        with np.errstate(invalid="ignore", divide="ignore"):
            expected = np.where(out["selected"], a / resid, 0)
        np.testing.assert_allclose(out["epsilons"], expected, rtol=1e-10)


def test_payments_exact_sum_is_at_most_the_budget_at_every_magnitude():
    # each payment is rounded (the greedy price divides by a rounded w([k])), and their exact sum was above B by
    # a few ulps on about 2 % of random instances (6.7e-16 over B = 4.39 below): the payments are now lowered by
    # those ulps wherever the exact sum exceeds B, and stay within a few ulps of the exact mechanism's
    res = fair_inner_product([0.2, 0.0, 120.2, 63.2, 0.0, 135.8], [0.1, 0.2, 38.4, 0.2, 0.2, 0.2],
                             4.385920700847973)
    assert sum(map(Fraction, res.payments.tolist())) <= Fraction(4.385920700847973)
    rng = np.random.default_rng(36)
    over_before = 0
    for trial in range(1500):
        n = int(rng.integers(2, 12))
        v = rng.random(n) * 10.0 ** rng.uniform(-3, 3, n)
        w = rng.random(n) * 10.0 ** rng.uniform(-3, 3, n)
        if trial % 3 == 0:  # one-decimal values: many exact ties and sums that are not floats
            v, w = np.round(v, 1), np.round(w + 0.1, 1)
        B = float(rng.random() * 10.0 ** rng.uniform(-2, 4))
        res = fair_inner_product(v, w, B)
        ref = fair_inner_product_reference(v, w, B, exact=True)   # payments correctly rounded from Fractions
        over_before += sum(map(Fraction, ref["payments"].tolist())) > Fraction(B)
        assert sum(map(Fraction, res.payments.tolist())) <= Fraction(B), (v, w, B)
        np.testing.assert_array_equal(res.selected, ref["selected"])
        np.testing.assert_allclose(res.payments, ref["payments"], rtol=8 * np.finfo(float).eps, atol=0)
        # individually rational against the exact cost v_i a_i / (W - w(O)), to the few ulps moved
        a = [Fraction(x) for x in np.abs(w).tolist()]
        rest = sum(a) - sum(x for x, s in zip(a, res.selected) if s)
        for i in np.flatnonzero(res.selected):
            cost = Fraction(float(v[i])) * a[i] / rest
            assert Fraction(float(res.payments[i])) >= cost * (1 - Fraction(8, 2**53)), (v, w, B, i)
    assert over_before > 10   # correctly rounding each exact payment alone does not keep the budget


def _misreports(V, A, B, i):
    """Candidate misreports of individual i in every instance (rows): shape (m, K).

    The true cost scaled, 0, huge and infinite reports; every other individual's
    cost (exact ties); the thresholds of i's own test B / w(P_i) >= z / (W - w(P_i))
    for i inserted at every position of the others' cost order; the Assumption-5
    threshold B (W - |w_i|) / |w_i|; and each finite value nudged by +-1e-9
    (relative) and +-1e-12 (absolute).
    """
    m, n = V.shape
    vi, ai = V[:, i], A[:, i]
    Vo, Ao = np.delete(V, i, axis=1), np.delete(A, i, axis=1)
    Ao = np.take_along_axis(Ao, np.argsort(Vo, axis=1, kind="stable"), axis=1)
    P = ai[:, None] + np.concatenate([np.zeros((m, 1)), np.cumsum(Ao, axis=1)], axis=1)
    W = A.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        thr = B[:, None] * (W - P) / P
        a5 = B * (W[:, 0] - ai) / ai
    base = np.column_stack([np.zeros(m), np.full(m, 1e9), np.full(m, np.inf), 0.5 * vi, 2 * vi,
                            vi + 1, Vo, thr, a5])
    fin = np.where(np.isfinite(base), base, 0.0)
    Z = np.concatenate([base, fin * (1 - 1e-9), fin * (1 + 1e-9), fin - 1e-12, fin + 1e-12], axis=1)
    return np.where(np.isnan(Z) | (Z < 0), 0.0, Z)


@pytest.mark.parametrize("kind", ["int", "float", "heavy"])
def test_truthful_no_misreport_pays(kind):
    rng = np.random.default_rng({"int": 20, "float": 21, "heavy": 22}[kind])
    for n, m in ((2, 1000), (3, 1000), (4, 800), (6, 400), (10, 100)):
        V, Wt, Bs = _instances(rng, m, n, kind)
        A = np.abs(Wt)
        truth = _fip_core(V, A, Bs)
        u_true = truth["payments"] - np.where(truth["selected"], V * truth["epsilons"], 0)
        for i in range(n):
            Z = _misreports(V, A, Bs, i)
            K = Z.shape[1]
            Vm = np.repeat(V[:, None, :], K, axis=1)
            Vm[:, :, i] = Z
            mis = _fip_core(Vm.reshape(m * K, n), np.repeat(A, K, axis=0), np.repeat(Bs, K))
            sel = mis["selected"][:, i].reshape(m, K)
            with np.errstate(invalid="ignore"):
                cost = np.where(sel, V[:, i, None] * mis["epsilons"][:, i].reshape(m, K), 0.0)
            gain = mis["payments"][:, i].reshape(m, K) - cost - u_true[:, i, None]
            t, k = np.unravel_index(np.argmax(gain), gain.shape)
            assert gain[t, k] <= TOL * (1 + Bs[t]), (
                f"misreport pays: v={V[t]}, w={Wt[t]}, B={Bs[t]}, i={i}, z={Z[t, k]}, "
                f"gain={gain[t, k]}"
            )


# ---------------------------------------------------------------- approximation ratio

@pytest.mark.parametrize("kind", ["int", "float", "heavy"])
def test_five_approximation_against_brute_force(kind):
    rng = np.random.default_rng({"int": 30, "float": 31, "heavy": 32}[kind])
    for n in (2, 4, 6, 9):
        v, w, B = _instances(rng, 3000, n, kind)
        a = np.abs(w)
        out = _fip_core(v, a, B)
        S = np.where(out["selected"], a, 0).sum(axis=1)
        opt = _brute_force_opt(v, a, B)
        assert np.all(5 * S >= opt * (1 - 1e-12))
        assert np.all(S <= opt * (1 + 1e-12))  # FIP is itself feasible for (7)


def test_two_approximation_with_equal_weights():
    rng = np.random.default_rng(40)
    for n in (2, 3, 5, 8, 10):
        v = rng.exponential(1.0, size=(3000, n))
        a = np.ones_like(v)
        B = rng.exponential(2.0, size=3000)
        out = _fip_core(v, a, B)
        S = out["selected"].sum(axis=1)
        opt = _brute_force_opt(v, a, B)
        assert np.all(2 * S >= opt)
        # equal weights: O = [k], the k cheapest (the i* branch, when it fires with k = 1,
        # buys that same single individual at the same price)
        assert np.all(S == out["k"])
        kth = np.sort(v, axis=1)[np.arange(3000), np.maximum(out["k"], 1) - 1]
        assert np.all(np.where(out["selected"], v <= kth[:, None], True))


@pytest.mark.parametrize("alpha", [0.1, 0.5, 1.0, 1.9])
@pytest.mark.parametrize("d", [0.3, 1.0, 7.0])
def test_theorem4_lower_bound_instance(alpha, d):
    # Appendix E: v = (a, 2, 2, 2), w = d, B = 1 + a/2: OPT = 2d, FIP buys only one
    v, w, B = [alpha, 2.0, 2.0, 2.0], [d] * 4, 1 + alpha / 2
    opt = optimal_dclef(v, w, B)
    assert opt.value == pytest.approx(2 * d)
    assert opt.selected[0] and opt.selected.sum() == 2
    assert opt.total_payment <= B * (1 + 1e-12)
    res = fair_inner_product(v, w, B)
    assert res.selected.tolist() == [True, False, False, False]
    assert opt.value / res.value == pytest.approx(2.0)


# ---------------------------------------------------------------- optimum and relaxation

def test_optimal_dclef_milp_matches_brute_force():
    rng = np.random.default_rng(50)
    for _ in range(40):
        n = int(rng.integers(2, 11))
        v, w, B = rng.exponential(size=n), rng.normal(size=n), float(rng.exponential(2))
        bf = optimal_dclef(v, w, B, method="brute_force")
        mi = optimal_dclef(v, w, B, method="milp")
        assert mi.value == pytest.approx(bf.value, rel=1e-9)
        for res in (bf, mi):
            assert res.total_payment <= B * (1 + 1e-9)
            np.testing.assert_allclose(res.payments, np.where(res.selected, v * res.epsilons, 0))


def test_fractional_closed_form_matches_linprog_and_bounds_opt():
    rng = np.random.default_rng(60)
    for _ in range(60):
        n = int(rng.integers(1, 9))
        v, w, B = rng.exponential(size=n), rng.normal(size=n), float(rng.exponential(2))
        a = np.abs(w)
        fr = fractional_dclef(v, w, B)
        # LP (21): max a.x  s.t.  sum v_i a_i x_i - B sum a_i (1 - x_i) <= 0, 0 <= x <= 1
        lp = linprog(-a, A_ub=[(v + B) * a], b_ub=[B * a.sum()], bounds=[(0, 1)] * n,
                     method="highs")
        assert lp.status == 0
        assert fr.value == pytest.approx(-lp.fun, rel=1e-9, abs=1e-12)
        assert np.all((fr.x >= 0) & (fr.x <= 1))
        assert (v + B) @ (a * fr.x) <= B * a.sum() * (1 + 1e-12)
        if n >= 2:
            assert optimal_dclef(v, w, B).value <= fr.value * (1 + 1e-12)


def test_ghosh_roth_is_equal_weight_fip():
    v = np.array([0.3, 0.1, 0.9, 0.2, 4.0])
    g = ghosh_roth(v, 1.0)
    f = fair_inner_product(v, np.ones(5), 1.0)
    np.testing.assert_array_equal(g.selected, f.selected)
    np.testing.assert_allclose(g.payments, f.payments)
    # the three cheapest: B/3 = 1/3 >= v_3 / 2 = 0.15, but B/4 < 0.9 / 1
    assert g.selected.tolist() == [True, True, False, True, False]
    np.testing.assert_allclose(g.payments[g.selected], min(1 / 3, 0.9 / 2))


# ---------------------------------------------------------------- edge cases and bad input

def test_zero_weights_and_assumption5_violators_are_reported():
    v = [0.1, 0.1, 100.0, 0.2]
    w = [1.0, 0.0, 1.0, 1.0]
    res = fair_inner_product(v, w, 0.5)
    assert res.zero_weight.tolist() == [False, True, False, False]
    assert res.violates_assumption.tolist() == [False, False, True, False]
    assert not res.selected[1] and not res.selected[2]
    assert res.payments[1] == 0 and res.epsilons[1] == 0
    # the violator's weight still counts in W: eps = |w_i| / (W - w(O))
    np.testing.assert_allclose(res.epsilons[res.selected], 1 / res.residual_weight)


def test_single_individual_cannot_be_bought():
    res = fair_inner_product([0.5], [2.0], 10.0)
    assert res.branch == "none" and not res.selected.any()
    assert res.violates_assumption.tolist() == [True]
    assert res.distortion == pytest.approx(2.25 * 4)


def test_all_zero_weights_give_empty_auction():
    res = fair_inner_product([1.0, 2.0], [0.0, 0.0], 1.0)
    assert res.branch == "none" and res.distortion == 0 and res.total_payment == 0


def test_zero_budget_buys_only_free_individuals():
    res = fair_inner_product([0.0, 0.0, 1.0, 2.0], [1, 1, 1, 1], 0.0)
    assert res.selected.tolist() == [True, True, False, False]
    assert res.total_payment == 0
    res = fair_inner_product([1.0, 2.0, 3.0], [1, 1, 1], 0.0)
    assert not res.selected.any()


def test_tied_costs_broken_by_index():
    res = fair_inner_product([1.0, 1.0, 1.0, 1.0], [1, 1, 1, 1], 1.0)
    # k = 2: B / 2 = 0.5 >= 1 / 2; B / 3 < 1 / 1
    assert res.selected.tolist() == [True, True, False, False]


def test_all_zero_costs_never_buy_everybody():
    res = fair_inner_product([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], 1.0)
    assert res.selected.sum() == 2 and np.all(np.isfinite(res.epsilons))


@pytest.mark.parametrize("v, w, B, exc, match", [
    ([], [], 1.0, ValueError, "n = 0"),
    ([1.0, 2.0], [1.0], 1.0, ValueError, "2 entries but weights has 1"),
    ([-1.0, 2.0], [1.0, 1.0], 1.0, ValueError, "unit_costs must be >= 0, got -1.0"),
    ([np.nan, 2.0], [1.0, 1.0], 1.0, ValueError, "unit_costs"),
    ([1.0, 2.0], [np.nan, 1.0], 1.0, ValueError, "weights must be finite"),
    ([1.0, 2.0], [np.inf, 1.0], 1.0, ValueError, "weights must be finite"),
    ([1.0, 2.0], [1.0, 1.0], -1.0, ValueError, "budget must be >= 0, got -1.0"),
    ([1.0, 2.0], [1.0, 1.0], np.nan, ValueError, "NaN"),
    ([1.0, 2.0], [1.0, 1.0], np.inf, ValueError, "finite"),
    ([1.0, 2.0], [1.0, 1.0], "3", TypeError, "budget must be a real number"),
    (["a", "b"], [1.0, 1.0], 1.0, TypeError, "unit_costs must be an array of real numbers"),
    ([[1.0, 2.0]], [[1.0, 1.0]], 1.0, ValueError, "1-D"),
])
def test_bad_auction_input(v, w, B, exc, match):
    with pytest.raises(exc, match=match):
        fair_inner_product(v, w, B)


@pytest.mark.parametrize("rng_", [(1.0, 1.0), (5.0, 1.0), (0.0, np.inf), "ab"])
def test_bad_data_range(rng_):
    with pytest.raises((ValueError, TypeError), match="data_range"):
        fair_inner_product([1.0, 1.0], [1.0, 1.0], 1.0, data_range=rng_)


def test_optimal_dclef_bad_method():
    with pytest.raises(ValueError, match="method must be"):
        optimal_dclef([1.0, 1.0], [1.0, 1.0], 1.0, method="greedy")


def test_large_instance_runs():
    rng = np.random.default_rng(70)
    n = 200_000
    res = fair_inner_product(rng.exponential(size=n), rng.normal(size=n), 50.0)
    assert res.total_payment <= 50.0 * (1 + 1e-12)
    # the proof of Theorem 3 bounds the relaxation itself: S(x*) < 5 S(x)
    assert 5 * res.value >= fractional_dclef(res.unit_costs, res.weights, 50.0).value


def test_milp_optimum_brackets_fip_at_larger_n():
    # n = 40 is beyond brute force: OPT (MILP) lies between FIP and the fractional bound,
    # and FIP >= OPT / 5 (Theorem 3)
    rng = np.random.default_rng(80)
    for _ in range(6):
        v, w, B = rng.exponential(size=40), rng.normal(size=40), float(rng.exponential(1.0))
        opt = optimal_dclef(v, w, B)          # auto -> MILP
        fip = fair_inner_product(v, w, B)
        frac = fractional_dclef(v, w, B)
        assert fip.value <= opt.value * (1 + 1e-9)
        assert opt.value <= frac.value * (1 + 1e-9)
        assert 5 * fip.value >= opt.value
        assert opt.total_payment <= B * (1 + 1e-9)
