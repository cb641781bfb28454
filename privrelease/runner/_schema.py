"""Parameter schemas of the experiments, and the errors the runner reports to a user.

Every experiment module of :mod:`privrelease.runner.experiments` declares one
:class:`Spec` per keyword argument of its ``run`` function in a module-level
``PARAMETERS`` dict (type, range, size cap and the reason for the cap), and may
declare the values ``--quick`` uses for the parameters the user did not set
(the :func:`quick_values` decorator of ``run``) and ``check_together(params)``
(constraints between parameters).
:func:`validate_params` checks a whole parameter set against them before
anything runs, so a wrong value is refused with a message naming the parameter,
the value received and what was expected, instead of ending in a traceback, an
out-of-memory or a silently wrong report.

``--quick`` and explicit values: a value the user set (in the pipeline file or
with ``--set``) always wins over the quick values; the runner says so in its
log and in the report (:func:`resolve_quick`).
"""

import functools
import math
import numbers
import os

from ..utils._validation import N_JOBS_RULE, check_n_jobs, format_bound

__all__ = [
    "PipelineError",
    "ParameterTypeError",
    "OutputFolderError",
    "Spec",
    "Bool",
    "Either",
    "Int",
    "Float",
    "Seed",
    "NJobs",
    "Choice",
    "Text",
    "Scalar",
    "File",
    "Folder",
    "Seq",
    "Table",
    "EstimatorOptions",
    "validate_params",
    "resolve_quick",
    "quick_values",
]


class PipelineError(ValueError):
    """A user error found by the runner: a bad pipeline file, parameter or output folder.

    The command line prints its message on one line and exits with status 2.
    """


class ParameterTypeError(PipelineError, TypeError):
    """A pipeline parameter of the wrong type (``n_points = "ten"``, ``quick = "no"``)."""


class OutputFolderError(PipelineError):
    """An output folder the runner refuses to write into (symlink, earlier report, a file, unwritable)."""


def _show(value):
    """The value as the user wrote it (TOML-like), for error messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e6:
        return f"{value:g}"
    text = repr(value)
    # a long value keeps both ends: a path's file name is at its end (a deep temporary folder hid it)
    return text if len(text) <= 80 else text[:38] + "..." + text[-39:]


def _type_name(value):
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
            tuple: "array", dict: "table"}.get(type(value), type(value).__name__)


def _beyond_float64(value):
    """`` (an integer of N bits, beyond the float64 range)`` for an int that float64 cannot hold, else ``""``.

    math.isfinite(10**400) raised OverflowError, which escaped as "the run failed" (as
    :func:`privrelease.utils.check_number` does, such an integer is infinite, so not a finite number).
    """
    try:
        float(value)
    except OverflowError:
        return f" (an integer of {abs(int(value)).bit_length()} bits, beyond the float64 range)"
    return ""


class Spec:
    """One parameter's declaration; ``check(name, value)`` returns the value or raises."""

    #: short description of what is expected, used in messages and ``privrelease list``
    expected = "a value"

    def check(self, name, value):  # pragma: no cover - abstract
        raise NotImplementedError

    def _type_error(self, name, value):
        return ParameterTypeError(
            f"parameter {name} = {_show(value)} ({_type_name(value)}): expected {self.expected}")

    def _value_error(self, name, value, extra=""):
        return PipelineError(f"parameter {name} = {_show(value)}: expected {self.expected}{extra}")


class Bool(Spec):
    """A real boolean (TOML ``true`` / ``false``); ``"no"``, ``0`` or ``1`` are refused."""

    expected = "a boolean (true or false, without quotes)"

    def check(self, name, value):
        if not isinstance(value, bool):
            raise self._type_error(name, value)
        return value


class _Range(Spec):
    def __init__(self, low=None, high=None, *, why=None, low_open=False, high_open=False):
        self.low, self.high, self.why = low, high, why
        self.low_open, self.high_open = low_open, high_open

    def _range_text(self):
        lo = "" if self.low is None else ("(" if self.low_open else "[") + format_bound(self.low)
        hi = "" if self.high is None else format_bound(self.high) + (")" if self.high_open else "]")
        if self.low is not None and self.high is not None:
            return f" in {lo}, {hi}"
        if self.low is not None:
            return f" {'>' if self.low_open else '>='} {format_bound(self.low)}"
        if self.high is not None:
            return f" {'<' if self.high_open else '<='} {format_bound(self.high)}"
        return ""

    def _check_range(self, name, value):
        too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        too_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        if too_high and self.why:
            raise PipelineError(
                f"parameter {name} = {_show(value)}: expected {self.expected}; the cap {format_bound(self.high)} "
                f"is there because {self.why}")
        if too_low or too_high:
            raise self._value_error(name, value)
        return value


class Int(_Range):
    """An integer (not a boolean) in a closed range; ``why`` explains the upper cap."""

    @property
    def expected(self):
        return "an integer" + self._range_text()

    def check(self, name, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            if isinstance(value, float) and value.is_integer() and self.high is not None and value > self.high:
                return self._check_range(name, value)  # 1e9: the cap is the real news
            raise self._type_error(name, value)
        return self._check_range(name, int(value))


class Float(_Range):
    """A finite real number (integers accepted, booleans refused) in a range."""

    @property
    def expected(self):
        return "a finite number" + self._range_text()

    def check(self, name, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise self._type_error(name, value)
        beyond = _beyond_float64(value)
        if beyond or not math.isfinite(value):
            raise self._value_error(name, value, beyond)
        return self._check_range(name, float(value))


class Seed(Int):
    """A random seed: an integer in [0, 2**32 - 1] (reports are reproducible by design)."""

    def __init__(self):
        super().__init__(0, 2**32 - 1)

    @property
    def expected(self):
        return "an integer seed in [0, 4294967295]"


class NJobs(Spec):
    """joblib's number of workers, by the library's own rule (``check_n_jobs``): -1 is every core, -2 all but one
    (the schemas' ``Int(1, 64)`` refused -1, which the Python API takes)."""

    expected = N_JOBS_RULE

    def check(self, name, value):
        try:
            return check_n_jobs(value)
        except TypeError:
            raise self._type_error(name, value) from None
        except ValueError:
            raise self._value_error(name, value) from None


class Choice(Spec):
    """One of a fixed set of strings."""

    def __init__(self, options):
        self.options = tuple(options)

    @property
    def expected(self):
        return "one of " + ", ".join(repr(o) for o in self.options)

    def check(self, name, value):
        if not isinstance(value, str):
            raise self._type_error(name, value)
        if value not in self.options:
            raise self._value_error(name, value)
        return value


class Either(Spec):
    """A value accepted by one of ``specs`` (tried in order), e.g. ``Either(Choice(("auto",)), Int(1, 943))``."""

    def __init__(self, *specs):
        self.specs = specs

    @property
    def expected(self):
        return " or ".join(s.expected for s in self.specs)

    def check(self, name, value):
        type_only = True
        for spec in self.specs:
            try:
                return spec.check(name, value)
            except ParameterTypeError:
                continue
            except PipelineError:
                type_only = False  # the right type, a value out of range
        raise self._type_error(name, value) if type_only else self._value_error(name, value)


class Text(Spec):
    """A string of at most ``max_len`` characters."""

    def __init__(self, max_len=200):
        self.max_len = max_len

    @property
    def expected(self):
        return f"a string of at most {self.max_len} characters"

    def check(self, name, value):
        if not isinstance(value, str):
            raise self._type_error(name, value)
        if len(value) > self.max_len:
            raise self._value_error(name, value)
        return value


class Scalar(Spec):
    """A finite number, a boolean or a short string (free-form options such as ``algo_params``)."""

    expected = "a finite number, a boolean or a string of at most 200 characters"

    def check(self, name, value):
        if isinstance(value, bool):
            return value
        if isinstance(value, numbers.Real):
            beyond = _beyond_float64(value)
            if beyond or not math.isfinite(value):
                raise self._value_error(name, value, beyond)
            return value
        if isinstance(value, str) and len(value) <= 200:
            return value
        raise self._type_error(name, value)


class Folder(Spec):
    """The path of an existing folder (a data set the experiment reads)."""

    expected = "the path of an existing folder"

    def check(self, name, value):
        if not isinstance(value, str):
            raise self._type_error(name, value)
        if not value or not os.path.isdir(os.path.expanduser(value)):
            raise self._value_error(name, value, " (it does not exist or is not a folder)")
        return value


class File(Spec):
    """The path of an existing file (a data file the experiment reads)."""

    expected = "the path of an existing file"

    def check(self, name, value):
        if not isinstance(value, str):
            raise self._type_error(name, value)
        path = os.path.expanduser(value)
        if not value or not os.path.isfile(path):
            # a FIFO or a device (/dev/null) exists: "it does not exist" sent the user looking for a typo
            what = ("is a folder" if value and os.path.isdir(path) else
                    "is a FIFO, socket or device, not a regular file" if value and os.path.exists(path) else
                    "does not exist")
            raise self._value_error(name, value, f" (it {what})")
        return value


class Seq(Spec):
    """An array whose items all satisfy ``item``; ``min_len`` / ``max_len`` (``why`` explains the cap)."""

    def __init__(self, item, *, min_len=1, max_len=100, why=None, increasing=False, unique=False):
        self.item, self.min_len, self.max_len, self.why = item, min_len, max_len, why
        self.increasing, self.unique = increasing, unique

    @property
    def expected(self):
        order = ", increasing" if self.increasing else (", without repeats" if self.unique else "")
        return (f"an array of {self.min_len} to {self.max_len} items{order}, each "
                f"{self.item.expected}")

    def check(self, name, value):
        if not isinstance(value, (list, tuple)):
            raise self._type_error(name, value)
        if len(value) > self.max_len and self.why:
            raise PipelineError(
                f"parameter {name} has {len(value)} items: expected at most {self.max_len}; the cap is there "
                f"because {self.why}")
        if not self.min_len <= len(value) <= self.max_len:
            raise PipelineError(f"parameter {name} = {_show(value)} has {len(value)} items: expected "
                                f"{self.expected}")
        out = [self.item.check(f"{name}[{i}]", v) for i, v in enumerate(value)]
        if self.increasing and any(b <= a for a, b in zip(out, out[1:])):
            raise self._value_error(name, value)
        if self.unique and len(set(out)) != len(out):
            raise self._value_error(name, value)
        return type(value)(out) if isinstance(value, tuple) else out


class Table(Spec):
    """A TOML table with the given keys (each a :class:`Spec`); unknown keys refused.

    ``free`` (a :class:`Spec`) admits any other key whose value satisfies it
    (for example a recommender's ``algo_params``): a key that is a Python
    identifier (a keyword argument), or, with ``free_key`` (a :class:`Spec`
    such as ``Text(200)``), any key it accepts (the ``cuts`` of a table's
    columns, whose names need not be identifiers).
    """

    def __init__(self, fields=None, *, free=None, free_key=None, max_len=50):
        self.fields, self.free, self.max_len = dict(fields or {}), free, max_len
        self.free_key = free_key

    @property
    def expected(self):
        if self.fields and self.free is None:
            return "a table with keys among " + ", ".join(sorted(self.fields))
        return f"a table of at most {self.max_len} entries"

    def check(self, name, value):
        if not isinstance(value, dict):
            raise self._type_error(name, value)
        if len(value) > self.max_len:
            raise self._value_error(name, value)
        out = {}
        for k, v in value.items():
            if k in self.fields:
                out[k] = self.fields[k].check(f"{name}.{k}", v)
            elif self.free is not None and self._free_key(name, k):
                out[k] = self.free.check(f"{name}.{k}", v)
            else:
                raise PipelineError(f"parameter {name} has an unknown key {k!r}: expected {self.expected}")
        return out

    def _free_key(self, name, key):
        if self.free_key is None:
            return isinstance(key, str) and key.isidentifier()
        try:
            self.free_key.check(f"{name} key", key)
        except PipelineError:
            return False
        return True


class EstimatorOptions(Spec):
    """A table of keyword arguments passed through to an estimator (``[params.mapper]``).

    ``make`` builds the estimator from keyword arguments; ``accepted`` names the
    keys a user may set; ``reserved`` maps each key the experiment sets itself to
    the sentence telling what to use instead. Each value is checked by the
    estimator's own parameter validation (scikit-learn's ``_validate_params``
    against its ``_parameter_constraints``), so the constraints live in one place.
    ``limits`` maps an accepted key to a :class:`Spec` checked first: a bound the
    experiment's run would enforce only once it has started (stated by ``list``).
    """

    def __init__(self, make, accepted, reserved=None, *, label=None, limits=None):
        self.make, self.accepted = make, tuple(sorted(accepted))
        self.reserved = dict(reserved or {})
        self.label = label or getattr(make, "__name__", "estimator")
        self.limits = dict(limits or {})

    def derive(self, *, accept=(), reserve=None):
        """The same options for another experiment: ``accept`` keys move to the accepted ones (no longer
        reserved); ``reserve`` maps keys to the sentence telling what to use instead (no longer accepted,
        the sentence replaces an earlier one). The validation is this class's, with the same ``make``."""
        reserve = dict(reserve or {})
        unknown = sorted((set(accept) | set(reserve)) - set(self.accepted) - set(self.reserved))
        if unknown:  # pragma: no cover - a typo in an experiment's declaration
            raise ValueError(f"derive names keys {unknown} that {self.label} neither accepts nor reserves")
        accepted = (set(self.accepted) | set(accept)) - set(reserve)
        reserved = {k: v for k, v in self.reserved.items() if k not in accept}
        reserved.update(reserve)
        limits = {k: v for k, v in self.limits.items() if k in accepted}
        return type(self)(self.make, accepted, reserved, label=self.label, limits=limits)

    @property
    def expected(self):
        text = f"a table of {self.label} options among " + ", ".join(self.accepted)
        for k, spec in sorted(self.limits.items()):
            text += f"; {k}: {spec.expected}" + (f" (capped because {spec.why})" if getattr(spec, "why", None)
                                                  else "")
        return text

    def check(self, name, value):
        from sklearn.utils._param_validation import InvalidParameterError

        if not isinstance(value, dict):
            raise self._type_error(name, value)
        out = {}
        for k, v in value.items():
            if k in self.reserved:
                raise PipelineError(f"parameter {name}.{k} is set by the experiment itself: "
                                    f"{self.reserved[k]}")
            if k not in self.accepted:
                raise PipelineError(f"parameter {name} has an unknown key {k!r}: expected keys among "
                                    + ", ".join(self.accepted))
            v = Scalar().check(f"{name}.{k}", v)
            try:
                self.make(**{k: v})._validate_params()  # the estimator's own constraint first (type, sign ...)
            except InvalidParameterError as exc:
                text = str(exc).replace(f"The {k!r} parameter of {self.label} must be ", "expected ")
                raise PipelineError(f"parameter {name}.{k} = {_show(v)}: {text}") from None
            if k in self.limits:
                self.limits[k].check(f"{name}.{k}", v)
            out[k] = v
        return out


def _schema(module):
    name = module.__name__.rsplit(".", 1)[-1]
    schema = getattr(module, "PARAMETERS", None)
    if not isinstance(schema, dict):  # pragma: no cover - every shipped experiment declares one
        raise TypeError(f"experiment {name!r} declares no PARAMETERS schema")
    return name, schema


def validate_params(module, params, *, source=None):
    """Check ``params`` against the experiment's ``PARAMETERS``; return the checked values.

    Parameters
    ----------
    module : module
        An experiment module with ``run``, ``PARAMETERS`` and optionally ``check_together``.
    params : dict
        The parameters as read from the pipeline file and ``--set``.
    source : str, optional
        Where they come from (pipeline file), quoted in messages.

    Raises
    ------
    PipelineError
        Unknown parameter, value out of range or over its size cap.
    ParameterTypeError
        Value of the wrong type.
    """
    name, schema = _schema(module)
    where = f"{source}: " if source else f"experiment {name!r}: "
    unknown = sorted(k for k in params if k not in schema)
    if unknown:
        raise PipelineError(f"{where}unknown parameter(s) {unknown}; experiment {name!r} takes "
                            f"{sorted(schema)}")
    try:
        checked = {k: schema[k].check(k, v) for k, v in params.items()}
        together = getattr(module, "check_together", None)
        if together is not None:
            together(checked)
    except PipelineError as exc:
        raise type(exc)(f"{where}{exc}") from None
    return checked


def _plain(value):
    """Arrays compare as lists (a TOML array against a tuple default)."""
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def resolve_quick(module, params, quick):
    """Apply ``--quick``: fill the experiment's quick values the user did not set.

    Returns ``(params, notes)``: the parameters to run with (``quick`` set when
    asked for) and one note per explicit value that ``--quick`` left alone.
    """
    params = dict(params)
    notes = []
    if quick:
        params["quick"] = True
    if params.get("quick") is True:
        for k, v in getattr(module.run, "quick_values", {}).items():
            if k in params:
                if _plain(params[k]) != _plain(v):
                    notes.append(f"--quick keeps your {k} = {_show(params[k])} (quick would use {_show(v)})")
            else:
                params[k] = v
    return params, notes


def quick_values(values):
    """Decorator of an experiment's ``run``: with ``quick=True`` the ``values`` fill unset keywords.

    A keyword the caller passed explicitly is never replaced, so ``--quick``
    cannot silently change a value the user set. The decorated function keeps
    its signature (``inspect.signature`` follows ``__wrapped__``) and exposes
    ``values`` as ``run.quick_values``.
    """
    values = dict(values)

    def decorate(run):
        @functools.wraps(run)
        def wrapper(report, *, quick=False, **kwargs):
            if quick:
                for k, v in values.items():
                    kwargs.setdefault(k, v)
            return run(report, quick=quick, **kwargs)

        wrapper.quick_values = values
        return wrapper

    return decorate
