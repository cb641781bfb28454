"""Throughput of QuantizedPrivacyMapper.transform: dask LocalCluster (out of core) vs in memory.

The dask path releases a synthetic matrix of 10,000,000 users x 2,000 items
(50-100 ratings per user, about 750 million ratings), generated lazily block by
block on the workers, on a LocalCluster with a per-worker memory limit; nothing
is gathered on the client (each block's release is reduced to its number of
ratings). The in-memory path releases 1,000,000 users held in one CSR matrix.
Both use the same fitted mapper (25 clusters, taste space, fitted on 20,000
labeled users). The table gives users/s and ratings/s (input ratings), the
share of the time spent generating the data (measured by a generate-only run)
and the peak resident memory of each worker process / of the in-memory process.

Usage::

    MPLBACKEND=Agg .venv/bin/python benchmarks/bench_dask.py           # full run (several minutes)
    MPLBACKEND=Agg .venv/bin/python benchmarks/bench_dask.py --quick   # smoke run (~1 min)
    ... --fit-users 2000000     # also time the out-of-core fit (sampled quantizer + one pass)
"""

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp

N_ITEMS = 2000


def synthetic_block(index, n_users, n_items=N_ITEMS, seed=0, labels=False):
    """One block of users, 50-100 ratings each, whose items and ratings depend on a binary attribute.

    Cheap by design (O(ratings), no sorting, no sampling with weights) so that the
    benchmark measures the release rather than the generator: user ``u`` rates the
    items ``start_u + g_1 + ... + g_k`` (mod ``n_items``) with random gaps ``g`` small
    enough that the items are distinct, ``start_u`` drawn from a window that depends
    on the attribute; ratings are item mean + attribute effect, rounded, +-1 noise, on 1..5.
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
    world = np.random.default_rng(seed)  # item parameters, identical in every block
    item_mean = 3.2 + 0.6 * world.standard_normal(n_items)
    class_shift = 0.7 * world.standard_normal((2, n_items))

    a = rng.integers(0, 2, n_users)
    n_u = rng.integers(50, 101, n_users)
    indptr = np.concatenate([[0], np.cumsum(n_u)])
    rows = np.repeat(np.arange(n_users), n_u)
    max_gap = n_items // n_u  # (n_u - 1) * max_gap < n_items: distinct items in a row
    gaps = 1 + (rng.random(rows.size) * max_gap[rows]).astype(np.int64)
    pos = np.cumsum(gaps)
    pos -= np.repeat(pos[indptr[:-1]], n_u)  # restart at 0 for every user
    start = (a * (n_items // 2) + rng.integers(0, n_items // 3, n_users))[rows]
    cols = (start + pos) % n_items
    noise = rng.integers(-1, 2, rows.size, dtype=np.int8)  # -1, 0, +1
    values = np.clip(np.rint(item_mean[cols] + class_shift[a[rows], cols]) + noise, 1, 5)
    X = sp.csr_matrix((values, cols, indptr), shape=(n_users, n_items))
    return (X, a) if labels else X


def dask_matrix(n_users, block_rows, seed):
    import dask
    import dask.array as da

    blocks = []
    for i, start in enumerate(range(0, n_users, block_rows)):
        rows = min(block_rows, n_users - start)
        blocks.append(da.from_delayed(dask.delayed(synthetic_block)(i, rows, N_ITEMS, seed),
                                      shape=(rows, N_ITEMS), dtype=np.float64,
                                      meta=sp.csr_matrix((0, N_ITEMS))))
    return da.concatenate(blocks, axis=0)


def _labelled_block(index, n_users, seed, fraction=0.3):
    X, a = synthetic_block(index, n_users, N_ITEMS, seed, labels=True)
    rng = np.random.default_rng(np.random.SeedSequence(seed + 7, spawn_key=(index,)))
    return X, np.where(rng.random(n_users) < fraction, a, -1)


def dask_matrix_and_labels(n_users, block_rows, seed):
    """Lazy X (CSR blocks) and y (30 % of the users labeled), generated together per block."""
    import dask
    import dask.array as da

    xs, ys = [], []
    for i, start in enumerate(range(0, n_users, block_rows)):
        rows = min(block_rows, n_users - start)
        pair = dask.delayed(_labelled_block, nout=2)(i, rows, seed)
        xs.append(da.from_delayed(pair[0], shape=(rows, N_ITEMS), dtype=np.float64,
                                  meta=sp.csr_matrix((0, N_ITEMS))))
        ys.append(da.from_delayed(pair[1], shape=(rows,), dtype=np.int64))
    return da.concatenate(xs, axis=0), da.concatenate(ys)


def run_dask_fit(n_users, block_rows, seed, n_workers, memory_limit, sample_size):
    """Out-of-core fit: quantizer on a sample, prior and costs over every labeled user."""
    from dask.distributed import Client, LocalCluster

    from privrelease.mappers import QuantizedPrivacyMapper

    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, memory_limit=memory_limit,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X, y = dask_matrix_and_labels(n_users, block_rows, seed)
        m = QuantizedPrivacyMapper(n_clusters=25, max_leakage=0.02, random_state=0)
        with PeakSampler(lambda: client.run(_rss_mb)) as sampler, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            from privrelease.mappers import _dask

            _dask.fit(m, X, y, sample_size=sample_size)
            t = time.perf_counter() - t0
    return m, t, sampler.peak


def _nnz(block):
    return np.array([[block.nnz]], dtype=np.int64)


def fit_mapper(seed, n_fit=20000):
    from privrelease.mappers import QuantizedPrivacyMapper

    X, a = synthetic_block(10**6, n_fit, N_ITEMS, seed, labels=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = QuantizedPrivacyMapper(n_clusters=25, max_leakage=0.02, random_state=0).fit(X, a)
    return m


def _rss_mb():
    import psutil

    return psutil.Process().memory_info().rss / 2**20


class PeakSampler:
    """Largest value of ``sample()`` (a dict of MiB per process, or one number) seen while running."""

    def __init__(self, sample, interval=0.25):
        self.sample, self.interval, self.peak = sample, interval, 0.0
        self._stop = None

    def __enter__(self):
        import threading

        self._stop = threading.Event()

        def loop():
            while not self._stop.is_set():
                try:
                    value = self.sample()
                    value = max(value.values()) if isinstance(value, dict) else value
                    self.peak = max(self.peak, float(value))
                except Exception:  # noqa: BLE001 - a missed sample only lowers the estimate
                    pass
                self._stop.wait(self.interval)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_dask(mapper, n_users, block_rows, seed, n_workers, memory_limit):
    from dask.distributed import Client, LocalCluster

    from privrelease.mappers import _dask

    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, memory_limit=memory_limit,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        # warm-up: imports and first-call costs on every worker, outside the timings
        warm = _dask.transform(mapper, dask_matrix(2000 * n_workers, 2000, seed + 1))
        warm.map_blocks(_nnz, chunks=(1, 1), dtype=np.int64).sum().compute()
        X = dask_matrix(n_users, block_rows, seed)
        in_nnz = X.map_blocks(_nnz, chunks=(1, 1), dtype=np.int64).sum()
        # generate only
        t0 = time.perf_counter()
        total_in = int(in_nnz.compute())
        t_gen = time.perf_counter() - t0
        client.run(lambda: __import__("gc").collect())
        # generate + release (lazy transform, reduced per block)
        released = _dask.transform(mapper, X)
        out_nnz = released.map_blocks(_nnz, chunks=(1, 1), dtype=np.int64).sum()
        with PeakSampler(lambda: client.run(_rss_mb)) as sampler:
            t0 = time.perf_counter()
            total_out = int(out_nnz.compute())
            t_all = time.perf_counter() - t0
    return dict(users=n_users, ratings=total_in, released_ratings=total_out, seconds=t_all,
                generate_seconds=t_gen, peak_mb=sampler.peak, workers=n_workers,
                memory_limit=memory_limit, blocks=-(-n_users // block_rows))


def run_in_memory(mapper, n_users, block_rows, seed):
    parts = [synthetic_block(i, min(block_rows, n_users - s), N_ITEMS, seed)
             for i, s in enumerate(range(0, n_users, block_rows))]
    t0 = time.perf_counter()
    X = sp.vstack(parts, format="csr")
    del parts
    t_gen = time.perf_counter() - t0
    with PeakSampler(_rss_mb) as sampler:
        t0 = time.perf_counter()
        out = mapper.transform(X)
        t = time.perf_counter() - t0
    return dict(users=n_users, ratings=int(X.nnz), released_ratings=int(out.nnz), seconds=t,
                generate_seconds=float("nan"), peak_mb=sampler.peak, workers=1, memory_limit="-",
                blocks=1, matrix_mb=(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--users", type=int, default=None, help="users on the dask path (default 10,000,000)")
    parser.add_argument("--memory-users", type=int, default=None, help="users in memory (default 1,000,000)")
    parser.add_argument("--block-rows", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="3GiB", help="per dask worker")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fit-users", type=int, default=0,
                        help="also time the out-of-core dask fit on this many users (0: skip)")
    parser.add_argument("--fit-sample", type=int, default=50_000, help="users the quantizer is learnt on")
    args = parser.parse_args()
    n_dask = args.users or (200_000 if args.quick else 10_000_000)
    n_mem = args.memory_users or (100_000 if args.quick else 1_000_000)
    block = min(args.block_rows, n_dask)

    t0 = time.perf_counter()
    mapper = fit_mapper(args.seed)
    print(f"fitted QuantizedPrivacyMapper(n_clusters=25) on 20,000 labeled users in {time.perf_counter() - t0:.1f} s "
          f"(leakage {mapper.leakage_:.4f} bits, {mapper.n_clusters_} clusters)")
    mem = run_in_memory(mapper, n_mem, block, args.seed)
    print(f"in-memory matrix: {mem['matrix_mb']:.0f} MiB CSR for {n_mem:,} users")
    dsk = run_dask(mapper, n_dask, block, args.seed, args.workers, args.memory_limit)

    header = (f"{'path':<28}{'users':>12}{'ratings':>14}{'blocks':>8}{'time (s)':>10}{'gen. share':>11}"
              f"{'users/s':>12}{'ratings/s':>13}{'peak RSS/process (MiB)':>24}")
    print()
    print(header)
    print("-" * len(header))
    for name, r in ((f"in memory (1 process)", mem),
                    (f"dask LocalCluster {r_w(dsk)}", dsk)):
        share = r["generate_seconds"] / r["seconds"] if np.isfinite(r["generate_seconds"]) else float("nan")
        share_s = "-" if not np.isfinite(share) else f"{100 * share:.0f} %"
        print(f"{name:<28}{r['users']:>12,}{r['ratings']:>14,}{r['blocks']:>8}{r['seconds']:>10.1f}{share_s:>11}"
              f"{r['users'] / r['seconds']:>12,.0f}{r['ratings'] / r['seconds']:>13,.0f}{r['peak_mb']:>24,.0f}")
    print()
    print(f"dask: {dsk['workers']} worker processes x 1 thread, memory_limit={dsk['memory_limit']} each; "
          f"generate-only pass {dsk['generate_seconds']:.1f} s; the in-memory time excludes generation. "
          f"Released ratings: in memory {mem['released_ratings']:,}, dask {dsk['released_ratings']:,}.")


    if args.fit_users:
        m, t, peak = run_dask_fit(args.fit_users, block, args.seed, args.workers, args.memory_limit,
                                  args.fit_sample)
        print()
        print(f"dask fit on {args.fit_users:,} users ({m.n_labeled_:,} labeled, quantizer learnt on "
              f"{min(args.fit_sample, m.n_labeled_):,}): {t:.1f} s = {args.fit_users / t:,.0f} users/s, "
              f"peak RSS/worker {peak:,.0f} MiB; leakage {m.leakage_:.4f} bits "
              f"(prior I(A;C) = {m.prior_leakage_:.4f}), {m.n_clusters_} clusters")


def r_w(r):
    return f"{r['workers']}w"


if __name__ == "__main__":
    main()
