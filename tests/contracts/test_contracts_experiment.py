"""Smoke test of the contract_design experiment (quick mode) and its headline numbers."""

import pytest

from privrelease.runner import Report
from privrelease.runner.experiments import contract_design


def test_contract_design_quick(tmp_path):
    rep = Report(tmp_path, title="contracts")
    out = contract_design.run(rep, random_state=0, quick=True)
    rep.save()
    assert 0 < out["full_info_saving_at_K0.3"] < 1  # A_new strictly cheaper than A_u
    assert out["menu_payment_at_K0.3"] < out["A_u_payment_at_K0.3"]
    # slides: 0.4; we find about 0.44, and the quick grid of 10 targets has steps of 0.131
    step = (1.2 - 0.02) / 9
    assert 0.4 <= out["option1_stops_separating_at_K"] <= 0.45 + step
    assert out["monte_carlo_mse_over_K"] == pytest.approx(1.0, abs=0.05)
    for name in ("full_information.csv", "menus.csv", "menus.png", "full_information.png",
                 "report.md"):
        assert (tmp_path / name).is_file()
