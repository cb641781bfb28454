"""The chance level of the folded AUC (chance_folded_auc): exact Mann-Whitney figures against brute force and Monte
Carlo, the normal approximation against the exact within its documented error, the multi-class mean, and an
uninformed attacker scoring at chance end to end."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_random_state

from privrelease.evaluation import AttackResult, InferenceAttack, chance_folded_auc, evaluate_attacks
from privrelease.evaluation._chance import _chance_pair, _mann_whitney_null, _normal_mean_abs


def _brute_force(n1, n0):
    """Mean of max(AUC, 1 - AUC) over every placement of n1 positives among n1 + n0 untied scores."""
    n = n1 + n0
    folded = []
    for pos in itertools.combinations(range(n), n1):
        y = np.zeros(n, dtype=bool)
        y[list(pos)] = True
        score = np.arange(n)  # untied scores; the AUC counts the (positive, negative) pairs in order
        auc = np.mean(score[y][:, None] > score[~y][None, :])
        folded.append(max(auc, 1 - auc))
    return float(np.mean(folded))


@pytest.mark.parametrize("n1, n0", [(1, 1), (1, 4), (2, 2), (2, 3), (3, 3), (4, 5), (3, 8), (5, 5)])
def test_exact_chance_equals_brute_force_over_all_rankings(n1, n0):
    assert chance_folded_auc([n0, n1]) == pytest.approx(_brute_force(n1, n0), abs=1e-12)
    assert chance_folded_auc([n1, n0]) == chance_folded_auc([n0, n1])  # symmetric in the two classes


def _q_binomial_counts(m, n):
    """Number of rankings with U = u, in exact integers (the product of (1 - q^(n+i)) / (1 - q^i))."""
    p = [1]
    for i in range(1, m + 1):
        a = p + [0] * (n + i)
        for u in range(len(a) - 1, n + i - 1, -1):
            a[u] -= a[u - n - i]
        for u in range(i, len(a)):
            a[u] += a[u - i]
        p = a[:i * n + 1]
    return p


@pytest.mark.parametrize("m, n", [(2, 5), (7, 9), (40, 60)])
def test_null_distribution_matches_exact_integer_counts(m, n):
    counts = _q_binomial_counts(m, n)
    assert sum(counts) == math.comb(m + n, m)
    exact = np.array([c / sum(counts) for c in counts])
    np.testing.assert_allclose(_mann_whitney_null(m, n), exact, rtol=0, atol=1e-14)


def test_exact_chance_of_a_small_class_agrees_with_monte_carlo():
    # a 10 % class among 170 users (the brief's example): ~0.559, well above 0.5
    n1, n0, draws = 17, 153, 20000
    rng = np.random.default_rng(0)
    ranks = np.argsort(rng.random((draws, n1 + n0)), axis=1)  # a uniformly random ranking per draw
    pos_ranks = ranks[:, :n1].astype(float)  # the positives' ranks (0-based)
    u = pos_ranks.sum(axis=1) - n1 * (n1 - 1) / 2
    auc = u / (n1 * n0)
    folded = np.maximum(auc, 1 - auc)
    se = folded.std(ddof=1) / np.sqrt(draws)
    chance = chance_folded_auc([n0, n1])
    assert abs(folded.mean() - chance) < 4 * se
    assert 0.555 < chance < 0.565


@pytest.mark.parametrize("m, n, tol", [(10, 100, 1e-5), (10, 2000, 1e-5), (20, 200, 1e-5), (50, 500, 1e-5),
                                       (100, 100, 1e-5), (2, 200_000, 3e-4), (2, 2000, 3e-4), (3, 30, 3e-4),
                                       (3, 2000, 3e-4), (5, 50, 3e-4)])
def test_normal_approximation_is_within_its_documented_error(m, n, tol):
    # documented: below 1e-5 when the smaller class has 10 users or more, below 3e-4 for 2 to 9 users beside
    # more than a thousand (the approximation is used only beyond 49 000)
    exact = _chance_pair(m, n)
    approx = 0.5 + _normal_mean_abs(m, n) / (m * n)
    assert abs(approx - exact) < tol
    # the plain normal figure 0.5 + sd sqrt(2 / pi) is low (U is flatter than a normal)
    sd = math.sqrt((m + n + 1) / (12 * m * n))
    assert 0.5 + sd * math.sqrt(2 / math.pi) < exact


def test_large_classes_use_the_approximation_and_agree_with_the_formula():
    n = 5000  # beyond the exact budget
    sd = math.sqrt((2 * n + 1) / (12 * n * n))
    assert chance_folded_auc([n, n]) == pytest.approx(0.5 + sd * math.sqrt(2 / math.pi), abs=1e-6)
    # a class of one user: U uniform on 0 .. n, exact at any size
    for n0 in (1, 2, 7, 10, 4_000_001):
        exact = 0.5 + np.mean(np.abs(np.arange(n0 + 1) - n0 / 2)) / n0 if n0 < 100 else 0.75 + 1 / (4 * n0)
        assert chance_folded_auc([n0, 1]) == pytest.approx(exact, abs=1e-12)


def test_multi_class_is_the_mean_of_the_one_vs_rest_chances():
    counts = [30, 12, 5, 60]
    total = sum(counts)
    expected = np.mean([_chance_pair(c, total - c) for c in counts])
    assert chance_folded_auc(counts) == pytest.approx(expected, rel=0, abs=1e-15)
    # absent classes are dropped, as folded_auc averages over the classes present
    assert chance_folded_auc([30, 0, 12, 5, 60]) == chance_folded_auc(counts)
    assert np.isnan(chance_folded_auc([10])) and np.isnan(chance_folded_auc([0, 10])) and np.isnan(
        chance_folded_auc([]))
    # a 6-class attribute among 170 users: every class small, chance far above 0.5
    assert chance_folded_auc([28, 28, 28, 28, 29, 29]) > 0.54


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match=r">= 0, got \[3, -1\]"):
        chance_folded_auc([3, -1])
    with pytest.raises(TypeError, match="whole numbers"):
        chance_folded_auc([3.5, 2])
    assert chance_folded_auc([3.0, 2.0]) == chance_folded_auc([3, 2])


class RandomProba(ClassifierMixin, BaseEstimator):
    """An attacker that ignores X: Dirichlet probabilities, untied."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self._rng = check_random_state(self.random_state)
        return self

    def predict_proba(self, X):
        return self._rng.dirichlet(np.ones(self.classes_.size), size=np.shape(X)[0])


@pytest.mark.parametrize("counts", [[20, 80], [10, 15, 25]])
def test_an_uninformed_attacker_scores_at_chance(counts):
    rng = np.random.default_rng(1)
    n = sum(counts)
    y_test = np.repeat(np.arange(len(counts)), counts)
    folded, chances = [], []
    for seed in range(60):
        X = rng.integers(0, 6, (2 * n, 5))
        y_train = rng.permutation(y_test)  # labels independent of X
        res = InferenceAttack(model=RandomProba(), random_state=seed).fit(X[:n], y_train).evaluate(
            X[n:], rng.permutation(y_test))
        folded.append(res.folded_auc)
        chances.append(res.chance_folded_auc)
    assert np.unique(chances).size == 1 and chances[0] == chance_folded_auc(counts)
    se = np.std(folded, ddof=1) / np.sqrt(len(folded))
    assert abs(np.mean(folded) - chances[0]) < 4 * se
    assert chances[0] > 0.53  # well above 0.5: a 0.53 here is no leakage


def test_attack_result_and_table_carry_the_chance_of_the_classes_present():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, (200, 6))
    y = np.repeat([0, 1, 2, 3], 50)
    y_test = np.array([0] * 30 + [1] * 12 + [3] * 8)  # class 2 absent among the scored users
    res = InferenceAttack(random_state=0).fit(X, y).evaluate(X[:50], y_test)
    assert res.chance_folded_auc == chance_folded_auc([30, 12, 8])
    assert list(res.as_dict())[-2:] == ["folded_auc", "chance_folded_auc"]  # appended
    assert np.isnan(AttackResult(0.5, 0.5, 0.5, 0.0, 1).chance_folded_auc)  # the default: unknown
    # an undisclosed label is not scored, so not counted
    res2 = InferenceAttack(random_state=0).fit(X, y).evaluate(X[:51], np.r_[y_test, -1])
    assert res2.chance_folded_auc == res.chance_folded_auc
    table, _ = evaluate_attacks(X[:100], X[:100], y[:100] % 2, X[100:], y[100:] % 2, models=["logistic"],
                                features=["values"], random_state=0, verbose=0)
    assert list(table.columns[-2:]) == ["folded_auc", "chance_folded_auc"]
    assert (table["chance_folded_auc"] == chance_folded_auc([50, 50])).all()


def test_the_curve_appends_the_chance_column():
    from privrelease.evaluation import privacy_utility_curve
    from privrelease.evaluation._curve import _chance_columns

    from evaluation_doubles import BiasRecommender, ErasingMapper, planted_ratings

    X, Y = planted_ratings(n_users=120, n_items=15, strength=0.9, seed=0)
    curve = privacy_utility_curve(ErasingMapper(), X, Y, deltas=[0, 3], cv=2, recommender=BiasRecommender(),
                                  attack_models=["logistic"], attack_features=["values"], random_state=0,
                                  n_jobs=1, verbose=0)
    f = curve.frame
    assert f.columns[-1] == "chance_folded_auc"
    assert list(f.columns[:-1]).index("rel_increase_release_nothing") == f.shape[1] - 2  # the others kept
    n_prot = curve.reference_attacks["n_samples"].iloc[0]
    chance = curve.reference_attacks["chance_folded_auc"].iloc[0]
    assert (f["chance_folded_auc"] == chance).all() and (curve.attacks["chance_folded_auc"] == chance).all()
    assert any(chance == chance_folded_auc([k, n_prot - k]) for k in range(1, n_prot))  # two classes of the users
    # a 2-D attribute: one figure per target, the marginals suffixed
    table = pd.DataFrame({"target": ["joint", "joint", "a", "b"], "chance_folded_auc": [0.6, 0.6, 0.55, 0.52]})
    assert _chance_columns(table) == {"chance_folded_auc": 0.6, "chance_folded_auc__a": 0.55,
                                      "chance_folded_auc__b": 0.52}
    assert _chance_columns(table.drop(columns="chance_folded_auc")) == {}  # an older table


def test_runner_notes_give_the_chance_figure():
    from privrelease.runner.experiments.politics_tv_ratings import _chance_sentence
    from privrelease.runner.experiments.synthetic_ratings import _chance_note

    frame = pd.DataFrame({"worst_auc_adaptive": [0.56], "chance_folded_auc": [0.559],
                          "chance_folded_auc__age": [0.571]})
    note = _chance_note(frame, 170)
    assert "**0.559**" in note and "170 protected users" in note and "age 0.571" in note
    assert _chance_note(frame.drop(columns=["chance_folded_auc", "chance_folded_auc__age"]), 170) == ""
    sentence = _chance_sentence(pd.DataFrame({"chance_folded_auc": [0.5 + 0.05 * math.sqrt(2 / math.pi)]}))
    assert "0.5 +- 0.050" in sentence and "0.540" in sentence
