"""Smoke test of the truthful_regression experiment (quick mode) and its headline numbers."""

from privrelease.runner import Report
from privrelease.runner.experiments import truthful_regression


def test_truthful_regression_quick(tmp_path):
    rep = Report(tmp_path, title="truthful regression")
    out = truthful_regression.run(rep, random_state=0, quick=True)
    rep.save()
    assert out["sensitivity_max_ratio"] <= 1.0  # no adversary beats the bound
    assert out["error_largest_n"] < out["error_smallest_n"]
    assert out["budget_largest_n"] < out["budget_smallest_n"]
    assert abs(out["payment_vertex"]) < 0.1 and out["best_misreport"] == 0.0
    for name in ("sensitivity.csv", "schedule.csv", "schedule.png", "truthfulness.csv",
                 "report.md"):
        assert (tmp_path / name).is_file()
