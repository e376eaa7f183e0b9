# Shared by deploy/kafka/kafka.sh and deploy/apicurio/apicurio.sh (sourced, not run): the
# start-up failure and the stop of a JVM service whose PID sits in a file.

# start_failed NAME PID LOG: a service that did not come up: kill it, say where its log is,
# show the log's end, exit 1.
start_failed() {
    local name=$1 pid=$2 log=$3
    kill "$pid" 2>/dev/null || true
    echo "$name did not start; see $log" >&2
    tail -20 "$log" >&2 || true
    exit 1
}

# stop_pidfile FILE SECONDS: SIGTERM the process named in FILE, wait up to SECONDS for it to
# exit, then SIGKILL it; FILE is removed. Nothing to do without FILE.
stop_pidfile() {
    local file=$1 seconds=$2 pid
    [[ -f "$file" ]] || return 0
    pid=$(cat "$file")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 1 $((seconds * 4))); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
}
