"""The Lagrangian bound's multiplier search (``lagrangian_bound``) against an exact enumeration.

``g(mu) = sum_c min_j (A + mu B)[c, j] - mu rhs`` is concave and piecewise linear: its maximum
over ``mu >= 0`` is at 0 or at a breakpoint, where two entries of one row cross. The search
bisects over the entries that can still be a row's minimum in its bracket; the value it
returns must be ``g`` at the returned multiplier, computed over every entry (a valid bound),
and within rounding of the enumerated maximum.
"""

import numpy as np
import pytest

from privrelease.mapping._problem import lagrangian_bound


def _g(A, B, rhs, mu):
    return float((A + mu * B).min(axis=1).sum()) - mu * rhs


def _exact_max(A, B, rhs):
    cands = [0.0]
    for a, b in zip(A, B):
        fin = np.isfinite(a)
        a, b = a[fin], b[fin]
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = (a[None, :] - a[:, None]) / (b[:, None] - b[None, :])
        cands.extend(mu[np.isfinite(mu) & (mu > 0)].ravel())
    return max(_g(A, B, rhs, m) for m in np.unique(cands))


@pytest.mark.parametrize("seed", range(6))
def test_multiplier_search_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    k, kh = 12, 40  # more than 16 columns: the bisection runs on the pruned entries
    A = rng.normal(size=(k, kh)) * 10.0 ** rng.uniform(-4, 1)
    B = rng.uniform(0, 1, size=(k, kh))
    A[rng.random((k, kh)) < 0.2] = np.inf  # forbidden entries
    A[np.arange(k), rng.integers(0, kh, k)] = rng.normal(size=k)
    B[~np.isfinite(A)] = 0.0
    Bf = np.where(np.isfinite(A), B, np.inf)
    lo, hi = Bf.min(axis=1).sum(), np.where(np.isfinite(A), B, -np.inf).max(axis=1).sum()
    rhs = float(lo + rng.uniform(0.05, 0.6) * (hi - lo))
    val, mu = lagrangian_bound(A, B, rhs)
    assert val == _g(A, B, rhs, mu)  # the value is the bound at mu over every entry
    best = _exact_max(A, B, rhs)
    assert best - 1e-9 * (1 + abs(best)) <= val <= best + 1e-12 * (1 + abs(best))



def _counted_lines(a, b, rhs):
    """``ev`` of ``g(mu) = min_i (a_i + b_i mu) - rhs mu`` (one row of lines), counting its calls."""
    calls = []

    def ev(mu):
        v = a + mu * b
        i = int(np.argmin(v))
        calls.append(float(b[i]) - rhs)  # the slope returned
        return float(v[i]) - mu * rhs, float(b[i]) - rhs

    return ev, calls


@pytest.mark.parametrize("seed", range(8))
def test_the_cutting_plane_search_ends_at_the_maximum_within_the_breakpoints_count(seed):
    """maximize_multiplier (Kelley's cutting planes in 1-D): on a concave piecewise-linear ``g`` of ``L``
    lines it evaluates ``g`` at most once per breakpoint after bracketing (plus the safeguard's bisection
    steps, one per cutting-plane step at most), and returns the enumerated maximum up to rounding. Bisection
    alone took 50-60 evaluations here, whatever ``L``."""
    from privrelease.mapping._problem import maximize_multiplier

    rng = np.random.default_rng(seed)
    n_lines = (2, 3, 5, 40)[seed % 4]
    a = rng.normal(size=n_lines) * 10.0 ** rng.uniform(-6, 3)
    b = rng.uniform(0.0, 1.0, size=n_lines) * 10.0 ** rng.uniform(-3, 3)
    rhs = float(b.min() + rng.uniform(0.05, 0.95) * (b.max() - b.min()))
    ev, calls = _counted_lines(a, b, rhs)
    val, mu = maximize_multiplier(ev, rhs)
    best = _exact_max(a[None, :], b[None, :], rhs)
    assert val == _g(a[None, :], b[None, :], rhs, mu)
    assert best - 1e-12 * (1 + abs(best)) <= val <= best + 1e-12 * (1 + abs(best))
    # mu = 0, then 1, 4, 16, ... up to the first non-positive slope: the bracket
    n_geometric = 1 + next(i for i, s in enumerate(calls) if s <= 1e-13 * rhs)
    assert len(calls) - n_geometric <= 2 * (n_lines - 1) + 1, (len(calls), n_geometric)
    if n_lines == 2:  # one kink: the lines' crossing is the maximum, found by the first step
        assert len(calls) - n_geometric <= 1


# ---- the certificate's pi_hint (posteriors offered for the outputs a mapping leaves unused) ----

def _cvxpy_optimum(prior, d, delta):
    import cvxpy as cp

    P = cp.Variable(d.shape, nonneg=True)
    J = prior @ P
    q = cp.sum(J, axis=0)
    pa = prior.sum(axis=1)
    obj = cp.sum(cp.rel_entr(J, cp.reshape(pa, (pa.size, 1), order="F") @ cp.reshape(q, (1, q.size), order="F")))
    cons = [cp.sum(P, axis=1) == 1, cp.sum(cp.multiply(prior.sum(axis=0)[:, None] * d, P)) <= delta]
    cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL")
    return obj.value  # nats


@pytest.mark.parametrize("seed", range(4))
def test_pi_hint_keeps_the_bound_valid(seed):
    """Any hint gives a valid bound: the certified lower bound never exceeds the optimum."""
    from privrelease.mapping._problem import LN2, Problem

    rng = np.random.default_rng(seed)
    na, k = 2 + seed % 2, 6
    prior = rng.dirichlet(np.full(na * k, 0.7)).reshape(na, k)
    d = rng.uniform(0, 1, size=(k, k))
    np.fill_diagonal(d, 0.0)
    prob = Problem(prior, d)
    delta = prob.delta_min + 0.3 * (prob.delta_max - prob.delta_min)
    opt = _cvxpy_optimum(prior, d, delta)
    # a feasible mapping that leaves half of the outputs unused
    P = np.zeros((k, k))
    P[np.arange(k), np.arange(k) % (k // 2)] = 1.0
    P = prob.clean(P, delta)
    for _ in range(20):
        hint = rng.dirichlet(np.full(na, 0.5), size=k).T
        gap, _, f = prob.certificate(P, delta, pi_hint=hint)
        assert f - gap * LN2 <= opt + 1e-7


def test_pi_hint_prices_an_emptied_duplicate_output():
    """Two identical outputs: the optimum may use either one. A mapping that leaves the twin
    unused has a meaningless raw posterior there (a uniform fallback), which breaks the bound;
    the twin's posterior as the hint certifies the optimum exactly."""
    from privrelease.mapping import solve_mapping
    from privrelease.mapping._problem import LN2, Problem

    rng = np.random.default_rng(2)
    k = 5
    prior = rng.dirichlet(np.ones(2 * k)).reshape(2, k)
    d = rng.uniform(0, 1, size=(k, k))
    np.fill_diagonal(d, 0.0)
    d = np.hstack([d, d[:, :1]])  # output k duplicates output 0
    res = solve_mapping(prior, d, 0.05 * float(d.mean()))
    prob = Problem(prior, d)
    M = res.mapping[prob.rows].copy()
    M[:, 0] += M[:, k]
    M[:, k] = 0.0  # the twin emptied: the same mapping in every respect
    delta = prob.to_internal(0.05 * float(d.mean()))
    plain = prob.certificate(M, delta)[0]
    hint = prob.posteriors(M)
    hint[:, k] = hint[:, 0]
    hinted = prob.certificate(M, delta, pi_hint=hint)[0]
    assert plain > 1e-2  # the uniform fallback posterior of the emptied twin
    assert hinted <= 1e-6
    assert abs(prob.objective(M) / LN2 - res.leakage) < 1e-9


@pytest.mark.parametrize("seed", range(12, 20))
def test_a_hint_never_costs_the_certificate_a_bound_it_reaches_without(seed):
    """``pi_hint`` is offered, never imposed: the refined bound with it is at least the one without it.

    The point is the fast solver's answer moved by 1e-15 towards the cheapest mapping, as ``clean``
    does for a 1e-17 excess over the budget: a few outputs get 1e-15 of mass. On seed 17 (|A| = 10,
    k = 10) the hint won the cheap bound and its refinement stopped at 2.0e-6 bits, where refining
    the point's own posteriors reaches 3.3e-10: the fast path fell back to cvxpy (families, seed 9)."""
    from privrelease.mapping import squared_euclidean_distortion
    from privrelease.mapping._fast import solve_fast
    from privrelease.mapping._problem import Problem

    rng = np.random.default_rng(seed)
    prior = rng.dirichlet(np.full(100, rng.uniform(0.1, 1.0))).reshape(10, 10)
    X = rng.normal(size=(10, 2))
    d = (squared_euclidean_distortion(X), 1.0 - np.eye(10), np.abs(X[:, None] - X[None]).sum(axis=2))[seed % 3]
    prob = Problem(prior, d)
    delta = prob.delta_min + rng.uniform(0.05, 0.8) * (prob.delta_max - prob.delta_min)
    P, hint = solve_fast(prob, delta, return_hint=True)
    if hint is None:  # the posteriors of the uniform mapping: any columns on the simplex will do
        hint = prob.posteriors(prob.mask / prob.mask.sum(axis=1, keepdims=True))
    Pc = (1 - 1e-15) * P + 1e-15 * prob.P_min
    with_hint = prob.certificate(Pc, delta, target_bits=1e-6, pi_hint=hint, both_starts=True)[0]
    without = prob.certificate(Pc, delta, target_bits=1e-6)[0]
    assert with_hint <= max(without, 1e-6) + 1e-12
