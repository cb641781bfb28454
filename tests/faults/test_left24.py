"""What the last stops left open outside the engine (stop 24): a report's file written again keeps its place, one
warning per lost set of users, warnings pointing at the user's line, a saved certificate checked on load, a budget
ledger's total and lock, a prior with subnormal masses."""
import warnings

import numpy as np
import pytest

from privrelease.runner import Report


# ------------------------------------------------------------------------------------------------ report
def test_report_replaces_a_part_written_again_in_place(tmp_path):
    # the replaced table moved to the end of the report
    import pandas as pd

    rep = Report(tmp_path / "out")
    rep.table(pd.DataFrame({"x": [1]}), "t", caption="first")
    rep.table(pd.DataFrame({"x": [5]}), "kept", caption="kept")
    with pytest.warns(UserWarning, match=r"already had a file named 't\.csv'"):
        rep.table(pd.DataFrame({"x": [2]}), "t", caption="second")
    md = rep.markdown()
    assert md.index("second") < md.index("kept") and "first" not in md and md.count("(`t.csv`)") == 1


def test_report_csv_after_a_table_of_its_name_keeps_the_table(tmp_path):
    # csv(name) after table(name) dropped the table: both were asked for; the table shows what the file holds
    import pandas as pd

    rep = Report(tmp_path / "out")
    rep.table(pd.DataFrame({"x": [1]}), "t", caption="the table")
    rep.text("after")
    with pytest.warns(UserWarning, match=r"already had a file named 't\.csv'"):
        rep.csv(pd.DataFrame({"x": [7, 8]}), "t")
    rep.save()
    assert pd.read_csv(tmp_path / "out" / "t.csv")["x"].tolist() == [7, 8]
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.count("(`t.csv`)") == 1 and md.index("the table") < md.index("after")
    table = md[md.index("the table"):md.index("(`t.csv`)")]
    assert "| 7 |" in table and "| 8 |" in table and "| 1 |" not in table


# ------------------------------------------------------------------ one warning per lost set of users
def _release_with_an_unrated_user(row=2):
    """A long-form release of 5 users x 4 items: user ``row`` ('c': and item 40) has no stored rating."""
    import pandas as pd

    from privrelease.recommender import RatingsFrame

    ratings = pd.DataFrame({"user": ["a", "a", "b", "c", "d", "e", "e"], "item": [10, 20, 10, 40, 30, 20, 30],
                            "rating": [4.0, 5.0, 3.0, 2.0, 1.0, 5.0, 4.0]})
    rf = RatingsFrame().fit(ratings)
    X = rf.to_matrix(ratings).toarray()
    X[row] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rf.from_matrix(X)


def _lost_said(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if "no stored rating" in str(w.message) or "without a stored rating" in str(w.message)]


@pytest.mark.parametrize("form", ["filtered", "counted"])
def test_fit_then_to_surprise_of_one_frame_warn_once_of_its_lost_users(form):
    pytest.importorskip("surprise")
    from privrelease.recommender import RatingsFrame

    released = _release_with_an_unrated_user()
    frame = released[released["user"] != "d"]  # filtered: 'c' (no row) is lost with it
    if form == "counted":  # what a parquet file keeps of attrs['ids']
        frame = released.copy()
        frame.attrs["ids"] = dict(released.attrs["ids"])
    rf = RatingsFrame()
    assert len(_lost_said(lambda: rf.fit(frame))) == 1
    assert _lost_said(lambda: rf.to_surprise(frame)) == []  # said twice of one loss
    assert _lost_said(lambda: rf.to_surprise(frame)) == []
    # another converter says it once too; another loss is said by this one
    assert len(_lost_said(lambda: RatingsFrame().to_surprise(frame))) == 1
    again = _release_with_an_unrated_user(row=1)  # user 'b' without a rating
    again = again[again["user"] != "d"]
    if form == "counted":
        again = _release_with_an_unrated_user(row=1)
        again.attrs["ids"] = {"n_users": 5, "n_items": 4, "n_unrated_users": 1, "n_unrated_items": 0}
    assert len(_lost_said(lambda: rf.to_surprise(again))) == 1


# ------------------------------------------------------------------ warnings point at the user's line
def _filenames(call, category):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    names = {w.filename for w in caught if issubclass(w.category, category)}
    assert names, f"no {category.__name__}"
    return names


def test_off_scale_warning_of_a_transform_names_the_callers_line():
    # a fixed stacklevel named privrelease/mappers/_columns.py
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(120, 20, attribute_strength=2.0, random_state=0)
    X = R.tocsr()
    mapper = QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.1, random_state=0).fit(X, a)
    Y = X.copy()
    Y.data = Y.data * 40  # ratings of another scale
    assert _filenames(lambda: mapper.transform(Y), UserWarning) == {__file__}


def test_column_vector_labels_warning_through_a_pipeline_names_the_callers_line():
    # through a Pipeline it named sklearn/pipeline.py
    from sklearn.exceptions import DataConversionWarning
    from sklearn.pipeline import make_pipeline

    from privrelease.evaluation import InferenceAttack

    rng = np.random.default_rng(0)
    X, y = rng.integers(0, 6, (60, 5)).astype(float), rng.integers(0, 2, (60, 1))
    assert _filenames(lambda: InferenceAttack().fit(X, y), DataConversionWarning) == {__file__}
    assert _filenames(lambda: make_pipeline(InferenceAttack()).fit(X, y), DataConversionWarning) == {__file__}


def test_sparse_distortion_without_a_diagonal_warning_names_the_callers_line():
    # solve_mapping's check named privrelease/mapping/_solver.py
    import scipy.sparse as sp

    from privrelease.mapping import solve_mapping

    D = sp.csr_matrix((np.ones(2), ([0, 1], [1, 0])), shape=(2, 2))
    prior = np.array([[0.3, 0.2], [0.1, 0.4]])
    assert _filenames(lambda: solve_mapping(prior, D, delta=1.0), UserWarning) == {__file__}


def test_too_many_clusters_warning_names_the_callers_line():
    # a warning with no stacklevel at all named privrelease/mappers/_quantized.py
    from privrelease import QuantizedPrivacyMapper
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(60, 20, attribute_strength=2.0, random_state=0)
    a = np.asarray(a).copy()
    a[5:] = -1  # five labeled users for eight clusters
    mapper = QuantizedPrivacyMapper(n_clusters=8, max_leakage=0.1, random_state=0)
    assert _filenames(lambda: mapper.fit(R.tocsr(), a), UserWarning) == {__file__}


# ------------------------------------------------------------------ subnormal prior masses
def _subnormal_prior(seed, tiny, k):
    rng = np.random.default_rng(seed)
    P = rng.random((3, k))
    P[:, :3] *= tiny  # three inputs of subnormal mass
    P[rng.integers(3), 5] = 1e-318
    return P / P.sum(), rng


def test_subnormal_input_masses_solve_certified_without_numpy_warnings():
    # the first-order step divided the slack by costs p(c) (d(c, j) - d(c, j*)) of subnormal size: 'overflow
    # encountered in scalar divide' once per entry moved (12 per max_leakage solve here), the answer unchanged
    from shared_helpers import independent_bound_gap, reference_leakage

    from privrelease.exceptions import ConvergenceWarning
    from privrelease.mapping import solve_mapping

    prior = np.random.default_rng(1).random((3, 8))
    prior[:, :2] *= 1e-320
    prior[0, 3] = 1e-315
    prior /= prior.sum()
    d = np.abs(np.arange(8)[:, None] - np.arange(8)[None, :]).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = solve_mapping(prior, d, delta=0.5)
        # (its distortion is certified to 8.8e-6 against 5.4e-6 here: 'inaccurate', warned, before and after)
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        capped = solve_mapping(prior, d, max_leakage=0.05)
    assert res.status == "optimal" and res.certificate["gap_bits"] <= 1e-6
    assert independent_bound_gap(prior, d, 0.5, res.mapping, res.leakage) <= 1e-6
    assert res.leakage <= reference_leakage(prior, d, 0.5) + 1e-6
    assert capped.leakage <= 0.05 + 1e-9


def test_maximal_leakage_bound_of_a_subnormal_excess_is_finite_and_quiet():
    # the bound's multiplier g / e with an excess e of subnormal size overflowed to inf, and inf * 0 made the row
    # minima NaN ('invalid value encountered in multiply'); a NaN first in max() would have been the bound
    from privrelease.mapping import solve_mapping
    from test_hostile17_solver import _ml_lp

    k = 12
    prior, rng = _subnormal_prior(0, 1e-310, k)
    d = rng.random((k, k))
    np.fill_diagonal(d, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = solve_mapping(prior, d, delta=0.3, leakage="maximal_leakage")
    assert res.status == "optimal"
    # independent LP: min sum_j t_j, t_j >= p(j | a), rows stochastic, distortion <= delta; leakage log2 of it
    assert abs(res.leakage - _ml_lp(prior, d, delta=0.3)) <= 1e-7


# ------------------------------------------------------------------ codes of a nested list
@pytest.mark.parametrize("rows, hit", [
    ([[1, 2], [3, True]], (3, True)), ([[1, 2], (np.True_, 3)], (2, np.True_)), ([[1, 2], [3, 4]], None),
    ([(1, 2)], None), ([[1.5, 2]], None), ([["a", True]], (1, True)), ([[1], [2, 3]], None),
])
def test_rows_of_codes_name_their_first_boolean_in_numpys_order(rows, hit):
    # the rows' values are read by their types first (numpy's object array of 10**6 rows was 3/5 of the time)
    from privrelease.utils._validation import _first_boolean

    assert _first_boolean(rows) == hit
    flat = np.asarray(rows, dtype=object).ravel() if hit is not None else None
    if hit is not None:
        assert flat[hit[0]] is hit[1]


# ------------------------------------------------------------------ a ledger's budget
def test_a_ledger_file_with_an_edited_budget_is_refused():
    # a larger budget written into the saved ledger loaded and let the releases go on past the one given
    import gc
    import pickle
    import struct

    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(epsilon=1.0).spend(0.75)
    data = pickle.dumps(acc)
    del acc
    gc.collect()
    saved = b"G" + struct.pack(">d", 1.0)  # the budget, as pickle writes a float
    assert data.count(saved) == 1
    with pytest.raises(ValueError, match=r"has the budget epsilon = 5\.0, expected the budget it was saved with "
                                         r"\(1\.0\); the ledger was edited"):
        pickle.loads(data.replace(saved, b"G" + struct.pack(">d", 5.0)))
    back = pickle.loads(data)  # the file as saved loads, with its budget
    assert back.epsilon == 1.0 and back.remaining() == pytest.approx(0.25)
    back.epsilon = 2.0  # a budget changed in a session is the one its next save records
    assert pickle.loads(pickle.dumps(back)).epsilon == 2.0
