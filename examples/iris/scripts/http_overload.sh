#!/usr/bin/env bash
# Measures iris_http's shedding (admission control only under overload) with wrk:
#
#  1. a 1 KiB file at 1, 64 and 1000 keep-alive connections with no simulated work,
#     predicates on and off: requests/s, 503s, p99 (nothing should be shed: no overload);
#  2. real overload, in the paper's overload demo: /resources/3 with
#     --demo overload --work-us 800 (one lookup = one unit of work = 800 us
#     on the one-thread "resources" group). Capacity is measured first (no predicates, 4
#     connections), then 1000 connections without and with predicates: goodput (non-503
#     answers per second) as a ratio of that capacity, and p99 (wrk's, over every answer,
#     503s included, which are held --shed-delay-ms before they are written);
#  3. memory: the server's VmRSS before, at the peak of a reconnect storm (wrk with
#     `Connection: close`: every request a new connection and a new anonymous session, as
#     /resources is a session path) and
#     after the idle anonymous sessions have expired.
#
#   bash examples/iris/scripts/http_overload.sh             # from the repository root
#   DURATION=20 bash examples/iris/scripts/http_overload.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
PORT=${PORT:-18095}
TARGET_DIR=${CARGO_TARGET_DIR:-target}

. examples/iris/scripts/debian.sh
debian_install wrk
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cargo build --release -q -p iris --bin iris_http
SERVER=$TARGET_DIR/release/iris_http
ROOT=$(mktemp -d)
cp examples/iris/iris_root/* "$ROOT"/
head -c 1024 /dev/zero | tr '\0' 'x' >"$ROOT/1k.txt"
LOG=$(mktemp)
PID=""

start() {
    "$SERVER" --port "$PORT" --root "$ROOT" "$@" >"$LOG" 2>&1 &
    PID=$!
    for _ in $(seq 100); do
        if (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then return; fi
        sleep 0.1
    done
    echo "iris_http did not start:"; cat "$LOG"; exit 1
}
stop() {
    if [ -n "$PID" ]; then
        kill -INT "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
        PID=""
    fi
}
cleanup() { stop; rm -rf "$ROOT" "$LOG"; }
trap cleanup EXIT

# Runs wrk; prints "total non2xx seconds p99_ms".
measure() {
    local out
    out=$(wrk "$@" --latency)
    echo "$out" | awk '
        function ms(v) {
            if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
            if (v ~ /m$/) return v * 60000; if (v ~ /s$/) return v * 1000; return v }
        / requests in / { total = $1; secs = $4; sub(/s,?$/, "", secs) }
        /Non-2xx or 3xx responses:/ { non2xx = $5 }
        /^ +99%/ { p99 = ms($2) }
        END { printf "%d %d %s %.1f\n", total, non2xx + 0, secs, p99 }'
}

echo "## 1. GET /files/1k.txt, no simulated work (--work-us 0), ${DURATION}s each"
printf "%-13s %6s %12s %8s %9s\n" predicates conns "requests/s" 503s "p99 ms"
for mode in on off; do
    if [ "$mode" = on ]; then start --work-us 0; else start --work-us 0 --no-predicates; fi
    for c in 1 64 1000; do
        threads=$(( c < 2 ? 1 : 2 ))
        read -r total non2xx secs p99 < <(measure -t"$threads" -c"$c" -d"${DURATION}s" \
            "http://127.0.0.1:$PORT/files/1k.txt")
        printf "%-13s %6d %12.0f %8d %9.1f\n" "$mode" "$c" "$(echo "$total / $secs" | bc -l)" \
            "$non2xx" "$p99"
    done
    stop
done

echo
echo "## 2. Overload: GET /resources/3 at 800 us of work each, ${DURATION}s after ${WARMUP}s of warm-up"
start --demo overload --work-us 800 --no-predicates
wrk -t1 -c4 -d"${WARMUP}s" "http://127.0.0.1:$PORT/resources/3" >/dev/null
read -r total non2xx secs p99 < <(measure -t1 -c4 -d"${DURATION}s" "http://127.0.0.1:$PORT/resources/3")
stop
capacity=$(echo "($total - $non2xx) / $secs" | bc -l)
printf "capacity (no predicates, 4 connections): %.0f requests/s, p99 %.1f ms\n" "$capacity" "$p99"
printf "%-28s %10s %10s %8s %9s\n" "1000 connections" "goodput/s" "/capacity" "503/s" "p99 ms"
for mode in "without predicates" "with predicates" "with predicates, close on 503" "with predicates, no shed delay"; do
    case $mode in
        "without predicates") start --demo overload --work-us 800 --no-predicates ;;
        "with predicates") start --demo overload --work-us 800 ;;
        "with predicates, close on 503") start --demo overload --work-us 800 --close-on-503 ;;
        "with predicates, no shed delay") start --demo overload --work-us 800 --shed-delay-ms 0 ;;
    esac
    wrk -t2 -c1000 -d"${WARMUP}s" "http://127.0.0.1:$PORT/resources/3" >/dev/null
    read -r total non2xx secs p99 < <(measure -t2 -c1000 -d"${DURATION}s" \
        "http://127.0.0.1:$PORT/resources/3")
    good=$(echo "($total - $non2xx) / $secs" | bc -l)
    printf "%-28s %10.0f %10.2f %8.0f %9.1f\n" "$mode" "$good" "$(echo "$good / $capacity" | bc -l)" \
        "$(echo "$non2xx / $secs" | bc -l)" "$p99"
    stop
done

echo
echo "## 3. Memory: a ${DURATION}s reconnect storm (Connection: close, 64 connections)"
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$PID/status"; }
start --work-us 0 --session-path /resources --anonymous-idle-s 2
before=$(rss)
peak=$before
wrk -t2 -c64 -d"${DURATION}s" -H "Connection: close" "http://127.0.0.1:$PORT/resources/3" \
    >/dev/null &
WRK=$!
while kill -0 "$WRK" 2>/dev/null; do
    now=$(rss); [ "$now" -gt "$peak" ] && peak=$now
    sleep 0.25
done
wait "$WRK" || true
# Anonymous sessions expire after 2 s idle; the sweep runs every 0.5 s.
sleep 4
after=$(rss)
stop
printf "VmRSS before %d KiB, peak %d KiB, after idle expiry %d KiB (%.0f%% of the growth given back)\n" \
    "$before" "$peak" "$after" "$(echo "100 * ($peak - $after) / ($peak - $before + 1)" | bc -l)"
