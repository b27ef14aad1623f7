#!/usr/bin/env bash
# Measures iris_http over TLS against plain HTTP in the same run, with wrk on the same machine:
#  1. keep-alive requests/s (GET /files/index.html, 16 connections);
#  2. one request per connection (`Connection: close`: a full TLS handshake each), with the
#     server's CPU time per connection, whole process and its sockets thread (where the
#     handshakes run).
# Prints each figure and the HTTPS/HTTP ratio.
#
#   bash examples/iris/scripts/https_measurements.sh          # from the repository root
#   DURATION=30 ROUNDS=3 bash examples/iris/scripts/https_measurements.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."

DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-18443}

. examples/iris/scripts/debian.sh
debian_install wrk openssl

cargo build --release -q -p iris --bin iris_http
SERVER=${CARGO_TARGET_DIR:-target}/release/iris_http
CERTS=$(mktemp -d)
trap 'rm -rf "$CERTS"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$CERTS/key.pem" -out "$CERTS/cert.pem" -subj /CN=localhost -days 30 2>/dev/null
TLS_ARGS=(--tls-cert "$CERTS/cert.pem" --tls-key "$CERTS/key.pem")
TCK=$(getconf CLK_TCK)

# CPU milliseconds (user + system) of a /proc stat file.
cpu_ms() { awk -v t="$TCK" '{ print int(($14 + $15) * 1000 / t) }' "$1"; }

# run SCHEME CLOSE: prints "req/s requests server_cpu_ms sockets_cpu_ms"
run() {
    local scheme=$1 close=$2 args=() wrk_args=()
    if [ "$scheme" = https ]; then args=("${TLS_ARGS[@]}"); fi
    if [ "$close" = yes ]; then wrk_args=(-H "Connection: close"); fi
    "$SERVER" --port "$PORT" --root examples/iris/iris_root --work-us 0 "${args[@]}" >/dev/null 2>&1 &
    local pid=$!
    sleep 1
    local sockets
    sockets=$(dirname "$(grep -l '^whirl-soc' /proc/$pid/task/*/comm | head -1)")
    local cpu0 sock0 out cpu1 sock1
    cpu0=$(cpu_ms /proc/$pid/stat)
    sock0=$(cpu_ms "$sockets/stat")
    out=$(wrk -t2 -c16 -d"${DURATION}s" "${wrk_args[@]}" "$scheme://127.0.0.1:$PORT/files/index.html")
    cpu1=$(cpu_ms /proc/$pid/stat)
    sock1=$(cpu_ms "$sockets/stat")
    kill -INT "$pid"
    wait "$pid" 2>/dev/null || true
    local rps n
    rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
    n=$(echo "$out" | awk '/requests in/ { print $1 }')
    echo "$rps $n $((cpu1 - cpu0)) $((sock1 - sock0))"
}

echo "wrk -t2 -c16 -d${DURATION}s [-H 'Connection: close'] {http,https}://127.0.0.1:$PORT/files/index.html"
for round in $(seq "$ROUNDS"); do
    echo "# round $round"
    read -r http_rps _ _ _ < <(run http no)
    read -r https_rps _ _ _ < <(run https no)
    awk -v a="$http_rps" -v b="$https_rps" 'BEGIN {
        printf "keep-alive          http %9.0f req/s   https %9.0f req/s   https/http %.2f\n", a, b, b / a }'
    read -r hc_rps hc_n hc_cpu hc_sock < <(run http yes)
    read -r sc_rps sc_n sc_cpu sc_sock < <(run https yes)
    awk -v a="$hc_rps" -v b="$sc_rps" 'BEGIN {
        printf "connection per req  http %9.0f req/s   https %9.0f req/s   https/http %.2f\n", a, b, b / a }'
    awk -v hn="$hc_n" -v hc="$hc_cpu" -v hs="$hc_sock" -v sn="$sc_n" -v sc="$sc_cpu" -v ss="$sc_sock" 'BEGIN {
        h = hc * 1000 / hn; s = sc * 1000 / sn; hh = hs * 1000 / hn; st = ss * 1000 / sn
        printf "server CPU per conn http %7.1f us        https %7.1f us        https/http %.2f\n", h, s, s / h
        printf "  sockets thread    http %7.1f us        https %7.1f us        (TLS adds %.1f us: %.0f handshakes/s per sockets thread)\n", hh, st, st - hh, 1e6 / st }'
done
