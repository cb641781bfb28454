"""Hostile labels, sixteenth audit: labels numpy cannot order (frozensets, Enums, tuples in a 1-D y), whole numbers
beyond 2**53 beside a float, the command line's users files, -1/+1 codings and the messages (one test or group per
finding)"""

import enum
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privrelease import ErasureMapper, QuantizedPrivacyMapper
from privrelease.evaluation import BlurMe, BlurMore, InferenceAttack, evaluate_attacks, privacy_utility_curve, rmse_cost
from privrelease.utils import check_private_labels
from tests.shared_helpers import run_cli

N = 120
PIPELINE = str(Path(__file__).resolve().parents[2] / "pipelines" / "ratings_file.toml")


def _X(n=N, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(1, 6, (n, 8)).astype(float)
    X[rng.random((n, 8)) < 0.3] = 0
    return X


class _Colour(enum.Enum):
    RED = 1
    BLUE = 2


_FROZENSETS = pd.Series([frozenset({1}), frozenset({2}), frozenset({3})] * (N // 3))
_TUPLES = pd.Series([("a", 1), ("b", 2), ("a", 2)] * (N // 3))


def _entry_points():
    X, Xc = _X(), np.random.default_rng(0).integers(0, 3, (N, 3))
    return {
        "quantized": lambda y: QuantizedPrivacyMapper(random_state=0, n_clusters=3).fit(X, y),
        "erasure": lambda y: ErasureMapper().fit(Xc, y),
        "attack": lambda y: InferenceAttack().fit(X, y),
        "blurme": lambda y: BlurMe().fit(X, y),
        "blurmore": lambda y: BlurMore().fit(X, y),
        "curve": lambda y: privacy_utility_curve(QuantizedPrivacyMapper(random_state=0, n_clusters=3), X, y,
                                                 max_leakages=[0.1], cv=2, attack_models=["logistic"],
                                                 attack_features=["values"], random_state=0, verbose=0),
        "rmse_cost": lambda y: rmse_cost(QuantizedPrivacyMapper(random_state=0, n_clusters=3), X, y, cv=2, verbose=0),
    }


# finding 1: labels numpy cannot order were 81 "classes" (three frozensets), or "'<' not supported" (an Enum)
@pytest.mark.parametrize("entry", list(_entry_points()))
@pytest.mark.parametrize("y, what", [(_FROZENSETS, "frozenset"),
                                     (pd.Series([_Colour.RED, _Colour.BLUE] * (N // 2)), "_Colour"),
                                     (pd.Series([{1}, {2}] * (N // 2)), "set")])
def test_unorderable_labels_refused_by_every_entry_point(entry, y, what):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=f"labels of type {what} .*encode each value as a string.*2-D"):
            _entry_points()[entry](y)


# finding 2: a 1-D y of tuples was 3 classes for the mapper and 2 columns for the curve
@pytest.mark.parametrize("entry", ["quantized", "attack", "blurme", "curve"])
def test_tuples_in_a_1d_y_refused_with_the_2d_hint(entry):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=r"tuples as labels \(for example \('a', 1\)\).*pass a 2-D y|2-D private"):
            _entry_points()[entry](_TUPLES)
    if entry == "quantized":  # a list of equal-length tuples stays the documented 2-D form
        m = QuantizedPrivacyMapper(random_state=0, n_clusters=3, protect="marginal").fit(_X(), _TUPLES.tolist())
        assert [c.tolist() for c in m.classes_] == [["a", "b"], ["1", "2"]]


def test_check_private_labels_refuses_an_object():
    with pytest.raises(TypeError, match="labels of type object"):
        check_private_labels(np.array([object(), object()], dtype=object), 2)


# finding 3: 2**53 and 2**53 + 1 beside 0.0 were 3 classes for the mapper, 2 for the attack and BlurMe
def test_whole_numbers_beyond_2_53_keep_their_classes_everywhere():
    big = 2**53
    y = np.array([big, big + 1, 0.0] * (N // 3), dtype=object)
    X = _X()
    m = QuantizedPrivacyMapper(random_state=0, n_clusters=3).fit(X, y)
    expected = [0, big, big + 1]
    assert [int(v) for v in m.classes_] == expected
    assert [int(v) for v in InferenceAttack().fit(X, y).classes_] == expected
    assert [int(v) for v in BlurMe().fit(X, y).classes_] == expected


# finding 4: the command line read "1" and "1.0" as two classes, and "-01", "-1e0" as undisclosed in a text column
def _users_run(tmp_path, capsys, monkeypatch, values):
    import privrelease.runner.experiments.ratings_file as ratings_file

    seen = {}

    def spy(report, name, title, R, a, *args, **kwargs):
        seen["a"] = np.asarray(a)
        return {}

    monkeypatch.setattr(ratings_file, "analyse_ratings", spy)
    rng = np.random.default_rng(0)
    rows = [f"{u},i{i},{int(rng.integers(1, 6))}" for u in range(len(values)) for i in range(5)]
    (tmp_path / "r.csv").write_text("user,item,rating\n" + "\n".join(rows) + "\n")
    (tmp_path / "u.csv").write_text("user,band\n" + "\n".join(f"{u},{v}" for u, v in enumerate(values)) + "\n")
    argv = ["run", PIPELINE, "--quick", "-o", str(tmp_path / "out"), "--set", f'path="{tmp_path / "r.csv"}"',
            "--set", f'users_path="{tmp_path / "u.csv"}"', "--set", 'attribute="band"']
    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, err
    return json.loads((tmp_path / "out" / "data.json").read_text()), seen["a"]


def test_cli_users_file_merges_1_and_1_0_as_the_library(tmp_path, capsys, monkeypatch):
    values = ["1", "1.0", "2", "2.0", "-01", "-1e0"] * 4
    data, a = _users_run(tmp_path, capsys, monkeypatch, values)
    library = pd.read_csv(tmp_path / "u.csv")["band"]
    y, labeled = check_private_labels(library, library.size)
    assert data["n_classes"] == np.unique(y[labeled]).size == 2
    assert data["n_disclosed"] == int(labeled.sum()) == 16


def test_cli_users_file_minus_one_spellings_in_a_text_column_as_undisclosed_mask(tmp_path, capsys, monkeypatch):
    values = ["a", "b", "-1.00", "-01", "-1e0", "-1"] * 4
    data, a = _users_run(tmp_path, capsys, monkeypatch, values)
    library = pd.read_csv(tmp_path / "u.csv", dtype=str, keep_default_na=False)["band"]
    y, labeled = check_private_labels(library, library.size)
    assert data["n_disclosed"] == int(labeled.sum()) == 20
    assert data["n_classes"] == np.unique(y[labeled]).size == 5


# finding 5: -1/+1 labels said "a single class (1)" without saying -1 was read as not disclosed
def test_minus_one_plus_one_warns_and_the_error_says_minus_one_is_undisclosed():
    y = np.where(np.arange(N) % 3 == 0, -1, 1)
    with pytest.warns(UserWarning, match=r"-1 \(40 user\(s\)\) and \+1 only.*recode"):
        with pytest.raises(ValueError, match=r"single class.*40 user\(s\) were read as not disclosed.*labelled -1"):
            QuantizedPrivacyMapper(random_state=0, n_clusters=3).fit(_X(), y)
    with pytest.warns(UserWarning, match=r"\+1 only"):
        with pytest.raises(ValueError, match="labelled -1: if -1 is a class"):
            InferenceAttack().fit(_X(), y)


# finding 6: the messages
def test_evaluate_attacks_names_y_test():
    X, k = _X(), np.arange(N) % 2
    with pytest.raises(ValueError, match="y_test has 117 labels but X_test_released has 120 users"):
        evaluate_attacks(X, X, k, X, k[:-3], models=["logistic"], features=["values"])


def test_mapper_errors_name_a_dataframe_column():
    k = np.arange(N) % 2
    Y = pd.DataFrame({"g": k, "h": ["x"] * N})
    with pytest.raises(ValueError, match=r"y\['h'\] has a single class"):
        QuantizedPrivacyMapper(random_state=0, n_clusters=3).fit(_X(), Y)


def test_blurme_names_the_undisclosed_column_and_the_lone_combination():
    k = np.arange(N) % 2
    with pytest.raises(ValueError, match="column 'h' is undisclosed for every user"):
        BlurMe().fit(_X(), pd.DataFrame({"g": k, "h": [None] * N}))
    with pytest.raises(ValueError, match=r"only one class: the combination \(0, 'x'\)"):
        BlurMore().fit(_X(), pd.DataFrame({"g": k, "h": np.where(k == 0, "x", "")}))


def test_rmse_cost_transposed_y_hint():
    k = np.arange(N) % 2
    with pytest.raises(ValueError, match=r"pass y\.T"):
        rmse_cost(QuantizedPrivacyMapper(random_state=0), _X(), np.column_stack([k, k]).T, cv=2, verbose=0)
