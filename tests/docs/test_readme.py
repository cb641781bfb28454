"""The README's ```python blocks run, in order, in one namespace (a later block may use
what an earlier one defined), and the figures their comments state hold.

A block preceded by ``<!-- not run: reason -->`` is not run (it needs something a test
machine does not have, such as a dask scheduler); there are at most two such blocks.
"""

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_BLOCK = re.compile(r"(?:<!--\s*not run:\s*(?P<reason>[^>]*?)\s*-->\s*\n)?```python\n(?P<code>.*?)```",
                    re.S)


def readme_blocks():
    """``(code, reason_not_run or None)`` for every python block of the README."""
    text = README.read_text()
    return [(m["code"], m["reason"]) for m in _BLOCK.finditer(text)]


def test_block_extraction_sees_every_fence():
    text = README.read_text()
    assert len(readme_blocks()) == text.count("```python\n") >= 5
    skipped = [reason for _, reason in readme_blocks() if reason is not None]
    assert len(skipped) <= 2 and all(skipped), skipped
    assert "shared folder" not in text and "closing notes" not in text


@pytest.fixture(scope="module")
def namespace(tmp_path_factory):
    import matplotlib.pyplot as plt

    ns = {"__name__": "readme"}
    cwd = tmp_path_factory.mktemp("readme")
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.chdir(cwd)
        for i, (code, reason) in enumerate(readme_blocks()):
            if reason is None:
                exec(compile(code, f"README.md python block {i + 1}", "exec"), ns)
        plt.close("all")
    return ns


def test_readme_blocks_run(namespace):
    from privrelease import DCLEFEstimator, ErasureMapper

    assert isinstance(namespace["mapper"], ErasureMapper)       # the last mapper defined
    assert isinstance(namespace["est"], DCLEFEstimator)
    assert namespace["released"].shape == namespace["ratings"].shape
    frame = namespace["curve"].frame
    assert list(frame["max_leakage"]) == [0.0, 0.1]
    # each point of the curve meets its leakage target (solver tolerance)
    assert (frame["leakage_bits"] <= frame["max_leakage"] + 1e-6).all()


def test_readme_figures_hold(namespace):
    # "about 0.02 bits left at one expected erasure" (the paper: about 0.025 bits)
    assert namespace["mapper"].leakage_ == pytest.approx(0.02, abs=0.007)
    # "0.070 bits, certified gap ~1e-7 bits" for the Census program at delta = 0.5
    res = namespace["res"]
    assert res.leakage == pytest.approx(0.070, abs=5e-4)
    assert res.distortion <= 0.5 + 1e-6
    # the accountant saw the five predictions, nobody passed the cap of 2, and then the regression's 2 epsilon
    acc, est = namespace["accountant"], namespace["est"]
    assert len(acc) == 6 and acc.spent <= acc.epsilon
    assert acc.records["mechanism"].tolist() == ["DCLEFEstimator"] * 5 + ["TruthfulRegressionMechanism"]
    assert acc.records["epsilon"].iloc[-1] == 2.0
    assert est.epsilon_spent().max() <= 2.0 * (1 + 1e-9)


def test_readme_several_attributes_figures(namespace):
    import numpy as np

    # the 2-D example leaves some users undisclosed, as its comment says, and the rest
    # of its namespace (ratings, gender) has one row per user
    Y, m = namespace["Y"], namespace["m"]
    assert Y.shape[0] == namespace["ratings"].shape[0]
    undisclosed = np.isnan(Y).all(axis=1)
    assert 0 < undisclosed.sum() < Y.shape[0]
    # "I(A_i; C_hat) of each column under its fitted prior: both 0 here" (perfect privacy)
    assert len(m.leakage_per_attribute_) == 2
    assert np.all(np.abs(m.leakage_per_attribute_) <= 1e-9)
