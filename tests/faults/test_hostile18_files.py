"""Hostile files, eighteenth audit: what a loaded ledger, mapper or data file claims is checked (one test per
finding)."""

import pickle

import numpy as np
import pytest

from privrelease.accounting import PrivacyAccountant


# ----------------------------------------------------------------------- an edited accountant ledger
def _ledger():
    acc = PrivacyAccountant(epsilon=1.0)
    acc.spend(0.5, population="p", individual_epsilons=[0.5, 0.25])
    acc.spend(0.4)
    return acc


def _edited(edit):
    """The ledger pickled after an edit of its state (what an edited file holds), loaded."""
    acc = _ledger()
    edit(acc)
    return pickle.loads(pickle.dumps(acc))


@pytest.mark.parametrize("edit, message", [
    # spent reset to 0: the budget of 1 was offered again after 0.9 had been spent
    (lambda a: (setattr(a, "_total", 0.0), setattr(a, "_carry", 0.0)),
     r"the total spent = 0.0, expected the sum of its 2 releases' epsilons \(0.9\)"),
    # a NaN budget refused no release at all
    (lambda a: setattr(a, "epsilon", float("nan")), r"the budget epsilon = nan, expected a number >= 0"),
    (lambda a: setattr(a, "epsilon", -1.0), r"the budget epsilon = -1.0, expected a number >= 0"),
    # a negative spend gave budget back; a NaN one was added as if nothing
    (lambda a: (a._spends.append(-0.8), a._records.append(dict(a._records[-1], epsilon=-0.8)),
                setattr(a, "_total", 0.1)), r"release 2's epsilon = -0.8, expected a number >= 0"),
    (lambda a: a._spends.__setitem__(1, float("nan")), r"release 1's epsilon = nan, expected a number >= 0"),
    (lambda a: a._spends.__setitem__(0, "0.5"), r"release 0's epsilon = '0.5', expected a number >= 0"),
    (lambda a: a._records.pop(), r"the number of records = 1, expected one per release \(2\)"),
    (lambda a: a._records[0].__setitem__("epsilon", 0.1),
     r"record 0's epsilon = 0.1, expected the epsilon of release 0 \(0.5\)"),
    # an individual's composed guarantee read -5 (or 3, above the release's own epsilon of 0.5)
    (lambda a: a._populations["p"]["eps"].__setitem__(0, (np.array([0, 1]), np.array([-5.0, 0.25]))),
     r"population 'p' eps value in release row 0 = -5.0, expected a finite number >= 0"),
    (lambda a: a._populations["p"]["eps"].__setitem__(0, (np.array([0, 1]), np.array([3.0, 0.25]))),
     r"population 'p' largest individual epsilon in release 0 = 3.0, expected at most that release's epsilon"),
    (lambda a: a._populations["p"]["rows"].__setitem__(0, 7),
     r"population 'p' release row 0 = 7, expected increasing release numbers in \[0, 2\)"),
    (lambda a: a._populations["p"]["eps"].__setitem__(0, (np.array([0, 5]), np.array([0.5, 0.25]))),
     r"population 'p' eps entry 0 = .*expected \(indices in \[0, 2\), values\)"),
    (lambda a: a._populations["p"]["pay"].__setitem__(0, (np.array([0]), np.array([np.inf]))),
     r"population 'p' pay value in release row 0 = inf, expected a finite number >= 0"),
])
def test_an_edited_ledger_is_refused_when_loaded_naming_the_value(edit, message):
    # every edit loaded silently: spent, remaining() and check() then answered from the false ledger
    with pytest.raises(ValueError, match="a loaded PrivacyAccountant ledger has " + message):
        _edited(edit)


def test_an_honest_ledger_still_loads_and_keeps_its_budget():
    acc = _ledger()
    for k in range(1000):  # a long ledger: its stored running total stays within round-off of the exact sum
        acc.spend(1e-5 / 3)
    back = pickle.loads(pickle.dumps(acc))
    assert back.spent == acc.spent and back.remaining() == acc.remaining()
    np.testing.assert_array_equal(back.individual_spent("p"), [0.5, 0.25])
    unlimited = PrivacyAccountant().spend(np.inf).spend(1.0)
    assert pickle.loads(pickle.dumps(unlimited)).spent == np.inf
