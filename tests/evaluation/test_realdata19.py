"""Real data shapes on the user path: what each entry point makes of them (audit of round 19)."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease.evaluation import BlurMe, InferenceAttack, evaluate_attacks, rmse_cost
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.recommender import RatingsFrame, SurpriseRecommender, holdout_split


def _ratings(n_users=24, n_items=6, seed=0):
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((n_users, n_items)) < 0.6, rng.integers(1, 6, (n_users, n_items)), 0).astype(float)
    X[:, 0] = rng.integers(1, 6, n_users)  # every user rates something
    return X, np.arange(n_users) % 2


def _long_form(X, user="user", item="item"):
    """The ratings of ``X`` in long form, numeric ids from 1 (MovieLens' u.data)."""
    u, i = np.nonzero(X)
    return pd.DataFrame({user: u + 1, item: i + 1, "rating": X[u, i].astype(int)})


# --------------------------------------------------------------------------- long form and Surprise data
# A numeric long-form table (user, item, rating) is a valid table of numbers: taken as a user x item matrix it is
# one "user" per rating with three "items" (its ids and its rating). The mappers refused it; the evaluation, the
# recommender, the attackers and BlurMe read it without a word (rmse_cost stopped only when an id fell outside
# the rating scale, blaming the scale).
def _long_form_entry_points(L, y_rows):
    return {
        "rmse_cost": lambda: rmse_cost(QuantizedPrivacyMapper(), L, y_rows, rating_range=(1, 10_000), verbose=0),
        "evaluate_attacks": lambda: evaluate_attacks(L, None, y_rows, L, y_rows, models="logistic",
                                                     features="values", verbose=0),
        "SurpriseRecommender.fit": lambda: SurpriseRecommender().fit(L),
        "InferenceAttack.fit": lambda: InferenceAttack().fit(L, y_rows),
        "BlurMe.fit": lambda: BlurMe().fit(L, y_rows),
        "holdout_split": lambda: holdout_split(L, 0.2, random_state=0),
    }


@pytest.mark.parametrize("entry", ["rmse_cost", "evaluate_attacks", "SurpriseRecommender.fit",
                                   "InferenceAttack.fit", "BlurMe.fit", "holdout_split"])
@pytest.mark.parametrize("columns", [("user", "item"), ("userId", "movieId"), ("User-ID", "ISBN")])
def test_long_form_refused_with_the_conversion(entry, columns):
    X, _ = _ratings()
    L = _long_form(X, *columns)
    y_rows = np.arange(len(L)) % 2
    with warnings.catch_warnings(), pytest.raises(TypeError, match="long form") as err:
        warnings.simplefilter("ignore")
        _long_form_entry_points(L, y_rows)[entry]()
    assert "RatingsFrame" in str(err.value) and repr(columns[0]) in str(err.value)


@pytest.mark.parametrize("kind", ["Dataset", "Trainset"])
@pytest.mark.parametrize("entry", ["rmse_cost", "evaluate_attacks", "SurpriseRecommender.fit", "BlurMe.fit"])
def test_surprise_data_refused_with_the_conversion(kind, entry):
    X, y = _ratings()
    rf = RatingsFrame().fit(pd.DataFrame({"user": [1, 2], "item": [1, 1], "rating": [3.0, 4.0]}))
    data = rf.to_surprise(rf.from_matrix(sp.csr_matrix(X[:2, :1])))
    data = data if kind == "Dataset" else data.build_full_trainset()
    calls = {
        "rmse_cost": lambda: rmse_cost(QuantizedPrivacyMapper(), data, y, verbose=0),
        "evaluate_attacks": lambda: evaluate_attacks(data, None, y, X, y, models="logistic", features="values",
                                                     verbose=0),
        "SurpriseRecommender.fit": lambda: SurpriseRecommender().fit(data),
        "BlurMe.fit": lambda: BlurMe().fit(data, y),
    }
    with pytest.raises(TypeError, match=f"surprise {kind}") as err:
        calls[entry]()
    assert "RatingsFrame.from_surprise" in str(err.value)
