"""Run example scripts in one interpreter and write what happened as JSON.

Usage: ``python tests/docs/run_examples.py OUT.json WORKDIR EXAMPLE.py [...]``

Every script runs as ``__main__`` with ``sys.argv = [script, "--quick"]``, in its
own fresh working directory under WORKDIR, with the warning filters, the
environment and the matplotlib figures restored afterwards. One interpreter
imports numpy, scikit-learn, cvxpy and Surprise once for all the scripts (that
start-up costs seconds per process on a loaded machine); a failing script is
recorded with its traceback and the next one still runs.
"""

import contextlib
import io
import json
import os
import runpy
import sys
import time
import traceback
import warnings
from pathlib import Path


def run_one(script, workdir):
    workdir.mkdir(parents=True, exist_ok=True)
    out = io.StringIO()
    environ, argv, cwd = dict(os.environ), list(sys.argv), os.getcwd()
    start = time.perf_counter()
    error = None
    try:
        os.chdir(workdir)
        sys.argv = [str(script), "--quick"]
        with warnings.catch_warnings(), contextlib.redirect_stdout(out):
            runpy.run_path(str(script), run_name="__main__")
    except BaseException:  # noqa: BLE001 - SystemExit included: reported, not fatal
        error = traceback.format_exc()
    finally:
        os.chdir(cwd)
        sys.argv = argv
        os.environ.clear()
        os.environ.update(environ)
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    return dict(seconds=time.perf_counter() - start, stdout=out.getvalue(), error=error,
                files=sorted(p.name for p in workdir.iterdir()))


def main(argv):
    out_json, workdir, *scripts = argv
    results = {}
    for script in scripts:
        script = Path(script).resolve()
        results[script.name] = run_one(script, Path(workdir) / script.stem)
    Path(out_json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
