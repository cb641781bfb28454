import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils._param_validation import InvalidParameterError

from privrelease.datasets import make_ratings
from privrelease.recommender import SurpriseRecommender, holdout_split


@pytest.fixture(scope="module")
def data():
    X, a, _ = make_ratings(600, 80, random_state=0)
    X_train, X_test = holdout_split(X, 0.2, random_state=0)
    return X, a, X_train, X_test


def ridge_fold_in(X, mu, bi, Q, reg_b, reg_p, scaled, implicit=None):
    """Independent per-user closed form: argmin sum (r - mu - b_i - b - q.p)^2 + lam (b^2 + |p|^2)."""
    X = sp.csr_matrix(X)
    f = Q.shape[1]
    out_b, out_p = [], []
    for u in range(X.shape[0]):
        J = X[u].indices
        r = X[u].data
        n = J.size
        imp = np.zeros(f) if implicit is None else implicit(J)
        F = np.hstack([np.ones((n, 1)), Q[J]])
        t = r - mu - bi[J] - Q[J] @ imp
        lam = np.r_[reg_b, np.full(f, reg_p)] * (n if scaled else 1.0)
        if n == 0:
            z = np.zeros(f + 1)
        else:
            z = np.linalg.solve(F.T @ F + np.diag(lam), F.T @ t)
        out_b.append(z[0])
        out_p.append(z[1:])
    return np.array(out_b), np.array(out_p)


@pytest.mark.parametrize("fold_in_reg", ["auto", 0.7])
def test_svd_fold_in_is_closed_form_ridge(data, fold_in_reg):
    _, _, X_train, X_test = data
    rec = SurpriseRecommender(algo_params={"n_factors": 6, "reg_all": 0.05},
                              fold_in_reg=fold_in_reg, random_state=0).fit(X_train)
    rows = X_test[:50]
    b, P, _ = rec._mf_fold_in(rec._check_X(rows))
    if fold_in_reg == "auto":
        eb, eP = ridge_fold_in(rows, rec.global_mean_, rec.item_bias_, rec.item_factors_,
                               0.05, 0.05, scaled=True)
    else:
        eb, eP = ridge_fold_in(rows, rec.global_mean_, rec.item_bias_, rec.item_factors_,
                               0.7, 0.7, scaled=False)
    np.testing.assert_allclose(b, eb, atol=1e-9)
    np.testing.assert_allclose(P, eP, atol=1e-9)
    # and the predictions use them
    pred = rec.predict(rows)
    expected = np.clip(rec.global_mean_ + eb[:, None] + rec.item_bias_[None, :] + eP @ rec.item_factors_.T,
                       *rec.rating_scale_)
    np.testing.assert_allclose(pred, expected, atol=1e-9)


def test_svdpp_fold_in_is_closed_form_ridge(data):
    _, _, X_train, X_test = data
    rec = SurpriseRecommender("SVDpp", algo_params={"n_factors": 4, "n_epochs": 5},
                              random_state=0).fit(X_train)
    Y = rec.implicit_factors_
    rows = X_test[:30]
    b, P, _ = rec._mf_fold_in(rec._check_X(rows))
    eb, eP = ridge_fold_in(rows, rec.global_mean_, rec.item_bias_, rec.item_factors_,
                           0.02, 0.02, scaled=True,
                           implicit=lambda J: Y[J].sum(0) / np.sqrt(max(J.size, 1)))
    np.testing.assert_allclose(b, eb, atol=1e-9)
    np.testing.assert_allclose(P, eP, atol=1e-9)


def test_fold_in_recovers_converged_training_parameters():
    """At Surprise's SGD fixed point, folding a training row back in gives its fitted
    user parameters (the 'auto' regularisation is n_u * reg, as in the SGD objective)."""
    X, _, _ = make_ratings(80, 15, mean_ratings_per_user=6, random_state=1)
    params = {"n_factors": 3, "n_epochs": 3000, "lr_all": 0.01, "reg_all": 0.1}
    rec = SurpriseRecommender(algo_params=params, random_state=0).fit(X)
    b, P, _ = rec._mf_fold_in(rec._check_X(X))
    scale = np.abs(rec.user_factors_).max()
    err_auto = np.abs(P - rec.user_factors_).max()
    assert err_auto < 0.05 * scale
    assert np.abs(b - rec.user_bias_).max() < 0.05
    const = SurpriseRecommender(algo_params=params, fold_in_reg=0.1, random_state=0).fit(X)
    _, P_const, _ = const._mf_fold_in(const._check_X(X))
    assert np.abs(P_const - const.user_factors_).max() > 3 * err_auto


def test_fold_in_of_new_user_close_to_retraining():
    """A user left out of training and folded in is predicted about as a retrained model
    that saw the user predicts them (on the user's own held-out items)."""
    X, _, _ = make_ratings(400, 30, n_factors=2, mean_ratings_per_user=12,
                           activity_skew=0.0, random_state=2)
    X_tr, X_te = holdout_split(X, 0.3, random_state=0)
    params = {"n_factors": 2, "n_epochs": 400, "lr_all": 0.01, "reg_all": 0.05}
    new = np.arange(20)
    others = np.arange(20, 400)
    without = SurpriseRecommender(algo_params=params, random_state=0).fit(X_tr[others])
    retrained = SurpriseRecommender(algo_params=params, random_state=0).fit(X_tr)
    folded = without.predict(X_tr[new], mask=X_te[new]).data
    refit = retrained.predict_pairs(np.repeat(new, np.diff(X_te[new].indptr)), X_te[new].indices)
    truth = X_te[new].data
    gap = np.sqrt(np.mean((folded - refit) ** 2))
    rmse_truth = np.sqrt(np.mean((refit - truth) ** 2))
    assert gap < 0.5 * rmse_truth


@pytest.mark.parametrize("algorithm", ["SVD", "SVDpp", "BaselineOnly", "KNNBaseline"])
def test_beats_global_and_item_mean(data, algorithm):
    _, _, X_train, X_test = data
    mu = X_train.data.mean()
    cnt = X_train.getnnz(axis=0)
    item_mean = np.where(cnt > 0, np.asarray(X_train.sum(axis=0)).ravel() / np.maximum(cnt, 1), mu)
    rmse_global = np.sqrt(np.mean((X_test.data - mu) ** 2))
    rmse_item = np.sqrt(np.mean((X_test.data - item_mean[X_test.indices]) ** 2))
    params = {"n_factors": 10, "n_epochs": 10} if algorithm == "SVDpp" else None
    rec = SurpriseRecommender(algorithm, algo_params=params, random_state=0).fit(X_train)
    rmse = rec.rmse(X_train, X_test)
    assert rmse < rmse_item < rmse_global
    assert rec.score(X_train, X_test) == -rmse


@pytest.mark.parametrize("algorithm", ["SVD", "SVDpp", "BaselineOnly", "KNNBaseline"])
def test_predict_pairs_matches_surprise(data, algorithm):
    _, _, X_train, X_test = data
    params = {"n_factors": 5, "n_epochs": 5} if algorithm == "SVDpp" else None
    rec = SurpriseRecommender(algorithm, algo_params=params, random_state=0).fit(X_train)
    rows = np.repeat(np.arange(X_test.shape[0]), np.diff(X_test.indptr))[:300]
    cols = X_test.indices[:300]
    ours = rec.predict_pairs(rows, cols)
    ts = rec.algorithm_.trainset
    native = np.array([rec.algorithm_.predict(int(u), int(i)).est for u, i in zip(rows, cols)])
    np.testing.assert_allclose(ours, native, atol=1e-9)
    assert ts.n_users == X_train.shape[0]


@pytest.mark.parametrize("algorithm", ["BaselineOnly", "KNNBaseline"])
def test_baseline_fold_in_of_training_rows_is_exact(data, algorithm):
    """Surprise's ALS ends with the user step, so refolding a training row is exact."""
    _, _, X_train, X_test = data
    rec = SurpriseRecommender(algorithm).fit(X_train)
    via_rows = rec.predict(X_train, mask=X_test).data
    rows = np.repeat(np.arange(X_test.shape[0]), np.diff(X_test.indptr))
    via_ids = rec.predict_pairs(rows, X_test.indices)
    np.testing.assert_allclose(via_rows, via_ids, atol=1e-9)


def test_empty_rows_get_the_baseline(data):
    _, _, X_train, _ = data
    rec = SurpriseRecommender(random_state=0).fit(X_train)
    empty = sp.csr_matrix((3, X_train.shape[1]))
    pred = rec.predict(empty)
    expected = np.clip(rec.global_mean_ + rec.item_bias_, *rec.rating_scale_)
    np.testing.assert_allclose(pred, np.tile(expected, (3, 1)))
    base = SurpriseRecommender("BaselineOnly").fit(X_train)
    np.testing.assert_allclose(base.predict(empty)[0],
                               np.clip(base.global_mean_ + base.item_bias_, *base.rating_scale_))


@pytest.mark.parametrize("algorithm, params", [
    ("SVD", None), ("SVD", {"biased": False, "n_factors": 5}), ("SVDpp", {"n_factors": 4, "n_epochs": 3}),
    ("BaselineOnly", None), ("KNNBaseline", None)])
def test_predict_mask_matches_dense(data, algorithm, params):
    """The dense path (matrix products) and the per-entry path agree, empty rows included."""
    _, _, X_train, X_test = data
    rec = SurpriseRecommender(algorithm, algo_params=params, random_state=0).fit(X_train)
    rows_in = sp.vstack([X_train[:40], sp.csr_matrix((2, X_train.shape[1]))], format="csr")
    mask = sp.vstack([X_test[:40], sp.csr_matrix(np.ones((2, X_train.shape[1])))], format="csr")
    r, c = mask.nonzero()
    np.testing.assert_allclose(rec.predict(rows_in, mask=mask).toarray()[r, c],
                               rec.predict(rows_in)[r, c], atol=1e-10)


def test_predict_mask_shape(data):
    _, _, X_train, X_test = data
    rec = SurpriseRecommender(random_state=0).fit(X_train)
    dense = rec.predict(X_train[:40])
    masked = rec.predict(X_train[:40], mask=X_test[:40])
    assert sp.issparse(masked) and masked.shape == dense.shape
    r, c = X_test[:40].nonzero()
    np.testing.assert_allclose(masked.toarray()[r, c], dense[r, c])
    assert masked.nnz == X_test[:40].nnz
    # dense and sparse inputs agree
    np.testing.assert_allclose(rec.predict(X_train[:40].toarray()), dense)


def test_raw_ids_preserved(data):
    _, _, X_train, _ = data
    n, m = X_train.shape
    uids = np.array([f"user{k}" for k in range(n)])
    iids = np.arange(m) * 10 + 7
    a = SurpriseRecommender(random_state=3).fit(X_train, user_ids=uids, item_ids=iids)
    b = SurpriseRecommender(random_state=3).fit(X_train)
    np.testing.assert_array_equal(a.user_ids_, uids)
    np.testing.assert_array_equal(a.item_ids_, iids)
    np.testing.assert_allclose(a.predict_pairs(["user5", "user9"], [17, 7 + 10 * (m - 1)]),
                               b.predict_pairs([5, 9], [1, m - 1]))
    # an unknown user gets the item baseline, an unknown item the user baseline
    # (and a warning says so)
    with pytest.warns(UserWarning, match="user ids requested match no user.*'nobody'"):
        unknown_user = a.predict_pairs(["nobody"], [7])[0]
    assert unknown_user == pytest.approx(np.clip(a.global_mean_ + a.item_bias_[0], 1, 5))
    with pytest.warns(UserWarning, match="item ids requested match no item.*-1"):
        unknown_item = a.predict_pairs(["user5"], [-1])[0]
    assert unknown_item == pytest.approx(np.clip(a.global_mean_ + a.user_bias_[5], 1, 5))
    with pytest.raises(ValueError, match="user_ids must have one id per row"):
        SurpriseRecommender().fit(X_train, user_ids=uids[:-1])
    with pytest.raises(ValueError, match="must be unique"):
        SurpriseRecommender().fit(X_train, item_ids=np.zeros(m))


def test_reproducible_with_seed(data):
    _, _, X_train, X_test = data
    r1 = SurpriseRecommender(random_state=5).fit(X_train).rmse(X_train, X_test)
    r2 = SurpriseRecommender(random_state=5).fit(X_train).rmse(X_train, X_test)
    assert r1 == r2


def test_pipeline_with_identity_mapper(data):
    _, a, X_train, X_test = data
    pipe = Pipeline([("privacy", FunctionTransformer(accept_sparse=True)),
                     ("recommender", SurpriseRecommender(random_state=0))])
    pipe.fit(X_train, a)  # the private attribute goes to fit and is ignored by the recommender
    direct = SurpriseRecommender(random_state=0).fit(X_train)
    assert pipe.score(X_train, X_test) == pytest.approx(direct.score(X_train, X_test))
    # new users (not in fit) through the pipeline: fold-in
    n = X_train.shape[0] // 2
    pipe.fit(X_train[:n], a[:n])
    s = pipe.score(X_train[n:], X_test[n:])
    assert -1.2 < s < -0.5


def test_rating_scale(data):
    _, _, X_train, _ = data
    rec = SurpriseRecommender(rating_scale=(1, 5), random_state=0).fit(X_train)
    assert rec.rating_scale_ == (1.0, 5.0)
    pred = rec.predict(X_train[:20])
    assert pred.min() >= 1 and pred.max() <= 5
    inferred = SurpriseRecommender(random_state=0).fit(X_train)
    assert inferred.rating_scale_ == (float(X_train.data.min()), float(X_train.data.max()))


def test_bad_inputs(data):
    _, _, X_train, X_test = data
    with pytest.raises(ValueError, match="X has no ratings"):
        SurpriseRecommender().fit(sp.csr_matrix((5, 4)))
    with pytest.raises(ValueError):
        SurpriseRecommender().fit(np.zeros((0, 4)))
    Xn = X_train[:10].toarray()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SurpriseRecommender().fit(Xn)
    with pytest.raises(ValueError, match=r"outside the rating scale \[1.0, 4.0\]"):
        SurpriseRecommender(rating_scale=(1, 4)).fit(X_train)
    with pytest.raises(ValueError, match=r"low < high, got \(5, 1\)"):
        SurpriseRecommender(rating_scale=(5, 1)).fit(X_train)
    with pytest.raises(InvalidParameterError, match="algorithm"):
        SurpriseRecommender("SVDplusplus").fit(X_train)
    with pytest.raises(ValueError, match="must not contain 'random_state'"):
        SurpriseRecommender(algo_params={"random_state": 1}).fit(X_train)
    with pytest.raises(ValueError, match="n_factorz"):
        SurpriseRecommender(algo_params={"n_factorz": 3}).fit(X_train)
    rec = SurpriseRecommender(random_state=0).fit(X_train)
    with pytest.raises(ValueError, match=r"y \(held-out ratings\) has shape \(10, 80\) but X has shape \(600, 80\)"):
        rec.score(X_train, X_test[:10])
    with pytest.raises(ValueError, match="y has no held-out ratings"):
        rec.rmse(X_train, sp.csr_matrix(X_train.shape))
    with pytest.raises(ValueError, match="80 features"):
        rec.predict(X_train[:, :10])
    with pytest.raises(ValueError, match="users and items must have the same length"):
        rec.predict_pairs([1, 2], [3])


def test_algorithm_instance():
    import surprise

    X, _, _ = make_ratings(200, 30, random_state=0)
    rec = SurpriseRecommender(surprise.SVD(n_factors=3, random_state=0)).fit(X)
    assert rec.item_factors_.shape == (30, 3)
    with pytest.raises(ValueError, match="got an instance of NMF"):
        SurpriseRecommender(surprise.NMF()).fit(X)


# --------------------------------------------------------------- holdout_split


def test_holdout_split_properties():
    X, _, _ = make_ratings(500, 60, random_state=0)
    tr, te = holdout_split(X, 0.25, random_state=1)
    assert (tr + te != X).nnz == 0
    assert tr.multiply(te).nnz == 0
    assert tr.getnnz(axis=1).min() >= 1
    assert te.nnz / X.nnz == pytest.approx(0.25, abs=0.02)
    # per-user: floor or ceil of fraction * n_u, capped by min_train
    n = X.getnnz(axis=1)
    h = te.getnnz(axis=1)
    cap = np.maximum(n - 1, 0)
    assert np.all((h == np.minimum(np.floor(0.25 * n), cap)) | (h == np.minimum(np.ceil(0.25 * n), cap)))
    tr2, te2 = holdout_split(X, 0.25, random_state=1)
    assert (tr2 != tr).nnz == 0 and (te2 != te).nnz == 0
    tr3, _ = holdout_split(X, 0.25, random_state=2)
    assert (tr3 != tr).nnz > 0


def test_holdout_split_min_train_and_dense():
    X = np.array([[1, 2, 3, 0], [4, 0, 0, 0], [0, 0, 0, 0]], dtype=float)
    tr, te = holdout_split(X, 1.0, min_train=2, random_state=0)
    assert tr.getnnz(axis=1).tolist() == [2, 1, 0]
    assert te.getnnz(axis=1).tolist() == [1, 0, 0]
    tr, te = holdout_split(X, 0.0, random_state=0)
    assert te.nnz == 0
    with pytest.raises(ValueError, match="fraction must be <= 1, got 1.5"):
        holdout_split(X, 1.5)
    with pytest.raises(ValueError, match="min_train must be >= 0, got -1"):
        holdout_split(X, 0.1, min_train=-1)


def test_metadata_routing_of_raw_ids(data):
    import sklearn

    _, a, X_train, _ = data
    uids = np.array([f"u{k}" for k in range(X_train.shape[0])])
    with sklearn.config_context(enable_metadata_routing=True):
        rec = SurpriseRecommender(random_state=0).set_fit_request(user_ids=True)
        pipe = Pipeline([("privacy", FunctionTransformer(accept_sparse=True)), ("recommender", rec)])
        pipe.fit(X_train, a, user_ids=uids)
    np.testing.assert_array_equal(pipe[-1].user_ids_, uids)


def test_user_based_knn_warns_on_fold_in(data):
    _, _, X_train, X_test = data
    rec = SurpriseRecommender("KNNBaseline", algo_params={"sim_options": {"user_based": True}})
    rec.fit(X_train[:200])
    with pytest.warns(UserWarning, match="cannot fold in new rows"):
        pred = rec.predict(X_train[:5])
    np.testing.assert_allclose(
        pred, np.clip(rec.global_mean_ + rec._baseline_fold_in(rec._check_X(X_train[:5]))[:, None]
                      + rec.item_bias_[None, :], *rec.rating_scale_))
    # known users by id still use the neighbourhoods (Surprise's own estimate)
    native = rec.algorithm_.predict(3, 7).est
    assert rec.predict_pairs([3], [7])[0] == pytest.approx(native)
