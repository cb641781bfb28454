"""A report folder: ``report.md`` and ``report.html`` with tables (CSV) and PNG plots.

Experiments write into a :class:`Report`; the command line saves it.

Writing stays inside the folder: the folder is opened once without following a
symbolic link, every file is written to a fresh temporary file in a hidden
staging folder inside it (``O_CREAT | O_EXCL | O_NOFOLLOW``), and
:meth:`Report.save` moves the run's files over their targets with
:func:`os.replace`, the report pages last; a target that is a symbolic link (or
anything but a regular file) is refused. A run that stops before saving leaves
the folder as it was, and saving removes the files of the earlier report that
the new one does not write (listed in its hidden manifest with the SHA-256 of
the content it wrote; a file holding anything else is kept), so a report never
sits beside another run's tables and plots. A folder holding an earlier report
is refused unless ``overwrite=True``, and without it no file the report did not
write itself is ever replaced; a file no report wrote is never removed.

Text is escaped by one function, :func:`escape_text`: data-derived plain text
(titles, headings, table cells, captions) cannot add HTML or markdown syntax or
break a table, controls and bidirectional overrides are shown as escapes, and
links in markdown paragraphs stay relative to the report folder. A paragraph
(:meth:`Report.text`, a pipeline's description) is written to report.md block by
block as report.html shows it, so no line of it can start a heading, HTML block,
code block, quote or table, and `code` spans pair as CommonMark pairs them; URLs
and e-mail addresses are no GitHub autolinks in report.md. CSV tables hold
the values exactly as pandas writes them (no spreadsheet-formula mangling: a
cell starting with ``=`` is data, as in ``DataFrame.to_csv``).
"""

import base64
import hashlib
import html
import io
import json
import math
import os
import re
import secrets
import stat
import unicodedata
import urllib.parse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..utils._validation import user_stacklevel
from ._schema import OutputFolderError, PipelineError, _show

__all__ = ["Report", "markdown_table", "prepare_output_folder", "REPORT_FILES"]

#: the files whose presence marks a folder as holding a report
REPORT_FILES = ("report.md", "report.html")
#: the hidden file listing the files of the report last saved in a folder: a rerun with ``overwrite`` removes those
#: it does not write again (and nothing else)
MANIFEST = ".privrelease-report.json"
_MAX_MANIFEST_BYTES = 1 << 20
#: the hidden folder (inside the output folder) a run writes into until :meth:`Report.save` moves its files in
_STAGING_PREFIX = ".privrelease-run-"

# os.replace takes src_dir_fd / dst_dir_fd wherever os.rename does (it is not listed in supports_dir_fd)
_HAVE_DIR_FD = all(f in getattr(os, "supports_dir_fd", ()) for f in (os.open, os.stat, os.rename, os.unlink))
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: bytes a staged file's temporary name adds to the file's own name ('.' + name + '.' + 16 hex digits + '.tmp')
_TMP_EXTRA_BYTES = 22
#: the longest file name in bytes where the file system does not say (Linux's NAME_MAX)
_DEFAULT_NAME_MAX = 255


def _open_regular(name, fd):
    """A binary reader of the regular file ``name`` in the folder ``fd``, or None (missing, a link, a folder, a
    named pipe: opened without blocking, and anything but a regular file is left alone; a pipe hung the run)."""
    try:
        rfd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK, dir_fd=fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(rfd).st_mode):
            os.close(rfd)
            return None
    except OSError:
        os.close(rfd)
        return None
    return os.fdopen(rfd, "rb")


class _Deferred:
    """Hold back SIGINT and SIGTERM while the folder changes from one report to the next (main thread only): a
    Ctrl-C between removing the earlier report's files and moving the new ones in left neither report.

    The signals are caught by a handler that records them and raised again, in order, once the folder holds the new
    report whole. (Blocking them in the main thread's signal mask did not hold them back: the kernel delivers a
    signal sent to the process to any thread that does not block it, a BLAS or I/O thread, and Python then ran the
    main thread's handler at once, or, once, not before the run had ended.)"""

    def __enter__(self):
        import signal
        import threading

        self._old, self._held = None, []
        if threading.current_thread() is threading.main_thread():
            self._old = {}
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._hold)
        return self

    def _hold(self, signum, frame):
        self._held.append(signum)

    def __exit__(self, *exc):
        import signal

        if self._old is not None:
            for sig, handler in self._old.items():
                # None: a handler not installed from Python, which cannot be put back; the default is the closest
                signal.signal(sig, signal.SIG_DFL if handler is None else handler)
            for sig in dict.fromkeys(self._held):  # a signal held back is delivered now
                signal.raise_signal(sig)
        return False


def _name_max(folder):
    """The longest file name in bytes the file system takes in ``folder`` (or its nearest existing parent: the
    folder is created at the first file written)."""
    p = Path(folder)
    while not os.path.isdir(p) and p.parent != p:
        p = p.parent
    try:
        limit = os.pathconf(p, "PC_NAME_MAX")
    except (AttributeError, ValueError, OSError):  # no pathconf (Windows), or the file system does not say
        limit = None
    return limit if isinstance(limit, int) and limit > 0 else _DEFAULT_NAME_MAX


def check_file_name(name, folder):
    """Refuse a report file name before anything is written or created: a plain name (no folder part, not ``.``,
    ``..``, the manifest's or a staging folder's), without control or invisible characters (a line break in a
    name started a heading and an HTML block in report.md), and short enough for the file system, staged
    temporary name included (``"a" * 300`` raised a raw OSError "File name too long")."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\x00" in name or \
            (os.sep in name) or (os.altsep and os.altsep in name) or name.startswith(_STAGING_PREFIX) or \
            name == MANIFEST:
        raise ValueError(f"report file name must be a plain file name, got {name!r}")
    # every control, format (zero-width space, soft hyphen...), private-use and surrogate character, the line /
    # paragraph separators and the blank fillers: "a\u200bb" showed in report.md exactly as "ab". The joiners (Persian
    # and Indic spelling, emoji sequences) and the tag characters of flag emoji are part of names, kept
    hidden = _HIDDEN.search(name) or next(
        (ch for ch in name if (unicodedata.category(ch) in _HIDDEN_CATEGORIES and ch not in _NAME_FORMAT_KEPT
                               and not "\U000e0020" <= ch <= "\U000e007f") or ch in _BLANK_FILLERS), None)
    if hidden:
        ch = hidden if isinstance(hidden, str) else hidden.group(0)
        raise ValueError(
            f"report file name {_show(name)} holds the control or invisible character "
            f"{ch!r} (U+{ord(ch):04X}): expected a file name without control, format or invisible "
            "characters, line breaks or bidirectional marks (report.md would show them as escapes, not the name)")
    size, name_max = len(os.fsencode(name)), _name_max(folder)
    if size > name_max - _TMP_EXTRA_BYTES:
        raise ValueError(
            f"report file name {_show(name)} is {size} bytes long: expected at most "
            f"{name_max - _TMP_EXTRA_BYTES} bytes (the file system's limit of {name_max} bytes for a name, less "
            f"{_TMP_EXTRA_BYTES} for the temporary name the file is first written under)")


def _fmt(v):
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return "nan"
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.3e}"
        return f"{v:.4f}".rstrip("0").rstrip(".") if abs(v) < 1e5 else f"{v:.0f}"
    return str(v)


#: shown as escapes (``\\x00``, ``\\n``, ``\\u202e``) wherever report text is written: C0 and C1 controls (NUL,
#: ESC, line breaks of a value...), the bidirectional embeddings, overrides and isolates and the marks that
#: silently reorder what a reader sees ("Trojan Source", CVE-2021-42574), line / paragraph separators and the
#: byte-order mark, and lone surrogates (a path that is not UTF-8, as Python decodes it from the command line)
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})
#: format characters a name may hold: the zero-width non-joiner and joiner (Persian, Urdu, Indic spelling; emoji
#: sequences such as the family emoji); the tag characters of subdivision flags are allowed by range
_NAME_FORMAT_KEPT = frozenset("\u200c\u200d")
#: letters and marks that show as nothing (Hangul fillers, the braille blank, the combining grapheme joiner)
_BLANK_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f")
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufeff]")
# markdown's inline syntax, escaped with a backslash in plain text (CommonMark: any escaped ASCII punctuation
# is that character); '_' only where it can open or close emphasis (not inside leakage_bits)
_MD_ACTIVE = re.compile(r"[\\`*\[\]<>|&~#]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# CommonMark's backslash-escapable characters (ASCII punctuation)
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
#: table cells longer than this are cut in report.md / report.html (the CSV keeps the whole value)
MAX_CELL_CHARS = 200


def escape_text(value, markup, *, keep_lines=False, max_chars=None):
    """``value`` as plain text in ``markup`` (``"markdown"`` or ``"html"``): the report writer's one escaping function.

    Everything data-derived that a report shows as plain text (titles, headings,
    table headers and cells, captions) goes through here. Control characters,
    bidirectional overrides and the other characters of ``_HIDDEN`` are shown as
    Python escapes (``keep_lines=True`` keeps line breaks and tabs, for markdown
    paragraphs); a value longer than ``max_chars`` is cut and says how long it
    was; then markdown's inline syntax (``|``, backticks, ``*``, ``[``, ``<``,
    ``&`` ...) is escaped with a backslash, or HTML's with entities, so the text
    can neither break a table nor add markup.
    """
    text = str(value)
    if max_chars is not None and len(text) > max_chars:
        text = f"{text[:max_chars]}... ({len(text)} characters)"

    def show(m):
        ch = m.group(0)
        if keep_lines and ch in "\n\t":
            return ch
        return ch.encode("unicode_escape").decode("ascii")

    text = _HIDDEN.sub(show, text.replace("\r\n", "\n") if keep_lines else text)
    if markup == "html":
        return html.escape(text, quote=True)
    if markup == "markdown":
        return _break_autolinks(_MD_ACTIVE.sub(lambda m: "\\" + m.group(0), text))
    if markup is None:
        return text
    raise ValueError(f"markup must be 'markdown', 'html' or None, got {markup!r}")


def _code_spans(text):
    """``text`` cut into alternating plain and `code` parts (odd indices are code spans, backticks included) as
    CommonMark pairs them: a run of ``n`` backticks that no backslash escapes opens a span closed by the next run
    of exactly ``n``; a run without such a partner is literal. (Pairing single backticks only left a run of three
    unpaired, so the ``<img onerror>`` after it was raw HTML in report.md.)"""
    parts, pos = [], 0
    runs = [(m.start(), m.end()) for m in re.finditer("`+", text)]
    k = 0
    while k < len(runs):
        start, end = runs[k]
        slashes = len(text[:start]) - len(text[:start].rstrip("\\"))
        if slashes % 2:  # the run's first backtick is escaped (a literal backtick)
            start += 1
        n = end - start
        close = next((j for j in range(k + 1, len(runs)) if runs[j][1] - runs[j][0] == n), None) if n else None
        if close is None:
            k += 1
            continue
        parts += [text[pos:start], text[start:runs[close][1]]]
        pos, k = runs[close][1], close + 1
    return parts + [text[pos:]]


def _md_text(text):
    """A report paragraph (:meth:`Report.text`) as markdown that CommonMark and GitHub read as report.html shows it.

    The blocks are :func:`markdown_to_html`'s (paragraphs, ``-`` lists, rules), written out by this function, so
    data-derived text cannot start another block: each line's leading spaces are dropped and a start that could
    open one (a heading, quote, list item, fence, HTML block, setext underline, table delimiter row, footnote) is
    escaped (:func:`_md_line`); inside a line only `code` spans, emphasis and links :func:`_safe_href` accepts stay
    markup (:func:`_md_inline`)."""
    out = []
    for kind, body in _text_blocks(text):
        if kind == "hr":
            out.append("---")
        elif kind == "list":
            out.append("\n".join("- " + _md_inline(_md_line(item)) for item in body))
        else:
            out.append(_md_inline("\n".join(_md_line(ln) for ln in body)))
    return "\n\n".join(out)


def _md_line(line):
    """``line`` without its leading spaces and tabs (CommonMark drops them in a paragraph; four would make the
    first line code), with a start that could open a block escaped: ``#``, ``>``, ``+``, ``-``, ``=`` (heading,
    quote, list item, setext underline), ``<`` (HTML block), ``* `` and ``***`` / ``___`` (list item, rule), a
    backtick or tilde fence, ``1.`` / ``1)``, ``[^`` (a footnote, which GitHub lets interrupt a paragraph) and a
    table delimiter row (``|---|``, ``:-:``: GitHub would split the lines into cells before `code` spans)."""
    line = line.lstrip(" \t")
    if not line:
        return line
    if (line[0] in "#>+-=<"
            or re.match(r"\*(?:[ \t]|$)|(?:\*[ \t]*){3,}$|(?:_[ \t]*){3,}$|`{3,}[^`]*$|~{3,}|\[\^", line)
            or ("-" in line and re.fullmatch(r"[|:][|:\- \t]*", line))):
        return "\\" + line
    m = re.match(r"\d{1,9}(?=[.)](?:[ \t]|$))", line)
    return line[:m.end()] + "\\" + line[m.end():] if m else line


#: a link destination report.md keeps (after :func:`_safe_href`): nothing CommonMark reads as syntax there
_MD_DEST = re.compile(r"[\w.~/%#?=&+,;@!$'*-]+")


def _md_inline(text):
    """One block of report text (lines already through :func:`_md_line`) as markdown whose only inline markup is
    `code` spans (paired as CommonMark pairs them, never across a block), emphasis, and ``[text](dest)`` links to
    a destination :func:`_safe_href` accepts (others reduced to their text). Everything else that is markup is
    escaped: ``<`` (raw HTML, autolinks), ``[`` and ``]``, ``&`` (an entity would be decoded: ``&#64;`` is an
    ``@``), a backtick run without a partner, and GitHub's autolinks are broken (:func:`_break_autolinks`)."""
    runs = [(m.start(), m.end()) for m in re.finditer("`+", text)]
    return _md_scan(text, 0, len(text), runs)


def _md_code_end(text, i, end, runs):
    """For the backtick run starting at ``i``: ``(end of the run, end of its code span or None)``. A run right
    after an escaped backtick is left unpaired (renderers differ there; unpaired is always safe)."""
    j = i
    while j < end and text[j] == "`":
        j += 1
    if i and text[i - 1] == "`":
        return j, None
    close = next((b for a, b in runs if a >= j and b <= end and b - a == j - i), None)
    return j, close


def _md_scan(text, i, end, runs):
    out, plain = [], []

    def flush():
        out.append(_md_plain("".join(plain), after=out[-1][-1:] if out else ""))
        plain.clear()

    while i < end:
        c = text[i]
        if c == "\\" and i + 1 < end and text[i + 1] in _PUNCT:
            pair = text[i:i + 2]
            flush()
            out.append(pair + ("\u2060" if pair == "\\@" and text[i + 2:i + 3] != "\u2060" else ""))
            i += 2
        elif c == "`":
            j, close = _md_code_end(text, i, end, runs)
            flush()
            out.append(text[i:close] if close else "\\`" * (j - i))
            i = close or j
        elif c == "[" and (link := _md_link(text, i, end, runs)) is not None:
            if plain and plain[-1] == "!":  # '![' would make it an image
                plain[-1] = "\\!"
            flush()
            out.append(link[0])
            i = link[1]
        else:
            plain.append(c)
            i += 1
    flush()
    return "".join(out)


def _md_link(text, i, end, runs):
    """``[text](dest)`` at ``i`` as CommonMark reads it (`code` spans in the text, the destination taken raw, up
    to ``)``): ``(markdown, end)`` with a canonical link, or its text alone if :func:`_safe_href` refuses the
    destination; None if there is no such link (then the ``[`` is escaped)."""
    j = i + 1
    while j < end:
        c = text[j]
        if c == "\\" and j + 1 < end and text[j + 1] in _PUNCT:
            j += 2
        elif c == "`":
            k, close = _md_code_end(text, j, end, runs)
            j = close or k
        elif c == "[":
            return None
        elif c == "]":
            break
        else:
            j += 1
    else:
        return None
    m = re.compile(r"\(([^)\s]*)\)").match(text, j + 1, end)
    if m is None:
        return None
    label, dest = _md_scan(text, i + 1, j, runs), m.group(1)
    if dest and _safe_href(dest) and _MD_DEST.fullmatch(dest):
        return f"[{label}]({dest})", m.end()
    return label, m.end()


def _md_plain(part, after=""):
    """Text between `code` spans and links in report.md (``after`` the character written before it): raw HTML,
    brackets and entities escaped, autolinks broken."""
    return _break_autolinks(re.sub(r"[<\[\]&]", r"\\\g<0>", part), after)


def _break_autolinks(text, after=""):
    """Markdown ``text`` (written ``after`` a character) in which GitHub finds no autolink: a scheme's ``:``
    (``https:``, ``mailto:``), the ``.`` of ``www.`` and the first ``/`` of a ``//`` that follows no scheme
    escaped (they render as themselves), and a word joiner (U+2060, invisible) after each ``@``, which no escape
    breaks (GitHub links ``a\\@b.example`` and ``a&#64;b.example`` too). report.html shows none of them."""
    text = re.sub(r"(?<=[\w.+-]):(?=\S)", r"\\:", text)  # a scheme's ':' (http, mailto...); none is escaped here
    text = re.sub(r"(?i)(www)\.", r"\1\\.", text)
    # '//host' (a scheme-relative link to some renderers), unless it follows a scheme's ':' (or '/')
    text = re.sub(r"(?<![:/])/(?=/)", lambda m: "/" if m.start() == 0 and after in (":", "/") else "\\/", text)
    return re.sub("@(?!\u2060)", "@\u2060", text)


def inline_code(value):
    """``value`` as one markdown `code` span (for a path or a parameter inside report text): on one line, with
    controls and line breaks shown as escapes (:func:`escape_text`), and fenced by more backticks than any run it
    holds, padded with a space where it starts or ends with a backtick or a space, as CommonMark reads a span."""
    text = escape_text(value, None)
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    if not text.strip(" "):  # CommonMark keeps a span of spaces as it is (and has no empty span)
        return f"`{text or ' '}`"
    pad = " " if text[0] == "`" or text[-1] == "`" or text[0] == text[-1] == " " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_table(df, max_rows=60):
    """Render a DataFrame as a GitHub-flavoured markdown table (no extra dependency; cells escaped).

    Parameters
    ----------
    df : pandas.DataFrame
        The table (a non-default index is dropped).
    max_rows : int, default=60
        Rows shown; a note counts the others ("more rows in the CSV").

    Returns
    -------
    str
    """
    df = df.reset_index(drop=True) if not isinstance(df.index, pd.RangeIndex) else df
    cols = [escape_text(c, "markdown", max_chars=MAX_CELL_CHARS) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.head(max_rows).itertuples(index=False):
        lines.append("| " + " | ".join(escape_text(_fmt(v), "markdown", max_chars=MAX_CELL_CHARS)
                                       for v in row) + " |")
    if len(df) > max_rows:
        lines.append(f"\n*({len(df) - max_rows} more rows in the CSV)*")
    return "\n".join(lines)


def html_table(df, max_rows=60):
    """Render a DataFrame as an HTML ``<table>`` (every cell escaped)."""
    df = df.reset_index(drop=True) if not isinstance(df.index, pd.RangeIndex) else df
    def esc(v):
        return escape_text(v, "html", max_chars=MAX_CELL_CHARS)

    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(f"<td>{esc(_fmt(v))}</td>" for v in row) + "</tr>\n"
                   for row in df.head(max_rows).itertuples(index=False))
    more = f"<p><em>({len(df) - max_rows} more rows in the CSV)</em></p>\n" if len(df) > max_rows else ""
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n{more}"


# ---------------------------------------------------------------- markdown text -> HTML (the subset reports use)
_INLINE = [  # applied to escaped text, after `code` spans are set aside
    (re.compile(r"\*\*([^*]+)\*\*"), lambda m: f"<strong>{m.group(1)}</strong>"),
    (re.compile(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])"), lambda m: f"<em>{m.group(1)}</em>"),
]
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def _safe_href(url):
    """Links stay relative to the report folder: sub-reports point at their HTML page; others are dropped."""
    url = html.unescape(url)
    # a browser drops leading controls and spaces and reads a backslash as '/': '\x01javascript:' is a script
    # link. A relative link needs none of them, nor a ':' (a scheme); '.%2e' is a '..' segment to a browser
    decoded = urllib.parse.unquote(url)
    if any(not u.isprintable() or any(c.isspace() for c in u) or "\\" in u or ":" in u or u.startswith("/")
           or ".." in u.split("/") for u in (url, decoded)):
        return None
    if url.endswith("report.md"):
        url = url[: -len("report.md")] + "report.html"
    return html.escape(url, quote=True)


def _inline(text):
    """Escape ``text`` and render `code`, **bold**, *italic* and [links](relative) inside it."""
    # controls shown as escapes first: a NUL of the text would collide with the place-holders of `code` spans
    parts = _code_spans(escape_text(text, None, keep_lines=True))
    codes = []
    # a backslash-escaped punctuation mark (markdown's escape, as escape_text(..., "markdown") writes data-derived
    # text) is that character, and starts no markup: kept aside like the code spans
    literal = []

    def keep_literal(m):
        literal.append(m.group(1))
        return f"\x01{len(literal) - 1}\x01"

    out = ""
    for i, part in enumerate(parts):
        if i % 2:
            fence = len(part) - len(part.lstrip("`"))
            code = part[fence:-fence].replace("\n", " ")
            if code.startswith(" ") and code.endswith(" ") and code.strip(" "):  # CommonMark's padding
                code = code[1:-1]
            codes.append(html.escape(code, quote=False))
            out += f"\x00{len(codes) - 1}\x00"
        else:
            # the word joiner report.md puts after '@' (_break_autolinks) is not shown here
            part = part.replace("@\u2060", "@")
            out += html.escape(re.sub(r"\\([!-/:-@\[-`{-~])", keep_literal, part), quote=False)
    for pattern, repl in _INLINE:
        out = pattern.sub(repl, out)

    def link(m):
        href = _safe_href(m.group(2))
        return f'<a href="{href}">{m.group(1)}</a>' if href else m.group(1)

    out = _LINK.sub(link, out)
    out = re.sub("\x01(\\d+)\x01", lambda m: html.escape(literal[int(m.group(1))], quote=False), out)
    return re.sub("\x00(\\d+)\x00", lambda m: f"<code>{codes[int(m.group(1))]}</code>", out)


def _text_blocks(text):
    """The blocks of a report paragraph as report.html and report.md both show them: ``("hr", None)``,
    ``("list", items)`` (every line starts with ``- `` or ``* ``) and ``("paragraph", lines)`` (``---`` lines
    inside one are dropped; a first one is a rule before it). A line starting with ``#`` is text: a report's
    headings are its sections, and data-derived text adds none."""
    # controls (NUL would also collide with _inline's place-holders) and bidi overrides shown as escapes
    text = escape_text(text, None, keep_lines=True)
    blocks = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.splitlines()
        if not lines:
            continue
        if all(ln.strip() == "---" for ln in lines):
            blocks.append(("hr", None))
        elif all(ln.lstrip().startswith(("- ", "* ")) for ln in lines):
            blocks.append(("list", [ln.lstrip()[2:] for ln in lines]))
        else:
            if lines[0].strip() == "---":
                blocks.append(("hr", None))
            blocks.append(("paragraph", [ln for ln in lines if ln.strip() != "---"]))
    return blocks


def markdown_to_html(text):
    """The markdown subset of report paragraphs (paragraphs, ``-`` lists, rules) as HTML."""
    html_blocks = []
    for kind, body in _text_blocks(text):
        if kind == "hr":
            html_blocks.append("<hr>")
        elif kind == "list":
            html_blocks.append("<ul>" + "".join(f"<li>{_inline(item)}</li>" for item in body) + "</ul>")
        else:
            html_blocks.append("<p>" + _inline("\n".join(body)) + "</p>")
    return "\n".join(html_blocks) + "\n"


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 60rem; margin: 2rem auto;
       padding: 0 1rem; line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
th { background: #f3f3f3; }
img { max-width: 100%; }
code { background: #f3f3f3; padding: 0 0.2rem; }
figure { margin: 1rem 0; }
figcaption, .file { color: #555; font-size: 0.85rem; }
"""


# ---------------------------------------------------------------- the output folder
def _refuse_empty(output_dir):
    if output_dir is None or not str(output_dir).strip():
        raise OutputFolderError(
            f"output folder {str(output_dir) if output_dir is not None else None!r} is empty: expected the path of "
            "a folder (use -o . to write into the current folder on purpose)")


def _without_dot_dot(path):
    """``path`` with its ``.`` and ``name/..`` parts removed, before anything is created.

    ``mkdir -p`` of ``out/a/../../b`` created ``out/a`` (and every other named folder) on the way, outside the
    folder the path names. Removing ``name/..`` by the text alone is what the file system does when ``name`` is a
    real folder or does not exist yet (it would be created as one); through a symbolic link ``..`` is the
    parent of the link's target, so a link followed by ``..`` is refused, like a link as the output folder.
    """
    parts = []
    for part in path.parts:
        if part != "..":
            parts.append(part)
        elif not parts or parts[-1] == "..":
            parts.append(part)  # above the current folder, which exists
        elif parts == [path.anchor]:
            continue  # '/..' is '/'
        else:
            prefix = Path(*parts)
            if prefix.is_symlink():
                raise OutputFolderError(
                    f"output folder {str(path)!r} goes up ('..') out of the symbolic link {str(prefix)!r} (to "
                    f"{os.readlink(prefix)!r}): expected a path without '..' after a link")
            if os.path.lexists(prefix) and not prefix.is_dir():
                raise OutputFolderError(f"cannot create output folder {str(path)!r}: a part of that path is a "
                                        f"file, not a folder ({str(prefix)!r})")
            parts.pop()
    return Path(*parts) if parts else Path(".")


def _make_folders(path):
    """``mkdir -p`` that checks each folder it creates is a real folder (not swapped for a link)."""
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass  # created concurrently: checked below like ours
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            raise OutputFolderError(f"output folder component {str(folder)!r} that privrelease created is no longer "
                                    "a folder (replaced by a link or a file); refusing to write")
    if not path.is_dir():
        raise NotADirectoryError(str(path))


def prepare_output_folder(output_dir, *, overwrite=False):
    """Create (if needed) and check a report folder; return it as a :class:`~pathlib.Path`.

    Parameters
    ----------
    output_dir : str or Path
        The folder (a leading ``~`` names a home folder, as in a shell).
        Refused: an empty string, the root of the file system or the
        home folder, a symbolic link, a path naming a
        file or passing through one, a folder the process cannot write into, and
        (unless ``overwrite``) a folder that already holds ``report.md`` or
        ``report.html``, or any other file (sub-folders are allowed): what a
        failed run left behind is refused before the next run starts, not at
        the first file it would replace.
    overwrite : bool, default=False
        Allow replacing an earlier report (when the new one is saved; its files
        that the new one does not write are removed, other files are kept;
        symbolic links are still refused).

    Raises
    ------
    OutputFolderError
        With the folder and the reason.
    """
    return _prepare_output_folder(output_dir, overwrite, create=True)


def _prepare_output_folder(output_dir, overwrite, create):
    """:func:`prepare_output_folder`; ``create=False`` (a :class:`Report`): a missing folder is checked, not
    created (see :func:`_prepare`)."""
    _refuse_empty(output_dir)
    if "\x00" in str(output_dir):
        raise OutputFolderError(f"output folder {str(output_dir)!r} holds a NUL character: expected a path")
    # '~' and '~user' name a home folder, as in the data file parameters (File, Folder): the shell leaves
    # '--output=~/reports/x' and a quoted '-o "~/x"' alone, and a folder literally named '~' was created in the
    # current folder (and '--output=~' was not refused as the home folder)
    output_dir = os.path.expanduser(os.fspath(output_dir)) if isinstance(output_dir, (str, os.PathLike)) \
        else output_dir
    try:
        folder = _without_dot_dot(Path(output_dir))
        try:
            return _prepare(folder, overwrite, create)
        except OutputFolderError as exc:
            if str(folder) == str(output_dir):
                raise
            # the messages quote the folder without its '.' and 'name/..' parts: name what the user wrote too
            raise OutputFolderError(f"{exc} (the folder {str(output_dir)!r} names)") from None
    except OutputFolderError:
        raise
    except OSError as exc:  # a name too long for the file system, an unreadable parent ...
        raise OutputFolderError(f"cannot use the output folder ({exc.strerror or exc}): {str(output_dir)!r}; "
                                "expected a folder path the file system accepts") from None


def _check_creatable(path):
    """Refuse a missing folder ``path`` that could not be created: its nearest existing parent is a file, or a
    folder where no folder can be created (tried with a hidden folder, removed at once; ``path`` itself is
    created only when the first file is written)."""
    parent = path.parent
    while not os.path.lexists(parent) and parent.parent != parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputFolderError(
            f"cannot create output folder {str(path)!r}: a part of that path is a file, not a folder")
    # a folder is created there for a moment: os.access said yes for root under /proc (and on read-only or full
    # file systems), the whole experiment ran, and then the folder could not be created
    probe = parent / f"{_STAGING_PREFIX}probe-{secrets.token_hex(8)}"
    try:
        os.mkdir(probe, 0o700)
    except PermissionError:
        raise OutputFolderError(
            f"cannot create output folder {str(path)!r}: permission denied (expected a writable location)") from None
    except OSError as exc:
        raise OutputFolderError(f"cannot create output folder {str(path)!r}: {exc.strerror or exc} (in "
                                f"{str(parent)!r}; expected a location where a folder can be created)") from None
    finally:  # removed however this ends (a Ctrl-C just after the mkdir left it behind)
        try:
            os.rmdir(probe)
        except OSError:
            pass


def _prepare(path, overwrite, create=True):
    real = Path(os.path.realpath(path))
    try:
        home = Path(os.path.realpath(Path.home()))
    except (RuntimeError, KeyError, OSError):  # no HOME and no password entry
        home = None
    if real == Path(real.anchor) or real == home:
        # '-o "$OUT/"' with OUT unset, or '-o ~ /reports': a report's ~30 files landed beside the system's or the
        # user's own files (none replaced, but never cleaned up)
        where = "the root of the file system" if real == Path(real.anchor) else "your home folder"
        raise OutputFolderError(
            f"output folder {str(path)!r} is {where}: a report writes its tables, plots and pages into the folder "
            "itself; expected a folder of its own (for example reports/<name>)")
    if path.is_symlink():
        raise OutputFolderError(
            f"output folder {str(path)!r} is a symbolic link (to {os.readlink(path)!r}); reports are only "
            "written into a real folder: give the folder it points to, or another one")
    if path.exists() and not path.is_dir():
        raise OutputFolderError(f"output folder {str(path)!r} is a file, not a folder: expected a folder path")
    if not create and not os.path.lexists(path):
        _check_creatable(path)
        return path
    try:
        _make_folders(path)
    except (FileExistsError, NotADirectoryError):
        raise OutputFolderError(
            f"cannot create output folder {str(path)!r}: a part of that path is a file, not a folder") from None
    except PermissionError:
        raise OutputFolderError(
            f"cannot create output folder {str(path)!r}: permission denied (expected a writable location)"
        ) from None
    except OSError as exc:
        raise OutputFolderError(f"cannot create output folder {str(path)!r}: {exc.strerror or exc}") from None
    if path.is_symlink():  # replaced between the checks
        raise OutputFolderError(f"output folder {str(path)!r} became a symbolic link; refusing to write")
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputFolderError(f"output folder {str(path)!r} is not writable: expected a folder you can write to")
    with os.scandir(path) as entries:
        links = sorted(e.name for e in entries if e.is_symlink())
    if links:
        raise OutputFolderError(
            f"output folder {str(path)!r} holds symbolic link(s) {links[:5]}: a report never writes through a "
            "link; remove them or choose another folder")
    if not overwrite:
        for name in REPORT_FILES:
            if os.path.lexists(path / name):
                raise OutputFolderError(
                    f"output folder {str(path)!r} holds an earlier report ({name}): pass --overwrite to replace "
                    "it, or choose another folder")
        with os.scandir(path) as entries:
            files = sorted(e.name for e in entries if not e.is_dir(follow_symlinks=False))
        if files:
            # a failed run left its tables and plots (no report.md): rerunning into the folder redid all the
            # work, then stopped at the first file it would have replaced
            shown = ", ".join(repr(f) for f in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
            raise OutputFolderError(
                f"output folder {str(path)!r} is not empty: it holds {len(files)} file(s) ({shown}), for "
                "example left by an earlier run that failed; pass --overwrite to write into it anyway (files "
                "of the names the report writes are replaced), or choose another folder")
    return path


def _file_digest(folder, name):
    """SHA-256 of the regular file ``name`` of ``folder`` (links followed: an input reached through one), or None."""
    h = hashlib.sha256()
    try:
        with open(os.path.join(folder, name), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def _read_manifest(fd):
    """``{name: SHA-256}`` of the files the report last saved in the folder wrote (plain names only).

    The manifest is a file in the user's folder, so it is not trusted: an entry only says which content
    the report wrote under a name, and :meth:`_Folder._remove` removes a file only if it still holds exactly that
    content (a manifest copied with a report, or edited, cannot make a run remove the user's own file).
    """
    fh = _open_regular(MANIFEST, fd)
    if fh is None:
        return {}
    try:
        with fh:
            listed = json.loads(fh.read(_MAX_MANIFEST_BYTES).decode("utf-8")).get("files", {})
    except (OSError, ValueError, AttributeError, RecursionError):  # a manifest nested 200,000 deep
        return {}
    if not isinstance(listed, dict):
        return {}
    return {n: d for n, d in listed.items()
            if isinstance(n, str) and n and "/" not in n and n not in (".", "..")
            and "\x00" not in n and os.sep not in n and not (os.altsep and os.altsep in n)
            and n != MANIFEST and not n.startswith(_STAGING_PREFIX)
            and isinstance(d, str) and re.fullmatch(r"[0-9a-f]{64}", d)}


class _Folder:
    """Writes plain file names into one folder without ever following a symbolic link.

    Every file of a run is first written into a hidden staging folder inside the output folder
    (``.privrelease-run-<random>``, the same file system) and moved into place by :meth:`commit`, so the
    folder holds one run at a time: a run that stops before :meth:`commit` (Ctrl-C, an exception) leaves the
    earlier report and its files as they were, and a report never names a file of another run. :meth:`commit`
    also removes the files of the earlier report that the new one does not write, as listed in the
    :data:`MANIFEST` it wrote; a file no report wrote is never removed.
    """

    def __init__(self, path, overwrite=False):
        self.path = Path(path)
        st = os.lstat(self.path)
        self._id = (st.st_dev, st.st_ino)
        self._fd = None
        self.overwrite = bool(overwrite)
        self._written = set()  # names written by this report (checked against the output folder)
        self._committed = set()  # names this report has moved into the output folder
        self._stage = None  # (name, fd) of the staging folder, created at the first write
        self._staged = []  # names in the staging folder, in the order first written
        self._digests = {}  # name -> SHA-256 of the content this report wrote under it (the manifest's entries)

    def _dir_fd(self):
        if self._fd is None:
            try:
                fd = os.open(self.path, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
            except OSError as exc:
                raise OutputFolderError(
                    f"cannot open output folder {str(self.path)!r} without following a link: "
                    f"{exc.strerror or exc}") from None
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self._id:
                os.close(fd)
                raise OutputFolderError(f"output folder {str(self.path)!r} was replaced while the report was "
                                        "being written; refusing to write")
            self._fd = fd
        return self._fd

    def _stage_fd(self):
        """The staging folder's descriptor (created inside the output folder, mode 0700, at the first write)."""
        if self._stage is None:
            fd = self._dir_fd()
            name = f"{_STAGING_PREFIX}{secrets.token_hex(8)}"
            try:
                import fcntl
            except ImportError:  # pragma: no cover - no flock here: stale folders are then kept
                fcntl = None
            # created and locked under the output folder's lock, which a save holds while it sweeps: a save
            # in between could take this new, empty folder for a killed run's (see _sweep_stale)
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                    sfd = os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    raise OutputFolderError(f"cannot write into output folder {str(self.path)!r}: "
                                            f"{exc.strerror or exc}") from None
                if fcntl is not None:  # held while this run lives: a staging folder nobody holds is a killed run's
                    try:
                        fcntl.flock(sfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:  # pragma: no cover - a file system without flock: stale folders are kept
                        pass
            finally:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            self._stage = (name, sfd)
        return self._stage[1]

    def _sweep_stale(self, fd):
        """Remove the staging folders of runs that were killed before they saved (SIGKILL, a power cut).

        Each run holds a lock on its own staging folder while it lives (the kernel drops it when the process
        ends); a staging folder whose lock can be taken belongs to no live run. Only its regular files are
        removed, never through a link, and the folder only when that empties it; one a live run holds is left.
        Called by :meth:`commit` under the output folder's lock."""
        import fcntl

        own = self._stage[0] if self._stage is not None else None
        for name in os.listdir(fd):
            if not name.startswith(_STAGING_PREFIX) or name == own:
                continue
            try:
                sfd = os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK, dir_fd=fd)
            except OSError:
                continue  # not a folder, or a link: not a staging folder this code made
            try:
                try:
                    fcntl.flock(sfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # a live run's
                for staged in os.listdir(sfd):
                    try:
                        if stat.S_ISREG(os.stat(staged, dir_fd=sfd, follow_symlinks=False).st_mode):
                            os.unlink(staged, dir_fd=sfd)
                    except OSError:
                        pass
                try:
                    os.rmdir(name, dir_fd=fd)
                except OSError:
                    pass
            finally:
                os.close(sfd)

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def discard(self):
        """Remove the staging folder and what it holds (a run that will not be saved); the output folder's
        files are left as they were."""
        if self._stage is not None:
            name, sfd = self._stage
            self._stage = None
            for staged in os.listdir(sfd):
                try:
                    os.unlink(staged, dir_fd=sfd)
                except OSError:
                    pass
            os.close(sfd)
            try:
                os.rmdir(name, dir_fd=self._dir_fd())
            except OSError:
                pass
        self._staged = []
        self.close()

    def __del__(self):
        try:
            self.discard()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def _check_target(self, name, target, fd):
        """``(exists)`` for the output folder's ``name``: a symbolic link or anything but a regular file there is
        refused."""
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(st.st_mode):
            raise OutputFolderError(
                f"refusing to write {str(target)!r}: it is a symbolic link (to "
                f"{os.readlink(name, dir_fd=fd)!r}); a report never writes through a link")
        if not stat.S_ISREG(st.st_mode):
            raise OutputFolderError(f"refusing to write {str(target)!r}: it exists and is not a regular file")
        return True

    def write(self, name, data):
        """Write ``data`` (bytes) as ``name`` of the run (into the staging folder until :meth:`commit`); return
        the path the file will have in the output folder."""
        check_file_name(name, self.path)
        target = self.path / name
        if not _HAVE_DIR_FD:  # pragma: no cover - platforms without dir_fd (Windows)
            return self._write_by_path(target, data)
        # what is refused in the output folder is refused now, not after the run (checked again by commit)
        self._check_replace(name, target, self._check_target(name, target, self._dir_fd()))
        self._atomic_write(self._stage_fd(), name, data, repr(str(target)))
        self._digests[name] = hashlib.sha256(data).hexdigest()
        if name not in self._staged:
            self._staged.append(name)
        return target

    def _read_manifest(self, fd):
        """``{name: SHA-256}`` of the files the report last saved in the folder wrote (see :func:`_read_manifest`)."""
        return _read_manifest(fd)

    def _write_manifest(self, files, fd):
        text = json.dumps({"written_by": "privrelease", "files": dict(sorted(files.items()))}, indent=1)
        # a folder named like the manifest: IsADirectoryError, said as an OutputFolderError
        self._atomic_write(fd, MANIFEST, text.encode("utf-8"),
                           f"{str(self.path / MANIFEST)!r} (the report's list of its files)")

    def _atomic_write(self, fd, name, data, shown):
        """Write ``data`` to a fresh temporary file in the folder ``fd`` and rename it to ``name`` (an
        OutputFolderError naming ``shown`` when the file system refuses)."""
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        try:
            tfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o644, dir_fd=fd)
        except OSError as exc:
            raise OutputFolderError(f"cannot write into output folder {str(self.path)!r}: "
                                    f"{exc.strerror or exc}") from None
        try:
            with os.fdopen(tfd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException as exc:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise OutputFolderError(f"cannot write {shown}: {exc.strerror or exc}") from None
            raise

    def _remove(self, name, fd, digest):
        """Remove the regular file ``name`` of the earlier report if it still holds the content that report wrote
        (SHA-256 ``digest``; None: whatever it holds, for a page this run replaces); a link, a folder or a file
        of other content is left."""
        fh = _open_regular(name, fd)
        if fh is None:
            return
        try:
            with fh:
                h = hashlib.sha256()
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            return
        if digest is None or h.hexdigest() == digest:
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                pass

    def commit(self):
        """Move the run's files into the output folder, the report pages last, and remove the earlier report's
        files that this one does not write.

        Order: every target is checked first; the manifest then lists the earlier report's files and the new
        ones; the earlier report's pages go, then its files this run does not write; the run's files are moved
        in, ``report.html`` and ``report.md`` last; the manifest then lists the new report's files alone. Stopped
        at any point, the folder holds no report page naming a file of another run, and the manifest lists
        every file a report wrote there.
        """
        if not _HAVE_DIR_FD:  # pragma: no cover - files were written in place
            return
        import fcntl

        fd = self._dir_fd()
        # one save at a time in a folder (two concurrent saves left one run's page beside the other's tables), and
        # no Ctrl-C between removing the earlier report's files and moving the new ones in
        with _Deferred():
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                self._commit(fd)
                self._sweep_stale(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        self.discard()

    def _commit(self, fd):
        sfd = self._stage_fd() if self._staged else None
        names = list(self._staged)
        pages = [n for n in REPORT_FILES if n in names]
        moving = [n for n in names if n not in pages] + pages
        for name in moving:
            exists = self._check_target(name, self.path / name, fd)
            if exists and not self.overwrite and name not in self._committed:
                raise OutputFolderError(
                    f"refusing to replace {str(self.path / name)!r}: a file of that name appeared in the output "
                    "folder while the report was being written; pass --overwrite (overwrite=True) to replace it, "
                    "or choose another folder")
        earlier = self._read_manifest(fd) if (self.overwrite or self._committed) else {}
        self._write_manifest({**earlier, **{n: self._digests[n] for n in names}}, fd)
        for name in REPORT_FILES:  # no earlier page stays beside the new run's files
            if self.overwrite and name in pages:
                self._remove(name, fd, None)  # replaced by this run's page below in any case
            elif name in earlier:
                self._remove(name, fd, earlier[name])
        keep = set(names) | self._committed  # a second save of one report keeps the first save's files
        for name, digest in earlier.items():
            if name not in keep:
                self._remove(name, fd, digest)
        for name in moving:
            target = self.path / name
            try:
                if self.overwrite or name in self._committed:
                    os.replace(name, name, src_dir_fd=sfd, dst_dir_fd=fd)
                else:
                    self._link_new(name, name, target, sfd, fd)
            except OSError as exc:
                raise OutputFolderError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
            self._committed.add(name)
        self._staged = []
        self._write_manifest({n: self._digests[n] for n in self._committed}, fd)

    def _link_new(self, src, name, target, sfd, fd):
        """Give the staged ``src`` the name ``name`` only if nothing holds it yet (a hard link fails when the
        name exists): a file created under that name after the check above (another program writing into the
        folder) was silently replaced by ``os.replace``. A file system without hard links falls back to it."""
        try:
            os.link(src, name, src_dir_fd=sfd, dst_dir_fd=fd, follow_symlinks=False)
        except FileExistsError:
            raise OutputFolderError(
                f"refusing to replace {str(target)!r}: a file of that name appeared in the output folder while "
                "the report was being written; pass --overwrite (overwrite=True) to replace it, or choose "
                "another folder") from None
        except OSError:  # pragma: no cover - no hard links here (some network or FAT file systems)
            os.replace(src, name, src_dir_fd=sfd, dst_dir_fd=fd)
            return
        os.unlink(src, dir_fd=sfd)

    def _write_by_path(self, target, data):  # pragma: no cover - platforms without dir_fd
        if target.is_symlink():
            raise OutputFolderError(f"refusing to write {str(target)!r}: it is a symbolic link")
        self._check_replace(target.name, target, target.exists())
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
        return target

    def _check_replace(self, name, target, exists):
        """Without ``overwrite`` a file this writer did not write is never replaced (``-o`` naming a folder of
        the user's own files: a ``headline.json`` or ``curve.csv`` of theirs was silently replaced)."""
        if exists and not self.overwrite and name not in self._written:
            raise OutputFolderError(
                f"refusing to replace {str(target)!r}: the output folder already holds a file of that name that "
                "this report did not write; pass --overwrite (overwrite=True) to replace it, or choose another "
                "folder")
        self._written.add(name)


def _as_table(df, method):
    """``df`` as the DataFrame a report shows and saves: a Series as its one column; anything else refused here
    (a Series written under a shown table's name took the table's place and every later markdown, HTML page and
    save failed on it)."""
    if isinstance(df, pd.Series):
        return df.to_frame()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"Report.{method} takes a pandas DataFrame (or Series), got {type(df).__name__}")
    return df


class Report:
    """Collects the sections of one report and writes them to a folder.

    Parameters
    ----------
    output_dir : str or Path
        Checked at once (see :func:`prepare_output_folder` for what is
        refused); created if missing when the first file is written (a
        refused file name leaves nothing behind). Files: ``report.md``, ``report.html`` (one self-contained page:
        plots inline as base64 PNG, tables as HTML tables), ``<name>.csv``,
        ``<name>.png``, ``<name>.json``.
    title : str
        First heading of the report.
    overwrite : bool, default=False
        Allow writing into a folder that holds an earlier report, and replacing
        files of the names the report writes (without it such a file, if the
        report did not write it, is refused with :class:`OutputFolderError`).

    Examples
    --------
    >>> import shutil, tempfile, pandas as pd
    >>> from privrelease.runner import Report
    >>> folder = tempfile.mkdtemp()
    >>> rep = Report(folder, title="demo")
    >>> rep.section("Numbers")
    >>> rep.table(pd.DataFrame({"delta": [0.0, 1.0], "leakage": [0.1, 0.0]}), "curve").name
    'curve.csv'
    >>> rep.save().name
    'report.md'
    >>> shutil.rmtree(folder)
    """

    def __init__(self, output_dir, title="privrelease report", *, overwrite=False):
        self.output_dir = _prepare_output_folder(output_dir, overwrite, create=False)
        self._overwrite = overwrite
        self._folder = None
        if os.path.lexists(self.output_dir):  # checked whole above
            self._folder = _Folder(self.output_dir, overwrite=overwrite)
        self.title = title
        self._parts = []
        self.files = []
        self._created = []  # the folders _open_folder created (the deepest first)
        # realpath (and (device, inode)) -> (parameter, value) of the run's input files and folders (_guard_inputs)
        self._inputs, self._input_files = {}, {}

    def _open_folder(self):
        """The output folder's writer; a missing folder is created now (checked again, as at construction)."""
        if self._folder is None:
            missing, p = [], Path(self.output_dir)
            while not os.path.lexists(p) and p.parent != p:
                missing.append(p)
                p = p.parent
            self.output_dir = prepare_output_folder(self.output_dir, overwrite=self._overwrite)
            # removed again by discard() if the run leaves them empty (absolute: a chdir between removed others)
            self._created = [Path(os.path.abspath(m)) for m in missing]
            self._folder = _Folder(self.output_dir, overwrite=self._overwrite)
        return self._folder

    def _guard_inputs(self, inputs):
        """Refuse (:class:`PipelineError`) a run whose report would write over one of its own input files.

        ``inputs``: ``{parameter: path}`` of the run's data files and folders. Checked now: an input folder that
        is the output folder, and an input file (links followed) that is a report page, the manifest or a file
        of the earlier report (which saving removes); each file the run writes is checked again by :meth:`_write`
        before it is staged (``--overwrite`` replaced a ratings file by the report's table of that name).
        """
        self._inputs, self._input_files = {}, {}
        for param, value in (inputs or {}).items():
            real = os.path.realpath(os.path.expanduser(value))
            self._inputs[real] = (param, value)
            try:  # by identity too: on a case-insensitive file system 'DATA.json' is the 'data.json' written
                st = os.stat(real)
                self._input_files[(st.st_dev, st.st_ino)] = (param, value)
            except OSError:
                pass
        if not self._inputs or not os.path.isdir(self.output_dir):
            return
        real = os.path.realpath(self.output_dir)
        if real in self._inputs:
            param, value = self._inputs[real]
            raise PipelineError(
                f"parameter {param} = {value!r} is the output folder {str(self.output_dir)!r} itself: the report "
                "writes its files into it and could replace the run's own data; expected another output folder")
        earlier = {}
        if self._overwrite and _HAVE_DIR_FD:  # (elsewhere, Windows: each file is checked as it is written)
            fd = os.open(self.output_dir, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
            try:
                earlier = _read_manifest(fd)
            finally:
                os.close(fd)
        # an earlier report's file is removed by saving only while it holds the content its manifest records (see
        # _Folder._remove): an input of that name that the user has since written is kept, and not refused
        removed = [name for name, digest in sorted(earlier.items()) if _file_digest(self.output_dir, name) == digest]
        for name in (*REPORT_FILES, MANIFEST, *removed):
            self._check_input(name, "is a file of the earlier report, which saving this one replaces or removes"
                              if name in earlier else "is a file every report writes")

    def _check_input(self, name, why="is a file this report writes"):
        """Refuse writing (or removing) ``name`` of the output folder when it is one of the run's input files."""
        target = os.path.realpath(os.path.join(self.output_dir, name))
        clash = self._inputs.get(target)
        if clash is None and getattr(self, "_input_files", None):
            try:
                st = os.stat(target)
                clash = self._input_files.get((st.st_dev, st.st_ino))
            except OSError:
                pass
        if clash is not None:
            param, value = clash
            raise PipelineError(
                f"parameter {param} = {value!r} is {str(Path(self.output_dir) / name)!r}, which {why}: a report "
                "never replaces the run's own input files; expected another output folder (or the input "
                "elsewhere)")

    def _write(self, name, data, unique=True, part=None, frame=None):
        """Stage ``name`` and add its ``part`` (a table or figure shown; None: a file only) to the report;
        ``frame``: the table a CSV file holds.

        ``unique``: a run's table, figure, CSV or JSON file; one written again under a name the run already used
        replaces the first (the report's own file), is warned, and the report shows the new one only, where it
        showed the first (it showed both under the one name, the file holding the second; a replaced part moved
        to the end). A CSV file written under a shown table's name keeps the table, showing what the file now
        holds: both were asked for.
        """
        check_file_name(name, self.output_dir)  # before the folder is created
        self._check_input(name)
        path = self._open_folder().write(name, data)
        if unique and path in self.files:
            warnings.warn(f"the report already had a file named {name!r}: replaced by the new one, which the report "
                          "shows in place of the first; give each table, figure or JSON file its own name to keep "
                          "both", UserWarning, stacklevel=user_stacklevel())
            shown = [i for i, p in enumerate(self._parts) if p[0] in ("table", "figure") and p[3] == name]
            if shown:
                if part is None and frame is not None and self._parts[shown[0]][0] == "table":
                    part = self._parts[shown[0]][:1] + (frame.copy(),) + self._parts[shown[0]][2:]
                if part is not None:
                    self._parts[shown[0]] = part
                    part = None
                self._parts = [p for i, p in enumerate(self._parts) if i not in shown[1:]]
        if part is not None:
            self._parts.append(part)
        if path not in self.files:
            self.files.append(path)
        return path

    def section(self, heading, level=2):
        """Start a section.

        Parameters
        ----------
        heading : str
            Its title.
        level : int, default=2
            Heading level (2: ``##``).
        """
        self._parts.append(("heading", int(level), str(heading)))

    def text(self, text):
        """A paragraph of markdown (paragraphs, ``-`` lists, `code`, **bold**, *italic*, relative links).

        Parameters
        ----------
        text : str
            The markdown (leading and trailing blank space is dropped).
        """
        self._parts.append(("text", str(text).strip()))

    def table(self, df, name, caption=None, max_rows=60):
        """Save ``df`` as ``name.csv`` and show it as a table.

        Parameters
        ----------
        df : pandas.DataFrame or pandas.Series
            The table (a Series: its one column).
        name : str
            File name without the ``.csv`` suffix.
        caption : str, default=None
            Text shown under the table.
        max_rows : int, default=60
            Rows shown in the report (the CSV holds all of them).

        Returns
        -------
        pathlib.Path
            The CSV file.
        """
        fname = f"{name}.csv"
        df = _as_table(df, "table")
        return self._write(fname, df.to_csv(index=False).encode("utf-8"), part=("table", df.copy(), caption,
                                                                                  fname, max_rows))

    def csv(self, df, name):
        """Save ``df`` as ``name.csv`` without showing it (for long tables); return the path.

        Parameters
        ----------
        df : pandas.DataFrame or pandas.Series
            The table (a Series: its one column).
        name : str
            File name without the ``.csv`` suffix.

        Returns
        -------
        pathlib.Path
        """
        df = _as_table(df, "csv")
        return self._write(f"{name}.csv", df.to_csv(index=False).encode("utf-8"), frame=df)

    def figure(self, fig, name, caption=None):
        """Save a matplotlib figure as ``name.png`` and embed it (inline in the HTML page).

        Parameters
        ----------
        fig : matplotlib Figure
            The figure (closed once saved).
        name : str
            File name without the ``.png`` suffix.
        caption : str, default=None
            Text shown under the figure (and its alternative text).

        Returns
        -------
        pathlib.Path
            The PNG file.
        """
        import matplotlib.pyplot as plt

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        png = buf.getvalue()
        fname = f"{name}.png"
        return self._write(fname, png, part=("figure", png, caption, fname))

    def json(self, obj, name):
        """Save ``obj`` (numbers, lists, dicts; numpy values converted) as ``name.json``.

        The file is strict JSON: NaN and infinities are written as ``null`` (as
        pandas' ``to_json`` does; ``json.dumps`` wrote ``NaN``, which JavaScript,
        ``jq`` and most other parsers refuse).

        Parameters
        ----------
        obj : object
            Numbers, strings, lists, tuples, dicts and numpy values (anything else
            raises ``TypeError``).
        name : str
            File name without the ``.json`` suffix.

        Returns
        -------
        pathlib.Path
        """

        def plain(o):
            if isinstance(o, dict):
                return {(k.item() if isinstance(k, np.generic) else k): plain(v) for k, v in o.items()}
            if isinstance(o, (list, tuple)):
                return [plain(v) for v in o]
            if isinstance(o, np.ndarray):
                return plain(o.tolist())
            if isinstance(o, np.generic):
                o = o.item()
            if isinstance(o, float) and not math.isfinite(o):
                return None
            return o

        def default(o):
            raise TypeError(f"cannot serialise {type(o).__name__}")

        text = json.dumps(plain(obj), indent=2, default=default, allow_nan=False)
        return self._write(f"{name}.json", text.encode("utf-8"))

    def markdown(self):
        """The report as markdown (plots linked to their PNG files)."""
        def esc(text):
            return escape_text(text, "markdown")

        out = [f"# {esc(self.title)}\n"]
        for part in self._parts:
            kind = part[0]
            if kind == "heading":
                out.append(f"\n{'#' * part[1]} {esc(part[2])}\n")
            elif kind == "text":
                out.append(f"\n{_md_text(part[1])}\n")
            elif kind == "table":
                _, df, caption, fname, max_rows = part
                if caption:
                    out.append(f"\n{_md_text(caption)}\n")
                out.append("\n" + markdown_table(df, max_rows=max_rows) + f"\n\n({inline_code(fname)})\n")
            elif kind == "figure":
                _, _, caption, fname = part
                # the link percent-encoded: a ')' or a space in a name ended the link early
                out.append(f"\n![{esc(caption or fname[:-4])}]({urllib.parse.quote(fname)})\n")
                if caption:
                    out.append(f"\n*{esc(caption)}*\n")
        return "".join(out)

    def html(self):
        """The report as one self-contained HTML page: plots inline (base64 PNG), text escaped."""
        def esc(text, quote=True):
            return escape_text(text, "html")

        out = ["<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
               f"<title>{esc(self.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n",
               f"<h1>{esc(self.title)}</h1>\n"]
        for part in self._parts:
            kind = part[0]
            if kind == "heading":
                level = min(max(part[1], 1), 6)
                out.append(f"<h{level}>{esc(part[2])}</h{level}>\n")
            elif kind == "text":
                out.append(markdown_to_html(part[1]))
            elif kind == "table":
                _, df, caption, fname, max_rows = part
                if caption:
                    out.append(f"<p>{_inline(caption)}</p>\n")
                out.append(html_table(df, max_rows=max_rows))
                out.append(f"<p class=\"file\">({esc(fname)})</p>\n")
            elif kind == "figure":
                _, png, caption, fname = part
                alt = esc(caption or fname[:-4], quote=True)
                data = base64.b64encode(png).decode("ascii")
                out.append(f"<figure><img alt=\"{alt}\" src=\"data:image/png;base64,{data}\">")
                if caption:
                    out.append(f"<figcaption>{esc(caption)}</figcaption>")
                out.append("</figure>\n")
        out.append("</body>\n</html>\n")
        return "".join(out)

    def save(self):
        """Write ``report.md`` and ``report.html`` and move the run's files into the folder; return the path of
        ``report.md``.

        Until then the files are held in a hidden staging folder inside the output folder: a run that never
        saves (interrupted, failed) leaves the folder's earlier report as it was. Saving removes the files of
        the earlier report (as its hidden manifest ``.privrelease-report.json`` lists them) that this one does
        not write; a file no report wrote is never removed.
        """
        self._write("report.html", self.html().encode("utf-8"), unique=False)
        path = self._write("report.md", self.markdown().encode("utf-8"), unique=False)
        self._folder.commit()
        return path

    def discard(self):
        """Drop what the run wrote so far (its staging folder), leaving the output folder as it was; a folder the
        run created is removed again if nothing else is in it (an interrupted run into a new folder left it
        behind, empty)."""
        if self._folder is not None:
            self._folder.discard()
        for folder in self._created:  # the deepest first; rmdir removes only an empty folder
            try:
                os.rmdir(folder)
            except OSError:
                break
        self._created = []
