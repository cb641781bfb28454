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


# --------------------------------------------------------------------------- duplicate entries of a sparse matrix
# A COO matrix built from (rating, (user, item)) triples keeps a re-rated pair twice, and scipy ADDS the two on
# conversion: a 4 and a 1 became one rating 5, inside the scale, without a word (on a 1..5 scale a 5 and a 1 became
# a 6, refused as "outside the rating scale", which named the wrong cause). The sum stays the reading (a rating may
# be stored as summands, tests/faults/test_hostile_inputs3.py), said once per call.
def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def _with_duplicate(fmt="coo_matrix"):
    X, y = _ratings()
    u, i = np.nonzero(X)
    rows, cols, vals = np.r_[u, u[3]], np.r_[i, i[3]], np.r_[X[u, i], 1.0]
    if fmt == "csr_matrix":  # a CSR matrix given its arrays as they are, the pair twice in one row
        order = np.lexsort((cols, rows))
        indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=X.shape[0]))]
        C = sp.csr_matrix((vals[order], cols[order], indptr), shape=X.shape)
    else:
        C = getattr(sp, fmt)((vals, (rows, cols)), shape=X.shape)
    summed = X.copy()
    summed[u[3], i[3]] += 1.0
    return C, summed, y, (int(u[3]), int(i[3]), float(X[u[3], i[3]]))


@pytest.mark.parametrize("fmt", ["coo_matrix", "coo_array", "csr_matrix"])
@pytest.mark.parametrize("entry", ["rmse_cost", "QuantizedPrivacyMapper.fit", "evaluate_attacks",
                                   "SurpriseRecommender.fit", "BlurMe.fit", "holdout_split"])
def test_duplicate_sparse_entries_said_once_and_read_as_their_sum(fmt, entry):
    C, summed, y, (r, c, v) = _with_duplicate(fmt)
    calls = {
        "rmse_cost": lambda X: rmse_cost(QuantizedPrivacyMapper(n_clusters=2), X, y, rating_range=(1, 10), cv=2,
                                         heldout_fraction=0.5, random_state=0, verbose=0).summary["rmse_original"],
        "QuantizedPrivacyMapper.fit": lambda X: QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(X, y).prior_,
        "evaluate_attacks": lambda X: evaluate_attacks(X, summed, y, summed, y, models="logistic", features="values",
                                                       random_state=0, verbose=0)[0]["auc"].to_numpy(),
        "SurpriseRecommender.fit": lambda X: _dense(SurpriseRecommender(rating_scale=(1, 10), random_state=0).fit(X)
                                                    .predict(sp.csr_matrix(summed))),
        "BlurMe.fit": lambda X: _dense(BlurMe(random_state=0).fit(X, y).transform(summed)),
        "holdout_split": lambda X: [m.toarray() for m in holdout_split(X, 0.2, random_state=0)],
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = calls[entry](C)
    said = [w for w in caught if "more than once" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    message = str(said[0].message)
    assert f"row {r}, column {c} 2 times (values [{v!r}, 1.0])" in message and f"their sum ({v + 1.0!r})" in message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = calls[entry](sp.csr_matrix(summed))
    np.testing.assert_allclose(got, expected)


def test_coo_without_duplicates_and_explicit_zeros_read_as_their_csr():
    X, _ = _ratings()
    u, i = np.nonzero(X)
    # unsorted triples, plus an explicit 0 ("not rated") stored on a rated pair: no duplicate rating
    perm = np.random.default_rng(0).permutation(u.size)
    rows, cols, vals = np.r_[u[perm], u[0]], np.r_[i[perm], i[0]], np.r_[X[u, i][perm], 0.0]
    coo = sp.coo_matrix((vals, (rows, cols)), shape=X.shape)
    a, b = holdout_split(coo, 0.3, random_state=4), holdout_split(sp.csr_matrix(X), 0.3, random_state=4)
    assert all((p != q).nnz == 0 for p, q in zip(a, b))
    assert ((a[0] + a[1]).toarray() == X).all()


# --------------------------------------------------------------------------- a shuffled Series beside a matrix
# A matrix without labels (an array, a sparse matrix) is paired with y by position, as scikit-learn pairs it: a y
# whose index holds the positions in another order is what shuffling a table together with X gives
# (sklearn.utils.shuffle(X, y), a frame sorted by the attribute, then X = frame[items].to_numpy()), and those pairs
# are right. (A rule refusing it, in review, refused every such legitimate pair and advised y.sort_index(), which
# would have paired users with other users' labels.)
@pytest.mark.parametrize("as_matrix", [np.asarray, sp.csr_matrix])
def test_a_table_shuffled_together_with_its_labels_pairs_by_position(as_matrix):
    from sklearn.utils import shuffle

    X, y = _ratings()
    labels = pd.Series(np.where(y == 1, "F", "M"))
    Xs, ys = shuffle(X, labels, random_state=0)
    assert not ys.index.equals(pd.RangeIndex(len(ys)))
    a = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(as_matrix(Xs), ys.to_numpy())
    b = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(as_matrix(Xs), ys)
    np.testing.assert_array_equal(a.empirical_prior_, b.empirical_prior_)
    a_att = InferenceAttack(random_state=0).fit(as_matrix(Xs), ys.to_numpy())
    b_att = InferenceAttack(random_state=0).fit(as_matrix(Xs), ys)
    np.testing.assert_array_equal(a_att.predict_proba(as_matrix(X)), b_att.predict_proba(as_matrix(X)))


def test_a_series_in_row_order_or_of_other_labels_still_pairs_by_position():
    X, y = _ratings()
    labels = np.where(y == 1, "F", "M")
    a = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(X, labels)
    for series in (pd.Series(labels), pd.Series(labels, index=[f"u{k}" for k in range(len(y))]),
                   pd.Series(labels, index=np.arange(100, 100 + len(y))[::-1])):
        b = QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(sp.csr_matrix(X), series)
        np.testing.assert_array_equal(a.empirical_prior_, b.empirical_prior_)


# --------------------------------------------------------------------------- a pivot table (NaN = not rated)
# DataFrame.pivot of long-form ratings leaves NaN in every unrated cell: the mappers and BlurMe said to fill them
# with 0; the recommender and the attackers passed on scikit-learn's "Input X contains NaN ... consider
# HistGradientBoostingClassifier", naming no argument, and rmse_cost called them "non-finite ratings".
@pytest.mark.parametrize("entry, name", [
    ("rmse_cost", "ratings"), ("evaluate_attacks", "X_test_released"), ("InferenceAttack.fit", "X"),
    ("SurpriseRecommender.fit", "X"), ("SurpriseRecommender.rmse", "y"), ("holdout_split", "X")])
def test_a_pivot_table_gets_the_fill_with_zero_message(entry, name):
    X, y = _ratings()
    pivot = pd.DataFrame(np.where(X == 0, np.nan, X))
    r, c = np.argwhere(X == 0)[0]
    fitted = SurpriseRecommender().fit(X) if entry == "SurpriseRecommender.rmse" else None
    calls = {
        "rmse_cost": lambda: rmse_cost(QuantizedPrivacyMapper(), pivot, y, verbose=0),
        "evaluate_attacks": lambda: evaluate_attacks(X, None, y, pivot, y, verbose=0),
        "InferenceAttack.fit": lambda: InferenceAttack().fit(pivot, y),
        "SurpriseRecommender.fit": lambda: SurpriseRecommender().fit(pivot),
        "SurpriseRecommender.rmse": lambda: fitted.rmse(X, pivot),
        "holdout_split": lambda: holdout_split(pivot, 0.2, random_state=0),
    }
    n_nan = int(np.sum(X == 0))
    with pytest.raises(ValueError, match=rf"^{name} holds {n_nan} NaN entries \(the first at row {r}, column {c}\); "
                                         rf"in a rating matrix 0 means 'not rated'.*{name}.fillna\(0\)"):
        calls[entry]()


# --------------------------------------------------------------------------- items of the releases
# A release with an item more or less than the training matrices (an item rated only by the protected users,
# appended to their matrix) was blamed by the attacker on "X has 11 features, but InferenceAttack is expecting 10",
# naming neither the argument nor the items.
@pytest.mark.parametrize("which", ["X_train_released", "X_test_released"])
def test_evaluate_attacks_names_the_release_with_other_items(which):
    X, y = _ratings()
    wider = sp.csr_matrix(np.c_[X, np.ones(len(y))])
    args = {"X_train_released": X, "X_test_released": X, which: wider}
    with pytest.raises(ValueError, match=rf"^{which} has 7 items but X_train_original has 6"):
        evaluate_attacks(X, args["X_train_released"], y, args["X_test_released"], y, models="logistic",
                         features="values", verbose=0)
