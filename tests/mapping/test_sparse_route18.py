"""Very sparse reduced problems (erasure alphabets) in the edge form of :class:`Problem`.

A reduced problem whose allowed entries are at most ``EDGE_DENSITY`` of its cells computes its scores,
Lagrangian bounds, distortion and output usage over the allowed entries only. Checked here against the
dense computation of the same problem (the edge form switched off) and against an independent cvxpy
formulation over the stored transitions, on small erasure instances that take the edge form by the rule.
"""

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.mapping import _problem, erasure_alphabet, erasure_distortion, solve_mapping
from privrelease.mapping._checks import check_distortion
from privrelease.mapping._problem import EDGE_DENSITY, Problem
from privrelease.mapping._solver import _presolved_problem


def _erasure_instance(seed, n_features=4, n_inputs=60, n_values=8, n_classes=2):
    """Distinct tuples of ``n_features`` fields and their erasure alphabet (sparse), a random joint prior."""
    rng = np.random.default_rng(seed)
    X = np.unique(rng.integers(0, n_values, size=(n_inputs, n_features)), axis=0)
    D = check_distortion(erasure_distortion(X, erasure_alphabet(X), sparse=True), X.shape[0])
    prior = rng.dirichlet(np.full(n_classes * X.shape[0], 0.6)).reshape(n_classes, X.shape[0])
    return prior / prior.sum(), D


def _edge_cvxpy(prior, D, delta):
    """min I(A; C_hat) in bits over the stored transitions of ``D`` only (one variable per transition)."""
    D = sp.csr_array(D)
    k, m = D.shape
    r = np.repeat(np.arange(k), np.diff(D.indptr))
    c, d = D.indices, D.data
    pA, pc = prior.sum(axis=1), prior.sum(axis=0)
    n = r.size
    x = cp.Variable(n, nonneg=True)
    rows = sp.csr_array((np.ones(n), (r, np.arange(n))), shape=(k, n))
    col = sp.csr_array((pc[r], (c, np.arange(n))), shape=(m, n))
    q = col @ x
    obj = 0
    for a in range(prior.shape[0]):
        Ja = sp.csr_array((prior[a, r], (c, np.arange(n))), shape=(m, n)) @ x
        obj = obj + cp.sum(cp.rel_entr(Ja, pA[a] * q))
    pr = cp.Problem(cp.Minimize(obj), [rows @ x == 1, (pc[r] * d) @ x <= delta])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pr.solve(solver="CLARABEL")
    assert pr.status in ("optimal", "optimal_inaccurate")
    return pr.value / math.log(2)


def _budget(prob, share):
    return prob.to_user(prob.delta_min + share * (prob.delta_max - prob.delta_min))


@pytest.mark.parametrize("seed", range(3))
def test_erasure_instances_take_the_edge_form_and_dense_ones_do_not(seed):
    prior, D = _erasure_instance(seed)
    prob, _ = _presolved_problem(prior, D)
    assert isinstance(prob, Problem) and prob.edge_mode
    assert prob.mask.mean() <= EDGE_DENSITY
    rng = np.random.default_rng(seed)
    dense = Problem(rng.dirichlet(np.ones(40)).reshape(2, 20), rng.random((20, 30)))
    assert not dense.edge_mode


@pytest.mark.parametrize("seed", range(3))
def test_edge_certificate_is_the_dense_one(seed):
    prior, D = _erasure_instance(seed)
    prob, _ = _presolved_problem(prior, D)
    rng = np.random.default_rng(100 + seed)
    # mappings on the allowed entries: spread, near the cheapest one, and with unused outputs
    P = np.where(prob.mask, rng.random(prob.mask.shape) ** 6, 0.0)
    P /= P.sum(axis=1, keepdims=True)
    Q = 0.9 * prob.P_min + 0.1 * P
    R = np.where(prob.mask & (rng.random(prob.mask.shape) < 0.5), P, 0.0) + 1e-3 * prob.P_min
    R /= R.sum(axis=1, keepdims=True)
    hint = prob.posteriors(P)
    for M in (P, Q, R):
        for delta in (prob.distortion(M), 0.5 * (prob.distortion(M) + prob.delta_max), np.inf):
            for kw in ({}, {"target_bits": 1e-6, "lp": False}, {"pi_hint": hint}):
                out = {}
                for mode in (False, True):
                    prob.edge_mode = mode
                    out[mode] = prob.certificate(M, delta, **kw)
                prob.edge_mode = True
                (g0, mu0, f0), (g1, mu1, f1) = out[False], out[True]
                assert f1 == f0  # the objective is the dense one (the joint stays a dense product)
                assert abs(g1 - g0) <= 1e-12 * (1.0 + f0 / math.log(2))
                assert mu1 == pytest.approx(mu0, rel=1e-9, abs=1e-12)
        # the scores, the distortion and the usage: the dense numbers up to the order of the additions
        pi = prob.posteriors(M)
        prob.edge_mode = False
        S0, d0, q0 = prob.scores(pi), prob.distortion(M), prob._usage(M)
        prob.edge_mode = True
        S1 = prob.scores(pi)
        assert np.array_equal(np.isfinite(S1), prob.mask)
        np.testing.assert_allclose(S1[prob.mask], S0[prob.mask], rtol=1e-13, atol=1e-15)
        assert prob.distortion(M) == pytest.approx(d0, rel=1e-13)
        np.testing.assert_allclose(prob._usage(M), q0, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("seed", range(3))
def test_edge_bound_with_outputs_left_out_is_the_dense_one(seed):
    prior, D = _erasure_instance(seed)
    prob, _ = _presolved_problem(prior, D)
    rng = np.random.default_rng(seed)
    pi = prob.posteriors(np.where(prob.mask, rng.random(prob.mask.shape), 0.0))
    drop = rng.random(prob.kh) < 0.3
    rhs = 0.5 * (prob.delta_min + prob.delta_max)
    out = {}
    for mode in (False, True):
        prob.edge_mode = mode
        out[mode] = (prob._bound(pi, False, rhs, None, drop=drop), prob._bound(pi, False, rhs, None, drop=~drop))
    prob.edge_mode = True
    for a, b in zip(out[False], out[True]):
        assert (a is None) == (b is None)
        if a is not None:
            assert b[0] == pytest.approx(a[0], rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("seed", range(3))
def test_edge_form_solves_agree_with_dense_and_cvxpy(seed, monkeypatch):
    prior, D = _erasure_instance(seed)
    prob, _ = _presolved_problem(prior, D)
    delta = _budget(prob, 0.3)
    res = solve_mapping(prior, D, delta)
    assert res.status == "optimal" and res.certificate["gap_bits"] <= 1e-6
    ref = _edge_cvxpy(prior, D, delta)
    assert res.leakage <= ref + 1e-6
    assert res.leakage >= ref - 1e-5  # CLARABEL's default tolerance
    monkeypatch.setattr(_problem, "EDGE_DENSITY", 0.0)  # the dense computation of every quantity
    assert not _presolved_problem(prior, D)[0].edge_mode
    dense = solve_mapping(prior, D, delta)
    assert dense.status == "optimal"
    assert abs(res.leakage - dense.leakage) <= 2e-6
    assert res.distortion <= delta * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("seed", range(2))
def test_edge_form_leakage_cap_matches_dense(seed, monkeypatch):
    prior, D = _erasure_instance(10 + seed, n_inputs=40, n_features=5, n_values=6)
    assert _presolved_problem(prior, D)[0].edge_mode
    edge = solve_mapping(prior, D, max_leakage=0.01)
    monkeypatch.setattr(_problem, "EDGE_DENSITY", 0.0)
    dense = solve_mapping(prior, D, max_leakage=0.01)
    assert edge.status == dense.status == "optimal"
    assert edge.leakage <= 0.01 + 1e-9
    prob, _ = _presolved_problem(prior, D)
    span = prob.to_user(prob.delta_max - prob.delta_min)
    # both certified to 1e-6 of the distortion range: equal within twice that
    assert abs(edge.distortion - dense.distortion) <= 2e-6 * span + 1e-12
