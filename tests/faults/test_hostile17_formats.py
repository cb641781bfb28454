"""Round 17 (formats): sparse DataFrames filled with NaN, sparse frames never densified, from_matrix's inputs.

Each test failed on the code before the fix (see the comments).
"""

import tracemalloc

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease import QuantizedPrivacyMapper
from privrelease.datasets import make_ratings
from privrelease.recommender import RatingsFrame, SurpriseRecommender, holdout_split
from privrelease.utils import check_rating_matrix


def _ratings():
    X, y, _ = make_ratings(120, 25, random_state=0)
    return X, y


def _nan_filled(X, columns=None):
    """``astype(pd.SparseDtype(float))``, the usual way to make a frame sparse: filled with NaN, every other value
    (zeros included) stored."""
    return pd.DataFrame(X.toarray(), columns=columns).astype(pd.SparseDtype(float))


# ----------------------------------------------------------------------------- 1. sparse frames filled with NaN
def test_a_nan_filled_sparse_frame_without_nan_is_released_as_its_zero_filled_twin():
    # pandas' "fill value must be 0 when converting to COO matrix" (inside scikit-learn), naming no column
    X, y = _ratings()
    cols = [f"i{j}" for j in range(X.shape[1])]
    F = _nan_filled(X, cols)
    assert F.dtypes.iloc[0].fill_value != F.dtypes.iloc[0].fill_value  # NaN
    twin = pd.DataFrame.sparse.from_spmatrix(X, columns=cols)
    m = QuantizedPrivacyMapper(n_clusters=3, max_leakage=0.05, random_state=0).fit(F, y)
    m0 = QuantizedPrivacyMapper(n_clusters=3, max_leakage=0.05, random_state=0).fit(twin, y)
    np.testing.assert_array_equal(m.prior_, m0.prior_)
    out, out0 = m.transform(F), m0.transform(twin)
    assert list(out.columns) == cols and list(m.feature_names_in_) == cols
    assert all(isinstance(d, pd.SparseDtype) for d in out.dtypes)
    assert (out.sparse.to_coo() != out0.sparse.to_coo()).nnz == 0


def test_the_recommender_reads_a_nan_filled_sparse_frame_as_its_values():
    X, _ = _ratings()
    F = _nan_filled(X)
    expected = SurpriseRecommender("BaselineOnly").fit(X).predict(X)
    rec = SurpriseRecommender("BaselineOnly").fit(F)
    np.testing.assert_allclose(rec.predict(F), expected)
    assert rec.rmse(F, F) == pytest.approx(rec.rmse(X, X))


def test_from_matrix_reads_a_nan_filled_sparse_frame():
    df = pd.DataFrame({"user": ["a", "b", "a"], "item": [1, 2, 3], "rating": [4.0, 2.0, 5.0]})
    rf = RatingsFrame().fit(df)
    W = pd.DataFrame([[4, 0, 5], [0, 2, 0]], index=["b", "a"], columns=[3, 2, 1]).astype(pd.SparseDtype(float))
    assert rf.from_matrix(W).values.tolist() == [["a", 2, 2.0], ["b", 1, 5.0], ["b", 3, 4.0]]


@pytest.mark.parametrize("call", ["check_rating_matrix", "recommender", "from_matrix"])
def test_unstored_nan_cells_of_a_sparse_frame_are_named_as_nan_ratings(call):
    # from_matrix and the recommender failed with pandas' "fill value must be 0 when converting to COO matrix"
    D = np.array([[4.0, np.nan, 5.0], [np.nan, 2.0, np.nan]])
    W = pd.DataFrame(D, index=["a", "b"], columns=[1, 2, 3]).astype(pd.SparseDtype(float))
    rf = RatingsFrame().fit(pd.DataFrame({"user": ["a", "b", "a"], "item": [1, 2, 3], "rating": [4.0, 2.0, 5.0]}))
    run = {"check_rating_matrix": lambda: check_rating_matrix(W),
           "recommender": lambda: SurpriseRecommender("BaselineOnly").fit(W),
           "from_matrix": lambda: rf.from_matrix(W)}[call]
    with pytest.raises(ValueError, match=r"X holds 3 NaN entries \(the first at row 0, column 1: unstored cells .*"
                                         r"fillna\(0\)"):
        run()


# ----------------------------------------------------------------------------- 2. sparse frames never densified
def test_check_rating_matrix_and_holdout_split_keep_a_sparse_frame_sparse():
    # np.asarray read the frame densely: a 20,000 x 500 frame of 1 % density allocated its 80 MB dense table
    n, m = 20_000, 500
    X = sp.random(n, m, density=0.01, format="csr", random_state=0, data_rvs=lambda k: np.full(k, 3.0))
    frame = pd.DataFrame.sparse.from_spmatrix(X)
    tracemalloc.start()
    try:
        Xc, _ = check_rating_matrix(frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sp.issparse(Xc) and (Xc != X).nnz == 0
    assert peak < n * m, peak  # the dense float64 table is 8 * n * m bytes
    train, held = holdout_split(frame.iloc[:300], 0.2, random_state=0)
    assert sp.issparse(train) and (train + held != X[:300]).nnz == 0


# ----------------------------------------------------------------------------- 3. from_matrix: missing cells, Int64
def _small():
    df = pd.DataFrame({"user": ["a", "b", "a"], "item": [1, 2, 3], "rating": [4, 2, 5]})
    return RatingsFrame().fit(df)


@pytest.mark.parametrize("X", [
    np.array([[4, None, 5], [0, 2, 0]], dtype=object),  # scipy read None as 0: the cell was dropped silently
    [[4, None, 5], [0, 2, 0]],
    pd.DataFrame([[4.0, pd.NA, 5.0], [0.0, 2.0, 0.0]], index=["a", "b"], columns=[1, 2, 3]).astype("Float64"),
    pd.DataFrame([[4, pd.NA, 5], [0, 2, 0]], index=["a", "b"], columns=[1, 2, 3]).astype("Int64"),
])
def test_from_matrix_names_a_missing_cell_of_an_object_or_nullable_table(X):
    # pd.NA: TypeError "X must hold real-number ratings, got boolean value of NA is ambiguous"
    with pytest.raises(ValueError, match=r"X holds 1 missing rating\(s\) \(NaN, None or pd\.NA; the first at row 0, "
                                         r"column 1\).*fillna\(0\)"):
        _small().from_matrix(X)


def test_from_matrix_keeps_the_integer_dtype_of_a_nullable_integer_frame():
    # the docstring promises the frame's dtype; an Int64 frame (a mapper's release of one) gave float64 ratings
    W = pd.DataFrame([[4, 0, 5], [0, 2, 0]], index=["a", "b"], columns=[1, 2, 3])
    out = _small().from_matrix(W.astype("Int64"))
    assert out["rating"].dtype == np.int64 and out["rating"].tolist() == [4, 5, 2]
    assert _small().from_matrix(W.astype("UInt8"))["rating"].dtype == np.uint8
    assert _small().from_matrix(W.astype("Float32"))["rating"].dtype == np.float32


def test_from_matrix_says_a_one_dimensional_sparse_array_is_not_a_matrix():
    # TypeError "X must hold real-number ratings, got shape must have length in (2,). Got new_shape=(1,)"
    with pytest.raises(ValueError, match=r"X must be a 2-D user x item matrix, got an array of shape \(3,\)"):
        _small().from_matrix(sp.coo_array(np.array([4.0, 0.0, 5.0])))


# ----------------------------------------------------------------------------- 4. generators
@pytest.mark.parametrize("value", ["no", 1, None])
def test_make_ratings_refuses_a_return_dense_that_is_not_a_bool(value):
    # return_dense="no" (or 1) returned a dense ndarray, None a CSR matrix, without a word
    with pytest.raises(TypeError, match=f"return_dense must be a bool, got {value!r}"):
        make_ratings(10, 30, return_dense=value, random_state=0)
    assert isinstance(make_ratings(10, 30, return_dense=np.True_, random_state=0)[0], np.ndarray)


# ----------------------------------------------------------------------------- 5. predict's mask
def _fitted_split():
    X, _ = _ratings()
    train, held = holdout_split(X, 0.2, random_state=0)
    rec = SurpriseRecommender("BaselineOnly").fit(train)
    return rec, train, held


@pytest.mark.parametrize("kind", ["nan_array", "none_objects", "nullable_na", "stored_nan"])
def test_predict_refuses_a_mask_with_missing_cells(kind):
    # the held-out ratings in pivot form (NaN where not held out) were read as nonzero: every cell was predicted
    rec, train, held = _fitted_split()
    D = held.toarray()
    mask = {"nan_array": np.where(D == 0, np.nan, D),
            "none_objects": np.where(D != 0, 1, None),
            "nullable_na": pd.DataFrame(np.where(D != 0, True, None)).astype("boolean"),
            "stored_nan": sp.csr_matrix(np.where(D == 0, np.nan, D))}[kind]
    with pytest.raises(ValueError, match=r"mask holds \d+ missing cell\(s\) \(NaN, None or pd\.NA; the first at row "
                                         r"0, column \d+\).*fillna\(0\)"):
        rec.predict(train, mask=mask)


def test_predict_reads_a_nullable_boolean_mask_by_its_support():
    # "scipy.sparse does not support dtype object"
    rec, train, held = _fitted_split()
    mask = pd.DataFrame(held.toarray() != 0).astype("boolean")
    got = rec.predict(train, mask=mask)
    assert got.nnz == held.nnz
    np.testing.assert_allclose(got.toarray(), rec.predict(train, mask=held).toarray())


# ----------------------------------------------------------------------------- 6. loaders
@pytest.mark.parametrize("loader", ["load_movielens_100k", "load_movielens_1m"])
def test_a_movielens_ratings_csv_folder_points_to_load_ratings_csv(tmp_path, loader):
    # MovieLens latest / 20M / 25M ('userId,movieId,rating,timestamp'): the message listed the missing files only
    from privrelease import datasets

    (tmp_path / "ratings.csv").write_text("userId,movieId,rating,timestamp\n1,1,4.0,964982703\n2,1,3.5,964982931\n")
    with pytest.raises(FileNotFoundError, match=r"ratings\.csv exists .*load_ratings_csv\(path, user_col='userId', "
                                                r"item_col='movieId', timestamp_col='timestamp'\)"):
        getattr(datasets, loader)(tmp_path)
    X, users, items = datasets.load_ratings_csv(tmp_path / "ratings.csv", user_col="userId", item_col="movieId",
                                                timestamp_col="timestamp")
    assert X.toarray().tolist() == [[4.0], [3.5]] and users.tolist() == [1, 2] and items.tolist() == [1]


# ----------------------------------------------------------------------------- 7. long-form ratings
@pytest.mark.parametrize("ratings", [pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03"]),
                                     pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03"]).tz_localize("UTC"),
                                     pd.to_timedelta([1, 2, 3], unit="s")])
def test_a_date_or_duration_rating_column_is_refused(ratings):
    # read as numbers: ratings of 1.5778368e+15 (microseconds since 1970) or 1e6 (microseconds), without a word
    df = pd.DataFrame({"user": ["a", "b", "a"], "item": [1, 2, 3], "rating": ratings})
    with pytest.raises(TypeError, match=r"ratings must hold ratings as numbers, got dtype .*\(column 'rating'\): "
                                        r"dates and durations are not ratings"):
        RatingsFrame().fit(df)


def test_the_attacker_and_blurme_read_a_nan_filled_sparse_frame_as_its_values():
    # pandas' "fill value must be 0 when converting to COO matrix" inside scikit-learn
    from privrelease.evaluation import BlurMe, InferenceAttack

    X, y = _ratings()
    F = _nan_filled(X)
    attack = InferenceAttack(random_state=0).fit(F, y)
    np.testing.assert_array_equal(attack.predict(F), InferenceAttack(random_state=0).fit(X, y).predict(X))
    out = BlurMe(random_state=0).fit(F, y).transform(F)
    expected = BlurMe(random_state=0).fit(X, y).transform(X)
    np.testing.assert_array_equal(sp.csr_matrix(out.sparse.to_coo()).toarray(), expected.toarray())


# ----------------------------------------------------------------------------- 8. a frame without columns
@pytest.mark.parametrize("call", ["quantized", "erasure", "recommender", "attack"])
def test_a_dataframe_without_columns_is_named(call):
    # scikit-learn's check_array: numpy's "at least one array or dtype is required"
    from privrelease import ErasureMapper
    from privrelease.evaluation import InferenceAttack

    E, y = pd.DataFrame(index=range(10)), [0, 1] * 5
    run = {"quantized": lambda: QuantizedPrivacyMapper(random_state=0).fit(E, y),
           "erasure": lambda: ErasureMapper(random_state=0).fit(E, y),
           "recommender": lambda: SurpriseRecommender().fit(E),
           "attack": lambda: InferenceAttack().fit(E, y)}[call]
    with pytest.raises(ValueError, match=r"X is a DataFrame without columns \(shape \(10, 0\)\); expected at least "
                                         r"one column"):
        run()


# ----------------------------------------------------------------------------- 9. tuple ids in the recommender
def test_the_recommender_takes_tuple_ids_as_ids():
    # fit: "user_ids must have one id per row (20), got shape (20, 2)"; predict_pairs flattened the tuples' fields
    X, _, _ = make_ratings(20, 30, random_state=0)
    ids = [(i, "x") for i in range(20)]
    rec = SurpriseRecommender("BaselineOnly").fit(X, user_ids=ids)
    assert rec.user_ids_.shape == (20,) and rec.user_ids_[3] == (3, "x")
    np.testing.assert_allclose(rec.predict_pairs([(3, "x"), (4, "x")], [0, 1]), rec.predict(X[3:5])[[0, 1], [0, 1]])


# ----------------------------------------------------------------------------- 10. generators at extreme scales
@pytest.mark.parametrize("kw", [{"preference_scale": 1e308, "noise": 1e308},
                                {"attribute_bias_shift": 1e308, "noise": 1e308},
                                {"user_bias_scale": 1e308, "noise": 1e308}])
def test_make_realistic_ratings_never_stores_a_nan_rating(kw):
    # terms overflowing to +inf and -inf summed to NaN: 10 to 37 NaN ratings stored in the matrix, without a word
    from privrelease.datasets import make_realistic_ratings

    with np.errstate(all="ignore"), pytest.raises(ValueError, match=r"generated ratings are NaN: their terms "
                                                                    r"overflow float64 .*noise=1e\+308"):
        make_realistic_ratings(100, 40, random_state=0, **kw)
    X, _, _ = make_realistic_ratings(100, 40, random_state=0, noise=1e308)  # +-inf alone: clipped to the scale
    assert np.isfinite(X.data).all() and set(np.unique(X.data)) <= {1.0, 5.0}


# ----------------------------------------------------------------------------- 11. ids spelled like a missing value
def test_a_rating_file_whose_ids_are_missing_markers_is_warned(tmp_path):
    # R writes a missing id as NA: every such rating became one user 'NA', without a word (an empty id is refused)
    from privrelease.datasets import load_ratings_csv

    path = tmp_path / "r.csv"
    path.write_text("user,item,rating\nNA,2,4\n1,3,5\nNA,3,2\n")
    with pytest.warns(UserWarning, match=r"column 'user' holds the id 'NA' \(line 2; 2 row\(s\) hold such ids: "
                                         r"\['NA'\]\), the text pandas, numpy, R or a database write for a missing"):
        X, users, _ = load_ratings_csv(path)
    assert users.tolist() == ["1", "NA"] and X.shape == (2, 2)  # kept: it may be a real id


def test_ratings_frame_warns_about_an_id_spelled_nan():
    ids = np.array([1.0, np.nan, 2.0]).astype(str).astype(object)  # numpy writes the missing id as 'nan'
    df = pd.DataFrame({"user": ids, "item": [1, 2, 3], "rating": [4, 2, 5]})
    with pytest.warns(UserWarning, match=r"ratings\['user'\] holds the id 'nan' \(row 1; 1 row\(s\)"):
        RatingsFrame().fit(df)
