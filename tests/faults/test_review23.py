"""Review of stop 46's merged work (leftc23): fixes found by the review, each test failing before."""
import warnings

import numpy as np
import pytest


def test_individual_spent_with_a_size_refuses_names_spend_refuses():
    # individual_spent(1.0, n_individuals=3) returned zeros beside population 1's spent [.5, .2, .1]: an
    # understated privacy loss under a name spend() refuses (True and 1.0 would be population 1)
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant()
    acc.spend(1.0, population=1, individual_epsilons=np.array([0.5, 0.2, 0.1]))
    for name in (1.0, np.float64(1.0), True, np.True_, (True, "a"), (1.0, "a")):
        with pytest.raises(KeyError, match="a boolean or a non-integer number names no population"):
            acc.individual_spent(name, n_individuals=3)
    np.testing.assert_array_equal(acc.individual_spent(1, n_individuals=3), [0.5, 0.2, 0.1])
    np.testing.assert_array_equal(acc.individual_spent(2, n_individuals=3), np.zeros(3))  # no release yet


def test_a_warning_under_grid_search_names_the_callers_line():
    # with joblib between (GridSearchCV runs its fits through Parallel, at n_jobs=1 too), the warning named
    # joblib/parallel.py
    from sklearn.model_selection import GridSearchCV

    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    R, a, _ = make_ratings(120, 25, attribute_strength=2.0, random_state=0)
    coo = R.tocoo()
    # a long-form table with neutral column names, ids beyond a rating scale: read as a matrix, with a warning
    X = np.column_stack([coo.row + 1000, coo.col + 1000, coo.data])
    y = np.asarray(a)[coo.row]

    class Scored(QuantizedPrivacyMapper):
        def score(self, X, y=None):
            return 0.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GridSearchCV(Scored(n_clusters=3, max_leakage=0.05, random_state=0), {"n_clusters": [3]}, cv=2,
                     n_jobs=1, refit=False).fit(X, y)
    ours = [w for w in caught if "long form" in str(w.message)]
    assert ours and all(w.filename == __file__ for w in ours), sorted({w.filename for w in ours})


def test_a_huge_grid_is_refused_before_it_is_copied():
    from privrelease.mapping import kde_prior

    X = np.random.default_rng(0).normal(size=(60, 1))
    y = np.arange(60) % 2
    with pytest.raises(ValueError, match=r"grid of 1000000000000 points x 1 feature\(s\): the densities"):
        kde_prior(X, y, grid=np.broadcast_to(0.0, (10**12, 1)), bandwidths=[0.5], cv=2)
