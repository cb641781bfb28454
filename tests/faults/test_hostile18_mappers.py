"""Seams between the mappers and DCLEFEstimator, and ErasureMapper's silent long fits (hostile inputs, round 18).

Each test failed before its fix.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from privrelease import exceptions
from privrelease.auctions import DCLEFEstimator
from privrelease.mappers import ErasureMapper, QuantizedPrivacyMapper
from privrelease.mappers import _erasure
from privrelease.mapping import erasure_alphabet, erasure_distortion, solve_mapping
from privrelease.mapping._presolve import reduce_outputs


def _table(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.column_stack([np.where(rng.random(n) < 0.8, y, 1 - y), rng.integers(0, 3, n),
                         rng.integers(0, 2, n)]).astype(float)
    return X, y


def _mappers():
    return [ErasureMapper(delta=0.5, random_state=0), QuantizedPrivacyMapper(n_clusters=3, delta=0.5, random_state=0)]


@pytest.mark.parametrize("labels", [[10, 11, 12], pd.MultiIndex.from_tuples([("u", 1), ("u", 2), ("v", 1)])],
                         ids=["integer ids", "multiindex"])
@pytest.mark.parametrize("which", [0, 1], ids=["erasure", "quantized"])
def test_set_output_pandas_keeps_non_string_column_labels(labels, which):
    # the default output keeps the frame's labels; set_output(transform="pandas") renamed them x0, x1, x2
    X, y = _table()
    df = pd.DataFrame(X, columns=labels)
    mapper = _mappers()[which].fit(df, y)
    assert list(mapper.transform(df).columns) == list(labels)
    mapper.set_output(transform="pandas")
    assert list(mapper.transform(df).columns) == list(labels)
    assert list(mapper.fit_transform(df, y).columns) == list(labels)
    # an array given to a mapper fitted on such a frame: the fitted labels, as feature_names_in_ for string names
    out = mapper.transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(labels)


def test_set_output_pandas_string_names_unchanged():
    X, y = _table()
    df = pd.DataFrame(X, columns=["sex", "city", "edu"])
    for mapper in _mappers():
        out = mapper.set_output(transform="pandas").fit(df, y).transform(df)
        assert list(out.columns) == ["sex", "city", "edu"] == list(mapper.get_feature_names_out())


def _six_valued(n_rows, n_features, seed=0):
    """The benchmark's data (benchmarks/bench_erasure_features.py): six-valued fields moved by a binary attribute."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_rows)
    cols = {}
    for f in range(n_features):
        base = rng.integers(0, 6, n_rows)
        cols[f"f{f}"] = np.where(rng.random(n_rows) < 0.3, (base + y) % 6, base)
    return pd.DataFrame(cols), y


class _Stop(Exception):
    pass


def test_erasure_large_cap_program_is_announced_before_the_solve(monkeypatch):
    # 500 rows of eight six-valued fields under a 0.01-bit cap took 372 s in silence (500 x 7: 60 to 120 s)
    warning = getattr(exceptions, "LargeProgramWarning", None)
    assert warning is not None and issubclass(warning, UserWarning)
    X, y = _six_valued(500, 7)

    def no_solve(self, estimate):
        raise _Stop

    monkeypatch.setattr(ErasureMapper, "_solve_and_report", no_solve)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(_Stop):
            ErasureMapper(max_leakage=0.01, random_state=0).fit(X, y)
    found = [w for w in caught if issubclass(w.category, warning)]
    assert len(found) == 1
    # the sizes it names are the program's, computed here from the data
    tuples = np.unique(X.to_numpy(), axis=0)
    outputs = erasure_alphabet(tuples)
    kept = reduce_outputs(erasure_distortion(tuples, outputs, sparse=True)).n_outputs
    text = str(found[0].message)
    assert f"{tuples.shape[0]:,} distinct input tuples" in text
    assert f"{outputs.shape[0]:,} outputs" in text and f"{kept:,} after" in text
    assert f"{tuples.shape[0] * kept:,} input-output cells" in text
    assert "delta=" in text and "fewer features" in text
    assert found[0].filename == __file__  # pointed at the caller's fit


def test_erasure_small_program_not_announced_and_answer_unchanged(monkeypatch):
    X, y = _six_valued(200, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", getattr(exceptions, "LargeProgramWarning", UserWarning))
        quiet = ErasureMapper(delta=0.5, random_state=0).fit(X, y)
    # announced (threshold at 0): the same program, the same certified answer, the engine's own
    monkeypatch.setattr(_erasure, "SLOW_PROGRAM_CELLS", 0, raising=False)
    with pytest.warns(getattr(exceptions, "LargeProgramWarning", exceptions.UnseenCategoryWarning)):
        loud = ErasureMapper(delta=0.5, random_state=0).fit(X, y)
    engine = solve_mapping(quiet.prior_, quiet.cost_matrix_, 0.5)
    for m in (quiet, loud):
        np.testing.assert_allclose(m.mapping_, engine.mapping, atol=1e-12)
        assert m.leakage_ == pytest.approx(engine.leakage, abs=1e-12)
        assert m.distortion_ == pytest.approx(engine.distortion, abs=1e-12)


def test_dclef_dask_frame_records_and_checks_column_names():
    dd = pytest.importorskip("dask.dataframe")
    from privrelease.accounting import PrivacyAccountant

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    d = np.clip(np.round(3 + X["a"].to_numpy()), 1, 5)
    est = DCLEFEstimator(data_range=(1, 5), random_state=0).fit(dd.from_pandas(X, npartitions=2), d)
    assert list(est.feature_names_in_) == ["a", "b", "c"]
    with PrivacyAccountant():
        with pytest.raises(ValueError, match="same order"):
            est.predict(X[["c", "b", "a"]])
        with pytest.raises(ValueError, match="same order"):
            est.predict(dd.from_pandas(X[["c", "b", "a"]], npartitions=2))
        assert est.predict(dd.from_pandas(X.iloc[:3], npartitions=1)).shape == (3,)
    np.testing.assert_array_equal(est.auction_weights(X.iloc[:2]),
                                  est.auction_weights(dd.from_pandas(X.iloc[:2], npartitions=1)))


def test_erasure_mapping_table_names_non_string_labels():
    # a frame of columns 10, 11, 12 gave a table of columns x0, x1, x2 and "released x0" ...
    X, y = _table()
    mapper = ErasureMapper(delta=0.5, random_state=0).fit(pd.DataFrame(X, columns=[10, 11, 12]), y)
    table = mapper.mapping_table(top=2)
    for label in ("10", "11", "12"):
        assert label in table.columns and f"released {label}" in table.columns
    assert not any(str(c).endswith("x0") for c in table.columns)


def test_dclef_sparse_frame_refused_with_frame_advice():
    # scikit-learn's "Use '.toarray()'": a DataFrame has no such method (the mappers say X.sparse.to_dense())
    rng = np.random.default_rng(0)
    X = pd.DataFrame((rng.random((40, 3)) < 0.5).astype(float), columns=["a", "b", "c"])
    d = rng.integers(1, 6, 40).astype(float)
    sparse = X.astype(pd.SparseDtype(float, 0.0))
    with pytest.raises(TypeError, match=r"X\.sparse\.to_dense\(\)") as info:
        DCLEFEstimator(data_range=(1, 5), random_state=0).fit(sparse, d)
    assert "toarray" not in str(info.value) and "(40, 3)" in str(info.value)
    est = DCLEFEstimator(data_range=(1, 5), random_state=0).fit(X, d)
    for method in (est.predict, est.auction_weights):
        with pytest.raises(TypeError, match=r"X\.sparse\.to_dense\(\)"):
            method(sparse.iloc[:2])


def test_dclef_checks_non_string_column_labels_like_the_mappers():
    # public features as a pivot of integer item ids: a query frame with the items in another order was read by
    # position (each item's value taken for another's); the mappers refuse it (feature_labels_in_)
    from privrelease.accounting import PrivacyAccountant

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=[101, 205, 307])
    d = np.clip(np.round(3 + X[101].to_numpy()), 1, 5)
    est = DCLEFEstimator(data_range=(1, 5), random_state=0).fit(X, d)
    assert list(est.feature_labels_in_) == [101, 205, 307]
    reordered = X[[307, 205, 101]]
    with pytest.raises(ValueError, match=r"column 307 at position 0 where fit saw column 101"):
        est.auction_weights(reordered)
    with PrivacyAccountant() as acc:
        with pytest.raises(ValueError, match=r"column 307 at position 0"):
            est.predict(reordered)
        assert len(acc.records) == 0  # refused before any privacy is spent
        np.testing.assert_array_equal(est.auction_weights(X.iloc[:2]), est.auction_weights(X.iloc[:2].to_numpy()))


@pytest.mark.parametrize("which", [0, 1], ids=["erasure", "quantized"])
def test_set_output_pandas_keeps_a_dask_frame_lazy_with_its_index(which):
    # set_output(transform="pandas") read the lazy release with pd.DataFrame(...): computed at once, and the
    # user ids of the index (100, 101, ...) came back as 0, 1, ...; the default output keeps both
    dd = pytest.importorskip("dask.dataframe")
    X, y = _table()
    df = pd.DataFrame(X, columns=[10, 11, 12], index=np.arange(100, 100 + len(X)))
    ddf = dd.from_pandas(df, npartitions=3)
    mapper = _mappers()[which].fit(ddf, y)
    default = mapper.transform(ddf).compute()
    mapper.set_output(transform="pandas")
    out = mapper.transform(ddf)
    assert hasattr(out, "compute")  # still lazy
    out = out.compute()
    assert list(out.index) == list(df.index) and list(out.columns) == [10, 11, 12]
    pd.testing.assert_frame_equal(out, default)  # an integer seed replays the same draws
    fitted = mapper.fit_transform(ddf, y)
    assert hasattr(fitted, "compute") and list(fitted.compute().index) == list(df.index)
