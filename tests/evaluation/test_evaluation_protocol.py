import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import FunctionTransformer

from privrelease.evaluation import rmse_cost
from privrelease.evaluation._protocol import _fold_inputs, _prepare_split

from evaluation_doubles import BiasRecommender, EmptyMapper, SpyMapper, planted_ratings

IDENTITY = FunctionTransformer(accept_sparse=True)


def data(n=120, seed=0):
    return planted_ratings(n_users=n, n_items=25, strength=0.7, density=0.35, seed=seed)


def test_identity_mapper_costs_nothing_exactly():
    X, y = data()
    cost = rmse_cost(IDENTITY, X, y, cv=3, recommender=BiasRecommender(), random_state=0)
    pf = cost.per_fold
    np.testing.assert_array_equal(pf.rmse_released, pf.rmse_original)
    np.testing.assert_array_equal(pf.rmse_release_everything, pf.rmse_original)
    assert cost["rel_increase_released"] == 0.0
    assert not np.array_equal(pf.rmse_release_nothing, pf.rmse_original)
    assert len(pf) == 3 and pf.n_test_users.sum() == cost.n_protected == 60


def test_empty_mapper_equals_release_nothing_exactly():
    X, y = data()
    cost = rmse_cost(EmptyMapper(), X, y, cv=3, recommender=BiasRecommender(), random_state=0)
    np.testing.assert_array_equal(cost.per_fold.rmse_released, cost.per_fold.rmse_release_nothing)
    assert cost["rel_increase_released"] == pytest.approx(cost["rel_increase_release_nothing"])


def test_rmse_matches_an_independent_computation():
    X, y = data(seed=1)
    cost = rmse_cost(IDENTITY, X, y, cv=2, recommender=BiasRecommender(), random_state=3)
    split = _prepare_split(X, y, opt_in_fraction=0.5, cv=2, heldout_fraction=0.1,
                           rating_range=(1, 5), random_state=3)
    for k, test in enumerate(split.folds):
        # by hand: train on every user but the test fold, fold in the test users' visible rows
        test_users = split.protected[test]
        train_users = np.setdiff1d(np.arange(X.shape[0]), test_users)
        rec = BiasRecommender().fit(X[train_users])
        vis, held = split.visible[test], split.heldout[test]
        assert ((vis + held) != X[test_users]).nnz == 0  # held-out entries come from the true rows
        # user-level independent prediction
        errs = []
        for r in range(held.shape[0]):
            cols = held[r].indices
            seen = vis[r]
            b_u = np.sum(seen.data - rec.mu_ - rec.b_item_[seen.indices]) / (seen.nnz + 2.0)
            pred = np.clip(rec.mu_ + rec.b_item_[cols] + b_u, 1, 5)
            errs.extend(held[r].data - pred)
        assert cost.per_fold.rmse_original[k] == pytest.approx(np.sqrt(np.mean(np.square(errs))))


def test_heldout_ratings_never_reach_the_mapper():
    X, y = data(seed=2)
    SpyMapper.seen.clear()
    SpyMapper.seen_labels.clear()
    rmse_cost(SpyMapper(), X, y, cv=3, recommender=BiasRecommender(), random_state=5)
    split = _prepare_split(X, y, opt_in_fraction=0.5, cv=3, heldout_fraction=0.1,
                           rating_range=(1, 5), random_state=5)
    held = split.heldout.tocoo()
    held_keys = set(zip(split.protected[held.row].tolist(), held.col.tolist()))
    assert len(held_keys) > 0
    # rebuild which user each row the mapper saw belongs to, by content
    X_rows = {tuple(X[u].indices): u for u in range(X.shape[0])}
    vis_rows = {tuple(split.visible[p].indices): split.protected[p] for p in range(split.protected.size)}
    seen_in_fit = 0
    for where, M in SpyMapper.seen:
        if where == "fit":
            # the mapper is fitted on opted-in users only
            assert M.shape[0] == split.opt_in.size
            assert ((M != split.X_opt)).nnz == 0
            # ... with their own labels: no protected user's attribute reaches the mapper
            np.testing.assert_array_equal(SpyMapper.seen_labels[seen_in_fit], split.y_opt)
            seen_in_fit += 1
            continue
        for r in range(M.shape[0]):
            idx = tuple(M[r].indices)
            u = vis_rows.get(idx, X_rows.get(idx))
            assert u is not None
            for j in idx:
                if (u, j) in held_keys:
                    # a held-out entry may only reach the mapper if the row is a training row of
                    # another fold, never in the fold where it is held out: check the row is full
                    assert idx == tuple(X[u].indices)
    assert seen_in_fit == 1


def test_heldout_entries_absent_from_test_rows_in_every_release():
    X, y = data(seed=3)
    split = _prepare_split(X, y, opt_in_fraction=0.5, cv=2, heldout_fraction=0.2,
                           rating_range=(1, 5), random_state=0)
    for k in range(2):
        for release in ("original", "released", "release_nothing"):
            train, test_rows, held = _fold_inputs(split, k, release, IDENTITY.fit(X))
            assert test_rows.multiply(held).nnz == 0
            # the test users are not in the training matrix
            assert train.shape[0] == X.shape[0] - split.folds[k].size


def test_same_seed_same_result_and_seed_matters():
    X, y = data(seed=5)
    a = rmse_cost(IDENTITY, X, y, cv=2, recommender=BiasRecommender(), random_state=1).per_fold
    b = rmse_cost(IDENTITY, X, y, cv=2, recommender=BiasRecommender(), random_state=1, n_jobs=2).per_fold
    c = rmse_cost(IDENTITY, X, y, cv=2, recommender=BiasRecommender(), random_state=2).per_fold
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    assert not np.array_equal(a.rmse_original, c.rmse_original)


def test_dense_input_and_empty_users():
    X, y = data(seed=6)
    D = X.toarray()
    D[:3] = 0
    with pytest.warns(UserWarning, match="3 user\\(s\\) have no ratings"):
        cost = rmse_cost(IDENTITY, D, y, cv=2, recommender=BiasRecommender(), random_state=0)
    assert cost.n_opted_in + cost.n_protected == X.shape[0] - 3


@pytest.mark.parametrize("kwargs, match", [
    ({"opt_in_fraction": 0.0}, r"opt_in_fraction must be > 0.0, got 0.0"),
    ({"opt_in_fraction": 1.0}, r"opt_in_fraction must be < 1.0, got 1.0"),
    ({"heldout_fraction": 1.5}, r"heldout_fraction must be < 1.0, got 1.5"),
    ({"cv": 1}, r"cv must be an integer number of folds >= 2, got 1"),
    ({"cv": 80}, r"too few users.*60 protected.*cv=80"),
])
def test_validation_errors(kwargs, match):
    X, y = data()
    with pytest.raises(ValueError, match=match):
        rmse_cost(IDENTITY, X, y, recommender=BiasRecommender(), random_state=0, **kwargs)


def test_validation_of_inputs():
    X, y = data()
    bad = X.copy()
    bad.data[0] = 7.0
    with pytest.raises(ValueError, match=r"outside the rating scale \[1, 5\].*7\.0"):
        rmse_cost(IDENTITY, bad, y, recommender=BiasRecommender(), random_state=0)
    with pytest.raises(ValueError, match=r"private has 3 values but ratings has 120 users"):
        rmse_cost(IDENTITY, X, y[:3], recommender=BiasRecommender(), random_state=0)
    y_missing = y.copy()
    y_missing[4] = -1
    with pytest.raises(ValueError, match=r"1 value\(s\) are missing"):
        rmse_cost(IDENTITY, X, y_missing, recommender=BiasRecommender(), random_state=0)
    with pytest.raises(TypeError, match="mapper must be a transformer"):
        rmse_cost(object(), X, y, recommender=BiasRecommender(), random_state=0)
    with pytest.raises(TypeError, match=r"recommender must have fit\(X\) and rmse\(X, y\)"):
        rmse_cost(IDENTITY, X, y, recommender=object(), random_state=0)
    with pytest.raises(TypeError, match="cv must be an integer"):
        rmse_cost(IDENTITY, X, y, cv=2.5, recommender=BiasRecommender(), random_state=0)


def test_class_unseen_among_opted_in_users_is_an_error():
    X, y = data()
    y = y.copy()
    # a class held by one user only: with this seed the user is protected
    split = _prepare_split(X, y, opt_in_fraction=0.5, cv=2, heldout_fraction=0.1,
                           rating_range=(1, 5), random_state=0)
    y[split.protected[0]] = 9
    with pytest.raises(ValueError, match=r"class\(es\) \[9\] among the protected users that no opted-in"):
        rmse_cost(IDENTITY, X, y, cv=2, recommender=BiasRecommender(), random_state=0)


def test_split_is_not_correlated_with_data_drawn_from_the_same_seed():
    # data whose attribute comes from the stream numpy.random.default_rng(0) would also give the split
    n = 400
    bits = np.random.default_rng(0).integers(0, 2**53, size=n, dtype=np.uint64)
    y = (bits < 2**52).astype(int)
    X = sp.random(n, 20, density=0.3, random_state=1, format="lil")
    X.data = np.array([np.ceil(np.asarray(r) * 5).tolist() for r in X.data], dtype=object)
    X[np.arange(n), 0] = 3.0
    X = X.tocsr()
    split = _prepare_split(X, y, opt_in_fraction=0.5, cv=2, heldout_fraction=0.1, rating_range=(1, 5),
                           random_state=0)
    share_opt, share_prot = split.y_opt.mean(), split.y_prot.mean()
    # a random half: both shares within ~4 standard deviations (0.035) of each other
    assert abs(share_opt - share_prot) < 0.15


class _Terminal:
    """A stderr stand-in that says it is a terminal and keeps what is written."""

    def __init__(self, tty):
        self.tty, self.text = tty, []

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text.append(s)

    def flush(self):
        pass


@pytest.mark.parametrize("tty, verbose, shown", [(True, 1, True), (False, 1, False), (True, 0, False)])
def test_progress_bar_only_on_a_terminal(monkeypatch, tty, verbose, shown):
    import sys

    from privrelease.evaluation import evaluate_attacks

    fake = _Terminal(tty)
    monkeypatch.setattr(sys, "stderr", fake)
    X, y = planted_ratings(n_users=60, seed=9)
    rmse_cost(FunctionTransformer(accept_sparse=True), X, y, cv=2, recommender=BiasRecommender(),
              random_state=0, verbose=verbose)
    evaluate_attacks(X[:30], None, y[:30], X[30:], y[30:], models=["logistic"], random_state=0, verbose=verbose)
    text = "".join(fake.text)
    assert ("rmse folds" in text and "attackers" in text) == shown
    assert (text != "") == shown


def test_verbose_must_be_a_count():
    X, y = planted_ratings(n_users=60, seed=9)
    with pytest.raises(TypeError, match="verbose must be a non-negative int or a bool.*'yes'"):
        rmse_cost(FunctionTransformer(accept_sparse=True), X, y, cv=2, recommender=BiasRecommender(),
                  random_state=0, verbose="yes")


def test_progress_is_on_by_default_on_a_terminal(monkeypatch):
    # issue 13: a progress bar on every evaluation that runs longer than a few seconds, off when not a terminal;
    # rmse_cost and evaluate_attacks showed none unless asked (privacy_utility_curve's default is 1 too)
    import sys

    from privrelease.evaluation import evaluate_attacks

    fake = _Terminal(True)
    monkeypatch.setattr(sys, "stderr", fake)
    X, y = planted_ratings(n_users=60, seed=9)
    rmse_cost(FunctionTransformer(accept_sparse=True), X, y, cv=2, recommender=BiasRecommender(), random_state=0)
    evaluate_attacks(X[:30], None, y[:30], X[30:], y[30:], models=["logistic"], random_state=0)
    text = "".join(fake.text)
    assert "rmse folds" in text and "attackers" in text
