"""Quantization barely costs privacy: Iris curves with and without clustering (Salamatian et al., Fig. 8).

The private attribute is "Virginica or not"; the prior is a kernel density
estimate per class. Algorithm 1 solves the privacy program on all flowers,
Algorithm 2 (QuantizedPrivacyMapper) on k clusters. Run it::

    MPLBACKEND=Agg python examples/plot_iris_quantization.py

It prints the summary table and writes ``iris_quantization.png``. ``--quick``
computes one quantization level on a coarse grid (seconds; used by the tests).
"""

import sys

import matplotlib.pyplot as plt

from privrelease.runner.experiments.iris_quantization import iris_curves

QUICK = "--quick" in sys.argv[1:]
curves, summary = iris_curves(ks=(5,) if QUICK else (5, 15, 50), n_deltas=3 if QUICK else 8,
                              random_state=0)
print(summary.round(3).to_string(index=False))

fig, ax = plt.subplots(figsize=(6, 4))
for name, g in curves.groupby("quantization", sort=False):
    g = g.sort_values("distortion")
    ax.plot(g["distortion"], g["leakage_bits"], marker="o", ms=3,
            label="no quantization" if name == "none" else name)
ax.set_xlabel("expected distortion (L2)")
ax.set_ylabel("leakage [bits]")
ax.set_title("Iris: Virginica or not")
ax.legend()
fig.savefig("iris_quantization.png", dpi=110, bbox_inches="tight")
print("wrote iris_quantization.png")
