"""The multi-attribute experiment through the command line (quick mode) and its pipeline file."""

import inspect
import json
import sys
from pathlib import Path

import pytest

from privrelease.cli import main
from privrelease.runner.experiments import multi_attribute

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PIPELINE = Path(__file__).resolve().parents[2] / "pipelines" / "multi_attribute.toml"


def test_pipeline_file_matches_run_signature_and_schema():
    spec = tomllib.load(open(PIPELINE, "rb"))
    assert spec["experiment"] == "multi_attribute" and spec["title"]
    params = set(inspect.signature(multi_attribute.run).parameters) - {"report"}
    assert set(spec["params"]) <= params
    assert set(multi_attribute.PARAMETERS) == params  # every keyword has a schema entry


def test_quick_cli_run_protects_the_pair_or_each_marginal(tmp_path):
    out = tmp_path / "multi"
    assert main(["run", str(PIPELINE), "--quick", "--output", str(out)]) == 0
    assert (out / "report.md").is_file() and (out / "multi_attribute.png").is_file()
    head = json.loads((out / "summary.json").read_text())["headline"]
    table = json.loads((out / "summary.json").read_text())["table"]
    assert head["max_leakage"] == 0.0
    # joint perfect privacy: the pair (hence each attribute) is independent of the release
    assert head["joint_leakage_joint_bits"] == pytest.approx(0.0, abs=1e-6)
    # marginal perfect privacy: each attribute is, and the pair leaks at least as much as either one
    assert head["max_marginal_leakage_marginal_bits"] == pytest.approx(0.0, abs=1e-6)
    assert head["joint_leakage_marginal_bits"] >= head["max_marginal_leakage_marginal_bits"] - 1e-9
    assert head["prior_leakage_joint_bits"] > 0.05  # the clusters do reveal the pair before the mapping
    for i, mode in enumerate(table["protect"]):
        assert table["leakage_joint_bits"][i] + 1e-9 >= max(table["leakage_gender_bits"][i],
                                                            table["leakage_age_band_bits"][i])
        # RMSEs of one protocol: releasing nothing costs more than releasing the originals
        assert table["rmse_release_nothing"][i] > table["rmse_original"][i] > 0
