"""Hostile inputs, round 20: parameters changed after fit, files of another byte order, paths swapped for FIFOs,
integers beyond float64 as privacy budgets, the CLI's success line."""

import math
import os
import sys
import threading
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

import privrelease
from privrelease import _persistence
from privrelease.mapping import leakage as engine_leakage
from privrelease.mappers import ErasureMapper, QuantizedPrivacyMapper


def _ratings():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, (200, 8)).astype(float)
    return X, (X[:, 0] > 2).astype(int)


def _table():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, 300)
    X = pd.DataFrame({"zip": np.where(rng.random(300) < 0.8, a, 1 - a), "age": rng.integers(0, 3, 300)})
    return X, a


def _quantized(**params):
    X, y = _ratings()
    return QuantizedPrivacyMapper(n_clusters=4, space="raw", random_state=0, **params).fit(X, y), X


def _erasure(**params):
    X, a = _table()
    return ErasureMapper(random_state=0, **params).fit(X, a), X


def _same(a, b):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    else:
        np.testing.assert_array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))


# ----------------------------------------------------------------------------- F3: the guarantee's parameters
@pytest.mark.parametrize("make", [_quantized, _erasure])
@pytest.mark.parametrize("changed", [
    {"leakage": "maximal_leakage", "max_leakage": 0.05},   # the hunt's case: MI 0.09 shown, 0.38 bits maximal
    {"max_leakage": 0.05},                                   # a tighter cap the mapping was never solved for
    {"leakage": "maximal_leakage"},                          # leakage_ stated in another measure
    {"max_leakage": None, "delta": 1.0},                     # another budget altogether
])
def test_transform_refuses_a_guarantee_changed_after_fit(make, changed):
    m, X = make(max_leakage=0.2)
    fitted_leakage = m.leakage_
    m.set_params(**changed)
    name = sorted(changed)[0] if "leakage" not in changed else "leakage"
    with pytest.raises(ValueError, match=rf"{name}=.* is not the value this \w+ was fitted with .*call fit again"):
        m.transform(X)
    # nothing was released, and the state still describes the fitted mapping (its guarantee is what save refuses)
    assert m.leakage_ == fitted_leakage
    with pytest.raises(ValueError, match="call fit again"):
        m.save(os.devnull)


def test_the_hunts_cap_is_a_false_guarantee_on_this_mapping():
    # what transform would have claimed: a cap of 0.05 bits of maximal leakage on a mapping leaking far more
    m, X = _quantized(max_leakage=0.2)
    assert engine_leakage(m.prior_, m.mapping_, kind="maximal_leakage") > 0.05
    m.set_params(leakage="maximal_leakage", max_leakage=0.05)
    with pytest.raises(ValueError, match=r"leakage='maximal_leakage' is not the value .* \(leakage='mutual_info"):
        m.transform(X)


@pytest.mark.parametrize("make", [_quantized, _erasure])
def test_the_same_values_written_otherwise_release_as_fitted(make):
    m, X = make(max_leakage=0.2)
    before = m.transform(X)
    m.set_params(max_leakage=np.float64(0.2), random_state=0)   # the fitted cap, as a numpy scalar
    _same(m.transform(X), before)
    m.set_params(max_leakage=0.3)
    with pytest.raises(ValueError, match=r"max_leakage=0\.3 is not the value .* \(max_leakage=0\.2\)"):
        m.transform(X)
    m.set_params(max_leakage=0.2)   # put back: releases again, the same seeded draws
    _same(m.transform(X), before)
    m.set_params(protect="marginal", random_state=0)   # a 1-D y: one attribute, protect changes nothing
    _same(m.transform(X), before)


@pytest.mark.parametrize("make", [_quantized, _erasure])
def test_protect_changed_after_a_fit_on_several_attributes_is_refused(make):
    X, _ = _ratings() if make is _quantized else _table()
    y0 = (np.asarray(X)[:, 0] > (2 if make is _quantized else 0)).astype(int)
    Y = np.c_[y0, np.random.default_rng(3).integers(0, 2, len(y0))]
    cls = QuantizedPrivacyMapper(n_clusters=4, space="raw", random_state=0) if make is _quantized \
        else ErasureMapper(random_state=0)
    m = cls.fit(X, Y)
    assert m.guarantee_params_["protect"] == "joint"
    m.transform(X)
    m.set_params(protect="marginal")
    with pytest.raises(ValueError, match=r"protect='marginal' is not the value .* \(protect='joint'\)"):
        m.transform(X)


def test_a_dask_release_is_refused_before_the_graph_is_built():
    da = pytest.importorskip("dask.array")
    m, X = _quantized(max_leakage=0.2)
    m.set_params(max_leakage=0.01)
    with pytest.raises(ValueError, match=r"max_leakage=0\.01 is not the value"):
        m.transform(da.from_array(X, chunks=(50, X.shape[1])))


@pytest.mark.parametrize("make", [_quantized, _erasure])
def test_the_fitted_guarantee_round_trips_and_files_keep_their_format(make, tmp_path):
    m, X = make(max_leakage=0.2)
    before = m.transform(X)
    path = m.save(tmp_path / "m.npz")
    # the record is not written: a file's parameters are the fit's (save refuses others), so files stay readable by
    # the versions before the record
    meta, _ = _persistence._read(path)
    assert "guarantee_params_" not in meta["fitted"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = privrelease.load(path)
    assert loaded.guarantee_params_ == {"leakage": "mutual_information", "delta": None, "max_leakage": 0.2}
    _same(loaded.transform(X), before)
    loaded.set_params(max_leakage=0.01)
    with pytest.raises(ValueError, match="call fit again"):
        loaded.transform(X)


@pytest.mark.parametrize("make", [_quantized, _erasure])
def test_a_mapper_unpickled_from_a_version_without_the_record(make):
    # pickled by a version that kept no record: its figures are checked against its parameters, as load checks a file
    m, X = make(max_leakage=0.2)
    before = m.transform(X)
    old = pickle.loads(pickle.dumps(m))
    del old.guarantee_params_
    _same(old.transform(X), before)
    assert old.guarantee_params_ == m.guarantee_params_
    stale = pickle.loads(pickle.dumps(m))
    del stale.guarantee_params_
    stale.set_params(max_leakage=0.01)  # a cap its figures do not meet
    with pytest.raises(ValueError, match="call fit again"):
        stale.transform(X)


# ----------------------------------------------------------------------------- F1: another byte order, other floats
def _rewritten(path, out, edit):
    meta, arrays = _persistence._read(path)
    edit(arrays)
    meta["arrays"] = {k: {"dtype": a.dtype.str, "shape": list(a.shape)} for k, a in sorted(arrays.items())}
    _persistence._write(out, meta, arrays)
    return out


def _big_endian(arrays):
    for k, a in arrays.items():
        if a.dtype.kind in "fiu" and a.dtype.itemsize > 1:
            arrays[k] = a.astype(a.dtype.newbyteorder(">"))


@pytest.mark.parametrize("make", [_quantized, _erasure])
def test_a_file_from_a_big_endian_host_loads_and_releases_the_same(make, tmp_path):
    m, X = make(max_leakage=0.2)
    before = m.transform(X)
    path = _rewritten(m.save(tmp_path / "m.npz"), tmp_path / "be.npz", _big_endian)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = privrelease.load(path)
    assert loaded.mapping_.dtype == np.float64 and loaded.mapping_.dtype.isnative
    np.testing.assert_array_equal(loaded.mapping_, m.mapping_)
    _same(loaded.transform(X), before)


@pytest.mark.parametrize("key, dtype, where", [
    ("fitted/mapping_", np.longdouble, r"fitted\.mapping_ must hold float64 values, as save writes it, got dtype "),
    ("fitted/prior_", np.float32, r"fitted\.prior_ must hold float64 values, as save writes it, got dtype float32"),
    ("fitted/release_profiles_/data", np.float16, r"fitted\.release_profiles_\.data: dtype float16"),
])
def test_a_float_array_in_a_dtype_save_never_writes_is_refused_by_name(key, dtype, where, tmp_path):
    m, X = _quantized(max_leakage=0.2)

    def edit(arrays):
        arrays[key] = arrays[key].astype(dtype)

    path = _rewritten(m.save(tmp_path / "m.npz"), tmp_path / "x.npz", edit)
    with pytest.raises(ValueError, match=where):
        privrelease.load(path)


# ----------------------------------------------------------------------------- F4: a path swapped for a FIFO
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_path_swapped_for_a_fifo_after_the_check_is_refused_not_waited_on(tmp_path, monkeypatch):
    m, _ = _quantized()
    path = str(m.save(tmp_path / "m.npz"))
    real_stat = os.stat

    def stat_then_swap(p, *args, **kwargs):
        st = real_stat(p, *args, **kwargs)
        if os.fspath(p) == path and sys._getframe(1).f_code.co_name == "_read":
            os.unlink(path)
            os.mkfifo(path)   # swapped between load's check and its open
        return st

    monkeypatch.setattr(os, "stat", stat_then_swap)
    outcome = {}

    def run():
        try:
            privrelease.load(path)
            outcome["result"] = "loaded"
        except Exception as exc:  # noqa: BLE001 - the outcome is inspected below
            outcome["result"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():   # blocked on the FIFO: release the reader, then fail
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(10)
        pytest.fail("load blocked on a FIFO swapped in after its regular-file check")
    assert isinstance(outcome["result"], ValueError)
    assert "not a regular file" in str(outcome["result"])


# ----------------------------------------------------------------------------- F5: an epsilon beyond float64
def test_truthful_regression_refuses_an_epsilon_beyond_float64_by_name():
    from privrelease.regression import TruthfulRegressionMechanism

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) / 4
    y = np.clip(X @ np.array([0.5, -0.2, 0.1]), -1, 1)
    with pytest.raises(ValueError, match=r"epsilon must be finite, got a number of 1101 bits, beyond the float64"):
        TruthfulRegressionMechanism(epsilon=2**1100, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"payment_scale must be finite, got a number of 1101 bits"):
        TruthfulRegressionMechanism(epsilon=1.0, payment_scale=2**1100, random_state=0).fit(X, y)


@pytest.mark.parametrize("make", [
    lambda eps: __import__("privrelease.noise", fromlist=["Laplace"]).Laplace(epsilon=eps, sensitivity=1.0),
    lambda eps: __import__("privrelease.noise", fromlist=["VectorLaplace"]).VectorLaplace(
        dimension=2, epsilon=eps, sensitivity=1.0),
    lambda eps: __import__("privrelease.accounting", fromlist=["PrivacyAccountant"]).PrivacyAccountant(eps),
])
def test_an_epsilon_beyond_float64_is_refused_not_made_infinite(make):
    # inf is no noise at all (Laplace) or an unlimited budget (the accountant): more than 2**1100 promises
    with pytest.raises(ValueError, match=r"epsilon must be finite, got a number of 1101 bits, beyond the float64"):
        make(2**1100)
    assert np.isinf(make(np.inf).epsilon)   # inf itself, written as such, keeps its meaning


# ----------------------------------------------------------------------------- F6: the accountant, the CLI
def test_a_positive_spend_that_rounds_to_zero_is_refused_and_minus_zero_is_zero():
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(0)
    with pytest.raises(ValueError, match=r"epsilon = .* is positive but rounds to 0 in float64"):
        acc.spend(np.longdouble("1e-4000"))
    assert len(acc) == 0 and acc.spent == 0.0
    acc = PrivacyAccountant(-0.0)
    assert math.copysign(1.0, acc.epsilon) == 1.0 and "epsilon=0.0" in repr(acc)
    acc.spend(-0.0)
    assert math.copysign(1.0, acc.spent) == 1.0


def test_the_cli_success_line_shows_the_report_path_quoted(tmp_path, monkeypatch, capsys):
    import privrelease.runner
    from privrelease.cli import main

    folder = tmp_path / "out\x1b[2Jx"

    def fake_run(pipeline, output, **kwargs):
        return str(output) + "/report.md", {}, 0.0

    monkeypatch.setattr(privrelease.runner, "run_pipeline", fake_run)
    assert main(["run", "p.toml", "-o", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2Jx" in out
