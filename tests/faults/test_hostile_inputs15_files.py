"""Rating and MovieLens files, fifteenth audit: sizes, repeated pairs, scales, timestamps and messages."""

import warnings
from pathlib import Path

import numpy as np
import pytest

from privrelease.datasets import load_movielens_100k, load_movielens_1m, load_ratings_csv
from privrelease.runner import PipelineError

from shared_helpers import fake_ml100k, run_cli  # tests/shared_helpers.py

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _ratings_file(folder, scale=1.0, repeat=0, outlier=None):
    """``ratings.csv`` and ``users.csv`` of 120 users (gender the attribute), ratings 1-5 times ``scale``;
    ``repeat`` rows repeat a pair of an earlier row (a re-rating, 1 star higher or lower); ``outlier`` replaces
    the first rating."""
    from privrelease.datasets import make_ratings

    R, a, _ = make_ratings(120, 30, attribute_strength=2.0, random_state=0)
    coo = R.tocoo()
    rows = [[f"u{u}", f"m{i}", float(r) * scale] for u, i, r in zip(coo.row, coo.col, coo.data)]
    if outlier is not None:
        rows[0][2] = outlier
    rows += [[u, i, (r / scale % 5 + 1) * scale] for u, i, r in rows[:repeat]]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ratings.csv").write_text("user,item,rating\n" + "".join(f"{u},{i},{r:g}\n" for u, i, r in rows))
    (folder / "users.csv").write_text("user,gender\n" + "".join(f"u{u},{'F' if a[u] else 'M'}\n"
                                                                 for u in range(R.shape[0])))
    return folder / "ratings.csv", folder / "users.csv", R


def _run_ratings_file(folder, capsys, *extra):
    argv = ["run", str(PIPELINES / "ratings_file.toml"), "--quick", "-o", str(folder / "out"),
            "--set", f"path=\"{folder / 'ratings.csv'}\"", "--set", f"users_path=\"{folder / 'users.csv'}\"",
            "--set", "attribute=\"gender\"", *extra]
    return run_cli(argv, capsys)


# --------------------------------------------------------------------------- 2. MovieLens files read whole
def test_movielens_file_with_an_endless_line_is_refused_before_it_is_read(tmp_path):
    folder, _, _ = fake_ml100k(tmp_path / "ml", n_users=20, n_items=30)
    with open(folder / "u.data", "wb") as fh:  # 9 MiB without a line break (sparse: no disk written)
        fh.truncate(9 * 2**20)
    with pytest.raises(ValueError, match=r"u\.data holds a line of more than 8 MiB \(from byte 0\)"):
        load_movielens_100k(folder)


def test_movielens_file_larger_than_any_movielens_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from privrelease.datasets import _movielens

    folder, _, _ = fake_ml100k(tmp_path / "ml", n_users=20, n_items=30)
    # the cap is 1 GiB (a 4 GB u.data was a MemoryError); lowered here so the test file stays small
    monkeypatch.setattr(_movielens, "MAX_MOVIELENS_BYTES", 1000)
    size = (folder / "u.data").stat().st_size
    assert size > 1000
    with pytest.raises(ValueError, match=rf"u\.data is {size} bytes: expected .* of at most 0 MiB"):
        load_movielens_100k(folder)


# --------------------------------------------------------------------------- 3. repeated pairs
def test_repeated_pairs_are_counted_warned_and_reported(tmp_path, capsys, monkeypatch):
    ratings, users, R = _ratings_file(tmp_path / "d", repeat=7)
    with pytest.warns(UserWarning, match=r"7 row\(s\) repeat the \(user, item\) pair of another row and were "
                                         r"collapsed.*last in file order"):
        X, _, _ = load_ratings_csv(ratings)
    assert X.nnz == R.nnz  # one rating per pair
    from privrelease.runner.experiments import ratings_file

    _, _, info = ratings_file.read_data(str(ratings), str(users), attribute="gender")
    assert info["n_rows_collapsed"] == 7 and info["n_ratings"] == R.nnz
    # the report says so (the analysis itself is not what is checked here: stubbed to stay fast)
    monkeypatch.setattr(ratings_file, "analyse_ratings", lambda *args, **kwargs: {})
    rc, _, err = _run_ratings_file(tmp_path / "d", capsys)
    assert rc == 0, err
    text = " ".join((tmp_path / "d" / "out" / "report.md").read_text().split())
    assert "Repeated ratings: 7 row(s) repeat the (user, item) pair of another row and were collapsed" in text


# --------------------------------------------------------------------------- 4. a scale SVD cannot fit
# (updated in round 16: the recommender trains on the ratings mapped onto 1..5, so a wide scale no longer makes SVD
# diverge; only a learning rate too large for 1..5 is refused)
def test_a_learning_rate_too_large_for_svds_gradient_descent_is_refused_before_the_run():
    from privrelease.runner.experiments import ratings_file

    ratings_file._check_sgd_scale(None, (200, 1000))  # SVD's default 0.005 on 200..1000: fits now
    with pytest.raises(PipelineError, match=r"SVD's gradient descent diverges at lr_all = 0.3.*0.3 x 4 >= 1.*"
                                            r"below 0.25"):
        ratings_file._check_sgd_scale({"algorithm": "SVD", "algo_params": {"lr_all": 0.3}}, (200, 1000))


def test_svd_fits_a_wide_scale_with_its_default_learning_rate(tmp_path):
    from privrelease.recommender import SurpriseRecommender

    _, _, R = _ratings_file(tmp_path / "d")
    X = R.copy()
    X.data = X.data * 200.0
    wide = SurpriseRecommender("SVD", rating_scale=(200, 1000), random_state=0).fit(X)
    stars = SurpriseRecommender("SVD", rating_scale=(1, 5), random_state=0).fit(R)
    assert np.isfinite(wide.user_factors_).all()
    np.testing.assert_allclose(wide.predict(X), 200.0 * stars.predict(R), rtol=1e-9)


@pytest.mark.parametrize("outlier", [1e308, 1e200])
def test_an_astronomically_large_rating_is_refused_before_the_run(tmp_path, capsys, outlier):
    _ratings_file(tmp_path / "d", outlier=outlier)
    rc, _, err = _run_ratings_file(tmp_path / "d", capsys, "--set", "recommender={algorithm=\"BaselineOnly\"}")
    assert rc == 2, err
    assert f"the ratings run from 1 to {outlier:g}: expected ratings of at most 1e+100 in magnitude" in err


# --------------------------------------------------------------------------- 5. integer timestamps
def test_nanosecond_timestamps_100_ns_apart_keep_the_later_rating(tmp_path):
    f = tmp_path / "r.csv"
    # as float64 both are 1700000000000000000: the earlier (file order last) rating won
    f.write_text("user,item,rating,ts\n1,1,2,1700000000000000100\n1,1,5,1700000000000000000\n2,1,3,5\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        X, users, _ = load_ratings_csv(f, timestamp_col="ts")
    assert X[list(users).index(1), 0] == 2.0  # the rating at ...100 ns is the later one


# --------------------------------------------------------------------------- 6. messages
def test_movielens_errors_quote_the_file_line_counting_blank_lines(tmp_path):
    folder, _, _ = fake_ml100k(tmp_path / "ml", n_users=20, n_items=30)
    lines = (folder / "u.data").read_text().splitlines()
    lines[2] = lines[2].rsplit("\t", 2)[0] + "\t9\t881250949"  # a rating of 9 on file line 5
    (folder / "u.data").write_text("\n\n" + "\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"u\.data line 5: rating 9\.0 is outside MovieLens' scale"):
        load_movielens_100k(folder)
    lines[2] = lines[2].replace("\t9\t", "\tx\t")
    (folder / "u.data").write_text("\n" + "\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"e\.g\. 'x' on line 4"):
        load_movielens_100k(folder)
    users = (folder / "u.user").read_text().splitlines()
    users[1] = users[1].replace("|F|", "|X|").replace("|M|", "|X|")
    (folder / "u.user").write_text("\n\n\n" + "\n".join(users) + "\n")
    (folder / "u.data").write_text("\n".join(lines[:2]) + "\n")
    with pytest.raises(ValueError, match=r"u\.user line 5: gender 'X'"):
        load_movielens_100k(folder)


def _fake_ml1m(folder):
    folder.mkdir(parents=True)
    (folder / "ratings.dat").write_text("1::1::5::978300760\n")
    (folder / "users.dat").write_text("1::F::1::10::48067\n")
    (folder / "movies.dat").write_text("1::Toy Story (1995)::Animation\n")
    return folder


def test_the_other_movielens_archive_is_named(tmp_path, capsys):
    folder = _fake_ml1m(tmp_path / "ml1m")
    with pytest.raises(FileNotFoundError, match=r"holds the files of MovieLens 1M \(ml-1m\): read it with "
                                                r"load_movielens_1m"):
        load_movielens_100k(folder)
    fake_ml100k(tmp_path / "both" / "ml-100k", n_users=20, n_items=30)
    with pytest.raises(FileNotFoundError, match=r"ml-100k holds the files of MovieLens 100k"):
        load_movielens_1m(tmp_path / "both")
    rc, _, err = run_cli(["run", str(PIPELINES / "movielens_gender.toml"), "--quick", "-o", str(tmp_path / "o"),
                          "--set", f"path=\"{folder}\""], capsys)
    assert rc == 2, err
    assert "holds the files of MovieLens 1M" in err and "expected dataset = 'ml-1m' (--set dataset=ml-1m)" in err


def test_data_missing_details_show_line_breaks_as_lines(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc, _, err = run_cli(["run", str(PIPELINES / "movielens_gender.toml"), "--quick", "-o", str(tmp_path / "o"),
                          "--set", f"path=\"{tmp_path / 'empty'}\""], capsys)
    assert rc == 1, err
    text = (tmp_path / "o" / "report.md").read_text()
    details = text.split("Details:")[1]
    assert "\\n" not in details
    assert "\n- " in details and "(missing: u.data, u.user, u.item)" in details


def test_a_separator_with_a_backslash_escape_written_out_is_named(tmp_path, capsys):
    f = tmp_path / "r.tsv"
    f.write_text("user\titem\trating\n1\t1\t5\n")
    # --set sep=\t unquoted: TOML cannot read it, so it is the text backslash-t (two characters)
    with pytest.raises(ValueError, match=r"sep = '\\\\t' is 2 literal characters.*write sep = \"\\t\""):
        load_ratings_csv(f, sep="\\t")
    _ratings_file(tmp_path / "d")
    rc, _, err = _run_ratings_file(tmp_path / "d", capsys, "--set", "sep=\\t")
    assert rc == 2, err
    assert "--set 'sep=\"\\t\"'" in err
