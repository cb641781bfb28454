"""Sparse alphabets: the convex program of Algorithm 1 on the allowed transitions only.

When most transitions are forbidden (an erasure alphabet: an input reaches only
its own ``2^F`` erasure patterns among ``n_inputs x 2^F`` outputs), the mapping
is a vector ``x`` over the *edges* ``e = (c_e, j_e)`` of the distortion's
sparsity pattern, and every quantity of :mod:`privrelease.mapping._problem` is
computed edge-wise, in memory proportional to the number of edges:

* ``J = M P`` by a sparse product with the output-incidence matrix;
* the scores ``S_pi(e) = sum_a p(a, c_e) ln(pi_{j_e}(a) / p(a))`` per edge, and
  the Lagrangian certificate ``sum_c min_{e in row c} [S_pi(e) + lambda w_e] -
  lambda delta`` by segment minima over the rows (same bound, same proof);
* the solver: the plain cvxpy formulation written over the edges. An output
  reached by a single input with positive mass (a *private* output, such as an
  input's own non-erased tuple) has posterior ``p(. | c)`` whatever mass it
  receives, so its contribution to ``I(A; C_hat)`` is *linear* in its edge,
  ``x_e p(c) D(p(. | c) || p_A)``: only outputs shared by several inputs need
  exponential cones. For one categorical column with 100,000 categories the
  program has 200,000 linear variables and ``|A|`` cones.

The reduction (rows with ``p(c) = 0``, classes with ``p(a) = 0``), the row shift and scale
normalisation and the tolerance policy are those of the dense
:class:`~privrelease.mapping._problem.Problem`, whose interface this class
mirrors (a reduced mapping is an edge vector here, a matrix there).
"""

import numpy as np
import scipy.sparse as sp
from scipy.special import rel_entr

from ..exceptions import InfeasibleBudgetError
from ._cvx import solve_quietly
from ._problem import OffsetUnits, bound_rounding, maximize_multiplier

__all__ = ["SparseProblem", "sparse_candidates", "edge_lagrangian_bound", "polish_edges"]

#: the exact polish (:func:`polish_edges`) runs on problems of at most this many rows with mass: its Newton systems
#: eliminate the row sums through a ``k x k`` Schur complement, dense unless it has under 2% nonzeros (32 MB here)
SPARSE_POLISH_MAX_ROWS = 2000
#: the certificate's per-output refinement of the light outputs' posteriors is the dense problem's
#: (:meth:`privrelease.mapping._problem.Problem._refine_bound`), run on a dense view of the problem of at most this
#: many cells (public symbols x outputs; its distortions, weights and masks are dense arrays: measured at 2**22 cells,
#: 269 MB at its making and 172 MB held with the problem, for the solve)
SPARSE_REFINE_MAX_CELLS = 2**22


def _segment_min(values, indptr):
    """Minimum of ``values`` over each row segment (every segment is non-empty)."""
    return np.minimum.reduceat(values, indptr[:-1])


def edge_lagrangian_bound(A, B, indptr, rhs, mu0=None, n_bisect=60):
    """``max_{mu >= 0} sum_c min_{e in row c} (A + mu B)_e - mu rhs`` over edge vectors.

    The sparse twin of :func:`privrelease.mapping._problem.lagrangian_bound`
    (concave and piecewise linear in ``mu``; every evaluated value is a valid
    bound and the best one is returned with its ``mu``). ``A`` may hold ``+inf``.
    """
    row = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    scale = max(abs(rhs), 1e-300)  # relative to the budget, as in lagrangian_bound

    def ev(mu):
        V = A + mu * B if mu > 0 else A
        m = _segment_min(V, indptr)
        # the right derivative: the smallest B among the row's minimisers
        slope_b = _segment_min(np.where(V <= m[row], B, np.inf), indptr)
        return float(m.sum()) - mu * rhs, float(slope_b.sum()) - rhs

    return maximize_multiplier(ev, scale, mu0, n_bisect)


class SparseProblem(OffsetUnits):
    """Reduced form of ``(prior, distortion)`` for a sparse distortion (stored entries = allowed).

    A reduced mapping is a vector over the edges of the rows with ``p(c) > 0``,
    ordered row by row (``indptr`` gives each row's segment).
    """

    sparse = True

    def __init__(self, prior, distortion):
        D = distortion  # canonical csr_array (check_distortion): sorted indices, finite data
        self.prior = prior
        self.D_user = D
        self.n_public, self.n_outputs = D.shape
        deg = np.diff(D.indptr)
        if np.any(deg == 0):
            bad = int(np.flatnonzero(deg == 0)[0])
            raise InfeasibleBudgetError(
                f"row {bad} of distortion has no allowed (stored) entry: public symbol {bad} cannot be mapped "
                "anywhere, so no distortion budget is feasible (smallest feasible distortion: inf)",
                smallest_feasible=float("inf"),
            )
        row_full = np.repeat(np.arange(self.n_public), deg)
        pa = prior.sum(axis=1)
        pc = prior.sum(axis=0)
        # relative to each row's cheapest entry, in the units of Problem (OffsetUnits)
        shift = self._set_units(pc, _segment_min(D.data, D.indptr))
        d_full = D.data - shift[row_full]
        # the first cheapest edge of every row (index into the full pattern), found before the division: a row with
        # p(c) = 0 may overflow to inf once divided
        row_min = _segment_min(d_full, D.indptr)
        pos = np.arange(d_full.size)
        self.argmin_edge_full = _segment_min(np.where(d_full <= row_min[row_full], pos, d_full.size), D.indptr)
        self._set_scale(d_full[(pc > 0)[row_full]])
        with np.errstate(over="ignore"):  # only rows with p(c) = 0 can overflow
            d_full = d_full / self.scale
        self._indptr_full, self._indices_full = D.indptr, D.indices
        self.pc_full = pc
        self.rows = np.flatnonzero(pc > 0)
        self.arows = np.flatnonzero(pa > 0)
        self.M = prior[np.ix_(self.arows, self.rows)]
        self.pA = self.M.sum(axis=1)
        self.pc = self.M.sum(axis=0)
        self.k, self.kh = self.rows.size, self.n_outputs
        self.edge_full = np.flatnonzero(np.repeat(pc > 0, deg))
        deg_r = deg[self.rows]
        self.indptr = np.concatenate([[0], np.cumsum(deg_r)]).astype(np.int64)
        self.r = np.repeat(np.arange(self.k), deg_r)
        self.j = D.indices[self.edge_full].astype(np.int64)
        self.n = self.r.size
        self.d = d_full[self.edge_full]
        self.w = self.pc[self.r] * self.d
        row_min = _segment_min(self.d, self.indptr)
        self.delta_min = float(np.sum(self.pc * row_min))
        self.delta_max = float(np.sum(self.pc * np.maximum.reduceat(self.d, self.indptr[:-1])))
        first = _segment_min(np.where(self.d <= row_min[self.r], np.arange(self.n), self.n), self.indptr)
        self.P_min = np.zeros(self.n)
        self.P_min[first] = 1.0
        self.argmin_edges = self.d <= 0.0  # exact ties of the shifted minimum 0, as in Problem
        #: number of cheapest outputs of each row (a unique minimum-distortion mapping when all are 1)
        self.n_argmin = np.bincount(self.r, weights=self.argmin_edges, minlength=self.k).astype(np.int64)
        #: output incidence (kh x n) and the prior's rows over the edges (n_a x n)
        self.C = sp.csr_array((np.ones(self.n), (self.j, np.arange(self.n))), shape=(self.kh, self.n))
        self.Mr = self.M[:, self.r]
        self._uniform = 1.0 / np.repeat(deg_r, deg_r).astype(float)

    # ---- edges (the interface shared with the dense Problem) ----------------------------
    def edges(self):
        """``(row, output, n)`` of every variable."""
        return self.r, self.j, self.n

    def edge_weights(self):
        return self.w

    def from_edges(self, x):
        return np.asarray(x, dtype=float)

    def row_sums(self, x):
        return np.add.reduceat(x, self.indptr[:-1])

    # ---- objective and posterior --------------------------------------------------------
    def joint(self, x):
        """``J = M P`` of shape (n_a, n_outputs)."""
        return np.asarray(self.C @ (self.Mr * x).T).T

    def objective(self, x):
        J = self.joint(x)
        q = J.sum(axis=0)
        return max(float(rel_entr(J, self.pA[:, None] * q[None, :]).sum()), 0.0)

    def distortion(self, x):
        return float(self.w @ x)

    def posteriors(self, x, smooth=1e-12):
        J = self.joint(x) + smooth * self.joint(self._uniform)
        J = np.maximum(J, 1e-300)
        return J / J.sum(axis=0, keepdims=True)

    def scores(self, pi):
        """``S_pi`` on every edge."""
        L = np.log(pi) - np.log(self.pA)[:, None]
        return (self.Mr * L[:, self.j]).sum(axis=0)

    def _improve_light(self, x, pi, Wb, mu, light_rel):
        """Offer each lightly used output the posterior ``p(. | c)`` of its heaviest row when that
        lowers the output's hurt on the bound (any ``pi`` gives a valid bound)."""
        q = self.C @ (self.pc[self.r] * x)
        light = q <= light_rel * q.max()
        if not light.any() or light.all():
            return pi
        V = self.scores(pi) + mu * Wb
        used_e = ~light[self.j]
        m_used = _segment_min(np.where(used_e, V, np.inf), self.indptr)

        def hurt(Ve):
            h = np.where(light[self.j], np.maximum(m_used[self.r] - Ve, 0.0), 0.0)
            h = np.nan_to_num(h, nan=0.0, posinf=0.0)
            return np.bincount(self.j, weights=h, minlength=self.kh)

        # heaviest row reaching each output: sort edges by p(c), last write wins
        order = np.argsort(self.pc[self.r], kind="stable")
        heavy = np.full(self.kh, -1)
        heavy[self.j[order]] = self.r[order]
        cand = pi.copy()
        has = heavy >= 0
        post = self.M / self.pc[None, :]
        cand[:, has] = np.maximum(post[:, heavy[has]], 1e-300)
        cand /= cand.sum(axis=0, keepdims=True)
        better = light & (hurt(self.scores(cand) + mu * Wb) < hurt(V))
        out = pi.copy()
        out[:, better] = cand[:, better]
        return out

    def certificate(self, x, delta, mu0=None, target_bits=None, lp=True, both_starts=False, pi_hint=None):
        """(gap in bits, multiplier, objective in nats): the Lagrangian bound of
        :meth:`privrelease.mapping._problem.Problem.certificate` over the edges (``both_starts``: when the hint
        won and the refinement stops above ``target_bits``, refine from the point's own posteriors too).
        ``pi_hint``: posteriors for the outputs ``x`` leaves unused (any ``pi`` gives a valid bound; an exact
        polish empties outputs whose raw, smoothed posteriors say nothing about the point), as on the dense
        problem."""
        f = self.objective(x)
        if f <= 0.0:
            return 0.0, 0.0, 0.0
        pi = own = self.posteriors(x)
        if pi_hint is not None:
            unused = self.C @ (self.pc[self.r] * x) <= 0
            pi = pi.copy()
            pi[:, unused] = pi_hint[:, unused]
        rhs = max(float(delta), self.delta_min)
        free = not np.isfinite(rhs) or rhs >= self.delta_max
        Wb = np.zeros_like(self.w) if free else self.w
        rhs = 0.0 if free else rhs
        lb, mu = edge_lagrangian_bound(self.scores(pi), Wb, self.indptr, rhs, None if free else mu0)
        if pi_hint is not None and (f - lb) / np.log(2.0) > (0.0 if target_bits is None else target_bits):
            # the bound is a function of pi alone, valid whatever x: pi_hint on every output too, as on the dense
            # problem. Near perfect privacy an exact polish leaves outputs used at ~1e-12 whose own posteriors are
            # O(1) off the optimum's, while the interior point it started from prices them all (a polished point
            # leaking 5.3e-13 bits: 3.5e-7 bits with the hint on its unused outputs only, 3.9e-12 with it on all)
            lb_h, mu_h = edge_lagrangian_bound(self.scores(pi_hint), Wb, self.indptr, rhs, None if free else mu0)
            if lb_h > lb:
                pi, lb, mu = pi_hint, lb_h, mu_h
        if target_bits is not None and (f - lb) / np.log(2.0) > target_bits:
            for light_rel in (1e-2, 1e-9):
                pi2 = self._improve_light(x, pi, Wb, mu, light_rel)
                lb2, mu2 = edge_lagrangian_bound(self.scores(pi2), Wb, self.indptr, rhs, None if free else mu)
                if lb2 > lb:
                    pi, lb, mu = pi2, lb2, mu2
        if target_bits is not None and (f - lb) / np.log(2.0) > target_bits:
            # the dense certificate's refinement (each light output's best posterior against the other outputs' row
            # minima, through its dual, and the smallest light set that can certify): any pi gives a valid bound, so
            # it runs on the dense view of this very problem (the same reduction, units and weights). Without it, at
            # a point both engines reach near perfect privacy (2.9e-12 bits), the dense bound was within 5.1e-14
            # bits and this one 2.15e-10
            dense = self.dense_view()
            if dense is not None:
                P = np.zeros((self.k, self.kh))
                P[self.r, self.j] = x
                Wd = np.zeros(dense.W.shape) if free else dense.W
                starts = [(pi, lb, mu)]
                if both_starts and pi is not own:  # the hint won: the point's own posteriors too, as the dense one
                    starts.append((own, *edge_lagrangian_bound(self.scores(own), Wb, self.indptr, rhs,
                                                               None if free else mu0)))
                for pi_s, lb_s, mu_s in starts:
                    if (f - lb) / np.log(2.0) <= target_bits:
                        break
                    lb2, mu2, _ = dense._refine_bound(P, f, pi_s, lb_s, mu_s, Wd, rhs, free, target_bits, lp)
                    if lb2 > lb:
                        lb, mu = lb2, mu2
        lb -= bound_rounding(self.pA, self.k, lb, mu, rhs)
        return max(f - lb, 0.0) / np.log(2.0), mu, f

    def dense_view(self):
        """The dense :class:`~privrelease.mapping._problem.Problem` of the same prior and distortion (forbidden
        entries ``inf``), made once: the same rows, classes, offset and scale, so its scores, weights and bounds are
        this problem's, and a reduced edge vector ``x`` is its matrix ``P[r, j] = x``. None above
        ``SPARSE_REFINE_MAX_CELLS`` cells."""
        if self.n_public * self.n_outputs > SPARSE_REFINE_MAX_CELLS:
            return None
        view = getattr(self, "_dense", None)
        if view is None:
            from ._problem import Problem

            D = np.full((self.n_public, self.n_outputs), np.inf)
            row = np.repeat(np.arange(self.n_public), np.diff(self._indptr_full))
            D[row, self._indices_full] = self.D_user.data
            view = self._dense = Problem(self.prior, D)
        return view

    # ---- feasibility helpers ------------------------------------------------------------
    def clean(self, x, delta):
        """Clip, renormalise each row, and restore ``distortion <= delta`` (mixing with ``P_min``)."""
        x = np.clip(np.nan_to_num(np.asarray(x, dtype=float), nan=0.0), 0.0, None)
        rs = self.row_sums(x)
        bad = rs <= 0
        if bad.any():
            x = np.where(bad[self.r], self.P_min, x)
            rs = self.row_sums(x)
        x = x / rs[self.r]
        if delta is None or not np.isfinite(delta):
            return x
        dist = self.distortion(x)
        if dist <= delta:
            return x
        if delta <= self.delta_min * (1 + 1e-12) + 1e-300:
            y = np.where(self.argmin_edges, x, 0.0)
            rs = self.row_sums(y)
            y = np.where((rs <= 0)[self.r], self.P_min, y)
            return y / self.row_sums(y)[self.r]
        theta = (dist - delta) / (dist - self.delta_min)
        theta = min(1.0, theta * (1 + 1e-9) + 1e-15)
        return (1 - theta) * x + theta * self.P_min

    def expand(self, x):
        """The full mapping as a ``csr_array`` with the distortion's pattern (rows with
        ``p(c) = 0`` on their cheapest output)."""
        data = np.zeros(self._indices_full.size)
        data[self.argmin_edge_full] = 1.0
        data[self.edge_full] = x
        return sp.csr_array((data, self._indices_full.copy(), self._indptr_full.copy()),
                            shape=(self.n_public, self.n_outputs))

    def reduce(self, P_full):
        P_full = sp.csr_array(P_full)
        check_warm_pattern(P_full, (self.n_public, self.n_outputs), self._indptr_full, self._indices_full)
        return np.asarray(P_full.data, dtype=float)[self.edge_full]


def check_warm_pattern(W, shape, indptr, indices):
    """A sparse warm start ``W`` (csr) must store exactly the distortion's entries (``indptr``, ``indices``)."""
    if (W is None or W.shape != shape or W.nnz != indices.size or not np.array_equal(W.indptr, indptr)
            or not np.array_equal(W.indices, indices)):
        raise ValueError("warm_start must be a sparse mapping with the distortion's sparsity pattern "
                         f"(shape {shape}, {indices.size} stored entries)")


def _private_scores(prob):
    """Edges into private outputs (reached by one row with mass) and their linear leakage
    coefficient ``p(c) D(p(. | c) || p_A)`` in nats (0 on shared edges)."""
    deg_out = np.bincount(prob.j, minlength=prob.kh)
    private = deg_out[prob.j] == 1
    s = np.zeros(prob.n)
    if private.any():
        s[private] = rel_entr(prob.Mr[:, private], prob.pA[:, None] * prob.pc[prob.r[private]][None, :]).sum(axis=0)
    return private, s


class _ColumnGeneration:
    """Simplicial decomposition (column generation) for :class:`SparseProblem`.

    The objective depends on a mapping only through the shared outputs' joint
    ``J_sh`` (``|A| x n_shared``), the private outputs' linear cost and the
    distortion, so an optimum is a mixture of at most ``|A| n_shared + 2``
    *vertices* (one output per row) by Caratheodory. The master problem
    minimises the exact objective over mixtures of a pool of vertices (a small
    convex program: ``|A| n_shared`` exponential cones in as many variables as
    vertices); pricing is the certificate itself: with ``pi`` the master's
    posteriors and ``lambda`` the best multiplier, the row-wise minimisers of
    ``S_pi + lambda w`` (ties broken both ways, so the budget can be met) enter
    the pool. The Lagrangian bound at each pricing is rigorous, so the method
    stops when ``f(mixture) - bound <= tol``. The pool is kept across solves
    (a curve or the Newton steps of ``max_leakage`` mode warm-start from it).
    """

    MAX_POOL = 300

    def __init__(self, prob):
        self.prob = prob
        self.private, self.s = _private_scores(prob)
        sh = ~self.private
        self.cols, jc = np.unique(prob.j[sh], return_inverse=True)
        self.jc = np.full(prob.n, -1)
        self.jc[sh] = jc
        self.pool = []  # (choice, a_i, d_i, J_i flat)
        self.keys = set()

    def add(self, choice):
        choice = choice.astype(np.int32 if self.prob.n < 2**31 else np.int64)
        key = choice.tobytes()
        if key in self.keys:
            return False
        prob = self.prob
        na = prob.M.shape[0]
        sh = self.jc[choice] >= 0
        e = choice[sh]
        J = np.stack([np.bincount(self.jc[e], weights=prob.Mr[a, e], minlength=self.cols.size) for a in range(na)])
        flat = J.ravel()
        nz = np.flatnonzero(flat)
        self.pool.append((choice, float(self.s[choice].sum()), float(prob.w[choice].sum()), (nz, flat[nz])))
        self.keys.add(key)
        return True

    def vertex(self, V):
        """Row-wise minimisers of ``V`` (first of the row's ties)."""
        prob = self.prob
        m = _segment_min(V, prob.indptr)
        pos = np.where(V <= m[prob.r], np.arange(prob.n), prob.n)
        return _segment_min(pos, prob.indptr)

    def vertex_tiebreak(self, V, key):
        """Row-wise minimisers of ``V``, ties broken by the smallest ``key``."""
        prob = self.prob
        m = _segment_min(V, prob.indptr)
        tie = V <= m[prob.r]
        kmin = _segment_min(np.where(tie, key, np.inf), prob.indptr)
        pos = np.where(tie & (key <= kmin[prob.r]), np.arange(prob.n), prob.n)
        return _segment_min(pos, prob.indptr)

    def _add_switches(self, base, Vm, gap, max_rows=24):
        prob = self.prob
        excess = Vm - Vm[base][prob.r]
        excess[base] = np.inf
        cand = np.flatnonzero(excess <= gap)
        if cand.size == 0:
            return False
        cand = cand[np.argsort(excess[cand], kind="stable")[:max_rows]]
        added = False
        for e in cand:
            v = base.copy()
            v[prob.r[e]] = e
            added |= self.add(v)
        return added

    def mixture(self, nu):
        x = np.zeros(self.prob.n)
        for (choice, *_), v in zip(self.pool, nu):
            if v > 0:
                x[choice] += v
        return x

    def master(self, delta):
        import cvxpy as cp

        prob = self.prob
        m = len(self.pool)
        a = np.array([t[1] for t in self.pool])
        dist = np.array([t[2] for t in self.pool])
        nc = self.cols.size
        # the shared joints of the vertices, one sparse column each: (na * n_cols, m)
        idx = np.concatenate([t[3][0] for t in self.pool]) if m else np.zeros(0, dtype=np.int64)
        val = np.concatenate([t[3][1] for t in self.pool]) if m else np.zeros(0)
        col = np.repeat(np.arange(m), [t[3][0].size for t in self.pool])
        nu = cp.Variable(m, nonneg=True)
        cons = [cp.sum(nu) == 1]
        if delta is not None and np.isfinite(delta) and delta < prob.delta_max:
            cons.append(dist @ nu <= delta)
        obj = a @ nu
        if idx.size:
            used, row = np.unique(idx, return_inverse=True)
            G = sp.csr_array((val, (row, col)), shape=(used.size, m))
            # q of each shared column per vertex, expanded to the (a, column) rows in use
            qcol = sp.csr_array((val, (idx % nc, col)), shape=(nc, m))
            Q = sp.csr_array(sp.csr_array(qcol[used % nc]).multiply(prob.pA[used // nc][:, None]))
            obj = obj + cp.sum(cp.rel_entr(G @ nu, Q @ nu))
        pr = cp.Problem(cp.Minimize(obj), cons)
        tight = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10,
                 "max_iter": 300}
        solved = solve_quietly(pr, "CLARABEL", tight) or solve_quietly(
            pr, "SCS", {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iters": 100000})
        if not solved or nu.value is None:
            return None
        v = np.clip(np.asarray(nu.value, dtype=float), 0.0, None)
        return v / v.sum()

    def vertices_of(self, x, max_vertices):
        """Vertices (one edge per row) whose mixture is the row-stochastic ``x``, or None when that takes more than
        ``max_vertices``: each row's edges cut ``[0, 1]`` into intervals of lengths ``x_e``; between two consecutive
        cuts of all rows together every row sits in one interval, a vertex weighted by the piece's length (at most
        ``n - k + 1`` of them)."""
        prob = self.prob
        x = np.clip(x, 0.0, None)
        x = x / prob.row_sums(x)[prob.r]
        cum = np.cumsum(x)
        cum -= np.concatenate([[0.0], cum[prob.indptr[1:-1] - 1]])[prob.r]  # cumulative within each row
        cum[prob.indptr[1:] - 1] = 1.0
        cuts = np.unique(np.concatenate([[0.0, 1.0], cum[(cum > 0) & (cum < 1)]]))
        if cuts.size - 1 > max_vertices:
            return None
        mids = 0.5 * (cuts[:-1] + cuts[1:])
        # row c's edge holding t: its first with a cumulative sum above t (the count of those at or below it)
        below = np.add.reduceat((cum[None, :] <= mids[:, None]).astype(np.int32), prob.indptr[:-1], axis=1)
        last = np.diff(prob.indptr) - 1
        return list(prob.indptr[:-1] + np.minimum(below, last))

    def solve(self, delta, tol_nats, max_iter=200, start=None):
        """Best mixture found: ``(x, gap_nats, mu)`` (``x`` feasible after :meth:`SparseProblem.clean`).

        ``start``: a feasible point of another solver (the barrier's), ``(x, gap_nats)``: its vertices join the
        pool (when at most ``MAX_POOL // 2``), so the first master's mixture leaks no more than it, and the method
        stops when five masters leave its best gap (the plain bound, as the start's) above the start's (near
        perfect privacy its bound stays far above the leakage: a fallback after a near miss ran ~60 masters from
        an empty pool there for nothing)."""
        prob = self.prob
        if not self.pool:
            self.add(self.vertex_tiebreak(prob.w, np.zeros(prob.n)))
            self.add(self.vertex(self.s))
        beat = np.inf if start is None else start[1]
        if start is not None:
            vs = self.vertices_of(start[0], self.MAX_POOL // 2)
            for v in vs or ():
                self.add(v)
        rhs_free = not np.isfinite(delta) or delta >= prob.delta_max
        best = None
        mu = None
        history = []
        for _ in range(max_iter):
            # stalled: the best gap has not halved over the last 25 rounds
            if len(history) > 25 and history[-1] > 0.5 * history[-26]:
                break
            if len(history) >= 5 and history[-1] >= beat:
                break
            nu = self.master(delta)
            if nu is None:
                break
            x = prob.clean(self.mixture(nu), delta)
            f = prob.objective(x)
            pi = prob.posteriors(x)
            V = prob.scores(pi)
            Wb = np.zeros_like(prob.w) if rhs_free else prob.w
            rhs = 0.0 if rhs_free else max(float(delta), prob.delta_min)
            lb, mu = edge_lagrangian_bound(V, Wb, prob.indptr, rhs, mu)
            gap = max(f - lb, 0.0)
            if best is None or gap < best[1]:
                best = (x, gap, mu)
            history.append(best[1])
            if gap <= tol_nats:
                break
            Vm = V + mu * Wb
            base = self.vertex_tiebreak(Vm, prob.w)
            added = self.add(base)
            added |= self.add(self.vertex_tiebreak(Vm, -prob.w))
            # rows close to a tie get their own vertices (the base with one row switched), so the
            # master can split each of them in its own proportion: the deterministic tie-breaks
            # above would move every nearly tied row together
            added |= self._add_switches(base, Vm, gap)
            if not added:
                break
            if len(self.pool) > self.MAX_POOL:  # keep the vertices in use and the newest ones
                keep = [i for i, v in enumerate(nu) if v > 1e-12] + list(range(len(nu), len(self.pool)))
                # vertex 0 (the cheapest outputs) keeps every budget feasible
                keep = sorted(set(keep) | {0} | set(range(len(self.pool) - self.MAX_POOL // 2, len(self.pool))))
                self.pool = [self.pool[i] for i in keep]
                self.keys = {t[0].tobytes() for t in self.pool}
        return best


#: column generation is tried before the plain formulation when at most this many outputs are
#: shared by several rows (measured: one shared output, 100,000 rows: 7 s certified, where the plain
#: formulation stalls; 204 shared outputs: 200 master solves leave 2.8e-6 bits, the plain
#: formulation certifies in 0.5 s)
CG_FIRST_MAX_SHARED = 32


def column_generation(prob, delta, tol_bits, max_iter=200, start=None):
    """Solve ``prob`` at the (internal) budget ``delta`` by column generation (pool kept on ``prob``), from the
    point ``start`` when given (see :meth:`_ColumnGeneration.solve`: its vertices join the pool)."""
    cg = getattr(prob, "_cg", None)
    if cg is None:
        cg = prob._cg = _ColumnGeneration(prob)
    if start is not None:
        start = prob.clean(start, delta)
        start = (start, prob.certificate(start, delta)[0] * np.log(2.0))
    out = cg.solve(delta, tol_bits * np.log(2.0), max_iter=max_iter, start=start)
    return None if out is None else out[0]


def sparse_candidates(prob, *, delta=None, target_nats=None, solvers=("CLARABEL", "SCS"), tol_bits=1e-6):
    """Yield ``(name, x)`` candidates for a :class:`SparseProblem`: column generation and the plain
    cvxpy formulation over the edges (in joint-mass units ``y_e = p(c) x_e``, which keeps the
    interior-point solvers well scaled; private outputs enter linearly, shared outputs through
    exponential cones), in the order that suits the number of shared outputs."""
    # column generation's master grows with the outputs shared by several rows: first when they are
    # few (one column of many categories: one shared output), last otherwise
    n_shared = int(np.count_nonzero(np.bincount(prob.j, minlength=prob.kh) > 1))
    cg_first = n_shared <= CG_FIRST_MAX_SHARED
    # the barrier on the edges first wherever it runs (its sizes): near perfect privacy the column generation's bound
    # stays ~300 times the leakage itself (a mixture of up to |A| n_shared + 2 vertices, its pool grown past MAX_POOL:
    # 6.4e-8 bits at a point leaking 2.1e-10 after 29 masters), so a target search's precise solves (tol ~1e-12
    # bits) each ran it to its stall, 26 masters or more, before the barrier (0.07 s) and its polish. It stays the
    # fallback (polished, its point certifies where the barrier's does not a hair above a block floor), started from
    # the barrier's point when that ran (a near miss of the tolerance then costs a few masters, not ~60)
    x_bar = None
    if target_nats is None:
        x_bar = barrier_edges(prob, delta, tol_bits)
        if x_bar is not None:
            yield "barrier (edges)", x_bar
    if target_nats is None and cg_first:
        x = column_generation(prob, delta, tol_bits, start=x_bar)
        if x is not None:
            yield "column-generation", x
    yield from _edge_candidates(prob, delta, target_nats, solvers)
    if target_nats is None and not cg_first:
        x = column_generation(prob, delta, tol_bits, max_iter=60, start=x_bar)
        if x is not None:
            yield "column-generation", x


def barrier_edges(prob, delta, tol_bits):
    """The dense engine's barrier method (:class:`privrelease.mapping._fast._Barrier`) on every edge of ``prob``:
    the best point its certificate checks (an edge vector), or None beyond ``SPARSE_POLISH_MAX_ROWS`` rows or the
    dense engine's full-support size (``_FULL_SUPPORT_LIMIT`` edges; larger problems keep the other candidates).

    The column generation mixes vertices whose weights its master (a cone program) resolves to ~1e-12 in absolute
    terms: the posteriors of outputs used at ~1e-6 (a target 1e-12 bits above a block floor) are then off by a
    relative 1e-6 and its bound stalls at gaps of 1e-10 .. 2e-8 nats. The barrier's point (~2e-11 bits there) and
    its exact polish (:func:`polish_edges`, ~1.4e-14) reach the certificate's own floor, as on the dense engine."""
    from ._fast import _FULL_SUPPORT_LIMIT, _Barrier

    if prob.k > SPARSE_POLISH_MAX_ROWS or prob.n > _FULL_SUPPORT_LIMIT or delta is None:
        return None
    delta = float(delta)
    if delta <= prob.delta_min * (1 + 1e-12) + 1e-300:
        return None  # only the cheapest edges: the exact answer (solve_mapping's) or the other candidates'
    has_con = np.isfinite(delta) and delta < prob.delta_max * (1 - 1e-12)
    # a strictly interior start: the cheapest edges mixed with the uniform mapping, inside the budget
    x0 = 0.5 * prob.P_min + 0.5 * prob._uniform
    if has_con:
        d_uni = prob.distortion(prob._uniform)
        theta = 0.5 if d_uni <= prob.delta_min else min(0.5, 0.5 * (delta - prob.delta_min) / (d_uni - prob.delta_min))
        x0 = (1 - theta) * prob.P_min + theta * prob._uniform
    bar = _Barrier(prob, prob.r, prob.j, delta if has_con else np.inf, has_con, w=prob.w)
    best = [None, np.inf]

    def check(x, barrier_gap):
        x = x / prob.row_sums(x)[prob.r]
        gap = prob.certificate(x, delta)[0]
        if gap < best[1]:
            best[0], best[1] = x, gap
        return gap - 0.5 * tol_bits

    try:
        with np.errstate(all="ignore"):
            bar.solve(x0, gap_nats=0.2 * tol_bits * np.log(2.0), check=check)
    except (np.linalg.LinAlgError, ValueError, ArithmeticError):
        pass
    return best[0]


def _edge_candidates(prob, delta, target_nats, solvers):
    import cvxpy as cp

    n, k = prob.n, prob.k
    private, s = _private_scores(prob)
    pce = prob.pc[prob.r]
    sh = np.flatnonzero(~private)
    na = prob.M.shape[0]
    R = sp.csr_array((np.ones(n), (prob.r, np.arange(n))), shape=(k, n))
    blocks = None
    if sh.size:
        cols, jc = np.unique(prob.j[sh], return_inverse=True)
        rows = (np.arange(na)[:, None] * cols.size + jc[None, :]).ravel()
        ecol = np.tile(sh, na)
        post = prob.Mr[:, sh] / pce[sh][None, :]
        B = sp.csr_array((post.ravel(), (rows, ecol)), shape=(na * cols.size, n))
        Cq = sp.csr_array((np.repeat(prob.pA, sh.size), (rows, ecol)), shape=(na * cols.size, n))
        blocks = (B, Cq)
    for name in solvers:
        y = cp.Variable(n, nonneg=True)
        cons = [R @ y == prob.pc]
        info = (s / pce) @ y
        if blocks is not None:
            info = info + cp.sum(cp.rel_entr(blocks[0] @ y, blocks[1] @ y))
        dist = prob.d @ y
        if target_nats is None:
            if delta is not None and np.isfinite(delta) and delta < prob.delta_max:
                cons.append(dist <= delta)
            problem = cp.Problem(cp.Minimize(info), cons)
        else:
            cons.append(info <= target_nats)
            problem = cp.Problem(cp.Minimize(dist), cons)
        opts = {"max_iters": 200000, "eps_abs": 1e-9, "eps_rel": 1e-9} if name == "SCS" else {}
        if solve_quietly(problem, name, opts) and y.value is not None:
            yield f"cvxpy-{name} (edges)", np.asarray(y.value, dtype=float) / pce


def polish_edges(prob, x, delta, tol_bits, own=None, max_iter=30, max_outer=8):
    """Exact final polish of an edge vector ``x`` on its support: the projected Newton steps on the optimality
    conditions of the dense engine's exact polish (:func:`privrelease.mapping._fast._kkt_polish`), over the edges.

    The Lagrangian bound is a sum of row minima, first order in the distance to the optimum: it needs the exact ties
    that neither the column generation's master (a mixture of vertices, its bound stalled at gaps of 1e-10 .. 2e-8
    nats) nor an interior-point point gives. The support is identified by comparing each edge with its reduced cost
    (three thresholds), the conditions solved on it, and edges off the support whose reduced cost undercuts their
    row's level priced in (at ``1e-6`` of their row, lower each time the steps empty them again). ``own``: ``(gap,
    multiplier)`` of ``prob.certificate(x, delta)`` when the caller has them. Returns the best ``(x, gap_bits,
    multiplier)``, its bound that of ``prob.certificate`` with the posteriors of ``x`` for the outputs the polish
    emptied (``x`` itself when nothing improved it; unchanged on problems of more than ``SPARSE_POLISH_MAX_ROWS``
    rows or ``_FULL_SUPPORT_LIMIT`` edges, the sizes :func:`barrier_edges` works at).
    """
    from ._fast import _FULL_SUPPORT_LIMIT, newton_on_entries

    if own is None:
        own = prob.certificate(x, delta)[:2]
    gap0, lam = own
    best = (x, gap0, lam)
    if prob.k > SPARSE_POLISH_MAX_ROWS or prob.n > _FULL_SUPPORT_LIMIT:
        # the sizes barrier_edges works at (review: the rows alone let an erasure alphabet of ~1e6 edges into rounds
        # of Newton steps and full-edge certificates it never ran before)
        return best
    pi_hint = prob.posteriors(x)
    has_con = delta is not None and np.isfinite(delta) and delta < prob.delta_max * (1 - 1e-12)
    lam = float(lam) if has_con and np.isfinite(lam) else 0.0
    lam_active = has_con and lam > 0
    r, j, ip, n = prob.r, prob.j, prob.indptr, prob.n
    key = r * np.int64(prob.kh) + j  # increasing: the edges run row by row, outputs increasing
    V = prob.scores(prob.posteriors(x)) + lam * prob.w
    rc = np.maximum(V - _segment_min(V, ip)[r], 0.0) / prob.pc[r]
    top = x >= np.maximum.reduceat(x, ip[:-1])[r]
    tried = set()
    for c in (1e-2, 1.0, 1e-4):
        if best[1] <= tol_bits:
            break
        sup = (x > c * rc) | top
        if sup.tobytes() in tried:
            continue
        tried.add(sup.tobytes())
        Q = np.where(sup, x, 0.0)
        Q = Q / prob.row_sums(Q)[r]
        start = np.zeros(n)  # the value each edge priced in started at (0: never priced in)
        g_prev = np.inf
        lam_c, lam_active_c = lam, lam_active
        for _ in range(max_outer):
            on = np.flatnonzero(Q > 0)
            try:
                with np.errstate(all="ignore"):
                    out = newton_on_entries(prob, r[on], j[on], Q[on], delta, lam_active_c, max_iter, lam_c,
                                            w=prob.w[on])
            except (np.linalg.LinAlgError, ValueError, ArithmeticError):
                break
            if out is None:
                break
            rn, jn, xn, _ = out
            Q = np.zeros(n)
            Q[np.searchsorted(key, rn * np.int64(prob.kh) + jn)] = xn
            Qf = prob.clean(Q, delta) if has_con and prob.distortion(Q) > delta else Q
            # both starts: where the hint wins the cheap bound, its refinement can stop short where the point's own
            # posteriors certify (seed 3 of floor25's erasure instance, 1e-12 bits: 8.05e-12 against 5.6e-14 bits)
            g, lam_q, _ = prob.certificate(Qf, delta, target_bits=0.5 * tol_bits, pi_hint=pi_hint, both_starts=True)
            if g < best[1]:
                best = (Qf, g, lam_q)
            if g <= 0.5 * tol_bits:
                return best
            # pricing: edges off the support below their row's level at the posteriors of the point (the smoothed
            # ones of SparseProblem.posteriors for the outputs it empties)
            used = Q > 0
            Vq = prob.scores(prob.posteriors(Q)) + (lam_q if has_con else 0.0) * prob.w
            level = _segment_min(np.where(used, Vq, np.inf), ip)
            spread = np.maximum.reduceat(np.abs(np.where(used, Vq, 0.0)), ip[:-1])
            viol = ~used & (Vq < (level - 1e-12 * spread)[r])
            again = viol & (start > 1e-13)
            if not viol.any() or (g > 0.9 * g_prev and not again.any()):
                break
            g_prev = g
            lam_c = float(lam_q) if has_con else 0.0
            lam_active_c = has_con and lam_c > 0
            start = np.where(viol, np.where(again, 1e-3 * start, 1e-6), start)
            Q = np.where(viol, start, Q)
            Q = Q / prob.row_sums(Q)[r]
    return best
