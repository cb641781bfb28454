"""Iris (Salamatian et al., Sec. VI-B, Fig. 8): quantization with k = 50 is close to no quantization."""

import numpy as np
import pytest

from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mapping import mutual_information, privacy_distortion_curve, solve_mapping
from privrelease.runner.experiments.iris_quantization import _iris_prior


@pytest.fixture(scope="module")
def iris():
    X, a, kp = _iris_prior(0)
    pts, prior = kp.points, kp.prior
    D = np.sqrt(((pts[:, None, :] - pts[None]) ** 2).sum(-1))
    Xw = np.vstack([pts, pts])
    yw = np.r_[np.zeros(len(pts), int), np.ones(len(pts), int)]
    w = np.r_[prior[0], prior[1]]
    mappers = {k: QuantizedPrivacyMapper(n_clusters=k, space="raw", release="representative", smoothing=0.0,
                                         max_leakage=50.0, random_state=0).fit(Xw, yw, sample_weight=w)
               for k in (5, 50)}
    return prior, D, mappers


def _pp(prior, cost):
    return privacy_distortion_curve(prior, cost, [np.inf]).attrs["perfect_privacy_delta"]


def test_k50_close_to_no_quantization(iris):
    prior, D, mappers = iris
    m50, m5 = mappers[50], mappers[5]
    # eq. (20): the aggregated prior keeps the KDE masses of each class
    np.testing.assert_allclose(m50.prior_.sum(axis=1), prior.sum(axis=1), atol=1e-12)
    i_b = mutual_information(prior)
    assert 0.5 < i_b < 1.0
    # leakage with no distortion beyond quantization: I(A; C) <= I(A; B), same order, k=50 within 5 %
    assert m50.prior_leakage_ <= i_b + 1e-9
    assert m50.prior_leakage_ == pytest.approx(i_b, rel=0.05)
    assert m5.prior_leakage_ < m50.prior_leakage_
    # perfect privacy: quantization costs distortion, at most the radius (Theorem 2), little for k=50
    pp_none = _pp(prior, D)
    pp50 = _pp(m50.prior_, m50.cost_matrix_)
    pp5 = _pp(m5.prior_, m5.cost_matrix_)
    assert pp_none - 1e-9 <= pp50 <= pp_none + m50.quantization_radius_
    assert pp50 <= 1.15 * pp_none
    assert pp5 > pp50
    # at a common budget the leakage is close
    delta = 0.8
    l_none = solve_mapping(prior, D, delta).leakage
    l50 = solve_mapping(m50.prior_, m50.cost_matrix_, delta).leakage
    assert abs(l50 - l_none) < 0.1
