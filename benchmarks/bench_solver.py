"""Fast certified solver vs the plain cvxpy formulation (CLARABEL, SCS), side by side.

Sections (one run prints every table):

1. ``families``: random instances of issue 10's families (Dirichlet(0.1 .. 1) priors,
   |A| = 2 .. 10, k = 8 .. 120, squared-Euclidean / Hamming / L1, forbidden entries),
   solved by ``solver="fast"``, and by cvxpy CLARABEL and SCS at their default
   tolerances; every answer goes through the same certificate (rigorous duality gap
   in bits). Reports certification counts, median / max times and the worst leakage
   difference to the best cvxpy answer.
1b. ``classes`` (not run by default): the same families with |A| = 11 .. 21 private classes
   (an occupation, or gender x seven age bands), k = 30 .. 120, side by side with cvxpy.
2. ``scale``: |A| = 2, k random centres in R^2, squared-Euclidean distortion, a
   Dirichlet(0.5) prior, delta = 5% of the mean distortion (issue 10's k = 300 case),
   for k = 300 (side by side with cvxpy), 1000, 2000 and 5000 (fast only; time untraced,
   memory: the ``tracemalloc`` peak of a second run up to k = 1000, above it the process's
   peak resident memory, marked ``r``; Newton systems factored and barrier rounds, the
   polish's included).
3. ``curve``: a 20-point privacy-distortion curve at k = 300 vs one solve.
5. ``workingset``: instances beyond the full-support limit (k = 250 .. 1000) from several
   families (2-D scale instances, ratings-like cluster profiles in R^30 with |A| = 2 .. 4,
   L1 distances in R^5, Hamming), the fast solver with its warm-started column-generation
   rounds against the same engine restarting every round at the top barrier parameter
   (the engine before stop 20), paired in one run: time, Newton systems, certified gap.
4. ``diagnose``: a fixed seeded set of issue 10's wider families (:func:`wide_instance`:
   |A| = 2 .. 10, k = 8 .. 120, Dirichlet(0.1 .. 1) priors, squared-Euclidean / Hamming /
   L1, forbidden entries, zero-probability inputs, duplicate outputs, budgets from the
   smallest feasible one to beyond the no-privacy point). Per instance, the certified gap
   after each stage of the fast path (barrier + pricing, then the exact KKT polish), the
   time, and ``solve_mapping(solver="auto")``'s outcome (fast path / fallback / flagged);
   with ``--reference`` also the plain cvxpy (CLARABEL, tight) value, to count silent failures.

The machine is shared: absolute times vary with its load (printed with the tables).

Usage::

    python benchmarks/bench_solver.py                 # everything (slow: minutes)
    python benchmarks/bench_solver.py --quick         # small smoke run
    python benchmarks/bench_solver.py --sections scale --ks 300 1000
"""

import argparse
import os
import time
import tracemalloc
import warnings

import numpy as np

from privrelease.mapping import privacy_distortion_curve, squared_euclidean_distortion
from privrelease.mapping._fast import solve_fast
from privrelease.mapping._problem import LN2, Problem
from privrelease.mapping._solver import _cvxpy_candidates, feasible_candidate


def family_instance(seed, na_range=(2, 10), k_range=(8, 120)):
    rng = np.random.default_rng(seed)
    na = int(rng.integers(na_range[0], na_range[1] + 1))
    k = int(rng.integers(k_range[0], k_range[1] + 1))
    prior = rng.dirichlet(np.full(na * k, rng.uniform(0.1, 1.0))).reshape(na, k)
    X = rng.normal(size=(k, 2))
    kind = ("sq-euclidean", "hamming", "l1")[seed % 3]
    if kind == "sq-euclidean":
        d = squared_euclidean_distortion(X)
    elif kind == "hamming":
        d = 1.0 - np.eye(k)
    else:
        d = np.abs(X[:, None, :] - X[None, :, :]).sum(axis=2)
    if rng.random() < 0.5:
        forb = (rng.random((k, k)) < 0.1) & ~np.eye(k, dtype=bool)
        d[forb] = np.inf
    pc = prior.sum(axis=0)
    dfin = np.where(np.isinf(d), np.nan, d)
    dmin = float((pc * np.nanmin(dfin, axis=1)).sum())
    dmean = float((pc * np.nanmean(dfin, axis=1)).sum())
    return prior, d, dmin + rng.uniform(0.01, 0.6) * (dmean - dmin), f"|A|={na} k={k} {kind}"


def wide_instance(seed):
    """One instance of issue 10's wider families (see the module notes, section ``diagnose``)."""
    rng = np.random.default_rng([10, seed])
    na = int(rng.integers(2, 11))
    k = int(rng.integers(8, 121))
    kh = k + int(rng.integers(0, 3))
    prior = rng.dirichlet(np.full(na * k, rng.uniform(0.1, 1.0))).reshape(na, k)
    if rng.random() < 0.2:  # zero-probability public values
        prior[:, rng.choice(k, size=max(1, k // 10), replace=False)] = 0.0
        prior /= prior.sum()
    X = rng.normal(size=(kh, 2))
    if kh > k:
        X[k:] = X[rng.choice(k, size=kh - k, replace=False)]  # duplicate outputs
    A, B = X[:k], X
    kind = ("sq-euclidean", "hamming", "l1")[seed % 3]
    if kind == "sq-euclidean":
        d = squared_euclidean_distortion(A, B)
    elif kind == "hamming":
        d = (np.abs(A[:, None, :] - B[None, :, :]).max(axis=2) > 1e-12).astype(float)
    else:
        d = np.abs(A[:, None, :] - B[None, :, :]).sum(axis=2)
    if rng.random() < 0.4:  # forbidden transitions, never the diagonal
        forb = rng.random((k, kh)) < 0.15
        forb[np.arange(k), np.arange(k)] = False
        d[forb] = np.inf
    pc = prior.sum(axis=0)
    dfin = np.where(np.isfinite(d), d, np.nan)
    dmin = float(np.nansum(pc * np.nanmin(dfin, axis=1)))
    dmax = float(np.nansum(pc * np.nanmax(dfin, axis=1)))
    u = rng.random()
    if u < 0.05:
        delta = dmin
    elif u < 0.1:
        delta = dmin + 1e-10 * (dmax - dmin)
    else:
        delta = dmin + rng.uniform(0.0, 1.2) ** 2 * (dmax - dmin)  # denser near the small budgets
    return prior, d, delta, f"#{seed} |A|={na} k={k} kh={kh} {kind}"


def scale_instance(k, seed=0, kind="logistic"):
    """|A| = 2, k random centres in R^2, squared-Euclidean distortion, delta = 5% of the mean.

    ``kind="logistic"`` (the benchmark's own): Dirichlet(2) marginal p(c) and a noisy
    logistic posterior p(a=1 | c) = sigmoid(2 x_1 + 0.5 eps). ``kind="dirichlet"``
    (issue 10's k = 300 case): the joint p(a, c) drawn from Dirichlet(0.5).
    """
    rng = np.random.default_rng(seed + k)
    X = rng.normal(size=(k, 2))
    d = squared_euclidean_distortion(X)
    if kind == "dirichlet":
        prior = rng.dirichlet(np.full(2 * k, 0.5)).reshape(2, k)
    else:
        pc = rng.dirichlet(np.full(k, 2.0))
        post = 1.0 / (1.0 + np.exp(-(2.0 * X[:, 0] + 0.5 * rng.normal(size=k))))
        prior = np.vstack([pc * (1 - post), pc * post])
    return prior, d, 0.05 * float(d.mean())


def certify(prob, P, delta, tol, pi_hint=None):
    """The certified gap of a solver's point, as ``solve_mapping`` certifies it (the same pull onto the
    budget, hint and refined bound from both starts)."""
    P, pi_hint = feasible_candidate(prob, P, delta, pi_hint)
    gap, _, f = prob.certificate(P, delta, target_bits=tol, pi_hint=pi_hint, both_starts=True)
    return f / LN2, gap


def run_fast(prob, delta, tol):
    t0 = time.perf_counter()
    P, hint = solve_fast(prob, delta, tol=tol, return_hint=True)
    t = time.perf_counter() - t0
    f, gap = certify(prob, P, delta, tol, hint)
    return t, f, gap


def run_cvxpy(prob, delta, tol, name):
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cands = list(_cvxpy_candidates(prob, delta=delta, solvers=(name,), tight=False))
    except Exception:  # noqa: BLE001 - a benchmark reports any failure
        cands = []
    t = time.perf_counter() - t0
    if not cands:
        return t, np.nan, np.nan
    f, gap = certify(prob, cands[0][1], delta, tol)
    return t, f, gap


def load():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def section_families(n, tol, seed, na_range=(2, 10), k_range=(8, 120), title="families"):
    print(f"\n== {title}: {n} random instances, |A| = {na_range[0]}..{na_range[1]}, k = {k_range[0]}..{k_range[1]} "
          f"(load average {load():.1f} on {os.cpu_count()} cores)")
    rows = []
    hdr = f"{'instance':>28} {'fast_s':>7} {'gap':>8} {'CLARABEL_s':>10} {'gap':>8} {'SCS_s':>7} {'gap':>8} {'dL_bits':>9}"
    print(hdr)
    print("-" * len(hdr))
    for i in range(n):
        prior, d, delta, label = family_instance(seed + i, na_range, k_range)
        prob = Problem(prior, d)
        dl = prob.to_internal(delta)
        tf, ff, gf = run_fast(prob, dl, tol)
        tc, fc, gc = run_cvxpy(prob, dl, tol, "CLARABEL")
        ts, fs, gs = run_cvxpy(prob, dl, tol, "SCS")
        best = np.nanmin([fc, fs]) if np.isfinite([fc, fs]).any() else np.nan
        rows.append((tf, gf, tc, gc, ts, gs, ff - best))
        print(f"{label:>28} {tf:>7.2f} {gf:>8.1e} {tc:>10.2f} {gc:>8.1e} {ts:>7.2f} {gs:>8.1e} {ff - best:>9.1e}")
    r = np.array(rows)
    for name, t, g in (("fast", r[:, 0], r[:, 1]), ("CLARABEL", r[:, 2], r[:, 3]), ("SCS", r[:, 4], r[:, 5])):
        print(f"{name:>9}: certified {int(np.sum(g <= tol))}/{n}, time median {np.median(t):.2f} s, max {t.max():.2f} s")
    print(f"fast minus best cvxpy leakage: max {np.nanmax(r[:, 6]):.1e} bits (negative = fast lower)")
    print(f"speed-up vs the better cvxpy solver: median {np.median(np.minimum(r[:, 2], r[:, 4]) / r[:, 0]):.1f}x, "
          f"min {np.min(np.minimum(r[:, 2], r[:, 4]) / r[:, 0]):.1f}x")


class _Counts:
    """Newton systems factored and barrier rounds of the fast path (wraps ``_Barrier``)."""

    def __enter__(self):
        from privrelease.mapping import _fast

        self.cls, self.n = _fast._Barrier, {"newton": 0, "rounds": 0}
        self.orig = (self.cls.factor, self.cls.solve)
        factor, solve = self.orig

        def counted_factor(bar, *a, **kw):
            self.n["newton"] += 1
            return factor(bar, *a, **kw)

        def counted_solve(bar, *a, **kw):
            self.n["rounds"] += 1
            return solve(bar, *a, **kw)

        self.cls.factor, self.cls.solve = counted_factor, counted_solve
        return self.n

    def __exit__(self, *exc):
        self.cls.factor, self.cls.solve = self.orig


def section_scale(ks, tol, cvxpy_max_k, kind):
    print(f"\n== scale ({kind} prior): |A|=2, sq-Euclidean, delta = 5% of mean (load {load():.1f})")
    hdr = (f"{'k':>5} {'solver':>15} {'time_s':>9} {'leakage_bits':>14} {'gap_bits':>9} {'peak_MB':>8} "
           f"{'newton':>6} {'rounds':>6}")
    print(hdr)
    print("-" * len(hdr))
    for k in ks:
        prior, d, delta = scale_instance(k, kind=kind)
        prob = Problem(prior, d)
        dl = prob.to_internal(delta)
        with _Counts() as n:
            tf, ff, gf = run_fast(prob, dl, tol)
        if k <= 1000:
            # memory in a second run: tracemalloc slows every numpy allocation (k = 300: 0.45 s -> 0.98 s),
            # so the timed run above is not traced (nor are the cvxpy runs)
            tracemalloc.start()
            run_fast(prob, dl, tol)
            peak = f"{tracemalloc.get_traced_memory()[1] / 2**20:.0f}"
            tracemalloc.stop()
        else:  # a second run would double the time: the process's peak resident memory so far
            import resource

            peak = f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f}r"
        print(f"{k:>5} {'fast':>15} {tf:>9.2f} {ff:>14.8f} {gf:>9.1e} {peak:>8} {n['newton']:>6} "
              f"{n['rounds']:>6}  (load {load():.1f})", flush=True)
        if k <= cvxpy_max_k:
            res = []
            for name in ("CLARABEL", "SCS"):
                t, f, g = run_cvxpy(prob, dl, tol, name)
                res.append((t, f, g, name))
                print(f"{k:>5} {'cvxpy-' + name:>15} {t:>9.2f} {f:>14.8f} {g:>9.1e} {'':>8}")
            tb = min(r[0] for r in res)
            fb = np.nanmin([r[1] for r in res])
            print(f"{'':>5} speed-up vs the better cvxpy: {tb / tf:.1f}x; leakage fast - best cvxpy {ff - fb:.1e} bits")


def section_curve(k, n_points, tol, cold=False):
    """A 20-point curve (smallest feasible budget to 4x the scale section's budget) vs one solve
    at the scale section's budget; with ``cold`` also every budget solved from scratch (what the
    warm starts and the shared budgets buy)."""
    from privrelease.mapping import solve_mapping

    print(f"\n== curve: {n_points} budgets at k = {k} (load {load():.1f})")
    prior, d, delta = scale_instance(k)
    t0 = time.perf_counter()
    prob = Problem(prior, d)
    run_fast(prob, prob.to_internal(delta), tol)
    t_one = time.perf_counter() - t0
    dmin = prob.to_user(prob.delta_min)
    deltas = np.linspace(dmin, 4 * delta, n_points)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        curve = privacy_distortion_curve(prior, d, deltas, solver="fast", tol=tol)
    t_curve = time.perf_counter() - t0
    print(f"one solve {t_one:.2f} s; curve {t_curve:.2f} s = {t_curve / t_one:.1f}x one solve; "
          f"certified {int((curve['status'] == 'optimal').sum())}/{n_points}; max gap {curve['gap_bits'].max():.1e} bits; "
          f"warnings {len(caught)}")
    if cold:
        times = []
        for dl in deltas:
            t0 = time.perf_counter()
            solve_mapping(prior, d, delta=float(dl), solver="fast", tol=tol)
            times.append(time.perf_counter() - t0)
        print(f"cold: {sum(times):.2f} s for the {n_points} budgets solved from scratch "
              f"(per budget: median {np.median(times):.2f} s, max {max(times):.2f} s at delta = "
              f"{deltas[int(np.argmax(times))]:.3g})")


def section_diagnose(n, tol, seed, reference):
    """Where the fast path ends (see the module notes, section ``diagnose``)."""
    from privrelease.exceptions import ConvergenceWarning
    from privrelease.mapping import solve_mapping
    from threadpoolctl import threadpool_limits

    from privrelease.mapping._checks import check_distortion, check_prior
    from privrelease.mapping._fast import _kkt_polish, _solve_fast

    print(f"\n== diagnose: {n} wide-family instances (load average {load():.1f})")
    hdr = (f"{'instance':>36} {'rel_delta':>9} {'stage1_s':>8} {'gap1':>8} {'polish_s':>8} {'gap2':>8} "
           f"{'auto':>9} {'auto_s':>7}" + (f" {'dL_ref':>9}" if reference else ""))
    print(hdr)
    print("-" * len(hdr))
    counts = {"fast": 0, "fallback": 0, "flagged": 0, "silent": 0}
    t_total = 0.0
    for i in range(n):
        prior, d, delta, label = wide_instance(seed + i)
        prob = Problem(check_prior(prior), check_distortion(d, prior.shape[1]))  # as solve_mapping
        dl = max(prob.to_internal(delta), prob.delta_min)
        rel = (dl - prob.delta_min) / max(prob.delta_max - prob.delta_min, 1e-300)
        t0 = time.perf_counter()
        try:
            with threadpool_limits(limits=1, user_api="blas"):  # as solve_fast runs it
                P, _ = _solve_fast(prob, dl, tol=tol, warm=None, n_neighbours=8, max_rounds=30)
            if np.isfinite(dl) and prob.distortion(P) > dl:
                P = prob.clean(P, dl)
            g1 = prob.certificate(P, dl, target_bits=0.5 * tol)[0]
        except Exception as exc:  # noqa: BLE001 - a diagnostic reports any failure
            print(f"{label:>36} stage 1 raised {type(exc).__name__}: {exc}")
            P, g1 = None, np.nan
        t1 = time.perf_counter() - t0
        g2, t2 = np.nan, 0.0
        if P is not None and g1 > 0.5 * tol and dl > prob.delta_min + 1e-12:
            t0 = time.perf_counter()
            with threadpool_limits(limits=1, user_api="blas"):
                g2 = _kkt_polish(prob, P, dl, tol=tol)[1]
            t2 = time.perf_counter() - t0
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            res = solve_mapping(prior, d, delta)
        ta = time.perf_counter() - t0
        t_total += ta
        warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        if res.status != "optimal":
            outcome = "flagged" if warned else "silent"
        else:
            outcome = "fallback" if res.solver.startswith("cvxpy") else "fast"
        extra = ""
        if reference:
            cands = list(_cvxpy_candidates(prob, delta=dl, solvers=("CLARABEL",)))
            ref = prob.objective(prob.clean(cands[0][1], dl)) / LN2 if cands else np.nan
            dlr = res.leakage - ref
            extra = f" {dlr:>9.1e}"
            if res.status == "optimal" and dlr > tol + 1e-7:
                outcome = "silent"
        counts[outcome] += 1
        print(f"{label:>36} {rel:>9.2e} {t1:>8.2f} {g1:>8.1e} {t2:>8.2f} {g2:>8.1e} {outcome:>9} {ta:>7.2f}{extra}")
    print(f"solve_mapping(solver='auto'): {counts}; total {t_total:.1f} s")
    return counts


def ratings_instance(k, na, seed, frac):
    """Cluster-profile-like centres (rank-6 tastes in R^30 plus noise), squared-Euclidean
    distortion, a Dirichlet(1) p(c) and a softmax posterior driven by the tastes."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(k, 6))
    X = Z @ rng.normal(size=(6, 30)) + 0.3 * rng.normal(size=(k, 30))
    d = squared_euclidean_distortion(X)
    pc = rng.dirichlet(np.full(k, 1.0))
    logits = np.stack([1.5 * Z[:, a % 6] for a in range(na)]) + 0.5 * rng.normal(size=(na, k))
    post = np.exp(logits - logits.max(axis=0))
    post /= post.sum(axis=0)
    return post * pc, d, frac * float(d.mean())


def l1_instance(k, seed, scale=1.0):
    """Uniform points in [0, 1]^5, L1 distortion, a skewed Dirichlet(0.3) p(c), a logistic posterior."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(k, 5))
    d = np.abs(X[:, None, :] - X[None, :, :]).sum(axis=-1)
    pc = rng.dirichlet(np.full(k, 0.3))
    post = 1.0 / (1.0 + np.exp(-(3.0 * X[:, 0] - 1.5 + X[:, 1])))
    return np.vstack([pc * (1 - post), pc * post]), d, 0.03 * scale * float(d.mean())


def hamming_instance(k, seed):
    """|A| = 3, a Dirichlet(0.7) joint, Hamming distortion, delta = 0.3."""
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(3 * k, 0.7)).reshape(3, k), 1.0 - np.eye(k), 0.3


WORKINGSET = [
    ("scale 300 logistic", lambda: scale_instance(300, 0, "logistic")),
    ("scale 300 dirichlet", lambda: scale_instance(300, 0, "dirichlet")),
    ("scale 400 logistic s1", lambda: scale_instance(400, 1, "logistic")),
    ("scale 500 dirichlet s2", lambda: scale_instance(500, 2, "dirichlet")),
    ("scale 600 logistic", lambda: scale_instance(600, 0, "logistic")),
    ("scale 600 dirichlet", lambda: scale_instance(600, 0, "dirichlet")),
    ("ratings 400 |A|=3", lambda: ratings_instance(400, 3, 1, 0.05)),
    ("ratings 400 |A|=2 wide budget", lambda: ratings_instance(400, 2, 2, 0.2)),
    ("ratings 500 |A|=4", lambda: ratings_instance(500, 4, 3, 0.05)),
    ("ratings 300 |A|=2", lambda: ratings_instance(300, 2, 7, 0.05)),
    ("ratings 600 |A|=3", lambda: ratings_instance(600, 3, 9, 0.1)),
    ("L1 500", lambda: l1_instance(500, 3)),
    ("L1 400", lambda: l1_instance(400, 5)),
    ("L1 300 3x budget", lambda: l1_instance(300, 8, 3.0)),
    ("Hamming 300 |A|=3", lambda: hamming_instance(300, 4)),
    ("Hamming 250 |A|=3", lambda: hamming_instance(250, 6)),
    ("scale 1000 logistic", lambda: scale_instance(1000, 0, "logistic")),
    ("scale 1000 dirichlet", lambda: scale_instance(1000, 0, "dirichlet")),
]


def section_workingset(tol, quick=False):
    """Warm-started column-generation rounds against cold restarts, paired instance by instance."""
    import privrelease.mapping._fast as fast

    print(f"\n== working-set instances: warm-started rounds vs cold restarts (load {load():.1f})")
    print(f"{'instance':>30} {'warm s':>7} {'newton':>6} {'gap':>8} {'cold s':>7} {'newton':>6} {'gap':>8} {'|dleak| bits':>12}")
    tot = {True: 0.0, False: 0.0}
    try:
        for label, make in WORKINGSET[:4] if quick else WORKINGSET:
            prior, d, delta = make()
            prob = Problem(prior, d)
            di = prob.to_internal(delta)
            row = {}
            for warm in (True, False):
                fast.WARM_ROUNDS = warm
                with _Counts() as n:
                    t, f, gap = run_fast(prob, di, tol)
                tot[warm] += t
                row[warm] = (t, n["newton"], gap, f)
            print(f"{label:>30} {row[True][0]:>7.2f} {row[True][1]:>6d} {row[True][2]:>8.1e} "
                  f"{row[False][0]:>7.2f} {row[False][1]:>6d} {row[False][2]:>8.1e} {abs(row[True][3] - row[False][3]):>12.1e}")
    finally:
        fast.WARM_ROUNDS = True
    print(f"total: warm {tot[True]:.1f} s, cold {tot[False]:.1f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small smoke run")
    ap.add_argument("--sections", nargs="*", default=["families", "scale", "curve", "workingset"])
    ap.add_argument("--ks", type=int, nargs="*", default=None)
    ap.add_argument("--n-families", type=int, default=20)
    ap.add_argument("--tol", type=float, default=1e-6, help="certified gap (bits) asked of every answer")
    ap.add_argument("--cvxpy-max-k", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-diagnose", type=int, default=40)
    ap.add_argument("--reference", action="store_true", help="diagnose: compare with tight cvxpy CLARABEL")
    ap.add_argument("--curve-k", type=int, default=None, help="curve section's k (default 300; 60 with --quick)")
    ap.add_argument("--curve-cold", action="store_true", help="curve: also solve every budget from scratch")
    ap.add_argument("--prior", choices=["logistic", "dirichlet"], default="logistic",
                    help="scale section's prior (see scale_instance)")
    args = ap.parse_args(argv)
    ks = args.ks or ([30, 60] if args.quick else [300, 1000, 2000, 5000])
    if "families" in args.sections:
        section_families(3 if args.quick else args.n_families, args.tol, args.seed)
    if "classes" in args.sections:  # many private classes (an occupation; gender x seven age bands)
        section_families(3 if args.quick else args.n_families, args.tol, args.seed, (11, 21),
                         (20, 60) if args.quick else (30, 120), title="classes")
    if "scale" in args.sections:
        section_scale(ks, args.tol, args.cvxpy_max_k, args.prior)
    if "curve" in args.sections:
        section_curve(args.curve_k or (60 if args.quick else 300), 20, args.tol, args.curve_cold)
    if "workingset" in args.sections:
        section_workingset(args.tol, args.quick)
    if "diagnose" in args.sections:
        section_diagnose(5 if args.quick else args.n_diagnose, args.tol, args.seed, args.reference)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
