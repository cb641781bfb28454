"""Sparse distortions: the engine over the allowed transitions only (issue 11, "erasures at scale").

Every answer of the sparse path is checked against an independent computation:
the plain dense cvxpy formulation written here, and the dense engine on the same
problem (``inf`` where the sparse matrix stores nothing).
"""

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.exceptions import InfeasibleBudgetError
from privrelease.mapping import (
    erasure_alphabet,
    erasure_distortion,
    expected_distortion,
    leakage,
    map_attack_accuracy,
    privacy_distortion_curve,
    solve_mapping,
)
from privrelease.mapping._checks import check_distortion


def _to_sparse(D):
    r, c = np.nonzero(np.isfinite(D))
    return sp.csr_array((D[r, c], (r, c)), shape=D.shape)


def _plain_cvxpy(prior, D, delta):
    """min I(A; C_hat) in bits s.t. the budget, by the textbook formulation (dense, CLARABEL then SCS)."""
    k, m = D.shape
    X = cp.Variable((k, m), nonneg=True)
    pA, pc = prior.sum(axis=1), prior.sum(axis=0)
    forb = ~np.isfinite(D)
    cons = [cp.sum(X, axis=1) == 1, cp.sum(cp.multiply(pc[:, None] * np.where(forb, 0, D), X)) <= delta]
    if forb.any():
        cons.append(cp.multiply(forb.astype(float), X) == 0)
    J = prior @ X
    q = pc @ X
    obj = cp.sum(cp.rel_entr(J, pA[:, None] @ cp.reshape(q, (1, m), order="C")))
    pr = cp.Problem(cp.Minimize(obj), cons)
    for solver, opts in (("CLARABEL", {}), ("SCS", {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 100000})):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pr.solve(solver=solver, **opts)
        except cp.error.SolverError:
            continue
        if pr.status in ("optimal", "optimal_inaccurate"):
            return pr.value / math.log(2)
    raise AssertionError("the plain reference did not solve")


def _erasure_instance(seed, n_features, n_classes, n_inputs=10):
    rng = np.random.default_rng(seed)
    X = np.unique(rng.integers(0, 3, size=(n_inputs, n_features)), axis=0)
    D = erasure_distortion(X, erasure_alphabet(X))
    prior = rng.dirichlet(np.full(n_classes * X.shape[0], 0.4)).reshape(n_classes, X.shape[0])
    return prior / prior.sum(), D


def _random_pattern_instance(seed):
    """A random sparse pattern (about 40% allowed, every row at least one) with random costs."""
    rng = np.random.default_rng(seed)
    k, m, na = rng.integers(4, 9), rng.integers(3, 8), rng.integers(2, 4)
    allowed = rng.random((k, m)) < 0.4
    allowed[np.arange(k), rng.integers(0, m, k)] = True
    D = np.where(allowed, rng.integers(0, 4, (k, m)).astype(float), np.inf)
    prior = rng.dirichlet(np.full(na * k, 0.5)).reshape(na, k)
    return prior, D


@pytest.mark.parametrize("presolve", [True, False], ids=["presolved", "sparse-engine"])
@pytest.mark.parametrize("seed", range(8))
def test_sparse_delta_mode_agrees_with_plain_cvxpy_and_dense(seed, presolve, monkeypatch):
    # small sparse distortions are solved dense after the presolve (``REDUCED_DENSE_CELLS_LIMIT``); without it, by
    # the sparse engine over the allowed transitions (column generation, the edge formulation), as larger ones are
    from privrelease.mapping import _solver

    prior, D = (_erasure_instance(seed, 1 + seed % 3, 2 + seed % 2) if seed < 5 else _random_pattern_instance(seed))
    if not presolve:
        monkeypatch.setattr(_solver, "reduce_outputs", lambda D: None)
    Ds = _to_sparse(D)
    fin = np.isfinite(D)
    pc = prior.sum(axis=0)
    d_min = float(np.sum(pc * np.where(fin, D, np.inf).min(axis=1)))
    d_max = float(np.sum(pc * np.where(fin, D, -np.inf).max(axis=1)))
    delta = d_min + 0.35 * (d_max - d_min)
    res = solve_mapping(prior, Ds, delta)
    assert res.status == "optimal" and res.certificate["gap_bits"] <= 1e-6
    assert isinstance(res.mapping, sp.csr_array)
    # the mapping lives on the allowed transitions, rows are distributions, the budget holds
    assert np.array_equal(res.mapping.indices, check_distortion(Ds, D.shape[0]).indices)
    np.testing.assert_allclose(np.asarray(res.mapping.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    assert res.distortion <= delta * (1 + 1e-9) + 1e-12
    ref = _plain_cvxpy(prior, D, delta)
    assert res.leakage <= ref + 1e-6
    assert res.leakage >= ref - 1e-5  # the reference solves to about 1e-8 nats
    assert abs(res.leakage - solve_mapping(prior, D, delta).leakage) <= 2e-6
    # the reported figures are those of the mapping (the leakage functions take sparse mappings)
    dense = res.mapping.toarray()
    assert res.leakage == pytest.approx(leakage(prior, dense), abs=1e-12)
    assert map_attack_accuracy(prior, res.mapping) == pytest.approx(map_attack_accuracy(prior, dense), abs=1e-12)
    assert res.distortion == pytest.approx(expected_distortion(prior, dense, D), abs=1e-12)


@pytest.mark.parametrize("seed", range(2))
def test_sparse_leakage_cap_and_perfect_privacy_match_dense(seed):
    prior, D = _erasure_instance(10 + seed, 1 + seed % 2, 2 + seed % 2)
    Ds = _to_sparse(D)
    for cap in (0.0, 0.01):
        s = solve_mapping(prior, Ds, max_leakage=cap)
        d = solve_mapping(prior, D, max_leakage=cap)
        assert s.status == "optimal"
        assert s.leakage <= cap + 1e-9
        # both are certified to DIST_RTOL of the range: equal within twice that
        fin = np.isfinite(D)
        span = float(np.sum(prior.sum(axis=0) * (np.where(fin, D, -np.inf).max(axis=1)
                                                  - np.where(fin, D, np.inf).min(axis=1))))
        assert abs(s.distortion - d.distortion) <= 2e-6 * span + 1e-12


@pytest.mark.parametrize("seed", range(2))
def test_sparse_maximal_leakage_matches_dense(seed):
    prior, D = _erasure_instance(20 + seed, 2, 2)
    Ds = _to_sparse(D)
    for kw in (dict(delta=0.4), dict(max_leakage=0.05)):
        s = solve_mapping(prior, Ds, leakage="maximal_leakage", **kw)
        d = solve_mapping(prior, D, leakage="maximal_leakage", **kw)
        assert s.status == d.status == "optimal"
        assert s.leakage == pytest.approx(d.leakage, abs=1e-7)
        assert s.distortion == pytest.approx(d.distortion, abs=1e-7)


def test_perfect_privacy_keeps_a_private_output_whose_posterior_is_the_prior():
    # input 0 has p(a | 0) = p(a): its own (private, zero-cost) output stays allowed at perfect privacy
    prior = np.array([[0.2, 0.25, 0.05], [0.2, 0.05, 0.25]])  # p(a) = (1/2, 1/2) = p(a | 0)
    X = np.array([[0], [1], [2]])
    D = erasure_distortion(X, erasure_alphabet(X))
    for dist in (D, _to_sparse(D)):
        res = solve_mapping(prior, dist, max_leakage=0.0)
        M = res.mapping.toarray() if sp.issparse(res.mapping) else res.mapping
        assert res.leakage <= 1e-9
        assert M[0, 0] == pytest.approx(1.0, abs=1e-9)  # released as is, at no cost
        pc = prior.sum(axis=0)
        # the rest must be erased together: mixing 1 and 2 gives a posterior different from the prior
        assert res.distortion == pytest.approx(pc[1] + pc[2], abs=1e-9)


def test_sparse_curve_matches_dense_curve():
    prior, D = _erasure_instance(31, 2, 2)
    deltas = [0.0, 0.2, 0.6, 5.0]
    cs = privacy_distortion_curve(prior, _to_sparse(D), deltas)
    cd = privacy_distortion_curve(prior, D, deltas)
    np.testing.assert_allclose(cs["leakage_bits"], cd["leakage_bits"], atol=2e-6)
    assert (cs["status"] == "optimal").all()


def test_sparse_distortion_validation():
    prior = np.array([[0.3, 0.2], [0.1, 0.4]])
    ok = sp.csr_array((np.array([0.0, 1.0, 0.0]), (np.array([0, 0, 1]), np.array([0, 2, 1]))), shape=(2, 3))
    D = check_distortion(ok, 2)
    assert D.nnz == 3 and D.data.tolist() == [0.0, 1.0, 0.0]  # explicit zeros are allowed transitions
    with pytest.raises(ValueError, match=r"stores the transition \(0, 0\) more than once"):
        check_distortion(sp.coo_array((np.array([0.0, 1.0]), (np.array([0, 0]), np.array([0, 0]))), shape=(2, 2)), 2)
    with pytest.raises(ValueError, match="NaN"):
        check_distortion(sp.csr_array(np.array([[np.nan, 1.0], [1.0, 0.5]])), 2)
    with pytest.raises(ValueError, match="non-negative"):
        check_distortion(sp.csr_array(np.array([[-1.0, 1.0], [1.0, 0.5]])), 2)
    with pytest.raises(ValueError, match="3 rows but the prior has 2"):
        check_distortion(sp.csr_array(np.ones((3, 2))), 2)
    stored_inf = check_distortion(sp.csr_array(np.array([[np.inf, 1.0], [1.0, 0.5]])), 2)
    assert stored_inf.nnz == 3  # a stored inf is a forbidden transition
    empty_row = sp.csr_array((np.array([0.0]), (np.array([0]), np.array([0]))), shape=(2, 2))
    with pytest.raises(InfeasibleBudgetError, match="row 1 of distortion has no allowed"):
        solve_mapping(prior, empty_row, 0.5)
    with pytest.raises(ValueError, match="solver='fast' needs a dense distortion"):
        solve_mapping(prior, ok, 0.5, solver="fast")
    res = solve_mapping(prior, ok, 0.5)
    with pytest.raises(ValueError, match="sparsity pattern"):
        solve_mapping(prior, ok, 0.4, warm_start=sp.csr_array(np.ones((2, 3)) / 3))
    assert solve_mapping(prior, ok, 0.4, warm_start=res).status == "optimal"


def test_expected_distortion_with_mass_outside_a_sparse_pattern_is_infinite():
    prior = np.array([[0.3, 0.2], [0.1, 0.4]])
    D = sp.csr_array((np.array([0.0, 1.0, 0.0]), (np.array([0, 0, 1]), np.array([0, 1, 1]))), shape=(2, 2))
    inside = sp.csr_array(np.array([[0.5, 0.5], [0.0, 1.0]]))
    assert expected_distortion(prior, inside, D) == pytest.approx(0.4 * 0.5)
    outside = np.array([[0.5, 0.5], [0.5, 0.5]])  # row 1 puts mass on its forbidden output 0
    assert expected_distortion(prior, outside, D) == np.inf


@pytest.mark.parametrize("n_features", [1, 2, 3])
def test_sparse_erasure_distortion_is_the_dense_one_on_its_pattern(n_features):
    rng = np.random.default_rng(n_features)
    X = np.unique(rng.integers(0, 4, (25, n_features)), axis=0)
    Y = erasure_alphabet(X)
    dense = erasure_distortion(X, Y)
    S = erasure_distortion(X, Y, sparse=True)
    assert S.nnz == X.shape[0] * 2 ** n_features == np.isfinite(dense).sum()
    full = np.full(dense.shape, np.inf)
    full[np.repeat(np.arange(S.shape[0]), np.diff(S.indptr)), S.indices] = S.data
    np.testing.assert_array_equal(full, dense)


def test_sparse_distortion_without_zeros_or_diagonal_warns_that_the_diagonal_is_forbidden():
    # csr_matrix(dense) drops the zero diagonal: every c -> c transition becomes forbidden
    prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    with pytest.warns(UserWarning, match=r"stores neither a zero nor any diagonal entry"):
        res = solve_mapping(prior, sp.csr_matrix(1.0 - np.eye(2)), delta=1.0)
    # what the warning says happened: the mapping cannot keep any value
    assert np.allclose(np.diag(res.mapping.toarray()), 0.0)
    D = sp.csr_matrix(1.0 - np.eye(2))
    D.setdiag(0.0)  # stored explicitly: allowed, no warning, the identity is reachable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(prior, D, delta=0.0)
    assert np.allclose(res.mapping.toarray(), np.eye(2))
