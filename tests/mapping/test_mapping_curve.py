import numpy as np
import pytest

from privrelease.mapping import leakage, privacy_distortion_curve, squared_euclidean_distortion
from privrelease.mapping._lp import perfect_privacy_mapping
from privrelease.mapping._problem import Problem


def instance(seed=0, k=6):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(k, 2))
    pc = rng.dirichlet(np.ones(k) * 3)
    post = 1 / (1 + np.exp(-3 * pts[:, 0]))
    prior = np.vstack([pc * (1 - post), pc * post])
    return prior, squared_euclidean_distortion(pts)


def test_curve_monotone_convex_and_certified():
    prior, d = instance()
    deltas = np.linspace(0, 1.2, 13)
    curve, results = privacy_distortion_curve(prior, d, deltas, return_mappings=True)
    assert list(curve.columns) == ["delta", "leakage_bits", "distortion", "map_accuracy", "status",
                                   "gap_bits", "solver"]
    L = curve["leakage_bits"].to_numpy()
    tol = 1e-6
    assert np.all(np.diff(L) <= tol)
    # convexity: second differences on the uniform grid are non-negative up to the certificate
    assert np.all(L[:-2] - 2 * L[1:-1] + L[2:] >= -4 * tol)
    assert (curve["status"] == "optimal").all()
    assert np.all(curve["distortion"] <= curve["delta"] + 1e-9)
    assert len(results) == len(deltas)
    assert results[3].leakage == pytest.approx(L[3])
    assert curve["map_accuracy"].iloc[-1] <= curve["map_accuracy"].iloc[0] + 1e-12


def test_perfect_privacy_endpoint_is_zero_leakage():
    prior, d = instance(1)
    curve = privacy_distortion_curve(prior, d, [0.0, 10.0])
    dpp = curve.attrs["perfect_privacy_delta"]
    assert np.isfinite(dpp)
    assert curve["leakage_bits"].iloc[1] == pytest.approx(0.0, abs=1e-9)
    prob = Problem(prior, d)
    P, dist = perfect_privacy_mapping(prob)
    assert dist == pytest.approx(dpp)
    assert leakage(prior, prob.expand(P)) <= 1e-9
    # just below the end point the leakage is positive (the LP end point is tight)
    below = privacy_distortion_curve(prior, d, [0.97 * dpp])
    assert below["leakage_bits"].iloc[0] > 1e-7


def test_curve_order_and_parallel_agree():
    prior, d = instance(2, k=5)
    deltas = [0.4, 0.0, 0.2]
    seq = privacy_distortion_curve(prior, d, deltas)
    par = privacy_distortion_curve(prior, d, deltas, n_jobs=2)
    assert seq["delta"].tolist() == deltas
    np.testing.assert_allclose(seq["leakage_bits"], par["leakage_bits"], atol=1e-6)


def test_parallel_curve_keeps_the_process_blas_threads():
    # BLAS's thread count is one setting of the process (OpenBLAS; threadpoolctl lets one Python thread control
    # it): the solver's one-thread limit, opened and closed by each worker thread of a parallel curve, left the
    # process on one thread after the curve (a user's later numpy work ran single-threaded), and the workers
    # on every thread while another's limit had closed. Every call inside the workers sees one thread, the
    # process gets its count back
    from threadpoolctl import threadpool_info, threadpool_limits

    import privrelease.mapping._curve as curve_module

    def blas():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    prior, d = instance(3, k=8)
    seen = []
    solve = curve_module.solve_mapping

    def spy(*args, **kwargs):
        seen.append(max(blas()))
        res = solve(*args, **kwargs)
        seen.append(max(blas()))
        return res

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas()
        if max(before, default=1) < 2:
            pytest.skip("no BLAS library that takes two threads")
        curve_module.solve_mapping = spy
        try:
            for _ in range(3):
                privacy_distortion_curve(prior, d, np.linspace(0.05, 0.6, 6), n_jobs=2)
                assert blas() == before
        finally:
            curve_module.solve_mapping = solve
    assert seen and set(seen) == {1}


def test_parallel_curve_warns_every_uncertified_point():
    # warning filters are one setting of the process (Python < 3.14): while one worker thread quiets a cvxpy
    # solve (catch_warnings + "ignore"), another worker's ConvergenceWarning for an uncertified point was
    # dropped. The curve warns its uncertified points from the calling thread. Forced interleaving: worker 1
    # holds an "ignore" filter while worker 2 returns an uncertified point
    import dataclasses
    import threading
    import warnings

    import privrelease.mapping._curve as curve_module
    from privrelease.exceptions import ConvergenceWarning

    prior, d = instance(4, k=5)
    solve = curve_module.solve_mapping
    inside, warned = threading.Event(), threading.Event()

    def interleaved(P, D, delta, **kwargs):
        res = solve(P, D, delta, **kwargs)
        if delta == 0.3:  # a cvxpy solve run quietly
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inside.set()
                assert warned.wait(10)
            return res
        assert inside.wait(10)
        warnings.warn("uncertified", ConvergenceWarning)
        warned.set()
        return dataclasses.replace(res, status="inaccurate")

    filters = list(warnings.filters)
    curve_module.solve_mapping = interleaved
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            curve = privacy_distortion_curve(prior, d, [0.3, 0.6], n_jobs=2)
    finally:
        curve_module.solve_mapping = solve
    assert curve["status"].tolist() == ["optimal", "inaccurate"]
    msgs = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(msgs) == 1 and "delta=0.6" in msgs[0] and "status='inaccurate'" in msgs[0]
    assert warnings.filters == filters


def test_curve_bad_input():
    prior, d = instance()
    with pytest.raises(ValueError, match="deltas"):
        privacy_distortion_curve(prior, d, [])
    with pytest.raises(ValueError, match="delta"):
        privacy_distortion_curve(prior, d, [0.1, -1.0])


def test_warm_started_curve_points_are_the_cold_solves():
    # each point of the sweep is warm-started from the previous one: same certified optimum as a
    # solve from scratch (both within tol of the true optimum), and repeated budgets / budgets at
    # the smallest distortion are one problem each, returned with the user's budget
    from privrelease.mapping import solve_mapping

    prior, d = instance(2, k=7)
    deltas = [0.3, 0.0, 0.15, 0.3, 0.6, 0.15]
    curve, results = privacy_distortion_curve(prior, d, deltas, return_mappings=True)
    tol = 1e-6
    for delta, row, res in zip(deltas, curve.itertuples(), results):
        cold = solve_mapping(prior, d, delta=delta)
        assert row.status == "optimal" and cold.status == "optimal"
        assert row.gap_bits <= tol and res.delta == delta
        assert abs(row.leakage_bits - cold.leakage) <= tol
        assert row.distortion <= delta + 1e-12
        assert leakage(prior, res.mapping) == pytest.approx(row.leakage_bits, abs=1e-12)
    assert results[0] is results[3] and results[2] is results[5]
