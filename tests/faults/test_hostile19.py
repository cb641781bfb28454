"""Hostile inputs, nineteenth audit: a ledger loaded inside another ledger's atomic() block, and the surfaces the
earlier rounds left (one test per finding)."""

import pickle
import threading
from pathlib import Path

import pytest

from privrelease.accounting import PrivacyAccountant
from shared_helpers import ledger_snapshots


# ----------------------------------------------------------------------- two ledgers loaded crosswise
def _handle_and_later():
    """A live handle of an earlier snapshot of a ledger (0.25 spent) and the pickle of a later one (0.75 spent):
    loading the later one brings the handle up to date in place."""
    early, late = ledger_snapshots()
    return pickle.loads(early), late


def test_crosswise_loads_inside_atomic_blocks_do_not_wait_forever():
    """Thread 1 holds ledger X's atomic() and loads a later snapshot of Y while thread 2 holds Y's and loads one of
    X: each load needs the other's lock. Before, both waited for ever; now one load goes through (its handle holds
    the later snapshot's 0.75) and the other is refused with a RuntimeError saying why, nothing of it loaded (its
    handle still at 0.25), and loaded again outside the block it goes through."""
    (hx, late_x), (hy, late_y) = _handle_and_later(), _handle_and_later()
    both_in = threading.Barrier(2)
    outcome = {}

    def load(held, snapshot, name):
        with held.atomic():
            both_in.wait()
            try:
                outcome[name] = pickle.loads(snapshot)
            except RuntimeError as exc:
                outcome[name] = exc

    threads = [threading.Thread(target=load, args=(hx, late_y, "y"), daemon=True),
               threading.Thread(target=load, args=(hy, late_x, "x"), daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "the two loads wait for each other for ever"
    handles = {"x": hx, "y": hy}
    refused = [name for name, got in outcome.items() if isinstance(got, RuntimeError)]
    assert len(refused) == 1, outcome
    loaded = "xy".replace(refused[0], "")
    assert outcome[loaded] is handles[loaded] and handles[loaded].spent == pytest.approx(0.75)
    assert "atomic()" in str(outcome[refused[0]]) and "nothing of it was loaded" in str(outcome[refused[0]])
    assert handles[refused[0]].spent == pytest.approx(0.25) and len(handles[refused[0]]) == 1
    again = pickle.loads(late_x if refused[0] == "x" else late_y)
    assert again is handles[refused[0]] and again.spent == pytest.approx(0.75) and len(again) == 2


def test_load_inside_own_atomic_block_and_plain_nesting_still_work():
    """The reentrant cases are unchanged: a later snapshot loaded inside its own ledger's atomic() block updates
    it, and spend() inside atomic() records."""
    h, late = _handle_and_later()
    with h.atomic():
        assert pickle.loads(late) is h and h.spent == pytest.approx(0.75)
        h.spend(0.25)
    assert h.spent == pytest.approx(1.0) and len(h) == 3
    other = PrivacyAccountant(epsilon=2.0)
    with other.atomic(), h.atomic():
        other.spend(0.5)
    assert other.spent == 0.5


def test_crosswise_spends_inside_atomic_blocks_do_not_wait_forever():
    """Thread 1 in X's atomic() block spends on Y while thread 2 in Y's spends on X: before, both waited for ever;
    now the second to ask is refused (RuntimeError, nothing recorded on its ledger) and the first records."""
    x, y = PrivacyAccountant(epsilon=1.0), PrivacyAccountant(epsilon=1.0)
    both_in = threading.Barrier(2)
    outcome = {}

    def spend(held, other, name):
        with held.atomic():
            both_in.wait()
            try:
                outcome[name] = other.spend(0.5)
            except RuntimeError as exc:
                outcome[name] = exc

    threads = [threading.Thread(target=spend, args=(x, y, "y"), daemon=True),
               threading.Thread(target=spend, args=(y, x, "x"), daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "the two spends wait for each other for ever"
    refused = [name for name, got in outcome.items() if isinstance(got, RuntimeError)]
    assert len(refused) == 1, outcome
    accs = {"x": x, "y": y}
    assert accs[refused[0]].spent == 0 and len(accs[refused[0]]) == 0
    assert accs["xy".replace(refused[0], "")].spent == 0.5
    assert "atomic()" in str(outcome[refused[0]])


# ----------------------------------------------------------------------- a ledger pickled by the first version
class _FirstVersionPickle:
    """Pickles as privrelease's first PrivacyAccountant did (its default pickling: the class and its __dict__
    without the lock); that version kept no running total (spent was the sum of ``_spends``)."""

    def __init__(self, state):
        self.state = state

    def __reduce__(self):
        return object.__new__, (PrivacyAccountant,), self.state


def _first_version_state():
    import numpy as np
    import scipy.sparse as sp

    row = sp.csr_matrix(np.array([[0.25, 0.1]]))
    return {"epsilon": 1.0, "_spends": [0.25, 0.25],
            "_records": [{"epsilon": 0.25, "population": "p", "total_payment": 3.0},
                         {"epsilon": 0.25, "population": None, "total_payment": 0.0}],
            "_populations": {"p": {"n": 2, "rows": [0], "eps": [row], "pay": [sp.csr_matrix(np.array([[1.0, 2.0]]))]}}}


def test_first_version_ledger_loads_with_its_spends_summed():
    """A ledger saved by the first version (no ``_total``) was refused as "edited or damaged"; it is a valid ledger:
    its spent is the sum of its spends, and it keeps refusing past its budget."""
    acc = pickle.loads(pickle.dumps(_FirstVersionPickle(_first_version_state())))
    assert isinstance(acc, PrivacyAccountant)
    assert acc.spent == 0.5 and len(acc) == 2 and acc.remaining() == 0.5
    assert acc.individual_spent("p").tolist() == [0.25, 0.1]
    acc.spend(0.5)
    with pytest.raises(Exception, match="release refused"):
        acc.spend(0.1)


def test_first_version_ledger_with_an_edited_spend_is_still_refused():
    """Without a stored total, the spends themselves are still checked (a negative one is refused)."""
    state = _first_version_state()
    state["_spends"][1] = -0.25
    with pytest.raises(ValueError, match="release 1's epsilon"):
        pickle.loads(pickle.dumps(_FirstVersionPickle(state)))


# ----------------------------------------------------------------------- population names holding a boolean or NaN
@pytest.mark.parametrize("name, twin", [((True,), (1,)), (("run", False), ("run", 0)), ((("a", True),), (("a", 1),)),
                                        (frozenset({True}), frozenset({1}))],
                         ids=["(True,)", "('run', False)", "nested", "frozenset"])
def test_population_name_holding_a_boolean_is_refused(name, twin):
    """population=True is refused (it shared population 1's ledger), but a tuple holding True was taken: (True,)
    == (1,) and they hash alike, so two populations' individual guarantees were composed in one ledger."""
    acc = PrivacyAccountant()
    acc.spend(None, population=twin, individual_epsilons=[0.5, 0.5])
    with pytest.raises(TypeError, match="boolean") as info:
        acc.spend(None, population=name, individual_epsilons=[0.25, 0.25])
    assert repr(twin) in str(info.value)  # the name it would have shared a ledger with
    assert acc.individual_spent(twin).tolist() == [0.5, 0.5] and len(acc) == 1


def test_population_frozenset_holding_nan_is_refused():
    """A NaN name is refused (never found again); a frozenset holding a NaN was taken, and each release under a new
    frozenset({nan}) opened a ledger of its own."""
    acc = PrivacyAccountant()
    with pytest.raises(ValueError, match="equal to itself"):
        acc.spend(None, population=frozenset({float("nan")}), individual_epsilons=[0.25])
    assert len(acc) == 0 and acc.populations() == []


# ----------------------------------------------------------------------- a saved mapper's numbers beyond float64
def _saved_erasure(tmp_path, **params):
    import numpy as np

    from privrelease.mappers import ErasureMapper

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    X = np.column_stack([np.where(rng.random(120) < 0.8, y, 1 - y), rng.integers(0, 3, 120)]).astype(float)
    return Path(ErasureMapper(delta=0.5, random_state=None, **params).fit(X, y).save(tmp_path / "m.npz"))


@pytest.mark.parametrize("where, name", [("params", "delta"), ("fitted", "leakage_"), ("fitted", "n_labeled_")])
def test_saved_integer_beyond_float64_is_refused_naming_it(tmp_path, where, name):
    """An edited file whose number is an integer beyond float64 (JSON allows 10**400) escaped load as an
    OverflowError from whichever check first made it a float; it is refused as a ValueError naming the field."""
    import privrelease
    from privrelease._persistence import _read, _write

    path = _saved_erasure(tmp_path)
    meta, arrays = _read(path)
    meta[where][name] = {"t": "value", "v": 10 ** 400}
    _write(path, meta, arrays)
    with pytest.raises(ValueError, match=rf"{where}\.{name}: .*beyond the float64 range"):
        privrelease.load(path)


def test_metadata_holding_nan_is_refused_naming_it(tmp_path):
    """JSON's NaN and Infinity tokens (which privrelease.save never writes) were parsed, and the checksum's encoder
    then failed with "Out of range float values are not JSON compliant", naming nothing."""
    import io
    import json

    import numpy as np

    import privrelease
    from privrelease._persistence import _read

    path = _saved_erasure(tmp_path)
    meta, arrays = _read(path)
    text = json.dumps(meta, sort_keys=True)[:-1] + ', "note": NaN}'
    buf = io.BytesIO()
    np.savez(buf, **arrays, __metadata__=np.array(text))
    path.write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="NaN"):
        privrelease.load(path)


def test_save_refuses_an_integer_load_would_refuse(tmp_path):
    """The other side of the refusal above: a parameter beyond float64 is refused when saving, naming it, rather
    than written into a file that load refuses."""
    with pytest.raises(TypeError, match="params/.*beyond the float64 range"):
        _saved_quantized(tmp_path, dask_sample_size=10 ** 400)


def _saved_quantized(tmp_path, **params):
    import numpy as np

    from privrelease.mappers import QuantizedPrivacyMapper

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 60)
    X = np.repeat(np.eye(4) * 5, 15, axis=0)
    return QuantizedPrivacyMapper(n_clusters=4, space="raw", random_state=None, **params).fit(X, y).save(
        tmp_path / "q.npz")


# ----------------------------------------------------------------------- a saved mapper's object classes unsorted
@pytest.mark.parametrize("labels", [["m", "f"], [10, 2]], ids=["strings", "numbers"])
def test_saved_object_classes_out_of_order_are_refused(tmp_path, labels):
    """classes_ must be sorted as fit sorts them (the prior's rows follow that order): an unsorted array was
    refused, but classes_ of dtype object (a categorical, string or nullable Int64 y gives them) skipped the check,
    and a file with the classes swapped loaded, each prior row attributed to the other class."""
    import numpy as np
    import pandas as pd

    import privrelease
    from privrelease._persistence import _read, _write
    from privrelease.mappers import ErasureMapper

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    X = np.column_stack([np.where(rng.random(120) < 0.8, y, 1 - y), rng.integers(0, 3, 120)]).astype(float)
    y_named = pd.Series(pd.Categorical(np.where(y, labels[0], labels[1])))
    path = Path(ErasureMapper(delta=0.5, random_state=None).fit(X, y_named).save(tmp_path / "m.npz"))
    assert privrelease.load(path).classes_.tolist() == sorted(labels)
    meta, arrays = _read(path)
    node = meta["fitted"]["classes_"]
    if node["t"] == "array":  # strings: one array
        arrays[node["key"]] = arrays[node["key"]][::-1].copy()
    else:  # numbers: one entry each
        node["items"] = node["items"][::-1]
    _write(path, meta, arrays)
    with pytest.raises(ValueError, match="classes_ must be sorted"):
        privrelease.load(path)
