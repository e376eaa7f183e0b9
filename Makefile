# One-command set-up and run on a fresh machine: python3 (>= 3.11), Java 17 and Maven are
# assumed; the JVM parts come from Maven Central into .cache/jvm (deploy/jvm/fetch.sh).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JARS := .cache/jvm/.fetched

.PHONY: run test bench demo setup browser openapi clean

setup: $(STAMP) $(JARS)

# spark-avro / spark-sql-kafka at the pyspark version, and a Kafka broker (re-used if present).
$(JARS): $(STAMP) deploy/jvm/spark-pom.xml deploy/jvm/kafka-pom.xml deploy/jvm/fetch.sh
	PYTHON=$(BIN)/python deploy/jvm/fetch.sh all
	touch $(JARS)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP) $(JARS)
	$(BIN)/flatavro serve

# Debian's Chromium, for the test that renders /docs headless (installed once, if missing).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: $(STAMP) $(JARS) browser
	$(BIN)/ruff check service spark_jobs tests bench deploy
	$(BIN)/python -m pytest

# Regenerate openapi/openapi.json from the app (a test fails when the file drifts).
openapi: $(STAMP)
	$(BIN)/python -m service.api.openapi_file

# Broker + service + Canal-JSON -> flat-avro -> Kafka -> schema change -> Spark -> the table.
demo: $(STAMP) $(JARS)
	$(BIN)/python deploy/demo.py

bench: $(STAMP) $(JARS)
	$(BIN)/python -m bench.bench_row_codec
	$(BIN)/python -m bench.bench_http
	$(BIN)/python -m bench.bench_spark

clean:
	rm -rf $(VENV) .pytest_cache .cache
