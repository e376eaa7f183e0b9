#!/usr/bin/env bash
# Production: run a job on a Spark 4.0 cluster with spark-submit: the bulk read (default) or,
# with `stream` as the first argument, the streaming job (spark_jobs/stream.py). The JVM parts
# come from --packages (the same versions deploy/jvm fetches for local runs: spark-avro and
# spark-sql-kafka at the cluster's Spark version, delta-spark at the matching Delta release); the Python code ships as dist/flatavro.zip,
# rebuilt here each time (as `make dist` does) so it is the checkout's code.
#   deploy/spark/submit.sh --topic tidb_shop_orders --bootstrap-servers kafka:9092 \
#       --registry-url http://schema-registry:8081 --output s3a://lake/orders --materialize
#   deploy/spark/submit.sh stream --topic tidb_shop_orders --bootstrap-servers kafka:9092 \
#       --registry-url http://schema-registry:8081 --table-path s3a://lake/orders \
#       --checkpoint s3a://lake/_checkpoints/orders
# Needs spark-submit on PATH and, for the driver, Python >= 3.11 with the package's dependencies:
# schema look-up at start-up uses the service's registry client and settings (httpx,
# pydantic-settings, avro, orjson), the topic check confluent-kafka; install the package with its
# spark extra (which also brings the delta-spark Python API the stream uses). Executors run no
# Python UDF of the jobs (decoding is Spark SQL and from_avro); the modules they could import
# (spark_jobs.transforms, schemas, config) import neither the client nor pydantic-settings.
# --registry-url (else FLATAVRO_REGISTRY_URL) reads a Confluent-compatible registry with the
# driver's FLATAVRO_REGISTRY_USERNAME/PASSWORD or BEARER_TOKEN, CA_BUNDLE, VERIFY_TLS, as the
# service does: set them in the environment (never on the command line, which ps shows).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
spark_version=${SPARK_VERSION:-4.0.0}
delta_version=${DELTA_VERSION:-4.0.0}  # the Delta release built for that Spark line
job=bulk_read
if [ "${1:-}" = stream ] || [ "${1:-}" = bulk_read ]; then job=$1; shift; fi
"${PYTHON:-python3}" "$root/deploy/spark/build_zip.py" "$root/dist/flatavro.zip" >&2
exec spark-submit \
    --master "${SPARK_MASTER:-yarn}" \
    --packages "org.apache.spark:spark-avro_2.13:$spark_version,org.apache.spark:spark-sql-kafka-0-10_2.13:$spark_version,io.delta:delta-spark_2.13:$delta_version" \
    --py-files "$root/dist/flatavro.zip" \
    --conf spark.sql.session.timeZone=UTC \
    "$root/spark_jobs/$job.py" "$@"
