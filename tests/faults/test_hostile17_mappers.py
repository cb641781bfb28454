"""The mappers' guarantees against independent computations (numpy, a few lines each).

The distortion the quantized mapper certifies (``distortion_``, the ``delta`` budget) is what the labeled users pay
on average: their member-averaged costs weighted by their own cluster shares ``n(c) / n``. It was weighted by the
smoothed prior's cluster marginal, which the ``smoothing`` pseudo-users pull towards uniform: a budget of 0.75 let
the labeled users pay 0.787 on average at ``smoothing=20``.
"""
import dataclasses
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.mappers import QuantizedPrivacyMapper


def _ratings(n=400, d=30, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    R = rng.integers(1, 6, (n, d)) * (rng.random((n, d)) < 0.3)
    R[:, :3] = np.where(y[:, None] % 2 == 1, 5, 1)
    y[rng.random(n) < 0.2] = -1
    return sp.csr_matrix(R.astype(float)), y


def _mi_bits(J):
    J = J / J.sum()
    outer = J.sum(axis=1, keepdims=True) * J.sum(axis=0, keepdims=True)
    nz = J > 0
    return float(np.sum(J[nz] * np.log2(J[nz] / outer[nz])))


def _labeled_users_distortion(m, X, y, metric="euclidean"):
    """E[d(b, output point of c_hat)] over the labeled users, recomputed from the public attributes."""
    rows = np.flatnonzero(y != -1)
    c = m.quantize(X[rows])
    E = m.embedding_.transform(X[rows])
    pts = np.vstack([m.output_points_, np.zeros((1, E.shape[1]))])  # + the empty profile (taste origin)
    D = ((E[:, None, :] - pts[None]) ** 2).sum(axis=2)
    D = D if metric == "sqeuclidean" else np.sqrt(D)
    return float(np.mean(np.sum(m.mapping_[c] * D, axis=1)))


@pytest.fixture(scope="module")
def data():
    return _ratings()


@pytest.mark.parametrize("kw", [
    dict(delta=0.7, n_clusters=60, smoothing=5.0),
    dict(delta=0.7, n_clusters=30),  # the default smoothing: 0.7018 before
    dict(delta=0.9, n_clusters=40, smoothing=3.0, metric="sqeuclidean"),
])
def test_delta_budget_holds_over_the_labeled_users(data, kw):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = QuantizedPrivacyMapper(random_state=0, **kw).fit(X, y)
    paid = _labeled_users_distortion(m, X, y, kw.get("metric", "euclidean"))
    assert paid <= kw["delta"] + 1e-6
    assert m.distortion_ == pytest.approx(paid, rel=1e-7)
    # the leakage is still the fitted (smoothed) prior's, recomputed
    assert m.leakage_ == pytest.approx(_mi_bits(m.prior_ @ m.mapping_), abs=1e-9)


@pytest.mark.parametrize("kw", [dict(n_clusters=40, smoothing=20.0), dict(n_clusters=40, max_leakage=0.05),
                                dict(n_clusters=20, smoothing=10.0, prior="model")])
def test_distortion_is_what_the_labeled_users_pay(data, kw):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = QuantizedPrivacyMapper(random_state=0, **kw).fit(X, y)
    paid = _labeled_users_distortion(m, X, y)
    assert m.distortion_ == pytest.approx(paid, rel=1e-7)
    # smallest_delta_: every labeled user sent to her cheapest output
    C = m.cost_matrix_
    shares = np.bincount(m.quantize(X[np.flatnonzero(y != -1)]), minlength=C.shape[0]) / np.sum(y != -1)
    assert m.smallest_delta_ == pytest.approx(float(shares @ C.min(axis=1)), rel=1e-9)
    # Theorem 2 under the same weights: the lift costs at most the centre-level distortion plus r
    assert m.distortion_ <= m.center_distortion_ + m.quantization_radius_ + 1e-9


def test_a_file_with_the_earlier_weights_loads_with_the_figures_recomputed(data, tmp_path):
    """A file written before the fix holds the smoothed prior's figures: they are recomputed, with a warning."""
    from privrelease._persistence import load, save
    from privrelease.mapping import expected_distortion

    X, y = data
    # seed 16: a labeled user on a cell boundary was counted in another cell than transform sends her to
    m = QuantizedPrivacyMapper(n_clusters=30, smoothing=5.0, max_leakage=0.05, random_state=16).fit(X, y)
    paid = _labeled_users_distortion(m, X, y)
    C = m.cost_matrix_
    m.distortion_ = expected_distortion(m.prior_, m.mapping_, C)
    m.center_distortion_ = expected_distortion(m.prior_, m.mapping_, m.center_cost_matrix_)
    m.smallest_delta_ = float(m.prior_.sum(axis=0) @ C.min(axis=1))
    # the engine's result held the same figure (an earlier file was refused as a false claim of solver_result_)
    m.solver_result_ = dataclasses.replace(m.solver_result_, distortion=m.distortion_)
    assert abs(m.distortion_ - paid) > 1e-4
    with pytest.warns(UserWarning, match=r"weighted by the smoothed prior_ \(an earlier privrelease\)"):
        path = save(m, tmp_path / "m.npz")
    assert load(path).distortion_ == pytest.approx(paid, rel=1e-9)
    m.distortion_ = paid * 0.5  # any other figure is a false claim
    with pytest.raises(ValueError, match="distortion_ .* does not hold"):
        m._check_fitted_state()


@pytest.mark.parametrize("seed", [16, 0, 1])
def test_the_prior_counts_each_labeled_user_in_the_cell_transform_sends_her_to(data, seed):
    # attribute-free cells: the centres are the members' means in the whole space, not k-means' last centres (it
    # stops at a tolerance); a labeled user near a boundary was counted in one cell and released from another
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=30, smoothing=5.0, max_leakage=0.05, clustering="attribute_free",
                               random_state=seed).fit(X, y)
    rows = np.flatnonzero(y != -1)
    np.testing.assert_array_equal(m.labels_, m.quantize(X[rows]))
    assert m.distortion_ == pytest.approx(_labeled_users_distortion(m, X, y), rel=1e-9)


def test_an_earlier_delta_file_over_the_budget_for_the_labeled_users_says_why(data, tmp_path):
    # a file fitted before the fix met delta under the smoothed prior's weights: it was refused as "fitted.distortion_
    # exceeds the budget", which reads like an edited file; it is named as an earlier version's, to refit
    from privrelease.mapping import expected_distortion

    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=30, smoothing=5.0, max_leakage=0.05, random_state=0).fit(X, y)
    old = expected_distortion(m.prior_, m.mapping_, m.cost_matrix_)
    new = m.distortion_
    assert abs(old - new) > 1e-4
    m.set_params(max_leakage=None)
    m.distortion_ = old
    m.center_distortion_ = expected_distortion(m.prior_, m.mapping_, m.center_cost_matrix_)
    m.smallest_delta_ = float(m.prior_.sum(axis=0) @ m.cost_matrix_.min(axis=1))
    m.delta = (old + new) / 2 if old < new else None
    if m.delta is None:
        pytest.skip("the smoothed weights cost more here")
    with pytest.raises(ValueError, match=r"fitted by an earlier privrelease.*met delta = .* refit the mapper"):
        m._check_fitted_state()
