"""The fast solver's structured Newton system (``_Barrier.factor``) against the KKT system
written out in full: ``[K E^T; E 0] [dx; nu] = [-g; 0]`` with ``K = hess f + diag(1 / Dinv)
(+ r1 r1^T)``, ``f = I(A; C_hat)`` and ``E`` the row sums of the support. Both ways of
factoring the Schur complement (dense Cholesky, sparse LU when it is sparse) are checked."""

import numpy as np
import scipy.sparse
from threadpoolctl import threadpool_limits
import pytest

from privrelease.mapping import _fast
from privrelease.mapping._problem import Problem
from privrelease.mapping import squared_euclidean_distortion


def _support(rng, k, per_row):
    sup = np.zeros((k, k), dtype=bool)
    for c in range(k):
        sup[c, rng.choice(k, size=per_row, replace=False)] = True
    return sup


def _sparse_prior(rng, na, k):
    """A Dirichlet joint with some p(a, c) = 0 (some outputs reached by one class only), every input in use."""
    prior = rng.dirichlet(np.full(na * k, 0.7)).reshape(na, k)
    prior[rng.random(prior.shape) < 0.2] = 0.0
    prior[0, prior.sum(axis=0) == 0] = 1e-3
    return prior / prior.sum()


def _hessian(M, r, j, x):
    """Hessian of I(A; C_hat) (nats) in the support entries, written out in full:
    ``H[e, f] = sum_a M[a, r_e] M[a, r_f] / J[a, j] - (sum_a M[a, r_e]) (sum_a M[a, r_f]) / q_j`` when
    ``e`` and ``f`` share the output ``j`` (terms with ``J[a, j] = 0`` left out), 0 otherwise."""
    na = M.shape[0]
    J = np.zeros((na, j.max() + 1))
    np.add.at(J.T, j, (M[:, r] * x).T)
    q = J.sum(axis=0)
    Mr = M[:, r]
    invJ = np.where(J > 0, 1.0 / np.where(J > 0, J, 1.0), 0.0)[:, j]
    m = Mr.sum(axis=0)
    same = j[:, None] == j[None, :]
    return np.where(same, (Mr * invJ).T @ Mr - np.outer(m, m) / q[j][:, None], 0.0)


@pytest.mark.parametrize("schur", ["dense", "sparse", "gram", "full"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rank_one", [False, True])
@pytest.mark.parametrize("na", [2, 3, 5, 12])
def test_structured_newton_solve_matches_the_full_kkt_system(monkeypatch, schur, seed, rank_one, na):
    # every way the Schur complement is built and factored: a sparse Gram product factored densely
    # ("dense") or by sparse LU ("sparse"), a dense Gram product on a denser support ("gram"), the full
    # support's matrix products ("full"); |A| = 2, 3, 5 (the Hessian blocks' rank |A| - 1 factors) and
    # 12 (beyond _MANY_CLASSES: the per-class work batched in matrix products);
    # some p(a, c) = 0, so that some outputs are reached by one class only
    rng = np.random.default_rng(seed)
    k = 12 if schur == "full" else 40
    prior = _sparse_prior(rng, na, k)
    d = squared_euclidean_distortion(rng.normal(size=(k, 2)))
    prob = Problem(prior, d)
    if schur == "full":
        sup = np.ones((prob.k, prob.kh), dtype=bool)
    else:
        sup = _support(rng, prob.k, 12 if schur == "gram" else 2)
        sup[np.arange(prob.k), np.arange(prob.k)] = True
    r, j = np.nonzero(sup)
    # the sparse path is taken below the density threshold; force one path or the other
    monkeypatch.setattr(_fast, "_SPARSE_SCHUR", 1.0 if schur == "sparse" else -1.0)
    bar = _fast._Barrier(prob, r, j, 0.5, False)
    assert bar.dense == (schur == "full")
    assert (bar._MM is not None) == (na > _fast._MANY_CLASSES)
    if schur in ("dense", "sparse"):
        assert bar.n < 0.2 * bar.k * bar.nc  # the Gram product is built sparse
    elif schur == "gram":
        assert bar.n > 0.2 * bar.k * bar.nc  # the Gram product is built dense
    x = rng.uniform(0.1, 1.0, size=r.size)
    x /= np.bincount(r, weights=x)[r]
    Dinv = rng.uniform(0.01, 1.0, size=r.size)
    r1 = rng.normal(size=r.size) if rank_one else None
    g, J = bar.grad(x)
    solve = bar.factor(J, Dinv, r1)
    dx, nu = solve(g)

    K = _hessian(prob.M, r, j, x) + np.diag(1.0 / Dinv)
    if rank_one:
        K += np.outer(r1, r1)
    E = np.zeros((prob.k, r.size))
    E[r, np.arange(r.size)] = 1.0
    kkt = np.block([[K, E.T], [E, np.zeros((prob.k, prob.k))]])
    sol = np.linalg.solve(kkt, np.concatenate([-g, np.zeros(prob.k)]))
    np.testing.assert_allclose(dx, sol[: r.size], rtol=1e-7, atol=1e-9 * np.abs(sol[: r.size]).max())
    np.testing.assert_allclose(E @ dx, 0.0, atol=1e-12)


def _scale_problem(seed, k):
    """The solver benchmark's scale instance: |A| = 2, k random centres in R^2, squared-Euclidean distortion,
    a Dirichlet(2) marginal, a noisy logistic posterior, the budget 5 % of the mean distortion (internal units)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(k, 2))
    d = squared_euclidean_distortion(X)
    pc = rng.dirichlet(np.full(k, 2.0))
    post = 1.0 / (1.0 + np.exp(-(2.0 * X[:, 0] + 0.5 * rng.normal(size=k))))
    prior = np.vstack([pc * (1 - post), pc * post])
    prob = Problem(prior, d)
    return prob, prob.to_internal(0.05 * float(d.mean()))


def test_trial_polish_on_a_settled_working_set_is_certified():
    """k = 230 (a working set, not every entry): from a working-set point 5.6e-6 bits from
    optimal (the rounds run to tol 1e-4: the point a precise round leaves uncertified), the
    trial polish (one support, one Newton solve, the cheap bound) returns no worse a point with a
    true bound, the full polish certifies it (the sparse Schur complement path), and the answer is
    optimal by the full Lagrangian certificate computed afresh (no hint): feasible, within 1e-6
    bits of the dual bound."""
    prob, delta = _scale_problem(232, 230)
    with threadpool_limits(limits=1, user_api="blas"):
        P0, _ = _fast._solve_fast(prob, delta, tol=1e-4, warm=None, n_neighbours=8, max_rounds=30)
    assert prob.k * prob.kh > _fast._FULL_SUPPORT_LIMIT
    assert 1e-6 < prob.certificate(P0, delta)[0] <= 1e-4
    hint = prob.posteriors(P0)
    with threadpool_limits(limits=1, user_api="blas"):  # as inside solve_fast
        Pt, gap_trial = _fast._kkt_polish(prob, P0, delta, tol=1e-6, pi_hint=hint, trial=True)
        P, gap_full = _fast._kkt_polish(prob, P0, delta, tol=1e-6, pi_hint=hint)
    # the trial never returns a worse point than it was given, and its bound is a true bound
    assert gap_trial <= prob.certificate(P0, delta)[0] * (1 + 1e-9)
    assert prob.certificate(Pt, delta, pi_hint=hint)[0] <= gap_trial * (1 + 1e-9) + 1e-15
    assert gap_full <= 1e-6
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    assert P.min() >= 0.0 and prob.distortion(P) <= delta * (1 + 1e-12)
    gap = prob.certificate(P, delta, target_bits=1e-6)[0]
    assert gap <= 1e-6
    # the polished optimum is sparse (the interior point it started from used ~14 entries a row)
    assert (P > 0).sum() < 0.25 * (P0 > 0).sum()


@pytest.mark.parametrize("seed", [0])
def test_warm_started_working_set_rounds_agree_with_cold_restarts(monkeypatch, seed):
    """Working-set rounds that continue from the previous round's barrier parameter and duals
    reach the same certified optimum as rounds restarted at the top barrier parameter: both
    feasible, both certified to 1e-6 bits by the full Lagrangian bound, leakages within it."""
    rng = np.random.default_rng(seed)
    k, na = 210, 3
    Z = rng.normal(size=(k, 4))
    X = Z @ rng.normal(size=(4, 12)) + 0.3 * rng.normal(size=(k, 12))
    d = squared_euclidean_distortion(X)
    pc = rng.dirichlet(np.full(k, 1.0))
    logits = 1.5 * Z[:, :na].T + 0.5 * rng.normal(size=(na, k))
    post = np.exp(logits - logits.max(axis=0))
    prior = post / post.sum(axis=0) * pc
    prob = Problem(prior, d)
    delta = prob.to_internal(0.05 * float(d.mean()))
    assert prob.k * prob.kh > _fast._FULL_SUPPORT_LIMIT
    out = {}
    for warm in (True, False):
        monkeypatch.setattr(_fast, "WARM_ROUNDS", warm)
        P, hint = _fast.solve_fast(prob, delta, tol=1e-6, return_hint=True)
        np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
        assert P.min() >= 0.0 and prob.distortion(P) <= delta * (1 + 1e-12)
        gap, _, f = prob.certificate(P, delta, target_bits=1e-6, pi_hint=hint)
        assert gap <= 1e-6
        out[warm] = f / np.log(2)
    assert abs(out[True] - out[False]) <= 1e-6


@pytest.mark.parametrize("na", [2, 3, 5])
def test_sparse_product_sums_are_the_bincount_sums_exactly(monkeypatch, na):
    # large supports sum over columns, rows and entries through CSR products built once per barrier; each row
    # of a CSR matrix adds its entries in increasing entry index, as np.bincount does, so the numbers (and the
    # barrier's path) are the same to the last bit; some p(a, c) = 0 (explicit zeros in the matrices)
    rng = np.random.default_rng(na)
    k = 60
    prior = _sparse_prior(rng, na, k)
    prob = Problem(prior, squared_euclidean_distortion(rng.normal(size=(k, 2))))
    sup = _support(rng, k, 20)
    sup[np.arange(k), np.arange(k)] = True
    r, j = np.nonzero(sup)
    bars = {}
    for mode, threshold in (("sparse", 0), ("bincount", 10**12)):
        monkeypatch.setattr(_fast, "_SPARSE_SUMS", threshold)
        bars[mode] = _fast._Barrier(prob, r, j, 0.5, False)
    assert bars["sparse"]._C is not None and bars["bincount"]._C is None
    v = rng.normal(size=r.size) * np.exp(rng.normal(size=r.size) * 5)  # values over many decades
    Z = rng.normal(size=(na, bars["sparse"].nc))
    for name, arg in (("colsum", v), ("rowsum", v), ("expand", Z)):
        np.testing.assert_array_equal(getattr(bars["sparse"], name)(arg), getattr(bars["bincount"], name)(arg))
    x = rng.uniform(0.1, 1.0, size=r.size)
    x /= np.bincount(r, weights=x)[r]
    Dinv = rng.uniform(0.01, 1.0, size=r.size)
    out = {}
    for mode, bar in bars.items():
        g, J = bar.grad(x)
        out[mode] = bar.factor(J, Dinv, None)(g)
    np.testing.assert_array_equal(out["sparse"][0], out["bincount"][0])


@pytest.mark.parametrize("na", [3, 5, 10, 12])
@pytest.mark.parametrize("support", ["sparse", "full"])
def test_class_pair_sums(na, support):
    # the Hessian blocks' sums over each output's entries for every class pair a <= b: up to _MANY_CLASSES
    # classes the same numbers as one np.bincount (sparse supports) or one product (full support) per pair,
    # to the last bit (the barrier's paths, which the families audit ran, are unchanged); beyond it one matrix
    # product for all pairs, equal to rounding
    rng = np.random.default_rng(na)
    k = 30
    prior = _sparse_prior(rng, na, k)
    prob = Problem(prior, squared_euclidean_distortion(rng.normal(size=(k, 2))))
    sup = np.ones((k, k), dtype=bool) if support == "full" else _support(rng, k, 6)
    r, j = np.nonzero(sup)
    bar = _fast._Barrier(prob, r, j, 0.5, False)
    assert bar.dense == (support == "full")
    Dinv = rng.uniform(0.01, 1.0, size=r.size) * np.exp(rng.normal(size=r.size) * 3)
    got = bar._pair_sums(Dinv)
    ia, ib = np.triu_indices(na)
    if support == "full":
        want = np.stack([(prob.M[a] * prob.M[b]) @ Dinv.reshape(k, k) for a, b in zip(ia, ib)])
    else:
        want = np.stack([np.bincount(bar.jc, weights=Dinv * bar.Mr[a] * bar.Mr[b], minlength=bar.nc)
                         for a, b in zip(ia, ib)])
    if na <= _fast._MANY_CLASSES:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15 * np.abs(want).max())


def test_barrier_pieces_finite_where_a_denormal_class_mass_underflows():
    # a class whose prior entry is denormal (1e-320) in the only row using an output: its mass there, 1e-320 x 1e-5,
    # is 0 in floating point although the entry is positive. The barrier's gradient took log 0 (-inf, NaN beside
    # other entries' zero masses), its merit called the point infeasible, and its Hessian factors J^-1/2 were
    # infinite: every Newton direction NaN (families2 seed 61, curve_odd on denormal_prior). Such a mass is
    # numerically zero: all three must be finite, and the direction one of descent keeping the row sums
    M = np.array([[0.3, 0.2, 1e-320], [0.1, 0.1, 0.3]])
    M = M / M.sum()
    d = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    prob = Problem(M, d)
    r = np.array([0, 0, 1, 1, 2, 2])
    j = np.array([0, 1, 0, 1, 0, 2])
    x = np.array([0.6, 0.4, 0.3, 0.7, 1.0 - 1e-5, 1e-5])
    bar = _fast._Barrier(prob, r, j, np.inf, False)
    mu = 1e-3
    with np.errstate(all="ignore"):
        G, J = bar.grad(x)
        assert bar.struct[0, 2] and J[0, 2] == 0.0  # the underflow this is about
        assert np.all(np.isfinite(G))
        assert np.isfinite(bar.merit(x, 1.0, mu))
        g = G - mu * bar.om / x
        dx, _ = bar.factor(J, x ** 2 / mu, None)(g)
    assert np.all(np.isfinite(dx))
    assert float(g @ dx) < 0
    np.testing.assert_allclose(bar.rowsum(dx), 0.0, atol=1e-12)


def test_a_warm_start_over_the_budget_is_mixed_back_only_as_far_as_the_slack_asked(monkeypatch):
    """A working-set round whose priced-in entries push the previous iterate over the budget starts from
    ``(1 - t) x1 + t y`` (``y``: half the cheapest mapping, half the cold start), ``t`` the least share that
    leaves the slack asked for: the budget's slack is exactly that, the rows stay on the simplex, and the point
    stays next to the warm one (a fixed tenth of the cold start moved a settled iterate 0.0064 nats at k = 1000).
    In a solve, every such start is strictly feasible and the answer is certified by the full Lagrangian bound."""
    prob, delta = _scale_problem(7, 240)
    k = prob.k
    assert prob.k * prob.kh > _fast._FULL_SUPPORT_LIMIT
    support = _fast._candidate_support(prob, 8, None)
    r, j = np.nonzero(support)
    bar = _fast._Barrier(prob, r, j, delta, True)
    x0 = _fast._start(prob, r, j, delta, True)
    # a warm point just over the budget: the cold start moved towards the dearest entry of every row
    dear = (prob.W[r, j] == np.array([prob.W[rr, j[r == rr]].max() for rr in range(k)])[r]).astype(float)
    for share in (1e-6, 1e-3, 0.5):
        lo, hi = 0.0, 1.0
        for _ in range(200):  # the dear share that puts x1 a relative `share` of the room over the budget
            mid = 0.5 * (lo + hi)
            xm = (1 - mid) * x0 + mid * dear
            (lo, hi) = (mid, hi) if float(bar.w @ xm) - delta < share * (delta - float(bar.w @ x0)) else (lo, mid)
        x1 = (1 - hi) * x0 + hi * dear
        assert float(bar.w @ x1) > delta
        y = 0.5 * (j == prob.argmin_full[prob.rows][r]) + 0.5 * x0
        room = delta - float(bar.w @ y)
        for slack in (1e-6 * room, 0.1 * room):
            x = _fast._back_under_budget(prob, bar, x1, x0, slack)
            assert x.min() > 0
            np.testing.assert_allclose(bar.rowsum(x), 1.0, atol=1e-12)
            assert delta - float(bar.w @ x) == pytest.approx(slack, rel=1e-6, abs=1e-15)
            # the least share: x = (1 - t) x1 + t y with t = (d1 - delta + slack) / (d1 - dy)
            t = (float(bar.w @ x1) - delta + slack) / (float(bar.w @ x1) - float(bar.w @ y))
            np.testing.assert_allclose(x, (1 - t) * x1 + t * y, rtol=0, atol=1e-15)
            if share == 1e-6 and slack < 1e-3 * room:
                assert t < 1e-5 and np.abs(x - x1).max() < 1e-5
    # the slack asked is kept within [1e-9, 0.5] of the feasible point's room
    x = _fast._back_under_budget(prob, bar, x1, x0, 0.0)
    assert delta - float(bar.w @ x) == pytest.approx(1e-9 * room, rel=1e-5)
    x = _fast._back_under_budget(prob, bar, x1, x0, 10 * room)
    assert delta - float(bar.w @ x) == pytest.approx(0.5 * room, rel=1e-9)
    # in a solve: every such start strictly feasible, the answer certified
    calls = []
    orig = _fast._back_under_budget

    def spy(prob_, bar_, x1_, x0_, slack_):
        out = orig(prob_, bar_, x1_, x0_, slack_)
        calls.append((float(bar_.delta - bar_.w @ out), out.min()))
        return out

    monkeypatch.setattr(_fast, "_back_under_budget", spy)
    with threadpool_limits(limits=1, user_api="blas"):
        P, hint = _fast.solve_fast(prob, delta, tol=1e-6, return_hint=True)
    assert calls and all(s > 0 and m > 0 for s, m in calls)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    assert P.min() >= 0.0 and prob.distortion(P) <= delta * (1 + 1e-12)
    assert prob.certificate(P, delta, target_bits=1e-6, pi_hint=hint)[0] <= 1e-6


@pytest.mark.parametrize("nb", [1, 2, 4])
def test_cached_gram_product_is_scipys_product_exactly(nb):
    # the Schur complement's Gram term made from the structures cached for the support (_GramProduct) is the same
    # numbers as scipy's ``Vs @ Vs.T`` built afresh, call after call with new values (some of them exactly zero, as
    # the factorisation sets the ones below 1e-150), so the barrier's path is the one it had before the cache
    rng = np.random.default_rng(nb)
    k, nc = 30, 25
    sup = _support(rng, k, 6)[:, :nc] | (np.arange(nc)[None, :] == np.arange(k)[:, None] % nc)
    r, jc = np.nonzero(sup)
    gram = _fast._GramProduct(r, jc, nb, k, nc)
    rows, cols = np.repeat(r, nb), (jc[:, None] * nb + np.arange(nb)).ravel()
    for _ in range(3):
        V = rng.normal(size=(r.size, nb)) * 10.0 ** rng.uniform(-8, 8, size=(r.size, 1))
        V[rng.random(V.shape) < 0.1] = 0.0
        Vs = scipy.sparse.csr_matrix((V.ravel(), (rows, cols)), shape=(k, nc * nb))
        expected = -(Vs @ Vs.T)
        got = gram(V)
        assert got.shape == (k, k)
        assert np.array_equal(got.toarray(), expected.toarray())
        # and the same matrix as the product written out in dense form (up to the order of the additions)
        np.testing.assert_allclose(got.toarray(), -(Vs.toarray() @ Vs.toarray().T), rtol=1e-12, atol=0.0)
        # written straight into a dense array (the in-place Cholesky's input): the same numbers, exactly symmetric
        # (the factor reads the lower triangle's), C-ordered; the product's count of nonzeros is scipy's
        assert gram.product(V) == (Vs @ Vs.T).nnz
        D = gram.dense()
        assert D.flags.c_contiguous and D.shape == (k, k)
        assert np.array_equal(D, expected.toarray()) and np.array_equal(D, D.T)
