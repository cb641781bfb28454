"""Parameters that failed only mid-run are refused before anything runs (exit 2, nothing written).

1. The evaluation protocol's split (too few opted-in / protected users) and MovieLens's age bands are
   checked before the first stage of synthetic_ratings, realistic_ratings, multi_attribute and movielens_gender.
"""

from pathlib import Path

import numpy as np
import pytest

from shared_helpers import fake_ml100k, run_cli as _run  # tests/shared_helpers.py

pytestmark = pytest.mark.slow  # started first under pytest-xdist (tests/conftest.py)

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _refused_before_the_run(rc, out, err, folder, *texts):
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("privrelease: error: "), err
    for text in texts:
        assert text in lines[0], (text, lines[0])
    assert "[stage]" not in out  # no stage ran
    assert not folder.exists() or not any(folder.iterdir())  # nothing written


@pytest.mark.parametrize("pipeline, sets, texts", [
    # politics_tv ran in full (about 15 files) before make_ratings' 50 users failed the protocol's split
    ("synthetic_ratings", ["datasets=[\"politics_tv\",\"make_ratings\"]", "n_users=50", "opt_in_fraction=0.02"],
     ["'make_ratings'", "n_users = 50", "opt_in_fraction = 0.02", "too few users for the protocol"]),
    ("realistic_ratings", ["datasets=[\"realistic\"]", "n_users=50", "opt_in_fraction=0.02"],
     ["'realistic'", "n_users = 50", "opt_in_fraction = 0.02", "too few users for the protocol"]),
    ("multi_attribute", ["n_users=60", "opt_in_fraction=0.01"],
     ["n_users = 60", "opt_in_fraction = 0.01", "too few users for the protocol"]),
])
def test_protocol_split_refused_before_the_run(tmp_path, capsys, pipeline, sets, texts):
    out_dir = tmp_path / "out"
    argv = ["run", str(PIPELINES / f"{pipeline}.toml"), "--quick", "-o", str(out_dir)]
    for s in sets:
        argv += ["--set", s]
    rc, out, err = _run(argv, capsys)
    _refused_before_the_run(rc, out, err, out_dir, *texts)


@pytest.mark.parametrize("sets, texts", [
    (["cv=20", "opt_in_fraction=0.9"], ["cv = 20", "opt_in_fraction = 0.9", "too few users for the protocol"]),
    (["attribute=age_band", "age_cuts=[100]"], ["age_cuts = [100]", "'100 and over'", "without any user"]),
])
def test_movielens_gender_split_and_bands_refused_before_the_run(tmp_path, capsys, sets, texts):
    folder = fake_ml100k(tmp_path / "ml-100k", n_users=120, ages=np.where(np.arange(120) % 2, 22, 40))[0]
    out_dir = tmp_path / "out"
    argv = ["run", str(PIPELINES / "movielens_gender.toml"), "--quick", "-o", str(out_dir),
            "--set", f"path={str(folder)!r}".replace("'", '"')]
    for s in sets:
        argv += ["--set", s]
    rc, out, err = _run(argv, capsys)
    _refused_before_the_run(rc, out, err, out_dir, *texts)


# 2. A recommender's algo_params are range-checked by the library (SurpriseRecommender), so the command line
#    refuses them before the run and a library user gets an error naming the parameter before any fit.
_OUT_OF_RANGE = [
    ("SVD", "n_factors", -1, "n_factors must be an integer >= 1"),
    ("SVD", "lr_all", -1.0, "lr_all must be a finite number > 0"),
    ("SVD", "n_epochs", 100_000_000, "n_epochs must be an integer in [1, 10000]"),
    ("SVDpp", "reg_all", -0.5, "reg_all must be a finite number >= 0"),
    ("KNNBaseline", "k", 0, "k must be an integer >= 1"),
]


@pytest.mark.parametrize("algorithm, key, value, text", _OUT_OF_RANGE)
def test_algo_params_out_of_range_refused_by_the_library(algorithm, key, value, text):
    import scipy.sparse as sp

    from privrelease.recommender import SurpriseRecommender

    X = sp.csr_matrix(np.array([[5, 3, 0], [4, 0, 1], [0, 2, 5]], dtype=float))
    with pytest.raises(ValueError, match=text.replace("[", r"\[").replace("]", r"\]")):
        SurpriseRecommender(algorithm, rating_scale=(1, 5), algo_params={key: value}).fit(X)


@pytest.mark.parametrize("algorithm, key, value, text", _OUT_OF_RANGE)
def test_algo_params_out_of_range_refused_before_the_run(tmp_path, capsys, algorithm, key, value, text):
    out_dir = tmp_path / "out"
    argv = ["run", str(PIPELINES / "synthetic_ratings.toml"), "--quick", "-o", str(out_dir),
            "--set", f"politics_recommender={{algorithm=\"{algorithm}\", algo_params={{{key}={value}}}}}"]
    rc, out, err = _run(argv, capsys)
    _refused_before_the_run(rc, out, err, out_dir, f"politics_recommender.algo_params.{key} = {value}",
                            text.split(" must be ")[1])


# 4. A failed run's leftovers are refused before the next run starts (not at the first file it would replace).
def test_folder_left_by_a_failed_run_is_refused_before_the_run(tmp_path, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for name in ("politics_tv_mapper_curve.csv", "politics_tv_roc.png", "headline.json", "notes.txt"):
        (out_dir / name).write_text("left by a failed run")
    argv = ["run", str(PIPELINES / "census_erasure.toml"), "--quick", "-o", str(out_dir)]
    rc, out, err = _run(argv, capsys)
    assert rc == 2, err
    line = err.strip()
    assert line.startswith("privrelease: error: ") and len(line.splitlines()) == 1, err
    assert "is not empty" in line and "4 file(s)" in line and "'headline.json'" in line and "--overwrite" in line
    assert sorted(p.name for p in out_dir.iterdir()) == ["headline.json", "notes.txt", "politics_tv_mapper_curve.csv",
                                                         "politics_tv_roc.png"]  # nothing written
    assert all(p.read_text() == "left by a failed run" for p in out_dir.iterdir())

    # a sub-folder alone is no leftover (the demo's folder holds one per experiment); --overwrite writes into it
    from privrelease.runner import prepare_output_folder

    (tmp_path / "demo" / "census_erasure").mkdir(parents=True)
    assert prepare_output_folder(tmp_path / "demo") == tmp_path / "demo"
    assert prepare_output_folder(out_dir, overwrite=True) == out_dir


# 3. The reports show the fitted mapper's cluster count (n_clusters_), saying when it is not the requested one.
@pytest.mark.parametrize("pipeline, requested, fitted_text, stale, extra", [
    # 300 users, 150 opted in: n_clusters = 500 is capped at 150
    ("multi_attribute", 500, "QuantizedPrivacyMapper (150 fitted clusters, not the 500 requested",
     "(500 clusters", []),
    # the heading said "k=1218" while the mapper, fitted on 609 users, used fewer; any request above the users'
    # distinct vectors fits them all (1,178 clusters), so the curve gets the fewest budgets (its solves are the time)
    ("politics_tv_binarized", 1218, "fitted clusters, not the 1218 requested", "k=1218", ["--set", "n_deltas=2"]),
])
def test_report_shows_the_fitted_cluster_count(tmp_path, capsys, pipeline, requested, fitted_text, stale, extra):
    out_dir = tmp_path / "out"
    argv = ["run", str(PIPELINES / f"{pipeline}.toml"), "--quick", "-o", str(out_dir),
            "--set", f"n_clusters={requested}", *extra]
    rc, out, err = _run(argv, capsys)
    assert rc == 0, err
    md = (out_dir / "report.md").read_text(encoding="utf-8")
    assert fitted_text in md and stale not in md
