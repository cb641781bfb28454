"""Accountants in other processes (issue: ``n_jobs > 1`` bypassed the budget).

A worker process of ``n_jobs > 1`` (or a fork) holds a copy of an accountant, and a release recorded there never
reaches the original: ``with PrivacyAccountant(epsilon=0.5): cross_val_score(DCLEFEstimator(...), n_jobs=2)``
released all its predictions at epsilon = 1 while the calling process's accountant recorded nothing. A budgeted copy
now refuses, an unlimited one records with a PrivacyLeakWarning; threads share the accountant as before."""

import multiprocessing
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from joblib import Parallel, delayed
from sklearn.model_selection import cross_val_score

from privrelease.accounting import PrivacyAccountant, get_default_accountant
from privrelease.auctions import DCLEFEstimator
from privrelease.exceptions import BudgetExceededError, PrivacyLeakWarning

pytestmark = pytest.mark.slow  # started first under pytest-xdist (tests/conftest.py)


def _warm(_):
    import os
    import time

    time.sleep(0.5)  # long enough that each of the two workers takes one task
    return os.getpid()


@pytest.fixture(scope="module", autouse=True)
def _worker_pool():
    """Start joblib's two worker processes once for this file, each with this module imported (a worker's start
    imports privrelease and scikit-learn: seconds a worker). A task that raises in a worker shuts the pool down, so
    the tests whose workers raise come last in the file."""
    assert len(set(Parallel(n_jobs=2)(delayed(_warm)(i) for i in range(2)))) == 2


def _data(n=60):
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(n, 3))
    d = np.clip(np.round(3 + Y[:, 0]), 1, 5)
    return Y, d


def _spend(acc, eps):
    """In a worker: record ``eps`` on ``acc``; returns the warnings' categories and the error's type, if any."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            acc.spend(eps)
            error = None
        except BudgetExceededError as exc:
            error = str(exc)
    return [w.category.__name__ for w in caught], error


def test_a_budgeted_copy_in_a_worker_process_refuses():
    acc = PrivacyAccountant(epsilon=10.0)
    (cats, error), = Parallel(n_jobs=2)(delayed(_spend)(acc, 0.1) for _ in range(1))
    assert error is not None and "is a copy, in process" in error and "cannot be kept" in error
    assert acc.spent == 0.0


def test_an_unlimited_copy_in_a_worker_process_records_with_a_warning():
    acc = PrivacyAccountant()
    (cats, error), = Parallel(n_jobs=2)(delayed(_spend)(acc, 0.1) for _ in range(1))
    assert error is None and cats == ["PrivacyLeakWarning"]


def _spend_on_default(eps):
    return _spend(get_default_accountant(), eps)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_default_accountant_refuses():
    with PrivacyAccountant(epsilon=1.0) as acc:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as ex:
            cats, error = ex.submit(_spend_on_default, 0.1).result()
    assert error is not None and "is a copy" in error
    assert acc.spent == 0.0


def test_the_same_process_keeps_recording():
    # threads share the accountant (not a copy), and an accountant unpickled in the process that made it is not
    # taken for a copy from elsewhere (it is that accountant itself)
    acc = PrivacyAccountant(epsilon=1.0)
    Parallel(n_jobs=2, prefer="threads")(delayed(acc.spend)(0.25) for _ in range(2))
    assert acc.spent == 0.5
    again = pickle.loads(pickle.dumps(acc))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again.spend(0.25)
    assert again.spent == 0.75


# ------------------------------------------------------------------ what is not a worker's copy (review)
def test_the_default_ledger_is_not_pickled_with_an_estimator():
    Y, d = _data()
    est = DCLEFEstimator(budget=5.0, data_range=(1, 5), random_state=0).fit(Y, d)
    with PrivacyAccountant() as acc:
        for _ in range(50):
            est.predict(Y[:5])
        size = len(pickle.dumps(est))
    assert len(acc) == 250  # one release a query
    fresh = DCLEFEstimator(budget=5.0, data_range=(1, 5), random_state=0).fit(Y, d)
    assert size <= len(pickle.dumps(fresh)) + 1000


def _predict_with_own_accountant(est, X):
    with PrivacyAccountant(epsilon=100.0) as acc:
        est.predict(X)
    return acc.spent


def test_a_worker_that_installs_its_own_accountant_records_there():
    Y, d = _data()
    est = DCLEFEstimator(budget=5.0, data_range=(1, 5), random_state=0).fit(Y, d)
    with PrivacyAccountant(epsilon=0.5):
        spent, = Parallel(n_jobs=2)(delayed(_predict_with_own_accountant)(est, Y[:3]) for _ in range(1))
    assert spent > 0


# ------------------------------------------------------------------ second review: later sessions, forks, nesting
def _forked_spend(acc):
    import os

    pid = os.fork()
    if pid == 0:  # the child: a copy of the ledger in memory
        try:
            acc.spend(0.1)
            os._exit(3)
        except BudgetExceededError:
            os._exit(4)
    return os.waitpid(pid, 0)[1] >> 8


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_plain_fork_holds_a_copy():
    acc = PrivacyAccountant(epsilon=1.0)
    assert _forked_spend(acc) == 4
    assert acc.spent == 0.0


def _nested(acc):
    import multiprocessing as mp

    again = pickle.loads(pickle.dumps(acc))  # a copy pickled again in the worker stays a copy
    with ProcessPoolExecutor(1, mp_context=mp.get_context("fork")) as ex:  # and so in the worker's own worker
        return _spend(again, 0.1)[1], ex.submit(_spend, acc, 0.1).result()[1]


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_worker_of_a_worker_holds_a_copy():
    acc = PrivacyAccountant(epsilon=10.0)
    errors, = Parallel(n_jobs=2)(delayed(_nested)(acc) for _ in range(1))
    assert all(e is not None and "is a copy" in e for e in errors)


# ------------------------------------------------------------------ later sessions: one other interpreter for the three
_LATER_SESSION = """
import json, pickle, sys, warnings
from joblib import Parallel, delayed
from privrelease.accounting import PrivacyAccountant
from privrelease.exceptions import BudgetExceededError

def load(name):
    with open(sys.argv[1] + "/" + name, "rb") as f:
        return pickle.load(f)

def spend(a):
    try:
        a.spend(0.3)
        return "recorded"
    except Exception as exc:
        return "refused" if "is a copy" in str(exc) else repr(exc)

out = {}
with warnings.catch_warnings():
    warnings.simplefilter("error")
    acc = load("spent.pkl")  # a ledger that spent 0.5 of 2 in the session that pickled it
    acc.spend(0.5)
    out["spent"] = ["spent", str(acc.spent)]
    est = load("estimator.pkl")
    try:
        with PrivacyAccountant(epsilon=1e-6):
            est.predict(est._X[:3])
        out["estimator"] = ["released"]
    except BudgetExceededError as exc:
        out["estimator"] = ["refused", str("is a copy" in str(exc))]
acc = load("fresh.pkl")
out["workers"] = [spend(acc), Parallel(n_jobs=2)(delayed(spend)(acc) for _ in range(1))[0]]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def later_session(tmp_path_factory):
    """What a later session (another interpreter) does with three pickles: a ledger that spent 0.5 of 2, a fitted
    estimator (holding its data as ``_X``), and an unspent ledger of budget 1 that it also hands to a worker. One
    interpreter for the three: its start imports privrelease and scikit-learn."""
    import json
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("later_session")
    (folder / "spent.pkl").write_bytes(pickle.dumps(PrivacyAccountant(epsilon=2.0).spend(0.5)))
    Y, d = _data()
    est = DCLEFEstimator(budget=5.0, data_range=(1, 5), random_state=0).fit(Y, d)
    est._X = Y
    (folder / "estimator.pkl").write_bytes(pickle.dumps(est))
    (folder / "fresh.pkl").write_bytes(pickle.dumps(PrivacyAccountant(epsilon=1.0)))
    out = subprocess.run([sys.executable, "-c", _LATER_SESSION, str(folder)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_ledger_loaded_in_a_later_session_is_its_own(later_session):
    assert later_session["spent"] == ["spent", "1.0"]


def test_a_pickled_estimator_follows_the_budget_of_the_process_that_loads_it(later_session):
    # the loading process's own budget refuses (not the budget-free default of the process that pickled it)
    assert later_session["estimator"] == ["refused", "False"]


def test_a_ledger_loaded_in_a_later_session_is_copied_to_that_sessions_workers(later_session):
    # loaded in a later session the ledger is that session's own; its workers hold copies and refuse (they recorded
    # silently: the loaded ledger kept the earlier session's process id, which no worker took for its parent's)
    assert later_session["workers"] == ["recorded", "refused"]


# ------------------------------------------------------------------ last: a task that raises shuts the pool down
def test_cross_val_score_in_worker_processes_keeps_the_callers_budget():
    Y, d = _data()
    est = DCLEFEstimator(budget=5.0, data_range=(1, 5), random_state=0)
    # one process: the first query is refused (epsilon 1 > 0.5)
    with PrivacyAccountant(epsilon=0.5) as acc:
        with pytest.raises(BudgetExceededError):
            cross_val_score(est, Y, d, cv=2, n_jobs=1, error_score="raise")
    assert acc.spent == 0.0
    # worker processes: the estimator takes the caller's default accountant along, and its copy refuses
    with PrivacyAccountant(epsilon=0.5) as acc:
        with pytest.raises(BudgetExceededError, match="is a copy"):
            cross_val_score(est, Y, d, cv=2, n_jobs=2, error_score="raise")
    assert acc.spent == 0.0


def test_an_explicit_budgeted_accountant_refuses_in_worker_processes():
    Y, d = _data()
    acc = PrivacyAccountant(epsilon=100.0)
    est = DCLEFEstimator(budget=5.0, data_range=(1, 5), random_state=0, accountant=acc)
    with pytest.raises(BudgetExceededError, match="is a copy"):
        cross_val_score(est, Y, d, cv=2, n_jobs=2, error_score="raise")
    cross_val_score(est, Y, d, cv=2, n_jobs=1, error_score="raise")  # in this process: recorded
    assert acc.spent > 0
