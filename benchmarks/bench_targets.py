"""``solve_mapping(..., max_leakage=L)``: the search bracketed by the cheapest constant mapping (the default for
targets well above 0) against the same search bracketed by the perfect-privacy LP (solved first, as before stop 31),
side by side in one run on the same instances.

Instances: a Dirichlet(0.5) joint of |A| classes and k inputs, squared-Euclidean distortion between random centres
in the plane (|A| x k = 2 x 300, 3 x 500, 4 x 80, 5 x 260, 10 x 120), and the prior ``QuantizedPrivacyMapper``
estimates from ``make_realistic_ratings`` with two private attributes (6 x 4 = 24 classes, 150 clusters, ``--big``
only: a minute per target). Targets: 50 %, 10 % and 1 % of the leakage at the smallest distortion.
Columns: wall time (s), delta solves (``certificate['n_delta_solves']``), status, the LP's own time (s; its cache
is cleared before every run, so each pays for its LP as a single call does), and the difference of the distortions
(each answer certified within 1e-6 of the distortion range).

Usage::

    python benchmarks/bench_targets.py            # about 10 minutes on 2 busy cores
    python benchmarks/bench_targets.py --quick    # the three smaller instances
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_solver_families2 as fam2  # noqa: E402 - the mappers' capture

from privrelease.mapping import _lp, _solver, leakage, solve_mapping  # noqa: E402
from privrelease.mapping._problem import Problem  # noqa: E402


def random_instance(na, k):
    rng = np.random.default_rng(k + na)
    X = rng.normal(size=(k, 2))
    d = ((X[:, None] - X[None]) ** 2).sum(-1)
    return rng.dirichlet(np.full(na * k, 0.5)).reshape(na, k), d


def realistic_instance():
    from privrelease.datasets import make_realistic_ratings
    from privrelease.mappers import QuantizedPrivacyMapper

    X, A, _ = make_realistic_ratings(n_users=2000, n_items=400, random_state=3,
                                     attributes={"a": [0.3, 0.2, 0.2, 0.1, 0.1, 0.1], "b": [0.4, 0.3, 0.2, 0.1]})
    m = QuantizedPrivacyMapper(n_clusters=150, delta=1.0, metric="sqeuclidean", random_state=0)
    return fam2._capture(lambda: m.fit(X, A.to_numpy()))  # the (prior, distortion) the mapper solves with


def timed_lp(calls):
    lp = _solver.perfect_privacy_mapping

    def run(*args, **kwargs):
        t = time.perf_counter()
        out = lp(*args, **kwargs)
        calls.append(time.perf_counter() - t)
        return out

    return run


def one(prior, d, target, lp_first):
    calls = []
    _lp._PP_CACHE.clear()  # the LP's answers are cached per problem: every run pays for its own, as one call does
    share, lp = _solver.LAZY_LP_SHARE, _solver.perfect_privacy_mapping
    _solver.LAZY_LP_SHARE = np.inf if lp_first else share
    _solver.perfect_privacy_mapping = timed_lp(calls)
    try:
        t = time.perf_counter()
        res = solve_mapping(prior, d, max_leakage=target)
        return time.perf_counter() - t, res, sum(calls)
    finally:
        _solver.LAZY_LP_SHARE, _solver.perfect_privacy_mapping = share, lp


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--big", action="store_true", help="add the 24-class realistic instance")
    args = ap.parse_args(argv)
    sizes = [(2, 300), (4, 80), (10, 120)] if args.quick else [(2, 300), (3, 500), (4, 80), (5, 260), (10, 120)]
    instances = [(f"dirichlet {na}x{k}", *random_instance(na, k)) for na, k in sizes]
    if args.big:
        instances.append(("realistic 24 classes, 150 clusters", *realistic_instance()))
    hdr = (f"{'instance':>36} {'share':>6} | {'constant bracket: s':>19} {'solves':>6} {'status':>9} {'LP s':>5} | "
           f"{'LP bracket: s':>13} {'solves':>6} {'status':>9} {'LP s':>5} | {'distortion diff':>15}")
    print(hdr)
    print("-" * len(hdr))
    tot = {True: [0.0, 0], False: [0.0, 0]}
    for name, prior, d in instances:
        prob = Problem(prior / prior.sum(), d)
        i_min = leakage(prior, solve_mapping(prior, d, delta=prob.to_user(prob.delta_min)).mapping)
        for share in (0.5, 0.1, 0.01):
            row = {}
            for lp_first in (False, True):
                t, res, t_lp = one(prior, d, share * i_min, lp_first)
                row[lp_first] = (t, res, t_lp)
                tot[lp_first][0] += t
                tot[lp_first][1] += res.certificate.get("n_delta_solves", 0)
            (t0, r0, l0), (t1, r1, l1) = row[False], row[True]
            print(f"{name:>36} {share:>6} | {t0:>19.1f} {r0.certificate.get('n_delta_solves'):>6} {r0.status:>9} "
                  f"{l0:>5.1f} | {t1:>13.1f} {r1.certificate.get('n_delta_solves'):>6} {r1.status:>9} {l1:>5.1f} | "
                  f"{r0.distortion - r1.distortion:>15.2e}", flush=True)
    print(f"\ntotal: constant bracket {tot[False][0]:.1f} s, {tot[False][1]} delta solves; "
          f"LP bracket {tot[True][0]:.1f} s, {tot[True][1]} delta solves")


if __name__ == "__main__":
    main()
