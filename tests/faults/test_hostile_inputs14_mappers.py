"""Hostile inputs, fourteenth audit: the mappers (one test per finding)"""

import numpy as np
import pandas as pd
import pytest

from privrelease import ErasureMapper


def _written_by_attribute(seed=0, n=400):
    """Cells that are one category but written two ways, the way chosen by the private attribute."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    X = pd.DataFrame({"city": rng.choice(["x", "y"], n),
                      "score": np.where(a == 1, -0.0, 0.0),
                      "n": np.array([1 if v else 1.0 for v in a], dtype=object),
                      "k": np.array([np.int64(1) if v else 1 for v in a], dtype=object)})
    y = a.copy()
    y[n // 2:] = -1
    return X, y, a


@pytest.mark.parametrize("kind", ["pandas", "numpy_float", "numpy_object"])
def test_erasure_kept_cells_are_released_as_their_category(kind):
    """A kept cell is released as its fitted category: neither the sign bit of a zero nor the type of a number
    (1 / 1.0 / np.int64(1)) written by the user survives, in a DataFrame, a float ndarray or an object ndarray;
    the container, index, columns and dtypes are kept."""
    X, y, a = _written_by_attribute()
    X.index = np.arange(1000, 1000 + len(X))
    if kind == "numpy_float":
        X = X[["score"]].to_numpy(dtype=float)
    elif kind == "numpy_object":
        X = X[["score", "n", "k"]].to_numpy(dtype=object)
    m = ErasureMapper(random_state=0).fit(X, y)
    assert m.leakage_ < 1e-6
    out = m.transform(X)
    assert type(out) is type(X)
    if kind == "pandas":
        assert out.index.equals(X.index) and list(out.columns) == list(X.columns)
        assert out["score"].dtype == np.float64 and out["city"].dtype == X["city"].dtype
        cols = {c: out[c].to_numpy(dtype=object) for c in ("score", "n", "k")}
    else:
        assert out.shape == X.shape
        cols = {j: out[:, j] for j in range(out.shape[1])}
    for name, col in cols.items():
        kept = ~pd.isna(pd.Series(col, dtype=object)).to_numpy()
        assert kept.sum() > 50, name
        released = col[kept]
        # one written form per column: the released value is a function of the output tuple only
        forms = {(type(v), repr(v), bool(np.signbit(float(v)))) for v in released}
        assert len(forms) == 1, (name, forms)
        assert all(v == 1 or v == 0 for v in released)


def test_mismatch_bound_does_not_depend_on_the_scale_of_sample_weight():
    """Theorem 1's n is the number of labeled users: census-sized weights (about 1.9e5 a row) give the same
    n_labeled_ and mismatch_bound_ as the same weights normalised or no weights; zero-weight rows are not
    counted. The quantized mapper counts users the same way."""
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    rng = np.random.default_rng(0)
    n = 300
    y = rng.integers(0, 2, n)
    X = pd.DataFrame({"sex": np.where(rng.random(n) < 0.7, y, 1 - y), "city": rng.choice(["a", "b", "c"], n)})
    w = rng.uniform(1e5, 3e5, n)
    w[:10] = 0.0
    plain = ErasureMapper(delta=0.5, random_state=0).fit(X.iloc[10:], y[10:])
    for weights in (w, w / w.mean(), w * 1e-3):
        m = ErasureMapper(delta=0.5, random_state=0).fit(X, y, sample_weight=weights)
        assert m.n_labeled_ == n - 10
        assert m.mismatch_bound_ == pytest.approx(plain.mismatch_bound_)
    R, g, _ = make_ratings(n_users=120, n_items=20, random_state=0)
    wq = np.random.default_rng(1).uniform(1e5, 3e5, 120)
    q = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(R, g, sample_weight=wq)
    assert q.n_labeled_ == 120


def test_integer_profiles_round_ratings_near_zero_to_their_sign():
    """On a scale around 0 (-2..2 without 0), an int8 fit keeps every profile rating a float64 fit keeps: a mean
    within 0.5 of 0 is rounded to its sign (never to 0, "not rated"), at fit as at transform, so the int8 and
    float64 releases rate the same cells."""
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=300, n_items=40, random_state=0)
    X = R.copy()
    X.data = X.data - 3
    X.eliminate_zeros()
    y = g.copy()
    y[150:] = -1
    for kw in ({}, {"space": "raw", "profile": "cluster"}):
        f = QuantizedPrivacyMapper(n_clusters=4, random_state=0, **kw).fit(X.astype(np.float64), y)
        i = QuantizedPrivacyMapper(n_clusters=4, random_state=0, **kw).fit(X.astype(np.int8), y)
        Pf, Pi = f.release_profiles_.toarray(), i.release_profiles_.toarray()
        near_zero = (Pf != 0) & (np.abs(Pf) <= 0.5)
        assert np.array_equal(Pf != 0, Pi != 0), kw
        assert np.array_equal(Pi[near_zero], np.sign(Pf[near_zero])), kw
        assert np.array_equal(Pi, np.where(near_zero, np.sign(Pf), np.rint(Pf))), kw
        assert f.transform(X.astype(np.float64)).nnz == i.transform(X.astype(np.int8)).nnz, kw


@pytest.mark.parametrize("mapper", ["quantized", "erasure"])
@pytest.mark.parametrize("case", ["int_beside_str", "bool_beside_int", "two_columns"])
def test_labels_of_mixed_kinds_in_a_list_are_refused(mapper, case):
    """A plain Python list of labels mixing kinds (1 beside '1', True beside 1) is refused like the same labels
    in an object array, by both mappers, naming the kinds and example values; a list of one kind still fits."""
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=80, n_items=20, random_state=0)
    g = [int(v) for v in g]
    if case == "int_beside_str":
        y = [1 if (v == 1 and i % 2) else ("1" if v == 1 else 0) for i, v in enumerate(g)]
    elif case == "bool_beside_int":
        y = [True if (v == 1 and i % 2) else v for i, v in enumerate(g)]
    else:  # 2-D: the first column mixes, the second is fine
        y = [[True if (v == 1 and i % 2) else v, "ab"[v]] for i, v in enumerate(g)]
    if mapper == "quantized":
        est, X = QuantizedPrivacyMapper(n_clusters=3, random_state=0), R
    else:
        est, X = ErasureMapper(random_state=0), np.column_stack([g, np.arange(80) % 3])
    with pytest.raises(TypeError, match=r"mixes label types \[.*'number'.*\] \(for example"):
        est.fit(X, y)
    assert sorted(np.asarray(est.fit(X, g).classes_).tolist()) == [0, 1]


def test_priors_refuse_differently_indexed_pandas_inputs_and_empty_samples():
    """empirical_prior and kde_prior refuse pandas inputs indexed differently (a sorted Series beside its frame's
    column), naming both labels of the first row that differs, instead of pairing them by position; aligned
    Series still give the revealing prior. empirical_prior refuses no samples without both alphabet sizes (an
    empty (0, 0) array summing to 0) and gives the uniform prior when they are given with smoothing."""
    from privrelease.mapping import empirical_prior, kde_prior

    df = pd.DataFrame({"income": [0, 1, 0, 1], "cluster": [0, 1, 0, 1]})
    assert empirical_prior(df["income"], df["cluster"]).tolist() == [[0.5, 0.0], [0.0, 0.5]]
    with pytest.raises(ValueError, match=r"public is indexed differently from private .*row 1 is 2 in private but 1"):
        empirical_prior(df["income"].sort_values(), df["cluster"])
    X = pd.DataFrame({"x": [0.0, 10.0, 0.1, 10.1, 0.2, 10.2]})
    y = pd.Series([0, 1, 0, 1, 0, 1])
    kde_prior(X, y, grid=[[0.0], [10.0]], bandwidths=[0.5], cv=2)
    with pytest.raises(ValueError, match=r"y is indexed differently from X .*row 1 is 1 in X but 2 in y"):
        kde_prior(X, y.sort_values(), grid=[[0.0], [10.0]], bandwidths=[0.5], cv=2)
    with pytest.raises(ValueError, match=r"no samples with smoothing=1.0.*n_private and n_public=None"):
        empirical_prior([], [], smoothing=1.0)
    with pytest.raises(ValueError, match=r"n_public=None"):
        empirical_prior([], [], smoothing=1.0, n_private=2)
    with pytest.raises(ValueError, match=r"at least one sample"):
        empirical_prior([], [], n_private=2, n_public=3)
    assert np.allclose(empirical_prior([], [], smoothing=1.0, n_private=2, n_public=3), 1 / 6)


@pytest.mark.parametrize("metric", ["euclidean", "hamming"])
@pytest.mark.parametrize("bad", ["nan", "inf", "huge"])
@pytest.mark.parametrize("sparse", [False, True])
def test_dask_fit_checks_every_block_not_only_the_sample(metric, bad, sparse):
    """A NaN, an infinity or a value whose squared distances overflow, in a labeled row the k-means sample does
    not draw (dask_sample_size=40 of 100 labeled users), is refused by a dask fit as an in-memory fit refuses it,
    naming the value's row in the whole collection and its column (it was "distortion must not contain NaN", and
    with metric="hamming" a NaN was counted as a rating without a word)."""
    import dask
    import dask.array as da
    import scipy.sparse as sp

    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=200, n_items=30, random_state=0)
    y = g.copy()
    y[100:] = -1
    from privrelease.mappers import _dask as dask_helpers

    seed = dask_helpers.quantizer_sample_seed(0)
    drawn = dask_helpers.sample_block(np.arange(50, 100)[:, None], y[50:100], 20, seed, 1)[0].ravel()
    D = R.toarray()
    # a labeled row outside the k-means sample (62 under the sample stream before it was split from the noise's)
    row = next(i for i in range(50, 100) if i not in drawn and D[i].any())
    col = int(np.flatnonzero(D[row])[0])
    D[row, col] = {"nan": np.nan, "inf": np.inf, "huge": 1e160}[bad]
    X = da.from_array(D, chunks=(50, 30))
    if sparse:
        X = X.map_blocks(sp.csr_matrix, dtype=D.dtype, meta=sp.csr_matrix((0, 0)))
    expected = {"nan": rf"X holds 1 NaN entries in its block of rows 50 to 99 \(the first at row {row}, column {col}\)",
                "inf": rf"contains infinity .*inf at row {row}, column {col}",
                "huge": r"X holds a value as large as 1e\+160"}[bad]
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match=expected):
            QuantizedPrivacyMapper(n_clusters=4, metric=metric, random_state=0, dask_sample_size=40).fit(X, y)


@pytest.mark.parametrize("second_block", ["bool", "str"])
def test_dask_fit_refuses_label_kinds_that_differ_between_blocks(second_block):
    """Labels that are integers in one block of a dask fit and booleans (merged into one class) or strings (a raw
    TypeError from np.unique) in another are refused with the in-memory message naming the kinds and a label of
    each; labels of one kind across blocks still fit."""
    import dask
    import dask.array as da

    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=200, n_items=30, random_state=0)
    y = g.astype(object)
    y[100:] = -1
    y[50:100] = [bool(v) if second_block == "bool" else str(int(v)) for v in g[50:100]]
    X = da.from_array(R.toarray(), chunks=(50, 30))
    kinds = "'bool', 'number'" if second_block == "bool" else "'number', 'string'"
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(TypeError, match=rf"y mixes label types \[{kinds}\] \(for example"):
            QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X, y)
        y_ok = g.astype(object)
        y_ok[100:] = -1
        assert QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X, y_ok).classes_.tolist() == [0, 1]


def test_class_bins_cost_no_memory_per_user_and_bin():
    """With many class_bins and few users, transform assigns users to bins by bisection in each cell: 4,000 users
    at class_bins=5000 take well under the 20 MB of comparing every user with every threshold (the audit's 16,400
    users took 919 MB). The cells are those of the comparison, and every bin maps to a fine cell of its own coarse
    cell, non-decreasing along the bins (an empty bin joins the nearest non-empty one)."""
    import tracemalloc

    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=10000, n_items=30, random_state=0)
    y = g.copy()
    y[5000:] = -1   # 5,000 labeled users: class_bins up to 5,000 (more bins than labeled users are refused)
    X = R[:4000]
    for bins in (3, 5000):
        m = QuantizedPrivacyMapper(n_clusters=4, clustering="attribute_free", class_bins=bins,
                                   random_state=0).fit(R, y)
        assert m.split_thresholds_.shape[1] == bins - 1
        E = m._embed(X)
        coarse = m._nearest_centers(E, m.coarse_centers_)
        t = np.asarray(E @ m.attribute_directions_[0]).ravel()
        expected = m.fine_cells_[coarse, (t[:, None] > m.split_thresholds_[coarse]).sum(axis=1)]
        assert np.array_equal(m.quantize(X), expected)
        assert np.all(np.diff(m.fine_cells_, axis=1) >= 0)
        kc = m.fine_cells_.shape[0]
        assert all(set(m.fine_cells_[c].tolist()).isdisjoint(m.fine_cells_[d].tolist())
                   for c in range(kc) for d in range(c + 1, kc))
    tracemalloc.start()
    try:
        m.transform(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20, peak
