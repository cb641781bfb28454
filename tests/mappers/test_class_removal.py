"""QuantizedPrivacyMapper(class_removal=...): attribute-free clustering that removes a share of the between-class
component, fixed or chosen on held-out labeled users (docs/frontier.md, section (k)).

The guarantee: the clusters are formed, and every user is assigned, after the SAME partial projection, and the
prior is counted on that partition, so the certificate covers the release whatever the share.
"""

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils._param_validation import InvalidParameterError

import privrelease
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mappers._quantize import kmeans
from privrelease.mappers._quantized import _REMOVAL_GRID, _heldout_choice, _removal_choice
from privrelease.utils import check_random_source


@pytest.fixture(scope="module")
def data(class_shifted_ratings):
    return class_shifted_ratings()          # 240 users, 3 classes whose tastes differ


class _FullRemovalBeforeTheParameter(QuantizedPrivacyMapper):
    """The attribute-free projection and assignment exactly as written before ``class_removal`` existed."""

    def _attribute_free(self, E, a_idx, w_lab):
        self.attribute_directions_ = np.zeros((0, E.shape[1]))
        if self._clustering(a_idx) != "attribute_free":
            return E
        E = np.asarray(E.toarray() if sp.issparse(E) else E, dtype=np.float64)
        mean = np.average(E, axis=0, weights=w_lab)
        offsets = [np.average(E[a_idx == a], axis=0, weights=w_lab[a_idx == a]) - mean for a in np.unique(a_idx)]
        _, s, Vt = np.linalg.svd(np.asarray(offsets), full_matrices=False)
        self.attribute_directions_ = Vt[s > 1e-10 * max(float(s.max()), np.finfo(float).tiny)]
        V = self.attribute_directions_
        return E - ((E - mean) @ V.T) @ V

    def _nearest_centers(self, E, centers=None):
        centers = self.cluster_centers_ if centers is None else centers
        V = self.attribute_directions_
        if V.shape[0] == 0:
            return self._distances(E, centers).argmin(axis=1)
        E = np.asarray(E.toarray() if sp.issparse(E) else E, dtype=np.float64)
        return self._distances(E - (E @ V.T) @ V, centers - (centers @ V.T) @ V).argmin(axis=1)


def test_full_removal_is_the_mapper_before_the_parameter_bit_for_bit(data):
    X, y = data
    # default: class_removal=1.0; class_directions="all" is the whole span the mapper removed before the parameters
    new = QuantizedPrivacyMapper(n_clusters=10, class_directions="all", random_state=0).fit(X, y)
    old = _FullRemovalBeforeTheParameter(n_clusters=10, random_state=0).fit(X, y)
    assert new.class_removal_ == 1.0 and new.attribute_directions_.shape[0] == 2
    for name in ("attribute_directions_", "labels_", "cluster_centers_", "prior_", "mapping_"):
        np.testing.assert_array_equal(getattr(new, name), getattr(old, name), err_msg=name)
    assert (new.release_profiles_ != old.release_profiles_).nnz == 0
    np.testing.assert_array_equal(new.transform(X).toarray(), old.transform(X).toarray())


@pytest.mark.parametrize("share", [0.25, 0.5, 0.75])
def test_clusters_and_users_share_one_partial_projection(data, share):
    """k-means runs on ``e - share * P(e - mean)``; every user joins the nearest centre after the same projection."""
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=10, class_removal=share, random_state=0).fit(X, y)
    assert m.class_removal_ == share
    E, V, C = m._embed(X), m.attribute_directions_, m.cluster_centers_
    E = E.toarray() if sp.issparse(E) else E
    # independent: the clustering is k-means of the partially projected points with the mapper's seed
    mean = np.average(E, axis=0, weights=np.ones(E.shape[0]))
    proj = E - share * (((E - mean) @ V.T) @ V)
    _, labels = kmeans(proj, 10, check_random_source(0).spawn_seed())
    used = np.unique(labels)
    np.testing.assert_array_equal(m.labels_, np.searchsorted(used, labels))
    # independent nearest centre after the partial projection (the constant cancels)
    d = (((E - share * E @ V.T @ V)[:, None, :] - (C - share * C @ V.T @ V)[None]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(m._quantize(X), d.argmin(axis=1))
    np.testing.assert_array_equal(m._quantize(X), m.labels_)            # the partition the prior counts
    counts = np.zeros((3, m.n_clusters_))
    np.add.at(counts, (y, m._quantize(X)), 1.0)
    np.testing.assert_allclose(counts / counts.sum(), m.empirical_prior_, rtol=0, atol=1e-15)
    assert m.leakage_ < 1e-6
    assert {tuple(r) for r in m.transform(X).toarray()} <= {tuple(r) for r in m.release_profiles_.toarray()}


def test_no_removal_is_plain_k_means_on_the_same_points_and_seed(data):
    X, y = data
    none = QuantizedPrivacyMapper(n_clusters=10, clustering="attribute_free", class_removal=0.0,
                                  random_state=0).fit(X, y)
    plain = QuantizedPrivacyMapper(n_clusters=10, clustering="plain", random_state=0).fit(X, y)
    assert none.class_removal_ == 0.0 == plain.class_removal_ and none.attribute_directions_.shape[0] == 0
    for name in ("labels_", "cluster_centers_", "mapping_"):
        np.testing.assert_array_equal(getattr(none, name), getattr(plain, name), err_msg=name)


def test_a_smaller_share_leaves_the_clusters_more_class_pure():
    """The share interpolates between attribute-free (1) and plain (0) clusters: on points whose classes sit far
    apart along their own directions, full removal mixes the classes and no removal separates them."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 300)
    X = np.hstack([8.0 * np.eye(3)[y] + rng.normal(0, 0.3, (300, 3)), rng.normal(0, 1, (300, 3))])
    purity = {}
    for share in (0.0, 1.0):
        m = QuantizedPrivacyMapper(n_clusters=6, space="raw", clustering="attribute_free", class_removal=share,
                                   random_state=0).fit(X, y)
        purity[share] = sum(np.bincount(y[m.labels_ == j]).max() for j in range(m.n_clusters_)) / y.size
    assert purity[0.0] > 0.95 and purity[1.0] < 0.6


@pytest.mark.parametrize("bad", [float("nan"), -0.1, 1.5, True, "auto", "0.5", [0.5], None])
def test_invalid_shares_are_refused_naming_the_value(data, bad):
    X, y = data
    with pytest.raises(InvalidParameterError, match="class_removal"):
        QuantizedPrivacyMapper(n_clusters=5, class_removal=bad).fit(X, y)


def test_a_share_with_plain_clusters_is_refused_and_ignored_when_auto_resolves_to_plain(data):
    X, y = data
    for value in (0.5, "heldout"):
        with pytest.raises(ValueError, match=rf"class_removal={value!r}.*clustering='plain'"):
            QuantizedPrivacyMapper(n_clusters=5, clustering="plain", class_removal=value).fit(X, y)
    binary = np.where(y > 0, 1, 0)                   # "auto" resolves to plain clusters for two classes
    a = QuantizedPrivacyMapper(n_clusters=6, class_removal=0.5, random_state=0).fit(X, binary)
    b = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(X, binary)
    assert a.class_removal_ == 0.0 and a.attribute_directions_.shape[0] == 0
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.mapping_, b.mapping_)
    with pytest.raises(ValueError, match="n_clusters='heldout'"):
        QuantizedPrivacyMapper(n_clusters="heldout", class_removal="heldout").fit(X, y)


def _save_load(m, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the integer random_state's PrivacyLeakWarning
        return privrelease.load(m.save(os.path.join(tmp_path, "m.npz")))


def test_the_share_and_its_partition_survive_save_and_load(data, tmp_path):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=10, class_removal=0.5, random_state=0).fit(X, y)
    m2 = _save_load(m, tmp_path)
    assert m2.class_removal_ == 0.5
    np.testing.assert_array_equal(m2.attribute_directions_, m.attribute_directions_)
    np.testing.assert_array_equal(m2._quantize(X), m.labels_)
    # a file from before the parameter (no class_removal_) is the full removal
    full = QuantizedPrivacyMapper(n_clusters=10, random_state=0).fit(X, y)
    del full.class_removal_
    np.testing.assert_array_equal(_save_load(full, tmp_path)._quantize(X), full.labels_)


@pytest.mark.parametrize("edit, message", [
    (lambda m: setattr(m, "class_removal_", 0.25), "class_removal_ = 0.25 but class_removal=0.5"),
    (lambda m: setattr(m, "class_removal_", 0.0), "class_removal_ = 0 but attribute_directions_ has rows"),
    (lambda m: setattr(m, "class_removal_", 1.5), "must be a number in"),
    (lambda m: setattr(m, "attribute_directions_", 2.0 * m.attribute_directions_), "orthonormal"),
    (lambda m: setattr(m, "attribute_directions_", np.zeros((0, m.cluster_centers_.shape[1]))),
     "no attribute_directions_"),
    (lambda m: delattr(m, "class_removal_"), "class_removal_ is missing"),
])
def test_a_state_whose_share_does_not_hold_is_refused(data, edit, message, tmp_path):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=10, class_removal=0.5, random_state=0).fit(X, y)
    edit(m)
    with pytest.raises(ValueError, match=message):
        m.save(os.path.join(tmp_path, "m.npz"))   # save runs the load-time checks and writes nothing


# ---------------------------------------------------------------- class_removal="heldout"
def _shift_along_the_main_axis(seed=2, n=400, shift=0.2):
    """The users spread widely along one axis; the classes' means differ slightly along that same axis, so the
    between-class direction is the users' main axis."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    main = rng.normal(0, 3.0, n) + shift * (y - 1)
    X = np.column_stack([main, rng.normal(0, 0.3, (n, 3))])
    return X + 20.0, y


def _heldout(X, y, **kw):
    # class_directions="all": the share of the whole span (the classes differ only slightly along the main axis, which
    # the significance rule of "auto" would not remove at all)
    return QuantizedPrivacyMapper(n_clusters=8, space="raw", clustering="attribute_free", class_removal="heldout",
                                  class_directions="all", random_state=0, **kw).fit(X, y)


def test_removal_choice_is_a_step_down_scan_relative_to_the_full_removal():
    """Brute force over random figures: the full removal is always accepted (even with a large excess of its
    own), the accepted shares are the prefix whose excess stays within the tolerance of the full removal's, the
    least distortion among them is chosen, and a larger tolerance never chooses a larger distortion."""
    rng = np.random.default_rng(0)
    for _ in range(500):
        excess = rng.normal(0.02, 0.02, 5)
        dist = rng.random(5)
        tol = rng.choice([0.0, 0.01, 0.02, 0.05])
        prefix = 1
        while prefix < 5 and excess[prefix] - excess[0] <= tol:
            prefix += 1
        i = _removal_choice(excess, dist, tol)
        assert i == int(np.argmin(dist[:prefix]))
        assert dist[_removal_choice(excess, dist, tol + 0.03)] <= dist[i]


def test_heldout_share_is_a_grid_value_chosen_from_its_figures_and_reproducible():
    X, y = _shift_along_the_main_axis()
    m, again = _heldout(X, y), _heldout(X, y)
    np.testing.assert_array_equal(m.class_removal_grid_, _REMOVAL_GRID)
    for name in ("class_removal_excess_", "class_removal_noise_", "class_removal_distortion_"):
        np.testing.assert_array_equal(getattr(m, name), getattr(again, name))
    assert m.class_removal_ == again.class_removal_ in _REMOVAL_GRID
    i = _removal_choice(m.class_removal_excess_, m.class_removal_distortion_, m.heldout_tolerance)
    assert m.class_removal_ == m.class_removal_grid_[i]
    # the scan: the full removal always accepted, then a prefix of shares within the tolerance of its excess
    ok = m.class_removal_excess_ - m.class_removal_excess_[0] <= m.heldout_tolerance
    stop = int(np.argmin(ok)) if not ok.all() else ok.size
    assert i == int(np.argmin(m.class_removal_distortion_[:stop]))
    # the fit is the fit with the chosen share as a number
    fixed = QuantizedPrivacyMapper(n_clusters=8, space="raw", clustering="attribute_free", class_directions="all",
                                   class_removal=m.class_removal_, random_state=0).fit(X, y)
    np.testing.assert_array_equal(m.labels_, fixed.labels_)
    np.testing.assert_array_equal(m.mapping_, fixed.mapping_)
    np.testing.assert_array_equal(m._quantize(X), m.labels_)


def test_removing_all_of_the_main_axis_costs_the_most_held_out_distortion():
    """With a budget that lets the mapping keep the clusters (0.05 bits), removing the whole between-class
    component removes each user's own position along the main axis (clusters are then formed on the noise
    coordinates), while any smaller share keeps the axis, scaled: the full removal has the largest held-out
    distortion, so once the scan accepts the second share the rule keeps part of the axis."""
    X, y = _shift_along_the_main_axis()
    m = _heldout(X, y, max_leakage=0.05)
    d = m.class_removal_distortion_
    assert d[0] > d[1:].max()
    if m.class_removal_excess_[1] - m.class_removal_excess_[0] <= m.heldout_tolerance:
        assert m.class_removal_ < 1.0
    assert m.leakage_ <= 0.05 + 1e-6


def test_heldout_figures_are_saved_and_rechecked(tmp_path):
    X, y = _shift_along_the_main_axis()
    m = _heldout(X, y)
    m2 = _save_load(m, tmp_path)
    assert m2.class_removal_ == m.class_removal_
    np.testing.assert_array_equal(m2.class_removal_distortion_, m.class_removal_distortion_)
    # figures that choose another share than the one fitted are refused
    other = next(v for v in _REMOVAL_GRID if v not in (m.class_removal_, 0.0))
    m.class_removal_distortion_ = np.where(m.class_removal_grid_ == other, -1.0, m.class_removal_distortion_)
    m.class_removal_excess_ = np.zeros_like(m.class_removal_excess_)
    with pytest.raises(ValueError, match="the held-out figures choose"):
        m.save(os.path.join(tmp_path, "m2.npz"))


def test_heldout_share_needs_enough_labeled_users():
    X, y = _shift_along_the_main_axis(n=40)
    with pytest.raises(ValueError, match="class_removal='heldout' needs at least 50 labeled users"):
        _heldout(X, y)


def test_heldout_is_refused_on_a_dask_collection():
    # a dask fit clusters plainly, so there is no share to choose: "heldout" used to resolve silently to 0 (plain
    # clusters) where the same users in memory got the rule's choice; refused like the other two held-out rules
    da = pytest.importorskip("dask.array")
    X, y = _shift_along_the_main_axis()
    Xd = da.from_array(X, chunks=(100, X.shape[1]))
    with pytest.raises(ValueError, match="class_removal='heldout' refits .* in memory.*class_removal a number with a dask"):
        QuantizedPrivacyMapper(n_clusters=8, space="raw", class_removal="heldout", random_state=0).fit(Xd, y)
    # a number is still ignored there, as documented (plain clusters)
    m = QuantizedPrivacyMapper(n_clusters=8, space="raw", class_removal=0.5, random_state=0).fit(Xd, y)
    assert m.class_removal_ == 0.0
