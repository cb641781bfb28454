"""Fit and release a rating matrix on a dask cluster, then sweep the privacy budget with joblib's dask backend.

The same code runs on a laptop (a LocalCluster is started) or on a real
cluster: pass the scheduler's address::

    python examples/dask_cluster.py                       # LocalCluster, 2 workers
    python examples/dask_cluster.py tcp://scheduler:8786  # an existing cluster
    python examples/dask_cluster.py --quick               # small data, in-process worker (tests)

What happens:

* ``QuantizedPrivacyMapper.fit`` on a row-chunked dask array learns the
  quantizer on a sample of the labeled users and counts the prior ``q(a, c)``
  block by block over all of them (Algorithm 2 of Salamatian et al.);
* ``transform`` is lazy: every block is released on the worker that holds it,
  with privacy draws from that worker's operating-system entropy
  (``random_state=None``); nothing is gathered until asked for;
* ``privacy_utility_curve(n_jobs=...)`` inside ``joblib.parallel_config(backend="dask")``
  runs its fits, folds and attacks as dask tasks.
"""

import sys
import warnings

import dask.array as da
import joblib
import numpy as np
from dask.distributed import Client, LocalCluster

from privrelease.datasets import make_ratings
from privrelease.evaluation import privacy_utility_curve
from privrelease.mappers import QuantizedPrivacyMapper


def main(address=None, quick=False):
    if address:
        client = Client(address)
    elif quick:  # one in-process worker: no process start-up, same scheduler and code paths
        client = Client(LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                     dashboard_address=None))
    else:
        client = Client(LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None))
    print(client)

    n_users, n_items, block = (600, 30, 200) if quick else (6000, 120, 1500)
    R, a, _ = make_ratings(n_users, n_items, random_state=0)
    rng = np.random.default_rng(12345)  # not make_ratings' seed: its stream drew the attribute
    y = np.where(rng.random(a.size) < 0.3, a, -1)  # 30 % of the users disclosed the attribute
    X = da.from_array(R.tocsr(), chunks=(block, R.shape[1]), asarray=False)
    print(f"ratings: {X.shape[0]} users x {X.shape[1]} items in {X.numblocks[0]} blocks of CSR rows")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapper = QuantizedPrivacyMapper(n_clusters=6 if quick else 12, max_leakage=0.02).fit(X, y)
    print(f"fitted on {mapper.n_labeled_} labeled users: leakage {mapper.leakage_:.4f} bits "
          f"(before: {mapper.prior_leakage_:.4f}), distortion {mapper.distortion_:.3f}")

    released = mapper.transform(X)  # lazy: a dask array with X's chunks
    per_block = released.map_blocks(lambda b: np.array([[b.nnz]]), chunks=(1, 1), dtype=np.int64)
    print(f"released (lazily) {released.shape}, {int(per_block.sum().compute())} ratings after release "
          f"vs {R.nnz} before")

    with joblib.parallel_config(backend="dask"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = 300 if quick else 1500
        curve = privacy_utility_curve(QuantizedPrivacyMapper(n_clusters=4 if quick else 8, random_state=0),
                                      R[:m], a[:m], max_leakages=[0.0] if quick else [0.0, 0.05, 0.2],
                                      cv=2, attack_models=("logistic",),
                                      attack_features=("values",), random_state=0, n_jobs=2, verbose=0)
    print(curve.frame[["max_leakage", "leakage_bits", "distortion", "rmse_released"]].to_string(index=False))
    client.close()


if __name__ == "__main__":
    args = [arg for arg in sys.argv[1:] if arg != "--quick"]
    main(args[0] if args else None, quick="--quick" in sys.argv[1:])
