"""``solve_mapping``: Algorithm 1 (paper eq. 6) with certified solvers.

Solvers
-------
``"cvxpy"``
    The plain formulation, kept as the reference: variables ``P >= 0`` with rows
    summing to 1, ``P[d = inf] == 0``, objective
    ``sum_{a, j} rel_entr(J(a, j), p(a) q(j)) / ln 2`` with ``J = prior @ P`` and
    ``q = p_C @ P``, distortion ``<= delta``. CLARABEL is tried, then SCS. The
    answer is cleaned (clipped, forbidden entries set to exactly 0, rows
    renormalised, distortion restored to ``<= delta``) and certified.
``"fast"``
    The structured interior-point solver of :mod:`privrelease.mapping._fast`; when
    its answer does not certify, the first-order step from the cheapest mapping
    (:func:`_first_order_step`, the optimum within a relative slack of ~1e-9 of the
    smallest budget, where an interior point cannot resolve the budget), used only
    when it certifies (tried first within ``FIRST_ORDER_RTOL`` of the range above the
    smallest budget).
``"auto"``
    ``"fast"``, then ``"cvxpy"`` if the fast answer does not certify.
Sparse distortion (stored entries = allowed transitions)
    Column generation over the allowed transitions, then the plain formulation
    written over them (:mod:`privrelease.mapping._sparse`); same certificate.

Presolve
--------
Before any solver, the outputs that another output dominates (every input that
can reach it reaches the other at no greater distortion) are removed
(:mod:`privrelease.mapping._presolve`). This is exact: moving their mass to the
dominating output never increases the distortion or either leakage measure, so
the reduced program has the same optimum and its certificate is the whole
program's. The returned mapping has the original shape (and, for a sparse
distortion, its stored entries), with no mass on the removed outputs. An erasure
alphabet shrinks the most (eight features: 56,795 outputs to 5,571), and a sparse
distortion whose reduced program is small enough is solved by the dense fast path.

Certification
-------------
Every answer is checked independently of the solver that produced it: the
returned mapping is feasible by construction and ``certificate['gap_bits']`` is
a rigorous Lagrangian duality gap (see :mod:`privrelease.mapping._problem`).
Policy when nothing certifies to ``tol``: an explicit ``solver="fast"`` or
``solver="cvxpy"`` raises :class:`~privrelease.exceptions.SolverError`;
``solver="auto"`` returns the best feasible answer with ``status="inaccurate"``
and emits a :class:`~privrelease.exceptions.ConvergenceWarning` (never silently).
``"auto"`` skips the cvxpy fallback above ``CVXPY_FALLBACK_MAX_VARIABLES``
(250,000 allowed mapping entries), where the plain formulation takes minutes. Below it each
solver of the fallback runs at most ``CVXPY_FALLBACK_TIME_LIMIT`` seconds (120; on badly scaled
priors SCS's 200,000 iterations took 31 minutes on a 2-core machine at 229 x 229 entries, with
``|A| = 10`` and ``p(c)`` spread over ten decades); ``solver="cvxpy"`` runs them without a time
limit. Each solver's answer, its
certified gap and time, and the start of the fallback are logged at INFO level
on the ``"privrelease.mapping"`` logger.

Tolerance policy
----------------
* Leakage (bits are scale free): ``tol`` is an absolute bound on the certified
  gap, reported in ``certificate['gap_bits']`` for every answer. It must lie below
  ``log2(min(|A|, n_outputs))`` bits (at least 1), the most any mapping can leak (mutual
  information or maximal leakage), else every mapping would be certified: a larger ``tol``
  is refused (:func:`check_tol`).
* Distortion: each row of ``D`` has its minimum ``m(c)`` subtracted (every mapping's
  expected distortion then drops by the same constant ``sum_c p(c) m(c)``, the offset,
  kept exactly as a correctly rounded pair) and is divided by ``scale`` = the largest
  finite difference before anything is compared, so every distortion tolerance is
  relative to the distortions' spread: ``D``, ``c * D`` (budget ``c * delta``) and
  ``a + D`` (budget ``a + delta``; ``a`` a constant or a vector over the rows) give the
  same mapping. Budgets, bounds and the smallest feasible distortion are reported with the
  offset, gaps and tolerances without it. A budget below the smallest feasible distortion
  by more than that distortion's rounding (``ceil(log2 k) + 2`` ulps of it over ``k`` inputs,
  at most ``BUDGET_RTOL`` of it) is infeasible; within it, the smallest.
  A budget whose slack above the smallest moves at most ``ROUNDING_ULPS`` ulps of a row's
  mass is the smallest. Outputs tie for a row's cheapest when their costs are equal.
* ``max_leakage`` mode (every solver): the engine holds the mapping's leakage to the target
  up to rounding (1e-12 relative; for the maximal leakage, ``ROUNDING_ULPS`` ulps per symbol
  of ``2^target``: about ``(k + k_hat) 1e-15`` bits, also near 0), and an "optimal" answer's
  reported leakage (``leakage()`` of the returned mapping, what the result holds) is at most a
  positive target: one a rounding above it (a target at the smallest leakage as another sum reads
  it) is warned "inaccurate" or raised (``_within_target``; a target of 0 reads perfect privacy to
  rounding, as below); a target below a block floor by more than its rounding is refused by the
  floor, and
  ``certificate['distortion_gap']`` is a rigorous bound on its distance to the smallest
  distortion reaching the target (Lagrangian lower bounds, :func:`_solve_mi_target`);
  certified when it is at most ``DIST_RTOL`` times the distortion range and at most
  ``ANSWER_RTOL`` times the answer's distance to the smallest distortion (both measures,
  :func:`_answer_dist_tol`), so that one far symbol, which makes the range 1e4 .. 1e9 times
  that distance, does not certify a far answer; that share has a floor: mutual information,
  ``ANSWER_RTOL * DIST_RTOL`` times the range or what ``tol`` bits buy at the smallest
  distortion; maximal leakage, the rounding of the answer's masses (``ROUNDING_ULPS`` ulps
  per symbol) times the dearest entry each row uses, at most ``ML_ROUNDING_RTOL`` (1e-14)
  times the range, plus what
  meeting the target after rounding costs (the LP is solved ``LP_TARGET_RTOL`` inside the
  target, in units of the answer's distance; an answer HiGHS left above it within its
  feasibility tolerance is mixed with the LP's answer ``PULLBACK_RTOL`` further inside, else
  with the perfect-privacy mapping, and the distortion that adds is tolerated). No tolerance
  is below the distortion's own rounding (``ROUNDING_ULPS`` ulps of its magnitude per input
  and output symbol): a constant distortion has a range of 0. A target that the
  least-leaking mapping found meets within that rounding is met by that mapping. At a target no
  solve tells from 0 the perfect-privacy LP's mapping answers only when it leaks within that
  rounding (HiGHS's tolerances let public symbols of mass 1e-11 leak 1e-12 bits) and is certified; else the
  cheaper of the perfect-privacy LP in conditional form (``_lp.conditional_perfect_privacy``, when private to
  rounding; also where the LP is infeasible) and the cheapest constant mapping (leakage exactly 0), certified by the
  larger of the two LPs' bounds or warned; an answer over the target is never "optimal". An LP
  answer over the target or not certified is first replaced by an exact vertex (of HiGHS's
  active constraints, or complementary to the dual LP's multipliers, checked within the
  target to relative precision) when one is cheaper, and bounded by the dual LP
  (:func:`_polish_target`; ``solver="cvxpy"`` too, from HiGHS's LP of the same target).
* Blocks of allowed entries (components of the bipartite graph of finite distortions): every
  mapping leaks at least ``I(A; B)`` (``log2 sum_b max_a p(b | a)`` for the maximal leakage); a
  target at that floor (within the rounding above) is answered by the per-block perfect-privacy
  LP (:class:`~._lp.BlockFloor`; the maximal-leakage LP with a reference class per block,
  ``_lp._ml_references``), and its multipliers bound the distortion above it.
"""

import dataclasses
import logging
import math
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import rel_entr

from ..exceptions import ConvergenceWarning, InfeasibleBudgetError, SolverError
from ..utils import check_number
from ..utils._validation import check_table, format_bound, plain_value, user_stacklevel
from . import _lp
from ._checks import (_refuse_strings, check_budget, check_distortion, check_mapping, check_paired_labels,
                      check_prior)
from ._cvx import solve_quietly
from ._leakage import _expected_distortion, leakage as _leakage
from ._lp import (ROW_SCALE_FLOOR, BlockFloor, _ml_bits_up, _ml_floor_rounding, _ml_references, _ml_row_unit,
                  _ml_target_slack, conditional_perfect_privacy, independence_lower_bound,
                  maximal_leakage_distortion_bound, maximal_leakage_target_multipliers, perfect_privacy_mapping,
                  perfect_privacy_unreachable, polish_maximal_leakage, polish_maximal_leakage_target,
                  sharpest_independence_multipliers, solve_maximal_leakage_lp)
from ._presolve import reduce_outputs
from ._problem import LN2, Problem, bound_rounding
from ._result import MappingResult
from ._sparse import SparseProblem, polish_edges, sparse_candidates

__all__ = ["solve_mapping"]

#: the stages of a solve (each solver's answer and its certified gap, the fallback to cvxpy) are logged at INFO
#: level here: ``logging.basicConfig(level=logging.INFO)`` shows what a long call is doing
_LOG = logging.getLogger("privrelease.mapping")

_KINDS = ("mutual_information", "maximal_leakage")
#: ``solver="auto"`` does not fall back to the plain formulation above this many variables (allowed entries)
#: (it needs minutes and gigabytes there); it returns the fast answer with a warning instead.
CVXPY_FALLBACK_MAX_VARIABLES = 250_000
#: ``solver="auto"``: seconds each cvxpy solver of the fallback may run (CLARABEL, then SCS), so an uncertified
#: fast answer comes back, warned, within minutes (SCS's 200,000 iterations ran for 31 minutes on 229 x 229
#: entries; on 126 x 126 entries with 124 inputs of mass 1e-8 neither solver was back after 8 minutes, and
#: CLARABEL's answer, where it returned, was worse than the fast one). ``solver="cvxpy"`` is not limited.
CVXPY_FALLBACK_TIME_LIMIT = 120.0
#: tolerance policy (see the module notes): budgets below the smallest feasible distortion by at most its
#: rounding, and at most ``BUDGET_RTOL`` of it, count as that distortion
BUDGET_RTOL = 1e-12
#: budgets within this slack of the smallest, relative to the larger of the smallest budget and the
#: budget's range ``delta_max - delta_min``, also try the optimum at the smallest budget
NEAR_MIN_RTOL = 1e-6
#: budgets within this share of the distortion range above the smallest try the first-order step from the cheapest
#: mapping before the interior point (which cannot resolve such a slack)
FIRST_ORDER_RTOL = 1e-9
#: max_leakage mode: certified when the distortion is within ``DIST_RTOL`` times the
#: distortion range ``(delta_max - delta_min)`` of a rigorous lower bound
DIST_RTOL = 1e-6
#: max_leakage mode: the search aims this share inside the target (mutual information), so that the answer's
#: leakage never exceeds it after rounding
TARGET_HAIR = 1e-12
#: the same for the maximal leakage's ``sum_j max_a p(j | a) <= 2^target``
ML_TARGET_HAIR = 1e-13
#: max_leakage mode: the rounding of a sum over the input and output symbols, this many ulps of its magnitude per
#: symbol. No distortion is certified more finely (a constant distortion, range 0, was "inaccurate" at a gap of
#: 1.6e-16), and a target that the least-leaking mapping meets within it is met by that mapping (a target equal to
#: the only allowed mapping's leakage, as leakage() computes it, was refused)
ROUNDING_ULPS = 4.0
#: max_leakage mode: the perfect-privacy LP's bound is sharpened (its multipliers re-optimised for the target) up
#: front when it lies within this many tolerances of the LP's distortion, and always before an answer is given up.
#: Up front it narrows the search's bracket, which changes the delta solves' path: at 1e3 a pc_range target of
#: 1e-9 bits (k = 30, |A| = 5, the LP's bound 46 tolerances away) took 31 polish Newton solves instead of 12
SHARPEN_WITHIN = 10.0
#: maximal-leakage mode, delta budget: certified when the LP gap is at most ``min(tol, ML_GAP_BITS)`` bits
ML_GAP_BITS = 1e-7
#: max_leakage mode: at most this many delta solves (Newton usually needs 3 to 8)
MAX_TARGET_SOLVES = 40

#: a target inside the least-leaking solve's own gap is decided by solving that problem again, each time 100 times
#: more precisely, at most this many times (then "could not decide": a SolverError whatever the solver)
UNDECIDED_RESOLVES = 3

#: max_leakage mode (mutual information): the distortion tolerance is also at most this share of the answer's
#: distance to the smallest distortion
ANSWER_RTOL = 1e-3
#: maximal-leakage target mode: the LP is solved at ``2^target * (1 - LP_TARGET_RTOL)``, so that its answer meets the
#: target after rounding (the bound is the one at the target itself)
LP_TARGET_RTOL = 1e-12
#: maximal-leakage target mode: an LP answer still above the target (HiGHS's feasibility tolerance, 1e-7 absolute) is
#: mixed with the LP's answer at ``2^target * (1 - PULLBACK_RTOL)`` (beyond that tolerance) when that meets the target
PULLBACK_RTOL = 1e-6
#: HiGHS's primal feasibility tolerance (absolute, per row)
HIGHS_FEAS_TOL = 1e-7
#: maximal-leakage target mode: the distortion tolerance's floor, relative to the range (the rounding of the
#: distortion, a sum of up to k x |C_hat| products; an answer at the smallest distortion's leakage met 1e-13 inside
#: came back 1.7e-18 above the optimum 0, the range being 9e5)
ML_ROUNDING_RTOL = 1e-14
#: maximal-leakage target mode: at targets up to this many bits the perfect-privacy LP's multipliers also bound the
#: answer's distortion (maximal leakage bounds the mutual information)
ML_INDEPENDENCE_BITS = 0.05
#: max_leakage mode: a target of at least this share of the smallest distortion's leakage (and of 1e3 times ``tol``)
#: starts its search from the cheapest constant mapping (leakage 0) and solves the perfect-privacy LP only if the
#: search ends uncertified: its bound matters only for targets near 0, and at |A| = 10, k = 260 the LP alone took
#: 16 s (a third of the target's time)
LAZY_LP_SHARE = 1e-3
_SOLVERS = ("auto", "fast", "cvxpy")


# ---------------------------------------------------------------------------- cvxpy reference
def _check_problem(prior, distortion, leakage, solver):
    """Validate the inputs shared by :func:`solve_mapping` and the curve; returns ``(P, D)``."""
    P = check_prior(prior)
    if P.shape[0] < 2:
        raise ValueError(f"prior has {P.shape[0]} row (private value): with a single value of the private "
                         "attribute there is nothing to protect; a mapping needs at least 2 rows, got shape "
                         f"{P.shape}")
    if P.shape[1] < 2:
        raise ValueError(f"prior has {P.shape[1]} column (public symbol): a single input carries no "
                         "information about the private attribute; a mapping needs at least 2 columns, got "
                         f"shape {P.shape}")
    check_paired_labels(prior, "prior", "columns", distortion, "distortion", "index", "public symbol")
    D = check_distortion(distortion, P.shape[1])
    if leakage not in _KINDS:
        raise ValueError(f"leakage must be one of {_KINDS}, got {leakage!r}")
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
    if sp.issparse(D) and solver == "fast":
        raise ValueError("solver='fast' needs a dense distortion; a sparse distortion is solved over its "
                         "allowed transitions by column generation, then the plain formulation "
                         "(solver='auto' or 'cvxpy')")
    return P, D


def check_tol(tol, P, n_out):
    """``tol`` (bits): a number with ``0 < tol < log2(min(|A|, n_out))``, or a ValueError naming it.

    No mapping of ``|A|`` private values to ``n_out`` outputs leaks more than ``log2(min(|A|, n_out))`` bits (of
    mutual information, ``I <= min(H(A), H(C_hat))``, or of maximal leakage), so at that tolerance the certificate
    holds for every mapping and cannot tell any of them from the optimum: ``solve_mapping(..., tol=1e300)`` called a
    mapping leaking 2.8 times the optimum "optimal". The bound depends on the shapes only (at least 1 bit when there
    are two outputs or more), never on the prior's masses: a prior whose ``H(A)`` is 4e-10 bits keeps the default
    ``tol=1e-6``, and its answers their certificates. With a single output every mapping leaks 0 bits and is
    optimal: any positive ``tol`` is accepted.
    """
    tol = check_number(tol, "tol", low=0.0, low_inclusive=False)
    most = math.log2(min(P.shape[0], n_out))
    if most > 0.0 and tol >= most:
        raise ValueError(f"tol={plain_value(tol)!r} bits is at least the most any mapping of {P.shape[0]} private "
                         f"values to {n_out} outputs can leak (log2(min(|A|, n_outputs)) = {most:.6g} bits): the "
                         "certificate could not tell any mapping from the optimum; expected 0 < tol < "
                         f"{format_bound(most)} (the default is 1e-6)")
    return tol


def _make_problem(P, D):
    """The reduced problem: dense, or over the stored transitions of a sparse distortion."""
    return SparseProblem(P, D) if sp.issparse(D) else Problem(P, D)


def _presolved_problem(P, D):
    """``(problem, reduction)``: the exact presolve (dominated outputs removed, or ``reduction`` None)
    and the reduced problem of what remains."""
    reduction = reduce_outputs(D)
    return _make_problem(P, D if reduction is None else reduction.distortion), reduction


def _full_mapping(prob, reduction, P_red):
    """A solver's reduced mapping as a mapping of the whole problem (every input, every output)."""
    full = prob.expand(P_red)
    return full if reduction is None else reduction.expand(full)


def _cvxpy_candidates(prob, *, delta=None, target_nats=None, solvers=("CLARABEL", "SCS"), tight=True,
                      time_limit=None):
    """Yield ``(name, P)`` for each cvxpy solver that returns a point (plain formulation).

    ``time_limit``: seconds each solver may run (None: no limit); a solver stopped by it returns its last
    iterate, which the caller certifies like any other point.

    The variables are the allowed entries only (a forbidden transition is no variable, so it is exactly 0):
    a sparse distortion allowing 26 of 377 outputs a row was 142,129 variables and a dense equality per
    forbidden entry, 9,800 variables now. ``tight=False`` keeps each solver's default tolerances (used by
    the benchmark).
    """
    import cvxpy as cp

    k, kh, na = prob.k, prob.kh, prob.M.shape[0]
    r, j = np.nonzero(prob.mask)
    n = r.size
    e = np.arange(n)
    rows = sp.csr_matrix((np.ones(n), (r, e)), shape=(k, n))  # row sums
    # J[a, j] = sum over the entries of output j of p(a, c) x_e, flattened class by class
    joint = sp.csr_matrix((prob.M[:, r].ravel(), ((np.arange(na)[:, None] * kh + j[None, :]).ravel(),
                                                  np.tile(e, na))), shape=(na * kh, n))
    out_mass = sp.csr_matrix((prob.pc[r], (j, e)), shape=(kh, n))  # q(j)
    w = prob.W[r, j]
    for name in solvers:
        x = cp.Variable(n, nonneg=True)
        cons = [rows @ x == 1]
        q = out_mass @ x
        outer = cp.hstack([float(pa) * q for pa in prob.pA])
        info = cp.sum(cp.rel_entr(joint @ x, outer))
        dist = w @ x
        if target_nats is None:
            if np.isfinite(delta):
                cons.append(dist <= delta)
            problem = cp.Problem(cp.Minimize(info), cons)  # nats: same minimiser, better scaled
        else:
            cons.append(info <= target_nats)
            problem = cp.Problem(cp.Minimize(dist), cons)
        if not tight:
            opts = {}
        elif name == "SCS":
            opts = {"max_iters": 200000, "eps_abs": 1e-9, "eps_rel": 1e-9}
        elif name == "CLARABEL":  # tight tolerances: the certificate needs accurate small entries
            opts = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10,
                    "max_iter": 500}
        else:
            opts = {}
        if time_limit is not None and name == "SCS":
            opts = {**opts, "time_limit_secs": float(time_limit)}
        elif time_limit is not None and name == "CLARABEL":
            opts = {**opts, "time_limit": float(time_limit)}
        if solve_quietly(problem, name, opts) and x.value is not None:
            P = np.zeros((k, kh))
            P[r, j] = np.asarray(x.value, dtype=float)
            yield f"cvxpy-{name}", P


# ---------------------------------------------------------------------------- helpers
def budget_slack(smallest, n):
    """How far below the smallest feasible distortion ``smallest`` (user units) a budget still counts as it: the
    rounding of ``smallest`` computed as a sum of ``n`` terms ``p(c) min_j d(c, j)`` (pairwise summation, as
    numpy's: ``ceil(log2 n) + 2`` ulps of ``smallest``; the correctly rounded value this module reports is within
    one), at most ``BUDGET_RTOL`` of it. In user units, since it is the rounding of a number the caller
    computed; it does not grow with the output alphabet, nor linearly with ``n``, which took budgets a whole
    spread below the smallest (``k = 1200`` at ``1e6 + 1e-6 D0``)."""
    smallest = abs(float(smallest))
    if not math.isfinite(smallest):
        return 0.0
    ulps = math.ceil(math.log2(max(int(n), 2))) + 2
    return min(ulps * float(np.spacing(smallest)), BUDGET_RTOL * smallest)


def _below_smallest(prob, delta):
    """Whether the budget ``delta`` (user units) is below the smallest feasible distortion by more than
    :func:`budget_slack` (a budget within it is solved at the smallest)."""
    smallest = prob.to_user(prob.delta_min)
    return delta < smallest - budget_slack(smallest, prob.k)


def _internal_budget(prob, delta):
    """The internal budget of the user budget ``delta`` (not below :func:`_below_smallest`): ``delta_min`` when its
    slack above it can move at most ``ROUNDING_ULPS`` ulps of a row's mass (the slack over the cheapest weight
    ``p(c) d(c, j)`` above a row's minimum), so that the answer is the cheapest mapping up to its own rounding;
    else its own. Judged in the problem's units, where the slack is measured against the distortions' spread,
    not against their common offset."""
    d_int = max(prob.to_internal(delta), prob.delta_min)
    w = prob.edge_weights()
    w = w[w > 0]
    step = float(w.min()) if w.size else 0.0
    return prob.delta_min if d_int - prob.delta_min <= ROUNDING_ULPS * np.finfo(float).eps * step else d_int


def reported_distortion(prior, mapping, distortion):
    """The expected distortion of ``mapping`` under the checked (normalised) ``prior`` the solver used: its
    column sums as they are, not normalised again."""
    return float(_expected_distortion(np.asarray(prior).sum(axis=0), mapping, distortion))


def _make_result(prob, P_red, *, prior, distortion, status, certificate, solver, delta, max_leakage, kind,
                 reduction=None):
    full = _full_mapping(prob, reduction, P_red)
    return MappingResult(
        mapping=full,
        leakage=float(_leakage(prior, full, kind=kind)),
        distortion=reported_distortion(prior, full, distortion),
        status=status,
        certificate=certificate,
        solver=solver,
        delta=delta,
        max_leakage=max_leakage,
        kind=kind,
    )


def _warm(prob, warm_start, reduction=None):
    if warm_start is None:
        return None
    W = warm_start.mapping if isinstance(warm_start, MappingResult) else warm_start
    if not sp.issparse(W):
        check_table(W, "warm_start")
        _refuse_strings(W, "warm_start", "probabilities")
        try:
            W = np.asarray(W, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"warm_start must be a mapping (an array of numbers), got {type(W).__name__}: "
                            f"{exc}") from None
    shape = (prob.n_public, prob.n_outputs) if reduction is None else reduction.shape
    if not sp.issparse(W) and W.shape != shape:
        raise ValueError(f"warm_start must be a mapping of shape {shape}, got {W.shape}")
    # NaN, negative entries or rows not summing to 1 are refused (they were silently ignored)
    W = check_mapping(W, *shape, name="warm_start")
    if reduction is not None:  # the dominated outputs' mass moves to their dominators
        W = reduction.reduce(W)
    if sp.issparse(W) and not prob.sparse:  # a sparse mapping as the start of a dense problem
        W = W.toarray()
    return prob.reduce(W)


def _delta_best(prob, delta, solver, tol, warm=None):
    """Best feasible reduced mapping for the (internal) budget ``delta``, never raising on a
    loose certificate: returns ``(P, cert, name, certified, notes)``; ``cert['multiplier']``
    in nats per internal distortion unit, ``cert['lower_bound']`` in nats."""
    f_min = prob.objective(prob.P_min)
    if f_min <= 0.0:
        cert = {"gap_bits": 0.0, "multiplier": 0.0, "lower_bound": 0.0, "method": "zero leakage at minimum distortion"}
        return prob.P_min.copy(), cert, "exact", True, []
    if prob.n_argmin.max() == 1 and delta <= prob.delta_min * (1 + BUDGET_RTOL):
        cert = {"gap_bits": 0.0, "multiplier": float("inf"), "lower_bound": f_min, "method": "unique feasible mapping"}
        return prob.P_min.copy(), cert, "exact", True, []
    attempts = ["fast", "cvxpy"] if solver == "auto" else [solver]
    best = None
    notes = []
    n_allowed = int(prob.mask.sum()) if not prob.sparse else None  # the fallback's variables
    if prob.sparse:
        attempts = ["sparse"]
    elif solver == "auto" and n_allowed > CVXPY_FALLBACK_MAX_VARIABLES:
        attempts = ["fast"]
        notes.append(f"cvxpy fallback skipped ({n_allowed} variables > {CVXPY_FALLBACK_MAX_VARIABLES})")
    for s in attempts:
        if s == "cvxpy" and solver == "auto":
            _LOG.info("delta=%r: %s; falling back to cvxpy (CLARABEL, then SCS) on %d allowed mapping entries, which "
                      "can take minutes", float(prob.to_user(delta)), "; ".join(notes) or "the fast path returned "
                      "nothing", n_allowed)
        t0 = time.perf_counter()
        if s == "fast":
            cands = _fast_candidates(prob, delta, tol, warm, notes)
        elif s == "sparse":
            cands = sparse_candidates(prob, delta=delta, tol_bits=tol)
        else:
            cands = _cvxpy_candidates(prob, delta=delta,
                                      time_limit=CVXPY_FALLBACK_TIME_LIMIT if solver == "auto" else None)
        for name, P, *hint in cands:  # the fast path adds the pi of the outputs it emptied, and its bounds
            P, pi_hint = feasible_candidate(prob, P, delta, hint[0] if hint else None)
            more = hint[1] if len(hint) > 1 else ()
            extra = {"pi_hint": pi_hint} if pi_hint is not None else {}
            if name == "first-order":
                # a shortcut, used only when it certifies with the plain bound: never the "best"
                # uncertified answer (that is the solvers'), and no refined bound spent on it
                gap, mu, f = prob.certificate(P, delta)
                if gap > tol:
                    notes.append(f"{name}: gap {gap:.3g} bits")
                    t0 = time.perf_counter()  # the next answer's time is its own
                    continue
            gap, mu, f = prob.certificate(P, delta, **extra)
            if more and gap > tol:
                # the fast path's own bounds (its refined ones included) first: when one certifies the point,
                # refining this point's bound again repeats that work (families3, pc_range prior, |A| = 5,
                # k = 44: 7 of 31 s; a max_leakage target at tol = 1e-9, k = 27: five solves, 142 s)
                lb_more, mu_more = max(more)
                if lb_more > f - gap * LN2:
                    gap, mu = max(f - lb_more, 0.0) / LN2, mu_more
            if gap > tol:
                gap, mu, f = prob.certificate(P, delta, target_bits=tol, both_starts=True, **extra)
            if prob.sparse and gap > tol:
                # the exact polish on the support, as the dense engine's: the column generation and the interior
                # point stop at gaps of 1e-10 .. 2e-8 nats, where a target search near a block floor asks for ~3e-12
                # bits (its lines' roots then bounded the answer only to ~1e-6: 56 of 720 targets "inaccurate")
                P2, gap2, mu2 = polish_edges(prob, P, delta, tol, own=(gap, mu))
                if gap2 < gap:
                    P, name, gap, mu, f = P2, f"{name}+polish", gap2, mu2, prob.objective(P2)
            if more:
                # a bound the solver computed at another of its points bounds I*(delta) as well (it depends on
                # the posteriors and the multiplier alone): the returned point is certified with the best one
                lb_more, mu_more = max(more)
                if lb_more > f - gap * LN2:
                    gap, mu = max(f - lb_more, 0.0) / LN2, mu_more
            cert = {"gap_bits": float(gap), "multiplier": float(mu), "lower_bound": float(f - gap * LN2)}
            _LOG.info("delta=%r: %s answer %s (gap %.3g bits, tol %r) after %.1f s", float(prob.to_user(delta)), name,
                      "certified" if gap <= tol else "not certified", gap, float(tol), time.perf_counter() - t0)
            t0 = time.perf_counter()
            if best is None or gap < best[1]["gap_bits"]:
                best = (P, cert, name)
            if gap <= tol:
                return P, cert, name, True, notes
            notes.append(f"{name}: gap {gap:.3g} bits")
    if best is None:
        raise SolverError(f"no solver returned a mapping for delta={prob.to_user(delta)!r} "
                          f"({'; '.join(notes) or 'all failed'})")
    return best[0], best[1], best[2], False, notes


def feasible_candidate(prob, P, delta, pi_hint=None):
    """A solver's point made a feasible mapping (clipped, renormalised, pulled onto the budget) and the
    ``pi_hint`` to certify it with: ``(P, pi_hint)``.

    When the point had to be pulled back onto the budget and brings no hint of its own, the hint is its
    own posteriors: the bound is a function of ``pi`` alone, and mixing in a share of ~1e-8 of the cheapest
    mapping moves the posteriors of outputs used at ~1e-8 by O(1) (families seed 27, pc_range: CLARABEL's
    point 8.2e-8 bits from its own bound, 2.1e-6 once pulled back with the pulled point's posteriors,
    8.7e-8 with its own).
    """
    if prob.sparse:  # the edge-based problem's bound takes no hint (its column generation mixes vertices)
        return prob.clean(P, delta), pi_hint
    P_own = prob.clean(P, None)
    P = prob.clean(P_own, delta)
    if pi_hint is None and prob.distortion(P_own) > delta:
        pi_hint = prob.posteriors(P_own)
    return P, pi_hint


def _fast_candidates(prob, delta, tol, warm, notes):
    """The fast path's candidates, each computed only when the previous one did not certify: the
    structured interior point, then :func:`_first_order_step` (first, within ``FIRST_ORDER_RTOL`` of the range above
    the smallest budget), then (within ``NEAR_MIN_RTOL`` of the
    smallest budget, with tied cheapest outputs) the optimum at the smallest budget."""
    from ._fast import solve_fast

    bounds = []

    def first_order():
        step = _first_order_step(prob, delta)
        return [] if step is None else [("first-order", step)]

    # the first-order step from the cheapest mapping is the optimum up to second order in the budget's slack above
    # the smallest: first when that slack is one the barrier cannot resolve (within FIRST_ORDER_RTOL of the range),
    # else after the barrier, in case that one does not certify
    tiny = prob.delta_min < delta <= prob.delta_min + FIRST_ORDER_RTOL * max(prob.delta_max - prob.delta_min, 0.0)
    if tiny:
        yield from first_order()
    try:
        out = solve_fast(prob, delta, tol=tol, warm=warm, return_hint=True, bounds=bounds)
    except (SolverError, np.linalg.LinAlgError, ArithmeticError, ValueError) as exc:
        # any numerical failure of the fast solver falls back to the reference
        notes.append(f"fast: {type(exc).__name__}: {exc}")
    else:
        # (P, pi of the outputs the polish may empty, the bounds computed on the way); a bare mapping is
        # accepted too
        yield ("fast", *out, bounds) if isinstance(out, tuple) else ("fast", out, None, bounds)
    if not tiny:
        yield from first_order()
    near = NEAR_MIN_RTOL * max(prob.delta_min, prob.delta_max - prob.delta_min)
    if prob.n_argmin.max() > 1 and prob.delta_min < delta <= prob.delta_min + near:
        # a hair above the smallest budget with tied cheapest outputs (a row of equal costs): the optimum at the
        # smallest budget (the program on the cheapest entries only, no budget to resolve) is feasible here and
        # within slope x slack of the optimum, where the barrier cannot resolve the slack and the first-order step
        # ignores the free moves between tied outputs. "A hair" is relative to the budget's range as well: with a
        # free output in every row the smallest budget is 0, and a budget many decades below the largest
        # distortion overflows the barrier's budget term
        try:
            P_at_min = solve_fast(prob, prob.delta_min, tol=tol)
        except (SolverError, np.linalg.LinAlgError, ArithmeticError, ValueError) as exc:
            notes.append(f"fast at the smallest budget: {type(exc).__name__}: {exc}")
        else:
            yield "fast at the smallest budget", P_at_min
            step = _first_order_step(prob, delta, start=P_at_min)
            if step is not None:  # and the budget's slack spent from there, first order
                yield "first-order from the smallest budget", step


def _first_order_step(prob, delta, start=None):
    """The cheapest mapping (or ``start``, a mapping on the cheapest entries) moved, greedily, along
    the entries that buy the most leakage per unit of distortion (first order at that point), until
    the budget is spent; None when nothing is to be moved. Each row gives up mass from its supported
    entry of highest score (the most leakage per unit of mass).

    Within a relative slack of 1e-9 of the smallest budget the optimum is this step (the curve is
    linear there, with the slope of the best ratio), but the slack is below what an interior
    point can resolve: the barrier spreads 1e-13 over every entry and ends 2e-5 bits above the
    optimum (so does cvxpy). The step is a candidate like any other: the certificate decides.
    """
    P = (prob.P_min if start is None else start).copy()
    slack = float(delta) - prob.distortion(P)
    if not (0.0 < slack < np.inf):
        return None
    rows = np.arange(prob.k)
    S = prob.scores(prob.posteriors(P))
    jstar = np.argmax(np.where(P > 0, S, -np.inf), axis=1)
    with np.errstate(invalid="ignore"):
        gain = S[rows, jstar][:, None] - S  # leakage removed per unit of mass moved (first order)
    cost = prob.W - prob.W[rows, jstar][:, None]
    ok = prob.mask & (cost > 0) & (gain > 0)
    if not ok.any():
        return None
    cr, cj = np.nonzero(ok)
    # a row of subnormal mass p(c) has subnormal costs p(c) (d(c, j) - d(c, j*)): the ratios and slack / cost
    # overflow to inf, which is what they are read as (first in line; the row's whole mass moves), without a numpy
    # warning per entry
    with np.errstate(over="ignore"):
        ratio = gain[cr, cj] / cost[cr, cj]
    for i in np.argsort(-ratio, kind="stable"):
        c, j = cr[i], cj[i]
        with np.errstate(over="ignore"):
            eps = min(slack / cost[c, j], P[c, jstar[c]])
        P[c, jstar[c]] -= eps
        P[c, j] += eps
        slack -= eps * cost[c, j]
        if slack <= 0:
            break
    return P


def _user_cert(prob, cert):
    """Certificate with the multiplier in bits per user distortion unit."""
    out = dict(cert)
    if "multiplier" in out:
        out["multiplier"] = float(out["multiplier"]) / LN2 / prob.scale
    out.pop("lower_bound", None)
    return out


def _solve_mi_delta(prob, delta, solver, tol, warm=None):
    """Reduced mapping minimising I(A; C_hat) under ``distortion <= delta`` (internal units):
    ``(P, cert, name, status)`` under the module's policy (raise / warn when uncertified)."""
    P, cert, name, ok, notes = _delta_best(prob, delta, solver, tol, warm)
    if ok:
        return P, _user_cert(prob, cert), name, "optimal"
    if solver != "auto":
        raise SolverError(
            f"solver {solver!r} could not certify optimality to tol={tol!r} bits for "
            f"delta={prob.to_user(delta)!r}: {'; '.join(notes)}"
        )
    warnings.warn(
        f"no solver certified the mapping to tol={tol!r} bits for delta={prob.to_user(delta)!r} "
        f"({'; '.join(notes)}); returning the best one with status='inaccurate'",
        ConvergenceWarning,
        stacklevel=user_stacklevel(),
    )
    return P, _user_cert(prob, cert), name, "inaccurate"


def _mix_to_target(f_of_J, JL, JR, L):
    """Smallest ``theta`` in [0, 1] with ``f((1 - theta) JL + theta JR) <= L`` (``f`` convex,
    ``f(JL) > L >= f(JR)``): bisection on the exact objective, which depends on the
    mapping only through the joint ``J`` (so the mixture is evaluated on ``J``)."""
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if not (lo < mid < hi):
            break
        if f_of_J((1 - mid) * JL + mid * JR) <= L:
            hi = mid
        else:
            lo = mid
    return hi


def _solve_mi_target(prob, target_bits, solver, tol):
    """Smallest distortion with ``I(A; C_hat) <= target_bits``: safeguarded Newton on ``sqrt(I*)``.

    ``delta -> I*(delta)`` is convex and non-increasing, and vanishes from the
    perfect-privacy distortion ``d_pp`` on, like ``c (d_pp - delta)^2`` (the
    information is quadratic in the distance to independence): ``sqrt(I*)`` is nearly
    linear there, where plain Newton on ``I*`` only halves the distance per solve. Every
    delta solve at ``delta_k`` returns a feasible mapping ``P_k`` and a Lagrangian bound
    ``LB_k - lambda_k (delta - delta_k) <= I*(delta)`` valid for *every* ``delta`` (the
    bound of :mod:`._problem` is affine in the budget). Hence

    * lower bound on the answer, from every solve (either side of the target):
      ``delta* >= delta_k + (LB_k - L) / lambda_k``; and from the perfect-privacy LP's
      multipliers ``t``, relaxed to the target by Pinsker's inequality,
      ``delta* >= d_pp - h(t) sqrt(2 L)``, ``h(t) <= max |t|`` the largest half-range of the multipliers
      over an output, or by the tighter Donsker-Varadhan bound (about ``sqrt(2 L)`` times the multipliers'
      spread weighted by the classes' probabilities; :func:`~._lp.independence_lower_bound`, which also
      shifts ``t`` by the constant per class that makes that spread smallest): the lines'
      slopes vanish at perfect privacy, so for targets below the solves' precision (down to
      ``1e-300`` bits, below the leakage's rounding) only this bound certifies the distortion. The LP's
      ``t`` maximises the bound at ``L = 0`` only; when the bound comes within ``SHARPEN_WITHIN``
      tolerances of ``d_pp``, and before an answer is given up, ``t`` is re-optimised for the target
      (:func:`~._lp.sharpest_independence_multipliers`, a cone program): ~2x tighter with many classes;
    * feasible point: ``f`` is convex, so the mixture of a mapping above the target and
      one below it reaches ``f = L`` exactly at a distortion found by bisection on the
      mixture weight (``f`` depends on the mapping through the joint ``J`` only);
    * bracket: the smallest distortion (exact) and the perfect-privacy LP (HiGHS), or
      the no-privacy point when the LP has no solution;
    * next budget: the Newton step on ``sqrt(f)`` from the last solve,
      ``delta_k + 2 sqrt(f_k) (sqrt(f_k) - sqrt(L)) / lambda_k`` (the multiplier is
      the curve's slope), else the secant in ``sqrt(f)`` between the bracket's ends;
      each solve warm-started from the nearest mapping, and only as precise as its
      step needs (``1e-2`` of the distance to the target; the last ones to
      ``lambda * DIST_RTOL``, which the distortion certificate needs).

    ``distortion_gap`` = returned distortion minus the lower bound (rigorous); the
    answer is certified when it is at most ``DIST_RTOL`` times the distortion range and
    at most the tolerance relative to the answer itself (see ``answer_tol`` below).
    """
    L = target_bits * LN2 * (1 - TARGET_HAIR)  # a hair inside, so that rounding never exceeds the target
    target_nats = target_bits * LN2
    # blocks of allowed entries: every mapping leaks at least I(A; B) (BlockFloor, below). Its rounding, and the
    # target's, are relative to the terms they sum (not to the floor: they cancel)
    floor = BlockFloor(prob)
    floor_tol = _rounding_share(prob) * floor.mi_magnitude
    excess = target_bits * LN2 - floor.mi_floor
    if floor.n_blocks > 1 and floor.mi_floor > 0.0 and floor_tol < excess < 2.0 * TARGET_HAIR * target_bits * LN2:
        # a target within twice the hair of the floor: the hair would leave no mapping inside (at 1e-13 bits above
        # a floor of 0.16 bits the search kept L below the floor, and the per-block mapping came back "inaccurate"
        # for want of a cheaper one): half the excess, at least the floor's rounding, is kept inside instead
        L = target_bits * LN2 - max(0.5 * excess, floor_tol)
    rng_ = max(prob.delta_max - prob.delta_min, 0.0)
    dist_tol = DIST_RTOL * max(rng_, 1e-300)
    lines = []  # (delta_k, LB_k, lambda_k): LB_k - lambda_k (delta - delta_k) <= I*(delta)
    lefts = []  # (distortion, P, f) with f > L
    rights = []  # (distortion, P, f) with f <= L
    left_lbs = []  # the lower bound of each left solve (I* > L is proven where it exceeds L)
    names = set()

    def run(d, tol_k, warm=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            try:  # "auto": the fast path first, whatever its certificate (only its bound matters here)
                P, cert, name, ok, _ = _delta_best(prob, d, "fast" if solver == "auto" else solver, tol_k, warm)
            except SolverError:
                if solver != "auto":
                    raise
                P, cert, name, ok, _ = _delta_best(prob, d, "cvxpy", tol_k, warm)
        names.add(name)
        f = prob.objective(P)
        lam = cert["multiplier"]
        lines.append((max(d, prob.delta_min), cert["lower_bound"], lam if np.isfinite(lam) else 0.0))
        dist = prob.distortion(P)
        (rights if f <= L else lefts).append((dist, P, f))
        if f > L:
            left_lbs.append(cert["lower_bound"])
        return P, f, cert["lower_bound"], lam

    lb_pp = -np.inf  # the perfect-privacy LP's bound relaxed to the target (set below)

    def lower():
        # every line with a positive slope bounds the answer, whichever side of the target
        # its solve fell on: below its root the line, hence I*, exceeds the target. The root is taken at the target
        # itself, not at L (the search's aim, a hair inside): a mapping leaking between L and the target meets the
        # target too, and the root at L bounded only the mappings leaking at most L (near a block floor, where the
        # hair is half the excess, the "lower bound" stood 2e-8 above a mapping that meets the target)
        lb = max(prob.delta_min, lb_pp)
        for dk, lbk, lk in lines:
            if lk > 0:
                lb = max(lb, dk + (lbk - target_nats) / lk)
        return lb

    def bound_at(d):
        return max([lbk - lk * (d - dk) for dk, lbk, lk in lines] + [0.0])

    P0, f0, lb0, lam0 = run(prob.delta_min, tol)
    # perfect privacy (a target of 0) where the prior depends on A measurably: the leakage of the cheapest mapping,
    # ~1e-20 nats at a dependence of 1e-10, rounds to 0 and is no proof of independence (it was "optimal" at
    # distortion 0.124 where 0.187 is perfectly private); the perfect-privacy LP answers instead
    if f0 <= L and not (L <= 0.0 and not prob.sparse and _measurably_dependent(prob)):
        cert = {"gap_bits": float(max(f0 - lb0, 0.0) / LN2), "distortion_gap": 0.0,
                "method": "the minimum distortion already meets the target", "n_delta_solves": 1}
        return P0, cert, next(iter(names)), "optimal"
    # blocks of allowed entries: every mapping leaks at least I(A; B), reached by perfect privacy within each block
    # (BlockFloor); at that floor the per-block perfect-privacy LP is the answer, above it the right end of the bracket
    # and its multipliers' bound (the global perfect-privacy LP has no solution, so neither gives a bracket or a bound)
    P_blk = ts_blk = None
    if floor.n_blocks > 1 and floor.mi_floor > 0.0 \
            and target_bits * LN2 >= floor.mi_floor - floor_tol:
        P_blk, ts_blk = floor.mapping()
        if P_blk is not None and L <= floor.mi_floor + floor_tol \
                and prob.objective(P_blk) <= floor.mi_floor + tol * LN2:
            # the target is the smallest leakage up to rounding and the hair kept inside it (no mapping leaks less
            # than the floor, so the search's bracket would have no right end): the cheapest mapping of leakage I(A;
            # B), its distortion certified by the blocks' multipliers (or warned; an explicit solver raises)
            d_blk = prob.distortion(P_blk)
            L_blk = max(target_bits * LN2, floor.mi_floor)
            lb_blk = max(floor.lower_bound(ts_blk, L_blk), prob.delta_min)
            tol_b = _answer_dist_tol(prob, d_blk, ANSWER_RTOL * DIST_RTOL * rng_)
            if d_blk - lb_blk > tol_b:  # a target a rounding above the floor: the multipliers sharpest there
                lb_blk = max(lb_blk, floor.lower_bound(floor.sharpest(ts_blk, L_blk), L_blk))
            gap_b = max(d_blk - lb_blk, 0.0)
            # not certified but within the hair (its leakage computed at the floor or below): the search, with it as
            # the bracket's right end, may certify a cheaper answer from its lines
            if gap_b <= tol_b or prob.objective(P_blk) > L:
                cert = {"gap_bits": float(max(prob.objective(P_blk) / LN2 - target_bits, 0.0)),
                        "distortion_gap": float(prob.gap_to_user(gap_b)),
                        "distortion_lower_bound": float(prob.to_user_down(lb_blk)),
                        "distortion_tolerance": float(prob.gap_to_user(tol_b)),
                        "method": f"the target is the smallest leakage I(A; B) over {floor.n_blocks} blocks of "
                                  "allowed entries: per-block perfect-privacy LP (HiGHS)"}
                return _target_answer(prob, P_blk, cert, "highs", gap_b, tol_b, target_bits, solver,
                                      " by the per-block perfect-privacy LP")
    const = None if prob.sparse else _cheapest_constant_mapping(prob)
    lazy = const is not None and L >= max(LAZY_LP_SHARE * f0, 1e3 * tol * LN2)
    if lazy:  # the right end of the bracket: a constant mapping (leakage 0); the LP only if needed at the end
        Ppp = t_pp = None
        rights.append((prob.distortion(const), const, prob.objective(const)))
    else:
        Ppp, _, t_pp = perfect_privacy_mapping(prob, return_duals=True)
        # the LP's multipliers bound the distortion of every mapping leaking at most the target
        # (Pinsker's or the Donsker-Varadhan inequality, see independence_lower_bound): tight for targets far below tol
        lb_pp = independence_lower_bound(prob, t_pp, target_bits * LN2)
        if Ppp is None and P_blk is not None:  # blocks: their multipliers bound every mapping within the target
            lb_pp = floor.lower_bound(ts_blk, target_bits * LN2)
    sharpened = sharp_gain = False

    def sharpen():
        """The bound with the multipliers that maximise it at the target (a cone program, see
        sharpest_independence_multipliers): the LP's own are the best at leakage 0 only."""
        nonlocal lb_pp, sharpened, sharp_gain
        sharpened = True
        if t_pp is None and ts_blk is not None:
            # blocks without a perfectly private mapping of the whole: each block's multipliers re-optimised for
            # its share of the target's excess over the floor
            lb_best = floor.lower_bound(floor.sharpest(ts_blk, target_bits * LN2), target_bits * LN2)
            if lb_best > lb_pp:
                lb_pp, sharp_gain = lb_best, True
            return
        t_best = sharpest_independence_multipliers(prob, target_bits * LN2)
        if t_best is not None:
            lb_best = independence_lower_bound(prob, t_best, target_bits * LN2)
            if lb_best > lb_pp:
                lb_pp, sharp_gain = lb_best, True

    def bound_note():
        # which bound certifies, when it is the LP's multipliers re-optimised by the cone program (CLARABEL)
        whose = "the perfect-privacy LP's" if t_pp is not None else "the blocks' perfect-privacy LPs'"
        return f"; distortion bound: {whose} multipliers re-optimised for the target (CLARABEL)" \
            if sharp_gain and lb_pp >= lower() else ""

    # the mapping whose multipliers give lb_pp: the perfect-privacy LP's, or the blocks' (its right end)
    P_lb = Ppp if t_pp is not None else (P_blk if ts_blk is not None and prob.objective(P_blk) <= L else None)
    if P_lb is not None and target_bits > 0 and prob.distortion(P_lb) - lb_pp <= SHARPEN_WITHIN * dist_tol:
        # the LP's bound is within reach of the tolerance: near perfect privacy (targets down to the leakage's
        # rounding) it is the only bound that certifies, and the sharpest one narrows the search's bracket
        sharpen()
    # the LP's own bound on d_pp (its multipliers at zero leakage): the distortion gap of its mapping
    # (HiGHS's tolerances, and the light outputs merged after it, see _lp._merge_leaky_outputs)
    gap_pp = 0.0 if Ppp is None else max(prob.distortion(Ppp) - independence_lower_bound(prob, t_pp, 0.0), 0.0)
    if not np.isfinite(gap_pp):  # no multipliers: HiGHS's own optimality (as before)
        gap_pp = 0.0
    def below_rounding():
        """The perfect-privacy LP's mapping as the answer to a target no solve can tell from 0, when the lower
        bound certifies its distortion (None otherwise)."""
        gap_d = max(prob.distortion(Ppp) - lower(), 0.0)
        if gap_d > dist_tol:
            return None
        cert = {"gap_bits": float(prob.objective(Ppp) / LN2), "distortion_gap": float(prob.gap_to_user(gap_d)),
                "distortion_lower_bound": float(prob.to_user_down(lower())),
                "method": "perfect-privacy LP (HiGHS): the target is below the leakage's rounding" + bound_note()}
        return Ppp, cert, "highs", "optimal"

    leak_rounding = bound_rounding(prob.pA, prob.k, 0.0, 0.0, 0.0)
    if target_bits <= 0.0 and Ppp is not None and not _private_to_rounding(prob, Ppp, leak_rounding) \
            and _has_rare_masses(prob) and perfect_privacy_unreachable(prob):
        # rare masses: the perfect-privacy LP's mapping leaks 1e-14 .. 1e-11 bits (its rows below HiGHS's tolerances)
        # and was returned "inaccurate" as the answer to a target of 0 that no mapping reaches, as a Farkas certificate
        # of the LP in conditional form proves
        raise _with_mapping(_privacy_out_of_reach(target_bits, prob.objective(Ppp)), Ppp)
    if L <= leak_rounding and Ppp is not None and max(L, 0.0) + leak_rounding < prob.objective(Ppp) <= tol * LN2:
        # the perfect-privacy LP's mapping leaks beyond rounding at a target no solve tells from 0 (public symbols
        # of mass 1e-11: their rows of the LP in joint masses are below HiGHS's feasibility tolerance, and 6.6e-12
        # bits came back "optimal" at distortion 0.101 for a target of 0 whose exact optimum is 0.632): not an
        # answer to it. The cheapest constant mapping, which leaks exactly 0, certified by the LP's multipliers or
        # warned; without one, the LP's mapping warned (or refused)
        return _leaky_private_answer(prob, Ppp, t_pp, target_bits, solver, rng_, leak_rounding)
    if L <= leak_rounding and not prob.sparse and (
            (Ppp is None and _has_rare_masses(prob)) or (Ppp is not None and prob.objective(Ppp) > tol * LN2)):
        # the perfect-privacy LP infeasible with rare masses, or leaking beyond tol (rare symbols: coefficients of
        # 1e-12 dropped by HiGHS): the LP in conditional form, when its mapping is private to rounding (an LP
        # infeasible on ordinary masses is infeasible in that form too: perfect privacy is out of reach)
        Qc, lb_c = conditional_perfect_privacy(prob, _rounding_share(prob))
        if Qc is not None and _private_to_rounding(prob, Qc, leak_rounding):
            return _leaky_private_answer(prob, Ppp, t_pp, target_bits, solver, rng_, leak_rounding, (Qc, lb_c))
    if 0.0 < L <= leak_rounding and Ppp is not None \
            and prob.objective(Ppp) <= tol * LN2:
        # a target below the rounding of the certificate itself (4 ulps of H(A) per summation level): no solve can
        # tell it from 0, and the lines' roots are rounding noise (families seed 12, indep: a target of 3.6e-19
        # bits, 1e-3 of an I(A; C) that is itself rounding, ended "inaccurate" at distortion 0.59 where the
        # search happened to meet mappings of computed leakage 0 before). Answered as a target of 0 when the
        # perfect-privacy LP's multipliers, relaxed to the target, certify its distortion
        answer = below_rounding()
        if answer is not None:
            return answer
    if L <= 0.0 and Ppp is not None and prob.objective(Ppp) <= tol * LN2:
        # perfect privacy: the LP's mapping is the answer (HiGHS certifies the LP optimum); its
        # leakage is zero up to the LP's rounding (reported as the gap, within tol)
        # certified when its multipliers' bound is within the answer-relative tolerance of its distortion: HiGHS's
        # "optimal" alone was taken for it, and on a nearly independent prior (|A| = 10, p(a, c) = p(a) p(c) (1 +
        # 1e-7 e)) a mapping of distortion 97.7 came back "optimal" with a distortion gap of 35.9 (85.2 reachable)
        fpp = prob.objective(Ppp)
        tol_pp = _answer_dist_tol(prob, prob.distortion(Ppp), ANSWER_RTOL * DIST_RTOL * rng_)
        if gap_pp > tol_pp:
            # not certified by its multipliers (rare public symbols or classes: below HiGHS's tolerances their rows
            # look free, and the bound fell 2.7e-5 .. 0.89 short): the LP in conditional form, its mapping when it
            # is private to rounding and cheaper, its bound when higher
            Qc, lb_c = conditional_perfect_privacy(prob, _rounding_share(prob))
            if Qc is not None and _private_to_rounding(prob, Qc, leak_rounding):
                return _leaky_private_answer(prob, Ppp, t_pp, target_bits, solver, rng_, leak_rounding, (Qc, lb_c),
                                             keep=Ppp)
        cert = {"gap_bits": float(fpp / LN2), "distortion_gap": float(prob.gap_to_user(gap_pp)),
                "distortion_tolerance": float(prob.gap_to_user(tol_pp)), "method": "perfect-privacy LP (HiGHS)"}
        return _target_answer(prob, Ppp, cert, "highs", gap_pp, tol_pp, target_bits, solver,
                              " by the perfect-privacy LP")
    for Q in (Ppp, P_blk if Ppp is None else None):
        if Q is not None and L < prob.objective(Q) <= target_nats:
            # the perfect-privacy LP's mapping (or the blocks') meets the target inside the hair the search keeps: the
            # target is the smallest_feasible of a refusal of 0 (that mapping's leakage, 1e-13 .. 1e-11 bits with rare
            # masses), which the search said it "could not decide". Its leakage is the aim, and it a right end
            L = prob.objective(Q)
            break
    if lazy:
        pass  # the constant mapping is the right end
    elif Ppp is not None and prob.objective(Ppp) <= L:
        rights.append((prob.distortion(Ppp), Ppp, prob.objective(Ppp)))
    elif Ppp is None and P_blk is not None and prob.objective(P_blk) <= L:
        rights.append((prob.distortion(P_blk), P_blk, prob.objective(P_blk)))
    else:
        # blocks of allowed entries: every mapping leaks at least their I(A; B) less its rounding, a bound no solve's
        # Lagrangian bound reaches (it stops at the solve's gap, 2e-11 bits below the floor at tol = 1e-6: a target
        # 1e-12 of itself below the floor's leakage was "could not decide" where the floor proves it out of reach).
        # Not at a target within the leakage's rounding, as the re-solves below (a Farkas certificate decides there)
        lb_floor = floor.mi_floor - floor_tol if floor.n_blocks > 1 and leak_rounding < L else -np.inf
        Pm, fm, lbm, _ = run(np.inf, tol)
        lbm = max(lbm, lb_floor)
        for _ in range(UNDECIDED_RESOLVES):
            # the target lies inside the least-leaking solve's own gap (lbm <= L < fm): that solve was only as
            # precise as tol, and a target 2e-8 bits above the smallest leakage (banded forbidden entries, |A| = 6,
            # k = 30) raised "could not decide" with solver="auto", where tol = 1e-8 decides it. Solved again, each
            # time 100 times more precisely (from its own mapping), until one side is proven. Not for a target within
            # the leakage's rounding (perfect privacy: a bound of 4e-15 bits proves nothing there; a Farkas
            # certificate does, below)
            if not (leak_rounding < L and lbm <= L < fm):
                break
            tol_m = max(1e-2 * (fm - lbm) / LN2, 1e-14)
            Pm, fm, lbm, _ = run(np.inf, tol_m, warm=Pm)
            lbm = max(lbm, lb_floor)
        if lbm > L and fm <= target_bits * LN2 * (1 + _rounding_share(prob)):
            # the target is the smallest achievable leakage up to rounding, inside the hair the search keeps (a target
            # equal to the leakage of the only allowed mapping, as leakage() computes it, was refused as unreachable):
            # the least-leaking mapping found, its distortion certified or warned
            dm = prob.distortion(Pm)
            gap_m, tol_m = max(dm - lower(), 0.0), _answer_dist_tol(prob, dm, ANSWER_RTOL * DIST_RTOL * rng_)
            cert = {"gap_bits": float(max(fm - lbm, 0.0) / LN2), "distortion_gap": float(prob.gap_to_user(gap_m)),
                    "distortion_lower_bound": float(prob.to_user_down(lower())),
                    "distortion_tolerance": float(prob.gap_to_user(tol_m)),
                    "method": "the target is the smallest achievable leakage (up to rounding)"}
            return _target_answer(prob, Pm, cert, "+".join(sorted(names)), gap_m, tol_m, target_bits, solver)
        if lbm > target_bits * LN2:
            raise _with_mapping(InfeasibleBudgetError(
                f"max_leakage={target_bits!r} bits cannot be reached by any allowed mapping; "
                f"the smallest achievable leakage is at least {format_bound(lbm / LN2)} bits (at most "
                f"{format_bound(fm / LN2)})",
                smallest_feasible=_bits_up(fm),
            ), Pm)
        if lbm > L:
            raise SolverError(f"could not decide whether max_leakage={target_bits!r} bits is reachable: the smallest "
                              f"achievable leakage is at least {lbm / LN2:.17g} bits and at most {fm / LN2:.17g}; the "
                              f"target lies inside that gap of {(fm - lbm) / LN2:.3g} bits, the solves' resolution")
        if L < fm <= target_nats:
            # the least-leaking mapping found meets the target, inside the hair the search keeps: the target is an
            # InfeasibleBudgetError's smallest_feasible passed back (that mapping's leakage), which the search said it
            # "could not decide" (26 of 35 refusals of rare_instance seeds 0 .. 119). Its leakage is the search's aim
            # and it is the bracket's right end: every answer meets the target, its distortion certified or warned
            L = fm
            rights.append((prob.distortion(Pm), Pm, fm))
        if fm > L and Ppp is not None and prob.objective(Ppp) <= tol * LN2:
            # a target below the rounding of the leakage itself (I(A; C) = 0 up to 1e-16 bits):
            # no mapping shows f <= L in floating point, but the perfect-privacy LP's mapping is
            # independent up to rounding; answered as a target of 0, its distortion certified
            # by the bound of the first solve (gap 0 when the smallest distortion is private)
            answer = below_rounding()
            if answer is not None:
                return answer
        if fm > L and const is not None:
            # a constant mapping leaks exactly 0, so the target is reachable: the right end of the bracket (a
            # perfect-privacy LP that HiGHS called infeasible on a nearly independent prior, p(a, c) = p(a) p(c) (1 +
            # 1e-9 e), raised "could not decide" with solver="auto"); the search then certifies its answer or warns
            rights.append((prob.distortion(const), const, prob.objective(const)))
        elif fm > L and target_bits <= 0.0 and perfect_privacy_unreachable(prob):
            # rare masses: the smallest leakage, 1e-14 .. 1e-8 bits, below what the solves' bounds resolve (it was
            # "could not decide"); no mapping is perfectly private, proven by a Farkas certificate
            raise _with_mapping(_privacy_out_of_reach(target_bits, fm), Pm)
        elif fm > L:
            raise SolverError(f"could not decide whether max_leakage={target_bits!r} bits is reachable: the smallest "
                              f"achievable leakage is at least {lbm / LN2:.17g} bits and at most {fm / LN2:.17g}; the "
                              f"target lies inside that gap of {(fm - lbm) / LN2:.3g} bits, the solves' resolution")
    if L <= 0.0 and Ppp is not None:
        # perfect privacy where the LP's mapping leaks above tol and the solve without a budget found a mapping of
        # leakage 0: the LP's mapping was returned "optimal" with a gap of 0 bits whatever it leaked; now the cheaper
        # of the two that leak nothing measurable, its distortion certified by the bounds (or warned)
        P0 = Ppp if prob.objective(Ppp) <= L else Pm
        d0 = prob.distortion(P0)
        gap0, tol0 = max(d0 - lower(), 0.0), _answer_dist_tol(prob, d0, ANSWER_RTOL * DIST_RTOL * rng_)
        cert = {"gap_bits": float(max(prob.objective(P0), 0.0) / LN2), "distortion_gap": float(prob.gap_to_user(gap0)),
                "distortion_lower_bound": float(prob.to_user_down(lower())),
                "distortion_tolerance": float(prob.gap_to_user(tol0)),
                "method": "perfect privacy: a mapping of leakage 0 and the bounds"}
        return _target_answer(prob, P0, cert, "+".join(sorted(names | {"highs"})), gap0, tol0, target_bits, solver)

    def leakage_terms(J):
        return rel_entr(J, prob.pA[:, None] * J.sum(axis=0)[None, :])

    def f_of_J(J):
        return max(float(leakage_terms(J).sum()), 0.0)

    def feasible():
        dl, Pl, fl = max(lefts, key=lambda t: t[0])
        dr, Pr, fr = min(rights, key=lambda t: t[0])
        if dr <= dl:
            return Pr, dr
        JL = prob.joint(Pl)
        # aim inside the target by the leakage's rounding: each term J log(J / p(a) q) carries a few ulps of J
        # (eps in all, as J sums to 1) plus the sum's own rounding. Mixed to L exactly, the answer recomputed any
        # other faithful way (from the user's prior through the presolve, in another order) exceeded the target
        # about every other time (|A| = 11, k = 5, a 1e-9-bit target: by 4e-16 bits)
        terms = np.abs(leakage_terms(JL)).sum()
        th = _mix_to_target(f_of_J, JL, prob.joint(Pr), L - 8 * np.finfo(float).eps * (1.0 + terms))
        return (1 - th) * Pl + th * Pr, (1 - th) * dl + th * dr

    sL = math.sqrt(max(L, 0.0))

    def secant():
        """Root of the chord of ``sqrt(f)`` between the bracket's ends (a left end only where
        the solve's own bound proves ``I* > L``; otherwise the midpoint of the bracket)."""
        proven = [(dk, fk) for (dk, _, fk), lbk in zip(lefts, left_lbs) if lbk > L]
        dr, _, fr = min(rights, key=lambda t: t[0])
        if not proven:
            return 0.5 * (lower() + dr)
        dl, fl = max(proven)
        sl, sr = math.sqrt(fl), math.sqrt(max(fr, 0.0))
        return dl + (dr - dl) * (sl - sL) / max(sl - sr, 1e-300)

    d_cur, f_cur, lam_cur = prob.delta_min, f0, lam0
    best_P, best_d = feasible()

    def answer_tol():
        """:func:`_answer_dist_tol` of the answer, its floor the distortion that ``tol`` bits buy at the curve's
        slope at the smallest distortion (a target a hair below the smallest distortion's leakage; not a slope
        further right, which is smaller than the answer's)."""
        floor = tol * LN2 / lam0 if 0 < lam0 < np.inf else 0.0
        return _answer_dist_tol(prob, best_d, max(floor, ANSWER_RTOL * DIST_RTOL * rng_))

    dist_tol = answer_tol()

    def search(n_solves):
        nonlocal d_cur, f_cur, lam_cur, best_P, best_d, dist_tol
        stalled = 0
        fallbacks = 0
        for _ in range(n_solves):
            lb = lower()
            gap_before = best_d - lb
            if gap_before <= dist_tol:
                break
            d_right = min(t[0] for t in rights)
            # only the rigorous bound: a solve above the target (f > L) bounds I* from above, it does
            # not prove that its budget is too small when it is not solved exactly
            lo_ok = lb
            nxt = np.nan
            if lam_cur > 0 and np.isfinite(lam_cur) and f_cur > 0:
                # Newton on sqrt(f): d sqrt(f) / d delta = -lambda / (2 sqrt(f)); a hair to the right,
                # so that the solve tends to land on the feasible side
                nxt = d_cur + 2.0 * math.sqrt(f_cur) * (math.sqrt(f_cur) - sL) / lam_cur + 0.25 * dist_tol
            if lo_ok < nxt < d_right:
                fallbacks = 0
            else:
                # Newton left the bracket. From below the target (f <= L) that means a steeper line (from
                # a solve above the target) bounds the answer from below: the curve has a kink there (its
                # slope jumps where the optimal support changes), and the answer is near that bound. Else
                # the secant, kept off the bracket's ends; every second time a bisection, since a secant
                # with one end fixed crawls
                width = d_right - lo_ok
                fallbacks += 1
                if fallbacks % 2 == 0:
                    nxt = lo_ok + 0.5 * width
                elif (f_cur <= L and np.isfinite(lam_cur) and lam_cur > 0) or (lazy and not np.isfinite(lam_cur)):
                    # (lazy: no slope at the smallest distortion, and the constant mapping's end of the bracket is
                    # far from the answer, so the secant from it is too: a probe at 5% of the bracket instead. The
                    # secant took 9-15 solves where the LP's bracket took 5-7; this takes 4-9, Newton from there)
                    nxt = lo_ok + 0.05 * width
                else:
                    nxt = min(max(secant(), lo_ok + 0.1 * width), d_right - 0.1 * width)
            # precision: what the next step needs (the distance to the target), and at least what the
            # certificate needs near the root (a gap of g nats moves the bound's root by g / lambda)
            lam_ref = lam_cur if (np.isfinite(lam_cur) and lam_cur > 0) else max(
                [lk for _, _, lk in lines if lk > 0] + [0.0])
            need = max(0.1 * lam_ref * dist_tol / LN2, 1e-14) if lam_ref > 0 else 1e-14
            tol_k = min(tol, max(need, 1e-2 * abs(f_cur - L) / LN2))
            near = min(lefts + rights, key=lambda t: abs(t[0] - nxt))[1]
            _, f_new, _, lam_new = run(nxt, tol_k, warm=near)
            d_cur, f_cur, lam_cur = nxt, f_new, lam_new
            best_P, best_d = feasible()
            dist_tol = answer_tol()
            # stop when the certified interval stops shrinking (the delta solves' own certificates
            # are then the limit): further solves would only repeat the same bounds
            stalled = stalled + 1 if (best_d - lower()) > 0.99 * gap_before else 0
            if stalled >= 4:
                break

    search(MAX_TARGET_SOLVES)
    if lazy and best_d - lower() > dist_tol:
        # not certified from the constant mapping's bracket: the perfect-privacy LP after all (a tighter right end,
        # and its multipliers' bound), and the search again from where it stopped
        Ppp, _, t_pp = perfect_privacy_mapping(prob, return_duals=True)
        if t_pp is not None:
            lb_pp = independence_lower_bound(prob, t_pp, target_bits * LN2)
        if Ppp is not None and prob.objective(Ppp) <= L:
            rights.append((prob.distortion(Ppp), Ppp, prob.objective(Ppp)))
        best_P, best_d = feasible()
        dist_tol = answer_tol()
        search(max(MAX_TARGET_SOLVES - len(lines), 0))
    if best_d - lower() > dist_tol and not sharpened and (t_pp is not None or ts_blk is not None) \
            and target_bits > 0:
        sharpen()  # not certified: the sharpest bound of the LP's multipliers before giving up
    lb = lower()
    gap_d = max(best_d - lb, 0.0)
    f_best = prob.objective(best_P)
    cert = {
        "gap_bits": float(max(f_best - bound_at(best_d), 0.0) / LN2),
        "distortion_gap": float(prob.gap_to_user(gap_d)),
        "distortion_lower_bound": float(prob.to_user_down(lb)),
        "n_delta_solves": len(lines),
        "method": "Newton on the square root of the privacy-distortion curve with Lagrangian lower bounds"
                  + bound_note(),
    }
    # the bounds are rigorous whether or not each delta solve certified
    return _target_answer(prob, best_P, cert, "+".join(sorted(names)), gap_d, dist_tol, target_bits, solver)


def _privacy_out_of_reach(target_bits, smallest_nats):
    """The InfeasibleBudgetError of a target of 0 when no allowed mapping is perfectly private
    (:func:`~._lp.perfect_privacy_unreachable`), ``smallest_nats`` the smallest leakage found."""
    return InfeasibleBudgetError(
        f"max_leakage={target_bits!r} bits cannot be reached by any allowed mapping: none is perfectly private (a "
        f"Farkas certificate of the perfect-privacy LP in conditional form); the smallest leakage found is "
        f"{smallest_nats / LN2:.6g} bits",
        smallest_feasible=_bits_up(smallest_nats),
    )


def _leaky_private_answer(prob, Ppp, t_pp, target_bits, solver, rng_, allowance, conditional=None, keep=None):
    """The answer to a mutual-information target no solve tells from 0 when the perfect-privacy LP's mapping
    ``Ppp`` leaks beyond rounding (public symbols of mass 1e-11 below HiGHS's tolerances), is None (HiGHS called the LP
    infeasible), or is not certified by its multipliers.

    The LP again in conditional form (:func:`~._lp.conditional_perfect_privacy`: unknowns of order 1 whatever
    ``p(c)``, differences of conditionals without cancellation), its mapping taken when it leaks at most
    ``allowance`` nats (the leakage's rounding), and the cheapest constant mapping (leakage exactly 0): the cheaper
    of the two, certified when the larger of the two multipliers' bounds (``t_pp``'s and the conditional LP's) is
    within tolerance of its distortion, else the policy of :func:`_target_answer` (a warning with ``solver="auto"``,
    else a SolverError); with neither, ``Ppp`` itself under that policy (it is above the target). ``conditional``: the
    conditional LP's ``(mapping, bound)`` when already solved; ``keep``: a mapping private to rounding (``Ppp``, not
    certified) also a candidate."""
    Pc = _cheapest_constant_mapping(prob)
    lb = -math.inf if t_pp is None else independence_lower_bound(prob, t_pp, 0.0)
    Qc, lb_c = conditional if conditional is not None else conditional_perfect_privacy(prob, _rounding_share(prob))
    lb = max(lb, lb_c)
    cands = [Q for Q in (Pc, Qc, keep) if Q is not None]
    cands = [Q for Q in cands if Q is Pc or _private_to_rounding(prob, Q, allowance)]
    P = min(cands, key=prob.distortion) if cands else Ppp
    d = prob.distortion(P)
    gap = max(d - lb, 0.0) if cands else math.inf
    tol_d = _answer_dist_tol(prob, d, ANSWER_RTOL * DIST_RTOL * rng_)
    if P is Pc:
        method = "cheapest constant mapping: the perfect-privacy LP's mapping " + (
            "was not found" if Ppp is None else f"leaked {prob.objective(Ppp) / LN2:.3g} bits")
        how = " by the cheapest constant mapping"
    elif P is keep:
        method = "perfect-privacy LP (HiGHS); distortion bound: the perfect-privacy LP in conditional form"
        how = " by the perfect-privacy LP"
    elif cands:
        method = "perfect-privacy LP in conditional form (HiGHS, polished on its support)"
        how = " by the perfect-privacy LP in conditional form"
    else:
        method = "perfect-privacy LP (HiGHS)"
        how = f"; the perfect-privacy LP's mapping leaks {prob.objective(P) / LN2:.3g} bits, above the target beyond " \
              "rounding"
    cert = {"gap_bits": float(prob.objective(P) / LN2),
            "distortion_gap": float(prob.gap_to_user(gap)) if np.isfinite(gap) else math.inf,
            "distortion_lower_bound": float(prob.to_user_down(lb)) if np.isfinite(lb) else -math.inf,
            "distortion_tolerance": float(prob.gap_to_user(tol_d)), "method": method}
    return _target_answer(prob, P, cert, "highs", gap, tol_d, target_bits, solver, how)


#: masses of the prior below this share of its largest are rare: the perfect-privacy LP in joint masses may drop them
#: (HiGHS drops matrix entries below 1e-9 and is feasible to 1e-7 per row)
RARE_MASS_SHARE = 1e-7


def _has_rare_masses(prob):
    """Whether a positive entry of the (reduced) prior, or a class's or public symbol's mass, is below
    :data:`RARE_MASS_SHARE` of the largest entry."""
    M = prob.M
    pos = M[M > 0]
    floor = RARE_MASS_SHARE * float(pos.max()) if pos.size else 0.0
    return bool(pos.size and (pos.min() < floor or prob.pA.min() < floor or prob.pc.min() < floor))


def _private_to_rounding(prob, Q, allowance):
    """Whether the mapping ``Q`` is perfectly private up to rounding: its leakage at most ``allowance`` nats, or its
    conditionals ``p(j | a)`` within the rounding of a sum over the symbols of each other (``sum_j max_a - min_a``
    at most :func:`_rounding_share`). The leakage's own evaluation rounds to a few ulps of 1 (each term's logarithm
    of a ratio near 1), which is above ``allowance`` where a class of mass 1e-12 makes ``H(A)`` tiny: a mapping
    whose conditionals agreed to 1.7e-16 leaked 1.1e-16 nats against an allowance of 1e-24."""
    if prob.objective(Q) <= allowance:
        return True
    cond = prob.joint(Q) / prob.pA[:, None]
    return float((cond.max(axis=0) - cond.min(axis=0)).sum()) <= _rounding_share(prob)


def _measurably_dependent(prob):
    """Whether the (reduced) prior depends on A above the rounding of ``p(c | a) - p(c)`` (``ROW_SCALE_FLOOR``
    of the terms), so that a computed leakage of 0 is no proof of independence."""
    cond = prob.M / prob.pA[:, None]
    return bool((np.abs(cond - prob.pc[None, :]) > ROW_SCALE_FLOOR * np.maximum(cond, prob.pc[None, :])).any())


def _target_answer(prob, P, cert, name, gap, tol_d, target_bits, solver, how=""):
    """A max_leakage answer and its status: optimal when its distortion gap is within ``tol_d``, else the policy
    of the module notes (``solver="auto"``: a ConvergenceWarning and status "inaccurate"; an explicit solver: a
    SolverError). The certificate records ``tol_d`` (user units) where its path did not: what a saved mapper's
    ``status`` is checked against on load."""
    cert.setdefault("distortion_tolerance", float(prob.gap_to_user(tol_d)))
    if gap <= tol_d:
        return P, cert, name, "optimal"
    msg = (f"the distortion for max_leakage={target_bits!r} bits is only certified to within "
           f"{cert['distortion_gap']:.3g} (tolerance {prob.gap_to_user(tol_d):.3g}){how}")
    if solver != "auto":
        raise SolverError(msg)
    warnings.warn(msg + "; status='inaccurate'", ConvergenceWarning, stacklevel=user_stacklevel())
    return P, cert, name, "inaccurate"


def _bits_up(nats):
    """``nats`` in bits, rounded up to the smallest float ``b`` with ``b * LN2 >= nats``: an InfeasibleBudgetError's
    ``smallest_feasible`` that, passed back as a target, is read (``target * LN2``) as at least the leakage of the
    mapping that meets it (``fm / LN2 * LN2`` came back an ulp below ``fm``, and that target was "could not decide")."""
    b = float(nats) / LN2
    while math.isfinite(b) and b * LN2 < nats:
        b = float(np.nextafter(b, math.inf))
    return b


def _rounding_share(prob):
    """The relative rounding of a sum over ``prob``'s input and output symbols (``ROUNDING_ULPS`` ulps each)."""
    return ROUNDING_ULPS * (prob.k + prob.kh) * np.finfo(float).eps


def _answer_dist_tol(prob, answer, floor=0.0):
    """The distortion tolerance of a ``max_leakage`` answer (both measures; internal units).

    ``DIST_RTOL`` times the distortion range, but at most ``ANSWER_RTOL`` times the answer's own distance to the
    smallest distortion ``answer - delta_min`` (one far symbol made the range 1e4 times that distance: a
    mutual-information answer with 20,000 times the optimum's distance was certified, and a maximal-leakage LP
    answer of distortion 1.026 where 0.274 is optimal, the range being 1e9 times the typical distance), or
    ``floor`` when that is larger (what the solver's precision or the target's own tolerance buys: the mutual
    information's interior point is precise to ``ANSWER_RTOL * DIST_RTOL`` times the range, the maximal leakage's
    LP, solved in units of the answer's distance, to rounding).
    """
    rng_ = max(prob.delta_max - prob.delta_min, 0.0)
    own = max(ANSWER_RTOL * max(answer - prob.delta_min, 0.0), floor)
    # the rounding of the distortion itself (a sum over the k x k_hat entries of the mapping) and of its bound
    rounding = _rounding_share(prob) * max(abs(answer), abs(prob.delta_min))
    return max(min(DIST_RTOL * rng_, own), rounding, DIST_RTOL * 1e-300)


def _ml_rounding_floor(prob, P):
    """The maximal-leakage target mode's distortion tolerance floor for the answer ``P`` (internal units): the
    rounding of its masses (``ROUNDING_ULPS`` ulps per symbol of each row's total, 1) times the dearest entry the row
    uses, ``sum_c max_{j: P(c, j) > 0} p(c) d(c, j)``, at most ``ML_ROUNDING_RTOL`` times the range. Only the entries
    the answer uses enter: a row's dearest entry may be decades above them (distortions over 16 decades)."""
    if prob.sparse:
        used = np.where(np.asarray(P) > 0, prob.w, 0.0)
        dearest = float(np.maximum.reduceat(used, prob.indptr[:-1]).sum())
    else:
        dearest = float(np.where(prob.mask & (P > 0), prob.W, 0.0).max(axis=1).sum())
    return min(_rounding_share(prob) * dearest, ML_ROUNDING_RTOL * max(prob.delta_max - prob.delta_min, 0.0))


def _cheapest_constant_mapping(prob):
    """The cheapest mapping of every input to one output (leakage exactly 0), or None when no output is
    allowed for every input (an edge vector for a sparse problem, a matrix for a dense one)."""
    r, c, _ = prob.edges()
    w = prob.edge_weights()
    # each output's number of allowed inputs (each input has one entry per output at most) and its total cost
    allowed = np.bincount(c, minlength=prob.kh) == prob.k
    if not allowed.any():
        return None
    cost = np.where(allowed, np.bincount(c, weights=w, minlength=prob.kh), np.inf)
    x = (c == int(np.argmin(cost))).astype(float)
    return prob.from_edges(x)


def _solve_ml(prob, delta, target_bits, solver, tol=1e-6):
    """Maximal-leakage mode: one exact LP (HiGHS), or the same LP through cvxpy.

    The LP's answer is then made exactly feasible (``maximal leakage <= target``: mixed
    with the perfect-privacy mapping, maximal leakage being convex in the mapping) and
    certified from the LP dual. Delta mode: certified when the gap to the rigorous bound of
    :func:`~privrelease.mapping._lp.maximal_leakage_lower_bound` is at most ``min(tol, ML_GAP_BITS)``
    bits; an answer that misses it is first polished to the exact vertex
    (:func:`~privrelease.mapping._lp.polish_maximal_leakage`), which reaches gaps near 1e-14 bits.
    """
    # target mode: the LP is solved a hair inside the target (LP_TARGET_RTOL), so that its answer meets the target
    # after rounding without the mixture with the perfect-privacy mapping below, whose distortion may be the whole
    # range: a pull-back of 1e-13 of the target cost 0.12% of the answer's distance to the smallest distortion on a
    # distortion with one far symbol. Not when the hair would make the LP infeasible (a target near 0: every
    # mapping has sum_j max_a p(j | a) >= 1)
    lp_bits = target_bits
    if target_bits is not None and 2.0 ** target_bits * (1 - LP_TARGET_RTOL) > 1.0:
        lp_bits = math.log2(2.0 ** target_bits * (1 - LP_TARGET_RTOL))
    if solver == "cvxpy" and not prob.sparse:
        import cvxpy as cp

        # the entries bounded by [0, 1] (implied by the row sums), not nonneg=True: cvxpy (1.9) propagates bounds
        # through M @ X for the epigraph variables of the max, and with X in [0, inf) a zero cell p(a, c) = 0 gave
        # 0 * inf = NaN, turned into the bounds [0, 0] by the product with 1 / p(a): HiGHS was handed an infeasible
        # program (every prior with a zero cell, both modes). Finite bounds keep every propagated bound a number
        X = cp.Variable((prob.k, prob.kh), bounds=[0.0, 1.0])
        cons = [cp.sum(X, axis=1) == 1]
        if (~prob.mask).any():
            cons.append(cp.multiply((~prob.mask).astype(float), X) == 0)
        cond = cp.multiply(1.0 / prob.pA[:, None], prob.M @ X)
        total = cp.sum(cp.max(cond, axis=0))
        dist = cp.sum(cp.multiply(prob.W, X))
        if target_bits is None:
            if np.isfinite(delta):
                cons.append(dist <= delta)
            pr = cp.Problem(cp.Minimize(total), cons)
        else:
            cons.append(total <= 2.0 ** lp_bits)
            pr = cp.Problem(cp.Minimize(dist), cons)
        # cvxpy's SCIPY interface runs scipy's HiGHS (linprog, method "highs"), which is quiet; its HIGHS
        # interface constructs highspy's Highs, which prints HiGHS's banner to stdout on the first Highs() of
        # the process whatever output_flag (highspy 1.16's constructor takes no options, and cvxpy sets
        # them only after constructing it).
        # bounded in time as the engine's own HiGHS LPs (_lp.HIGHS_TIME_LIMIT_FLOOR): the program's nonzeros are the
        # epigraph rows' (|A| per output, one entry per input), the row sums' and the budget's. Stopped by it, HiGHS
        # reports status 1, which cvxpy reads "optimal_inaccurate": not solved (SolverError below), never "optimal"
        limit = _lp.time_limit_for_nonzeros((prob.M.shape[0] + 2) * prob.k * prob.kh)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                pr.solve(solver="SCIPY", scipy_options={"method": "highs", "time_limit": limit})
            except cp.error.SolverError as exc:  # stopped without a point: cvxpy's "solver_error"
                raise SolverError(f"cvxpy/HiGHS did not solve the maximal-leakage program (time limit {limit:.3g} "
                                  f"s): {exc}") from None
        if target_bits is not None and pr.status in ("infeasible", "infeasible_inaccurate"):
            # a target out of reach (or within the hair kept inside it of the smallest value): the least-leaking
            # mapping, which the checks below refuse naming the smallest achievable value as the other solvers do
            # (a SolverError naming the status, where "fast" and "auto" raised InfeasibleBudgetError), or return
            P, name, info = solve_maximal_leakage_lp(prob)[0], "cvxpy-SCIPY", None
        elif pr.status != "optimal" or X.value is None:
            stopped = f" (stopped by its time or iteration limit; time limit {limit:.3g} s)" \
                if pr.status == "optimal_inaccurate" else ""
            raise SolverError(f"cvxpy/HiGHS did not solve the maximal-leakage program: status {pr.status!r}{stopped}")
        else:
            P, name, info = X.value, "cvxpy-SCIPY", None
            if target_bits is not None:
                # the bound of the same LP by HiGHS, and with it the exact vertex and the dual LP's multipliers of
                # the fast path (_polish_target, below): on distortions over 16 decades the multipliers of HiGHS's
                # marginals bound nothing and cvxpy's answer (HiGHS without the rescaling) was up to 1e4 times the
                # optimum's distance, so every such answer raised "not certified" where "auto" certifies
                _, info = solve_maximal_leakage_lp(prob, target_bits=lp_bits, bound_bits=target_bits)
    else:
        try:
            try:
                P, info = solve_maximal_leakage_lp(prob, delta=delta, target_bits=lp_bits, bound_bits=target_bits)
            except InfeasibleBudgetError:
                if lp_bits == target_bits:
                    raise
                # the target is within the hair of the smallest achievable value: the LP at the target itself (it
                # raises naming the target when that is out of reach too)
                lp_bits = target_bits
                P, info = solve_maximal_leakage_lp(prob, delta=delta, target_bits=target_bits)
        except SolverError as exc:
            if solver != "auto":
                raise
            return _ml_fallback(prob, delta, target_bits, exc)
        name = "highs"
    P_raw, P = P, prob.clean(P, delta)

    def ml_sum(Q):
        return float((prob.joint(Q) / prob.pA[:, None]).max(axis=0).sum())

    if target_bits is None:
        # dual bound from the exact LP (HiGHS marginals) on the same budget
        P_lp = P_raw
        if info is None:
            P_lp, info = solve_maximal_leakage_lp(prob, delta=delta)
        dual = info.get("lower_bound", info["lp_dual_objective"])
        need = min(tol, ML_GAP_BITS)

        def gap_of(Q):
            return float(max(math.log2(max(ml_sum(Q), 1.0)) - math.log2(max(dual, 1.0)), 0.0))

        if gap_of(P) > need:  # HiGHS's feasibility tolerance: solve the vertex's active constraints exactly
            # cvxpy: also the vertex of the LP its bound came from (in units of its leakage above F, where HiGHS's
            # tolerances apply to it, _lp.solve_maximal_leakage_lp), as the target mode does. Through cvxpy (the
            # epigraph form in units of 1) a budget 3e-7 of the range below the perfect-privacy distortion came back
            # leaking 36 times the optimum (1.6e-7 bits), a vertex its polish does not leave
            for Q in (P_raw, P_lp) if P_lp is not P_raw else (P_raw,):
                Pp = polish_maximal_leakage(prob, Q, delta, info.get("lp_unit", 1.0))
                for cand in (Pp, Q if Q is not P_raw else None):
                    cand = prob.clean(cand, delta) if cand is not None else None
                    if cand is not None and gap_of(cand) < gap_of(P):
                        P = cand
        near = NEAR_MIN_RTOL * max(prob.delta_min, prob.delta_max - prob.delta_min)
        if gap_of(P) > need and prob.n_argmin.max() > 1 and prob.delta_min < delta <= prob.delta_min + near:
            # a hair above the smallest budget with tied cheapest outputs: the budget row keeps every entry within
            # BUDGET_ROW_MAX_COEF slacks of its row's cheapest (a slack of 1e-24 against entries 16 decades apart),
            # and HiGHS's answer came back 1e-7 .. 3.9e-7 bits (once 0.036 bits) above the bound and above the optimum
            # at the smallest budget, which is feasible here. That optimum is the LP on the rows' cheapest entries
            # (every other entry fixed at 0), and its multipliers bound the leakage at this budget too
            # (maximal_leakage_lower_bound prices the other entries out)
            try:
                Q, info_min = solve_maximal_leakage_lp(prob, delta=prob.delta_min, bound_delta=delta)
            except SolverError:
                pass
            else:
                dual = max(dual, info_min.get("lower_bound", -math.inf))
                Q = prob.clean(Q, delta)
                Qp = (polish_maximal_leakage(prob, Q, prob.delta_min, info_min.get("lp_unit", 1.0)) if gap_of(Q) > need
                      else None)
                Qp = prob.clean(Qp, delta) if Qp is not None else None
                Q = Qp if Qp is not None and gap_of(Qp) < gap_of(Q) else Q
                # and the LP's answer at this budget brought within it by mixing with that optimum rather than with
                # the cheapest mapping (clean: one cheapest output per row, far leakier where rows have ties);
                # maximal leakage is convex in the mapping
                for cand in (Q, _mix_into_budget(prob, prob.clean(P_raw, None), Q, delta)):
                    if cand is not None and gap_of(cand) < gap_of(P):
                        P = cand
        primal = ml_sum(P)
        cert = {"gap_bits": gap_of(P), "lp_gap": float(max(primal - dual, 0.0)),
                "method": "linear program (HiGHS), dual bound"}
        return P, cert, name, "optimal" if cert["gap_bits"] <= need else "inaccurate"
    cap = 2.0 ** target_bits * (1 - ML_TARGET_HAIR)
    # blocks of allowed entries: every mapping has sum_j max_a p(j | a) >= F = 1 + excess (_lp._ml_references), so
    # at a target whose hair is below F no mapping meets the hair; there the answers are held to the target up to
    # the rounding of the sum, the rule by which `within` below certifies them
    excess = _ml_references(prob)[1]
    at_floor = excess > 0.0 and cap < 1.0 + excess
    if at_floor:
        cap = 2.0 ** target_bits * (1 + _rounding_share(prob))
    polished = None
    lb_cond = -math.inf  # the conditional perfect-privacy LP's bound, when it is solved below
    if info is not None and "lp_marginals" in info:
        polished, info = _polish_target(prob, P, info, lp_bits, target_bits, ml_sum, cap)
    pull_price = 0.0
    if at_floor and ml_sum(P) > cap:
        # the exact vertex when there is one (it meets cap), else another least-leaking mapping
        P = polished if polished is not None else _ml_floor_answer(prob, P, target_bits, ml_sum, cap)
    elif ml_sum(P) > cap:
        # LP feasibility tolerances can leave the target exceeded by ~1e-8: pull back inside
        Ppp, _ = perfect_privacy_mapping(prob)
        if Ppp is None or ml_sum(Ppp) > 1.0 + _rounding_share(prob):
            # the perfect-privacy LP's mapping leaks beyond rounding (p(c) over 8 decades, |A| = 5: a target of 0 was
            # refused as unreachable on a distortion without forbidden entries; a public symbol of mass 1e-12: its
            # conditional error counts linearly, 2e-13 bits returned "optimal" at a target of 0): the cheapest
            # constant mapping, whose leakage is exactly 0, when there is one; and the LP in conditional form (unknowns
            # of order 1, differences of conditionals without cancellation), whose mapping is private to rounding where
            # the LP in joint masses leaks: the cheaper of the two, its multipliers' bound kept for a target of 0
            Pc = _cheapest_constant_mapping(prob)
            Qc, lb_cond = conditional_perfect_privacy(prob, _rounding_share(prob))
            cands = [Q for Q in (Pc, Qc) if Q is not None and ml_sum(Q) <= 1.0 + _rounding_share(prob)]
            Ppp = min(cands, key=prob.distortion) if cands else Ppp
        Pz = Ppp if Ppp is not None else prob.clean(solve_maximal_leakage_lp(prob)[0], None)
        if Ppp is not None and cap < ml_sum(Ppp) <= 1.0 + 1e-12:
            # a target of 0 (or below the rounding of 0): sum_j max_a p(j | a) >= 1 for every mapping,
            # so the hair inside the target (cap < 1) refused even perfect privacy. The perfect-privacy
            # LP's mapping is the answer (maximal leakage 0 up to rounding, reported as gap_bits)
            P = Ppp
        elif ml_sum(Pz) > 2.0 ** target_bits * (1 + _rounding_share(prob)):
            smallest = _ml_bits_up(ml_sum(Pz))
            raise _with_mapping(InfeasibleBudgetError(
                f"max_leakage={target_bits!r} bits cannot be reached by any allowed mapping; the smallest achievable "
                f"maximal leakage is {smallest!r} bits", smallest_feasible=smallest), Pz)
        elif ml_sum(Pz) > cap:
            # the target is the smallest achievable maximal leakage up to rounding, inside the hair kept: the
            # least-leaking mapping, certified below or warned; the LP's own answer when it leaks as little (the
            # least-leaking mappings may be many, and Pz is found without regard to the distortion)
            P = P if ml_sum(P) <= max(ml_sum(Pz), 2.0 ** target_bits) * (1 + _rounding_share(prob)) else Pz
        else:
            # the partner of the mixture: the LP's answer a little further inside the target when it meets it (a
            # chord of the convex curve, whose cost is the curve's slope), else the perfect-privacy mapping, whose
            # distortion may be the whole range (the LP at the target within HiGHS's 1e-7 of the smallest
            # distortion's leakage returned the identity; mixed with the perfect-privacy mapping it cost 2.2e-8
            # where the optimum is 5e-16)
            Pz = _lower_partner(prob, target_bits, solver != "cvxpy", ml_sum, cap, Pz)
            hi = _mix_to_target(ml_sum, P, Pz, cap)  # ml_sum is convex in the mapping, as f in the joint
            over, d_before = ml_sum(P) - cap, prob.distortion(P)
            P = (1 - hi) * P + hi * Pz
            if over <= HIGHS_FEAS_TOL * prob.kh * _ml_row_unit(target_bits, prob):
                # the price of meeting the target exactly where HiGHS's answer met it within its feasibility tolerance
                # (1e-7 per epigraph row, whose unit is the target's slack 2^target - F: _maximal_leakage_target_lp;
                # in units of 1 an answer 3.4e-10 over a slack of 2.6e-9, 15% of it, was pulled back at a price of
                # 0.024 and certified where 8.3e-7 is optimal): the LP's multipliers cannot see it (1 - I at the
                # identity's leakage: the identity, bound 0, the answer 1.4e-13 above it); at most DIST_RTOL of the
                # range (unbounded, it tolerated the whole answer: 146.6 "optimal" with a bound of 0, 85.2 reachable)
                pull_price = min(max(prob.distortion(P) - d_before, 0.0),
                                 DIST_RTOL * max(prob.delta_max - prob.delta_min, 0.0))
    if polished is not None and prob.distortion(polished) <= prob.distortion(P):
        # the exact vertex, unless the answer pulled back within the target is cheaper (the vertex's active system
        # may be inconsistent once an entry that came out negative leaves the support: its least-squares point is
        # feasible, not always the vertex)
        P, pull_price = polished, 0.0
        name = name if name == "highs" else name + "+highs-vertex"
    # the weak-duality bound of the LP's multipliers, not HiGHS's dual objective (not a bound: see
    # maximal_leakage_distortion_bound); delta_min when HiGHS gave no marginals
    info = {} if info is None else info  # (the cvxpy path's least-leaking mapping: no LP information)
    lb = info.get("lower_bound", prob.delta_min)
    d_P = prob.distortion(P)

    def tolerance(lb):
        # relative to the answer's distance to the smallest distortion, as the mutual-information target mode:
        # relative to the range, an LP answer of 1.026 where 0.274 is optimal was certified (a distortion with a 1e9
        # penalty). Plus what the LP's hair inside the target costs by the same multipliers (their bound at the LP's
        # own target minus the one at the target): a target at the smallest distortion's leakage is met at a
        # distortion above it
        return _answer_dist_tol(prob, d_P, _ml_rounding_floor(prob, P)) + max(
            info.get("lower_bound_lp_target", lb) - lb, 0.0) + pull_price

    lb_note = ""
    if max(d_P - lb, 0.0) > tolerance(lb) and not prob.sparse and target_bits <= ML_INDEPENDENCE_BITS:
        # near perfect privacy the LP's multipliers see little (a target of 1e-12 bits on a nearly independent
        # prior: bound 0 against an answer of 85.2, certified only through the pull-back's price); maximal leakage
        # bounds the mutual information (Sibson's order infinity), so every mapping within the target leaks at most
        # target_bits of mutual information, and the perfect-privacy LP's multipliers relaxed to it bound its
        # distortion (independence_lower_bound). Only where the LP's bound falls short: the perfect-privacy LP is
        # a solve of its own (seconds at k = 1000), and a tighter bound cannot make a certified answer uncertified
        _, _, t_pp = perfect_privacy_mapping(prob, return_duals=True)
        lb_ind = independence_lower_bound(prob, t_pp, target_bits * LN2)
        if lb_ind > lb:
            lb, lb_note = lb_ind, "; distortion bound: the perfect-privacy LP's multipliers (I <= maximal leakage)"
    if lb_cond > lb and 2.0 ** target_bits <= 1.0 + _rounding_share(prob):
        # a target of 0 up to rounding: every mapping that meets it is private, and the conditional LP's multipliers
        # bound the distortion of every private mapping (the joint-mass LP's see a rare symbol's rows as free)
        lb, lb_note = lb_cond, "; distortion bound: the perfect-privacy LP in conditional form"
    gap = max(d_P - lb, 0.0)
    dist_tol = tolerance(lb)
    cert = {"gap_bits": max(math.log2(max(ml_sum(P), 1.0)) - target_bits, 0.0),
            "distortion_gap": float(prob.gap_to_user(gap)), "distortion_lower_bound": float(prob.to_user_down(lb)),
            "distortion_tolerance": float(prob.gap_to_user(dist_tol)),
            "method": "linear program (HiGHS), dual bound" + lb_note}
    # and within the target up to rounding (the perfect-privacy LP's mapping, taken near a target of 0, may leak
    # HiGHS's feasibility tolerance: a distortion gap alone certified 2e-13 bits over a target of 0)
    within = ml_sum(P) <= 2.0 ** target_bits * (1 + _rounding_share(prob))
    return P, cert, name, "optimal" if gap <= dist_tol and within else "inaccurate"


def _ml_floor_answer(prob, P, target_bits, ml_sum, cap):
    """The answer at a maximal-leakage target near ``F = sum_b max_a p(b | a)`` (blocks of allowed entries; every
    mapping has ``sum_j max_a p(j | a) >= F``) when the LP's answer ``P`` exceeds ``cap`` (HiGHS's feasibility
    tolerance): the cheapest of ``P``, the mapping perfectly private within each block
    (:class:`~privrelease.mapping._lp.BlockFloor`, whose sum is ``F`` when every block has one) and the
    least-leaking LP's answer that meets ``cap``.

    When none does: InfeasibleBudgetError naming the least leaking one's maximal leakage if ``cap`` is below ``F``
    beyond its rounding (HiGHS accepts a target up to its 1e-7 tolerance below ``F``) or the least leaking one
    exceeds it beyond HiGHS's feasibility tolerance (forbidden entries inside a block raise the smallest leakage
    above ``F``), else the least leaking one (the caller's certificate marks it "inaccurate"). Mixing towards
    another mapping cannot bring the sum below ``F``."""
    cands = [P]
    if not prob.sparse:
        Pb, _ = BlockFloor(prob).mapping()
        if Pb is not None:
            cands.append(Pb)
    try:
        cands.append(prob.clean(solve_maximal_leakage_lp(prob)[0], None))
    except (InfeasibleBudgetError, SolverError):
        pass
    ok = [Q for Q in cands if ml_sum(Q) <= cap]
    if ok:
        return min(ok, key=prob.distortion)
    least = min(cands, key=ml_sum)
    if cap < 1.0 + _ml_references(prob)[1] - _ml_floor_rounding(prob) or \
            ml_sum(least) > cap + HIGHS_FEAS_TOL * prob.kh:
        smallest = _ml_bits_up(ml_sum(least))
        raise _with_mapping(InfeasibleBudgetError(
            f"max_leakage={target_bits!r} bits cannot be reached by any allowed mapping; the smallest achievable "
            f"maximal leakage is {smallest!r} bits", smallest_feasible=smallest), least)
    return least


def _polish_target(prob, P, info, lp_bits, target_bits, ml_sum, cap):
    """``(Pp, info)``: the exact vertex of the target mode's LP
    (:func:`~privrelease.mapping._lp.polish_maximal_leakage_target`) when HiGHS's answer ``P`` is over the target or
    not certified by its own multipliers (None otherwise, or when the vertex is not within the target, or is dearer
    than ``P`` within it), and ``info`` with the bound raised to the vertex's multipliers' where higher.

    On costs spanning 16 decades HiGHS's answer met its tolerances in its own scaling only (an entry at -4.6e-8, the
    clipped answer 2.4 times the target's slack over it, and mixed back towards perfect privacy at up to DIST_RTOL of
    the range) or its multipliers bounded nothing (the bound the smallest distortion against an optimal answer).
    Only then: a certified answer is kept as it is."""
    lb = info.get("lower_bound", prob.delta_min)
    lb_lp = info.get("lower_bound_lp_target", lb)
    d_P = prob.distortion(P)
    over = ml_sum(P) > cap
    tol = _answer_dist_tol(prob, d_P, _ml_rounding_floor(prob, P))
    if not over and d_P - lb <= tol + max(lb_lp - lb, 0.0):
        return None, info
    info, Pp = dict(info), None
    out = polish_maximal_leakage_target(prob, info["lp_solution"], *info["lp_marginals"], lp_bits, target_bits)
    cands = []  # (multipliers, the unit of their rows)
    if out is not None:
        x, lam, nu = out
        Pp = prob.clean(prob.from_edges(x), None)
        if ml_sum(Pp) > cap or (not over and prob.distortion(Pp) > d_P):
            Pp = None
        cands.append((lam, nu, _ml_row_unit(lp_bits, prob)))
    # and the multipliers of the dual LP in units of the answer's distance to the smallest distortion (those of the
    # LP's rows, in units of the slack, are below HiGHS's dual tolerance: maximal_leakage_target_multipliers)
    dual = maximal_leakage_target_multipliers(prob, target_bits, d_P - prob.delta_min, vertex_bits=lp_bits)
    if dual is not None:
        cands.append((dual[0], dual[1], 1.0))
        if dual[2] is not None:  # the vertex complementary to them, where cheaper than the polished one
            Pd = prob.clean(prob.from_edges(dual[2]), None)
            if ml_sum(Pd) <= cap and (over or prob.distortion(Pd) <= d_P) and (
                    Pp is None or prob.distortion(Pd) < prob.distortion(Pp)):
                Pp = Pd
    for lam, nu, unit in cands:
        lbp = maximal_leakage_distortion_bound(prob, lam, nu, target_bits, unit)
        if lbp > info.get("lower_bound", prob.delta_min):
            info["lower_bound"] = lbp
            info["lower_bound_lp_target"] = maximal_leakage_distortion_bound(prob, lam, nu, lp_bits, unit)
    return Pp, info


def _mix_into_budget(prob, P, Q, delta):
    """``(1 - theta) P + theta Q`` with the smallest ``theta`` that meets the budget ``delta`` (``Q`` within it), or
    None when ``Q`` is not within it."""
    d_P, d_Q = prob.distortion(P), prob.distortion(Q)
    if d_P <= delta:
        return P
    if d_Q > delta:
        return None
    theta = min(1.0, (d_P - delta) / (d_P - d_Q) * (1 + 1e-9) + 1e-15)
    R = (1 - theta) * P + theta * Q
    return R if prob.distortion(R) <= delta else Q


def _ml_fallback(prob, delta, target_bits, exc):
    """The best feasible mapping at hand when HiGHS solved no form of the maximal-leakage LP (``solver="auto"``):
    the cheapest mapping, the cheapest constant mapping and the perfect-privacy LP's mapping, the least leaky within
    the budget (delta mode) or the cheapest within the target (target mode), status "inaccurate" (the caller warns);
    the SolverError again when none is feasible."""
    def ml_sum(Q):
        return float((prob.joint(Q) / prob.pA[:, None]).max(axis=0).sum())

    cands = [prob.P_min, _cheapest_constant_mapping(prob)]
    try:
        cands.append(perfect_privacy_mapping(prob)[0])
    except SolverError:
        pass
    cands = [Q for Q in cands if Q is not None]
    note = f"HiGHS did not solve the maximal-leakage LP ({exc}): the best of the cheapest, constant and " \
           "perfect-privacy mappings"
    if target_bits is None:
        ok = [Q for Q in cands if delta is None or not np.isfinite(delta) or prob.distortion(Q) <= delta]
        P = min(ok, key=ml_sum)  # the cheapest mapping is always within the budget (delta >= delta_min)
        cert = {"gap_bits": float(math.log2(max(ml_sum(P), 1.0))), "lp_gap": float("nan"), "method": note}
        return P, cert, "highs", "inaccurate"
    cap = 2.0 ** target_bits * (1 + 1e-12)
    ok = [Q for Q in cands if ml_sum(Q) <= max(cap, 1.0 + 1e-12)]
    if not ok:
        raise exc
    P = min(ok, key=prob.distortion)
    cert = {"gap_bits": max(math.log2(max(ml_sum(P), 1.0)) - target_bits, 0.0),
            "distortion_gap": float(prob.gap_to_user(prob.distortion(P) - prob.delta_min)),
            "distortion_lower_bound": float(prob.to_user_down(prob.delta_min)), "distortion_tolerance": 0.0,
            "method": note}
    return P, cert, "highs", "inaccurate"


def _lower_partner(prob, target_bits, use_lp, ml_sum, cap, fallback):
    """The LP's answer at the slack ``(2^target - F) (1 - PULLBACK_RTOL)`` when it meets ``cap`` (after rounding),
    else ``fallback``.

    The hair is taken from the slack above ``F = sum_j p(j | ref_j)`` (``sum_j max_a p(j | a) >= F`` for every
    mapping; ``F = 1`` with one block of allowed entries: :func:`~privrelease.mapping._lp._ml_references`), not from
    ``2^target``: below 1.44e-6 bits ``2^target (1 - PULLBACK_RTOL)`` is under 1, which no mapping meets."""
    excess = _ml_references(prob)[1]
    s = _ml_target_slack(target_bits, prob) * (1 - PULLBACK_RTOL)
    if not use_lp or not s > 0.0:
        return fallback
    try:
        Q, _ = solve_maximal_leakage_lp(prob, target_bits=math.log1p(excess + s) / math.log(2.0))
    except (InfeasibleBudgetError, SolverError):
        return fallback
    Q = prob.clean(Q, None)
    return Q if ml_sum(Q) <= cap else fallback


def _with_mapping(exc, P):
    """``exc`` (an InfeasibleBudgetError of a leakage target) carrying ``P``, the reduced mapping whose leakage its
    ``smallest_feasible`` is (see :func:`_reported_hint`)."""
    exc.least_leaking = P
    return exc


def _reported_hint(exc, prob, reduction, prior, kind):
    """Raise a leakage refusal's ``smallest_feasible`` to the leakage of the mapping it names (``exc.least_leaking``)
    as :func:`~._leakage.leakage` sums it on the whole problem, the value :class:`MappingResult` reports: the engine's
    sum on the reduced problem came out 2e-16 .. 6e-16 bits below it, and that hint passed back was answered with a
    reported leakage above it (see :func:`_within_target`). Plus that sum's rounding (``ROUNDING_ULPS`` ulps per
    symbol of the magnitude of its terms): the answer at the hint may be another least-leaking mapping (the per-block
    perfect-privacy LP's where the hint was the least-leaking solve's), equal up to that rounding (8e-17 bits above a
    hint of the reported leakage alone)."""
    Q = getattr(exc, "least_leaking", None)
    hint = exc.smallest_feasible
    if Q is None or hint is None or not math.isfinite(hint):
        return
    full = _full_mapping(prob, reduction, Q)
    reported = float(_leakage(prior, full, kind=kind))
    if kind == "maximal_leakage":  # log2 of a sum of order 2^reported: its relative rounding, in bits
        magnitude = 1.0 / LN2
    else:
        J = np.asarray(prior, dtype=float) @ full
        magnitude = float(np.abs(rel_entr(J, J.sum(axis=1, keepdims=True) * J.sum(axis=0, keepdims=True))).sum()
                          + 1.0) / LN2
    up = float(reported + _rounding_share(prob) * magnitude)
    if math.isfinite(up) and up > hint:
        exc.smallest_feasible = up


# the targets tried for a refusal's hint (_certified_hint) above the smallest leakage found, relative to it
HINT_LADDER_RTOL = (1e-12, 1e-11, 1e-10, 1e-9)
#: programs of more cells (inputs x outputs) try the first two of the ladder's targets only (the hint as before and
#: the named mapping's leakage): every target tried is a full solve (at k = 1000 a refusal cost 1.2x with "fast",
#: 3.7x with cvxpy; eight tried where none certifies)
HINT_LADDER_MAX_CELLS = 300 * 300


def _certified_hint(exc, prob, reduction, P, D, kind, solver, tol):
    """Set a leakage refusal's ``smallest_feasible`` to a target at which this solver's answer is certified
    ("optimal", its reported leakage within the target), so that the hint passed back is answered.

    The hint of :func:`_reported_hint` (the named mapping's reported leakage plus its sum's rounding) was not always
    such a target (stop 47, 44 of 1,080 round trips): at a block floor ``I(A; B)`` the rounding allowance (2.3e-14 nats
    on a floor of 0.086) lets mappings leak that much more than the floor, which buy distortion in its square root
    (1.4e-6 below the per-block answer, against a tolerance of 3.7e-7), so the per-block answer is no longer proven
    optimal there, whereas at the named mapping's own leakage it is; at a maximal-leakage floor with rare masses the
    least-distortion mapping among the least-leaking ones leaked 1.6e-13 bits more than the one named, and between
    the two the smallest distortion falls by 0.0064 (its slope 4e10 per bit: no target in that span is certified
    in floating point). Tried in turn, each a full solve with this solver (deterministic: the same target passed back
    is answered the same): the hint as before, the named mapping's reported leakage (an ulp up), the
    hint less 99 % and 90 % of its allowance, then the hint times ``1 + HINT_LADDER_RTOL`` (the first two only on
    programs of more than ``HINT_LADDER_MAX_CELLS`` cells); the first certified one is the hint. When none is, or a
    try fails in any other way (a MemoryError), the hint is left as it was (passed back, it is warned or raised, never
    "optimal") and the refusal raised as it is. The tries' ConvergenceWarnings are not shown (the old refusal's own
    search hides them the same way); no other warning filter is changed (a filter on every category, process-wide,
    hid other threads' warnings while the tries ran)."""
    hint = exc.smallest_feasible
    Q = getattr(exc, "least_leaking", None)
    if Q is None or hint is None or not 0.0 < hint < math.inf:
        return
    base = float(_leakage(P, _full_mapping(prob, reduction, Q), kind=kind))
    base = float(np.nextafter(base, math.inf)) if 0.0 < base < hint else hint
    ladder = [hint, base] + [hint - s * (hint - base) for s in (0.99, 0.9)] + \
        [hint * (1 + r) for r in HINT_LADDER_RTOL]
    if prob.n_public * prob.n_outputs > HINT_LADDER_MAX_CELLS:
        ladder = ladder[:2]
    tried = set()
    for t in ladder:
        if t in tried:
            continue
        tried.add(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            try:
                res = _target_mode(prob, reduction, P, D, t, kind, solver, tol)
            except (InfeasibleBudgetError, SolverError):
                continue
            except Exception:  # a refinement of the hint: the refusal stands whatever a try raises
                return
        if res.status == "optimal" and res.leakage <= t:
            exc.smallest_feasible = t
            if exc.args and isinstance(exc.args[0], str):
                exc.args = (f"{exc.args[0]} (max_leakage={t!r} bits, the error's smallest_feasible, is answered "
                            f"with a certified mapping)",) + exc.args[1:]
            return


def _within_target(prob, res, target, solver):
    """``res`` when its reported leakage (:func:`~._leakage.leakage` on the whole mapping, what the user reads) is at
    most ``target``; else its status is not "optimal": an explicit solver raises SolverError, "auto" warns and returns
    it "inaccurate".

    The engine compares its own sum on the reduced problem with the target, up to the sum's rounding (a target at
    the smallest leakage, a block floor or the maximal-leakage LP's, is met by the least-leaking mapping up to that
    rounding): 107 of 869 targets at and just below refusals' hints came back "optimal" with a reported leakage up to
    1.6e-14 bits above the target. Such a target lies within the leakage's rounding of the smallest leakage (the
    targets below it by more are refused with a proven bound).

    Not for an answer that leaks 0 up to the rounding of leakage() (perfect privacy: 1e-17 bits read for an exactly
    independent mapping, whatever the target, 0 or one below that rounding; its leakage is reported as
    ``certificate['gap_bits']``), as documented: the rounding of the Lagrangian bound at 0 (``bound_rounding``), and
    for the maximal leakage ``ROUNDING_ULPS`` ulps per symbol of its sum."""
    if res.status != "optimal" or not res.leakage > target:
        return res
    zero = (_rounding_share(prob) if res.kind == "maximal_leakage" else bound_rounding(prob.pA, prob.k, 0.0, 0.0, 0.0))
    if target <= 0.0 or res.leakage <= zero / LN2:
        return res
    msg = (f"the answer's leakage, {res.leakage!r} bits, exceeds max_leakage={target!r} bits by "
           f"{res.leakage - target:.3g} bits: the target is within the leakage's rounding of the smallest leakage "
           f"found, and no allowed mapping is proven to meet it (max_leakage={res.leakage!r} accepts this answer)")
    if solver != "auto":
        raise SolverError(msg)
    warnings.warn(msg + "; status='inaccurate'", ConvergenceWarning, stacklevel=user_stacklevel())
    return dataclasses.replace(res, status="inaccurate")


def _ml_policy(out, solver):
    """The uncertified-answer policy for the maximal-leakage LP (raise, or warn with 'auto')."""
    P, cert, name, status = out
    if status != "optimal":
        msg = f"the maximal-leakage LP answer is not certified (certificate {cert})"
        if solver != "auto":
            raise SolverError(msg)
        warnings.warn(msg + "; status='inaccurate'", ConvergenceWarning, stacklevel=user_stacklevel())
    return P, cert, name, status


# ---------------------------------------------------------------------------- public API
def solve_mapping(prior, distortion, delta=None, *, max_leakage=None, leakage="mutual_information",
                  solver="auto", tol=1e-6, warm_start=None):
    """Optimal privacy-preserving mapping (Algorithm 1, problem (6)) with a certificate.

    Minimise the leakage ``I(A; C_hat)`` of releasing ``C_hat ~ mapping(. | C)``
    subject to an expected distortion ``<= delta`` (``delta`` mode), or minimise
    the expected distortion subject to leakage ``<= max_leakage`` bits
    (``max_leakage`` mode). Exactly one of the two must be given.

    Parameters
    ----------
    prior : array-like of shape (n_private, n_public)
        Joint ``p(a, c)``; non-negative and summing to 1 (within 1e-8; a float32
        prior within 8 float32 epsilons). A scipy sparse prior is densified.
    distortion : array-like or scipy sparse matrix of shape (n_public, n_outputs)
        Non-negative ``d(c, c_hat)``; ``np.inf`` forbids a transition exactly
        (the mapping is exactly 0 there), e.g. erasure-only outputs. A scipy
        sparse matrix stores the *allowed* transitions only: every stored entry
        (explicit zeros included) is allowed, every other one is forbidden, so
        memory grows with the allowed pairs, not with ``n_public x n_outputs``
        (an erasure alphabet: :func:`erasure_distortion` with ``sparse=True``).
        Beware that ``csr_array(dense)`` drops zero costs; build the matrix from
        its entries (``csr_array((d, (rows, cols)), shape=...)``). The mapping is
        then returned as a ``csr_array`` with the same stored entries. After the
        presolve (module notes) removes dominated outputs, a reduced program of at
        most ``REDUCED_DENSE_CELLS_LIMIT`` (8,388,608) cells is solved by the dense fast
        path; a larger one by column generation over the allowed transitions (see
        :mod:`privrelease.mapping._sparse`), certified by the same bound.
    delta : float, optional
        Distortion budget ``Delta >= 0`` (``np.inf`` allowed). Below the smallest
        feasible budget ``sum_c p(c) min_j d(c, j)`` an
        :class:`~privrelease.exceptions.InfeasibleBudgetError` is raised.
    max_leakage : float, optional
        Privacy target in bits (``>= 0``). The answer's distortion is certified to within
        ``ANSWER_RTOL`` (1e-3) of its distance to the smallest distortion, and at most ``DIST_RTOL``
        (1e-6) of the distortion range (module notes, tolerance policy); in maximal-leakage mode
        plus what meeting the target exactly after HiGHS's tolerances costs (at most another
        ``DIST_RTOL`` of the range). ``certificate['distortion_tolerance']`` gives the tolerance
        applied where it differs from that rule. An ``"optimal"`` answer's ``leakage`` (as the
        result reports it) is at most a positive target; a target within the leakage's rounding
        below the smallest leakage is warned with ``"auto"`` (``status="inaccurate"``) or raised
        (:class:`~privrelease.exceptions.SolverError`) by an explicit solver.
    leakage : {"mutual_information", "maximal_leakage"}
        The privacy measure. ``"maximal_leakage"`` (``log2 sum_j max_a p(j|a)``)
        is minimised exactly by one linear program (HiGHS).
    solver : {"auto", "fast", "cvxpy"}
        See the module notes: ``"fast"`` is the structured interior-point
        solver, ``"cvxpy"`` the plain reference formulation (CLARABEL then SCS),
        ``"auto"`` tries fast then cvxpy. A sparse ``distortion`` accepts
        ``"auto"`` and ``"cvxpy"`` (column generation, then the plain
        formulation over the allowed transitions).
    tol : float, default=1e-6
        Required certified optimality gap in bits,
        ``0 < tol < log2(min(|A|, n_outputs))`` (at least 1 bit): no mapping
        leaks more, so a larger ``tol`` would certify any mapping, and is
        refused (ValueError). In the maximal-leakage
        ``delta`` mode the LP's answer is certified to ``min(tol, 1e-7)`` bits
        (an answer missing it is solved exactly at its vertex first); above it,
        the policy of the module notes (a warning and ``status="inaccurate"``
        with ``"auto"``, :class:`~privrelease.exceptions.SolverError` otherwise).
    warm_start : MappingResult or array-like, optional
        A previous mapping (same shape as ``distortion``, rows summing to 1);
        its support seeds the fast solver's working set of allowed transitions
        (used along a curve, in the mutual-information ``delta`` mode). It is
        validated in every mode: a malformed start raises rather than being ignored.

    Returns
    -------
    MappingResult
        ``mapping``, ``leakage`` (bits, recomputed from the mapping),
        ``distortion``, ``status``, ``certificate`` (``gap_bits`` ...), ``solver``,
        ``delta``, ``max_leakage``.

    Raises
    ------
    ValueError
        A malformed prior or distortion (the message names the value), or a
        prior with a single row or a single column (nothing to protect).
    InfeasibleBudgetError
        ``delta`` below the smallest feasible distortion (message and
        ``.smallest_feasible`` give it), a row of ``distortion`` without a finite
        entry, or an unreachable ``max_leakage`` (``.smallest_feasible``: the smallest
        leakage up to rounding, a target at which the same solver's answer is
        certified when one of a few tried within 1e-9 of it is).
    SolverError
        An explicitly chosen solver could not certify its answer to ``tol``;
        with any solver, a ``max_leakage`` target that neither the least-leaking
        mapping found meets nor its lower bound rules out (a target within the
        solver's tolerance of the smallest achievable leakage, when that is
        above 0 because of forbidden entries): the message gives both figures
        and the gap between them.

    See Also
    --------
    privacy_distortion_curve : the whole trade-off curve, warm-started.

    References
    ----------
    Salamatian et al., "Managing your private and public data", Algorithm 1,
    eq. (4)-(6); the maximal-leakage variant is the worst-case measure of their
    Sec. II-B.

    Examples
    --------
    >>> import numpy as np
    >>> prior = np.array([[0.4, 0.1], [0.1, 0.4]])
    >>> d = 1.0 - np.eye(2)
    >>> res = solve_mapping(prior, d, delta=0.5)
    >>> round(res.leakage, 6), res.status
    (0.0, 'optimal')
    >>> round(solve_mapping(prior, d, delta=0.0).leakage, 4)
    0.2781
    """
    P, D = _check_problem(prior, distortion, leakage, solver)
    tol = check_tol(tol, P, D.shape[1])
    if (delta is None) == (max_leakage is None):
        raise ValueError(
            "give exactly one of delta (a distortion budget) and max_leakage (a privacy target in bits); "
            f"got delta={delta!r}, max_leakage={max_leakage!r}"
        )
    # exact presolve: outputs that another output dominates get no mass (see _presolve)
    prob, reduction = _presolved_problem(P, D)
    # validated in every mode (a malformed start was silently ignored outside the mutual-information delta mode)
    if not isinstance(warm_start, MappingResult):
        check_paired_labels(prior, "prior", "columns", warm_start, "warm_start", "index", "public symbol")
        check_paired_labels(distortion, "distortion", "columns", warm_start, "warm_start", "columns", "output")
    warm = _warm(prob, warm_start, reduction)
    if delta is not None:
        delta = check_budget(delta, "delta")
        if _below_smallest(prob, delta):
            raise InfeasibleBudgetError(
                f"delta={delta!r} is below the smallest feasible expected distortion "
                f"{prob.to_user(prob.delta_min)!r} (= sum_c p(c) min_c_hat d(c, c_hat))",
                smallest_feasible=prob.to_user(prob.delta_min),
            )
        delta_eff = _internal_budget(prob, delta)
        if leakage == "maximal_leakage":
            Pr, cert, name, status = _ml_policy(_solve_ml(prob, delta_eff, None, solver, tol), solver)
        else:
            Pr, cert, name, status = _solve_mi_delta(prob, delta_eff, solver, tol, warm)
        return _make_result(prob, Pr, prior=P, distortion=D, status=status, certificate=cert, solver=name,
                            delta=float(delta), max_leakage=None, kind=leakage, reduction=reduction)
    target = check_budget(max_leakage, "max_leakage")
    try:
        return _target_mode(prob, reduction, P, D, target, leakage, solver, tol)
    except InfeasibleBudgetError as exc:
        _certified_hint(exc, prob, reduction, P, D, leakage, solver, tol)
        raise


def _target_mode(prob, reduction, P, D, target, leakage, solver, tol):
    """The answer to ``max_leakage=target`` (see :func:`solve_mapping`); a refusal's hint raised to the reported
    leakage of the mapping it names (:func:`_reported_hint`)."""
    try:
        if leakage == "maximal_leakage":
            Pr, cert, name, status = _ml_policy(_solve_ml(prob, None, min(target, 1e3), solver), solver)
        else:
            Pr, cert, name, status = _solve_mi_target(prob, min(target, 1e3), solver, tol)
    except InfeasibleBudgetError as exc:
        _reported_hint(exc, prob, reduction, P, leakage)
        raise
    res = _make_result(prob, Pr, prior=P, distortion=D, status=status, certificate=cert, solver=name,
                       delta=None, max_leakage=float(target), kind=leakage, reduction=reduction)
    return _within_target(prob, res, float(target), solver)
