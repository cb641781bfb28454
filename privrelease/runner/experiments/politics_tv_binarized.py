"""Politics-and-TV, binarized ratings (Salamatian et al., Sec. VI-C, Fig. 10, Fig. 12, Fig. 13).

Data: :func:`~privrelease.datasets.make_politics_tv` with ``binarize=True``
(``b_i = 1`` when the user rated show ``i`` 4 or 5). Private attribute:
Democrat (0) / Republican (1).

1. **Privacy threat**: mutual information and MAP accuracy of the 5 most
   watched shows' binarized ratings (paper: 0.191 bits, 71 %).
2. **Fig. 10**: Algorithm 2 with a Hamming clustering into 25 clusters
   (k-modes, majority-vote centres) and the exchange distortion (Hamming
   distance between the user's vector and the released centre):
   ``QuantizedPrivacyMapper(metric="hamming", release="representative")``.
3. **Fig. 13**: clusters by their three most liked shows, their political
   lean (D / R, or N when the cluster's Republican share is within 10 points
   of the population's), and where the perfect-privacy mapping most likely
   sends them.
4. **Fig. 12**: logistic-regression attackers (fixed and adaptive) against the
   released vectors at perfect privacy, half the users opted in.

No ``[params.mapper]`` table: every mapper here is the paper's configuration
(k-modes on the binarized vectors, Hamming distortion, representatives), which
the figures reproduce, and the Hamming metric ignores most options (``space``,
``n_components``, ``n_refine``, ``clustering``, ``profile``; ``class_removal``
and ``class_bins`` cut along attribute directions it never computes).
"""

import numpy as np
import pandas as pd

from ._politics import fitted_clusters, plot_curve, quantized_curve

from ...evaluation._attacks import ATTACK_MODELS
from .._schema import Bool, Choice, Float, Int, Seed, Seq, quick_values

__all__ = ["run", "cluster_mapping_table"]

PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "n_clusters": Int(2, 1218, why="the Politics-and-TV preset has 1,218 users"),
    "n_deltas": Int(2, 200, why="each point is one certified solve"),
    "opt_in_fraction": Float(0, 1, low_open=True, high_open=True),
    "attack_models": Seq(Choice(ATTACK_MODELS), max_len=len(ATTACK_MODELS), unique=True),
}


def _top_shows(center, shows, n=3):
    idx = np.flatnonzero(center > 0)
    return [shows[i] for i in idx[:n]] if idx.size else []


def cluster_mapping_table(m, B, shows, top=3, neutral_band=0.10, n_rows=None):
    """Fig. 13: each cluster's most liked shows, its lean, and its likeliest release.

    Parameters
    ----------
    m : fitted QuantizedPrivacyMapper (Hamming)
    B : binary matrix the mapper was fitted on
    shows : list of str
    top : int
        Shows listed per cluster (most liked among members first).
    neutral_band : float
        Lean is "N" when the cluster's share of class 1 is within this of the population's.
    n_rows : int or None
        Keep the most populated clusters only.

    Returns
    -------
    pandas.DataFrame
    """
    Bd = B.toarray() if hasattr(B, "toarray") else np.asarray(B)
    p_c = m.prior_.sum(axis=0)
    share = m.prior_[1] / p_c
    base = m.prior_[1].sum()
    liked = np.vstack([Bd[m.labels_ == j].mean(axis=0) for j in range(m.n_clusters_)])
    rows = []
    for c in np.argsort(-p_c)[: n_rows or m.n_clusters_]:
        j = int(np.argmax(m.mapping_[c]))
        lean = "N" if abs(share[c] - base) <= neutral_band else ("R" if share[c] > base else "D")
        own = [shows[i] for i in np.argsort(-liked[c], kind="stable")[:top]]
        out = [shows[i] for i in np.argsort(-liked[j], kind="stable")[:top]]
        rows.append({"lean": lean, "share of users": float(p_c[c]), "Republican share": float(share[c]),
                     "cluster's top shows": ", ".join(own), "likeliest release": ", ".join(out),
                     "p(release)": float(m.mapping_[c, j]), "stays": j == c})
    return pd.DataFrame(rows)


@quick_values({"n_deltas": 5})
def run(report, *, random_state=0, quick=False, n_clusters=25, n_deltas=12, opt_in_fraction=0.5,
        attack_models=("logistic",)):
    """Threat figures, Fig. 10 curve, Fig. 13 table and Fig. 12 attacks; returns headline numbers."""
    import matplotlib.pyplot as plt

    from ...datasets import make_politics_tv
    from ...evaluation import evaluate_attacks
    from ...mappers import QuantizedPrivacyMapper
    from ...mapping import empirical_prior, map_attack_accuracy, mutual_information

    seed = 0 if random_state is None else int(random_state)
    R, a, shows = make_politics_tv(random_state=seed)
    B, a2, _ = make_politics_tv(random_state=seed, binarize=True)
    assert np.array_equal(a, a2)
    report.text(
        f"{B.shape[0]} users ({int((a == 0).sum())} Democrats = 0, {int((a == 1).sum())} Republicans = 1), "
        f"{B.shape[1]} shows; b_i = 1 when the show was rated 4 or 5 ({B.nnz} ones). Synthetic stand-in for "
        "the paper's survey (`make_politics_tv`).")

    report.section("Privacy threat: the 5 most watched shows")
    top5 = np.argsort(-np.diff(R.tocsc().indptr), kind="stable")[:5]
    sub = B[:, top5].toarray().astype(np.int64)
    codes = sub @ (1 << np.arange(5))
    prior5 = empirical_prior(a, codes, n_private=2, n_public=32)
    mi5 = float(mutual_information(prior5))
    acc5 = float(map_attack_accuracy(prior5))
    report.text(f"Shows: {', '.join(shows[i] for i in top5)}. I(A; B_top5) = {mi5:.3f} bits, MAP accuracy "
                f"{acc5:.1%} (paper: 0.191 bits, 71 %).")

    m, curve, hi = quantized_curve(B, a, n_clusters, n_deltas, seed, metric="hamming")
    report.section(f"Privacy-distortion curve (Fig. 10, Hamming k-modes, {fitted_clusters(n_clusters, m.n_clusters_)})")
    fig = plot_curve(m, curve, "expected Hamming distortion (out of 50 shows)")
    report.figure(fig, "politics_binarized_curve",
                  caption="Leakage against the expected Hamming distance between a user's liked-shows vector "
                          "and the released centre.")
    report.table(curve[["delta", "leakage_bits", "distortion", "map_accuracy", "status", "gap_bits"]],
                 "politics_binarized_curve")
    report.text(
        f"Quantization alone: Hamming distortion {m.quantization_distortion_:.2f} of 50 "
        f"({m.quantization_distortion_ / 50:.1%}), leakage {m.prior_leakage_:.3f} bits (paper: 6.1, 12 %, "
        f"0.189 bits). Perfect privacy at {hi:.2f} ({hi / 50:.1%}; paper: under 7, 15 %).")

    report.section("Where clusters go at perfect privacy (Fig. 13)")
    mp = QuantizedPrivacyMapper(n_clusters=n_clusters, metric="hamming", release="representative",
                                smoothing=0.0, random_state=seed).fit(B, a)
    table = cluster_mapping_table(mp, B, shows, n_rows=None if not quick else 8)
    report.table(table, "politics_cluster_mappings",
                 caption="Clusters (most populated first) by their three most liked shows; lean D / R / N; the "
                         "likeliest released cluster under the perfect-privacy mapping.")

    report.section("Inference attacks at perfect privacy (Fig. 12)")
    rs = np.random.default_rng(seed + 7919)
    perm = rs.permutation(B.shape[0])
    k = int(round(opt_in_fraction * B.shape[0]))
    opt, prot = np.sort(perm[:k]), np.sort(perm[k:])
    ma = QuantizedPrivacyMapper(n_clusters=n_clusters, metric="hamming", release="representative",
                                random_state=seed + 1).fit(B[opt], a[opt])
    tab, results = evaluate_attacks(B[opt], ma.transform(B[opt]), a[opt], ma.transform(B[prot]), a[prot],
                                    models=attack_models, random_state=seed)
    base, base_results = evaluate_attacks(B[opt], None, a[opt], B[prot], a[prot], models=attack_models,
                                          random_state=seed)
    base = base.assign(attacker="no protection (original vectors)")
    report.table(pd.concat([base, tab], ignore_index=True), "politics_binarized_attacks",
                 caption="Mapper fitted on the opted-in half; AUC on the protected half. `chance_folded_auc`: the "
                         "folded AUC max(AUC, 1 - AUC) one attacker whose scores carry no information is expected "
                         f"to score on these {int(tab['n_samples'].iloc[0])} users "
                         f"({float(tab['chance_folded_auc'].iloc[0]):.3f}; the worst of several higher still).")
    fig, ax = plt.subplots(figsize=(4.5, 4.2))
    for label, res in (("original", base_results.get(("fixed", "logistic", "values"))),
                       ("released, fixed attacker", results.get(("fixed", "logistic", "values"))),
                       ("released, adaptive attacker", results.get(("adaptive", "logistic", "values")))):
        if res is not None and res.fpr is not None:
            ax.plot(res.fpr, res.tpr, label=f"{label} (AUC {res.auc:.2f})")
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.legend(fontsize=7)
    report.figure(fig, "politics_binarized_roc", caption="ROC of logistic-regression attackers (Fig. 12).")
    head = {
        "mi_top5_bits": mi5, "map_accuracy_top5": acc5,
        "quantization_distortion": float(m.quantization_distortion_),
        "leakage_after_quantization_bits": float(m.prior_leakage_),
        "perfect_privacy_distortion": hi,
        # worst cases folded (max(AUC, 1 - AUC)), as the chance level beside them: an attacker that ranks the
        # classes backwards knows as much as one that ranks them forwards
        "auc_original": float(base["folded_auc"].max()),
        "auc_fixed_perfect_privacy": float(tab.loc[tab["attacker"] == "fixed", "folded_auc"].max()),
        "auc_adaptive_perfect_privacy": float(tab.loc[tab["attacker"] == "adaptive", "folded_auc"].max()),
        # the folded AUC one uninformed attacker is expected to score on the protected users
        "chance_folded_auc": float(tab["chance_folded_auc"].iloc[0]),
    }
    report.json(head, "headline")
    return head
