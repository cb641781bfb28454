"""The ``privrelease`` command line.

``privrelease demo``
    Runs every experiment whose data ships with the package and writes one
    report folder (``reports/demo/report.md`` plus a sub-folder per experiment).
``privrelease run PIPELINE_FILE``
    Runs one experiment definition from ``pipelines/`` and writes its report.
``privrelease list``
    Lists the experiments and the pipeline files found.
"""

import argparse
import sys
import time
from pathlib import Path

from . import __version__

# Experiments whose data ships with the package, in the order the demo shows them.
DEMO_EXPERIMENTS = [
    ("census_erasure", "Census: who earns more than 50K, hidden by erasures"),
    ("iris_quantization", "Iris: quantization barely changes the privacy-distortion curve"),
    ("politics_tv_binarized", "Politics and TV: binarized ratings, Hamming clusters"),
    ("politics_tv_ratings", "Politics and TV: star ratings, L2 clusters"),
    ("synthetic_ratings", "Synthetic ratings: what privacy costs in RMSE"),
    ("privacy_auction", "Privacy auction: paying for private ratings"),
    ("truthful_regression", "Truthful linear regression with peer-prediction payments"),
    ("contract_design", "Contracts for data with a biased private algorithm"),
]


def _pipelines_dir():
    """The repository's ``pipelines/`` folder (present in a source checkout / editable install)."""
    here = Path(__file__).resolve().parents[1] / "pipelines"
    if here.is_dir():
        return here
    cwd = Path.cwd() / "pipelines"
    return cwd if cwd.is_dir() else None


def _parse_override(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--set expects KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    from .runner._pipeline import tomllib

    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except Exception:
        parsed = value
    return key.strip(), parsed


def _log(msg):
    print(msg, flush=True)


def cmd_demo(args):
    from .runner import available_experiments, load_pipeline, run_experiment
    from .runner._report import Report, markdown_table

    import pandas as pd

    out = Path(args.output)
    avail = set(available_experiments())
    pdir = _pipelines_dir()
    todo = [(n, t) for n, t in DEMO_EXPERIMENTS if n in avail]
    if args.only:
        todo = [(n, t) for n, t in todo if n in args.only]
    if not todo:
        _log("no demo experiment is available in this installation")
        return 1
    index = Report(out, title="privrelease demo")
    index.text(
        "Each section below is one experiment run on data that ships with privrelease "
        "(the UCI Adult census file, scikit-learn's Iris, and synthetic ratings shaped like the "
        "papers' surveys). Open the linked sub-reports for every table and plot."
    )
    rows = []
    failures = 0
    t_all = time.perf_counter()
    for i, (name, title) in enumerate(todo, 1):
        params = {}
        if pdir is not None and (pdir / f"{name}.toml").is_file():
            spec = load_pipeline(pdir / f"{name}.toml")
            params, title = spec["params"], spec["title"]
        _log(f"[{i}/{len(todo)}] {title} ...")
        try:
            path, headline, secs = run_experiment(name, out / name, title=title, params=params,
                                                  quick=True if args.quick else None)
        except Exception as exc:  # keep going: one broken experiment must not hide the others
            failures += 1
            _log(f"      FAILED: {type(exc).__name__}: {exc}")
            rows.append({"experiment": name, "status": f"failed: {type(exc).__name__}", "seconds": float("nan")})
            continue
        _log(f"      done in {secs:.1f} s -> {path}")
        rows.append({"experiment": name, "status": "ok", "seconds": round(secs, 1)})
        index.section(title)
        if headline:
            index.text("\n".join(f"- **{k}**: {_fmt(v)}" for k, v in headline.items()))
        index.text(f"[Full report]({name}/report.md)")
    index.section("Run summary")
    index.text(markdown_table(pd.DataFrame(rows)))
    path = index.save()
    _log(f"\nReport written to {path.resolve()} ({time.perf_counter() - t_all:.0f} s)")
    return 1 if failures else 0


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def cmd_run(args):
    from .runner import run_pipeline

    overrides = dict(args.set or [])
    out = args.output
    _log(f"running {args.pipeline} ...")
    path, headline, secs = run_pipeline(args.pipeline, out, quick=True if args.quick else None,
                                        overrides=overrides)
    for k, v in (headline or {}).items():
        _log(f"  {k}: {_fmt(v)}")
    _log(f"done in {secs:.1f} s; report written to {Path(path).resolve()}")
    return 0


def cmd_list(args):
    from .runner import available_experiments

    _log("experiments: " + ", ".join(available_experiments()))
    pdir = _pipelines_dir()
    if pdir is not None:
        _log(f"pipeline files in {pdir}:")
        for f in sorted(pdir.glob("*.toml")):
            _log(f"  {f.name}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="privrelease",
        description="Privacy-preserving release of ratings, what it costs, and paying for privacy.",
    )
    parser.add_argument("--version", action="version", version=f"privrelease {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", help="run the experiments whose data ships with the package")
    p.add_argument("--output", "-o", default="reports/demo", help="report folder (default: reports/demo)")
    p.add_argument("--quick", action="store_true",
                   help="small, fast settings (about 30 s) instead of the full runs (a few minutes)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these experiments")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("run", help="run one pipeline file (pipelines/NAME.toml)")
    p.add_argument("pipeline", metavar="PIPELINE_FILE")
    p.add_argument("--output", "-o", default=None, help="report folder (default: reports/<name>)")
    p.add_argument("--quick", action="store_true", help="small, fast settings")
    p.add_argument("--set", action="append", type=_parse_override, metavar="KEY=VALUE",
                   help="override a [params] entry (TOML value syntax), repeatable")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="list experiments and pipeline files")
    p.set_defaults(func=cmd_list)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"privrelease: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
