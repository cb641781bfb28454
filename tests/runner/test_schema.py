"""Parameter schemas: every experiment declares every parameter, and the declarations refuse bad values."""

import importlib
import inspect
import math
from pathlib import Path

import pytest

from privrelease.runner import ParameterTypeError, PipelineError, available_experiments, check_run, load_pipeline
from privrelease.runner._schema import (Bool, Choice, Either, Float, Int, Seq, quick_values, resolve_quick,
                                       validate_params)

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _module(name):
    return importlib.import_module(f"privrelease.runner.experiments.{name}")


@pytest.mark.parametrize("name", available_experiments())
def test_schema_declares_exactly_the_run_parameters(name):
    module = _module(name)
    sig = inspect.signature(module.run)
    params = [n for n in sig.parameters if n != "report"]
    assert sorted(module.PARAMETERS) == sorted(params)
    # every default the experiment ships (other than None = "derived") passes its own schema,
    # and so do the values --quick fills in
    defaults = {n: p.default for n, p in sig.parameters.items() if n != "report" and p.default is not None}
    validate_params(module, defaults)
    validate_params(module, dict(getattr(module.run, "quick_values", {})))


@pytest.mark.parametrize("path", sorted(PIPELINES.glob("*.toml")), ids=lambda p: p.stem)
def test_shipped_pipelines_validate_and_quick_means_the_experiment_quick_values(path, monkeypatch):
    spec = load_pipeline(path)
    module = _module(spec["experiment"])
    if spec["experiment"] == "ratings_file":
        # a file that ships no data (ratings_file) is refused until its files are named with --set
        # (tests/runner/test_ratings_file.py); its [quick] table is checked here without them (the other
        # experiments' check_ready draws their protocol split, which the shipped files pass)
        from privrelease.runner import pipeline_params as merged

        with pytest.raises(PipelineError, match="is not set"):
            check_run(spec["experiment"], merged(spec, quick=True), quick=True)
        monkeypatch.setattr(module, "check_ready", lambda params: None)
    quick = dict(module.run.quick_values)
    # the file's [quick] table holds exactly the experiment's quick values for the keys it covers,
    # and covers every quick key the file's [params] sets: --quick on a shipped file is really quick
    for key, value in spec["quick"].items():
        assert list(value) == list(quick[key]) if isinstance(value, list) else value == quick[key], key
    assert set(quick) & set(spec["params"]) <= set(spec["quick"])
    from privrelease.runner import pipeline_params

    _, params, notes = check_run(spec["experiment"], pipeline_params(spec, quick=True), quick=True)
    assert notes == []
    for key, value in quick.items():
        assert list(params[key]) == list(value) if isinstance(value, (list, tuple)) else params[key] == value


CASES = [
    # (experiment, parameter, value, error type, text the message must contain)
    ("census_erasure", "top", -1, PipelineError, "top = -1"),
    ("contract_design", "monte_carlo", -1, PipelineError, "monte_carlo = -1"),
    ("contract_design", "n_points", 0, PipelineError, "n_points = 0"),
    ("contract_design", "n_points", "ten", ParameterTypeError, "n_points = 'ten' (string)"),
    ("iris_quantization", "n_deltas", "ten", ParameterTypeError, "n_deltas = 'ten'"),
    ("census_erasure", "random_state", "x", ParameterTypeError, "random_state = 'x'"),
    ("privacy_auction", "n_users", 1e9, PipelineError, "the cap 200000 is there because"),
    ("synthetic_ratings", "n_users", 1e9, PipelineError, "n_users = 1e+09"),
    ("synthetic_ratings", "quick", "no", ParameterTypeError, "quick = 'no'"),
    ("synthetic_ratings", "quick", 1, ParameterTypeError, "expected a boolean"),
    ("synthetic_ratings", "max_leakages", [0.1, 0.0], PipelineError, "increasing"),
    ("synthetic_ratings", "max_leakages", [0.0, float("nan")], PipelineError, "max_leakages[1] = nan"),
    ("synthetic_ratings", "attack_models", ["logistic", "svm"], PipelineError, "'svm'"),
    ("synthetic_ratings", "politics_recommender", {"algorithm": "NMF"}, PipelineError, "'NMF'"),
    ("synthetic_ratings", "politics_recommender", {"algo": "SVD"}, PipelineError, "unknown key 'algo'"),
    ("truthful_regression", "n_players", list(range(10, 40)), PipelineError, "has 30 items"),
    ("truthful_regression", "privacy_exponent", 0.5, PipelineError, "in (0.5, 1)"),
    ("movielens_gender", "path", "/no/such/folder", PipelineError, "does not exist"),
    ("movielens_gender", "dataset", "ml-10m", PipelineError, "expected one of 'ml-100k', 'ml-1m'"),
    ("movielens_gender", "dataset", 1, ParameterTypeError, "dataset = 1 (integer)"),
    ("politics_tv_ratings", "cv", True, ParameterTypeError, "cv = true (boolean)"),
    ("census_erasure", "no_such_param", 1, PipelineError, "unknown parameter(s) ['no_such_param']"),
]


@pytest.mark.parametrize("experiment, key, value, exc_type, text", CASES)
def test_bad_parameter_is_refused_naming_parameter_value_and_expectation(experiment, key, value, exc_type, text):
    with pytest.raises(exc_type) as info:
        check_run(experiment, {key: value})
    message = str(info.value)
    assert text in message
    assert key in message and ("expected" in message or "takes" in message)


def test_joint_constraints():
    with pytest.raises(PipelineError, match="expected v_low < v_high"):
        check_run("contract_design", {"v_low": 6.0})
    with pytest.raises(PipelineError, match=r"arrow_k = 7: expected one of ks = \[5, 15, 50\]"):
        check_run("iris_quantization", {"arrow_k": 7})
    with pytest.raises(PipelineError, match="20,000,000 cells"):
        check_run("truthful_regression", {"n_players": [2_000_000], "n_features": 20})
    # at the boundary: 1,000,000 x 20 = 2e7 cells is allowed
    check_run("truthful_regression", {"n_players": [1_000_000], "n_features": 20})


def test_movielens_dataset_constraints():
    # the n_clusters cap follows the data set: 943 users in ml-100k, 6,040 in ml-1m
    check_run("movielens_gender", {"n_clusters": 943})
    with pytest.raises(PipelineError, match=r"n_clusters = 944: expected at most the 943 users of MovieLens 100k"):
        check_run("movielens_gender", {"n_clusters": 944})
    check_run("movielens_gender", {"dataset": "ml-1m", "n_clusters": 6040})
    with pytest.raises(PipelineError,
                       match=r"n_clusters = 6041: expected one of .auto., .heldout. or an integer in \[1, 6040\]"):
        check_run("movielens_gender", {"dataset": "ml-1m", "n_clusters": 6041})
    # the mapper's held-out rule is a choice, not a count (no comparison with the number of users)
    assert check_run("movielens_gender", {"dataset": "ml-1m", "n_clusters": "heldout"})[1]["n_clusters"] == "heldout"
    # ml-1m's ages are band codes: a cut must be a code (the defaults 25 and 35 are)
    check_run("movielens_gender", {"dataset": "ml-1m", "age_cuts": [18, 25, 35, 45, 50, 56]})
    assert check_run("movielens_gender", {"dataset": "ml-1m"})[1]["dataset"] == "ml-1m"
    with pytest.raises(PipelineError, match=r"age_cuts = \[25, 30\]: with dataset = 'ml-1m' .* a cut at 30"):
        check_run("movielens_gender", {"dataset": "ml-1m", "age_cuts": [25, 30]})
    check_run("movielens_gender", {"age_cuts": [25, 30]})  # years in ml-100k: any cut


@pytest.mark.parametrize("spec, good, bad", [
    (Int(2, 10), [2, 10, 7], [1, 11, 2.0, True, "3", None]),
    (Float(0, 1, low_open=True), [1, 0.5, 1e-300], [0, 1.0000001, math.inf, math.nan, "0.5", False]),
    (Bool(), [True, False], ["no", "true", 0, 1, None]),
    (Seq(Int(0, 5), max_len=3, unique=True), [[0], [1, 2, 5]], [[], [1, 1], [0, 1, 2, 3], [6], "012", 3]),
    (Either(Choice(("auto",)), Int(1, 943)), ["auto", 1, 943], ["Auto", 0, 944, 2.0, True, None, [5]]),
])
def test_specs_accept_exactly_the_declared_values(spec, good, bad):
    for v in good:
        assert spec.check("p", v) == v
    for v in bad:
        with pytest.raises((PipelineError, ParameterTypeError)):
            spec.check("p", v)


def test_either_names_every_alternative_and_tells_a_bad_value_from_a_bad_type():
    spec = Either(Choice(("auto",)), Int(1, 943))
    with pytest.raises(PipelineError, match=r"n_clusters = 0: expected one of 'auto' or an integer") as exc:
        spec.check("n_clusters", 0)
    assert not isinstance(exc.value, ParameterTypeError)  # an integer, out of range
    with pytest.raises(ParameterTypeError, match=r"n_clusters = 2\.5 \(float\)"):
        spec.check("n_clusters", 2.5)
    with pytest.raises(PipelineError, match="n_clusters = 'many'"):
        check_run("movielens_gender", {"n_clusters": "many"})
    assert check_run("movielens_gender", {"n_clusters": "auto"})[1]["n_clusters"] == "auto"


def test_quick_never_replaces_an_explicit_value():
    seen = {}

    @quick_values({"n": 10, "m": 20})
    def run(report, *, quick=False, n=100, m=200, k=300):
        seen.update(n=n, m=m, k=k, quick=quick)

    run(None, quick=True, n=7)
    assert seen == {"n": 7, "m": 20, "k": 300, "quick": True}
    run(None, n=7)
    assert seen == {"n": 7, "m": 200, "k": 300, "quick": False}
    # the runner notes each explicit value --quick left alone (and only those that differ)
    module = type("M", (), {"run": run})
    params, notes = resolve_quick(module, {"n": 7, "m": 20}, True)
    assert params == {"n": 7, "m": 20, "quick": True}
    assert notes == ["--quick keeps your n = 7 (quick would use 10)"]
    _, params, notes = check_run("contract_design", {"n_points": 7}, quick=True)
    assert params["n_points"] == 7 and params["monte_carlo"] == 20_000 and len(notes) == 1


# ---------------------------------------------------------------- fuzz: validation never crashes
def _toml_values():
    from hypothesis import strategies as st

    scalars = st.one_of(st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                        st.text(max_size=12))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                        max_leaves=8)


@pytest.mark.parametrize("name", available_experiments())
def test_fuzz_every_parameter_is_accepted_in_range_or_refused_cleanly(name):
    """Any TOML value for any parameter: a PipelineError (never another exception), or a value that
    satisfies the declaration (integers are integers within their bounds, reals are finite)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from privrelease.runner._schema import Float as F
    from privrelease.runner._schema import Int as I

    module = _module(name)
    keys = sorted(module.PARAMETERS)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(key=st.sampled_from(keys), value=_toml_values())
    def check(key, value):
        try:
            out = validate_params(module, {key: value})[key]
        except PipelineError as exc:  # ParameterTypeError is one too
            assert key in str(exc)
            return
        spec = module.PARAMETERS[key]
        if isinstance(spec, I):
            assert isinstance(out, int) and not isinstance(out, bool) and spec.low <= out <= spec.high
        if isinstance(spec, F):
            assert math.isfinite(out) and (spec.low is None or out >= spec.low)
            assert spec.high is None or out <= spec.high
        if isinstance(spec, Bool):
            assert isinstance(out, bool)

    check()


@pytest.mark.parametrize("experiment,extra", [
    ("synthetic_ratings", {"datasets": ["make_ratings"]}),
    ("synthetic_ratings_describe", {}),
    ("multi_attribute", {}),
    ("privacy_auction", {}),
])
def test_the_smallest_accepted_n_items_generates_its_ratings(tmp_path, monkeypatch, experiment, extra):
    # every n_items the schema accepts must build the experiment's data: make_ratings refuses fewer items than
    # the mean ratings per user the experiment asks for (n_items 10..19 passed the checks, then the run failed)
    import privrelease.datasets as datasets
    from privrelease.runner import Report, check_run

    real = datasets.make_ratings
    made = []

    class _Made(Exception):
        pass

    def recording(*args, **kwargs):
        made.append(real(*args, **kwargs))
        raise _Made

    module = check_run(experiment, {})[0]
    low = module.PARAMETERS["n_items"].low
    _, params, _ = check_run(experiment, {"n_items": low, **extra}, quick=True)
    monkeypatch.setattr(datasets, "make_ratings", recording)  # after check_run: its check_ready builds the data
    with pytest.raises(_Made):
        module.run(Report(tmp_path / "r", title="t"), **params)
    assert made and made[0][0].shape[1] == low
    with pytest.raises(Exception, match="n_items"):
        check_run(experiment, {"n_items": low - 1, **extra})


def test_a_long_value_in_a_message_keeps_both_ends():
    # a missing data file under a deep folder: the message showed the folder's first 77 characters and hid
    # the file name (a pytest-xdist temporary path did it); both ends are kept now
    from privrelease.runner._schema import File, PipelineError

    path = "/" + "deep/" * 40 + "nope.csv"
    with pytest.raises(PipelineError) as info:
        File().check("path", path)
    assert "nope.csv'" in str(info.value) and "'/deep/deep" in str(info.value) and "..." in str(info.value)
