"""Memory and time of ErasureMapper on a column with very many categories.

Goal (issue 11): ``ErasureMapper`` fitted on 1,000,000 rows whose column has
100,000 categories, under 2 GiB of peak memory.

Each configuration runs in its own Python process, whose peak resident memory
(``ru_maxrss``, the whole process: interpreter, numpy, cvxpy, the data and the
fit) is reported beside the time of ``fit`` and of one ``transform`` of the
same rows. Compared in one run:

* ``sparse (ours)``: the alphabet as reachable pairs only (``cost_matrix_`` and
  ``mapping_`` are ``csr_array``; the engine works on the edges);
* ``dense``: the same mapper forced to the dense alphabet (``DENSE_CELLS_LIMIT``
  raised), the obvious representation: ``n_inputs x n_outputs`` float matrices.
  It is run only where its matrices fit (``--dense-max`` categories); above, the
  table gives the bytes the dense cost and mapping alone would need.

Data: category ``i`` has Zipf(0.8) popularity (every category appears), a
binary private attribute whose share depends on the category (Beta(2, 2) per
category), 30% of the users undisclosed. Modes: perfect privacy (the default),
a budget of 0.3 expected erasures, and a 0.01-bit leakage cap.

Usage::

    python benchmarks/bench_erasure_memory.py            # 1e6 rows, up to 1e5 categories
    python benchmarks/bench_erasure_memory.py --quick    # 1e5 rows, up to 1e4 categories
"""

import argparse
import json
import os
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np, pandas as pd
import privrelease.mappers._erasure as E
from privrelease.mappers import ErasureMapper

n_rows, n_cats, mode, dense = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
rng = np.random.default_rng(0)
w = 1.0 / np.arange(1, n_cats + 1) ** 0.8
cats = np.concatenate([np.arange(n_cats), rng.choice(n_cats, n_rows - n_cats, p=w / w.sum())])
share = rng.beta(2, 2, n_cats)
y = (rng.random(n_rows) < share[cats]).astype(np.int64)
y[rng.random(n_rows) < 0.3] = -1
X = pd.DataFrame({"category": pd.Series(cats).map("c{}".format)})
if dense:
    E.DENSE_CELLS_LIMIT = float("inf")
kw = {"pp": {}, "delta": {"delta": 0.3}, "cap": {"max_leakage": 0.01}}[mode]
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    m = ErasureMapper(random_state=None, **kw).fit(X, y)
t1 = time.perf_counter()
out = m.transform(X)
t2 = time.perf_counter()
erased = float(out["category"].isna().mean())
print(json.dumps({"fit": t1 - t0, "transform": t2 - t1, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "leakage": m.leakage_, "distortion": m.distortion_, "status": m.solver_result_.status,
                  "gap": m.solver_result_.certificate.get("gap_bits"), "solver": m.solver_result_.solver,
                  "erased": erased, "sparse": type(m.mapping_).__name__ != "ndarray", "inputs": m.prior_.shape[1]}))
"""


def run(n_rows, n_cats, mode, dense, timeout):
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(n_rows), str(n_cats), mode, "1" if dense else "0"],
                              capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:80]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1e5 rows, up to 1e4 categories")
    ap.add_argument("--dense-max", type=int, default=10_000, help="largest category count run dense")
    ap.add_argument("--modes", default="pp,delta,cap", help="comma-separated: pp, delta, cap")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds allowed to one configuration")
    args = ap.parse_args()
    n_rows = 100_000 if args.quick else 1_000_000
    sizes = [1_000, 10_000] if args.quick else [10_000, 100_000]
    print(f"ErasureMapper, {n_rows:,} rows, one categorical column; peak RSS of the whole process\n")
    print("| categories | mode | representation | fit | transform | peak memory | leakage (bits) | "
          "erasures | status, gap (bits) |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---|")
    for n_cats in sizes:
        for mode in args.modes.split(","):
            for dense in (False, True):
                label = "dense" if dense else "sparse (ours)"
                if dense and n_cats > args.dense_max:
                    need = 2 * n_cats * (n_cats + 1) * 8
                    print(f"| {n_cats:,} | {mode} | {label} | - | - | needs {need / 2**30:,.0f} GiB for "
                          f"cost + mapping alone | | | not run |")
                    continue
                r = run(n_rows, n_cats, mode, dense, args.timeout)
                if "error" in r:
                    print(f"| {n_cats:,} | {mode} | {label} | failed: {r['error']} | | | | | |")
                    continue
                print(f"| {n_cats:,} | {mode} | {label} | {r['fit']:.1f} s | {r['transform']:.1f} s | "
                      f"{r['rss'] / 2**20:,.0f} MiB | {r['leakage']:.4g} | {r['distortion']:.4f} | "
                      f"{r['status']}, {r['gap']:.1e} |", flush=True)


if __name__ == "__main__":
    main()
