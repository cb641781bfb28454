"""Privacy-utility curves: sweep a mapper's privacy parameter, measure leakage, attacks and RMSE.

Every point of a curve is evaluated on the SAME draw of the protocol (the same
opted-in users, folds, held-out ratings and recommender seeds), so differences
between points are due to the mapper only.
"""

from dataclasses import dataclass, field
import numbers
import warnings

import numpy as np
import pandas as pd
from sklearn.base import clone

from ..exceptions import ConvergenceWarning
from ..utils._validation import check_n_jobs, plain_value, user_stacklevel
from ._attacks import ATTACK_FEATURES, ATTACK_MODELS, _check_attackers, evaluate_attacks
from ._protocol import (
    RELEASES,
    _check_mapper,
    _check_recommender,
    _check_verbose,
    _fit_mapper,
    _fitted_attr,
    _fold_rmse,
    _mapper_figures,
    _prepare_split,
    _relative_increase,
    _release,
    _run_jobs,
)

__all__ = ["privacy_utility_curve", "PrivacyUtilityCurve", "check_privacy_grid"]


def check_privacy_grid(values, name="deltas"):
    """Validate a grid of privacy parameters: 1-D, finite, >= 0, strictly increasing.

    Parameters
    ----------
    values : float or sequence of float
        The grid (a single number is a grid of one).
    name : str, default="deltas"
        Name used in error messages.

    Returns
    -------
    grid : ndarray of float64, shape (n_values,)

    Raises
    ------
    TypeError
        Non-numeric values.
    ValueError
        Empty, negative, non-finite, unsorted or repeated values (the message
        quotes them), or a grid of more than one dimension.
    """
    try:
        arr = np.asarray(values, dtype=object)
    except ValueError:  # rows of different lengths
        arr = None
    if arr is None or arr.ndim > 1:
        # a 2-D grid ([[0.1, 0.2]]) was flattened without a word
        shape = "rows of different lengths" if arr is None else f"shape {arr.shape}"
        given = values.tolist() if isinstance(values, np.ndarray) else plain_value(values)
        raise ValueError(f"{name} must be 1-D (a single number or a sequence of numbers), got {shape}: {given!r}")
    arr = arr.reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one value, got {plain_value(values)!r}")
    for v in arr:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must be real numbers, got {plain_value(v)!r} of type {type(v).__name__} in "
                            f"{plain_value(values)!r}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {plain_value(values)!r}")
    shown = arr.tolist()
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got {float(arr[arr < 0][0])!r} in {shown!r}")
    if arr.size > 1 and np.any(np.diff(arr) <= 0):
        i = int(np.flatnonzero(np.diff(arr) <= 0)[0])
        raise ValueError(
            f"{name} must be sorted in strictly increasing order, got {shown[i]!r} followed by "
            f"{shown[i + 1]!r} in {shown!r}"
        )
    return arr


def _attack_columns(table):
    """Frame columns of one release's attack table (see :class:`PrivacyUtilityCurve`)."""
    row = {}
    # the main target: "joint" for a 2-D attribute (a reserved column name), else the 1-D "attribute"; a
    # column named "attribute" beside others is a marginal
    main_target = "joint" if (table.target == "joint").any() else "attribute"
    main = table.target == main_target
    for t in table[main].itertuples(index=False):
        row[f"auc_{t.attacker}_{t.model}_{t.features}"] = t.auc
    for target in pd.unique(table.target):
        suffix = "" if target == main_target else f"__{target}"
        for attacker in ("fixed", "adaptive"):
            sub = table[(table.target == target) & (table.attacker == attacker)]
            if len(sub):
                # folded class by class (AttackResult.folded_auc): folding the macro AUC let classes ranked
                # backwards cancel classes found outright
                if "folded_auc" in sub:
                    folded = sub["folded_auc"].to_numpy(dtype=float)
                else:  # a table of an older release of the library
                    auc = sub["auc"].to_numpy(dtype=float)
                    folded = np.maximum(auc, 1.0 - auc)
                row[f"worst_auc_{attacker}{suffix}"] = float(np.max(folded))
                row[f"worst_advantage_{attacker}{suffix}"] = float(sub["advantage"].max())
    return row


def _chance_columns(table):
    """``chance_folded_auc`` (and ``chance_folded_auc__<column>`` for the marginals of a 2-D attribute) of one
    release's attack table: the folded AUC an uninformed attacker is expected to score on the protected users, the
    same for every attacker of a target (they score the same users); see :class:`PrivacyUtilityCurve`."""
    if "chance_folded_auc" not in table:  # a table of an older release of the library
        return {}
    main_target = "joint" if (table.target == "joint").any() else "attribute"
    row = {}
    for target in pd.unique(table.target):
        suffix = "" if target == main_target else f"__{target}"
        row[f"chance_folded_auc{suffix}"] = float(table.loc[table.target == target, "chance_folded_auc"].iloc[0])
    return row


def _attack_job(fitted, split, fixed_attackers, models, features):
    X_opt_rel = _release(fitted, split.X_opt, split.rating_range)
    X_prot_rel = _release(fitted, split.X_prot, split.rating_range)
    table, res = evaluate_attacks(split.X_opt, X_opt_rel, split.y_opt, X_prot_rel, split.y_prot,
                                  models=models, features=features, fixed_attackers=fixed_attackers,
                                  random_state=split.attack_seed, attribute_names=split.names, verbose=0)
    diff = (X_prot_rel - split.X_prot)
    diff.eliminate_zeros()
    changed = float(np.mean(np.diff(diff.tocsr().indptr)))
    roc = {k: (v.fpr, v.tpr) for k, v in res.items() if k != "fixed_attackers"}
    return table, roc, changed


@dataclass
class PrivacyUtilityCurve:
    """The result of :func:`privacy_utility_curve`.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per value of the swept parameter (column named after it):
        ``leakage_bits`` and ``distortion`` (the mapper's ``leakage_`` and
        ``distortion_``, NaN when it has none), ``changed_ratings`` (mean number
        of entries a protected user's release differs from her ratings in),
        ``auc_<attacker>_<model>_<features>`` for attacker in fixed/adaptive
        (model named as in :func:`evaluate_attacks`: two custom classifiers of
        one class are ``LogisticRegression`` and ``LogisticRegression_2``),
        ``worst_auc_fixed`` / ``worst_auc_adaptive`` (the largest folded AUC
        ``max(AUC, 1 - AUC)`` over models and features: an AUC well below 0.5 is
        a reliably wrong attacker, i.e. still leakage; for more than two classes
        each class's one-vs-rest AUC is folded before the mean,
        :attr:`AttackResult.folded_auc`),
        ``worst_advantage_fixed`` / ``worst_advantage_adaptive`` (the largest
        accuracy minus the majority-class rate), and, for a 2-D private
        attribute, the same four figures per column (the marginals) with the
        suffix ``__<column>`` (the unsuffixed ones score the JOINT attribute);
        for more than two classes the AUC is the macro one-vs-rest average,
        ``rmse_released`` (mean over folds) and its ``_std``, ``rmse_original``,
        ``rmse_release_nothing``, ``rmse_release_everything``,
        ``rel_increase_released``, ``rel_increase_release_nothing``, then,
        when attackers ran, ``chance_folded_auc`` (and
        ``chance_folded_auc__<column>`` for the marginals): the folded AUC an
        attacker whose scores carry no information is expected to score on the
        protected users (:attr:`AttackResult.chance_folded_auc`, from the class
        sizes alone; the same for every value of the parameter). It is the
        chance level of each attacker's ``folded_auc``, and a LOWER bound of the
        chance level of ``worst_auc_*``: the largest of several attackers'
        folded AUCs on the same users is expected higher still (by how much
        depends on how alike the attackers rank), so a ``worst_auc_*`` a little
        above ``chance_folded_auc`` is not yet leakage.
    per_fold : pandas.DataFrame
        ``rmse_*`` per value and fold.
    attacks : pandas.DataFrame
        Long table: value, target (``"attribute"``, or ``"joint"`` and one per
        column of a 2-D attribute), attacker, model, features, auc, accuracy,
        majority_accuracy, advantage, n_samples, folded_auc, chance_folded_auc
        (see :func:`evaluate_attacks`).
    reference_attacks : pandas.DataFrame
        The attackers on the ORIGINAL ratings of the protected users (no privacy).
    roc : dict
        ROC curves of the attackers: ``value -> {key: (fpr, tpr)}``, one entry
        per value of the swept parameter (as a float) when attackers ran, with
        ``key`` ``(attacker, model, features)`` (``attacker`` ``"fixed"`` or
        ``"adaptive"``; ``(attacker, model, features, column)`` for the
        marginals of a 2-D attribute), as in :func:`evaluate_attacks`. The key
        ``"original"`` holds the fixed attackers' curves on the original
        ratings (no privacy). Empty arrays where no ROC curve is defined (more
        than two classes). Drawn by :meth:`plot_roc`.
    param : str
        Name of the swept parameter (the first column of ``frame``):
        ``"delta"``, ``"max_leakage"``, the ``param`` given, or ``"setting"``
        when the mapper was evaluated as it is.
    mappers : list
        The fitted mappers, one per value, in the order of ``frame``. For a
        parameter that ``transform`` alone reads (``BlurMe``'s ``fraction``)
        they are copies of one fit with only that parameter changed.

    Notes
    -----
    The RMSE figures follow :func:`rmse_cost` (held-out ratings removed before
    the release). The attackers are scored on the release of the protected users'
    FULL rows, i.e. what they would release in deployment; the mapper is fitted
    beforehand on the opted-in users and ``transform`` never updates it.

    Pass a curve as ``reference=`` to a later :func:`privacy_utility_curve` on the
    same data and protocol: what does not depend on the mapper (the reference
    attackers, the fixed attackers, the RMSE of the original and release-nothing
    releases in every fold) is reused instead of recomputed.
    """

    frame: pd.DataFrame
    per_fold: pd.DataFrame
    attacks: pd.DataFrame
    reference_attacks: pd.DataFrame
    roc: dict = field(repr=False)
    param: str = "delta"
    mappers: list = field(default_factory=list, repr=False)
    # what a later call may reuse (see ``reference`` of privacy_utility_curve)
    _shared: dict = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ plots
    @staticmethod
    def _ax(ax):
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(5.5, 4))
        return ax

    def plot_privacy_distortion(self, ax=None, label=None):
        """Leakage (bits) against the mapper's distortion: the privacy-distortion curve (Fig. 10-11).

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; ``None`` makes a new figure.
        label : str, default=None
            Legend label of the curve.

        Returns
        -------
        ax : matplotlib Axes
        """
        ax = self._ax(ax)
        f = self.frame
        ax.plot(f["distortion"], f["leakage_bits"], "o-", label=label)
        ax.set_xlabel("distortion")
        ax.set_ylabel("leakage I(A; released) [bits]")
        ax.set_title("privacy-distortion")
        ax.grid(alpha=0.3)
        return ax

    def plot_frontier(self, ax=None, x="leakage_bits", label=None):
        """RMSE against leakage (or an attacker AUC), with the two reference releases as lines.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; ``None`` makes a new figure.
        x : str, default="leakage_bits"
            Column of ``frame`` on the horizontal axis (for example ``"worst_auc_adaptive"``).
        label : str, default=None
            Legend label of the released curve (``"released"`` when None).

        Returns
        -------
        ax : matplotlib Axes
        """
        ax = self._ax(ax)
        f = self.frame
        ax.errorbar(f[x], f["rmse_released"], yerr=f["rmse_released_std"], fmt="o-", capsize=3,
                    label=label or "released")
        ax.axhline(f["rmse_original"].iloc[0], color="green", ls="--", label="release everything (original)")
        ax.axhline(f["rmse_release_nothing"].iloc[0], color="red", ls=":", label="release nothing")
        ax.set_xlabel(x.replace("_", " "))
        ax.set_ylabel("RMSE on held-out true ratings")
        ax.set_title("privacy-utility frontier")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        return ax

    def plot_attacker_auc(self, ax=None, models=None, features=None):
        """Attacker AUC against the swept parameter, fixed (dashed) and adaptive (solid).

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; ``None`` makes a new figure.
        models : sequence of str, default=None
            Attack models to draw (names as in the ``auc_*`` columns); None: all.
        features : sequence of str, default=None
            Feature views to draw (``"values"``, ``"indicators"``); None: all.

        Returns
        -------
        ax : matplotlib Axes
        """
        ax = self._ax(ax)
        f = self.frame
        for col in [c for c in f.columns if c.startswith("auc_")]:  # worst_auc_* are summaries
            _, attacker, rest = col.split("_", 2)
            model, feat = rest.rsplit("_", 1)
            if (models and model not in models) or (features and feat not in features):
                continue
            ax.plot(f[self.param], f[col], "o-" if attacker == "adaptive" else "x--",
                    label=f"{attacker} {model} ({feat})")
        ax.axhline(0.5, color="grey", lw=1)
        ax.set_xlabel(self.param)
        ax.set_ylabel("attacker AUC on protected users")
        ax.set_ylim(0.4, 1.0)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        return ax

    def plot_roc(self, value=None, ax=None, model="logistic", features="values"):
        """ROC curves of the fixed and adaptive attackers at one value, and without privacy (Fig. 12).

        Parameters
        ----------
        value : float, default=None
            Value of the swept parameter (a key of ``roc``); None: the last one.
        ax : matplotlib Axes, default=None
            Where to draw; ``None`` makes a new figure.
        model : str, default="logistic"
            Attack model whose curves are drawn.
        features : str, default="values"
            Feature view whose curves are drawn.

        Returns
        -------
        ax : matplotlib Axes

        Raises
        ------
        ValueError
            ``value`` has no ROC curves (the message lists the known values).
        """
        ax = self._ax(ax)
        values = [v for v in self.roc if v != "original"]
        if value is None:
            value = values[-1]
        if value not in self.roc:
            raise ValueError(f"no ROC curves for {self.param}={plain_value(value)!r}; known values: "
                             f"{plain_value(values)!r}")
        curves = [("no privacy", self.roc["original"].get(("fixed", model, features)))]
        curves += [(f"{a}, {self.param}={value:g}", self.roc[value].get((a, model, features)))
                   for a in ("fixed", "adaptive")]
        drawn = 0
        for name, c in curves:
            if c is not None and len(c[0]):
                ax.plot(c[0], c[1], label=name)
                drawn += 1
        ax.plot([0, 1], [0, 1], color="grey", lw=1, ls=":")
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.set_title(f"ROC, {model} on {features}")
        if drawn:
            ax.legend(fontsize=8)
        else:  # a multi-class or joint attribute: one ROC curve per class would not be one picture
            ax.text(0.5, 0.5, "ROC curves are drawn for a binary attribute;\nsee the macro AUC tables",
                    ha="center", va="center", transform=ax.transAxes, fontsize=9)
        return ax


def _warn_uncertified(fitted, name, values):
    """A ConvergenceWarning, from the calling thread, for every fitted mapper whose solve was not certified."""
    for v, m in zip(values, fitted):
        v = plain_value(v)
        res = _fitted_attr(m, "solver_result_")
        status = getattr(res, "status", "optimal")
        if status != "optimal":
            gap = getattr(res, "certificate", {}).get("gap_bits", np.nan)
            warnings.warn(f"the mapper fitted at {name}={v!r} is not certified (status={status!r}, certified gap "
                          f"{gap:.3g} bits, solver {getattr(res, 'solver', None)!r}): its leakage_ and "
                          "distortion_ are the solver's figures, not guarantees",
                          ConvergenceWarning, stacklevel=user_stacklevel())


def privacy_utility_curve(mapper, ratings, private, *, deltas=None, max_leakages=None, param=None,
                          values=None, opt_in_fraction=0.5, cv=5, heldout_fraction=0.1,
                          recommender=None, attack_models=ATTACK_MODELS, attack_features=ATTACK_FEATURES,
                          rating_range=(1, 5), random_state=None, n_jobs=None, verbose=1,
                          mapper_target=None, reference=None):
    """Sweep a mapper's privacy parameter and measure leakage, attacks and RMSE at every value.

    Parameters
    ----------
    mapper : transformer
        Unfitted; for every value it is cloned, set (``set_params``) and fitted on
        the opted-in users only (see :func:`rmse_cost`).
    ratings : {array-like, sparse matrix} of shape (n_users, n_items)
        Ratings on ``rating_range``, 0 = not rated.
    private : array-like of shape (n_users,) or (n_users, n_attributes)
        Every user's true private attribute, binary, multi-class or one column
        per attribute (see :func:`rmse_cost`).
    deltas : sequence of float, optional
        Values of the mapper's ``delta`` (distortion budget), >= 0 and strictly
        increasing.
    max_leakages : sequence of float, optional
        Values of the mapper's ``max_leakage`` (bits), >= 0 and strictly increasing.
    param, values : str and sequence, optional
        Any other parameter (for example ``param="fraction"`` for :class:`BlurMe`).
        Give at most one of ``deltas``, ``max_leakages``, ``values``; none at all
        evaluates the mapper as it is (one row, ``param="setting"``).
    opt_in_fraction, cv, heldout_fraction, recommender :
        As in :func:`rmse_cost` (defaults 0.5, 5, 0.1 and None).
    attack_models, attack_features : sequences, or one model and one view
        Attackers to run (see :class:`InferenceAttack` and :func:`evaluate_attacks`;
        ``"logistic"`` is a list of one); empty to skip attacks. Checked before
        any mapper is fitted. Defaults: ``("logistic", "forest")`` and
        ``("values", "indicators")``.
    rating_range : tuple (low, high), default=(1, 5)
        As in :func:`rmse_cost`.
    random_state : None or int
        One draw of the protocol shared by every value (see :func:`rmse_cost`).
    n_jobs : int or None
        Values and folds run in parallel with joblib.
    verbose : int, default=1
        tqdm progress bars (mapper fits, then every fold and attack job of the
        sweep, and the reference attackers) on stderr, shown only when stderr
        is a terminal; ``0``: none.
    mapper_target : None, "joint" or str, default=None
        For a 2-D private attribute, what the mapper is fitted on (see
        :func:`rmse_cost`); the attackers always score the joint attribute and
        every column.
    reference : PrivacyUtilityCurve or None, default=None
        A curve computed earlier on the same ratings and attribute with the same
        protocol (``opt_in_fraction``, ``cv``, ``heldout_fraction``,
        ``rating_range``, integer ``random_state``, ``mapper_target``),
        recommender and attackers: its reference attackers, fixed attackers and
        per-fold RMSE of the ``original`` and ``release_nothing`` releases are
        reused, which gives the very same figures without refitting them
        (the split is redrawn and compared with the reference's; any
        difference is refused with a ``ValueError``). Comparing several
        mappers on one draw thus fits those once.

    Returns
    -------
    PrivacyUtilityCurve
        ``.frame`` (one row per value) and ``.plot_privacy_distortion()``,
        ``.plot_frontier()``, ``.plot_attacker_auc()``, ``.plot_roc()``.

    References
    ----------
    .. [1] S. Salamatian et al., "Managing your Private and Public Data: Bringing
       down Inference Attacks against your Privacy", Sec. VI-C: privacy-distortion
       curves (Fig. 10-11), logistic-regression ROC (Fig. 12), MF RMSE (Table I).

    Examples
    --------
    >>> from privrelease.datasets import make_ratings
    >>> from privrelease.evaluation import BlurMe, privacy_utility_curve
    >>> from privrelease.recommender import SurpriseRecommender
    >>> R, a, _ = make_ratings(300, 40, attribute_strength=2.0, random_state=0)
    >>> curve = privacy_utility_curve(
    ...     BlurMe(), R, a, param="fraction", values=[0.0, 0.5], cv=2, attack_models=["logistic"],
    ...     recommender=SurpriseRecommender("BaselineOnly", rating_scale=(1, 5)), random_state=0, verbose=0)
    >>> f = curve.frame
    >>> bool(f.auc_fixed_logistic_values[1] < f.auc_fixed_logistic_values[0])   # BlurMe fools the fixed attacker
    True
    >>> bool(f.rmse_released[0] == f.rmse_original[0])                          # fraction 0 releases the original
    True

    With a privacy mapper, sweep its budget instead, for example
    ``privacy_utility_curve(QuantizedPrivacyMapper(), R, a, max_leakages=[0.0, 0.01, 0.1])``.
    """
    _check_mapper(mapper)
    # before any fit: a misspelt attacker was reported only after every mapper was fitted
    models, feats = _check_attackers(attack_models, attack_features, names=("attack_models", "attack_features"))
    given = [(n, v) for n, v in (("delta", deltas), ("max_leakage", max_leakages), (param, values))
             if v is not None]
    if len(given) > 1:
        raise ValueError(
            f"give at most one of deltas, max_leakages or values, got {', '.join(n for n, _ in given)}"
        )
    if values is not None and not isinstance(param, str):
        raise TypeError(f"param must name the mapper parameter that values sets, got {param!r}")
    if param is not None and values is None and (deltas is not None or max_leakages is not None):
        # it used to be ignored: the sweep ran over delta / max_leakage whatever param named
        raise ValueError(f"param={param!r} names the parameter that values sets, but values is None while "
                         "deltas or max_leakages is given (they sweep delta and max_leakage); pass values=[...] "
                         "with param, or drop param")
    n_jobs = check_n_jobs(n_jobs)
    verbose = _check_verbose(verbose)  # before any work: it was read once the mappers were fitted
    if given:
        name, grid = given[0]
        label = {"delta": "deltas", "max_leakage": "max_leakages"}.get(name, "values")
        grid = check_privacy_grid(grid, label)
        # deep: a Pipeline's step parameters (privacy__fraction) were refused as "no parameter" although set_params
        # sets them
        known = mapper.get_params(deep=True) if hasattr(mapper, "get_params") else {}
        if name not in known:
            raise ValueError(
                f"{type(mapper).__name__} has no parameter {name!r} to sweep; its parameters are {sorted(known)!r}"
            )
        raw = np.asarray(given[0][1], dtype=object).ravel() if np.ndim(given[0][1]) else [given[0][1]]
        # integers stay integers (for example a number of items); everything else becomes a float
        raw = [int(v) if isinstance(v, numbers.Integral) else float(v) for v in raw]
        settings = [clone(mapper).set_params(**{name: v}) for v in raw]
    else:
        name, grid = "setting", np.array([0.0])
        settings = [mapper]
    recommender = _check_recommender(recommender, rating_range)
    split = _prepare_split(ratings, private, opt_in_fraction=opt_in_fraction, cv=cv,
                           heldout_fraction=heldout_fraction, rating_range=rating_range,
                           random_state=random_state, mapper_target=mapper_target)
    shared = _check_reference(reference, split, recommender, models, feats)
    if name in getattr(type(mapper), "_transform_only_params", ()):
        # the swept parameter is read by transform only (BlurMe's fraction): one fit serves every value
        base = _fit_mapper(settings[0], split)
        fitted = [_with_param(base, name, v) for v in raw]
    else:
        # an uncertified solve warns in the thread or process that fits the mapper: under joblib's threading
        # backend another worker's catch_warnings (one setting of the whole process, Python < 3.14) can drop it
        # (a process's warnings are issued again here, by _run_jobs). Held back here and warned from this thread
        # for every such fit, once
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fitted = _run_jobs([(_fit_mapper, (m, split)) for m in settings], n_jobs, verbose, "fitting mappers")
        _warn_uncertified(fitted, name, grid)

    if shared is not None:
        fixed, ref_table, ref_roc = shared["fixed"], shared["ref_table"], shared["ref_roc"]
    else:
        fixed, ref_table, ref_roc = {}, pd.DataFrame(), {}
    if models and feats and shared is None:
        ref_table, ref_res = evaluate_attacks(split.X_opt, None, split.y_opt, split.X_prot, split.y_prot,
                                              models=models, features=feats, random_state=split.attack_seed,
                                              attribute_names=split.names, verbose=verbose)
        fixed = ref_res.pop("fixed_attackers")
        ref_roc = {k: (v.fpr, v.tpr) for k, v in ref_res.items()}

    n_folds = len(split.folds)
    keys, jobs = [], []
    for k in range(n_folds):
        for rel in ("original", "release_nothing"):
            if shared is None:
                keys.append((rel, None, k))
                jobs.append((_fold_rmse, (split, k, rel, recommender, None)))
    for i, m in enumerate(fitted):
        for k in range(n_folds):
            keys.append(("released", i, k))
            jobs.append((_fold_rmse, (split, k, "released", recommender, m)))
        if models and feats:
            keys.append(("attacks", i, None))
            jobs.append((_attack_job, (m, split, fixed, models, feats)))
    out = dict(zip(keys, _run_jobs(jobs, n_jobs, verbose, f"{len(grid)} x {name}")))
    if shared is not None:
        out.update(shared["rmse"])

    pf_rows, rows, attack_rows, roc = [], [], [], {"original": ref_roc}
    for i, (v, m) in enumerate(zip(grid, fitted)):
        for k in range(n_folds):
            r = {"original": out[("original", None, k)], "released": out[("released", i, k)],
                 "release_nothing": out[("release_nothing", None, k)]}
            r["release_everything"] = r["original"]
            pf_rows.append({name: v, "fold": k, **{f"rmse_{rel}": r[rel] for rel in RELEASES}})
        pf = pd.DataFrame([p for p in pf_rows if p[name] == v])
        figs = _mapper_figures(m)
        row = {name: v, "leakage_bits": figs["leakage"], "distortion": figs["distortion"]}
        if ("attacks", i, None) in out:
            table, roc_i, changed = out[("attacks", i, None)]
            row["changed_ratings"] = changed
            row.update(_attack_columns(table))
            attack_rows.append(table.assign(**{name: v}))
            roc[float(v)] = roc_i
        for rel in RELEASES:
            row[f"rmse_{rel}"] = float(pf[f"rmse_{rel}"].mean())
        row["rmse_released_std"] = float(pf["rmse_released"].std(ddof=1)) if n_folds > 1 else 0.0
        row["rel_increase_released"] = _relative_increase(row["rmse_released"], row["rmse_original"])
        row["rel_increase_release_nothing"] = _relative_increase(row["rmse_release_nothing"], row["rmse_original"])
        if ("attacks", i, None) in out:  # appended: the columns before keep their places
            row.update(_chance_columns(out[("attacks", i, None)][0]))
        rows.append(row)
    attacks = pd.concat(attack_rows, ignore_index=True) if attack_rows else pd.DataFrame()
    if len(attacks):
        attacks = attacks[[name] + [c for c in attacks.columns if c != name]]
    shared = {"split": split, "recommender": recommender, "models": models, "features": feats, "fixed": fixed,
              "ref_table": ref_table, "ref_roc": ref_roc,
              "rmse": {key: out[key] for key in out if key[0] in ("original", "release_nothing")}}
    return PrivacyUtilityCurve(frame=pd.DataFrame(rows), per_fold=pd.DataFrame(pf_rows), attacks=attacks,
                               reference_attacks=ref_table, roc=roc, param=name, mappers=list(fitted),
                               _shared=shared)


def _with_param(fitted, name, value):
    """A copy of a fitted mapper with ``name`` set to ``value``, sharing the fitted state (read by transform only)."""
    import copy

    out = copy.copy(fitted).set_params(**{name: value})
    if hasattr(out, "_validate_params"):
        out._validate_params()  # what fit would have checked
    return out


def _same_matrix(A, B):
    return A.shape == B.shape and (A != B).nnz == 0


def _same_split(a, b):
    """Whether two draws of the protocol are the same (data, users, folds, held-out ratings, seeds)."""
    arrays = ("y", "users", "opt_in", "protected")
    return (_same_matrix(a.X, b.X) and all(np.array_equal(getattr(a, n), getattr(b, n)) for n in arrays)
            and len(a.folds) == len(b.folds) and all(np.array_equal(f, g) for f, g in zip(a.folds, b.folds))
            and _same_matrix(a.visible, b.visible) and _same_matrix(a.heldout, b.heldout)
            and a.fold_seeds == b.fold_seeds and a.attack_seed == b.attack_seed
            and a.rating_range == b.rating_range and a.names == b.names)


def _check_reference(reference, split, recommender, models, feats):
    """The reusable parts of ``reference``, after checking it was computed on the same draw and settings."""
    if reference is None:
        return None
    if not isinstance(reference, PrivacyUtilityCurve) or reference._shared is None:
        raise TypeError(f"reference must be a PrivacyUtilityCurve returned by privacy_utility_curve, got "
                        f"{type(reference).__name__}")
    shared = reference._shared
    if split.attack_seed is None:
        raise ValueError("reference needs an integer random_state: with random_state=None every call draws "
                         "new opted-in users, folds and held-out ratings, so nothing can be reused")
    if not _same_split(shared["split"], split):
        raise ValueError("reference was computed on other data or another draw of the protocol (ratings, "
                         "private attribute, opt_in_fraction, cv, heldout_fraction, rating_range or "
                         "random_state differ); pass the same ones, or reference=None")
    rec = shared["recommender"]
    same_rec = type(rec) is type(recommender) and rec.get_params() == recommender.get_params()
    if not same_rec or shared["models"] != models or shared["features"] != feats:
        raise ValueError("reference was computed with another recommender or other attackers (attack_models, "
                         "attack_features); pass the same ones, or reference=None")
    return shared
