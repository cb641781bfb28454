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


def test_set_names_the_inline_table_for_a_mapper_key(tmp_path, capsys):
    pipeline = Path(__file__).resolve().parents[2] / "pipelines" / "movielens_joint.toml"
    assert main(["run", str(pipeline), "--set", "mapper.class_bins=heldout", "-o", str(tmp_path / "a")]) == 2
    assert "--set 'mapper={class_bins = ...}'" in capsys.readouterr().err
    assert main(["run", str(pipeline), "--set", "mapper={class_bins=0}", "-o", str(tmp_path / "b")]) == 2
    assert "mapper.class_bins = 0" in capsys.readouterr().err
    # the inline table is read as a table and accepted
    from privrelease.cli import _parse_override

    key, value = _parse_override('mapper={class_bins = "heldout", prior = "model"}')
    assert check_run("movielens_gender", {key: value})[1]["mapper"] == {"class_bins": "heldout", "prior": "model"}
