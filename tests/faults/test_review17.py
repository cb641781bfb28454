"""Findings of the stop's audits fixed by the lead after the merges."""

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.recommender import SurpriseRecommender


@pytest.mark.parametrize("bad", [np.nan, None, float("nan")])
@pytest.mark.parametrize("name", ["user_ids", "item_ids"])
def test_surprise_recommender_refuses_missing_ids(bad, name):
    # RatingsFrame refuses a missing id; SurpriseRecommender kept it (two NaN users passed the uniqueness check)
    X = sp.random(6, 5, density=0.6, random_state=0, format="csr", data_rvs=lambda k: np.full(k, 3.0))
    n = X.shape[0] if name == "user_ids" else X.shape[1]
    ids = np.array([f"u{i}" for i in range(n)], dtype=object)
    ids[1] = bad
    with pytest.raises(ValueError, match=f"{name} must not hold missing values .* at position 1"):
        SurpriseRecommender("BaselineOnly", random_state=0).fit(X, **{name: ids})
    SurpriseRecommender("BaselineOnly", random_state=0).fit(X, **{name: np.arange(n) + 0.5})  # floats are fine
