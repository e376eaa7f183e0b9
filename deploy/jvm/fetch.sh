#!/usr/bin/env bash
# Fetch the JVM parts from Maven Central with Maven into a git-ignored cache (re-used when
# present):
#   $CACHE/spark/  spark-avro_2.13 + spark-sql-kafka-0-10_2.13 at exactly the installed
#                  pyspark version, with the runtime dependencies pyspark does not ship
#                  (given to Spark through spark.jars), delta-spark, and Iceberg's Spark
#                  runtime with sqlite-jdbc (spark-pom.xml);
#   $CACHE/kafka/  kafka_2.13 and a log4j binding: a KRaft broker for deploy/kafka/kafka.sh;
#   $CACHE/apicurio/  Apicurio Registry's app (runner jar + lib/), unpacked from its tarball:
#                  the third-party registry of the tests, for deploy/apicurio/apicurio.sh;
#   $CACHE/hadoop-aws/  hadoop-aws at the Hadoop version pyspark ships and the AWS SDK v2
#                  modules S3A loads, minus what pyspark ships (s3a:// paths, s3-pom.xml).
# Usage: deploy/jvm/fetch.sh [spark|kafka|apicurio|hadoop-aws|all]   (CACHE:
# $FLATAVRO_JVM_CACHE or .cache/jvm)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
cache=${FLATAVRO_JVM_CACHE:-$root/.cache/jvm}
# Absolute: Maven resolves a relative -DoutputDirectory against the pom's folder, not ours.
mkdir -p "$cache" && cache=$(cd "$cache" && pwd)
what=${1:-all}

# Maven in batch mode, quiet, without colour; jansi.noreset stops Maven 3.8 from printing
# ANSI reset codes ("[0m[0m") even then (a JVM property: it must come through MAVEN_OPTS).
export MAVEN_OPTS="${MAVEN_OPTS:-} -Djansi.noreset=true"

# $1 name, $2 pom, $3 stamp text, $4 what it downloads, rest: extra Maven properties
# (FETCH_GOAL: the dependency plugin's goal, copy-dependencies unless set)
fetch() {
    local name=$1 pom=$2 stamp=$3 size=$4
    local goal=${FETCH_GOAL:-copy-dependencies}
    shift 4
    local dir="$cache/$name"
    if [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]]; then
        return 0
    fi
    echo "fetching the $name jars ($stamp) from Maven Central with Maven: $size" >&2
    local started=$SECONDS
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    mvn -q -B --no-transfer-progress -Dstyle.color=never -s "$here/settings.xml" \
        -f "$here/$pom" "$@" \
        "dependency:$goal" -DincludeScope=runtime -DoutputDirectory="$dir.tmp" >&2
    if ! compgen -G "$dir.tmp/*.jar" > /dev/null; then
        echo "Maven fetched no $name jars into $dir.tmp" >&2
        exit 1
    fi
    echo "$stamp" > "$dir.tmp/.stamp"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    echo "fetched the $name jars in $((SECONDS - started)) s" >&2
}

pyspark_jars() {
    "$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))'
}

# $1 a cache folder: keep only what pyspark lacks (two copies of a library on the classpath
# is a conflict; pyspark's own copy wins).
drop_pyspark_jars() {
    local jar artifact shipped
    shipped=$(pyspark_jars)
    for jar in "$1"/*.jar; do
        artifact=$(basename "$jar" | sed -E 's/-[0-9][^-]*(-[A-Za-z0-9.]+)?\.jar$//')
        if compgen -G "$shipped/$artifact-[0-9]*.jar" > /dev/null; then
            rm -f "$jar"
        fi
    done
}

if [[ $what == spark || $what == all ]]; then
    spark_version=$("$python" -c 'import pyspark; print(pyspark.__version__)')
    delta_version=$(sed -n 's:.*<delta.version>\(.*\)</delta.version>.*:\1:p' "$here/spark-pom.xml")
    iceberg_version=$(sed -n 's:.*<iceberg.version>\(.*\)</iceberg.version>.*:\1:p' \
        "$here/spark-pom.xml")
    fetch spark spark-pom.xml "spark $spark_version delta $delta_version iceberg $iceberg_version" \
        "~160 MB into ~/.m2 the first time, ~80 MB of it kept in $cache/spark" \
        -Dspark.version="$spark_version"
    drop_pyspark_jars "$cache/spark"
fi
if [[ $what == kafka || $what == all ]]; then
    kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/kafka-pom.xml")
    fetch kafka kafka-pom.xml "kafka $kafka_version" \
        "~50 MB into ~/.m2 the first time, ~46 MB of it kept in $cache/kafka"
fi
if [[ $what == apicurio || $what == all ]]; then
    apicurio_version=$(sed -n 's:.*<apicurio.version>\(.*\)</apicurio.version>.*:\1:p' \
        "$here/apicurio-pom.xml")
    FETCH_GOAL=unpack-dependencies fetch apicurio apicurio-pom.xml "apicurio $apicurio_version" \
        "~140 MB into ~/.m2 the first time, ~150 MB unpacked in $cache/apicurio"
fi
if [[ $what == hadoop-aws || $what == all ]]; then
    # hadoop-aws must match the Hadoop inside pyspark (hadoop-client-api-<version>.jar).
    shipped=$(compgen -G "$(pyspark_jars)/hadoop-client-api-*.jar" | head -1 || true)
    hadoop_version=$(basename "${shipped:-none}" .jar | sed 's/^hadoop-client-api-//')
    wanted=$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$here/s3-pom.xml")
    sdk_version=$(sed -n 's:.*<aws.sdk.version>\(.*\)</aws.sdk.version>.*:\1:p' "$here/s3-pom.xml")
    if [[ $hadoop_version != "$wanted" ]]; then
        echo "pyspark ships Hadoop ${hadoop_version:-(no hadoop-client-api jar)} but" \
            "deploy/jvm/s3-pom.xml is for Hadoop $wanted: set its hadoop.version, and" \
            "aws.sdk.version to the SDK that Hadoop's hadoop-project pom names" >&2
        exit 1
    fi
    fetch hadoop-aws s3-pom.xml "hadoop-aws $wanted aws-sdk $sdk_version" \
        "~15 MB into ~/.m2 the first time, ~10 MB of it kept in $cache/hadoop-aws"
    drop_pyspark_jars "$cache/hadoop-aws"
fi
