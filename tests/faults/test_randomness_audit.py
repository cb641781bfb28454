"""Audit: privacy paths draw only from the secure source, never from numpy's global state.

1. numpy's global random functions (and the legacy global RandomState that
   ``sklearn.utils.check_random_state(None)`` hands out) are replaced by functions
   that raise; every privacy path runs with ``random_state=None`` and must finish.
2. An AST scan of ``privrelease/`` fails on ``.laplace(`` calls, ``np.random.seed``,
   ``np.random.<distribution>(`` calls, unseeded ``default_rng()`` and the stdlib
   ``random`` module, outside the random-source module and the data generators.
3. With ``random_state=None`` the draws come from :class:`SecureRandomSource`:
   ``os.urandom`` is counted and must be read by every privacy path.
"""

import ast
import os
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp

import privrelease
from privrelease.utils import SecureRandomSource, check_random_source

PACKAGE = pathlib.Path(privrelease.__file__).parent

#: numpy.random module-level functions that use the global state
GLOBAL_FUNCTIONS = [
    "seed", "random", "rand", "randn", "randint", "random_integers", "random_sample", "ranf", "sample",
    "choice", "bytes", "shuffle", "permutation", "uniform", "normal", "standard_normal", "laplace",
    "exponential", "standard_exponential", "gamma", "standard_gamma", "beta", "binomial", "poisson",
    "multinomial", "dirichlet", "geometric", "gumbel", "logistic", "lognormal", "chisquare",
    "standard_cauchy", "standard_t", "triangular", "vonmises", "wald", "weibull", "zipf", "get_state",
    "set_state", "default_rng",
]


class GlobalStateUsed(AssertionError):
    pass


class _ForbiddenRandomState:
    def __getattr__(self, name):
        raise GlobalStateUsed(f"numpy's global RandomState was used (.{name})")


@pytest.fixture()
def forbid_global_numpy(monkeypatch):
    def forbidden(name):
        def fn(*args, **kwargs):
            raise GlobalStateUsed(f"np.random.{name} was called on a privacy path")

        return fn

    for name in GLOBAL_FUNCTIONS:
        if hasattr(np.random, name):
            monkeypatch.setattr(np.random, name, forbidden(name))

    class ForbiddenRandomStateClass(np.random.RandomState):
        def __init__(self, *args, **kwargs):
            raise GlobalStateUsed("np.random.RandomState was constructed on a privacy path")

    monkeypatch.setattr(np.random, "RandomState", ForbiddenRandomStateClass)
    monkeypatch.setattr(np.random.mtrand, "_rand", _ForbiddenRandomState())
    yield


@pytest.fixture()
def urandom_counter(monkeypatch):
    calls = {"n": 0}
    real = os.urandom

    def counting(n):
        calls["n"] += 1
        return real(n)

    monkeypatch.setattr(os, "urandom", counting)
    return calls


# ----------------------------------------------------------------------------- the privacy paths
def _mapper_path():
    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    R, a, _ = make_ratings(200, 20, random_state=0)
    m = QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.02).fit(R, a)  # fit: outside the audit
    assert m.random_state is None
    return lambda: m.transform(R)


def _dask_mapper_path():
    import dask
    import dask.array as da

    from privrelease.datasets import make_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    R, a, _ = make_ratings(200, 20, random_state=0)
    m = QuantizedPrivacyMapper(n_clusters=4, max_leakage=0.02).fit(R, a)
    Xd = da.from_array(R.tocsr(), chunks=(50, 20), asarray=False)

    def run():
        with dask.config.set(scheduler="synchronous"):
            return m.transform(Xd).compute()

    return run


def _erasure_path():
    from privrelease import mappers

    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 300)
    X = np.column_stack([(a + rng.integers(0, 2, 300)) % 3, rng.integers(0, 3, 300)])
    m = mappers.ErasureMapper().fit(X, a)
    return lambda: m.transform(X)


def _dclef_path():
    from privrelease.auctions import DCLEF

    est = DCLEF(np.full(5, 0.2), np.array([1.0, 1.0, 0.5, 0.0, 1.0]), (0.0, 1.0))
    d = np.linspace(0, 1, 5)
    return lambda: est.sample(d)


def _fair_inner_product_estimator_path():
    from privrelease.accounting import PrivacyAccountant
    from privrelease.auctions import DCLEFEstimator

    rng = np.random.default_rng(0)
    Y = rng.normal(size=(60, 2))
    d = np.clip(np.round(3 + Y[:, 0]), 1, 5)
    est = DCLEFEstimator(budget=5.0, n_neighbors=10, data_range=(1, 5),
                         accountant=PrivacyAccountant()).fit(Y, d, unit_costs=rng.exponential(size=60))
    return lambda: est.predict(Y[:3])


def _truthful_regression_path():
    from privrelease.regression import TruthfulRegressionMechanism

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ np.array([0.5, -0.3]) + 0.1 * rng.normal(size=100), -1, 1)
    return lambda: TruthfulRegressionMechanism(alpha=5.0, epsilon=1.0).fit(X, y)


def _biased_laplace_path():
    from privrelease.contracts import BiasedLaplaceMechanism

    return lambda: BiasedLaplaceMechanism([1.0, 0.5, 0.2], b=0.5).release(np.array([0.0, 1.0, 1.0]), size=4)


def _laplace_path():
    from privrelease.noise import Laplace, VectorLaplace

    return lambda: (Laplace(epsilon=1.0).randomise(np.zeros(3)),
                    VectorLaplace(dimension=3, epsilon=1.0, sensitivity=1.0).sample(2))


def _blurme_random_path():
    from privrelease.evaluation import BlurMe

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    X = sp.csr_matrix(np.where(rng.random((120, 15)) < 0.3, rng.integers(1, 6, (120, 15)), 0).astype(float))
    m = BlurMe(fraction=0.2, strategy="random").fit(X, y)
    return lambda: m.transform(X)


PATHS = {
    "QuantizedPrivacyMapper.transform": _mapper_path,
    "QuantizedPrivacyMapper.transform on dask": _dask_mapper_path,
    "ErasureMapper.transform": _erasure_path,
    "DCLEF.sample": _dclef_path,
    "DCLEFEstimator.predict (fair inner product)": _fair_inner_product_estimator_path,
    "TruthfulRegressionMechanism.fit": _truthful_regression_path,
    "BiasedLaplaceMechanism.release": _biased_laplace_path,
    "Laplace / VectorLaplace": _laplace_path,
    "BlurMe(strategy='random').transform": _blurme_random_path,
}


@pytest.fixture(scope="module")
def built():
    """Every privacy path, fitted on seeded public data before any audit starts.

    A builder that fails (an ImportError included: dask is a test requirement) fails
    the audit; nothing is skipped.
    """
    return {name: builder() for name, builder in PATHS.items()}


@pytest.mark.parametrize("path", list(PATHS))
def test_privacy_path_uses_no_global_numpy_state(path, built, forbid_global_numpy):
    built[path]()


@pytest.mark.parametrize("path", list(PATHS))
def test_privacy_path_reads_os_entropy(path, built, urandom_counter):
    before = urandom_counter["n"]
    built[path]()
    assert urandom_counter["n"] > before, f"{path} drew no randomness from os.urandom"


def test_forbidding_fixture_really_forbids(forbid_global_numpy):
    from sklearn.utils import check_random_state

    with pytest.raises(GlobalStateUsed):
        np.random.laplace(0, 1)
    with pytest.raises(GlobalStateUsed):
        np.random.default_rng()
    with pytest.raises(GlobalStateUsed):
        check_random_state(None).rand()
    with pytest.raises(GlobalStateUsed):
        np.random.RandomState(0)
    # the secure source still works
    assert 0 < SecureRandomSource().uniform() < 1


def test_none_gives_the_secure_source(urandom_counter):
    src = check_random_source(None)
    assert isinstance(src, SecureRandomSource) and src.secure
    src.uniform(3)
    assert urandom_counter["n"] == 1
    assert not check_random_source(0).secure


# ----------------------------------------------------------------------------- the recommender's initialisation
#: SurpriseRecommender(random_state=None) with the algorithm by name and as instances. Surprise builds a seeded
#: RandomState from the seed it is given (allowed here), and reads numpy's global state when its own random_state
#: is None: an instance took its factors from np.random.seed(k)'s stream.
SURPRISE_ALGORITHMS = ["SVD", "SVD()", "SVDpp()", "SVD(biased=False)"]


def _surprise_algorithm(spec):
    import surprise

    if spec == "SVD":
        return spec
    return {"SVD()": surprise.SVD(n_epochs=2), "SVDpp()": surprise.SVDpp(n_epochs=2),
            "SVD(biased=False)": surprise.SVD(n_epochs=2, biased=False)}[spec]


@pytest.mark.parametrize("spec", SURPRISE_ALGORITHMS)
def test_surprise_recommender_seeds_from_os_entropy_not_the_global_state(spec, monkeypatch, urandom_counter):
    from privrelease.datasets import make_ratings
    from privrelease.recommender import SurpriseRecommender

    R, _, _ = make_ratings(60, 30, random_state=0)
    algorithm = _surprise_algorithm(spec)
    params = {"algo_params": {"n_epochs": 2}} if spec == "SVD" else {}
    monkeypatch.setattr(np.random.mtrand, "_rand", _ForbiddenRandomState())
    for name in GLOBAL_FUNCTIONS:
        if hasattr(np.random, name) and name not in ("default_rng",):
            monkeypatch.setattr(np.random, name, _forbidden_global(name))
    before = urandom_counter["n"]
    rec = SurpriseRecommender(algorithm=algorithm, **params).fit(R)
    assert urandom_counter["n"] > before, f"SurpriseRecommender(algorithm={spec}) drew no seed from os.urandom"
    assert np.all(np.isfinite(rec.item_factors_))


def _forbidden_global(name):
    def fn(*args, **kwargs):
        raise GlobalStateUsed(f"np.random.{name} was called on a privacy path")

    return fn


def test_surprise_instance_keeps_its_own_seed():
    import surprise

    from privrelease.datasets import make_ratings
    from privrelease.recommender import SurpriseRecommender

    R, _, _ = make_ratings(60, 30, random_state=0)
    fits = [SurpriseRecommender(algorithm=surprise.SVD(n_epochs=2, random_state=3)).fit(R).item_factors_
            for _ in range(2)]
    np.testing.assert_array_equal(*fits)


# ----------------------------------------------------------------------------- static scan
ALLOWED_FILES = {PACKAGE / "utils" / "_random.py"}
ALLOWED_DIRS = {PACKAGE / "datasets"}
#: np.random attributes that build a seeded generator rather than draw from the global state
CONSTRUCTORS = {"default_rng", "Generator", "SeedSequence", "PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937",
                "BitGenerator", "RandomState"}


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def scan_source(text, filename="<string>"):
    """Offending random draws in a module's source: list of ``(line, description)``."""
    tree = ast.parse(text, filename=filename)
    numpy_aliases = {"numpy"}
    random_aliases = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "numpy":
                    numpy_aliases.add(alias.asname or "numpy")
                if alias.name == "numpy.random":
                    random_aliases.add(alias.asname or "numpy.random")
                if alias.name == "random":
                    found.append((node.lineno, "imports the stdlib random module (Mersenne Twister)"))
        elif isinstance(node, ast.ImportFrom):
            if node.module == "random":
                found.append((node.lineno, "imports from the stdlib random module"))
            if node.module == "numpy":
                for alias in node.names:
                    if alias.name == "random":
                        random_aliases.add(alias.asname or "random")
            if node.module == "numpy.random":
                for alias in node.names:
                    if alias.name not in CONSTRUCTORS:
                        found.append((node.lineno, f"imports numpy.random.{alias.name} (global state)"))
    prefixes = {f"{a}.random" for a in numpy_aliases} | random_aliases
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "laplace":
            found.append((node.lineno, f"{_dotted(func) or '...laplace'}( -- use privrelease.noise.Laplace"))
            continue
        name = _dotted(func)
        if name is None:
            continue
        for prefix in prefixes:
            if name.startswith(prefix + ".") and name.count(".") == prefix.count(".") + 1:
                attr = name.rsplit(".", 1)[1]
                if attr not in CONSTRUCTORS:
                    found.append((node.lineno, f"{name}( draws from numpy's global state"))
                elif attr == "default_rng" and (not node.args or (isinstance(node.args[0], ast.Constant)
                                                                  and node.args[0].value is None)):
                    found.append((node.lineno, f"{name}() without a seed: use check_random_source(None)"))
    return found


def test_scanner_catches_the_patterns():
    bad = """
import numpy as np
import numpy as xp
from numpy import random as npr
from numpy.random import laplace
import random
def f(rng):
    rng.laplace(0, 1)
    np.random.seed(0)
    np.random.normal(size=3)
    xp.random.permutation(3)
    npr.choice(3)
    np.random.default_rng()
"""
    lines = sorted(line for line, _ in scan_source(bad))
    assert lines == [5, 6, 8, 9, 10, 11, 12, 13]
    good = """
import numpy as np
def f(seed, source):
    rng = np.random.default_rng(seed)
    rng.random(3)
    np.random.SeedSequence(seed)
    source.uniform(3)
    np.random.Generator(np.random.PCG64(seed))
"""
    assert scan_source(good) == []


def test_no_insecure_randomness_in_the_package():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in ALLOWED_FILES or any(d in path.parents for d in ALLOWED_DIRS):
            continue
        for line, what in scan_source(path.read_text(), str(path)):
            offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {what}")
    assert not offenders, "insecure randomness:\n" + "\n".join(offenders)
