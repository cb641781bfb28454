"""QuantizedPrivacyMapper: Algorithm 2 of Salamatian et al. as a scikit-learn transformer."""

import copy
import dataclasses
import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import _persistence
from ..exceptions import InfeasibleBudgetError
from ..mapping import expected_distortion, leakage as heldout_leakage, mutual_information
from ..utils import check_random_source
from ..utils._constraints import NumberInterval
from ..utils._threads import single_thread
from ..utils._validation import (as_float_if_object, canonical_sparse, check_allocation, check_label_kinds,
                                 check_no_time_values, check_not_subnormal, check_numeric_text, check_rating_container,
                                 check_table, is_sparse_frame, nullable_numpy_dtype, plain_value, ratings_in_dtype,
                                 refuse_nan_ratings, round_ratings, sparse_frame_like, zero_fill_sparse_frame,
                                 user_stacklevel)
from . import _dask
from ._base import (_BUDGET_TOL, PriorEstimate, _BaseMapper, _matrix, _row_stochastic,
                    stack_marginal_priors)
from ._columns import _frame_columns, check_column_labels, record_column_labels
from ._common import BUDGET_CONSTRAINT, LEAKAGE_CONSTRAINT, PROTECT_CONSTRAINT, RANDOM_STATE_CONSTRAINT
from ._quantize import (
    TasteEmbedding,
    block_stats as _block_stats,
    combine_stats as _combine_stats,
    hamming_distances,
    hamming_kmodes,
    kmeans,
    median_from_hist as _median_from_hist,
    profile_stats as _profile_stats,
    row_chunks,
)

__all__ = ["QuantizedPrivacyMapper"]


def _mean_weight(total, n):
    """The mean weight of ``n`` labeled users of weight ``total`` (1 when it is not a positive finite number)."""
    unit = float(total) / max(int(n), 1)
    return unit if np.isfinite(unit) and unit > 0 else 1.0

#: pseudo-ratings pulling a released cluster-mean rating towards the centre's prediction
_PROFILE_SHRINKAGE = 2.0
#: a max_leakage cap kept under the raw counts too: at most this many tighter solves, each aiming this share
#: below the cap (one that lands within twice the share of it ends the search)
_CAP_TRIALS = 8
_CAP_MARGIN = 0.01
#: prior="model": outer cross-fitting folds, and the fewest labeled users a class needs for them
_MODEL_PRIOR_FOLDS = 5
_MODEL_PRIOR_MIN_CLASS = 10
#: prior="model": inverse regularisations tried (the one with the smallest out-of-fold log-loss is used)
_MODEL_PRIOR_CS = (0.01, 0.1, 1.0, 10.0)


#: n_clusters="heldout": folds, labeled users per candidate cluster, permutations of the null, smallest fold
_HELDOUT_FOLDS = 5
_HELDOUT_USERS_PER_CLUSTER = (40, 28, 20, 14, 10, 7, 5)
_HELDOUT_PERMUTATIONS = 200
_HELDOUT_MIN_FOLD = 10
#: class_removal="heldout": the shares tried, in the order of the step-down scan (the full removal first)
_REMOVAL_GRID = (1.0, 0.75, 0.5, 0.25, 0.0)
#: class_bins="heldout": the numbers of bins tried, in the order of the scan (the unsplit cells first); 3 and 4 bins
#: were tried too and dropped (docs/frontier.md, section (o): the one guarded fit that leaked clearly more than the
#: default on the protected users had chosen 4 bins, about 3 labeled users a cell)
_BINS_GRID = (1, 2)
#: class_directions="significant": the level of the test a direction must pass, and the Tracy-Widom (beta = 1) law's
#: quantile at that level (Tracy and Widom 1996, Table 1 of Johnstone 2008)
_DIRECTION_LEVEL = 0.95
_TRACY_WIDOM_95 = 0.9793


def _largest_root_threshold(n_dims, n_classes, n_users, tw_quantile=_TRACY_WIDOM_95):
    """The ``_DIRECTION_LEVEL`` quantile of the largest eigenvalue of ``T^-1 B`` when the labels carry no class effect
    (Roy's largest root of a one-way MANOVA with ``n_classes - 1`` hypothesis and ``n_users - n_classes`` error degrees
    of freedom in ``n_dims`` dimensions), by Johnstone's Tracy-Widom approximation (Ann. Statist. 36 (2008), Theorem
    1): ``log(theta / (1 - theta))`` is about ``mu + sigma * TW1``, with

        sin^2(gamma / 2) = (min(n_h, p) - 1/2) / N,   sin^2(phi / 2) = (max(n_h, p) - 1/2) / N,   N = m + n_h - 1,
        mu = 2 log tan((phi + gamma) / 2),   sigma^3 = 16 / N^2 / (sin^2(phi + gamma) sin(phi) sin(gamma)).

    A closed form of the data's shape only: the same data give the same threshold whatever the seed (a permutation
    null's quantile moved with it; docs/frontier.md, section (t), measures the two and the level). Returns 1.0 (no
    eigenvalue of ``T^-1 B`` exceeds it: nothing kept) where the users are too few for the approximation
    (``phi + gamma`` reaches ``pi``).
    """
    p, n_h = int(n_dims), int(n_classes) - 1
    N = float(n_users) - n_classes + n_h - 1.0
    if p < 1 or n_h < 1 or N <= max(n_h, p) - 0.5:
        return 1.0
    gamma = 2.0 * np.arcsin(np.sqrt((min(n_h, p) - 0.5) / N))
    phi = 2.0 * np.arcsin(np.sqrt((max(n_h, p) - 0.5) / N))
    if phi + gamma >= np.pi:
        return 1.0
    mu = 2.0 * np.log(np.tan((phi + gamma) / 2.0))
    sigma = (16.0 / N ** 2 / (np.sin(phi + gamma) ** 2 * np.sin(phi) * np.sin(gamma))) ** (1.0 / 3.0)
    return float(1.0 / (1.0 + np.exp(-(mu + sigma * tw_quantile))))


def _rounding_scale(E):
    """What rounding leaves of a difference of the rows ``E`` (dense or sparse) or of their means: 64 ulps of their
    largest entry. A spread below it is no spread: identical rows left a residue of ~1e-17 whose largest eigenvalue
    passed a cutoff relative to the largest, and a direction was "found" between classes of one point (review)."""
    top = abs(E).max() if sp.issparse(E) else (np.max(np.abs(E)) if np.size(E) else 0.0)
    return 64.0 * np.finfo(float).eps * float(top)


def _significant_directions(E, a_idx, w):
    """The between-class directions whose signal exceeds the sampling noise of the class means
    (``class_directions="significant"``, docs/frontier.md, sections (s) and (t)).

    In the metric of the weighted total covariance ``T`` of the dense rows ``E`` (weights ``w``), the eigenvalues
    ``theta_j`` of ``T^-1 B``, ``B = sum_a p_a (mu_a - mu)(mu_a - mu)^T`` (``p_a`` the classes' weight shares), are
    ``lambda_j / (1 + lambda_j)`` with ``lambda_j`` the Fisher (LDA) eigenvalues of ``S^-1 B`` (``S`` pooled within
    class). Direction ``j`` is kept when ``theta_j`` exceeds the 95th percentile of the LARGEST eigenvalue with no
    class effect (Roy's largest root, :func:`_largest_root_threshold`, in the dimensions of ``T``'s support, with the
    weights' effective number of users ``(sum w)^2 / sum w^2``; where the weights make the class means unequally
    noisy, at least :func:`_unequal_noise_threshold`): with no class effect no direction is kept with
    probability about 0.95 or more, and a direction the noise of the class means alone could give is not kept. The
    threshold is a closed form, so the choice depends on the data only (not on ``random_state``). Returns
    (orthonormal rows spanning the kept directions' class-mean patterns ``T w_j``, which lie in the span of the
    class-mean offsets, in the order of the eigenvalues: row 0 is the largest one's pattern; all ``n_classes - 1``
    eigenvalues, largest first; the threshold).
    """
    E = np.asarray(E, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    classes, a = np.unique(a_idx, return_inverse=True)
    R = E - np.average(E, axis=0, weights=w)
    ev, U = np.linalg.eigh((R * w[:, None]).T @ R / w.sum())
    ok = ev > max(1e-10 * float(ev.max()), _rounding_scale(E) ** 2, np.finfo(float).tiny)
    ev, U = ev[ok], U[:, ok]
    if not ev.size:
        # every labeled user at one point (implicit feedback in the taste space, identical rows): no direction
        # between the classes to remove, none tested (the null's largest eigenvalue of a 0 x 0 matrix was an
        # IndexError where class_directions="all" fitted, warned, one cluster)
        return np.zeros((0, E.shape[1])), np.zeros(0), 0.0
    Z = (R @ U) / np.sqrt(ev)  # whitened rows: identity total covariance on T's support
    onehot = sp.csr_matrix((w, (a, np.arange(a.size))), shape=(classes.size, a.size))
    p = np.asarray(onehot.sum(axis=1)).ravel()
    M = np.asarray(onehot @ Z) / np.maximum(p, np.finfo(float).tiny)[:, None]
    theta, Q = np.linalg.eigh((M * (p / p.sum())[:, None]).T @ M)
    n_dir = max(classes.size - 1, 0)
    theta, Q = theta[::-1][:n_dir], Q[:, ::-1][:, :n_dir]
    threshold = _largest_root_threshold(ev.size, classes.size, w.sum() ** 2 / np.sum(w ** 2))
    sw2 = np.bincount(a, weights=w * w, minlength=classes.size)
    used = p > 0
    noise, share = sw2[used] / p[used] ** 2, p[used] / p.sum()
    per_class = share * noise  # each class mean's noise in B: alike for unit weights (1 / n each)
    if per_class.size > 1 and per_class.max() > per_class.min() * (1.0 + 1e-6):
        threshold = max(threshold, _unequal_noise_threshold(ev.size, noise, share))
    r = int(np.sum(theta > threshold))
    if not r:
        return np.zeros((0, E.shape[1])), theta, threshold
    # the class-mean pattern of discriminant j is T w_j = T^1/2 q_j (w_j = T^-1/2 q_j): B w_j = theta_j T w_j; the
    # patterns are independent (T^1/2 is one-to-one on its support), orthonormalised in the eigenvalues' order so
    # that row 0 is the leading discriminant's pattern (the direction class_bins cuts along)
    patterns = (Q[:, :r].T * np.sqrt(ev)) @ U.T
    V, upper = np.linalg.qr(patterns.T)
    return (V * np.where(np.diag(upper) < 0, -1.0, 1.0)).T, theta, threshold


def _unequal_noise_threshold(n_dims, noise, share, level=_DIRECTION_LEVEL, n_sims=400):
    """The ``level`` quantile of the largest eigenvalue of ``T^-1 B`` with no class effect when the class means are
    unequally noisy (``noise[a]``: class ``a``'s mean's variance per whitened dimension, ``sum w^2 / (sum w)^2`` over
    its users; ``share[a]``: its weight share in ``B``), simulated from a fixed seed (the same data, the same
    threshold): ``B = sum_a p_a (z_a - zbar)(z_a - zbar)^T``, ``z_a ~ N(0, noise_a I)``, ``theta = lambda / (1 +
    lambda)``. The Tracy-Widom form assumes every class mean alike noisy (unit weights, or weights unrelated to the
    class); weights that depend on the class (``1 / n_class``, balancing them) are ruled by the small classes'
    noise: a direction was kept on 12.5 % of pure-noise fits (classes of 80 / 15 / 5 %, 200 fits; 4 % with unit
    weights)."""
    rng = np.random.default_rng(20261208)
    m, top = noise.size, []
    for start in range(0, n_sims, 50):
        z = rng.standard_normal((min(50, n_sims - start), m, n_dims)) * np.sqrt(noise)[None, :, None]
        z -= np.einsum("a,sad->sd", share, z)[:, None, :]
        g = np.sqrt(share)[None, :, None] * z
        top.append(np.linalg.eigvalsh(g @ g.transpose(0, 2, 1))[:, -1])  # B's nonzero spectrum, m x m
    lam = np.concatenate(top)
    return float(np.quantile(lam / (1.0 + lam), level))


def _heldout_instead(what):
    """What to give instead of the held-out rule ``what`` (``"class_bins='heldout'"``)."""
    return {"n_clusters": "an integer n_clusters or 'auto'", "class_removal": "class_removal a number in [0, 1]",
            "class_bins": "class_bins an integer"}[what.split("=")[0]]


def _check_heldout_size(per_class, what):
    """Refuse the held-out rule ``what`` on labeled users of these class sizes: its folds need at least
    ``_HELDOUT_FOLDS * _HELDOUT_MIN_FOLD`` users and two classes with ``_HELDOUT_FOLDS`` or more each (ValueError)."""
    per_class = np.asarray(per_class)
    n = int(per_class.sum())
    if n < _HELDOUT_FOLDS * _HELDOUT_MIN_FOLD or np.sum(per_class >= _HELDOUT_FOLDS) < 2:
        raise ValueError(f"{what} needs at least {_HELDOUT_FOLDS * _HELDOUT_MIN_FOLD} labeled users "
                         f"and two classes with {_HELDOUT_FOLDS} or more each for its {_HELDOUT_FOLDS} folds; got "
                         f"{n} labeled users, class sizes {per_class.tolist()}. Give {_heldout_instead(what)}")


def _check_model_prior_size(per_class, classes):
    """Refuse ``prior="model"`` on labeled users of these class sizes (``classes`` names them): its cross-fit
    needs ``_MODEL_PRIOR_MIN_CLASS`` users of each class (ValueError)."""
    per_class = np.asarray(per_class)
    if per_class.min() < _MODEL_PRIOR_MIN_CLASS:
        c = int(np.argmin(per_class))
        raise ValueError(f"prior='model' cross-fits a model of the attribute over {_MODEL_PRIOR_FOLDS} folds "
                         f"and needs at least {_MODEL_PRIOR_MIN_CLASS} labeled users per class; class "
                         f"{np.asarray(classes)[c:c + 1].tolist()[0]!r} has {int(per_class[c])}. "
                         "Use prior='counts'")


def _heldout_choice(excess, noise, distortion, tolerance):
    """Index chosen by the held-out rule (candidates in increasing order of clusters).

    Step-down: the candidates are accepted in order while ``excess + noise <=
    tolerance`` and the scan stops at the first one that fails (more clusters
    only make the prior's estimate worse, so a failure is not forgiven by a
    luckier larger candidate); the accepted candidate of least held-out
    distortion is chosen, the smallest candidate when even it fails. A larger
    ``tolerance`` accepts a longer prefix, so the chosen distortion never increases.
    """
    ok = np.asarray(excess) + np.asarray(noise) <= tolerance
    stop = int(np.argmin(ok)) if not ok.all() else ok.size
    if stop == 0:
        return 0
    return int(np.argmin(np.asarray(distortion)[:stop]))


def _check_figures_like(fitted, names):
    """A saved held-out rule's figures ``names[1:]``: finite arrays of the grid ``names[0]``'s shape."""
    grid = getattr(fitted, names[0])
    for name in names[1:]:
        v = getattr(fitted, name)
        if not isinstance(v, np.ndarray) or v.shape != grid.shape or not np.all(np.isfinite(v)):
            raise ValueError(f"fitted.{name} must be {grid.size} finite numbers like {names[0]}")


def _check_rule_figures(fitted, param, names, grid_values, choose):
    """A held-out rule's saved figures ``names`` (the grid first, then excess, noise and distortion) for the
    parameter ``param``: absent (returns None), or all present with ``param="heldout"``, the grid ``grid_values``
    and finite figures like it; returns the grid value ``choose(excess, noise, distortion, heldout_tolerance)``
    picks, the choice the fitted state must hold."""
    present = [getattr(fitted, n, None) is not None for n in names]
    if not any(present):
        return None
    value = getattr(fitted, param)
    if not (isinstance(value, str) and value == "heldout"):
        raise ValueError(f"fitted.{names[0]} is present but {param}={value!r}: only {param}='heldout' records "
                         "held-out figures")
    if not all(present):
        raise ValueError(f"fitted.{names[present.index(False)]} is missing beside the other figures")
    grid = getattr(fitted, names[0])
    if not isinstance(grid, np.ndarray) or not np.array_equal(grid, np.array(grid_values)):
        raise ValueError(f"fitted.{names[0]} must be {list(grid_values)}, got {grid!r:.80}")
    _check_figures_like(fitted, names)
    return grid[choose(*(getattr(fitted, n) for n in names[1:]), fitted.heldout_tolerance)].item()


def _removal_choice(excess, distortion, tolerance):
    """Index of the share chosen by ``class_removal="heldout"`` (candidates in ``_REMOVAL_GRID`` order, the full
    removal first).

    :func:`_heldout_choice` on the excess measured against the full removal's: the full removal (the fit
    without the parameter) is always accepted, and the scan goes on to smaller shares while their held-out
    excess exceeds the full removal's by at most ``tolerance`` bits; the accepted share of least held-out
    distortion is chosen. Both excesses are measured on the same folds and held-out users.
    """
    excess = np.asarray(excess, dtype=np.float64)
    return _heldout_choice(excess - excess[0], np.zeros_like(excess), distortion, tolerance)


def _bins_choice(excess, noise, distortion, tolerance):
    """Index of the number of bins chosen by ``class_bins="heldout"`` (candidates in ``_BINS_GRID`` order, the
    unsplit cells first).

    :func:`_heldout_choice` on the excess measured against the unsplit cells' (paired: the same folds and
    held-out users), one noise standard deviation of the candidate included as for ``n_clusters="heldout"``:
    the unsplit cells (the fit without the parameter) are always accepted, and the scan goes on to more bins
    while ``excess - excess[0] + noise <= tolerance``; the accepted number of least held-out distortion is chosen.
    """
    excess = np.asarray(excess, dtype=np.float64)
    noise = np.where(np.arange(excess.size) == 0, 0.0, np.asarray(noise, dtype=np.float64))
    return _heldout_choice(excess - excess[0], noise, distortion, tolerance)


def _heldout_statistic(a, c, w, mapping, n_classes, kind="mutual_information"):
    """Leakage (bits) of ``mapping`` on users of classes ``a`` in clusters ``c`` (weights ``w``).

    The plug-in joint ``p(a, j) = sum_u w_u 1[a_u = a] mapping[c_u, j] / sum_u w_u``:
    each user's draw of ``c_hat`` is integrated out, so the only noise left is
    which users were held out.
    """
    J = np.zeros((n_classes, mapping.shape[0]))
    np.add.at(J, (a, c), w)
    return float(heldout_leakage(J / J.sum(), mapping, kind=kind))


def _heldout_null(a, perms, c, w, mapping, n_classes, kind="mutual_information"):
    """:func:`_heldout_statistic` of the labels ``a[p]`` for every row ``p`` of ``perms`` (the permutation null).

    Mutual information is computed for all permutations at once; other measures one by one.
    """
    perms = np.asarray(perms)
    if kind != "mutual_information":
        return np.array([_heldout_statistic(a[p], c, w, mapping, n_classes, kind) for p in perms])
    B = perms.shape[0]
    J = np.zeros((B, n_classes, mapping.shape[0]))
    np.add.at(J, (np.arange(B)[:, None], a[perms], c[None, :]), w[None, :])
    P = J @ mapping / w.sum()
    pa, pj = P.sum(axis=2, keepdims=True), P.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * np.log2(P / (pa * pj)), 0.0)
    return np.maximum(terms.sum(axis=(1, 2)), 0.0)


#: dense clusters x items arrays alive at once while the release profiles are built, with a margin (measured:
#: 1,854 MiB at the peak for 200 clusters x 200,000 items against 342 MiB with 5 clusters, about 5 arrays of
#: 305 MiB)
_PROFILE_ARRAYS = 6


def _dense(E, what, copies=1):
    """Rows of the clustering space (dense or sparse) as a dense float64 array.

    A sparse ``E`` (the input space or ``metric="hamming"``: users x items) is refused by
    :func:`check_allocation` when ``copies`` dense copies of it cannot fit in memory (``what`` names the
    option that needs them): numpy's bare MemoryError named no option.
    """
    if sp.issparse(E):
        check_allocation(copies * E.shape[0] * E.shape[1],
                         f"{what} of {E.shape[0]} users x {E.shape[1]} items (a dense copy of the sparse rows)")
        return E.toarray().astype(np.float64, copy=False)
    return np.asarray(E, dtype=np.float64)


def _projected_sq_dist(E, V, lam, points):
    """Squared distances between the rows of ``E`` and ``points`` after removing the share ``lam`` of their
    component along the orthonormal rows of ``V`` (``x - lam (x V^T) V``), without densifying a sparse ``E``.

    With ``z = e V^T``: ``|P e|^2 = |e|^2 - (2 lam - lam^2) |z|^2`` and ``P e . P c = e . P c - lam z . (V P c)``
    (``V V^T = I``), so the distances come from ``E @ (P c)^T`` and the ``n x r`` matrix ``z``.
    """
    Pc = points - lam * ((points @ V.T) @ V)
    Z = np.asarray(E @ V.T)
    e2 = np.asarray(E.multiply(E).sum(axis=1)).ravel() if sp.issparse(E) else np.einsum("ij,ij->i", E, E)
    pe2 = e2 - (2.0 * lam - lam * lam) * np.einsum("ij,ij->i", Z, Z)
    inner = np.asarray(E @ Pc.T) - lam * (Z @ (Pc @ V.T).T)
    return np.maximum(pe2[:, None] - 2.0 * inner + np.einsum("ij,ij->i", Pc, Pc)[None, :], 0.0)


def _sq_dist(A, C):
    """Squared Euclidean distances between rows of A (dense or CSR) and dense C."""
    if sp.issparse(A):
        a2 = np.asarray(A.multiply(A).sum(axis=1)).ravel()
        inner = np.asarray(A @ C.T)
    else:
        a2 = np.einsum("ij,ij->i", A, A)
        inner = A @ C.T
    return np.maximum(a2[:, None] - 2.0 * inner + np.einsum("ij,ij->i", C, C)[None, :], 0.0)


def _is_pandas_frame(X):
    import sys

    pd = sys.modules.get("pandas")  # no pandas imported: X is no DataFrame
    return pd is not None and isinstance(X, pd.DataFrame)


@_persistence.register
class QuantizedPrivacyMapper(_BaseMapper):
    """Release user x item ratings through a quantized privacy-preserving mapping.

    Algorithm 2 of Salamatian et al.: users who disclosed their private
    attribute (``y != -1``) are quantized into clusters ``C``; the joint prior
    ``q(a, c)`` is aggregated over the clusters (eq. 20); the convex program
    (19) gives a mapping ``p(c_hat | c)`` minimising the leakage ``I(A; C_hat)``
    under an expected-distortion budget (or the distortion under a leakage
    cap); ``transform`` sends each user to her cluster ``c = psi(b)``, samples
    ``c_hat`` from ``p(. | c)`` (eq. 21) and releases a row that is a function of
    ``c_hat`` alone. Because ``A -> B -> C_hat -> released row`` is a Markov
    chain, the data-processing inequality gives
    ``I(A; released) <= I(A; C_hat) = leakage_`` (Theorem 2: the lift from
    clusters to users leaves the leakage unchanged), under the fitted prior.

    The released profile (``release="profile"``, default) is designed for a
    recommender trained on it: users are clustered in a *taste space* where
    the Euclidean distance is the root-mean-square difference of the ratings a
    matrix-factorisation recommender would predict (shrunk mean rating plus a
    low-rank taste learnt sparsely by a truncated SVD of mean-centred
    ratings); the output alphabet holds one synthetic profile per cluster (the
    items most rated by its members, with shrunk cluster-mean ratings on the
    rating scale) plus an explicit *empty* profile (release nothing), so the
    optimizer may suppress a user instead of lying about her, and the release
    is never forced to be worse than releasing nothing.

    Parameters
    ----------
    n_clusters : int or "auto", default="auto"
        Number of clusters ``|C|``. ``"auto"`` (counted prior): one cluster
        per 20 labeled users, between 2 and 50, with plain clustering (a
        binary attribute); one per 10, between 2 and 200, when the clustering
        resolves to ``"attribute_free"`` (more than two classes, see
        ``clustering``; ``prior="model"``: see ``prior``). The prior
        ``q(a, c)`` is estimated from the labeled users, and its L1 error grows like
        ``sqrt(|A||C| / n)`` (Proposition 1); about 20 users per cluster kept
        the adaptive attacker's AUC at or below 0.53 at perfect privacy in our
        checks of a binary attribute, while 50 plain clusters on 600 users let
        it reach 0.57 on Politics-and-TV (the paper uses 25 on its 1,218 survey
        users). Attribute-free clusters mix the classes, and with several
        classes perfect privacy needs the finer clusters: paired over 6-7
        protocol draws of the realistic stand-in at perfect privacy, one per
        10 labeled users against one per 20 cost +4.24 against +5.28 %
        (gender x age band, 500 labeled users; at most half of releasing
        nothing on 7 draws of 7 against 3), +3.08 against +3.92 % (age band),
        +3.46 against +7.85 % (gender x age band, 250 labeled users), with
        the worst logistic and random-forest attacker at 0.548 or below on
        500 labeled users (0.559 once on 250); with 1,000 labeled users 100
        clusters beat 50 on every draw, and with 2,000 labeled users 200
        beat 100 on both draws measured (+8.78 / +8.35 % against +9.22 /
        +8.59 %, the attacker at 0.517 / 0.516), hence the cap of 200, the
        largest number the solver treats with every entry of the mapping
        (docs/frontier.md, section (i)).
        When
        larger than the number of labeled users it is clipped to that number
        with a ``UserWarning``; clusters left empty by the clustering are dropped.
        With ``class_bins`` above 1 this is the number of coarse cells, each
        then cut into up to ``class_bins`` fine cells (``n_clusters_``).
        ``"heldout"``: the number the labeled users themselves vouch for
        (in-memory fits of one attribute or the joint attribute; needs 50
        labeled users). Candidates: one cluster per 40, 28, 20, 14, 10, 7 and 5
        labeled users (``heldout_n_clusters_``). For each, 5 stratified folds:
        the clusters, prior and mapping are refitted on four folds exactly as
        ``fit`` would (same ``max_leakage`` or ``delta``, ``prior``, ``clustering``,
        ``smoothing``; same number of users per cluster), and the fifth fold's
        users are sent through that mapping. Their leakage ``I(A; C_hat)`` (the
        draw of ``c_hat`` integrated out) minus the leakage the fold's mapping
        claims is the *excess*: what the prior's estimation error costs on
        users it never saw. Its finite-sample bias is removed with the mean of
        the same statistic under 200 permutations of the held-out labels, whose
        standard deviation is the noise floor (``heldout_leakage_excess_``,
        ``heldout_noise_``, averaged over the folds; ``heldout_distortion_``: the
        held-out users' expected distortion). Scanning from the fewest clusters,
        a candidate is accepted while ``excess + noise <= heldout_tolerance`` (the
        first failure stops the scan: more clusters only make the prior worse);
        the accepted candidate of least held-out distortion is used, the fewest
        clusters when none is accepted. The taste embedding is shared by the
        folds (it never sees the attribute). Costs about 35 extra clusterings
        and solves. Measured in docs/frontier.md, section (h): it rejects
        the large numbers of clusters that let the attacker through on
        Politics-and-TV, but with about 500 labeled users its noise floor
        (0.01 bits at 12 clusters, 0.02-0.025 at 100) makes its choice vary
        between protocol draws, and with several classes it keeps fewer
        clusters (the noise grows with ``|A|``, the tolerance does not), which
        costs RMSE at perfect privacy; it is not the default.
    delta : float or None, default=None
        Budget on the expected distortion ``E[d(B, C_hat)]`` between a user's
        own point and the released symbol, averaged over the labeled users
        (the exact member-averaged cost, see ``cost_matrix_``; Theorem 2 bounds
        it by the centre-level distortion plus ``quantization_radius_``). Units
        are those of ``metric`` in the clustering space: for the taste space, the
        RMS change of predicted ratings (rating points). A budget below the
        quantization distortion itself raises
        :class:`~privrelease.exceptions.InfeasibleBudgetError` stating the
        smallest feasible one.
    max_leakage : float or None, default=None
        Cap on the leakage (bits): minimise the distortion subject to it. When
        both ``delta`` and ``max_leakage`` are None, ``max_leakage=0`` (perfect
        privacy under the fitted prior). Give at most one of the two.
    metric : {"euclidean", "sqeuclidean", "hamming"}, default="euclidean"
        ``"euclidean"``: k-means and Euclidean distortion in ``space`` (a
        metric, as Theorem 2 assumes). ``"sqeuclidean"``: the same clusters, the
        squared distance as distortion (in the taste space: the mean squared
        change of predicted ratings, additive like a recommender's MSE).
        ``"hamming"``: binarized ratings (any nonzero entry counts as 1),
        k-modes clustering with majority-vote centres and the Hamming
        (exchange) distortion of the paper's Sec. VI-C; releases 0/1 vectors.
    space : {"auto", "taste", "raw"}, default="auto"
        Where ``"euclidean"`` clusters and measures distortion: ``"taste"``
        (predicted-rating space, the default for ``"euclidean"``) or ``"raw"``
        (the input vectors as given, 0 = not rated counted as a 0; the paper's
        Iris and actual-ratings experiments). Ignored by ``"hamming"``.
    n_components : int, default=20
        Rank of the taste space (clipped to ``n_features - 1``).
    release : {"profile", "representative"}, default="profile"
        ``"profile"``: the synthetic profile of ``c_hat`` described above, plus
        the empty profile as an extra output symbol. ``"representative"``: the
        paper's naive release, the input-space centroid of ``c_hat`` (0 = not
        rated counted as 0; entries below half the smallest absolute rating
        are dropped, the others clipped to the observed rating range and
        rounded for integer input), output alphabet = clusters only.
    profile : {"posterior", "cluster"}, default="posterior"
        What the profile of output symbol ``j`` carries (``release="profile"``
        only). ``"posterior"``: the conditional mean given ``c_hat = j``, built
        from the mixture of clusters weighted by ``p(c | c_hat = j) ~ q(c)
        p(j | c)`` (``profile_weights_``): the items the mixture's members rate
        most, as many as the mixture's expected profile length, rated ``E[predicted
        rating | c_hat = j]`` (the taste model's prediction at the mixture's mean
        point; in the raw space the mixture's mean rating). Bayes-optimal under
        squared error for what ``c_hat`` reveals. ``"cluster"``: cluster ``j``'s own
        members (the previous default; see Notes). Both are functions of ``c_hat``
        and of opted-in users' data alone; the mapping and ``leakage_`` do not
        depend on this choice.
    n_refine : int, default=0
        Free-support barycenter refinements of the output points (in-memory
        fits of the Euclidean spaces; ignored for ``"hamming"``, refused on a dask
        collection): at a fixed mapping each output point moves to the
        ``p(c | j)``-weighted barycenter of the labeled users (exact for
        ``"sqeuclidean"``, a Weiszfeld step for ``"euclidean"``), the member-averaged
        costs are recomputed and the program re-solved; a step is kept only if
        the certified objective (``distortion_``, or ``leakage_`` under ``delta``)
        does not get worse. See docs/frontier.md.
    clustering : {"auto", "plain", "attribute_free"}, default="auto"
        Where the users are clustered (Euclidean spaces only; ignored for
        ``"hamming"``; ``"attribute_free"`` is refused on a dask collection).
        ``"auto"``: ``"attribute_free"`` for an in-memory fit whose protected
        attribute has more than two classes (a multi-class or a joint
        attribute), ``"plain"`` otherwise (a binary attribute, the Hamming
        space, a dask collection); ``attribute_directions_`` has rows only
        when the attribute-free clustering was used (none when
        ``class_directions`` finds no direction above the noise). ``"plain"``:
        k-means in the whole space. ``"attribute_free"``: k-means after
        projecting out the between-class directions (the span of the labeled
        classes' mean offsets from the overall mean, or its significant part:
        ``class_directions``; ``attribute_directions_``), so that clusters
        group users by the part of their taste the attribute does not explain
        (at least one dimension of the clustering space is left: when the span
        has as many directions as the space, only the strongest ``n_dims - 1``
        are removed, with a warning; a one-dimensional space: plain k-means);
        the centres are then the members' means in the whole space, and every
        cost, output point and profile is measured there as usual; every user
        (labeled or not) joins the nearest centre after the same projection, the
        partition whose class split the prior counts. Clusters
        that mix the classes leave the mapping less to scramble: it is a
        clustering chosen for privacy and utility together. The guarantee is
        unchanged (the release is a function of ``c_hat``; the directions are
        learnt from opted-in users only). Measured in docs/frontier.md, sections
        (d) and (h): the setting to use for a joint attribute of several classes
        (gender x age band, 6 classes, perfect privacy, three protocol draws: +6.06 /
        +5.16 / +4.80 % RMSE against +7.07 / +6.36 / +6.77 % with ``"plain"``, the
        same attacker AUC; with ``n_clusters=50``: +4.91 / +4.93 / +4.16 %, under half
        of releasing nothing); a tie for a binary attribute, mixed for a 3-class one
        (worse on two draws of three), which is why ``"auto"`` uses it for more
        than two classes only: averaged over the three draws, +5.34 against
        +6.73 % (joint, 6 classes), +4.61 against +4.90 % (3-class age band,
        meeting "half of releasing nothing" on 3 draws of 3 against 2 of 3),
        +3.23 against +3.17 % (``make_ratings``' 6 classes); over seven draws
        of the joint attribute +5.28 against +5.61 %, four wins of seven, a
        difference smaller than the clustering seed's own effect. The number
        of clusters matters more: with 50, attribute-free clusters stayed under
        half of releasing nothing on all seven draws (docs/frontier.md, (h)),
        which is why ``n_clusters="auto"`` gives attribute-free clusterings one
        cluster per 10 labeled users (section (i)). The figures above were
        measured before users were assigned after the projection (they joined
        the nearest centre in the whole space, a class-dependent partition the
        certificate did not cover); the figures since: section (j).
    prior : {"counts", "model"}, default="counts"
        How the class split ``q(a | c)`` of each cluster is estimated (in-memory
        fits; refused on a dask collection and for ``protect="marginal"`` with a
        2-D ``y``). ``"counts"``: the labeled members' classes (eq. 20); its error
        grows like ``sqrt(|A||C| / n)`` (Proposition 1), which is what limits the
        number of clusters. ``"model"``: the members' mean of a cross-fitted
        multinomial logistic regression of the attribute on the users'
        coordinates in the clustering space (each user's posterior is predicted
        by the model fitted on the other folds of a stratified 5-fold split; the
        inverse regularisation among 0.01, 0.1, 1, 10 with the smallest
        out-of-fold log-loss), so the error depends on the model's few
        parameters rather than on ``|C|``; ``q(c)`` stays the cluster shares and
        ``empirical_prior_`` the raw counts. Needs 10 labeled users per class;
        ``n_clusters="auto"`` then means one cluster per 5 labeled users (at most
        200). The certificate holds under this prior as under any fitted prior;
        ``mismatch_bound_`` is still the count-based bound. Measured in
        docs/frontier.md, sections (g) and (i): for a binary attribute at 0.01
        bits it ties ``"counts"`` over seven paired draws (+2.58 against
        +2.65 % RMSE on the realistic stand-in, -4.62 against -4.64 % on
        Politics-and-TV), which is why it is not the default there; at
        ``max_leakage=0`` it won on Politics-and-TV (6 draws of 7) but let the
        forest attacker reach 0.58 once on the realistic set.
    smoothing : float, default=1.0
        Pseudo-users added to every cluster, split by the class marginal,
        when the prior is estimated: ``q(a, c) ~ n(a, c) + smoothing * p(a)``.
        It shrinks small clusters towards independence instead of towards a
        uniform class mix (which would invent leakage when classes are unbalanced).
        A ``max_leakage`` cap still holds under the raw counts
        (``empirical_leakage_ <= max_leakage`` with ``prior="counts"``, except
        for ``protect="marginal"``, certified under the fitted prior only: 0.057
        bits at a cap of 0.05 were measured there): where
        the smoothed prior alone would let them leak more, the engine is
        solved again at a tighter cap (in the measure ``leakage``). A
        smoothing so large that the prior is independent of the attribute to
        the solver's precision while the counts are not is refused
        (ValueError) in every mode: every mapping would be certified under it.
        The counts are weighted and read in units of the mean weight (a
        constant factor on ``sample_weight`` gives the same fit).
    leakage : {"mutual_information", "maximal_leakage"}, default="mutual_information"
        Privacy measure minimised by the engine.
    solver : str, default="auto"
        Passed to :func:`privrelease.mapping.solve_mapping`.
    random_state : None, int, numpy Generator or RandomState, or RandomSource, default=None
        Source of the privacy draws in ``transform``. ``None`` reads the
        operating system's entropy (production). An integer makes ``transform``
        reproducible (every call restarts the same seeded stream): for tests and
        experiments only. Clustering and the SVD get a seed from the same source
        (:meth:`RandomSource.spawn_seed`; they are not privacy steps). A dask
        ``transform`` draws each row block from a stream of its own: with one
        integer the release depends on the chunking (the same chunks, the same
        release).
    dask_sample_size : int, default=100_000
        Used only when ``X`` is a dask collection: the quantizer (taste
        embedding, clusters) is learnt in memory on at most this many labeled
        users, drawn block by block; the prior and the costs always count every
        labeled user in one pass over the blocks. When the sample holds every
        labeled user the result equals the in-memory fit.
    protect : {"joint", "marginal"}, default="joint"
        Used when ``y`` is 2-D (one column per private attribute).
        ``"joint"``: the attribute is the tuple of columns; users who disclosed
        every column enter the prior. ``"marginal"``: each attribute is
        protected separately: the engine runs on the stacked marginal prior
        (:func:`~privrelease.mappers._base.stack_marginal_priors`), whose leakage
        is the average ``(1/m) sum_i I(A_i; C_hat)``; perfect privacy makes
        every marginal independent of the release, a ``max_leakage`` cap bounds
        the average (see ``leakage_per_attribute_`` for each), and the joint may
        leak (``joint_leakage_``). With ``leakage="maximal_leakage"`` the
        stacked measure is at least each marginal's maximal leakage (row
        ``(i, a_i)`` of the stack has the conditional ``p_i(c_hat | a_i)``), so a
        cap then bounds every marginal.
    heldout_tolerance : float, default=0.02
        ``n_clusters="heldout"`` only: the leakage excess (bits), one noise
        standard deviation included, that a candidate number of clusters may
        show on the held-out users. A larger tolerance never chooses a
        candidate of larger held-out distortion. Also the tolerance of
        ``class_removal="heldout"`` and ``class_bins="heldout"``.
    class_removal : float in [0, 1] or "heldout", default=1.0
        Share of the between-class component that attribute-free clustering
        removes before k-means: the users' points ``e`` are clustered as
        ``e - class_removal * P (e - mean)``, with ``P`` the projection on the
        between-class directions (``attribute_directions_``), and every user
        (labeled or not) joins the nearest centre after the same partial
        projection, the partition whose class split the prior counts (so the
        certificate covers the release whatever the share). ``1.0``: the
        attribute-free clustering described under ``clustering``; ``0.0``: plain
        k-means (no directions are kept: ``attribute_directions_`` has no rows).
        It applies only when the clustering resolves to ``"attribute_free"``:
        ignored when ``"auto"`` resolves to plain clusters (a binary attribute,
        the Hamming space, a dask collection), refused with an explicit
        ``clustering="plain"`` (a value other than 1.0 there asks for
        something that clustering does not do). ``"heldout"``: the share
        chosen among 1, 0.75, 0.5, 0.25 and 0 by the held-out machinery of
        ``n_clusters="heldout"`` at the number of clusters of the fit: 5
        stratified folds of the labeled users; on four, the clusters (after
        that share's partial projection), the prior and the mapping are refitted
        as ``fit`` would; the fifth fold's users join the nearest centre after
        the same projection and go through the mapping. The leakage excess and
        its noise floor are those of ``n_clusters="heldout"``
        (``class_removal_excess_``, ``class_removal_noise_``); the held-out
        distortion (``class_removal_distortion_``) is measured to the points
        the release stands for (with ``profile="posterior"`` the mixture mean
        ``sum_c p(c | c_hat) centre_c`` of each output, otherwise the output
        points), in the units of ``delta``. The full removal (the fit
        without this parameter) is always accepted; scanning down from it,
        smaller shares are accepted while their excess is at most the full
        removal's plus ``heldout_tolerance`` (measured on the same folds and
        held-out users; the first failure stops the scan: a smaller share
        keeps more of the class signal in the partition, so the counted
        prior has more to get wrong); the accepted share of least held-out
        distortion is used. (An absolute test, ``excess + noise <=
        heldout_tolerance`` as for ``n_clusters``, stopped at the full
        removal itself on most draws at perfect privacy: with about 500
        labeled users its noise alone is about the tolerance; docs/frontier.md,
        section (k).) The choice depends only on the
        labeled users' points (ratings through the taste embedding), their
        classes and weights, the fitted parameters and the seed; the release
        stays a function of ``c_hat`` alone. Not combined with
        ``n_clusters="heldout"`` nor ``class_bins="heldout"`` (give one of
        the two a value); refused on a dask collection (clustered plainly: no
        share to choose). Costs about
        25 extra clusterings and solves. Measured in docs/frontier.md,
        section (k), paired over three protocol draws: a fixed 0.5 lowers the
        cost at perfect privacy on the realistic stand-in (gender x age band
        +4.84 against +7.03 %, 3 draws of 3) but not on the entangled preset
        (age band +7.41 against +6.83 %, 0 of 3), and ``"heldout"`` wins on
        some draws and loses on others there, with the attacker at 0.586 once
        at 0.01 bits; the default stays the full removal.
    class_bins : int >= 1 or "heldout", default=1
        Bins each attribute-free cell is cut into along the first
        between-class direction ``v = attribute_directions_[0]``. ``1``: the
        cells of the clustering, unchanged. ``N > 1``: the clustering's cells
        (the *coarse* cells, ``coarse_centers_``) are each cut at the
        quantiles ``1/N, ..., (N-1)/N`` of their labeled members' coordinate
        ``t = b . v`` (each threshold halfway between the two members'
        coordinates around it, ``split_thresholds_``); a bin no labeled member
        falls in joins the nearest non-empty bin of its cell, and a coarse
        centre no labeled member joins is dropped. A user's cell ``psi(b)``
        is her bin within the nearest coarse centre after the projection the
        clustering used (``fine_cells_``): a fixed function of her point,
        learnt on the labeled users, and the prior is their class x fine-cell
        count, so the certificate holds for this partition as for the
        default; the fine cells' centres are their members' weighted means,
        and the costs, mapping, output points and profiles are those of the
        fine cells. The idea (docs/frontier.md, section (l)): the projection
        removes the between-class directions, which on entangled data are
        mostly the users' bias axis, so a cell mixes users of very different
        bias; the bins let the mapping decide how much of that resolution
        each class-balanced output keeps. ``n_clusters`` (``"auto"``,
        ``"heldout"`` or an integer) still counts the coarse cells, so
        ``n_clusters_`` is the number of fine cells: up to ``N`` times the
        coarse number (fewer when bins are empty); ``"auto"`` is not divided
        by ``N``, so each fine cell holds about ``1/N`` of a coarse cell's
        labeled users. ``n_clusters="heldout"`` and ``class_removal="heldout"``
        cut the cells of every fold the same way. Applies only when the
        clustering resolves to ``"attribute_free"`` with a share removed:
        ignored when ``"auto"`` resolves to plain clusters (a binary
        attribute, the Hamming space, a dask collection) and when
        ``class_removal="heldout"`` chooses 0 (no directions to cut along);
        refused with an explicit ``clustering="plain"`` or
        ``class_removal=0``. Measured in docs/frontier.md, section (l), with
        ``N = 2`` and 50 coarse cells (80-96 fine cells) against the default
        (50 cells), paired over 8 protocol draws of four sets at 0 and 0.01
        bits: lower RMSE on 58 of 64 draws (at perfect privacy +7.30 against
        +7.79 % on the entangled age band, +8.36 against +9.39 % on the
        entangled gender x age band, +5.05 against +7.10 % on the realistic
        gender x age band, +3.22 against +3.82 % on the realistic age band),
        most of the gain kept under an exact (oracle) prior, the attackers
        unchanged on average over those 8 draws. It is not the default
        (section (o), 30 paired draws): the finer cells carry more of the
        class (0.24-0.26 bits of ``I(A; C)`` against 0.09-0.12 on the
        entangled age band), so the opted-in sample's error in their class
        split leaks more on the protected users. Their plug-in leakage under
        their true labels, less its permutation null, exceeds the default's
        by 0.015-0.032 bits on the entangled sets (every 95 % interval above
        0; equal on the realistic sets), and at 0.01 bits the attackers'
        mean worst AUC rises by 0.014-0.015 over 28 draws there.
        ``"heldout"``: the split guarded by the held-out users. The
        candidates 1 and 2 bins are scored by the machinery of
        ``class_removal="heldout"`` at the fit's number of coarse cells and
        share removed: the same 5 stratified folds and held-out users for
        every candidate (paired), each fold's cut cells, prior and mapping
        refitted on the other four, the held-out leakage excess and its
        noise floor (``class_bins_excess_``, ``class_bins_noise_``), the
        held-out distortion to the points the release stands for
        (``class_bins_distortion_``). The unsplit cells (the fit without this
        parameter) are always accepted; the 2 bins are accepted when their
        excess exceeds the unsplit cells' by at most ``heldout_tolerance``
        bits, one noise standard deviation included, and then used if their
        held-out distortion is the lower (``class_bins_``; the rule is a
        step-down scan like the other held-out rules, ready for a longer
        grid: 3 and 4 bins were tried, and the one guarded fit that leaked
        clearly more than the default on the protected users had chosen 4). The fit is then
        the fit with ``class_bins=class_bins_`` (same seed, bit for bit).
        Refused beside ``n_clusters="heldout"`` or ``class_removal="heldout"``
        (each rule scans its candidates at the others' fixed values: give
        one of them a value), with ``clustering="plain"`` or
        ``class_removal=0``, and on a dask collection (clustered plainly,
        nothing to cut); 1 without a rule run when ``"auto"`` resolves to
        plain clusters. Costs 10 extra clusterings and solves; needs
        50 labeled users. Measured in docs/frontier.md, section (o):
        over 10 draws at 0 and 0.01 bits it kept 1 bin on all 20 fits of
        the entangled age band (the default's fit, bit for bit: the split's
        extra protected excess of +0.024 to +0.034 bits gone, and its RMSE
        gain with it) and cut 6 of 20 fits of the realistic age band, the
        protected users' excess the default's (paired -0.0004 and -0.0001
        bits); with about 500 labeled users the 2-bin candidate's noise
        (0.01-0.02 bits) is close to the tolerance, so on 3 draws it gave
        back most of the split's RMSE gain there (+4.68 against +4.06 % at
        perfect privacy, the default +4.78 %). Not the default.
    class_directions : {"auto", "all", "significant"}, default="auto"
        Which between-class directions attribute-free clustering removes.
        ``"all"``: the whole span of the labeled classes' mean offsets
        (``n_classes - 1`` directions). ``"significant"``: only the
        directions whose class signal exceeds what the sampling noise of the
        class means gives: the Fisher (LDA) eigenvalues of the between-class
        scatter ``B = sum_a p_a (mu_a - mu)(mu_a - mu)^T`` in the labeled
        users' total-covariance metric (``class_direction_eigenvalues_``) are
        compared with the 95th percentile of the largest one with no class
        effect (Roy's largest root), a closed form of the number of labeled
        users, dimensions and classes (Johnstone's Tracy-Widom approximation;
        ``class_direction_threshold_``; with no class effect no direction is
        kept at least about 95 % of the time), so the same data give the same
        directions whatever ``random_state``; the kept directions' class-mean
        patterns are projected out (``n_class_directions_`` of them, the
        largest eigenvalue's first, possibly none: then the clusters are
        plain k-means cells, and
        ``class_removal_`` and ``class_bins_`` read as for no direction). With
        ``m`` classes estimated on a few hundred users, several of the
        ``m - 1`` estimated directions are mostly the noise of the class
        means: removing one costs utility and buys no privacy. The
        certificate does not depend on the choice (the prior is counted on
        the partition the release applies, which reads the ratings only).
        Needs a dense (taste) space and more labeled users than dimensions
        plus classes: refused otherwise. ``"auto"``: ``"significant"`` when
        the attribute (or the joint attribute) has more than two classes and
        the rule applies, ``"all"`` otherwise (a binary attribute, the sparse
        input space, few labeled users). Measured in docs/frontier.md,
        sections (s) and (t), against ``"all"`` at perfect privacy over 6
        protocol draws (about 500 labeled users, 50 cells): the realistic
        gender x age band +4.20 against +6.59 % RMSE (6 wins of 6, 40 % of
        releasing nothing against 64 %; 0 or 1 of the 5 directions kept), the
        realistic age band +3.31 against +3.84 % (4 of 6; 0 or 1 of 2 kept),
        the entangled gender x age band +8.10 against +8.66 % (4 of 6; 2 of 5
        kept), the entangled age band the same fit (2 of 2 kept on every
        draw); at 0.01 bits +3.13 against +6.15 %, +3.00 against +3.66 % and
        +7.39 against +8.85 % (6, 5 and 5 wins of 6). The protected users'
        excess leakage unchanged over 30 draws (paired -0.0015, -0.0003,
        +0.0018 bits, every 95 % interval across 0); the worst attacker's
        folded AUC at perfect privacy 0.547 against 0.549 and 0.533 against
        0.552 on the entangled joint and realistic age band, 0.558 against
        0.547 on the realistic joint set, where the draws that keep no
        direction give the attackers about +0.01 (5 draws, p about 0.06); at
        0.01 bits +0.008 and +0.004 on average on the realistic age band and
        entangled joint, -0.002 on the realistic joint (6 draws).

    Attributes
    ----------
    classes_ : ndarray
        Values of the private attribute seen in ``fit``.
    n_clusters_ : int
        Clusters actually used (with ``class_bins`` above 1: the fine cells).
    cluster_centers_ : ndarray of shape (n_clusters_, n_dims)
        Centres in the clustering space (taste coordinates, raw vectors or 0/1 vectors).
    labels_ : ndarray
        Cluster of each labeled training user.
    prior_ : ndarray of shape (n_classes, n_clusters_)
        Smoothed joint ``q(a, c)`` (eq. 20).
    cost_matrix_ : ndarray of shape (n_clusters_, n_outputs)
        ``cost_matrix_[c, j]``: mean distance from the labeled members of ``c``
        to output symbol ``j`` (centre ``j``, or the empty profile when
        ``j == n_clusters_``): the exact expected distortion of the lift.
    center_cost_matrix_ : ndarray of shape (n_clusters_, n_outputs)
        Distances between centres (problem (19)'s ``d(c, c_hat)``).
    mapping_ : ndarray of shape (n_clusters_, n_outputs)
        Row-stochastic ``p(c_hat | c)``.
    leakage_ : float
        Leakage (bits) of the mapping under ``prior_`` (the engine's value).
    empirical_leakage_ : float
        ``I(A; C_hat)`` of the mapping under the unsmoothed empirical prior
        (at most ``max_leakage`` with a cap and ``prior="counts"``, unless
        ``protect="marginal"``).
    prior_leakage_ : float
        ``I(A; C)`` before any distortion (under ``prior_``).
    distortion_ : float
        ``E[d(B, C_hat)]`` over the labeled users: member-averaged costs
        weighted by their cluster shares ``n(c) / n`` (the column sums of
        ``empirical_prior_``, not the smoothed ``prior_``: the pseudo-users of
        ``smoothing`` carry no ratings); same units as ``delta``, which bounds it.
    center_distortion_ : float
        ``E[d(C, C_hat)]`` over the same cluster shares (problem (19)'s distortion).
    quantization_radius_ : float
        Theorem 2's ``r``: largest distance from a labeled user to her centre.
    quantization_distortion_ : float
        Mean distance from a labeled user to her centre (the distortion of the
        identity mapping on the clusters).
    smallest_delta_ : float
        Smallest feasible ``delta``: ``sum_c n(c) / n min_j cost_matrix_[c, j]``
        (about ``quantization_distortion_``).
    map_accuracy_ : float
        Accuracy of the MAP attacker guessing A from C_hat under ``prior_``
        (equals the majority-class rate at perfect privacy).
    mismatch_bound_ : float
        Proposition 1 + Theorem 1 bound (95 %) on ``|true leakage - leakage_|``
        due to estimating the prior from the labeled users, by the engine's
        :func:`~privrelease.mapping.mismatch_bounds` (capped by
        ``log2 min(|A|, |C|)``, which is also its value when the sample is too
        small for Lemma 1 to apply).
    n_labeled_ : int
        Number of labeled users the prior was estimated from.
    empirical_prior_ : ndarray of shape (n_classes, n_clusters_)
        The unsmoothed joint of the labeled users (``prior_`` before smoothing).
    rating_range_ : tuple of float
        ``(lowest, highest)`` stored rating of the labeled users: every
        released rating lies in it.
    output_points_ : ndarray of shape (n_clusters_, n_dims)
        Points of the non-empty output symbols in the clustering space (the
        centres, unless ``n_refine`` moved them).
    profile_weights_ : ndarray of shape (n_clusters_, n_clusters_)
        Column ``j``: the weights of the clusters in the profile of output ``j``,
        ``p(c | c_hat = j)`` under ``prior_`` and ``mapping_`` for
        ``profile="posterior"`` (one-hot on ``j`` for an output no cluster
        reaches), the identity otherwise.
    n_refine_ : int
        Refinement steps kept (at most ``n_refine``; fewer where the points or the objective stop moving).
    heldout_n_clusters_ : ndarray of int
        ``n_clusters="heldout"`` only (like the three below): the candidate
        numbers of clusters, increasing.
    heldout_leakage_excess_ : ndarray of float
        Held-out leakage minus the claimed leakage, less the permutation null's
        mean (bits; fold average), per candidate.
    heldout_noise_ : ndarray of float
        Standard deviation of the permutation null of that average (bits).
    heldout_distortion_ : ndarray of float
        The held-out users' expected distortion (units of ``delta``).
    attribute_directions_ : ndarray of shape (n_directions, n_dims)
        Orthonormal between-class directions projected out before clustering
        (``clustering="attribute_free"``; zero rows otherwise, and when
        ``class_removal_`` is 0). At most ``n_dims - 1`` of them, the
        strongest first: the largest class-mean offsets (``class_directions=
        "all"``) or the largest eigenvalue's class-mean pattern
        (``"significant"``); row 0 is the direction ``class_bins`` cuts along.
    n_class_directions_ : int
        Rows of ``attribute_directions_`` (``class_directions``): 0 for plain
        clusters.
    class_direction_eigenvalues_ : ndarray of float, shape (n_eigenvalues,)
        ``class_directions="significant"`` (or ``"auto"`` resolved to it)
        only, like the next: the Fisher eigenvalues ``theta_j`` of the
        between-class scatter in the total-covariance metric (``lambda /
        (1 + lambda)`` of ``S^-1 B``), largest first: ``n_classes - 1`` of
        them, fewer when the labeled users' points span fewer dimensions.
    class_direction_threshold_ : float
        The 95th percentile of the largest such eigenvalue with no class
        effect (Roy's largest root by Johnstone's Tracy-Widom approximation,
        in the rank of the labeled users' covariance, with their weights'
        effective number; where weights that depend on the class make the
        class means unequally noisy, at least a null simulated from a fixed
        seed); the directions above it are removed.
    class_removal_ : float
        Share of the between-class component removed before clustering and
        assignment (``class_removal``, or the held-out choice); 0.0 when the
        clusters are plain.
    class_removal_grid_ : ndarray of float
        ``class_removal="heldout"`` only (like the three below): the shares
        tried, in the order of the scan (1.0 first).
    class_removal_excess_ : ndarray of float
        Held-out leakage minus the claimed leakage, less the permutation
        null's mean (bits; fold average), per share.
    class_removal_noise_ : ndarray of float
        Standard deviation of the permutation null of that average (bits).
    class_removal_distortion_ : ndarray of float
        The held-out users' expected distortion to the released points (units
        of ``delta``), per share.
    class_bins_ : int
        Bins each attribute-free cell was cut into (``class_bins``, or the
        held-out choice); 1 when no cell was cut along a direction (plain
        clusters).
    class_bins_grid_ : ndarray of int
        ``class_bins="heldout"`` only (like the three below): the numbers of
        bins tried, in the order of the scan (1 first).
    class_bins_excess_ : ndarray of float
        Held-out leakage minus the claimed leakage, less the permutation
        null's mean (bits; fold average), per number of bins.
    class_bins_noise_ : ndarray of float
        Standard deviation of the permutation null of that average (bits).
    class_bins_distortion_ : ndarray of float
        The held-out users' expected distortion to the released points (units
        of ``delta``), per number of bins.
    coarse_centers_ : ndarray of shape (n_coarse, n_dims)
        ``class_bins`` above 1 only (like the two below; absent otherwise):
        the centres of the clustering's cells before they were cut (whole
        space, the members' weighted means); ``cluster_centers_`` are then
        the fine cells' centres.
    split_thresholds_ : ndarray of shape (n_coarse, class_bins - 1)
        Row ``c``: the non-decreasing thresholds on ``b . attribute_directions_[0]``
        that cut coarse cell ``c`` into its bins (bin ``j``: above ``j`` of them).
    fine_cells_ : ndarray of int, shape (n_coarse, class_bins)
        ``fine_cells_[c, j]``: the fitted cell (row of ``mapping_``) of bin
        ``j`` of coarse cell ``c``; numbered by coarse cell, then bin (an
        empty bin shares its neighbour's cell).
    release_profiles_ : sparse matrix of shape (n_outputs, n_features_in_)
        Row ``j`` is what a user whose ``c_hat = j`` releases (last row empty
        for ``release="profile"``).
    guarantee_params_ : dict
        The parameters the fitted guarantee was established under: ``leakage``,
        ``delta``, ``max_leakage`` (and ``protect`` for a 2-D ``y``) as fit read
        them. ``transform`` and ``save`` refuse a mapper whose parameters now
        differ from them (``set_params`` after fit): call fit again.
    fit_params_ : dict
        Every constructor parameter as fit read it, ``random_state`` excepted
        (read when releasing). ``save`` refuses a mapper whose parameters now
        differ from them: a file states the parameters its state was fitted with.
    solver_result_ : MappingResult
        The engine's result (``status``, ``certificate``, ``solver``). At perfect
        privacy (the default) it is the least-leakage solve with no budget:
        ``solver_result_.delta`` is ``inf`` and ``solver_result_.max_leakage`` None.
    embedding_ : TasteEmbedding
        Taste space (``space`` resolving to ``"taste"``) only, absent otherwise:
        the taste model fitted on the labeled users' ratings
        (:class:`~privrelease.mappers._quantize.TasteEmbedding`, rank up to
        ``n_components``); it maps ratings to the taste coordinates the clusters
        live in, and the centres back to predicted ratings for the profiles.
    leakage_per_attribute_ : ndarray of shape (n_attributes,)
        Leakage of each private attribute (column of ``y``; one entry for a
        1-D ``y``) under its fitted prior, in the measure ``leakage``.
    joint_leakage_ : float
        Leakage of the tuple of attributes under the prior of the users who
        disclosed every column (``leakage_`` itself for a 1-D ``y`` or
        ``protect="joint"``; NaN when nobody disclosed every column).
    attribute_tuples_ : ndarray of int, shape (n_tuples, n_attributes)
        2-D ``y`` only: the attribute tuples seen among users who disclosed
        every column (codes into ``classes_[i]``); the rows of ``joint_prior_``.
    joint_prior_ : ndarray of shape (n_tuples, n_inputs) or None
        2-D ``y`` only: the joint prior of the tuples (``prior_`` itself when
        ``protect="joint"``).
    n_labeled_per_attribute_ : ndarray of int
        2-D ``y`` only: users who disclosed each column.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.
    feature_labels_in_ : ndarray of object
        Defined when ``X`` is a DataFrame whose column labels are not all strings
        (integer item ids of a pivot, a MultiIndex's tuples). A DataFrame given
        to ``transform`` must carry the same labels in the same order (columns are
        read by position); another one is refused, naming the first mismatch.

    See Also
    --------
    ErasureMapper : erasure-only mapping of categorical features (Sec. VI-A).
    privrelease.mapping.solve_mapping : the convex program (Alg. 1).

    Notes
    -----
    Profile of output symbol ``j`` (``release="profile"``), with ``w_c =
    p(c | c_hat = j)`` (``profile="posterior"``) or ``w = e_j``
    (``profile="cluster"``): the ``L_j = round(sum_c w_c L_c)`` items with the
    largest expected share ``sum_c w_c n_c,i / |c|`` of members rating them
    (``L_c``: median number of ratings of cluster ``c``'s members). Posterior
    profiles rate item ``i`` ``sum_c w_c p_c,i``, the taste model's prediction at
    the mixture's mean point (the prediction is affine in the taste
    coordinates, so this is ``E[predicted rating | c_hat]``); cluster profiles
    rate it ``(sum of members' ratings + 2 * p_j,i) / (number of members'
    ratings + 2)``. Ratings are clipped to the observed rating range and rounded
    when the input dtype is an integer, never to 0 ("not rated": a mean of -0.2
    becomes -1, as ``transform`` rounds). Only labeled users' data enter the
    profiles; they depend on the mapping only through ``c_hat``'s posterior,
    so the release stays a function of ``c_hat`` alone.

    Data formats: ratings in long form (a DataFrame of user, item, rating) or
    in Surprise go through :class:`~privrelease.recommender.RatingsFrame`, the
    one documented path::

        rf = RatingsFrame("user", "item", "rating").fit(df)
        X = rf.to_matrix(df)                  # CSR, rows rf.user_ids_, columns rf.item_ids_
        y = rf.align(labels)                  # Series (or DataFrame: one column per attribute) by user id
        released = rf.from_matrix(QuantizedPrivacyMapper().fit(X, y).transform(X))  # long form, same ids

    Measured (self-check, not a test; Surprise SVD trained on opted-in users'
    originals plus protected users' releases, 10 % of each protected user's
    ratings held out before release; adaptive logistic / forest attackers
    trained on opted-in users' releases, worst AUC over logistic /
    random-forest on values / indicators): with the defaults at perfect
    privacy, RMSE -3.4 % on the Politics-and-TV preset (5-fold CV,
    ``pipelines/politics_tv_ratings.toml``; ``profile="cluster"``: -1.9 %;
    releasing nothing: +4.6 %), adaptive AUC 0.52 against 0.88 on the
    original ratings. On ``make_ratings`` with a weak attribute acting through
    many items (docs/frontier.md, 3-fold CV): +2.0 %, +2.4 % and +3.3 % for a
    2-, 3- and 6-class attribute, against +2.8 %, +3.6 % and +4.5 % with
    ``profile="cluster"`` and +5.5 %, +5.0 % and +5.1 % releasing nothing,
    worst adaptive AUC at most 0.53. ``n_clusters=100`` lowers these to +1.1 %,
    +2.1 % and +2.2 % but lets the adaptive attacker reach AUC 0.59 on
    Politics-and-TV: the prior is no longer honest. A leakage cap of 0.02
    bits already lets the adaptive attacker reach AUC 0.56-0.59 (measured with
    ``profile="cluster"``). The naive ``release="representative"`` costs +120 %
    to +140 % RMSE. ``prior="model"`` (100 clusters) with ``max_leakage=0.01``:
    +2.95 / +2.06 / +2.03 % on ``make_realistic_ratings`` gender (three protocol
    draws; the default at 0.01 bits: +3.32 / +3.00 / +2.42 %), worst logistic AUC
    at most 0.531 there; on Politics-and-TV -2.35 / -4.89 / -5.68 % at AUC 0.515 /
    0.547 / 0.557 (docs/frontier.md, section (g); forest attackers not run).

    References
    ----------
    S. Salamatian, A. Zhang, F. du Pin Calmon, S. Bhamidipati, N. Fawaz,
    B. Kveton, P. Oliveira, N. Taft, "Managing your Private and Public Data:
    Bringing down Inference Attacks against your Privacy", Algorithm 2,
    eq. (19)-(21), Theorem 2; Theorem 1 and Proposition 1 for the mismatch bound.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from privrelease.mappers import QuantizedPrivacyMapper
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 200)
    >>> R = rng.integers(1, 6, (200, 30)) * (rng.random((200, 30)) < 0.3)
    >>> R[:, :3] = np.where(y[:, None] == 1, 5, 1)      # three shows reveal y
    >>> X = sp.csr_matrix(R.astype(float))
    >>> m = QuantizedPrivacyMapper(n_clusters=8, random_state=0).fit(X, y)
    >>> bool(m.prior_leakage_ > 0.5), bool(m.leakage_ < 1e-6)   # perfect privacy by default
    (True, True)
    >>> Xr = m.transform(X)
    >>> Xr.shape, Xr.format
    ((200, 30), 'csr')
    """

    _parameter_constraints = {
        "n_clusters": [NumberInterval(Integral, 1, None, closed="left"), StrOptions({"auto", "heldout"})],
        "delta": BUDGET_CONSTRAINT,
        "max_leakage": BUDGET_CONSTRAINT,
        "metric": [StrOptions({"euclidean", "sqeuclidean", "hamming"})],
        "space": [StrOptions({"auto", "taste", "raw"})],
        "n_components": [NumberInterval(Integral, 1, None, closed="left")],
        "release": [StrOptions({"profile", "representative"})],
        "profile": [StrOptions({"posterior", "cluster"})],
        "n_refine": [NumberInterval(Integral, 0, None, closed="left")],
        "clustering": [StrOptions({"auto", "plain", "attribute_free"})],
        "prior": [StrOptions({"counts", "model"})],
        "smoothing": [NumberInterval(Real, 0, None, closed="left")],
        "leakage": LEAKAGE_CONSTRAINT,
        "solver": [str],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "dask_sample_size": [NumberInterval(Integral, 2, None, closed="left")],
        "protect": PROTECT_CONSTRAINT,
        "heldout_tolerance": [NumberInterval(Real, 0, None, closed="left")],
        "class_removal": [NumberInterval(Real, 0, 1, closed="both"), StrOptions({"heldout"})],
        "class_bins": [NumberInterval(Integral, 1, None, closed="left"), StrOptions({"heldout"})],
        "class_directions": [StrOptions({"auto", "all", "significant"})],
    }

    _saved_attributes = _BaseMapper._saved_attributes + (
        "n_clusters_", "cluster_centers_", "center_cost_matrix_", "release_profiles_", "rating_range_",
        "embedding_", "quantization_radius_", "quantization_distortion_", "center_distortion_",
        "empirical_prior_", "empirical_leakage_", "output_points_", "profile_weights_", "n_refine_",
        "attribute_directions_", "heldout_n_clusters_", "heldout_leakage_excess_", "heldout_noise_",
        "heldout_distortion_", "class_removal_", "class_removal_grid_", "class_removal_excess_",
        "class_removal_noise_", "class_removal_distortion_", "coarse_centers_", "split_thresholds_", "fine_cells_",
        "class_bins_", "class_bins_grid_", "class_bins_excess_", "class_bins_noise_", "class_bins_distortion_",
        "n_class_directions_", "class_direction_eigenvalues_", "class_direction_threshold_",
    )
    #: a file written before class_directions existed removed every between-class direction
    _legacy_params = {"class_directions": "all"}
    #: files written before the frontier parameters lack the last three (read as: centres, one-hot, 0)
    _optional_attributes = _BaseMapper._optional_attributes + (
        "embedding_", "output_points_", "profile_weights_", "n_refine_", "attribute_directions_",
        "heldout_n_clusters_", "heldout_leakage_excess_", "heldout_noise_", "heldout_distortion_",
        "class_removal_", "class_removal_grid_", "class_removal_excess_", "class_removal_noise_",
        "class_removal_distortion_", "coarse_centers_", "split_thresholds_", "fine_cells_", "class_bins_",
        "class_bins_grid_", "class_bins_excess_", "class_bins_noise_", "class_bins_distortion_",
        "n_class_directions_", "class_direction_eigenvalues_", "class_direction_threshold_")

    def __init__(self, n_clusters="auto", delta=None, *, max_leakage=None, metric="euclidean",
                 space="auto", n_components=20, release="profile", profile="posterior", n_refine=0,
                 clustering="auto", prior="counts", smoothing=1.0, leakage="mutual_information", solver="auto",
                 random_state=None, dask_sample_size=_dask.DEFAULT_SAMPLE_SIZE, protect="joint",
                 heldout_tolerance=0.02, class_removal=1.0, class_bins=1, class_directions="auto"):
        self.n_clusters = n_clusters
        self.delta = delta
        self.max_leakage = max_leakage
        self.metric = metric
        self.space = space
        self.n_components = n_components
        self.release = release
        self.profile = profile
        self.n_refine = n_refine
        self.clustering = clustering
        self.prior = prior
        self.smoothing = smoothing
        self.leakage = leakage
        self.solver = solver
        self.random_state = random_state
        self.dask_sample_size = dask_sample_size
        self.protect = protect
        self.heldout_tolerance = heldout_tolerance
        self.class_removal = class_removal
        self.class_bins = class_bins
        self.class_directions = class_directions

    # ------------------------------------------------------------------ helpers
    def _check_X(self, X, reset):
        """Validate ``X``; return it (CSR, CSC or dense), the caller's sparse format and the caller's dtype."""
        check_rating_container(X)
        check_table(X)
        check_no_time_values(X)
        X = check_numeric_text(X)
        refuse_nan_ratings(X)
        if reset:
            record_column_labels(self, _frame_columns(X))
        else:
            check_column_labels(self, _frame_columns(X))
        # a sparse frame filled with NaN (astype(pd.SparseDtype(float))) and no NaN cell: pandas' "fill value must
        # be 0 when converting to COO matrix" inside scikit-learn
        X = zero_fill_sparse_frame(X)
        fmt = X.format if sp.issparse(X) else None
        if fmt is not None and fmt not in ("csr", "csc"):
            X = X.tocsr()
        nullable = nullable_numpy_dtype(X)  # scikit-learn reads an Int64 frame as float64
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype="numeric", reset=reset)
        X = as_float_if_object(X)  # a DataFrame of categorical columns stays object (scipy refused it deep inside)
        X = canonical_sparse(X)  # a pair stored twice counted twice (negative distances), a stored 0 as a rating
        check_not_subnormal(X)  # 1e-320: a rating of about 0, or 0 ('not rated') where subnormals are flushed
        # the release's (float16 included: computed in float64, released as float16)
        dtype = X.dtype if nullable is None else nullable
        if X.dtype == np.float16:  # scipy's sparse kernels refuse float16: compute in float64
            X = X.astype(np.float64)
        _check_rating_scale(X)
        return X, fmt, dtype

    def _space(self):
        if self.metric == "hamming":
            return "hamming"
        return "taste" if self.space == "auto" else self.space

    def _embed(self, Xc, owned=False):
        """Coordinates of CSR/dense rows in the clustering space.

        ``owned=True``: ``Xc`` is a private copy (a row slice) that may be modified.
        """
        space = self._space()
        if space == "taste":
            if sp.issparse(Xc):
                return self.embedding_.transform(Xc, copy=not owned)
            return self.embedding_.transform(sp.csr_matrix(Xc), copy=False)
        if space == "hamming":
            if sp.issparse(Xc):
                B = Xc.copy()
                B.eliminate_zeros()
                B.data = np.ones_like(B.data, dtype=np.float64)
                return B
            return (np.asarray(Xc) != 0).astype(np.float64)
        if sp.issparse(Xc):
            return Xc.astype(np.float64)
        return np.asarray(Xc, dtype=np.float64)

    def _distances(self, E, points):
        """Distances between embedded rows ``E`` and dense ``points`` (metric of the space)."""
        if self._space() == "hamming":
            return hamming_distances(E, points)
        if self.metric == "sqeuclidean":
            return _sq_dist(E, points)
        return np.sqrt(_sq_dist(E, points))

    def _nearest_centers(self, E, centers=None):
        """``psi(b)``: the nearest centre in the space the clusters were formed in.

        With ``clustering="attribute_free"`` the clusters are the k-means cells of the rows with the
        between-class directions ``attribute_directions_`` projected out, so a row joins the centre nearest
        after the same projection; the centres are held in the whole space, and the projection's constant
        (the overall mean) cancels in the differences. This is the partition whose class split the prior
        counts: assigning in the whole space instead would apply a different, class-dependent partition
        (the whole-space centres still differ along those directions), and the certificate would not hold
        for it (docs/frontier.md, section (j)). With ``class_removal_`` below 1 the projection removes that
        share of the between-class component only, as the clustering did. With ``class_bins`` above 1 (the
        fitted ``fine_cells_``) the cell is the bin of the user's coordinate along the first between-class
        direction within her coarse cell (:meth:`_fine_cells`).
        """
        if centers is None and getattr(self, "fine_cells_", None) is not None:
            return self._fine_cells(E)
        centers = self.cluster_centers_ if centers is None else centers
        V = getattr(self, "attribute_directions_", None)
        if V is None or V.shape[0] == 0 or self._space() == "hamming":
            return self._distances(E, centers).argmin(axis=1)
        lam = float(getattr(self, "class_removal_", 1.0))  # files written before class_removal: the full removal
        if sp.issparse(E):  # the input space: a dense copy of the rows was users x items (16384 rows a chunk)
            return _projected_sq_dist(E, V, lam, centers).argmin(axis=1)
        return self._distances(E - lam * ((E @ V.T) @ V), centers - lam * ((centers @ V.T) @ V)).argmin(axis=1)

    def _fine_cells(self, E):
        """``psi(b)`` with ``class_bins`` above 1: the nearest coarse centre (``coarse_centers_``, after the
        projection the clustering used), then the bin of the row's coordinate ``t = b . v`` along the first
        between-class direction ``v`` among that cell's ``split_thresholds_`` (``t`` above ``j`` of them: bin
        ``j``), then the fine cell of that bin (``fine_cells_``)."""
        coarse = self._nearest_centers(E, self.coarse_centers_)
        t = np.asarray(E @ self.attribute_directions_[0]).ravel()
        return self.fine_cells_[coarse, _bins_in_cells(t, coarse, self.split_thresholds_)]

    def _output_points(self):
        """Points of the output alphabet in the clustering space (``output_points_``, then origin).

        ``output_points_`` are the cluster centres unless ``n_refine`` moved them
        (files written before it existed: the centres).
        """
        pts = getattr(self, "output_points_", None)
        if pts is None:
            pts = self.cluster_centers_
        if self.release == "profile":
            pts = np.vstack([pts, np.zeros((1, pts.shape[1]))])
        return pts


    # ------------------------------------------------------------ fit hooks
    def _validate_X(self, X, reset):
        X, _, _ = self._check_X(X, reset=reset)
        return X.tocsr() if sp.issparse(X) else np.asarray(X)

    def _clustering(self, a_idx):
        """The clustering used by an in-memory fit: ``clustering`` with ``"auto"`` resolved (see the class)."""
        if a_idx is None or self._space() == "hamming":
            return "plain"
        if np.unique(a_idx).size < 2:
            # protect="marginal" on a 2-D y: no one attribute whose between-class directions could be removed
            # (they were learnt from a single "class": none, while class_removal_ said 1.0 and the fit could not
            # be saved)
            if self.clustering == "attribute_free":
                raise ValueError("clustering='attribute_free' removes the between-class directions of one attribute "
                                 "(or of the joint attribute); protect='marginal' on a 2-D y has none: use "
                                 "clustering='plain' (or 'auto'), or protect='joint'")
            return "plain"
        if self.clustering == "auto":
            return "attribute_free" if np.unique(a_idx).size > 2 else "plain"
        return self.clustering

    def _attribute_free(self, E, a_idx, w_lab):
        """``E`` with the between-class directions projected out (``clustering="attribute_free"``).

        The directions are an orthonormal basis of the span of the weighted class
        means minus the overall mean (at most ``n_classes - 1`` of them), learnt on
        the labeled rows; they are stored in ``attribute_directions_``. Only the
        share ``class_removal_`` of the component along them is removed (none,
        and no directions kept, when it is 0: plain k-means).
        """
        self.attribute_directions_ = np.zeros((0, E.shape[1]))
        self.n_class_directions_ = 0
        for name in ("class_direction_eigenvalues_", "class_direction_threshold_"):
            self.__dict__.pop(name, None)
        if self._clustering(a_idx) != "attribute_free":
            self.class_removal_ = 0.0
            return E
        lam = float(self.class_removal_)
        if lam == 0.0:
            return E
        if sp.issparse(E):  # the input space: k-means runs on the projected rows, dense (refused early when
            # two dense copies cannot fit); the means and directions come from the sparse rows
            Ed = _dense(E, "clustering='attribute_free' in the input space", copies=2)
            mean, V = self._class_directions(E, a_idx, w_lab, lambda rows, w: np.asarray(w @ rows).ravel() / w.sum())
            if not V.shape[0]:
                self.class_removal_ = 0.0
                return E
            Ed -= lam * ((np.asarray(E @ V.T) - mean @ V.T) @ V)
            return Ed
        mean, V = self._class_directions(E, a_idx, w_lab, lambda rows, w: np.average(rows, axis=0, weights=w))
        if not V.shape[0]:  # a one-dimensional space: nothing may be removed (see _class_directions)
            self.class_removal_ = 0.0
            return E
        return E - lam * (((E - mean) @ V.T) @ V)

    def _class_directions(self, E, a_idx, w_lab, average):
        """Set ``attribute_directions_`` (an orthonormal basis of the weighted class means minus the overall
        mean, from ``average(rows, weights)``); return the overall mean and the directions.

        At least one dimension of the clustering space is left to cluster on (at most ``n_dims - 1`` directions):
        the strongest directions (largest class-mean offsets) are kept and a warning says how many were dropped
        (a one-dimensional space keeps none: plain k-means). The span has up to ``n_classes - 1`` directions, and
        8 classes in a 6-dimensional taste space projected out all of it: every user sat at one point and the
        clusters were cut in rounding noise (a partition of nothing, which moved with a constant factor on the
        weights).
        """
        mean = average(E, w_lab)
        rule = getattr(self, "_directions_rule", None) or self._class_directions_rule(E, a_idx)
        if rule == "significant":
            # the directions above the largest root's null quantile, the largest eigenvalue first (sections (s), (t))
            V, theta, threshold = _significant_directions(E, a_idx, w_lab)
            self.class_direction_eigenvalues_, self.class_direction_threshold_ = theta, threshold
        else:
            offsets = []
            for a in np.unique(a_idx):
                mask = a_idx == a
                if w_lab[mask].sum() > 0:
                    offsets.append(average(E[mask], w_lab[mask]) - mean)
            _, s, Vt = np.linalg.svd(np.asarray(offsets), full_matrices=False)
            keep = (s > max(1e-10 * float(s.max()), _rounding_scale(E), np.finfo(float).tiny) if s.size
                    else np.zeros(0, bool))
            V = Vt[keep]  # singular values in decreasing order: the strongest directions first
        n_dims = E.shape[1]
        limit = max(n_dims - 1, 0)
        if V.shape[0] > limit:
            warnings.warn(
                f"clustering='attribute_free': the {V.shape[0]} between-class directions of the "
                f"{np.unique(a_idx).size} classes would leave none of the {n_dims} dimensions of the clustering "
                f"space to cluster on (the clusters would be cut in rounding noise); at least one is kept, so only "
                f"the {limit} strongest direction(s) are projected out (attribute_directions_)"
                + (" and the clustering is plain k-means" if limit == 0 else "")
                + "; a larger space (n_components) or clustering='plain' avoids this",
                UserWarning, stacklevel=user_stacklevel())
            V = V[:limit]
        self.attribute_directions_ = V
        self.n_class_directions_ = int(V.shape[0])
        return mean, self.attribute_directions_

    def _class_directions_rule(self, E, a_idx):
        """``class_directions`` as this fit uses it, ``"all"`` or ``"significant"`` (see the class); refuses
        ``"significant"`` where the total covariance of the clustering space cannot be estimated: sparse rows (the
        input space) or no more labeled users than dimensions plus classes."""
        value = self.class_directions
        if value == "all":
            return "all"
        n_classes = np.unique(a_idx).size
        n, d = E.shape
        usable = not sp.issparse(E) and n > d + n_classes
        if value == "significant" and not usable:
            where = "the sparse input space of " if sp.issparse(E) else ""
            raise ValueError(
                f"class_directions='significant' tests each between-class direction against the labeled users' "
                f"total covariance in the clustering space; it needs a dense (taste) space and more labeled users "
                f"than dimensions plus classes, got {n} labeled users in {where}{d} dimensions and {n_classes} "
                "classes: use class_directions='all' (or 'auto')")
        return "significant" if value == "significant" or (usable and n_classes > 2) else "all"

    def _auto_n_clusters(self, n_labeled, a_idx=None):
        """``n_clusters="auto"`` with the counted prior: one cluster per 10 labeled users (between 2 and 200) when
        the clustering resolves to ``"attribute_free"``, one per 20 (between 2 and 50) otherwise (docs/frontier.md,
        section (i))."""
        if self._clustering(a_idx) == "attribute_free":
            return int(np.clip(n_labeled // 10, 2, 200))
        return int(np.clip(n_labeled // 20, 2, 50))

    def _learn_quantizer(self, X_lab, w_lab, a_idx=None):
        """Taste embedding (if any) and cluster centres learnt on the labeled rows ``X_lab``.

        Returns the embedded rows and their cluster labels (empty clusters dropped).
        ``n_clusters="heldout"`` chooses the number of clusters here, after the
        embedding and before the clustering (:meth:`_heldout_n_clusters`).
        """
        n_labeled = X_lab.shape[0]
        # the clustering (k-means, the directions, the held-out folds) reads the weights in units of their mean:
        # a constant factor on sample_weight gives the same clusters
        w_lab = np.asarray(w_lab, dtype=np.float64) / _mean_weight(np.sum(w_lab), np.size(w_lab))
        seed = check_random_source(self.random_state).spawn_seed()
        k = self.n_clusters
        if k == "auto" and self.prior == "model":
            k = int(np.clip(n_labeled // 5, 2, 200))
        elif k == "auto":
            k = self._auto_n_clusters(n_labeled, a_idx)
        if k != "heldout" and k > n_labeled:
            warnings.warn(
                f"n_clusters={k} is larger than the number of labeled users ({n_labeled}); "
                f"using n_clusters={n_labeled}",
                UserWarning, stacklevel=user_stacklevel(),
            )
            k = n_labeled
        space = self._space()
        if space == "taste":
            X_lab_s = X_lab if sp.issparse(X_lab) else sp.csr_matrix(X_lab)
            values = X_lab_s.data[X_lab_s.data != 0]
            if values.size and values.min() == values.max():
                # implicit feedback (every stored rating 1): the taste model predicts that one value for every
                # user and item, so every user sat at one point and the fit silently made ONE cluster (the same
                # release for everybody, whatever the budget)
                warnings.warn(
                    f"every rating of the {n_labeled} labeled users is {float(values[0])!r} (implicit "
                    "feedback?): the taste space (space='auto' or 'taste') is built from differences between "
                    "rating values, so it cannot tell these users apart and they all fall into one cluster "
                    "(the same release for everybody); use metric='hamming' (clusters on which items each "
                    "user rated) or space='raw'",
                    UserWarning, stacklevel=user_stacklevel(),
                )
            self.embedding_ = TasteEmbedding(n_components=self.n_components, random_state=seed).fit(X_lab_s)
        E = self._embed(X_lab)
        # class_directions resolved once on every labeled user: the held-out folds (4/5 of them) re-resolved it, so
        # near n = d + m "auto" tested the folds' clusters with "all" and fitted the final ones with "significant"
        self._directions_rule = self._class_directions_rule(E, a_idx) if self._clustering(a_idx) == \
            "attribute_free" else None
        removal = self._check_class_removal(a_idx)
        bins = self._check_class_bins(a_idx, removal)
        self.class_removal_ = 1.0 if removal == "heldout" else removal
        self.class_bins_ = 1 if bins == "heldout" else bins
        if k == "heldout":
            k = self._heldout_n_clusters(E, a_idx, w_lab, seed)
        elif removal == "heldout":
            self.class_removal_ = self._heldout_class_removal(E, a_idx, w_lab, seed, k)
        elif bins == "heldout":
            self.class_bins_ = self._heldout_class_bins(E, a_idx, w_lab, seed, k)
        E_cluster = self._attribute_free(E, a_idx, w_lab)
        labels = self._cluster(E, E_cluster, k, seed, w_lab)
        if not self.attribute_directions_.shape[0]:
            self.class_bins_ = 1  # no direction to cut along: the cells of the clustering
        return E, labels

    def _cluster(self, E, E_cluster, k, seed, w):
        """k-means (k-modes for ``"hamming"``) of ``E_cluster``; sets the centres (in the whole space of ``E``),
        ``n_clusters_``, ``output_points_`` and ``center_cost_matrix_``; returns the labels (empty clusters dropped)."""
        n = E.shape[0]
        with warnings.catch_warnings():
            # fewer distinct points than clusters: empty clusters are dropped below
            warnings.filterwarnings("ignore", message="Number of distinct clusters")
            if self._space() == "hamming":
                centers, labels, _ = hamming_kmodes(E, k, sample_weight=w, random_state=seed)
            else:
                centers, labels = kmeans(E_cluster, k, seed, sample_weight=w)
        used = np.unique(labels)
        relabel = np.full(centers.shape[0], -1)
        relabel[used] = np.arange(used.size)
        if self.attribute_directions_.shape[0]:
            # centres in the whole space: the members' (weighted) means
            onehot = sp.csr_matrix((w, (relabel[labels], np.arange(n))), shape=(used.size, n))
            sums = onehot @ E  # clusters x items, without a dense copy of a sparse E
            centers = np.asarray(sums.toarray() if sp.issparse(sums) else sums) / np.asarray(onehot.sum(axis=1))
            used = np.arange(used.size)
        self.cluster_centers_ = np.asarray(centers)[used]
        self.n_clusters_ = int(used.size)
        for name in ("coarse_centers_", "split_thresholds_", "fine_cells_"):
            self.__dict__.pop(name, None)
        if self.class_bins_ > 1 and self.attribute_directions_.shape[0]:
            return self._split_cells(E, w)
        self.output_points_ = self.cluster_centers_.copy()
        self.center_cost_matrix_ = self._center_costs()
        if self.attribute_directions_.shape[0]:
            # each labeled row in the cell transform sends it to (quantize's rule), the partition the prior counts:
            # the members' means are not k-means' last centres (k-means stops at a tolerance), so a row near a
            # boundary could be counted in one cell and released from another (1 labeled user of 300 on a seed)
            return self._nearest_centers(E)
        return relabel[labels]

    def _split_cells(self, E, w):
        """``class_bins`` above 1: cut each cell just formed (the coarse cells) into ``class_bins`` bins along
        the first between-class direction ``v = attribute_directions_[0]``.

        Each labeled row joins its coarse cell as :meth:`_nearest_centers` sends any user there (a coarse centre
        no row joins is dropped: it would be a cell without members); within a cell, the thresholds are halfway
        between the order statistics of its members' coordinates ``t = e . v`` around the quantiles
        ``j / class_bins`` (no member on a threshold unless members tie there; a cell with fewer members than
        bins gets every threshold at its largest ``t``: one bin). A bin no member falls in joins the nearest
        non-empty bin of its cell. The fine cells are numbered by coarse cell, then bin; their centres are
        their members' weighted means in the whole space. Sets ``coarse_centers_``, ``split_thresholds_``,
        ``fine_cells_``, the fine ``cluster_centers_``, ``n_clusters_``, ``output_points_`` and
        ``center_cost_matrix_``; returns the rows' fine cells (which :meth:`_nearest_centers` gives them).
        """
        s = int(self.class_bins_)
        coarse = self._nearest_centers(E, self.cluster_centers_)
        kept = np.unique(coarse)
        self.coarse_centers_ = self.cluster_centers_[kept]
        coarse = np.searchsorted(kept, coarse)          # the dropped centres had no row: nobody's nearest moves
        kc = kept.size
        t = np.asarray(E @ self.attribute_directions_[0]).ravel()
        thr = np.empty((kc, s - 1))
        for c in range(kc):
            tc = np.sort(t[coarse == c])
            if tc.size >= s:
                cut = (np.arange(1, s) * tc.size) // s
                thr[c] = 0.5 * (tc[cut - 1] + tc[cut])
            else:
                thr[c] = tc[-1]
        raw = coarse * s + _bins_in_cells(t, coarse, thr)
        used = np.unique(raw)
        fine = np.full(kc * s, -1)
        fine[used] = np.arange(used.size)
        fine = fine.reshape(kc, s)
        bins = np.arange(s)
        for c in range(kc):  # an empty bin (ties, few members) joins the nearest non-empty bin of its cell
            ok = np.flatnonzero(fine[c] >= 0)  # (the lower one at equal distance), found by bisection: a Python
            pos = np.searchsorted(ok, bins)    # loop over every empty bin took 14 s at class_bins=10**6
            left, right = ok[np.maximum(pos - 1, 0)], ok[np.minimum(pos, ok.size - 1)]
            fine[c] = fine[c, np.where(np.abs(bins - left) <= np.abs(right - bins), left, right)]
        self.split_thresholds_ = thr
        self.fine_cells_ = fine
        labels = fine.ravel()[raw]
        n = E.shape[0]
        onehot = sp.csr_matrix((w, (labels, np.arange(n))), shape=(used.size, n))
        sums = onehot @ E
        self.cluster_centers_ = np.asarray(sums.toarray() if sp.issparse(sums) else sums) / np.asarray(onehot.sum(axis=1))
        self.n_clusters_ = int(used.size)
        self.output_points_ = self.cluster_centers_.copy()
        self.center_cost_matrix_ = self._center_costs()
        return labels

    # ------------------------------------------------------------ n_clusters="heldout"
    def _heldout_grid(self, n_labeled):
        """Candidate numbers of clusters: one per ``_HELDOUT_USERS_PER_CLUSTER`` labeled users (2 .. n), distinct."""
        ks = [int(np.clip(round(n_labeled / m), 2, n_labeled)) for m in _HELDOUT_USERS_PER_CLUSTER]
        return np.array(sorted(set(ks)), dtype=np.int64)

    def _heldout_n_clusters(self, E, a_idx, w, seed):
        """The number of clusters chosen by held-out leakage (``n_clusters="heldout"``).

        For each candidate ``k`` (:meth:`_heldout_grid`) and each of
        ``_HELDOUT_FOLDS`` stratified folds of the labeled users: cluster the
        other folds into ``k * n_train / n`` clusters (the same number of users
        per cluster as the final fit), estimate the prior and solve for the
        mapping exactly as ``fit`` does (same ``prior``, ``clustering``,
        ``smoothing``, leakage cap or budget); send the held-out users to their
        nearest centre and through the mapping. Their leakage ``I(A; C_hat)``
        (the plug-in of ``sum_u 1[a_u = a] mapping_[c_u]``, the draw of ``c_hat``
        integrated out) minus the leakage the fold's mapping claims is the
        *excess*; its finite-sample bias is removed by the mean of the same
        statistic over ``_HELDOUT_PERMUTATIONS`` permutations of the held-out
        labels (same counts, no dependence), and the standard deviation of that
        null is the noise floor. Averaged over the folds (weights: held-out
        sizes): ``heldout_leakage_excess_``, ``heldout_noise_``, and the held-out
        expected distortion ``heldout_distortion_``. A candidate is accepted
        when ``excess + noise <= heldout_tolerance`` (one standard deviation
        above the estimate within the tolerance: the held-out users vouch for
        it), scanning from the fewest clusters and stopping at the first
        failure; the accepted candidate of least held-out distortion is chosen,
        the smallest candidate when none is accepted (:func:`_heldout_choice`).
        The embedding is the one fitted on all labeled users (it never sees the
        attribute); everything that does (clusters with
        ``clustering="attribute_free"``, prior, mapping) is refitted per fold.
        """
        names = ("heldout_n_clusters_", "heldout_leakage_excess_", "heldout_noise_", "heldout_distortion_")
        return self._run_rule(E, a_idx, w, seed, "n_clusters='heldout'", names, self._heldout_grid(E.shape[0]),
                              _heldout_choice, lambda k: {"k": k})

    def _run_rule(self, E, a_idx, w, seed, what, names, grid, choose, candidate):
        """A held-out rule (``what`` names it): the shared folds (:meth:`_heldout_folds`), every value of ``grid``
        scored on them by :meth:`_heldout_figures` with the keywords ``candidate(value)``; records the grid and
        the (excess, noise, distortion) figures under ``names`` and returns the grid value
        ``choose(excess, noise, distortion, heldout_tolerance)`` picks."""
        folds, perms, fw = self._heldout_folds(E, a_idx, w, seed, what)
        figures = np.array([self._heldout_figures(E, a_idx, w, folds, perms, fw, seed=seed, **candidate(v))
                            for v in grid])
        for name, value in zip(names, (grid, *figures.T)):
            setattr(self, name, value)
        return grid[choose(*figures.T, self.heldout_tolerance)].item()

    def _heldout_rules(self, a_idx):
        """The held-out rules an in-memory fit on labeled users of class codes ``a_idx`` runs (``"n_clusters=
        'heldout'"`` ...), each refused by :func:`_check_heldout_size` on too few users: a caller that knows the
        labeled users before fitting (the command line's check before a run) asks the same question."""
        rules = ["n_clusters='heldout'"] if self.n_clusters == "heldout" else []
        if self._clustering(a_idx) == "attribute_free":
            rules += [f"{name}='heldout'" for name in ("class_removal", "class_bins")
                      if getattr(self, name) == "heldout"]
        return rules

    def _heldout_folds(self, E, a_idx, w, seed, what):
        """Folds, label permutations and fold weights shared by the held-out rules (``what`` names the rule)."""
        from sklearn.model_selection import StratifiedKFold

        if a_idx is None or self.classes_.size < 2:
            raise ValueError(f"{what} checks the leakage of one attribute (or of the joint attribute) "
                             "on held-out labeled users; it cannot run with protect='marginal' on a 2-D y: "
                             f"give {_heldout_instead(what)}")
        _check_heldout_size(np.bincount(a_idx, minlength=self.classes_.size), what)
        rng = np.random.default_rng([seed, 1])
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The least populated class")
            folds = list(StratifiedKFold(_HELDOUT_FOLDS, shuffle=True, random_state=seed % 2**32).split(E, a_idx))
        perms = [[rng.permutation(test.size) for _ in range(_HELDOUT_PERMUTATIONS)] for _, test in folds]
        sizes = np.array([w[test].sum() for _, test in folds])
        return folds, perms, sizes / sizes.sum()

    def _heldout_figures(self, E, a_idx, w, folds, perms, fw, k, seed, removal=None, bins=None):
        """One candidate of a held-out rule: (excess, noise, distortion) averaged over the folds (weights ``fw``).

        ``k`` clusters for all the labeled users (each fold's training part gets as many users per cluster);
        ``removal``: the share of the between-class component removed (``class_removal="heldout"``), ``bins``:
        the bins each cell is cut into (``class_bins="heldout"``); None for the fit's own (``n_clusters="heldout"``).
        """
        n = E.shape[0]
        stats = [self._heldout_fold(E, a_idx, w, train, test, k * train.size / n, seed, pf, removal, bins)
                 for (train, test), pf in zip(folds, perms)]
        obs = np.array([s[0] for s in stats])
        null = np.array([s[1] for s in stats])  # folds x permutations
        excess = fw @ (obs - null.mean(axis=1) - np.array([s[2] for s in stats]))
        return float(excess), float(np.std(fw @ null)), float(fw @ np.array([s[3] for s in stats]))

    def _check_class_removal(self, a_idx):
        """``class_removal`` as this fit uses it (a float or ``"heldout"``); refuses what it cannot mean."""
        value = self.class_removal
        if self.clustering == "plain" and not (isinstance(value, Real) and value == 1.0):
            raise ValueError(f"class_removal={value!r} is the share of the between-class component that "
                             "attribute-free clustering removes; clustering='plain' removes none: leave "
                             "class_removal=1.0 or use clustering='attribute_free' (or 'auto')")
        if value == "heldout":
            if self.n_clusters == "heldout" and self._clustering(a_idx) == "attribute_free":
                raise ValueError("class_removal='heldout' chooses the share at the fit's number of clusters; it "
                                 "cannot be combined with n_clusters='heldout': give one of the two a value")
            return value
        return float(value)

    def _check_class_bins(self, a_idx, removal):
        """``class_bins`` as this fit uses it (an integer or ``"heldout"``). Above 1 (or ``"heldout"``) it cuts
        attribute-free cells along the first between-class direction; refuses it where the fit asks for no such
        direction (``clustering="plain"``, or ``class_removal=0``), and ``"heldout"`` beside another held-out
        rule of an attribute-free fit (each rule scans its candidates at the others' fixed values)."""
        bins = self.class_bins if self.class_bins == "heldout" else int(self.class_bins)
        if bins == 1:
            return bins
        if bins != "heldout" and a_idx is not None and bins > a_idx.size:
            # a cell uses at most as many bins as it has labeled members; the thresholds and fine cells are
            # allocated per bin (class_bins=3e7 took 23 s and 5 GB for 120 users, 1e9 numpy's bare MemoryError)
            raise ValueError(f"class_bins={self.class_bins!r} is more bins than there are labeled users "
                             f"({a_idx.size}): a cell is cut into at most as many bins as it has members; expected "
                             f"at most {a_idx.size}")
        if a_idx is not None and np.unique(a_idx).size < 2:  # protect="marginal": dropped without a word before
            raise ValueError(f"class_bins={self.class_bins!r} cuts each cell along the first between-class direction "
                             "of one attribute (or of the joint attribute); protect='marginal' on a 2-D y has none: "
                             "leave class_bins=1, or use protect='joint'")
        if self.clustering == "plain":
            raise ValueError(f"class_bins={self.class_bins!r} cuts each attribute-free cell along the first "
                             "between-class direction; clustering='plain' learns no such direction: leave "
                             "class_bins=1 or use clustering='attribute_free' (or 'auto')")
        if removal != "heldout" and removal == 0.0 and self._clustering(a_idx) == "attribute_free":
            raise ValueError(f"class_bins={self.class_bins!r} cuts each cell along the first between-class "
                             "direction; class_removal=0.0 keeps no between-class directions (plain k-means): "
                             "leave class_bins=1 or give class_removal a share above 0")
        if bins == "heldout" and self._clustering(a_idx) == "attribute_free":
            for name in ("n_clusters", "class_removal"):
                if getattr(self, name) == "heldout":
                    raise ValueError(f"class_bins='heldout' chooses the bins at the fit's number of clusters and "
                                     f"share removed; it cannot be combined with {name}='heldout': give one of the "
                                     "two a value")
        return bins

    def _heldout_class_bins(self, E, a_idx, w, seed, k):
        """The number of bins each attribute-free cell is cut into, chosen on held-out labeled users
        (``class_bins="heldout"``, see the class).

        The folds, permutations and figures are those of ``class_removal="heldout"`` (:meth:`_heldout_folds`,
        :meth:`_heldout_figures`; the distortion measured to the points the release stands for) with the number
        of coarse cells fixed at ``k``, the fit's share removed, and the candidates ``_BINS_GRID`` (the unsplit
        cells first, scored on the same folds and held-out users as every other candidate); the choice is
        :func:`_bins_choice`. Without attribute-free clustering no cell is cut.
        """
        if self._clustering(a_idx) != "attribute_free":
            return 1
        names = ("class_bins_grid_", "class_bins_excess_", "class_bins_noise_", "class_bins_distortion_")
        return self._run_rule(E, a_idx, w, seed, "class_bins='heldout'", names, np.array(_BINS_GRID, dtype=np.int64),
                              _bins_choice, lambda b: {"k": k, "bins": int(b)})

    def _heldout_class_removal(self, E, a_idx, w, seed, k):
        """The share of the between-class component removed, chosen on held-out labeled users
        (``class_removal="heldout"``, see the class).

        The folds, permutations and figures are those of ``n_clusters="heldout"``
        (:meth:`_heldout_folds`, :meth:`_heldout_figures`, :func:`_heldout_choice`) with the number of
        clusters fixed at ``k`` and the candidates ``_REMOVAL_GRID`` (full removal first); the distortion is
        measured to the points the release stands for. Without attribute-free clustering nothing is removed.
        """
        if self._clustering(a_idx) != "attribute_free" or E.shape[1] < 2:  # (1-D: no direction may be removed)
            return 0.0
        names = ("class_removal_grid_", "class_removal_excess_", "class_removal_noise_", "class_removal_distortion_")
        return self._run_rule(E, a_idx, w, seed, "class_removal='heldout'", names,
                              np.array(_REMOVAL_GRID, dtype=np.float64),
                              lambda excess, noise, dist, tol: _removal_choice(excess, dist, tol),
                              lambda lam: {"k": k, "removal": lam})

    def _heldout_fold(self, E, a_idx, w, train, test, k, seed, perms, removal=None, bins=None):
        """One fold of a rule: (held-out leakage, its permutation null, claimed leakage, held-out distortion).

        ``removal`` (``class_removal="heldout"``): the share of the between-class component removed; ``bins``
        (``class_bins="heldout"``): the bins each cell is cut into. With either, the distortion is measured to the
        points the release stands for (``profile_weights_``-mixtures of the centres); with neither: the fit's
        share and bins, the distortion to the output points (``n_clusters="heldout"``).
        """
        work = copy.copy(self)  # scratch: the fold's clusters, prior and mapping never touch self
        if removal is not None:
            work.class_removal_ = float(removal)
        if bins is not None:
            work.class_bins_ = int(bins)
        k = int(np.clip(round(k), 2, train.size))
        a_tr, w_tr = a_idx[train], w[train]
        E_tr, E_te = E[train], E[test]
        labels = work._cluster(E_tr, work._attribute_free(E_tr, a_tr, w_tr), k, seed, w_tr)
        counts, _, cost = work._cluster_statistics(E_tr, a_tr, w_tr, labels)
        work._weight_unit = _mean_weight(float(w_tr.sum()), w_tr.size)
        prior = work._prior_from_counts(counts)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                # the fold's cap under its smoothed prior alone: the raw-count search (_solve) is the final fit's,
                # run once on the choice (in every fold and candidate it took a held-out fit from 29 to 169 s)
                mapping = _row_stochastic(_BaseMapper._solve(work, prior, cost).mapping, cost)
            except InfeasibleBudgetError as exc:
                # the fold's own smallest budget (its clusters, on 4/5 of the labeled users, are not the fit's) was
                # quoted as if it were the fit's: passing it was refused again with another fold's figure
                rule = ", ".join(self._heldout_rules(a_idx)) or "the held-out rule"
                raise InfeasibleBudgetError(
                    f"delta={self.delta!r} is below the smallest expected distortion "
                    f"{exc.smallest_feasible!r} of a held-out fold of {rule} ({k} clusters on {train.size} of the "
                    f"{a_idx.size} labeled users); each candidate is solved on such folds at the fit's budget: give "
                    "a larger delta, a max_leakage cap instead, or fix the value the rule chooses",
                    smallest_feasible=exc.smallest_feasible) from None
        claimed = float(heldout_leakage(prior, mapping, kind=self.leakage))
        c_te = work._nearest_centers(E_te)
        a_te, w_te = a_idx[test], w[test]

        def stat(a):
            return _heldout_statistic(a, c_te, w_te, mapping, self.classes_.size, self.leakage)

        if removal is None and bins is None:
            points = work._output_points()
        else:
            work.prior_, work.mapping_ = prior, mapping
            points = work._profile_weights().T @ work.cluster_centers_
            if self.release == "profile":
                points = np.vstack([points, np.zeros((1, points.shape[1]))])
        D_te = work._distances(E_te, points)
        dist = float(np.average(np.sum(mapping[c_te] * D_te, axis=1), weights=w_te))
        return stat(a_te), _heldout_null(a_te, perms, c_te, w_te, mapping, self.classes_.size, self.leakage), claimed, dist

    def _center_costs(self):
        """Distances between centres and output points (problem (19)'s ``d(c, c_hat)``)."""
        C = self._distances(self.cluster_centers_, self._output_points())
        return np.rint(C) if self._space() == "hamming" else C

    def _fit_prior(self, X, labeled, a_idx, weights):
        """Quantize the labeled users, count ``q(a, c)`` (eq. 20) and the member-averaged costs."""
        X_lab = X[np.flatnonzero(labeled)]
        n_labeled = X_lab.shape[0]
        if self.prior == "model":
            self._check_model_prior(a_idx)
        E, labels = self._learn_quantizer(X_lab, weights, a_idx)
        self.labels_ = labels
        counts, D_users, cost = self._cluster_statistics(E, a_idx, weights, labels)
        own = D_users[np.arange(n_labeled), labels]
        self.quantization_radius_ = float(own.max())
        self.quantization_distortion_ = float(np.average(own, weights=weights))
        return PriorEstimate(counts, cost, n_labeled, {"X_lab": X_lab, "w_lab": weights, "dtype": X.dtype,
                                                       "E": E, "labels": labels}, inputs=labels)

    def _cluster_statistics(self, E, a_idx, w, labels):
        """Class x cluster counts ``n(a, c)`` (eq. 20), the users' distances to the output
        points and the member-averaged costs; sets ``_model_counts`` for ``prior="model"``.
        Shared by ``fit`` and each fold of ``n_clusters="heldout"``."""
        k, n = self.n_clusters_, E.shape[0]
        counts = np.zeros((self.classes_.size, k))
        np.add.at(counts, (a_idx, labels), w)
        self._model_counts = self._model_soft_counts(E, a_idx, w, labels) if self.prior == "model" else None
        D_users = self._distances(E, self._output_points())
        size = np.bincount(labels, weights=w, minlength=k)
        onehot = sp.csr_matrix((w, (labels, np.arange(n))), shape=(k, n))
        return counts, D_users, np.asarray(onehot @ D_users) / np.maximum(size, 1e-300)[:, None]

    def _check_model_prior(self, a_idx):
        """``prior="model"`` needs one label per user and enough users of each class to cross-fit."""
        n_classes = self.classes_.size
        if n_classes < 2:
            raise ValueError("prior='model' fits one model of the attribute (or of the joint attribute); "
                             "it cannot fit the marginal attributes of protect='marginal': use prior='counts'")
        _check_model_prior_size(np.bincount(a_idx, minlength=n_classes), self.classes_)

    def _model_soft_counts(self, E, a_idx, weights, labels):
        """Soft counts ``n~(a, c) = sum_{u in c} w_u p~(a | e_u)`` of a cross-fitted model (``prior="model"``).

        ``p~(a | e_u)`` is a multinomial logistic regression of the attribute on the
        users' coordinates in the clustering space (standardised), predicted for
        each labeled user by the model fitted on the OTHER folds of a stratified
        ``_MODEL_PRIOR_FOLDS``-fold split, so that no user's own label enters her
        prediction; the inverse regularisation ``C`` is the one of
        ``_MODEL_PRIOR_CS`` with the smallest out-of-fold log-loss (a calibrated
        model: too strong a penalty would understate the dependence). ``n~(a, c) /
        n(c)`` estimates ``q(a | c) = E[p(a | B) | C = c]`` with an error governed by
        the model's ``(|A| - 1)(dim + 1)`` parameters rather than by the ``|A||C|``
        cells of Proposition 1's count. The model is fitted on the weights in
        units of their mean weight (a constant factor on ``sample_weight`` is a
        factor on the penalty's weight: weights of 1e-200 made every ``C`` an
        unfitted model, the prior independent of the attribute and "perfect
        privacy" the identity mapping).
        """
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold
        from sklearn.preprocessing import StandardScaler
        # a sparse E (the input space, hamming) is scaled without centring: the intercept absorbs the
        # centring, the model is the same, and the users x items rows stay sparse
        E = StandardScaler(with_mean=not sp.issparse(E)).fit_transform(E)
        seed = check_random_source(self.random_state).spawn_seed()
        folds = list(StratifiedKFold(_MODEL_PRIOR_FOLDS, shuffle=True, random_state=seed).split(E, a_idx))
        n_classes = self.classes_.size
        fit_w = weights / _mean_weight(weights.sum(), weights.size)
        best, best_loss = None, np.inf
        with single_thread("blas"), single_thread("openmp"), warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning)
            warnings.filterwarnings("ignore", category=FutureWarning)
            for C in _MODEL_PRIOR_CS:
                proba = np.empty((E.shape[0], n_classes))
                for train, test in folds:
                    model = LogisticRegression(C=C, max_iter=1000).fit(E[train], a_idx[train],
                                                                       sample_weight=fit_w[train])
                    proba[test] = model.predict_proba(E[test])
                loss = -np.average(np.log(np.clip(proba[np.arange(E.shape[0]), a_idx], 1e-15, 1.0)),
                                   weights=weights)
                if loss < best_loss:
                    best, best_loss = proba, loss
        soft = np.zeros((n_classes, self.n_clusters_))
        np.add.at(soft.T, labels, best * weights[:, None])
        return soft

    def _prior_from_counts(self, counts):
        """Smoothed ``q(a, c) ~ n(a, c) + smoothing * p(a)`` (towards independence).

        With ``prior="model"`` the class split of each cluster is the model's
        (``n~(a, c)``, see :meth:`_model_soft_counts`; same cluster sizes).
        The counts are weighted (``sample_weight``) and ``smoothing`` counts
        users, so they are read in units of the mean weight: weights of 1e-300
        each made one pseudo-user outweigh 1e300 users, the prior independent
        of the attribute, and "perfect privacy" released the counts' leakage.
        """
        self.empirical_prior_ = counts / counts.sum()
        p_a = self.empirical_prior_.sum(axis=1)
        soft = getattr(self, "_model_counts", None)
        base = soft if self.prior == "model" and soft is not None and soft.shape == counts.shape else counts
        unit = getattr(self, "_weight_unit", None)
        if unit is not None and unit != 1.0:
            base = base / unit
        prior = base + self.smoothing * p_a[:, None]
        with np.errstate(over="ignore"):
            total = prior.sum()
        if not np.isfinite(total):
            # a smoothing so large (1e308) that the total overflows: the same ratio computed as
            # base / smoothing + p(a) (was a prior of sum 0 and "prior must sum to 1")
            prior = base / float(self.smoothing) + p_a[:, None]
            total = prior.sum()
        return prior / total

    def _solve(self, prior, cost):
        """The engine's mapping; a ``max_leakage`` cap is kept under the raw counts as well (``prior="counts"``).

        The smoothed prior's pseudo-users (``smoothing``) are independent of
        the attribute, so a cap certified under ``prior_`` alone lets the
        opted-in users' own counts (``empirical_prior_``) leak more than the
        cap: 0.057 bits at a cap of 0.05 with the default ``smoothing=1`` on
        ``make_ratings(n_users=2000, n_items=100, random_state=0)``, 0.50 at
        ``smoothing=100``. When that happens the engine is solved again at a
        tighter cap ``L' < max_leakage`` (regula falsi on ``L'``, at most
        ``_CAP_TRIALS`` solves) until the raw counts' leakage, computed exactly
        from the mapping, is at most the cap; every trial's mapping is certified
        under ``prior_`` at its own ``L'``. ``L' = 0`` always ends the search:
        perfect privacy under the smoothed prior is perfect privacy under the
        counts (the pseudo-users follow the counts' class marginal). The cap
        used is ``solver_result_.max_leakage``.

        That holds in exact arithmetic; a ``smoothing`` so large that the
        counts drown in the pseudo-users (``smoothing=1e12``: the smoothed
        prior is independent of the attribute to the solver's precision) made
        any mapping look private, and perfect privacy released the counts'
        whole leakage (0.44 bits). So the raw counts' leakage is checked at
        every cap, perfect privacy included (within ``_BUDGET_TOL``), and a
        mapping that breaks it is refused (ValueError naming ``smoothing``).

        A ``delta`` budget, ``prior="model"`` and ``protect="marginal"`` certify
        under the fitted prior alone (no search under the raw counts), but a
        prior drowned in that way certified any mapping there too (``prior="model",
        smoothing=1e12``: ``leakage_`` 0 and ``empirical_leakage_`` 0.22 bits), so
        they are refused alike (:meth:`_check_drowned`).
        """
        delta, cap = self._check_budget()
        emp = getattr(self, "empirical_prior_", None)
        if emp is None or np.shape(emp) != np.shape(prior) or min(prior.shape) < 2:
            return super()._solve(prior, cost)

        def raw(res):
            return float(heldout_leakage(emp, res.mapping, kind=self.leakage))

        if delta is not None or self.prior != "counts" or self._attribute_kind() == "marginal":
            result = super()._solve(prior, cost)
            self._check_drowned(prior, emp, result, raw, delta, cap)
            return result
        cap = float(cap or 0.0)

        if cap == 0.0:
            result = super()._solve(prior, cost)
            self._refuse_raw_leak(raw(result), cap)
            return result

        hint = getattr(self, "_raw_cap", None)
        if hint is not None and 0.0 < hint < cap:
            # a refinement step (n_refine): the cap the first solve settled on, so the steps pose one problem
            # sequence and stop at its fixed point (a new search each step moved the cap and never settled)
            res = self._engine_solve(prior, cost, None, hint)
            if raw(res) <= cap:
                return res
        result = super()._solve(prior, cost)
        e_hi = raw(result)
        if e_hi <= cap:
            return result
        lo, e_lo, hi, best = 0.0, 0.0, cap, None
        for _ in range(_CAP_TRIALS):
            # regula falsi on the cap: the raw leakage is about proportional to it; kept inside the bracket
            trial = lo + (hi - lo) * (cap - e_lo) / (e_hi - e_lo) * (1.0 - _CAP_MARGIN)
            trial = min(max(trial, lo + 0.05 * (hi - lo)), hi - 0.05 * (hi - lo))
            warm = best if best is not None else result
            res = self._engine_solve(prior, cost, None, trial,
                                     warm_start=warm if isinstance(warm.mapping, np.ndarray) else None)
            e = raw(res)
            if e <= cap:
                lo, e_lo, best = trial, e, res
                if e >= (1.0 - 2 * _CAP_MARGIN) * cap:
                    break
            else:
                hi, e_hi = trial, e
        if best is not None:
            self._raw_cap = lo
        else:
            best = self._engine_solve(prior, cost, None, 0.0)
            self._refuse_raw_leak(raw(best), cap)
        return best

    def _check_drowned(self, prior, emp, result, raw, delta, cap):
        """The drowning check of :meth:`_solve` where the mapping is certified under the fitted prior alone.

        Refused (:meth:`_refuse_raw_leak`) when the fitted prior is independent of the attribute to the solver's
        precision (its own leakage, releasing the clusters as they are, at most ``_BUDGET_TOL``) while the
        raw counts are not (nor, with ``prior="model"``, the model's soft counts: a model that finds no
        dependence is what that prior certifies), and the mapping leaks more under the raw counts than it was
        certified at (the cap; perfect privacy; under ``delta`` the leakage the engine reached).
        """
        def dependence(P):
            P = np.asarray(P, dtype=np.float64)
            return float(heldout_leakage(P / P.sum(), np.eye(P.shape[1]), kind=self.leakage))

        if dependence(prior) > _BUDGET_TOL or dependence(emp) <= _BUDGET_TOL:
            return
        soft = getattr(self, "_model_counts", None)
        if self.prior == "model" and soft is not None and soft.shape == prior.shape and dependence(soft) <= _BUDGET_TOL:
            return  # the model itself finds no dependence: what prior="model" certifies, not a drowned prior
        if delta is not None:
            certified = float(heldout_leakage(prior, result.mapping, kind=self.leakage))
        else:
            certified = float(cap or 0.0)
        self._refuse_raw_leak(raw(result), certified, delta=delta, perfect=delta is None and not cap)

    def _refuse_raw_leak(self, leak, cap, delta=None, perfect=None):
        """Refuse a mapping whose leakage under the raw counts exceeds ``cap`` (beyond ``_BUDGET_TOL``).

        ``cap`` is what the mapping was certified at under the fitted prior: perfect privacy when no budget was
        given (``perfect``; by default when ``cap`` is 0 and ``max_leakage`` is None), the leakage the engine
        reached under a ``delta`` budget.
        """
        if leak > cap + _BUDGET_TOL:
            n = int(round(float(getattr(self, "n_labeled_", 0) or 0)))
            if perfect is None:
                perfect = cap == 0.0 and self.max_leakage is None and delta is None
            if perfect:
                where = "as perfectly private (no max_leakage or delta given)"
            elif delta is not None:
                where = f"at delta={plain_value(delta)!r} (leakage_ {cap:.6g} bits)"
            else:
                where = f"at max_leakage={cap!r} bits"
            raise ValueError(
                f"smoothing={plain_value(self.smoothing)!r} drowns the opted-in users' counts: the prior it smooths "
                f"is independent of the attribute to the solver's precision, and the mapping certified under it "
                f"{where} leaks {leak:.6g} bits under the raw counts ("
                + ("empirical_leakage_" if self.leakage == "mutual_information"
                   else f"its {self.leakage} under empirical_prior_") + "); expected "
                f"a smoothing the counts of the {n} labeled users still show through (the default is 1; "
                "smoothing=0 certifies the raw counts)")

    def _check_raw_cap(self, cap):
        """A loaded file's cap holds under the raw counts too (what :meth:`_solve` keeps), ``prior="counts"``."""
        if self.delta is not None or self.prior != "counts" or self._attribute_kind() == "marginal":
            return
        # in the mapper's own measure, as _solve keeps it (empirical_leakage_ is always mutual information: a
        # maximal-leakage cap broken under the raw counts was saved and loaded)
        leak = float(heldout_leakage(self.empirical_prior_, self.mapping_, kind=self.leakage))
        if leak > cap + _BUDGET_TOL:
            what = ("fitted.empirical_leakage_" if self.leakage == "mutual_information"
                    else f"the {self.leakage} of fitted.mapping_ under fitted.empirical_prior_")
            raise ValueError(f"{what} = {leak!r} bits exceeds the cap of "
                             f"{cap!r} bits that the parameters promise under the opted-in users' raw counts")

    def _marginal_prior(self, common, blocks):
        """Smoothed stacked prior (base); ``empirical_prior_`` is the same stack unsmoothed."""
        prior = super()._marginal_prior(common, blocks)  # sets empirical_prior_ per block: replaced below
        self.empirical_prior_ = stack_marginal_priors(common, blocks)
        return prior

    def _distortion_weights(self, prior):
        """The labeled users' cluster shares ``n(c) / n`` (the column sums of ``empirical_prior_``), the weights
        of every distortion the mapper certifies; None when ``empirical_prior_`` is not the counts of ``prior``.

        The ``smoothing`` pseudo-users shrink the class split ``q(a | c)`` of ``prior_``, but they also pull its
        cluster marginal ``q(c)`` towards uniform, and the distortion was weighted by that marginal: a ``delta``
        budget of 0.75 let the labeled users pay 0.787 on average at ``smoothing=20`` (0.702 at the default
        smoothing for a budget of 0.7 with 30 clusters on 320 users), while ``delta`` promises a budget averaged
        over them. The pseudo-users carry no ratings, so they carry no distortion either.
        """
        emp = getattr(self, "empirical_prior_", None)
        if emp is None or np.shape(emp) != np.shape(prior):
            return None
        w = np.asarray(emp, dtype=np.float64).sum(axis=0)
        total = w.sum()
        return w / total if np.isfinite(total) and total > 0 else None

    def _engine_solve(self, prior, cost, delta, max_leakage, warm_start=None):
        """The engine's solve with the distortion weighted by the labeled users' cluster shares
        (:meth:`_distortion_weights`): the cost rows are rescaled by ``n(c) / n / q(c)``, so that the engine's
        ``sum_c q(c) sum_j p(j | c) cost'(c, j)`` is the labeled users' expected distortion; the leakage stays the
        fitted prior's."""
        w = self._distortion_weights(prior)
        if w is not None and not sp.issparse(cost):
            q = np.asarray(prior, dtype=np.float64).sum(axis=0)
            scale = np.divide(w, q, out=np.ones_like(w), where=q > 0)
            cost = np.asarray(cost, dtype=np.float64) * scale[:, None]
        return super()._engine_solve(prior, cost, delta, max_leakage, warm_start=warm_start)

    def _solver_distortion(self, mapping):
        """The engine's distortion of ``mapping``: over the labeled users' cluster shares where :meth:`_engine_solve`
        weighted the costs by them (a dense cost), else the base's."""
        w = self._distortion_weights(self.prior_)
        if w is None or sp.issparse(self.cost_matrix_):
            return super()._solver_distortion(mapping)
        return float(expected_distortion(w[None, :], mapping, self.cost_matrix_))

    def _figures(self):
        out = super()._figures()
        w = self._distortion_weights(self.prior_)
        if w is not None:
            # the distortions over the labeled users (see _distortion_weights), not under the smoothed q(c)
            shares = w[None, :]
            out["distortion_"] = float(expected_distortion(shares, self.mapping_, self.cost_matrix_))
            C = np.asarray(self.cost_matrix_, dtype=np.float64)
            out["smallest_delta_"] = float(np.sum(w * np.where(np.isfinite(C), C, np.inf).min(axis=1)))
        else:
            shares = self.prior_
        out["center_distortion_"] = float(expected_distortion(shares, self.mapping_, self.center_cost_matrix_))
        out["empirical_leakage_"] = float(mutual_information(self.empirical_prior_ @ self.mapping_))
        return out

    def _mapping_posterior(self, shares=None):
        """``p(c | c_hat = j)`` under ``prior_`` and ``mapping_`` (Bayes' rule), shape (n_clusters_, n_clusters_).

        Column ``j`` is ``q(c) p(j | c) / sum_c' q(c') p(j | c')`` for every
        non-empty output symbol ``j``; a symbol no cluster reaches gets the
        one-hot column of cluster ``j`` (it is never sampled, so any choice
        keeps the guarantee). ``shares``: other cluster weights than ``q(c)``.
        """
        k = self.n_clusters_
        q = self.prior_.sum(axis=0) if shares is None else np.asarray(shares, dtype=np.float64)
        W = q[:, None] * self.mapping_[:, :k]
        col = W.sum(axis=0)
        reached = col > 0
        return np.where(reached[None, :], W / np.where(reached, col, 1.0)[None, :], np.eye(k))

    def _profile_weights(self):
        """Mixture weights of the released profiles (``profile_weights_``)."""
        if self.profile == "posterior" and self.release == "profile" and self._space() != "hamming":
            return self._mapping_posterior()
        return np.eye(self.n_clusters_)

    def _refine_objective(self):
        """The certified objective: leakage under a distortion budget, otherwise the distortion."""
        return self.leakage_ if self.delta is not None else self.distortion_

    def _solve_and_report(self, estimate):
        """:meth:`_refined_solve`; the raw-count cap it found (:meth:`_solve`) and the mean weight the counts are
        read in (:meth:`_prior_from_counts`) are not kept on the fitted mapper."""
        self._raw_cap = None
        self._weight_unit = _mean_weight(np.asarray(estimate.counts, dtype=np.float64).sum(), estimate.n_labeled)
        try:
            self._refined_solve(estimate)
        finally:
            self.__dict__.pop("_raw_cap", None)
            self.__dict__.pop("_weight_unit", None)

    def _refined_solve(self, estimate):
        """The engine's mapping, then ``n_refine`` free-support barycenter refinements of the output points.

        At a fixed mapping ``p(c_hat | c)`` the certified distortion
        ``sum_c q(c) sum_j p(j | c) cost(c, z_j)`` is minimised over each
        output point ``z_j`` separately: with ``cost(c, z)`` the member-averaged
        ``metric``, the minimiser is the barycenter of the labeled users weighted
        by ``p(c | j) / |c|`` (exact weighted mean for ``"sqeuclidean"``; one
        Weiszfeld step for ``"euclidean"``, which never increases the weighted
        sum of distances). The leakage depends on the mapping alone, so the
        old mapping stays feasible at the moved points and re-solving can only
        lower the objective; an iterate is kept only if the certified
        objective (``distortion_``, or ``leakage_`` under a ``delta`` budget)
        did not get worse (guarding against solver tolerance). In-memory
        fits of the Euclidean spaces only; ``n_refine_`` counts the kept steps. The steps stop early at a
        fixed point (the points move by less than ``1e-12`` of their scale) or once a step lowers the objective
        by less than ``1e-12`` of it.
        """
        super()._solve_and_report(estimate)
        self.n_refine_ = 0
        E = estimate.extra.get("E")
        if self.n_refine == 0 or E is None or self._space() == "hamming":
            return
        labels = estimate.extra["labels"]
        w = np.asarray(estimate.extra["w_lab"], dtype=np.float64)
        k, n = self.n_clusters_, E.shape[0]
        size = np.bincount(labels, weights=w, minlength=k)
        onehot = sp.csr_matrix((w, (labels, np.arange(n))), shape=(k, n))
        for _ in range(int(self.n_refine)):
            # the certified distortion weighs the clusters by the labeled users' shares (_distortion_weights)
            post = self._mapping_posterior(self._distortion_weights(self.prior_))
            member_w = (post / np.maximum(size, 1e-300)[:, None])[labels] * w[:, None]  # n x k
            Z = self.output_points_
            if self.metric == "euclidean":  # Weiszfeld step
                member_w = member_w / np.maximum(self._distances(E, Z), 1e-12)
            total = member_w.sum(axis=0)
            newZ = np.asarray(E.T @ member_w).T / np.where(total > 0, total, 1.0)[:, None]
            newZ = np.where((total > 0)[:, None], newZ, Z)
            if np.max(np.abs(newZ - Z), initial=0.0) <= 1e-12 * max(1.0, float(np.max(np.abs(Z), initial=0.0))):
                break  # a fixed point: n_refine=1000 re-solved 1,000 times what 10 steps had reached to 12 digits
            snapshot, before = dict(vars(self)), self._refine_objective()
            self.output_points_ = newZ
            self.center_cost_matrix_ = self._center_costs()
            cost = np.asarray(onehot @ self._distances(E, self._output_points())) / size[:, None]
            super()._solve_and_report(PriorEstimate(estimate.counts, cost, estimate.n_labeled, estimate.extra,
                                                    attributes=estimate.attributes))
            after = self._refine_objective()
            if not after <= before:
                self.__dict__.clear()
                self.__dict__.update(snapshot)
                break
            self.n_refine_ += 1
            if before - after <= 1e-12 * abs(before):
                break  # converged: a further step gains nothing the certificate can tell

    def _build_release(self, estimate):
        """Release profiles (one row per output symbol, a function of that symbol only)."""
        self.profile_weights_ = self._profile_weights()
        k, n_items = self.n_clusters_, self.n_features_in_
        # the counts, sums, rates, values and kept cells of every cluster and item, dense (2,000 users x 200,000
        # items with 3 classes: 200 clusters, 1.85 GiB at the peak, the sparse ratings 1.2 MB): asked first
        check_allocation(_PROFILE_ARRAYS * k * n_items, f"the release profiles of {k} clusters x {n_items} items "
                                                        f"(about {_PROFILE_ARRAYS} dense clusters x items arrays; "
                                                        "fewer clusters need less: n_clusters=)")
        extra = estimate.extra
        if "X_lab" in extra:
            stats = _profile_stats(extra["X_lab"], extra["w_lab"], self.labels_, self.n_clusters_)
        else:
            stats = extra["stats"]
        self.rating_range_ = (0.0, 0.0) if stats["value_range"] is None else tuple(
            float(v) for v in stats["value_range"][:2])
        self.release_profiles_ = self._profiles_from_stats(
            stats["counts"], stats["sums"], stats["size"], stats["lengths"], stats["value_range"], extra["dtype"])

    def _profiles_from_stats(self, counts, sums, size, lengths, value_range, dtype):
        """Release profiles from per-cluster item statistics (in memory or aggregated from dask blocks).

        ``counts`` / ``sums``: cluster x item number and sum of ratings;
        ``size``: cluster sizes; ``lengths``: median number of ratings of the
        members; ``value_range``: ``(lowest, highest, smallest absolute)`` stored
        rating, or None when there is none.
        """
        n_items = self.n_features_in_
        k = self.n_clusters_
        is_int = np.issubdtype(dtype, np.integer) or dtype == bool
        space = self._space()

        if space == "hamming":
            values = self.cluster_centers_.copy()
        elif self.release == "representative":
            values = sums / np.where(size > 0, size, 1.0)[:, None]
            if value_range is not None:
                drop = np.abs(values) < 0.5 * value_range[2]
                values = np.clip(values, value_range[0], value_range[1])
                values[drop] = 0.0
        else:
            # mixture of the clusters with weights P[:, j] = p(c | c_hat = j) (one-hot for profile="cluster")
            P = self.profile_weights_
            posterior = self.profile == "posterior"
            per = np.where(size > 0, size, 1.0)[:, None]
            # expected share of the mixture's members rating each item (ranks like counts for one-hot P)
            rate = P.T @ (counts / per) if posterior else counts
            with np.errstate(invalid="ignore", divide="ignore"):
                if space == "taste" and posterior:
                    # E[predicted rating | c_hat]: the prediction is affine in the taste coordinates
                    values = self.embedding_.predicted_ratings(P.T @ self.cluster_centers_)
                elif space == "taste":
                    pred = self.embedding_.predicted_ratings(self.cluster_centers_)
                    values = (sums + _PROFILE_SHRINKAGE * pred) / (counts + _PROFILE_SHRINKAGE)
                elif posterior:  # E[rating of item i | c_hat, rated]
                    mean_sum = P.T @ (sums / per)
                    values = np.where(rate > 0, mean_sum / np.where(rate > 0, rate, 1.0), 0.0)
                else:
                    values = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
            if value_range is not None:
                values = np.clip(values, value_range[0], value_range[1])
            length = np.rint(P.T @ np.asarray(lengths, dtype=np.float64)).astype(np.int64) if posterior else lengths
            keep = np.zeros_like(values, dtype=bool)
            for j in range(k):
                order = np.lexsort((np.arange(n_items), -rate[j]))
                top = order[: length[j]]
                top = top[rate[j, top] > 0]
                keep[j, top] = True
            values[~keep] = 0.0  # in place (a fresh array): np.where, vstack and astype were three more copies
        if is_int:
            # never to 0 (0 is "not rated"), as transform rounds them: a plain rint here lost every profile
            # rating within 0.5 of 0 (an int8 -2..2 scale lost 4 that float64 kept) before transform saw them
            round_ratings(values, out=values)
        P = sp.csr_matrix(values)
        if self.release == "profile":
            P = sp.vstack([P, sp.csr_matrix((1, n_items))], format="csr")
        P = P.astype(dtype)
        P.eliminate_zeros()
        return P

    def _assign(self, X):
        """Distances of the rows of ``X`` to the output points, and their clusters ``psi(b)``."""
        E = self._embed(X)
        return self._distances(E, self._output_points()), self._nearest_centers(E)

    def _fit_prior_dask(self, X, y):
        """Algorithm 2 out of core: a quantizer learnt on a sample, the prior counted over every block.

        (i) The quantizer (taste embedding + centres) is learnt in memory on at
        most ``dask_sample_size`` labeled users, drawn block by block; (ii) one
        pass over all blocks assigns every labeled user to her nearest centre and
        adds up per-block sufficient statistics (class x cluster counts, summed
        distances to every output symbol, per-cluster item counts and rating
        sums, a histogram of profile lengths) in a tree reduction.
        """
        import dask

        if self.clustering == "attribute_free":
            raise ValueError(
                f"clustering={self.clustering!r} needs the labeled users' classes beside their ratings in "
                "memory; use clustering='plain' with a dask collection"
            )
        if self.n_clusters == "heldout":
            raise ValueError("n_clusters='heldout' refits the clusters and the mapping on folds of the labeled users "
                             "in memory; give an integer n_clusters or 'auto' with a dask collection")
        if self.class_removal == "heldout":
            # like the other held-out rules: in memory it chooses a share for attribute-free clusters, which a dask fit
            # never forms; it used to resolve silently to 0 (plain clusters) where the same users in memory got 1.0
            raise ValueError("class_removal='heldout' refits the clusters and the mapping on folds of the labeled users "
                             "in memory, and a dask collection is clustered plainly (no share to choose): give "
                             "class_removal a number with a dask collection")
        if self.class_bins == "heldout":
            # in memory the rule runs wherever the clustering is attribute-free, which a dask fit never is: refused
            # rather than answered with a choice (1) the same users in memory might not get
            raise ValueError("class_bins='heldout' refits the cut cells and the mapping on folds of the labeled "
                             "users in memory, and a dask collection is clustered plainly (nothing to cut): give "
                             "class_bins=1 with a dask collection")
        if self.prior == "model":
            raise ValueError("prior='model' cross-fits a model on the labeled users' coordinates in memory; "
                             "use prior='counts' with a dask collection")
        if self.n_refine:
            raise ValueError(
                f"n_refine={self.n_refine!r} needs the labeled users in memory (each refinement re-measures "
                "their distances to the moved output points); use n_refine=0 with a dask collection"
            )
        # the frame's columns are lost in the array: a long-form frame (user, item, rating) is refused as in memory
        check_rating_container(X)
        Xd, columns = _dask.as_row_chunked_array(X)
        if Xd.dtype.kind in "OUS":
            # a frame with object columns (numbers as strings): converted block by block as an in-memory fit
            # converts them (was scipy's "sparse does not support dtype object" inside the quantizer)
            Xd = Xd.astype(np.float64)
        y_parts = _dask.y_blocks(y, Xd)
        starts = np.concatenate([[0], np.cumsum(Xd.chunks[0])[:-1]]).astype(np.int64)
        # every block is checked as an in-memory X is, in the sample's pass and in the full pass
        X_parts = [dask.delayed(_checked_block)(xb, int(start))
                   for xb, start in zip(Xd.to_delayed().ravel(), starts)]
        summaries = dask.compute(*[dask.delayed(_dask.label_summary)(yb) for yb in y_parts])
        n_lab = np.array([s[0] for s in summaries], dtype=np.int64)
        total = int(n_lab.sum())
        if total == 0:
            raise ValueError(
                f"no labeled users: all {Xd.shape[0]} entries of y are missing (-1 or NaN); "
                "the prior is estimated from users who disclosed the private attribute"
            )
        # each block's labels were checked alone: ints in one block beside booleans (merged) or strings (a raw
        # TypeError in np.unique) in another are refused as the same labels in memory
        check_label_kinds([v for s in summaries for v in s[1].tolist()])
        classes = np.unique(np.concatenate([s[1] for s in summaries]))
        if classes.size < 2:
            raise ValueError(
                f"y has a single class among labeled users ({plain_value(classes[0])!r}); one class is not "
                "enough: a private attribute needs at least two values to be protected"
            )
        # (i) quantizer on a sample of the labeled users (non-privacy randomness)
        sample_seed = _dask.quantizer_sample_seed(self.random_state)
        size = int(self.dask_sample_size)
        takes = n_lab if total <= size else np.floor(n_lab * (size / total)).astype(np.int64)
        if takes.sum() == 0:
            # a sample smaller than the number of blocks floored every block's share to 0 (numpy's "need at
            # least one array to concatenate"): one user from each of the blocks with the largest shares
            share = n_lab * (size / total)
            takes = np.zeros_like(n_lab)
            takes[np.argsort(-share, kind="stable")[:size]] = 1
            takes = np.minimum(takes, n_lab)
        picked = dask.compute(*[dask.delayed(_dask.sample_block)(xb, yb, int(t), sample_seed, i)
                                for i, (xb, yb, t) in enumerate(zip(X_parts, y_parts, takes)) if t > 0])
        X_s = _dask.vstack([p[0] for p in picked])
        self._validate_X(X_s, reset=True)
        if columns is not None and all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        record_column_labels(self, columns)
        self.classes_ = classes
        self._learn_quantizer(X_s, np.ones(X_s.shape[0]))

        # (ii) one pass over every block: prior counts, costs, profile statistics
        n_out = self.center_cost_matrix_.shape[1]
        assign = dask.delayed(self._assign, pure=True)
        parts = [dask.delayed(_block_stats)(xb, yb, assign, classes, self.n_clusters_, n_out)
                 for xb, yb in zip(X_parts, y_parts)]
        st = dask.compute(_dask.tree_reduce(parts, _combine_stats))[0]
        size = st["size"]
        if np.any(size == 0):
            warnings.warn(
                f"{int(np.sum(size == 0))} cluster(s) learnt on the sample received no labeled user in "
                "the full pass; their cost rows are set to the centre distances",
                UserWarning, stacklevel=user_stacklevel(),
            )
        cost = st["dist_sum"] / np.maximum(size, 1)[:, None]
        cost[size == 0] = self.center_cost_matrix_[size == 0]
        self.quantization_radius_ = float(st["own_max"][0])
        self.quantization_distortion_ = float(st["own_sum"][0] / total)
        lo, hi, absmin = st["lo_hi_absmin"]
        stats = {
            "counts": st["item_counts"], "sums": st["item_sums"], "size": size,
            "lengths": np.array([int(np.rint(_median_from_hist(h))) for h in st["length_hist"]], dtype=np.int64),
            "value_range": (lo, hi, absmin) if np.isfinite(absmin) else None,
        }
        return PriorEstimate(st["counts"], cost, total, {"stats": stats, "dtype": np.dtype(Xd.dtype)})

    # ---------------------------------------------------------------- transform
    def quantize(self, X):
        """Cluster of each row of ``X`` (``psi(b)`` of eq. 21).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_users, n_items)

        Returns
        -------
        labels : ndarray of shape (n_users,)
        """
        check_is_fitted(self)
        X, _, _ = self._check_X(X, reset=False)
        return self._quantize(X.tocsr() if sp.issparse(X) else np.asarray(X))

    def _check_space_unchanged(self):
        """``metric`` / ``space`` changed by ``set_params`` after fit: say so (refit), before any distance.

        The fitted centres live in the space of the fit: the taste space (``embedding_``) or the
        input space (raw, binarized for Hamming). Measuring them in another one failed deep in
        numpy ("matmul: ... mismatch in its core dimension") or with "no attribute 'embedding_'".
        """
        fitted_taste = getattr(self, "embedding_", None) is not None
        space = self._space()
        if (space == "taste") != fitted_taste or (
                space == "hamming" and not np.isin(self.cluster_centers_, (0.0, 1.0)).all()):
            raise ValueError(
                f"metric={self.metric!r}, space={self.space!r} is not the space this mapper was fitted in "
                f"({'the taste space' if fitted_taste else 'the input space'}); its clusters cannot be "
                "measured there: call fit again after set_params"
            )

    def _quantize(self, Xc):
        self._check_space_unchanged()
        labels = np.empty(Xc.shape[0], dtype=np.int64)
        for start, stop in row_chunks(Xc.shape[0]):
            E = self._embed(Xc[start:stop], owned=True)
            labels[start:stop] = self._nearest_centers(E)
        return labels

    def _warn_off_scale(self, X):
        """Warn when ``X`` holds ratings on another scale than ``rating_range_`` (the labeled users' at fit).

        The clusters were measured on that scale: a user rating on another (1 to 50 for a mapper fitted on
        1 to 5) joins whichever cluster is nearest on it, silently. The release keeps its leakage (a
        function of the cluster only), so this is a warning, not an error. A rating within one width of the
        range beyond it (up to 9 or down to -3 for 1 to 5) is taken for one the labeled users happened not
        to give, not for another scale. ``metric="hamming"`` reads only which items were rated.
        """
        lo, hi = self.rating_range_
        if self._space() == "hamming" or lo == hi == 0.0:
            return
        width = hi - lo if hi > lo else max(abs(hi), 1.0)
        data = X.data if sp.issparse(X) else np.asarray(X)[np.asarray(X) != 0]
        out = (data < lo - width) | (data > hi + width)
        if np.any(out):
            vals = data[out]
            _dask.warn(
                self,
                f"X holds {int(out.sum())} rating(s) far outside the range the mapper was fitted on ({lo:g} to "
                f"{hi:g}), from {float(vals.min()):g} to {float(vals.max()):g}: its clusters were measured on that "
                "scale, so these users join whichever cluster is nearest (their release keeps its leakage, not its "
                "usefulness); transform ratings on the scale of fit",
                UserWarning, key="off-scale")

    def _profiles_as(self, dtype):
        """``release_profiles_`` as an ``X`` of ``dtype`` holds them (see ``ratings_in_dtype``): rounded, never
        to 0, for an integer or bool dtype; refused when ``dtype`` cannot hold them. float16 (which scipy's
        sparse matrices cannot store) stays float64 here: the caller casts the dense rows it releases."""
        P = self.release_profiles_.copy()
        P.data = ratings_in_dtype(P.data, dtype, what="released ratings",
                                  source="on the scale the mapper was fitted on")
        return P.astype(np.float64 if np.dtype(dtype) == np.float16 else dtype, copy=False)

    def transform(self, X):
        """Release each row through the mapping (eq. 21).

        Every user gets ``c = psi(b)``, a draw ``c_hat ~ mapping_[c]`` from the
        privacy random source, and the row ``release_profiles_[c_hat]``: a
        function of ``c_hat`` alone, so ``I(A; output) <= I(A; C_hat)`` by the
        data-processing inequality. Users with no ratings are embedded like
        everyone else (at the empty-user point), join the nearest cluster and
        go through the mapping too: an empty input row is never passed through
        unchanged, so being empty cannot leak more than any other profile.
        The fitted arrays are read-only, and one assigned anew or edited after
        fit is refused (ValueError naming it): ``leakage_`` holds for fit's.

        Parameters
        ----------
        X : {array-like, sparse matrix} or dask collection of shape (n_users, n_items)
            Any sparse format is accepted (CSR internally); the output has the
            input's format and dtype (profiles are rounded for an integer or bool
            dtype, never to 0 = not rated; float16 is computed in float64). A dtype
            that cannot hold the released ratings (bool for ratings 1-5) is refused.
            Sparse input is processed in row chunks and never densified. A dask
            collection is released lazily, block by block.

        Returns
        -------
        X_released : {ndarray, sparse matrix, DataFrame} of shape (n_users, n_items)
            A pandas DataFrame (dense or sparse) gives a DataFrame with its index
            and columns; a dense one holds the dtype an array release has.
        """
        if _dask.is_dask_collection(X):
            return _dask.transform(self, X)
        check_is_fitted(self)
        self._check_release_state()
        frame = X if is_sparse_frame(X) else None
        # a dense DataFrame stays one too (its index and columns: the users and items), as on the dask path
        dense_frame = X if frame is None and _is_pandas_frame(X) else None
        X, fmt, dtype = self._check_X(X, reset=False)
        self._warn_off_scale(X)
        Xc = X.tocsr() if sp.issparse(X) else np.asarray(X)
        c_hat = self._sample(self._quantize(Xc), check_random_source(self.random_state))
        profiles = self._profiles_as(dtype)
        if frame is not None:  # a sparse DataFrame stays one (same index and columns), never densified
            return sparse_frame_like(profiles[c_hat], frame)
        if fmt is None:
            out = profiles.toarray()[c_hat].astype(dtype, copy=False)
            if dense_frame is not None:
                import pandas as pd

                released = pd.DataFrame(out, index=dense_frame.index, columns=dense_frame.columns, copy=False)
                if nullable_numpy_dtype(dense_frame) is not None:
                    # pandas' nullable integer columns stay nullable, as on the dask path (_release_meta): the
                    # same frame came back as int64 in memory and Int64 from dask
                    released = released.astype(self._release_meta(dense_frame.iloc[:0]).dtypes.to_dict())
                return released
            return out
        out = profiles[c_hat]
        X_is_array = isinstance(X, sp.sparray)
        if X_is_array and not isinstance(out, sp.sparray):
            out = sp.csr_array(out)
        elif not X_is_array and isinstance(out, sp.sparray):
            out = sp.csr_matrix(out)
        return out.asformat(fmt) if fmt != "csr" else out

    def _release_meta(self, meta):
        """The released blocks' dtypes: a dense DataFrame's rows are released as the in-memory ``transform``
        releases them, one numpy dtype for every column (a categorical column read as its categories' dtype, an
        object column as float64); a frame with pandas' nullable integer columns keeps them, other inputs their
        own dtype. The partitions of a dask DataFrame were cast to the input's dtypes: a categorical column turned
        every released rating outside its categories into NaN."""
        import pandas as pd

        if not isinstance(meta, pd.DataFrame) or is_sparse_frame(meta) or nullable_numpy_dtype(meta) is not None:
            return meta
        dtypes = [d.categories.dtype if isinstance(d, pd.CategoricalDtype) else d for d in meta.dtypes]
        if not dtypes:
            return meta
        if any(not isinstance(d, np.dtype) or d == object for d in dtypes):
            dtype = np.dtype(np.float64)  # what as_float_if_object makes of them
        else:
            dtype = np.result_type(*dtypes)
        return meta.astype(dtype)

    # ---------------------------------------------------------------- persistence
    def _encode_attribute(self, name, value):
        if name == "embedding_":
            return value.get_state()
        if name == "rating_range_":
            return [float(v) for v in value]
        return super()._encode_attribute(name, value)

    def _decode_attribute(self, name, value):
        if name == "embedding_":
            return TasteEmbedding.from_state(value, where="fitted.embedding_")
        if name == "rating_range_":
            if not (isinstance(value, (list, tuple)) and len(value) == 2
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
                raise ValueError(f"fitted.rating_range_ must be two numbers (lowest, highest), got {value!r:.60}")
            return tuple(float(v) for v in value)
        return super()._decode_attribute(name, value)

    def _check_fitted_state(self):
        """The shared checks and claims, then the profiles' mixture weights against ``prior_`` and ``mapping_``."""
        self._upgrade_distortion_figures()
        super()._check_fitted_state()
        weights = getattr(self, "profile_weights_", None)
        if weights is not None:
            expected = self._profile_weights()
            if (_matrix(weights, "profile_weights_").shape != expected.shape
                    or np.max(np.abs(weights - expected)) > 1e-9):
                raise ValueError("fitted.profile_weights_ are not the mixture weights p(c | c_hat) recomputed "
                                 f"from prior_ and mapping_ (profile={self.profile!r})")

    def _upgrade_distortion_figures(self):
        """A file written before the distortions were weighted by the labeled users' cluster shares
        (:meth:`_distortion_weights`): its ``distortion_``, ``center_distortion_`` and ``smallest_delta_`` are all
        three the smoothed ``prior_``'s. They are recomputed (with a ``UserWarning``) so that the claims and the
        ``delta`` budget are then checked over the labeled users; any other figure is left to the checks."""
        try:
            old = {"distortion_": expected_distortion(self.prior_, self.mapping_, self.cost_matrix_),
                   "center_distortion_": expected_distortion(self.prior_, self.mapping_, self.center_cost_matrix_)}
            C = np.asarray(self.cost_matrix_, dtype=np.float64)
            old["smallest_delta_"] = float(np.sum(np.asarray(self.prior_).sum(axis=0)
                                                  * np.where(np.isfinite(C), C, np.inf).min(axis=1)))
            new = self._figures()
        except Exception:  # a malformed state: the checks that follow name what is wrong
            return
        got = {name: getattr(self, name, None) for name in old}
        if not all(isinstance(v, (float, np.floating)) and abs(float(v) - old[n]) <= 1e-9 * max(1.0, abs(old[n]))
                   for n, v in got.items()):
            return
        if all(abs(float(got[n]) - new[n]) <= 1e-9 * max(1.0, abs(new[n])) for n in old):
            return
        delta = getattr(self, "delta", None)
        if delta is not None and new["distortion_"] > delta + _BUDGET_TOL * max(1.0, delta) \
                and float(got["distortion_"]) <= delta + _BUDGET_TOL * max(1.0, delta):
            # said as what it is, not as the false claim the budget check below would take it for
            raise ValueError(
                f"the file was fitted by an earlier privrelease, which weighted the distortion by the smoothed "
                f"prior_: its mapping met delta = {delta!r} under those weights ({float(got['distortion_']):.6g}) "
                f"but costs the labeled users {new['distortion_']:.6g} on average, above the budget; refit the "
                "mapper with this version (its privacy figures are unchanged)")
        warnings.warn(f"the file's distortion_ ({float(got['distortion_']):.6g}) was weighted by the smoothed "
                      f"prior_ (an earlier privrelease); recomputed over the labeled users' cluster shares: "
                      f"{new['distortion_']:.6g}", UserWarning, stacklevel=user_stacklevel())
        for n in old:
            setattr(self, n, new[n])
        res = getattr(self, "solver_result_", None)
        if res is not None and getattr(res, "mapping", None) is not None:
            try:
                before = float(res.distortion)
                was_old = abs(before - float(expected_distortion(self.prior_, res.mapping, self.cost_matrix_))) \
                    <= 1e-9 * max(1.0, abs(before))
            except Exception:  # a malformed result: the checks that follow name what is wrong
                return
            if was_old:  # the engine's figure was weighted the same way: restated over the labeled users too;
                # its certificate's distortion bound and gap were under the old weights: dropped, not restated
                cert = {k: v for k, v in dict(res.certificate or {}).items()
                        if k not in ("distortion_lower_bound", "distortion_gap", "distortion_tolerance")}
                self.solver_result_ = dataclasses.replace(res, distortion=self._solver_distortion(res.mapping),
                                                          certificate=cert)

    def _check_heldout(self):
        """The held-out rule's figures: four arrays of one length, a grid of integers >= 2, and ``n_clusters_``
        no larger than the candidate the rule picks from them (empty clusters may be dropped)."""
        names = ("heldout_n_clusters_", "heldout_leakage_excess_", "heldout_noise_", "heldout_distortion_")
        present = [getattr(self, n, None) is not None for n in names]
        if not any(present):
            if self.n_clusters == "heldout":
                raise ValueError("fitted.heldout_n_clusters_ is missing: n_clusters='heldout' records its figures")
            return
        if not all(present):
            raise ValueError(f"fitted.{names[present.index(False)]} is missing beside the other held-out figures")
        grid = getattr(self, names[0])
        if (not isinstance(grid, np.ndarray) or grid.ndim != 1 or grid.size == 0 or grid.dtype.kind not in "iu"
                or np.any(grid < 2) or np.any(np.diff(grid) <= 0)):
            raise ValueError(f"fitted.heldout_n_clusters_ must be increasing integers >= 2, got {grid!r:.80}")
        _check_figures_like(self, names)
        chosen = int(grid[_heldout_choice(self.heldout_leakage_excess_, self.heldout_noise_,
                                          self.heldout_distortion_, self.heldout_tolerance)])
        coarse = getattr(self, "coarse_centers_", None)
        k = self.n_clusters_ if coarse is None else getattr(coarse, "shape", (self.n_clusters_,))[0]
        if k > chosen:
            what = "n_clusters_" if coarse is None else "coarse_centers_ (the cells before class_bins cut them)"
            raise ValueError(f"fitted.{what} = {k} but the held-out figures choose {chosen} "
                             f"clusters (heldout_tolerance={self.heldout_tolerance!r})")

    def _check_class_removal_state(self, n_dims):
        """``class_removal_`` and the partition it implies: a share in [0, 1], the parameter's value (or the
        held-out figures' choice), orthonormal ``attribute_directions_`` in the clustering space, present
        exactly when the share is above 0 (files written before ``class_removal``: the full removal)."""
        V = getattr(self, "attribute_directions_", None)
        if V is not None:
            if not isinstance(V, np.ndarray) or V.ndim != 2 or not np.all(np.isfinite(V)):
                raise ValueError(f"fitted.attribute_directions_ must be a 2-D array of finite numbers, got {V!r:.60}")
            if V.shape[0] and (V.shape[1] != n_dims
                               or np.max(np.abs(V @ V.T - np.eye(V.shape[0]))) > 1e-8):
                raise ValueError(f"fitted.attribute_directions_ must be orthonormal rows of {n_dims} coordinates "
                                 f"(the clustering space), got shape {V.shape}")
        has_dirs = V is not None and V.shape[0] > 0
        lam = getattr(self, "class_removal_", None)
        if lam is None:
            if self.class_removal != 1.0 and has_dirs:
                raise ValueError(f"fitted.class_removal_ is missing: class_removal={self.class_removal!r} "
                                 "records the share removed")
            return
        if isinstance(lam, bool) or not isinstance(lam, Real) or not 0.0 <= lam <= 1.0:
            raise ValueError(f"fitted.class_removal_ must be a number in [0, 1], got {lam!r:.60}")
        if has_dirs and lam == 0.0:
            raise ValueError("fitted.class_removal_ = 0 but attribute_directions_ has rows: a share of 0 keeps "
                             "no between-class directions (plain k-means)")
        if not has_dirs and lam != 0.0:
            raise ValueError(f"fitted.class_removal_ = {lam!r} but there are no attribute_directions_ to remove "
                             "a share of")
        names = ("class_removal_grid_", "class_removal_excess_", "class_removal_noise_", "class_removal_distortion_")
        chosen = _check_rule_figures(self, "class_removal", names, _REMOVAL_GRID,
                                     lambda excess, noise, dist, tol: _removal_choice(excess, dist, tol))
        if chosen is not None:
            # (with no directions left to remove, e.g. a one-dimensional space, the share is 0 whatever the
            # figures chose: nothing was removed)
            if lam != chosen and has_dirs:
                raise ValueError(f"fitted.class_removal_ = {lam!r} but the held-out figures choose {chosen!r} "
                                 f"(heldout_tolerance={self.heldout_tolerance!r})")
        elif self.class_removal == "heldout":
            if has_dirs:
                raise ValueError("fitted.class_removal_grid_ is missing: class_removal='heldout' records its figures")
        elif has_dirs and lam != float(self.class_removal):
            raise ValueError(f"fitted.class_removal_ = {lam!r} but class_removal={self.class_removal!r}")

    def _check_class_directions_state(self, n_dims):
        """``n_class_directions_`` is the number of ``attribute_directions_``; with ``class_directions="significant"``
        (or ``"auto"`` resolved to it) ``class_direction_eigenvalues_`` and ``class_direction_threshold_`` choose it:
        the eigenvalues above the threshold, at most ``n_dims - 1``; ``"all"`` records none (files written before
        ``class_directions``: none of the three)."""
        V = getattr(self, "attribute_directions_", None)
        n_dirs = 0 if V is None else V.shape[0]
        n = getattr(self, "n_class_directions_", None)
        if n is not None and (isinstance(n, bool) or not isinstance(n, Integral) or n != n_dirs):
            raise ValueError(f"fitted.n_class_directions_ = {n!r:.60} but attribute_directions_ has {n_dirs} rows")
        theta = getattr(self, "class_direction_eigenvalues_", None)
        threshold = getattr(self, "class_direction_threshold_", None)
        if (theta is None) != (threshold is None):
            raise ValueError("fitted.class_direction_eigenvalues_ and class_direction_threshold_ are saved together "
                             "(class_directions='significant'), got one of them")
        if theta is None:
            if self.class_directions == "significant" and n_dirs:
                raise ValueError(f"fitted.attribute_directions_ has {n_dirs} rows but class_directions='significant' "
                                 "keeps only the directions whose class_direction_eigenvalues_ exceed "
                                 "class_direction_threshold_, and neither is saved")
            return
        if self.class_directions == "all":
            raise ValueError("fitted.class_direction_eigenvalues_ is saved but class_directions='all' removes every "
                             "between-class direction without a test")
        theta = np.asarray(theta)
        if (theta.ndim != 1 or theta.dtype.kind != "f" or not np.all(np.isfinite(theta))
                or isinstance(threshold, bool) or not isinstance(threshold, Real) or not np.isfinite(threshold)):
            raise ValueError("fitted.class_direction_eigenvalues_ must be a 1-D array of finite numbers and "
                             f"class_direction_threshold_ a finite number, got {theta!r:.60} and {threshold!r:.60}")
        n_classes = int(np.shape(self.prior_)[0])
        if (theta.size > max(n_classes - 1, 0) or np.any(theta < -1e-12) or np.any(theta > 1.0 + 1e-12)
                or np.any(np.diff(theta) > 1e-12)):
            # theta_j = lambda_j / (1 + lambda_j) of T^-1 B: at most n_classes - 1 of them, in [0, 1], largest first
            raise ValueError(f"fitted.class_direction_eigenvalues_ = {theta!r:.80} are not the eigenvalues of T^-1 B "
                             f"the fit computes: expected at most {max(n_classes - 1, 0)} numbers in [0, 1], largest "
                             "first")
        chosen = min(int(np.sum(theta > threshold)), max(n_dims - 1, 0))
        if chosen != n_dirs:
            raise ValueError(f"fitted.attribute_directions_ has {n_dirs} rows but {chosen} of the "
                             f"class_direction_eigenvalues_ exceed class_direction_threshold_ = {threshold!r:.60}")

    def _check_class_bins_choice(self, has_dirs):
        """``class_bins_`` and the held-out figures of ``class_bins="heldout"``; returns the bins the cells were cut
        into by the parameter's value (or the figures' choice). ``class_bins_`` is that number where there are
        between-class directions to cut along, 1 where there are none; files written before it: the parameter."""
        chosen = getattr(self, "class_bins_", None)
        heldout = self.class_bins == "heldout"
        names = ("class_bins_grid_", "class_bins_excess_", "class_bins_noise_", "class_bins_distortion_")
        if chosen is not None and (isinstance(chosen, bool) or not isinstance(chosen, Integral) or chosen < 1):
            raise ValueError(f"fitted.class_bins_ must be an integer >= 1, got {chosen!r:.60}")
        rule = _check_rule_figures(self, "class_bins", names, _BINS_GRID, _bins_choice)
        if rule is not None:
            if chosen is not None and chosen != rule:
                raise ValueError(f"fitted.class_bins_ = {chosen!r} but the held-out figures choose {rule} bins "
                                 f"(heldout_tolerance={self.heldout_tolerance!r})")
        elif heldout and has_dirs:
            raise ValueError("fitted.class_bins_grid_ is missing: class_bins='heldout' records its figures")
        if chosen is None:
            if heldout:
                raise ValueError("fitted.class_bins_ is missing: class_bins='heldout' records the bins it chose")
            return int(self.class_bins)
        if not has_dirs and chosen != 1:
            raise ValueError(f"fitted.class_bins_ = {chosen!r} but there are no attribute_directions_ to cut along "
                             "(1: the cells of the clustering)")
        if has_dirs and not heldout and chosen != self.class_bins:
            raise ValueError(f"fitted.class_bins_ = {chosen!r} but class_bins={self.class_bins!r}")
        return chosen

    def _check_class_bins_state(self, n_dims):
        """The cut cells of ``class_bins`` above 1: ``coarse_centers_`` (finite, in the clustering space),
        ``split_thresholds_`` (finite, one row of ``class_bins - 1`` non-decreasing thresholds per coarse cell) and
        ``fine_cells_`` (one row of ``class_bins`` fine cells per coarse cell, numbered 0 .. ``n_clusters_ - 1``
        by coarse cell, then bin: every fine cell in one coarse cell, its bins adjacent), present exactly when
        the cells were cut (``class_bins`` above 1 and between-class directions to cut along); with
        ``class_bins="heldout"`` the bins are ``class_bins_``, the choice its figures make
        (:meth:`_check_class_bins_choice`)."""
        names = ("coarse_centers_", "split_thresholds_", "fine_cells_")
        present = [getattr(self, n, None) is not None for n in names]
        V = getattr(self, "attribute_directions_", None)
        has_dirs = V is not None and V.shape[0] > 0
        bins = self._check_class_bins_choice(has_dirs)
        what = "class_bins_" if self.class_bins == "heldout" else "class_bins"
        if not any(present):
            if bins > 1 and has_dirs:
                raise ValueError(f"fitted.fine_cells_ is missing: {what}={bins!r} cuts each attribute-free "
                                 "cell along the first between-class direction")
            return
        if not all(present):
            raise ValueError(f"fitted.{names[present.index(False)]} is missing beside the other cut cells")
        if bins == 1 or not has_dirs:
            raise ValueError(f"fitted.fine_cells_ is present but {what}={bins!r}"
                             + ("" if bins == 1 else " and there are no attribute_directions_ to cut along"))
        coarse = _matrix(self.coarse_centers_, "coarse_centers_")
        kc = coarse.shape[0]
        if coarse.shape[1] != n_dims:
            raise ValueError(f"fitted.coarse_centers_ has {coarse.shape[1]} coordinates, expected {n_dims} "
                             "(the clustering space)")
        thr = self.split_thresholds_
        if not isinstance(thr, np.ndarray) or thr.shape != (kc, bins - 1) or thr.dtype.kind != "f":
            raise ValueError(f"fitted.split_thresholds_ must be a float array of shape {(kc, bins - 1)} (one row "
                             f"of class_bins - 1 thresholds per coarse cell), got {getattr(thr, 'shape', None)}")
        if not np.all(np.isfinite(thr)):
            bad = np.argwhere(~np.isfinite(thr))[0]
            raise ValueError(f"fitted.split_thresholds_ has a non-finite entry at {tuple(int(i) for i in bad)}: "
                             f"{float(thr[tuple(bad)])!r}")
        if np.any(np.diff(thr, axis=1) < 0):
            raise ValueError("fitted.split_thresholds_ must not decrease along a row (the bins of a cell in order)")
        fine = self.fine_cells_
        if not isinstance(fine, np.ndarray) or fine.shape != (kc, bins) or fine.dtype.kind not in "iu":
            raise ValueError(f"fitted.fine_cells_ must be an integer array of shape {(kc, bins)} (one fine cell per "
                             f"bin of each coarse cell), got {getattr(fine, 'shape', None)}")
        steps_in = np.diff(fine, axis=1)
        steps_across = fine[1:, 0] - fine[:-1, -1]
        if (fine[0, 0] != 0 or fine[-1, -1] != self.n_clusters_ - 1 or np.any((steps_in != 0) & (steps_in != 1))
                or np.any(steps_across != 1)):
            raise ValueError(f"fitted.fine_cells_ must number the n_clusters_={self.n_clusters_} fine cells "
                             "0, 1, ... by coarse cell, then bin (each fine cell adjacent bins of one coarse cell)")

    def _check_structure(self):
        self._check_heldout()
        k = self.n_clusters_
        if isinstance(k, bool) or not isinstance(k, Integral) or k != self.mapping_.shape[0]:
            raise ValueError(f"fitted.n_clusters_ = {k!r} but mapping_ has {self.mapping_.shape[0]} rows")
        centers = _matrix(self.cluster_centers_, "cluster_centers_")
        if centers.shape[0] != k:
            raise ValueError(f"fitted.cluster_centers_ has {centers.shape[0]} rows but mapping_ has {k}")
        space = self._space()
        if space == "taste":
            if not isinstance(getattr(self, "embedding_", None), TasteEmbedding):
                raise ValueError("fitted.embedding_ is missing: the taste space needs it")
            if self.embedding_.n_items_ != self.n_features_in_:
                raise ValueError(f"fitted.embedding_ is for {self.embedding_.n_items_} items, expected "
                                 f"n_features_in_={self.n_features_in_}")
            if centers.shape[1] != self.embedding_.basis_chol_.shape[0]:
                raise ValueError(f"fitted.cluster_centers_ has {centers.shape[1]} coordinates, the embedding "
                                 f"gives {self.embedding_.basis_chol_.shape[0]}")
        elif centers.shape[1] != self.n_features_in_:
            raise ValueError(f"fitted.cluster_centers_ has {centers.shape[1]} columns, expected "
                             f"n_features_in_={self.n_features_in_}")
        self._check_class_removal_state(centers.shape[1])
        self._check_class_directions_state(centers.shape[1])
        self._check_class_bins_state(centers.shape[1])
        n_out = k + (self.release == "profile")
        if self.mapping_.shape[1] != n_out:
            raise ValueError(f"fitted.mapping_ has {self.mapping_.shape[1]} columns, expected {n_out} output symbols")
        pts = getattr(self, "output_points_", None)
        if pts is not None and _matrix(pts, "output_points_").shape != centers.shape:
            raise ValueError(f"fitted.output_points_ has shape {pts.shape}, expected {centers.shape} like "
                             "cluster_centers_ (one point per non-empty output symbol)")
        moved = pts is not None and not np.array_equal(pts, centers)
        if moved and space == "hamming":
            raise ValueError("fitted.output_points_ differ from the cluster centres, but the hamming metric is "
                             "never refined")
        n_ref = getattr(self, "n_refine_", 0)
        if isinstance(n_ref, bool) or not isinstance(n_ref, Integral) or not 0 <= n_ref <= self.n_refine:
            raise ValueError(f"fitted.n_refine_ = {n_ref!r}, expected an integer between 0 and n_refine="
                             f"{self.n_refine!r}")
        if moved and n_ref == 0:
            raise ValueError("fitted.output_points_ differ from the cluster centres but n_refine_ = 0 (no "
                             "refinement was kept)")
        C = _matrix(self.center_cost_matrix_, "center_cost_matrix_")
        expected = self._center_costs()
        if C.shape != expected.shape or np.max(np.abs(C - expected)) > 1e-9 * max(1.0, float(np.abs(expected).max())):
            raise ValueError("fitted.center_cost_matrix_ is not the distances between the stored cluster_centers_ "
                             "and the output points")
        P = self.release_profiles_
        if not sp.issparse(P) or P.shape != (n_out, self.n_features_in_):
            raise ValueError(f"fitted.release_profiles_ has shape {getattr(P, 'shape', None)}, expected "
                             f"{(n_out, self.n_features_in_)} (one profile per output symbol)")
        if P.format != "csr":
            # fit stores CSR and transform indexes its rows: another format loaded, then failed in transform
            # ("'coo_matrix' object is not subscriptable") or ("dok") on an attribute the file named
            raise ValueError(f"fitted.release_profiles_ is stored as {P.format!r}, expected 'csr' (what fit stores)")
        canon = P.copy()
        canon.sum_duplicates()
        if canon.nnz != P.nnz:
            # an item stored twice in a profile: its rating was released as their sum (8.47 on a 1-5 scale)
            raise ValueError(f"fitted.release_profiles_ stores {P.nnz - canon.nnz} (output, item) pair(s) more than "
                             "once; a profile holds one rating per item")
        data = np.asarray(P.data, dtype=np.float64)
        if np.any(data == 0):
            # fit never stores a 0 (it means "not rated"): profiles of stored zeros released every user as nothing
            raise ValueError(f"fitted.release_profiles_ stores {int(np.sum(data == 0))} zero rating(s); 0 means "
                             "'not rated' and a profile never stores it")
        if not np.all(np.isfinite(data)):
            raise ValueError(f"fitted.release_profiles_ holds a non-finite rating "
                             f"({plain_value(data[~np.isfinite(data)][0])!r})")
        lo, hi = self.rating_range_
        if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
            raise ValueError(f"fitted.rating_range_ = {plain_value(self.rating_range_)!r} is not a finite range")
        if space == "hamming":
            bad = data[data != 1]  # (stored zeros refused above)
            if bad.size:
                raise ValueError(f"fitted.release_profiles_ holds {plain_value(bad[0])!r}; binarized releases hold "
                                 "0 or 1")
        else:
            bad = data[(data < lo) | (data > hi)]
            if bad.size:
                raise ValueError(f"fitted.release_profiles_ holds the rating {plain_value(bad[0])!r}, outside the "
                                 f"rating scale [{plain_value(lo)!r}, {plain_value(hi)!r}] of the training users")
        emp = _matrix(self.empirical_prior_, "empirical_prior_")
        if emp.shape != self.prior_.shape or np.any(emp < 0) or abs(emp.sum() - 1.0) > 1e-9:
            raise ValueError("fitted.empirical_prior_ must be a distribution of the prior_'s shape")
        for name in ("quantization_radius_", "quantization_distortion_"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise ValueError(f"fitted.{name} must be a finite number >= 0, got {v!r:.60}")
        if moved:
            return  # the costs are to the refined points; the users' distances to their centres are not stored
        qd = float(np.sum(emp.sum(axis=0) * np.diag(self.cost_matrix_[:, :k])))
        if abs(self.quantization_distortion_ - qd) > 1e-9 * max(1.0, qd):
            raise ValueError(f"fitted.quantization_distortion_ = {self.quantization_distortion_!r} does not hold: "
                             f"the stored costs give {qd!r}")
        if self.quantization_radius_ < float(np.max(np.diag(self.cost_matrix_[:, :k])[emp.sum(axis=0) > 0],
                                                    initial=0.0)) - 1e-9:
            raise ValueError("fitted.quantization_radius_ is smaller than a cluster's mean distance to its centre")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        tags.non_deterministic = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _check_rating_scale(X):
    """Refuse ratings whose squared distances over ``X.shape[1]`` items would overflow float64."""
    data = X.data if sp.issparse(X) else np.asarray(X)
    top = float(np.abs(data).max()) if data.size else 0.0
    if top > math.sqrt(np.finfo(np.float64).max / max(X.shape[1], 1)):
        raise ValueError(
            f"X holds a value as large as {top!r}: squared distances between users over {X.shape[1]} "
            "items would overflow float64; ratings are expected on a bounded scale (rescale them)"
        )


def _checked_block(Xb, start):
    """One block of a dask fit, refused as an in-memory fit refuses ``X`` (NaN, infinity, a value whose squared
    distances overflow), its rows named in the whole collection; returned as it is.

    Only the rows drawn for k-means used to be checked: a NaN in another labeled row came out of the full pass as
    "distortion must not contain NaN", or (``metric="hamming"``) was counted as a rating without a word.
    """
    refuse_nan_ratings(Xb, row_offset=start)
    C = Xb.tocoo() if sp.issparse(Xb) else None
    data = C.data if C is not None else np.asarray(Xb)
    if data.dtype.kind == "f" and not np.isfinite(data).all():
        if C is not None:
            k = int(np.flatnonzero(~np.isfinite(C.data))[0])
            r, c, v = int(C.row[k]), int(C.col[k]), data[k]
        else:
            r, c = (int(i) for i in np.argwhere(~np.isfinite(data))[0])
            v = data[r, c]
        raise ValueError(f"Input X contains infinity or a value too large for dtype('float64'): {plain_value(v)!r} "
                         f"at row {start + r}, column {c} (ratings must be finite)")
    _check_rating_scale(Xb)
    return Xb


def _bins_in_cells(t, cells, thresholds):
    """The bin of each coordinate ``t[i]`` in its cell ``cells[i]``: how many of the cell's (non-decreasing)
    ``thresholds[cells[i]]`` it exceeds, by bisection, cell by cell. Comparing every row with every threshold
    (``t[:, None] > thresholds[cells]``) held rows x (class_bins - 1) booleans: 919 MB for 16,400 users at
    ``class_bins=5000``."""
    out = np.zeros(t.shape[0], dtype=np.int64)
    for c in np.unique(cells):
        rows = np.flatnonzero(cells == c)
        out[rows] = np.searchsorted(thresholds[c], t[rows], side="left")  # thresholds[c] < t: t above them
    return out
