"""Real rating files as they come, through the documented loaders, on small FAKE files in each exact format.

MovieLens (latest-small / 20M / 25M ``ratings.csv``, 10M ``ratings.dat``, 100k ``u.data``, 1M), Amazon's
ratings-only CSV, Book-Crossing's ``BX-Book-Ratings.csv`` and the usual accidents (a byte-order mark, CRLF, a
trailing empty line, a header with spaces, re-ratings, missing ratings, Jester's -10..10 with real zeros). Each
file either loads with every user, item, rating and id kept, or is refused naming the line and the column and
saying what to pass instead.
"""

import numpy as np
import pandas as pd
import pytest

from privrelease.datasets import load_movielens_1m, load_movielens_100k, load_ratings_csv
from privrelease.recommender import RatingsFrame

# (user, movie, half-star rating, timestamp): users 1-4, MovieLens-like sparse movie ids
_ML = [(1, 1, 4.0, 964982703), (1, 3, 4.5, 964981247), (1, 6, 0.5, 964982224), (2, 318, 3.0, 1445714835),
       (2, 333, 4.0, 1445715029), (3, 31, 0.5, 1306463578), (3, 1, 5.0, 1306464100), (4, 122904, 3.5, 1530148000),
       (4, 6, 2.5, 1530148010), (4, 3, 1.5, 1530148020)]


def _dense(users, items):
    """The expected user x item matrix of ``_ML`` under the loader's sorted ids."""
    out = np.zeros((len(users), len(items)))
    for u, m, r, _ in _ML:
        out[list(users).index(u), list(items).index(m)] = r
    return out


def _check_ml(X, users, items):
    assert list(users) == [1, 2, 3, 4]
    assert list(items) == sorted({m for _, m, _, _ in _ML})
    assert X.nnz == len(_ML)
    np.testing.assert_array_equal(X.toarray(), _dense(users, items))


def test_movielens_latest_ratings_csv(tmp_path):
    f = tmp_path / "ratings.csv"
    f.write_text("userId,movieId,rating,timestamp\n" + "".join(f"{u},{m},{r},{t}\n" for u, m, r, t in _ML))
    X, users, items = load_ratings_csv(f, user_col="userId", item_col="movieId", rating_col="rating",
                                       timestamp_col="timestamp")
    _check_ml(X, users, items)
    assert set(X.data) >= {0.5, 1.5, 2.5, 3.5, 4.5}  # half stars kept
    with pytest.raises(ValueError, match=r"columns are \['userId'.*user_col="):
        load_ratings_csv(f)


def test_movielens_10m_ratings_dat_alone(tmp_path):
    f = tmp_path / "ratings.dat"
    f.write_text("".join(f"{u}::{m}::{r:g}::{t}\n" for u, m, r, t in _ML))
    _check_ml(*load_ratings_csv(f, sep="::", header=False, user_col=0, item_col=1, rating_col=2,
                                timestamp_col=3))
    # load_movielens_1m on 10M's folder (no users.dat) names the loader that reads it
    with pytest.raises(FileNotFoundError, match=r"(?s)users\.dat.*load_ratings_csv\(path, sep='::'"):
        load_movielens_1m(tmp_path)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_movielens_100k_and_1m_folders(tmp_path, eol, monkeypatch):
    ml = tmp_path / "ml-100k"
    ml.mkdir()
    rows = [(u, m, int(np.ceil(r)), t) for u, m, r, t in _ML]
    (ml / "u.data").write_bytes("".join(f"{u}\t{m}\t{r}\t{t}{eol}" for u, m, r, t in rows).encode())
    (ml / "u.user").write_bytes(eol.join(f"{u}|{20 + u}|{'MF'[u % 2]}|other|0{u}711" for u in range(1, 5))
                                .encode() + eol.encode())
    (ml / "u.item").write_bytes("".join(f"{m}|Caf\xe9 {m} (1995)|01-Jan-1995||http://x|0|1{eol}"
                                        for m in sorted({m for _, m, _, _ in _ML})).encode("latin-1"))
    X, users, titles = load_movielens_100k(tmp_path)
    assert X.shape == (4, len({m for _, m, _, _ in _ML})) and X.nnz == len(_ML)
    assert users["zip_code"].tolist() == ["01711", "02711", "03711", "04711"]
    assert titles[0] == "Caf\xe9 1 (1995)"
    # MovieLens 1M from Surprise's cache layout
    m1 = tmp_path / "cache" / "ml-1m" / "ml-1m"
    m1.mkdir(parents=True)
    (m1 / "ratings.dat").write_bytes("".join(f"{u}::{m}::{r}::{t}{eol}" for u, m, r, t in rows).encode())
    (m1 / "users.dat").write_bytes("".join(f"{u}::F::25::7::0{u}067{eol}" for u in range(1, 5)).encode())
    (m1 / "movies.dat").write_bytes("".join(f"{m}::Jam\xe9s {m}::Drama{eol}" for m in
                                            sorted({m for _, m, _, _ in _ML})).encode("latin-1"))
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path / "cache"))
    X1, users1, titles1 = load_movielens_1m()
    np.testing.assert_array_equal(X1.toarray(), X.toarray())
    assert users1["zip_code"].tolist()[0] == "01067" and titles1[-1] == "Jam\xe9s 122904"


def test_amazon_ratings_only_csv_keeps_string_ids(tmp_path):
    f = tmp_path / "ratings_Books.csv"
    f.write_text("A1B2C3,0486411435,5.0,1381622400\nA1B2C3,0000031852,4.0,1381622400\n"
                 "AZZ9,486411435,1.0,1381622401\n0012,0486411435,3.0,1\n12,0486411435,2.0,1\n")
    X, users, items = load_ratings_csv(f, header=False, user_col=0, item_col=1, rating_col=2, timestamp_col=3)
    # leading zeros kept: "0012" and "12", "0486411435" and "486411435" stay apart
    assert list(users) == ["0012", "12", "A1B2C3", "AZZ9"]
    assert list(items) == ["0000031852", "0486411435", "486411435"]
    assert X.nnz == 5 and X[list(users).index("AZZ9"), 2] == 1.0


def _bx(tmp_path):
    f = tmp_path / "BX-Book-Ratings.csv"
    f.write_bytes(('"User-ID";"ISBN";"Book-Rating"\r\n"276725";"034545104X";"0"\r\n'
                   '"276726";"0155061224";"5"\r\n"276727";"0446520802";"0"\r\n"276729";"052165615X";"3"\r\n'
                   '"276729";"3257224281";"6"\r\n"M\xfcller";"038550120X";"7"\r\n"276745";"3404921038\xe9";"10"\r\n')
                  .encode("cp1252"))
    return f


def test_book_crossing_implicit_zero_is_refused_with_the_line_or_dropped(tmp_path):
    f = _bx(tmp_path)
    cols = dict(sep=";", user_col="User-ID", item_col="ISBN", rating_col="Book-Rating")
    with pytest.raises(ValueError, match="encoding="):
        load_ratings_csv(f, **cols)
    # the implicit 0 is refused naming the line, the column and the way out
    with pytest.raises(ValueError, match=r"line 2, column 'Book-Rating': rating '0' is 0.*drop_ratings=\[0\]"):
        load_ratings_csv(f, encoding="cp1252", **cols)
    X, users, items = load_ratings_csv(f, encoding="cp1252", drop_ratings=[0], **cols)
    assert list(users) == ["276726", "276729", "276745", "M\xfcller"]  # "M\xfcller" makes every id a string
    assert "3404921038\xe9" in list(items) and "052165615X" in list(items)
    assert X.nnz == 5 and sorted(X.data) == [3, 5, 6, 7, 10]


@pytest.mark.parametrize("text, expected", [
    ("\ufeffuser,item,rating\n1,a,3\n2,a,4\n", None),  # byte-order mark
    ("user,item,rating\r\n1,a,3\r\n2,a,4\r\n", None),  # Windows line endings
    ("user,item,rating\n1,a,3\n2,a,4\n\n", None),  # a trailing empty line
    ("user id, item id, rating\n1, a, 3\n2, a, 4\n", None),  # a header (and fields) with spaces
])
def test_accidents_of_encoding_and_layout(tmp_path, text, expected):
    f = tmp_path / "r.csv"
    f.write_bytes(text.encode("utf-8"))
    names = ("user id", "item id", "rating") if "user id" in text else ("user", "item", "rating")
    X, users, items = load_ratings_csv(f, user_col=names[0], item_col=names[1], rating_col=names[2])
    assert list(users) == [1, 2] and list(items) == ["a"]
    np.testing.assert_array_equal(X.toarray(), [[3], [4]])


def test_spaces_around_string_ids_do_not_split_a_user(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("user,item,rating\nA1,B7,3\n A1, B7 ,4\nA2,B7,5\n")
    with pytest.warns(UserWarning, match=r"1 row\(s\) repeat the \(user, item\) pair"):  # one user, one pair
        X, users, items = load_ratings_csv(f)
    assert list(users) == ["A1", "A2"] and list(items) == ["B7"]
    np.testing.assert_array_equal(X.toarray(), [[4], [5]])


def test_rerating_keeps_the_latest_by_timestamp(tmp_path):
    f = tmp_path / "r.csv"
    # user 1 re-rated item 2 at t=200 (5 stars); the file lists the re-rating first
    f.write_text("user,item,rating,timestamp\n1,2,5,200\n1,2,3,100\n2,2,4,1\n2,2,1,1\n")
    with pytest.warns(UserWarning, match=r"2 row\(s\) repeat the \(user, item\) pair"):
        X, _, _ = load_ratings_csv(f)
    np.testing.assert_array_equal(X.toarray(), [[3], [1]])  # without timestamps: the last in file order
    with pytest.warns(UserWarning, match=r"2 row\(s\) repeat .*\(the latest by timestamp_col"):
        X, _, _ = load_ratings_csv(f, timestamp_col="timestamp")
    np.testing.assert_array_equal(X.toarray(), [[5], [1]])  # latest; a tie keeps file order
    g = tmp_path / "g.csv"
    g.write_text("user,item,rating,timestamp\n1,2,5,200\n1,2,3,yesterday\n")
    with pytest.raises(ValueError, match=r"line 3, column 'timestamp': timestamp 'yesterday'"):
        load_ratings_csv(g, timestamp_col="timestamp")


def test_missing_ratings_are_named_and_can_be_dropped(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("user,item,rating\n1,2,4\n\n1,3,NA\n1,4,\n2,2,?\n2,3,4.5\n")
    with pytest.raises(ValueError, match=r"line 4, column 'rating': rating 'NA' is not a finite number; "
                                         r"3 rating\(s\)"):
        load_ratings_csv(f)
    X, users, items = load_ratings_csv(f, drop_ratings=["NA", "", "?"])
    assert list(users) == [1, 2] and list(items) == [2, 3]  # item 4 had only a missing rating
    np.testing.assert_array_equal(X.toarray(), [[4, 0], [0, 4.5]])
    with pytest.raises(ValueError, match=r"line 6, column 'rating': rating '\?'"):
        load_ratings_csv(f, drop_ratings=["NA", ""])
    with pytest.raises(TypeError, match="drop_ratings must be a list"):
        load_ratings_csv(f, drop_ratings="NA")
    with pytest.raises(TypeError, match="drop_ratings holds True"):
        load_ratings_csv(f, drop_ratings=[True])


def test_jester_real_zero_is_refused_not_lost(tmp_path):
    """-10..10 with an exact 0.0 rating: 0 would be 'not rated' in the matrix, so it is refused, never lost."""
    f = tmp_path / "jester.csv"
    f.write_text("user,item,rating\n1,1,-9.5\n1,2,0.0\n1,3,10\n2,1,3.2\n2,2,-0.1\n")
    with pytest.raises(ValueError, match=r"line 3, column 'rating': rating '0.0' is 0.*shifted first"):
        load_ratings_csv(f)
    df = pd.read_csv(f)
    with pytest.raises(ValueError, match="holds 0 at row 1"):
        RatingsFrame().fit(df)
    # the documented way: shift the scale, then every rating (the 0.0 too) is a stored entry
    df["rating"] += 11
    rf = RatingsFrame().fit(df)
    X = rf.to_matrix(df)
    assert X.nnz == 5 and X[0, 1] == 11.0 and X.min() >= 0 and X.data.min() == pytest.approx(1.5)
    back = rf.from_matrix(X)
    np.testing.assert_allclose(np.sort(back["rating"].to_numpy() - 11), np.sort(pd.read_csv(f)["rating"]))
