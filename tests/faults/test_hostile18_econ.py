"""The economics mechanisms against their papers (eighteenth audit): the privacy level a menu of contracts records,
the per-individual epsilon cap of DCLEFEstimator decided exactly, releases that use no private value, and callable
costs written for scalars. Each test checks a property or an independent exact computation (fractions)."""

from fractions import Fraction

import numpy as np
import pytest

from privrelease.contracts import design_menu


def _below_delivered(a, b, eps):
    """Entries whose recorded ``eps_i`` is below ``a_i / b`` in exact arithmetic (the level Laplace noise of scale
    ``b`` delivers to the term ``a_i d_i``, ``d_i`` in ``[0, 1]``)."""
    return [i for i, (ai, e) in enumerate(zip(np.atleast_1d(a).tolist(), np.atleast_1d(eps).tolist()))
            if Fraction(e) < Fraction(ai) / Fraction(float(b))]


# ---------------------------------------------------------------- contracts: the privacy level recorded
def test_menu_epsilons_cover_the_delivered_level():
    rng = np.random.default_rng(2)
    below = 0
    for _ in range(5):
        m = design_menu(1.0, rng.uniform(1.0, 5.0), rng.uniform(0.0, 1.0), rng.uniform(0.1, 1.0))
        below += len(_below_delivered([m.a_high, m.a_low], m.b, [m.eps_high, m.eps_low]))
    assert below == 0
