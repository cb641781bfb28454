"""Hostile inputs, seventh audit: several private attributes (a 2-D ``y`` of many columns or of the wrong
shape), the recommender's long-form formats, the privacy accountant and the noise samplers at the limits of
float64. One test per finding (earlier audits: test_hostile_inputs.py to test_hostile_inputs6.py,
test_hostile_outputs.py, test_persistence_format.py)."""

import itertools

import numpy as np
import pytest

from privrelease import PrivacyAccountant, QuantizedPrivacyMapper
from privrelease.evaluation import joint_attribute
from privrelease.exceptions import BudgetExceededError

_MAX = np.finfo(np.float64).max


@pytest.fixture(scope="module")
def ratings():
    from privrelease.datasets import make_ratings

    X, gender, _ = make_ratings(n_users=60, n_items=20, random_state=0)
    return X, np.asarray(gender)


def test_a_budget_at_the_largest_float_still_refuses_what_exceeds_it():
    # the slack budget * (1 + 1e-12) overflowed to inf: every later release was accepted, spent became inf
    acc = PrivacyAccountant(_MAX)
    acc.spend(_MAX)
    with pytest.raises(BudgetExceededError, match="release refused"):
        acc.spend(1e300)
    assert acc.spent == _MAX and len(acc) == 1
    # the slack still absorbs round-off, and an unlimited budget still takes anything
    tenth = PrivacyAccountant(1.0)
    for _ in range(10):
        tenth.spend(0.1)
    unlimited = PrivacyAccountant(np.inf).spend(_MAX).spend(_MAX).spend(np.inf)
    assert unlimited.spent == np.inf


def test_joint_attribute_of_many_columns_numbers_the_tuples_that_occur():
    # every combination of the columns' values was enumerated (2**70 tuples here: memory exhausted), and
    # the int64 mixed-radix codes wrapped around past 2**63 combinations (users merged into one class)
    rng = np.random.default_rng(0)
    Y = rng.integers(0, 2, (200, 70))
    Y[1] = Y[0]
    Y[1, 0] = 1 - Y[0, 0]       # differs from user 0 in the first column only (the digit shifted out)
    Y[2] = Y[3]
    codes, tuples = joint_attribute(Y)
    assert len(tuples) == len({tuple(r) for r in Y.tolist()}) == 199
    for u, v in itertools.combinations(range(Y.shape[0]), 2):
        assert (codes[u] == codes[v]) == bool(np.all(Y[u] == Y[v]))
    assert [tuples[c] for c in codes] == [tuple(r) for r in Y.tolist()]
    assert tuples == sorted(tuples)  # lexicographic, as before


def test_a_two_dimensional_y_of_the_wrong_shape_says_what_a_2d_y_is(ratings):
    X, gender = ratings
    n = X.shape[0]
    Y = np.column_stack([gender, np.arange(n) % 3])
    m = QuantizedPrivacyMapper(n_clusters=3, random_state=0)
    # "y must be 1-D (one private attribute per user)" denied that a 2-D y is allowed
    with pytest.raises(ValueError, match=f"y has {n - 1} rows but X has {n} users; a 2-D y holds one row per user"):
        m.fit(X, Y[:-1])
    with pytest.raises(ValueError, match=r"y has 2 rows but X has 60 users.*transposed: pass y\.T"):
        m.fit(X, Y.T)
    with pytest.raises(ValueError, match=r"1-D \(one label per user\) or 2-D .* got shape \(60, 2, 1\)"):
        m.fit(X, Y[:, :, None])
    # one row of labels is still one attribute, a 2-D y of the right shape several
    assert m.fit(X, gender[None, :]).classes_.tolist() == [0, 1]
    assert [c.tolist() for c in m.fit(X, Y).classes_] == [[0, 1], [0, 1, 2]]


def test_a_noise_scale_whose_draws_overflow_is_refused_before_drawing():
    from privrelease.noise import Laplace, VectorLaplace, laplace_noise
    from privrelease.utils import check_random_source

    # a finite scale of 1e308 released inf (two of three draws here), with a numpy RuntimeWarning at most
    with pytest.raises(ValueError, match=r"scale=1e\+308: the noise reaches 149\.7 times its scale"):
        laplace_noise(1e308, 3, random_state=0)
    with pytest.raises(ValueError, match=r"epsilon=1e-307 with sensitivity=1\.0"):
        Laplace(epsilon=1e-307)
    with pytest.raises(ValueError, match=r"for values of magnitude 1\.79769e\+308"):
        Laplace(scale=1e295, random_state=0).randomise([_MAX, 0.0])
    with pytest.raises(ValueError, match="in dimension 1000000"):
        VectorLaplace(dimension=10**6, epsilon=1e-303, sensitivity=1.0)
    # the snapping grid 2**ceil(log2(scale)) overflowed to inf: every release NaN
    with pytest.raises(ValueError, match=r"expected a scale <= 2\*\*1023"):
        Laplace(scale=1e308, snapping_bound=_MAX)
    # the bounds are the samplers' own: the draws stay within them, and scales up to them release finite noise
    from privrelease.noise._laplace import _LAPLACE_REACH, _gamma_reach, _standard_laplace

    source = check_random_source(0)
    assert np.abs(_standard_laplace(source, 10**5)).max() <= _LAPLACE_REACH
    for shape in (0.5, 1.0, 7.0):
        assert source.gamma(shape, 10**4).max() <= _gamma_reach(shape)
    assert np.all(np.isfinite(laplace_noise(_MAX / _LAPLACE_REACH, 10**4, random_state=0)))
    assert np.all(np.isfinite(Laplace(scale=2.0**1023, snapping_bound=_MAX, random_state=0).sample(100)))
    assert Laplace(epsilon=1.0, random_state=0).randomise([_MAX / 2, -1.0]).shape == (2,)


def test_long_form_columns_named_twice_or_held_in_the_index_are_named():
    import pandas as pd

    from privrelease.recommender import RatingsFrame

    df = pd.DataFrame({"user": ["a", "b", "a"], "item": [1, 1, 2], "rating": [4, 2, 5]})
    # pandas failed with "The truth value of a Series is ambiguous" or "arg must be a list, tuple, 1-d array"
    for twice in ("user", "rating"):
        with pytest.raises(ValueError, match=rf"ratings\['{twice}'\] selects 2 column\(s\) \['{twice}', '{twice}'\]"):
            RatingsFrame().fit(pd.concat([df, df[[twice]]], axis=1))
    levels = df.copy()
    levels.columns = pd.MultiIndex.from_tuples([("user", "x"), ("item", "y"), ("rating", "z")])
    with pytest.raises(ValueError, match=r"ratings\['user'\] selects 1 column\(s\) \['x'\]"):
        RatingsFrame().fit(levels)
    # a frame indexed by (user, item) says where the ids are
    with pytest.raises(ValueError, match=r"\['user', 'item'\] are index levels: pass ratings\.reset_index\(\)"):
        RatingsFrame().fit(df.set_index(["user", "item"]))
    rf = RatingsFrame().fit(df.set_index(["user", "item"]).reset_index())
    assert rf.from_matrix(rf.to_matrix(df)).to_dict("list") == {
        "user": ["a", "a", "b"], "item": [1, 2, 1], "rating": [4.0, 5.0, 2.0]}


def test_a_frame_of_nullable_integer_ratings_is_released_as_integers_in_memory_and_on_dask(ratings):
    import dask.dataframe as dd
    import pandas as pd

    from privrelease import BlurMe, BlurMore

    X, gender = ratings
    df = pd.DataFrame(X.toarray(), columns=[f"i{j}" for j in range(X.shape[1])]).astype("Int64")
    m = QuantizedPrivacyMapper(n_clusters=3, random_state=0).fit(df, gender)
    # scikit-learn read the Int64 frame as float64: the release was unrounded profile means, and a dask frame's
    # partitions failed at compute with pandas' "cannot safely cast non-equivalent object to int64"
    released = m.transform(df)  # a frame with df's labels and its nullable integer dtypes, as on dask (stop 38)
    assert released.dtypes.tolist() == df.dtypes.tolist() and released.index.equals(df.index)
    released = released.to_numpy(dtype=np.float64)
    lazy = m.transform(dd.from_pandas(df, npartitions=3)).compute()
    assert lazy.dtypes.tolist() == df.dtypes.tolist() and lazy.shape == df.shape
    for mapped in (released, lazy.to_numpy(dtype=np.float64)):
        assert set(np.unique(mapped)) <= set(range(6))
    # a mix of nullable and plain integer columns is integer too; BlurMe and BlurMore do the same
    mixed = df.astype({"i0": "int32", "i1": "UInt8"})
    out = m.transform(mixed)
    assert all(pd.api.types.is_integer_dtype(d) for d in out.dtypes)
    assert out.dtypes.tolist() == m.transform(dd.from_pandas(mixed, npartitions=2)).compute().dtypes.tolist()
    for blur in (BlurMe(random_state=0), BlurMore(random_state=0)):
        out = blur.fit(df, gender).transform(df)  # a frame, as the mapper's: df's labels and nullable integer dtypes
        assert out.dtypes.tolist() == df.dtypes.tolist() and out.index.equals(df.index)
        out = out.to_numpy(dtype=np.float64)
        assert np.array_equal(out, np.rint(out))
    # floats are still released as floats
    assert set(m.transform(df.astype("Float64")).dtypes) == {np.dtype(np.float64)}


def test_attack_targets_refuse_test_columns_swapped_or_spelled_differently_from_training():
    import pandas as pd

    from privrelease.evaluation import attribute_targets, evaluate_attacks

    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 2, 80), rng.integers(0, 2, 80)
    X = np.where(rng.random((80, 12)) < 0.5, rng.integers(1, 6, (80, 12)), 0).astype(float)
    X[:, 0] = 1 + 4 * a                      # attribute a is written in item 0, b in nothing
    train = pd.DataFrame({"a": a[:40], "b": b[:40]})
    swapped = pd.DataFrame({"b": b[40:], "a": a[40:]})
    # the columns were paired by position: b scored as a, silently (both binary)
    with pytest.raises(ValueError, match=r"y_test's columns \['b', 'a'\] are not y_train's \['a', 'b'\]"):
        evaluate_attacks(X[:40], None, train, X[40:], swapped, models=["logistic"], features=["values"],
                         random_state=0, verbose=0)
    table, _ = evaluate_attacks(X[:40], None, train, X[40:], swapped[train.columns], models=["logistic"],
                                features=["values"], random_state=0, verbose=0)
    assert table.set_index("target").loc["a", "auc"] > 0.95
    # '0' in y_test beside 0 in y_train: numpy's "'<' not supported between instances of 'str' and 'int'"
    spelled = pd.DataFrame({"a": a[40:].astype(str), "b": b[40:]})
    with pytest.raises(TypeError, match=r"column 'a' of y_train and y_test together mixes label types"):
        evaluate_attacks(X[:40], None, train, X[40:], spelled, models=["logistic"], features=["values"],
                         random_state=0, verbose=0)
    with pytest.raises(TypeError, match=r"column 'attr0' of y_train and y_test together"):
        attribute_targets(train.to_numpy(), spelled.to_numpy(dtype=object))


def test_a_callable_privacy_cost_the_designs_do_not_assume_is_refused_naming_its_fault():
    from privrelease.contracts import design_contract, design_menu

    # a cost decreasing in eps bought eps = 400 for a payment of 1e-174; a concave one ended in a SolverError;
    # a string or an array of another shape failed inside numpy naming neither the cost nor the fault
    faults = {
        "decreasing in eps": lambda v, e: v * e * np.exp(-e),  # 0 at eps = 0 (v exp(-eps) is refused for that)
        "decreasing in v": lambda v, e: e / v,
        "not convex in eps": lambda v, e: v * np.sqrt(e),
    }
    for fault, cost in faults.items():
        for design in (lambda: design_contract([1.0, 2.0, 5.0], 0.5, cost=cost),
                       lambda: design_menu(1.0, 2.0, 0.5, 0.5, cost=cost)):
            with pytest.raises(ValueError, match=f"cost <lambda>\\(v, eps\\) is {fault}"):
                design()
    with pytest.raises(TypeError, match="must return real numbers, got 'x'"):
        design_contract([1.0, 2.0], 0.5, cost=lambda v, e: "x")
    with pytest.raises(ValueError, match=r"must work elementwise .* got shape \(3,\)"):
        design_menu(1.0, 2.0, 0.5, 0.5, cost=lambda v, e: np.ones(3))
    # costs the designs assume still work (one that ignores v broadcasts), callables as the built-in costs
    assert design_contract([1.0, 2.0], 0.5, cost=lambda v, e: 3 * e**2).accuracy == pytest.approx(0.5)
    linear = design_contract([1.0, 2.0], 0.5, cost=lambda v, e: v * e)
    assert linear.total_payment == pytest.approx(design_contract([1.0, 2.0], 0.5).total_payment, rel=1e-6)


def test_a_callable_exponential_cost_gets_the_contract_of_the_built_in_one():
    from privrelease.contracts import design_contract

    # at a tiny noise b the water-filling's numerical derivative overflowed (inf - inf) and its eps cost next to
    # nothing: that infeasible b was taken as the cheapest, and every K <= 0.1 ended in a SolverError
    def exponential(v, e):
        return v * np.expm1(e)

    ours = design_contract([1.0, 2.0], 0.05, cost=exponential)
    built_in = design_contract([1.0, 2.0], 0.05, cost="exponential")
    assert ours.accuracy == pytest.approx(0.05)
    assert ours.total_payment == pytest.approx(built_in.total_payment, rel=1e-9)
    np.testing.assert_allclose(ours.a, built_in.a, rtol=1e-6)


def test_align_given_a_dask_series_does_not_say_it_got_the_type_it_asked_for():
    import dask.dataframe as dd
    import pandas as pd

    from privrelease.recommender import RatingsFrame

    rf = RatingsFrame().fit(pd.DataFrame({"user": ["a", "b"], "item": [1, 1], "rating": [4.0, 2.0]}))
    labels = pd.Series({"a": 1, "b": 0})
    # "values must be a pandas Series ..., got Series"
    with pytest.raises(TypeError, match=r"got dask\.Series \(a lazy collection: pass values\.compute\(\)\)"):
        rf.align(dd.from_pandas(labels, npartitions=1))
    with pytest.raises(TypeError, match=r"or a dict, got list$"):
        rf.align([1, 0])
    assert rf.align(dd.from_pandas(labels, npartitions=1).compute()).tolist() == [1, 0]


def test_an_attack_on_a_2d_attribute_that_cannot_fit_names_the_column():
    import pandas as pd

    from privrelease.evaluation import evaluate_attacks

    rng = np.random.default_rng(0)
    X = np.where(rng.random((80, 12)) < 0.5, rng.integers(1, 6, (80, 12)), 0).astype(float)
    a, b = rng.integers(0, 2, 80), rng.integers(0, 2, 80)
    train = pd.DataFrame({"a": a[:40], "b": np.zeros(40, dtype=int)})      # nobody in training has b = 1
    kw = dict(models=["logistic"], features=["values"], random_state=0, verbose=0)
    # "an attacker needs at least two classes ..., got only one class: [0]" named no column
    with pytest.raises(ValueError, match=r"^column 'b' of the attribute: an attacker needs at least two classes"):
        evaluate_attacks(X[:40], None, train, X[40:], pd.DataFrame({"a": a[40:], "b": 0}), **kw)
    with pytest.raises(ValueError, match=r"^the joint attribute \(the tuples of the columns \['a', 'b'\]"):
        evaluate_attacks(X[:40], None, train, X[40:], pd.DataFrame({"a": a[40:], "b": b[40:]}), **kw)
    # a 1-D attribute's message is as it was
    with pytest.raises(ValueError, match=r"^an attacker needs at least two classes"):
        evaluate_attacks(X[:40], None, np.zeros(40, dtype=int), X[40:], a[40:], **kw)


def test_uniform_full_precision_takes_sizes_and_sources_as_every_sampler_does():
    from privrelease.noise import uniform_full_precision
    from privrelease.utils import check_random_source

    # 2.5 drew 2 values and True one; a numpy Generator as the source failed with numpy's "low >= high"
    with pytest.raises(TypeError, match="size must be None, a non-negative integer or a tuple of them, got 2.5"):
        uniform_full_precision(check_random_source(0), 2.5)
    with pytest.raises(TypeError, match="got True"):
        uniform_full_precision(check_random_source(0), True)
    with pytest.raises(ValueError, match=r"size=10000000000000: the draws would need"):
        uniform_full_precision(check_random_source(0), 10**13)
    seeded = uniform_full_precision(check_random_source(0), 5)
    for source in (0, np.random.default_rng(0)):
        u = uniform_full_precision(source, 5)
        assert np.all((u > 0) & (u < 1))
    np.testing.assert_array_equal(uniform_full_precision(0, 5), seeded)
    assert uniform_full_precision(None, (2, 3)).shape == (2, 3)      # None: the operating system's entropy


def test_the_release_sampler_refuses_rows_that_are_not_distributions():
    from privrelease.utils import check_random_source

    source = check_random_source(0)
    # a NaN or negative row drew outcome 0, an all-zero row its last outcome: outcomes of probability 0
    for row, what in (([0.5, np.nan], r"entry \(0, 1\) is nan;"),
                      ([1.5, -0.5], r"entry \(0, 1\) is -0.5;"),
                      ([0.0, 0.0], r"row 0 sums to 0.0;"),
                      ([1.7e308, 1.7e308], r"row 0 sums to inf;")):
        with pytest.raises(ValueError, match=what):
            source.categorical(np.array([row]))
    with pytest.raises(ValueError, match="row 0 sums to"):
        source.categorical(np.zeros((2, 0)))
    # distributions (and weights with a positive total) still draw only outcomes of positive probability
    draws = source.categorical(np.tile([0.0, 0.25, 0.0, 0.25], (2000, 1)))
    assert set(np.unique(draws)) == {1, 3}
    assert source.categorical(np.zeros((0, 3))).shape == (0,)


def test_a_dclef_over_a_data_range_of_huge_width_is_a_value_error_not_an_overflow_error():
    from privrelease import DCLEFEstimator
    from privrelease.auctions import DCLEF

    # its mean squared error (Delta W / 2)^2 + 2 sigma^2 raised Python's OverflowError in the constructor
    dclef = DCLEF([0.5, 0.5], [0, 1], (0.0, 1e308))
    assert dclef.distortion == np.inf and dclef.sigma == 5e307
    with pytest.raises(ValueError, match=r"scale=5e\+307: the noise reaches"):   # its noise would overflow too
        dclef.sample([0.5, 0.5])
    rng = np.random.default_rng(0)
    X, y, costs = rng.normal(size=(30, 3)), rng.uniform(0, 1, 30), rng.uniform(0.1, 1, 30)
    with pytest.raises(ValueError, match="the noise reaches"):
        DCLEFEstimator(data_range=(0, 1e308), random_state=0).fit(X, y, unit_costs=costs).predict(X[:3])
    # the auctions report the same figure (they computed it again, and raised the same OverflowError)
    from privrelease.auctions import fair_inner_product, ghosh_roth

    assert fair_inner_product([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], 2.0, data_range=(0, 1e308)).distortion == np.inf
    assert ghosh_roth([1.0, 2.0, 3.0], 2.0, data_range=(0, 1e308)).distortion == np.inf
    small = fair_inner_product([1.0, 2.0, 3.0], [0.5, 1.0, 2.0], 2.0, data_range=(1, 5))
    assert small.distortion == pytest.approx(2.25 * 16 * small.residual_weight**2)
    assert np.all(np.isfinite(
        DCLEFEstimator(data_range=(0, 1e200), random_state=0).fit(X, y, unit_costs=costs).predict(X[:3])))


def test_the_biased_laplace_mechanisms_error_beyond_float64_is_inf_not_an_overflow_error():
    from privrelease.contracts import BiasedLaplaceMechanism

    mech = BiasedLaplaceMechanism([1.0, 0.5], b=1e200, random_state=0)
    # bias^2 + 2 b^2 raised Python's OverflowError: (34, 'Numerical result out of range')
    assert mech.accuracy == np.inf and mech.mse([0.1, 0.2]) == np.inf
    small = BiasedLaplaceMechanism([1.0, 0.5], b=0.5, random_state=0)
    assert small.accuracy == pytest.approx(0.25**2 + 0.5) and small.mse([0.0, 0.0]) == pytest.approx(0.5625)


def test_a_ratings_frame_fitted_on_no_rating_is_refused_at_fit():
    import pandas as pd

    from privrelease.recommender import RatingsFrame

    df = pd.DataFrame({"user": ["a", "b"], "item": [1, 1], "rating": [4.0, 2.0]})
    # a converter of no user was fitted; its align then failed with "IndexError: index 0 is out of bounds"
    with pytest.raises(ValueError, match=r"ratings holds no rating \(0 rows"):
        RatingsFrame().fit(df.iloc[:0])
    rf = RatingsFrame().fit(df)
    assert rf.to_matrix(df.iloc[:0]).nnz == 0          # a fitted converter still reads an empty frame
    assert rf.from_matrix(rf.to_matrix(df.iloc[:0])).empty
