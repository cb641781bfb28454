"""Real-data shapes (shape17): long-tailed product-like stand-ins drawn by the synthetic generators."""

import json
from pathlib import Path

import numpy as np
import pytest

from privrelease.datasets import _synthetic, make_ratings, make_realistic_ratings


def _reference_pattern(keys, counts):
    """The Gumbel-top-k pattern as the generator always defined it: a full stable sort of every row."""
    order = np.argsort(-keys, axis=1, kind="stable")
    return [np.sort(order[u, :k]) for u, k in enumerate(counts)]


class _SortWidths:
    """A stand-in for the module's ``np`` that records the width of every array ``argsort`` orders."""

    def __init__(self):
        self.widths = []

    def __getattr__(self, name):
        return getattr(np, name)

    def argsort(self, a, *args, **kwargs):
        self.widths.append(np.shape(a)[-1])
        return np.argsort(a, *args, **kwargs)


@pytest.mark.parametrize("counts", [[1, 3, 2, 1, 1, 5], [4, 4, 4, 4], [1], [7, 1]])
def test_sample_rated_items_picks_the_largest_keys(counts):
    counts = np.array(counts, dtype=np.int64)
    n_items = 7
    log_w = np.random.default_rng(3).normal(size=(counts.size, n_items))
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    indptr, indices = _synthetic._sample_rated_items(lambda s, e: log_w[s:e], n_items, counts, rng_a)
    keys = log_w + rng_b.gumbel(size=log_w.shape)
    expected = _reference_pattern(keys, counts)
    for u in range(counts.size):
        np.testing.assert_array_equal(indices[indptr[u]:indptr[u + 1]], expected[u])


def test_long_tailed_draw_does_not_sort_every_item_of_every_user(monkeypatch):
    # 20,000 users x 10,000 items with 3 ratings per user took a minute: every user's keys over ALL the items
    # were sorted to keep a handful. Only the chunk's largest counts need ordering.
    spy = _SortWidths()
    monkeypatch.setattr(_synthetic, "np", spy)
    n_items = 2000
    counts = np.array([3, 1, 2, 5, 1, 1, 4, 2], dtype=np.int64)
    log_w = np.zeros((counts.size, n_items))
    indptr, indices = _synthetic._sample_rated_items(lambda s, e: log_w[s:e], n_items, counts,
                                                     np.random.default_rng(0))
    assert np.diff(indptr).tolist() == counts.tolist()
    assert max(spy.widths) <= counts.max(), (
        f"argsort ordered rows of {max(spy.widths)} items, expected at most the largest count {counts.max()}")


def test_generators_unchanged_and_complete_on_long_tailed_shapes():
    # a product-like shape: many users with 1-3 ratings over a long tail of items, each item rated at least once
    R, a, _ = make_ratings(3000, 1500, mean_ratings_per_user=3, popularity_skew=1.2,
                           attribute_proportion=[0.98, 0.02], random_state=0)
    counts = np.diff(R.indptr)
    assert counts.min() >= 1 and np.bincount(R.indices, minlength=1500).min() >= 1
    for u in range(R.shape[0]):  # sorted, distinct items in every row
        row = R.indices[R.indptr[u]:R.indptr[u + 1]]
        assert np.all(np.diff(row) > 0)
    # the same seed gives the same draw with the partial selection as with a full sort of every row
    R2, a2, _ = make_ratings(3000, 1500, mean_ratings_per_user=3, popularity_skew=1.2,
                             attribute_proportion=[0.98, 0.02], random_state=0)
    assert (R != R2).nnz == 0 and np.array_equal(a, a2)
    R3, attrs, _ = make_realistic_ratings(400, 300, min_ratings_per_user=2, random_state=1)
    assert np.diff(R3.indptr).min() >= 2 and set(np.unique(R3.data)) <= {1.0, 2.0, 3.0, 4.0, 5.0}


def test_saturated_keys_still_draw_counts_items():
    # overflowing selection keys (+-inf, ties) take the full sort: each user still gets exactly n_u distinct items
    with np.errstate(over="ignore"):
        R, _, _ = make_ratings(200, 30, selection_strength=1e308, random_state=0)
    for u in range(R.shape[0]):
        row = R.indices[R.indptr[u]:R.indptr[u + 1]]
        assert row.size >= 1 and np.unique(row).size == row.size


def test_reference_pattern_equals_generator_under_a_fixed_seed():
    n_items, counts = 50, np.array([2, 9, 1, 3], dtype=np.int64)
    log_w = np.linspace(-1, 1, counts.size * n_items).reshape(counts.size, n_items)
    indptr, indices = _synthetic._sample_rated_items(lambda s, e: log_w[s:e], n_items, counts,
                                                     np.random.default_rng(11))
    keys = log_w + np.random.default_rng(11).gumbel(size=log_w.shape)
    for u, row in enumerate(_reference_pattern(keys, counts)):
        np.testing.assert_array_equal(indices[indptr[u]:indptr[u + 1]], row)


def _sparse_product_files(folder, mean_ratings_per_user):
    R, a, _ = make_ratings(1500, 600, mean_ratings_per_user=mean_ratings_per_user, popularity_skew=1.2,
                           random_state=0)
    R = R.tocoo()
    ratings, users = folder / "ratings.csv", folder / "users.csv"
    ratings.write_text("user,item,rating\n" + "".join(f"P{u}x,I{i},{v:g}\n" for u, i, v in zip(R.row, R.col, R.data)))
    users.write_text("zip,user,g,extra\n" + "".join(f"0{u},P{u}x,{['M', 'F'][c]},z\n" for u, c in enumerate(a)))
    return ratings, users


def _run_ratings_file(tmp_path, capsys, mean_ratings_per_user):
    from shared_helpers import run_cli  # tests/shared_helpers.py

    ratings, users = _sparse_product_files(tmp_path, mean_ratings_per_user)
    pipeline = str(Path(__file__).resolve().parents[2] / "pipelines" / "ratings_file.toml")
    out = tmp_path / "out"
    rc, _, err = run_cli(["run", pipeline, "--quick", "-o", str(out), "--set", f"path={ratings}",
                          "--set", f"users_path={users}", "--set", "attribute=g", "--set", "max_leakages=[0.0]"],
                         capsys)
    assert rc == 0, err
    return (out / "report.md").read_text(encoding="utf-8"), json.loads((out / "headline.json").read_text())


def test_report_warns_when_releasing_nothing_beats_the_original_ratings(tmp_path, capsys):
    # a product-like file (about 4 ratings per user): the recommender predicts the held-out ratings better from
    # its baselines than from the users' own rows, so every "relative increase" is against a costly yardstick
    report, headline = _run_ratings_file(tmp_path, capsys, 4)
    assert headline["ratings_rel_increase_release_nothing"] < 0
    assert "releasing nothing gives a LOWER RMSE" in report


def test_report_has_no_such_warning_when_the_original_ratings_help(tmp_path, capsys):
    report, headline = _run_ratings_file(tmp_path, capsys, 30)
    assert headline["ratings_rel_increase_release_nothing"] > 0
    assert "releasing nothing gives a LOWER RMSE" not in report
