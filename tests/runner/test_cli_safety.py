"""The command line stays in its folder and reports user errors on one line (issue 11), and the HTML report
(issue 13) is one self-contained page.

Every case of issue 11's "Command line" bullet is replayed in-process through ``main``; the only experiment
that really runs is ``census_erasure`` in its quick mode (a few seconds).
"""

import base64
import os
from pathlib import Path

import pandas as pd
import pytest

from privrelease.runner import OutputFolderError, Report

from html_pages import HTMLPage  # tests/html_pages.py
from shared_helpers import quick_census_run, run_cli as _run  # tests/shared_helpers.py

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
CENSUS = str(PIPELINES / "census_erasure.toml")


def _assert_usage_error(rc, err, *texts):
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("privrelease: error: ") and "Traceback" not in err
    for text in texts:
        assert text in lines[0], (text, lines[0])


@pytest.fixture(scope="module")
def census_report(tmp_path_factory):
    """One real quick run of the census pipeline; returns its folder."""
    return quick_census_run(tmp_path_factory, "census")


# ---------------------------------------------------------------- output folder
def test_symlink_planted_at_report_md_is_never_followed(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "outside.txt"
    victim.write_text("precious")
    (out / "report.md").symlink_to(victim)
    for extra in ([], ["--overwrite"]):
        rc, _, err = _run(["run", CENSUS, "--quick", "-o", str(out)] + extra, capsys)
        _assert_usage_error(rc, err, "symbolic link", "report.md")
        assert victim.read_text() == "precious"
        assert sorted(p.name for p in out.iterdir()) == ["report.md"]  # nothing ran, nothing written


def test_symlink_planted_during_a_run_is_refused_and_the_target_kept(tmp_path):
    (tmp_path / "out").mkdir()  # a Report creates a missing folder only at its first file
    rep = Report(tmp_path / "out", title="t")
    victim = tmp_path / "outside.csv"
    victim.write_text("precious")
    (tmp_path / "out" / "curve.csv").symlink_to(victim)
    with pytest.raises(OutputFolderError, match="symbolic link"):
        rep.table(pd.DataFrame({"a": [1]}), "curve")
    assert victim.read_text() == "precious"
    # no temporary file is left behind either
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["curve.csv"]


def test_symlinked_output_folder_is_refused(tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    rc, _, err = _run(["run", CENSUS, "-o", str(tmp_path / "link")], capsys)
    _assert_usage_error(rc, err, "is a symbolic link")
    assert list(real.iterdir()) == []


def test_earlier_report_is_kept_unless_overwrite(census_report, capsys):
    before = (census_report / "report.md").read_bytes()
    rc, _, err = _run(["run", CENSUS, "--quick", "-o", str(census_report)], capsys)
    _assert_usage_error(rc, err, "earlier report", "--overwrite")
    assert (census_report / "report.md").read_bytes() == before


def test_demo_checks_every_sub_folder_before_running(tmp_path, capsys):
    (tmp_path / "census_erasure").mkdir()
    (tmp_path / "census_erasure" / "report.md").write_text("earlier")
    rc, _, err = _run(["demo", "--quick", "--only", "census_erasure", "iris_quantization", "-o", str(tmp_path)],
                      capsys)
    _assert_usage_error(rc, err, "earlier report", "census_erasure")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["census_erasure"]
    rc, _, err = _run(["demo", "--only", "no_such_experiment", "-o", str(tmp_path / "x")], capsys)
    _assert_usage_error(rc, err, "no_such_experiment")


def test_overwrite_replaces_the_report_atomically(census_report, capsys):
    rc, out, err = _run(["run", CENSUS, "--quick", "--overwrite", "-o", str(census_report),
                         "--set", "top=3"], capsys)
    assert rc == 0, err
    text = (census_report / "report.md").read_text()
    assert "top-3 profiles" in text
    assert not [p for p in census_report.iterdir() if p.name.endswith(".tmp")]


def test_empty_output_is_refused_and_nothing_written_in_cwd(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for cmd in (["run", CENSUS, "-o", ""], ["run", CENSUS, "-o", "  "], ["demo", "-o", ""]):
        rc, _, err = _run(cmd, capsys)
        _assert_usage_error(rc, err, "is empty")
    assert list(tmp_path.iterdir()) == []


def test_output_naming_a_file_or_under_a_file(tmp_path, capsys):
    f = tmp_path / "a_file"
    f.write_text("x")
    rc, _, err = _run(["run", CENSUS, "-o", str(f)], capsys)
    _assert_usage_error(rc, err, "is a file, not a folder")
    # an unwritable location (chmod does not stop root, a path under a regular file stops everyone)
    rc, _, err = _run(["run", CENSUS, "-o", str(f / "sub" / "out")], capsys)
    _assert_usage_error(rc, err, "cannot create output folder", "is a file")
    assert f.read_text() == "x"


def test_unwritable_folder_is_refused(tmp_path, monkeypatch, capsys):
    """A folder ``os.access`` reports unwritable (what a non-root user gets from chmod 555)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == ro else real_access(p, mode, **kw))
    rc, _, err = _run(["run", CENSUS, "-o", str(ro)], capsys)
    _assert_usage_error(rc, err, "is not writable")


# ---------------------------------------------------------------- parameters
@pytest.mark.parametrize("pipeline, setting, texts", [
    ("census_erasure", "top=-1", ["top = -1", "expected an integer in [1, 10000]"]),
    ("contract_design", "monte_carlo=-1", ["monte_carlo = -1"]),
    ("contract_design", "n_points=0", ["n_points = 0"]),
    ("contract_design", 'n_points="ten"', ["n_points = 'ten' (string)", "expected an integer"]),
    ("politics_tv_ratings", 'n_deltas="ten"', ["n_deltas = 'ten'"]),
    ("census_erasure", 'random_state="x"', ["random_state = 'x'", "integer seed"]),
    ("privacy_auction", "n_users=1e9", ["n_users = 1e+09", "cap 200000", "in memory"]),
    ("synthetic_ratings_describe", "n_users=1e9", ["n_users = 1e+09", "cap 100000"]),
    ("census_erasure", 'quick="no"', ["quick = 'no'", "boolean"]),
    ("census_erasure", "no_such_param=1", ["no_such_param"]),
    ("truthful_regression", "n_players=[100, 0]", ["n_players[1] = 0"]),
])
def test_bad_parameter_exits_2_with_one_line(tmp_path, capsys, pipeline, setting, texts):
    out = tmp_path / "out"
    rc, _, err = _run(["run", str(PIPELINES / f"{pipeline}.toml"), "--quick", "-o", str(out), "--set", setting],
                      capsys)
    _assert_usage_error(rc, err, *texts)
    assert not out.exists()  # checked before anything ran


def test_bad_parameter_in_the_pipeline_file(tmp_path, capsys):
    f = tmp_path / "p.toml"
    f.write_text('experiment = "census_erasure"\n[params]\ntop = -1\nquick = "no"\n')
    rc, _, err = _run(["run", str(f), "-o", str(tmp_path / "o")], capsys)
    _assert_usage_error(rc, err, str(f), "= ")
    f.write_text('experiment = "census_erasure"\n[quick]\ntop = "8"\n')
    rc, _, err = _run(["run", str(f), "-o", str(tmp_path / "o")], capsys)
    _assert_usage_error(rc, err, "[quick]", "top = '8'")


def test_debug_shows_the_traceback(tmp_path, capsys):
    rc, _, err = _run(["run", CENSUS, "--debug", "-o", str(tmp_path / "o"), "--set", "top=-1"], capsys)
    assert rc == 2 and "Traceback" in err and "top = -1" in err.splitlines()[-1]


def test_argparse_errors_are_one_line(capsys):
    for argv in (["run"], ["frobnicate"], ["run", CENSUS, "--set", "novalue"], ["demo", "--only"]):
        rc, _, err = _run(argv, capsys)
        _assert_usage_error(rc, err)


def test_unknown_movielens_dataset_is_refused_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "o"
    rc, _, err = _run(["run", str(PIPELINES / "movielens_joint.toml"), "-o", str(out), "--set", "dataset=ml-10m"],
                      capsys)
    _assert_usage_error(rc, err, "dataset = 'ml-10m'", "'ml-100k', 'ml-1m'")
    assert not out.exists()
    rc, _, err = _run(["run", str(PIPELINES / "movielens_1m_joint.toml"), "-o", str(out), "--set",
                       "age_cuts=[30]"], capsys)
    _assert_usage_error(rc, err, "age_cuts = [30]", "age codes")
    assert not out.exists()


def test_missing_data_set_exits_nonzero(tmp_path, monkeypatch, capsys):
    # named folder missing: refused before anything runs
    rc, _, err = _run(["run", str(PIPELINES / "movielens_gender.toml"), "--quick", "-o", str(tmp_path / "a"),
                       "--set", f'path="{tmp_path / "nowhere"}"'], capsys)
    _assert_usage_error(rc, err, "path = ", "does not exist")
    # no folder named and Surprise's cache empty: the run explains itself in the report and exits 1
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path / "empty_cache"))
    rc, _, err = _run(["run", str(PIPELINES / "movielens_gender.toml"), "--quick", "-o", str(tmp_path / "b")],
                      capsys)
    assert rc == 1
    assert err.strip().splitlines()[-1].startswith("privrelease: error: experiment 'movielens_gender' could not")
    assert "data missing" in err
    assert "Data missing" in (tmp_path / "b" / "report.md").read_text()
    # the same for ml-1m: the report names its files and Surprise's ml-1m download
    rc, _, err = _run(["run", str(PIPELINES / "movielens_1m_joint.toml"), "--quick", "-o", str(tmp_path / "c")],
                      capsys)
    assert rc == 1 and "data missing" in err
    text = (tmp_path / "c" / "report.md").read_text()
    assert "MovieLens 1M was not found" in text and "ratings.dat, users.dat, movies.dat" in text
    assert "load_builtin('ml-1m')" in text


# ---------------------------------------------------------------- the HTML page (issue 13)
def test_html_report_is_self_contained(census_report):
    page = (census_report / "report.html").read_text()
    p = HTMLPage()
    p.feed(page)
    # every plot of the folder is embedded, byte for byte, and nothing is loaded from elsewhere
    pngs = sorted(census_report.glob("*.png"))
    assert pngs and len(p.imgs) == len(pngs)
    embedded = [base64.b64decode(img["src"].split(",", 1)[1]) for img in p.imgs]
    assert all(img["src"].startswith("data:image/png;base64,") for img in p.imgs)
    assert sorted(embedded) == sorted(f.read_bytes() for f in pngs)
    assert "script" not in p.tags and "link" not in p.tags and "iframe" not in p.tags
    assert "url(" not in page and "@import" not in page
    assert all(not v.startswith(("http:", "https:", "//", "/", "file:")) for _, _, v in p.refs), p.refs
    # every CSV is an HTML table with the same header and number of rows (up to the shown maximum)
    csvs = sorted(census_report.glob("*.csv"))
    assert len(p.tables) == len(csvs)
    headers = [t[0] for t in p.tables]
    for f in csvs:
        df = pd.read_csv(f)
        match = [t for t in p.tables if t[0] == [str(c) for c in df.columns]]
        assert match, f.name
        assert len(match[0]) - 1 == min(len(df), 60)
    assert headers


def test_html_escapes_text_and_links_stay_relative(tmp_path):
    rep = Report(tmp_path / "r", title="<script>alert(1)</script> & co")
    rep.section("a <b> section")
    rep.text("**bold** `x<y` and [sub](sub/report.md) and [evil](javascript:alert(1)) "
             "and [far](https://example.org/x.js) <img src=x onerror=alert(1)>")
    rep.table(pd.DataFrame({"<th>": ["<td>&"]}), "t")
    rep.save()
    page = (tmp_path / "r" / "report.html").read_text()
    p = HTMLPage()
    p.feed(page)
    assert "script" not in p.tags and "b" not in p.tags and p.imgs == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert "<strong>bold</strong>" in page and "<code>x&lt;y</code>" in page
    assert [v for _, k, v in p.refs if k == "href"] == ["sub/report.html"]
    assert p.tables == [[["<th>"], ["<td>&"]]]


def test_list_shows_an_experiments_schema(capsys):
    from privrelease.runner.experiments import contract_design

    rc, out, _ = _run(["list", "contract_design"], capsys)
    assert rc == 0
    lines = [ln.strip() for ln in out.splitlines()[1:]]
    assert sorted(ln.split(":", 1)[0] for ln in lines) == sorted(contract_design.PARAMETERS)
    assert any(ln.startswith("monte_carlo: an integer in [1, 10000000]; capped because") for ln in lines)
    rc, _, err = _run(["list", "nope"], capsys)
    _assert_usage_error(rc, err, "unknown experiment 'nope'")


# ---------------------------------------------------------------- --verbose
def test_verbose_logs_the_solver_stages_on_stderr_and_leaves_the_logger_as_found(tmp_path, capsys):
    """``--verbose`` shows what the mapping solver does (each answer, its certified gap and time) on stderr, only
    when asked, and takes its handler off again: ``main`` may run again in the same process."""
    import logging

    iris = str(PIPELINES / "iris_quantization.toml")
    log = logging.getLogger("privrelease")
    before = (list(log.handlers), log.level)
    rc, out, err = _run(["run", iris, "--quick", "-o", str(tmp_path / "v"), "--verbose"], capsys)
    assert rc == 0, err
    stages = [line for line in err.splitlines() if line.startswith("privrelease: delta=")]
    assert stages and all(" answer certified (gap " in line and " bits, tol 1e-06) after " in line
                          for line in stages), err
    assert "privrelease: delta=" not in out
    assert (list(log.handlers), log.level) == before
    rc, _, err = _run(["run", iris, "--quick", "-o", str(tmp_path / "q")], capsys)
    assert rc == 0 and "privrelease: delta=" not in err


def test_code_spans_pair_backtick_runs_of_equal_length_as_commonmark_does():
    """A run of three backticks closes no one-backtick span: what follows it is text, and its '<' is escaped in
    report.md (the single-backtick pairing had left a live <img> tag); escaped punctuation shows as itself in HTML."""
    from privrelease.runner._report import _code_spans, _inline, _md_text

    assert _code_spans("a `b` c ``d`e`` f") == ["a ", "`b`", " c ", "``d`e``", " f"]
    assert _code_spans("```<img> x` y") == ["```<img> x` y"]  # no run of equal length closes either run
    assert _code_spans("\\`a` b`") == ["\\`a", "` b`", ""]  # an escaped backtick opens nothing
    # a run without a partner is written escaped, so no renderer can pair it with another
    assert _md_text("```<img src=x onerror=alert(1)> x` = 1") == "\\`\\`\\`\\<img src=x onerror=alert(1)> x\\` = 1"
    assert _md_text("keep `x<y` and <b>") == "keep `x<y` and \\<b>"
    assert _inline("``a`b`` and \\*not bold\\* and \\[t\\](x.html) \\<25") == (
        "<code>a`b</code> and *not bold* and [t](x.html) &lt;25")
