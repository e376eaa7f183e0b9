#!/usr/bin/env bash
# Start or stop a single-node KRaft Kafka broker from the Maven Central jars.
#   deploy/kafka/kafka.sh start DATA_DIR PORT CONTROLLER_PORT   formats DATA_DIR (first time),
#       starts the broker on 127.0.0.1:PORT, waits until it answers, prints its PID
#   deploy/kafka/kafka.sh stop DATA_DIR                         stops it cleanly (SIGTERM)
# With KAFKA_SASL_PORT, KAFKA_SASL_USER and KAFKA_SASL_PASSWORD set, start also opens a
# SASL_PLAINTEXT listener (PLAIN) on 127.0.0.1:KAFKA_SASL_PORT for that one user; with
# KAFKA_SASL_SSL_PORT, KAFKA_SCRAM_USER and KAFKA_SCRAM_PASSWORD instead, the secured profile:
# a SASL_SSL listener (SCRAM-SHA-512, TLS from a CA in DATA_DIR/tls/ca.pem), see secure.sh.
# A cluster of N combined broker+controller nodes (RF 3, min ISR 2; cluster.sh):
#   deploy/kafka/kafka.sh start-cluster DATA_DIR BASE_PORT [N]   N=3 nodes on BASE_PORT,
#       BASE_PORT+2, ... (controllers one above each); prints the bootstrap list
#   deploy/kafka/kafka.sh stop-node DATA_DIR I | start-node DATA_DIR I   restart node I
#   deploy/kafka/kafka.sh stop-cluster DATA_DIR
# The jars come from deploy/jvm/fetch.sh kafka (fetched when missing). KAFKA_JVM_PERFORMANCE_OPTS
# (the name Kafka's own kafka-run-class.sh reads for JIT and GC flags) is added to every JVM
# the script starts; the tests set it to the C1 JIT alone and the serial collector.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/service.sh
source "$here/../lib/service.sh"
root=$(cd "$here/../.." && pwd)
cache=${FLATAVRO_JVM_CACHE:-$root/.cache/jvm}
python=${PYTHON:-$root/.venv/bin/python}
command=${1:?usage: kafka.sh start DATA_DIR PORT CONTROLLER_PORT | stop DATA_DIR}
data=${2:?DATA_DIR missing}
mkdir -p "$data"
data=$(cd "$data" && pwd)

case $command in
start)
    port=${3:?PORT missing}
    controller=${4:?CONTROLLER_PORT missing}
    "$root/deploy/jvm/fetch.sh" kafka
    sed -e "s|@PORT@|$port|g" -e "s|@CONTROLLER_PORT@|$controller|g" -e "s|@DATA_DIR@|$data|g" \
        "$here/server.properties.template" > "$data/server.properties"
    if [[ -n "${KAFKA_SASL_PORT:-}" ]]; then
        # An extra SASL_PLAINTEXT listener (mechanism PLAIN, one user) for authentication
        # tests; Java properties: these lines win over the template's.
        cat >> "$data/server.properties" <<EOF
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${KAFKA_SASL_USER:?KAFKA_SASL_USER missing}="${KAFKA_SASL_PASSWORD:?KAFKA_SASL_PASSWORD missing}";
EOF
    fi
    format_args=()
    if [[ -n "${KAFKA_SASL_SSL_PORT:-}" ]]; then
        # The secured profile (SASL_SSL + SCRAM-SHA-512, a CA of its own): see secure.sh.
        # shellcheck source=secure.sh
        source "$here/secure.sh"
        secure_profile "$data" "$port" "$controller"
    fi
    classpath="$cache/kafka/*"
    read -r -a performance_opts <<< "${KAFKA_JVM_PERFORMANCE_OPTS:-}"
    java_opts=(-Xms256m -Xmx512m "${performance_opts[@]}" -Dkafka.logs.dir="$data"
               -Dlog4j.configuration="file:$here/log4j.properties")
    if [[ ! -f "$data/log/meta.properties" ]]; then
        cluster=$(java -cp "$classpath" "${java_opts[@]}" kafka.tools.StorageTool random-uuid)
        java -cp "$classpath" "${java_opts[@]}" kafka.tools.StorageTool format \
            -t "$cluster" -c "$data/server.properties" "${format_args[@]}" > "$data/format.log" 2>&1
    fi
    nohup java -cp "$classpath" "${java_opts[@]}" kafka.Kafka "$data/server.properties" \
        > "$data/stdout.log" 2>&1 &
    pid=$!
    echo "$pid" > "$data/kafka.pid"
    # Ready when a metadata request through the PLAINTEXT listener lists the broker.
    if ! "$python" "$here/await_broker.py" "$port" "$pid" 1 90 "the broker"
    then
        start_failed "kafka.sh: the broker" "$pid" "$data/stdout.log"
    fi
    echo "$pid"
    ;;
stop)
    stop_pidfile "$data/kafka.pid" 30
    ;;
start-cluster | start-node | stop-node | stop-cluster)
    # A multi-node KRaft cluster (replication factor 3, min ISR 2): see cluster.sh.
    # shellcheck source=cluster.sh
    source "$here/cluster.sh"
    case $command in
    start-cluster) cluster_start "$data" "${3:?BASE_PORT missing}" "${4:-3}" ;;
    start-node) node_start "$data" "${3:?NODE missing}" ;;
    stop-node) node_stop "$data" "${3:?NODE missing}" ;;
    stop-cluster) cluster_stop "$data" ;;
    esac
    ;;
*)
    echo "usage: kafka.sh start DATA_DIR PORT CONTROLLER_PORT | stop DATA_DIR" >&2
    exit 2
    ;;
esac
