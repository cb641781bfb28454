"""Privacy auctions for a recommender (Dandekar, Fawaz and Ioannidis, 2012).

A service predicts a new user's rating of one item from the private ratings other
users gave it. The prediction is a linear predictor (Nadaraya-Watson weights
from public profiles, Sec. 5); the raters are paid, through the truthful
FairInnerProduct auction (Alg. 1), for the differential privacy each released
prediction costs them, and the release is the bought DCLEF (eq. 4).

Data: ``privrelease.datasets.make_ratings`` (ratings 1-5). The target item is
the most rated one; individuals are the users who rated it (train / test split
of the raters). A user's public profile is a 10-dimensional SVD embedding of her
ratings of the OTHER items (treated as public here). Unit costs are drawn
log-normal, independent of the ratings.

Sections: RMSE versus budget (beside the non-private linear predictor and the
zero-budget release), payments histogram, fraction of weight bought and the
approximation ratio against the fractional bound of Lemma 6, a truthfulness
check (no misreport of a unit cost raises its owner's utility).
"""

import numpy as np
import pandas as pd

from .._schema import Bool, Float, Int, Seed, Seq, quick_values

__all__ = ["run"]

PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "n_users": Int(50, 200_000, why="the SVD embedding and the Nadaraya-Watson weights of every query "
                                   "against all training raters are held in memory"),
    "n_items": Int(30, 20_000, why="the synthetic rating matrix and its 10-dimensional SVD are held in memory"),
    # 1e308 passed and the RMSE plot's log axis, which reaches the decade above the largest budget, overflowed
    "budgets": Seq(Float(0, 1e300, why="the budgets are plotted on a log axis, which extends to the power of ten "
                                       "above the largest and must stay within float64's range (1.8e308)"),
                   max_len=50, why="every budget runs one auction per query"),
    "test_fraction": Float(0, 1, low_open=True, high_open=True),
    "bandwidth": Float(0, low_open=True),
    "cost_sigma": Float(0, 10),
    "max_queries": Int(1, 10_000, why="every query runs one auction per budget and a truthfulness check"),
}


def _setup(n_users, n_items, seed):
    from sklearn.decomposition import TruncatedSVD

    from ...datasets import make_ratings

    R, _, _ = make_ratings(n_users=n_users, n_items=n_items, mean_ratings_per_user=30.0,
                           random_state=seed)
    R = R.tocsc()
    target = int(np.argmax(R.getnnz(axis=0)))
    raters = R[:, target].nonzero()[0]
    d = np.asarray(R[raters, target].todense()).ravel()
    others = R[raters].tocsr()
    others[:, target] = 0
    others.eliminate_zeros()
    # centre each user's ratings so the embedding reflects taste, not rating volume
    others = others.tocsr()
    means = np.asarray(others.sum(axis=1)).ravel() / np.maximum(others.getnnz(axis=1), 1)
    others.data -= np.repeat(means, np.diff(others.indptr))
    Y = TruncatedSVD(10, random_state=seed).fit_transform(others)
    Y /= np.median(np.linalg.norm(Y, axis=1)) + 1e-12
    return Y, d, target


@quick_values({"n_users": 600, "n_items": 80, "max_queries": 60, "budgets": (0.0, 1.0, 10.0, 100.0)})
def run(report, *, random_state=0, quick=False, n_users=3000, n_items=200,
        budgets=(0.0, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0), test_fraction=0.2, bandwidth=0.5,
        cost_sigma=1.0, max_queries=300):
    """Run the experiment; returns headline numbers.

    Parameters
    ----------
    report : privrelease.runner.Report
    random_state : int, default=0
    quick : bool, default=False
        Small data (600 users, 60 queries, 4 budgets): a few seconds.
    n_users, n_items : int
        Size of the synthetic rating matrix.
    budgets : sequence of float
        Budget ``B`` of each query's auction.
    test_fraction : float
        Fraction of the item's raters used as new users (queries).
    bandwidth : float
        Nadaraya-Watson bandwidth (profiles are scaled to median norm 1).
    cost_sigma : float
        Unit costs are LogNormal(0, cost_sigma).
    max_queries : int
        At most this many test users are queried.
    """
    import matplotlib.pyplot as plt

    from ...accounting import PrivacyAccountant
    from ...auctions import DCLEFEstimator, fair_inner_product, fractional_dclef

    rng = np.random.default_rng(random_state)
    Y, d, target = _setup(n_users, n_items, random_state)
    n = d.size
    perm = rng.permutation(n)
    n_test = min(max(1, int(test_fraction * n)), max_queries)
    test, train = perm[:n_test], perm[n_test:]
    Ytr, dtr, Yte, dte = Y[train], d[train], Y[test], d[test]
    costs = rng.lognormal(0.0, cost_sigma, size=train.size)
    data_range = (1.0, 5.0)

    report.section("Setup")
    report.text(
        f"Target item {target} of a synthetic {n_users} x {n_items} rating matrix: {n} raters, "
        f"{train.size} sellers (their rating is private) and {n_test} new users whose rating is "
        f"predicted. Nadaraya-Watson weights (bandwidth {bandwidth}) from 10-dimensional public "
        f"profiles; unit costs LogNormal(0, {cost_sigma}); ratings in [1, 5] (Delta = 4). Every "
        "query runs FairInnerProduct with the budget B and releases the bought DCLEF (eq. 4).")

    rows, pay_example, weights = [], None, None
    for B in budgets:
        acc = PrivacyAccountant()
        est = DCLEFEstimator(budget=B, predictor="nadaraya_watson", bandwidth=bandwidth,
                             data_range=data_range, accountant=acc, random_state=random_state)
        est.fit(Ytr, dtr, unit_costs=costs)
        pred = est.predict(Yte)
        if weights is None:
            weights = est.auction_weights(Yte)
        q = acc.population_records(est.population_)
        # the queries that bought the cheap prefix [k]; "none" (nothing bought, as at B = 0) is neither branch
        greedy = (q["branch"] == "greedy").to_numpy()
        frac_bound = np.array([fractional_dclef(costs, w, B).value if B > 0 else 0.0
                               for w in weights])
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(frac_bound > 0, q["value"].to_numpy() / frac_bound, np.nan)
        rows.append(dict(
            budget=B,
            rmse=float(np.sqrt(np.mean((pred - dte) ** 2))),
            rmse_greedy_queries=float(np.sqrt(np.mean((pred - dte)[greedy] ** 2)))
            if greedy.any() else np.nan,
            weight_bought=float((q["value"] / q["total_weight"]).mean()),
            n_bought=float(q["n_selected"].mean()),
            payment_per_query=float(q["total_payment"].mean()),
            max_epsilon=float(q["max_epsilon"].max()),
            sqrt_distortion=float(np.sqrt(q["distortion"]).mean()),
            value_over_fractional_bound=float(np.nanmean(ratio)) if np.isfinite(ratio).any() else np.nan,
            max_weight_branch=float((q["branch"] == "max_weight").mean()),
        ))
        if pay_example is None or B == budgets[len(budgets) // 2]:
            pay_example = (B, acc.payments(est.population_).data.copy())
    curve = pd.DataFrame(rows)
    rmse_np = float(np.sqrt(np.mean((weights @ dtr - dte) ** 2)))
    rmse_mid = float(np.sqrt(np.mean((3.0 - dte) ** 2)))

    report.section("RMSE versus budget")
    report.table(curve, "rmse_vs_budget",
                 caption=f"Per budget: RMSE of the released predictions (overall, and over the "
                         f"queries where the auction bought the cheap prefix [k] rather than the "
                         f"single heaviest individual i*; NaN where no query did: at B = 0 none buys "
                         f"anything); mean fraction of the "
                         f"predictor's weight bought; mean number bought; mean payment per query; "
                         f"largest eps_i; mean sqrt of the worst-case distortion (eq. 6); mean "
                         f"w(O) / fractional bound (Lemma 6, >= OPT; Theorem 3 guarantees >= 1/5 "
                         f"of OPT). Non-private linear predictor RMSE {rmse_np:.3f}; constant "
                         f"midpoint 3 RMSE {rmse_mid:.3f}.")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    positive = [b for b in budgets if b > 0]   # budgets=[0.0] alone: plotted at 1 (min() of nothing failed)
    xb = np.maximum(curve["budget"].to_numpy(), min(positive) / 3 if positive else 1.0)
    axes[0].plot(xb, curve["rmse"], "o-", label="DCLEF release (FairInnerProduct)")
    axes[0].axhline(rmse_np, color="k", ls="--", label="non-private predictor")
    axes[0].axhline(rmse_mid, color="gray", ls=":", label="constant 3")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("budget B per query (B = 0 plotted at the left)")
    axes[0].set_ylabel("RMSE")
    axes[0].legend(fontsize=8)
    axes[1].plot(xb, curve["weight_bought"], "s-", label="weight bought w(O)/W")
    axes[1].plot(xb, curve["value_over_fractional_bound"], "^-", label="w(O) / fractional bound")
    axes[1].set_xscale("log")
    axes[1].set_ylim(0, 1.05)
    axes[1].set_xlabel("budget B per query")
    axes[1].legend(fontsize=8)
    report.figure(fig, "rmse_vs_budget", caption="RMSE and fraction bought versus budget")

    report.section("Payments")
    B_ex, pays = pay_example
    fig, ax = plt.subplots(figsize=(5, 3.5))
    if pays.size:
        ax.hist(np.log10(pays[pays > 0]), bins=40)
    ax.set_xlabel("log10 payment (bought individuals, all queries)")
    ax.set_ylabel("count")
    ax.set_title(f"B = {B_ex}")
    report.figure(fig, "payments_histogram", caption=f"Payments at budget {B_ex}")

    report.section("Truthfulness check")
    B_t = budgets[len(budgets) // 2] if budgets[len(budgets) // 2] > 0 else max(budgets)
    factors = np.array([0.0, 0.25, 0.5, 0.9, 0.99, 1.01, 1.1, 2.0, 4.0, 100.0, np.inf])
    trows = []
    for qi in range(min(5, len(weights))):
        w = weights[qi]
        truth = fair_inner_product(costs, w, B_t)
        # the individuals with most weight, some bought and some not
        for i in np.argsort(-np.abs(w))[:4]:
            u_true = truth.utilities[i]
            best, best_z = u_true, costs[i]
            zs = np.concatenate([costs[i] * factors, np.sort(costs)[:: max(1, costs.size // 50)]])
            for z in zs:
                v = costs.copy()
                v[i] = z
                r = fair_inner_product(v, w, B_t)
                u = r.payments[i] - (costs[i] * r.epsilons[i] if r.selected[i] else 0.0)
                if u > best + 1e-12:   # float round-off is not a gain
                    best, best_z = u, z
            trows.append(dict(query=qi, individual=int(train[i]), true_cost=costs[i],
                              bought=bool(truth.selected[i]), utility_truthful=u_true,
                              best_misreport=best_z, utility_best=best, gain=best - u_true))
    ttab = pd.DataFrame(trows)
    report.table(ttab, "truthfulness_check",
                 caption=f"Budget {B_t}: for the 4 heaviest individuals of 5 queries, the best "
                         f"utility over {factors.size} multiples of the true cost and 50 other "
                         "reports. A positive gain would contradict Theorem 3.")
    return dict(rmse_nonprivate=rmse_np, rmse_midpoint=rmse_mid,
                # by budget, not by row: --set budgets may be in any order, and without 0 there is no zero budget
                rmse_at_max_budget=float(curve["rmse"].iloc[int(np.argmax(curve["budget"].to_numpy()))]),
                rmse_at_zero_budget=float(curve.loc[curve["budget"] == 0, "rmse"].iloc[0])
                if (curve["budget"] == 0).any() else float("nan"),
                max_truthfulness_gain=float(ttab["gain"].max()))
