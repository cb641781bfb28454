"""Hostile inputs, eleventh audit: error messages that quoted numpy 2's scalar reprs (``np.float64(1.1)`` where
the user wrote ``1.1``), and the files a user or an attacker hands to the loaders. One test per finding (earlier
audits: test_hostile_inputs.py to test_hostile_inputs10.py)."""

import pathlib
import re

import numpy as np
import pandas as pd
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: numpy 2's scalar reprs, as tests/faults/test_bad_inputs.py scans the catalogue for them
NUMPY_REPR = re.compile(r"\bnp\.(?:(?:(?:u?int|float|complex)\d+|bool_?|str_|bytes_|void|longdouble|clongdouble|"
                        r"datetime64|timedelta64)\(|True_|False_)")


# ---------------------------------------------------------------- messages quote plain values, not numpy reprs
def _payments_nan():
    from privrelease.accounting import PrivacyAccountant

    PrivacyAccountant(epsilon=10.0).spend(1.0, population="p", individual_epsilons=[0.5, 0.5],
                                           payments=[1.0, np.nan])


def _kde_one_sample_class():
    from privrelease.mapping import kde_prior

    kde_prior(np.array([[0.0], [1.0], [2.0]]), np.array([0.5, 1.5, 1.5]), grid=np.array([[0.0], [1.0]]))


def _ratings_frame(column):
    from privrelease.recommender import RatingsFrame

    RatingsFrame().fit(pd.DataFrame({"user": [1, 2], "item": [1, 1], "rating": column}))


# (call, its thunk, the plain value the message quotes)
CASES = [
    ("check_number(np.float64(-1.5), low=0)",
     lambda: __import__("privrelease.utils", fromlist=["x"]).check_number(np.float64(-1.5), "epsilon", low=0),
     "got -1.5"),
    ("check_number(np.float64(2.5), integer=True)",
     lambda: __import__("privrelease.utils", fromlist=["x"]).check_number(np.float64(2.5), "n", integer=True),
     "got 2.5"),
    ("Laplace(epsilon=np.float64(-1))", lambda: __import__("privrelease.noise", fromlist=["x"]).Laplace(
        epsilon=np.float64(-1)), "got -1.0"),
    ("Laplace(epsilon=1).randomise(np.float64(nan))", lambda: __import__("privrelease.noise", fromlist=["x"]).Laplace(
        epsilon=1).randomise(np.float64(np.nan)), "got nan"),
    ("accountant payments with NaN", _payments_nan, "got nan at index 1"),
    ("privacy_cost of a negative valuation", lambda: __import__("privrelease.contracts", fromlist=["x"]).
     privacy_cost(-2.0, 1.0), "got -2.0"),
    ("kde_prior with a one-sample class", _kde_one_sample_class, "class 0.5 has 1 sample(s)"),
    ("RatingsFrame with a NaN rating", lambda: _ratings_frame([5.0, np.nan]), "got nan at row 1"),
    ("RatingsFrame with a complex rating", lambda: _ratings_frame([1 + 1j, 2.0]), "(for example (1+1j))"),
    ("check_rating_scale((np.int64(0), np.int64(5)))",
     lambda: __import__("privrelease.utils", fromlist=["x"]).check_rating_scale((np.int64(0), np.int64(5))),
     "(0, 5)"),
]


@pytest.mark.parametrize("call, thunk, plain", CASES, ids=[c[0] for c in CASES])
def test_an_error_quotes_a_numpy_scalar_as_the_value_the_user_wrote(call, thunk, plain):
    with pytest.raises((ValueError, TypeError)) as info:
        thunk()
    message = str(info.value)
    assert not NUMPY_REPR.search(message), f"{call}: {message!r}"
    assert plain in message, f"{call}: {message!r}"


def test_the_bad_input_catalogue_quotes_no_numpy_repr():
    rows = [line for line in (ROOT / "docs" / "bad_inputs.md").read_text().splitlines() if line.startswith("| ")]
    assert len(rows) > 100
    for row in rows:
        message = row.rsplit(" | ", 1)[-1]
        assert not NUMPY_REPR.search(message), row


def test_plain_value_keeps_python_values_and_unwraps_numpy_ones():
    from privrelease.utils._validation import plain_value

    for v, want in [(np.float64(1.1), "1.1"), (np.int64(1), "1"), (np.str_("a"), "'a'"), (np.bool_(True), "True"),
                    (np.array(2.5), "2.5"), ((np.int64(1), 2.0), "(1, 2.0)"), ([np.float32(0.5)], "[0.5]"),
                    (1.1, "1.1"), ("a", "'a'"), (None, "None"), (10**400, repr(10**400))]:
        got = plain_value(v)
        assert repr(got) == want
        assert type(got).__module__ == "builtins"
    arr = np.array([1.0, 2.0])
    assert plain_value(arr) is arr  # an array keeps its repr (its shape shows)


# ---------------------------------------------------------------- rating and users files
_RATINGS = "user,item,rating\n1,a,3\n2,a,4\n"


@pytest.mark.parametrize("name, pack, kind", [
    ("r.csv.gz", "gzip", "gzip-compressed"),   # pandas unpacked it by its name; the line checks read the packed bytes
    ("r.csv", "gzip", "gzip-compressed"),      # "not utf-8 text (byte 0x8b); pass encoding= (for example 'latin-1')"
    ("r.csv.bz2", "bz2", "bzip2-compressed"),
    ("r.csv.xz", "lzma", "xz-compressed"),
])
def test_a_compressed_rating_file_is_refused_naming_its_format(tmp_path, name, pack, kind):
    from privrelease.datasets import load_ratings_csv

    f = tmp_path / name
    f.write_bytes(__import__(pack).compress(_RATINGS.encode()))
    for encoding in ("utf-8", "latin-1"):
        with pytest.raises(ValueError, match=rf"rating file '.*{name}' is a {kind} file, not text: decompress it"):
            load_ratings_csv(f, encoding=encoding)


def test_a_text_rating_file_named_gz_is_read_as_the_text_it_is(tmp_path):
    from privrelease.datasets import load_ratings_csv

    f = tmp_path / "r.csv.gz"
    f.write_text(_RATINGS)                     # was gzip's BadGzipFile: pandas unpacked by the name
    X, users, items = load_ratings_csv(f)
    assert list(users) == [1, 2] and list(items) == ["a"]
    np.testing.assert_array_equal(X.toarray(), [[3], [4]])


@pytest.mark.parametrize("codec, bits", [("utf-16", "utf-16"), ("utf-16-be", "utf-16"), ("utf-32", "utf-32")])
def test_a_utf16_or_utf32_rating_file_is_named_and_read_with_its_encoding(tmp_path, codec, bits):
    from privrelease.datasets import load_ratings_csv

    f = tmp_path / "r.csv"
    data = _RATINGS.encode(codec)
    f.write_bytes(data if codec in ("utf-16", "utf-32") else b"\xfe\xff" + data)
    for encoding in ("utf-8", "latin-1"):  # was "not utf-8 text (byte 0xff); pass encoding= (... 'latin-1')"
        with pytest.raises(ValueError, match=rf"starts with a {bits.upper()} byte-order mark.*pass encoding='{bits}'"):
            load_ratings_csv(f, encoding=encoding)
    X, users, items = load_ratings_csv(f, encoding=bits)
    assert list(users) == [1, 2] and list(items) == ["a"]
    np.testing.assert_array_equal(X.toarray(), [[3], [4]])


def test_a_compressed_users_file_is_refused_before_running(tmp_path):
    import gzip

    from privrelease.runner._schema import PipelineError
    from privrelease.runner.experiments.ratings_file import _read_users

    f = tmp_path / "users.csv.gz"
    f.write_bytes(gzip.compress(b"user,gender\n1,F\n2,M\n"))
    with pytest.raises(PipelineError, match=r"the users file '.*users.csv.gz' is a gzip-compressed file"):
        _read_users(str(f), "user", ["gender"], ",", "utf-8")



def test_a_line_longer_than_the_cap_is_refused_before_pandas_holds_it(tmp_path, monkeypatch):
    from privrelease.datasets import _movielens, load_ratings_csv

    f = tmp_path / "r.csv"
    long_id = b"u" * (8 * 2**20 + 1)                 # the cap, MAX_LINE_BYTES, plus one
    f.write_bytes(b"user,item,rating\r\n1,a,3\r\n" + long_id + b",a,4\r\n")
    # pandas held the whole line (a 50 MB line: 250 MB) before the field limit refused it; never called now
    monkeypatch.setattr(_movielens.pd, "read_csv", lambda *a, **k: pytest.fail("pandas read the file"))
    with pytest.raises(ValueError, match=r"rating file '.*r.csv' holds a line of more than 8 MiB \(from byte 25\)"):
        load_ratings_csv(f)
    # lines of exactly the cap, ended by \n, \r or \r\n, pass the scan
    assert _movielens.MAX_LINE_BYTES == 8 * 2**20
    f.write_bytes(b"x" * 8 * 2**20 + b"\r" + b"y" * 8 * 2**20 + b"\n")
    _movielens._check_line_lengths(f, "f")


# ---------------------------------------------------------------- persisted models
@pytest.fixture(scope="module")
def saved_mapper(tmp_path_factory):
    from privrelease._persistence import save
    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    R, a, _ = make_ratings(120, 30, random_state=0)
    fitted = QuantizedPrivacyMapper(n_clusters=3, delta=0.5, random_state=0).fit(R, a)
    return pathlib.Path(save(fitted, tmp_path_factory.mktemp("saved") / "m.npz")).read_bytes()


@pytest.mark.parametrize("classes, message", [
    (np.array([0, 1]) + 0j, "must hold finite numbers, strings, bytes or booleans"),
    (np.array([0, 1]).astype("datetime64[s]"), "must hold finite numbers, strings, bytes or booleans"),
    (np.array([0.0, np.nan]), "must hold finite numbers, strings, bytes or booleans"),
    (np.array([1, 0]), "must be sorted as fit sorts the labels"),     # the prior's rows silently relabelled
    (np.array(["b", "a"]), "must be sorted as fit sorts the labels"),
])
def test_a_loaded_mappers_classes_are_labels_fit_could_have_made(tmp_path, saved_mapper, classes, message):
    from privrelease._persistence import _read, _write, load

    path = tmp_path / "m.npz"
    path.write_bytes(saved_mapper)
    meta, arrays = _read(path)
    arrays["fitted/classes_"] = classes
    meta["arrays"]["fitted/classes_"]["dtype"] = classes.dtype.str
    _write(path, meta, arrays, redigest=True)
    with pytest.raises(ValueError, match=rf"fitted\.classes_ {message}"):
        load(path)
