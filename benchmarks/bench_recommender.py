"""Benchmark SurpriseRecommender: fit time and RMSE, and fold-in versus refitting.

Run:  MPLBACKEND=Agg .venv/bin/python benchmarks/bench_recommender.py [--quick]

Table 1 (one run, same data, same held-out ratings): fit time and held-out RMSE
of SVD, BaselineOnly and the global / item mean on make_ratings
(10,000 users x 1,000 items; --quick: 2,000 x 300).

Table 2: predicting 10 % of the users that were NOT in training (their
training ratings given at prediction time):
  * ours   - vectorised closed-form fold-in (bucketed batched ridge solves);
  * loop   - the obvious alternative, one np.linalg.solve per user;
  * refit  - retrain SVD on everybody (what you would do without fold-in).
Throughput is new users per second; RMSE on the new users' held-out ratings.
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from privrelease.datasets import make_ratings
from privrelease.recommender import SurpriseRecommender, holdout_split


def loop_fold_in(rec, X):
    """Per-user ridge solve: the plain-python alternative to the vectorised fold-in."""
    X = sp.csr_matrix(X)
    Q, bi, mu = rec.item_factors_, rec.item_bias_, rec.global_mean_
    algo = rec.algorithm_
    f = Q.shape[1]
    reg = np.r_[algo.reg_bu, np.full(f, algo.reg_pu)]
    B = np.zeros(X.shape[0])
    P = np.zeros((X.shape[0], f))
    for u in range(X.shape[0]):
        lo, hi = X.indptr[u], X.indptr[u + 1]
        if hi == lo:
            continue
        J = X.indices[lo:hi]
        F = np.hstack([np.ones((J.size, 1)), Q[J]])
        t = X.data[lo:hi] - mu - bi[J]
        z = np.linalg.solve(F.T @ F + np.diag(reg * J.size), F.T @ t)
        B[u], P[u] = z[0], z[1:]
    return B, P


def rmse_at(pred_fn, Y):
    rows = np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr))
    return float(np.sqrt(np.mean((pred_fn(rows, Y.indices) - Y.data) ** 2)))


def main(quick=False):
    n_users, n_items = (2_000, 300) if quick else (10_000, 1_000)
    t0 = time.perf_counter()
    X, _, _ = make_ratings(n_users, n_items, random_state=0)
    t_gen = time.perf_counter() - t0
    X_tr, X_te = holdout_split(X, 0.1, random_state=0)
    print(f"make_ratings({n_users}, {n_items}): {X.nnz} ratings in {t_gen:.2f} s; "
          f"{X_te.nnz} held out\n")

    # ---- table 1
    mu = X_tr.data.mean()
    cnt = X_tr.getnnz(axis=0)
    item_mean = np.where(cnt > 0, np.asarray(X_tr.sum(axis=0)).ravel() / np.maximum(cnt, 1), mu)
    rows = [("global mean", 0.0, float(np.sqrt(np.mean((X_te.data - mu) ** 2)))),
            ("item mean", 0.0, float(np.sqrt(np.mean((X_te.data - item_mean[X_te.indices]) ** 2))))]
    fitted = {}
    for name in ("SVD", "BaselineOnly"):
        t0 = time.perf_counter()
        rec = SurpriseRecommender(name, random_state=0).fit(X_tr)
        t_fit = time.perf_counter() - t0
        rows.append((name, t_fit, rec.rmse(X_tr, X_te)))
        fitted[name] = rec
    print("Table 1: fit time and held-out RMSE (fold-in of the training rows)")
    print(f"{'model':<14}{'fit s':>10}{'RMSE':>10}")
    for name, t, r in rows:
        print(f"{name:<14}{t:>10.2f}{r:>10.4f}")

    # ---- table 2
    n_new = n_users // 10
    new, old = np.arange(n_new), np.arange(n_new, n_users)
    X_new, Y_new = X_tr[new], X_te[new]
    for n_factors in (100, 10):
        params = {"n_factors": n_factors}
        print(f"\nTable 2: {n_new} new users (not in training), SVD, n_factors={n_factors}")
        print(f"{'method':<34}{'seconds':>10}{'users/s':>12}{'RMSE':>10}")
        base = SurpriseRecommender("SVD", algo_params=params, random_state=0).fit(X_tr[old])
        base.rmse(X_new[:5], Y_new[:5])  # warm-up (thread-pool scan, imports)

        t0 = time.perf_counter()
        rmse_ours = base.rmse(X_new, Y_new)
        t_ours = time.perf_counter() - t0

        t0 = time.perf_counter()
        with threadpool_limits(1, user_api="blas"):  # fair: small solves are faster single-threaded
            B, P = loop_fold_in(base, X_new)
        rmse_loop = rmse_at(lambda r, c: np.clip(
            base.global_mean_ + B[r] + base.item_bias_[c]
            + np.einsum("ij,ij->i", P[r], base.item_factors_[c]), *base.rating_scale_), Y_new)
        t_loop = time.perf_counter() - t0

        t0 = time.perf_counter()
        refit = SurpriseRecommender("SVD", algo_params=params, random_state=0).fit(X_tr)
        rmse_refit = rmse_at(refit.predict_pairs, Y_new)
        t_refit = time.perf_counter() - t0

        for name, t, r in [("ours: vectorised fold-in + predict", t_ours, rmse_ours),
                           ("loop: per-user solve, 1 thread", t_loop, rmse_loop),
                           ("refit SVD on all users", t_refit, rmse_refit)]:
            print(f"{name:<34}{t:>10.3f}{n_new / t:>12.0f}{r:>10.4f}")
        diff = np.abs(base._mf_fold_in(base._check_X(X_new))[0] - B).max()
        print(f"fold-in agrees with the per-user loop: max |diff| in b_u = {diff:.2e}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data (a few seconds)")
    main(parser.parse_args().quick)
