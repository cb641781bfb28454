"""The perfect-privacy LP for two classes solved as a transportation problem by column
generation (``_lp._two_class_transport``), against the plain LP in the mapping variables."""

import math

import numpy as np
import pytest

import privrelease.mapping._lp as lp
from privrelease.mapping import leakage
from privrelease.mapping._problem import Problem


def _plain(prob, monkeypatch):
    """``perfect_privacy_mapping`` with the transport path switched off (the plain LP)."""
    with monkeypatch.context() as m:
        m.setattr(lp, "_two_class_transport", lambda prob: None)
        return lp.perfect_privacy_mapping(prob)


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
        used += lp._two_class_transport(prob) is not None
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
    P = lp._two_class_transport(prob)
    assert P is not None
    # the full path LP: every (i, l, j)
    g = prob.M[0] - prob.pA[0] * prob.pc
    pos, neg = np.flatnonzero(g > 0), np.flatnonzero(g < 0)
    cost = (prob.W[pos] / g[pos, None])[:, None, :] + (prob.W[neg] / -g[neg, None])[None, :, :]
    ii, ll, jj = np.unravel_index(np.arange(cost.size), cost.shape)
    import scipy.sparse as sp
    from scipy.optimize import linprog
    n = cost.size
    A = sp.csr_matrix((np.ones(2 * n), (np.concatenate([ii, pos.size + ll]), np.tile(np.arange(n), 2))))
    b = np.concatenate([g[pos] / g[pos].sum(), g[neg] / g[neg].sum()])
    res = linprog(cost.ravel(), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    assert res.status == 0
    # the path LP's optimum in distortion units: sum over paths of flow * cost * (side total)
    zero = prob.W[g == 0].min(axis=1).sum() if np.any(g == 0) else 0.0
    assert prob.distortion(P) == pytest.approx(res.fun * g[pos].sum() + zero, rel=1e-9)
    assert prob.objective(P) <= 1e-12
