"""The Schur complement's factorisation without copies (``_fast._cho_factor`` in place, ``_GramProduct.dense``)
computes the numbers of the plain computation: the factor of a copy, scipy's sparse product made dense, the same
Newton directions as the full KKT system solved by ``numpy.linalg.solve``, and the same solves (bitwise) as the
engine with the copying kernels; the answers still match an independent reference."""

import numpy as np
import pytest
from scipy.linalg import lapack
from threadpoolctl import threadpool_limits

from privrelease.mapping import _fast, squared_euclidean_distortion
from privrelease.mapping._problem import Problem
from shared_helpers import cholesky_failing_once, independent_bound_gap, reference_leakage


def _spd(rng, k, shift=1.0):
    """An exactly symmetric ``k x k`` matrix, C-contiguous: ``diag - V V^T`` as the Schur complements are built,
    positive definite for ``shift > 0``."""
    V = rng.normal(size=(k, k // 2)) * 10.0 ** rng.uniform(-3, 3, size=(k, 1))
    G = V @ V.T
    S = -G
    S[np.diag_indices(k)] += np.linalg.eigvalsh(G).max() + shift
    assert np.array_equal(S, S.T) and S.flags.c_contiguous
    return S


def _copying_cho_factor(S):
    """The factorisation before: LAPACK on a Fortran-ordered copy of ``S`` (``S`` left as it was)."""
    c, info = lapack.dpotrf(S, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotrf info {info}")
    return c


@pytest.mark.parametrize("k", [1, 2, 7, 64, 301])
def test_cholesky_in_place_is_the_factor_of_a_copy(k):
    rng = np.random.default_rng(k)
    S = _spd(rng, k) if k > 1 else np.array([[2.5]])
    S0 = S.copy()
    expected = _copying_cho_factor(S0)
    L = _fast._cho_factor(S)
    # written over S (no copy), the same numbers as the factor of the copy, and a Cholesky factor of S
    assert np.shares_memory(L, S)
    assert np.array_equal(np.tril(L), np.tril(expected))
    Lt = np.tril(L)
    np.testing.assert_allclose(Lt @ Lt.T, S0, rtol=0.0, atol=1e-12 * np.abs(S0).max())
    np.testing.assert_allclose(Lt, np.linalg.cholesky(S0), rtol=1e-8, atol=1e-12 * np.abs(Lt).max())
    # a right-hand side solved with it is S0^-1 b
    b = rng.normal(size=k)
    np.testing.assert_allclose(S0 @ _fast._cho_solve(L, b), b, rtol=0.0, atol=1e-8 * np.abs(b).max())


def test_cholesky_of_a_matrix_it_may_not_overwrite_copies_it():
    rng = np.random.default_rng(5)
    S = np.asfortranarray(_spd(rng, 40))
    F = S.copy(order="F")
    R = _spd(rng, 40)
    R.flags.writeable = False
    R0 = R.copy()
    for M, M0 in ((S, F), (R, R0)):
        L = _fast._cho_factor(M)
        assert not np.shares_memory(L, M) and np.array_equal(M, M0)
        assert np.array_equal(np.tril(L), np.tril(_copying_cho_factor(M0)))


@pytest.mark.parametrize("k", [2, 9, 120])
def test_a_failed_cholesky_in_place_leaves_what_restores_the_matrix(k):
    # an indefinite S whose leading block is positive definite: dpotrf stops at the last pivot, having written
    # over S's upper triangle; the strictly lower one is intact, and _restore_upper gives back S exactly (its
    # diagonal from the copy taken before)
    rng = np.random.default_rng(k)
    S = _spd(rng, k)
    S[-1, -1] = -1.0
    assert np.linalg.eigvalsh(S).min() < 0
    S0, d0 = S.copy(), np.diag(S).copy()
    with pytest.raises(np.linalg.LinAlgError, match=f"info {k}: the Schur complement is not positive definite"):
        _fast._cho_factor(S)
    assert not np.array_equal(S, S0)  # overwritten in place
    assert np.array_equal(np.tril(S, -1), np.tril(S0, -1))
    _fast._restore_upper(S, d0)
    assert np.array_equal(S, S0)


def _full_kkt_direction(prob, r, j, x, Dinv, r1, g):
    """The Newton direction of ``[K E^T; E 0] [dx; nu] = [-g; 0]`` by ``numpy.linalg.solve``, ``K`` written out:
    ``A^T blockdiag_j(diag(1 / J_j) - 1 1^T / q_j) A + diag(1 / Dinv) (+ r1 r1^T)``, ``A`` the map from the entries
    to the joint ``J[a, j] = sum_{e in j} p(a, r_e) x_e``."""
    na, n = prob.M.shape[0], r.size
    cols, jc = np.unique(j, return_inverse=True)
    A = np.zeros((na * cols.size, n))
    A[np.arange(na)[:, None] * cols.size + jc[None, :], np.arange(n)[None, :]] = prob.M[:, r]
    Jv = A @ x
    q = Jv.reshape(na, cols.size).sum(axis=0)
    H = np.diag(np.where(Jv > 0, 1.0 / np.where(Jv > 0, Jv, 1.0), 0.0))
    same = np.equal.outer(np.tile(np.arange(cols.size), na), np.tile(np.arange(cols.size), na))
    H -= same / np.tile(q, na)[:, None]
    K = A.T @ H @ A + np.diag(1.0 / Dinv)
    if r1 is not None:
        K += np.outer(r1, r1)
    E = np.zeros((prob.k, n))
    E[r, np.arange(n)] = 1.0
    kkt = np.block([[K, E.T], [E, np.zeros((prob.k, prob.k))]])
    return np.linalg.solve(kkt, np.concatenate([-g, np.zeros(prob.k)]))[:n]


@pytest.mark.parametrize("path", ["gram", "full"])
@pytest.mark.parametrize("na", [2, 3])
@pytest.mark.parametrize("rank_one", [False, True])
def test_newton_direction_with_the_in_place_factorisation_is_the_full_kkt_solution(monkeypatch, path, na, rank_one):
    # the sparse Gram product made dense and factored in place ("gram"), or the full support's dense product
    # factored in place ("full"): the structured direction is numpy's solve of the whole KKT system
    rng = np.random.default_rng(na + 10 * rank_one)
    k = 12 if path == "full" else 40
    prior = rng.dirichlet(np.full(na * k, 0.8)).reshape(na, k)
    prob = Problem(prior, squared_euclidean_distortion(rng.normal(size=(k, 2))))
    if path == "full":
        sup = np.ones((prob.k, prob.kh), dtype=bool)
    else:
        sup = np.zeros((prob.k, prob.kh), dtype=bool)
        for c in range(prob.k):
            sup[c, rng.choice(prob.kh, size=3, replace=False)] = True
        sup[np.arange(prob.k), np.arange(prob.k)] = True
    r, j = np.nonzero(sup)
    monkeypatch.setattr(_fast, "_SPARSE_SCHUR", -1.0)  # never the sparse LU: the dense factorisation
    calls = {"dense": 0, "cho": 0}
    dense, cho = _fast._GramProduct.dense, _fast._cho_factor

    def spy_dense(self):
        calls["dense"] += 1
        return dense(self)

    def spy_cho(S):
        calls["cho"] += 1
        L = cho(S)
        assert np.shares_memory(L, S)  # in place
        return L

    monkeypatch.setattr(_fast._GramProduct, "dense", spy_dense)
    monkeypatch.setattr(_fast, "_cho_factor", spy_cho)
    bar = _fast._Barrier(prob, r, j, 0.5, False)
    assert bar.dense == (path == "full")
    x = rng.uniform(0.1, 1.0, size=r.size)
    x /= np.bincount(r, weights=x)[r]
    Dinv = rng.uniform(0.01, 1.0, size=r.size)
    r1 = rng.normal(size=r.size) if rank_one else None
    g, J = bar.grad(x)
    dx, _ = bar.factor(J, Dinv, r1)(g)
    assert calls == {"dense": int(path == "gram"), "cho": 1}
    expected = _full_kkt_direction(prob, r, j, x, Dinv, r1, g)
    np.testing.assert_allclose(dx, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
    np.testing.assert_allclose(np.bincount(r, weights=dx, minlength=prob.k), 0.0, atol=1e-12)


def test_factor_retries_a_failed_in_place_cholesky_on_the_restored_shifted_matrix(monkeypatch):
    # the first factorisation fails having written over S (as dpotrf does): the retry factors the complement
    # itself, its diagonal shifted by 1e-13 of its largest, and the direction is still the full KKT solution
    rng = np.random.default_rng(3)
    k = 40
    prior = rng.dirichlet(np.full(2 * k, 0.8)).reshape(2, k)
    prob = Problem(prior, squared_euclidean_distortion(rng.normal(size=(k, 2))))
    sup = np.zeros((k, k), dtype=bool)
    for c in range(k):
        sup[c, rng.choice(k, size=3, replace=False)] = True
    sup[np.arange(k), np.arange(k)] = True
    r, j = np.nonzero(sup)
    monkeypatch.setattr(_fast, "_SPARSE_SCHUR", -1.0)
    seen = []
    monkeypatch.setattr(_fast, "_cho_factor", cholesky_failing_once(_fast._cho_factor, seen))
    bar = _fast._Barrier(prob, r, j, 0.5, False)
    x = rng.uniform(0.1, 1.0, size=r.size)
    x /= np.bincount(r, weights=x)[r]
    Dinv = rng.uniform(0.01, 1.0, size=r.size)
    g, J = bar.grad(x)
    dx, _ = bar.factor(J, Dinv, None)(g)
    assert len(seen) == 2
    d0 = np.diag(seen[0])
    expected_S = seen[0].copy()
    expected_S[np.diag_indices(k)] = d0 + 1e-13 * np.abs(d0).max()
    assert np.array_equal(seen[1], expected_S)
    expected = _full_kkt_direction(prob, r, j, x, Dinv, None, g)
    np.testing.assert_allclose(dx, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())


def _solve_counted(prob, delta, copying, monkeypatch):
    """``solve_fast`` with the in-place kernels (``copying=False``) or the copying ones of before: the mapping, the
    number of Newton systems and of dense factorisations."""
    n = {"newton": 0, "cho": 0, "dense": 0}
    factor = _fast._Barrier.factor
    cho = _copying_cho_factor if copying else _fast._cho_factor
    dense = (lambda self: self.sparse().toarray()) if copying else _fast._GramProduct.dense

    def counted_dense(self):
        n["dense"] += 1
        return dense(self)

    def counted_factor(self, *a, **kw):
        n["newton"] += 1
        return factor(self, *a, **kw)

    def counted_cho(S):
        n["cho"] += 1
        return cho(S)

    with monkeypatch.context() as m:
        m.setattr(_fast._Barrier, "factor", counted_factor)
        m.setattr(_fast, "_cho_factor", counted_cho)
        m.setattr(_fast._GramProduct, "dense", counted_dense)
        with threadpool_limits(limits=1, user_api="blas"):
            P, hint = _fast.solve_fast(prob, delta, tol=1e-6, return_hint=True)
    return P, hint, n


@pytest.mark.parametrize("k", [40, 230])
def test_solves_are_those_of_the_copying_kernels_and_certified(monkeypatch, k):
    # the whole solve, every Newton system, the same numbers as with the copying kernels (bitwise: the same path,
    # the same mapping), on the full support (k = 40) and on a working set (k = 230, the sparse Gram product made
    # dense); certified by the library's bound and within 1e-6 bits of an independent Lagrangian bound
    rng = np.random.default_rng(k)
    X = rng.normal(size=(k, 2))
    d = squared_euclidean_distortion(X)
    pc = rng.dirichlet(np.full(k, 2.0))
    post = 1.0 / (1.0 + np.exp(-(2.0 * X[:, 0] + 0.5 * rng.normal(size=k))))
    prior = np.vstack([pc * (1 - post), pc * post])
    delta_user = 0.05 * float(d.mean())
    prob = Problem(prior, d)
    delta = prob.to_internal(delta_user)
    P_new, hint, n_new = _solve_counted(prob, delta, False, monkeypatch)
    P_old, _, n_old = _solve_counted(prob, delta, True, monkeypatch)
    assert n_new == n_old and n_new["cho"] > 0
    assert (n_new["dense"] > 0) == (k == 230)  # the working set's sparse Gram product made dense
    assert np.array_equal(P_new, P_old)
    assert (prob.k * prob.kh > _fast._FULL_SUPPORT_LIMIT) == (k == 230)
    assert prob.distortion(P_new) <= delta * (1 + 1e-12)
    gap, _, f = prob.certificate(P_new, delta, target_bits=1e-6, pi_hint=hint)
    assert gap <= 1e-6
    assert independent_bound_gap(prior, d, delta_user, prob.expand(P_new), f / np.log(2)) <= 1e-6


def test_solve_matches_the_cvxpy_reference_on_a_small_instance():
    # the full-support path (dense Gram product, in-place Cholesky) against the plain cvxpy formulation
    from privrelease.mapping import solve_mapping

    rng = np.random.default_rng(11)
    k = 25
    prior = rng.dirichlet(np.full(2 * k, 0.7)).reshape(2, k)
    d = squared_euclidean_distortion(rng.normal(size=(k, 2)))
    delta = 0.1 * float((prior.sum(axis=0)[:, None] * d).sum())
    res = solve_mapping(prior, d, delta=delta, solver="fast")
    assert res.status == "optimal"
    ref = reference_leakage(prior, d, delta)
    assert res.leakage <= ref + 1e-6
    assert abs(res.leakage - ref) <= 1e-5
