"""privrelease: release or train on user ratings without revealing what users keep private.

Public, scikit-learn compatible estimators are re-exported here; mechanisms
(noise, auctions, contracts) live in their subpackages.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
