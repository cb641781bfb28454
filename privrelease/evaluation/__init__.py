"""What privacy costs: recommendation RMSE, inference attacks, privacy-utility curves.

* :func:`rmse_cost` - the RMSE protocol of Salamatian et al., Sec. VI-C, Table I
  (folds over users; held-out ratings removed BEFORE the release), with two
  reference releases: nothing and everything.
* :class:`InferenceAttack`, :func:`attack`, :func:`evaluate_attacks` - FIXED
  attackers (trained on original ratings, the paper's Fig. 12) and ADAPTIVE ones
  (trained on released ratings), logistic regression and random forest, on
  rating values and on rated / not-rated indicators; ROC, AUC, accuracy against
  the majority-class guess; :func:`chance_folded_auc` - the folded AUC an
  uninformed attacker is expected to score (Mann-Whitney), the level to read one against.
* :func:`privacy_utility_curve` / :class:`PrivacyUtilityCurve` - sweep a mapper's
  privacy parameter on one shared draw of the protocol; plots of the
  privacy-distortion curve, the leakage-RMSE frontier, attacker AUCs and ROC curves.
* :func:`make_privacy_scorer`, :func:`privacy_scoring`, :func:`lowest_rmse_within` -
  GridSearchCV over ``privacy__delta`` of a ``Pipeline([mapper, recommender])``.
* :class:`BlurMe` - the obfuscation baseline of Weinsberg et al. (RecSys 2012), and
  :class:`BlurMore` - its extension by Strucks, Slokom and Larson (2019): removals as
  well as additions, profile sizes and item counts kept.
* :func:`joint_attribute`, :func:`attribute_targets` - 2-D private attributes (one
  column per attribute) scored as the joint attribute and per column.
"""

from ._attacks import (
    ATTACK_FEATURES,
    ATTACK_MODELS,
    AttackResult,
    InferenceAttack,
    attack,
    evaluate_attacks,
)
from ._blurme import BlurMe, BlurMore
from ._chance import chance_folded_auc
from ._curve import PrivacyUtilityCurve, check_privacy_grid, privacy_utility_curve
from ._protocol import RMSECost, rmse_cost
from ._scorer import lowest_rmse_within, make_privacy_scorer, privacy_scoring
from ._targets import attribute_targets, joint_attribute

__all__ = [
    "ATTACK_FEATURES",
    "ATTACK_MODELS",
    "AttackResult",
    "InferenceAttack",
    "attack",
    "BlurMe",
    "BlurMore",
    "chance_folded_auc",
    "evaluate_attacks",
    "RMSECost",
    "PrivacyUtilityCurve",
    "check_privacy_grid",
    "privacy_utility_curve",
    "rmse_cost",
    "lowest_rmse_within",
    "make_privacy_scorer",
    "privacy_scoring",
    "attribute_targets",
    "joint_attribute",
]
