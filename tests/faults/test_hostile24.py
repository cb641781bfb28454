"""The hostile hunt of stop 46 (code of stop 45): claims of a saved certificate, joblib's trip back from a worker,
errors of every kind in their turn, a report's repeated file names, a file without a parameter."""
import threading
import warnings

import numpy as np
import pytest

from privrelease import QuantizedPrivacyMapper, load
from privrelease._persistence import _read, _write
from privrelease.datasets import make_ratings
from privrelease.runner import Report
from privrelease.utils._jobs import run_jobs


@pytest.fixture(scope="module")
def capped():
    R, a, _ = make_ratings(300, 30, attribute_strength=2.0, random_state=0)
    return QuantizedPrivacyMapper(n_clusters=6, max_leakage=0.1, random_state=0).fit(R.tocsr(), a)


def _edit_certificate(mapper, path, **fields):
    mapper.save(path)
    meta, arrays = _read(path)
    cert = meta["fitted"]["solver_result_"]["items"]["certificate"]["items"]
    for name, value in fields.items():
        cert[name] = {"t": "float", "v": repr(value)} if isinstance(value, float) else {"t": "value", "v": value}
    _write(path, meta, arrays)
    return path


def test_certificate_records_the_tolerance_its_status_was_judged_by(capped):
    cert = capped.solver_result_.certificate
    # the target search's distortion claim: the gap is the distortion minus its lower bound, within the tolerance
    assert cert["distortion_gap"] == pytest.approx(capped.solver_result_.distortion - cert["distortion_lower_bound"],
                                                   abs=1e-15)
    assert 0.0 <= cert["distortion_gap"] <= cert["distortion_tolerance"]


def test_untouched_certificate_loads(capped, tmp_path):
    back = load(_edit_certificate(capped, tmp_path / "m.npz"))
    assert back.solver_result_.certificate == capped.solver_result_.certificate


@pytest.mark.parametrize("gap", [1.0, 0.0, 1e-3])
def test_distortion_gap_other_than_distortion_minus_its_bound_is_refused(capped, tmp_path, gap):
    # 1.0 (no tolerance in the file) loaded as "optimal"; 0.0 claims an exactness the lower bound does not give
    cert = capped.solver_result_.certificate
    path = _edit_certificate(capped, tmp_path / "m.npz", distortion_gap=gap)
    with pytest.raises(ValueError, match=r"certificate\['distortion_gap'\] = .* does not hold: the distortion "
                                         r".* minus its stated lower bound"):
        load(path)
    assert abs(gap - cert["distortion_gap"]) > 1e-9


def test_distortion_tolerance_must_be_a_number(capped, tmp_path):
    path = _edit_certificate(capped, tmp_path / "m.npz", distortion_tolerance="x")
    with pytest.raises(ValueError, match=r"certificate\['distortion_tolerance'\] = 'x' is not a bound"):
        load(path)


def test_optimal_status_beyond_the_recorded_tolerance_is_refused(capped, tmp_path):
    gap = capped.solver_result_.certificate["distortion_gap"]
    path = _edit_certificate(capped, tmp_path / "m.npz", distortion_tolerance=gap / 2)
    with pytest.raises(ValueError, match=r"status = 'optimal' does not hold: .*distortion_gap"):
        load(path)


def test_missing_parameter_is_said_with_the_default_it_takes(capped, tmp_path):
    path = tmp_path / "m.npz"
    capped.save(path)
    meta, arrays = _read(path)
    del meta["params"]["n_clusters"]
    _write(path, meta, arrays)
    with pytest.warns(UserWarning, match=r"does not record the parameter\(s\) n_clusters .* n_clusters='auto'"):
        back = load(path)
    assert back.n_clusters == "auto"


# ------------------------------------------------------------------------------------------------ run_jobs
def _jobs():
    """The jobs, defined here so that cloudpickle sends them by value (a test module's functions, sent by reference,
    are not importable in a worker under pytest-xdist)."""
    def warns_then_returns(i):
        warnings.warn(f"job {i} warned", UserWarning)
        return i

    def returns_a_lock(i):
        return threading.Lock()

    def interrupted(i):
        raise KeyboardInterrupt(f"job {i}")

    def exits(i):
        raise SystemExit(f"job {i}")

    return warns_then_returns, returns_a_lock, {KeyboardInterrupt: interrupted, SystemExit: exits}


@pytest.mark.parametrize("backend", ["loky", "multiprocessing"])
def test_a_value_that_cannot_come_back_is_named(backend):
    warns_then_returns, returns_a_lock, _ = _jobs()
    calls = [(warns_then_returns, (0,)), (returns_a_lock, (1,))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=r"or its value back to this one .*arguments and value must be"):
            list(run_jobs(calls, 2, backend=backend))


def test_an_argument_that_cannot_reach_a_worker_is_named():
    warns_then_returns, _, _ = _jobs()
    with pytest.raises(RuntimeError, match=r"could not be sent to a worker process.*arguments and value must be"):
        list(run_jobs([(warns_then_returns, (threading.Lock(),)), (warns_then_returns, (1,))], 2))


@pytest.mark.parametrize("n_jobs, backend", [(1, None), (2, "threading"), (4, None)])
def test_a_calls_own_type_error_in_this_process_is_raised_as_it_is(n_jobs, backend):
    # review: in this process (n_jobs=1, one call, threads) a call's TypeError (sklearn's InvalidParameterError
    # among them) was reported as a value that could not be pickled
    def bad(i):
        try:
            {}["missing"]
        except KeyError:
            raise TypeError(f"call {i}: its own TypeError")

    calls = [(bad, (0,))] if n_jobs == 4 else [(bad, (0,)), (bad, (1,))]
    with pytest.raises(TypeError, match=r"^call [01]: its own TypeError$") as err:  # threads: either comes first
        list(run_jobs(calls, n_jobs, **({"backend": backend} if backend else {})))
    # as raised: its own context (the KeyError it was raised in), not the wrapper joblib carried it in
    assert err.value.__cause__ is None and isinstance(err.value.__context__, KeyError)


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
def test_base_exceptions_come_in_their_turn(error):
    warns_then_returns, _, raisers = _jobs()
    calls = [(warns_then_returns, (0,)), (raisers[error], (1,))]
    got = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(error):
            for v in run_jobs(calls, 2):
                got.append(v)
    # the call before it: its value and its warning first, as with n_jobs=1
    assert got == [0]
    assert any("job 0 warned" in str(w.message) for w in caught)


# ------------------------------------------------------------------------------------------------ report
def test_report_shows_what_a_file_written_again_holds(tmp_path):
    # a table written again under its name replaced t.csv while report.md showed both tables as t.csv
    import pandas as pd

    rep = Report(tmp_path / "out")
    rep.table(pd.DataFrame({"x": [1]}), "t", caption="first")
    rep.table(pd.DataFrame({"x": [5]}), "kept", caption="kept")
    with pytest.warns(UserWarning, match=r"already had a file named 't\.csv': replaced by the new one"):
        rep.table(pd.DataFrame({"x": [2]}), "t", caption="second")
    rep.save()
    assert pd.read_csv(tmp_path / "out" / "t.csv")["x"].tolist() == [2]
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.count("(`t.csv`)") == 1 and "second" in md and "first" not in md and "kept" in md


# ------------------------------------------------------------------------------------------------ attrs ids
@pytest.mark.parametrize("users, message", [
    (["a", "a", "b"], r"user_ids holds the id 'a' more than once"),
    (["a", np.nan, "b"], r"user_ids holds a missing id \(position 1\)"),
    (["a", "b", "c\x00"], r"user_ids holds the id 'c\\x00' \(position 2, without a rating\) with"),
])
def test_edited_ids_of_a_release_are_refused_like_ids_in_rows(users, message):
    import pandas as pd

    from privrelease.recommender import RatingsFrame
    from privrelease.recommender._formats import RatingIds

    frame = pd.DataFrame({"user": ["a", "b"], "item": [1, 2], "rating": [4.0, 3.0]})
    frame.attrs["ids"] = RatingIds(users, [1, 2], rated_users=[True, True, False][:len(users)])
    with pytest.raises(ValueError, match=message):
        RatingsFrame().fit(frame)
    with pytest.raises(ValueError, match=message):
        RatingsFrame().to_surprise(frame)
