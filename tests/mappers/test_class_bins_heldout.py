"""QuantizedPrivacyMapper(class_bins="heldout"): the attribute-free cells are cut only while the held-out users vouch
for it (docs/frontier.md, section (o)).

The rule: the candidates (1 and 2 bins) are scored on the SAME 5 stratified folds and held-out users; a candidate's
held-out excess leakage minus the unsplit cells' (paired), plus one noise standard deviation, must stay within
``heldout_tolerance``; the scan stops at the first failure and keeps the accepted candidate of least held-out
distortion. The rule is recomputed here from the recorded figures, written independently of the library.
"""

import copy
import os
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils._param_validation import InvalidParameterError

import privrelease
from privrelease._persistence import _read, _write
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mappers._quantized import _BINS_GRID, _bins_choice
from test_class_bins import _save_load

FIGURES = ("class_bins_grid_", "class_bins_excess_", "class_bins_noise_", "class_bins_distortion_")


def _rule(excess, noise, distortion, tol):
    """The rule, from its description: the unsplit cells (first) always accepted; then, in order, a candidate is
    accepted while its excess over the unsplit cells' plus its noise is at most ``tol``; the first failure ends the
    scan; the accepted candidate of least distortion (the first of equals) is kept."""
    accepted = [0]
    for i in range(1, len(excess)):
        if excess[i] - excess[0] + noise[i] > tol:
            break
        accepted.append(i)
    best = accepted[0]
    for i in accepted:
        if distortion[i] < distortion[best]:
            best = i
    return best, len(accepted)


def _heldout(X, y, **kw):
    # class_directions="all": the cells are cut along the first of all m - 1 between-class directions, the setting the
    # constructions below were written for (with "auto" the harmless attribute has no significant direction at all)
    return QuantizedPrivacyMapper(class_bins="heldout", random_state=0, class_directions="all", **kw).fit(X, y)


def _strong_axis(seed=0, n=60, shift=4.0):
    """60 labeled users spread along one axis, the 3 classes' means 4 apart along it (their spread: 3): a strong
    attribute acting along the users' main axis, the direction the bins cut along, and 12 held-out users a fold."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    main = rng.normal(0, 3.0, n) + shift * (y - 1)
    return np.column_stack([main, rng.normal(0, 1.0, (n, 3))]) + 20.0, y


@pytest.fixture(scope="module")
def shifted(class_shifted_ratings):
    return class_shifted_ratings(n=300)          # 3 classes whose tastes differ, 100 labeled users a class


@pytest.fixture(scope="module")
def fitted(shifted):
    X, y = shifted
    return _heldout(X, y, n_clusters=10)


@pytest.fixture(scope="module")
def harmless(class_shifted_ratings):
    """600 users whose ratings do not depend on the attribute (strength 0): 200 labeled users a class."""
    X, y = class_shifted_ratings(n=600, strength=0.0)
    return X, y, _heldout(X, y, n_clusters=6, clustering="attribute_free")


def test_the_rule_matches_its_description_on_random_figures():
    """Brute force: the library's choice is the rule recomputed from its description; the unsplit cells are kept
    whatever their own excess and noise; a larger tolerance never keeps a larger held-out distortion."""
    rng = np.random.default_rng(0)
    for _ in range(1000):
        excess = rng.normal(0.02, 0.03, 4)
        noise = rng.uniform(0.0, 0.03, 4)
        dist = rng.random(4)
        tol = rng.choice([0.0, 0.01, 0.02, 0.05])
        i = _bins_choice(excess, noise, dist, tol)
        assert i == _rule(excess, noise, dist, tol)[0]
        assert dist[_bins_choice(excess, noise, dist, tol + 0.03)] <= dist[i]
    # a huge excess and noise of the unsplit cells themselves do not stop the scan: only the differences count
    assert _bins_choice([5.0, 5.0, 5.0, 5.0], [9.0, 0.0, 0.0, 0.0], [3.0, 2.0, 1.0, 0.0], 0.0) == 3


def test_the_choice_is_the_rule_applied_to_the_recorded_figures(fitted):
    m = fitted
    np.testing.assert_array_equal(m.class_bins_grid_, _BINS_GRID)
    assert m.class_bins_grid_.dtype.kind == "i" and m.class_bins_grid_[0] == 1
    for name in FIGURES[1:]:
        assert getattr(m, name).shape == (len(_BINS_GRID),) and np.all(np.isfinite(getattr(m, name)))
    assert np.all(m.class_bins_noise_ >= 0) and np.all(m.class_bins_distortion_ > 0)
    best, _ = _rule(m.class_bins_excess_, m.class_bins_noise_, m.class_bins_distortion_, m.heldout_tolerance)
    assert m.class_bins_ == m.class_bins_grid_[best] and isinstance(m.class_bins_, int)
    # the cells of the fit are cut into that many bins (an empty bin shares its neighbour's cell)
    if m.class_bins_ > 1:
        assert m.fine_cells_.shape == (m.coarse_centers_.shape[0], m.class_bins_)
    else:
        assert not hasattr(m, "fine_cells_")


def test_a_strong_attribute_with_few_labeled_users_keeps_the_cells_whole():
    """The bins cut along the axis the classes differ on: each bin's class split, estimated on 48 users a fold,
    leaks on the held-out users. The figures say so (every split candidate's excess exceeds the unsplit cells' by
    more than the tolerance), and the rule keeps 1 bin: the fit is the unsplit fit."""
    X, y = _strong_axis()
    m = _heldout(X, y, n_clusters=3, space="raw", clustering="attribute_free")
    diff = m.class_bins_excess_ - m.class_bins_excess_[0]
    assert np.all(diff[1:] > m.heldout_tolerance)
    assert m.class_bins_ == 1 and not hasattr(m, "fine_cells_")
    whole = QuantizedPrivacyMapper(n_clusters=3, space="raw", clustering="attribute_free", class_directions="all",
                                   random_state=0).fit(X, y)
    np.testing.assert_array_equal(m.labels_, whole.labels_)
    np.testing.assert_array_equal(m.mapping_, whole.mapping_)


def test_harmless_bins_on_well_sampled_classes_are_kept_as_the_figures_allow(harmless):
    """Ratings independent of the attribute, 200 labeled users a class: cutting changes the held-out excess by
    less than its noise, the scan accepts what the figures accept, and more bins bring the released points closer
    to the users (lower held-out distortion), so the rule cuts as far as the figures let it."""
    _, _, m = harmless
    diff = m.class_bins_excess_ - m.class_bins_excess_[0]
    assert np.all(np.abs(diff) <= 2 * np.maximum(m.class_bins_noise_, 1e-12))      # the figures: harmless
    best, n_accepted = _rule(m.class_bins_excess_, m.class_bins_noise_, m.class_bins_distortion_,
                             m.heldout_tolerance)
    assert m.class_bins_ == m.class_bins_grid_[best]
    assert n_accepted > 1 and m.class_bins_distortion_[1] < m.class_bins_distortion_[0]   # what the figures say
    assert m.class_bins_ > 1 and m.n_clusters_ > m.coarse_centers_.shape[0]


@pytest.mark.parametrize("which", ["shifted", "harmless", "strong"])
def test_the_fit_is_the_fit_with_the_chosen_bins_bit_for_bit(which, shifted, fitted, harmless):
    if which == "shifted":
        (X, y), m, kw = shifted, fitted, dict(n_clusters=10)
    elif which == "harmless":
        X, y, m = harmless
        kw = dict(n_clusters=6, clustering="attribute_free")
    else:
        X, y = _strong_axis()
        kw = dict(n_clusters=3, space="raw", clustering="attribute_free")
        m = _heldout(X, y, **kw)
    direct = QuantizedPrivacyMapper(class_bins=m.class_bins_, random_state=0, class_directions="all", **kw).fit(X, y)
    assert direct.class_bins_ == m.class_bins_
    for name in ("attribute_directions_", "labels_", "cluster_centers_", "prior_", "cost_matrix_", "mapping_",
                 "output_points_", "profile_weights_", "coarse_centers_", "split_thresholds_", "fine_cells_"):
        a, b = getattr(m, name, None), getattr(direct, name, None)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert m.leakage_ == direct.leakage_ and m.distortion_ == direct.distortion_
    assert (m.release_profiles_ != direct.release_profiles_).nnz == 0
    np.testing.assert_array_equal(np.asarray(m.transform(X).todense() if sp.issparse(X) else m.transform(X)),
                                  np.asarray(direct.transform(X).todense() if sp.issparse(X) else direct.transform(X)))
    assert not hasattr(direct, "class_bins_grid_")


def test_the_choice_and_its_figures_survive_save_and_load(shifted, fitted, tmp_path):
    X, _ = shifted
    m2 = _save_load(fitted, os.path.join(tmp_path, "m.npz"))
    assert m2.class_bins == "heldout" and m2.class_bins_ == fitted.class_bins_
    for name in FIGURES:
        np.testing.assert_array_equal(getattr(m2, name), getattr(fitted, name), err_msg=name)
    np.testing.assert_array_equal(m2._quantize(X), fitted._quantize(X))
    assert (m2.transform(X) != fitted.transform(X)).nnz == 0


def test_files_without_class_bins_load_as_the_parameter_says(shifted, tmp_path):
    """Files written before ``class_bins_`` existed: the parameter's bins (the cut cells still checked)."""
    X, y = shifted
    for bins in (1, 2):
        m = QuantizedPrivacyMapper(n_clusters=8, class_bins=bins, random_state=0).fit(X, y)
        assert m.class_bins_ == bins
        del m.class_bins_
        m2 = _save_load(m, os.path.join(tmp_path, f"old{bins}.npz"))
        assert not hasattr(m2, "class_bins_")
        np.testing.assert_array_equal(m2._quantize(X), m.labels_)


def _other_choice(m):
    """Figures edited so that the rule chooses another number of bins than the fitted one."""
    other = 2 if m.class_bins_ == 1 else 1
    m.class_bins_excess_ = np.zeros(len(_BINS_GRID))
    m.class_bins_noise_ = np.zeros(len(_BINS_GRID))
    m.class_bins_distortion_ = np.where(m.class_bins_grid_ == other, 0.0, 1.0)


@pytest.mark.parametrize("edit, message", [
    (_other_choice, "class_bins_ = .* but the held-out figures choose"),
    (lambda m: setattr(m, "class_bins_grid_", np.array([1, 3])), re.escape(f"class_bins_grid_ must be {list(_BINS_GRID)}")),
    (lambda m: setattr(m, "class_bins_noise_", np.where(m.class_bins_grid_ == 2, np.nan, 0.0)),
     f"class_bins_noise_ must be {len(_BINS_GRID)} finite"),
    (lambda m: setattr(m, "class_bins_excess_", m.class_bins_excess_[:-1]),
     f"class_bins_excess_ must be {len(_BINS_GRID)} finite"),
    (lambda m: delattr(m, "class_bins_distortion_"), "class_bins_distortion_ is missing beside the other figures"),
    (lambda m: [delattr(m, n) for n in FIGURES], "class_bins_grid_ is missing: class_bins='heldout' records"),
    (lambda m: delattr(m, "class_bins_"), "class_bins_ is missing: class_bins='heldout' records"),
    (lambda m: setattr(m, "class_bins_", True), "class_bins_ must be an integer >= 1"),
    (lambda m: setattr(m, "class_bins", m.class_bins_), "only class_bins='heldout' records held-out figures"),
])
def test_a_state_whose_choice_does_not_hold_is_refused(fitted, tmp_path, edit, message):
    """``save`` runs the load-time checks: the edited state is refused and no file is written."""
    path = os.path.join(tmp_path, "edited.npz")
    edited = copy.deepcopy(fitted)
    edit(edited)
    # the state edited with its record of the fit parameters (fit_params_), as one edited by hand would be: the
    # refusal of a parameter changed since fit is tests/faults/test_hostile21_io.py's; this test is the state's
    edited.fit_params_ = {name: getattr(edited, name) for name in edited.fit_params_}
    with pytest.raises(ValueError, match=message):
        edited.save(path)
    assert not os.path.exists(path)


def test_a_tampered_file_is_refused(fitted, tmp_path):
    """The figures in the file are recomputed into a choice on load: an edited excess that chooses otherwise
    (the file's digest redone) is refused."""
    path = fitted.save(os.path.join(tmp_path, "m.npz"))
    meta, arrays = _read(path)
    other = 2 if fitted.class_bins_ == 1 else 1
    arrays["fitted/class_bins_excess_"] = np.zeros(len(_BINS_GRID))
    arrays["fitted/class_bins_noise_"] = np.zeros(len(_BINS_GRID))
    arrays["fitted/class_bins_distortion_"] = np.where(fitted.class_bins_grid_ == other, 0.0, 1.0)
    _write(path, meta, arrays, redigest=True)
    with pytest.raises(ValueError, match="the held-out figures choose"):
        privrelease.load(path)


def test_heldout_is_accepted_and_other_strings_are_refused_naming_the_value(shifted, fitted):
    assert fitted.get_params()["class_bins"] == "heldout"
    X, y = shifted
    for bad in ("Heldout", "auto", "heldout ", "2", ""):
        with pytest.raises(InvalidParameterError, match=rf"class_bins.*Got {re.escape(repr(bad))} instead"):
            QuantizedPrivacyMapper(n_clusters=5, class_bins=bad).fit(X, y)


REFUSED = [
    (dict(clustering="plain"), r"class_bins='heldout' .*clustering='plain'"),
    (dict(clustering="attribute_free", class_removal=0.0), r"class_bins='heldout' .*class_removal=0\.0"),
    (dict(n_clusters="heldout"), "cannot be combined with n_clusters='heldout': give one of the two"),
    (dict(class_removal="heldout"), "cannot be combined with class_removal='heldout': give one of the two"),
]


def test_refusals_and_the_cases_with_no_direction(shifted):
    X, y = shifted
    for kw, message in REFUSED:
        with pytest.raises(ValueError, match=message):
            QuantizedPrivacyMapper(**{"n_clusters": 5, **kw}, class_bins="heldout").fit(X, y)
    with pytest.raises(ValueError, match="class_bins='heldout' needs at least 50 labeled users.*class_bins an integer"):
        QuantizedPrivacyMapper(n_clusters=3, class_bins="heldout").fit(X[:40], y[:40])
    # a binary attribute: "auto" resolves to plain clusters, nothing to cut, no rule run: the default fit
    binary = (y > 0).astype(int)
    a = QuantizedPrivacyMapper(n_clusters=6, class_bins="heldout", random_state=0).fit(X, binary)
    b = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(X, binary)
    assert a.class_bins_ == 1 and not any(hasattr(a, n) for n in FIGURES)
    np.testing.assert_array_equal(a.mapping_, b.mapping_)
    # a fixed share above 0 is combined: the rule runs at that share
    r = QuantizedPrivacyMapper(n_clusters=8, class_removal=0.5, class_bins="heldout", random_state=0).fit(X, y)
    assert r.class_removal_ == 0.5 and r.class_bins_ in _BINS_GRID


def test_a_dask_collection_is_refused(shifted):
    da = pytest.importorskip("dask.array")
    X, y = shifted
    Xd = da.from_array(X.toarray(), chunks=(100, X.shape[1]))
    with pytest.raises(ValueError, match="class_bins='heldout' refits .* in memory.*class_bins=1 with a dask"):
        QuantizedPrivacyMapper(n_clusters=5, class_bins="heldout").fit(Xd, y)
