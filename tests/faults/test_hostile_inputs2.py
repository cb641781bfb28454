"""Hostile inputs, second audit: combinations of valid-looking inputs and numeric edges that used to
pass silently with a wrong answer, exhaust memory, or fail deep inside numpy / scikit-learn / pandas.
One test per finding (the first audit's are in test_hostile_inputs.py)."""

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privrelease import (BlurMe, ErasureMapper, InferenceAttack, QuantizedPrivacyMapper, SurpriseRecommender,
                         TruthfulRegressionMechanism)
from privrelease.auctions import (
    DCLEFEstimator,
    fair_inner_product,
    knn_weights,
    nadaraya_watson_weights,
    privacy_index,
    ridge_weights,
)
from privrelease.contracts import design_contract, design_menu, unbiased_contract
from privrelease.mapping import mutual_information
from privrelease.mappers import _dask
from privrelease.noise import Laplace, VectorLaplace
from privrelease.regression import ridge_sensitivity
from privrelease.runner import PipelineError, load_pipeline
from privrelease.utils import check_number, check_rating_matrix


def _binary_ratings(n=120, m=12, seed=0):
    """Ratings whose first three items reveal a binary attribute ``y``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    R = rng.integers(1, 6, (n, m)) * (rng.random((n, m)) < 0.4)
    R[:, :3] = np.where(y[:, None] == 1, 5, 1)
    return R.astype(float), y


# --------------------------------------------------------------------------- booleans as numbers
@pytest.mark.parametrize("make, name", [
    (lambda: QuantizedPrivacyMapper(n_clusters=True), "n_clusters"),     # used to fail inside k-means
    (lambda: QuantizedPrivacyMapper(n_components=True), "n_components"),
    (lambda: QuantizedPrivacyMapper(delta=True), "delta"),               # used to be a budget of 1.0
    (lambda: QuantizedPrivacyMapper(max_leakage=np.True_), "max_leakage"),
    (lambda: QuantizedPrivacyMapper(smoothing=False), "smoothing"),
    (lambda: ErasureMapper(delta=True), "delta"),
    (lambda: TruthfulRegressionMechanism(epsilon=True), "epsilon"),     # used to be epsilon = 1
])
def test_boolean_where_a_number_is_expected_is_refused(make, name):
    R, y = _binary_ratings()
    X = R if name != "epsilon" else R[:, :2] / (2 * np.abs(R[:, :2]).max())
    with pytest.raises(ValueError, match=rf"The '{name}' parameter .* Got (np\.)?(True|False)_? instead"):
        make().fit(X, y if name != "epsilon" else y * 0.5)


def test_numpy_integers_and_floats_are_still_accepted():
    R, y = _binary_ratings()
    a = QuantizedPrivacyMapper(n_clusters=np.int64(4), delta=np.float32(5.0), random_state=0).fit(R, y)
    b = QuantizedPrivacyMapper(n_clusters=4, delta=5.0, random_state=0).fit(R, y)
    assert a.n_clusters_ == b.n_clusters_ == 4
    np.testing.assert_allclose(a.mapping_, b.mapping_)


def test_integer_beyond_float64_gets_a_value_error_not_overflow():
    # float(10**400) raised OverflowError from inside check_number
    with pytest.raises(ValueError, match=r"n_samples must be finite, got a number of 1329 bits"):
        ridge_sensitivity(10**400, 1.0)
    with pytest.raises(ValueError, match=r"budget must be finite"):
        fair_inner_product([1.0, 2.0], [1.0, 1.0], 10**400)
    assert check_number(-(10**400), "x", allow_inf=True) == -np.inf


# --------------------------------------------------------------------------- quantized mapper
def test_huge_smoothing_gives_the_independent_prior_not_a_sum_of_zero():
    # smoothing=1e308 made the total overflow and the prior sum to 0 ("prior must sum to 1")
    R, y = _binary_ratings()
    # (at perfect privacy such a smoothing is refused since stop 38: the counts drown in the pseudo-users and the
    # mapping certified under the prior leaked under the counts; under a distortion budget too since the sixteenth
    # audit, where this test read the prior from such a fit: its mapping leaked under the counts as well)
    with pytest.raises(ValueError, match=r"smoothing=1e\+308 drowns the opted-in users' counts"):
        QuantizedPrivacyMapper(n_clusters=4, space="raw", smoothing=1e308, random_state=0).fit(R, y)
    with pytest.raises(ValueError, match=r"smoothing=1e\+308 drowns the opted-in users' counts"):
        QuantizedPrivacyMapper(n_clusters=4, space="raw", smoothing=1e308, delta=1e9, random_state=0).fit(R, y)
    m = QuantizedPrivacyMapper(n_clusters=4, space="raw", delta=1e9, random_state=0).fit(R, y)
    m.set_params(smoothing=1e308)
    prior = m._prior_from_counts(m.empirical_prior_ * m.n_labeled_)
    p_a = m.empirical_prior_.sum(axis=1)
    K = prior.shape[1]
    # q(a, c) ~ n(a, c) + s p(a) -> p(a) / K as s -> inf: independence, no leakage invented
    np.testing.assert_allclose(prior, np.outer(p_a, np.full(K, 1.0 / K)), rtol=1e-12)
    assert mutual_information(prior) == pytest.approx(0.0, abs=1e-12)


# --------------------------------------------------------------------------- erasure mapper
def test_erasure_keeps_integer_categories_beyond_2_to_the_53():
    # 64-bit ids went through float64: 2**53 + 1 came back as 2**53 ("non-erased cells never change")
    ids = np.array([2**53 + 1, 2**62 + 3, -(2**62) - 1], dtype=np.int64)
    y = np.arange(300) % 2
    X = np.column_stack([ids[np.arange(300) % 3], np.arange(300) % 2])
    out = ErasureMapper(delta=0.5, random_state=0).fit(X, y).transform(X)
    kept = np.array([[v is not None for v in row] for row in out])
    assert kept.any() and not kept.all()
    assert all(int(out[i, j]) == int(X[i, j]) for i, j in np.argwhere(kept))
    # small integers still come back as floats with NaN for erased cells
    small = ErasureMapper(delta=0.5, random_state=0).fit(X % 7, y).transform(X % 7)
    assert small.dtype == np.float64


def test_erasure_uint64_column_of_a_dataframe_is_released():
    # astype("Int64") failed in pandas: "cannot safely cast non-equivalent uint64 to int64"
    y = np.arange(200) % 2
    X = pd.DataFrame({"id": np.array([2**64 - 1, 2**63 + 5], dtype=np.uint64)[np.arange(200) % 2],
                      "b": np.arange(200) % 3})
    out = ErasureMapper(delta=0.5, random_state=0).fit(X, y).transform(X)
    assert str(out["id"].dtype) == "UInt64" and str(out["b"].dtype) == "Int64"
    kept = out["id"].notna().to_numpy()
    assert (out["id"][kept].astype("uint64").to_numpy() == X["id"][kept].to_numpy()).all()


# --------------------------------------------------------------------------- dask blocks
def test_dask_transform_of_a_filtered_collection_with_empty_blocks():
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    R, y = _binary_ratings()
    m = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(R, y)
    keep = np.arange(R.shape[0]) >= 40                   # the first block is filtered out entirely
    with dask.config.set(scheduler="synchronous"):
        Xd = da.from_array(R, chunks=(40, R.shape[1]))[da.from_array(keep, chunks=40)]
        out = m.transform(Xd).compute()                  # used to fail: "Found array with 0 sample(s)"
        same = _dask.transform_in_blocks(m, R[keep], [0, 40, 40])
        np.testing.assert_array_equal(out, same)
        Xs = da.from_array(R, chunks=(40, R.shape[1])).map_blocks(sp.csr_matrix)[da.from_array(keep, chunks=40)]
        assert m.transform(Xs).compute().shape == (80, R.shape[1])
        X = pd.DataFrame({"a": np.arange(120) % 3, "b": np.arange(120) % 2})
        em = ErasureMapper(delta=0.3, random_state=0).fit(X, y)
        frame = dd.from_pandas(X, npartitions=3)
        filtered = frame.map_partitions(lambda p: p[p.index >= 40], meta=X.iloc[:0])   # partition 0 empty
        released = em.transform(filtered).compute()
    assert released.shape == (80, 2) and (released.index == X.index[40:]).all()


def test_transform_in_blocks_edge_sizes():
    R, y = _binary_ratings()
    m = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(R, y)
    assert _dask.transform_in_blocks(m, R[:0], 5).shape == (0, R.shape[1])   # was IndexError
    with pytest.raises(ValueError, match=r"block sizes must be >= 0, got -20"):
        _dask.transform_in_blocks(m, R, [140, -20])
    for bad in (True, 2.5, "5"):                                              # True meant 1, 2.5 meant 2
        with pytest.raises(TypeError, match=r"block_rows must be a positive integer .*got"):
            _dask.transform_in_blocks(m, R, bad)


# --------------------------------------------------------------------------- auctions
def test_privacy_index_refuses_an_enumeration_that_cannot_fit_in_memory():
    # max_exact=10**6 let 200 individuals into a 2**100 enumeration (the process was killed)
    with pytest.raises(ValueError, match=r"at most 48 such individuals are enumerated whatever max_exact"):
        privacy_index(np.full(200, 1e-3), np.ones(200), max_exact=10**6)
    with pytest.raises(ValueError, match=r"2\*\*\(49/2\) enumeration .*about 2 GiB"):
        privacy_index(np.full(49, 1e-3), np.ones(49), max_exact=49)
    # below the limit a large max_exact is harmless and the index exact: all 12 sum below 1/2
    assert privacy_index(np.full(12, 1e-3), np.arange(1.0, 13.0), max_exact=10**6) == pytest.approx(78.0)


@pytest.mark.parametrize("s", [2.0**-700, 1e-200, 1e200, 1e300])
def test_predictor_weights_do_not_depend_on_the_feature_units(s):
    # squared distances overflowed (NaN) or underflowed (0): kNN picked individuals by index,
    # Nadaraya-Watson gave NaN or uniform weights, ridge zero weights
    Y = np.array([[5.0, 1.0], [4.0, 2.0], [3.0, 0.0], [2.0, 1.0], [1.0, 3.0], [0.0, 0.0]])
    q = np.array([[0.5, 0.2], [3.0, 3.0]])
    np.testing.assert_array_equal(knn_weights(Y * s, q * s, 2), knn_weights(Y, q, 2))
    np.testing.assert_allclose(nadaraya_watson_weights(Y * s, q * s, 0.7 * s), nadaraya_watson_weights(Y, q, 0.7),
                               rtol=1e-12, atol=1e-300)
    # alpha = 0: the minimum-norm least squares weights, y^T pinv(Y), scale-free
    np.testing.assert_allclose(ridge_weights(Y * s, q * s, 0.0), q @ np.linalg.pinv(Y), rtol=1e-10)


def test_dclef_estimator_on_features_of_extreme_scale():
    from privrelease.accounting import PrivacyAccountant

    rng = np.random.default_rng(0)
    Y = rng.normal(size=(30, 2))
    d = np.clip(np.round(3 + Y[:, 0]), 1, 5)
    for predictor in ("knn", "nadaraya_watson", "ridge"):
        small = DCLEFEstimator(data_range=(1, 5), predictor=predictor, random_state=0).fit(Y, d)
        big = DCLEFEstimator(data_range=(1, 5), predictor=predictor, random_state=0,
                             bandwidth=1e200).fit(Y * 1e200, d)
        # the weights the auction runs on (used to be NaN: "weights must be finite numbers")
        W = big.auction_weights(Y[:3] * 1e200)
        if predictor == "ridge":  # alpha = 1 is negligible beside Y^T Y ~ 1e400: least squares
            np.testing.assert_allclose(W, Y[:3] @ np.linalg.pinv(Y), rtol=1e-10)
        else:
            np.testing.assert_allclose(W, small.auction_weights(Y[:3]), rtol=1e-10, atol=1e-300)
        with PrivacyAccountant():
            assert np.isfinite(big.predict(Y[:2] * 1e200)).all()


def test_string_costs_are_refused_like_string_parameters():
    # ["1", "2"] used to be read as the numbers 1 and 2
    with pytest.raises(TypeError, match=r"unit_costs must be an array of real numbers, got an array of dtype <U1"):
        fair_inner_product(["1", "2"], [1.0, 1.0], 1.0)
    with pytest.raises(TypeError, match=r"weights must be an array of real numbers, .*holding 'a'"):
        fair_inner_product([1.0, 2.0], np.array([1.0, "a"], dtype=object), 1.0)
    res = fair_inner_product(np.array([1, 2], dtype=object), [1.0, 1.0], 1.0)   # numbers in objects
    assert res.x.shape == (2,)
    # booleans are refused as a boolean budget is (read as 1 and 0 before): tests/faults/test_hostile21_core.py
    with pytest.raises(TypeError, match=r"weights must be an array of real numbers, got the boolean True"):
        fair_inner_product(np.array([1, 2], dtype=object), [True, True], 1.0)


def test_ragged_or_string_features_name_the_argument():
    with pytest.raises(ValueError, match=r"Y must be a rectangular array of numbers"):
        knn_weights([[0.0], [1.0, 2.0]], [0.0])
    with pytest.raises(TypeError, match=r"y must hold real numbers, got an array of dtype <U1"):
        knn_weights([[0.0], [1.0]], ["0"])


# --------------------------------------------------------------------------- contracts
@pytest.mark.parametrize("call", [
    lambda K: design_contract([1.0, 2.0], K),          # SolverError: no feasible segment
    lambda K: design_contract([1.0, 2.0], K, cost="exponential"),   # SolverError: K = nan > ...
    lambda K: design_menu(1.0, 2.0, 0.5, K),           # SolverError: no feasible menu
    lambda K: unbiased_contract([1.0, 2.0], K),
])
def test_subnormal_accuracy_is_a_value_error_not_a_solver_error(call):
    with pytest.raises(ValueError, match=r"accuracy K = 5e-324 is below 4.45"):
        call(5e-324)


def test_tiny_normal_accuracy_still_gets_a_contract():
    # K = 1e-300 is a normal float64: the closed form and the menu still meet it
    c = design_contract([1.0, 2.0], 1e-300)
    assert c.accuracy <= 1e-300 * (1 + 1e-7) and np.isfinite(c.total_payment)
    assert design_menu(1.0, 2.0, 0.5, 1e-300).accuracy <= 1e-300 * (1 + 1e-7)


def test_contract_with_a_cost_returning_nan_is_refused():
    # a callable returning NaN gave a contract (a = 0, pay 0) and no error
    with pytest.raises(ValueError, match=r"cost <lambda>\(v, eps\) returned nan at v="):
        design_contract([1.0, 2.0], 0.5, cost=lambda v, e: np.nan * v * e)
    c = design_contract([5.0, 10.0], 0.5, cost=lambda v, e: v * e**2)   # a valid custom cost still works
    np.testing.assert_allclose(c.payments, c.valuations * c.epsilons**2)


# --------------------------------------------------------------------------- noise and regression
def test_noise_scale_that_overflows_is_refused():
    # epsilon=5e-324 gave scale = inf: the release was inf / NaN without a word
    for make in (lambda: Laplace(epsilon=5e-324), lambda: VectorLaplace(dimension=2, epsilon=1e-308,
                                                                         sensitivity=1e308)):
        with pytest.raises(ValueError, match=r"too small for sensitivity=.*overflows float64"):
            make()
    assert Laplace(epsilon=1e-300).scale == pytest.approx(1e300)


def test_truthful_regression_extreme_alpha_and_epsilon():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ [0.5, -0.3], -1, 1)
    # alpha = 1e308 raised OverflowError (alpha ** 1.5); the bound tends to 2 Y / alpha
    assert ridge_sensitivity(40, 1e308) == pytest.approx(2.0 / 1e308)
    TruthfulRegressionMechanism(alpha=1e306, random_state=0).fit(X, y)
    # alpha = 1e308 gives the subnormal noise scale 2e-308, which has lost relative precision: refused
    with pytest.raises(ValueError, match=r"below the smallest normal float64"):
        TruthfulRegressionMechanism(alpha=1e308, random_state=0).fit(X, y)
    # a subnormal alpha: the sensitivity overflows at response_bound = 1, and the largest bound that fits is named
    with pytest.raises(ValueError, match=r"alpha=5e-324 and n=40: expected response_bound <= .* or a larger alpha"):
        TruthfulRegressionMechanism(alpha=5e-324, random_state=0).fit(X, y)
    # epsilon = 5e-324 ended in "outcome must not contain NaN" from the payment rule
    with pytest.raises(ValueError, match=r"epsilon=5e-324 is too small"):
        TruthfulRegressionMechanism(epsilon=5e-324, random_state=0).fit(X, y)


# --------------------------------------------------------------------------- pipelines
def test_deeply_nested_pipeline_is_refused_as_a_pipeline_error(tmp_path):
    # tomllib's RecursionError ended as "the run failed" (exit 1) instead of a refused file (exit 2)
    path = tmp_path / "deep.toml"
    path.write_text('experiment = "census_erasure"\n[params]\ntop = ' + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(PipelineError, match=r"nests arrays or tables too deeply"):
        load_pipeline(path)
    shallow = tmp_path / "shallow.toml"
    shallow.write_text('experiment = "census_erasure"\n[params]\ntop = ' + "[" * 50 + "]" * 50 + "\n")
    with pytest.raises(PipelineError, match=r"parameter top = \[\[\[.* \(array\): expected an integer"):
        load_pipeline(shallow)


# --------------------------------------------------------------------------- second batch
@pytest.mark.parametrize("weights, exc, match", [
    (np.full(120, 1e308), ValueError, r"sample_weight sums to inf: the total of 120 weights"),   # numpy / OverflowError
    (np.full(120, 5e-324), ValueError, r"sample_weight holds a subnormal weight 5e-324 at row 0"),  # 'distortion ... NaN'
    (["1"] * 120, TypeError, r"sample_weight must hold numbers, got <U1"),                        # parsed as 1.0
])
@pytest.mark.parametrize("make", [lambda: QuantizedPrivacyMapper(n_clusters=3, space="raw", random_state=0),
                                  lambda: ErasureMapper(delta=0.3, random_state=0)])
def test_sample_weights_that_overflow_underflow_or_are_strings(make, weights, exc, match):
    R, y = _binary_ratings()
    with pytest.raises(exc, match=match):
        make().fit(R[:, :2] if isinstance(make(), ErasureMapper) else R, y, sample_weight=weights)


def test_large_and_small_normal_weights_still_fit():
    R, y = _binary_ratings()
    plain = QuantizedPrivacyMapper(n_clusters=3, space="raw", random_state=0).fit(R, y)
    for s in (1e-300, 1e300):
        m = QuantizedPrivacyMapper(n_clusters=3, space="raw", random_state=0).fit(R, y, sample_weight=np.full(120, s))
        assert m.n_labeled_ == 120 and np.isfinite(m.leakage_)
        # smoothing counts users in units of the mean weight: a constant weight changes nothing (1e-300 drowned
        # the counts in one pseudo-user, and "perfect privacy" leaked 0.99 bits under them)
        np.testing.assert_allclose(m.prior_, plain.prior_, rtol=1e-9)
        assert m.empirical_leakage_ <= 1e-9


def test_align_with_a_repeated_user_id_names_it():
    from privrelease.recommender import RatingsFrame

    rf = RatingsFrame().fit(pd.DataFrame({"user": ["a", "b"], "item": [1, 1], "rating": [4.0, 3.0]}))
    # pandas said "cannot reindex on an axis with duplicate labels"
    with pytest.raises(ValueError, match=r"labels gives user 'a' more than one value"):
        rf.align(pd.Series([0, 1], index=["a", "a"]), name="labels")
    assert rf.align(pd.Series([1], index=["b"])).tolist() == [-1, 1]


def test_individual_spent_with_the_wrong_population_size_is_refused():
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant()
    acc.spend(0.5, population="p", individual_epsilons=np.array([0.5, 0.25, 0.0]))
    np.testing.assert_array_equal(acc.individual_spent("p", 3), [0.5, 0.25, 0.0])
    # asking for 5 individuals returned the 3 of the ledger without a word
    with pytest.raises(ValueError, match=r"population 'p' has 3 individuals in this ledger, but n_individuals=5"):
        acc.individual_spent("p", 5)
    with pytest.raises(TypeError, match=r"n_individuals must be an integer, got True"):
        acc.individual_spent("q", True)
    np.testing.assert_array_equal(acc.individual_spent("q", 4), np.zeros(4))


@pytest.mark.parametrize("random_state", ["x", -1, 1.5])
def test_blurme_random_state_is_checked_even_when_greedy(random_state):
    R, y = _binary_ratings()
    # the constraint was ["random_state", object]: anything passed, and greedy never drew from it
    with pytest.raises(ValueError, match=r"The 'random_state' parameter of BlurMe must be None, an int"):
        BlurMe(random_state=random_state).fit(R, y)


def test_prior_or_distortion_given_as_strings_is_refused():
    from privrelease.mapping import leakage, solve_mapping

    # [["0.5", "0.5"], ...] was parsed as numbers while delta='0.5' is refused
    with pytest.raises(TypeError, match=r"prior must be an array of probabilities, got strings"):
        solve_mapping([["0.5", "0"], ["0", "0.5"]], 1 - np.eye(2), 0.5)
    with pytest.raises(TypeError, match=r"distortion must be an array of numbers, got strings"):
        solve_mapping([[0.5, 0.0], [0.0, 0.5]], [["0", "1"], ["1", "0"]], 0.5)
    assert leakage(np.array([[0.5, 0.0], [0.0, 0.5]], dtype=object), np.eye(2)) == pytest.approx(1.0)


def _masked_ratings():
    R, y = _binary_ratings()
    hidden = np.random.default_rng(1).random(R.shape) < 0.5
    return np.ma.masked_array(np.where(hidden, 99.0, R), mask=hidden), R, y


@pytest.mark.parametrize("fit", [
    lambda M, y: QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(M, y),
    lambda M, y: ErasureMapper(random_state=0).fit(M[:, :2], y),
    lambda M, y: BlurMe().fit(M, y),
    lambda M, y: InferenceAttack().fit(M, y),
    lambda M, y: SurpriseRecommender().fit(M),
    lambda M, y: check_rating_matrix(M),
])
def test_masked_entries_are_refused_not_read_as_values(fit):
    # numpy / scikit-learn ignore the mask: the hidden 99s were used as ratings
    M, _, y = _masked_ratings()
    with pytest.raises(ValueError, match=r"X is a masked array with \d+ masked entries; .*X\.filled\(0\)"):
        fit(M, y)


def test_masked_array_without_masked_entries_is_its_data():
    _, R, y = _masked_ratings()
    a = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(np.ma.masked_array(R), y)
    b = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(R, y)
    np.testing.assert_array_equal(a.mapping_, b.mapping_)
    np.testing.assert_array_equal(a.transform(np.ma.masked_array(R)), b.transform(R))


# --------------------------------------------------------------------------- evaluation protocol
def test_rmse_cost_names_a_mapper_that_releases_nan():
    from sklearn.preprocessing import FunctionTransformer

    from privrelease.datasets import make_ratings
    from privrelease.evaluation import rmse_cost

    X, a, _ = make_ratings(80, 30, random_state=0)
    nan_release = FunctionTransformer(lambda Z: Z.toarray() * np.nan)
    # was the recommender's "Input X contains NaN. SurpriseRecommender does not accept missing values ..."
    with pytest.raises(ValueError, match=r"FunctionTransformer.transform returned \d+ non-finite rating\(s\) "
                                         r"\(for example nan\)"):
        rmse_cost(nan_release, X, a, cv=2, random_state=0)


def test_rmse_cost_says_why_a_fold_has_no_held_out_rating():
    from sklearn.preprocessing import FunctionTransformer

    from privrelease.datasets import make_ratings
    from privrelease.evaluation import rmse_cost

    X, a, _ = make_ratings(80, 30, random_state=0)
    # one item: every user has one rating and keeps it; was "y has no held-out ratings" from the recommender
    with pytest.warns(UserWarning, match=r"user\(s\) have no ratings"), \
            pytest.raises(ValueError, match=r"fold 0: none of its \d+ protected user\(s\) has a held-out rating .*"
                                            r"have a single rating"):
        rmse_cost(FunctionTransformer(), X[:, :1], a, cv=2, random_state=0)


@pytest.mark.parametrize("make_sparse", [sp.csr_array, sp.coo_array, sp.csc_array])
@pytest.mark.parametrize("cls", ["BlurMe", "BlurMore"])
def test_blurme_keeps_a_sparse_array_a_sparse_array(cls, make_sparse):
    from privrelease import evaluation

    R, y = _binary_ratings()
    X = make_sparse(R)
    out = getattr(evaluation, cls)(fraction=0.2, random_state=0).fit(X, y).transform(X)
    # csr_array came back as csr_matrix ("a transform keeps the sparse type")
    assert type(out) is type(X) and out.shape == X.shape
    ref = getattr(evaluation, cls)(fraction=0.2, random_state=0).fit(sp.csr_matrix(R), y).transform(sp.csr_matrix(R))
    np.testing.assert_array_equal(out.toarray(), ref.toarray())


def test_dask_frame_with_numbers_as_strings_fits_as_in_memory():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    R, y = _binary_ratings()
    df = pd.DataFrame(R, columns=[f"i{j}" for j in range(R.shape[1])])
    text = df.assign(i0=df["i0"].astype(str))             # an object column, as read from a text file
    with dask.config.set(scheduler="synchronous"):
        # was scipy's "sparse does not support dtype object" from inside the quantizer
        a = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(dd.from_pandas(text, npartitions=3), y)
        b = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(dd.from_pandas(df, npartitions=3), y)
    np.testing.assert_array_equal(a.prior_, b.prior_)
    np.testing.assert_array_equal(a.mapping_, b.mapping_)


def test_dask_sample_smaller_than_the_number_of_blocks():
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    R, y = _binary_ratings()
    with dask.config.set(scheduler="synchronous"), pytest.warns(UserWarning, match="larger than the number"):
        # 6 blocks of 20 labeled users and a sample of 2: every block's share floored to 0
        # (numpy's "need at least one array to concatenate")
        m = QuantizedPrivacyMapper(n_clusters=3, dask_sample_size=2, space="raw", random_state=0).fit(
            da.from_array(R, chunks=(20, R.shape[1])), y)
    assert m.n_clusters_ <= 2 and m.n_labeled_ == R.shape[0]   # the prior still counts every user


@pytest.mark.parametrize("fitted, changed", [
    ({}, {"metric": "hamming"}),                      # was numpy's "matmul: ... mismatch in its core dimension"
    ({}, {"space": "raw"}),
    ({"space": "raw"}, {"space": "taste"}),          # was AttributeError: no attribute 'embedding_'
    ({"metric": "hamming"}, {"metric": "euclidean"}),
    ({"space": "raw"}, {"metric": "hamming"}),        # Euclidean means are not 0/1 Hamming centres
])
def test_transform_after_set_params_changed_the_space_says_refit(fitted, changed):
    R, y = _binary_ratings()
    m = QuantizedPrivacyMapper(n_clusters=3, random_state=0, **fitted).fit(R, y)
    m.set_params(**changed)
    with pytest.raises(ValueError, match=r"is not the space this mapper was fitted in .* call fit again"):
        m.transform(R)


def test_set_params_that_keep_the_space_still_transform_the_same():
    R, y = _binary_ratings()
    m = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(R, y)
    before = m.transform(R)
    m.set_params(metric="sqeuclidean", smoothing=1e9)   # neither moves the fitted clusters
    np.testing.assert_array_equal(m.transform(R), before)
    m.set_params(delta=-5)   # a parameter of the guarantee: refused (test_hostile20), never released under
    with pytest.raises(ValueError, match=r"delta=-5 is not the value .* call fit again"):
        m.transform(R)


def test_biased_laplace_refuses_weights_or_data_given_as_strings():
    from privrelease.contracts import BiasedLaplaceMechanism

    # ["0.5", "0.5"] was parsed as numbers; the scalar b = "1" is refused
    with pytest.raises(TypeError, match=r"weights a must hold real numbers, got \['0.5', '0.5'\]"):
        BiasedLaplaceMechanism(["0.5", "0.5"], 1.0)
    mech = BiasedLaplaceMechanism([0.5, 1.0], 1.0, random_state=0)
    with pytest.raises(TypeError, match=r"data must hold real numbers"):
        mech.release(["0.5", "0.5"])
    assert mech.bias([0.0, 1.0]) == pytest.approx(0.5 * 0.5)   # sum_i (1 - a_i) (1/2 - d_i)


@pytest.mark.parametrize("call", [
    lambda X, y: QuantizedPrivacyMapper(n_clusters=2).fit(X, y),
    lambda X, y: ErasureMapper().fit(X, y),
    lambda X, y: BlurMe().fit(X, y),
    lambda X, y: InferenceAttack().fit(X, y),
    lambda X, y: SurpriseRecommender().fit(X),
    lambda X, y: DCLEFEstimator(data_range=(0, 1)).fit(X, y),
    lambda X, y: check_rating_matrix(X),
])
def test_ragged_rows_name_the_table(call):
    # numpy: "setting an array element with a sequence. The requested array has an inhomogeneous shape"
    with pytest.raises(ValueError, match=r"X must be a rectangular table, got rows of different lengths: row 0 has "
                                         r"2 value\(s\), row 1 has 1"):
        call([[1.0, 2.0], [3.0]] * 10, [0, 1] * 10)


# --------------------------------------------------------------------------- a continuous "attribute"
@pytest.mark.parametrize("make", [
    lambda: QuantizedPrivacyMapper(n_clusters=4, random_state=0),
    lambda: ErasureMapper(random_state=0),
])
@pytest.mark.parametrize("labels", ["floats", "object floats"])
def test_continuous_private_attribute_is_refused(make, labels):
    # an income in dollars used to become one class per user (a prior over 60 singleton classes) silently
    X, y = _binary_ratings()
    if isinstance(make(), ErasureMapper):
        X = (X[:, :4] > 2).astype(int)
    yc = np.where(y == 1, 1.5, 0.0) + np.arange(y.size) * 1e-3
    yc[::3] = -1  # undisclosed markers stay allowed
    if labels == "object floats":
        yc = yc.astype(object)
    expected = rf"y holds {np.sum(yc != -1)} non-integer number\(s\) \(for example {re.escape(repr(float(yc[1])))} at index 1\)"
    with pytest.raises(ValueError, match=expected):
        make().fit(X, yc)


def test_integer_valued_float_labels_are_classes():
    X, y = _binary_ratings()
    yf = y.astype(float)
    yf[::3] = np.nan
    ints = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X, np.where(np.isnan(yf), -1, y))
    floats = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X, yf)
    np.testing.assert_array_equal(floats.classes_, [0.0, 1.0])
    np.testing.assert_array_equal(floats.mapping_, ints.mapping_)


# --------------------------------------------------------------------------- ratings in long form given as X
@pytest.mark.parametrize("columns", [("user", "item", "rating"), ("userId", "movieId", "rating", "timestamp"),
                                     ("user_id", "item_id", "score")])
@pytest.mark.parametrize("numeric", [True, False])
def test_long_form_ratings_are_refused_with_the_converter(columns, numeric):
    # numeric ids used to be read as a matrix of 3-4 "items", one row per rating, and fitted without a word
    rng = np.random.default_rng(0)
    n = 40
    cols = {columns[0]: rng.integers(0, 10, n), columns[1]: rng.integers(0, 8, n), columns[2]: rng.integers(1, 6, n)}
    if len(columns) > 3:
        cols[columns[3]] = rng.integers(10**9, 2 * 10**9, n)
    if not numeric:
        cols[columns[0]] = [f"u{u}" for u in cols[columns[0]]]
    df = pd.DataFrame(cols)
    y = rng.integers(0, 2, n)
    with pytest.raises(TypeError, match=rf"X looks like ratings in long form .*users in '{columns[0]}', items in "
                                        rf"'{columns[1]}'.*RatingsFrame\(user='{columns[0]}', item='{columns[1]}', "
                                        rf"rating='{columns[2]}'\)"):
        QuantizedPrivacyMapper(n_clusters=2, random_state=0).fit(df, y)


def test_wide_rating_table_with_item_columns_is_a_matrix():
    # a user x item table (items as columns) is what the mapper takes: no false alarm
    X, y = _binary_ratings()
    df = pd.DataFrame(X, columns=[f"movie {i}" for i in range(X.shape[1])])
    Z = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(df, y).transform(df)
    assert Z.shape == X.shape
