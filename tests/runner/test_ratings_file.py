"""The ``ratings_file`` experiment: the user's own rating and users files through the command line.

Small files are written to ``tmp_path`` (integer ids, string ids with leading zeros, ';' with a header,
half-star ratings, a 1..10 scale); the experiment runs in its quick mode through ``main`` (a few seconds
each) and the tests read what it wrote: the counts, the tables, the scale it used. Bad files and columns
are refused on one line (exit 2) before anything runs.
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privrelease.cli import main

pytestmark = pytest.mark.slow  # started first under pytest-xdist (tests/conftest.py)

PIPELINE = str(Path(__file__).resolve().parents[2] / "pipelines" / "ratings_file.toml")


def _ratings(ids, levels, *, n_items=30, per_user=12, seed=0):
    """Long-form rows (user, item, rating) whose tastes depend on a binary class, and the classes."""
    rng = np.random.default_rng(seed)
    levels = np.asarray(levels, dtype=float)
    rows, classes = [], {}
    for k, u in enumerate(ids):
        g = k % 2
        classes[u] = g
        for i in rng.choice(n_items, per_user, replace=False):
            taste = 0.5 + (0.35 if (i < n_items // 2) == bool(g) else -0.35) + rng.normal(0, 0.15)
            idx = int(np.clip(round(taste * (levels.size - 1)), 0, levels.size - 1))
            rows.append((u, f"i{i}", levels[idx]))
    return rows, classes


def _write(path, header, rows, sep=","):
    path.write_text("\n".join([sep.join(header)] + [sep.join(str(v) for v in r) for r in rows]) + "\n")
    return str(path)


def _run(tmp_path, *sets, out="out"):
    argv = ["run", PIPELINE, "--quick", "-o", str(tmp_path / out)]
    for s in sets:
        argv += ["--set", s]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return main(argv)


def _outputs(folder):
    data = json.loads((folder / "data.json").read_text())
    head = json.loads((folder / "headline.json").read_text())
    return data, head, pd.read_csv(folder / "ratings_mapper_curve.csv")


def _spy_scales(monkeypatch):
    """The rating scales the recommender and the protocol receive."""
    import privrelease.evaluation as evaluation
    import privrelease.recommender as recommender

    seen = {"recommender": [], "protocol": []}
    real_rec, real_curve = recommender.SurpriseRecommender, evaluation.privacy_utility_curve

    def rec(*args, **kwargs):
        seen["recommender"].append(tuple(kwargs["rating_scale"]))
        return real_rec(*args, **kwargs)

    def curve(*args, **kwargs):
        seen["protocol"].append(tuple(kwargs["rating_range"]))
        return real_curve(*args, **kwargs)

    monkeypatch.setattr(recommender, "SurpriseRecommender", rec)
    monkeypatch.setattr(evaluation, "privacy_utility_curve", curve)
    return seen


def test_integer_ids_every_user_counted_and_missing_markers_undisclosed(tmp_path, monkeypatch):
    ids = list(range(1, 101))
    rows, classes = _ratings(ids, [1, 2, 3, 4, 5])
    ratings = _write(tmp_path / "r.csv", ["user", "item", "rating"], [(u, i, int(r)) for u, i, r in rows])
    markers = ["", "NA", "None", "-1"]
    users = []
    for u in ids[:90]:  # users 91..100: no row, not disclosed
        users.append((u, markers[u % 4] if u % 10 == 0 else "FM"[classes[u]], 20 + u % 40))
    users += [(500, "F", 30), (501, "M", 40)]  # in the users file, without a rating: ignored
    users += [("007", "M", 50)]  # not user 7: the rating ids are integers, written plainly ("7")
    users_file = _write(tmp_path / "u.csv", ["user", "sex", "age"], users)
    seen = _spy_scales(monkeypatch)
    assert _run(tmp_path, f'path="{ratings}"', f'users_path="{users_file}"', 'attribute="sex"') == 0
    data, head, curve = _outputs(tmp_path / "out")
    assert head["status"] == "ok"
    assert data["n_users_ratings"] == 100 and data["n_ratings"] == len(rows)
    assert data["n_disclosed"] == 81 and data["n_undisclosed_missing"] == 9 and data["n_undisclosed_no_row"] == 10
    assert data["n_disclosed"] + data["n_undisclosed_missing"] + data["n_undisclosed_no_row"] == 100
    assert data["n_users_file_rows"] == 93 and data["n_users_without_ratings"] == 3
    # odd users are F (45 of 1..89), even ones M (45 of 2..90, less the 9 multiples of 10 without a value)
    assert data["described"] == "sex: F = 0 (45 users), M = 1 (36 users)"
    # the RMSE table: one row per quick leakage cap, RMSEs on the scale
    assert curve["max_leakage"].tolist() == [0.0, 0.02]
    assert np.all((curve["rmse_released"] > 0) & (curve["rmse_released"] < 4))
    assert curve["leakage_bits"].iloc[0] == pytest.approx(0.0, abs=1e-6)
    assert data["rating_range"] == [1.0, 5.0] and data["rating_range_from"] == "data"
    assert set(seen["recommender"]) == {(1.0, 5.0)} and set(seen["protocol"]) == {(1.0, 5.0)}


def test_string_ids_keep_leading_zeros_semicolon_and_half_stars(tmp_path, monkeypatch):
    # "007" and "7" are two users; one id with a letter makes every id a string
    ids = [f"{k:03d}" for k in range(1, 61)] + [str(k) for k in range(1, 31)] + ["A1"]
    rows, classes = _ratings(ids, np.arange(1, 11) / 2, seed=1)  # 0.5 .. 5 in half stars
    ratings = _write(tmp_path / "r.csv", ["User-ID", "ISBN", "Book-Rating"], rows, sep=";")
    users = [(u, ["male", "female"][classes[u]]) for u in ids if u != "A1"] + [("0007", "male")]
    users_file = _write(tmp_path / "u.csv", ["id", "gender"], users)
    seen = _spy_scales(monkeypatch)
    assert _run(tmp_path, f'path="{ratings}"', 'sep=";"', 'user_col="User-ID"', 'item_col="ISBN"',
                'rating_col="Book-Rating"', f'users_path="{users_file}"', 'users_id_col="id"',
                'attribute="gender"') == 0
    data, head, curve = _outputs(tmp_path / "out")
    assert data["n_users_ratings"] == 91 and data["n_disclosed"] == 90
    assert data["n_undisclosed_no_row"] == 1 and data["n_undisclosed_missing"] == 0
    assert data["n_users_without_ratings"] == 1  # "0007" is none of "007" and "7"
    assert data["described"] == "gender: female = 0 (45 users), male = 1 (45 users)"
    observed = [min(r for _, _, r in rows), max(r for _, _, r in rows)]
    assert data["rating_range"] == observed and observed[0] == 0.5
    assert set(seen["recommender"]) == {tuple(observed)} and set(seen["protocol"]) == {tuple(observed)}
    assert curve.shape[0] == 2 and head["status"] == "ok"


def test_ten_point_scale_and_a_joint_attribute_with_cuts(tmp_path, monkeypatch):
    ids = list(range(1, 121))
    rows, classes = _ratings(ids, np.arange(2, 10), seed=2)  # the data runs 2..9 of a 1..10 scale
    ratings = _write(tmp_path / "r.tsv", ["u", "i", "r"], [(u, i, int(r)) for u, i, r in rows], sep="\t")
    users = [(u, "FM"[classes[u]] if u % 15 else "", 18 + (u * 7) % 50) for u in ids]  # 8 without a gender
    users_file = _write(tmp_path / "u.csv", ["user", "gender", "age"], users)
    seen = _spy_scales(monkeypatch)
    assert _run(tmp_path, f'path="{ratings}"', 'sep="\\t"', 'user_col="u"', 'item_col="i"', 'rating_col="r"',
                f'users_path="{users_file}"', 'attribute=["gender", "age"]', "cuts={age = [40]}",
                "rating_range=[1, 10]", "opt_in_fraction=0.6") == 0
    data, head, curve = _outputs(tmp_path / "out")
    assert data["rating_range"] == [1.0, 10.0] and data["rating_range_from"] == "rating_range"
    assert set(seen["recommender"]) == {(1.0, 10.0)} and set(seen["protocol"]) == {(1.0, 10.0)}
    ages = np.array([a for _, g, a in users if g])  # the evaluated users: both columns disclosed
    assert data["n_classes"] == 4 and data["n_disclosed"] == 112 and data["n_undisclosed_missing"] == 8
    assert (f"age: under 40 = 0 ({int(np.sum(ages < 40))} users), 40 and over = 1 ({int(np.sum(ages >= 40))} "
            "users)") in data["described"]
    assert curve["max_leakage"].tolist() == [0.0, 0.02]
    # joint perfect privacy: the pair leaks nothing
    assert curve["leakage_bits"].iloc[0] == pytest.approx(0.0, abs=1e-6)


@pytest.fixture
def files(tmp_path):
    rows, classes = _ratings(list(range(1, 41)), [1, 2, 3, 4, 5])
    ratings = _write(tmp_path / "r.csv", ["user", "item", "rating"], [(u, i, int(r)) for u, i, r in rows])
    users = _write(tmp_path / "u.csv", ["user", "sex", "country"], [(u, "FM"[g], "NL") for u, g in classes.items()])
    return ratings, users


def _refused(tmp_path, capsys, sets, *texts):
    rc = _run(tmp_path, *sets, out="refused")
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("privrelease: error: ") and "Traceback" not in err, err
    for text in texts:
        assert text in lines[0], (text, lines[0])
    assert not (tmp_path / "refused").exists()  # refused before the report folder was made


def test_missing_files_and_unset_paths_are_refused_before_running(tmp_path, capsys, files):
    ratings, users = files
    _refused(tmp_path, capsys, [], "parameter path is not set", "--set path=")
    _refused(tmp_path, capsys, [f'path="{tmp_path / "nope.csv"}"'], "path = ", "nope.csv", "does not exist")
    _refused(tmp_path, capsys, [f'path="{ratings}"', 'attribute="sex"'], "parameter users_path is not set")
    _refused(tmp_path, capsys, [f'path="{ratings}"', f'users_path="{tmp_path}"', 'attribute="sex"'],
             "users_path = ", "is a folder")


def test_bad_columns_are_refused_naming_the_column(tmp_path, capsys, files):
    ratings, users = files
    base = [f'path="{ratings}"', f'users_path="{users}"']
    _refused(tmp_path, capsys, base + ['attribute="gender"'], "column 'gender' not in the users file",
             "['user', 'sex', 'country']")
    _refused(tmp_path, capsys, base + ['attribute="sex"', 'rating_col="stars"'], "column 'stars' not in",
             "['user', 'item', 'rating']")
    _refused(tmp_path, capsys, base + ['attribute="sex"', 'users_id_col="uid"'], "users_id_col", "'uid'")
    _refused(tmp_path, capsys, base + ['attribute="country"'], "one class only")
    _refused(tmp_path, capsys, base + ['attribute="sex"', "n_clusters=41"], "n_clusters = 41", "the 40 users")
    _refused(tmp_path, capsys, base + ['attribute="sex"', "cv=20", "opt_in_fraction=0.6"], "24 opted-in and 16",
             "cv = 20")
    _refused(tmp_path, capsys, base + ['attribute="sex"', "cuts={sex = [1]}"], "cuts.sex", "'F', not a number")
    twice = _write(tmp_path / "t.csv", ["user", "sex"], [(1, "F"), (2, "M"), (1, "M")])
    _refused(tmp_path, capsys, [f'path="{ratings}"', f'users_path="{twice}"', 'attribute="sex"'],
             "names user '1' more than once")


def test_empty_attribute_and_a_scale_holding_zero_are_refused(tmp_path, capsys, files):
    ratings, _ = files
    users = _write(tmp_path / "e.csv", ["user", "sex"], [(u, m) for u, m in zip(range(1, 41), ["", "NA"] * 20)])
    _refused(tmp_path, capsys, [f'path="{ratings}"', f'users_path="{users}"', 'attribute="sex"'],
             "column 'sex'", "is empty")
    _, ok_users = files
    zero = "0 is reserved for 'not rated' in a rating matrix"
    _refused(tmp_path, capsys, [f'path="{ratings}"', f'users_path="{ok_users}"', 'attribute="sex"',
                                "rating_range=[-2, 5]"], "rating_range = [-2.0, 5.0] holds 0", zero)
    rows, _ = _ratings(list(range(1, 41)), [-2, -1, 1, 2])  # -2..2 without a 0: the data's scale holds 0
    signed = _write(tmp_path / "s.csv", ["user", "item", "rating"], [(u, i, int(r)) for u, i, r in rows])
    _refused(tmp_path, capsys, [f'path="{signed}"', f'users_path="{ok_users}"', 'attribute="sex"'],
             "from -2 to 2", zero)
    _refused(tmp_path, capsys, [f'path="{ratings}"', f'users_path="{ok_users}"', 'attribute="sex"',
                                "rating_range=[2, 5]"], "lie outside it")


def test_float_written_integer_ids_match_and_question_mark_is_missing():
    # pandas writes an integer id column holding a missing value as floats ("7.0"): those rows matched no user
    # and the users were silently counted as undisclosed; "?" (the UCI files' marker) became a class of its own
    from privrelease.runner.experiments.ratings_file import _encode, _match_ids

    user_ids = np.array([3, 7, 12])
    np.testing.assert_array_equal(_match_ids(["7.0", "3", "12.0", "007", "7.5", "4.0"], user_ids), [1, 0, 2, -1, -1, -1])
    np.testing.assert_array_equal(_match_ids(["7.0", "7"], np.array(["7", "x"])), [-1, 0])  # string ids: as written
    code, _ = _encode("sex", ["F", "?", "M", "F"], None, "u.csv")
    assert code[1] == -1 and len(set(code[[0, 2]])) == 2 and code[0] == code[3]


def test_users_file_without_a_header_line_named_by_users_columns(tmp_path):
    # MovieLens's u.user: 'id|age|gender|occupation|zip', no header line. users_columns names the columns; the
    # same data with a header line gives the same matrix and classes
    from privrelease.runner._schema import PipelineError
    from privrelease.runner.experiments.ratings_file import read_data

    ids = list(range(1, 61))
    rows, classes = _ratings(ids, [1, 2, 3, 4, 5])
    ratings = _write(tmp_path / "u.data", ["user", "item", "rating"], rows, sep="\t")
    body = [(u, 20 + u % 30, "MF"[classes[u]], "other", f"{u:05d}") for u in ids]
    plain = tmp_path / "u.user"
    plain.write_text("\n".join("|".join(str(v) for v in r) for r in body) + "\n")
    named = _write(tmp_path / "users.csv", ["user", "age", "gender", "occupation", "zip"], body, sep="|")
    common = dict(sep="\t", users_sep="|", attribute="gender")
    R1, a1, info1 = read_data(ratings, str(plain), users_columns=["user", "age", "gender", "occupation", "zip"],
                              **common)
    R2, a2, _ = read_data(ratings, named, **common)
    assert info1["n_disclosed"] == 60 and (R1 != R2).nnz == 0
    np.testing.assert_array_equal(a1, a2)
    # the first line is a user, not a header: user 1 is read (a header-less read without users_columns
    # took '1|21|F|other|00001' for the column names)
    with pytest.raises(PipelineError, match=r"column 'user' not in the users file .*users_columns"):
        read_data(ratings, str(plain), **common)
    # a row longer than users_columns names the line
    bad = tmp_path / "bad.user"
    bad.write_text(plain.read_text() + "61|30|F|writer|12345|extra\n")
    with pytest.raises(PipelineError, match=r"line 61 has 6 fields .*users_columns names"):
        read_data(ratings, str(bad), users_columns=["user", "age", "gender", "occupation", "zip"], **common)


def test_attribute_values_from_the_users_file_add_no_markup_to_the_reports(tmp_path):
    """A class named with a run of backticks and an <img onerror> tag, or with line breaks, a heading and a link: both
    reports show the text, as text (report.md had a live <img> tag, report.html a heading and a link)."""
    from html.parser import HTMLParser

    ids = [f"u{k}" for k in range(60)]
    rows, classes = _ratings(ids, [1, 2, 3, 4, 5])
    evil = ["```<img src=x onerror=alert(1)>", "F\n\n# Conclusion: zero leakage\n\n[click](evil.html)"]
    r = _write(tmp_path / "r.csv", ["user", "item", "rating"], rows)
    u = tmp_path / "u.csv"
    pd.DataFrame({"user": ids, "gender": [evil[classes[i]] for i in ids]}).to_csv(u, index=False)
    assert _run(tmp_path, f"path={r}", f"users_path={u}", "attribute=gender") == 0
    out = tmp_path / "out"
    md = (out / "report.md").read_text()
    line = next(ln for ln in md.splitlines() if "Private attribute" in ln)
    assert "\\<img src=x onerror=alert(1)\\>" in line and "\\`\\`\\`" in line  # escaped, in one paragraph
    assert "F\\\\n\\\\n\\# Conclusion" in line and "\\[click\\](evil.html)" in line  # the line breaks shown as \\n

    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags = []

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, dict(attrs)))

    page = (out / "report.html").read_text()
    parser = Tags()
    parser.feed(page)
    assert not [a for _, a in parser.tags if "onerror" in a or a.get("src") == "x"]  # the plots' <img> only
    assert not [a for t, a in parser.tags if t == "a" and a.get("href") == "evil.html"]
    assert "<h1>Conclusion" not in page and "# Conclusion: zero leakage" in page
    data = json.loads((out / "data.json").read_text())
    assert evil[0] in data["described"] and evil[1] in data["described"]  # the data's own words, unescaped
    assert "described_text" not in data
