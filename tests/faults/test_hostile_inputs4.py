"""Hostile inputs, fourth audit: numeric extremes of the mapping engine's public functions, degenerate data
in the evaluation layer, the data generators and loaders, dask collections of unknown chunk sizes, and
epsilons composed a million times. One test per finding (earlier audits: test_hostile_inputs.py to
test_hostile_inputs3.py)."""

import math
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from doubles import ItemMean
from privrelease.mapping import (empirical_prior, erasure_alphabet, privacy_distortion_curve, solve_mapping,
                                 squared_euclidean_distortion)

PRIOR = np.array([[0.4, 0.1], [0.1, 0.4]])
D = 1.0 - np.eye(2)


# --------------------------------------------------------------------------- the mapping engine
def test_float32_prior_normalised_in_float32_is_accepted():
    # a prior normalised in float32 sums to 1 + 1.5e-8 in float64: it was refused ("must sum to 1")
    P = np.array([[0.3, 0.2], [0.1, 0.4]], dtype=np.float32) / np.float32(1.0000001)
    P = P / P.sum(dtype=np.float32)
    assert abs(P.astype(np.float64).sum() - 1) > 1e-8
    res = solve_mapping(P, D, 0.1)
    ref = solve_mapping(P.astype(np.float64) / P.astype(np.float64).sum(), D, 0.1)
    assert res.status == "optimal" and res.leakage == pytest.approx(ref.leakage, abs=1e-6)
    with pytest.raises(ValueError, match="must sum to 1"):  # a float64 prior keeps its 1e-8 tolerance
        solve_mapping(PRIOR * (1 + 1e-7), D, 0.1)
    with pytest.raises(ValueError, match="must sum to 1"):  # and float32 is not a licence for any sum
        solve_mapping((PRIOR * 1.001).astype(np.float32), D, 0.1)


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.csr_array, sp.coo_array])
def test_sparse_prior_is_densified_not_a_type_error(make):
    # np.asarray wrapped it in an object scalar: "setting an array element with a sequence"
    res = solve_mapping(make(PRIOR), D, 0.1)
    assert res.leakage == pytest.approx(solve_mapping(PRIOR, D, 0.1).leakage, abs=1e-9)


def test_curve_budget_beyond_float64_is_the_infinite_budget():
    # raw.astype(float) raised OverflowError; solve_mapping takes 10**400 as np.inf
    curve = privacy_distortion_curve(PRIOR, D, [0.1, 10**400])
    assert curve["delta"].tolist()[1] == np.inf and curve["leakage_bits"].iloc[1] == pytest.approx(0, abs=1e-9)
    assert solve_mapping(PRIOR, D, 10**400).leakage == pytest.approx(0, abs=1e-9)


def test_squared_euclidean_distortion_of_points_far_from_the_origin():
    # ||a||^2 + ||b||^2 - 2 a.b cancelled: points 1e8 and 1e8 + 1 were at distance 0 (one point to the mapping)
    np.testing.assert_array_equal(squared_euclidean_distortion([[1e8], [1e8 + 1]]), [[0, 1], [1, 0]])
    np.testing.assert_array_equal(squared_euclidean_distortion([[1e8, 0]], [[1e8 + 3, 4]]), [[25]])


def test_squared_euclidean_distortion_overflow_and_non_numbers_are_named():
    with pytest.raises(ValueError, match=r"centers_in\[0\] and centers_in\[1\] overflows float64"):
        squared_euclidean_distortion([[0.0], [1e200]])  # was inf, and nan (inf - inf) with centers_out
    with pytest.raises(ValueError, match=r"centers_out\[0\] overflows"):
        squared_euclidean_distortion([[1e200]], [[-1e200]])
    with pytest.raises(TypeError, match="centers_in must hold real coordinates.*'a'"):
        squared_euclidean_distortion([["a"], ["b"]])  # numpy's "could not convert string to float"
    with pytest.raises(TypeError, match="centers_out must hold real numbers"):
        squared_euclidean_distortion([[1.0]], [[1j]])  # float() argument must be ... not 'complex'
    np.testing.assert_array_equal(squared_euclidean_distortion(sp.csr_matrix(np.eye(2))), [[0, 2], [2, 0]])


@pytest.mark.parametrize("codes, shown", [
    (np.array([[2**64 - 1, 0]], dtype=np.uint64), "18446744073709551615"),  # wrapped to -1: "codes >= 0, got -1"
    ([[1e300, 0]], "1e+300"),                                                # cast to -9223372036854775808
])
def test_codes_beyond_int64_are_named_as_given(codes, shown):
    with pytest.raises(ValueError, match=f"input_symbols must hold integer category codes.*got {re.escape(shown)}"):
        erasure_alphabet(codes)
    with pytest.raises(ValueError, match=f"private must hold integer codes.*got {re.escape(shown)}"):
        empirical_prior(np.asarray(codes)[0], [0, 1])
    with pytest.raises(ValueError, match="private must hold integer codes.*got inf"):
        empirical_prior([np.inf, 1.0], [0, 1])


def test_empirical_prior_too_large_for_memory_is_refused_before_allocating():
    with pytest.raises(ValueError, match=r"n_private=1000000000001 x n_public=2: the prior would need 14\.6 TiB"):
        empirical_prior([0, 10**12], [0, 1])  # numpy's MemoryError did not name the argument
    with pytest.raises(ValueError, match="n_private=1000000000 x n_public=1000000000"):
        empirical_prior([0, 1], [0, 1], n_private=10**9, n_public=10**9)


def test_empirical_prior_huge_smoothing_is_the_uniform_prior_not_zeros():
    # counts.sum() overflowed to inf: every entry of the "prior" was 0
    q = empirical_prior([0, 0, 1], [0, 1, 1], smoothing=1e308)
    np.testing.assert_allclose(q, np.full((2, 2), 0.25), rtol=1e-12)
    np.testing.assert_allclose(empirical_prior([0, 0, 1], [0, 1, 1], smoothing=2.0), np.array([[3, 3], [2, 3]]) / 11)



def _kde_data():
    rng = np.random.default_rng(0)
    return np.r_[rng.normal(0, 1, (20, 2)), rng.normal(3, 1, (20, 2))], np.r_[np.zeros(20), np.ones(20)]


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_kde_prior_does_not_depend_on_the_unit_of_the_coordinates(scale):
    # 1e300: X.std overflowed and the default bandwidths were refused ("bandwidths must be positive finite numbers");
    # 1e-300: X.std underflowed to 0 and the bandwidths were 1e300 times the spread of the data
    from privrelease.mapping import kde_prior

    X, y = _kde_data()
    ref, got = kde_prior(X, y, cv=3), kde_prior(X * scale, y, cv=3)
    np.testing.assert_allclose(got.prior, ref.prior, rtol=1e-9)
    np.testing.assert_allclose(got.bandwidths, ref.bandwidths * scale, rtol=1e-12)
    np.testing.assert_allclose(got.points, ref.points * scale, rtol=1e-12)


def test_kde_prior_whose_kernel_underflows_everywhere_is_refused_not_nan():
    # bandwidths=[1e-300]: every log-density was -inf and the returned prior was all NaN, silently
    from privrelease.mapping import kde_prior

    X, y = _kde_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's own "non-finite test scores" during the search
        with pytest.raises(ValueError, match=r"class 0\.0 \(bandwidth 1e-300\) has no finite density"):
            kde_prior(X, y, cv=3, bandwidths=[1e-300])
    with pytest.raises(ValueError, match=r"n_grid=1000000000000: the grid points would need"):
        kde_prior(X, y, cv=3, n_grid=10**12)  # numpy's MemoryError


# --------------------------------------------------------------------------- the evaluation layer
def test_rmse_cost_and_curve_when_every_rating_is_equal():
    # the original RMSE is 0: "rel_increase_released" was a float ZeroDivisionError that stopped the evaluation;
    # then every cost was reported as 0. Updated in round 16: one rating value (implicit feedback) is refused, its
    # RMSE measuring nothing but rating_range (see test_hostile_inputs16_formats)
    from privrelease.evaluation import privacy_utility_curve, rmse_cost
    from privrelease.mappers import QuantizedPrivacyMapper

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 60)
    X = 3.0 * (rng.random((60, 12)) < 0.6)
    X[:, 0] = 3.0
    with pytest.raises(ValueError, match=r"every rating of ratings is 3\.0 \(implicit feedback"):
        rmse_cost(QuantizedPrivacyMapper(n_clusters=3, random_state=0), X, y, recommender=ItemMean(), random_state=0)
    with pytest.raises(ValueError, match="the RMSE protocol needs more than one rating value"):
        privacy_utility_curve(QuantizedPrivacyMapper(n_clusters=3, random_state=0), X, y, deltas=[0.0, 1.0],
                              recommender=ItemMean(), attack_models=(), random_state=0, verbose=0)


# --------------------------------------------------------------------------- the accountant
def test_accountant_composes_a_million_releases_exactly():
    from privrelease.accounting import PrivacyAccountant
    from privrelease.exceptions import BudgetExceededError

    # a plain running sum drifted with the number of releases (10**6 spends of 0.1 added up past 10**5 and the last
    # one of that exact budget was refused); the compensated sum is the exact sum of the spends, rounded once
    n = 2 * 10**5
    acc = PrivacyAccountant(0.1 * n)
    for _ in range(n):
        acc.spend(0.1)
    assert acc.spent == math.fsum([0.1] * n)
    # and spends below half an ulp of the total were lost: 1.0 + 10**4 x 1e-17 was "spent 1.0"
    acc = PrivacyAccountant(1.0 + 1e-9)
    acc.spend(1.0)
    for _ in range(10**4):
        acc.spend(1e-17)
    assert acc.spent == pytest.approx(1.0 + 1e-13, rel=0, abs=1e-16)


def test_accountant_spend_beyond_float64_is_infinite_not_an_overflow_error():
    # a spend is recorded as inf, an upper bound of it; a budget beyond float64 is refused (test_hostile20)
    from privrelease.accounting import PrivacyAccountant

    assert PrivacyAccountant().spend(10**400).spent == math.inf


# --------------------------------------------------------------------------- the data generators
def test_class_weights_whose_sum_overflows_are_weights_all_the_same():
    # w.sum() overflowed to inf: numpy's "probabilities do not sum to 1" from inside rng.choice
    from privrelease.datasets import make_ratings, make_realistic_ratings

    a = make_ratings(50, 40, attribute_proportion=[1e308, 1e308], random_state=0)
    b = make_ratings(50, 40, attribute_proportion=[1, 1], random_state=0)
    assert (a[0] != b[0]).nnz == 0 and np.array_equal(a[1], b[1])
    c = make_realistic_ratings(30, 60, attributes={"g": [1e308, 1e308]}, random_state=0)
    d = make_realistic_ratings(30, 60, attributes={"g": [0.5, 0.5]}, random_state=0)
    assert (c[0] != d[0]).nnz == 0 and c[1].equals(d[1])


def test_activity_skew_whose_square_overflows_is_named():
    from privrelease.datasets import make_ratings

    with pytest.raises(ValueError, match=r"activity_skew must be <= 1\.3407807929942596e\+154.*got 1e\+300"):
        make_ratings(10, 40, activity_skew=1e300, random_state=0)  # OverflowError (34, 'Numerical result ...')


@pytest.mark.parametrize("call, match", [
    (lambda m, r: m(n_users=10**9, n_items=10**6), r"n_users=1000000000, n_items=1000000, n_factors=5: .* would need"),
    (lambda m, r: m(n_users=10, n_factors=10**10), r"n_factors=10000000000: .* would need"),
    (lambda m, r: m(n_users=10, n_items=10**11), r"n_items=100000000000, .* would need"),
    (lambda m, r: r(n_users=10**10, n_items=10**5), r"n_users=10000000000, .* would need"),
    (lambda m, r: r(n_users=100, n_items=10**11), r"n_items=100000000000, .* would need"),
])
def test_generator_sizes_beyond_memory_are_refused_before_drawing(call, match):
    # numpy's MemoryError ("Unable to allocate 37.3 GiB for an array with shape (1000000000, 5)") named no argument
    from privrelease.datasets import make_ratings, make_realistic_ratings

    with pytest.raises(ValueError, match=match):
        call(make_ratings, make_realistic_ratings)


# --------------------------------------------------------------------------- rating files
def test_csv_with_a_byte_order_mark_read_as_latin1_is_refused_not_a_new_user(tmp_path):
    # the mark decoded as 'ï»¿' glued to the first id: user 'ï»¿1' was another user than '1' (user 1 split in two)
    from privrelease.datasets import load_ratings_csv

    p = tmp_path / "r.csv"
    p.write_bytes(b"\xef\xbb\xbf1,1,5\n2,1,4\n1,2,3\n")
    kw = dict(header=False, user_col=0, item_col=1, rating_col=2)
    with pytest.raises(ValueError, match="starts with a UTF-8 byte-order mark.*encoding='latin-1'.*encoding='utf-8'"):
        load_ratings_csv(p, encoding="latin-1", **kw)
    X, users, _ = load_ratings_csv(p, **kw)  # the default encoding skips the mark
    assert users.tolist() == [1, 2] and X.toarray().tolist() == [[5, 3], [4, 0]]


def test_truncated_last_line_with_a_multi_character_separator_names_the_line(tmp_path):
    # pandas' python engine (sep='::') filled the missing field with NaN: AttributeError 'float' ... 'strip'
    from privrelease.datasets import load_ratings_csv

    p = tmp_path / "r.dat"
    p.write_text("user::item::rating\n1::1::5\n2::1::4\n3::2")
    with pytest.raises(ValueError, match=r"line 4, column 'rating': rating '' is missing"):
        load_ratings_csv(p, sep="::")
    X, users, _ = load_ratings_csv(p, sep="::", drop_ratings=[""])
    assert users.tolist() == [1, 2] and X.toarray().ravel().tolist() == [5, 4]


# --------------------------------------------------------------------------- dask collections
def _dask_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 80)
    X = rng.integers(1, 6, (80, 6)) * (rng.random((80, 6)) < 0.7)
    X[:, 0] = np.where(y == 1, 5, 1)
    return X.astype(float), y


def test_dask_labels_filtered_like_the_ratings_fit_as_in_memory():
    # X[keep] and y[keep] with a dask mask have unknown chunk sizes: y was refused ("got (nan,)")
    da = pytest.importorskip("dask.array")
    import dask

    from privrelease.mappers import QuantizedPrivacyMapper

    X, y = _dask_data()
    keep = np.arange(80) % 3 != 0
    Xd, yd, kd = da.from_array(X, chunks=(20, 6)), da.from_array(y, chunks=20), da.from_array(keep, chunks=20)
    with dask.config.set(scheduler="synchronous"):
        mem = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(X[keep], y[keep])
        lazy = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(Xd[kd], yd[kd])
        np.testing.assert_allclose(lazy.prior_, mem.prior_, atol=1e-12)
        # a dask y chunked otherwise than X, and of unknown chunk sizes, is aligned too
        other = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(
            Xd, da.from_array(y, chunks=13)[da.from_array(np.ones(80, bool), chunks=13)])
        full = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(Xd, yd)
        np.testing.assert_allclose(other.prior_, full.prior_, atol=1e-12)
        with pytest.raises(ValueError, match="unknown number of columns.*compute_chunk_sizes"):
            full.transform(Xd[:, da.from_array(np.ones(6, bool), chunks=6)])  # "X has nan features"
