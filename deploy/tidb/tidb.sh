#!/usr/bin/env bash
# Build, start or stop a TiDB server on loopback with its embedded store (unistore): the
# upstream TiDB the handle-key-only tests read rows from at a commit ts (--upstream-tidb-dsn).
#   deploy/tidb/tidb.sh build     builds `tidb-server` from its Go module into $CACHE (once)
#   deploy/tidb/tidb.sh start DATA_DIR PORT   builds when missing, starts tidb-server with its
#       data in DATA_DIR, MySQL protocol on 127.0.0.1:PORT (user root, no password; its status
#       port on a free loopback port, in DATA_DIR/status_port), waits until it answers, sets
#       the GC safe point (unistore runs no GC worker, and snapshot reads need one), prints the
#       PID.
#   deploy/tidb/tidb.sh stop DATA_DIR   stops it (SIGTERM, then SIGKILL)
# CACHE: $FLATAVRO_TIDB_CACHE or .cache/tidb. TiDB is the version tiflow v9.0.0-beta.2.pre (the
# TiCDC the vectors come from) depends on. `go install` refuses the module (its go.mod has
# `replace`s), so build uses the small module in this folder (go.mod, go.sum, tools.go: TiDB
# with its own replace directives) and runs `go build github.com/pingcap/tidb/cmd/tidb-server`
# there. Measured on 2 cores: 428 s with an empty Go build cache (modules already downloaded;
# a fresh machine adds their download through the Go proxy), 22 s when Go's caches are warm.
# One ~250 MB binary kept in $CACHE.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/service.sh
source "$here/../lib/service.sh"
root=$(cd "$here/../.." && pwd)
cache=${FLATAVRO_TIDB_CACHE:-$root/.cache/tidb}
mkdir -p "$cache" && cache=$(cd "$cache" && pwd)  # absolute: the build runs in another folder
python=${PYTHON:-$root/.venv/bin/python}
module=github.com/pingcap/tidb
version=v1.1.0-beta.0.20250415053443-ea52376d91c8
server=$cache/tidb-server
usage="usage: tidb.sh build | start DATA_DIR PORT | stop DATA_DIR"
command=${1:?$usage}

build() {
    local stamp
    stamp="$module@$version $(cat "$here/go.mod" "$here/go.sum" | cksum)"
    if [[ -x "$server" && -f "$cache/.stamp" && "$(cat "$cache/.stamp")" == "$stamp" ]]; then
        return 0
    fi
    command -v go >/dev/null || { echo "tidb.sh: go is not on PATH (needed once to build tidb-server; https://go.dev/dl)" >&2; exit 1; }
    echo "building tidb-server ($module@$version) with go, once: its modules into Go's" \
        "cache, ~7 min on 2 cores, one ~250 MB binary kept in $cache" >&2
    local started=$SECONDS work
    work=$(mktemp -d "$cache/build.XXXXXX")
    # shellcheck disable=SC2064  # $work now: the trap runs after build returns
    trap "rm -rf '$work'" EXIT
    cp "$here/go.mod" "$here/go.sum" "$here/tools.go" "$work/"
    (cd "$work" && go build -o "$server.tmp" "$module/cmd/tidb-server") >&2
    rm -rf "$work"
    mv "$server.tmp" "$server"
    echo "$stamp" > "$cache/.stamp"
    echo "built tidb-server in $((SECONDS - started)) s" >&2
}

case $command in
build)
    build
    ;;
start)
    data=${2:?DATA_DIR missing}
    port=${3:?PORT missing}
    build
    mkdir -p "$data/store"
    data=$(cd "$data" && pwd)
    status=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo "$status" > "$data/status_port"
    nohup "$server" -store=unistore -path="$data/store" -host=127.0.0.1 -P "$port" \
        -status "$status" -status-host 127.0.0.1 -socket "" -L warn \
        -log-file "$data/tidb.log" > "$data/tidb.out" 2>&1 &
    pid=$!
    echo "$pid" > "$data/tidb.pid"
    # Ready when the status port says so and the MySQL port takes a connection; then the GC
    # safe point (as TiDB's own tests set it), which `set @@tidb_snapshot` reads.
    if ! "$python" - "$port" "$status" "$pid" <<'PY'
import os, socket, sys, time, urllib.request
port, status, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
deadline = time.monotonic() + 120
while True:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("tidb-server exited during start-up")
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{status}/status", timeout=2).close()
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(f"tidb-server did not answer on port {port} within 120 s")
        time.sleep(0.25)
try:
    import pymysql
except ImportError:
    sys.exit("tidb.sh: PyMySQL is not installed (pip install 'flatavro[tidb]')")
connection = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
with connection.cursor() as cursor:
    cursor.execute("INSERT HIGH_PRIORITY INTO mysql.tidb VALUES ('tikv_gc_safe_point', "
                   "'20000101-00:00:00 +0000', '') ON DUPLICATE KEY UPDATE "
                   "variable_value = '20000101-00:00:00 +0000'")
connection.close()
PY
    then
        start_failed "tidb.sh: tidb-server" "$pid" "$data/tidb.log"
    fi
    echo "$pid"
    ;;
stop)
    data=${2:?DATA_DIR missing}
    stop_pidfile "$data/tidb.pid" 20
    ;;
*)
    echo "$usage" >&2
    exit 2
    ;;
esac
