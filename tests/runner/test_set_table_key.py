"""``--set TABLE.KEY=VALUE``: one key of a table parameter, merged into the pipeline file's table; refused for a
parameter that is not a table, with the whole table, or twice; the merged table is validated like any other."""

from pathlib import Path

import pytest

from privrelease.cli import _parse_override, main
from privrelease.runner import PipelineError, load_pipeline, pipeline_params

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


@pytest.fixture
def ran(monkeypatch):
    """Replace every experiment's ``run`` by a recorder of the keyword arguments it is given."""
    import importlib

    from privrelease.runner import available_experiments

    seen = {}

    def record(report, **kwargs):
        seen.update(kwargs)
        return {"status": "ok"}

    for name in available_experiments():
        monkeypatch.setattr(importlib.import_module(f"privrelease.runner.experiments.{name}"), "run", record)
    return seen


def _pipeline(tmp_path, text):
    path = tmp_path / "p.toml"
    path.write_text(text)
    return str(path)


MAPPER_FILE = '''experiment = "movielens_gender"
[params]
cv = 2
[params.mapper]
prior = "model"
smoothing = 0.5
'''


def test_a_dotted_key_sets_one_key_and_keeps_the_files_others(tmp_path, ran):
    path = _pipeline(tmp_path, MAPPER_FILE)
    assert main(["run", path, "--set", "mapper.class_bins=heldout", "--set", "mapper.smoothing=2",
                 "-o", str(tmp_path / "out")]) == 0
    assert ran["mapper"] == {"prior": "model", "smoothing": 2, "class_bins": "heldout"}
    assert ran["cv"] == 2


def test_a_dotted_key_adds_the_table_the_file_does_not_have(tmp_path, ran):
    assert main(["run", str(PIPELINES / "movielens_joint.toml"), "--set", "mapper.class_bins=3",
                 "-o", str(tmp_path / "out")]) == 0
    assert ran["mapper"] == {"class_bins": 3}  # a TOML literal: the integer 3


def test_a_recommender_table_keeps_its_inner_table(tmp_path, ran):
    assert main(["run", str(PIPELINES / "synthetic_ratings.toml"),
                 "--set", "politics_recommender.algorithm=SVDpp",
                 "--set", "ratings_recommender.algo_params={reg_all = 0.2}", "-o", str(tmp_path / "out")]) == 0
    assert ran["politics_recommender"] == {"algorithm": "SVDpp", "algo_params": {"reg_all": 0.1}}
    assert ran["ratings_recommender"] == {"algorithm": "SVD", "algo_params": {"reg_all": 0.2}}


def test_pipeline_params_merges_after_the_quick_table(tmp_path):
    spec = load_pipeline(_pipeline(tmp_path, MAPPER_FILE + '[quick]\nmapper = {n_refine = 1}\n'))
    assert pipeline_params(spec, overrides={"mapper.prior": "counts"})["mapper"] == {"prior": "counts",
                                                                                     "smoothing": 0.5}
    assert pipeline_params(spec, quick=True, overrides={"mapper.prior": "counts"})["mapper"] == {
        "n_refine": 1, "prior": "counts"}
    assert spec["params"]["mapper"] == {"prior": "model", "smoothing": 0.5}  # the file's table is not modified


@pytest.mark.parametrize("sets, text", [
    (["random_state.x=1"], "parameter random_state is not a table (expected an integer seed"),
    (["cv.x=1"], "(its table parameters are mapper, recommender); use --set cv=..."),
    (["mapers.prior=model"], "experiment 'movielens_gender' has no parameter 'mapers'"),
    (["mapper={prior = \"counts\"}", "mapper.class_bins=1"], "--set mapper=... and --set mapper.class_bins=... "
                                                             "both set mapper"),
    (["mapper.class_bins=1", "mapper={prior = \"counts\"}"], "both set mapper"),
    (["mapper.class_bins=1", "mapper.class_bins=2"], "--set mapper.class_bins=... is given twice"),
    (["mapper.class_bins=0"], "parameter mapper.class_bins = 0: expected an int in the range [1, inf)"),
    (["mapper.class_bin=2"], "parameter mapper has an unknown key 'class_bin': expected keys among class_bins"),
    (["mapper.n_clusters=heldout"], "parameter mapper.n_clusters is set by the experiment itself: use the "
                                    "experiment parameter n_clusters"),
    (["recommender.algorithm=KNN"], "parameter recommender.algorithm = 'KNN': expected one of 'SVD'"),
    (["recommender.algo_params.reg_all=1"], "give the inner table inline: --set 'recommender.algo_params="
                                            "{reg_all = ...}'"),
    (["mapper..prior=1"], "KEY a parameter name or TABLE.KEY, got 'mapper..prior'"),
])
def test_refusals_before_anything_runs(tmp_path, capsys, ran, sets, text):
    args = ["run", _pipeline(tmp_path, MAPPER_FILE), "-o", str(tmp_path / "out")]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 2
    assert text in capsys.readouterr().err
    assert not ran and not (tmp_path / "out").exists()


def test_a_dotted_key_on_an_experiment_without_tables(tmp_path):
    spec = load_pipeline(PIPELINES / "iris_quantization.toml")
    with pytest.raises(PipelineError, match="it has no table parameter"):
        pipeline_params(spec, overrides={"mapper.prior": "model"})


def test_values_are_read_like_other_set_values():
    assert _parse_override("mapper.class_bins=heldout") == ("mapper.class_bins", "heldout")  # bare word
    assert _parse_override(" mapper.smoothing =0.5") == ("mapper.smoothing", 0.5)
    assert _parse_override('mapper.metric="hamming"') == ("mapper.metric", "hamming")
    assert _parse_override("mapper.space=") == ("mapper.space", "")
