"""FairInnerProduct: the O(n log n) implementation beside the straightforward quadratic one.

Usage::

    python benchmarks/bench_auction.py [--quick]

Prints one table: for each n, the time of ``fair_inner_product`` (one sort, prefix
sums, vectorized scans) and of ``fair_inner_product_reference`` (Algorithm 1 read
literally: every w([t]) recomputed, O(n^2); float arithmetic, ``exact=False``).
The quadratic code is only run up to a few thousand individuals; beyond that its
time is EXTRAPOLATED as c n^2 from the largest measured n (marked "~").
Both are checked to select the same individuals whenever both run.
Goal: n = 1,000,000 in under 2 s.
"""

import argparse
import time

import numpy as np

from privrelease.auctions import fair_inner_product
from privrelease.auctions._reference import fair_inner_product_reference


def _time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a few seconds)")
    args = parser.parse_args(argv)
    sizes = [1_000, 10_000, 100_000] if args.quick else [1_000, 3_000, 10_000, 100_000, 1_000_000]
    quad_max = 1_000 if args.quick else 3_000
    rng = np.random.default_rng(0)
    rows = []
    quad_c = None
    for n in [300] + sizes:
        v = rng.exponential(size=n)
        w = rng.normal(size=n)
        B = 0.01 * n
        fast = _time(lambda: fair_inner_product(v, w, B), 3 if n < 1_000_000 else 2)
        if n <= quad_max:
            res_f = fair_inner_product(v, w, B)
            t0 = time.perf_counter()
            ref = fair_inner_product_reference(v, w, B, exact=False)
            quad = time.perf_counter() - t0
            assert np.array_equal(ref["selected"], res_f.selected), n
            quad_c = quad / n**2
            quad_s, agree = f"{quad:10.4f}", "yes"
        else:
            quad = quad_c * n**2
            quad_s, agree = f"~{quad:9.1f}", "-"
        res = fair_inner_product(v, w, B)
        rows.append((n, fast, quad_s, quad / fast, agree, res.branch, int(res.selected.sum())))
    print(f"{'n':>9} | {'O(n log n) s':>12} | {'quadratic s':>11} | {'speed-up':>9} | "
          f"{'same O':>6} | branch     | bought")
    print("-" * 80)
    for n, fast, quad_s, ratio, agree, branch, bought in rows:
        print(f"{n:>9} | {fast:12.4f} | {quad_s:>11} | {ratio:9.0f} | {agree:>6} | "
              f"{branch:<10} | {bought}")
    big = [r for r in rows if r[0] == 1_000_000]
    if big:
        print(f"\nn = 1,000,000: {big[0][1]:.3f} s (goal: < 2 s) -> "
              f"{'met' if big[0][1] < 2 else 'NOT met'}")
    print("(~ = extrapolated as c n^2 from the largest n the quadratic code ran on)")


if __name__ == "__main__":
    main()
