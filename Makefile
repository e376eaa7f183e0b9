# One-command set-up and run on a fresh machine: only python3 (>= 3.11) is assumed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/flatavro serve

test: $(STAMP)
	$(BIN)/ruff check service spark_jobs tests bench
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m bench.bench_row_codec

clean:
	rm -rf $(VENV) .pytest_cache
