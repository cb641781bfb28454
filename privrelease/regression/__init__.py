"""Truthful, jointly differentially private linear regression.

:class:`TruthfulRegressionMechanism` implements the Private Regression Mechanism
(Algorithm 2) of Cummings, Ioannidis and Ligett, "Truthful Linear Regression":
ridge regression with output perturbation, a random split of the players into
two groups, and peer-prediction (Brier) payments. :func:`ridge_sensitivity`
gives the L2 sensitivity bound the noise is calibrated to, and
:func:`parameter_schedule` the parameters as functions of ``n``, and
:func:`best_response_factor` the ratio of a player's payoff-maximising report
to her true response (ridge shrinkage; the default schedule keeps it >= 0.95).
"""

from ._truthful import (
    TruthfulRegressionMechanism,
    best_response_factor,
    brier_payment,
    parameter_schedule,
    ridge_sensitivity,
)

__all__ = [
    "TruthfulRegressionMechanism",
    "best_response_factor",
    "brier_payment",
    "parameter_schedule",
    "ridge_sensitivity",
]
