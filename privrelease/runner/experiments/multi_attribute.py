"""Several private attributes: protecting the joint attribute or each marginal, and what each costs.

Synthetic ratings (:func:`~privrelease.datasets.make_ratings`) whose tastes depend
on a six-class attribute, read as two attributes: ``gender`` (2 classes) and
``age band`` (3 classes), ``class = 3 * gender + age band``. For each leakage
cap, :class:`~privrelease.mappers.QuantizedPrivacyMapper` is fitted on the
opted-in users' 2-D ``y`` with

* ``protect="joint"``: the attribute is the pair; the cap bounds
  ``I(gender, age band; C_hat)``, hence each marginal too;
* ``protect="marginal"``: the engine runs on the stacked marginal prior
  (:func:`privrelease.mappers._base.stack_marginal_priors`); the cap bounds the
  average of ``I(gender; C_hat)`` and ``I(age band; C_hat)``, and the joint may
  leak more (the pair is not protected as a whole).

Each point reports the engine's leakage, the leakage of each attribute and of
the pair under the fitted priors, and the RMSE of the paper's Table I protocol
(:func:`~privrelease.evaluation.rmse_cost`, Surprise SVD) next to releasing
nothing (the protected users withheld from the recommender).

``mapper`` (``[params.mapper]``): :class:`~privrelease.mappers.QuantizedPrivacyMapper`
options given to every mapper fitted, in both modes and at every cap, so the two
modes are compared with the same mapper (``protect``, ``n_clusters`` and the caps
are the experiment's own parameters). ``prior = "model"`` is refused with
``protect = "marginal"`` (the mapper fits one model of the joint attribute).
"""

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin, clone

from .._schema import Bool, Choice, Float, Int, NJobs, PipelineError, Seed, Seq, quick_values
from ._politics import fitted_clusters
from .synthetic_ratings import MAPPER as _RATINGS_MAPPER, check_protocol_split

__all__ = ["run", "AttributeColumns"]

_LEVELS_CAP = "each level fits the mapper twice (joint, marginal) and the recommender in every fold"
PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "n_users": Int(60, 20_000, why="every level refits the mapper and the recommender in each fold on all "
                                   "users (time grows with n_users)"),
    "n_items": Int(20, 5_000, why="the clustering and the recommender work on users x items"),
    "attribute_strength": Float(0, 5),
    "max_leakages": Seq(Float(0), max_len=12, increasing=True, why=_LEVELS_CAP),
    "protect": Seq(Choice(("joint", "marginal")), max_len=2, unique=True),
    "n_clusters": Int(2, 500),
    "opt_in_fraction": Float(0, 1, low_open=True, high_open=True),
    "cv": Int(2, 10),
    "heldout_fraction": Float(0, 1, low_open=True, high_open=True),
    "mapper": _RATINGS_MAPPER.derive(accept=("release",), reserve={
        "protect": "use the experiment parameter protect (the modes compared, each with these options)",
        "n_clusters": "use the experiment parameter n_clusters",
        "max_leakage": "use the experiment parameter max_leakages (the caps of each mode)",
        "delta": "use the experiment parameter max_leakages (each mode sweeps the leakage cap, not delta)",
    }),
    "n_jobs": NJobs(),
}


def check_together(params):
    """``mapper.prior = "model"`` needs ``protect = ["joint"]``: the mapper refuses it for the marginals."""
    protect = params.get("protect", ("joint", "marginal"))
    if (params.get("mapper") or {}).get("prior") == "model" and "marginal" in protect:
        raise PipelineError(f"parameter mapper.prior = 'model': refused with protect = {list(protect)} (the "
                            "mapper fits one model of the joint attribute, not of each marginal); expected "
                            "protect = [\"joint\"] or mapper.prior = \"counts\"")


_WEIGHTS = [0.2, 0.15, 0.15, 0.2, 0.15, 0.15]  # gender x age band


def _data(n_users, n_items, attribute_strength, random_state):
    from ...datasets import make_ratings

    return make_ratings(n_users, n_items, attribute_proportion=_WEIGHTS, attribute_strength=attribute_strength,
                        random_state=random_state)


def check_ready(params):
    """The protocol's split of the generated users, drawn as the run draws it, before any mapper is fitted."""
    n_users, n_items = params.get("n_users", 1000), params.get("n_items", 200)
    seed = params.get("random_state", 0)
    R, a, _ = _data(n_users, n_items, params.get("attribute_strength", 1.5), seed)
    check_protocol_split(R, a, params, f"make_ratings with n_users = {n_users}, n_items = {n_items}",
                         random_state=seed)


_QUICK = {"n_users": 300, "n_items": 60, "max_leakages": (0.0,), "n_clusters": 6, "cv": 2, "n_jobs": 1}

#: the two attributes read from the six generated classes: class = 3 * gender + age band
ATTRIBUTES = ("gender", "age band")
_N_AGE = 3


class AttributeColumns(TransformerMixin, BaseEstimator):
    """Fit ``mapper`` on a 2-D ``y`` decoded from one integer label per user (``label = k * y0 + y1``).

    :func:`~privrelease.evaluation.rmse_cost` draws its opt-in split from a
    1-D private attribute; this adapter lets it evaluate a mapper fitted on the
    two columns. ``-1`` (undisclosed) stays undisclosed in both columns.

    Parameters
    ----------
    mapper : estimator
        Unfitted mapper accepting a 2-D ``y``.
    n_second : int, default=3
        Number of classes of the second column.
    """

    def __init__(self, mapper=None, n_second=_N_AGE):
        self.mapper = mapper
        self.n_second = n_second

    def fit(self, X, y):
        y = np.asarray(y, dtype=np.int64)
        Y = np.where(y[:, None] >= 0, np.column_stack([y // self.n_second, y % self.n_second]), -1)
        self.mapper_ = clone(self.mapper).fit(X, Y)
        return self

    def transform(self, X):
        return self.mapper_.transform(X)

    @property
    def leakage_(self):
        return self.mapper_.leakage_

    @property
    def distortion_(self):
        return self.mapper_.distortion_


@quick_values(_QUICK)
def run(report, *, random_state=0, quick=False, n_users=1000, n_items=200, attribute_strength=1.5,
        max_leakages=(0.0, 0.01, 0.05), protect=("joint", "marginal"), n_clusters=25, opt_in_fraction=0.5,
        cv=5, heldout_fraction=0.1, mapper=None, n_jobs=1):
    """Joint vs marginal protection of two private attributes: leakage of each, of the pair, and RMSE."""
    import matplotlib.pyplot as plt

    from ...evaluation import rmse_cost
    from ...mappers import QuantizedPrivacyMapper
    from ...mapping import mutual_information
    from ...recommender import SurpriseRecommender

    R, a, _ = _data(n_users, n_items, attribute_strength, random_state)
    recommender = SurpriseRecommender(rating_scale=(1, 5))
    rows, used = [], set()  # the fitted mappers' cluster counts (a count above the opted-in users is capped)
    options = dict(mapper or {})  # [params.mapper]: every mapper, both modes
    for mode in protect:
        for cap in max_leakages:
            mapper = QuantizedPrivacyMapper(n_clusters=n_clusters, max_leakage=float(cap), protect=mode,
                                            random_state=random_state, **options)
            cost = rmse_cost(AttributeColumns(mapper), R, a, opt_in_fraction=opt_in_fraction, cv=cv,
                             heldout_fraction=heldout_fraction, recommender=recommender,
                             random_state=random_state, n_jobs=n_jobs)
            m = cost.mapper.mapper_
            used.add(int(m.n_clusters_))
            row = {"protect": mode, "max_leakage": float(cap), "leakage_engine_bits": m.leakage_}
            for name, v in zip(ATTRIBUTES, m.leakage_per_attribute_):
                row[f"leakage_{name.replace(' ', '_')}_bits"] = float(v)
            row["leakage_joint_bits"] = float(m.joint_leakage_)
            row["distortion"] = float(m.distortion_)
            for k in ("rmse_original", "rmse_released", "rmse_release_nothing", "rel_increase_released",
                      "rel_increase_release_nothing"):
                row[k] = float(cost[k])
            rows.append(row)
    frame = pd.DataFrame(rows)
    jp = m.joint_prior_  # users who disclosed both attributes (the same in both modes)
    prior_joint = float("nan") if jp is None else float(mutual_information(jp))

    shown = (", ".join(f"{k}={v!r}" for k, v in options.items()) + ", the defaults otherwise" if options
             else "taste space, profile release")
    used = sorted(used)
    clusters = fitted_clusters(n_clusters, used[0]) if len(used) == 1 else \
        f"{used[0]} to {used[-1]} clusters (n_clusters={n_clusters} requested)"
    report.section("Setting")
    report.text(
        f"make_ratings: {n_users} users x {n_items} items, six taste classes (attribute_strength "
        f"{attribute_strength:g}) read as gender (2) x age band (3); {opt_in_fraction:.0%} of the users disclose "
        f"both attributes. QuantizedPrivacyMapper ({clusters}, {shown}) at each "
        "leakage cap, protect='joint' (the cap bounds I(gender, age band; C_hat)) and protect='marginal' (the "
        "cap bounds the average of I(gender; C_hat) and I(age band; C_hat)). Leakages in bits under the "
        f"priors fitted on the opted-in users; RMSE: Table I protocol, Surprise SVD, {cv}-fold."
    )
    report.section("Leakage of each attribute, of the pair, and RMSE")
    report.table(frame, "multi_attribute",
                 caption="leakage_engine_bits: what the engine minimised (the joint leakage, or the average "
                         "marginal leakage). rel_increase_*: RMSE increase over releasing every original rating.")
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode, mk in zip(("joint", "marginal"), ("o-", "s--")):
        sub = frame[frame["protect"] == mode]
        if not sub.empty:
            ax.plot(sub["leakage_joint_bits"], 100 * sub["rel_increase_released"], mk,
                    label=f"protect='{mode}' (joint leakage)")
    ax.axhline(100 * float(frame["rel_increase_release_nothing"].mean()), color="grey", ls=":",
               label="release nothing")
    ax.set_xlabel("I(gender, age band; C_hat) (bits)")
    ax.set_ylabel("RMSE increase (%)")
    ax.legend()
    ax.set_title("Two private attributes: joint vs marginal protection")
    report.figure(fig, "multi_attribute", caption="RMSE cost against the leakage of the pair.")

    def _at(mode, cap, key):
        sub = frame[(frame["protect"] == mode) & (frame["max_leakage"] == cap)]
        return float(sub[key].iloc[0]) if not sub.empty else float("nan")

    cap0 = float(max_leakages[0])
    headline = {
        "max_leakage": cap0,
        "joint_leakage_joint_bits": _at("joint", cap0, "leakage_joint_bits"),
        "joint_leakage_marginal_bits": _at("marginal", cap0, "leakage_joint_bits"),
        "max_marginal_leakage_marginal_bits": max(_at("marginal", cap0, f"leakage_{n.replace(' ', '_')}_bits")
                                                  for n in ATTRIBUTES),
        "rel_increase_joint": _at("joint", cap0, "rel_increase_released"),
        "rel_increase_marginal": _at("marginal", cap0, "rel_increase_released"),
        "rel_increase_release_nothing": float(frame["rel_increase_release_nothing"].mean()),
        "prior_leakage_joint_bits": prior_joint,  # I(gender, age band; C) before the mapping
    }
    report.json({"headline": headline, "table": frame.to_dict(orient="list")}, "summary")
    return headline
