import math

import numpy as np
import pytest

from privrelease.mapping import (
    expected_distortion,
    leakage,
    map_attack_accuracy,
    maximal_leakage,
    mismatch_bounds,
    mutual_information,
    prior_deviation_probability,
    solve_mapping,
    squared_euclidean_distortion,
)


def h2(p):
    return -p * math.log2(p) - (1 - p) * math.log2(1 - p)


@pytest.mark.parametrize("p", [0.01, 0.1, 0.3, 0.5])
def test_mutual_information_binary_symmetric_channel(p):
    joint = 0.5 * np.array([[1 - p, p], [p, 1 - p]])
    assert mutual_information(joint) == pytest.approx(1 - h2(p), abs=1e-12)


def test_mutual_information_independent_and_deterministic():
    rng = np.random.default_rng(0)
    pa, pb = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(5))
    assert mutual_information(np.outer(pa, pb)) == pytest.approx(0.0, abs=1e-12)
    # B determines A: I = H(A)
    joint = np.array([[0.2, 0.3, 0.0], [0.0, 0.0, 0.5]])
    assert mutual_information(joint) == pytest.approx(1.0, abs=1e-12)


def test_maximal_leakage_closed_forms():
    # deterministic A = B uniform on n symbols: maximal leakage = log2 n = I
    n = 4
    assert maximal_leakage(np.eye(n) / n) == pytest.approx(2.0)
    rng = np.random.default_rng(1)
    assert maximal_leakage(np.outer(rng.dirichlet(np.ones(2)), rng.dirichlet(np.ones(3)))) == pytest.approx(0.0, abs=1e-12)
    # maximal leakage >= mutual information
    for _ in range(5):
        prior = rng.dirichlet(np.ones(6)).reshape(2, 3)
        assert maximal_leakage(prior) >= mutual_information(prior) - 1e-12


def test_leakage_of_mapping_and_attacker():
    prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    assert leakage(prior, np.eye(2)) == pytest.approx(mutual_information(prior))
    assert leakage(prior, np.ones((2, 1))) == pytest.approx(0.0, abs=1e-15)
    assert map_attack_accuracy(prior) == pytest.approx(0.8)
    assert map_attack_accuracy(prior, np.ones((2, 1))) == pytest.approx(0.5)
    assert leakage(prior, np.eye(2), kind="maximal_leakage") == pytest.approx(math.log2(1.6))
    with pytest.raises(ValueError, match="kind"):
        leakage(prior, np.eye(2), kind="entropy")


def test_expected_distortion_and_infinite_entries():
    prior = np.array([[0.25, 0.25], [0.25, 0.25]])
    d = np.array([[0.0, np.inf], [1.0, 0.0]])
    assert expected_distortion(prior, np.eye(2), d) == 0.0
    assert expected_distortion(prior, np.array([[1.0, 0.0], [1.0, 0.0]]), d) == pytest.approx(0.5)
    assert expected_distortion(prior, np.array([[0.5, 0.5], [1.0, 0.0]]), d) == np.inf


def test_mismatch_bounds_formula_and_lemma_condition():
    b = mismatch_bounds(0.1, 2, 8, 3.0)
    assert b["leakage_bits"] == pytest.approx(min(3 * 0.1 * math.log2(16 / 0.1), 1.0))
    assert b["distortion"] == pytest.approx(0.3)
    assert b["lemma_applies"]
    small = mismatch_bounds(1e-4, 2, 8, 1.0)
    assert small["leakage_bits"] == pytest.approx(3e-4 * math.log2(16 / 1e-4))
    big = mismatch_bounds(0.8, 2, 8, 1.0)
    assert not big["lemma_applies"] and big["leakage_bits"] == pytest.approx(1.0)
    assert mismatch_bounds(0.0, 2, 8, 1.0)["leakage_bits"] == 0.0
    with pytest.raises(ValueError, match="l1_distance"):
        mismatch_bounds(-0.1, 2, 8, 1.0)
    with pytest.raises(TypeError):
        mismatch_bounds("a", 2, 8, 1.0)


def test_theorem1_holds_on_random_perturbed_priors():
    rng = np.random.default_rng(3)
    k = 5
    pts = rng.normal(size=(k, 2))
    d = squared_euclidean_distortion(pts)
    for trial in range(4):
        p = rng.dirichlet(np.ones(2 * k)).reshape(2, k)
        q = np.abs(p + rng.normal(scale=0.01, size=p.shape))
        q /= q.sum()
        L = float(np.abs(p - q).sum())
        delta = 0.3 * float((q.sum(0)[:, None] * d).sum() / k)
        res = solve_mapping(q, d, delta, solver="fast")
        b = mismatch_bounds(L, 2, k, d.max())
        assert abs(leakage(p, res.mapping) - leakage(q, res.mapping)) <= b["leakage_bits"]
        assert expected_distortion(p, res.mapping, d) <= delta + d.max() * L + 1e-9


def test_prior_deviation_probability_monotone():
    f = prior_deviation_probability
    eps = [0.05, 0.1, 0.2, 0.4]
    vals = [f(e, 5000, 2, 10) for e in eps]
    assert all(a >= b for a, b in zip(vals, vals[1:])) and vals[-1] < vals[0]
    ns = [3000, 5000, 8000]
    vals = [f(0.2, n, 2, 10) for n in ns]
    assert 0 < vals[-1] and all(a > b for a, b in zip(vals, vals[1:]))
    assert f(0.1, 10**4, 2, 10) <= f(0.1, 10**4, 3, 10) <= f(0.1, 10**4, 3, 20)
    assert f(0.01, 10, 2, 10) == 1.0
    # log-space: exact value where it is representable
    n, e = 10**4, 0.2
    assert f(e, n, 2, 3) == pytest.approx(2.0 ** (6 * math.log2(n + 1) - 2 * n * e * e))
    with pytest.raises(ValueError, match="epsilon"):
        f(0.0, 10, 2, 2)
    with pytest.raises(ValueError, match="n_samples"):
        f(0.1, 0, 2, 2)


@pytest.mark.parametrize(
    "joint, match",
    [([[0.5, 0.5], [0.5, 0.5]], "sum to 1"), ([[1.2, -0.2]], "non-negative"), ([0.5, 0.5], "2-D"),
     ([[np.nan, 1.0]], "finite")],
)
def test_bad_joint(joint, match):
    with pytest.raises(ValueError, match=match):
        mutual_information(joint)
