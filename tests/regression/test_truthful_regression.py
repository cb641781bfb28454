"""Mathematical tests of the Private Regression Mechanism (Cummings, Ioannidis, Ligett, Alg. 2)."""

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import minimize
from sklearn.linear_model import Ridge

from privrelease.exceptions import PrivacyLeakWarning
from privrelease.regression import (
    TruthfulRegressionMechanism,
    best_response_factor,
    brier_payment,
    parameter_schedule,
    ridge_sensitivity,
)


def _ridge(X, y, alpha):
    return np.linalg.solve(X.T @ X + alpha * np.eye(X.shape[1]), X.T @ y)


def _unit_ball(rng, n, d):
    """n points uniform in the d-dimensional unit ball."""
    z = rng.normal(size=(n, d))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return z * rng.uniform(size=(n, 1)) ** (1.0 / d)


def _linear_data(rng, n, d, theta, noise=0.1, bound=1.0):
    X = _unit_ball(rng, n, d)
    y = np.clip(X @ theta + noise * rng.normal(size=n), -bound, bound)
    return X, y


# ---------------------------------------------------------------- sensitivity


def test_sensitivity_closed_form():
    # 2Y/alpha + Y sqrt(n) / alpha^1.5
    assert ridge_sensitivity(100, 4.0, 1.0) == pytest.approx(0.5 + 10 / 8)
    assert ridge_sensitivity(1, 1.0, 3.0) == pytest.approx(6 + 3)
    assert ridge_sensitivity(50, 2.0, 0.0) == 0.0


@pytest.mark.parametrize("n, alpha, d", [(20, 1.0, 2), (60, 0.5, 3)])
def test_empirical_sensitivity_under_bound(n, alpha, d):
    """Adversarial neighbours: extreme points on the sphere / response bounds, then local search."""
    rng = np.random.default_rng(1)
    Y = 1.0
    bound = ridge_sensitivity(n, alpha, Y)
    bases = [(_unit_ball(rng, n - 1, d), rng.uniform(-Y, Y, n - 1))]
    for s in (np.sqrt(alpha / n), 1.0):  # all others on one axis: the estimator's norm is large
        Xb = np.zeros((n - 1, d))
        Xb[:, 0] = s
        bases.append((Xb, np.full(n - 1, Y)))
    worst = 0.0
    for Xb, yb in bases:
        # 1. extreme pairs: unit vectors (or 0) with responses at +-Y
        cands = rng.normal(size=(200, d))
        cands /= np.linalg.norm(cands, axis=1, keepdims=True)
        cands = np.vstack([cands, np.eye(d), -np.eye(d), np.zeros((1, d))])
        for _ in range(300):
            i, j = rng.integers(len(cands), size=2)
            yi, yj = rng.choice([-Y, Y], size=2)
            t1 = _ridge(np.vstack([Xb, cands[i]]), np.append(yb, yi), alpha)
            t2 = _ridge(np.vstack([Xb, cands[j]]), np.append(yb, yj), alpha)
            worst = max(worst, np.linalg.norm(t1 - t2))

        # 2. local search over the whole ball x [-Y, Y] for both records
        def neg(z):
            u, v = z[:d], z[d:2 * d]
            x1, x2 = u / max(1.0, np.linalg.norm(u)), v / max(1.0, np.linalg.norm(v))
            y1, y2 = Y * np.tanh(z[2 * d]), Y * np.tanh(z[2 * d + 1])
            t1 = _ridge(np.vstack([Xb, x1]), np.append(yb, y1), alpha)
            t2 = _ridge(np.vstack([Xb, x2]), np.append(yb, y2), alpha)
            return -np.linalg.norm(t1 - t2)

        for _ in range(3):
            res = minimize(neg, 2 * rng.normal(size=2 * d + 2), method="Nelder-Mead",
                           options={"maxiter": 600})
            worst = max(worst, -res.fun)
    assert worst <= bound * (1 + 1e-9)
    # the bound is not vacuous: the adversary gets within a factor 10 of it
    assert worst >= 0.1 * bound


def test_estimator_norm_bound_is_attained_in_order():
    """The sqrt(n) term of the bound: ||theta|| reaches Y sqrt(n) / (2 sqrt(alpha))."""
    n, alpha = 400, 4.0
    X = np.zeros((n, 2))
    X[:, 0] = np.sqrt(alpha / n)
    theta = _ridge(X, np.ones(n), alpha)
    assert np.linalg.norm(theta) == pytest.approx(np.sqrt(n) / (2 * np.sqrt(alpha)))


# ---------------------------------------------------------------- noise


def test_noise_norm_is_gamma():
    """||coef_ - ridge|| ~ Gamma(d, sensitivity / epsilon) (density prop. to exp(-eps ||v|| / Delta))."""
    rng = np.random.default_rng(2)
    n, d, alpha, eps = 40, 3, 10.0, 2.0
    X, y = _linear_data(rng, n, d, np.array([0.3, -0.2, 0.1]))
    exact = _ridge(X, y, alpha)
    mech = TruthfulRegressionMechanism(alpha=alpha, epsilon=eps, random_state=3)
    norms, cosines = [], []
    for seed in range(1500):
        mech.set_params(random_state=seed).fit(X, y)
        v = mech.coef_ - exact
        norms.append(np.linalg.norm(v))
        cosines.append(v[0] / np.linalg.norm(v))
    scale = ridge_sensitivity(n, alpha, 1.0) / eps
    assert mech.sensitivity_ == pytest.approx(ridge_sensitivity(n, alpha, 1.0))
    assert stats.kstest(norms, stats.gamma(a=d, scale=scale).cdf).pvalue > 0.01
    # uniform direction in d=3: the first coordinate of a uniform unit vector is U(-1, 1)
    assert stats.kstest(cosines, stats.uniform(-1, 2).cdf).pvalue > 0.01


def test_group_noise_calibrated_to_group_size():
    rng = np.random.default_rng(4)
    X, y = _linear_data(rng, 101, 2, np.array([0.5, 0.5]))
    mech = TruthfulRegressionMechanism(alpha=3.0, epsilon=1.0, random_state=0).fit(X, y)
    sizes = np.bincount(mech.group_, minlength=2)
    assert sorted(sizes) == [50, 51]
    for g in (0, 1):
        assert mech.group_sensitivity_[g] == pytest.approx(ridge_sensitivity(sizes[g], 3.0, 1.0))
    assert mech.sensitivity_ == pytest.approx(ridge_sensitivity(101, 3.0, 1.0))
    assert mech.epsilon_ == 2.0


# ---------------------------------------------------------------- epsilon = inf


def test_infinite_epsilon_equals_sklearn_ridge():
    rng = np.random.default_rng(5)
    X, y = _linear_data(rng, 150, 4, np.array([0.4, -0.1, 0.2, 0.0]))
    mech = TruthfulRegressionMechanism(alpha=2.5, epsilon=np.inf, random_state=0).fit(X, y)
    ref = Ridge(alpha=2.5, fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(mech.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    assert mech.intercept_ == 0.0
    np.testing.assert_allclose(mech.predict(X), ref.predict(X), rtol=1e-10, atol=1e-12)
    for g in (0, 1):
        m = mech.group_ == g
        ref_g = Ridge(alpha=2.5, fit_intercept=False).fit(X[m], y[m])
        np.testing.assert_allclose(mech.group_coef_[g], ref_g.coef_, rtol=1e-10, atol=1e-12)
    assert mech.epsilon_ == np.inf


def test_infinite_epsilon_warns_once_per_fit():
    # three releases (coef_ and the two group_coef_), one warning; clipping is its own warning
    rng = np.random.default_rng(8)
    X, y = _linear_data(rng, 40, 3, np.array([0.3, 0.1, -0.2]))
    mech = TruthfulRegressionMechanism(epsilon=np.inf, random_state=0)
    for _ in range(2):
        with pytest.warns(PrivacyLeakWarning) as record:
            mech.fit(X, y)
        leaks = [w for w in record if issubclass(w.category, PrivacyLeakWarning)]
        assert len(leaks) == 1
        assert "epsilon=inf" in str(leaks[0].message)
        assert leaks[0].filename == __file__  # points at the caller's fit
    X[0] = [3.0, 4.0, 0.0]
    with pytest.warns(PrivacyLeakWarning) as record:
        TruthfulRegressionMechanism(epsilon=np.inf, clip=True, random_state=0).fit(X, y)
    messages = sorted(str(w.message)[:20] for w in record if issubclass(w.category, PrivacyLeakWarning))
    assert len(messages) == 2 and "1 of 40 records" in messages[0]


def test_payments_follow_brier_rule_against_other_group():
    rng = np.random.default_rng(6)
    X, y = _linear_data(rng, 80, 2, np.array([0.6, -0.3]))
    mech = TruthfulRegressionMechanism(alpha=1.0, epsilon=np.inf, payment_scale=2.0,
                                       payment_offset=0.5, random_state=1).fit(X, y)
    for i in range(80):
        other = mech.group_coef_[1 - mech.group_[i]]
        p = (np.clip(X[i] @ other, -1, 1) + 1) / 2
        q = (y[i] + 1) / 2
        expected = 0.5 + 2.0 * (1 - (p - 2 * p * q + q * q))
        assert mech.payments_[i] == pytest.approx(expected)
    assert mech.budget_ == pytest.approx(mech.payments_.sum())


# ---------------------------------------------------------------- payments


def test_brier_is_strictly_proper_and_bounded():
    rng = np.random.default_rng(7)
    grid = np.linspace(-1, 1, 401)
    for _ in range(20):
        outcomes = rng.uniform(-1, 1, size=50) * rng.uniform()
        expected = brier_payment(*np.broadcast_arrays(outcomes[:, None], grid[None, :])).mean(axis=0)
        assert grid[np.argmax(expected)] == pytest.approx(outcomes.mean(), abs=0.006)
    p, q = np.meshgrid(grid, grid)
    b = brier_payment(p, q)
    assert b.min() >= 0.0 and b.max() <= 1.0
    assert b.min() == pytest.approx(0.0) and b.max() == pytest.approx(1.0)


def test_payments_non_negative_under_heavy_noise():
    rng = np.random.default_rng(8)
    X, y = _linear_data(rng, 60, 3, np.array([0.5, 0.2, -0.4]))
    for seed in range(20):
        mech = TruthfulRegressionMechanism(alpha=0.5, epsilon=0.1, payment_scale=3.0,
                                           payment_offset=0.25, random_state=seed).fit(X, y)
        assert np.all(mech.payments_ >= 0.25) and np.all(mech.payments_ <= 3.25)


def test_expected_payment_peaks_at_truthful_report():
    """Approximate truthfulness by simulation (Theorem 3).

    Player 0 has features x0 and response y0; the others' data and the
    parameter are drawn from the Gaussian model conditioned on her data. For
    each report on a grid, the mechanism is run with common random numbers
    (same split, same noise); her average payment must peak at the truth.
    """
    rng = np.random.default_rng(9)
    d, n, tau2, sigma2, Y = 2, 6000, 0.25, 0.01, 3.0
    x0, y0 = np.array([0.8, 0.0]), 0.5
    prec = np.eye(d) / tau2 + np.outer(x0, x0) / sigma2
    cov = np.linalg.inv(prec)
    mean = cov @ x0 * y0 / sigma2
    deltas = np.array([-0.6, -0.3, -0.15, 0.0, 0.15, 0.3, 0.6])
    totals = np.zeros(len(deltas))
    reps = 150
    mech = TruthfulRegressionMechanism(alpha=30.0, epsilon=20.0, response_bound=Y,
                                       prior_variance=tau2, noise_variance=sigma2)
    for r in range(reps):
        theta = rng.multivariate_normal(mean, cov)
        X = _unit_ball(rng, n, d)
        X[0] = x0
        y = np.clip(X @ theta + np.sqrt(sigma2) * rng.normal(size=n), -Y, Y)
        for k, delta in enumerate(deltas):
            y[0] = y0 + delta
            mech.set_params(random_state=r).fit(X, y)
            totals[k] += mech.payments_[0]
    avg = totals / reps
    # the optimum of the fitted parabola (in the report) lies close to the truth
    vertex = -np.polyfit(deltas[1:-1], avg[1:-1], 2)[1] / (2 * np.polyfit(deltas[1:-1], avg[1:-1], 2)[0])
    assert abs(vertex) < 0.06
    assert np.argmax(avg) == 3
    assert avg[3] > avg[2] and avg[3] > avg[4]
    # the expected payment is (up to clipping) a concave quadratic in the report
    assert avg[0] < avg[1] < avg[2] and avg[4] > avg[5] > avg[6]


def test_flat_prior_shrinks_nothing_gaussian_prior_shrinks():
    X = np.array([[0.5, 0.0], [0.0, 1.0], [0.0, 0.0]])
    y = np.array([0.4, -0.2, 0.7])
    flat = TruthfulRegressionMechanism()._own_prediction(X, y)
    np.testing.assert_allclose(flat, [0.4, -0.2, 0.0])
    g = TruthfulRegressionMechanism(prior_variance=1.0, noise_variance=0.25)._own_prediction(X, y)
    np.testing.assert_allclose(g, [0.25 * 0.4 / 0.5, 1.0 * -0.2 / 1.25, 0.0])


# ---------------------------------------------------------------- schedule


def test_schedule_exponents_and_limits():
    q = 0.6
    s = parameter_schedule(1000, 3, privacy_exponent=q, response_tolerance=None)
    p = s["alpha_exponent"]
    assert (1 + 2 * q) / 3 < p < 1
    assert s["epsilon"] == pytest.approx(1000 ** -q)
    assert s["alpha"] == pytest.approx(1000 ** p)
    assert s["payment_offset"] == pytest.approx(4 * s["epsilon"] ** 2)
    assert s["budget_bound"] == pytest.approx(1000 * (s["payment_offset"] + s["payment_scale"]))
    big = parameter_schedule(10**8, 3, privacy_exponent=q, response_tolerance=None)
    for key in ("budget_bound", "expected_noise_norm", "ridge_shrinkage", "epsilon"):
        assert big[key] < s[key]
    # the payment incentive dominates the privacy saving more and more
    assert big["payment_scale"] / big["privacy_cost_bound"] > s["payment_scale"] / s["privacy_cost_bound"]


# ---------------------------------------------------------------- best response (incentives)


def test_best_response_factor_closed_form_and_audit_values():
    # m / (m + alpha (d + 2)), m = floor(n / 2)
    assert best_response_factor(2000, 2, 5.0) == pytest.approx(1000 / 1020)
    assert best_response_factor(2001, 3, 10.0) == pytest.approx(1000 / 1050)
    # the audit: the uncapped schedule at n = 2000 makes the best report about 0.30 y
    s = parameter_schedule(2000, 2, response_tolerance=None)
    assert s["best_response_factor"] == pytest.approx(1000 / (1000 + 4 * 2000**0.84))
    assert 0.25 < s["best_response_factor"] < 0.35
    # f >= 1 - t exactly when alpha (d + 2) <= m t / (1 - t)
    m, d, t = 500, 3, 0.1
    edge = m * t / (1 - t) / (d + 2)
    assert best_response_factor(2 * m, d, edge) == pytest.approx(1 - t)
    above, below = (best_response_factor(2 * m, d, edge * c) for c in (1.01, 0.99))
    assert above < 1 - t < below


def test_payoff_maximising_report_by_simulation():
    """Simulate the mechanism's real payments for a grid of reports of player 0, with common
    random numbers: the expected payment peaks at f * y0, f the mean of her measured
    best_response_factors_ (and close to the predicted best_response_factor)."""
    rng = np.random.default_rng(20)
    n, d, alpha, Y = 400, 2, 100.0, 3.0
    tau2, sigma2 = 0.25, 0.01
    x0, y0 = np.array([0.8, 0.0]), 0.5
    cov = np.linalg.inv(np.eye(d) / tau2 + np.outer(x0, x0) / sigma2)   # her posterior
    mean = cov @ x0 * y0 / sigma2
    reports = np.linspace(0.0, 0.6, 7)
    totals, factors = np.zeros(reports.size), []
    mech = TruthfulRegressionMechanism(alpha=alpha, epsilon=50.0, response_bound=Y,
                                       prior_variance=tau2, noise_variance=sigma2)
    for _ in range(80):
        th = rng.multivariate_normal(mean, cov)
        X = _unit_ball(rng, n, d)
        X[0] = x0
        yy = X @ th + np.sqrt(sigma2) * rng.normal(size=n)
        seed = int(rng.integers(2**31))
        for k, r in enumerate(reports):
            yy[0] = r
            mech.set_params(random_state=seed).fit(X, yy)
            totals[k] += mech.payments_[0]
        factors.append(mech.best_response_factors_[0])
    coef = np.polyfit(reports, totals, 2)
    best_report = -coef[1] / (2 * coef[0])
    measured = np.mean(factors)
    assert best_report / y0 == pytest.approx(measured, rel=0.07)
    assert measured == pytest.approx(best_response_factor(n, d, alpha), rel=0.06)
    assert best_report < 0.5 * y0          # strong shrinkage: far from truthful


def test_default_schedule_keeps_reports_within_ten_percent():
    rng = np.random.default_rng(21)
    theta = np.array([0.5, -0.4])
    for n in (300, 3_000, 30_000):
        s = parameter_schedule(n, 2)
        assert s["alpha_capped"] and s["best_response_factor"] == pytest.approx(0.95)
        X, y = _linear_data(rng, n, 2, theta)
        mech = TruthfulRegressionMechanism(alpha=s["alpha"], epsilon=s["epsilon"],
                                           random_state=n).fit(X, y)
        # every player's payoff-maximising report is within 10 % of her response
        assert np.nanmin(mech.best_response_factors_) >= 0.9
        # the uncapped schedule would not: the audit's 0.30 at n = 2000
        old = parameter_schedule(n, 2, response_tolerance=None)
        assert old["best_response_factor"] < 0.75
    # predicted factor >= 0.95 at every n, and it tends to 1 once the cap stops binding
    ns = np.unique(np.logspace(np.log10(2), 18, 60).astype(np.int64))
    f = np.array([parameter_schedule(int(n), 2)["best_response_factor"] for n in ns])
    assert np.all(f >= 0.95 - 1e-12) and f[-1] > 0.97
    # privacy and budget still vanish (they do not depend on alpha)
    eps = np.array([parameter_schedule(int(n), 2)["epsilon"] for n in ns])
    bud = np.array([parameter_schedule(int(n), 2)["budget_bound"] for n in ns])
    assert np.all(np.diff(eps) < 0) and np.all(np.diff(bud[ns >= 10]) < 0)
    assert eps[-1] < 1e-10 and bud[-1] < 0.02
    with pytest.raises(ValueError, match="response_tolerance must be < 1, got 1.5"):
        parameter_schedule(100, 2, response_tolerance=1.5)


def test_best_response_factors_attribute_is_the_rayleigh_quotient():
    rng = np.random.default_rng(22)
    X, y = _linear_data(rng, 60, 3, np.array([0.2, 0.1, -0.3]))
    X[5] = 0.0
    mech = TruthfulRegressionMechanism(alpha=7.0, epsilon=np.inf, random_state=1)
    with pytest.warns(PrivacyLeakWarning):
        mech.fit(X, y)
    for i in (0, 17, 42):
        Xo = X[mech.group_ != mech.group_[i]]
        # E[ridge(X_o, X_o theta)] = S theta: S by sklearn's Ridge on the columns of X_o
        S = np.column_stack([Ridge(alpha=7.0, fit_intercept=False).fit(Xo, Xo[:, j]).coef_
                             for j in range(3)])
        assert mech.best_response_factors_[i] == pytest.approx(X[i] @ S @ X[i] / (X[i] @ X[i]))
    assert np.isnan(mech.best_response_factors_[5])


def test_budget_shrinks_and_accuracy_improves_with_n():
    theta = np.array([0.5, -0.4])
    rng = np.random.default_rng(10)
    errors, budgets = [], []
    for n in (1_000, 30_000, 300_000):
        sched = parameter_schedule(n, 2, privacy_exponent=0.55)
        err, budget = [], []
        for seed in range(6):
            X, y = _linear_data(rng, n, 2, theta)
            mech = TruthfulRegressionMechanism(
                alpha=sched["alpha"], epsilon=sched["epsilon"],
                payment_scale=sched["payment_scale"], payment_offset=sched["payment_offset"],
                random_state=seed,
            ).fit(X, y)
            err.append(np.linalg.norm(mech.coef_ - theta))
            budget.append(mech.budget_)
            assert mech.budget_ <= sched["budget_bound"]
        errors.append(np.mean(err))
        budgets.append(np.mean(budget))
    assert errors[0] > errors[1] > errors[2]
    assert budgets[0] > budgets[1] > budgets[2]


# ---------------------------------------------------------------- randomness


def test_secure_by_default_and_reproducible_with_seed():
    rng = np.random.default_rng(11)
    X, y = _linear_data(rng, 30, 2, np.array([0.1, 0.2]))
    a = TruthfulRegressionMechanism().fit(X, y).coef_
    b = TruthfulRegressionMechanism().fit(X, y).coef_
    assert not np.array_equal(a, b)
    c = TruthfulRegressionMechanism(random_state=5).fit(X, y)
    d = TruthfulRegressionMechanism(random_state=5).fit(X, y)
    np.testing.assert_array_equal(c.coef_, d.coef_)
    np.testing.assert_array_equal(c.group_, d.group_)


def test_split_is_uniform():
    X = np.zeros((6, 1))
    y = np.zeros(6)
    counts = np.zeros(6)
    for seed in range(600):
        counts += TruthfulRegressionMechanism(random_state=seed).fit(X, y).group_
    # each player lands in group 1 with probability 1/2 (3 of 6 slots)
    assert np.all(np.abs(counts / 600 - 0.5) < 0.08)


# ---------------------------------------------------------------- bad input


def test_features_outside_unit_ball_raise_with_value():
    X = np.array([[0.1, 0.2], [1.5, 0.0], [0.0, 0.3]])
    y = np.array([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"unit ball.*\|\|x_1\|\|_2 = 1\.5"):
        TruthfulRegressionMechanism().fit(X, y)


def test_responses_out_of_bounds_raise_with_value():
    X = np.array([[0.1, 0.2], [0.5, 0.0], [0.0, 0.3]])
    y = np.array([0.1, -2.5, 0.3])
    with pytest.raises(ValueError, match=r"response_bound = 1\.0; got y_1 = -2\.5"):
        TruthfulRegressionMechanism().fit(X, y)


def test_clip_warns_and_projects():
    X = np.array([[3.0, 4.0], [0.5, 0.0], [0.0, 0.3], [0.1, 0.1]])
    y = np.array([0.1, -2.5, 0.3, 0.2])
    with pytest.warns(PrivacyLeakWarning, match="2 of 4 records were clipped"):
        mech = TruthfulRegressionMechanism(clip=True, epsilon=np.inf, alpha=1.0).fit(X, y)
    Xc = np.array([[0.6, 0.8], [0.5, 0.0], [0.0, 0.3], [0.1, 0.1]])
    yc = np.array([0.1, -1.0, 0.3, 0.2])
    np.testing.assert_allclose(mech.coef_, _ridge(Xc, yc, 1.0))
    assert mech.n_clipped_ == 2


def test_too_few_players():
    with pytest.raises(ValueError, match="at least 2 players, got n_samples = 1"):
        TruthfulRegressionMechanism().fit(np.array([[0.1]]), np.array([0.2]))


@pytest.mark.parametrize("param, value", [("epsilon", 0.0), ("epsilon", -1.0), ("alpha", 0.0),
                                          ("response_bound", -1.0), ("payment_scale", -0.1),
                                          ("prior_variance", 0.0), ("clip", "yes")])
def test_invalid_parameters_named(param, value):
    mech = TruthfulRegressionMechanism(**{param: value})
    with pytest.raises(ValueError, match=param):
        mech.fit(np.zeros((4, 1)), np.zeros(4))


def test_schedule_bad_input():
    with pytest.raises(ValueError, match=r"privacy_exponent must be > 0.5, got 0.5"):
        parameter_schedule(100, 2, privacy_exponent=0.5)
    with pytest.raises(ValueError, match=r"n_samples must be >= 2, got 1"):
        parameter_schedule(1, 2)
    with pytest.raises(TypeError, match="n_features"):
        parameter_schedule(10, "two")
