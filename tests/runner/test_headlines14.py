"""Headline numbers are computed at the value their name says, whatever grid ``--set`` gives (fourteenth audit:
the first or last row of a curve was reported as "no erasure", "perfect privacy", "zero budget", "at K0.3")."""

import math
from pathlib import Path

import numpy as np
import pytest

from privrelease.mapping import mutual_information
from privrelease.runner import run_pipeline

pytestmark = pytest.mark.slow  # started first under pytest-xdist (tests/conftest.py)

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _run(name, tmp_path, **overrides):
    return run_pipeline(PIPELINES / f"{name}.toml", tmp_path / name, quick=True, overrides=overrides)[1]


def test_census_leakage_without_erasure_is_the_priors_whatever_the_budgets(tmp_path):
    # deltas=[1.0] reported the leakage at one erasure (0.0195 bits) as the leakage without erasure (0.164)
    from privrelease.mapping import census_prior

    head = _run("census_erasure", tmp_path, deltas=[1.0])
    assert head["leakage_no_erasure_bits"] == pytest.approx(mutual_information(census_prior()[0]), rel=1e-12)
    assert head["leakage_no_erasure_bits"] > 0.1 > head["leakage_one_erasure_bits"]


def test_auction_headlines_follow_the_budgets_not_their_order(tmp_path):
    # budgets=[100, 1]: the budget-100 row was "rmse_at_zero_budget" and the budget-1 row "rmse_at_max_budget";
    # budgets=[0.0] alone failed with "min() arg is an empty sequence"
    head = _run("privacy_auction", tmp_path, budgets=[100.0, 1.0])
    assert math.isnan(head["rmse_at_zero_budget"])
    ordered = _run("privacy_auction", tmp_path / "b", budgets=[1.0, 100.0])
    assert head["rmse_at_max_budget"] == ordered["rmse_at_max_budget"]
    zero = _run("privacy_auction", tmp_path / "c", budgets=[0.0])
    assert zero["rmse_at_zero_budget"] == zero["rmse_at_max_budget"]


@pytest.mark.parametrize("k_max", [0.1, 1.2])
def test_contract_headlines_are_at_k_0_3_whatever_the_grid(tmp_path, k_max):
    # k_max=0.1 reported the K = 0.1 row as "at K0.3"; the menus' caption said v_H = 5, v_L = 1 whatever was set
    from privrelease.contracts import design_contract, design_menu

    head = _run("contract_design", tmp_path, k_max=k_max, v_high=50.0, v_low=20.0, prob_high=0.9)
    menu = design_menu(20.0, 50.0, 0.9, 0.3, option=1)
    assert head["menu_payment_at_K0.3"] == pytest.approx(menu.expected_payment, rel=1e-9)
    assert head["A_u_payment_at_K0.3"] == pytest.approx(menu.unbiased_payment, rel=1e-9)
    c = design_contract([5.0, 10.0], 0.3, cost="exponential")
    assert head["full_info_saving_at_K0.3"] == pytest.approx(1 - c.total_payment / c.unbiased_payment, rel=1e-9)
    text = (tmp_path / "contract_design" / "report.md").read_text()
    assert "Menus under information asymmetry (v_H = 50, v_L = 20, pi = 0.9)" in text


def test_describe_auc_at_strength_0_is_nan_without_that_strength(tmp_path):
    head = _run("synthetic_ratings_describe", tmp_path, strengths=[2.0])
    assert np.isnan(head["make_ratings_auc_at_0"])


@pytest.mark.parametrize("name, key", [("iris_quantization", "ks"), ("politics_tv_binarized", "n_clusters"),
                                       ("politics_tv_ratings", "n_clusters")])
def test_one_cluster_is_refused_by_the_schema(tmp_path, name, key):
    # n_clusters=1 / ks=[1] passed the schema and the run failed later on the solver's "a single input carries no
    # information", naming no parameter
    from privrelease.runner import PipelineError

    value = [1] if key == "ks" else 1
    with pytest.raises(PipelineError, match=rf"parameter {key}(\[0\])? = 1: expected an integer in \[2, "):
        _run(name, tmp_path, **{key: value})
