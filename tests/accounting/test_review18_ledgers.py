"""The accountant's ledgers: pickling, loading and the default accountant (review of the eighteenth ledger code).

* a ledger pickled while another thread recorded was torn (lists of different lengths) and refused when loaded;
* copies returned by workers, or a later snapshot, made a second live ledger of one id (or replaced the original);
* ``set_default_accountant(None)`` then a with-block exit / the restore pattern made the old default "installed";
* a removed population book (or its last rows) loaded, resetting ``individual_spent``;
* an unlimited ledger whose spends add up beyond float64 could not be loaded (OverflowError);
* ``DCLEFEstimator._run_query`` read the process default again instead of the accountant ``predict`` holds.
"""

import gc
import multiprocessing
import pickle
import threading
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from shared_helpers import dclef_data, ledger_snapshots  # tests/shared_helpers.py

from privrelease.accounting import PrivacyAccountant, get_default_accountant, set_default_accountant
from privrelease.accounting._accountant import _restore
from privrelease.auctions import DCLEFEstimator
from privrelease.exceptions import BudgetExceededError

needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")


def _data(n=30):
    return dclef_data(n)


# ---------------------------------------------------------------- 1. a consistent snapshot
def test_a_pickled_state_is_a_snapshot_not_the_live_lists():
    # the state shared the ledger's lists: a release recorded between the copy and the pickling tore it
    acc = PrivacyAccountant()
    acc.spend(0.001, population="p", individual_epsilons=[1e-3, 5e-4])
    state = acc.__getstate__()
    acc.spend(0.001, population="p", individual_epsilons=[1e-3, 5e-4])
    assert len(state["_spends"]) == len(state["_records"]) == len(state["_populations"]["p"]["rows"]) == 1
    loaded = pickle.loads(pickle.dumps(acc))
    assert loaded is acc


def test_round_trips_while_another_thread_records_are_never_refused():
    acc = PrivacyAccountant()
    acc.spend(0.001, population="p", individual_epsilons=[1e-3, 5e-4])

    def spender():
        for _ in range(300):
            acc.spend(0.001, population="p", individual_epsilons=[1e-3, 5e-4])

    t = threading.Thread(target=spender)
    errors = []
    t.start()
    try:
        while t.is_alive():
            try:
                assert pickle.loads(pickle.dumps(acc)) is acc
            except ValueError as exc:
                errors.append(str(exc))
    finally:
        t.join()
    assert errors == [] and len(acc) == 301


# ---------------------------------------------------------------- 2. one live ledger per id
def _record_and_return(acc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            acc.spend(0.5)
    return acc


@needs_fork
def test_a_copy_that_recorded_in_a_worker_never_replaces_the_original():
    # the copies came back with more releases than the original and one was installed as the ledger: a round trip
    # of the original then returned a worker's ledger
    acc = PrivacyAccountant()
    acc.spend(0.25)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as ex:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork in a multi-threaded process
            backs = [ex.submit(_record_and_return, acc).result() for _ in range(2)]
    assert all(b is acc for b in backs)
    assert len(acc) == 1 and acc.spent == 0.25  # a copy's records never reach the original
    assert pickle.loads(pickle.dumps(acc)) is acc


def test_a_later_snapshot_brings_the_live_handle_up_to_date():
    # two handles of one ledger id, each with its own remaining budget: a budget of 1 released 1.75
    early, late = ledger_snapshots()
    a = pickle.loads(early)
    assert a.spent == 0.25
    b = pickle.loads(late)
    assert b is a and a.spent == 0.75 and len(a) == 2
    with pytest.raises(BudgetExceededError):
        a.spend(0.75)
    a.spend(0.25)
    assert pickle.loads(early) is a and pickle.loads(late) is a and a.spent == 1.0


def test_a_snapshot_that_diverged_from_the_live_handle_is_refused():
    early, late = ledger_snapshots()
    a = pickle.loads(early)
    a.spend(0.1)                      # recorded since the two parted, as the later snapshot did
    with pytest.raises(ValueError, match="both recorded releases the other does not have"):
        pickle.loads(late)
    assert a.spent == pytest.approx(0.35) and len(a) == 2   # the live handle unchanged


# ---------------------------------------------------------------- 3. reset defaults are not installed
def _reset_in_worker(est, X, mode):
    if mode == "with-none":
        with PrivacyAccountant():
            set_default_accountant(None)
    else:  # the restore pattern
        prev = set_default_accountant(None)
        set_default_accountant(prev)
    try:
        est.predict(X)
        return "released"
    except BudgetExceededError as exc:
        return "refused" if "is a copy" in str(exc) else repr(exc)


@needs_fork
@pytest.mark.parametrize("mode", ["with-none", "restore-prev"])
def test_a_reset_default_put_back_in_a_worker_keeps_the_callers_budget(mode):
    Y, d = _data()
    est = DCLEFEstimator(budget=2.0, data_range=(1, 5), random_state=0).fit(Y, d)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as ex:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork in a multi-threaded process
            ex.submit(int).result()   # the worker forked now: its default is the unlimited one, as in a fresh worker
            with PrivacyAccountant(epsilon=0.5) as acc:
                outcome = ex.submit(_reset_in_worker, est, Y[:2], mode).result()
    assert outcome == "refused"
    assert acc.spent == 0.0


def test_an_installed_default_put_back_is_still_installed():
    from privrelease.accounting import _accountant as A

    mine = PrivacyAccountant(epsilon=3.0)
    before = set_default_accountant(mine)
    try:
        with PrivacyAccountant():
            set_default_accountant(None)
        assert get_default_accountant() is mine and A._DEFAULT["installed_in"] is not None
        prev = set_default_accountant(None)
        assert A._DEFAULT["installed_in"] is None
        set_default_accountant(prev)
        assert get_default_accountant() is mine and A._DEFAULT["installed_in"] is not None
    finally:
        set_default_accountant(before)


# ---------------------------------------------------------------- 4. books list exactly the marked records
def _two_releases():
    acc = PrivacyAccountant(10.0)
    acc.spend(1.0, population="p", individual_epsilons=[1.0, 0.5])
    acc.spend(1.0, population="p", individual_epsilons=[1.0, 0.5])
    state = acc.__getstate__()
    state.update(_pid=1, _sent_from=-1)   # as saved by an earlier session
    return acc, state


@pytest.mark.parametrize("cut", ["book removed", "last row removed"])
def test_a_removed_population_book_is_refused(cut):
    acc, state = _two_releases()
    if cut == "book removed":
        state["_populations"] = {}
    else:
        state["_populations"]["p"] = {k: v[:1] if isinstance(v, list) else v
                                      for k, v in state["_populations"]["p"].items()}
    with pytest.raises(ValueError, match=r"record \d's population book = 'p', expected a book listing this release"):
        _restore(state)


def test_a_ledger_without_the_marks_still_loads_and_the_mark_is_not_shown():
    acc, state = _two_releases()
    assert list(acc.records.columns) == ["epsilon", "population", "total_payment"]
    state["_records"] = [{k: v for k, v in r.items() if k == "epsilon" or k == "population"}
                         for r in state["_records"]]
    state["_populations"] = {}           # an older pickle: only the book -> record check applies
    assert len(_restore(state)) == 2
    with pytest.raises(ValueError, match="keeps '_individual_epsilons' itself"):
        acc.spend(0.1, _individual_epsilons=False)


# ---------------------------------------------------------------- 5. sums beyond float64
def test_an_unlimited_ledger_whose_total_overflows_loads():
    acc = PrivacyAccountant()
    acc.spend(1e308)
    acc.spend(1e308)
    state = acc.__getstate__()
    state.update(_pid=1, _sent_from=-1)
    back = _restore(state)
    assert back is not acc and back.spent == np.inf and len(back) == 2
    assert pickle.loads(pickle.dumps(acc)) is acc


# ---------------------------------------------------------------- 6. the cap decision reads the held ledger
def test_run_query_reads_the_ledger_predict_holds():
    read = []
    other = PrivacyAccountant()

    class Swapping(DCLEFEstimator):
        def _run_query(self, w, spent):
            set_default_accountant(other)   # another thread's with-block, between predict and the auction
            return super()._run_query(w, spent)

        def _history(self, acc):
            read.append(acc)
            return super()._history(acc)

    Y, d = _data()
    est = Swapping(budget=2.0, data_range=(1, 5), epsilon_cap=5.0, random_state=0).fit(Y, d)
    before = get_default_accountant()
    try:
        with PrivacyAccountant() as mine:
            est.predict(Y[:1])
    finally:
        set_default_accountant(before)
    assert len(mine) == 1 and len(other) == 0
    assert read and all(a is mine for a in read)


def test_a_ledger_of_an_older_version_is_registered_when_loaded():
    # a pickle of an older version is loaded without _restore (the default reduce): its ledger was never registered,
    # so a round trip made a second ledger with a budget of its own (1.5 released on a budget of 1)
    import pickle

    from privrelease.accounting import PrivacyAccountant
    from privrelease.exceptions import BudgetExceededError

    a = PrivacyAccountant(1.0).spend(0.25)
    old = a.__getstate__()
    for key in ("_ledger_id", "_session", "_pid", "_budget_seal"):  # no budget seal either
        old.pop(key, None)
    old["_records"] = [{k: v for k, v in r.items() if not k.startswith("_")} for r in old["_records"]]
    loaded = PrivacyAccountant.__new__(PrivacyAccountant)
    loaded.__setstate__(old)
    back = pickle.loads(pickle.dumps(loaded))
    assert back is loaded
    back.spend(0.5)
    with pytest.raises(BudgetExceededError):
        loaded.spend(0.5)


def test_a_snapshot_diverged_by_a_release_of_the_same_epsilon_is_refused():
    # divergence was told by the epsilons alone: the original's 0.5 and an earlier snapshot's handle's 0.5 looked
    # like one history, the later snapshot was taken for the handle's, and a budget of 1 released 1.5
    import gc
    import pickle

    from privrelease.accounting import PrivacyAccountant

    A = PrivacyAccountant(1.0)
    s0 = pickle.dumps(A)
    A.spend(0.5, query="by A")
    s1 = pickle.dumps(A)
    del A
    gc.collect()
    H = pickle.loads(s0)
    H.spend(0.5, query="by H")
    with pytest.raises(ValueError, match="both recorded releases the other does not have"):
        pickle.loads(s1)
    assert not [c for c in H.records.columns if c.startswith("_")]  # the tokens are not shown
