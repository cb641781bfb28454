"""The privacy the vector Laplace noise delivers, reported and accounted: ``sensitivity / scale`` in exact
arithmetic rounded up (the float scale ``sensitivity / epsilon`` can round down, and then the noise delivers one
ulp more than ``epsilon``), as Laplace and the auctions' records do."""

from fractions import Fraction

import numpy as np
import pytest

from privrelease.accounting import PrivacyAccountant
from privrelease.noise import VectorLaplace
from privrelease.regression import TruthfulRegressionMechanism
from privrelease.regression._truthful import ridge_sensitivity


def _delivered(sensitivity, scale):
    return Fraction(sensitivity) / Fraction(scale)


@pytest.mark.parametrize("seed", range(4))
def test_vector_laplace_reports_the_epsilon_its_scale_delivers(seed):
    rng = np.random.default_rng(seed)
    above = 0
    for _ in range(300):
        eps, sens = float(rng.uniform(0.05, 5.0)), float(rng.uniform(0.01, 10.0))
        noise = VectorLaplace(dimension=3, epsilon=eps, sensitivity=sens, random_state=0)
        exact = _delivered(sens, noise.scale)
        # never below what the noise delivers, and the least float that is not
        assert Fraction(noise.effective_epsilon) >= exact
        assert Fraction(float(np.nextafter(noise.effective_epsilon, 0.0))) < exact
        assert noise.effective_epsilon in (eps, float(np.nextafter(eps, np.inf)))
        above += noise.effective_epsilon > eps
    assert above > 0  # the rounding happens: the attribute is not the requested epsilon copied


def test_vector_laplace_edge_levels():
    assert VectorLaplace(dimension=2, epsilon=1.0, sensitivity=0.0).effective_epsilon == 0.0
    with pytest.warns(Warning):
        assert VectorLaplace(dimension=2, epsilon=np.inf, sensitivity=1.0).effective_epsilon == np.inf


def _ulp_case():
    """(epsilon, n) where one of the three ridge releases' scales rounds down, found by search."""
    rng = np.random.default_rng(0)
    for _ in range(5000):
        eps, n = float(rng.uniform(0.1, 3.0)), int(rng.integers(4, 60))
        sens = [ridge_sensitivity(m, 1.0, 1.0) for m in {n, n // 2, n - n // 2}]
        if max(_delivered(s, s / eps) for s in sens) > Fraction(eps):
            return eps, n
    raise AssertionError("no case found")


def test_regression_records_the_delivered_joint_level():
    eps, n = _ulp_case()
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = np.clip(rng.normal(size=n), -1, 1)
    acc = PrivacyAccountant(epsilon=10.0)
    mech = TruthfulRegressionMechanism(epsilon=eps, alpha=1.0, random_state=0, accountant=acc).fit(X, y)
    delivered = max(_delivered(s, s / eps) for s in
                    (ridge_sensitivity(m, 1.0, 1.0) for m in {n, n // 2, n - n // 2}))
    assert Fraction(mech.epsilon_) >= 2 * delivered > 2 * Fraction(eps)
    assert mech.epsilon_ == 2.0 * float(np.nextafter(eps, np.inf))
    assert Fraction(acc.spent) >= 2 * delivered


def test_regression_level_is_twice_epsilon_where_no_scale_rounds_down():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20, 2)) / 10
    y = np.clip(rng.normal(size=20), -1, 1)
    mech = TruthfulRegressionMechanism(epsilon=0.5, alpha=1.0, random_state=0).fit(X, y)
    assert mech.epsilon_ == 1.0  # 0.5 = 2**-1: every division by it is exact
