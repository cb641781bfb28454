"""What the last stop left open outside the engine.

* a released long-form frame FILTERED after it was written reads its ids no longer: the users and items that
  had no stored rating are then said (how many, and why), never dropped without a word;
* the UserWarnings of the formats point at the caller's line (a fixed stacklevel named a line inside the
  library on some call paths); a long-form table of at most 100 users and items, which cannot be told from a
  small matrix of scores, is read as one (documented);
* what a parquet round trip keeps of a released frame;
* the accountant names an unknown population (an unhashable one, a boolean, a numpy scalar);
* brier_payment refuses shapes that differ (a 1-element prediction was broadcast over every outcome);
* DCLEF of no individual: the estimate of the empty sum is 0 exactly;
* as_int64_codes of a long list: the same answers;
* kde_prior with an explicit grid checks its memory as n_grid does.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease.recommender import RatingsFrame


def _caught(call):
    """``(result, warnings)`` of ``call()``, every warning recorded."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    return out, [w for w in caught if issubclass(w.category, UserWarning)]


# ------------------------------------------------------------------ 1: a filtered release
@pytest.fixture
def released():
    """A release of 5 users x 4 items in long form: user 'c' and item 40 have no stored rating."""
    ratings = pd.DataFrame({"user": ["a", "a", "b", "c", "d", "e", "e"], "item": [10, 20, 10, 40, 30, 20, 30],
                            "rating": [4.0, 5.0, 3.0, 2.0, 1.0, 5.0, 4.0]})
    rf = RatingsFrame().fit(ratings)
    X = rf.to_matrix(ratings).toarray()
    X[2] = 0.0  # user 'c' rated only item 40: both are empty in the release
    return _caught(lambda: rf.from_matrix(X))[0]  # said: 1 user and 1 item left out


def test_a_filtered_release_says_the_users_without_a_rating_it_drops(released):
    assert released.attrs["ids"].user_ids.tolist() == ["a", "b", "c", "d", "e"]
    subset = released[released["user"] != "d"]  # a user removed on purpose, with her row
    rf, said = _caught(lambda: RatingsFrame().fit(subset))
    # the mappings are the rows' ids: 'c' (no rating) and 'd' (removed) are not in them, nor is item 40 (no
    # rating); item 30 is ('e' rated it too)
    assert rf.user_ids_.tolist() == ["a", "b", "e"] and rf.item_ids_.tolist() == [10, 20, 30]
    texts = [str(w.message) for w in said]
    assert len(texts) == 1, texts
    assert ("1 user(s) and 1 item(s) with no stored rating when written are not in the id mappings" in texts[0]
            and "besides 1 user(s) and 0 item(s) whose rows are not in the frame" in texts[0]), texts[0]
    assert said[0].filename == __file__


def test_a_filtered_release_sent_to_surprise_says_it_too(released):
    subset = released[released["rating"] > 1.5]
    rf = _caught(lambda: RatingsFrame().fit(released))[0]
    _, said = _caught(lambda: rf.to_surprise(subset))
    assert any("with no stored rating when written are not in the Surprise dataset" in str(w.message)
               for w in said), [str(w.message) for w in said]


def test_a_release_read_as_written_keeps_every_id_without_this_warning(released):
    rf, said = _caught(lambda: RatingsFrame().fit(released))
    assert rf.user_ids_.tolist() == ["a", "b", "c", "d", "e"] and rf.item_ids_.tolist() == [10, 20, 30, 40]
    assert not said
    # a filter that removes only rows of users who keep others: nothing recorded is lost that had no row
    full = pd.DataFrame({"user": ["a", "a", "b"], "item": [1, 2, 1], "rating": [1.0, 2.0, 3.0]})
    rf_full = RatingsFrame().fit(full)
    written = rf_full.from_matrix(rf_full.to_matrix(full))
    _, said = _caught(lambda: RatingsFrame().fit(written[written["user"] == "a"]))
    assert not said, [str(w.message) for w in said]


# ------------------------------------------------------------------ 2: where the warnings point
def test_the_left_out_warning_points_at_the_caller_on_every_path(released):
    rf = _caught(lambda: RatingsFrame().fit(released))[0]
    X = rf.to_matrix(released)
    for call in (lambda: rf.from_matrix(X), lambda: rf.to_surprise(X), lambda: rf.to_trainset(X),
                 lambda: rf.to_surprise(released)):
        _, said = _caught(call)
        assert said and all(w.filename == __file__ for w in said), [(w.filename, str(w.message)) for w in said]


def test_the_align_and_duplicate_warnings_point_at_the_caller(released):
    rf = _caught(lambda: RatingsFrame().fit(released))[0]
    _, said = _caught(lambda: rf.align({"a": 1, "zz": 0}))
    assert said and all(w.filename == __file__ for w in said)
    coo = sp.coo_matrix(([1.0, 2.0], ([0, 0], [0, 0])), shape=rf.shape)  # (a, 10) stored twice
    _, said = _caught(lambda: rf.from_matrix(coo))
    assert said and all(w.filename == __file__ for w in said), [(w.filename, str(w.message)) for w in said]


def _long_table(n_users, n_items, seed=0):
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(n_users, n_items, attribute_strength=2.0, random_state=seed)
    coo = R.tocoo()
    return np.column_stack([coo.row + 1, coo.col + 1, coo.data]), a[coo.row]


def test_the_neutral_names_warning_points_at_the_caller():
    from privrelease.mappers import QuantizedPrivacyMapper

    table, y = _long_table(120, 25)
    for X in (table, pd.DataFrame(table, columns=["a", "b", "c"])):
        _, said = _caught(lambda: QuantizedPrivacyMapper(n_clusters=3, max_leakage=0.05, random_state=0).fit(X, y))
        said = [w for w in said if "long form" in str(w.message)]
        assert said and all(w.filename == __file__ for w in said), [w.filename for w in said]


def test_tables_within_a_rating_scale_are_read_as_matrices_without_a_word():
    # a long-form table of ids 1..60 and 1..25 cannot be told from a matrix of 0..100 scores, which shows every sign
    # of long form too (review: a warning fired on 50 of 50 such 150 x 3 matrices): both read as matrices, silently
    from privrelease.utils._validation import refuse_long_form

    table, _ = _long_table(60, 25)
    assert table[:, :2].max() <= 100
    rng = np.random.default_rng(1)
    scores = [rng.integers(0, 101, size=(150, 3)).astype(np.float64) for _ in range(20)]
    rated = rng.integers(1, 6, size=(150, 3)).astype(np.float64)
    for M in [table, rated, *scores]:
        assert not _caught(lambda: refuse_long_form(M))[1]


# ------------------------------------------------------------------ 3: what a file keeps
def test_a_pickle_round_trip_keeps_every_id(released, tmp_path):
    released.to_pickle(tmp_path / "r.pkl")
    back = pd.read_pickle(tmp_path / "r.pkl")
    rf, said = _caught(lambda: RatingsFrame().fit(back))
    assert rf.user_ids_.tolist() == ["a", "b", "c", "d", "e"] and not said


def test_a_parquet_round_trip_keeps_the_rows_and_the_counts_and_says_what_it_lost(released, tmp_path):
    pytest.importorskip("pyarrow")
    released.to_parquet(tmp_path / "r.parquet")
    back = pd.read_parquet(tmp_path / "r.parquet")
    # the rows as written (ids, ratings and their dtypes); of attrs['ids'] only its counts, a plain dict
    pd.testing.assert_frame_equal(back, released, check_like=False)
    assert back.attrs["ids"] == {"n_users": 5, "n_items": 4, "n_unrated_users": 1, "n_unrated_items": 1}
    assert type(back.attrs["ids"]) is dict
    rf, said = _caught(lambda: RatingsFrame().fit(back))
    assert rf.user_ids_.tolist() == ["a", "b", "d", "e"] and rf.item_ids_.tolist() == [10, 20, 30]
    assert len(said) == 1 and "1 user(s) and 1 item(s)" in str(said[0].message), [str(w.message) for w in said]
    assert said[0].filename == __file__
    # the converter that said it does not say it again of the same frame (test_left24); another one does
    _, said = _caught(lambda: RatingsFrame().to_surprise(back))
    assert any("counts the 5 users and 4 items" in str(w.message) for w in said)
    # rows removed after reading were removed on purpose: only the users and items without a row are said
    _, said = _caught(lambda: RatingsFrame().fit(back[back["user"] != "a"]))
    assert len(said) == 1 and "1 user(s) and 1 item(s) of them without a stored rating" in str(said[0].message)


# ------------------------------------------------------------------ 4: the accountant names the population
def test_individual_spent_names_an_unknown_population():
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant()
    acc.spend(0.1, population=1, individual_epsilons=[0.1, 0.05])
    acc.spend(0.2, population="a", individual_epsilons=[0.2])
    # an unhashable name: Python's "unhashable type: 'list'" named neither it nor the known ones
    for call in (lambda: acc.individual_spent([1]), lambda: acc.individual_spent([1], n_individuals=2),
                 lambda: acc.payments({"a": 1})):
        with pytest.raises(TypeError, match=r"population must be a hashable name .*, got \[1\] of type list; "
                                            r"known: \[1, 'a'\]|got \{'a': 1\} of type dict; known: \[1, 'a'\]"):
            call()
    # a numpy string shown as the user wrote it (it read np.str_('zz'))
    with pytest.raises(KeyError, match=r"no release recorded for population 'zz'; known: \[1, 'a'\]"):
        acc.individual_spent(np.str_("zz"))
    # True is not population 1 (spend() refuses it for that reason): its ledger was returned as True's
    for name in (True, np.True_, (True,)):
        with pytest.raises(KeyError, match=r"names no population"):
            acc.individual_spent(name)
        with pytest.raises(KeyError, match=r"names no population"):  # not "nothing spent" (review)
            acc.individual_spent(name, n_individuals=2)
    assert acc.individual_spent(np.int64(1)).tolist() == [0.1, 0.05]


# ------------------------------------------------------------------ 5: brier_payment's shapes
def test_brier_payment_refuses_shapes_that_differ():
    from privrelease.regression import brier_payment

    outcomes = np.array([1.0, -1.0, 0.5])
    for prediction in ([1.0], np.array([[1.0], [-1.0], [0.5]])):
        with pytest.raises(ValueError, match=r"same shape .*got shapes \(3,\) and \((1,|3, 1)\)"):
            brier_payment(outcomes, prediction)
    # equal shapes: the closed form B(p, q) = 1 - (q - p)^2 - p (1 - p) after t -> (t + 1) / 2, pairwise
    q = np.array([1.0, 1.0, 0.0])
    p_, q_ = (outcomes + 1) / 2, (q + 1) / 2
    np.testing.assert_allclose(brier_payment(outcomes, q), 1 - (q_ - p_) ** 2 - p_ * (1 - p_), rtol=1e-12)
    # a broadcast that is meant, made explicit
    np.testing.assert_allclose(brier_payment(*np.broadcast_arrays(outcomes, 1.0)), brier_payment(outcomes, np.ones(3)))


# ------------------------------------------------------------------ 6: DCLEF of no individual
def test_dclef_of_no_individual_estimates_the_empty_sum_exactly():
    from privrelease.auctions import DCLEF

    est, said = _caught(lambda: DCLEF([], [], data_range=(1, 5)))
    # eqs. (4)-(6) with n = 0: s = 0, sigma = Delta * 0 = 0, distortion (9/4) Delta^2 * 0 = 0, no eps_i
    assert est.sigma == 0.0 and est.distortion == 0.0 and est.epsilons.shape == (0,) and not said
    for seed in (0, 1, None):
        assert est.sample([], random_state=seed) == 0.0
    np.testing.assert_array_equal(est.sample(np.empty((3, 0)), random_state=0), np.zeros(3))
    with pytest.raises(ValueError, match=r"d must have shape \(0,\) or \(n_databases, 0\), got \(1,\)"):
        est.sample([3.0])
    # a given sigma: Laplace noise around the empty sum 0
    draws = DCLEF([], [], data_range=(1, 5), sigma=2.0).sample(np.full((4000, 0), 1.0), random_state=0)
    assert abs(np.mean(draws)) < 0.2 and np.mean(np.abs(draws)) == pytest.approx(2.0, rel=0.08)


# ------------------------------------------------------------------ 8: kde_prior's explicit grid
def test_kde_prior_checks_the_memory_of_an_explicit_grid_as_of_n_grid(monkeypatch):
    from privrelease.mapping import kde_prior
    from privrelease.utils import _validation

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 2)), np.repeat([0, 1], 20)
    grid = rng.normal(size=(20_000, 2))
    reference = kde_prior(X, y, grid=grid[:50], bandwidths=[0.5], cv=2)
    monkeypatch.setattr(_validation, "_physical_memory", lambda: 2**26)
    monkeypatch.setattr(_validation, "_available_memory", lambda: 2**20, raising=False)
    # 20,000 points x (16 + 56 x 2 classes + 16 x 2 features) bytes = 3.05 MiB at the peak, 1 MiB available
    with pytest.raises(ValueError, match=r"grid of 20000 points x 2 feature\(s\): the densities of the 2 classes "
                                         r"would need 3\.05 MiB \(20,000 grid points of 160 bytes"):
        kde_prior(X, y, grid=grid, bandwidths=[0.5], cv=2)
    with pytest.raises(ValueError, match=r"n_grid=20000: the grid points would need 3\.05 MiB"):
        kde_prior(X, y, n_grid=20_000, bandwidths=[0.5], cv=2)
    # a small grid is computed as before: p(a, b_j) = p(a) f_a(b_j) / sum_j' f_a(b_j'), f_a a Gaussian KDE of
    # bandwidth h over class a's rows (written out here)
    small, h = kde_prior(X, y, grid=grid[:50], bandwidths=[0.5], cv=2), 0.5
    for a in (0, 1):
        sq = ((grid[:50, None, :] - X[y == a][None, :, :]) ** 2).sum(axis=2)
        f = np.exp(-sq / (2 * h * h)).mean(axis=1)
        np.testing.assert_allclose(small.prior[a], 0.5 * f / f.sum(), rtol=1e-9)
    np.testing.assert_allclose(small.prior, reference.prior, rtol=1e-12)


# ------------------------------------------------------------------ 7: as_int64_codes of long lists
def _codes_or_error(values):
    from privrelease.utils._validation import as_int64_codes

    try:
        return as_int64_codes(values, "x").tolist()
    except ValueError as exc:
        return str(exc)


def _first_boolean_by_value(values):
    """The rule written value by value: the first boolean of numpy's flat object array."""
    flat = np.asarray(values, dtype=object).ravel()
    return next(((i, v) for i, v in enumerate(flat) if isinstance(v, (bool, np.bool_))), None)


@pytest.mark.parametrize("values", [
    [3, 1, 2], [3, True, 2], [0, 1, np.False_], [[1, 2], [3, False]], [1.0, 2.0, True], [], [[]],
    (4, 5, True), [np.int64(3), np.True_], [1, 2**63], [-1, 2**63], [1.5, 2], ["1", 2], [1, None],
    [np.array(1), np.array(True)], [[1, 2], [3, 4]], [np.uint64(2**64 - 1), 1],
])
def test_as_int64_codes_answers_as_the_value_by_value_rule(values):
    from privrelease.utils._validation import _first_boolean

    assert _first_boolean(values) == _first_boolean_by_value(values)
    hit = _first_boolean_by_value(values)
    if hit is not None:
        assert _codes_or_error(values) == f"x must hold integer codes, got the boolean {hit[1]!r} at index {hit[0]}"


def test_as_int64_codes_of_a_million_ids_names_a_late_boolean():
    ids = list(range(10**6))
    assert _codes_or_error(ids) == ids
    ids[-3] = True
    assert _codes_or_error(ids) == "x must hold integer codes, got the boolean True at index 999997"
