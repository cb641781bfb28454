"""Smoke tests of the evaluation experiments on small data (the full runs are CLI jobs)."""

import json

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from privrelease.datasets import make_ratings  # noqa: E402
from privrelease.runner import Report  # noqa: E402
from privrelease.runner.experiments import movielens_gender, synthetic_ratings  # noqa: E402
from shared_helpers import fake_ml100k  # noqa: E402 - tests/shared_helpers.py

SMALL = dict(max_leakages=(0.0,), blurme_fractions=(0.3,), n_clusters=3, cv=2,
             attack_models=("logistic",), n_jobs=1)


def test_movielens_gender_on_a_small_stand_in(tmp_path):
    folder, R, a = fake_ml100k(tmp_path / "ml-100k")
    rep = Report(tmp_path / "out", title="ml")
    head = movielens_gender.run(rep, path=str(folder), recommender={"algorithm": "BaselineOnly"}, **SMALL)
    rep.save()
    assert head["status"] == "ok"
    # the reference release 'nothing' costs something, and every figure is a finite number
    assert np.isfinite(head["movielens_rmse_original"])
    table = (tmp_path / "out" / "movielens_comparison.csv").read_text()
    assert "optimal mapping" in table and "BlurMe (greedy)" in table and "naive representatives" in table
    assert json.loads((tmp_path / "out" / "headline.json").read_text())["status"] == "ok"
    for png in ("movielens_frontier_adaptive.png", "movielens_roc.png", "movielens_leakage_rmse_frontier.png"):
        assert (tmp_path / "out" / png).stat().st_size > 1000


def test_movielens_private_attributes(tmp_path):
    import pandas as pd

    users = pd.DataFrame({"age": [7, 24, 25, 34, 35, 73], "gender": ["F", "M", "M", "F", "F", "M"]})
    a, text = movielens_gender.private_attribute(users, "age_band", (25, 35))
    assert a.tolist() == [0, 0, 1, 1, 2, 2] and "under 25 (2 users)" in text and "35 and over (2 users)" in text
    a, _ = movielens_gender.private_attribute(users, "gender_x_age_band", (25, 35))
    assert a.tolist() == [[1, 0], [0, 0], [0, 1], [1, 1], [1, 2], [0, 2]]
    a, _ = movielens_gender.private_attribute(users, "gender")
    assert a.tolist() == [1, 0, 0, 1, 1, 0]
    with pytest.raises(ValueError, match=r"age_cuts=\[80\].*'80 and over'.*oldest \(73\)"):
        movielens_gender.private_attribute(users, "age_band", (80,))


def test_movielens_joint_attribute_end_to_end(tmp_path):
    ages = np.random.default_rng(1).integers(15, 60, size=160)
    folder, R, a = fake_ml100k(tmp_path / "ml-100k", ages=ages)
    rep = Report(tmp_path / "out", title="ml")
    head = movielens_gender.run(rep, path=str(folder), attribute="gender_x_age_band",
                                recommender={"algorithm": "BaselineOnly"}, **SMALL)
    rep.save()
    assert head["status"] == "ok" and np.isfinite(head["movielens_rmse_original"])
    assert "gender x age band, protected jointly" in rep.markdown()
    table = (tmp_path / "out" / "movielens_comparison.csv").read_text()
    assert "optimal mapping" in table and "BlurMore (greedy)" in table


def _fake_ml1m(folder, n_users=160, n_items=30, seed=0):
    R, a, _ = make_ratings(n_users, n_items, attribute_strength=2.0, random_state=seed)
    coo = R.tocoo()
    codes = np.array([1, 18, 25, 35, 45, 50, 56])[np.random.default_rng(seed).integers(0, 7, n_users)]
    folder.mkdir(parents=True)
    (folder / "ratings.dat").write_text("".join(f"{u + 1}::{3 * i + 1}::{int(r)}::97{k:07d}\n"
                                                for k, (u, i, r) in enumerate(zip(coo.row, coo.col, coo.data))))
    (folder / "users.dat").write_text("".join(f"{u + 1}::{'F' if a[u] else 'M'}::{codes[u]}::0::00000\n"
                                              for u in range(n_users)))
    (folder / "movies.dat").write_bytes("".join(f"{3 * i + 1}::Movie {i}::Drama\n"
                                                for i in range(n_items)).encode("latin-1"))
    return folder, R, a, codes


def test_movielens_1m_joint_attribute_end_to_end(tmp_path):
    folder, R, a, codes = _fake_ml1m(tmp_path / "ml-1m")
    rep = Report(tmp_path / "out", title="ml")
    head = movielens_gender.run(rep, dataset="ml-1m", path=str(tmp_path), attribute="gender_x_age_band",
                                recommender={"algorithm": "BaselineOnly"}, **SMALL)
    rep.save()
    assert head["status"] == "ok"
    text = rep.markdown()
    assert f"MovieLens 1M: 160 users, 30 movies, {R.nnz} ratings" in text
    # the default cuts 25 and 35 on the codes: {1, 18} under 25, {25} 25 to 34, {35, ..., 56} 35 and over
    expected = np.bincount(np.searchsorted([25, 35], codes, side="right"), minlength=3)
    assert (f"under 25 ({expected[0]} users), 25 to 34 ({expected[1]} users), 35 and over ({expected[2]} users)"
            in text)


def test_movielens_gender_reports_missing_data(tmp_path, capsys):
    rep = Report(tmp_path / "out", title="ml")
    head = movielens_gender.run(rep, path=str(tmp_path / "nowhere"), quick=True)
    text = rep.markdown()
    assert head == {"status": "data missing"}
    assert "Data missing" in text and "never downloads" in text
    assert "MovieLens 100k was not found" in capsys.readouterr().err


def test_synthetic_ratings_helpers(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"max_leakage": [0.0, 0.01, 0.1], "worst_auc_adaptive": [0.52, 0.54, 0.7],
                          "rmse_released": [1.0, 0.95, 0.9]})
    point = synthetic_ratings.operating_point(frame, 0.55)
    assert point["max_leakage"] == 0.01          # lowest RMSE among the points meeting the target
    assert synthetic_ratings.operating_point(frame, 0.5) is None
    rep = Report(tmp_path / "out", title="syn")
    with pytest.raises(ValueError, match="unknown data set 'netflix'"):
        synthetic_ratings.run(rep, datasets=("netflix",), **SMALL)
