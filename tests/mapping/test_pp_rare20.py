"""Perfect privacy (max_leakage=0, both measures) on priors with rare public symbols or classes (masses 1e-11 .. 1e-14
beside masses of order 0.1): the exact optimum, certified.

The reference is written here: the perfect-privacy LP in conditional form, ``p(j | a) = p(j | a0)`` for every class,
its coefficients ``p(c | a) - p(c | a0)`` computed in exact rationals (no cancellation), each class's equations divided
by their largest coefficient, the unknowns the mapping's rows (of order 1 whatever ``p(c)``), solved by scipy's HiGHS
(its answer meets the equations to HiGHS's tolerance: its distortion is the optimum to about that). The solver's
mapping is checked independent in exact rationals (each conditional ``p(j | a)`` to 1e-14).
"""

import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog

from privrelease.exceptions import ConvergenceWarning, InfeasibleBudgetError
from privrelease.mapping import expected_distortion, leakage, solve_mapping

inf = np.inf

# two public symbols of mass 2.8e-12 and 2.7e-11 and a class of mass 3.6e-12 (docs/benchmarks.md, target0_20): the LP in
# joint masses leaked 6.6e-12 bits at distortion 0.101, and its multipliers bounded 0.101 where 0.632 is optimal
P_RARE = np.array([[2.2669844731579846e-14, 5.7409430674106576e-12, 3.0169813474614271e-01],
                   [1.8115042015544284e-12, 1.8264458796153922e-11, 3.4231247834123006e-02],
                   [6.7711138757133644e-23, 6.2335652210940112e-23, 3.6037752806353011e-12],
                   [1.0148213045366253e-12, 3.2676458531894842e-12, 6.6407061738600848e-01]])
D_RARE = np.array([[0.4857491422956892, inf, 0.2577209812990404, inf, 0.47368863474950484],
                   [inf, 0.09779097111466106, 0.6406919379698764, inf, inf],
                   [0.13897068408494118, 0.10136703985129003, 0.6323894126003353, inf, inf]])

# a class of mass 1e-13 (the maximal leakage's target 0 came back "inaccurate" at the constant mapping's 1.82)
P_CLASS = np.array([[1.5121365138398848e-25, 3.6148341755891964e-14, 1.9906316312878644e-14, 2.6177129084826012e-14,
                     1.5051693628629084e-15, 1.3852067575331752e-14],
                    [1.4322493177831635e-12, 1.4642882489434597e-01, 3.1609313598050714e-01, 1.4653794427071420e-01,
                     4.2212197798733329e-02, 3.4872789705416962e-01]])
D_CLASS = np.array([[3., 1., inf, 2., 1., inf],
                    [2., inf, 1., 1., inf, inf],
                    [2., 2., inf, 3., 2., 2.],
                    [1., 1., inf, 2., 1., 3.],
                    [inf, inf, inf, 2., 3., 1.],
                    [2., 2., 1., 1., 2., inf]])

# a class of mass 2.8e-12 and symbols of mass 5e-13 .. 4e-10 (the mutual information's target 0: "inaccurate" at the
# cheapest constant mapping, 0.311, where 0.168 is perfectly private)
P_MI = np.array([[4.5675031690786134e-21, 1.1963284911050661e-12, 5.6162035483676381e-23, 3.9261830192732187e-14,
                  1.5827989622145436e-12, 3.6401646501313695e-24, 3.8195729926378133e-22, 6.7276742459724900e-21],
                 [2.5447123916112181e-10, 5.0174880633815810e-01, 7.7945566517461055e-12, 1.1857829086824635e-01,
                  3.7967290215464361e-01, 5.1016386249393673e-13, 2.3086630159849350e-12, 3.7104880097408381e-10]])
D_MI = np.array([[0.6871869159277278, 0.8088316689818369, 0.33506394817069096, 0.15064811182490134,
                  0.7265999452961329, 0.6353176456042771, 0.3925560205325751, 0.29520765976980157],
                 [0.9287842939737334, 0.08704078460152564, 0.31020066828650417, 0.4792012038114063,
                  0.5893228121792554, 0.25587362984916084, 0.5942068626640139, 0.11245875848802867],
                 [0.5315833967875899, 0.08505055648269144, 0.3899795477656606, 0.7124600597806784,
                  0.19973112610376387, 0.15222420244378998, 0.9653956237206218, 0.4288797978956759],
                 [0.0574289344841834, 0.4253603131110435, 0.2722604984249122, 0.817721120376295,
                  0.879174581107803, 0.7619793841431356, 0.6738345238692344, 0.5709625538638293],
                 [0.05787224162418225, 0.6508125745681608, 0.3871696775346032, 0.2818727663627162,
                  0.5649490919507525, 0.24205358379847242, 0.987313322684474, 0.5979460215826896],
                 [0.7488094778110163, 0.10865663009319404, 0.03663509647779395, 0.17234046879282416,
                  0.18432697444273294, 0.5503902347150064, 0.6558795946061472, 0.8956326182946227],
                 [0.09524895061520666, 0.49754223755364513, 0.6594904119568072, 0.416255985527613,
                  0.07215115210491929, 0.09652213039246094, 0.00902434416939657, 0.3211952418701013],
                 [0.16054751344272, 0.949445960650137, 0.6307407911768057, 0.0979474138949824,
                  0.6654552044926879, 0.5044901634665752, 0.8304354597859918, 0.1884145852446364]])


def _exact_conditionals(prior):
    rows = [[Fraction(float(x)) for x in row] for row in np.asarray(prior, dtype=float)]
    return [[x / sum(row) for x in row] for row in rows if sum(row) > 0]


def _exactly_independent(prior, M, atol=Fraction(1, 10 ** 14)):
    """Whether ``p(j | a)`` of the mapping ``M`` agree for every class to ``atol``, in exact rationals."""
    cond = _exact_conditionals(prior)
    Mq = [[Fraction(float(x)) for x in row] for row in np.asarray(M, dtype=float)]
    Mq = [[x / sum(row) for x in row] for row in Mq]
    post = [[sum(ca[c] * Mq[c][j] for c in range(len(Mq))) for j in range(len(Mq[0]))] for ca in cond]
    return all(abs(p[j] - post[0][j]) <= atol for p in post for j in range(len(post[0])))


def _reference(prior, D):
    """The perfect-privacy LP in conditional form (see the module notes): its smallest distortion over the two scalings
    of the unknowns, the mapping's rows (units 1) and each symbol's row in units of its largest coefficient (where a
    coefficient of 1e-12 would be dropped)."""
    prior = np.asarray(prior, dtype=float)
    k, kh = D.shape
    cond = _exact_conditionals(prior)
    ref = max(range(len(cond)), key=lambda a: sum(Fraction(float(x)) for x in prior[a]))
    rows = []
    for a in range(len(cond)):
        if a == ref:
            continue
        g = np.array([float(cond[a][c] - cond[ref][c]) for c in range(k)])
        if np.abs(g).max() > 0:
            rows.append(g / np.abs(g).max())
    G = np.array(rows).reshape(-1, k)
    allowed = np.isfinite(D)
    idx = [(c, j) for c in range(k) for j in range(kh) if allowed[c, j]]
    pc = prior.sum(axis=0)
    best = np.inf
    col_max = np.abs(G).max(axis=0, initial=0.0)
    for col in (np.ones(k), np.where(col_max > 0, col_max, 1.0)):
        # unknowns z(c, j) = col(c) P(c, j), row sums col(c)
        A, b = [], []
        for c in range(k):
            A.append([1.0 if ci == c else 0.0 for ci, _ in idx])
            b.append(col[c])
        for g in G:
            for j in range(kh):
                A.append([g[ci] / col[ci] if jj == j else 0.0 for ci, jj in idx])
                b.append(0.0)
        cost = np.array([pc[ci] * D[ci, jj] / col[ci] for ci, jj in idx])
        res = linprog(cost / cost.max(), A_eq=np.array(A), b_eq=np.array(b), bounds=(0, None), method="highs",
                      options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
        if res.status != 0:
            continue
        M = np.zeros((k, kh))
        for (ci, jj), z in zip(idx, res.x):
            M[ci, jj] = max(z, 0.0) / col[ci]
        if np.all(M.sum(axis=1) > 0.5):
            M /= M.sum(axis=1, keepdims=True)
            best = min(best, expected_distortion(prior, M, D))
    assert np.isfinite(best)
    return best


def _solve_quietly(prior, D, kind, solver):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return solve_mapping(prior, D, max_leakage=0.0, leakage=kind, solver=solver)


@pytest.mark.parametrize("solver", ["auto", "fast"])
def test_mutual_information_rare_symbols_exact_optimum(solver):
    d_ref = _reference(P_RARE, D_RARE)
    r = _solve_quietly(P_RARE, D_RARE, "mutual_information", solver)
    assert r.status == "optimal"
    assert _exactly_independent(P_RARE, r.mapping)
    assert leakage(P_RARE, r.mapping) <= 1e-15
    assert abs(r.distortion - d_ref) <= 1e-9
    assert r.certificate["distortion_lower_bound"] <= d_ref + 1e-12


@pytest.mark.parametrize("prior, D, kind", [(P_CLASS, D_CLASS, "maximal_leakage"), (P_MI, D_MI, "mutual_information")],
                         ids=["ml_class_1e-13", "mi_class_2.8e-12"])
def test_rare_class_exact_optimum_certified(prior, D, kind):
    d_ref = _reference(prior, D)
    r = _solve_quietly(prior, D, kind, "auto")
    assert r.status == "optimal"
    if kind == "maximal_leakage":  # counts each class's conditional error whatever its mass
        assert _exactly_independent(prior, r.mapping)
    assert leakage(prior, r.mapping, kind=kind) <= 1e-15
    # the reference's optimum, and the bound below it (rigorous)
    assert abs(r.distortion - d_ref) <= 1e-9
    assert r.certificate["distortion_lower_bound"] <= d_ref + 1e-9


def test_conditional_lp_bound_is_rigorous_and_tight():
    from privrelease.mapping._lp import conditional_perfect_privacy
    from privrelease.mapping._solver import _presolved_problem, _rounding_share

    out = _presolved_problem(P_RARE, D_RARE)
    prob = out[0] if isinstance(out, tuple) else out
    Q, lower = conditional_perfect_privacy(prob, _rounding_share(prob))
    d_ref = _reference(P_RARE, D_RARE)
    # the constant mapping to output 2 is optimal: 0.63239 (the LP in joint masses bounded 0.101)
    assert prob.to_user(lower) <= d_ref + 1e-15
    assert prob.to_user(lower) >= d_ref - 1e-9
    assert abs(prob.to_user(prob.distortion(Q)) - d_ref) <= 1e-9


def test_perfect_privacy_out_of_reach_on_ordinary_masses_skips_the_conditional_lp(monkeypatch):
    """Forbidden entries that rule out perfect privacy on ordinary masses: refused naming the smallest leakage, without
    the LP in conditional form (infeasible there too: up to four LPs spent for nothing)."""
    import privrelease.mapping._solver as solver_module

    calls = []
    real = solver_module.conditional_perfect_privacy
    monkeypatch.setattr(solver_module, "conditional_perfect_privacy", lambda *a, **k: calls.append(1) or real(*a, **k))
    prior = np.array([[.3, .1, .1], [.1, .1, .3]])
    D = np.array([[0, 1, np.inf], [np.inf, 0, np.inf], [np.inf, np.inf, 0]])
    with pytest.raises(InfeasibleBudgetError, match="smallest"):
        solve_mapping(prior, D, max_leakage=0.0)
    assert not calls
