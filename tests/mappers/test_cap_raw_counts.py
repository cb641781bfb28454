"""A ``max_leakage`` cap holds under the opted-in users' raw counts, not only under the smoothed prior.

The smoothed prior ``q(a, c) ~ n(a, c) + smoothing * p(a)`` is a mixture of the
raw counts and an attribute-free part with the same class marginal, so for any
mapping ``I_smoothed <= I_raw`` (and the same for maximal leakage): a cap met
under the raw counts is met under both. Before, the cap was certified under the
smoothed prior alone and the raw counts leaked 0.057 bits at a cap of 0.05
(0.50 at ``smoothing=100``).
"""

import math

import numpy as np
import pytest

from privrelease.datasets import make_ratings
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mappers._base import theorem1_bound


def _mi_bits(joint):
    """Plain mutual information (bits) of a joint table, written out here."""
    joint = np.asarray(joint, dtype=np.float64)
    joint = joint / joint.sum()
    pa = joint.sum(axis=1, keepdims=True)
    pc = joint.sum(axis=0, keepdims=True)
    mask = joint > 0
    return float(np.sum(joint[mask] * np.log2(joint[mask] / (pa @ pc)[mask])))


def _max_leakage_bits(joint):
    """Maximal leakage ``log2 sum_j max_a p(j | a)`` of a joint table, written out here."""
    joint = np.asarray(joint, dtype=np.float64)
    pa = joint.sum(axis=1, keepdims=True)
    cond = joint[pa[:, 0] > 0] / pa[pa[:, 0] > 0]
    return float(np.log2(cond.max(axis=0).sum()))


@pytest.fixture(scope="module")
def data():
    X, y = make_ratings(n_users=2000, n_items=100, random_state=0)[:2]
    y = np.asarray(y).copy()
    y[1000:] = -1
    return X, y


@pytest.mark.parametrize("smoothing", [1.0, 10.0, 100.0])
def test_cap_holds_under_raw_counts(data, smoothing):
    X, y = data
    cap = 0.05
    m = QuantizedPrivacyMapper(max_leakage=cap, smoothing=smoothing, random_state=0).fit(X, y)
    raw = _mi_bits(m.empirical_prior_ @ m.mapping_)
    assert raw <= cap + 1e-12
    assert m.empirical_leakage_ == pytest.approx(raw, abs=1e-12)
    assert m.leakage_ <= cap + 1e-6
    # the smoothed leakage never exceeds the raw one (the mixture argument), here with the fitted mapping
    assert _mi_bits(m.prior_ @ m.mapping_) <= raw + 1e-12
    # the tighter cap the engine certified is recorded and not wasted: the raw leakage uses most of the cap
    assert m.solver_result_.max_leakage <= cap
    assert raw >= 0.9 * cap


def test_cap_untouched_when_it_already_holds(data):
    X, y = data
    m = QuantizedPrivacyMapper(max_leakage=0.05, smoothing=0.0, random_state=0).fit(X, y)
    assert m.solver_result_.max_leakage == 0.05
    assert m.empirical_leakage_ <= 0.05 + 1e-9


def test_maximal_leakage_cap_holds_under_raw_counts(data):
    X, y = data
    cap = 0.05
    m = QuantizedPrivacyMapper(n_clusters=20, max_leakage=cap, smoothing=30.0, leakage="maximal_leakage",
                               random_state=0).fit(X, y)
    assert _max_leakage_bits(m.empirical_prior_ @ m.mapping_) <= cap + 1e-12
    assert m.leakage_ <= cap + 1e-6


def test_two_attributes_joint_cap_holds_under_raw_counts(data):
    X, y = data
    rng = np.random.default_rng(0)
    second = np.where(y >= 0, (rng.random(y.size) < 0.3 + 0.4 * (y == 1)).astype(int), -1)
    Y = np.column_stack([y, second])
    cap = 0.03
    m = QuantizedPrivacyMapper(n_clusters=30, max_leakage=cap, smoothing=20.0, random_state=0).fit(X, Y)
    assert _mi_bits(m.empirical_prior_ @ m.mapping_) <= cap + 1e-12


def test_smoothed_leakage_below_raw_leakage_for_any_mapping():
    """The lemma the search relies on, on random counts and random mappings (I(A; S) = 0 for the mixture)."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        a, k = rng.integers(2, 5), rng.integers(2, 12)
        counts = rng.poisson(rng.gamma(0.5, 4.0, size=(a, k))).astype(float)
        if counts.sum() == 0:
            continue
        emp = counts / counts.sum()
        s = rng.choice([0.1, 1.0, 10.0, 1000.0])
        smooth = counts + s * emp.sum(axis=1, keepdims=True)
        smooth /= smooth.sum()
        W = rng.dirichlet(np.full(k, 0.3), size=k)
        assert _mi_bits(smooth @ W) <= _mi_bits(emp @ W) + 1e-12
        assert _max_leakage_bits(smooth @ W) <= _max_leakage_bits(emp @ W) + 1e-12


def test_mismatch_bound_counts_the_smoothing():
    """Theorem 1 is about the raw counts: the smoothed prior's distance to them is added to eps."""
    n, a, b, d_max = 200_000, 2, 3, 1.0
    plain = theorem1_bound(n, a, b, d_max)
    shifted = theorem1_bound(n, a, b, d_max, shift=0.05)
    assert shifted > plain
    eps = math.sqrt((a * b * math.log2(n + 1.0) + math.log2(20.0)) / (2.0 * n))
    L = eps + 0.05
    assert shifted == pytest.approx(min(3 * L * math.log2(a * b / L), 1.0), rel=1e-12)


def test_fitted_mismatch_bound_uses_the_smoothing_distance(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.0, smoothing=50.0, random_state=0).fit(X, y)
    l1 = float(np.abs(m.prior_ - m.empirical_prior_).sum())
    assert l1 > 0
    d_max = float(m.cost_matrix_[np.isfinite(m.cost_matrix_)].max())
    expected = theorem1_bound(m.n_labeled_, m.prior_.shape[0], m.mapping_.shape[0], d_max, shift=l1)
    assert m.mismatch_bound_ == pytest.approx(expected, rel=1e-12)


@pytest.mark.filterwarnings("ignore:the loaded QuantizedPrivacyMapper has an integer random_state")
def test_loaded_file_breaking_the_raw_cap_is_refused(data, tmp_path, monkeypatch):
    """A file whose mapping meets the cap under the smoothed prior only (as fit made them before) is refused."""
    from privrelease._persistence import load, save
    from privrelease.mappers._base import _BaseMapper

    X, y = data
    with monkeypatch.context() as mp:
        mp.setattr(QuantizedPrivacyMapper, "_solve", _BaseMapper._solve)  # the smoothed prior alone
        old = QuantizedPrivacyMapper(n_clusters=20, max_leakage=0.05, smoothing=10.0, random_state=0).fit(X, y)
    assert old.empirical_leakage_ > 0.06
    with pytest.raises(ValueError, match=r"cannot be saved: .*empirical_leakage_ = 0\.\d+ bits exceeds the cap"):
        save(old, tmp_path / "refused.npz")
    with monkeypatch.context() as mp:
        mp.setattr(QuantizedPrivacyMapper, "_check_raw_cap", _BaseMapper._check_raw_cap)
        path = save(old, tmp_path / "old.npz")  # as a file written before the raw cap was kept
    with pytest.raises(ValueError, match=r"empirical_leakage_ = 0\.\d+ bits exceeds the cap of 0\.05 bits"):
        load(path)
    new = QuantizedPrivacyMapper(n_clusters=20, max_leakage=0.05, smoothing=10.0, random_state=0).fit(X, y)
    back = load(save(new, tmp_path / "new.npz"))
    assert back.empirical_leakage_ == new.empirical_leakage_ <= 0.05


def test_refinement_keeps_the_raw_cap(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=20, n_refine=3, metric="sqeuclidean", max_leakage=0.05, smoothing=10.0,
                               random_state=0).fit(X, y)
    assert m.n_refine_ >= 1
    assert _mi_bits(m.empirical_prior_ @ m.mapping_) <= 0.05 + 1e-12
    assert not hasattr(m, "_raw_cap")


def test_marginal_protection_certifies_the_fitted_prior_only(data):
    """protect="marginal": the stacked counts have another input marginal; the cap is the fitted prior's (README)."""
    X, y = data
    rng = np.random.default_rng(0)
    second = np.where(y >= 0, (rng.random(y.size) < 0.3 + 0.4 * (y == 1)).astype(int), -1)
    m = QuantizedPrivacyMapper(n_clusters=20, max_leakage=0.03, smoothing=20.0, protect="marginal",
                               random_state=0).fit(X, np.column_stack([y, second]))
    assert m.solver_result_.max_leakage == 0.03
    assert m.leakage_ <= 0.03 + 1e-6


@pytest.mark.parametrize("max_leakage", [None, 0.0, 0.05])
def test_a_smoothing_that_drowns_the_counts_is_refused(data, max_leakage):
    """smoothing=1e12 made the smoothed prior independent to the solver's precision: "perfect privacy" released
    the counts' whole leakage (0.44 bits, leakage_ 1e-17), a cap of 0.05 only warned. (Since the distortion is
    weighted by the labeled users' cluster shares, the solver happens to return a mapping private under the raw
    counts too at 1e12; since the perfect-privacy LP divides a nearly independent class's equations by their largest
    coefficient, at 1e13 too, exactly; 1e15 still drowns them, the dependence being the prior's rounding.)"""
    X, y = data
    drowned = r"smoothing=1000000000000000\.0 drowns the opted-in users' counts: .* leaks 0\.\d+ bits"
    with pytest.raises(ValueError, match=drowned):
        QuantizedPrivacyMapper(max_leakage=max_leakage, smoothing=1e15, random_state=0).fit(X, y)


@pytest.mark.filterwarnings("ignore:the loaded QuantizedPrivacyMapper has an integer random_state")
def test_loaded_perfect_privacy_file_leaking_under_the_counts_is_refused(data, tmp_path, monkeypatch):
    from privrelease._persistence import load, save
    from privrelease.mappers._base import _BaseMapper

    X, y = data
    with monkeypatch.context() as mp:
        mp.setattr(QuantizedPrivacyMapper, "_solve", _BaseMapper._solve)  # as fit made them before
        mp.setattr(QuantizedPrivacyMapper, "_check_raw_cap", _BaseMapper._check_raw_cap)
        old = QuantizedPrivacyMapper(smoothing=1e15, random_state=0).fit(X, y)
        path = save(old, tmp_path / "old.npz")
    assert old.leakage_ < 1e-9 < 0.1 < old.empirical_leakage_
    with pytest.raises(ValueError, match=r"empirical_leakage_ = 0\.\d+ bits exceeds the cap of 0\.0 bits"):
        load(path)


def test_default_perfect_privacy_is_perfect_under_the_counts(data):
    X, y = data
    m = QuantizedPrivacyMapper(random_state=0).fit(X, y)
    assert _mi_bits(m.empirical_prior_ @ m.mapping_) <= 1e-9
