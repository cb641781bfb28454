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
