"""Findings of the stop's audits fixed by the lead after the merges."""

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease.recommender import SurpriseRecommender

pytestmark = pytest.mark.slow  # started first under pytest-xdist (tests/conftest.py)


@pytest.mark.parametrize("bad", [np.nan, None, float("nan")])
@pytest.mark.parametrize("name", ["user_ids", "item_ids"])
def test_surprise_recommender_refuses_missing_ids(bad, name):
    # RatingsFrame refuses a missing id; SurpriseRecommender kept it (two NaN users passed the uniqueness check)
    X = sp.random(6, 5, density=0.6, random_state=0, format="csr", data_rvs=lambda k: np.full(k, 3.0))
    n = X.shape[0] if name == "user_ids" else X.shape[1]
    ids = np.array([f"u{i}" for i in range(n)], dtype=object)
    ids[1] = bad
    with pytest.raises(ValueError, match=f"{name} must not hold missing values .* at position 1"):
        SurpriseRecommender("BaselineOnly", random_state=0).fit(X, **{name: ids})
    SurpriseRecommender("BaselineOnly", random_state=0).fit(X, **{name: np.arange(n) + 0.5})  # floats are fine


def test_a_reader_that_goes_away_stops_the_printing_not_the_run(tmp_path):
    # `privrelease run ... | head -1`: BrokenPipeError ended the run with status 1 and its report was discarded
    import subprocess
    import sys
    from pathlib import Path

    pipeline = Path(__file__).resolve().parents[2] / "pipelines" / "iris_quantization.toml"
    out = tmp_path / "report"
    proc = subprocess.Popen([sys.executable, "-m", "privrelease", "run", str(pipeline), "--quick", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**__import__("os").environ,
                                                                                    "MPLBACKEND": "Agg"})
    assert proc.stdout.read(1)  # the first byte of the progress, then the reader goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
