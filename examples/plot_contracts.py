"""Buying private data: the biased Laplace mechanism pays less than the unbiased one.

Khalili, Zhang and Liu's example: two sellers with privacy valuations 5 and 10
and cost ``v (exp(eps) - 1)``. For each accuracy target ``K`` (worst-case MSE of
the released sum), the cheapest contracts with ``A_new`` (weights ``a_i``,
personalised ``eps_i = a_i / b``) are compared with the best contract using the
unbiased Laplace mechanism ``A_u``. Beyond ``K = n^2 / 4 = 1`` the broker answers
with pure noise and pays nothing. It also prints a two-type menu of contracts.
Run: ``python examples/plot_contracts.py`` (writes ``plot_contracts.png`` in the
current directory; ``--quick``: a coarser grid of targets, for the tests).
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from privrelease.contracts import design_contract, design_menu  # noqa: E402

Ks = np.linspace(0.05, 1.2, 9 if "--quick" in sys.argv[1:] else 30)
new, unbiased = [], []
for K in Ks:
    c = design_contract([5.0, 10.0], K, cost="exponential")
    new.append(c.total_payment)
    unbiased.append(c.unbiased_payment)
    if abs(K - 0.3) < 0.02:
        print(f"K = {K:.2f}: A_new pays {c.total_payment:.1f} (eps = {c.epsilons.round(2)}), "
              f"A_u pays {c.unbiased_payment:.1f} (eps = {np.sqrt(2 / K):.2f} each)")

m = design_menu(1.0, 5.0, 0.5, 0.3)
print(f"menu, v_H = 5, v_L = 1, pi = 0.5, K = 0.3: eps_H = {m.eps_high:.2f} < eps_L = "
      f"{m.eps_low:.2f}, expected payment {m.expected_payment:.1f} vs A_u {m.unbiased_payment:.1f}")

fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogy(Ks, unbiased, "--", label="A_u (unbiased Laplace)")
ax.semilogy(Ks, np.maximum(new, 1e-2), "-", label="A_new (biased, personalised)")
ax.axvline(1.0, color="grey", lw=0.8)
ax.set_xlabel("accuracy target K")
ax.set_ylabel("total payment (log; 1e-2 = nothing)")
ax.legend()
fig.tight_layout()
fig.savefig("plot_contracts.png", dpi=120)
print("wrote plot_contracts.png")
