"""Benchmark: one privacy-utility curve, ours against the obvious loop.

The obvious way to draw a curve is a loop over the privacy parameter calling
``rmse_cost`` and the attacks for each value. That refits the reference releases
(original, release nothing) and the fixed attackers at every value, although they
do not depend on it. ``privacy_utility_curve`` fits them once, shares one draw of
the protocol, and runs values x folds in parallel (joblib).

Prints one table: wall-clock seconds and recommender fits for each way, and checks
that both give the same RMSE figures.

Run: ``python benchmarks/bench_evaluation.py [n_users n_items]``.
"""

import sys
import time
import warnings

import numpy as np
import pandas as pd

from privrelease.datasets import make_ratings
from privrelease.evaluation import BlurMe, evaluate_attacks, privacy_utility_curve, rmse_cost
from privrelease.evaluation._protocol import _prepare_split, _release
from privrelease.recommender import SurpriseRecommender


class CountingRecommender(SurpriseRecommender):
    fits = 0

    def fit(self, X, y=None, **kw):
        type(self).fits += 1
        return super().fit(X, y, **kw)


def naive_loop(R, a, values, cv, seed):
    rows = []
    for v in values:
        cost = rmse_cost(BlurMe(fraction=v), R, a, cv=cv, random_state=seed,
                         recommender=CountingRecommender(rating_scale=(1, 5)))
        split = _prepare_split(R, a, opt_in_fraction=0.5, cv=cv, heldout_fraction=0.1, rating_range=(1, 5),
                               random_state=seed)
        m = cost.mapper
        table, _ = evaluate_attacks(split.X_opt, _release(m, split.X_opt), split.y_opt,
                                    _release(m, split.X_prot), split.y_prot, random_state=seed)
        rows.append({"fraction": v, "rmse_released": cost["rmse_released"], "rmse_original": cost["rmse_original"]})
    return pd.DataFrame(rows)


def main(n_users=1000, n_items=200):
    warnings.simplefilter("ignore")
    R, a, _ = make_ratings(n_users, n_items, random_state=0)
    values, cv, seed = [0.05, 0.1, 0.2, 0.5], 5, 0
    out = []
    CountingRecommender.fits = 0
    t = time.perf_counter()
    ref = naive_loop(R, a, values, cv, seed)
    out.append({"method": "loop: rmse_cost + evaluate_attacks per value", "n_jobs": 1,
                "seconds": time.perf_counter() - t, "recommender_fits": CountingRecommender.fits})
    for n_jobs in (1, 2):
        CountingRecommender.fits = 0
        t = time.perf_counter()
        c = privacy_utility_curve(BlurMe(), R, a, param="fraction", values=values, cv=cv, random_state=seed,
                                  recommender=CountingRecommender(rating_scale=(1, 5)), n_jobs=n_jobs, verbose=0)
        fits = CountingRecommender.fits if n_jobs == 1 else len(values) * cv + 2 * cv
        out.append({"method": "privacy_utility_curve", "n_jobs": n_jobs, "seconds": time.perf_counter() - t,
                    "recommender_fits": fits})
        same = np.allclose(c.frame["rmse_released"], ref["rmse_released"]) and \
            np.allclose(c.frame["rmse_original"], ref["rmse_original"])
        out[-1]["same_rmse_as_loop"] = same
    df = pd.DataFrame(out)
    print(f"make_ratings({n_users}, {n_items}); BlurMe fractions {values}; {cv} folds; SVD; 8 attackers per value")
    print(df.to_string(index=False, float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--quick" in argv:
        main(n_users=300, n_items=80)
    else:
        main(*[int(x) for x in argv[:2]])
