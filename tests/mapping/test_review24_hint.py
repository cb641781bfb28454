"""Review of stop 47's certified refusal hints (hint24): the tries of the hint change no other warning filter, fail
quietly, and stay few on large programs. Each test failed on the code before the review's fixes."""

import warnings

import pytest

from privrelease.exceptions import InfeasibleBudgetError
from privrelease.mapping import _solver, solve_mapping
from test_blocks20 import four_block_instance


def _refusal(solver="fast"):
    prior, d = four_block_instance(10)[:2]
    with pytest.raises(InfeasibleBudgetError) as err:
        solve_mapping(prior, d, max_leakage=0.0, solver=solver)
    return err.value


def test_the_hints_tries_leave_other_warnings_shown(monkeypatch):
    # every category was ignored, process-wide, while the tries ran: another thread's warnings were lost
    original, calls = _solver._target_mode, []

    def target_mode(*args):
        calls.append(args[4])
        if len(calls) > 1:  # a try of the hint: what another thread raises at that moment
            warnings.warn("another thread's warning", UserWarning)
        return original(*args)

    monkeypatch.setattr(_solver, "_target_mode", target_mode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _refusal()
    assert len(calls) > 1
    assert sum("another thread's warning" in str(w.message) for w in caught) == len(calls) - 1


def test_a_try_that_fails_otherwise_leaves_the_refusal_as_it_was(monkeypatch):
    # a MemoryError in a try replaced the refusal (InfeasibleBudgetError only the context)
    hint = _refusal().smallest_feasible
    original, calls = _solver._target_mode, []

    def target_mode(*args):
        calls.append(args[4])
        if len(calls) > 1:
            raise MemoryError("a try of the hint")
        return original(*args)

    monkeypatch.setattr(_solver, "_target_mode", target_mode)
    exc = _refusal()
    assert len(calls) == 2  # the first failure ends the tries
    assert exc.smallest_feasible >= hint and "is answered" not in str(exc)  # the hint before the tries


def test_large_programs_try_two_targets_at_most(monkeypatch):
    original, calls = _solver._target_mode, []

    def target_mode(*args):
        calls.append(args[4])
        raise_ = len(calls) > 1
        if raise_:
            raise _solver.SolverError("not certified")  # every try fails: the whole ladder would run
        return original(*args)

    monkeypatch.setattr(_solver, "_target_mode", target_mode)
    _refusal()
    n_small = len(calls) - 1
    calls.clear()
    monkeypatch.setattr(_solver, "HINT_LADDER_MAX_CELLS", 0)
    _refusal()
    assert n_small > 2 and len(calls) - 1 <= 2


def test_the_refusals_message_names_the_certified_hint():
    exc = _refusal()
    assert f"max_leakage={exc.smallest_feasible!r} bits, the error's smallest_feasible, is answered" in str(exc)


# ------------------------------------------------------------------ the tall dual LP's retries (review of mlbig24)
def test_a_tall_dual_lp_whose_interior_point_fails_retries_it_without_crossover_first(monkeypatch):
    # the first retry was the dual simplex, the method that ran into its time limit on tall dual LPs
    from privrelease.mapping import _lp
    from test_mlbig24 import _dual, _tall

    real, real_dual, calls, inside = _lp.highs_linprog, _lp.maximal_leakage_target_multipliers, [], []

    def linprog(*args, method, options=None, **kw):
        if not inside:
            return real(*args, method=method, options=options, **kw)
        calls.append((method, dict(options or {})))
        if len(calls) == 1:  # the dual LP's interior point fails
            class Failed:
                status, x, fun = 4, None, None
            return Failed()
        return real(*args, method=method, options=options, **kw)

    def dual(*args, **kw):
        inside.append(1)
        try:
            return real_dual(*args, **kw)
        finally:
            inside.pop()

    prior, d, target = _tall(0, 120)
    monkeypatch.setattr(_lp, "highs_linprog", linprog)
    monkeypatch.setattr(_lp, "maximal_leakage_target_multipliers", dual)
    _, out = _dual(prior, d, target)
    assert calls[0] == ("highs-ipm", {}) and calls[1] == ("highs-ipm", {"run_crossover": "off"})
    assert out is not None
