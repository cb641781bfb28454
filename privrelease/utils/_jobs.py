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
import pickle
import sys
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
            return self.func(*args, **kwargs), ()
        with warnings.catch_warnings(record=True) as caught:
            # every warning is recorded here; the caller's filters decide what is shown, ignored or raised
            warnings.simplefilter("always")
            try:
                value = self.func(*args, **kwargs)
            except BaseException as exc:
                # the warnings raised before the error travel with it (an exception's attributes are pickled
                # with it) and are issued before it is raised again in the caller
                try:
                    exc._privrelease_warnings = _portable(caught)
                except Exception:  # pragma: no cover - an exception type that takes no attribute
                    pass
                raise
        return value, _portable(caught)


def _portable(caught):
    """``(message, category, filename, lineno)`` of each distinct warning recorded, in order, as can be sent back
    to the caller's process: a message or category that cannot be pickled (a class defined in a worker) is sent
    as its text and the nearest built-in warning category."""
    out, seen = [], set()
    for w in caught:
        key = (w.category, str(w.message))
        if key in seen:
            continue
        seen.add(key)
        message, category = w.message, w.category
        try:
            pickle.loads(pickle.dumps((message, category)))
        except Exception:
            category = next(c for c in category.__mro__ if c.__module__ == "builtins")
            message = str(message)
        out.append((message, category, w.filename, w.lineno))
    return tuple(out)


def _module_of(filename):
    """The name of the loaded module whose file is ``filename`` (the filters match the module name), or None."""
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) == filename:
            return name
    return None


def reissue(records, seen):
    """Issue the ``records`` of :func:`_portable` in this process, skipping a ``(category, message)`` in ``seen``.

    Each goes through the caller's filters as if raised at its file and line in its module (the module's registry
    too: the "default" action shows it once, as a warning raised here would be)."""
    for message, category, filename, lineno in records:
        key = (category, str(message))
        if key in seen:
            continue
        seen.add(key)
        module = _module_of(filename)
        # module=None passed explicitly is not "unknown" to the C implementation: the warning was never shown
        where = {"registry": _REGISTRIES.setdefault(filename, {})} if module is None else {
            "module": module, "registry": vars(sys.modules[module]).setdefault("__warningregistry__", {})}
        warnings.warn_explicit(message, category, filename, lineno, **where)


def run_jobs(calls, n_jobs, **parallel):
    """Yield the values of ``calls`` (``(func, args)`` pairs) run by ``joblib.Parallel(n_jobs, **parallel)``, in
    order; the warnings each call raised in a worker process are issued in this process before its value is
    yielded, once per distinct category and message (see the module notes)."""
    from joblib import Parallel, delayed

    seen = set()
    parallel.setdefault("return_as", "generator")
    results = Parallel(n_jobs=n_jobs, **parallel)(delayed(_Captured(f))(*a) for f, a in calls)
    try:
        for value, records in results:
            reissue(records, seen)
            yield value
    except BaseException as exc:
        reissue(getattr(exc, "_privrelease_warnings", ()), seen)
        raise
    finally:
        # stopped early (a warning made an error by the caller's filters, an exception, Ctrl-C): joblib's own
        # "... tasks have been successfully executed but not used / cancelled" warning, raised as an error under
        # "-W error" too, replaced the caller's exception
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*You could benefit from adjusting the input task iterator",
                                    category=UserWarning)
            results.close()
