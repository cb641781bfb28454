import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from privrelease.exceptions import InfeasibleBudgetError
from privrelease.mapping import (
    MappingResult,
    expected_distortion,
    leakage,
    maximal_leakage,
    mutual_information,
    solve_mapping,
    squared_euclidean_distortion,
)

ROOT = str(Path(__file__).resolve().parents[2])


def random_instance(seed, na, k, n_inf=0, kh=None):
    rng = np.random.default_rng(seed)
    kh = k if kh is None else kh
    prior = rng.dirichlet(np.ones(na * k)).reshape(na, k)
    pts = rng.normal(size=(max(k, kh), 2))
    d = squared_euclidean_distortion(pts[:k], pts[:kh])
    if n_inf:
        cells = [(i, j) for i in range(k) for j in range(kh) if d[i, j] > 0]
        for idx in rng.choice(len(cells), size=n_inf, replace=False):
            d[cells[idx]] = np.inf
    return prior, d


def check_feasible(res, prior, d, delta):
    M = res.mapping
    assert np.all(M >= 0)
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-10)
    assert np.all(M[np.isinf(d)] == 0.0)
    assert expected_distortion(prior, M, d) <= delta + 1e-9
    assert res.leakage == pytest.approx(leakage(prior, M), abs=1e-12)


@pytest.mark.parametrize(
    "seed, na, k, n_inf",
    [(0, 2, 4, 0), (1, 2, 6, 4), (2, 3, 5, 3), (3, 4, 6, 0), (4, 3, 8, 10)],
)
@pytest.mark.parametrize("frac", [0.05, 0.3])
def test_fast_agrees_with_cvxpy_reference(seed, na, k, n_inf, frac):
    prior, d = random_instance(seed, na, k, n_inf)
    pc = prior.sum(0)
    dfin = np.where(np.isinf(d), 0.0, d)
    delta = frac * float((pc[:, None] * dfin).sum())
    fast = solve_mapping(prior, d, delta, solver="fast")
    ref = solve_mapping(prior, d, delta, solver="cvxpy")
    for res in (fast, ref):
        check_feasible(res, prior, d, delta)
        assert res.status == "optimal" and res.certificate["gap_bits"] <= 1e-6
    assert fast.solver == "fast" and ref.solver.startswith("cvxpy")
    assert abs(fast.leakage - ref.leakage) <= 1e-4


def test_result_object_fields():
    prior, d = random_instance(5, 2, 4)
    res = solve_mapping(prior, d, 0.1)
    assert isinstance(res, MappingResult)
    assert res.delta == 0.1 and res.max_leakage is None and res.kind == "mutual_information"
    assert res.status == "optimal" and res.certificate["gap_bits"] <= 1e-6
    with pytest.raises(Exception):
        res.status = "x"


def test_independent_prior_leaks_nothing_at_zero_distortion():
    rng = np.random.default_rng(0)
    prior = np.outer(rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(4)))
    d = 1.0 - np.eye(4)
    res = solve_mapping(prior, d, 0.0)
    assert res.leakage == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(res.mapping, np.eye(4))


@pytest.mark.parametrize("solver", ["fast", "cvxpy", "auto"])
def test_identity_at_zero_budget(solver):
    prior, _ = random_instance(7, 3, 5)
    rng = np.random.default_rng(7)
    d = rng.uniform(0.5, 2.0, size=(5, 5))
    np.fill_diagonal(d, 0.0)
    res = solve_mapping(prior, d, 0.0, solver=solver)
    np.testing.assert_allclose(res.mapping, np.eye(5), atol=1e-12)
    assert res.leakage == pytest.approx(mutual_information(prior), abs=1e-12)
    assert res.certificate["gap_bits"] == 0.0


def test_single_public_symbol_and_zero_probability_symbols():
    # a single public symbol is refused (issue 10: nothing to protect), see test_mapping_tolerances;
    # zero-probability public and private symbols
    prior = np.array([[0.3, 0.0, 0.2], [0.1, 0.0, 0.4], [0.0, 0.0, 0.0]])
    d = 1.0 - np.eye(3)
    d[1, 0] = np.inf
    fast = solve_mapping(prior, d, 0.2, solver="fast")
    ref = solve_mapping(prior, d, 0.2, solver="cvxpy")
    assert abs(fast.leakage - ref.leakage) <= 1e-6
    np.testing.assert_allclose(fast.mapping.sum(1), 1.0)
    assert fast.mapping[1, 0] == 0.0


def test_infeasible_budget_message_states_smallest():
    prior = np.array([[0.25, 0.25], [0.25, 0.25]])
    d = np.array([[1.0, 2.0], [0.5, np.inf]])  # smallest: 0.5*1 + 0.5*0.5 = 0.75
    with pytest.raises(InfeasibleBudgetError, match="0.75") as exc:
        solve_mapping(prior, d, 0.5)
    assert exc.value.smallest_feasible == pytest.approx(0.75)
    with pytest.raises(InfeasibleBudgetError, match="no finite entry"):
        solve_mapping(prior, [[0.0, 1.0], [np.inf, np.inf]], 1.0)


def test_theorem2_lifting_keeps_leakage_and_bounds_distortion():
    rng = np.random.default_rng(11)
    nb, kc = 12, 4
    pts = rng.normal(size=(nb, 2))
    labels = np.arange(nb) % kc  # quantiser psi
    centers = np.array([pts[labels == c].mean(0) for c in range(kc)])
    p_ab = rng.dirichlet(np.ones(2 * nb)).reshape(2, nb)
    q_ac = np.stack([p_ab[:, labels == c].sum(1) for c in range(kc)], axis=1)  # eq. (20)
    d_cc = squared_euclidean_distortion(centers)
    delta = 0.2
    res = solve_mapping(q_ac, d_cc, delta)
    lifted = res.mapping[labels]  # eq. (21)
    assert leakage(p_ab, lifted) == pytest.approx(res.leakage, abs=1e-12)
    # distortion bound with a metric distortion (Euclidean distance): E d(B, C_hat) <= Delta + r
    dist = lambda a, b: np.sqrt(squared_euclidean_distortion(a, b))
    d_bc = dist(pts, centers)
    res_m = solve_mapping(q_ac, dist(centers, centers), delta)
    r = float(np.max(d_bc[np.arange(nb), labels]))
    assert expected_distortion(p_ab, res_m.mapping[labels], d_bc) <= delta + r + 1e-9


def test_max_leakage_mode_gives_minimal_distortion():
    prior, d = random_instance(21, 2, 5)
    target = 0.5 * solve_mapping(prior, d, 0.0).leakage
    res = solve_mapping(prior, d, max_leakage=target)
    assert res.leakage <= target + 1e-9
    assert res.delta is None and res.max_leakage == target
    # bisection on delta with the reference solver
    lo, hi = 0.0, 2.0 * res.distortion + 1.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if solve_mapping(prior, d, mid, solver="cvxpy").leakage <= target:
            hi = mid
        else:
            lo = mid
    assert res.distortion == pytest.approx(hi, abs=1e-4)
    assert res.certificate["distortion_gap"] <= 1e-4


def test_maximal_leakage_mode_matches_reference_and_brute_force():
    prior = np.array([[0.35, 0.15], [0.1, 0.4]])
    d = 1.0 - np.eye(2)
    delta = 0.2
    res = solve_mapping(prior, d, delta, leakage="maximal_leakage")
    ref = solve_mapping(prior, d, delta, leakage="maximal_leakage", solver="cvxpy")
    assert res.leakage == pytest.approx(maximal_leakage(prior, res.mapping))
    assert abs(res.leakage - ref.leakage) <= 1e-7
    # brute force over a grid of 2 x 2 mappings
    pc = prior.sum(0)
    best = np.inf
    for s, t in itertools.product(np.linspace(0, 1, 201), repeat=2):
        M = np.array([[1 - s, s], [t, 1 - t]])
        if pc[0] * s + pc[1] * t <= delta + 1e-12:
            best = min(best, maximal_leakage(prior, M))
    assert res.leakage <= best + 1e-9
    assert res.leakage >= best - 0.01
    # target mode: the least distortion reaching the maximal-leakage target
    tgt = solve_mapping(prior, d, max_leakage=res.leakage, leakage="maximal_leakage")
    assert tgt.distortion == pytest.approx(delta, abs=1e-6)


def test_a_maximal_leakage_target_solves_its_lp_once_and_takes_the_bound_from_it(monkeypatch):
    # the distortion's lower bound is the dual of the LP whose primal is the answer: one HiGHS solve, not two
    # (the cvxpy path solves it once too, for the bound); the bound certifies the answer and brute force agrees
    from privrelease.mapping import _solver

    calls = []
    real = _solver.solve_maximal_leakage_lp

    def counted(*args, **kwargs):
        calls.append((kwargs.get("target_bits"), kwargs.get("bound_bits")))
        return real(*args, **kwargs)

    monkeypatch.setattr(_solver, "solve_maximal_leakage_lp", counted)
    prior = np.array([[0.35, 0.15], [0.1, 0.4]])
    d = 1.0 - np.eye(2)
    target = 0.3
    pc, pca = prior.sum(0), prior / prior.sum(1, keepdims=True)  # p(c | a)
    s, t = (g.ravel() for g in np.meshgrid(np.linspace(0, 1, 1001), np.linspace(0, 1, 1001)))
    maps = np.stack([np.stack([1 - s, s], -1), np.stack([t, 1 - t], -1)], 1)  # (grid, c, j)
    ml = np.log2(np.einsum("ac,gcj->gaj", pca, maps).max(axis=1).sum(axis=1))
    best = (pc[0] * s + pc[1] * t)[ml <= target + 1e-12].min()
    for solver in ("fast", "cvxpy"):
        calls.clear()
        res = solve_mapping(prior, d, max_leakage=target, leakage="maximal_leakage", solver=solver)
        # one LP, solved a hair inside the target (LP_TARGET_RTOL), its bound taken at the target itself
        assert calls == [(pytest.approx(np.log2(2 ** target * (1 - 1e-12)), abs=1e-15), target)], solver
        assert res.status == "optimal"
        assert maximal_leakage(prior, res.mapping) <= target + 1e-12
        assert res.certificate["distortion_lower_bound"] <= res.distortion <= res.certificate["distortion_lower_bound"] + 1e-9
        assert best - 2e-3 <= res.distortion <= best + 1e-9


def test_the_maximal_leakage_lp_beyond_two_classes_goes_to_the_interior_point_and_agrees_with_clarabel(monkeypatch):
    # HiGHS's interior point (crossover to a vertex) beyond two classes, its dual simplex for two; the answer is the
    # plain epigraph program's optimum, solved independently by cvxpy/CLARABEL
    import cvxpy as cp

    from privrelease.mapping import _lp

    methods = []
    real = _lp.linprog

    def recorded(*args, **kwargs):
        methods.append(kwargs["method"])
        return real(*args, **kwargs)

    monkeypatch.setattr(_lp, "linprog", recorded)
    rng = np.random.default_rng(4)
    for na, want in ((2, "highs"), (3, "highs-ipm"), (5, "highs-ipm")):
        k = 12
        X = rng.normal(size=(k, 2))
        d = ((X[:, None] - X[None]) ** 2).sum(-1)
        prior = rng.dirichlet(np.full(na * k, 0.5)).reshape(na, k)
        delta = 0.15 * float((prior.sum(0)[:, None] * d).max(1).sum())
        methods.clear()
        res = solve_mapping(prior, d, delta, leakage="maximal_leakage")
        assert methods == [want], na
        X_ = cp.Variable((k, k), nonneg=True)
        pa = prior.sum(1)
        total = cp.sum(cp.max(cp.multiply(1.0 / pa[:, None], prior @ X_), axis=0))
        cons = [cp.sum(X_, axis=1) == 1, cp.sum(cp.multiply(prior.sum(0)[:, None] * d, X_)) <= delta]
        cp.Problem(cp.Minimize(total), cons).solve(solver="CLARABEL")
        assert res.leakage == pytest.approx(np.log2(total.value), abs=1e-6), na
        assert res.leakage == pytest.approx(maximal_leakage(prior, res.mapping), abs=1e-12)


def test_maximal_leakage_through_cvxpy_prints_nothing():
    # highspy prints HiGHS's banner on the first Highs() of a process, so the check runs in a fresh one
    # (in this process another test may already have consumed the banner)
    code = (
        "import numpy as np\n"
        "from privrelease.mapping import solve_mapping\n"
        "prior = np.array([[0.35, 0.15], [0.1, 0.4]])\n"
        "res = solve_mapping(prior, 1.0 - np.eye(2), 0.2, leakage='maximal_leakage', solver='cvxpy')\n"
        "assert res.solver.startswith('cvxpy'), res.solver\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"delta": -0.1}, ValueError, "delta"),
        ({"delta": float("nan")}, ValueError, "NaN"),
        ({"delta": "a"}, TypeError, "delta"),
        ({}, ValueError, "exactly one"),
        ({"delta": 0.1, "max_leakage": 0.1}, ValueError, "exactly one"),
        ({"delta": 0.1, "solver": "mosek"}, ValueError, "solver"),
        ({"delta": 0.1, "leakage": "entropy"}, ValueError, "leakage"),
        ({"max_leakage": -1.0}, ValueError, "max_leakage"),
        ({"delta": 0.1, "tol": 0}, ValueError, "tol"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    with pytest.raises(exc, match=match):
        solve_mapping(prior, 1 - np.eye(2), **kwargs)


def test_bad_prior_and_distortion():
    d = 1 - np.eye(2)
    with pytest.raises(ValueError, match="sum to 1"):
        solve_mapping([[0.4, 0.1], [0.1, 0.3]], d, 0.1)
    with pytest.raises(ValueError, match="non-negative"):
        solve_mapping([[0.6, -0.1], [0.1, 0.4]], d, 0.1)
    with pytest.raises(ValueError, match="rows"):
        solve_mapping([[0.4, 0.1], [0.1, 0.4]], np.ones((3, 2)), 0.1)
    with pytest.raises(ValueError, match="non-negative"):
        solve_mapping([[0.4, 0.1], [0.1, 0.4]], [[0.0, -1.0], [1.0, 0.0]], 0.1)
    with pytest.raises(ValueError, match="warm_start"):
        solve_mapping([[0.4, 0.1], [0.1, 0.4]], d, 0.1, warm_start=np.eye(3))
    # a warm start with NaN, negative entries or rows off the simplex is refused, not ignored
    for bad, msg in [([[np.nan, 1.0], [0.0, 1.0]], "finite entries"), ([[1.5, -0.5], [0.0, 1.0]], "non-negative"),
                     ([[0.5, 0.4], [0.0, 1.0]], "sum to 1")]:
        with pytest.raises(ValueError, match=f"warm_start.*{msg}"):
            solve_mapping([[0.4, 0.1], [0.1, 0.4]], d, 0.1, warm_start=np.array(bad))
    with pytest.raises(TypeError, match="warm_start"):
        solve_mapping([[0.4, 0.1], [0.1, 0.4]], d, 0.1, warm_start="identity")


def test_unreachable_maximal_leakage_target():
    prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    d = np.array([[0.0, np.inf], [np.inf, 0.0]])  # only the identity is allowed
    with pytest.raises(InfeasibleBudgetError, match="smallest achievable") as exc:
        solve_mapping(prior, d, max_leakage=0.01, leakage="maximal_leakage")
    assert exc.value.smallest_feasible == pytest.approx(maximal_leakage(prior))
    with pytest.raises(InfeasibleBudgetError, match="cannot be reached"):
        solve_mapping(prior, d, max_leakage=0.01)


def test_auto_policy_when_fast_is_not_certified(monkeypatch):
    import privrelease.mapping._fast as fast_module
    import privrelease.mapping._solver as solver_module
    from privrelease.exceptions import ConvergenceWarning, SolverError

    prior, d = random_instance(8, 2, 5)
    delta = 0.1
    # a feasible but poor "fast" answer: the cheapest mapping (identity)
    monkeypatch.setattr(fast_module, "solve_fast", lambda prob, delta, **kw: prob.P_min.copy())
    res = solve_mapping(prior, d, delta, solver="auto")
    assert res.solver.startswith("cvxpy") and res.status == "optimal"
    with pytest.raises(SolverError, match="could not certify"):
        solve_mapping(prior, d, delta, solver="fast")
    monkeypatch.setattr(solver_module, "CVXPY_FALLBACK_MAX_VARIABLES", 4)
    with pytest.warns(ConvergenceWarning, match="fallback skipped"):
        res = solve_mapping(prior, d, delta, solver="auto")
    assert res.status == "inaccurate" and res.solver == "fast"
    assert res.certificate["gap_bits"] > 1e-6
    np.testing.assert_allclose(res.mapping, np.eye(5))


def test_the_stages_of_a_solve_and_its_fallback_are_logged(monkeypatch, caplog):
    """A long "auto" call says what it is doing on the ``privrelease.mapping`` logger (INFO): each answer with its
    certified gap, and the fallback to cvxpy with the fast path's gap and the size that makes it slow."""
    import logging

    import privrelease.mapping._fast as fast_module

    prior, d = random_instance(8, 2, 5)
    with caplog.at_level(logging.INFO, logger="privrelease.mapping"):
        res = solve_mapping(prior, d, 0.1)
    assert res.solver == "fast" and res.status == "optimal"
    (rec,) = [r for r in caplog.records if r.name.startswith("privrelease")]
    assert rec.name == "privrelease.mapping" and rec.levelno == logging.INFO
    assert "delta=0.1: fast answer certified" in rec.getMessage()
    assert f"gap {res.certificate['gap_bits']:.3g} bits" in rec.getMessage()

    caplog.clear()
    monkeypatch.setattr(fast_module, "solve_fast", lambda prob, delta, **kw: prob.P_min.copy())
    with caplog.at_level(logging.INFO, logger="privrelease.mapping"):
        res = solve_mapping(prior, d, 0.1)
    ours = [r for r in caplog.records if r.name.startswith("privrelease")]
    messages = [r.getMessage() for r in ours]
    assert res.solver == "cvxpy-CLARABEL" and res.status == "optimal"
    assert "fast answer not certified" in messages[0]
    fallback = [m for m in messages if "falling back to cvxpy" in m]
    assert len(fallback) == 1 and "25 allowed mapping entries" in fallback[0] and "fast: gap" in fallback[0]
    assert f"cvxpy-CLARABEL answer certified (gap {res.certificate['gap_bits']:.3g} bits" in messages[-1]
    # the stages are logged at INFO, never above (a warning is for an uncertified answer only)
    assert all(r.name == "privrelease.mapping" and r.levelno == logging.INFO for r in ours)


def test_the_cvxpy_fallback_has_a_variable_per_allowed_entry_only(caplog, monkeypatch):
    """A band of allowed transitions (3 of 12 outputs a row): the fallback's program has the allowed entries as
    variables (36, not 144 with an equality per forbidden entry), leaves the forbidden ones exactly 0 and finds the
    fast path's optimum."""
    import logging

    import privrelease.mapping._fast as fast_module
    from privrelease.mapping._solver import _presolved_problem

    rng = np.random.default_rng(3)
    k = 12
    prior = rng.dirichlet(np.full(2 * k, 0.7)).reshape(2, k)
    pos = np.sort(rng.normal(size=k))
    d = (pos[:, None] - pos[None, :]) ** 2
    band = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]) <= 1
    d = np.where(band, d, np.inf)
    delta = 0.3 * float((prior.sum(0)[:, None] * np.where(band, d, 0.0)).sum())
    fast = solve_mapping(prior, d, delta, solver="fast")
    allowed = int(_presolved_problem(prior, d)[0].mask.sum())
    assert allowed <= int(band.sum()) < k * k
    monkeypatch.setattr(fast_module, "solve_fast", lambda prob, delta, **kw: prob.P_min.copy())
    with caplog.at_level(logging.INFO, logger="privrelease.mapping"):
        ref = solve_mapping(prior, d, delta)
    fallback = [r.getMessage() for r in caplog.records if "falling back to cvxpy" in r.getMessage()]
    assert len(fallback) == 1 and f"on {allowed} allowed mapping entries" in fallback[0]
    assert ref.solver.startswith("cvxpy") and ref.status == "optimal" and ref.certificate["gap_bits"] <= 1e-6
    check_feasible(ref, prior, d, delta)
    assert np.all(ref.mapping[~band] == 0.0)
    assert abs(ref.leakage - fast.leakage) <= 2e-6
