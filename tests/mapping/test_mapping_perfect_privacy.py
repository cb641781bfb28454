"""The perfect-privacy LP for two classes solved as a transportation problem by column
generation (``_lp._two_class_transport``), against the plain LP in the mapping variables."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import privrelease.mapping._lp as lp
from privrelease.mapping import leakage
from privrelease.mapping._problem import Problem


def _plain(prob, monkeypatch):
    """``perfect_privacy_mapping`` with the transport path switched off (the plain LP), solved afresh
    (the cache of recent problems is emptied before and after)."""
    lp._PP_CACHE.clear()
    with monkeypatch.context() as m:
        m.setattr(lp, "_two_class_transport", lambda prob: (None, None))
        out = lp.perfect_privacy_mapping(prob)
    lp._PP_CACHE.clear()
    return out


def _instance(rng, i):
    k = int(rng.integers(3, 14))
    kh = int(rng.integers(2, 16)) if i % 3 == 0 else k
    post = rng.random(k) if i % 4 else rng.choice([0.0, 1e-9, 0.5, 1 - 1e-9, 1.0], size=k)
    pc = rng.dirichlet(np.full(k, 0.5))
    if i % 5 == 0:  # rare inputs
        pc[: k // 3] = 10.0 ** rng.uniform(-10, -6, size=k // 3)
        pc /= pc.sum()
    prior = np.vstack([pc * post, pc * (1 - post)])
    d = rng.random((k, kh)) * (1 + 3 * rng.random())
    if i % 2:  # forbidden transitions, never a whole row
        forb = rng.random((k, kh)) < 0.3
        forb[np.arange(k), rng.integers(kh, size=k)] = False
        d = np.where(forb, np.inf, d)
    return prior / prior.sum(), d


def test_two_class_transport_matches_the_plain_lp(monkeypatch):
    rng = np.random.default_rng(20261123)
    used = 0
    for i in range(60):
        prior, d = _instance(rng, i)
        prob = Problem(prior, d)
        P_ref, d_ref = _plain(prob, monkeypatch)
        P, dist = lp.perfect_privacy_mapping(prob)
        if P_ref is None:  # no perfectly private mapping: the transport path must not find one
            assert P is None and dist == math.inf
            continue
        used += lp._two_class_transport(prob)[0] is not None
        full = prob.expand(P)
        assert np.allclose(full.sum(axis=1), 1.0, atol=1e-12) and full.min() >= 0.0
        assert np.all(full[~np.isfinite(d)] == 0.0)
        assert leakage(prior, full) <= 1e-12
        # optimal: the same LP optimum (ours cannot be lower than the plain LP's, nor higher)
        assert dist == pytest.approx(d_ref, rel=1e-8, abs=1e-12 * np.nanmax(np.where(np.isfinite(d), d, np.nan)))
    assert used >= 30  # the transport path answered most instances (not the fallback)


def test_two_class_transport_column_generation_is_exact():
    # k = 60 with a sorted posterior (the two sides far apart: the first working set is far
    # from optimal, several pricing rounds): the same optimum as the transport LP on every path
    rng = np.random.default_rng(5)
    k = 60
    X = rng.normal(size=(k, 2))
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    post = 1 / (1 + np.exp(-3 * X[:, 0]))
    pc = rng.dirichlet(np.full(k, 2.0))
    prob = Problem(np.vstack([pc * post, pc * (1 - post)]), d)
    P, t = lp._two_class_transport(prob)
    assert P is not None and t.shape == (1, prob.kh)
    # the full path LP: every (i, l, j)
    g = prob.M[0] - prob.pA[0] * prob.pc
    pos, neg = np.flatnonzero(g > 0), np.flatnonzero(g < 0)
    cost = (prob.W[pos] / g[pos, None])[:, None, :] + (prob.W[neg] / -g[neg, None])[None, :, :]
    ii, ll, jj = np.unravel_index(np.arange(cost.size), cost.shape)
    n = cost.size
    A = sp.csr_matrix((np.ones(2 * n), (np.concatenate([ii, pos.size + ll]), np.tile(np.arange(n), 2))))
    b = np.concatenate([g[pos] / g[pos].sum(), g[neg] / g[neg].sum()])
    res = linprog(cost.ravel(), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    assert res.status == 0
    # the path LP's optimum in distortion units: sum over paths of flow * cost * (side total)
    zero = prob.W[g == 0].min(axis=1).sum() if np.any(g == 0) else 0.0
    assert prob.distortion(P) == pytest.approx(res.fun * g[pos].sum() + zero, rel=1e-9)
    assert prob.objective(P) <= 1e-12


def _mi_nats(prob, P):
    return prob.objective(P)


@pytest.mark.parametrize("seed", range(4))
def test_independence_lower_bound_holds_for_every_mapping(seed):
    # Lagrange + Pinsker: for ANY multipliers t and any allowed mapping P,
    # <W, P> >= independence_lower_bound(prob, t, I(P)); checked on random t (of every scale)
    # and random mappings (dense, deterministic, and mixtures with the perfect-privacy
    # mapping, whose leakage is tiny), |A| = 2..4, rectangular, forbidden entries, private
    # outputs (reachable from one input only, as an erasure alphabet's non-erased tuples)
    rng = np.random.default_rng(100 + seed)
    na = 2 + seed % 3
    k, kh = int(rng.integers(3, 9)), int(rng.integers(3, 12))
    prior = rng.dirichlet(np.full(na * k, 0.7)).reshape(na, k)
    d = rng.random((k, kh)) * 3.0
    forb = rng.random((k, kh)) < 0.3
    forb[np.arange(k), rng.integers(kh, size=k)] = False
    if seed % 2:  # output 0 private to input 0, and free for it
        forb[1:, 0] = True
        forb[0, 0] = False
        d[0, 0] = 0.0
    d = np.where(forb, np.inf, d)
    prob = Problem(prior, d)
    Ppp, _, t_pp = lp.perfect_privacy_mapping(prob, return_duals=True)
    ts = [rng.normal(size=(na - 1, prob.kh)) * 10.0 ** rng.uniform(-2, 3) for _ in range(6)]
    if t_pp is not None:
        ts.append(t_pp)
    for _ in range(40):
        kind = rng.integers(3)
        P = rng.random((prob.k, prob.kh)) ** (1 + 8 * rng.random())
        if kind == 1:
            P = (P == P.max(axis=1, keepdims=True)).astype(float)
        P = np.where(prob.mask, P, 0.0)
        P[P.sum(axis=1) == 0, :] = prob.mask[P.sum(axis=1) == 0, :]
        P /= P.sum(axis=1, keepdims=True)
        if kind == 2 and Ppp is not None:
            P = (1 - 10.0 ** -rng.uniform(1, 8)) * Ppp + 10.0 ** -rng.uniform(1, 8) * P
            P /= P.sum(axis=1, keepdims=True)
        I = _mi_nats(prob, P)
        for t in ts:
            assert lp.independence_lower_bound(prob, t, I) <= prob.distortion(P) + 1e-12


def test_independence_lower_bound_is_tight_at_perfect_privacy():
    # with the LP's own multipliers the bound at leakage 0 is the LP's optimum (the perfectly
    # private mapping's distortion), for the transport path (|A| = 2) and the plain LP (|A| = 3),
    # and it decreases like sqrt(I)
    rng = np.random.default_rng(7)
    for na in (2, 3):
        k = 30
        X = rng.normal(size=(k, 2))
        d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
        prior = rng.dirichlet(np.full(na * k, 1.0)).reshape(na, k)
        prob = Problem(prior, d)
        P, _, t = lp.perfect_privacy_mapping(prob, return_duals=True)
        dpp = prob.distortion(P)
        b0 = lp.independence_lower_bound(prob, t, 0.0)
        assert dpp * (1 - 1e-7) <= b0 <= dpp * (1 + 1e-9)
        b1, b2 = (lp.independence_lower_bound(prob, t, v) for v in (1e-8, 4e-8))
        assert b0 - b1 == pytest.approx((b1 - b2), rel=1e-6)  # sqrt(4 I) = 2 sqrt(I)


def test_perfect_privacy_lp_is_solved_once_per_problem(monkeypatch):
    # a leakage curve fits one mapper per cap on the same prior and costs: the LP of a reduced
    # problem is kept (the last few), each caller gets its own copy and the distortion in its own units
    rng = np.random.default_rng(3)
    prior, d = _instance(rng, 4)
    lp._PP_CACHE.clear()
    calls = []
    real = lp._perfect_privacy_mapping
    monkeypatch.setattr(lp, "_perfect_privacy_mapping", lambda prob: calls.append(1) or real(prob))
    P1, d1, t1 = lp.perfect_privacy_mapping(Problem(prior, d), return_duals=True)
    P2, d2, t2 = lp.perfect_privacy_mapping(Problem(prior, d), return_duals=True)
    assert len(calls) == 1
    assert np.array_equal(P1, P2) and np.array_equal(t1, t2) and d2 == d1
    P2[:] = -1.0  # a caller's copy: the kept answer is untouched
    assert np.array_equal(lp.perfect_privacy_mapping(Problem(prior, d))[0], P1)
    assert len(calls) == 1
    # another problem (one cost changed) is solved afresh
    d4 = d.copy()
    d4[0, np.flatnonzero(np.isfinite(d4[0]))[0]] += 0.5
    lp.perfect_privacy_mapping(Problem(prior, d4))
    assert len(calls) == 2
    # the distortion in each problem's own units (1e-13 D normalises to D up to rounding)
    P3, d3 = lp.perfect_privacy_mapping(Problem(prior, 1e-13 * d))
    assert np.allclose(P3, P1, atol=1e-9) and d3 == pytest.approx(1e-13 * d1, rel=1e-9)
    lp._PP_CACHE.clear()
