"""Smoke test of the contract_design experiment (quick mode) and its headline numbers."""

import numpy as np
import pandas as pd
import pytest

from privrelease.runner import Report
from privrelease.runner.experiments import contract_design


def _brute_force_option1(K, v_low=1.0, v_high=5.0, pi=0.5, n=801):
    """Least expected payment of an option-1 menu on an (a_H, a_L) grid, linear cost.

    For fixed weights the payment ``2 (pi v_H a_H + (1 - pi) (v_L a_L + (v_H - v_L) a_H)) / b``
    (IR binding for the high type, IC for the low type) falls with ``b``, so ``b`` is the
    largest the accuracy constraint allows: ``2 b^2 = K - bias(a_H, a_L)``. Returns the
    minimum over ``0 <= a_H <= a_L <= 1`` and the least payment of a menu that does NOT
    separate the types (``a_H = 0``, or pooling ``a_H = a_L``).
    """
    a = np.linspace(0.0, 1.0, n)
    a_h, a_l = np.meshgrid(a, a, indexing="ij")
    bias = (pi**2 * (1 - a_h) ** 2 + (1 - pi) ** 2 * (1 - a_l) ** 2
            + 2 * pi * (1 - pi) * ((2 - a_h - a_l) / 2) ** 2)
    ok = (a_h <= a_l) & (bias < K)
    b = np.sqrt(np.where(ok, K - bias, 1.0) / 2)
    pay = 2 * (pi * v_high * a_h + (1 - pi) * (v_low * a_l + (v_high - v_low) * a_h)) / b
    pay = np.where(ok, pay, np.inf)
    pay[0, 0] = 0.0 if K >= 1.0 else np.inf       # pure noise: no weight, no payment
    return pay.min(), min(pay[0].min(), np.diagonal(pay).min())


def test_contract_design_quick(tmp_path):
    rep = Report(tmp_path, title="contracts")
    out = contract_design.run(rep, random_state=0, quick=True)
    rep.save()
    assert 0 < out["full_info_saving_at_K0.3"] < 1  # A_new strictly cheaper than A_u
    assert out["menu_payment_at_K0.3"] < out["A_u_payment_at_K0.3"]
    # the menus against a brute-force search of the slides' option-1 problem (linear cost):
    # same payments, and the types stop being separated (a_H = 0) exactly where the
    # brute force finds a_H = 0 optimal (the slides report K = 0.4)
    menus = pd.read_csv(tmp_path / "menus.csv")
    separated = []
    for K, paid in zip(menus["K"], menus["option1_payment"]):
        best, best_unseparated = _brute_force_option1(K)
        assert paid == pytest.approx(best, rel=1e-3, abs=1e-9)
        separated.append(best_unseparated > best * (1 + 1e-6))
    np.testing.assert_array_equal(menus["option1_regime"] == "menu", separated)
    first = menus["K"][~np.array(separated)].iloc[0]
    assert out["option1_stops_separating_at_K"] == first
    assert out["monte_carlo_mse_over_K"] == pytest.approx(1.0, abs=0.05)
    for name in ("full_information.csv", "menus.csv", "menus.png", "full_information.png",
                 "report.md"):
        assert (tmp_path / name).is_file()
