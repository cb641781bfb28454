import pandas as pd
import pytest

from privrelease.cli import main
from privrelease.runner import Report, load_pipeline, markdown_table


def test_report_writes_markdown_csv_png(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rep = Report(tmp_path / "r", title="T")
    rep.section("S")
    rep.text("hello")
    df = pd.DataFrame({"delta": [0.0, 0.5], "leakage": [0.16, 1e-6]})
    rep.table(df, "curve", caption="cap")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    rep.figure(fig, "plot")
    rep.json({"a": 1}, "meta")
    path = rep.save()
    text = path.read_text()
    assert text.startswith("# T")
    assert "| delta | leakage |" in text and "![plot](plot.png)" in text
    assert pd.read_csv(tmp_path / "r" / "curve.csv").shape == (2, 2)
    assert (tmp_path / "r" / "plot.png").stat().st_size > 1000


def test_markdown_table_escapes_and_truncates():
    df = pd.DataFrame({"a": ["x|y"] * 5})
    md = markdown_table(df, max_rows=2)
    assert "x\\|y" in md and "3 more rows" in md


@pytest.mark.parametrize(
    "content, match",
    [
        ("title = 'x'", "must name an experiment"),
        ("experiment = 'no_such_thing'", "unknown experiment 'no_such_thing'"),
        ("experiment = 'x'\nfoo = 1", r"unknown key\(s\) \['foo'\]"),
        ("experiment = [1", "not valid TOML"),
    ],
)
def test_load_pipeline_errors(tmp_path, content, match):
    f = tmp_path / "p.toml"
    f.write_text(content)
    with pytest.raises(ValueError, match=match):
        load_pipeline(f)


def test_cli_errors_are_reported(tmp_path, capsys):
    assert main(["run", str(tmp_path / "missing.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main([]) == 0
    assert "demo" in capsys.readouterr().out


def test_run_pipeline_file_with_override(tmp_path, capsys):
    from pathlib import Path

    pipeline = Path(__file__).resolve().parents[2] / "pipelines" / "census_erasure.toml"
    rc = main(["run", str(pipeline), "--quick", "--output", str(tmp_path / "c"),
               "--set", "random_state=1"])
    assert rc == 0
    assert (tmp_path / "c" / "report.md").read_text().startswith("# ")
    assert main(["run", str(pipeline), "--set", "no_such_param=1", "--output", str(tmp_path / "d")]) == 2
    assert "no_such_param" in capsys.readouterr().err
