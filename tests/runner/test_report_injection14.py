"""report.md: text from data, pipeline files or --set adds no block, raw HTML, outside link or autolink.

The checks read report.md as CommonMark 0.31 and GitHub-flavoured markdown read it (block starts of the spec's
sections 4-5 plus GFM tables and footnotes; code spans, backslash escapes and link destinations of section 6),
written here independently of the report writer.
"""

import re

import pytest

from privrelease.runner import Report

_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# a line that opens a block other than a paragraph's continuation (or a "- " list item / "---" rule, asked for
# by the ``allow`` of _blocks)
_BLOCK_START = re.compile(
    r"(?: {4}|\t)"                                  # indented code (a paragraph's first line)
    r"| {0,3}(?:#{1,6}(?:[ \t]|$)"                  # ATX heading
    r"|>|<"                                         # block quote, HTML block
    r"|[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)"     # list items
    r"|`{3,}|~{3,}"                                 # fences
    r"|(?:[-*_][ \t]*){3,}$|=+[ \t]*$|-+[ \t]*$"    # rule, setext underlines
    r"|\[\^"                                        # GFM footnote definition
    r"|[|:]?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-*:?[ \t]*)*$)")  # GFM table delimiter row


def _md(tmp_path, text, name="r"):
    rep = Report(tmp_path / name, title="t")
    rep.text(text)
    rep.save()
    md = (tmp_path / name / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# t\n\n")
    return md[len("# t\n\n"):].strip("\n")


def _outside_code(par):
    """``par`` (one paragraph) with its code spans and backslash escapes replaced by ``C`` and ``E``."""
    out, i = [], 0
    while i < len(par):
        if par[i] == "\\" and i + 1 < len(par) and par[i + 1] in _PUNCT:
            out.append("E")
            i += 2
        elif par[i] == "`":
            n = len(re.match("`+", par[i:]).group(0))
            close = re.compile(r"(?<!`)`{%d}(?!`)" % n).search(par, i + n)
            out.append("C" if close else "E" * n)
            i = close.end() if close else i + n
        else:
            out.append(par[i])
            i += 1
    return "".join(out)


def _live_markup(par):
    """Raw HTML, link destinations out of the folder and link reference definitions CommonMark sees in ``par``."""
    text = _outside_code(par)
    found = re.findall(r"<.{0,20}", text)
    found += [d for d in re.findall(r"\]\(([^)]*)\)", text) if ":" in d or d.startswith("/")]
    found += re.findall(r"\[[^\]]*\]:", text)
    return found


def _autolinks(par):
    """What GitHub would autolink in ``par``: a scheme, ``www.``, an e-mail address (outside code spans)."""
    return re.findall(r"(?i)(?:https?|ftp|mailto|xmpp)\:|www\.|[\w.+-]@[\w-]", _outside_code(par))


def _blocks(md, allow=False):
    """The paragraphs of ``md``; fails if a line opens another block (``allow``: "- " items and "---" rules)."""
    pars = []
    for block in re.split(r"\n[ \t]*\n", md):
        for line in block.split("\n"):
            if allow and (line == "---" or line.startswith("- ")):
                continue
            assert not _BLOCK_START.match(line), (line, md)
        pars += block.split("\n") if block.startswith("- ") else [block]
    return pars


VARIANTS = ["# heading", "<script>alert(1)</script>", "    indented code", "> quote", "- item", "+ item",
            "* item", "1. item", "1) item", "```", "```js", "~~~", "---", "===", "-", "***", "___", "|---|---|",
            ":-:", "[^1]: <b>note</b>", "<img src=x onerror=alert(1)>", "[x]: https://evil.example/",
            "\t# tab", "   # three spaces", "<!-- c -->", "<div>"]


@pytest.mark.parametrize("line", [v for v in VARIANTS if not v.startswith("[x]")])  # (can't interrupt one)
def test_a_line_break_in_a_code_span_adds_no_block(tmp_path, line):
    # a `code` span across a line break was left untouched, so the line inside it started a block of its own
    md = _md(tmp_path, f"Data from `the survey\n{line}\n` and <b>x</b> `more` [a](https://evil.example/)")
    assert "\n\n" not in md  # one paragraph, as report.html shows it
    for par in _blocks(md):
        assert _live_markup(par) == [], md


@pytest.mark.parametrize("line", VARIANTS)
def test_a_blank_line_ends_a_code_span(tmp_path, line):
    # blank lines end a paragraph in CommonMark, so a `code` span never spans them: what was "inside" is text
    md = _md(tmp_path, f"`a\n\n{line} <img src=x onerror=alert(1)>\n\n` and `more\n\n[click](https://evil.example/)"
                       "\n\n`.")
    for par in _blocks(md, allow=True):
        assert _live_markup(par) == [], md


def test_a_heading_line_of_a_description_is_text_in_both_pages(tmp_path):
    # a block "# x" was a heading in report.md and an <h1> in report.html: headings are the report's sections
    md = _md(tmp_path, "Intro\n\n# Injected\n\n## Also")
    assert [ln for ln in md.splitlines() if ln.startswith("#")] == []
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert page.count("<h1>") == 1 and "<h2>" not in page and "<p># Injected</p>" in page


def test_a_link_whose_destination_holds_backticks_keeps_no_outside_target(tmp_path):
    # backticks split the link, so the first was kept with its outside target
    md = _md(tmp_path, "See [the paper](https://evil.example/`x`) and [far](https://example.org/x.js).")
    assert md == "See the paper and far."  # as report.html shows it
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "<p>See the paper and far.</p>" in page


def test_links_are_read_with_code_spans_as_commonmark_reads_them(tmp_path):
    # a code span in the link text split it too: "[t `x` u](https://evil.example/)" was kept as it was
    md = _md(tmp_path, "[a `]` b](sub/report.md), [x `y](https://e.example) z` and ![i](https://e.example/p.png) "
                       "and [c](sub/x.csv`) `d` and [t `x` u](https://evil.example/)")
    assert "[a `]` b](sub/report.md)" in md  # a relative link is kept, with its code span
    assert _live_markup(md) == [] and "![" not in md


@pytest.mark.parametrize("value", ["https://evil.example/login", "HTTP://EVIL.EXAMPLE", "www.evil.example",
                                   "WWW.evil.example", "a@evil.example", "mailto:a@evil.example",
                                   "ftp://evil.example/x", "xmpp:a@evil.example/x"])
def test_urls_of_the_data_are_no_gfm_autolinks(tmp_path, value):
    import pandas as pd

    rep = Report(tmp_path / "r", title=value)
    rep.section(value)
    rep.text(f"Class {value}, a\\@evil.example and a&#64;evil.example")
    rep.table(pd.DataFrame({value: [value]}), "t", caption=value)
    rep.save()
    md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    for line in md.splitlines():
        assert _autolinks(line) == [], line
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "\u2060" not in page and page.count(value) >= 4  # report.html shows the value as it is


def test_inline_code_shows_any_value_as_one_code_span():
    from privrelease.runner._report import escape_text, inline_code

    for value in ["a`b", "``x", "a\n\n<script>", " `", "x ", " y ", "  ", "{'sep': '|'}"]:
        par = f"p {inline_code(value)} q"
        assert "\n" not in par
        spans = re.findall(r"(?<!`)(`+)(?!`)(.*?)(?<!`)\1(?!`)", par)
        assert len(spans) == 1, par
        code = spans[0][1]
        if code.startswith(" ") and code.endswith(" ") and code.strip(" "):
            code = code[1:-1]
        assert code == escape_text(value, None)



def test_a_data_path_in_a_report_paragraph_stays_one_line(tmp_path):
    # movielens_gender wrote "Details: {exc}" (the folder named) and the footer "`{params}`" as they were
    from privrelease.runner import RunIncomplete, run_experiment

    folder = tmp_path / "x\n\n<img src=x onerror=alert(1)>\n\n[c](javascript:alert(1)) mailto:a@evil.example`\n# h"
    folder.mkdir()
    with pytest.raises(RunIncomplete):
        run_experiment("movielens_gender", tmp_path / "o", params={"path": str(folder)})
    md = (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    body = md[md.index("## Data missing"):]
    for par in _blocks(body.split("\n", 2)[2], allow=True):
        assert _live_markup(par) == [] and _autolinks(par) == [], par
    # the folder is shown on one line each time (line breaks as "\\n"), the parameters as one code span; the
    # details list the loader's message line by line (the two folders it looked in)
    lines = [ln for ln in md.splitlines() if "onerror" in ln]
    assert [ln.split(" ", 1)[0] for ln in lines] == ["-", "-", "*Generated"], md
    assert all("\\n" in ln and "(1)" in ln for ln in lines[:2]), lines
    assert re.fullmatch(r"\*Generated by C in [0-9.]+ s with parameters C\.\*", _outside_code(lines[2])), lines[2]
