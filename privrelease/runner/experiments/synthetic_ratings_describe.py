"""Describe the synthetic rating data sets and the recommender's baseline accuracy.

Sections:

1. Politics-and-TV preset (``make_politics_tv``): counts, the most watched
   shows, the privacy threat of the paper's Sec. VI-C (mutual information and
   MAP accuracy of the 5 most watched binarized shows; logistic-regression AUC
   on ratings and on "rated or not" indicators).
2. ``make_ratings``: how the attribute leaks as ``attribute_strength`` grows
   (AUC of a logistic regression), popularity and activity skew (Gini).
3. Recommender: SVD / BaselineOnly RMSE on the politics preset with the
   paper's protocol (5 folds of users, 10 % of each test user's ratings held
   out; Table I RMSE1 is about 1.18-1.25 on the real survey).
"""

import numpy as np
import pandas as pd

from .._schema import Bool, Float, Int, Seed, Seq, quick_values

__all__ = ["run"]

PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "strengths": Seq(Float(0, 20), max_len=20, why="each strength draws one data set and fits attackers"),
    "n_users": Int(50, 100_000, why="the recommender is cross-validated on every user (time and memory grow "
                                    "with n_users)"),
    "n_items": Int(20, 10_000, why="the attackers work on users x items features"),
    "n_folds": Int(2, 20),
    "heldout_fraction": Float(0, 1, low_open=True, high_open=True),
}


def _gini(x):
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    return float((2 * np.arange(1, n + 1) - n - 1) @ x / (n * x.sum()))


def _auc(X, a, seed, cv=5):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    folds = StratifiedKFold(cv, shuffle=True, random_state=seed)
    return float(cross_val_score(LogisticRegression(solver="liblinear"), X, a, cv=folds,
                                 scoring="roc_auc").mean())


def _top5_threat(X, a):
    B = (X.toarray() >= 4).astype(int)
    top5 = np.argsort(-X.getnnz(axis=0), kind="stable")[:5]
    keys = B[:, top5] @ (2 ** np.arange(5))
    joint = np.zeros((32, 2))
    np.add.at(joint, (keys, a), 1.0)
    joint /= joint.sum()
    outer = joint.sum(1, keepdims=True) @ joint.sum(0, keepdims=True)
    nz = joint > 0
    mi = float((joint[nz] * np.log2(joint[nz] / outer[nz])).sum())
    return mi, float(joint.max(axis=1).sum()), top5


@quick_values({"n_users": 600, "n_items": 100, "n_folds": 2, "strengths": (0.0, 0.25, 0.5, 1.0)})
def run(report, *, random_state=0, quick=False, strengths=(0.0, 0.25, 0.5, 1.0, 2.0),
        n_users=2000, n_items=300, n_folds=5, heldout_fraction=0.1):
    """Write the description into ``report``; return headline numbers."""
    import matplotlib.pyplot as plt

    from ...datasets import make_politics_tv, make_ratings
    from ...recommender import SurpriseRecommender, holdout_split

    seed = 0 if random_state is None else int(random_state)

    # ---------------------------------------------------------------- politics
    report.section("Politics-and-TV preset")
    X, a, shows, genres = make_politics_tv(random_state=seed, return_genres=True)
    mi, map_acc, top5 = _top5_threat(X, a)
    ind = X.copy()
    ind.data[:] = 1.0
    auc_r = _auc(X, a, seed)
    auc_i = _auc(ind, a, seed)
    report.text(
        f"{X.shape[0]} users ({int((a == 0).sum())} Democrats = 0, {int((a == 1).sum())} "
        f"Republicans = 1), {X.shape[1]} shows in {len(set(genres))} genres, "
        f"{X.nnz} ratings ({X.nnz / X.shape[0]:.1f} per user). Synthetic stand-in for the "
        "survey of Sec. V-C (the real data is not public).\n\n"
        f"Privacy threat (paper Sec. VI-C: 0.191 bits, MAP 71 %): on the binarized ratings "
        f"of the 5 most watched shows the plug-in mutual information with the affiliation is "
        f"**{mi:.3f} bits** and a MAP detector is right **{map_acc:.1%}** of the time. "
        f"Logistic regression, 5-fold ROC AUC: **{auc_r:.3f}** on ratings, **{auc_i:.3f}** "
        "on rated-or-not indicators."
    )
    counts = X.getnnz(axis=0)
    R = X.toarray()
    order = np.argsort(-counts, kind="stable")
    table = pd.DataFrame({
        "show": [shows[j] for j in order],
        "genre": [genres[j] for j in order],
        "n_ratings": counts[order],
        "mean_rating_D": [R[a == 0, j][R[a == 0, j] > 0].mean() for j in order],
        "mean_rating_R": [R[a == 1, j][R[a == 1, j] > 0].mean() for j in order],
        "watch_share_D": [(R[a == 0, j] > 0).mean() for j in order],
        "watch_share_R": [(R[a == 1, j] > 0).mean() for j in order],
    })
    report.table(table.head(15), "politics_top_shows",
                 caption="The 15 most watched shows, mean rating and watch share by party")

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.scatter(table["watch_share_D"], table["watch_share_R"], s=15)
    for _, row in table.head(8).iterrows():
        ax.annotate(row["show"][:22], (row["watch_share_D"], row["watch_share_R"]), fontsize=7)
    lim = max(table["watch_share_D"].max(), table["watch_share_R"].max()) * 1.05
    ax.plot([0, lim], [0, lim], "k--", lw=0.8)
    ax.set_xlabel("share of Democrats who rated the show")
    ax.set_ylabel("share of Republicans who rated the show")
    ax.set_title("What is watched leaks the affiliation")
    fig.tight_layout()
    report.figure(fig, "politics_watch_shares",
                  caption="Each point is a show; distance from the diagonal is leakage through "
                          "what people rate, not how")
    plt.close(fig)

    # ---------------------------------------------------------------- make_ratings
    report.section("make_ratings: leakage and skew")
    rows = []
    for s in strengths:
        Xs, as_, _ = make_ratings(n_users, n_items, attribute_strength=s, random_state=seed)
        ind = Xs.copy()
        ind.data[:] = 1.0
        rows.append({
            "attribute_strength": s,
            "n_ratings": Xs.nnz,
            "auc_ratings": _auc(Xs, as_, seed),
            "auc_indicators": _auc(ind, as_, seed),
            "gini_items": _gini(Xs.getnnz(axis=0)),
            "gini_users": _gini(Xs.getnnz(axis=1)),
            "mean_rating": float(Xs.data.mean()),
        })
    leak = pd.DataFrame(rows)
    report.table(leak, "make_ratings_leakage",
                 caption=f"make_ratings({n_users}, {n_items}): logistic-regression AUC for the "
                         "attribute, Gini of item popularity and user activity")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(leak["attribute_strength"], leak["auc_ratings"], "o-", label="ratings")
    ax.plot(leak["attribute_strength"], leak["auc_indicators"], "s--", label="rated-or-not")
    ax.axhline(0.5, color="k", lw=0.8)
    ax.set_xlabel("attribute_strength")
    ax.set_ylabel("ROC AUC (5-fold)")
    ax.legend()
    fig.tight_layout()
    report.figure(fig, "make_ratings_auc", caption="Attribute inference as the knob grows")
    plt.close(fig)

    # ---------------------------------------------------------------- recommender
    report.section("Recommender on the politics preset (Table I protocol, RMSE1)")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(X.shape[0])
    folds = np.array_split(perm, n_folds)
    res = []
    for k, test in enumerate(folds):
        train_users = np.setdiff1d(perm, test)
        tr, held = holdout_split(X[test], heldout_fraction, random_state=seed + k)
        for algo in ("SVD", "BaselineOnly"):
            rec = SurpriseRecommender(algo, rating_scale=(1, 5), random_state=seed + k)
            rec.fit(X[train_users])
            res.append({"fold": k + 1, "algorithm": algo, "n_heldout": held.nnz,
                        "rmse": rec.rmse(tr, held)})
        mu = X[train_users].data.mean()
        res.append({"fold": k + 1, "algorithm": "global mean", "n_heldout": held.nnz,
                    "rmse": float(np.sqrt(np.mean((held.data - mu) ** 2)))})
    res = pd.DataFrame(res)
    wide = res.pivot(index="fold", columns="algorithm", values="rmse").reset_index()
    report.table(wide, "politics_rmse",
                 caption=f"{n_folds} folds of users; {heldout_fraction:.0%} of each test user's "
                         "ratings held out; test users folded in from their other ratings")
    means = res.groupby("algorithm")["rmse"].mean()
    report.text("Mean RMSE: " + ", ".join(f"{k} {v:.3f}" for k, v in means.items())
                + ". The paper's RMSE1 on the real survey is 1.18-1.25.")
    return {
        "politics_mi_top5_bits": mi,
        "politics_map_accuracy": map_acc,
        "politics_auc_ratings": auc_r,
        "politics_auc_indicators": auc_i,
        "politics_rmse_svd": float(means["SVD"]),
        "politics_rmse_baseline": float(means["BaselineOnly"]),
        # at strength 0 (no attribute in the ratings), wherever --set strengths puts it; NaN without it
        "make_ratings_auc_at_0": float(leak.loc[leak["attribute_strength"] == 0, "auc_ratings"].iloc[0])
        if (leak["attribute_strength"] == 0).any() else float("nan"),
    }
