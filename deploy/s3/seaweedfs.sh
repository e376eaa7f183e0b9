#!/usr/bin/env bash
# Build, start or stop SeaweedFS: an S3-compatible object store on loopback for the
# object-storage tests (Delta tables and Spark checkpoints on s3a://).
#   deploy/s3/seaweedfs.sh build     builds `weed` from its Go module into $CACHE (once)
#   deploy/s3/seaweedfs.sh start DATA_DIR S3_PORT   builds when missing, starts
#       `weed server -s3` with its data in DATA_DIR, S3 on http://127.0.0.1:S3_PORT (its master,
#       volume and filer servers and their gRPC ports on free loopback ports, listed in
#       DATA_DIR/ports), waits until S3 answers, prints the PID. Its one S3 identity (admin
#       on every bucket) is AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, written to
#       DATA_DIR/s3.json (mode 600), never on a command line.
#   deploy/s3/seaweedfs.sh bucket DATA_DIR NAME     creates the bucket NAME (weed shell)
#   deploy/s3/seaweedfs.sh stop DATA_DIR   stops it (SIGTERM, then SIGKILL)
# CACHE: $FLATAVRO_S3_CACHE or .cache/s3. `go install` refuses the module (its go.mod has a
# `replace`), so build copies the module out of Go's read-only module cache and runs
# `go build ./weed` there (~6-9 min on 2 cores; its modules go into Go's cache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/service.sh
source "$here/../lib/service.sh"
root=$(cd "$here/../.." && pwd)
cache=${FLATAVRO_S3_CACHE:-$root/.cache/s3}
mkdir -p "$cache" && cache=$(cd "$cache" && pwd)  # absolute: the build runs in another folder
python=${PYTHON:-$root/.venv/bin/python}
# A pseudo-version: SeaweedFS tags (3.x, 4.x) are not Go semantic versions of this module.
module=github.com/seaweedfs/seaweedfs
version=v0.0.0-20261109003541-7506e5f91cd6
weed=$cache/weed
usage="usage: seaweedfs.sh build | start DATA_DIR S3_PORT | bucket DATA_DIR NAME | stop DATA_DIR"
command=${1:?$usage}

build() {
    if [[ -x "$weed" && -f "$cache/.stamp" && "$(cat "$cache/.stamp")" == "$module@$version" ]]; then
        return 0
    fi
    command -v go >/dev/null || { echo "seaweedfs.sh: go is not on PATH (needed once to build SeaweedFS; https://go.dev/dl)" >&2; exit 1; }
    echo "building SeaweedFS ($module@$version) with go, once: its modules into Go's" \
        "cache, ~6-9 min on 2 cores, one ~230 MB binary kept in $cache" >&2
    local started=$SECONDS src work
    mkdir -p "$cache"
    src=$(cd "$cache" && GOFLAGS=-mod=mod go mod download -json "$module@$version" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -d "$src" ]] || { echo "seaweedfs.sh: go mod download gave no folder for $module@$version" >&2; exit 1; }
    work=$(mktemp -d "$cache/build.XXXXXX")
    # shellcheck disable=SC2064  # $work now: the trap runs after build returns
    trap "rm -rf '$work'" EXIT
    # Built as the main module, so its go.mod's `replace` applies; in a copy, as Go's module
    # cache is read-only.
    cp -R "$src/." "$work/" && chmod -R u+w "$work"
    (cd "$work" && go mod download && CGO_ENABLED=0 go build -o "$weed.tmp" ./weed) >&2
    rm -rf "$work"
    mv "$weed.tmp" "$weed"
    echo "$module@$version" > "$cache/.stamp"
    echo "built SeaweedFS in $((SECONDS - started)) s" >&2
}

# $1 DATA_DIR: the master's address for weed shell (ip:port.grpcPort), from DATA_DIR/ports.
master_address() {
    # shellcheck source=/dev/null
    source "$1/ports"
    echo "127.0.0.1:$master.$master_grpc"
}

case $command in
build)
    build
    ;;
start)
    data=${2:?DATA_DIR missing}
    port=${3:?S3_PORT missing}
    : "${AWS_ACCESS_KEY_ID:?the S3 identity: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY}"
    : "${AWS_SECRET_ACCESS_KEY:?the S3 identity: set AWS_SECRET_ACCESS_KEY}"
    build
    mkdir -p "$data/store"
    data=$(cd "$data" && pwd)
    # Seven free loopback ports: SeaweedFS's defaults (gRPC = HTTP + 10000) would collide
    # between test workers and can pass 65535.
    "$python" - > "$data/ports" <<'PY'
import socket
names = ["master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3_grpc"]
sockets = [socket.socket() for _ in names]
for s in sockets:
    s.bind(("127.0.0.1", 0))
for name, s in zip(names, sockets):
    print(f"{name}={s.getsockname()[1]}")
for s in sockets:
    s.close()
PY
    # shellcheck source=/dev/null
    source "$data/ports"
    (umask 077 && "$python" - "$data/s3.json" <<'PY'
import json, os, sys
identity = {"name": "flatavro", "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            "credentials": [{"accessKey": os.environ["AWS_ACCESS_KEY_ID"],
                             "secretKey": os.environ["AWS_SECRET_ACCESS_KEY"]}]}
with open(sys.argv[1], "w") as f:
    json.dump({"identities": [identity]}, f)
PY
    )
    # -volume.max=0 with 64 MB volumes: volume slots from free disk (each bucket takes 7).
    nohup "$weed" server -dir="$data/store" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -master.port="$master" -master.port.grpc="$master_grpc" -master.telemetry=false \
        -master.volumeSizeLimitMB=64 -volume.max=0 \
        -volume.port="$volume" -volume.port.grpc="$volume_grpc" \
        -filer -filer.port="$filer" -filer.port.grpc="$filer_grpc" \
        -s3 -s3.port="$port" -s3.port.grpc="$s3_grpc" -s3.port.iceberg=0 -s3.port.lance=0 \
        -s3.localSocket="$data/s3.sock" -s3.config="$data/s3.json" \
        > "$data/weed.log" 2>&1 &
    pid=$!
    echo "$pid" > "$data/weed.pid"
    # Ready when S3 answers an (unsigned) request with any HTTP status and the filer, which
    # holds the buckets, answers too.
    if ! "$python" - "$port" "$filer" "$pid" <<'PY'
import os, sys, time, urllib.error, urllib.request
s3, filer, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
deadline = time.monotonic() + 90
pending = [f"http://127.0.0.1:{s3}/", f"http://127.0.0.1:{filer}/"]
while pending and time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("SeaweedFS exited during start-up")
    try:
        urllib.request.urlopen(pending[0], timeout=2).close()
        pending.pop(0)
    except urllib.error.HTTPError:
        pending.pop(0)
    except OSError:
        time.sleep(0.25)
if pending:
    sys.exit(f"SeaweedFS did not answer on {pending[0]} within 90 s")
PY
    then
        start_failed "seaweedfs.sh: SeaweedFS" "$pid" "$data/weed.log"
    fi
    echo "$pid"
    ;;
bucket)
    data=${2:?DATA_DIR missing}
    name=${3:?NAME missing}
    said=$(echo "s3.bucket.create -name $name" |
        "$weed" shell -master="$(master_address "$data")" 2>&1) || true
    if [[ $said != *"created bucket $name"* ]]; then
        echo "seaweedfs.sh: could not create the bucket $name: $said" >&2
        exit 1
    fi
    ;;
stop)
    data=${2:?DATA_DIR missing}
    stop_pidfile "$data/weed.pid" 20
    ;;
*)
    echo "$usage" >&2
    exit 2
    ;;
esac
