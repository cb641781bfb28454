"""Full-information contract design: our solvers against a plain scipy SLSQP formulation.

For n sellers with valuations uniform on [1, 10] and accuracy target K = n / 8
(so the bias budget matters), compare

* ``design_contract`` (closed form for linear cost; water-filling + 1-d search
  for the exponential cost), and
* the obvious alternative: ``scipy.optimize.minimize(method="SLSQP")`` on the
  joint problem over (a_1..a_n, b), started at a = 1/2, b = sqrt(K/2)/2.

Prints time and total payment side by side (lower payment = better; SLSQP
solves a non-convex joint problem and may stop at a worse point).
Run: ``python benchmarks/bench_contracts.py``; ``--quick`` runs only n = 2 and 10 for each cost
(well under a minute, to check that the script works).
"""

import argparse
import time

import numpy as np
from scipy.optimize import minimize

from privrelease.contracts import design_contract, privacy_cost


def slsqp(v, K, cost):
    n = v.size

    def obj(z):
        return float(privacy_cost(v, z[:n] / z[n], cost).sum())

    cons = {"type": "ineq", "fun": lambda z: K - (np.sum(1 - z[:n]) / 2) ** 2 - 2 * z[n] ** 2}
    z0 = np.append(np.full(n, 0.5), np.sqrt(K / 2) / 2)
    bounds = [(0, 1)] * n + [(1e-6, np.sqrt(K / 2))]
    res = minimize(obj, z0, method="SLSQP", bounds=bounds, constraints=[cons],
                   options={"maxiter": 500, "ftol": 1e-10})
    feasible = cons["fun"](res.x) >= -1e-6
    return obj(res.x) if feasible else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small, fast configuration: n = 2 and 10 only")
    args = ap.parse_args(argv)
    sizes = (2, 10) if args.quick else (2, 10, 50, 200)
    rng = np.random.default_rng(0)
    print(f"{'cost':<12}{'n':>6}{'ours (s)':>12}{'SLSQP (s)':>12}{'ours pay':>14}{'SLSQP pay':>14}")
    for cost in ("linear", "exponential"):
        for n in sizes:
            v = rng.uniform(1, 10, size=n)
            K = n / 8
            t = time.perf_counter()
            ours = design_contract(v, K, cost=cost).total_payment
            t_ours = time.perf_counter() - t
            t = time.perf_counter()
            ref = slsqp(v, K, cost)
            t_ref = time.perf_counter() - t
            print(f"{cost:<12}{n:>6}{t_ours:>12.4f}{t_ref:>12.4f}{ours:>14.4f}{ref:>14.4f}")


if __name__ == "__main__":
    main()
