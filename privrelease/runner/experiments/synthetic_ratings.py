"""What privacy costs on synthetic ratings: curves, frontier, ROC, and BlurMe for comparison.

For each data set (the Politics-and-TV preset, ``make_ratings`` and/or ``"realistic"``,
:func:`~privrelease.datasets.make_realistic_ratings` with its two attributes, gender and a
three-class age band: the mappers protect the JOINT attribute, the attackers score the joint
attribute and each column):

1. the privacy-utility curve of :class:`~privrelease.mappers.QuantizedPrivacyMapper`
   (its defaults, or the options given as ``mapper``) over a grid of leakage caps: leakage,
   distortion, fixed and adaptive attackers, RMSE of the paper's Table I protocol with the two reference releases;
2. the paper's naive release of cluster representatives at perfect privacy;
3. BlurMe (Weinsberg et al. 2012, greedy) over a grid of added-rating fractions, and
   BlurMore (Strucks, Slokom, Larson 2019: as many removals as additions) over the same grid;
4. the operating point: the lowest RMSE among the mapper's points whose worst
   adaptive attacker has a folded AUC at most ``target_auc``.
"""

import numpy as np
import pandas as pd

from ...evaluation._attacks import ATTACK_MODELS
from ...recommender._surprise import _ALGORITHMS
from .._schema import (Bool, Choice, Either, EstimatorOptions, Float, Int, NJobs, ParameterTypeError, PipelineError,
                       Scalar, Seed, Seq, Table, _show, _type_name, quick_values)

__all__ = ["run"]

class _RecommenderTable(Table):
    """A recommender's table whose ``algo_params`` are checked against the chosen Surprise algorithm's keyword
    arguments (names and kinds of value) before anything runs, not when the recommender is first fitted;
    a KNN algorithm's ``sim_options`` table key by key (its keys, their types, the similarity's name)."""

    def check(self, name, value):
        from ...recommender._surprise import algo_params_problem

        out = super().check(name, value)
        params = out.get("algo_params")
        if not params:
            return out
        algorithm = out.get("algorithm", "SVD")
        problem = algo_params_problem(algorithm, params)
        if problem is None:
            return out
        kind, key, expected = problem
        if kind == "random_state":
            raise PipelineError(f"parameter {name}.algo_params.random_state is set by the experiment itself: "
                                "use the experiment parameter random_state")
        if kind == "key":
            raise PipelineError(f"parameter {name}.algo_params has an unknown key {key!r}: surprise.{algorithm} "
                                f"takes {expected}")
        if kind == "type":
            v = params[key]
            raise ParameterTypeError(f"parameter {name}.algo_params.{key} = {_show(v)} ({_type_name(v)}): "
                                     f"expected {expected} (an option of surprise.{algorithm})")
        if kind == "value":
            raise PipelineError(f"parameter {name}.algo_params.{key} = {_show(params[key])}: expected {expected} "
                                f"(an option of surprise.{algorithm})")
        where = f"{name}.algo_params.sim_options"
        if kind == "sim_key":
            raise PipelineError(f"parameter {where} has an unknown key {key!r}: expected {expected}")
        v = params["sim_options"][key]
        error = ParameterTypeError if kind == "sim_type" else PipelineError
        raise error(f"parameter {where}.{key} = {_show(v)}"
                    + (f" ({_type_name(v)})" if kind == "sim_type" else "") + f": expected {expected}")


#: a recommender as a pipeline table: ``{algorithm = "SVD", algo_params = {reg_all = 0.1}}``; a KNN
#: algorithm's similarity is a table within: ``algo_params = {k = 20, sim_options = {name = "cosine"}}``
RECOMMENDER = _RecommenderTable({"algorithm": Choice(_ALGORITHMS),
                                 "algo_params": Table({"sim_options": Table(free=Scalar())}, free=Scalar())})


def _quantized_mapper(**kwargs):
    from ...mappers import QuantizedPrivacyMapper

    return QuantizedPrivacyMapper(**kwargs)


#: the largest ``mapper.smoothing`` of a pipeline (pseudo-users per cluster)
MAX_SMOOTHING = 1e9
#: options of every QuantizedPrivacyMapper an experiment builds, as a pipeline table:
#: ``[params.mapper]`` / ``class_bins = "heldout"``; each value checked by the mapper's own validation
MAPPER = EstimatorOptions(
    _quantized_mapper, label="QuantizedPrivacyMapper",
    accepted=("class_bins", "class_removal", "clustering", "heldout_tolerance", "metric", "n_components",
              "n_refine", "prior", "profile", "smoothing", "space"),
    reserved={
        "n_clusters": "use the experiment parameter n_clusters (it takes \"auto\", \"heldout\" or a count)",
        "max_leakage": "use the experiment parameter max_leakages (the caps of the curve)",
        "delta": "use the experiment parameter max_leakages (the curve sweeps the leakage cap, not delta)",
        "random_state": "use the experiment parameter random_state",
        "protect": "a 2-column attribute is protected jointly by every method (one attribute: nothing to set)",
        "release": "the experiment fits both releases (the optimal mapping's profiles and the naive "
                   "representatives)",
        "solver": "the experiment uses the mapper's default solver (\"auto\")",
        "leakage": "the leakage caps and the reported leakage_bits are mutual information",
        "dask_sample_size": "the experiment fits in memory (no dask collection)",
    },
    # smoothing=1e308 was refused by the mapper ("drowns the opted-in users' counts") after the run had started
    limits={"smoothing": Float(0, MAX_SMOOTHING, why="smoothing counts pseudo-users added to every cluster: "
                               f"{int(MAX_SMOOTHING):,} of them outnumber five times over the users of any data set a "
                               "pipeline reads (a ratings file of at most 1 GiB holds fewer than 2e8), so the prior "
                               "would be the pseudo-users', independent of the attribute")})
#: the experiment parameter n_clusters: a count, "auto" or "heldout" (the mapper's rules)
N_CLUSTERS_RULES = ("auto", "heldout")

#: the evaluation protocol's parameters, shared by every experiment that runs it
PROTOCOL_PARAMETERS = {
    "opt_in_fraction": Float(0, 1, low_open=True, high_open=True),
    "cv": Int(2, 20),
    "heldout_fraction": Float(0, 1, low_open=True, high_open=True),
    "target_auc": Float(0.5, 1),
    "attack_models": Seq(Choice(ATTACK_MODELS), max_len=len(ATTACK_MODELS), unique=True),
}
_LEVELS_CAP = "each level refits the mapper, the recommender and the attackers in every fold"
PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "datasets": Seq(Choice(("politics_tv", "make_ratings", "realistic")), max_len=3, unique=True),
    "n_users": Int(50, 50_000, why="every privacy level refits the mapper, the recommender and the "
                                   "attackers in each fold on all users (time and memory grow with n_users)"),
    "n_items": Int(20, 10_000, why="the attackers and the mapper's clustering work on users x items "
                                   "features"),
    "max_leakages": Seq(Float(0), max_len=30, increasing=True, why=_LEVELS_CAP),
    "blurme_fractions": Seq(Float(0, 1), max_len=30, increasing=True, why=_LEVELS_CAP),
    "n_clusters": Either(Choice(N_CLUSTERS_RULES), Int(1, 2_000)),
    **PROTOCOL_PARAMETERS,
    "politics_recommender": RECOMMENDER,
    "ratings_recommender": RECOMMENDER,
    "mapper": MAPPER,
    "n_jobs": NJobs(),
}
_QUICK = {"datasets": ("politics_tv",), "max_leakages": (0.0, 0.02, 0.1), "blurme_fractions": (0.1, 0.5),
          "cv": 2, "attack_models": ("logistic",), "n_jobs": 1}

def check_protocol_split(R, a, params, what, *, rating_range=(1, 5), random_state="params"):
    """Draw the evaluation protocol's split of ``R`` / ``a`` as the run will (same parameters, same seed) and
    refuse it before anything runs: :class:`PipelineError` naming ``what`` (the data) and the parameters.

    The protocol's own check (:func:`privrelease.evaluation._protocol._prepare_split`): too few opted-in or
    protected users for ``opt_in_fraction`` and ``cv``, a class no opted-in user has, a fold without a
    held-out rating. Each failed only once the run reached that data set, after minutes of work."""
    from ...evaluation._protocol import _prepare_split

    seed = params.get("random_state", 0) if random_state == "params" else random_state
    fraction, cv = params.get("opt_in_fraction", 0.5), params.get("cv", 5)
    heldout = params.get("heldout_fraction", 0.1)
    try:
        _prepare_split(R, a, opt_in_fraction=fraction, cv=cv, heldout_fraction=heldout,
                       rating_range=tuple(rating_range), random_state=None if seed is None else int(seed),
                       mapper_target="joint" if getattr(a, "ndim", 1) == 2 else None)
    except ValueError as exc:
        raise PipelineError(f"{what}: parameters opt_in_fraction = {fraction:g}, cv = {cv}, heldout_fraction = "
                            f"{heldout:g}, random_state = {seed}: the evaluation protocol's split is refused: "
                            f"{exc}") from None


def _dataset(name, seed, n_users, n_items):
    from ...datasets import make_politics_tv, make_ratings, make_realistic_ratings

    if name == "politics_tv":
        return make_politics_tv(random_state=seed)
    if name == "make_ratings":
        return make_ratings(n_users, n_items, random_state=seed)
    if name == "realistic":  # the preset's 1,700 items; n_items is make_ratings' only
        return make_realistic_ratings(n_users, random_state=seed)
    raise ValueError(f"unknown data set {name!r}; expected 'politics_tv', 'make_ratings' or 'realistic'")


_DEFAULT_DATASETS = ("politics_tv", "make_ratings")


def check_ready(params):
    """Every data set's protocol split, drawn as the run draws it, before any data set is analysed."""
    seed = params.get("random_state", 0)
    seed = 0 if seed is None else int(seed)
    n_users, n_items = params.get("n_users", 1000), params.get("n_items", 200)
    for name in params.get("datasets", _DEFAULT_DATASETS):
        R, a, _ = _dataset(name, seed, n_users, n_items)
        sized = f", n_users = {n_users}" + (f", n_items = {n_items}" if name == "make_ratings" else "") \
            if name != "politics_tv" else ""
        check_protocol_split(R, a, params, f"data set {name!r} ({R.shape[0]} users{sized})", random_state=seed)


_SHOW = ["leakage_bits", "distortion", "changed_ratings", "worst_auc_fixed", "worst_auc_adaptive",
         "auc_fixed_logistic_values", "auc_adaptive_logistic_values", "rmse_released",
         "rmse_released_std", "rel_increase_released", "rel_increase_release_nothing"]


def _recommender(spec, rating_range):
    from ...recommender import SurpriseRecommender

    spec = dict(spec or {})
    algorithm = spec.pop("algorithm", "SVD")
    algo_params = spec.pop("algo_params", None)
    return SurpriseRecommender(algorithm, rating_scale=tuple(rating_range), algo_params=algo_params, **spec)


def operating_point(frame, target_auc):
    """The row with the lowest ``rmse_released`` whose ``worst_auc_adaptive <= target_auc`` (or None)."""
    ok = frame[frame["worst_auc_adaptive"] <= target_auc]
    if ok.empty:
        return None
    return ok.loc[ok["rmse_released"].idxmin()]


def compare_methods(curves, target_auc):
    """One row per (method, setting), sorted by method: both attackers and the RMSE."""
    rows = []
    for method, (curve, param) in curves.items():
        for _, r in curve.frame.iterrows():
            rows.append({
                "method": method, "setting": f"{param}={r[param]:g}",
                "leakage_bits": r.get("leakage_bits", np.nan),
                "worst_auc_fixed": r["worst_auc_fixed"], "worst_auc_adaptive": r["worst_auc_adaptive"],
                "rmse_released": r["rmse_released"], "rel_increase_released": r["rel_increase_released"],
                "meets_target": bool(r["worst_auc_adaptive"] <= target_auc),
                # marginals of a 2-D attribute (the unsuffixed figures score the joint attribute)
                **{c: r[c] for c in curve.frame.columns if c.startswith("worst_auc_adaptive__")},
            })
    return pd.DataFrame(rows)


def _chance_note(frame, n_users):
    """One sentence giving the folded AUC an uninformed attacker is expected to score on the protected users
    (``chance_folded_auc`` of the curve), or '' when the curve ran no attacker."""
    if "chance_folded_auc" not in frame or not np.isfinite(frame["chance_folded_auc"].iloc[0]):
        return ""
    marginals = [c for c in frame.columns if c.startswith("chance_folded_auc__")]
    also = "".join(f", {c.split('__', 1)[1]} {frame[c].iloc[0]:.3f}" for c in marginals)
    return (f" Chance: an attacker whose scores carry no information is expected to score a folded AUC of "
            f"**{frame['chance_folded_auc'].iloc[0]:.3f}** on these {n_users} protected users (Mann-Whitney, from the "
            f"class sizes{also}; column `chance_folded_auc`), and the worst of several such attackers higher still: "
            "a `worst_auc_*` near it is what attackers that learn nothing show. The figure is for untied scores: a "
            "release that makes users alike ties their scores and pulls an uninformed attacker toward 0.5, so "
            "against such a release a figure near this level can still hide some leakage; the certified leakage "
            "in bits is the guarantee.")


def _release_nothing_note(ref):
    """A warning when releasing nothing gives a LOWER RMSE than releasing the original ratings (else '').

    On sparse data (a few ratings per user: product-like files) the recommender can predict the test users'
    held-out ratings better from its baselines than from their folded-in rows: every relative increase of the
    report is then measured against a release that costs accuracy, and a negative one is no saving.
    """
    original, nothing = float(ref["rmse_original"]), float(ref["rmse_release_nothing"])
    if not (np.isfinite(original) and np.isfinite(nothing)) or nothing >= original:
        return ""
    return (f" **Note:** releasing nothing gives a LOWER RMSE ({nothing:.4f}) than releasing the original "
            f"ratings ({original:.4f}): the recommender predicts these users' held-out ratings better without "
            "their rows (too few ratings per user for it, or its regularization), so the relative increases below "
            "are measured against a release that itself costs accuracy and a negative one is no saving; compare "
            "each release with the release-nothing RMSE, or tune the recommender (`recommender.algo_params`).")


def _csv_only(report, df, name):
    path = report.csv(df, name)  # written inside the report folder, never through a link
    report.text(f"Full table: `{path.name}` ({len(df)} rows, {df.shape[1]} columns).")


def _frontier_figure(curves, ref, x, title):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    markers = {"optimal mapping": "o-", "naive representatives": "s", "BlurMe (greedy)": "^--",
               "BlurMore (greedy)": "v-."}
    top = 1.04 * max(ref["rmse_release_nothing"], ref["rmse_original"],
                     *[c.frame["rmse_released"].max() for m, (c, _) in curves.items() if m != "naive representatives"])
    off = []
    for method, (curve, _) in curves.items():
        f = curve.frame
        ax.errorbar(f[x], f["rmse_released"], yerr=f["rmse_released_std"], fmt=markers.get(method, "o-"),
                    capsize=3, label=method)
        off += [(method, v, r) for v, r in zip(f[x], f["rmse_released"]) if r > top]
    if off:
        ax.set_ylim(top=top)
        for method, v, r in off:
            ax.annotate(f"{method}: RMSE {r:.2f} (off scale)", xy=(v, top), xytext=(v, top * 0.985),
                        fontsize=7, ha="left", va="top", arrowprops={"arrowstyle": "->"})
    ax.axhline(ref["rmse_original"], color="green", ls="--", label="release everything (original)")
    ax.axhline(ref["rmse_release_nothing"], color="red", ls=":", label="release nothing")
    ax.axvline(0.5, color="grey", lw=1)
    ax.set_xlabel(f"{x.replace('_', ' ')} (folded: max(AUC, 1 - AUC))")
    ax.set_ylabel("RMSE on held-out true ratings")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


class _Stages:
    """``[stage] <data set>: <what>: <s> s`` lines on stdout, one per stage as it ends (the run's log)."""

    def __init__(self, name):
        import time

        self.name, self._clock = name, time.perf_counter
        self._last = self._clock()

    def done(self, what):
        now = self._clock()
        print(f"[stage] {self.name}: {what}: {now - self._last:.1f} s", flush=True)
        self._last = now


def _one_dataset(report, name, R, a, *, rec, max_leakages, fractions, n_clusters, opt_in_fraction, cv,
                 heldout_fraction, attack_models, target_auc, seed, n_jobs, blurmore_fractions=None, mapper=None,
                 rating_range=(1, 5)):
    import matplotlib.pyplot as plt

    from ...evaluation import BlurMe, BlurMore, privacy_utility_curve
    from ...mappers import QuantizedPrivacyMapper

    common = dict(opt_in_fraction=opt_in_fraction, cv=cv, heldout_fraction=heldout_fraction,
                  recommender=rec, attack_models=attack_models, random_state=seed, n_jobs=n_jobs, verbose=1,
                  rating_range=tuple(rating_range))
    if getattr(a, "ndim", 1) == 2:  # several attributes: every method protects the joint attribute
        common["mapper_target"] = "joint"
    stages = _Stages(name)
    options = dict(mapper or {})  # [params.mapper]: passed to every QuantizedPrivacyMapper built here
    q = privacy_utility_curve(QuantizedPrivacyMapper(n_clusters=n_clusters, **options), R, a,
                              max_leakages=max_leakages, **common)
    stages.done(f"optimal mapping, {len(max_leakages)} leakage cap(s)")
    # the reference attackers and the original / release-nothing RMSE do not depend on the mapper: fitted once
    common["reference"] = q
    naive = privacy_utility_curve(QuantizedPrivacyMapper(n_clusters=n_clusters, release="representative", **options),
                                  R, a, max_leakages=[0.0], **common)
    stages.done("naive representatives")
    blur = privacy_utility_curve(BlurMe(strategy="greedy"), R, a, param="fraction", values=fractions, **common)
    stages.done(f"BlurMe, {len(fractions)} fraction(s)")
    more_fractions = fractions if blurmore_fractions is None else blurmore_fractions
    more = privacy_utility_curve(BlurMore(strategy="greedy"), R, a, param="fraction", values=more_fractions,
                                 **common)
    stages.done(f"BlurMore, {len(more_fractions)} fraction(s)")
    f = q.frame
    ref = f.iloc[0]
    n_protected = int(q.reference_attacks["n_samples"].iloc[0]) if len(q.reference_attacks) else 0
    chance = float(f["chance_folded_auc"].iloc[0]) if "chance_folded_auc" in f else float("nan")

    from ._politics import fitted_clusters

    # the fitted mappers' count, not the requested one (a count above the opted-in users is capped)
    used = sorted({int(m.n_clusters_) for m in q.mappers})
    shown = fitted_clusters(n_clusters, used[0]) if len(used) == 1 else \
        f"{used[0]} to {used[-1]} clusters (n_clusters={n_clusters!r})"
    shown += "".join(f", {k}={v!r}" for k, v in options.items())
    report.section(f"{name}: optimal mapping (QuantizedPrivacyMapper, {shown})")
    report.text(
        f"{R.shape[0]} users x {R.shape[1]} items, {R.nnz} ratings; {opt_in_fraction:.0%} of the users opt in "
        f"(they disclose the attribute; the mapper is fitted on them), the others are protected and split into "
        f"{cv} folds; {heldout_fraction:.0%} of each test user's ratings are held out before the release.\n\n"
        f"Reference releases: RMSE **{ref['rmse_original']:.4f}** when everybody releases everything, "
        f"**{ref['rmse_release_nothing']:.4f}** ({ref['rel_increase_release_nothing']:+.1%}) when the protected "
        "users release nothing." + _release_nothing_note(ref) + " Attackers on the ORIGINAL ratings of the "
        "protected users:")
    report.table(q.reference_attacks, f"{name}_attacks_no_privacy")
    report.table(f[["max_leakage"] + _SHOW], f"{name}_mapper_curve",
                 caption="One row per leakage cap (a cap of 1 bit or more constrains nothing for a binary "
                         "attribute: that row is the cost of quantization alone). `worst_auc_*` = largest "
                         "folded AUC over the attackers (logistic regression and random forest, on values and "
                         "on rated/not-rated indicators). "
                         "FIXED attackers are trained on the opted-in users' original ratings, ADAPTIVE ones on "
                         "their released ratings." + _chance_note(f, n_protected))
    _csv_only(report, q.frame, f"{name}_mapper_curve_all_columns")
    _csv_only(report, q.attacks, f"{name}_mapper_attacks")
    _csv_only(report, blur.frame, f"{name}_blurme_curve_all_columns")
    _csv_only(report, more.frame, f"{name}_blurmore_curve_all_columns")
    _csv_only(report, q.per_fold, f"{name}_mapper_rmse_per_fold")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    q.plot_privacy_distortion(ax=axes[0])
    q.plot_attacker_auc(ax=axes[1], models=["logistic", "forest"])
    axes[1].set_xlabel("max_leakage cap [bits]")
    report.figure(fig, f"{name}_privacy_distortion_and_auc",
                  caption="Left: leakage against distortion (the mapper's own accounting). Right: attacker AUC "
                          "against the leakage cap, fixed (dashed) and adaptive (solid).")
    fig, ax = plt.subplots(figsize=(6, 4.2))
    q.plot_frontier(ax=ax)
    report.figure(fig, f"{name}_leakage_rmse_frontier",
                  caption="RMSE against the leakage (bits), with the two reference releases.")

    point = operating_point(f, target_auc)
    curves = {"optimal mapping": (q, "max_leakage"), "naive representatives": (naive, "max_leakage"),
              "BlurMe (greedy)": (blur, "fraction"), "BlurMore (greedy)": (more, "fraction")}
    report.section(f"{name}: against BlurMe, BlurMore and the naive release")
    table = compare_methods(curves, target_auc)
    report.table(table, f"{name}_comparison",
                 caption=f"`meets_target`: worst adaptive folded AUC <= {target_auc}. BlurMe aims at one fixed "
                         "classifier; an adaptive attacker retrained on BlurMe's output is not fooled. (An RMSE "
                         "slightly BELOW the original means the added or smoothed ratings regularise the "
                         "recommender's fold-in of the user; it is not information gained.)"
                         + _chance_note(f, n_protected))
    report.figure(_frontier_figure(curves, ref, "worst_auc_adaptive", "RMSE vs ADAPTIVE attacker"),
                  f"{name}_frontier_adaptive")
    report.figure(_frontier_figure(curves, ref, "worst_auc_fixed", "RMSE vs FIXED attacker"),
                  f"{name}_frontier_fixed")
    value = point["max_leakage"] if point is not None else f["max_leakage"].iloc[0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    q.plot_roc(float(value), ax=axes[0], model="logistic", features="values")
    blur.plot_roc(float(blur.frame["fraction"].iloc[-1]), ax=axes[1], model="logistic", features="values")
    axes[1].set_title("ROC, BlurMe (logistic on values)")
    report.figure(fig, f"{name}_roc", caption=f"Fig. 12 style ROC curves: optimal mapping at max_leakage={value:g} "
                                              f"(left), BlurMe at the largest fraction (right).")

    out = {f"{name}_rmse_original": float(ref["rmse_original"]),
           f"{name}_rel_increase_release_nothing": float(ref["rel_increase_release_nothing"]),
           # folded class by class, as the curve's worst_auc_* (AttackResult.folded_auc)
           f"{name}_worst_auc_no_privacy": float(np.max(q.reference_attacks.folded_auc)),
           # what one uninformed attacker is expected to score on the same users (the worst of several: higher)
           f"{name}_chance_folded_auc": chance}
    if point is None:
        below = (f" (chance alone is {chance:.3f} on these users: a target below it is out of reach of any "
                 "release)") if chance > target_auc else ""
        report.text(f"**No point of the curve brings every adaptive attacker to a folded AUC <= {target_auc}.**"
                    + below)
        out[f"{name}_operating_point"] = "none"
    else:
        beats = point["rmse_released"] < ref["rmse_release_nothing"]
        report.text(
            f"**Operating point** (lowest RMSE with every adaptive attacker at folded AUC <= {target_auc}): "
            f"max_leakage = {point['max_leakage']:g} bits (leakage {point['leakage_bits']:.4f} bits), worst "
            f"adaptive AUC {point['worst_auc_adaptive']:.3f}, worst fixed AUC {point['worst_auc_fixed']:.3f} "
            f"(one uninformed attacker: {chance:.3f}), "
            f"RMSE {point['rmse_released']:.4f} ({point['rel_increase_released']:+.2%} vs original; releasing "
            f"nothing costs {point['rel_increase_release_nothing']:+.2%}): "
            + ("better than releasing nothing." if beats else "NOT better than releasing nothing."))
        out.update({f"{name}_max_leakage": float(point["max_leakage"]),
                    f"{name}_worst_auc_adaptive": float(point["worst_auc_adaptive"]),
                    f"{name}_rel_increase_released": float(point["rel_increase_released"])})
    nb = naive.frame.iloc[0]
    out[f"{name}_naive_rel_increase"] = float(nb["rel_increase_released"])
    bl = blur.frame
    out[f"{name}_blurme_worst_auc_adaptive_at_max_fraction"] = float(bl["worst_auc_adaptive"].iloc[-1])
    out[f"{name}_blurme_worst_auc_fixed_at_max_fraction"] = float(bl["worst_auc_fixed"].iloc[-1])
    bm = more.frame
    out[f"{name}_blurmore_worst_auc_adaptive_at_max_fraction"] = float(bm["worst_auc_adaptive"].iloc[-1])
    out[f"{name}_blurmore_worst_auc_fixed_at_max_fraction"] = float(bm["worst_auc_fixed"].iloc[-1])
    out[f"{name}_blurmore_rel_increase_at_max_fraction"] = float(bm["rel_increase_released"].iloc[-1])
    stages.done("tables and figures")
    return out


@quick_values(_QUICK)
def run(report, *, random_state=0, quick=False, datasets=("politics_tv", "make_ratings"), n_users=1000,
        n_items=200, max_leakages=(0.0, 0.002, 0.01, 0.03, 0.1, 1.0), blurme_fractions=(0.05, 0.1, 0.2, 0.5),
        n_clusters=25, opt_in_fraction=0.5, cv=5, heldout_fraction=0.1, target_auc=0.55,
        attack_models=("logistic", "forest"), politics_recommender=None, ratings_recommender=None,
        mapper=None, n_jobs=2):
    """Curves, frontier, ROC and the BlurMe comparison; returns headline numbers."""
    seed = 0 if random_state is None else int(random_state)
    politics_recommender = politics_recommender if politics_recommender is not None else \
        {"algorithm": "SVD", "algo_params": {"reg_all": 0.1}}
    ratings_recommender = ratings_recommender if ratings_recommender is not None else {"algorithm": "SVD"}
    report.text(
        "Recommender: Surprise SVD trained on the opted-in users' original rows plus the other folds' "
        f"releases; test users are folded in from what they release. Politics-and-TV: {politics_recommender}; "
        f"make_ratings: {ratings_recommender} (SVD's default regularisation overfits the 16 ratings per user "
        "of the politics preset: there it does worse than releasing nothing).")
    headline = {}
    for name in datasets:
        R, a, _ = _dataset(name, seed, n_users, n_items)
        spec = politics_recommender if name == "politics_tv" else ratings_recommender
        headline.update(_one_dataset(
            report, name, R, a, rec=_recommender(spec, (1, 5)), max_leakages=list(max_leakages),
            fractions=list(blurme_fractions), n_clusters=n_clusters, opt_in_fraction=opt_in_fraction, cv=cv,
            heldout_fraction=heldout_fraction, attack_models=list(attack_models), target_auc=target_auc,
            seed=seed, n_jobs=n_jobs, blurmore_fractions=list(blurme_fractions)[-1:] if quick else None,
            mapper=mapper))
    report.json(headline, "headline")
    return headline
