"""Pickle-free persistence: round trips, and tampered or foreign files rejected with a clear reason."""

import json
import pickle
import zipfile

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from privrelease import _persistence
from privrelease._persistence import FORMAT_VERSION, _read, _write, load, save
from privrelease.datasets import make_ratings
from privrelease.mappers import QuantizedPrivacyMapper


@pytest.fixture(scope="module")
def ratings():
    R, a, _ = make_ratings(300, 30, random_state=0)
    return R.tocsr(), a


@pytest.fixture(scope="module")
def fitted(ratings):
    R, a = ratings
    return QuantizedPrivacyMapper(n_clusters=5, delta=0.5, random_state=4).fit(R, a)


@pytest.fixture()
def saved(tmp_path, fitted):
    return save(fitted, tmp_path / "mapper.npz")


def _fitted_items(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and k != "labels_"}


def _assert_same_fit(a, b):
    assert a.get_params() == b.get_params()
    fa, fb = _fitted_items(a), _fitted_items(b)
    assert set(fa) == set(fb)
    for key in fa:
        x, y = fa[key], fb[key]
        if sp.issparse(x):
            assert x.format == y.format and x.dtype == y.dtype and (x != y).nnz == 0, key
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=key)
            assert x.dtype == y.dtype, key
        elif key == "embedding_":
            for k2, v2 in vars(x).items():
                np.testing.assert_array_equal(v2, getattr(y, k2), err_msg=f"embedding_.{k2}")
        elif key == "solver_result_":
            np.testing.assert_array_equal(x.mapping, y.mapping)
            assert (x.leakage, x.status, x.certificate, x.solver) == (y.leakage, y.status, y.certificate, y.solver)
        else:
            assert x == y or (x != x and y != y), key


@pytest.mark.parametrize("kind", ["sparse", "dense", "coo_int"])
def test_round_trip_transforms_identically(tmp_path, ratings, kind):
    R, a = ratings
    X = {"sparse": R, "dense": R.toarray(), "coo_int": sp.coo_matrix(R.astype(np.int64))}[kind]
    m = QuantizedPrivacyMapper(n_clusters=5, delta=0.5, random_state=11).fit(X, a)
    m2 = load(save(m, tmp_path / f"{kind}.npz"))
    _assert_same_fit(m, m2)
    assert not hasattr(m2, "labels_")  # per-training-user labels never leave the server
    out, out2 = m.transform(X), m2.transform(X)
    assert type(out2) is type(out) and out2.dtype == out.dtype
    if sp.issparse(out):
        assert out2.format == out.format and (out != out2).nnz == 0
    else:
        np.testing.assert_array_equal(out, out2)


@pytest.mark.parametrize("params", [dict(metric="hamming", n_clusters=4, delta=6.0),
                                    dict(space="raw", release="representative", n_clusters=4, delta=9.0)])
def test_round_trip_other_configurations(tmp_path, ratings, params):
    R, a = ratings
    m = QuantizedPrivacyMapper(random_state=2, **params).fit(R, a)
    m2 = load(save(m, tmp_path / "m.npz"))
    _assert_same_fit(m, m2)
    assert (m.transform(R) != m2.transform(R)).nnz == 0


def test_round_trip_secure_source_and_feature_names(tmp_path, ratings):
    R, a = ratings
    df = pd.DataFrame(R.toarray(), columns=[f"film {j}" for j in range(R.shape[1])])
    m = QuantizedPrivacyMapper(n_clusters=4, delta=0.6).fit(df, a)  # random_state=None
    m2 = load(save(m, tmp_path / "m.npz"))
    assert m2.random_state is None
    assert m2.feature_names_in_.dtype == object and list(m2.feature_names_in_) == list(df.columns)
    out = m2.transform(df)  # draws from the OS; every row is one of the profiles
    P = m2.release_profiles_.toarray()
    assert all((np.abs(P - row).sum(axis=1) == 0).any() for row in np.asarray(out))
    with pytest.raises(ValueError, match="feature names"):
        m2.transform(df.rename(columns={"film 0": "other"}))


def _erasure_data():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 400)
    df = pd.DataFrame({
        "education": np.where((a + rng.integers(0, 2, 400)) % 3 == 0, "HS", "BSc"),
        "age": (a + rng.integers(0, 3, 400)) * 10,
        "mixed": np.array(["x", 1, "y"], dtype=object)[rng.integers(0, 3, 400)],
    })
    return df, a


def test_erasure_mapper_round_trip(tmp_path):
    from privrelease.mappers import ErasureMapper

    df, a = _erasure_data()
    m = ErasureMapper(delta=0.3, random_state=0).fit(df, a)
    m2 = load(save(m, tmp_path / "e.npz"))
    assert m2.get_params() == m.get_params()
    for key in ("mapping_", "prior_", "input_tuples_", "output_tuples_", "cost_matrix_", "classes_"):
        np.testing.assert_array_equal(getattr(m2, key), getattr(m, key), err_msg=key)
    for c1, c2 in zip(m.categories_, m2.categories_):
        assert c1.tolist() == c2.tolist()
    pd.testing.assert_frame_equal(m2.transform(df), m.transform(df))
    X = df.to_numpy()
    m3 = ErasureMapper(delta=0.3, random_state=5).fit(X, a)
    out, out2 = m3.transform(X), load(save(m3, tmp_path / "e3.npz")).transform(X)
    assert out.dtype == out2.dtype == object
    np.testing.assert_array_equal(out == None, out2 == None)  # noqa: E711
    np.testing.assert_array_equal(out[out != None], out2[out2 != None])  # noqa: E711


def test_erasure_forbidden_transition_refused(tmp_path):
    from privrelease.mappers import ErasureMapper

    df, a = _erasure_data()
    m = ErasureMapper(delta=0.3, random_state=0).fit(df, a)
    path = save(m, tmp_path / "e.npz")

    def edit(arrays):
        M = arrays["fitted/mapping_"]
        C = arrays["fitted/cost_matrix_"]
        r, c = np.argwhere(np.isinf(C))[0]
        M[r] = 0.0
        M[r, c] = 1.0  # a row now releases a *changed* value: rows still sum to 1

    with pytest.raises(ValueError, match=r"mapping_ puts probability 1\.0 on the forbidden transition"):
        load(_tamper(path, edit, redigest=True))

    def edit_codes(arrays):
        arrays["fitted/output_tuples_"][0, 0] = 7

    with pytest.raises(ValueError, match=r"output_tuples_\[0, 0\] = 7 is not a category code of feature 0"):
        load(_tamper(save(m, tmp_path / "e2.npz"), edit_codes, redigest=True))


# ----------------------------------------------------------------------------- refusals on save
def test_save_refusals(tmp_path, fitted):
    with pytest.raises(NotFittedError):
        save(QuantizedPrivacyMapper(), tmp_path / "x.npz")
    with pytest.raises(TypeError, match="save supports .*got an instance of dict"):
        save({}, tmp_path / "x.npz")
    m = QuantizedPrivacyMapper(**{**fitted.get_params(), "random_state": np.random.default_rng(0)})
    m.__dict__.update(_fitted_items(fitted))
    with pytest.raises(ValueError, match="random_state of type Generator cannot be saved portably"):
        save(m, tmp_path / "x.npz")
    from privrelease.utils import SecureRandomSource

    m.set_params(random_state=SecureRandomSource())
    assert load(save(m, tmp_path / "secure.npz")).random_state is None


# ----------------------------------------------------------------------------- tampered files
def _tamper(path, edit_arrays=None, edit_meta=None, redigest=False):
    meta, arrays = _read(path)
    if edit_arrays:
        edit_arrays(arrays)
    if edit_meta:
        edit_meta(meta)
    _write(path, meta, arrays, redigest=redigest)
    return path


def test_flipped_probability_is_named(saved):
    def edit(arrays):
        arrays["fitted/mapping_"][3, 0] += 0.2

    with pytest.raises(ValueError, match=r"mapping_ row 3 sums to 1\.2\d*, expected 1"):
        load(_tamper(saved, edit, redigest=True))  # even with a matching digest


def test_negative_probability(saved):
    def edit(arrays):
        M = arrays["fitted/mapping_"]
        j = int(np.argmax(M[1]))
        M[1, (j + 1) % M.shape[1]] = -0.5
        M[1, j] += 0.5

    with pytest.raises(ValueError, match=r"mapping_ entry \(1, \d\) is negative"):
        load(_tamper(saved, edit, redigest=True))


def test_prior_not_a_distribution(saved):
    def edit(arrays):
        arrays["fitted/prior_"][0, 0] += 0.1

    with pytest.raises(ValueError, match=r"prior_ sums to 1\.1\d*, expected 1"):
        load(_tamper(saved, edit, redigest=True))


def test_shape_change_against_metadata(saved):
    def edit(arrays):
        arrays["fitted/prior_"] = arrays["fitted/prior_"][:, :3] / arrays["fitted/prior_"][:, :3].sum()

    with pytest.raises(ValueError, match=r"array 'fitted/prior_' has shape \(2, 3\).*metadata says shape \(2, 5\)"):
        load(_tamper(saved, edit))


def test_shape_change_consistent_metadata(saved):
    def edit(arrays):
        arrays["fitted/prior_"] = arrays["fitted/prior_"][:, :3] / arrays["fitted/prior_"][:, :3].sum()

    def meta_edit(meta):
        meta["arrays"]["fitted/prior_"]["shape"] = [2, 3]

    with pytest.raises(ValueError, match="prior_ has 3 columns but mapping_ has 5 rows"):
        load(_tamper(saved, edit, meta_edit, redigest=True))


def test_profiles_shape_mismatch(saved):
    def meta_edit(meta):
        meta["fitted"]["n_features_in_"]["v"] = 31

    with pytest.raises(ValueError, match="release_profiles_ has 30 columns, expected n_features_in_=31"):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))


def test_non_finite_centres(saved):
    def edit(arrays):
        arrays["fitted/cluster_centers_"][2, 1] = np.nan

    with pytest.raises(ValueError, match=r"cluster_centers_ has a non-finite entry at \(2, 1\)"):
        load(_tamper(saved, edit, redigest=True))


def test_edited_version(saved):
    def meta_edit(meta):
        meta["format_version"] = FORMAT_VERSION + 1

    with pytest.raises(ValueError, match=f"unsupported format version {FORMAT_VERSION + 1}"):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))


def test_unknown_class_and_format(saved, tmp_path):
    def meta_edit(meta):
        meta["class"] = "os.system"

    with pytest.raises(ValueError, match="unknown estimator class 'os.system'"):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))

    def fmt_edit(meta):
        meta["format"] = "something-else"

    other = save(load(save(QuantizedPrivacyMapper(n_clusters=2, delta=2.0, space="raw", random_state=0).fit(
        np.eye(4), [0, 1, 0, 1]), tmp_path / "b.npz")), tmp_path / "c.npz")
    with pytest.raises(ValueError, match="unknown file format 'something-else'"):
        load(_tamper(other, edit_meta=fmt_edit, redigest=True))


def test_attribute_names_are_checked(saved, tmp_path):
    def meta_edit(meta):
        meta["fitted"]["transform"] = {"t": "value", "v": 1}  # would shadow a method

    with pytest.raises(ValueError, match="'transform' is not a fitted attribute name"):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))


def test_digest_catches_valid_but_altered_mapping(saved):
    def edit(arrays):
        M = arrays["fitted/mapping_"]
        M[0] = M[0][::-1].copy()  # still a probability row

    with pytest.raises(ValueError, match="SHA-256 digest mismatch"):
        load(_tamper(saved, edit))


def test_truncated_file(saved):
    data = saved_bytes = open(saved, "rb").read()
    with open(saved, "wb") as fh:
        fh.write(data[: len(saved_bytes) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load(saved)


def test_pickle_renamed_npz_is_never_unpickled(tmp_path, fitted, monkeypatch):
    path = tmp_path / "mapper.npz"
    with open(path, "wb") as fh:
        pickle.dump(fitted, fh)

    def boom(*args, **kwargs):
        raise AssertionError("pickle.load must not be called")

    monkeypatch.setattr(pickle, "load", boom)
    monkeypatch.setattr(pickle, "loads", boom)
    with pytest.raises(ValueError, match="is a pickle file, not a privrelease .npz archive"):
        load(path)


def test_npz_with_object_array_refused(tmp_path):
    path = tmp_path / "obj.npz"
    np.savez(path, __metadata__=np.array("{}"), evil=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="pickled"):
        load(path)


def test_foreign_zip_and_text(tmp_path):
    z = tmp_path / "other.npz"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("x.npy", b"not numpy")
    with pytest.raises(ValueError, match="has no '__metadata__' entry: not written by privrelease.save"):
        load(z)
    t = tmp_path / "text.npz"
    t.write_text("hello")
    with pytest.raises(ValueError, match=r"does not start with a zip header; first bytes b'hell'"):
        load(t)
    plain = tmp_path / "plain.npz"
    np.savez(plain, a=np.zeros(3))
    with pytest.raises(ValueError, match="has no '__metadata__' entry"):
        load(plain)


def test_metadata_is_plain_json(saved):
    meta, arrays = _read(saved)
    assert meta["format"] == _persistence.FORMAT_NAME and meta["class"] == "QuantizedPrivacyMapper"
    assert len(meta["sha256"]) == 64
    assert "fitted/labels_" not in arrays
    json.dumps(meta)  # round-trips through JSON


def test_random_byte_corruption_is_refused_or_harmless(tmp_path, fitted):
    """Flip random bytes: load raises ValueError, or (bytes the format ignores) loads the same mapper."""
    path = save(fitted, tmp_path / "m.npz")
    raw = bytearray(open(path, "rb").read())
    rng = np.random.default_rng(0)
    outcomes = {"refused": 0, "same": 0}
    for trial in range(150):
        data = bytearray(raw)
        for _ in range(int(rng.integers(1, 3))):
            data[int(rng.integers(len(data)))] = int(rng.integers(256))
        damaged = tmp_path / f"d{trial}.npz"
        damaged.write_bytes(bytes(data))
        try:
            m = load(damaged)
        except ValueError:
            outcomes["refused"] += 1
            continue
        _assert_same_fit(fitted, m)  # a damaged file never loads as a different mapper
        outcomes["same"] += 1
    assert outcomes["refused"] > 100
