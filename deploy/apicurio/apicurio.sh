#!/usr/bin/env bash
# Start or stop Apicurio Registry (in-memory storage) from the Maven Central tarball: the
# third-party, Confluent-compatible registry the external-registry tests run against.
#   deploy/apicurio/apicurio.sh start DATA_DIR PORT   starts it on 127.0.0.1:PORT, waits until
#       its Confluent API (http://127.0.0.1:PORT/apis/ccompat/v7) answers, prints its PID
#   deploy/apicurio/apicurio.sh stop DATA_DIR          stops it (SIGTERM, then SIGKILL)
# DATA_DIR holds only its pid file and log: storage is in memory, so a restart is an empty
# registry. Extra JVM options (-Dname=value, e.g. Apicurio's settings) in APICURIO_OPTS.
# The app comes from deploy/jvm/fetch.sh apicurio (fetched when missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/service.sh
source "$here/../lib/service.sh"
root=$(cd "$here/../.." && pwd)
cache=${FLATAVRO_JVM_CACHE:-$root/.cache/jvm}
python=${PYTHON:-$root/.venv/bin/python}
command=${1:?usage: apicurio.sh start DATA_DIR PORT | stop DATA_DIR}
data=${2:?DATA_DIR missing}
mkdir -p "$data"
data=$(cd "$data" && pwd)

case $command in
start)
    port=${3:?PORT missing}
    "$root/deploy/jvm/fetch.sh" apicurio
    jar=$(compgen -G "$cache/apicurio/apicurio-registry-app-*-runner.jar" | head -1)
    # shellcheck disable=SC2086  # APICURIO_OPTS: several -D options, split on purpose
    nohup java -Xms128m -Xmx512m -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
        ${APICURIO_OPTS:-} -jar "$jar" > "$data/apicurio.log" 2>&1 &
    pid=$!
    echo "$pid" > "$data/apicurio.pid"
    # Ready when GET /apis/ccompat/v7/subjects answers (any HTTP status: with
    # authentication on, 401 is an answer too).
    if ! "$python" - "$port" "$pid" <<'PY'
import os, sys, time, urllib.error, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
url = f"http://127.0.0.1:{port}/apis/ccompat/v7/subjects"
deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("Apicurio exited during start-up")
    try:
        urllib.request.urlopen(url, timeout=2).close()
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except OSError:
        time.sleep(0.25)
sys.exit("Apicurio did not answer within 90 s")
PY
    then
        start_failed "apicurio.sh: the registry" "$pid" "$data/apicurio.log"
    fi
    echo "$pid"
    ;;
stop)
    stop_pidfile "$data/apicurio.pid" 20
    ;;
*)
    echo "usage: apicurio.sh start DATA_DIR PORT | stop DATA_DIR" >&2
    exit 2
    ;;
esac
