"""Run the whole user path, with default settings, on small stand-ins shaped like public rating data sets.

Run:  MPLBACKEND=Agg .venv/bin/python benchmarks/bench_real_shapes.py [--quick] [--only NAME ...] [--keep DIR]

privrelease was tuned on MovieLens-shaped data (1-5 stars, about 5% dense).
Real data sets have other shapes. Each stand-in below is synthetic (nothing is
downloaded) and a few seconds to build; its docstring names the public data
set whose SHAPE it mimics (scale, density, activity and popularity tails), not
its content:

* ``jester``: Jester (Goldberg et al. 2001): continuous ratings -10..10, dense;
  0 is a real rating, so it is shifted by +11 before it enters a rating matrix
  (0 = "not rated" there) and shifted back after the release.
* ``book_crossing``: Book-Crossing (Ziegler et al. 2005), explicit ratings
  1..10: most users rate one to three books, most books are rated once.
* ``amazon``: Amazon reviews (McAuley et al.): J-shaped 1-5 stars (mostly 5s),
  a long item tail and a few power users with thousands of ratings.
* ``netflix``: Netflix Prize / Yelp: half stars 1-5, very skewed item
  popularity, 20,000 items x 2,000 users.
* ``implicit``: implicit feedback (clicks, purchases): every rating is 1.

Each stand-in carries private attributes of real shapes (``ATTRIBUTES``):
seven age bands with a 2% class, an occupation of 21 classes, a binary
attribute at 95/5, gender as the strings 'M'/'F' and as a pandas categorical.

For every (stand-in, attribute) the script runs, with DEFAULT settings:
``QuantizedPrivacyMapper().fit/transform`` and ``BlurMe`` / ``BlurMore`` (checking
shape, sparse type, dtype, that every user and item is kept and that released
ratings stay on the data's scale), ``leakage_`` and the solver's certificate, ``rmse_cost`` and
``privacy_utility_curve`` (``cv=2``, two leakage caps), and ``privrelease
run`` on a CSV written in the data set's shape. It prints one row per step
with its wall time and what went wrong, if anything.
"""

import argparse
import contextlib
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]


def _zipf(n, a, rng):
    """Popularity weights of ``n`` items (or users) with a Zipf tail of exponent ``a``, shuffled."""
    w = 1.0 / np.arange(1, n + 1) ** a
    rng.shuffle(w)
    return w / w.sum()


def _taste_matrix(n_users, n_items, counts, item_weights, rng, signal, n_factors=5):
    """Rows of sorted item indices (``counts[u]`` per user) and a latent score per rating.

    ``signal`` (n_users, n_factors) moves each user's taste: the private
    attributes act through it, as in ``make_realistic_ratings``.
    """
    U = rng.normal(size=(n_users, n_factors)) + signal
    V = rng.normal(size=(n_items, n_factors))
    rows, cols = [], []
    for u, c in enumerate(counts):
        c = int(min(c, n_items))
        items = rng.choice(n_items, size=c, replace=False, p=item_weights)
        rows.append(np.full(c, u))
        cols.append(items)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    score = np.einsum("ij,ij->i", U[rows], V[cols]) / np.sqrt(n_factors) + 0.5 * rng.normal(size=rows.size)
    return rows, cols, score


def _quantiles_to_scale(score, levels, probs):
    """Map latent scores to rating ``levels`` with the marginal ``probs`` (rank-preserving)."""
    cuts = np.quantile(score, np.cumsum(probs)[:-1])
    return np.asarray(levels, dtype=float)[np.searchsorted(cuts, score)]


def attributes(n_users, rng):
    """Private attributes of real shapes, as a DataFrame (one column each) and the taste signal they cause.

    ``age7``: MovieLens 1M's seven age codes, the youngest band a 2% class;
    ``occupation``: 21 classes (MovieLens 1M's occupation codes, skewed);
    ``rare``: binary at 95/5; ``gender``: the strings 'M' / 'F' (71/29);
    ``gender_cat``: the same as a pandas categorical.
    """
    age_p = np.array([0.02, 0.18, 0.34, 0.2, 0.1, 0.09, 0.07])
    age = rng.choice(7, size=n_users, p=age_p)
    occ = rng.choice(21, size=n_users, p=_zipf(21, 0.8, rng))
    rare = (rng.random(n_users) < 0.05).astype(np.int64)
    female = rng.random(n_users) < 0.29
    gender = np.where(female, "F", "M").astype(object)
    signal = np.zeros((n_users, 5))
    signal[:, 0] += 0.8 * female - 0.4
    signal[:, 1] += 0.25 * (age - 3)
    signal[:, 2] += 0.8 * rare
    signal[:, 3] += 0.05 * (occ - 10)
    frame = pd.DataFrame({"age7": age, "occupation": occ, "rare": rare, "gender": gender,
                          "gender_cat": pd.Categorical(gender, categories=["F", "M"])})
    return frame, signal


def jester(random_state=0, n_users=1500, n_items=100):
    """Jester-shaped: 100 jokes, continuous ratings in [-10, 10] (0 is a real rating), about 55% dense.

    Returns the ratings in long form (``user, item, rating`` with ratings on
    -10..10, zeros included) and the attributes.
    """
    rng = np.random.default_rng(random_state)
    A, signal = attributes(n_users, rng)
    counts = rng.integers(15, n_items + 1, size=n_users)
    rows, cols, score = _taste_matrix(n_users, n_items, counts, np.full(n_items, 1 / n_items), rng, signal)
    r = np.clip(np.round(4 * score + 1, 2), -10, 10)
    r[rng.random(r.size) < 0.01] = 0.0                       # a real rating of exactly 0
    return pd.DataFrame({"user": rows, "item": cols, "rating": r}), A


def book_crossing(random_state=0, n_users=6000, n_items=30000):
    """Book-Crossing-shaped: explicit ratings 1..10 (mode 8), most users rate 1-3 books, most books rated once.

    Activity is Pareto (median 2, a few users with hundreds), popularity a
    steep Zipf tail over many items.
    """
    rng = np.random.default_rng(random_state)
    A, signal = attributes(n_users, rng)
    counts = np.minimum(np.floor(rng.pareto(0.9, size=n_users) + 1).astype(int), 600)
    rows, cols, score = _taste_matrix(n_users, n_items, counts, _zipf(n_items, 0.6, rng), rng, signal)
    probs = [0.02, 0.01, 0.02, 0.03, 0.11, 0.09, 0.17, 0.24, 0.15, 0.16]
    r = _quantiles_to_scale(score, range(1, 11), probs)
    return pd.DataFrame({"user": rows, "item": cols, "rating": r}), A


def amazon(random_state=0, n_users=4000, n_items=8000):
    """Amazon-shaped: J-shaped 1-5 stars (about 60% fives), a long item tail, a few power users with thousands."""
    rng = np.random.default_rng(random_state)
    A, signal = attributes(n_users, rng)
    counts = np.floor(rng.pareto(1.2, size=n_users) * 3 + 1).astype(int)
    counts[rng.choice(n_users, 5, replace=False)] = rng.integers(1500, 2800, size=5)   # power users
    rows, cols, score = _taste_matrix(n_users, n_items, counts, _zipf(n_items, 0.9, rng), rng, signal)
    r = _quantiles_to_scale(score, range(1, 6), [0.07, 0.05, 0.09, 0.19, 0.60])
    return pd.DataFrame({"user": rows, "item": cols, "rating": r}), A


def netflix(random_state=0, n_users=2000, n_items=20000):
    """Netflix/Yelp-shaped: half stars 1..5, 20,000 items x 2,000 users, very skewed popularity (~0.5% dense)."""
    rng = np.random.default_rng(random_state)
    A, signal = attributes(n_users, rng)
    counts = np.minimum(np.floor(rng.pareto(1.0, size=n_users) * 25 + 10).astype(int), 3000)
    rows, cols, score = _taste_matrix(n_users, n_items, counts, _zipf(n_items, 1.1, rng), rng, signal)
    levels = np.arange(1, 5.01, 0.5)
    probs = np.array([2, 2, 4, 5, 10, 14, 22, 16, 25], float)
    r = _quantiles_to_scale(score, levels, probs / probs.sum())
    return pd.DataFrame({"user": rows, "item": cols, "rating": r}), A


def implicit(random_state=0, n_users=3000, n_items=1500):
    """Implicit feedback: every stored rating is 1 (a click or a purchase), MovieLens-like density and tails."""
    rng = np.random.default_rng(random_state)
    A, signal = attributes(n_users, rng)
    counts = np.floor(rng.pareto(1.1, size=n_users) * 15 + 5).astype(int)
    rows, cols, _ = _taste_matrix(n_users, n_items, counts, _zipf(n_items, 0.8, rng), rng, signal)
    return pd.DataFrame({"user": rows, "item": cols, "rating": np.ones(rows.size)}), A


STAND_INS = {"jester": jester, "book_crossing": book_crossing, "amazon": amazon, "netflix": netflix,
             "implicit": implicit}
#: the scale of each stand-in's ratings, as the user knows it
SCALES = {"jester": (-10.0, 10.0), "book_crossing": (1.0, 10.0), "amazon": (1.0, 5.0), "netflix": (1.0, 5.0),
          "implicit": (1.0, 1.0)}
ATTRIBUTES = ("gender", "gender_cat", "rare", "age7", "occupation")


def to_matrix(name, df):
    """The user's way in: long form through ``RatingsFrame`` (Jester shifted by +11 first, 0 being a rating)."""
    from privrelease.recommender import RatingsFrame

    d = df.copy()
    if name == "jester":
        d["rating"] = d["rating"] + 11.0
    rf = RatingsFrame("user", "item", "rating").fit(d)
    return rf, rf.to_matrix(d)


def matrix_scale(name):
    """The scale of the matrix the mapper sees (Jester's is shifted)."""
    lo, hi = SCALES[name]
    return (lo + 11.0, hi + 11.0) if name == "jester" else (lo, hi)


def _opted_in(y, share, rng):
    """``y`` with all but ``share`` of the users marked undisclosed (-1, or None for strings and categoricals)."""
    y = pd.Series(y).copy()
    hide = rng.random(len(y)) >= share
    if isinstance(y.dtype, pd.CategoricalDtype):
        y = y.cat.set_categories(y.cat.categories)   # a categorical stays one: hidden users become NaN
        y[hide] = np.nan
    elif not pd.api.types.is_numeric_dtype(y.dtype):
        y = y.astype(object)
        y[hide] = None
    else:
        y[hide] = -1
    return y


class Recorder:
    """Collect one row per step: stand-in, attribute, step, seconds, outcome, warnings."""

    def __init__(self):
        self.rows = []

    @contextlib.contextmanager
    def step(self, data, attribute, step):
        row = {"data": data, "attribute": attribute, "step": step, "seconds": np.nan, "outcome": "ok",
               "warnings": ""}
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield row
            except Exception as exc:                   # noqa: BLE001 - recorded, the run goes on
                row["outcome"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                if not isinstance(exc, (ValueError, TypeError)):
                    row["outcome"] += "\n" + traceback.format_exc(limit=4)
        row["seconds"] = round(time.perf_counter() - t0, 2)
        seen = {f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught}
        row["warnings"] = " | ".join(sorted(seen))
        self.rows.append(row)
        print(f"{data:>14} {attribute:>11} {step:>22} {row['seconds']:7.2f}s  {row['outcome'][:200]}"
              + (f"\n{'':>50}warn: {row['warnings'][:400]}" if row["warnings"] else ""), flush=True)


def check_release(X, R, scale):
    """What a release must keep: shape, sparse type, dtype, every user and item, ratings on the scale."""
    problems = []
    if R.shape != X.shape:
        problems.append(f"shape {R.shape} != {X.shape}")
    if type(R) is not type(X):
        problems.append(f"type {type(R).__name__} != {type(X).__name__}")
    if R.dtype != X.dtype:
        problems.append(f"dtype {R.dtype} != {X.dtype}")
    R = sp.csr_matrix(R)
    data = R.data[R.data != 0]
    if data.size and (data.min() < scale[0] - 1e-9 or data.max() > scale[1] + 1e-9):
        problems.append(f"released ratings span [{data.min():g}, {data.max():g}] outside the scale {scale}")
    return problems


def run_library(rec, name, X, A, *, attributes_, share=0.5, quick=False, seed=0):
    """fit/transform, leakage and certificate, rmse_cost and privacy_utility_curve with default settings."""
    from privrelease import BlurMe, BlurMore, QuantizedPrivacyMapper
    from privrelease.evaluation import privacy_utility_curve, rmse_cost

    scale = matrix_scale(name)
    rng = np.random.default_rng(seed)
    for att in attributes_:
        y_true = A[att]
        y = _opted_in(y_true, share, rng)
        with rec.step(name, att, "fit/transform") as row:
            m = QuantizedPrivacyMapper(random_state=seed).fit(X, y)
            R = m.transform(X)
            problems = check_release(X, R, scale)
            if problems:
                row["outcome"] = "WRONG: " + "; ".join(problems)
            else:
                row["outcome"] = (f"ok: k={m.n_clusters_}, leakage {m.leakage_:.2g} bits, gap "
                                  f"{m.solver_result_.certificate.get('gap_bits', float('nan')):.1g}, "
                                  f"rating_range_ {m.rating_range_}, "
                                  f"{int(np.sum(np.diff(sp.csr_matrix(R).indptr) == 0))} users released empty")
        if name == "implicit":   # what the warning of the default fit advises
            with rec.step(name, att, "fit metric='hamming'") as row:
                m = QuantizedPrivacyMapper(metric="hamming", random_state=seed).fit(X, y)
                problems = check_release(X, m.transform(X), scale)
                row["outcome"] = ("WRONG: " + "; ".join(problems) if problems
                                  else f"ok: k={m.n_clusters_}, leakage {m.leakage_:.2g} bits")
        for est in (BlurMe, BlurMore):
            with rec.step(name, att, f"{est.__name__} fit/transform") as row:
                R = est(random_state=seed).fit(X, y).transform(X)
                problems = check_release(X, R, scale)
                row["outcome"] = "WRONG: " + "; ".join(problems) if problems else f"ok: {X.nnz} -> {R.nnz} ratings"
        if quick and att not in ("gender", "age7"):
            continue
        with rec.step(name, att, "rmse_cost") as row:
            r = rmse_cost(QuantizedPrivacyMapper(random_state=seed), X, y_true, cv=2, rating_range=scale,
                          random_state=seed)
            row["outcome"] = (f"ok: RMSE +{100 * r['rel_increase_released']:.1f}% (release nothing "
                              f"+{100 * r['rel_increase_release_nothing']:.1f}%)")
        with rec.step(name, att, "privacy_utility_curve") as row:
            c = privacy_utility_curve(QuantizedPrivacyMapper(random_state=seed), X, y_true,
                                      max_leakages=[0.0, 0.05], cv=2, attack_models=["logistic"],
                                      rating_range=scale, random_state=seed)
            f = c.frame
            cols = ["max_leakage", "leakage_bits", "worst_auc_adaptive", "rel_increase_released"]
            row["outcome"] = "ok: " + f[cols].round(3).to_string(index=False).replace("\n", " / ")


def write_csv(name, df, folder):
    """The stand-in as a ratings file in its data set's own format; returns (path, load_ratings_csv options, nnz).

    Book-Crossing: ``;``-separated, quoted, cp1252, string ISBNs, plus the
    implicit rating 0 rows that ``drop_ratings=[0]`` leaves out. Amazon: ISBN-like
    item ids with leading zeros. Jester: the ratings as given (0 included), so
    the file is refused (0 is a real rating there) and the user shifts it.
    """
    path = Path(folder) / f"{name}.csv"
    d = df.copy()
    opts = {}
    if name == "book_crossing":
        d["user"] = d["user"] + 1
        d["item"] = [f"0{i:09d}" for i in d["item"]]
        zeros = d.sample(frac=0.6, random_state=0).assign(rating=0.0)       # BX's implicit ratings
        zeros["item"] = zeros["item"].str[:-1] + "X"
        d = pd.concat([d, zeros])
        d["rating"] = d["rating"].astype(int)
        d = d.rename(columns={"user": "User-ID", "item": "ISBN", "rating": "Book-Rating"})
        d.to_csv(path, sep=";", index=False, encoding="cp1252", quoting=1)
        opts = {"user_col": "User-ID", "item_col": "ISBN", "rating_col": "Book-Rating", "sep": ";",
                "encoding": "cp1252", "drop_ratings": [0]}
        return path, opts, len(df)
    if name == "amazon":
        d["item"] = [f"{i:010d}" for i in d["item"]]
        d["user"] = [f"A{u:013d}" for u in d["user"]]
    d.to_csv(path, index=False)
    return path, opts, len(df)


def write_ml100k(df, A, folder):
    """A 1-5 stand-in in MovieLens 100k's format (``u.data``, ``u.user``, ``u.item``), for the movielens pipeline."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "u.data").write_text("".join(
        f"{u + 1}\t{i + 1}\t{r:g}\t880000000\n" for u, i, r in zip(df["user"], df["item"], df["rating"])))
    first_age = np.array([1, 18, 25, 35, 45, 50, 56])[A["age7"].to_numpy()]
    (folder / "u.user").write_text("".join(
        f"{u + 1}|{a}|{g}|other|00000\n" for u, (a, g) in enumerate(zip(first_age, A["gender"]))))
    n_items = int(df["item"].max()) + 1
    (folder / "u.item").write_bytes("".join(
        f"{i + 1}|Item {i + 1} (1995)|01-Jan-1995||http://x|0|1|0\n" for i in range(n_items)).encode("latin-1"))
    return folder


def run_cli(rec, name, df, A, folder, attribute="gender"):
    """``privrelease run pipelines/movielens_gender.toml --quick`` on the stand-in written as an ml-100k folder."""
    import subprocess

    data = write_ml100k(df, A, Path(folder) / f"{name}-ml100k")
    out = Path(folder) / f"{name}-report-{attribute}"
    cmd = [sys.executable, "-m", "privrelease.cli", "run", str(ROOT / "pipelines" / "movielens_gender.toml"),
           "-o", str(out), "--overwrite", "--quick", "--set", f'path="{data}"', "--set", f"attribute={attribute}",
           "--set", "age_cuts=[18, 25, 35, 45, 50, 56]"]
    with rec.step(name, attribute, "CLI movielens_gender") as row:
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        tail = (p.stderr.strip().splitlines() or [""])[-1]
        row["outcome"] = f"exit {p.returncode}" + ("" if p.returncode == 0 else f": {tail[:300]}")


def run_csv(rec, name, df, folder):
    """``load_ratings_csv`` on the stand-in's file with the options its data set needs."""
    from privrelease.datasets import load_ratings_csv

    path, opts, nnz = write_csv(name, df, folder)
    with rec.step(name, "-", "load_ratings_csv") as row:
        X, users, items = load_ratings_csv(path, **opts)
        lost = nnz - X.nnz
        row["outcome"] = (f"ok: {X.shape}, {X.nnz} ratings" if lost == 0
                          else f"WRONG: {lost} of {nnz} ratings lost")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="curves and RMSE on gender and age7 only; no CLI run")
    parser.add_argument("--only", nargs="+", choices=tuple(STAND_INS), default=tuple(STAND_INS))
    parser.add_argument("--attributes", nargs="+", choices=ATTRIBUTES, default=ATTRIBUTES)
    parser.add_argument("--keep", help="write the CSV files and reports here (default: a temporary folder)")
    args = parser.parse_args(argv)
    rec = Recorder()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for name in args.only:
            t0 = time.perf_counter()
            df, A = STAND_INS[name]()
            rf, X = to_matrix(name, df)
            A = A.set_index(rf.user_ids_)
            print(f"{name}: {X.shape[0]} users x {X.shape[1]} items, {X.nnz} ratings "
                  f"({X.nnz / np.prod(X.shape):.2%} dense), built in {time.perf_counter() - t0:.1f} s", flush=True)
            run_csv(rec, name, df, folder)
            run_library(rec, name, X, A, attributes_=args.attributes, quick=args.quick)
            if not args.quick and name in ("amazon", "netflix"):
                run_cli(rec, name, df, A, folder, "gender")
                run_cli(rec, name, df, A, folder, "age_band")
    table = pd.DataFrame(rec.rows)
    print("\nslowest steps:")
    print(table.sort_values("seconds", ascending=False).head(8)[["data", "attribute", "step", "seconds"]]
          .to_string(index=False))
    bad = table[~table["outcome"].str.startswith("ok")]
    print(f"\n{len(bad)} of {len(table)} steps did not end ok (expected: Jester's file, whose 0 ratings are refused, "
          "and rmse_cost / privacy_utility_curve on implicit feedback, whose scale is one value):")
    print(bad[["data", "attribute", "step", "outcome"]].to_string(index=False, max_colwidth=120))
    return 0


if __name__ == "__main__":
    sys.exit(main())
