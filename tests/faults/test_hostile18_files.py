"""Hostile files, eighteenth audit: what a loaded ledger, mapper or data file claims is checked (one test per
finding)."""

import pickle
import re
import warnings

import numpy as np
import pytest

from privrelease.accounting import PrivacyAccountant
from privrelease.datasets import load_movielens_1m, load_movielens_100k, load_ratings_csv


# ----------------------------------------------------------------------- an edited accountant ledger
def _ledger():
    acc = PrivacyAccountant(epsilon=1.0)
    acc.spend(0.5, population="p", individual_epsilons=[0.5, 0.25])
    acc.spend(0.4)
    return acc


def _edited(edit):
    """The ledger pickled after an edit of its state (what an edited file holds), loaded."""
    acc = _ledger()
    edit(acc)
    return pickle.loads(pickle.dumps(acc))


@pytest.mark.parametrize("edit, message", [
    # spent reset to 0: the budget of 1 was offered again after 0.9 had been spent
    (lambda a: (setattr(a, "_total", 0.0), setattr(a, "_carry", 0.0)),
     r"the total spent = 0.0, expected the sum of its 2 releases' epsilons \(0.9\)"),
    # a NaN budget refused no release at all
    (lambda a: setattr(a, "epsilon", float("nan")), r"the budget epsilon = nan, expected a number >= 0"),
    (lambda a: setattr(a, "epsilon", -1.0), r"the budget epsilon = -1.0, expected a number >= 0"),
    # a negative spend gave budget back; a NaN one was added as if nothing
    (lambda a: (a._spends.append(-0.8), a._records.append(dict(a._records[-1], epsilon=-0.8)),
                setattr(a, "_total", 0.1)), r"release 2's epsilon = -0.8, expected a number >= 0"),
    (lambda a: a._spends.__setitem__(1, float("nan")), r"release 1's epsilon = nan, expected a number >= 0"),
    (lambda a: a._spends.__setitem__(0, "0.5"), r"release 0's epsilon = '0.5', expected a number >= 0"),
    (lambda a: a._records.pop(), r"the number of records = 1, expected one per release \(2\)"),
    (lambda a: a._records.__setitem__(0, 0.5), r"record 0 = 0.5, expected a dict of the release's information"),
    (lambda a: a._spends.__setitem__(0, 10**400), r"release 0's epsilon = 1000.*, expected a number >= 0 \(inf only "
                                                  r"under an unlimited budget\)"),
    (lambda a: a._records[0].__setitem__("epsilon", 0.1),
     r"record 0's epsilon = 0.1, expected the epsilon of release 0 \(0.5\)"),
    # an individual's composed guarantee read -5 (or 3, above the release's own epsilon of 0.5)
    (lambda a: a._populations["p"]["eps"].__setitem__(0, (np.array([0, 1]), np.array([-5.0, 0.25]))),
     r"population 'p' eps value in release row 0 = -5.0, expected a finite number >= 0"),
    (lambda a: a._populations["p"]["eps"].__setitem__(0, (np.array([0, 1]), np.array([3.0, 0.25]))),
     r"population 'p' largest individual epsilon in release 0 = 3.0, expected at most that release's epsilon"),
    (lambda a: a._populations["p"]["rows"].__setitem__(0, 7),
     r"population 'p' release row 0 = 7, expected increasing release numbers in \[0, 2\)"),
    (lambda a: a._populations["p"]["eps"].__setitem__(0, (np.array([0, 5]), np.array([0.5, 0.25]))),
     r"population 'p' eps entry 0 = .*expected \(indices in \[0, 2\), values\)"),
    (lambda a: a._populations["p"]["pay"].__setitem__(0, (np.array([0]), np.array([np.inf]))),
     r"population 'p' pay value in release row 0 = inf, expected a finite number >= 0"),
])
def test_an_edited_ledger_is_refused_when_loaded_naming_the_value(edit, message):
    # every edit loaded silently: spent, remaining() and check() then answered from the false ledger
    with pytest.raises(ValueError, match="a loaded PrivacyAccountant ledger has " + message):
        _edited(edit)


def test_an_honest_ledger_still_loads_and_keeps_its_budget():
    acc = _ledger()
    for k in range(1000):  # a long ledger: its stored running total stays within round-off of the exact sum
        acc.spend(1e-5 / 3)
    back = pickle.loads(pickle.dumps(acc))
    assert back.spent == acc.spent and back.remaining() == acc.remaining()
    np.testing.assert_array_equal(back.individual_spent("p"), [0.5, 0.25])
    unlimited = PrivacyAccountant().spend(np.inf).spend(1.0)
    assert pickle.loads(pickle.dumps(unlimited)).spent == np.inf


# ----------------------------------------------------------------------- MovieLens: nothing collapsed or kept silently
def _movielens(folder, version, ratings, items=None):
    """A MovieLens folder of two users whose rating file holds ``ratings`` (user, item, rating, timestamp) and
    whose item file holds ``items`` (id, title) lines."""
    folder.mkdir()
    items = items or [(1, "A"), (2, "B")]
    if version == "100k":
        (folder / "u.data").write_text("".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in ratings))
        (folder / "u.user").write_text("1|30|F|writer|12345\n2|40|M|other|54321\n")
        (folder / "u.item").write_text("".join(f"{i}|{t}|01-Jan-1995\n" for i, t in items))
        return load_movielens_100k, "u.data", "u.item", "item"
    (folder / "ratings.dat").write_text("".join(f"{u}::{i}::{r}::{t}\n" for u, i, r, t in ratings))
    (folder / "users.dat").write_text("1::F::25::1::12345\n2::M::35::2::54321\n")
    (folder / "movies.dat").write_text("".join(f"{i}::{t}::Drama\n" for i, t in items))
    return load_movielens_1m, "ratings.dat", "movies.dat", "movie"


@pytest.mark.parametrize("version", ["100k", "1m"])
def test_movielens_repeated_pairs_are_warned_with_their_count(tmp_path, version):
    # user 1 rated movie 1 twice (5, then 1): one rating was dropped without a word (load_ratings_csv warns)
    load, data, _, _ = _movielens(tmp_path / "ml", version, [(1, 1, 5, 100), (1, 1, 1, 200), (2, 2, 3, 100),
                                                             (2, 2, 3, 100)])
    with pytest.warns(UserWarning, match=rf"{data}: 2 row\(s\) repeat the \(user, item\) pair of another row and "
                                         r"were collapsed, keeping one rating per pair \(the latest by timestamp"):
        R, _, _ = load(tmp_path / "ml")
    assert R.toarray().tolist() == [[1, 0], [0, 3]]  # the latest rating of each pair


@pytest.mark.parametrize("version", ["100k", "1m"])
def test_movielens_item_listed_twice_with_different_titles_is_refused(tmp_path, version):
    # the first title was kept without a word (a user listed twice with different values was already refused)
    load, _, file, what = _movielens(tmp_path / "ml", version, [(1, 1, 5, 100), (2, 2, 3, 100)],
                                     items=[(1, "A"), (2, "B"), (1, "Z")])
    with pytest.raises(ValueError, match=rf"{file} describes {what} 1 more than once, with different values; "
                                         rf"expected one line per {what}"):
        load(tmp_path / "ml")
    # the same line twice loses nothing and still loads
    load, _, _, _ = _movielens(tmp_path / "ok", version, [(1, 1, 5, 100), (2, 2, 3, 100)],
                               items=[(1, "A"), (2, "B"), (1, "A")])
    _, _, titles = load(tmp_path / "ok")
    assert titles == ["A", "B"]


# ----------------------------------------------------------------------- one integer id written two ways
def test_load_ratings_csv_warns_about_an_integer_id_written_plainly_and_as_a_float(tmp_path):
    # user 1 written '1' and '1.0' (two exports concatenated) was two users without a word (the runner refuses it)
    path = tmp_path / "r.csv"
    path.write_text("user,item,rating\n1,x,5\n1.0,y,4\n2,7,3\n3,7.0,2\n")
    with pytest.warns(UserWarning) as record:
        R, users, items = load_ratings_csv(path)
    messages = [str(w.message) for w in record]
    assert any(re.search(r"column 'user' holds 1 integer id\(s\) written both plainly and as a float \(for "
                         r"example '1' and '1.0'\)", m) for m in messages)
    assert any("column 'item' holds 1 integer id(s)" in m and "'7' and '7.0'" in m for m in messages)
    assert users.tolist() == ["1", "1.0", "2", "3"] and R.nnz == 4  # read as written: nothing merged or lost


def test_load_ratings_csv_does_not_warn_about_ids_written_one_way(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("user,item,rating\n1.0,x,5\n2.0,y,4\n007,x,3\n7,y,2\n")  # floats only; a leading zero
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        R, users, _ = load_ratings_csv(path)
    assert users.tolist() == ["007", "1.0", "2.0", "7"] and R.nnz == 4
