"""A refusal's hint passed back (stop 47): for each instance, measure and solver, solve at a target below the
smallest leakage (0, and half the hint of that refusal), take the InfeasibleBudgetError's ``smallest_feasible`` and
solve again at it with the same solver. A round trip passes when the answer is "optimal", no warning, its reported
leakage at most the hint and its distortion at most the certificate's lower bound plus its tolerance; else it is
classified by what failed. Usage (from the tree): python benchmarks/probe_hint_roundtrip.py N [solvers] [families]
"""
import collections
import math
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, "tests/mapping")
sys.path.insert(0, "tests")
from test_blocks20 import block_instance, four_block_instance  # noqa: E402
from test_left21 import rare_instance  # noqa: E402
from test_mapping_stress import SHAPES, make_instance  # noqa: E402

from privrelease.exceptions import InfeasibleBudgetError, SolverError  # noqa: E402
from privrelease.mapping import solve_mapping  # noqa: E402


def random_instance(seed):
    rng = np.random.default_rng(seed)
    prior, d, _ = make_instance(rng, *SHAPES[seed % len(SHAPES)])
    return prior, d


FAMILIES = {"block": lambda s: block_instance(s)[:2], "four_block": lambda s: four_block_instance(s)[:2],
            "rare": rare_instance, "random": random_instance}


def attempt(prior, d, target, kind, solver):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = solve_mapping(prior, d, max_leakage=target, leakage=kind, solver=solver)
        except (InfeasibleBudgetError, SolverError) as exc:
            return exc, [str(w.message) for w in caught]
    return res, [str(w.message) for w in caught]


def classify(res, msgs, hint):
    if isinstance(res, InfeasibleBudgetError):
        return f"refused again (hint {res.smallest_feasible!r} vs {hint!r})"
    if isinstance(res, SolverError):
        return "SolverError: " + str(res)[:90]
    if res.status != "optimal" or msgs:
        return f"{res.status}: " + (msgs[0][:90] if msgs else "")
    if res.leakage > hint:
        return f"leakage over hint by {res.leakage - hint:.2g}"
    return "ok"


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    solvers = sys.argv[2].split(",") if len(sys.argv) > 2 else ["auto", "fast", "cvxpy"]
    fams = sys.argv[3].split(",") if len(sys.argv) > 3 else list(FAMILIES)
    counts, fails = collections.Counter(), []
    t0 = time.perf_counter()
    for fam in fams:
        for seed in range(n):
            prior, d = FAMILIES[fam](seed)
            for kind in ("mutual_information", "maximal_leakage"):
                for solver in solvers:
                    first, _ = attempt(prior, d, 0.0, kind, solver)
                    if not isinstance(first, InfeasibleBudgetError):
                        continue
                    targets = [("0", first.smallest_feasible)]
                    half, _ = attempt(prior, d, 0.5 * first.smallest_feasible, kind, solver)
                    if isinstance(half, InfeasibleBudgetError):
                        targets.append(("half", half.smallest_feasible))
                    for which, hint in targets:
                        res, msgs = attempt(prior, d, hint, kind, solver)
                        verdict = classify(res, msgs, hint)
                        counts[(fam, kind, solver, verdict == "ok")] += 1
                        if verdict != "ok":
                            fails.append((fam, seed, kind, solver, which, hint, verdict))
    for f in fails:
        print("FAIL", *f, sep=" | ")
    total = sum(counts.values())
    bad = sum(v for k, v in counts.items() if not k[3])
    for key in sorted({k[:3] for k in counts}):
        print(*key, "ok", counts[key + (True,)], "fail", counts[key + (False,)])
    print(f"round trips {total}, failing {bad}, wall {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
