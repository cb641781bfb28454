import numpy as np
import pandas as pd
import pytest

from privrelease.datasets import (
    load_movielens_100k,
    load_movielens_1m,
    load_ratings_csv,
    movielens_100k_search_paths,
    movielens_1m_search_paths,
)

U_DATA = "1\t2\t5\t881250949\n3\t1\t3\t891717742\n1\t1\t4\t878887116\n2\t3\t2\t880606923\n"
U_USER = "1|24|M|technician|85711\n2|53|F|other|94043\n3|23|M|writer|32067\n"
U_ITEM = ("1|Toy Story (1995)|01-Jan-1995||http://x|0|0|0\n"
          "2|GoldenEye (1995)|01-Jan-1995||http://y|0|1|1\n"
          "3|Caf\xe9 au lait (1994)|01-Jan-1994||http://z|0|0|0\n")


def write_ml100k(folder, data=U_DATA, user=U_USER, item=U_ITEM):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "u.data").write_text(data)
    (folder / "u.user").write_text(user)
    (folder / "u.item").write_bytes(item.encode("latin-1"))
    return folder


def test_reads_small_ml100k(tmp_path):
    write_ml100k(tmp_path)
    X, users, titles = load_movielens_100k(tmp_path)
    assert X.format == "csr" and X.shape == (3, 3)
    expected = np.array([[4, 5, 0], [0, 0, 2], [3, 0, 0]], dtype=float)
    np.testing.assert_array_equal(X.toarray(), expected)
    assert list(users.index) == [1, 2, 3]
    assert list(users.columns) == ["age", "gender", "occupation", "zip_code"]
    assert users["age"].tolist() == [24, 53, 23]
    assert users["gender"].tolist() == ["M", "F", "M"]
    assert isinstance(users["gender"].dtype, pd.CategoricalDtype)
    assert titles == ["Toy Story (1995)", "GoldenEye (1995)", "Caf\xe9 au lait (1994)"]


def test_archive_subfolder_and_duplicates(tmp_path):
    # the unzipped archive has an ml-100k/ sub-folder; a repeated pair keeps the latest
    data = U_DATA + "1\t2\t1\t999999999\n1\t2\t3\t100\n"
    write_ml100k(tmp_path / "ml-100k", data=data)
    with pytest.warns(UserWarning, match="2 row"):
        X, _, _ = load_movielens_100k(str(tmp_path))
    assert X[0, 1] == 1.0


def test_surprise_cache_and_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path / "sdata"))
    assert movielens_100k_search_paths() == [tmp_path / "sdata" / "ml-100k" / "ml-100k"]
    write_ml100k(tmp_path / "sdata" / "ml-100k" / "ml-100k")
    X, users, titles = load_movielens_100k()
    assert X.shape == (3, 3) and len(titles) == 3


def test_default_is_home_surprise_data(tmp_path, monkeypatch):
    monkeypatch.delenv("SURPRISE_DATA_FOLDER", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (p,) = movielens_100k_search_paths()
    assert p == tmp_path / ".surprise_data" / "ml-100k" / "ml-100k"


def test_missing_files_message_names_every_place(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError) as info:
        load_movielens_100k()
    msg = str(info.value)
    assert str(tmp_path / "nowhere" / "ml-100k" / "ml-100k") in msg
    assert "load_builtin('ml-100k')" in msg and "files.grouplens.org" in msg

    (tmp_path / "partial").mkdir()
    (tmp_path / "partial" / "u.data").write_text(U_DATA)
    with pytest.raises(FileNotFoundError) as info:
        load_movielens_100k(tmp_path / "partial")
    msg = str(info.value)
    assert str(tmp_path / "partial") in msg and str(tmp_path / "partial" / "ml-100k") in msg
    assert "missing: u.user, u.item" in msg


def test_path_is_a_file(tmp_path):
    f = tmp_path / "u.data"
    f.write_text(U_DATA)
    with pytest.raises(NotADirectoryError, match="got the file"):
        load_movielens_100k(f)


def test_malformed_rating(tmp_path):
    write_ml100k(tmp_path, data="1\t1\t0\t1\n")
    with pytest.raises(ValueError, match="not positive numbers, e.g. 0.0"):
        load_movielens_100k(tmp_path)
    write_ml100k(tmp_path, data="1\tx\t3\t1\n")
    with pytest.raises(ValueError, match="u.data"):
        load_movielens_100k(tmp_path)


def test_load_ratings_csv(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("user,item,rating\nbob,m2,4\nann,m1,5\nbob,m1,2\nbob,m2,1\n")
    with pytest.warns(UserWarning, match=r"1 row\(s\) repeat the \(user, item\) pair"):
        X, uids, iids = load_ratings_csv(f)
    assert list(uids) == ["ann", "bob"] and list(iids) == ["m1", "m2"]
    # repeated pair (bob, m2) keeps its last rating
    np.testing.assert_array_equal(X.toarray(), [[5, 0], [2, 1]])

    g = tmp_path / "r.tsv"
    g.write_text("10\t7\t3.5\n2\t7\t1\n")
    X, uids, iids = load_ratings_csv(g, user_col=0, item_col=1, rating_col=2, sep="\t",
                                     header=False)
    assert uids.tolist() == [2, 10] and iids.tolist() == [7]
    np.testing.assert_array_equal(X.toarray(), [[1.0], [3.5]])


def test_load_ratings_csv_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        load_ratings_csv(tmp_path / "nope.csv")
    f = tmp_path / "r.csv"
    f.write_text("u,i,r\n1,1,0\n")
    with pytest.raises(ValueError, match=r"column 'user' not in"):
        load_ratings_csv(f)
    with pytest.raises(ValueError, match="0 is reserved"):
        load_ratings_csv(f, user_col="u", item_col="i", rating_col="r")
    with pytest.raises(ValueError, match="0-based positions"):
        load_ratings_csv(f, header=False)


# --------------------------------------------------------------------------- hostile folders and files
@pytest.mark.parametrize("data, match", [
    # a fifth field used to shift every column (the item id read as the user, the timestamp as the rating)
    ("1\t1\t5\t881250949\t7\n", r"u.data is not a tab-separated .*5 field\(s\), expected 4"),
    ("1\t1\t5\n", r"3 field\(s\), expected 4"),
    ("1\t1\t5\t1\n2\t1\t4\t2\t9\n", r"u.data is not a tab-separated"),          # one ragged line
    ("", r"u.data is empty"),
    ("1\t1\t7\t1\n", r"line 1: rating 7.0 is outside MovieLens' scale \[1, 5\]"),
    ("1\t1\t1e308\t1\n", r"outside MovieLens' scale"),
    ("99999999999999999999999\t1\t5\t1\n", r"user id '99999999999999999999999' is not an integer"),
    ("1.5\t1\t5\t1\n", r"user id '1.5' is not an integer"),
    (b"1\t1\t5\t1\n\xff\t1\t5\t1\n", r"u.data is not utf-8 text \(byte 0xff"),
])
def test_malformed_u_data_is_refused_naming_the_file(tmp_path, data, match):
    write_ml100k(tmp_path)
    (tmp_path / "u.data").write_bytes(data if isinstance(data, bytes) else data.encode())
    with pytest.raises(ValueError, match=match):
        load_movielens_100k(tmp_path)


@pytest.mark.parametrize("user, match", [
    ("1|24\n2|53\n3|23\n", r"u.user is not a .*2 field\(s\), expected 5"),        # used to give blank genders
    ("1|24|M|technician|85711|x\n2|53|F|other|94043|y\n3|23|M|writer|32067|z\n", r"6 field\(s\), expected 5"),
    ("", r"u.user is empty"),                                                      # used to give NaN demographics
    ("1|24|M|technician|85711\n1|53|F|other|94043\n3|23|M|writer|32067\n", r"describes user 1 more than once"),
    ("1|-5|M|technician|85711\n2|53|F|other|94043\n3|23|M|writer|32067\n", r"line 1: age -5 is negative"),
    ("1|old|M|technician|85711\n2|53|F|other|94043\n3|23|M|writer|32067\n", r"line 1: age 'old' is not an integer"),
])
def test_malformed_u_user_is_refused(tmp_path, user, match):
    write_ml100k(tmp_path, user=user)
    with pytest.raises(ValueError, match=match):
        load_movielens_100k(tmp_path)


def test_repeated_identical_user_line_and_utf8_titles(tmp_path):
    # an identical repeated line is harmless; a UTF-8 u.item is read as UTF-8 (latin-1 stays the fallback)
    write_ml100k(tmp_path, user=U_USER + U_USER.splitlines(keepends=True)[0])
    (tmp_path / "u.item").write_bytes("1|Am\u00e9lie (2001)\n2|B\n3|C\n".encode("utf-8"))
    X, users, titles = load_movielens_100k(tmp_path)
    assert X.shape == (3, 3) and users.shape == (3, 4)
    assert titles[0] == "Am\u00e9lie (2001)"


def test_path_of_the_wrong_type(tmp_path):
    with pytest.raises(TypeError, match="path must be a str or path-like.*got 5 of type int"):
        load_movielens_100k(5)
    with pytest.raises(TypeError, match="path must be a str or path-like"):
        load_ratings_csv(5)


@pytest.mark.parametrize("text, kwargs, match", [
    (b"", {}, r"r.csv' is empty"),
    (b"user,item,rating\n", {}, r"holds no rating \(only a header line\)"),
    (b"user,item,rating\n\xff,1,5\n", {}, r"is not utf-8 text \(it holds the byte 0xff\)"),
    (b"user,item,rating\n1,1,5\n", {"encoding": "bogus"}, r"encoding 'bogus' is not a known text encoding"),
    (b"user,item,rating\n1,1,5\n", {"sep": ""}, r"sep must be a non-empty string"),
    # more fields than the header used to shift the columns: user 5, item 9, rating 9
    (b"user,item,rating\n1,2,5,9,9\n", {}, r"line 2 has 5 fields but the file has 3 column\(s\)"),
    (b"user,item,rating\n,1,5\n", {}, r"1 row\(s\) without a user id"),
    (b"user,item,rating\n1, ,5\n", {}, r"1 row\(s\) without a item id"),
    (b"1,1,5\n", {"header": False, "user_col": False, "item_col": True, "rating_col": 2}, r"0-based positions"),
])
def test_load_ratings_csv_hostile_files(tmp_path, text, kwargs, match):
    f = tmp_path / "r.csv"
    f.write_bytes(text)
    with pytest.raises(ValueError, match=match):
        load_ratings_csv(f, **kwargs)


def test_load_ratings_csv_ids_too_large_for_int64_stay_strings(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("user,item,rating\n99999999999999999999999,1,5\n1,1,3\n")
    X, uids, iids = load_ratings_csv(f)
    assert uids.tolist() == ["1", "99999999999999999999999"] and iids.tolist() == [1]
    np.testing.assert_array_equal(X.toarray(), [[3.0], [5.0]])


def test_latin1_title_holding_byte_0x85_is_not_a_line_break(tmp_path):
    # latin-1 decodes 0x85 to U+0085, which str.splitlines treats as a line break (pandas does not)
    write_ml100k(tmp_path)
    (tmp_path / "u.item").write_bytes(b"1|A\x85B (1995)|x\n2|C|y\n3|D|z\n")
    X, users, titles = load_movielens_100k(tmp_path)
    assert titles == ["A\x85B (1995)", "C", "D"] and X.shape == (3, 3)


# --------------------------------------------------------------------------- MovieLens 1M
RATINGS_DAT = "1::20::5::978300760\n3::10::3::978302109\n1::10::4::978301968\n2::30::2::978300275\n"
USERS_DAT = "1::F::1::10::48067\n2::M::56::16::70072\n3::M::25::15::55117\n"
MOVIES_DAT = ("10::Toy Story (1995)::Animation|Children's|Comedy\n"
              "20::Star Wars: Episode IV - A New Hope (1977)::Action|Sci-Fi\n"
              "30::Caf\xe9 au lait (1994)::Comedy\n"
              "40::Never Rated (1999)::Drama\n")


def write_ml1m(folder, ratings=RATINGS_DAT, users=USERS_DAT, movies=MOVIES_DAT):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ratings.dat").write_text(ratings)
    (folder / "users.dat").write_text(users)
    (folder / "movies.dat").write_bytes(movies.encode("latin-1"))  # latin-1, as in the archive
    return folder


def test_reads_small_ml1m(tmp_path):
    write_ml1m(tmp_path)
    X, users, titles = load_movielens_1m(tmp_path)
    assert X.format == "csr" and X.shape == (3, 3)  # movie 40 has no rating: no column
    np.testing.assert_array_equal(X.toarray(), [[4, 5, 0], [0, 0, 2], [3, 0, 0]])
    assert list(users.index) == [1, 2, 3] and users.index.name == "user_id"
    assert list(users.columns) == ["age", "gender", "occupation", "zip_code"]
    assert users["age"].tolist() == [1, 56, 25]  # the codes, as in users.dat
    assert users["gender"].tolist() == ["F", "M", "M"]
    assert isinstance(users["gender"].dtype, pd.CategoricalDtype)
    assert users["zip_code"].tolist() == ["48067", "70072", "55117"]
    # a title holding ':' (not the '::' separator) and a latin-1 title
    assert titles == ["Toy Story (1995)", "Star Wars: Episode IV - A New Hope (1977)", "Caf\xe9 au lait (1994)"]


def test_ml1m_agrees_with_the_100k_reader_on_the_same_ratings(tmp_path):
    # the same ratings written in both formats give the same matrix (an independent reader of the same data)
    rng = np.random.default_rng(0)
    n = 200
    users, items = rng.integers(1, 30, n), rng.integers(1, 50, n)
    stars, stamps = rng.integers(1, 6, n), rng.permutation(n) + 10**9  # distinct times: 'latest' is defined
    body = list(zip(users, items, stars, stamps))
    write_ml1m(tmp_path / "a", ratings="".join(f"{u}::{i}::{r}::{t}\n" for u, i, r, t in body),
               users="".join(f"{u}::M::18::0::0\n" for u in range(1, 30)),
               movies="".join(f"{i}::m{i}::Drama\n" for i in np.unique(items)))
    write_ml100k(tmp_path / "b", data="".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in body),
                 user="".join(f"{u}|20|M|x|0\n" for u in range(1, 30)),
                 item="".join(f"{i}|m{i}|x\n" for i in np.unique(items)))
    with pytest.warns(UserWarning, match="collapsed"):
        X1, _, t1 = load_movielens_1m(tmp_path / "a")
    with pytest.warns(UserWarning, match="collapsed"):
        X2, _, t2 = load_movielens_100k(tmp_path / "b")
    assert (X1 != X2).nnz == 0 and t1 == t2
    # and the latest rating of every pair wins (brute force over the lines)
    latest = {}
    for u, i, r, t in sorted(body, key=lambda b: b[3]):
        latest[(u, i)] = r
    uids = np.unique(np.arange(1, 30))
    iids = np.unique(items)
    dense = np.zeros((uids.size, iids.size))
    for (u, i), r in latest.items():
        dense[np.searchsorted(uids, u), np.searchsorted(iids, i)] = r
    np.testing.assert_array_equal(X1.toarray(), dense)


def test_ml1m_duplicates_keep_the_latest(tmp_path):
    write_ml1m(tmp_path, ratings=RATINGS_DAT + "1::20::1::999999999\n1::20::3::100\n")
    with pytest.warns(UserWarning, match="2 row"):
        X, _, _ = load_movielens_1m(tmp_path)
    assert X[0, 1] == 1.0 and X.nnz == 4


def test_ml1m_search_order(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path / "sdata"))
    assert movielens_1m_search_paths() == [tmp_path / "sdata" / "ml-1m" / "ml-1m"]
    assert movielens_1m_search_paths(tmp_path) == [tmp_path, tmp_path / "ml-1m"]
    write_ml1m(tmp_path / "sdata" / "ml-1m" / "ml-1m")
    assert load_movielens_1m()[0].shape == (3, 3)
    # the named folder comes before its ml-1m sub-folder
    write_ml1m(tmp_path / "named" / "ml-1m")
    assert load_movielens_1m(tmp_path / "named")[0].nnz == 4
    write_ml1m(tmp_path / "named", ratings="1::10::5::1\n")
    assert load_movielens_1m(tmp_path / "named")[0].nnz == 1


def test_ml1m_missing_files_message(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError) as info:
        load_movielens_1m()
    msg = str(info.value)
    assert str(tmp_path / "nowhere" / "ml-1m" / "ml-1m") in msg
    assert "load_builtin('ml-1m')" in msg and "ml-1m.zip" in msg and "load_movielens_1m(path=...)" in msg
    (tmp_path / "partial").mkdir()
    (tmp_path / "partial" / "ratings.dat").write_text(RATINGS_DAT)
    with pytest.raises(FileNotFoundError) as info:
        load_movielens_1m(tmp_path / "partial")
    msg = str(info.value)
    assert str(tmp_path / "partial" / "ml-1m") in msg and "missing: users.dat, movies.dat" in msg
    with pytest.raises(NotADirectoryError, match="ratings.dat, users.dat and movies.dat, got the file"):
        load_movielens_1m(tmp_path / "partial" / "ratings.dat")
    with pytest.raises(TypeError, match="path must be a str or path-like"):
        load_movielens_1m(5)


@pytest.mark.parametrize("file, text, match", [
    ("ratings.dat", "1::10::5::1\n2::10::4\n", r"ratings.dat line 2 has 3 field\(s\) where the others have 4"),
    ("ratings.dat", "1::10::5::1::9\n", r"ratings.dat is not a .*5 field\(s\), expected 4"),
    ("ratings.dat", "1::x::5::1\n", r"ratings.dat line 1: movie id 'x' is not an integer"),
    ("ratings.dat", "1::10::5::1\nu2::10::4::1\n", r"ratings.dat line 2: user id 'u2' is not an integer"),
    ("ratings.dat", "1::10::6::1\n", r"ratings.dat line 1: rating 6.0 is outside MovieLens' scale \[1, 5\]"),
    ("ratings.dat", "1::10::0::1\n", r"ratings.dat has 1 rating\(s\) that are not positive"),
    ("ratings.dat", "1::10::5::1\n7::10::4::1\n", r"ratings.dat line 2: user 7 is not in .*users.dat"),
    ("users.dat", "1::F::1::10\n", r"users.dat is not a .*4 field\(s\), expected 5"),
    ("users.dat", USERS_DAT.replace("::56::", "::60::"), r"users.dat line 2: age 60 is not one of .*age codes"),
    ("users.dat", USERS_DAT.replace("::F::", "::female::"), r"users.dat line 1: gender 'female' is not"),
    ("users.dat", USERS_DAT + "1::M::1::10::48067\n", r"users.dat describes user 1 more than once"),
    ("movies.dat", "10::Toy Story (1995)\n", r"movies.dat is not a .*2 field\(s\), expected 3"),
    ("movies.dat", "ten::Toy Story::Comedy\n", r"movies.dat line 1: movie id 'ten' is not an integer"),
])
def test_malformed_ml1m_is_refused_naming_file_and_line(tmp_path, file, text, match):
    write_ml1m(tmp_path)
    (tmp_path / file).write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=match):
        load_movielens_1m(tmp_path)
