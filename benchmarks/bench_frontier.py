"""QuantizedPrivacyMapper's frontier: RMSE cost at perfect privacy of each idea, side by side.

Usage::

    python benchmarks/bench_frontier.py [--quick] [--attacks]

For every data set (``make_ratings`` with a 2-, 3- and 6-class attribute in the
setting of docs/frontier.md, the Politics-and-TV preset, and
``make_realistic_ratings`` when the library has it) prints one row: the
relative RMSE increase of releasing nothing, of the previous default
(``profile="cluster"``), and of each frontier configuration, all at perfect
privacy (the default ``max_leakage=0``), measured by
:func:`privrelease.evaluation.rmse_cost` (Surprise SVD, half the users opted in,
``cv`` folds, one protocol draw shared by every column). ``--attacks`` adds a
second table, the worst adaptive attacker's AUC of each configuration
(:func:`privrelease.evaluation.privacy_utility_curve`; slower). ``--quick``:
the 2-class set and Politics-and-TV, three configurations, 2 folds.
"""

import argparse
import time
import warnings

import numpy as np

from privrelease import datasets
from privrelease.evaluation import privacy_utility_curve, rmse_cost
from privrelease.mappers import QuantizedPrivacyMapper

PROPORTIONS = {2: [0.6, 0.4], 3: [0.45, 0.35, 0.2], 6: [0.25, 0.2, 0.2, 0.15, 0.1, 0.1]}

CONFIGS = {
    "old default (cluster)": dict(profile="cluster"),
    "posterior (new default)": dict(),
    "posterior + 3 refinements": dict(n_refine=3),
    "posterior, k=100": dict(n_clusters=100),
    "posterior, k=100, sqeucl., 3 ref.": dict(n_clusters=100, metric="sqeuclidean", n_refine=3),
    "cluster, k=100": dict(profile="cluster", n_clusters=100),
}
QUICK = ("old default (cluster)", "posterior (new default)", "posterior, k=100")


def _data_sets(quick):
    out = {}
    for nc in (2,) if quick else (2, 3, 6):
        X, y, *_ = datasets.make_ratings(
            n_users=1000, n_items=1000, n_factors=10, attribute_strength=0.5, attribute_proportion=PROPORTIONS[nc],
            mean_ratings_per_user=60, activity_skew=1.2, popularity_skew=1.1, noise=0.8, random_state=1)
        out[f"make_ratings, {nc} classes"] = (X, y)
    X, y = datasets.make_politics_tv(random_state=0)[:2]
    out["Politics-and-TV"] = (X, y)
    if not quick and hasattr(datasets, "make_realistic_ratings"):
        X, y = datasets.make_realistic_ratings(random_state=0)[:2]
        out["make_realistic_ratings"] = (X, y)
    return out


def _table(title, columns, rows):
    print(f"\n{title}\n")
    print("| data set | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, values in rows.items():
        print(f"| {name} | " + " | ".join(values) + " |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two data sets, three configurations, 2 folds")
    parser.add_argument("--attacks", action="store_true", help="also the worst adaptive attacker's AUC (slower)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    cv = 2 if args.quick else 3
    names = QUICK if args.quick else tuple(CONFIGS)
    rmse_rows, auc_rows = {}, {}
    t0 = time.perf_counter()
    for data_name, (X, y) in _data_sets(args.quick).items():
        row, auc = [], []
        for name in names:
            mapper = QuantizedPrivacyMapper(random_state=0, **CONFIGS[name])
            s = rmse_cost(mapper, X, y, cv=cv, random_state=0).summary
            if not row:
                row.append(f"+{100 * s['rel_increase_release_nothing']:.2f}%")
            row.append(f"{100 * s['rel_increase_released']:+.2f}%")
            if args.attacks:
                f = privacy_utility_curve(mapper, X, y, cv=cv, random_state=0, verbose=0).frame
                auc.append(f"{float(np.asarray(f['worst_auc_adaptive'])[0]):.3f}")
            print(f"  {data_name:28s} {name:36s} {row[-1]:>8s}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        rmse_rows[data_name] = row
        auc_rows[data_name] = auc
    _table(f"Relative RMSE increase at perfect privacy (rmse_cost, cv={cv}, random_state=0)",
           ["release nothing", *names], rmse_rows)
    if args.attacks:
        _table("Worst adaptive attacker's AUC (privacy_utility_curve)", list(names), auc_rows)


if __name__ == "__main__":
    main()
