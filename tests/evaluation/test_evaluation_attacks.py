import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import roc_auc_score

from privrelease.evaluation import InferenceAttack, attack, evaluate_attacks

from evaluation_doubles import planted_ratings


@pytest.mark.parametrize("model", ["logistic", "forest"])
@pytest.mark.parametrize("features", ["values", "indicators"])
def test_planted_signal_is_found(model, features):
    X, y = planted_ratings(n_users=400, strength=0.9, seed=1)
    res = attack(X[:200], y[:200], X[200:], y[200:], model=model, features=features, random_state=0)
    # 90% of users reveal their class through the planted items: AUC close to 0.95
    assert res.auc > 0.85
    assert res.accuracy > res.majority_accuracy + 0.2
    assert res.advantage == pytest.approx(res.accuracy - res.majority_accuracy)


@pytest.mark.parametrize("model", ["logistic", "forest"])
def test_independent_data_gives_chance(model):
    X, y = planted_ratings(n_users=600, strength=0.0, seed=2)
    res = attack(X[:300], y[:300], X[300:], y[300:], model=model, random_state=0)
    # 300 test users: the AUC of an uninformed scorer has sd ~0.033
    assert abs(res.auc - 0.5) < 0.12


def test_auc_and_roc_agree_with_sklearn():
    X, y = planted_ratings(n_users=200, strength=0.5, seed=3)
    att = InferenceAttack(random_state=0).fit(X[:100], y[:100])
    res = att.evaluate(X[100:], y[100:])
    p = att.predict_proba(X[100:])[:, 1]
    assert res.auc == pytest.approx(roc_auc_score(y[100:], p))
    assert res.auc == pytest.approx(np.trapezoid(res.tpr, res.fpr))
    assert res.majority_accuracy == pytest.approx(np.mean(y[100:] == att.majority_class_))
    assert res.accuracy == pytest.approx(np.mean(att.predict(X[100:]) == y[100:]))


def test_indicators_ignore_values():
    X, y = planted_ratings(n_users=200, strength=0.6, seed=4)
    X2 = X.copy()
    X2.data = np.where(X2.data > 0, 1.0 + (X2.data % 5), 0)  # change every value, keep the pattern
    a = InferenceAttack(features="indicators", random_state=0).fit(X[:100], y[:100])
    b = InferenceAttack(features="indicators", random_state=0).fit(X2[:100], y[:100])
    np.testing.assert_allclose(a.predict_proba(X[100:]), b.predict_proba(X2[100:]))


def test_dense_and_sparse_agree():
    X, y = planted_ratings(n_users=120, strength=0.7, seed=5)
    a = InferenceAttack(random_state=0).fit(X, y).predict_proba(X)
    b = InferenceAttack(random_state=0).fit(X.toarray(), y).predict_proba(X.toarray())
    np.testing.assert_allclose(a, b, atol=1e-8)


def test_unseen_class_is_an_error():
    X, y = planted_ratings(n_users=100, seed=6)
    att = InferenceAttack().fit(X, y)
    y_bad = y.copy()
    y_bad[0] = 7
    with pytest.raises(ValueError, match=r"class\(es\) \[7\].*never saw"):
        att.evaluate(X, y_bad)


def test_single_class_is_an_error():
    X, _ = planted_ratings(n_users=50, seed=7)
    with pytest.raises(ValueError, match=r"at least two classes.*one class: \[1\]"):
        InferenceAttack().fit(X, np.ones(50, dtype=int))


def test_bad_parameters_are_rejected():
    X, y = planted_ratings(n_users=50, seed=7)
    with pytest.raises(ValueError, match="features"):
        InferenceAttack(features="binary").fit(X, y)
    with pytest.raises(ValueError, match="model"):
        InferenceAttack(model="svm").fit(X, y)


def test_multiclass_auc_is_macro_ovr():
    rng = np.random.default_rng(8)
    y = rng.integers(0, 3, 300)
    X = sp.csr_matrix(np.eye(3)[y] * 5 * (rng.random((300, 1)) < 0.8) + rng.integers(0, 2, (300, 3)))
    res = attack(X[:150], y[:150], X[150:], y[150:], random_state=0)
    assert res.auc > 0.8 and res.fpr.size == 0


def test_fixed_and_adaptive_attackers():
    X, y = planted_ratings(n_users=400, strength=0.9, seed=9)
    # a release that moves the planted signal to other items: the fixed attacker is fooled,
    # the adaptive one, trained on released data, is not
    def release(M):
        M = M.toarray()
        return sp.csr_matrix(np.roll(M, 5, axis=1))

    table, res = evaluate_attacks(X[:200], release(X[:200]), y[:200], release(X[200:]), y[200:],
                                  models=["logistic"], random_state=0)
    auc = table.set_index(["attacker", "features"])["auc"]
    assert auc[("adaptive", "values")] > 0.85
    assert auc[("fixed", "values")] < 0.7
    assert ("fixed", "logistic", "values") in res
    assert set(table.columns) >= {"attacker", "model", "features", "auc", "accuracy", "majority_accuracy"}
    # reuse of fitted fixed attackers gives the same figures
    table2, _ = evaluate_attacks(X[:200], None, y[:200], release(X[200:]), y[200:], models=["logistic"],
                                 fixed_attackers=res["fixed_attackers"], random_state=1)
    np.testing.assert_allclose(table2["auc"].to_numpy(), table[table.attacker == "fixed"]["auc"].to_numpy())
