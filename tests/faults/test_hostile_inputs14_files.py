"""Hostile inputs, fourteenth audit: ratings files, loaders and pipeline parameters (one test per finding)"""

import re
from pathlib import Path

import numpy as np
import pytest

from privrelease.datasets import load_movielens_1m, load_movielens_100k, load_ratings_csv
from privrelease.runner import PipelineError, check_run


def _ratings_file(folder, sep=","):
    """A rating file of 6 users x 4 items (users 1-3 prefer items a, b; users 4-6 items c, d), a users file,
    and the matrix they hold (rows: users 1-6, columns: items a-d)."""
    R = np.array([[5, 4, 1, 0], [4, 5, 0, 2], [5, 0, 1, 1], [1, 2, 5, 4], [0, 1, 4, 5], [2, 0, 5, 5]], dtype=float)
    rows = [f"{u + 1}{sep}{'abcd'[i]}{sep}{R[u, i]:g}" for u, i in zip(*np.nonzero(R))]
    ratings = folder / "r.csv"
    ratings.write_text(sep.join(["user", "item", "rating"]) + "\n" + "\n".join(rows) + "\n")
    users = folder / "u.csv"
    users.write_text("user,gender\n" + "".join(f"{u},{'FFFMMM'[u - 1]}\n" for u in range(1, 7)))
    return str(ratings), str(users), R


# ----------------------------------------------------------------------- two parameters naming one column
@pytest.mark.parametrize("kwargs, first, second, column", [
    ({"item_col": "user"}, "user_col", "item_col", "'user'"),
    ({"item_col": "rating"}, "item_col", "rating_col", "'rating'"),
    ({"timestamp_col": " rating "}, "rating_col", "timestamp_col", "'rating'"),
    ({"header": False, "user_col": 0, "item_col": np.int64(0), "rating_col": 2}, "user_col", "item_col", "0"),
])
def test_two_parameters_naming_one_column_are_refused(tmp_path, kwargs, first, second, column):
    # item_col='user' kept one rating per user (100 of 1,200), item_col='rating' read five items: silently
    ratings, users, _ = _ratings_file(tmp_path)
    with pytest.raises(ValueError, match=f"^{first} and {second} both name the column {column}; expected a "
                                         "different column for each of user_col, item_col, rating_col"):
        load_ratings_csv(ratings, **kwargs)
    base = {"path": ratings, "users_path": users, "attribute": "gender"}
    with pytest.raises(PipelineError, match="parameters item_col and rating_col both name the column 'rating'"):
        check_run("ratings_file", {**base, "item_col": "rating"}, quick=True)
    with pytest.raises(PipelineError, match="parameters users_id_col and attribute both name the column 'user'"):
        check_run("ratings_file", {**base, "attribute": "user"}, quick=True)


# ----------------------------------------------------------------------- MovieLens integers: ASCII digits only
def _movielens(folder, version, user="10", age=None, timestamp="200"):
    """A MovieLens folder whose second rating line (and, with ``age``, first users line) holds the value given."""
    folder.mkdir()
    if version == "100k":
        (folder / "u.data").write_text(f"10\t1\t5\t100\n{user}\t2\t1\t{timestamp}\n3\t2\t4\t100\n", encoding="utf-8")
        (folder / "u.user").write_text(f"3|{age or 30}|F|writer|12345\n10|40|M|other|54321\n", encoding="utf-8")
        (folder / "u.item").write_text("1|A|x\n2|B|y\n")
        return load_movielens_100k, ("u.data", "u.user")
    (folder / "ratings.dat").write_text(f"10::1::5::100\n{user}::2::1::{timestamp}\n3::2::4::100\n", encoding="utf-8")
    (folder / "users.dat").write_text(f"3::F::{age or 25}::1::12345\n10::M::35::2::54321\n", encoding="utf-8")
    (folder / "movies.dat").write_text("1::A::x\n2::B::y\n")
    return load_movielens_1m, ("ratings.dat", "users.dat")


@pytest.mark.parametrize("version", ["100k", "1m"])
def test_movielens_integers_other_than_ascii_digits_are_refused(tmp_path, version):
    # numpy read '1_0' as 10 and the Arabic-Indic '\u0663' as 3: a user merged into another, a rating lost
    hostile = [("user", "1_0"), ("user", "\u0663"), ("user", "\uff11\uff10"), ("user", "\u00a010"),
               ("timestamp", "2_00"), ("age", "2\u0665")]
    for k, (field, value) in enumerate(hostile):
        load, (data, users) = _movielens(tmp_path / f"ml{k}", version, **{field: value})
        what = {"user": "user id", "timestamp": "timestamp", "age": "age"}[field]
        line, file = (1, users) if field == "age" else (2, data)
        with pytest.raises(ValueError, match=f"{file} line {line}: {what} {re.escape(repr(value))} is not an "
                                             r"integer \(expected at most 18 ASCII digits 0-9"):
            load(tmp_path / f"ml{k}")
    # a sign and spaces (or tabs) around ASCII digits stay accepted: ' +10 ' is user 10
    load, _ = _movielens(tmp_path / "ok", version, user=" +10\t" if version == "1m" else " +10 ")
    R, users, _ = load(tmp_path / "ok")
    assert users.index.tolist() == [3, 10]
    assert R.toarray().tolist() == [[0, 4], [5, 1]]


# ----------------------------------------------------------------------- an integer beyond float64
def test_an_integer_beyond_float64_for_a_real_parameter_is_refused_naming_it(tmp_path, capsys):
    # math.isfinite(10**400) raised OverflowError: "the run failed", exit status 1, no parameter named
    for experiment, params, shown in [
        ("census_erasure", {"table_delta": 10**400}, "table_delta"),
        ("census_erasure", {"deltas": [0, 10**400]}, "deltas[1]"),
        ("synthetic_ratings", {"mapper": {"heldout_tolerance": -10**400}}, "mapper.heldout_tolerance"),
    ]:
        with pytest.raises(PipelineError, match=rf"parameter {re.escape(shown)} = -?1000.*: expected a finite "
                                                r"number.* \(an integer of 1329 bits, beyond the float64 range\)"):
            check_run(experiment, params, quick=True)
    from privrelease.cli import main

    pipeline = str(Path(__file__).resolve().parents[2] / "pipelines" / "census_erasure.toml")
    rc = main(["run", pipeline, "--quick", "-o", str(tmp_path / "out"), "--set", "table_delta=1" + "0" * 400])
    err = capsys.readouterr().err
    assert rc == 2 and "parameter table_delta = " in err and "beyond the float64 range" in err, err
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------- a separator of several characters
def test_a_separator_of_several_characters_is_literal_text(tmp_path):
    # pandas' python engine read it as a regular expression: '**' raised re.error ("nothing to repeat", a traceback
    # from the command line), '||' and ' | ' split at the wrong places
    from privrelease.runner.experiments.ratings_file import _read_users

    _, _, R = _ratings_file(tmp_path)
    for k, sep in enumerate(["**", "||", " | ", "..", "$^"]):
        folder = tmp_path / f"s{k}"
        folder.mkdir()
        ratings, _, _ = _ratings_file(folder, sep=sep)
        X, users, items = load_ratings_csv(ratings, sep=sep)
        assert X.toarray().tolist() == R.tolist() and users.tolist() == [1, 2, 3, 4, 5, 6], sep
        assert items.tolist() == ["a", "b", "c", "d"], sep
        users_file = folder / "u_sep.csv"
        users_file.write_text(f"user{sep}gender\n1{sep}F|M\n2{sep}M\n")
        ids, table = _read_users(str(users_file), "user", ["gender"], sep, "utf-8")
        assert ids.tolist() == ["1", "2"] and table["gender"].tolist() == ["F|M", "M"], sep


# ----------------------------------------------------------------------- MovieLens 1M: every stand-in in the text
def test_a_movielens_1m_file_holding_every_stand_in_character_is_read(tmp_path):
    # the '::' separator is replaced by a control character absent from the text; a text holding all five
    # candidates ended in a bare StopIteration ("the run failed" from the command line)
    title = "Toy Story (1995)\x1f\x1e\x1d\x1c\x00"
    ml = tmp_path / "ml"
    ml.mkdir()
    (ml / "ratings.dat").write_text("1::1::5::978300760\n2::1::3::978300761\n2::2::4::978300762\n")
    (ml / "users.dat").write_text("1::F::1::10::48067\n2::M::56::16::70072\n")
    (ml / "movies.dat").write_text(f"1::{title}::Animation\n2::Heat (1995)::Action\n")
    R, users, titles = load_movielens_1m(ml)
    assert R.toarray().tolist() == [[5, 0], [3, 4]]
    assert titles == [title, "Heat (1995)"] and users["gender"].tolist() == ["F", "M"]
    # a line with a field too few is still refused naming the line
    (ml / "movies.dat").write_text(f"1::{title}::Animation\n2::Heat (1995)\n")
    with pytest.raises(ValueError, match=r"movies.dat line 2 has 2 field\(s\) where the others have 3"):
        load_movielens_1m(ml)


# ----------------------------------------------------------------------- users-file column names
def test_any_users_file_column_name_can_be_the_attribute_and_be_cut(tmp_path):
    # (a) an attribute column named '__id__' (the name the ids were kept under) ended in a bare KeyError;
    # (b) a column whose name is not an identifier ('Age Group') could be the attribute but its cuts were an
    # "unknown key" of the table
    from privrelease.runner.experiments import ratings_file

    ratings, _, _ = _ratings_file(tmp_path)
    users = tmp_path / "u2.csv"
    users.write_text("user,__id__,Age Group\n" + "".join(f"{u},{'FFFMMM'[u - 1]},{10 * u}\n" for u in range(1, 7)))
    R, a, info = ratings_file.read_data(ratings, str(users), attribute="__id__")
    assert a.tolist() == [0, 0, 0, 1, 1, 1] and info["described"] == "__id__: F = 0 (3 users), M = 1 (3 users)"
    params = {"path": ratings, "users_path": str(users), "attribute": "Age Group", "cuts": {"Age Group": [35]}}
    from privrelease.runner._schema import validate_params

    checked = validate_params(ratings_file, params)
    assert checked["cuts"] == {"Age Group": [35.0]}
    R, a, info = ratings_file.read_data(**checked)
    assert a.tolist() == [0, 0, 0, 1, 1, 1] and info["described"].startswith("Age Group: under 35 = 0 (3 users)")
    # keys that name keyword arguments stay identifiers
    with pytest.raises(PipelineError, match="parameter recommender.algo_params has an unknown key 'n epochs'"):
        check_run("ratings_file", {"recommender": {"algo_params": {"n epochs": 3}}})


# ----------------------------------------------------------------------- make_realistic_ratings' attributes
@pytest.mark.parametrize("weights, message", [
    ((1,), r"attributes\['g'\] must be a sequence of at least 2 class weights, got \(1,\)"),
    ({"m": 0.5, "f": 0.5}, r"attributes\['g'\] must be a sequence of at least 2 class weights, got \{'m': 0.5"),
    ((0.5, -1), r"attributes\['g'\]\[1\] must be > 0, got -1"),
])
def test_bad_class_weights_of_an_attribute_name_that_attribute(weights, message):
    # the message named attribute_proportion, a parameter make_realistic_ratings does not take
    from privrelease.datasets import make_realistic_ratings

    with pytest.raises(ValueError, match=message) as info:
        make_realistic_ratings(50, 60, attributes={"g": weights}, random_state=0)
    assert "attribute_proportion" not in str(info.value)
