"""Politics-and-TV, actual ratings (Salamatian et al., Sec. VI-C, Fig. 11, Fig. 12, Table I).

Data: the :func:`~privrelease.datasets.make_politics_tv` preset (1,218 users,
50 shows, ratings 1-5, 0 = not rated; a generative stand-in for the paper's
survey, which is not public). Private attribute: Democrat (0) / Republican (1).

1. **Fig. 11**: the paper's method on actual ratings: k-means (L2) on the raw
   rating vectors, 25 clusters, the privacy-distortion curve of Algorithm 2
   (``QuantizedPrivacyMapper(space="raw", release="representative")``),
   distortion = expected L2 distance between a user's vector and the released
   cluster centre.
2. **What a recommender pays, and what an attacker still learns** (Table I,
   Fig. 12): half the users opt in (they disclose their affiliation and keep
   their ratings); the mapper learns from them; the protected users release
   through it. RMSE: Surprise SVD trained on the opted-in users plus the
   protected users' releases, scored on 10 % of each test user's TRUE ratings
   held out before anything is released (the evaluation package's
   :func:`~privrelease.evaluation.rmse_cost`, with the "release nothing"
   reference). Attacks: logistic regression on ratings and on rated / not
   rated indicators, fixed (trained on the opted-in users' original ratings) and
   adaptive (trained on their releases), AUC on the protected users' releases.
   Compared: our default mapper (taste space, synthetic profiles, empty symbol)
   at several leakage caps, and the paper's naive release of the raw cluster
   representative at perfect privacy.

``mapper`` (``[params.mapper]``): :class:`~privrelease.mappers.QuantizedPrivacyMapper`
options of OUR rows only (the same options at every leakage cap, ``n_clusters``
included: our rows use ``"auto"`` unless it is set there). The Fig. 11 curve and
the paper's naive release keep the paper's configuration (``n_clusters`` clusters
of the raw vectors, representatives), which is what they reproduce.
"""

import numpy as np
import pandas as pd

from ._politics import fitted_clusters, plot_curve, quantized_curve

from ...evaluation._attacks import ATTACK_MODELS
from .._schema import Bool, Choice, Float, Int, NJobs, Seed, Seq, quick_values
from .synthetic_ratings import MAPPER as _RATINGS_MAPPER

__all__ = ["run", "rmse_and_attacks"]

PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "n_clusters": Int(2, 1218, why="the Politics-and-TV preset has 1,218 users"),
    "n_deltas": Int(2, 200, why="each point is one certified solve"),
    "max_leakages": Seq(Float(0), max_len=30, increasing=True,
                        why="each level refits the mapper, the recommender and the attackers in every fold"),
    "opt_in_fraction": Float(0, 1, low_open=True, high_open=True),
    "cv": Int(2, 20),
    "heldout_fraction": Float(0, 1, low_open=True, high_open=True),
    "attack_models": Seq(Choice(ATTACK_MODELS), max_len=len(ATTACK_MODELS), unique=True),
    "mapper": _RATINGS_MAPPER.derive(accept=("n_clusters",), reserve={
        "max_leakage": "use the experiment parameter max_leakages (one row of ours per cap)",
        "delta": "use the experiment parameter max_leakages (our rows are leakage caps, not distortion budgets)",
        "release": "our rows release profiles; the paper's naive release of representatives is its own row",
        "protect": "the private attribute is one binary column (nothing to protect jointly or by marginals)",
    }),
    "n_jobs": NJobs(),
}


def _split(n, opt_in_fraction, seed):
    rs = np.random.default_rng(seed + 7919)  # not the generator's own seed stream
    perm = rs.permutation(n)
    k = int(round(opt_in_fraction * n))
    return np.sort(perm[:k]), np.sort(perm[k:])


def _chance_sentence(tab):
    """What an uninformed attacker scores on the protected users, for the caption of the RMSE and AUC table."""
    chance = float(tab["chance_folded_auc"].iloc[0])
    # E|AUC - 0.5| = (chance - 0.5), about sd * sqrt(2 / pi) for a normal AUC
    sd = (chance - 0.5) * np.sqrt(np.pi / 2)
    return (f"Chance: an attacker whose scores carry no information has an AUC of 0.5 +- {sd:.3f} (one standard "
            f"deviation) on these users, a folded AUC max(AUC, 1 - AUC) of {chance:.3f} on average (column "
            "`chance_folded_auc`; the worst of several attackers higher still).")


def rmse_and_attacks(mapper, R, a, *, opt_in_fraction=0.5, cv=5, heldout_fraction=0.1, seed=0,
                     attack_models=("logistic",), n_jobs=None):
    """RMSE cost (Table I protocol) and fixed / adaptive attacks of one mapper.

    Returns
    -------
    row : dict
        ``leakage``, ``distortion``, ``rmse_original``, ``rmse_released``,
        ``rmse_release_nothing``, relative increases, ``auc_original`` (logistic
        on original ratings of protected users), ``auc_fixed`` and
        ``auc_adaptive`` (the worst case over the attack models and features;
        all three folded, ``max(AUC, 1 - AUC)``),
        then ``chance_folded_auc``: the folded AUC ``max(AUC, 1 - AUC)`` one
        attacker whose scores carry no information is expected to score on the
        protected users (:attr:`~privrelease.evaluation.AttackResult.chance_folded_auc`).
    attacks : pandas.DataFrame
        One row per attacker.
    results : dict
        The attack results (ROC curves).
    """
    from sklearn.base import clone

    from ...evaluation import evaluate_attacks, rmse_cost

    cost = rmse_cost(mapper, R, a, opt_in_fraction=opt_in_fraction, cv=cv, heldout_fraction=heldout_fraction,
                     random_state=seed, n_jobs=n_jobs)
    opt, prot = _split(R.shape[0], opt_in_fraction, seed)
    m = clone(mapper)
    if m.get_params().get("random_state") is None:
        m.set_params(random_state=seed + 1)
    m.fit(R[opt], a[opt])
    released_opt, released_prot = m.transform(R[opt]), m.transform(R[prot])
    table, results = evaluate_attacks(R[opt], released_opt, a[opt], released_prot, a[prot],
                                      models=attack_models, random_state=seed)
    base, _ = evaluate_attacks(R[opt], None, a[opt], R[prot], a[prot], models=attack_models, random_state=seed)
    s = cost.summary
    row = {
        "leakage_bits": float(m.leakage_), "distortion": float(m.distortion_),
        "rmse_original": s["rmse_original"], "rmse_released": s["rmse_released"],
        "rmse_release_nothing": s["rmse_release_nothing"],
        "rmse_increase_released": s["rel_increase_released"],
        "rmse_increase_release_nothing": s["rel_increase_release_nothing"],
        # worst cases folded (max(AUC, 1 - AUC)), as the chance level beside them: an attacker that ranks the
        # classes backwards knows as much as one that ranks them forwards
        "auc_original": float(base["folded_auc"].max()),
        "auc_fixed": float(table.loc[table["attacker"] == "fixed", "folded_auc"].max()),
        "auc_adaptive": float(table.loc[table["attacker"] == "adaptive", "folded_auc"].max()),
        "chance_folded_auc": float(table["chance_folded_auc"].iloc[0]),
    }
    return row, table, results


@quick_values({"n_deltas": 5, "max_leakages": (0.0,), "cv": 2})
def run(report, *, random_state=0, quick=False, n_clusters=25, n_deltas=12, max_leakages=(0.0, 0.01, 0.05),
        opt_in_fraction=0.5, cv=5, heldout_fraction=0.1, attack_models=("logistic",), mapper=None, n_jobs=1):
    """Fig. 11 curve, RMSE and attack table into ``report``; returns headline numbers."""
    import matplotlib.pyplot as plt

    from ...datasets import make_politics_tv
    from ...mappers import QuantizedPrivacyMapper

    seed = 0 if random_state is None else int(random_state)
    R, a, shows = make_politics_tv(random_state=seed)
    report.text(
        f"{R.shape[0]} users ({int((a == 0).sum())} Democrats = 0, {int((a == 1).sum())} Republicans = 1), "
        f"{R.shape[1]} shows, {R.nnz} ratings (1-5). Synthetic stand-in for the paper's survey "
        "(`make_politics_tv`).")

    m, curve, hi = quantized_curve(R, a, n_clusters, n_deltas, seed, space="raw")
    report.section(f"Privacy-distortion curve on actual ratings (Fig. 11, {fitted_clusters(n_clusters, m.n_clusters_)}, L2)")
    fig = plot_curve(m, curve, "expected L2 distortion (over 50 shows)")
    report.figure(fig, "politics_ratings_curve", caption="Leakage against the expected L2 distance to the "
                  "released cluster centre; the curve starts at the quantization distortion.")
    report.table(curve[["delta", "leakage_bits", "distortion", "map_accuracy", "status", "gap_bits"]],
                 "politics_ratings_curve")
    report.text(
        f"Quantization alone: L2 distortion {m.quantization_distortion_:.2f} "
        f"({m.quantization_distortion_ / np.sqrt(R.shape[1]):.3f} RMS per show), leakage "
        f"{m.prior_leakage_:.3f} bits (paper: 37.5 and 0.182 bits on its survey). Perfect privacy at "
        f"{hi:.2f}, i.e. {hi - m.quantization_distortion_:.2f} beyond quantization.")

    report.section("Recommendation RMSE and inference attacks (Table I, Fig. 12)")
    options = dict(mapper or {})  # [params.mapper]: our rows only
    settings = [(f"ours, max_leakage={ml:g}",
                 QuantizedPrivacyMapper(max_leakage=ml, random_state=seed + 1, **options)) for ml in max_leakages]
    settings.append(("paper's naive release (raw representative), perfect privacy",
                     QuantizedPrivacyMapper(n_clusters=n_clusters, space="raw", release="representative",
                                            random_state=seed + 1)))
    rows, roc = [], {}
    for name, mapper in settings:
        row, table, results = rmse_and_attacks(mapper, R, a, opt_in_fraction=opt_in_fraction, cv=cv,
                                               heldout_fraction=heldout_fraction, seed=seed,
                                               attack_models=attack_models, n_jobs=n_jobs)
        rows.append({"release": name, **row})
        roc[name] = results.get(("adaptive", "logistic", "values"))
    tab = pd.DataFrame(rows)
    report.table(tab, "politics_ratings_rmse_auc",
                 caption="RMSE: Surprise SVD, 10 % of each protected test user's true ratings held out "
                         f"({cv}-fold CV over protected users). AUC: worst folded AUC "
                         "max(AUC, 1 - AUC) over attackers (logistic regression on values and on indicators). "
                         "Ours: QuantizedPrivacyMapper "
                         + (", ".join(f"{k}={v!r}" for k, v in options.items()) + " (the defaults otherwise)"
                            if options else "with its defaults") + ". " + _chance_sentence(tab))
    fig, ax = plt.subplots(figsize=(4.5, 4.2))
    for name, res in roc.items():
        if res is not None and res.fpr is not None:
            ax.plot(res.fpr, res.tpr, label=f"{name.split(',')[0]} (AUC {res.auc:.2f})")
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.legend(fontsize=7)
    report.figure(fig, "politics_ratings_roc", caption="ROC of the adaptive logistic attacker on released ratings.")
    first = tab.iloc[0]   # the columns every row shares (the original ratings, releasing nothing)
    naive = tab.iloc[-1]
    # our perfect-privacy row is the cap 0, wherever max_leakages puts it; NaN when no cap of 0 was run (the first
    # row, a cap of 0.5 from --set, was reported under this name)
    caps = [float(x) for x in max_leakages]
    pp = tab.iloc[caps.index(0.0)] if 0.0 in caps else None

    def at_pp(column):
        return float(pp[column]) if pp is not None else float("nan")

    head = {
        "leakage_after_quantization_bits": float(m.prior_leakage_),
        "quantization_distortion": float(m.quantization_distortion_),
        "perfect_privacy_distortion": hi,
        "rmse_original": float(first["rmse_original"]),
        "rmse_increase_ours_perfect_privacy": at_pp("rmse_increase_released"),
        "rmse_increase_release_nothing": float(first["rmse_increase_release_nothing"]),
        "rmse_increase_naive_representative": float(naive["rmse_increase_released"]),
        "auc_original": float(first["auc_original"]),
        "auc_adaptive_ours_perfect_privacy": at_pp("auc_adaptive"),
        "auc_fixed_ours_perfect_privacy": at_pp("auc_fixed"),
        # the folded AUC one uninformed attacker is expected to score on the protected users
        "chance_folded_auc": float(first["chance_folded_auc"]),
    }
    report.json(head, "headline")
    return head
