# One-command set-up and run on a fresh machine: only python3 (>= 3.11) is assumed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench setup browser openapi clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/flatavro serve

# Debian's Chromium, for the test that renders /docs headless (installed once, if missing).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: $(STAMP) browser
	$(BIN)/ruff check service spark_jobs tests bench
	$(BIN)/python -m pytest

# Regenerate openapi/openapi.json from the app (a test fails when the file drifts).
openapi: $(STAMP)
	$(BIN)/python -m service.api.openapi_file

bench: $(STAMP)
	$(BIN)/python -m bench.bench_row_codec
	$(BIN)/python -m bench.bench_http

clean:
	rm -rf $(VENV) .pytest_cache
