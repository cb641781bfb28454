"""Contracts for purchasing private data with a biased differentially private algorithm.

Khalili, Zhang and Liu: the biased Laplace mechanism
``A_new(D) = sum a_i d_i + sum (1 - a_i)/2 + Lap(b)`` gives seller ``i`` privacy
``a_i / b`` at worst-case accuracy ``K = (sum (1 - a_i)/2)^2 + 2 b^2``; a broker
pays sellers their privacy cost. :func:`design_contract` finds the cheapest
contracts when valuations are known, :func:`design_menu` a menu of contracts
under information asymmetry, both compared with the unbiased Laplace mechanism
(:func:`unbiased_contract`). Plain functions and classes, not estimators.
"""

from ._design import (
    Contract,
    Menu,
    design_contract,
    design_menu,
    privacy_cost,
    unbiased_contract,
)
from ._mechanism import BiasedLaplaceMechanism

__all__ = [
    "BiasedLaplaceMechanism",
    "Contract",
    "Menu",
    "design_contract",
    "design_menu",
    "privacy_cost",
    "unbiased_contract",
]
