"""Every path certified (issue 10), stop 46: ``max_leakage`` targets a hair below a refusal's hint, answers whose
reported leakage exceeds the target, and cvxpy's maximal-leakage program bounded in time.

References are independent of the package: ``I(A; B)`` of the blocks of allowed entries summed in long double (every
mapping leaks at least that much: ``C_hat`` determines the block), leakages of the returned mapping summed in long
double, the instance families of ``test_left21`` (``rare_instance``) and ``test_blocks20`` (``block_instance``).
"""

import math
import re
import warnings

import numpy as np
import pytest

from privrelease.exceptions import ConvergenceWarning, InfeasibleBudgetError, SolverError
from privrelease.mapping import solve_mapping
from test_blocks20 import block_instance
from test_left21 import _leakage_long_double, rare_instance
from test_lefta22 import _max_leakage_long_double


def _instance(family, seed):
    if family == "rare":
        return rare_instance(seed)
    prior, d, _, _ = block_instance(seed)
    return prior, d


def _hint(prior, d, kind):
    """The smallest_feasible of the refusal of a target of 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InfeasibleBudgetError) as err:
            solve_mapping(prior, d, max_leakage=0.0, leakage=kind)
    return err.value.smallest_feasible


def _block_floor_bits_long_double(prior, labels):
    """``I(A; B)`` in bits, summed in long double."""
    P = prior.astype(np.longdouble)
    pab = np.stack([P[:, labels == b].sum(axis=1) for b in np.unique(labels)], axis=1)
    outer = pab.sum(axis=1, keepdims=True) * pab.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pab > 0, pab * np.log(pab / outer), 0)
    return float(terms.sum() / np.log(np.longdouble(2)))


# --- 1. a hair below a block floor: refused by the floor ------------------------------------------------------------

@pytest.mark.parametrize("seed", [16, 21, 57, 82])
def test_a_target_a_hair_below_the_block_floor_is_refused_by_the_floor(seed):
    # 1e-12 of itself below the hint (the floor I(A; B), 0.06 .. 0.31 bits) the target was "could not decide": the
    # least-leaking solve's Lagrangian bound stops 2e-11 bits below the floor, and the re-solves do not reach it. Every
    # mapping leaks at least I(A; B) (C_hat determines the block B), which proves the target out of reach
    prior, d, labels, _ = block_instance(seed)
    floor = _block_floor_bits_long_double(prior, labels)
    hint = _hint(prior, d, "mutual_information")
    assert hint >= floor - 1e-15
    target = hint * (1 - 1e-12)
    assert target < floor - 1e-14  # below the true floor by more than its rounding: out of reach
    with pytest.raises(InfeasibleBudgetError) as err:
        solve_mapping(prior, d, max_leakage=target)
    bound = float(re.search(r"at least ([0-9.e+-]+) bits", str(err.value)).group(1))
    assert target < bound <= floor + 1e-15  # a proven bound above the target, and below every mapping's leakage
    assert err.value.smallest_feasible >= floor - 1e-15


def test_a_target_inside_the_floors_rounding_names_the_excess():
    # block_instance(56): the floor is 0.016 bits, and 1e-12 of it below the hint lies within the floor's rounding
    # (terms of magnitude ~1, 4 ulps each): the target cannot be proven out of reach nor met as leakage() reads the
    # least-leaking mapping. It was "could not decide" with no gap named; now "auto" warns naming the excess and
    # returns the per-block mapping "inaccurate", an explicit solver raises
    prior, d, labels, _ = block_instance(56)
    target = _hint(prior, d, "mutual_information") * (1 - 1e-12)
    floor = _block_floor_bits_long_double(prior, labels)
    assert abs(target - floor) <= 1e-14
    with pytest.warns(ConvergenceWarning, match="within the leakage's rounding") as caught:
        res = solve_mapping(prior, d, max_leakage=target)
    assert res.status == "inaccurate"
    excess = float(re.search(r"by ([0-9.e+-]+) bits", str(caught[0].message)).group(1))
    assert excess == pytest.approx(res.leakage - target, rel=1e-2)
    assert _leakage_long_double(prior, res.mapping) >= floor - 1e-15
    with pytest.raises(SolverError, match="within the leakage's rounding"):
        solve_mapping(prior, d, max_leakage=target, solver="fast")


# --- 2. the reported leakage within every "optimal" answer's target -------------------------------------------------

CASES = [("rare", "maximal_leakage", 13), ("rare", "maximal_leakage", 24), ("block", "maximal_leakage", 10),
         ("block", "mutual_information", 0), ("block", "mutual_information", 8), ("block", "mutual_information", 13)]


@pytest.mark.parametrize("family, kind, seed", CASES)
def test_every_optimal_answer_reads_within_its_target(family, kind, seed):
    # at and just below the hint the engine compared its own sum on the reduced problem with the target up to that
    # sum's rounding: "optimal" answers read (leakage(), the value MappingResult reports) up to 1.6e-14 bits above
    # the target. Now each is optimal and within it, or refused, or not "optimal" (the rounding named)
    prior, d = _instance(family, seed)
    hint = _hint(prior, d, kind)
    ref = _leakage_long_double if kind == "mutual_information" else _max_leakage_long_double
    for rel in (-1e-13, -1e-14, 0.0, 1e-15):
        target = hint * (1 + rel)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                res = solve_mapping(prior, d, max_leakage=target, leakage=kind)
            except InfeasibleBudgetError as exc:
                assert rel < 0 and exc.smallest_feasible > target
                continue
        if res.status == "optimal":
            assert res.leakage <= target, (rel, res.leakage - target)
            assert ref(prior, res.mapping) <= target + 1e-15
        else:
            assert res.leakage > target and rel < 0
            assert any("within the leakage's rounding" in str(w.message) for w in caught)


@pytest.mark.parametrize("family, kind, seed", CASES)
def test_the_hint_is_met_as_the_result_reads_it(family, kind, seed):
    # the hint was the engine's own sum (rounded up to a float), 2e-16 .. 6e-16 bits below leakage() of the answer
    # at it: passed back, that answer read above it. It is now that mapping's reported leakage plus its rounding
    prior, d = _instance(family, seed)
    hint = _hint(prior, d, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(prior, d, max_leakage=hint, leakage=kind)
    assert res.status == "optimal" and res.leakage <= hint


# --- 3. cvxpy's maximal-leakage program bounded in time ------------------------------------------------------------

def _ml_instance():
    rng = np.random.default_rng(3)
    return rng.dirichlet(np.ones(36)).reshape(3, 12), rng.uniform(0, 1, (12, 10))


def test_the_cvxpy_maximal_leakage_program_carries_the_lps_time_limit(monkeypatch):
    # solver="cvxpy" ran cvxpy's HiGHS with no time limit, where the engine's own HiGHS LPs carry one
    import cvxpy as cp

    from privrelease.mapping import _lp

    seen = []
    real = cp.Problem.solve

    def spy(self, *args, **kwargs):
        if kwargs.get("solver") == "SCIPY":
            seen.append(dict(kwargs.get("scipy_options", {})))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", spy)
    prior, d = _ml_instance()
    for kw in ({"delta": 0.2}, {"max_leakage": 0.05}):
        res = solve_mapping(prior, d, leakage="maximal_leakage", solver="cvxpy", **kw)
        assert res.status == "optimal"
    # (|A| + 2) k k_hat nonzeros: the epigraph rows, the row sums and the budget
    assert [o.get("time_limit") for o in seen] == [_lp.time_limit_for_nonzeros(5 * 12 * 10)] * 2


@pytest.mark.parametrize("kw", [{"delta": 0.2}, {"max_leakage": 0.05}])
def test_the_cvxpy_maximal_leakage_program_stopped_is_no_answer(kw, monkeypatch):
    from privrelease.mapping import _lp

    monkeypatch.setattr(_lp, "HIGHS_TIME_LIMIT_FLOOR", 1e-9)  # (not 0: HiGHS reads 0 as no limit)
    monkeypatch.setattr(_lp, "HIGHS_SECONDS_PER_NONZERO", 0.0)
    prior, d = _ml_instance()
    with pytest.raises(SolverError, match="time limit"):
        solve_mapping(prior, d, leakage="maximal_leakage", solver="cvxpy", **kw)
