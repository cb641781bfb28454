"""The convex program of Algorithm 1 in reduced form, and its rigorous certificate.

Reduction: public symbols ``c`` with ``p(c) = 0`` do not influence leakage or
distortion; they are mapped to one of their cheapest outputs and removed.
Private symbols with ``p(a) = 0`` are removed too. What remains is

    minimise   f(P) = I(A; C_hat) = sum_{a, j} J(a, j) ln(J(a, j) / (p(a) q(j)))
    subject to P >= 0, P 1 = 1, P(c, j) = 0 where d(c, j) = inf,
               sum_{c, j} w(c, j) P(c, j) <= delta,       w(c, j) = p(c) d(c, j),

with ``J = M P`` (``M`` the reduced prior) and ``q = p_C P``.

Certificate (the dual used by every solver). Because cross-entropy is at least
entropy, for every family of distributions ``pi_j`` on A (one per output)

    f(P) = max_pi sum_{c, j} P(c, j) S_pi(c, j),   S_pi(c, j) = sum_a p(a, c) ln(pi_j(a) / p(a)),

with equality at ``pi_j = p(. | j)``. Hence for any ``pi`` and ``lambda >= 0``

    f* >= LB(pi, lambda) = sum_c min_j [S_pi(c, j) + lambda w(c, j)] - lambda delta,

a Lagrangian bound computed exactly (a finite minimum per row). The gap
``f(P) - LB`` is a rigorous bound on the suboptimality of a feasible ``P``;
``lambda`` is chosen by maximising the concave piecewise-linear ``LB(pi, .)``.
By Sion's minimax theorem the gap is 0 at the optimum for the right ``pi``, so
the certificate is tight when ``P`` is optimal and ``pi`` is its posterior.
"""

import math
from fractions import Fraction

import numpy as np
from scipy.special import rel_entr

from ..exceptions import InfeasibleBudgetError

__all__ = ["Problem", "lagrangian_bound"]

LN2 = math.log(2.0)
#: a problem whose allowed entries are at most this share of its ``k x kh`` cells computes its scores,
#: Lagrangian bounds, distortion and output usage over the allowed entries only (the edge form, see
#: :class:`Problem`): the same quantities (the distortion and usage up to the order of the additions), in
#: time proportional to the allowed entries. Measured crossover of one certificate (random patterns, k = 300 x
#: kh = 3,000, |A| = 2): edge 9 ms against dense 22 ms at 10 % allowed, 17 against 21 at 20 %, 26 against 18
#: at 30 % (k = 500 x 2,000, |A| = 4: 15 / 24, 24 / 32, 46 / 36); erasure alphabets are near 1 % (2 / 23 ms)
EDGE_DENSITY = 0.1
_LOG_TINY = math.log(1e-300)  # the log of a class a posterior cannot hold
_BLOCK = 1 << 16  # lagrangian_bound's passes over k x kh matrices run on blocks of rows of about this many entries


def bound_rounding(pA, k, lb, mu, rhs):
    """Floating-point allowance subtracted from a computed Lagrangian bound (nats).

    The bound is a sum over ``k`` rows of row minima of ``S_pi + mu W``, each entry a sum over
    ``|A|`` classes of ``p(a, c) (ln pi(a) - ln p(a))``: its rounding error is a few ulps of
    the magnitudes summed (the entropy ``H(A)``, the bound itself and ``mu`` times the budget),
    times ``|A|`` and the depth of the summation. Without it a mapping that leaks exactly 0
    (a prior independent up to rounding) was bounded below by 6.6e-17 nats, and a target of
    1e-20 bits was refused as unreachable.
    """
    pA = np.asarray(pA, dtype=float)
    h = float(-(pA[pA > 0] * np.log(pA[pA > 0])).sum())
    depth = pA.size + math.log2(max(k, 2)) + 2.0
    mag = h + abs(lb) + (abs(mu * rhs) if np.isfinite(mu) and mu > 0 else 0.0)
    return 4.0 * depth * np.finfo(float).eps * mag


def maximize_multiplier(ev, scale, mu0=None, n_bisect=60, narrow=None):
    """Maximise a concave piecewise-linear ``g(mu)``, ``mu >= 0``, given ``ev(mu) -> (g, slope)`` (``slope``
    any supergradient of ``g`` at ``mu``): geometric search for a non-positive slope, then, on the bracket
    ``[lo, hi]``, the one-dimensional cutting-plane method (Kelley 1960) with a bisection safeguard. Every
    evaluated value is a valid bound (Lagrangian duality); the best one is returned with its ``mu``.

    The cutting-plane step evaluates ``g`` where the supporting lines at ``lo`` and ``hi`` cross: their
    minimum bounds ``g`` from above on the whole bracket (concavity), so the search stops as soon as a
    value reaches that crossing's height (the maximum, up to rounding), and on a piecewise-linear ``g``
    it ends after at most as many evaluations as the bracket has breakpoints. A step that leaves more
    than half of the bracket is followed by a bisection step (``n_bisect`` evaluations at most): the
    search never takes more than twice the bisection's steps. Bisection alone took 49 evaluations a bound
    on average (the bracket halved to the last bit) on the stress suite's first 300 instances; this takes
    5.4 (at most 12), the geometric search's included.

    ``narrow(lo, hi)``, if given, returns an evaluator equal to ``ev`` on ``[lo, hi]`` (cheaper:
    see :func:`lagrangian_bound`), used once the maximiser is bracketed."""
    best_val, slope = ev(0.0)
    best_mu = 0.0
    if slope <= 1e-13 * scale:
        return best_val, 0.0
    lo, v_lo, s_lo = 0.0, best_val, slope
    hi = mu0 if (mu0 is not None and np.isfinite(mu0) and mu0 > 0) else 1.0
    for _ in range(400):
        val, slope = ev(hi)
        if val > best_val:
            best_val, best_mu = val, hi
        if slope <= 1e-13 * scale:
            break
        lo, v_lo, s_lo = hi, val, slope
        hi = hi * 4.0
    else:
        return best_val, best_mu
    v_hi, s_hi = val, slope
    if narrow is not None:
        ev = narrow(lo, hi)
    # Python floats from here: their arithmetic overflows to inf without a warning (bounds near float's limits)
    lo, hi, v_lo, s_lo, v_hi, s_hi = map(float, (lo, hi, v_lo, s_lo, v_hi, s_hi))
    bisect = False
    for _ in range(2 * n_bisect):
        width = hi - lo
        mid = 0.5 * (lo + hi)
        top = np.inf
        if not bisect and s_lo > s_hi and np.isfinite(v_lo) and np.isfinite(v_hi):
            cross = lo + (v_hi - v_lo - s_hi * width) / (s_lo - s_hi)
            top = v_lo + s_lo * (cross - lo)  # the lines' crossing: no value of g on [lo, hi] is above it
            if lo < cross < hi and math.isfinite(top):
                mid = cross
            else:
                top = np.inf
        if not (lo < mid < hi):
            break
        val, slope = map(float, ev(mid))
        if val > best_val:
            best_val, best_mu = val, mid
        if top < np.inf and val >= top - 12.0 * np.finfo(float).eps * max(abs(top), abs(v_lo), abs(v_hi)):
            break  # the maximum of g (up to rounding)
        if slope > 1e-13 * scale:
            lo, v_lo, s_lo = mid, val, slope
        else:
            hi, v_hi, s_hi = mid, val, slope
        bisect = not bisect and (hi - lo) > 0.5 * width
    return best_val, best_mu


def lagrangian_bound(A, B, rhs, mu0=None, n_bisect=60):
    """``max_{mu >= 0} sum_c min_j (A + mu B)[c, j] - mu rhs`` (concave, piecewise linear in mu).

    ``A`` may hold ``+inf`` (forbidden entries), ``B`` must be finite there (use 0).
    Every evaluated value is a valid bound; the best one is returned with its mu.

    Once the maximiser is bracketed in ``[lo, hi]``, the search evaluates only the entries
    that can be a row's minimum somewhere in ``[lo, hi]``: entry ``j`` of row ``c`` is dropped
    when its line lies above ``min(l_lo, l_hi)`` on the whole bracket (``l_lo``, ``l_hi``: the
    lines of the row's minimisers at ``lo`` and ``hi``, whose minimum bounds the row's
    minimum from above), with a relative margin of 1e-9; the difference is convex piecewise
    linear, so three points (``lo``, ``hi`` and the lines' crossing) decide. The row minima,
    hence the bounds, are the same numbers as over all entries.
    """
    rows = np.arange(A.shape[0])
    # the slope's zero is judged relative to the budget (the slope is the argmins' distortion minus
    # it, two numbers of that size near the maximiser), not to the largest entry of B: with D over
    # many decades a budget of 1e-12 of it was taken as "slope 0" at a multiplier far too small
    scale = max(abs(rhs), 1e-300)
    argmins = {}
    # the k x kh passes run over blocks of rows that stay in the processor's cache (A and B read once a pass, no
    # k x kh temporaries): each row's numbers are those of the whole-matrix operations
    step = max(1, _BLOCK // max(A.shape[1], 1))
    blocks = [slice(s, min(s + step, A.shape[0])) for s in range(0, A.shape[0], step)]
    work = np.empty((min(step, A.shape[0]), A.shape[1]))

    def ev(mu):
        if mu > 0:
            idx = np.empty(A.shape[0], dtype=np.intp)
            vmin = np.empty(A.shape[0])
            for b in blocks:
                V = work[:b.stop - b.start]
                np.multiply(mu, B[b], out=V)
                V += A[b]  # A + mu B
                i = np.argmin(V, axis=1)
                idx[b] = i
                vmin[b] = V[np.arange(i.size), i]
        else:
            idx = np.argmin(A, axis=1)
            vmin = A[rows, idx]
        argmins[mu] = idx
        val = float(vmin.sum()) - mu * rhs
        slope = float(B[rows, idx].sum()) - rhs
        return val, slope

    def narrow(lo, hi):
        if A.shape[1] <= 16 or lo not in argmins or hi not in argmins:
            return ev
        a_lo, b_lo = A[rows, argmins[lo]], B[rows, argmins[lo]]
        a_hi, b_hi = A[rows, argmins[hi]], B[rows, argmins[hi]]
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = np.where(b_lo != b_hi, (a_hi - a_lo) / (b_lo - b_hi), lo)
        cross = np.clip(np.nan_to_num(cross, nan=lo), lo, hi)
        keep = np.zeros(A.shape, dtype=bool)
        test = np.empty(work.shape, dtype=bool)
        margin = 1e-9 * (np.abs(a_lo) + np.abs(a_hi) + hi * (np.abs(b_lo) + np.abs(b_hi))) + 1e-300
        points = []
        for m in (lo, hi, cross):
            m = np.asarray(m, dtype=float)
            u = np.minimum(a_lo + m * b_lo, a_hi + m * b_hi)
            points.append((m, (u + margin)[:, None]))
        for b in blocks:
            V, t, kb = work[:b.stop - b.start], test[:b.stop - b.start], keep[b]
            for m, thr in points:
                np.multiply(m[b, None] if m.ndim else m, B[b], out=V)
                V += A[b]  # A + m B
                with np.errstate(invalid="ignore"):
                    np.less_equal(V, thr[b], out=t)
                kb |= t
        keep[rows, argmins[lo]] = True
        keep[rows, argmins[hi]] = True
        # every row keeps its minimisers at lo and hi, so each row's entries start where the previous row's end
        counts = np.count_nonzero(keep, axis=1)
        if counts.sum() > 0.5 * A.size:
            return ev
        # the kept entries row by row, columns increasing (np.nonzero's order), through their flat indices: a
        # two-dimensional np.nonzero costs several times as much on a k x kh mask
        flat = np.flatnonzero(keep)
        if A.flags.c_contiguous and B.flags.c_contiguous:
            a, b = A.ravel()[flat], B.ravel()[flat]
        else:
            rr, cc = np.divmod(flat, A.shape[1])
            a, b = A[rr, cc], B[rr, cc]
        starts = np.zeros(A.shape[0], dtype=np.intp)
        np.cumsum(counts[:-1], out=starts[1:])

        def ev_small(mu):
            v = a + mu * b if mu > 0 else a
            vmin = np.minimum.reduceat(v, starts)
            hit = v == np.repeat(vmin, np.diff(np.r_[starts, v.size]))
            slope_rows = np.minimum.reduceat(np.where(hit, b, np.inf), starts)
            return float(vmin.sum()) - mu * rhs, float(slope_rows.sum()) - rhs

        return ev_small

    return maximize_multiplier(ev, scale, mu0, n_bisect, narrow=narrow)


def edge_bound(A, B, indptr, rhs, mu0=None, n_bisect=60, n_cols=None):
    """:func:`lagrangian_bound` over the allowed entries only: ``A`` and ``B`` are vectors over the entries
    of a ``k``-row pattern stored row by row (row ``c``'s entries at ``indptr[c]:indptr[c + 1]``, columns
    increasing, every row non-empty), ``n_cols`` the dense matrix's columns. The evaluations are the dense
    one's: the row minima of ``A + mu B`` with the ``B`` of each row's first minimiser (its lowest column,
    as ``np.argmin``), and, once the maximiser is bracketed (more than 16 columns: where the dense search
    narrows), the smallest ``B`` among the row's minimisers (the narrowed evaluator's slope). So the same
    values and slopes, in time proportional to the entries."""
    k = indptr.size - 1
    starts = indptr[:-1]
    row = np.repeat(np.arange(k), np.diff(indptr))
    pos = np.arange(A.size)
    scale = max(abs(rhs), 1e-300)

    def ev(mu):
        V = A + mu * B if mu > 0 else A
        m = np.minimum.reduceat(V, starts)
        first = np.minimum.reduceat(np.where(V == m[row], pos, A.size), starts)
        first = np.minimum(first, A.size - 1)  # a row of NaN (no minimiser): its value is NaN anyway
        return float(m.sum()) - mu * rhs, float(B[first].sum()) - rhs

    def ev_low(mu):
        V = A + mu * B if mu > 0 else A
        m = np.minimum.reduceat(V, starts)
        slope_rows = np.minimum.reduceat(np.where(V == m[row], B, np.inf), starts)
        return float(m.sum()) - mu * rhs, float(slope_rows.sum()) - rhs

    def narrow(lo, hi):
        return ev if n_cols is not None and n_cols <= 16 else ev_low

    return maximize_multiplier(ev, scale, mu0, n_bisect, narrow=narrow)


@np.errstate(all="ignore")  # extreme priors overflow on the way; the exact h and the gap judge every point
def _dual_pi_batch(A, B, OK, m, U0, stop=0.0, max_steps=300, shrink=0.1):
    """Maximisers of ``h_n(u) = sum_{c: OK[c, n]} min(m_c, A_c u + B[c, n])`` over ``logsumexp(u) <= 0``,
    one per column ``n`` (the best ``log pi_j`` of each light output, see :meth:`Problem.refine_pi`; the
    outputs are independent there, as ``m`` holds the rows' best values over the *other*, well-used
    outputs), each with a duality gap: returns ``(U, converged)`` of shapes (na, n) and (n,), where
    ``converged[n]`` says that ``h_n(U[:, n])`` is certified within ``max(stop, 1e-13 (1 + sum |terms|))``
    of the column's maximum. ``A``: (R, na), non-negative (``p(a, c)``); ``B`` and ``OK``: (R, n);
    ``m``: (R,) (``inf``: the row has no other output); ``U0``: (na, n) starting points, kept when no
    point found beats them.

    The dual. Writing ``min(m_c, z_c) = min_{s_c in [0, 1]} s_c z_c + (1 - s_c) m_c`` (``s_c = 1`` where
    ``m_c = inf``) and exchanging max and min (Sion: the objective is linear in ``s`` and concave in
    ``u``, ``s`` ranges over a box)::

        max_u h(u) = min_{s in [0, 1]^R} phi(s),
        phi(s) = sum_a g_a ln(g_a / G) + sum_c s_c b_c + (1 - s_c) m_c,   g = A^T s, G = sum_a g_a,

    since ``max g.u`` over ``logsumexp(u) <= 0`` is attained at ``u(s) = ln(g / G)``: the posterior of an
    output that receives the share ``s_c`` of each row. ``phi`` is convex, its gradient is
    ``z_c(u(s)) - m_c`` and its Hessian ``A diag(1/g) A^T - p p^T / G`` (``p = A 1``) has rank at
    most ``na``. It is minimised by a primal-dual interior-point method on the box (multipliers
    ``y0 >= 0`` of ``s >= 0`` and ``y1 >= 0`` of ``s <= 1``; each step aims at a tenth of the current
    mean complementarity ``tau``; Newton's system on ``phi``'s barrier gradient with the primal-dual
    scaling ``y0 / s + y1 / (1 - s)``, solved through the Woodbury identity in ``O(R na^2)``). The
    steps stay inside the box and are halved until the barrier function's directional derivative is
    not positive (convex along the line: it still decreases there). ``1 - s`` is kept as a variable of
    its own (``s`` within 1e-16 of 1 has no digits left for it). Every ``u(s)`` is a point of the
    primal, evaluated exactly, and
    ``phi(s) - h(u(s)) = sum_c s_c (z_c - m_c)_+ + (1 - s_c)(m_c - z_c)_+`` (at most ``tau`` per row on
    the central path) bounds its distance to the maximum. All columns run together, each with its own
    ``tau``, steps and stopping test. (A pure barrier method, with the barrier's own Hessian
    ``tau / s^2``, needed a hundred steps and more on a column where a variable sat ten times off its
    central value after each decrease of ``tau``: every step of the column was cut to reach it.)

    It replaced a Newton search on a smoothed (soft-minimum) version of ``h`` with a continuation on
    the smoothing, whose columns that did not converge went to Kelley's cutting planes (one HiGHS
    LP per cut): on a prior with p(c) from 5e-10 to 0.38 (|A| = 4, k = 27) every column now
    converges, in 12-23 ms a batch instead of 0.44-0.73 s, and no column goes to the cuts (1,471 LPs
    before).
    """
    A = np.asarray(A, dtype=float)
    na = A.shape[1]
    n = B.shape[1]
    fin = np.isfinite(m)
    free = OK & fin[:, None]  # the dual's variables, in (0, 1)
    okf = OK.astype(float)
    fixed = okf * ~free  # rows without another output: s = 1
    mm = np.where(fin, m, 0.0)[:, None]
    Bz = np.where(OK, B, 0.0)
    Ub = np.column_stack([A, A.sum(axis=1)])  # the Hessian's factor: H = Ub diag(1/g, -1/G) Ub^T
    present = (A.T @ okf) > 0  # classes some row of the column holds (the others get pi = 0)
    stop = np.broadcast_to(np.asarray(stop, dtype=float), (n,))
    nfree = free.sum(axis=0)

    def point(S, cols):
        """``u(s) = ln(g / G)`` and ``z = A u + b`` of the given columns (``ln 1e-300`` where ``g_a = 0``)."""
        g = A.T @ S
        G = g.sum(axis=0)
        pr = g > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            U = np.where(pr, np.log(np.where(pr, g, 1.0)) - np.log(G), _LOG_TINY)
        return g, G, U, A @ U + Bz[:, cols]

    def h_of(Z, cols):
        return (np.where(free[:, cols], np.minimum(mm, Z), Z) * okf[:, cols]).sum(axis=0)

    def gap_of(S, T, Z, cols):
        d = np.where(free[:, cols], Z - mm, 0.0)
        return (S * np.maximum(d, 0.0) + T * np.maximum(-d, 0.0)).sum(axis=0)

    every = np.arange(n)
    # the start without the classes the column's rows do not hold, renormalised: h can only rise
    U0 = np.asarray(U0, dtype=float)
    held = present.any(axis=0)  # a column without rows keeps its start
    V0 = np.where(present | ~held, U0, -np.inf)
    top = V0.max(axis=0)
    U0 = np.where(held, np.maximum(V0 - (top + np.log(np.exp(V0 - top).sum(axis=0))), _LOG_TINY), U0)
    best_u, best_h = U0, h_of(A @ U0 + Bz, every)
    # phi(0): sum of the m_c, plus the rows without another output at their own posterior
    has_fixed = fixed.any(axis=0)
    _, _, Uf, Zf = point(np.where(has_fixed, fixed, okf), every)
    ub = (mm * free).sum(axis=0) + np.where(has_fixed, (Zf * fixed).sum(axis=0), 0.0)
    hf = h_of(Zf, every)
    better = has_fixed & (hf > best_h)
    best_u[:, better], best_h[better] = Uf[:, better], hf[better]
    S = np.where(free, 0.5, okf)
    T = np.where(free, 0.5, 0.0)  # 1 - S on the variables, kept apart: S near 1 has no digits left for it
    g, G, U, Z = point(S, every)
    h = h_of(Z, every)
    ub = np.fmin(ub, h + gap_of(S, T, Z, every))  # fmin: a NaN (overflow on the way) is no bound
    better = h > best_h
    best_u[:, better], best_h[better] = U[:, better], h[better]
    floor = 1e-13 * (1.0 + (np.abs(np.where(free, np.minimum(mm, Z), Z)) * okf).sum(axis=0))
    converged = ub - best_h <= np.maximum(stop, floor)
    tau0 = np.where(free, np.abs(Z - mm), 0.0).max(axis=0) + 1e-300
    # the box's multipliers (y0 for s >= 0, y1 for s <= 1), central at the start: s y0 = (1 - s) y1 = tau0
    Y0 = np.where(free, 2.0 * tau0, 0.0)
    Y1 = Y0.copy()
    long = np.ones(n, dtype=bool)  # the column's last steps were long ones (else: a centring step next)
    running = ~converged & (nfree > 0)
    diag = np.arange(na + 1)
    for _ in range(max_steps):
        if not running.any():
            break
        idx = np.flatnonzero(running)
        Si, Ti, f = S[:, idx], T[:, idx], free[:, idx]
        Y0i, Y1i = Y0[:, idx], Y1[:, idx]
        # the target of the complementarity: a tenth of its mean (primal-dual path following), or the mean
        # itself after a step cut below half (a centring step: where the optimum is s = 0 with many optimal u,
        # u(s) is optimal only near the central path; without it h(u(s)) wandered 1e-6..1e-3 below it)
        ti = (np.where(long[idx], shrink, 1.0) * (Si * Y0i + Ti * Y1i).sum(axis=0)
              / (2.0 * np.maximum(nfree[idx], 1)))
        g, G, U, Z = point(Si, idx)
        Sf, Tf = np.where(f, Si, 0.5), np.where(f, Ti, 0.5)  # the barrier's terms on the variables only
        grad = np.where(f, Z - mm - ti / Sf + ti / Tf, 0.0)
        # the primal-dual scaling y / s of the box (not the barrier's tau / s^2: that one is a poor model of a
        # variable ten times off its central value, and held every step of the column back)
        w = np.where(f, 1.0 / np.where(f, Y0i / Sf + Y1i / Tf, 1.0), 0.0)
        # (D + Ub C Ub^T)^-1 r = D^-1 r - D^-1 Ub K^-1 Ub^T D^-1 r,  K = C^-1 + Ub^T D^-1 Ub
        K = np.einsum("cn,ca,cb->nab", w, Ub, Ub)
        K[:, diag, diag] += np.vstack([np.where(present[:, idx], g, 1.0), -G]).T
        y = Ub.T @ (w * grad)
        try:
            zk = np.linalg.solve(K, y.T[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            zk = np.full((idx.size, na + 1), np.nan)
            for t in range(idx.size):  # a singular system: the others one by one
                try:
                    zk[t] = np.linalg.solve(K[t], y[:, t])
                except np.linalg.LinAlgError:
                    pass
        dS = w * (Ub @ zk.T) - w * grad
        lam2 = -(grad * dS).sum(axis=0)  # the Newton decrement, squared
        bad = ~np.isfinite(lam2)
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(f & (dS > 0), Ti / dS, np.where(f & (dS < 0), -Si / dS, np.inf)).min(axis=0)
        dY0 = np.where(f, (ti - Sf * Y0i - Y0i * dS) / Sf, 0.0)
        dY1 = np.where(f, (ti - Tf * Y1i + Y1i * dS) / Tf, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            room_y = np.minimum(np.where(dY0 < 0, -Y0i / dY0, np.inf).min(axis=0),
                                np.where(dY1 < 0, -Y1i / dY1, np.inf).min(axis=0))
        a_y = np.where(np.isfinite(lam2), np.minimum(1.0, 0.99 * room_y), 0.0)
        a = np.where(bad | (lam2 <= 0), 0.0, np.minimum(1.0, 0.99 * room))
        pending = a > 0
        for _halving in range(60):
            if not pending.any():
                break
            p = np.flatnonzero(pending)
            St = Si[:, p] + a[p] * dS[:, p]
            Zt = point(St, idx[p])[3]
            tp, fp = ti[p], f[:, p]
            Stf, Ttf = np.where(fp, St, 0.5), np.where(fp, Ti[:, p] - a[p] * dS[:, p], 0.5)
            slope = (np.where(fp, Zt - mm - tp / Stf + tp / Ttf, 0.0) * dS[:, p]).sum(axis=0)
            ok = slope <= 0
            pending[p[ok]] = False
            a[p[~ok]] *= 0.5
        a[pending] = 0.0
        S[:, idx] = Si + a * dS
        T[:, idx] = np.where(f, Ti - a * dS, 0.0)
        Y0[:, idx] = Y0i + a_y * dY0
        Y1[:, idx] = Y1i + a_y * dY1
        long[idx] = np.minimum(a, a_y) >= 0.5
        _, _, U, Z = point(S[:, idx], idx)
        h = h_of(Z, idx)
        ub[idx] = np.fmin(ub[idx], h + gap_of(S[:, idx], T[:, idx], Z, idx))
        better = h > best_h[idx]
        best_u[:, idx[better]], best_h[idx[better]] = U[:, better], h[better]
        done = ub[idx] - best_h[idx] <= np.maximum(stop[idx], floor[idx])
        converged[idx[done]] = True
        spent = bad | ((a == 0) & (a_y == 0)) | (ti * nfree[idx] < 1e-3 * floor[idx])
        running[idx[done | spent]] = False
    return best_u, converged


def _split(x):
    """Veltkamp's split of ``x`` (``|x| < 2**996``) into two halves of 26 bits each: ``x == hi + lo`` exactly."""
    c = 134217729.0 * x  # 2**27 + 1
    hi = c - (c - x)
    return hi, x - hi


def row_offset(pc, shift):
    """``sum_c pc(c) shift(c)`` exactly as the pair ``(hi, lo)``: ``hi`` the correctly rounded sum, ``lo`` the
    rest, rounded (a budget near the offset is then converted to its distance from it without the offset's
    rounding, one ulp of 1e9 being 0.12 of a spread of 1e-6). Each product is split exactly (Dekker) after scaling
    ``shift`` into ``[0.5, 1)``, then summed by ``math.fsum``. ``(inf, 0)`` when the sum overflows.

    The split is exact only while the products' error parts stay normal numbers: a product ``pc(c) mant(c)`` below
    about ``2**-969`` (``pc(c)`` under ~1e-292), or a term scaled back below it (an offset near float's underflow),
    loses its bits under ``2**-1074`` (times the scaling ``2**expo``), and the pair is then not correctly rounded.
    """
    pc = np.asarray(pc, dtype=float)
    mant, expo = np.frexp(np.asarray(shift, dtype=float))
    prod = pc * mant
    (ah, al), (bh, bl) = _split(pc), _split(mant)
    err = ((ah * bh - prod) + ah * bl + al * bh) + al * bl
    with np.errstate(over="ignore"):
        terms = np.concatenate([np.ldexp(prod, expo), np.ldexp(err, expo)])
    if not np.isfinite(terms).all():
        return float("inf"), 0.0
    try:
        hi = math.fsum(terms)
    except OverflowError:
        return float("inf"), 0.0
    return hi, math.fsum(np.append(terms, -hi))


class OffsetUnits:
    """The distortion units of :class:`Problem` and :class:`~privrelease.mapping._sparse.SparseProblem`.

    Every row of a mapping sums to 1, so subtracting the row minimum ``m(c)`` from row ``c`` lowers every
    mapping's expected distortion by the same constant ``offset = sum_c p(c) m(c)``: the problem is solved on
    ``(D - m) / scale`` with the budget ``(delta - offset) / scale``, and every tolerance follows the
    distortions' spread, not a common offset. The subtraction is exact for entries within a factor 2 of their
    row's minimum (Sterbenz) and otherwise rounds the difference to its own relative precision. ``scale`` is the
    largest shifted entry of the rows with ``p(c) > 0``: the rows with ``p(c) = 0`` are dropped from the problem,
    and their entries would only shrink every internal distortion (a ``1e300`` in such a row left the others near
    ``1e-300``)."""

    def _set_units(self, pc, shift):
        """Set ``offset``, ``offset_lo`` for the row minima ``shift`` (finite) and the prior's column sums ``pc``;
        returns the shift to apply (zeros where the offset overflows: the distortions are then used as they
        are)."""
        #: the constant every mapping's expected distortion carries (user units): ``sum_c p(c) min_j d(c, j)``,
        #: as ``offset + offset_lo`` (:func:`row_offset`)
        self.offset, self.offset_lo = row_offset(pc, shift)
        if not np.isfinite(self.offset):
            self.offset, self.offset_lo = 0.0, 0.0
            return np.zeros_like(shift)
        return shift

    def _set_scale(self, shifted):
        """Set ``scale`` to the largest of the shifted finite entries ``shifted`` of the rows with ``p(c) > 0``
        (1 when there is none, or it is 0 or overflows): every internal tolerance is then relative, and ``D``,
        ``1e-13 * D`` and ``1e6 + D`` give the same mapping."""
        top = float(shifted.max()) if shifted.size else 0.0
        self.scale = top if top > 0 and np.isfinite(top) else 1.0

    def to_internal(self, delta):
        """A distortion budget in user units -> internal units: its distance to the offset (correctly rounded)
        over ``scale``."""
        delta = float(delta)
        if not np.isfinite(delta):
            return delta
        return math.fsum((delta, -self.offset, -self.offset_lo)) / self.scale

    def to_user(self, value):
        """An internal distortion (or budget, or lower bound) -> user units (``offset`` added back, correctly
        rounded)."""
        value = float(value) * self.scale
        if not np.isfinite(value):
            return value
        return math.fsum((self.offset, self.offset_lo, value))

    def to_user_up(self, value):
        """:meth:`to_user` rounded up as far as :meth:`to_internal` sees it: the smallest float whose internal value
        is at least ``value`` (at most a few ulps above :meth:`to_user`; a budget equal to it admits every mapping of
        internal distortion ``value``)."""
        user = self.to_user(value)
        for _ in range(8):
            if not np.isfinite(user) or self.to_internal(user) >= value:
                break
            user = float(np.nextafter(user, np.inf))
        return user

    def to_user_down(self, value):
        """:meth:`to_user` rounded down: the largest float at most ``offset + offset_lo + value * scale`` (a lower
        bound stays one in user units, where rounding to nearest could lift it half an ulp of the offset, 0.06 of a
        spread of 1e-6 at 5e8)."""
        user = self.to_user(value)
        if not np.isfinite(user):
            return user
        exact = Fraction(self.offset) + Fraction(self.offset_lo) + Fraction(float(value)) * Fraction(self.scale)
        if Fraction(user) > exact:
            user = float(np.nextafter(user, -np.inf))
        return user

    def gap_to_user(self, value):
        """An internal difference of distortions (a gap, a tolerance) -> user units (no offset)."""
        return float(value) * self.scale


class Problem(OffsetUnits):
    """Reduced form of ``(prior, distortion)``; information in nats, distortions relative to each public
    symbol's cheapest output and in units of ``scale`` (:class:`OffsetUnits`: ``to_internal`` / ``to_user``
    convert budgets and distortions, ``gap_to_user`` differences such as gaps and tolerances). Relative to the
    row minima, every tolerance follows the distortions' spread, not a common offset (``1e6 + 1e-6 D0`` was
    certified at 10 times its optimum, its tolerances being 1e-12 of 1e6).

    With at most ``EDGE_DENSITY`` of its cells allowed (``edge_mode``: an erasure alphabet), the scores,
    the Lagrangian bounds of :meth:`certificate`, the distortion and the outputs' usage are computed over
    the allowed entries only (:func:`edge_bound`); the interface and the numbers are the dense ones."""

    def __init__(self, prior, distortion):
        self.prior = prior
        self.D_user = distortion
        finite = np.isfinite(distortion)
        empty = ~finite.any(axis=1)
        if np.any(empty):
            bad = int(np.flatnonzero(empty)[0])
            raise InfeasibleBudgetError(
                f"row {bad} of distortion has no finite entry: public symbol {bad} cannot be mapped "
                "anywhere, so no distortion budget is feasible (smallest feasible distortion: inf)",
                smallest_feasible=float("inf"),
            )
        pa = prior.sum(axis=1)
        pc = prior.sum(axis=0)
        shift = self._set_units(pc, np.where(finite, distortion, np.inf).min(axis=1))
        distortion = distortion - shift[:, None]
        Dm = np.where(finite, distortion, np.inf)
        # the cheapest outputs before the division: a row with p(c) = 0 may overflow to inf once divided
        self.argmin_full = Dm.argmin(axis=1)
        self._set_scale(distortion[finite & (pc > 0)[:, None]])
        with np.errstate(over="ignore"):  # only rows with p(c) = 0 can overflow
            distortion = distortion / self.scale
        self.D = distortion
        self.n_public, self.n_outputs = distortion.shape
        self.pc_full = pc
        self.rows = np.flatnonzero(pc > 0)
        self.arows = np.flatnonzero(pa > 0)
        self.M = prior[np.ix_(self.arows, self.rows)]
        self.pA = self.M.sum(axis=1)
        self.pc = self.M.sum(axis=0)
        self.mask = finite[self.rows]
        self.d = np.where(self.mask, distortion[self.rows], 0.0)
        self.W = self.pc[:, None] * self.d
        Wmin = np.where(self.mask, self.W, np.inf).min(axis=1)
        self.delta_min = float(Wmin.sum())
        self.delta_max = float(np.where(self.mask, self.W, -np.inf).max(axis=1).sum())
        self.k, self.kh = self.mask.shape
        # the cheapest mapping: each row on its first cheapest output
        self.P_min = np.zeros((self.k, self.kh))
        self.P_min[np.arange(self.k), self.argmin_full[self.rows]] = 1.0
        # exact ties: every row's minimum is 0 after the shift, so its cheapest outputs are its entries equal to 0
        # (no tolerance: on distortions over many decades a 1e-12 entry beside a 0 is a dearer output, not a tie)
        self.argmin_mask = self.mask & (self.d <= 0.0)
        #: number of cheapest outputs of each row (a unique minimum-distortion mapping when all are 1)
        self.n_argmin = self.argmin_mask.sum(axis=1)
        self._MU = None  # M U of the posteriors' fallback mapping U (made once, on first use)
        #: the edge form: the scores, Lagrangian bounds, distortion and output usage over the allowed entries only
        #: (an erasure alphabet: 300 inputs x 24,677 outputs of which 0.9 % allowed)
        n_allowed = int(np.count_nonzero(self.mask))
        self.edge_mode = n_allowed <= EDGE_DENSITY * self.mask.size
        #: the forbidden cells (None when every cell is allowed): :meth:`scores` writes ``+inf`` over them in place
        self._forbidden = None if n_allowed == self.mask.size else ~self.mask
        if self.edge_mode:
            self._make_edges()

    sparse = False

    def _make_edges(self):
        """The edge form's arrays: the allowed entries row by row (columns increasing), their weights and
        prior columns."""
        er, ec = np.nonzero(self.mask)
        self._er, self._ec = er, ec
        self._indptr = np.zeros(self.k + 1, dtype=np.int64)
        np.cumsum(np.bincount(er, minlength=self.k), out=self._indptr[1:])
        self._We = self.W[er, ec]
        self._Mr = self.M[:, er]  # (|A|, n_allowed)

    # ---- edges (the interface shared with :class:`~privrelease.mapping._sparse.SparseProblem`) ----
    def edges(self):
        """``(row, output, n)`` of every allowed entry (the variables of the linear programs)."""
        r, c = np.nonzero(self.mask)
        return r, c, r.size

    def edge_weights(self):
        r, c = np.nonzero(self.mask)
        return self.W[r, c]

    def from_edges(self, x):
        """Reduced mapping matrix from values on :meth:`edges`."""
        r, c = np.nonzero(self.mask)
        P = np.zeros((self.k, self.kh))
        P[r, c] = x
        return P

    def joint(self, P):
        """``J = M P``.

        Dense in the edge form too: one product over the mapping (``|A|`` rows), and its additions' order
        steers the leakage search (the objective's last bits): summed over the allowed entries instead, a
        capped erasure fit (300 records x 7 fields) took another path, 642 Newton systems instead of 574,
        both certified."""
        return self.M @ P

    # ---- objective and posterior ------------------------------------------------------
    def objective(self, P, J=None):
        """I(A; C_hat) in nats of a reduced mapping (``J``: its :meth:`joint`, when the caller has it)."""
        J = self.joint(P) if J is None else J
        q = J.sum(axis=0)
        return max(float(rel_entr(J, self.pA[:, None] * q[None, :]).sum()), 0.0)

    def distortion(self, P):
        if self.edge_mode:
            return float((self._We * np.asarray(P)[self._er, self._ec]).sum())
        return float((self.W * np.where(self.mask, P, 0.0)).sum())

    def posteriors(self, P, smooth=1e-12, J=None):
        """Columns ``pi_j = p(. | j)``, each a proper distribution (unused outputs get the
        posterior of a uniform fallback mapping, a valid if loose choice). ``J``: ``P``'s :meth:`joint`, when the
        caller has it."""
        if self._MU is None:
            self._MU = self.M @ (self.mask / self.mask.sum(axis=1, keepdims=True))
        J = (self.joint(P) if J is None else J) + smooth * self._MU
        J = np.maximum(J, 1e-300)
        return J / J.sum(axis=0, keepdims=True)

    def _edge_scores(self, pi):
        """:meth:`scores` on the allowed entries (edge form), a vector."""
        L = np.log(pi) - np.log(self.pA)[:, None]
        return np.einsum("ae,ae->e", self._Mr, L[:, self._ec])

    def scores(self, pi):
        """``S_pi(c, j) = sum_a p(a, c) ln(pi_j(a)/p(a))`` with ``+inf`` on forbidden entries."""
        if self.edge_mode:
            S = np.full((self.k, self.kh), np.inf)
            S[self._er, self._ec] = self._edge_scores(pi)
            return S
        L = np.log(pi) - np.log(self.pA)[:, None]
        S = self.M.T @ L
        # +inf written over the forbidden cells of the product itself (none: nothing to write) instead of into a
        # new k x kh array by np.where: the same numbers
        if self._forbidden is not None:
            np.copyto(S, np.inf, where=self._forbidden)
        return S

    def _usage(self, P):
        """``q = p_C P``, the outputs' probabilities."""
        if self.edge_mode:
            return np.bincount(self._ec, weights=self.pc[self._er] * np.asarray(P)[self._er, self._ec],
                               minlength=self.kh)
        return self.pc @ P

    def _bound(self, pi, free, rhs, mu0, drop=None):
        """``lagrangian_bound(S_pi, W or 0, rhs, mu0)`` -> ``(lb, mu)``, the outputs ``drop`` (boolean, kh)
        left out of the row minima (None when a row then has no finite score): dense, or over the allowed
        entries in the edge form (the same bound)."""
        if self.edge_mode:
            A = self._edge_scores(pi)
            if drop is not None:
                A[drop[self._ec]] = np.inf
                if not np.logical_or.reduceat(np.isfinite(A), self._indptr[:-1]).all():
                    return None
            B = np.zeros_like(self._We) if free else self._We
            return edge_bound(A, B, self._indptr, rhs, None if free else mu0, n_cols=self.kh)
        A = self.scores(pi)
        if drop is not None:
            A[:, drop] = np.inf
            if not np.isfinite(A).any(axis=1).all():
                return None
        return lagrangian_bound(A, np.zeros(self.W.shape) if free else self.W, rhs, None if free else mu0)

    def certificate(self, P, delta, mu0=None, target_bits=None, lp=True, return_pi=False, pi_hint=None,
                    both_starts=False):
        """(gap in bits, multiplier, objective in nats) for a feasible reduced mapping.

        ``pi_hint`` (``|A| x kh``, columns proper distributions), if given, offers its
        columns for the outputs ``P`` leaves unused (their own posterior is meaningless),
        and the better of the two bounds is kept: e.g. the posteriors of the mapping an
        exact polish started from, whose outputs were all in use.

        With ``target_bits``, when the plain posterior choice of ``pi`` leaves a gap
        above it, ``pi`` is improved on lightly used outputs (:meth:`refine_pi`).
        ``return_pi=True`` appends the ``pi`` of the returned bound (its reduced costs
        ``S_pi + mu W`` are the ones to price with: an unused output's raw posterior is
        meaningless). ``both_starts=True`` (the final certification of an answer): when the hint
        won the cheap bound but its refinement stays above ``target_bits``, refine from the
        mapping's own posteriors too (twice the work, so not inside the solvers' loops).
        """
        J = self.joint(P)  # one product for both
        f = self.objective(P, J)
        pi = self.posteriors(P, J=J)
        if f <= 0.0:
            return (0.0, 0.0, 0.0, pi) if return_pi else (0.0, 0.0, 0.0)
        rhs = max(float(delta), self.delta_min)
        free = not np.isfinite(rhs) or rhs >= self.delta_max
        Wb = np.zeros(self.W.shape) if free else self.W  # calloc: no pass over the cells
        rhs = 0.0 if free else rhs
        lb, mu = self._bound(pi, free, rhs, mu0)
        own = (pi, lb, mu)  # the mapping's own posteriors: the other start of the refinement below
        if pi_hint is not None and (f - lb) / LN2 > (0.0 if target_bits is None else target_bits):
            unused = self._usage(P) <= 0
            if unused.any():
                pi_h = pi.copy()
                pi_h[:, unused] = pi_hint[:, unused]
                lb_h, mu_h = self._bound(pi_h, free, rhs, mu0)
                if lb_h > lb:
                    pi, lb, mu = pi_h, lb_h, mu_h
        if pi_hint is not None and (f - lb) / LN2 > (0.0 if target_bits is None else target_bits):
            # the bound is a function of pi alone, valid whatever P: pi_hint on every output too.
            # With near-deterministic posteriors the bound of an exact polish's sparse point is
            # loose (an output used by one class only has pi(a') ~ 1e-9, so the other class's rows
            # score ln 1e-9 there: 0.3 bits below a point 5e-7 bits from the optimum), while the
            # interior point it started from, all entries in use, bounds within 5e-7 bits
            lb_h, mu_h = self._bound(pi_hint, free, rhs, mu0)
            if lb_h > lb:
                pi, lb, mu = pi_hint, lb_h, mu_h
        lb, best_mu, best_pi = self._refine_bound(P, f, pi, lb, mu, Wb, rhs, free, target_bits, lp)
        if both_starts and target_bits is not None and (f - lb) / LN2 > target_bits and own[0] is not pi:
            # the hint won the cheap bound but its refinement stopped short: refine from the mapping's
            # own posteriors too (a point cleaned onto the budget can hold 1e-15 entries on outputs the
            # hint prices badly: |A| = 10, k = 10, 1.1e-6 bits from the hint against 6e-12 from its own)
            lb2, mu2, pi2 = self._refine_bound(P, f, *own, Wb, rhs, free, target_bits, lp)
            if lb2 > lb:
                lb, best_mu, best_pi = lb2, mu2, pi2
        mu = best_mu
        lb -= bound_rounding(self.pA, self.k, lb, mu, rhs)
        gap = max(f - lb, 0.0)
        if return_pi:
            return gap / LN2, mu, f, best_pi
        return gap / LN2, mu, f

    def _refine_bound(self, P, f, pi, lb, mu, Wb, rhs, free, target_bits, lp):
        """:meth:`certificate`'s refinement of ``pi`` on lightly used outputs from a start ``(pi, lb, mu)``:
        ``(lb, mu, pi)`` of the best bound reached (the start when nothing beats it)."""
        # outputs "light" relative to the largest: first 1e-2 (posteriors of barely used outputs
        # are unreliable), then 1e-9 (only the unused ones: a light but used output's posterior
        # is meaningful and must not be moved), then the smallest set in between that can certify
        # (below)
        pi0, mu0_ = pi, mu
        best = [lb, mu, pi]
        q = self._usage(P)

        def stage(pi, mu, light_rel, lp_stage):
            for _ in range(3):
                pi2 = self.refine_pi(P, pi, Wb, mu, budget=0.02 * target_bits * LN2, lp=lp_stage,
                                     light_rel=light_rel)
                lb2, mu2 = self._bound(pi2, free, rhs, mu)
                if lb2 <= best[0]:
                    break
                pi, mu = pi2, mu2
                best[:] = [lb2, mu2, pi2]
                if (f - lb2) / LN2 <= target_bits:
                    break

        def upper(pi, light, mu):
            # no pi on the light outputs beats leaving them out of the row minima: the bound of the other
            # outputs alone (and its multiplier) bounds every bound a refinement of the light ones reaches
            return self._bound(pi, free, rhs, mu, drop=light)

        tried = []
        for light_rel in (1e-2, 1e-9):
            if target_bits is None or (f - best[0]) / LN2 <= target_bits:
                break
            pi, mu = pi0, mu0_
            light = q <= light_rel * q.max()
            tried.append(light)
            lp_stage = lp
            if light.any() and not light.all():
                up = upper(pi, light, mu)
                if up is not None:
                    ub, mu = up  # the multiplier suggested by the well-used outputs alone
                    # when even ub leaves a gap above the target the point itself is not optimal enough
                    # and no refinement certifies it: only the cheap stage (the posteriors of the used
                    # outputs), not the per-output search (near-deterministic priors: 28 s of search per
                    # solve, for nothing)
                    if (f - ub) / LN2 > 1.01 * target_bits:
                        lp_stage = False
            stage(pi, mu, light_rel, lp_stage)
        if target_bits is not None and (f - best[0]) / LN2 > target_bits:
            # the smallest set of light outputs whose refinement can still certify (its ub within the target),
            # refined from the point's own posteriors. An exact polish leaves outputs at 1e-9..1e-7 of the
            # largest, used by the few rows on its support where the optimum spreads ~1e-9 over many rows:
            # their own posteriors are O(1) off the optimum's, so the 1e-9 set (unused outputs only) cannot
            # certify, while the 1e-2 set also holds the outputs used at 1e-5..1e-2, whose posteriors are
            # right and whose per-output refinement (each against the others' row minima) stops short
            # (families seed 27, pc_range, k = 48, |A| = 4: 2.0e-6 bits at 1e-2, 1.3e-3 at 1e-9, 1.8e-8 at 1e-5)
            own = self.posteriors(P)
            for light_rel in (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3):
                light = q <= light_rel * q.max()
                if not light.any() or light.all() or any(np.array_equal(light, t) for t in tried):
                    continue
                tried.append(light)
                up = upper(own, light, mu0_)
                if up is not None and (f - up[0]) / LN2 <= target_bits:
                    stage(own, up[1], light_rel, lp)
                    break
        return best[0], best[1], best[2]

    def refine_pi(self, P, pi, Wb, mu, max_columns=400, max_cuts=30, budget=0.0, lp=True, light_rel=1e-2):
        """Improve ``pi_j`` on lightly used outputs (any ``pi`` gives a valid bound).

        The posterior of an output that carries almost no mass is numerically
        meaningless, yet it enters the bound. For such an output ``j``, with the
        other outputs fixed, the best ``pi_j`` maximises the concave
        ``sum_c min(m_c, S_pi(c, j) + mu w(c, j))`` (``m_c``: the row's best value over
        the other outputs). In ``u = log pi`` the terms are linear and the constraint
        ``logsumexp(u) <= 0`` is convex: solved through its dual, a convex program on a box, by a
        barrier method with a duality gap for every light output at once (:func:`_dual_pi_batch`:
        the ``m_c`` are the well-used outputs' values, so the outputs' programs are independent),
        and by Kelley's cutting planes (HiGHS) for any output whose gap does not close (cutting
        planes alone stall when several rows tie at the optimum).
        """
        from ._lp import highs_linprog  # (here: _lp imports this module)
        from scipy.special import logsumexp

        pi = pi.copy()
        V = self.scores(pi) + mu * Wb
        q = self._usage(P)
        const = -(self.M.T @ np.log(self.pA))  # (k,)
        cand = np.flatnonzero(q <= light_rel * q.max())
        if cand.size == 0:
            return pi
        # target per row: the best value over the well-used outputs (the others are refined)
        keep = np.ones(V.shape[1], dtype=bool)
        keep[cand] = False
        m_used = V[:, keep].min(axis=1) if keep.any() else np.full(V.shape[0], np.inf)

        def hurt_of(Vc, scratch=False):
            # sum_c max(m_c - Vc, 0) per column, a row without another output (m_c = inf: +inf or nan) counted 0;
            # with scratch=True written over Vc (the cheap stage's trials: no k x n_used copies, the same numbers)
            with np.errstate(invalid="ignore"):
                D = np.subtract(m_used[:, None], Vc, out=Vc if scratch else None)
                np.maximum(D, 0.0, out=D)
            return np.nan_to_num(D, copy=False, nan=0.0, posinf=0.0).sum(axis=0)

        hurt = hurt_of(V[:, cand], scratch=True)
        # cheap first stage: offer each light output the posterior of every well-used output
        # (duplicate or neighbouring outputs share posteriors at the optimum) and keep the best;
        # when that is too many trials, the posteriors of the outputs that serve the rows it
        # hurts most (the well-used output nearest to it, in the rows' own terms)
        used = np.flatnonzero(keep)
        if used.size and cand.size:
            Lu = np.log(np.maximum(pi[:, used], 1e-300)) - np.log(self.pA)[:, None]
            Su = self.M.T @ Lu  # (k, n_used): S for pi = pi_used, before the output's own distortion
            every = used.size * cand.size * self.k <= 5e7
            if not every:
                serve = np.argmin(V[:, used], axis=1)  # best well-used output of each row (index in used)
            for i, jj in enumerate(cand):
                if hurt[i] <= 0:
                    continue
                rows_ok = self.mask[:, jj]
                if every:
                    trial = slice(None)
                    Vc = Su + mu * Wb[:, jj][:, None]
                    if not rows_ok.all():
                        np.copyto(Vc, np.inf, where=~rows_ok[:, None])
                else:
                    with np.errstate(invalid="ignore"):
                        loss = np.nan_to_num(m_used - V[:, jj], nan=-np.inf, posinf=-np.inf, neginf=-np.inf)
                    top = np.argpartition(-loss, min(16, self.k - 1))[:16]
                    trial = np.unique(serve[top[loss[top] > 0]])
                    if trial.size == 0:
                        continue
                    Vc = Su[:, trial] + mu * Wb[:, jj][:, None]
                    if not rows_ok.all():
                        np.copyto(Vc, np.inf, where=~rows_ok[:, None])
                h = hurt_of(Vc, scratch=True)
                b_i = int(np.argmin(h))
                if h[b_i] < hurt[i]:
                    hurt[i] = h[b_i]
                    pi[:, jj] = pi[:, used[trial][b_i]]
        if not lp:
            return pi
        srt = np.argsort(-hurt)
        order, hs = cand[srt][: max_columns], hurt[srt][: max_columns]
        # an output can raise the bound by at most its hurt: skip the tail that cannot matter
        tail = np.cumsum(hs[::-1])[::-1]
        order = [j for j, h, t in zip(order, hs, tail) if h > 0 and t > budget]
        na = self.M.shape[0]
        if order:
            # the problems of every output at once (they are independent: m_used is fixed)
            U_n, conv_n = _dual_pi_batch(self.M.T, const[:, None] + mu * Wb[:, order], self.mask[:, order],
                                         m_used, np.log(pi[:, order]),
                                         stop=max(1e-2 * budget / max(len(order), 1), 0.0))
        for i_j, j in enumerate(order):
            mj = m_used
            rows = np.flatnonzero(self.mask[:, j])
            A = self.M[:, rows].T  # (R, na)
            b = const[rows] + mu * Wb[rows, j]
            mr = mj[rows]

            def h(u):
                return float(np.minimum(mr, A @ u + b).sum())

            u_best = np.log(pi[:, j])
            h_best = h(u_best)
            # the dual's barrier method first (Kelley's cutting planes alone need hundreds of cuts
            # when several rows tie at the optimum); then, if its gap stayed open, cuts at both points
            cuts = [pi[:, j].copy()]
            u_n, converged = (U_n[:, i_j], bool(conv_n[i_j])) if rows.size else (None, False)
            if u_n is not None:
                hn = h(u_n)
                cuts.append(np.exp(u_n))
                if hn > h_best:
                    h_best, u_best = hn, u_n
            if converged:
                # certified by the dual within the per-output stop (or 1e-13 of the values): no cuts needed
                pi[:, j] = np.maximum(np.exp(u_best), 1e-300) / np.maximum(np.exp(u_best), 1e-300).sum()
                continue
            R = rows.size
            c_obj = np.concatenate([np.zeros(na), -np.ones(R)])
            A1 = np.hstack([-A, np.eye(R)])
            bounds = [(-60.0, 0.0)] * na + [(None, (m if np.isfinite(m) else None)) for m in mr]
            stop = max(1e-2 * budget / max(len(order), 1), 0.0)
            for _ in range(max_cuts):
                Cm = np.array([np.concatenate([c, np.zeros(R)]) for c in cuts])
                cb = np.array([float(np.sum(c * np.log(np.maximum(c, 1e-300)))) for c in cuts])
                res = highs_linprog(c_obj, A_ub=np.vstack([A1, Cm]), b_ub=np.concatenate([b, cb]),
                                    bounds=bounds, method="highs")
                if res.status != 0:
                    break
                u = res.x[:na]
                u = u - logsumexp(u)
                hu = h(u)
                if hu > h_best:
                    h_best, u_best = hu, u
                if -res.fun - h_best <= max(1e-13 * (1 + abs(h_best)), stop):
                    break
                cuts.append(np.exp(u))
            newpi = np.exp(u_best)
            pi[:, j] = np.maximum(newpi, 1e-300) / np.maximum(newpi, 1e-300).sum()
        return pi

    # ---- feasibility helpers ----------------------------------------------------------
    def clean(self, P, delta):
        """Clip, zero the forbidden entries, renormalise, and restore ``distortion <= delta``."""
        P = np.where(self.mask, np.clip(np.nan_to_num(P, nan=0.0), 0.0, None), 0.0)
        rs = P.sum(axis=1)
        bad = rs <= 0
        P[bad] = self.P_min[bad]
        P = P / P.sum(axis=1, keepdims=True)
        if delta is None or not np.isfinite(delta):
            return P
        dist = self.distortion(P)
        if dist <= delta:
            return P
        if delta <= self.delta_min * (1 + 1e-12) + 1e-300:
            Q = np.where(self.argmin_mask, P, 0.0)
            rs = Q.sum(axis=1)
            Q[rs <= 0] = self.P_min[rs <= 0]
            return Q / Q.sum(axis=1, keepdims=True)
        theta = (dist - delta) / (dist - self.delta_min)
        theta = min(1.0, theta * (1 + 1e-9) + 1e-15)
        return (1 - theta) * P + theta * self.P_min

    def expand(self, P):
        """Full mapping (n_public x n_outputs) from a reduced one."""
        full = np.zeros((self.n_public, self.n_outputs))
        full[np.arange(self.n_public), self.argmin_full] = 1.0
        full[self.rows] = np.where(self.mask, P, 0.0)
        return full

    def reduce(self, P_full):
        P = np.asarray(P_full, dtype=float)[self.rows]
        return P
