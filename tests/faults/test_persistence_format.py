"""Pickle-free persistence: round trips, and tampered, lying or foreign files rejected with a clear reason.

Replays the hostile edits of issue 11: a keyed HMAC refuses any edit; without a key every stored
claim is recomputed from the stored arrays, so the worst an editor can make is an honest mapper.
"""

import json
import pickle
import zipfile

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from privrelease import _persistence
from privrelease._persistence import FORMAT_VERSION, _read, _write, load, save
from privrelease.datasets import make_ratings
from privrelease.exceptions import PrivacyLeakWarning
from privrelease.mappers import QuantizedPrivacyMapper

# loading a mapper with an integer seed warns (tested on its own below)
pytestmark = pytest.mark.filterwarnings("ignore:the loaded .* has an integer random_state")
KEY = b"a secret of 32 bytes, not shared"


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


def test_feature_count_edit(saved, tmp_path, ratings):
    def meta_edit(meta):
        meta["fitted"]["n_features_in_"]["v"] = 31

    with pytest.raises(ValueError, match="embedding_ is for 30 items, expected n_features_in_=31"):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))
    R, a = ratings
    raw = save(QuantizedPrivacyMapper(n_clusters=4, space="raw", delta=9.0, random_state=0).fit(R, a),
               tmp_path / "raw.npz")
    with pytest.raises(ValueError, match="cluster_centers_ has 30 columns, expected n_features_in_=31"):
        load(_tamper(raw, edit_meta=meta_edit, redigest=True))


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


def test_checksum_catches_accidental_change(saved):
    def edit(arrays):
        arrays["fitted/release_profiles_/data"][0] = arrays["fitted/release_profiles_/data"][1]  # still on scale

    with pytest.raises(ValueError, match="SHA-256 checksum mismatch"):
        load(_tamper(saved, edit))


@pytest.mark.parametrize("fmt", ["coo", "lil", "dok", "bsr", "dia", "csc"])
def test_release_profiles_stored_in_another_sparse_format_are_refused(saved, fmt):
    # fit stores CSR; another format used to load and fail in transform ("'coo_matrix' object is not subscriptable")
    def meta_edit(meta):
        meta["fitted"]["release_profiles_"]["format"] = fmt

    with pytest.raises(ValueError, match=f"release_profiles_ is stored as '{fmt}', expected 'csr'"):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))


def test_release_profiles_with_an_item_stored_twice_are_refused(saved, ratings):
    # the two values were released summed: 8.47 on a 1-5 scale
    def edit(arrays):
        ind = arrays["fitted/release_profiles_/indices"]
        ind[1] = ind[0]

    with pytest.raises(ValueError, match=r"stores 1 \(output, item\) pair\(s\) more than once"):
        load(_tamper(saved, edit, redigest=True))


def test_release_profiles_of_stored_zeros_are_refused(saved, fitted):
    # every user was released as stored zeros ("not rated"): nothing
    n = fitted.release_profiles_.nnz

    def edit(arrays):
        arrays["fitted/release_profiles_/data"][:] = 0.0

    with pytest.raises(ValueError, match=f"stores {n} zero rating\\(s\\); 0 means 'not rated'"):
        load(_tamper(saved, edit, redigest=True))


@pytest.mark.parametrize("status", ["infeasible", "OPTIMAL", ""])
def test_a_solver_status_no_fit_stores_is_refused(saved, status):
    # an edited "infeasible" loaded and the mapper went on releasing under it
    def meta_edit(meta):
        meta["fitted"]["solver_result_"]["items"]["status"] = {"t": "value", "v": status}

    with pytest.raises(ValueError, match=f"fitted.solver_result_.status = '{status}', expected 'optimal' or "
                                         "'inaccurate'"):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))


def test_untampered_profiles_still_load_and_release_the_same(saved, fitted, ratings):
    R, _ = ratings
    m = load(saved)
    assert m.release_profiles_.format == "csr"
    assert (m.release_profiles_ != fitted.release_profiles_).nnz == 0


def test_valid_but_altered_mapping_is_refused_by_its_claims(saved):
    def edit(arrays):
        M = arrays["fitted/mapping_"]
        M[0] = M[0][::-1].copy()  # still a probability row, digest recomputed below

    with pytest.raises(ValueError, match=r"fitted.leakage_ = .* does not hold: recomputed"):
        load(_tamper(saved, edit, redigest=True))


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


# ----------------------------------------------------------------------------- issue 11: files you can trust
def _identity_edit(arrays):
    M = arrays["fitted/mapping_"]
    M[:] = 0.0
    M[np.arange(M.shape[0]), np.arange(M.shape[0])] = 1.0  # release every cluster as itself


def test_keyed_file_round_trip_and_wrong_key(tmp_path, fitted, ratings):
    R, _ = ratings
    path = save(fitted, tmp_path / "k.npz", key=KEY)
    m = load(path, key=KEY)
    _assert_same_fit(fitted, m)
    assert (m.transform(R) != fitted.transform(R)).nnz == 0
    with pytest.raises(ValueError, match="HMAC-SHA256 tag does not match: the key is wrong or the file was altered"):
        load(path, key=b"another key of 32 bytes, wrong!!")
    plain = save(fitted, tmp_path / "plain.npz")
    with pytest.raises(ValueError, match="is not signed, but a key was given"):
        load(plain, key=KEY)
    with pytest.raises(TypeError, match="key must be bytes"):
        load(path, key="a string")
    with pytest.raises(ValueError, match="at least 16 bytes, got 3"):
        save(fitted, tmp_path / "short.npz", key=b"abc")


def test_keyed_file_refuses_an_edit_before_decoding(tmp_path, fitted, monkeypatch):
    """The issue's edit (identity mapping, digest recomputed) on a signed file: refused, nothing decoded."""
    path = save(fitted, tmp_path / "k.npz", key=KEY)
    raw = open(path, "rb").read()
    head = len(_persistence._SIGNED_MAGIC) + _persistence._TAG_BYTES
    body_path = tmp_path / "body.npz"
    body_path.write_bytes(raw[head:])
    _tamper(body_path, _identity_edit, redigest=True)  # an editor without the key
    forged = tmp_path / "forged.npz"
    forged.write_bytes(raw[:head] + body_path.read_bytes())

    def boom(*args, **kwargs):
        raise AssertionError("nothing may be decoded before the tag is checked")

    monkeypatch.setattr(zipfile, "ZipFile", boom)
    with pytest.raises(ValueError, match="HMAC-SHA256 tag does not match"):
        load(forged, key=KEY)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_keyed_file_any_byte_edit_refused(tmp_path, fitted, data):
    path = tmp_path / "signed.npz"
    if not path.exists():
        save(fitted, path, key=KEY)
    raw = bytearray(path.read_bytes())
    pos = data.draw(st.integers(0, len(raw) - 1), label="position")
    raw[pos] ^= data.draw(st.integers(1, 255), label="xor")
    edited = tmp_path / "edited.npz"
    edited.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="HMAC-SHA256 tag does not match|is not signed"):
        load(edited, key=KEY)


def test_identity_mapping_with_a_false_leakage_is_refused(saved):
    with pytest.raises(ValueError, match=r"fitted.leakage_ = .* does not hold: recomputed from the stored arrays"):
        load(_tamper(saved, _identity_edit, redigest=True))


def test_identity_mapping_with_every_claim_recomputed_breaks_the_budget(tmp_path, ratings):
    """An editor who recomputes every claim still cannot load a mapper that breaks its own parameters."""
    from privrelease.mapping import expected_distortion, leakage, map_attack_accuracy

    R, a = ratings
    m = QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(R, a)  # perfect privacy
    path = save(m, tmp_path / "pp.npz")
    meta, arrays = _read(path)
    _identity_edit(arrays)
    M, P = arrays["fitted/mapping_"], arrays["fitted/prior_"]
    arrays["fitted/solver_result_/mapping"][:] = M
    true_leak = leakage(P, M)
    assert true_leak > 0.05  # the identity release does leak
    fitted = meta["fitted"]
    fitted["leakage_"]["v"] = repr(true_leak)
    fitted["map_accuracy_"]["v"] = repr(map_attack_accuracy(P, M))
    shares = arrays["fitted/empirical_prior_"]  # the distortions weigh the clusters by the labeled users' shares
    fitted["distortion_"]["v"] = repr(expected_distortion(shares, M, arrays["fitted/cost_matrix_"]))
    fitted["center_distortion_"]["v"] = repr(expected_distortion(shares, M, arrays["fitted/center_cost_matrix_"]))
    from privrelease.mapping import mutual_information

    fitted["empirical_leakage_"]["v"] = repr(mutual_information(arrays["fitted/empirical_prior_"] @ M))
    arrays["fitted/leakage_per_attribute_"][:] = true_leak  # one attribute: its leakage is leakage_
    fitted["joint_leakage_"]["v"] = repr(true_leak)
    _write(path, meta, arrays)
    with pytest.raises(ValueError, match=r"leakage_ = 0\.\d+ bits exceeds the cap of 0\.0 bits that the parameters"):
        load(path)


CLAIMS = ["leakage_", "prior_leakage_", "map_accuracy_", "distortion_", "smallest_delta_", "mismatch_bound_",
          "center_distortion_", "empirical_leakage_", "quantization_distortion_"]


@pytest.mark.parametrize("claim", CLAIMS)
def test_every_stored_claim_is_recomputed(saved, claim):
    def meta_edit(meta):
        meta["fitted"][claim]["v"] = repr(float(meta["fitted"][claim]["v"]) + 0.01)

    with pytest.raises(ValueError, match=f"fitted.{claim} = .* does not hold"):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))


@pytest.mark.parametrize("value, message", [(np.nan, "non-finite rating"), (1e308, "outside the rating scale"),
                                            (-3.0, "outside the rating scale")])
def test_profiles_off_the_rating_scale_are_refused(saved, value, message):
    def edit(arrays):
        arrays["fitted/release_profiles_/data"][0] = value

    with pytest.raises(ValueError, match=message):
        load(_tamper(saved, edit, redigest=True))


def test_profiles_and_scale_edited_together_stay_finite(saved):
    def edit(arrays):
        arrays["fitted/release_profiles_/data"][0] = np.inf

    def meta_edit(meta):
        meta["fitted"]["rating_range_"]["items"][1] = {"t": "float", "v": "inf"}

    with pytest.raises(ValueError, match="non-finite rating"):
        load(_tamper(saved, edit, meta_edit, redigest=True))


@pytest.mark.parametrize("key", ["components_", "basis_chol_", "item_offset_"])
def test_nan_embedding_is_refused(saved, key):
    def edit(arrays):
        arrays[f"fitted/embedding_/{key}"].flat[0] = np.nan

    with pytest.raises(ValueError, match=f"embedding_.{key} holds a non-finite value"):
        load(_tamper(saved, edit, redigest=True))


@pytest.mark.parametrize("param, node, message", [
    ("delta", {"t": "float", "v": "-5.0"}, r"'delta' parameter .* Got -5\.0"),
    ("n_clusters", {"t": "value", "v": "many"}, "'n_clusters' parameter"),
    ("random_state", {"t": "value", "v": -3}, "'random_state' parameter"),
    ("unknown", {"t": "value", "v": 1}, "'unknown' is not a parameter"),
])
def test_parameters_go_through_the_constraints(saved, param, node, message):
    def meta_edit(meta):
        meta["params"][param] = node

    with pytest.raises(ValueError, match=message):
        load(_tamper(saved, edit_meta=meta_edit, redigest=True))


def test_integer_seed_warns_that_releases_are_reproducible(tmp_path, fitted, ratings):
    path = save(fitted, tmp_path / "seeded.npz")
    with pytest.warns(PrivacyLeakWarning, match=r"integer random_state \(4\).*reproducible"):
        load(path)
    R, a = ratings
    secure = save(QuantizedPrivacyMapper(n_clusters=3, delta=0.6).fit(R, a), tmp_path / "secure.npz")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        load(secure)


def _bomb(path, inflated, compressed_member="fitted/prior_.npy"):
    """A zip whose member inflates to ``inflated`` bytes (zeros: a few KB on disk)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("__metadata__.npy", b"")
        with zf.open(compressed_member, "w", force_zip64=True) as fh:
            chunk = bytes(2**20)
            for _ in range(inflated // 2**20):
                fh.write(chunk)
    return path


def test_zip_bomb_refused_before_inflation(tmp_path, monkeypatch, saved):
    bomb = _bomb(tmp_path / "bomb.npz", 64 * 2**20)
    assert bomb.stat().st_size < 2**20
    inflated = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda *a, **k: inflated.append(a[1]) or real_open(*a, **k))
    with pytest.raises(ValueError, match=r"member 'fitted/prior_.npy' inflates to 67108864 bytes .*max_bytes=1000000"):
        load(bomb, max_bytes=1_000_000)
    assert inflated == []  # refused from the declared sizes alone
    monkeypatch.undo()
    size = saved.stat().st_size if hasattr(saved, "stat") else len(open(saved, "rb").read())
    with pytest.raises(ValueError, match=f"holds {size} bytes, more than max_bytes=100"):
        load(saved, max_bytes=100)
    load(saved, max_bytes=10 * size)  # a cap the user can raise
    with pytest.raises(ValueError, match="max_bytes must be a positive integer"):
        load(saved, max_bytes=0)


def test_default_cap_refuses_a_large_declared_size(tmp_path):
    """A member whose header declares 4 GiB is refused under the default cap (nothing inflated)."""
    path = tmp_path / "declared.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("__metadata__.npy", b"")
        zf.writestr("fitted/prior_.npy", bytes(1000))
    raw = bytearray(path.read_bytes())
    central = raw.rfind(b"PK\x01\x02")  # the last member's central directory entry
    raw[central + 24:central + 28] = (0xFFFFFFF0).to_bytes(4, "little")  # its uncompressed size
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="inflates to 4294967280 bytes .*max_bytes=268435456; nothing was inflated"):
        load(path)


def test_malformed_structures_say_where(saved):
    cases = [
        (lambda m: m.__setitem__("params", []), "'params' entry must be a JSON object, got list"),
        (lambda m: m["params"]["delta"].pop("t"), r"params.delta: the entry has no 't' field"),
        (lambda m: m["fitted"]["prior_"].pop("key"), r"fitted.prior_: the entry has no 'key' field"),
        (lambda m: m["fitted"].pop("mapping_"), "fitted.mapping_: fitted attribute mapping_ is missing"),
        (lambda m: m["fitted"]["classes_"].__setitem__("t", "object"), "fitted.classes_: unknown entry type"),
        (lambda m: m["fitted"]["leakage_"].__setitem__("v", "zero"), "fitted.leakage_: 'zero' is not a number"),
        (lambda m: m["fitted"]["embedding_"].__setitem__("t", "list"), r"fitted.embedding_.items: expected list, got dict"),
        (lambda m: m["fitted"]["release_profiles_"].__setitem__("shape", [5]), "release_profiles_.shape: expected two"),
    ]
    for edit, message in cases:
        meta, arrays = _read(saved)
        edit(meta)
        path = saved + ".edited.npz"
        _write(path, meta, arrays)
        with pytest.raises(ValueError, match=message):
            load(path)


def test_metadata_nested_1000_deep(saved):
    meta, arrays = _read(saved)
    meta["params"]["delta"] = "@DEEP@"
    text = json.dumps(meta, sort_keys=True).replace(
        '"@DEEP@"', '{"t": "list", "items": [' * 1000 + '{"t": "value", "v": 1}' + "]}" * 1000)
    payload = dict(arrays)
    payload["__metadata__"] = np.array(text)
    np.savez(saved, **payload)
    with pytest.raises(ValueError, match=r"params.delta(\[0\])+: the metadata nests deeper than 32 levels|nests too deeply"):
        load(saved)


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=8)


def _nodes(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _nodes(v, path + (i,))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_metadata_is_a_value_error_or_an_honest_mapper(tmp_path, fitted, data):
    """Replace any node of the metadata by arbitrary JSON (checksum recomputed): ValueError, or a mapper
    that loads with claims that hold (the worst an editor can make is an honest mapper)."""
    path = tmp_path / "fuzz.npz"
    if not path.exists():
        save(fitted, path)
    meta, arrays = _read(path)
    paths = [p for p in _nodes(meta) if p and p[0] not in ("sha256", "arrays")]
    target = data.draw(st.sampled_from(paths), label="node")
    value = data.draw(_JSON, label="value")
    parent = meta
    for k in target[:-1]:
        parent = parent[k]
    parent[target[-1]] = value
    edited = tmp_path / "fuzzed.npz"
    try:
        _write(edited, meta, arrays)
    except ValueError:
        return  # not JSON-serialisable as written (a NaN): nothing to load
    try:
        m = load(edited)
    except ValueError:
        return
    from privrelease.mapping import leakage

    assert m.leakage_ == pytest.approx(leakage(m.prior_, m.mapping_), abs=1e-9)
