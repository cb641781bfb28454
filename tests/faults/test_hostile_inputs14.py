"""Hostile inputs, fourteenth audit, one test per finding (earlier audits: test_hostile_inputs.py to
test_hostile_inputs13.py)."""

from fractions import Fraction

import numpy as np
import pytest

from privrelease.auctions import fair_inner_product, optimal_dclef


# ----------------------------------------------------------------------- auctions at float64's edge
@pytest.mark.parametrize("auction", [fair_inner_product, optimal_dclef], ids=["fair_inner_product", "optimal"])
@pytest.mark.parametrize("v, w", [([2.2e-308, 1.0, 5.0], [1e300, 1e-10, 1e-10]),
                                  ([2.2e-308, 3e-308, 5.0], [1e300, 1e300, 1e-10])])
def test_a_cost_whose_guarantee_is_beyond_float64_is_its_exact_finite_value(auction, v, w):
    # eps_i = a_i / (W - w(O)) is near 1e310, so it is inf; the cost v_i eps_i is about 110 and was inf, and the
    # utility -inf, while the payment was right
    res = auction(v, w, 1e3)
    assert np.isinf(res.epsilons[res.selected]).all() and res.selected.any()
    rest = sum(Fraction(abs(x)) for x, s in zip(w, res.selected) if not s)
    for i in np.flatnonzero(res.selected):
        assert res.costs[i] == float(Fraction(v[i]) * Fraction(w[i]) / rest)
    assert np.isfinite(res.utilities).all() and (res.utilities >= 0).all()
