"""FairInnerProduct beside one numpy.argsort of the same n floats, and beside the quadratic code.

Usage::

    python benchmarks/bench_auction.py [--quick]

Prints two tables.

1. For n = 1e4, 1e5, 1e6: the time of ``fair_inner_product`` (one sort, prefix
   sums, vectorized scans, every comparison exact) next to ONE ``numpy.argsort``
   of n floats (default kind), measured in the same run, interleaved, best of
   several repeats; the ratio is the goal's unit (at most 5 argsorts at n = 1e6).
   A second row per n times an instance whose budget sits exactly on the k-test
   threshold, where a close call sends the row to the exact-integer fallback
   (``_fip_exact_row``, plain Python, linear after one sort).
2. ``fair_inner_product`` against ``fair_inner_product_reference`` (Algorithm 1
   read literally, O(n^2), ``exact=False``) at small n; both must select the same
   individuals. The quadratic time is EXTRAPOLATED as c n^2 beyond (marked "~").
"""

import argparse
import time

import numpy as np

from privrelease.auctions import fair_inner_product
from privrelease.auctions._mechanism import _fip_core
from privrelease.auctions._reference import fair_inner_product_reference


def _best(fns, repeat):
    """Best time of each function, the functions interleaved in every repeat."""
    best = [np.inf] * len(fns)
    for _ in range(repeat):
        for j, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[j] = min(best[j], time.perf_counter() - t0)
    return best


def _instance(rng, n):
    v = rng.exponential(size=n)
    w = rng.normal(size=n)
    return v, w, 0.01 * n


def _on_threshold(v, w, B):
    """Move B onto the k-test threshold B (W - w([k])) = v_k w([k]) (float arithmetic)."""
    a = np.abs(w)
    order = np.argsort(v, kind="stable")
    pref = np.cumsum(a[order])
    k = max(1, int(fair_inner_product(v, w, B).k))
    return v[order[k - 1]] * pref[k - 1] / (a.sum() - pref[k - 1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a few seconds)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)

    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    print("FairInnerProduct against one numpy.argsort of n floats (best of the repeats)")
    print(f"{'n':>9} | {'instance':<13} | {'argsort s':>9} | {'FIP s':>8} | {'FIP / argsort':>13} | "
          f"{'exact rows':>10} | branch")
    print("-" * 84)
    for n in sizes:
        v, w, B = _instance(rng, n)
        repeat = 7 if n < 1_000_000 else 5
        for label, budget in (("random", B), ("on threshold", None)):
            if budget is None:
                budget = _on_threshold(v, w, B)
                repeat = 3
            t_sort, t_fip = _best([lambda: np.argsort(v),
                                   lambda: fair_inner_product(v, w, budget)], repeat)
            out = _fip_core(v[None], np.abs(w)[None], budget)
            res = fair_inner_product(v, w, budget)
            print(f"{n:>9} | {label:<13} | {t_sort:9.4f} | {t_fip:8.4f} | {t_fip / t_sort:13.2f} | "
                  f"{'yes' if out['exact'][0] else 'no':>10} | {res.branch}")

    print("\nFairInnerProduct against the quadratic reference (Algorithm 1 read literally)")
    quad_max = 1_000 if args.quick else 3_000
    print(f"{'n':>9} | {'O(n log n) s':>12} | {'quadratic s':>11} | {'speed-up':>9} | same O")
    print("-" * 60)
    quad_c = None
    for n in [300, 1_000, 3_000, 100_000] if not args.quick else [300, 1_000, 10_000]:
        v, w, B = _instance(rng, n)
        (fast,) = _best([lambda: fair_inner_product(v, w, B)], 3)
        if n <= quad_max:
            t0 = time.perf_counter()
            ref = fair_inner_product_reference(v, w, B, exact=False)
            quad = time.perf_counter() - t0
            agree = "yes" if np.array_equal(ref["selected"], fair_inner_product(v, w, B).selected) \
                else "NO"
            quad_c, quad_s = quad / n**2, f"{quad:11.4f}"
        else:
            quad, agree = quad_c * n**2, "-"
            quad_s = f"~{quad:10.1f}"
        print(f"{n:>9} | {fast:12.4f} | {quad_s} | {quad / fast:9.0f} | {agree}")
    print("(~ = extrapolated as c n^2 from the largest n the quadratic code ran on)")


if __name__ == "__main__":
    main()
