"""Readers for real rating data: MovieLens 100k and generic rating CSV files.

Nothing here downloads anything: the files must already be on disk.
"""

import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["load_movielens_100k", "load_ratings_csv", "movielens_100k_search_paths"]

_ML100K_FILES = ("u.data", "u.user", "u.item")
#: the rating scale of MovieLens 100k (whole stars)
ML100K_RATING_SCALE = (1, 5)
_GROUPLENS_URL = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"


def _surprise_data_folder():
    """The folder Surprise downloads built-in data sets to.

    Mirrors ``surprise.builtin_datasets.get_dataset_dir``: the environment
    variable ``SURPRISE_DATA_FOLDER`` or else ``~/.surprise_data/`` (read at call
    time, so a changed environment is honoured).
    """
    return Path(os.environ.get("SURPRISE_DATA_FOLDER",
                               os.path.expanduser("~") + "/.surprise_data/"))


def movielens_100k_search_paths(path=None):
    """Folders :func:`load_movielens_100k` looks in, in order.

    Parameters
    ----------
    path : str or path-like or None
        A folder given by the caller: it is searched, then its ``ml-100k``
        sub-folder (the layout of the unzipped GroupLens archive). When None,
        Surprise's cache ``$SURPRISE_DATA_FOLDER/ml-100k/ml-100k/`` (default
        ``~/.surprise_data/ml-100k/ml-100k/``).

    Returns
    -------
    list of pathlib.Path
    """
    if path is not None:
        p = Path(path).expanduser()
        return [p, p / "ml-100k"]
    return [_surprise_data_folder() / "ml-100k" / "ml-100k"]


def _check_path(path, name):
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or path-like naming a file or folder, got {path!r} of type "
                        f"{type(path).__name__}")


def _missing_files_message(looked):
    lines = [f"  - {folder} (missing: {', '.join(missing)})" for folder, missing in looked]
    return (
        "MovieLens 100k files (u.data, u.user, u.item) not found. Looked in:\n"
        + "\n".join(lines)
        + "\nprivrelease never downloads data. To obtain them, either let Surprise "
        "download its copy:\n"
        "    python -c \"import surprise; surprise.Dataset.load_builtin('ml-100k')\"\n"
        f"or download and unzip {_GROUPLENS_URL} and pass the folder as "
        "load_movielens_100k(path=...)."
    )


def load_movielens_100k(path=None):
    """Load MovieLens 100k as a user x item rating matrix plus user demographics.

    Reads the three standard files of the GroupLens ``ml-100k`` archive:
    ``u.data`` (tab-separated ``user item rating timestamp``), ``u.user``
    (``id|age|gender|occupation|zip``) and ``u.item`` (latin-1,
    ``id|title|release date|...``). Nothing is downloaded.

    Parameters
    ----------
    path : str or path-like, default=None
        Folder holding the files (or its ``ml-100k`` sub-folder). When None,
        Surprise's download cache is used: ``$SURPRISE_DATA_FOLDER/ml-100k/ml-100k/``
        or ``~/.surprise_data/ml-100k/ml-100k/`` (see
        :func:`movielens_100k_search_paths`).

    Returns
    -------
    ratings : scipy.sparse.csr_matrix of shape (n_users, n_items), dtype float64
        Ratings 1-5 (0 = not rated). Row ``k`` is the ``k``-th smallest user id
        and column ``j`` the ``j``-th smallest item id (for the real archive,
        user id ``k + 1`` and item id ``j + 1``). If a (user, item) pair occurs
        more than once the latest rating (by timestamp) is kept.
    users : pandas.DataFrame of shape (n_users,  4)
        Indexed by ``user_id`` in row order, columns ``age`` (int),
        ``gender`` (categorical ``F``/``M``), ``occupation`` (categorical),
        ``zip_code`` (str). Usable private attributes: ``gender``, ``age``.
    item_titles : list of str
        Movie titles in column order.

    Raises
    ------
    FileNotFoundError
        The files are not in any searched folder; the message lists every place
        looked at and how to obtain the data.
    NotADirectoryError
        ``path`` names a file, not a folder.
    ValueError
        A file is malformed (the message names the file).

    References
    ----------
    F. M. Harper and J. A. Konstan, "The MovieLens Datasets: History and
    Context", ACM TiiS 5(4), 2015. The data's licence forbids redistribution,
    which is why it is not shipped.

    Examples
    --------
    >>> from privrelease.datasets import load_movielens_100k
    >>> X, users, titles = load_movielens_100k()  # doctest: +SKIP
    >>> X.shape, users.shape                       # doctest: +SKIP
    ((943, 1682), (943, 4))
    """
    _check_path(path, "path")
    if path is not None:
        p = Path(path).expanduser()
        if p.exists() and not p.is_dir():
            raise NotADirectoryError(
                f"path must be a folder holding u.data, u.user and u.item, got the file {str(path)!r}"
            )
    looked = []
    folder = None
    for candidate in movielens_100k_search_paths(path):
        missing = [f for f in _ML100K_FILES if not (candidate / f).is_file()]
        if not missing:
            folder = candidate
            break
        looked.append((candidate, missing))
    if folder is None:
        raise FileNotFoundError(_missing_files_message(looked))

    data_file = folder / "u.data"
    raw = _read_fields(data_file, "\t", 4, 4, "tab-separated 'user item rating timestamp' file",
                       encodings=("utf-8",))
    data = pd.DataFrame({
        "user_id": _integer_column(raw[0], data_file, "user id"),
        "item_id": _integer_column(raw[1], data_file, "item id"),
        "rating": pd.to_numeric(raw[2], errors="coerce").to_numpy(dtype=np.float64),
        "timestamp": _integer_column(raw[3], data_file, "timestamp"),
    })
    users = _read_fields(folder / "u.user", "|", 5, 5, "'|'-separated 'id|age|gender|occupation|zip' table")
    users.columns = ["user_id", "age", "gender", "occupation", "zip_code"]
    items = _read_fields(folder / "u.item", "|", 2, None, "'|'-separated 'id|title|...' table")
    items = items.iloc[:, :2]
    items.columns = ["item_id", "title"]
    users["user_id"] = _integer_column(users["user_id"], folder / "u.user", "user id")
    users["age"] = _integer_column(users["age"], folder / "u.user", "age")
    items["item_id"] = _integer_column(items["item_id"], folder / "u.item", "item id")
    if (users["age"] < 0).any():
        row = int(np.flatnonzero(users["age"].to_numpy() < 0)[0])
        raise ValueError(f"{folder / 'u.user'} line {row + 1}: age {int(users['age'].iloc[row])} is negative; "
                         "expected an age in years")
    dup = users.duplicated("user_id", keep=False) & ~users.duplicated(keep=False)
    if dup.any():
        uid = users["user_id"].to_numpy()[dup.to_numpy()][0]
        raise ValueError(f"{folder / 'u.user'} describes user {int(uid)} more than once, with different "
                         "values; expected one line per user")

    rating = data["rating"].to_numpy()
    bad = ~np.isfinite(rating) | (rating <= 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        shown = float(rating[row]) if np.isfinite(rating[row]) else raw[2].iloc[row]
        raise ValueError(f"{data_file} has {int(bad.sum())} rating(s) that are not positive "
                         f"numbers, e.g. {shown!r} on line {row + 1}")
    low, high = ML100K_RATING_SCALE
    out = (rating < low) | (rating > high)
    if out.any():
        row = int(np.flatnonzero(out)[0])
        raise ValueError(f"{data_file} line {row + 1}: rating {float(rating[row])!r} is outside MovieLens' "
                         f"scale [{low}, {high}] ({int(out.sum())} such rating(s))")

    user_ids = np.union1d(users["user_id"].to_numpy(), data["user_id"].to_numpy())
    item_ids = np.union1d(items["item_id"].to_numpy(), data["item_id"].to_numpy())
    data = data.sort_values("timestamp", kind="stable").drop_duplicates(
        ["user_id", "item_id"], keep="last")
    rows = np.searchsorted(user_ids, data["user_id"].to_numpy())
    cols = np.searchsorted(item_ids, data["item_id"].to_numpy())
    ratings = sp.csr_matrix((data["rating"].to_numpy(), (rows, cols)),
                            shape=(user_ids.size, item_ids.size))
    ratings.sort_indices()

    users = users.drop_duplicates("user_id").set_index("user_id").reindex(user_ids)
    users.index.name = "user_id"
    users["gender"] = pd.Categorical(users["gender"])
    users["occupation"] = pd.Categorical(users["occupation"])
    users["zip_code"] = users["zip_code"].astype(str)
    titles = (items.drop_duplicates("item_id").set_index("item_id")["title"]
              .reindex(item_ids).fillna("").astype(str).tolist())
    return ratings, users, titles


def _decode(file, encodings):
    """The text of ``file``: UTF-8 when it decodes as UTF-8, else the next encoding (latin-1 never fails)."""
    try:
        data = Path(file).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {file}: {exc.strerror or exc}") from None
    for i, enc in enumerate(encodings):
        try:
            return data.decode(enc)
        except UnicodeDecodeError as exc:
            if i == len(encodings) - 1:
                raise ValueError(f"{file} is not {enc} text (byte {data[exc.start]:#04x} at offset "
                                 f"{exc.start})") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _read_fields(file, sep, min_fields, max_fields, what, encodings=("utf-8", "latin-1")):
    """The fields of a separated text file as strings, every line holding the same number of fields.

    A line with a different number of fields is refused, naming the file and the
    line (pandas would otherwise shift the columns or drop or pad fields silently).
    """
    import io

    text = _decode(file, encodings)
    if not text.strip():
        raise ValueError(f"{file} is empty: expected a {what}")
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, header=None, dtype=str, keep_default_na=False,
                         na_filter=False, skip_blank_lines=True, quoting=3)
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"{file} is not a {what}: {exc}") from None
    n = df.shape[1]
    if n < min_fields or (max_fields is not None and n > max_fields):
        want = str(min_fields) if min_fields == max_fields else f"at least {min_fields}"
        raise ValueError(f"{file} is not a {what}: its lines have {n} field(s), expected {want}")
    # only \n, \r\n and \r end a line (as for pandas): str.splitlines would also split at U+0085, which
    # latin-1 decodes from the byte 0x85
    lines = [ln for ln in re.split(r"\r\n|\r|\n", text) if ln.strip()]
    counts = np.fromiter((ln.count(sep) + 1 for ln in lines), dtype=np.int64, count=len(lines))
    if np.any(counts != n):
        row = int(np.flatnonzero(counts != n)[0])
        raise ValueError(f"{file} line {row + 1} has {int(counts[row])} field(s) where the others have {n}; "
                         f"expected a {what}")
    df.columns = range(n)
    return df


def _integer_column(values, file, what):
    """Integer ids, ages or timestamps; anything else is refused naming the file, the line and the value."""
    text = pd.Series(values, dtype=str)
    try:  # fast path: numpy parses decimal integer strings ('1.5', '1e3', '' and 'x' raise)
        return text.to_numpy(dtype=str).astype(np.int64)
    except (ValueError, OverflowError):
        pass
    text = text.str.strip()
    ok = text.str.fullmatch(r"[+-]?\d{1,18}")
    if not ok.all():
        row = int(np.flatnonzero(~ok.to_numpy())[0])
        raise ValueError(f"{file} line {row + 1}: {what} {values.iloc[row]!r} is not an integer "
                         "(of at most 18 digits)")
    return text.astype(np.int64).to_numpy()


def load_ratings_csv(path, *, user_col="user", item_col="item", rating_col="rating",
                     sep=",", header=True, encoding="utf-8"):
    """Read a long-format rating file (one ``user, item, rating`` row each) into CSR.

    Parameters
    ----------
    path : str or path-like
        The file.
    user_col, item_col, rating_col : str or int, default="user", "item", "rating"
        Column names (``header=True``) or 0-based positions (``header=False``).
    sep : str, default=","
        Field separator (``"\\t"`` for tab-separated, ``"::"`` for MovieLens 1M).
    header : bool, default=True
        Whether the first line holds column names.
    encoding : str, default="utf-8"

    Returns
    -------
    ratings : scipy.sparse.csr_matrix of shape (n_users, n_items), dtype float64
        Rows follow ``user_ids``, columns ``item_ids``. A repeated
        (user, item) pair keeps its last rating in file order.
    user_ids : ndarray of shape (n_users,)
        The raw user ids, sorted.
    item_ids : ndarray of shape (n_items,)
        The raw item ids, sorted.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        A named column is missing, or a rating is 0, NaN or not a number
        (0 means "not rated" in a rating matrix, so shift such scales first).
    """
    _check_path(path, "path")
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"rating file {str(path)!r} does not exist or is not a file")
    if not isinstance(header, (bool, np.bool_)):
        raise TypeError(f"header must be a bool, got {header!r}")
    if not isinstance(sep, str) or not sep:
        raise ValueError(f"sep must be a non-empty string (for example ',' or '\\t'), got {sep!r}")
    if not isinstance(encoding, str):
        raise TypeError(f"encoding must be the name of a text encoding, got {encoding!r}")
    import codecs

    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"encoding {encoding!r} is not a known text encoding (for example 'utf-8' or "
                         "'latin-1')") from None
    cols = [user_col, item_col, rating_col]
    if not header and not all(isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_))
                              for c in cols):
        raise ValueError(f"with header=False the columns must be 0-based positions, got {cols!r}")
    engine = "python" if len(sep) > 1 else "c"
    try:
        with warnings.catch_warnings():
            # a row longer than the header: refused below by _check_field_counts, naming the line
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            df = pd.read_csv(p, sep=sep, header=0 if header else None, engine=engine,
                             encoding=encoding, dtype=str, keep_default_na=False, index_col=False,
                             on_bad_lines="error")
    except pd.errors.EmptyDataError:
        raise ValueError(f"rating file {str(path)!r} is empty: expected a header line and one "
                         "'user, item, rating' row per rating") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"rating file {str(path)!r} is not {encoding} text (it holds the byte "
                         f"{exc.object[exc.start]:#04x}); pass encoding= (for example 'latin-1')") from None
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"rating file {str(path)!r} cannot be read as {sep!r}-separated text: {exc}") from None
    _check_field_counts(p, sep, encoding, df.shape[1])
    for c in cols:
        if c not in df.columns:
            raise ValueError(f"column {c!r} not in {str(path)!r}; columns are {list(df.columns)!r}")
    if len(df) == 0:
        raise ValueError(f"rating file {str(path)!r} holds no rating (only a header line)")
    for c, what in ((user_col, "user"), (item_col, "item")):
        empty = df[c].str.strip() == ""
        if empty.any():
            row = int(np.flatnonzero(empty.to_numpy())[0])
            raise ValueError(f"rating file {str(path)!r} has {int(empty.sum())} row(s) without a {what} id "
                             f"(the first is data row {row + 1}); every rating needs a user and an item")
    rating = pd.to_numeric(df[rating_col], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(rating) | (rating == 0)
    if bad.any():
        first = df[rating_col].to_numpy()[bad][0]
        raise ValueError(f"{str(path)!r} has {int(bad.sum())} rating(s) that are 0, missing or "
                         f"not numbers, e.g. {first!r}; 0 is reserved for 'not rated'")
    users = _maybe_numeric(df[user_col])
    items = _maybe_numeric(df[item_col])
    user_ids, rows = np.unique(users, return_inverse=True)
    item_ids, cols_ = np.unique(items, return_inverse=True)
    # keep the last rating of a repeated pair
    key = rows.astype(np.int64) * item_ids.size + cols_
    _, last = np.unique(key[::-1], return_index=True)
    keep = key.size - 1 - last
    ratings = sp.csr_matrix((rating[keep], (rows[keep], cols_[keep])),
                            shape=(user_ids.size, item_ids.size))
    ratings.sort_indices()
    return ratings, user_ids, item_ids


def _check_field_counts(p, sep, encoding, n_columns):
    """Refuse a row with more fields than the columns (pandas drops the extra fields with index_col=False)."""
    import csv

    with open(p, encoding=encoding, newline="") as fh:
        if len(sep) == 1:
            rows = csv.reader(fh, delimiter=sep)
        else:
            rows = (line.rstrip("\r\n").split(sep) for line in fh)
        for i, fields in enumerate(rows):
            if len(fields) > n_columns and any(f.strip() for f in fields[n_columns:]):
                raise ValueError(f"rating file {str(p)!r} line {i + 1} has {len(fields)} fields but the "
                                 f"file has {n_columns} column(s); a row must not hold more fields than the "
                                 "header names")


def _maybe_numeric(series):
    """Integer ids when every id is an integer, else the strings."""
    values = series.to_numpy(dtype=object).astype(str)
    try:
        as_int = values.astype(np.int64)
    except (ValueError, OverflowError):
        return values
    return as_int
