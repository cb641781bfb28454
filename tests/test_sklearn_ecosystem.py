"""privrelease's estimators as a scikit-learn user meets them outside ``check_estimator``.

``random_state`` is the same parameter everywhere: what
:func:`privrelease.utils.check_random_source` accepts (None, a non-negative int, a numpy
RandomState or Generator, a RandomSource). The rest are guards of behaviour that already
held: pandas output, pipelines and searches with undisclosed labels (-1), pickling and
another process giving the same release for a fixed seed.
"""

import io
import pickle

import joblib
import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import InvalidParameterError

import privrelease
from privrelease import ErasureMapper, InferenceAttack, QuantizedPrivacyMapper, TruthfulRegressionMechanism
from privrelease.exceptions import PrivacyLeakWarning
from privrelease.utils import check_random_source

pytestmark = pytest.mark.filterwarnings("ignore", category=PrivacyLeakWarning)

#: every public estimator of the package (one added later is covered without editing this file)
ALL_ESTIMATORS = [getattr(privrelease, name) for name in privrelease.__all__
                  if isinstance(getattr(privrelease, name), type)
                  and issubclass(getattr(privrelease, name), BaseEstimator)]


def _ratings(n=90, m=8, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.clip(np.round(rng.normal(3 + 0.8 * y[:, None], 1, (n, m))), 1, 5)
    X[rng.random((n, m)) < 0.3] = 0
    y_disclosed = y.copy()
    y_disclosed[:15] = -1
    return X, y, y_disclosed


@pytest.mark.parametrize("Est", ALL_ESTIMATORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("rs", [0, np.random.RandomState(0), np.random.default_rng(0), check_random_source(0)],
                         ids=["int", "RandomState", "Generator", "RandomSource"])
def test_random_state_accepts_what_check_random_source_accepts(Est, rs):
    # InferenceAttack refused a RandomState and a RandomSource; TruthfulRegressionMechanism refused the
    # Generator its docstring named; DCLEFEstimator and SurpriseRecommender refused a RandomSource
    Est(random_state=rs)._validate_params()


@pytest.mark.parametrize("Est", ALL_ESTIMATORS, ids=lambda c: c.__name__)
def test_negative_seed_is_refused_by_parameter_validation(Est):
    # InferenceAttack let -1 through its constraints (a ValueError came only from deep in fit)
    with pytest.raises(InvalidParameterError, match="random_state"):
        Est(random_state=-1)._validate_params()


def test_attack_fits_with_a_random_state_and_repeats_with_an_int():
    X, y, yd = _ratings()
    forest = lambda rs: InferenceAttack(model="forest", random_state=rs).fit(X, yd)  # noqa: E731
    p_rs = forest(np.random.RandomState(3)).predict_proba(X)
    assert np.array_equal(p_rs, forest(np.random.RandomState(3)).predict_proba(X))
    assert np.array_equal(forest(5).predict_proba(X), forest(5).predict_proba(X))


def test_truthful_regression_fits_with_a_generator():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)) / 3
    y = X @ np.array([0.3, -0.2, 0.1]) + rng.normal(0, 0.05, 60)
    a = TruthfulRegressionMechanism(random_state=np.random.default_rng(4)).fit(X, y)
    b = TruthfulRegressionMechanism(random_state=np.random.default_rng(4)).fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("Mapper", [QuantizedPrivacyMapper, ErasureMapper], ids=lambda c: c.__name__)
def test_pandas_output_keeps_index_and_columns(Mapper):
    X, _, yd = _ratings()
    X = X[:, :3]  # the erasure alphabet grows as 2**n_features
    df = pd.DataFrame(X, columns=["a", "b", "c"], index=np.arange(500, 500 + len(X)))
    params = {"n_clusters": 3} if Mapper is QuantizedPrivacyMapper else {}
    out = Mapper(random_state=0, **params).set_output(transform="pandas").fit(df, yd).transform(df)
    assert list(out.columns) == ["a", "b", "c"] and out.index.equals(df.index)
    with sklearn.config_context(transform_output="pandas"):
        m = Mapper(random_state=0, **params).fit(X, yd)
        out = m.transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(m.get_feature_names_out())


def test_search_over_mapper_parameters_with_undisclosed_labels():
    X, y, yd = _ratings()
    pipe = make_pipeline(QuantizedPrivacyMapper(random_state=0), InferenceAttack(random_state=0))
    search = GridSearchCV(pipe, {"quantizedprivacymapper__n_clusters": [2, 4]}, cv=3).fit(X, yd)
    assert search.best_params_["quantizedprivacymapper__n_clusters"] in (2, 4)
    assert 0.0 <= search.score(X[15:], y[15:]) <= 1.0


def _transform(mapper, X):
    return mapper.transform(X)


def test_pickled_and_other_process_releases_match_for_a_fixed_seed():
    X, _, yd = _ratings()
    m = QuantizedPrivacyMapper(n_clusters=4, random_state=0).fit(X, yd)
    ref = m.transform(X)
    buf = io.BytesIO()
    joblib.dump(m, buf)
    buf.seek(0)
    assert np.array_equal(pickle.loads(pickle.dumps(m)).transform(X), ref)
    assert np.array_equal(joblib.load(buf).transform(X), ref)
    outs = joblib.Parallel(n_jobs=2)(joblib.delayed(_transform)(m, X) for _ in range(2))
    assert all(np.array_equal(o, ref) for o in outs)
