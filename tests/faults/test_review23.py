"""Review of stop 46's merged work (leftc23): fixes found by the review, each test failing before."""
import warnings

import numpy as np
import pytest


def test_individual_spent_with_a_size_refuses_names_spend_refuses():
    # individual_spent(1.0, n_individuals=3) returned zeros beside population 1's spent [.5, .2, .1]: an
    # understated privacy loss under a name spend() refuses (True and 1.0 would be population 1)
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant()
    acc.spend(1.0, population=1, individual_epsilons=np.array([0.5, 0.2, 0.1]))
    for name in (1.0, np.float64(1.0), True, np.True_, (True, "a"), (1.0, "a")):
        with pytest.raises(KeyError, match="a boolean or a non-integer number names no population"):
            acc.individual_spent(name, n_individuals=3)
    np.testing.assert_array_equal(acc.individual_spent(1, n_individuals=3), [0.5, 0.2, 0.1])
    np.testing.assert_array_equal(acc.individual_spent(2, n_individuals=3), np.zeros(3))  # no release yet


def test_a_warning_under_grid_search_names_the_callers_line():
    # with joblib between (GridSearchCV runs its fits through Parallel, at n_jobs=1 too), the warning named
    # joblib/parallel.py
    from sklearn.model_selection import GridSearchCV

    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    R, a, _ = make_ratings(120, 25, attribute_strength=2.0, random_state=0)
    coo = R.tocoo()
    # a long-form table with neutral column names, ids beyond a rating scale: read as a matrix, with a warning
    X = np.column_stack([coo.row + 1000, coo.col + 1000, coo.data])
    y = np.asarray(a)[coo.row]

    class Scored(QuantizedPrivacyMapper):
        def score(self, X, y=None):
            return 0.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GridSearchCV(Scored(n_clusters=3, max_leakage=0.05, random_state=0), {"n_clusters": [3]}, cv=2,
                     n_jobs=1, refit=False).fit(X, y)
    ours = [w for w in caught if "long form" in str(w.message)]
    assert ours and all(w.filename == __file__ for w in ours), sorted({w.filename for w in ours})


def test_a_huge_grid_is_refused_before_it_is_copied():
    from privrelease.mapping import kde_prior

    X = np.random.default_rng(0).normal(size=(60, 1))
    y = np.arange(60) % 2
    with pytest.raises(ValueError, match=r"grid of 1000000000000 points x 1 feature\(s\): the densities"):
        kde_prior(X, y, grid=np.broadcast_to(0.0, (10**12, 1)), bandwidths=[0.5], cv=2)


# ------------------------------------------------------------------------------- review of the lead's fixes
def test_tuple_ids_given_as_a_list_are_checked():
    # a RatingIds of tuple ids built from a list holds a MultiIndex: isna is undefined there (NotImplementedError)
    import pandas as pd

    from privrelease.recommender import RatingsFrame
    from privrelease.recommender._formats import RatingIds

    df = pd.DataFrame({"user": [(k, "a") for k in range(1, 6)], "item": [(k, k) for k in (1, 2, 3, 1, 2)],
                       "rating": [4.0, 3.0, 2.0, 5.0, 1.0]})
    df.attrs["ids"] = RatingIds([(k, "a") for k in range(6)], [(k, k) for k in range(4)], [False] + [True] * 5,
                                [False] + [True] * 3)
    assert RatingsFrame().fit(df).shape == (6, 4)


def test_an_edited_gap_below_the_old_absolute_tolerance_is_refused(tmp_path):
    from privrelease import ErasureMapper, load
    from privrelease._persistence import _read, _write

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(400, 2))
    y = (X[:, 0] + rng.integers(0, 2, 400)) % 2
    m = ErasureMapper(max_leakage=0.05, leakage="maximal_leakage", random_state=0).fit(X, y)
    cert = m.solver_result_.certificate
    gap = cert["distortion_gap"]
    assert 0 < gap < 1e-9 and gap == pytest.approx(m.solver_result_.distortion - cert["distortion_lower_bound"],
                                                   rel=1e-6)
    m.save(tmp_path / "m.npz")
    load(tmp_path / "m.npz")  # the honest file
    meta, arrays = _read(tmp_path / "m.npz")
    meta["fitted"]["solver_result_"]["items"]["certificate"]["items"]["distortion_gap"] = {"t": "float", "v": "0.0"}
    _write(tmp_path / "m.npz", meta, arrays)
    with pytest.raises(ValueError, match=r"certificate\['distortion_gap'\] = 0\.0 does not hold"):
        load(tmp_path / "m.npz")


def test_a_file_written_before_class_directions_loads_as_it_was_fitted(tmp_path):
    from privrelease import QuantizedPrivacyMapper, load
    from privrelease._persistence import _read, _write
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(300, 30, attribute_strength=2.0, random_state=0)
    m = QuantizedPrivacyMapper(n_clusters=6, class_directions="all", random_state=0).fit(R.tocsr(), a)
    m.save(tmp_path / "m.npz")
    meta, arrays = _read(tmp_path / "m.npz")
    del meta["params"]["class_directions"]
    _write(tmp_path / "m.npz", meta, arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "does not record the parameter" warning
        warnings.filterwarnings("ignore", message=".*integer random_state")
        back = load(tmp_path / "m.npz")
    assert back.class_directions == "all"  # what its fit did, not the default "auto"


def test_a_warning_in_a_worker_names_the_callers_line_not_the_process_machinery():
    # stop 47: the caller's line, as at n_jobs=1 (a worker has no user frame; it named the library's call before)
    import pandas as pd

    from privrelease.recommender import RatingsFrame
    from privrelease.utils._jobs import run_jobs

    df = pd.DataFrame({"user": ["nan", "b", "c"], "item": [1, 2, 3], "rating": [4.0, 3.0, 2.0]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(run_jobs([(RatingsFrame().fit, (df,))] * 2, 2))
    files = {w.filename for w in caught if "nan" in str(w.message)}
    assert files == {__file__}, files


@pytest.mark.parametrize("stop, status, line", [("term", 143, "terminated (SIGTERM)"), ("int", 130, "interrupted")])
def test_an_error_raised_while_a_signal_unwinds_the_run_is_a_stop_not_a_failure(monkeypatch, capsys, stop, status,
                                                                                 line):
    # SIGTERM as joblib started a worker thread: its cleanup raised "cannot join thread before it is started" and the
    # run was reported failed (exit 1) instead of terminated (143); seen once in the fault suite
    from privrelease import cli

    def run(args):
        try:
            raise cli.Terminated("terminated by signal 15 (SIGTERM)") if stop == "term" else KeyboardInterrupt()
        except KeyboardInterrupt:
            raise RuntimeError("cannot join thread before it is started")

    monkeypatch.setattr(cli, "cmd_list", run)
    assert cli.main(["list"]) == status
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"privrelease: error: {line}"
    monkeypatch.setattr(cli, "cmd_list", lambda args: (_ for _ in ()).throw(RuntimeError("plain failure")))
    assert cli.main(["list"]) == 1
