"""ErasureMapper on many features: the exact presolve against the whole erasure alphabet.

An erasure alphabet has ``2^n_features`` outputs per input tuple, most of them reachable from that
tuple alone. The engine's presolve (``privrelease.mapping._presolve``) removes the outputs another
output dominates (the same compatible tuples at fewer erasures; a tuple's own outputs dominated by the
tuple itself) before solving, which is exact: the optimum, the leakage and the certificate are those of
the whole program. Compared in one run, each configuration in its own process with a time limit:

* ``presolve (ours)``: ``ErasureMapper`` as shipped;
* ``whole alphabet``: the same fit with the presolve switched off (the engine before it): the dense
  fast solver up to ``DENSE_CELLS_LIMIT`` cells, the sparse edge formulation (cvxpy) above.

Data: ``n_rows`` rows of ``n_features`` six-valued features, each equal to a random value moved by
the binary private attribute with probability 0.3 (every feature weakly informative). Modes: a
0.01-bit leakage cap (``cap``) and a budget of 1 expected erasure (``delta``).

Usage::

    python benchmarks/bench_erasure_features.py                 # 4 to 8 features, both modes
    python benchmarks/bench_erasure_features.py --features 6 8 --modes cap --timeout 900
    python benchmarks/bench_erasure_features.py --quick    # 200 rows, 3 features, delta mode: well under a minute

``--quick`` is a small configuration that checks the script works (200 rows, 3 features, the
``delta`` mode, 60 s per fit); ``--rows``, ``--features``, ``--modes`` or ``--timeout`` given with it win.
"""

import argparse
import json
import os
import subprocess
import sys

_FIT = r"""
import json, resource, sys, time, warnings
import numpy as np, pandas as pd
from privrelease.mapping import _solver
from privrelease.mappers import ErasureMapper

n_rows, n_features, mode, presolve = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
rng = np.random.default_rng(0)
y = rng.integers(0, 2, n_rows)
cols = {}
for f in range(n_features):
    base = rng.integers(0, 6, n_rows)
    cols[f"f{f}"] = np.where(rng.random(n_rows) < 0.3, (base + y) % 6, base)
if not presolve:
    _solver.reduce_outputs = lambda D: None
kw = {"cap": {"max_leakage": 0.01}, "delta": {"delta": 1.0}}[mode]
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    m = ErasureMapper(random_state=0, **kw).fit(pd.DataFrame(cols), y)
cert = m.solver_result_.certificate
print(json.dumps({"fit": time.perf_counter() - t0, "inputs": int(m.prior_.shape[1]),
                  "outputs": int(m.output_tuples_.shape[0]), "leakage": m.leakage_, "distortion": m.distortion_,
                  "status": m.solver_result_.status, "solver": m.solver_result_.solver,
                  "gap": cert.get("distortion_gap", cert.get("gap_bits")),
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def fit_in_child(n_rows, n_features, mode, presolve, timeout):
    """One fit in a fresh process (single BLAS thread); a dict of figures or ``{"error": ...}``."""
    argv = [sys.executable, "-c", _FIT, str(n_rows), str(n_features), mode, str(int(presolve))]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        return {"error": f"> {timeout:.0f} s (stopped)"}
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="rows (all labeled; default 300, 200 with --quick)")
    ap.add_argument("--features", type=int, nargs="+", default=None, help="default 4 5 6 7 8, 3 with --quick")
    ap.add_argument("--modes", nargs="+", default=None, choices=["cap", "delta"],
                    help="default cap delta, delta with --quick")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds allowed to one fit (default 600, 60 with --quick)")
    ap.add_argument("--quick", action="store_true", help="small, fast configuration (see the docstring)")
    args = ap.parse_args()
    defaults = ({"rows": 200, "features": [3], "modes": ["delta"], "timeout": 60.0} if args.quick else
                {"rows": 300, "features": [4, 5, 6, 7, 8], "modes": ["cap", "delta"], "timeout": 600.0})
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    print(f"ErasureMapper.fit, {args.rows} rows of six-valued features, one BLAS thread; side by side\n")
    print("| features | inputs x outputs | mode | engine | fit | peak memory | leakage (bits) | erasures | "
          "status, gap |")
    print("|---:|---|---|---|---:|---:|---:|---:|---|")
    for nf in args.features:
        for mode in args.modes:
            for presolve in (True, False):
                label = "presolve (ours)" if presolve else "whole alphabet"
                r = fit_in_child(args.rows, nf, mode, presolve, args.timeout)
                if "error" in r:
                    print(f"| {nf} | | {mode} | {label} | {r['error']} | | | | |", flush=True)
                    continue
                print(f"| {nf} | {r['inputs']} x {r['outputs']:,} | {mode} | {label} | {r['fit']:.1f} s | "
                      f"{r['rss'] / 2**20:,.0f} MiB | {r['leakage']:.6f} | {r['distortion']:.6f} | "
                      f"{r['status']}, {r['gap']:.1e} ({r['solver']}) |", flush=True)


if __name__ == "__main__":
    main()
