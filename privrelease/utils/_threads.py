"""One BLAS thread for code made of many small linear-algebra calls."""

_CONTROLLER = None


def single_threaded_blas():
    """Context limiting BLAS to one thread (library scan done once per process).

    Batches of many small solves, and L-BFGS on a few thousand coefficients
    (the attackers' logistic regressions), are far slower with multithreaded
    OpenBLAS, and many times slower again when another process keeps a core
    busy: measured on the 2-core machine with the other core busy, one
    six-class logistic regression on 470 users x 1,682 items took 12.1 s with
    two BLAS threads and 0.21 s with one (same 60 iterations).
    """
    from threadpoolctl import ThreadpoolController

    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")
