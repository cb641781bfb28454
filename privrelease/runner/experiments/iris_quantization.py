"""Iris: does quantization cost privacy? (Salamatian et al., Sec. VI-B, Fig. 6-8).

Private attribute: Virginica or not. The prior is a Gaussian kernel density
estimate per class (bandwidth by cross-validation, the engine's
:func:`~privrelease.mapping.kde_prior`) discretised on the distinct Iris
flowers. Distortion: the Euclidean (L2) distance between the flower's
measurements and the released point.

* **No quantization** (Algorithm 1): the convex program over all flowers.
* **Quantization with k clusters** (Algorithm 2): :class:`QuantizedPrivacyMapper`
  (``space="raw"``, ``release="representative"``) fitted on the KDE masses
  (``sample_weight``), so its ``prior_`` is eq. (20)'s aggregated prior and its
  ``cost_matrix_`` the exact expected L2 distance from a cluster's flowers to
  each released centre. Its curves start at the quantization distortion.

Theorem 2 says quantization leaves the achievable leakage unchanged and costs
at most the quantization radius in distortion; the curves show how much less
that is in practice (the paper: k = 50 is nearly identical to no quantization).

No ``[params.mapper]`` table: the comparison needs the quantized curves to share
the unquantized curve's prior and distortion (the KDE masses aggregated by
eq. (20), so no ``prior`` or ``smoothing``; the L2 distance in the raw space, so
no ``metric``, ``space`` or ``n_components``) and the paper's k-means cells, whose
quantization radius Theorem 2 bounds; the other options would change what the
figure compares.
"""

import numpy as np
import pandas as pd

from .._schema import Bool, Float, Int, PipelineError, Seed, Seq, quick_values

__all__ = ["run", "iris_curves"]

_IRIS_CAP = "Iris has 150 flowers and a clustering has at most one cluster per flower"
PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "ks": Seq(Int(2, 150, why=_IRIS_CAP), max_len=10, unique=True,
              why="each k is one clustering and one privacy-distortion curve"),
    "n_deltas": Int(2, 200, why="each point is one certified solve per k"),
    "arrow_k": Int(2, 150, why=_IRIS_CAP),
    "arrow_deltas": Seq(Float(0), max_len=10, why="each budget draws one figure"),
}


def check_together(params):
    """``arrow_k`` must be one of ``ks`` (its mapping is the one drawn)."""
    ks = params.get("ks", (5, 15, 50))
    k = params.get("arrow_k", 15)
    if k not in ks:
        raise PipelineError(f"parameter arrow_k = {k!r}: expected one of ks = {list(ks)} (the arrows show that "
                            "clustering's mapping)")


def _iris_prior(random_state):
    from sklearn.datasets import load_iris

    from ...mapping import kde_prior

    X, species = load_iris(return_X_y=True)
    virginica = (species == 2).astype(np.int64)
    kp = kde_prior(X, virginica, cv=5, random_state=random_state)
    return X, virginica, kp


def _curve_points(prior, cost, n_deltas, leakage_cap=None):
    """Leakage on a grid from the smallest feasible distortion to perfect privacy."""
    from ...mapping import privacy_distortion_curve

    pc = prior.sum(axis=0)
    lo = float(np.sum(pc * cost.min(axis=1)))
    probe = privacy_distortion_curve(prior, cost, [np.inf])
    hi = float(probe.attrs["perfect_privacy_delta"])
    deltas = np.unique(np.r_[lo, np.linspace(lo, hi, n_deltas)[1:], hi * 1.0001])
    curve = privacy_distortion_curve(prior, cost, deltas)
    return curve, lo, hi


def _distortion_at(curve, level):
    """Smallest distortion on the (interpolated) curve with leakage <= level."""
    d = curve["distortion"].to_numpy()
    lk = curve["leakage_bits"].to_numpy()
    order = np.argsort(d)
    d, lk = d[order], lk[order]
    if lk[0] <= level:
        return float(d[0])
    for i in range(1, len(d)):
        if lk[i] <= level:
            t = (lk[i - 1] - level) / max(lk[i - 1] - lk[i], 1e-300)
            return float(d[i - 1] + t * (d[i] - d[i - 1]))
    return float("nan")


def iris_curves(ks=(5, 15, 50), n_deltas=12, random_state=0, return_mappers=False):
    """Privacy-distortion curves on Iris without and with quantization.

    Parameters
    ----------
    ks : sequence of int
        Numbers of clusters.
    n_deltas : int
        Budgets per curve (evenly spaced from the smallest feasible distortion
        to the perfect-privacy distortion).
    random_state : int
        Seeds the KDE grid draw (unused with the distinct-flower grid) and the k-means.
    return_mappers : bool
        Also return the fitted mappers (keyed by k).

    Returns
    -------
    curves : pandas.DataFrame
        Columns ``quantization`` ("none" or "k=..."), ``delta``,
        ``leakage_bits``, ``distortion``, ``map_accuracy``.
    summary : pandas.DataFrame
        One row per curve: ``leakage_at_min_distortion`` (I(A; B) or I(A; C)),
        ``min_distortion`` (the quantization distortion), ``quantization_radius``,
        ``perfect_privacy_distortion`` and the distortion needed for 0.03 bits.
    """
    from ...mapping import mutual_information
    from ...mappers import QuantizedPrivacyMapper

    X, a, kp = _iris_prior(random_state)
    pts, prior = kp.points, kp.prior
    D = np.sqrt(np.maximum(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1), 0.0))
    rows, summary, mappers = [], [], {}
    curve, lo, hi = _curve_points(prior, D, n_deltas)
    curve.insert(0, "quantization", "none")
    rows.append(curve)
    summary.append({"quantization": "none", "n_symbols": pts.shape[0],
                    "leakage_at_min_distortion": mutual_information(prior), "min_distortion": lo,
                    "quantization_radius": 0.0, "perfect_privacy_distortion": hi,
                    "distortion_for_0.03_bits": _distortion_at(curve, 0.03)})
    Xw = np.vstack([pts, pts])
    yw = np.r_[np.zeros(len(pts), int), np.ones(len(pts), int)]
    w = np.r_[prior[0], prior[1]]
    for k in ks:
        m = QuantizedPrivacyMapper(n_clusters=int(k), space="raw", release="representative", smoothing=0.0,
                                   max_leakage=50.0, random_state=random_state).fit(Xw, yw, sample_weight=w)
        mappers[int(k)] = m
        curve, lo, hi = _curve_points(m.prior_, m.cost_matrix_, n_deltas)
        curve.insert(0, "quantization", f"k={k}")
        rows.append(curve)
        summary.append({"quantization": f"k={k}", "n_symbols": m.n_clusters_,
                        "leakage_at_min_distortion": m.prior_leakage_, "min_distortion": lo,
                        "quantization_radius": m.quantization_radius_, "perfect_privacy_distortion": hi,
                        "distortion_for_0.03_bits": _distortion_at(curve, 0.03)})
    curves = pd.concat(rows, ignore_index=True)[["quantization", "delta", "leakage_bits", "distortion",
                                                 "map_accuracy"]]
    out = (curves, pd.DataFrame(summary))
    return out + (mappers,) if return_mappers else out


def _arrow_figure(m, title):
    """Clusters in the first two principal components, arrows to their likeliest other release (Fig. 6-7)."""
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA

    pca = PCA(n_components=2).fit(m.cluster_centers_)
    P = pca.transform(m.cluster_centers_)
    share = m.prior_[1] / m.prior_.sum(axis=0)
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    sc = ax.scatter(P[:, 0], P[:, 1], c=share, cmap="coolwarm", vmin=0, vmax=1, s=40, zorder=3)
    for c in range(m.n_clusters_):
        probs = m.mapping_[c].copy()
        probs[c] = 0.0
        j = int(np.argmax(probs))
        if probs[j] > 0.05:
            ax.annotate("", xy=P[j], xytext=P[c],
                        arrowprops=dict(arrowstyle="->", lw=0.5 + 2.5 * probs[j], color="0.3", alpha=0.8))
    fig.colorbar(sc, ax=ax, label="share of Virginica in the cluster")
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.set_title(title)
    return fig


@quick_values({"n_deltas": 6})
def run(report, *, random_state=0, quick=False, ks=(5, 15, 50), n_deltas=12, arrow_k=15,
        arrow_deltas=(0.5, 1.5)):
    """Fig. 8 (curves), Fig. 6-7 (mapping arrows) into ``report``; returns headline numbers."""
    import matplotlib.pyplot as plt

    from ...mapping import solve_mapping

    seed = 0 if random_state is None else int(random_state)
    curves, summary, mappers = iris_curves(ks=ks, n_deltas=n_deltas, random_state=seed, return_mappers=True)
    report.text(
        "Iris (150 flowers, 4 measurements); private attribute: Virginica or not. Prior: one Gaussian KDE "
        "per class (bandwidth by 5-fold cross-validation) discretised on the distinct flowers. Distortion: "
        "Euclidean distance between a flower and what is released. Quantized curves start at the "
        "quantization distortion (the identity mapping on the clusters).")
    report.section("Privacy-distortion curves (Fig. 8)")
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, g in curves.groupby("quantization", sort=False):
        g = g.sort_values("distortion")
        ax.plot(g["distortion"], g["leakage_bits"], marker="o", ms=3,
                label="no quantization" if name == "none" else name)
    ax.set_xlabel("expected distortion (L2)")
    ax.set_ylabel("leakage I(A; released) [bits]")
    ax.legend()
    ax.grid(alpha=0.3)
    report.figure(fig, "iris_curves", caption="Leakage against expected L2 distortion, with and without quantization.")
    report.table(summary, "iris_summary", caption="One row per curve.")
    report.table(curves, "iris_curve_points")

    m = mappers.get(int(arrow_k)) or next(iter(mappers.values()))
    report.section(f"What the mapping does (Fig. 6-7, k={m.n_clusters_})")
    for d in arrow_deltas:
        budget = m.smallest_delta_ + float(d) * 0.25
        res = solve_mapping(m.prior_, m.cost_matrix_, budget)
        shown = _clone_with_mapping(m, res.mapping)
        fig = _arrow_figure(shown, f"budget {budget:.2f} (leakage {res.leakage:.3f} bits)")
        report.figure(fig, f"iris_arrows_{str(d).replace('.', '_')}",
                      caption="Each point is a cluster; an arrow goes to its likeliest other release, thicker "
                              "when likelier. Low budgets move only the clusters near the Versicolour/Virginica "
                              "border; high budgets move all of them.")
    none = summary.iloc[0]
    head = {"leakage_no_quantization": float(none["leakage_at_min_distortion"]),
            "perfect_privacy_distortion_no_quantization": float(none["perfect_privacy_distortion"])}
    for _, r in summary.iloc[1:].iterrows():
        k = r["quantization"]
        head[f"leakage_{k}"] = float(r["leakage_at_min_distortion"])
        head[f"perfect_privacy_distortion_{k}"] = float(r["perfect_privacy_distortion"])
        head[f"distortion_for_0.03_bits_{k}"] = float(r["distortion_for_0.03_bits"])
    head["distortion_for_0.03_bits_none"] = float(none["distortion_for_0.03_bits"])
    report.json(head, "headline")
    return head


def _clone_with_mapping(m, mapping):
    import copy

    shown = copy.copy(m)
    shown.mapping_ = np.asarray(mapping)
    return shown
