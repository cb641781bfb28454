"""What perfect privacy must give up when the private attribute moves the users' mean rating.

Usage::

    python benchmarks/bench_bias_floor.py [--shifts 0.05 0.15 0.3] [--seed 0]    # about 2 minutes
    python benchmarks/bench_bias_floor.py --quick     # under a minute: shift 0.15, 2 classes, 2 caps

``--quick`` runs a small configuration (one shift, 0.15 unless ``--shifts`` is given, the 2-class
attribute only, the caps 0 and 0.01 bits) to check that the script works; its figures are a subset of
the full table's.

The users' bias ``b`` (mean rating offset, in stars) is Gaussian within
each class, ``b | a ~ N(beta_a, sd^2)``, with class shifts ``beta_a`` centred over the class
weights and scaled to a weighted root mean square ``shift``, and ``sd`` chosen so that the
population spread stays 0.45 stars (the spread of ``make_realistic_ratings``). On a grid of 49
bias values the library's certified solver (:func:`privrelease.mapping.solve_mapping`,
squared-error distortion, ``max_leakage`` = 0, 0.001, 0.01, 0.05 bits) gives the release of
least distortion under each leakage cap; the table prints the share of the bias variance that
release keeps, ``Var(E[b | release]) / Var(b)`` (the reduction in mean squared error of the
best estimate of ``b`` from the release). The release is a function of the user's bias alone,
as a privacy mapping is of ``c_hat`` (it cannot see the attribute of a user who did not disclose it).
The stand-ins' oracles (the user's own point with her class's offset removed) are in
``bench_frontier.py --floors``.

See docs/frontier.md, section (m).
"""

import argparse
import warnings

import numpy as np
from scipy.stats import norm

from privrelease.mapping import solve_mapping

LEAKAGES = (0.0, 0.001, 0.01, 0.05)
CLASSES = {2: [0.6, 0.4], 3: [0.45, 0.35, 0.2], 6: [0.25, 0.2, 0.2, 0.15, 0.1, 0.1]}


def bias_model(weights, shift, rng, spread=0.45, n_grid=49):
    """Joint prior ``p(a, b)`` of the class and the bias on a grid, and the grid."""
    pa = np.asarray(weights, dtype=float)
    raw = rng.normal(size=pa.size)
    raw -= pa @ raw
    beta = raw * shift / np.sqrt(pa @ raw ** 2)
    sd = np.sqrt(spread ** 2 - shift ** 2)
    grid = np.linspace(-4 * spread, 4 * spread, n_grid)
    dens = norm.pdf((grid[None, :] - beta[:, None]) / sd)
    return pa[:, None] * dens / dens.sum(axis=1, keepdims=True), grid


def kept_variance(prior, grid, max_leakage):
    """Share of ``Var(b)`` that the least-distortion release under ``max_leakage`` bits keeps."""
    px = prior.sum(axis=0)
    mean = float(px @ grid)
    var = float(px @ grid ** 2) - mean ** 2
    res = solve_mapping(prior, (grid[:, None] - grid[None, :]) ** 2, max_leakage=max_leakage)
    joint = px[:, None] * res.mapping
    q = joint.sum(axis=0)
    used = q > 1e-15
    cond_mean = (joint[:, used] * grid[:, None]).sum(axis=0) / q[used]
    return float(q[used] @ (cond_mean - mean) ** 2) / var, res.status


def section_model(shifts, seed, classes=CLASSES, leakages=LEAKAGES):
    rng = np.random.default_rng(seed)
    print("\nShare of the bias variance a release keeps (Var(E[b | release]) / Var(b)); "
          "b | a ~ N(beta_a, sd^2), population spread 0.45 stars\n")
    print("| classes | shift RMS (stars) | I(A; b) bits | " + " | ".join(f"{L} bits" for L in leakages) + " |")
    print("|---" * (3 + len(leakages)) + "|")
    for na, weights in classes.items():
        for shift in shifts:
            prior, grid = bias_model(weights, shift, rng)
            px, pa = prior.sum(axis=0), prior.sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                mi = float(np.nansum(prior * np.log2(prior / (pa[:, None] * px[None, :]))))
            cells = []
            for L in leakages:
                if L >= mi:
                    cells.append("100% (cap above I)")
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    kept, status = kept_variance(prior, grid, L)
                cells.append(f"{kept:.1%}" + ("" if status == "optimal" else f" ({status})"))
            print(f"| {na} | {shift} | {mi:.3f} | " + " | ".join(cells) + " |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shifts", type=float, nargs="*", default=None,
                    help="weighted root mean square of the class shifts, in stars (default 0.05 0.15 0.3; "
                         "0.15 with --quick)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the shifts' directions")
    ap.add_argument("--quick", action="store_true",
                    help="small, fast configuration: one shift, the 2-class attribute, caps 0 and 0.01 bits")
    args = ap.parse_args(argv)
    if args.quick:
        shifts = [0.15] if args.shifts is None else args.shifts
        section_model(shifts, args.seed, classes={2: CLASSES[2]}, leakages=(0.0, 0.01))
    else:
        section_model([0.05, 0.15, 0.3] if args.shifts is None else args.shifts, args.seed)


if __name__ == "__main__":
    main()
