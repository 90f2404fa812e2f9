# The two commands of the README: `make run` sets up a fresh machine and runs the main job on the embedded
# simulator; `make test` installs what the tests need and runs the whole suite.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
EPISODES ?= 96
# pytest-xdist workers: most tests run one thread, so two workers keep both cores of a 2-core machine busy.
TEST_WORKERS ?= 2

.PHONY: setup run test lint format bench

setup:
	$(PIP) install -e '.[dev]'

run: setup
	$(PYTHON) -m navzoo eval --split val --episodes $(EPISODES) --out runs/eval

# The strict editable install lays the package out as it installs (train/ as navzoo/train, ...) in links
# under build/, where the type checker can follow the imports; a new module needs this install again.
test:
	$(PIP) install -e '.[test]' --config-settings editable_mode=strict
	$(PYTHON) -m ruff check .
	$(PYTHON) -m pyright
	$(PYTHON) -m pytest -n $(TEST_WORKERS) --dist worksteal

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m pyright

format:
	$(PYTHON) -m ruff format .

bench:
	$(PYTHON) benchmarks/sim_throughput.py
