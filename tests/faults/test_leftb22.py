"""Findings left open by the 21st review, outside the solver: bounds stated exactly in messages, the cost of the
boolean and text scans on long inputs, memory checks that count a computation's real peak, and the parameter-change
check shared by the DCLEFEstimator and the mappers."""

import math
import os
import re
import sys

import numpy as np
import pytest

from privrelease.contracts import design_contract, design_menu, privacy_cost

_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)"


def _stated(call, after):
    """The number the message of ``call``'s ValueError states right after the text ``after``."""
    with pytest.raises(ValueError) as info:
        call()
    found = re.search(re.escape(after) + _NUMBER, str(info.value))
    assert found, str(info.value)
    return float(found.group(1))


# ----------------------------------------------------------------------------- 1. exact bounds in messages

def test_a_contracts_stated_sum_of_valuations_is_accepted_when_typed_back():
    # "expected valuations <= 5.77433e+307": 6 digits rounded the largest valuation up, and the value as printed
    # was refused again
    limit = _stated(lambda: design_contract([1e308], 1.0, cost="exponential"), "valuations <= ")
    c = design_contract([limit], 1.0, cost="exponential")
    assert math.isfinite(c.total_payment)
    with pytest.raises(ValueError, match="overflows float64"):
        design_contract([float(np.nextafter(limit, np.inf)) * (1 + 1e-12)], 1.0, cost="exponential")


def test_a_menus_stated_largest_high_valuation_is_accepted_when_typed_back():
    limit = _stated(lambda: design_menu(1.0, 5e307, 0.5, 0.3, option=2), "v_high <= ")
    menu = design_menu(1.0, limit, 0.5, 0.3, option=2)
    assert math.isfinite(menu.expected_payment)
    # at that bound, this menu's own payments overflow: the bound they state passes in turn
    top = _stated(lambda: design_menu(limit / 2, limit, 0.5, 0.3, option=2), "expected v_high <= ")
    menu = design_menu(limit / 2, top, 0.5, 0.3, option=2)
    assert math.isfinite(menu.p_high) and math.isfinite(menu.p_low)


def test_the_exponential_costs_stated_largest_epsilon_costs_a_finite_amount():
    # "(epsilon <= 709.783 for this valuation)": exp(709.783) overflows float64
    eps = _stated(lambda: privacy_cost(1.0, 1000.0, "exponential"), "epsilon <= ")
    assert eps == pytest.approx(math.log(np.finfo(np.float64).max), rel=1e-12)
    assert math.isfinite(privacy_cost(1.0, eps, "exponential"))


def test_the_noise_scales_stated_bound_is_accepted_when_typed_back():
    from privrelease.noise import Laplace

    scale = _stated(lambda: Laplace(scale=1e307), "expected a scale <= ")
    assert Laplace(scale=scale).scale == scale
    # the smallest epsilon at sensitivity 1: the ratio stated is float64's largest number (it said "1.8e308",
    # which float64 reads as inf)
    ratio = _stated(lambda: Laplace(epsilon=1e-300, sensitivity=1e10), "expected a ratio of at most ")
    assert ratio == np.finfo(np.float64).max


def test_the_regressions_stated_response_bound_gives_a_finite_sensitivity():
    from privrelease.regression import ridge_sensitivity

    Y = _stated(lambda: ridge_sensitivity(7, 1.5, response_bound=1e308), "expected response_bound <= ")
    assert math.isfinite(ridge_sensitivity(7, 1.5, response_bound=Y))


def test_the_brier_payments_stated_largest_range_is_accepted():
    # "expected offset + scale at most 1.8e+308": float64 reads 1.8e308 as inf
    from privrelease.regression import brier_payment

    top = _stated(lambda: brier_payment(0.5, 0.5, scale=1e308, offset=1e308), "expected offset + scale at most ")
    assert top == np.finfo(np.float64).max
    assert math.isfinite(brier_payment(0.5, 0.5, scale=top, offset=0.0))


def test_the_stated_largest_activity_skew_makes_ratings():
    from privrelease.datasets import make_ratings

    skew = _stated(lambda: make_ratings(6, 5, mean_ratings_per_user=2.0, activity_skew=1e300, random_state=0),
                   "activity_skew must be <= ")
    R, _, _ = make_ratings(6, 5, mean_ratings_per_user=2.0, activity_skew=skew, random_state=0)
    assert R.shape == (6, 5)


def test_the_accountants_stated_remaining_budget_can_be_spent():
    # "but only 0.666667 of the budget remains": spending 0.666667 was refused again (1 - 1/3 = 0.6666666666666667)
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant(epsilon=1.0)
    acc.spend(1 / 3)
    left = _stated(lambda: acc.spend(0.9), "but only ")
    assert left == acc.remaining()
    acc.spend(left)


def test_the_stated_smallest_normal_rating_is_accepted():
    from privrelease.utils import check_rating_matrix

    tiny = np.finfo(np.float64).tiny
    low = _stated(lambda: check_rating_matrix(np.array([[tiny / 2, 1.0]])), "closer to 0 than ")
    assert low == tiny
    check_rating_matrix(np.array([[low, 1.0]]))


def test_the_tol_bound_is_the_exact_largest_leakage():
    from privrelease.mapping import solve_mapping

    prior = np.full((3, 3), 1 / 9)
    d = 1.0 - np.eye(3)
    most = _stated(lambda: solve_mapping(prior, d, delta=0.5, tol=5.0), "expected 0 < tol < ")
    assert most == math.log2(3)


def test_the_runners_stated_bounds_are_accepted_when_typed_back():
    from privrelease.runner import check_run
    from privrelease.runner._schema import PipelineError

    with pytest.raises(PipelineError) as info:
        check_run("contract_design", {"valuations": [1e308], "k_min": 0.05})
    top = float(re.search(r"summing to at most " + _NUMBER, str(info.value)).group(1))
    check_run("contract_design", {"valuations": [top], "k_min": 0.05})
    with pytest.raises(PipelineError) as info:
        check_run("contract_design", {"v_high": 1e308, "k_min": 0.05})
    top = float(re.search(r"expected v_high <= " + _NUMBER, str(info.value)).group(1))
    check_run("contract_design", {"v_high": top, "k_min": 0.05})


# ----------------------------------------------------------------------------- 2. the cost of the scans

def _lines_run(call):
    """How many lines of the library run during ``call()`` (a scan in Python runs lines per value)."""
    import privrelease

    root = os.path.dirname(privrelease.__file__)
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if not frame.f_code.co_filename.startswith(root):
            return None
        if event == "line":
            count += 1
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(old)
    return count


def test_the_boolean_scan_does_not_run_python_per_value():
    # the auctions' vectors (a list of a million floats) were scanned value by value in Python (0.23 s)
    from privrelease.utils._validation import refuse_booleans

    small, large = [0.5] * 10, [0.5] * 5000
    for make in (list, tuple, lambda v: np.asarray(v, dtype=object)):
        assert _lines_run(lambda: refuse_booleans(make(large), "costs")) == \
            _lines_run(lambda: refuse_booleans(make(small), "costs"))
    # the same refusals
    for bad in ([1.0, True], (0.0, np.bool_(False)), np.array([2.0, True], dtype=object), [[1.0], [False]]):
        with pytest.raises(TypeError, match="boolean"):
            refuse_booleans(bad, "costs")
    with pytest.raises(TypeError, match=r"got the boolean True at index 3"):
        refuse_booleans([0.5, 1, 2.0, True, 3.0], "costs")
    refuse_booleans([1, 2.5, np.float32(3)], "costs")


def test_the_vectors_of_the_auctions_and_contracts_are_read_without_a_python_step_per_value():
    from privrelease.auctions._dclef import _check_vector
    from privrelease.contracts._design import _as_reals
    from privrelease.contracts._mechanism import _real_array
    from privrelease.mapping import squared_euclidean_distortion

    small, large = [0.5] * 10, [0.5] * 5000
    for read in (lambda v: _check_vector(v, "costs"), lambda v: _check_vector(np.asarray(v, dtype=object), "costs"),
                 lambda v: _as_reals(np.asarray(v, dtype=object), "valuations"),
                 lambda v: _real_array(np.asarray(v, dtype=object), "value"),
                 lambda v: squared_euclidean_distortion(np.asarray(v, dtype=object).reshape(-1, 10))):
        assert _lines_run(lambda: read(large)) == _lines_run(lambda: read(small))
    with pytest.raises(TypeError, match="must hold real numbers"):
        _real_array(np.array([1.0, 1j], dtype=object), "value")
    with pytest.raises(TypeError, match="must be real numbers"):
        _as_reals(np.array([1.0, "2"], dtype=object), "valuations")
    with pytest.raises(TypeError, match=r"holding '1\.5'"):
        _check_vector(np.array([1.0, "1.5"], dtype=object), "costs")


def test_the_text_scan_of_an_object_array_of_numbers_does_not_run_python_per_value():
    from privrelease.utils._validation import check_numeric_text

    small = np.random.default_rng(0).random((5, 4)).astype(object)
    large = np.random.default_rng(0).random((200, 100)).astype(object)
    assert _lines_run(lambda: check_numeric_text(large)) == _lines_run(lambda: check_numeric_text(small))
    text = large.copy()
    text[3, 7] = "4.5"
    text[5, 7] = b"x"
    with pytest.raises(TypeError, match=r"column 7 holds b'x' \(row 5\)"):
        check_numeric_text(text)
    text[5, 7] = "2"
    assert check_numeric_text(text) is text


# ----------------------------------------------------------------------------- 3. memory checks count the real peak
# Each request below fits in 1 MiB at 8 bytes per counted value (the count before) but holds more at its peak
# (measured): it is refused before any allocation. The tests never allocate a large array.
@pytest.fixture
def one_mib(monkeypatch):
    from privrelease.utils import _validation

    monkeypatch.setattr(_validation, "_physical_memory", lambda: 2**26)
    monkeypatch.setattr(_validation, "_available_memory", lambda: 2**20, raising=False)


def _refused(call, what):
    with pytest.raises(ValueError, match=what + r".* would need .* of memory available"):
        call()


def test_the_squared_distances_count_their_mask(one_mib):
    from privrelease.mapping import squared_euclidean_distortion

    A = np.random.default_rng(0).normal(size=(300, 2))   # 90,000 distances: 720 KB, 1.4 MB with the mask
    _refused(lambda: squared_euclidean_distortion(A), r"the distortion of 300 x 300 centers")


def test_the_erasure_distortion_counts_its_comparisons(one_mib):
    from privrelease.mapping import erasure_distortion

    rng = np.random.default_rng(0)
    X, Y = rng.integers(0, 3, size=(200, 4)), rng.integers(-1, 3, size=(300, 4))   # 60,000 pairs of 4 features
    _refused(lambda: erasure_distortion(X, Y), r"erasure_distortion of 200 inputs x 300 outputs")


def test_the_kde_grid_counts_its_log_densities(one_mib):
    from privrelease.mapping import kde_prior

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 2)), np.repeat([0, 1], 20)   # 20,000 points of 2 features: 320 KB counted before
    _refused(lambda: kde_prior(X, y, n_grid=20_000, bandwidths=[0.5, 0.5], random_state=0),
             r"n_grid=20000: the grid points")


def test_the_generated_ratings_count_the_sampling_chunk(one_mib):
    from privrelease.datasets import make_ratings

    # 300 users x 400 items: the sampling holds the 120,000 cells' keys and orders (3.7 MB) beside 800 KB counted
    _refused(lambda: make_ratings(300, 400, random_state=0), r"n_users=300, n_items=400")


def _small_ratings():
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    R = sp.random(300, 100, density=0.1, format="csr", random_state=0)
    R.data = rng.integers(1, 6, R.nnz).astype(float)
    return R


def test_the_recommenders_count_their_peak(monkeypatch):
    from privrelease.recommender import SurpriseRecommender
    from privrelease.utils import _validation

    R = _small_ratings()
    fitted = SurpriseRecommender("SVD", algo_params={"n_epochs": 1}, random_state=0).fit(R)
    monkeypatch.setattr(_validation, "_physical_memory", lambda: 2**26)
    monkeypatch.setattr(_validation, "_available_memory", lambda: 2**20, raising=False)
    # 300 x 100 dense predictions: 240 KB counted before, about 3.6 MB at the peak
    _refused(lambda: fitted.predict(R), r"predict\(X\) of 300 users x 100 items")
    # 300 users and 2 x 100 items x 250 factors: 1 MB counted before, about 4 MB at the peak
    _refused(lambda: SurpriseRecommender("SVD", algo_params={"n_factors": 250, "n_epochs": 1}).fit(R),
             r"n_factors=250: SVD's factor matrices")
    # 300 users squared: 720 KB counted before, about 3.9 MB with the counts and sums Surprise keeps beside them
    _refused(lambda: SurpriseRecommender("KNNBaseline", algo_params={"sim_options": {"user_based": True}}).fit(R),
             r"KNNBaseline's user similarities")
