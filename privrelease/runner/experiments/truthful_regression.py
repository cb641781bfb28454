"""Truthful linear regression with privacy-aware players (Cummings, Ioannidis, Ligett).

Runs :class:`privrelease.regression.TruthfulRegressionMechanism` (Algorithm 2)
on synthetic players drawn from the paper's model: features uniform in the
unit ball, ``y = theta^T x + z`` with bounded responses.

Sections:

1. Sensitivity: the derived bound :func:`~privrelease.regression.ridge_sensitivity`
   against the largest change an adversarial neighbour produces (extreme points
   of the sphere and of the response range).
2. The parameter schedule (Corollary 1, exponents re-derived): error of the
   released estimator, budget, IR fraction for random privacy costs, as the
   number of players grows.
3. Truthfulness: a player's expected payment against her misreport, by
   simulation under the Gaussian model with common random numbers.
"""

import numpy as np
import pandas as pd

from .._schema import Bool, Float, Int, PipelineError, Seed, Seq, quick_values

__all__ = ["run"]

#: the largest noise_std: the standard deviation of the response noise, against responses clipped to [-1, 1]
MAX_NOISE_STD = 100.0

PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "n_features": Int(1, 100, why="the sensitivity search solves d x d ridge systems thousands of times"),
    "n_players": Seq(Int(10, 2_000_000, why="each repetition draws an n x n_features design matrix in "
                                            "memory"), max_len=20),
    "privacy_exponent": Float(0.5, 1, low_open=True, high_open=True),
    "repetitions": Int(1, 1_000),
    # 1e308 overflowed in noise_std * N(0, 1) and clipped every response (exit 0): a response escapes the clip to
    # [-1, 1] when the noise falls in an interval of width 2, a chance of about 2 / (noise_std sqrt(2 pi))
    "noise_std": Float(0, MAX_NOISE_STD, why="responses are clipped to [-1, 1]: about 0.8 / noise_std of them "
                                            f"escape the clip (1 in 125 at {MAX_NOISE_STD:g}), and beyond it the "
                                            "schedule section measures the clipping, not the estimator"),
    "truthfulness_players": Int(10, 1_000_000, why="each truthfulness run draws that many players in memory"),
    "truthfulness_reps": Int(1, 10_000),
}


def check_together(params):
    """The largest design matrix (players x features) stays under 2e7 cells (160 MB of float64): the schedule's
    (``n_players``) and the truthfulness section's (``truthfulness_players``)."""
    d = params.get("n_features", 2)
    n = max(params.get("n_players", (256_000,)), default=0)
    if n * d > 20_000_000:
        raise PipelineError(f"parameters n_players (largest {n}) x n_features = {d} make a {n * d}-cell design "
                            "matrix: expected at most 20,000,000 cells (160 MB of float64 per repetition)")
    m = params.get("truthfulness_players", 6_000)
    if m * d > 20_000_000:
        # 1,000,000 players x 100 features passed: an 800 MB design matrix per truthfulness run
        raise PipelineError(f"parameters truthfulness_players = {m} x n_features = {d} make a {m * d}-cell design "
                            "matrix: expected at most 20,000,000 cells (160 MB of float64 per truthfulness run)")


def _unit_ball(rng, n, d):
    z = rng.normal(size=(n, d))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return z * rng.uniform(size=(n, 1)) ** (1.0 / d)


def _ridge(X, y, alpha):
    return np.linalg.solve(X.T @ X + alpha * np.eye(X.shape[1]), X.T @ y)


@quick_values({"n_players": (1_000, 4_000, 16_000), "repetitions": 4, "truthfulness_reps": 40,
               "truthfulness_players": 3_000})
def run(report, *, random_state=0, quick=False, n_features=2,
        n_players=(1_000, 4_000, 16_000, 64_000, 256_000), privacy_exponent=0.6,
        repetitions=10, noise_std=0.1, truthfulness_players=6_000, truthfulness_reps=150):
    """Run the experiment; returns headline numbers.

    Parameters
    ----------
    report : privrelease.runner.Report
    random_state : int, default=0
        Seeds data and mechanism noise (reproducible report; a deployment
        would leave the mechanism's ``random_state=None``).
    quick : bool, default=False
        Three sizes up to 16 000 players, 4 repetitions, 40 truthfulness runs.
    n_features : int
        Dimension ``d``.
    n_players : sequence of int
        Numbers of players for the schedule section.
    privacy_exponent : float
        ``q`` of :func:`~privrelease.regression.parameter_schedule`, in (1/2, 1).
    repetitions : int
        Runs per size.
    noise_std : float
        Standard deviation of the response noise ``z`` (responses clipped to [-1, 1]).
    truthfulness_players, truthfulness_reps : int
        Size and number of runs of the truthfulness simulation.
    """
    import matplotlib.pyplot as plt

    from ...regression import TruthfulRegressionMechanism, parameter_schedule, ridge_sensitivity

    rng = np.random.default_rng(random_state)
    d = int(n_features)

    # 1. sensitivity: bound against adversarial neighbours
    rows = []
    for n, alpha in ((20, 1.0), (100, 4.0), (400, 20.0)):
        worst = 0.0
        bases = [(_unit_ball(rng, n - 1, d), rng.uniform(-1, 1, n - 1))]
        Xb = np.zeros((n - 1, d))
        Xb[:, 0] = np.sqrt(alpha / n)
        bases.append((Xb, np.ones(n - 1)))
        cands = rng.normal(size=(100, d))
        cands = np.vstack([cands / np.linalg.norm(cands, axis=1, keepdims=True), np.eye(d),
                           -np.eye(d), np.zeros((1, d))])
        for Xb, yb in bases:
            for _ in range(150 if quick else 600):
                i, j = rng.integers(len(cands), size=2)
                yi, yj = rng.choice([-1.0, 1.0], size=2)
                t1 = _ridge(np.vstack([Xb, cands[i]]), np.append(yb, yi), alpha)
                t2 = _ridge(np.vstack([Xb, cands[j]]), np.append(yb, yj), alpha)
                worst = max(worst, float(np.linalg.norm(t1 - t2)))
        bound = ridge_sensitivity(n, alpha, 1.0)
        rows.append({"n": n, "alpha": alpha, "bound": bound, "adversarial_max": worst,
                     "ratio": worst / bound})
    sens = pd.DataFrame(rows)
    report.section("Sensitivity of the ridge estimator")
    report.text(
        "Bound (derived from CMS11 Lemma 7 with scikit-learn's objective "
        "`||y - Xw||^2 + alpha ||w||^2`, features in the unit ball, `|y| <= 1`): "
        "`2/alpha + sqrt(n)/alpha^1.5`. The adversary replaces one record by extreme "
        "points of the sphere and the response range, on a random base data set and on "
        "a degenerate one that makes the estimator's norm large."
    )
    report.table(sens, "sensitivity")

    # 2. schedule: accuracy, budget, IR
    theta = rng.normal(size=d)
    theta *= 0.6 / np.linalg.norm(theta)
    rows = []
    for n in n_players:
        s = parameter_schedule(n, d, privacy_exponent=privacy_exponent)
        for r in range(repetitions):
            X = _unit_ball(rng, n, d)
            y = np.clip(X @ theta + noise_std * rng.normal(size=n), -1, 1)
            mech = TruthfulRegressionMechanism(
                alpha=s["alpha"], epsilon=s["epsilon"], payment_scale=s["payment_scale"],
                payment_offset=s["payment_offset"], random_state=int(rng.integers(2**31)),
            ).fit(X, y)
            costs = rng.exponential(size=n)  # privacy cost coefficients c_i
            privacy_cost = costs * mech.epsilon_**2  # Assumption 1: c_i eps^2
            rows.append({
                "n": n, "rep": r, "epsilon": s["epsilon"], "alpha": s["alpha"],
                "error": float(np.linalg.norm(mech.coef_ - theta)),
                "ridge_error": float(np.linalg.norm(_ridge(X, y, s["alpha"]) - theta)),
                "budget": mech.budget_, "max_payment": float(mech.payments_.max()),
                "ir_fraction": float(np.mean(mech.payments_ >= privacy_cost)),
                "budget_bound": s["budget_bound"],
                "expected_noise_norm": s["expected_noise_norm"],
                "best_response_factor": float(np.nanmean(mech.best_response_factors_)),
            })
    runs = pd.DataFrame(rows)
    summary = runs.groupby("n", as_index=False).agg(
        epsilon=("epsilon", "first"), alpha=("alpha", "first"), error=("error", "mean"),
        ridge_error=("ridge_error", "mean"), expected_noise_norm=("expected_noise_norm", "first"), budget=("budget", "mean"),
        budget_bound=("budget_bound", "first"), ir_fraction=("ir_fraction", "mean"),
        best_response_factor=("best_response_factor", "mean"))
    report.section("Parameter schedule: accuracy, budget, individual rationality")
    report.text(
        f"`epsilon = n^-{privacy_exponent:g}`, `alpha = min(n^{(3 + 2 * privacy_exponent) / 5:g}, "
        "floor(n/2) / (19 (d + 2)))` (the cap keeps reports within 10 % of the truth), "
        "payment offset `4 epsilon^2` (IR for privacy-cost coefficients up to 1), payment scale "
        f"`n^-{(1 + 2 * privacy_exponent) / 2:g}` (see `parameter_schedule`). `error` is "
        "`||coef_ - theta||` of the released (noisy) estimator, `ridge_error` that of the "
        "noiseless ridge estimator (bias only), `expected_noise_norm` the mean norm "
        "`d Delta / epsilon` of the privacy noise; privacy costs `c_i (2 epsilon)^2` with "
        f"`c_i ~ Exp(1)`. Mean over {repetitions} runs; theta has norm 0.6, d = {d}. "
        "`best_response_factor`: mean over players of the ratio of a player's "
        "payoff-maximising report to her true response (`best_response_factors_`; "
        "1 = truthful)."
    )
    report.table(summary, "schedule", caption="Accuracy, budget and IR fraction against n.")
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ax[0].loglog(summary["n"], summary["error"], "o-", label="released estimator")
    ax[0].loglog(summary["n"], summary["ridge_error"], "s--", label="ridge bias alone")
    ax[0].set_xlabel("players n")
    ax[0].set_ylabel("||theta_hat - theta||")
    ax[0].legend()
    ax[1].loglog(summary["n"], summary["budget"], "o-", label="budget (sum of payments)")
    ax[1].loglog(summary["n"], summary["budget_bound"], "--", label="bound n (offset + scale)")
    ax[1].set_xlabel("players n")
    ax[1].legend()
    fig.tight_layout()
    report.figure(fig, "schedule", caption="Under the schedule, error and budget both vanish (slowly).")
    plt.close(fig)

    # 3. truthfulness by simulation
    tau2, sigma2, Y = 0.25, 0.01, 3.0
    x0, y0 = np.zeros(d), 0.5
    x0[0] = 0.8
    cov = np.linalg.inv(np.eye(d) / tau2 + np.outer(x0, x0) / sigma2)
    mean = cov @ x0 * y0 / sigma2
    deltas = np.linspace(-0.6, 0.6, 13)
    totals = np.zeros(deltas.size)
    mech = TruthfulRegressionMechanism(alpha=30.0, epsilon=20.0, response_bound=Y,
                                       prior_variance=tau2, noise_variance=sigma2)
    for r in range(truthfulness_reps):
        th = rng.multivariate_normal(mean, cov)
        X = _unit_ball(rng, truthfulness_players, d)
        X[0] = x0
        yy = np.clip(X @ th + np.sqrt(sigma2) * rng.normal(size=truthfulness_players), -Y, Y)
        seed = int(rng.integers(2**31))
        for k, delta in enumerate(deltas):
            yy[0] = y0 + delta
            mech.set_params(random_state=seed).fit(X, yy)
            totals[k] += mech.payments_[0]
    truth = pd.DataFrame({"misreport": deltas, "expected_payment": totals / truthfulness_reps})
    best = float(deltas[int(np.argmax(truth["expected_payment"]))])
    coef = np.polyfit(deltas, truth["expected_payment"], 2)
    vertex = float(-coef[1] / (2 * coef[0]))
    report.section("Approximate truthfulness")
    report.text(
        f"Player 0 has `x = {x0.tolist()}` and `y = {y0}`; the others and theta are drawn "
        "from the Gaussian model conditioned on her data (prior variance 0.25, noise variance "
        f"0.01), n = {truthfulness_players}, alpha = 30, epsilon = 20, {truthfulness_reps} runs "
        "with common random numbers per misreport. Her expected payment peaks at misreport "
        f"{best:+.2f} on the grid; the fitted parabola's vertex is at {vertex:+.3f} (the ridge "
        "bias of the peer estimator shifts it slightly below zero)."
    )
    report.table(truth, "truthfulness")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(deltas, truth["expected_payment"], "o-")
    ax.axvline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("misreport y_hat - y")
    ax.set_ylabel("expected payment")
    fig.tight_layout()
    report.figure(fig, "truthfulness", caption="Expected payment against the misreport.")
    plt.close(fig)

    return {
        "sensitivity_max_ratio": float(sens["ratio"].max()),
        "error_smallest_n": float(summary["error"].iloc[0]),
        "error_largest_n": float(summary["error"].iloc[-1]),
        "budget_smallest_n": float(summary["budget"].iloc[0]),
        "budget_largest_n": float(summary["budget"].iloc[-1]),
        "ir_fraction_largest_n": float(summary["ir_fraction"].iloc[-1]),
        "best_misreport": best,
        "payment_vertex": vertex,
    }
