import json

import pandas as pd
import pytest

from privrelease.runner import Report
from privrelease.runner.experiments import synthetic_ratings_describe


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_describe_experiment_writes_report(tmp_path, monkeypatch, top5_threat_by_counting):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    report = Report(tmp_path, title="describe")
    headline = synthetic_ratings_describe.run(report, random_state=0, strengths=(0.0, 1.0),
                                              n_users=200, n_items=40, n_folds=2)
    report.save()
    json.dumps(headline)
    # the threat figures (paper: 0.191 bits, 71 %) against a by-hand plug-in count
    mi, acc = top5_threat_by_counting(random_state=0)
    assert headline["politics_mi_top5_bits"] == pytest.approx(mi, abs=1e-12)
    assert headline["politics_map_accuracy"] == pytest.approx(acc, abs=1e-12)
    files = {p.name for p in tmp_path.rglob("*")}
    assert {"politics_top_shows.csv", "make_ratings_leakage.csv", "politics_rmse.csv"} <= files
    # a learned baseline beats the constant global mean on every fold of the same split
    rmse = pd.read_csv(next(tmp_path.rglob("politics_rmse.csv")))
    assert (rmse["BaselineOnly"] < rmse["global mean"]).all()
    assert headline["politics_rmse_baseline"] == pytest.approx(rmse["BaselineOnly"].mean())
    assert any(name.endswith(".png") for name in files)
