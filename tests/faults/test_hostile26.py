"""The hostile hunt of stop 48 (runner and report layer): a report writing over its own input files, size checks
of every allocation, figures of queries no auction bought, signals after the report is written, a custom cost's
value at zero, an output folder the file system refuses, users-file ids matching no rating id, huge budgets, an
interrupted run's empty folder."""
import warnings
from pathlib import Path

import numpy as np
import pytest

from shared_helpers import fake_ml100k, run_cli  # tests/shared_helpers.py

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _rating_files(folder, ratings_name, users_name, n_users=60, user_id=str):
    """A small ratings file (user, item, rating) and users file (user, gender) in ``folder``; their texts."""
    rng = np.random.default_rng(0)
    rows, users = ["user,item,rating"], ["user,gender"]
    for u in range(n_users):
        g = u % 2
        users.append(f"{user_id(u)},{'MF'[g]}")
        for i in rng.choice(30, 12, replace=False):
            t = 3 + (1 if (i < 15) == bool(g) else -1) + rng.integers(-1, 2)
            rows.append(f"{u},i{i},{int(np.clip(t, 1, 5))}")
    folder.mkdir(exist_ok=True)
    (folder / ratings_name).write_text("\n".join(rows) + "\n")
    (folder / users_name).write_text("\n".join(users) + "\n")
    return (folder / ratings_name).read_text(), (folder / users_name).read_text()


def _ratings_argv(folder, ratings_name, users_name, out, *extra):
    return ["run", str(PIPELINES / "ratings_file.toml"), "--quick", "--set", f"path={folder / ratings_name}",
            "--set", f"users_path={folder / users_name}", "--set", "attribute=gender", "-o", str(out), *extra]


# ---------------------------------------------------------------- A: a report never replaces the run's inputs
def test_overwrite_never_replaces_the_runs_own_input_files(tmp_path, capsys):
    folder = tmp_path / "rf"
    texts = _rating_files(folder, "ratings_comparison.csv", "data.json")  # names the report writes
    rc, _, err = run_cli(_ratings_argv(folder, "ratings_comparison.csv", "data.json", folder, "--overwrite"),
                         capsys)
    assert rc == 2, err
    assert "parameter" in err and "data.json" in err and "input" in err
    assert ((folder / "ratings_comparison.csv").read_text(), (folder / "data.json").read_text()) == texts
    assert sorted(p.name for p in folder.iterdir()) == ["data.json", "ratings_comparison.csv"]


def test_an_input_linked_from_elsewhere_or_named_like_a_page_is_refused_up_front(tmp_path, capsys):
    out = tmp_path / "out"
    texts = _rating_files(out, "report.md", "users.csv")
    elsewhere = tmp_path / "data"
    elsewhere.mkdir()
    (elsewhere / "r.csv").symlink_to(out / "report.md")  # the link is followed: the file is the report page
    rc, _, err = run_cli(_ratings_argv(elsewhere, "r.csv", str(out / "users.csv"), out, "--overwrite"), capsys)
    assert rc == 2, err
    assert "parameter path" in err and "report.md" in err
    assert ((out / "report.md").read_text(), (out / "users.csv").read_text()) == texts


def test_without_overwrite_the_refusal_says_the_files_are_the_runs_inputs(tmp_path, capsys):
    folder = tmp_path / "rf"
    _rating_files(folder, "r.csv", "u.csv")
    rc, _, err = run_cli(_ratings_argv(folder, "r.csv", "u.csv", folder), capsys)
    assert rc == 2 and "input" in err and "path = " in err and "users_path = " in err, err


def test_an_input_folder_that_is_the_output_folder_is_refused(tmp_path, capsys):
    ml = tmp_path / "ml"
    fake_ml100k(ml)
    before = {p.name: p.read_bytes() for p in ml.iterdir()}
    rc, _, err = run_cli(["run", str(PIPELINES / "movielens_gender.toml"), "--quick", "--set", f"path={ml}",
                          "-o", str(ml), "--overwrite"], capsys)
    assert rc == 2 and "parameter path" in err and "output folder" in err, err
    assert {p.name: p.read_bytes() for p in ml.iterdir()} == before


# ---------------------------------------------------------------- B: every allocation a parameter drives is capped
def test_truthfulness_players_times_features_is_capped_like_the_schedules_design():
    from privrelease.runner import PipelineError, check_run

    with pytest.raises(PipelineError, match=r"truthfulness_players = 1000000 x n_features = 100 make a "
                                            r"100000000-cell design matrix"):
        check_run("truthful_regression", {"truthfulness_players": 1_000_000, "n_features": 100,
                                          "n_players": [1_000]})
    # 200,000 x 100 = 2e7 cells: the cap itself is allowed, as for n_players
    check_run("truthful_regression", {"truthfulness_players": 200_000, "n_features": 100,
                                      "n_players": [1_000]})


# ---------------------------------------------------------------- C, K: queries nobody bought; a budget of 1e308
def test_queries_where_no_auction_bought_are_no_greedy_queries_and_huge_budgets_stay_finite(tmp_path):
    import pandas as pd

    from privrelease.runner import PipelineError, check_run, run_experiment

    with pytest.raises(PipelineError, match=r"budgets\[0\] = 1e\+308.*log axis"):
        check_run("privacy_auction", {"budgets": [1e308]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the plot's axis overflowed at 1e308
        run_experiment("privacy_auction", tmp_path / "out", params={"budgets": [0.0, 1e300]}, quick=True)
    curve = pd.read_csv(tmp_path / "out" / "rmse_vs_budget.csv")
    zero, huge = curve.iloc[0], curve.iloc[1]
    # at B = 0 every query's branch is "none": nothing bought, no greedy query to average over
    assert zero["n_bought"] == 0 and np.isnan(zero["rmse_greedy_queries"]) and zero["max_weight_branch"] == 0
    # a budget beyond every cost buys the prefix in every query: the greedy queries are all of them
    assert huge["max_weight_branch"] == 0 and huge["rmse_greedy_queries"] == pytest.approx(huge["rmse"])


# ---------------------------------------------------------------- D: a signal once the report is written
def _signal_after_report(tmp_path, pipeline, signals):
    """``python -m privrelease run PIPELINE --quick``, the ``signals`` sent as soon as "report written" is printed;
    ``(status, stderr)``."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OMP_NUM_THREADS": "1",
           "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.Popen([sys.executable, "-m", "privrelease", "run", str(PIPELINES / pipeline), "--quick",
                             "-o", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        for line in proc.stdout:
            if "report written" in line:
                for sig in signals:
                    proc.send_signal(sig)
                break
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_after_the_report_is_written_leaves_status_0_and_no_traceback(tmp_path, sig):
    import signal

    rc, err = _signal_after_report(tmp_path, "census_erasure.toml", [getattr(signal, sig)] * 2)
    assert rc == 0 and "Traceback" not in err and "error" not in err, (rc, err)
    assert (tmp_path / "out" / "report.md").is_file()


# ---------------------------------------------------------------- E: a custom cost that is not 0 at eps = 0
def test_a_cost_not_zero_at_eps_zero_is_refused_as_such_not_as_non_convex():
    from privrelease.contracts import design_contract

    def shifted(v, eps):  # convex and increasing, but costs 1 with nothing sold
        return 1.0 + v * eps ** 2

    with pytest.raises(ValueError, match=r"cost\(1, 0\) = 1, expected 0"):
        design_contract(np.array([1.0, 2.0, 3.0]), 0.5, cost=shifted)
    # 0 at eps = 0, or NaN there (a cost whose limit at 0 is 0): the shape check lets it through
    design_contract(np.array([1.0, 2.0, 3.0]), 0.5, cost=lambda v, e: v * e ** 2)
    design_contract(np.array([1.0, 2.0, 3.0]), 0.5, cost=lambda v, e: np.where(e > 0, v * e * np.log1p(e), np.nan))


# ---------------------------------------------------------------- F: a folder the file system will not create
@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc, where no folder can be created")
def test_an_output_folder_that_cannot_be_created_is_refused_before_the_run(capsys, monkeypatch):
    import privrelease.runner.experiments.contract_design as experiment

    ran = []
    monkeypatch.setattr(experiment, "run", lambda report, **kw: ran.append(1) or {})
    rc, _, err = run_cli(["run", str(PIPELINES / "contract_design.toml"), "--quick", "-o",
                          "/proc/privrelease-hostile26/out"], capsys)
    assert rc == 2 and "cannot create output folder" in err and not ran, err


# ---------------------------------------------------------------- G: users-file ids that partly match
def test_users_file_ids_partly_matching_the_rating_ids_are_warned_with_counts_and_examples(tmp_path):
    from privrelease.runner import check_run

    # "000".."119" against the integers 0..119: "100".."119" match, the 100 zero-padded ones name nobody
    _rating_files(tmp_path, "r.csv", "u.csv", n_users=120, user_id=lambda u: f"{u:03d}")
    params = {"path": str(tmp_path / "r.csv"), "users_path": str(tmp_path / "u.csv"), "attribute": "gender"}
    with pytest.warns(UserWarning, match=r"100 of the 120 ids of the users file .*'000', '001', '002'.*100 of its "
                                         r"120 users have no row .*0, 1, 2"):
        check_run("ratings_file", params)
    # rows of users without ratings alone (every rating user has a row) are ordinary: no warning
    _rating_files(tmp_path, "r.csv", "u.csv", n_users=120)
    with open(tmp_path / "u.csv", "a") as fh:
        fh.write("9999,M\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        check_run("ratings_file", params)


# ---------------------------------------------------------------- L: an interrupted run into a new folder
def test_an_interrupted_run_removes_the_new_folders_it_created_and_left_empty(tmp_path, monkeypatch):
    import privrelease.runner.experiments.contract_design as experiment
    from privrelease.runner import run_experiment

    def interrupted(report, **kw):
        report.text("started")
        report.json({"x": 1}, "partial")  # the folder is created at the first file
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_experiment("contract_design", tmp_path / "new" / "deeper" / "out", quick=True)
    assert list(tmp_path.iterdir()) == []
    # a folder that holds something else (here made before the run) is kept, as is the user's file in it
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "mine.txt").write_text("mine")
    with pytest.raises(KeyboardInterrupt):
        run_experiment("contract_design", tmp_path / "kept" / "out", quick=True)
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["mine.txt"]
