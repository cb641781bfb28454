"""Glue shared by the mappers: parameter constraints, the call to the mapping engine,
small information-theoretic summaries of a fitted mapping."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils import RandomSource, check_private_labels

__all__ = [
    "RANDOM_STATE_CONSTRAINT",
    "LEAKAGE_CONSTRAINT",
    "solve",
    "mutual_information_bits",
    "map_accuracy",
    "mismatch_bound_bits",
    "private_labels",
]

RANDOM_STATE_CONSTRAINT = [
    None,
    Interval(Integral, 0, None, closed="left"),
    np.random.RandomState,
    np.random.Generator,
    RandomSource,
]
LEAKAGE_CONSTRAINT = [StrOptions({"mutual_information", "maximal_leakage"})]
BUDGET_CONSTRAINT = [Interval(Real, 0, None, closed="left"), None]


def solve(prior, cost, *, delta, max_leakage, leakage, solver):
    """Solve the privacy-preserving mapping problem (Salamatian et al., Alg. 1 / eq. 6).

    ``delta=None`` and ``max_leakage=None`` together ask for perfect privacy
    (``max_leakage=0``: the least-distortion mapping whose output is independent
    of the private attribute under ``prior``). Giving both is ambiguous and refused.
    Perfect privacy is a linear program (``I(A; C_hat) = 0`` iff
    ``p(a, c_hat) = p(a) p(c_hat)``, linear in the mapping); it is obtained from the
    engine's :func:`~privrelease.mapping.privacy_distortion_curve` at an unlimited
    budget, which returns exactly that LP's least-distortion solution.
    """
    from ..mapping import privacy_distortion_curve, solve_mapping  # the engine

    if delta is not None and max_leakage is not None:
        raise ValueError(
            f"give either delta (got {delta!r}) or max_leakage (got {max_leakage!r}), not both: "
            "delta minimises leakage under a distortion budget, max_leakage minimises "
            "distortion under a leakage cap"
        )
    if delta is not None:
        return solve_mapping(prior, cost, float(delta), leakage=leakage, solver=solver)
    if max_leakage is None or max_leakage == 0:
        _, results = privacy_distortion_curve(prior, cost, [np.inf], leakage=leakage, solver=solver,
                                              return_mappings=True)
        return results[0]
    return solve_mapping(prior, cost, max_leakage=float(max_leakage), leakage=leakage, solver=solver)


def mutual_information_bits(joint):
    """I(A; B) in bits of a joint distribution given as an |A| x |B| array."""
    joint = np.asarray(joint, dtype=np.float64)
    joint = joint / joint.sum()
    pa = joint.sum(axis=1, keepdims=True)
    pb = joint.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log2(joint / (pa * pb)), 0.0)
    return float(max(terms.sum(), 0.0))


def map_accuracy(joint):
    """Accuracy of the MAP guess of A from B under a joint |A| x |B| distribution."""
    joint = np.asarray(joint, dtype=np.float64)
    return float(joint.max(axis=0).sum() / joint.sum())


def mismatch_bound_bits(n_samples, n_private, n_public, confidence=0.95):
    """High-probability bound on the leakage error due to an empirical prior.

    Proposition 1 of Salamatian et al. gives, with probability at least
    ``confidence``, ``||p - q||_1 <= eps`` with
    ``eps = sqrt((|A||B| log2(n + 1) + log2(1 / (1 - confidence))) / (2 n))``;
    Theorem 1 then bounds ``|J(p, M) - J(q, M)| <= 3 eps log2(|A||B| / eps)``
    (Lemma 1 needs ``eps <= 1/2``). Returns ``inf`` when ``eps > 1/2``: the
    sample is too small for the bound to say anything.
    """
    n = float(n_samples)
    if n <= 0:
        return float("inf")
    size = n_private * n_public
    eps = np.sqrt((size * np.log2(n + 1.0) + np.log2(1.0 / (1.0 - confidence))) / (2.0 * n))
    if eps > 0.5:
        return float("inf")
    return float(3.0 * eps * np.log2(size / eps))


def require_private_labels(estimator, y):
    """Refuse ``y=None``: a mapper's prior needs the private attribute of the opted-in users."""
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None (y is the private "
            "attribute, -1 for users who did not disclose it)"
        )


def private_labels(y, n_samples):
    """The private attribute and which rows disclosed it.

    ``-1``, NaN, None and pandas' missing markers all mean "not disclosed".
    """
    y, labeled = check_private_labels(y, n_samples)
    if y.dtype == object:
        import pandas as pd

        labeled = labeled & ~np.asarray(pd.isna(y), dtype=bool)
    return y, labeled
