"""Helpers shared by tests in several folders: running the command line, and a fake MovieLens 100k folder."""

import warnings
from pathlib import Path

import numpy as np


def run_cli(argv, capsys):
    """``privrelease <argv>`` in this process: ``(exit status, stdout, stderr)``, warnings silenced."""
    from privrelease.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def quick_census_run(tmp_path_factory, name):
    """One real ``--quick`` run of the census pipeline into a new folder; returns the folder."""
    from privrelease.cli import main

    out = tmp_path_factory.mktemp(name) / "out"
    census = str(Path(__file__).resolve().parents[1] / "pipelines" / "census_erasure.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", census, "--quick", "-o", str(out)]) == 0
    return out


def fake_ml100k(folder, n_users=160, n_items=30, seed=0, ages=None):
    """A MovieLens 100k folder (``u.data``, ``u.user``, ``u.item``) holding ``make_ratings`` data whose gender is
    the attribute; ``ages`` per user (default 30 for all). Returns ``(folder, R, a)``."""
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(n_users, n_items, attribute_strength=2.0, random_state=seed)
    coo = R.tocoo()
    ages = np.full(n_users, 30) if ages is None else ages
    folder.mkdir(parents=True)
    (folder / "u.data").write_text("".join(f"{u + 1}\t{i + 1}\t{int(r)}\t88{k:07d}\n"
                                           for k, (u, i, r) in enumerate(zip(coo.row, coo.col, coo.data))))
    (folder / "u.user").write_text("".join(f"{u + 1}|{ages[u]}|{'F' if a[u] else 'M'}|other|00000\n"
                                           for u in range(n_users)))
    (folder / "u.item").write_bytes("".join(f"{i + 1}|Movie {i}|01-Jan-1995||http://x|0|0\n"
                                            for i in range(n_items)).encode("latin-1"))
    return folder, R, a


def independent_bound_gap(prior, d, delta, mapping, leakage_bits):
    """``leakage_bits`` minus an independent Lagrangian lower bound on ``min I(A; C_hat)`` (bits) under the budget
    ``delta``, from the posteriors of ``mapping`` (unused outputs at ``p(a)``), the multiplier by golden section:
    ``sum_c min_j [sum_a p(a, c) log2(pi(a|j) / p(a)) + lam p(c) d(c, j)] - lam delta``. None of the library's code:
    a gap within the tolerance proves the answer optimal to it."""
    M = np.asarray(mapping, dtype=float)
    pa = prior.sum(axis=1)
    J = prior @ M
    q = J.sum(axis=0)
    pi = np.where(q > 0, J / np.where(q > 0, q, 1.0), pa[:, None])
    T = prior.T @ np.log2(np.maximum(pi, 1e-300) / pa[:, None])
    W = prior.sum(axis=0)[:, None] * d

    def lb(lam):
        return float(np.min(T + lam * W, axis=1).sum() - lam * delta)

    lo, hi, g = 0.0, 1e6, (np.sqrt(5) - 1) / 2
    for _ in range(200):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        lo, hi = (a, hi) if lb(a) < lb(b) else (lo, b)
    return leakage_bits - lb(0.5 * (lo + hi))


def reference_leakage(prior, d, delta):
    """min I(A; C_hat) in bits s.t. distortion <= delta, plain cvxpy (CLARABEL, tight), at a feasible point; an
    infinite entry of ``d`` is a forbidden transition (the mapping 0 there)."""
    import cvxpy as cp

    from privrelease.mapping import expected_distortion, leakage

    pa, pc = prior.sum(axis=1), prior.sum(axis=0)
    X = cp.Variable(d.shape, nonneg=True)
    info = cp.sum(cp.rel_entr(prior @ X, np.outer(pa, pc) @ X))
    fin = np.isfinite(d)
    scale = float(d[fin].max()) or 1.0
    cons = [cp.sum(X, axis=1) == 1,
            cp.sum(cp.multiply(pc[:, None] * np.where(fin, d, 0.0) / scale, X)) <= delta / scale]
    if not fin.all():
        cons.append(cp.multiply((~fin).astype(float), X) == 0)
    pr = cp.Problem(cp.Minimize(info), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "inaccurate" here: the point is repaired below
        pr.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    # the reference's point made feasible (mixed with the cheapest mapping: the smallest weight,
    # by bisection), so that its leakage is an achievable value
    Q = np.where(fin, np.clip(X.value, 0.0, None), 0.0)
    Q /= Q.sum(axis=1, keepdims=True)
    P_min = np.eye(d.shape[1])[d.argmin(axis=1)]
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if expected_distortion(prior, (1 - mid) * Q + mid * P_min, d) <= delta else (mid, hi)
    return leakage(prior, (1 - hi) * Q + hi * P_min)


def nearly_independent(seed, na=10, k=40, eps=1e-7):
    """A prior whose attribute is nearly independent of the inputs, ``p(a, c) = p(a) p(c) (1 + eps e)``, and
    squared index distances: the instances on which the perfect-privacy LP's equations fell below HiGHS's
    tolerances (families hunt of stop 41)."""
    rng = np.random.default_rng(seed)
    pa, pc = rng.dirichlet(np.ones(na)), rng.dirichlet(np.ones(k))
    prior = np.outer(pa, pc) * (1 + eps * rng.standard_normal((na, k)))
    prior /= prior.sum()
    d = (np.subtract.outer(np.arange(k), np.arange(k)) ** 2).astype(float)
    return prior, d


def dclef_data(n):
    """``n`` users' 3 features and a private rating in 1..5 (the first feature, rounded): DCLEFEstimator's data."""
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(n, 3))
    d = np.clip(np.round(3 + Y[:, 0]), 1, 5)
    return Y, d


def ledger_snapshots():
    """Two pickles of one ledger (budget 1): ``early`` with 0.25 spent, ``late`` with 0.75; the original is gone
    (collected), so neither is taken for a live handle when loaded."""
    import gc
    import pickle

    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(epsilon=1.0).spend(0.25)
    early = pickle.dumps(acc)
    acc.spend(0.5)
    late = pickle.dumps(acc)
    del acc
    gc.collect()
    return early, late


def ml_target_reference(prior, d, target_bits, max_rounds=6):
    """Independent optimum of the maximal-leakage target program: ``min E[d]`` subject to
    ``sum_j max_a p(j | a) <= 2^target``, written in the slack form ``u_j >= p(j | a) - p(j | 0)`` for every class,
    ``sum_j u_j <= s = expm1(target ln 2)``, the rows divided by ``s`` and the distortion counted above each row's
    cheapest output; scipy's HiGHS at tolerances of 1e-10, solved again in units of its answer until that stays
    within 1e-3 of its unit (at most ``max_rounds`` solves). Returns ``(optimum, smallest distortion)``."""
    import math

    import scipy.sparse as sp
    from scipy.optimize import linprog

    tight = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    na, k = prior.shape
    kh = d.shape[1]
    pa, pc = prior.sum(1), prior.sum(0)
    cond = prior / pa[:, None]
    s = math.expm1(target_bits * math.log(2.0))
    rmin = d.min(1)
    n = k * kh
    cost = np.concatenate([(pc[:, None] * (d - rmin[:, None])).ravel(), np.zeros(kh)])
    rows = [sp.hstack([sp.kron(sp.csr_matrix((cond[a] - cond[0])[None, :] / s), sp.identity(kh)),
                       -sp.identity(kh)]) for a in range(1, na)]
    rows.append(sp.csr_matrix(np.concatenate([np.zeros(n), np.ones(kh)])[None, :]))
    A_ub = sp.vstack(rows, format="csr")
    b_ub = np.zeros(A_ub.shape[0])
    b_ub[-1] = 1.0
    A_eq = sp.hstack([sp.kron(sp.identity(k), np.ones((1, kh))), sp.csr_matrix((k, kh))], format="csr")
    unit, value = 1.0, None
    for _ in range(max_rounds):
        res = linprog(cost / unit, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(k), bounds=(0, None),
                      method="highs", options=tight)
        assert res.status == 0, res.message
        value = float(pc @ rmin) + res.fun * unit
        if not 0 < res.fun < 1e-3:
            break
        unit *= res.fun
    return value, float(pc @ rmin)


def ml_span_instance(seed):
    """A maximal-leakage target instance on a distortion spanning 16 decades: ``(prior, d, target_bits)``; |A|
    2..4, k 6..40, Dirichlet(0.1..1) joint; distortion log-uniform over 1e-8 .. 1e8 with one cheap entry (1e-8 ..
    1e-6) per row; target 10^U(-9, -5) bits."""
    rng = np.random.default_rng(seed)
    k, na = int(rng.integers(6, 41)), int(rng.integers(2, 5))
    prior = rng.dirichlet(np.full(na * k, float(rng.uniform(0.1, 1)))).reshape(na, k)
    d = 10.0 ** rng.uniform(-8, 8, (k, k))
    d[np.arange(k), rng.integers(0, k, k)] = 10.0 ** rng.uniform(-8, -6, k)
    return prior, d, float(10 ** rng.uniform(-9, -5))


def cholesky_failing_once(cho, seen):
    """A stand-in for the engine's in-place Cholesky ``cho`` that records each matrix it is given in ``seen`` and
    fails the first time, leaving NaN in the triangle it factors (what a failed in-place factorisation may leave)."""
    import numpy as np

    def failing_once(S):
        seen.append(S.copy())
        if len(seen) == 1:
            S[np.triu_indices(S.shape[0])] = np.nan
            raise np.linalg.LinAlgError("not positive definite")
        return cho(S)

    return failing_once
