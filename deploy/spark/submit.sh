#!/usr/bin/env bash
# Production: run the bulk-read job on a Spark 4.0 cluster with spark-submit. The JVM parts
# come from --packages (the same versions deploy/jvm fetches for local runs: spark-avro and
# spark-sql-kafka at the cluster's Spark version); the Python code ships as a zip.
#   deploy/spark/submit.sh --topic tidb_shop_orders --bootstrap-servers kafka:9092 \
#       --service-url http://flatavro:8080 --output s3a://lake/orders --materialize
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
spark_version=${SPARK_VERSION:-4.0.0}
work=$(mktemp -d)
(cd "$root" && zip -qr "$work/flatavro.zip" service spark_jobs -x '*__pycache__*')
exec spark-submit \
    --master "${SPARK_MASTER:-yarn}" \
    --packages "org.apache.spark:spark-avro_2.13:$spark_version,org.apache.spark:spark-sql-kafka-0-10_2.13:$spark_version" \
    --py-files "$work/flatavro.zip" \
    --conf spark.sql.session.timeZone=UTC \
    "$root/spark_jobs/bulk_read.py" "$@"
