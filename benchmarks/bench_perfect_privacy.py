"""The perfect-privacy LP (``perfect_privacy_mapping``, the default path of
``QuantizedPrivacyMapper(max_leakage=0)`` and the end of every curve): ours against the plain
one-shot LP, side by side in one run.

* plain: one HiGHS LP in the mapping variables (``k |C_hat|`` of them; ``k`` row sums and
  ``|C_hat|`` independence equations), HiGHS's defaults: the engine's path before the
  two-class transport;
* ours: ``perfect_privacy_mapping`` (for ``|A| = 2`` the transportation problem on paths
  ``input -> output <- input`` by column generation, see ``_lp._two_class_transport``).

Both answers are checked: the leakage of the mapping (bits) and the distortion, whose relative
difference to the plain LP's optimum is printed.

Usage::

    python benchmarks/bench_perfect_privacy.py            # k = 300, 1000, 2000 (the plain LP: ~20 min at 2000)
    python benchmarks/bench_perfect_privacy.py --quick    # k = 300
    python benchmarks/bench_perfect_privacy.py --k 300 1000
"""

import argparse
import math
import time

import numpy as np

from bench_solver import scale_instance
from privrelease.mapping._lp import _independence_lp, perfect_privacy_mapping
from privrelease.mapping._problem import Problem


def plain(prob):
    r, c, n = prob.edges()
    P, status = _independence_lp(prob, r, c, n, np.arange(n), n, prob.edge_weights(), np.ones(n), {})
    return P


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, nargs="*", default=[300, 1000, 2000])
    ap.add_argument("--kinds", nargs="*", default=["logistic", "dirichlet"])
    ap.add_argument("--quick", action="store_true", help="k = 300 only")
    args = ap.parse_args()
    if args.quick:
        args.k = [300]
    print(f"{'k':>5} {'prior':>9} {'plain s':>8} {'ours s':>7} {'speed-up':>8} {'plain leak':>10} {'ours leak':>10} "
          f"{'rel. diff':>10}", flush=True)
    for k in args.k:
        for kind in args.kinds:
            prior, d, _ = scale_instance(k, 0, kind)
            prob = Problem(prior / prior.sum(), d)
            t0 = time.perf_counter()
            Pp = plain(prob)
            tp = time.perf_counter() - t0
            t0 = time.perf_counter()
            Po, _ = perfect_privacy_mapping(prob)
            to = time.perf_counter() - t0
            dp, do = prob.distortion(Pp), prob.distortion(Po)
            lp_, lo = prob.objective(Pp) / math.log(2), prob.objective(Po) / math.log(2)
            print(f"{k:>5} {kind:>9} {tp:>8.2f} {to:>7.2f} {tp / to:>8.1f} {lp_:>10.1e} {lo:>10.1e} "
                  f"{(do - dp) / dp:>10.1e}", flush=True)


if __name__ == "__main__":
    main()
