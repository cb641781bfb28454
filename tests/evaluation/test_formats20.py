"""Recommender formats (issue 13): long form told from a wide table by shape and content, a re-rated pair said once."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease.evaluation import BlurMe, BlurMore, InferenceAttack, evaluate_attacks, rmse_cost
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.recommender import RatingsFrame


def _wide(n_users=50, density=0.5, seed=0, columns=None):
    """A user x item table of ratings 0..5 (0: not rated) whose first two items are named like ids."""
    columns = columns or ["Customer", "Product"] + [f"item {k}" for k in range(40)]
    rng = np.random.default_rng(seed)
    shape = (n_users, len(columns))
    R = np.where(rng.random(shape) < density, rng.integers(1, 6, shape), 0)
    R[:, 2] = rng.integers(1, 6, n_users)  # every user rates something
    return pd.DataFrame(R, columns=columns), np.arange(n_users) % 2


def _long(n_users=30, n_items=20, seed=0):
    """MovieLens' ratings.csv: one row per rating, numeric ids from 1, a timestamp."""
    rng = np.random.default_rng(seed)
    u, i = np.nonzero(rng.random((n_users, n_items)) < 0.3)
    return pd.DataFrame({"userId": u + 1, "movieId": i + 1, "rating": rng.integers(1, 6, u.size),
                         "timestamp": rng.integers(10**9, 2 * 10**9, u.size)})


@pytest.mark.parametrize("n_users, density", [(50, 0.5), (10, 1.0), (6, 1.0)])
def test_a_wide_table_with_items_named_like_ids_is_released_as_a_matrix(n_users, density):
    W, y = _wide(n_users, density)
    Z = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(W, y).transform(W)
    assert isinstance(Z, pd.DataFrame) and Z.shape == W.shape and list(Z.columns) == list(W.columns)
    # the same release as the table's values without its column names
    plain = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(W.to_numpy(), y).transform(W.to_numpy())
    np.testing.assert_array_equal(Z.to_numpy(), plain)


def test_a_wide_table_with_items_named_like_ids_passes_the_evaluation():
    W, y = _wide()
    cost = rmse_cost(QuantizedPrivacyMapper(n_clusters=2), W, y, rating_range=(1, 5), cv=2, heldout_fraction=0.5,
                     random_state=0, verbose=0)
    assert np.isfinite(cost.summary["rmse_original"])
    attack = InferenceAttack(random_state=0).fit(W, y)
    assert attack.predict(W).shape == (len(W),)
    table = evaluate_attacks(W, W, y, W, y, models="logistic", features="values", random_state=0, verbose=0)[0]
    assert np.all(np.isfinite(table["auc"].to_numpy()))


def test_a_small_wide_table_of_five_columns_named_user_and_item_is_a_matrix():
    W, y = _wide(40, 0.5, columns=["user", "item", "a", "b", "c"])
    Z = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit_transform(W, y)
    assert Z.shape == (40, 5)


@pytest.mark.parametrize("ids", ["int", "str", "category", "Int64", "float"])
@pytest.mark.parametrize("extra", [False, True])
def test_a_long_form_table_is_still_refused_with_its_conversion(ids, extra):
    L = _long()
    if ids != "int":
        L = L.astype({"userId": ids, "movieId": ids if ids != "str" else "int64"})
    if not extra:
        L = L.drop(columns="timestamp")
    else:  # a date column and a review's votes beside the timestamp
        L = L.assign(date=pd.to_datetime(L["timestamp"], unit="s"), helpful=np.arange(len(L)) % 7)
    y = np.arange(len(L)) % 2
    for call in (lambda: QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(L, y),
                 lambda: InferenceAttack().fit(L, y)):
        with pytest.raises(TypeError, match="long form") as err:
            call()
        assert "RatingsFrame(user='userId', item='movieId', rating='rating')" in str(err.value)
        assert "cannot be told" not in str(err.value)  # nothing speaks for a matrix
    # the conversion the message gives works
    rf = RatingsFrame(user="userId", item="movieId", rating="rating").fit(L)
    assert rf.to_matrix(L).nnz == len(L)


def test_an_ambiguous_table_is_refused_saying_both_readings():
    # ids 1..3 are also ratings: a tiny long-form table, or a 3-item matrix? Not guessed.
    small = pd.DataFrame({"user": [1, 1, 2, 2, 3], "item": [1, 2, 1, 3, 2], "rating": [5, 3, 4, 1, 2]})
    with pytest.raises(TypeError, match="long form") as err:
        QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(small, [0, 1, 0, 1, 0])
    message = str(err.value)
    assert "cannot be told" in message and "RatingsFrame(user='user'" in message and "X.to_numpy()" in message
    # the way out for the matrix reading
    Z = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit_transform(small.to_numpy(), [0, 1, 0, 1, 0])
    assert Z.shape == (5, 3)


def test_a_play_log_with_repeated_pairs_is_not_read_as_a_matrix():
    # (user, track, timestamp): a pair is played many times; three columns, ids beyond every other value
    rng = np.random.default_rng(1)
    log = pd.DataFrame({"user": rng.integers(100, 110, 200), "track": rng.integers(500, 520, 200),
                        "timestamp": rng.integers(10**9, 2 * 10**9, 200)})
    with pytest.raises(TypeError, match="long form"):
        QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(log, np.arange(200) % 2)


def _log(n_rows=3000, repeated=0.3, seed=0):
    """A MovieLens-like table of which ``repeated`` of the rows repeat an earlier (user, item) pair (a play log)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"userId": rng.integers(1, 944, n_rows), "movieId": rng.integers(1, 1683, n_rows)})
    df = df.drop_duplicates().reset_index(drop=True)
    df = pd.concat([df, df.iloc[:int(repeated * len(df))]], ignore_index=True)
    return df.assign(rating=rng.integers(1, 6, len(df)), timestamp=rng.integers(874724710, 893286638, len(df)))


def _genres(L, seed=0):
    """``L`` with 19 one-hot genre columns (MovieLens' u.item joined to its ratings)."""
    flags = np.random.default_rng(seed).integers(0, 2, (len(L), 19))
    return pd.concat([L, pd.DataFrame(flags, columns=[f"genre {k}" for k in range(19)])], axis=1)


def _csv_round_trip(L):
    import io

    buffer = io.StringIO()
    L.to_csv(buffer)
    buffer.seek(0)
    return pd.read_csv(buffer)


@pytest.mark.parametrize("make", [lambda: _log().reset_index(), lambda: _csv_round_trip(_log()),
                                  lambda: _genres(_log(repeated=0)).reset_index(),
                                  lambda: _csv_round_trip(_genres(_log(repeated=0)))])
def test_a_long_form_table_with_a_row_number_column_is_not_read_as_a_matrix(make):
    # the row numbers hold every id; they are no ratings, and neither are the timestamps
    L = make()
    y = np.arange(len(L)) % 2
    with pytest.raises(TypeError, match="long form") as err:
        QuantizedPrivacyMapper(random_state=0).fit(L, y)
    assert "RatingsFrame(user='userId', item='movieId', rating='rating')" in str(err.value)
    with pytest.raises(TypeError, match="long form"):
        rmse_cost(QuantizedPrivacyMapper(random_state=0), L, y, random_state=0, verbose=0, cv=2)


@pytest.mark.parametrize("rating", ["stars", "overall", "grade"])
def test_the_conversion_names_the_rating_column_not_the_row_numbers(rating):
    L = _csv_round_trip(_long().drop(columns="timestamp").rename(columns={"rating": rating}))
    assert L.columns[0] == "Unnamed: 0"
    with pytest.raises(TypeError, match="long form") as err:
        QuantizedPrivacyMapper(random_state=0).fit(L, np.arange(len(L)) % 2)
    assert f"RatingsFrame(user='userId', item='movieId', rating='{rating}')" in str(err.value)
    # a rating column without a rating's name: the one on a rating scale, not the row numbers or the timestamps
    L = _csv_round_trip(_long().rename(columns={"rating": "r"})[["userId", "movieId", "timestamp", "r"]])
    with pytest.raises(TypeError, match="long form") as err:
        QuantizedPrivacyMapper(random_state=0).fit(L, np.arange(len(L)) % 2)
    assert "RatingsFrame(user='userId', item='movieId', rating='r')" in str(err.value)


@pytest.mark.parametrize("as_strings", [lambda W: W.astype(str), lambda W: W.astype({"Customer": str, "Product": str}),
                                        lambda W: W.astype("string")])
def test_a_wide_table_of_numbers_stored_as_strings_is_a_matrix(as_strings):
    # a quoted CSV: the numbers are read as numbers, as without the two id-like names
    W, y = _wide(100, 1.0)
    Z = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(as_strings(W), y).transform(as_strings(W))
    expected = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(W, y).transform(W)
    np.testing.assert_array_equal(np.asarray(Z, dtype=float), expected.to_numpy(dtype=float))


def test_a_long_form_table_with_a_missing_id_is_refused_as_long_form_not_told_to_fill_it():
    # filling the NaN with 0 would release the long form as a matrix
    L = _log(repeated=0).astype({"userId": float})
    L.loc[3, "userId"] = np.nan
    with pytest.raises(TypeError, match="long form") as err:
        QuantizedPrivacyMapper(random_state=0).fit(L, np.arange(len(L)) % 2)
    assert "fillna" not in str(err.value)


def test_a_plain_refusal_says_why_the_table_is_long_form():
    L = _long()
    with pytest.raises(TypeError, match="long form") as err:
        QuantizedPrivacyMapper(random_state=0).fit(L, np.arange(len(L)) % 2)
    assert ("it has 4 columns and each (user, item) pair is on one row and 'userId' and 'movieId' hold values no "
            "column of ratings holds" in str(err.value))


def test_a_wide_pivot_with_nan_is_told_to_fill_not_to_convert_from_long_form():
    # items named like ids in a pivot (NaN unrated): the NaN are the problem, not the form
    W, y = _wide(20)
    W = W.astype(float).replace(0.0, np.nan)
    with pytest.raises(ValueError, match=r"NaN entries .*fillna\(0\)"):
        QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(W, y)
    Z = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(W.fillna(0), y).transform(W.fillna(0))
    assert Z.shape == W.shape


def _with_repeated_pair():
    rng = np.random.default_rng(0)
    X = np.where(rng.random((30, 6)) < 0.6, rng.integers(1, 6, (30, 6)), 0).astype(float)
    X[:, 0] = rng.integers(1, 6, 30)
    c = sp.coo_matrix(X)
    repeated = sp.coo_matrix((np.r_[c.data, 1.0], (np.r_[c.row, 0], np.r_[c.col, 0])), shape=X.shape)
    summed = X.copy()
    summed[0, 0] += 1.0
    return repeated, summed, np.arange(30) % 2


def _said(caught):
    return [w for w in caught if "more than once" in str(w.message)]


def test_fit_transform_warns_once_of_a_repeated_pair_and_releases_as_fit_then_transform():
    D, summed, y = _with_repeated_pair()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Z = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit_transform(D, y)
    assert len(_said(caught)) == 1
    assert sp.issparse(Z) and Z.format == "coo" and Z.shape == D.shape
    expected = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(sp.coo_matrix(summed), y).transform(
        sp.coo_matrix(summed))
    np.testing.assert_array_equal(Z.toarray(), expected.toarray())
    # each call of its own still says it: fit, then transform
    mapper = QuantizedPrivacyMapper(n_clusters=3, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mapper.fit(D, y)
        mapper.transform(D)
    assert len(_said(caught)) == 2


def test_from_matrix_warns_of_a_pair_stored_twice_and_reads_the_sum():
    rf = RatingsFrame().fit(pd.DataFrame({"user": ["a", "b", "c"], "item": [1, 2, 1], "rating": [3.0, 4.0, 5.0]}))
    D = sp.coo_matrix(([2.0, 2.0, 4.0], ([0, 0, 1], [0, 0, 1])), shape=(3, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = rf.from_matrix(D)
    said = _said(caught)
    assert len(said) == 1 and "row 0, column 0 2 times" in str(said[0].message)
    assert out.to_dict("list") == {"user": ["a", "b"], "item": [1, 2], "rating": [4.0, 4.0]}
    # a canonical matrix (a mapper's release) is read without a word
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rf.from_matrix(sp.csr_matrix(D))
    assert not _said(caught)


@pytest.mark.parametrize("make", [lambda: BlurMe(random_state=0), lambda: BlurMore(random_state=0)])
def test_blurme_fit_transform_warns_once_of_a_repeated_pair(make):
    D, summed, y = _with_repeated_pair()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Z = make().fit_transform(D, y)
    assert len(_said(caught)) == 1
    assert sp.issparse(Z) and Z.format == "coo" and Z.shape == D.shape
    expected = make().fit(sp.coo_matrix(summed), y).transform(sp.coo_matrix(summed))
    np.testing.assert_array_equal(Z.toarray(), expected.toarray())


@pytest.mark.parametrize("make", ["dclef", "truthful"])
@pytest.mark.parametrize("missing, shown", [("nan", "nan"), ("Float64 NA", "pd.NA"), ("None", "None"),
                                            ("inf", "inf"), ("-inf in a list", "-inf")])
def test_a_missing_or_infinite_private_value_is_named_with_its_position(make, missing, shown):
    from privrelease import DCLEFEstimator, TruthfulRegressionMechanism

    X = np.random.default_rng(0).random((20, 2)) / 2
    d = np.linspace(0.0, 1.0, 20)
    y = {"nan": np.r_[d[:3], np.nan, d[4:]],
         "Float64 NA": pd.Series(d).astype("Float64").mask(pd.Series(range(20)) == 3, pd.NA),
         "None": pd.Series(list(d[:3]) + [None] + list(d[4:]), dtype=object),
         "inf": np.r_[d[:3], np.inf, d[4:]],
         "-inf in a list": list(d[:3]) + [-np.inf] + list(d[4:])}[missing]
    kind = "infinite" if "inf" in missing else "missing"
    est = DCLEFEstimator(data_range=(0, 1), random_state=0) if make == "dclef" else TruthfulRegressionMechanism()
    with pytest.raises(ValueError, match=rf"y must hold .* real numbers, got {shown} at position 3 \(1 {kind} value"):
        est.fit(X, y)
    complete = pd.Series(d).astype("Float64")  # the nullable dtype without a missing value is read as its numbers
    fitted = est.fit(X, complete)
    assert fitted.predict(X).shape == (20,) if make == "dclef" else hasattr(fitted, "n_clipped_")


@pytest.mark.parametrize("make", ["dclef", "truthful"])
def test_a_target_of_strings_with_a_missing_value_is_refused_for_its_strings(make):
    from privrelease import DCLEFEstimator, TruthfulRegressionMechanism

    est = DCLEFEstimator(data_range=(0, 1), random_state=0) if make == "dclef" else TruthfulRegressionMechanism()
    for y in (np.array(["a", None, "b", "c"], dtype=object), pd.Series(["a", "b", None, "c"])):
        with pytest.raises(TypeError, match=r"y must hold .* real numbers, got an array of dtype object \(for "
                                            r"example 'a'\)"):
            est.fit(np.eye(4) / 2, y)


def test_a_long_form_dask_frame_is_refused_and_a_wide_one_fitted():
    import dask.dataframe as dd

    L = _long()
    with pytest.raises(TypeError, match="long form") as err:
        QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(dd.from_pandas(L, npartitions=3),
                                                                 np.arange(len(L)) % 2)
    assert "RatingsFrame(user='userId', item='movieId', rating='rating')" in str(err.value)
    W, y = _wide(60)
    D = dd.from_pandas(W, npartitions=3)
    Z = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(D, y).transform(D)
    assert Z.compute().shape == W.shape


def test_a_long_form_dask_frame_whose_first_partition_is_empty_is_refused():
    import dask.dataframe as dd

    L = _long(60, 40)
    D = dd.from_pandas(L, npartitions=4)
    D = D[D["userId"] > int(L["userId"].iloc[len(L) // 3])]  # a filter empties the first partition
    assert D.partitions[0].compute().empty
    with pytest.raises(TypeError, match="long form") as err:
        QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(D, np.arange(len(D)) % 2)
    assert "RatingsFrame(user='userId', item='movieId', rating='rating')" in str(err.value)
    assert "cannot be told" not in str(err.value)  # its rows say it: an empty partition says nothing
    # a wide frame of six columns, two named like ids, whose first partition is empty is a matrix
    W, y = _wide(60, columns=["Customer", "Product", "a", "b", "c", "d"])
    D = dd.from_pandas(W, npartitions=3)
    dy = dd.from_pandas(pd.Series(y), npartitions=3)
    D, dy = D.loc[20:], dy.loc[20:]
    assert D.partitions[0].compute().empty
    Z = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(D, dy).transform(W.iloc[20:])
    assert Z.shape == (40, 6)


def test_a_wide_table_of_counts_with_items_named_like_ids_is_a_matrix():
    # play counts (beyond a rating scale) in 40 columns, two of them named like ids: no column holds ratings, which
    # says nothing about a wide table; it was refused as ambiguous
    rng = np.random.default_rng(0)
    C = pd.DataFrame(rng.poisson(300, (60, 40)), columns=[f"m{k}" for k in range(38)] + ["Customer", "Product"])
    y = rng.integers(0, 2, 60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(C, y).transform(C)
    assert out.shape == C.shape and list(out.columns) == list(C.columns)
