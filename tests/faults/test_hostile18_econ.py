"""The economics mechanisms against their papers (eighteenth audit): the privacy level a menu of contracts records,
the per-individual epsilon cap of DCLEFEstimator decided exactly, releases that use no private value, and callable
costs written for scalars. Each test checks a property or an independent exact computation (fractions)."""

from fractions import Fraction

import numpy as np
import pytest

from privrelease.contracts import BiasedLaplaceMechanism, design_contract, design_menu


def _below_delivered(a, b, eps):
    """Entries whose recorded ``eps_i`` is below ``a_i / b`` in exact arithmetic (the level Laplace noise of scale
    ``b`` delivers to the term ``a_i d_i``, ``d_i`` in ``[0, 1]``)."""
    return [i for i, (ai, e) in enumerate(zip(np.atleast_1d(a).tolist(), np.atleast_1d(eps).tolist()))
            if Fraction(e) < Fraction(ai) / Fraction(float(b))]


# ---------------------------------------------------------------- contracts: the privacy level recorded
def test_menu_epsilons_cover_the_delivered_level():
    rng = np.random.default_rng(2)
    below = 0
    for _ in range(5):
        m = design_menu(1.0, rng.uniform(1.0, 5.0), rng.uniform(0.0, 1.0), rng.uniform(0.1, 1.0))
        below += len(_below_delivered([m.a_high, m.a_low], m.b, [m.eps_high, m.eps_low]))
    assert below == 0


# ---------------------------------------------------------------- DCLEFEstimator: the per-individual cap, exactly
def _cap_instance():
    """Four individuals, all neighbours of the query (k-NN weights 1/4 each): the auction buys the cheapest alone,
    at ``eps = (1/4) / (3/4)``, which the noise of scale ``4 * 0.75 = 3`` delivers as 1/3 exactly: the float just
    above ``fl(1/3)``."""
    Y = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    d = np.array([1.0, 2.0, 3.0, 4.0])
    costs = np.array([1.0, 10.0, 10.0, 10.0])
    return Y, d, costs


@pytest.mark.filterwarnings("ignore::privrelease.exceptions.PrivacyLeakWarning")
def test_epsilon_cap_is_never_exceeded_by_an_ulp():
    from privrelease.accounting import PrivacyAccountant
    from privrelease.auctions import DCLEFEstimator

    Y, d, costs = _cap_instance()
    cap = 1.0 / 3.0
    est = DCLEFEstimator(budget=1.0, predictor="knn", n_neighbors=4, data_range=(1, 5), epsilon_cap=cap,
                         random_state=0).fit(Y, d, unit_costs=costs)
    with PrivacyAccountant() as acc:
        est.predict(np.array([[0.5, 0.5]]))
        E = acc.individual_epsilons(est.population_).toarray()
    composed = [sum((Fraction(x) for x in E[:, i]), Fraction(0)) for i in range(4)]
    assert max(composed) <= Fraction(cap)
    # without the cap she is bought at exactly that level (the cap is what keeps her out)
    free = DCLEFEstimator(budget=1.0, predictor="knn", n_neighbors=4, data_range=(1, 5),
                          random_state=0).fit(Y, d, unit_costs=costs)
    with PrivacyAccountant() as acc:
        free.predict(np.array([[0.5, 0.5]]))
        e0 = acc.individual_epsilons(free.population_).toarray()[0, 0]
    assert e0 > cap


@pytest.mark.filterwarnings("ignore::privrelease.exceptions.PrivacyLeakWarning")
def test_epsilon_cap_raise_policy_refuses_a_query_an_ulp_over():
    from privrelease.accounting import PrivacyAccountant
    from privrelease.auctions import DCLEFEstimator
    from privrelease.exceptions import BudgetExceededError

    Y, d, costs = _cap_instance()
    est = DCLEFEstimator(budget=1.0, predictor="knn", n_neighbors=4, data_range=(1, 5), epsilon_cap=1.0 / 3.0,
                         cap_policy="raise", random_state=0).fit(Y, d, unit_costs=costs)
    with PrivacyAccountant():
        with pytest.raises(BudgetExceededError, match="individual 0"):
            est.predict(np.array([[0.5, 0.5]]))


@pytest.mark.filterwarnings("ignore::privrelease.exceptions.PrivacyLeakWarning")
def test_epsilon_cap_met_exactly_by_two_queries_is_allowed():
    # two queries of eps = 1/2 each (weights 1/3, one bought: (1/3) / (2/3)) compose to 1 exactly: a cap of 1 allows
    # both (an exact decision, not a tolerance)
    from privrelease.accounting import PrivacyAccountant
    from privrelease.auctions import DCLEFEstimator

    Y = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    est = DCLEFEstimator(budget=1.0, predictor="knn", n_neighbors=3, data_range=(1, 5), epsilon_cap=1.0,
                         random_state=0).fit(Y, np.array([1.0, 2.0, 3.0]), unit_costs=np.array([1.0, 10.0, 10.0]))
    with PrivacyAccountant() as acc:
        est.predict(np.array([[0.5, 0.5], [0.5, 0.5]]))
        E = acc.individual_epsilons(est.population_).toarray()
    composed = sum((Fraction(x) for x in E[:, 0]), Fraction(0))
    assert composed == 1
    assert E[0, 0] == E[1, 0] == 0.5


# ---------------------------------------------------------------- contracts: a cost written for scalars
@pytest.mark.parametrize("design", [lambda cost: design_contract([1.0, 2.0], 0.5, cost=cost),
                                    lambda cost: design_menu(1.0, 2.0, 0.5, 0.5, cost=cost)])
def test_a_cost_written_for_scalars_is_refused_naming_the_cost_and_the_fix(design):
    import math

    def scalar_cost(v, eps):
        return v * math.expm1(float(eps))

    with pytest.raises(TypeError, match=r"cost scalar_cost\(v, eps\) failed on numpy arrays.*elementwise"):
        design(scalar_cost)


# ---------------------------------------------------------------- DCLEF: a release that uses no private value
def test_a_dclef_that_uses_no_private_value_releases_its_constant_without_a_leak_warning():
    import warnings

    from privrelease.accounting import PrivacyAccountant
    from privrelease.auctions import DCLEF, DCLEFEstimator
    from privrelease.exceptions import PrivacyLeakWarning

    est = DCLEF([0.0, 0.0, 0.0], [0, 0, 0], (1, 5))
    assert est.sigma == 0 and est.epsilons.tolist() == [0.0, 0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert est.sample([1.0, 2.0, 5.0], random_state=0) == 0.0
        # the ridge weights of a zero query are all 0: nothing is bought, eps = 0 is recorded, and the release
        # is the constant 0 (no private value enters it)
        Y = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        model = DCLEFEstimator(predictor="ridge", data_range=(1, 5), random_state=0).fit(Y, [1.0, 2.0, 3.0])
        with PrivacyAccountant() as acc:
            assert model.predict(np.zeros((1, 2))).tolist() == [0.0]
        assert acc.spent == 0.0
    # a DCLEF releasing a private value without noise still says so
    with pytest.warns(PrivacyLeakWarning):
        leak = DCLEF([1.0, 1.0], [1, 1], (1, 5))
    with pytest.warns(PrivacyLeakWarning, match="no differential privacy"):
        assert leak.sample([1.0, 2.0], random_state=0) == 3.0


def test_a_pure_noise_contract_without_noise_releases_its_constant_without_a_leak_warning():
    # K = n^2 / 4: the cheapest answer ignores the data (a = 0) and needs no noise (b = 0); every eps_i is 0
    import warnings

    from privrelease.exceptions import PrivacyLeakWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        c = design_contract([1.0, 2.0], 1.0)
        assert c.b == 0.0 and c.a.tolist() == [0.0, 0.0] and c.epsilons.tolist() == [0.0, 0.0]
        mech = c.mechanism(random_state=0)
        assert mech.release([0.1, 0.9]) == 1.0            # sum_i (1 - a_i) / 2
        assert BiasedLaplaceMechanism([0.0], 0.0).release([0.3]) == 0.5
