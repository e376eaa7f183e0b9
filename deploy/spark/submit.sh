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
# --local-jars first (or FLATAVRO_SPARK_JARS=local): the jars deploy/jvm/fetch.sh cached
# (FLATAVRO_JVM_CACHE, else .cache/jvm) go to spark-submit --jars instead, the driver serving
# them to the executors: no Ivy, no repository (what the tests run on their standalone cluster).
# SPARK_MASTER (default yarn) is the master; a standalone spark://host:port that does not
# answer is one line and exit 2 within 10 s. FLATAVRO_ZIP moves the zip (default dist/).
# Needs spark-submit on PATH and, for the driver, Python >= 3.11 with the package's dependencies:
# schema look-up at start-up uses the service's registry client and settings (httpx,
# pydantic-settings, avro, orjson), the topic check confluent-kafka; install the package with its
# spark extra (which also brings the delta-spark Python API the stream uses). Executors run no
# Python UDF of the jobs (decoding is Spark SQL and from_avro); the modules they could import
# (spark_jobs.decoding.transforms, schemas, config) import neither the client nor pydantic-settings.
# An s3a:// path (--output, --input, --table-path, --checkpoint, --dead-letter) adds S3A:
# hadoop-aws at the cluster's Hadoop (HADOOP_VERSION, default the 3.4.1 of Spark 4.0) and the
# AWS SDK modules of deploy/jvm/s3-pom.xml (its bundle excluded), or with --local-jars those
# deploy/jvm/fetch.sh cached. Credentials come from the driver's environment, never the
# command line: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN), or AWS_PROFILE
# (~/.aws, AWS_SHARED_CREDENTIALS_FILE), or the machine's role; AWS_ENDPOINT_URL_S3 or
# AWS_ENDPOINT_URL for an S3-compatible store, AWS_REGION (spark_jobs/settings/object_store.py, which
# also passes them on to the executors; docs/streaming.md "Delta on object storage").
# --registry-url (else FLATAVRO_REGISTRY_URL) reads a Confluent-compatible registry with the
# driver's FLATAVRO_REGISTRY_USERNAME/PASSWORD or BEARER_TOKEN, CA_BUNDLE, VERIFY_TLS, as the
# service does: set them in the environment (never on the command line, which ps shows).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-python3}
spark_version=${SPARK_VERSION:-4.0.0}
delta_version=${DELTA_VERSION:-4.0.0}  # the Delta release built for that Spark line
master=${SPARK_MASTER:-yarn}
jars=${FLATAVRO_SPARK_JARS:-packages}
zip=${FLATAVRO_ZIP:-$root/dist/flatavro.zip}
if [ "${1:-}" = --local-jars ]; then jars=local; shift; fi
job=bulk_read
if [ "${1:-}" = stream ] || [ "${1:-}" = bulk_read ]; then job=$1; shift; fi

case $jars in
    local|packages) ;;
    *) echo "submit.sh: error: FLATAVRO_SPARK_JARS is local or packages, not $jars" >&2; exit 2 ;;
esac
# The jobs' own checks (spark_jobs/session.py, standard library only like build_zip.py) before
# spark-submit starts a JVM: a standalone master answers; with local jars, the cache has them
# (printed comma-separated for --jars).
session_check='
import os, sys
from spark_jobs.settings import object_store
from spark_jobs.errors import JobError
from spark_jobs.session import check_master, jar_paths
try:
    check_master(sys.argv[1], option="SPARK_MASTER")
    s3a = sys.argv[3] == "s3a"
    if s3a:
        object_store.check_environment(os.environ)
    if sys.argv[2] == "local":
        print(",".join(jar_paths() + (object_store.hadoop_aws_jars() if s3a else [])))
except JobError as exc:
    print(f"submit.sh: error: {exc}", file=sys.stderr)
    sys.exit(2)
'
packages="org.apache.spark:spark-avro_2.13:$spark_version,org.apache.spark:spark-sql-kafka-0-10_2.13:$spark_version,io.delta:delta-spark_2.13:$delta_version"
s3a=no
for arg in "$@"; do
    if [[ $arg == s3a://* || $arg == --*=s3a://* ]]; then s3a=s3a; fi
done
jvm_parts=(--packages "$packages")
if [ "$s3a" = s3a ]; then
    sdk_version=$(sed -n 's:.*<aws.sdk.version>\(.*\)</aws.sdk.version>.*:\1:p' \
        "$root/deploy/jvm/s3-pom.xml")
    sdk=software.amazon.awssdk
    jvm_parts=(--packages "$packages,org.apache.hadoop:hadoop-aws:${HADOOP_VERSION:-3.4.1},$sdk:s3:$sdk_version,$sdk:s3-transfer-manager:$sdk_version,$sdk:sts:$sdk_version"
               --exclude-packages "$sdk:bundle")
fi
if [[ $master == spark://* || $jars == local || $s3a == s3a ]]; then
    local_jars=$(PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$python" -c "$session_check" \
        "$master" "$jars" "$s3a")
    if [ "$jars" = local ]; then jvm_parts=(--jars "$local_jars"); fi
fi
"$python" "$root/deploy/spark/build_zip.py" "$zip" >&2
exec spark-submit \
    --master "$master" \
    "${jvm_parts[@]}" \
    --py-files "$zip" \
    --conf spark.sql.session.timeZone=UTC \
    --conf spark.sql.codegen.cache.maxEntries=2000 \
    --conf spark.kafka.consumer.cache.capacity=1024 \
    "$root/spark_jobs/$job.py" "$@"
