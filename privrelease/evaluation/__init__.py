"""What privacy costs: recommendation RMSE, inference attacks, privacy-utility curves.

* :func:`rmse_cost` - the RMSE protocol of Salamatian et al., Sec. VI-C, Table I,
  with two reference points (release nothing, release everything).
* :class:`InferenceAttack`, :func:`attack`, :func:`evaluate_attacks` - fixed and
  adaptive attackers (logistic regression and a random forest, on rating values
  and on rated / not-rated indicators), ROC and AUC (Fig. 12).
"""

from ._attacks import (
    ATTACK_FEATURES,
    ATTACK_MODELS,
    AttackResult,
    InferenceAttack,
    attack,
    evaluate_attacks,
)
from ._blurme import BlurMe
from ._curve import PrivacyUtilityCurve, check_privacy_grid, privacy_utility_curve
from ._protocol import RMSECost, rmse_cost
from ._scorer import lowest_rmse_within, make_privacy_scorer, privacy_scoring

__all__ = [
    "ATTACK_FEATURES",
    "ATTACK_MODELS",
    "AttackResult",
    "InferenceAttack",
    "attack",
    "BlurMe",
    "evaluate_attacks",
    "RMSECost",
    "PrivacyUtilityCurve",
    "check_privacy_grid",
    "privacy_utility_curve",
    "rmse_cost",
    "lowest_rmse_within",
    "make_privacy_scorer",
    "privacy_scoring",
]
