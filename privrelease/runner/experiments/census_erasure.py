"""Census (UCI Adult): the privacy-distortion curve with erasures (Salamatian et al., Sec. VI-A, Fig. 4 and 5).

Public profile: sex, age band (young < 30, adult 30-54, old >= 55), education
band (high-school / college / masters / doctorate); private attribute: income
(<=50K or >50K). The mapping may only erase features (distortion = number of
erasures, infinite for a lie); Algorithm 1 is solved for a grid of budgets.
"""

import numpy as np
import pandas as pd

from ...mapping import (
    census_prior,
    erasure_alphabet,
    erasure_distortion,
    mutual_information,
    privacy_distortion_curve,
)
from ...mapping._census import CENSUS_PRIVATE_LEVELS

from .._schema import Bool, Choice, Float, Int, Seed, Seq, quick_values

__all__ = ["run"]

# Parameter schema checked by the runner before anything runs (privrelease.runner._schema).
PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "deltas": Seq(Float(0), max_len=200,
                  why="each budget is one exact solve on the full Adult prior (a few seconds each)"),
    "solver": Choice(("auto", "fast", "cvxpy")),
    "table_delta": Float(0),
    "top": Int(1, 10_000),
}


def _label(levels, row):
    return ["-" if v < 0 else levels[i][v] for i, v in enumerate(row)]


def mapping_table(prior, tuples, outputs, mapping, levels, names, top=8, neutral_band=0.05):
    """Most probable output for the ``top`` most frequent input profiles (the paper's Fig. 5)."""
    pc = prior.sum(axis=0)
    p_high = prior[1].sum()
    rows = []
    for c in np.argsort(-pc)[:top]:
        post = prior[1, c] / pc[c]
        tendency = "N" if abs(post - p_high) <= neutral_band else ("> 50k" if post > p_high else "< 50k")
        j = int(np.argmax(mapping[c]))
        orig = _label(levels, tuples[c])
        out = _label(levels, outputs[j])
        row = {"income tendency": tendency, "share": pc[c], "p(>50K given profile)": post}
        row.update({f"{n}": v for n, v in zip(names, orig)})
        row.update({f"released {n}": v for n, v in zip(names, out)})
        row["p(release)"] = mapping[c, j]
        row["expected erasures"] = float(mapping[c] @ (outputs == -1).sum(axis=1))
        rows.append(row)
    return pd.DataFrame(rows)


@quick_values({"deltas": (0.0, 0.5, 1.0, 1.5)})
def run(report, *, random_state=0, quick=False, deltas=None, solver="auto", table_delta=1.0, top=8):
    """Privacy-distortion curve, MAP-attacker accuracy and certificates; mapping table at ``table_delta``.

    ``random_state`` is accepted for the runner's uniform interface; the
    experiment is deterministic (exact solves on the full Adult prior).
    """
    import matplotlib.pyplot as plt

    prior, tuples, names, levels = census_prior()
    outputs = erasure_alphabet(tuples)
    d = erasure_distortion(tuples, outputs)
    if deltas is None:  # --quick sets deltas through quick_values
        deltas = list(np.round(np.arange(0.0, 1.76, 0.125), 4))
    deltas = sorted(set(float(x) for x in deltas) | {float(table_delta)})
    curve, results = privacy_distortion_curve(prior, d, deltas, solver=solver, return_mappings=True)
    dpp = curve.attrs["perfect_privacy_delta"]

    report.section("Setting")
    report.text(
        f"UCI Adult, {prior.shape[1]} observed public profiles ({', '.join(names)}), private attribute income "
        f"({' / '.join(CENSUS_PRIVATE_LEVELS)}; {prior[0].sum():.1%} earn <=50K). Output alphabet: every profile "
        f"with any subset of features erased ({len(outputs)} outputs); distortion = number of erasures, "
        "a lie is forbidden (infinite distortion). Leakage I(income; release) in bits; each point carries a "
        "rigorous certificate (duality gap in bits)."
    )
    report.section("Privacy-distortion curve (paper Fig. 4)")
    report.text(
        f"Without erasure the profile leaks I(A; B) = {mutual_information(prior):.4f} bits (the paper reports "
        f"0.142 bits with its own bands). Perfect privacy (a linear program) needs "
        f"{dpp:.4f} expected erasures (paper: 1.5). The MAP attacker's accuracy drops to the base rate "
        f"{prior.sum(axis=1).max():.3f}."
    )
    report.table(curve, "curve", caption="One certified solve per budget.")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(curve["delta"], curve["leakage_bits"], "o-", label="leakage I(A; B_hat)")
    ax.axvline(dpp, color="grey", ls=":", label=f"perfect privacy at {dpp:.3f}")
    ax.set_xlabel("expected number of erasures")
    ax.set_ylabel("leakage (bits)")
    ax2 = ax.twinx()
    ax2.plot(curve["delta"], curve["map_accuracy"], "s--", color="tab:red", label="MAP attack accuracy")
    ax2.set_ylabel("MAP attacker accuracy")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper right")
    ax.set_title("Census: privacy-distortion curve with erasures")
    report.figure(fig, "curve", caption="Leakage and MAP-attacker accuracy vs expected erasures.")

    i = deltas.index(float(table_delta))
    table = mapping_table(prior, tuples, outputs, results[i].mapping, levels, names, top=top)
    report.section(f"Most probable release for the top-{top} profiles at {table_delta:g} expected erasures (paper Fig. 5)")
    report.table(table, "mapping_table",
                 caption="'-' = erased. Tendency: '< 50k' / '> 50k' when p(>50K | profile) is more than 5 points "
                         "below / above the base rate, else 'N'.")
    lk = dict(zip(curve["delta"], curve["leakage_bits"]))
    headline = {
        # I(A; B) of the prior itself: the curve's first budget is the smallest one asked for, not always 0
        "leakage_no_erasure_bits": float(mutual_information(prior)),
        "leakage_one_erasure_bits": float(lk.get(1.0, np.nan)),
        "perfect_privacy_erasures": float(dpp),
        "max_gap_bits": float(curve["gap_bits"].max()),
    }
    report.json({"headline": headline, "curve": curve.to_dict(orient="list")}, "summary")
    return headline
