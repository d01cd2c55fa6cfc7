# Two entry points for a fresh machine (see README.md):
#   make demo   create .venv, install mtpp, partition the bundled example graph and prove its bound
#   make test   create .venv if needed, then ruff (lint and format), mypy and the whole test suite (layers included)
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/mtpp certify mtpp/examples/transformer_block.json -k 4 --time-limit 5

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest -q -n 2 --dist worksteal

bench: $(STAMP)
	$(VENV)/bin/python -m benchmarks.slicegraph_speed

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
