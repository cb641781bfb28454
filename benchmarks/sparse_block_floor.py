"""Sparse engine just above a block floor (stops 45, 46): count the warnings; CHECK=1 compares every certified answer
with the dense route. Usage: python benchmarks/sparse_block_floor.py SEED0 SEED1 EXCESS[,EXCESS..] (from the tree)."""
import sys, warnings, math, time
import numpy as np, scipy.sparse as sp
sys.path.insert(0, "tests/mapping"); sys.path.insert(0, "tests")
from test_blocks20 import mi_floor_bits, per_block_pp_reference
from test_floor23 import _instance as inst  # the tests' instances (blocks permuted when asked)
from privrelease.mapping import solve_mapping, _solver
from privrelease.exceptions import SolverError, InfeasibleBudgetError

def run(prior, d, target, sparse):
    orig = _solver.reduce_outputs
    if sparse:
        _solver.reduce_outputs = lambda D: None
        D = sp.csr_matrix(np.where(np.isfinite(d), d + 1e-3, 0.0))
    else:
        D = np.where(np.isfinite(d), d + 1e-3, np.inf)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = solve_mapping(prior, D, max_leakage=target)
        warned = any("inaccurate" in str(x.message) or "certif" in str(x.message) for x in w)
        return ("warn" if warned or res.status != "optimal" else "ok"), res.distortion, res.leakage
    except (SolverError, InfeasibleBudgetError) as e:
        return type(e).__name__, math.nan, math.nan
    finally:
        _solver.reduce_outputs = orig

seeds = range(int(sys.argv[1]), int(sys.argv[2]))
excesses = [float(x) for x in sys.argv[3].split(",")]
counts = {}
import os
CHECK = os.environ.get('CHECK') == '1'
bad = []
t0 = time.process_time()
wall = 0.0
cpu = 0.0
for seed in seeds:
    for gen in ("block", "plain"):
        for perm in (False, True):
            prior, d, labels = inst(seed, gen, perm)
            floor = mi_floor_bits(prior, labels)
            if floor <= 0: continue
            for ex in excesses:
                t = floor + ex
                w0, c0 = time.perf_counter(), time.process_time()
                s = run(prior, d, t, True)
                wall += time.perf_counter() - w0
                cpu += time.process_time() - c0
                key = ("sparse", s[0])
                counts[key] = counts.get(key, 0) + 1
                if s[0] != "ok":
                    dd = run(prior, d, t, False)
                    counts[("dense_of_bad", dd[0])] = counts.get(("dense_of_bad", dd[0]), 0) + 1
                    bad.append((seed, gen, perm, ex, s[0], s[1], dd[0], dd[1]))
                elif s[2] > t * (1 + 1e-12):
                    bad.append((seed, gen, perm, ex, "LEAK", s[2], t))
                elif CHECK:
                    dd = run(prior, d, t, False)
                    if dd[0] == "ok" and abs(s[1] - dd[1]) > 1e-6 * max(1.0, dd[1]):
                        bad.append((seed, gen, perm, ex, "DIFF", s[1], dd[1]))
print(counts)
for b in bad: print(b)
print("cpu (all solves)", time.process_time() - t0, "sparse solves: wall", wall, "cpu", cpu)
