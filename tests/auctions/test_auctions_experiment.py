"""Smoke test of the privacy_auction experiment (quick mode) and its pipeline file."""

import sys
from pathlib import Path

import pandas as pd

from privrelease.runner import Report
from privrelease.runner.experiments import privacy_auction

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_privacy_auction_quick(tmp_path):
    rep = Report(tmp_path, title="auction")
    head = privacy_auction.run(rep, random_state=0, quick=True)
    rep.save()
    for name in ("rmse_vs_budget.csv", "rmse_vs_budget.png", "payments_histogram.png",
                 "truthfulness_check.csv", "report.md"):
        assert (tmp_path / name).is_file(), name
    assert head["max_truthfulness_gain"] <= 1e-9        # Theorem 3: truthful
    assert head["rmse_at_max_budget"] < head["rmse_at_zero_budget"]
    curve = pd.read_csv(tmp_path / "rmse_vs_budget.csv")
    assert curve["weight_bought"].iloc[0] == 0 and curve["weight_bought"].iloc[-1] > 0.5
    assert (curve["value_over_fractional_bound"].dropna() >= 0.2).all()   # >= OPT / 5
    assert (curve["payment_per_query"] <= curve["budget"] * (1 + 1e-9)).all()


def test_pipeline_file_matches_run_signature():
    import inspect

    spec = tomllib.load(open(Path(__file__).resolve().parents[2] / "pipelines" / "privacy_auction.toml", "rb"))
    assert spec["experiment"] == "privacy_auction"
    params = inspect.signature(privacy_auction.run).parameters
    assert set(spec["params"]) <= set(params)
