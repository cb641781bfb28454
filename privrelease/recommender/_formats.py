"""Rating formats: long form (user, item, rating), a user x item sparse matrix, and Surprise.

Every estimator of privrelease takes ratings as a user x item matrix (0 = not
rated). Data usually arrives in LONG form, one row per rating (a pandas
DataFrame with a user column, an item column and a rating column), or as a
Surprise ``Dataset`` / ``Trainset``. :class:`RatingsFrame` is the one converter
between them: it learns the id mappings once (``user_ids_``, ``item_ids_``), so a
matrix row or column always maps back to the caller's ids, and a released matrix
can be written back in long form or handed to Surprise with the original ids.
"""

import unicodedata
import warnings
import weakref
from collections.abc import Hashable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..utils import check_rating_scale
from ..utils._validation import (canonical_sparse, check_bool_number_mix, check_ids, check_no_time_values,
                                 check_not_subnormal, check_table, is_sparse_frame, plain_value, ratings_in_dtype,
                                 sparse_frame_as_csr, user_stacklevel, warn_duplicate_entries)

__all__ = ["RatingsFrame"]


def _surprise():
    try:
        import surprise
    except ImportError as exc:  # pragma: no cover - surprise is a dependency
        raise ImportError("the Surprise formats need scikit-surprise (pip install scikit-surprise)") from exc
    return surprise


def _normal_form_hint(unknown, user_ids):
    """The first unknown str id equal to a str user id once both are in Unicode normal form NFC, named with
    that user id (an id typed in NFD, as macOS file names are, next to the same id in NFC: nothing in the
    warning said why they differed), or ``""``."""
    strs = [u for u in unknown if isinstance(u, str)]
    if not strs:
        return ""
    by_nfc = {}
    for u in user_ids:
        if isinstance(u, str):
            by_nfc.setdefault(unicodedata.normalize("NFC", u), u)
    for u in strs:
        match = by_nfc.get(unicodedata.normalize("NFC", u))
        if match is not None:
            return (f"; {u!r} differs from user {match!r} only in Unicode normal form "
                    f"({_normal_form(u)} and {_normal_form(match)}: normalize both, e.g. "
                    f"unicodedata.normalize('NFC', id))")
    return ""

#: beyond this magnitude a float64 no longer holds every integer: 2**60 + 1 written as a float is 2**60
_EXACT_FLOAT_INTS = 2**53


def _scalar(v):
    return v.item() if isinstance(v, np.generic) else v


def _is_int_id(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_float_id(v):
    return isinstance(v, (float, np.floating))


def _kinds(index):
    """Whether ``index`` may hold integers and whether it may hold floats (an object index is looked into)."""
    kind = index.dtype.kind
    if kind in "iu":
        return True, False
    if kind == "f":
        return False, True
    if kind == "O":
        values = index.tolist()
        return any(_is_int_id(v) for v in values), any(_is_float_id(v) for v in values)
    return False, False


def exact_positions(ids, labels, name="values"):
    """Where each of ``labels`` sits in the unique ``ids`` (-1: nowhere), matching a float label with an integer id
    only when it equals it exactly.

    pandas compares an integer index with float labels as floats: the float 1.152921504606847e+18 (what a CSV
    column of ids ``2**60 + 1`` holding a blank becomes) matched the users ``2**60 + 1``, ``2**60 + 3`` and
    ``2**60 + 5``, giving the three of them one user's label. A float label that several integer ids round to,
    or that an integer id rounds to without being equal to it, cannot say which user it was written for: a
    ValueError names it.
    """
    ids, labels = pd.Index(ids), pd.Index(labels)
    try:
        at = ids.get_indexer(labels)
    except (TypeError, ValueError):
        at = np.full(len(labels), -1)
    ids_int, ids_float = _kinds(ids)
    labels_int, labels_float = _kinds(labels)
    if not ((ids_int and labels_float) or (ids_float and labels_int)):
        return at
    id_values = [_scalar(v) for v in ids.tolist()]
    rounded = {}  # float value -> positions of the integer ids that round to it
    if labels_float:
        for k, v in enumerate(id_values):
            if _is_int_id(v) and abs(v) < 2**1000:
                rounded.setdefault(float(v), []).append(k)
    at = at.copy()
    for j, label in enumerate(_scalar(v) for v in labels.tolist()):
        if at[j] >= 0 and not (id_values[at[j]] == label):  # Python compares an int and a float exactly
            at[j] = -1
        if not _is_float_id(label) or label not in rounded:
            continue
        near = rounded[label]
        exact = [k for k in near if id_values[k] == label]
        if len(near) == 1 and exact:
            at[j] = exact[0]
            continue
        users = ", ".join(repr(id_values[k]) for k in near[:3]) + (" ..." if len(near) > 3 else "")
        raise ValueError(
            f"{name} has the float id {label!r}, which cannot say which user it names: the integer user id(s) "
            f"{users} all read {label!r} as floats (a float64 holds every integer only up to 2**53 = "
            f"{_EXACT_FLOAT_INTS}; beyond, digits are lost, as when a CSV column of ids holding a blank is read as "
            "floats); give the ids as integers (for example read them with dtype={'user': 'Int64'} or as str)")
    return at


def _label_positions(labels, ids, axis, what):
    """Where each of ``ids`` sits in a DataFrame's ``labels`` (its index or columns): ``None`` when they are
    paired by position (the same labels in the same order, or a default ``0, 1, 2 ...`` that is not a reordering
    of the ids), the positions when ``labels`` hold exactly ``ids`` in another order; a ValueError naming the
    first mismatch otherwise."""
    unique = not labels.has_duplicates
    if unique and len(labels) == len(ids):
        at = exact_positions(labels, ids, name=f"X.{axis}")  # a float label of an integer id refused here
        if np.all(at == np.arange(len(ids))):
            return None
        if np.all(at >= 0):
            return at
    if isinstance(labels, pd.RangeIndex) and labels.start == 0 and labels.step == 1:
        return None  # no labels: paired by position (the shape is checked after)
    where = "row" if axis == "index" else "column"
    if not unique:
        dup = plain_value(labels[labels.duplicated()][0])
        first = f"X.{axis} holds {dup!r} more than once"
    else:
        known = exact_positions(ids, labels, name=f"X.{axis}") >= 0
        if not known.all():
            k = int(np.flatnonzero(~known)[0])
            article = "a" if what == "user" else "an"
            first = f"{where} {k} of X is labelled {plain_value(labels[k])!r}, which is not {article} {what} id"
        else:
            missing = ids[exact_positions(labels, ids, name=f"X.{axis}") < 0]
            first = f"{what} {plain_value(missing[0])!r} has no {where} in X ({len(missing)} {what}(s) missing)"
    raise ValueError(
        f"X is a DataFrame whose {axis} {'does' if axis == 'index' else 'do'} not hold the {what} ids of this "
        f"RatingsFrame ({first}; expected "
        f"the {len(ids)} {what} ids {what}_ids_ in any order, for example {plain_value(ids[0])!r}); its {where}s "
        f"would be paired with the {what}s by position, giving them other {what}s' ratings: label them "
        f"(X.{axis} = rf.{what}_ids_ if the positions already match), or pass X.to_numpy()"
    )


def _refuse_missing_cells(X):
    """Refuse an object array or list, or a DataFrame of object or pandas nullable columns, holding a missing cell
    (None, pd.NA, NaN), naming their number and the first: a release holds ratings, 0 meaning 'not rated'
    (scipy read None as 0, and pandas' pd.NA failed with "boolean value of NA is ambiguous")."""
    if isinstance(X, pd.DataFrame):
        if all(isinstance(d, np.dtype) and d != object for d in X.dtypes):
            return  # a NaN of a float column: the non-finite ratings are named below
        missing = X.isna().to_numpy(dtype=bool)
    else:
        try:
            arr = np.asarray(X) if not isinstance(X, np.ndarray) else X
        except (TypeError, ValueError):
            return  # said by the conversion below
        if arr.dtype != object:
            return  # a float NaN: the non-finite ratings are named below
        missing = np.asarray(pd.isna(arr), dtype=bool)
    if missing.ndim != 2 or not missing.any():
        return
    r, c = np.argwhere(missing)[0]
    raise ValueError(f"X holds {int(missing.sum())} missing rating(s) (NaN, None or pd.NA; the first at row {r}, "
                     f"column {c}); a released rating is a finite number, 0 meaning 'not rated': fill them with 0 "
                     "(X.fillna(0) or np.nan_to_num(X, nan=0.0))")


def _warn_left_out(target, n_users, kept_users, n_items, kept_items):
    """Say that long-form rows (``target``) leave out the users and items with no stored rating, and where their
    ids are."""
    warnings.warn(
        f"{target} holds {kept_users} of the {n_users} users and {kept_items} of the {n_items} items: "
        f"{n_users - kept_users} user(s) and {n_items - kept_items} item(s) have no stored rating, and long form "
        "has no row for them; every id is kept in the long-form frame's attrs['ids'] (user_ids, item_ids; "
        "RatingsFrame().fit(frame) maps them all again)", UserWarning, stacklevel=user_stacklevel())


def _first_time(seen, key):
    """Whether the users and items lost ``key`` names are told now: ``seen`` (a converter's set of what it said)
    is None or does not hold it yet (then it does). One filtered frame fitted and then converted warned twice of
    one loss."""
    if seen is None:
        return True
    if key in seen:
        return False
    seen.add(key)
    return True


def _warn_recorded_ids_lost(ids, user_ids, item_ids, target, advice, seen=None):
    """Say how many of the ids a release recorded in its long form (``ids``, a :class:`RatingIds`) ``user_ids``
    and ``item_ids`` leave out, when some of them had no stored rating when written; once for each set of lost
    users and items ``seen`` records (see :func:`_first_time`).

    A frame that is no longer the one written (filtered, edited, concatenated) does not read its ``attrs["ids"]``
    back: its rows name the users and items it maps. A user removed with her rows was removed on purpose; a user
    with no stored rating had no row to remove, and was dropped without a word (40 users read back as 30)."""
    counts, lost = [], []
    for known, rated, kept in ((ids.user_ids, ids.rated_users, user_ids), (ids.item_ids, ids.rated_items, item_ids)):
        try:
            missing = exact_positions(kept, known) < 0
        except ValueError:  # a float id several integer ids read as: named where the rows are read
            return
        counts.append((int(np.sum(missing & ~rated)), int(np.sum(missing & rated))))
        lost.append(tuple(known[missing & ~rated]))
    (users_unrated, users_removed), (items_unrated, items_removed) = counts
    if not users_unrated and not items_unrated:
        return  # what is missing had rows, and the rows were removed: on purpose
    if not _first_time(seen, ("ids", *lost)):
        return
    removed = (f" (besides {users_removed} user(s) and {items_removed} item(s) whose rows are not in the frame)"
               if users_removed or items_removed else "")
    warnings.warn(
        f"the frame's attrs['ids'] records the {len(ids.user_ids)} users and {len(ids.item_ids)} items of a release "
        "written in long form, but its rows no longer name exactly the users and items written (a filtered or "
        "edited frame), so those ids are not read back: {} user(s) and {} item(s) with no stored rating when "
        "written are not in {}{}; {}".format(users_unrated, items_unrated, target, removed, advice),
        UserWarning, stacklevel=user_stacklevel())


def _warn_counted_ids_lost(counts, n_users, n_items, target, seen=None):
    """Say that ``n_users`` and ``n_items`` fall short of the counts ``{"n_users", "n_items", ...}`` a released frame's
    ``attrs["ids"]`` keeps through a parquet file (its ids are lost there): users without a stored rating were
    dropped without a word. Once for each loss ``seen`` records (see :func:`_first_time`)."""
    try:
        recorded = int(counts["n_users"]), int(counts["n_items"])
    except (KeyError, TypeError, ValueError, OverflowError):
        return  # another attrs["ids"]: not one of a release
    try:  # the users and items without a row: what the file lost (rows removed since were removed on purpose)
        unrated = int(counts["n_unrated_users"]), int(counts["n_unrated_items"])
    except (KeyError, TypeError, ValueError, OverflowError):
        unrated = None  # written before the counts were kept: any shortfall is said
    if (recorded[0] <= n_users and recorded[1] <= n_items) if unrated is None else unrated == (0, 0):
        return
    if not _first_time(seen, ("counts", recorded, unrated if unrated is not None else (n_users, n_items))):
        return
    if unrated is not None:
        missing = (f"{unrated[0]} user(s) and {unrated[1]} item(s) of them without a stored rating: those are not in "
                   f"{target}")
    else:
        missing = (f"but its rows name {n_users} users and {n_items} items: {max(recorded[0] - n_users, 0)} user(s) "
                   f"and {max(recorded[1] - n_items, 0)} item(s) (without a stored rating, or whose rows were removed) "
                   f"are not in {target}")
    warnings.warn(
        f"the frame's attrs['ids'] counts the {recorded[0]} users and {recorded[1]} items of a release written in "
        f"long form, {missing}; only the counts were kept (a parquet file writes attrs as JSON: the ids themselves "
        "are lost), so keep the ids beside the file (rf.user_ids_, rf.item_ids_) or pickle the frame",
        UserWarning, stacklevel=user_stacklevel())


def _normal_form(text):
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        if unicodedata.is_normalized(form, text):
            return form
    return "no normal form"


class RatingIds(dict):
    """Every user and item id of a :class:`RatingsFrame` (each row and column of its matrix).

    :meth:`RatingsFrame.from_matrix` puts it in the long-form frame it returns, as ``released.attrs["ids"]``:
    long form holds no user (item) without a stored rating, so a release's empty rows and columns are kept
    here. :meth:`RatingsFrame.fit` reads it back (``RatingsFrame().fit(released)`` maps every user and item
    of the matrix again, in its order). As a mapping it holds the counts ``{"n_users", "n_items",
    "n_unrated_users", "n_unrated_items"}`` (the last two: users and items without a stored rating),
    what a file format that writes a frame's ``attrs`` as JSON (``to_parquet``) keeps of it.

    The ids are read back only for a frame whose rows still name exactly the users and items they named when
    written (pandas carries ``attrs`` through filters: a user removed from the frame on purpose came back, with
    her row released again); a frame of other users or items maps the ids of its rows, and a ``UserWarning``
    says how many of the recorded users and items without a stored rating it leaves out.

    What a file keeps of a released frame:

    * ``DataFrame.to_pickle`` / ``pandas.read_pickle``: everything, this object included (the ids of the users
      and items without a stored rating come back and are read back);
    * ``DataFrame.to_parquet`` / ``pandas.read_parquet``: the rows (ids and ratings, their dtypes) and, of
      ``attrs["ids"]``, only the counts, as a plain dict (``n_users``, ``n_items``, ``n_unrated_users``,
      ``n_unrated_items``): the ids of the users and items without a stored rating are lost.
      :meth:`RatingsFrame.fit` of such a frame maps the ids of its rows and warns when some had no stored rating
      (how many users and items are missing; rows removed after reading are not counted as lost);
    * CSV and the other text formats: the rows only (no ``attrs``).

    To keep every id through a parquet file, write the ids beside it (``rf.user_ids_``, ``rf.item_ids_``) or
    pickle the frame. pandas' ``merge`` (a release joined with side data) does not carry ``attrs``: the merged frame
    has no record of the users and items without a rating, and nothing can warn; merge after converting back
    (``RatingsFrame().fit(released)``), or keep the ids as above.

    Attributes
    ----------
    user_ids : pandas.Index
        User id of each matrix row.
    item_ids : pandas.Index
        Item id of each matrix column.
    rated_users, rated_items : ndarray of bool
        Which users (items) had a row in the frame written (a stored rating).
    """

    def __init__(self, user_ids, item_ids, rated_users=None, rated_items=None):
        self.user_ids = pd.Index(user_ids)
        self.item_ids = pd.Index(item_ids)
        self.rated_users = np.ones(len(user_ids), bool) if rated_users is None else np.asarray(rated_users, bool)
        self.rated_items = np.ones(len(item_ids), bool) if rated_items is None else np.asarray(rated_items, bool)
        # the counts a parquet file keeps: how many users and items had no row (lost there), told apart from rows
        # removed on purpose after reading (a sample of a parquet release warned as if users were lost)
        super().__init__(n_users=len(user_ids), n_items=len(item_ids),
                         n_unrated_users=int(np.sum(~self.rated_users)), n_unrated_items=int(np.sum(~self.rated_items)))

    def check(self, name):
        """Refuse ids a frame's rows could not hold (``name``: where they were read): a missing id, a repeated
        one, a control character (``check_ids``), or rated-flags of another length. ``attrs`` is a plain dict a
        user may edit or unpickle: its ids were trusted (a repeated id raised pandas' InvalidIndexError, a NaN or
        NUL id refused in the rows came in through them)."""
        for what, ids, rated in (("user", self.user_ids, self.rated_users), ("item", self.item_ids, self.rated_items)):
            where = f"{name}.{what}_ids"
            if isinstance(ids, pd.MultiIndex):  # tuple ids given as a list: one id per tuple (isna is undefined)
                ids = pd.Index(ids.to_flat_index(), tupleize_cols=False)
            if ids.hasnans:
                raise ValueError(f"{where} holds a missing id (position {int(np.flatnonzero(ids.isna())[0])}); "
                                 f"every {what} needs an id")
            if not ids.is_unique:
                dup = ids[ids.duplicated()][0]
                raise ValueError(f"{where} holds the id {plain_value(dup)!r:.60} more than once; each {what} of the "
                                 "matrix has one id")
            if rated.shape != (len(ids),):
                raise ValueError(f"{name}.rated_{what}s has shape {rated.shape}, expected ({len(ids)},): one flag per "
                                 f"{what} id")
            # the ids of the rows were checked with them (their warnings given once): the others here
            unrated = np.flatnonzero(~rated)
            check_ids(ids[unrated].to_numpy(), where, where=lambda i: f"position {unrated[i]}, without a rating")

    def matches(self, users, items):
        """Whether the rows' ``users`` and ``items`` are exactly those of the frame written (each id of a rated
        user or item present, no other)."""
        for known, rated, values in ((self.user_ids, self.rated_users, users), (self.item_ids, self.rated_items, items)):
            at = exact_positions(known, values)
            if np.any(at < 0):
                return False
            present = np.zeros(len(known), bool)
            present[at] = True
            if not np.array_equal(present, rated):
                return False
        return True

    def __deepcopy__(self, memo):
        # pandas copies a frame's attrs at every operation: the ids never change (an Index is immutable)
        return self

    def __reduce__(self):
        return type(self), (self.user_ids, self.item_ids, self.rated_users, self.rated_items)

    def __eq__(self, other):
        return self is other or (isinstance(other, RatingIds) and self.user_ids.equals(other.user_ids)
                                 and self.item_ids.equals(other.item_ids)
                                 and np.array_equal(self.rated_users, other.rated_users)
                                 and np.array_equal(self.rated_items, other.rated_items))

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return f"RatingIds({len(self.user_ids)} users, {len(self.item_ids)} items)"


class RatingsFrame:
    """Convert ratings between long form, a sparse user x item matrix and Surprise, keeping the ids.

    Parameters
    ----------
    user : str, default="user"
        Column of the user ids in long-form frames.
    item : str, default="item"
        Column of the item ids.
    rating : str, default="rating"
        Column of the ratings (numbers, nonzero: 0 means "not rated" in the matrix).
    sort_ids : bool, default=True
        Order rows and columns by sorted id (``False``: by first appearance).
        Ids that cannot be compared (for example ints beside strings) need
        ``sort_ids=False``.

    Attributes
    ----------
    user_ids_ : pandas.Index
        Raw user id of each matrix row.
    item_ids_ : pandas.Index
        Raw item id of each matrix column.

    See Also
    --------
    privrelease.recommender.SurpriseRecommender : takes the matrix (and the ids,
        ``fit(X, user_ids=rf.user_ids_, item_ids=rf.item_ids_)``).

    Notes
    -----
    Ids are keys, kept exactly as given. An id holding a control character (a NUL, a tab: what a broken
    parse leaves, and what cuts an id in the files written) is refused. Two ids that differ only in spaces
    around them, in invisible format characters (zero-width space, byte-order mark, soft hyphen, direction
    mark) or in their Unicode normal form (``'José'`` composed, NFC, and decomposed, NFD) print alike: they
    stay two ids, and a ``UserWarning`` names the first such pair (write them one way first if they are one
    user). An id holding invisible characters that prints like no other is kept without a word (real names
    hold them). A subnormal rating (``1e-320``) is refused.

    This is the documented path from long-form or Surprise data to the mappers::

        rf = RatingsFrame().fit(ratings)            # ratings: DataFrame user, item, rating
        X = rf.to_matrix(ratings)                   # CSR, rows = rf.user_ids_, columns = rf.item_ids_
        X_released = mapper.fit(X, y).transform(X)  # y: one label per row of X (rf.align(labels))
        released = rf.from_matrix(X_released)       # long form again, the original ids

    Examples
    --------
    >>> import pandas as pd
    >>> from privrelease.recommender import RatingsFrame
    >>> df = pd.DataFrame({"user": ["ann", "bob", "ann"], "item": [10, 10, 30], "rating": [4, 2, 5]})
    >>> rf = RatingsFrame().fit(df)
    >>> X = rf.to_matrix(df)
    >>> X.toarray().tolist(), list(rf.user_ids_), list(rf.item_ids_)
    ([[4.0, 5.0], [2.0, 0.0]], ['ann', 'bob'], [10, 30])
    >>> rf.from_matrix(X).to_dict("list")
    {'user': ['ann', 'ann', 'bob'], 'item': [10, 30, 10], 'rating': [4.0, 5.0, 2.0]}
    """

    def __init__(self, user="user", item="item", rating="rating", *, sort_ids=True):
        for name, value in (("user", user), ("item", item), ("rating", rating)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a column name (str), got {value!r} of type {type(value).__name__}")
        if len({user, item, rating}) != 3:
            raise ValueError(f"user, item and rating must name three different columns, got {(user, item, rating)!r}")
        if not isinstance(sort_ids, (bool, np.bool_)):
            raise TypeError(f"sort_ids must be a bool, got {sort_ids!r}")
        self.user = user
        self.item = item
        self.rating = rating
        self.sort_ids = bool(sort_ids)

    def __repr__(self):
        return (f"RatingsFrame(user={self.user!r}, item={self.item!r}, rating={self.rating!r}, "
                f"sort_ids={self.sort_ids!r})")

    def _lost_told(self, frame):
        """The sets of lost users and items this converter warned of for ``frame`` (each said once per frame:
        :meth:`fit` and :meth:`to_surprise` of one filtered frame told one loss twice); another frame, a refit on
        another frame, a copy or an unpickled converter start afresh (None when ``frame`` cannot be remembered:
        every call warns)."""
        memo = self.__dict__.get("_lost_warned")
        if memo is None or memo[0]() is not frame:
            try:
                memo = (weakref.ref(frame), set())
            except TypeError:
                return None
            self._lost_warned = memo
        return memo[1]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lost_warned", None)  # what this session warned of, for a frame of this session
        return state

    # ------------------------------------------------------------------ checks
    def _check_frame(self, ratings):
        if not isinstance(ratings, pd.DataFrame):
            raise TypeError(f"ratings must be a pandas DataFrame in long form (one row per rating), got "
                            f"{type(ratings).__name__}")
        missing = [c for c in (self.user, self.item, self.rating) if c not in ratings.columns]
        if missing:
            in_index = [c for c in missing if c in ratings.index.names]
            hint = (f"; {in_index!r} {'is an index level' if len(in_index) == 1 else 'are index levels'}: "
                    "pass ratings.reset_index()" if in_index else " (set user=, item=, rating= to name them)")
            if len(missing) == 3 and not in_index:  # a wide matrix (a row per user, a column per item)
                hint = (" (set user=, item=, rating= to name them; a wide user x item matrix, one row per user and "
                        "one column per item, goes through from_matrix, its rows and columns labelled by user_ids_ "
                        "and item_ids_ or in their order)")
            raise ValueError(f"ratings has no column(s) {missing!r}; its columns are {list(ratings.columns)!r}{hint}")
        for c in (self.user, self.item, self.rating):
            selected = ratings[c]
            if isinstance(selected, pd.DataFrame):  # pandas then failed with "The truth value of a Series is ambiguous"
                raise ValueError(f"ratings[{c!r}] selects {selected.shape[1]} column(s) {list(selected.columns)!r} (a "
                                 "column name given twice, or the first level of column names in several levels); "
                                 "expected one column each for the user, the item and the rating")
        for col in (self.user, self.item):
            if ratings[col].isna().any():
                row = int(np.flatnonzero(ratings[col].isna().to_numpy())[0])
                raise ValueError(f"ratings[{col!r}] has a missing id (row {row}); every rating needs a user "
                                 "and an item")
            check_bool_number_mix(ratings[col].to_numpy(), f"ratings[{col!r}]", what=f"{col} id")
            values = ratings[col].tolist() if ratings[col].dtype == object else ()
            unhashable = next((v for v in values if not isinstance(v, Hashable)), None)
            if unhashable is not None:  # pandas' "unhashable type: 'list'" did not say where
                raise TypeError(f"ratings[{col!r}] must hold hashable ids (numbers, strings, tuples), got "
                                f"{unhashable!r} of type {type(unhashable).__name__}")
            check_ids(ratings[col].to_numpy(), f"ratings[{col!r}]")  # a NUL refused; ids printing alike warned
        # pandas reads dates and durations as numbers: a datetime64 rating column became ratings of 1.6e15 (its
        # microseconds since 1970), a timedelta one its microseconds, without a word
        check_no_time_values(ratings[[self.rating]], "ratings")
        r = pd.to_numeric(ratings[self.rating], errors="coerce")
        bad = r.isna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"ratings[{self.rating!r}] must hold numbers, got "
                             f"{plain_value(ratings[self.rating].iloc[row])!r} "
                             f"at row {row}")
        if r.dtype.kind not in "biuf":
            raise TypeError(f"ratings[{self.rating!r}] must hold real numbers, got dtype {r.dtype} "
                            f"(for example {plain_value(ratings[self.rating].iloc[0])!r})")
        r = r.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(r)):
            row = int(np.flatnonzero(~np.isfinite(r))[0])
            raise ValueError(f"ratings[{self.rating!r}] must be finite, got {plain_value(r[row])!r} at row {row}")
        check_not_subnormal(r, f"ratings[{self.rating!r}]", where=lambda i: f"row {i}")
        if np.any(r == 0):
            row = int(np.flatnonzero(r == 0)[0])
            raise ValueError(f"ratings[{self.rating!r}] holds 0 at row {row}; 0 means 'not rated' in a rating "
                             "matrix, so a rating must be nonzero (shift the scale, for example 0-4 to 1-5)")
        dup = ratings.duplicated([self.user, self.item])
        if dup.any():
            row = int(np.flatnonzero(dup.to_numpy())[0])
            raise ValueError(f"user {plain_value(ratings[self.user].iloc[row])!r} rates item "
                             f"{plain_value(ratings[self.item].iloc[row])!r} "
                             f"more than once (row {row}); keep one rating per (user, item) pair")
        return r

    def _index(self, values, what):
        uniq = pd.unique(pd.Series(values, dtype=object) if values.dtype == object else values)
        if self.sort_ids:
            try:
                uniq = np.sort(uniq)
            except TypeError:
                raise TypeError(f"the {what} ids cannot be sorted (mixed types such as "
                                f"{sorted({type(v).__name__ for v in uniq})!r}); use sort_ids=False") from None
        return pd.Index(uniq)

    def _check_fitted(self):
        if not hasattr(self, "user_ids_"):
            raise AttributeError("this RatingsFrame has no id mappings yet; call fit(ratings) or "
                                 "RatingsFrame.from_surprise(...) first")

    # ------------------------------------------------------------------ long form
    def fit(self, ratings):
        """Learn the id mappings (one row per user, one column per item) from a long-form frame.

        Parameters
        ----------
        ratings : pandas.DataFrame
            One row per rating, with the ``user``, ``item`` and ``rating`` columns.
            A frame of :meth:`from_matrix` carries every id of its matrix
            (``ratings.attrs["ids"]``, a :class:`RatingIds`): those are the
            mappings, users and items without a rating included, when every id
            of its rows is among them.

        Returns
        -------
        self

        Warns
        -----
        UserWarning
            A frame of :meth:`from_matrix` that no longer holds the rows written (filtered after it was
            written, or read from a parquet file, which keeps only the counts of ``attrs["ids"]``): how many
            of the recorded users and items its mappings leave out (see :class:`RatingIds`).
        """
        self._check_frame(ratings)
        if len(ratings) == 0:  # a converter of no user: align then failed with an IndexError, a mapper on 0 rows
            raise ValueError(f"ratings holds no rating (0 rows, columns {list(ratings.columns)!r}); the id mappings "
                             "are learnt from at least one (user, item, rating) row")
        ids = ratings.attrs.get("ids")
        if isinstance(ids, RatingIds):
            ids.check('ratings.attrs["ids"]')
        if isinstance(ids, RatingIds) and ids.matches(ratings[self.user], ratings[self.item]):
            # a release written back by from_matrix (its rows' users and items as written): its users and items
            # without a stored rating too, in order
            self.user_ids_, self.item_ids_ = ids.user_ids, ids.item_ids
            return self
        self.user_ids_ = self._index(ratings[self.user].to_numpy(), "user")
        self.item_ids_ = self._index(ratings[self.item].to_numpy(), "item")
        if isinstance(ids, RatingIds):
            # a release's frame filtered after it was written: its users and items without a rating were dropped
            # without a word
            _warn_recorded_ids_lost(ids, self.user_ids_, self.item_ids_, "the id mappings (user_ids_, item_ids_)",
                                    "to map every recorded id, fit on the frame as written "
                                    "(RatingsFrame().fit(released)) and convert the subset with its to_matrix",
                                    seen=self._lost_told(ratings))
        elif isinstance(ids, dict):  # the counts a parquet file keeps of the ids
            _warn_counted_ids_lost(ids, len(self.user_ids_), len(self.item_ids_),
                                   "the id mappings (user_ids_, item_ids_)", seen=self._lost_told(ratings))
        return self

    @property
    def shape(self):
        """``(n_users, n_items)`` of the matrices this converter writes."""
        self._check_fitted()
        return len(self.user_ids_), len(self.item_ids_)

    def to_matrix(self, ratings):
        """The user x item CSR matrix of a long-form frame (0 = not rated).

        Parameters
        ----------
        ratings : pandas.DataFrame
            Long-form ratings with the ``user``, ``item`` and ``rating`` columns,
            every id seen by :meth:`fit`.

        Returns
        -------
        X : scipy.sparse.csr_matrix of shape (n_users, n_items)
            Rows in ``user_ids_`` order, columns in ``item_ids_`` order, float64.

        Raises
        ------
        ValueError
            A user or item id that :meth:`fit` did not see, a duplicate
            (user, item) pair, a zero, missing or non-numeric rating.
        """
        self._check_fitted()
        r = self._check_frame(ratings)
        # exactly: a float user column (2**60 + 1 read as 1.152921504606847e+18) gave one user's ratings to others
        rows = exact_positions(self.user_ids_, ratings[self.user], name=f"ratings[{self.user!r}]")
        cols = exact_positions(self.item_ids_, ratings[self.item], name=f"ratings[{self.item!r}]")
        for what, idx, col in (("user", rows, self.user), ("item", cols, self.item)):
            if np.any(idx < 0):
                unknown = pd.unique(ratings[col].to_numpy()[idx < 0])
                raise ValueError(f"{len(unknown)} {what} id(s) unknown to this RatingsFrame, for example "
                                 f"{plain_value(unknown[0])!r}; fit it on every rating first")
        X = sp.csr_matrix((r, (rows, cols)), shape=self.shape, dtype=np.float64)
        X.sort_indices()
        return X

    def from_matrix(self, X):
        """Long form of a user x item matrix (its stored nonzero entries), with the original ids.

        Long form holds no user (item) without a stored rating: a release may have such empty rows (columns).
        Every id is kept in the result's ``attrs["ids"]`` (a :class:`RatingIds`: ``user_ids``, ``item_ids``,
        which :meth:`fit` reads back), and a ``UserWarning`` counts the users and items the rows leave out.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_users, n_items)
            For example a mapper's release of :meth:`to_matrix`'s output. A
            DataFrame (dense or sparse) is read by its labels: when its index
            holds exactly ``user_ids_`` and its columns exactly ``item_ids_``
            (in any order), its rows and columns are matched by id; a default
            index or default columns (``0, 1, 2 ...``) are read by position.

        Returns
        -------
        pandas.DataFrame
            Columns ``user``, ``item``, ``rating``, sorted by row then column. The
            ratings keep ``X``'s dtype (a DataFrame's columns' common dtype, the
            numpy one of pandas' nullable ``Int64``, ``Float32`` ...; float64 for a
            list or an object array).

        Raises
        ------
        ValueError
            A DataFrame whose index (or columns) holds other labels than the
            user (item) ids: its rows would be paired with users by position. A
            missing cell (NaN, None, pd.NA) or an infinite rating.

        Warns
        -----
        UserWarning
            A sparse ``X`` storing a (user, item) pair more than once: it is
            read as scipy reads it, as one rating, the sum of the entries.
            Users or items with no stored rating in ``X`` (not in the rows;
            their ids are in ``attrs["ids"]``).
        """
        return self._from_matrix(X, "the long form")

    def _from_matrix(self, X, target):
        """:meth:`from_matrix`; ``target`` names what the rows become in the warning about empty users and items."""
        self._check_fitted()
        check_table(X)  # complex values, masked entries, ragged rows
        # a 1-D scipy sparse array (scipy >= 1.15) was "X must hold real-number ratings, got shape must have length
        # in (2,)"
        shape = X.shape if sp.issparse(X) else np.shape(X)
        if len(shape) != 2:
            raise ValueError(f"X must be a 2-D user x item matrix, got an array of shape {shape}")
        # the ratings' dtype: an int8 or float32 release came back as float64 ratings
        dtype = getattr(X, "dtype", None)
        dtype = dtype if isinstance(dtype, np.dtype) and dtype.kind in "biuf" else np.dtype(np.float64)
        rows_at = cols_at = None
        if isinstance(X, pd.DataFrame):
            # a frame's rows and columns are labelled: a mapper's release of a frame indexed by user id in another
            # order than user_ids_ was written back with every user given another user's ratings
            rows_at = _label_positions(X.index, self.user_ids_, "index", "user")
            cols_at = _label_positions(X.columns, self.item_ids_, "columns", "item")
            # a float32 frame came back as float64 ratings, and an Int64 one (a mapper's release of an Int64 frame)
            kinds = [d.subtype if isinstance(d, pd.SparseDtype) else d if isinstance(d, np.dtype)
                     else getattr(d, "numpy_dtype", d) if getattr(d, "_is_numeric", False) else d for d in X.dtypes]
            if kinds and all(isinstance(d, np.dtype) and d.kind in "biuf" for d in kinds):
                dtype = np.result_type(*kinds)
            if is_sparse_frame(X):  # never densified; filled with NaN: pandas' to_coo refused it
                X = sparse_frame_as_csr(X)
        # a re-rated pair kept twice (triples of a file turned into a COO matrix) is read as the sum of its entries
        # and said once, as at every other entry point
        warn_duplicate_entries(X)
        if not sp.issparse(X):
            _refuse_missing_cells(X)  # csr_matrix reads None as 0 ('not rated') and fails on pd.NA
        try:
            X = sp.csr_matrix(X, dtype=np.float64) if not sp.issparse(X) else sp.csr_matrix(X).astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"X must hold real-number ratings, got {exc}") from None
        if X.shape != self.shape:
            raise ValueError(f"X has shape {X.shape} but this RatingsFrame maps {self.shape[0]} users x "
                             f"{self.shape[1]} items")
        if rows_at is not None:
            X = X[rows_at]
        if cols_at is not None:
            X = X[:, cols_at]
        X = canonical_sparse(X).copy()  # a rating stored as two summands was two long-form rows
        if not np.all(np.isfinite(X.data)):
            bad = X.data[~np.isfinite(X.data)][0]
            raise ValueError(f"X holds {int(np.sum(~np.isfinite(X.data)))} non-finite rating(s) (for example "
                             f"{plain_value(bad)!r}); a released rating is a finite number, 0 meaning 'not rated'")
        X.sort_indices()
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        # a rating stored as two summands summed in float64: refused if an integer dtype cannot hold the sum
        # (scipy wrapped it around); a bool one holds True whatever the sum, as scipy reads it
        ratings = X.data if dtype.kind == "b" else ratings_in_dtype(
            X.data, dtype, what="ratings", source="summing the entries stored twice")
        out = pd.DataFrame({self.user: self.user_ids_[rows], self.item: self.item_ids_[X.indices],
                            self.rating: ratings.astype(dtype)})
        out.attrs["ids"] = RatingIds(self.user_ids_, self.item_ids_, rated_users=np.diff(X.indptr) > 0,
                                     rated_items=np.bincount(X.indices, minlength=X.shape[1]) > 0)
        n_users = X.shape[0] - int(np.count_nonzero(np.diff(X.indptr) == 0))
        n_items = int(np.unique(X.indices).size)
        if n_users < X.shape[0] or n_items < X.shape[1]:
            # a release can have empty rows (a profile with no rating): 40 users came back as 30 without a word
            _warn_left_out(target, X.shape[0], n_users, X.shape[1], n_items)
        return out

    def align(self, values, *, name="values"):
        """Per-user values (a pandas Series indexed by user id, or a dict) in the matrix's row order.

        Users without a value get ``-1`` (the "not disclosed" marker of
        :func:`privrelease.utils.undisclosed_mask`), so private labels can be
        aligned with :meth:`to_matrix`'s rows directly. Ids are matched
        exactly: a float id matches the integer user id it equals, never
        another one that rounds to it (beyond ``2**53`` a float64 loses
        digits: such a float id is refused when an integer user id other
        than itself reads as it).

        Parameters
        ----------
        values : pandas.Series, pandas.DataFrame or dict
            Values indexed by user id (a DataFrame: one column per attribute).
        name : str, default="values"
            Name used in error messages and warnings.

        Returns
        -------
        ndarray of shape (n_users,), or DataFrame of shape (n_users, n_columns)
            The values in ``user_ids_`` order, ``-1`` for users without one: a
            1-D array of dtype object for a Series or a dict; for a DataFrame
            (several attributes), a DataFrame indexed by ``user_ids_`` with the
            same columns, so the attributes keep their names (in
            :func:`~privrelease.evaluation.privacy_utility_curve`'s columns, for
            example).

        Raises
        ------
        ValueError
            No id of ``values`` is a user id of this RatingsFrame (every user
            would be "not disclosed"), an id is given more than once, or a
            float id that integer user ids other than itself round to.

        Warns
        -----
        UserWarning
            Some ids of ``values`` match no user (for example the string
            ``'1'`` when the user ids are integers): their values are not in
            the result, so say how many and give an example.
        """
        self._check_fitted()
        if isinstance(values, dict):
            values = pd.Series(values)
        if not isinstance(values, (pd.Series, pd.DataFrame)):
            # the module too: a dask Series was "got Series", the very type asked for
            package = type(values).__module__.split(".")[0]
            kind = type(values).__name__ if package == "builtins" else f"{package}.{type(values).__name__}"
            hint = f" (a lazy collection: pass {name}.compute())" if hasattr(values, "compute") else ""
            raise TypeError(f"{name} must be a pandas Series (or DataFrame) indexed by user id, or a dict, got "
                            f"{kind}{hint}")
        dup = values.index.duplicated()
        if dup.any():  # pandas' "cannot reindex on an axis with duplicate labels" did not say which
            raise ValueError(f"{name} gives user {plain_value(values.index[dup][0])!r} more than one value "
                             f"({int(dup.sum())} repeated id(s)); expected one value per user id")
        # matched exactly (pandas' reindex read the float id 2**60 as the integer users 2**60 + 1, + 3 and + 5)
        at = self._check_label_ids(values.index, name)
        given = np.flatnonzero(at >= 0)
        # object values: an int64 column with a user left out became float64, merging 2**53 and 2**53 + 1
        if isinstance(values, pd.Series):
            out = pd.Series(-1, index=self.user_ids_, dtype=object, name=values.name)
        else:
            out = pd.DataFrame(-1, index=self.user_ids_, columns=values.columns, dtype=object)
        out.iloc[at[given]] = values.astype(object).iloc[given].to_numpy()
        out = out.where(out.notna(), -1)
        return out.to_numpy() if isinstance(values, pd.Series) else out

    def _check_label_ids(self, ids, name):
        """The row of each of ``ids`` (-1: no user); refuse labels none of whose ids is a user id, warn when some
        are not (their labels would be lost)."""
        at = exact_positions(self.user_ids_, ids, name=name)
        unknown = ids[at < 0]
        if len(unknown) == 0:
            return at
        example = plain_value(unknown[0])
        hint = ""
        same_text = pd.Index([str(u) for u in self.user_ids_]).get_indexer([str(example)])[0]
        if same_text >= 0:
            match = plain_value(self.user_ids_[same_text])
            hint = (f"; {example!r} ({type(example).__name__}) differs from user {match!r} "
                    f"({type(match).__name__}) only in type")
        else:
            hint = _normal_form_hint(unknown, self.user_ids_)
        what = (f"{len(unknown)} of the {len(ids)} ids of {name} match no user of this RatingsFrame, for "
                f"example {example!r}{hint}")
        if len(unknown) == len(ids):
            raise ValueError(f"{what}; every user would be 'not disclosed' (expected ids among the user ids, "
                             f"for example {plain_value(self.user_ids_[0])!r})")
        warnings.warn(f"{what}; their values are left out and users without a value get -1 ('not disclosed')",
                      UserWarning, stacklevel=user_stacklevel())
        return at

    # ------------------------------------------------------------------ Surprise
    def _as_frame(self, data):
        target = "the Surprise dataset"
        if isinstance(data, pd.DataFrame):
            if self._is_wide(data):  # a user x item matrix read as long form was refused for lacking 'user' ...
                return self._from_matrix(data, target)
            self._check_frame(data)
            ids = data.attrs.get("ids")
            if isinstance(ids, RatingIds):
                ids.check('data.attrs["ids"]')
            if isinstance(ids, RatingIds) and ids.matches(data[self.user], data[self.item]):
                # a frame of from_matrix as written: its users and items without a rating
                n_users, n_items = data[self.user].nunique(), data[self.item].nunique()
                if n_users < len(ids.user_ids) or n_items < len(ids.item_ids):
                    _warn_left_out(target, len(ids.user_ids), n_users, len(ids.item_ids), n_items)
            elif isinstance(ids, RatingIds):  # filtered after it was written: said too
                users, items = (pd.Index(pd.unique(data[c].to_numpy())) for c in (self.user, self.item))
                _warn_recorded_ids_lost(ids, users, items, target,
                                        "long form and a Surprise dataset hold no user or item without a rating",
                                        seen=self._lost_told(data))
            elif isinstance(ids, dict):  # the counts a parquet file keeps of the ids
                _warn_counted_ids_lost(ids, data[self.user].nunique(), data[self.item].nunique(), target,
                                       seen=self._lost_told(data))
            return data[[self.user, self.item, self.rating]]
        return self._from_matrix(data, target)

    def _is_wide(self, frame):
        """Whether ``frame`` is a user x item matrix rather than long form: it has none of the long-form columns,
        and its shape is this converter's, or its index holds user ids and its columns item ids."""
        if not hasattr(self, "user_ids_") or any(c in frame.columns for c in (self.user, self.item, self.rating)):
            return False
        if frame.shape == self.shape:
            return True
        return bool((exact_positions(self.user_ids_, frame.index, name="X.index") >= 0).any()
                    and (exact_positions(self.item_ids_, frame.columns, name="X.columns") >= 0).any())

    def to_surprise(self, data, *, rating_scale=(1, 5)):
        """A Surprise ``Dataset`` of long-form ratings or of a matrix, with the original raw ids.

        Parameters
        ----------
        data : pandas.DataFrame or {array-like, sparse matrix} of shape (n_users, n_items)
            Long-form ratings (the ``user``, ``item`` and ``rating`` columns), or a
            user x item matrix read by :meth:`from_matrix`: an array, a sparse
            matrix, or a wide DataFrame (none of the long-form columns) whose
            rows are the users and columns the items, labelled by ``user_ids_``
            and ``item_ids_`` or by position.
        rating_scale : (low, high), default=(1, 5)
            Passed to ``surprise.Reader``.

        Returns
        -------
        surprise.Dataset
        """
        check_rating_scale(rating_scale)
        surprise = _surprise()
        df = self._as_frame(data)
        r = df[self.rating].to_numpy(dtype=np.float64)
        low, high = rating_scale
        tol = 1e-9 * (high - low)  # a release averaged in floating point may sit an ulp outside
        out = (r < low - tol) | (r > high + tol)
        if out.any():
            # surprise keeps such ratings as they are and clips only its predictions
            raise ValueError(f"{int(out.sum())} rating(s) lie outside rating_scale "
                             f"{plain_value(tuple(rating_scale))!r} (for example {plain_value(r[out][0])!r} at row "
                             f"{int(np.flatnonzero(out)[0])}); pass the scale the ratings are on")
        reader = surprise.Reader(rating_scale=tuple(rating_scale))
        return surprise.Dataset.load_from_df(df, reader)

    def to_trainset(self, data, *, rating_scale=(1, 5)):
        """A Surprise ``Trainset`` (``build_full_trainset``) of long-form ratings or of a matrix.

        Parameters
        ----------
        data : pandas.DataFrame or {array-like, sparse matrix} of shape (n_users, n_items)
            As in :meth:`to_surprise`.
        rating_scale : (low, high), default=(1, 5)
            Passed to ``surprise.Reader``.

        Returns
        -------
        surprise.Trainset
        """
        return self.to_surprise(data, rating_scale=rating_scale).build_full_trainset()

    @classmethod
    def from_surprise(cls, data, *, user="user", item="item", rating="rating", sort_ids=True):
        """A converter fitted on a Surprise ``Dataset`` or ``Trainset``, and its ratings.

        Parameters
        ----------
        data : surprise.Dataset or surprise.Trainset
            A ``Dataset`` built from a frame or a file (its ``raw_ratings``), or
            a ``Trainset`` (every rating, through its raw ids).
        user, item, rating : str, default="user", "item", "rating"
            Column names of the returned long-form frame (and of the converter).
        sort_ids : bool, default=True
            Passed to the converter: order rows and columns by sorted id
            (``False``: by first appearance).

        Returns
        -------
        converter : RatingsFrame
            Fitted: ``user_ids_`` / ``item_ids_`` are Surprise's raw ids.
        ratings : pandas.DataFrame
            The ratings in long form (apply ``converter.to_matrix`` for the matrix).
        """
        rf = cls(user, item, rating, sort_ids=sort_ids)
        if hasattr(data, "all_ratings") and hasattr(data, "to_raw_uid"):
            triples = [(data.to_raw_uid(u), data.to_raw_iid(i), r) for u, i, r in data.all_ratings()]
        elif hasattr(data, "raw_ratings"):
            triples = [(u, i, r) for u, i, r, *_ in data.raw_ratings]
        else:
            raise TypeError("data must be a surprise Dataset (with raw_ratings) or Trainset, got "
                            f"{type(data).__name__}")
        df = pd.DataFrame(triples, columns=[user, item, rating])
        df[rating] = df[rating].astype(np.float64)
        rf.fit(df)
        return rf, df
