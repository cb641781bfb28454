"""Review of floor23: the sparse exact polish keeps to the sizes the barrier on the edges works at."""
import numpy as np
import scipy.sparse as sp

from privrelease.mapping import _fast, _sparse
from privrelease.mapping._sparse import SparseProblem


def test_the_polish_skips_problems_beyond_the_full_support_size(monkeypatch):
    # the rows alone gated it: an alphabet of ~1e6 edges on fewer than 2,000 rows went into rounds of Newton steps and
    # full-edge certificates (the barrier on the edges is refused there); at the limit it runs, beyond it does not
    rng = np.random.default_rng(0)
    k = 30
    D = sp.random(k, 40, density=0.5, random_state=1, data_rvs=lambda n: rng.uniform(0.1, 1.0, n)).tocsr()
    D = (D + sp.csr_matrix((np.full(k, 0.05), (np.arange(k), np.arange(k))), shape=D.shape)).tocsr()
    prior = rng.dirichlet(np.ones(2 * k)).reshape(2, k)
    prob = SparseProblem(prior, sp.csr_array(D))
    x = np.asarray(prob.P_min, dtype=float) * 0.5 + 0.5 * prob._uniform
    delta = float(prob.distortion(x)) if hasattr(prob, "distortion") else 0.5
    calls = []
    real = _fast.newton_on_entries

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_fast, "newton_on_entries", spy)
    monkeypatch.setattr(_fast, "_FULL_SUPPORT_LIMIT", prob.n - 1)
    out = _sparse.polish_edges(prob, x, delta, 1e-30, own=(1.0, 0.5))
    assert not calls and out[0] is x and out[1] == 1.0
    monkeypatch.setattr(_fast, "_FULL_SUPPORT_LIMIT", prob.n)
    _sparse.polish_edges(prob, x, delta, 1e-30, own=(1.0, 0.5))
    assert calls  # at the limit it runs
