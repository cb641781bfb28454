"""Hostile inputs, eighth audit: memory (a sparse users x items matrix densified, users x items or items x items
arrays allocated without asking whether they fit), the rating scale's 0 ("not rated") under one rule, ratings off
the fitted scale, an attacker scored on labels spelled otherwise, and the mapping module's builders at their edges.
One test per finding (earlier audits: test_hostile_inputs.py to test_hostile_inputs7.py, test_hostile_outputs.py,
test_persistence_format.py).

The memory tests never allocate a large array: they lower the memory ``check_allocation`` believes the machine
has, or make a dense copy of the users x items rows raise."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from privrelease import QuantizedPrivacyMapper

N_USERS, N_ITEMS = 240, 400


@pytest.fixture(scope="module")
def sparse_ratings():
    rng = np.random.default_rng(0)
    y = np.arange(N_USERS) % 3
    rows = np.repeat(np.arange(N_USERS), 12)
    cols = rng.integers(0, N_ITEMS, rows.size)
    vals = rng.integers(1, 6, rows.size).astype(float)
    vals[(y[rows] == 1) & (cols < 40)] = 5.0        # a class signal on the first items
    X = sp.csr_matrix((vals, (rows, cols)), shape=(N_USERS, N_ITEMS))
    X.sum_duplicates()
    X.data = np.minimum(X.data, 5.0)
    return X, y


@pytest.fixture
def little_memory(monkeypatch):
    """check_allocation believes the machine has 512 KiB: a dense copy of the 240 x 400 rows (750 KiB) is refused,
    the profiles of a few clusters (4 x 400 items) are not."""
    from privrelease.utils import _validation

    monkeypatch.setattr(_validation, "_physical_memory", lambda: 512 * 1024)


def _forbid_dense_rows(monkeypatch):
    """A sparse matrix of more than 50 rows cannot be densified (cluster x item sums of a few rows still can)."""
    original = sp.csr_matrix.toarray

    def toarray(self, *args, **kwargs):
        if self.shape[0] > 50:
            raise AssertionError(f"a sparse matrix of shape {self.shape} was densified")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_matrix, "toarray", toarray)


@pytest.fixture
def no_dense_rows(monkeypatch):
    _forbid_dense_rows(monkeypatch)


# ---------------------------------------------------------------- QuantizedPrivacyMapper: sparse rows stay sparse
@pytest.mark.parametrize("params", [{}, {"class_bins": 2}, {"class_removal": 0.5}])
def test_transform_in_the_input_space_with_class_directions_never_densifies_the_rows(sparse_ratings, params,
                                                                                      monkeypatch):
    # each chunk of up to 16384 rows was made dense (users x items) to project out the class directions
    X, y = sparse_ratings
    m = QuantizedPrivacyMapper(n_clusters=4, delta=60.0, space="raw", clustering="attribute_free",
                               random_state=0, **params).fit(X, y)
    assert m.attribute_directions_.shape[0] == 2
    dense_cells = m._quantize(X.toarray())                 # the dense path, as before
    _forbid_dense_rows(monkeypatch)
    assert np.array_equal(m._quantize(X), dense_cells)     # the same cells, computed on the sparse rows
    out = m.transform(X)
    assert sp.issparse(out) and out.shape == X.shape


def test_the_model_prior_on_sparse_rows_keeps_them_sparse(sparse_ratings, no_dense_rows):
    # prior="model" densified the users x items rows of the input space (and hamming) for its logistic model
    X, y = sparse_ratings
    for params in ({"metric": "hamming"}, {"space": "raw", "clustering": "plain"}):
        m = QuantizedPrivacyMapper(n_clusters=4, delta=60.0, prior="model", random_state=0, **params).fit(X, y)
        assert m.prior_.shape == (3, m.n_clusters_) and np.isclose(m.prior_.sum(), 1.0)


def test_attribute_free_clustering_of_sparse_rows_asks_before_densifying(sparse_ratings, little_memory):
    # k-means on the projected rows needs them dense: numpy's bare MemoryError named no option
    X, y = sparse_ratings
    m = QuantizedPrivacyMapper(n_clusters=4, delta=60.0, space="raw", clustering="attribute_free", random_state=0)
    with pytest.raises(ValueError, match=r"clustering='attribute_free' in the input space of 240 users x 400 items"
                                         r".* would need 1\.46 MiB \(192,000 values"):
        m.fit(X, y)
    # the plain clustering of the same rows works on them sparse
    m.set_params(clustering="plain").fit(X, y)


def test_release_profiles_of_many_clusters_are_asked_for_before_they_are_built(sparse_ratings, monkeypatch):
    # clusters x items arrays (counts, sums, rates, values, kept cells): 200 clusters x 200,000 items peaked at
    # 1.85 GB for 1.2 MB of sparse ratings, without a word
    from privrelease.utils import _validation

    X, y = sparse_ratings
    monkeypatch.setattr(_validation, "_physical_memory", lambda: 256 * 1024)
    with pytest.raises(ValueError, match=r"the release profiles of 20 clusters x 400 items \(about 6 dense clusters "
                                         r"x items arrays; fewer clusters need less: n_clusters=\) would need"):
        QuantizedPrivacyMapper(n_clusters=20, delta=2.0, clustering="plain", random_state=0).fit(X, y)
    QuantizedPrivacyMapper(n_clusters=4, delta=2.0, clustering="plain", random_state=0).fit(X, y)  # 4 x 400: fits


# ---------------------------------------------------------------- SurpriseRecommender: dense outputs are asked for
def test_a_dense_prediction_of_every_cell_is_refused_when_it_cannot_fit(sparse_ratings, little_memory):
    from privrelease.recommender import SurpriseRecommender

    X, _ = sparse_ratings
    rec = SurpriseRecommender("BaselineOnly", rating_scale=(1, 5), random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"predict\(X\) of 240 users x 400 items without mask=.*pass mask="):
        rec.predict(X)
    assert rec.predict(X, mask=X).nnz == X.nnz       # the cells asked for, sparse


def test_an_item_based_knn_refuses_a_similarity_matrix_that_cannot_fit(sparse_ratings, little_memory):
    # Surprise computed the items x items similarities (then a copy in column order) without asking
    from privrelease.recommender import SurpriseRecommender

    X, _ = sparse_ratings
    with pytest.raises(ValueError, match=r"KNNBaseline's item similarities \(\d+ rated items squared, then 400 "
                                         r"items squared\) would need"):
        SurpriseRecommender("KNNBaseline", rating_scale=(1, 5)).fit(X)


# ---------------------------------------------------------------- the rating scale: 0 is "not rated", one rule
@pytest.mark.parametrize("scale", [(0, 10), (-5, 5), [0.0, 1.0]])
def test_a_rating_scale_holding_zero_is_refused_as_the_command_line_refuses_it(sparse_ratings, scale):
    from privrelease.evaluation import rmse_cost
    from privrelease.recommender import RatingsFrame, SurpriseRecommender
    from privrelease.utils import check_rating_scale

    X, y = sparse_ratings
    X10 = X * 2     # ratings 2..10: inside (0, 10), so only the 0 of the scale can be refused
    with pytest.raises(ValueError, match=r"holds 0: 0 is reserved for 'not rated'"):
        check_rating_scale(scale)
    with pytest.raises(ValueError, match=r"rating_scale = .* holds 0"):
        SurpriseRecommender(rating_scale=scale).fit(X10)
    with pytest.raises(ValueError, match=r"rating_range = .* holds 0"):
        rmse_cost(QuantizedPrivacyMapper(), X10, y, rating_range=scale)
    with pytest.raises(ValueError, match=r"holds 0"):
        RatingsFrame().to_surprise(X10, rating_scale=scale)
    assert check_rating_scale((-5, -1)) == (-5.0, -1.0)   # a scale of negative ratings holds no 0


# ---------------------------------------------------------------- ratings off the fitted scale
def test_transform_warns_of_ratings_off_the_scale_the_mapper_was_fitted_on(sparse_ratings):
    X, y = sparse_ratings
    m = QuantizedPrivacyMapper(n_clusters=4, delta=2.0, random_state=0).fit(X, y)
    assert m.rating_range_ == (1.0, 5.0)
    with pytest.warns(UserWarning, match=r"X holds \d+ rating\(s\) far outside the range the mapper was fitted "
                                         r"on \(1 to 5\), from 10 to 50"):
        m.transform(X * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.transform(X)                                              # on the scale: no word
        m.transform(X * 1.5)                                        # up to 7.5: a rating no labeled user gave
        m.transform(X.toarray())
        h = QuantizedPrivacyMapper(n_clusters=4, delta=60.0, metric="hamming", random_state=0).fit(X, y)
        h.transform(X * 10)                                         # hamming reads which items were rated only


# ---------------------------------------------------------------- InferenceAttack.score
def test_an_attacker_is_scored_on_the_classes_it_was_fitted_on(sparse_ratings):
    from privrelease.evaluation import InferenceAttack

    X, y = sparse_ratings
    y2 = y % 2
    a = InferenceAttack(random_state=0).fit(X, y2)
    # scikit-learn's "Mix of label input types (string and number)"
    with pytest.raises(TypeError, match=r"y holds strings \(for example '0'\) but the attacker was fitted on "
                                        r"numbers \[0, 1\]"):
        a.score(X, y2.astype(str))
    fm = np.where(y2 == 0, "f", "m")
    b = InferenceAttack(random_state=0).fit(X, fm)
    # classes it never saw scored an accuracy of 0.0, silently
    with pytest.raises(ValueError, match=r"class\(es\) \['a', 'b'\] that the attacker never saw"):
        b.score(X, np.where(y2 == 0, "a", "b"))
    # undisclosed users are not scored (scikit-learn's score counted -1 as a class never predicted)
    hidden = y2.copy()
    hidden[::2] = -1
    kept = hidden != -1
    expected = float(np.mean(a.predict(X[np.flatnonzero(kept)]) == y2[kept]))
    assert a.score(X, hidden) == pytest.approx(expected)
    w = np.linspace(1.0, 2.0, N_USERS)
    right = a.predict(X[np.flatnonzero(kept)]) == y2[kept]
    assert a.score(X, hidden, sample_weight=w) == pytest.approx(np.average(right, weights=w[kept]))


# ---------------------------------------------------------------- the mapping module's builders
def test_erasure_codes_below_their_range_are_refused_in_both_forms():
    from privrelease.mapping import erasure_alphabet, erasure_distortion

    # the dense form took an input -1 for a category the outputs' erasure marker matched (distortion 0), and
    # an output -2 for a tuple no input reaches; the sparse form refused the first only
    for sparse in (False, True):
        with pytest.raises(ValueError, match=r"inputs must be codes >= 0 \(-1 marks an erasure\), got -1"):
            erasure_distortion([[-1, 2]], [[-1, 2]], sparse=sparse)
        with pytest.raises(ValueError, match=r"outputs must be codes >= 0, or -1 for an erased field, got -2"):
            erasure_distortion([[1, 2]], [[-2, 1]], sparse=sparse)
    assert erasure_distortion([[1, 2]], [[-1, 2], [1, 2]]).tolist() == [[1.0, 0.0]]
    # a sparse matrix of codes: "must be a non-empty 2-D array ... got shape (1, 2)" of a (1, 2) matrix
    with pytest.raises(TypeError, match=r"dense array of category codes, got a scipy sparse csr_matrix"):
        erasure_alphabet(sp.csr_matrix([[1, 2]]))


def test_a_dense_erasure_distortion_asks_before_allocating(little_memory):
    from privrelease.mapping import erasure_distortion

    inputs = np.arange(300)[:, None] % 7 * np.ones((1, 3), dtype=int)
    outputs = np.vstack([inputs, -np.ones((1, 3), dtype=int)])
    with pytest.raises(ValueError, match=r"erasure_distortion of 300 inputs x 301 outputs of 3 features"):
        erasure_distortion(inputs, outputs)
    D = erasure_distortion(inputs, outputs, sparse=True)      # the reachable pairs only
    assert D.shape == (300, 301) and D[0, 300] == 3.0


def test_the_mapping_and_centre_checks_name_the_argument():
    from privrelease.mapping import expected_distortion, leakage, squared_euclidean_distortion

    P = np.array([[0.4, 0.1], [0.1, 0.4]])
    # strings of numbers were parsed as probabilities ("0.5"), other strings gave numpy's "could not convert"
    for M in ([["0.5", "0.5"], ["0.5", "0.5"]], [["a", "b"], ["c", "d"]]):
        with pytest.raises(TypeError, match=r"mapping must be an array of probabilities, got strings"):
            leakage(P, M)
        with pytest.raises(TypeError, match=r"mapping must be an array of probabilities, got strings"):
            expected_distortion(P, M, 1 - np.eye(2))
    # "centers must be finite": neither which argument nor which value
    with pytest.raises(ValueError, match=r"centers_out must hold finite coordinates, got inf at \(1, 0\)"):
        squared_euclidean_distortion([[0.0], [1.0]], [[2.0], [np.inf]])
    with pytest.raises(ValueError, match=r"centers_in must hold finite coordinates, got nan at \(0, 1\)"):
        squared_euclidean_distortion([[0.0, np.nan]])


def test_the_curve_checks_n_jobs_as_the_protocol_does():
    from privrelease.mapping import privacy_distortion_curve

    P, D = np.array([[0.4, 0.1], [0.1, 0.4]]), 1 - np.eye(2)
    # joblib took True and 2.5 as numbers of workers; 10**6 failed with "Numeric literal 2000000 is too large"
    for bad in (True, 2.5, "2"):
        expected = r"n_jobs must be None or a nonzero integer from -4096 to 4096 \(-1 = every core\), got "
        with pytest.raises(TypeError, match=expected):
            privacy_distortion_curve(P, D, [0.1, 0.2], n_jobs=bad)
    with pytest.raises(ValueError, match=r"n_jobs must be None or a nonzero integer .* got 0"):
        privacy_distortion_curve(P, D, [0.1, 0.2], n_jobs=0)
    one = privacy_distortion_curve(P, D, [0.1, 0.2])
    two = privacy_distortion_curve(P, D, [0.1, 0.2], n_jobs=np.int64(2))
    np.testing.assert_allclose(two["leakage_bits"], one["leakage_bits"], atol=1e-6)


# ---------------------------------------------------------------- the command line's --set
def test_a_set_value_that_looks_like_toml_but_is_not_says_why():
    import argparse

    from privrelease.cli import _parse_override

    # a table with a key given twice was taken as the text "{algorithm='SVD', ...}", then refused as
    # "a string: expected a table", hiding TOML's reason
    with pytest.raises(argparse.ArgumentTypeError, match=r"not valid TOML \(Duplicate inline table key 'algorithm' "
                                                         r"\(at line 1, column 36\)\)"):
        _parse_override("rec={algorithm='SVD', algorithm='SVDpp'}")
    with pytest.raises(argparse.ArgumentTypeError, match=r"max_leakages=\[0\.1, 0\.2: the value is not valid TOML"):
        _parse_override("max_leakages=[0.1, 0.2")
    with pytest.raises(argparse.ArgumentTypeError, match=r"Unterminated string"):
        _parse_override('path="ratings.csv')
    assert _parse_override("mapper.class_bins=heldout") == ("mapper.class_bins", "heldout")  # a bare word is text
    assert _parse_override("n_users=abc") == ("n_users", "abc")
