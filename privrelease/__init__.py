"""privrelease: release or train on user ratings without revealing what users keep private.

The public, scikit-learn compatible estimators are importable from here::

    from privrelease import QuantizedPrivacyMapper, ErasureMapper, DCLEFEstimator
    from privrelease import TruthfulRegressionMechanism, SurpriseRecommender
    from privrelease import PrivacyAccountant   # the privacy budget DCLEFEstimator spends

Mechanisms (noise, auctions, contracts), the convex program (``privrelease.mapping``),
evaluation tools and data sets live in their subpackages. Names are imported
lazily, so ``import privrelease`` stays fast.
"""

import importlib

from ._version import __version__

_LAZY = {
    "QuantizedPrivacyMapper": "privrelease.mappers",
    "ErasureMapper": "privrelease.mappers",
    "DCLEFEstimator": "privrelease.auctions",
    "TruthfulRegressionMechanism": "privrelease.regression",
    "SurpriseRecommender": "privrelease.recommender",
    "BlurMe": "privrelease.evaluation",
    "BlurMore": "privrelease.evaluation",
    "InferenceAttack": "privrelease.evaluation",
    "PrivacyAccountant": "privrelease.accounting",
    "save": "privrelease._persistence",
}

__all__ = ["__version__", "load", *_LAZY]


def load(path, key=None, *, max_bytes=None):
    """Load a mapper saved with ``mapper.save(path, key=None)``; see :func:`privrelease._persistence.load`.

    Parameters
    ----------
    path : str or path-like
    key : bytes, optional
        The key the file was saved with: its HMAC-SHA256 tag is checked before
        anything is decoded. Without a key, every claim stored in the file
        (leakage, distortion, attacker accuracy ...) is recomputed from its
        arrays and a file whose claims do not hold is refused.
    max_bytes : int, optional
        Cap on the bytes the archive may inflate to (default 256 MiB).

    Returns
    -------
    estimator
    """
    from . import _persistence, mappers  # noqa: F401  (importing the mappers registers them)

    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
    return _persistence.load(path, key, **kwargs)


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'privrelease' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
