"""Truthful linear regression: a player's expected payment peaks at her true response.

Runs :class:`privrelease.regression.TruthfulRegressionMechanism` (Cummings,
Ioannidis and Ligett, Algorithm 2) many times with one player misreporting her
response by ``delta``; the others and the true parameter are drawn from the
Gaussian model conditioned on her data. The mechanism is run with the same
split and noise for every ``delta`` (common random numbers), so the curve shows
the expected payment as a function of the report alone. It also prints the
released coefficients next to scikit-learn's Ridge (no noise) for one run.
Run: ``python examples/plot_truthful_regression.py`` (writes
``plot_truthful_regression.png`` in the current directory; ``--quick``: fewer players and
repetitions, for the tests).
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402

from privrelease.regression import TruthfulRegressionMechanism  # noqa: E402

QUICK = "--quick" in sys.argv[1:]
rng = np.random.default_rng(0)
n, d, tau2, sigma2 = 1000 if QUICK else 4000, 2, 0.25, 0.01
x0, y0 = np.array([0.8, 0.0]), 0.5
cov = np.linalg.inv(np.eye(d) / tau2 + np.outer(x0, x0) / sigma2)
mean = cov @ x0 * y0 / sigma2


def players():
    theta = rng.multivariate_normal(mean, cov)
    z = rng.normal(size=(n, d))
    X = z / np.linalg.norm(z, axis=1, keepdims=True) * rng.uniform(size=(n, 1)) ** (1 / d)
    X[0] = x0
    y = np.clip(X @ theta + np.sqrt(sigma2) * rng.normal(size=n), -3, 3)
    return X, y


mech = TruthfulRegressionMechanism(alpha=30.0, epsilon=20.0, response_bound=3.0,
                                   prior_variance=tau2, noise_variance=sigma2)
X, y = players()
mech.set_params(random_state=0).fit(X, y)
print("released coef_:", mech.coef_.round(3), " Ridge:", Ridge(alpha=30.0, fit_intercept=False)
      .fit(X, y).coef_.round(3), f" joint-DP epsilon: {mech.epsilon_:g}, budget {mech.budget_:.1f}")

deltas = np.linspace(-0.6, 0.6, 13)
totals = np.zeros(deltas.size)
reps = 10 if QUICK else 60
for r in range(reps):
    X, y = players()
    for k, delta in enumerate(deltas):
        y[0] = y0 + delta
        totals[k] += mech.set_params(random_state=r).fit(X, y).payments_[0]
avg = totals / reps
print(f"best misreport on the grid: {deltas[np.argmax(avg)]:+.1f} (truth is 0)")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(deltas, avg, "o-")
ax.axvline(0, color="grey", lw=0.8)
ax.set_xlabel("misreport y_hat - y")
ax.set_ylabel("expected payment")
fig.tight_layout()
fig.savefig("plot_truthful_regression.png", dpi=120)
print("wrote plot_truthful_regression.png")
