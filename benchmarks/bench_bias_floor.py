"""What perfect privacy must give up when the private attribute moves the users' mean rating.

Usage::

    python benchmarks/bench_bias_floor.py --model            # about 1 minute
    python benchmarks/bench_bias_floor.py --oracle "entangled, age band" [--seeds 0 1]   # about 2 minutes a set

``--model`` (no data): the users' bias ``b`` (mean rating offset, in stars) is Gaussian within
each class, ``b | a ~ N(beta_a, sd^2)``, with class shifts ``beta_a`` centred over the class
weights and scaled to a weighted root mean square ``shift``, and ``sd`` chosen so that the
population spread stays 0.45 stars (the spread of ``make_realistic_ratings``). On a grid of 49
bias values the library's certified solver (:func:`privrelease.mapping.solve_mapping`,
squared-error distortion, ``max_leakage`` = 0, 0.001, 0.01, 0.05 bits) gives the release of
least distortion under each leakage cap; the table prints the share of the bias variance that
release keeps, ``Var(E[b | release]) / Var(b)`` (the reduction in mean squared error of the
best estimate of ``b`` from the release). The release is a function of the user's bias alone,
as a privacy mapping is of ``c_hat`` (it cannot see the attribute of a user who did not disclose it).

``--oracle``: on the stand-ins of ``bench_frontier.py`` (``_rule_sets()``; the default mapper and
protocol of its ``--floors`` mode, one draw per seed), the RMSE increase of the test user's release
beside two oracles at the user's own taste point: with her class's mean shift removed (an
attribute-free release of unlimited resolution that needs her attribute) and with the
between-class directions set to the labeled users' mean (one that does not).

See docs/frontier.md, section (m).
"""

import argparse
import warnings

import numpy as np
import scipy.sparse as sp
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


def section_model(shifts, seed):
    rng = np.random.default_rng(seed)
    print("\nShare of the bias variance a release keeps (Var(E[b | release]) / Var(b)); "
          "b | a ~ N(beta_a, sd^2), population spread 0.45 stars\n")
    print("| classes | shift RMS (stars) | I(A; b) bits | " + " | ".join(f"{L} bits" for L in LEAKAGES) + " |")
    print("|---" * (3 + len(LEAKAGES)) + "|")
    for na, weights in CLASSES.items():
        for shift in shifts:
            prior, grid = bias_model(weights, shift, rng)
            px, pa = prior.sum(axis=0), prior.sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                mi = float(np.nansum(prior * np.log2(prior / (pa[:, None] * px[None, :]))))
            cells = []
            for L in LEAKAGES:
                if L >= mi:
                    cells.append("100% (cap above I)")
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    kept, status = kept_variance(prior, grid, L)
                cells.append(f"{kept:.1%}" + ("" if status == "optimal" else f" ({status})"))
            print(f"| {na} | {shift} | {mi:.3f} | " + " | ".join(cells) + " |", flush=True)


def section_oracle(set_names, seeds, cv=3):
    import bench_frontier as BF
    from privrelease.evaluation._protocol import (_check_recommender, _fit_mapper, _prepare_split, _release,
                                                  _with_seed)
    from privrelease.evaluation._targets import joint_attribute

    for name in set_names:
        for seed in seeds:
            X, y, target = BF._rule_sets()[name]()
            split = _prepare_split(X, y, opt_in_fraction=0.5, cv=cv, heldout_fraction=0.1, rating_range=(1, 5),
                                   random_state=seed, mapper_target=target)
            params = BF._resolve_per(BF.RULE_CONFIGS["default"], split.X_opt.shape[0])
            m = _fit_mapper(BF._make_mapper(params, random_state=seed), split)
            emb = m.embedding_
            labels = split.y
            if target == "joint":
                labels = joint_attribute(split.y)[0]
            elif target is not None:
                labels = split.y[:, split.names.index(target)]
            labels = np.asarray(labels.tolist()) if labels.dtype == object else labels
            y_opt, y_prot = labels[split.opt_in], labels[split.protected]
            E_lab = m._embed(split.X_opt)
            E_lab = np.asarray(E_lab.toarray() if sp.issparse(E_lab) else E_lab)
            centre = E_lab.mean(axis=0)
            shift = {a: E_lab[y_opt == a].mean(axis=0) - centre for a in np.unique(y_opt)}

            def own(rows, classes=None, class_free=False):
                """The user's own point on the items of her cluster's profile (an oracle)."""
                c = m._quantize(rows)
                E = emb.coefficients(rows) @ emb.basis_chol_
                if classes is not None:
                    E = E - np.stack([shift[a] for a in classes])
                if class_free:
                    V = m.attribute_directions_
                    E = E - ((E - centre) @ V.T) @ V
                pred = np.clip(emb.predicted_ratings(E), *m.rating_range_)
                return sp.csr_matrix(np.where(m.release_profiles_[c].toarray() != 0, pred, 0.0))

            res = {}
            rec0 = _check_recommender(None)
            for k in range(cv):
                test = split.folds[k]
                others = np.setdiff1d(np.arange(split.protected.size), test)
                X_other, visible = split.X_prot[others], split.visible[test]
                rec = _with_seed(rec0, split.fold_seeds[k]).fit(sp.vstack([split.X_opt, X_other], format="csr"))
                tests = {"original": visible, "released": _release(m, visible, (1, 5)),
                         "nothing": sp.csr_matrix(visible.shape), "own point": own(visible),
                         "own point, own class's shift removed": own(visible, y_prot[test]),
                         "own point, class directions at the mean": own(visible, class_free=True)}
                for tname, rows in tests.items():
                    res.setdefault(tname, []).append(rec.rmse(rows, split.heldout[test]))
            base = np.mean(res["original"])
            if seed == seeds[0]:
                print(f"\n{name} (default mapper, perfect privacy; training rows: the other protected users' "
                      "original ratings)\n")
                print("| seed | clusters | " + " | ".join(n for n in res if n != "original") + " |")
                print("|---" * (1 + len(res)) + "|")
            print(f"| {seed} | {m.n_clusters_} | " + " | ".join(
                f"{100 * (np.mean(v) / base - 1):+.2f}%" for n, v in res.items() if n != "original") + " |",
                flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="store_true", help="the one-dimensional bias model (no data)")
    ap.add_argument("--shifts", type=float, nargs="*", default=[0.05, 0.15, 0.3])
    ap.add_argument("--oracle", nargs="*", default=None, help="bench_frontier.py set names")
    ap.add_argument("--seeds", type=int, nargs="*", default=[0])
    args = ap.parse_args(argv)
    if not args.model and args.oracle is None:
        args.model = True
    if args.model:
        section_model(args.shifts, args.seeds[0])
    if args.oracle:
        section_oracle(args.oracle, args.seeds)


if __name__ == "__main__":
    main()
