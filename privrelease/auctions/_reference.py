"""A straightforward, QUADRATIC reference implementation of FairInnerProduct (Algorithm 1).

Written to be read against the paper line by line, not to be fast: every
``w([t])`` and every ``w([t] \\ {i*})`` is recomputed from scratch (``O(n^2)``),
and with ``exact=True`` all arithmetic is done in :class:`fractions.Fraction`
(floats convert exactly), so comparisons at ties and thresholds are exact. The
fast :func:`privrelease.auctions.fair_inner_product` must agree with it (exactly
on the selection, ``k``, ``i*`` and ``r``, also on instances built to sit on
thresholds); ``exact=False`` is the naive floating-point reading. The
tests and ``benchmarks/bench_auction.py`` use it. Same conventions as the fast
version (zero weights and Assumption-5 violators are never bought, their weight
stays in ``W``; ties by input index).
"""

from fractions import Fraction
import math

import numpy as np

__all__ = ["fair_inner_product_reference"]


def fair_inner_product_reference(unit_costs, weights, budget, *, exact=True):
    """Algorithm 1 of Dandekar, Fawaz and Ioannidis, quadratic time.

    Returns
    -------
    dict with ``selected`` (bool array), ``payments``, ``epsilons`` (float arrays),
    ``branch`` ("none" | "greedy" | "max_weight"), ``k``, ``i_star``, ``r``, ``p_hat``.
    """
    num = Fraction if exact else float
    n = len(weights)
    inf_cost = [math.isinf(float(c)) for c in unit_costs]
    v = [None if inf_cost[i] else num(float(unit_costs[i])) for i in range(n)]
    a = [abs(num(float(x))) for x in weights]
    B = num(float(budget))
    W = sum(a, num(0))

    def assumption5(i):
        return (a[i] > 0 and not inf_cost[i] and W - a[i] > 0
                and a[i] * v[i] / (W - a[i]) <= B)

    eligible = [i for i in range(n) if assumption5(i)]
    order = sorted(eligible, key=lambda i: (v[i], i))
    m = len(order)
    out = dict(selected=np.zeros(n, bool), payments=np.zeros(n), epsilons=np.zeros(n),
               branch="none", k=0, i_star=-1, r=-1, p_hat=float("nan"))
    if m == 0:
        return out

    def w_of(idx):
        return sum((a[j] for j in idx), num(0))

    # k = largest t with B / w([t]) >= v_t / (W - w([t]))
    k = 0
    for t in range(1, m + 1):
        wt = w_of(order[:t])
        if W - wt > 0 and B / wt >= v[order[t - 1]] / (W - wt):
            k = t
    i_star = max(eligible, key=lambda i: (a[i], -i))
    out["k"], out["i_star"] = k, i_star
    if a[i_star] > w_of([j for j in order[:k] if j != i_star]):
        out["branch"] = "max_weight"
        S = []
        for t in range(1, m + 1):
            if order[t - 1] == i_star:
                continue
            c = w_of([j for j in order[:t] if j != i_star])
            if c > 0 and W - c > 0 and B / c >= v[order[t - 1]] / (W - c) and c >= a[i_star]:
                S.append(t)
        if S:
            r = min(S)
            p_hat = a[i_star] * v[order[r - 1]] / (W - a[i_star])
            out["r"] = order[r - 1]
        else:
            p_hat = B
        out["p_hat"] = float(p_hat)
        out["selected"][i_star] = True
        out["payments"][i_star] = float(p_hat)
        out["epsilons"][i_star] = float(a[i_star] / (W - a[i_star]))
    else:
        out["branch"] = "greedy"
        wk = w_of(order[:k])
        bound = B / wk
        if k < m:
            bound = min(bound, v[order[k]] / (W - wk))
        for j in order[:k]:
            out["selected"][j] = True
            out["payments"][j] = float(a[j] * bound)
            out["epsilons"][j] = float(a[j] / (W - wk))
    return out
