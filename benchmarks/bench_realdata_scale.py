"""Rehearse the MovieLens experiments at the size of the real data sets, on fake data in their exact formats.

Run:  MPLBACKEND=Agg .venv/bin/python benchmarks/bench_realdata_scale.py [--quick] [--keep DIR]

The real MovieLens files are not shipped and never downloaded, but a user will
run ``pipelines/movielens_*.toml`` on them. This script writes two fake folders
in their exact formats and sizes, built with
:func:`~privrelease.datasets.make_realistic_ratings` (heavy-tailed activity,
Zipf popularity, gender and age acting on taste through many weak item
preferences):

* ``ml-100k``: 943 users x 1,682 items, about 100,000 ratings (``u.data``,
  ``u.user`` with ages in years, ``u.item`` in latin-1);
* ``ml-1m``: 6,040 users x 3,706 rated movies (ids up to 3,952 with gaps, as in
  the real archive), about 1,000,000 ratings (``ratings.dat``, ``users.dat``
  with the age codes 1, 18, 25, 35, 45, 50, 56 in the real proportions,
  ``movies.dat`` in latin-1, ``::``-separated).

It then runs ``privrelease run`` on them through the command line, one
subprocess per run under ``/usr/bin/time -v`` when present, and prints one row
per run: wall time, peak resident memory, and the time of each stage of the
experiment (the ``[stage]`` lines the runner logs). ``--quick`` runs the
pipelines' ``--quick`` settings only (both data sets); the default also runs
the full settings on ml-100k (the full ml-1m run takes hours on two cores:
``--full-1m`` adds it).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from privrelease.datasets import make_realistic_ratings

ROOT = Path(__file__).resolve().parents[1]
#: MovieLens 1M's age codes and how many of its 6,040 users have each (users.dat)
ML1M_AGE_CODES = (1, 18, 25, 35, 45, 50, 56)
ML1M_AGE_COUNTS = (222, 1103, 2096, 1193, 550, 496, 380)
#: men / women in MovieLens 1M (4,331 / 1,709) and 100k (670 / 273)
ML1M_GENDER = (4331, 1709)
ML100K_GENDER = (670, 273)
#: ml-100k's ages in years, by band of the pipelines' default cuts (under 25, 25-34, 35 and over)
ML100K_AGE_BANDS = ((7, 24, 0.22), (25, 34, 0.41), (35, 73, 0.37))
GENRES = ("Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary", "Drama",
          "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War",
          "Western")


def _timestamps(R, rng):
    """One plausible UNIX time per rating (2000-2003 for ml-1m's era); order within a user is random."""
    return rng.integers(956_703_932, 1_046_454_590, size=R.nnz)


def write_ml1m(folder, *, random_state=0, activity_tail=0.82):
    """Write ratings.dat, users.dat and movies.dat in MovieLens 1M's format; returns (n_users, n_items, nnz)."""
    rng = np.random.default_rng(random_state)
    R, A, _ = make_realistic_ratings(
        6040, 3706, attributes={"gender": ML1M_GENDER, "age": ML1M_AGE_COUNTS},
        activity_tail=activity_tail, max_ratings_per_user=2314, random_state=random_state)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    movie_ids = np.sort(rng.choice(np.arange(1, 3953), size=R.shape[1], replace=False))
    rows = np.repeat(np.arange(R.shape[0]), np.diff(R.indptr))
    ts = _timestamps(R, rng)
    lines = [f"{u + 1}::{m}::{int(r)}::{t}\n"
             for u, m, r, t in zip(rows.tolist(), movie_ids[R.indices].tolist(), R.data.tolist(), ts.tolist())]
    (folder / "ratings.dat").write_text("".join(lines))
    gender = np.where(A["gender"].to_numpy() == 1, "F", "M")
    age = np.asarray(ML1M_AGE_CODES)[A["age"].to_numpy()]
    occupation = rng.integers(0, 21, size=R.shape[0])
    zips = rng.integers(0, 100_000, size=R.shape[0])
    (folder / "users.dat").write_text("".join(
        f"{u + 1}::{g}::{a}::{o}::{z:05d}\n" for u, (g, a, o, z) in enumerate(zip(gender, age, occupation, zips))))
    titles = []
    for j, m in enumerate(movie_ids):
        name = f"Caf\xe9 number {m}" if j % 97 == 0 else f"Movie number {m}"  # some latin-1 titles
        genres = "|".join(sorted(set(rng.choice(GENRES, size=rng.integers(1, 4)).tolist())))
        titles.append(f"{m}::{name} ({1919 + m % 82})::{genres}\n")
    (folder / "movies.dat").write_bytes("".join(titles).encode("latin-1"))
    return R.shape[0], R.shape[1], R.nnz


def write_ml100k(folder, *, random_state=0, activity_tail=0.85):
    """Write u.data, u.user and u.item in MovieLens 100k's format; returns (n_users, n_items, nnz)."""
    rng = np.random.default_rng(random_state)
    R, A, _ = make_realistic_ratings(
        943, 1682, attributes={"gender": ML100K_GENDER, "age": [w for _, _, w in ML100K_AGE_BANDS]},
        activity_tail=activity_tail, max_ratings_per_user=737, random_state=random_state)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows = np.repeat(np.arange(R.shape[0]), np.diff(R.indptr))
    ts = rng.integers(874_724_710, 893_286_638, size=R.nnz)
    (folder / "u.data").write_text("".join(
        f"{u + 1}\t{i + 1}\t{int(r)}\t{t}\n"
        for u, i, r, t in zip(rows.tolist(), R.indices.tolist(), R.data.tolist(), ts.tolist())))
    band = A["age"].to_numpy()
    lo = np.array([b[0] for b in ML100K_AGE_BANDS])[band]
    hi = np.array([b[1] for b in ML100K_AGE_BANDS])[band]
    age = rng.integers(lo, hi + 1)
    gender = np.where(A["gender"].to_numpy() == 1, "F", "M")
    (folder / "u.user").write_text("".join(
        f"{u + 1}|{a}|{g}|other|{z:05d}\n"
        for u, (a, g, z) in enumerate(zip(age, gender, rng.integers(0, 100_000, size=R.shape[0])))))
    (folder / "u.item").write_bytes("".join(
        f"{i + 1}|{'Caf' + chr(233) if i % 97 == 0 else 'Movie'} {i + 1} (1995)|01-Jan-1995||http://x|0|1|0\n"
        for i in range(R.shape[1])).encode("latin-1"))
    return R.shape[0], R.shape[1], R.nnz


def run_pipeline(pipeline, data_dir, out, *, quick, dataset=None, log=None):
    """``privrelease run`` in a subprocess; returns (wall s, peak RSS MiB or None, [(stage, s)], exit code)."""
    cmd = [sys.executable, "-m", "privrelease.cli", "run", str(ROOT / "pipelines" / pipeline), "-o", str(out),
           "--overwrite", "--set", f'path="{data_dir}"']
    if dataset:
        cmd += ["--set", f'dataset="{dataset}"']
    if quick:
        cmd.append("--quick")
    timer = Path("/usr/bin/time").exists()
    if timer:
        cmd = ["/usr/bin/time", "-v"] + cmd
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if log is not None:
        Path(log).write_text(proc.stdout + proc.stderr)
    stages = [(m.group(1), float(m.group(2)))
              for m in re.finditer(r"^\[stage\] [^:]+: (.+): ([0-9.]+) s$", proc.stdout, re.M)]
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return wall, (int(rss.group(1)) / 1024 if rss else None), stages, proc.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the pipelines' --quick settings only")
    parser.add_argument("--full-1m", action="store_true", help="also the full settings on ml-1m (hours)")
    parser.add_argument("--keep", metavar="DIR", help="write the fake folders and reports here and keep them")
    args = parser.parse_args(argv)
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="privrelease_realdata_"))
    try:
        for name, writer in (("ml-100k", write_ml100k), ("ml-1m", write_ml1m)):
            t0 = time.perf_counter()
            n_users, n_items, nnz = writer(base / "data" / name)
            print(f"fake {name}: {n_users} users x {n_items} items, {nnz:,} ratings, written in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
        runs = [("movielens_joint.toml", "ml-100k", True), ("movielens_1m_joint.toml", "ml-1m", True)]
        if not args.quick:
            runs += [("movielens_gender.toml", "ml-100k", False), ("movielens_joint.toml", "ml-100k", False)]
        if args.full_1m:
            runs.append(("movielens_1m_joint.toml", "ml-1m", False))
        rows = []
        for pipeline, dataset, quick in runs:
            label = f"{Path(pipeline).stem} on fake {dataset}{' --quick' if quick else ''}"
            print(f"running {label} ...", flush=True)
            out = base / "reports" / (Path(pipeline).stem + ("_quick" if quick else ""))
            wall, rss, stages, rc = run_pipeline(pipeline, base / "data", out, quick=quick, dataset=dataset,
                                                 log=str(out) + ".log")
            rows.append((label, wall, rss, stages, rc))
            print(f"  {wall:.0f} s, peak {rss or float('nan'):.0f} MiB, exit {rc}", flush=True)
        print(f"\n{'run / stage':<58} {'time s':>9} {'peak MiB':>9}")
        for label, wall, rss, stages, rc in rows:
            print(f"{label + ('' if rc == 0 else f' (exit {rc})'):<58} {wall:>9.1f} "
                  f"{'' if rss is None else f'{rss:.0f}':>9}")
            for stage, seconds in stages:
                print(f"  {stage:<56} {seconds:>9.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
