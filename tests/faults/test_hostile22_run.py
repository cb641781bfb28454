"""Hostile-input hunt 22 (runs): warnings raised in joblib worker processes reach the caller, SIGTERM stops a
command-line run as Ctrl-C does, report file names are escaped in report.md and checked before anything is
created, and the command line's n_jobs follows the library's rule."""

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import FunctionTransformer

from doubles import ItemMean

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- 1: worker warnings
def _warning_release(X):
    """The identity release, with a warning each time it runs (in a worker process at n_jobs=2)."""
    warnings.warn("hostile22: a warning raised while releasing", UserWarning)
    return X


def _ratings(n_users=60, n_items=12, seed=0):
    rng = np.random.default_rng(seed)
    R = sp.random(n_users, n_items, density=0.5, random_state=seed, data_rvs=lambda n: rng.integers(1, 6, n))
    return sp.csr_matrix(R), rng.integers(0, 2, n_users)


def _two_warnings_release(X):
    warnings.warn("hostile22: first", RuntimeWarning)
    warnings.warn("hostile22: second", UserWarning)
    return X


def _rmse_cost(n_jobs, release=_warning_release):
    from privrelease.evaluation import rmse_cost

    R, a = _ratings()
    mapper = FunctionTransformer(release, accept_sparse=True)
    return rmse_cost(mapper, R, a, recommender=ItemMean(), cv=2, random_state=0, n_jobs=n_jobs, verbose=0)


def test_worker_warnings_reach_the_caller_in_order_once_each():
    # the release runs in the workers only (the folds); at n_jobs=1 the caller sees its warnings: so at n_jobs=2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cost = _rmse_cost(2, _two_warnings_release)
    mine = [w for w in caught if "hostile22" in str(w.message)]
    # 2 folds: each warning raised twice in the workers, issued once per distinct category and message, in order
    assert [(w.category, str(w.message)) for w in mine] == [
        (RuntimeWarning, "hostile22: first"), (UserWarning, "hostile22: second")]
    assert {Path(w.filename).name for w in mine} == {Path(__file__).name}  # where they were raised
    # the released data is the original data: the same RMSE (the result is unchanged by the capture)
    assert cost.summary["rmse_released"] == pytest.approx(cost.summary["rmse_original"], abs=1e-12)
    assert not [w for w in caught if "tasks have been successfully executed" in str(w.message)]


def test_worker_warning_seen_by_pytest_warns():
    with pytest.warns(UserWarning, match="hostile22: a warning raised while releasing"):
        _rmse_cost(2)


def test_worker_warning_is_an_error_under_the_callers_error_filter():
    # "-W error" semantics: the caller's filter, not the workers', decides; joblib's own "tasks cancelled" warning
    # (also an error under the filter) does not replace it
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match="^hostile22: a warning raised while releasing$"):
            _rmse_cost(2)


# --------------------------------------------------------------------------- 2: SIGTERM in the command line
# the run's first file is staged at once (the experiment writes its files at the end), so the staging folder is
# there when the signal comes; then the quick synthetic run with two loky workers
_TERM_SCRIPT = """
import sys
import pandas as pd
from privrelease import cli
from privrelease.runner import _report

init = _report.Report.__init__
def staged_at_once(self, *args, **kwargs):
    init(self, *args, **kwargs)
    self.csv(pd.DataFrame({"x": [1]}), "early")
_report.Report.__init__ = staged_at_once
sys.exit(cli.main(sys.argv[1:]))
"""


def _cmdline(process):
    import psutil

    try:
        return process.cmdline()
    except psutil.Error:  # ended meanwhile
        return []


def test_sigterm_stops_a_cli_run_like_ctrl_c(tmp_path):
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    log = tmp_path / "stderr.txt"
    with open(log, "w") as stderr:  # a file, not a pipe: workers left behind would hold a pipe open
        proc = subprocess.Popen(
            [sys.executable, "-c", _TERM_SCRIPT, "run", str(ROOT / "pipelines" / "synthetic_ratings.toml"),
             "--quick", "--set", "n_jobs=2", "-o", str(out)],
            env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    try:
        main = psutil.Process(proc.pid)
        deadline = time.monotonic() + 90
        workers = []
        while time.monotonic() < deadline and proc.poll() is None:
            staged = list(out.glob(".privrelease-run-*")) if out.is_dir() else []
            workers = [c for c in main.children(recursive=True) if "loky" in " ".join(_cmdline(c))]
            if staged and len(workers) >= 2:
                break
            time.sleep(0.1)
        assert proc.poll() is None and staged and workers, "the run never had its workers and staging folder"
        children = main.children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        err = log.read_text()
        assert proc.returncode == 143, err[-2000:]
        assert err.strip().splitlines()[-1] == "privrelease: error: terminated (SIGTERM)"
        # joblib shut its workers down; loky's resource tracker ends with its parent
        _, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, [p.cmdline() for p in alive]
        assert not list(out.glob(".privrelease-run-*"))  # the staging folder went, as on Ctrl-C
        assert not list(Path("/dev/shm").glob(f"joblib_memmapping_folder_{proc.pid}_*"))
    finally:  # the run's process group (start_new_session): whatever of it is left, workers included
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def test_the_library_installs_no_sigterm_handler():
    code = "import signal, privrelease, privrelease.cli; print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.strip() == "True", done.stderr


# --------------------------------------------------------------------------- 6, 9: report file names
_HOSTILE_NAME = "x\n# INJECTED heading\n<img src=x onerror=alert(1)>\n- list item"


@pytest.mark.parametrize("name", [_HOSTILE_NAME, "tab\there", "esc\x1b[31m", "bidi\u202eevil", "del\x7f",
                                  "c1\x85", "line\u2028sep"])
def test_report_refuses_control_characters_in_names(tmp_path, name):
    from privrelease.runner import Report

    r = Report(tmp_path / "out", title="t")
    with pytest.raises(ValueError, match="report file name .* holds the control or invisible character"):
        r.table(pd.DataFrame({"x": [1]}), name)
    assert not (tmp_path / "out").exists()  # nothing created for a refused name


def test_report_md_escapes_file_names(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from urllib.parse import unquote

    from privrelease.runner import Report

    out = tmp_path / "out"
    r = Report(out, title="t")
    r.table(pd.DataFrame({"x": [1]}), "t (1) <img src=x> `tick` *b*")
    fig, _ = plt.subplots()
    r.figure(fig, "fig (a) b)")
    md = r.save().read_text(encoding="utf-8")
    # the table's file name is one code span: its characters are text, not markup
    assert "(``t (1) <img src=x> `tick` *b*.csv``)" in md
    assert "<img src=x>.csv`)" not in md.replace("``)", "")
    # the figure's link leads to the file on disk, whatever its name holds: a destination with no space and no
    # parenthesis is one link to CommonMark (a raw ')' ended it early, a space made it no link at all)
    line = next(ln for ln in md.splitlines() if ln.startswith("!["))
    link = line.split("](", 1)[1][:-1]
    assert line.endswith(")") and not set(link) & set(" ()<>")
    assert (out / unquote(link)).is_file() and unquote(link) == "fig (a) b).png"


def test_report_refuses_a_name_too_long_before_creating_anything(tmp_path):
    from privrelease.runner import Report

    out = tmp_path / "out"
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    r = Report(out)
    with pytest.raises(ValueError, match=rf"is 304 bytes long: expected at most {limit - 22} bytes "
                                         rf"\(the file system's limit of {limit} bytes for a name"):
        r.csv(pd.DataFrame({"x": [1]}), "a" * 300)
    # counted in bytes: 2 bytes per 'é' in UTF-8
    with pytest.raises(ValueError, match=rf"is {2 * 120 + 4} bytes long"):
        r.csv(pd.DataFrame({"x": [1]}), "é" * 120)
    for bad in ("../evil", "sub/x", "x\x00y"):
        with pytest.raises(ValueError, match="report file name must be a plain file name"):
            r.csv(pd.DataFrame({"x": [1]}), bad)
    assert not out.exists()  # refused names leave no folder behind
    # the longest name accepted is written and saved whole
    longest = "b" * (limit - 22 - len(".csv"))
    assert r.csv(pd.DataFrame({"x": [1]}), longest).name == longest + ".csv"
    r.save()
    assert (out / (longest + ".csv")).read_text() == "x\n1\n"
    assert not list(out.glob(".privrelease-run-*"))


# --------------------------------------------------------------------------- 8: n_jobs in the command line
N_JOBS_EXPERIMENTS = ["movielens_gender", "multi_attribute", "politics_tv_ratings", "ratings_file",
                      "synthetic_ratings"]


@pytest.mark.parametrize("experiment", N_JOBS_EXPERIMENTS)
def test_cli_n_jobs_follows_the_library_rule(experiment):
    import importlib

    from privrelease.runner import PipelineError
    from privrelease.utils._validation import MAX_N_JOBS, check_n_jobs

    module = importlib.import_module(f"privrelease.runner.experiments.{experiment}")
    spec = module.PARAMETERS["n_jobs"]
    # every value the Python API takes is taken, as it is
    for v in (-1, -2, 1, 2, 64, 65, MAX_N_JOBS, -MAX_N_JOBS):
        assert check_n_jobs(v) == v
        assert spec.check("n_jobs", v) == v
    # every value it refuses is refused, and the message says the library's rule (-1 included)
    for v in (0, MAX_N_JOBS + 1, -MAX_N_JOBS - 1, 1.5, True, "2"):
        with pytest.raises((TypeError, ValueError)):
            check_n_jobs(v)
        with pytest.raises(PipelineError) as info:
            spec.check("n_jobs", v)
        assert f"a nonzero integer from -{MAX_N_JOBS} to {MAX_N_JOBS} (-1 = every core)" in str(info.value)


def test_cli_n_jobs_minus_one_passes_the_whole_check():
    from privrelease.runner import check_run

    _, params, _ = check_run("synthetic_ratings", {"n_jobs": -1}, quick=True)
    assert params["n_jobs"] == -1


def test_a_folder_that_appears_before_the_first_file_is_checked_as_at_construction(tmp_path):
    from privrelease.runner import OutputFolderError, Report

    out = tmp_path / "x"
    rep = Report(out, title="t")  # missing: checked, created at the first file
    out.mkdir()
    (out / "report.md").write_text("mine")  # an earlier report appeared meanwhile
    with pytest.raises(OutputFolderError, match="holds an earlier report"):
        rep.csv(pd.DataFrame({"a": [1]}), "curve")
    assert (out / "report.md").read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["report.md"]
    with pytest.raises(OutputFolderError, match="a part of that path is a file"):
        Report(tmp_path / "x" / "report.md" / "sub")


def _warn_then_fail(X):
    warnings.warn("hostile22: raised before the error", UserWarning)
    raise ValueError("hostile22: the release failed")


def test_worker_warnings_raised_before_an_error_come_back_with_it():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="hostile22: the release failed"):
            _rmse_cost(2, _warn_then_fail)
    assert [str(w.message) for w in caught if "hostile22" in str(w.message)] == ["hostile22: raised before the error"]
