"""Hostile inputs, third audit: inputs that used to pass with a wrong answer (a lost user, a label taken
as disclosed, a densified sparse frame, a dropped imaginary part) or fail deep inside numpy / scipy /
pandas / scikit-learn. One test per finding (earlier audits: test_hostile_inputs.py and
test_hostile_inputs2.py)."""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease import (BlurMe, BlurMore, ErasureMapper, InferenceAttack, QuantizedPrivacyMapper,
                         TruthfulRegressionMechanism)
from privrelease.auctions import DCLEFEstimator
from privrelease.datasets import make_ratings
from privrelease.exceptions import PrivacyLeakWarning
from privrelease.mapping import leakage, solve_mapping
from privrelease.noise import Laplace
from privrelease.recommender import RatingsFrame
from privrelease.regression import ridge_sensitivity
from privrelease.utils import undisclosed_mask
from test_hostile_inputs2 import _binary_ratings as _ratings  # ratings whose first three items reveal y


def _qpm():
    return QuantizedPrivacyMapper(n_clusters=3, random_state=0)


# --------------------------------------------------------------------------- labels numpy would misread
@pytest.mark.parametrize("fit", [
    lambda X, y: _qpm().fit(X, y),
    lambda X, y: _qpm().fit(X, np.ma.column_stack([y, y])),            # 2-D: several attributes
    lambda X, y: ErasureMapper(random_state=0).fit(X[:, :2], y),
    lambda X, y: InferenceAttack().fit(X, y),
    lambda X, y: undisclosed_mask(y),
])
def test_masked_labels_are_refused_not_taken_as_disclosed(fit):
    # np.asarray dropped the mask: the 60 masked (not disclosed) users entered the prior with their hidden labels
    X, y = _ratings()
    ym = np.ma.masked_array(y, mask=np.arange(y.size) >= 60)
    with pytest.raises(ValueError, match=r"y is a masked array with (60|120) masked entries; .*"
                                         r"astype\(object\)\.filled"):
        fit(X, ym)


def test_masked_labels_filled_as_advised_are_undisclosed():
    X, y = _ratings()
    ym = np.ma.masked_array(y, mask=np.arange(y.size) >= 60)
    assert _qpm().fit(X, ym.astype(object).filled("")).n_labeled_ == 60
    assert _qpm().fit(X, ym.filled(-1)).n_labeled_ == 60
    # a masked array with nothing masked is its data
    np.testing.assert_array_equal(_qpm().fit(X, np.ma.masked_array(y)).mapping_, _qpm().fit(X, y).mapping_)


def test_sparse_labels_get_a_type_error_naming_y():
    # np.asarray(sparse) is a 0-d object array: the message was "y must be 1-D ..., got shape ()"
    X, y = _ratings()
    with pytest.raises(TypeError, match=r"y must be an array of labels .* got a scipy sparse csr_matrix of shape "
                                        r"\(120, 1\)"):
        _qpm().fit(X, sp.csr_matrix(y[:, None]))


def test_ragged_labels_name_y():
    # numpy: "setting an array element with a sequence. The requested array has an inhomogeneous shape"
    X, _ = _ratings()
    with pytest.raises(ValueError, match=r"y must be a rectangular table, got rows of different lengths: row 0 has "
                                         r"1 value\(s\), row 1 has 2"):
        _qpm().fit(X, [[0], [1, 0]] + [[1]] * 118)


# --------------------------------------------------------------------------- ids pandas would merge
@pytest.mark.parametrize("column, values", [
    ("user", [1, True, 2]),
    ("user", [0, False, 2]),
    ("item", [7, 8, True]),
])
def test_ids_mixing_booleans_and_numbers_are_refused(column, values):
    # pandas hashes True like 1 (False like 0): users 1 and True became ONE row, one user lost
    df = pd.DataFrame({"user": [1, 3, 2], "item": [7, 8, 1], "rating": [3.0, 4.0, 5.0]})
    df[column] = pd.Series(values, dtype=object)
    with pytest.raises(TypeError, match=rf"ratings\['{column}'\] mixes booleans and numbers .* would be merged "
                                        rf"into one {column} id"):
        RatingsFrame(sort_ids=False).fit(df)


def test_ids_of_one_kind_keep_every_user():
    df = pd.DataFrame({"user": [1, "1", 2], "item": ["a", "b", "a"], "rating": [3.0, 4.0, 5.0]})
    rf = RatingsFrame(sort_ids=False).fit(df)
    assert rf.shape == (3, 2) and rf.to_matrix(df).nnz == 3      # 1 and "1" stay two users
    flags = pd.DataFrame({"user": [True, False], "item": [1, 1], "rating": [3.0, 4.0]})
    assert RatingsFrame().fit(flags).shape == (2, 1)               # all-boolean ids are fine


def test_unhashable_ids_name_the_column():
    # pandas: "TypeError: unhashable type: 'list'" from its hash table
    df = pd.DataFrame({"user": [[1, 2], [1, 3]], "item": ["a", "b"], "rating": [3.0, 4.0]})
    with pytest.raises(TypeError, match=r"ratings\['user'\] must hold hashable ids .* got \[1, 2\] of type list"):
        RatingsFrame().fit(df)


# --------------------------------------------------------------------------- complex numbers
def _rf():
    return RatingsFrame().fit(pd.DataFrame({"user": [1, 2], "item": ["a", "b"], "rating": [3.0, 4.0]}))


@pytest.mark.parametrize("call", [
    lambda X, y: _qpm().fit(X, y),
    lambda X, y: ErasureMapper().fit(X[:, :2], y),
    lambda X, y: DCLEFEstimator(data_range=(0, 5)).fit(X, y),
    lambda X, y: TruthfulRegressionMechanism().fit(X, np.zeros(y.size)),
    lambda X, y: _rf().from_matrix(X[:2, :2]),
    lambda X, y: _rf().from_matrix(sp.csr_matrix(X[:2, :2])),
    lambda X, y: _qpm().fit(pd.DataFrame(X), y),
])
def test_complex_values_are_refused_naming_the_table(call):
    # scikit-learn: "Complex data not supported" followed by the whole array, X never named;
    # RatingsFrame.from_matrix dropped the imaginary part and returned the real parts as ratings
    X, y = _ratings()
    Xc = X.astype(complex)
    Xc[0, 0] += 1j
    with pytest.raises(TypeError, match=r"X must hold real numbers, got complex dtype complex128") as info:
        call(Xc, y)
    assert isinstance(info.value, ValueError)   # what scikit-learn's estimator checks expect for complex data


# --------------------------------------------------------------------------- sparse DataFrames
@pytest.mark.parametrize("make", [_qpm, lambda: BlurMe(random_state=0), lambda: BlurMore(random_state=0)])
def test_sparse_frame_is_released_as_a_sparse_frame(make):
    # used to come back as a dense ndarray: the sparse type, the user index and the item names were lost
    X, y = _ratings()
    frame = pd.DataFrame.sparse.from_spmatrix(sp.csr_matrix(X), index=[f"u{i}" for i in range(X.shape[0])],
                                              columns=[f"i{j}" for j in range(X.shape[1])])
    out = make().fit(frame, y).transform(frame)
    assert isinstance(out, pd.DataFrame) and all(isinstance(d, pd.SparseDtype) for d in out.dtypes)
    assert out.index.equals(frame.index) and out.columns.equals(frame.columns)
    ref = make().fit(sp.csr_matrix(X), y).transform(sp.csr_matrix(X))   # the same seed on the CSR input
    np.testing.assert_array_equal(out.sparse.to_coo().toarray(), ref.toarray())


def test_sparse_frame_of_integers_keeps_its_dtype():
    X, y = _ratings()
    frame = pd.DataFrame.sparse.from_spmatrix(sp.csr_matrix(X.astype(np.int64)))
    out = _qpm().fit(frame, y).transform(frame)
    assert out.dtypes.iloc[0] == pd.SparseDtype(np.int64, 0)


# --------------------------------------------------------------------------- categorical rating columns
def test_rating_frame_of_categorical_columns_is_read_as_numbers():
    # scikit-learn left the frame as an object array and scipy refused it deep inside:
    # "scipy.sparse does not support dtype object"
    X, y = _ratings()
    a = _qpm().fit(pd.DataFrame(X).astype("category"), y)
    b = _qpm().fit(X, y)
    np.testing.assert_array_equal(a.mapping_, b.mapping_)
    np.testing.assert_array_equal(a.transform(pd.DataFrame(X).astype("category")), b.transform(X))
    with pytest.raises(TypeError, match=r"X must hold numbers, got object: could not convert string to float"):
        _qpm().fit(pd.DataFrame(np.where(X > 2, "a", "b")).astype("category"), y)


# --------------------------------------------------------------------------- noise and regression
@pytest.mark.parametrize("value", ["1", ["1.5", "2"], np.array([1 + 2j])])
def test_laplace_randomise_refuses_strings_and_complex_values(value):
    # "1" was read as 1.0 and noised; the imaginary part of 1+2j was dropped with a ComplexWarning
    with pytest.raises(TypeError, match=r"value must hold real numbers"):
        Laplace(epsilon=1.0, random_state=0).randomise(value)


def test_laplace_randomise_still_takes_numbers():
    assert np.shape(Laplace(epsilon=1.0, random_state=0).randomise([1, 2])) == (2,)
    # scale 0 on a query of sensitivity 1 releases it exactly: warned as epsilon=inf is
    with pytest.warns(PrivacyLeakWarning, match=r"Laplace\(scale=0\.0\) with sensitivity=1\.0 adds no noise"):
        assert Laplace(scale=0.0).randomise(True) == 1.0
    assert Laplace(scale=0.0, sensitivity=0.0).randomise(True) == 1.0


def test_ridge_sensitivity_of_a_population_beyond_int64():
    # np.sqrt(10**30) (a Python int beyond 2**64, an object) failed: "no callable sqrt method"
    n = 10**30
    assert ridge_sensitivity(n, alpha=1e20) == pytest.approx(2.0 / 1e20 + math.sqrt(n) / 1e30)


# --------------------------------------------------------------------------- categorical fields and persistence
@pytest.mark.parametrize("dates", [
    lambda v: pd.to_datetime(v, unit="D"),
    lambda v: pd.to_datetime(v, unit="D", utc=True),
    lambda v: pd.to_timedelta(v, unit="D"),
])
def test_erasure_date_column_beside_numbers_is_refused_naming_it(dates):
    # alone, a date column was refused; beside a number column scikit-learn failed with
    # "DTypePromotionError: The DType <class 'numpy.dtypes.DateTime64DType'> could not be promoted"
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, 60)
    frame = pd.DataFrame({"when": dates(codes), "n": codes})
    with pytest.raises(TypeError, match=r"ErasureMapper needs categorical values, got column 'when' of dtype "
                                        r"(datetime64|timedelta64)"):
        ErasureMapper(random_state=0).fit(frame, codes % 2)


def test_bytes_labels_and_categories_can_be_saved(tmp_path):
    # fit accepted bytes labels / categories, save refused them: "cannot save 'fitted/classes_': unsupported dtype |S1"
    from privrelease import load
    from privrelease.exceptions import PrivacyLeakWarning

    X, y = _ratings()
    m = _qpm().fit(X, np.where(y == 1, b"m", b"f"))
    with pytest.warns(PrivacyLeakWarning):                            # the integer seed of the test
        back = load(m.save(tmp_path / "q.npz"))
    assert back.classes_.tolist() == [b"f", b"m"]
    np.testing.assert_array_equal(back.transform(X), m.transform(X))   # random_state=0: the same draws
    fields = np.where(X[:, :2] > 2, b"hi", b"lo")
    e = ErasureMapper(delta=0.5, random_state=0).fit(fields, y)
    with pytest.warns(PrivacyLeakWarning):
        back = load(e.save(tmp_path / "e.npz"))
    assert [c.tolist() for c in back.categories_] == [[b"hi", b"lo"]] * 2
    np.testing.assert_array_equal(back.transform(fields), e.transform(fields))


# --------------------------------------------------------------------------- the command line
def test_python_dash_m_privrelease_runs_the_command(tmp_path):
    # "No module named privrelease.__main__; 'privrelease' is a package and cannot be directly executed"
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    command = [sys.executable, "-m", "privrelease", "run", "no_such_file.toml", "-o", str(tmp_path / "o")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr          # a usage error, as the installed script gives
    assert "privrelease: error: pipeline file 'no_such_file.toml'" in done.stderr


def test_contract_accuracy_below_the_contracts_floor_is_refused_before_running():
    # k_min = 1e-320 passed the schema and the run failed half-way (exit 1, "accuracy K ... is below")
    from privrelease.runner import PipelineError, check_run

    with pytest.raises(PipelineError, match=r"parameter k_min = 1e-320: expected a finite number >= 3\.9698962802993"):
        check_run("contract_design", {"k_min": 1e-320})
    assert check_run("contract_design", {"k_min": 1e-3})[1]["k_min"] == 1e-3


# --------------------------------------------------------------------------- the convex program's inputs
@pytest.mark.parametrize("call", [
    lambda P, D, M: solve_mapping(P + 1j * np.eye(2), D, 0.5),
    lambda P, D, M: solve_mapping(P, D + 1j, 0.5),
    lambda P, D, M: solve_mapping(P, sp.csr_array(D + 1j), 0.5),
    lambda P, D, M: leakage(P, M + 1j),
])
def test_complex_prior_distortion_or_mapping_is_refused(call):
    # np.asarray(..., dtype=float) dropped the imaginary part with only a ComplexWarning
    P, D, M = np.array([[0.4, 0.1], [0.1, 0.4]]), 1.0 - np.eye(2), np.eye(2)
    with pytest.raises(TypeError, match=r"(prior|distortion|mapping) must hold real numbers, got complex dtype"):
        call(P, D, M)


# --------------------------------------------------------------------------- rating files
def test_csv_ids_that_only_look_alike_as_numbers_stay_distinct(tmp_path):
    # numpy reads "01", "+1" and "1_0" as 1, 1 and 10: users "1", "01" and "+1" became ONE user
    from privrelease.datasets import load_ratings_csv

    f = tmp_path / "r.csv"
    f.write_text("user,item,rating\n1,007,3\n01,7,4\n+1,7,5\n1_0,7,2\n10,7,1\n")
    R, users, items = load_ratings_csv(f, user_col="user", item_col="item", rating_col="rating")
    assert sorted(users.tolist()) == sorted(["1", "01", "+1", "1_0", "10"]) and R.shape == (5, 2)
    assert R.nnz == 5                                    # every rating kept
    g = tmp_path / "s.csv"
    g.write_text("user,item,rating\n1, 10,3\n -5,20 ,4\n")   # plain integers (spaces around them) stay numbers
    _, users, items = load_ratings_csv(g, user_col="user", item_col="item", rating_col="rating")
    assert users.tolist() == [-5, 1] and items.tolist() == [10, 20]


# --------------------------------------------------------------------------- auctions
def test_dclef_refuses_private_values_given_as_strings():
    # DCLEF.sample / mean read "1" as 1.0 without a word
    from privrelease.auctions import DCLEF

    est = DCLEF([0.5, 0.3, 0.2], [1, 0, 1], (1, 5))
    with pytest.raises(TypeError, match=r"d must hold the private values as real numbers, got an array of dtype <U1"):
        est.mean(["1", "2", "3"])
    assert est.mean([1, 2, 3]) == pytest.approx(0.5 * 1 + 0.2 * 3 + 3.0 * 0.3)   # R_bar = 3 for the unbought


def test_data_range_whose_width_overflows_is_refused_by_name():
    # Delta = R_max - R_min was inf and the error came from the noise: "scale must be finite, got inf"
    from privrelease.auctions import DCLEF, check_data_range

    with pytest.raises(ValueError, match=r"data_range must have a finite width R_max - R_min"):
        check_data_range((-1e308, 1e308))
    with pytest.raises(ValueError, match=r"data_range must have a finite width"):
        DCLEF([0.5, 0.5], [0, 1], (-1e308, 1e308))
    assert check_data_range((-1e307, 1e307)) == (-1e307, 1e307)


# --------------------------------------------------------------------------- pandas indexes
def _indexed(shuffle):
    X, y = _ratings()
    users = [f"u{i}" for i in range(X.shape[0])]
    frame, labels = pd.DataFrame(X, index=users), pd.Series(y, index=users)
    return frame, labels.sample(frac=1, random_state=0) if shuffle else labels


@pytest.mark.parametrize("fit", [
    lambda X, y: _qpm().fit(X, y),
    lambda X, y: ErasureMapper(random_state=0).fit(X.iloc[:, :2], y),
    lambda X, y: InferenceAttack().fit(X, y),
    lambda X, y: BlurMe().fit(X, y),
    lambda X, y: DCLEFEstimator(data_range=(0, 1)).fit(X, y),
    lambda X, y: _qpm().fit(X, y.to_numpy(), sample_weight=pd.Series(1.0, index=y.index)),   # weights too
])
def test_labels_indexed_in_another_order_than_the_ratings_are_refused(fit):
    # rows are paired by position: a y indexed by user id in another order gave every user someone else's
    # label, and the prior (with every leakage claimed from it) described a shuffled attribute
    X, y = _indexed(shuffle=True)
    with pytest.raises(ValueError, match=r"(y|sample_weight) is indexed differently from X \(the same labels in "
                                         r"another order: row 0 is 'u0' in X but 'u\d+' in (y|sample_weight)\)"):
        fit(X, y)


def test_labels_indexed_like_the_ratings_or_by_position_are_accepted():
    X, y = _indexed(shuffle=False)
    ref = _qpm().fit(X.to_numpy(), y.to_numpy())
    for labels in (y, y.reset_index(drop=True), y.sample(frac=1, random_state=0).reindex(X.index)):
        np.testing.assert_array_equal(_qpm().fit(X, labels).prior_, ref.prior_)
    assert _qpm().fit(X.reset_index(drop=True), y.sample(frac=1, random_state=0)).n_labeled_ == 120   # by position


# --------------------------------------------------------------------------- integer dtypes
def test_release_into_an_integer_dtype_too_narrow_for_the_scale_is_refused():
    # a mapper fitted on a 100-200 scale released -119 into an int8 X (astype wrapped around)
    X, y = _ratings()
    X = np.where(X > 0, X * 10 + 100, 0)                       # ratings 110 .. 150
    m = QuantizedPrivacyMapper(n_clusters=3, max_leakage=1.0, random_state=0).fit(X, y)   # releases profiles
    small = (X > 0).astype(np.int8)
    with pytest.raises(ValueError, match=r"X has dtype int8, which cannot hold the released ratings \(from 1\d\d to "
                                         r"1\d\d, on the scale the mapper was fitted on\)"), \
            pytest.warns(UserWarning, match="far outside the range the mapper was fitted on"):
        m.transform(small)
    for dtype in (np.uint8, np.int16):                         # wide enough: rounded ratings on the training scale
        with pytest.warns(UserWarning, match="far outside the range the mapper was fitted on"):  # 1s on 110..150
            out = m.transform(small.astype(dtype))
        assert out.dtype == dtype and out[out != 0].min() >= 110 and out.max() <= 150


# --------------------------------------------------------------------------- non-canonical sparse matrices
def _non_canonical(X, seed=0):
    """``X`` as a CSR matrix that stores every rating as two summands (v - 0.5 and 0.5), in shuffled order
    within each row, plus 20 explicit zeros: scipy reads it as ``X``."""
    rng = np.random.default_rng(seed)
    C = sp.coo_matrix(X)
    zr, zc = np.nonzero(X == 0)
    r = np.concatenate([C.row, C.row, zr[:20]])
    c = np.concatenate([C.col, C.col, zc[:20]])
    v = np.concatenate([C.data - 0.5, np.full(C.nnz, 0.5), np.zeros(20)])
    order = np.lexsort((rng.random(r.size), r))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=X.shape[0]))])
    N = sp.csr_matrix((v[order], c[order], indptr), shape=X.shape)
    assert not N.has_canonical_format and (N != sp.csr_matrix(X)).nnz == 0
    return N


@pytest.mark.parametrize("make", [
    lambda: QuantizedPrivacyMapper(n_clusters=3, max_leakage=1.0, random_state=0),
    lambda: QuantizedPrivacyMapper(n_clusters=3, max_leakage=1.0, space="raw", random_state=0),
    lambda: QuantizedPrivacyMapper(n_clusters=3, max_leakage=1.0, metric="hamming", random_state=0),
    lambda: BlurMe(random_state=0),
    lambda: BlurMore(random_state=0),
])
def test_non_canonical_csr_is_read_as_scipy_reads_it(make):
    # duplicates were counted twice and stored zeros as ratings: another prior and release (taste space,
    # BlurMe's item means), or "distortion must be non-negative, got a smallest entry of -4.68" (hamming)
    X, y = _ratings()
    N = _non_canonical(X)
    before = N.copy()
    a, b = make().fit(sp.csr_matrix(X), y), make().fit(N, y)
    np.testing.assert_allclose(a.transform(sp.csr_matrix(X)).toarray(), b.transform(N).toarray())
    if hasattr(a, "prior_"):
        np.testing.assert_allclose(a.prior_, b.prior_)
    assert (N != before).nnz == 0 and N.nnz == before.nnz            # the caller's matrix is left as it was


def test_from_matrix_gives_one_row_per_rated_pair_of_a_non_canonical_matrix():
    # a rating stored as two summands (1 + 2) came back as two long-form rows for the same (user, item)
    X, _ = _ratings(n=6, m=4)
    users = [f"u{i}" for i in range(6)]
    items = [f"i{j}" for j in range(4)]
    r, c = np.nonzero(X)
    df = pd.DataFrame({"user": np.array(users)[r], "item": np.array(items)[c], "rating": X[r, c]})
    rf = RatingsFrame().fit(df)
    pd.testing.assert_frame_equal(rf.from_matrix(_non_canonical(X)), rf.from_matrix(sp.csr_matrix(X)))
    assert len(rf.from_matrix(_non_canonical(X))) == np.count_nonzero(X)


# --------------------------------------------------------------------------- the accountant
@pytest.mark.parametrize("kwargs, name", [
    ({"individual_epsilons": ["0.5", "1"]}, "individual_epsilons"),
    ({"individual_epsilons": [0.5, 1.0], "payments": ["1", "2"]}, "payments"),
    ({"individual_epsilons": [0.5, 1.0], "payments": np.array([1 + 1j, 2])}, "payments"),
])
def test_accountant_refuses_epsilons_or_payments_given_as_strings_or_complex(kwargs, name):
    # "0.5" was read as 0.5 and a complex payment lost its imaginary part, while scalar budgets refuse both
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(epsilon=10.0)
    with pytest.raises(TypeError, match=rf"{name} must hold real numbers"):
        acc.spend(1.0, population="p", **kwargs)
    assert acc.spent == 0.0                                            # nothing was recorded
    acc.spend(1.0, population="p", individual_epsilons=[0.5, 1.0], payments=[1, 2])
    assert acc.payments("p").toarray().tolist() == [[1.0, 2.0]]


def test_joint_attribute_with_a_column_nobody_disclosed_names_the_column():
    # the message said "all 120 entries of y are missing" although every user disclosed column 0
    X, y = _ratings()
    Y = np.column_stack([y, np.full(y.size, -1)])
    with pytest.raises(ValueError, match=r"no user disclosed every column of y \(y\[:, 1\] is undisclosed for every "
                                         r"user\)"):
        _qpm().fit(X, Y)
    with pytest.raises(ValueError, match=r"y\[:, 1\] is undisclosed for every user"):
        QuantizedPrivacyMapper(n_clusters=3, protect="marginal", random_state=0).fit(X, Y)


# --------------------------------------------------------------------------- "left alone" by the audit, fixed
def test_align_warns_when_some_label_ids_match_no_user():
    # labels keyed "1" (a string) for integer user ids were dropped without a word: those users became
    # "not disclosed"; when NO id matched, every user was silently undisclosed until fit said "no labeled users"
    rf = RatingsFrame().fit(pd.DataFrame({"user": [1, 2, 3], "item": ["a", "b", "a"], "rating": [3.0, 4.0, 5.0]}))
    with pytest.warns(UserWarning, match=r"2 of the 3 ids of gender match no user .* for example '1'; '1' \(str\) "
                                         r"differs from user 1 \(int\) only in type"):
        y = rf.align(pd.Series({"1": 0, "2": 1, 3: 1}), name="gender")
    assert y.tolist() == [-1, -1, 1]
    with pytest.raises(ValueError, match=r"3 of the 3 ids of values match no user .* for example '1'"):
        rf.align({"1": 0, "2": 1, "3": 1})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rf.align({1: 0, 3: 1}).tolist() == [0, -1, 1]           # a subset of the users: no warning
        assert rf.align(pd.Series(dtype=float)).tolist() == [-1, -1, -1]


@pytest.mark.parametrize("make", [lambda: BlurMe(fraction=0.3), lambda: BlurMore(fraction=0.3)])
@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.float32])
def test_blurme_release_keeps_the_callers_dtype(make, dtype):
    # integer ratings came back as float64 with added item means such as 2.8611: every other mapper keeps
    # the dtype (QuantizedPrivacyMapper rounds its profiles to an integer dtype)
    X, y = _ratings()
    ref = make().fit(X, y).transform(X)                                # float64: the item means as they are
    for Xd in (X.astype(dtype), sp.csr_array(X.astype(dtype))):
        out = make().fit(X, y).transform(Xd)
        assert out.dtype == dtype
        dense = out.toarray() if sp.issparse(out) else out
        expected = np.rint(ref) if np.issubdtype(dtype, np.integer) else ref.astype(dtype)
        np.testing.assert_array_equal(dense, expected)                 # the same users and items, rounded


def test_blurme_integer_release_never_rounds_an_added_rating_to_not_rated():
    # on a scale around 0 an item mean of -0.2 rounds to 0, "not rated": the added rating would be lost
    X, y = _ratings()
    X = np.where(X > 0, X - 3.4, 0)
    m = BlurMore(fraction=0.3).fit(X, y)
    Xi = np.sign(X).astype(np.int64)
    out = m.transform(Xi)
    added = (out != 0) & (Xi == 0)
    assert np.any(np.abs(m.item_mean_[np.nonzero(added)[1]]) < 0.5)       # some added mean rounds to 0
    assert np.array_equal((out != 0).sum(axis=1), (X != 0).sum(axis=1))   # profile sizes kept
    np.testing.assert_array_equal(out[added], np.where(np.abs(m.item_mean_) < 0.5, np.sign(m.item_mean_),
                                                       np.rint(m.item_mean_))[np.nonzero(added)[1]])


def test_blurme_refuses_an_integer_dtype_too_narrow_for_the_added_ratings():
    X, y = _ratings()
    X = np.where(X > 0, X * 10 + 100, 0)                               # item means around 130
    with pytest.raises(ValueError, match=r"X has dtype int8, which cannot hold the added ratings \(from 1\d\d to "
                                         r"1\d\d, item means of the data BlurMe was fitted on\)"):
        BlurMe(fraction=0.3).fit(X, y).transform((X > 0).astype(np.int8))


@pytest.mark.parametrize("sparse, advice", [
    (lambda X: pd.DataFrame.sparse.from_spmatrix(sp.csr_matrix(X)), r"X\.sparse\.to_dense\(\)"),
    (sp.csr_array, r"X\.toarray\(\)"),
])
def test_erasure_sparse_table_gets_advice_that_works(sparse, advice):
    # scikit-learn's "Use '.toarray()' to convert to a dense numpy array": a DataFrame has no .toarray()
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (60, 2))
    y = X[:, 0] % 2
    with pytest.raises(TypeError, match=r"ErasureMapper needs a dense table of categorical fields, got .* of "
                                        rf"shape \(60, 2\): densify it first with {advice}"):
        ErasureMapper(random_state=0).fit(sparse(X), y)
    fitted = ErasureMapper(random_state=0).fit(X, y)
    with pytest.raises(TypeError, match=advice):
        fitted.transform(sparse(X))
    frame = pd.DataFrame.sparse.from_spmatrix(sp.csr_matrix(X))
    pd.testing.assert_frame_equal(ErasureMapper(random_state=0).fit(frame.sparse.to_dense(), y)   # the advice works
                                  .transform(frame.sparse.to_dense()), fitted.transform(pd.DataFrame(X)))


@pytest.mark.parametrize("call, match", [
    (lambda: __import__("privrelease.contracts", fromlist=["x"]).design_contract([1e308], 0.02),
     r"valuations = 1e\+308: .* overflows float64; expected valuations <= 1\.7976931348623158e\+307 "
     r"with cost 'linear'"),
    (lambda: __import__("privrelease.contracts", fromlist=["x"]).design_contract([5.0, 1e308], 0.02, "exponential"),
     r"valuations summing to 1e\+308 .* expected a sum of valuations <= 8\.161884754719627e\+303 "
     r"with cost 'exponential'"),
    (lambda: __import__("privrelease.contracts", fromlist=["x"]).design_menu(1.0, 1e308, 0.5, 0.02),
     r"v_high = 1e\+308: .* expected v_high <= 8\.988465674311579e\+306 with cost 'linear'"),
    (lambda: __import__("privrelease.contracts", fromlist=["x"]).design_contract([5.0, 10.0], 1e-6, "exponential"),
     r"exp\(sqrt\(2/K\)\) overflows for K < 3\.9698962802993"),
])
def test_contract_valuations_whose_payments_overflow_are_refused(call, match):
    # [1e308] reported inf payments and a NaN saving (exponential), or "no feasible segment" (linear);
    # design_menu(v_high=1e308) ended in "no feasible menu found"
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("cost", ["linear", "exponential"])
@pytest.mark.parametrize("K", [0.02, 0.3])
def test_contracts_at_the_largest_valuation_are_the_scaled_contracts(cost, K):
    # c(v, eps) = v g(eps): a design scales with the valuations, up to the largest one accepted
    from privrelease.contracts import design_contract, design_menu
    from privrelease.contracts._design import largest_valuation

    L = largest_valuation(K, cost)
    assert float(L * np.expm1(np.sqrt(2 / K)) if cost == "exponential" else L * np.sqrt(2 / K)) <= np.finfo(float).max
    for shares in ([1.0], [0.5, 0.5], [1e-10, 1 - 1e-10]):
        big, unit = design_contract(np.multiply(shares, L), K, cost), design_contract(shares, K, cost)
        np.testing.assert_allclose(big.a, unit.a, atol=1e-12)
        np.testing.assert_allclose(big.payments / L, unit.payments, rtol=1e-9)
        assert np.isfinite(big.unbiased_payment)
    with pytest.raises(ValueError, match="overflows float64"):
        design_contract([np.nextafter(L, np.inf) * 1.000001], K, cost)
    if cost == "exponential":
        return                                                          # (the menus' search is slow with it)
    vh = largest_valuation(K, cost, menu_option=1)
    big, unit = design_menu(vh / 2, vh, 0.5, K, cost=cost), design_menu(0.5, 1.0, 0.5, K, cost=cost)
    assert big.regime == unit.regime
    assert big.expected_payment / vh == pytest.approx(unit.expected_payment, rel=1e-6)


def test_contract_experiment_refuses_valuations_whose_payments_overflow_before_running():
    # v_high = 1e308 ended with a SolverError mid-run, valuations = [1e308] with inf payments and NaN savings
    from privrelease.runner import PipelineError, check_run

    with pytest.raises(PipelineError, match=r"parameter v_high = 1e\+308: expected v_high <= 8\.988465674311579e\+306"):
        check_run("contract_design", {"v_high": 1e308})
    with pytest.raises(PipelineError, match=r"parameter valuations = \[1e\+308\]: expected valuations summing to at "
                                            r"most 8\.161884754719627e\+303"):
        check_run("contract_design", {"valuations": [1e308]})
    with pytest.raises(PipelineError, match=r"parameter k_min = 1e-06: expected a finite number >= 3\.9698962802"):
        check_run("contract_design", {"k_min": 1e-6})
    assert check_run("contract_design", {"v_high": 8e306, "valuations": [1e300, 2e300]})[1]["v_high"] == 8e306


@pytest.mark.parametrize("call, match", [
    (lambda: __import__("privrelease.noise", fromlist=["x"]).VectorLaplace(dimension=10**12, epsilon=1.0,
                                                                            sensitivity=1.0, random_state=0).sample(),
     r"dimension=1000000000000: the noise vectors would need 29\.1 TiB"),  # 32 bytes a value at the peak
    (lambda: __import__("privrelease.noise", fromlist=["x"]).VectorLaplace(dimension=10**6, epsilon=1.0,
                                                                            sensitivity=1.0, random_state=0).sample(10**7),
     r"dimension=1000000, size=10000000: the noise vectors would need 291 TiB"),
    (lambda: Laplace(epsilon=1.0, random_state=0).sample((10**7, 10**7)),
     r"size=\(10000000, 10000000\): the draws would need 7\.28e\+03 TiB"),  # 80 bytes a value at the peak
    (lambda: __import__("privrelease.accounting", fromlist=["x"]).PrivacyAccountant().individual_spent(
        "p", n_individuals=10**12), r"n_individuals=1000000000000: one guarantee per individual would need 7\.28 TiB"),
    (lambda: __import__("privrelease.accounting", fromlist=["x"]).PrivacyAccountant().individual_spent(
        "p", n_individuals=10**20), r"n_individuals=100000000000000000000: .* would need 7\.28e\+08 TiB"),
])
def test_allocations_beyond_memory_name_the_argument(call, match):
    # numpy: "MemoryError: Unable to allocate 7.28 TiB for an array with shape (1000000000000,)" (no argument
    # named), or "ValueError: Maximum allowed dimension exceeded" for 10**20
    # (the noise draws count the bytes they hold a value at their peak: tests/faults/test_hostile21_core.py)
    with pytest.raises(ValueError, match=match + r" \(.* (values?|vectors?) of (8 bytes|\d+ bytes at the peak of "
                                                 r"the computation)\)"):
        call()


def test_vector_laplace_norm_of_a_huge_dimension_needs_no_allocation():
    from privrelease.noise import VectorLaplace

    vl = VectorLaplace(dimension=10**12, epsilon=1.0, sensitivity=1.0, random_state=0)
    assert vl.sample_norm() == pytest.approx(1e12, rel=1e-3)              # Gamma(d, 1): mean d, sd sqrt(d)
    assert VectorLaplace(dimension=1000, epsilon=1.0, sensitivity=1.0, random_state=0).sample(3).shape == (3, 1000)


# --------------------------------------------------------------------------- dtype audit
def _never_zero(values):
    """Ratings as an integer X holds them: rounded, never to 0 ('not rated')."""
    r = np.rint(values)
    return np.where((r == 0) & (values != 0), np.sign(values), r)


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.csc_matrix, np.asarray, pd.DataFrame])
def test_bool_release_of_ratings_is_refused_not_every_rating_true(make):
    # QuantizedPrivacyMapper cast its released profiles (ratings 1-5) to True without any check
    X, y = _ratings()
    m = QuantizedPrivacyMapper(n_clusters=3, max_leakage=1.0, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"X has dtype bool, which cannot hold the released ratings \(from \d to "
                                         r"5, on the scale the mapper was fitted on\); pass X as float64, or uint8"):
        m.transform(make(X > 0))
    # a mapper fitted on rated / not rated releases profiles a bool X holds: kept, every released rating True
    m = QuantizedPrivacyMapper(n_clusters=3, max_leakage=1.0, space="raw", random_state=0).fit(X > 0, y)
    ref = m.transform((X > 0).astype(float))
    out = m.transform(make(X > 0))
    out = out.toarray() if sp.issparse(out) else np.asarray(out)
    assert out.dtype == bool
    np.testing.assert_array_equal(out, ref != 0)


def test_integer_release_never_rounds_a_profile_rating_to_not_rated():
    # on a -2..2 scale, profile means within 0.5 of 0 were rounded to 0 = not rated: 114 of 1266 released
    # ratings were lost in an int16 X (BlurMe / BlurMore already kept them)
    X, y = make_ratings(n_users=120, n_items=40, random_state=0, return_dense=True)[:2]
    X = np.where(X > 0, X - 3.0, 0)
    m = QuantizedPrivacyMapper(n_clusters=3, max_leakage=1.0, random_state=0).fit(X, y)
    assert np.any(np.abs(m.release_profiles_.data) < 0.5)               # some profile rating rounds to 0
    ref = m.transform(X)                                                 # same seed: the same draws
    out = m.transform(X.astype(np.int16))
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, _never_zero(ref))                 # the same ratings, none lost


@pytest.mark.parametrize("make", [
    lambda: QuantizedPrivacyMapper(n_clusters=3, max_leakage=1.0, random_state=0),
    lambda: BlurMe(fraction=0.3), lambda: BlurMore(fraction=0.3)])
@pytest.mark.parametrize("frame", [False, True])
def test_float16_release_is_float16(make, frame):
    # computed in float64 (scipy's sparse matrices cannot store float16) and released as float16: the
    # mappers returned float64, BlurMe / BlurMore failed with "scipy.sparse does not support dtype float16"
    X, y = _ratings()
    m = make().fit(X, y)
    ref = m.transform(X)
    X16 = pd.DataFrame(X.astype(np.float16)) if frame else X.astype(np.float16)
    out = np.asarray(m.transform(X16))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, ref.astype(np.float16))


def test_narrow_dtype_message_names_one_that_holds_the_ratings():
    X, y = _ratings()
    X = np.where(X > 0, X - 3.0, 0)                                     # ratings -2 .. 2
    with pytest.raises(ValueError, match=r"X has dtype uint8, which cannot hold the added ratings \(from -\d to "
                                         r"\d, .*\); pass X as float64, or int16 to keep whole-number ratings"):
        BlurMore(fraction=0.3).fit(X, y).transform(np.sign(X).astype(np.uint8))


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.float32, np.float16, bool])
def test_from_matrix_keeps_the_ratings_dtype(dtype):
    # the long form's ratings were float64 whatever X held
    df = pd.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "a"], "rating": [5, 3, 4]})
    rf = RatingsFrame().fit(df)
    X = rf.to_matrix(df).toarray().astype(dtype)
    for Xd in ((X,) if dtype is np.float16 else (X, sp.csr_matrix(X), sp.csc_array(X))):
        out = rf.from_matrix(Xd)
        assert out["rating"].dtype == dtype
        assert out["rating"].tolist() == df["rating"].astype(dtype).tolist()


def test_from_matrix_refuses_summed_entries_its_integer_dtype_cannot_hold():
    # scipy sums a rating stored twice in the matrix's dtype: 100 + 100 wrapped to -56 in int8
    df = pd.DataFrame({"user": [1, 2], "item": ["a", "b"], "rating": [5, 3]})
    rf = RatingsFrame().fit(df)
    X = sp.csr_matrix((np.array([100, 100, 3], np.int8), [0, 0, 1], [0, 2, 3]), shape=(2, 2))
    with pytest.raises(ValueError, match=r"X has dtype int8, which cannot hold the ratings \(from 3 to 200, summing "
                                         r"the entries stored twice\); pass X as float64, or uint8"):
        rf.from_matrix(X)
    assert rf.from_matrix(X.astype(np.int16))["rating"].tolist() == [200, 3]
