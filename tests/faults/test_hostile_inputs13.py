"""Hostile inputs, thirteenth audit: labels written as text, an absurd number of workers, one field as a pandas
Series, dates as ratings, and a stray code that made ``empirical_prior`` allocate three times what it checked.
One test per finding (earlier audits: test_hostile_inputs.py to test_hostile_inputs12.py)."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from privrelease import ErasureMapper, InferenceAttack, QuantizedPrivacyMapper
from privrelease.datasets import make_ratings
from privrelease.evaluation import privacy_utility_curve, rmse_cost
from privrelease.mapping import empirical_prior, privacy_distortion_curve
from privrelease.runner.experiments.ratings_file import MISSING
from privrelease.utils import UNDISCLOSED_TEXTS, check_rating_matrix, undisclosed_mask


@pytest.fixture(scope="module")
def ratings():
    R, g, _ = make_ratings(n_users=120, n_items=25, random_state=0)
    y = g.astype(float)
    y[60:] = np.nan  # the second half did not disclose
    return R, y


# ----------------------------------------------------------------------- labels written as text
TEXTS = {
    "astype(str) of NaN": lambda y: y.astype(str),  # 'nan'
    "float -1 as text": lambda y: np.where(np.isnan(y), -1.0, y).astype(str),  # '-1.0'
    "NA": lambda y: np.where(np.isnan(y), "NA", y.astype(str)),
    " N/A (spaces, case)": lambda y: np.where(np.isnan(y), " n/a ", y.astype(str)),
    "None as text": lambda y: np.where(np.isnan(y), "None", y.astype(str)),
    "str(pd.NA)": lambda y: np.where(np.isnan(y), str(pd.NA), y.astype(str)),
    "object array": lambda y: np.where(np.isnan(y), "null", y.astype(str)).astype(object),
    "bytes": lambda y: np.where(np.isnan(y), b"nan", y.astype(str).astype(bytes)),
}


@pytest.mark.parametrize("make", TEXTS.values(), ids=TEXTS.keys())
def test_undisclosed_users_written_as_text_never_become_a_class(ratings, make):
    # astype(str) of the documented NaN marker gave 'nan', which became a third "class" holding every undisclosed
    # user, with no warning (mappers, attackers, erasure alike)
    R, y = ratings
    text = make(y)
    assert undisclosed_mask(text).tolist() == np.isnan(y).tolist()
    m = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(R, text)
    assert len(m.classes_) == 2 and m.n_labeled_ == 60
    if text.dtype.kind != "S":  # scikit-learn's classifiers refuse bytes labels, by name
        assert len(InferenceAttack(random_state=0).fit(R, text).classes_) == 2
    fields = pd.DataFrame({"f": (np.arange(R.shape[0]) % 3).astype(str)})
    assert len(ErasureMapper(delta=0.5, random_state=0).fit(fields, text).classes_) == 2


def test_text_labels_that_only_contain_a_marker_stay_classes():
    y = np.array(["nana", "-10", "n/a/b", "?x", "None1", "0"])
    assert not undisclosed_mask(y).any()


def test_the_command_line_files_and_the_library_share_one_list_of_markers():
    assert MISSING is UNDISCLOSED_TEXTS
    assert undisclosed_mask(np.array(list(MISSING) + [m.upper() for m in MISSING])).all()


# ----------------------------------------------------------------------- workers
@pytest.mark.parametrize("n_jobs", [500_001, 10**7, -10**6, 4097])
def test_an_absurd_number_of_workers_is_refused_by_name(ratings, n_jobs):
    # joblib failed inside ("Numeric literal 1000002 is too large"), or started 200,000 processes for three tasks
    P = np.array([[0.3, 0.2], [0.1, 0.4]])
    D = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match=f"n_jobs must be .* from -4096 to 4096 .*got {n_jobs}"):
        privacy_distortion_curve(P, D, [0.1, 0.2], n_jobs=n_jobs)
    R, y = ratings
    mapper = QuantizedPrivacyMapper(n_clusters=4, random_state=0)
    with pytest.raises(ValueError, match="n_jobs must be"):
        rmse_cost(mapper, R, y, n_jobs=n_jobs)
    with pytest.raises(ValueError, match="n_jobs must be"):
        privacy_utility_curve(mapper, R, y, deltas=[0.5], n_jobs=n_jobs)


def test_the_largest_number_of_workers_allowed_still_runs():
    P = np.array([[0.3, 0.2], [0.1, 0.4]])
    D = np.array([[0.0, 1.0], [1.0, 0.0]])
    curve = privacy_distortion_curve(P, D, [0.1], n_jobs=-4096)  # as many as the machine has
    assert (curve["status"] == "optimal").all()


# ----------------------------------------------------------------------- one field as a Series
@pytest.mark.parametrize("field", [
    pd.Series(["x", "y", "z", "x"] * 25, name="city"),
    pd.Series(["x", "y", "z", "x"] * 25, name="city", dtype="category"),
    pd.Series(np.arange(100) % 3, name="city"),
])
def test_erasure_of_one_field_given_as_a_series_says_to_make_it_a_frame(field):
    # AttributeError: 'StringDtype' object has no attribute 'items'
    y = np.arange(100) % 2
    with pytest.raises(TypeError, match=r"got a pandas Series 'city' of 100 values: pass X.to_frame\(\)"):
        ErasureMapper(delta=0.5, random_state=0).fit(field, y)
    m = ErasureMapper(delta=0.5, random_state=0).fit(field.to_frame(), y)  # as advised
    assert m.transform(field.to_frame()).shape == (100, 1)
    with pytest.raises(TypeError, match="got a pandas Series 'city'"):
        m.transform(field)


# ----------------------------------------------------------------------- dates as ratings
@pytest.mark.parametrize("unit", ["datetime64[s]", "timedelta64[s]"])
def test_dates_and_durations_as_ratings_are_refused_naming_the_dtype(ratings, unit):
    # datetime64 reached numpy ("ufunc 'absolute' did not contain a loop"); timedelta64 counts as a number to
    # np.issubdtype, and check_rating_matrix read durations as seconds
    R, y = ratings
    X = R.toarray().astype(unit)
    with pytest.raises(TypeError, match=f"X must hold ratings as numbers, got dtype {unit.replace('[', '.')}"):
        QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X, y)
    m = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(R, y)
    with pytest.raises(TypeError, match="dates and durations are not ratings"):
        m.transform(X)
    with pytest.raises(TypeError, match="dates and durations are not ratings"):
        check_rating_matrix(X)
    frame = pd.DataFrame(R.toarray()).assign(when=pd.Timestamp("2020-01-01"))
    with pytest.raises(TypeError, match="column 'when'"):
        check_rating_matrix(frame)


# ----------------------------------------------------------------------- the prior's memory
def test_empirical_prior_allocates_the_one_array_its_memory_check_counts():
    # a stray code of 1e9 passed the check for one 16 GB array, then ``counts / scale + s / scale`` made two more
    n_public = 2_000_000
    tracemalloc.start()
    try:
        p = empirical_prior([0, 1], [0, n_public - 1], smoothing=0.5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    one = 2 * n_public * 8
    assert peak < 1.25 * one, (peak, one)
    assert p.shape == (2, n_public) and abs(p.sum() - 1.0) < 1e-12
    # the same numbers as before the change (Proposition 1 with additive smoothing)
    expected = np.full((2, n_public), 0.5)
    expected[0, 0] += 1
    expected[1, -1] += 1
    np.testing.assert_allclose(p, expected / expected.sum(), rtol=1e-15)


# ----------------------------------------------------------------------- contracts
def test_privacy_cost_of_mismatched_shapes_names_both_arguments():
    from privrelease.contracts import privacy_cost

    with pytest.raises(ValueError, match=r"valuation \(shape \(2,\)\) and epsilon \(shape \(3,\)\) must have the same"):
        privacy_cost([1.0, 2.0], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(privacy_cost([1.0, 2.0], 0.5), [0.5, 1.0])  # a single number broadcasts
    np.testing.assert_allclose(privacy_cost([[1.0], [2.0]], [0.5, 1.0]), [[0.5, 1.0], [1.0, 2.0]])


# ----------------------------------------------------------------------- noise and accounting
@pytest.mark.parametrize("scale, bound, value", [(5e-324, 10.0, 0.5), (5e-324, 10.0, -0.5), (1e-300, 1e20, 1e10),
                                                 (2.0**-60, 1.0, 0.75)])
def test_snapping_with_a_tiny_scale_releases_the_value_not_the_bound(scale, bound, value):
    # value / grid overflowed to inf for a tiny grid (2**ceil(log2(scale))), and the clamp released +-B
    from privrelease.exceptions import PrivacyLeakWarning
    from privrelease.noise import Laplace

    with pytest.warns(PrivacyLeakWarning, match="no proven differential privacy"):  # bound >= 2**46 scale
        m = Laplace(scale=scale, snapping_bound=bound, random_state=0)
    assert m.effective_epsilon == np.inf
    out = np.array([m.randomise(value) for _ in range(20)])
    grid = 2.0 ** np.ceil(np.log2(scale))
    assert np.all(np.abs(out - value) <= 60 * scale + grid + np.spacing(abs(value)))  # Laplace tail of 60 scales
    assert np.all(np.abs(out) <= bound)


def test_snapping_still_rounds_to_its_grid_and_clamps():
    from privrelease.noise import Laplace

    m = Laplace(scale=0.3, snapping_bound=2.0, random_state=1)
    out = np.asarray(m.randomise(np.full(2000, 0.4)))
    assert np.all(np.abs(out) <= 2.0)
    assert np.all(np.mod(out / 0.5, 1.0) == 0.0)  # the grid 2**ceil(log2(0.3)) = 0.5
    assert np.any(out == 2.0) or np.any(out == -2.0) or np.abs(out).max() < 2.0


def test_a_refused_spend_records_nothing():
    # "total_payment" beside payments failed inside dict() after the budget was charged and the population's row
    # written: spent 0.5, one population, no record
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(10.0)
    with pytest.raises(ValueError, match="spend\\(\\) sets 'total_payment' itself, the sum of payments \\(3.0\\)"):
        acc.spend(0.5, population="p", individual_epsilons=[0.1, 0.2], payments=[1, 2], total_payment=5)
    assert acc.spent == 0.0 and len(acc) == 0 and len(acc.records) == 0 and acc.populations() == []
    acc.spend(0.5, population="p", individual_epsilons=[0.1, 0.2], payments=[1, 2], note="ok")
    assert acc.records["total_payment"].tolist() == [3.0] and acc.records["note"].tolist() == ["ok"]


def test_an_unlimited_accountant_keeps_an_infinite_remaining_budget():
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant()
    acc.spend(np.inf)
    assert acc.remaining() == np.inf


# ----------------------------------------------------------------------- MovieLens files
def test_a_movielens_100k_rating_by_a_user_u_user_does_not_describe_is_refused(tmp_path):
    # user 9 got NaN demographics (and every age turned float) without a word; the 1M loader already refused it
    from privrelease.datasets import load_movielens_100k

    item = "|01-Jan-1995||http://x|" + "|".join("0" * 19) + "\n"
    (tmp_path / "u.item").write_text("10|Toy Story (1995)" + item + "20|GoldenEye (1995)" + item)
    (tmp_path / "u.user").write_text("1|24|M|technician|85711\n2|53|F|other|94043\n")
    (tmp_path / "u.data").write_text("1\t10\t4\t881250949\n2\t10\t3\t881250950\n1\t20\t5\t881250951\n")
    X, users, _ = load_movielens_100k(tmp_path)  # consistent files load, ages int
    assert X.shape == (2, 2) and users["age"].dtype.kind == "i"
    with open(tmp_path / "u.data", "a") as fh:
        fh.write("9\t10\t4\t881250952\n")
    with pytest.raises(ValueError, match=r"u.data line 4: user 9 is not in .*u.user \(1 rating\(s\) by users"):
        load_movielens_100k(tmp_path)


# ----------------------------------------------------------------------- the recommender's model size
@pytest.mark.parametrize("algorithm", ["SVD", "SVDpp"])
def test_an_absurd_number_of_factors_is_refused_by_name_before_surprise_allocates(ratings, algorithm):
    # numpy's bare "Unable to allocate 224. GiB for an array with shape (30, 1000000000)" from inside Surprise
    from privrelease.recommender import SurpriseRecommender

    R, _ = ratings
    X = R.tocsr().astype(float)
    with pytest.raises(ValueError, match=f"algo_params n_factors=1000000000: {algorithm}'s factor matrices"):
        SurpriseRecommender(algorithm, algo_params={"n_factors": 10**9, "n_epochs": 1}, random_state=0).fit(X)
    fitted = SurpriseRecommender(algorithm, algo_params={"n_factors": 3, "n_epochs": 2}, random_state=0).fit(X)
    assert fitted.predict(X).shape == X.shape


# ----------------------------------------------------------------------- the synthetic ratings' scale
@pytest.mark.parametrize("make", ["make_ratings", "make_realistic_ratings"])
def test_synthetic_ratings_spread_over_the_width_of_their_scale(make):
    # the deviations stayed in stars of a 1-5 scale: (1, 100) gave 11 distinct ratings, all between 58 and 68
    import privrelease.datasets as ds

    gen = getattr(ds, make)
    five = gen(n_users=200, n_items=60, random_state=0)[0].data
    nine = gen(n_users=200, n_items=60, random_state=0, rating_scale=(1, 9))[0].data
    hundred = gen(n_users=200, n_items=60, random_state=0, rating_scale=(1, 100))[0].data
    assert five.size == nine.size == hundred.size  # the same users rate the same items
    assert 1.8 < nine.std() / five.std() < 2.2  # twice the width, twice the spread (rounding aside)
    assert 22 < hundred.std() / five.std() < 27  # 99 / 4 = 24.75
    assert np.unique(hundred).size > 50 and hundred.min() >= 1 and hundred.max() <= 100
    with pytest.raises(ValueError, match=r"rating_scale\[1\] must be <= 9007199254740992"):
        gen(n_users=200, n_items=60, random_state=0, rating_scale=(1, 10**17))


# ----------------------------------------------------------------------- a text column among the ratings
def test_a_text_column_among_the_ratings_is_named(ratings):
    # scikit-learn's "could not convert string to float: 'x'" named neither the column nor what was expected
    R, y = ratings
    frame = pd.DataFrame(R.toarray(), columns=[f"c{i}" for i in range(R.shape[1])])
    bad = frame.assign(c3=["x"] * 5 + [str(v) for v in frame["c3"].iloc[5:]])
    with pytest.raises(TypeError, match=r"X column 'c3' holds 'x' \(row 0\), not a rating: expected numbers \(5 "):
        QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(bad, y)
    with pytest.raises(TypeError, match="column 'c3' holds 'x'"):
        check_rating_matrix(bad)
    as_text = frame.astype(str)  # numbers written as text still read as numbers
    fitted = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(as_text, y)
    assert fitted.transform(as_text).shape == frame.shape


# ----------------------------------------------------------------------- the regression's sensitivity
def test_a_response_bound_too_large_for_float64_is_named_with_the_largest_accepted():
    # the message blamed alpha ("alpha=1.0 is too small"), sending the user to raise alpha instead of rescaling y
    from privrelease.regression import TruthfulRegressionMechanism, ridge_sensitivity

    with pytest.raises(ValueError, match=r"response_bound=1e\+308, alpha=1.0 and n=2: expected response_bound <= "
                                         r"5\.265321287086693e\+307 at this alpha \(rescale the responses y\)"):
        TruthfulRegressionMechanism(response_bound=1e308, alpha=1.0).fit([[0.6, 0.0], [0.0, 0.6]], [0.5, -0.5])
    assert np.isfinite(ridge_sensitivity(2, 1.0, 0.999 * 5.26532e307))  # just below the bound it names
    # a subnormal alpha still has response bounds whose sensitivity is finite (stop 45: the message said "too small
    # for any response bound" where 6.2e-178 fits): the largest is named, and it passes typed back
    with pytest.raises(ValueError, match=r"alpha=5e-324 and n=10: expected response_bound <= ([0-9.e+-]+) at this "
                                         r"alpha") as info:
        ridge_sensitivity(10, 5e-324, 1.0)
    largest = float(str(info.value).split("response_bound <= ")[1].split()[0])
    assert 0 < largest < 1e-170 and np.isfinite(ridge_sensitivity(10, 5e-324, largest))


# ----------------------------------------------------------------------- auctions
def test_a_free_seller_whose_guarantee_is_beyond_float64_costs_nothing():
    # her cost v_i eps_i was 0 * inf = NaN, and her utility NaN: individual rationality looked broken
    from privrelease.auctions import fair_inner_product

    r = fair_inner_product([0.0, 1.7976931348623157e308], [1e300, 1e-310], budget=1e10)
    assert r.selected.tolist() == [True, False] and r.epsilons[0] == np.inf
    assert r.costs.tolist() == [0.0, 0.0] and r.utilities.tolist() == [1e10, 0.0]
    assert np.all(r.utilities >= 0)
