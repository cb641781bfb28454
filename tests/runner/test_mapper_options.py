"""``[params.mapper]``: QuantizedPrivacyMapper options reach every mapper a rating experiment fits,
and a wrong table is refused before anything runs."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privrelease.cli import main
from privrelease.runner import PipelineError, check_run, run_experiment, run_pipeline
from privrelease.runner.experiments.synthetic_ratings import MAPPER

OPTIONS = {"class_removal": "heldout", "prior": "model", "smoothing": 0.5, "n_refine": 2}
TINY = dict(datasets=["make_ratings"], n_users=60, n_items=30, max_leakages=[0.0], blurme_fractions=[0.5],
            cv=2, attack_models=["logistic"], n_jobs=1)


class _Stop(Exception):
    pass


def _record_mappers(monkeypatch):
    """Replace the curve by a recorder: the QuantizedPrivacyMappers it is given, then stop the run."""
    import privrelease.evaluation as evaluation

    seen = []

    def fake_curve(mapper, R, a, **kwargs):
        seen.append(mapper)
        if len(seen) == 2:  # the optimal mapping, then the naive representatives: both built
            raise _Stop
        return object()

    monkeypatch.setattr(evaluation, "privacy_utility_curve", fake_curve)
    return seen


def _fake_movielens(path=None):
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(60, 30, random_state=0)
    users = pd.DataFrame({"gender": np.where(np.asarray(a) == 1, "F", "M"), "age": 20 + np.arange(60) % 30})
    return R, users, None


@pytest.mark.parametrize("experiment", ["synthetic_ratings", "movielens_gender"])
def test_options_reach_every_quantized_mapper(tmp_path, monkeypatch, experiment):
    import privrelease.datasets as datasets

    seen = _record_mappers(monkeypatch)
    monkeypatch.setattr(datasets, "load_movielens_100k", _fake_movielens)
    params = dict(TINY) if experiment == "synthetic_ratings" else {k: TINY[k] for k in
                                                                   ("max_leakages", "cv", "attack_models")}
    module, params, _ = check_run(experiment, {**params, "n_clusters": "heldout", "mapper": dict(OPTIONS)})
    from privrelease.runner import Report

    with pytest.raises(_Stop):
        module.run(Report(tmp_path / "r", title="t"), **params)
    assert [m.get_params()["release"] for m in seen] == ["profile", "representative"]
    for m in seen:
        got = m.get_params()
        assert {k: got[k] for k in OPTIONS} == OPTIONS
        assert got["n_clusters"] == "heldout"


def test_a_small_run_records_the_options_in_its_report(tmp_path):
    path, headline, _ = run_experiment("synthetic_ratings", tmp_path / "r",
                                       params={**TINY, "mapper": {"prior": "model", "smoothing": 0.5}})
    text = path.read_text()
    assert "optimal mapping (QuantizedPrivacyMapper, 25 clusters, prior='model', smoothing=0.5)" in text
    assert "'mapper': {'prior': 'model', 'smoothing': 0.5}" in text  # the parameters the run was given
    assert 0 < headline["make_ratings_rmse_original"] < 4


@pytest.mark.parametrize("experiment", ["synthetic_ratings", "movielens_gender"])
def test_unknown_key_is_refused_listing_the_accepted_ones(experiment):
    with pytest.raises(PipelineError) as info:
        check_run(experiment, {"mapper": {"class_bin": 2}})
    message = str(info.value)
    assert "parameter mapper has an unknown key 'class_bin'" in message
    assert all(k in message for k in MAPPER.accepted)


@pytest.mark.parametrize("key, value, instead", [
    ("max_leakage", 0.1, "max_leakages"), ("n_clusters", "heldout", "n_clusters"),
    ("random_state", 1, "random_state"), ("delta", 0.5, "max_leakages"), ("protect", "marginal", "jointly"),
    ("release", "representative", "both releases"), ("solver", "highs", "default solver"),
])
def test_keys_the_experiment_sets_are_refused_naming_what_to_use(key, value, instead):
    with pytest.raises(PipelineError) as info:
        check_run("movielens_gender", {"mapper": {key: value}})
    message = str(info.value)
    assert f"parameter mapper.{key} is set by the experiment itself" in message and instead in message


@pytest.mark.parametrize("key, value, text", [
    ("class_bins", 0, "mapper.class_bins = 0: expected an int in the range [1, inf) or a str among {'heldout'}"),
    ("class_bins", "many", "mapper.class_bins = 'many'"),
    ("class_removal", 1.5, "mapper.class_removal = 1.5: expected a float in the range [0.0, 1.0]"),
    ("prior", "uniform", "mapper.prior = 'uniform'"),
    ("smoothing", -1, "mapper.smoothing = -1"),
    ("n_components", 2.5, "mapper.n_components = 2.5"),
    ("metric", [1], "mapper.metric = [1] (array)"),
])
def test_bad_value_is_refused_by_the_mappers_validation_before_running(tmp_path, monkeypatch, key, value, text):
    import privrelease.runner.experiments.movielens_gender as experiment

    def must_not_run(*args, **kwargs):
        raise AssertionError("the experiment ran")

    monkeypatch.setattr(experiment, "run", must_not_run)
    pipeline = tmp_path / "p.toml"
    pipeline.write_text('experiment = "movielens_gender"\n[params]\ncv = 2\n')
    with pytest.raises(PipelineError) as info:
        run_pipeline(pipeline, tmp_path / "out", overrides={"mapper": {key: value}})
    assert text in str(info.value)
    assert not (tmp_path / "out").exists()
    # the same values are accepted one step inside the mapper's constraints
    check_run("movielens_gender", {"mapper": {"class_bins": 1, "class_removal": 1.0, "smoothing": 0}})


def test_set_takes_the_whole_table_inline(tmp_path, capsys):
    pipeline = Path(__file__).resolve().parents[2] / "pipelines" / "movielens_joint.toml"
    assert main(["run", str(pipeline), "--set", "mapper={class_bins=0}", "-o", str(tmp_path / "b")]) == 2
    assert "mapper.class_bins = 0" in capsys.readouterr().err
    # the inline table is read as a table and accepted
    from privrelease.cli import _parse_override

    key, value = _parse_override('mapper={class_bins = "heldout", prior = "model"}')
    assert check_run("movielens_gender", {key: value})[1]["mapper"] == {"class_bins": "heldout", "prior": "model"}


# ---------------------------------------------------------------- the other experiments that fit the mapper
POLITICS = dict(n_clusters=4, n_deltas=2, max_leakages=[0.0, 0.05], cv=2)
MULTI = dict(n_users=60, n_items=30, max_leakages=[0.0, 0.05], n_clusters=3, cv=2)


def _record_constructed(monkeypatch):
    """The QuantizedPrivacyMappers the experiments build (they import it from ``privrelease.mappers``);
    the ones the mapper builds itself (held-out rules' refits) are not recorded."""
    import sys

    import privrelease.mappers as mappers

    real, seen = mappers.QuantizedPrivacyMapper, []

    def make(*args, **kwargs):
        m = real(*args, **kwargs)
        if sys._getframe(1).f_globals["__name__"].startswith("privrelease.runner.experiments"):
            seen.append(m)
        return m

    monkeypatch.setattr(mappers, "QuantizedPrivacyMapper", make)
    return seen


def test_politics_ratings_options_reach_our_rows_only(tmp_path, monkeypatch):
    import privrelease.runner.experiments.politics_tv_ratings as experiment
    from privrelease.runner import Report

    def stop(mapper, *args, **kwargs):
        raise _Stop

    monkeypatch.setattr(experiment, "rmse_and_attacks", stop)
    options = {**OPTIONS, "n_clusters": "heldout"}
    module, params, _ = check_run("politics_tv_ratings", {**POLITICS, "mapper": dict(options)})
    seen = _record_constructed(monkeypatch)  # after the validation (it builds mappers of one option each)
    with pytest.raises(_Stop):
        module.run(Report(tmp_path / "r", title="t"), **params)
    curve, *ours, naive = seen  # the Fig. 11 curve, one of ours per cap, the paper's naive release
    assert [m.get_params()["max_leakage"] for m in ours] == [0.0, 0.05]
    for m in ours:
        got = m.get_params()
        assert {k: got[k] for k in options} == options and got["release"] == "profile"
    default = type(curve)().get_params()
    for m in (curve, naive):  # the paper's configuration, untouched by the options
        got = m.get_params()
        assert got["n_clusters"] == 4 and got["space"] == "raw" and got["release"] == "representative"
        assert {k: got[k] for k in OPTIONS if k != "smoothing"} == {k: default[k] for k in OPTIONS
                                                                    if k != "smoothing"}


def test_multi_attribute_options_reach_every_mapper_of_both_modes(tmp_path, monkeypatch):
    import privrelease.evaluation as evaluation
    from privrelease.runner import Report

    fitted = []

    def fake_cost(adapter, R, a, **kwargs):
        fitted.append(adapter.mapper)
        raise _Stop

    monkeypatch.setattr(evaluation, "rmse_cost", fake_cost)
    options = {"release": "representative", "class_removal": 0.5, "smoothing": 0.25, "n_refine": 1}
    for mode in ("joint", "marginal"):
        module, params, _ = check_run("multi_attribute", {**MULTI, "protect": [mode], "max_leakages": [0.05],
                                                          "mapper": dict(options)})
        with pytest.raises(_Stop):
            module.run(Report(tmp_path / mode, title="t"), **params)
    assert [m.get_params()["protect"] for m in fitted] == ["joint", "marginal"]
    for m in fitted:
        got = m.get_params()
        assert {k: got[k] for k in options} == options
        assert got["n_clusters"] == 3 and got["max_leakage"] == 0.05


def test_multi_attribute_small_run_records_the_options(tmp_path):
    path, headline, _ = run_experiment("multi_attribute", tmp_path / "r",
                                       params={**MULTI, "protect": ["joint"], "max_leakages": [0.0],
                                               "mapper": {"smoothing": 0.5, "clustering": "plain"}})
    text = path.read_text()
    assert "QuantizedPrivacyMapper (3 clusters, smoothing=0.5, clustering='plain', the defaults otherwise)" in text
    assert "'mapper': {'smoothing': 0.5, 'clustering': 'plain'}" in text
    assert headline["joint_leakage_joint_bits"] == pytest.approx(0.0, abs=1e-6)  # perfect privacy still holds


@pytest.mark.parametrize("experiment, accepted, reserved", [
    ("politics_tv_ratings", "n_clusters", "release"),
    ("multi_attribute", "release", "n_clusters"),
])
def test_unknown_key_is_refused_in_the_other_experiments(experiment, accepted, reserved):
    with pytest.raises(PipelineError) as info:
        check_run(experiment, {"mapper": {"class_bin": 2}})
    message = str(info.value)
    assert "parameter mapper has an unknown key 'class_bin'" in message
    keys = message.rsplit("expected keys among ", 1)[1].split(", ")
    assert accepted in keys and reserved not in keys
    assert set(keys) == set(MAPPER.accepted) | {accepted}


@pytest.mark.parametrize("experiment, key, value, instead", [
    ("politics_tv_ratings", "max_leakage", 0.1, "max_leakages"),
    ("politics_tv_ratings", "release", "representative", "its own row"),
    ("politics_tv_ratings", "random_state", 1, "random_state"),
    ("politics_tv_ratings", "protect", "marginal", "one binary column"),
    ("multi_attribute", "protect", "marginal", "experiment parameter protect"),
    ("multi_attribute", "n_clusters", 5, "experiment parameter n_clusters"),
    ("multi_attribute", "delta", 0.5, "max_leakages"),
    ("multi_attribute", "solver", "highs", "default solver"),
])
def test_keys_the_other_experiments_set_are_refused(experiment, key, value, instead):
    with pytest.raises(PipelineError) as info:
        check_run(experiment, {"mapper": {key: value}})
    message = str(info.value)
    assert f"parameter mapper.{key} is set by the experiment itself" in message and instead in message


@pytest.mark.parametrize("experiment", ["politics_tv_ratings", "multi_attribute"])
@pytest.mark.parametrize("key, value, text", [
    ("class_bins", 0, "mapper.class_bins = 0: expected an int in the range [1, inf)"),
    ("prior", "uniform", "mapper.prior = 'uniform'"),
    ("smoothing", -1, "mapper.smoothing = -1"),
])
def test_bad_values_are_refused_before_the_other_experiments_run(tmp_path, monkeypatch, experiment, key, value,
                                                                  text):
    import importlib

    def must_not_run(*args, **kwargs):
        raise AssertionError("the experiment ran")

    monkeypatch.setattr(importlib.import_module(f"privrelease.runner.experiments.{experiment}"), "run",
                        must_not_run)
    pipeline = Path(__file__).resolve().parents[2] / "pipelines" / f"{experiment}.toml"
    with pytest.raises(PipelineError) as info:
        run_pipeline(pipeline, tmp_path / "out", overrides={f"mapper.{key}": value})
    assert text in str(info.value)
    assert not (tmp_path / "out").exists()


def test_politics_ratings_takes_n_clusters_rules_for_our_rows():
    assert check_run("politics_tv_ratings", {"mapper": {"n_clusters": "heldout"}})[1]["mapper"] == {
        "n_clusters": "heldout"}
    with pytest.raises(PipelineError, match="mapper.n_clusters = 0"):
        check_run("politics_tv_ratings", {"mapper": {"n_clusters": 0}})


def test_multi_attribute_refuses_the_model_prior_with_marginal_protection():
    with pytest.raises(PipelineError) as info:
        check_run("multi_attribute", {"mapper": {"prior": "model"}})  # protect defaults to both modes
    assert "mapper.prior = 'model': refused with protect = ['joint', 'marginal']" in str(info.value)
    with pytest.raises(PipelineError, match="protect = \\['marginal'\\]"):
        check_run("multi_attribute", {"protect": ["marginal"], "mapper": {"prior": "model"}})
    # the joint attribute alone takes it (one model of the pair)
    assert check_run("multi_attribute", {"protect": ["joint"], "mapper": {"prior": "model"}})[1]["mapper"] == {
        "prior": "model"}
