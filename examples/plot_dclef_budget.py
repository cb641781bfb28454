"""Buying privacy for a rating prediction: RMSE versus the auction budget.

A recommender predicts a new user's rating of one item from the ratings other
users gave it. Those ratings are private, so each prediction is released as a
DCLEF (Dandekar, Fawaz and Ioannidis 2012, eq. 4) whose raters are paid through
the truthful FairInnerProduct auction (Alg. 1). The weights come from public
profiles (Nadaraya-Watson similarity, Sec. 5). A larger budget buys more of the
predictor's weight, so less of it is replaced by the midpoint rating and less
Laplace noise is needed: the RMSE falls toward that of the non-private predictor.

Run: ``MPLBACKEND=Agg python examples/plot_dclef_budget.py`` (writes
``plot_dclef_budget.png`` in the current directory and prints the curve; ``--quick``
uses fewer users and budgets, for the tests).
"""

import sys

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import TruncatedSVD

from privrelease.accounting import PrivacyAccountant
from privrelease.auctions import DCLEFEstimator
from privrelease.datasets import make_ratings

QUICK = "--quick" in sys.argv[1:]
rng = np.random.default_rng(0)
n_users, n_items = (500, 60) if QUICK else (1500, 120)
R, _, _ = make_ratings(n_users=n_users, n_items=n_items, mean_ratings_per_user=30.0, random_state=0)
R = R.tocsc()
item = int(np.argmax(R.getnnz(axis=0)))             # the most rated item
raters = R[:, item].nonzero()[0]
d = np.asarray(R[raters, item].todense()).ravel()    # private ratings in [1, 5]
profile = R[raters].tocsr()
profile[:, item] = 0                                 # public profile: the other items
profile.eliminate_zeros()
Y = TruncatedSVD(8, random_state=0).fit_transform(profile)
Y /= np.median(np.linalg.norm(Y, axis=1))

perm = rng.permutation(d.size)
n_test = 30 if QUICK else 100
test, train = perm[:n_test], perm[n_test:]
costs = rng.lognormal(0.0, 1.0, size=train.size)     # unit costs, independent of ratings

budgets = [0.0, 1, 10, 100] if QUICK else [0.0, 0.1, 0.3, 1, 3, 10, 30, 100, 300]
rmse, bought = [], []
for B in budgets:
    acc = PrivacyAccountant()                         # records what the queries spend
    est = DCLEFEstimator(budget=B, predictor="nadaraya_watson", bandwidth=0.5,
                         data_range=(1, 5), accountant=acc, random_state=0)
    est.fit(Y[train], d[train], unit_costs=costs)
    pred = est.predict(Y[test])
    rmse.append(np.sqrt(np.mean((pred - d[test]) ** 2)))
    q = acc.population_records(est.population_)
    bought.append((q["value"] / q["total_weight"]).mean())
W = est.auction_weights(Y[test])
rmse_np = np.sqrt(np.mean((W @ d[train] - d[test]) ** 2))

print(f"{'budget':>7} | {'RMSE':>6} | weight bought")
for B, r, b in zip(budgets, rmse, bought):
    print(f"{B:>7} | {r:6.3f} | {b:.3f}")
print(f"non-private Nadaraya-Watson predictor: RMSE {rmse_np:.3f}")

fig, ax = plt.subplots(figsize=(5.5, 3.8))
x = np.maximum(budgets, 0.03)
ax.plot(x, rmse, "o-", label="DCLEF release, FairInnerProduct")
ax.axhline(rmse_np, color="k", ls="--", label="non-private predictor")
ax.set_xscale("log")
ax.set_xlabel("budget per prediction (B = 0 plotted at 0.03)")
ax.set_ylabel("RMSE of the released rating")
ax.legend()
fig.tight_layout()
fig.savefig("plot_dclef_budget.png", dpi=110)
print("wrote plot_dclef_budget.png")
