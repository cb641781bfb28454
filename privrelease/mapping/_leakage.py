"""Privacy leakage, attacker accuracy, distortion, and the mismatched-prior bounds.

All information quantities are in **bits**.
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import rel_entr

from ..utils import check_number
from ._checks import check_distortion, check_mapping, check_paired_labels, check_prior

__all__ = [
    "mutual_information",
    "leakage",
    "maximal_leakage",
    "map_attack_accuracy",
    "expected_distortion",
    "mismatch_bounds",
    "prior_deviation_probability",
]

_LN2 = math.log(2.0)


def _released_joint(prior, mapping):
    """``p(a, c_hat)`` of the release; the mapping is checked by :func:`check_mapping` (rows within 1e-6 of 1)
    and its rows renormalised, so the joint sums to 1 whichever measure is computed from it."""
    P = check_prior(prior)
    if mapping is None:
        return P
    check_paired_labels(prior, "prior", "columns", mapping, "mapping", "index", "public symbol")
    M = check_mapping(mapping, P.shape[1])
    if sp.issparse(M):
        rs = np.asarray(M.sum(axis=1)).ravel()
        M = sp.csr_array(sp.diags_array(1.0 / rs) @ M)
        return np.asarray((M.T @ P.T).T)
    return P @ (M / M.sum(axis=1, keepdims=True))


def _mutual_information_bits(J):
    """``I(A; B)`` in bits of a checked joint ``J`` (non-negative, summing to 1)."""
    pa = J.sum(axis=1, keepdims=True)
    pb = J.sum(axis=0, keepdims=True)
    return max(float(rel_entr(J, pa * pb).sum() / _LN2), 0.0)


def mutual_information(joint):
    """Mutual information I(A; B) in bits of a joint distribution (paper eq. 1).

    Parameters
    ----------
    joint : array-like of shape (n_a, n_b)
        Joint probabilities p(a, b), non-negative, summing to 1.

    Returns
    -------
    float
        ``sum_{a,b} p(a,b) log2(p(a,b) / (p(a) p(b)))`` (``0 log 0 = 0``).

    References
    ----------
    Salamatian et al., "Managing your private and public data", eq. (1) and (3).

    Examples
    --------
    >>> mutual_information([[0.5, 0.0], [0.0, 0.5]])
    1.0
    """
    return _mutual_information_bits(check_prior(joint, name="joint"))


def maximal_leakage(prior, mapping=None):
    """Maximal leakage ``log2 sum_{b_hat} max_{a: p(a)>0} p(b_hat | a)`` in bits.

    The worst-case leakage measure (Issa, Kamath, Wagner 2016) that the paper
    names as future work (Sec. II-B, worst-case threat model). It is zero iff the
    release is independent of A.

    Parameters
    ----------
    prior : array-like of shape (n_private, n_public)
        Joint p(a, c).
    mapping : array-like of shape (n_public, n_outputs) or None
        Row-stochastic p(c_hat | c); None means the identity (release C itself).

    Examples
    --------
    >>> maximal_leakage([[0.5, 0.0], [0.0, 0.5]])
    1.0
    """
    J = _released_joint(prior, mapping)
    pa = J.sum(axis=1)
    keep = pa > 0
    cond = J[keep] / pa[keep, None]
    return max(float(np.log2(cond.max(axis=0).sum())), 0.0)


def leakage(prior, mapping=None, kind="mutual_information"):
    """Privacy leakage of releasing ``C_hat ~ mapping(. | C)``, in bits.

    Parameters
    ----------
    prior : array-like of shape (n_private, n_public)
        Joint p(a, c).
    mapping : array-like of shape (n_public, n_outputs) or None
        Row-stochastic mapping; None is the identity.
    kind : {"mutual_information", "maximal_leakage"}
        ``I(A; C_hat)`` (paper eq. 3/5, the log-loss attacker's average gain) or
        the maximal leakage (see :func:`maximal_leakage`).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    >>> round(leakage(prior, np.full((2, 1), 1.0)), 12)
    0.0
    """
    if kind == "mutual_information":
        # not through mutual_information's own check: a mapping whose rows are within check_mapping's 1e-6 of 1
        # made the joint miss 1 by more than 1e-8, refused as "joint must sum to 1" (an argument never passed)
        return _mutual_information_bits(_released_joint(prior, mapping))
    if kind == "maximal_leakage":
        return maximal_leakage(prior, mapping)
    raise ValueError(f"kind must be 'mutual_information' or 'maximal_leakage', got {kind!r}")


def map_attack_accuracy(prior, mapping=None):
    """Accuracy of the maximum-a-posteriori attacker who sees ``C_hat`` and knows the prior.

    ``sum_{c_hat} max_a p(a, c_hat)``; with ``mapping=None`` the attacker sees C itself.
    An uninformed attacker reaches ``max_a p(a)``.

    Parameters
    ----------
    prior : array-like of shape (n_private, n_public)
        Joint p(a, c).
    mapping : array-like or sparse matrix of shape (n_public, n_outputs), default=None
        Row-stochastic mapping ``p(c_hat | c)``; None is the identity.

    Returns
    -------
    float
        The attacker's probability of guessing ``A`` right.

    Examples
    --------
    >>> map_attack_accuracy([[0.4, 0.1], [0.1, 0.4]])
    0.8
    """
    J = _released_joint(prior, mapping)
    return float(J.max(axis=0).sum())


def expected_distortion(prior, mapping, distortion):
    """Expected distortion ``sum_{c, c_hat} p(c) mapping(c_hat|c) d(c, c_hat)`` (paper eq. 2).

    A positive probability on an infinite-distortion transition gives ``inf``;
    zero probability on it contributes 0.

    Parameters
    ----------
    prior : array-like of shape (n_private, n_public)
        Joint p(a, c) (only its column sums ``p(c)`` enter).
    mapping : array-like or sparse matrix of shape (n_public, n_outputs)
        Row-stochastic mapping ``p(c_hat | c)``.
    distortion : array-like or sparse matrix of shape (n_public, n_outputs)
        ``d(c, c_hat)``, ``np.inf`` for a forbidden transition.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> expected_distortion([[0.25, 0.25], [0.25, 0.25]], np.eye(2)[::-1], [[0, 1], [1, 0]])
    1.0
    """
    P = check_prior(prior)
    check_paired_labels(prior, "prior", "columns", mapping, "mapping", "index", "public symbol")
    check_paired_labels(prior, "prior", "columns", distortion, "distortion", "index", "public symbol")
    check_paired_labels(mapping, "mapping", "columns", distortion, "distortion", "columns", "output")
    M = check_mapping(mapping, P.shape[1])
    D = check_distortion(distortion, P.shape[1])
    if D.shape != M.shape:
        raise ValueError(f"distortion has shape {D.shape} but mapping has shape {M.shape}")
    return _expected_distortion(P.sum(axis=0), M, D)


def _expected_distortion(pc, M, D):
    """:func:`expected_distortion` of checked inputs, with the public symbols' masses ``pc`` as given (the
    solver reports its answers' distortion with its own normalised prior's)."""
    if sp.issparse(M) or sp.issparse(D):
        return _sparse_expected_distortion(pc, M, D)
    W = pc[:, None] * M
    used = W > 0
    if np.any(np.isinf(D[used])):
        return float("inf")
    return float((W[used] * D[used]).sum())


def _sparse_expected_distortion(pc, M, D):
    """Expected distortion when the mapping or the distortion is sparse (a sparse distortion's
    unstored entries are forbidden: positive mass there gives ``inf``)."""
    Wm = sp.coo_array(sp.csr_array(M) * pc[:, None] if sp.issparse(M) else pc[:, None] * M)
    used = Wm.data > 0
    w, r, c = Wm.data[used], np.asarray(Wm.coords[0])[used], np.asarray(Wm.coords[1])[used]
    if not sp.issparse(D):
        d = D[r, c]
    else:
        Dc = sp.csr_array(D)
        Dc.sort_indices()
        keys = np.repeat(np.arange(Dc.shape[0], dtype=np.int64), np.diff(Dc.indptr)) * Dc.shape[1] + Dc.indices
        want = r.astype(np.int64) * Dc.shape[1] + c
        idx = np.minimum(np.searchsorted(keys, want), max(keys.size - 1, 0))
        if keys.size == 0 or np.any(keys[idx] != want):
            return float("inf")
        d = Dc.data[idx]
    if np.any(np.isinf(d)):
        return float("inf")
    return float((w * d).sum())


def mismatch_bounds(l1_distance, n_private, n_public, d_max):
    """Theorem 1: how far leakage and distortion move when the prior is mismatched.

    If the mapping was designed with an estimate q of the true prior p and
    ``L = ||p - q||_1``, then (paper Thm. 1, with logs in base 2 so bounds are in bits)::

        |J(p, mapping) - J(q, mapping)| <= 3 L log2(|A| |B| / L)
        E_p[d] <= Delta + d_max L

    Parameters
    ----------
    l1_distance : float
        ``L = ||p - q||_1`` in [0, 2].
    n_private, n_public : int
        ``|A|`` and the size of the released alphabet (``|B|`` in the paper,
        where the output alphabet equals the input alphabet).
    d_max : float
        Largest finite distortion a mapping may use.

    Returns
    -------
    dict
        ``leakage_bits``: the leakage deviation bound; ``distortion``: ``d_max * L``;
        ``lemma_applies``: whether Lemma 1's condition ``L <= 1/2`` holds.
        The leakage bound is always capped by the trivial bound
        ``log2(min(|A|, |B|))`` (both leakages lie in ``[0, log2 min(|A|,|B|)]``).
        **When L > 1/2** Lemma 1 (Cover & Thomas Thm 17.3.3) does not apply and only
        the trivial bound ``log2(min(|A|, |B|))`` is returned, with
        ``lemma_applies=False``.

    References
    ----------
    Salamatian et al., Theorem 1 and Lemma 1 (eq. 7-15).

    Examples
    --------
    >>> b = mismatch_bounds(0.01, 2, 24, d_max=3)
    >>> round(b["leakage_bits"], 4), b["distortion"]
    (0.3669, 0.03)
    """
    L = check_number(l1_distance, "l1_distance", low=0.0, high=2.0)
    na = check_number(n_private, "n_private", low=1, integer=True)
    nb = check_number(n_public, "n_public", low=1, integer=True)
    dm = check_number(d_max, "d_max", low=0.0)
    trivial = math.log2(min(na, nb))
    applies = L <= 0.5
    if L == 0:
        bound = 0.0
    elif applies:
        # in logs: na * nb / L overflowed to inf for a subnormal L (1e-320), which gave the trivial bound
        bound = min(3.0 * L * (math.log2(na) + math.log2(nb) - math.log2(L)), trivial)
    else:
        bound = trivial
    return {"leakage_bits": float(bound), "distortion": float(dm * L), "lemma_applies": bool(applies)}


def prior_deviation_probability(epsilon, n_samples, n_private, n_public):
    """Proposition 1: ``P(||q - p||_1 >= eps) <= (n + 1)^{|A||B|} 2^{-2 n eps^2}``.

    The bound on the probability that the empirical prior from ``n`` samples
    is at L1 distance at least ``eps`` from the truth, computed in log space and
    clipped to 1. (It follows the paper's statement, which combines Sanov's
    theorem with Pinsker's inequality.)

    Parameters
    ----------
    epsilon : float
        Deviation, > 0.
    n_samples : int
        Number of labeled samples n >= 1.
    n_private, n_public : int
        ``|A|`` and ``|B|``.

    Returns
    -------
    float in [0, 1]

    References
    ----------
    Salamatian et al., Proposition 1 (eq. 16-18).

    Examples
    --------
    >>> prior_deviation_probability(0.05, 100, 2, 24)
    1.0
    >>> prior_deviation_probability(0.05, 10**6, 2, 24) < 1e-300
    True
    """
    eps = check_number(epsilon, "epsilon", low=0.0, low_inclusive=False)
    n = check_number(n_samples, "n_samples", low=1, integer=True)
    na = check_number(n_private, "n_private", low=1, integer=True)
    nb = check_number(n_public, "n_public", low=1, integer=True)
    log2p = na * nb * math.log2(n + 1) - 2.0 * n * eps * eps
    if log2p >= 0:
        return 1.0
    return float(2.0 ** log2p)
