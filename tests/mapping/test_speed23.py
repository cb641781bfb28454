"""The Schur complement's Gram product made dense in row blocks, one triangle (``_fast._GramProduct``, stop 46):
the triangle it writes is scipy's whole product ``-(V_s V_s^T)`` exactly, its count of nonzeros is the whole
product's (numeric zeros included), the Cholesky factor of it is the factor of the whole matrix, and a whole solve
takes the same path (the same Newton systems, bitwise the same mapping) as with the whole product; the answer is
certified against an independent bound."""

import numpy as np
import pytest
import scipy.sparse
from threadpoolctl import threadpool_limits

from privrelease.mapping import _fast, squared_euclidean_distortion
from privrelease.mapping._problem import Problem
from shared_helpers import cholesky_failing_once, independent_bound_gap


def _random_support(rng, k, nc, per_row):
    """``(r, jc)`` of a support, row by row with its outputs increasing (as ``np.nonzero`` gives them), some rows
    and some outputs empty, the rest holding 1 .. ``per_row`` entries."""
    sup = np.zeros((k, nc), dtype=bool)
    for c in range(k):
        sup[c, rng.choice(nc, size=rng.integers(1, per_row + 1), replace=False)] = True
    sup[rng.random(k) < 0.1] = False  # empty rows
    sup[:, rng.random(nc) < 0.1] = False  # empty outputs
    return np.nonzero(sup)


def _values(rng, n, nb):
    """``V`` over twelve decades, some entries exactly 0 (the factorisation zeroes those below 1e-150)."""
    V = rng.normal(size=(n, nb)) * 10.0 ** rng.uniform(-6, 6, size=(n, 1))
    V[rng.random(V.shape) < 0.1] = 0.0
    return V


def _reference(r, jc, nb, k, nc, V):
    """scipy's whole product ``-(V_s V_s^T)``, built afresh."""
    rows, cols = np.repeat(r, nb), (jc[:, None] * nb + np.arange(nb)).ravel()
    Vs = scipy.sparse.csr_matrix((V.ravel(), (rows, cols)), shape=(k, nc * nb))
    return -(Vs @ Vs.T)


@pytest.mark.parametrize("na", [2, 3, 4, 6])
@pytest.mark.parametrize("k", [37, 130])
def test_blocked_triangle_is_the_whole_products_triangle_exactly(monkeypatch, na, k):
    monkeypatch.setattr(_fast, "_GRAM_BLOCK_ROWS", 8)  # several blocks at these sizes, the last ones uneven
    rng = np.random.default_rng(100 * na + k)
    nb, nc = na - 1, k + 5
    r, jc = _random_support(rng, k, nc, 12)
    gram = _fast._GramProduct(r, jc, nb, k, nc)
    assert gram._blocks is not None and len(gram._blocks) >= 4
    bounds = [b[:2] for b in gram._blocks]
    assert bounds[0][0] == 0 and bounds[-1][1] == k and all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    below = np.zeros((k, k), dtype=bool)  # left of each row's diagonal block: not made
    for b0, b1 in bounds:
        below[b0:b1, :b0] = True
    iu = np.triu_indices(k)
    for _ in range(3):  # new values on the same support, call after call
        V = _values(rng, r.size, nb)
        expected = _reference(r, jc, nb, k, nc, V)
        E = expected.toarray()
        assert gram.product(V) == expected.nnz  # the whole product's nonzeros, from the blocks'
        D = gram.dense()
        assert D.shape == (k, k) and D.flags.c_contiguous
        assert np.array_equal(D[iu], E[iu])  # bitwise: the same sums in the same order
        assert not D[below].any()
        # the part of each diagonal block below its diagonal is made too, the mirror image of its upper part
        for b0, b1 in bounds:
            assert np.array_equal(D[b0:b1, b0:b1], E[b0:b1, b0:b1])
        # asked for a sparse matrix, the whole product
        gram.product(V)
        got = gram.sparse()
        assert got.nnz == expected.nnz and np.array_equal(got.toarray(), E)
        # and the same matrix as the product written out in dense form (up to the order of the additions)
        Vd = np.zeros((k, nc * nb))
        Vd[np.repeat(r, nb), (jc[:, None] * nb + np.arange(nb)).ravel()] = V.ravel()
        np.testing.assert_allclose(D[iu], -(Vd @ Vd.T)[iu], rtol=1e-12, atol=1e-12 * np.abs(E).max())


def test_nonzero_count_with_exact_cancellations(monkeypatch):
    # rows whose products cancel exactly (1 * 1 + 1 * -1 = 0 in two shared outputs): scipy drops those entries, and
    # the count from the blocks drops them too, on both sides of the diagonal
    monkeypatch.setattr(_fast, "_GRAM_BLOCK_ROWS", 4)
    k = 16
    r = np.repeat(np.arange(k), 2)
    jc = np.tile([0, 1], k)
    V = np.ones((2 * k, 1))
    V[1::4] = -1.0  # rows 0, 2, 4, ...: (1, -1); rows 1, 3, ...: (1, 1)
    gram = _fast._GramProduct(r, jc, 1, k, 2)
    assert gram._blocks is not None and gram._nnz == k * k
    expected = _reference(r, jc, 1, k, 2, V)
    assert expected.nnz == k * k // 2  # half the pairs cancel
    assert gram.product(V) == expected.nnz
    D = gram.dense()
    iu = np.triu_indices(k)
    assert np.array_equal(D[iu], expected.toarray()[iu])


def test_structurally_sparse_products_are_made_whole(monkeypatch):
    # a product that cannot reach _SPARSE_SCHUR of its entries is factored as sparse: no blocks, scipy's product
    monkeypatch.setattr(_fast, "_GRAM_BLOCK_ROWS", 8)
    rng = np.random.default_rng(7)
    k = 200
    r, jc = np.arange(k), rng.permutation(k)  # one entry a row, one row an output: the product is diagonal
    gram = _fast._GramProduct(r, jc, 2, k, k)
    assert gram._blocks is None
    V = _values(rng, k, 2)
    expected = _reference(r, jc, 2, k, k, V)
    assert gram.product(V) == expected.nnz
    assert np.array_equal(gram.sparse().toarray(), expected.toarray())


def test_cholesky_of_the_triangle_is_the_factor_of_the_whole_matrix(monkeypatch):
    # dpotrf reads the triangle the blocks make: the factor is bitwise that of the whole complement
    monkeypatch.setattr(_fast, "_GRAM_BLOCK_ROWS", 16)
    rng = np.random.default_rng(3)
    k, nb = 150, 2
    r, jc = _random_support(rng, k, k, 10)
    gram = _fast._GramProduct(r, jc, nb, k, k)
    assert gram._blocks is not None
    V = _values(rng, r.size, nb)
    E = _reference(r, jc, nb, k, k, V).toarray()
    diag = -np.diag(E) + 1.0 + np.abs(E).sum(axis=1)  # diagonally dominant: positive definite
    gram.product(V)
    D = gram.dense()
    D[np.diag_indices(k)] += diag
    E[np.diag_indices(k)] += diag
    expected = _fast._cho_factor(E.copy())
    L = _fast._cho_factor(D)
    assert np.array_equal(np.tril(L), np.tril(expected))  # the factor (written over S.T's lower triangle)
    Lt = np.tril(L)
    np.testing.assert_allclose(Lt @ Lt.T, E, rtol=0.0, atol=1e-12 * np.abs(E).max())


def _logistic_instance(k, seed):
    """``bench_solver.scale_instance``'s logistic family: |A| = 2, k centres in the plane, squared-Euclidean."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(k, 2))
    d = squared_euclidean_distortion(X)
    pc = rng.dirichlet(np.full(k, 2.0))
    post = 1.0 / (1.0 + np.exp(-(2.0 * X[:, 0] + 0.5 * rng.normal(size=k))))
    return np.vstack([pc * (1 - post), pc * post]), d, 0.05 * float(d.mean())


def _solve_counted(prob, delta, blocks, monkeypatch):
    """``solve_fast`` with the Gram product in blocks of 16 rows (``blocks``) or whole: the mapping, its hint, the
    number of Newton systems and of blocked products."""
    n = {"newton": 0, "blocked": 0}
    factor, product = _fast._Barrier.factor, _fast._GramProduct.product

    def counted_factor(self, *a, **kw):
        n["newton"] += 1
        return factor(self, *a, **kw)

    def counted_product(self, V):
        n["blocked"] += self._blocks is not None
        return product(self, V)

    with monkeypatch.context() as m:
        m.setattr(_fast, "_GRAM_BLOCK_ROWS", 16)
        m.setattr(_fast, "_GRAM_BLOCKS", 8 if blocks else 1)
        m.setattr(_fast._Barrier, "factor", counted_factor)
        m.setattr(_fast._GramProduct, "product", counted_product)
        with threadpool_limits(limits=1, user_api="blas"):
            P, hint = _fast.solve_fast(prob, delta, tol=1e-6, return_hint=True)
    return P, hint, n


@pytest.mark.parametrize("na", [2, 3])
def test_solve_takes_the_same_path_as_with_the_whole_product(monkeypatch, na):
    # a working set (k = 230: the sparse Gram product made dense): every Newton system the same numbers, so the
    # same count of them and bitwise the same mapping; certified, and within 1e-6 bits of an independent bound
    k = 230
    if na == 2:
        prior, d, delta_user = _logistic_instance(k, 23)
    else:
        rng = np.random.default_rng(46)
        prior = rng.dirichlet(np.full(na * k, 0.7)).reshape(na, k)
        d = squared_euclidean_distortion(rng.normal(size=(k, 2)))
        delta_user = 0.05 * float(d.mean())
    prob = Problem(prior, d)
    assert prob.k * prob.kh > _fast._FULL_SUPPORT_LIMIT
    delta = prob.to_internal(delta_user)
    P_new, hint_new, n_new = _solve_counted(prob, delta, True, monkeypatch)
    P_old, hint_old, n_old = _solve_counted(prob, delta, False, monkeypatch)
    assert n_new["blocked"] > 0 and n_old["blocked"] == 0
    assert n_new["newton"] == n_old["newton"]
    assert np.array_equal(P_new, P_old)
    assert (hint_new is None) == (hint_old is None) and (hint_new is None or np.array_equal(hint_new, hint_old))
    assert prob.distortion(P_new) <= delta * (1 + 1e-12)
    gap, _, f = prob.certificate(P_new, delta, target_bits=1e-6, pi_hint=hint_new)
    assert gap <= 1e-6
    assert independent_bound_gap(prior, d, delta_user, prob.expand(P_new), f / np.log(2)) <= 1e-6


def test_failed_cholesky_retries_on_the_same_shifted_triangle(monkeypatch):
    # the first factorisation fails having written over the triangle (as dpotrf does): the retry factors the
    # complement made again, its diagonal shifted by 1e-13 of its largest; the direction is bitwise the one of the
    # whole product's path (which restores the triangle from the intact other one), and keeps the row sums
    rng = np.random.default_rng(5)
    k = 120
    prior = rng.dirichlet(np.full(2 * k, 0.8)).reshape(2, k)
    prob = Problem(prior, squared_euclidean_distortion(rng.normal(size=(k, 2))))
    sup = np.eye(k, dtype=bool)
    for c in range(k):
        sup[c, rng.choice(k, size=6, replace=False)] = True
    r, j = np.nonzero(sup)
    x = rng.uniform(0.1, 1.0, size=r.size)
    x /= np.bincount(r, weights=x)[r]
    Dinv = rng.uniform(0.01, 1.0, size=r.size)
    out = {}
    for use_blocks in (True, False):
        seen = []
        failing_once = cholesky_failing_once(_fast._cho_factor, seen)

        with monkeypatch.context() as m:
            m.setattr(_fast, "_SPARSE_SCHUR", -1.0)  # never the sparse LU
            m.setattr(_fast, "_GRAM_BLOCK_ROWS", 16)
            m.setattr(_fast, "_GRAM_BLOCKS", 8 if use_blocks else 1)
            m.setattr(_fast, "_cho_factor", failing_once)
            bar = _fast._Barrier(prob, r, j, 0.5, False)
            g, J = bar.grad(x)
            dx, nu = bar.factor(J, Dinv, None)(g)
            assert (bar._gram._blocks is not None) == use_blocks
        assert len(seen) == 2
        d0 = np.diag(seen[0])
        iu = np.triu_indices(k, 1)
        assert np.array_equal(seen[1][iu], seen[0][iu])
        assert np.array_equal(np.diag(seen[1]), d0 + 1e-13 * np.abs(d0).max())
        out[use_blocks] = (dx, nu, seen[1][np.triu_indices(k)])
    for a, b in zip(out[True], out[False]):
        assert np.array_equal(a, b)
    np.testing.assert_allclose(np.bincount(r, weights=out[True][0], minlength=k), 0.0, atol=1e-12)
