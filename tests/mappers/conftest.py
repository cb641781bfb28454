"""Data shared by the mapper tests."""

import numpy as np
import pytest
import scipy.sparse as sp


def _class_shifted_ratings(n=240, m=40, seed=0, strength=1.5, n_classes=3):
    """Ratings 1-5 (35% observed, every user at least one) whose 3-D tastes are shifted by an
    ``n_classes`` attribute (``strength`` 0: independent of it); returns ``(csr ratings, y)``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    shift = rng.normal(size=(n_classes, 3)) * strength
    taste = rng.normal(size=(n, 3)) + shift[y]
    items = rng.normal(size=(3, m))
    R = np.clip(np.rint(3 + 0.6 * taste @ items / np.sqrt(3) + rng.normal(0, 0.5, (n, m))), 1, 5)
    mask = rng.random((n, m)) < 0.35
    mask[np.arange(n), rng.integers(0, m, n)] = True
    return sp.csr_matrix(np.where(mask, R, 0.0)), y


@pytest.fixture(scope="session")
def class_shifted_ratings():
    """:func:`_class_shifted_ratings` (the generator itself: tests call it with their own sizes)."""
    return _class_shifted_ratings
