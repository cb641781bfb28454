"""A rerun into a report folder: the folder holds one run at a time (fifteenth audit).

A rerun with ``--overwrite`` wrote each table and plot over the earlier run's at once and report.md only at the end:
stopped partway (Ctrl-C, an exception), the folder held run A's report.md and headline.json beside run B's CSVs and
PNGs, which report.md names; a successful rerun writing fewer files left run A's other files beside it.
"""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from privrelease.runner import OutputFolderError, Report
from privrelease.runner._report import MANIFEST, _STAGING_PREFIX

from shared_helpers import quick_census_run, run_cli  # tests/shared_helpers.py

CENSUS = str(Path(__file__).resolve().parents[2] / "pipelines" / "census_erasure.toml")


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _named_files(report_md):
    """The files a report.md names: tables as (`name.csv`), plots as ](name.png)."""
    text = report_md.read_text()
    return set(re.findall(r"\(`([^`]+\.csv)`\)", text)) | set(re.findall(r"\]\(([^)]+\.png)\)", text))


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    out = quick_census_run(tmp_path_factory, "staging")
    (out / "notes.txt").write_text("the user's own notes\n")  # not the report's: must survive every rerun
    return out, _snapshot(out)


def _stop_at_first_figure(monkeypatch, exc):
    """Run B stops at its first plot, after it wrote its first table; returns the names of the tables written."""
    tables, table = [], Report.table

    def counted(self, df, name, *args, **kwargs):
        tables.append(name)
        return table(self, df, name, *args, **kwargs)

    def figure(self, fig, name, caption=None):
        import matplotlib.pyplot as plt

        plt.close(fig)
        raise exc

    monkeypatch.setattr(Report, "table", counted)
    monkeypatch.setattr(Report, "figure", figure)
    return tables


@pytest.mark.parametrize("exc, status", [(KeyboardInterrupt(), 130), (RuntimeError("disk on fire"), 1)])
def test_a_rerun_stopped_partway_leaves_the_earlier_report_whole(run_a, monkeypatch, capsys, exc, status):
    out, before = run_a
    tables = _stop_at_first_figure(monkeypatch, exc)
    rc, _, err = run_cli(["run", CENSUS, "--quick", "--overwrite", "-o", str(out), "--set", "deltas=[0.0, 0.7]"],
                         capsys)
    assert rc == status, err
    assert tables == ["curve"]  # run B wrote a table, then stopped
    # no file of run B: report.md, headline and every table and plot it names are run A's, byte for byte
    assert _snapshot(out) == before
    assert _named_files(out / "report.md") <= set(before)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == []  # the staging folder is gone


def test_a_report_names_only_files_of_its_own_run(run_a, capsys, tmp_path):
    out, before = run_a
    copy = tmp_path / "out"
    copy.mkdir()
    for name, data in before.items():
        (copy / name).write_bytes(data)
    rc, _, err = run_cli(["run", CENSUS, "--quick", "--overwrite", "-o", str(copy), "--set", "top=3"], capsys)
    assert rc == 0, err
    assert "top-3 profiles" in (copy / "report.md").read_text()
    assert (copy / "notes.txt").read_text() == "the user's own notes\n"
    listed = json.loads((copy / MANIFEST).read_text())["files"]
    assert set(listed) == {p.name for p in copy.iterdir()} - {"notes.txt", MANIFEST}
    assert _named_files(copy / "report.md") <= set(listed)


def test_a_successful_rerun_writing_fewer_files_removes_the_earlier_runs_other_files(tmp_path):
    out = tmp_path / "out"
    rep = Report(out, title="A")
    rep.table(pd.DataFrame({"x": [1]}), "kept")
    rep.table(pd.DataFrame({"x": [1]}), "only_in_a")
    rep.json({"auc": 0.9}, "headline")
    rep.save()
    (out / "mine.csv").write_text("the user's own table\n")
    (out / "sub").mkdir()  # a folder is never the report's
    rep = Report(out, title="B", overwrite=True)
    rep.table(pd.DataFrame({"x": [2]}), "kept")
    rep.save()
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST, "kept.csv", "mine.csv", "report.html",
                                                            "report.md", "sub"])
    assert pd.read_csv(out / "kept.csv")["x"].tolist() == [2]
    assert (out / "mine.csv").read_text() == "the user's own table\n"


def test_nothing_the_run_wrote_is_in_the_folder_before_it_is_saved(tmp_path):
    out = tmp_path / "out"
    rep = Report(out, title="A")
    rep.table(pd.DataFrame({"x": [1]}), "curve")
    assert not (out / "curve.csv").exists()
    assert [p.name for p in out.iterdir()][0].startswith(_STAGING_PREFIX)
    rep.discard()
    assert not out.exists()  # the run created it and left nothing in it: removed again


def test_the_manifest_never_removes_a_file_outside_the_folder_or_through_a_link(tmp_path):
    out = tmp_path / "out"
    Report(out, title="A").save()
    outside = tmp_path / "outside.csv"
    outside.write_text("precious")
    rep = Report(out, title="B", overwrite=True)  # the folder is checked here; the rest is planted after
    (out / "link.csv").symlink_to(outside)
    (out / MANIFEST).write_text(json.dumps({"files": ["../outside.csv", str(outside), "link.csv", "report.md"]}))
    rep.save()
    assert outside.read_text() == "precious"
    assert (out / "link.csv").is_symlink()
    assert sorted(json.loads((out / MANIFEST).read_text())["files"]) == ["report.html", "report.md"]


def test_a_planted_manifest_cannot_remove_the_users_files(tmp_path):
    """The manifest lives in the user's folder: an entry removes a file only if it holds what the report wrote."""
    import hashlib

    out = tmp_path / "out"
    Report(out, title="A").save()
    (out / "data.csv").write_text("the user's data\n")
    (out / "copy.csv").write_text("a table a report wrote\n")
    wrong = hashlib.sha256(b"something else").hexdigest()
    right = hashlib.sha256(b"a table a report wrote\n").hexdigest()
    (out / MANIFEST).write_text(json.dumps({"files": {"data.csv": wrong, "copy.csv": right, "notes.txt": "x"}}))
    rep = Report(out, title="B", overwrite=True)
    rep.table(pd.DataFrame({"x": [1]}), "new")
    rep.save()
    assert (out / "data.csv").read_text() == "the user's data\n"
    assert not (out / "copy.csv").exists()
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert sorted(listed) == ["new.csv", "report.html", "report.md"]
    assert listed["new.csv"] == hashlib.sha256((out / "new.csv").read_bytes()).hexdigest()


# ------------------------------------------------------------------ audit of the staging (stop 38, second round)
def test_a_second_save_of_one_report_keeps_the_first_saves_files(tmp_path):
    out = tmp_path / "out"
    rep = Report(out, title="A")
    rep.table(pd.DataFrame({"x": [1]}), "a")
    rep.save()
    rep.table(pd.DataFrame({"x": [2]}), "b")
    rep.save()
    assert (out / "a.csv").exists() and (out / "b.csv").exists()
    assert {"a.csv", "b.csv"} <= _named_files(out / "report.md")
    assert {"a.csv", "b.csv"} <= set(json.loads((out / MANIFEST).read_text())["files"])


def test_named_pipes_in_the_folder_never_block_a_save(tmp_path):
    import os
    import signal

    out = tmp_path / "out"
    Report(out, title="A").save()
    os.remove(out / MANIFEST)
    os.mkfifo(out / MANIFEST)  # a manifest that is a pipe
    os.mkfifo(out / "pipe")
    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError("the save blocked")))
    signal.alarm(20)
    try:
        rep = Report(out, title="B", overwrite=True)
        rep.table(pd.DataFrame({"x": [1]}), "t")
        rep.save()  # the pipe where the manifest goes is not read (it blocked), and is replaced by the manifest
        assert "t.csv" in json.loads((out / MANIFEST).read_text())["files"]
        (out / MANIFEST).write_text(json.dumps({"files": {"pipe": "0" * 64}}))
        rep = Report(out, title="C", overwrite=True)
        rep.save()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert (out / "pipe").exists()


def test_a_deeply_nested_manifest_is_ignored(tmp_path):
    out = tmp_path / "out"
    Report(out, title="A").save()
    (out / MANIFEST).write_text('{"files": ' + "[" * 200_000)
    Report(out, title="B", overwrite=True).save()
    assert "B" in (out / "report.md").read_text()


def test_a_folder_named_like_the_manifest_is_a_clear_error(tmp_path):
    out = tmp_path / "out"
    Report(out, title="A").save()
    (out / MANIFEST).unlink()
    (out / MANIFEST).mkdir()
    with pytest.raises(OutputFolderError, match="cannot write .*privrelease-report.json"):
        Report(out, title="B", overwrite=True).save()
    assert "A" in (out / "report.md").read_text()  # the earlier report untouched


_DEFERRED = """
import fcntl, json, os, signal, sys
import pandas as pd
from privrelease.runner import Report, _report

out = sys.argv[1]
rep = Report(out, title="A")
rep.table(pd.DataFrame({"x": [1]}), "old")
rep.save()
seen = {}
real = _report._Folder._remove

def during(self, name, fd, digest):
    other = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        seen["locked"] = False
    except BlockingIOError:
        seen["locked"] = True
    finally:
        os.close(other)
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the change of reports
    return real(self, name, fd, digest)

_report._Folder._remove = during
rep = Report(out, title="B", overwrite=True)
rep.table(pd.DataFrame({"x": [2]}), "new")
try:
    rep.save()
    seen["interrupted"] = False
except KeyboardInterrupt:  # delivered once the folder holds the new report whole
    seen["interrupted"] = True
print(json.dumps(seen))
"""


def test_saving_defers_ctrl_c_delivered_to_another_thread(tmp_path):
    # a signal sent to the process goes to any thread that does not block it: blocking it in the main thread's mask
    # did not hold it back (Python ran the handler in the main thread at once); here it goes to a worker thread
    import subprocess
    import sys

    out = tmp_path / "out"
    script = _DEFERRED.replace(
        "os.kill(os.getpid(), signal.SIGINT)",
        # the worker thread runs the C-level handler only once the kernel schedules it: on a loaded machine that
        # came after the save had ended (the interrupt then arrived at worker.join()); waited for here, in the
        # middle of the change of reports, as a Ctrl-C arriving there would be
        "signal.pthread_kill(worker.ident, signal.SIGINT)\n    import time\n    time.sleep(1.0)").replace(
        "seen = {}", "import threading\nstop = threading.Event()\nworker = threading.Thread(target=stop.wait)\n"
                     "worker.start()\nseen = {}").replace(
        "print(json.dumps(seen))", "stop.set()\nworker.join()\nprint(json.dumps(seen))")
    assert "pthread_kill" in script and "worker.start()" in script
    done = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"locked": True, "interrupted": True}
    assert "B" in (out / "report.md").read_text() and (out / "new.csv").exists() and not (out / "old.csv").exists()


def test_saving_holds_the_folder_and_defers_ctrl_c(tmp_path):
    # in a process of its own: signals are held back in the main thread only (a test worker may run elsewhere)
    import subprocess
    import sys

    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", _DEFERRED, str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"locked": True, "interrupted": True}
    assert "B" in (out / "report.md").read_text() and (out / "new.csv").exists() and not (out / "old.csv").exists()
