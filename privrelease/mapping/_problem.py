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

import numpy as np
from scipy.special import rel_entr

from ..exceptions import InfeasibleBudgetError

__all__ = ["Problem", "lagrangian_bound"]

LN2 = math.log(2.0)


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
    """Maximise a concave piecewise-linear ``g(mu)``, ``mu >= 0``, given ``ev(mu) -> (g, right slope)``:
    geometric search for a non-positive slope, then bisection on its sign. Every evaluated value
    is a valid bound (Lagrangian duality); the best one is returned with its ``mu``.

    ``narrow(lo, hi)``, if given, returns an evaluator equal to ``ev`` on ``[lo, hi]`` (cheaper:
    see :func:`lagrangian_bound`), used for the bisection once the maximiser is bracketed."""
    best_val, slope = ev(0.0)
    best_mu = 0.0
    if slope <= 1e-13 * scale:
        return best_val, 0.0
    lo = 0.0
    hi = mu0 if (mu0 is not None and np.isfinite(mu0) and mu0 > 0) else 1.0
    for _ in range(400):
        val, slope = ev(hi)
        if val > best_val:
            best_val, best_mu = val, hi
        if slope <= 1e-13 * scale:
            break
        lo, hi = hi, hi * 4.0
    else:
        return best_val, best_mu
    if narrow is not None:
        ev = narrow(lo, hi)
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        if not (lo < mid < hi):
            break
        val, slope = ev(mid)
        if val > best_val:
            best_val, best_mu = val, mid
        if slope > 1e-13 * scale:
            lo = mid
        else:
            hi = mid
    return best_val, best_mu


def lagrangian_bound(A, B, rhs, mu0=None, n_bisect=60):
    """``max_{mu >= 0} sum_c min_j (A + mu B)[c, j] - mu rhs`` (concave, piecewise linear in mu).

    ``A`` may hold ``+inf`` (forbidden entries), ``B`` must be finite there (use 0).
    Every evaluated value is a valid bound; the best one is returned with its mu.

    Once the maximiser is bracketed in ``[lo, hi]``, the bisection evaluates only the entries
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

    def ev(mu):
        V = A + mu * B if mu > 0 else A
        idx = np.argmin(V, axis=1)
        argmins[mu] = idx
        val = float(V[rows, idx].sum()) - mu * rhs
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
        for m in (lo, hi, cross):
            m = np.asarray(m, dtype=float)
            mc = m[:, None] if m.ndim else m
            u = np.minimum(a_lo + m * b_lo, a_hi + m * b_hi)
            margin = 1e-9 * (np.abs(a_lo) + np.abs(a_hi) + hi * (np.abs(b_lo) + np.abs(b_hi))) + 1e-300
            with np.errstate(invalid="ignore"):
                keep |= (A + mc * B) <= (u + margin)[:, None]
        keep[rows, argmins[lo]] = True
        keep[rows, argmins[hi]] = True
        if keep.sum() > 0.5 * A.size:
            return ev
        rr, cc = np.nonzero(keep)
        a, b = A[rr, cc], B[rr, cc]
        starts = np.flatnonzero(np.r_[True, rr[1:] != rr[:-1]])

        def ev_small(mu):
            v = a + mu * b if mu > 0 else a
            vmin = np.minimum.reduceat(v, starts)
            hit = v == np.repeat(vmin, np.diff(np.r_[starts, v.size]))
            slope_rows = np.minimum.reduceat(np.where(hit, b, np.inf), starts)
            return float(vmin.sum()) - mu * rhs, float(slope_rows.sum()) - rhs

        return ev_small

    return maximize_multiplier(ev, scale, mu0, n_bisect, narrow=narrow)


def _smoothed_pi_batch(A, B, OK, m, U0, max_newton=30, max_evals=3000, stop=0.0):
    """Approximate maximisers of ``h_n(u) = sum_{c: OK[c, n]} min(m_c, A_c u + B[c, n])`` over
    ``logsumexp(u) <= 0``, one per column ``n`` (the best ``log pi_j`` of each light output, see
    :meth:`Problem.refine_pi`; the outputs are independent there, as ``m`` holds the rows' best
    values over the *other*, well-used outputs), and whether each one's last (sharpest) stage
    converged. ``A``: (R, na), ``B`` and ``OK``: (R, n), ``m``: (R,) (``inf``: no such value),
    ``U0``: (na, n) starting points. Returns ``(U, converged)`` of shapes (na, n) and (n,).

    ``min(m, z)`` is replaced by the concave soft minimum ``m - tau log(1 + exp((m - z) / tau))``
    and ``u = v - logsumexp(v)``: the composition is concave in ``v`` (a concave non-decreasing
    function of a concave map), so damped Newton steps in ``v`` with backtracking converge;
    ``tau`` decreases by 10 per stage (continuation), from each column's spread ``max |m - z|``
    to ``1e-13`` of its values. Any ``u`` gives a valid bound: the caller evaluates the exact
    ``h`` and keeps the best point. A column whose rows all have an ``m_c`` is done (and
    converged) once its best point is within ``stop`` of ``sum_c m_c``, an upper bound of ``h``
    (the caller's tolerance per output; 0: only at that bound). The columns run together (one batched Newton system per
    step; each column its own ``tau``, step length and stopping test): one output at a time,
    the search spent ~20 microseconds of Python per evaluation and ~580 evaluations per output
    (|A| = 6, k = 49, ``max_leakage=0.001``: 63 of 80 s).
    """
    from scipy.special import expit

    A = np.asarray(A, dtype=float)
    R, na = A.shape
    n = B.shape[1]
    fin = np.isfinite(m)
    mm = np.where(fin, m, 0.0)[:, None]
    finc = np.broadcast_to(fin[:, None], (R, n))
    Bz = np.where(OK, B, 0.0)
    okf = OK.astype(float)

    def point(V, cols):
        """``u = v - logsumexp(v)`` and ``z = A u + b`` of the given columns."""
        top = V.max(axis=0)
        U = V - (top + np.log(np.exp(V - top).sum(axis=0)))
        return U, A @ U + Bz[:, cols]

    def soft(Z, tau, cols):
        with np.errstate(over="ignore"):
            sm = np.where(finc[:, cols], mm - tau * np.logaddexp(0.0, (mm - Z) / tau), Z)
        return (sm * okf[:, cols]).sum(axis=0)

    def exact(Z, cols):
        return (np.where(finc[:, cols], np.minimum(mm, Z), Z) * okf[:, cols]).sum(axis=0)

    every = np.arange(n)
    V = np.array(U0, dtype=float)
    U, Z0 = point(V, every)
    spread = np.where(finc & OK, np.abs(mm - Z0), 0.0)
    tau = np.maximum(spread.max(axis=0) if R else np.zeros(n), 1e-12)
    floor = 1e-13 * (1.0 + (np.abs(np.where(finc, mm, Z0)) * okf).sum(axis=0)) / np.maximum(OK.sum(axis=0), 1)
    best_u, best_h = U.copy(), exact(Z0, every)
    evals = np.zeros(n, dtype=int)
    # sum_c m_c bounds h when every row of the column has an m_c: reaching it (within stop) ends the search
    capped = ~(OK & ~finc).any(axis=0)
    cap = np.where(capped, (mm * okf).sum(axis=0), np.inf)
    stop = np.broadcast_to(np.asarray(stop, dtype=float), (n,))
    converged = best_h >= cap - stop
    running = OK.any(axis=0) & ~converged  # columns still in their continuation
    eye = np.eye(na)
    while running.any():
        conv_stage = np.zeros(n, dtype=bool)
        newton = running.copy()  # columns still stepping in this stage
        for _ in range(max_newton):
            over = newton & (evals > max_evals)  # a bounded cost per output: Kelley's cuts take over
            running &= ~over
            converged[over] = False
            newton &= ~over
            if not newton.any():
                break
            idx = np.flatnonzero(newton)
            Vi, ti = V[:, idx], tau[idx]
            Ui, Zi = point(Vi, idx)
            Gi = soft(Zi, ti, idx)
            evals[idx] += 1
            pi = np.exp(Ui)
            with np.errstate(over="ignore"):
                s_ = np.where(finc[:, idx], expit((mm - Zi) / ti), 1.0) * okf[:, idx]  # d softmin / dz
            g = A.T @ s_  # gradient in u, (na, ni)
            sg = g.sum(axis=0)
            grad = g - pi * sg
            Hu = -np.einsum("cn,ca,cb->nab", s_ * (1.0 - s_) / ti, A, A)
            P = pi.T  # (ni, na)
            Jm = eye[None] - np.ones((1, na, 1)) * P[:, None, :]  # du/dv = I - 1 pi^T
            outer = P[:, :, None] * P[:, None, :]
            Hv = np.transpose(Jm, (0, 2, 1)) @ Hu @ Jm - sg[:, None, None] * (P[:, :, None] * eye[None] - outer)
            # the gauge direction (1, ..., 1) is a null direction: fix it with a rank-one term
            diag = np.abs(np.diagonal(Hv, axis1=1, axis2=2)).max(axis=1)
            Hv = Hv - outer - (1e-12 * np.maximum(diag, 1e-300))[:, None, None] * eye[None]
            try:
                dv = np.linalg.solve(Hv, -grad.T[:, :, None])[:, :, 0].T
            except np.linalg.LinAlgError:
                dv = np.full((na, idx.size), np.nan)
                for t in range(idx.size):  # a singular system: the others one by one
                    try:
                        dv[:, t] = np.linalg.solve(Hv[t], -grad[:, t])
                    except np.linalg.LinAlgError:
                        pass
            slope = (grad * dv).sum(axis=0)
            bad = ~np.isfinite(slope)
            flat = ~bad & (slope <= 1e-15 * (1.0 + np.abs(Gi)))
            conv_stage[idx[flat]] = True
            newton[idx[bad | flat]] = False
            go = ~(bad | flat)
            if not go.any():
                break
            idx, Vi, dv, Gi, slope = idx[go], Vi[:, go], dv[:, go], Gi[go], slope[go]
            a = np.ones(idx.size)
            pending = np.ones(idx.size, dtype=bool)
            while pending.any():  # backtracking, each column its own step
                p = np.flatnonzero(pending)
                _, Zt = point(Vi[:, p] + a[p] * dv[:, p], idx[p])
                ok = soft(Zt, tau[idx[p]], idx[p]) >= Gi[p] + 1e-4 * a[p] * slope[p]
                evals[idx[p]] += 1
                pending[p[ok]] = False
                a[p[~ok]] *= 0.5
                dead = pending & (a <= 1e-12)  # no acceptable step: this column's stage ends
                newton[idx[dead]] = False
                pending &= ~dead
                a[dead] = 0.0
            V[:, idx] = Vi + a * dv
        # the end of a stage: each column's exact value, the best point kept
        r_idx = np.flatnonzero(running)
        Ur, Zr = point(V[:, r_idx], r_idx)
        hr = exact(Zr, r_idx)
        better = hr > best_h[r_idx]
        best_u[:, r_idx[better]] = Ur[:, better]
        best_h[r_idx[better]] = hr[better]
        converged[r_idx] = conv_stage[r_idx]
        reached = best_h[r_idx] >= cap[r_idx] - stop[r_idx]
        converged[r_idx[reached]] = True
        running[r_idx[(tau[r_idx] <= floor[r_idx]) | reached]] = False
        tau[r_idx] = np.maximum(tau[r_idx] / 10.0, floor[r_idx])
    return best_u, converged


class Problem:
    """Reduced form of ``(prior, distortion)``; information in nats, distortions in units of
    ``scale`` (the largest finite distortion): ``to_internal`` / ``to_user`` convert budgets."""

    def __init__(self, prior, distortion):
        self.prior = prior
        self.D_user = distortion
        fin = distortion[np.isfinite(distortion)]
        top = float(np.abs(fin).max()) if fin.size else 0.0
        #: distortions are divided by ``scale`` (the largest finite entry) so that every
        #: internal tolerance is relative: ``D`` and ``1e-13 * D`` give the same mapping
        self.scale = top if top > 0 and np.isfinite(top) else 1.0
        distortion = distortion / self.scale
        self.D = distortion
        self.n_public, self.n_outputs = distortion.shape
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
        self.pc_full = pc
        Dm = np.where(finite, distortion, np.inf)
        self.row_min_full = Dm.min(axis=1)
        self.argmin_full = Dm.argmin(axis=1)
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
        # relative to the row's own minimum (an absolute part would tie a 1e-12 entry with a 0 when D spans
        # many decades: the issue-10 dyn_range family, whose d_min mapping then exceeded d_min by 7 %)
        tie_tol = 1e-12 * np.abs(self.row_min_full[self.rows])
        self.argmin_mask = self.mask & (self.d <= (self.row_min_full[self.rows] + tie_tol)[:, None])
        #: number of cheapest outputs of each row (a unique minimum-distortion mapping when all are 1)
        self.n_argmin = self.argmin_mask.sum(axis=1)

    sparse = False

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
        """``J = M P``."""
        return self.M @ P

    def to_internal(self, delta):
        """A distortion budget in user units -> internal units (divided by ``scale``)."""
        return float(delta) / self.scale

    def to_user(self, value):
        """An internal distortion -> user units."""
        return float(value) * self.scale

    # ---- objective and posterior ------------------------------------------------------
    def objective(self, P):
        """I(A; C_hat) in nats of a reduced mapping."""
        J = self.M @ P
        q = J.sum(axis=0)
        return max(float(rel_entr(J, self.pA[:, None] * q[None, :]).sum()), 0.0)

    def distortion(self, P):
        return float((self.W * np.where(self.mask, P, 0.0)).sum())

    def posteriors(self, P, smooth=1e-12):
        """Columns ``pi_j = p(. | j)``, each a proper distribution (unused outputs get the
        posterior of a uniform fallback mapping, a valid if loose choice)."""
        U = self.mask / self.mask.sum(axis=1, keepdims=True)
        J = self.M @ P + smooth * (self.M @ U)
        J = np.maximum(J, 1e-300)
        return J / J.sum(axis=0, keepdims=True)

    def scores(self, pi):
        """``S_pi(c, j) = sum_a p(a, c) ln(pi_j(a)/p(a))`` with ``+inf`` on forbidden entries."""
        L = np.log(pi) - np.log(self.pA)[:, None]
        S = self.M.T @ L
        return np.where(self.mask, S, np.inf)

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
        f = self.objective(P)
        pi = self.posteriors(P)
        if f <= 0.0:
            return (0.0, 0.0, 0.0, pi) if return_pi else (0.0, 0.0, 0.0)
        rhs = max(float(delta), self.delta_min)
        free = not np.isfinite(rhs) or rhs >= self.delta_max
        Wb = np.zeros_like(self.W) if free else self.W
        rhs = 0.0 if free else rhs
        lb, mu = lagrangian_bound(self.scores(pi), Wb, rhs, None if free else mu0)
        own = (pi, lb, mu)  # the mapping's own posteriors: the other start of the refinement below
        if pi_hint is not None and (f - lb) / LN2 > (0.0 if target_bits is None else target_bits):
            unused = (self.pc @ P) <= 0
            if unused.any():
                pi_h = pi.copy()
                pi_h[:, unused] = pi_hint[:, unused]
                lb_h, mu_h = lagrangian_bound(self.scores(pi_h), Wb, rhs, None if free else mu0)
                if lb_h > lb:
                    pi, lb, mu = pi_h, lb_h, mu_h
        if pi_hint is not None and (f - lb) / LN2 > (0.0 if target_bits is None else target_bits):
            # the bound is a function of pi alone, valid whatever P: pi_hint on every output too.
            # With near-deterministic posteriors the bound of an exact polish's sparse point is
            # loose (an output used by one class only has pi(a') ~ 1e-9, so the other class's rows
            # score ln 1e-9 there: 0.3 bits below a point 5e-7 bits from the optimum), while the
            # interior point it started from, all entries in use, bounds within 5e-7 bits
            lb_h, mu_h = lagrangian_bound(self.scores(pi_hint), Wb, rhs, None if free else mu0)
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
        q = self.pc @ P

        def stage(pi, mu, light_rel, lp_stage):
            for _ in range(3):
                pi2 = self.refine_pi(P, pi, Wb, mu, budget=0.02 * target_bits * LN2, lp=lp_stage,
                                     light_rel=light_rel)
                lb2, mu2 = lagrangian_bound(self.scores(pi2), Wb, rhs, None if free else mu)
                if lb2 <= best[0]:
                    break
                pi, mu = pi2, mu2
                best[:] = [lb2, mu2, pi2]
                if (f - lb2) / LN2 <= target_bits:
                    break

        def upper(pi, light, mu):
            # no pi on the light outputs beats leaving them out of the row minima: the bound of the other
            # outputs alone (and its multiplier) bounds every bound a refinement of the light ones reaches
            S0 = self.scores(pi)
            S0[:, light] = np.inf
            if not np.isfinite(S0).any(axis=1).all():
                return None
            return lagrangian_bound(S0, Wb, rhs, None if free else mu)

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
        ``logsumexp(u) <= 0`` is convex: solved by Newton's method on a smoothed version, for
        every light output at once (:func:`_smoothed_pi_batch`: the ``m_c`` are the well-used
        outputs' values, so the outputs' programs are independent), and by Kelley's cutting
        planes (HiGHS) for those where that does not converge (cutting planes alone stall when
        several rows tie at the optimum).
        """
        from scipy.optimize import linprog
        from scipy.special import logsumexp

        pi = pi.copy()
        V = self.scores(pi) + mu * Wb
        q = self.pc @ P
        const = -(self.M.T @ np.log(self.pA))  # (k,)
        cand = np.flatnonzero(q <= light_rel * q.max())
        if cand.size == 0:
            return pi
        # target per row: the best value over the well-used outputs (the others are refined)
        keep = np.ones(V.shape[1], dtype=bool)
        keep[cand] = False
        m_used = V[:, keep].min(axis=1) if keep.any() else np.full(V.shape[0], np.inf)
        def hurt_of(Vc):
            with np.errstate(invalid="ignore"):
                return np.nan_to_num(np.maximum(m_used[:, None] - Vc, 0.0), nan=0.0, posinf=0.0).sum(axis=0)


        hurt = hurt_of(V[:, cand])
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
                    Vc = np.where(rows_ok[:, None], Su + mu * Wb[:, jj][:, None], np.inf)
                else:
                    with np.errstate(invalid="ignore"):
                        loss = np.nan_to_num(m_used - V[:, jj], nan=-np.inf, posinf=-np.inf, neginf=-np.inf)
                    top = np.argpartition(-loss, min(16, self.k - 1))[:16]
                    trial = np.unique(serve[top[loss[top] > 0]])
                    if trial.size == 0:
                        continue
                    Vc = np.where(rows_ok[:, None], Su[:, trial] + mu * Wb[:, jj][:, None], np.inf)
                h = hurt_of(Vc)
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
            # the smoothed problems of every output at once (they are independent: m_used is fixed)
            U_n, conv_n = _smoothed_pi_batch(self.M.T, const[:, None] + mu * Wb[:, order], self.mask[:, order],
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
            # the smoothed problem by Newton's method first (Kelley's cutting planes alone need
            # hundreds of cuts when several rows tie at the optimum); then cuts at both points
            cuts = [pi[:, j].copy()]
            u_n, converged = (U_n[:, i_j], bool(conv_n[i_j])) if rows.size else (None, False)
            if u_n is not None:
                hn = h(u_n)
                cuts.append(np.exp(u_n))
                if hn > h_best:
                    h_best, u_best = hn, u_n
            if converged:
                # within R tau ln 2 (tau ~ 1e-13 of the values) of the optimum: no cuts needed
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
                res = linprog(c_obj, A_ub=np.vstack([A1, Cm]), b_ub=np.concatenate([b, cb]),
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
