# Set-up and run from a fresh clone.
#   make run     needs python3 >= 3.11 and nothing else: installs the service's Python
#                packages into .venv and serves (no Java, Maven, pyspark or jars).
#   make test / demo / bench  also install the `spark` and `dev` extras and fetch the Spark and
#                Kafka jars and Apicurio Registry (~140 MB, the tests' third-party registry)
#                from Maven Central into .cache/jvm (Java 17+ and Maven); make test installs
#                Debian's chromium when it is missing.
#   make check   the fast tier: ruff and every test that needs no JVM, broker, browser or helm
#                (the `spark`/`dev` extras, no jars); make test runs everything, and builds
#                helm with go once into .cache/helm for the chart tests (make setup too),
#                and SeaweedFS, the object-storage tests' S3 server, into .cache/s3 (~6-9 min;
#                make bench too, for the S3 claim-check benchmark).
#   make dist    dist/flatavro.zip: the Spark job's Python code, for spark-submit --py-files.
# Each goal first runs deploy/prereqs.sh, which names in one line what the machine lacks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --disable-pip-version-check
JVM_CACHE := $(or $(FLATAVRO_JVM_CACHE),.cache/jvm)
# One stamp per layer: `make run` after `make test` installs nothing; `make test` after
# `make run` adds only the extras and the jars.
SERVICE := $(VENV)/.service-installed
EXTRAS := $(VENV)/.extras-installed
JARS := $(JVM_CACHE)/.fetched
DIST := dist/flatavro.zip
# helm, built from its Go module by deploy/helm/build.sh, for the chart tests (tests/deploy).
HELM_CACHE := $(or $(FLATAVRO_HELM_CACHE),.cache/helm)
HELM := $(HELM_CACHE)/.built
# SeaweedFS, built from its Go module by deploy/s3/seaweedfs.sh: the object-storage tests' S3.
SEAWEEDFS_CACHE := $(or $(FLATAVRO_S3_CACHE),.cache/s3)
SEAWEEDFS := $(SEAWEEDFS_CACHE)/.built
# tidb-server (unistore), built from TiDB's Go module by deploy/tidb/tidb.sh: the upstream TiDB
# of the handle-key-only tests. Measured on 2 cores: 428 s with an empty Go build cache (its
# modules already downloaded; a fresh machine adds their download through the Go proxy); 22 s
# when Go's caches are warm.
TIDB_CACHE := $(or $(FLATAVRO_TIDB_CACHE),.cache/tidb)
TIDB := $(TIDB_CACHE)/.built
# Tests keep Python's byte code (git-ignored __pycache__): with PYTHONDONTWRITEBYTECODE set, as
# on the CI machine, pytest rewrote the asserts of all ~500 test modules again in each worker of
# every run (8 of `make check`'s 16 s of collection), and each subprocess compiled the service.
unexport PYTHONDONTWRITEBYTECODE
# pytest-xdist workers for make test (one per core on the 2-core CI machine: each worker may
# run a broker and a Spark driver) and for make check, whose tests wait on subprocesses and
# sockets: a third worker fills the cores' idle time (2026-12-03: 134-142 s with 2, 114-131 s
# with 3 over five runs, 119 s with 4).
TEST_WORKERS ?= 2
CHECK_WORKERS ?= 3
CHECKS := check-run check-openapi check-dist check-setup check-check check-test check-demo \
	check-bench

# Serial even under -j: a goal's check must finish before its first download starts.
.NOTPARALLEL:
.PHONY: run setup check test bench demo browser openapi dist clean $(CHECKS)

run: check-run $(SERVICE)
	$(BIN)/flatavro serve

setup: check-setup $(EXTRAS) $(JARS) $(HELM) $(SEAWEEDFS) $(TIDB)

# The fast tier: tests/conftest.py marks what needs a broker, Spark, Apicurio, a browser or
# Maven; FLATAVRO_FAST_TIER makes an unmarked test that starts one fail at once.
check: check-check $(EXTRAS)
	$(BIN)/ruff check service spark_jobs tests bench deploy
	$(BIN)/mypy
	FLATAVRO_FAST_TIER=1 $(BIN)/python -m pytest -n $(CHECK_WORKERS) --dist loadfile --no-loadscope-reorder \
		-m "not kafka and not spark and not apicurio and not browser and not maven and not helm"

# Every test, in $(TEST_WORKERS) pytest-xdist workers. A test file stays on one worker (its
# module fixtures start once, README blocks run in order); each worker starts its own broker,
# Spark session and Apicurio on first use. The three files that run README blocks in the
# checkout run disjoint blocks (service / quickstart against Apicurio / ```sh kafka).
# deploy/spark/jvm_archive.py makes the Spark drivers' class-data archive once per cache.
test: check-test $(EXTRAS) $(JARS) $(HELM) $(SEAWEEDFS) $(TIDB) browser
	$(BIN)/ruff check service spark_jobs tests bench deploy
	$(BIN)/mypy
	$(BIN)/python -m deploy.spark.jvm_archive
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		-p tests.support.file_times

# Broker + service + Canal-JSON -> flat-avro -> Kafka -> schema change -> Spark -> the table.
demo: check-demo $(EXTRAS) $(JARS)
	$(BIN)/python deploy/demo.py

bench: check-bench $(EXTRAS) $(JARS) $(SEAWEEDFS)
	$(BIN)/python -m bench.bench_row_codec
	$(BIN)/python -m bench.bench_http
	$(BIN)/python -m bench.bench_console
	$(BIN)/python -m bench.bench_compatibility
	$(BIN)/python -m bench.bench_ddl
	$(BIN)/python -m bench.bench_spark
	$(BIN)/python -m bench.bench_stream
	$(BIN)/python -m bench.bench_stream_tables
	$(BIN)/python -m bench.bench_guard
	$(BIN)/python -m bench.bench_guard --one-apply
	$(BIN)/python -m bench.bench_table_floor
	$(BIN)/python -m bench.bench_stream_formats
	$(BIN)/python -m bench.bench_bridge
	$(BIN)/python -m bench.bench_bridge --claim-checks

# Regenerate openapi/openapi.json from the app (a test fails when the file drifts).
openapi: check-openapi $(SERVICE)
	$(BIN)/python -m service.api.docs.openapi_file

# The code deploy/compose.yaml's image and deploy/spark/submit.sh ship to Spark (stdlib only).
dist: check-dist
	$(PYTHON) deploy/spark/build_zip.py $(DIST)

$(CHECKS):
	@PYTHON='$(PYTHON)' sh deploy/prereqs.sh $(@:check-%=%)

# The C extension (service/core/_flatread.c) is built by the editable install: rebuild on change.
$(SERVICE): pyproject.toml service/core/_flatread.c
	@test -x $(BIN)/python || { echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "installing the service's Python packages into $(VENV)" \
		"(~28 MB download, ~110 MB installed: sqlglot's compiled build is most of it)"
	$(PIP) -e .
	@touch $@

$(EXTRAS): $(SERVICE) pyproject.toml
	@echo "installing the spark, aws, tidb and dev extras into $(VENV): boto3 and moto (~40 MB), PyMySQL (<1 MB), pyspark (~435 MB download, ~470 MB" \
		"installed; pip builds it from its source archive the first time, then reuses the" \
		"wheel from its cache), delta-spark and delta-rs with pyarrow (~95 MB download," \
		"~300 MB installed) and the test tools (~25 MB download, ~70 MB installed)"
	$(PIP) -e '.[spark,aws,tidb,dev]'
	@touch $@

# spark-avro / spark-sql-kafka at the pyspark version, hadoop-aws at its Hadoop, and a Kafka
# broker (re-used if present).
$(JARS): $(EXTRAS) deploy/jvm/spark-pom.xml deploy/jvm/kafka-pom.xml deploy/jvm/apicurio-pom.xml \
		deploy/jvm/s3-pom.xml deploy/jvm/fetch.sh
	PYTHON=$(BIN)/python FLATAVRO_JVM_CACHE=$(JVM_CACHE) deploy/jvm/fetch.sh all
	@touch $@

$(HELM): deploy/helm/build.sh
	FLATAVRO_HELM_CACHE=$(HELM_CACHE) deploy/helm/build.sh
	@touch $@

$(SEAWEEDFS): deploy/s3/seaweedfs.sh
	FLATAVRO_S3_CACHE=$(SEAWEEDFS_CACHE) deploy/s3/seaweedfs.sh build
	@touch $@

$(TIDB): deploy/tidb/tidb.sh deploy/tidb/go.mod deploy/tidb/go.sum
	FLATAVRO_TIDB_CACHE=$(TIDB_CACHE) deploy/tidb/tidb.sh build
	@touch $@

# Debian's Chromium, for the test that renders /docs headless (installed once, if missing).
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
		echo "installing Debian's chromium with apt-get (~155 MB download, ~480 MB on" \
			"disk; quiet for a minute or two) for the test that renders /docs"; \
		apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null && \
		echo "installed $$(chromium --version)"; }

clean:
	rm -rf $(VENV) .pytest_cache .cache dist
