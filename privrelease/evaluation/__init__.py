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
from ._protocol import RMSECost, holdout_ratings, rmse_cost

__all__ = [
    "ATTACK_FEATURES",
    "ATTACK_MODELS",
    "AttackResult",
    "InferenceAttack",
    "attack",
    "evaluate_attacks",
    "RMSECost",
    "holdout_ratings",
    "rmse_cost",
]
