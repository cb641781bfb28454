"""Perfect privacy on distortions spanning many decades, and the cvxpy maximal-leakage program on priors with zeros.

* ``max_leakage=0`` (both leakage kinds) with distortion values in {0, 1, 1e6, 1e12}: internally the costs are in
  units of the largest distortion, so the perfect-privacy LP's optimum (~1e-14) lay far below HiGHS's absolute dual
  feasibility tolerance (1e-7); its "optimal" vertex cost 0.45 where 0.098 is perfectly private (once 80198 where
  0.012 is), status "inaccurate". The LP is now solved again in units of its own answer when the Lagrangian bound of
  its multipliers does not meet it.
* ``solver="cvxpy"`` with ``leakage="maximal_leakage"``: a prior with a zero cell p(a, c) = 0 (rating counts) made
  cvxpy's bound propagation through ``M @ X`` (X nonneg, unbounded above) give NaN, turned into bounds [0, 0] on the
  epigraph variables: "infeasible" in both modes. The mapping's entries are now bounded by [0, 1].

The references are LPs written here from the definitions and solved by scipy's HiGHS in user units.
"""

import warnings

import numpy as np
import pytest
from scipy.optimize import linprog

from privrelease.exceptions import ConvergenceWarning
from privrelease.mapping import maximal_leakage, solve_mapping

TIGHT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def huge_range_case(seed):
    """A prior and a distortion with values from {0, 1, 1e6, 1e12} (zero diagonal, ties)."""
    rng = np.random.default_rng([seed, 19])
    k = int(rng.integers(4, 14))
    na = int(rng.integers(2, 5))
    D = rng.choice([0.0, 1.0, 1e6, 1e12], size=(k, k), p=[0.3, 0.4, 0.2, 0.1])
    np.fill_diagonal(D, 0.0)
    P = rng.dirichlet(np.ones(na * k) * 0.4).reshape(na, k)
    return P, D


def perfect_privacy_reference(P, D):
    """``min sum_c p(c) sum_j D(c, j) X(c, j)`` over row-stochastic ``X`` with ``p(j | a) = q(j)`` for every class:
    variables ``X`` (row-major) and ``q``."""
    na, k = P.shape
    m = D.shape[1]
    pa, pc = P.sum(axis=1), P.sum(axis=0)
    C = P / pa[:, None]
    A = np.zeros((k + na * m, k * m + m))
    b = np.r_[np.ones(k), np.zeros(na * m)]
    for c in range(k):
        A[c, c * m:(c + 1) * m] = 1.0
    for a in range(na):
        for j in range(m):
            A[k + a * m + j, [c * m + j for c in range(k)]] = C[a]
            A[k + a * m + j, k * m + j] = -1.0
    cost = np.r_[(pc[:, None] * D).ravel(), np.zeros(m)]
    res = linprog(cost, A_eq=A, b_eq=b, bounds=(0, None), method="highs", options=TIGHT)
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["mutual_information", "maximal_leakage"])
def test_perfect_privacy_on_a_huge_range_is_the_lp_optimum(seed, kind):
    P, D = huge_range_case(seed)
    ref = perfect_privacy_reference(P, D)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_mapping(P, D, max_leakage=0, leakage=kind)
    assert res.status == "optimal"
    assert res.distortion == pytest.approx(ref, rel=1e-6, abs=1e-12 * D.max())
    X = np.asarray(res.mapping, dtype=float)
    assert np.all(X >= -1e-12) and np.allclose(X.sum(axis=1), 1.0, atol=1e-9)
    # the answer is perfectly private: p(j | a) = q(j) for every class
    J = P @ X
    q = J.sum(axis=0)
    assert np.allclose(J / P.sum(axis=1)[:, None], q[None, :], atol=1e-9)


def test_perfect_privacy_on_a_huge_range_does_not_depend_on_the_units():
    P, D = huge_range_case(3)
    ref = perfect_privacy_reference(P, D)
    for s in (1e-9, 1.0, 1e9):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            res = solve_mapping(P, D * s, max_leakage=0)
        assert res.status == "optimal"
        assert res.distortion / s == pytest.approx(ref, rel=1e-6, abs=1e-12 * D.max())


def zero_cell_case(seed):
    """Rating-count-like prior with zero cells p(a, c) = 0 and a banded distortion (some entries forbidden)."""
    rng = np.random.default_rng([seed, 1919])
    na = int(rng.integers(2, 5))
    k = int(rng.integers(3, 9))
    while True:
        counts = rng.integers(0, 4, size=(na, k)).astype(float)
        if (counts == 0).any() and counts.sum(axis=1).min() > 0:
            break
    P = counts / counts.sum()
    x = np.arange(k, dtype=float)
    D = np.abs(x[:, None] - x[None, :]) * rng.choice([1.0, 2.5])
    if rng.random() < 0.5:
        D[D > 2.5 * 2] = np.inf
    return P, D


def ml_reference(P, D, delta=None, target_bits=None):
    """``sum_j max_a p(j | a)`` minimised under ``sum p(c) D X <= delta`` (returns its log2), or the distortion
    minimised under ``sum_j max_a p(j | a) <= 2^target_bits``; variables ``X`` (row-major) and ``z`` (one per
    output, ``z_j >= p(j | a)`` for every class)."""
    na, k = P.shape
    m = D.shape[1]
    pa, pc = P.sum(axis=1), P.sum(axis=0)
    C = P / pa[:, None]
    fin = np.isfinite(D)
    W = np.where(fin, pc[:, None] * np.where(fin, D, 0.0), 0.0)
    nv = k * m + m
    A_eq = np.zeros((k, nv))
    for c in range(k):
        A_eq[c, c * m:(c + 1) * m] = 1.0
    rows = []
    for a in range(na):
        for j in range(m):
            row = np.zeros(nv)
            row[[c * m + j for c in range(k)]] = C[a]
            row[k * m + j] = -1.0
            rows.append(row)
    b_ub = [0.0] * len(rows)
    dist_row = np.r_[W.ravel(), np.zeros(m)]
    lev_row = np.r_[np.zeros(k * m), np.ones(m)]
    bounds = [(0, 0 if not f else None) for f in fin.ravel()] + [(0, None)] * m
    if target_bits is None:
        rows.append(dist_row)
        b_ub.append(delta)
        cost = lev_row
    else:
        rows.append(lev_row)
        b_ub.append(2.0 ** target_bits)
        cost = dist_row
    res = linprog(cost, A_ub=np.array(rows), b_ub=np.array(b_ub), A_eq=A_eq, b_eq=np.ones(k), bounds=bounds,
                  method="highs", options=TIGHT)
    assert res.status == 0
    return np.log2(res.fun) if target_bits is None else res.fun


def budgets(P, D):
    """The smallest and the largest useful distortion (the cheapest and the cheapest constant mapping)."""
    pc = P.sum(axis=0)
    Dm = np.where(np.isfinite(D), D, np.inf)
    d_min = float(pc @ Dm.min(axis=1))
    d_const = float(np.min(pc @ Dm))
    return d_min, d_const


@pytest.mark.parametrize("seed", range(6))
def test_cvxpy_maximal_leakage_delta_mode_with_zero_cells(seed):
    P, D = zero_cell_case(seed)
    d_min, d_const = budgets(P, D)
    hi = d_const if np.isfinite(d_const) else 2 * d_min + 1.0
    for f in (0.2, 0.6):
        delta = d_min + f * (hi - d_min)
        ref = ml_reference(P, D, delta=delta)
        res = solve_mapping(P, D, delta=delta, leakage="maximal_leakage", solver="cvxpy")
        assert res.leakage == pytest.approx(ref, rel=1e-6, abs=1e-7)
        assert res.distortion <= delta * (1 + 1e-9) + 1e-12
        assert maximal_leakage(P, res.mapping) == pytest.approx(res.leakage, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_cvxpy_maximal_leakage_target_mode_with_zero_cells(seed):
    P, D = zero_cell_case(seed)
    d_min, _ = budgets(P, D)
    top = ml_reference(P, D, delta=d_min)  # the leakage of the cheapest mappings
    for f in (0.3, 0.7):
        target = f * top
        ref = ml_reference(P, D, target_bits=target)
        res = solve_mapping(P, D, max_leakage=target, leakage="maximal_leakage", solver="cvxpy")
        assert res.distortion == pytest.approx(ref, rel=1e-6, abs=1e-9)
        assert res.leakage <= target + 1e-9
