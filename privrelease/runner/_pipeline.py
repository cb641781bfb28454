"""Experiment definitions (``pipelines/*.toml``) and how they are run.

A pipeline file names one experiment module of :mod:`privrelease.runner.experiments`
and the keyword arguments of its ``run`` function, and optionally what ``--quick``
runs instead::

    title = "Census: privacy-distortion curve with erasures"
    experiment = "census_erasure"

    [params]
    random_state = 0
    deltas = [0.0, 0.25, 0.5, 1.0, 1.5]

    [quick]
    deltas = [0.0, 1.0]

Every parameter is checked against the experiment's ``PARAMETERS`` schema
(:mod:`privrelease.runner._schema`) before anything runs. Running it writes a
report folder (``report.md``, a self-contained ``report.html``, PNG plots, CSV
tables).
"""

import importlib
import os
import pkgutil
import sys
import time
from pathlib import Path

from ._report import Report, inline_code
from ._schema import OutputFolderError, PipelineError, resolve_quick, validate_params

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["available_experiments", "load_pipeline", "pipeline_params", "run_pipeline", "run_experiment",
           "check_run", "RunIncomplete"]

_ALLOWED_KEYS = {"title", "experiment", "description", "params", "quick"}
_MAX_PIPELINE_BYTES = 1 << 20


class RunIncomplete(RuntimeError):
    """The experiment ran but could not do its job (for example its data set is missing).

    The report explaining why is written; ``report_path`` and ``headline`` say
    where and what. The command line exits with status 1.
    """

    def __init__(self, message, report_path=None, headline=None):
        super().__init__(message)
        self.report_path, self.headline = report_path, headline


class ReportWriteError(RuntimeError):
    """The experiment ran, but its report could not be written: the output folder was taken, replaced or made
    unwritable after the run had started (another run saving into it at the same time, say). Nothing of this
    run is left in the folder; the command line exits with status 1 (a run that could not do its job), not 2,
    which says that nothing ran."""


def available_experiments():
    """Names of the experiment modules that ``experiment = ...`` may name."""
    from . import experiments

    return sorted(m.name for m in pkgutil.iter_modules(experiments.__path__) if not m.name.startswith("_"))


def _experiment_module(name):
    if not isinstance(name, str) or not name.isidentifier():
        raise PipelineError(f"experiment must be a module name such as 'census_erasure', got {name!r}")
    avail = available_experiments()
    if name not in avail:
        raise PipelineError(f"unknown experiment {name!r}; available: {', '.join(avail) or '(none)'}")
    return importlib.import_module(f"privrelease.runner.experiments.{name}")


def load_pipeline(path):
    """Read and validate a pipeline file (its keys and every parameter against the experiment's schema).

    Parameters
    ----------
    path : str or pathlib.Path
        The TOML pipeline file.

    Returns
    -------
    spec : dict with keys ``title``, ``experiment``, ``params``, ``quick``, ``description``, ``path``.

    Raises
    ------
    PipelineError
        Missing or unreadable file, invalid TOML, unknown keys, unknown
        experiment, or a parameter the experiment's schema refuses.
    """
    # '~/pipelines/x.toml' quoted (or after '=') reaches us unexpanded: the data file parameters expand it too
    path = Path(os.path.expanduser(os.fspath(path)))
    if not path.is_file():
        # a FIFO or a device (/dev/null, /dev/stdin) exists: "does not exist" sent the user looking for a typo
        what = ("is a folder, not a file" if path.is_dir() else
                "is a FIFO, socket or device, not a regular file" if path.exists() else "does not exist")
        raise PipelineError(f"pipeline file {str(path)!r} {what}: expected a TOML file (pipelines/NAME.toml)")
    if path.stat().st_size > _MAX_PIPELINE_BYTES:
        raise PipelineError(f"pipeline file {str(path)!r} is {path.stat().st_size} bytes: expected at most "
                            f"{_MAX_PIPELINE_BYTES} (a pipeline file is a few lines of TOML)")
    try:
        # utf-8-sig: a byte-order mark (as some Windows editors write) is dropped, not reported as
        # "Invalid statement (at line 1, column 1)"
        spec = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        raise PipelineError(f"pipeline file {str(path)!r} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise PipelineError(f"pipeline file {str(path)!r} is not valid TOML: {exc}") from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively: a few thousand '[' exhaust the stack
        raise PipelineError(f"pipeline file {str(path)!r} nests arrays or tables too deeply to be read; "
                            "expected a few lines of TOML (parameters are numbers, strings or flat arrays)") from None
    except OSError as exc:
        raise PipelineError(f"cannot read pipeline file {str(path)!r}: {exc.strerror or exc}") from None
    unknown = set(spec) - _ALLOWED_KEYS
    if unknown:
        raise PipelineError(
            f"pipeline file {str(path)!r} has unknown key(s) {sorted(unknown)}; allowed: {sorted(_ALLOWED_KEYS)}"
        )
    if "experiment" not in spec:
        raise PipelineError(f"pipeline file {str(path)!r} must name an experiment (experiment = \"...\")")
    for key in ("title", "description"):
        if key in spec and not isinstance(spec[key], str):
            raise PipelineError(f"pipeline file {str(path)!r}: {key} = {spec[key]!r} must be a string")
    params = spec.get("params", {})
    quick = spec.get("quick", {})
    for key, table in (("params", params), ("quick", quick)):
        if not isinstance(table, dict):
            raise PipelineError(f"[{key}] in {str(path)!r} must be a table, got {table!r}")
    module = _experiment_module(spec["experiment"])
    validate_params(module, params, source=str(path))
    validate_params(module, quick, source=f"{path} [quick]")
    return {
        "title": spec.get("title", spec["experiment"]),
        "experiment": spec["experiment"],
        "description": spec.get("description", ""),
        "params": dict(params),
        "quick": dict(quick),
        "path": str(path),
    }


def pipeline_params(spec, *, quick=False, overrides=None):
    """The parameters a pipeline runs with: ``[params]``, then ``[quick]`` if ``quick``, then ``overrides``.

    A pipeline file's ``[quick]`` table says what ``--quick`` means for it (the
    shipped files mirror the experiments' quick values); the experiment's own
    quick values then fill only the parameters set nowhere, and a value given
    with ``--set`` always wins (:func:`check_run` notes it). An override named
    ``TABLE.KEY`` sets that one key of the table parameter ``TABLE`` (``[params.TABLE]``
    of the file, or a new table), keeping its other keys.

    Parameters
    ----------
    spec : dict
        A pipeline as :func:`load_pipeline` returns it.
    quick : bool, default=False
        Apply the file's ``[quick]`` table (as does ``quick = true`` in ``[params]`` or ``overrides``).
    overrides : dict, default=None
        ``{name: value}`` given with ``--set`` (``"TABLE.KEY"`` names allowed).

    Returns
    -------
    params : dict
    """
    params = dict(spec["params"])
    overrides = dict(overrides or {})
    # ``quick = true`` (in [params] or with --set) is --quick: the file's [quick] table said what quick means for
    # it, and was skipped (ratings_file.toml with --set quick=true ran its six leakage caps, five folds and the
    # forest attacker, each value "kept" by a note)
    asked = overrides.get("quick", params.get("quick"))
    if quick and asked is False and "quick" in overrides:
        raise PipelineError("--quick and --set quick=false contradict each other: expected one of them")
    if quick or asked is True:
        params.update(spec.get("quick", {}))
    dotted = {k: v for k, v in overrides.items() if isinstance(k, str) and "." in k}
    params.update({k: v for k, v in overrides.items() if k not in dotted})
    if dotted:
        _merge_table_keys(_experiment_module(spec["experiment"]), params, dotted, overrides)
    return params


def _merge_table_keys(module, params, dotted, overrides):
    """``--set TABLE.KEY=VALUE``: set (or add) ``KEY`` in the table parameter ``TABLE``, keeping its other keys.

    Only parameters the experiment declares as tables take a dotted key; a table
    given whole (``--set TABLE={...}``) and by one of its keys is refused. The
    merged table is then validated like any other (its own unknown / reserved
    keys and values).
    """
    from ._schema import EstimatorOptions, Table

    name = module.__name__.rsplit(".", 1)[-1]
    tables = sorted(k for k, s in module.PARAMETERS.items() if isinstance(s, (Table, EstimatorOptions)))
    takes = (f"its table parameters are {', '.join(tables)}" if tables
             else "it has no table parameter")
    for key, value in dotted.items():
        table, _, sub = key.partition(".")
        spec = module.PARAMETERS.get(table)
        if spec is None:
            raise PipelineError(f"--set {key}=...: experiment {name!r} has no parameter {table!r}; "
                                f"--set TABLE.KEY sets one key of a table parameter ({takes})")
        if not isinstance(spec, (Table, EstimatorOptions)):
            raise PipelineError(f"--set {key}=...: parameter {table} is not a table (expected {spec.expected}); "
                                f"--set TABLE.KEY sets one key of a table parameter ({takes}); "
                                f"use --set {table}=...")
        if table in overrides:
            raise PipelineError(f"--set {table}=... and --set {key}=... both set {table}; expected the whole "
                                f"table or some of its keys, not both")
        current = params.get(table)
        merged = dict(current) if isinstance(current, dict) else {}
        merged[sub] = value
        params[table] = merged


def check_run(name, params=None, *, quick=None):
    """Validate one run before anything runs: returns ``(module, params to run with, notes)``.

    ``params`` are checked against the experiment's schema (unknown names,
    types, ranges, size caps); ``quick`` fills the experiment's quick values the
    user did not set, and ``notes`` lists the explicit values it left alone. An
    experiment's optional ``check_ready(params)`` then checks the complete set
    (a required data file, what the files hold) and raises :class:`PipelineError`.

    Parameters
    ----------
    name : str
        The experiment (a module of ``privrelease.runner.experiments``).
    params : dict, default=None
        Its parameters (None: none, the defaults).
    quick : bool or None, default=None
        Fill the experiment's quick values (see :func:`~privrelease.runner._schema.quick_values`).

    Returns
    -------
    module : module
        The experiment's module.
    params : dict
        The parameters to run with.
    notes : list of str
        One per explicit value ``quick`` left alone.
    """
    module = _experiment_module(name)
    params = validate_params(module, dict(params or {}))
    params, notes = resolve_quick(module, params, bool(quick))
    ready = getattr(module, "check_ready", None)
    if ready is not None:
        # checks of the parameters the run really runs with ([params], [quick] and --set merged): a
        # parameter a pipeline file leaves to --set (a data file) is missing from its [params] alone
        try:
            ready(params)
        except PipelineError as exc:
            raise type(exc)(f"experiment {name!r}: {exc}") from None
    return module, params, notes


def _input_paths(module, params):
    """``{parameter: path}`` of the run's data files and folders (its :class:`File` and :class:`Folder`
    parameters)."""
    from ._schema import File, Folder

    return {k: params[k] for k, spec in module.PARAMETERS.items()
            if isinstance(spec, (File, Folder)) and isinstance(params.get(k), str) and params[k]}


def _inputs_inside(output_dir, inputs):
    """The inputs (``parameter = path``, joined) that are the folder ``output_dir`` or a file directly in it (links
    followed); "" if none."""
    try:
        real = os.path.realpath(os.path.expanduser(os.fspath(output_dir)))
    except (TypeError, ValueError):
        return ""
    inside = []
    for param, value in inputs.items():
        path = os.path.realpath(os.path.expanduser(value))
        if path == real or os.path.dirname(path) == real:
            inside.append(f"{param} = {value!r}")
    return ", ".join(inside)


def run_experiment(name, output_dir, *, title=None, description="", params=None, quick=None, overwrite=False,
                   log=None):
    """Run one experiment into ``output_dir``; returns ``(report_path, headline, seconds)``.

    Every parameter is validated (:func:`check_run`) and the output folder
    checked (:func:`~privrelease.runner.Report`) before the experiment starts.

    Parameters
    ----------
    name : str
        The experiment (see :func:`check_run`).
    output_dir : str or pathlib.Path
        Report folder.
    title : str, default=None
        Report title (None: ``name``).
    description : str, default=""
        Paragraph at the top of the report.
    params : dict, default=None
        The experiment's parameters.
    quick : bool or None, default=None
        Run the quick configuration (see :func:`check_run`).
    overwrite : bool, default=False
        Allow replacing an earlier report in ``output_dir``.
    log : callable, default=None
        Called with each note (a string) when given.

    Returns
    -------
    report_path : pathlib.Path
    headline : dict
        The experiment's headline numbers.
    seconds : float
        Running time of the experiment.

    Raises
    ------
    PipelineError
        A parameter or the output folder is refused (nothing ran).
    RunIncomplete
        The experiment reported a status other than ``"ok"`` (its report is written).
    ReportWriteError
        The experiment ran but its report could not be written (the output folder changed during the run).
    """
    module, params, notes = check_run(name, params, quick=quick)
    inputs = _input_paths(module, params)
    try:
        report = Report(output_dir, title=title or name, overwrite=overwrite)
    except OutputFolderError as exc:
        inside = _inputs_inside(output_dir, inputs)
        if not inside or "pass --overwrite" not in str(exc):  # a refusal --overwrite lifts (not empty, a report)
            raise
        raise OutputFolderError(f"{exc}; among its files are the run's own input(s) ({inside}): a report never "
                                "replaces them (with --overwrite, a run that would write a file of one's name is "
                                "refused)") from None
    report._guard_inputs(inputs)
    if description:
        report.text(description)
    for note in notes:
        if log is not None:
            log(f"note: {note}")
        report.text(f"*Note: {note}.*")
    t0 = time.perf_counter()
    try:
        headline = module.run(report, **params) or {}
        seconds = time.perf_counter() - t0
        report.text(f"---\n*Generated by `privrelease` in {seconds:.1f} s with parameters "
                    f"{inline_code(params)}.*")
        path = report.save()
    except OutputFolderError as exc:  # the folder was checked before the run: it changed while the run worked
        report.discard()
        raise ReportWriteError(f"experiment {name!r} ran, but its report could not be written: {exc}") from exc
    except BaseException:  # interrupted or failed: what the run wrote is dropped, the earlier report stays whole
        report.discard()
        raise
    status = headline.get("status", "ok") if isinstance(headline, dict) else "ok"
    if status != "ok":
        raise RunIncomplete(f"experiment {name!r} could not do its job (status: {status}); "
                            f"the report at {str(path)!r} says why", report_path=path, headline=headline)
    return path, headline, seconds


def run_pipeline(path, output_dir=None, *, quick=None, overrides=None, overwrite=False, log=None):
    """Run a pipeline file; the report goes to ``output_dir`` (default ``reports/<stem>``).

    ``overrides`` (from ``--set``) replace entries of ``[params]`` (``TABLE.KEY``:
    one key of a table, see :func:`pipeline_params`) and are validated like them.

    Parameters
    ----------
    path : str or pathlib.Path
        The pipeline file.
    output_dir : str or pathlib.Path, default=None
        Report folder (None: ``reports/<stem of path>``).
    quick : bool or None, default=None
        Apply the file's ``[quick]`` table and the experiment's quick values.
    overrides : dict, default=None
        ``{name: value}`` from ``--set``.
    overwrite : bool, default=False
        Allow replacing an earlier report.
    log : callable, default=None
        Called with each note (a string).

    Returns
    -------
    report_path, headline, seconds
        As :func:`run_experiment` returns them.
    """
    spec = load_pipeline(path)
    params = pipeline_params(spec, quick=bool(quick), overrides=overrides)
    stem = Path(path).stem
    if output_dir is None and stem in ("", ".", ".."):
        # '..toml' and '...toml' have the stems '.' and '..': the default reports/<stem> was reports/ itself (which
        # passes as empty when it holds only the other reports' folders) or the current folder
        raise PipelineError(f"pipeline file {str(path)!r}: its name gives no report folder (the default is "
                            f"reports/<name>, and the name is {stem!r}); expected --output DIR, or a file named "
                            "like pipelines/NAME.toml")
    out = output_dir if output_dir is not None else Path("reports") / stem
    return run_experiment(spec["experiment"], out, title=spec["title"], description=spec["description"],
                          params=params, quick=quick, overwrite=overwrite, log=log)
