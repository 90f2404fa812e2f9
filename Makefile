# The two commands of the README: `make run` sets up a fresh machine and runs the main job on the embedded
# simulator; `make test` installs what the tests need and runs the whole suite. `make setup` installs only
# the package and its base dependencies (all `navzoo eval` needs: matplotlib draws its figures); the test,
# docs and browser extras are `make test`'s (and `pip install -e '.[dev]'` for a contributor's machine).
PYTHON ?= python3
PIP := $(PYTHON) -m pip
EPISODES ?= 96
# pytest-xdist workers: most tests run one thread, so two workers keep both cores of a 2-core machine busy.
TEST_WORKERS ?= 2

.PHONY: setup run test lint typecheck format bench docs

setup:
	$(PIP) install -e .

run: setup
	$(PYTHON) -m navzoo eval --split val --episodes $(EPISODES) --out runs/eval

test:
	$(PIP) install -e '.[test]'
	$(PYTHON) -m ruff check .
	$(MAKE) typecheck
	$(PYTHON) -m pytest -n $(TEST_WORKERS) --dist worksteal

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(MAKE) typecheck

# pyright reads imports as the installed package lays them out (train/ is navzoo.train, and so on), which
# the editable install only does at run time: links under build/typecheck give it that layout.
typecheck:
	rm -rf build/typecheck && mkdir -p build/typecheck/navzoo
	for entry in navzoo/* train transfer hub demo; do ln -s ../../../$$entry build/typecheck/navzoo/; done
	$(PYTHON) -m pyright

format:
	$(PYTHON) -m ruff format .

bench:
	$(PYTHON) benchmarks/sim_throughput.py

# The documentation site into build/site (mkdocs.yml; needs pip install -e '.[docs]'). `mkdocs serve` previews it.
docs:
	$(PYTHON) -m mkdocs build --strict
