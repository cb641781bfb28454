"""Findings of the review of the 21st hostile-input fixes (tol, accountant names, DCLEFEstimator parameters, output
folder messages, the noise vectors' memory message)."""

import pickle
import warnings

import numpy as np
import pytest

from privrelease.mapping import leakage, privacy_distortion_curve, solve_mapping


def test_a_single_output_takes_any_positive_tol():
    # log2(min(|A|, 1)) = 0: the tol check asked for 0 < tol < 0 and refused every tol; every mapping to one output
    # leaks 0 bits and is the optimum
    prior = np.array([[0.2, 0.3], [0.1, 0.4]])
    d = np.array([[0.0], [1.0]])
    for kwargs in ({"delta": 0.8}, {"max_leakage": 0.1}):
        res = solve_mapping(prior, d, **kwargs)
        assert res.status == "optimal" and res.leakage == 0.0
        np.testing.assert_array_equal(res.mapping, [[1.0], [1.0]])
        assert res.distortion == pytest.approx(0.7)  # p(c = 1) * 1
    curve = privacy_distortion_curve(prior, d, [0.8, 1.0], tol=0.5)
    assert (curve["status"] == "optimal").all() and (curve["leakage_bits"] == 0).all()
    with pytest.raises(ValueError, match=r"tol=1\.0 bits is at least .* expected 0 < tol < 1 "):
        solve_mapping(prior, np.eye(2), delta=0.5, tol=1.0)  # two outputs: at most 1 bit
    assert leakage(prior, np.eye(2)) < 1.0


def test_a_ledger_recorded_under_a_float_name_stays_readable():
    # an accountant pickled before float names were refused holds population 0.5: individual_spent(0.5) raised
    # "no release recorded for population 0.5; known: [0.5]"; 1.0 still never reads population 1
    from privrelease.accounting import PrivacyAccountant

    acc = PrivacyAccountant()
    acc.spend(0.5, population=1, individual_epsilons=[0.25, 0.5])
    old = pickle.loads(pickle.dumps(acc))
    old._populations[0.5] = old._populations.pop(1)  # the ledger as the older version keyed it
    np.testing.assert_array_equal(old.individual_spent(0.5), [0.25, 0.5])
    with pytest.raises(KeyError, match="population 1.0"):
        acc.individual_spent(1.0)
    with pytest.raises(TypeError):
        acc.spend(0.1, population=0.5, individual_epsilons=[0.1])


def test_dclef_refuses_only_the_parameters_its_predictor_reads():
    from privrelease.auctions import DCLEFEstimator

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.uniform(0, 1, 40)
    est = DCLEFEstimator(budget=5.0, data_range=(0, 1), predictor="knn", random_state=0).fit(X, y)
    first = est.predict(X[:2])
    est.set_params(bandwidth=2.0, alpha=3.0)  # a kNN predictor reads neither
    assert est.predict(X[:2]).shape == first.shape
    est.set_params(n_neighbors=3)
    with pytest.raises(ValueError, match=r"n_neighbors=3 is not the value .* fitted with \(n_neighbors=5\)"):
        est.predict(X[:2])
    ridge = DCLEFEstimator(budget=5.0, data_range=(0, 1), predictor="ridge", random_state=0).fit(X, y)
    ridge.set_params(n_neighbors=7)
    ridge.predict(X[:1])
    ridge.set_params(alpha=2.0)
    with pytest.raises(ValueError, match=r"alpha=2\.0 is not the value"):
        ridge.predict(X[:1])


def test_an_output_folder_error_names_the_path_given(tmp_path, monkeypatch):
    from privrelease.runner import OutputFolderError
    from privrelease.runner._report import prepare_output_folder

    (tmp_path / "lnk").symlink_to(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputFolderError, match=r"holds symbolic link.*\(the folder 'nonexist/\.\.' names\)"):
        prepare_output_folder("nonexist/..")
    assert not (tmp_path / "nonexist").exists()


def test_the_noise_vectors_memory_message_counts_vectors(monkeypatch):
    from privrelease.noise import VectorLaplace
    from privrelease.utils import _validation

    monkeypatch.setattr(_validation, "_available_memory", lambda: 2**30)
    with pytest.raises(ValueError, match=r"size=5000000: the noise vectors would need 2\.09 GiB \(5,000,000 vectors "
                                         r"of 448 bytes"):
        VectorLaplace(dimension=10, epsilon=1.0, sensitivity=1.0, random_state=0).sample(5_000_000)


@pytest.mark.parametrize("call", [
    lambda: __import__("privrelease.contracts", fromlist=["x"]).design_contract([1.0, True], 0.25),
    lambda: __import__("privrelease.contracts", fromlist=["x"]).design_contract(np.array([True, True]), 0.25),
    lambda: __import__("privrelease.contracts", fromlist=["x"]).privacy_cost([1.0, 2.0], [True, 0.5]),
    lambda: __import__("privrelease.contracts", fromlist=["x"]).privacy_cost(True, 1.0),
])
def test_the_contracts_refuse_booleans_as_the_auctions_do(call):
    # the contracts read True / False as 1 / 0 (a valuation of 1, an epsilon of 0) where the auctions refuse them
    with pytest.raises(TypeError, match="boolean"):
        call()


def test_the_contracts_still_take_numbers_of_every_kind():
    from privrelease.contracts import design_contract, privacy_cost

    ref = design_contract([1.0, 2.0], 0.25).total_payment
    for vals in ([1, 2], np.array([1, 2], dtype=np.int8), np.array([1.0, 2.0], dtype=object), (1.0, np.float32(2))):
        assert design_contract(vals, 0.25).total_payment == ref
    assert privacy_cost(2, 3) == 6.0


def test_a_valuation_of_zero_costs_nothing_at_any_epsilon():
    # 0 * expm1(1000) = 0 * inf was nan ("returned nan"), 0 * inf likewise for the linear cost
    from privrelease.contracts import privacy_cost

    assert privacy_cost(0.0, 1000.0, cost="exponential") == 0.0
    assert privacy_cost(0.0, np.inf) == 0.0
    np.testing.assert_array_equal(privacy_cost([0.0, 1.0], [2.0, 2.0], cost="exponential"), [0.0, np.expm1(2.0)])
