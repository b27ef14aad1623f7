#!/usr/bin/env bash
# Measures the iris_http example: throughput with wrk at 1, 64 and 1024 connections, then an
# overload run at about ten times capacity with three session classes, with and without
# admission control (loadgen), in the paper's overload demo (--demo overload). Prints what
# the README's tables are made from.
#
#   bash examples/iris/scripts/http_measurements.sh            # from the repository root
#   DURATION=30 bash examples/iris/scripts/http_measurements.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."

DURATION=${DURATION:-10}
PORT=${PORT:-18090}

. examples/iris/scripts/debian.sh
debian_install wrk
# 1024 connections on each side of loopback need descriptors.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cargo build --release -q -p iris --bin iris_http --bin loadgen
SERVER=target/release/iris_http
LOADGEN=target/release/loadgen
PID=""

start() {
    "$SERVER" --port "$PORT" "$@" >/tmp/iris_http.log 2>&1 &
    PID=$!
    for _ in $(seq 100); do
        if (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return; fi
        sleep 0.1
    done
    echo "iris_http did not start:"; cat /tmp/iris_http.log; exit 1
}
stop() {
    kill -INT "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
}
trap stop EXIT

echo "## wrk: GET /resources/3 (no simulated work), ${DURATION}s each"
start --work-us 0
for c in 1 64 1024; do
    threads=$(( c < 2 ? 1 : 2 ))
    echo "### $c connections"
    wrk -t"$threads" -c"$c" -d"${DURATION}s" --latency "http://127.0.0.1:$PORT/resources/3" \
        | grep -E "Requests/sec|^ +(50|90|99)%|Non-2xx|Socket errors"
done
stop

# Capacity: 1 ms of simulated work per resource lookup on the one-thread "resources" group,
# about 1,000 requests/s. 250 closed-loop sessions with 20 ms think time offer ~12,000/s.
LOAD=(--admins 10 --users 40 --anonymous 200 --think-ms 20 --duration-s "$DURATION"
      --warmup-s 2 --paths /resources/3,/resources/7)
for mode in without with with-retry-after; do
    echo "## loadgen: overload at ~10x capacity, $mode predicates"
    case $mode in
        without) start --demo overload --work-us 1000 --no-predicates; extra=() ;;
        with) start --demo overload --work-us 1000; extra=() ;;
        # Clients that wait the Retry-After of a 503, as well-behaved API clients do.
        with-retry-after) start --demo overload --work-us 1000; extra=(--honor-retry-after) ;;
    esac
    "$LOADGEN" --url "http://127.0.0.1:$PORT" "${LOAD[@]}" "${extra[@]}"
    stop
done
