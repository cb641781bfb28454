"""Heavy-tiny priors a hair above the smallest budget: the exact polish's pricing (issue 10).

A few inputs hold almost all the mass, the others 1e-10 .. 1e-8 each (|A| = 6-8, k = 20-43, points in 1, 2 or
5 dimensions, squared or plain Euclidean), at a budget 1e-6 of the range above the smallest. Of 1,000 such
instances (200 draws x 5 budgets, ``docs/benchmarks.md``, stop 39) the fast path left 14 uncertified, each at this
budget, and 8 after the change, none of them new; these three are among the six it fixed. Two changes to the
polish's pricing:

* an unused output that light rows undercut in the bound was priced in for them alone, so its posterior became
  theirs and the Newton step emptied them again, pass after pass (seed 93: 6.7e-6 bits); opened again, it is now
  anchored by a heavy row;
* the polish priced at the support's own (least-squares) multiplier only when the bound's priced nothing; it now
  also does beside the bound's violators when the two multipliers agree within a factor of four.

Each answer is checked against the plain cvxpy formulation (CLARABEL, ``tests/shared_helpers.py``).
"""

from pathlib import Path

import numpy as np
import pytest

from privrelease.mapping import expected_distortion, solve_mapping

from shared_helpers import reference_leakage  # tests/shared_helpers.py

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name", [
    "heavy_tiny_k20_a7_near_min_seed344.npz",
    "heavy_tiny_k43_a8_near_min_seed93.npz",
    "heavy_tiny_k39_a6_near_min_seed192.npz",
])
def test_fast_path_certifies_heavy_tiny_near_the_smallest_budget(name):
    z = np.load(DATA / name)
    prior, d, delta = z["prior"], z["d"], float(z["delta"])
    res = solve_mapping(prior, d, delta=delta, solver="fast")
    assert res.status == "optimal" and res.solver == "fast"
    assert res.certificate["gap_bits"] <= 1e-6
    assert expected_distortion(prior, res.mapping, d) <= delta * (1 + 1e-9)
    assert np.allclose(np.asarray(res.mapping).sum(axis=1), 1.0) and np.asarray(res.mapping).min() >= 0.0
    # no worse than the plain cvxpy formulation's feasible point
    assert res.leakage <= reference_leakage(prior, d, delta) + 1e-6
