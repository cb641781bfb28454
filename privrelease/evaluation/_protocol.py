"""The recommendation-cost protocol of Salamatian et al., Sec. VI-C, Table I.

Users are split once into OPTED-IN users (a random ``opt_in_fraction``: they
disclose the private attribute, the mapper learns from them, and they keep
their original ratings) and PROTECTED users (whose attribute is never used by
anything but the scoring of attackers). The protected users are split into
``cv`` folds. For each fold, ``heldout_fraction`` of every test user's ratings
are held out BEFORE anything passes through the mapper; a recommender is then
trained on the other users and asked to predict the held-out TRUE ratings of
the test users from what they released. Four releases are compared on the very
same held-out ratings, with the very same recommender seed:

``original``
    everybody releases their true ratings (the paper's RMSE1);
``released``
    protected users release the mapper's output (the paper's RMSE2);
``release_nothing``
    protected users release nothing (empty rows): the recommender can only fall
    back on what it knows without them. A privacy mechanism whose RMSE is worse
    than this is worse than not participating;
``release_everything``
    protected users release everything, i.e. the original data: the same
    figure as ``original``, kept as a named reference point.
"""

from dataclasses import dataclass, field
import math
import numbers
import sys
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import clone

from ..mappers._dask import computed
from ..recommender import SurpriseRecommender, holdout_split
from ..utils import check_number, check_random_source, check_rating_matrix, check_rating_scale
from ..utils._validation import UNDISCLOSED_SHORT, check_n_jobs, plain_labels, plain_value, user_stacklevel
from ..utils._jobs import run_jobs
from ..utils._validation import check_same_index
from ._targets import check_attribute, joint_attribute

__all__ = ["rmse_cost", "RMSECost"]

RELEASES = ("original", "released", "release_nothing", "release_everything")


# --------------------------------------------------------------------------- validation
def _check_mapper(mapper):
    if not (hasattr(mapper, "fit") and hasattr(mapper, "transform")):
        raise TypeError(
            f"mapper must be a transformer with fit(X, y) and transform(X), got {mapper!r} "
            f"of type {type(mapper).__name__}"
        )


def _check_recommender(recommender, rating_range=(1, 5)):
    check_rating_scale(rating_range, "rating_range")
    if recommender is None:
        recommender = SurpriseRecommender(rating_scale=tuple(rating_range))
    if not (hasattr(recommender, "fit") and hasattr(recommender, "rmse")):
        raise TypeError(
            "recommender must have fit(X) and rmse(X, y) (see privrelease.recommender.SurpriseRecommender), "
            f"got {recommender!r} of type {type(recommender).__name__}"
        )
    return recommender


def _check_private(private, n_users):
    """Every user's TRUE attribute: 1-D (binary or multi-class) or 2-D (one column per attribute).

    Returns ``(y, names)``; ``names`` is None for a 1-D attribute.
    """
    try:
        y, labeled, names = check_attribute(private, n_users, name="private")
    except ValueError as exc:
        if "labels but X has" in str(exc) or "rows but X has" in str(exc):
            shape = np.shape(private)
            hint = (" (it looks transposed: pass y.T, one row per user and one column per attribute)"
                    if len(shape) == 2 and shape[1] == n_users else "")
            raise ValueError(f"private has {shape[0]} values but ratings has {n_users} users{hint}") from None
        raise
    if not labeled.all():
        raise ValueError(
            f"private must hold every user's TRUE attribute (the evaluation needs it to score the "
            f"attackers); {int(np.sum(~labeled))} value(s) are missing ({UNDISCLOSED_SHORT}). "
            "The opted-in users are drawn by the protocol itself (opt_in_fraction)"
        )
    if y.ndim == 1:
        y = plain_labels(y)
    classes = np.unique(_joint(y))
    if classes.size < 2:
        raise ValueError(f"private must have at least two classes, got only {classes.tolist()!r}")
    return y, names


def _joint(y):
    """The label the split checks classes on: ``y`` itself, or the joint code of a 2-D attribute."""
    return y if y.ndim == 1 else joint_attribute(y)[0]


#: Salt mixed into integer seeds of the protocol's draws (see :func:`_protocol_source`).
_SALT = 0x70726976  # "priv"


def _protocol_source(random_state):
    """The protocol's source of randomness, salted for integer seeds.

    Data generators commonly seed ``numpy.random.default_rng(seed)`` with the very
    integer the evaluation receives; drawing the opt-in users and folds from the
    same stream would correlate them with the data (for example put every user of
    one class among the opted-in users). An integer is therefore mixed with a salt
    through :class:`numpy.random.SeedSequence` before use.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state!r}")
        return check_random_source(np.random.default_rng(np.random.SeedSequence([int(random_state), _SALT])))
    return check_random_source(random_state)


def _check_fraction(value, name):
    return check_number(value, name, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)


def _check_cv(cv):
    if isinstance(cv, (bool, np.bool_)) or not isinstance(cv, numbers.Integral):
        raise TypeError(f"cv must be an integer number of folds >= 2, got {cv!r}")
    if cv < 2:
        raise ValueError(f"cv must be an integer number of folds >= 2, got {cv!r}")
    return int(cv)


# --------------------------------------------------------------------------- splitting
@dataclass
class _Split:
    """One draw of the protocol's randomness, shared by every mapper compared."""

    X: sp.csr_matrix          # ratings of the users kept (at least one rating)
    y: np.ndarray
    users: np.ndarray         # their indices in the caller's matrix
    opt_in: np.ndarray
    protected: np.ndarray
    folds: list               # arrays of positions in `protected`
    visible: sp.csr_matrix    # protected users' ratings minus the held-out ones (rows = protected)
    heldout: sp.csr_matrix    # the held-out true ratings (rows = protected)
    fold_seeds: list          # recommender seed per fold (None = recommender's own)
    attack_seed: int | None
    rating_range: tuple = (1, 5)
    dropped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    names: list | None = None  # column names of a 2-D private attribute
    mapper_target: str | None = None  # None: y as given; "joint"; or one column name

    @property
    def mapper_y(self):
        """The opted-in users' labels the mapper is fitted on (see ``mapper_target``)."""
        y = self.y_opt
        if self.mapper_target is None:
            return y
        if self.mapper_target == "joint":
            return joint_attribute(self.y)[0][self.opt_in]
        col = y[:, self.names.index(self.mapper_target)]
        return plain_labels(col)

    @property
    def X_opt(self):
        return self.X[self.opt_in]

    @property
    def y_opt(self):
        return self.y[self.opt_in]

    @property
    def X_prot(self):
        return self.X[self.protected]

    @property
    def y_prot(self):
        return self.y[self.protected]


def _check_mapper_target(mapper_target, y, names):
    """What the mapper is fitted on: ``None`` (the attribute as given), ``"joint"`` or one column."""
    if mapper_target is None:
        return None
    if y.ndim == 1:
        raise ValueError(f"mapper_target={mapper_target!r} needs a 2-D private attribute (one column per "
                         "attribute); with a 1-D attribute leave it None")
    if mapper_target == "joint" or mapper_target in names:
        return mapper_target
    raise ValueError(f"mapper_target must be None, 'joint' or one of the attribute columns {names!r}, "
                     f"got {mapper_target!r}")


def _prepare_split(ratings, private, *, opt_in_fraction, cv, heldout_fraction, rating_range,
                   random_state, mapper_target=None):
    ratings, private = computed(ratings), computed(private)  # a dask array of sparse blocks was "not numbers"
    check_same_index(ratings, private, "private", x_name="ratings")
    try:
        X, _ = check_rating_matrix(ratings, name="ratings", rating_range=rating_range)
    except ValueError as exc:
        if "outside the rating scale" not in str(exc):
            raise
        # the fix is a parameter of this function, which the message did not name
        raise ValueError(f"{exc}; pass rating_range=(low, high), the scale the ratings are on (the default is "
                         "(1, 5))") from None
    X = sp.csr_matrix(X, dtype=np.float64)
    rated = X.data[X.data != 0]
    if rated.size and rated.min() == rated.max():
        # implicit feedback: every prediction is that value (clipped to rating_range), so the RMSE and the
        # relative costs measured only where rating_range puts the scale (-1.6 % or +27.7 % for one release)
        raise ValueError(f"every rating of ratings is {plain_value(rated[0])!r} (implicit feedback, one rating "
                         "value): the RMSE protocol needs more than one rating value (with one, the recommender "
                         "predicts that value and its RMSE measures nothing but rating_range); evaluate such data "
                         "with the attackers alone (privrelease.evaluation.evaluate_attacks)")
    y, names = _check_private(private, X.shape[0])
    mapper_target = _check_mapper_target(mapper_target, y, names)
    opt_in_fraction = _check_fraction(opt_in_fraction, "opt_in_fraction")
    heldout_fraction = _check_fraction(heldout_fraction, "heldout_fraction")
    cv = _check_cv(cv)
    counts = np.diff(X.indptr)
    empty = np.flatnonzero(counts == 0)
    users = np.flatnonzero(counts > 0)
    if empty.size:
        warnings.warn(
            f"{empty.size} user(s) have no ratings (for example user {int(empty[0])}); they have nothing "
            "to hold out or to release and are left out of the evaluation",
            UserWarning, stacklevel=user_stacklevel(),
        )
        X, y = X[users], y[users]
    n = X.shape[0]
    n_opt = int(np.floor(opt_in_fraction * n + 0.5))
    n_prot = n - n_opt
    if n_opt < 2 or n_prot < cv:
        raise ValueError(
            f"too few users for the protocol: {n} user(s) with ratings, opt_in_fraction={opt_in_fraction!r} "
            f"gives {n_opt} opted-in and {n_prot} protected user(s); need at least 2 opted-in users and "
            f"at least cv={cv} protected users (one per fold)"
        )
    fixed_seed = random_state is not None
    rs = _protocol_source(random_state)
    perm = rs.permutation(n)
    opt_in, protected = np.sort(perm[:n_opt]), np.sort(perm[n_opt:])
    joint = _joint(y)
    seen = np.unique(joint[opt_in])
    unseen = np.setdiff1d(np.unique(joint[protected]), seen)
    if unseen.size:
        if y.ndim == 2:
            tuples = joint_attribute(y)[1]
            unseen, seen = np.array([tuples[c] for c in unseen], dtype=object), \
                np.array([tuples[c] for c in seen], dtype=object)
        raise ValueError(
            f"the private attribute has class(es) {unseen.tolist()!r} among the protected users that no "
            f"opted-in user has (opted-in classes: {seen.tolist()!r}); the mapper and the attackers "
            "cannot learn them. Increase opt_in_fraction or change random_state"
        )
    if seen.size < 2:
        raise ValueError(
            f"the opted-in users all share the class {seen.tolist()!r}; the mapper needs at least two "
            "classes. Increase opt_in_fraction or change random_state"
        )
    fperm = rs.permutation(n_prot)
    folds = [np.sort(f) for f in np.array_split(fperm, cv)]
    visible, heldout = holdout_split(X[protected], heldout_fraction, random_state=rs)
    held = np.diff(sp.csr_matrix(heldout).indptr)
    for k, f in enumerate(folds):
        if not held[f].any():
            # the recommender's RMSE failed with "y has no held-out ratings", naming neither fold nor cause
            single = int(np.sum(np.diff(X[protected].indptr)[f] < 2))
            raise ValueError(
                f"fold {k}: none of its {f.size} protected user(s) has a held-out rating "
                f"(heldout_fraction={heldout_fraction!r}; every user keeps at least one rating, and {single} of "
                "them have a single rating); the RMSE needs held-out ratings: raise heldout_fraction, lower cv, "
                "or use users with more ratings"
            )
    fold_seeds = [rs.spawn_seed() if fixed_seed else None for _ in range(cv)]
    attack_seed = rs.spawn_seed() if fixed_seed else None
    return _Split(X=X, y=y, users=users, opt_in=opt_in, protected=protected, folds=folds,
                  visible=visible, heldout=heldout, fold_seeds=fold_seeds,
                  attack_seed=attack_seed, rating_range=tuple(rating_range), dropped=empty, names=names,
                  mapper_target=mapper_target)


# --------------------------------------------------------------------------- one fold
def _seed_unset(est, seed):
    """Seed every ``random_state`` of ``est`` left None: its own and its nested estimators' (a Pipeline's
    ``privacy__random_state``, the forests of an ensemble). Only the estimator's own was seeded: a mapper inside a
    Pipeline drew from the operating system's entropy, and ``random_state=0`` gave another RMSE at every call.

    A single unset ``random_state`` (the estimator's own, or the one random step of a Pipeline) gets ``seed``
    itself, so a Pipeline around a mapper draws what the mapper alone draws; when several are unset, the top level
    keeps ``seed`` and each nested one gets a seed of its own derived from it: two forests of a voting attacker
    seeded alike were one forest twice (a weaker attacker), two noise steps seeded alike drew the same noise.
    """
    if seed is None or not hasattr(est, "get_params"):
        return est
    unset = sorted(key for key, value in est.get_params(deep=True).items()
                   if (key == "random_state" or key.endswith("__random_state")) and value is None)
    if len(unset) == 1:
        est.set_params(**{unset[0]: seed})
    elif unset:
        derived = np.random.default_rng(seed).integers(0, 2**31 - 1, size=len(unset))
        est.set_params(**{key: seed if key == "random_state" else int(s) for key, s in zip(unset, derived)})
    return est


def _with_seed(est, seed):
    return _seed_unset(clone(est), seed)


def _as_csr(X, shape, what):
    if sp.issparse(X):
        X = X.tocsr()
    else:
        X = sp.csr_matrix(np.asarray(X, dtype=np.float64))
    if X.shape != shape:
        raise ValueError(f"{what} returned shape {X.shape}, expected {shape} (it must keep the shape)")
    X = X.astype(np.float64)
    X.eliminate_zeros()
    if not np.all(np.isfinite(X.data)):
        # the recommender said "Input X contains NaN", naming neither the mapper nor its release
        bad = X.data[~np.isfinite(X.data)]
        raise ValueError(f"{what} returned {bad.size} non-finite rating(s) (for example {float(bad[0])!r}); "
                         "a release holds finite ratings, 0 meaning 'not rated'")
    return X


def _release(mapper, rows, rating_range=None):
    """What the protected users release: mapper.transform of their (visible) rows.

    Stored values are clipped to ``rating_range`` (a release is a set of ratings on
    the scale; the naive release of cluster centroids, for example, has fractional
    entries below the lowest rating).
    """
    if rows.shape[0] == 0:
        return rows
    out = _as_csr(mapper.transform(rows), rows.shape, f"{type(mapper).__name__}.transform")
    if rating_range is not None and out.nnz:
        out.data = np.clip(out.data, rating_range[0], rating_range[1])
    return out


def _fold_inputs(split, k, release, mapper=None):
    """Training matrix and test rows of fold ``k`` under one release."""
    test = split.folds[k]
    others = np.setdiff1d(np.arange(split.protected.size), test)
    X_prot = split.X_prot
    rows = sp.vstack([X_prot[others], split.visible[test]], format="csr")
    if release in ("original", "release_everything"):
        out = rows
    elif release == "released":
        out = _release(mapper, rows, split.rating_range)
    elif release == "release_nothing":
        out = sp.csr_matrix(rows.shape)
    else:  # pragma: no cover
        raise ValueError(release)
    train = sp.vstack([split.X_opt, out[: others.size]], format="csr")
    return train, out[others.size:], split.heldout[test]


def _fold_rmse(split, k, release, recommender, mapper=None):
    train, test_rows, heldout = _fold_inputs(split, k, release, mapper)
    rec = _with_seed(recommender, split.fold_seeds[k])
    rec.fit(train)
    return float(rec.rmse(test_rows, heldout))


def _check_verbose(verbose):
    """``verbose`` as an int: TypeError for what is not an int or a bool, ValueError for a negative int."""
    if isinstance(verbose, (bool, np.bool_)):
        return int(verbose)
    if not isinstance(verbose, numbers.Integral):
        raise TypeError(f"verbose must be a non-negative int or a bool (0 = no progress bar), got {verbose!r}")
    if verbose < 0:
        raise ValueError(f"verbose must be a non-negative int or a bool (0 = no progress bar), got {int(verbose)!r}")
    return int(verbose)


#: seconds between two progress lines when stderr is not a terminal (a log file, a pipe)
_LOG_EVERY = 60.0


def _logged(iterable, total, desc, stream, every=_LOG_EVERY):
    """``iterable``, writing ``desc: i/total done, t s`` to ``stream`` at most every ``every`` seconds.

    What a long stage shows in a log, where a progress bar would not be drawn;
    a stage shorter than ``every`` writes nothing.
    """
    import time

    start = last = time.perf_counter()
    i = 0
    for i, item in enumerate(iterable, 1):
        yield item
        now = time.perf_counter()
        if now - last >= every or (i == total and last > start):
            print(f"[progress] {desc}: {i}/{total} done, {now - start:.0f} s", file=stream, flush=True)
            last = now


def _progress(iterable, total, verbose, desc):
    """A tqdm progress bar on stderr when ``verbose`` and stderr is a terminal.

    When stderr is not a terminal (a log file), a line every minute on a long
    stage (:func:`_logged`); ``verbose=0``: ``iterable`` itself.
    """
    verbose = _check_verbose(verbose)
    stream = sys.stderr
    if not verbose:
        return iterable
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return _logged(iterable, total, desc, stream)
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, leave=False, file=stream)


def _run_jobs(jobs, n_jobs, verbose, desc):
    """Run ``(func, args)`` jobs with joblib, in order, with a progress bar; a warning a job raises in a worker
    process is issued here, in the caller's process, under its filters (``run_jobs``)."""
    verbose = _check_verbose(verbose)  # before the jobs are sent
    return list(_progress(run_jobs(jobs, n_jobs), len(jobs), verbose, desc))


def _fit_mapper(mapper, split):
    m = _seed_unset(clone(mapper), None if split.attack_seed is None else split.attack_seed + 1)
    return m.fit(split.X_opt, split.mapper_y)


def _fitted_attr(mapper, name, default=None):
    """``mapper.name``, or for a Pipeline the first step's that has it (the privacy step: a Pipeline has no
    ``leakage_`` of its own, and a curve over ``privacy__max_leakage`` reported leakage_bits NaN). The first, as
    the adaptive scorer reads it: every later step is post-processing of that step's release, so its guarantee
    holds for the Pipeline's output (data processing inequality)."""
    if hasattr(mapper, name):
        return getattr(mapper, name)
    for _, step in getattr(mapper, "steps", None) or []:
        if hasattr(step, name):
            return getattr(step, name)
    return default


def _mapper_figures(mapper):
    out = {}
    for name in ("leakage_", "distortion_"):
        v = _fitted_attr(mapper, name, np.nan)
        try:
            out[name.rstrip("_")] = float(v)
        except (TypeError, ValueError):
            out[name.rstrip("_")] = np.nan
    return out


def _fold_table(split, rmse):
    """rmse: dict (release, k) -> value."""
    rows = []
    for k, test in enumerate(split.folds):
        r = {rel: rmse[(rel, k)] for rel in RELEASES}
        rows.append({
            "fold": k,
            "n_test_users": int(test.size),
            "n_heldout": int(split.heldout[test].nnz),
            **{f"rmse_{rel}": r[rel] for rel in RELEASES},
            "rel_increase_released": _relative_increase(r["released"], r["original"]),
            "rel_increase_release_nothing": _relative_increase(r["release_nothing"], r["original"]),
        })
    return pd.DataFrame(rows)


def _summarise(per_fold):
    s = {f"rmse_{rel}": float(per_fold[f"rmse_{rel}"].mean()) for rel in RELEASES}
    s.update({f"rmse_{rel}_std": float(per_fold[f"rmse_{rel}"].std(ddof=1)) if len(per_fold) > 1 else 0.0
              for rel in ("original", "released", "release_nothing")})
    s["rel_increase_released"] = _relative_increase(s["rmse_released"], s["rmse_original"])
    s["rel_increase_release_nothing"] = _relative_increase(s["rmse_release_nothing"], s["rmse_original"])
    return s


def _relative_increase(rmse, reference):
    """``rmse / reference - 1``; over a perfect reference (RMSE 0: every rating equal, say) 0 when ``rmse`` is 0
    too, else ``inf`` (a float ZeroDivisionError stopped the whole evaluation)."""
    if reference == 0:
        return 0.0 if rmse == 0 else math.inf
    return rmse / reference - 1.0


@dataclass
class RMSECost:
    """What a release costs in recommendation RMSE (Salamatian et al., Table I).

    Attributes
    ----------
    per_fold : pandas.DataFrame
        One row per fold: ``n_test_users``, ``n_heldout``, ``rmse_original``,
        ``rmse_released``, ``rmse_release_nothing``, ``rmse_release_everything``
        and the relative increases over ``rmse_original``.
    summary : dict
        Means over folds (``rmse_*``), fold standard deviations (``rmse_*_std``)
        and relative increases of the mean RMSEs (``rel_increase_released``,
        ``rel_increase_release_nothing``), plus the mapper's ``leakage`` (bits)
        and ``distortion`` when it exposes ``leakage_`` / ``distortion_``.
    mapper : estimator
        The mapper fitted on the opted-in users.
    n_opted_in, n_protected : int
    """

    per_fold: pd.DataFrame
    summary: dict
    mapper: object = field(repr=False)
    n_opted_in: int = 0
    n_protected: int = 0

    def __getitem__(self, key):
        return self.summary[key]


def rmse_cost(mapper, ratings, private, *, opt_in_fraction=0.5, cv=5, heldout_fraction=0.1,
              recommender=None, rating_range=(1, 5), random_state=None, n_jobs=None, verbose=1,
              mapper_target=None):
    """Measure the recommendation RMSE a privacy mapper costs (Table I protocol).

    Parameters
    ----------
    mapper : transformer
        Unfitted; cloned and fitted on the opted-in users' ORIGINAL ratings and
        disclosed attribute only (``fit(X_opt_in, y_opt_in)``). It never sees a
        protected user's attribute nor a held-out rating.
    ratings : {array-like, sparse matrix} of shape (n_users, n_items)
        Ratings on ``rating_range``, 0 = not rated. A dask collection (dense
        or sparse blocks) is read into memory: the protocol needs every user.
    private : array-like of shape (n_users,) or (n_users, n_attributes)
        Every user's TRUE private attribute: binary, multi-class, or one column
        per attribute (a DataFrame's column names name them). Only the opted-in
        users' values reach the mapper, in the shape given (a 2-D attribute
        reaches it as 2-D; pass :func:`joint_attribute` of it to a mapper that
        takes one label per user); the protected users' values are only used to
        check that the opted-in users cover every class (every tuple of a 2-D
        attribute) and to score attackers.
    opt_in_fraction : float in (0, 1), default=0.5
        Fraction of users, drawn at random, who disclose the attribute.
    cv : int >= 2, default=5
        Folds over the protected users.
    heldout_fraction : float in (0, 1), default=0.1
        Fraction of each test user's ratings held out, drawn by
        :func:`privrelease.recommender.holdout_split` (stochastic rounding:
        ``floor(fraction * n_u + U)`` ratings, at least one kept).
    recommender : estimator with ``fit(X)`` and ``rmse(X, y)``, default=None
        ``None``: ``SurpriseRecommender(rating_scale=rating_range)`` (Surprise's SVD).
        ``rmse(X, y)`` receives the test users' released rows and their held-out
        true ratings.
    rating_range : (low, high), default=(1, 5)
        The rating scale; a stored rating outside it is an error. The default
        recommender trains on the ratings mapped from it onto 1..5 and maps its
        predictions back, so the RMSEs are in the ratings' units and the
        relative increases do not depend on them. Ratings of one value only
        (implicit feedback) are refused: the RMSE protocol needs more than one.
    random_state : None or int, default=None
        Draws the opt-in users, folds and held-out ratings. An integer makes the
        evaluation reproducible (it is salted, so that data generated with the
        same integer seed is not correlated with the split): it then also seeds the recommender (the same
        seed for every release in a fold) and the mapper, when their
        ``random_state`` is None (and every ``random_state`` left None in
        them: a Pipeline's steps). ``None`` uses operating-system entropy.
    n_jobs : int or None
        Folds and releases run in parallel with joblib.
    verbose : int, default=1
        A tqdm progress bar over the folds and releases, on stderr, shown only
        when stderr is a terminal (in logs or pipes: a line a minute on a long
        stage); 0 for none. The default of :func:`privacy_utility_curve` too.
    mapper_target : None, "joint" or str, default=None
        For a 2-D private attribute, what the mapper is fitted on: ``None``
        the 2-D labels as given (a mapper that protects several attributes),
        ``"joint"`` the joint attribute as one label per user
        (:func:`joint_attribute`: a 1-D mapper then protects the tuple), or a
        column name (protect that attribute only; the attackers still score
        the joint attribute and every column).

    Returns
    -------
    RMSECost

    Raises
    ------
    ValueError
        Fractions outside (0, 1), fewer protected users than folds, ratings off
        the scale, a missing attribute value, a class no opted-in user has.

    Notes
    -----
    Released values are clipped to ``rating_range`` before they reach the
    recommender. Users without any rating have nothing to hold out or release: they are
    left out (with a ``UserWarning``). The recommender is trained on the
    opted-in users' original rows and the other folds' protected rows under
    the same release; the test users' rows are passed to ``rmse`` (folded in).

    References
    ----------
    .. [1] S. Salamatian et al., "Managing your Private and Public Data: Bringing
       down Inference Attacks against your Privacy", Sec. VI-C, Table I (5-fold
       cross-validation, 10% of the test ratings removed).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from privrelease.evaluation import rmse_cost
    >>> class ItemMean:                       # a tiny recommender for the example
    ...     def get_params(self, deep=True): return {}
    ...     def set_params(self, **p): return self
    ...     def fit(self, X):
    ...         X = sp.csr_matrix(X); n = np.maximum(X.getnnz(axis=0), 1)
    ...         self.mean_ = np.asarray(X.sum(axis=0)).ravel() / n; return self
    ...     def rmse(self, X, y):
    ...         y = sp.coo_matrix(y); return float(np.sqrt(np.mean((y.data - self.mean_[y.col]) ** 2)))
    >>> rng = np.random.default_rng(0)
    >>> R = sp.random(60, 20, density=0.4, random_state=0, data_rvs=lambda n: rng.integers(1, 6, n))
    >>> cost = rmse_cost(FunctionTransformer(accept_sparse=True), R, rng.integers(0, 2, 60),
    ...                  recommender=ItemMean(), cv=3, random_state=0)
    >>> cost["rmse_released"] == cost["rmse_original"]
    True
    """
    _check_mapper(mapper)
    n_jobs = check_n_jobs(n_jobs)
    verbose = _check_verbose(verbose)  # before any work: it was read once the mapper was fitted and the folds sent
    recommender = _check_recommender(recommender, rating_range)
    split = _prepare_split(ratings, private, opt_in_fraction=opt_in_fraction, cv=cv,
                           heldout_fraction=heldout_fraction, rating_range=rating_range,
                           random_state=random_state, mapper_target=mapper_target)
    fitted = _fit_mapper(mapper, split)
    keys, jobs = [], []
    for k in range(len(split.folds)):
        for rel in ("original", "released", "release_nothing"):
            keys.append((rel, k))
            jobs.append((_fold_rmse, (split, k, rel, recommender, fitted if rel == "released" else None)))
    values = _run_jobs(jobs, n_jobs, verbose, "rmse folds")
    rmse = dict(zip(keys, values))
    for k in range(len(split.folds)):
        rmse[("release_everything", k)] = rmse[("original", k)]
    per_fold = _fold_table(split, rmse)
    summary = _summarise(per_fold)
    summary.update(_mapper_figures(fitted))
    return RMSECost(per_fold=per_fold, summary=summary, mapper=fitted,
                    n_opted_in=int(split.opt_in.size), n_protected=int(split.protected.size))
