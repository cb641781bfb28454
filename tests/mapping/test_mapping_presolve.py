"""The exact presolve (privrelease.mapping._presolve): dominated outputs are removed before solving.

Checked: which outputs are found dominated on hand-made cases (and which are not), the property that
moving a dominated output's mass onto its dominator never increases the leakage (both measures) nor
the distortion, and that solving the reduced program gives the optimum of the whole one, by the plain
cvxpy formulation over every output and by brute comparison with the unreduced engine.
"""

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.mapping import (
    erasure_alphabet,
    erasure_distortion,
    expected_distortion,
    leakage,
    privacy_distortion_curve,
    solve_mapping,
)
from privrelease.mapping import _solver
from privrelease.mapping._presolve import REDUCED_DENSE_CELLS_LIMIT, reduce_outputs

INF = np.inf


def _whole_problem_cvxpy(prior, D, delta):
    """min I(A; C_hat) in bits over every output (no presolve), plain formulation, CLARABEL."""
    k, m = D.shape
    X = cp.Variable((k, m), nonneg=True)
    pA, pc = prior.sum(axis=1), prior.sum(axis=0)
    forb = ~np.isfinite(D)
    cons = [cp.sum(X, axis=1) == 1, cp.sum(cp.multiply(pc[:, None] * np.where(forb, 0, D), X)) <= delta,
            cp.multiply(forb.astype(float), X) == 0]
    obj = cp.sum(cp.rel_entr(prior @ X, pA[:, None] @ cp.reshape(pc @ X, (1, m), order="C")))
    pr = cp.Problem(cp.Minimize(obj), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pr.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert pr.status == "optimal"
    return pr.value / math.log(2)


def _with_redundant_outputs(rng, D):
    """``D`` plus outputs another output dominates: a duplicate, a costlier copy of a column, a
    column one input reaches at a cost above that input's cheapest, and one nobody reaches."""
    k, m = D.shape
    extra = [D[:, rng.integers(m)], D[:, rng.integers(m)] + rng.uniform(0.1, 1.0)]
    single = np.full(k, INF)
    c = rng.integers(k)
    single[c] = np.min(D[c][np.isfinite(D[c])]) + 0.5
    extra += [single, np.full(k, INF)]
    out = np.column_stack([D] + extra)
    return out[:, rng.permutation(out.shape[1])]


def test_the_dominated_outputs_and_only_those_are_removed():
    D = np.array([
        # 0    1    2    3    4    5    6    7    8
        [0.0, 1.0, 0.0, 2.0, INF, 0.5, 1.0, INF, INF],
        [1.0, 0.0, 1.0, 2.0, INF, INF, 3.0, 0.5, INF],
        [1.0, 1.0, 1.0, 0.5, 0.2, INF, INF, 0.5, INF],
    ])
    # 2 duplicates 0; 3 is incomparable with 0 and 1 (cheaper in row 2); 4 is one input's cheapest
    # output (kept); 5 is reachable by row 0 only, which reaches 0 more cheaply (removed); 6 and 7
    # reach two inputs each but not the same two (kept; 6 is dominated by nothing with its reach);
    # 8 is unreachable (removed)
    red = reduce_outputs(D)
    assert red.keep.tolist() == [0, 1, 3, 4, 6, 7]
    assert red.position.tolist() == [0, 1, 0, 2, 3, 0, 4, 5, -1]
    assert np.array_equal(red.distortion, D[:, red.keep])


def test_no_reduction_when_nothing_is_dominated():
    rng = np.random.default_rng(0)
    C = rng.normal(size=(6, 2))
    D = ((C[:, None] - C[None]) ** 2).sum(axis=2)  # zero diagonal: no column dominates another
    assert reduce_outputs(D) is None


def test_same_size_reach_sets_that_differ_are_never_merged():
    # every column reaches two inputs at the same costs: only equal reach sets may be merged
    D = np.array([[0.0, 0.0, INF, 0.0], [0.0, INF, 0.0, 0.0], [INF, 0.0, 0.0, INF]])
    red = reduce_outputs(D)
    assert red.keep.tolist() == [0, 1, 2]  # column 3 duplicates column 0
    assert red.position.tolist() == [0, 1, 2, 0]


@pytest.mark.parametrize("seed", range(4))
def test_moving_mass_to_a_dominator_never_increases_leakage_or_distortion(seed):
    rng = np.random.default_rng(seed)
    X = np.unique(rng.integers(0, 3, size=(7, 3)), axis=0)
    D = _with_redundant_outputs(rng, erasure_distortion(X, erasure_alphabet(X)))
    prior = rng.dirichlet(np.full(2 * X.shape[0], 0.5)).reshape(2, -1)
    red = reduce_outputs(D)
    assert red is not None and red.n_outputs < D.shape[1]
    for _ in range(20):  # random mappings on the allowed transitions
        P = np.where(np.isfinite(D), rng.exponential(size=D.shape) ** 3, 0.0)
        P /= P.sum(axis=1, keepdims=True)
        Q = red.expand(red.reduce(P))
        assert np.allclose(Q.sum(axis=1), 1.0) and np.all(Q[~np.isfinite(D)] == 0)
        assert expected_distortion(prior, Q, D) <= expected_distortion(prior, P, D) + 1e-12
        for kind in ("mutual_information", "maximal_leakage"):
            assert leakage(prior, Q, kind=kind) <= leakage(prior, P, kind=kind) + 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_the_reduced_optimum_is_the_whole_programs(seed):
    rng = np.random.default_rng(10 + seed)
    C = rng.normal(size=(5, 2))
    D = ((C[:, None] - C[None]) ** 2).sum(axis=2)
    D[rng.random(D.shape) < 0.2] = INF
    np.fill_diagonal(D, 0.0)
    D = _with_redundant_outputs(rng, D)
    prior = rng.dirichlet(np.full(2 * 5, 0.4)).reshape(2, 5)
    pc = prior.sum(axis=0)
    dmin = float(pc @ np.min(D, axis=1))
    for frac in (0.0, 0.3):
        fin = np.where(np.isfinite(D), D, 0.0)
        delta = dmin + frac * (float(pc @ fin.max(axis=1)) - dmin)
        res = solve_mapping(prior, D, delta=delta)
        assert res.status == "optimal"
        assert res.mapping.shape == D.shape and np.all(res.mapping[~np.isfinite(D)] == 0)
        assert res.distortion <= delta * (1 + 1e-9) + 1e-12
        ref = _whole_problem_cvxpy(prior, D, delta)
        assert res.leakage <= ref + 1e-6
        assert res.leakage >= ref - 1e-6  # the reference is optimal over every output


@pytest.mark.parametrize("mode", [{"delta": 0.6}, {"max_leakage": 0.01}, {"max_leakage": 0.0}])
def test_sparse_erasure_solved_through_the_presolve_matches_the_unreduced_engine(mode, monkeypatch):
    rng = np.random.default_rng(3)
    X = np.unique(rng.integers(0, 3, size=(9, 4)), axis=0)
    Ds = erasure_distortion(X, erasure_alphabet(X), sparse=True)
    prior = rng.dirichlet(np.full(2 * X.shape[0], 0.5)).reshape(2, -1)
    red = reduce_outputs(Ds)
    assert not sp.issparse(red.distortion)  # small enough: solved dense, by the fast path
    assert X.shape[0] * red.n_outputs <= REDUCED_DENSE_CELLS_LIMIT
    res = solve_mapping(prior, Ds, **mode)
    assert sp.issparse(res.mapping)  # the distortion's stored entries, as before
    Dc = sp.csr_array(Ds)
    assert np.array_equal(res.mapping.indptr, Dc.indptr) and np.array_equal(res.mapping.indices, Dc.indices)
    monkeypatch.setattr(_solver, "reduce_outputs", lambda D: None)
    plain = solve_mapping(prior, Ds, **mode)
    assert res.status == plain.status == "optimal"
    if "delta" in mode:
        assert abs(res.leakage - plain.leakage) <= 2e-6
    else:
        assert res.leakage <= mode["max_leakage"] + 1e-9
        span = float(np.asarray(Ds.max()))
        assert abs(res.distortion - plain.distortion) <= 1e-5 * span


def test_warm_start_and_curve_go_through_the_presolve():
    rng = np.random.default_rng(5)
    X = np.unique(rng.integers(0, 3, size=(8, 3)), axis=0)
    D = erasure_distortion(X, erasure_alphabet(X))
    prior = rng.dirichlet(np.full(2 * X.shape[0], 0.5)).reshape(2, -1)
    first = solve_mapping(prior, D, delta=0.4)
    warm = solve_mapping(prior, D, delta=0.5, warm_start=first)  # a full-alphabet mapping is accepted
    cold = solve_mapping(prior, D, delta=0.5)
    assert warm.status == cold.status == "optimal"
    assert abs(warm.leakage - cold.leakage) <= 2e-6
    df, res = privacy_distortion_curve(prior, D, [0.4, 0.5, 3.0], return_mappings=True)
    assert [r.mapping.shape for r in res] == [D.shape] * 3
    assert abs(df["leakage_bits"][1] - cold.leakage) <= 2e-6 and df["leakage_bits"][2] <= 1e-6
    with pytest.raises(ValueError, match=r"warm_start must be a mapping of shape \(\d+, \d+\)"):
        solve_mapping(prior, D, delta=0.5, warm_start=first.mapping[:, :-1])
    # a sparse mapping is a valid start of a dense problem, through the presolve or not
    sparse_warm = solve_mapping(prior, D, delta=0.5, warm_start=sp.csr_array(first.mapping))
    assert sparse_warm.status == "optimal" and abs(sparse_warm.leakage - cold.leakage) <= 2e-6
    C = rng.normal(size=(4, 2))
    Dsq = ((C[:, None] - C[None]) ** 2).sum(axis=2)  # nothing dominated
    p4 = rng.dirichlet(np.ones(8)).reshape(2, 4)
    assert reduce_outputs(Dsq) is None
    r0 = solve_mapping(p4, Dsq, delta=0.3)
    r1 = solve_mapping(p4, Dsq, delta=0.35, warm_start=sp.csr_matrix(r0.mapping))
    assert r1.status == "optimal"


def test_a_small_sparse_distortion_with_nothing_dominated_is_solved_dense():
    # each input stores its 6 nearest points (itself at cost 0): no output dominates another, yet the program is
    # small; it goes to the dense fast path like any small reduced program. It went to the sparse engine: here 35 s
    # and uncertified (CLARABEL on the edges 1e-5 bits from its bound, SCS 0.6, column generation 2.5e-3); at
    # k = 575 x 725 (38 outputs a row) SCS ran for over 10 minutes (benchmarks/bench_solver_families5.py)
    rng = np.random.default_rng(7)
    C = rng.normal(size=(40, 2))
    D = ((C[:, None] - C[None]) ** 2).sum(axis=2)
    near = np.argsort(D, axis=1)[:, :6]
    r = np.repeat(np.arange(40), 6)
    Ds = sp.csr_array((D[r, near.ravel()], (r, near.ravel())), shape=D.shape)
    Dinf = np.full(D.shape, INF)
    Dinf[r, near.ravel()] = D[r, near.ravel()]
    red = reduce_outputs(Ds)
    assert red is not None and red.n_outputs == 40 and not sp.issparse(red.distortion)
    assert np.array_equal(red.distortion, Dinf)
    assert reduce_outputs(Dinf) is None  # dense: nothing to reduce
    prior = rng.dirichlet(np.full(2 * 40, 0.5)).reshape(2, 40)
    pc = prior.sum(axis=0)
    dmin, dmax = float(pc @ np.min(Dinf, axis=1)), float(pc @ np.where(np.isfinite(Dinf), Dinf, 0).max(axis=1))
    delta = dmin + 0.3 * (dmax - dmin)
    res = solve_mapping(prior, Ds, delta)
    assert res.status == "optimal" and res.solver == "fast"
    Dc = sp.csr_array(Ds)
    assert np.array_equal(res.mapping.indptr, Dc.indptr) and np.array_equal(res.mapping.indices, Dc.indices)
    dense = solve_mapping(prior, Dinf, delta)
    assert abs(res.leakage - dense.leakage) <= 2e-6


def test_an_input_without_allowed_outputs_is_reported_by_the_problem_not_the_presolve():
    from privrelease.exceptions import InfeasibleBudgetError

    prior = np.array([[0.3, 0.2, 0.1], [0.1, 0.2, 0.1]])
    # column 1 (cost 1 from row 0) is dominated; row 2 has no allowed output
    Ds = sp.csr_array((np.array([0.0, 1.0, 0.0, 2.0]), (np.array([0, 0, 1, 1]), np.array([0, 1, 1, 2]))),
                      shape=(3, 3))
    assert reduce_outputs(Ds) is None
    with pytest.raises(InfeasibleBudgetError, match="row 2 of distortion has no allowed"):
        solve_mapping(prior, Ds, 0.5)
    with pytest.raises(InfeasibleBudgetError, match="row 2 of distortion has no finite entry"):
        solve_mapping(prior, np.array([[0.0, 1.0, INF], [INF, 0.0, 2.0], [INF, INF, INF]]), 0.5)


@pytest.mark.parametrize("seed", range(3))
def test_the_blockwise_test_of_a_full_distortion_agrees_with_the_general_one(seed, monkeypatch):
    from privrelease.mapping import _presolve

    rng = np.random.default_rng(seed)
    D = rng.integers(0, 3, size=(6, 40)).astype(float)  # ties: duplicates and dominated columns
    D[:, 7] = D.min(axis=1)  # a least column
    monkeypatch.setattr(_presolve, "DENSE_CELLS_LIMIT", 13)  # blocks of two columns
    fast = _presolve._dominators(D)
    S = sp.coo_array(np.ones_like(D))
    S.data = D[S.row, S.col]  # the same entries, every one stored (zeros included): the general path
    assert np.array_equal(fast, _presolve._dominators(sp.csr_array(S)))
    dropped = np.flatnonzero(fast != np.arange(40))
    assert dropped.size > 0 and np.all(D[:, fast[dropped]] <= D[:, dropped])
