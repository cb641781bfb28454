import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_predict, cross_val_score

from privrelease.datasets import POLITICS_TV_GENRES, make_politics_tv, make_ratings


def gini(x):
    """Gini coefficient of non-negative counts (0 = all equal)."""
    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    return float((2 * np.arange(1, n + 1) - n - 1) @ x / (n * x.sum()))


def cv_auc(X, a, cv=5):
    clf = LogisticRegression(solver="liblinear")
    return cross_val_score(clf, X, a, cv=cv, scoring="roc_auc").mean()


@pytest.fixture(scope="module")
def default_data():
    return make_ratings(600, 150, random_state=0)


def test_make_ratings_shapes_and_types(default_data):
    X, a, names = default_data
    assert sp.issparse(X) and X.format == "csr"
    assert X.shape == (600, 150)
    assert X.dtype == np.float64
    assert a.shape == (600,) and a.dtype == np.int64
    assert set(np.unique(a)) == {0, 1}
    assert names == [f"item_{i}" for i in range(150)]
    # integer ratings in the scale, no stored zeros
    assert np.all(X.data >= 1) and np.all(X.data <= 5)
    assert np.array_equal(X.data, np.rint(X.data))
    assert np.all(X.data != 0)


def test_every_user_and_item_has_a_rating(default_data):
    X, _, _ = default_data
    assert X.getnnz(axis=1).min() >= 1
    assert X.getnnz(axis=0).min() >= 1
    # coverage also with many items and very few ratings per user
    X2, _, _ = make_ratings(30, 400, mean_ratings_per_user=2, random_state=1)
    assert X2.getnnz(axis=0).min() >= 1
    assert X2.getnnz(axis=1).min() >= 1


def test_reproducible_with_seed():
    X1, a1, _ = make_ratings(200, 40, random_state=7)
    X2, a2, _ = make_ratings(200, 40, random_state=7)
    X3, _, _ = make_ratings(200, 40, random_state=8)
    assert (X1 != X2).nnz == 0 and np.array_equal(a1, a2)
    assert (X1 != X3).nnz > 0
    # a Generator is accepted as well
    X4, _, _ = make_ratings(200, 40, random_state=np.random.default_rng(7))
    assert X4.shape == (200, 40)


def test_return_dense_matches_sparse():
    Xs, a, _ = make_ratings(100, 30, random_state=3)
    Xd, ad, _ = make_ratings(100, 30, random_state=3, return_dense=True)
    assert isinstance(Xd, np.ndarray)
    np.testing.assert_array_equal(Xd, Xs.toarray())
    np.testing.assert_array_equal(a, ad)


def test_rating_scale_respected():
    X, _, _ = make_ratings(200, 50, rating_scale=(1, 10), noise=2.0, random_state=0)
    assert X.data.min() >= 1 and X.data.max() <= 10
    # a wide scale with high noise uses both ends
    assert X.data.min() == 1 and X.data.max() == 10


def test_popularity_and_activity_are_skewed():
    X, _, _ = make_ratings(2000, 200, popularity_skew=1.0, activity_skew=1.0, random_state=0)
    item_counts = np.sort(X.getnnz(axis=0))[::-1]
    user_counts = X.getnnz(axis=1)
    # the 10 % most popular items hold far more than 10 % of the ratings
    assert item_counts[:20].sum() / item_counts.sum() > 0.3
    assert gini(item_counts) > 0.4
    assert gini(user_counts) > 0.4
    # mean activity close to the requested mean
    assert 15 < user_counts.mean() < 25

    flat, _, _ = make_ratings(2000, 200, popularity_skew=0.0, activity_skew=0.0,
                              selection_strength=0.0, random_state=0)
    assert gini(flat.getnnz(axis=0)) < 0.1
    np.testing.assert_array_equal(flat.getnnz(axis=1), 20)


def test_multiclass_attribute_proportions():
    _, a, _ = make_ratings(3000, 20, attribute_proportion=[1, 2, 1], random_state=0)
    freq = np.bincount(a) / a.size
    np.testing.assert_allclose(freq, [0.25, 0.5, 0.25], atol=0.03)
    _, a2, _ = make_ratings(3000, 20, attribute_proportion=0.2, random_state=0)
    assert abs(a2.mean() - 0.2) < 0.03


def test_attribute_predictable_only_when_strength_positive():
    X1, a1, _ = make_ratings(1000, 200, attribute_strength=1.0, random_state=0)
    X0, a0, _ = make_ratings(1000, 200, attribute_strength=0.0, random_state=0)
    assert cv_auc(X1, a1) > 0.8
    assert abs(cv_auc(X0, a0) - 0.5) < 0.08
    # what is rated (not only how) leaks: rated-indicators alone predict it
    B1 = X1.copy()
    B1.data[:] = 1.0
    assert cv_auc(B1, a1) > 0.8


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_users": 0}, "n_users must be >= 1, got 0"),
        ({"n_items": -3}, "n_items must be >= 1, got -3"),
        ({"n_factors": 0}, "n_factors"),
        ({"attribute_strength": -0.5}, r"attribute_strength must be >= 0, got -0.5"),
        ({"attribute_proportion": 1.0}, "attribute_proportion must be < 1"),
        ({"attribute_proportion": [1.0]}, r"at least 2 class weights, got \[1.0\]"),
        ({"attribute_proportion": [1.0, -1.0]}, r"attribute_proportion\[1\] must be > 0"),
        ({"mean_ratings_per_user": 0}, "mean_ratings_per_user must be > 0"),
        ({"mean_ratings_per_user": 500}, "must be <= n_items=200, got 500"),
        ({"popularity_skew": -1}, "popularity_skew must be >= 0, got -1"),
        ({"activity_skew": -1}, "activity_skew"),
        ({"noise": -0.1}, "noise must be >= 0"),
        ({"rating_scale": (5, 1)}, r"low < high, got \(5, 1\)"),
        ({"rating_scale": (0, 5)}, r"rating_scale\[0\] must be >= 1, got 0"),
        ({"rating_scale": 5}, "pair"),
        ({"random_state": -1}, "random_state"),
    ],
)
def test_make_ratings_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_ratings(**kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"n_users": 2.5}, {"n_users": "10"}, {"attribute_strength": None},
               {"rating_scale": (1.5, 5)}, {"random_state": "seed"}]
)
def test_make_ratings_bad_types(kwargs):
    with pytest.raises(TypeError):
        make_ratings(**kwargs)


# ---------------------------------------------------------------- politics


@pytest.fixture(scope="module")
def politics():
    return make_politics_tv(random_state=0, return_genres=True)


def test_politics_counts(politics):
    X, a, shows, genres = politics
    assert sp.issparse(X) and X.format == "csr"
    assert X.shape == (1218, 50)
    assert np.count_nonzero(a == 0) == 744 and np.count_nonzero(a == 1) == 474
    assert len(shows) == len(set(shows)) == 50
    assert len(genres) == 50 and set(genres) == set(POLITICS_TV_GENRES)
    assert len(POLITICS_TV_GENRES) == 6
    sizes = np.unique(genres, return_counts=True)[1]
    assert sizes.min() >= 6
    assert set(np.unique(X.data)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert X.getnnz(axis=1).min() >= 1
    # classes are shuffled, not in blocks
    assert 0.3 < a[:609].mean() < 0.5


def test_politics_top_five_shows(politics):
    X, _, shows, _ = politics
    top5 = {shows[i] for i in np.argsort(-X.getnnz(axis=0))[:5]}
    assert top5 == {"The Daily Show with Jon Stewart", "The Colbert Report", "NFL",
                    "The Big Bang Theory", "Family Guy"}


def test_politics_binarized():
    X, a, shows = make_politics_tv(random_state=0)
    B, a_b, shows_b = make_politics_tv(random_state=0, binarize=True)
    assert set(np.unique(B.toarray())) == {0.0, 1.0}
    np.testing.assert_array_equal(B.toarray(), (X.toarray() >= 4).astype(float))
    np.testing.assert_array_equal(a, a_b)
    assert shows == shows_b


def test_politics_privacy_threat_like_paper(politics):
    """Binarized top-5 shows: MI with affiliation ~0.19 bits, MAP ~71 % (Sec. VI-C)."""
    X, a, _, _ = politics
    B = (X.toarray() >= 4).astype(int)
    top5 = np.argsort(-X.getnnz(axis=0))[:5]
    keys = B[:, top5] @ (2 ** np.arange(5))
    joint = np.zeros((32, 2))
    np.add.at(joint, (keys, a), 1.0)
    joint /= joint.sum()
    outer = joint.sum(1, keepdims=True) @ joint.sum(0, keepdims=True)
    nz = joint > 0
    mi = float((joint[nz] * np.log2(joint[nz] / outer[nz])).sum())
    map_accuracy = joint.max(axis=1).sum()
    assert 0.08 < mi < 0.35
    assert 0.65 < map_accuracy < 0.80
    # roughly a third of the shows strongly tied to the attribute
    # (standardised difference of mean rating, 0 = not rated, between the classes)
    R = X.toarray()
    d = (R[a == 0].mean(axis=0) - R[a == 1].mean(axis=0)) / R.std(axis=0)
    assert 12 <= np.count_nonzero(np.abs(d) > 0.25) <= 22
    assert np.count_nonzero(np.abs(d) < 0.1) >= 10
    shows = politics[2]
    assert d[shows.index("The Colbert Report")] > 0.25
    assert d[shows.index("Fox News")] < -0.25
    assert d[shows.index("Swamp Loggers")] < -0.25


def test_politics_reproducible_and_bad_args():
    X1, a1, _ = make_politics_tv(random_state=5)
    X2, a2, _ = make_politics_tv(random_state=5)
    assert (X1 != X2).nnz == 0 and np.array_equal(a1, a2)
    with pytest.raises(TypeError, match="binarize must be a bool, got 'yes'"):
        make_politics_tv(binarize="yes")
    with pytest.raises(TypeError, match="random_state"):
        make_politics_tv(random_state=1.5)


# ---------------------------------------------------------------- realistic preset
from privrelease.datasets import REALISTIC_ATTRIBUTES, make_realistic_ratings  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import MaxAbsScaler  # noqa: E402


@pytest.fixture(scope="module")
def realistic():
    return make_realistic_ratings(1500, 1700, random_state=1)


def test_realistic_shapes_attributes_and_coverage(realistic):
    X, A, names = realistic
    assert sp.issparse(X) and X.format == "csr" and X.shape == (1500, 1700) and len(names) == 1700
    assert list(A.columns) == list(REALISTIC_ATTRIBUTES) and A.dtypes.eq(np.int64).all()
    assert np.all(X.data >= 1) and np.all(X.data <= 5) and np.array_equal(X.data, np.rint(X.data))
    assert X.getnnz(axis=1).min() >= 20 and X.getnnz(axis=0).min() >= 1
    # class shares follow the weights (binomial sd ~0.012) and the attributes are drawn independently
    for name, w in REALISTIC_ATTRIBUTES.items():
        np.testing.assert_allclose(np.bincount(A[name], minlength=len(w)) / 1500, w, atol=0.04)
    joint = pd.crosstab(A["gender"], A["age_band"], normalize=True).to_numpy()
    np.testing.assert_allclose(joint, np.outer(*REALISTIC_ATTRIBUTES.values()), atol=0.04)


def test_realistic_activity_is_pareto_and_items_have_a_long_tail(realistic):
    X, _, _ = realistic
    counts = X.getnnz(axis=1)
    # n_u = floor(20 U^(-1/1.25)) >= 40 exactly when U <= 2^-1.25: P = 0.420 (sd 0.013 over 1500 users)
    assert np.mean(counts >= 40) == pytest.approx(2 ** -1.25, abs=0.05)
    assert np.mean(counts >= 200) == pytest.approx(10 ** -1.25, abs=0.025)
    assert counts.max() > 10 * np.median(counts)
    # the less popular half of the items holds under a sixth of the ratings
    m = np.sort(X.getnnz(axis=0))
    assert m[: m.size // 2].sum() < m.sum() / 6 and np.mean(m <= 10) > 0.05


def test_realistic_attributes_act_through_many_weak_items(realistic):
    X, A, _ = realistic
    g = A["gender"].to_numpy()
    # no single item gives gender away ...
    B = (X != 0).astype(float).tocsc()
    single = []
    for j in np.flatnonzero((X.getnnz(axis=0) >= 75) & (X.getnnz(axis=0) <= 1425)):
        a = roc_auc_score(g, B[:, j].toarray().ravel())
        single.append(max(a, 1 - a))
    assert len(single) > 200 and max(single) < 0.72
    # ... but the whole profile does, for both attributes (macro AUC for the three age bands)
    assert cv_auc(X, g, cv=3) > 0.78
    clf = make_pipeline(MaxAbsScaler(), LogisticRegression(max_iter=2000))
    proba = cross_val_predict(clf, X, A["age_band"], cv=3, method="predict_proba")
    assert roc_auc_score(A["age_band"], proba, multi_class="ovr") > 0.7


def test_realistic_without_preferences_leaks_nothing():
    X, A, _ = make_realistic_ratings(800, 600, preference_scale=0.0, random_state=2)
    assert abs(cv_auc(X, A["gender"].to_numpy(), cv=3) - 0.5) < 0.08


def test_realistic_reproducible_custom_attributes_and_errors():
    a = make_realistic_ratings(200, 300, attributes={"x": (1, 1, 1, 1)}, random_state=3)
    b = make_realistic_ratings(200, 300, attributes={"x": (1, 1, 1, 1)}, random_state=3)
    assert (a[0] != b[0]).nnz == 0 and a[1].equals(b[1]) and list(a[1].columns) == ["x"]
    assert set(a[1]["x"]) == {0, 1, 2, 3}
    with pytest.raises(TypeError, match="non-empty dict"):
        make_realistic_ratings(10, 30, attributes=[0.5, 0.5])
    with pytest.raises(ValueError, match="at least 2 class weights, got 0.5"):
        make_realistic_ratings(10, 30, attributes={"g": 0.5})
    with pytest.raises(ValueError, match="min_ratings_per_user must be <= n_items=15, got 20"):
        make_realistic_ratings(10, 15)
    with pytest.raises(ValueError, match="activity_tail"):
        make_realistic_ratings(10, 300, activity_tail=0)


# ---------------------------------------------------------------- attributes entangled with bias and taste
from privrelease.datasets._synthetic import _check_attributes, _check_shift, _realistic_latents  # noqa: E402


def _digest(X, A):
    import hashlib
    h = hashlib.sha256()
    for a in (X.indptr, X.indices, X.data, A.to_numpy()):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("seed, kwargs, digest", [
    # digests of make_realistic_ratings before the shifts existed (commit 9b00077)
    (0, dict(n_users=300, n_items=400), "bd112ca90d1506f2"),
    (1, dict(n_users=300, n_items=400), "604a547f1ff84ba2"),
    (7, dict(n_users=200, n_items=250, attributes={"x": (1, 2, 3)}), "2bdcb2c97e68c3e4"),
])
def test_realistic_zero_shift_is_the_unshifted_generator(seed, kwargs, digest):
    X, A, _ = make_realistic_ratings(random_state=seed, **kwargs)
    assert _digest(X, A) == digest
    X0, A0, _ = make_realistic_ratings(random_state=seed, attribute_bias_shift=0.0, attribute_taste_shift={},
                                       **kwargs)
    assert _digest(X0, A0) == digest


def test_realistic_shift_changes_only_what_it_shifts():
    # a nonzero shift is drawn from a spawned child stream: the attributes and the item preferences are the
    # same draws, the latent tastes differ exactly by the class shifts
    w = _check_attributes({"g": (0.7, 0.3), "age": (0.3, 0.45, 0.25)})
    zero = {k: 0.0 for k in w}
    base = _realistic_latents(500, 80, w, 6, 0.3, 0.25, 0.45, zero, zero, np.random.default_rng(4))
    bs, ts = {"g": 0.2, "age": 0.3}, {"g": 0.0, "age": 0.5}
    shifted = _realistic_latents(500, 80, w, 6, 0.3, 0.25, 0.45, bs, ts, np.random.default_rng(4))
    A = base[0]
    np.testing.assert_array_equal(shifted[0], A)
    for d0, d1 in zip(base[1], shifted[1]):
        np.testing.assert_array_equal(d0, d1)
    np.testing.assert_array_equal(base[3], shifted[3])  # item tastes
    np.testing.assert_array_equal(base[5], shifted[5])  # item biases
    sh = shifted[6]
    expect_b = sh["g"][0][A[:, 0]] + sh["age"][0][A[:, 1]]
    expect_t = sh["g"][1][A[:, 0]] + sh["age"][1][A[:, 1]]
    np.testing.assert_allclose(shifted[4] - base[4], expect_b, atol=1e-12)
    np.testing.assert_allclose(shifted[2] - base[2], expect_t, atol=1e-12)
    for name, wk in w.items():
        beta, t = sh[name]
        # centred with the class weights, weighted root mean square equal to the requested shift
        assert abs(wk @ beta) < 1e-12 and np.allclose(wk @ t, 0.0, atol=1e-12)
        assert np.sqrt(wk @ beta ** 2) == pytest.approx(bs[name])
        assert np.sqrt(wk @ (t ** 2).sum(axis=1)) == pytest.approx(ts[name], abs=1e-12)


def test_realistic_class_means_of_bias_and_taste_match_the_shift():
    # large n: each class's mean bias and mean taste, minus the population's, is the class shift (sampling
    # error: sd 0.45 / sqrt(n_c) for the bias, sqrt(1/f) / sqrt(n_c) per taste coordinate)
    w = _check_attributes({"age": (0.3, 0.45, 0.25)})
    n, f = 60_000, 5
    A, _, P, _, b, _, sh = _realistic_latents(n, 20, w, f, 0.3, 0.25, 0.45, {"age": 0.25}, {"age": 0.4},
                                              np.random.default_rng(11))
    beta, t = sh["age"]
    for c in range(3):
        members = A[:, 0] == c
        se_b, se_t = 0.45 / np.sqrt(members.sum()), np.sqrt(1 / f / members.sum())
        assert abs(b[members].mean() - b.mean() - beta[c]) < 5 * se_b
        assert np.all(np.abs(P[members].mean(axis=0) - P.mean(axis=0) - t[c]) < 5 * se_t)
    assert np.abs(beta).max() > 0.1 and np.linalg.norm(t, axis=1).max() > 0.2  # the shifts are not tiny


def test_realistic_class_dependent_shift_raises_the_attackers_auc():
    # no item preferences: only the shifts tie the ratings to gender
    kw = dict(n_users=700, n_items=300, preference_scale=0.0, random_state=5)
    X0, A0, _ = make_realistic_ratings(**kw)
    X1, A1, _ = make_realistic_ratings(attribute_bias_shift={"gender": 0.4}, attribute_taste_shift=0.6, **kw)
    np.testing.assert_array_equal(A0.to_numpy(), A1.to_numpy())
    g = A1["gender"].to_numpy()
    auc0, auc1 = cv_auc(X0, g, cv=3), cv_auc(X1, g, cv=3)
    assert auc1 > auc0 + 0.05 and auc1 > 0.6


def test_realistic_shift_errors():
    w = _check_attributes({"g": (1, 1)})
    assert _check_shift({"g": 0.5}, "attribute_bias_shift", w) == {"g": 0.5}
    assert _check_shift(0.2, "attribute_bias_shift", w) == {"g": 0.2}
    with pytest.raises(ValueError, match="attribute_bias_shift must be >= 0, got -0.1"):
        make_realistic_ratings(10, 30, attribute_bias_shift=-0.1)
    with pytest.raises(TypeError, match="attribute_taste_shift must be a real number, got 'big'"):
        make_realistic_ratings(10, 30, attribute_taste_shift="big")
    with pytest.raises(ValueError, match=r"attribute_taste_shift names unknown attributes \['age'\]"):
        make_realistic_ratings(10, 30, attributes={"g": (1, 1)}, attribute_taste_shift={"age": 0.3})
    with pytest.raises(ValueError, match=r"attribute_bias_shift\['g'\] must be a number, got NaN"):
        make_realistic_ratings(10, 30, attributes={"g": (1, 1)}, attribute_bias_shift={"g": float("nan")})
