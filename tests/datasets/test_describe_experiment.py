import json

import pytest

from privrelease.runner import Report
from privrelease.runner.experiments import synthetic_ratings_describe


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_describe_experiment_writes_report(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    report = Report(tmp_path, title="describe")
    headline = synthetic_ratings_describe.run(report, random_state=0, strengths=(0.0, 1.0),
                                              n_users=200, n_items=40, n_folds=2)
    report.save()
    json.dumps(headline)
    # the preset reproduces the paper's threat figures (0.191 bits, 71 %) roughly
    assert 0.08 < headline["politics_mi_top5_bits"] < 0.35
    assert 0.65 < headline["politics_map_accuracy"] < 0.8
    assert headline["politics_auc_ratings"] > headline["politics_auc_indicators"] > 0.7
    # the recommender beats nothing-learned only if it is sane: RMSE in a plausible range
    assert 0.6 < headline["politics_rmse_baseline"] < 1.3
    files = {p.name for p in tmp_path.rglob("*")}
    assert {"politics_top_shows.csv", "make_ratings_leakage.csv", "politics_rmse.csv"} <= files
    assert any(name.endswith(".png") for name in files)
