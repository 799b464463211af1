# Two commands do all set-up on a fresh machine:
#   make start   install into .venv (first time only) and open the workbench
#   make test    install into .venv (first time only), run ruff, mypy and the test suite
# TORCH_SPEC picks the torch build: the default is the CPU wheel this project develops on;
# on a CUDA machine use e.g. `make test TORCH_SPEC=torch` or install into an existing venv.

PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=
PYTEST_WORKERS ?= 4  # pytest-xdist workers: a worker mostly waits on the evaluations and processes its tests start,
# so two per core keep a 2-core machine busy (docs/performance.md: 9:28 beside another job, against 10:46-11:59 with
# one per core). Tests go to the workers as they free up (--dist load), the slow ones first (tests/conftest.py), and
# every worker's numpy/BLAS and torch run on one thread: more spin against the other workers (docs/performance.md)
# PYTHONDONTWRITEBYTECODE is cleared for the tests: with it set (as some machines' environments do), every worker
# rewrote the tests' asserts and every process compiled the project's modules from source on each start
# (the fast subset 142 s against 117 s from a clean tree, docs/performance.md). The caches go to the git-ignored
# __pycache__ folders; the sandboxed solution process still writes none.

.PHONY: start test install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet "$(TORCH_SPEC)"
	$(VENV)/bin/python -m pip install --quiet -e ".[dev]"
	bash scripts/install_bwrap.sh
	touch $@

install: $(VENV)/.installed

start: $(VENV)/.installed
	$(VENV)/bin/d2k-workbench

test: $(VENV)/.installed
	$(VENV)/bin/ruff check workbench tests scripts tasks
	$(VENV)/bin/ruff format --check workbench tests scripts tasks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE= \
		$(VENV)/bin/python -m pytest -n $(PYTEST_WORKERS) --dist load $(PYTEST_ARGS)

clean:
	rm -rf $(VENV)
