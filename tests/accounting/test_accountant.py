"""PrivacyAccountant: sequential composition, budget refusal, default accountant, ledgers."""

import copy
import pickle
from fractions import Fraction

import numpy as np
import pytest

from privrelease.accounting import (
    PrivacyAccountant,
    check_accountant,
    get_default_accountant,
    set_default_accountant,
)
from privrelease.exceptions import BudgetExceededError


def test_sequential_composition_is_the_sum():
    spends = [Fraction(1, 8), Fraction(1, 4), Fraction(1, 16), Fraction(1, 2)]
    acc = PrivacyAccountant(epsilon=1.0)
    for e in spends:
        acc.spend(float(e))
    assert acc.spent == float(sum(spends))                 # dyadic: exact in binary
    assert acc.remaining() == float(1 - sum(spends))
    assert len(acc) == 4 and list(acc.records.epsilon) == [float(e) for e in spends]


def test_budget_refuses_and_records_nothing():
    acc = PrivacyAccountant(epsilon=0.5).spend(0.25).spend(0.25)
    assert acc.remaining() == 0.0
    acc.spend(0.0)                                        # a free release always fits
    with pytest.raises(BudgetExceededError, match=r"epsilon = 0.1 but only 0 of the budget"):
        acc.spend(0.1)
    with pytest.raises(BudgetExceededError):
        acc.check(1e-3)
    assert acc.spent == 0.5 and len(acc) == 3
    # a refused release with individual epsilons leaves the population untouched too
    with pytest.raises(BudgetExceededError):
        acc.spend(None, population="p", individual_epsilons=[0.1, 0.0])
    assert acc.populations() == []
    assert isinstance(BudgetExceededError("x"), ValueError)


def test_round_off_of_the_sum_is_not_a_refusal():
    acc = PrivacyAccountant(epsilon=1.0)
    for _ in range(10):
        acc.spend(0.1)                                    # 0.1 * 10 != 1.0 in floats
    assert acc.remaining() <= 1e-12


def test_individual_ledger_matches_brute_force():
    rng = np.random.default_rng(0)
    E = rng.exponential(size=(6, 5)) * (rng.random((6, 5)) < 0.5)
    P = rng.random((6, 5)) * (E > 0)
    acc = PrivacyAccountant()
    for e, p in zip(E, P):
        acc.spend(None, population="raters", individual_epsilons=e, payments=p, branch="greedy")
    acc.spend(0.3)                                        # another mechanism, no population
    np.testing.assert_allclose(acc.individual_spent("raters"), E.sum(axis=0))
    np.testing.assert_allclose(acc.payments("raters").toarray(), P)
    np.testing.assert_allclose(acc.individual_epsilons("raters").toarray(), E)
    # data-set level: each release is max_i eps_i-DP, composed by summation
    assert acc.spent == pytest.approx(E.max(axis=1).sum() + 0.3)
    rec = acc.population_records("raters")
    assert len(rec) == 6 and (rec.branch == "greedy").all()
    np.testing.assert_allclose(rec.total_payment, P.sum(axis=1))
    np.testing.assert_array_equal(acc.individual_spent("nobody", n_individuals=3), np.zeros(3))
    with pytest.raises(KeyError, match="no release recorded for population 'nobody'"):
        acc.individual_spent("nobody")
    with pytest.raises(ValueError, match="population 'raters' has 5 individuals but this release gives 4"):
        acc.spend(None, population="raters", individual_epsilons=np.zeros(4))
    with pytest.raises(ValueError, match="more than the release's epsilon"):
        acc.spend(0.1, population="raters", individual_epsilons=[0.2, 0, 0, 0, 0])


def test_copies_share_the_ledger_and_pickle_keeps_it():
    acc = PrivacyAccountant(epsilon=2.0).spend(0.5)
    assert copy.deepcopy(acc) is acc and copy.copy(acc) is acc
    # in the process whose ledger it is, a pickle loads as the accountant itself (a second ledger had the whole
    # budget again); elsewhere it keeps the ledger (tests/accounting/test_accountant_processes17.py)
    back = pickle.loads(pickle.dumps(acc))
    assert back is acc and back.spent == 0.5 and back.epsilon == 2.0


def test_default_accountant_get_set_and_with_block():
    original = get_default_accountant()
    mine = PrivacyAccountant(epsilon=1.0)
    with mine:
        assert get_default_accountant() is mine and check_accountant(None) is mine
    assert get_default_accountant() is original
    previous = set_default_accountant(mine)
    try:
        assert previous is original and get_default_accountant() is mine
    finally:
        set_default_accountant(previous)
    assert get_default_accountant() is original


@pytest.mark.parametrize("bad, err, match", [
    ("1", TypeError, "epsilon must be a real number, got '1'"),
    (True, TypeError, "got True"),
    (-0.5, ValueError, "got -0.5"),
    (float("nan"), ValueError, "epsilon must be a number, got NaN"),
])
def test_bad_budgets_and_spends(bad, err, match):
    with pytest.raises(err, match=match):
        PrivacyAccountant(epsilon=bad)
    with pytest.raises(err, match=match):
        PrivacyAccountant().spend(bad)


def test_check_accountant_refuses_other_objects():
    with pytest.raises(TypeError, match="accountant must be None .* got 3"):
        check_accountant(3)
    with pytest.raises(ValueError, match="need a population name"):
        PrivacyAccountant().spend(None, individual_epsilons=[0.1])
    with pytest.raises(ValueError, match="epsilon=None needs individual_epsilons"):
        PrivacyAccountant().spend(None)


def test_a_ledger_whose_rows_were_stored_as_sparse_matrices_reads_the_same():
    """Each release's per-individual figures are kept as the nonzero entries of the row; a ledger pickled when
    they were kept as 1 x n csr matrices reads the same matrices."""
    import scipy.sparse as sp

    acc = PrivacyAccountant()
    acc.spend(None, population="p", individual_epsilons=[0.1, 0.0, 0.3], payments=[1.0, 0.0, 2.0])
    acc.spend(None, population="p", individual_epsilons=[0.0, 0.2, 0.0], payments=[0.0, 5.0, 0.0])
    eps, pay = acc.individual_epsilons("p"), acc.payments("p")
    assert sp.isspmatrix_csr(eps) and eps.nnz == 3
    np.testing.assert_array_equal(eps.toarray(), [[0.1, 0.0, 0.3], [0.0, 0.2, 0.0]])
    book = acc._populations["p"]
    book["eps"][0] = sp.csr_matrix(np.array([[0.1, 0.0, 0.3]]))
    book["pay"][1] = sp.csr_matrix(np.array([[0.0, 5.0, 0.0]]))
    np.testing.assert_array_equal(acc.individual_epsilons("p").toarray(), eps.toarray())
    np.testing.assert_array_equal(acc.payments("p").toarray(), pay.toarray())
    np.testing.assert_array_equal(acc.individual_spent("p"), [0.1, 0.2, 0.3])
