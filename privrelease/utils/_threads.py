"""One BLAS (or OpenMP) thread for code made of many small linear-algebra calls.

BLAS's thread count is one setting of the whole process (OpenBLAS on pthreads, the build numpy and scipy ship),
so the BLAS limit here is shared and counted: the first context to open saves the process's counts and sets one
thread, nested or concurrent contexts (joblib's threading backend, a user's own thread pool) only count themselves
in, and the last to close, in whichever thread, restores the saved counts. threadpoolctl's own ``limit`` contexts,
opened and closed at different times by two threads, restore each other's limit (and, since threadpoolctl 3.8,
only the thread that set a limit first may change it until it is done): measured, mappers fitted under
``parallel_backend("threading")`` left the process on one BLAS thread for good. OpenMP's thread count is a setting
of each thread (libgomp), so its limit is an ordinary per-thread context, restricted to the OpenMP libraries
(threadpoolctl's ``limit`` restores every library it found when it opened: an OpenMP limit opened while another
thread held BLAS at one thread put BLAS back to one when it closed).
"""
import contextlib
import threading

_CONTROLLER = None
_LOCK = threading.Lock()
_BLAS = {"open": 0, "saved": ()}  # the shared BLAS limit: open contexts, (library, count before) pairs


def _controller():
    from threadpoolctl import ThreadpoolController

    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def _release_control(libraries):
    """Let any thread set the counts again (threadpoolctl >= 3.8 lets only the thread that set a limit first
    change it; an older threadpoolctl has no such owner)."""
    for cls in {type(lib) for lib in libraries}:
        clear = getattr(cls, "clear_controlling_thread", None)
        if clear is not None:
            clear(force=True)


@contextlib.contextmanager
def single_thread(user_api):
    """Context limiting the ``user_api`` (``"blas"`` or ``"openmp"``) libraries to one thread: for BLAS shared
    by every Python thread of the process, for OpenMP per thread (see the module docstring)."""
    if user_api != "blas":
        with _controller().select(user_api=user_api).limit(limits=1):
            yield
        return
    with _LOCK:
        if _BLAS["open"] == 0:
            libraries = _controller().select(user_api="blas").lib_controllers
            _BLAS["saved"] = tuple((lib, lib.num_threads) for lib in libraries)
            for lib in libraries:
                lib.set_num_threads(1)
        _BLAS["open"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _BLAS["open"] -= 1
            if _BLAS["open"] == 0:
                saved, _BLAS["saved"] = _BLAS["saved"], ()
                libraries = [lib for lib, _ in saved]
                _release_control(libraries)
                for lib, count in saved:
                    lib.set_num_threads(count)
                _release_control(libraries)


def single_threaded_blas():
    """Context limiting BLAS to one thread (library scan done once per process; shared across threads, see the
    module docstring).

    Batches of many small solves, and L-BFGS on a few thousand coefficients
    (the attackers' logistic regressions), are far slower with multithreaded
    OpenBLAS, and many times slower again when another process keeps a core
    busy: measured on the 2-core machine with the other core busy, one
    six-class logistic regression on 470 users x 1,682 items took 12.1 s with
    two BLAS threads and 0.21 s with one (same 60 iterations).
    """
    return single_thread("blas")
