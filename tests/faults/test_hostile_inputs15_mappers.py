"""Hostile inputs, fifteenth audit: the mappers and the label / weight checks they share (one test per finding)"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from privrelease import ErasureMapper
from privrelease.exceptions import UnseenCategoryWarning


def _erasure_data(n=400, seed=0):
    """A zip code that leaks the attribute (released under perfect privacy, so it is often erased) and a field
    that does not."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    zip_code = np.where(rng.random(n) < 0.5 + 0.3 * (2 * a - 1), "75001", "75002")
    return pd.DataFrame({"zip": zip_code, "k": rng.integers(0, 3, n)}), a


def _assert_same_release(first, second):
    """Byte-identical releases: the container, the dtype(s) (a categorical's categories included), the values."""
    assert type(first) is type(second)
    if isinstance(first, pd.DataFrame):
        assert first.dtypes.tolist() == second.dtypes.tolist()
        for j in range(first.shape[1]):
            a, b = first.iloc[:, j], second.iloc[:, j]
            if isinstance(a.dtype, pd.CategoricalDtype):
                assert a.cat.categories.tolist() == b.cat.categories.tolist()
                assert a.cat.categories.dtype == b.cat.categories.dtype
        pd.testing.assert_frame_equal(first, second, check_exact=True, check_categorical=True)
    else:
        assert first.dtype == second.dtype
        assert first.shape == second.shape
        assert [repr(v) for v in first.ravel().tolist()] == [repr(v) for v in second.ravel().tolist()]


# --------------------------------------------------------------------------- F1: the release's format
def test_erasure_array_release_format_does_not_reveal_an_erased_id():
    """A 64-bit id column with ids beyond 2**53: whether a small or a large id was erased, the one-row release
    has the same dtype (the fitted categories' format), and two rows differing only in erased (unseen) cells give
    byte-identical releases."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 400)
    X = np.column_stack([np.where(rng.random(400) < 0.5 + 0.3 * (2 * a - 1), 2**60, 5),
                         rng.integers(0, 3, 400)]).astype(np.int64)
    m = ErasureMapper(max_leakage=0.0).fit(X, a)
    dtypes = set()
    for seed in range(20):
        m.set_params(random_state=seed)
        for v in (5, 2**60):
            dtypes.add(m.transform(np.array([[v, 1]], dtype=np.int64)).dtype)
    assert dtypes == {np.dtype(object)}  # 2**60 is a fitted category: float64 would change it
    m.set_params(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnseenCategoryWarning)
        small = m.transform(np.array([[7, 1]], dtype=np.int64))  # unseen: erased
        large = m.transform(np.array([[2**61, 1]], dtype=np.int64))
    assert small[0, 0] is None
    _assert_same_release(small, large)
    # a mapper whose categories all fit in float64 releases floats whatever the input's integer width
    Xs = np.where(X > 2**53, 9, X)
    ms = ErasureMapper(max_leakage=0.0, random_state=0).fit(Xs, a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnseenCategoryWarning)
        assert ms.transform(np.array([[2**61, 1]], dtype=np.int64)).dtype == np.float64
        assert ms.transform(np.array([[7, 1]], dtype=np.uint64)).dtype == np.float64


def test_erasure_categorical_frame_release_does_not_carry_the_input_categories():
    """A one-row categorical frame: the released column is categorical with the fitted categories, whichever
    value was erased, so the releases of the two zip codes erased are identical (the input's own categories were
    ['75001'] or ['75002'] and revealed the erased cell)."""
    X, a = _erasure_data()
    m = ErasureMapper(max_leakage=0.0).fit(X.astype({"zip": "category"}), a)
    erased = {}
    for seed in range(30):
        m.set_params(random_state=seed)
        for v in ("75001", "75002"):
            out = m.transform(pd.DataFrame({"zip": [v], "k": [1]}).astype({"zip": "category"}))
            assert out["zip"].cat.categories.tolist() == ["75001", "75002"]
            if out["zip"].isna().all() and out["k"].notna().all():  # output tuple (erased, 1)
                erased.setdefault(v, out)
    assert set(erased) == {"75001", "75002"}  # perfect privacy erases either value sometimes
    _assert_same_release(erased["75001"], erased["75002"])


@pytest.mark.parametrize("first, second", [(5, 2**63 + 5), ("x", 3), (1.5, 7)])
def test_erasure_frame_dtypes_come_from_fit_not_from_the_released_frame(first, second):
    """Two one-row frames whose column pandas infers differently (int64 / uint64, str / int64, float64 / int64)
    and whose cells are both erased (unseen) give byte-identical releases: the dtypes are the fitted frame's."""
    X, a = _erasure_data()
    m = ErasureMapper(max_leakage=0.0, random_state=0).fit(X, a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnseenCategoryWarning)
        outs = [m.transform(pd.DataFrame({"zip": ["75001"], "k": [v]})) for v in (first, second)]
    assert outs[0]["k"].isna().all()
    assert outs[0]["k"].dtype == "Int64" and outs[0]["zip"].dtype == X["zip"].dtype
    _assert_same_release(*outs)


@pytest.mark.filterwarnings("ignore::privrelease.exceptions.PrivacyLeakWarning")
def test_erasure_fitted_dtypes_survive_save_and_load(tmp_path):
    """column_dtypes_ is saved and loaded: the loaded mapper releases a categorical column with the fitted
    categories; a file whose dtypes cannot hold the categories is refused."""
    import privrelease

    X, a = _erasure_data()
    m = ErasureMapper(max_leakage=0.0, random_state=0).fit(X.astype({"zip": "category"}), a)
    assert m.column_dtypes_ == ["category", "Int64"]
    back = privrelease.load(m.save(tmp_path / "m.npz"))
    assert back.column_dtypes_ == m.column_dtypes_
    one = pd.DataFrame({"zip": ["75002"], "k": [0]}).astype({"zip": "category"})
    _assert_same_release(m.transform(one), back.transform(one))
    back.column_dtypes_ = ["category", "boolean"]
    with pytest.raises(ValueError, match=r"column_dtypes_\[1\] = 'boolean' does not hold the categories"):
        back._check_fitted_state()


# --------------------------------------------------------------------------- F4: dask frames of categorical columns
@pytest.mark.parametrize("kind", ["category", "category_and_float"])
def test_dask_frame_of_categorical_columns_releases_what_memory_releases(kind):
    """A dask DataFrame of categorical columns is released as the same blocks in memory are (no NaN: the released
    ratings were cast back to the input's categories), with the in-memory dtype in the lazy meta too."""
    dask = pytest.importorskip("dask")
    import dask.dataframe as dd

    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings
    from privrelease.mappers._dask import transform_in_blocks

    R, g, _ = make_ratings(n_users=300, n_items=30, random_state=0)
    y = g.copy()
    y[150:] = -1
    A = R.toarray().astype(int)
    A[:, 0] = np.where(A[:, 0] > 0, np.where(A[:, 0] >= 3, 5, 1), 0)  # categories {0, 1, 5}
    D = pd.DataFrame(A, columns=[f"i{j}" for j in range(30)])
    D = D.astype("category") if kind == "category" else D.astype({"i0": "category", "i1": float})
    m = QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(D, y)
    X = dd.from_pandas(D, npartitions=3)
    lazy = m.transform(X)
    with dask.config.set(scheduler="synchronous"):
        out = lazy.compute()
    expected = transform_in_blocks(m, D, [len(p) for p in X.partitions])  # a frame, as transform(D) gives
    assert int(out.isna().sum().sum()) == 0
    assert set(out.dtypes) == set(lazy._meta.dtypes) == set(expected.dtypes) == set(m.transform(D).dtypes)
    assert len(set(expected.dtypes)) == 1  # one numpy dtype for every column, as an array release has
    np.testing.assert_array_equal(out.to_numpy(), expected.to_numpy())


# --------------------------------------------------------------------------- F3: column labels that are not strings
def _ratings(n_users=300, n_items=30):
    from privrelease.datasets import make_ratings

    R, g, _ = make_ratings(n_users=n_users, n_items=n_items, random_state=0)
    y = g.copy()
    y[n_users // 2:] = -1
    return R, y


def _quantized_frames():
    R, y = _ratings()
    sparse = pd.DataFrame.sparse.from_spmatrix(R.astype(float), columns=np.arange(100, 130))  # item ids
    multi = pd.DataFrame(R.toarray(), columns=pd.MultiIndex.from_product([["a", "b"], range(15)]))
    return {"int_ids": (sparse, y), "multiindex": (multi, y)}


@pytest.mark.filterwarnings("ignore::privrelease.exceptions.PrivacyLeakWarning")
@pytest.mark.parametrize("kind", ["int_ids", "multiindex"])
def test_quantized_refuses_a_frame_whose_non_string_columns_differ_from_fit(kind, tmp_path):
    """Integer item ids (a pivot's) or a MultiIndex: a frame with the same columns reordered, or another column,
    is refused naming the first mismatch (it was read by position: half of the users changed cluster); the same
    frame and a plain array still pass, and the labels survive save / load."""
    import privrelease
    from privrelease import QuantizedPrivacyMapper

    X, y = _quantized_frames()[kind]
    m = QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(X, y)
    assert not hasattr(m, "feature_names_in_")
    assert m.feature_labels_in_.tolist() == list(X.columns)
    reordered = X[X.columns[::-1]]
    first, fitted = (tuple(X.columns[i]) if kind == "multiindex" else int(X.columns[i]) for i in (-1, 0))
    with pytest.raises(ValueError, match=rf"X has column {re.escape(repr(first))} at position 0 where fit saw "
                                         rf"column {re.escape(repr(fitted))}.*reorder them as in fit"):
        m.quantize(reordered)
    with pytest.raises(ValueError, match="at position 0 where fit saw"):
        m.transform(reordered)
    other = X.copy()
    other.columns = [("z", 0) if kind == "multiindex" else 999] + list(X.columns[1:])
    if kind == "multiindex":
        other.columns = pd.MultiIndex.from_tuples(other.columns)
    with pytest.raises(ValueError, match=r"at position 0 .* that X lacks"):
        m.quantize(other)
    labels = m.quantize(X)
    np.testing.assert_array_equal(m.quantize(reordered[X.columns]), labels)
    dense = X.sparse.to_dense().to_numpy() if kind == "int_ids" else X.to_numpy()
    np.testing.assert_array_equal(m.quantize(dense), labels)  # an array is read by position, as in fit
    back = privrelease.load(m.save(tmp_path / "m.npz"))
    assert back.feature_labels_in_.tolist() == m.feature_labels_in_.tolist()
    np.testing.assert_array_equal(back.quantize(X), labels)
    with pytest.raises(ValueError, match="at position 0 where fit saw"):
        back.quantize(reordered)


def test_erasure_refuses_reordered_integer_columns_and_dask_frames_too():
    """The erasure mapper checks the labels of a frame of integer columns (0, 1 of a headerless file), and a
    dask DataFrame is refused when the release is built, before any block is computed."""
    dd = pytest.importorskip("dask.dataframe")
    from privrelease import QuantizedPrivacyMapper

    X, a = _erasure_data()
    X.columns = [0, 1]
    m = ErasureMapper(random_state=0).fit(X, a)
    assert m.feature_labels_in_.tolist() == [0, 1]
    with pytest.raises(ValueError, match="X has column 1 at position 0 where fit saw column 0"):
        m.transform(X[[1, 0]])
    with pytest.raises(ValueError, match="X has column 1 at position 0 where fit saw column 0"):
        m.transform(dd.from_pandas(X[[1, 0]], npartitions=2))
    assert m.transform(X).columns.tolist() == [0, 1]
    R, y = _ratings()
    D = pd.DataFrame(R.toarray(), columns=np.arange(100, 130))
    q = QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(dd.from_pandas(D, npartitions=3), y)
    assert q.feature_labels_in_.tolist() == list(range(100, 130))
    with pytest.raises(ValueError, match="X has column 129 at position 0 where fit saw column 100"):
        q.transform(D[D.columns[::-1]])


# --------------------------------------------------------------------------- F2: Decimal (and Fraction) labels
@pytest.mark.parametrize("kind", ["decimal", "fraction"])
def test_decimal_and_fraction_labels_are_numbers(kind):
    """Decimal labels (pandas.read_sql's NUMERIC) and Fractions are numbers, as floats are: -1 (and a Decimal NaN,
    quiet or signalling) is undisclosed, integer values are the integer classes, the same prior as the plain
    integers; a continuous attribute (i / 7) and an infinite label are refused as floats are."""
    from decimal import Decimal
    from fractions import Fraction

    from privrelease import QuantizedPrivacyMapper

    R, y = _ratings()
    make = Decimal if kind == "decimal" else Fraction
    yd = np.array([make(int(v)) for v in y], dtype=object)
    if kind == "decimal":
        yd[-2:] = [Decimal("NaN"), Decimal("sNaN")]
    plain = QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(R, np.where(y < 0, -1, y))
    m = QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(R, yd)
    assert m.classes_.tolist() == [0, 1] and all(type(c) is int for c in m.classes_.tolist())
    assert m.n_labeled_ == int((y >= 0).sum()) == 150
    np.testing.assert_array_equal(m.prior_, plain.prior_)
    continuous = np.array([make(i) / 7 for i in range(300)], dtype=object)
    with pytest.raises(ValueError, match=r"y holds 257 non-integer number\(s\)"):
        QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(R, continuous)
    if kind == "decimal":
        yd[0] = Decimal("Infinity")
        with pytest.raises(ValueError, match=r"y holds 1 infinite label\(s\) \(for example Decimal\('Infinity'\)"):
            QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(R, yd)


def test_undisclosed_mask_reads_decimal_markers():
    """undisclosed_mask: Decimal -1, -1.0, NaN and sNaN are undisclosed, Fraction(-1) too; other numbers are not."""
    from decimal import Decimal
    from fractions import Fraction

    from privrelease.utils import undisclosed_mask

    y = np.array([Decimal(-1), Decimal("-1.0"), Decimal("NaN"), Decimal("sNaN"), Fraction(-1), Decimal(0),
                  Fraction(1), Decimal(2)], dtype=object)
    assert undisclosed_mask(y).tolist() == [True] * 5 + [False] * 3


# --------------------------------------------------------------------------- F6: labels numpy.unique cannot order
@pytest.mark.parametrize("mapper", ["quantized", "erasure"])
def test_bytes_beside_str_and_complex_labels_are_refused_clearly(mapper):
    """Labels mixing bytes and str are two kinds (TypeError naming both); complex labels, in an object array or a
    complex one, get the library's ComplexDataError; both used to fail inside numpy.unique ('<' not supported)."""
    from privrelease import QuantizedPrivacyMapper
    from privrelease.exceptions import ComplexDataError

    if mapper == "quantized":
        X, y = _ratings()
        est = QuantizedPrivacyMapper(n_clusters=5, random_state=0)
    else:
        X, y = _erasure_data(n=300)
        est = ErasureMapper(random_state=0)
    n = X.shape[0]
    mixed = np.array([b"a" if i % 2 else "b" for i in range(n)], dtype=object)
    with pytest.raises(TypeError, match=r"y mixes label types \['bytes', 'string'\]"):
        est.fit(X, mixed)
    codes = np.arange(n) % 2
    for labels in (np.array([complex(v) for v in codes], dtype=object),
                   np.array([np.complex128(v) for v in codes], dtype=object), codes.astype(complex)):
        with pytest.raises(ComplexDataError, match=r"Complex data not supported: y must hold real numbers"):
            est.fit(X, labels)


# --------------------------------------------------------------------------- F5: sample_weight
def test_sample_weight_is_validated_like_other_numbers():
    """sample_weight refuses what X and y refuse: complex weights (ComplexDataError, the imaginary part was
    dropped), masked entries (the mask was ignored), dates and durations (read as nanoseconds), texts in an object
    array (parsed as numbers) and None; each message names the value and its row. Real weights still pass."""
    from decimal import Decimal

    from privrelease import QuantizedPrivacyMapper
    from privrelease.exceptions import ComplexDataError

    R, y = _ratings()
    est = QuantizedPrivacyMapper(n_clusters=5, random_state=0)
    ones = np.ones(300)
    with pytest.raises(ComplexDataError, match=r"sample_weight must hold real numbers, got \(1\+1j\) at row 0"):
        est.fit(R, y, sample_weight=ones + 1j)
    w = ones.astype(object)
    w[7] = 2 + 0j
    with pytest.raises(ComplexDataError, match=r"got \(2\+0j\) at row 7"):
        est.fit(R, y, sample_weight=w)
    with pytest.raises(ValueError, match=r"sample_weight is a masked array with 100 masked entries"):
        est.fit(R, y, sample_weight=np.ma.masked_array(ones, mask=np.arange(300) < 100))
    with pytest.raises(TypeError, match=r"got datetime64\[us\] values \(for example "
                                        r"'1970-01-01T00:00:00.000000' of type datetime64 at row 0\)"):
        est.fit(R, y, sample_weight=pd.to_datetime(np.arange(300), unit="D").to_numpy().astype("M8[us]"))
    with pytest.raises(TypeError, match=r"got timedelta64\[s\] values .* of type timedelta64 at row 0"):
        est.fit(R, y, sample_weight=np.arange(300).astype("m8[s]"))
    for bad, value, row in ((np.array(["1"] * 300, dtype=object), "'1'", 0),
                            (np.array([1.0] * 5 + [None] + [1.0] * 294, dtype=object), "None", 5)):
        with pytest.raises(TypeError, match=rf"sample_weight must hold numbers, got object values \(for example "
                                            rf"{value} of type \w+ at row {row}\)"):
            est.fit(R, y, sample_weight=bad)
    reference = QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(R, y, sample_weight=2 * ones)
    for good in (np.ma.masked_array(2 * ones), np.array([Decimal(2)] * 300, dtype=object), [2] * 300,
                 pd.Series(2 * ones, dtype="Float64")):
        m = QuantizedPrivacyMapper(n_clusters=5, random_state=0).fit(R, y, sample_weight=good)
        np.testing.assert_array_equal(m.prior_, reference.prior_)


# --------------------------------------------------------------------------- minor: the accountant's population names
def test_accountant_refuses_nan_and_boolean_population_names():
    """A NaN population name (alone or in a tuple) opened a new ledger at every release, and True wrote into the
    ledger of population 1: both are refused before anything is recorded; 1 and np.int64(1) are one name."""
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(10.0)
    eps = np.ones(3)
    for name in (np.float64("nan"), float("nan"), ("a", float("nan"))):
        with pytest.raises(ValueError, match=r"population must be a name equal to itself, got .*nan"):
            acc.spend(1.0, population=name, individual_epsilons=eps)
    for name in (True, np.bool_(False)):
        with pytest.raises(TypeError, match=r"got the boolean (True|False), which would share the ledger"):
            acc.spend(1.0, population=name, individual_epsilons=eps)
    assert acc.spent == 0 and acc.populations() == []
    # 1.0 is refused as True is (it would share the ledger of population 1): tests/faults/test_hostile21_core.py
    acc.spend(1.0, population=1, individual_epsilons=eps).spend(1.0, population=np.int64(1), individual_epsilons=eps)
    assert acc.populations() == [1]
    np.testing.assert_array_equal(acc.individual_spent(1), [2.0, 2.0, 2.0])
