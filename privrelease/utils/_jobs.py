"""joblib calls whose warnings reach the caller, whatever the backend.

A warning raised in a joblib worker process (loky, the default backend, or multiprocessing) was printed on that
process's stderr and lost: the caller's ``warnings.catch_warnings``, ``pytest.warns`` and ``-W error`` saw nothing,
so a fit that warned at ``n_jobs=1`` ran silently at ``n_jobs=2``. :func:`run_jobs` runs each call through
:class:`_Captured`, which records the warnings a call raises in another process (with their category, message, file
and line) and returns them with its value; the caller's process issues them again, in order, under its own filters,
once per distinct category and message. A call that runs in the caller's process (``n_jobs=1``, the threading
backend) is not wrapped in anything: its warnings reach the caller as they are raised (``catch_warnings`` is one
setting of the whole process, so recording in a thread would swap the filters of every other thread).
"""
import os
import sys
import traceback
import warnings

__all__ = ["run_jobs"]

#: the "default" action's registries of the warnings whose file is no loaded module's (code sent by value)
_REGISTRIES = {}


class _Captured:
    """``func`` as a joblib task: ``(value, warnings)``, the warnings recorded only in another process."""

    def __init__(self, func):
        self.func = func
        self.parent = os.getpid()

    def __call__(self, *args, **kwargs):
        if os.getpid() == self.parent:
            try:
                return self.func(*args, **kwargs), ()
            except Exception as exc:
                # raised as it is by run_jobs (joblib stops dispatching at once): told apart from joblib's own
                # errors, which run_jobs reads as a value or a task that could not be pickled (a call's TypeError,
                # scikit-learn's InvalidParameterError among them, was reported as one)
                raise _OwnError(exc) from None
        recorder = _Recorder()
        with warnings.catch_warnings():
            # every warning reaches the recorder (the first of each category and text is kept: a job raising a
            # million warnings held them all, 330 bytes each); the caller's filters decide what is shown
            warnings.simplefilter("always")
            warnings.showwarning = recorder
            try:
                value = self.func(*args, **kwargs)
            except BaseException as exc:
                # returned, not raised: joblib raised the first error before yielding the values (and warnings) of
                # the calls before it, which the caller then never saw; in order, as with n_jobs=1. BaseException:
                # a KeyboardInterrupt or SystemExit the call raised came first too, and loky restarted its workers
                return _Failed(exc), recorder.portable()
        return value, recorder.portable()


class _OwnError(Exception):
    """A call's own error in this process, carried through joblib to :func:`run_jobs`, which raises the original."""

    def __init__(self, exc):
        super().__init__(exc)
        self.exc = exc


class _Failed:
    """An exception a call raised in a worker, with its traceback's text (issued as its cause in the caller)."""

    def __init__(self, exc):
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        # an error that cannot be sent back (it holds a lock; its __init__ takes other arguments than its args)
        # broke the pool or lost its message: sent as a RuntimeError holding its text
        self.exc = exc if _sendable(exc) else RuntimeError(f"{type(exc).__name__}: {exc} (raised in a worker "
                                                           "process and not picklable; its traceback is the cause)")


def _sendable(obj):
    """Whether ``obj`` survives the trip back from a worker (loky sends values with cloudpickle when it is
    installed, else with pickle)."""
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - cloudpickle comes with dask
        import pickle as cloudpickle
    try:
        cloudpickle.loads(cloudpickle.dumps(obj))
        return True
    except Exception:
        return False


class _RemoteTraceback(Exception):
    def __str__(self):
        return "\n\n" + self.args[0]


class _Recorder:
    """``warnings.showwarning`` in a worker: the first warning of each category and text, in order."""

    def __init__(self):
        self.records = {}

    def __call__(self, message, category, filename, lineno, file=None, line=None):
        self.records.setdefault((category, str(message)), (message, category, filename, lineno))

    def portable(self):
        """``(message, category, filename, lineno)`` of each distinct warning recorded, in order, as can be sent
        back to the caller's process (loky returns values with cloudpickle, which sends a class defined in
        ``__main__`` by value): a category that cannot be sent is its nearest built-in base, a message that cannot
        its text."""
        out = []
        for message, category, filename, lineno in self.records.values():
            if not _sendable(category):
                category = next(c for c in category.__mro__ if c.__module__ == "builtins")
            if not _sendable(message):
                message = str(message)
            out.append((message, category, filename, lineno))
        return tuple(out)


def _module_of(filename, modules):
    """The name of the loaded module whose file is ``filename`` (the filters match the module name), or None;
    ``modules`` caches the files of the loaded modules (scanning them all for each of 1e5 distinct warnings took
    two minutes)."""
    if filename not in modules:
        modules.update({getattr(m, "__file__", None): name for name, m in list(sys.modules.items())})
        modules.setdefault(filename, None)
    name = modules[filename]
    return name if name in sys.modules else None


def reissue(records, seen, modules=None):
    """Issue the ``records`` of :meth:`_Recorder.portable` in this process, skipping a ``(category, message)`` in
    ``seen``.

    Each goes through the caller's filters as if raised at its file and line in its module (the module's registry
    too: the "default" action shows it once, as a warning raised here would be); one raised in the library (a
    worker has no user frame to name: :func:`user_stacklevel` named the library's call) as if raised at the
    caller's line, as the same call at n_jobs=1 names it (a filter on the caller's module matched at n_jobs=1
    only)."""
    from ._validation import _library_dirs, user_stacklevel

    modules = {} if modules is None else modules
    library, level = _library_dirs(), None
    for message, category, filename, lineno in records:
        key = (category, str(message))
        if key in seen:
            continue
        seen.add(key)
        if isinstance(filename, str) and filename.startswith(library):
            level = user_stacklevel() if level is None else level
            warnings.warn(message, category, stacklevel=level)
            continue
        module = _module_of(filename, modules)
        # module=None passed explicitly is not "unknown" to the C implementation: the warning was never shown
        where = {"registry": _REGISTRIES.setdefault(filename, {})} if module is None else {
            "module": module, "registry": vars(sys.modules[module]).setdefault("__warningregistry__", {})}
        warnings.warn_explicit(message, category, filename, lineno, **where)


def _is_pickling_error(exc):
    """Whether ``exc``, raised by joblib while it fetched a value, is a value that could not be pickled (not a worker
    that died: TerminatedWorkerError passes as it is)."""
    import pickle

    return isinstance(exc, (TypeError, AttributeError, pickle.PicklingError)) \
        or type(exc).__name__ == "MaybeEncodingError"


def _unsent(exc):
    """The error of a call or a value that could not be pickled on its way to or from a worker (the calls' own
    errors are values: _Failed, or _OwnError in this process). Which call is not known: joblib raises it when it
    fetches another call's value (loky: often the one before)."""
    return RuntimeError(
        f"a call could not be sent to a worker process, or its value back to this one ({type(exc).__name__}: "
        f"{exc}); with n_jobs > 1 every call's arguments and value must be picklable (does one hold a lock, an open "
        "file or a connection?): run with n_jobs=1, or pass and return picklable values")


def run_jobs(calls, n_jobs, **parallel):
    """Yield the values of ``calls`` (``(func, args)`` pairs) run by ``joblib.Parallel(n_jobs, **parallel)``, in
    order; the warnings each call raised in a worker process are issued in this process before its value is
    yielded, once per distinct category and message (see the module notes).

    An error is raised in its turn, as with ``n_jobs=1``: after the values and warnings of the calls before it
    (so it waits at most for the slowest of those; joblib raised it at once and lost their warnings), its worker's
    traceback as its cause; the calls after it are cancelled."""
    from joblib import Parallel, delayed, effective_n_jobs

    seen, modules = set(), {}
    calls = list(calls)
    if n_jobs is not None and effective_n_jobs(n_jobs) > len(calls):
        # loky starts as many workers as asked, whatever the number of tasks (n_jobs = 4096 for 3 tasks; n_jobs=-1
        # started every core for one call)
        n_jobs = max(len(calls), 1)
    tasks = [delayed(_Captured(f))(*a) for f, a in calls]
    try:
        results = Parallel(n_jobs=n_jobs, **{"return_as": "generator", **parallel})(tasks)
    except ValueError as exc:
        if "return_as" not in str(exc) or "return_as" in parallel:
            raise
        # a backend that yields no generator (multiprocessing): the list, at the end
        own = None
        try:
            results = iter(Parallel(n_jobs=n_jobs, **{**parallel, "return_as": "list"})(tasks))
        except _OwnError as carried:
            own = carried.exc
        except Exception as exc2:  # as below: the calls' own errors are values (multiprocessing's MaybeEncodingError)
            if _is_pickling_error(exc2):
                raise _unsent(exc2) from exc2
            raise
        if own is not None:
            raise own  # outside the handler: its own cause and context, not joblib's wrapper

    try:
        for _ in calls:
            own = None
            try:
                value, records = next(results)
            except StopIteration:  # pragma: no cover - joblib yields one value per call
                break
            except _OwnError as carried:
                own = carried.exc
            except Exception as exc:
                # the calls' own errors come back as _Failed values (or _OwnError): this one is joblib's trip to or
                # from a worker (a value that cannot be pickled: a bare "cannot pickle '_thread.lock' object")
                if _is_pickling_error(exc):
                    raise _unsent(exc) from exc
                raise
            if own is not None:
                raise own  # outside the handler: its own cause and context, not joblib's wrapper
            reissue(records, seen, modules)
            if isinstance(value, _Failed):
                raise value.exc from _RemoteTraceback(value.text)
            yield value
    finally:
        # stopped early (a warning made an error by the caller's filters, an exception, Ctrl-C): joblib's own
        # "... tasks have been successfully executed but not used / cancelled" warning, raised as an error under
        # "-W error" too, replaced the caller's exception
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*You could benefit from adjusting the input task iterator",
                                    category=UserWarning)
            close = getattr(results, "close", None)
            if close is not None:
                close()
