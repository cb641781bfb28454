"""Speed and memory of QuantizedPrivacyMapper.transform on a large sparse rating matrix.

Goal: 1,000,000 users x 2,000 items (about 100 ratings a user, CSR) released in
under 30 s with a peak of extra memory under 3x the input matrix.

Compared in one run, on the same data and the same fitted mapper:

* ``ours``: the chunked, vectorised transform (never densifies);
* ``per-row loop``: the obvious Python implementation (one row at a time:
  embed, pick the nearest centre, draw from the mapping, copy the profile),
  timed on a slice and extrapolated linearly;
* ``densify``: the obvious array implementation (``X.toarray()`` then dense
  maths), run on a slice and extrapolated linearly (on the full matrix it would
  need n_users x n_items x 8 bytes).

Peak memory is measured with :mod:`tracemalloc` (numpy and scipy buffers are
traced) and reported relative to the input matrix's bytes (data + indices +
indptr). The transform uses the production default ``random_state=None``
(operating-system entropy).

Usage::

    python benchmarks/bench_transform.py            # 1,000,000 users
    python benchmarks/bench_transform.py --quick    # 100,000 users
"""

import argparse
import time
import tracemalloc

import numpy as np
import scipy.sparse as sp

from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.utils import check_random_source


def make_matrix(n_users, n_items, per_user, seed=0):
    """CSR ratings 1-5, ``per_user`` distinct items per user (canonical CSR, sorted indices).

    Items are split into ``per_user`` consecutive blocks and every user rates one
    item of each block, drawn with a popularity skew inside the block (cheap to
    generate for a million users, and every row has distinct, sorted indices).
    """
    rng = np.random.default_rng(seed)
    width = n_items // per_user
    pop = 1.0 / np.arange(1, width + 1) ** 0.7
    cdf = np.cumsum(pop / pop.sum())
    indptr = np.arange(n_users + 1, dtype=np.int64) * per_user
    indices = np.empty(n_users * per_user, dtype=np.int32)
    data = np.empty(n_users * per_user, dtype=np.float64)
    y = (rng.random(n_users) < 0.5).astype(np.int64)
    block = 100_000
    for s in range(0, n_users, block):
        e = min(s + block, n_users)
        offs = np.searchsorted(cdf, rng.random((e - s, per_user)) * cdf[-1])
        idx = offs + (np.arange(per_user) * width)[None, :]
        indices[s * per_user:e * per_user] = idx.ravel()
        r = rng.integers(1, 6, size=(e - s, per_user)).astype(np.float64)
        # the attribute shows in the first two blocks: class 1 rates them 5, class 0 rates them 2
        r[:, :2] = np.where(y[s:e, None] == 1, 5.0, 2.0)
        data[s * per_user:e * per_user] = r.ravel()
    X = sp.csr_matrix((data, indices, indptr), shape=(n_users, n_items))
    X.has_sorted_indices = True
    return X, y


def nbytes(X):
    return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes


def per_row_loop(m, X, source):
    """The obvious Python implementation, one user at a time."""
    emb = m.embedding_
    L = emb.basis_chol_
    V = emb.components_
    P = m.release_profiles_
    rows = []
    for u in range(X.shape[0]):
        s, e = X.indptr[u], X.indptr[u + 1]
        items, vals = X.indices[s:e], X.data[s:e]
        n = len(items)
        mu = (vals.sum() - n * emb.global_mean_) / (n + emb.mean_shrinkage)
        res = vals - emb.global_mean_ - mu - emb.item_offset_[items]
        z = V[:, items] @ res
        g = (V[:, items] ** 2).sum(axis=1)
        coef = np.r_[mu, z / (g + emb.ridge_)]
        point = coef @ L
        c = int(np.argmin(((m.cluster_centers_ - point) ** 2).sum(axis=1)))
        j = int(source.categorical(m.mapping_[c][None, :])[0])
        rows.append(P[j])
    return sp.vstack(rows).tocsr()


def densified(m, X, source):
    """The obvious array implementation: densify, then dense maths."""
    D = X.toarray()
    emb = m.embedding_
    rated = D != 0
    n = rated.sum(axis=1)
    mu = (D.sum(axis=1) - n * emb.global_mean_) / (n + emb.mean_shrinkage)
    R = np.where(rated, D - emb.global_mean_ - mu[:, None] - emb.item_offset_[None, :], 0.0)
    Z = R @ emb.components_.T
    G = rated.astype(float) @ (emb.components_.T ** 2)
    E = np.c_[mu, Z / (G + emb.ridge_)] @ emb.basis_chol_
    d = ((E[:, None, :] - m.cluster_centers_[None]) ** 2).sum(axis=2)
    c_hat = source.categorical(m.mapping_[d.argmin(axis=1)])
    return m.release_profiles_.toarray()[c_hat]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100,000 users instead of 1,000,000")
    args = ap.parse_args()
    n_users = 100_000 if args.quick else 1_000_000
    n_items, per_user = 2000, 100

    t = time.perf_counter()
    X, y = make_matrix(n_users, n_items, per_user)
    print(f"data: {n_users:,} users x {n_items:,} items, {X.nnz:,} ratings "
          f"({nbytes(X) / 2**20:,.0f} MiB as CSR), generated in {time.perf_counter() - t:.1f} s")

    n_fit = 20_000
    labels = np.full(n_users, -1)
    labels[:n_fit] = y[:n_fit]
    t = time.perf_counter()
    m = QuantizedPrivacyMapper().fit(X[:n_fit], labels[:n_fit])
    print(f"fit on {n_fit:,} opted-in users (defaults: {m.n_clusters_} clusters, rank {m.embedding_.rank_}): "
          f"{time.perf_counter() - t:.1f} s, prior leakage {m.prior_leakage_:.3f} bits -> {m.leakage_:.2g} bits")

    rows = []
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t = time.perf_counter()
    R = m.transform(X)
    t_ours = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    assert R.shape == X.shape and R.format == "csr"
    rows.append(("ours (chunked, sparse)", n_users, t_ours, t_ours, peak / nbytes(X)))
    del R

    source = check_random_source(None)
    n_loop = 5_000
    sub = X[:n_loop]
    t = time.perf_counter()
    per_row_loop(m, sub, source)
    t_loop = time.perf_counter() - t
    rows.append(("per-row Python loop", n_loop, t_loop, t_loop * n_users / n_loop, float("nan")))

    n_dense = 20_000
    sub = X[:n_dense]
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t = time.perf_counter()
    densified(m, sub, source)
    t_dense = time.perf_counter() - t
    peak_dense = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    rows.append(("densify then dense maths", n_dense, t_dense, t_dense * n_users / n_dense,
                 peak_dense / nbytes(sub)))

    print()
    print(f"{'implementation':28s} {'users run':>10s} {'seconds':>9s} {'s for all users':>16s} "
          f"{'peak / input':>13s}")
    for name, n, secs, extrap, ratio in rows:
        r = "n/a" if np.isnan(ratio) else f"{ratio:.2f}x"
        print(f"{name:28s} {n:>10,} {secs:>9.2f} {extrap:>16.1f} {r:>13s}")
    print()
    ok_t = t_ours < 30.0
    ok_m = peak / nbytes(X) < 3.0
    print(f"goal: transform of {n_users:,} users < 30 s: {'met' if ok_t else 'NOT met'} ({t_ours:.1f} s); "
          f"peak memory < 3x input: {'met' if ok_m else 'NOT met'} ({peak / nbytes(X):.2f}x, "
          f"{peak / 2**20:,.0f} MiB over {nbytes(X) / 2**20:,.0f} MiB)")


if __name__ == "__main__":
    main()
