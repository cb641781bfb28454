"""The ``privrelease`` command line.

``privrelease demo``
    Runs every experiment whose data ships with the package and writes one
    report folder (``reports/demo/report.md`` plus a sub-folder per experiment).
``privrelease run PIPELINE_FILE``
    Runs one experiment definition from ``pipelines/`` and writes its report.
``privrelease list [NAME]``
    Lists the experiments and the pipeline files found, or one experiment's
    parameters (type, range, size cap and its reason).

Every parameter is checked against its experiment's schema and the output
folder is checked before anything runs. A report is ``report.md`` plus one
self-contained ``report.html`` beside it. Reports are written only inside the
output folder (no symbolic link is followed), and a folder holding an earlier
report is refused unless ``--overwrite``. Exit status: 0 done, 1 an experiment
failed or could not do its job (for example a missing data set), 2 a usage
error (one line on stderr; ``--debug`` shows the traceback), 130 stopped by
Ctrl-C, 143 stopped by SIGTERM (both leave the earlier report as it was). Once
the report is written the run has succeeded: the command (``privrelease`` or
``python -m privrelease``) then ignores Ctrl-C and SIGTERM until it exits, with
the status of the run (one sent while the interpreter shut down killed it with
status 143 and no message, or printed a traceback).
"""

import argparse
import logging
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from . import __version__

#: exit status of a user error (bad file, parameter, output folder): nothing ran
EXIT_USAGE = 2
#: exit status of a run that could not do its job (failed or incomplete experiment)
EXIT_FAILED = 1
#: exit status of a run stopped by Ctrl-C (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130
#: exit status of a run stopped by SIGTERM (128 + SIGTERM: ``timeout``, systemd, batch schedulers)
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the command line receives SIGTERM (the handler :func:`main` installs).

    A KeyboardInterrupt, so that a run stops as on Ctrl-C: joblib shuts its worker processes down, the run's
    staging folder is removed and the earlier report stays whole. SIGTERM's default action ended the process at
    once, leaving loky workers running with no parent, joblib's shared-memory folders and the staging folder.
    """

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
    """``KEY=VALUE`` with a TOML value; a value that is not TOML (``x``) is taken as a string.

    ``KEY`` is a parameter name, or ``TABLE.KEY``: one key of a table parameter
    (merged into the pipeline file's table by :func:`~privrelease.runner.pipeline_params`).
    """
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--set expects KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    key = key.strip()
    if not key.isidentifier():
        parts = key.split(".")
        if len(parts) > 2 and all(p.isidentifier() for p in parts):  # a table inside a table: given inline
            raise argparse.ArgumentTypeError(
                f"--set expects KEY=VALUE with KEY a parameter name or TABLE.KEY, got {key!r}; give the inner "
                f"table inline: --set '{'.'.join(parts[:2])}={{{'.'.join(parts[2:])} = ...}}'")
        if len(parts) != 2 or not all(p.isidentifier() for p in parts):
            raise argparse.ArgumentTypeError(
                f"--set expects KEY=VALUE with KEY a parameter name or TABLE.KEY, got {key!r}")
    from .runner._pipeline import tomllib

    try:
        doc = tomllib.loads(f"v = {value}")
    except Exception as exc:
        if value.strip()[:1] in ("{", "[", '"', "'"):
            # a table, array or quoted string TOML cannot read (a key given twice, an unclosed bracket):
            # taken as text, it was refused as "a string, expected a table", hiding TOML's reason
            import re

            reason = re.sub(r"column (\d+)", lambda m: f"column {int(m.group(1)) - 4}", str(exc))  # without "v = "
            raise argparse.ArgumentTypeError(f"--set {key}={value}: the value is not valid TOML ({reason})") from None
        return key, value
    if set(doc) != {"v"}:
        # '--set $'cv=2\nn_jobs=3'': TOML read the line after the value as another key, and it was dropped
        raise argparse.ArgumentTypeError(
            f"--set {key}=...: the value {value!r} holds more than one TOML value (a line break, then "
            f"{', '.join(sorted(set(doc) - {'v'}))}); expected one value per --set")
    return key, doc["v"]


def _log(msg):
    """A progress line on stdout. A reader that went away (``privrelease demo | head -1``) stops the printing, not
    the run: BrokenPipeError ended the run with status 1 and discarded its report."""
    try:
        print(msg, flush=True)
    except BrokenPipeError:
        # as Python's documentation advises: stdout onto devnull, so that the interpreter's final flush of the
        # broken pipe does not fail again at exit
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):  # a stdout without a file descriptor (captured)
            pass


#: set by :func:`main` while it runs as the command itself (no ``argv``): see :func:`_settled`
_COMMAND = {"active": False, "settled": False}


def _settled():
    """The report is written: the run has succeeded, and its status is decided.

    Run as the command, Ctrl-C and SIGTERM are ignored from now until the process exits (SIGTERM was put back to
    its default as :func:`main` returned, and one sent while the interpreter shut down its threads, ~0.4 s, killed
    the process with status 143 and no message; a Ctrl-C printed a traceback from ``threading._shutdown``). Called
    in-process (``main(argv)``, the tests) nothing changes.
    """
    if _COMMAND["active"] and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _COMMAND["settled"] = True


def cmd_demo(args):
    from .runner import (OutputFolderError, ReportWriteError, available_experiments, check_run, load_pipeline,
                         pipeline_params)
    from .runner._report import Report, prepare_output_folder

    avail = set(available_experiments())
    if args.only:
        unknown = sorted(set(args.only) - {n for n, _ in DEMO_EXPERIMENTS})
        if unknown:
            raise UsageError(f"--only names unknown demo experiment(s) {unknown}; expected among "
                             f"{[n for n, _ in DEMO_EXPERIMENTS]}")
    pdir = _pipelines_dir()
    todo = [(n, t) for n, t in DEMO_EXPERIMENTS if n in avail]
    if args.only:
        todo = [(n, t) for n, t in todo if n in args.only]
    if not todo:
        _log("no demo experiment is available in this installation")
        return EXIT_FAILED
    # everything is checked before anything runs: pipeline files, parameters, output folders
    plan = []
    for name, title in todo:
        params = {}
        if pdir is not None and (pdir / f"{name}.toml").is_file():
            spec = load_pipeline(pdir / f"{name}.toml")
            params, title = pipeline_params(spec, quick=args.quick), spec["title"]
        check_run(name, params, quick=args.quick)
        plan.append((name, title, params))
    out = prepare_output_folder(args.output, overwrite=args.overwrite)
    for name, _, _ in plan:
        prepare_output_folder(out / name, overwrite=args.overwrite)
    index = Report(out, title="privrelease demo", overwrite=args.overwrite)
    index.text(
        "Each section below is one experiment run on data that ships with privrelease "
        "(the UCI Adult census file, scikit-learn's Iris, and synthetic ratings shaped like the "
        "papers' surveys). Open the linked sub-reports for every table and plot."
    )
    try:
        return _run_demo(plan, out, index, args)
    except OutputFolderError as exc:  # checked before the runs: the folder changed while they worked (exit 1)
        index.discard()
        raise ReportWriteError(f"the demo ran, but its index page could not be written: {exc}") from exc
    except BaseException:  # interrupted: the index written so far is dropped, the earlier one stays whole
        index.discard()
        raise


def _run_demo(plan, out, index, args):
    """Run the checked ``plan`` into ``out``, each experiment's report in its sub-folder, and save ``index``."""
    from .runner import run_experiment

    import pandas as pd

    rows = []
    failures = 0
    t_all = time.perf_counter()
    for i, (name, title, params) in enumerate(plan, 1):
        _log(f"[{i}/{len(plan)}] {title} ...")
        try:
            path, headline, secs = run_experiment(name, out / name, title=title, params=params,
                                                  quick=True if args.quick else None, overwrite=args.overwrite,
                                                  log=_log)
        except Exception as exc:  # keep going: one broken experiment must not hide the others
            failures += 1
            _log(f"      FAILED: {type(exc).__name__}: {_one_line(exc)}")
            if args.debug:
                traceback.print_exc()
            rows.append({"experiment": name, "status": f"failed: {type(exc).__name__}", "seconds": float("nan")})
            continue
        _log(f"      done in {secs:.1f} s -> {path}")
        rows.append({"experiment": name, "status": "ok", "seconds": round(secs, 1)})
        index.section(title)
        if headline:
            index.text("\n".join(f"- **{k}**: {_fmt(v)}" for k, v in headline.items()))
        index.text(f"[Full report]({name}/report.md)")
    index.section("Run summary")
    index.table(pd.DataFrame(rows), "run_summary")  # a table in both pages (as text it was a paragraph in the HTML)
    path = index.save()
    _settled()
    _log(f"\nReport written to {path.resolve()} and {path.with_suffix('.html').resolve()} "
         f"({time.perf_counter() - t_all:.0f} s)")
    if failures:
        print(f"privrelease: error: {failures} of {len(plan)} demo experiment(s) failed; see {path}",
              file=sys.stderr)
        return EXIT_FAILED
    return 0


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def cmd_run(args):
    from .runner import run_pipeline

    overrides = {}
    for key, value in args.set or []:
        if key in overrides:
            raise UsageError(f"--set {key}=... is given twice; expected each parameter (or table key) at "
                             "most once")
        overrides[key] = value
    _log(f"running {args.pipeline} ...")
    path, headline, secs = run_pipeline(args.pipeline, args.output, quick=True if args.quick else None,
                                        overrides=overrides, overwrite=args.overwrite, log=_log)
    _settled()
    for k, v in (headline or {}).items():
        _log(f"  {k}: {_fmt(v)}")
    # quoted as the error messages show paths: a control character in the folder's name (an ESC) reaches the
    # terminal escaped, not as a command to it
    _log(f"done in {secs:.1f} s; report written to {str(Path(path).resolve())!r} and "
         f"{str(Path(path).with_suffix('.html').resolve())!r}")
    return 0


def cmd_list(args):
    from .runner import available_experiments
    from .runner._pipeline import _experiment_module

    if args.experiment:
        module = _experiment_module(args.experiment)
        quick = getattr(module.run, "quick_values", {})
        _log(f"parameters of {args.experiment} (checked before anything runs):")
        for key, spec in sorted(module.PARAMETERS.items()):
            cap = f"; capped because {spec.why}" if getattr(spec, "why", None) else ""
            q = f"  [--quick: {_toml_text(quick[key])}]" if key in quick else ""
            _log(f"  {key}: {spec.expected}{cap}{q}")
        return 0
    _log("experiments: " + ", ".join(available_experiments()))
    pdir = _pipelines_dir()
    if pdir is not None:
        _log(f"pipeline files in {pdir}:")
        for f in sorted(pdir.glob("*.toml")):
            _log(f"  {f.name}")
    _log("privrelease list NAME shows an experiment's parameters")
    return 0


def _toml_text(value):
    """``value`` in TOML syntax, as ``--set KEY=VALUE`` takes it (``["logistic"]``, ``true``; Python's ``repr``
    showed ``('logistic',)`` and ``True``, which --set reads as the text "('logistic',)")."""
    import json
    import numbers

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k), ensure_ascii=False)} = {_toml_text(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string: the same escapes
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))  # 0.02, inf, nan: TOML floats
    return repr(value)


class UsageError(ValueError):
    """A command-line mistake (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``privrelease: error: ...``) and exit status 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"privrelease: error: {message} (see privrelease --help)\n")


def _add_common(p):
    p.add_argument("--quick", action="store_true",
                   help="small, fast settings; a parameter you set yourself is kept (a note says so)")
    p.add_argument("--overwrite", action="store_true",
                   help="allow writing into a folder that holds an earlier report")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="log what the mapping solver does on stderr: each answer with its certified gap and time, "
                        "and any fallback to cvxpy (which can take minutes); solves in worker processes (an "
                        "experiment's n_jobs > 1) are not shown")


def build_parser():
    parser = _Parser(
        prog="privrelease",
        description="Privacy-preserving release of ratings, what it costs, and paying for privacy.",
        epilog="Exit status: 0 done; 1 an experiment failed or could not do its job (for example its data set "
               "is missing); 2 a usage error (bad pipeline file, parameter or output folder; nothing ran); 130 "
               "stopped by Ctrl-C; 143 stopped by SIGTERM.",
    )
    parser.add_argument("--version", action="version", version=f"privrelease {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("demo", help="run the experiments whose data ships with the package")
    p.add_argument("--output", "-o", default="reports/demo", help="report folder (default: reports/demo)")
    # extend: '--only a --only b' runs both (with the default 'store' the second flag silently dropped 'a')
    p.add_argument("--only", nargs="+", action="extend", metavar="NAME",
                   help="run only these experiments (repeatable)")
    _add_common(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("run", help="run one pipeline file (pipelines/NAME.toml)")
    p.add_argument("pipeline", metavar="PIPELINE_FILE")
    p.add_argument("--output", "-o", default=None, help="report folder (default: reports/<name>)")
    p.add_argument("--set", action="append", type=_parse_override, metavar="KEY=VALUE",
                   help="override a [params] entry (TOML value syntax: 3, 0.5, true, \"text\", [1, 2]), "
                        "repeatable; TABLE.KEY=VALUE sets one key of a table parameter (mapper.class_bins=heldout), "
                        "keeping the file's other keys")
    _add_common(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="list experiments and pipeline files, or one experiment's parameters")
    p.add_argument("experiment", nargs="?", metavar="NAME", help="show this experiment's parameters")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    p.set_defaults(func=cmd_list)
    return parser


def _one_line(exc):
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


class _TermHandler:
    """The command line's SIGTERM handler: raises :class:`Terminated` once; a SIGTERM sent again while the run
    cleans up is ignored (a scheduler's repeated SIGTERM interrupted the cleanup it asked for)."""

    def __init__(self):
        self.fired = False

    def __call__(self, signum, frame):
        if not self.fired:
            self.fired = True
            raise Terminated(f"terminated by signal {signum} (SIGTERM)")


def _stopped_by(exc):
    """The SIGTERM (:class:`Terminated`) or Ctrl-C (KeyboardInterrupt) during whose handling ``exc`` was raised, from
    its chain of causes and contexts; None if none."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):  # Terminated is one
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def command():
    """The ``privrelease`` command's entry point (the installed script and ``python -m privrelease``): :func:`main`
    on ``sys.argv``, and once a report is written Ctrl-C and SIGTERM stay ignored until the process exits with the
    run's status (see :func:`_settled`)."""
    return main(_as_command=True)


def main(argv=None, *, _as_command=False):
    """Run the command line; returns the exit status (0 done, 1 run failed, 2 usage error, 130 Ctrl-C,
    143 SIGTERM).

    ``argv``: the arguments (default ``sys.argv[1:]``). Called from Python the signal handlers are left as they
    were found, whatever ``argv`` (a script's or notebook's ``main()`` left both signals ignored for the rest of
    its process); the command itself (:func:`command`) ignores them from the written report until it exits.
    """
    outer = dict(_COMMAND)
    _COMMAND.update(active=bool(_as_command), settled=False)
    try:
        return _signals_and_streams(argv)
    finally:
        if not _as_command:  # a nested in-process call leaves an outer command's state as it was
            _COMMAND.update(outer)


def _signals_and_streams(argv):
    # a path that is not valid UTF-8 ('-o $'bad\\xffname'') reaches Python as lone surrogates: a strict stdout
    # raised UnicodeEncodeError after the report was written, and the run was called failed (exit 1)
    restore = []
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
            restore.append(stream)
    # SIGTERM stops a run as Ctrl-C does (see Terminated); installed here, in the command line only (a library
    # does not take a signal over on import), and put back when main returns (the tests call main in-process)
    # (a SIGTERM the launcher set to be ignored, `trap '' TERM` or nohup-like wrappers, stays ignored)
    old_term = None
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        old_term = (signal.getsignal(signal.SIGTERM),)
        signal.signal(signal.SIGTERM, _TermHandler())
    try:
        try:
            return _main(argv)
        except KeyboardInterrupt as exc:
            # a SIGTERM (or Ctrl-C) before _main's own handling (the imports and the parsing, ~4 s on a cold
            # start) or in its last message: the same status and line, never a traceback with exit 1
            term = isinstance(exc, Terminated)
            print(f"privrelease: error: {'terminated (SIGTERM)' if term else 'interrupted'}", file=sys.stderr)
            return EXIT_TERMINATED if term else EXIT_INTERRUPTED
    finally:
        if old_term is not None and not _COMMAND["settled"]:  # settled: ignored until the process exits
            # None: a handler not installed from Python, which cannot be put back; the default is the closest
            signal.signal(signal.SIGTERM, signal.SIG_DFL if old_term[0] is None else old_term[0])
        for stream in restore:
            stream.reconfigure(errors="strict")


def _main(argv):
    from .runner import PipelineError, RunIncomplete

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help / --version (0) or a usage error (2, already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    error = None
    log = logging.getLogger("privrelease")
    handler, level = None, log.level
    if getattr(args, "verbose", False):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("privrelease: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    try:
        return args.func(args)
    except (PipelineError, UsageError) as exc:
        error, status, text = exc, EXIT_USAGE, _one_line(exc)
    except RunIncomplete as exc:
        error, status, text = exc, EXIT_FAILED, _one_line(exc)
    except Terminated as exc:
        error, status, text = exc, EXIT_TERMINATED, "terminated (SIGTERM)"
    except KeyboardInterrupt as exc:
        error, status, text = exc, EXIT_INTERRUPTED, "interrupted"
    except Exception as exc:  # the experiment itself failed: one line, the traceback with --debug
        error, status, text = exc, EXIT_FAILED, f"the run failed: {type(exc).__name__}: {_one_line(exc)}"
        stop = _stopped_by(exc)
        if stop is not None:
            # an error raised while a SIGTERM or Ctrl-C unwound the run (joblib's cleanup: "cannot join thread
            # before it is started" when the signal came as a worker thread was starting): stopped, not failed
            status, text = ((EXIT_TERMINATED, "terminated (SIGTERM)") if isinstance(stop, Terminated)
                            else (EXIT_INTERRUPTED, "interrupted"))
    finally:
        if handler is not None:  # main() may run again in the same process (the tests): leave the logger as found
            log.removeHandler(handler)
            log.setLevel(level)
    if args.debug:
        traceback.print_exception(type(error), error, error.__traceback__)
    stopped = status in (EXIT_INTERRUPTED, EXIT_TERMINATED)
    hint = "" if args.debug or stopped else " (rerun with --debug for the traceback)"
    if status == EXIT_USAGE:
        hint = ""
    print(f"privrelease: error: {text}{hint}", file=sys.stderr)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
