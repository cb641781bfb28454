"""Oracles shared by tests in several folders (independent of the library's own code), and the
settings every test runs under."""

import os
from collections import Counter
from fractions import Fraction
from math import log2

import pytest
from hypothesis import settings


def _top5_threat_by_counting(random_state):
    """I(A; B_top5) in bits and the MAP accuracy on the binarized 5 most rated Politics-and-TV shows.

    Independent of the library's leakage code: the joint law is counted in a dict over
    (5-bit pattern, party), and the accuracy is an exact fraction.
    """
    from privrelease.datasets import make_politics_tv

    R, a, _ = make_politics_tv(random_state=random_state)
    R = R.toarray()
    raters = (R != 0).sum(axis=0)
    top5 = sorted(range(R.shape[1]), key=lambda j: (-raters[j], j))[:5]
    patterns = [tuple(int(R[u, j] >= 4) for j in top5) for u in range(R.shape[0])]
    n = len(patterns)
    joint = Counter(zip(patterns, a.tolist()))
    p_b, p_a = Counter(patterns), Counter(a.tolist())
    mi = sum(c / n * log2(c * n / (p_b[b] * p_a[y])) for (b, y), c in joint.items())
    acc = Fraction(sum(max(joint[(b, y)] for y in p_a) for b in p_b), n)
    return mi, float(acc)


@pytest.fixture
def top5_threat_by_counting():
    """The by-hand count of the Politics-and-TV top-5 threat (see :func:`_top5_threat_by_counting`)."""
    return _top5_threat_by_counting


# Hypothesis: the same examples on every run and in every pytest-xdist worker (derandomized), and no
# example database written into the checkout (a fixed path that parallel workers would share).
settings.register_profile("privrelease", derandomize=True, database=None)
settings.load_profile("privrelease")


def pytest_configure(config):
    """Under pytest-xdist, the cores are shared between the workers: each worker's BLAS and OpenMP
    get ``cores // workers`` threads (set before the workers start; a value already in the
    environment is kept), instead of every worker starting one thread per core."""
    workers = len(config.getoption("tx", None) or [])
    if workers > 1 and "PYTEST_XDIST_WORKER" not in os.environ:
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, threads)


def pytest_collection_modifyitems(session, config, items):
    """Test files marked ``slow`` (``pytestmark = pytest.mark.slow``: 20 s or more on one core) first, then the
    others by their number of tests, most first (the order pytest-xdist's ``--dist loadfile`` would give them).

    ``make test`` runs pytest-xdist with ``--no-loadscope-reorder``, so the workers take the files in this order:
    with the default order (most tests first) the quick demo's 7 tests and the stress suite's 2 came among the
    last files, and one worker ran them alone for up to a minute after the other had finished. A stable sort:
    the tests of a file keep their order."""
    files = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    slow = {f for f, its in files.items() if any(it.get_closest_marker("slow") for it in its)}
    order = sorted(files, key=lambda f: (f not in slow, 0 if f in slow else -len(files[f])))
    items[:] = [it for f in order for it in files[f]]
