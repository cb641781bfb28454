"""Priors p(a, c) estimated from labeled samples: counts, or Gaussian KDE per class."""

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from ..utils import check_number, check_random_source
from ..utils._validation import (as_int64_codes, check_allocation, check_label_kinds, check_same_index, check_table,
                                 plain_value, undisclosed_mask)
from ._checks import _refuse_strings

__all__ = ["empirical_prior", "kde_prior", "KDEPrior"]


def _codes(x, name, n):
    if np.ndim(x) != 1:
        raise ValueError(f"{name} must be 1-D integer codes, got shape {np.shape(x)}")
    x = as_int64_codes(x, name, "integer codes 0..n-1")  # as given: it names a bad value as the caller wrote it
    if x.size and x.min() < 0:
        raise ValueError(f"{name} codes must be >= 0, got {plain_value(x.min())!r}")
    if n is None:
        n = int(x.max()) + 1 if x.size else 0
    else:
        n = check_number(n, f"n_{name}", low=1, integer=True)
        if x.size and x.max() >= n:
            raise ValueError(f"{name} has code {plain_value(x.max())!r} but n_{name}={n} (codes must be < n_{name})")
    return x, n


def empirical_prior(private, public, *, n_private=None, n_public=None, smoothing=0.0):
    """Empirical joint ``q(a, c) = (#{a_i = a, c_i = c} + s) / (n + s |A||C|)`` (paper Prop. 1).

    Parameters
    ----------
    private, public : array-like of int, shape (n_samples,)
        Integer codes of the private attribute and of the public symbol per sample.
        Two pandas Series are paired by position only when their indexes agree (or one is
        the default ``0, 1, 2 ...`` and they do not hold the same labels in another order);
        differently indexed ones are refused (align them first).
    n_private, n_public : int, optional
        Alphabet sizes (default: largest code + 1).
    smoothing : float, default=0.0
        Additive (Laplace) smoothing ``s >= 0`` added to every cell.

    Returns
    -------
    ndarray of shape (n_private, n_public), summing to 1.
        With no samples, the smoothing alone: the uniform prior over ``n_private`` x
        ``n_public`` cells, which needs ``smoothing > 0`` and both alphabet sizes given
        (no samples and no sizes is refused: there is no alphabet to spread over).

    References
    ----------
    Salamatian et al., Proposition 1 (the empirical distribution).

    Examples
    --------
    >>> empirical_prior([0, 0, 1, 1], [0, 1, 1, 1])
    array([[0.25, 0.25],
           [0.  , 0.5 ]])
    """
    # pandas inputs are paired by position: a differently indexed pair (private.sort_values() beside public)
    # turned a fully revealing prior into an independent one
    check_same_index(private, public, "public", x_name="private")
    a, na = _codes(private, "private", n_private)
    c, nc = _codes(public, "public", n_public)
    if a.shape != c.shape:
        raise ValueError(f"private and public must have the same length, got {a.size} and {c.size}")
    s = check_number(smoothing, "smoothing", low=0.0)
    if a.size == 0 and s == 0:
        raise ValueError("empirical_prior needs at least one sample (or smoothing > 0)")
    if a.size == 0 and (n_private is None or n_public is None):
        # an empty (0, 0) array that does not sum to 1 was returned
        missing = " and ".join(n for n, v in (("n_private", n_private), ("n_public", n_public)) if v is None)
        raise ValueError(f"empirical_prior got no samples with smoothing={plain_value(s)!r}: a prior of the smoothing "
                         f"alone needs both alphabet sizes, got {missing}=None; give at least one sample, or "
                         "n_private and n_public (the prior is then uniform)")
    check_allocation(na * nc, f"n_private={na} x n_public={nc}: the prior")
    counts = np.zeros((na, nc))
    np.add.at(counts, (a, c), 1.0)
    # divided by the larger of 1 and s first: a huge smoothing (1e308) made the total overflow to inf and
    # the "prior" all zeros; the independent (uniform) prior it tends to is returned instead
    scale = max(s, 1.0)
    # in place: the memory check above counts one array (a stray code of 1e9 passed it, and the two temporaries of
    # ``counts / scale + s / scale`` then needed three times the memory it had checked)
    counts /= scale
    counts += s / scale
    counts /= counts.sum()
    return counts


def _check_points(values, name):
    """Points of ``kde_prior`` (``X`` or ``grid``) as a finite real 2-D float array (1-D: one feature).

    Complex values (:class:`~privrelease.exceptions.ComplexDataError`: the imaginary part was dropped),
    strings (parsed as numbers), datetimes and NaN / inf (scikit-learn's "Input X contains NaN" blamed
    ``X`` for a bad grid) are refused naming ``name``.
    """
    check_table(values, name)
    _refuse_strings(values, name, "numbers")
    try:
        P = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers, got {type(values).__name__}: {exc}") from None
    if P.ndim == 1:
        P = P[:, None]
    if P.ndim != 2:
        raise ValueError(f"{name} must be a finite 2-D array (n_points, n_features), got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(P)))} non-finite value(s) (for "
                         f"example {plain_value(P[~np.isfinite(P)][0])!r})")
    return P


#: kde_prior works in units of a power of two when the largest |x| is beyond 1e50 or below 1e-50
_UNIT_RANGE = 1e50

#: the bytes ``kde_prior(n_grid=)`` (or ``grid=``) holds per grid point at its peak: ``_GRID_PEAK_BYTES`` plus so
#: many per class (the class draws, the log-densities and scikit-learn's scoring temporaries) and per feature (the
#: points and their draws); measured 62 to 68 bytes a point per class at 200,000 points (2 or 5 classes, 1 or 2
#: features), rounded up.
#: The check counted 8 bytes per coordinate: 1/15 of the peak with 2 classes and 2 features
_GRID_PEAK_BYTES, _GRID_PEAK_BYTES_PER_CLASS, _GRID_PEAK_BYTES_PER_FEATURE = 16, 56, 16


class KDEPrior(NamedTuple):
    """Discretised KDE prior returned by :func:`kde_prior`.

    Attributes
    ----------
    prior : ndarray of shape (n_classes, n_points)
        Joint ``p(a, b_j)``; ``prior[a].sum() == p(a)`` (the class frequency).
    points : ndarray of shape (n_points, n_features)
        The finite set of points ``b_j`` the densities were discretised on.
    classes : ndarray of shape (n_classes,)
        The class labels, in the row order of ``prior``.
    bandwidths : ndarray of shape (n_classes,)
        The cross-validated bandwidth of each class's Gaussian KDE.
    """

    prior: np.ndarray
    points: np.ndarray
    classes: np.ndarray
    bandwidths: np.ndarray


def kde_prior(X, y, *, grid=None, n_grid=None, bandwidths=None, cv=5, random_state=None):
    """Joint prior over a finite set of points from one Gaussian KDE per class (paper Sec. VI-B).

    For each class ``a`` a Gaussian :class:`~sklearn.neighbors.KernelDensity` is
    fitted on that class's rows, its bandwidth chosen by ``GridSearchCV``
    (held-out log-likelihood, ``cv`` folds). The densities are then discretised
    on the points ``b_j``::

        p(a, b_j) = p(a) f_a(b_j) / sum_l f_a(b_l),     p(a) = class frequency,

    so the marginal of A is exactly the class frequencies.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite real numbers.
    y : array-like of shape (n_samples,)
        Private class of each sample. A pandas ``y`` indexed differently from a pandas
        ``X`` is refused (rows are paired by position). Users who did not disclose it
        (``-1``, NaN, None, ``""``: :func:`privrelease.utils.undisclosed_mask`) are
        dropped: they are no class, and the class frequencies ``p(a)`` count the
        disclosed users only.
    grid : array-like of shape (n_points, n_features), optional
        The points ``b_j``. When omitted: ``n_grid`` points drawn from the fitted
        mixture ``sum_a p(a) f_a`` if ``n_grid`` is given, else the distinct rows of X.
    n_grid : int, optional
        Number of points to draw when ``grid`` is omitted.
    bandwidths : array-like of float, optional
        Candidate bandwidths; default ``std * geomspace(0.02, 2, 25)`` with
        ``std`` the mean per-feature standard deviation of X.
    cv : int, default=5
        Folds of the bandwidth search (reduced to the class size for small classes).
    random_state : None, int or numpy Generator
        Only used to draw the ``n_grid`` points (not a privacy path).

    Returns
    -------
    KDEPrior
        Named tuple ``(prior, points, classes, bandwidths)``.

    References
    ----------
    Salamatian et al., Sec. VI-B (Iris: "gaussian kernel estimator, with bandwidth
    fitted through cross-validation, for each set of flower", then discretised).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (30, 2)), rng.normal(3, 1, (30, 2))]
    >>> y = np.r_[np.zeros(30), np.ones(30)]
    >>> kp = kde_prior(X, y, cv=3)
    >>> kp.prior.shape, round(float(kp.prior.sum()), 12)
    ((2, 60), 1.0)
    """
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KernelDensity

    check_same_index(X, y)  # rows are paired by position: a y.sort_values() gave each row another row's class
    X = _check_points(X, "X")
    if X.shape[0] < 2:
        raise ValueError(f"X must be a finite 2-D array with at least 2 rows, got shape {X.shape}")
    if np.shape(y) != (X.shape[0],):
        raise ValueError(f"y must have one label per row of X ({X.shape[0]}), got shape {np.shape(y)}")
    # the library's one rule for "not disclosed" (-1, NaN, None, "" ...): those users are dropped, they were a
    # class of their own (np.unique(y) made NaN or -1 a private value with its own KDE)
    labeled = ~undisclosed_mask(y)
    y = np.asarray(y, dtype=object)[labeled].tolist()
    check_label_kinds(y, "y")  # before numpy merges them: [1, '1', 0] became strings, [1, True, 0] integers
    y = np.asarray(y)
    if not labeled.all():
        X = X[labeled]
        if X.shape[0] < 2:
            raise ValueError(f"kde_prior needs at least 2 users who disclosed y, got {X.shape[0]} "
                             f"(of {labeled.size}; -1, NaN, None and '' mean not disclosed)")
    cv = check_number(cv, "cv", low=2, integer=True)
    classes, y_idx = np.unique(y, return_inverse=True)
    if bandwidths is not None:
        bandwidths = np.asarray(bandwidths, dtype=float).ravel()
        if bandwidths.size == 0 or np.any(~np.isfinite(bandwidths)) or np.any(bandwidths <= 0):
            raise ValueError(f"bandwidths must be positive finite numbers, got {bandwidths!r}")
    # coordinates of extreme magnitude are worked on in units of a power of two (exact; the discretised prior
    # does not depend on the unit): X.std of coordinates near 1e300 overflowed (the default bandwidths were
    # refused as "bandwidths must be positive finite numbers" though none was given), near 1e-300 it underflowed
    # to 0 (bandwidths 1e300 times the data's spread), and scikit-learn's kernel underflowed at such bandwidths
    top = float(np.abs(X).max())
    unit = 2.0 ** np.round(np.log2(top)) if top > _UNIT_RANGE or 0 < top < 1 / _UNIT_RANGE else 1.0
    X = X / unit
    std = float(np.mean(X.std(axis=0))) or 1.0
    bandwidths = std * np.geomspace(0.02, 2.0, 25) if bandwidths is None else bandwidths / unit
    kdes, bws = [], []
    for i, _ in enumerate(classes):
        Xa = X[y_idx == i]
        if Xa.shape[0] < 2:
            raise ValueError(f"class {plain_value(classes[i])!r} has {Xa.shape[0]} sample(s); a KDE needs at least 2")
        folds = min(cv, Xa.shape[0])
        gs = GridSearchCV(KernelDensity(kernel="gaussian"), {"bandwidth": bandwidths}, cv=folds)
        gs.fit(Xa)
        kdes.append(gs.best_estimator_)
        bws.append(gs.best_params_["bandwidth"])
    pa = np.bincount(y_idx, minlength=classes.size) / y_idx.size
    grid_bytes = (_GRID_PEAK_BYTES + _GRID_PEAK_BYTES_PER_CLASS * classes.size
                  + _GRID_PEAK_BYTES_PER_FEATURE * X.shape[1])
    if grid is not None:
        shape = getattr(grid, "shape", None)
        if isinstance(shape, tuple) and len(shape) == 2 and shape[1] == X.shape[1]:
            # before the checked float copy of the grid (a bare numpy MemoryError at 1e12 points; 6.5 s at 1e9)
            check_allocation(int(shape[0]), f"grid of {shape[0]} points x {shape[1]} feature(s): the densities of "
                             f"the {classes.size} classes", unit="grid points", itemsize=grid_bytes)
        points = _check_points(grid, "grid")
        if points.shape[1] != X.shape[1] or points.shape[0] == 0:
            raise ValueError(f"grid must have shape (n_points, {X.shape[1]}), got {np.shape(grid)}")
        # the densities of every class at every point, as for n_grid points (a grid of 10**8 points was a bare
        # MemoryError inside scikit-learn's scoring)
        check_allocation(points.shape[0], f"grid of {points.shape[0]} points x {points.shape[1]} feature(s): the "
                         f"densities of the {classes.size} classes", unit="grid points", itemsize=grid_bytes)
        points = points / unit
    elif n_grid is not None:
        n_grid = check_number(n_grid, "n_grid", low=1, integer=True)
        check_allocation(n_grid, f"n_grid={n_grid}: the grid points", unit="grid points", itemsize=grid_bytes)
        rs = check_random_source(random_state)
        comp = rs.categorical(np.tile(pa, (n_grid, 1)))
        points = np.empty((n_grid, X.shape[1]))
        for i, kde in enumerate(kdes):
            sel = comp == i
            if sel.any():
                points[sel] = kde.sample(int(sel.sum()), random_state=rs.spawn_seed())
    else:
        points = np.unique(X, axis=0)
    logf = np.stack([kde.score_samples(points) for kde in kdes])
    dead = np.flatnonzero(~np.any(np.isfinite(logf), axis=1) | np.any(np.isnan(logf), axis=1))
    if dead.size:
        # every log-density -inf (a bandwidth so small the kernel underflows at each point): the prior was all NaN
        i = int(dead[0])
        raise ValueError(f"the KDE of class {plain_value(classes[i])!r} (bandwidth {float(bws[i] * unit)!r}) has no "
                         f"finite density at any of the {points.shape[0]} grid point(s): its kernel underflows; "
                         "give larger bandwidths (or "
                         "leave bandwidths=None) or grid points closer to the data")
    cond = np.exp(logf - logsumexp(logf, axis=1, keepdims=True))
    prior = pa[:, None] * cond
    prior /= prior.sum()
    return KDEPrior(prior=prior, points=points * unit, classes=classes, bandwidths=np.asarray(bws) * unit)
