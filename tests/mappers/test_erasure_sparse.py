"""ErasureMapper with a sparse alphabet (issue 11, "erasures at scale").

Above ``DENSE_CELLS_LIMIT`` input-output cells the mapper stores only the
reachable pairs; these tests force that path on small data and compare it with
the dense path on the same data (an independent computation), then check the
sampling, the persistence and the file checks of the sparse state.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import privrelease.mappers._erasure as erasure_module
from privrelease import load
from privrelease._persistence import _read, _write
from privrelease.mappers import ErasureMapper


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = pd.DataFrame({
        "a": np.where(rng.random(n) < 0.75, y, 1 - y),
        "b": rng.choice(list("pqr"), n),
        "c": (y + rng.integers(0, 3, n)) % 4,
    })
    y = np.where(rng.random(n) < 0.25, -1, y)
    return X, y


def _fit(params, X, y, sparse, monkeypatch):
    monkeypatch.setattr(erasure_module, "DENSE_CELLS_LIMIT", 0 if sparse else 2**22)
    return ErasureMapper(random_state=0, **params).fit(X, y)


_FIGURES = ("leakage_", "prior_leakage_", "distortion_", "map_accuracy_", "smallest_delta_", "mismatch_bound_")


@pytest.mark.parametrize("params", [dict(delta=0.6), dict(), dict(delta=0.6, leakage="maximal_leakage")])
def test_sparse_alphabet_gives_the_dense_figures(params, monkeypatch):
    X, y = _data()
    dense = _fit(params, X, y, False, monkeypatch)
    sparse_ = _fit(params, X, y, True, monkeypatch)
    assert isinstance(dense.mapping_, np.ndarray)
    assert isinstance(sparse_.mapping_, sp.csr_array) and isinstance(sparse_.cost_matrix_, sp.csr_array)
    # only the reachable pairs are stored: 2^3 per input tuple
    assert sparse_.mapping_.nnz == sparse_.input_tuples_.shape[0] * 8
    assert np.array_equal(sparse_.mapping_.indices, sparse_.cost_matrix_.indices)
    for name in _FIGURES:
        assert getattr(sparse_, name) == pytest.approx(getattr(dense, name), abs=2e-6), name
    assert sparse_.solver_result_.status == "optimal"
    # the sparse mapping puts its mass exactly where the dense cost is finite
    full = sparse_.mapping_.toarray()
    assert np.all(full[np.isinf(dense.cost_matrix_)] == 0)
    np.testing.assert_allclose(full.sum(axis=1), 1.0, atol=1e-12)


def test_sparse_releases_follow_the_mapping(monkeypatch):
    X, y = _data()
    m = _fit(dict(delta=0.6), X, y, True, monkeypatch)
    # the most frequent input tuple, released many times: each output's frequency ~ its probability
    b = int(np.argmax(m.prior_.sum(axis=0)))
    row = {col: m.categories_[f][c] for f, (col, c) in enumerate(zip(X.columns, m.input_tuples_[b]))}
    n = 20000
    out = m.transform(pd.DataFrame({k: [v] * n for k, v in row.items()}).astype(X.dtypes.to_dict()))
    seg = slice(m.mapping_.indptr[b], m.mapping_.indptr[b + 1])
    for j, p in zip(m.mapping_.indices[seg], m.mapping_.data[seg]):
        erased = m.output_tuples_[j] == -1
        hits = np.all(out.isna().to_numpy() == erased[None, :], axis=1).mean()
        assert abs(hits - p) <= 5 * np.sqrt(max(p * (1 - p), 1e-4) / n), (j, hits, p)
    assert ((out == pd.DataFrame([row] * n).astype(X.dtypes.to_dict())) | out.isna()).all().all()


def test_sparse_mapping_table(monkeypatch):
    X, y = _data()
    dense = _fit(dict(delta=0.6), X, y, False, monkeypatch).mapping_table(4)
    sparse_ = _fit(dict(delta=0.6), X, y, True, monkeypatch).mapping_table(4)
    assert list(dense.columns) == list(sparse_.columns)
    np.testing.assert_allclose(sparse_["expected erasures"], dense["expected erasures"], atol=1e-5)


def test_sparse_round_trip_and_tampering(tmp_path, monkeypatch):
    X, y = _data()
    m = _fit(dict(delta=0.6), X, y, True, monkeypatch)
    path = m.save(tmp_path / "e.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the integer random_state warning
        m2 = load(path)
    assert isinstance(m2.mapping_, sp.csr_array)
    for name in _FIGURES:
        assert getattr(m2, name) == getattr(m, name)
    pd.testing.assert_frame_equal(m2.transform(X), m.transform(X))

    meta, arrays = _read(path)
    keys = [k for k in arrays if k.startswith("fitted/mapping_/") and k.endswith("data")]
    assert keys, sorted(arrays)
    data = arrays[keys[0]]
    first = slice(0, int(np.diff(arrays[keys[0].replace("data", "indptr")])[0]))
    data[first] = 0.0
    data[first.start + 1] = 1.0  # an honest-looking row that now releases with one erasure at most
    _write(tmp_path / "t.npz", meta, arrays, redigest=True)
    with pytest.raises(ValueError, match="does not hold|is not the mapping_"):
        load(tmp_path / "t.npz")

    meta, arrays = _read(path)
    ind = [k for k in arrays if k.startswith("fitted/mapping_/") and k.endswith("indices")][0]
    arrays[ind][0] = (arrays[ind][0] + 1) % m.mapping_.shape[1]  # mass moved to a forbidden output
    _write(tmp_path / "u.npz", meta, arrays, redigest=True)
    with pytest.raises(ValueError, match="must store the same entries"):
        load(tmp_path / "u.npz")


def test_many_categories_go_sparse_by_default():
    rng = np.random.default_rng(3)
    n, k = 6000, 2500  # 2500 x 2501 cells > DENSE_CELLS_LIMIT
    cats = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    share = rng.beta(2, 2, k)
    y = (rng.random(n) < share[cats]).astype(int)
    m = ErasureMapper(delta=0.2, random_state=0).fit(pd.DataFrame({"c": cats}), y)
    assert isinstance(m.mapping_, sp.csr_array) and m.mapping_.nnz == 2 * k
    assert m.distortion_ <= 0.2 + 1e-9 and m.solver_result_.status == "optimal"
    assert m.leakage_ < m.prior_leakage_
    out = m.transform(pd.DataFrame({"c": cats}))
    assert out["c"].isna().mean() == pytest.approx(0.2, abs=0.03)
