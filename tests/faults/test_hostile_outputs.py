"""Hostile inputs, fifth audit: what the library WRITES and LOADS. Report text from data, pipeline files and
the command line (report.md / report.html), output folders, the loaders of saved mappers and of rating files.
One test per finding (earlier audits of the estimators' inputs: test_hostile_inputs.py to
test_hostile_inputs4.py; the save format: test_persistence_format.py; the command line: tests/runner)."""

import contextlib
import io
import os
import re
import signal
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from privrelease.runner import OutputFolderError, Report
from privrelease.runner._report import markdown_to_html

from html_pages import HTMLPage  # tests/html_pages.py

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _gfm_cells(line):
    """The cells of a GitHub-flavoured markdown table row: split at each '|' no backslash escapes."""
    cells, cur, i = [], "", 0
    body = line.strip()[1:-1] if line.strip().startswith("|") else line
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            cur += body[i:i + 2]
            i += 2
            continue
        if body[i] == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += body[i]
        i += 1
    return cells + [cur]


def _report(tmp_path, **kw):
    rep = Report(tmp_path / "r", **kw)
    return rep, tmp_path / "r"


# --------------------------------------------------------------------------- report text
@pytest.mark.parametrize("href", ["\x01javascript:alert(document.domain)", "\x1fjavascript:alert(1)",
                                  "\u202ejavascript:alert(1)", "..\\..\\secret", "\\\\host\\share",
                                  ".%2e/.%2e/etc/passwd", "%2E%2E/x", "javascript%3Aalert(1)"])
def test_a_control_character_before_a_scheme_makes_no_link(tmp_path, href):
    # a browser drops leading C0 controls from a URL: '\x01javascript:...' (a pipeline description, TOML
    # "\u0001") was written as <a href="\x01javascript:..."> in report.html, a script link
    rep, out = _report(tmp_path, title="t")
    rep.text(f"see [here]({href}) and [the sub-report](sub/report.md)")
    rep.save()
    page = HTMLPage((out / "report.html").read_text(encoding="utf-8"))
    assert page.hrefs == ["sub/report.html"]
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "[here](" not in md and "[the sub-report](sub/report.md)" in md


def test_a_nul_in_report_text_is_shown_not_a_crash():
    # NUL was _inline's place-holder for `code` spans: "\x000\x00" raised IndexError (or pulled in a code span)
    out = markdown_to_html("a \x000\x00 b and `x<y`")
    assert "\\x000\\x00" in out and "<code>x&lt;y</code>" in out and "\x00" not in out


def test_plain_text_cannot_break_report_md_or_add_markup(tmp_path):
    cells = ["a\\|b", "x\ny", "<script>alert(1)</script>", "`|`", "&amp;", "**b** _i_", "[l](javascript:x)"]
    rep, out = _report(tmp_path, title="T\n# injected <script>")
    rep.section("S\n| x |")
    rep.table(pd.DataFrame({"c|\nd": cells, "n": range(len(cells))}), "t")
    rep.save()
    md = (out / "report.md").read_text(encoding="utf-8")
    lines = md.splitlines()
    # one line each for the title and the heading; no raw HTML, no other heading
    assert [ln for ln in lines if ln.startswith("#")] == [lines[0], "## S\\\\n\\| x \\|"]
    assert all(len(m.group(1)) % 2 for m in re.finditer(r"(\\*)<", md))  # every '<' backslash-escaped
    rows = [ln for ln in lines if ln.startswith("|")]
    assert len(rows) == 2 + len(cells)  # header, rule and one line per row
    assert all(len(_gfm_cells(ln)) == 2 for ln in rows), rows
    # report.html shows every value as it is (controls as escapes), nothing as markup
    page = HTMLPage((out / "report.html").read_text(encoding="utf-8"))
    assert "script" not in page.tags and "strong" not in page.tags and page.hrefs == []
    shown = page.cells[2::2]
    assert page.cells[0] == "c|\\nd" and shown == [c.replace("\n", "\\n") for c in cells]
    # the CSV keeps the exact values
    assert pd.read_csv(out / "t.csv")["c|\nd"].tolist() == cells


def test_bidirectional_overrides_are_shown_as_escapes(tmp_path):
    # U+202E reversed the rest of the markdown line in a text viewer ("Trojan Source")
    rep, out = _report(tmp_path, title="ids \u202eabc")
    rep.table(pd.DataFrame({"id": ["\u2066x\u2069", "\u200fy"]}), "t")
    rep.save()
    for name in ("report.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert not any(ch in text for ch in "\u202e\u2066\u2069\u200f"), name
        assert "u202eabc" in text and "u2066x" in text


def test_a_million_character_cell_is_cut_in_the_report_and_kept_in_the_csv(tmp_path):
    rep, out = _report(tmp_path, title="t")
    long = "u" * 10**6
    rep.table(pd.DataFrame({"user": [long, "b"]}), "t")
    rep.save()
    for name in ("report.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert len(text) < 5000 and "(1000000 characters)" in text
    assert pd.read_csv(out / "t.csv")["user"].tolist() == [long, "b"]


def test_a_path_that_is_not_utf8_still_gives_a_report(tmp_path):
    # --set path=$'...\xff' of a folder without the data: the "data missing" report held the path as a lone
    # surrogate and report.md was never written (UnicodeEncodeError)
    from privrelease.runner import RunIncomplete, run_experiment

    folder = tmp_path / "data\udcff"
    folder.mkdir()
    with pytest.raises(RunIncomplete):
        run_experiment("movielens_gender", tmp_path / "out", params={"path": str(folder)}, quick=True)
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "data\\udcff" in md and "data\\udcff" in (tmp_path / "out" / "report.html").read_text()


def test_a_path_that_is_not_utf8_on_a_strict_stdout_is_no_failed_run(tmp_path, monkeypatch):
    # the report was written, then printing its path raised UnicodeEncodeError: "the run failed", exit 1
    from privrelease.cli import main

    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", stdout)
    out = tmp_path / "bad\udcffname"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["run", str(PIPELINES / "census_erasure.toml"), "--quick", "-o", str(out)])
    assert rc == 0 and (out / "report.html").is_file()
    stdout.flush()
    assert "bad\\udcffname/report.md" in stdout.buffer.getvalue().decode("utf-8")
    assert stdout.errors == "strict"  # the stream is given back as it was


# --------------------------------------------------------------------------- output folders
def test_a_file_the_report_did_not_write_is_never_replaced(tmp_path):
    # -o naming a folder of the user's own files (no earlier report): their curve.csv was replaced silently
    own = tmp_path / "curve.csv"
    own.write_text("my own data\n")
    # refused before anything runs since the fourteenth audit (a folder holding files is not a report's)
    with pytest.raises(OutputFolderError, match=r"is not empty.*curve\.csv.*--overwrite"):
        Report(tmp_path, title="t")
    own.unlink()
    rep = Report(tmp_path, title="t")
    own.write_text("my own data\n")  # a file of the user's that appears after the folder was checked
    with pytest.raises(OutputFolderError, match=r"refusing to replace .*curve\.csv.*--overwrite"):
        rep.table(pd.DataFrame({"a": [1]}), "curve")
    assert own.read_text() == "my own data\n"
    rep.table(pd.DataFrame({"a": [1]}), "other")
    rep.table(pd.DataFrame({"a": [2]}), "other")  # its own file: written again
    rep.save()
    assert pd.read_csv(tmp_path / "other.csv")["a"].tolist() == [2]
    (tmp_path / "x").mkdir()  # a Report creates a missing folder only at its first file
    rep = Report(tmp_path / "x", title="t")
    (tmp_path / "x" / "report.md").write_text("mine")  # appeared after the folder was checked
    with pytest.raises(OutputFolderError, match="refusing to replace"):
        rep.save()
    assert (tmp_path / "x" / "report.md").read_text() == "mine"
    rep = Report(tmp_path, title="t", overwrite=True)  # asked for: replaced (when the report is saved)
    rep.table(pd.DataFrame({"a": [3]}), "curve")
    rep.save()
    assert pd.read_csv(own)["a"].tolist() == [3]


@pytest.mark.parametrize("name, message", [("a\x00b", "NUL character"), ("x" * 300, "File name too long")])
def test_an_impossible_output_path_is_an_output_folder_error(tmp_path, name, message):
    # was a bare ValueError 'embedded null byte' / OSError [Errno 36]: the command line called it a failed run
    # (exit 1) instead of a refused folder (exit 2), and neither named the folder
    with pytest.raises(OutputFolderError, match=message) as info:
        Report(tmp_path / name, title="t")
    assert repr(str(tmp_path / name))[:40] in str(info.value)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- loaders
@contextlib.contextmanager
def _deadline(seconds):
    def fail(*_):
        raise TimeoutError(f"still blocked after {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_load_refuses_a_fifo_instead_of_blocking(tmp_path):
    import privrelease

    fifo = tmp_path / "mapper.npz"
    os.mkfifo(fifo)
    with _deadline(5), pytest.raises(ValueError, match="not a regular file"):
        privrelease.load(fifo)


def test_load_names_a_symlink_loop(tmp_path):
    import privrelease

    loop = tmp_path / "loop.npz"
    loop.symlink_to(loop)
    with pytest.raises(FileNotFoundError, match="symbolic link .* loop of links"):
        privrelease.load(loop)


@pytest.mark.parametrize("line", ["u" * 200_000 + ",i,3", "1,2," + "3" * 200_000])
def test_a_field_beyond_csvs_limit_names_the_file_and_line(tmp_path, line):
    # was the bare "_csv.Error: field larger than field limit (131072)"
    from privrelease.datasets import load_ratings_csv

    f = tmp_path / "r.csv"
    f.write_text(f"user,item,rating\n1,1,4\n{line}\n")
    with pytest.raises(ValueError, match=r"r\.csv' line 3: field larger than field limit .* at most 131072"):
        load_ratings_csv(f)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_movielens_files_that_are_folders_or_fifos_are_named(tmp_path):
    from privrelease.datasets import load_movielens_100k

    os.mkfifo(tmp_path / "u.data")
    (tmp_path / "u.user").mkdir()
    with _deadline(5), pytest.raises(FileNotFoundError) as info:
        load_movielens_100k(tmp_path)
    assert "(missing: u.data [not a regular file], u.user [not a regular file], u.item)" in str(info.value)


@pytest.mark.parametrize("gender", ["f", "X", "<script>", ""])
def test_movielens_100k_gender_other_than_f_or_m_is_refused(tmp_path, gender):
    # the gender attribute codes 'F' as 1 and anything else as 0: 'f' was silently a man (ml-1m refused it)
    from privrelease.datasets import load_movielens_100k

    (tmp_path / "u.data").write_text("1\t1\t5\t881250949\n2\t1\t3\t881250949\n")
    (tmp_path / "u.user").write_text(f"1|24|M|technician|85711\n2|53|{gender}|other|94043\n")
    (tmp_path / "u.item").write_text("1|Toy Story (1995)\n")
    with pytest.raises(ValueError, match=rf"u\.user line 2: gender {re.escape(repr(gender))} is not 'F' or 'M'"):
        load_movielens_100k(tmp_path)


def test_report_json_is_strict_json(tmp_path):
    # json.dumps wrote NaN / Infinity, which JavaScript's JSON.parse, jq and most parsers refuse
    import json

    import numpy as np

    rep, out = _report(tmp_path, title="t")
    rep.json({"auc": float("nan"), "gap": np.float64("inf"), "curve": np.array([1.0, np.nan]),
              np.int64(3): [np.float32(-np.inf), 2]}, "headline")
    rep.save()

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    got = json.loads((out / "headline.json").read_text(), parse_constant=refuse)
    assert got == {"auc": None, "gap": None, "curve": [1.0, None], "3": [None, 2]}


def test_a_markdown_table_given_as_text_is_escaped_once(tmp_path):
    # the demo's index writes markdown_table(...) through Report.text: its '\<' must not become '\\<' (a
    # visible backslash and a live '<'), and its escaped backticks open no code span
    from privrelease.runner import markdown_table

    rep, out = _report(tmp_path, title="t")
    rep.text(markdown_table(pd.DataFrame({"status": ["<b>x</b>", "`<i>`"]})))
    rep.save()
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "| \\<b\\>x\\</b\\> |" in md and "| \\`\\<i\\>\\` |" in md
    assert all(len(m.group(1)) % 2 for m in re.finditer(r"(\\*)<", md))
