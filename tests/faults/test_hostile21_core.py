"""Hostile inputs, 21st audit (core findings): the noise samplers' memory, a subnormal Laplace scale, masked arrays on
the privacy paths, DCLEFEstimator's parameters changed after fit, the solver's tolerance, booleans in the auctions'
vectors, design_menu's option, a 2-D privacy grid, the accountant's population names and an overflowing privacy
cost. One test (or a few) per finding; each fails on the tree before the fix.

The memory tests never allocate a large array: they lower the memory ``check_allocation`` believes is available, and
draw from a source that fails the test if it is ever asked for a bit."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from privrelease.accounting import PrivacyAccountant
from privrelease.exceptions import PrivacyLeakWarning
from privrelease.utils import SeededRandomSource
from shared_helpers import dclef_data, reference_leakage


# ------------------------------------------------------------------ 1. noise: the peak memory of a draw, before it
class _NoDraws(SeededRandomSource):
    """A source that fails the test when a bit is drawn: the refusal must come before any draw."""

    def _bits53(self, n):
        raise AssertionError(f"{n} values were drawn before the size was checked")


@pytest.fixture
def four_mib_available(monkeypatch):
    """1 GiB of memory in all, 4 MiB of it available: a draw is checked against what is available."""
    from privrelease.utils import _validation

    monkeypatch.setattr(_validation, "_physical_memory", lambda: 2**30)
    monkeypatch.setattr(_validation, "_available_memory", lambda: 4 * 2**20, raising=False)


@pytest.mark.parametrize("draw, size", [
    (lambda src: __import__("privrelease.noise", fromlist=["Laplace"]).Laplace(epsilon=1.0, random_state=src)
     .sample(100_000), "size=100000"),
    (lambda src: __import__("privrelease.noise", fromlist=["Laplace"]).Laplace(epsilon=1.0, random_state=src)
     .randomise(np.zeros(100_000)), "100,000 entries"),
    (lambda src: __import__("privrelease.noise", fromlist=["VectorLaplace"]).VectorLaplace(
        dimension=200_000, epsilon=1.0, sensitivity=1.0, random_state=src).sample(), "dimension=200000"),
], ids=["Laplace.sample", "Laplace.randomise", "VectorLaplace.sample"])
def test_a_draw_whose_peak_memory_exceeds_what_is_available_is_refused_before_drawing(four_mib_available, draw,
                                                                                      size):
    """100,000 Laplace draws are 0.8 MB of output but hold 52 to 76 bytes a value at their peak (the random bytes,
    their integer and float copies, four normals): about 8 MB, more than the 4 MiB available. The check counted
    the output's 8 bytes a value against the machine's total memory, and ``sample(10**9)`` raised a bare
    MemoryError (or had the process killed)."""
    with pytest.raises(ValueError, match=rf"{size}.* would need .*at the peak.* 4 MiB of memory available"):
        draw(_NoDraws(0))


def test_a_draw_whose_peak_fits_is_drawn(four_mib_available):
    from privrelease.noise import Laplace, VectorLaplace

    # 10,000 values: 0.8 MB at 80 bytes a value, within the 4 MiB
    assert Laplace(epsilon=1.0, random_state=0).sample(10_000).shape == (10_000,)
    assert VectorLaplace(dimension=10_000, epsilon=1.0, sensitivity=1.0, random_state=0).sample().shape == (10_000,)


def test_check_allocation_counts_the_peak_per_value_against_the_memory_available(monkeypatch):
    from privrelease.utils import _validation

    monkeypatch.setattr(_validation, "_physical_memory", lambda: 2**30)
    monkeypatch.setattr(_validation, "_available_memory", lambda: 2**20, raising=False)
    _validation.check_allocation(2**17, "x", itemsize=8)            # 1 MiB: fits exactly
    with pytest.raises(ValueError, match=r"x would need 1 MiB \(16,385 values of 64 bytes.* 1 MiB of memory "
                                         r"available \(1 GiB in all\)"):
        _validation.check_allocation(2**14 + 1, "x", itemsize=64)  # 64 bytes more than the 1 MiB available


# ------------------------------------------------------------------ 2. a subnormal Laplace scale
@pytest.mark.parametrize("scale, sensitivity", [(5e-324, 1.0), (1e-310, 1.0), (1e-300, 1e10)])
def test_a_scale_whose_noise_cannot_move_the_value_warns_like_scale_zero(scale, sensitivity):
    """Laplace(scale=5e-324) returned the values unchanged with effective_epsilon=inf and no warning (only
    scale=0.0 warned): 1 + 5e-324 * noise is 1 for every draw within the sampler's reach (150 scales)."""
    from privrelease.noise import Laplace

    with pytest.warns(PrivacyLeakWarning, match="no differential privacy"):
        m = Laplace(scale=scale, sensitivity=sensitivity, random_state=0)
    assert m.effective_epsilon == np.inf
    if scale < 1e-307:
        np.testing.assert_array_equal(m.randomise(np.ones(5)), np.ones(5))


def test_a_normal_tiny_scale_keeps_its_proven_epsilon_without_a_warning():
    from privrelease.noise import Laplace

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        m = Laplace(scale=1e-300, sensitivity=1.0)
    assert m.effective_epsilon >= 1e300 and Fraction(m.effective_epsilon) >= 1 / Fraction(1e-300)


# ------------------------------------------------------------------ 3. masked arrays on the privacy paths
MASKED = np.ma.masked_array([0.5, 1000.0], mask=[0, 1])


def _masked_paths():
    from privrelease.auctions import DCLEF, fair_inner_product
    from privrelease.contracts import privacy_cost
    from privrelease.noise import Laplace
    from privrelease.regression import brier_payment

    return {
        "Laplace.randomise": (lambda m: Laplace(epsilon=1.0, random_state=0).randomise(m), "value"),
        "snapping": (lambda m: Laplace(epsilon=1.0, snapping_bound=10.0, random_state=0).randomise(m), "value"),
        "DCLEF.sample": (lambda m: DCLEF([1.0, 1.0], [1.0, 0.0], (0.0, 1000.0)).sample(m, random_state=0), "d"),
        "fair_inner_product": (lambda m: fair_inner_product(m, [1.0, 1.0], 1.0), "unit_costs"),
        "privacy_cost": (lambda m: privacy_cost(m, 1.0), "valuation"),
        "brier_payment": (lambda m: brier_payment(np.clip(m, -1, 1), [0.0, 0.0]), "outcome"),
        "accountant": (lambda m: PrivacyAccountant().spend(None, population="p", individual_epsilons=m),
                       "individual_epsilons"),
    }


@pytest.mark.parametrize("path", list(_masked_paths()))
def test_a_masked_array_is_refused_wherever_a_privacy_path_takes_an_array(path):
    """Laplace(epsilon=1).randomise(np.ma.masked_array([1., 1000.], mask=[0, 1])) released the hidden 1000 (plus
    noise) and returned a plain array: np.asarray drops the mask. check_rating_matrix refuses such an array; so does
    every privacy path now, before anything is drawn or recorded."""
    call, name = _masked_paths()[path]
    with pytest.raises(ValueError, match=rf"{name} is a masked array with 1 masked entry"):
        call(MASKED)
    call(np.ma.masked_array([0.5, 0.25], mask=[0, 0]))  # nothing masked: the array is its data


# ------------------------------------------------------------------ 5. DCLEFEstimator's parameters after fit
@pytest.mark.parametrize("name, value", [("budget", 100.0), ("predictor", "ridge"), ("n_neighbors", 2),
                                         ("bandwidth", 0.5), ("alpha", 3.0), ("cap_policy", "raise")])
def test_dclef_estimator_refuses_a_parameter_changed_after_fit(name, value):
    """set_params(budget=100) after a fit at budget=1 bought five queries at the new budget (eps 5.0 spent where the
    fitted estimator spends 1.67), without a refit or an error: predict read the parameter at each call."""
    from privrelease.auctions import DCLEFEstimator

    X, d = dclef_data(30)
    # the weights' parameter of the predictor that reads it (a kNN predictor reads neither bandwidth nor alpha)
    predictor = {"bandwidth": "nadaraya_watson", "alpha": "ridge"}.get(name, "knn")
    acc = PrivacyAccountant()
    est = DCLEFEstimator(budget=1.0, data_range=(1, 5), predictor=predictor, accountant=acc, random_state=0).fit(X, d)
    est.predict(X[:5])
    spent = acc.spent
    fresh = PrivacyAccountant()
    DCLEFEstimator(budget=1.0, data_range=(1, 5), predictor=predictor, accountant=fresh,
                   random_state=0).fit(X, d).predict(X[:5])
    assert spent == fresh.spent  # five queries at the fitted budget
    est.set_params(**{name: value})
    for call in (est.predict, est.auction_weights):
        with pytest.raises(ValueError, match=rf"{name}=.* is not the value this DCLEFEstimator was fitted with.*"
                                             "call fit again"):
            call(X[:5])
    assert acc.spent == spent and len(acc) == 5  # nothing recorded
    est.fit(X, d).predict(X[:1])                 # refitted: the new value holds


def test_dclef_estimator_takes_an_equal_value_set_again():
    from privrelease.auctions import DCLEFEstimator

    X, d = dclef_data(30)
    acc = PrivacyAccountant()
    est = DCLEFEstimator(budget=1, data_range=(1, 5), accountant=acc, random_state=0).fit(X, d)
    est.set_params(budget=1.0, n_neighbors=5)
    est.predict(X[:2])
    assert len(acc) == 2
    # data_range and epsilon_cap are read at fit only: the fitted ones hold until the next fit
    est.set_params(data_range=(0, 10), epsilon_cap=1e9).predict(X[:1])
    assert est.data_range_ == (1.0, 5.0) and est.epsilon_cap_ is None and len(acc) == 3


# ------------------------------------------------------------------ 9. the solver's tolerance
PRIOR = np.array([[0.3, 0.2], [0.1, 0.4]])
HAMMING = np.array([[0.0, 1.0], [1.0, 0.0]])


def test_a_tolerance_that_certifies_every_mapping_is_refused():
    """tol=1e300 returned status 'optimal' at 0.0424 bits, 2.8 times the optimum 0.01515: no mapping of 2 private
    values to 2 outputs leaks more than log2(min(2, 2)) = 1 bit (I(A; C_hat) <= min(H(A), H(C_hat)); the maximal
    leakage log2 sum_j max_a p(j|a) <= log2 min(|A|, n_out)), so a gap of 1 bit certifies any of them."""
    from privrelease.mapping import privacy_distortion_curve, solve_mapping

    most = math.log2(min(HAMMING.shape[1], PRIOR.shape[0]))
    for tol in (1e300, most, np.nextafter(most, 2)):
        with pytest.raises(ValueError, match=r"tol=.* bits is at least the most any mapping of 2 private values to 2 "
                                             r"outputs can leak \(log2\(min\(\|A\|, n_outputs\)\) = 1 bits\)"):
            solve_mapping(PRIOR, HAMMING, delta=0.3, tol=tol)
    with pytest.raises(ValueError, match=r"tol=1e\+300 bits"):
        privacy_distortion_curve(PRIOR, HAMMING, [0.3, 0.6], tol=1e300)
    with pytest.raises(ValueError, match=r"tol=1\.0 bits"):
        solve_mapping(PRIOR, HAMMING, delta=0.3, tol=1.0, leakage="maximal_leakage")
    # just below the bound: accepted, and what it certifies holds against an independent formulation
    tol = np.nextafter(most, 0)
    res = solve_mapping(PRIOR, HAMMING, delta=0.3, tol=tol)
    assert res.certificate["gap_bits"] <= tol
    assert res.leakage <= reference_leakage(PRIOR, HAMMING, 0.3) + tol


def test_the_default_tolerance_holds_for_a_prior_of_tiny_entropy():
    """The bound depends on the shapes only: a prior with H(A) of 2e-11 bits (every mapping leaks less than the
    default tol) keeps tol=1e-6, and its answer leaks at most H(A)."""
    from privrelease.mapping import solve_mapping

    prior = np.array([[0.5 - 5e-13, 0.5 - 5e-13], [1e-12, 0.0]])
    pa = prior.sum(axis=1)
    entropy = -(pa * np.log2(pa)).sum()
    assert entropy < 1e-10
    res = solve_mapping(prior, HAMMING, delta=0.0)
    assert res.leakage <= entropy


# ------------------------------------------------------------------ 10. booleans in the auctions' vectors
@pytest.mark.parametrize("call, name", [
    (lambda: __import__("privrelease.auctions", fromlist=["x"]).fair_inner_product([1.0, 2.0], [True, False], 1.0),
     "weights"),
    (lambda: __import__("privrelease.auctions", fromlist=["x"]).fair_inner_product(np.array([True, False]),
                                                                                   [1.0, 2.0], 1.0), "unit_costs"),
    (lambda: __import__("privrelease.auctions", fromlist=["x"]).fair_inner_product([1.0, True], [1.0, 2.0], 1.0),
     "unit_costs"),
    (lambda: __import__("privrelease.auctions", fromlist=["x"]).privacy_index([0.1, False], [1.0, 1.0]), "epsilons"),
    (lambda: __import__("privrelease.auctions", fromlist=["x"]).DCLEFEstimator(budget=1.0, data_range=(1, 5))
     .fit(*dclef_data(30), unit_costs=np.ones(30, bool)), "unit_costs"),
], ids=["weights list", "costs bool array", "True among floats", "epsilons", "estimator unit_costs"])
def test_booleans_in_an_auction_vector_are_refused(call, name):
    """fair_inner_product([1., 2.], [True, False], 1.) read the weights as 1 and 0, while budget=True is refused."""
    with pytest.raises(TypeError, match=rf"{name} must be an array of real numbers, got .*(boolean|bool)"):
        call()


def test_dclef_still_takes_an_auction_selected_mask_as_x():
    from privrelease.auctions import DCLEF, fair_inner_product

    res = fair_inner_product([0.1, 0.2, 5.0], [1.0, 1.0, 1.0], 1.0, data_range=(0, 1))
    assert DCLEF([1.0, 1.0, 1.0], res.selected, (0, 1)).sigma == DCLEF([1.0, 1.0, 1.0], res.x, (0, 1)).sigma


# ------------------------------------------------------------------ 11. design_menu's option
def test_design_menu_option_is_the_integer_1_or_2():
    from privrelease.contracts import design_menu

    for option in (1.0, 2.0, True, "1"):
        with pytest.raises(ValueError, match=r"option must be 1 .* as an integer, got"):
            design_menu(1.0, 2.0, 0.5, 1.0, option=option)
    menu = design_menu(1.0, 2.0, 0.5, 1.0, option=np.int64(2))
    assert type(menu.option) is int and menu == design_menu(1.0, 2.0, 0.5, 1.0, option=2)


# ------------------------------------------------------------------ 12. a 2-D privacy grid
def test_check_privacy_grid_refuses_a_grid_of_two_dimensions():
    from privrelease.evaluation import check_privacy_grid

    for grid in ([[0.1, 0.2]], np.array([[0.1], [0.2]])):
        with pytest.raises(ValueError, match=r"deltas must be 1-D .*got shape \((1, 2|2, 1)\)"):
            check_privacy_grid(grid)
    np.testing.assert_array_equal(check_privacy_grid([0.1, 0.2]), [0.1, 0.2])
    np.testing.assert_array_equal(check_privacy_grid(np.array(0.5)), [0.5])


# ------------------------------------------------------------------ 13. the accountant's population names
def test_population_names_hold_integers_only():
    """population=1 then population=1.0 (or np.int64(1)) merged into one ledger: 1.0 == 1 and they hash alike, as
    True does (refused). One rule: numbers in a name are integers, numpy's kept as Python ints; others refused."""
    acc = PrivacyAccountant()
    acc.spend(None, population=1, individual_epsilons=[0.1])
    for name in (1.0, np.float64(1.0), Fraction(1), ("run", 1.0), 1 + 0j):
        with pytest.raises(TypeError, match=r"numbers in a name must be integers"):
            acc.spend(None, population=name, individual_epsilons=[0.1])
    acc.spend(None, population=np.int64(1), individual_epsilons=[0.1])
    acc.spend(None, population=("run", np.int32(2)), individual_epsilons=[0.3])
    assert acc.populations() == [1, ("run", 2)] and type(acc.populations()[0]) is int
    assert acc.individual_spent(1).tolist() == [0.2] and acc.individual_spent(np.int64(1)).tolist() == [0.2]
    assert acc.records.population.tolist()[:2] == [1, 1] and math.isclose(acc.spent, 0.5)
    with pytest.raises(KeyError, match="no release recorded for population 1.0"):
        acc.individual_spent(1.0)


# ------------------------------------------------------------------ 17. an overflowing privacy cost
def test_privacy_cost_refuses_an_overflow():
    """privacy_cost(1.0, 1000.0, cost='exponential') returned inf without a warning; design_contract refuses it."""
    from privrelease.contracts import privacy_cost

    with pytest.raises(ValueError, match=r"is infinite.*valuation=1\.0, epsilon=1000\.0.*epsilon <= 709\.78"):
        privacy_cost(1.0, 1000.0, cost="exponential")
    with pytest.raises(ValueError, match=r"is infinite.*valuation=1e\+308, epsilon=10\.0"):
        privacy_cost(1e308, 10.0)
    assert privacy_cost(1.0, 709.0, cost="exponential") == math.expm1(709.0)
    assert privacy_cost(np.inf, 1.0) == np.inf  # an infinite valuation: no overflow
