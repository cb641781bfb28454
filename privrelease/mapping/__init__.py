"""The privacy-mapping engine (Salamatian et al., Algorithms 1 and 2).

Priors, leakage measures, the convex program of Algorithm 1 with a plain cvxpy
reference and a fast certified solver, privacy-distortion curves, erasure and
Euclidean distortions, the mismatched-prior bounds (Theorem 1, Proposition 1)
and the Census (UCI Adult) prior of the paper's Sec. VI-A.
"""

from ._census import census_prior
from ._curve import privacy_distortion_curve
from ._distortion import ERASED, erasure_alphabet, erasure_distortion, squared_euclidean_distortion
from ._leakage import (
    expected_distortion,
    leakage,
    map_attack_accuracy,
    maximal_leakage,
    mismatch_bounds,
    mutual_information,
    prior_deviation_probability,
)
from ._prior import KDEPrior, empirical_prior, kde_prior
from ._result import MappingResult
from ._solver import solve_mapping

__all__ = [
    "ERASED",
    "KDEPrior",
    "MappingResult",
    "census_prior",
    "empirical_prior",
    "erasure_alphabet",
    "erasure_distortion",
    "expected_distortion",
    "kde_prior",
    "leakage",
    "map_attack_accuracy",
    "maximal_leakage",
    "mismatch_bounds",
    "mutual_information",
    "prior_deviation_probability",
    "privacy_distortion_curve",
    "solve_mapping",
    "squared_euclidean_distortion",
]
