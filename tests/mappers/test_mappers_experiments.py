"""Smoke tests of the mapper experiments (quick mode) and their pipeline files."""

import inspect
import json
import sys
from pathlib import Path

import pytest

from privrelease.runner import Report
from privrelease.runner.experiments import iris_quantization, politics_tv_binarized, politics_tv_ratings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module", [iris_quantization, politics_tv_binarized, politics_tv_ratings])
def test_pipeline_file_matches_run_signature(module):
    name = module.__name__.rsplit(".", 1)[1]
    spec = tomllib.load(open(ROOT / "pipelines" / f"{name}.toml", "rb"))
    assert spec["experiment"] == name and spec["title"]
    params = inspect.signature(module.run).parameters
    assert set(spec["params"]) <= set(params)


def test_politics_binarized_quick(tmp_path, top5_threat_by_counting):
    rep = Report(tmp_path, title="binarized")
    head = politics_tv_binarized.run(rep, random_state=0, quick=True)
    rep.save()
    for f in ("politics_binarized_curve.png", "politics_binarized_curve.csv", "politics_cluster_mappings.csv",
              "politics_binarized_roc.png", "report.md"):
        assert (tmp_path / f).is_file(), f
    # the threat figures (paper: 0.191 bits, 71 %) against plug-in counts done here by hand
    mi, acc = top5_threat_by_counting(random_state=0)
    assert head["mi_top5_bits"] == pytest.approx(mi, abs=1e-12)
    assert head["map_accuracy_top5"] == pytest.approx(acc, abs=1e-12)
    # perfect privacy can only add distortion to the quantization's own (delta = 0 point)
    assert head["quantization_distortion"] <= head["perfect_privacy_distortion"] + 1e-9
    assert head["auc_original"] > 0.8 and head["auc_adaptive_perfect_privacy"] < 0.6
    assert json.loads((tmp_path / "headline.json").read_text())["mi_top5_bits"] == pytest.approx(head["mi_top5_bits"])


def test_politics_ratings_quick(tmp_path):
    rep = Report(tmp_path, title="ratings")
    head = politics_tv_ratings.run(rep, random_state=0, quick=True)
    rep.save()
    for f in ("politics_ratings_curve.png", "politics_ratings_rmse_auc.csv", "politics_ratings_roc.png"):
        assert (tmp_path / f).is_file(), f
    # the default mapper at perfect privacy: attacker near random, RMSE below "release nothing"
    assert head["auc_original"] > 0.8
    assert head["auc_adaptive_ours_perfect_privacy"] < 0.6
    assert head["rmse_increase_ours_perfect_privacy"] < head["rmse_increase_release_nothing"]
    assert head["rmse_increase_naive_representative"] > head["rmse_increase_release_nothing"]
