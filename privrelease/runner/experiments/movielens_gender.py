"""MovieLens (100k or 1M) with a private demographic attribute: curves, attacks, RMSE, BlurMe and BlurMore.

The private attribute is ``attribute``: ``"gender"`` (binary, the default),
``"age_band"`` (the users' ages cut at ``age_cuts``: three bands by default,
under 25, 25 to 34, 35 and over) or ``"gender_x_age_band"`` (both at once: every
method protects the joint attribute, six classes by default, and the attackers
are scored by their macro one-vs-rest AUC).

``dataset`` names the archive: ``"ml-100k"`` (943 users, 1,682 movies, ages in
years) or ``"ml-1m"`` (6,040 users, 3,706 rated movies, 1,000,209 ratings;
``users.dat`` gives an age CODE, the first age of the user's band: 1 = under
18, 18, 25, 35, 45, 50, 56 = 56 and over). The age cuts compare with what the
file holds, so with ml-1m every cut must be one of the codes 18, 25, 35, 45, 50,
56 (a cut inside a band, say 30, cannot be told from the code 25); the default
cuts 25 and 35 give the same three bands on both archives.

The same analysis as ``synthetic_ratings`` on real ratings: the optimal quantized mapping over a grid of leakage caps, the naive
release of cluster representatives and BlurMe (which was designed for exactly
this data and attribute: Weinsberg et al., RecSys 2012), all scored by fixed and
adaptive attackers and by the Table I RMSE protocol. The data is never
downloaded: it is read from ``path`` (the folder holding ``u.data``, ``u.user``,
``u.item`` for ml-100k, ``ratings.dat``, ``users.dat``, ``movies.dat`` for
ml-1m, or its ``ml-100k`` / ``ml-1m`` sub-folder) or from Surprise's cache; when
it is missing the report says so.
"""

import sys
import time

import numpy as np

from .._report import escape_text
from .._schema import (Bool, Choice, Either, Float, Folder, Int, NJobs, PipelineError, Seed, Seq,
                       quick_values)
from .synthetic_ratings import (_LEVELS_CAP, MAPPER, N_CLUSTERS_RULES, PROTOCOL_PARAMETERS, RECOMMENDER,
                                _one_dataset, _recommender)

__all__ = ["run", "analyse_ratings"]

#: the archives this experiment reads: name -> (loader name, users, what its files are)
DATASETS = {
    "ml-100k": ("load_movielens_100k", 943, "MovieLens 100k", "u.data, u.user, u.item"),
    "ml-1m": ("load_movielens_1m", 6040, "MovieLens 1M", "ratings.dat, users.dat, movies.dat"),
}

PARAMETERS = {
    "random_state": Seed(),
    "quick": Bool(),
    "dataset": Choice(tuple(DATASETS)),
    "path": Folder(),
    "attribute": Choice(("gender", "age_band", "gender_x_age_band")),
    "age_cuts": Seq(Int(1, 120), min_len=1, max_len=9, increasing=True,
                    why="ages are cut into at most 10 bands, each cut above the previous one"),
    "max_leakages": Seq(Float(0), max_len=30, increasing=True, why=_LEVELS_CAP),
    "blurme_fractions": Seq(Float(0, 1), max_len=30, increasing=True, why=_LEVELS_CAP),
    "n_clusters": Either(Choice(N_CLUSTERS_RULES), Int(1, 6040, why="MovieLens 1M has 6,040 users")),
    **PROTOCOL_PARAMETERS,
    "recommender": RECOMMENDER,
    "mapper": MAPPER,
    "n_jobs": NJobs(),
}


def check_together(params):
    """Constraints between parameters, checked before anything runs."""
    from ...datasets import ML1M_AGE_CODES

    dataset = params.get("dataset", "ml-100k")
    _, n_users, label, _ = DATASETS[dataset]
    n_clusters = params.get("n_clusters", "auto")
    if not isinstance(n_clusters, str) and n_clusters > n_users:
        raise PipelineError(f"parameter n_clusters = {n_clusters}: expected at most the {n_users} users of "
                            f"{label} (dataset = {dataset!r})")
    cuts = params.get("age_cuts")
    if dataset == "ml-1m" and cuts is not None and not set(cuts) <= set(ML1M_AGE_CODES[1:]):
        off = [c for c in cuts if c not in ML1M_AGE_CODES[1:]]
        raise PipelineError(f"parameter age_cuts = {list(cuts)}: with dataset = 'ml-1m' every cut must be one of "
                            f"the age codes {list(ML1M_AGE_CODES[1:])} (users.dat holds the first age of each "
                            f"user's band, so a cut at {off[0]} would fall inside a band)")


def check_ready(params):
    """The private attribute (every age band holds a user) and the protocol's split, drawn as the run draws it,
    before anything runs. Data that cannot be found is left to the run (its report says so)."""
    from ... import datasets

    from .synthetic_ratings import check_protocol_split

    dataset = params.get("dataset", "ml-100k")
    loader, _, label, _ = DATASETS[dataset]
    try:
        R, users, _ = getattr(datasets, loader)(params.get("path"))
    except FileNotFoundError:
        from ...datasets._movielens import other_archive

        found = other_archive(params.get("path"), dataset)
        if found is not None:  # ml-1m's files read as ml-100k: "not found", exit 1, with no word of the mix-up
            folder, other = found
            raise PipelineError(f"parameter path = {params['path']!r}: {str(folder)!r} holds the files of "
                                f"{DATASETS[other][2]} ({DATASETS[other][3]}), not those of {label} "
                                f"(dataset = {dataset!r}); expected dataset = {other!r} (--set dataset={other})"
                                ) from None
        return
    attribute, cuts = params.get("attribute", "gender"), params.get("age_cuts", (25, 35))
    try:
        a, _ = private_attribute(users, attribute, cuts)
    except ValueError as exc:
        raise PipelineError(f"parameters attribute = {attribute!r}, age_cuts = {list(cuts)}: {exc}") from None
    seed = params.get("random_state", 0)
    check_protocol_split(R, a, params, f"{label} ({R.shape[0]} users), attribute = {attribute!r}",
                         random_state=0 if seed is None else int(seed))


@quick_values({"max_leakages": (0.0, 0.02), "blurme_fractions": (0.2,), "cv": 2,
               "attack_models": ("logistic",), "n_jobs": 1})
def run(report, *, random_state=0, quick=False, dataset="ml-100k", path=None, attribute="gender",
        age_cuts=(25, 35), max_leakages=(0.0, 0.002, 0.01, 0.03, 0.1, 1.0), blurme_fractions=(0.05, 0.1, 0.2, 0.5),
        n_clusters="auto", opt_in_fraction=0.5, cv=5, heldout_fraction=0.1, target_auc=0.55,
        attack_models=("logistic", "forest"), recommender=None, mapper=None, n_jobs=2):
    """Write the MovieLens-gender analysis into ``report``; returns headline numbers."""
    from ... import datasets

    loader, _, label, files = DATASETS[dataset]
    seed = 0 if random_state is None else int(random_state)
    t0 = time.perf_counter()
    try:
        R, users, _ = getattr(datasets, loader)(path)
    except FileNotFoundError as exc:
        msg = (f"{label} was not found, so this experiment did not run (privrelease never downloads "
               f"data). Put the GroupLens {dataset} folder ({files}) somewhere and name it in "
               "the pipeline file (`path = \"...\"` under [params]), or let Surprise cache it "
               f"(`python -c \"import surprise; surprise.Dataset.load_builtin('{dataset}')\"`).")
        print(f"movielens_gender: {msg}\n  ({exc})", file=sys.stderr, flush=True)
        report.section("Data missing")
        report.text(msg)
        # the loader's message line by line, as plain text (its line breaks were shown as literal '\n'); a line
        # break inside a folder's name stays an escape, so a folder is one line
        message = str(exc)
        searched = getattr(datasets, f"{loader.replace('load_', '')}_search_paths")(path)
        for folder in sorted({str(f) for f in searched}, key=len, reverse=True):
            message = message.replace(folder, escape_text(folder, None))
        details = [ln.strip().removeprefix("- ") for ln in message.splitlines() if ln.strip()]
        report.text("Details:\n\n" + "\n".join(f"- {escape_text(ln, 'markdown')}" for ln in details))
        return {"status": "data missing"}
    print(f"[stage] movielens: reading {label}: {time.perf_counter() - t0:.1f} s", flush=True)
    a, described = private_attribute(users, attribute, age_cuts)
    return analyse_ratings(
        report, "movielens", f"{label}: {R.shape[0]} users, {R.shape[1]} movies, {R.nnz} ratings", R, a, described,
        rating_range=(1, 5), recommender=recommender, max_leakages=max_leakages, blurme_fractions=blurme_fractions,
        n_clusters=n_clusters, opt_in_fraction=opt_in_fraction, cv=cv, heldout_fraction=heldout_fraction,
        target_auc=target_auc, attack_models=attack_models, mapper=mapper, n_jobs=n_jobs, seed=seed)


def analyse_ratings(report, name, data, R, a, described, *, rating_range, recommender, max_leakages,
                    blurme_fractions, n_clusters, opt_in_fraction, cv, heldout_fraction, target_auc, attack_models,
                    mapper, n_jobs, seed):
    """The analysis of one rating matrix ``R`` with private attribute ``a`` (codes, 1-D or 2-D), into ``report``.

    What ``movielens_gender`` and ``ratings_file`` run once their data is read:
    the optimal mapping at each leakage cap, the naive release, BlurMe and
    BlurMore, fixed and adaptive attackers, the Table I RMSE protocol, tables and
    plots. ``data`` and ``described`` are sentences (the data, the attribute);
    ``rating_range`` is the recommender's scale and the protocol's (released
    values are clipped to it). Returns the headline numbers (also written as
    ``headline.json``).
    """
    spec = recommender if recommender is not None else {"algorithm": "SVD"}
    report.text(
        f"{data}. Private attribute: {described}. "
        f"Recommender: Surprise {spec}, test users folded in from what they release.")
    headline = {"status": "ok"}
    headline.update(_one_dataset(
        report, name, R, a, rec=_recommender(spec, rating_range), max_leakages=list(max_leakages),
        fractions=list(blurme_fractions), n_clusters=n_clusters, opt_in_fraction=opt_in_fraction, cv=cv,
        heldout_fraction=heldout_fraction, attack_models=list(attack_models), target_auc=target_auc, seed=seed,
        n_jobs=n_jobs, mapper=mapper, rating_range=rating_range))
    report.json(headline, "headline")
    return headline


def private_attribute(users, attribute="gender", age_cuts=(25, 35)):
    """The private attribute of MovieLens users as class codes, and a sentence describing it.

    ``"gender"``: 1 for women, 0 for men. ``"age_band"``: the number of cuts in
    ``age_cuts`` at or below the user's ``age`` column (band 0 is under the first
    cut): the age in years for ml-100k, the age code for ml-1m (the first age of
    the user's band, so a cut equal to a code separates whole bands).
    ``"gender_x_age_band"``: a 2-column array (gender, age band), protected jointly.
    A band that no user falls in is refused (the classes would not all occur).
    """
    gender = (users["gender"].astype(str).to_numpy() == "F").astype(np.int64)
    cuts = [int(c) for c in age_cuts]
    age = users["age"].to_numpy()
    band = np.searchsorted(np.asarray(cuts), age, side="right").astype(np.int64)
    names = [f"under {cuts[0]}"] + [f"{lo} to {hi - 1}" for lo, hi in zip(cuts[:-1], cuts[1:])] + [f"{cuts[-1]} and over"]
    counts = np.bincount(band, minlength=len(cuts) + 1)
    if attribute != "gender" and np.any(counts == 0):
        empty = [names[i] for i in np.flatnonzero(counts == 0)]
        raise ValueError(f"age_cuts={cuts} leave the age band(s) {empty} without any user; "
                         f"expected cuts between the youngest ({age.min()}) and the oldest ({age.max()}) user")
    bands = ", ".join(f"{n} ({c} users)" for n, c in zip(names, counts))
    if attribute == "gender":
        return gender, f"gender ({int(gender.sum())} women = 1, {int((1 - gender).sum())} men = 0)"
    if attribute == "age_band":
        return band, f"age band ({bands})"
    if attribute == "gender_x_age_band":
        return (np.column_stack([gender, band]),
                f"gender x age band, protected jointly ({int(gender.sum())} women; bands {bands})")
    raise ValueError(f"attribute must be 'gender', 'age_band' or 'gender_x_age_band', got {attribute!r}")
