"""Hostile inputs, sixteenth audit: the mappers (weight scale, drowned priors, the raw cap in its own measure,
attribute-free clustering in a small space, the messages) (one test or group per finding)"""

import functools
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import privrelease
from privrelease import ErasureMapper, QuantizedPrivacyMapper
from privrelease.datasets import make_ratings
from privrelease.mapping import leakage as mapping_leakage
from privrelease.mapping import mutual_information


@functools.lru_cache(maxsize=None)
def _ratings(n_users, n_items, hide_from):
    X, y = make_ratings(n_users=n_users, n_items=n_items, random_state=0)[:2]
    y = np.asarray(y).copy()
    y[hide_from:] = -1
    return X, y


def _weights(n):
    return np.random.default_rng(3).uniform(0.5, 2.0, n)


def _eight_classes(n=600):
    return np.random.default_rng(0).integers(0, 8, n)


@functools.lru_cache(maxsize=None)
def _weighted_fit(prior, scale):
    X, y = _ratings(600, 40, 300)
    if prior == "auto8":  # finding 4: the attribute-free clustering of 8 classes (the default prior)
        kw, y = {"n_clusters": 8}, _eight_classes()
    else:
        kw = {"n_clusters": 20, "prior": prior, "max_leakage": 0.02}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return QuantizedPrivacyMapper(random_state=0, **kw).fit(X, y, sample_weight=_weights(600) * scale)


# --------------------------------------------------------------------------- F1: the scale of sample_weight
@pytest.mark.parametrize("prior", ["model", "auto8"])
@pytest.mark.parametrize("scale", [1e-3, 1e-200, 1e200])
def test_constant_factor_on_weights_gives_the_same_fit(prior, scale):
    """A constant factor on sample_weight is no information: prior="model" fitted its model on the raw weights
    (weights of 1e-200 made every C an unfitted model, the prior independent of the attribute and the capped
    mapping the identity, leaking 0.142 bits under the counts); the clusters are the same, and so is the mapping."""
    ref, m = _weighted_fit(prior, 1.0), _weighted_fit(prior, scale)
    np.testing.assert_array_equal(m.labels_, ref.labels_)
    np.testing.assert_allclose(m.prior_, ref.prior_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(m.mapping_, ref.mapping_, rtol=0, atol=1e-4)
    assert abs(m.leakage_ - ref.leakage_) < 1e-6
    raw = float(mutual_information(m.empirical_prior_ @ m.mapping_))
    assert abs(raw - ref.empirical_leakage_) < 1e-4


# --------------------------------------------------------------------------- F2: a drowned prior in every mode
def _two_columns(y):
    second = np.where(y < 0, -1, np.random.default_rng(1).integers(0, 2, y.size))
    return np.column_stack([y, second])


@pytest.mark.parametrize("params", [
    {"prior": "model"},
    {"prior": "model", "max_leakage": 0.01},
    {"prior": "model", "leakage": "maximal_leakage"},
    {"delta": 5.0},
    {"protect": "marginal"},
], ids=["model", "model-cap", "model-maximal", "delta", "marginal"])
def test_drowning_smoothing_is_refused_in_every_mode(params):
    """smoothing=1e12 drowns the 200 labeled users' counts: the fitted prior is independent of the attribute, so
    any mapping was certified (leakage_ 0.0 with empirical_leakage_ 0.222 under prior="model"); refused as the
    counts prior's cap path refuses it, naming smoothing. The default smoothing still fits in that mode. (Since the
    perfect-privacy LP divides a nearly independent class's equations by their largest coefficient it solves the
    marginal mode's 1e12 exactly, a release private under the counts too; 1e15 drowns it. In delta mode, since the
    distortion's rows are solved less their minima, every smoothing up to 1e16 gives a release private under the
    counts, and 1e18 drowns them.)"""
    X, y = _ratings(400, 30, 200)
    smoothing = 1e12
    if params.get("protect") == "marginal":
        y = _two_columns(y)
        smoothing = 1e15
    elif "delta" in params:
        smoothing = 1e18
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        QuantizedPrivacyMapper(n_clusters=8, random_state=0, **params).fit(X, y)
        drowned = rf"smoothing={re.escape(repr(smoothing))} drowns the opted-in users' counts"
        with pytest.raises(ValueError, match=drowned):
            QuantizedPrivacyMapper(n_clusters=8, random_state=0, smoothing=smoothing, **params).fit(X, y)


# --------------------------------------------------------------------------- F3: the raw cap in its own measure
def _maximal_fit_breaking_the_raw_cap(monkeypatch):
    """A maximal-leakage fit certified under the smoothed prior alone (the base solve): its raw maximal leakage
    (0.175 bits) breaks the cap of 0.1 while the raw mutual information (0.061 bits) does not."""
    from privrelease.mappers._base import _BaseMapper
    X, y = _ratings(400, 30, 200)
    with monkeypatch.context() as mp:
        mp.setattr(QuantizedPrivacyMapper, "_solve", _BaseMapper._solve)
        m = QuantizedPrivacyMapper(n_clusters=8, random_state=0, leakage="maximal_leakage", max_leakage=0.1,
                                   smoothing=20).fit(X, y)
    assert m.empirical_leakage_ < 0.1
    assert float(mapping_leakage(m.empirical_prior_, m.mapping_, kind="maximal_leakage")) > 0.1 + 1e-3
    return m


def test_maximal_leakage_raw_cap_is_checked_on_save(tmp_path, monkeypatch):
    m = _maximal_fit_breaking_the_raw_cap(monkeypatch)
    with pytest.raises(ValueError, match="maximal_leakage of fitted.mapping_ under fitted.empirical_prior_"):
        m.save(tmp_path / "m.npz")


def test_maximal_leakage_raw_cap_is_checked_on_load(tmp_path, monkeypatch):
    m = _maximal_fit_breaking_the_raw_cap(monkeypatch)
    with monkeypatch.context() as mp:
        mp.setattr(QuantizedPrivacyMapper, "_check_raw_cap", lambda self, cap: None)
        path = m.save(tmp_path / "m.npz")
    with pytest.raises(ValueError, match="exceeds the cap of 0.1 bits"):
        privrelease.load(path)


# --------------------------------------------------------------------------- F4: attribute-free in a small space
def _fit_warns(X, y, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m = QuantizedPrivacyMapper(random_state=0, **kw).fit(X, y)
    return m, [str(r.message) for r in rec if "between-class directions" in str(r.message)]


@pytest.mark.parametrize("case", ["eight-classes", "joint-3x3"])
def test_attribute_free_keeps_part_of_the_space(case):
    """8 classes (or a 3 x 3 joint attribute) have up to 8 between-class directions; the 6-dimensional taste space
    was projected out whole and the clusters cut in rounding noise (spread 9e-16). At least one dimension is left
    (the strongest n_dims - 1 directions are removed), with a warning."""
    X, _ = _ratings(600, 40, 600)
    if case == "eight-classes":
        y, kw = _eight_classes(), {}
    else:
        rng = np.random.default_rng(0)
        y, kw = np.column_stack([rng.integers(0, 3, 600), rng.integers(0, 3, 600)]), {"protect": "joint"}
    # class_directions="all": the whole span of the offsets (random labels: "auto" would find no significant direction)
    m, warned = _fit_warns(X, y, class_directions="all", **kw)
    E = np.asarray(m._embed(X))
    V = m.attribute_directions_
    n_dims = E.shape[1]
    assert V.shape[0] == n_dims - 1 >= 1
    assert warned and f"none of the {n_dims} dimensions" in warned[0]
    rest = E - (E @ V.T) @ V
    assert rest.std(axis=0).max() > 1e-3 * E.std(axis=0).max()
    # the kept directions are the strongest: the direction of largest class-mean offset lies in their span
    codes = np.unique(y, axis=0, return_inverse=True)[1].ravel() if y.ndim == 2 else y
    offsets = np.array([E[codes == c].mean(axis=0) - E.mean(axis=0) for c in np.unique(codes)])
    strongest = np.linalg.svd(offsets, full_matrices=False)[2][0]
    assert np.linalg.norm(V @ strongest) > 1 - 1e-6


def test_attribute_free_save_load_round_trip(tmp_path):
    X, _ = _ratings(600, 40, 600)
    m, _ = _fit_warns(X, _eight_classes(), n_clusters=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the integer random_state's PrivacyLeakWarning
        back = privrelease.load(m.save(tmp_path / "m.npz"))
    np.testing.assert_array_equal(back.attribute_directions_, m.attribute_directions_)
    assert back.attribute_directions_.shape[0] < back.attribute_directions_.shape[1]


# --------------------------------------------------------------------------- F5: single class from zero weights
@pytest.mark.parametrize("two_d", [False, True])
def test_single_class_from_zero_weights_names_sample_weight(two_d):
    X, y = _ratings(400, 30, 400)
    w = np.r_[1.0, np.zeros(399)]
    yy = np.column_stack([y, y]) if two_d else y
    with pytest.raises(ValueError, match=r"single class.*sample_weight is zero on every user of the other class"):
        QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X, yy, sample_weight=w)


# --------------------------------------------------------------------------- F6: the messages and dtypes
def test_drowning_at_perfect_privacy_says_perfect_privacy():
    """No max_leakage given: the message said "certified under it at max_leakage=0.0 bits"."""
    X, y = _ratings(400, 30, 200)
    with pytest.raises(ValueError, match="smoothing=1e\\+308 drowns") as info:
        QuantizedPrivacyMapper(n_clusters=8, random_state=0, smoothing=1e308).fit(X, y)
    assert "perfectly private" in str(info.value)
    assert "max_leakage=0.0" not in str(info.value)


def test_erasure_dask_fit_records_the_in_memory_string_dtype():
    """dask stores a text column as pyarrow strings ('string', missing pd.NA): column_dtypes_ said 'string' for a
    dask fit and 'str' for the same data in memory, and the two released frames differed in their missing value."""
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 200)
    X = pd.DataFrame({"zip": np.where(rng.random(200) < 0.5 + 0.3 * (2 * a - 1), "75001", "75002"),
                      "k": rng.integers(0, 3, 200)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = ErasureMapper(random_state=0).fit(X, a)
        lazy = ErasureMapper(random_state=0).fit(dd.from_pandas(X, npartitions=2), a)
    assert lazy.column_dtypes_ == mem.column_dtypes_
    assert mem.transform(X).dtypes.tolist() == lazy.transform(X).dtypes.tolist()
