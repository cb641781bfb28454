"""Mutual-information targets just above the smallest achievable leakage, inside the least-leaking solve's own gap
(stop 45's instance hunt: banded forbidden entries, |A| = 9, k = 20).

A target between the lower bound and the leakage of the least-leaking mapping found at ``tol`` raised "could not
decide" with ``solver="auto"`` (9 of 60 such targets), where solving that problem more precisely decides it. Every
such target is now either refused with a proven lower bound above it, or answered within it.
"""
import re

import numpy as np
import pytest

from privrelease.exceptions import InfeasibleBudgetError
from privrelease.mapping import solve_mapping


def _band(seed):
    """The hunt's banded family: transitions farther than w (1 .. 3) apart forbidden, a Dirichlet prior."""
    rng = np.random.default_rng(seed)
    na = int(rng.integers(3, 11))
    k = int(rng.choice([20, 30, 45, 60, 90, 150], p=[.25, .25, .2, .15, .1, .05]))
    prior = rng.dirichlet(np.full(na * k, float(rng.uniform(0.5, 3)))).reshape(na, k)
    w = int(rng.integers(1, 4))
    gap = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(float)
    return prior, np.where(gap <= w, gap, np.inf)


def _smallest_leakage(prior, allowed):
    """min I(A; C_hat) in bits over the mappings with mass on ``allowed`` entries only: plain cvxpy (CLARABEL, tight),
    its point cleaned onto the allowed entries and renormalised, so that the value is achieved."""
    import cvxpy as cp

    pa, pc = prior.sum(axis=1), prior.sum(axis=0)
    X = cp.Variable(allowed.shape, nonneg=True)
    cons = [cp.sum(X, axis=1) == 1, X[~allowed] == 0] if (~allowed).any() else [cp.sum(X, axis=1) == 1]
    cp.Problem(cp.Minimize(cp.sum(cp.rel_entr(prior @ X, np.outer(pa, pc) @ X))), cons).solve(
        solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    Q = np.where(allowed, np.clip(X.value, 0.0, None), 0.0)
    return _mi_bits(prior, Q / Q.sum(axis=1, keepdims=True))


def _mi_bits(prior, mapping):
    J = prior @ mapping
    outer = J.sum(axis=1, keepdims=True) * J.sum(axis=0, keepdims=True)
    nz = J > 0
    return float(np.sum(J[nz] * np.log2(J[nz] / outer[nz])))


@pytest.mark.parametrize("seed", [3])  # (seed 43, |A| = 7, takes twice as long; decided as well)
def test_a_target_inside_the_least_leaking_solves_gap_is_decided(seed):
    prior, d = _band(seed)
    assert prior.shape[1] == 20
    with pytest.raises(InfeasibleBudgetError) as info:  # perfect privacy is out of reach on these
        solve_mapping(prior, d, max_leakage=0.0)
    lo, hi = (float(x) for x in re.search(r"at least ([0-9.e+-]+) bits \(at most ([0-9.e+-]+)\)",
                                           str(info.value)).groups())
    assert 0 < hi - lo < 1e-6  # the bracket of a solve at tol = 1e-6: a target inside it was "could not decide"
    smallest = _smallest_leakage(prior, np.isfinite(d))  # an achieved leakage: at least the minimum
    for t in (lo + 0.5 * (hi - lo), lo + 0.9 * (hi - lo)):
        try:
            r = solve_mapping(prior, d, max_leakage=t)
        except InfeasibleBudgetError as exc:  # refused: its proven lower bound lies above the target
            bound = float(re.search(r"at least ([0-9.e+-]+) bits", str(exc)).group(1))
            assert bound > t
        else:
            assert _mi_bits(prior, r.mapping) <= t * (1 + 1e-12)
            assert np.all(r.mapping[~np.isfinite(d)] == 0)
    assert smallest >= lo - 1e-9  # the refusal's lower bound holds for the reference's mapping too


def test_the_sharpened_multipliers_on_a_sparse_problem_stop_at_their_own_size_cap(monkeypatch):
    # review of stop 45: the cone program took 181 s on a sparse problem of 202,260 allowed entries for a bound
    # 1.8e-4 of itself higher; a sparse problem has its own, smaller cap (a dense one of the same size is solved)
    import math

    import scipy.sparse as sp

    from privrelease.mapping import _lp
    from privrelease.mapping._problem import Problem
    from privrelease.mapping._sparse import SparseProblem

    rng = np.random.default_rng(0)
    prior = rng.dirichlet(np.ones(2 * 30)).reshape(2, 30)
    d = rng.uniform(0.01, 1, (30, 30))
    monkeypatch.setattr(_lp, "SHARPEN_MAX_SPARSE_ENTRIES", 899)  # 900 allowed entries x 1 class difference
    L = 1e-9 * math.log(2)
    assert _lp.sharpest_independence_multipliers(SparseProblem(prior, sp.csr_array(d)), L) is None
    assert _lp.sharpest_independence_multipliers(Problem(prior, d), L) is not None
