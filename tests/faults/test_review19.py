"""Findings of the stop-42 review of the accountant's lock and the persistence checks."""
import io
import json
import pickle
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from privrelease.accounting import PrivacyAccountant


def test_metadata_number_beyond_float64_is_refused_naming_it(tmp_path):
    """A written number such as 1e400 is read as inf by json and failed later in the checksum ("Out of range float
    values are not JSON compliant", naming no file): refused when read, as the NaN token is."""
    import privrelease
    from privrelease._persistence import _read
    from privrelease.mappers import ErasureMapper

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    X = np.column_stack([np.where(rng.random(120) < 0.8, y, 1 - y), rng.integers(0, 3, 120)]).astype(float)
    path = Path(ErasureMapper(delta=0.5, random_state=0).fit(X, y).save(tmp_path / "m.npz"))
    meta, arrays = _read(path)
    text = '{"zz": 1e400, ' + json.dumps(meta, sort_keys=True)[1:]
    buf = io.BytesIO()
    np.savez(buf, **arrays, __metadata__=np.array(text))
    path.write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match=r"m\.npz.*1e400.*beyond the float64 range"):
        privrelease.load(path)


def test_timed_waits_are_not_refused_as_deadlocks():
    """A wait with a timeout ends by itself: a thread waiting 0.2 s for a ledger whose holder waits for the
    thread's own ledger is not refused (it times out, as a plain lock's wait does), and the other thread, once the
    first leaves its block, gets its lock."""
    a, b = PrivacyAccountant(), PrivacyAccountant()
    got, start = {}, threading.Barrier(2)

    def t1():
        with a.atomic():
            start.wait()
            time.sleep(0.05)
            lock = b.atomic()
            ok = lock.acquire(timeout=0.3)
            got["t1"] = ok
            if ok:
                lock.release()

    def t2():
        with b.atomic():
            start.wait()
            time.sleep(0.1)
            lock = a.atomic()
            try:
                ok = lock.acquire(timeout=5.0)
            except RuntimeError as exc:  # the refusal of a wait that would never end
                ok = exc
            got["t2"] = ok
            if ok is True:
                lock.release()

    threads = [threading.Thread(target=t1), threading.Thread(target=t2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert got == {"t1": False, "t2": True}


def test_untimed_crosswise_waits_are_still_refused():
    a, b = PrivacyAccountant(), PrivacyAccountant()
    got, start = {}, threading.Barrier(2)

    def run(first, second, key, pause):
        with first.atomic():
            start.wait()
            time.sleep(pause)
            try:
                with second.atomic():
                    got[key] = "entered"
            except RuntimeError:
                got[key] = "refused"

    threads = [threading.Thread(target=run, args=(a, b, "t1", 0.05)),
               threading.Thread(target=run, args=(b, a, "t2", 0.1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert sorted(got.values()) == ["entered", "refused"]


class _StatePickle:
    def __init__(self, state):
        self.state = state

    def __reduce__(self):
        return object.__new__, (PrivacyAccountant,), self.state


def test_ledger_with_release_tokens_but_no_total_is_refused():
    """Only the first version wrote ledgers without a running total, and it wrote no release tokens: a current
    ledger with its total and carry deleted (and a release removed consistently) is edited, not a first version."""
    acc = PrivacyAccountant(1.0)
    acc.spend(0.5)
    acc.spend(0.25)
    state = pickle.loads(pickle.dumps(acc)).__getstate__() if hasattr(acc, "__getstate__") else dict(acc.__dict__)
    state = {k: v for k, v in state.items() if k not in ("_total", "_carry", "_lock")}
    state["_spends"], state["_records"] = state["_spends"][:1], state["_records"][:1]
    state.pop("_ledger_id", None)
    with pytest.raises(ValueError, match="total spent"):
        pickle.loads(pickle.dumps(_StatePickle(state)))
