"""Property-based tests (hypothesis) over the public functions.

Bounded: few examples, no deadline (solvers have a variable cost). Every
example must either satisfy the stated properties or raise one of the
documented errors.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privrelease.auctions import fair_inner_product, ghosh_roth
from privrelease.exceptions import ConvergenceWarning, InfeasibleBudgetError, SolverError
from privrelease.mapping import leakage as leakage_of
from privrelease.mapping import solve_mapping
from privrelease.mappers import QuantizedPrivacyMapper

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- solve_mapping
@st.composite
def problems(draw):
    n_a = draw(st.integers(2, 3))
    n_c = draw(st.integers(2, 4))
    weights = draw(hnp.arrays(np.float64, (n_a, n_c), elements=st.floats(0.01, 1.0)))
    prior = weights / weights.sum()
    kind = draw(st.sampled_from(["hamming", "random"]))
    if kind == "hamming":
        d = 1.0 - np.eye(n_c)
    else:
        d = draw(hnp.arrays(np.float64, (n_c, n_c), elements=st.floats(0.0, 3.0)))
    p_c = prior.sum(axis=0)
    d_min = float(p_c @ d.min(axis=1))
    d_max = float(p_c @ d.max(axis=1))
    frac = draw(st.floats(0.0, 1.0))
    delta = d_min + frac * (d_max - d_min)
    return prior, d, delta


@settings(max_examples=30, **SETTINGS)
@given(problems(), st.sampled_from(["auto", "fast"]))
def test_solve_mapping_properties(problem, solver):
    prior, d, delta = problem
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = solve_mapping(prior, d, delta, solver=solver)
    except SolverError:
        return  # documented: an explicit solver that cannot certify raises
    M = res.mapping
    assert M.shape == d.shape
    assert np.all(M >= 0)
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-9)
    assert res.leakage >= -1e-12
    assert res.distortion <= delta + 1e-7 * max(1.0, delta)
    assert "gap_bits" in res.certificate and res.certificate["gap_bits"] >= 0
    assert res.status in ("optimal", "inaccurate")
    if res.status == "optimal":
        assert res.certificate["gap_bits"] <= 1e-6 + 1e-12
    else:  # never silent
        assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    # the reported leakage is that of the returned mapping
    assert res.leakage == pytest.approx(leakage_of(prior, M), abs=1e-9)
    # no worse than the cheapest deterministic mapping, which is feasible for every delta >= d_min
    P_min = np.zeros_like(d)
    P_min[np.arange(d.shape[0]), d.argmin(axis=1)] = 1.0
    assert res.leakage <= leakage_of(prior, P_min) + res.certificate["gap_bits"] + 1e-9


@settings(max_examples=15, **SETTINGS)
@given(problems(), st.floats(0.0, 1.0))
def test_more_distortion_never_leaks_more(problem, extra):
    prior, d, delta = problem
    p_c = prior.sum(axis=0)
    d_max = float(p_c @ d.max(axis=1))
    bigger = delta + extra * (d_max - delta)
    a = solve_mapping(prior, d, delta)
    b = solve_mapping(prior, d, bigger)
    assert b.leakage <= a.leakage + a.certificate["gap_bits"] + b.certificate["gap_bits"] + 1e-9


@settings(max_examples=15, **SETTINGS)
@given(problems())
def test_below_the_smallest_budget_is_refused_with_the_bound(problem):
    prior, d, _ = problem
    p_c = prior.sum(axis=0)
    d_min = float(p_c @ d.min(axis=1))
    if d_min <= 1e-6:
        return
    with pytest.raises(InfeasibleBudgetError) as info:
        solve_mapping(prior, d, 0.5 * d_min)
    assert info.value.smallest_feasible == pytest.approx(d_min, rel=1e-9)


# ----------------------------------------------------------------------------- mappers
@st.composite
def rating_matrices(draw):
    n_users = draw(st.integers(12, 30))
    n_items = draw(st.integers(3, 8))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    y = np.arange(n_users) % 2
    rng.shuffle(y)
    dense = np.where(rng.random((n_users, n_items)) < draw(st.floats(0.2, 0.9)),
                     rng.integers(1, 6, (n_users, n_items)), 0)
    # at least one empty user sometimes: they must be kept and mapped too
    if draw(st.booleans()):
        dense[0] = 0
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64]))
    fmt = draw(st.sampled_from(["dense", "csr", "csc", "coo", "lil"]))
    X = dense.astype(dtype)
    if fmt != "dense":
        X = sp.csr_matrix(X).asformat(fmt)
    return X, y


@settings(max_examples=12, **SETTINGS)
@given(rating_matrices(), st.sampled_from([dict(space="raw"), dict(metric="hamming")]),
       st.integers(1, 6))
def test_mapper_transform_keeps_users_items_shape_format_dtype(data, params, n_clusters):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n_clusters clipping, solver accuracy notes
        m = QuantizedPrivacyMapper(n_clusters=n_clusters, random_state=0, **params).fit(X, y)
        out = m.transform(X)
    assert out.shape == X.shape
    assert out.dtype == X.dtype
    assert sp.issparse(out) == sp.issparse(X)
    if sp.issparse(X):
        assert out.format == X.format
    np.testing.assert_allclose(m.mapping_.sum(axis=1), 1.0, atol=1e-9)
    assert np.all(m.mapping_ >= 0)
    # every row released is one of the profiles: a function of c_hat alone
    P = m.release_profiles_.toarray()
    O = out.toarray() if sp.issparse(out) else np.asarray(out)
    assert all((np.abs(P - row).sum(axis=1) == 0).any() for row in O)
    # perfect privacy (the default): the output is independent of A under the prior
    assert m.leakage_ <= 1e-6


# ----------------------------------------------------------------------------- auctions
@st.composite
def auctions(draw):
    n = draw(st.integers(2, 12))
    v = draw(hnp.arrays(np.float64, n, elements=st.floats(0.0, 10.0)))
    w = draw(hnp.arrays(np.float64, n, elements=st.floats(-2.0, 2.0)))
    budget = draw(st.floats(0.0, 20.0))
    return v, w, budget


@settings(max_examples=40, **SETTINGS)
@given(auctions())
def test_fair_inner_product_budget_feasible_and_rational(auction):
    v, w, budget = auction
    res = fair_inner_product(v, w, budget)
    assert res.total_payment <= budget * (1 + 1e-9) + 1e-12  # budget feasibility
    assert np.all(res.payments >= 0)
    assert np.all(res.utilities >= -1e-9 * max(1.0, budget))  # individual rationality
    assert np.all(res.payments[~res.selected] == 0)
    assert not np.any(res.selected & (w == 0))


@settings(max_examples=30, **SETTINGS)
@given(auctions())
def test_ghosh_roth_budget_feasible(auction):
    v, _, budget = auction
    res = ghosh_roth(v, budget)
    assert res.total_payment <= budget * (1 + 1e-9) + 1e-12
    assert np.all(res.utilities >= -1e-9 * max(1.0, budget))


@settings(max_examples=20, **SETTINGS)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=4),
       st.floats(allow_nan=True, allow_infinity=True))
def test_auction_bad_numbers_raise_documented_errors(values, budget):
    v = np.asarray(values)
    try:
        res = fair_inner_product(v, np.ones_like(v), budget)
    except (ValueError, TypeError) as exc:
        assert str(exc)  # a message, not a bare error
        return
    assert res.total_payment <= budget * (1 + 1e-9) + 1e-12


@st.composite
def categorical_tables(draw):
    n = draw(st.integers(10, 40))
    n_features = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    rng.shuffle(y)
    cols = {}
    for j in range(n_features):
        k = draw(st.integers(1, 3))
        codes = (y * draw(st.integers(0, 1)) + rng.integers(0, k, n)) % k
        kind = draw(st.sampled_from(["int", "str"]))
        cols[f"f{j}"] = codes if kind == "int" else np.array(["a", "b", "c"])[codes]
    as_frame = draw(st.booleans())
    import pandas as pd

    X = pd.DataFrame(cols) if as_frame else np.column_stack(list(cols.values())).astype(object)
    return X, y, draw(st.floats(0.0, 1.0))


@settings(max_examples=12, **SETTINGS)
@given(categorical_tables())
def test_erasure_mapper_only_erases(data):
    from privrelease.mappers import ErasureMapper

    X, y, frac = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            m = ErasureMapper(random_state=0).fit(X, y)
        except ValueError as exc:  # documented: a single class among labeled rows, ...
            assert str(exc)
            return
        n_features = m.n_features_in_
        m.set_params(delta=frac * n_features)  # any budget in [0, n_features] is feasible (erase all)
        m.fit(X, y)
        out = m.transform(X)
    assert out.shape == np.shape(X)
    np.testing.assert_allclose(m.mapping_.sum(axis=1), 1.0, atol=1e-9)
    assert m.distortion_ <= frac * n_features + 1e-7
    if hasattr(X, "columns"):
        assert list(out.columns) == list(X.columns) and out.index.equals(X.index)
        for col in X.columns:
            kept = out[col].notna().to_numpy()
            assert out[col][kept].tolist() == X[col][kept].tolist()
    else:
        kept = np.array([[v is not None for v in row] for row in out])
        assert out[kept].tolist() == X[kept].tolist()
