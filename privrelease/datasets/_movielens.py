"""Readers for real rating data: MovieLens 100k and 1M, and generic rating CSV files.

Nothing here downloads anything: the files must already be on disk.
"""

import numbers
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..utils._validation import check_ids, check_not_subnormal, plain_value, user_stacklevel

__all__ = ["load_movielens_100k", "load_movielens_1m", "load_ratings_csv", "movielens_100k_search_paths",
           "movielens_1m_search_paths"]

_ML100K_FILES = ("u.data", "u.user", "u.item")
#: the rating scale of MovieLens 100k (whole stars)
ML100K_RATING_SCALE = (1, 5)
_GROUPLENS_URL = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
_ML1M_FILES = ("ratings.dat", "users.dat", "movies.dat")
_GROUPLENS_1M_URL = "https://files.grouplens.org/datasets/movielens/ml-1m.zip"
#: MovieLens 1M's age codes (users.dat): each is the first age of its band (1 = under 18, 56 = 56 and over)
ML1M_AGE_CODES = (1, 18, 25, 35, 45, 50, 56)


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
    return _search_paths(path, "ml-100k")


def movielens_1m_search_paths(path=None):
    """Folders :func:`load_movielens_1m` looks in, in order.

    Parameters
    ----------
    path : str or path-like or None
        A folder given by the caller: it is searched, then its ``ml-1m``
        sub-folder (the layout of the unzipped GroupLens archive). When None,
        Surprise's cache ``$SURPRISE_DATA_FOLDER/ml-1m/ml-1m/`` (default
        ``~/.surprise_data/ml-1m/ml-1m/``, where
        ``surprise.Dataset.load_builtin('ml-1m')`` unzips the archive).

    Returns
    -------
    list of pathlib.Path
    """
    return _search_paths(path, "ml-1m")


def _search_paths(path, name):
    """``[path, path / name]`` for a folder the caller names, else Surprise's cache ``<data>/name/name``."""
    _check_path(path, "path")
    if path is not None:
        p = Path(path).expanduser()
        return [p, p / name]
    return [_surprise_data_folder() / name / name]


def _check_path(path, name):
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or path-like naming a file or folder, got {path!r} of type "
                        f"{type(path).__name__}")


def _missing_files_message(looked, label, files, builtin, url, loader):
    def what(folder, name):  # a FIFO or a folder named u.data is there, but is not a file to read
        return f"{name} [not a regular file]" if os.path.lexists(Path(folder) / name) else name

    lines = [f"  - {folder} (missing: {', '.join(what(folder, m) for m in missing)})" for folder, missing in looked]
    return (
        f"{label} files ({', '.join(files)}) not found. Looked in:\n"
        + "\n".join(lines)
        + "\nprivrelease never downloads data. To obtain them, either let Surprise "
        "download its copy:\n"
        f"    python -c \"import surprise; surprise.Dataset.load_builtin('{builtin}')\"\n"
        f"or download and unzip {url} and pass the folder as "
        f"{loader}(path=...)."
    )


def _ratings_alone_hint(looked, data_name):
    """A hint for a folder holding the ratings file but not the others (MovieLens 10M has no users.dat)."""
    alone = [folder for folder, missing in looked if data_name not in missing]
    if not alone:
        return ""
    return (f"\n{alone[0] / data_name} exists without the users table (as in MovieLens 10M, which has no "
            "users.dat): read the ratings alone with load_ratings_csv(path, sep='::', header=False, user_col=0, "
            "item_col=1, rating_col=2, timestamp_col=3).")


def _ratings_csv_hint(looked):
    """A hint for a folder holding ``ratings.csv``: the MovieLens 20M, 25M, 32M and latest archives, whose
    ``userId,movieId,rating,timestamp`` file neither loader reads and which have no users table."""
    found = [folder for folder, _ in looked if (Path(folder) / "ratings.csv").is_file()]
    if not found:
        return ""
    return (f"\n{found[0] / 'ratings.csv'} exists (the layout of MovieLens 20M, 25M, 32M and latest: "
            "'userId,movieId,rating,timestamp', no users table): read the ratings with load_ratings_csv(path, "
            "user_col='userId', item_col='movieId', timestamp_col='timestamp').")


def other_archive(path, dataset):
    """The folder among those searched for ``path`` that holds every file of the OTHER MovieLens archive than
    ``dataset`` (``"ml-100k"`` or ``"ml-1m"``), as ``(folder, other dataset)``; None if there is none."""
    if path is None:
        return None
    other, files = ("ml-1m", _ML1M_FILES) if dataset == "ml-100k" else ("ml-100k", _ML100K_FILES)
    p = Path(path).expanduser()
    for folder in (p, p / other):
        if all((folder / f).is_file() for f in files):
            return folder, other
    return None


def _other_archive_hint(path, dataset):
    """A hint for a folder holding the other MovieLens archive (ml-1m files given to the ml-100k loader)."""
    found = other_archive(path, dataset)
    if found is None:
        return ""
    folder, other = found
    label, loader = ("MovieLens 1M", "load_movielens_1m") if other == "ml-1m" else \
        ("MovieLens 100k", "load_movielens_100k")
    return f"\n{folder} holds the files of {label} ({other}): read it with {loader}(path=...)."


def _find_folder(path, search_paths, files, message):
    """The first of ``search_paths`` holding every one of ``files``; else FileNotFoundError(message(looked))."""
    if path is not None:
        p = Path(path).expanduser()
        if p.exists() and not p.is_dir():
            raise NotADirectoryError(
                f"path must be a folder holding {', '.join(files[:-1])} and {files[-1]}, got the file {str(path)!r}"
            )
    looked = []
    for candidate in search_paths:
        missing = [f for f in files if not (candidate / f).is_file()]
        if not missing:
            return candidate
        looked.append((candidate, missing))
    raise FileNotFoundError(message(looked))


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
        more than once the latest rating (by timestamp, ties in file order) is
        kept, with a ``UserWarning`` counting the rows collapsed.
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
        A file is malformed (an id, age or timestamp that is not an integer written
        with the ASCII digits 0-9, an optional sign and spaces around: ``'1_0'`` and
        ``'\u0663'`` are refused), a gender is not F or M, or ``u.data`` rates with a user
        ``u.user`` does not describe, or ``u.user`` (``u.item``) lists a user (an item)
        twice with different values (the message names the file).

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
    folder = _find_folder(path, movielens_100k_search_paths(path), _ML100K_FILES,
                          lambda looked: _missing_files_message(looked, "MovieLens 100k", _ML100K_FILES, "ml-100k",
                                                                _GROUPLENS_URL, "load_movielens_100k")
                          + _other_archive_hint(path, "ml-100k") + _ratings_csv_hint(looked))
    data_file = folder / "u.data"
    raw = _read_fields(data_file, "\t", 4, 4, "tab-separated 'user item rating timestamp' file",
                       encodings=("utf-8",))
    data = pd.DataFrame({
        "user_id": _integer_column(raw[0], data_file, "user id"),
        "item_id": _integer_column(raw[1], data_file, "item id"),
        "rating": pd.to_numeric(raw[2], errors="coerce").to_numpy(dtype=np.float64),
        "timestamp": _integer_column(raw[3], data_file, "timestamp"),
    }, index=raw.index)
    users = _read_fields(folder / "u.user", "|", 5, 5, "'|'-separated 'id|age|gender|occupation|zip' table")
    users.columns = ["user_id", "age", "gender", "occupation", "zip_code"]
    items = _read_fields(folder / "u.item", "|", 2, None, "'|'-separated 'id|title|...' table")
    items = items.iloc[:, :2]
    items.columns = ["item_id", "title"]
    users["user_id"] = _integer_column(users["user_id"], folder / "u.user", "user id")
    users["age"] = _integer_column(users["age"], folder / "u.user", "age")
    items["item_id"] = _integer_column(items["item_id"], folder / "u.item", "item id")
    # an item listed twice with different titles kept the first title without a word
    _refuse_conflicting_lines(items, folder / "u.item", "item_id", "item")
    if (users["age"] < 0).any():
        row = int(np.flatnonzero(users["age"].to_numpy() < 0)[0])
        raise ValueError(f"{folder / 'u.user'} line {users.index[row]}: age {int(users['age'].iloc[row])} is negative; "
                         "expected an age in years")
    # an 'f', 'X' or '<script>' gender was counted as a man by the gender attribute (a silent wrong answer)
    _check_gender(users, folder / "u.user")
    _refuse_conflicting_lines(users, folder / "u.user")

    _check_ratings(data["rating"].to_numpy(), raw[2], data_file)
    # a rating by a user u.user does not describe got NaN demographics (and turned the int ages float) without a
    # word; MovieLens 1M's loader already refused it
    unknown = ~np.isin(data["user_id"].to_numpy(), users["user_id"].to_numpy())
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise ValueError(f"{data_file} line {data.index[row]}: user {int(data['user_id'].iloc[row])} is not in "
                         f"{folder / 'u.user'} ({int(unknown.sum())} rating(s) by users it does not describe); "
                         "expected the u.user of the same archive")
    user_ids = np.union1d(users["user_id"].to_numpy(), data["user_id"].to_numpy())
    item_ids = np.union1d(items["item_id"].to_numpy(), data["item_id"].to_numpy())
    ratings = _rating_matrix(data, user_ids, item_ids, data_file)
    return ratings, _users_frame(users, user_ids), _titles(items, item_ids)


def load_movielens_1m(path=None):
    """Load MovieLens 1M as a user x movie rating matrix plus user demographics.

    Reads the three ``::``-separated files of the GroupLens ``ml-1m`` archive:
    ``ratings.dat`` (``UserID::MovieID::Rating::Timestamp``), ``users.dat``
    (``UserID::Gender::Age::Occupation::Zip-code``) and ``movies.dat``
    (latin-1, ``MovieID::Title::Genres``). Nothing is downloaded.

    Parameters
    ----------
    path : str or path-like, default=None
        Folder holding the files (or its ``ml-1m`` sub-folder). When None,
        Surprise's download cache is used: ``$SURPRISE_DATA_FOLDER/ml-1m/ml-1m/``
        or ``~/.surprise_data/ml-1m/ml-1m/`` (see :func:`movielens_1m_search_paths`).

    Returns
    -------
    ratings : scipy.sparse.csr_matrix of shape (n_users, n_movies), dtype float64
        Ratings 1-5 (0 = not rated). Row ``k`` is the ``k``-th smallest user id
        of ``users.dat``; column ``j`` the ``j``-th smallest movie id among the
        movies that have a rating (the real archive: 6,040 users x 3,706 movies,
        1,000,209 ratings; 177 movies of ``movies.dat`` have no rating and no
        column). If a (user, movie) pair occurs more than once the latest rating
        (by timestamp, ties in file order) is kept, with a ``UserWarning`` counting the rows collapsed.
    users : pandas.DataFrame of shape (n_users, 4)
        Indexed by ``user_id`` in row order, columns ``age`` (int: the age
        CODE of ``users.dat``, the first age of the user's band: 1 = under 18,
        18 = 18-24, 25, 35, 45, 50 = 50-55, 56 = 56 and over; see
        ``ML1M_AGE_CODES``), ``gender`` (categorical ``F``/``M``),
        ``occupation`` (categorical, the codes 0-20 of the archive's README),
        ``zip_code`` (str). Usable private attributes: ``gender``, ``age``
        (an age cut ``c`` compares with the code: users whose code is >= ``c``).
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
        A file is malformed: a line with the wrong number of fields, an id,
        age or timestamp that is not an integer written with the ASCII digits
        0-9 (an optional sign and spaces around), a rating outside 1-5, a gender other than F/M, an age
        that is not one of the codes, or a rating by a user ``users.dat`` does
        not describe (the message names the file and the line), or ``users.dat``
        (``movies.dat``) lists a user (a movie) twice with different values.

    See Also
    --------
    load_movielens_100k : the 100k archive (943 users, ages in years).

    References
    ----------
    F. M. Harper and J. A. Konstan, "The MovieLens Datasets: History and
    Context", ACM TiiS 5(4), 2015. The data's licence forbids redistribution,
    which is why it is not shipped.

    Examples
    --------
    >>> from privrelease.datasets import load_movielens_1m
    >>> X, users, titles = load_movielens_1m()     # doctest: +SKIP
    >>> X.shape, X.nnz, users.shape                # doctest: +SKIP
    ((6040, 3706), 1000209, (6040, 4))
    >>> sorted(users["age"].unique())              # doctest: +SKIP
    [1, 18, 25, 35, 45, 50, 56]
    """
    folder = _find_folder(path, movielens_1m_search_paths(path), _ML1M_FILES,
                          lambda looked: _missing_files_message(looked, "MovieLens 1M", _ML1M_FILES, "ml-1m",
                                                                _GROUPLENS_1M_URL, "load_movielens_1m")
                          + _ratings_alone_hint(looked, "ratings.dat") + _other_archive_hint(path, "ml-1m")
                          + _ratings_csv_hint(looked))
    data_file, users_file, movies_file = (folder / f for f in _ML1M_FILES)
    raw = _read_fields(data_file, "::", 4, 4, "'::'-separated 'UserID::MovieID::Rating::Timestamp' file",
                       encodings=("utf-8",))
    data = pd.DataFrame({
        "user_id": _integer_column(raw[0], data_file, "user id"),
        "item_id": _integer_column(raw[1], data_file, "movie id"),
        "rating": pd.to_numeric(raw[2], errors="coerce").to_numpy(dtype=np.float64),
        "timestamp": _integer_column(raw[3], data_file, "timestamp"),
    }, index=raw.index)
    users = _read_fields(users_file, "::", 5, 5,
                         "'::'-separated 'UserID::Gender::Age::Occupation::Zip-code' table")
    users.columns = ["user_id", "gender", "age", "occupation", "zip_code"]
    users = users[["user_id", "age", "gender", "occupation", "zip_code"]]
    users["user_id"] = _integer_column(users["user_id"], users_file, "user id")
    users["age"] = _integer_column(users["age"], users_file, "age")
    users["occupation"] = _integer_column(users["occupation"], users_file, "occupation")
    bad = ~users["age"].isin(ML1M_AGE_CODES).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{users_file} line {users.index[row]}: age {int(users['age'].iloc[row])} is not one of "
                         f"MovieLens 1M's age codes {list(ML1M_AGE_CODES)}")
    _check_gender(users, users_file)
    _refuse_conflicting_lines(users, users_file)
    items = _read_fields(movies_file, "::", 3, 3, "'::'-separated 'MovieID::Title::Genres' table")
    items.columns = ["item_id", "title", "genres"]
    items["item_id"] = _integer_column(items["item_id"], movies_file, "movie id")
    _refuse_conflicting_lines(items[["item_id", "title"]], movies_file, "item_id", "movie")

    _check_ratings(data["rating"].to_numpy(), raw[2], data_file)
    user_ids = np.unique(users["user_id"].to_numpy())
    unknown = ~np.isin(data["user_id"].to_numpy(), user_ids)
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise ValueError(f"{data_file} line {data.index[row]}: user {int(data['user_id'].iloc[row])} is not in "
                         f"{users_file} ({int(unknown.sum())} rating(s) by users it does not describe); "
                         "expected the users.dat of the same archive")
    item_ids = np.unique(data["item_id"].to_numpy())
    ratings = _rating_matrix(data, user_ids, item_ids, data_file)
    return ratings, _users_frame(users, user_ids), _titles(items, item_ids)


def _check_ratings(rating, raw, data_file):
    """Refuse a rating that is not a number on MovieLens' scale, naming the file and the line."""
    bad = ~np.isfinite(rating) | (rating <= 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        shown = float(rating[row]) if np.isfinite(rating[row]) else raw.iloc[row]
        raise ValueError(f"{data_file} has {int(bad.sum())} rating(s) that are not positive "
                         f"numbers, e.g. {shown!r} on line {raw.index[row]}")
    low, high = ML100K_RATING_SCALE
    out = (rating < low) | (rating > high)
    if out.any():
        row = int(np.flatnonzero(out)[0])
        raise ValueError(f"{data_file} line {raw.index[row]}: rating {float(rating[row])!r} is outside MovieLens' "
                         f"scale [{low}, {high}] ({int(out.sum())} such rating(s))")


def _rating_matrix(data, user_ids, item_ids, data_file):
    """CSR users x items from a (user_id, item_id, rating, timestamp) frame; a repeated pair keeps its latest,
    with a ``UserWarning`` counting the rows collapsed (as :func:`load_ratings_csv` gives)."""
    n_rows = len(data)
    data = data.sort_values("timestamp", kind="stable").drop_duplicates(
        ["user_id", "item_id"], keep="last")
    if len(data) < n_rows:
        # a user's two ratings of one movie (5, then 1) left one of them without a word
        warnings.warn(f"{data_file}: {n_rows - len(data)} row(s) repeat the (user, item) pair of another row and "
                      "were collapsed, keeping one rating per pair (the latest by timestamp, ties in file order)",
                      UserWarning, stacklevel=user_stacklevel())
    rows = np.searchsorted(user_ids, data["user_id"].to_numpy())
    cols = np.searchsorted(item_ids, data["item_id"].to_numpy())
    ratings = sp.csr_matrix((data["rating"].to_numpy(), (rows, cols)),
                            shape=(user_ids.size, item_ids.size))
    ratings.sort_indices()
    return ratings


def _users_frame(users, user_ids):
    """The users table indexed by ``user_id`` in row order, gender and occupation categorical."""
    users = users.drop_duplicates("user_id").set_index("user_id").reindex(user_ids)
    users.index.name = "user_id"
    users["gender"] = pd.Categorical(users["gender"])
    users["occupation"] = pd.Categorical(users["occupation"])
    users["zip_code"] = users["zip_code"].astype(str)
    return users


def _titles(items, item_ids):
    return (items.drop_duplicates("item_id").set_index("item_id")["title"]
            .reindex(item_ids).fillna("").astype(str).tolist())


def _refuse_conflicting_lines(users, file, id_col="user_id", what="user"):
    dup = users.duplicated(id_col, keep=False) & ~users.duplicated(keep=False)
    if dup.any():
        uid = users[id_col].to_numpy()[dup.to_numpy()][0]
        raise ValueError(f"{file} describes {what} {int(uid)} more than once, with different "
                         f"values; expected one line per {what}")


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


def _check_gender(users, file):
    """Every gender is 'F' or 'M' (the private attribute codes 'F' as 1 and everything else as 0)."""
    bad = ~users["gender"].isin(("F", "M")).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{file} line {users.index[row]}: gender {users['gender'].iloc[row]!r} is not 'F' or 'M'")


def _read_fields(file, sep, min_fields, max_fields, what, encodings=("utf-8", "latin-1")):
    """The fields of a separated text file as strings, every line holding the same number of fields.

    A line with a different number of fields is refused, naming the file and the
    line (pandas would otherwise shift the columns or drop or pad fields silently).
    The rows are indexed by their line in the file (blank lines are skipped, and
    counted), which error messages quote. A file larger than
    :data:`MAX_MOVIELENS_BYTES` or holding a line longer than :data:`MAX_LINE_BYTES`
    is refused before it is read (the whole file is held in memory, several times
    over: a 4 GB ``u.data`` was a MemoryError).
    """
    import io

    try:
        size = os.stat(file).st_size
    except OSError as exc:
        raise ValueError(f"cannot read {file}: {exc.strerror or exc}") from None
    if size > MAX_MOVIELENS_BYTES:
        raise ValueError(f"{file} is {size} bytes: expected a {what} of at most {MAX_MOVIELENS_BYTES // 2**20} MiB "
                         "(MovieLens 1M's ratings.dat, the largest file these loaders read, is 24 MB)")
    _check_line_lengths(file, str(file))
    text = _decode(file, encodings)
    if not text.strip():
        raise ValueError(f"{file} is empty: expected a {what}")
    # only \n, \r\n and \r end a line (as for pandas): str.splitlines would also split at U+0085, which
    # latin-1 decodes from the byte 0x85
    numbered = [(i + 1, ln) for i, ln in enumerate(re.split(r"\r\n|\r|\n", text)) if ln.strip()]
    lines = [ln for _, ln in numbered]
    line_of = np.array([i for i, _ in numbered], dtype=np.int64)
    stand_in = sep
    if len(sep) > 1:
        # MovieLens 1M's '::': pandas reads a multi-character separator with its python engine only
        # (about 10x slower on a million lines); a control character absent from the text stands in
        stand_in = next((c for c in "\x1f\x1e\x1d\x1c\x00" if c not in text), None)
    if stand_in is None:
        # a text holding every stand-in (next() raised a bare StopIteration): its lines are split in Python
        fields = [ln.split(sep) for ln in lines]
        width = max(len(f) for f in fields)
        df = pd.DataFrame([f + [""] * (width - len(f)) for f in fields], dtype=str)
    else:
        try:
            df = pd.read_csv(io.StringIO(text.replace(sep, stand_in) if stand_in != sep else text), sep=stand_in,
                             header=None, dtype=str, keep_default_na=False, na_filter=False, skip_blank_lines=True,
                             quoting=3)
        except (ValueError, pd.errors.ParserError) as exc:
            raise ValueError(f"{file} is not a {what}: {exc}") from None
    n = df.shape[1]
    if n < min_fields or (max_fields is not None and n > max_fields):
        want = str(min_fields) if min_fields == max_fields else f"at least {min_fields}"
        raise ValueError(f"{file} is not a {what}: its lines have {n} field(s), expected {want}")
    # each row's line in the file (what messages quote); rows and non-blank lines match unless pandas kept a
    # line of spaces as a row, then the rows are numbered
    df.index = pd.Index(line_of if line_of.size == len(df) else np.arange(1, len(df) + 1), name="line")
    df.columns = range(n)
    if text.count(sep) == (n - 1) * len(lines):
        # no line has more fields than the first (pandas refuses those), so none has fewer either
        return df
    counts = np.fromiter((ln.count(sep) + 1 for ln in lines), dtype=np.int64, count=len(lines))
    if np.any(counts != n):
        row = int(np.flatnonzero(counts != n)[0])
        raise ValueError(f"{file} line {line_of[row]} has {int(counts[row])} field(s) where the others have {n}; "
                         f"expected a {what}")
    return df


#: an integer of the MovieLens files: ASCII digits, an optional sign, spaces or tabs around
_INTEGER = r"[ \t]*[+-]?[0-9]{1,18}[ \t]*"


def _integer_column(values, file, what):
    """Integer ids, ages or timestamps written with ASCII digits (an optional sign, spaces or tabs around);
    anything else is refused naming the file, the line and the value.

    numpy's parser follows Python's ``int``: it read ``'1_0'`` as 10 and the Arabic-Indic ``'\u0663'`` as 3, so
    such a user was merged into user 10 or 3 and one of their ratings of an item lost, without a word.
    """
    text = pd.Series(values, dtype=str)
    array = text.to_numpy(dtype=str)
    # fast path: numpy parses decimal integer strings ('1.5', '1e3', '' and 'x' raise); what it also reads
    # ('1_0', Unicode digits and spaces) holds a character outside the ASCII digits, signs, spaces and tabs. Not
    # with a NUL: numpy's str dtype drops trailing NULs ('1\x00' became '1', a user merged into user 1)
    if re.fullmatch(r"[0-9+\- \t]*", "".join(array)) and not text.str.contains("\x00", regex=False).any():
        try:
            return array.astype(np.int64)
        except (ValueError, OverflowError):
            pass
    ok = text.str.fullmatch(_INTEGER)
    if not ok.all():
        row = int(np.flatnonzero(~ok.to_numpy())[0])
        raise ValueError(f"{file} line {values.index[row]}: {what} {values.iloc[row]!r} is not an integer "
                         "(expected at most 18 ASCII digits 0-9, with an optional sign)")
    return text.str.strip(" \t").astype(np.int64).to_numpy()


def _check_distinct_columns(named):
    """Refuse two parameters of ``named`` (``{parameter: column}``) naming one column.

    ``item_col='user'`` read every user's ratings as ratings of an item named by the user (one per user: 100 of
    1,200 ratings kept) and ``item_col='rating'`` as ratings of five items, without a word.
    """
    seen = []
    for name, col in named.items():
        first = next((n for n, c in seen if isinstance(c, str) == isinstance(col, str) and c == col), None)
        if first is not None:
            raise ValueError(f"{first} and {name} both name the column {plain_value(col)!r}; expected a different "
                             f"column for each of {', '.join(named)}")
        seen.append((name, col))


def load_ratings_csv(path, *, user_col="user", item_col="item", rating_col="rating",
                     sep=",", header=True, encoding="utf-8", timestamp_col=None, drop_ratings=()):
    """Read a long-format rating file (one ``user, item, rating`` row each) into CSR.

    Parameters
    ----------
    path : str or path-like
        The file.
    user_col, item_col, rating_col : str or int, default="user", "item", "rating"
        Column names (``header=True``) or 0-based positions (``header=False``).
    sep : str, default=","
        Field separator (``"\\t"`` for tab-separated, ``"::"`` for MovieLens 1M), read literally (a
        separator of several characters such as ``"||"`` is not a regular expression), except
        ``r"\\s+"``: runs of spaces and tabs (columns aligned with spaces).
    header : bool, default=True
        Whether the first line holds column names.
    encoding : str, default="utf-8"
        A text encoding (a codec such as ``"rot13"`` is refused). A UTF-8 byte-order mark is skipped
        (a file that starts with one is UTF-8: refused under another encoding, which would glue it to the
        first id); one that starts with a UTF-16 or UTF-32 mark needs ``encoding="utf-16"`` (``"utf-32"``),
        and a compressed file (gzip, bzip2, xz, zip, zstandard) is refused whatever its name: decompress it
        first. Book-Crossing's ``BX-Book-Ratings.csv`` needs ``encoding="cp1252"`` (or ``"latin-1"``).
        A line longer than 8 MiB is refused before the file is parsed.
    timestamp_col : str or int or None, default=None
        A column of numeric timestamps: a repeated (user, item) pair (a user
        re-rating an item) then keeps its LATEST rating, ties broken by file
        order; timestamps written as integers are compared as integers (two
        nanosecond epochs 100 ns apart are two times). None: the last rating in
        file order.
    drop_ratings : collection of str or numbers, default=()
        Rows whose rating is one of these are left out: a string matches the
        rating's text (surrounding spaces ignored, so ``"NA"``, ``""``, ``"?"``
        for missing ratings), a number matches the rating's value (``0``
        matches ``"0"`` and ``"0.0"``; Book-Crossing's implicit rating 0 needs
        ``drop_ratings=[0]``, Jester's "not rated" marker 99 ``drop_ratings=[99]``).
        Ratings are never shifted: a scale holding 0 as a
        real rating (Jester's -10..10) is refused, as 0 means "not rated" in the
        matrix; read it with pandas, shift it (``rating + 11``) and convert with
        :class:`privrelease.recommender.RatingsFrame`.

    Returns
    -------
    ratings : scipy.sparse.csr_matrix of shape (n_users, n_items), dtype float64
        Rows follow ``user_ids``, columns ``item_ids``. A repeated
        (user, item) pair keeps its last rating in file order (its latest by
        ``timestamp_col`` when given), with a ``UserWarning`` counting the rows
        collapsed.
    user_ids : ndarray of shape (n_users,)
        The raw user ids, sorted: integers when every id is written as a plain
        integer, else strings (``"0486411435"`` keeps its leading zero).
        Spaces around an id, and around a header's column names, are ignored. An id holding a control
        character (a NUL, a tab: what a broken parse leaves) is refused naming the line. Two ids that
        differ only in invisible characters (zero-width space, soft hyphen) or in their Unicode normal
        form (``'José'`` composed and decomposed) print alike: they stay two ids, with a ``UserWarning``
        naming the first such pair; so do an integer written plainly and as a float (``'7'`` and ``'7.0'``).
    item_ids : ndarray of shape (n_items,)
        The raw item ids, sorted, as ``user_ids``.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        A named column is missing, two of ``user_col``, ``item_col``, ``rating_col``,
        ``timestamp_col`` name the same column, or a rating is 0, NaN or not a number
        (0 means "not rated" in a rating matrix): the message names the line
        and the column, and ``drop_ratings`` leaves such rows out. A subnormal
        rating (``1e-320``, about 0) and a misleading id (see ``user_ids``) too.
    """
    ratings, user_ids, item_ids, _ = _read_ratings_csv(
        path, user_col=user_col, item_col=item_col, rating_col=rating_col, sep=sep, header=header,
        encoding=encoding, timestamp_col=timestamp_col, drop_ratings=drop_ratings, warn_repeats=True)
    for ids, column in ((user_ids, user_col), (item_ids, item_col)):
        _warn_float_spelled_twins(ids, f"rating file {str(path)!r} column {column!r}")
    return ratings, user_ids, item_ids


def integer_spellings(ids):
    """The text ids of ``ids`` that spell an integer: ``(plain, floats)``, two dicts from each spelling to its
    integer (a sign ``+`` dropped): ``plain`` the ids written as integers (``'7'``, ``'+8'``), ``floats`` those
    written as floats with a zero fraction (``'7.0'``, ``'+8.00'``, what pandas writes for an integer column holding a
    missing value). Shared by :func:`load_ratings_csv` (which warns about an integer written both ways) and the
    ``ratings_file`` experiment (which refuses a column mixing the two)."""
    plain, floats = {}, {}
    if ids.dtype.kind not in "OUS":
        return plain, floats
    for v in set(v for v in ids.tolist() if isinstance(v, str)):
        m = re.fullmatch(r"([-+]?)([0-9]+)(\.0+)?", v)
        if m:
            (floats if m.group(3) else plain)[v] = ("-" if m.group(1) == "-" else "") + m.group(2)
    return plain, floats


def _warn_float_spelled_twins(ids, what):
    """Warn when text ids hold one integer written both plainly and as a float (``'7'`` and ``'7.0'``, what two
    exports concatenated hold when one had a missing value): they stay two ids, as the docstring says, but the
    user who rated under both was split in two without a word."""
    plain, floats = integer_spellings(ids)
    integers = {n: v for v, n in plain.items()}
    twins = sorted((integers[n], v) for v, n in floats.items() if n in integers)
    if twins:
        warnings.warn(f"{what} holds {len(twins)} integer id(s) written both plainly and as a float (for example "
                      f"{twins[0][0]!r} and {twins[0][1]!r}): ids are read as written, so each such integer "
                      "is two ids (its ratings split in two); write every id one way (integers without '.0') to read "
                      "them as one", UserWarning,
                      stacklevel=user_stacklevel())


def _read_ratings_csv(path, *, user_col="user", item_col="item", rating_col="rating", sep=",", header=True,
                      encoding="utf-8", timestamp_col=None, drop_ratings=(), warn_repeats=False):
    """:func:`load_ratings_csv`, returning also how many rows of a repeated (user, item) pair were collapsed
    (``(ratings, user_ids, item_ids, collapsed)``), with a ``UserWarning`` saying so if ``warn_repeats``."""
    if path is None:  # the MovieLens loaders' default (Surprise's cache); a rating file is always named
        raise TypeError("path must be a str or path-like naming the rating file, got None")
    _check_path(path, "path")
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"rating file {str(path)!r} does not exist or is not a file")
    if not isinstance(header, (bool, np.bool_)):
        raise TypeError(f"header must be a bool, got {header!r}")
    if not isinstance(sep, str) or not sep:
        raise ValueError(f"sep must be a non-empty string (for example ',' or '\\t'), got {sep!r}")
    _check_encoding(p, encoding, f"rating file {str(path)!r}")
    _check_line_lengths(p, f"rating file {str(path)!r}")
    # "user id, item id, rating": the names ' item id' and ' rating' are matched by 'item id', 'rating'
    user_col, item_col, rating_col, timestamp_col = (c.strip() if isinstance(c, str) else c for c in
                                                     (user_col, item_col, rating_col, timestamp_col))
    cols = [user_col, item_col, rating_col] + ([] if timestamp_col is None else [timestamp_col])
    _check_distinct_columns(dict(zip(("user_col", "item_col", "rating_col", "timestamp_col"), cols)))
    drop_ratings = _check_drop_ratings(drop_ratings)
    if not header and not all(isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_))
                              for c in cols):
        raise ValueError(f"with header=False the columns must be 0-based positions, got {cols!r}")
    try:
        with warnings.catch_warnings():
            # a row longer than the header: refused below by _check_field_counts, naming the line
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            df = pd.read_csv(p, **pandas_sep(sep), header=0 if header else None, encoding=encoding, dtype=str,
                             keep_default_na=False, index_col=False, on_bad_lines="error", compression=None)
    except pd.errors.EmptyDataError:
        raise ValueError(f"rating file {str(path)!r} is empty: expected a header line and one "
                         "'user, item, rating' row per rating") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"rating file {str(path)!r} is not {encoding} text (it holds the byte "
                         f"{exc.object[exc.start]:#04x}); pass encoding= (for example 'latin-1')") from None
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"rating file {str(path)!r} cannot be read as {sep!r}-separated text: {exc}") from None
    # a line with fewer fields than the columns (a truncated last line): the c engine fills '' in, the python
    # engine (a multi-character sep such as '::') NaN, which crashed below ("'float' object has no attribute 'strip'")
    df = df.fillna("")
    lines, names = _check_field_counts(p, sep, encoding, df.shape[1])
    if header:
        df.columns = [c.strip() if isinstance(c, str) else c for c in df.columns]  # the header's names (above)
        # the names as written: pandas renames an exact repeat ('rating', 'rating.1') and the first was read
        names = names if len(names) == df.shape[1] else list(df.columns)
        repeated = sorted({c for c in cols if names.count(c) > 1})
        if repeated:
            raise ValueError(f"column(s) {repeated!r} are named more than once in {str(path)!r}'s header "
                             f"(spaces around names are ignored); columns are {names!r}")
    # the file line of each data row (blank lines skipped, as pandas does), else None
    lines = lines[1:] if header else lines
    lines = lines if len(lines) == len(df) else None

    def where(row):
        return f"line {lines[row]}" if lines is not None else f"data row {row + 1}"

    for c in cols:
        if not isinstance(c, (str, numbers.Integral)) or isinstance(c, bool):
            raise TypeError(f"a column of {str(path)!r} must be named by a column name (text) or a 0-based "
                            f"position (an integer), got {c!r:.80} of type {type(c).__name__}")
        if c not in df.columns:
            raise ValueError(f"column {c!r} not in {str(path)!r}; columns are {list(df.columns)!r} (name them "
                             "with user_col=, item_col=, rating_col=, timestamp_col=; a file without a header line needs "
                             "header=False and 0-based positions)" + sep_escape_hint(sep))
    if len(df) == 0:
        raise ValueError(f"rating file {str(path)!r} holds no rating (only a header line)")
    for c, what in ((user_col, "user"), (item_col, "item")):
        empty = df[c].str.strip() == ""
        if empty.any():
            row = int(np.flatnonzero(empty.to_numpy())[0])
            raise ValueError(f"rating file {str(path)!r} has {int(empty.sum())} row(s) without a {what} id "
                             f"(the first is {where(row)}, column {c!r}); every rating needs a user and an item")
        # a NUL was read into an id; 'ann' and 'ann\u200b', or 'José' composed and decomposed, were two users
        # without a word (they stay two ids, with a warning)
        check_ids(df[c].str.strip().to_numpy(), f"rating file {str(path)!r} column {c!r}", where=where)
    raw = df[rating_col].str.strip()
    rating = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    if drop_ratings:
        texts = [v.strip() for v in drop_ratings if isinstance(v, str)]
        values = [float(v) for v in drop_ratings if not isinstance(v, str)]
        keep_rows = ~(raw.isin(texts).to_numpy() | np.isin(rating, values))
        df, raw, rating = df[keep_rows], raw[keep_rows], rating[keep_rows]
        lines = None if lines is None else [ln for ln, k in zip(lines, keep_rows) if k]
        if len(df) == 0:
            raise ValueError(f"rating file {str(path)!r} holds no rating once drop_ratings={drop_ratings!r} "
                             "left its rows out")
    bad = ~np.isfinite(rating) | (rating == 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        first = df[rating_col].iloc[row]
        why = ("is 0, and 0 is reserved for 'not rated' in a rating matrix" if rating[row] == 0
               else "is missing" if not first.strip() else "is not a finite number")
        raise ValueError(
            f"rating file {str(path)!r} {where(row)}, column {rating_col!r}: rating {first!r} {why}; "
            f"{int(bad.sum())} rating(s) of the file are 0, missing or not numbers. Pass drop_ratings=[...] to leave those rows out (for example "
            f"drop_ratings=[0] for Book-Crossing's implicit 0, drop_ratings=['NA', '', '?'] for missing ones); "
            "a scale where 0 is a real rating (-10..10) must be shifted first (read the file with pandas, add a "
            "constant, use privrelease.recommender.RatingsFrame)")
    check_not_subnormal(rating, f"rating file {str(path)!r} column {rating_col!r}", where=where)
    order = np.arange(len(df))
    if timestamp_col is not None:
        ts = pd.to_numeric(df[timestamp_col].str.strip(), errors="coerce")
        # integer timestamps are compared as integers: as float64, nanosecond epochs 100 ns apart were equal and
        # the earlier rating of a pair could win
        ts = ts.to_numpy() if ts.dtype.kind in "iu" else ts.to_numpy(dtype=np.float64)
        if ts.dtype.kind == "f" and not np.all(np.isfinite(ts)):
            row = int(np.flatnonzero(~np.isfinite(ts))[0])
            text = df[timestamp_col].iloc[row]
            # '1e400' parses to inf: it is a number, too large for float64 ("is not a number" said otherwise)
            why = ("is not a number" if not np.isinf(ts[row])
                   else "is infinite" if text.strip().lstrip("+-").lower() in ("inf", "infinity")
                   else "overflows float64 (its magnitude is beyond 1.8e308)")
            raise ValueError(f"rating file {str(path)!r} {where(row)}, column {timestamp_col!r}: timestamp "
                             f"{text!r} {why}; expected finite numeric timestamps "
                             "(or timestamp_col=None to keep the last rating of a pair in file order)")
        order = np.lexsort((order, ts))  # by timestamp, ties in file order
    users = _maybe_numeric(df[user_col])[order]
    items = _maybe_numeric(df[item_col])[order]
    rating = rating[order]
    user_ids, rows = np.unique(users, return_inverse=True)
    item_ids, cols_ = np.unique(items, return_inverse=True)
    # keep the last rating of a repeated pair
    key = rows.astype(np.int64) * item_ids.size + cols_
    _, last = np.unique(key[::-1], return_index=True)
    keep = key.size - 1 - last
    ratings = sp.csr_matrix((rating[keep], (rows[keep], cols_[keep])),
                            shape=(user_ids.size, item_ids.size))
    ratings.sort_indices()
    collapsed = int(key.size - keep.size)
    if collapsed and warn_repeats:
        warnings.warn(repeats_sentence(collapsed, timestamp_col, f"rating file {str(path)!r}"), UserWarning,
                      stacklevel=user_stacklevel())
    return ratings, user_ids, item_ids, collapsed


def repeats_sentence(collapsed, timestamp_col, what):
    """What the keep-last rule did to ``collapsed`` rows of a repeated (user, item) pair, in one sentence."""
    rule = ("the latest by timestamp_col, ties in file order" if timestamp_col is not None
            else "the last in file order; timestamp_col= keeps the latest by time")
    return (f"{what}: {collapsed} row(s) repeat the (user, item) pair of another row and were collapsed, keeping "
            f"one rating per pair ({rule})")


#: the first bytes of the compressed formats pandas unpacks by a file's name (``compression="infer"``)
_COMPRESSED = ((b"\x1f\x8b", "gzip-compressed"), (b"BZh", "bzip2-compressed"), (b"\xfd7zXZ\x00", "xz-compressed"),
               (b"PK\x03\x04", "zip"), (b"\x28\xb5\x2f\xfd", "zstandard-compressed"))
#: byte-order marks of the wide Unicode encodings (UTF-32 first: its little-endian mark starts as UTF-16's)
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"),
              (b"\xfe\xff", "utf-16"))


def _check_encoding(p, encoding, what, name="encoding"):
    """Refuse an ``encoding`` that cannot read the file ``p`` (``what`` names it in messages) as text.

    ``encoding`` must name a TEXT encoding (``'rot13'``, ``'base64'`` and ``'hex'`` are codecs of another
    kind: pandas' LookupError escaped as a traceback), and a file that starts with a UTF-8 byte-order mark
    is UTF-8 text: read under another encoding the mark was glued to the first field (a header's first
    name no longer matched; without a header user 'ï»¿1' was another user than '1'). A compressed file is
    refused: pandas unpacked a ``.gz`` by its name while the line checks read its packed bytes (a bare
    UnicodeDecodeError), and a text file named ``.gz`` failed with gzip's BadGzipFile.
    """
    import codecs

    if not isinstance(encoding, str):
        raise TypeError(f"{name} must be the name of a text encoding, got {encoding!r}")
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):
        kind = "not a known text encoding" if info is None else "a codec, but not a text encoding"
        raise ValueError(f"{name} {encoding!r} is {kind} (for example 'utf-8' or 'latin-1')")
    with open(p, "rb") as fh:
        start = fh.read(6)
    packed = next((kind for magic, kind in _COMPRESSED if start.startswith(magic)), None)
    if packed is not None:  # pandas unpacked a '.gz' file by its name, the line checks read the packed bytes
        raise ValueError(f"{what} is a {packed} file, not text: decompress it first")
    wide = next((bits for bom, bits in _WIDE_BOMS if start.startswith(bom)), None)
    if wide is not None and not info.name.startswith(wide):
        # read as UTF-8 the mark was "not utf-8 text (byte 0xff); pass encoding= (for example 'latin-1')",
        # and latin-1 read it as text with a NUL between letters
        raise ValueError(f"{what} starts with a {wide.upper()} byte-order mark, so it is {wide.upper()} text, "
                         f"but {name}={encoding!r}: pass {name}={wide!r}")
    if info.name not in ("utf-8", "utf-8-sig"):
        with open(p, "rb") as fh:
            if fh.read(3) == codecs.BOM_UTF8:
                raise ValueError(f"{what} starts with a UTF-8 byte-order mark, so it is UTF-8 text, but "
                                 f"{name}={encoding!r}: the mark would be read as part of the first field; pass "
                                 f"{name}='utf-8' (the default)")


#: the largest MovieLens file :func:`load_movielens_100k` and :func:`load_movielens_1m` read (each is read whole)
MAX_MOVIELENS_BYTES = 2**30

#: the longest line a rating or users file may hold (a line of ratings is short; a field may hold
#: csv.field_size_limit() = 131,072 characters, refused by :func:`_check_field_counts` naming the line)
MAX_LINE_BYTES = 8 * 2**20


def _check_line_lengths(p, what):
    """Refuse a line longer than :data:`MAX_LINE_BYTES` before pandas reads the file.

    pandas held a whole line in memory (about five times its size) before the field limit refused it:
    a 50 MB line took 250 MB, a 2 GB one more than a machine has. The file is scanned in 1 MiB blocks,
    so one block is held at a time.
    """
    import csv

    start = offset = 0  # where the current line begins, where the block begins
    with open(p, "rb") as fh:
        while block := fh.read(2**20):
            ends = [i for i in (block.find(b"\n"), block.find(b"\r")) if i >= 0]
            end = offset + (min(ends) if ends else len(block))  # the current line reaches at least here
            if end - start > MAX_LINE_BYTES:
                raise ValueError(f"{what} holds a line of more than {MAX_LINE_BYTES // 2**20} MiB (from byte "
                                 f"{start}): expected one row per line, with fields of at most "
                                 f"{csv.field_size_limit()} characters")
            if ends:  # the lines inside the block are shorter than the block
                start = offset + max(block.rfind(b"\n"), block.rfind(b"\r")) + 1
            offset += len(block)


def sep_escape_hint(sep, name="sep"):
    """A hint for a separator holding a backslash escape written out (``--set sep=\\t`` unquoted is the two
    characters backslash and ``t``, not a tab): the separator it probably means, else ``""``."""
    if not isinstance(sep, str) or "\\" not in sep or sep == WHITESPACE_SEP:
        return ""
    try:
        meant = sep.encode("ascii").decode("unicode_escape")
    except (UnicodeError, ValueError):
        return ""
    if meant == sep:
        return ""
    import json

    toml = json.dumps(meant)  # a TOML basic string too ('"\\t"', '"\\u001f"')
    return (f"; {name} = {sep!r} is {len(sep)} literal characters, backslash included: for {meant!r} write "
            f"{name} = {toml} (in TOML a backslash escape is read inside double quotes only: --set '{name}={toml}')")


#: the one separator that is not literal text: runs of spaces and tabs (pandas' idiom for aligned columns)
WHITESPACE_SEP = r"\s+"


def pandas_sep(sep):
    """``read_csv``'s ``sep`` and ``engine`` for a separator read as literal text: pandas reads a separator of
    more than one character as a regular expression ('**': "nothing to repeat", '||' split at every empty
    match), so it is escaped, the text :func:`_check_field_counts` splits at. ``r"\\s+"`` (runs of whitespace,
    pandas' idiom for aligned columns) keeps its meaning."""
    if sep == WHITESPACE_SEP:
        return {"sep": WHITESPACE_SEP, "engine": "c"}
    return {"sep": re.escape(sep), "engine": "python"} if len(sep) > 1 else {"sep": sep, "engine": "c"}


def _check_field_counts(p, sep, encoding, n_columns, what=None, named_by="the header"):
    """Refuse a row with more fields than the columns (pandas drops the extra fields with index_col=False).

    Returns the file line of each non-blank row and the first such row's fields as written (the header's
    names, spaces and a byte-order mark stripped). ``what`` names the file in messages (default: the rating
    file), ``named_by`` what names its columns.
    """
    import csv

    what = what or f"rating file {str(p)!r}"
    with open(p, encoding=encoding, newline="") as fh:
        if len(sep) == 1:
            rows = csv.reader(fh, delimiter=sep)
        elif sep == WHITESPACE_SEP:
            rows = (line.split() for line in fh)
        else:
            rows = (line.rstrip("\r\n").split(sep) for line in fh)
        lines, first = [], None
        try:
            for i, fields in enumerate(rows):
                if len(fields) > n_columns and any(f.strip() for f in fields[n_columns:]):
                    raise ValueError(f"{what} line {i + 1} has {len(fields)} fields but the "
                                     f"file has {n_columns} column(s); a row must not hold more fields than "
                                     f"{named_by} names")
                if fields and fields != [""]:
                    lines.append(rows.line_num if len(sep) == 1 else i + 1)
                    if first is None:
                        first = [f.strip().lstrip("\ufeff").strip() for f in fields]
        except csv.Error as exc:
            # a field beyond csv.field_size_limit() (131,072 characters): was the bare '_csv.Error: field
            # larger than field limit (131072)', naming neither the file nor the line
            raise ValueError(f"{what} line {rows.line_num}: {exc}; expected fields of at most "
                             f"{csv.field_size_limit()} characters") from None
    return lines, first or []


def _check_drop_ratings(drop_ratings):
    """``drop_ratings`` as a tuple of str and finite real numbers."""
    if isinstance(drop_ratings, (str, bytes)) or not hasattr(drop_ratings, "__iter__"):
        raise TypeError(f"drop_ratings must be a list of ratings to leave out (for example [0] or ['NA', '']), "
                        f"got {drop_ratings!r}")
    out = tuple(drop_ratings)
    for v in out:
        ok = isinstance(v, str) or (isinstance(v, (int, float, np.integer, np.floating))
                                    and not isinstance(v, (bool, np.bool_)) and np.isfinite(v))
        if not ok:
            raise TypeError(f"drop_ratings holds {v!r}; expected strings (matched against the rating's text) or "
                            "finite numbers (matched against its value)")
    return out


def _maybe_numeric(series):
    """Integer ids when every id is an integer written plainly (``str(int(id)) == id`` up to surrounding
    spaces), else the strings, without their surrounding spaces (``" A1"`` and ``"A1"`` are one id, as
    ``" 1"`` and ``"1"`` always were).

    numpy's parser reads ``"01"``, ``"+1"`` and ``"1_0"`` as 1, 1 and 10: users ``"1"`` and ``"01"`` (or
    zip-code items ``"7"`` and ``"007"``) used to become one user, silently.
    """
    values = np.char.strip(series.to_numpy(dtype=object).astype(str))
    try:
        as_int = values.astype(np.int64)
    except (ValueError, OverflowError):
        return values
    if not np.array_equal(as_int.astype(str), values):
        return values
    return as_int
