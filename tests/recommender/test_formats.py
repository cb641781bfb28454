"""RatingsFrame: long form <-> sparse matrix <-> Surprise, nothing lost, ids kept."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease.recommender import RatingsFrame, SurpriseRecommender


def long_ratings(n=300, seed=0):
    rng = np.random.default_rng(seed)
    users = [f"u{k:03d}" for k in rng.permutation(60)]
    items = (rng.permutation(40) * 7 + 1000).tolist()
    pairs = {(users[rng.integers(60)], items[rng.integers(40)]) for _ in range(n)}
    df = pd.DataFrame(sorted(pairs), columns=["uid", "iid"]).sample(frac=1.0, random_state=seed)
    df["stars"] = rng.integers(1, 6, len(df)).astype(float)
    return df.reset_index(drop=True)


def triples(df, u="uid", i="iid", r="stars"):
    return sorted(zip(df[u].tolist(), df[i].tolist(), df[r].astype(float).tolist()))


@pytest.mark.parametrize("sort_ids", [True, False])
def test_long_form_round_trip(sort_ids):
    df = long_ratings()
    rf = RatingsFrame("uid", "iid", "stars", sort_ids=sort_ids).fit(df)
    X = rf.to_matrix(df)
    assert sp.issparse(X) and X.format == "csr" and X.nnz == len(df)
    assert X.shape == (df.uid.nunique(), df.iid.nunique())
    # every entry is where the ids say, checked against a plain dict
    lookup = {(u, i): r for u, i, r in triples(df)}
    D = X.toarray()
    for (u, i), r in lookup.items():
        assert D[rf.user_ids_.get_loc(u), rf.item_ids_.get_loc(i)] == r
    if sort_ids:
        assert list(rf.user_ids_) == sorted(set(df.uid)) and list(rf.item_ids_) == sorted(set(df.iid))
    else:
        assert list(rf.user_ids_) == list(dict.fromkeys(df.uid))
    back = rf.from_matrix(X)
    assert list(back.columns) == ["uid", "iid", "stars"]
    assert triples(back) == triples(df)                # no user, item or rating lost or changed
    # a dense matrix, or a csc one, gives the same frame
    pd.testing.assert_frame_equal(rf.from_matrix(D), back)
    pd.testing.assert_frame_equal(rf.from_matrix(X.tocsc()), back)


def test_surprise_round_trip_and_recommender_ids():
    df = long_ratings(seed=1)
    rf = RatingsFrame("uid", "iid", "stars").fit(df)
    X = rf.to_matrix(df)
    for data in (df, X):
        ds = rf.to_surprise(data, rating_scale=(1, 5))
        assert sorted((u, i, r) for u, i, r, _ in ds.raw_ratings) == triples(df)
    ts = rf.to_trainset(X)
    assert ts.n_users == X.shape[0] and ts.n_items == X.shape[1] and ts.n_ratings == X.nnz
    for source in (ts, ds):
        rf2, df2 = RatingsFrame.from_surprise(source, user="uid", item="iid", rating="stars")
        assert triples(df2) == triples(df)
        assert list(rf2.user_ids_) == list(rf.user_ids_) and list(rf2.item_ids_) == list(rf.item_ids_)
        assert (rf2.to_matrix(df2) != X).nnz == 0
    rec = SurpriseRecommender("BaselineOnly", rating_scale=(1, 5)).fit(X, user_ids=rf.user_ids_,
                                                                       item_ids=rf.item_ids_)
    np.testing.assert_array_equal(rec.user_ids_, rf.user_ids_.to_numpy())


def test_align_marks_users_without_a_label_as_undisclosed():
    df = long_ratings(seed=2)
    rf = RatingsFrame("uid", "iid", "stars").fit(df)
    some = list(rf.user_ids_[::2])
    labels = pd.Series(["f" if k % 3 else "m" for k in range(len(some))], index=some[::-1])
    y = rf.align(labels)
    assert y.shape == (len(rf.user_ids_),)
    for k, u in enumerate(rf.user_ids_):
        assert y[k] == (labels[u] if u in labels.index else -1)


def test_errors_quote_what_was_received():
    df = long_ratings(seed=3)
    rf = RatingsFrame("uid", "iid", "stars")
    with pytest.raises(AttributeError, match="call fit"):
        rf.to_matrix(df)
    with pytest.raises(ValueError, match=r"no column\(s\) \['rating'\]; its columns are \['uid', 'iid', 'stars'\]"):
        RatingsFrame("uid", "iid").fit(df)
    dup = pd.concat([df, df.iloc[[0]]], ignore_index=True)
    with pytest.raises(ValueError, match="more than once"):
        rf.fit(dup)
    with pytest.raises(ValueError, match="holds 0"):
        rf.fit(df.assign(stars=np.where(np.arange(len(df)) == 5, 0.0, df.stars)))
    with pytest.raises(ValueError, match="must hold numbers, got 'x'"):
        rf.fit(df.assign(stars=df.stars.astype(object).where(np.arange(len(df)) != 2, "x")))
    rf.fit(df.iloc[:50])
    with pytest.raises(ValueError, match="unknown to this RatingsFrame"):
        rf.to_matrix(df)
    with pytest.raises(ValueError, match="X has shape"):
        rf.from_matrix(sp.csr_matrix((3, 3)))
    mixed = pd.DataFrame({"user": [1, "a"], "item": [1, 2], "rating": [3.0, 4.0]})
    with pytest.raises(TypeError, match="sort_ids=False"):
        RatingsFrame().fit(mixed)
    assert RatingsFrame(sort_ids=False).fit(mixed).shape == (2, 2)
    with pytest.raises(TypeError, match="column name"):
        RatingsFrame(user=0)
    with pytest.raises(TypeError, match="surprise Dataset"):
        RatingsFrame.from_surprise(df)


def test_align_names_label_ids_that_differ_from_a_user_id_only_in_normal_form():
    # "José" typed in NFD (as macOS file names are) next to the user "José" in NFC: the warning said "match no
    # user" with no hint why the two looked alike
    import unicodedata

    nfc, nfd = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
    assert nfc != nfd
    rf = RatingsFrame().fit(pd.DataFrame({"user": [nfc, "ana", "bo"], "item": ["a", "b", "a"],
                                          "rating": [3.0, 4.0, 5.0]}))
    with pytest.warns(UserWarning, match=r"1 of the 3 ids of gender match no user.* differs from user 'José' only in "
                                         r"Unicode normal form \(NFD and NFC"):
        y = rf.align(pd.Series({nfd: 0, "ana": 1, "bo": 0}), name="gender")
    assert dict(zip(rf.user_ids_, y.tolist())) == {nfc: -1, "ana": 1, "bo": 0}
    with pytest.warns(UserWarning) as record:      # an unrelated unknown id: no normal-form hint
        rf.align(pd.Series({"zed": 0, "ana": 1}), name="gender")
    assert "normal form" not in str(record[0].message)
