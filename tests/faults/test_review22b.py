"""Findings of the reviews of stop 45's worker-warning, command-line, report-name, state and format changes, each
fixed by the lead; each test failed on the code before its fix."""
import signal
import warnings

import numpy as np
import pandas as pd
import pytest

from privrelease.utils._jobs import run_jobs


def test_a_custom_warning_category_comes_back_as_itself():
    class LocalWarning(UserWarning):
        """Defined in a function (as in a script's __main__): loky sends it by value, plain pickle cannot."""

    def warn_custom(i):
        warnings.warn(f"custom {i}", LocalWarning)
        return i

    with pytest.warns(LocalWarning) as caught:  # (every one matched: none is re-issued to the test session)
        assert list(run_jobs([(warn_custom, (i,)) for i in range(2)], 2)) == [0, 1]
    assert [(w.category, str(w.message)) for w in caught] == [(LocalWarning, "custom 0"), (LocalWarning, "custom 1")]


def test_the_warnings_of_the_calls_before_a_failing_one_all_come_back_in_order():
    def _warn_then_fail(i):  # local: sent by value (a test module is not importable in every worker)
        warnings.warn(f"before {i}")
        if i == 1:
            raise ValueError("job 1 failed")
        return i

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="job 1 failed") as info:
            list(run_jobs([(_warn_then_fail, (i,)) for i in range(3)], 2))
    assert [str(w.message) for w in caught][:2] == ["before 0", "before 1"]
    assert "job 1 failed" in str(info.value.__cause__)  # the worker's traceback, as its cause


def _record_n_jobs(monkeypatch):
    """The n_jobs each joblib.Parallel is built with, from here on."""
    import joblib

    asked = []

    class Recording(joblib.Parallel):
        def __init__(self, n_jobs=None, **kw):
            asked.append(n_jobs)
            super().__init__(n_jobs=n_jobs, **kw)

    monkeypatch.setattr(joblib, "Parallel", Recording)
    return asked


def test_no_more_workers_than_calls(monkeypatch):
    asked = _record_n_jobs(monkeypatch)
    assert list(run_jobs([(abs, (-i,)) for i in range(2)], 16)) == [0, 1]
    assert asked == [2]  # loky starts every worker asked for, whatever the number of tasks


def test_the_multiprocessing_backend_runs_the_curve():
    from joblib import parallel_backend

    from privrelease.mapping import privacy_distortion_curve

    P, D = np.array([[.3, .2], [.1, .4]]), np.array([[0., 1.], [1., 0.]])
    with parallel_backend("multiprocessing", n_jobs=2):
        got = privacy_distortion_curve(P, D, [.05, .1, .2], n_jobs=2)
    ref = privacy_distortion_curve(P, D, [.05, .1, .2], n_jobs=1)
    assert np.allclose(np.asarray(got["leakage_bits"]), np.asarray(ref["leakage_bits"]), atol=1e-9)


def test_sigterm_before_the_run_starts_exits_143_without_a_traceback(monkeypatch, capsys):
    from privrelease import cli

    def stopped():
        raise cli.Terminated("terminated by signal 15 (SIGTERM)")

    monkeypatch.setattr(cli, "build_parser", stopped)
    assert cli.main(["list"]) == 143
    err = capsys.readouterr().err
    assert err.strip() == "privrelease: error: terminated (SIGTERM)"


def test_an_ignored_sigterm_stays_ignored(monkeypatch):
    from privrelease import cli

    seen = []
    monkeypatch.setattr(cli, "_main", lambda argv: seen.append(signal.getsignal(signal.SIGTERM)) or 0)
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        assert cli.main(["list"]) == 0
        assert seen == [signal.SIG_IGN] and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, old)


@pytest.mark.parametrize("ch", ["\u200b", "\u2060", "\u00ad", "\u180e", "\ue000"])
def test_a_report_file_name_with_an_invisible_format_character_is_refused(tmp_path, ch):
    from privrelease.runner._report import Report

    with pytest.raises(ValueError, match=r"control or invisible character .*U\+"):
        Report(tmp_path / "out").csv(pd.DataFrame({"a": [1]}), f"a{ch}b.csv")
    assert not (tmp_path / "out").exists()


def test_a_user_filtered_out_of_a_released_frame_does_not_come_back():
    from privrelease.recommender import RatingsFrame

    long = pd.DataFrame({"user": ["u1", "u1", "u2", "u3", "u4"], "item": ["a", "b", "a", "b", "c"],
                         "rating": [4.0, 3.0, 5.0, 2.0, 1.0]})
    rf = RatingsFrame().fit(long)
    out = rf.from_matrix(rf.to_matrix(long))
    assert list(RatingsFrame().fit(out).user_ids_) == ["u1", "u2", "u3", "u4"]  # as written: every id
    kept = out[out["user"] != "u3"]
    assert list(RatingsFrame().fit(kept).user_ids_) == ["u1", "u2", "u4"]
    assert RatingsFrame().fit(kept).to_matrix(kept).shape == (3, 3)


def test_a_count_matrix_with_one_light_column_is_read_as_a_matrix():
    from privrelease.mappers import QuantizedPrivacyMapper

    rng = np.random.default_rng(0)
    X = np.c_[rng.poisson(600, (100, 4)), rng.poisson(30, 100)].astype(float)
    y = rng.integers(0, 2, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # it may be warned as long form; never refused
        out = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X, y).transform(X)
    assert np.shape(out) == X.shape


def test_an_error_that_cannot_be_sent_back_keeps_its_message():
    import threading

    def fail(_):
        class Locked(Exception):
            pass

        exc = Locked("holds a lock")
        exc.lock = threading.Lock()
        raise exc

    with pytest.raises(RuntimeError, match="Locked: holds a lock .*not picklable") as info:
        list(run_jobs([(fail, (i,)) for i in range(2)], 2))
    assert "holds a lock" in str(info.value.__cause__)


def test_every_core_for_one_call_runs_one_worker(monkeypatch):
    asked = _record_n_jobs(monkeypatch)
    assert list(run_jobs([(abs, (-3,))], -1)) == [3]
    assert asked == [1]


@pytest.mark.parametrize("name, ok", [("f\U0001F468\u200d\U0001F469.csv", True), ("\u0645\u06cc\u200c\u062e.csv", True),
                                      ("\U0001F3F4\U000E0067\U000E0062\U000E007F.csv", True), ("a\u3164b.csv", False),
                                      ("a\u2800b.csv", False)])
def test_joiners_and_flag_tags_are_part_of_a_name_blank_fillers_are_not(tmp_path, name, ok):
    from privrelease.runner._report import check_file_name

    if ok:
        check_file_name(name, tmp_path)
    else:
        with pytest.raises(ValueError, match="control or invisible character"):
            check_file_name(name, tmp_path)


def test_a_distortion_lower_bound_above_the_distortion_is_refused():
    import dataclasses

    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    X, y, _ = make_ratings(200, 20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = QuantizedPrivacyMapper(n_clusters=10, max_leakage=0.05, random_state=0).fit(X, y)
    res = m.solver_result_
    assert res.certificate["distortion_lower_bound"] <= res.distortion
    m.solver_result_ = dataclasses.replace(res, certificate={**res.certificate,
                                                             "distortion_lower_bound": res.distortion * 1.01})
    with pytest.raises(ValueError, match=r"distortion_lower_bound.*does not hold"):
        m._check_fitted_state()
