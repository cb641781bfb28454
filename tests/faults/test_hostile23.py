"""Stop 45's last hostile round (loaders, evaluation, the accountant), each fixed by the lead and failing before."""
import pickle
import subprocess
import sys

import numpy as np
import pytest

from privrelease.datasets import load_movielens_100k, load_ratings_csv
from privrelease.evaluation import InferenceAttack, evaluate_attacks
from shared_helpers import fake_ml100k


def test_one_snapshot_loaded_twice_in_a_later_session_is_one_ledger():
    from privrelease.exceptions import BudgetExceededError

    code = ("import pickle, sys; from privrelease.accounting import PrivacyAccountant; "
            "acc = PrivacyAccountant(1.0); acc.spend(0.4); sys.stdout.buffer.write(pickle.dumps(acc))")
    raw = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    a, b = pickle.loads(raw), pickle.loads(raw)
    assert a is b and a.spent == pytest.approx(0.4)
    a.spend(0.6)
    with pytest.raises(BudgetExceededError):  # each load spent 0.6 of what remained: 1.6 on a budget of 1
        b.spend(0.6)


@pytest.fixture(scope="module")
def attack_data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 80)
    X = rng.integers(1, 6, (80, 12)).astype(float) * (rng.random((80, 12)) < 0.6)
    X[:, 0] += 2 * y * (X[:, 0] > 0)
    return X[:40], y[:40], X[40:], y[40:]


def test_a_fixed_attacker_filed_under_another_key_is_refused(attack_data):
    Xtr, ytr, Xte, yte = attack_data
    forest = InferenceAttack(model="forest", features="indicators", random_state=0).fit(Xtr, ytr)
    with pytest.raises(ValueError, match=r"not the attacker its key names"):
        evaluate_attacks(Xtr, Xtr, ytr, Xte, yte, models=["logistic"], features=["values"],
                         fixed_attackers={("logistic", "values"): forest}, verbose=0)


@pytest.mark.parametrize("fixed, match", [({("logistic", "values"): 5}, "must be a fitted InferenceAttack"),
                                          ([5], "must be a dict"), ("ab", "must be a dict"),
                                          ({"x": 5}, "must be a tuple")])
def test_fixed_attackers_of_the_wrong_kind_are_named(attack_data, fixed, match):
    Xtr, ytr, Xte, yte = attack_data
    with pytest.raises(TypeError, match=match):
        evaluate_attacks(Xtr, Xtr, ytr, Xte, yte, models=["logistic"], features=["values"],
                         fixed_attackers=fixed, verbose=0)


@pytest.mark.parametrize("which", [0, 3])
def test_a_missing_rating_matrix_is_named(attack_data, which):
    args = [attack_data[0], attack_data[0], attack_data[1], attack_data[2], attack_data[3]]
    args[which] = None if which == 3 else 5
    name = "X_test_released" if which == 3 else "X_train_original"
    with pytest.raises(TypeError, match=name):
        evaluate_attacks(*args, verbose=0)


def test_a_trailing_nul_in_a_movielens_id_is_refused(tmp_path):
    folder, _, _ = fake_ml100k(tmp_path / "ml")
    lines = (folder / "u.data").read_text().splitlines(keepends=True)
    u, rest = lines[0].split("\t", 1)
    lines[0] = f"{u}\x00\t{rest}"  # numpy's str dtype dropped the NUL: read as user u, merged into her
    (folder / "u.data").write_text("".join(lines))
    with pytest.raises(ValueError, match="is not an integer"):
        load_movielens_100k(folder)


@pytest.mark.parametrize("bad", [["user"], {"user": 1}, slice(0, 1), 1.5])
def test_a_column_named_by_something_else_than_a_name_or_position_is_refused(tmp_path, bad):
    p = tmp_path / "r.csv"
    p.write_text("user,item,rating\n1,1,4\n2,1,3\n")
    with pytest.raises(TypeError, match="column name .* or a 0-based position"):
        load_ratings_csv(p, user_col=bad)


def test_no_rating_file_is_named():
    with pytest.raises(TypeError, match="path must be a str or path-like naming the rating file, got None"):
        load_ratings_csv(None)
