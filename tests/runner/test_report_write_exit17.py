"""A report that cannot be written after the experiment ran (its output folder changed under the run, another run
saving into it at once) is a failed run, exit status 1, not the usage error 2 (which says nothing ran)."""

from pathlib import Path

import pytest

from privrelease.runner import OutputFolderError, ReportWriteError, run_experiment
from privrelease.runner import _report
from shared_helpers import run_cli

PIPELINE = str(Path(__file__).resolve().parents[2] / "pipelines" / "iris_quantization.toml")


def _refuse_save(monkeypatch):
    def save(self):
        raise OutputFolderError("output folder 'out' was replaced while the report was being written")

    monkeypatch.setattr(_report.Report, "save", save)


def test_run_experiment_reports_a_write_failure_after_the_run(tmp_path, monkeypatch):
    _refuse_save(monkeypatch)
    with pytest.raises(ReportWriteError, match="ran, but its report could not be written.*was replaced") as info:
        run_experiment("iris_quantization", tmp_path / "out", quick=True)
    assert isinstance(info.value.__cause__, OutputFolderError)
    assert not isinstance(info.value, OutputFolderError)  # not a usage error
    assert not any((tmp_path / "out").glob("*.md"))  # nothing of the run is left


def test_cli_exit_status_is_one_when_the_report_cannot_be_written(tmp_path, monkeypatch, capsys):
    _refuse_save(monkeypatch)
    rc, _, err = run_cli(["run", PIPELINE, "--quick", "-o", str(tmp_path / "out")], capsys)
    assert rc == 1
    assert "could not be written" in err


def test_cli_usage_error_before_the_run_stays_two(tmp_path, capsys):
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "report.md").write_text("an earlier report")
    rc, _, err = run_cli(["run", PIPELINE, "--quick", "-o", str(folder)], capsys)
    assert rc == 2
    assert "earlier report" in err
