"""The user path on small stand-ins of real data sets' shapes (benchmarks/bench_real_shapes.py runs them at size).

Each test is a problem found on a stand-in: it fails on the code before its fix.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease import QuantizedPrivacyMapper


def _implicit(n_users=240, n_items=60, seed=0):
    """Implicit feedback: every stored rating is 1; which items a user picks depends on a binary attribute."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_users)
    taste = rng.integers(0, 3, n_users)          # three tastes, each its own block of 20 items
    p = np.full((n_users, n_items), 0.03)
    for t in range(3):
        p[taste == t, 20 * t:20 * (t + 1)] = 0.5
    p[:, :5] += 0.3 * y[:, None]                 # the attribute shows in the first items
    X = sp.csr_matrix((rng.random((n_users, n_items)) < p).astype(float))
    X[np.flatnonzero(X.getnnz(axis=1) == 0), 0] = 1.0
    return X, y


def test_implicit_feedback_warns_that_the_taste_space_sees_one_user():
    # every rating 1: the taste model predicts 1 for every user and item, so every user sat at one point and the
    # default fit made ONE cluster (the same release for everybody) without a word
    X, y = _implicit()
    with pytest.warns(UserWarning, match=r"every rating of the 240 labeled users is 1\.0.*metric='hamming'"):
        m = QuantizedPrivacyMapper(random_state=0).fit(X, y)
    assert m.n_clusters_ == 1
    # what the warning advises tells the users apart (and still meets perfect privacy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        for kw in ({"metric": "hamming"}, {"space": "raw"}):
            m = QuantizedPrivacyMapper(random_state=0, **kw).fit(X, y)
            assert m.n_clusters_ > 1 and m.leakage_ <= 1e-12
            assert len({tuple(r) for r in (m.transform(X) != 0).toarray().astype(int)}) > 1


def test_ratings_on_a_scale_are_not_warned_about():
    X, y = _implicit()
    X.data = 1.0 + (np.arange(X.nnz) % 5)        # the same items, now rated 1..5
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert QuantizedPrivacyMapper(random_state=0).fit(X, y).n_clusters_ > 1


def test_many_class_perfect_privacy_lp_is_solved_by_the_interior_point(monkeypatch):
    # an occupation of 21 classes x 200 clusters: HiGHS's dual simplex took 63 s on the |A| - 1 blocks of
    # independence equations, its interior point (crossover to a vertex) 17 s for the same optimum
    import privrelease.mapping._lp as lp
    from privrelease.mapping import solve_mapping

    rng = np.random.default_rng(0)
    n_a, k = 21, 24
    prior = rng.dirichlet(np.full(n_a * k, 0.7)).reshape(n_a, k)
    pts = rng.normal(size=(k, 3))
    D = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    real, methods = lp.linprog, []

    def spy(*args, **kwargs):
        methods.append(kwargs.get("method"))
        return real(*args, **kwargs)

    monkeypatch.setattr(lp, "linprog", spy)
    lp._PP_CACHE.clear()
    res = solve_mapping(prior, D, max_leakage=0.0)
    assert methods[0] == "highs-ipm"
    assert res.leakage <= 1e-12 and res.certificate["gap_bits"] <= 1e-9
    # the dual simplex's optimum, for comparison: the same distortion
    monkeypatch.setattr(lp, "linprog", lambda *a, **kw: real(*a, **{**kw, "method": "highs"}))
    lp._PP_CACHE.clear()
    ref = solve_mapping(prior, D, max_leakage=0.0)
    assert abs(res.distortion - ref.distortion) <= 1e-9 * D.max()
    lp._PP_CACHE.clear()


@pytest.mark.parametrize("as_frame", [False, True])
def test_a_pivoted_rating_table_with_nan_for_unrated_is_refused_saying_zero_means_unrated(as_frame):
    # the dense form of Jester-like ratings, as DataFrame.pivot gives it: NaN in every unrated cell. scikit-learn's
    # message sent the user to HistGradientBoostingClassifier
    import pandas as pd

    from privrelease import BlurMe, BlurMore

    X, y = _implicit()
    D = X.toarray() * (1.0 + np.arange(X.shape[1]) % 3)
    D[D == 0] = np.nan
    D = pd.DataFrame(D) if as_frame else D
    first = np.argwhere(np.isnan(np.asarray(D, dtype=float)))[0]
    for est in (QuantizedPrivacyMapper(random_state=0), BlurMe(random_state=0), BlurMore(random_state=0)):
        with pytest.raises(ValueError, match=rf"NaN entries \(the first at row {first[0]}, column {first[1]}\); in "
                                             r"a rating matrix 0 means 'not rated'.*fillna\(0\)"):
            est.fit(D, y)
    filled = D.fillna(0) if as_frame else np.nan_to_num(D, nan=0.0)   # what the message says works
    fitted = QuantizedPrivacyMapper(random_state=0).fit(filled, y)
    with pytest.raises(ValueError, match="NaN entries"):
        fitted.transform(D)
    assert fitted.transform(filled).shape == D.shape
