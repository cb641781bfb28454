"""The shared one-thread limits of privrelease.utils._threads under concurrent Python threads.

A native library's thread count is one setting of the process: limits opened and closed by different threads
(joblib's threading backend, a user's own pool) must leave the process with the counts it had, and every code
inside a limit must see one thread. The interleavings are forced with events, so each test fails on per-context
threadpoolctl limits every time."""
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from privrelease.utils import _threads
from privrelease.utils._threads import single_thread, single_threaded_blas


def counts(user_api):
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == user_api]


@pytest.fixture
def two_blas_threads():
    # the process's BLAS libraries on two threads for the test (pytest-xdist's workers start on one), set without
    # a threadpoolctl context: since threadpoolctl 3.8 the thread holding a limit is the only one whose limits act
    libraries = _threads._controller().select(user_api="blas").lib_controllers
    saved = [lib.num_threads for lib in libraries]
    for lib in libraries:
        lib.set_num_threads(2)
    _threads._release_control(libraries)
    try:
        before = counts("blas")
        if max(before, default=1) < 2:
            pytest.skip("no BLAS library that takes two threads")
        yield before
    finally:
        for lib, n in zip(libraries, saved):
            lib.set_num_threads(n)
        _threads._release_control(libraries)


def interleave(first_ctx, second_ctx, seen):
    """Thread 1 opens ``first_ctx``, thread 2 opens ``second_ctx``, thread 1 closes, then thread 2 closes;
    ``seen`` collects the BLAS counts each thread sees inside its context, after the other's close."""
    opened1, opened2, closed1, closed2 = (threading.Event() for _ in range(4))
    errors = []

    def run(label, ctx, wait_before_open, opened, wait_before_look, closed):
        try:
            wait_before_open.wait(10)
            with ctx():
                opened.set()
                wait_before_look.wait(10)
                seen.append((label, max(counts("blas"))))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            opened.set()
            closed.set()

    started = threading.Event()
    started.set()
    one = lambda: run("1", first_ctx, started, opened1, opened2, closed1)  # noqa: E731
    two = lambda: run("2", second_ctx, opened1, opened2, closed1, closed2)  # noqa: E731
    threads = [threading.Thread(target=one), threading.Thread(target=two)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors, errors


def test_overlapping_blas_limits_restore_the_process_count(two_blas_threads):
    # per-context limits: thread 2 saved thread 1's "1", thread 1 restored 2 while thread 2 was still inside
    # (it ran on two threads), and thread 2 restored 1 for good
    seen = []
    interleave(single_threaded_blas, single_threaded_blas, seen)
    assert seen == [("1", 1), ("2", 1)]
    assert counts("blas") == two_blas_threads
    assert _threads._BLAS["open"] == 0


def test_an_openmp_limit_does_not_restore_blas(two_blas_threads):
    # threadpoolctl's limit restores every library it found when it opened: an OpenMP limit opened while another
    # thread held BLAS at one thread put BLAS back to one when it closed, after the BLAS limit had ended
    seen = []
    interleave(single_threaded_blas, lambda: single_thread("openmp"), seen)
    assert seen[0] == ("1", 1)
    assert counts("blas") == two_blas_threads


def test_nested_limits_in_one_thread_are_counted(two_blas_threads):
    with single_threaded_blas():
        with single_threaded_blas():
            assert max(counts("blas")) == 1
        assert max(counts("blas")) == 1  # the inner close does not end the outer limit
    assert counts("blas") == two_blas_threads


def test_a_failing_body_still_restores(two_blas_threads):
    with pytest.raises(RuntimeError):
        with single_threaded_blas():
            raise RuntimeError("boom")
    assert counts("blas") == two_blas_threads
    assert _threads._BLAS["open"] == 0


def test_kmeans_runs_inside_the_shared_blas_limit(two_blas_threads, monkeypatch):
    # scikit-learn's KMeans opens its own per-context BLAS limit (restoring every library when it ends); run
    # inside the shared limit, its restores put back the shared "1", and the shared limit the process's count
    from sklearn.cluster import KMeans

    from privrelease.mappers import _quantize

    inside = []
    fit_predict = KMeans.fit_predict

    def spy(self, *args, **kwargs):
        inside.append(_threads._BLAS["open"])
        return fit_predict(self, *args, **kwargs)

    monkeypatch.setattr(KMeans, "fit_predict", spy)
    E = np.random.default_rng(0).normal(size=(60, 3))
    centers, labels = _quantize.kmeans(E, 3, 0)
    assert inside == [1] and centers.shape == (3, 3) and labels.shape == (60,)
    assert counts("blas") == two_blas_threads
