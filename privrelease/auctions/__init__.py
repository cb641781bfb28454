"""Privacy auctions for linear predictors (Dandekar, Fawaz and Ioannidis, 2012).

Mechanisms are plain functions and classes:

* :class:`DCLEF` and :func:`privacy_index`: discrete canonical Laplace estimator
  functions (eqs. 3-6, 8; Definition 3);
* :func:`fair_inner_product` (Algorithm 1, eq. 9), :func:`ghosh_roth`,
  :func:`optimal_dclef` (problem 7) and :func:`fractional_dclef` (Lemma 6);
* linear-predictor weights of Section 5: :func:`knn_weights`,
  :func:`nadaraya_watson_weights`, :func:`ridge_weights`;
* :class:`DCLEFEstimator`, the scikit-learn regressor that runs one auction per query.
"""

from ._dclef import DCLEF, check_data_range, privacy_index
from ._estimator import DCLEFEstimator
from ._mechanism import (
    AuctionResult,
    FractionalResult,
    fair_inner_product,
    fractional_dclef,
    ghosh_roth,
    optimal_dclef,
)
from ._predictors import knn_weights, nadaraya_watson_weights, ridge_weights

__all__ = [
    "DCLEF",
    "DCLEFEstimator",
    "knn_weights",
    "nadaraya_watson_weights",
    "ridge_weights",
    "AuctionResult",
    "FractionalResult",
    "check_data_range",
    "privacy_index",
    "fair_inner_product",
    "fractional_dclef",
    "ghosh_roth",
    "optimal_dclef",
]
