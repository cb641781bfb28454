"""The quick demo, run once: its reports, and each demo experiment's headline numbers.

``privrelease demo --quick`` runs every experiment whose data ships (census, Iris, Politics-and-TV
binarized and ratings, synthetic ratings, privacy auction, truthful regression, contract design)
in quick mode. The tests of those experiments' quick mode (formerly in ``tests/mapping``,
``tests/mappers``, ``tests/auctions``, ``tests/regression`` and ``tests/contracts``, each running the
experiment a second time) check the demo's run of it, after :meth:`DemoRun.experiment` has checked
that this run is exactly ``run(report, random_state=0, quick=True)``. They share one file so that
pytest-xdist (``--dist loadfile``, see the Makefile) runs the demo once, on one worker.
"""

import json

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # started first under pytest-xdist (tests/conftest.py)


def _plain(value):
    """Tuples as lists, recursively (a TOML file gives lists where a signature has tuples)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class DemoRun:
    """What one ``privrelease demo --quick`` run did: exit status, output, report folder, experiments."""

    def __init__(self, rc, out, err, folder, runs):
        self.rc, self.out, self.err, self.folder, self.runs = rc, out, err, folder, runs

    def experiment(self, name):
        """``(headline, folder)`` of experiment ``name``, after checking that the demo ran it exactly as
        ``run(report, random_state=0, quick=True)`` does (the signature's defaults, the quick values)."""
        import importlib
        import inspect

        assert name in self.runs, f"the demo did not run {name!r} (it ran {sorted(self.runs)})"
        run = importlib.import_module(f"privrelease.runner.experiments.{name}").run
        expected = {k: p.default for k, p in inspect.signature(run).parameters.items()
                    if p.kind is p.KEYWORD_ONLY}
        expected.update(run.quick_values, random_state=0, quick=True)
        used = self.runs[name]["params"]
        assert _plain({**expected, **used}) == _plain(expected), (name, used, expected)
        return self.runs[name]["headline"], self.folder / name


@pytest.fixture(scope="module")
def demo_quick(tmp_path_factory):
    """``privrelease demo --quick`` run once for this file (a :class:`DemoRun`); the headlines are
    recorded from :func:`privrelease.runner.run_experiment` with the parameters it resolved."""
    import contextlib
    import io
    import warnings

    import privrelease.runner as runner
    from privrelease.cli import main
    from privrelease.runner import check_run

    folder = tmp_path_factory.mktemp("demo_quick") / "demo"
    runs = {}
    real = runner.run_experiment

    def recording(name, output_dir, **kwargs):
        _, params, _ = check_run(name, kwargs.get("params"), quick=kwargs.get("quick"))
        path, headline, seconds = real(name, output_dir, **kwargs)
        runs[name] = dict(params=params, headline=headline)
        return path, headline, seconds

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings(), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.simplefilter("ignore")
        mp.setattr(runner, "run_experiment", recording)
        rc = main(["demo", "--quick", "--output", str(folder)])
    return DemoRun(rc, out.getvalue(), err.getvalue(), folder, runs)


def test_demo_quick_writes_a_readable_report(demo_quick):
    """The demo runs every shipped-data experiment (quick settings) and links their reports."""
    from privrelease.cli import DEMO_EXPERIMENTS

    rc, out, tmp_path = demo_quick.rc, demo_quick.out, demo_quick.folder.parent
    assert rc == 0, out + demo_quick.err
    assert sorted(demo_quick.runs) == sorted(name for name, _ in DEMO_EXPERIMENTS)
    index = (tmp_path / "demo" / "report.md").read_text()
    for name, _ in DEMO_EXPERIMENTS:
        sub = tmp_path / "demo" / name / "report.md"
        assert sub.is_file(), name
        assert f"({name}/report.md)" in index
        assert list((tmp_path / "demo" / name).glob("*.png")), f"{name} drew no plot"
        assert list((tmp_path / "demo" / name).glob("*.csv")), f"{name} wrote no table"
        # issue 13: each report also as one HTML page, with every plot of its folder inline
        page = (tmp_path / "demo" / name / "report.html").read_text()
        assert page.count('src="data:image/png;base64,') == len(list((tmp_path / "demo" / name).glob("*.png")))
        assert f'href="{name}/report.html"' in (tmp_path / "demo" / "report.html").read_text()
    assert "failed" not in index
    assert "Report written to" in out
    # the run summary is a table on both pages (the HTML page showed its markdown as one paragraph of pipes)
    summary = pd.read_csv(tmp_path / "demo" / "run_summary.csv")
    assert sorted(summary["experiment"]) == sorted(name for name, _ in DEMO_EXPERIMENTS)
    assert (summary["status"] == "ok").all()
    home = (tmp_path / "demo" / "report.html").read_text()
    assert home.count("<table") == 1 and "| experiment |" not in home


def test_census_experiment_quick(demo_quick):
    headline, tmp_path = demo_quick.experiment("census_erasure")
    assert 0.15 < headline["leakage_no_erasure_bits"] < 0.17
    assert headline["max_gap_bits"] <= 1e-6
    assert (tmp_path / "curve.csv").exists() and (tmp_path / "curve.png").exists()
    table = (tmp_path / "mapping_table.csv").read_text()
    assert table.count("\n") == 9  # header + top-8 profiles


def test_politics_binarized_quick(demo_quick, top5_threat_by_counting):
    head, tmp_path = demo_quick.experiment("politics_tv_binarized")
    for f in ("politics_binarized_curve.png", "politics_binarized_curve.csv", "politics_cluster_mappings.csv",
              "politics_binarized_roc.png", "report.md"):
        assert (tmp_path / f).is_file(), f
    # the threat figures (paper: 0.191 bits, 71 %) against plug-in counts done here by hand
    mi, acc = top5_threat_by_counting(random_state=0)
    assert head["mi_top5_bits"] == pytest.approx(mi, abs=1e-12)
    assert head["map_accuracy_top5"] == pytest.approx(acc, abs=1e-12)
    # perfect privacy can only add distortion to the quantization's own (delta = 0 point)
    assert head["quantization_distortion"] <= head["perfect_privacy_distortion"] + 1e-9
    assert head["auc_original"] > 0.8 and head["auc_adaptive_perfect_privacy"] < 0.6
    # the worst cases are folded like the chance level beside them: max(AUC, 1 - AUC) of the attack table's rows
    tab = pd.read_csv(tmp_path / "politics_binarized_attacks.csv")
    adaptive = tab.loc[tab["attacker"] == "adaptive", "auc"]
    assert head["auc_adaptive_perfect_privacy"] == pytest.approx(np.maximum(adaptive, 1 - adaptive).max(), abs=1e-12)
    assert head["auc_adaptive_perfect_privacy"] >= head["chance_folded_auc"] - 0.1 >= 0.4
    assert json.loads((tmp_path / "headline.json").read_text())["mi_top5_bits"] == pytest.approx(head["mi_top5_bits"])


def test_politics_ratings_quick(demo_quick):
    head, tmp_path = demo_quick.experiment("politics_tv_ratings")
    for f in ("politics_ratings_curve.png", "politics_ratings_rmse_auc.csv", "politics_ratings_roc.png"):
        assert (tmp_path / f).is_file(), f
    # the default mapper at perfect privacy: attacker near random, RMSE below "release nothing"
    assert head["auc_original"] > 0.8
    assert head["auc_adaptive_ours_perfect_privacy"] < 0.6
    tab = pd.read_csv(tmp_path / "politics_ratings_rmse_auc.csv")
    for col in ("auc_original", "auc_fixed", "auc_adaptive"):
        assert (tab[col] >= 0.5).all(), col   # folded
    assert head["rmse_increase_ours_perfect_privacy"] < head["rmse_increase_release_nothing"]
    assert head["rmse_increase_naive_representative"] > head["rmse_increase_release_nothing"]


def test_privacy_auction_quick(demo_quick):
    head, tmp_path = demo_quick.experiment("privacy_auction")
    for name in ("rmse_vs_budget.csv", "rmse_vs_budget.png", "payments_histogram.png",
                 "truthfulness_check.csv", "report.md"):
        assert (tmp_path / name).is_file(), name
    assert head["max_truthfulness_gain"] <= 1e-9        # Theorem 3: truthful
    assert head["rmse_at_max_budget"] < head["rmse_at_zero_budget"]
    curve = pd.read_csv(tmp_path / "rmse_vs_budget.csv")
    assert curve["weight_bought"].iloc[0] == 0 and curve["weight_bought"].iloc[-1] > 0.5
    assert (curve["value_over_fractional_bound"].dropna() >= 0.2).all()   # >= OPT / 5
    assert (curve["payment_per_query"] <= curve["budget"] * (1 + 1e-9)).all()


def test_truthful_regression_quick(demo_quick):
    out, tmp_path = demo_quick.experiment("truthful_regression")
    assert out["sensitivity_max_ratio"] <= 1.0  # no adversary beats the bound
    assert out["error_largest_n"] < out["error_smallest_n"]
    assert out["budget_largest_n"] < out["budget_smallest_n"]
    assert abs(out["payment_vertex"]) < 0.1 and out["best_misreport"] == 0.0
    for name in ("sensitivity.csv", "schedule.csv", "schedule.png", "truthfulness.csv",
                 "report.md"):
        assert (tmp_path / name).is_file()


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


def test_contract_design_quick(demo_quick):
    out, tmp_path = demo_quick.experiment("contract_design")
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
