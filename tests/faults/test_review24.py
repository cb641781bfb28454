"""Review of the stop-47 changes (lead): what the merged fixes missed, each found failing on the code before."""
import copy
import functools
import pickle
import warnings

import pytest

from test_left24 import _lost_said, _release_with_an_unrated_user


# ------------------------------------------------------------------ one warning per lost set, per frame
def test_two_filtered_releases_each_warn_of_their_lost_users():
    # the converter remembered the loss for its whole life: a second release (another frame, the same user 'c'
    # without a rating) converted by it was silent
    pytest.importorskip("surprise")
    from privrelease.recommender import RatingsFrame

    first = _release_with_an_unrated_user()
    second = _release_with_an_unrated_user()
    f1, f2 = first[first["user"] != "d"], second[second["user"] != "e"]
    rf = RatingsFrame().fit(first)
    assert len(_lost_said(lambda: rf.to_surprise(f1))) == 1
    assert _lost_said(lambda: rf.to_surprise(f1)) == []  # one frame: said once
    assert len(_lost_said(lambda: rf.to_surprise(f2))) == 1


def test_a_refit_on_another_frame_and_a_copied_or_pickled_converter_warn_again():
    pytest.importorskip("surprise")
    from privrelease.recommender import RatingsFrame

    first = _release_with_an_unrated_user()
    f1 = first[first["user"] != "d"]
    second = _release_with_an_unrated_user()
    f2 = second[second["user"] != "d"]  # the same ids lost, another frame
    rf = RatingsFrame()
    assert len(_lost_said(lambda: rf.fit(f1))) == 1
    assert len(_lost_said(lambda: rf.fit(f2))) == 1
    for other in (pickle.loads(pickle.dumps(rf)), copy.deepcopy(rf)):
        assert len(_lost_said(lambda: other.to_surprise(f2))) == 1
        assert other.user_ids_.tolist() == rf.user_ids_.tolist()


# ------------------------------------------------------------------ the ledger's budget record
def test_a_ledger_saved_again_by_an_older_version_loads_with_its_budget():
    # a session of the previous version kept the record it does not know but renewed the ledger's id, which the
    # record's digest included: the honest file was refused as edited
    from privrelease.accounting import PrivacyAccountant

    state = PrivacyAccountant(epsilon=1.0).spend(0.25).__getstate__()
    state = dict(state, _ledger_id="0123456789abcdef0123456789abcdef")  # what the older session wrote
    back = PrivacyAccountant.__new__(PrivacyAccountant)
    back.__setstate__(state)
    assert back.epsilon == 1.0 and back.remaining() == pytest.approx(0.75)
    bad = dict(state, epsilon=100.0)
    with pytest.raises(ValueError, match=r"has the budget epsilon = 100\.0, expected the budget it was saved with "
                                         r"\(1\.0\)"):
        PrivacyAccountant.__new__(PrivacyAccountant).__setstate__(bad)


@pytest.mark.parametrize("budget", [None, "1.0"])
def test_a_ledger_whose_live_budget_is_not_a_number_saves_and_its_load_names_the_budget(budget):
    # the record's float() raised a bare TypeError / OverflowError inside pickle.dumps
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(epsilon=1.0)
    acc.epsilon = budget
    data = pickle.dumps(acc)
    with pytest.raises(ValueError, match="epsilon"):
        pickle.loads(data)


# ------------------------------------------------------------------ the report's tables
def test_a_series_written_under_a_shown_tables_name_keeps_the_report_savable(tmp_path):
    # the Series took the table's place as it was and every later markdown / save failed (AttributeError)
    import pandas as pd

    from privrelease.runner import Report

    rep = Report(tmp_path / "out")
    rep.table(pd.DataFrame({"x": [1]}), "t", caption="the table")
    with pytest.warns(UserWarning, match=r"already had a file named 't\.csv'"):
        rep.csv(pd.Series([5, 6], name="x"), "t")
    rep.save()
    assert pd.read_csv(tmp_path / "out" / "t.csv")["x"].tolist() == [5, 6]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| 5 |" in md and "| 6 |" in md and "| 1 |" not in md
    with pytest.raises(TypeError, match=r"Report\.csv takes a pandas DataFrame \(or Series\), got list"):
        rep.csv([1, 2], "u")


# ------------------------------------------------------------------ warnings at the user's line
def test_a_worker_processs_library_warning_names_the_callers_line():
    # a worker process has no user frame: its warning came back at the library's line (_checks.py), where the same
    # call at n_jobs=1 names the caller's
    import numpy as np
    import scipy.sparse as sp

    from privrelease.mapping import solve_mapping
    from privrelease.utils._jobs import run_jobs

    solve = functools.partial(solve_mapping, delta=1.0)  # the library's own call in the worker: no user frame
    D = sp.csr_matrix((np.ones(2), ([0, 1], [1, 0])), shape=(2, 2))  # no diagonal: warned
    priors = [np.array([[0.3, 0.2], [0.1, 0.4]]), np.array([[0.2, 0.3], [0.1, 0.4]])]
    for n_jobs in (1, 2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            list(run_jobs([(solve, (p, D)) for p in priors], n_jobs, prefer="processes"))
        names = {w.filename for w in caught if issubclass(w.category, UserWarning)}
        assert names == {__file__}, (n_jobs, names)


def test_a_warning_of_a_dask_transform_names_the_compute_line():
    # the frame walk stopped in dask's own code (dask/array/core.py)
    pytest.importorskip("dask")
    import dask.array as da

    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(120, 20, attribute_strength=2.0, random_state=0)
    X = R.tocsr()
    mapper = QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.1, random_state=0).fit(X, a)
    Y = X.copy()
    Y.data = Y.data * 40  # off the scale fit saw: warned
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mapper.transform(da.from_array(Y.toarray(), chunks=(30, 20))).compute(scheduler="sync")
    names = {w.filename for w in caught if issubclass(w.category, UserWarning) and "scale" in str(w.message)}
    assert names == {__file__}


# ------------------------------------------------------------------ a users file's classes
def test_classes_written_in_two_cases_are_warned():
    # 'M', 'm', 'F', 'f' became four classes without a word (the MovieLens reader refuses 'f')
    import numpy as np

    from privrelease.runner.experiments.ratings_file import _encode

    values = np.array(["M", "m", "F", "f", "M", "F "])
    with pytest.warns(UserWarning, match=r"classes whose names differ only in case or blank space \('F' and 'F ' "
                                         r"and 'f'; 'M' and 'm'\)"):
        code, names = _encode("gender", values, None, "users.csv")
    assert len(names) == 5 and code.min() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _encode("gender", np.array(["M", "F", "F", "M"]), None, "users.csv")


# ------------------------------------------------------------------ the runner's inputs, folders and signals
def test_main_called_from_python_without_argv_leaves_the_signal_handlers(monkeypatch):
    # main() without argv was taken for the command: both signals stayed ignored for the rest of the process
    import signal
    import sys

    from privrelease import cli

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(sys, "argv", ["privrelease", "list"])
    monkeypatch.setattr(cli, "cmd_list", lambda args: (cli._settled(), 0)[1])  # a report written
    assert cli.main() == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_an_earlier_reports_file_the_user_has_rewritten_may_be_an_input(tmp_path):
    # saving removes an earlier report's file only while it holds the content the manifest records: an input the
    # user wrote under that name is kept, and the run was refused for it
    import pandas as pd

    from privrelease.runner import PipelineError, Report

    out = tmp_path / "s2"
    rep = Report(out)
    rep.table(pd.DataFrame({"x": [1]}), "r")
    rep.save()
    again = Report(out, overwrite=True)
    with pytest.raises(PipelineError, match=r"is a file of the earlier report, which saving this one replaces"):
        again._guard_inputs({"path": str(out / "r.csv")})  # still the report's own table
    (out / "r.csv").write_text("user,item,rating\n1,2,3\n")
    Report(out, overwrite=True)._guard_inputs({"path": str(out / "r.csv")})


def test_discard_after_a_chdir_removes_the_runs_own_new_folders(tmp_path, monkeypatch):
    # the created folders were recorded relative: after a chdir discard() removed another, empty, folder
    from privrelease.runner import Report

    monkeypatch.chdir(tmp_path)
    rep = Report("rel/out")
    rep.json({"x": 1}, "partial")
    (tmp_path / "other" / "rel" / "out").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "other")
    rep.discard()
    assert not (tmp_path / "rel").exists()
    assert (tmp_path / "other" / "rel" / "out").is_dir()


def test_the_creatability_probe_is_removed_when_interrupted(tmp_path, monkeypatch):
    import os

    from privrelease.runner import _report

    made = []
    real_mkdir = os.mkdir

    def mkdir(path, *args):
        real_mkdir(path, *args)
        made.append(path)
        raise KeyboardInterrupt  # just after the probe was made

    monkeypatch.setattr(_report.os, "mkdir", mkdir)
    with pytest.raises(KeyboardInterrupt):
        _report._check_creatable(tmp_path / "new" / "out")
    monkeypatch.undo()
    assert made and not os.path.lexists(made[0]) and os.listdir(tmp_path) == []


def test_users_files_with_registered_non_raters_and_raters_without_a_profile_are_not_warned(tmp_path):
    # the ids written alike in both files: no id of one reads as an id of the other (a spurious warning)
    import numpy as np

    from privrelease.runner.experiments.ratings_file import _warn_unmatched

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_unmatched(np.array([str(u) for u in range(1000, 1040)]), np.arange(60, 70), 100, 70, "u.csv", "r.csv",
                        True)
    with pytest.warns(UserWarning, match=r"for example '007'.*for example 7"):
        _warn_unmatched(np.array(["007", "1000"]), np.array([7, 8]), 100, 70, "u.csv", "r.csv", True)


def test_an_input_is_recognised_by_identity_not_only_by_its_path(tmp_path):
    # on a case-insensitive file system 'DATA.json' is the 'data.json' the report writes; stood in for here by a
    # link the path comparison does not resolve to the same name (a hard link: another name, the same file)
    import os

    from privrelease.runner import PipelineError, Report

    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "mine.csv").write_text("user,item,rating\n1,2,3\n")
    os.link(tmp_path / "mine.csv", out / "t.csv")
    rep = Report(out, overwrite=True)
    rep._guard_inputs({"path": str(tmp_path / "mine.csv")})
    import pandas as pd

    with pytest.raises(PipelineError, match=r"parameter path = .*mine\.csv.* which is a file this report writes"):
        rep.table(pd.DataFrame({"x": [1]}), "t")


def test_a_releases_recorded_ids_are_shared_by_the_frames_pandas_derives():
    # pandas deep-copies a frame's attrs at every operation: the recorded ids (immutable) are shared, not copied
    released = _release_with_an_unrated_user()
    ids = released.attrs["ids"]
    assert released[released["user"] != "d"].attrs["ids"] is ids
    assert copy.deepcopy(ids) is ids
