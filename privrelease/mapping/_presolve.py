"""Exact presolve of Algorithm 1's program: outputs dominated by another output are removed.

Output ``j2`` is *dominated* by output ``j1`` when every input that may reach ``j2`` may reach
``j1`` at no greater distortion:

    reach(j2) ⊆ reach(j1)   and   d(c, j1) <= d(c, j2) for every c in reach(j2).

Moving, in every row, the mass of ``j2`` onto ``j1`` then keeps the mapping feasible, does not
increase the expected distortion, and does not increase the leakage: both measures are
subadditive in the columns of the joint ``J(a, j) = p(a, j)``. Mutual information is
``sum_j f(J_j)`` with ``f(x) = sum_a x_a ln(x_a / (p(a) sum_b x_b))`` convex and positively
homogeneous, so ``f(x + y) = 2 f((x + y) / 2) <= f(x) + f(y)``; maximal leakage is
``log sum_j max_a p(j | a)`` and ``max(x + y) <= max x + max y``. An optimum of the program over
the undominated outputs is therefore an optimum of the whole program (every budget, both
measures, perfect privacy included), and a lower bound on the reduced program's optimum bounds
the whole program's: the certificate carries over unchanged. The removed outputs get no mass.

Two cheap, exact tests find the dominated outputs:

* outputs with the **same reach set** (hashed, then compared entry by entry) are compared with
  the one of least total distortion in their group;
* an output only **one input** can reach is dominated by that input's cheapest other output
  (ties: an output shared by several inputs, then the lowest index).

An erasure alphabet is the case in point (Salamatian et al., Sec. VI-A): the outputs that erase
different features of one tuple but leave the same set of tuples compatible form one group, and
every output reachable from a single tuple is dominated by the tuple itself (no erasure). On 300
tuples of eight six-valued features, 56,795 outputs over 76,800 allowed transitions reduce to
5,571 outputs over 22,466 transitions. Duplicate outputs (identical distortion columns) are
another case.
"""

import numpy as np
import scipy.sparse as sp

from ._sparse import check_warm_pattern

__all__ = ["OutputReduction", "reduce_outputs"]

#: the blockwise dominance test's block size (cells), and ErasureMapper's limit for a dense alphabet
DENSE_CELLS_LIMIT = 2**22
#: a sparse distortion whose reduced problem has at most this many input x output cells is solved as a
#: dense one (forbidden cells ``inf``) by the structured fast solver; above it by column generation over
#: the allowed transitions (``_sparse``), much slower on erasure alphabets: 300 rows of twelve six-valued
#: fields reduce to 300 x 17,218 cells (5.2 million), fitted (cap 0.01 bits) in 75 s and 1.7 GB dense, not
#: finished in 900 s sparse (benchmarks/bench_erasure_features.py, stop 23)
REDUCED_DENSE_CELLS_LIMIT = 2**23


def _segment_all(flags, indptr):
    """``flags`` reduced with ``all`` over the segments ``indptr`` (empty segments: True)."""
    out = np.ones(indptr.size - 1, dtype=bool)
    nz = np.flatnonzero(np.diff(indptr) > 0)
    if nz.size:
        out[nz] = np.logical_and.reduceat(flags, indptr[nz])
    return out


def _allowed_csc(D):
    """``(indptr, rows, costs)`` of the allowed entries, column by column (rows sorted)."""
    if sp.issparse(D):
        C = sp.csc_array(D)
        C.sort_indices()
        return C.indptr.astype(np.int64), C.indices.astype(np.int64), np.asarray(C.data, dtype=float)
    fin = np.isfinite(D)
    cols, rows = np.nonzero(fin.T)
    indptr = np.zeros(D.shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=D.shape[1]), out=indptr[1:])
    return indptr, rows.astype(np.int64), D[rows, cols].astype(float)


def _dominators_full(D):
    """:func:`_dominators` for a dense distortion without a forbidden entry: every output reaches every
    input (one reach set, no output of a single input, as ``n >= 2``), so the only test is against the
    output of least total distortion, done in column blocks (no copy of ``D`` beyond a block)."""
    n, m = D.shape
    target = np.arange(m)
    with np.errstate(over="ignore"):
        total = D.sum(axis=0)
    if not np.isfinite(total).all():  # entries near float64's largest: the column sums of D scaled by a power of two
        total = (D * 2.0 ** -np.frexp(float(D.max()))[1]).sum(axis=0)
    lead = int(np.argmin(total))  # ties: the lowest index, as in the general case
    step = max(1, DENSE_CELLS_LIMIT // max(n, 1))
    for start in range(0, m, step):
        cols = np.arange(start, min(start + step, m))
        ok = np.all(D[:, cols] >= D[:, lead][:, None], axis=0)
        ok &= cols != lead
        target[cols[ok]] = lead
    return target


def _dominators(D):
    """For every output, the output that replaces it (itself when kept; -1 when no input reaches it)."""
    n, m = D.shape
    if not sp.issparse(D) and n >= 2 and np.isfinite(D).all():
        return _dominators_full(D)
    indptr, rows, cost = _allowed_csc(D)
    nnz = np.diff(indptr)
    col = np.repeat(np.arange(m), nnz)
    target = np.arange(m)
    target[nnz == 0] = -1
    # (1) same reach set: hash each set with two random 64-bit row weights (wrapping sums), group,
    #     then verify entry by entry against the group's leader (least total distortion)
    rng = np.random.default_rng(0x5EED)
    w1 = rng.integers(0, 2**63, n, dtype=np.uint64)
    w2 = rng.integers(0, 2**63, n, dtype=np.uint64)
    live = np.flatnonzero(nnz > 0)
    total = np.bincount(col, weights=cost, minlength=m)
    if live.size:
        h1 = np.add.reduceat(w1[rows], indptr[live])  # uint64 sums wrap: a hash of the set
        h2 = np.add.reduceat(w2[rows], indptr[live])
        by = np.lexsort((h2, h1, nnz[live]))
        new = np.ones(live.size, dtype=bool)
        new[1:] = (np.diff(nnz[live][by]) != 0) | (np.diff(h1[by]) != 0) | (np.diff(h2[by]) != 0)
        group = np.empty(live.size, dtype=np.int64)
        group[by] = np.cumsum(new) - 1
        order = np.lexsort((live, total[live], group))  # by group, then total, then index
        first = np.ones(order.size, dtype=bool)
        first[1:] = group[order][1:] != group[order][:-1]
        leader_of_group = np.empty(group.max() + 1, dtype=np.int64)
        leader_of_group[group[order][first]] = live[order][first]
        leader = np.arange(m)
        leader[live] = leader_of_group[group]
        cand = live[leader[live] != live]
        if cand.size:
            # entries of the candidates, aligned with their leader's (same count, rows sorted)
            cptr = np.zeros(cand.size + 1, dtype=np.int64)
            np.cumsum(nnz[cand], out=cptr[1:])
            off = np.arange(cptr[-1]) - np.repeat(cptr[:-1], nnz[cand])
            e = np.repeat(indptr[cand], nnz[cand]) + off
            le = np.repeat(indptr[leader[cand]], nnz[cand]) + off
            ok = _segment_all((rows[e] == rows[le]) & (cost[e] >= cost[le]), cptr)
            target[cand[ok]] = leader[cand[ok]]
    # (2) an output one input reaches: dominated by that input's cheapest other kept output
    kept = target == np.arange(m)
    single = kept & (nnz == 1)
    if single.any():
        ke = np.flatnonzero(kept[col])
        # per row, the first entry in (cost, single, index) order among the kept outputs
        order = np.lexsort((col[ke], single[col[ke]], cost[ke], rows[ke]))
        r_sorted = rows[ke][order]
        firsts = np.ones(order.size, dtype=bool)
        firsts[1:] = r_sorted[1:] != r_sorted[:-1]
        best = np.full(n, -1, dtype=np.int64)
        best[r_sorted[firsts]] = col[ke][order][firsts]
        sj = np.flatnonzero(single)
        srow = rows[indptr[sj]]
        drop = best[srow] != sj
        target[sj[drop]] = best[srow[drop]]
    # chains (a group leader that step (2) removed): follow to a kept output
    for _ in range(3):
        t = target[target >= 0]
        if np.array_equal(target[t], t):
            break
        ok = target >= 0
        target[ok] = target[target[ok]]
    return target


class OutputReduction:
    """The undominated outputs of a distortion and the maps between the two problems.

    Attributes
    ----------
    keep : ndarray of int
        Kept outputs, in their original order.
    position : ndarray of int, shape (n_outputs,)
        For every original output, the column of the reduced problem that takes its mass
        (itself when kept; -1 for an output no input can reach).
    distortion : ndarray or csr_array
        The reduced distortion (dense with ``inf`` when small enough, see ``REDUCED_DENSE_CELLS_LIMIT``).
    """

    def __init__(self, D, target):
        self.shape = D.shape
        self.sparse_in = sp.issparse(D)
        self.keep = np.flatnonzero(target == np.arange(D.shape[1]))
        pos = np.full(D.shape[1], -1, dtype=np.int64)
        pos[self.keep] = np.arange(self.keep.size)
        self.position = np.where(target >= 0, pos[np.maximum(target, 0)], -1)
        if self.sparse_in:
            self._D = sp.csr_array(D)
            self._D.sort_indices()
            red = sp.csr_array(sp.csc_array(D)[:, self.keep])
            red.sort_indices()
            if D.shape[0] * self.keep.size <= REDUCED_DENSE_CELLS_LIMIT:
                dense = np.full((D.shape[0], self.keep.size), np.inf)
                r = np.repeat(np.arange(red.shape[0]), np.diff(red.indptr))
                dense[r, red.indices] = red.data
                red = dense
            self.distortion = red
        else:
            self.distortion = D[:, self.keep]

    @property
    def n_outputs(self):
        return int(self.keep.size)

    def expand(self, mapping):
        """A reduced mapping -> the original problem's (no mass on removed outputs), in the
        original distortion's format (a sparse distortion gives its stored entries)."""
        n, m = self.shape
        if not self.sparse_in:
            out = np.zeros((n, m))
            out[:, self.keep] = mapping.toarray() if sp.issparse(mapping) else np.asarray(mapping)
            return out
        D = self._D
        r = np.repeat(np.arange(n), np.diff(D.indptr))
        kept = np.zeros(m, dtype=bool)
        kept[self.keep] = True
        on = kept[D.indices]  # entries of kept outputs
        pj = self.position[D.indices]
        data = np.zeros(D.nnz)
        data[on] = _lookup(mapping, r[on], pj[on])
        return sp.csr_array((data, D.indices.copy(), D.indptr.copy()), shape=(n, m))

    def reduce(self, mapping):
        """An original mapping -> the reduced problem's: each removed output's mass moves to the
        output that dominates it (feasible, no more distortion, no more leakage)."""
        n, m = self.shape
        if self.sparse_in:
            W = sp.csr_array(mapping, copy=True) if sp.issparse(mapping) else None
            if W is not None:
                W.sort_indices()
            check_warm_pattern(W, self.shape, self._D.indptr, self._D.indices)
        ok = self.position >= 0
        T = sp.csr_array((np.ones(int(ok.sum())), (np.flatnonzero(ok), self.position[ok])),
                         shape=(m, self.keep.size))
        merged = sp.csr_array(sp.csr_array(mapping) @ T) if sp.issparse(mapping) else np.asarray(mapping) @ T
        if not sp.issparse(self.distortion):
            return merged.toarray() if sp.issparse(merged) else np.asarray(merged)
        R = self.distortion
        r = np.repeat(np.arange(n), np.diff(R.indptr))
        data = _lookup(merged, r, R.indices)
        return sp.csr_array((data, R.indices.copy(), R.indptr.copy()), shape=R.shape)


def _lookup(A, r, c):
    """Values ``A[r, c]`` of a dense or sparse matrix at the given cells (0 where not stored)."""
    if not sp.issparse(A):
        return np.asarray(A)[r, c]
    C = sp.coo_array(A)
    C.sum_duplicates()
    key = C.row.astype(np.int64) * A.shape[1] + C.col
    if key.size == 0:
        return np.zeros(r.size)
    order = np.argsort(key, kind="stable")
    key, val = key[order], np.asarray(C.data, dtype=float)[order]
    want = r.astype(np.int64) * A.shape[1] + c
    i = np.minimum(np.searchsorted(key, want), key.size - 1)
    return np.where(key[i] == want, val[i], 0.0)


def reduce_outputs(D):
    """The :class:`OutputReduction` of a checked distortion, or None when no output is
    dominated (or fewer than two outputs would remain, or an input has no allowed output:
    the problem itself reports that).

    A sparse distortion of at most ``REDUCED_DENSE_CELLS_LIMIT`` cells gets a reduction even when no
    output is dominated (it keeps every output): its distortion is the dense one, so the dense fast
    path solves it, as any small reduced program. Without it, such a distortion went to the sparse
    engine: a k = 575 x 725 sparse L1 distortion (each row its 38 cheapest outputs, 21,850
    transitions) ran SCS for over 10 minutes (benchmarks/bench_solver_families5.py)."""
    reach = (np.diff(sp.csr_array(D).indptr) > 0) if sp.issparse(D) else np.isfinite(D).any(axis=1)
    if not reach.all():
        return None
    target = _dominators(D)
    kept = int(np.count_nonzero(target == np.arange(D.shape[1])))
    small_sparse = sp.issparse(D) and D.shape[0] * kept <= REDUCED_DENSE_CELLS_LIMIT
    if kept < 2 or (kept == D.shape[1] and not small_sparse):
        return None
    return OutputReduction(D, target)
