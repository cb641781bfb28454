import json
from collections import Counter
from fractions import Fraction
from math import log2

import pandas as pd
import pytest

from privrelease.runner import Report
from privrelease.runner.experiments import synthetic_ratings_describe


def _top5_threat_by_counting(random_state):
    """I(A; B_top5) in bits and the MAP accuracy on the binarized 5 most rated shows.

    Independent of the experiment's matrix code: the joint law is counted in a dict over
    (5-bit pattern, party); the accuracy is an exact fraction.
    """
    from privrelease.datasets import make_politics_tv

    R, a, _ = make_politics_tv(random_state=random_state)
    R = R.toarray()
    raters = (R != 0).sum(axis=0)
    top5 = sorted(range(R.shape[1]), key=lambda j: (-raters[j], j))[:5]
    patterns = [tuple(int(R[u, j] >= 4) for j in top5) for u in range(R.shape[0])]
    n = len(patterns)
    joint = Counter(zip(patterns, a.tolist()))
    p_b, p_a = Counter(patterns), Counter(a.tolist())
    mi = sum(c / n * log2(c * n / (p_b[b] * p_a[y])) for (b, y), c in joint.items())
    acc = Fraction(sum(max(joint[(b, y)] for y in p_a) for b in p_b), n)
    return mi, float(acc)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_describe_experiment_writes_report(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    report = Report(tmp_path, title="describe")
    headline = synthetic_ratings_describe.run(report, random_state=0, strengths=(0.0, 1.0),
                                              n_users=200, n_items=40, n_folds=2)
    report.save()
    json.dumps(headline)
    # the threat figures (paper: 0.191 bits, 71 %) against a by-hand plug-in count
    mi, acc = _top5_threat_by_counting(random_state=0)
    assert headline["politics_mi_top5_bits"] == pytest.approx(mi, abs=1e-12)
    assert headline["politics_map_accuracy"] == pytest.approx(acc, abs=1e-12)
    files = {p.name for p in tmp_path.rglob("*")}
    assert {"politics_top_shows.csv", "make_ratings_leakage.csv", "politics_rmse.csv"} <= files
    # a learned baseline beats the constant global mean on every fold of the same split
    rmse = pd.read_csv(next(tmp_path.rglob("politics_rmse.csv")))
    assert (rmse["BaselineOnly"] < rmse["global mean"]).all()
    assert headline["politics_rmse_baseline"] == pytest.approx(rmse["BaselineOnly"].mean())
    assert any(name.endswith(".png") for name in files)
