"""Every script of examples/ runs (``--quick``) and produces what its docstring promises.

The scripts run in ONE subprocess (``tests/docs/run_examples.py``) with
``MPLBACKEND=Agg``, each in its own working directory; each test below reads the
outcome of one script.
"""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("examples")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "docs" / "run_examples.py"),
                           str(tmp / "out.json"), str(tmp), *map(str, EXAMPLES)],
                          env=env, cwd=tmp, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp / "out.json").read_text())


def test_there_are_examples():
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_quick(script, outcomes):
    res = outcomes[script.name]
    assert res["error"] is None, res["error"]
    assert res["stdout"].strip(), f"{script.name} printed nothing"
    doc = ast.get_docstring(ast.parse(script.read_text()))
    assert doc, f"{script.name} has no module docstring saying what it shows"
    # every image the docstring says it writes is written
    for name in set(re.findall(r"[\w.-]+\.png", doc)):
        assert name in res["files"], f"{script.name}: {name} not written (wrote {res['files']})"
