"""What the mapper template guarantees to both mappers: labels, weights, rounding, atomic refits, one leakage."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease.exceptions import InfeasibleBudgetError
from privrelease.mappers import ErasureMapper, QuantizedPrivacyMapper
from privrelease.mapping import leakage, map_attack_accuracy, mismatch_bounds, mutual_information


def _ratings(n=240, m=20, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    R = np.clip(np.rint(3 + 1.5 * (y[:, None] - 0.5) * (np.arange(m) < 4) + rng.normal(0, 1, (n, m))), 1, 5)
    R[rng.random((n, m)) > 0.4] = 0
    R[np.arange(n), rng.integers(0, m, n)] = 3
    return R, y


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = pd.DataFrame({"a": np.where(rng.random(n) < 0.8, y, 1 - y), "b": rng.choice(["u", "v"], n)})
    return X, y


def _mappers():
    R, y = _ratings()
    X, yt = _table()
    return [(QuantizedPrivacyMapper(n_clusters=4, space="raw", delta=9.0, random_state=0), R, y),
            (ErasureMapper(delta=0.3, random_state=0), X, yt)]


@pytest.mark.parametrize("i", [0, 1])
def test_undisclosed_markers_are_left_out_of_the_prior(i):
    est, X, y = _mappers()[i]
    ys = np.where(y == 1, "yes", "no").astype(object)
    ys[::5], ys[1::5], ys[2::7] = "-1", "", None
    keep = np.array([v not in ("-1", "", None) for v in ys])
    a = type(est)(**est.get_params()).fit(X, ys)
    Xk = X[keep] if not isinstance(X, pd.DataFrame) else X[keep].reset_index(drop=True)
    b = type(est)(**est.get_params()).fit(Xk, ys[keep].astype(str))
    assert list(a.classes_) == ["no", "yes"]  # "-1" and "" never become classes
    np.testing.assert_allclose(a.prior_, b.prior_, atol=1e-15)
    assert a.n_labeled_ == b.n_labeled_ == keep.sum()


@pytest.mark.parametrize("i", [0, 1])
def test_mixed_label_kinds_refused(i):
    est, X, y = _mappers()[i]
    mixed = y.astype(object)
    mixed[0] = True  # 1 beside True would merge into one class
    with pytest.raises(TypeError, match="mixes label types"):
        est.fit(X, mixed)


@pytest.mark.parametrize("i", [0, 1])
def test_negative_weights_refused(i):
    est, X, y = _mappers()[i]
    w = np.ones(len(y))
    w[7] = -0.5
    with pytest.raises(ValueError, match=r"sample_weight must be finite and non-negative, got -0\.5 at row 7"):
        est.fit(X, y, sample_weight=w)


@pytest.mark.parametrize("i", [0, 1])
def test_failed_refit_leaves_the_previous_fit_intact(i):
    est, X, y = _mappers()[i]
    est.fit(X, y)
    before = {k: v for k, v in vars(est).items() if k.endswith("_")}
    out = est.transform(X)
    # a failure late in fit (the solve), after the prior and alphabets were rebuilt
    if isinstance(est, QuantizedPrivacyMapper):
        est.set_params(delta=0.0, n_clusters=3)
        with pytest.raises(InfeasibleBudgetError):
            est.fit(X[:, :10], y)
        est.set_params(delta=9.0, n_clusters=4)
    else:
        est.set_params(max_leakage=0.1)  # delta and max_leakage both given: refused by the solve
        with pytest.raises(ValueError, match="not both"):
            est.fit(X[["a"]], y)
        est.set_params(max_leakage=None)
    after = {k: v for k, v in vars(est).items() if k.endswith("_")}
    assert set(after) == set(before)
    for k in before:
        assert after[k] is before[k], k  # the very same fitted objects
    again = est.transform(X)  # still usable, same seeded release
    if sp.issparse(out):
        assert (again != out).nnz == 0
    elif isinstance(out, pd.DataFrame):
        pd.testing.assert_frame_equal(again, out)
    else:
        np.testing.assert_array_equal(again, out)


def test_float_fit_integer_transform_rounds():
    R, y = _ratings()
    m = QuantizedPrivacyMapper(n_clusters=5, delta=0.4, random_state=3).fit(R.astype(np.float64), y)
    frac = m.release_profiles_.data - np.floor(m.release_profiles_.data)
    assert np.any(frac >= 0.5) and np.any((frac > 0) & (frac < 0.5))  # truncation and rounding differ
    out_f = m.transform(R.astype(np.float64))
    out_i = m.transform(R.astype(np.int64))  # same rows, same clusters, same seeded draws
    assert out_i.dtype == np.int64
    np.testing.assert_array_equal(out_i, np.rint(out_f).astype(np.int64))


@pytest.mark.parametrize("i", [0, 1])
def test_figures_are_the_engines(i):
    """One leakage implementation: every figure equals the engine's function on prior_ and mapping_."""
    est, X, y = _mappers()[i]
    est.fit(X, y)
    assert est.leakage_ == leakage(est.prior_, est.mapping_)
    assert est.prior_leakage_ == mutual_information(est.prior_)
    assert est.map_accuracy_ == map_attack_accuracy(est.prior_, est.mapping_)
    # Theorem 1 + Proposition 1 through the engine: capped by log2 min(|A|, |B|), never inf
    n_in = est.prior_.shape[1]
    eps = np.sqrt((2 * n_in * np.log2(est.n_labeled_ + 1) + np.log2(20)) / (2 * est.n_labeled_))
    finite = est.cost_matrix_[np.isfinite(est.cost_matrix_)]
    expected = mismatch_bounds(min(eps, 2.0), 2, n_in, finite.max())["leakage_bits"]
    assert est.mismatch_bound_ == pytest.approx(expected, rel=1e-12)
    assert est.mismatch_bound_ <= np.log2(min(2, n_in)) + 1e-12


def test_mismatch_bound_caps_like_the_engine_on_small_samples():
    X, y = _table(n=12)
    m = ErasureMapper(delta=0.5, random_state=0).fit(X, y)
    assert np.isfinite(m.mismatch_bound_)
    assert m.mismatch_bound_ == pytest.approx(1.0)  # log2 min(|A| = 2, |B| = 4): Lemma 1 does not apply


def test_erasure_refuses_a_column_mixing_booleans_and_numbers():
    X, y = _table()
    X["b"] = np.array([True, 1, "u"], dtype=object)[np.arange(len(y)) % 3]
    with pytest.raises(TypeError, match=r"column 1 of X mixes booleans and numbers \(for example True and 1\)"):
        ErasureMapper(delta=0.3).fit(X, y)
    X["b"] = np.array([True, False, "u"], dtype=object)[np.arange(len(y)) % 3]  # booleans beside strings: kept apart
    m = ErasureMapper(delta=0.3, random_state=0).fit(X, y)
    assert [v for v in m.categories_[1].tolist()] == [False, True, "u"]
