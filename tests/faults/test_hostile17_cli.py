"""Round 17, the command line: '~' in paths, repeated --only, a --set value holding two TOML values, quick = true
meaning --quick, and a pipeline "file" that is a device.

Each test failed on the code before the fix (see the comments). Nothing here runs an experiment.
"""

import argparse
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from privrelease.cli import _parse_override, build_parser
from privrelease.runner import OutputFolderError, PipelineError, load_pipeline, pipeline_params
from privrelease.runner import prepare_output_folder

from shared_helpers import run_cli  # tests/shared_helpers.py

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
CENSUS = str(PIPELINES / "census_erasure.toml")
RATINGS_FILE = str(PIPELINES / "ratings_file.toml")


@pytest.fixture
def home_and_cwd(tmp_path, monkeypatch):
    """A fake home folder and a separate current folder: ``(home, cwd)``."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    return home, cwd


# ---------------------------------------------------------------- '~' in the output folder and the pipeline path
def test_output_folder_tilde_names_the_home_folder(home_and_cwd):
    # before: Path('~/rep') was taken literally: a folder named '~' was created in the current folder
    home, cwd = home_and_cwd
    out = prepare_output_folder("~/reports/rep")
    assert out == home / "reports" / "rep" and out.is_dir()
    assert not (cwd / "~").exists()


def test_output_equals_tilde_is_refused_as_the_home_folder(home_and_cwd, capsys):
    # '--output=~' is not expanded by the shell; before: the report was written into './~' (exit 0), although the
    # README promises '-o ~' is refused
    home, cwd = home_and_cwd
    rc, _, err = run_cli(["run", CENSUS, "--quick", "--output=~"], capsys)
    assert rc == 2, err
    assert "home folder" in err and "Traceback" not in err
    assert not (cwd / "~").exists()
    assert os.listdir(home) == [] or all(name.startswith(".") for name in os.listdir(home))


def test_pipeline_path_with_tilde_is_read(home_and_cwd):
    # before: "pipeline file '~/census.toml' does not exist", while the data file parameters expand '~'
    home, _ = home_and_cwd
    (home / "census.toml").write_text(Path(CENSUS).read_text(encoding="utf-8"), encoding="utf-8")
    spec = load_pipeline("~/census.toml")
    assert spec["experiment"] == "census_erasure"
    assert Path(spec["path"]) == home / "census.toml"


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null here")
def test_pipeline_file_that_is_a_device_is_not_called_missing(capsys):
    # before: "pipeline file '/dev/null' does not exist"
    rc, _, err = run_cli(["run", "/dev/null"], capsys)
    assert rc == 2, err
    assert "/dev/null" in err and "not a regular file" in err and "does not exist" not in err


# ---------------------------------------------------------------- repeated flags
def test_only_given_twice_keeps_both_lists():
    # before: argparse's default 'store' action kept the last --only: '--only a --only b' ran b alone, silently
    args = build_parser().parse_args(["demo", "--only", "census_erasure", "--only", "iris_quantization",
                                      "contract_design"])
    assert args.only == ["census_erasure", "iris_quantization", "contract_design"]


def test_only_unknown_name_in_a_second_flag_is_refused(tmp_path, capsys):
    # before: the first --only was dropped, so a typo there was never reported
    rc, _, err = run_cli(["demo", "--only", "census_erasur", "--only", "iris_quantization",
                          "-o", str(tmp_path / "d")], capsys)
    assert rc == 2 and "census_erasur" in err, err
    assert not (tmp_path / "d").exists()


# ---------------------------------------------------------------- --set KEY=VALUE with more than one value
@pytest.mark.parametrize("text, extra", [("cv=2\nn_jobs=3", "n_jobs"), ("cv=2\n[params]\nn_jobs=3", "params")])
def test_set_value_holding_a_second_toml_key_is_refused(text, extra):
    # before: ('cv', 2): the line after the value was read by TOML as another key and dropped without a word
    with pytest.raises(argparse.ArgumentTypeError, match=f"more than one TOML value.*{extra}"):
        _parse_override(text)


def test_set_value_holding_a_second_toml_key_is_a_usage_error(capsys):
    rc, _, err = run_cli(["run", CENSUS, "--set", "top=2\ntable_delta=0.5"], capsys)
    assert rc == 2 and "more than one TOML value" in err, err


def test_set_multiline_array_is_still_one_value():
    assert _parse_override("max_leakages=[0.0,\n 0.1]") == ("max_leakages", [0.0, 0.1])
    assert _parse_override("top=3  # a comment") == ("top", 3)


# ---------------------------------------------------------------- quick = true is --quick
def test_set_quick_true_applies_the_files_quick_table():
    # before: --set quick=true skipped the file's [quick] table: ratings_file.toml ran cv = 5, six leakage caps,
    # the forest attacker and two jobs, each "kept" by a note, while --quick runs cv = 2 and two caps
    spec = load_pipeline(RATINGS_FILE)
    flag = pipeline_params(spec, quick=True)
    by_set = pipeline_params(spec, overrides={"quick": True})
    assert by_set["cv"] == flag["cv"] == 2
    assert by_set["max_leakages"] == flag["max_leakages"] == [0.0, 0.02]
    assert by_set["attack_models"] == ["logistic"] and by_set["n_jobs"] == 1
    assert by_set == {**flag, "quick": True}
    # quick = false, or nothing said: the file's [params]
    plain = pipeline_params(spec, overrides={"quick": False})
    assert plain["cv"] == 5 and len(plain["max_leakages"]) == 6


def test_quick_true_in_the_files_params_applies_its_quick_table(tmp_path):
    text = Path(RATINGS_FILE).read_text(encoding="utf-8").replace("[params]\n", "[params]\nquick = true\n", 1)
    path = tmp_path / "quick_in_params.toml"
    path.write_text(text, encoding="utf-8")
    params = pipeline_params(load_pipeline(path))
    assert params["cv"] == 2 and params["max_leakages"] == [0.0, 0.02]
    # --set quick=false turns it off again
    params = pipeline_params(load_pipeline(path), overrides={"quick": False})
    assert params["cv"] == 5


def test_quick_flag_and_set_quick_false_are_refused(tmp_path, capsys):
    # before: --quick silently replaced the explicit quick = false
    with pytest.raises(PipelineError, match="--quick and --set quick=false"):
        pipeline_params(load_pipeline(CENSUS), quick=True, overrides={"quick": False})
    rc, _, err = run_cli(["run", CENSUS, "--quick", "--set", "quick=false", "-o", str(tmp_path / "out")], capsys)
    assert rc == 2 and "contradict" in err, err
    assert not (tmp_path / "out").exists()


def test_output_folder_errors_unchanged_for_plain_paths(tmp_path):
    # a path without '~' is used as given (relative stays relative to the current folder)
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputFolderError, match="is a file"):
        prepare_output_folder(tmp_path / "f")


# ---------------------------------------------------------------- the default report folder of an odd file name
@pytest.mark.parametrize("name, default", [("..toml", "reports"), ("...toml", "reports/..")])
def test_pipeline_name_without_a_report_folder_is_refused(tmp_path, monkeypatch, capsys, name, default):
    # before: '..toml' ran into reports/ itself (accepted as empty when it held only other reports' folders),
    # '...toml' into the current folder (refused only because it held files; with --overwrite written into it)
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(Path(CENSUS).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "reports" / "demo").mkdir(parents=True)
    rc, _, err = run_cli(["run", name, "--quick", "--overwrite"], capsys)
    assert rc == 2 and "gives no report folder" in err and "--output" in err, err
    assert sorted(os.listdir(tmp_path)) == sorted([name, "reports"])
    assert os.listdir(tmp_path / "reports") == ["demo"]
    assert not (tmp_path / default / "report.md").exists()


# ---------------------------------------------------------------- make demo
@pytest.mark.skipif(shutil.which("make") is None, reason="no make here")
def test_make_demo_passes_an_output_folder_with_spaces_as_one_argument():
    # before: 'make demo DEMO_OUT="my reports"' ran 'privrelease demo ... --output my reports': exit 2,
    # "unrecognized arguments: reports"
    root = Path(__file__).resolve().parents[2]
    text = subprocess.run(["make", "-n", "demo", "DEMO_OUT=my reports", "VENV=/nonexistent-venv"], cwd=root,
                          capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in text.splitlines() if "privrelease demo" in ln)
    argv = shlex.split(line)
    assert argv[argv.index("--output") + 1] == "my reports"


# ---------------------------------------------------------------- ratings_file: ids written '5' and '5.0'
def _ratings_files(tmp_path, spell):
    """80 users rating 15 of 40 items each, gender by user; ``spell(user)`` writes a user's id in the rating file."""
    rng = np.random.default_rng(0)
    g = rng.integers(0, 2, 80)
    rows = ["user,item,rating"]
    for u in range(80):
        for i in rng.choice(40, 15, replace=False):
            rows.append(f"{spell(u)},{i},{int(np.clip(round(3 + (1 if i % 2 == g[u] else -1) + rng.normal()), 1, 5))}")
    (tmp_path / "r.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "u.csv").write_text("user,gender\n" + "\n".join(f"{u},{'MF'[g[u]]}" for u in range(80)) + "\n")
    return str(tmp_path / "r.csv"), str(tmp_path / "u.csv")


def test_ratings_file_user_ids_written_as_floats_for_some_users_is_refused(tmp_path):
    # before: '5.0' made every id text, user '5.0' matched no users-file row '5': its 15 ratings were left out as
    # "not disclosed" without a word (79 users evaluated of 80, n_undisclosed_no_row = 1)
    from privrelease.runner.experiments import ratings_file

    path, users = _ratings_files(tmp_path, lambda u: f"{u}.0" if u == 5 else str(u))
    with pytest.raises(PipelineError, match=r"as floats \('0' and '5.0'\).*written one way"):
        ratings_file.read_data(path, users, attribute="gender")


def test_ratings_file_one_user_written_two_ways_is_refused(tmp_path):
    # before: '5' and '5.0' were two users (the second's ratings left out as "not disclosed")
    from privrelease.runner.experiments import ratings_file

    spelled = iter(range(10**6))
    path, users = _ratings_files(tmp_path, lambda u: f"{u}.0" if u == 5 and next(spelled) % 2 else str(u))
    with pytest.raises(PipelineError, match=r"'5' and '5.0', one id written two ways"):
        ratings_file.read_data(path, users, attribute="gender")


def test_ratings_file_ids_written_one_way_are_read_as_before(tmp_path):
    # every id an integer, every id a float ('7.0' in both files: text ids matched as text), or text
    from privrelease.runner.experiments import ratings_file

    for spell in (str, lambda u: f"{u}.0", lambda u: f"u{u}.0"):
        path, users = _ratings_files(tmp_path, spell)
        lines = (tmp_path / "u.csv").read_text().splitlines()[1:]
        (tmp_path / "u.csv").write_text("user,gender\n" + "\n".join(
            f"{spell(int(ln.split(',')[0]))},{ln.split(',')[1]}" for ln in lines) + "\n")
        R, a, info = ratings_file.read_data(path, users, attribute="gender")
        assert R.shape == (80, 40) and R.nnz == 1200 and info["n_disclosed"] == 80


# ---------------------------------------------------------------- privrelease list NAME
def test_list_shows_quick_values_as_set_takes_them(capsys):
    # before: Python's repr, "[--quick: ('logistic',)]", which --set reads as the text "('logistic',)"
    from privrelease.runner import available_experiments
    from privrelease.runner._pipeline import _experiment_module

    for name in available_experiments():
        quick = getattr(_experiment_module(name).run, "quick_values", {})
        rc, out, _ = run_cli(["list", name], capsys)
        assert rc == 0
        shown = {ln.split(":", 1)[0].strip(): ln.rsplit("[--quick: ", 1)[1][:-1]
                 for ln in out.splitlines() if "[--quick: " in ln}
        assert set(shown) == set(quick), name
        for key, text in shown.items():
            k, value = _parse_override(f"{key}={text}")
            assert value == (list(quick[key]) if isinstance(quick[key], tuple) else quick[key]), (name, key, text)
