"""Issue 10, scale-invariant tolerances: a distortion with a large common offset (``a + s D0``) is the problem ``D0``.

Every row of a mapping sums to 1, so adding ``a(c)`` to row ``c`` of the distortion adds the same constant
``sum_c p(c) a(c)`` to every mapping's expected distortion: the optimal mappings, their leakage and their distortion
less that constant (over ``s``) are those of ``D0``. The references below are independent of the library: a plain
cvxpy formulation (mutual information, over the allowed entries) and a plain HiGHS LP (maximal leakage), both on
``D_eff = (D - a) / s`` (the distortion actually passed, the offset removed exactly: Sterbenz), with the budget
moved by the offset computed in exact rational arithmetic.
"""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.exceptions import InfeasibleBudgetError
from privrelease.mapping import expected_distortion, leakage, privacy_distortion_curve, solve_mapping

OFFSETS = [(1e3, 1.0), (1e6, 1.0), (1e9, 1.0), (1e3, 1e-6), (1e6, 1e-6), (1e9, 1e-6), ("rows", 1e-6)]
SHAPES = {0: (2, 4), 1: (3, 12), 2: (4, 30), 3: (2, 9)}


def _instance(seed):
    """A prior (``|A|`` x k) and a k x k distortion in [0, 1) with zeros on the diagonal and some forbidden entries;
    seed 3 has a public symbol of probability 0."""
    na, k = SHAPES[seed]
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(na * k) * 0.5).reshape(na, k)
    if seed == 3:
        P[:, 2] = 0.0
    P = P / P.sum()
    D0 = rng.random((k, k))
    np.fill_diagonal(D0, 0.0)
    forbid = rng.random((k, k)) < 0.25
    np.fill_diagonal(forbid, False)
    D0[forbid] = np.inf
    return P, D0


def _offset_problem(seed, offset, spread):
    """``(P, D, D_eff, off)``: ``D = a + spread * D0`` (``a`` a scalar or a vector over the rows), ``D_eff`` the
    distortion it is in units of ``spread`` above ``a``, ``off = sum_c p(c) a(c)`` exactly (a Fraction)."""
    P, D0 = _instance(seed)
    k = D0.shape[0]
    a = np.random.default_rng(100 + seed).uniform(1e5, 1e6, k) if offset == "rows" else np.full(k, float(offset))
    D = a[:, None] + spread * D0
    D_eff = (D - a[:, None]) / spread  # D - a exact (Sterbenz), inf kept
    off = sum(Fraction(float(p)) * Fraction(float(x)) for p, x in zip(P.sum(axis=0), a))
    return P, D, D_eff, off


def _to_eff(delta, off, spread):
    return float((Fraction(delta) - off) / Fraction(spread))


def _from_eff(x, off, spread):
    return float(off + Fraction(spread) * Fraction(x))


def _floor(off, spread, k):
    """The rounding of an expected distortion of magnitude ``off`` in units of ``spread`` (k^2 products)."""
    return 4 * k * k * math.ulp(float(off)) / spread


def _cvx_reference(prior, d, delta=None, target_bits=None):
    """Plain cvxpy (CLARABEL): ``min I`` under ``E[d] <= delta``, or ``min E[d]`` under ``I <= target``; the variables
    the allowed entries only, the distortion above each row's cheapest. Returns ``(leakage bits, distortion)`` of the
    solver's point (made a mapping)."""
    import cvxpy as cp

    na, k = prior.shape
    pa, pc = prior.sum(axis=1), prior.sum(axis=0)
    r, j = np.nonzero(np.isfinite(d))
    rmin = np.where(np.isfinite(d), d, np.inf).min(axis=1)
    n = r.size
    x = cp.Variable(n, nonneg=True)
    rows = sp.csr_matrix((np.ones(n), (r, np.arange(n))), shape=(k, n))
    joint = sp.csr_matrix((prior[:, r].ravel(), ((np.arange(na)[:, None] * k + j[None, :]).ravel(),
                                                 np.tile(np.arange(n), na))), shape=(na * k, n))
    q = sp.csr_matrix((pc[r], (j, np.arange(n))), shape=(k, n)) @ x
    info = cp.sum(cp.rel_entr(joint @ x, cp.hstack([float(p) * q for p in pa])))
    w = pc[r] * (d[r, j] - rmin[r])
    d0 = float(pc @ rmin)
    if target_bits is None:
        pr = cp.Problem(cp.Minimize(info), [rows @ x == 1, w @ x <= delta - d0])
    else:
        pr = cp.Problem(cp.Minimize(w @ x), [rows @ x == 1, info <= target_bits * math.log(2)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pr.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    X = np.zeros(d.shape)
    X[r, j] = np.clip(x.value, 0.0, None)
    X /= X.sum(axis=1, keepdims=True)
    return leakage(prior, X), float(pr.value) + d0 if target_bits is not None else None


def _ml_reference(prior, d, target_bits):
    """Plain HiGHS LP: ``min E[d]`` under ``sum_j max_a p(j | a) <= 2^target`` (epigraph variables ``m_j``), the
    forbidden entries bounded to 0, the distortion above each row's cheapest."""
    from scipy.optimize import linprog

    na, k = prior.shape
    kh = d.shape[1]
    pa, pc = prior.sum(axis=1), prior.sum(axis=0)
    cond = prior / pa[:, None]
    fin = np.isfinite(d)
    rmin = np.where(fin, d, np.inf).min(axis=1)
    cost = np.concatenate([(pc[:, None] * np.where(fin, d - rmin[:, None], 0.0)).ravel(), np.zeros(kh)])
    A_ub = sp.vstack([sp.hstack([sp.kron(sp.csr_matrix(cond[a][None, :]), sp.identity(kh)), -sp.identity(kh)])
                      for a in range(na)] + [sp.csr_matrix(np.r_[np.zeros(k * kh), np.ones(kh)][None, :])])
    b_ub = np.r_[np.zeros(na * kh), 2.0 ** target_bits]
    A_eq = sp.hstack([sp.kron(sp.identity(k), np.ones((1, kh))), sp.csr_matrix((k, kh))])
    bounds = [(0, None if f else 0) for f in fin.ravel()] + [(0, None)] * kh
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(k), bounds=bounds, method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0, res.message
    return float(pc @ rmin) + res.fun


def _pp_reference(prior, d):
    """Plain HiGHS LP of perfect privacy: ``min E[d]`` over mappings with ``J(a, j) = p(a) q(j)`` (independence,
    linear in the mapping), the forbidden entries bounded to 0, the distortion above each row's cheapest."""
    from scipy.optimize import linprog

    na, k = prior.shape
    kh = d.shape[1]
    pa, pc = prior.sum(axis=1), prior.sum(axis=0)
    fin = np.isfinite(d)
    rmin = np.where(fin, d, np.inf).min(axis=1)
    cost = (pc[:, None] * np.where(fin, d - rmin[:, None], 0.0)).ravel()
    indep = sp.vstack([sp.kron(sp.csr_matrix((prior[a] - pa[a] * pc)[None, :]), sp.identity(kh)) for a in range(na)])
    A_eq = sp.vstack([indep, sp.kron(sp.identity(k), np.ones((1, kh)))])
    b_eq = np.r_[np.zeros(na * kh), np.ones(k)]
    bounds = [(0, None if f else 0) for f in fin.ravel()]
    res = linprog(cost, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0, res.message
    return float(pc @ rmin) + res.fun


def _range(prior, d):
    pc = prior.sum(axis=0)
    fin = np.isfinite(d)
    hi = np.where(fin, d, -np.inf).max(axis=1)
    lo = np.where(fin, d, np.inf).min(axis=1)
    return float(pc @ (hi - lo)), float(pc @ lo)


def _check_target_answer(res, P, D_eff, off, spread, ref, kind="mutual_information"):
    """The answer to a ``max_leakage`` target: certified, within the target, and its distortion (on ``D_eff``, and
    ``(distortion - offset) / spread`` in user units) the reference optimum's within the certificate's tolerance."""
    rng_, dmin = _range(P, D_eff)
    assert res.status == "optimal", res.certificate
    d_eff = expected_distortion(P, res.mapping, D_eff)
    tol = 1e-3 * (ref - dmin) + 1e-6 * rng_ + 1e-12
    assert d_eff >= ref - 1e-7 * rng_ - 1e-12
    assert d_eff <= ref + tol, (d_eff, ref)
    k = D_eff.shape[0]
    assert abs(_to_eff(res.distortion, off, spread) - d_eff) <= _floor(off, spread, k) + 1e-12
    # the certificate in user units: the bound below the answer, the gap a difference (no offset)
    lb = res.certificate.get("distortion_lower_bound")
    if lb is not None:
        assert _to_eff(lb, off, spread) <= ref + 1e-7 * rng_ + _floor(off, spread, k)
    assert res.certificate["distortion_gap"] <= spread * (tol + 1e-9 * rng_)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("offset,spread", OFFSETS)
def test_mutual_information_target_ignores_the_offset(seed, offset, spread):
    P, D, D_eff, off = _offset_problem(seed, offset, spread)
    target = 0.02
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "inaccurate" answer
        res = solve_mapping(P, D, max_leakage=target)
    assert res.leakage <= target * (1 + 1e-9)
    _, ref = _cvx_reference(P, D_eff, target_bits=target)
    _check_target_answer(res, P, D_eff, off, spread, ref)


@pytest.mark.parametrize("seed", [0, 1, 3])
@pytest.mark.parametrize("offset,spread", OFFSETS)
def test_maximal_leakage_target_ignores_the_offset(seed, offset, spread):
    P, D, D_eff, off = _offset_problem(seed, offset, spread)
    target = 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(P, D, max_leakage=target, leakage="maximal_leakage")
    assert leakage(P, res.mapping, kind="maximal_leakage") <= target + 1e-12
    _check_target_answer(res, P, D_eff, off, spread, _ml_reference(P, D_eff, target), kind="maximal_leakage")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("offset,spread", OFFSETS)
def test_delta_budget_ignores_the_offset(seed, offset, spread):
    P, D, D_eff, off = _offset_problem(seed, offset, spread)
    rng_, dmin = _range(P, D_eff)
    x = dmin + 0.05 * rng_
    delta = _from_eff(x, off, spread)  # the user's budget
    x = _to_eff(delta, off, spread)  # the budget it is (rounded to a float near the offset)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(P, D, delta=delta)
    assert res.status == "optimal" and res.certificate["gap_bits"] <= 1e-6
    assert expected_distortion(P, res.mapping, D_eff) <= x * (1 + 1e-12) + 1e-15
    ref, _ = _cvx_reference(P, D_eff, delta=x)
    assert res.leakage <= ref + 1e-6
    assert res.leakage >= ref - 1e-5  # the reference is a feasible point up to CLARABEL's 1e-11


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("offset,spread", OFFSETS)
def test_zero_leakage_target_is_certified_with_an_offset(seed, offset, spread):
    # max_leakage=0 came back "inaccurate" at 1e6 + 1e-6 D0 where D0 itself certifies
    P, D, D_eff, off = _offset_problem(seed, offset, spread)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(P, D, max_leakage=0.0)
    assert res.leakage <= 1e-9
    ref = _pp_reference(P, D_eff)
    rng_, dmin = _range(P, D_eff)
    d_eff = expected_distortion(P, res.mapping, D_eff)
    assert abs(d_eff - ref) <= 1e-3 * (ref - dmin) + 1e-6 * rng_


@pytest.mark.parametrize("solver", ["fast", "cvxpy"])
def test_explicit_solvers_ignore_the_offset(solver):
    P, D, D_eff, off = _offset_problem(1, 1e6, 1e-6)
    res = solve_mapping(P, D, max_leakage=0.02, solver=solver)
    _, ref = _cvx_reference(P, D_eff, target_bits=0.02)
    _check_target_answer(res, P, D_eff, off, 1e-6, ref)


def test_sparse_distortion_ignores_the_offset():
    # a sparse distortion stores the allowed entries: the same problem, solved over them
    P, D, D_eff, off = _offset_problem(2, "rows", 1e-6)
    r, j = np.nonzero(np.isfinite(D))
    Ds = sp.csr_array((D[r, j], (r, j)), shape=D.shape)
    rng_, dmin = _range(P, D_eff)
    delta = _from_eff(dmin + 0.05 * rng_, off, 1e-6)
    x = _to_eff(delta, off, 1e-6)
    res = solve_mapping(P, Ds, delta=delta)
    assert res.status == "optimal" and res.certificate["gap_bits"] <= 1e-6
    M = res.mapping.toarray()
    assert expected_distortion(P, M, D_eff) <= x * (1 + 1e-12) + 1e-15
    ref, _ = _cvx_reference(P, D_eff, delta=x)
    assert abs(res.leakage - ref) <= 1e-5
    res_t = solve_mapping(P, Ds, max_leakage=0.02)
    _, ref_t = _cvx_reference(P, D_eff, target_bits=0.02)
    assert res_t.status == "optimal"
    assert expected_distortion(P, res_t.mapping.toarray(), D_eff) <= ref_t + 1e-3 * (ref_t - dmin) + 1e-6 * rng_


def test_curve_budgets_follow_the_offset():
    P, D, D_eff, off = _offset_problem(1, 1e6, 1e-6)
    rng_, dmin = _range(P, D_eff)
    xs = [dmin, dmin + 0.02 * rng_, dmin + 0.1 * rng_]
    budgets = [_from_eff(x, off, 1e-6) for x in xs]
    if _to_eff(budgets[0], off, 1e-6) > dmin:  # the smallest budget rounded down: no slack above the smallest
        budgets[0] = math.nextafter(budgets[0], -math.inf)
    curve = privacy_distortion_curve(P, D, budgets)
    assert (curve["status"] == "optimal").all()
    for b, lk in zip(budgets[1:], curve["leakage_bits"].iloc[1:]):
        ref, _ = _cvx_reference(P, D_eff, delta=_to_eff(b, off, 1e-6))
        assert abs(lk - ref) <= 1e-5
    # the smallest budget's answer is the cheapest mapping: the leakage of each input on its cheapest output
    M = np.eye(D.shape[1])[np.where(np.isfinite(D_eff), D_eff, np.inf).argmin(axis=1)]
    assert curve["leakage_bits"].iloc[0] == pytest.approx(leakage(P, M), abs=1e-9)


def test_smallest_feasible_distortion_in_user_units():
    P, D, D_eff, off = _offset_problem(1, "rows", 1e-6)
    _, dmin = _range(P, D_eff)
    smallest = _from_eff(dmin, off, 1e-6)
    below = _from_eff(dmin - 0.1, off, 1e-6)  # a tenth of the spread below it, 1e-13 of the offset
    with pytest.raises(InfeasibleBudgetError, match="below the smallest feasible") as info:
        solve_mapping(P, D, delta=below)
    assert abs(info.value.smallest_feasible - smallest) <= 2 * math.ulp(smallest)
    with pytest.raises(InfeasibleBudgetError) as info:
        privacy_distortion_curve(P, D, [below, smallest])
    assert abs(info.value.smallest_feasible - smallest) <= 2 * math.ulp(smallest)
    # a budget 1e-3 of the spread above the smallest is not the smallest (the old tolerance, 1e-12 of the
    # offset, took a whole spread for it): leakage below the cheapest mapping's
    M = np.eye(D.shape[1])[np.where(np.isfinite(D_eff), D_eff, np.inf).argmin(axis=1)]
    res = solve_mapping(P, D, delta=_from_eff(dmin + 1e-3, off, 1e-6))
    assert res.status == "optimal"
    assert res.leakage < leakage(P, M) - 1e-4


@pytest.mark.parametrize("seed", [20, 29, 32])
def test_maximal_leakage_tolerance_follows_the_answers_support(seed):
    # the tolerance's floor was 1e-14 of the range (entries to 1e8 no answer uses): 3 .. 13 times the optimum's
    # distance to the smallest distortion, so an answer at twice that distance would have been certified
    from shared_helpers import ml_span_instance, ml_target_reference

    prior, D, t = ml_span_instance(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(prior, D, max_leakage=t, leakage="maximal_leakage")
    ref, dmin = ml_target_reference(prior, D, t)
    assert res.status == "optimal"
    assert leakage(prior, res.mapping, kind="maximal_leakage") <= t * (1 + 1e-12)
    assert res.distortion - ref <= 1e-3 * (ref - dmin) + 1e-12 * ref
    assert res.certificate["distortion_tolerance"] <= 0.01 * (ref - dmin)


def _exact_distortion(pc, M, D):
    """``sum_c pc(c) [m(c) + sum_j M(c, j) (D(c, j) - m(c))]`` in exact rational arithmetic (``m(c)`` the row's
    smallest entry): the expected distortion of ``M`` with its rows taken as summing to 1 (a float mapping's rows
    miss 1 by an ulp, which times an offset of 1e9 is 0.1 of a spread of 1e-6)."""
    total = Fraction(0)
    for c in range(M.shape[0]):
        m = Fraction(float(np.min(D[c])))
        row = sum(Fraction(float(M[c, j])) * (Fraction(float(D[c, j])) - m) for j in np.flatnonzero(M[c]))
        total += Fraction(float(pc[c])) * (m + row)
    return total


def test_curve_judges_the_perfect_privacy_budget_in_the_problems_units():
    # the curve compared its budgets with the perfect-privacy distortion rounded to user units: at 1e9 a budget one
    # ulp of the offset (0.2 of the spread) below it got the perfect-privacy mapping, over the budget
    prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    D = 1e9 + 1e-6 * np.array([[0.0, 0.6], [0.8, 0.0]])
    pc = prior.sum(axis=0)
    # perfect privacy maps both inputs to one output: the cheaper is output 1, its distortion exactly
    pp = _exact_distortion(pc, np.array([[0.0, 1.0], [0.0, 1.0]]), D)
    below = float(pp)
    if Fraction(below) >= pp:
        below = math.nextafter(below, -math.inf)  # the largest budget below it
    curve, results = privacy_distortion_curve(prior, D, [below, 2e9], return_mappings=True)
    assert _exact_distortion(pc, results[0].mapping, D) <= Fraction(below)
    assert results[0].leakage > 1e-3  # not the perfect-privacy mapping
    # the reported perfect-privacy distortion is rounded up: a budget equal to it admits the mapping
    dpp = curve.attrs["perfect_privacy_delta"]
    curve, results = privacy_distortion_curve(prior, D, [dpp], return_mappings=True)
    assert results[0].leakage <= 1e-12
    assert _exact_distortion(pc, results[0].mapping, D) <= Fraction(dpp)


@pytest.mark.parametrize("big", [1e300, 1.7e308])
@pytest.mark.parametrize("solver", ["auto", "fast", "cvxpy", "sparse"])
def test_input_of_probability_zero_does_not_set_the_scale(big, solver):
    # the scale was the largest entry of every row: an input of probability 0 holding the only huge entries put
    # every internal distortion near 1e-300 ("inaccurate" at 0.30 bits where 0.0004 is optimal; fast and cvxpy raised)
    prior = np.array([[0.3, 0.1, 0.05, 0.0], [0.05, 0.2, 0.3, 0.0]])
    D = np.array([[0.0, 1, 2], [1, 0, 1], [2, 1, 0], [0, big, big]])
    delta = 0.6
    ref, _ = _cvx_reference(prior[:, :3] / prior[:, :3].sum(), D[:3], delta=delta)
    if solver == "sparse":
        r, j = np.nonzero(np.isfinite(D))
        res = solve_mapping(prior, sp.csr_array((D[r, j], (r, j)), shape=D.shape), delta=delta)
        M = res.mapping.toarray()
    else:
        res = solve_mapping(prior, D, delta=delta, solver=solver)
        M = res.mapping
    assert res.status == "optimal"
    assert res.leakage <= ref + 1e-6
    assert _exact_distortion(prior.sum(axis=0), M, D) <= Fraction(delta)


def test_budget_below_the_smallest_by_a_share_of_the_spread_is_refused():
    # the slack below the smallest distortion was 4 (k + kh) ulps of it: at 1e6 with k = 1200 it took budgets half
    # a spread of 1e-6 below the smallest, and answered the cheapest mapping, over them
    rng = np.random.default_rng(0)
    k = 1200
    prior = rng.dirichlet(np.ones(2 * k)).reshape(2, k)
    D = 1e6 + 1e-6 * np.column_stack([np.zeros(k), rng.uniform(0.5, 1, k)])
    smallest = float(sum(Fraction(float(p)) * Fraction(float(d)) for p, d in zip(prior.sum(axis=0), D[:, 0])))
    with pytest.raises(InfeasibleBudgetError, match="below the smallest feasible"):
        solve_mapping(prior, D, delta=smallest - 0.5e-6)
    # a budget the caller summed (pairwise, rounded) stays the smallest
    computed = expected_distortion(prior, np.eye(2)[np.zeros(k, dtype=int)], D)
    res = solve_mapping(prior, D, delta=min(computed, smallest))
    assert res.status == "optimal"


def test_check_prior_is_idempotent():
    # the prior was always divided by its sum: 1 + 2^-52 became 1 - 2^-53, then 1 + 2^-52, ... each pass moving
    # entries by an ulp
    from privrelease.mapping._checks import check_prior

    rng = np.random.default_rng(5)
    priors = [np.array([[0.1, 0.3], [0.2, 0.4000000000000001]])]
    for n in (3, 17, 200, 5000):
        P = rng.random((2, n))
        priors += [P / P.sum(), (P / P.sum()) * (1 + 3e-16), P / P.sum() * (1 - 5e-16)]
    for P in priors:
        once = check_prior(P)
        np.testing.assert_array_equal(check_prior(once), once)


def test_reported_distortion_uses_the_solvers_prior():
    # the reported distortion normalised the prior again: at 1e9 one ulp of p(c) is 2.2e-7, and an answer on its
    # budget (1e9 + 1.19e-7) was reported 3.6e-7 above 1e9
    prior = np.array([[0.1, 0.3], [0.2, 0.4000000000000001]])
    D = 1e9 + 1e-6 * np.array([[0.0, 1.0], [1.0, 0.0]])
    delta = 1e9 + 1.1920928955078125e-07
    res = solve_mapping(prior, D, delta=delta)
    assert res.status == "optimal"
    assert res.distortion <= delta
    pc = prior.sum(axis=0) / math.fsum(prior.ravel())
    assert _exact_distortion(pc, res.mapping, D) <= Fraction(delta) + Fraction(math.ulp(1e9))


def test_degenerate_mapper_result_follows_the_engines_budget_rule():
    # one private value: the mappers' cheapest mapping refused budgets below (1 - 1e-12) times the smallest
    # distortion, which at 1e9 took budgets a thousand spreads of 1e-6 below it
    from privrelease.mappers._base import _degenerate_result

    prior = np.array([[0.5, 0.5]])
    cost = 1e9 + 1e-6 * np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(InfeasibleBudgetError, match="below the smallest feasible"):
        _degenerate_result(prior, cost, 1e9 - 1e-4, None, "mutual_information")
    res = _degenerate_result(prior, cost, 1e9, None, "mutual_information")
    assert res.distortion == 1e9


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_distortion_lower_bound_is_rounded_down(seed):
    # the bound was converted to user units rounded to nearest: with offsets near 5e8 half an ulp is 0.06 of a
    # spread of 1e-6, and the reported lower bound exceeded the optimum by that much
    P, D0 = _instance(seed)
    k = D0.shape[0]
    a = np.random.default_rng(200 + seed).uniform(5e8, 1e9, k)
    D = a[:, None] + 1e-6 * D0
    D_eff = (D - a[:, None]) / 1e-6
    off = sum(Fraction(float(p)) * Fraction(float(x)) for p, x in zip(P.sum(axis=0), a))
    res = solve_mapping(P, D, max_leakage=0.02)
    _, ref = _cvx_reference(P, D_eff, target_bits=0.02)
    rng_, _ = _range(P, D_eff)
    lb = res.certificate["distortion_lower_bound"]
    assert (Fraction(lb) - off) / Fraction(1e-6) <= Fraction(ref + 1e-7 * rng_)
