"""Targets at the edges of the max_leakage mode (families hunt, stop 42).

* A target equal to the smallest achievable leakage, as :func:`leakage` / :func:`maximal_leakage` compute it, was
  refused as unreachable (the search keeps a hair of 1e-12 inside the target): it is met by the least-leaking mapping.
* A constant distortion (range 0) made the distortion tolerance 1e-307, and the perfect-privacy answer was
  "inaccurate" at a gap of 1.6e-16 (its rounding).
The references are closed forms: the identity as the only allowed mapping, a constant distortion.
"""
import warnings

import numpy as np
import pytest

from privrelease.exceptions import InfeasibleBudgetError
from privrelease.mapping import leakage, maximal_leakage, solve_mapping


def _only_identity(rng, k=4, n_a=2):
    P = rng.dirichlet(np.ones(n_a * k)).reshape(n_a, k)
    return P, np.where(np.eye(k) > 0, 0.0, np.inf)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["mutual_information", "maximal_leakage"])
def test_target_equal_to_the_only_mappings_leakage_is_met(seed, kind):
    P, D = _only_identity(np.random.default_rng(seed), k=3 + seed)
    measure = leakage if kind == "mutual_information" else maximal_leakage
    target = measure(P, np.eye(D.shape[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(P, D, max_leakage=target, leakage=kind)
    assert res.status == "optimal"
    np.testing.assert_array_equal(res.mapping, np.eye(D.shape[0]))
    assert res.leakage <= target * (1 + 1e-12)
    assert res.distortion == 0.0
    # a target below it by more than the hair is still refused, naming the smallest
    with pytest.raises(InfeasibleBudgetError, match="cannot be reached"):
        solve_mapping(P, D, max_leakage=target * (1 - 1e-9), leakage=kind)


@pytest.mark.parametrize("kind", ["mutual_information", "maximal_leakage"])
@pytest.mark.parametrize("target", [0.0, 1e-7, 0.01])
@pytest.mark.parametrize("c", [0.1, 3.0, 1e-13])
def test_constant_distortion_is_certified_at_every_target(kind, target, c):
    prior = np.array([[.3, .2], [.1, .4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve_mapping(prior, np.full((2, 3), c), max_leakage=target, leakage=kind)
    assert res.status == "optimal"
    assert res.distortion == pytest.approx(c, rel=1e-14)
    assert res.leakage <= target + 1e-12
