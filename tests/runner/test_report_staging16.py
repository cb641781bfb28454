"""A killed run's staging folder is removed by the next save into the folder; a live run's is left alone.

A run writes its files into a hidden staging folder and moves them into place when it saves. Killed before that
(SIGKILL, a power cut), it left ``.privrelease-run-<random>`` with its tables inside for good: each such run added
one. Each run now holds a lock on its own staging folder while it lives, and a save removes the staging folders
nobody holds.
"""

import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from privrelease.runner import Report
from privrelease.runner._report import _STAGING_PREFIX


def _stagings(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(_STAGING_PREFIX))


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_runs_staging_folder_is_removed_by_the_next_save(tmp_path):
    out = tmp_path / "out"
    code = textwrap.dedent(f"""
        import os, signal
        import pandas as pd
        from privrelease.runner import Report
        rep = Report({str(out)!r}, title="killed")
        rep.table(pd.DataFrame({{"x": [1]}}), "half_done")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    stale = _stagings(out)
    assert len(stale) == 1 and (out / stale[0] / "half_done.csv").exists()
    rep = Report(out, title="next", overwrite=True)
    rep.table(pd.DataFrame({"x": [2]}), "curve")
    rep.save()
    assert _stagings(out) == []
    assert pd.read_csv(out / "curve.csv")["x"].tolist() == [2]


def test_a_live_runs_staging_folder_is_left_and_saves_after(tmp_path):
    out = tmp_path / "out"
    a = Report(out, title="A")
    a.table(pd.DataFrame({"x": [1]}), "from_a")  # A's staging folder exists, A still running
    b = Report(out, title="B", overwrite=True)
    b.table(pd.DataFrame({"x": [2]}), "from_b")
    b.save()
    (left,) = _stagings(out)  # A's, untouched
    assert pd.read_csv(out / left / "from_a.csv")["x"].tolist() == [1]
    a.discard()
    assert _stagings(out) == []


def test_the_sweep_never_removes_a_folder_it_did_not_empty(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    nested = out / f"{_STAGING_PREFIX}nested"
    (nested / "sub").mkdir(parents=True)  # holds a folder: never made by a run, not emptied, kept
    (nested / "t.csv").write_text("x\n")
    rep = Report(out, title="A", overwrite=True)
    rep.table(pd.DataFrame({"x": [1]}), "curve")
    rep.save()
    assert (nested / "sub").is_dir()


def test_a_save_never_sweeps_a_staging_folder_being_created(tmp_path, monkeypatch):
    # run B creates its staging folder and then locks it; run A saving in between took the new, empty folder
    # for a killed run's and removed it (B then failed: "cannot write into output folder"). Creation is now
    # under the output folder's lock, which A's save holds while it sweeps: A waits, then leaves B's folder
    import fcntl
    import threading

    from privrelease.runner._report import _Folder

    out = tmp_path / "out"
    out.mkdir()
    a = _Folder(out, overwrite=True)
    a.write("a.csv", b"1\n")
    b = _Folder(out, overwrite=True)
    real, saver = fcntl.flock, []

    def flock(fd, op):
        if not saver and op == (fcntl.LOCK_EX | fcntl.LOCK_NB):  # B's folder exists, not yet locked: A saves
            saver.append(threading.Thread(target=a.commit))
            saver[0].start()
            saver[0].join(timeout=1.0)  # A must wait for B's creation to finish
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    b.write("b.csv", b"2\n")
    monkeypatch.setattr(fcntl, "flock", real)
    saver[0].join(timeout=60)
    assert not saver[0].is_alive()
    assert (out / "a.csv").read_bytes() == b"1\n" and len(_stagings(out)) == 1  # A saved; B's folder kept
    b.commit()  # B's report then replaces A's, as a rerun does
    assert (out / "b.csv").read_bytes() == b"2\n" and not (out / "a.csv").exists()
    assert _stagings(out) == []
