"""Hostile inputs, fourteenth audit: ratings files, loaders and pipeline parameters (one test per finding)"""

import numpy as np
import pytest

from privrelease.datasets import load_ratings_csv
from privrelease.runner import PipelineError, check_run


def _ratings_file(folder, sep=","):
    """A rating file of 6 users x 4 items (users 1-3 prefer items a, b; users 4-6 items c, d), a users file,
    and the matrix they hold (rows: users 1-6, columns: items a-d)."""
    R = np.array([[5, 4, 1, 0], [4, 5, 0, 2], [5, 0, 1, 1], [1, 2, 5, 4], [0, 1, 4, 5], [2, 0, 5, 5]], dtype=float)
    rows = [f"{u + 1}{sep}{'abcd'[i]}{sep}{R[u, i]:g}" for u, i in zip(*np.nonzero(R))]
    ratings = folder / "r.csv"
    ratings.write_text(sep.join(["user", "item", "rating"]) + "\n" + "\n".join(rows) + "\n")
    users = folder / "u.csv"
    users.write_text("user,gender\n" + "".join(f"{u},{'FFFMMM'[u - 1]}\n" for u in range(1, 7)))
    return str(ratings), str(users), R


# ----------------------------------------------------------------------- two parameters naming one column
@pytest.mark.parametrize("kwargs, first, second, column", [
    ({"item_col": "user"}, "user_col", "item_col", "'user'"),
    ({"item_col": "rating"}, "item_col", "rating_col", "'rating'"),
    ({"timestamp_col": " rating "}, "rating_col", "timestamp_col", "'rating'"),
    ({"header": False, "user_col": 0, "item_col": np.int64(0), "rating_col": 2}, "user_col", "item_col", "0"),
])
def test_two_parameters_naming_one_column_are_refused(tmp_path, kwargs, first, second, column):
    # item_col='user' kept one rating per user (100 of 1,200), item_col='rating' read five items: silently
    ratings, users, _ = _ratings_file(tmp_path)
    with pytest.raises(ValueError, match=f"^{first} and {second} both name the column {column}; expected a "
                                         "different column for each of user_col, item_col, rating_col"):
        load_ratings_csv(ratings, **kwargs)
    base = {"path": ratings, "users_path": users, "attribute": "gender"}
    with pytest.raises(PipelineError, match="parameters item_col and rating_col both name the column 'rating'"):
        check_run("ratings_file", {**base, "item_col": "rating"}, quick=True)
    with pytest.raises(PipelineError, match="parameters users_id_col and attribute both name the column 'user'"):
        check_run("ratings_file", {**base, "attribute": "user"}, quick=True)
