"""Recommenders: a scikit-learn estimator around Surprise, offline hold-out splits, rating formats."""

from ._formats import RatingsFrame
from ._split import holdout_split
from ._surprise import SurpriseRecommender

__all__ = ["RatingsFrame", "SurpriseRecommender", "holdout_split"]
