"""Hostile inputs, round 21 (input and output): rating scales beyond the ratings' bound, parameters changed after
fit written to a file, output paths with '..', schema bounds the run enforces, numbers written as text in an array,
bytes paths, a member added to a saved file, timestamps beyond float64, response noise beyond what is measured."""

import math
import os
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import privrelease
from privrelease.mappers import ErasureMapper, QuantizedPrivacyMapper
from shared_helpers import run_cli

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _ratings():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, (200, 8)).astype(float)
    return X, (X[:, 0] > 2).astype(int)


def _quantized(**params):
    X, y = _ratings()
    return QuantizedPrivacyMapper(n_clusters=4, space="raw", random_state=0, **params).fit(X, y), X


def _table():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, 300)
    X = pd.DataFrame({"zip": np.where(rng.random(300) < 0.8, a, 1 - a), "age": rng.integers(0, 3, 300)})
    return X, a


def _quiet_load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return privrelease.load(path, **kw)


# ----------------------------------------------------------------------------- 4: rating scales beyond 1e100
def test_a_rating_scale_beyond_the_ratings_bound_is_refused_where_it_enters():
    from privrelease.recommender import SurpriseRecommender
    from privrelease.utils import check_rating_scale

    # the bound itself is a scale: squares of differences of 1e100 summed over 1e8 ratings stay finite (1e208)
    assert check_rating_scale((1, 1e100)) == (1.0, 1e100)
    assert math.isfinite(1e8 * (1e100 - 1.0) ** 2)
    for scale in [(1, 1e300), (-1e101, -1)]:
        with pytest.raises(ValueError, match=r"rating_scale = .*expected bounds of at most 1e\+100 in magnitude"):
            check_rating_scale(scale)
    X = sp.random(40, 12, density=0.5, random_state=0, format="csr")
    X.data = np.ceil(X.data * 5)
    # predictions of 3.7e297 on 1-5 data: refused before fitting
    with pytest.raises(ValueError, match=r"rating_scale = \(1, 1e\+300\): expected bounds of at most 1e\+100"):
        SurpriseRecommender(rating_scale=(1, 1e300)).fit(X)


def test_rmse_cost_refuses_a_rating_range_beyond_the_bound_before_any_fold():
    from privrelease.evaluation import rmse_cost

    X, y = _ratings()
    with pytest.raises(ValueError, match=r"rating_range = \(1, 1e\+300\): expected bounds of at most 1e\+100"):
        rmse_cost(QuantizedPrivacyMapper(n_clusters=4, random_state=0), X, y, cv=2, rating_range=(1, 1e300),
                  random_state=0, verbose=0)


def test_the_ratings_file_experiment_checks_the_given_scale_itself():
    from privrelease.runner import PipelineError, check_run
    from privrelease.runner.experiments.ratings_file import _scale

    R = sp.csr_matrix(np.array([[1.0, 5.0], [3.0, 0.0]]))
    with pytest.raises(PipelineError, match=r"rating_range = \(1\.0, 1e\+300\): expected bounds of at most 1e\+100"):
        _scale(R, [1.0, 1e300])
    assert _scale(R, [1.0, 5.0]) == (1.0, 5.0)
    # the schema states the bound and refuses before anything runs (exit 2), not a report of "RMSE inf (+nan%)"
    with pytest.raises(PipelineError, match=r"parameter rating_range\[1\] = 1e\+300: expected a finite number in "
                                            r"\[-1e\+100, 1e\+100\]"):
        check_run("ratings_file", {"rating_range": [1, 1e300]})


# ----------------------------------------------------------------------------- 6: parameters changed after fit
@pytest.mark.parametrize("param, value, fitted", [
    ("prior", "model", "'counts'"), ("smoothing", 1e6, "1.0"), ("n_clusters", 7, "4"),
    ("release", "representative", "'profile'"), ("class_bins", 3, "1"), ("protect", "marginal", "'joint'"),
])
def test_save_refuses_a_parameter_changed_since_fit(tmp_path, param, value, fitted):
    m, X = _quantized(max_leakage=0.05)
    m.set_params(**{param: value})
    path = tmp_path / "m.npz"
    with pytest.raises(ValueError, match=rf"{param}={value!r} is not the value this QuantizedPrivacyMapper was "
                                         rf"fitted with \({param}={fitted}\).*call fit again"):
        m.save(path)
    assert not path.exists()
    m.set_params(**{param: m.fit_params_[param]})  # set back: saved, and the file states the fit's values
    loaded = _quiet_load(m.save(path))
    assert loaded.get_params() == m.get_params()
    np.testing.assert_array_equal(loaded.mapping_, m.mapping_)
    assert loaded.leakage_ == m.leakage_


def test_a_file_states_the_fitted_parameters_random_state_excepted(tmp_path):
    # the seed is read when releasing: the message of an integer seed asks for random_state=None before saving
    m, X = _quantized(max_leakage=0.05)
    m.set_params(random_state=None)
    loaded = _quiet_load(m.save(tmp_path / "m.npz"))
    assert loaded.random_state is None and loaded.fit_params_ == m.fit_params_
    assert loaded.fit_params_["smoothing"] == 1.0 and "random_state" not in loaded.fit_params_


def test_erasure_mapper_save_refuses_protect_changed_since_fit(tmp_path):
    X, a = _table()
    m = ErasureMapper(random_state=0).fit(X, a)
    m.set_params(protect="marginal")  # a 1-D y: releases as fitted, but a file would state another protect
    m.transform(X)
    with pytest.raises(ValueError, match=r"protect='marginal' is not the value this ErasureMapper was fitted with "
                                         r"\(protect='joint'\)"):
        m.save(tmp_path / "e.npz")


# ----------------------------------------------------------------------------- 7: '..' in the output folder
def test_an_output_path_with_dot_dot_creates_nothing_outside_the_folder_it_names(tmp_path, monkeypatch):
    from privrelease.runner._report import prepare_output_folder

    monkeypatch.chdir(tmp_path)
    out = prepare_output_folder("ofs/hl5/../hl4/sib/../../hl5/y/..")
    assert out == Path("ofs/hl5")
    made = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert made == ["ofs", os.path.join("ofs", "hl5")]


def test_dot_dot_after_a_symbolic_link_is_refused_before_anything_is_created(tmp_path, monkeypatch):
    from privrelease.runner import PipelineError
    from privrelease.runner._report import prepare_output_folder

    monkeypatch.chdir(tmp_path)
    (tmp_path / "target" / "deep").mkdir(parents=True)
    os.symlink(tmp_path / "target" / "deep", tmp_path / "link")
    # through the link, '..' is target/, not tmp_path: the text alone would name another folder
    with pytest.raises(PipelineError, match=r"goes up \('\.\.'\) out of the symbolic link 'link'"):
        prepare_output_folder("new/../link/../x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "target"]


# ----------------------------------------------------------------------------- 8 and 19: schema bounds of the run
def test_contract_design_refuses_subnormal_valuations_before_running(tmp_path, capsys):
    from privrelease.runner import PipelineError, check_run

    for params in ({"valuations": [5e-324, 10.0]}, {"v_low": 1e-310}, {"v_high": 5e-324, "v_low": 4e-324}):
        with pytest.raises(PipelineError, match=r"expected a finite number >= 2\.2250738585072014e-308"):
            check_run("contract_design", params)
    out = tmp_path / "out"
    rc, _, err = run_cli(["run", str(PIPELINES / "contract_design.toml"), "--quick", "--set",
                          "valuations=[5e-324, 10.0]", "-o", str(out)], capsys)
    assert rc == 2 and "valuations" in err and not out.exists()


def test_every_stated_lower_bound_of_contract_design_runs():
    # `list` said "k_min >= 4.45015e-308" while the run refused anything below 3.9699e-06: the smallest value the
    # schema accepts now passes every check of the run, and the bound as printed reads back as itself
    from privrelease.contracts import design_contract, design_menu
    from privrelease.runner import check_run
    from privrelease.utils._validation import format_bound as _num
    from privrelease.runner.experiments.contract_design import PARAMETERS

    k_min = PARAMETERS["k_min"].low
    assert float(_num(k_min)) == k_min
    _, params, _ = check_run("contract_design", {"k_min": k_min, "valuations": [1.0]})
    c = design_contract([1.0], k_min, cost="exponential")
    assert math.isfinite(c.total_payment) and math.isfinite(c.unbiased_payment)
    v = PARAMETERS["v_low"].low
    assert float(_num(v)) == v == np.finfo(np.float64).tiny
    check_run("contract_design", {"v_low": v, "valuations": [v, 1.0]})
    assert math.isfinite(design_menu(v, 5.0, 0.5, 0.5).expected_payment)


def test_mapper_smoothing_is_capped_in_the_schema(tmp_path, capsys):
    from privrelease.runner import PipelineError, check_run

    with pytest.raises(PipelineError, match=r"parameter mapper\.smoothing = 1e\+308: expected a finite number in "
                                            r"\[0, 1000000000\]; the cap 1000000000 is there because smoothing "
                                            "counts pseudo-users"):
        check_run("synthetic_ratings", {"mapper": {"smoothing": 1e308}})
    assert check_run("synthetic_ratings", {"mapper": {"smoothing": 1e9}})[1]["mapper"] == {"smoothing": 1e9}
    rc, out, _ = run_cli(["list", "ratings_file"], capsys)
    assert rc == 0 and "smoothing: a finite number in [0, 1000000000]" in out
    rc, _, err = run_cli(["run", str(PIPELINES / "ratings_file.toml"), "--quick", "--set",
                          "mapper={smoothing=1e308}", "-o", str(tmp_path / "o")], capsys)
    assert rc == 2 and "mapper.smoothing = 1e+308" in err and not (tmp_path / "o").exists()


def test_truthful_regression_caps_noise_std_where_responses_stop_escaping_the_clip():
    from privrelease.runner import PipelineError, check_run
    from privrelease.runner.experiments.truthful_regression import MAX_NOISE_STD

    with pytest.raises(PipelineError, match=r"parameter noise_std = 1e\+308: expected a finite number in \[0, 100\]"):
        check_run("truthful_regression", {"noise_std": 1e308})
    check_run("truthful_regression", {"noise_std": MAX_NOISE_STD})
    # the stated share of responses inside (-1, 1): the noise falls in an interval of width 2 around -theta^T x
    rng = np.random.default_rng(0)
    t = rng.uniform(-0.6, 0.6, 2_000_000)
    inside = np.mean(np.abs(t + MAX_NOISE_STD * rng.normal(size=t.size)) < 1)
    assert inside == pytest.approx(0.8 / MAX_NOISE_STD, rel=0.05)


# ----------------------------------------------------------------------------- 14: numbers written as text
def test_numbers_as_text_are_one_rule_for_an_array_and_a_dataframe():
    m, X = _quantized(max_leakage=0.2)
    released = m.transform(X)
    # an integer seed replays the same draws: the text is read as the numbers it writes
    np.testing.assert_array_equal(m.transform(X.astype(str)), released)
    np.testing.assert_array_equal(np.asarray(m.transform(pd.DataFrame(X).astype(str))), released)
    np.testing.assert_array_equal(m.transform(X.astype(str).astype("S")), released)
    bad = X.astype(str)
    bad[3, 4] = "x"
    for Xb in (bad, pd.DataFrame(bad)):
        with pytest.raises(TypeError, match=r"X column 4 holds 'x' \(row 3\), not a rating: expected numbers"):
            m.transform(Xb)


def test_blurme_reads_numbers_as_text_in_an_array_as_in_a_dataframe():
    from privrelease.evaluation import BlurMe

    X, y = _ratings()
    a = BlurMe(random_state=0).fit(X.astype(str), y).transform(X.astype(str))
    b = BlurMe(random_state=0).fit(X, y).transform(X)
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- 15 and 16: persistence
def test_a_bytes_path_is_refused_with_the_expected_type(tmp_path):
    m, _ = _quantized()
    path = os.fsencode(tmp_path / "m.npz")
    with pytest.raises(TypeError, match=r"cannot save to b'.*m\.npz': path must be a str or path-like"):
        m.save(path)
    assert not os.listdir(tmp_path)
    with pytest.raises(TypeError, match=r"cannot load b'.*m\.npz': path must be a str or path-like"):
        privrelease.load(path)


def test_a_member_added_to_a_saved_file_is_named(tmp_path):
    m, _ = _quantized()
    path = m.save(tmp_path / "m.npz")
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("evil.npy", b"junk")
    with pytest.raises(ValueError, match=r"member 'evil\.npy' is not one the file's metadata describes"):
        privrelease.load(path)


# ----------------------------------------------------------------------------- 18: timestamps beyond float64
@pytest.mark.parametrize("stamp, why", [("1e400", "overflows float64"), ("-inf", "is infinite"),
                                        ("soon", "is not a number")])
def test_a_timestamp_beyond_float64_is_said_to_overflow(tmp_path, stamp, why):
    from privrelease.datasets import load_ratings_csv

    f = tmp_path / "r.csv"
    f.write_text(f"user,item,rating,ts\n1,1,4,100\n1,2,5,{stamp}\n2,1,3,7\n")
    with pytest.raises(ValueError, match=rf"line 3, column 'ts': timestamp '{re.escape(stamp)}' {why}"):
        load_ratings_csv(f, timestamp_col="ts")
