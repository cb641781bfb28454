"""Round 16: ids matched exactly, marker words warned, RMSE costs free of the rating units, implicit feedback refused.

Each test failed on the code before the fix (see the comments).
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from privrelease import QuantizedPrivacyMapper
from privrelease.datasets import make_ratings
from privrelease.evaluation import privacy_utility_curve, rmse_cost
from privrelease.recommender import RatingsFrame
from privrelease.runner import PipelineError
from privrelease.runner.experiments import ratings_file

B = 2**60


def _big_ids():
    df = pd.DataFrame({"user": [B + 1, B + 3, B + 5], "item": [1, 1, 2], "rating": [4.0, 2.0, 5.0]})
    return RatingsFrame().fit(df), df


# ----------------------------------------------------------------------------- 1. float ids of large integer users
def test_align_refuses_a_float_id_that_several_integer_users_round_to():
    # pandas compared the int64 user ids with the float64 label as floats: ['F', 'F', 'F'], one user's label for three
    rf, _ = _big_ids()
    labels = pd.Series(["F"], index=pd.Index([B + 1], dtype="float64"))
    with pytest.raises(ValueError, match=r"float id 1\.152921504606847e\+18, which cannot say which user it names: "
                                         r"the integer user id\(s\) 1152921504606846977, 1152921504606846979"):
        rf.align(labels)
    # equal to one integer user and to no other: matched; 2**60 + 256 (the next float) names no user, and is said so
    rf = RatingsFrame().fit(pd.DataFrame({"user": [B, 7], "item": [1, 2], "rating": [4.0, 2.0]}))
    assert rf.align(pd.Series(["F", "M"], index=[float(B), 7.0])).tolist() == ["M", "F"]  # rows: 7, 2**60
    with pytest.warns(UserWarning, match="match no user"):
        assert rf.align(pd.Series(["F", "M"], index=[float(B + 256), 7.0])).tolist() == ["M", -1]


def test_from_matrix_refuses_a_float_index_label_of_large_integer_ids():
    # user 2**60 + 3 was given the ratings of 2**60 + 1 and the row labelled 7.0 was dropped without a word
    df = pd.DataFrame({"user": [B + 1, B + 3], "item": [1, 2], "rating": [4.0, 2.0]})
    rf = RatingsFrame().fit(df)
    W = pd.DataFrame([[4.0, 0.0], [0.0, 2.0]], index=pd.Index([float(B + 1), 7.0]), columns=[1, 2])
    with pytest.raises(ValueError, match=r"X\.index has the float id 1\.152921504606847e\+18, which cannot say"):
        rf.from_matrix(W)


def test_to_matrix_refuses_a_float_user_column_of_large_integer_ids():
    df = pd.DataFrame({"user": [B + 1, B + 3, B + 5], "item": [1, 2, 3], "rating": [4.0, 2.0, 5.0]})
    rf = RatingsFrame().fit(df)
    floats = df.assign(user=df["user"].astype("float64"))  # the three ratings were all given to one user
    with pytest.raises(ValueError, match=r"ratings\['user'\] has the float id"):
        rf.to_matrix(floats)


# ----------------------------------------------------------------------------- 2. marker words as classes
def test_a_class_spelled_like_a_missing_marker_is_warned_once_with_its_count():
    # 'None' (a religion) was "not disclosed" without a word: classes_ ['Christian', 'Muslim'], the 'None' users
    # unprotected
    X, _, _ = make_ratings(n_users=90, n_items=20, random_state=0)
    y = np.array(["Christian", "Muslim", "None"] * 30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mapper = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(X, y)
    said = [str(w.message) for w in caught if "read as 'not disclosed'" in str(w.message)]
    assert len(said) == 1 and "'None' (30 users)" in said[0] and "rename it" in said[0]
    assert mapper.classes_.tolist() == ["Christian", "Muslim"]
    # the markers that are no words ('', '-1') are not warned about
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(X, np.array(["a", "b", "", "-1", "a", "b"] * 15))


def _files(tmp_path, users_rows, ratings=None):
    rng = np.random.default_rng(0)
    if ratings is None:
        ratings = "user,item,rating\n" + "".join(f"{u},{i},{int(rng.integers(1, 6))}\n"
                                                 for u in range(1, 41) for i in range(1, 9))
    (tmp_path / "r.csv").write_text(ratings)
    (tmp_path / "u.csv").write_text("user,attr\n" + users_rows)
    return str(tmp_path / "r.csv"), str(tmp_path / "u.csv")


def test_the_command_line_names_marker_words_of_the_users_file(tmp_path):
    r, u = _files(tmp_path, "".join(f"{k},{['F', 'M', 'None', 'NA'][k % 4]}\n" for k in range(1, 41)))
    _, _, info = ratings_file.read_data(r, u, attribute="attr")
    assert info["marker_words"] == {"NA": 10, "None": 10}


# ----------------------------------------------------------------------------- 3. RMSE costs free of the units
def _cost(scale):
    X, g, _ = make_ratings(n_users=120, n_items=30, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rmse_cost(QuantizedPrivacyMapper(n_clusters=4, random_state=0), X.astype(float) * scale, g,
                         rating_range=(scale, 5 * scale), cv=2, random_state=0, verbose=0)


def test_rmse_costs_do_not_depend_on_the_rating_units():
    # ratings x 0.2: released -0.5 %, release-nothing +0.7 %; x 1: +8.7 / +11.2 %: Surprise's defaults assume 1..5
    ref = _cost(1.0)
    # on 1..5 data the figures are those of the code before the fix
    assert ref["rmse_original"] == pytest.approx(0.7603717660312204, rel=1e-12)
    assert ref["rel_increase_released"] == pytest.approx(0.23811220418983936, rel=1e-12)
    assert ref["rel_increase_release_nothing"] == pytest.approx(0.2552563744550045, rel=1e-12)
    for scale in (0.2, 10.0):
        c = _cost(scale)
        assert c["rmse_original"] == pytest.approx(scale * ref["rmse_original"], rel=1e-9)
        for key in ("rel_increase_released", "rel_increase_release_nothing"):
            assert c[key] == pytest.approx(ref[key], rel=1e-9, abs=1e-9)


# ----------------------------------------------------------------------------- 4. implicit feedback
@pytest.mark.parametrize("evaluate", [rmse_cost, privacy_utility_curve])
def test_implicit_feedback_is_refused_by_the_rmse_protocol(evaluate):
    # every rating 1: the cost was -1.6 % or +27.7 % depending on an arbitrary rating_range
    X, g, _ = make_ratings(n_users=60, n_items=20, random_state=0)
    X = (X != 0).astype(float)
    with pytest.raises(ValueError, match=r"every rating of ratings is 1\.0 \(implicit feedback, one rating value\): "
                                         "the RMSE protocol needs more than one rating value"):
        evaluate(QuantizedPrivacyMapper(metric="hamming", random_state=0), X, g, rating_range=(1, 2), cv=2,
                 random_state=0, verbose=0)


def test_the_command_line_refuses_implicit_feedback_whatever_the_metric(tmp_path):
    ratings = "user,item,rating\n" + "".join(f"{u},{i},1\n" for u in range(1, 41) for i in range(1, 9))
    r, u = _files(tmp_path, "".join(f"{k},{'FM'[k % 2]}\n" for k in range(1, 41)), ratings)
    with pytest.raises(PipelineError, match=r"every rating of the 40 evaluated users is 1 \(implicit feedback\).*"
                                            "needs more than one rating value"):
        ratings_file.check_ready({"path": r, "users_path": u, "attribute": "attr", "rating_range": [1, 2],
                                  "mapper": {"metric": "hamming"}})


# ----------------------------------------------------------------------------- 5. users file of float ids
def test_a_users_file_whose_ids_match_no_rating_user_says_so_with_an_example_of_each(tmp_path):
    # "attribute column 'attr' ... is empty: no user with ratings discloses it (every value is missing ...)"
    ids = [B + 1 + 1000 * k for k in range(40)]  # 40 floats, none of them a user
    ratings = "user,item,rating\n" + "".join(f"{u},{i},{1 + (u + i) % 5}\n" for u in ids for i in range(1, 9))
    r, u = _files(tmp_path, "".join(f"{float(k)!r},{'FM'[n % 2]}\n" for n, k in enumerate(ids)), ratings)
    with pytest.raises(PipelineError, match=r"none of the 40 ids of the users file .* for example "
                                            r"'1\.152921504606847e\+18'\) is a user of the ratings file .* for example "
                                            r"'1152921504606846977'\); the users file writes ids as floats"):
        ratings_file.read_data(r, u, attribute="attr")


# ----------------------------------------------------------------------------- 6. the rating_range parameter named
def test_ratings_off_the_default_scale_name_the_rating_range_parameter():
    X, g, _ = make_ratings(n_users=60, n_items=20, random_state=0)
    with pytest.raises(ValueError, match=r"outside the rating scale \[1, 5\] \(for example 6\.0\).*pass "
                                         r"rating_range=\(low, high\), the scale the ratings are on"):
        rmse_cost(QuantizedPrivacyMapper(random_state=0), X.astype(float) * 2, g, cv=2, random_state=0, verbose=0)


# ----------------------------------------------------------------------------- 7. align keeps the attributes' names
def test_align_of_a_dataframe_keeps_its_column_names():
    rf = RatingsFrame().fit(pd.DataFrame({"user": ["a", "b", "c"], "item": [1, 1, 2], "rating": [4.0, 2, 5]}))
    Y = rf.align(pd.DataFrame({"gender": ["F", "M"], "age": [1, 2]}, index=["c", "a"]))
    assert isinstance(Y, pd.DataFrame) and list(Y.columns) == ["gender", "age"]
    assert list(Y.index) == ["a", "b", "c"]
    assert Y.to_numpy().tolist() == [["M", 2], [-1, -1], ["F", 1]]
