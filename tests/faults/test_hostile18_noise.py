"""Noise samplers and privacy accounting seams (eighteenth review).

* An accountant unpickled in the process whose ledger it is was a second ledger with the whole budget again: an
  estimator saved and loaded in one session, or returned by ``cross_validate(..., n_jobs=2,
  return_estimator=True)``, released up to the budget a second time while the original recorded nothing (measured:
  budget 5, the original 0.0 spent, the returned estimator's ledger 5.0).
* ``set_default_accountant(None)`` (a reset) in a worker counted as installing an accountant of the worker's own: the
  estimators dropped the calling process's budget and recorded on an unlimited ledger nobody reads, without a
  refusal or a warning.
"""

import multiprocessing
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from shared_helpers import dclef_data, ledger_snapshots  # tests/shared_helpers.py

from privrelease.accounting import PrivacyAccountant, set_default_accountant
from privrelease.auctions import DCLEFEstimator
from privrelease.exceptions import BudgetExceededError
from privrelease.noise import Laplace


def _data(n=40):
    return dclef_data(n)


def test_an_accountant_loaded_in_its_own_process_is_the_original_ledger():
    acc = PrivacyAccountant(epsilon=1.0).spend(0.5)
    back = pickle.loads(pickle.dumps(acc))
    assert back is acc
    # the two handles share one budget: the sum of what they allow is the budget, not twice it
    back.spend(0.5)
    with pytest.raises(BudgetExceededError, match="release refused"):
        acc.spend(0.5)
    assert acc.spent == 1.0


def test_an_estimator_saved_and_loaded_in_one_session_keeps_the_callers_budget():
    Y, d = _data()
    acc = PrivacyAccountant(epsilon=3.0)
    est = DCLEFEstimator(budget=2.0, data_range=(1, 5), accountant=acc, random_state=0).fit(Y, d)
    loaded = pickle.loads(pickle.dumps(est))
    assert loaded.accountant is acc
    with pytest.raises(BudgetExceededError):
        for _ in range(1000):
            loaded.predict(Y[:2])
    # what the loaded estimator released is on the original ledger, within its budget
    assert 0 < acc.spent <= 3.0 * (1 + 1e-12)
    with pytest.raises(BudgetExceededError):
        est.predict(Y[:2])


@pytest.mark.parametrize("pid", ["other", "same"])
def test_snapshots_of_an_earlier_session_are_ledgers_of_their_own(pid):
    # an earlier session saved one ledger twice (spent 0.25, later 0.75); this session (another process id, or the
    # same id reused, as in a container) loads both: neither is taken for the other, nor for a live ledger here
    import os

    from privrelease.accounting._accountant import _restore

    acc = PrivacyAccountant(epsilon=1.0).spend(0.75)
    restored = []
    for spent in (0.25, 0.75):
        state = acc.__getstate__()   # the same ledger id, as the earlier session's snapshots have
        state.update(_spends=[spent], _total=spent, _carry=0.0, _records=[{"epsilon": spent}], _session="earlier",
                     _pid=os.getpid() if pid == "same" else -4242, _sent_from=-4242)
        restored.append(_restore(state))
    a, b = restored
    assert a is not acc and b is not acc and a is not b
    assert (a.spent, b.spent, acc.spent) == (0.25, 0.75, 0.75)
    assert a._copy_of() is None and b._copy_of() is None    # this session's own ledgers
    assert pickle.loads(pickle.dumps(a)) is a and pickle.loads(pickle.dumps(b)) is b


def _give_back(obj):
    return obj


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_an_accountant_sent_back_by_a_worker_is_the_original():
    # what cross_validate(..., n_jobs=2, return_estimator=True) does with an estimator's accountant
    Y, d = _data()
    acc = PrivacyAccountant(epsilon=1.0)
    est = DCLEFEstimator(budget=2.0, data_range=(1, 5), accountant=acc, random_state=0).fit(Y, d)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as ex:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork in a multi-threaded process
            back_acc, back_est = ex.submit(_give_back, (acc, est)).result()
    assert back_acc is acc and back_est.accountant is acc


def _reset_then_predict(est, X, block=False):
    set_default_accountant(None)
    if block:  # a with-block in the worker, exited: back to the reset default, still not an accountant of its own
        with PrivacyAccountant():
            pass
    try:
        est.predict(X)
        return "released"
    except BudgetExceededError as exc:
        return "refused" if "is a copy" in str(exc) else repr(exc)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
@pytest.mark.parametrize("block", [False, True])
def test_resetting_the_default_in_a_worker_keeps_the_callers_budget(block):
    Y, d = _data()
    est = DCLEFEstimator(budget=2.0, data_range=(1, 5), random_state=0).fit(Y, d)
    with PrivacyAccountant(epsilon=0.5) as acc:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as ex:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # fork in a multi-threaded process
                outcome = ex.submit(_reset_then_predict, est, Y[:3], block).result()
    assert outcome == "refused"
    assert acc.spent == 0.0


# ---------------------------------------------------------------- no record without a release
def test_a_regression_fit_refused_for_its_noise_records_nothing():
    from privrelease.regression import TruthfulRegressionMechanism
    from privrelease.regression._truthful import ridge_sensitivity

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.uniform(-1, 1, 20)
    # a finite noise scale of 1e307, whose Gamma norm could overflow float64: refused when the first ridge release
    # built its noise, after the fit's 2 epsilon was recorded as spent ("failed") with no noise drawn
    eps = ridge_sensitivity(20, 1.0, 1.0) / 1e307
    acc = PrivacyAccountant()
    mech = TruthfulRegressionMechanism(alpha=1.0, epsilon=eps, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match="could overflow float64"):
        mech.fit(X, y)
    assert len(acc) == 0 and acc.spent == 0.0


def test_a_dclef_query_refused_for_its_noise_records_nothing():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(40, 3))
    d = rng.uniform(-1e306, 1e306, 40)
    acc = PrivacyAccountant()
    # data_range of width 2e307: the Laplace scale of the DCLEF (8e306 at budget 2) could overflow float64; the
    # query was recorded (epsilon 0.5) and then refused, a release that never happened on the ledger
    est = DCLEFEstimator(budget=2.0, data_range=(-1e307, 1e307), accountant=acc, random_state=0).fit(Y, d)
    with pytest.raises(ValueError, match="could overflow float64"):
        est.predict(Y[:3])
    assert len(acc) == 0 and acc.spent == 0.0


def test_dclef_predictions_are_unchanged_by_the_checks_before_the_spend():
    # the checks draw nothing: a seeded estimator's predictions are those of DCLEF.sample after each spend
    Y, d = _data()
    a = DCLEFEstimator(budget=2.0, data_range=(1, 5), accountant=PrivacyAccountant(), random_state=3).fit(Y, d)
    preds = a.predict(Y[:4])
    from privrelease.auctions import DCLEF, fair_inner_product
    from privrelease.utils import check_random_source

    source = check_random_source(3)
    W = a.auction_weights(Y[:4])
    expected = [DCLEF(W[q], fair_inner_product(np.ones(40), W[q], 2.0, data_range=(1, 5)).x, (1, 5))
                .sample(d, random_state=source) for q in range(4)]
    np.testing.assert_allclose(preds, expected, rtol=0, atol=0)


# ---------------------------------------------------------------- a seed on a privacy path is on the record
def test_the_ledger_says_whether_the_noise_came_from_a_seed():
    from privrelease.regression import TruthfulRegressionMechanism

    Y, d = _data()
    for random_state, secure in [(0, False), (None, True)]:
        acc = PrivacyAccountant()
        DCLEFEstimator(budget=2.0, data_range=(1, 5), accountant=acc, random_state=random_state).fit(Y, d).predict(
            Y[:2])
        X = Y / (2 * np.linalg.norm(Y, axis=1, keepdims=True))
        TruthfulRegressionMechanism(epsilon=1.0, accountant=acc, random_state=random_state).fit(X, d / 5)
        assert acc.records["secure_noise"].tolist() == [secure] * 3


# ---------------------------------------------------------------- the contracts' guarantees, never below the noise's
def test_biased_laplace_epsilons_are_never_below_what_the_noise_delivers():
    from fractions import Fraction

    from privrelease.contracts import BiasedLaplaceMechanism, design_contract

    a = np.random.default_rng(0).uniform(0, 1, 300)
    b = 0.37
    eps = BiasedLaplaceMechanism(a, b).epsilons
    for ai, ei in zip(a.tolist(), eps.tolist()):
        exact = Fraction(ai) / Fraction(b)
        # the least float at or above a_i / b (a_i / b in floating point was below it for about half of them)
        assert Fraction(ei) >= exact and Fraction(float(np.nextafter(ei, 0))) < exact
    c = design_contract([1.0, 0.3, 0.05], 0.5)
    for ai, ei in zip(c.a.tolist(), c.epsilons.tolist()):
        assert ai == 0 and ei == 0 or Fraction(ei) >= Fraction(ai) / Fraction(c.b)
    np.testing.assert_array_equal(c.mechanism().epsilons, c.epsilons)


# ---------------------------------------------------------------- the sampler's law at the ends of float64
@pytest.mark.parametrize("make", [
    lambda: Laplace(scale=1e-300, random_state=11),
    lambda: Laplace(scale=1e300, random_state=12),
    lambda: Laplace(epsilon=1e300, sensitivity=1.0, random_state=13),     # scale 1e-300
    lambda: Laplace(epsilon=5e-324, sensitivity=1e-310, random_state=14),  # a subnormal epsilon, scale 2.0e13
    lambda: Laplace(epsilon=1e-300, sensitivity=1e-10, random_state=15),   # scale 1e290
])
def test_laplace_noise_follows_the_exact_cdf_at_extreme_scales(make):
    from scipy import stats

    mech = make()
    x = mech.sample(4000)
    assert stats.kstest(x, stats.laplace(scale=mech.scale).cdf).pvalue > 1e-3
    assert mech.effective_epsilon >= mech.sensitivity / mech.scale


def test_sensitivity_zero_adds_no_noise_and_claims_no_more_than_asked():
    mech = Laplace(epsilon=1.0, sensitivity=0.0, random_state=0)
    assert mech.scale == 0.0 and mech.randomise(2.5) == 2.5 and mech.effective_epsilon <= 1.0


def test_a_later_snapshot_is_never_answered_by_an_earlier_one():
    # the original ledger is gone; an earlier snapshot (0.25 spent) is loaded first, then a later one (0.75 spent):
    # the later one was answered by the earlier handle (0.25), its 0.5 of further releases lost
    early, late = ledger_snapshots()
    a = pickle.loads(early)
    assert a.spent == 0.25
    b = pickle.loads(late)
    # one ledger: the earlier handle is brought up to date (two handles of one id each had a budget of their own)
    assert b is a and b.spent == 0.75
    # loaded again, either snapshot answers with it
    assert pickle.loads(early) is b and pickle.loads(late) is b
    with pytest.raises(BudgetExceededError):
        b.spend(0.5)


def test_a_dclef_refusal_for_overflow_does_not_depend_on_the_private_data():
    # the overflow check ran on this database's mean: with the same public weights, range and noise, a database of
    # small values was released and one of large values refused, so the refusal told the two apart
    from privrelease.auctions import DCLEF

    w = np.ones(40)
    x = np.r_[np.ones(39), 0.0]
    lo, hi = -5.5e305, 5.5e305  # noise scale 1.1e306: its reach alone stays finite, plus 39 x hi it does not
    est = DCLEF(w, x, (lo, hi))
    small, large = np.zeros(40), np.full(40, hi)
    outcomes = []
    for d in (small, large):
        try:
            est.sample(d, random_state=0)
            outcomes.append("released")
        except ValueError as exc:
            assert "over data_range" in str(exc)
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]
