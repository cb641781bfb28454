"""Readers for real rating data: MovieLens 100k and generic rating CSV files.

Nothing here downloads anything: the files must already be on disk.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["load_movielens_100k", "load_ratings_csv", "movielens_100k_search_paths"]

_ML100K_FILES = ("u.data", "u.user", "u.item")
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
    try:
        data = pd.read_csv(data_file, sep="\t", header=None,
                           names=["user_id", "item_id", "rating", "timestamp"],
                           dtype={"user_id": np.int64, "item_id": np.int64,
                                  "rating": np.float64, "timestamp": np.int64})
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"{data_file} is not a tab-separated 'user item rating timestamp' "
                         f"file: {exc}") from None
    users = _read_pipe_table(folder / "u.user",
                             ["user_id", "age", "gender", "occupation", "zip_code"],
                             encoding="latin-1")
    items = _read_pipe_table(folder / "u.item", None, encoding="latin-1")
    if items.shape[1] < 2:
        raise ValueError(f"{folder / 'u.item'} must have at least 2 '|'-separated columns "
                         f"(id|title|...), got {items.shape[1]}")
    items = items.iloc[:, :2]
    items.columns = ["item_id", "title"]
    try:
        users["user_id"] = users["user_id"].astype(np.int64)
        users["age"] = users["age"].astype(np.int64)
        items["item_id"] = items["item_id"].astype(np.int64)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"non-integer id or age in {folder}/u.user or u.item: {exc}") from None

    bad = ~np.isfinite(data["rating"].to_numpy()) | (data["rating"].to_numpy() <= 0)
    if bad.any():
        raise ValueError(f"{data_file} has {int(bad.sum())} rating(s) that are not positive "
                         f"numbers, e.g. {float(data['rating'].to_numpy()[bad][0])!r}")

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


def _read_pipe_table(file, names, encoding):
    try:
        return pd.read_csv(file, sep="|", header=None, names=names, encoding=encoding,
                           dtype=str, keep_default_na=False, index_col=False)
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"{file} is not a '|'-separated table: {exc}") from None


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
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"rating file {str(path)!r} does not exist or is not a file")
    if not isinstance(header, (bool, np.bool_)):
        raise TypeError(f"header must be a bool, got {header!r}")
    cols = [user_col, item_col, rating_col]
    if not header and not all(isinstance(c, (int, np.integer)) for c in cols):
        raise ValueError(f"with header=False the columns must be 0-based positions, got {cols!r}")
    engine = "python" if len(sep) > 1 else "c"
    df = pd.read_csv(p, sep=sep, header=0 if header else None, engine=engine,
                     encoding=encoding, dtype=str, keep_default_na=False)
    for c in cols:
        if c not in df.columns:
            raise ValueError(f"column {c!r} not in {str(path)!r}; columns are {list(df.columns)!r}")
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


def _maybe_numeric(series):
    """Integer ids when every id is an integer, else the strings."""
    values = series.to_numpy(dtype=object).astype(str)
    try:
        as_int = values.astype(np.int64)
    except ValueError:
        return values
    return as_int
