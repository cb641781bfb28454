"""A privacy accountant: sequential composition of epsilon-DP releases.

The design follows IBM diffprivlib's ``BudgetAccountant``: mechanisms do not keep
track of the privacy they spend; they ask an explicit accountant object whether a
release fits in the budget (:meth:`PrivacyAccountant.check`) and then record it
(:meth:`PrivacyAccountant.spend`). The accountant is either passed explicitly or
is the process-wide default one (:func:`get_default_accountant`).

What records: the estimators that release, :class:`~privrelease.auctions.DCLEFEstimator`
(each ``predict``) and :class:`~privrelease.regression.TruthfulRegressionMechanism`
(each ``fit``, ``2 epsilon``). As in diffprivlib, the mechanisms themselves
(:class:`~privrelease.noise.Laplace`, :class:`~privrelease.noise.VectorLaplace`,
:meth:`privrelease.contracts.BiasedLaplaceMechanism.release`) do not: code that calls
them directly records its releases with :meth:`PrivacyAccountant.spend`.

Two levels of accounting are kept:

* **dataset level** (the budget): a release that gives individual ``i`` an
  ``eps_i``-DP guarantee is ``max_i eps_i``-differentially private for the data set
  as a whole; by sequential composition (Dwork and Roth 2014, Theorem 3.16) a
  sequence of releases is ``sum`` of those ``epsilon``-DP. ``spent`` is that sum and
  ``epsilon`` the budget it may not exceed;
* **individual level** (personalised guarantees, as the DCLEFs of Dandekar, Fawaz
  and Ioannidis 2012, eq. 8): a release may also record the vector of ``eps_i`` of
  a named *population* (for example the individuals a
  :class:`~privrelease.auctions.DCLEFEstimator` was fitted on), with the payments
  made to them; :meth:`PrivacyAccountant.individual_spent` composes them per
  individual.
"""

import hashlib
import math
import multiprocessing
import numbers
import os
import secrets
import threading
import warnings
import weakref

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..exceptions import BudgetExceededError, PrivacyLeakWarning
from ..utils import check_number
from ..utils._validation import (check_allocation, check_real_target, format_bound, plain_value, refuse_masked,
                                 user_stacklevel)

__all__ = [
    "PrivacyAccountant",
    "get_default_accountant",
    "set_default_accountant",
    "check_accountant",
]

#: relative slack when comparing a spend with the budget (float round-off of sums)
_RTOL = 1e-12

#: ledger id -> the live accountant that is this process's own ledger of that id: a pickle of it loaded in this
#: process again is that accountant, not a second ledger with a budget of its own
_LEDGERS = weakref.WeakValueDictionary()
_LEDGERS_LOCK = threading.Lock()
#: this process's session (with its id: a fork child shares it, a later process that reuses the id does not)
_SESSION = secrets.token_hex(8)


def _exceeds(amount, bound):
    """``amount > bound`` beyond the relative slack ``_RTOL`` (float round-off of sums).

    Written as a difference: ``bound * (1 + _RTOL)`` overflowed to inf for a bound within
    ``1e-12`` of the largest float, and then no amount, not even an infinite one, exceeded it.
    """
    return amount > bound and amount - bound > _RTOL * bound


class _WouldDeadlock(RuntimeError):
    """Waiting for a ledger's lock would close a cycle of threads each waiting for a lock the next one holds."""


#: thread id -> the ledger lock that thread is waiting for (read and written under ``_WAITS_LOCK``)
_WAITS = {}
_WAITS_LOCK = threading.Lock()


def _after_fork_in_child():
    """A fork child has one thread: no other waits, and a wait lock held by another thread at the fork is free."""
    global _WAITS_LOCK
    _WAITS.clear()
    _WAITS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _LedgerLock:
    """A ledger's reentrant lock (what :meth:`PrivacyAccountant.atomic` returns) that refuses to wait when waiting
    would never end: when its holder waits, directly or through other threads, for a ledger lock the calling thread
    holds, ``acquire`` raises :class:`_WouldDeadlock` (a RuntimeError naming the cycle) instead of blocking.

    Two threads each in the ``atomic()`` block of one ledger and asking for the other's lock (a ``spend`` on it,
    or loading a later snapshot of it) waited for ever; now the second to ask is refused, before it changed
    anything, and the first goes on once the refused one leaves its block.
    """

    __slots__ = ("_lock", "_owner", "_depth")

    def __init__(self):
        self._lock = threading.Lock()
        self._owner = None   # thread id of the holder
        self._depth = 0      # how many times it holds it

    def acquire(self, blocking=True, timeout=-1):
        me = threading.get_ident()
        if self._owner == me:
            self._depth += 1
            return True
        if not self._lock.acquire(False):
            if not blocking:
                return False
            if timeout is not None and timeout >= 0:
                # a timed wait ends by itself: neither refused nor recorded as a wait another thread's check follows
                # (a thread waiting 0.2 s on a ledger held by one waiting for it was refused, where the lock's wait
                # returned False after 0.2 s and let the other through)
                if not self._lock.acquire(True, timeout):
                    return False
                self._owner, self._depth = me, 1
                return True
            with _WAITS_LOCK:
                lock, seen = self, set()
                while lock is not None and id(lock) not in seen:
                    seen.add(id(lock))
                    owner = lock._owner
                    if owner == me:
                        raise _WouldDeadlock(
                            "this PrivacyAccountant's lock is held by a thread waiting (directly or through others) "
                            "for a ledger lock this thread holds (an atomic() block): waiting would never end, so "
                            "the call is refused (nothing was recorded); take the ledgers' atomic() blocks in the "
                            "same order in every thread")
                    lock = _WAITS.get(owner)
                _WAITS[me] = self
            try:
                got = self._lock.acquire(True, timeout)
            finally:
                with _WAITS_LOCK:
                    del _WAITS[me]
            if not got:
                return False
        self._owner, self._depth = me, 1
        return True

    def release(self):
        if self._owner != threading.get_ident():
            raise RuntimeError("cannot release a PrivacyAccountant lock this thread does not hold")
        self._depth -= 1
        if not self._depth:
            self._owner = None
            self._lock.release()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False


def _check_epsilon(value, name="epsilon", *, budget=False):
    """A real number >= 0 as a float64 (inf allowed), by ``check_number``; -0.0 is 0.0.

    A spend beyond float64 (an int such as ``10**400``) is recorded as inf, an upper bound of it; a ``budget``
    beyond float64 is refused (inf would be an unlimited budget, more than the one given). A positive value that
    float64 rounds to 0 (``np.longdouble("1e-4000")``) is refused: recorded as 0, a release would spend nothing.
    """
    v = check_number(value, name, low=0.0, allow_inf=True, overflow_to_inf=not budget)
    if v == 0 and value > 0:
        raise ValueError(f"{name} = {plain_value(value)!r} is positive but rounds to 0 in float64, which would record "
                         "no privacy spent; expected 0 or a number >= 5e-324")
    return v + 0.0  # -0.0 is shown and recorded as 0.0


def _unequal_to_itself(name):
    """Whether a population name (or an item of a tuple name) is not equal to itself, as NaN is: a dictionary would
    never find its ledger again."""
    if isinstance(name, (tuple, frozenset)):  # frozenset({nan}) == itself, not a new frozenset({nan})
        return any(_unequal_to_itself(v) for v in name)
    try:
        return not bool(name == name)
    except (TypeError, ValueError, ArithmeticError):  # pd.NA, Decimal('sNaN')
        return True


def _map_name(name, kinds):
    """``name`` with its values of ``kinds`` (in its tuples and frozensets too) made Python ints; ``name`` itself
    when it holds none."""
    if isinstance(name, kinds):
        return int(name)
    if isinstance(name, (tuple, frozenset)):
        items = [_map_name(v, kinds) for v in name]
        if any(a is not b for a, b in zip(items, name)):
            return frozenset(items) if isinstance(name, frozenset) else tuple(items)
    return name


def _without_bools(name):
    """``name`` with the booleans inside its tuples and frozensets made ints (the name they hash and compare as);
    ``name`` itself when it holds none."""
    return _map_name(name, (bool, np.bool_))


def _inexact_number(name):
    """The first number in a population name (or in its tuples and frozensets) that is not an integer: a float,
    ``Fraction``, ``Decimal`` or complex; None when there is none. ``1.0 == 1`` and they hash alike, so
    ``population=1.0`` wrote into the ledger of population 1 (and ``0.5`` into none another run could name
    exactly)."""
    if isinstance(name, (tuple, frozenset)):
        return next((v for v in map(_inexact_number, name) if v is not None), None)
    if isinstance(name, numbers.Number) and not isinstance(name, (numbers.Integral, bool, np.bool_)):
        return name
    return None


def _plain_integers(name):
    """``name`` with its numpy integers (in its tuples and frozensets too) made Python ints: the key the ledger
    is kept and shown under (``np.int64(1)`` and ``1`` are one population)."""
    return _map_name(name, np.integer)


def _sparse_row(v):
    """One release's per-individual figures as ``(indices, values)`` of the nonzero entries: the row a csr
    matrix would store, without building one (a 1 x n csr_matrix took 0.46 ms a release, half of a spend)."""
    nz = np.flatnonzero(v)
    return nz, v[nz]


def _stack_rows(rows, n):
    """csr_matrix (len(rows), n) of rows stored by :func:`_sparse_row` (or, in a ledger pickled before, as 1 x n
    sparse matrices)."""
    if not rows:
        return sp.csr_matrix((0, n))
    parts = [(r.indices, r.data) if sp.issparse(r) else r for r in rows]  # old ledgers stored csr rows
    indptr = np.concatenate([[0], np.cumsum([idx.size for idx, _ in parts])])
    indices = np.concatenate([idx for idx, _ in parts]).astype(np.int64, copy=False)
    data = np.concatenate([val for _, val in parts]).astype(np.float64, copy=False)
    return sp.csr_matrix((data, indices, indptr), shape=(len(parts), n))


#: key of a record that says whether the release recorded individual epsilons (in its population's book); not shown
#: in ``records``
_INDIVIDUAL = "_individual_epsilons"
#: key of a record holding a token of its own: two snapshots of one ledger share a release only if they share its
#: token (equal epsilons are not the same release); not shown in ``records``
_RELEASE = "_release"


def _ledger_error(what, value, expected):
    return ValueError(f"a loaded PrivacyAccountant ledger has {what} = {plain_value(value)!r:.80}, expected "
                      f"{expected}; the ledger was edited or damaged and is refused (nothing of it was loaded)")


def _ledger_number(value):
    """``value`` as a float when it is a real number (not a boolean), else None."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    try:
        return float(value)
    except OverflowError:  # an int beyond float64
        return math.inf if value > 0 else -math.inf


def _spends_sum(spends):
    """The exact sum of a ledger's spends (floats >= 0), inf when one is inf or the sum is beyond float64."""
    try:
        return math.fsum(spends) if all(map(math.isfinite, spends)) else math.inf
    except OverflowError:  # finite spends >= 0 whose sum is beyond float64 (two of 1e308): the total is inf
        return math.inf


def _budget_seal(epsilon):
    """What a saved ledger records of its budget: ``(epsilon.hex(), a digest of that text)``. A budget edited in the
    file alone (a larger one resumed as if it had been given) no longer matches it, as an edited spend no longer adds
    up to the stored total. A consistency check against careless edits, not a signature: whoever edits the budget
    and recomputes the digest (or deletes the record, as a ledger of an older version has none) is not caught. Not
    tied to the ledger's id, which a session of an older version renews while keeping the record it does not know."""
    budget = float(epsilon).hex()
    return budget, hashlib.sha256(f"privrelease-ledger-budget|{budget}".encode()).hexdigest()[:32]


def _check_budget_seal(state, eps):
    """Refuse a budget that is not the one the ledger was saved with (a ledger of an older version has no seal)."""
    seal = state.get("_budget_seal")
    if seal is None and "_budget_seal" not in state:
        return
    try:
        saved = float.fromhex(seal[0])
        ok = tuple(seal) == _budget_seal(saved)
    except (TypeError, ValueError, IndexError, KeyError, OverflowError):
        ok = False
    if not ok:
        raise _ledger_error("a budget record", seal, "the (budget, digest) pair the ledger was saved with")
    if saved != eps:
        raise _ledger_error("the budget epsilon", eps, f"the budget it was saved with ({plain_value(saved)!r})")


def _check_ledger(state):
    """Re-verify an unpickled ledger: a valid budget, the one it was saved with, spends that are numbers >= 0 adding
    up to the stored total, one record per spend, and population books whose rows, individual epsilons and payments
    fit the spends (ValueError naming the first value that does not hold)."""
    if not isinstance(state, dict):
        raise _ledger_error("a state of type", type(state).__name__, "a dict")
    eps = _ledger_number(state.get("epsilon"))
    if eps is None or math.isnan(eps) or eps < 0:
        raise _ledger_error("the budget epsilon", state.get("epsilon"), "a number >= 0 (inf: unlimited)")
    spends, records = state.get("_spends"), state.get("_records")
    if not isinstance(spends, list) or not isinstance(records, list):
        raise _ledger_error("_spends and _records of types", (type(spends).__name__, type(records).__name__),
                            "two lists")
    for i, s in enumerate(spends):
        v = _ledger_number(s)
        if v is None or math.isnan(v) or v < 0 or (math.isinf(v) and not math.isinf(eps)):
            raise _ledger_error(f"release {i}'s epsilon", s, "a number >= 0 (inf only under an unlimited budget)")
    spends = [float(s) for s in spends]
    if len(records) != len(spends):
        raise _ledger_error("the number of records", len(records), f"one per release ({len(spends)})")
    for i, (s, rec) in enumerate(zip(spends, records)):
        if not isinstance(rec, dict):
            raise _ledger_error(f"record {i}", rec, "a dict of the release's information")
        got = rec.get("epsilon")
        if _ledger_number(got) != s:
            raise _ledger_error(f"record {i}'s epsilon", got, f"the epsilon of release {i} ({plain_value(s)!r})")
    exact = _spends_sum(spends)
    if "_total" not in state and "_carry" not in state and not any(_RELEASE in rec for rec in records):
        # the first version kept no running total (its spent summed _spends) and no release tokens: refused as
        # "edited or damaged", its ledgers could not be resumed; the total is the sum of the spends checked above
        # (__setstate__ stores it). A ledger with release tokens was written with a total: one without is edited
        state = dict(state, _total=exact, _carry=0.0)
    total, carry = _ledger_number(state.get("_total")), _ledger_number(state.get("_carry", 0.0))
    if total is None or carry is None or math.isnan(total) or math.isnan(carry):
        raise _ledger_error("the total spent", state.get("_total"), "a number")
    stored = float(total) + float(carry) if math.isfinite(total) else float(total)
    # a plain running sum of n terms >= 0 is within n ulps (relative) of the exact sum; the compensated one closer
    slack = (len(spends) + 1) * np.finfo(np.float64).eps * exact if math.isfinite(exact) else 0.0
    if not (stored == exact or abs(stored - exact) <= slack):
        raise _ledger_error("the total spent", stored, f"the sum of its {len(spends)} releases' epsilons "
                            f"({exact!r})")
    books = state.get("_populations")
    if not isinstance(books, dict):
        raise _ledger_error("_populations of type", type(books).__name__, "a dict")
    booked = set()  # the releases some population book lists
    for name, book in books.items():
        where = f"population {plain_value(name)!r}"  # 'population 'p' release row 0 = 7'
        if not isinstance(book, dict) or set(book) != {"n", "rows", "eps", "pay"}:
            raise _ledger_error(f"{where} book", book, "a dict with keys n, rows, eps, pay")
        n, rows = book["n"], book["rows"]
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise _ledger_error(f"{where} size n", n, "an integer >= 0")
        if not (isinstance(rows, list) and isinstance(book["eps"], list) and isinstance(book["pay"], list)
                and len(rows) == len(book["eps"]) == len(book["pay"])):
            lengths = tuple(len(v) if isinstance(v, list) else None for v in (rows, book["eps"], book["pay"]))
            raise _ledger_error(f"{where} rows, eps and pay of lengths", lengths,
                                "three lists of one entry per release of the population")
        for k, row in enumerate(rows):
            if isinstance(row, (bool, np.bool_)) or not isinstance(row, (int, np.integer)) \
                    or not 0 <= row < len(spends) or (k and row <= rows[k - 1]):
                raise _ledger_error(f"{where} release row {k}", row,
                                    f"increasing release numbers in [0, {len(spends)})")
            if not isinstance(records[row], dict) or records[row].get("population") != name:
                raise _ledger_error(f"record {row}'s population", records[row].get("population"), where)
            if records[row].get(_INDIVIDUAL, True) is not True:
                raise _ledger_error(f"{where} release row {k}", row, "a release that recorded individual epsilons")
            booked.add(row)
        for key in ("eps", "pay"):
            for k, part in enumerate(book[key]):
                try:
                    idx, val = (part.indices, part.data) if sp.issparse(part) else part
                    idx, val = np.asarray(idx), np.asarray(val)
                    ok = (idx.ndim == val.ndim == 1 and idx.shape == val.shape and idx.dtype.kind in "iu"
                          and val.dtype.kind in "iuf")
                except (TypeError, ValueError):
                    ok = False
                if not ok or (idx.size and (idx.min() < 0 or idx.max() >= n)):
                    raise _ledger_error(f"{where} {key} entry {k}", part, f"(indices in [0, {n}), values) of "
                                        "one release")
                bad = ~np.isfinite(val) | (val < 0)
                if bad.any():
                    raise _ledger_error(f"{where} {key} value in release row {k}", val[bad][0],
                                        "a finite number >= 0")
                if key == "eps" and val.size and _exceeds(float(val.max()), float(spends[rows[k]])):
                    raise _ledger_error(f"{where} largest individual epsilon in release {rows[k]}", val.max(),
                                        f"at most that release's epsilon ({plain_value(spends[rows[k]])!r})")
    # record -> book: a release marked as having recorded individual epsilons is in its population's book (a
    # removed book, or a book whose last rows were cut, loaded and reset individual_spent); a ledger pickled before
    # the mark existed has none, and only the book -> record check above applies to it
    for i, rec in enumerate(records):
        if rec.get(_INDIVIDUAL) is True and i not in booked:
            raise _ledger_error(f"record {i}'s population book", plain_value(rec.get("population")),
                                "a book listing this release, which recorded individual epsilons")
    _check_budget_seal(state, eps)  # last: a ledger edited elsewhere too is named by that edit


class PrivacyAccountant:
    """Keep the account of the privacy spent by a sequence of releases.

    Sequential composition: releases that are ``epsilon_1``-, ...,
    ``epsilon_k``-differentially private are together ``sum_j epsilon_j``-DP. The
    accountant refuses (raises :class:`~privrelease.exceptions.BudgetExceededError`)
    a release that would take that sum past ``epsilon``; nothing is recorded for
    a refused release.

    Copying or cloning an accountant returns the same object (``copy.deepcopy``
    and :func:`sklearn.base.clone` share it): a ledger of privacy actually spent
    must never be duplicated, or the spending of a cloned estimator (in
    ``cross_val_score``, ``GridSearchCV``) would be recorded on a copy nobody sees.
    Worker processes (``n_jobs > 1`` with joblib's processes, a ``multiprocessing`` pool, their
    own workers, a fork) receive copies, and what a copy records never reaches the original: a
    copy refuses every release when it has a budget
    (:class:`~privrelease.exceptions.BudgetExceededError`: it could not keep it) and records
    with a :class:`~privrelease.exceptions.PrivacyLeakWarning` when unlimited (the original's
    ledger will not show the release). The estimators that record
    (``accountant=None``) tell their workers the calling process's default budget, so a
    ``with PrivacyAccountant(epsilon=...):`` block around ``cross_val_score(...,
    n_jobs=2)`` refuses the releases its workers would make instead of letting each worker
    record on an unlimited default of its own. Make releases in the process that holds the
    accountant (``n_jobs=1``, or joblib threads), or install an accountant in the worker
    itself (``set_default_accountant`` or a ``with`` block there), which is then used.
    An accountant pickled and loaded in a later, unrelated process is a ledger of its own
    (to resume a budget across sessions); one unpickled in the process whose ledger it is, is
    that process's accountant itself while it lives (``pickle.loads(pickle.dumps(acc)) is acc``,
    as for a deep copy; an estimator returned by a worker, or saved and loaded in one session,
    records on the original, never on a second ledger with the whole budget again). A copy that
    recorded in a worker and came back is the original too, without its records; a later snapshot
    loaded while a handle of an earlier one lives brings that handle up to date (one ledger, one
    budget), and a snapshot that diverged from it (both recorded since) is refused (``ValueError``).
    An unpickled ledger is re-verified before it is used: a budget that is not a number
    ``>= 0``, a negative or NaN spend, a stored total that is not the sum of the spends,
    records or population books that do not match them are refused (``ValueError``
    naming the value).

    Parameters
    ----------
    epsilon : float, default=inf
        Total budget, ``>= 0``. ``inf`` records without ever refusing.

    Attributes
    ----------
    epsilon : float
        The total budget.

    See Also
    --------
    get_default_accountant : The accountant used when none is passed.
    privrelease.auctions.DCLEFEstimator : Records each query's auction here.

    References
    ----------
    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
    2014, Theorem 3.16 (sequential composition).
    P. Dandekar, N. Fawaz and S. Ioannidis, "Privacy Auctions for Recommender
    Systems", WINE 2012, eq. (8) (per-individual guarantees of a DCLEF).

    Examples
    --------
    >>> from privrelease.accounting import PrivacyAccountant
    >>> acc = PrivacyAccountant(epsilon=1.0)
    >>> acc.spend(0.25).spend(0.5).spent
    0.75
    >>> acc.remaining()
    0.25
    >>> acc.spend(0.5)
    Traceback (most recent call last):
    ...
    privrelease.exceptions.BudgetExceededError: release refused: it would spend epsilon = 0.5 ...
    >>> acc.spent, len(acc)
    (0.75, 2)
    """

    def __init__(self, epsilon=np.inf):
        self.epsilon = _check_epsilon(epsilon, budget=True)
        self._lock = _LedgerLock()   # reentrant: spend() inside an atomic() block
        self._spends = []            # dataset-level epsilon of each release
        self._total = 0.0            # their running sum (compared with the budget up to 1e-12) ...
        self._carry = 0.0            # ... and the round-off it lost (Neumaier), so that spent stays exact
        self._records = []           # dict of information per release
        self._populations = {}       # name -> dict(n=..., rows=[...], eps=[...], pay=[...])
        self._pid = os.getpid()      # the process this ledger lives in: elsewhere (a pickle, a fork) it is a copy
        self._ledger_id = secrets.token_hex(16)  # the same in every pickle and copy of this ledger
        self._session = _SESSION
        self._register()

    def _register(self):
        """The live accountant of this process that holds this ledger: this one when there is none yet, else the
        live one (one ledger, one budget). Copies (in a worker, a fork) are not registered.

        * a copy that recorded releases in a worker (unlimited, with a warning) and came back: the live one, its
          records left out (a copy's records never reach the original; measured: the copies returned by
          ``cross_validate(..., n_jobs=2, return_estimator=True)`` had more releases than the original, one of them
          became the ledger, and ``pickle.loads(pickle.dumps(acc)) is acc`` was False);
        * a snapshot whose releases the live one holds (an earlier or the same state): the live one;
        * a later snapshot of the ledger an earlier snapshot's handle holds (loaded after the original died): that
          handle, brought up to date in place (a second handle with the same id and a budget of its own let a
          budget of 1 release 1.75);
        * a snapshot that diverged from the live one (both recorded releases since they parted): ValueError.
        """
        if self._copy_of() is not None:
            return self
        while True:
            with _LEDGERS_LOCK:
                live = _LEDGERS.get(self._ledger_id)
                if live is None or live is self or live._copy_of() is not None:
                    _LEDGERS[self._ledger_id] = self
                    self.__dict__.pop("_copy_recorded", None)  # the ledger of this process now
                    return self
                # without the live ledger's lock: its history only grows outside this registry lock, so a snapshot
                # it holds stays held and a diverged one stays diverged (a load took the live ledger's lock every
                # time, and one made inside another ledger's atomic() block waited for ever on a thread doing the
                # converse)
                if live._absorb(self, update=False) is live:
                    return live
            # a later snapshot: the live ledger is brought up to date under its own lock (an atomic() block on it
            # sees no change mid-block), taken first, then the registry's (the order of every path taking both)
            try:
                live._lock.acquire()
            except _WouldDeadlock:
                raise RuntimeError(
                    "this PrivacyAccountant snapshot is later than the live ledger of it in this process, which is "
                    "brought up to date under its lock; another thread holds that lock (an atomic() block) and "
                    "waits for a ledger lock this thread holds (another accountant's atomic() block): the two "
                    "would wait for each other for ever, so the load is refused (nothing of it was loaded); load "
                    "it outside the atomic() block") from None
            try:
                with _LEDGERS_LOCK:
                    if _LEDGERS.get(self._ledger_id) is not live:
                        continue  # replaced meanwhile: look again
                    return live._absorb(self)
            finally:
                live._lock.release()

    def _absorb(self, loaded, update=True):
        """This live ledger, once ``loaded`` (the same ledger id, not registered) is taken into account (see
        :meth:`_register`; the registry's lock held, and this ledger's when ``update``); None when ``loaded`` is
        later and not ``update``: it is then to be taken in under this ledger's lock."""
        # the releases themselves (their epsilons and tokens), not the epsilons alone: a snapshot that diverged with
        # a release of the same epsilon (0.5 by the original, then 0.5 by an earlier snapshot's handle) was taken for
        # the same history, and a budget of 1 released 1.5
        mine, theirs = _history(self), _history(loaded)
        if loaded.__dict__.get("_copy_recorded") or (len(theirs) <= len(mine) and mine[:len(theirs)] == theirs):
            return self
        if theirs[:len(mine)] == mine:
            if not update:
                return None
            for key in ("epsilon", "_spends", "_total", "_carry", "_records", "_populations"):
                self.__dict__[key] = loaded.__dict__.get(key, 0.0)
            return self
        raise ValueError(
            f"this PrivacyAccountant ledger is live in this process with {len(mine)} release(s) (spent "
            f"{self.spent:.6g}), and the loaded snapshot of it holds {len(theirs)} (spent {loaded.spent:.6g}): "
            "both recorded releases the other does not have since they parted, so neither is the whole ledger; "
            "the load is refused rather than making two ledgers of one budget (nothing of it was loaded)")

    # ---------------------------------------------------------------- copying
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce_ex__(self, protocol):
        # loaded through _restore, which returns the live accountant of this ledger where there is one
        return _restore, (self.__getstate__(),)

    def __getstate__(self):
        # under the lock, with the lists copied: a shallow copy taken while another thread recorded held lists of
        # different lengths by the time they were pickled (31 of 396 round trips refused as a damaged ledger)
        with self._lock:
            state = self.__dict__.copy()
            state["_spends"] = list(self._spends)
            state["_records"] = list(self._records)
            state["_populations"] = {name: {k: list(v) if isinstance(v, list) else v for k, v in book.items()}
                                     for name, book in self._populations.items()}
        del state["_lock"]
        state.pop("_previous", None)  # the defaults this process's with-blocks replaced: not part of the ledger
        state.pop("_warned_copy", None)
        try:  # the budget as saved (the state's own, not a later change by another thread)
            state["_budget_seal"] = _budget_seal(state["epsilon"])
        except (TypeError, ValueError, OverflowError):
            pass  # not a budget a ledger holds: the load refuses it by its own check, naming the value
        state["_sent_from"] = os.getpid()  # the process that pickled it: a worker's parent, or an earlier session
        return state

    def __setstate__(self, state):
        # a ledger loaded from a file is re-verified before it is used: an edited one (spent reset to 0, a negative
        # or NaN spend, a NaN budget that refused nothing) loaded and resumed a budget it had not kept
        _check_ledger(state)
        if "_total" not in state and "_carry" not in state:  # a ledger of the first version (_check_ledger said so)
            state = dict(state, _total=_spends_sum([float(s) for s in state["_spends"]]), _carry=0.0)
        self.__dict__.update(state)
        self.__dict__.pop("_budget_seal", None)  # checked above; sealed again from the budget at each save
        self._lock = _LedgerLock()
        sent_from = self.__dict__.pop("_sent_from", None)
        pid = self.__dict__.setdefault("_pid", None)  # None: a pickle of an older version, origin unknown
        parent = multiprocessing.parent_process()
        if (pid is not None and pid != os.getpid() and sent_from != os.getpid()
                and (parent is None or sent_from != parent.pid)):
            # neither this process's own ledger, nor one its parent sent (a worker's copy, which keeps its origin
            # through every level of workers), nor a copy pickled here again: a ledger saved by an unrelated
            # process, an earlier session, is this process's own now; its own workers then receive copies of it
            self._pid = os.getpid()
        if self._copy_of() is None and not (pid == os.getpid() and self.__dict__.get("_session") == _SESSION):
            # a ledger of an earlier session (or of an older version) is a new ledger of this one: two snapshots of
            # it saved at different times are two ledgers here, neither taken for the other. The SAME snapshot
            # loaded twice is one ledger (its id derived from the snapshot and this session): two loads of one file
            # each spent 0.6 of a budget of 1 with 0.4 spent before
            self._ledger_id = _snapshot_ledger_id(state)
            self._session = _SESSION
            if pid is None:  # an older version's file: this process's own ledger now (as an earlier session's)
                self._pid = os.getpid()
            # registered here: a pickle of an older version is loaded without _restore, and its ledger was never
            # registered, so a round trip of it made a second ledger with a budget of its own (1.5 released on 1)
            self._register()

    def _copy_of(self):
        """The id of the process the original lives in when this accountant is a copy of it: unpickled in a
        worker (of any depth) of that process, or inherited by a fork; None otherwise (an accountant loaded by an
        unrelated process, a later session, is that process's own, see ``__setstate__``)."""
        pid = self.__dict__.get("_pid")
        return pid if pid is not None and pid != os.getpid() else None

    def _budget_only(self):
        """A copy of this accountant with its budget and origin but none of its ledger: what an estimator tells a
        worker of the default budget (a pickle of the whole ledger grew with every release, 32 MB after 2,000, and
        carried other populations' payments)."""
        stub = PrivacyAccountant(self.epsilon)
        stub._pid = self.__dict__.get("_pid") or os.getpid()
        return stub

    def _refuse_copy(self, epsilon):
        """Refuse a release on a budgeted copy; warn (once per copy) on an unlimited one (see the class notes)."""
        origin = self._copy_of()
        if origin is None:
            return
        where = (f"this PrivacyAccountant is a copy, in process {os.getpid()}, of the one in process {origin} (a "
                 "worker of n_jobs > 1, or a fork): what it records never reaches the original")
        if not math.isinf(self.epsilon):
            raise BudgetExceededError(
                f"release refused: it would spend epsilon = {epsilon:.6g}, but {where}, so the budget epsilon = "
                f"{self.epsilon:g} cannot be kept; make the release in the process that holds the accountant "
                "(n_jobs=1, or joblib threads: prefer='threads'), or give each worker an accountant created there")
        if not self.__dict__.get("_warned_copy"):
            self._warned_copy = True
            warnings.warn(f"{where}: the original's ledger (spent, records, individual_spent) will not show this "
                          "release; make it in the process that holds the accountant (n_jobs=1, or joblib threads) "
                          "to have it recorded", PrivacyLeakWarning, stacklevel=user_stacklevel())

    def __repr__(self):
        return (f"PrivacyAccountant(epsilon={self.epsilon!r}) "
                f"[spent={self.spent:.6g} in {len(self)} release(s)]")

    def __len__(self):
        return len(self._spends)

    # ---------------------------------------------------------------- default
    def __enter__(self):
        """Make this accountant the default one inside a ``with`` block (blocks may nest, this one included).

        The default is the process's, as diffprivlib's is: a ``with`` block in one thread sets it for every
        thread (joblib's worker threads see it), so two threads each inside a ``with`` block of their own
        record on whichever accountant entered last. Threads that need accountants of their own pass them
        explicitly (``accountant=``).
        """
        with _DEFAULT_LOCK:
            saved = (_DEFAULT["accountant"], _DEFAULT["installed_in"])
            _install(self, installed=self not in _RESET_DEFAULTS)
        # a stack: re-entering the same accountant (``with acc: with acc:``) overwrote the one saved default,
        # the outer exit raised AttributeError and left this accountant the default for good. The default is saved
        # with whether the caller had installed it: exiting back to the unlimited default of a process that
        # installed none (a worker, after ``set_default_accountant(None)`` in the block) made it count as installed
        self.__dict__.setdefault("_previous", []).append(saved)
        return self

    def __exit__(self, *exc):
        previous, installed_in = self._previous.pop()
        with _DEFAULT_LOCK:
            _DEFAULT["accountant"], _DEFAULT["installed_in"] = previous, installed_in
        return False

    # ---------------------------------------------------------------- budget
    def atomic(self):
        """A context in which no other thread records on this accountant.

        A release whose size depends on what was already spent (an individual's ``epsilon_cap``
        against :meth:`individual_spent`) reads the ledger, decides and records inside one block, so that
        releases made concurrently from several threads cannot both pass the same check: with two
        threads predicting at once, a :class:`~privrelease.auctions.DCLEFEstimator` took individuals to
        three times their ``epsilon_cap``. :meth:`spend` may be called inside (the lock is reentrant).

        Entering the block (and :meth:`spend`, pickling, or loading a later snapshot of this ledger) raises
        ``RuntimeError``, before anything is recorded or loaded, when waiting for the lock would never end: when the
        thread holding it waits, directly or through other threads, for an accountant's lock this thread holds (two
        threads nesting two accountants' blocks in opposite orders waited for each other for ever).

        Returns
        -------
        context manager

        Examples
        --------
        >>> from privrelease.accounting import PrivacyAccountant
        >>> acc = PrivacyAccountant(epsilon=1.0)
        >>> with acc.atomic():
        ...     if acc.remaining() >= 0.5:
        ...         _ = acc.spend(0.5)
        >>> acc.spent
        0.5
        """
        return self._lock

    @property
    def spent(self):
        """Total epsilon spent so far (sequential composition), a float."""
        return self._total + getattr(self, "_carry", 0.0)  # pickles of an older version have no _carry

    def remaining(self):
        """Budget left: ``epsilon - spent`` (``inf`` for an unlimited accountant)."""
        if math.isinf(self.epsilon):
            return math.inf  # inf - inf was NaN after an unlimited accountant recorded an epsilon = inf release
        return max(self.epsilon - self.spent, 0.0)

    def check(self, epsilon):
        """Raise unless a release of ``epsilon`` fits in the remaining budget.

        Parameters
        ----------
        epsilon : float
            Dataset-level epsilon of the release, ``>= 0``.

        Returns
        -------
        True

        Raises
        ------
        BudgetExceededError
            When ``spent + epsilon > budget``.
        """
        epsilon = _check_epsilon(epsilon)
        self._refuse_copy(epsilon)
        total = self.spent + epsilon
        if _exceeds(total, self.epsilon):
            raise BudgetExceededError(
                f"release refused: it would spend epsilon = {epsilon:.6g} but only "
                f"{format_bound(self.remaining())} of the budget epsilon = {self.epsilon:g} remains "
                f"({self.spent:.6g} spent in {len(self)} release(s))")
        return True

    def spend(self, epsilon, *, population=None, individual_epsilons=None, payments=None,
              **info):
        """Record a release (after checking that it fits in the budget).

        Parameters
        ----------
        epsilon : float or None
            Dataset-level epsilon of the release. ``None`` takes
            ``max(individual_epsilons)``.
        population : hashable, default=None
            Name of the population whose individual guarantees are recorded: a
            str, an int or a tuple of them. Numbers in a name are integers (numpy's
            are kept as Python ints, ``np.int64(1)`` is population ``1``); a float,
            ``Fraction``, ``Decimal`` or complex is refused (TypeError), as a boolean
            is: ``1.0 == 1`` would share the ledger of population ``1``.
        individual_epsilons : array-like of shape (n_individuals,), default=None
            Each individual's ``eps_i`` in this release (needs ``population``).
            Their maximum may not exceed ``epsilon``.
        payments : array-like of shape (n_individuals,), default=None
            What each individual was paid for this release.
        **info
            Anything else to keep in :attr:`records` (numbers or strings).

        Returns
        -------
        self

        Raises
        ------
        BudgetExceededError
            When the release would take the total past the budget; nothing is
            recorded.
        """
        eps_i = pay = None
        if individual_epsilons is not None or payments is not None:
            if population is None:
                raise ValueError("individual_epsilons / payments need a population name, "
                                 "got population=None")
            if individual_epsilons is None:
                raise ValueError("payments were given without individual_epsilons")
            # strings ("0.5" was read as 0.5) and complex numbers (the imaginary part was dropped) are refused
            eps_i = check_real_target(np.asarray(refuse_masked(individual_epsilons, "individual_epsilons", "used")),
                                      "individual_epsilons").astype(np.float64)
            if eps_i.ndim != 1 or not np.all(np.isfinite(eps_i)) or np.any(eps_i < 0):
                raise ValueError("individual_epsilons must be a 1-D array of finite numbers "
                                 f">= 0, got {individual_epsilons!r}")
            try:
                hash(population)
            except TypeError:
                raise TypeError(f"population must be a hashable name (a str, an int, a tuple), got {population!r} "
                                f"of type {type(population).__name__}") from None
            if isinstance(population, (bool, np.bool_)):
                # True == 1 and False == 0 hash alike: population=True wrote into the ledger of population 1
                raise TypeError(f"population must be a name (a str, an int, a tuple), got the boolean "
                                f"{plain_value(population)!r}, which would share the ledger of population "
                                f"{int(population)}")
            if _without_bools(population) is not population:
                # so do the tuples holding them: (True,) wrote into the ledger of population (1,)
                raise TypeError(f"population must be a name (a str, an int, a tuple), got {population!r}, which "
                                f"holds a boolean: it would share the ledger of population "
                                f"{_without_bools(population)!r}")
            if _unequal_to_itself(population):
                # a NaN name is never found again: every release opened a new ledger of its own
                raise ValueError(f"population must be a name equal to itself, got {plain_value(population)!r}: a "
                                 "NaN name would open a new ledger at every release; give a str, an int or a tuple")
            inexact = _inexact_number(population)
            if inexact is not None:
                # one rule for the numbers in a name: integers only (numpy's made Python ints), as booleans are refused
                raise TypeError(f"population must be a name (a str, an int, a tuple of them), got {population!r}, "
                                f"which holds the number {plain_value(inexact)!r} of type {type(inexact).__name__}: "
                                "numbers in a name must be integers (1.0 would share the ledger of population 1)")
            population = _plain_integers(population)
            if payments is not None:
                pay = check_real_target(np.asarray(refuse_masked(payments, "payments", "used")),
                                        "payments").astype(np.float64)
                if pay.shape != eps_i.shape:
                    raise ValueError(f"payments has shape {pay.shape} but individual_epsilons "
                                     f"has shape {eps_i.shape}")
                if not np.all(np.isfinite(pay) & (pay >= 0)):
                    at = int(np.flatnonzero(~(np.isfinite(pay) & (pay >= 0)))[0])
                    raise ValueError(f"payments must be finite numbers >= 0 (what each individual was paid), got "
                                     f"{plain_value(pay[at])!r} at index {at}")
            top = float(eps_i.max()) if eps_i.size else 0.0
            if epsilon is None:
                epsilon = top
            elif _exceeds(top, _check_epsilon(epsilon)):
                raise ValueError(f"an individual receives eps = {top:.6g}, more than the "
                                 f"release's epsilon = {epsilon:.6g}")
        elif epsilon is None:
            raise ValueError("epsilon=None needs individual_epsilons to take the maximum of")
        epsilon = _check_epsilon(epsilon)
        # the record is built before anything is committed: a key it already has ("total_payment" beside payments)
        # raised inside dict() after the budget was spent and the population's row written (a half-recorded release)
        if pay is not None and "total_payment" in info:
            raise ValueError(f"spend() sets 'total_payment' itself, the sum of payments ({float(pay.sum())!r}), got "
                             f"total_payment={plain_value(info['total_payment'])!r} too; give only one of them")
        if _RELEASE in info:
            raise ValueError(f"spend() keeps {_RELEASE!r} itself (a token of the release); got it as information")
        if _INDIVIDUAL in info:
            raise ValueError(f"spend() keeps {_INDIVIDUAL!r} itself (whether the release recorded individual "
                             "epsilons); give the information under another name")
        record = dict(epsilon=epsilon, population=population,
                      total_payment=float(pay.sum()) if pay is not None else info.pop("total_payment", 0.0), **info)
        record[_INDIVIDUAL] = eps_i is not None   # checked against the books when the ledger is loaded
        record[_RELEASE] = secrets.token_hex(8)
        with self._lock:
            self.check(epsilon)
            if eps_i is not None:
                book = self._populations.get(population, dict(n=eps_i.size, rows=[], eps=[], pay=[]))
                if book["n"] != eps_i.size:
                    raise ValueError(
                        f"population {population!r} has {book['n']} individuals but this "
                        f"release gives {eps_i.size} individual epsilons")
                self._populations[population] = book
                book["rows"].append(len(self._spends))
                book["eps"].append(_sparse_row(eps_i))
                book["pay"].append(_sparse_row(pay if pay is not None else np.zeros_like(eps_i)))
            self._spends.append(epsilon)
            # compensated (Neumaier) sum: a plain running sum drifted with the number of releases (10**6
            # spends of 1e-6 added up to 1 + 8e-12, refusing the last one of an exact budget of 1), and
            # spends below half an ulp of the total were lost (1e6 spends of 1e-16 after 1.0: spent 1.0)
            total = self._total + epsilon
            if math.isfinite(total):
                big, small = (self._total, epsilon) if abs(self._total) >= abs(epsilon) else (epsilon, self._total)
                self._carry = getattr(self, "_carry", 0.0) + ((big - total) + small)
            self._total = total
            self._records.append(record)
            if self._copy_of() is not None:
                self._copy_recorded = True  # never taken for a later state of the original (see _register)
        return self

    # ---------------------------------------------------------------- reading
    @property
    def records(self):
        """One row per release: ``epsilon``, ``population``, ``total_payment`` and the
        information given to :meth:`spend` (a new :class:`pandas.DataFrame`)."""
        return pd.DataFrame(self._records).drop(columns=[_INDIVIDUAL, _RELEASE], errors="ignore")

    def populations(self):
        """Names of the populations with individual guarantees on record."""
        return list(self._populations)

    def _find_book(self, population):
        """The ledger of ``population``, or None when none is recorded under that name; a TypeError naming an
        unhashable population (it was Python's bare "unhashable type: 'list'") and the known ones."""
        try:
            hash(population)
        except TypeError:
            raise TypeError(f"population must be a hashable name (a str, an int, a tuple), got {population!r} of "
                            f"type {type(population).__name__}; known: {self.populations()!r}") from None
        if _inexact_number(population) is not None or _without_bools(population) is not population:
            # the key spend() keeps: np.int64(1) is population 1, but a float or a boolean (refused there) names no
            # ledger but one recorded under that very name before they were refused (an accountant pickled then
            # stays readable), while 1.0 and True never read population 1 (True read its ledger as its own)
            for key, book in self._populations.items():
                if type(key) is type(population) and repr(key) == repr(population):
                    return book
            return None
        return self._populations.get(_plain_integers(population))

    def _book(self, population):
        book = self._find_book(population)
        if book is None:
            hint = ("; a boolean or a non-integer number names no population (spend() refuses them: True and 1.0 "
                    "would be population 1)" if _inexact_number(population) is not None
                    or _without_bools(population) is not population else "")
            raise KeyError(f"no release recorded for population {plain_value(population)!r}; known: "
                           f"{self.populations()!r}{hint}")
        return book

    def individual_spent(self, population, n_individuals=None):
        """Each individual's composed guarantee ``sum over releases of eps_i``.

        Parameters
        ----------
        population : hashable
            A population named in :meth:`spend` (``KeyError``, naming it and the
            known ones, for a population with no release; ``TypeError`` for an
            unhashable name). A boolean or a non-integer number names no
            population (``True`` and ``1.0`` are not population ``1``).
        n_individuals : int, default=None
            Size of the population, to get zeros for a population with no
            release yet (otherwise an unknown population raises ``KeyError``).

        Returns
        -------
        ndarray of shape (n_individuals,)
        """
        if n_individuals is not None:
            n_individuals = check_number(n_individuals, "n_individuals", low=0, integer=True)
        if n_individuals is not None and self._find_book(population) is None:
            if _inexact_number(population) is not None or _without_bools(population) is not population:
                # a name spend() refuses (True, 1.0: population 1's ledger under another key) read as "nothing
                # spent yet" understated what population 1 spent (review): refused as without n_individuals
                self._book(population)
            check_allocation(n_individuals, f"n_individuals={n_individuals}: one guarantee per individual")
            return np.zeros(n_individuals)
        spent = np.asarray(self.individual_epsilons(population).sum(axis=0)).ravel()
        if n_individuals is not None and spent.size != n_individuals:
            # the ledger of another population (or a refitted one) was returned with the wrong length
            raise ValueError(f"population {plain_value(population)!r} has {spent.size} individuals in this ledger, "
                             f"but n_individuals={n_individuals}")
        return spent

    def individual_epsilons(self, population):
        """``eps_i`` of every release of ``population``: csr_matrix (n_releases, n).

        Parameters
        ----------
        population : hashable
            A population named in :meth:`spend` (``KeyError``, listing the known
            ones, for a population with no release).

        Returns
        -------
        csr_matrix of shape (n_releases, n_individuals)
            Row ``r``: each individual's ``eps_i`` in the population's ``r``-th release.
        """
        book = self._book(population)
        return _stack_rows(book["eps"], book["n"])

    def payments(self, population):
        """Payment to each individual in each release of ``population``: csr_matrix.

        Parameters
        ----------
        population : hashable
            A population named in :meth:`spend` (``KeyError``, listing the known
            ones, for a population with no release).

        Returns
        -------
        csr_matrix of shape (n_releases, n_individuals)
            Row ``r``: the payments of the population's ``r``-th release (0 where none was recorded).
        """
        book = self._book(population)
        return _stack_rows(book["pay"], book["n"])

    def population_records(self, population):
        """The rows of :attr:`records` that belong to ``population``, in order.

        Parameters
        ----------
        population : hashable
            A population named in :meth:`spend` (``KeyError``, listing the known
            ones, for a population with no release).

        Returns
        -------
        pandas.DataFrame
            Those rows, re-indexed from 0.
        """
        return self.records.iloc[self._book(population)["rows"]].reset_index(drop=True)


def _history(acc):
    """The releases of a ledger as ``(epsilon, token)`` pairs (token None in a ledger of an older version)."""
    return [(e, r.get(_RELEASE) if isinstance(r, dict) else None) for e, r in zip(acc._spends, acc._records)]


def _snapshot_ledger_id(state):
    """The ledger id, in this session, of a snapshot of an earlier session: the same for the same snapshot (its
    ledger id, budget and releases), another for any other."""
    digest = hashlib.sha256(repr((_SESSION, state.get("_ledger_id"), state.get("epsilon"), list(state["_spends"]),
                                  state["_records"], state.get("_populations"))).encode())
    return digest.hexdigest()[:32]


def _restore(state):
    """Unpickle an accountant: in the process whose own ledger it is, the live accountant of that ledger when there
    is one (``pickle.loads(pickle.dumps(acc)) is acc``, as ``copy.deepcopy``), else a new one holding the state.

    A pickle loaded in the process it came from was a second ledger with the whole budget again: an estimator
    returned by ``cross_validate(..., n_jobs=2, return_estimator=True)``, or saved and loaded in one session,
    released up to the budget once more while the original recorded nothing.
    """
    acc = PrivacyAccountant.__new__(PrivacyAccountant)
    acc.__setstate__(state)
    return acc._register()


#: the default accountant, and the id of the process whose caller installed it (None: no caller did, it is the one
#: made at import or by set_default_accountant(None); see AccountedMixin)
_DEFAULT = {"accountant": PrivacyAccountant(), "installed_in": None}
_DEFAULT_LOCK = threading.Lock()
#: the defaults made at import or by set_default_accountant(None): set again as the default (``prev =
#: set_default_accountant(None); ...; set_default_accountant(prev)``) they are still no accountant of the caller's
_RESET_DEFAULTS = weakref.WeakSet([_DEFAULT["accountant"]])


def _install(accountant, installed):
    """Make ``accountant`` the default, installed by the caller or not (``_DEFAULT_LOCK`` held)."""
    _DEFAULT["accountant"] = accountant
    _DEFAULT["installed_in"] = os.getpid() if installed else None


def get_default_accountant():
    """The accountant used by every mechanism given ``accountant=None``.

    At import it is an unlimited ``PrivacyAccountant()`` (it records, never
    refuses); replace it with :func:`set_default_accountant` or, for a block of
    code, ``with PrivacyAccountant(epsilon=...):``.

    Returns
    -------
    PrivacyAccountant
    """
    return _DEFAULT["accountant"]


def set_default_accountant(accountant):
    """Make ``accountant`` the default one; returns the previous default.

    Parameters
    ----------
    accountant : PrivacyAccountant or None
        ``None`` installs a fresh unlimited accountant, as at import. It is no accountant of the caller's own: in a
        worker process, the estimators given ``accountant=None`` keep the budget their calling process sent
        along (see :class:`AccountedMixin`), as they do before any accountant is installed there.

    Returns
    -------
    PrivacyAccountant
        The accountant that was the default until now.
    """
    new = PrivacyAccountant() if accountant is None else check_accountant(accountant)
    with _DEFAULT_LOCK:
        previous = _DEFAULT["accountant"]
        # a worker that installs an accountant of its own is not overruled by the budget sent along (AccountedMixin);
        # None (a reset, "no accountant of mine") is not one: it silently replaced the caller's budget in a worker by
        # an unlimited ledger nobody reads, every release recorded there without a refusal or a warning. Nor is a
        # reset default put back (the restore pattern, with the accountant this function returned)
        if accountant is None:
            _RESET_DEFAULTS.add(new)
        _install(new, installed=new not in _RESET_DEFAULTS)
    return previous


class AccountedMixin:
    """For estimators with an ``accountant`` parameter: the accountant a release records on.

    Pickled (sent to a worker process by ``n_jobs > 1``) with ``accountant=None``, the estimator takes along the
    budget of the sending process's default accountant (not its ledger): in a worker of that process which has not
    installed an accountant of its own, that budget's copy, not the worker's unlimited default, is used, and it
    refuses or warns (see :class:`PrivacyAccountant`). ``with PrivacyAccountant(epsilon=0.5):
    cross_val_score(DCLEFEstimator(...), n_jobs=2)`` released every prediction at epsilon = 1 with the calling
    process's accountant recording nothing. Elsewhere (the process that pickled it, a later session loading it) the
    default accountant of the process at hand is used, as before.
    """

    def __getstate__(self):
        state = super().__getstate__()
        if self.accountant is None:
            # a copy received from the parent stays the one sent along (``copy.copy`` in an atomic fit pickles too:
            # it would have put the worker's own default in its place)
            sent = self.__dict__.get("_sent_default_budget")
            if sent is None or sent._copy_of() is None:
                sent = get_default_accountant()._budget_only()
            state["_sent_default_budget"] = sent
        return state

    def _accountant(self, accountant=None):
        """``accountant``, else the ``accountant`` parameter, else the default accountant (in a worker that has
        installed none, the sending process's budget)."""
        chosen = accountant if accountant is not None else self.accountant
        if chosen is None and _DEFAULT.get("installed_in") != os.getpid():
            sent = self.__dict__.get("_sent_default_budget")
            if sent is not None and sent._copy_of() is not None:
                return sent
        return check_accountant(chosen)


def check_accountant(accountant):
    """``None`` gives the default accountant; a :class:`PrivacyAccountant` itself.

    Parameters
    ----------
    accountant : PrivacyAccountant or None
        The accountant a mechanism was given.

    Returns
    -------
    PrivacyAccountant
        ``accountant``, or :func:`get_default_accountant` for None.

    Raises
    ------
    TypeError
        For anything else.
    """
    if accountant is None:
        return get_default_accountant()
    if not isinstance(accountant, PrivacyAccountant):
        raise TypeError("accountant must be None (the default accountant) or a "
                        f"PrivacyAccountant, got {accountant!r} ({type(accountant).__name__})")
    return accountant
