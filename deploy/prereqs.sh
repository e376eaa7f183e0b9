#!/bin/sh
# Check what a make target needs from this machine before it downloads anything; when
# something is missing, say so in ONE line (what, and which targets need it) and exit 1.
#   deploy/prereqs.sh run|openapi|dist|setup|check|test|demo|bench
# Every target needs python3 >= 3.11 ($PYTHON, default python3) and, to create .venv, its
# venv module with pip. Only the Spark and Kafka parts (setup, test, demo, bench) need
# java 17+ and mvn; test also needs chromium, or apt-get as root to install it.
# POSIX sh on purpose: it must run on a machine that lacks everything else.
target=${1:?usage: deploy/prereqs.sh run|openapi|dist|setup|check|test|demo|bench}
python=${PYTHON:-python3}
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac  # not dirname: coreutils may be missing too
root=$(cd "$here/.." && pwd)
missing=""
run_needs_it=no

add() {  # $1: what is missing and which targets need it; $2: "not-run" if make run does not
    missing="${missing:+$missing; }$1"
    [ "$2" = not-run ] || run_needs_it=yes
}

case $target in
run|openapi|dist|setup|check|test|demo|bench) ;;
*) echo "deploy/prereqs.sh: unknown target '$target'" >&2; exit 2 ;;
esac

if ! command -v "$python" >/dev/null 2>&1; then
    add "python3 >= 3.11 ($python is not on PATH; set PYTHON=/path/to/python3.11; every target needs it)"
elif ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    found=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
    add "python3 >= 3.11 ($python is ${found:-unusable}; set PYTHON=/path/to/python3.11; every target needs it)"
elif [ "$target" != dist ] && [ ! -x "$root/.venv/bin/python" ] \
        && ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
    add "Python's venv module with pip (Debian/Ubuntu: apt-get install python3-venv; every target but dist needs it to create .venv)"
fi

case $target in
setup|test|demo|bench)
    if ! command -v java >/dev/null 2>&1; then
        add "java 17+ (not on PATH; make setup/test/demo/bench need it for Spark and Kafka)" not-run
    else
        said=$(java -version 2>&1)  # 'openjdk version "17.0.15" 2025-04-15', '... "1.8.0_292"'
        case $said in *'version "'*) version=${said#*version \"}; version=${version%%\"*} ;;
                      *) version="" ;; esac
        major=${version%%.*}
        case $major in ''|*[!0-9]*) major=0 ;; esac
        if [ "$major" -lt 17 ]; then  # Java 8 and older say 1.x
            add "java 17+ (found ${version:-an unreadable version}; make setup/test/demo/bench need it for Spark and Kafka)" not-run
        fi
    fi
    command -v mvn >/dev/null 2>&1 ||
        add "mvn (Maven; make setup/test/demo/bench use it to fetch the Spark and Kafka jars)" not-run
    if [ "$target" = test ] && ! command -v openssl >/dev/null 2>&1; then
        add "openssl (make test makes the secured Kafka broker's CA and certificate with it; Debian: apt-get install openssl)" not-run
    fi
    if { [ "$target" = setup ] || [ "$target" = test ] || [ "$target" = bench ]; } && ! command -v go >/dev/null 2>&1; then
        add "go (make setup/test build helm, SeaweedFS and tidb-server with it once, make bench SeaweedFS: the chart, object-storage and handle-key-only tests, the S3 claim-check benchmark; https://go.dev/dl)" not-run
    fi
    ;;
esac

# The compiled reader/writer (service/core/_flatread.c) is optional for the service (it falls
# back to fastavro and Python), but the suite and the benchmarks measure it.
case $target in
check|test|bench)
    if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
        add "a C compiler (cc; Debian: apt-get install gcc) for service/core/_flatread.c (make test/bench build and measure it)" not-run
    elif command -v "$python" >/dev/null 2>&1 && ! "$python" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
        add "Python's C headers (Python.h; Debian: apt-get install python3-dev) for service/core/_flatread.c (make test/bench build it)" not-run
    fi
    ;;
esac

if [ "$target" = test ] && ! command -v chromium >/dev/null 2>&1 \
        && ! command -v chromium-browser >/dev/null 2>&1 \
        && { ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; }; then
    add "chromium, or apt-get as root to install it (make test renders /docs in it)" not-run
fi

[ -z "$missing" ] && exit 0
hint=""
[ "$run_needs_it" = no ] && [ "$target" != run ] && hint=" -- make run needs only python3 >= 3.11"
echo "make $target: missing $missing$hint" >&2
exit 1
