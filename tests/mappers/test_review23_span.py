"""Review of span23 (class_directions): what the review found, each test failing before the fix."""
import warnings

import numpy as np
import pytest

from privrelease import QuantizedPrivacyMapper
from privrelease.datasets import make_ratings
from privrelease.mapping import leakage


def test_every_labeled_user_at_one_point_fits_as_with_all_directions():
    # implicit feedback in the taste space, three classes: the default ("auto" -> "significant") raised
    # IndexError where class_directions="all" fitted, warned, one cluster
    X, _ = make_ratings(n_users=600, n_items=80, random_state=0)[:2]
    X.data[:] = 1
    y = np.random.default_rng(0).integers(0, 3, 600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = QuantizedPrivacyMapper(random_state=0).fit(X, y)
    assert m.n_class_directions_ == 0 and m.class_direction_eigenvalues_.size == 0
    assert m.solver_result_.status == "optimal"
    assert leakage(m.prior_, m.mapping_) == pytest.approx(m.leakage_, abs=1e-12)
    same = QuantizedPrivacyMapper(space="raw", n_clusters=5, random_state=0).fit(np.full((300, 6), 3.0),
                                                                             np.arange(300) % 3)
    assert same.n_class_directions_ == 0


def test_heldout_folds_use_the_rule_the_fit_resolved():
    # n = 50 labeled users in 40 dimensions, 3 classes: "significant" is usable on all of them but not on a fold's
    # 40; the held-out rule was refused ("got 40 labeled users", the user gave 50), and under "auto" the folds
    # were clustered with "all" while the final fit used "significant"
    rng = np.random.default_rng(0)
    y = np.arange(50) % 3
    X = rng.normal(size=(50, 40)) + 3.0 * (y[:, None] == np.arange(40)[None, :] % 3)
    m = QuantizedPrivacyMapper(space="raw", clustering="attribute_free", class_directions="significant",
                               class_removal="heldout", n_clusters=3, random_state=0).fit(X, y)
    assert m.class_removal_ in (1.0, 0.75, 0.5, 0.25, 0.0) and m.n_class_directions_ >= 1
    calls = []
    original = QuantizedPrivacyMapper._class_directions_rule

    def spy(self, E, a_idx):
        out = original(self, E, a_idx)
        calls.append((E.shape[0], out))
        return out

    QuantizedPrivacyMapper._class_directions_rule = spy
    try:
        QuantizedPrivacyMapper(space="raw", clustering="attribute_free", class_removal="heldout", n_clusters=3,
                               random_state=0).fit(X, y)
    finally:
        QuantizedPrivacyMapper._class_directions_rule = original
    assert calls == [(50, "significant")]  # resolved once, on every labeled user


def test_balancing_weights_do_not_make_noise_significant():
    # class-dependent weights (1 / n_class) on pure noise, classes of 80 / 15 / 5 %: the null assumed every class mean
    # alike noisy, and a direction was kept on 12.5 % of 200 fits (4 % with unit weights); unit weights keep the
    # closed form exactly
    from privrelease.mappers._quantized import _largest_root_threshold, _significant_directions

    kept = {"unit": 0, "balanced": 0}
    for s in range(120):
        rng = np.random.default_rng(s)
        a = rng.choice(3, size=600, p=[0.8, 0.15, 0.05])
        E = rng.normal(size=(600, 10))
        for name, w in (("unit", np.ones(600)), ("balanced", 1.0 / np.bincount(a)[a])):
            V, theta, threshold = _significant_directions(E, a, w)
            kept[name] += V.shape[0] > 0
            if name == "unit":
                assert threshold == _largest_root_threshold(10, 3, 600.0)
    assert kept["balanced"] <= 12 and kept["unit"] <= 12, kept  # about 5 %: 6 of 120 expected


@pytest.mark.parametrize("edit", [lambda t: t[::-1].copy(), lambda t: np.r_[t, 0.0, 0.0, 0.0, 0.0],
                                  lambda t: np.r_[t[:-1], -0.5], lambda t: np.r_[7.0, t[1:]]])
def test_edited_eigenvalues_are_refused(tmp_path, edit):
    from privrelease import load
    from privrelease._persistence import _read, _write

    rng = np.random.default_rng(0)
    y = np.arange(600) % 4
    X = rng.normal(size=(600, 8)) + 0.8 * (y[:, None] == np.arange(8)[None, :] % 4)
    m = QuantizedPrivacyMapper(space="raw", clustering="attribute_free", n_clusters=6, random_state=0).fit(X, y)
    theta = m.class_direction_eigenvalues_
    assert theta.size == 3 and np.all(np.diff(theta) <= 0) and m.n_class_directions_ >= 1
    m.save(tmp_path / "m.npz")
    meta, arrays = _read(tmp_path / "m.npz")
    key = meta["fitted"]["class_direction_eigenvalues_"]["key"]
    arrays[key] = edit(np.asarray(arrays[key]))
    _write(tmp_path / "m.npz", meta, arrays)
    with pytest.raises(ValueError, match=r"class_direction_eigenvalues_"):
        load(tmp_path / "m.npz")


@pytest.mark.parametrize("class_directions", ["auto", "all", "significant"])
def test_classes_of_one_point_have_no_direction_between_them(class_directions):
    # identical rows: the spread is rounding residue (~1e-17), whose largest eigenvalue passed a cutoff relative to
    # the largest and gave "a direction" (eigenvalue 1.0; "all": 2 of them) between classes of one point
    rng = np.random.default_rng(0)
    X = np.tile(rng.normal(size=8), (100, 1))
    y = rng.integers(0, 3, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = QuantizedPrivacyMapper(space="raw", clustering="attribute_free", class_directions=class_directions,
                                   n_clusters=4, random_state=0).fit(X, y)
    assert m.n_class_directions_ == 0 and m.attribute_directions_.shape == (0, 8)
    assert leakage(m.prior_, m.mapping_) == pytest.approx(m.leakage_, abs=1e-12)
    from privrelease.mappers._quantized import _significant_directions

    V, theta, _ = _significant_directions(X, y, np.ones(100))
    assert V.shape == (0, 8)
