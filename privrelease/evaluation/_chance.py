"""The chance level of the folded AUC: what an attacker whose scores carry no information reports.

The folded AUC ``max(AUC, 1 - AUC)`` (:attr:`AttackResult.folded_auc`) is never below 0.5, so an uninformed attacker
scores ABOVE 0.5 on a finite set of users: its AUC scatters around 0.5 and folding keeps the upper half. With no
signal and no ties, ``n1 * n0 * AUC`` is the Mann-Whitney statistic ``U`` of ``n1`` positives against ``n0``
negatives under the null hypothesis (every ranking of the users equally likely), whose distribution is known
exactly (Mann & Whitney 1947): the expected folded AUC is ``0.5 + E|U - n0 n1 / 2| / (n0 n1)``.
"""

import functools
import math

import numpy as np
from scipy.special import ndtr

__all__ = ["chance_folded_auc"]

#: Largest ``min(n0, n1) * n0 * n1`` (smaller class x support of U: the work of the exact distribution) computed
#: exactly; beyond it, the normal approximation. 4e6 takes about 0.15 s once (cached per pair of class sizes).
_EXACT_BUDGET = 4e6
#: ... and the largest support of U (the length of its Fourier transform).
_EXACT_SUPPORT = 2 ** 20


def _mann_whitney_null(m, n):
    """Exact null distribution of the Mann-Whitney ``U`` of ``m`` against ``n`` untied observations.

    ``P(U = u)`` for ``u = 0 .. m n``: the number of rankings with ``U = u`` is the coefficient of ``q^u`` in the
    Gaussian binomial coefficient ``[m + n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)`` (the
    partitions of ``u`` into at most ``m`` parts of size at most ``n``), out of ``C(m + n, m)``. The product is
    evaluated at ``N`` points ``exp(i t_k)``, ``t_k = 2 pi (k + 1/2) / N``, ``N`` a power of two above ``m n``
    (nothing aliases, and no denominator vanishes: ``2 N`` never divides ``j (2 k + 1)`` for ``j < N``), where
    each normalised factor is a ratio of sines times a phase; the probabilities are its (shifted) discrete
    Fourier transform. Every partial product is a characteristic function (bounded by 1), the sines are taken
    of arguments reduced exactly in integers, and no step amplifies rounding: the probabilities agree with exact integer
    arithmetic to 1e-15 (the division by ``1 - q^i`` as a running sum amplified rounding without bound: 0.98
    for ``m = n = 271`` where the truth is 0.52).
    """
    m, n = min(m, n), max(m, n)
    N = 1 << (m * n).bit_length()  # a power of two > m n
    odd = 2 * np.arange(N // 2, dtype=np.int64) + 1  # 2 k + 1 for the first half of the points
    phi = np.ones(N // 2)
    for j in range(1, m + 1):
        num = np.sin(np.pi * (((n + j) * odd) % (4 * N)) / (2 * N))
        den = np.sin(np.pi * ((j * odd) % (4 * N)) / (2 * N))
        phi *= (j / (n + j)) * num / den
    # the centred U - m n / 2 has a real characteristic function; at t_(N-1-k) = 2 pi - t_k it is (-1)^(m n) that
    # at t_k
    phi = np.concatenate([phi, (-1.0) ** (m * n % 2) * phi[::-1]])
    odd = 2 * np.arange(N, dtype=np.int64) + 1
    phase = np.exp(1j * np.pi * ((odd * (m * n)) % (4 * N)) / (2 * N))  # exp(i t_k m n / 2)
    u = np.arange(m * n + 1)
    p = (np.fft.fft(phi * phase)[:m * n + 1] * np.exp(-1j * np.pi * u / N)).real / N
    np.clip(p, 0.0, None, out=p)  # rounding: a few -1e-17
    return p / p.sum()


def _normal_mean_abs(m, n):
    """``E|U - m n / 2|`` under the normal approximation of ``U`` with a continuity correction.

    ``U`` lives on the lattice ``m n / 2 + {0, +-1, ...}`` (``+-1/2, +-3/2, ...`` when ``m n`` is odd); each
    lattice point gets the normal mass of its unit cell, ``Phi((x + 1/2) / s) - Phi((x - 1/2) / s)``, with
    ``s^2 = m n (m + n + 1) / 12`` the variance of ``U`` (no ties), summed by parts over the cells' upper tails
    (for ``s`` above 1e5 the closed form ``s sqrt(2 / pi)``, which that sum approaches to ``O(1 / s)``). Then the
    Edgeworth term of the kurtosis, ``E|Z| (1 - kappa / 24)`` with ``kappa`` the excess kurtosis of ``U``
    (negative: ``U`` is flatter than a normal, and the plain normal figure was low by 0.0004 for a class of 10
    users against 1000, 7e-6 with the term).
    """
    s = math.sqrt(m * n * (m + n + 1) / 12.0)
    if s > 1e5:
        mean_abs = s * math.sqrt(2.0 / math.pi)
    else:
        half = (m * n) % 2 / 2.0  # 0 or 1/2: the smallest positive lattice point is 1 or 1/2
        x = np.arange(1.0 - half, 12.0 * s + 2.0)  # the positive lattice points, spaced by 1
        tails = 1.0 - ndtr((x - 0.5) / s)  # P(X >= x) with the continuity correction
        # E[X; X > 0] = sum_x x P(X = x) = x_1 P(X >= x_1) + sum_{x > x_1} P(X >= x)
        mean_abs = 2.0 * (x[0] * tails[0] + tails[1:].sum())
    kappa = -1.2 * (m * m + n * n + m * n + m + n) / (m * n * (m + n + 1))
    return mean_abs * (1.0 - kappa / 24.0)


@functools.lru_cache(maxsize=4096)
def _chance_pair(n1, n0):
    """Expected folded AUC of an uninformed, untied ranking of ``n1`` positives among ``n0`` negatives."""
    m, n = min(n1, n0), max(n1, n0)
    mn = m * n
    if m == 1:  # U is uniform on 0 .. n
        mean_abs = (n / 2) * (n / 2 + 1) / (n + 1) if n % 2 == 0 else (n + 1) / 4
    elif m * mn <= _EXACT_BUDGET and mn < _EXACT_SUPPORT:
        p = _mann_whitney_null(m, n)
        mean_abs = float(np.dot(p, np.abs(np.arange(mn + 1) - mn / 2.0)))
    else:
        mean_abs = _normal_mean_abs(m, n)
    return 0.5 + mean_abs / mn


def chance_folded_auc(class_counts):
    """Expected folded AUC of an attacker whose scores carry no information, for the given class sizes.

    The folded AUC of :class:`AttackResult` (``max(AUC, 1 - AUC)``, for more than two classes the mean over
    the classes of the folded one-vs-rest ``AUC_k``) is never below 0.5, so on finitely many users an attacker
    that knows nothing scores ABOVE 0.5: this is the level to read a reported folded AUC against. For one class
    of ``n1`` users against ``n0`` others, with no signal the users' ranking is uniformly random and
    ``n1 n0 AUC`` is the Mann-Whitney statistic ``U`` under its null hypothesis, so the expected folded AUC is
    ``0.5 + E|U - n0 n1 / 2| / (n0 n1)``, about ``0.5 + sd * sqrt(2 / pi)`` with
    ``sd^2 = (n0 + n1 + 1) / (12 n0 n1)``: about 0.56 for a class of 17 users among 170.

    Parameters
    ----------
    class_counts : array-like of int
        Number of scored users of each class PRESENT among them (zeros are dropped), as
        :attr:`AttackResult.folded_auc` averages over the classes present.

    Returns
    -------
    chance : float
        For two classes the expected ``max(AUC, 1 - AUC)``; for more, the mean over the classes of the
        expected folded one-vs-rest AUC of each (the expectation of the mean). NaN with fewer than two classes.

    Notes
    -----
    Exact where cheap: for a class of one user ``U`` is uniform; otherwise the null distribution of ``U``
    (Mann & Whitney 1947) is the Gaussian binomial coefficient, computed exactly (to 1e-15) when
    ``min(n0, n1) * n0 * n1 <= 4e6`` and ``n0 * n1 < 2**20`` (every pair of classes among 300 users; a class of
    10 users among 40 000). Beyond it, the normal approximation of ``U`` with a continuity correction and the
    Edgeworth term of its kurtosis (``U`` is flatter than a normal: the plain normal figure is low by
    ``0.05 / min(n0, n1)`` of the excess over 0.5). Its error on the expected folded AUC, measured against the
    exact figure: below 1e-5 when the smaller class has 10 users or more, below 3e-4 for 2 to 9 users (the
    approximation is used for those only beside more than 49 000 others; it is worse, 4e-4, beside 20).

    The figure assumes untied scores (continuous probabilities). Ties pull the AUC toward 0.5 (a constant
    attacker scores exactly 0.5), so an uninformed attacker with many ties folds lower than this.

    It is the chance level of ONE attacker. The worst (largest) folded AUC over several attackers on the same
    users (``worst_auc_*`` of :class:`PrivacyUtilityCurve`) has a higher chance level: the expectation of a
    maximum, which depends on how the attackers' errors correlate (the same figure when they all rank alike;
    up to the expected maximum of independent draws when they do not).

    References
    ----------
    .. [1] H. B. Mann and D. R. Whitney, "On a Test of Whether one of Two Random Variables is Stochastically
       Larger than the Other", Ann. Math. Statist. 18(1), 50-60, 1947.

    Examples
    --------
    >>> from privrelease.evaluation import chance_folded_auc
    >>> round(chance_folded_auc([1, 1]), 3)      # one ranking of two users: AUC 0 or 1, folded 1
    1.0
    >>> round(chance_folded_auc([153, 17]), 2)   # a 10 % class among 170 users
    0.56
    >>> round(chance_folded_auc([5000, 5000]), 3)
    0.505
    """
    counts = np.asarray(class_counts).ravel()
    if counts.size and not np.issubdtype(counts.dtype, np.integer):
        as_int = counts.astype(np.int64) if np.issubdtype(counts.dtype, np.number) else None
        if as_int is None or not np.array_equal(as_int, counts):
            raise TypeError(f"class_counts must be whole numbers of users, got {class_counts!r}")
        counts = as_int
    if np.any(counts < 0):
        raise ValueError(f"class_counts must be >= 0, got {class_counts!r}")
    counts = [int(c) for c in counts if c > 0]
    if len(counts) < 2:
        return float("nan")
    total = sum(counts)
    if len(counts) == 2:
        return _chance_pair(counts[1], counts[0])
    return float(np.mean([_chance_pair(c, total - c) for c in counts]))
