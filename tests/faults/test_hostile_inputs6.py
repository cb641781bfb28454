"""Hostile inputs, sixth audit: the ``ratings_file`` command-line path for a user's own exports (its users
file, ids, attribute columns, cuts, the checks before the run), the report folder, and the user path on
rating shapes the real-data stand-ins (benchmarks/bench_real_shapes.py) do not cover. One test per finding
(earlier audits: test_hostile_inputs.py to test_hostile_inputs4.py, test_hostile_outputs.py; the experiment's
own tests: tests/runner/test_ratings_file.py)."""

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privrelease.runner import OutputFolderError, PipelineError, Report, check_run
from privrelease.runner._report import prepare_output_folder


def _ratings(n_users=40, n_items=30, per_user=12, seed=0):
    """``user,item,rating`` lines (1..5 stars) of users 1..n_users whose tastes follow a binary class."""
    rng = np.random.default_rng(seed)
    lines = ["user,item,rating"]
    for u in range(1, n_users + 1):
        for i in rng.choice(n_items, per_user, replace=False):
            liked = (i < n_items // 2) == bool(u % 2)
            lines.append(f"{u},i{i},{int(np.clip(round(3 + (1.5 if liked else -1.5) + rng.normal()), 1, 5))}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def ratings(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(_ratings())
    return str(path)


def _users(tmp_path, text, name="u.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return str(path)


def _sex_rows(skip=()):
    return "".join(f"{u},{'FM'[u % 2]}\n" for u in range(1, 41) if u not in skip)


def _check(ratings, users, **params):
    """What ``privrelease run ratings_file.toml`` checks before anything runs (nothing is run)."""
    return check_run("ratings_file", {"path": ratings, "users_path": users, "attribute": "sex", **params},
                     quick=True)


# --------------------------------------------------------------------------- the users file
def test_users_ids_beyond_int64_or_unicode_digits_match_no_user_instead_of_crashing():
    # integer rating ids: a users id of 20 digits raised OverflowError, '²' (a digit to str.isdigit) a ValueError
    # of int(), both as tracebacks; neither can name a user whose id load_ratings_csv read as an int64
    from privrelease.runner.experiments.ratings_file import _match_ids

    user_ids = np.array([-3, 7, 12])
    got = _match_ids(["99999999999999999999", "²", "7", "-3", "٧", "-99999999999999999999"], user_ids)
    np.testing.assert_array_equal(got, [-1, -1, 1, 0, -1, -1])


def test_one_user_named_twice_as_7_and_7_0_is_refused(tmp_path, ratings):
    # '7' and '7.0' (pandas' float export) both name user 7: the later row won silently, whatever its class
    users = _users(tmp_path, "user,sex\n" + _sex_rows() + "7.0,M\n")
    with pytest.raises(PipelineError, match=r"names user 7 more than once \(as '7', '7.0' in column 'user'\)"):
        _check(ratings, users)


def test_users_file_of_a_header_line_only_is_refused(tmp_path, ratings):
    # was IndexError: index 0 is out of bounds for axis 0 with size 0
    users = _users(tmp_path, "user,sex\n")
    with pytest.raises(PipelineError, match="holds no row, only a header line"):
        _check(ratings, users)


@pytest.mark.parametrize("header", ["user,sex, sex", "user,sex,sex"])
def test_users_header_naming_a_column_twice_is_refused(tmp_path, ratings, header):
    # 'sex' and ' sex' are one name once spaces are ignored: was AttributeError: 'DataFrame' object has no
    # attribute 'str'; 'sex' twice exactly: pandas renamed the second 'sex.1' and the first was read, silently
    users = _users(tmp_path, header + "\n" + "".join(f"{u},F,M\n" for u in range(1, 41)))
    with pytest.raises(PipelineError, match=r"column 'sex' is named more than once.*\['user', 'sex', 'sex'\]"):
        _check(ratings, users)


def test_rating_file_naming_its_rating_column_twice_is_refused(tmp_path):
    # load_ratings_csv refused 'rating' and ' rating', but pandas renamed an exact repeat 'rating.1' first, so
    # the check never saw it and the first column was read, silently
    from privrelease.datasets import load_ratings_csv

    path = tmp_path / "r.csv"
    path.write_text("user,item,rating,rating\n1,a,5,1\n2,a,4,2\n")
    with pytest.raises(ValueError, match=r"column\(s\) \['rating'\] are named more than once.*columns are "
                                         r"\['user', 'item', 'rating', 'rating'\]"):
        load_ratings_csv(path)


def test_users_row_with_more_fields_than_the_header_is_refused_naming_the_line(tmp_path, ratings):
    # an unquoted separator inside a value shifts the row: in the first data row pandas dropped the extra field
    # with a warning only (index_col=False), and user 1's sex became ' France' (a class of its own; a later row
    # was a tokenizing error); a rating file's such row was already refused
    rows = "".join(f"{u},Paris,{'FM'[u % 2]}\n" if u != 1 else "1,Paris, France,F\n" for u in range(1, 41))
    users = _users(tmp_path, "user,city,sex\n" + rows)
    with pytest.raises(PipelineError, match="users file .*u.csv' line 2 has 4 fields but the file has 3 column"):
        _check(ratings, users)


def test_an_encoding_that_is_not_a_text_encoding_is_named(tmp_path, ratings):
    # 'rot13', 'base64' and 'hex' are codecs: load_ratings_csv let pandas' LookupError escape (a traceback)
    from privrelease.datasets import load_ratings_csv

    with pytest.raises(ValueError, match="encoding 'rot13' is a codec, but not a text encoding"):
        load_ratings_csv(ratings, encoding="rot13")
    users = _users(tmp_path, "user,sex\n" + _sex_rows())
    with pytest.raises(PipelineError, match="users_encoding 'hex' is a codec, but not a text encoding"):
        _check(ratings, users, users_encoding="hex")


def test_users_file_with_a_byte_order_mark_under_latin1_is_refused_as_the_ratings_are(tmp_path, ratings):
    # the mark read as 'ï»¿' glued to the first column's name: "column 'user' not in the users file; its
    # columns are ['ï»¿user', 'sex']"; the rating file's reader already said what happened
    users = _users(tmp_path, b"\xef\xbb\xbf" + ("user,sex\n" + _sex_rows()).encode())
    with pytest.raises(PipelineError, match="byte-order mark.*users_encoding='latin-1'.*users_encoding='utf-8'"):
        _check(ratings, users, users_encoding="latin-1")
    _check(ratings, users)  # read as UTF-8 (the default), the mark is skipped


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_a_data_file_is_not_called_missing(tmp_path, ratings):
    fifo = tmp_path / "users.csv"
    os.mkfifo(fifo)
    with pytest.raises(PipelineError, match="users_path = .*users.csv.*a FIFO, socket or device"):
        _check(ratings, str(fifo))


# --------------------------------------------------------------------------- the attribute
def test_cuts_leaving_a_band_without_users_are_refused(tmp_path, ratings):
    # movielens_gender refuses age cuts that leave a band empty; here the empty band became a class nobody has
    users = _users(tmp_path, "user,age\n" + "".join(f"{u},{20 + u}\n" for u in range(1, 41)))
    with pytest.raises(PipelineError, match=r"cuts.age = \[30, 100\] leaves the band\(s\) \['100 and over'\] "
                                            r"without any of the 40 evaluated users \(column 'age' runs from 21 "
                                            "to 60"):
        _check(ratings, users, attribute="age", cuts={"age": [30, 100]})
    _check(ratings, users, attribute="age", cuts={"age": [30, 50]})


def test_more_classes_than_the_opted_in_users_can_hold_are_refused_before_running(tmp_path, ratings):
    # 30 classes over 40 users, 20 of them opted in: at least 10 classes only among the protected users. The check
    # before the run passed and the run failed in the protocol ("class(es) ... that no opted-in user has") after
    # reading and fitting; the protocol's own split is now drawn before the run, with the run's seed
    users = _users(tmp_path, "user,job\n" + "".join(f"{u},j{u % 30}\n" for u in range(1, 41)))
    with pytest.raises(PipelineError, match=r"random_state = 0\): the private attribute has class\(es\) .* that "
                                            "no opted-in user has"):
        _check(ratings, users, attribute="job")


# --------------------------------------------------------------------------- the report folder
def test_the_root_or_the_home_folder_is_not_a_report_folder(tmp_path, monkeypatch):
    # '-o "$OUT/"' with OUT unset is '-o /': accepted, the report's ~30 files written beside the system's
    with pytest.raises(OutputFolderError, match="'/' is the root of the file system"):
        prepare_output_folder("/")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(OutputFolderError, match="is your home folder"):
        prepare_output_folder(home)
    assert prepare_output_folder(home / "reports") == home / "reports"


def test_a_file_created_while_the_report_is_written_is_not_replaced(tmp_path, monkeypatch):
    # the name was checked free, then os.replace put the report's file over whatever appeared there meanwhile
    from privrelease.runner._report import _Folder

    check = _Folder._check_replace

    def racing(self, name, target, exists):
        check(self, name, target, exists)
        if name == "curve.csv":
            Path(target).write_text("written by another program\n")

    monkeypatch.setattr(_Folder, "_check_replace", racing)
    rep = Report(tmp_path / "out", title="t")
    rep.table(pd.DataFrame({"a": [1]}), "curve")  # held aside until the report is saved
    # the files are moved into the folder when the report is saved: the name is taken by then
    with pytest.raises(OutputFolderError, match="appeared in the output folder while the report was being written"):
        rep.save()
    assert (tmp_path / "out" / "curve.csv").read_text() == "written by another program\n"
    rep.discard()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["curve.csv"]  # no temporary file left
    rep = Report(tmp_path / "out2", title="t")
    rep.table(pd.DataFrame({"a": [1]}), "other")
    rep.table(pd.DataFrame({"a": [2]}), "other")  # its own file: replaced
    rep.save()
    assert pd.read_csv(tmp_path / "out2" / "other.csv")["a"].tolist() == [2]


# --------------------------------------------------------------------------- NaN for "not rated"
X_NAN = np.array([[5.0, np.nan, 1], [4, 1, np.nan], [np.nan, 5, 5], [1, 4, 5]])
Y4 = np.array([0, 0, 1, 1])


def _dok_with_nan():
    import scipy.sparse as sp

    D = sp.dok_matrix(np.nan_to_num(X_NAN))
    D[2, 0] = np.nan
    return D


@pytest.mark.parametrize("make, count, first", [
    (lambda: [[None if np.isnan(v) else v for v in r] for r in X_NAN], 3, (0, 1)),  # None in a list of lists
    (lambda: X_NAN.astype(object), 3, (0, 1)),
    (_dok_with_nan, 1, (2, 0)),                                             # DOK / LIL: no array of values
])
@pytest.mark.parametrize("estimator", ["QuantizedPrivacyMapper", "BlurMe"])
def test_nan_for_not_rated_in_a_list_object_array_or_dok_gets_the_rating_matrix_advice(make, count, first,
                                                                                       estimator):
    # these got scikit-learn's "Input X contains NaN ... consider HistGradientBoostingClassifier"
    import privrelease

    est = getattr(privrelease, estimator)(random_state=0)
    with pytest.raises(ValueError, match=rf"X holds {count} NaN entries \(the first at row {first[0]}, column "
                                         rf"{first[1]}\); in a rating matrix 0 means 'not rated'"):
        est.fit(make(), Y4)


def test_nan_check_of_a_sparse_frame_allocates_no_dense_table():
    # the check read X.isna() of a DataFrame of sparse columns as one array: a boolean of every cell (1 GB for
    # 100,000 users x 10,000 items) before a fit that itself works on the stored ratings only
    import tracemalloc

    import scipy.sparse as sp

    from privrelease.utils._validation import refuse_nan_ratings

    n, m = 20_000, 500
    X = sp.random(n, m, density=0.01, format="csr", random_state=0, data_rvs=lambda k: np.full(k, 3.0))
    frame = pd.DataFrame.sparse.from_spmatrix(X)
    tracemalloc.start()
    try:
        refuse_nan_ratings(frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * m / 10, peak  # a dense boolean table is n * m bytes
    # NaN-filled sparse columns (a pivot cast with astype(pd.SparseDtype(float))): every unstored cell is NaN
    pivot = pd.DataFrame(X_NAN).astype(pd.SparseDtype("float64"))
    with pytest.raises(ValueError, match=r"X holds 3 NaN entries \(the first at row 0, column 1\)"):
        refuse_nan_ratings(pivot)
    stored = pd.DataFrame(X_NAN).astype(pd.SparseDtype("float64", 0.0))  # NaN stored beside a fill value 0
    with pytest.raises(ValueError, match=r"X holds 3 NaN entries \(the first at row 0, column 1\)"):
        refuse_nan_ratings(stored)


def test_book_crossing_users_file_with_null_ages_is_read(tmp_path, ratings):
    # BX-Users.csv: ';'-separated, quoted, cp1252, a missing age written NULL: refused as "holds 'NULL', not a
    # number" with no way to name another marker, so the data set the pipeline names could not be used
    lines = ['"User-ID";"Location";"Age"'] + [
        f'"{u}";"münchen, bayern, germany";{"NULL" if u % 5 == 0 else f"{chr(34)}{15 + u}{chr(34)}"}'
        for u in range(1, 41)]
    users = _users(tmp_path, "\n".join(lines) + "\n", encoding="cp1252")
    _, params, _ = _check(ratings, users, users_sep=";", users_id_col="User-ID", users_encoding="cp1252",
                          attribute="Age", cuts={"Age": [30, 45]})
    from privrelease.runner.experiments.ratings_file import read_data

    _, a, info = read_data(**{k: v for k, v in params.items() if k in (
        "path", "users_path", "users_sep", "users_id_col", "users_encoding", "attribute", "cuts")})
    assert info["n_disclosed"] == 32 and info["n_undisclosed_missing"] == 8
    assert np.bincount(a).tolist() == [sum(15 + u < 30 for u in range(1, 41) if u % 5),
                                       sum(30 <= 15 + u < 45 for u in range(1, 41) if u % 5),
                                       sum(15 + u >= 45 for u in range(1, 41) if u % 5)]


def test_data_files_named_from_the_home_folder_are_read(tmp_path, monkeypatch):
    # path="~/ratings.csv" passed the file check (which expands '~'), then the reader's cache key ran
    # os.stat('~/ratings.csv'): FileNotFoundError, a traceback
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "r.csv").write_text(_ratings())
    _users(tmp_path, "user,sex\n" + _sex_rows())
    _check("~/r.csv", "~/u.csv")


def test_implicit_feedback_is_refused_before_running_whatever_the_mapper(tmp_path):
    # every rating 1 (clicks) with rating_range = [1, 2]: the check passed and the report showed the optimal
    # mapping at 0 bits, 0 distortion and attacker AUC 0.5 (every user at one point of the taste space: one
    # cluster, one release for everybody); the mapper's warning reached stderr only
    ratings = tmp_path / "r.csv"
    ratings.write_text(_ratings().replace(",2\n", ",1\n").replace(",3\n", ",1\n").replace(",4\n", ",1\n")
                       .replace(",5\n", ",1\n"))
    users = _users(tmp_path, "user,sex\n" + _sex_rows())
    # updated in round 16: refused whatever the mapper, the report's RMSE cost needing more than one rating value
    for mapper in ({}, {"metric": "hamming"}, {"space": "raw"}):
        with pytest.raises(PipelineError, match=r"every rating of the 40 evaluated users is 1 \(implicit "
                                                r"feedback\).*needs more than one rating value"):
            _check(str(ratings), users, rating_range=[1, 2], mapper=mapper)


@pytest.mark.parametrize("blank", [1, 2])
def test_users_rows_without_an_id_are_refused_as_such(tmp_path, ratings, blank):
    # one row with an empty id was counted as a user without ratings, two as "user '' named more than once"
    users = _users(tmp_path, "user,sex\n" + _sex_rows() + ",F\n" * blank)
    with pytest.raises(PipelineError, match=rf"has {blank} row\(s\) without an id in column 'user' \(the first is "
                                            r"data row 41\)"):
        _check(ratings, users)


def test_held_out_rules_or_a_model_prior_on_too_few_opted_in_users_are_refused_before_running(tmp_path, ratings):
    # n_clusters = "heldout", mapper.class_bins = "heldout" (three classes) or mapper.prior = "model" on 20 opted-in
    # users: the check passed and the run failed in the mapper's first fit ("needs at least 50 labeled users")
    users = _users(tmp_path, "user,sex\n" + _sex_rows())
    fitted_on = r"the mapper is fitted on the 20 opted-in users \(opt_in_fraction = 0.5, random_state = 0\): "
    with pytest.raises(PipelineError, match=fitted_on + "n_clusters='heldout' needs at least 50 labeled users"):
        _check(ratings, users, n_clusters="heldout")
    three = _users(tmp_path, "user,sex\n" + "".join(f"{u},{'FMX'[u % 3]}\n" for u in range(1, 41)), name="t.csv")
    with pytest.raises(PipelineError, match=fitted_on + "class_bins='heldout' needs at least 50"):
        _check(ratings, three, mapper={"class_bins": "heldout"})
    _check(ratings, users, mapper={"class_bins": "heldout"})  # two classes: plain clusters, the rule never runs
    with pytest.raises(PipelineError, match=fitted_on + r"prior='model' .* needs at least 10 labeled users per "
                                                        r"class; class \d has 9"):
        _check(ratings, users, mapper={"prior": "model"})
