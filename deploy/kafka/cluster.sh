# Sourced by deploy/kafka/kafka.sh: a KRaft cluster of N combined broker+controller nodes on
# 127.0.0.1 (one static quorum), every internal topic replicated to 3 with min ISR 2, for the
# bridge's broker-restart tests. Node I (1..N) lives in DATA_DIR/node-I, listens on
# BASE_PORT+2(I-1) and has its controller on BASE_PORT+2(I-1)+1; DATA_DIR/cluster.env keeps
# N and BASE_PORT for the per-node commands.
#   cluster_start DATA_DIR BASE_PORT N   write, format (first time) and start every node, wait
#                                       until all N are registered; print the bootstrap list
#   node_start DATA_DIR I                start (restart) node I, wait until the cluster has N
#   node_stop DATA_DIR I                 stop node I cleanly (SIGTERM)
#   cluster_stop DATA_DIR                stop every node

cluster_start() {
    local data=$1 base=$2 count=$3 voters="" i id
    "$root/deploy/jvm/fetch.sh" kafka
    for i in $(seq 1 "$count"); do
        voters+="${voters:+,}$i@127.0.0.1:$((base + 2 * (i - 1) + 1))"
    done
    printf 'count=%s\nbase=%s\n' "$count" "$base" > "$data/cluster.env"
    [[ -f "$data/cluster.id" ]] || java -cp "$cache/kafka/*" kafka.tools.StorageTool random-uuid \
        > "$data/cluster.id"
    id=$(cat "$data/cluster.id")
    for i in $(seq 1 "$count"); do
        _node_properties "$data/node-$i" "$i" "$((base + 2 * (i - 1)))" "$voters" "$count"
        if [[ ! -f "$data/node-$i/log/meta.properties" ]]; then
            java -cp "$cache/kafka/*" -Xmx256m -Dlog4j.configuration="file:$here/log4j.properties" \
                kafka.tools.StorageTool format -t "$id" -c "$data/node-$i/server.properties" \
                > "$data/node-$i/format.log" 2>&1
        fi
        _node_launch "$data/node-$i"
    done
    for i in $(seq 1 "$count"); do
        _node_wait "$data" "$i"
    done
    seq 1 "$count" | while read -r i; do printf '127.0.0.1:%s\n' "$((base + 2 * (i - 1)))"; done \
        | paste -sd, -
}

node_start() {
    local data=$1 node=$2
    [[ -f "$data/node-$node/server.properties" ]] || {
        echo "kafka.sh: no node $node in $data (run start-cluster first)" >&2; exit 2; }
    _node_launch "$data/node-$node"
    _node_wait "$data" "$node"
}

node_stop() {
    stop_pidfile "$1/node-$2/kafka.pid" 60
}

cluster_stop() {
    # Every node is asked to stop at once, then each is waited for: one after another, the
    # last node left without a quorum waits out its controlled shutdown (60 s, then SIGKILL).
    local data=$1 node
    for node in "$data"/node-*; do
        [[ -f "$node/kafka.pid" ]] && { kill "$(cat "$node/kafka.pid")" 2>/dev/null || true; }
    done
    for node in "$data"/node-*; do
        [[ -d "$node" ]] && stop_pidfile "$node/kafka.pid" 60
    done
    return 0
}

# _node_properties DIR ID PORT VOTERS COUNT: the template's single-node settings, then the
# cluster's (Java properties: the later line wins).
_node_properties() {
    local dir=$1 id=$2 port=$3 voters=$4 count=$5
    mkdir -p "$dir"
    sed -e "s|@PORT@|$port|g" -e "s|@CONTROLLER_PORT@|$((port + 1))|g" -e "s|@DATA_DIR@|$dir|g" \
        "$here/server.properties.template" > "$dir/server.properties"
    cat >> "$dir/server.properties" <<EOF
node.id=$id
controller.quorum.voters=$voters
default.replication.factor=$count
min.insync.replicas=$((count > 1 ? 2 : 1))
offsets.topic.replication.factor=$count
transaction.state.log.replication.factor=$count
transaction.state.log.min.isr=$((count > 1 ? 2 : 1))
EOF
}

_node_launch() {
    local dir=$1 performance_opts
    read -r -a performance_opts <<< "${KAFKA_JVM_PERFORMANCE_OPTS:-}"
    nohup java -cp "$cache/kafka/*" -Xms256m -Xmx512m "${performance_opts[@]}" -Dkafka.logs.dir="$dir" \
        -Dlog4j.configuration="file:$here/log4j.properties" kafka.Kafka "$dir/server.properties" \
        > "$dir/stdout.log" 2>&1 &
    echo "$!" > "$dir/kafka.pid"
}

# _node_wait DATA_DIR I: until node I answers a metadata request listing every node (180 s:
# three JVMs starting on two cores are slow).
_node_wait() {
    local data=$1 node=$2 count base pid
    count=$(sed -n 's/^count=//p' "$data/cluster.env")
    base=$(sed -n 's/^base=//p' "$data/cluster.env")
    pid=$(cat "$data/node-$node/kafka.pid")
    if ! "$python" "$here/await_broker.py" "$((base + 2 * (node - 1)))" "$pid" "$count" 180 \
        "node $node"
    then
        start_failed "kafka.sh: node $node" "$pid" "$data/node-$node/stdout.log"
    fi
}
