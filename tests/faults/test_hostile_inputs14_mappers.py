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
