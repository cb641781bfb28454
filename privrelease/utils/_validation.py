"""Shared input validation for privrelease.

Every error quotes the value received and says what was expected.
"""

import contextlib
import contextvars
import functools
import itertools
import numbers
import os
import sys
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from ..exceptions import ComplexDataError

__all__ = [
    "check_number",
    "check_rating_matrix",
    "check_rating_scale",
    "restore_sparse_format",
    "check_private_labels",
    "undisclosed_mask",
    "UNDISCLOSED_MARKERS",
    "UNDISCLOSED_TEXTS",
]


def _library_dirs():
    """See :func:`_library_folders`; dask's folder once dask is loaded."""
    dask = getattr(sys.modules.get("dask"), "__file__", None)
    return _library_folders(os.path.dirname(dask) if dask else None)


@functools.lru_cache(maxsize=None)
def _library_folders(dask):
    """The folders (with their separator) whose frames are library frames for :func:`user_stacklevel`:
    privrelease's, scikit-learn's (the wrapper of every ``fit``, a ``Pipeline`` calling a mapper), joblib's (its
    ``Parallel`` runs a ``GridSearchCV``'s fits, at n_jobs=1 too), pandas' (``frame.pipe(check)``) and dask's when
    loaded (a graph's tasks); and the
    standard library's process and thread machinery (a worker's bottom frames), ``threading.py`` by its file and
    the frozen modules by their ``<frozen ...>`` names."""
    import concurrent.futures
    import multiprocessing
    import threading

    import joblib
    import pandas
    import sklearn

    # dask's (``dask``: its folder, when it is loaded): a mapper's transform of a dask array runs in its graph (the
    # sync scheduler's compute() is the user's frame)
    packages = (os.path.dirname(os.path.dirname(__file__)),
                *(os.path.dirname(m.__file__) for m in (sklearn, joblib, pandas, multiprocessing, concurrent.futures)),
                *([dask] if dask else []))
    folders = {folder + os.sep for package in packages for folder in (package, os.path.abspath(package))}
    # "<frozen runpy>": the bottom of a worker started as ``python -m`` (loky's)
    return tuple(folders | {threading.__file__, os.path.abspath(threading.__file__), "<frozen "})


def user_stacklevel():
    """The ``stacklevel`` that makes a ``warnings.warn`` of the function calling this one point at the first frame
    outside privrelease (and scikit-learn, joblib and pandas, see :func:`_library_dirs`): the user's call, however
    deep in the library the warning is raised.

    A fixed ``stacklevel`` is right for one call path only: the same check reached through another public
    function (``from_matrix`` and ``to_surprise``, a mapper's ``fit`` and ``fit_transform``) named a line inside
    the library, and a filter on the caller's module (``warnings.filterwarnings(..., module=...)``) missed it.
    """
    dirs = _library_dirs()
    frame = sys._getframe(1)
    level = 1
    while frame.f_code.co_filename.startswith(dirs):
        if frame.f_back is None:
            # no user frame: a worker process or thread running library code (joblib's loky worker, a thread's
            # bootstrap): the library's own call, as a fixed stacklevel named it (not multiprocessing/process.py)
            return 2
        frame = frame.f_back
        level += 1
    return level


def largest_passing(x, passes, *, steps=64):
    """``x``, or the largest float below it for which ``passes`` holds: a bound worked out by a division or a
    logarithm (``max / n``, ``log1p(max / v)``) can round up past the value the check accepts, and the bound a
    message states must pass when typed back. Steps down one ulp at a time (at most ``steps``; the roundings of a
    few operations are a few ulps)."""
    x = float(x)
    for _ in range(steps):
        if passes(x):
            return x
        x = float(np.nextafter(x, -np.inf))
    raise RuntimeError(f"no value within {steps} ulps below the bound passes its own check (last tried {x!r})")


def format_bound(x):
    """A bound as a message states it, as a person writes it (10000000, 0.5, 1e+100), unless 6 digits would change
    it: then its exact ``repr`` (a value written as shown must pass a bound shown as ">=" or "<=": "k_min >=
    3.96994e-06" refused 3.96994e-06, and a contract's "expected valuations <= 1.79769e+308"-style bound rounded up
    was refused again when typed back).
    """
    x = plain_value(x)
    if isinstance(x, numbers.Integral) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e16):
        return str(int(x))
    text = f"{x:g}"
    return text if float(text) == x else repr(float(x))


def plain_value(value):
    """``value`` as an error message shows it: a numpy scalar (or 0-d array) as the Python value it holds.

    Messages format values with ``{value!r}``; under numpy 2 a numpy scalar's repr is
    ``np.float64(1.1)``, ``np.int64(1)`` or ``np.str_('a')``, where the user wrote ``1.1``, ``1``
    or ``'a'``. Lists and tuples are converted element by element; anything else is returned as is.
    """
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    if type(value) in (list, tuple):
        return type(value)(plain_value(v) for v in value)
    return value


def check_number(value, name, *, low=None, high=None, low_inclusive=True,
                 high_inclusive=True, allow_inf=False, integer=False, overflow_to_inf=True):
    """Validate one real number and return it as ``float`` (or ``int``).

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Name used in error messages.
    low, high : float or None, default=None
        Bounds of the allowed range (None: unbounded on that side).
    low_inclusive, high_inclusive : bool, default=True
        Whether ``value`` may equal ``low`` / ``high``.
    allow_inf : bool, default=False
        Accept ``+-inf`` (NaN is always refused).
    integer : bool, default=False
        Require an integral value, returned as ``int``.
    overflow_to_inf : bool, default=True
        With ``allow_inf``, read a number beyond the float64 range (an int such as
        ``2**1100``) as ``+-inf``; False refuses it, for a parameter whose infinite
        value means something else than a large one (``epsilon=inf``: no noise at all).

    Returns
    -------
    float or int

    Raises
    ------
    TypeError
        ``value`` is not a real number (booleans are refused too).
    ValueError
        ``value`` is NaN, infinite (unless ``allow_inf``) or outside the range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        kind = "an integer" if integer else "a real number"
        raise TypeError(f"{name} must be {kind}, got {plain_value(value)!r} of type {type(value).__name__}")
    try:
        v = float(value)
    except OverflowError:  # an int (or Fraction) beyond float64, such as 10**400
        v = np.inf if value > 0 else -np.inf
        if integer or not allow_inf or not overflow_to_inf:
            raise ValueError(f"{name} must be finite, got a number of {abs(int(value)).bit_length()} bits, "
                             "beyond the float64 range") from None
    if integer and not (isinstance(value, numbers.Integral) or v.is_integer()):
        raise TypeError(f"{name} must be an integer, got {plain_value(value)!r}")
    if np.isnan(v):
        raise ValueError(f"{name} must be a number, got NaN")
    if np.isinf(v) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {plain_value(value)!r}")
    if low is not None and (v < low or (v == low and not low_inclusive)):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {op} {low}, got {plain_value(value)!r}")
    if high is not None and (v > high or (v == high and not high_inclusive)):
        op = "<=" if high_inclusive else "<"
        raise ValueError(f"{name} must be {op} {high}, got {plain_value(value)!r}")
    return int(v) if integer else v


def refuse_masked(values, name, what="released", advice=None):
    """Refuse a numpy masked array with masked entries (ValueError naming ``name``), before ``np.asarray`` drops
    the mask: ``Laplace.randomise(np.ma.masked_array([1., 1000.], mask=[0, 1]))`` released the hidden 1000 (plus
    noise) and returned a plain array. A masked array with nothing masked is its data, as :func:`check_table`
    accepts it. ``what`` says what would happen to the hidden values, ``advice`` what to do instead (by default:
    pass the unmasked values, or fill the masked ones)."""
    if isinstance(values, np.ma.MaskedArray) and np.ma.is_masked(values):
        n = int(np.ma.count_masked(values))
        if advice is None:
            advice = (f"pass the values meant ({name}.compressed() keeps the unmasked ones) or fill the masked "
                      f"entries first ({name}.filled(...))")
        raise ValueError(f"{name} is a masked array with {n} masked entr{'y' if n == 1 else 'ies'}; the mask would be "
                         f"ignored and the hidden values {what}: {advice}")
    return values


def refuse_booleans(arr, name):
    """Refuse booleans among a vector's values (TypeError naming ``name``): an array of bool dtype, or ``True`` /
    ``False`` in an object array, was read as 1 and 0 (a unit cost of 1, a weight of 0), while a boolean budget or
    epsilon is refused as no number. Anything but an array (a list, a scalar) is looked at as given (numpy reads
    ``[1.0, True]`` as the floats 1.0, 1.0).

    An array of a numeric dtype costs one dtype test; a list or an object array is looked at through the set of
    its values' types (built in C), and only a list holding booleans is searched for the first one (the scan of
    every value in Python cost 0.23 s per million floats).
    """
    if isinstance(arr, np.ndarray) and arr.dtype != object:
        if arr.dtype == bool:
            raise TypeError(f"{name} must be an array of real numbers, got an array of booleans (dtype bool), "
                            f"which would be read as 1 and 0; pass numbers ({name}.astype(float) if 1 and 0 "
                            "are meant)")
        return
    if isinstance(arr, (list, tuple)) and _types_hold_no_boolean(set(map(type, arr)), nested_ok=False):
        return  # a flat list of numbers (the common case): its values' types say it holds no boolean
    if not isinstance(arr, np.ndarray):
        try:
            arr = np.asarray(arr, dtype=object)
        except (TypeError, ValueError):
            return  # not a table of values: the caller's own checks name it
    flat = arr.ravel().tolist()
    if _types_hold_no_boolean(set(map(type, flat)), nested_ok=True):
        return
    hit = next(i for i, v in enumerate(flat) if isinstance(v, (bool, np.bool_)))
    raise TypeError(f"{name} must be an array of real numbers, got the boolean {flat[hit]!r} at index {hit}, "
                    "which would be read as 1 or 0")


def holds_only(arr, kinds, *, but=()):
    """Whether every value of the object array ``arr`` is an instance of ``kinds`` (and of none of ``but``), decided
    from the set of the values' types (built in C): the test of each value in Python cost 0.1 s per million."""
    types = set(map(type, arr.ravel().tolist()))
    return all(issubclass(t, kinds) and not issubclass(t, but) for t in types)


def _types_hold_no_boolean(types, *, nested_ok):
    """Whether values of these types hold no boolean (``bool`` and ``np.bool_`` cannot be subclassed); with
    ``nested_ok=False`` anything but a plain scalar among them (a nested list, a Series) is not decided here."""
    if bool in types or np.bool_ in types:
        return False
    # a list of anything but plain scalars (a nested list, a pandas Series / Index / ExtensionArray: numpy expands
    # whatever has ``__array__``) is not decided from its items' types
    return nested_ok or all(issubclass(t, (numbers.Number, str, bytes, type(None))) for t in types)


def as_float_array(values, name):
    """``values`` (numbers, possibly an object array of Python ints) as a float64 array; a number beyond float64's
    range (the int ``10**400``, whose conversion raised a bare OverflowError) is a ValueError naming ``name``, the
    index and the size of the number, as :func:`check_number` says it for a scalar."""
    arr = np.asarray(refuse_masked(values, name, "used"))
    try:
        return arr.astype(np.float64)
    except OverflowError:
        flat = arr.ravel().tolist()
        for i, v in enumerate(flat):
            try:
                float(v)
            except OverflowError:
                what, at = ("finite numbers", f" at index {i}") if arr.ndim else ("finite", "")
                raise ValueError(f"{name} must be {what}, got a number of {abs(int(v)).bit_length()} bits{at}, "
                                 "beyond the float64 range") from None
        raise


#: the most workers ``n_jobs`` may ask for (and ``-MAX_N_JOBS`` the most negative): joblib starts as many workers as
#: asked, whatever the number of tasks (``n_jobs=200000`` for three tasks spawned processes until it was killed), and
#: above 500,000 fails inside with "Numeric literal ... is too large"
MAX_N_JOBS = 4096
#: what ``n_jobs`` may be besides None, in the words of every message about it (the library's and the runner's)
N_JOBS_RULE = f"a nonzero integer from -{MAX_N_JOBS} to {MAX_N_JOBS} (-1 = every core)"


def check_n_jobs(n_jobs):
    """joblib's ``n_jobs``: None, or a nonzero integer between ``-MAX_N_JOBS`` and ``MAX_N_JOBS`` (4096; -1 = every
    core, -2 all but one ...); checked before any work.

    joblib took ``True`` and ``2.5`` as numbers of workers, ``10**6`` failed deep inside
    ("Numeric literal 2000000 is too large"), and ``200000`` started processes until the machine gave out.
    """
    if n_jobs is None:
        return None
    what = f"None or {N_JOBS_RULE}"
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(f"n_jobs must be {what}, got {plain_value(n_jobs)!r}")
    if n_jobs == 0 or abs(int(n_jobs)) > MAX_N_JOBS:
        raise ValueError(f"n_jobs must be {what}, got {plain_value(n_jobs)!r}")
    return int(n_jobs)


def _physical_memory():
    """Bytes of physical memory of this machine, or None where the system does not say."""
    import os

    try:
        pages, page = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page if pages > 0 and page > 0 else None


def _format_bytes(n):
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def _available_memory():
    """Bytes of memory available to a new allocation now (Linux's ``MemAvailable``, else the free pages), at most
    :func:`_physical_memory`; None where the system says neither."""
    import os

    total = _physical_memory()
    free = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        free = None
    if free is None:
        try:
            pages, page = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
            free = pages * page if pages > 0 and page > 0 else None
        except (AttributeError, ValueError, OSError):
            free = None
    if free is None or total is None:
        return total if free is None else free
    return min(free, total)


#: allocations of at most this many bytes (or 1/1024 of the machine's memory) are taken without reading the memory
#: available
_SMALL_ALLOCATION = 64 * 1024


def check_allocation(n_values, what, *, itemsize=8, unit="values"):
    """Refuse a computation over ``n_values`` entries whose peak memory cannot fit in the memory available now.

    ``itemsize`` is the number of bytes the computation holds per value at its peak: 8 for a float64 result
    alone, more for a computation whose temporaries are alive together (the noise samplers hold their random
    bytes, integer copies and float temporaries: see :data:`privrelease.noise._laplace._DRAW_PEAK_BYTES`).
    The peak is compared with the memory available (not the machine's total, part of which other processes
    hold): ``Laplace(epsilon=1).sample(10**9)`` was checked as 8 GB of output against the total, then raised a
    bare ``MemoryError`` (or had the process killed) while holding about 52 GB of temporaries.

    numpy's ``MemoryError`` ("Unable to allocate 7.28 TiB for an array with shape (1000000000000,)")
    did not name the argument, and a shape beyond numpy's limits was "Maximum allowed dimension
    exceeded". ``what`` names it (for example ``"dimension=10**12: the noise vector"``), and ``unit`` what
    ``n_values`` counts (``"vectors"``: ``itemsize`` is then the bytes a vector holds at the peak).
    """
    need = int(n_values) * itemsize
    total = _physical_memory()
    # the memory available is read from a file (40 us, a quarter of a draw of 1000 values): not for an allocation
    # of at most 64 KiB, nor for one of at most 1/1024 of the machine's memory
    if need <= max(_SMALL_ALLOCATION, (total or 0) // 1024):
        return
    free = _available_memory()
    if need > np.iinfo(np.intp).max or (free is not None and need > free):
        if free is None:
            have = "beyond numpy's limits"
        else:
            have = (f"this machine has {_format_bytes(free)} of memory available"
                    + (f" ({_format_bytes(total)} in all)" if total is not None and total != free else ""))
        each = "bytes" if itemsize == 8 else "bytes at the peak of the computation"
        count = f"{int(n_values):,} {unit[:-1] if int(n_values) == 1 and unit.endswith('s') else unit}"
        raise ValueError(f"{what} would need {_format_bytes(need)} ({count} of {itemsize} {each}); "
                         f"{have}")


def as_int64_codes(X, name, what="integer codes"):
    """Whole numbers (integer or float dtype) as int64, or a ValueError naming the first value that is not one.

    ``astype(np.int64)`` turned ``inf``, ``1e300`` or ``2**63`` into ``-9223372036854775808`` and a uint64
    ``2**64 - 1`` into ``-1`` (a valid-looking code, or an "erased" marker), so the message quoted a value the
    caller never gave. Other dtypes (strings, objects, booleans) are refused naming the dtype; an empty array
    of any dtype is the empty code array. A value is named as given: numpy reads a list mixing negative ints
    with ints beyond int64 (``[-1, 2**63]``) as float64, and the message quoted ``9.223372036854776e+18``.
    """
    given = X
    if isinstance(given, (list, tuple)):
        # numpy reads [1, True, 0] as the integers 1, 1, 0, where an array of booleans is refused below
        hit = _first_boolean(given)
        if hit is not None:
            raise ValueError(f"{name} must hold {what}, got the boolean {hit[1]!r} at index {hit[0]}")
    X = np.asarray(X)
    if X.dtype.kind == "O" and X.size and _all_python_ints(X):
        # numpy keeps Python ints beyond int64 ([2**64, 1], [-1, 2**70]) as objects: name the value, not the dtype
        _refuse_beyond_int64(X, name, what)
        return X.astype(np.int64)
    if X.dtype.kind not in "iuf" and X.size:
        raise ValueError(f"{name} must hold {what}, got dtype {X.dtype}")
    if X.dtype.kind == "i":
        return X.astype(np.int64)
    flat = X.ravel()
    if X.dtype.kind == "u":
        bad = flat > np.iinfo(np.int64).max
    else:
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(flat) | (flat != np.round(flat)) | (np.abs(flat) >= 2.0**63)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        v = flat[i].item()
        if not isinstance(given, np.ndarray):  # a list numpy converted: the values as given
            values = np.asarray(given, dtype=object)
            if values.shape == X.shape:
                if _all_python_ints(values):  # exact: the float64 copy of 2**63 - 1 is 2**63
                    _refuse_beyond_int64(values, name, what)
                v = values.flat[i]
                v = plain_value(v)
        raise ValueError(f"{name} must hold {what} (whole numbers within the int64 range), got {v!r}")
    return X.astype(np.int64)


#: the types of the values a flat list holds as numpy's object array holds them (no nested sequence)
_SCALAR_TYPES = (numbers.Number, str, bytes, np.generic)


def _first_boolean(values):
    """``(index, value)`` of the first boolean of the list ``values`` in numpy's flat order, or None.

    The types are read once each (a set of a few types, built in C): a value-by-value ``isinstance`` scan of a
    list of 10**6 ids took 190 ms, nine tenths of :func:`as_int64_codes`; the scan runs only to name a boolean
    that is there. A nested list is read as numpy's object array of it; a list of rows (lists or tuples) of
    values first by the types of its rows' values (in C too): numpy's object array and the types of its values
    took 300 ms for 10**6 rows of one code, three fifths of :func:`as_int64_codes`.
    """
    flat = values
    types = set(map(type, values))
    if types and all(t in (list, tuple) for t in types):
        inner = set(map(type, itertools.chain.from_iterable(values)))
        if all(issubclass(t, _SCALAR_TYPES) for t in inner) and not any(issubclass(t, (bool, np.bool_))
                                                                          for t in inner):
            return None  # rows of values none of which is a boolean (a boolean is named in numpy's order below)
    if not all(issubclass(t, _SCALAR_TYPES) for t in types):
        flat = np.asarray(values, dtype=object).ravel()
        types = set(map(type, flat))
    if not any(issubclass(t, (bool, np.bool_)) for t in types):
        return None
    return next((i, v) for i, v in enumerate(flat) if isinstance(v, (bool, np.bool_)))


def _all_python_ints(X):
    return all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in X.flat)


def _refuse_beyond_int64(X, name, what):
    """ValueError naming the first integer of the object array ``X`` outside the int64 range."""
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    v = next((int(v) for v in X.flat if not lo <= v <= hi), None)
    if v is not None:
        raise ValueError(f"{name} must hold {what} (whole numbers within the int64 range), got {v!r}")


#: the largest dimension of a sparse input: scikit-learn accepts 32-bit sparse indices only
_MAX_SPARSE_DIM = np.iinfo(np.int32).max


#: column names (lower case, letters and digits only) that mark a table of ratings in long form
LONG_FORM_USER_COLUMNS = ("user", "userid", "uid", "users", "username", "customer", "customerid", "reviewerid")
LONG_FORM_ITEM_COLUMNS = ("item", "itemid", "iid", "items", "movie", "movieid", "product", "productid", "asin",
                          "isbn", "book", "bookid", "show", "showid", "track", "trackid")


def refuse_surprise_data(X, name="X"):
    """A Surprise ``Dataset`` / ``Trainset`` is not a matrix: say how to convert it (TypeError naming ``name``).

    scikit-learn would report "Expected 2D array, got scalar array instead", numpy "float() argument must be a
    string or a real number, not 'Trainset'".
    """
    if hasattr(X, "raw_ratings") or (hasattr(X, "all_ratings") and hasattr(X, "to_raw_uid")):
        raise TypeError(
            f"{name} is a surprise {type(X).__name__}, not a user x item matrix; convert it first: "
            f"rf, ratings = RatingsFrame.from_surprise({name}); {name} = rf.to_matrix(ratings) "
            "(privrelease.recommender.RatingsFrame), then rf.from_matrix(release) for the long form"
        )


#: a long-form table holds the two ids, the rating and a few fields more (a timestamp, a review's votes ...); a
#: table with more columns is read as a user x item matrix unless its content says otherwise
LONG_FORM_MAX_COLUMNS = 8
#: the share of rows repeating an earlier row's (user, item) pair above which a table is not "one row per rating"
#: (a long-form table holds each pair once; a re-rated pair or two of a log stay below it)
LONG_FORM_REPEATED_SHARE = 0.05
#: the largest magnitude on a rating scale (1..5, 0..10, -10..10, 0..100): a column holding a larger value
#: (a timestamp, a count, a row number of a large table) holds no ratings
RATING_SCALE_BOUND = 100
#: the names (lower case, letters and digits only) of the row-number column that ``reset_index()`` ("index",
#: "level_0") or a CSV round trip ("Unnamed: 0") adds
ROW_NUMBER_COLUMNS = ("index", "level0", "unnamed0", "")
#: a column of more rows holding 0..n-1 or 1..n holds row numbers, whatever its name: more values than a rating
#: scale of 0..10 has
ROW_NUMBER_MIN_ROWS = 11
#: column names (lower case, letters and digits only) of a long-form table's rating
LONG_FORM_RATING_COLUMNS = ("rating", "ratings", "score", "stars", "overall", "value", "rate", "grade", "preference")


def refuse_long_form(X, name="X"):
    """A pandas table of ratings in long form (one row per rating: a user column, an item column, the rating) is
    not a user x item matrix: say how to convert it (TypeError naming ``name``).

    A numeric long-form table (user, item, rating ids as numbers) would otherwise be read as a matrix of three
    "items" per row, one row per rating. The column names alone do not decide it: a user x item table may have
    items named like ids (``"Customer"``, ``"Product"`` beside 40 other items). A table with a user-named and an
    item-named column is read as long form when

    * its ids are not numbers (strings, categories, dates: no rating is), or else when at least two of:
    * it has few columns (at most :data:`LONG_FORM_MAX_COLUMNS`);
    * it holds one row per rating: at most :data:`LONG_FORM_REPEATED_SHARE` of its rows repeat an earlier
      row's (user, item) pair;
    * its two id columns hold values that no column of ratings holds (ids, where the columns of a user x item
      table hold the values of one rating scale). A column holds ratings when its values are numbers within
      +-:data:`RATING_SCALE_BOUND` and are not row numbers (0..n-1 or 1..n, what ``reset_index()`` or a CSV
      round trip adds: see :data:`ROW_NUMBER_COLUMNS`, :data:`ROW_NUMBER_MIN_ROWS`); timestamps, counts and
      text are left out. A table of more than :data:`LONG_FORM_MAX_COLUMNS` columns none of which holds ratings
      (a user x item table of play counts) shows no sign here.

    Numbers stored as strings are read as the numbers (as the mappers read them). Booleans and non-whole numbers
    are no ids: such a table is a matrix; a missing id is left out. A table without rows shows no sign; of a dask
    frame the first partition with rows is looked at. When the signs disagree the error says so, with the way
    out for either reading (the conversion, or ``X.to_numpy()`` for a matrix).
    """
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "iloc"):
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.kind in "iuf":
            _refuse_unnamed_long_form(X, name)
        return
    names = {}
    for c in columns:
        names[_plain_name(c)] = c
    user = next((names[n] for n in LONG_FORM_USER_COLUMNS if n in names), None)
    item = next((names[n] for n in LONG_FORM_ITEM_COLUMNS if n in names), None)
    if user is None or item is None:
        if not (type(X).__module__ or "").startswith("dask"):
            _refuse_unnamed_long_form(X, name)
        return
    if (type(X).__module__ or "").startswith("dask"):
        X = _first_rows(X)  # a lazy frame: the mappers' dask fit reads it as an array of its blocks
        if X is None:
            return
    signs = _long_form_signs(X, user, item)
    if signs is None:
        return
    long_signs = [text for is_long, text in signs if is_long]
    wide_signs = [text for is_long, text in signs if not is_long]
    if wide_signs and len(long_signs) < 2:
        return  # a user x item matrix with items named like ids
    rating = _rating_column(X, user, item)
    what = "ratings" if name == "X" else "a table of ratings"  # not "ratings looks like ratings"
    head = (f"{name} looks like {what} in long form (columns {list(map(str, columns))}: one row per rating, "
            f"users in {user!r}, items in {item!r}), not a user x item matrix")
    convert = (f"rf = RatingsFrame(user={user!r}, item={item!r}, rating={rating!r}).fit({name}); "
               f"ratings = rf.to_matrix({name}) (privrelease.recommender.RatingsFrame), then rf.from_matrix(release) "
               "for the long form")
    if not wide_signs:
        raise TypeError(f"{head}: {' and '.join(long_signs)}; convert it first: {convert}")
    raise TypeError(
        f"{head}: {' and '.join(long_signs)}; but {' and '.join(wide_signs)}, as in a user x item matrix, so which "
        f"it is cannot be told from the table. In long form, convert it first: {convert}. A user x item matrix "
        f"whose items {user!r} and {item!r} are named like ids: pass {name}.to_numpy(), or rename those columns"
    )


def _refuse_unnamed_long_form(X, name):
    """:func:`refuse_long_form` for a table whose columns are not named like ids (``a, b, c``, ``0, 1, 2``, a plain
    numeric array): a ``UserWarning`` (the table is still read as a matrix) when its content alone says long form,
    users in the first column and items in the second, every sign of :func:`_long_form_signs` at once and then
    some. Not a refusal: a real count matrix with one lightly consumed item shows every sign.

    * it has 3 to :data:`LONG_FORM_MAX_COLUMNS` columns;
    * its first two columns hold whole numbers, each repeating some values (a user rates several items, an item
      is rated by several users; row numbers never repeat), and one of them a value beyond
      +-:data:`RATING_SCALE_BOUND` (no rating scale holds it);
    * it holds one row per (first, second) pair, a column beside them holds ratings, and the two hold values no
      such column holds.

    A matrix of 3 items rated 1..5 shows none of the third sign. A long-form table whose ids are all within
    +-:data:`RATING_SCALE_BOUND` (at most 100 users and 100 items numbered from 0 or 1) is read as a matrix without
    a word: its content cannot tell it from a small matrix of scores on a 0..100 scale, which shows every sign too
    (a warning there fired on 50 of 50 random 150 x 3 matrices of such scores, and the signs' scan tripled the
    check's time on 1e6 x 5 matrices); name its columns ``user``, ``item``, ``rating`` (refused as long form) or
    convert it with :class:`~privrelease.recommender.RatingsFrame`.
    """
    import pandas as pd

    n_rows, n_cols = X.shape
    if not 3 <= n_cols <= LONG_FORM_MAX_COLUMNS or n_rows < 2:
        return
    frame = X if hasattr(X, "iloc") else pd.DataFrame(X, copy=False)
    if frame.columns.has_duplicates or is_sparse_frame(frame):
        return
    first = []
    for j in range(2):
        values = _column_numbers(frame.iloc[:, j])  # distinct, sorted
        if values is None or not values.size or not np.all(np.isfinite(values)) \
                or np.any(values != np.round(values)) or values.size >= n_rows:
            return
        first.append(values)
    if max(float(np.max(np.abs(v))) for v in first) <= RATING_SCALE_BOUND:
        return  # values a rating scale holds: a matrix of a few items may hold them (see above)
    user, item = frame.columns[0], frame.columns[1]
    signs = _long_form_signs(frame, user, item)
    if signs is None or not all(is_long for is_long, _ in signs) or len(signs) < 3 \
            or any(text.startswith("no column beside") for _, text in signs):
        return  # a sign for a matrix, or no column of ratings beside the two
    rating = _rating_column(frame, user, item)
    what = "ratings" if name == "X" else "a table of ratings"
    columns = list(map(plain_value, frame.columns))
    head = (f"{name} looks like {what} in long form (one row per rating, read from its content: its columns "
            f"{columns} are not named like a user and an item, but its first two "
            f"hold whole numbers beyond a rating scale's {RATING_SCALE_BOUND}), not a user x item matrix")
    if hasattr(X, "iloc") and all(isinstance(c, str) for c in (user, item, rating)):
        convert = f"rf = RatingsFrame(user={user!r}, item={item!r}, rating={rating!r}).fit({name}); frame = {name}"
    else:
        j = int(frame.columns.get_loc(rating))
        convert = (f"frame = pd.DataFrame(np.asarray({name})[:, [0, 1, {j}]], columns=['user', 'item', 'rating']); "
                   "rf = RatingsFrame().fit(frame)")
    convert += (f"; ratings = rf.to_matrix(frame) (privrelease.recommender.RatingsFrame), then rf.from_matrix(release) "
                "for the long form")
    # a warning, not a refusal: the signs are read from the content alone, and a real matrix can show them all
    # (minutes per genre beside one lightly watched genre: 20 of 20 matrices of 50-200 users)
    warnings.warn(f"{head}: {' and '.join(text for _, text in signs)}; it is read as a matrix: if it is long form, "
                  f"convert it first: {convert}. A user x item matrix of {n_cols} items whose values happen to look "
                  f"so: pass it as a sparse matrix (scipy.sparse.csr_array({name})) and this warning goes",
                  UserWarning, stacklevel=user_stacklevel())


def _plain_name(column):
    """A column name in lower case, letters and digits only (``"User_ID"`` -> ``"userid"``)."""
    return "".join(ch for ch in str(column).lower() if ch.isalnum())


def _first_rows(X):
    """The first partition with rows of the dask frame ``X`` as a pandas frame (the partitions before it are
    computed, the ones after it are not); ``None`` when no partition has rows."""
    for i in range(X.npartitions):
        part = X.partitions[i].compute()
        if len(part):
            return part
    return None


def _long_form_signs(X, user, item):
    """The signs of a long-form table with users in column ``user`` and items in ``item``: a list of
    ``(says_long_form, text)``; ``None`` when no sign can be read (no rows, a name used twice) or the two columns
    cannot hold ids (booleans, non-whole numbers)."""
    import pandas as pd

    cols = [X[user], X[item]]
    n_rows, n_cols = X.shape
    if not n_rows or any(getattr(c, "ndim", 1) != 1 for c in cols):
        return None  # a name used twice: check_table names it
    ids = []
    for c in cols:
        values = _column_numbers(c)
        if values is None:
            dtype = c.dtype.subtype if isinstance(c.dtype, pd.SparseDtype) else c.dtype
            if pd.api.types.is_bool_dtype(dtype):
                return None
            kind = "categories" if isinstance(dtype, pd.CategoricalDtype) else f"values of dtype {dtype}"
            return [(True, f"its column {c.name!r} holds {kind}, not ratings")]
        if not values.size or not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            return None  # numbers that are no ids: a matrix (a pivot's NaN are named by refuse_nan_ratings)
        ids.append(values)
    signs = []
    few = n_cols <= LONG_FORM_MAX_COLUMNS
    signs.append((few, f"it has {n_cols} columns" if few else f"it has {n_cols} columns, more than a long form's "
                  f"{LONG_FORM_MAX_COLUMNS}"))
    repeated = float(X[[user, item]].duplicated().mean())
    once = repeated <= LONG_FORM_REPEATED_SHARE
    signs.append((once, "each (user, item) pair is on one row" if repeated == 0 else
                  f"{repeated:.0%} of its rows repeat a (user, item) pair"))
    remaining = np.union1d(*ids)
    n_ratings = 0
    for j, c in enumerate(X.columns):
        if c in (user, item):
            continue
        values = _rating_values(X.iloc[:, j], n_rows)
        if values is not None:
            n_ratings += 1
            remaining = np.setdiff1d(remaining, values, assume_unique=True)
            if not remaining.size:
                break
    if not n_ratings:
        if X.shape[1] <= LONG_FORM_MAX_COLUMNS:
            signs.append((True, f"no column beside {user!r} and {item!r} holds ratings"))
        # many columns of values beyond a rating scale (play or view counts) say nothing either way: no sign
    elif remaining.size:
        signs.append((True, f"{user!r} and {item!r} hold values no column of ratings holds"))
    else:
        signs.append((False, f"{user!r} and {item!r} hold only values its columns of ratings hold"))
    return signs


def _column_numbers(col):
    """The distinct values of a pandas column read as numbers, missing values left out, as sorted float64 (a
    sparse column's stored values and its fill value; numbers stored as strings are read as the numbers), or
    ``None`` for a column of other values (booleans, categories, dates, text)."""
    import pandas as pd

    dtype = col.dtype
    if isinstance(dtype, pd.SparseDtype):
        arr = col.array
        values = np.asarray(arr.sp_values, dtype=object)
        if arr.sp_index.npoints < len(arr):
            values = np.append(values, arr.fill_value)
        dtype = dtype.subtype
    else:
        values = col.to_numpy(dtype=object)
    if pd.api.types.is_bool_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
        return None
    missing = np.asarray(pd.isna(values), dtype=bool)
    values = values[~missing]
    if not pd.api.types.is_numeric_dtype(dtype):
        if not (dtype == object or pd.api.types.is_string_dtype(dtype)):
            return None  # dates, periods, intervals
        if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, str)) for v in values):
            return None
        try:
            values = pd.to_numeric(pd.Series(values, dtype=object)).to_numpy(dtype=object)
        except (TypeError, ValueError):
            return None
    try:
        return np.unique(values.astype(np.float64))
    except (TypeError, ValueError, OverflowError):
        return None


def _rating_values(col, n_rows):
    """The distinct values of a column that holds ratings (:func:`refuse_long_form`), or ``None`` for a column of
    other values: text, booleans, a value beyond +-:data:`RATING_SCALE_BOUND`, row numbers 0..n-1 or 1..n."""
    values = _column_numbers(col)
    if values is None or not values.size or not np.all(np.abs(values) <= RATING_SCALE_BOUND):
        return None
    # a few ratings may be 1..n by chance: a short column is a row number only when named like one
    numbered = n_rows > ROW_NUMBER_MIN_ROWS or _plain_name(col.name) in ROW_NUMBER_COLUMNS
    if numbered and values.size == n_rows and values[0] in (0, 1) and np.array_equal(
            values, np.arange(values[0], values[0] + n_rows)):
        return None
    return values


def _rating_column(X, user, item):
    """The column of a long-form table to suggest as its rating: the first one named like a rating, else the first
    one holding ratings (:func:`_rating_values`), else the first one beside the ids; ``"rating"`` for none."""
    others = [j for j, c in enumerate(X.columns) if c not in (user, item)]
    for j in others:
        if _plain_name(X.columns[j]) in LONG_FORM_RATING_COLUMNS:
            return X.columns[j]
    for j in others:
        if _rating_values(X.iloc[:, j], len(X)) is not None:
            return X.columns[j]
    return X.columns[others[0]] if others else "rating"


def warn_duplicate_entries(X, name="X"):
    """Warn (``UserWarning`` naming the first pair, its values and their sum) when a sparse rating matrix stores
    a (user, item) pair more than once.

    scipy reads such a matrix as the SUM of the entries, and so does privrelease (a rating may be stored as
    summands). But a COO matrix built from ``(rating, (user, item))`` triples of a file keeps a re-rated pair
    twice: a 4 and a 1 became one rating 5, inside the scale, without a word. Stored zeros ("not rated") never
    count. Only a COO, CSR or CSC matrix not known to be canonical is looked at.
    """
    if not sp.issparse(X) or X.format not in ("coo", "csr", "csc") or getattr(X, "has_canonical_format", True):
        return
    said = _DUPLICATES_SAID.get()
    if said is not None and any(m is X for m in said):
        return  # said already in this call (fit_transform's fit, then its transform, of the same matrix)
    coo = X.tocoo(copy=False) if X.format != "coo" else X
    rated = np.asarray(coo.data) != 0
    rows, cols = np.asarray(coo.row)[rated].astype(np.int64), np.asarray(coo.col)[rated].astype(np.int64)
    if rows.size < 2:
        return
    key = np.sort(rows * int(X.shape[1]) + cols)
    repeated = key[1:][key[1:] == key[:-1]]
    if not repeated.size:
        return
    first = int(repeated[0])  # the first repeated pair in row-major order
    values = np.asarray(coo.data)[rated][rows * int(X.shape[1]) + cols == first]
    r, c = divmod(first, int(X.shape[1]))
    warnings.warn(
        f"{name} stores {int(np.unique(repeated).size)} (user, item) pair(s) more than once, for example row {r}, "
        f"column {c} {values.size} times (values {[plain_value(v) for v in values]!r}); they are read as scipy "
        f"reads them, as ONE rating, their sum ({plain_value(values.sum())!r}). If they are repeated ratings "
        "(triples of a file turned into a COO matrix), keep one rating per (user, item) pair first "
        "(privrelease.recommender.RatingsFrame refuses repeated pairs of a long-form table)",
        UserWarning, stacklevel=user_stacklevel(),
    )
    if said is not None:
        said.append(X)  # held (not its id) until the call ends: an id may be reused by another matrix


#: the matrices whose repeated pairs were warned about in the current call (None outside :func:`duplicates_said_once`)
_DUPLICATES_SAID = contextvars.ContextVar("privrelease_duplicates_said", default=None)


@contextlib.contextmanager
def duplicates_said_once():
    """Within this block, :func:`warn_duplicate_entries` warns once per matrix object.

    ``fit_transform`` checks its input in ``fit`` and again in ``transform``: within the block a matrix storing a
    (user, item) pair twice is warned about once per call. Blocks may nest; the outermost one decides.
    """
    token = _DUPLICATES_SAID.set([]) if _DUPLICATES_SAID.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _DUPLICATES_SAID.reset(token)


def fit_transform_said_once(fit_transform):
    """``fit_transform`` (scikit-learn's ``fit(X, y).transform(X)``) run inside :func:`duplicates_said_once`: fit
    and transform check the same ``X``, and a matrix storing a (user, item) pair twice is said once per call."""
    @functools.wraps(fit_transform)
    def wrapped(self, X, *args, **kwargs):
        with duplicates_said_once():
            return fit_transform(self, X, *args, **kwargs)

    return wrapped


def refuse_nan_ratings(X, name="X", row_offset=None):
    """A rating matrix whose unrated cells are NaN (what ``DataFrame.pivot`` of a long table gives): say that
    0 means "not rated" here.

    scikit-learn's own message ("does not accept missing values encoded as NaN natively ... consider
    HistGradientBoostingClassifier") pointed a user with the commonest form of a dense rating table elsewhere.
    Every container is checked in memory of its stored values: a DataFrame of sparse columns column by column
    (its ``isna()`` as one array was a dense boolean table of every cell), a DOK or LIL matrix through COO,
    an object array or a list (``None`` or NaN cells) by ``pandas.isna``.
    """
    if type(X).__module__.startswith("dask"):
        return  # never computed here: each block is checked where it lives
    count, first = _nan_cells(X)
    if not count:
        return
    # row_offset: X is the block of a dask collection starting at that row (rows are named in the whole collection)
    offset = 0 if row_offset is None else int(row_offset)
    at = "" if first is None else f" (the first at row {first[0] + offset}, column {first[1]})"
    block = "" if row_offset is None else f" in its block of rows {offset} to {offset + X.shape[0] - 1}"
    raise ValueError(
        f"{name} holds {count} NaN entries{block}{at}; in a rating matrix 0 means 'not rated' (a NaN "
        f"is what a pandas pivot of ratings gives for unrated cells): fill them with 0 ({name}.fillna(0) or "
        f"np.nan_to_num({name}, nan=0.0)), or convert long-form ratings with privrelease.recommender.RatingsFrame"
    )


def _nan_cells(X):
    """The number of NaN (or None / NA) cells of a rating table and the (row, column) of the first in row
    order (None when unknown); ``(0, None)`` for a table without any, or of a type checked later."""
    import pandas as pd

    def first_of(rows, cols):
        k = np.lexsort((cols, rows))[0]
        return int(rows[k]), int(cols[k])

    if sp.issparse(X):
        C = X if isinstance(getattr(X, "data", None), np.ndarray) else X.tocoo()  # DOK and LIL: no value array
        if not np.issubdtype(C.data.dtype, np.floating) or not np.isnan(C.data).any():
            return 0, None
        C = C.tocoo()  # the rows and columns of the stored values
        nan = np.isnan(C.data)
        return int(nan.sum()), first_of(np.asarray(C.row)[nan], np.asarray(C.col)[nan])
    if is_sparse_frame(X):
        count, rows, cols = 0, [], []
        for j, (_, col) in enumerate(X.items()):
            arr = col.array
            pos = arr.sp_index.indices
            stored = pd.isna(arr.sp_values)
            if pd.isna(arr.fill_value):  # every unstored cell is NaN (astype(pd.SparseDtype(float)) of a pivot)
                unstored = np.setdiff1d(np.arange(len(arr)), pos, assume_unique=True)
                bad = np.concatenate([pos[stored], unstored])
            else:
                bad = pos[stored]
            if bad.size:
                count += bad.size
                rows.append(int(bad.min()))
                cols.append(j)
        return (count, first_of(np.asarray(rows), np.asarray(cols))) if count else (0, None)
    if hasattr(X, "isna") and hasattr(X, "iloc"):
        nan = np.asarray(X.isna(), dtype=bool)
    else:
        arr = np.asarray(X) if not isinstance(X, np.ndarray) else X
        if arr.dtype == object:
            nan = np.asarray(pd.isna(arr), dtype=bool)  # None or NaN cells of a list or an object array
        elif np.issubdtype(arr.dtype, np.floating):
            nan = np.isnan(arr)
        else:
            return 0, None
    if not nan.any():
        return 0, None
    where = np.argwhere(nan)[0] if nan.ndim == 2 else None
    return int(nan.sum()), None if where is None else (int(where[0]), int(where[1]))


def check_rating_container(X, name="X"):
    """Refuse what holds ratings but is no user x item matrix: a Surprise ``Dataset`` / ``Trainset`` and a
    long-form table (one row per rating), each with the conversion (TypeError naming ``name``); warn of a sparse
    matrix storing a (user, item) pair twice (:func:`warn_duplicate_entries`)."""
    refuse_surprise_data(X, name)
    refuse_long_form(X, name)
    warn_duplicate_entries(X, name)


def check_table(X, name="X"):
    """Refuse what numpy would misread as a table, before scikit-learn's ``validate_data`` (ValueError naming ``name``).

    * a masked array with masked entries: numpy and scikit-learn read its data and ignore the
      mask, so a masked ("missing") entry used to be taken at whatever value it hid (as a rating,
      a category or a feature). A masked array with nothing masked is accepted (it is its data);
    * a structured (record) array: scikit-learn read it as one column of records;
    * a list of rows of different lengths: numpy's message was "setting an array element with a
      sequence. The requested array has an inhomogeneous shape after 1 dimensions";
    * a sparse matrix with more than 2**31 - 1 rows or columns: scikit-learn refused its 64-bit indices
      ("Only sparse matrices with 32-bit integer indices are accepted"), and the code that did not
      allocated a dense vector per item (a MemoryError of 16 GiB naming no argument);
    * complex numbers (:class:`~privrelease.exceptions.ComplexDataError`, a TypeError and a ValueError):
      ``astype(float64)`` drops the imaginary part with only a
      ``ComplexWarning``, and scikit-learn's "Complex data not supported" printed the whole array
      without naming it;
    * a DataFrame with a column name used twice: scikit-learn's (narwhals') "Expected unique column names"
      named neither the argument nor what to do;
    * a DataFrame without columns: scikit-learn's "at least one array or dtype is required" (numpy's);
    * a DataFrame of sparse columns one of which has a fill value neither 0 nor NaN: every unstored cell holds
      that value, and pandas' "fill value must be 0 when converting to COO matrix" named no column.
    """
    columns = getattr(X, "columns", None)
    if columns is not None and len(columns) == 0 and getattr(X, "ndim", None) == 2 and hasattr(X, "iloc"):
        # scikit-learn's check_array failed on it with numpy's "at least one array or dtype is required"
        raise ValueError(f"{name} is a DataFrame without columns (shape {tuple(X.shape)}); expected at least one "
                         "column (one per item or field)")
    if is_sparse_frame(X):  # read as one scipy sparse matrix (a frame with a dense column is read densely)
        for col, dt in X.dtypes.items():
            fill = dt.fill_value
            if not (fill == 0 or fill != fill):
                raise ValueError(
                    f"{name} column {plain_value(col)!r} is sparse with fill_value={plain_value(fill)!r}: every "
                    f"unstored cell holds that value; expected sparse columns filled with 0 (or NaN): convert "
                    f"with {name}.sparse.to_dense(), or store the column with fill_value=0")
    if getattr(columns, "is_unique", True) is False:  # a pandas Index (lazy: no pandas import here)
        counts = columns.value_counts(sort=False)
        dups = [plain_value(c) for c in columns.unique() if counts[c] > 1]
        times = ", ".join(f"{c!r} ({int(counts[c])} times)" for c in dups[:5]) + (" ..." if len(dups) > 5 else "")
        raise ValueError(f"{name} is a DataFrame with duplicate column names ({times}); each column must have its "
                         f"own name: rename them (for example {name}.columns = [f'{{c}}_{{i}}' for i, c in "
                         f"enumerate({name}.columns)]) or drop the repeated ones ({name}.loc[:, "
                         f"~{name}.columns.duplicated()])")
    if isinstance(X, (list, tuple)) and X and all(isinstance(r, (list, tuple, np.ndarray)) for r in X):
        lengths = [len(r) for r in X]
        if len(set(lengths)) > 1:
            i = next(i for i, n in enumerate(lengths) if n != lengths[0])
            raise ValueError(f"{name} must be a rectangular table, got rows of different lengths: row 0 has "
                             f"{lengths[0]} value(s), row {i} has {lengths[i]}")
    fields = getattr(getattr(X, "dtype", None), "names", None)
    if isinstance(X, np.ndarray) and fields:
        # scikit-learn's "Expected 2D array, got 1D array instead" printed the records, naming no field
        raise ValueError(f"{name} is a structured (record) array with fields {list(fields)!r}, one value per row; "
                         f"expected a table: pass pandas.DataFrame({name}) (a column per field), or "
                         f"numpy.lib.recfunctions.structured_to_unstructured({name}) for numeric fields")
    refuse_masked(X, name, "used", f"fill it first ({name}.filled(0) for 'not rated' in a rating matrix)")
    if sp.issparse(X) and X.ndim == 2 and max(X.shape) > _MAX_SPARSE_DIM:
        axis = int(X.shape[1] > _MAX_SPARSE_DIM)
        what, keep = (("rows", f"{name}[{name}.getnnz(axis=1) > 0]") if axis == 0
                      else ("columns", f"{name}[:, {name}.getnnz(axis=0) > 0]"))
        raise ValueError(f"{name} is a sparse matrix of shape {X.shape}: {X.shape[axis]:,} {what} is more than "
                         f"2**31 - 1 = {_MAX_SPARSE_DIM:,}, the most 32-bit sparse indices (what scikit-learn "
                         f"accepts) address, and a dense vector per {what[:-1]} would not fit; ids used as indices? "
                         f"keep the {what} that hold an entry ({keep}) or number the ids 0, 1, 2 ...")
    complex_dtype = _complex_dtype(X)
    if complex_dtype is not None:
        raise ComplexDataError(f"Complex data not supported: {name} must hold real numbers, got complex dtype "
                               f"{complex_dtype}")


def _complex_dtype(X):
    """The complex dtype of an array, a sparse matrix, a DataFrame's column or a list of numbers; else None."""
    dtypes = [X.dtype] if hasattr(X, "dtype") else list(getattr(X, "dtypes", []))
    if not dtypes and isinstance(X, (list, tuple)):
        try:
            dtypes = [np.asarray(X).dtype]
        except (TypeError, ValueError):
            return None
    return next((d for d in dtypes if getattr(d, "kind", None) == "c"), None)


def check_bool_number_mix(values, name, *, what="category", whole="the column"):
    """Refuse booleans beside numbers in one object array (TypeError naming ``name``).

    ``True == 1`` and ``False == 0`` hash alike, so numpy, pandas and dictionaries merge them:
    a category ``True`` beside ``1``, or a user id ``True`` beside a user ``1``, silently
    became one. Arrays of another dtype cannot mix them.
    """
    if getattr(values, "dtype", None) != object:
        return
    col = values.ravel().tolist()
    flags = [isinstance(v, (bool, np.bool_)) for v in col]
    nums = [not f and isinstance(v, (numbers.Number, np.number)) for v, f in zip(col, flags)]
    if any(flags) and any(nums):
        b, n = col[flags.index(True)], col[nums.index(True)]
        raise TypeError(
            f"{name} mixes booleans and numbers (for example {b!r} and {n!r}); 1 and True (0 and False) would be "
            f"merged into one {what}: give {whole} one kind of value"
        )


#: joiners that spell some scripts (Persian, Indic) and emoji: part of an id inside it, ignored at its edges
_JOINERS = frozenset("\u200c\u200d")


def _id_character_problem(s):
    """Why the string id ``s`` holds a character an id must not hold, or None.

    Control characters (NUL, tab, newline, DEL, the C1 range), line and paragraph separators and lone
    surrogates are refused: they are what a broken parse leaves in a field, and a NUL or a newline cuts or
    splits the id in every file the release is written to. Invisible format characters (zero-width space,
    soft hyphen, direction marks) are data: real names hold them (scraped titles, right-to-left names), so
    an id holding them is kept as it is; only an id that differs from another by them is reported
    (:func:`check_ids`).
    """
    if s.isascii() and s.isprintable():
        return None
    import unicodedata

    for k, ch in enumerate(s):
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp", "Cs"):
            return f"the control character U+{ord(ch):04X} at character {k}"
    return None


def _visible(s):
    """``s`` without its invisible format characters (the joiners inside it kept)."""
    import unicodedata

    if s.isascii():
        return s
    return "".join(ch for k, ch in enumerate(s) if unicodedata.category(ch) != "Cf"
                   or (ch in _JOINERS and 0 < k < len(s) - 1))


def _id_key(v):
    """The form two ids that print alike share: NFC, without surrounding spaces or invisible format characters
    (tuples element-wise)."""
    import unicodedata

    if isinstance(v, str):
        return unicodedata.normalize("NFC", _visible(v).strip())
    if isinstance(v, bytes):  # the same rules on its UTF-8 text, kept bytes: b'ann' and 'ann' are two ids
        try:
            return _id_key(v.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            return v.strip()
    if isinstance(v, tuple):
        return tuple(_id_key(e) for e in v)
    return v


def _bytes_text(v):
    """The text of a bytes id for the id rules: UTF-8, a byte that is not escaped (``\\xff``, printable)."""
    return v.decode("utf-8", "backslashreplace")


def _id_strings(v):
    """The strings of an id (itself, or a tuple's strings)."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, bytes):  # b'ann\xe2\x80\x8b' (a zero-width space in UTF-8) passed what 'ann\u200b' did not
        return [_bytes_text(v)]
    if isinstance(v, tuple):
        return [s for e in v for s in _id_strings(e)]
    return []


#: texts that write a missing value (pandas, numpy, R, SQL): an id spelled so is warned about by check_ids
_MISSING_ID_TEXTS = ("nan", "na", "n/a", "<na>", "nat", "none", "null")


def check_ids(ids, name, *, where=None):
    """Refuse user or item ids that would be misread (ValueError); warn about ids that print alike.

    * an id holding a control character (NUL, tab, newline, DEL ...) is refused: a broken parse leaves
      them, and they cut or split the id in every file the release is written to;
    * two distinct ids that differ only in spaces around them (a no-break space too), in invisible format
      characters (zero-width space, byte-order mark, soft hyphen, direction marks) or in their Unicode
      normal form (``'José'`` composed, NFC, and decomposed, NFD) print alike: they are kept as two ids, as
      given (ids are keys: the library never rewrites them), with a ``UserWarning`` naming the first such
      pair and how to write them one way if they name one user.

    * an id spelled like a missing value (``'nan'``, ``'NA'``, ``'None'``, ``'NULL'`` ..., any case: what
      ``astype(str)`` of a NaN, R or a database write) is kept, with a ``UserWarning`` counting its rows:
      every rating whose id was missing would be one user's.

    An id holding invisible characters but printing like no other id is kept without a word (real names
    hold them). ``ids`` is the column of ids in row order (numbers, strings, tuples); ``where(i)`` describes
    row ``i`` in messages (default ``"row i"``). Messages quote ids with their escapes (``ascii``).
    """
    import warnings

    where = where or (lambda i: f"row {i}")
    values = np.asarray(ids, dtype=object).ravel() if not isinstance(ids, np.ndarray) else ids.ravel()
    if values.dtype.kind not in "OUS" or values.size == 0:
        return
    uniq = _unique_in_order(values)

    def row_of(v):
        return int(next(i for i, u in enumerate(values) if u == v))

    markers = [v for v in uniq if isinstance(v, str) and v.strip().lower() in _MISSING_ID_TEXTS]
    if markers:
        # 'nan' (what df[col].astype(str) makes of a missing id) or R's 'NA' was one user holding every rating
        # whose id was missing, without a word (an empty id is refused)
        rows = sum(int(np.sum(values == m)) for m in markers)
        warnings.warn(f"{name} holds the id {plain_value(markers[0])!r} ({where(row_of(markers[0]))}; {rows} row(s) "
                      f"hold such ids: {sorted(set(markers))!r}), the text pandas, numpy, R or a database write for a "
                      "missing value (numpy's astype(str) turns NaN into 'nan'): each is read as ONE id holding every "
                      "such row. If these ids are missing, leave those rows out first; if it is a real id, ignore "
                      "this warning", UserWarning, stacklevel=user_stacklevel())

    odd = []  # ids whose key is not themselves: not ASCII, or with spaces around
    for v in uniq:
        if isinstance(v, str) and v.isascii() and v.isprintable() and not (v[:1] == " " or v[-1:] == " "):
            continue  # the common id: nothing to refuse, its own key
        strings = _id_strings(v)
        for s in strings:
            problem = _id_character_problem(s)
            if problem is not None:
                raise ValueError(f"{name} holds the id {ascii(plain_value(v))} ({where(row_of(v))}) with {problem}; "
                                 "ids must not hold control characters (a broken parse leaves them, and they cut "
                                 "the id in the files written): remove them")
        if any(not (s.isascii() and s == s.strip()) for s in strings):
            odd.append(v)
    if not odd:
        return
    plain = set(uniq)
    seen = {}
    pairs = []
    for v in odd:
        key = _id_key(v)
        first = seen.setdefault(key, v)
        if first == v and key in plain and key != v:
            first = key  # an id written plainly elsewhere
        if first != v:
            pairs.append((first, v))
    if not pairs:
        return
    first, v = sorted(pairs[0], key=row_of)
    a, b = _id_strings(first), _id_strings(v)
    hows = []
    if [t.strip() for t in a] != [t.strip() for t in b] and [_visible(t).strip() for t in a] != [
            _visible(t).strip() for t in b]:
        hows.append("their Unicode normal form")
    if any(_visible(t) != t for t in a + b):
        hows.append("invisible characters")
    if any(_visible(t) != _visible(t).strip() for t in a + b):
        hows.append("spaces around them")
    hows = hows or ["spaces, invisible characters or normal form"]
    more = f" ({len(pairs) - 1} more such pairs)" if len(pairs) > 1 else ""
    warnings.warn(f"{name} holds the ids {ascii(plain_value(first))} ({where(row_of(first))}) and "
                  f"{ascii(plain_value(v))} ({where(row_of(v))}), which differ only in {' and '.join(hows)}{more}: "
                  "they print alike but are kept as two ids; if they name one user or item, write each id one way "
                  "first (strip the spaces and invisible characters, normalise to NFC with "
                  "unicodedata.normalize('NFC', id))", UserWarning, stacklevel=user_stacklevel())


def _unique_in_order(values):
    """The distinct values of a 1-D array in order of first appearance (hashable values, as a dict keys them)."""
    return list(dict.fromkeys(values.tolist()))


#: Why a rating scale must not hold 0 (the one rule of the library and the command line).
ZERO_NOT_RATED = ("0 is reserved for 'not rated' in a rating matrix; a scale where 0 is a real rating (-10..10) "
                  "must be shifted first (read the file with pandas, add a constant, use "
                  "privrelease.recommender.RatingsFrame)")


#: the largest rating magnitude (and rating scale bound) accepted where ratings are read from text or a scale is
#: given: the recommender and the mapper square and sum differences of ratings over millions of ratings, which stay
#: finite below it
MAX_RATING = 1e100


def check_rating_scale(value, name="rating_scale"):
    """``(low, high)`` as two floats with finite ``low < high`` not holding 0, checked before any work is done.

    A pair of anything else is a ``ValueError`` (a reversed or infinite scale, not a pair at all, a scale
    such as ``(0, 10)`` or ``(-5, 5)`` that holds 0, which means "not rated" in a rating matrix: a
    rating of 0 could not be stored, and a prediction clipped to 0 would read as "not rated"; a bound beyond
    :data:`MAX_RATING` in magnitude, where ``(1, 1e300)`` gave predictions of 3.7e297 on 1-5 data and a NaN
    RMSE), a pair of non-numbers (strings, booleans) a ``TypeError``; both quote ``value``.

    Parameters
    ----------
    value : tuple (low, high)
        The rating scale.
    name : str, default="rating_scale"
        Name used in error messages.

    Returns
    -------
    tuple of float
        ``(low, high)``.
    """
    try:
        low, high = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high), got {plain_value(value)!r}") from None
    for v in (low, high):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must hold two real numbers, got {plain_value(value)!r}")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"{name} must be (low, high) with finite low < high, got {plain_value(tuple(value))!r}")
    if low <= 0 <= high:
        raise ValueError(f"{name} = {plain_value(value)!r} holds 0: {ZERO_NOT_RATED}")
    if max(abs(low), abs(high)) > MAX_RATING:
        raise ValueError(f"{name} = {plain_value(tuple(value))!r}: expected bounds of at most "
                         f"{format_bound(MAX_RATING)} in magnitude, as for the ratings themselves (the recommender "
                         "and the mapper square and sum "
                         "differences of ratings, which overflow float64 beyond that); divide the scale and the "
                         "ratings by a constant")
    return float(low), float(high)


def check_no_time_values(X, name="X"):
    """Refuse dates and durations as ratings (TypeError naming ``name`` and the dtype).

    numpy's ``datetime64`` reached numpy's internals (``ufunc 'absolute' did not contain a loop``), and its
    ``timedelta64`` counts as a number to ``np.issubdtype``: a matrix of durations was read as seconds (or
    failed inside scikit-learn with "float() argument must be ... not 'datetime.timedelta'"). ``X`` is an array,
    a sparse matrix or a DataFrame (each column checked).
    """
    if hasattr(X, "columns") and hasattr(X, "dtypes"):
        found = [(c, d) for c, d in zip(X.columns, X.dtypes) if getattr(d, "kind", None) in ("m", "M")]
    else:
        d = getattr(X, "dtype", None)
        found = [(None, d)] if getattr(d, "kind", None) in ("m", "M") else []
    if found:
        col, d = found[0]
        where = f" (column {plain_value(col)!r})" if col is not None else ""
        raise TypeError(f"{name} must hold ratings as numbers, got dtype {d}{where}: dates and durations are not "
                        "ratings (convert them to numbers first if they are meant as ratings)")


def check_numeric_text(X, name="X"):
    """Ratings written as text, one rule for a DataFrame and an array: text that reads as numbers (``"4.5"``) is
    accepted, any other text refused (TypeError naming the column, the row and the value).

    scikit-learn's conversion said "could not convert string to float: 'x'", naming neither the column nor what
    was expected, and refused a numpy array of text outright ("dtype='numeric' is not compatible with arrays of
    bytes/strings") while the same text in a DataFrame was parsed. Returns ``X``; an array (or a list) of text
    that reads as numbers is returned as an object array, which is then converted as a DataFrame's text columns are.
    """
    import pandas as pd

    if isinstance(X, pd.DataFrame):
        for col, dtype in zip(X.columns, X.dtypes):
            if not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
                continue
            values = X[col]
            bad = values.notna().to_numpy() & pd.to_numeric(values, errors="coerce").isna().to_numpy()
            if bad.any():
                at = int(np.flatnonzero(bad)[0])
                _refuse_text(name, col, at, values.iloc[at], int(bad.sum()))
        return X
    if isinstance(X, (list, tuple)):
        data = np.asarray(X) if all(isinstance(row, (list, tuple, np.ndarray)) for row in X) else None
    else:
        data = X if isinstance(X, np.ndarray) else None
    if data is None or data.dtype.kind not in "USO" or data.ndim != 2 or data.size == 0:
        return X
    if data.dtype.kind == "O":
        # the text of an object array only: its other objects (a dict, a date) go on to scikit-learn's own
        # refusal. The set of the values' types (built in C) decides the common case, an object array of numbers,
        # without a Python call per value (0.55 s at 2000 x 1000)
        values = data.ravel().tolist()
        if not any(issubclass(t, (str, bytes)) for t in set(map(type, values))):
            return X
        text = np.fromiter(map(isinstance, values, itertools.repeat((str, bytes))), dtype=bool, count=len(values))
    else:
        text = np.ones(data.size, dtype=bool)
    flat = pd.Series(data.ravel(), dtype=object)
    if data.dtype.kind == "S":  # bytes: pandas reads text
        flat = flat.map(lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
    bad = np.zeros(flat.size, dtype=bool)
    bad[text] = pd.to_numeric(flat[text], errors="coerce").isna().to_numpy()
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        row, col = divmod(k, data.shape[1])
        _refuse_text(name, col, row, flat.iloc[k], int(bad.reshape(data.shape)[:, col].sum()))
    return X if data.dtype.kind == "O" else flat.to_numpy(dtype=object).reshape(data.shape)


def _refuse_text(name, col, row, value, count):
    raise TypeError(f"{name} column {plain_value(col)!r} holds {plain_value(value)!r} (row {row}), not a rating: "
                    f"expected numbers ({count} value(s) of that column are not; 0 means 'not rated')")


def check_rating_matrix(X, *, name="X", rating_range=None, dtype=(np.float64, np.float32)):
    """Validate a user x item rating matrix (0 = not rated).

    Dense arrays, every scipy sparse format and DataFrames of sparse columns
    (read without densifying, as ``"csr"``) are accepted; sparse input is
    returned as CSR (the format is remembered so a transform can give back the
    caller's format, see :func:`restore_sparse_format`). Explicitly stored zeros
    are dropped: 0 means "not rated".

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_users, n_items)
        The ratings.
    name : str, default="X"
        Name used in error messages.
    rating_range : tuple (low, high) or None, default=None
        When given, every stored (nonzero) rating must lie in it.
    dtype : tuple of numpy dtypes, default=(np.float64, np.float32)
        dtypes kept as they are; any other (integers, booleans, float16 ...)
        is converted to float64.

    Returns
    -------
    X_checked : ndarray or csr_matrix / csr_array
    sparse_format : str or None
        The input's sparse format (``"csr"``, ``"csc"``, ``"coo"`` ...) or None for dense.
    """
    fmt = None
    check_rating_container(X, name)
    check_table(X, name)
    check_no_time_values(X, name)
    X = check_numeric_text(X, name)
    if not is_sparse_frame(X):  # a NaN-filled sparse column is read with 0 for its unstored cells
        refuse_nan_ratings(X, name)  # a pivot table's unrated cells were "non-finite ratings"
    if is_sparse_frame(X):  # np.asarray below densified the whole user x item table
        X = sparse_frame_as_csr(X, name)
    if sp.issparse(X):
        fmt = X.format
        Xc = X.tocsr(copy=True)
        if Xc.dtype not in dtype:
            Xc = Xc.astype(np.float64)
        Xc = canonical_sparse(Xc)
        data = Xc.data
    else:
        Xc = as_float_if_object(np.asarray(X), name)
        if not np.issubdtype(Xc.dtype, np.number) and Xc.dtype != bool:
            raise TypeError(f"{name} must hold numbers, got dtype {Xc.dtype}")
        if Xc.dtype not in dtype:
            Xc = Xc.astype(np.float64)
        data = Xc
    if Xc.ndim != 2:
        raise ValueError(f"{name} must be 2-D (users x items), got shape {Xc.shape}")
    if Xc.shape[0] == 0 or Xc.shape[1] == 0:
        raise ValueError(f"{name} must have at least one user and one item, got shape {Xc.shape}")
    finite = np.isfinite(data)
    if not finite.all():
        bad = data[~finite].ravel()[0]
        raise ValueError(
            f"{name} contains {np.count_nonzero(~finite)} non-finite rating(s) (for example {plain_value(bad)!r}); "
            "ratings must be finite numbers with 0 meaning 'not rated'"
        )
    check_not_subnormal(Xc, name)
    if rating_range is not None:
        low, high = rating_range
        vals = data[data != 0] if not sp.issparse(Xc) else data
        out = (vals < low) | (vals > high)
        if np.any(out):
            raise ValueError(
                f"{name} has {np.count_nonzero(out)} rating(s) outside the rating scale "
                f"[{low}, {high}] (for example {plain_value(vals[out].ravel()[0])!r}); 0 means 'not rated'"
            )
    return Xc, fmt


def check_not_subnormal(X, name="X", *, where=None):
    """Refuse a nonzero rating closer to 0 than its dtype's smallest normal number (ValueError naming it).

    A subnormal such as ``1e-320`` was a stored rating of about 0 (0 is "not rated"): it reads as 0 where
    the processor flushes subnormals to zero, and as a real rating elsewhere, so one file meant two things.
    ``X`` is a dense array, a scipy sparse matrix or a 1-D column of ratings; ``where(i)`` describes the
    ``i``-th value (default: its row and column). Integer and boolean dtypes hold no subnormal.
    """
    data = X.data if sp.issparse(X) else np.asarray(X)
    if data.dtype.kind != "f" or data.size == 0:
        return
    tiny = np.finfo(data.dtype).tiny
    sub = (data > -tiny) & (data < tiny) & (data != 0)
    if not sub.any():
        return
    k = int(np.flatnonzero(sub.ravel())[0])
    if where is not None:
        at = where(k)
    elif sp.issparse(X) and X.format in ("csr", "csc"):
        major, minor = int(np.searchsorted(X.indptr, k, side="right") - 1), int(X.indices[k])
        at = f"row {major}, column {minor}" if X.format == "csr" else f"row {minor}, column {major}"
    elif sp.issparse(X) and X.format == "coo":
        at = f"row {int(X.row[k])}, column {int(X.col[k])}"
    elif data.ndim == 2:
        i, j = np.unravel_index(k, data.shape)
        at = f"row {int(i)}, column {int(j)}"
    else:
        at = f"position {k}"
    raise ValueError(f"{name} holds {np.count_nonzero(sub)} subnormal rating(s) (for example "
                     f"{plain_value(data.ravel()[k])!r} at {at}): a nonzero rating closer to 0 than "
                     f"{format_bound(tiny)} (the smallest normal {data.dtype}) reads as 0, 'not rated', where "
                     "subnormals are flushed to zero; "
                     "ratings are expected on a scale away from 0 (store 0 for 'not rated', or rescale them)")


def as_float_if_object(X, name="X"):
    """An object array (numbers as strings, pandas categorical columns) as float64; other arrays unchanged.

    Raises a TypeError naming ``name`` when an entry is not a number.
    """
    if X.dtype != object:
        return X
    try:
        return X.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must hold numbers, got {X.dtype}: {exc}") from None


def nullable_numpy_dtype(X):
    """The numpy integer (or bool) dtype of a DataFrame of integer columns some of which are pandas' nullable
    ``Int64``, ``UInt8``, ``boolean`` ... (their common numpy dtype: ``int64``, ``uint8``, ``bool`` ...), else None.

    scikit-learn reads such a frame as float64 (pd.NA as NaN), so a release computed from it lost the
    integer dtype: ``transform`` released unrounded ratings, and a dask frame's partitions could not be
    cast back to ``Int64`` ("cannot safely cast non-equivalent object to int64").
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns") or len(dtypes) == 0:
        return None
    found = [d if isinstance(d, np.dtype) else getattr(d, "numpy_dtype", None) if getattr(d, "_is_numeric", False)
             else None for d in dtypes]
    if any(d is None or np.dtype(d).kind not in "iub" for d in found) or all(isinstance(d, np.dtype) for d in dtypes):
        return None  # a column that is not an integer, or plain numpy columns (scikit-learn keeps their dtype)
    return np.result_type(*found)


def round_ratings(values, out=None):
    """Ratings rounded to whole numbers (``np.rint``), never to 0: 0 is "not rated", so a nonzero rating
    of magnitude at most 0.5 becomes its sign (-0.2 becomes -1) instead of being lost.

    The one rounding of ratings for an integer or bool ``X``: at fit (the release profiles) and at
    transform (:func:`ratings_in_dtype`). ``out=values`` rounds in place.
    """
    values = np.asarray(values, dtype=np.float64)
    lost = (values != 0) & (np.abs(values) <= 0.5)
    signs = np.sign(values[lost])
    out = np.rint(values, out=out)
    out[lost] = signs
    return out


def ratings_in_dtype(values, dtype, *, what, source, name="X"):
    """Released ratings ``values`` (floats) as an ``X`` of ``dtype`` holds them, or a ValueError.

    Rounded (not truncated) for an integer or boolean dtype, never to 0 (0 is "not rated": the rating
    would be lost; a mean of -0.2 becomes -1); kept as they are for a float dtype (the caller casts
    them, float16 and float32 at their own precision). Refused when ``dtype`` cannot hold them: astype
    wrapped around (a 100-200 scale released -119 into int8), made every rating True in a bool ``X``
    or ``inf`` in a float16 one. The message names the dtype, the values' range (``what``, from
    ``source``) and a dtype that holds them.
    """
    values = np.asarray(values, dtype=np.float64)
    dtype = np.dtype(dtype)
    if values.size == 0:
        return values
    if dtype.kind in "iub":
        values = round_ratings(values)
    lo, hi = float(values.min()), float(values.max())
    if dtype.kind == "b":
        low, high = 0, 1
    else:
        info = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
        low, high = info.min, info.max
    if lo < low or hi > high:
        if dtype.kind in "iub" and max(abs(lo), abs(hi)) < 2**63:
            wide = np.result_type(np.min_scalar_type(int(lo)), np.min_scalar_type(int(hi)))
            instead = f"float64, or {wide} to keep whole-number ratings"
        else:
            instead = "float64"
        raise ValueError(f"{name} has dtype {dtype}, which cannot hold the {what} (from {lo:g} to {hi:g}, "
                         f"{source}); pass {name} as {instead}")
    return values


def canonical_sparse(X):
    """A sparse CSR / CSC / COO rating matrix with its duplicates summed and its stored zeros dropped (0 = not rated).

    scipy sums a pair stored twice and a stored 0 is "not rated", but code reading ``indptr`` / ``data``
    directly (rating counts, distances to the cluster centres, item means) took a non-canonical matrix
    at its word: duplicates counted twice, a stored 0 as a rating. Returns ``X`` itself when it is
    already canonical (or dense), else a canonical copy: the caller's matrix is never modified.
    """
    if not sp.issparse(X) or not hasattr(X, "has_canonical_format") or (  # DOK, LIL: one entry per pair
            X.has_canonical_format and not np.any(X.data == 0)):
        return X
    X = X.copy()
    X.sum_duplicates()
    X.eliminate_zeros()
    return X


def restore_sparse_format(X_csr, sparse_format):
    """Convert a CSR result back to the caller's sparse format (no-op for CSR or dense).

    Parameters
    ----------
    X_csr : sparse matrix or ndarray
        The result, CSR when sparse.
    sparse_format : str or None
        The caller's format as :func:`check_rating_matrix` returned it (``"csc"``,
        ``"coo"`` ...; None for dense input).

    Returns
    -------
    sparse matrix or ndarray
        ``X_csr`` in ``sparse_format``.
    """
    if sparse_format is None or sparse_format == "csr" or not sp.issparse(X_csr):
        return X_csr
    return X_csr.asformat(sparse_format)


def is_sparse_frame(X):
    """Whether ``X`` is a pandas DataFrame whose columns are all sparse (``pd.SparseDtype``).

    scikit-learn's ``validate_data`` reads such a frame as a scipy sparse matrix; a transform that
    returns the caller's type gives it back with :func:`sparse_frame_like` (dense output would
    densify it).
    """
    import pandas as pd

    return (isinstance(X, pd.DataFrame) and X.shape[1] > 0
            and all(isinstance(d, pd.SparseDtype) for d in X.dtypes))


def sparse_frame_as_csr(X, name="X"):
    """A DataFrame of sparse columns as a scipy ``csr_matrix`` of its stored values, never densified.

    pandas' ``X.sparse.to_coo()`` (which scikit-learn's ``validate_data`` calls) accepts only columns filled with
    0: ``df.astype(pd.SparseDtype(float))``, the usual way to make a frame sparse, fills with NaN and stores
    every other value, zeros included, so a frame without a single NaN was refused with pandas' "fill value must
    be 0 when converting to COO matrix", naming no column; ``np.asarray`` read it densely (the whole user x item
    table in memory). Here a NaN-filled column whose cells are all stored is read as it is (a stored 0 is "not
    rated"); one with unstored cells holds NaN there: ValueError naming their number and the first, as for a
    dense NaN (0 means "not rated" in a rating matrix). Other fill values are refused by :func:`check_table`.
    """
    import pandas as pd

    n_rows = X.shape[0]
    rows, cols, vals, dtypes = [], [], [], []
    nan_count, first = 0, None
    for j, (_, col) in enumerate(X.items()):
        arr = col.array
        pos = np.asarray(arr.sp_index.indices, dtype=np.int64)
        if pd.isna(arr.fill_value) and pos.size < n_rows:
            nan_count += n_rows - pos.size
            unstored = np.setdiff1d(np.arange(n_rows), pos, assume_unique=True)
            if first is None or int(unstored[0]) < first[0]:  # the first in row order
                first = (int(unstored[0]), j)
        rows.append(pos)
        cols.append(np.full(pos.size, j, dtype=np.int64))
        vals.append(np.asarray(arr.sp_values))
        dtypes.append(col.dtype.subtype)
    if nan_count:
        raise ValueError(
            f"{name} holds {nan_count} NaN entries (the first at row {first[0]}, column {first[1]}: unstored cells of "
            f"a sparse column filled with NaN); in a rating matrix 0 means 'not rated': fill them with 0 "
            f"({name}.fillna(0) keeps the columns sparse, filled with 0)")
    dtype = np.result_type(*dtypes)
    data = np.concatenate(vals).astype(dtype, copy=False) if vals else np.empty(0, dtype=dtype)
    return sp.csr_matrix((data, (np.concatenate(rows), np.concatenate(cols))), shape=X.shape, dtype=dtype)


def zero_fill_sparse_frame(X, name="X"):
    """``X`` unchanged unless it is a DataFrame of sparse columns one of which is filled with NaN: then the same
    frame (index, column labels, stored values) with every column filled with 0, which scikit-learn's
    ``validate_data`` reads as a sparse matrix (see :func:`sparse_frame_as_csr`, which refuses unstored NaN
    cells)."""
    if not is_sparse_frame(X) or all(d.fill_value == 0 for d in X.dtypes):
        return X
    import pandas as pd

    return pd.DataFrame.sparse.from_spmatrix(sparse_frame_as_csr(X, name), index=X.index, columns=X.columns)


def sparse_frame_like(X_sparse, like):
    """``X_sparse`` (a scipy sparse matrix) as a DataFrame of sparse columns (fill value 0) with ``like``'s
    index and column labels."""
    import pandas as pd

    return pd.DataFrame.sparse.from_spmatrix(X_sparse, index=like.index, columns=like.columns)


def _label_mismatch(ix, iy):
    """``None`` when two pandas axes pair by position (the same labels, a default ``0, 1, 2 ...`` beside other
    labels, a length that differs, or not two pandas axes), else ``(ix, iy, k, what)``: the first position
    ``k`` where they differ, and whether they hold the same labels in another order or other labels."""
    import pandas as pd

    if not (isinstance(ix, pd.Index) and isinstance(iy, pd.Index)) or len(ix) != len(iy) or ix.equals(iy):
        return None
    try:
        same = ix.sort_values().equals(iy.sort_values())
    except TypeError:  # labels that cannot be ordered (ints beside strings): not one set of labels in two orders
        same = False
    if not same and any(isinstance(i, pd.RangeIndex) and i.start == 0 and i.step == 1 for i in (ix, iy)):
        return None
    k = int(np.flatnonzero(ix.to_numpy(dtype=object) != iy.to_numpy(dtype=object))[0])
    return ix, iy, k, "the same labels in another order" if same else "other labels"


def check_same_columns(X, y, name="y", *, x_name="X"):
    """Refuse a pandas ``y`` whose columns are labelled differently from a pandas ``X``'s (ValueError).

    The column counterpart of :func:`check_same_index`, for two user x item frames paired cell by cell
    (predictions and held-out ratings): a ``y`` with its item columns in another order paired every rating
    with another item's prediction.
    """
    _refuse_label_mismatch(X, y, "columns", name, x_name, "ratings would be paired with other items")


def check_same_index(X, y, name="y", *, x_name="X", consequence="users would get other users' labels"):
    """Refuse a pandas ``y`` whose index labels its rows differently from a pandas ``X`` (ValueError).

    scikit-learn pairs the rows of ``X`` and ``y`` by position and ignores their indexes, so a ``y``
    indexed by user id in another order than ``X`` silently gave every user another user's label
    (a shuffled private attribute: the fitted prior, and the leakage claimed from it, described
    nobody). A default index (``0, 1, 2 ...``) on either side is read as "paired by position", unless the
    other side holds the same labels in another order: ``y.sort_values()`` beside a frame built from an
    array was paired by position with the wrong users.
    """
    _refuse_label_mismatch(X, y, "index", name, x_name, consequence)


def _refuse_label_mismatch(X, y, axis, name, x_name, consequence):
    """The ValueError of :func:`check_same_index` (``axis="index"``) and :func:`check_same_columns`."""
    rows = axis == "index"
    # an X without labels (an array, a sparse matrix) is paired by position, as scikit-learn pairs it, whatever y's
    # index holds: a y whose index is the positions in another order is what shuffling or sorting a table together
    # with X gives (sklearn.utils.shuffle(X, y), a frame sorted then split into X.to_numpy() and y), paired right
    mismatch = _label_mismatch(getattr(X, axis, None), getattr(y, axis, None))
    if mismatch is None:
        return
    ix, iy, k, same = mismatch
    what = "is indexed differently from" if rows else "has columns labelled differently from"
    where, paired = ("row", "rows") if rows else ("column", "columns")
    align = f"{name}.reindex({x_name}.index)" if rows else f"{name}.reindex(columns={x_name}.columns)"
    raise ValueError(
        f"{name} {what} {x_name} ({same}: {where} {k} is {plain_value(ix[k])!r} in {x_name} but "
        f"{plain_value(iy[k])!r} in {name}); {paired} are paired by position, so {consequence}: align it first "
        f"({align}), or pass {name}.to_numpy() if the positions already match"
    )


def check_private_labels(y, n_samples, *, name="y"):
    """Validate the private attribute: one label per user, undisclosed ones marked.

    "Not disclosed" has one definition, :func:`undisclosed_mask`: ``-1``, ``None``,
    NaN, ``pd.NA`` and the texts of :data:`UNDISCLOSED_TEXTS` (``""``, ``"-1"``, ``"nan"``,
    ``"NA"`` ...). The disclosed labels must be of one kind: numbers, strings or booleans; a
    mix (``1`` beside ``True``, ``"a"`` beside ``2``, ``b"a"`` beside ``"a"``) is refused, since
    ``numpy.unique`` would merge or reorder them silently. ``Decimal`` (what ``pandas.read_sql``
    gives) and ``Fraction`` labels are numbers, checked as floats are, and returned as ints;
    complex labels raise :class:`~privrelease.exceptions.ComplexDataError`. Labels of any other type (sets,
    frozensets, Enums, tuples in a 1-D ``y``, objects) are refused with a TypeError: ``numpy.unique`` cannot
    order them into classes. Numbers +1 and -1 alone warn that -1 was read as "not disclosed".

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The labels (a single column of shape (n_samples, 1) is accepted).
    n_samples : int
        Number of users (rows of ``X``) the labels must match.
    name : str, default="y"
        Name used in error messages.

    Returns
    -------
    y : ndarray of shape (n_samples,)
    labeled : ndarray of bool
        Which users disclosed the attribute.
    """
    y = _as_label_array(y, name)
    if y.ndim != 1:
        y = y.ravel() if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one private attribute per user), got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} labels but X has {n_samples} users")
    _refuse_complex_labels(y, name)
    labeled = ~undisclosed_mask(y)
    _warn_marker_words(y, labeled, name)
    _check_finite_labels(y, labeled, name)
    _check_categorical_labels(y, labeled, name)
    if y.dtype.kind == "O" and labeled.any():
        check_label_kinds(y[labeled].tolist(), name)
        y = _exact_numbers_as_ints(y, labeled)
    _warn_plus_minus_one(y, labeled, name)
    return y, labeled


def _minus_one_count(y, labeled):
    """How many undisclosed labels of ``y`` are the number -1 (not a text marker, not None or NaN)."""
    hidden = ~labeled
    if not hidden.any():
        return 0
    if y.dtype.kind in "iuf":
        return int(np.sum(y[hidden] == -1))
    if y.dtype.kind == "O":
        # a Decimal NaN is no -1 (a signalling one raised in ==)
        return sum(1 for v in y[hidden].tolist()
                   if _is_real_label(v) and not (isinstance(v, Decimal) and v.is_nan()) and v == -1)
    return 0


def undisclosed_note(y, labeled):
    """A sentence for the "single class" errors: how many users were read as not disclosed, -1 among them.

    ``y`` (1-D) and ``labeled`` as :func:`check_private_labels` returns them; "" when every user disclosed.
    """
    hidden = int(np.sum(~labeled))
    if not hidden:
        return ""
    minus = _minus_one_count(y, labeled)
    said = f"; {hidden} user(s) were read as not disclosed ({UNDISCLOSED_SHORT})"
    if minus:
        said += (f", {minus} of them labelled -1: if -1 is a class (a -1/+1 coding), recode it first "
                 "(for example numpy.where(y == -1, 0, y)), -1 means 'not disclosed'")
    return said


def _warn_plus_minus_one(y, labeled, name):
    """Warn when numeric labels are +1 beside -1 only (a -1/+1 coding): -1 is read as "not disclosed", which
    left a single class (or, with 0 beside them, silently the classes 0 and 1)."""
    minus = _minus_one_count(y, labeled)
    if not minus or not labeled.any():
        return
    if y.dtype.kind == "O" and any(not _is_real_label(v) for v in y[labeled].tolist()):
        return
    if y.dtype.kind not in "iufO":
        return
    values = set(np.asarray(y[labeled], dtype=np.float64).tolist()) if y.dtype.kind != "O" else \
        {float(v) for v in y[labeled].tolist()}
    if values != {1.0}:
        return
    warnings.warn(
        f"{name} holds the numbers -1 ({minus} user(s)) and +1 only: -1 means 'not disclosed' "
        "(privrelease.utils.undisclosed_mask), so those users are no class. If -1 is a class (a -1/+1 coding), "
        f"recode it first (for example numpy.where({name} == -1, 0, {name}))", UserWarning,
        stacklevel=user_stacklevel())


def _warn_marker_words(y, labeled, name):
    """Warn, once, when text labels hold marker words such as ``'None'``, ``'NA'`` or ``'?'``: those users are
    "not disclosed" (left out of the classes), where the text may be a real class ('None' as a religion was no
    class, and the mapper then left it unprotected, an attacker telling it from the others)."""
    if y.dtype.kind not in "USO" or labeled.all():
        return
    counts = {}
    for v in y[~labeled].ravel().tolist():
        if isinstance(v, bytes):
            v = v.decode("latin-1")
        if isinstance(v, str) and v.strip().lower() in _MARKER_WORDS:
            counts[v.strip()] = counts.get(v.strip(), 0) + 1
    if not counts:
        return
    said = ", ".join(f"{t!r} ({k} user{'s' if k > 1 else ''})" for t, k in counts.items())
    first = next(iter(counts))
    warnings.warn(
        f"{name} holds the text(s) {said}, read as 'not disclosed' (privrelease.utils.UNDISCLOSED_TEXTS): those "
        f"users are no class and the release does not protect them as one. If such a text is a real class, rename "
        f"it to keep it as a class (for example y.replace({first!r}, {first + ' (class)'!r}) on a pandas Series)",
        UserWarning, stacklevel=user_stacklevel())


def _is_real_label(v):
    """A real number as a label: Python and numpy integers and floats, ``Decimal`` (what ``pandas.read_sql`` gives
    for a NUMERIC column) and ``Fraction``; never a boolean or a complex number."""
    if isinstance(v, (bool, np.bool_, complex, np.complexfloating)):
        return False
    return isinstance(v, (numbers.Real, np.number, Decimal))


def _is_complex_label(v):
    return isinstance(v, (complex, np.complexfloating))


def _refuse_complex_labels(y, name):
    """Complex labels (:class:`~privrelease.exceptions.ComplexDataError`): ``numpy.unique`` cannot order them in an
    object array, and in a complex array ``1+0j`` and ``1`` would be one class."""
    if y.dtype.kind == "c":
        first = y.ravel()[0] if y.size else None
        raise ComplexDataError(f"Complex data not supported: {name} must hold real numbers, strings or booleans, got "
                               f"complex dtype {y.dtype} (for example {plain_value(first)!r})")
    if y.dtype.kind == "O":
        flat = y.ravel().tolist()
        at = next((i for i, v in enumerate(flat) if _is_complex_label(v)), None)
        if at is not None:
            raise ComplexDataError(f"Complex data not supported: {name} must hold real numbers, strings or booleans, "
                                   f"got {sum(map(_is_complex_label, flat))} complex label(s) (for example "
                                   f"{plain_value(flat[at])!r} at index {at})")


def _exact_numbers_as_ints(y, labeled):
    """``Decimal`` and ``Fraction`` labels (integer-valued: the others were refused) as Python ints, the classes
    they are; a copy of ``y`` when there are any. ``Decimal('1')`` stayed a ``Decimal`` class that no file could
    hold."""
    flat = y.tolist()
    at = [i for i, v in enumerate(flat) if labeled[i] and isinstance(v, (Decimal, Fraction))]
    if not at:
        return y
    y = y.copy()
    for i in at:
        y[i] = int(flat[i])
    return y


def check_label_kinds(labels, name="y"):
    """Refuse disclosed labels of more than one kind (numbers, strings, booleans ...) with a TypeError naming
    the kinds and one label of each: ``numpy.unique`` would merge ``1`` and ``True`` or fail on ``'1'`` beside
    ``1``. ``labels`` is any iterable of disclosed labels (the blocks of a dask ``y`` are checked together)."""
    kinds = {}
    for v in labels:
        kinds.setdefault(_label_kind(v), v)
    _refuse_unsupported_kinds(kinds, name)
    if len(kinds) > 1:
        raise TypeError(
            f"{name} mixes label types {sorted(kinds)} (for example "
            + ", ".join(f"{v!r}" for v in kinds.values())
            + "); expected one kind of label (all numbers, all strings or all booleans), "
            "so that 1 and True, or '1' and 1, are never merged into one class"
        )


#: the kinds of label numpy.unique orders into classes (see _label_kind); complex ones have their own error
_SUPPORTED_KINDS = ("bool", "number", "string", "bytes", "complex")


def _refuse_unsupported_kinds(kinds, name):
    """Refuse labels that are no number, string, bytes or boolean (TypeError naming the type and a value).

    ``numpy.unique`` cannot order sets, frozensets or Enums: three distinct frozensets gave 81 "classes", an Enum
    "'<' not supported"; a 1-D ``y`` of tuples was one attribute for the mapper and several elsewhere.
    """
    bad = [k for k in kinds if k not in _SUPPORTED_KINDS]
    if not bad:
        return
    v = kinds[bad[0]]
    if isinstance(v, (tuple, list)):
        raise TypeError(
            f"{name} holds {type(v).__name__}s as labels (for example {v!r}); a 1-D {name} holds one label per user: "
            f"for several private attributes pass a 2-D {name}, one column per attribute (for example "
            f"pandas.DataFrame({name}.tolist())), or encode each value as a string")
    raise TypeError(
        f"{name} holds labels of type {type(v).__name__} (for example {v!r}); a label must be a number, a string, "
        f"bytes or a boolean (numpy and pandas scalars of those included): encode each value as a string (for "
        f"example {name}.map(str) on a pandas Series), or for several attributes pass a 2-D {name}, one column "
        "per attribute")


def plain_labels(y):
    """Disclosed labels checked by :func:`check_private_labels` as a plain numpy array of the same classes.

    An object array becomes the array of its values (``np.asarray(y.tolist())``), except that whole numbers are
    kept exact: ``2**53 + 1`` beside ``0.0`` became the float ``2**53``, one class with ``2**53`` where the
    mapper (``numpy.unique`` of the objects) had two. Every entry point reads its labels through this.
    """
    if y.dtype != object:
        return y
    flat = y.tolist()
    plain = np.asarray(flat)
    if plain.dtype.kind == "f" and any(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                                       and float(v) != int(v) for v in flat):
        plain = np.asarray([int(v) for v in flat])  # the numbers are whole (check_private_labels)
    return plain


def refuse_missing_target(y, name="y", what="real numbers"):
    """Refuse a real-valued target that misses a value or holds an infinite one (ValueError naming the first
    such value, NaN, None, ``pd.NA`` or +-inf, and its position). Run before scikit-learn's ``validate_data``,
    whose "Input y contains NaN." names neither where nor what is expected.

    A target of values that are no numbers (strings that are no numbers) is refused as :func:`check_real_target`
    refuses it (TypeError naming its dtype); numbers stored as strings are read as the numbers, as scikit-learn
    reads them. Other values (complex numbers, dates) are left to :func:`check_real_target`.
    """
    import pandas as pd

    if y is None or sp.issparse(y) or (type(y).__module__ or "").startswith("dask"):
        return
    dtypes = list(y.dtypes) if hasattr(y, "columns") else [getattr(y, "dtype", None)]
    nullable = any(d is not None and not isinstance(d, np.dtype) for d in dtypes)  # pd.NA read as NaN by numpy
    try:
        arr = np.asarray(y)
        plain = arr.dtype.kind in "biuf" and not nullable
        values = arr.ravel() if plain else np.asarray(y, dtype=object).ravel()
    except (TypeError, ValueError):
        return  # a ragged table: check_table names it
    if values.dtype.kind in "biuf":
        floats = values.astype(np.float64)
    else:
        missing = np.asarray(pd.isna(values), dtype=bool)
        floats = np.full(values.size, np.nan)
        for i in np.flatnonzero(~missing):
            v = values[i]
            if isinstance(v, numbers.Real):
                floats[i] = float(v)
            elif isinstance(v, str):
                try:
                    floats[i] = float(v)
                except ValueError:
                    raise TypeError(_not_real_text(name, what, arr.dtype, v)) from None
            else:
                return
    _refuse_non_finite(values, floats, name, what)


def _not_real_text(name, what, dtype, example):
    """The message refusing a target of ``dtype`` that holds values that are no real numbers (``example``)."""
    return f"{name} must hold {what}, got an array of dtype {dtype} (for example {plain_value(example)!r})"


def _refuse_non_finite(values, floats, name, what):
    """ValueError naming the first value of ``values`` whose number (``floats``, NaN for a missing one) is not
    finite: NaN, None and ``pd.NA`` as missing, +-inf as infinite, with the position and the counts."""
    bad = ~np.isfinite(floats)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    v = values[i]
    shown = "None" if v is None else "pd.NA" if _is_pd_na(v) else repr(plain_value(v))
    n_inf = int(np.isinf(floats).sum())
    counts = [f"{n} {kind} value(s)" for n, kind in ((int(bad.sum()) - n_inf, "missing"), (n_inf, "infinite")) if n]
    raise ValueError(f"{name} must hold {what}, got {shown} at position {i} ({' and '.join(counts)}); every row "
                     "needs a finite value")


def _is_pd_na(v):
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return False
    return v is pd.NA


def check_real_target(y, name="y", what="real numbers", finite=False):
    """Refuse a target that is not made of real numbers (strings, complex, dates) with a message naming it.

    ``validate_data(..., y_numeric=True)`` converts object arrays but lets a string array through, which then
    fails deep inside numpy. ``finite=True`` also refuses NaN and +-inf (as :func:`refuse_missing_target` names
    them): scikit-learn checks an object ``y`` for NaN before converting it, and ``None`` (or ``float("inf")``)
    in an object array or Series is no NaN there, so it comes out of ``validate_data`` as NaN (inf).
    """
    if y.dtype.kind not in "biuf":
        raise TypeError(_not_real_text(name, what, y.dtype, y.ravel()[0] if y.size else None))
    if finite and y.dtype.kind == "f":
        _refuse_non_finite(y.ravel(), y.ravel(), name, what)
    return y


def _numeric_labels(y, labeled):
    """Indices and float values of the disclosed labels that are numbers (booleans excluded): the whole labeled
    part of a float array, the real numbers among an object array's labels; ``None`` when there are none to check."""
    if y.dtype.kind == "f":
        at = np.flatnonzero(labeled)
        return at, y[at]
    if y.dtype.kind == "O" and labeled.any():
        at = [i for i, v in enumerate(y.tolist()) if labeled[i] and _is_real_label(v)]
        return np.asarray(at, dtype=np.intp), np.array([float(y[i]) for i in at], dtype=np.float64)
    return None


def _check_finite_labels(y, labeled, name):
    """Refuse +-inf as a label: it is neither a class nor a "not disclosed" marker (NaN and -1 are)."""
    numeric = _numeric_labels(y, labeled)
    if numeric is None:
        return
    at, vals = numeric
    bad_at = at[np.isinf(vals)]
    if bad_at.size:
        i = int(bad_at[0])
        raise ValueError(
            f"{name} holds {bad_at.size} infinite label(s) (for example {plain_value(y[i])!r} at index {i}); a private "
            "attribute's values are finite classes, and a user who did not disclose it is marked -1 or NaN"
        )


def _check_categorical_labels(y, labeled, name):
    """Refuse non-integer numbers as labels (scikit-learn's "continuous" target).

    Every distinct value would become a class of its own (an income in dollars: one class per user), and
    a prior over such classes is an estimate of nothing. Integer-valued floats (``1.0``) are classes.
    Runs after :func:`_check_finite_labels` (the labels are finite).
    """
    numeric = _numeric_labels(y, labeled)
    if numeric is None:
        return
    at, vals = numeric
    bad_at = at[vals != np.round(vals)]
    if bad_at.size:
        i = int(bad_at[0])
        v = plain_value(y[i])
        raise ValueError(
            f"{name} holds {bad_at.size} non-integer number(s) (for example {v!r} at index {i}); a private "
            "attribute is a category (scikit-learn's classifiers refuse such a continuous target too): bin a "
            "numeric attribute into bands first (for example with numpy.digitize), or give the classes as "
            "integers or strings"
        )


#: The texts that mean "not disclosed", compared after stripping spaces and ignoring case: the empty string, ``-1``
#: written as an integer or a float, and the usual spellings of a missing value, among them what ``str()`` and
#: ``astype(str)`` make of NaN, None, ``pd.NA`` and ``pd.NaT`` (``"nan"``, ``"None"``, ``"<NA>"``, ``"NaT"``), so a
#: label array turned into text keeps its undisclosed users out of the classes. The command line's files use the
#: same list.
UNDISCLOSED_TEXTS = ("", "-1", "-1.0", "nan", "na", "n/a", "<na>", "nat", "none", "null", "?")
#: the markers of "not disclosed" that are also words a class can be spelled with ('None' as a religion, 'NA' as
#: North America, '?' as "unknown" chosen by the user): labels holding them are warned about
_MARKER_WORDS = tuple(t for t in UNDISCLOSED_TEXTS if t not in ("", "-1", "-1.0", "nan", "nat", "<na>"))
# ('nan', 'NaT' and '<NA>' are what numpy and pandas write for a missing value turned into text, never a class)
#: "not disclosed" in a few words, for error messages
UNDISCLOSED_SHORT = "-1, None, NaN, pd.NA, or a text such as '', 'nan', 'NA' (privrelease.utils.UNDISCLOSED_TEXTS)"
#: The markers of "not disclosed", shared by every estimator of privrelease.
UNDISCLOSED_MARKERS = ("-1 (int or float)", "None", "NaN", "pd.NA / pd.NaT",
                       "the texts " + ", ".join(repr(t) for t in UNDISCLOSED_TEXTS) + " (in any case, spaces ignored)")


def _label_kind(v):
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if _is_complex_label(v):
        return "complex"
    if _is_real_label(v):
        return "number"
    if isinstance(v, (str, np.str_)):
        return "string"
    if isinstance(v, (bytes, np.bytes_)):
        return "bytes"  # b'a' beside 'a' is two kinds: numpy.unique cannot order them together
    return type(v).__name__


def _undisclosed_text(v):
    """Whether the text ``v`` (str or bytes) is one of :data:`UNDISCLOSED_TEXTS`."""
    if isinstance(v, bytes):
        v = v.decode("latin-1")
    return v.strip().lower() in UNDISCLOSED_TEXTS


def undisclosed_mask(y):
    """Which labels mean "not disclosed": the one definition used by every estimator.

    A label is undisclosed when it is ``-1`` (integer, float, ``Decimal`` or ``Fraction``), ``None``, NaN,
    ``pd.NA`` / ``pd.NaT``, or a text of :data:`UNDISCLOSED_TEXTS` (compared after
    stripping spaces, in any case): ``""``, ``"-1"``, ``"-1.0"``, ``"nan"``, ``"NA"``,
    ``"N/A"``, ``"<NA>"``, ``"NaT"``, ``"None"``, ``"null"`` and ``"?"``; these include what
    ``astype(str)`` makes of NaN, None and -1.0, so labels turned into text keep their
    undisclosed users out of the classes. Booleans are never undisclosed (``False`` is a
    class, not a marker).

    Parameters
    ----------
    y : array-like of shape (n_samples,)

    Returns
    -------
    mask : ndarray of bool, shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> from privrelease.utils import undisclosed_mask
    >>> undisclosed_mask(np.array(["f", "-1", "m", ""])).tolist()
    [False, True, False, True]
    >>> undisclosed_mask(np.array([0.0, 1.0, np.nan]).astype(str)).tolist()
    [False, False, True]
    >>> undisclosed_mask([0, 1, -1, None, float("nan")]).tolist()
    [False, False, True, True, True]
    """
    y = _as_label_array(y)
    kind = y.dtype.kind
    if kind == "f":
        return np.isnan(y) | (y == -1)
    if kind in "iu":
        return y == -1
    if kind == "b":
        return np.zeros(y.shape, dtype=bool)
    if kind in "US":
        texts = np.char.lower(np.char.strip(y if kind == "U" else np.char.decode(y, "latin-1")))
        return np.isin(texts, UNDISCLOSED_TEXTS)
    if kind == "O":
        import pandas as pd

        out = np.zeros(y.shape, dtype=bool)
        for i, v in enumerate(y.ravel().tolist()):
            if v is None or (not isinstance(v, (str, bytes)) and _is_scalar_na(v, pd)):
                out.flat[i] = True
            elif isinstance(v, (bool, np.bool_)):
                continue
            elif isinstance(v, (str, bytes)):
                out.flat[i] = _undisclosed_text(v)
            elif isinstance(v, Decimal):
                out.flat[i] = v.is_nan() or v == -1  # a signalling NaN raised in pandas' isna and in ==
            elif _is_real_label(v):
                out.flat[i] = v == -1
        return out
    raise TypeError(f"private labels of dtype {y.dtype} are not supported; expected numbers, strings or booleans")


def _is_scalar_na(v, pd):
    try:
        return bool(pd.isna(v)) if np.ndim(v) == 0 else False
    except (TypeError, ValueError, ArithmeticError):  # Decimal('sNaN'): decimal.InvalidOperation
        return False


def check_label_input(y, name="y"):
    """Refuse what numpy would misread as labels, before any ``np.asarray(y)`` (ValueError / TypeError naming ``name``).

    * a masked array with masked entries: ``np.asarray`` drops the mask, so a masked ("missing")
      label used to be taken at whatever value it hid, and a user who had not disclosed the
      attribute entered the prior as if she had;
    * a scipy sparse matrix: ``np.asarray`` wraps it in a 0-d object array ("got shape ()");
    * a list of rows of different lengths (:func:`check_table`).
    """
    refuse_masked(y, name, "used as disclosed labels", f"mark them not disclosed first (for example "
                  f"{name}.astype(object).filled(\"\"), or {name}.filled(-1) for numbers)")
    if sp.issparse(y):
        raise TypeError(f"{name} must be an array of labels (one per user), got a scipy sparse {type(y).__name__} "
                        f"of shape {y.shape}; pass {name}.toarray() (or .ravel() of it for one attribute)")
    check_table(y, name)


def _as_label_array(y, name="y"):
    """An ndarray of labels; pandas' nullable and categorical labels become objects (pd.NA kept)."""
    check_label_input(y, name)
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        dtype = getattr(y, "dtype", None)
        if isinstance(dtype, np.dtype):
            return y.to_numpy()
        return y.to_numpy(dtype=object)
    if isinstance(y, (list, tuple)):
        return _list_labels(y)
    return np.asarray(y)


def _list_labels(y):
    """A Python list of labels as an array; an object array when its disclosed labels mix kinds.

    ``np.asarray`` merged such a list before the mixed-kind check could see it: ``[1, "1", 0]`` became
    the strings ``['1', '1', '0']`` and ``[True, 1, 0]`` the integers ``[1, 1, 0]`` (the same labels in an
    object array were refused). Kept as objects, the list meets the same refusal.
    """
    natural = np.asarray(y)
    if natural.dtype == object or natural.ndim not in (1, 2):
        return natural
    try:
        obj = np.asarray(y, dtype=object)
    except (TypeError, ValueError):  # pragma: no cover - np.asarray(y) succeeded
        return natural
    if obj.shape != natural.shape:
        return natural
    columns = obj.reshape(obj.shape[0], -1) if obj.ndim == 2 else obj[:, None]
    for j in range(columns.shape[1]):
        col = columns[:, j]
        labeled = ~undisclosed_mask(col)
        if len({_label_kind(v) for v in col[labeled].tolist()}) > 1:
            return obj
    return natural
