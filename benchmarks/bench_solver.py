"""Fast certified solver vs the plain cvxpy formulation on the same instances.

Instance (one per k): |A| = 2, k random centres in R^dim (standard normal),
distortion = squared Euclidean distance between centres, prior with a
Dirichlet(2) marginal p(c) and a noisy logistic posterior
p(a=1 | c) = sigmoid(2 x_1 + 0.5 eps), delta = 5% of the mean distortion.

Rows: our solver (``solver="fast"``) and the plain formulation
(the ``solver="cvxpy"`` formulation with CLARABEL, then with SCS, at each solver's
default tolerances unless ``--tight``). Every answer goes
through the same certification (rigorous duality gap, in bits); "status" is
"optimal" when certified to tol, "uncertified" when the solver returned a point
whose certificate is above tol, "failed" when the solver returned nothing
usable. A cvxpy run is skipped above ``--cvxpy-max-k`` (it needs k^2 variables).

Usage::

    python benchmarks/bench_solver.py            # k = 100, 300, 1000, 2000
    python benchmarks/bench_solver.py --quick    # k = 30, 60 (smoke run)
"""

import argparse
import time
import warnings

import numpy as np

from privrelease.exceptions import SolverError
from privrelease.mapping import squared_euclidean_distortion
from privrelease.mapping._fast import solve_fast
from privrelease.mapping._problem import LN2, Problem
from privrelease.mapping._solver import _cvxpy_candidates


def instance(k, dim, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(k, dim))
    d = squared_euclidean_distortion(X)
    pc = rng.dirichlet(np.full(k, 2.0))
    post = 1.0 / (1.0 + np.exp(-(2.0 * X[:, 0] + 0.5 * rng.normal(size=k))))
    prior = np.vstack([pc * (1 - post), pc * post])
    return prior, d, 0.05 * float(d.mean())


def run_fast(prob, delta, tol):
    t0 = time.perf_counter()
    P = solve_fast(prob, delta, tol=tol)
    t = time.perf_counter() - t0
    P = prob.clean(P, delta)
    gap, _, f = prob.certificate(P, delta, target_bits=tol)
    return t, f / LN2, prob.distortion(P), gap, "optimal" if gap <= tol else "uncertified"


def run_cvxpy(prob, delta, tol, name, args_tight=False):
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cands = list(_cvxpy_candidates(prob, delta=delta, solvers=(name,), tight=args_tight))
    except Exception as exc:  # noqa: BLE001 - a benchmark reports any failure
        return time.perf_counter() - t0, np.nan, np.nan, np.nan, f"failed ({type(exc).__name__})"
    t = time.perf_counter() - t0
    if not cands:
        return t, np.nan, np.nan, np.nan, "failed"
    P = prob.clean(cands[0][1], delta)
    gap, _, f = prob.certificate(P, delta, target_bits=tol)
    return t, f / LN2, prob.distortion(P), gap, "optimal" if gap <= tol else "uncertified"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small k only (smoke run)")
    ap.add_argument("--ks", type=int, nargs="*", default=None)
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--tol", type=float, default=1e-5, help="certified gap (bits) asked of every answer")
    ap.add_argument("--tight", action="store_true",
                    help="run cvxpy solvers with the tight tolerances solve_mapping uses (default: solver defaults)")
    ap.add_argument("--cvxpy-max-k", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    ks = args.ks or ([30, 60] if args.quick else [100, 300, 1000, 2000])
    header = f"{'k':>5} {'solver':>15} {'time_s':>9} {'leakage_bits':>14} {'distortion':>11} {'gap_bits':>9}  status"
    print(header)
    print("-" * len(header))
    for k in ks:
        prior, d, delta = instance(k, args.dim, args.seed + k)
        prob = Problem(prior, d)
        rows = [("fast", *run_fast(prob, delta, args.tol))]
        if k <= args.cvxpy_max_k:
            for name in ("CLARABEL", "SCS"):
                rows.append((f"cvxpy-{name}", *run_cvxpy(prob, delta, args.tol, name, args.tight)))
        for name, t, lk, dist, gap, status in rows:
            print(f"{k:>5} {name:>15} {t:>9.2f} {lk:>14.8f} {dist:>11.6f} {gap:>9.1e}  {status}")
        ok = [r for r in rows[1:] if r[5] == "optimal"]
        if ok:
            best = min(ok, key=lambda r: r[2])
            print(f"{'':>5} fast vs best certified cvxpy ({best[0]}): speed-up {best[1] / rows[0][1]:.1f}x, "
                  f"leakage difference {abs(rows[0][2] - best[2]):.1e} bits")
        elif len(rows) > 1:
            fastest = min(rows[1:], key=lambda r: r[1])
            print(f"{'':>5} no cvxpy solver certified its answer; fast is {fastest[1] / rows[0][1]:.1f}x faster "
                  "than the quickest cvxpy run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
