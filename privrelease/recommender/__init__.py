"""Recommenders: a scikit-learn estimator around Surprise, and offline hold-out splits."""

from ._split import holdout_split
from ._surprise import SurpriseRecommender

__all__ = ["SurpriseRecommender", "holdout_split"]
