"""Scoring a release pipeline in scikit-learn's model selection.

``GridSearchCV(Pipeline([("privacy", mapper), ("recommender", SurpriseRecommender())]),
{"privacy__delta": [...]}, scoring=privacy_scoring(), refit=lowest_rmse_within(max_leakage_bits=0.05))``
chooses the distortion budget that gives the best recommendations among those meeting
a leakage target. The cross-validation splits USERS; in each test fold a fraction of
every test user's ratings is held out BEFORE the rows go through the mapper, so a
held-out rating never passes through the mapper nor reaches the recommender.
"""

import warnings

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from ..exceptions import PrivacyLeakWarning
from ..utils import check_random_source
from ..utils._validation import check_same_index, is_sparse_frame, plain_labels, sparse_frame_like, user_stacklevel
from ._attacks import InferenceAttack, _take_rows
from ..recommender import holdout_split
from ._protocol import _check_fraction, _fitted_attr
from ._targets import check_attribute, joint_attribute

__all__ = ["make_privacy_scorer", "privacy_scoring", "lowest_rmse_within"]

_METRICS = ("rmse", "leakage", "adaptive_auc")


def _split_pipeline(estimator):
    steps = getattr(estimator, "steps", None)
    if not steps or len(steps) < 2:
        raise TypeError(
            "privacy scorers need a fitted Pipeline([... release steps ..., ('recommender', rec)]), "
            f"got {type(estimator).__name__}"
        )
    return estimator[:-1], estimator[-1]


def _leakage(release):
    leakage = _fitted_attr(release, "leakage_")  # the first step that has it, as the protocol reads it
    if leakage is not None:
        return float(leakage)
    raise AttributeError(
        "no step before the recommender exposes a fitted leakage_ attribute; "
        f"steps: {[name for name, _ in release.steps]!r}"
    )


def _like(visible, X):
    """The visible ratings (CSR) in ``X``'s format when ``X`` is a pandas DataFrame (sparse or dense, with its
    index and columns): a pipeline fitted on a frame warned "X does not have valid feature names" at every
    scoring call, and its steps saw other inputs than in fit."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        return visible
    if is_sparse_frame(X):
        return sparse_frame_like(visible, X)
    return pd.DataFrame(visible.toarray(), index=X.index, columns=X.columns)


class _PrivacyScorer:
    """Callable ``scorer(pipeline, X, y) -> float`` (greater is better)."""

    def __init__(self, metric, heldout_fraction, seed, attack_model):
        self.metric = metric
        self.heldout_fraction = heldout_fraction
        self.seed = seed
        self.attack_model = attack_model

    def __call__(self, estimator, X, y=None):
        release, recommender = _split_pipeline(estimator)
        if self.metric == "leakage":
            return -_leakage(release)
        if self.metric == "rmse":
            # hold out BEFORE the release: only the visible part goes through the mapper
            visible, heldout = holdout_split(X, self.heldout_fraction, random_state=self.seed)
            return -float(recommender.rmse(release.transform(_like(visible, X)), heldout))
        # adaptive attacker: cross-validated on the test users' RELEASED rows
        if y is None:
            raise ValueError("the adaptive_auc scorer needs the private attribute y of the test users")
        check_same_index(X, y)
        y, keep, _ = check_attribute(y, X.shape[0])
        released = release.transform(X)
        Xr, yr = _take_rows(released, np.flatnonzero(keep)), y[keep]  # a frame's rows, not its columns
        if yr.ndim == 2:  # a 2-D attribute (protect="joint" / "marginal"): the attacker infers the joint one
            yr = joint_attribute(yr)[0]
        yr = plain_labels(yr)
        classes, counts = np.unique(yr, return_counts=True)
        if classes.size < 2:
            raise ValueError(
                "the adaptive_auc scorer needs at least two classes among the disclosed labels, "
                f"got {classes.tolist()!r}")
        n_splits = int(min(3, counts.min()))
        if n_splits < 2:
            # was -1.0 (an AUC of 1, the worst) without a word: a search on small data marked such candidates
            # fully leaky
            lone = classes[counts < 2].tolist()
            raise ValueError(
                f"the adaptive_auc scorer cross-validates its attacker over the scored users, and needs at least 2 "
                f"users of every class among them; class(es) {lone!r} have 1 (class counts "
                f"{dict(zip(classes.tolist(), counts.tolist()))!r}): score on more users, or merge the rare classes")
        att = InferenceAttack(model=self.attack_model, random_state=self.seed)
        proba = cross_val_predict(att, Xr, yr, method="predict_proba",
                                  cv=StratifiedKFold(n_splits, shuffle=True, random_state=self.seed))
        if classes.size == 2:
            auc = roc_auc_score(yr == classes[1], proba[:, 1])
            return -max(auc, 1.0 - auc)
        # one-vs-rest, each class folded before the mean (as AttackResult.folded_auc): folding the macro AUC let
        # classes ranked backwards cancel a class found outright (0.53 for per-class AUCs 0.2, 0.2 and 1.0)
        per = np.array([roc_auc_score(yr == c, proba[:, k]) for k, c in enumerate(classes)], dtype=float)
        return -float(np.mean(np.maximum(per, 1.0 - per)))

    def __repr__(self):
        return f"make_privacy_scorer(metric={self.metric!r}, heldout_fraction={self.heldout_fraction!r})"


def make_privacy_scorer(metric="rmse", *, heldout_fraction=0.1, attack_model="logistic", random_state=None):
    """A scorer for a fitted ``Pipeline([release steps..., recommender])``.

    Parameters
    ----------
    metric : {"rmse", "leakage", "adaptive_auc"}, default="rmse"
        ``"rmse"``: minus the RMSE on held-out true ratings of the test users,
        predicted from their released visible ratings (Salamatian et al.,
        Table I). ``"leakage"``: minus the fitted mapper's ``leakage_`` (bits).
        ``"adaptive_auc"``: minus the folded AUC ``max(AUC, 1 - AUC)`` of an
        attacker cross-validated on the test users' RELEASED rows (for more
        than two classes the mean over the classes of each one-vs-rest AUC
        folded, as :attr:`AttackResult.folded_auc`; undisclosed labels,
        :func:`privrelease.utils.undisclosed_mask`, are ignored; a 2-D attribute
        is scored jointly, one class per tuple of its columns,
        :func:`privrelease.evaluation.joint_attribute`). Greater is better for all three.
        The folded AUC is above 0.5 even for an attacker that learns nothing:
        its chance level on the scored users is
        ``chance_folded_auc(class counts)`` (:func:`chance_folded_auc`; the
        out-of-fold probabilities are pooled into one ranking of every scored
        user, so the counts are those of all of them), and a search's
        ``mean_test_neg_adaptive_auc`` averages the folds' figures, so its
        chance level is minus the mean of the folds' chance levels.
    heldout_fraction : float in (0, 1), default=0.1
        Share of each test user's ratings held out (:func:`privrelease.recommender.holdout_split`).
    attack_model : {"logistic", "forest"}, default="logistic"
        Attacker of ``"adaptive_auc"``.
    random_state : None or int, default=None
        Fixes the held-out ratings so that every candidate of a search is scored on
        the same ones; ``None`` draws that seed once, from the operating system.

    Returns
    -------
    scorer : callable ``(estimator, X, y) -> float``

    See Also
    --------
    privacy_scoring : the three scorers as a dict for multi-metric search.
    lowest_rmse_within : the matching ``refit`` rule.
    chance_folded_auc : the folded AUC of an uninformed attacker.
    """
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {_METRICS!r}, got {metric!r}")
    if attack_model not in ("logistic", "forest"):
        raise ValueError(f"attack_model must be 'logistic' or 'forest', got {attack_model!r}")
    heldout_fraction = _check_fraction(heldout_fraction, "heldout_fraction")
    seed = check_random_source(random_state).spawn_seed()
    return _PrivacyScorer(metric, heldout_fraction, seed, attack_model)


def privacy_scoring(*, heldout_fraction=0.1, adaptive_auc=False, random_state=None):
    """Scorers for ``GridSearchCV(scoring=...)``: ``neg_rmse``, ``neg_leakage_bits`` (and ``neg_adaptive_auc``).

    Parameters
    ----------
    heldout_fraction : float in (0, 1), default=0.1
        Share of each test user's ratings held out by the ``neg_rmse`` scorer
        (see :func:`make_privacy_scorer`).
    adaptive_auc : bool, default=False
        Also return ``neg_adaptive_auc`` (a logistic attacker cross-validated on
        the test users' released rows; slower).
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        One seed is drawn from it and shared by the scorers, so that every
        candidate of a search is scored on the same held-out ratings; ``None``
        draws it from the operating system.

    Returns
    -------
    scoring : dict
        ``{"neg_rmse": scorer, "neg_leakage_bits": scorer}`` (plus
        ``"neg_adaptive_auc"``), scorers of :func:`make_privacy_scorer`; greater is better.

    See Also
    --------
    lowest_rmse_within : the matching ``refit`` rule.

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.pipeline import Pipeline
    >>> from privrelease import QuantizedPrivacyMapper, SurpriseRecommender
    >>> from privrelease.datasets import make_ratings
    >>> from privrelease.evaluation import lowest_rmse_within
    >>> R, gender, _ = make_ratings(200, 20, random_state=0)
    >>> y = gender.copy()
    >>> y[1::2] = -1                                   # every other user did not disclose
    >>> search = GridSearchCV(
    ...     Pipeline([("privacy", QuantizedPrivacyMapper(n_clusters=3, random_state=0)),
    ...               ("recommender", SurpriseRecommender("BaselineOnly"))]),
    ...     {"privacy__max_leakage": [0.0, 0.05]},
    ...     scoring=privacy_scoring(random_state=0),
    ...     refit=lowest_rmse_within(max_leakage_bits=0.01), cv=2)
    >>> search = search.fit(R, y)
    >>> search.best_params_                            # the only candidate within 0.01 bits
    {'privacy__max_leakage': 0.0}
    """
    seed = check_random_source(random_state).spawn_seed()
    scoring = {
        "neg_rmse": make_privacy_scorer("rmse", heldout_fraction=heldout_fraction, random_state=seed),
        "neg_leakage_bits": make_privacy_scorer("leakage", random_state=seed),
    }
    if adaptive_auc:
        scoring["neg_adaptive_auc"] = make_privacy_scorer("adaptive_auc", random_state=seed)
    return scoring


def lowest_rmse_within(max_leakage_bits=None, *, max_adaptive_auc=None):
    """A ``refit`` rule: the lowest mean RMSE among candidates meeting the privacy targets.

    Parameters
    ----------
    max_leakage_bits : float >= 0 or None
        Largest acceptable mean ``leakage_`` (needs the ``neg_leakage_bits`` scorer).
    max_adaptive_auc : float in [0.5, 1] or None
        Largest acceptable folded adaptive-attacker AUC (needs ``neg_adaptive_auc``). Not below chance: an
        attacker that learns nothing scores above 0.5 on finitely many users (:func:`chance_folded_auc` of the
        class counts of a search's test folds: about 0.53 for two classes of 150 users), and a target below it
        is met only by luck.

    Returns
    -------
    refit : callable ``cv_results_ -> int``
        When no candidate meets the targets it warns (:class:`PrivacyLeakWarning`)
        and returns the most private candidate (smallest leakage, then AUC).
        A candidate with a NaN mean score (its scoring failed) is never chosen;
        when every candidate has one, a ValueError says so.
    """
    from ..utils import check_number

    if max_leakage_bits is not None:
        max_leakage_bits = check_number(max_leakage_bits, "max_leakage_bits", low=0)
    if max_adaptive_auc is not None:
        max_adaptive_auc = check_number(max_adaptive_auc, "max_adaptive_auc", low=0.5, high=1)

    def refit(cv_results):
        rmse = -np.asarray(cv_results["mean_test_neg_rmse"], dtype=float)
        ok = np.ones(rmse.size, dtype=bool)
        privacy = np.zeros(rmse.size)
        if max_leakage_bits is not None:
            leak = -np.asarray(cv_results["mean_test_neg_leakage_bits"], dtype=float)
            ok &= leak <= max_leakage_bits + 1e-12
            privacy = leak
        if max_adaptive_auc is not None:
            auc = -np.asarray(cv_results["mean_test_neg_adaptive_auc"], dtype=float)
            ok &= auc <= max_adaptive_auc
            privacy = privacy + auc
        # a candidate whose scoring failed has NaN means (GridSearchCV's error_score): np.argmin took a NaN RMSE
        # for the lowest, refitting a failed candidate as the best; NaN privacy figures for the most private
        failed = ~np.isfinite(rmse) | ~np.isfinite(privacy)
        if failed.all():
            raise ValueError(
                f"every candidate's mean scores hold NaN (rmse {rmse.tolist()!r}): the scorers failed on each "
                "(GridSearchCV(error_score='raise') shows why); no candidate can be refitted")
        ok &= ~failed
        if not ok.any():
            privacy = np.where(failed, np.inf, privacy)
            warnings.warn(
                f"no candidate meets max_leakage_bits={max_leakage_bits!r}, max_adaptive_auc={max_adaptive_auc!r}; "
                "refitting the most private candidate", PrivacyLeakWarning, stacklevel=user_stacklevel())
            return int(np.argmin(privacy))
        idx = np.flatnonzero(ok)
        return int(idx[np.argmin(rmse[idx])])

    return refit
