import numpy as np
import pandas as pd
import pytest

from privrelease.datasets import (
    load_movielens_100k,
    load_ratings_csv,
    movielens_100k_search_paths,
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
