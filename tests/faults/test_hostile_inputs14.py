"""Hostile inputs, fourteenth audit, one test per finding (earlier audits: test_hostile_inputs.py to
test_hostile_inputs13.py)."""

from fractions import Fraction
import math

import numpy as np
import pytest

from privrelease.auctions import fair_inner_product, optimal_dclef


# ----------------------------------------------------------------------- auctions at float64's edge
@pytest.mark.parametrize("auction", [fair_inner_product, optimal_dclef], ids=["fair_inner_product", "optimal"])
@pytest.mark.parametrize("v, w", [([2.2e-308, 1.0, 5.0], [1e300, 1e-10, 1e-10]),
                                  ([2.2e-308, 3e-308, 5.0], [1e300, 1e300, 1e-10])])
def test_a_cost_whose_guarantee_is_beyond_float64_is_its_exact_finite_value(auction, v, w):
    # eps_i = a_i / (W - w(O)) is near 1e310, so it is inf; the cost v_i eps_i is about 110 and was inf, and the
    # utility -inf, while the payment was right
    res = auction(v, w, 1e3)
    assert np.isinf(res.epsilons[res.selected]).all() and res.selected.any()
    rest = sum(Fraction(abs(x)) for x, s in zip(w, res.selected) if not s)
    for i in np.flatnonzero(res.selected):
        assert res.costs[i] == float(Fraction(v[i]) * Fraction(w[i]) / rest)
    assert np.isfinite(res.utilities).all() and (res.utilities >= 0).all()


# ----------------------------------------------------------------------- snapping (Mironov 2012)
ETA = 2.0**-53


@pytest.mark.parametrize("eps, sens, bound", [(1e-3, 1.0, 2.0**55), (0.5, 1.0, 10.0), (1e-3, 1.0, 1e4),
                                              (2.0, 0.3, 1e6), (1e-6, 7.0, 1e9)])
def test_snapping_with_epsilon_proves_that_epsilon(eps, sens, bound):
    # the scale was sensitivity / epsilon whatever the bound: at B = 2**55 and epsilon = 1e-3 Mironov's Theorem 1
    # proves only 0.049, 49 times the epsilon reported. The scale is now calibrated to the theorem's bound
    from privrelease.noise import Laplace

    m = Laplace(epsilon=eps, sensitivity=sens, snapping_bound=bound, random_state=0)
    lam = m.scale
    assert lam < bound < 2.0**46 * lam
    proven = Fraction(sens) / Fraction(lam) + 12 * Fraction(bound) * Fraction(ETA) / Fraction(lam) + 2 * Fraction(ETA)
    assert proven <= Fraction(eps) and m.effective_epsilon <= eps
    # and not more noise than needed: one ulp less would not prove it
    assert Fraction(sens + 12 * ETA * bound) / Fraction(float(np.nextafter(lam, 0))) + 2 * Fraction(ETA) \
        > Fraction(eps) * (1 - Fraction(1, 2**50))


@pytest.mark.parametrize("eps, bound", [(1.0, 2.0**60), (1.0, 1e300)])
def test_snapping_refuses_a_bound_beyond_the_theorems_range(eps, bound):
    from privrelease.noise import Laplace

    with pytest.raises(ValueError, match=r"snapping_bound=.* is too large .* 2\*\*46 \* scale"):
        Laplace(epsilon=eps, snapping_bound=bound)


def test_snapping_grid_is_never_below_the_scale():
    # 2**ceil(log2(scale)) for a scale a few ulps above a power of two rounded log2 down: the grid 2**k < scale
    # (152 of 160 powers). The grid is now the smallest power of two >= the scale, exactly
    from privrelease.noise import Laplace
    from privrelease.noise._laplace import _snapping_grid

    for k in range(-1000, 1000, 7):
        for lam in (2.0**k, float(np.nextafter(2.0**k, np.inf)), float(np.nextafter(2.0**k, 0)) if k > -1000 else 1.0):
            g = _snapping_grid(lam)
            assert g >= lam and g / 2 < lam and math.frexp(g)[0] == 0.5, lam
    m = Laplace(scale=float(np.nextafter(16.0, np.inf)), snapping_bound=1e4, random_state=0)
    out = np.unique(m.randomise(np.zeros(20000)))
    assert np.all(np.mod(out, 32.0) == 0) and np.min(np.diff(out)) == 32.0


# ----------------------------------------------------------------------- predictors far from the origin
@pytest.mark.parametrize("offset", [1.7e9, 1e12, -3e14])
def test_neighbour_weights_do_not_depend_on_where_the_features_sit(offset):
    # |q|^2 + |Y|^2 - 2 q.Y cancelled around 1.7e9 (timestamps, prices in cents): distances below ~25 were lost,
    # knn_weights picked individual 0 (distance 2) over individual 1 (distance 1), and Nadaraya-Watson gave 1/3
    # to everybody. Every difference below is exact, so the weights must equal those at the origin
    from privrelease.auctions import knn_weights, nadaraya_watson_weights

    rng = np.random.default_rng(7)
    Y0 = rng.integers(-20, 21, size=(40, 3)).astype(float)
    q0 = rng.integers(-20, 21, size=(6, 3)).astype(float)
    for k in (1, 3, 7):
        np.testing.assert_array_equal(knn_weights(Y0 + offset, q0 + offset, k), knn_weights(Y0, q0, k))
    np.testing.assert_allclose(nadaraya_watson_weights(Y0 + offset, q0 + offset, 4.0),
                               nadaraya_watson_weights(Y0, q0, 4.0), rtol=1e-12, atol=1e-300)
    Y = np.array([[1.7e9], [1.7e9 + 3.0], [1.7e9 + 10.0]])
    assert knn_weights(Y, [1.7e9 + 2.0], n_neighbors=1).tolist() == [0.0, 1.0, 0.0]


# ----------------------------------------------------------------------- accounting, presolve
def test_the_accountant_refuses_a_negative_payment():
    # payments=[-5.0, 1.0] was booked, total_payment -4.0: a payment in these mechanisms is at least 0
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(1.0)
    with pytest.raises(ValueError, match=r"payments must be finite numbers >= 0 .* got -5.0 at index 0"):
        acc.spend(0.2, population="p", individual_epsilons=[0.1, 0.2], payments=[-5.0, 1.0])
    assert acc.spent == 0 and len(acc) == 0


def test_a_distortion_near_the_largest_float_solves_without_an_overflow_warning():
    # the presolve's column sums overflowed (numpy's 'overflow encountered in reduce' reached the user)
    import warnings

    from privrelease.mapping import solve_mapping

    prior = np.array([[0.3, 0.1, 0.1], [0.1, 0.2, 0.2]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = solve_mapping(prior, (1 - np.eye(3)) * 1.7e308, 0.34e308)
    small = solve_mapping(prior, 1 - np.eye(3), 0.34e308 / 1.7e308)
    assert big.status == small.status == "optimal"
    assert abs(big.leakage - small.leakage) <= 1e-6


# ----------------------------------------------------------------------- the regression on the accountant
def _unit_ball(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, np.clip(X @ np.array([0.5, -0.3]) + 0.1 * rng.normal(size=n), -1, 1)


def test_the_truthful_regression_records_its_release_on_the_accountant():
    # a fit released 2 epsilon = 20 (jointly DP) through a budget of 0.5 with nothing recorded
    from privrelease.accounting import PrivacyAccountant
    from privrelease.exceptions import BudgetExceededError
    from privrelease.regression import TruthfulRegressionMechanism

    X, y = _unit_ball()
    with PrivacyAccountant(epsilon=0.5) as acc:
        mech = TruthfulRegressionMechanism(alpha=5.0, epsilon=10.0, random_state=0)
        with pytest.raises(BudgetExceededError, match="epsilon = 20"):
            mech.fit(X, y)
        assert acc.spent == 0 and len(acc) == 0 and not hasattr(mech, "coef_")  # refused before any noise
    acc = PrivacyAccountant(epsilon=50.0)
    mech = TruthfulRegressionMechanism(alpha=5.0, epsilon=10.0, random_state=0, accountant=acc).fit(X, y)
    mech.fit(X, y)
    rec = acc.records
    # each fit records the joint level its noise delivers: 2 x 10, or one ulp above where a scale rounded down
    assert 20.0 <= mech.epsilon_ <= np.nextafter(20.0, np.inf)
    assert acc.spent == 2 * mech.epsilon_ and len(rec) == 2
    assert rec["mechanism"].tolist() == ["TruthfulRegressionMechanism"] * 2
    assert rec["total_payment"].iloc[-1] == mech.budget_
    with pytest.raises(BudgetExceededError):
        mech.fit(X, y)   # 60 > 50
    assert acc.spent == 2 * mech.epsilon_


# ----------------------------------------------------------------------- a sparse frame filled with a rating
@pytest.mark.filterwarnings("ignore:pandas.DataFrame with sparse columns found")  # scikit-learn's, the last call
def test_a_sparse_frame_filled_with_a_rating_is_refused_naming_the_column():
    # pandas' "fill value must be 0 when converting to COO matrix" at fit and transform, naming no column
    import pandas as pd

    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=80, n_items=30, random_state=0)
    D = pd.DataFrame(R.toarray(), columns=[f"i{j}" for j in range(30)])
    m = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(D.astype(pd.SparseDtype(float, 0.0)), g)
    S = D.astype(pd.SparseDtype(float, 0.0))
    S["i4"] = S["i4"].sparse.to_dense().astype(pd.SparseDtype(float, 5.0))
    for call in (lambda: m.transform(S), lambda: QuantizedPrivacyMapper(n_clusters=3).fit(S, g)):
        with pytest.raises(ValueError, match=r"X column 'i4' is sparse with fill_value=5.0"):
            call()
    # a NaN fill (unstored = missing) is still read as before, and a dense frame holding such a column is dense
    assert m.transform(D.astype({"i4": pd.SparseDtype(float, 5.0)})).shape == D.shape


def test_erasure_keeps_64_bit_ids_beside_another_column_exact():
    # a frame of a uint64 column beside an int column was read as float64 (numpy's common type): 2**63 + 4 and
    # 2**63 + 5 became one category, and since kept cells are released as their category the release changed ids
    import pandas as pd

    from privrelease import ErasureMapper

    ids = np.array([2**63 + 4, 2**63 + 5, 2**64 - 1], dtype=np.uint64)[np.arange(300) % 3]
    X = pd.DataFrame({"id": ids, "b": np.arange(300) % 2})
    m = ErasureMapper(delta=0.9, random_state=0).fit(X, np.arange(300) % 2)
    assert len(m.categories_[0]) == 3
    out = m.transform(X)
    kept = out["id"].notna().to_numpy()
    assert kept.any() and str(out["id"].dtype) == "UInt64"
    assert (out["id"][kept].astype("uint64").to_numpy() == ids[kept]).all()


# ----------------------------------------------------------------------- obfuscation and mapper options
@pytest.mark.parametrize("fraction", [1e18, 1e300])
def test_blurme_and_blurmore_with_a_huge_fraction_act_as_with_every_candidate(fraction):
    # fraction * n_u overflowed the int64 cast to negative numbers: nothing was added, the input released as is
    from privrelease.datasets import make_ratings
    from privrelease.evaluation import BlurMe, BlurMore

    R, g, _ = make_ratings(n_users=200, n_items=40, random_state=0)
    for cls in (BlurMe, BlurMore):
        big = cls(fraction=fraction, random_state=0).fit(R, g).transform(R)
        every = cls(fraction=1e6, random_state=0).fit(R, g).transform(R)
        assert abs(big - every).nnz == 0 and abs(big - R).nnz > 0


def _two_attributes():
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=600, n_items=100, random_state=0)
    Y = np.column_stack([g, np.random.default_rng(0).integers(0, 3, g.size)]).astype(float)
    Y[300:] = np.nan
    return R, Y


@pytest.mark.parametrize("kw, match", [(dict(clustering="attribute_free"), "clustering='attribute_free' removes"),
                                       (dict(class_bins=2), "class_bins=2 cuts each cell")])
def test_marginal_protection_refuses_what_needs_one_attributes_directions(kw, match, tmp_path):
    # protect='marginal' with clustering='attribute_free' ran plain k-means, said class_removal_ = 1.0, and the
    # fitted mapper could not be saved; class_bins=2 was dropped without a word
    from privrelease import QuantizedPrivacyMapper

    R, Y = _two_attributes()
    with pytest.raises(ValueError, match=match):
        QuantizedPrivacyMapper(protect="marginal", random_state=0, **kw).fit(R, Y)
    m = QuantizedPrivacyMapper(protect="marginal", random_state=0).fit(R, Y)   # 'auto': plain clusters
    assert m.attribute_directions_.shape[0] == 0 and m.class_removal_ == 0.0
    m.save(tmp_path / "m.npz")


def test_class_bins_beyond_the_labeled_users_are_refused_before_allocating():
    # class_bins=3e7 took 23 s and 5 GB for 120 users (thresholds per bin); 1e9 numpy's bare MemoryError
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, _, _ = make_ratings(n_users=120, n_items=40, random_state=0)
    y = np.array([0, 1, 2])[np.arange(120) % 3].astype(float)
    y[60:] = np.nan
    for bins in (61, 10**9):
        with pytest.raises(ValueError, match=rf"class_bins={bins} is more bins than there are labeled users \(60\)"):
            QuantizedPrivacyMapper(n_clusters=5, class_bins=bins, clustering="attribute_free").fit(R, y)
    # class_directions="all": a direction to cut along (these labels carry no significant one)
    assert QuantizedPrivacyMapper(n_clusters=5, class_bins=60, clustering="attribute_free", class_directions="all",
                                  random_state=0).fit(R, y).class_bins_ == 60


def test_payments_near_the_largest_float_keep_the_budget_without_overflow():
    # the exact test of the payments' sum added them before the budget: fsum's partial sum overflowed
    # ('intermediate overflow in fsum') where the result had been three payments of 5.99e307
    import sys

    from privrelease.auctions import ghosh_roth

    B = sys.float_info.max
    for res in (ghosh_roth([0.0, 0.0, 0.0, 1e308], B),
                fair_inner_product([0.0, 0.0, 0.0, 1e308], [1, 1, 1, 1e-300], B)):
        assert res.selected.tolist() == [True, True, True, False]
        assert sum(map(Fraction, res.payments.tolist())) <= Fraction(B)
        np.testing.assert_allclose(res.payments[:3], B / 3, rtol=1e-15)


def test_an_exact_tie_at_the_budget_is_lowered_by_one_ulp_at_most():
    # five payments of fl(0.2) exceed a budget of 1 exactly; no float payments meet both the budget and costs of
    # fl(0.2): the payments go one ulp down (they went two, 2.2e-16 under the budget where 5.6e-17 was needed)
    from privrelease.auctions import ghosh_roth

    res = ghosh_roth(np.ones(10), 1.0)
    pay = res.payments[res.selected]
    assert sum(map(Fraction, res.payments.tolist())) <= 1
    assert np.all(pay == np.nextafter(0.2, 0.0))


# ----------------------------------------------------------------------- files aligned with spaces
def test_a_file_aligned_with_spaces_reads_with_the_whitespace_separator(tmp_path):
    # separators are literal text since this audit, which left r"\s+" (pandas' idiom for aligned columns) no way
    # to read such a file: it is the one separator kept as pandas reads it, in the ratings and the users files
    from privrelease.datasets import load_ratings_csv

    path = tmp_path / "ws.txt"
    path.write_text("user  item rating\n1 10\t4\n2   11 5\n3 10 3\n")
    R, users, items = load_ratings_csv(path, sep=r"\s+")
    assert R.toarray().tolist() == [[4.0, 0.0], [0.0, 5.0], [3.0, 0.0]]
    assert [str(u) for u in users] == ["1", "2", "3"] and [str(i) for i in items] == ["10", "11"]
    path.write_text("user item rating\n1 10 4 9\n")
    with pytest.raises(ValueError, match="line 2 has 4 fields"):
        load_ratings_csv(path, sep=r"\s+")


# ----------------------------------------------------------------------- label kinds on the other entry points
def test_erasure_on_dask_refuses_label_kinds_that_differ_across_blocks():
    # integers in one block, booleans in the other: pandas grouped 1 with True, one class ([0 1]) where the same y
    # in memory is refused
    da = pytest.importorskip("dask.array")
    from privrelease import ErasureMapper

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (200, 2)).astype(float)
    y = np.empty(200, dtype=object)
    y[:100] = list(rng.integers(0, 2, 100))
    y[100:] = list(rng.random(100) < 0.5)
    for mixed in (y, np.where(np.arange(200) % 2 == 0, y[::-1], y)):   # across blocks, and within each block
        with pytest.raises(TypeError, match=r"y mixes label types \['bool', 'number'\]"):
            ErasureMapper(random_state=0).fit(da.from_array(X, chunks=(100, 2)), da.from_array(mixed, chunks=100))


def test_priors_refuse_labels_of_mixed_kinds():
    from privrelease.mapping import empirical_prior, kde_prior

    X = np.random.default_rng(0).normal(size=(60, 2))
    for y in ([1, "1", 0] * 20, [1, True, 0] * 20):
        with pytest.raises(TypeError, match="y mixes label types"):
            kde_prior(X, y)
    with pytest.raises(ValueError, match="got the boolean True at index 1"):
        empirical_prior([1, True, 0], [0, 1, 0])


# ----------------------------------------------------------------------- a saved file of zero-byte elements
def test_load_refuses_an_array_of_zero_byte_elements(tmp_path):
    # a '<U0' member declaring 1e15 elements takes no bytes in the file, passes every max_bytes check, and
    # load turned it into objects (8 bytes each): numpy's MemoryError for 7.11 PiB from a 16 kB file
    import io
    import zipfile

    import privrelease

    path = tmp_path / "bomb.npz"
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<U0", "fortran_order": False, "shape": (10**15,)})
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("fitted/feature_names_in_.npy", buf.getvalue())
        meta = io.BytesIO()
        np.lib.format.write_array(meta, np.array("{}"))
        zf.writestr("__metadata__.npy", meta.getvalue())
    with pytest.raises(ValueError, match=r"declares 1,000,000,000,000,000 elements of dtype <U0 \(zero bytes each\)"):
        privrelease.load(path)


# ----------------------------------------------------------------------- dask and the auction estimator
def _indexed_users(n=120, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    ids = [f"user{i}" for i in range(n)]
    a = rng.integers(0, 2, n)
    X = pd.DataFrame({"f": np.where(a == 1, "x", "y"), "g": rng.integers(0, 3, n).astype(str)}, index=ids)
    y = pd.Series(a, index=ids)
    return X, y


def test_a_dask_fit_refuses_a_y_indexed_differently_from_its_frame():
    # dd.from_pandas sorts the rows by their index (user0, user1, user10 ...): a y in the frame's original order
    # was paired by position, and the prior (0.85 bits) read 0.016; the in-memory fit refuses it
    dd = pytest.importorskip("dask.dataframe")
    from privrelease import ErasureMapper, QuantizedPrivacyMapper

    X, y = _indexed_users()
    Xd = dd.from_pandas(X, npartitions=3)
    with pytest.raises(ValueError, match="y is indexed differently from X"):
        ErasureMapper(random_state=0).fit(Xd, y)
    with pytest.raises(ValueError, match="y is indexed differently from X"):
        ErasureMapper(random_state=0).fit(Xd, dd.from_pandas(y.sample(frac=1.0, random_state=0), npartitions=2,
                                                             sort=False))
    aligned = ErasureMapper(random_state=0).fit(Xd, y.reindex(Xd.index.compute()))
    assert aligned.prior_leakage_ == pytest.approx(ErasureMapper(random_state=0).fit(X, y).prior_leakage_)
    ratings = X.assign(f=(X["f"] == "x") * 4.0 + 1, g=X["g"].astype(float))
    with pytest.raises(ValueError, match="y is indexed differently from X"):
        QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(dd.from_pandas(ratings, npartitions=3), y)


def test_dask_erasure_refuses_what_the_in_memory_fit_refuses():
    # 1 beside True in one column was merged into one category; CSR blocks gave pandas' 'Must pass 2-d input', a
    # dask Series a raw KeyError
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd
    import scipy.sparse as sp

    from privrelease import ErasureMapper

    y = np.arange(60) % 2
    col = np.array([1, True, 2] * 20, dtype=object)
    split = np.r_[np.ones(30, dtype=int).astype(object), np.full(30, True, dtype=object)]
    for Xd in (da.from_array(col[:, None], chunks=(20, 1)),    # within each block
               da.from_array(split[:, None], chunks=(30, 1))):  # 1 in one block, True in the other
        with pytest.raises(TypeError, match="column 0 of X mixes booleans and numbers"):
            ErasureMapper(random_state=0).fit(Xd, y)
    csr = sp.csr_matrix(np.arange(120).reshape(60, 2) % 3)
    with pytest.raises(TypeError, match="dask array of scipy sparse blocks: densify"):
        ErasureMapper(random_state=0).fit(da.from_array(csr, chunks=(20, 2), asarray=False), y)
    with pytest.raises(TypeError, match=r"dask Series 'c': pass X.to_frame\(\)"):
        ErasureMapper(random_state=0).fit(dd.from_pandas(pd.Series(col, name="c"), npartitions=2), y)


def test_dclef_estimator_refuses_costs_and_caps_indexed_differently_from_X():
    # a Series of caps in another order than X gave individual 'a' the cap of 'd' (she was bought at eps = 1
    # under a cap of 0)
    import pandas as pd

    from privrelease import DCLEFEstimator

    ids = list("abcd")
    X = pd.DataFrame({"f": [0.0, 1.0, 2.0, 3.0]}, index=ids)
    y = pd.Series([1.0, 2.0, 3.0, 4.0], index=ids)
    caps = pd.Series([0.0, np.inf, np.inf, np.inf], index=ids)[::-1]
    with pytest.raises(ValueError, match="epsilon_cap is indexed differently from X"):
        DCLEFEstimator(budget=1.0, data_range=(0, 5), epsilon_cap=caps).fit(X, y)
    with pytest.raises(ValueError, match="unit_costs is indexed differently from X"):
        DCLEFEstimator(budget=1.0, data_range=(0, 5)).fit(X, y, unit_costs=pd.Series([1.0, 2, 3, 4], index=ids)[::-1])
    DCLEFEstimator(budget=1.0, data_range=(0, 5), epsilon_cap=caps.reindex(ids)).fit(X, y)


# ----------------------------------------------------------------------- the cheapest menu of contracts
def _menu_payment_option1(vl, vh, pi, K, a_h, a_l):
    """An option-1 menu with linear costs written out (slides: IR binding for the high type, IC for the low,
    accuracy binding for b): its expected payment, or None where the weights leave no noise to add."""
    u, w = 1 - a_h, 1 - a_l
    q = pi**2 * u**2 + (1 - pi) ** 2 * w**2 + 2 * pi * (1 - pi) * ((u + w) / 2) ** 2
    if q >= K:
        return None
    b = np.sqrt((K - q) / 2)
    eh, el = a_h / b, a_l / b
    ph, pl = vh * eh, vl * el + (vh - vl) * eh
    assert pl - vl * el >= ph - vl * eh - 1e-9 and ph - vh * eh >= pl - vh * el - 1e-9   # incentive compatible
    return 2 * (pi * ph + (1 - pi) * pl)


@pytest.mark.parametrize("vl, vh, pi, K", [(1.0, 50.0, 0.7, 0.5973094067796609), (0.5, 10.0, 0.8, 0.7252291525423729)])
def test_design_menu_is_no_dearer_than_a_brute_force_grid_of_menus(vl, vh, pi, K):
    # the optimum sits where a_L = 1 and a_H is small, beside infeasible menus: a grid of steps 0.01 in a_H and a
    # simplex that could not cross the boundary paid 10.8 % (and 6.2 %) more than menus found by hand
    from privrelease.contracts import design_menu

    m = design_menu(vl, vh, pi, K, option=1)
    grid = [_menu_payment_option1(vl, vh, pi, K, x, y) for x in np.linspace(0, 0.1, 201)
            for y in np.linspace(0.99, 1, 51) if y >= x]
    assert m.expected_payment <= min(g for g in grid if g is not None) * (1 + 1e-9)


def test_refinement_stops_at_a_fixed_point():
    # n_refine=1000 re-solved 1,000 times (and reported 1,000 steps kept) what 10 steps had reached to 12 digits;
    # 10**6 would have run for about 50 minutes
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=600, n_items=100, random_state=0)
    y = g.astype(float)
    y[300:] = np.nan
    # (the cap is kept under the raw counts too: the steps run at the tighter cap the first solve found, ~35 steps)
    few = QuantizedPrivacyMapper(n_refine=100, metric="sqeuclidean", max_leakage=0.05, random_state=0).fit(R, y)
    many = QuantizedPrivacyMapper(n_refine=10**6, metric="sqeuclidean", max_leakage=0.05, random_state=0).fit(R, y)
    assert many.n_refine_ == few.n_refine_ < 100
    assert not hasattr(many, "_raw_cap")
    assert many.distortion_ == few.distortion_ and np.array_equal(many.output_points_, few.output_points_)


def test_a_budget_a_held_out_fold_cannot_meet_is_named_as_the_folds():
    # the fold's smallest budget was quoted as the fit's: passing it was refused again, with another fold's figure,
    # while the fitted mapper's own smallest_delta_ was below the first value refused
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings
    from privrelease.exceptions import InfeasibleBudgetError

    R, g, _ = make_ratings(n_users=600, n_items=100, random_state=0)
    g = g.copy()
    g[300:] = -1
    with pytest.raises(InfeasibleBudgetError, match=r"of a held-out fold of n_clusters='heldout' \(\d+ clusters on "
                                                    r"240 of the 300 labeled users\)") as info:
        QuantizedPrivacyMapper(n_clusters="heldout", delta=0.19, random_state=0).fit(R, g)
    assert info.value.smallest_feasible > 0.19
