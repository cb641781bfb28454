"""QuantizedPrivacyMapper's frontier: RMSE cost at perfect privacy of each idea, side by side.

Usage::

    python benchmarks/bench_frontier.py [--quick] [--attacks]
    python benchmarks/bench_frontier.py --ideas [--seeds 0 1 2]    # about 12 minutes
    python benchmarks/bench_frontier.py --floors                   # about 2 minutes
    python benchmarks/bench_frontier.py --rule [--sets ...] [--configs ...] [--leakages 0 0.01]

For every data set (``make_ratings`` with a 2-, 3- and 6-class attribute in the
setting of docs/frontier.md, the Politics-and-TV preset, and
``make_realistic_ratings`` when the library has it) prints one row: the
relative RMSE increase of releasing nothing, of the previous default
(``profile="cluster"``), and of each frontier configuration, all at perfect
privacy (the default ``max_leakage=0``), measured by
:func:`privrelease.evaluation.rmse_cost` (Surprise SVD, half the users opted in,
``cv`` folds, one protocol draw shared by every column). ``--attacks`` adds a
second table, the worst adaptive attacker's AUC of each configuration
(:func:`privrelease.evaluation.privacy_utility_curve`; slower). ``--quick``:
the 2-class set and Politics-and-TV, three configurations, 2 folds.

``--ideas`` (issue 13, a binary attribute: gender of ``make_realistic_ratings`` and
Politics-and-TV): the default and ``prior="model"`` at 0, 0.01 and 0.03 bits beside two releases that are
NOT functions of ``c_hat`` alone (the user's own support pattern; her own ratings on
items that look uninformative), paired over protocol seeds, with the worst of the fixed
and adaptive logistic attackers. ``--floors``: where the RMSE cost comes from (what the
other protected users release for training vs what the test user releases) and oracle
releases at the user's own taste point. See docs/frontier.md, section (f).

``--rule`` (issue 13, sections (h) and (i)): ``n_clusters="heldout"`` against the default and the other
configurations named by ``--configs`` (keys of ``RULE_CONFIGS``) on ``--sets`` (realistic gender, age
band, gender x age band protected jointly, Politics-and-TV) at ``--leakages`` bits, paired over
``--seeds``; the worst of the fixed and adaptive logistic AND random-forest attackers; each line also
gives the number of clusters the mapper fitted on that draw's opted-in users. Example::

    python benchmarks/bench_frontier.py --rule --sets "Politics-and-TV" --configs default heldout

Section (l) (issue 13, where the multi-class cost at perfect privacy comes from): ``--rule`` also prints the
fitted mapping's ``distortion_`` (the LP's objective); the configurations ``"oracle, ..."`` and ``"oracle
(protected), ..."`` count the class x cluster prior on the TRUE labels of all users / of the protected users (oracles,
``_OraclePrior``: floors for a better prior estimate, never releases), ``"split xN, ..."`` cut each attribute-free
cell into N bins along the first between-class direction (the library's ``class_bins=N``, certified), and
``--floors`` adds an oracle release at the user's own point less her TRUE class's mean offset.

Section (o) (issue 13, does the split leak more on the attacked users?): ``--excess`` prints, per draw, set, budget
and configuration, the fitted mapping's claimed ``leakage_``, the plug-in leakage ``I(A; C_hat)`` on the PROTECTED
users under their TRUE labels (the draw of ``c_hat`` integrated out) less its mean under ``--n-perms`` label
permutations (the finite-sample bias), in bits, its permutation p-value and the number of cells; then, per set and
budget, each configuration's excess paired against the first one's (mean, 95 % t interval, sign count, Wilcoxon).
No recommender and no attacker: fast. ``"split heldout, attribute_free, k=50"`` is the split guarded by
``class_bins="heldout"``; its lines also give the bins kept and each candidate's test (excess over the unsplit cells
plus noise, held against ``heldout_tolerance``). Example::

    python benchmarks/bench_frontier.py --excess --sets "entangled, age band" --configs default \
        "split x2, attribute_free, k=50" "plain, k=100" --seeds $(seq 0 19)

Section (r): ``--floors`` adds the Gaussian floor ``E[x | P x]`` (the class directions replaced by their within-class
regression on the other coordinates, fitted on the labeled users: the least any perfectly private release loses under
a Gaussian model); ``"oblique removal"`` (``_ObliqueRemoval``) clusters and assigns on that map instead of the
orthogonal projection; ``"additive span"`` (``_AdditiveSpan``, a joint attribute) removes only the span of each
attribute's own class offsets.

Section (s): ``"significant span"`` (``_SignificantSpan``) removes only the between-class directions whose Fisher
eigenvalue exceeds the 95th percentile of the largest one under 50 label permutations (permutations seeded from the
protocol seed); the library's ``class_directions="auto"`` is that rule beyond two classes, so ``"default"`` measures
it since section (s) and ``"all directions"`` the whole span (the default before). ``--rule`` and ``--excess`` print
the directions removed (``dirs=``), and for the rule its eigenvalues against the null's quantile.

Section (t): the library's rule now compares the eigenvalues with a closed form (the largest root's 95th percentile by
Johnstone's Tracy-Widom approximation), so ``"default"`` no longer depends on the seed; ``"significant span"`` keeps
the permutation rule of section (s) for the record. ``"significant, floor 1"`` (``_FloorOne``) removes the leading
direction where the rule keeps none (beyond two classes).

Section (u): ``--floors`` first prints, for an attribute-free fit, where its loss goes in the embedding's squared units
on the protected users (``_decomposition``: the floor, the cells without the mapping, finer cells of ``P x``, the
release; the counted class x cell dependence against its permutation mean) and adds the matching oracle columns;
``"prior='model', k=K"`` is the library's model prior on the attribute-free cells, ``"model on cells, k=K"``
(``_ModelOnCells``) the model fitted on the cells' own coordinates ``P x``.

Section (v): the cells in the ratings' metric (squared distances of predicted ratings weighted by each item's share of
the labeled users' ratings, as the RMSE's held-out ratings are; ``_RatingsMetricEmbedding``). ``"ratings metric"``
(``_RatingsMetric``) moves the whole fit there (directions, cells, the LP's distortion, profiles); ``"ratings metric,
cells only"`` (``_RatingsMetricCells``) only the k-means of ``P x`` and the assignment; ``", 90% variance"`` keeps the
leading principal directions of the mapped labeled rows holding 90 % of their variance (``rank=`` in ``--rule``);
``"embedding metric, cells only, 90% variance"`` the same reduction in the embedding's metric; ``"ratings metric,
oblique cells"`` the cells of ``E[x | P x]`` in that metric. ``--floors``' decomposition also prints each loss in the
ratings' metric and adds k-means cells of ``P x`` cut in it.

Section (n): ``"default, n_refine=3"`` and ``"split x2, attribute_free, k=50, n_refine=3"`` add section (b)'s
free-support barycenter refinement of the output points; ``--rule`` then also prints the refinement steps kept.
"""

import argparse
import time
import warnings
from unittest import mock

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, clone

from privrelease import datasets
from privrelease.evaluation import privacy_utility_curve, rmse_cost
from privrelease.evaluation._protocol import _check_recommender, _fit_mapper, _prepare_split, _release, _with_seed
from privrelease.mappers import QuantizedPrivacyMapper
from privrelease.mappers import _quantized as _quantized_module
from privrelease.mappers._quantize import TasteEmbedding
from privrelease.mappers._quantized import _heldout_null, _heldout_statistic
from privrelease.utils import check_random_source

PROPORTIONS = {2: [0.6, 0.4], 3: [0.45, 0.35, 0.2], 6: [0.25, 0.2, 0.2, 0.15, 0.1, 0.1]}

CONFIGS = {
    "old default (cluster)": dict(profile="cluster"),
    "posterior (new default)": dict(),
    "posterior + 3 refinements": dict(n_refine=3),
    "posterior, k=100": dict(n_clusters=100),
    "posterior, k=100, sqeucl., 3 ref.": dict(n_clusters=100, metric="sqeuclidean", n_refine=3),
    "cluster, k=100": dict(profile="cluster", n_clusters=100),
}
QUICK = ("old default (cluster)", "posterior (new default)", "posterior, k=100")


def _data_sets(quick):
    out = {}
    for nc in (2,) if quick else (2, 3, 6):
        X, y, *_ = datasets.make_ratings(
            n_users=1000, n_items=1000, n_factors=10, attribute_strength=0.5, attribute_proportion=PROPORTIONS[nc],
            mean_ratings_per_user=60, activity_skew=1.2, popularity_skew=1.1, noise=0.8, random_state=1)
        out[f"make_ratings, {nc} classes"] = (X, y)
    X, y = datasets.make_politics_tv(random_state=0)[:2]
    out["Politics-and-TV"] = (X, y)
    if not quick and hasattr(datasets, "make_realistic_ratings"):
        X, y = datasets.make_realistic_ratings(random_state=0)[:2]
        out["make_realistic_ratings"] = (X, y)
    return out


def _table(title, columns, rows):
    print(f"\n{title}\n")
    print("| data set | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, values in rows.items():
        print(f"| {name} | " + " | ".join(values) + " |")


# ------------------------------------------------------------------ --ideas / --floors (issue 13, binary attribute)
# Two diagnostic releases that are NOT functions of c_hat alone (no certificate): measured to show what they would
# buy and what they leak; neither is in the library.
class _SupportRelease(TransformerMixin, BaseEstimator):
    """The mixture prediction of ``c_hat`` written on the user's OWN rated items (keeps her support pattern)."""

    def __init__(self, max_leakage=None, random_state=None):
        self.max_leakage = max_leakage
        self.random_state = random_state

    def fit(self, X, y):
        self.mapper_ = QuantizedPrivacyMapper(max_leakage=self.max_leakage, random_state=self.random_state).fit(X, y)
        m = self.mapper_
        self.values_ = np.clip(m.embedding_.predicted_ratings(m.profile_weights_.T @ m.cluster_centers_),
                               *m.rating_range_)
        return self

    def transform(self, X):
        m, X = self.mapper_, sp.csr_matrix(X, dtype=np.float64)
        c_hat = m._sample(m._quantize(X), check_random_source(m.random_state))
        out = X.copy()
        c = c_hat[np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))]
        k = m.n_clusters_  # c_hat == k is the empty profile
        out.data = np.where(c < k, self.values_[np.minimum(c, k - 1), X.indices], 0.0)
        out.eliminate_zeros()
        return out


class _MixingRelease(TransformerMixin, BaseEstimator):
    """Own ratings on the items whose class difference looks like noise, the mapper's release elsewhere.

    An item is "free" when, on the opted-in users, both the share of each class rating it and
    the mean rating of each class differ from the rest by less than ``z_max`` standard errors
    (one-vs-rest z statistics). The mapper is fitted and applied on the other items only.
    """

    def __init__(self, z_max=1.0, max_leakage=None, random_state=None):
        self.z_max = z_max
        self.max_leakage = max_leakage
        self.random_state = random_state

    def fit(self, X, y):
        X, y = sp.csr_matrix(X, dtype=np.float64), np.asarray(y)
        B = X.copy()
        B.data[:] = 1.0
        X2 = X.multiply(X).tocsr()
        z = np.zeros(X.shape[1])
        for c in np.unique(y):
            a = y == c
            n1, n0 = (np.asarray(B[s].sum(axis=0)).ravel() for s in (a, ~a))
            s1, s0 = (np.asarray(X[s].sum(axis=0)).ravel() for s in (a, ~a))
            p = (n1 + n0) / y.size
            se = np.sqrt(np.maximum(p * (1 - p) * (1 / a.sum() + 1 / (~a).sum()), 1e-12))
            z_rated = (n1 / a.sum() - n0 / (~a).sum()) / se
            n = np.maximum(n1 + n0, 1)
            var = np.maximum(np.asarray(X2.sum(axis=0)).ravel() / n - ((s1 + s0) / n) ** 2, 0.25)
            both = (n1 > 0) & (n0 > 0)
            z_value = np.where(both, (s1 / np.maximum(n1, 1) - s0 / np.maximum(n0, 1))
                               / np.sqrt(var * (1 / np.maximum(n1, 1) + 1 / np.maximum(n0, 1))), 0.0)
            z = np.maximum(z, np.maximum(np.abs(z_rated), np.abs(z_value)))
        self.free_ = z < self.z_max
        self.mapper_ = QuantizedPrivacyMapper(max_leakage=self.max_leakage, random_state=self.random_state)
        self.mapper_.fit(X @ sp.diags((~self.free_).astype(float)), y)
        return self

    def transform(self, X):
        X = sp.csr_matrix(X, dtype=np.float64)
        keep, free = sp.diags((~self.free_).astype(float)), sp.diags(self.free_.astype(float))
        out = sp.csr_matrix(sp.csr_matrix(self.mapper_.transform(sp.csr_matrix(X @ keep))) @ keep + X @ free)
        out.eliminate_zeros()
        return out


IDEAS = {
    "default (certified)": lambda: QuantizedPrivacyMapper(random_state=0),
    "prior='model', k=auto (certified)": lambda: QuantizedPrivacyMapper(prior="model", random_state=0),
    "own support pattern (not certified)": lambda: _SupportRelease(random_state=0),
    "mixing, z < 1 (not certified)": lambda: _MixingRelease(1.0, random_state=0),
    "mixing, z < 0.5 (not certified)": lambda: _MixingRelease(0.5, random_state=0),
}


def _binary_sets():
    X, A, _ = datasets.make_realistic_ratings(random_state=0)
    return {"realistic, gender": (X, A["gender"].to_numpy()),
            "Politics-and-TV": datasets.make_politics_tv(random_state=0)[:2]}


def _ideas(seeds, cv):
    """Paired over protocol seeds: RMSE increase and worst logistic AUC (fixed and adaptive) at 0 / 0.01 / 0.03 bits."""
    rows = {}
    for data_name, (X, y) in _binary_sets().items():
        for name, make in IDEAS.items():
            cells = []
            for seed in seeds:
                f = privacy_utility_curve(make(), X, y, max_leakages=[0.0, 0.01, 0.03], cv=cv,
                                          attack_models=("logistic",), random_state=seed, verbose=0).frame
                auc = np.maximum(f["worst_auc_fixed"], f["worst_auc_adaptive"])
                cells.append([f"{100 * r:+.2f}% / {a:.3f}" for r, a in zip(f["rel_increase_released"], auc)])
                print(f"  {data_name:20s} {name:40s} seed {seed}: {cells[-1]}", flush=True)
            rows[f"{data_name}, {name}"] = [", ".join(c[i] for c in cells) for i in range(3)]
    _table(f"RMSE increase / worst logistic AUC per protocol seed {list(seeds)} (cv={cv})",
           ["0 bits", "0.01 bits", "0.03 bits"], rows)


def _floors(cv, sets=None, configs=("default",), seed=0):
    """Where the cost comes from: training rows vs the test user's fold-in, and oracle releases (no privacy).

    ``sets``: names of ``_rule_sets()`` (default: the two binary sets); ``configs``: keys of ``RULE_CONFIGS``.
    """
    if sets is None:
        todo = [(n, (X, y, None), "default") for n, (X, y) in _binary_sets().items()]
    else:
        all_sets = _rule_sets()
        todo = [(n, all_sets[n](), c) for n in sets for c in configs]
    for data_name, (X, y, target), config in todo:
        split = _prepare_split(X, y, opt_in_fraction=0.5, cv=cv, heldout_fraction=0.1, rating_range=(1, 5),
                               random_state=seed, mapper_target=target)
        params = _resolve_per(RULE_CONFIGS[config], split.X_opt.shape[0])
        m = _fit_mapper(_make_mapper(params, random_state=seed), split)
        data_name = f"{data_name} ({config}, k={m.n_clusters_}, seed {seed})"
        emb = m.embedding_

        E_lab = m._embed(split.X_opt)
        E_lab = np.asarray(E_lab.toarray() if sp.issparse(E_lab) else E_lab)
        E_mean = E_lab.mean(axis=0)
        # section (l): the labeled users' class means in the embedding (the mapper's label space), and the TRUE
        # class of the test users of the current fold (set in the loop below): an oracle that knows the class
        y_all = _oracle_population(split)[1]
        a_lab = np.searchsorted(m.classes_, y_all[split.opt_in])
        offsets = np.array([E_lab[a_lab == a].mean(axis=0) - E_mean for a in range(m.classes_.size)])
        # section (r): the Gaussian floor E[x | P x] (P the orthogonal projection off span(D), D the class-mean
        # offsets): the V-coordinates replaced by their within-class regression on the rest, S pooled within class
        L_gauss, floor_note = _gaussian_floor_map(E_lab, a_lab, offsets)
        # the joint attribute: the floor when the classes' means are additive in the attributes (span(D) = the sum
        # of the spans of each attribute's own class offsets, 1 + 2 directions for gender x age band)
        L_add = None
        y_raw = np.asarray(split.y)
        if split.mapper_target == "joint" and y_raw.ndim == 2:
            marginal = [E_lab[y_raw[split.opt_in, j] == v].mean(axis=0) - E_mean
                        for j in range(y_raw.shape[1]) for v in np.unique(y_raw[split.opt_in, j])]
            L_add, note = _gaussian_floor_map(E_lab, a_lab, offsets, span=np.array(marginal))
            floor_note += "\nadditive span: " + note
        state = {}
        # section (u): where the default's cost above the floor goes, in the embedding's squared units on the
        # protected users, and the matching oracle releases (cells without the mapping, finer cells, the release's
        # point on the user's own cell's profile items)
        V_m = m.attribute_directions_
        L_cell = None
        if V_m.shape[0] and not sp.issparse(E_lab):
            L_cell = _oblique_map(_pooled_within(E_lab, a_lab), V_m)
            decomposition, fine_cells = _decomposition(m, split, E_lab, E_mean, L_cell, seed)
            print(decomposition)
        rng_chat = np.random.default_rng(seed)
        Z = m.profile_weights_.T @ m.cluster_centers_  # the release's point of each output, E[x | c_hat = j]
        Z = np.vstack([Z, np.repeat(E_mean[None, :], m.mapping_.shape[1] - Z.shape[0], axis=0)])

        def own(rows, bias_only=False, taste_only=False, class_free=False, class_offset=False, gaussian=None,
                replace=None):
            """Prediction at the user's own taste point on the items of her cluster's profile (an oracle).

            ``class_free``: with the between-class directions (``attribute_directions_``) set to the labeled
            users' mean, what a release of unlimited resolution keeps when it must not carry them. ``gaussian``
            (section (r)): the map ``L`` of ``E[x | P x]`` under the labeled users' Gaussian model, the best a
            release independent of the class can keep (first order in the class shifts)."""
            c = m._quantize(rows)
            coef = emb.coefficients(rows)
            centre = np.linalg.solve(emb.basis_chol_.T, m.cluster_centers_.T).T[c]
            if bias_only:
                coef[:, 1:] = 0.0
            if taste_only:
                coef[:, 0] = centre[:, 0]
            E = coef @ emb.basis_chol_
            if class_free:
                V = m.attribute_directions_
                E = E - ((E - E_mean) @ V.T) @ V
            if class_offset:  # her own point less her TRUE class's mean offset (what a class-blind release keeps)
                E = E - offsets[state["a"]]
            if gaussian is not None:
                E = E_mean + (E - E_mean) @ gaussian.T
            if replace is not None:  # section (u): a point standing for the user's cell, her own point unused
                E = replace(E, c)
            pred = np.clip(emb.predicted_ratings(E), *m.rating_range_)
            return sp.csr_matrix(np.where(m.release_profiles_[c].toarray() != 0, pred, 0.0))

        rel = {"original": lambda r: r, "released": lambda r: _release(m, r, (1, 5)),
               "nothing": lambda r: sp.csr_matrix(r.shape),
               "oracle: own point": own, "oracle: own bias, no taste": lambda r: own(r, bias_only=True),
               "oracle: own taste, centre's bias": lambda r: own(r, taste_only=True)}
        if m.attribute_directions_.shape[0]:
            rel["oracle: own point, class directions at the mean"] = lambda r: own(r, class_free=True)
        if L_gauss is not None:
            rel["oracle: own point, Gaussian floor"] = lambda r: own(r, gaussian=L_gauss)
        if L_add is not None:
            rel["oracle: own point, Gaussian floor, additive span"] = lambda r: own(r, gaussian=L_add)
        rel["oracle: own point less her class's mean offset"] = lambda r: own(r, class_offset=True)
        if L_cell is not None:
            # section (u): the cells without the mapping (not private: the counted prior's dependence is kept),
            # their floor map (the cell's E[x | P x]), 200 finer cells of P x, and the release's point
            rel["oracle: her cell's centre, no mapping"] = lambda r: own(r, replace=lambda E, c: m.cluster_centers_[c])
            rel["oracle: her cell's E[x | P x], no mapping"] = lambda r: own(
                r, replace=lambda E, c: E_mean + (m.cluster_centers_[c] - E_mean) @ L_cell.T)
            for k_fine, fine in fine_cells.items():
                rel[f"oracle: E[x | P x] of {k_fine} cells, no mapping"] = (
                    lambda r, fine=fine: own(r, replace=lambda E, c: fine(E)))
            rel["oracle: the release's point (c_hat drawn)"] = lambda r: own(r, replace=lambda E, c: Z[
                [rng_chat.choice(Z.shape[0], p=m.mapping_[ci] / m.mapping_[ci].sum()) for ci in c]])
        res = {}
        rec0 = _check_recommender(None)
        for k in range(cv):
            test = split.folds[k]
            others = np.setdiff1d(np.arange(split.protected.size), test)
            X_other, visible = split.X_prot[others], split.visible[test]
            state["a"] = np.searchsorted(m.classes_, y_all[split.protected[test]])
            for train in ("original", "released", "nothing"):
                rec = _with_seed(rec0, split.fold_seeds[k]).fit(
                    sp.vstack([split.X_opt, rel[train](X_other)], format="csr"))
                for name, f in rel.items():
                    if train != "original" and name.startswith("oracle"):
                        continue
                    res.setdefault((train, name), []).append(rec.rmse(f(visible), split.heldout[test]))
        base = np.mean(res[("original", "original")])
        print(f"\n{data_name}: RMSE increase by what the other protected users release (rows) and what the "
              "test user releases (columns), perfect privacy, one protocol draw\n")
        names = list(rel)
        if floor_note:
            print(floor_note + "\n")
        print("| training rows \\ test user | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for train in ("original", "released", "nothing"):
            print(f"| {train} | " + " | ".join(
                f"{100 * (np.mean(res[(train, n)]) / base - 1):+.2f}%" if (train, n) in res else "-"
                for n in names) + " |")


def _decomposition(m, split, E_lab, E_mean, L, seed, fine_ks=(50, 100, 200)):
    """Section (u): where a fitted attribute-free mapper's loss goes, in the embedding's squared units, mean over the
    PROTECTED users' points ``x`` (their visible ratings): releasing nothing (``x`` against the labeled mean), the
    Gaussian floor ``E[x | P x]`` (``L``, the mapper's class directions), the mapper's cells without the mapping (the
    member mean; its floor map ``E[x | P x]`` of the cell), k-means cells of ``P x`` on the labeled users (their floor
    map), and the release: ``sum_j p(j | c) |x - z_j|^2`` with ``z_j = E[x | c_hat = j]`` the release's point, and
    the same with ``z_j`` floor-mapped. Returns the note and, per number of finer cells, a function giving each row's
    cell's floor-mapped mean (rows in the embedding)."""
    from sklearn.cluster import KMeans

    x = m._embed(split.X_prot)
    x = np.asarray(x.toarray() if sp.issparse(x) else x)
    V = m.attribute_directions_
    proj = lambda E: E - ((E - E_mean) @ V.T) @ V  # noqa: E731
    fmap = lambda E: E_mean + (E - E_mean) @ L.T  # noqa: E731
    # section (v): each loss also in the ratings' metric (items weighted by their share of the labeled users'
    # ratings, as the RMSE's held-out ratings are), the map T from the embedding to coordinates of that metric
    opt = sp.csr_matrix(split.X_opt)
    opt.eliminate_zeros()
    T = np.linalg.solve(m.embedding_.basis_chol_, _RatingsMetricEmbedding.metric_chol(
        m.embedding_, np.bincount(opt.indices, minlength=opt.shape[1])))
    sq = lambda A, B: (float(np.mean(np.sum((A - B) ** 2, axis=1))),  # noqa: E731
                       float(np.mean(np.sum(((A - B) @ T) ** 2, axis=1))))
    c = m._quantize(split.X_prot)
    C = m.cluster_centers_
    Z = m.profile_weights_.T @ C
    # an output beyond the profiles (the empty row of release="profile") stands for releasing nothing
    Z = np.vstack([Z, np.repeat(E_mean[None, :], m.mapping_.shape[1] - Z.shape[0], axis=0)])
    M = m.mapping_ / m.mapping_.sum(axis=1, keepdims=True)
    d_rel = ((x[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2)
    d_relf = ((x[:, None, :] - fmap(Z)[None, :, :]) ** 2).sum(axis=2)
    d_relm = (((x[:, None, :] - Z[None, :, :]) @ T) ** 2).sum(axis=2)
    rows = [("release nothing (the labeled mean)", sq(x, E_mean[None, :])),
            ("Gaussian floor E[x | P x] (own point)", sq(x, fmap(x))),
            (f"the mapper's {C.shape[0]} cells, member mean, no mapping", sq(x, C[c])),
            (f"the mapper's {C.shape[0]} cells, E[x | P x] of the cell, no mapping", sq(x, fmap(C[c])))]
    fine_cells = {}
    for k in fine_ks:
        # section (v): cut in the embedding's metric, the ratings' metric, and the ratings' metric of the floor map
        # E[x | P x] (the class directions' part predicted from P x counted too: k-means on L P x, L P = L)
        for metric, U in (("", np.eye(T.shape[0])), (", ratings' metric", T), (", oblique, ratings' metric", L.T @ T)):
            km = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(proj(E_lab) @ U)
            lab = km.labels_
            means = np.array([E_lab[lab == j].mean(axis=0) if np.any(lab == j) else E_mean for j in range(k)])
            fine_cells[f"{k}{metric}"] = (lambda E, km=km, means=means, U=U: fmap(means[km.predict(proj(E) @ U)]))
            rows.append((f"{k} k-means cells of P x{metric} (labeled), E[x | P x] of the cell, no mapping",
                         sq(x, fine_cells[f"{k}{metric}"](x))))
    rows += [("the release, E_c_hat |x - z_c_hat|^2 (z: E[x | c_hat])", (float(np.mean((M[c] * d_rel).sum(axis=1))),
                                                                          float(np.mean((M[c] * d_relm).sum(axis=1))))),
             ("the release, floor-mapped points", (float(np.mean((M[c] * d_relf).sum(axis=1))), float("nan")))]
    Pw = np.hstack([m.profile_weights_, np.zeros((C.shape[0], M.shape[1] - m.profile_weights_.shape[1]))])
    ent = -np.sum(np.where(Pw > 0, Pw * np.log(np.where(Pw > 0, Pw, 1.0)), 0.0), axis=0)
    use = M[c].mean(axis=0)
    stay = float(np.mean(M[c, c]))
    ent = np.where(Pw.sum(axis=0) > 0, ent, 0.0)
    # the counted prior's dependence between the class and the cell (plug-in, bits) on the labeled users, against its
    # mean under 200 label permutations (the sampling noise of the counts on these cells): what the mapping removes
    a_lab = np.searchsorted(m.classes_, _oracle_population(split)[1][split.opt_in])
    cells = np.asarray(m.labels_)

    def plug_in(a):
        joint = np.zeros((m.classes_.size, C.shape[0]))
        np.add.at(joint, (a, cells), 1.0)
        joint /= joint.sum()
        outer = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.nansum(np.where(joint > 0, joint * np.log2(joint / outer), 0.0)))

    rng = np.random.default_rng(seed)
    null = [plug_in(rng.permutation(a_lab)) for _ in range(200)]
    note = "\n".join(f"| {name} | {v[0]:.4f} | {v[1]:.4f} |" for name, v in rows)
    note += (f"\n| counted I(A; cell) on the labeled users, bits; its permutation mean | {plug_in(a_lab):.4f}; "
             f"{np.mean(null):.4f} |")
    note = ("section (u) decomposition, squared embedding units, mean over the protected users:\n"
            "| release | loss | loss in the ratings' metric (section (v)) |\n|---|---|---|\n" + note
            + "\ncells mixed per output (exp entropy of p(c | c_hat), weighted by use): "
            f"{float(use @ np.exp(ent)):.2f}; p(c_hat = own cell): {stay:.3f}")
    return note, fine_cells


def _pooled_within(E, a_idx, w=None):
    """The pooled within-class covariance of the rows ``E`` (weights ``w``, default 1) about their class means."""
    w = np.ones(E.shape[0]) if w is None else np.asarray(w, dtype=np.float64)
    S = np.zeros((E.shape[1], E.shape[1]))
    for a in np.unique(a_idx):
        mask = a_idx == a
        R = E[mask] - np.average(E[mask], axis=0, weights=w[mask])
        S += (R * w[mask, None]).T @ R
    return S / max(w.sum() - np.unique(a_idx).size, 1.0)


def _oblique_map(S, V):
    """``L = P + V^T R P`` with ``P = I - V^T V`` (``V``: orthonormal rows) and ``R = V S P (P S P)^+``: ``L x`` keeps
    ``P x`` and replaces the ``V``-coordinates by their regression on ``P x`` under the covariance ``S``, so that
    ``mean + L (x - mean) = E[x | P x]`` for a Gaussian ``x`` of covariance ``S`` within every class whose means
    differ along ``V`` only (section (r))."""
    P = np.eye(S.shape[0]) - V.T @ V
    R = V @ S @ P @ np.linalg.pinv(P @ S @ P, hermitian=True)
    return P + V.T @ R @ P


def _gaussian_floor_map(E_lab, a_lab, offsets, span=None):
    """Section (r): the linear map of the Gaussian floor on the labeled users' embedding, and a note giving, in the
    embedding's squared units, what it loses within class, ``tr((D^T S^-1 D)^-1 D^T D)``, against the orthogonal
    oracle's ``tr(V S V^T)`` (both also lose the class offsets, ``sum_a p_a |mu_a - mu|^2``, ``offsets`` one row a
    class). ``span``: rows spanning ``D`` when it is not the span of ``offsets`` (a model of the class means)."""
    _, s, Vt = np.linalg.svd(offsets if span is None else span, full_matrices=False)
    V = Vt[s > 1e-10 * max(float(s.max()), np.finfo(float).tiny)] if s.size else Vt[:0]
    if not V.shape[0] or V.shape[0] >= E_lab.shape[1]:
        return None, ""
    S = _pooled_within(E_lab, a_lab)
    L = _oblique_map(S, V)
    lost = float(np.trace(np.linalg.inv(V @ np.linalg.solve(S, V.T))))
    ortho = float(np.trace(V @ S @ V.T))
    p = np.bincount(a_lab, minlength=offsets.shape[0]) / a_lab.size
    between = float(p @ np.einsum("ij,ij->i", offsets, offsets))
    total = float(np.trace(S)) + between
    return L, (f"Gaussian model on the labeled users ({V.shape[0]} class direction(s)): lost within class "
               f"{lost:.4f} (floor) against {ortho:.4f} (orthogonal oracle); class offsets {between:.4f}; "
               f"total variance {total:.4f}")


class _WholeSpaceAssignment(QuantizedPrivacyMapper):
    """The mapper before section (j)'s fix: users join the nearest centre in the WHOLE space even when the clusters
    were formed attribute-free (a partition other than the one the prior counts). For the paired comparison only."""

    def _nearest_centers(self, E, centers=None):
        return self._distances(E, self.cluster_centers_ if centers is None else centers).argmin(axis=1)


class _ObliqueRemoval(QuantizedPrivacyMapper):
    """Section (r), "oblique removal": attribute-free clusters formed on ``E[x | P x]`` (the between-class
    coordinates replaced by their within-class regression on the remaining ones, fitted on the labeled users,
    :func:`_oblique_map`) instead of the orthogonal projection ``P x``; every user joins the nearest centre after the
    same map, so the partition the prior counts is the one applied; the centres stay in the whole space. With the
    full removal only (``class_removal=1``, ``class_bins=1``, a dense space); otherwise the library's rule. The
    benchmark only: the partition is still a function of ``P x`` (the map is ``L = (I + V^T R) P``)."""

    def _attribute_free(self, E, a_idx, w_lab):
        out = super()._attribute_free(E, a_idx, w_lab)
        self.oblique_map_ = None
        V = self.attribute_directions_
        if V.shape[0] and not sp.issparse(E) and float(self.class_removal_) == 1.0 and self.class_bins_ == 1:
            self.oblique_map_ = _oblique_map(_pooled_within(np.asarray(E), a_idx, w_lab), V)
            return np.asarray(E) @ self.oblique_map_.T
        return out

    def _nearest_centers(self, E, centers=None):
        L = getattr(self, "oblique_map_", None)
        if L is None or sp.issparse(E):
            return super()._nearest_centers(E, centers)
        centers = self.cluster_centers_ if centers is None else centers
        return self._distances(E @ L.T, centers @ L.T).argmin(axis=1)


class _AdditiveSpan(QuantizedPrivacyMapper):
    """Section (r), a joint attribute: attribute-free clusters with only the span of EACH attribute's own class
    offsets removed (the class means' span if they are additive in the attributes: 1 + 2 directions for gender x age
    band) instead of the span of the joint classes' offsets (5). ``tuples``: the attribute values of each joint code
    (``joint_attribute(y)[1]``), set by ``_rule`` / ``_excess`` before each draw. The prior is still counted on the
    joint labels, so the certificate covers the partition whatever it removes. The benchmark only."""

    tuples = None

    def _class_directions(self, E, a_idx, w_lab, average):
        if _AdditiveSpan.tuples is None:
            return super()._class_directions(E, a_idx, w_lab, average)
        codes = np.asarray(self.classes_)[a_idx]
        tup = np.array(_AdditiveSpan.tuples, dtype=object)[codes]
        mean = average(E, w_lab)
        offsets = [average(E[mask], w_lab[mask]) - mean
                   for j in range(tup.shape[1]) for v in np.unique(tup[:, j])
                   for mask in [np.array([t == v for t in tup[:, j]])] if w_lab[mask].sum() > 0]
        _, sv, Vt = np.linalg.svd(np.asarray(offsets), full_matrices=False)
        V = Vt[sv > 1e-10 * max(float(sv.max()), np.finfo(float).tiny)][:max(E.shape[1] - 1, 0)]
        self.attribute_directions_ = V
        return mean, V


class _ModelOnCells(QuantizedPrivacyMapper):
    """Section (u): ``prior="model"`` with the model of the attribute fitted on the coordinates the cells are a
    function of (the attribute-free clustering space, ``P x``) instead of the whole space. A cell ``c`` is a function
    of ``P x``, so ``q(a | c) = E[p(a | P x) | C = c]`` (the tower property): the members' mean of a calibrated,
    cross-fitted ``p~(a | P x)`` estimates the same class split as the count, and where ``P x`` carries little of the
    attribute it varies little from user to user, so the estimate does not carry the count's sampling noise (which the
    mapping would otherwise remove by scrambling the cells). With the whole removal and unsplit cells only (otherwise
    the library's model prior). The benchmark only."""

    def _model_soft_counts(self, E, a_idx, weights, labels):
        V = getattr(self, "attribute_directions_", None)
        if (V is not None and V.shape[0] and not sp.issparse(E) and float(self.class_removal_) == 1.0
                and self.class_bins_ == 1):
            E = np.asarray(E)
            E = E - (E @ V.T) @ V  # P x up to a constant shift, which the model's intercept absorbs
        return super()._model_soft_counts(E, a_idx, weights, labels)


class _RatingsMetricEmbedding(TasteEmbedding):
    """Section (v): the taste embedding with squared distances measured as the RMSE measures them. The default
    scales the basis of ``span(1, V)`` so that ``|e_u - e_v|^2 = mean_i (p_ui - p_vi)^2``, the mean over ALL items;
    the recommender's error is a mean over the held-out RATINGS, whose items follow the items' popularity. Here
    ``|e_u - e_v|^2 = sum_i q_i (p_ui - p_vi)^2`` with ``q_i`` item ``i``'s share of the fit rows' ratings: the
    Cholesky factor of ``B diag(q) B^T`` (``B = [1; V]``) instead of ``B B^T / n_items``; the rest is unchanged."""

    def fit(self, X):
        super().fit(X)
        X = sp.csr_matrix(X)
        X.eliminate_zeros()
        self.basis_chol_ = self.metric_chol(self, np.bincount(X.indices, minlength=self.n_items_))
        return self

    @staticmethod
    def metric_chol(emb, counts):
        """The Cholesky factor of ``B diag(q) B^T``, ``q`` the items' shares of ``counts`` (uniform if none)."""
        q = np.asarray(counts, dtype=np.float64)
        q = q / q.sum() if q.sum() > 0 else np.full(emb.n_items_, 1.0 / emb.n_items_)
        B = np.vstack([np.ones((1, emb.n_items_)), emb.components_])
        return np.linalg.cholesky((B * q) @ B.T + 1e-12 * np.eye(B.shape[0]))


class _RatingsMetric(QuantizedPrivacyMapper):
    """Section (v): the default in the ratings' metric (``_RatingsMetricEmbedding``): the class directions, the
    cells, the LP's distortion and the profiles all in coordinates whose squared distances weight each item by its
    share of the labeled users' ratings. The benchmark only."""

    def _learn_quantizer(self, X_lab, w_lab, a_idx=None):
        with mock.patch.object(_quantized_module, "TasteEmbedding", _RatingsMetricEmbedding):
            return super()._learn_quantizer(X_lab, w_lab, a_idx)


class _RatingsMetricCells(QuantizedPrivacyMapper):
    """Section (v): the default, except that k-means cuts the attribute-free cells of ``P x`` in the ratings' metric
    (``_RatingsMetricEmbedding``'s: items weighted by their share of the labeled users' ratings) and every user joins
    the nearest centre after the same map (``cell_map_``), so the partition the prior counts is the one applied; the
    class directions, the LP's distortion and the profiles stay in the embedding's metric. With the whole removal
    and unsplit cells in the taste space only (otherwise the library's rule). The benchmark only."""

    oblique = False
    keep_share = None
    ratings = True

    def _attribute_free(self, E, a_idx, w_lab):
        out = super()._attribute_free(E, a_idx, w_lab)
        self.cell_map_ = None
        emb = getattr(self, "embedding_", None)
        if (self.attribute_directions_.shape[0] and emb is not None and not sp.issparse(E)
                and float(self.class_removal_) == 1.0 and self.class_bins_ == 1):
            M = _RatingsMetricEmbedding.metric_chol(emb, self._q_items)
            # x = c L  ->  c = x L^-1  ->  c L_M: squared distances sum_i q_i (p_ui - p_vi)^2
            T = np.linalg.solve(emb.basis_chol_, M) if self.ratings else np.eye(E.shape[1])
            V = self.attribute_directions_
            P = np.eye(V.shape[1]) - V.T @ V
            # the cells are a function of P x: P x itself, or (oblique) E[x | P x] = mean + L (x - mean), L = L P
            Lmap = (_oblique_map(_pooled_within(np.asarray(E), a_idx, w_lab), V) if self.oblique else P).T @ T
            if self.keep_share is not None:
                # only the leading principal directions of the mapped labeled rows holding keep_share of their
                # (weighted) variance: the cells do not spend resolution on directions that barely move the ratings
                Y = np.asarray(E) @ Lmap
                Yc = Y - np.average(Y, axis=0, weights=w_lab)
                ev, U = np.linalg.eigh((Yc * w_lab[:, None]).T @ Yc / w_lab.sum())
                ev, U = ev[::-1], U[:, ::-1]
                r = int(np.searchsorted(np.cumsum(ev) / ev.sum(), self.keep_share) + 1)
                Lmap = Lmap @ U[:, :r]
                self.kept_rank_ = r
            self.cell_map_ = Lmap
            return np.asarray(E) @ Lmap
        return out

    def _learn_quantizer(self, X_lab, w_lab, a_idx=None):
        Xs = sp.csr_matrix(X_lab)
        Xs.eliminate_zeros()
        self._q_items = np.bincount(Xs.indices, minlength=Xs.shape[1]).astype(np.float64)
        return super()._learn_quantizer(X_lab, w_lab, a_idx)

    def _nearest_centers(self, E, centers=None):
        T = getattr(self, "cell_map_", None)
        if T is None or sp.issparse(E) or (centers is None and getattr(self, "fine_cells_", None) is not None):
            return super()._nearest_centers(E, centers)
        centers = self.cluster_centers_ if centers is None else centers
        return self._distances(np.asarray(E) @ T, centers @ T).argmin(axis=1)


def _fisher_significant(E, a_idx, w, n_perms=50, level=0.95, seed=0):
    """Section (s): the between-class directions whose signal exceeds the sampling noise of the class means.

    In the metric of the total covariance ``T`` of the rows ``E`` (weights ``w``), the eigenvalues ``theta_j`` of
    ``T^-1 B`` (``B = sum_a p_a (mu_a - mu)(mu_a - mu)^T``, ``p_a`` the classes' weight shares; ``theta = lambda / (1 +
    lambda)`` with ``lambda`` the Fisher eigenvalues of ``S^-1 B``, ``S`` pooled within class) are compared with the
    largest such eigenvalue under ``n_perms`` permutations of the labels (``T`` does not change under a permutation):
    direction ``j`` is kept when ``theta_j`` exceeds the ``level`` quantile of that null maximum (Roy's largest root,
    by permutation; with no class effect no direction is kept with probability about ``level``, and a direction the
    noise alone could give is not kept). Returns (orthonormal rows spanning the kept directions' class-mean patterns
    ``T w_j``, which lie in the span of the class-mean offsets; the eigenvalues; the null quantile)."""
    E = np.asarray(E, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    classes, a = np.unique(a_idx, return_inverse=True)
    mean = np.average(E, axis=0, weights=w)
    R = E - mean
    T = (R * w[:, None]).T @ R / w.sum()
    ev, U = np.linalg.eigh(T)
    ok = ev > 1e-10 * max(float(ev.max()), np.finfo(float).tiny)
    half = U[:, ok] / np.sqrt(ev[ok])  # T^-1/2 on the support of T
    Z = R @ half  # whitened rows: identity total covariance

    def between(labels):
        onehot = sp.csr_matrix((w, (labels, np.arange(labels.size))), shape=(classes.size, labels.size))
        p = np.asarray(onehot.sum(axis=1)).ravel()
        M = np.asarray(onehot @ Z) / np.maximum(p, np.finfo(float).tiny)[:, None]
        return (M * (p / p.sum())[:, None]).T @ M

    theta, Q = np.linalg.eigh(between(a))
    theta, Q = theta[::-1][:classes.size - 1], Q[:, ::-1][:, :classes.size - 1]
    rs = np.random.default_rng([seed, 20261208])
    null = np.array([np.linalg.eigvalsh(between(rs.permutation(a)))[-1] for _ in range(n_perms)])
    threshold = float(np.quantile(null, level))
    r = int(np.sum(theta > threshold))
    # the class-mean pattern of discriminant j is T w_j = T^1/2 q_j (w_j = T^-1/2 q_j): B w_j = theta_j T w_j
    patterns = (Q[:, :r].T * np.sqrt(ev[ok])) @ U[:, ok].T
    if not r:
        return np.zeros((0, E.shape[1])), theta, threshold
    _, sv, Vt = np.linalg.svd(patterns, full_matrices=False)
    return Vt[sv > 1e-10 * float(sv.max())], theta, threshold


class _SignificantSpan(QuantizedPrivacyMapper):
    """Section (s): attribute-free clusters with only the SIGNIFICANT between-class directions removed
    (:func:`_fisher_significant`: Fisher eigenvalues above the 95th percentile of the largest one under 50 label
    permutations of the labeled users, seeded from ``random_state``) instead of the whole span of the class-mean
    offsets (``m - 1`` directions for ``m`` classes, several of them mostly the sampling noise of the class means).
    The prior is still counted on the labels, so the certificate covers the partition whatever it removes. Sets
    ``n_class_directions_`` (directions kept), ``class_direction_eigenvalues_`` and ``class_direction_threshold_``.
    A dense clustering space only (otherwise the library's rule). The benchmark only."""

    def _class_directions(self, E, a_idx, w_lab, average):
        if sp.issparse(E):
            return super()._class_directions(E, a_idx, w_lab, average)
        mean = average(E, w_lab)
        seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else 0
        V, theta, threshold = _fisher_significant(E, a_idx, w_lab, seed=int(seed))
        self.attribute_directions_ = V[:max(E.shape[1] - 1, 0)]
        self.n_class_directions_ = int(self.attribute_directions_.shape[0])
        self.class_direction_eigenvalues_, self.class_direction_threshold_ = theta, threshold
        return mean, self.attribute_directions_


class _FloorOne(QuantizedPrivacyMapper):
    """Section (t): the library's ``class_directions="significant"`` with a floor: when the rule keeps no direction
    of an attribute of more than two classes, the leading discriminant's class-mean pattern (``T w_1`` of the largest
    eigenvalue of ``B w = theta T w``) is removed anyway. Asks whether the attackers gain where nothing is kept.
    The benchmark only."""

    def _class_directions(self, E, a_idx, w_lab, average):
        mean, V = super()._class_directions(E, a_idx, w_lab, average)
        if V.shape[0] or np.unique(a_idx).size <= 2 or not hasattr(self, "class_direction_threshold_"):
            return mean, V
        E = np.asarray(E, dtype=np.float64)
        R = E - np.average(E, axis=0, weights=w_lab)
        T = (R * w_lab[:, None]).T @ R / w_lab.sum()
        offsets, shares = [], []
        for a in np.unique(a_idx):
            mask = a_idx == a
            offsets.append(np.average(E[mask], axis=0, weights=w_lab[mask]) - mean)
            shares.append(w_lab[mask].sum() / w_lab.sum())
        offsets = np.asarray(offsets)
        B = (offsets * np.asarray(shares)[:, None]).T @ offsets
        ev, U = np.linalg.eigh(T)
        ok = ev > 1e-10 * ev.max()
        half = U[:, ok] / np.sqrt(ev[ok])
        q = np.linalg.eigh(half.T @ B @ half)[1][:, -1]
        pattern = (U[:, ok] * np.sqrt(ev[ok])) @ q  # T w_1 with w_1 = T^-1/2 q
        self.attribute_directions_ = (pattern / np.linalg.norm(pattern))[None, :]
        self.n_class_directions_ = 1
        # the figures would refuse the extra direction (a benchmark-only mapper, never saved)
        self.__dict__.pop("class_direction_eigenvalues_", None)
        self.floor_threshold_ = self.__dict__.pop("class_direction_threshold_")
        return mean, self.attribute_directions_


class _OraclePrior(QuantizedPrivacyMapper):
    """An ORACLE (section (l)): the default mapper except that the class x cluster counts are taken over the TRUE
    labels of ALL users of the draw, opted-in and protected (``population``: their rows and their labels in the
    mapper's label space, set by ``_rule`` before each draw). It uses the protected users' attribute, so it is a
    floor for what a better prior estimate could buy, never a release: the benchmark only.

    The clusters, the costs (member-averaged over the labeled users) and the profiles are the default's; only the
    counts the prior is smoothed from change (every user sent to her cluster by ``_quantize``, as ``transform``
    sends her; the protected users' full rows)."""

    population = None  # (X_all, labels_all)

    def _prior_from_counts(self, counts):
        if _OraclePrior.population is None:
            raise RuntimeError("_OraclePrior.population is not set: the oracle needs the draw's users and labels")
        X_all, y_all = _OraclePrior.population
        a = np.searchsorted(self.classes_, y_all)
        if not np.array_equal(np.asarray(self.classes_)[np.minimum(a, self.classes_.size - 1)], y_all):
            raise ValueError("the oracle population has a class the mapper did not see")
        c = self._quantize(X_all)
        oracle = np.zeros_like(counts)
        np.add.at(oracle, (a, c), 1.0)
        self._oracle_counts = oracle
        return super()._prior_from_counts(oracle)


class _OracleProtected(_OraclePrior):
    """The oracle counted on the PROTECTED users only (the population whose releases are attacked): perfect privacy
    then holds for them exactly, and the opted-in users' releases, on which the adaptive attacker trains, carry no
    sampling deviation mirrored in the protected ones (with all users counted, the two halves' deviations from the
    counted joint are opposite, which a folded AUC reads as leakage)."""


def _oracle_population(split, protected_only=False):
    """Every user's row and TRUE label in the mapper's label space (the joint code for ``mapper_target="joint"``);
    ``protected_only``: the protected users' only."""
    from privrelease.evaluation._targets import joint_attribute
    y = np.asarray(joint_attribute(split.y)[0] if split.mapper_target == "joint" else split.y)
    if protected_only:
        return split.X_prot, y[split.protected]
    return split.X, y


def _joint_tuples(split):
    """The attribute values of each joint code of the draw (``mapper_target="joint"``), else None."""
    from privrelease.evaluation._targets import joint_attribute
    return joint_attribute(split.y)[1] if split.mapper_target == "joint" else None


def _make_mapper(params, **kw):
    params = dict(params)
    cls = params.pop("_class", QuantizedPrivacyMapper)
    return cls(**params, **kw)


# ------------------------------------------------------------------ --rule (issue 13: n_clusters="heldout")
_RULE_SET_NAMES = ("realistic, gender", "realistic, age band", "realistic, gender x age band", "Politics-and-TV",
                   "make_ratings, 6 classes")
RULE_CONFIGS = {
    "default": dict(),
    "heldout": dict(n_clusters="heldout"),
    "heldout, attribute_free": dict(n_clusters="heldout", clustering="attribute_free"),
    "attribute_free": dict(clustering="attribute_free"),
    "attribute_free, k=50": dict(clustering="attribute_free", n_clusters=50),
    "prior='model'": dict(prior="model"),
    "heldout, prior='model'": dict(n_clusters="heldout", prior="model"),
    # section (i): one cluster per 20 / per 10 labeled users, attribute-free clustering (as "auto" resolves it
    # for more than two classes), written out so the comparison does not depend on the current default
    "attribute_free, per 20": dict(clustering="attribute_free", n_clusters="per20"),
    "attribute_free, per 10": dict(clustering="attribute_free", n_clusters="per10"),
    "attribute_free, k=100": dict(clustering="attribute_free", n_clusters=100),
    "attribute_free, k=200": dict(clustering="attribute_free", n_clusters=200),
    "prior='counts'": dict(prior="counts"),
    # section (j): the defaults before sections (a), (d) and (i), written out
    "old default": dict(profile="cluster", clustering="plain", n_clusters="per20"),
    # section (j): plain k-means with posterior profiles (the default for a binary attribute), more clusters
    "plain, per 20": dict(clustering="plain", n_clusters="per20"),
    "plain, per 10": dict(clustering="plain", n_clusters="per10"),
    # section (j): remove only a share of the between-class component (the library's class_removal; it was the
    # benchmark's _PartialProjection), section (k): the share chosen on held-out labeled users
    "partial 0.5, per 10": dict(clustering="attribute_free", n_clusters="per10", class_removal=0.5),
    "partial 0.75, per 10": dict(clustering="attribute_free", n_clusters="per10", class_removal=0.75),
    "partial 0.25, per 10": dict(clustering="attribute_free", n_clusters="per10", class_removal=0.25),
    "removal heldout, per 10": dict(clustering="attribute_free", n_clusters="per10", class_removal="heldout"),
    "removal heldout": dict(class_removal="heldout"),
    # section (j): the default with the whole-space assignment it had before the fix (same clusters and prior)
    "default, whole-space assignment": dict(_class=_WholeSpaceAssignment),
    # section (r): attribute-free clusters on E[x | P x] (the class directions regressed on the rest) instead of P x
    "oblique removal": dict(_class=_ObliqueRemoval),
    # section (r), a joint attribute: remove the span of each attribute's own class offsets (additive class means)
    "additive span": dict(_class=_AdditiveSpan),
    # section (s): remove only the between-class directions above a label-permutation null (Fisher / Roy)
    "significant span": dict(_class=_SignificantSpan),
    "significant span, attribute_free": dict(_class=_SignificantSpan, clustering="attribute_free"),
    # section (s): the library's rule (class_directions="auto" is "significant" beyond two classes) against the
    # whole span of the class offsets, the default before it
    "all directions": dict(class_directions="all"),
    # section (t): the library's rule with at least the leading direction removed beyond two classes
    "significant, floor 1": dict(_class=_FloorOne),
    "attribute_free, per 10, whole-space assignment": dict(clustering="attribute_free", n_clusters="per10",
                                                          _class=_WholeSpaceAssignment),
    # section (l): the same clusterings with the prior counted on the TRUE labels of ALL users (an oracle)
    **{f"oracle, attribute_free, k={k}": dict(clustering="attribute_free", n_clusters=k, _class=_OraclePrior)
       for k in (25, 50, 100, 200)},
    **{f"oracle, plain, k={k}": dict(clustering="plain", n_clusters=k, _class=_OraclePrior)
       for k in (25, 50, 100, 200)},
    # section (l): attribute-free cells cut in two (or three) along the first between-class direction
    # (the benchmark's _SplitCells until the library's class_bins replaced it, with the same partition)
    "split x2, attribute_free, k=25": dict(clustering="attribute_free", n_clusters=25, class_bins=2),
    "split x2, attribute_free, k=50": dict(clustering="attribute_free", n_clusters=50, class_bins=2),
    "split x3, attribute_free, k=25": dict(clustering="attribute_free", n_clusters=25, class_bins=3),
    **{f"oracle (protected), {c}, k={k}": dict(clustering=c, n_clusters=k, _class=_OracleProtected)
       for c in ("attribute_free", "plain") for k in (50, 100, 200)},
    "oracle (protected), split x2, attribute_free, k=50": dict(clustering="attribute_free", n_clusters=50,
                                                               class_bins=2, _class=_OracleProtected),
    "plain, k=100": dict(clustering="plain", n_clusters=100),
    "plain, k=200": dict(clustering="plain", n_clusters=200),
    "attribute_free, k=25": dict(clustering="attribute_free", n_clusters=25),
    # section (n): free-support barycenter refinement (section (b)), the LP's objective measured at the moved output
    # points, alone and with the split cells
    "default, n_refine=3": dict(n_refine=3),
    "split x2, attribute_free, k=50, n_refine=3": dict(clustering="attribute_free", n_clusters=50, n_refine=3,
                                                       class_bins=2),
    # section (o): does the split's excess leakage on the protected users follow the prior's smoothing?
    **{f"split x2, attribute_free, k=50, smoothing={s:g}": dict(clustering="attribute_free", n_clusters=50,
                                                                smoothing=s, class_bins=2)
       for s in (0.25, 4.0)},
    # section (u): the model prior (section (g)) on attribute-free cells: the default's 50 cells (does the mapping
    # scramble less?) and finer cells, whose class split the model, not a count per cell, estimates
    **{f"prior='model', k={k}": dict(prior="model", n_clusters=k) for k in (50, 100, 200)},
    # section (u): the model of the attribute fitted on the cells' own coordinates (P x), _ModelOnCells
    **{f"model on cells, k={k}": dict(prior="model", n_clusters=k, _class=_ModelOnCells) for k in (50, 100, 200)},
    "model on cells, all directions, k=100": dict(prior="model", n_clusters=100, class_directions="all",
                                                  _class=_ModelOnCells),
    # section (v): the default in the ratings' metric (items weighted by their share of the ratings, as the RMSE)
    "ratings metric": dict(_class=_RatingsMetric),
    "ratings metric, cells only": dict(_class=_RatingsMetricCells),
    "ratings metric, cells only, 90% variance": dict(
        _class=type("_R90", (_RatingsMetricCells,), {"keep_share": 0.9})),
    "embedding metric, cells only, 90% variance": dict(
        _class=type("_E90", (_RatingsMetricCells,), {"keep_share": 0.9, "ratings": False})),
    "ratings metric, oblique cells": dict(_class=type("_RObl", (_RatingsMetricCells,), {"oblique": True})),
    # section (o): the split guarded by the held-out rule (class_bins="heldout": 1-4 bins, paired against the unsplit)
    "split heldout, attribute_free, k=50": dict(clustering="attribute_free", n_clusters=50, class_bins="heldout"),
}


def _resolve_per(params, n_labeled):
    """``n_clusters="perN"``: one cluster per N labeled users, at least 2 and at most 50 (per 20) or 100 (per 10),
    the rules compared in docs/frontier.md, section (i)."""
    k = params.get("n_clusters")
    if isinstance(k, str) and k.startswith("per"):
        per = int(k[3:])
        params = dict(params, n_clusters=int(np.clip(n_labeled // per, 2, 100 if per <= 10 else 50)))
    return params


def _realistic(n_users, columns, target=None):
    X, A, _ = datasets.make_realistic_ratings(n_users=n_users, random_state=0)
    return X, A[columns].to_numpy(), target


def _entangled(columns, target=None):
    X, A, _ = datasets.make_realistic_ratings(**datasets.REALISTIC_ENTANGLED, random_state=0)
    return X, A[columns].to_numpy(), target


def _rule_sets():
    """Name -> a function building (ratings, attribute, mapper_target); only the sets asked for are built."""
    return {"realistic, gender": lambda: _realistic(1000, "gender"),
            "realistic, age band": lambda: _realistic(1000, "age_band"),
            "realistic, gender x age band": lambda: _realistic(1000, ["gender", "age_band"], "joint"),
            "Politics-and-TV": lambda: (*datasets.make_politics_tv(random_state=0)[:2], None),
            "make_ratings, 6 classes": lambda: (*_data_sets(False)["make_ratings, 6 classes"], None),
            "make_ratings, 3 classes": lambda: (*_data_sets(False)["make_ratings, 3 classes"], None),
            # a smaller and a larger population (250 and 1,000 opted-in users), section (i)
            "realistic 500 users, age band": lambda: _realistic(500, "age_band"),
            "realistic 500 users, gender x age band": lambda: _realistic(500, ["gender", "age_band"], "joint"),
            "realistic 2000 users, gender x age band": lambda: _realistic(2000, ["gender", "age_band"], "joint"),
            # 2,000 opted-in users: above the cap of "auto" (100 clusters), stop 19
            "realistic 4000 users, gender x age band": lambda: _realistic(4000, ["gender", "age_band"], "joint"),
            # the attributes also shift the class means of bias and taste (REALISTIC_ENTANGLED), section (j)
            "entangled, gender": lambda: _entangled("gender"),
            "entangled, age band": lambda: _entangled("age_band"),
            "entangled, gender x age band": lambda: _entangled(["gender", "age_band"], "joint")}


def _rule(sets, configs, leakages, seeds, cv):
    """Paired over protocol seeds: RMSE increase, release nothing, worst logistic AND forest AUC, clusters chosen."""
    all_sets = _rule_sets()
    for data_name in sets:
        X, y, target = all_sets[data_name]()
        for name in configs:
            for seed in seeds:
                t0 = time.perf_counter()
                # the number of clusters the mapper chose on this draw's opted-in users
                split = _prepare_split(X, y, opt_in_fraction=0.5, cv=cv, heldout_fraction=0.1, rating_range=(1, 5),
                                       random_state=seed, mapper_target=target)
                params = _resolve_per(RULE_CONFIGS[name], split.X_opt.shape[0])
                mapper = _make_mapper(params, random_state=seed)
                _OraclePrior.population = (_oracle_population(split, isinstance(mapper, _OracleProtected))
                                           if isinstance(mapper, _OraclePrior) else None)
                _AdditiveSpan.tuples = _joint_tuples(split)
                f = privacy_utility_curve(mapper, X, y, max_leakages=list(leakages), cv=cv,
                                          attack_models=("logistic", "forest"), random_state=seed, verbose=0,
                                          mapper_target=target).frame
                auc = np.maximum(f["worst_auc_fixed"], f["worst_auc_adaptive"])
                cells = [f"{100 * r:+.2f}% / {a:.3f}" for r, a in zip(f["rel_increase_released"], auc)]
                ks = []
                for ml in leakages:
                    fitted = _fit_mapper(clone(mapper).set_params(max_leakage=ml), split)
                    # the share of the between-class component removed (class_removal_, section (k))
                    share = getattr(fitted, "class_removal_", 0.0)
                    # the LP's objective at this budget (section (l): does the RMSE follow it?)
                    # the between-class directions removed (section (s)), and the Fisher eigenvalues against the
                    # permutation null's quantile for the significant-span rule
                    dirs = f", dirs={fitted.attribute_directions_.shape[0]}" + (
                        " (" + " ".join(f"{t:.4f}" for t in fitted.class_direction_eigenvalues_)
                        + f" vs {fitted.class_direction_threshold_:.4f})"
                        if hasattr(fitted, "class_direction_threshold_") else "")
                    ks.append(f"{fitted.n_clusters_}" + (f", removal={share:g}"
                                                         if "class_removal" in RULE_CONFIGS[name] else "")
                              + _bins_note(fitted, params) + dirs
                              + (f", rank={fitted.kept_rank_}" if hasattr(fitted, "kept_rank_") else "")
                              + f", distortion={fitted.distortion_:.4f}"
                              # refinement steps kept (section (n))
                              + (f", refined={fitted.n_refine_}" if params.get("n_refine") else ""))
                print(f"RULE | {data_name} | {name} | seed {seed} | nothing +{100 * f['rel_increase_release_nothing'][0]:.2f}% | "
                      + " | ".join(f"{ml} bits: {c} (k={k})" for ml, c, k in zip(leakages, cells, ks))
                      + f" | {time.perf_counter() - t0:.0f} s", flush=True)


def _bins_note(fitted, params):
    """``class_bins="heldout"`` (section (o)): the bins chosen, and per candidate above 1 its held-out excess minus the
    unsplit cells' plus its noise (what the rule holds against ``heldout_tolerance``); empty otherwise."""
    if params.get("class_bins") != "heldout" or getattr(fitted, "class_bins_grid_", None) is None:
        return ""
    test = fitted.class_bins_excess_ - fitted.class_bins_excess_[0] + fitted.class_bins_noise_
    return f", bins={fitted.class_bins_} (excess - unsplit + noise: " + " ".join(f"{v:+.4f}" for v in test[1:]) + ")"


def _protected_excess(fitted, split, n_perms, seed):
    """(plug-in leakage on the protected users, mean of its permutation null, p-value) of ``fitted``, in bits.

    ``p(a, j) = sum_u 1[a_u = a] mapping_[c_u, j] / n`` over the protected users ``u`` (``c_u`` the fitted
    partition's cell of u's full row, the row the attackers see released; ``a_u`` her TRUE label in the mapper's label
    space): the library's held-out statistic with the protected users as the held-out set."""
    X_prot, y_prot = _oracle_population(split, protected_only=True)
    classes = np.asarray(fitted.classes_)
    a = np.searchsorted(classes, y_prot)
    if not np.array_equal(classes[np.minimum(a, classes.size - 1)], y_prot):
        raise ValueError("a protected user has a class the mapper did not see")
    c = fitted._quantize(sp.csr_matrix(X_prot))
    w = np.ones(a.size)
    stat = _heldout_statistic(a, c, w, fitted.mapping_, classes.size)
    rs = np.random.default_rng([seed, 20261124])
    perms = np.array([rs.permutation(a.size) for _ in range(n_perms)])
    null = _heldout_null(a, perms, c, w, fitted.mapping_, classes.size)
    return stat, float(null.mean()), float((1 + np.sum(null >= stat)) / (1 + n_perms))


def _paired(diff):
    """Mean, 95 % t interval, positive / negative counts and Wilcoxon p-value of paired differences."""
    from scipy import stats
    d = np.asarray(diff, dtype=np.float64)
    m = d.mean()
    h = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else np.nan
    p = stats.wilcoxon(d).pvalue if d.size > 1 and np.any(d != 0) else np.nan
    return m, m - h, m + h, int(np.sum(d > 0)), int(np.sum(d < 0)), p


def _excess(sets, configs, leakages, seeds, n_perms):
    """Section (o): per draw, the protected users' excess leakage of each configuration; then paired summaries."""
    all_sets = _rule_sets()
    res = {}  # (set, leakage, config) -> list over seeds of (claimed, excess, p, cells)
    for data_name in sets:
        X, y, target = all_sets[data_name]()
        for seed in seeds:
            split = _prepare_split(X, y, opt_in_fraction=0.5, cv=3, heldout_fraction=0.1, rating_range=(1, 5),
                                   random_state=seed, mapper_target=target)
            for name in configs:
                t0 = time.perf_counter()
                params = _resolve_per(RULE_CONFIGS[name], split.X_opt.shape[0])
                mapper = _make_mapper(params, random_state=seed)
                _OraclePrior.population = (_oracle_population(split, isinstance(mapper, _OracleProtected))
                                           if isinstance(mapper, _OraclePrior) else None)
                _AdditiveSpan.tuples = _joint_tuples(split)
                cells = []
                for ml in leakages:
                    fitted = _fit_mapper(clone(mapper).set_params(max_leakage=ml), split)
                    stat, null, p = _protected_excess(fitted, split, n_perms, seed)
                    res.setdefault((data_name, ml, name), []).append(
                        (float(fitted.leakage_), stat - null, p, fitted.n_clusters_))
                    cells.append(f"{ml} bits: claimed {fitted.leakage_:.4f}, protected {stat:.4f} - null {null:.4f}"
                                 f" = excess {stat - null:+.4f} (p={p:.3f}, k={fitted.n_clusters_}"
                                 f", dirs={fitted.attribute_directions_.shape[0]}"
                                 + _bins_note(fitted, params) + ")")
                print(f"EXCESS | {data_name} | {name} | seed {seed} | n_prot {split.protected.size} | "
                      + " | ".join(cells) + f" | {time.perf_counter() - t0:.0f} s", flush=True)
    ref = configs[0]
    print(f"\nProtected users' excess leakage (bits, {len(seeds)} draws, {n_perms} permutations), paired against "
          f"{ref!r}\n")
    print("| set | bits | configuration | mean claimed | mean excess | p < 0.05 | excess - ref: mean [95% CI] "
          "| higher / lower | Wilcoxon p |")
    print("|---|---|---|---|---|---|---|---|---|")
    for data_name in sets:
        for ml in leakages:
            r = np.array(res[(data_name, ml, ref)])
            for name in configs:
                v = np.array(res[(data_name, ml, name)])
                row = (f"| {data_name} | {ml:g} | {name} | {v[:, 0].mean():.4f} | {v[:, 1].mean():+.4f} | "
                       f"{int(np.sum(v[:, 2] < 0.05))} of {len(v)} | ")
                if name == ref:
                    row += "- | - | - |"
                else:
                    m, lo, hi, up, down, p = _paired(v[:, 1] - r[:, 1])
                    row += f"{m:+.4f} [{lo:+.4f}, {hi:+.4f}] | {up} / {down} | {p:.3f} |"
                print(row, flush=True)


# ------------------------------------------------------------------ --calibrate (issue 13: the entangled preset)
OLD_DEFAULT = RULE_CONFIGS["old default"]


def _calibrate(bias_shifts, taste_shifts, seeds, cv, shifted=None, fixed=()):
    """RMSE cost of the OLD defaults at perfect privacy on make_realistic_ratings with the attributes shifting the
    class means of the user bias and taste: gender and age band as a share of releasing nothing (section (j))."""
    for b in bias_shifts:
        for t in taste_shifts:
            cells = []
            for seed in seeds:
                bs, ts = (b, t) if shifted is None else ({k: b for k in shifted}, {k: t for k in shifted})
                for spec in fixed:  # NAME:BIAS:TASTE, a fixed shift of another attribute
                    name, fb, ft = spec.split(":")
                    bs, ts = dict(bs, **{name: float(fb)}), dict(ts, **{name: float(ft)})
                X, A, _ = datasets.make_realistic_ratings(attribute_bias_shift=bs, attribute_taste_shift=ts,
                                                          random_state=seed)
                out = {}
                for col in ("gender", "age_band"):
                    y = A[col].to_numpy()
                    split = _prepare_split(X, y, opt_in_fraction=0.5, cv=cv, heldout_fraction=0.1,
                                           rating_range=(1, 5), random_state=seed)
                    params = _resolve_per(OLD_DEFAULT, split.X_opt.shape[0])
                    s = rmse_cost(_make_mapper(params, random_state=seed), X, y, cv=cv,
                                  random_state=seed).summary
                    out["nothing"] = s["rel_increase_release_nothing"]
                    out[col] = s["rel_increase_released"]
                cells.append(out)
                print(f"CAL | bias {b} | taste {t} | seed {seed} | nothing {100 * out['nothing']:+.2f}% | gender "
                      f"{100 * out['gender']:+.2f}% ({out['gender'] / out['nothing']:.0%}) | age band "
                      f"{100 * out['age_band']:+.2f}% ({out['age_band'] / out['nothing']:.0%})", flush=True)
            m = {k: np.mean([c[k] for c in cells]) for k in cells[0]}
            print(f"CALMEAN | bias {b} | taste {t} | {' '.join(fixed)} | nothing {100 * m['nothing']:+.2f}% | gender {100 * m['gender']:+.2f}%"
                  f" ({np.mean([c['gender'] / c['nothing'] for c in cells]):.0%}) | age band {100 * m['age_band']:+.2f}%"
                  f" ({np.mean([c['age_band'] / c['nothing'] for c in cells]):.0%})", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two data sets, three configurations, 2 folds")
    parser.add_argument("--attacks", action="store_true", help="also the worst adaptive attacker's AUC (slower)")
    parser.add_argument("--ideas", action="store_true", help="issue 13's binary-attribute ideas, paired over seeds")
    parser.add_argument("--floors", action="store_true", help="where the RMSE cost comes from, oracle releases")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="protocol seeds for --ideas")
    parser.add_argument("--rule", action="store_true", help="n_clusters='heldout' against the default, paired")
    parser.add_argument("--sets", nargs="+", default=list(_RULE_SET_NAMES), help="data sets for --rule")
    parser.add_argument("--configs", nargs="+", default=["default", "heldout"], help="configurations for --rule")
    parser.add_argument("--leakages", type=float, nargs="+", default=[0.0, 0.01], help="bits for --rule")
    parser.add_argument("--excess", action="store_true", help="protected users' excess leakage, paired (section (o))")
    parser.add_argument("--n-perms", type=int, default=1000, help="label permutations for --excess")
    parser.add_argument("--calibrate", action="store_true", help="grid of the entangled preset's shifts (old defaults)")
    parser.add_argument("--bias-shifts", type=float, nargs="+", default=[0.0, 0.15, 0.3])
    parser.add_argument("--taste-shifts", type=float, nargs="+", default=[0.0, 0.3, 0.6])
    parser.add_argument("--shifted", nargs="+", default=None, help="attributes the shifts apply to (default: all)")
    parser.add_argument("--fixed", nargs="+", default=(), help="NAME:BIAS:TASTE fixed shifts of other attributes")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.calibrate:
        _calibrate(args.bias_shifts, args.taste_shifts, args.seeds, cv=3, shifted=args.shifted, fixed=args.fixed)
        return
    if args.excess:
        _excess(args.sets, args.configs, args.leakages, args.seeds, args.n_perms)
        return
    if args.rule:
        _rule(args.sets, args.configs, args.leakages, args.seeds, cv=3)
        return
    if args.ideas or args.floors:
        if args.floors:
            if "--sets" in (argv if argv is not None else __import__("sys").argv):
                for seed in args.seeds:
                    _floors(cv=3, sets=args.sets, configs=args.configs, seed=seed)
            else:
                _floors(cv=3)
        if args.ideas:
            _ideas(args.seeds, cv=3)
        return
    cv = 2 if args.quick else 3
    names = QUICK if args.quick else tuple(CONFIGS)
    rmse_rows, auc_rows = {}, {}
    t0 = time.perf_counter()
    for data_name, (X, y) in _data_sets(args.quick).items():
        row, auc = [], []
        for name in names:
            mapper = QuantizedPrivacyMapper(random_state=0, **CONFIGS[name])
            s = rmse_cost(mapper, X, y, cv=cv, random_state=0).summary
            if not row:
                row.append(f"+{100 * s['rel_increase_release_nothing']:.2f}%")
            row.append(f"{100 * s['rel_increase_released']:+.2f}%")
            if args.attacks:
                f = privacy_utility_curve(mapper, X, y, cv=cv, random_state=0, verbose=0).frame
                auc.append(f"{float(np.asarray(f['worst_auc_adaptive'])[0]):.3f}")
            print(f"  {data_name:28s} {name:36s} {row[-1]:>8s}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        rmse_rows[data_name] = row
        auc_rows[data_name] = auc
    _table(f"Relative RMSE increase at perfect privacy (rmse_cost, cv={cv}, random_state=0)",
           ["release nothing", *names], rmse_rows)
    if args.attacks:
        _table("Worst adaptive attacker's AUC (privacy_utility_curve)", list(names), auc_rows)


if __name__ == "__main__":
    main()
