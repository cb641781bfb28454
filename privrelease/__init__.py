"""privrelease: release or train on user ratings without revealing what users keep private.

The public, scikit-learn compatible estimators are importable from here::

    from privrelease import QuantizedPrivacyMapper, ErasureMapper, DCLEFEstimator
    from privrelease import TruthfulRegressionMechanism, SurpriseRecommender

Mechanisms (noise, auctions, contracts), the convex program (``privrelease.mapping``),
evaluation tools and data sets live in their subpackages. Names are imported
lazily, so ``import privrelease`` stays fast.
"""

import importlib

__version__ = "0.1.0"

_LAZY = {
    "QuantizedPrivacyMapper": "privrelease.mappers",
    "ErasureMapper": "privrelease.mappers",
    "DCLEFEstimator": "privrelease.auctions",
    "TruthfulRegressionMechanism": "privrelease.regression",
    "SurpriseRecommender": "privrelease.recommender",
    "BlurMe": "privrelease.evaluation",
    "BlurMore": "privrelease.evaluation",
    "InferenceAttack": "privrelease.evaluation",
    "save": "privrelease._persistence",
    "load": "privrelease._persistence",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'privrelease' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
