import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402

from privrelease.evaluation import BlurMe, check_privacy_grid, privacy_utility_curve, rmse_cost  # noqa: E402

from evaluation_doubles import BiasRecommender, ErasingMapper, RollingMapper, planted_ratings  # noqa: E402

X, Y = planted_ratings(n_users=240, n_items=25, strength=0.9, seed=0)


@pytest.fixture(scope="module")
def curve():
    return privacy_utility_curve(ErasingMapper(), X, Y, deltas=[0, 1, 2, 3], cv=2,
                                 recommender=BiasRecommender(), random_state=0, n_jobs=1, verbose=0)


def test_frame_columns_and_monotone_leakage(curve):
    f = curve.frame
    expected = {"delta", "leakage_bits", "distortion", "changed_ratings", "rmse_original", "rmse_released",
                "rmse_release_nothing", "rmse_release_everything", "rmse_released_std",
                "rel_increase_released", "rel_increase_release_nothing"}
    expected |= {f"auc_{a}_{m}_{x}" for a in ("fixed", "adaptive") for m in ("logistic", "forest")
                 for x in ("values", "indicators")}
    expected |= {"worst_auc_fixed", "worst_auc_adaptive"}
    assert expected <= set(f.columns)
    for a in ("fixed", "adaptive"):
        aucs_a = f[[c for c in f.columns if c.startswith(f"auc_{a}_")]].to_numpy()
        np.testing.assert_allclose(f[f"worst_auc_{a}"], np.maximum(aucs_a, 1 - aucs_a).max(axis=1))
    assert list(f["delta"]) == [0, 1, 2, 3]
    assert np.all(np.diff(f["leakage_bits"]) <= 1e-12)
    assert f["leakage_bits"].iloc[-1] == 0.0
    # the reference releases do not depend on delta
    assert f["rmse_original"].nunique() == 1 and f["rmse_release_nothing"].nunique() == 1
    # erasing every planted item (delta=3) brings every attacker to chance; at delta=0 they win
    aucs = f[[c for c in f.columns if c.startswith("auc_")]]
    assert (aucs.iloc[0] > 0.9).all()
    assert (np.abs(aucs.iloc[-1] - 0.5) < 0.12).all()
    # delta = 0 releases the original ratings: same RMSE, nothing changed
    assert f["rmse_released"].iloc[0] == f["rmse_original"].iloc[0]
    assert f["changed_ratings"].iloc[0] == 0.0


def test_curve_agrees_with_rmse_cost(curve):
    cost = rmse_cost(ErasingMapper(delta=2), X, Y, cv=2, recommender=BiasRecommender(), random_state=0)
    row = curve.frame.set_index("delta").loc[2.0]
    assert row["rmse_released"] == pytest.approx(cost["rmse_released"])
    assert row["rmse_original"] == pytest.approx(cost["rmse_original"])
    assert row["leakage_bits"] == pytest.approx(cost["leakage"])


def test_parallel_gives_the_same_curve(curve):
    c2 = privacy_utility_curve(ErasingMapper(), X, Y, deltas=[0, 1, 2, 3], cv=2, recommender=BiasRecommender(),
                               attack_models=["logistic"], random_state=0, n_jobs=2, verbose=0)
    cols = [c for c in c2.frame.columns if not c.startswith("worst_")]
    np.testing.assert_allclose(c2.frame[cols].to_numpy(dtype=float), curve.frame[cols].to_numpy(dtype=float))


def test_plots(curve):
    for ax in (curve.plot_privacy_distortion(), curve.plot_frontier(), curve.plot_attacker_auc(),
               curve.plot_roc(3.0)):
        assert ax.lines
    # the frontier shows both reference releases as horizontal lines
    ax = curve.plot_frontier()
    ys = {tuple(l.get_ydata()) for l in ax.lines}
    assert (curve.frame.rmse_original[0],) * 2 in ys and (curve.frame.rmse_release_nothing[0],) * 2 in ys
    with pytest.raises(ValueError, match="no ROC curves for delta=7"):
        curve.plot_roc(7)
    plt.close("all")


def test_other_parameter_and_no_sweep():
    c = privacy_utility_curve(BlurMe(), X, Y, param="fraction", values=[0.0, 0.5], cv=2,
                              recommender=BiasRecommender(), attack_models=["logistic"],
                              attack_features=["values"], random_state=0, verbose=0)
    f = c.frame
    assert list(f.columns[:1]) == ["fraction"] and np.isnan(f["leakage_bits"]).all()
    assert f["changed_ratings"].iloc[1] > 0 and f["changed_ratings"].iloc[0] == 0
    # BlurMe aims at the fixed attacker: it falls more than the adaptive one
    assert f["auc_fixed_logistic_values"].iloc[1] < f["auc_adaptive_logistic_values"].iloc[1]
    single = privacy_utility_curve(FunctionTransformer(accept_sparse=True), X, Y, cv=2,
                                   recommender=BiasRecommender(), attack_models=[], random_state=0, verbose=0)
    assert single.param == "setting" and len(single.frame) == 1
    assert single.frame.rmse_released[0] == single.frame.rmse_original[0]


@pytest.mark.parametrize("grid, exc, match", [
    ([1.0, 0.5], ValueError, r"strictly increasing order, got 1.0 followed by 0.5"),
    ([0.0, 0.0], ValueError, r"strictly increasing"),
    ([-1.0, 0.5], ValueError, r">= 0, got -1.0"),
    ([], ValueError, "at least one value"),
    ([0.0, np.inf], ValueError, "finite"),
    (["a"], TypeError, "real numbers, got 'a'"),
])
def test_grid_validation(grid, exc, match):
    with pytest.raises(exc, match=match):
        check_privacy_grid(grid)
    with pytest.raises(exc, match=match):
        privacy_utility_curve(ErasingMapper(), X, Y, deltas=grid, recommender=BiasRecommender(),
                              random_state=0)


def test_sweep_validation():
    with pytest.raises(ValueError, match="at most one of deltas, max_leakages or values"):
        privacy_utility_curve(ErasingMapper(), X, Y, deltas=[0], max_leakages=[0.1],
                              recommender=BiasRecommender())
    with pytest.raises(ValueError, match="ErasingMapper has no parameter 'max_leakage'"):
        privacy_utility_curve(ErasingMapper(), X, Y, max_leakages=[0.1], recommender=BiasRecommender())
    with pytest.raises(ValueError, match=r"opt_in_fraction must be < 1.0, got 1.5"):
        privacy_utility_curve(ErasingMapper(), X, Y, deltas=[0], opt_in_fraction=1.5,
                              recommender=BiasRecommender())


def test_adaptive_attacker_learns_from_the_release():
    # moving the ratings to other items defeats the attacker trained on original data, not the one
    # retrained on released data: the curve's adaptive attacker must be the latter
    c = privacy_utility_curve(RollingMapper(), X, Y, param="shift", values=[0, 7], cv=2,
                              recommender=BiasRecommender(), attack_models=["logistic"],
                              attack_features=["values"], random_state=0, verbose=0)
    f = c.frame
    assert f["auc_fixed_logistic_values"][0] > 0.9 and f["auc_adaptive_logistic_values"][0] > 0.9
    assert f["auc_fixed_logistic_values"][1] < 0.7
    assert f["auc_adaptive_logistic_values"][1] > 0.9


def test_reference_reuses_the_mapper_free_figures_and_gives_the_same_curve(curve):
    # every figure that does not depend on the mapper is taken from the reference; the curve is the one
    # computed from scratch (an independent computation of the very same figures)
    kwargs = dict(cv=2, recommender=BiasRecommender(), random_state=0, n_jobs=1, verbose=0)
    fresh = privacy_utility_curve(RollingMapper(), X, Y, param="shift", values=[0, 1], **kwargs)
    reused = privacy_utility_curve(RollingMapper(), X, Y, param="shift", values=[0, 1], reference=curve, **kwargs)
    assert fresh.frame.equals(reused.frame) and fresh.per_fold.equals(reused.per_fold)
    assert fresh.attacks.equals(reused.attacks) and fresh.reference_attacks.equals(reused.reference_attacks)
    assert reused._shared["fixed"] is curve._shared["fixed"]  # the fixed attackers were not refitted


@pytest.mark.parametrize("change, match", [
    ({"random_state": 1}, "another draw of the protocol"),
    ({"cv": 3}, "another draw of the protocol"),
    ({"attack_models": ["logistic"]}, "other attackers"),
    ({"random_state": None}, "needs an integer random_state"),
])
def test_reference_from_another_draw_is_refused(curve, change, match):
    kwargs = dict(cv=2, recommender=BiasRecommender(), random_state=0, n_jobs=1, verbose=0) | change
    with pytest.raises(ValueError, match=match):
        privacy_utility_curve(ErasingMapper(), X, Y, deltas=[0], reference=curve, **kwargs)
    with pytest.raises(TypeError, match="reference must be a PrivacyUtilityCurve"):
        privacy_utility_curve(ErasingMapper(), X, Y, deltas=[0], reference=curve.frame, verbose=0)


def test_a_transform_only_parameter_is_swept_on_one_fit(monkeypatch):
    # BlurMe's fraction is read by transform only: one fit serves the whole sweep, and every value's
    # release is the one of a mapper fitted with that value (an independent fit per value)
    fits = []
    original_fit = BlurMe.fit
    monkeypatch.setattr(BlurMe, "fit", lambda self, X, y: fits.append(self.fraction) or original_fit(self, X, y))
    values = [0.1, 0.3, 0.6]
    c = privacy_utility_curve(BlurMe(), X, Y, param="fraction", values=values, cv=2, attack_models=[],
                              recommender=BiasRecommender(), random_state=0, n_jobs=1, verbose=0)
    assert fits == [0.1]
    assert [m.fraction for m in c.mappers] == values
    monkeypatch.setattr(BlurMe, "fit", original_fit)
    from privrelease.evaluation._protocol import _prepare_split

    split = _prepare_split(X, Y, opt_in_fraction=0.5, cv=2, heldout_fraction=0.1, rating_range=(1, 5),
                           random_state=0)
    for v, m in zip(values, c.mappers):
        alone = BlurMe(fraction=v, random_state=m.random_state).fit(split.X_opt, split.mapper_y)
        assert (m.transform(X) != alone.transform(X)).nnz == 0


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_every_uncertified_fit_warns_in_the_callers_thread(n_jobs):
    # a mapper whose solve is not certified warns where it is fitted: in a joblib process (n_jobs=2, loky) the
    # warning was lost, so the curve reported uncertified points without a word. One warning per such point, from
    # the calling thread, whatever the backend (and not twice when fitted here)
    import warnings

    from privrelease.exceptions import ConvergenceWarning

    from evaluation_doubles import UncertifiedErasingMapper

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        privacy_utility_curve(UncertifiedErasingMapper(), X, Y, deltas=[0, 1, 2, 3], cv=2,
                              recommender=BiasRecommender(), attack_models=[], random_state=0, n_jobs=n_jobs,
                              verbose=0)
    msgs = sorted(str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
    assert len(msgs) == 2, msgs
    assert "delta=2.0 " in msgs[0] and "delta=3.0 " in msgs[1] and all("status='inaccurate'" in m for m in msgs)
