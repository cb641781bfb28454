"""Findings of the review of stop 45's message and validation changes, each fixed by the lead.

Each test failed on the code before its fix: a list holding a pandas Series of booleans read them as 1 and 0, three
stated bounds were refused again when typed back, ``ridge_sensitivity`` read ``sqrt(n) / alpha^1.5`` as 0 where
``alpha^1.5`` overflowed, and a command line with valuations summing beyond float64 failed half-way.
"""
import math
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from privrelease.contracts import privacy_cost
from privrelease.noise import Laplace
from privrelease.regression import TruthfulRegressionMechanism, ridge_sensitivity
from privrelease.utils._validation import largest_passing


def _stated(call, after):
    with pytest.raises(ValueError) as info:
        call()
    return float(re.search(re.escape(after) + r"([-+0-9.e]+)", str(info.value)).group(1).rstrip("."))


@pytest.mark.parametrize("wrap", [lambda v: pd.Series(v, dtype=object), pd.Series, lambda v: pd.Index(v, dtype=object)])
def test_a_list_holding_a_pandas_vector_of_booleans_is_refused(wrap):
    with pytest.raises(TypeError, match="boolean True"):
        privacy_cost([wrap([True, 2.0])], 1.0)


@pytest.mark.parametrize("value", [3e307, 1e308, 1.5e308])
def test_the_stated_largest_laplace_scale_passes_typed_back(value):
    scale = _stated(lambda: Laplace(scale=1.1e306).randomise(np.array([value])), "expected a scale <= ")
    assert math.isfinite(value + scale * 149.7)  # the noise's reach, as the message states it
    Laplace(scale=scale).randomise(np.array([value]))  # accepted
    with pytest.raises(ValueError, match="overflow"):
        Laplace(scale=float(np.nextafter(scale, np.inf)) * (1 + 1e-15)).randomise(np.array([value]))


@pytest.mark.parametrize("n", [3, 7, 11, 199])
def test_the_stated_largest_payment_passes_typed_back(n):
    rng = np.random.default_rng(n)
    X, y = rng.uniform(-0.5, 0.5, (n, 2)) / 2, rng.uniform(-1, 1, n)
    top = _stated(lambda: TruthfulRegressionMechanism(payment_offset=0.0, payment_scale=1e308).fit(X, y),
                  "offset + scale at most ")
    with np.errstate(over="ignore"):
        assert np.isfinite(np.float64(top) * n) and not np.isfinite(np.float64(np.nextafter(top, np.inf)) * n)
    TruthfulRegressionMechanism(payment_offset=0.0, payment_scale=top).fit(X, y)


@pytest.mark.parametrize("v", [3.0, 1e300, 0.5])
def test_the_stated_largest_exponential_epsilon_passes_typed_back(v):
    eps = _stated(lambda: privacy_cost(v, 1000.0, "exponential"), "epsilon <= ")
    assert math.isfinite(privacy_cost(v, eps, "exponential"))
    with pytest.raises(ValueError, match="infinite"):
        privacy_cost(v, float(np.nextafter(eps, np.inf)), "exponential")


def test_largest_passing_steps_down_to_the_last_passing_float():
    assert largest_passing(1.0, lambda x: x < 1.0) == float(np.nextafter(1.0, 0.0))
    assert largest_passing(2.0, lambda x: True) == 2.0
    with pytest.raises(RuntimeError, match="within 3 ulps"):
        largest_passing(1.0, lambda x: False, steps=3)


@pytest.mark.parametrize("n, alpha, Y", [(10**300, 1e206, 1.0), (10**300, 1e250, 1.0), (10**200, 1e300, 1e300),
                                         (40, 2.0, 3.0), (10**6, 0.5, 1e-300)], ids=["1e206", "1e250", "Y1e300",
                                                                                      "small", "tinyY"])
def test_ridge_sensitivity_is_an_upper_bound_when_alpha_to_the_three_halves_overflows(n, alpha, Y):
    from fractions import Fraction
    # the exact sensitivity 2 Y / alpha + Y sqrt(n) / alpha^1.5, bracketed in rationals (sqrt(n) by isqrt)
    a, y = Fraction(alpha), Fraction(Y)
    root_a_hi = Fraction(math.isqrt(int(a * 10**40)) + 1, 10**20) if alpha < 1e100 else None
    s = ridge_sensitivity(n, alpha, Y)
    approx = Y * (2 / alpha + math.sqrt(n) / alpha / math.sqrt(alpha))
    assert s >= approx and s <= approx * (1 + 1e-14)
    if root_a_hi is not None:  # rigorous: s is at least a lower bound of the exact value
        lower = 2 * y / a + y * math.isqrt(n) / (a * root_a_hi)
        assert Fraction(s) >= lower


def test_valuations_summing_beyond_float64_on_the_command_line_exit_2_before_anything_runs(tmp_path):
    out = subprocess.run([sys.executable, "-m", "privrelease", "run", "pipelines/contract_design.toml", "--set",
                          "valuations=[1e308, 1e308]", "-o", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=__file__.rsplit("/tests/", 1)[0])
    assert out.returncode == 2, out.stderr
    assert "expected valuations summing to at most" in out.stderr and "OverflowError" not in out.stderr


def test_a_tiny_alpha_beside_a_tiny_response_bound_has_its_finite_sensitivity():
    # sqrt(n) / alpha^1.5 overflows at alpha = 1e-206, yet with Y = 1e-300 the sensitivity is 1e9 (it was refused as
    # "alpha too small for any response bound"); never below the exact value
    s = ridge_sensitivity(1, 1e-206, 1e-300)
    assert 1e9 <= s <= 1e9 * (1 + 1e-14)
