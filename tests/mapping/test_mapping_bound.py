"""The Lagrangian bound's multiplier search (``lagrangian_bound``) against an exact enumeration.

``g(mu) = sum_c min_j (A + mu B)[c, j] - mu rhs`` is concave and piecewise linear: its maximum
over ``mu >= 0`` is at 0 or at a breakpoint, where two entries of one row cross. The search
bisects over the entries that can still be a row's minimum in its bracket; the value it
returns must be ``g`` at the returned multiplier, computed over every entry (a valid bound),
and within rounding of the enumerated maximum.
"""

import numpy as np
import pytest

from privrelease.mapping._problem import lagrangian_bound


def _g(A, B, rhs, mu):
    return float((A + mu * B).min(axis=1).sum()) - mu * rhs


def _exact_max(A, B, rhs):
    cands = [0.0]
    for a, b in zip(A, B):
        fin = np.isfinite(a)
        a, b = a[fin], b[fin]
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = (a[None, :] - a[:, None]) / (b[:, None] - b[None, :])
        cands.extend(mu[np.isfinite(mu) & (mu > 0)].ravel())
    return max(_g(A, B, rhs, m) for m in np.unique(cands))


@pytest.mark.parametrize("seed", range(6))
def test_multiplier_search_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    k, kh = 12, 40  # more than 16 columns: the bisection runs on the pruned entries
    A = rng.normal(size=(k, kh)) * 10.0 ** rng.uniform(-4, 1)
    B = rng.uniform(0, 1, size=(k, kh))
    A[rng.random((k, kh)) < 0.2] = np.inf  # forbidden entries
    A[np.arange(k), rng.integers(0, kh, k)] = rng.normal(size=k)
    B[~np.isfinite(A)] = 0.0
    Bf = np.where(np.isfinite(A), B, np.inf)
    lo, hi = Bf.min(axis=1).sum(), np.where(np.isfinite(A), B, -np.inf).max(axis=1).sum()
    rhs = float(lo + rng.uniform(0.05, 0.6) * (hi - lo))
    val, mu = lagrangian_bound(A, B, rhs)
    assert val == _g(A, B, rhs, mu)  # the value is the bound at mu over every entry
    best = _exact_max(A, B, rhs)
    assert best - 1e-9 * (1 + abs(best)) <= val <= best + 1e-12 * (1 + abs(best))
