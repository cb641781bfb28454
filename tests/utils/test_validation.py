import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.utils import (
    SecureRandomSource,
    SeededRandomSource,
    check_number,
    check_private_labels,
    check_random_source,
    check_rating_matrix,
    restore_sparse_format,
)


def test_check_random_source_defaults_to_os_entropy():
    src = check_random_source(None)
    assert isinstance(src, SecureRandomSource) and src.secure
    # two secure sources never repeat
    assert not np.array_equal(src.uniform(8), check_random_source(None).uniform(8))


def test_seeded_source_is_reproducible():
    a = check_random_source(3).uniform(5)
    b = check_random_source(3).uniform(5)
    np.testing.assert_array_equal(a, b)
    assert isinstance(check_random_source(np.random.default_rng(0)), SeededRandomSource)
    src = check_random_source(1)
    assert check_random_source(src) is src


@pytest.mark.parametrize("bad", [-1, 1.5, "seed", True])
def test_check_random_source_rejects(bad):
    with pytest.raises((TypeError, ValueError), match="random_state"):
        check_random_source(bad)


def test_uniform_open_interval_and_categorical_never_picks_zero_probability():
    src = check_random_source(0)
    u = src.uniform(100_000)
    assert u.min() > 0 and u.max() < 1
    P = np.array([[0.0, 0.3, 0.0, 0.7], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    draws = src.categorical(np.repeat(P, 20_000, axis=0)).reshape(3, 20_000)
    assert set(np.unique(draws[0])) == {1, 3}
    assert abs(np.mean(draws[0] == 3) - 0.7) < 0.02
    assert np.all(draws[1] == 0) and np.all(draws[2] == 3)


def test_check_number_messages():
    assert check_number(2, "x", low=0) == 2.0
    with pytest.raises(TypeError, match="x must be a real number, got 'a'"):
        check_number("a", "x")
    with pytest.raises(ValueError, match="x must be >= 0, got -1"):
        check_number(-1, "x", low=0)
    with pytest.raises(ValueError, match="NaN"):
        check_number(float("nan"), "x")
    with pytest.raises(ValueError, match="finite"):
        check_number(float("inf"), "x")
    assert check_number(float("inf"), "x", allow_inf=True) == float("inf")
    with pytest.raises(TypeError):
        check_number(True, "x")


def test_check_rating_matrix_sparse_formats_and_errors():
    X = sp.random(20, 10, density=0.3, format="csc", random_state=0)
    X.data = np.ceil(X.data * 5)
    Xc, fmt = check_rating_matrix(X)
    assert fmt == "csc" and Xc.format == "csr"
    assert restore_sparse_format(Xc, fmt).format == "csc"
    assert (Xc != X).nnz == 0
    bad = X.tocsr().copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="1 NaN entries"):  # the mappers' message (it was "non-finite")
        check_rating_matrix(bad)
    with pytest.raises(ValueError, match=r"outside the rating scale \[1, 5\]"):
        check_rating_matrix(np.array([[0, 6.0]]), rating_range=(1, 5))
    with pytest.raises(ValueError, match="2-D"):
        check_rating_matrix(np.zeros(3))
    with pytest.raises(ValueError, match="at least one user"):
        check_rating_matrix(np.zeros((0, 3)))
    with pytest.raises(TypeError, match="numbers"):
        check_rating_matrix(np.array([["a", "b"]]))


def test_check_private_labels():
    y, labeled = check_private_labels([0, -1, 1], 3)
    np.testing.assert_array_equal(labeled, [True, False, True])
    with pytest.raises(ValueError, match="2 labels but X has 3 users"):
        check_private_labels([0, 1], 3)
