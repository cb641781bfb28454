# privrelease: two commands on a fresh clone (Python 3 and the package registry are all it needs).
#   make demo   sets up .venv, installs privrelease, runs the main job, writes reports/demo/
#   make test   sets up .venv with the test extra, runs the test suite, the doctests of privrelease/,
#               every example (--quick) and the README's Python blocks (see CONTRIBUTING.md), on every
#               core (pytest-xdist -n auto --dist loadfile: each test file runs on one worker, so its
#               module fixtures are built once; the files marked slow start first, see tests/conftest.py).
#               make test PYTEST_ARGS="-n 0" runs it in one process.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_OUT ?= reports/demo
PYTEST_ARGS ?= -n auto --dist loadfile --no-loadscope-reorder

.PHONY: demo test doctest examples install clean bench help

help:
	@echo "make demo   - install into $(VENV) and write the demo report to $(DEMO_OUT)/"
	@echo "make test   - install into $(VENV) with the test extra and run pytest (tests, doctests, examples, README)"
	@echo "make doctest  - only the docstring examples of privrelease/"
	@echo "make examples - only the examples/ scripts (--quick) and the README blocks"
	@echo "make bench  - run the benchmark scripts (slow; prints side-by-side tables)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip setuptools wheel

# --no-compile: Python compiles each module the first time it is imported instead of pip compiling every
# module of every dependency at install (a fresh install of the test extra: 58 s instead of 85 s); it keeps the
# bytecode unless PYTHONDONTWRITEBYTECODE is set (`make test` unsets it, below)
$(VENV)/.installed: $(BIN)/python setup.cfg pyproject.toml
	$(BIN)/python -m pip install --no-compile -e .
	touch $@

$(VENV)/.installed-test: $(BIN)/python setup.cfg pyproject.toml
	$(BIN)/python -m pip install --no-compile -e ".[test]"
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

demo: $(VENV)/.installed
	MPLBACKEND=Agg $(BIN)/privrelease demo --overwrite --output "$(DEMO_OUT)"

# PYTHONDONTWRITEBYTECODE= : the tests start many Python processes (two pytest-xdist workers, joblib's workers, the
# command line and the examples in processes of their own), each importing scikit-learn, scipy, pandas and cvxpy. With
# PYTHONDONTWRITEBYTECODE set in the environment none of them kept the bytecode it compiled (nor pytest its rewritten
# test modules), so each compiled every module again: about 4 s of CPU to import privrelease in a new process (2 s
# with the bytecode kept) and 21 s of CPU for each worker's collection (6 s). The bytecode goes to __pycache__
# folders (ignored by git; `make clean` removes the package's and the tests').
test: $(VENV)/.installed-test
	MPLBACKEND=Agg PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest $(PYTEST_ARGS)

doctest: $(VENV)/.installed-test
	MPLBACKEND=Agg $(BIN)/python -m pytest privrelease

examples: $(VENV)/.installed-test
	MPLBACKEND=Agg $(BIN)/python -m pytest tests/docs

bench: $(VENV)/.installed-test
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) reports build *.egg-info
	find privrelease tests benchmarks examples -name __pycache__ -type d -prune -exec rm -rf {} +
