"""Hostile inputs found by the audit of the public surface: each used to pass silently or fail deep
inside numpy / joblib / pandas. One test per finding; the loaders' findings are in
tests/datasets/test_movielens_loader.py."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease import DCLEFEstimator, ErasureMapper, QuantizedPrivacyMapper, TruthfulRegressionMechanism, load
from privrelease.accounting import PrivacyAccountant
from privrelease.auctions import nadaraya_watson_weights
from privrelease.evaluation import privacy_utility_curve, rmse_cost
from privrelease.mapping import privacy_distortion_curve
from privrelease.recommender import RatingsFrame
from privrelease.runner import load_pipeline
from privrelease.utils import check_private_labels


def _features(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X / (2 * np.linalg.norm(X, axis=1, keepdims=True))


# --------------------------------------------------------------------------- private labels
@pytest.mark.parametrize("y", [
    np.array([0.0, 1.0, np.inf, 1.0]),
    np.array([0, 1, -np.inf, 1], dtype=object),
    pd.Series([0.0, 1.0, np.inf, 1.0]),
])
def test_infinite_label_is_refused_not_made_a_class(y):
    # inf used to become a third class of the private attribute
    with pytest.raises(ValueError, match=r"y holds 1 infinite label\(s\) .*at index 2"):
        check_private_labels(y, 4)


def test_infinite_label_reaches_the_mappers_error():
    X = np.array([[0, 1], [1, 0], [0, 0], [1, 1]])
    with pytest.raises(ValueError, match="infinite label"):
        ErasureMapper(delta=0.5, random_state=0).fit(X, [0.0, 1.0, np.inf, 1.0])
    # the markers of "not disclosed" (NaN, -1) are still accepted beside finite classes
    y, labeled = check_private_labels(np.array([0.0, 1.0, np.nan, -1.0]), 4)
    assert labeled.tolist() == [True, True, False, False]


# --------------------------------------------------------------------------- numeric targets
@pytest.mark.parametrize("make", [
    lambda: DCLEFEstimator(data_range=(0, 1), random_state=0, accountant=PrivacyAccountant(epsilon=10)),
    lambda: TruthfulRegressionMechanism(random_state=0),
])
def test_string_target_gets_a_type_error_naming_y(make):
    X = _features()
    # used to end in numpy's UFuncTypeError ("ufunc 'less' did not contain a loop ...")
    with pytest.raises(TypeError, match=r"y must hold .* real numbers, got an array of dtype <U1 \(for example"):
        make().fit(X, np.array(["a", "b"] * 6))


def test_boolean_target_still_accepted_as_zero_one():
    X = _features()
    est = DCLEFEstimator(data_range=(0, 1), random_state=0, accountant=PrivacyAccountant(epsilon=10))
    est.fit(X, np.array([True, False] * 6))
    np.testing.assert_array_equal(est.d_, [1.0, 0.0] * 6)


# --------------------------------------------------------------------------- Nadaraya-Watson
def test_nadaraya_watson_tiny_bandwidth_is_nearest_neighbour_not_nan():
    Y = np.array([[0.0], [1.0], [0.0]])
    # h * h underflows to 0: the weights used to be 0 / 0 = NaN, refused later as "weights must be finite"
    w = nadaraya_watson_weights(Y, [0.1], bandwidth=1e-300)
    np.testing.assert_array_equal(w, [0.5, 0.0, 0.5])     # the limit h -> 0: uniform over the nearest
    # the ordinary path is unchanged: closed form exp(-d^2 / 2h^2) normalised
    w = nadaraya_watson_weights(Y, [0.1], bandwidth=0.5)
    k = np.exp(-np.array([0.01, 0.81, 0.01]) / 0.5)
    np.testing.assert_allclose(w, k / k.sum(), rtol=1e-12)


# --------------------------------------------------------------------------- evaluation protocol
def _ratings(seed=0, n=40, m=12):
    rng = np.random.default_rng(seed)
    R = rng.integers(1, 6, size=(n, m)) * (rng.random((n, m)) < 0.5)
    return sp.csr_matrix(R.astype(float)), rng.integers(0, 2, n)


class _Boom:
    """A mapper whose fit must never run: the arguments are refused first."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):  # pragma: no cover - reaching it is the failure
        raise AssertionError("the mapper was fitted before the arguments were checked")

    def transform(self, X):  # pragma: no cover
        return X


@pytest.mark.parametrize("n_jobs, exc, match", [
    (0, ValueError, r"n_jobs must be None or a nonzero integer .*got 0"),      # joblib: "has no meaning"
    ("x", TypeError, r"n_jobs must be None or a nonzero integer .*got 'x'"),  # joblib: "could not be converted"
    (1.5, TypeError, r"got 1.5"),
])
def test_rmse_cost_refuses_bad_n_jobs_before_fitting(n_jobs, exc, match):
    R, a = _ratings()
    with pytest.raises(exc, match=match):
        rmse_cost(_Boom(), R, a, cv=2, n_jobs=n_jobs, random_state=0)
    with pytest.raises(exc, match=match):
        privacy_utility_curve(_Boom(), R, a, cv=2, n_jobs=n_jobs, random_state=0)


@pytest.mark.parametrize("rating_range", [(5, 1), (1, 1), (np.nan, 5), (1, np.inf)])
def test_rmse_cost_refuses_a_reversed_or_empty_rating_range(rating_range):
    R, a = _ratings()
    # (5, 1) used to be reported as "ratings has 240 rating(s) outside the rating scale [5, 1]"
    with pytest.raises(ValueError, match=r"rating_range must be \(low, high\) with finite low < high"):
        rmse_cost(_Boom(), R, a, cv=2, rating_range=rating_range, random_state=0)


def test_privacy_utility_curve_param_without_values_is_refused():
    R, a = _ratings()
    # param='nope' beside deltas used to be ignored silently
    with pytest.raises(ValueError, match=r"param='nope' names the parameter that values sets, but values is None "
                                         r"while deltas or max_leakages is given"):
        privacy_utility_curve(_Boom(), R, a, deltas=[0.5], param="nope", cv=2, random_state=0)
    with pytest.raises(ValueError, match=r"param='nope' names the parameter that values sets"):
        privacy_utility_curve(_Boom(), R, a, max_leakages=[0.5], param="nope", cv=2, random_state=0)


# --------------------------------------------------------------------------- privacy_distortion_curve
@pytest.mark.parametrize("deltas", ["abc", "0.5", ["0.1", "0.2"], [True, False], [[0.1], [0.2, 0.3]]])
def test_curve_budgets_must_be_numbers(deltas):
    # 'abc' used to raise "could not convert string to float"; "0.5" was silently read as 0.5,
    # while solve_mapping(delta='0.5') is a TypeError
    with pytest.raises(TypeError, match="deltas must be a 1-D list of real-number budgets"):
        privacy_distortion_curve([[0.25, 0.25], [0.4, 0.1]], 1 - np.eye(2), deltas)


def test_curve_numeric_budgets_of_any_real_dtype_still_work():
    prior, d = [[0.25, 0.25], [0.4, 0.1]], 1 - np.eye(2)
    a = privacy_distortion_curve(prior, d, np.array([0.1, 0.2], dtype=np.float32))
    b = privacy_distortion_curve(prior, d, [float(np.float32(0.1)), float(np.float32(0.2))])
    np.testing.assert_allclose(a["leakage_bits"], b["leakage_bits"], rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- RatingsFrame
def test_ratings_frame_from_matrix_refuses_non_finite_ratings():
    df = pd.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "a"], "rating": [5, 3, 4]})
    rf = RatingsFrame().fit(df)
    # NaN / inf used to be written out as ratings in the long form
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match=r"X holds 1 non-finite rating\(s\)"):
            rf.from_matrix(np.array([[bad, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match=r"X must be a 2-D user x item matrix, got an array of shape \(2, 2, 1\)"):
        rf.from_matrix(np.ones((2, 2, 1)))
    with pytest.raises(TypeError, match="ratings\\['rating'\\] must hold real numbers, got dtype complex128"):
        RatingsFrame().fit(df.assign(rating=[1 + 1j, 2, 3]))
    # a valid round trip is unchanged
    pd.testing.assert_frame_equal(rf.from_matrix(rf.to_matrix(df)), df.astype({"rating": float}))


# --------------------------------------------------------------------------- pipeline files
def test_pipeline_file_with_a_byte_order_mark_is_read(tmp_path):
    body = 'experiment = "census_erasure"\n[params]\ntop = 3\n'
    f = tmp_path / "p.toml"
    f.write_bytes(b"\xef\xbb\xbf" + body.encode())   # used to be "not valid TOML: Invalid statement (line 1, col 1)"
    spec = load_pipeline(f)
    g = tmp_path / "q.toml"
    g.write_text(body)
    assert spec["params"] == load_pipeline(g)["params"] == {"top": 3}


# --------------------------------------------------------------------------- persistence paths
def _fitted_erasure():
    X = np.array([[0, 1], [1, 0], [0, 0], [1, 1]] * 3)
    return ErasureMapper(delta=0.5).fit(X, [0, 1, 1, 0] * 3)   # random_state=None: OS entropy


def test_save_into_a_folder_or_a_missing_folder_says_so(tmp_path):
    m = _fitted_erasure()
    # used to be "[Errno 21] Is a directory: '/tmp/tmpXXXX.npz.tmp' -> '<folder>'"
    with pytest.raises(IsADirectoryError, match=r"it is a folder; expected the path of a file .*mapper.npz"):
        m.save(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"the folder .*no' does not exist"):
        m.save(tmp_path / "no" / "m.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == []      # no stray temporary file
    with pytest.raises(IsADirectoryError, match="it is a folder, not a file saved by privrelease.save"):
        load(tmp_path)
    m.save(tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.mapping_, m.mapping_)


def test_no_warning_on_the_valid_paths_touched():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = nadaraya_watson_weights([[0.0], [1.0]], [0.5], bandwidth=1.0)
    assert w.tolist() == [0.5, 0.5]


# --------------------------------------------------------------------------- noise sizes
@pytest.mark.parametrize("draw", [
    lambda size: __import__("privrelease.noise", fromlist=["x"]).laplace_noise(1.0, size=size, random_state=0),
    lambda size: __import__("privrelease.noise", fromlist=["x"]).Laplace(epsilon=1, snapping_bound=100,
                                                                          random_state=0).sample(size),
    lambda size: __import__("privrelease.noise", fromlist=["x"]).VectorLaplace(
        dimension=2, epsilon=1, sensitivity=1, random_state=0).sample_norm(size),
])
def test_negative_or_fractional_noise_size_is_refused(draw):
    # size=-1 used to return an empty array (no noise drawn, no error); 2.7 drew 2 values
    with pytest.raises(ValueError, match=r"size must be None, a non-negative integer or a tuple of them, got -1"):
        draw(-1)
    with pytest.raises(TypeError, match="got 2.7"):
        draw(2.7)
    assert np.shape(draw(3)) == (3,) and np.shape(draw((2, 3))) == (2, 3) and np.shape(draw(0)) == (0,)


def test_biased_laplace_release_size_is_checked():
    from privrelease.contracts import BiasedLaplaceMechanism

    m = BiasedLaplaceMechanism([0.5, 0.5], 1.0, random_state=0)
    with pytest.raises(ValueError, match="size must be None, a non-negative integer"):
        m.release([0.0, 1.0], size=-1)
    assert m.release([0.0, 1.0], size=4).shape == (4,)


# --------------------------------------------------------------------------- accountant, contracts
def test_accountant_refuses_nan_payments_and_unhashable_population():
    acc = PrivacyAccountant(epsilon=10)
    # NaN payments used to be recorded, making every later total NaN
    with pytest.raises(ValueError,
                       match=r"payments must be finite numbers >= 0 \(what each individual was paid\), "
                             r"got nan at index 1"):
        acc.spend(1.0, population="p", individual_epsilons=[1.0, 0.5], payments=[1.0, np.nan])
    with pytest.raises(TypeError, match=r"population must be a hashable name .*got \[1\] of type list"):
        acc.spend(1.0, population=[1], individual_epsilons=[1.0])
    assert acc.spent == 0.0 and len(acc.records) == 0      # nothing recorded by the refused calls
    acc.spend(1.0, population="p", individual_epsilons=[1.0, 0.5], payments=[2.0, 1.0])
    assert acc.records["total_payment"].tolist() == [3.0]


def test_privacy_cost_and_contract_valuations_are_checked():
    from privrelease.contracts import design_contract, privacy_cost

    # privacy_cost(1, nan) returned nan and privacy_cost(1, -1) a negative cost
    with pytest.raises(ValueError, match=r"epsilon must be >= 0 \(and not NaN\), got nan$"):
        privacy_cost(1.0, np.nan)
    with pytest.raises(ValueError, match=r"epsilon must be >= 0.*-1.0"):
        privacy_cost(1.0, -1.0)
    with pytest.raises(ValueError, match=r"valuation must be >= 0.*-2.0"):
        privacy_cost(-2.0, 1.0)
    with pytest.raises(TypeError, match=r"valuations must be real numbers, got \['a'\]"):
        design_contract(["a"], 1.0)   # was "could not convert string to float: 'a'"
    # the closed forms are unchanged: linear v * eps, exponential v * (exp(eps) - 1)
    assert privacy_cost(5.0, 0.5) == 2.5
    assert privacy_cost(5.0, 0.5, "exponential") == pytest.approx(5.0 * np.expm1(0.5), rel=1e-12)


# --------------------------------------------------------------------------- SurpriseRecommender
def _small_ratings():
    rng = np.random.default_rng(0)
    R = rng.integers(1, 6, (20, 10)).astype(float) * (rng.random((20, 10)) < 0.6)
    return sp.csr_array(R)


@pytest.mark.parametrize("params, match", [
    ({"lr_all": 1e10}, r"SVD diverged: its user biases hold 20 non-finite value\(s\)"),
    # refused up front since the fourteenth audit's range checks, naming the parameter
    ({"reg_all": np.inf}, r"reg_all must be a finite number >= 0, got inf"),
    ({"lr_all": np.nan}, r"lr_all must be a finite number > 0 \(a learning rate\), got nan")])
def test_svd_that_diverges_is_refused_instead_of_predicting_nan(params, match):
    from privrelease.recommender import SurpriseRecommender

    # used to fit "successfully" and predict NaN for every rating (an RMSE of NaN in a report)
    with pytest.raises(ValueError, match=match):
        SurpriseRecommender(algo_params=params, random_state=0).fit(_small_ratings())


@pytest.mark.parametrize("algorithm, params, exc, match", [
    ("SVD", {"n_factors": -5}, ValueError, r"algo_params=\{'n_factors': -5\} .*n_factors must be an integer >= 1"),
    ("SVD", {"init_std_dev": -1}, ValueError, r"algo_params=\{'init_std_dev': -1\} .*init_std_dev must be a finite "
                                              r"number >= 0, got -1"),
    ("SVD", {"n_factors": "x"}, TypeError, r"algo_params=\{'n_factors': 'x'\}"),
    ("KNNBaseline", {"sim_options": {"name": "nope"}}, ValueError,
     r"sim_options\['name'\] must be one of 'cosine', 'msd', 'pearson', 'pearson_baseline', got 'nope'"),
    ("KNNBaseline", {"k": -1}, ValueError, r"KNNBaseline: k must be an integer >= 1, got -1"),
])
def test_bad_algo_params_name_the_parameters(algorithm, params, exc, match):
    from privrelease.recommender import SurpriseRecommender

    with pytest.raises(exc, match=match):
        SurpriseRecommender(algorithm=algorithm, algo_params=params, random_state=0).fit(_small_ratings())


def test_valid_svd_still_fits_finite():
    from privrelease.recommender import SurpriseRecommender

    R = _small_ratings()
    pred = SurpriseRecommender(algo_params={"n_epochs": 5}, random_state=0).fit(R).predict(R)
    assert np.all(np.isfinite(pred.toarray() if sp.issparse(pred) else pred))


# --------------------------------------------------------------------------- Surprise objects
def _surprise_dataset():
    surprise = pytest.importorskip("surprise")
    df = pd.DataFrame({"user": [1, 1, 2, 3, 3, 4], "item": ["a", "b", "a", "b", "c", "c"],
                       "rating": [5, 3, 4, 2, 1, 5]})
    return df, surprise.Dataset.load_from_df(df, surprise.Reader(rating_scale=(1, 5)))


@pytest.mark.parametrize("make", [
    lambda: __import__("privrelease").QuantizedPrivacyMapper(n_clusters=2, delta=1.0, random_state=0),
    lambda: ErasureMapper(delta=0.5, random_state=0),
])
@pytest.mark.parametrize("trainset", [False, True])
def test_mapper_given_a_surprise_object_says_how_to_convert(make, trainset):
    _, ds = _surprise_dataset()
    data = ds.build_full_trainset() if trainset else ds
    # was sklearn's "Expected 2D array, got scalar array instead: array=<surprise...>"
    with pytest.raises(TypeError, match=r"X is a surprise \w+, not a user x item matrix; .*RatingsFrame.from_surprise"):
        make().fit(data, [0, 1, 0, 1])


def test_to_trainset_refuses_ratings_outside_the_scale():
    df, _ = _surprise_dataset()
    rf = RatingsFrame().fit(df)
    # a rating of 9 on a (1, 5) scale used to enter the Trainset (surprise clips only its predictions)
    with pytest.raises(ValueError, match=r"6 rating\(s\) lie outside rating_scale \(1, 5\) .*9.0"):
        rf.to_trainset(df.assign(rating=9))
    ts = rf.to_trainset(df, rating_scale=(1, 5))
    assert ts.n_ratings == 6 and ts.global_mean == pytest.approx(df["rating"].mean(), rel=1e-12)


# --------------------------------------------------------------------------- census prior, Brier payment, KDE prior
def test_census_prior_refuses_values_outside_the_adult_coding():
    from privrelease.datasets import load_adult
    from privrelease.mapping import census_prior

    adult = load_adult()
    base = census_prior(adult)
    # 'male' used to count as Female, 'PhD' as high-school, 'rich' as <=50K
    for col, value in (("sex", "male"), ("education", "PhD"), ("income", "rich")):
        bad = adult.astype({col: object}).copy()
        bad.loc[bad.index[0], col] = value
        with pytest.raises(ValueError, match=rf"data\['{col}'\] holds 1 value\(s\) outside the UCI Adult coding, "
                                             rf"for example '{value}'"):
            census_prior(bad)
    with pytest.raises(ValueError, match=r"data has no column\(s\) \['income'\]"):
        census_prior(adult.drop(columns="income"))
    with pytest.raises(TypeError, match="data must be a pandas DataFrame"):
        census_prior("adult.csv")
    # the shipped table is unchanged: a joint distribution over (income, tuple) summing to 1
    np.testing.assert_array_equal(census_prior()[0], base[0])
    assert base[0].sum() == pytest.approx(1.0, abs=1e-12)


def test_brier_payment_refuses_nan_and_mismatched_shapes():
    from privrelease.regression import brier_payment

    with pytest.raises(ValueError, match="outcome must not contain NaN"):
        brier_payment(np.nan, 0.5)            # used to pay NaN
    with pytest.raises(ValueError, match=r"same shape \(one prediction per outcome\), got shapes \(2,\) and \(3,\)"):
        brier_payment([0.1, 0.2], [0.1, 0.2, 0.3])
    with pytest.raises(TypeError, match="prediction must hold real numbers"):
        brier_payment(0.5, "a")
    # closed form B(p, q) = 1 - (q - p)^2 - p (1 - p) on [0, 1] after t -> (t + 1) / 2
    p, q = (0.2 + 1) / 2, (-0.4 + 1) / 2
    assert brier_payment(0.2, -0.4) == pytest.approx(1 - (q - p) ** 2 - p * (1 - p), rel=1e-12)


def test_kde_prior_non_finite_message_names_the_value():
    from privrelease.mapping import kde_prior

    # was "X must be a finite 2-D array with at least 2 rows, got shape (2, 2)": true of that shape
    with pytest.raises(ValueError,
                       match=r"X must be finite, got 1 non-finite value\(s\) \(for example nan\)"):
        kde_prior(np.array([[np.nan, 1.0], [1.0, 2.0]]), [0, 1])


@pytest.mark.parametrize("X", [np.array([[1 + 2j, 0], [3, 4]]), sp.csr_array(np.array([[1 + 2j, 0], [3, 4]]))])
def test_complex_rating_matrix_is_refused(X):
    from privrelease.utils import check_rating_matrix

    # the imaginary part used to be dropped with only a ComplexWarning
    with pytest.raises(TypeError, match="X must hold real numbers, got complex dtype complex128"):
        check_rating_matrix(X)
    out, fmt = check_rating_matrix(X.real if not sp.issparse(X) else sp.csr_array(X.real))
    assert (out.toarray() if sp.issparse(out) else out).tolist() == [[1.0, 0.0], [3.0, 4.0]]


# --------------------------------------------------------------------------- QuantizedPrivacyMapper's own checks of X
def _labelled_ratings():
    from privrelease.datasets import make_ratings

    X, y = make_ratings(n_users=120, n_items=30, random_state=0)[:2]
    return X.toarray(), np.asarray(y)


def test_quantized_transform_given_a_surprise_object_says_how_to_convert():
    X, y = _labelled_ratings()
    m = QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.0, random_state=0).fit(X, y)
    _, ds = _surprise_dataset()
    with pytest.raises(TypeError, match=r"X is a surprise Trainset, not a user x item matrix"):
        m.transform(ds.build_full_trainset())


def test_quantized_float16_ratings_are_computed_in_float64():
    X, y = _labelled_ratings()
    # scipy's sparse kernels used to refuse float16 deep inside fit ("does not support dtype float16")
    a = QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.0, random_state=0).fit(X.astype(np.float16), y)
    X64 = X.astype(np.float16).astype(np.float64)
    b = QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.0, random_state=0).fit(X64, y)
    np.testing.assert_array_equal(a.mapping_, b.mapping_)
    out = a.transform(X.astype(np.float16))
    assert out.shape == X.shape and np.all(np.isfinite(out))


def test_quantized_refuses_ratings_whose_squared_distances_overflow():
    X, y = _labelled_ratings()
    # 1e155 squared over 30 items overflowed float64: "distortion must not contain NaN" named no input
    with pytest.raises(ValueError, match=r"X holds a value as large as 5e\+155: squared distances .*overflow float64"):
        QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X * 1e155, y)
    QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.0, random_state=0).fit(X * 1e100, y)  # large but safe
