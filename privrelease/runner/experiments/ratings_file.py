"""Your own rating file: a private attribute from a users file, curves, attacks, RMSE and BlurMe.

The ratings are read by :func:`~privrelease.datasets.load_ratings_csv` (one
``user, item, rating`` row each: ``path``, ``user_col``, ``item_col``,
``rating_col``, ``sep``, ``header``, ``encoding``, ``timestamp_col``,
``drop_ratings``), the private attribute from a users file read with pandas
(``users_path``, ``users_sep``, ``users_encoding``; a header line naming
``users_id_col`` and the ``attribute`` column(s), or, for a file without one,
``users_columns``: the columns' names in order, as MovieLens's ``u.user``
needs: ``users_columns = ["user", "age", "gender", "occupation", "zip"]``,
``users_sep = "|"``). Ids are matched as
``load_ratings_csv`` returns them: integers when every rating id is a plain
integer (a users id ``"007"`` then matches no user: ``7`` is written ``7``;
``"7.0"``, what pandas writes for an integer column holding a missing value,
matches ``7``), else strings, leading zeros kept.

``attribute`` is one column or a list of columns (protected jointly, as
``multi_attribute`` and ``movielens_gender``'s ``gender_x_age_band`` do); a
numeric column named in ``cuts`` (``cuts = {age = [25, 35]}``) is cut into
bands, any other column's distinct values are its classes. A missing value
(``''``, ``NA``, ``None``, ``NULL``, ``-1``, ``?`` and the like, in any case) means "not disclosed", and so
does a user without a row. The evaluation needs every evaluated user's TRUE
attribute (the attackers are scored on it), so it runs on the users who
disclose every attribute column; the others are counted in the report. Users of
the users file without any rating are ignored (counted).

The rating scale is the data's (its smallest and largest rating) unless
``rating_range = [low, high]`` is given; it is the recommender's scale and the
protocol's (released values are clipped to it). Then the analysis of
``movielens_gender`` runs (:func:`.movielens_gender.analyse_ratings`).

Everything is checked before the run starts (``check_ready``): the files, the
columns, the attribute's classes and the scale.
"""

import math
import os
import re
import unicodedata
import warnings

import numpy as np
import pandas as pd

from .._report import MAX_CELL_CHARS, escape_text, inline_code
from .._schema import (Bool, Choice, Either, File, Float, Int, NJobs, PipelineError, Seed, Seq, Table, Text,
                       quick_values)
from ...datasets._movielens import integer_spellings, repeats_sentence
from ...utils._validation import (_MARKER_WORDS, MAX_RATING, UNDISCLOSED_TEXTS, check_ids, check_rating_scale,
                                  format_bound, plain_value, undisclosed_mask, user_stacklevel)
from .movielens_gender import analyse_ratings
from .synthetic_ratings import _LEVELS_CAP, MAPPER, N_CLUSTERS_RULES, PROTOCOL_PARAMETERS, RECOMMENDER

__all__ = ["run", "read_data"]

_COLUMN = Either(Text(200), Int(0, 10_000))
PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "path": File(),
    "user_col": _COLUMN,
    "item_col": _COLUMN,
    "rating_col": _COLUMN,
    "sep": Text(10),
    "header": Bool(),
    "encoding": Text(40),
    "timestamp_col": _COLUMN,
    "drop_ratings": Seq(Either(Float(), Text(40)), min_len=0, max_len=20),
    "users_path": File(),
    "users_id_col": Text(200),
    "users_sep": Text(10),
    "users_encoding": Text(40),
    "users_columns": Seq(Text(200), min_len=1, max_len=200, unique=True),
    "attribute": Either(Text(200), Seq(Text(200), max_len=4, unique=True)),
    # keyed by column names, which need not be identifiers ("Age Group" could be the attribute, never cut)
    "cuts": Table(free=Seq(Float(), max_len=9, increasing=True,
                           why="a column is cut into at most 10 bands, each cut above the previous one"),
                  free_key=Text(200)),
    "rating_range": Seq(Float(-MAX_RATING, MAX_RATING), min_len=2, max_len=2, increasing=True),
    "max_leakages": Seq(Float(0), max_len=30, increasing=True, why=_LEVELS_CAP),
    "blurme_fractions": Seq(Float(0, 1), max_len=30, increasing=True, why=_LEVELS_CAP),
    "n_clusters": Either(Choice(N_CLUSTERS_RULES), Int(1, 1_000_000)),
    **PROTOCOL_PARAMETERS,
    "recommender": RECOMMENDER,
    "mapper": MAPPER,
    "n_jobs": NJobs(),
}

#: a users file's value that means "not disclosed" (compared after stripping spaces, ignoring case: Book-Crossing's
#: BX-Users.csv writes a missing age NULL, the UCI files "?"): the library's own list, so a file and an array of
#: labels agree
MISSING = UNDISCLOSED_TEXTS
#: at most this many classes per attribute column: more is an id or a number to cut (``cuts``)
MAX_CLASSES = 30

_READER = ("path", "user_col", "item_col", "rating_col", "sep", "header", "encoding", "timestamp_col",
           "drop_ratings")
_DEFAULTS = {"user_col": "user", "item_col": "item", "rating_col": "rating", "sep": ",", "header": True,
             "encoding": "utf-8", "timestamp_col": None, "drop_ratings": (), "users_id_col": "user",
             "users_sep": ",", "users_encoding": "utf-8", "users_columns": None, "attribute": None, "cuts": None, "rating_range": None}
_CACHE = {}  # one entry: the data read by check_ready, reused by run (the files' sizes and times in the key)

# load_ratings_csv's words for a scale holding 0 (0 means "not rated" in a rating matrix)



def _plain(value):
    """A value of the data as plain text of a report paragraph (see :func:`escape_text`)."""
    return escape_text(value, "markdown", max_chars=MAX_CELL_CHARS)


def check_ready(params):
    """Read and check the files before anything runs: :class:`PipelineError` names what is wrong."""
    R, a, info = read_data(**{k: params[k] for k in (*_READER, *_DEFAULTS, "users_path") if k in params})
    n = info["n_disclosed"]
    options = params.get("mapper") or {}
    if R.data.min() == R.data.max():
        # implicit feedback: the report's costs are the RMSE protocol's, and with one rating value the recommender
        # predicts that value: its RMSE measured only where rating_range put the scale (-1.6 % or +27.7 % for one
        # release); privrelease.evaluation.rmse_cost refuses such ratings too
        raise PipelineError(f"every rating of the {n} evaluated users is {R.data[0]:g} (implicit feedback): the "
                            "report's cost is the RMSE of a recommender on held-out ratings, which needs more than "
                            "one rating value (with one, every prediction is that value and the RMSE measures "
                            "nothing but rating_range); expected explicit ratings (the library's mappers, with "
                            "metric=\"hamming\", and its attackers take such data)")
    _check_sgd_scale(params.get("recommender"), info["rating_range"])
    n_clusters = params.get("n_clusters", "auto")
    if not isinstance(n_clusters, str) and n_clusters > n:
        raise PipelineError(f"parameter n_clusters = {n_clusters}: expected at most the {n} users who disclose "
                            "the attribute (the evaluated users)")
    cv, fraction = params.get("cv", 5), params.get("opt_in_fraction", 0.5)
    n_opt = int(np.floor(fraction * n + 0.5))  # the protocol's split (privrelease.evaluation.rmse_cost)
    if n_opt < 2 or n - n_opt < cv:
        raise PipelineError(f"{n} user(s) disclose the attribute: with opt_in_fraction = {fraction:g} that is "
                            f"{n_opt} opted-in and {n - n_opt} protected user(s); expected at least 2 opted-in "
                            f"users and at least cv = {cv} protected ones (one per fold)")
    # the protocol's own split, as the run draws it (same seed): a class that no opted-in user has (a class of
    # one user drawn among the protected ones), a fold without a held-out rating, failed after minutes of running
    from ...evaluation._protocol import _prepare_split

    seed = params.get("random_state", 0)
    try:
        split = _prepare_split(R, a, opt_in_fraction=fraction, cv=cv,
                               heldout_fraction=params.get("heldout_fraction", 0.1),
                               rating_range=tuple(info["rating_range"]), random_state=0 if seed is None else int(seed),
                               mapper_target="joint" if a.ndim == 2 else None)
    except ValueError as exc:
        raise PipelineError(f"the evaluation protocol's split of the {n} users who disclose the attribute "
                            f"(random_state = {seed}): {exc}") from None
    # what the mapper needs of the opted-in users it is fitted on: its held-out rules' folds (n_clusters =
    # "heldout", mapper.class_bins / class_removal = "heldout"), prior = "model"'s cross-fit; too few failed in
    # the mapper's first fit, after the run had started
    from ...mappers import QuantizedPrivacyMapper
    from ...mappers._quantized import _check_heldout_size, _check_model_prior_size

    classes, codes = np.unique(a[split.opt_in], axis=0, return_inverse=True) if a.ndim == 2 else \
        np.unique(a[split.opt_in], return_inverse=True)
    codes = codes.ravel()
    per_class = np.bincount(codes)
    try:
        for rule in QuantizedPrivacyMapper(n_clusters=n_clusters, **options)._heldout_rules(codes):
            _check_heldout_size(per_class, rule)
        if options.get("prior") == "model":
            _check_model_prior_size(per_class, classes.tolist())
    except ValueError as exc:
        raise PipelineError(f"the mapper is fitted on the {split.opt_in.size} opted-in users (opt_in_fraction = "
                            f"{fraction:g}, random_state = {seed}): {exc}") from None


#: Surprise's default learning rates of the matrix factorisations fitted by stochastic gradient descent
_SGD_LR_ALL = {"SVD": 0.005, "SVDpp": 0.007}
_SGD_RATES = {"SVD": ("lr_bu", "lr_bi", "lr_pu", "lr_qi"), "SVDpp": ("lr_bu", "lr_bi", "lr_pu", "lr_qi", "lr_yj")}


def _check_sgd_scale(recommender, rating_range):
    """Refuse learning rates on which SVD / SVD++'s gradient descent diverges, before anything runs.

    Each step moves a bias or factor by the learning rate times the prediction error, and an error can be as
    large as the scale's width: with ``lr x width >= 1`` a step overshoots by more than the error it corrects.
    The recommender trains on the ratings mapped from ``rating_range`` onto 1..5
    (:class:`~privrelease.recommender.SurpriseRecommender`), so the width is 4 whatever the file's units (on 1-5
    ratings x 200 SVD's default 0.005 used to diverge, and now fits); the run failed minutes later with "SVD
    diverged ... use a smaller lr_all".
    """
    from ...recommender._surprise import MODEL_SCALE

    spec = dict(recommender or {})
    algorithm = spec.get("algorithm", "SVD")
    if algorithm not in _SGD_LR_ALL:
        return
    params = dict(spec.get("algo_params") or {})
    lr_all = params.get("lr_all", _SGD_LR_ALL[algorithm])
    rates = {k: params.get(k, lr_all) for k in _SGD_RATES[algorithm]}
    rates = {k: float(v) for k, v in rates.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if not rates:
        return
    name, lr = max(rates.items(), key=lambda kv: kv[1])
    low, high = rating_range
    width = MODEL_SCALE[1] - MODEL_SCALE[0]
    if lr * width >= 1:
        shown = "lr_all" if name not in params else name
        raise PipelineError(
            f"{algorithm}'s gradient descent diverges at {shown} = {lr:g}: the recommender trains on the ratings "
            f"mapped from {low:g}..{high:g} onto 1..5, and a step moves by the learning rate times an error of up to "
            f"{width:g}, so it overshoots ({lr:g} x {width:g} >= 1); expected a learning rate below "
            f"{format_bound(1 / width)} "
            f"(--set 'recommender={{algorithm = \"{algorithm}\", algo_params = {{lr_all = {0.5 / width:.3g}}}}}'), "
            "or recommender.algorithm = \"BaselineOnly\"")


def _key(params):
    files = [os.path.realpath(os.path.expanduser(params[k])) for k in ("path", "users_path")]
    # '~/ratings.csv' passed the file check (which expands '~') and os.stat('~/ratings.csv') raised
    # FileNotFoundError here: the files are named by their real paths
    stats = tuple((f, os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files)
    return repr((stats, sorted((k, repr(v)) for k, v in params.items())))


def read_data(path=None, users_path=None, **options):
    """The rating matrix of the users who disclose the attribute, their codes, and what was read.

    Returns ``(R, a, info)``: ``R`` CSR (evaluated users x items), ``a`` the
    class codes (1-D, or one column per attribute), ``info`` a dict of counts,
    the scale, and sentences for the report. Raises :class:`PipelineError`.
    """
    opts = {**_DEFAULTS, **options}
    if path is None:
        raise PipelineError("parameter path is not set: expected the rating file (--set path=\"ratings.csv\", "
                            "or path = \"...\" under [params])")
    if users_path is None:
        raise PipelineError("parameter users_path is not set: expected the users file holding the private "
                            "attribute (--set users_path=\"users.csv\")")
    if opts["attribute"] is None:
        raise PipelineError("parameter attribute is not set: expected the users file's column holding the "
                            "private attribute (or a list of columns, protected jointly)")
    key = _key({"path": path, "users_path": users_path, **opts})
    if key in _CACHE:
        return _CACHE[key]
    from ...datasets._movielens import _check_distinct_columns, _read_ratings_csv

    # item_col = "rating" read five items (439 of 1,200 ratings kept) and ran without a word
    try:
        _check_distinct_columns({k: opts[k].strip() if isinstance(opts[k], str) else opts[k]
                                 for k in ("user_col", "item_col", "rating_col", "timestamp_col")
                                 if opts[k] is not None})
    except ValueError as exc:
        raise PipelineError(f"parameters {exc}") from None

    try:
        # a repeated (user, item) pair keeps one rating: counted in info and said in the report (not warned)
        R, user_ids, item_ids, collapsed = _read_ratings_csv(path, **{k: opts[k] for k in _READER if k != "path"})
    except (ValueError, TypeError, OSError) as exc:
        raise PipelineError(f"parameter path = {path!r}: {exc}") from None
    for ids_read, col in ((user_ids, opts["user_col"]), (item_ids, opts["item_col"])):
        _refuse_float_spelled_twins(ids_read, path, col)
    scale = _scale(R, opts["rating_range"])
    columns = [opts["attribute"]] if isinstance(opts["attribute"], str) else list(opts["attribute"])
    ids, users = _read_users(users_path, opts["users_id_col"], columns, opts["users_sep"], opts["users_encoding"],
                             opts["users_columns"])
    cuts = dict(opts["cuts"] or {})
    unknown = sorted(set(cuts) - set(columns))
    if unknown:
        raise PipelineError(f"parameter cuts names column(s) {unknown} that are not attribute columns "
                            f"{columns}; expected cuts for the attribute's numeric columns")
    matched = _match_ids(ids, user_ids)
    if not np.any(matched >= 0):
        # the attribute was then "empty: no user with ratings discloses it", which sent one to the attribute column
        floats = [s for s in ids if re.fullmatch(r"[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?", s)
                  and re.search(r"[.eE]", s)]
        hint = (f"; the users file writes ids as floats (for example {floats[0]!r}), which lose the digits of large "
                "integer ids: write them as integers" if floats and user_ids.dtype.kind in "iu" else "")
        raise PipelineError(f"none of the {ids.size} ids of the users file {users_path!r} (column "
                            f"{opts['users_id_col']!r}, for example {str(ids[0])!r}) is a user of the ratings file "
                            f"{path!r} (column {opts['user_col']!r}, for example {str(user_ids[0])!r}){hint}; check "
                            "users_id_col and that both files name the users alike")
    hit, count = np.unique(matched[matched >= 0], return_counts=True)
    if np.any(count > 1):
        # "7" and "7.0" both name the integer user 7: the later row silently won
        twice = int(hit[count > 1][0])
        raise PipelineError(f"the users file {users_path!r} names user {plain_value(user_ids[twice])!r} more than "
                            f"once (as {', '.join(repr(str(v)) for v in ids[matched == twice])} in column "
                            f"{opts['users_id_col']!r}); expected one row per user")
    row_of = -np.ones(user_ids.size, dtype=np.int64)
    row_of[matched[matched >= 0]] = np.flatnonzero(matched >= 0)
    codes, classes, read = [], [], []
    for c in columns:
        values = users[c].to_numpy(dtype=object)[np.maximum(row_of, 0)]
        values = np.where(row_of >= 0, values, "")  # no row: not disclosed
        code, names = _encode(c, values, cuts.get(c), users_path)
        codes.append(code)
        classes.append(names)
        read.append(values)
    a = codes[0] if len(codes) == 1 else np.column_stack(codes)
    disclosed = np.all(a >= 0, axis=1) if a.ndim == 2 else a >= 0
    # the classes of each column among the evaluated users (those who disclose every column)
    counts = [np.bincount(code[disclosed], minlength=len(names)) for code, names in zip(codes, classes)]
    def describe(show):
        return "; ".join(f"{show(c)}: " + ", ".join(f"{show(n)} = {i} ({k} users)"
                                                     for i, (n, k) in enumerate(zip(names, count)))
                         for c, names, count in zip(columns, classes, counts))

    described = describe(str)
    # the report's sentence: class and column names come from the files, so they are escaped and cut there (a value
    # with a line break, '#', '[t](x.html)' or a run of backticks added headings, links and raw HTML to the reports)
    described_text = describe(_plain)
    n_disclosed = int(disclosed.sum())
    if n_disclosed == 0:
        raise PipelineError(f"the attribute {columns} is disclosed by none of the {user_ids.size} users of "
                            f"{path!r} (users file {users_path!r}: {int((matched >= 0).sum())} of its rows "
                            "match a rating user); check users_id_col and the ids' form (integers vs strings)")
    for c, names, count, values in zip(columns, classes, counts, read):
        if c in cuts and np.any(count == 0):
            # a band nobody falls in was a class of the attribute that no user has (as movielens_gender's age_cuts)
            num = pd.to_numeric(pd.Series(values[disclosed]), errors="coerce")
            raise PipelineError(
                f"parameter cuts.{c} = [{', '.join(f'{v:g}' for v in cuts[c])}] leaves the band(s) "
                f"{[names[i] for i in np.flatnonzero(count == 0)]} without any of the {n_disclosed} evaluated "
                f"users (column {c!r} runs from {num.min():g} to {num.max():g} among them); expected cuts "
                "between their smallest and largest value, each band holding a user")
    joint = a[disclosed] if a.ndim == 1 else np.unique(a[disclosed], axis=0, return_inverse=True)[1].ravel()
    present = np.unique(joint)
    if present.size < 2:
        raise PipelineError(f"the attribute {columns} has one class only among the {n_disclosed} users who "
                            f"disclose it: expected at least two classes to protect")
    _warn_unmatched(ids[matched < 0], user_ids[row_of < 0], ids.size, user_ids.size, users_path, path,
                    user_ids.dtype.kind in "iu")
    info = {
        "n_users_ratings": int(user_ids.size), "n_items": int(item_ids.size), "n_ratings": int(R.nnz),
        "n_rows_collapsed": collapsed,
        "n_disclosed": n_disclosed,
        "n_undisclosed_missing": int(np.sum((row_of >= 0) & ~disclosed)),
        "marker_words": _marker_words(read, row_of >= 0),
        "n_undisclosed_no_row": int(np.sum(row_of < 0)),
        "n_users_file_rows": int(ids.size),
        "n_users_without_ratings": int(np.sum(matched < 0)),
        "n_classes": int(present.size),
        "rating_range": [float(scale[0]), float(scale[1])],
        "rating_range_from": "data" if opts["rating_range"] is None else "rating_range",
        "attribute": columns, "described": described, "described_text": described_text,
    }
    out = (R[np.flatnonzero(disclosed)].tocsr(), a[disclosed], info)
    _CACHE.clear()
    _CACHE[key] = out
    return out


def _id_key(v):
    """An id as two files may write it differently: a number by its value ('007', '+7', '7.0', 7), a text by its
    case-folded, stripped form."""
    text = str(v).strip().casefold()
    try:
        number = float(text)
    except ValueError:
        return text
    return repr(number) if math.isfinite(number) else text


def _warn_unmatched(extra, missing, n_rows, n_users, users_path, path, integer_ids):
    """Warn when rows of the users file name no rating user while rating users have no row (``extra`` and
    ``missing``): the ids are then likely written differently in the two files ("000".."099" against the integers
    0..99 left every user written with a leading zero silently undisclosed; only a file matching no id at all was
    refused). Rows without ratings alone are ordinary (counted in the report), and so are both at once when the ids
    are written alike (registered users who never rated beside raters without a profile): warned only when an
    unmatched users-file id reads as an unmatched rating id (the same number, case or blank space)."""
    if not (extra.size and missing.size):
        return
    wanted = {}
    for v in missing.tolist():
        wanted.setdefault(_id_key(v), v)
    pairs = [(e, wanted[_id_key(e)]) for e in extra.tolist() if _id_key(e) in wanted]
    if not pairs:
        return
    shown = ", ".join(repr(str(e)) for e, _ in pairs[:3])
    users = ", ".join(repr(plain_value(m)) for _, m in pairs[:3])
    form = (" (the rating ids are integers: a users id names one written plainly, '7', not '007' or '+7')"
            if integer_ids else "")
    warnings.warn(f"{extra.size} of the {n_rows} ids of the users file {users_path!r} name no user of the ratings "
                  f"file {path!r} (for example {shown}), and {missing.size} of its {n_users} users have no row in "
                  f"the users file (for example {users}): those users are left out as not disclosing the attribute; "
                  f"check that both files write the ids alike{form}", UserWarning, stacklevel=user_stacklevel())


def _refuse_float_spelled_twins(ids, path, column):
    """Refuse a rating file writing some integer ids plainly (``7``) and others as floats (``8.0``, what pandas
    writes for an integer column holding a missing value, so two exports concatenated hold both).

    A ``.0`` made every id of the column text: ``"7"`` and ``"7.0"`` were two users (or items) without a word, and
    a user written ``8.0`` matched no users-file row ``8`` (an id ``8.0`` of the users file matches ``8`` only when
    every rating id is an integer), so its ratings were left out as "not disclosed"."""
    plain, floats = integer_spellings(ids)
    if not floats or not plain:
        return
    integers = {n: v for v, n in plain.items()}
    twin = min(((integers[n], v) for v, n in floats.items() if n in integers), default=None)
    example = (f"{twin[0]!r} and {twin[1]!r}, one id written two ways" if twin is not None
               else f"{min(plain)!r} and {min(floats)!r}")
    raise PipelineError(f"the rating file {path!r} writes some ids of column {column!r} as integers and "
                        f"{len(floats)} as floats ({example}): the '.0' makes every id text, so '7' and '7.0' "
                        "are two ids and '7.0' matches no users-file row '7'; expected each id written one way "
                        "(integers without '.0')")


def _scale(R, given):
    low, high = float(R.data.min()), float(R.data.max())
    if max(abs(low), abs(high)) > MAX_RATING:
        # 1e308 passed every check, then overflowed in the recommender's squared errors minutes later
        raise PipelineError(f"the ratings run from {low:g} to {high:g}: expected ratings of at most "
                            f"{format_bound(MAX_RATING)} in magnitude (the recommender and the mapper square and sum "
                            "differences of ratings, which overflow beyond that); check rating_col, or divide "
                            "the ratings by a constant")
    if given is None:
        if low == high:
            raise PipelineError(f"every rating of the file is {low:g} (implicit feedback): the report's cost is the "
                                "RMSE of a recommender on held-out ratings, which needs more than one rating value; "
                                "expected explicit ratings")
        try:
            return check_rating_scale((low, high), f"the data's scale (the ratings run from {low:g} to {high:g})")
        except ValueError as exc:
            raise PipelineError(str(exc)) from None
    try:
        lo, hi = check_rating_scale(list(given), "parameter rating_range")
    except ValueError as exc:
        raise PipelineError(str(exc)) from None
    out = int(np.sum((R.data < lo) | (R.data > hi)))
    if out:
        raise PipelineError(f"parameter rating_range = {list(given)}: {out} rating(s) of the file lie outside "
                            f"it (the ratings run from {low:g} to {high:g})")
    return lo, hi


def _read_users(path, id_col, columns, sep, encoding, names=None):
    """The users file's ids and its attribute columns, as stripped text: ``(ids, table)``; ``names``: the columns'
    names of a file without a header line (its first line is a user's).

    The ids are returned apart from the table: kept in it as a column '__id__', they collided with a users file's
    own column '__id__' (a bare KeyError when it was the attribute).
    """
    from ...datasets._movielens import (_check_encoding, _check_field_counts, _check_line_lengths, pandas_sep,
                                        sep_escape_hint)

    file, what = os.path.expanduser(path), f"the users file {path!r}"
    if not sep:
        raise PipelineError("parameter users_sep = '': expected the users file's field separator (for example "
                            "',' or '\\t')")
    try:
        _check_encoding(file, encoding, what, name="users_encoding")
        _check_line_lengths(file, what)
    except (ValueError, TypeError) as exc:  # "users_encoding 'hex' is ..." or "the users file ... starts with"
        raise PipelineError(str(exc) if str(exc).startswith(what) else f"parameter {exc}") from None
    if names is not None:  # a row longer than users_columns: pandas' "Error tokenizing data" otherwise
        try:
            _check_field_counts(file, sep, encoding, len(names), what=what, named_by="users_columns")
        except ValueError as exc:
            raise PipelineError(f"parameter users_path: {exc}") from None
    try:
        with warnings.catch_warnings():
            # a row longer than the header: refused below by _check_field_counts, naming the line
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            # a separator of several characters is literal text, not pandas' regular expression (see load_ratings_csv)
            df = pd.read_csv(file, **pandas_sep(sep), dtype=str, keep_default_na=False, encoding=encoding,
                             index_col=False, compression=None,
                             **({} if names is None else {"header": None, "names": list(names)}))
    except pd.errors.EmptyDataError:
        raise PipelineError(f"parameter users_path = {path!r}: the users file is empty; expected "
                            + ("a row per user" if names is not None else
                               "a header line naming the id and attribute columns (or users_columns naming "
                               "them, for a file without one)")) from None
    except UnicodeDecodeError as exc:
        raise PipelineError(f"parameter users_path = {path!r}: not {encoding} text (byte "
                            f"{exc.object[exc.start]:#04x}); set users_encoding (for example 'latin-1')") from None
    except (ValueError, LookupError, pd.errors.ParserError) as exc:
        raise PipelineError(f"parameter users_path = {path!r} cannot be read as {sep!r}-separated text: "
                            f"{exc}") from None
    df = df.fillna("")  # a row shorter than users_columns: its last columns are missing
    if names is not None:
        df.columns = [str(c).strip() for c in names]
    else:
        try:
            # a row with more fields than the header: pandas dropped the extra ones (a warning only), and a value
            # holding an unquoted separator ('Paris, France') shifted the attribute of that row
            _, first = _check_field_counts(file, sep, encoding, df.shape[1], what=what)
        except ValueError as exc:
            raise PipelineError(f"parameter users_path: {exc}") from None
        # the names as written ('sex' twice: pandas renamed the second 'sex.1' and the first was read)
        df.columns = first if len(first) == df.shape[1] else [str(c).strip() for c in df.columns]
    if id_col in columns:  # every user's id became a class of the attribute
        raise PipelineError(f"parameters users_id_col and attribute both name the column {id_col!r} of the users "
                            f"file {path!r}; expected the attribute in another column than the users' ids")
    for name, c in [("users_id_col", id_col)] + [("attribute", c) for c in columns]:
        if c not in df.columns:
            raise PipelineError(f"parameter {name}: column {c!r} not in the users file {path!r}; its columns "
                                f"are {list(df.columns)!r}" + ("" if names is not None else
                                " (a file without a header line: name its columns with users_columns)")
                                + sep_escape_hint(sep, "users_sep"))
        if list(df.columns).count(c) > 1:
            # 'sex' and ' sex': one name once spaces are ignored (df[c] was a table: AttributeError)
            raise PipelineError(f"parameter {name}: column {c!r} is named more than once in the header of the "
                                f"users file {path!r} (spaces around names are ignored); its columns are "
                                f"{list(df.columns)!r}")
    if df.empty:
        raise PipelineError(f"the users file {path!r} holds no row" + ("" if names is not None else
                            ", only a header line") + f"; expected one row per user (its id in column {id_col!r}, "
                            f"the attribute in {columns!r})")
    ids = df[id_col].astype(str).str.strip()
    blank = np.flatnonzero(ids.to_numpy() == "")
    if blank.size:
        # one blank id was a user without ratings, two were "user '' named more than once"
        raise PipelineError(f"the users file {path!r} has {blank.size} row(s) without an id in column {id_col!r} "
                            f"(the first is data row {blank[0] + 1}); expected every row to name its user")
    try:  # a NUL in an id refused; 'ann' and 'ann\u200b', 'José' composed and decomposed: warned
        check_ids(ids.to_numpy(), f"the users file {path!r} column {id_col!r}", where=lambda i: f"data row {i + 1}")
    except ValueError as exc:
        raise PipelineError(str(exc)) from None
    repeated = ids[ids.duplicated()]
    if not repeated.empty:
        raise PipelineError(f"the users file {path!r} names user {plain_value(repeated.iloc[0])!r} more than once "
                            f"({repeated.size} repeated id(s) in column {id_col!r}); expected one row per user")
    return ids.to_numpy(), pd.DataFrame({c: df[c].astype(str).str.strip() for c in columns})


def _marker_words(read, has_row):
    """How many users with ratings give each marker word (``'None'``, ``'NA'``, ``'?'`` ...: read as "not disclosed",
    though it may be a real class, as the library's labels warn), in the order met: ``{text: count}``."""
    counts = {}
    for values in read:
        for v in np.asarray(values, dtype=object)[has_row].tolist():
            text = str(v).strip()
            if text.lower() in _MARKER_WORDS:
                counts[text] = counts.get(text, 0) + 1
    return counts


def _match_ids(ids, user_ids):
    """For each users-file id, the row of ``user_ids`` it names (-1: no rating).

    Ids are compared as :func:`~privrelease.datasets.load_ratings_csv` reads them.
    """
    ids = np.asarray(ids, dtype=str)
    if user_ids.dtype.kind in "iu":
        # an integer id is written plainly ("7", not "007"): the rule that made the rating ids integers; "7.0" too,
        # what pandas writes for an integer column that holds a missing value (it becomes float)
        ids = np.array([s[:-2] if s.endswith(".0") else s for s in ids], dtype=str)
        plain = np.array([_plain_int64(s) for s in ids], dtype=bool)
        keys = np.zeros(ids.size, dtype=np.int64)
        keys[plain] = [int(s) for s in ids[plain]]
    else:
        # one name composed in one file and decomposed in the other (NFC, NFD) names one user: compared as NFC
        at = {unicodedata.normalize("NFC", u): i for i, u in enumerate(user_ids)}
        return np.array([at.get(unicodedata.normalize("NFC", s), -1) for s in ids], dtype=np.int64)
    pos = np.minimum(np.searchsorted(user_ids, keys), user_ids.size - 1)
    hit = plain & (user_ids[pos] == keys)
    return np.where(hit, pos, -1)


def _plain_int64(s):
    """Whether ``s`` is an int64 written plainly (``"7"``, ``"-7"``; not ``"007"``, ``"+7"``, ``"²"``, ``"1e3"``),
    as :func:`~privrelease.datasets.load_ratings_csv` reads an integer id (an id beyond int64 is a string there:
    int64 raised OverflowError, and ``"²"``, a digit to ``str.isdigit``, a ValueError of ``int``)."""
    digits = s[1:] if s.startswith("-") else s
    return (digits.isascii() and digits.isdigit() and str(int(s)) == s
            and -2**63 <= int(s) < 2**63)


def _column_labels(values):
    """The labels of one users-file column as the library reads that column once pandas has parsed it: numbers
    when every value that is no marker text (:data:`MISSING`) is a finite number ("1" and "1.0" one class, "-01"
    and "-1e0" the number -1, not disclosed), else the texts ("-1.00" beside "a" a class, as
    :func:`~privrelease.utils.undisclosed_mask` reads it). Returns an object array."""
    labels = np.asarray(values, dtype=object).astype(str).astype(object)
    text = undisclosed_mask(labels)
    if text.all():
        return labels
    num = pd.to_numeric(pd.Series(labels[~text]), errors="coerce")
    if num.isna().any() or not np.all(np.isfinite(num.to_numpy(dtype=np.float64))):
        return labels
    labels[~text] = [int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v) for v in num.tolist()]
    return labels


def _warn_near_duplicates(column, path, classes):
    """Warn of classes whose names differ only in case or surrounding blank space ('F' and 'f', 'M' and 'M '): each
    is protected as a class of its own (4 classes for a gender written in two cases), which is seldom meant."""
    groups = {}
    for name in classes:
        groups.setdefault(name.strip().casefold(), []).append(name)
    alike = [names for names in groups.values() if len(names) > 1]
    if alike:
        shown = "; ".join(" and ".join(repr(n) for n in names) for names in alike[:3])
        warnings.warn(f"attribute column {column!r} of {path!r} has classes whose names differ only in case or blank "
                      f"space ({shown}): each is protected as a class of its own; write each class alike if they "
                      "are one", UserWarning, stacklevel=user_stacklevel())


def _encode(column, values, cuts, path):
    """Class codes of one attribute column (-1: not disclosed) and the classes' names.

    "Not disclosed" and the classes are the library's (:func:`_column_labels`, :func:`undisclosed_mask`)."""
    values = np.asarray(values, dtype=object).astype(str)
    labels = _column_labels(values)
    missing = undisclosed_mask(labels)
    shown = values[~missing]
    code = -np.ones(values.size, dtype=np.int64)
    if cuts is not None:
        num = pd.to_numeric(pd.Series(shown), errors="coerce").to_numpy(dtype=np.float64)
        if np.any(~np.isfinite(num)):
            bad = str(shown[~np.isfinite(num)][0])
            raise PipelineError(f"parameter cuts.{column}: column {column!r} of {path!r} holds {bad!r}, not a "
                                "number; expected numbers to cut into bands (or a missing marker: "
                                f"{', '.join(repr(m) for m in MISSING)}, in any case)")
        cuts = [float(c) for c in cuts]
        band = np.searchsorted(np.asarray(cuts), num, side="right").astype(np.int64)
        g = [f"{c:g}" for c in cuts]
        names = [f"under {g[0]}"] + [f"{lo} to under {hi}" for lo, hi in zip(g[:-1], g[1:])] + [f"{g[-1]} and over"]
        code[~missing] = band
    else:
        shown = labels[~missing]
        numeric = all(not isinstance(v, str) for v in shown.tolist())
        classes = np.unique(np.asarray(shown.tolist()) if numeric else shown.astype(str))
        if classes.size > MAX_CLASSES:
            raise PipelineError(f"attribute column {column!r} of {path!r} has {classes.size} distinct values: "
                                f"expected at most {MAX_CLASSES} classes (a numeric column is cut into bands "
                                f"with cuts = {{{column} = [...]}})")
        lookup = {v: i for i, v in enumerate(classes.tolist())}
        code[~missing] = [lookup[v] for v in shown.tolist()]
        if not numeric:
            _warn_near_duplicates(column, path, classes.tolist())
        names = [str(int(v)) if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 else str(v)
                 for v in classes.tolist()]
    if code.max(initial=-1) < 0:
        raise PipelineError(f"attribute column {column!r} of {path!r} is empty: no user with ratings discloses it "
                            f"(every value is missing: {', '.join(repr(m) for m in MISSING)} in any case, or no row)")
    return code, names


@quick_values({"max_leakages": (0.0, 0.02), "blurme_fractions": (0.2,), "cv": 2,
               "attack_models": ("logistic",), "n_jobs": 1})
def run(report, *, random_state=0, quick=False, path=None, user_col="user", item_col="item", rating_col="rating",
        sep=",", header=True, encoding="utf-8", timestamp_col=None, drop_ratings=(), users_path=None,
        users_id_col="user", users_sep=",", users_encoding="utf-8", users_columns=None, attribute=None, cuts=None, rating_range=None,
        max_leakages=(0.0, 0.002, 0.01, 0.03, 0.1, 1.0), blurme_fractions=(0.05, 0.1, 0.2, 0.5), n_clusters="auto",
        opt_in_fraction=0.5, cv=5, heldout_fraction=0.1, target_auc=0.55, attack_models=("logistic", "forest"),
        recommender=None, mapper=None, n_jobs=2):
    """Write the analysis of the user's rating file into ``report``; returns headline numbers."""
    R, a, info = read_data(path, users_path, user_col=user_col, item_col=item_col, rating_col=rating_col, sep=sep,
                           header=header, encoding=encoding, timestamp_col=timestamp_col,
                           drop_ratings=drop_ratings, users_id_col=users_id_col, users_sep=users_sep,
                           users_encoding=users_encoding, users_columns=users_columns, attribute=attribute, cuts=cuts,
                           rating_range=rating_range)
    lo, hi = info["rating_range"]
    report.section("Data")
    source = "the data's smallest and largest rating" if info["rating_range_from"] == "data" else "rating_range"
    report.text(
        f"Ratings: {inline_code(path)}: {info['n_users_ratings']} users, {info['n_items']} items, {info['n_ratings']} "
        f"ratings; rating scale {lo:g} to {hi:g} ({source}). Users file: {inline_code(users_path)} "
        f"({info['n_users_file_rows']} rows). Of the {info['n_users_ratings']} users with ratings, "
        f"{info['n_disclosed']} disclose the attribute and are evaluated; {info['n_undisclosed_missing']} have a "
        f"missing value and {info['n_undisclosed_no_row']} have no row in the users file (not disclosed: the "
        "evaluation needs every evaluated user's true attribute to score the attackers, so they are left out). "
        f"{info['n_users_without_ratings']} row(s) of the users file have no rating and are ignored."
        + (" Missing values written as words: " + ", ".join(f"'{_plain(t)}' ({k} user(s))" for t, k in
                                                             info["marker_words"].items())
           + "; a value among privrelease.utils.UNDISCLOSED_TEXTS is read as 'not disclosed': if one is a real "
           "class, rename it in the users file to keep it as a class." if info.get("marker_words") else "")
        + (f" {repeats_sentence(info['n_rows_collapsed'], timestamp_col, 'Repeated ratings')}; the counts above "
           "are after it." if info["n_rows_collapsed"] else ""))
    report.json({k: v for k, v in info.items() if k != "described_text"}, "data")  # the data's own words
    seed = 0 if random_state is None else int(random_state)
    headline = analyse_ratings(
        report, "ratings", f"Evaluated: {R.shape[0]} users, {R.shape[1]} items, {R.nnz} ratings", R, a,
        info["described_text"], rating_range=(lo, hi), recommender=recommender, max_leakages=max_leakages,
        blurme_fractions=blurme_fractions, n_clusters=n_clusters, opt_in_fraction=opt_in_fraction, cv=cv,
        heldout_fraction=heldout_fraction, target_auc=target_auc, attack_models=attack_models, mapper=mapper,
        n_jobs=n_jobs, seed=seed)
    return headline
