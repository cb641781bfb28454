"""Maximal leakage with a budget just below the perfect-privacy distortion, and masked budgets in the curve.

* The delta mode's LP was solved in the epigraph form (minimise ``sum_j z_j``, ``p(j | a) <= z_j``), where the part
  that matters, ``sum_j z_j - 1`` (1e-8 .. 1e-6 at budgets 3e-8 .. 1e-6 of the distortion range below the
  perfect-privacy distortion), sat at HiGHS's absolute tolerances: its answer leaked up to 15 times the optimum
  and the bound of its multipliers was at most 1, so "auto" warned and "fast" and "cvxpy" raised SolverError
  (11 warned and 29 raised of 2,560 such budgets).
* ``privacy_distortion_curve`` solved a masked budget at the value it hid (``solve_mapping`` refuses it).

The reference is the shape of the curve: ``sum_j max_a p(j | a) - 1`` of the optimum is a convex piecewise-linear
function of the budget that is 0 at the perfect-privacy distortion, so where it is linear through the origin at two
budgets well resolved by any LP (1e-4 and 1e-5 of the range below, checked), it is linear on the whole segment and
its value at a budget ``eps`` of the range below is ``eps / 1e-5`` times that at 1e-5.
"""

import math
import warnings

import numpy as np
import pytest

from privrelease.exceptions import ConvergenceWarning
from privrelease.mapping import privacy_distortion_curve, solve_mapping

# |A| = 2, k = 4, 7 outputs: the answer leaked 3.2e-7 bits where the optimum is 2.2e-8 bits
P1 = np.array([[0.0005495901279618355, 4.629722518978895e-05, 0.636042915920655, 0.011568684026353256],
               [0.08151894046571245, 0.00043566403517005035, 0.08464174692970926, 0.1851961612692482]])
D1 = np.array([[1.9675531868054192, 0.6476660842610763, 1.2413416168708873, 1.122161984769759, 0.9005672536027618,
                1.305712016713374, 0.7000120938348868],
               [1.663744562423422, 1.774467038132105, 0.5188914410873467, 1.094024451455061, 0.7711463173072973,
                0.441298896149912, 1.8231053240256248],
               [1.0309127764813202, 0.5510752099355599, 1.4447160073690484, 0.6437672472396648, 1.8324328337699007,
                0.6691520376114979, 0.3562269685416288],
               [0.6413072220740728, 0.8877713853845872, 1.0971438778182239, 1.8404283761224531, 1.4855138508517063,
                0.876845123262157, 0.3286912656657463]])
# |A| = 2, k = 3 outputs = 3: the answer was the optimum, but its bound was 0 bits (raised by "fast" and "cvxpy")
P2 = np.array([[0.4520224026700568, 0.024334741001364908, 0.028347038533631123],
               [0.005103353293307859, 0.4717793010307909, 0.018413163470848492]])
D2 = np.array([[9.160324027148262, 9.526222701019057, 9.59371248355414],
               [9.314518519161114, 9.55780416922287, 9.305607183329277],
               [0.9219957744145509, 0.9479575221909492, 0.714895773392895]])


def excess(prior, mapping):
    """``sum_j max_a p(j | a) - 1`` of a full mapping, as ``sum_j max_a (p(j | a) - p(j | a0))`` (no cancellation
    against 1: every mapping has ``sum_j p(j | a0) = 1``)."""
    cond = (prior / prior.sum(axis=1, keepdims=True)) @ np.asarray(mapping, dtype=float)
    return float((cond - cond[0]).max(axis=0).sum())


def ends(prior, d):
    """The smallest and the perfect-privacy distortions."""
    dmin = math.fsum(prior.sum(axis=0) * d.min(axis=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dpp = privacy_distortion_curve(prior, d, [dmin], leakage="maximal_leakage").attrs["perfect_privacy_delta"]
    return dmin, dpp


@pytest.mark.parametrize("prior, d", [(P1, D1), (P2, D2)], ids=["k4x7", "k3x3"])
def test_budget_just_below_perfect_privacy_is_certified_optimal(prior, d):
    dmin, dpp = ends(prior, d)
    assert dpp > dmin

    def budget(eps):
        return dpp - eps * (dpp - dmin)

    far = {eps: excess(prior, solve_mapping(prior, d, delta=budget(eps), leakage="maximal_leakage",
                                            solver="fast").mapping) for eps in (1e-4, 1e-5)}
    # linear through 0 at the perfect-privacy distortion on the segment (convex, three collinear points)
    assert far[1e-4] == pytest.approx(10.0 * far[1e-5], rel=1e-7)
    for eps in (1e-6, 3e-7):
        optimum = far[1e-5] * eps / 1e-5
        for solver in ("auto", "fast", "cvxpy"):
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                res = solve_mapping(prior, d, delta=budget(eps), leakage="maximal_leakage", solver=solver)
            assert res.status == "optimal"
            assert res.distortion <= budget(eps) + 4 * np.spacing(budget(eps))
            # the certificate is honest (the leakage above the optimum is within its gap) and within 1e-7 bits
            bits = math.log2(1.0 + excess(prior, res.mapping))
            assert bits == pytest.approx(res.leakage, rel=1e-6, abs=1e-15)
            assert bits - math.log1p(optimum) / math.log(2.0) <= res.certificate["gap_bits"] * (1 + 1e-6) + 1e-15
            assert res.certificate["gap_bits"] <= 1e-7
            if solver != "cvxpy":
                # the LP's own answer is the optimum (it leaked 15 times it) and its bound proves it (the gap was the
                # whole leakage); cvxpy's answer may stay anywhere within the 1e-7 bits its certificate claims
                assert excess(prior, res.mapping) == pytest.approx(optimum, rel=1e-5), (eps, solver)
                assert res.certificate["gap_bits"] <= 1e-3 * math.log2(1.0 + optimum)


def test_curve_refuses_masked_budgets():
    prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    d = 1 - np.eye(2)
    for deltas in (np.ma.masked_array([0.1, 0.3], mask=[0, 1]), [0.1, np.ma.masked], (np.ma.masked,)):
        with pytest.raises(TypeError, match="masked"):
            privacy_distortion_curve(prior, d, deltas)
    with pytest.raises(TypeError, match="MaskedConstant"):  # solve_mapping, as before
        solve_mapping(prior, d, delta=np.ma.masked_array([0.3], mask=[1])[0])
    # nothing masked: the budgets themselves
    plain = privacy_distortion_curve(prior, d, [0.1, 0.3])
    unmasked = privacy_distortion_curve(prior, d, np.ma.masked_array([0.1, 0.3], mask=[0, 0]))
    assert unmasked["leakage_bits"].tolist() == plain["leakage_bits"].tolist()
    assert unmasked["delta"].tolist() == [0.1, 0.3]
