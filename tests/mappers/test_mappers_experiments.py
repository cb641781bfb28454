"""The mapper experiments' pipeline files (their quick runs are checked in tests/runner/test_demo.py)."""

import inspect
import sys
from pathlib import Path

import pytest

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
