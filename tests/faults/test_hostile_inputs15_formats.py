"""Hostile inputs, round 15: labelled frames and ids across the rating formats and the recommender.

A DataFrame's index and columns are labels: where the library pairs a frame with user or item ids (or with
another frame) by position, a frame in another order gave users other users' ratings silently. Ids of several
kinds, or integers beyond float64's precision, are keys and must stay what they are.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease.recommender import RatingsFrame, SurpriseRecommender

B = 2**53


def _rf():
    df = pd.DataFrame({"user": ["a", "a", "b", "c"], "item": ["x", "y", "x", "y"], "rating": [1.0, 2.0, 3.0, 4.0]})
    rf = RatingsFrame().fit(df)
    return rf, df, rf.to_matrix(df)


def _pairs(frame):
    return sorted(zip(frame["user"], frame["item"], frame["rating"]))


# ----------------------------------------------------------------------------- from_matrix of a labelled frame
@pytest.mark.parametrize("sparse", [False, True])
def test_from_matrix_matches_a_frame_by_its_labels(sparse):
    rf, df, X = _rf()
    D = pd.DataFrame(X.toarray(), index=rf.user_ids_, columns=rf.item_ids_).loc[["c", "b", "a"], ["y", "x"]]
    if sparse:
        D = D.astype(pd.SparseDtype(np.float64, 0.0))
    # each (user, item) keeps the rating the frame gives it, whatever the order of its rows and columns
    expected = sorted((u, i, D.loc[u, i]) for u in D.index for i in D.columns if D.loc[u, i] != 0)
    assert _pairs(rf.from_matrix(D)) == expected == _pairs(df)


def test_from_matrix_of_a_mappers_sparse_frame_release_keeps_each_users_ratings():
    from privrelease import QuantizedPrivacyMapper

    rng = np.random.default_rng(0)
    R = rng.integers(0, 6, (40, 6)).astype(np.float64)
    R[:, 0] = rng.integers(1, 6, 40)  # every user rates: each is a user id of the long form
    R = sp.csr_matrix(R)
    names = [f"u{i}" for i in range(40)]
    long = pd.DataFrame({"user": np.repeat(names, np.diff(R.indptr)), "item": [f"i{j}" for j in R.indices],
                         "rating": R.data})
    rf = RatingsFrame().fit(long)  # sorted ids: u0, u1, u10, ... another order than the frame's
    S = pd.DataFrame.sparse.from_spmatrix(R, index=names, columns=[f"i{j}" for j in range(6)])
    rel = QuantizedPrivacyMapper(n_clusters=2, delta=5.0, random_state=0).fit(S, rng.integers(0, 2, 40)).transform(S)
    dense = rel.sparse.to_dense()
    expected = sorted((u, i, dense.loc[u, i]) for u in dense.index for i in dense.columns if dense.loc[u, i] != 0)
    assert _pairs(rf.from_matrix(rel)) == expected


@pytest.mark.parametrize("index, columns, fragment", [
    (["a", "b", "z"], ["x", "y"], "row 2 of X is labelled 'z', which is not a user id"),
    (["a", "b", "c"], ["y", "q"], "column 1 of X is labelled 'q', which is not an item id"),
    (["a", "a", "b"], ["x", "y"], "X.index holds 'a' more than once"),
    (["a", "b"], ["x", "y"], "user 'c' has no row in X"),
])
def test_from_matrix_refuses_a_frame_labelled_otherwise(index, columns, fragment):
    rf, _, _ = _rf()
    with pytest.raises(ValueError, match="paired with the (users|items) by position") as info:
        rf.from_matrix(pd.DataFrame(np.ones((len(index), 2)), index=index, columns=columns))
    assert fragment in str(info.value)


def test_from_matrix_reads_an_unlabelled_frame_by_position():
    rf, df, X = _rf()
    assert _pairs(rf.from_matrix(pd.DataFrame(X.toarray()))) == _pairs(df)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.int64])
def test_from_matrix_of_a_frame_keeps_its_dtype(dtype):
    rf, _, X = _rf()
    D = pd.DataFrame(X.toarray().astype(dtype), index=rf.user_ids_, columns=rf.item_ids_)
    assert rf.from_matrix(D)["rating"].dtype == np.dtype(dtype)
    S = D.astype(pd.SparseDtype(dtype, 0))
    assert rf.from_matrix(S)["rating"].dtype == np.dtype(dtype)


# ----------------------------------------------------------------------------- to_surprise of a wide frame
def test_to_trainset_reads_a_wide_frame_labelled_by_the_ids_as_a_matrix():
    rf, df, X = _rf()
    wide = pd.DataFrame(X.toarray(), index=rf.user_ids_, columns=rf.item_ids_).loc[["b", "c", "a"]]
    tr = rf.to_trainset(pd.DataFrame.sparse.from_spmatrix(sp.csr_matrix(wide.to_numpy()), index=wide.index,
                                                          columns=wide.columns))
    back = sorted((tr.to_raw_uid(u), tr.to_raw_iid(i), r) for u, i, r in tr.all_ratings())
    assert back == _pairs(df)


def test_to_surprise_of_a_frame_neither_long_nor_the_matrix_points_to_from_matrix():
    rf, _, _ = _rf()
    with pytest.raises(ValueError, match="wide user x item matrix.*from_matrix"):
        rf.to_surprise(pd.DataFrame(np.ones((5, 4)), columns=["p", "q", "r", "s"]))


# ----------------------------------------------------------------------------- align keeps big integer labels
def test_align_keeps_integer_labels_distinct_when_a_user_has_none():
    rf, _, _ = _rf()
    y = rf.align(pd.Series({"a": B, "b": B + 1}))
    assert y.tolist() == [B, B + 1, -1] and all(type(v) is int for v in y)
    Y = rf.align(pd.DataFrame({"g": [B, B + 1]}, index=["a", "b"]))  # a DataFrame since round 16 (names kept)
    assert Y["g"].tolist() == [B, B + 1, -1]
    small = rf.align({"a": 1, "b": 0})
    assert small.tolist() == [1, 0, -1] and all(type(v) is int for v in small)


# ----------------------------------------------------------------------------- the recommender pairs frames by label
def _held_out_frames():
    rng = np.random.default_rng(0)
    R = np.where(rng.random((30, 8)) < 0.6, rng.integers(1, 6, (30, 8)), 0).astype(np.float64)
    R[:, 0] = rng.integers(1, 6, 30)
    R[:, 1] = rng.integers(1, 6, 30)
    held = np.zeros_like(R)
    held[:, 1], R[:, 1] = R[:, 1], 0.0  # item 1 held out for every user
    idx, cols = [f"u{i}" for i in range(30)], [f"i{j}" for j in range(8)]
    return pd.DataFrame(R, index=idx, columns=cols), pd.DataFrame(held, index=idx, columns=cols)


@pytest.mark.parametrize("shuffle", ["rows", "columns"])
def test_rmse_score_and_predict_mask_refuse_y_labelled_in_another_order(shuffle):
    Tr, Te = _held_out_frames()
    rec = SurpriseRecommender(random_state=0, algo_params={"n_epochs": 3}).fit(Tr)
    # the RMSE recomputed from the full prediction, cell by cell by label
    pred = rec.predict(Tr)
    held = Te.to_numpy() != 0
    expected = np.sqrt(np.mean((pred[held] - Te.to_numpy()[held]) ** 2))
    assert rec.rmse(Tr, Te) == pytest.approx(expected)
    other = Te.iloc[::-1] if shuffle == "rows" else Te[Te.columns[::-1]]
    what = "indexed differently" if shuffle == "rows" else "columns labelled differently"
    for call in (lambda: rec.rmse(Tr, other), lambda: rec.score(Tr, other), lambda: rec.predict(Tr, mask=other)):
        with pytest.raises(ValueError, match=what):
            call()
    # the same values by position, without labels, are still read by position
    assert rec.rmse(Tr, Te.to_numpy()) == pytest.approx(expected)


# ----------------------------------------------------------------------------- ids of several kinds stay themselves
X_IDS = np.array([[5.0, 1.0], [1.0, 5.0], [4.0, 0.0]])


@pytest.mark.parametrize("ids", [["a", 5, 6.5], [2**63 + 1, -1, 3], [B, B + 1, 0.5], [2**64 + 3, "b", 7]])
def test_fit_keeps_ids_of_several_kinds_exactly(ids):
    rec = SurpriseRecommender(random_state=0, algo_params={"n_epochs": 2}).fit(X_IDS, user_ids=ids)
    assert rec.user_ids_.tolist() == ids
    assert [type(u) for u in rec.user_ids_] == [type(u) for u in ids]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every id is known: no warning
        got = rec.predict_pairs(ids, [0, 0, 0])
    # a known user gets its own fitted bias and factors (the fitted parameters of its row)
    own = rec.global_mean_ + rec.user_bias_ + rec.item_bias_[0] + rec.user_factors_ @ rec.item_factors_[0]
    np.testing.assert_allclose(got, np.clip(own, *rec.rating_scale_))


def test_predict_pairs_warns_about_an_id_known_only_in_another_type():
    rec = SurpriseRecommender(random_state=0, algo_params={"n_epochs": 2}).fit(X_IDS, user_ids=["a", 5, 6.5])
    unknown = np.clip(rec.global_mean_ + rec.item_bias_[0], *rec.rating_scale_)
    with pytest.warns(UserWarning, match=r"1 of the 2 user ids.*'5' \(str\) differs from user 5 \(int\) only in type"):
        got = rec.predict_pairs(["5", "a"], [0, 0])
    assert got[0] == pytest.approx(unknown)
    with pytest.warns(UserWarning, match="1 of the 1 item ids requested match no item"):
        rec.predict_pairs(["a"], [7])


# ----------------------------------------------------------------------------- a dense frame's release stays a frame
def _labelled_ratings():
    from privrelease.datasets import make_ratings

    X, a, _ = make_ratings(80, 30, random_state=0)
    D = pd.DataFrame(X.toarray(), index=[f"u{i}" for i in range(80)], columns=[f"i{j}" for j in range(30)])
    return X, a, D


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_quantized_mapper_releases_a_dense_frame_as_a_frame_with_its_labels(dtype):
    from privrelease import QuantizedPrivacyMapper

    _, a, D = _labelled_ratings()
    D = D.astype(dtype)
    m = QuantizedPrivacyMapper(n_clusters=3, delta=5.0, random_state=0).fit(D, a)
    out = m.transform(D)
    array_release = QuantizedPrivacyMapper(n_clusters=3, delta=5.0, random_state=0).fit(D.to_numpy(), a)
    expected = array_release.transform(D.to_numpy())
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(D.index) and out.columns.equals(D.columns)
    assert all(d == expected.dtype for d in out.dtypes)
    np.testing.assert_array_equal(out.to_numpy(), expected)  # the same seeded draw, the same rows
    # every released row is one of the release profiles
    profiles = m.release_profiles_.toarray()
    assert all((profiles == row).all(axis=1).any() for row in out.to_numpy())
    # set_output(transform="pandas") gives the same frame (not wrapped twice, labels kept)
    pandas_out = QuantizedPrivacyMapper(n_clusters=3, delta=5.0, random_state=0).set_output(
        transform="pandas").fit(D, a).transform(D)
    pd.testing.assert_frame_equal(pandas_out, out)


# ----------------------------------------------------------------------------- the rmse scorer keeps the frame
@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_rmse_scorer_on_a_frame_raises_no_feature_name_warning(kind):
    from sklearn.pipeline import Pipeline

    from privrelease import QuantizedPrivacyMapper
    from privrelease.evaluation import make_privacy_scorer

    X, a, D = _labelled_ratings()
    if kind == "sparse":
        D = pd.DataFrame.sparse.from_spmatrix(X, index=D.index, columns=D.columns)
    p = Pipeline([("privacy", QuantizedPrivacyMapper(n_clusters=3, delta=5.0, random_state=0)),
                  ("recommender", SurpriseRecommender(random_state=0, algo_params={"n_epochs": 3}))]).fit(D, a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        on_frame = make_privacy_scorer("rmse", random_state=0)(p, D, a)
    # the same score as on the bare matrix (the frame's values, by position)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the matrix has no feature names: sklearn says so
        assert on_frame == pytest.approx(make_privacy_scorer("rmse", random_state=0)(p, X, a))


def test_nullable_integer_frame_keeps_its_dtype_in_memory_as_on_dask():
    # the same frame of pandas' nullable integers came back as int64 in memory and as Int64 from dask
    import dask.dataframe as dd

    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    R, y, _ = make_ratings(n_users=120, n_items=30, random_state=0)
    D = pd.DataFrame(R.toarray().astype(int), columns=[f"i{j}" for j in range(30)]).astype("Int64")
    m = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(D, y)
    mem = m.transform(D)
    lazy = m.transform(dd.from_pandas(D, npartitions=2)).compute()
    assert mem.dtypes.tolist() == lazy.dtypes.tolist() == [pd.Int64Dtype()] * 30
    assert mem.index.equals(D.index) and mem.columns.equals(D.columns)
