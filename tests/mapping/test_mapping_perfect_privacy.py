"""The perfect-privacy LP for two classes solved as a transportation problem by column
generation (``_lp._two_class_transport``), against the plain LP in the mapping variables."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import privrelease.mapping._lp as lp
from privrelease.mapping import leakage
from privrelease.mapping._problem import Problem


def _plain(prob, monkeypatch):
    """``perfect_privacy_mapping`` with the transport path switched off (the plain LP), solved afresh
    (the cache of recent problems is emptied before and after)."""
    lp._PP_CACHE.clear()
    with monkeypatch.context() as m:
        m.setattr(lp, "_two_class_transport", lambda prob: (None, None))
        out = lp.perfect_privacy_mapping(prob)
    lp._PP_CACHE.clear()
    return out


def _instance(rng, i):
    k = int(rng.integers(3, 14))
    kh = int(rng.integers(2, 16)) if i % 3 == 0 else k
    post = rng.random(k) if i % 4 else rng.choice([0.0, 1e-9, 0.5, 1 - 1e-9, 1.0], size=k)
    pc = rng.dirichlet(np.full(k, 0.5))
    if i % 5 == 0:  # rare inputs
        pc[: k // 3] = 10.0 ** rng.uniform(-10, -6, size=k // 3)
        pc /= pc.sum()
    prior = np.vstack([pc * post, pc * (1 - post)])
    d = rng.random((k, kh)) * (1 + 3 * rng.random())
    if i % 2:  # forbidden transitions, never a whole row
        forb = rng.random((k, kh)) < 0.3
        forb[np.arange(k), rng.integers(kh, size=k)] = False
        d = np.where(forb, np.inf, d)
    return prior / prior.sum(), d


def test_two_class_transport_matches_the_plain_lp(monkeypatch):
    rng = np.random.default_rng(20261123)
    used = 0
    for i in range(60):
        prior, d = _instance(rng, i)
        prob = Problem(prior, d)
        P_ref, d_ref = _plain(prob, monkeypatch)
        P, dist = lp.perfect_privacy_mapping(prob)
        if P_ref is None:  # no perfectly private mapping: the transport path must not find one
            assert P is None and dist == math.inf
            continue
        used += lp._two_class_transport(prob)[0] is not None
        full = prob.expand(P)
        assert np.allclose(full.sum(axis=1), 1.0, atol=1e-12) and full.min() >= 0.0
        assert np.all(full[~np.isfinite(d)] == 0.0)
        assert leakage(prior, full) <= 1e-12
        # optimal: the same LP optimum (ours cannot be lower than the plain LP's, nor higher)
        assert dist == pytest.approx(d_ref, rel=1e-8, abs=1e-12 * np.nanmax(np.where(np.isfinite(d), d, np.nan)))
    assert used >= 30  # the transport path answered most instances (not the fallback)


def test_two_class_transport_column_generation_is_exact():
    # k = 60 with a sorted posterior (the two sides far apart: the first working set is far
    # from optimal, several pricing rounds): the same optimum as the transport LP on every path
    rng = np.random.default_rng(5)
    k = 60
    X = rng.normal(size=(k, 2))
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    post = 1 / (1 + np.exp(-3 * X[:, 0]))
    pc = rng.dirichlet(np.full(k, 2.0))
    prob = Problem(np.vstack([pc * post, pc * (1 - post)]), d)
    P, t = lp._two_class_transport(prob)
    assert P is not None and t.shape == (1, prob.kh)
    # the full path LP: every (i, l, j)
    g = prob.M[0] - prob.pA[0] * prob.pc
    pos, neg = np.flatnonzero(g > 0), np.flatnonzero(g < 0)
    cost = (prob.W[pos] / g[pos, None])[:, None, :] + (prob.W[neg] / -g[neg, None])[None, :, :]
    ii, ll, jj = np.unravel_index(np.arange(cost.size), cost.shape)
    n = cost.size
    A = sp.csr_matrix((np.ones(2 * n), (np.concatenate([ii, pos.size + ll]), np.tile(np.arange(n), 2))))
    b = np.concatenate([g[pos] / g[pos].sum(), g[neg] / g[neg].sum()])
    res = linprog(cost.ravel(), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    assert res.status == 0
    # the path LP's optimum in distortion units: sum over paths of flow * cost * (side total)
    zero = prob.W[g == 0].min(axis=1).sum() if np.any(g == 0) else 0.0
    assert prob.distortion(P) == pytest.approx(res.fun * g[pos].sum() + zero, rel=1e-9)
    assert prob.objective(P) <= 1e-12


def _mi_nats(prob, P):
    return prob.objective(P)


@pytest.mark.parametrize("seed", range(4))
def test_independence_lower_bound_holds_for_every_mapping(seed):
    # Lagrange + Pinsker: for ANY multipliers t and any allowed mapping P,
    # <W, P> >= independence_lower_bound(prob, t, I(P)); checked on random t (of every scale)
    # and random mappings (dense, deterministic, and mixtures with the perfect-privacy
    # mapping, whose leakage is tiny), |A| = 2..4, rectangular, forbidden entries, private
    # outputs (reachable from one input only, as an erasure alphabet's non-erased tuples)
    rng = np.random.default_rng(100 + seed)
    na = 2 + seed % 3
    k, kh = int(rng.integers(3, 9)), int(rng.integers(3, 12))
    prior = rng.dirichlet(np.full(na * k, 0.7)).reshape(na, k)
    d = rng.random((k, kh)) * 3.0
    forb = rng.random((k, kh)) < 0.3
    forb[np.arange(k), rng.integers(kh, size=k)] = False
    if seed % 2:  # output 0 private to input 0, and free for it
        forb[1:, 0] = True
        forb[0, 0] = False
        d[0, 0] = 0.0
    d = np.where(forb, np.inf, d)
    prob = Problem(prior, d)
    Ppp, _, t_pp = lp.perfect_privacy_mapping(prob, return_duals=True)
    ts = [rng.normal(size=(na - 1, prob.kh)) * 10.0 ** rng.uniform(-2, 3) for _ in range(6)]
    if t_pp is not None:
        ts.append(t_pp)
        ts += [lp.sharpest_independence_multipliers(prob, L) for L in (1e-12, 1e-6, 1e-2)]
    for _ in range(40):
        kind = rng.integers(3)
        P = rng.random((prob.k, prob.kh)) ** (1 + 8 * rng.random())
        if kind == 1:
            P = (P == P.max(axis=1, keepdims=True)).astype(float)
        P = np.where(prob.mask, P, 0.0)
        P[P.sum(axis=1) == 0, :] = prob.mask[P.sum(axis=1) == 0, :]
        P /= P.sum(axis=1, keepdims=True)
        if kind == 2 and Ppp is not None:
            P = (1 - 10.0 ** -rng.uniform(1, 8)) * Ppp + 10.0 ** -rng.uniform(1, 8) * P
            P /= P.sum(axis=1, keepdims=True)
        I = _mi_nats(prob, P)
        for t in ts:
            assert lp.independence_lower_bound(prob, t, I) <= prob.distortion(P) + 1e-12


def test_independence_lower_bound_is_tight_at_perfect_privacy():
    # with the LP's own multipliers the bound at leakage 0 is the LP's optimum (the perfectly
    # private mapping's distortion), for the transport path (|A| = 2) and the plain LP (|A| = 3),
    # and it decreases like sqrt(I)
    rng = np.random.default_rng(7)
    for na in (2, 3):
        k = 30
        X = rng.normal(size=(k, 2))
        d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
        prior = rng.dirichlet(np.full(na * k, 1.0)).reshape(na, k)
        prob = Problem(prior, d)
        P, _, t = lp.perfect_privacy_mapping(prob, return_duals=True)
        dpp = prob.distortion(P)
        b0 = lp.independence_lower_bound(prob, t, 0.0)
        assert dpp * (1 - 1e-7) <= b0 <= dpp * (1 + 1e-9)
        b1, b2 = (lp.independence_lower_bound(prob, t, v) for v in (1e-8, 4e-8))
        # sqrt(4 I) = 2 sqrt(I), up to the Donsker-Varadhan bound's higher-order term (relative ~sqrt(I))
        assert b0 - b1 == pytest.approx((b1 - b2), rel=1e-3)


def test_perfect_privacy_lp_is_solved_once_per_problem(monkeypatch):
    # a leakage curve fits one mapper per cap on the same prior and costs: the LP of a reduced
    # problem is kept (the last few), each caller gets its own copy and the distortion in its own units
    rng = np.random.default_rng(3)
    prior, d = _instance(rng, 4)
    lp._PP_CACHE.clear()
    calls = []
    real = lp._perfect_privacy_mapping
    monkeypatch.setattr(lp, "_perfect_privacy_mapping", lambda prob: calls.append(1) or real(prob))
    P1, d1, t1 = lp.perfect_privacy_mapping(Problem(prior, d), return_duals=True)
    P2, d2, t2 = lp.perfect_privacy_mapping(Problem(prior, d), return_duals=True)
    assert len(calls) == 1
    assert np.array_equal(P1, P2) and np.array_equal(t1, t2) and d2 == d1
    P2[:] = -1.0  # a caller's copy: the kept answer is untouched
    assert np.array_equal(lp.perfect_privacy_mapping(Problem(prior, d))[0], P1)
    assert len(calls) == 1
    # another problem (one cost changed) is solved afresh
    d4 = d.copy()
    d4[0, np.flatnonzero(np.isfinite(d4[0]))[0]] += 0.5
    lp.perfect_privacy_mapping(Problem(prior, d4))
    assert len(calls) == 2
    # the distortion in each problem's own units (1e-13 D normalises to D up to rounding)
    P3, d3 = lp.perfect_privacy_mapping(Problem(prior, 1e-13 * d))
    assert np.allclose(P3, P1, atol=1e-9) and d3 == pytest.approx(1e-13 * d1, rel=1e-9)
    lp._PP_CACHE.clear()


def _rare_inputs(seed):
    """p(c) over ten decades (1e-10 .. 1), random posteriors, squared-Euclidean costs."""
    rng = np.random.default_rng(seed)
    na, k = int(rng.integers(2, 6)), int(rng.integers(10, 50))
    pc = 10.0 ** rng.uniform(-10, 0, size=k)
    prior = rng.dirichlet(np.ones(na), size=k).T * (pc / pc.sum())[None, :]
    X = rng.normal(size=(k, 2))
    return prior / prior.sum(), ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)


@pytest.mark.parametrize("seed", [1, 3, 6, 11])
def test_perfect_privacy_with_rare_inputs_leaks_nothing(seed):
    # HiGHS meets the independence equations only to its absolute tolerance: outputs used by inputs of
    # mass 1e-10 leaked up to 1e-10 bits at "perfect privacy" (and max_leakage=0 answers inherited it);
    # such outputs are merged into another one (a garbling: never more leakage), at a distortion cost
    # within 1e-9 of the range
    from privrelease.mapping import expected_distortion, solve_mapping

    prior, d = _rare_inputs(seed)
    res = solve_mapping(prior, d, max_leakage=0)
    assert res.status == "optimal"
    assert leakage(prior, res.mapping) <= 1e-12
    prob = Problem(prior, d)
    pc = prior.sum(axis=0)
    rng_ = float(pc @ d.max(axis=1) - pc @ d.min(axis=1))
    P_lp, _ = lp.perfect_privacy_mapping(prob)
    assert expected_distortion(prior, res.mapping, d) <= prob.to_user(prob.distortion(P_lp)) + 1e-9 * rng_



def _joint_mass_lp_reference(prior, d):
    """The perfect-privacy LP in the joint masses ``y(c, j) = p(c) P(c, j)``, in plain cvxpy (CLARABEL):
    ``min sum d y`` s.t. ``sum_j y(c, j) = p(c)`` and ``sum_c (p(a | c) / p(a) - 1) y(c, j) = 0``."""
    import cvxpy as cp

    pc, pa = prior.sum(axis=0), prior.sum(axis=1)
    post = prior / np.where(pc > 0, pc, 1.0)[None, :]
    y = cp.Variable(d.shape, nonneg=True)
    cons = [cp.sum(y, axis=1) == pc] + [(post[a] / pa[a] - 1.0) @ y == 0 for a in range(prior.shape[0])]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(d, y))), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "may be inaccurate" at 1e-12: it agrees with HiGHS to 1e-8 here
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return prob.value


@pytest.mark.parametrize("seed", [1, 3, 6])
def test_a_prior_over_ten_decades_has_its_lp_solved_in_the_joint_masses_only(seed, monkeypatch):
    """Inputs whose masses span more than ``WIDE_PRIOR`` skip the LP in the mapping's own variables (its
    coefficients span as many decades: HiGHS's interior point was 2-4x slower and its answer leaked, so the LP
    in the joint masses was solved after it anyway); the answer is the independent formulation's optimum."""
    prior, d = _rare_inputs(seed)
    prob = Problem(prior, d)
    pc = prior.sum(axis=0)
    assert pc.min() < lp.WIDE_PRIOR * pc.max()
    forms = []
    real = lp._independence_lp

    def spy(prob_, r, c, n, sel, n_all, w, s, opts, method="highs"):
        forms.append("P" if np.all(s == 1) else "joint")
        return real(prob_, r, c, n, sel, n_all, w, s, opts, method)

    lp._PP_CACHE.clear()
    with monkeypatch.context() as m:
        m.setattr(lp, "_independence_lp", spy)
        m.setattr(lp, "_two_class_transport", lambda prob: (None, None))
        P, dist = lp.perfect_privacy_mapping(prob)
    lp._PP_CACHE.clear()
    assert forms == ["joint"]
    assert leakage(prior, P) <= 1e-12
    # the optimum, plus at most what merging the outputs that carry the LP's rounding may add (1e-7 of the range)
    ref = _joint_mass_lp_reference(prior, d)
    pc_range = float(pc @ d.max(axis=1) - pc @ d.min(axis=1))
    assert ref - 1e-8 * (1.0 + ref) <= dist <= ref + 1e-7 * pc_range + 1e-8 * (1.0 + ref), (dist, ref)


@pytest.mark.parametrize("seed", range(6))
def test_merging_leaky_outputs_never_adds_leakage(seed):
    # on any mapping (not only the LP's): rows stay distributions on allowed entries, the leakage never
    # grows, the distortion grows by at most rtol of the range
    prior, d = _rare_inputs(seed)
    rng = np.random.default_rng(seed)
    d = np.where(rng.random(d.shape) < 0.1, np.inf, d)
    d[np.arange(d.shape[0]), np.arange(d.shape[0])] = 0.0
    prob = Problem(prior, d)
    P = np.where(prob.mask, rng.random((prob.k, prob.kh)) ** 8, 0.0)
    P /= P.sum(axis=1, keepdims=True)
    Q = lp._merge_leaky_outputs(prob, P, rtol=1e-3)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(Q[~prob.mask] == 0) and np.all(Q >= 0)
    assert prob.objective(Q) <= prob.objective(P)
    assert prob.distortion(Q) - prob.distortion(P) <= 1e-3 * (prob.delta_max - prob.delta_min) * (1 + 1e-12)


def _tiny_class(seed):
    """One class of prior 1e-7 (any position), Dirichlet joint, squared-Euclidean costs."""
    rng = np.random.default_rng(seed)
    na, k = int(rng.integers(2, 6)), int(rng.integers(10, 50))
    prior = rng.dirichlet(np.full(na * k, rng.uniform(0.1, 1.0))).reshape(na, k)
    a = rng.integers(na)
    prior[a] *= 1e-7 / prior[a].sum()
    X = rng.normal(size=(k, 2))
    return prior / prior.sum(), ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)


@pytest.mark.parametrize("seed", range(8))
def test_perfect_privacy_holds_for_a_rare_class(seed):
    # the independence equations of a class of prior 1e-7 had coefficients below HiGHS's tolerances: the
    # "perfectly private" mapping left that class's posterior up to 60% off on some outputs (3.7e-11 bits);
    # each class's equations are now scaled by 1 / p(a). Every used output's posterior is p(a), to 1e-6
    # relative, for the rare class too
    prior, d = _tiny_class(seed)
    prob = Problem(prior, d)
    P, _, t = lp.perfect_privacy_mapping(prob, return_duals=True)
    J = prob.joint(P)
    q = J.sum(axis=0)
    used = q > 1e-12
    post = J[:, used] / q[used]
    np.testing.assert_allclose(post, np.broadcast_to(prob.pA[:, None], post.shape), rtol=1e-6, atol=0)
    assert leakage(prior, prob.expand(P)) <= 1e-12
    # the multipliers (rewritten for the classes 0 .. |A| - 2) still bound d_pp tightly at zero leakage, and from
    # below: the bound subtracts its own rounding and the marginals' (multipliers of 1e7 for a class of 1e-7: 1.5e-7
    # relative here, within the certificate's DIST_RTOL of 1e-6)
    bound = lp.independence_lower_bound(prob, t, 0.0)
    assert bound <= prob.distortion(P)
    assert bound == pytest.approx(prob.distortion(P), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_deviation_slack_bounds_every_joint_and_never_exceeds_pinsker(seed):
    # -sum_{a,j} t~(a, j) (J - p_A q)(a, j) <= _deviation_slack(t, p_A, I(A; C_hat)) for every joint of a mapping,
    # on random multipliers of every scale, classes down to p(a) = 1e-7, and mappings from deterministic to
    # nearly independent; the slack is never above Pinsker's half-range bound
    rng = np.random.default_rng(300 + seed)
    na, k = 2 + seed % 4, 12
    prior = rng.dirichlet(np.full(na * k, 0.6)).reshape(na, k)
    if seed % 2:
        prior[0] *= 1e-7  # a rare class
    prior /= prior.sum()
    prob = Problem(prior, rng.random((k, k)))
    pA = prob.pA
    for _ in range(30):
        t = rng.normal(size=(na - 1, k)) * 10.0 ** rng.uniform(-2, 4)
        if seed % 2:
            t[0] *= 1e4  # the rare class's multipliers large
        P = rng.random((k, k)) ** (1 + 10 * rng.random())
        if rng.random() < 0.3:
            P = (P == P.max(axis=1, keepdims=True)).astype(float)
        P /= P.sum(axis=1, keepdims=True)
        P = (1 - 10.0 ** -rng.uniform(0, 6)) / k + 10.0 ** -rng.uniform(0, 6) * P if rng.random() < 0.5 else P
        P /= P.sum(axis=1, keepdims=True)
        J = prior @ P
        q = J.sum(axis=0)
        tt = np.vstack([t, np.zeros((1, k))])
        dev = -float((tt * (J - pA[:, None] * q[None, :])).sum())
        I = _mi_nats(prob, P)
        slack = lp._deviation_slack(t, pA, I)
        assert dev <= slack + 1e-12 * np.abs(tt).max()
        assert slack <= lp._half_range(t) * math.sqrt(2.0 * I) * (1 + 1e-12)


def test_deviation_slack_weights_the_multipliers_by_the_classes():
    # two equally likely classes: the variable t~(., j) - m_j takes two opposite values, where Hoeffding's lemma
    # (hence Pinsker's bound) is tight, so the two agree; a class of probability 1e-7 with a large multiplier
    # moves Pinsker's bound (its half-range) and hardly the Donsker-Varadhan one (about sqrt(2 I p(a)) |t|)
    L = 1e-9
    t = np.array([[3.0, -1.0, 2.0]])
    pins = lp._half_range(t) * math.sqrt(2 * L)
    assert lp._deviation_slack(t, np.array([0.5, 0.5]), L) == pytest.approx(pins, rel=1e-3)
    t2 = np.array([[1e4, 1e4, 1e4], [1.0, -1.0, 0.5]])
    pA = np.array([1e-7, 0.5, 0.5 - 1e-7])
    dv = lp._deviation_slack(t2, pA, L)
    assert dv <= 1e-3 * lp._half_range(t2) * math.sqrt(2 * L)
    assert dv >= math.sqrt(2 * L * 1e-7) * 1e4 * 0.9  # the rare class's own share of the spread remains


def test_a_constant_per_class_in_the_multipliers_does_not_loosen_the_bound():
    # each class's row of J - p_A q sums to 0 over the outputs and sum_c g_a(c) = 0: a constant per class added to the
    # multipliers changes neither the Lagrangian's row minima nor the deviation they bound, only its bound (the
    # weighted spread of each output's multipliers over the classes). The LP's multipliers carry such constants
    # (|A| = 19, families2 odd_values: 100 .. 300 per class, a spread of ~10 within one; a 1e-15-bit target bound
    # 3.9e-6 below d_pp instead of 1.9e-7). independence_lower_bound removes them: the same bound with or without
    rng = np.random.default_rng(11)
    na, k = 5, 14
    X = rng.normal(size=(k, 2))
    prior = rng.dirichlet(np.full(na * k, 1.0)).reshape(na, k)
    prob = Problem(prior, ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    P, _, t = lp.perfect_privacy_mapping(prob, return_duals=True)
    dpp = prob.distortion(P)
    shifted = t + rng.uniform(100.0, 300.0, size=(na - 1, 1))
    for L in (1e-15, 1e-12, 1e-9):
        b, b2 = lp.independence_lower_bound(prob, t, L), lp.independence_lower_bound(prob, shifted, L)
        assert b <= dpp * (1 + 1e-12) and b2 <= dpp * (1 + 1e-12)
        assert dpp - b2 <= 1.1 * (dpp - b) + 1e-12 * dpp
    # the shift is (about) the centre of the smallest ball around the columns t~(., j) in the p-weighted spread:
    # no larger than the one the multipliers came with (within the iteration's 1 / sqrt(200))

    def spread(tt):
        full = np.vstack([tt, np.zeros((1, tt.shape[1]))])
        g = full - prob.pA @ full
        return float(np.sqrt((prob.pA[:, None] * g * g).sum(axis=0).max()))

    assert spread(lp._shift_classes(shifted, prob.pA)) <= spread(t) * (1 + 1 / math.sqrt(200))
    assert spread(shifted) > 10 * spread(t)


@pytest.mark.parametrize("seed", [1, 2])
def test_sharpest_multipliers_tighten_the_bound_and_stay_below_every_answer(seed):
    # the LP's multipliers maximise the Lagrangian's row minima, i.e. the bound at leakage 0; at L > 0 the bound
    # also pays for their spread over the classes, and the cone program's multipliers trade the two: a tighter bound
    # (|A| = 3, 4: 1.5-2x closer to the LP's distortion), still below the distortion of every mapping leaking at most
    # L (a certified max_leakage answer's; random mappings' in the test above)
    from privrelease.mapping import solve_mapping

    rng = np.random.default_rng(20 + seed)
    na, k = 2 + seed, 10
    X = rng.normal(size=(k, 2))
    prior = rng.dirichlet(np.full(na * k, 1.0)).reshape(na, k)
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    prob = Problem(prior, d)
    P, _, t = lp.perfect_privacy_mapping(prob, return_duals=True)
    dpp = prob.distortion(P)
    for bits in (1e-9, 1e-6):
        L = bits * math.log(2)
        t_best = lp.sharpest_independence_multipliers(prob, L)
        b, b_best = lp.independence_lower_bound(prob, t, L), lp.independence_lower_bound(prob, t_best, L)
        assert dpp - b_best <= 0.8 * (dpp - b)
        # most of it is the LP's optimal face's least spread (the multipliers sharpened for a leakage of 1e-300 nats);
        # the rest is the trade: a little less of the row minima for a smaller spread (3-12% here)
        b_face = lp.independence_lower_bound(prob, lp.sharpest_independence_multipliers(prob, 1e-300), L)
        assert dpp - b_best <= 0.99 * (dpp - b_face)
        res = solve_mapping(prior, d, max_leakage=bits)
        assert leakage(prior, res.mapping) <= bits * (1 + 1e-9)
        assert b_best <= prob.distortion(prob.reduce(res.mapping)) + 1e-12


def test_merging_runs_until_no_output_merges():
    # families seed 33, pc_range: k = 45, |A| = 3, p(c) from 8e-11 to 0.4. One pass of the merge left 1.55e-12
    # bits at max_leakage=0 (above the 1e-12 the README promises): a merge changes the weights and shares of
    # the outputs it touches, and outputs passed over can merge in a second pass (7.6e-17 nats), within the
    # same distortion allowance
    from pathlib import Path

    from privrelease.mapping import expected_distortion, solve_mapping

    z = np.load(Path(__file__).parent / "data" / "pc_range_k45_a3_perfect_privacy.npz")
    prior, d = z["prior"], z["d"]
    res = solve_mapping(prior, d, max_leakage=0)
    assert res.status == "optimal"
    assert leakage(prior, res.mapping) <= 1e-13
    prob = Problem(prior / prior.sum(), d)
    pc = prior.sum(axis=0) / prior.sum()
    rng_ = float(pc @ d.max(axis=1) - pc @ d.min(axis=1))
    P_lp, _ = lp.perfect_privacy_mapping(prob)
    assert expected_distortion(prior, res.mapping, d) <= prob.to_user(prob.distortion(P_lp)) + 1e-7 * rng_
