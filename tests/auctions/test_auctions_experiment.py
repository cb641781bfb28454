"""The privacy_auction experiment's pipeline file (its quick run is checked in tests/runner/test_demo.py)."""

import sys
from pathlib import Path

from privrelease.runner.experiments import privacy_auction

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_pipeline_file_matches_run_signature():
    import inspect

    spec = tomllib.load(open(Path(__file__).resolve().parents[2] / "pipelines" / "privacy_auction.toml", "rb"))
    assert spec["experiment"] == "privacy_auction"
    params = inspect.signature(privacy_auction.run).parameters
    assert set(spec["params"]) <= set(params)
