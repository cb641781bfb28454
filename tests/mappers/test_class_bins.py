"""QuantizedPrivacyMapper(class_bins=N): each attribute-free cell cut into N bins along the first between-class
direction (docs/frontier.md, section (l)).

The guarantee: a user's cell is a fixed function of her point learnt on the labeled users (the nearest coarse centre
after the clustering's projection, then her bin among that cell's thresholds), the labeled users' cells by that same
function are the ones the prior counts, so the certificate covers the release.
"""

import copy
import os
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils._param_validation import InvalidParameterError

import privrelease
from privrelease._persistence import _read, _write
from privrelease.mappers import QuantizedPrivacyMapper


@pytest.fixture(scope="module")
def data(class_shifted_ratings):
    X, y = class_shifted_ratings(n=300)      # 3 classes whose tastes differ
    y = y.copy()
    y[::5] = -1                              # a fifth of the users are protected (no label)
    return X, y


@pytest.fixture(scope="module")
def split(data):
    X, y = data
    return QuantizedPrivacyMapper(n_clusters=10, class_bins=2, random_state=0).fit(X, y)


def _coordinates(m, X):
    E = m._embed(X)
    return np.asarray(E.toarray() if sp.issparse(E) else E)


def test_one_bin_leaves_the_cells_of_the_clustering(data):
    X, y = data
    default = QuantizedPrivacyMapper(n_clusters=10, random_state=0).fit(X, y)
    one = QuantizedPrivacyMapper(n_clusters=10, random_state=0, class_bins=1).fit(X, y)
    for m in (default, one):
        # the significant part of the two between-class directions ("auto": the data's weaker direction is noise)
        assert m.attribute_directions_.shape[0] == m.n_class_directions_ >= 1
        assert not any(hasattr(m, n) for n in ("coarse_centers_", "split_thresholds_", "fine_cells_"))
        # every user's cell is the nearest centre after the clustering's projection, computed here independently
        E, V, C = _coordinates(m, X), m.attribute_directions_, m.cluster_centers_
        d = (((E - E @ V.T @ V)[:, None, :] - (C - C @ V.T @ V)[None]) ** 2).sum(axis=2)
        np.testing.assert_array_equal(m._quantize(X), d.argmin(axis=1))
        np.testing.assert_array_equal(m._quantize(X[y >= 0]), m.labels_)
    for name in ("labels_", "cluster_centers_", "prior_", "mapping_"):
        np.testing.assert_array_equal(getattr(one, name), getattr(default, name), err_msg=name)
    assert (one.transform(X) != default.transform(X)).nnz == 0


def test_the_partition_the_prior_counts_is_the_one_every_user_gets(data, split):
    X, y = data
    m, lab = split, y >= 0
    # the labeled users' cells by the fitted partition are the cells the prior was counted on
    np.testing.assert_array_equal(m._quantize(X[lab]), m.labels_)
    counts = np.zeros((3, m.n_clusters_))
    np.add.at(counts, (y[lab], m.labels_), 1.0)
    np.testing.assert_allclose(m.empirical_prior_, counts / counts.sum(), rtol=0, atol=1e-15)
    p_a = counts.sum(axis=1) / counts.sum()
    smoothed = counts + m.smoothing * p_a[:, None]
    np.testing.assert_allclose(m.prior_, smoothed / smoothed.sum(), rtol=1e-12, atol=1e-15)
    # certified: perfect privacy under that prior
    assert abs(m.leakage_) < 1e-9 and m.max_leakage is None
    # every user, protected ones included, gets the cell computed independently: the nearest coarse centre after
    # the projection, then the bin of her coordinate along the first between-class direction
    E, V, C = _coordinates(m, X), m.attribute_directions_, m.coarse_centers_
    d = (((E - E @ V.T @ V)[:, None, :] - (C - C @ V.T @ V)[None]) ** 2).sum(axis=2)
    coarse = d.argmin(axis=1)
    t = E @ V[0]
    b = (t[:, None] > m.split_thresholds_[coarse]).sum(axis=1)
    cells = m._quantize(X)
    np.testing.assert_array_equal(cells, m.fine_cells_[coarse, b])
    assert cells.min() >= 0 and cells.max() < m.n_clusters_
    # the fine count is between the coarse count and twice it, and the cut did cut
    kc = m.coarse_centers_.shape[0]
    assert kc < m.n_clusters_ <= 2 * kc and kc <= 10


def test_each_cell_is_cut_at_its_members_median_and_its_centre_is_their_mean(data, split):
    X, y = data
    m, lab = split, y >= 0
    E = _coordinates(m, X[lab])
    t = E @ m.attribute_directions_[0]
    thr, fine = m.split_thresholds_, m.fine_cells_
    for c in range(m.coarse_centers_.shape[0]):
        members = np.isin(m.labels_, fine[c])
        tc = t[members]
        if tc.size >= 2:                    # the threshold halves the cell (no ties on continuous coordinates)
            assert np.sum(tc <= thr[c, 0]) == tc.size // 2
        for f in np.unique(fine[c]):        # each fine cell's members on the right side of its threshold
            bins = np.flatnonzero(fine[c] == f)
            tf = t[m.labels_ == f]
            if bins.min() > 0:
                assert np.all(tf > thr[c, bins.min() - 1])
            if bins.max() < thr.shape[1]:
                assert np.all(tf <= thr[c, bins.max()])
    for f in range(m.n_clusters_):
        np.testing.assert_allclose(m.cluster_centers_[f], E[m.labels_ == f].mean(axis=0), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(m.output_points_, m.cluster_centers_)


def test_three_bins_and_a_budget(data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=8, class_bins=3, max_leakage=0.05, random_state=0).fit(X, y)
    kc = m.coarse_centers_.shape[0]
    assert m.split_thresholds_.shape == (kc, 2) and m.fine_cells_.shape == (kc, 3)
    assert np.all(np.diff(m.split_thresholds_, axis=1) >= 0)
    assert kc < m.n_clusters_ <= 3 * kc
    assert m.leakage_ <= 0.05 + 1e-6
    np.testing.assert_array_equal(m._quantize(X[y >= 0]), m.labels_)


def test_transform_keeps_shape_type_and_releases_profiles(data, split):
    X, _ = data
    P = split.release_profiles_.toarray()
    for Xin in (X, X.tocsc(), X.toarray(), sp.csr_array(X)):
        out = split.transform(Xin)
        assert out.shape == X.shape and type(out) is type(Xin)
        if sp.issparse(Xin):
            assert out.format == Xin.format
        dense = out.toarray() if sp.issparse(out) else out
        assert {tuple(r) for r in dense} <= {tuple(r) for r in P}


def _save_load(m, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the integer random_state's PrivacyLeakWarning
        return privrelease.load(m.save(path))


def test_the_cut_cells_survive_save_and_load(data, split, tmp_path):
    X, _ = data
    m2 = _save_load(split, os.path.join(tmp_path, "m.npz"))
    for name in ("coarse_centers_", "split_thresholds_", "fine_cells_", "cluster_centers_"):
        np.testing.assert_array_equal(getattr(m2, name), getattr(split, name), err_msg=name)
    np.testing.assert_array_equal(m2._quantize(X), split._quantize(X))
    assert (m2.transform(X) != split.transform(X)).nnz == 0        # same seed, same cells, same release


def _tamper(path, edit_arrays, edit_meta=None):
    meta, arrays = _read(path)
    edit_arrays(arrays)
    if edit_meta:
        edit_meta(meta)
    _write(path, meta, arrays, redigest=True)
    return path


def _set(name, index, value):
    def edit(arrays):
        arrays[f"fitted/{name}"][index] = value
    return edit


def _shift_row(name, row):
    def edit(arrays):
        arrays[f"fitted/{name}"][row] -= 1
    return edit


@pytest.mark.parametrize("edit, message", [
    (_set("split_thresholds_", (3, 0), np.inf), r"split_thresholds_ has a non-finite entry at \(3, 0\): inf"),
    (_set("split_thresholds_", (1, 0), np.nan), r"split_thresholds_ has a non-finite entry at \(1, 0\)"),
    (_set("coarse_centers_", (0, 1), np.nan), r"coarse_centers_ has a non-finite entry at \(0, 1\)"),
    (_set("fine_cells_", (0, 1), 5), "fine_cells_ must number"),
    (_set("fine_cells_", (0, 0), 1), "fine_cells_ must number"),
    (_shift_row("fine_cells_", 1), "fine_cells_ must number"),     # a fine cell shared by two coarse cells
])
def test_a_tampered_file_is_refused(split, tmp_path, edit, message):
    path = split.save(os.path.join(tmp_path, "m.npz"))
    with pytest.raises(ValueError, match=message):
        privrelease.load(_tamper(path, edit))


def test_a_tampered_shape_is_refused(split, tmp_path):
    def edit(arrays):
        arrays["fitted/split_thresholds_"] = arrays["fitted/split_thresholds_"][:-1]

    def meta_edit(meta):
        meta["arrays"]["fitted/split_thresholds_"]["shape"][0] -= 1

    path = split.save(os.path.join(tmp_path, "m.npz"))
    kc = split.coarse_centers_.shape[0]
    with pytest.raises(ValueError, match=re.escape(f"split_thresholds_ must be a float array of shape {(kc, 1)}")):
        privrelease.load(_tamper(path, edit, meta_edit))


@pytest.mark.parametrize("edit, message", [
    (lambda m: setattr(m, "class_bins", 3), r"class_bins_ = 2 but class_bins=3"),
    (lambda m: [setattr(m, "class_bins", 3), setattr(m, "class_bins_", 3)],
     r"split_thresholds_ must be a float array of shape"),
    (lambda m: setattr(m, "class_bins", 1), "class_bins_ = 2 but class_bins=1"),
    (lambda m: [setattr(m, "class_bins", 1), setattr(m, "class_bins_", 1)], "fine_cells_ is present but class_bins=1"),
    (lambda m: delattr(m, "class_bins_") or setattr(m, "class_bins", 1), "fine_cells_ is present but class_bins=1"),
    (lambda m: delattr(m, "fine_cells_"), "fine_cells_ is missing"),
    (lambda m: [delattr(m, n) for n in ("coarse_centers_", "split_thresholds_", "fine_cells_")],
     "fine_cells_ is missing: class_bins=2"),
    (lambda m: setattr(m, "split_thresholds_", m.split_thresholds_.astype(np.int64)), "float array"),
    (lambda m: setattr(m, "coarse_centers_", m.coarse_centers_[:, :-1]), "coarse_centers_ has"),
    (lambda m: setattr(m, "fine_cells_", m.fine_cells_.astype(np.float64)), "fine_cells_ must be an integer"),
])
def test_a_state_whose_cut_does_not_hold_is_refused(split, tmp_path, edit, message):
    m = copy.deepcopy(split)
    edit(m)
    # the state edited with its record of the fit parameters (fit_params_), as one edited by hand would be: the
    # refusal of a parameter changed since fit is tests/faults/test_hostile21_io.py's; this test is the state's
    m.fit_params_ = {name: getattr(m, name) for name in m.fit_params_}
    with pytest.raises(ValueError, match=message):
        m.save(os.path.join(tmp_path, "m.npz"))   # save runs the load-time checks and writes nothing


def test_thresholds_out_of_order_are_refused(tmp_path, data):
    X, y = data
    m = QuantizedPrivacyMapper(n_clusters=6, class_bins=3, random_state=0).fit(X, y)
    m.split_thresholds_ = m.split_thresholds_[:, ::-1].copy()
    with pytest.raises(ValueError, match="must not decrease along a row"):
        m.save(os.path.join(tmp_path, "m.npz"))


@pytest.mark.parametrize("bad", [0, -1, 2.5, "x", True, None])
def test_invalid_bins_are_refused_naming_the_value(data, bad):
    X, y = data
    with pytest.raises(InvalidParameterError, match=rf"class_bins.*Got {re.escape(repr(bad))} instead"):
        QuantizedPrivacyMapper(n_clusters=5, class_bins=bad).fit(X, y)


def test_bins_without_a_direction_are_refused_or_ignored_as_class_removal_is(data):
    X, y = data
    with pytest.raises(ValueError, match=r"class_bins=2 .*clustering='plain'"):
        QuantizedPrivacyMapper(n_clusters=5, clustering="plain", class_bins=2).fit(X, y)
    with pytest.raises(ValueError, match=r"class_bins=3 .*class_removal=0\.0"):
        QuantizedPrivacyMapper(n_clusters=5, clustering="attribute_free", class_removal=0.0, class_bins=3).fit(X, y)
    binary = np.where(y >= 0, (y > 0).astype(int), -1)        # "auto" resolves to plain clusters for two classes
    a = QuantizedPrivacyMapper(n_clusters=6, class_bins=2, random_state=0).fit(X, binary)
    b = QuantizedPrivacyMapper(n_clusters=6, random_state=0).fit(X, binary)
    assert a.attribute_directions_.shape[0] == 0 and not hasattr(a, "fine_cells_")
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.mapping_, b.mapping_)


def test_the_heldout_rules_cut_every_fold(data, tmp_path, monkeypatch):
    """The folds of ``n_clusters="heldout"`` and ``class_removal="heldout"`` are refitted through ``_cluster`` and
    sent through ``_nearest_centers``, so they cut their cells as the final fit does; the chosen number counts the
    coarse cells (the fitted fine cells may exceed it) and the file is accepted on load."""
    X, y = data
    calls = []
    cut = QuantizedPrivacyMapper._split_cells
    monkeypatch.setattr(QuantizedPrivacyMapper, "_split_cells", lambda self, E, w: calls.append(E.shape[0])
                        or cut(self, E, w))
    m = QuantizedPrivacyMapper(n_clusters="heldout", class_bins=2, random_state=0).fit(X, y)
    n_lab = int(np.sum(y >= 0))
    assert len(calls) == 5 * m.heldout_n_clusters_.size + 1 and calls[-1] == n_lab and max(calls[:-1]) < n_lab
    assert m.coarse_centers_.shape[0] <= m.n_clusters_ <= 2 * m.coarse_centers_.shape[0]
    assert m.n_clusters_ > m.coarse_centers_.shape[0]
    m2 = _save_load(m, os.path.join(tmp_path, "h.npz"))
    np.testing.assert_array_equal(m2._quantize(X), m._quantize(X))
    # the figures differ from the uncut folds' (the folds' partitions are the cut ones)
    plain = QuantizedPrivacyMapper(n_clusters="heldout", random_state=0).fit(X, y)
    assert not np.array_equal(plain.heldout_distortion_, m.heldout_distortion_)

    calls.clear()
    r = QuantizedPrivacyMapper(n_clusters=8, class_removal="heldout", class_bins=2, random_state=0).fit(X, y)
    # every share but 0 (no direction to cut along) cuts its folds' cells; then the final fit, unless it chose 0
    assert len(calls) == 5 * 4 + (r.class_removal_ > 0)
    np.testing.assert_array_equal(r._quantize(X[y >= 0]), r.labels_)


def test_dask_transform_uses_the_cut_cells(data, split):
    da = pytest.importorskip("dask.array")
    import dask
    X, _ = data
    m = copy.deepcopy(split)
    k = m.n_clusters_
    m.mapping_ = np.eye(k, k + 1)        # a deterministic mapping: the release shows each user's cell
    m._guard_fitted_state()  # taken as the fitted mapping (transform refuses an array edited after fit)
    Xd = da.from_array(X, chunks=(70, X.shape[1]), asarray=False)
    with dask.config.set(scheduler="synchronous"):
        got = m.transform(Xd).compute()
    assert sp.issparse(got) and got.shape == X.shape
    expected = m.release_profiles_[m._quantize(X)]
    assert (got != expected).nnz == 0
    # the profiles of the fine cells differ, so the rows tell the cells apart
    assert len({tuple(r) for r in m.release_profiles_.toarray()[:k]}) > m.coarse_centers_.shape[0]
