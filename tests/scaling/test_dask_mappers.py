"""Dask execution of the mappers: same answers as the in-memory path on a LocalCluster."""

import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")

from privrelease.datasets import make_ratings  # noqa: E402
from privrelease.evaluation import privacy_utility_curve  # noqa: E402
from privrelease.exceptions import PrivacyLeakWarning  # noqa: E402
from privrelease.mappers import QuantizedPrivacyMapper  # noqa: E402
from privrelease.mappers import _dask  # noqa: E402


def _assert_same_optimum(m, ref):
    """Both mappings solve the same program: equal leakage and distortion, each optimal for the other's data.

    The costs agree to 1e-16 but the certified solver stops within ``tol`` (1e-6 bits)
    of the optimum, and the optimum is flat in some directions: entries of the two
    mappings may differ by ~1e-5 while their leakages agree to the tolerance.
    """
    from privrelease.mapping import leakage

    gap = ref.solver_result_.certificate["gap_bits"] + m.solver_result_.certificate["gap_bits"] + 1e-9
    assert m.leakage_ == pytest.approx(ref.leakage_, abs=gap)
    assert leakage(ref.prior_, m.mapping_) <= ref.leakage_ + gap  # m is optimal for ref's problem too
    budget = ref.delta if ref.delta is not None else np.inf
    assert m.distortion_ <= budget + 1e-9
    np.testing.assert_allclose(m.mapping_, ref.mapping_, atol=1e-3)  # and close entrywise


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        # the scheduler's HTTP endpoint falls back to a free port when 8787 is taken
        warnings.filterwarnings("ignore", message="Port 8787 is already in use")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                           dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def data():
    R, a, _ = make_ratings(600, 40, random_state=0)
    y = a.copy()
    y[::3] = -1  # a third of the users did not disclose the attribute
    return R.tocsr(), a, y


@pytest.fixture(scope="module")
def fitted(data):
    R, _, y = data
    return QuantizedPrivacyMapper(n_clusters=6, delta=0.3, random_state=3).fit(R, y)


def test_fit_matches_in_memory(client, data, fitted):
    R, _, y = data
    Xd = da.from_array(R, chunks=(150, 40), asarray=False)
    m = QuantizedPrivacyMapper(n_clusters=6, delta=0.3, random_state=3).fit(Xd, y)
    # same sample (= every labeled user, in row order) -> same clustering, same integer counts
    np.testing.assert_array_equal(m.cluster_centers_, fitted.cluster_centers_)
    np.testing.assert_array_equal(m.prior_, fitted.prior_)
    # costs are sums of the same terms in another order
    np.testing.assert_allclose(m.cost_matrix_, fitted.cost_matrix_, rtol=1e-12, atol=1e-14)
    assert m.quantization_radius_ == fitted.quantization_radius_
    assert m.quantization_distortion_ == pytest.approx(fitted.quantization_distortion_, rel=1e-12)
    # the convex program on costs equal to 1e-16 has the same certified optimum
    _assert_same_optimum(m, fitted)
    # profile="posterior": row j rates E[prediction | c_hat=j] = sum_c W[c, j] pred_c with W = p(c | c_hat)
    # from mapping_, which agrees only to the solver's tolerance (above); since sum_c dW[c, j] = 0, each
    # rating moves by at most |dW[:, j]|_1 * (spread of pred_c) / 2 (clipping is 1-Lipschitz); same items
    pred = fitted.embedding_.predicted_ratings(fitted.cluster_centers_)
    dW = np.abs(m.profile_weights_ - fitted.profile_weights_).sum(axis=0)
    # the items of profile j are its `length` items of largest rate_j(i) = sum_c W[c, j] share(c, i)
    # (share: the part of cluster c's labeled users who rated i, in [0, 1]); W moves by dW_j, so
    # each rate moves by at most dW_j and an item can enter or leave only within 2 dW_j of the cut
    labeled = y != -1
    rated = (R[labeled] != 0).astype(float)
    onehot = np.eye(fitted.n_clusters_)[fitted.labels_]
    share = (onehot.T @ rated) / onehot.sum(axis=0)[:, None]
    rate = fitted.profile_weights_.T @ share  # (outputs, items)
    Sm = (m.release_profiles_ != 0).toarray()[: rate.shape[0]]
    Sf = (fitted.release_profiles_ != 0).toarray()[: rate.shape[0]]
    np.testing.assert_array_equal(Sm.sum(axis=1), Sf.sum(axis=1))
    for j in range(rate.shape[0]):
        swapped = np.flatnonzero(Sm[j] != Sf[j])
        if swapped.size:
            cut = np.sort(rate[j][Sf[j]])[0]
            assert np.all(np.abs(rate[j][swapped] - cut) <= 2 * dW[j] + 1e-12), (j, swapped)
    bound = np.vstack([np.outer(dW, 0.5 * (pred.max(axis=0) - pred.min(axis=0))), np.zeros((1, pred.shape[1]))])
    both = np.vstack([Sm & Sf, np.ones((m.release_profiles_.shape[0] - Sm.shape[0], Sm.shape[1]), bool)])
    diff = np.abs((m.release_profiles_ - fitted.release_profiles_).toarray())
    assert np.all(diff[both] <= bound[both] + 1e-12)  # on the items both release
    assert m.n_labeled_ == int(np.sum(y != -1))


def test_prior_counts_every_labeled_user_when_sampling(client, data):
    R, _, y = data
    Xd = da.from_array(R, chunks=(100, 40), asarray=False)
    m = QuantizedPrivacyMapper(n_clusters=5, delta=0.5, smoothing=0.0, random_state=1,
                               dask_sample_size=120).fit(Xd, y)  # the public parameter
    labeled = y != -1
    # the quantizer was learnt on 120 users, the prior counts all 400 (eq. 20, smoothing 0)
    c = m.quantize(R[labeled])
    a_idx = np.searchsorted(m.classes_, y[labeled])
    counts = np.zeros_like(m.prior_)
    np.add.at(counts, (a_idx, c), 1.0)
    np.testing.assert_allclose(m.prior_, counts / labeled.sum(), rtol=1e-12)
    assert m.n_labeled_ == labeled.sum() == 400
    np.testing.assert_allclose(m.mapping_.sum(axis=1), 1.0, atol=1e-12)
    # the helper kept for older scripts goes through the same public parameter
    old = _dask.fit(QuantizedPrivacyMapper(n_clusters=5, delta=0.5, smoothing=0.0, random_state=1), Xd, y,
                    sample_size=120)
    assert old.dask_sample_size == 120
    np.testing.assert_array_equal(old.prior_, m.prior_)


@pytest.mark.parametrize("dense", [False, True])
def test_transform_matches_in_memory_blocks(client, data, fitted, dense):
    R, _, _ = data
    X = R.toarray() if dense else R
    Xd = da.from_array(X, chunks=(128, 40), asarray=False)
    out = _dask.transform(fitted, Xd)
    assert isinstance(out, da.Array)  # lazy
    assert out.chunks == Xd.chunks and out.dtype == X.dtype
    got = out.compute()
    ref = _dask.transform_in_blocks(fitted, X, Xd.chunks[0])
    if dense:
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, ref)
    else:
        assert sp.issparse(got) and got.format == "csr"
        assert (got != ref).nnz == 0
    # every released row is one of the profiles (a function of c_hat only)
    P = fitted.release_profiles_.toarray()
    G = got if dense else got.toarray()
    assert all((np.abs(P - row).sum(axis=1) == 0).any() for row in G)


def test_block_seeds_are_independent_and_reproducible(client, fitted):
    row = fitted.release_profiles_[:1].toarray()
    X = np.repeat(row, 400, axis=0)  # four identical blocks of 100 identical users
    Xd = da.from_array(X, chunks=(100, X.shape[1]))
    a = _dask.transform(fitted, Xd).compute()
    b = _dask.transform(fitted, Xd).compute()
    np.testing.assert_array_equal(a, b)
    blocks = a.reshape(4, 100, -1)
    c = fitted.quantize(row)[0]
    if np.count_nonzero(fitted.mapping_[c] > 0.05) >= 2:
        # identical inputs, different streams -> different draws (probability of equality < 0.95**100)
        assert not np.array_equal(blocks[0], blocks[1])
        assert not np.array_equal(blocks[2], blocks[3])


def test_secure_transform_samples_the_mapping(client, fitted):
    m = QuantizedPrivacyMapper(**{**fitted.get_params(), "random_state": None})
    for key, value in vars(fitted).items():
        if key.endswith("_"):
            setattr(m, key, value)
    c = int(np.argmax(fitted.mapping_.max(axis=1) < 0.9))  # a cluster with a random output
    centre_row = fitted.release_profiles_[c].toarray()
    c = fitted.quantize(centre_row)[0]
    X = np.repeat(centre_row, 4000, axis=0)
    out = _dask.transform(m, da.from_array(X, chunks=(500, X.shape[1]))).compute()
    P = fitted.release_profiles_.toarray()
    # which profile each row got; profiles may coincide, so compare grouped frequencies
    keys = {tuple(p): j for j, p in enumerate(P)}
    freq = np.zeros(P.shape[0])
    for r in out:
        freq[keys[tuple(r)]] += 1
    expected = np.zeros(P.shape[0])
    for j, p in enumerate(P):
        expected[keys[tuple(p)]] += fitted.mapping_[c, j]
    # 4000 draws: every frequency within 5 binomial standard deviations
    sd = np.sqrt(4000 * expected * (1 - expected)) + 1e-9
    assert np.all(np.abs(freq - 4000 * expected) <= 5 * sd + 1)


def test_dataframe_partitions(client, data, fitted):
    R, _, _ = data
    cols = [f"item{j}" for j in range(R.shape[1])]
    pdf = pd.DataFrame(R.toarray(), columns=cols)
    ddf = dd.from_pandas(pdf, npartitions=3)
    m = QuantizedPrivacyMapper(n_clusters=6, delta=0.3, random_state=3).fit(pdf, np.where(np.arange(600) % 3 == 0, -1, data[1]))
    out = _dask.transform(m, ddf)
    assert list(out.columns) == cols
    got = out.compute()
    assert isinstance(got, pd.DataFrame) and got.index.equals(pdf.index)
    sizes = ddf.map_partitions(len).compute().tolist()
    ref = _dask.transform_in_blocks(m, pdf, sizes)
    np.testing.assert_array_equal(got.to_numpy(), np.asarray(ref))


def test_dataframe_fit_records_feature_names(client, data):
    R, _, y = data
    cols = [f"item{j}" for j in range(R.shape[1])]
    ddf = dd.from_pandas(pd.DataFrame(R.toarray(), columns=cols), npartitions=4)
    m = QuantizedPrivacyMapper(n_clusters=4, delta=0.5, random_state=0).fit(ddf, y)
    assert list(m.feature_names_in_) == cols
    np.testing.assert_allclose(m.prior_.sum(), 1.0)


def test_bad_dask_inputs(client, fitted):
    Xd = da.zeros((10, 7), chunks=(5, 7))
    with pytest.raises(ValueError, match="X has 7 features, but QuantizedPrivacyMapper is expecting 40"):
        _dask.transform(fitted, Xd)
    with pytest.raises(ValueError, match=r"y must have shape \(10,\) to match X, got \(9,\)"):
        QuantizedPrivacyMapper().fit(Xd, np.zeros(9))
    with pytest.raises(ValueError, match="no labeled users: all 10 entries"):
        QuantizedPrivacyMapper().fit(Xd, -np.ones(10))
    with pytest.raises(ValueError, match="block_rows must be a positive integer, got 0"):
        _dask.transform_in_blocks(fitted, np.zeros((3, 40)), 0)


def test_block_random_state():
    assert _dask.block_random_state(None, 3) is None
    a = _dask.block_random_state(7, 0).uniform(5)
    b = _dask.block_random_state(7, 0).uniform(5)
    c = _dask.block_random_state(7, 1).uniform(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_privacy_utility_curve_on_joblib_dask_backend(client):
    R, a, _ = make_ratings(300, 30, random_state=0)
    kw = dict(deltas=[0.5, 0.9], cv=2, attack_models=("logistic",), attack_features=("values",),
              random_state=0, verbose=0)
    ref = privacy_utility_curve(QuantizedPrivacyMapper(n_clusters=4, random_state=0), R, a, n_jobs=1, **kw)
    with joblib.parallel_config(backend="dask"):
        got = privacy_utility_curve(QuantizedPrivacyMapper(n_clusters=4, random_state=0), R, a, n_jobs=2, **kw)
    pd.testing.assert_frame_equal(got.frame, ref.frame)
    assert np.all(np.isfinite(got.frame["rmse_released"]))


def _census_like():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 600)
    df = pd.DataFrame({
        "education": np.where((a + rng.integers(0, 2, 600)) % 3 == 0, "HS", "BSc"),
        "age": (a + rng.integers(0, 3, 600)) * 10,
    })
    return df, a


def test_erasure_mapper_on_dask_dataframe(client):
    from privrelease.mappers import ErasureMapper

    df, a = _census_like()
    ddf = dd.from_pandas(df, npartitions=3)
    m = ErasureMapper(delta=0.3, random_state=2).fit(ddf, da.from_array(a, chunks=200))
    ref_fit = ErasureMapper(delta=0.3, random_state=2).fit(df, a)
    np.testing.assert_array_equal(m.mapping_, ref_fit.mapping_)
    out = _dask.transform(m, ddf)
    got = out.compute()
    sizes = ddf.map_partitions(len).compute().tolist()
    ref = _dask.transform_in_blocks(m, ddf.compute(), sizes)  # dask stores strings with its own dtype
    pd.testing.assert_frame_equal(got, ref)
    assert dict(out.dtypes) == dict(got.dtypes)  # the lazy metadata tells the truth
    # only erasures: every released cell is the original value or missing
    for col in df.columns:
        kept = got[col].notna().to_numpy()
        assert got[col][kept].tolist() == df[col][kept].tolist()
        assert 0 < kept.sum() <= len(df)


def test_erasure_mapper_on_dask_array(client):
    from privrelease.mappers import ErasureMapper

    df, a = _census_like()
    X = np.column_stack([df["education"].eq("HS").to_numpy(), df["age"].to_numpy()]).astype(np.int64)
    m = ErasureMapper(delta=0.3, random_state=3).fit(X, a)
    Xd = da.from_array(X, chunks=(150, 2))
    out = _dask.transform(m, Xd)
    assert out.dtype == np.float64
    got = out.compute()
    np.testing.assert_array_equal(got, _dask.transform_in_blocks(m, X, Xd.chunks[0]))
    kept = ~np.isnan(got)
    np.testing.assert_array_equal(got[kept], X[kept])


def test_erasure_mapper_dispatches_dask_and_saves(client, tmp_path):
    from privrelease import load
    from privrelease.mappers import ErasureMapper

    df, a = _census_like()
    ddf = dd.from_pandas(df, npartitions=3)
    m = ErasureMapper(delta=0.3, random_state=4).fit(ddf, a)  # the public fit dispatches to dask
    out = m.transform(ddf)
    assert hasattr(out, "dask")  # lazy
    sizes = ddf.map_partitions(len).compute().tolist()
    pd.testing.assert_frame_equal(out.compute(), _dask.transform_in_blocks(m, ddf.compute(), sizes))
    with pytest.warns(PrivacyLeakWarning, match="reproducible"):
        m2 = load(m.save(tmp_path / "erasure.npz"))
    pd.testing.assert_frame_equal(m2.transform(ddf).compute(), out.compute())


def test_quantized_mapper_dispatches_dask(client, data, fitted, tmp_path):
    from privrelease import load

    R, _, y = data
    Xd = da.from_array(R, chunks=(150, 40), asarray=False)
    m = QuantizedPrivacyMapper(n_clusters=6, delta=0.3, random_state=3).fit(Xd, y)  # public fit
    np.testing.assert_array_equal(m.prior_, fitted.prior_)
    _assert_same_optimum(m, fitted)
    out = m.transform(Xd)  # public transform: lazy
    assert isinstance(out, da.Array) and out.chunks == Xd.chunks
    assert (out.compute() != _dask.transform_in_blocks(m, R, Xd.chunks[0])).nnz == 0
    released = m.fit_transform(Xd, y)
    assert isinstance(released, da.Array) and released.shape == R.shape
    # a mapper fitted out of core saves and loads like any other
    with pytest.warns(PrivacyLeakWarning, match="reproducible"):
        m2 = load(m.save(tmp_path / "q.npz"))
    assert (m2.transform(Xd).compute() != out.compute()).nnz == 0
    with pytest.raises(ValueError, match="sample_weight is not supported when X is a dask collection"):
        QuantizedPrivacyMapper(delta=0.3).fit(Xd, y, sample_weight=np.ones(R.shape[0]))


@pytest.mark.parametrize("params", [dict(metric="hamming", n_clusters=5, delta=8.0),
                                    dict(space="raw", release="representative", n_clusters=5, delta=9.0),
                                    dict(space="raw", metric="sqeuclidean", n_clusters=4, max_leakage=0.05)])
def test_fit_matches_in_memory_other_spaces(client, data, params):
    R, _, y = data
    R = R[:300]
    y = y[:300]
    ref = QuantizedPrivacyMapper(random_state=5, **params).fit(R, y)
    m = QuantizedPrivacyMapper(random_state=5, **params).fit(da.from_array(R, chunks=(70, 40), asarray=False), y)
    np.testing.assert_array_equal(m.cluster_centers_, ref.cluster_centers_)
    np.testing.assert_array_equal(m.prior_, ref.prior_)
    np.testing.assert_allclose(m.cost_matrix_, ref.cost_matrix_, rtol=1e-12, atol=1e-12)
    _assert_same_optimum(m, ref)
    assert m.smallest_delta_ == pytest.approx(ref.smallest_delta_, rel=1e-12)
    assert abs(m.release_profiles_ - ref.release_profiles_).max() <= 1e-12


def test_secure_source_instance_stays_secure(fitted, monkeypatch):
    from privrelease.utils import SecureRandomSource, SeededRandomSource

    assert _dask._base_seed(SecureRandomSource()) is None
    assert _dask._base_seed(None) is None
    assert isinstance(_dask._base_seed(SeededRandomSource(3)), int)
    # and the block sources really are secure: os.urandom is read while releasing
    import os

    calls = []
    real = os.urandom
    monkeypatch.setattr(os, "urandom", lambda n: calls.append(n) or real(n))
    m = QuantizedPrivacyMapper(**{**fitted.get_params(), "random_state": SecureRandomSource()})
    m.__dict__.update({k: v for k, v in vars(fitted).items() if k.endswith("_")})
    import dask

    with dask.config.set(scheduler="synchronous"):
        _dask.transform(m, da.from_array(np.zeros((20, 40)), chunks=(10, 40))).compute()
    assert len(calls) >= 2


def test_erasure_prior_is_counted_per_partition(client):
    """The dask fit reduces each partition to its (row, label) counts; the prior equals the in-memory one."""
    from privrelease.mappers import ErasureMapper

    df, a = _census_like()
    a = a.copy()
    a[::7] = -1  # undisclosed users
    ddf = dd.from_pandas(df, npartitions=4)
    # what comes back from the partitions: one count per distinct (row, label) pair
    from privrelease.mappers._erasure import _erasure_counts

    parts = [_erasure_counts(p.compute(), a[i * 150:(i + 1) * 150], list(df.columns))
             for i, p in enumerate(ddf.to_delayed())]
    assert sum(int(t.sum()) for t in parts) == len(df)
    assert all(len(t) <= df.drop_duplicates().shape[0] * 3 for t in parts)
    m = ErasureMapper(delta=0.3, random_state=5).fit(ddf, dd.from_array(a, chunksize=150))
    ref = ErasureMapper(delta=0.3, random_state=5).fit(df, a)
    np.testing.assert_allclose(m.prior_, ref.prior_, rtol=0, atol=1e-15)
    np.testing.assert_allclose(m.leakage_, ref.leakage_, atol=1e-9)
    np.testing.assert_array_equal(m.input_tuples_, ref.input_tuples_)
    # a dask Array of codes takes the same path
    X = np.column_stack([df["education"].eq("HS").to_numpy(), df["age"].to_numpy()]).astype(np.int64)
    m2 = ErasureMapper(delta=0.3, random_state=5).fit(da.from_array(X, chunks=(100, 2)), a)
    ref2 = ErasureMapper(delta=0.3, random_state=5).fit(X, a)
    np.testing.assert_allclose(m2.prior_, ref2.prior_, atol=1e-15)


@pytest.mark.parametrize("scheduler", ["threads", "sync", "client"])
def test_a_warning_of_the_blocks_is_given_once_per_transform(client, data, fitted, scheduler):
    # ratings on another scale (x10) in every one of 4 row blocks: the off-scale warning came once per block
    R = data[0].toarray() * 10.0
    Xd = da.from_array(R, chunks=(150, R.shape[1]))
    assert Xd.numblocks[0] == 4
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = fitted.transform(Xd)
        got = out.compute() if scheduler == "client" else out.compute(scheduler=scheduler)
    off = [w for w in record if "far outside the range" in str(w.message)]
    assert len(off) == 1
    assert "one row block of 4: this warning is given once per transform" in str(off[0].message)
    with pytest.warns(UserWarning, match="far outside the range"):
        ref = _dask.transform_in_blocks(fitted, R, Xd.chunks[0])
    np.testing.assert_array_equal(got, ref)  # the same release
    # once per call: a second transform warns again; the in-memory twin warns once too
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fitted.transform(Xd).compute(scheduler="sync")
        _dask.transform_in_blocks(fitted, R, 150)
    assert sum("far outside the range" in str(w.message) for w in record) == 2
    # one block: the message as in memory
    with pytest.warns(UserWarning, match=r"transform ratings on the scale of fit$"):
        fitted.transform(da.from_array(R, chunks=R.shape)).compute(scheduler="sync")


def test_an_unseen_category_is_warned_once_per_dask_transform(client):
    from privrelease.exceptions import UnseenCategoryWarning
    from privrelease.mappers import ErasureMapper

    df, a = _census_like()
    m = ErasureMapper(delta=0.3, random_state=2).fit(df, a)
    new = df.copy()
    new["education"] = new["education"].astype(object)
    new.loc[::50, "education"] = "PhD"  # a category never seen in fit, in each of the 3 partitions
    ddf = dd.from_pandas(new, npartitions=3)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        m.transform(ddf).compute(scheduler="threads")
    unseen = [w for w in record if issubclass(w.category, UnseenCategoryWarning)]
    assert len(unseen) == 1
