"""Every path certified (issue 10), stop 47: tiny mutual-information targets on the sparse engine.

A target of 1e-12 or 1e-9 bits lies within ~1e-6 of the perfect-privacy distortion, where the curve's slope vanishes:
the target search's last solves need gaps of ~lambda x the distortion tolerance, ~3e-12 bits. The sparse engine ran
its column generation first there (at most 32 shared outputs), whose bound stays ~300 times the leakage itself near
perfect privacy (6.4e-8 bits at a point leaking 2.1e-10, after 29 masters), then the barrier on the edges and its
polish, whose bound priced the outputs the polish empties with the interior point's posteriors on those outputs only
(3.5e-7 bits at a point the dense certificate, the hint on every output, bounds within 3.9e-12). A 1e-12-bit target on
a 14 x 49 erasure alphabet took 36 s and 93 master solves. The references: the dense route on the same instance (the
fast engine), an independent perfect-privacy LP (HiGHS through scipy, written here), and the dense certificate.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from privrelease.mapping import solve_mapping
from test_left21 import sparse_engine
from test_mapping_sparse import _erasure_instance, _to_sparse


def _instance(seed):
    """An erasure alphabet of 3 fields with 3 values, about 14 inputs and 49 outputs, two classes (dense, inf
    where forbidden)."""
    return _erasure_instance(seed, 3, 2, n_inputs=20)


def _pp_distortion(prior, D):
    """The smallest distortion of a perfectly private mapping: min sum p(c) d(c, j) x(c, j) over the allowed entries,
    rows summing to 1, and p(a, j) = p(a) p(j) for every class and output (an LP, HiGHS)."""
    k, m = D.shape
    r, c = np.nonzero(np.isfinite(D))
    n = r.size
    pa, pc = prior.sum(axis=1), prior.sum(axis=0)
    rows = sp.csr_array((np.ones(n), (r, np.arange(n))), shape=(k, n))
    indep = [sp.csr_array(((prior[a, r] - pa[a] * pc[r]), (c, np.arange(n))), shape=(m, n)) for a in range(len(pa))]
    A = sp.vstack([rows] + indep).tocsr()
    b = np.concatenate([np.ones(k), np.zeros(m * len(pa))])
    out = linprog(pc[r] * D[r, c], A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    assert out.status == 0
    return out.fun


def _solve_both(prior, D, target, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dense = solve_mapping(prior, D, max_leakage=target)
        with monkeypatch.context() as mp:
            sparse_engine(mp)
            res = solve_mapping(prior, _to_sparse(D), max_leakage=target)
    return res, dense


@pytest.mark.parametrize("seed, target", [(0, 0.0), (0, 1e-12), (0, 1e-9), (2, 1e-9)])
def test_tiny_targets_on_the_sparse_engine_certify_and_agree_with_the_dense_route(seed, target, monkeypatch):
    prior, D = _instance(seed)
    res, dense = _solve_both(prior, D, target, monkeypatch)
    assert isinstance(res.mapping, sp.csr_array)
    assert res.status == "optimal" and dense.status == "optimal"
    assert res.leakage <= target or (target == 0.0 and res.leakage <= 1e-15)
    tol = res.certificate["distortion_tolerance"] if "distortion_tolerance" in res.certificate else 0.0
    # each route's rigorous lower bound is below the other's answer, and the answers agree within the tolerance
    assert res.certificate.get("distortion_lower_bound", res.distortion) <= dense.distortion * (1 + 1e-12)
    assert dense.certificate.get("distortion_lower_bound", dense.distortion) <= res.distortion * (1 + 1e-12)
    assert abs(res.distortion - dense.distortion) <= max(tol, 3e-6)
    # the perfectly private mapping meets every target: no answer is dearer than the independent LP's optimum
    d_pp = _pp_distortion(prior, D)
    assert res.distortion <= d_pp * (1 + 1e-9)
    if target == 0.0:
        assert res.distortion == pytest.approx(d_pp, rel=1e-7)
    else:
        assert res.distortion < d_pp  # a positive target buys distortion


def test_the_sparse_delta_solve_near_perfect_privacy_is_precise():
    # the last solve of the 1e-12-bit search at seed 0: the column generation stopped at 6.4e-8 bits after 29
    # masters (a neighbouring budget), the barrier's polished point at 1.4e-11 (its emptied outputs priced by the
    # hint on those outputs only); the dense fast engine certifies the same budget at the same tol. Both bounds are
    # rigorous: each bounds the other's point
    from privrelease.mapping._problem import Problem
    from privrelease.mapping._solver import _delta_best
    from privrelease.mapping._sparse import SparseProblem
    from privrelease.mapping._checks import check_distortion

    prior, D = _instance(0)
    sparse = SparseProblem(prior, check_distortion(_to_sparse(D), D.shape[0]))
    dense = Problem(prior, D)
    delta = 0.45268871940126537
    tol = 3.73e-12
    Ps, cs, name, ok, _ = _delta_best(sparse, delta, "sparse", tol)
    Pd, cd, _, ok_d, _ = _delta_best(dense, dense.to_internal(sparse.to_user(delta)), "fast", tol)
    assert ok and cs["gap_bits"] <= tol
    assert ok_d and cd["gap_bits"] <= tol
    assert sparse.distortion(Ps) <= delta * (1 + 1e-12)
    ln2 = math.log(2.0)
    assert cs["lower_bound"] <= dense.objective(Pd) + 1e-15
    assert cd["lower_bound"] <= sparse.objective(Ps) + 1e-15
    assert sparse.objective(Ps) / ln2 <= dense.objective(Pd) / ln2 + tol


def test_the_sparse_bound_takes_the_hint_on_every_output():
    # any pi gives a valid bound: the hint on every output, as the dense certificate takes it. A point whose support
    # the exact polish emptied (outputs at ~1e-12 of their rows set to 0) is bounded by the interior point's
    # posteriors; with them on its unused outputs only, 3.5e-7 bits, with them everywhere as the dense one, ~4e-12
    from privrelease.mapping._checks import check_distortion
    from privrelease.mapping._fast import _kkt_polish
    from privrelease.mapping._problem import Problem
    from privrelease.mapping._sparse import SparseProblem, barrier_edges

    prior, D = _instance(0)
    sparse = SparseProblem(prior, check_distortion(_to_sparse(D), D.shape[0]))
    dense = Problem(prior, D)
    delta, tol = 0.45268871940126537, 3.73e-12
    x = barrier_edges(sparse, delta, tol)
    dd = dense.to_internal(sparse.to_user(delta))
    Pd = dense.reduce(sparse.expand(x).toarray())
    Pp, _ = _kkt_polish(dense, Pd, dd, tol=tol)
    xe = np.asarray(dense.expand(Pp))[sparse.rows[sparse.r], sparse.j]
    g_dense = dense.certificate(Pp, dd, pi_hint=dense.posteriors(Pd))[0]
    g_sparse = sparse.certificate(xe, delta, pi_hint=sparse.posteriors(x))[0]
    assert g_dense < 1e-10
    assert g_sparse <= g_dense * (1 + 1e-3) + 1e-14
