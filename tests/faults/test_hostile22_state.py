"""Hostile-input hunt 22: a mapper's stated state must be the state it releases through, and no user, item or
reading of a table is lost without a word.

* a saved mapper whose ``solver_result_`` claims were edited (leakage, distortion, measure, budget, certificate,
  status) is refused, naming the field and both values; an ``'inaccurate'`` one warns when loaded;
* a fitted array edited in memory (in place or assigned anew) is refused by ``transform``; the fitted arrays stay
  read-only through pickle, copies and joblib, which keep releasing what the fit released;
* ``RatingsFrame.from_matrix`` keeps the ids of the users and items without a stored rating and counts them;
* a long-form table with neutral column names is warned as long form, a 3-item rating matrix is not;
* ``ErasureMapper`` names a column whose values changed type since fit.

The recomputed figures are checked against formulas written out here (mutual information and expected distortion
in numpy), not against the library's functions.
"""

import copy
import io
import pickle
import re
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from privrelease import ErasureMapper, QuantizedPrivacyMapper, load
from privrelease._persistence import _read, _write
from privrelease.datasets import make_ratings
from privrelease.exceptions import ConvergenceWarning, UnseenCategoryWarning
from privrelease.recommender import RatingsFrame

pytestmark = pytest.mark.filterwarnings("ignore:the loaded .* has an integer random_state")


def mutual_information_bits(prior, mapping):
    """I(A; C_hat) of the joint ``prior @ mapping``, written out: sum p log2 p / (p(a) p(c))."""
    joint = np.asarray(prior, dtype=np.float64) @ np.asarray(mapping, dtype=np.float64)
    pa, pc = joint.sum(axis=1, keepdims=True), joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log2(joint[nz] / (pa @ pc)[nz])))


@pytest.fixture(scope="module")
def ratings():
    R, a, _ = make_ratings(300, 30, attribute_strength=2.0, random_state=0)
    return R.tocsr(), a


@pytest.fixture(scope="module")
def capped(ratings):
    R, a = ratings
    return QuantizedPrivacyMapper(n_clusters=6, max_leakage=0.1, random_state=0).fit(R, a)


@pytest.fixture(scope="module")
def budgeted(ratings):
    R, a = ratings
    return QuantizedPrivacyMapper(n_clusters=6, delta=0.8, random_state=0).fit(R, a)


def _edited(mapper, path, edit):
    """Save ``mapper``, apply ``edit(solver_result_ items, metadata)`` and write the file back (checksum anew)."""
    mapper.save(path)
    meta, arrays = _read(path)
    edit(meta["fitted"]["solver_result_"]["items"], meta)
    _write(path, meta, arrays)
    return path


def _number(value):
    return {"t": "float", "v": repr(float(value))}


# ------------------------------------------------------------------------------------------ 3: solver_result_ claims
def test_untouched_file_states_what_its_mapping_does(capped, tmp_path):
    back = load(_edited(capped, tmp_path / "m.npz", lambda items, meta: None))
    sr = back.solver_result_
    # the solver's figures are those of its mapping under the stored prior (the distortion over the labeled users'
    # cluster shares, which is how the quantized mapper hands the costs to the engine)
    assert sr.leakage == pytest.approx(mutual_information_bits(back.prior_, sr.mapping), abs=1e-12)
    shares = back.empirical_prior_.sum(axis=0)
    shares = shares / shares.sum()
    assert sr.distortion == pytest.approx(float(np.sum(shares[:, None] * sr.mapping * back.cost_matrix_)), rel=1e-12)
    assert sr.max_leakage <= 0.1 and sr.leakage <= sr.max_leakage + 1e-12


def test_edited_solver_leakage_is_refused_with_both_values(capped, tmp_path):
    true = mutual_information_bits(capped.prior_, capped.solver_result_.mapping)
    assert true > 0.05  # the edit claims 0 bits of a mapping that leaks
    path = _edited(capped, tmp_path / "m.npz", lambda items, meta: items.__setitem__("leakage", _number(0.0)))
    with pytest.raises(ValueError, match=r"solver_result_\.leakage = 0\.0 does not hold") as err:
        load(path)
    stated = float(re.search(r"it is ([0-9.e-]+);", str(err.value)).group(1))
    assert stated == pytest.approx(true, abs=1e-12)


def test_edited_solver_distortion_is_refused(capped, tmp_path):
    path = _edited(capped, tmp_path / "m.npz", lambda items, meta: items.__setitem__("distortion", _number(0.1)))
    with pytest.raises(ValueError, match=r"solver_result_\.distortion = 0\.1 does not hold"):
        load(path)


@pytest.mark.parametrize("gap, message", [
    (3.0, r"status = 'optimal' does not hold: its certificate's gap_bits = 3\.0 is above"),
    (-1.0, r"certificate\['gap_bits'\] = -1\.0 is not a bound a solve returns"),
    (float("nan"), r"certificate\['gap_bits'\] = nan is not a bound a solve returns"),
])
def test_impossible_certificate_is_refused(capped, tmp_path, gap, message):
    def edit(items, meta):
        items["certificate"]["items"]["gap_bits"] = {"t": "float", "v": repr(gap)}

    with pytest.raises(ValueError, match=message):
        load(_edited(capped, tmp_path / "m.npz", edit))


def test_certificate_without_its_gap_is_refused(capped, tmp_path):
    def edit(items, meta):
        items["certificate"]["items"] = {}

    with pytest.raises(ValueError, match=r"certificate must hold 'gap_bits'"):
        load(_edited(capped, tmp_path / "m.npz", edit))


def test_inaccurate_status_warns_when_loaded(capped, tmp_path):
    path = _edited(capped, tmp_path / "m.npz",
                   lambda items, meta: items.__setitem__("status", {"t": "value", "v": "inaccurate"}))
    with pytest.warns(ConvergenceWarning, match=r"not certified optimal \(solver_result_\.status='inaccurate'"):
        load(path)


def test_edited_measure_is_refused(capped, tmp_path):
    path = _edited(capped, tmp_path / "m.npz",
                   lambda items, meta: items.__setitem__("kind", {"t": "value", "v": "maximal_leakage"}))
    with pytest.raises(ValueError, match=r"solver_result_\.kind = 'maximal_leakage' does not hold: the mapper's "
                                         r"leakage parameter is 'mutual_information'"):
        load(path)


def test_cap_below_the_mappings_leakage_is_refused(capped, tmp_path):
    path = _edited(capped, tmp_path / "m.npz", lambda items, meta: items.__setitem__("max_leakage", _number(0.0)))
    with pytest.raises(ValueError, match=r"solver_result_\.leakage = 0\.09\d+ bits exceeds its own max_leakage = 0\.0"):
        load(path)


def test_budget_other_than_the_parameters_is_refused(budgeted, tmp_path):
    path = _edited(budgeted, tmp_path / "m.npz", lambda items, meta: items.__setitem__("delta", _number(0.1)))
    with pytest.raises(ValueError, match=r"states delta = 0\.1, max_leakage = None, which does not hold: the "
                                         r"parameters give delta=0\.8"):
        load(path)


# ------------------------------------------------------------------------------------------ 7: edits in memory
def _fresh(ratings):
    R, a = ratings
    return QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(R, a)  # perfect privacy: leakage_ 0


def test_in_place_edit_of_the_mapping_is_impossible(ratings):
    m = _fresh(ratings)
    identity = np.eye(*m.mapping_.shape)
    assert mutual_information_bits(m.prior_, identity) > 0.05 > m.leakage_  # what the edit would release
    with pytest.raises(ValueError, match="read-only"):
        m.mapping_[:] = identity
    for name in ("release_profiles_", "prior_", "cluster_centers_"):
        value = getattr(m, name)
        arrays = [value.data] if sp.issparse(value) else [value]
        assert not any(a.flags.writeable for a in arrays), name


def test_reassigned_or_reopened_mapping_is_refused_by_transform(ratings):
    R, _ = ratings
    m = _fresh(ratings)
    m.mapping_ = np.eye(*m.mapping_.shape)
    with pytest.raises(ValueError, match=r"fitted\.mapping_ is not the array this QuantizedPrivacyMapper was fitted "
                                         r"with \(assigned anew or edited after fit\)"):
        m.transform(R)
    m = _fresh(ratings)
    m.mapping_.setflags(write=True)
    m.mapping_[:] = np.eye(*m.mapping_.shape)
    m.mapping_.setflags(write=False)
    with pytest.raises(ValueError, match=r"fitted\.mapping_ is not the array"):
        m.transform(R)


def test_copies_keep_releasing_what_the_fit_released(ratings):
    R, a = ratings
    m = _fresh(ratings)
    expected = m.transform(R)
    buf = io.BytesIO()
    joblib.dump(m, buf)
    buf.seek(0)
    for twin in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m), copy.copy(m), joblib.load(buf)):
        assert not twin.mapping_.flags.writeable
        assert (twin.transform(R) != expected).nnz == 0  # the same seed through the same arrays
    assert clone(m).get_params() == m.get_params()
    assert (clone(m).fit(R, a).transform(R) != expected).nnz == 0


def test_erasure_transform_refuses_an_edited_alphabet():
    rng = np.random.default_rng(0)
    C = rng.integers(0, 3, size=(200, 2))
    y = (C[:, 0] + rng.integers(0, 2, 200)) % 2
    e = ErasureMapper(random_state=0).fit(C, y)
    e.output_tuples_ = e.output_tuples_.copy()
    with pytest.raises(ValueError, match=r"fitted\.output_tuples_ is not the array this ErasureMapper"):
        e.transform(C)


# ------------------------------------------------------------------------------------------ 4: users without a rating
@pytest.fixture()
def converter():
    rng = np.random.default_rng(0)
    rows = [(f"u{u}", f"i{i}", int(rng.integers(1, 6))) for u in range(12) for i in range(5) if rng.random() < 0.7]
    df = pd.DataFrame(rows, columns=["user", "item", "rating"])
    rf = RatingsFrame().fit(df)
    return rf, rf.to_matrix(df)


def _with_empty_rows(X, users, items):
    X = X.tolil(copy=True)
    for u in users:
        X[u, :] = 0
    for i in items:
        X[:, i] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    return X


def test_from_matrix_keeps_and_counts_users_and_items_without_a_rating(converter, tmp_path):
    rf, X = converter
    released = _with_empty_rows(X, users=[1, 4, 7], items=[2])
    empty_users = int(np.sum(released.getnnz(axis=1) == 0))
    empty_items = int(np.sum(released.getnnz(axis=0) == 0))
    assert (empty_users, empty_items) == (3, 1)
    with pytest.warns(UserWarning, match=rf"holds 9 of the 12 users and 4 of the 5 items: 3 user\(s\) and 1 "
                                         rf"item\(s\) have no stored rating.*attrs\['ids'\]"):
        long = rf.from_matrix(released)
    assert long["user"].nunique() == 12 - empty_users
    ids = long.attrs["ids"]
    assert list(ids.user_ids) == list(rf.user_ids_) and list(ids.item_ids) == list(rf.item_ids_)
    # the full matrix comes back from the long form alone, every row and column in place
    again = RatingsFrame().fit(long)
    assert again.shape == X.shape
    assert (again.to_matrix(long) != released).nnz == 0
    # pandas operations keep (and compare) the ids; a format writing attrs as JSON keeps the counts
    assert pd.concat([long, long]).attrs["ids"] == ids
    pytest.importorskip("pyarrow")
    long.to_parquet(tmp_path / "released.parquet")
    assert pd.read_parquet(tmp_path / "released.parquet").attrs["ids"] == {
        "n_users": 12, "n_items": 5, "n_unrated_users": empty_users, "n_unrated_items": empty_items}
    with pytest.warns(UserWarning, match=r"the Surprise dataset holds 9 of the 12 users"):
        trainset = rf.to_trainset(released)
    assert trainset.n_users == 12 - empty_users


def test_from_matrix_without_empty_rows_says_nothing(converter):
    rf, X = converter
    full = sp.csr_matrix(np.arange(1, 61, dtype=float).reshape(12, 5) % 5 + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        long = rf.from_matrix(full)
    assert len(long) == 60


# ------------------------------------------------------------------------------------------ 5: neutral column names
@pytest.fixture(scope="module")
def long_form():
    R, a, _ = make_ratings(120, 25, attribute_strength=2.0, random_state=0)
    coo = R.tocoo()
    return np.column_stack([coo.row + 1, coo.col + 1, coo.data]), a[coo.row]


@pytest.mark.parametrize("columns", [["a", "b", "c"], [0, 1, 2], None])
def test_long_form_with_neutral_names_is_warned(long_form, columns):
    table, y = long_form
    X = table if columns is None else pd.DataFrame(table, columns=columns)
    assert table[:, 0].max() > 100  # user ids no rating scale holds
    # a warning, not a refusal (review: real count matrices show the same signs)
    with pytest.warns(UserWarning, match=r"looks like ratings in long form \(one row per rating, read from its "
                                         r"content.*RatingsFrame"):
        QuantizedPrivacyMapper(n_clusters=5, max_leakage=0.05, random_state=0).fit(X, y)


@pytest.mark.parametrize("as_frame", [False, True])
def test_a_three_item_rating_matrix_passes(as_frame):
    rng = np.random.default_rng(1)
    M = rng.integers(1, 6, size=(150, 3)).astype(np.float64)
    y = rng.integers(0, 2, 150)
    X = pd.DataFrame(M, columns=["a", "b", "c"]) if as_frame else M
    out = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(X, y).transform(X)
    assert np.shape(out) == M.shape


# ------------------------------------------------------------------------------------------ 10: a column's type
def test_erasure_names_a_column_whose_type_changed():
    rng = np.random.default_rng(0)
    C = pd.DataFrame({"size": rng.choice(["S", "M"], 200), "n": rng.integers(0, 3, 200)})
    y = (C["n"].to_numpy() + rng.integers(0, 2, 200)) % 2
    e = ErasureMapper(max_leakage=0.05, random_state=0).fit(C, y)
    with pytest.warns(UnseenCategoryWarning, match=r"200 of the 200 unseen value\(s\) of feature 1 \('n'\) differ "
                                                   r"from a fitted category only in type, for example '\d' \(str\) "
                                                   r"where fit saw \d \(int\)"):
        out = e.transform(C.assign(n=C["n"].astype(str)))
    assert out["n"].isna().all()  # still erased: a value never seen in fit
