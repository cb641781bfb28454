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
