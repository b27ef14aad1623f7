#!/usr/bin/env bash
# iris_http against nginx (Debian), axum + tower-http ServeDir and actix-web + actix-files
# (http-compare/), serving a 1 KiB and a 1 MiB file: wrk with keep-alive, interleaved rounds
# (the servers in a different order each round), medians (min-max) and the ratios of
# iris_http to each of the others. With PROTOCOLS, HTTP/2 rows too (h2load): h2c by prior
# knowledge on a plain port and h2 over TLS (ALPN h2), for nginx and iris_http only (axum and
# actix-web are measured over HTTP/1.1 only in this script).
#
#   bash examples/iris/scripts/http_compare.sh                 # from anywhere in the repository
#   DURATION=3 ROUNDS=1 bash examples/iris/scripts/http_compare.sh       # a quick look
#   SERVERS="nginx iris_np" CONNS="1 64" bash examples/iris/scripts/http_compare.sh
#   PROTOCOLS="h1 h2c h2" bash examples/iris/scripts/http_compare.sh    # HTTP/1.1 and HTTP/2
#   IRIS_BIN=/path/to/iris_http SERVERS="nginx iris" PROTOCOLS="h2c h2" bash examples/iris/scripts/http_compare.sh
#
# Environment: DURATION seconds per wrk or h2load run (10), ROUNDS interleaved rounds (3), CONNS
# the connection counts for the 1 KiB file (1 64 1000), BIG_CONNS those for the 1 MiB file (64),
# SERVERS a subset of "nginx iris_np iris axum actix", BASE_PORT (18200: eleven ports from it),
# BASELINE_IRIS an older iris_http binary to run too, as `iris_base` (--no-predicates), to
# compare a change with the code before it in the same interleaved run. PROTOCOLS a subset of
# "h1 h2c h2" (h1: only the wrk rows, as before): h2c and h2 add the rows of H2_TESTS, each
# PROTOCOL:FILE:CONNECTIONS:STREAMS ("h2c:1k.bin:1:1 h2c:1k.bin:64:10 h2:1k.bin:64:10
# h2:1k.bin:1000:1 h2:1m.bin:16:1"), those of the protocols asked for. IRIS_BIN an iris_http
# binary to run instead of building one (no cargo build); axum and actix-web are built only
# when SERVERS names them.
#
# Every server gets 2 workers: nginx `worker_processes 2` (sendfile, tcp_nopush, tcp_nodelay,
# access_log off, keepalive_requests raised so that every server keeps its connections),
# axum and actix-web 2 worker threads with TCP_NODELAY, iris_http its iris.toml and
# `--work-us 0` (no simulated handler work: the others do none) (`iris_np` is
# `--no-predicates`, `iris` the configuration as shipped, with admission control, which sheds
# only when a group misses its response-time target: its non-2xx answers are counted). wrk runs on the same
# machine (-t2, one thread for one connection). RSS is read from /proc/PID/status (VmRSS)
# halfway through the 1,000-connection run, summed over nginx's master and workers. Context
# switches per request are the server's (all its threads, nginx's workers) during each wrk run,
# divided by the requests wrk completed: a request that crosses threads costs wake-ups. CPU
# time per request is the server's user and system time during the run (/proc/PID/stat, in
# clock ticks of 1/CLK_TCK s) over the same requests.
#
# HTTP/2: `h2load -t2 -c C -m M -D DURATION --warm-up-time 1 --npn-list=h2` (-t1 for one
# connection; over TLS only h2 offered, and checked), M streams in flight on each connection. nginx 1.22 serves h2c on a port of its own (`listen
# ... http2`, HTTP/2 only, by prior knowledge) and h2 on another (`listen ... ssl http2`), both
# with `http2_max_concurrent_streams 128`, in the same processes as its HTTP/1.1 port; the h2c
# one with sendfile off (with it, nginx's h2c waits for delayed ACKs: 23 requests/s on one
# connection; TLS does not use sendfile). iris_http serves h2c on its plain port (prior
# knowledge, beside HTTP/1.1) and h2 from a second instance of the same variant with
# --tls-cert/--tls-key, whose CPU, switches and RSS the h2 rows count. The certificate is a
# self-signed P-256 one made with openssl. h2load's figures are of the DURATION after its
# warm-up second (connections, TLS handshakes), and so are the server's CPU and switches (RSS:
# halfway through that DURATION). h2load prints no percentiles: p99 comes from its --log-file
# (a line for each request of the measured duration: start, status, microseconds; status -1
# for a failed stream), over the requests that got an answer. Non-2xx is from its `status
# codes:` line; streams that failed without an answer (`failed` less the non-2xx ones;
# `errored`, `timeout`) are printed after the run. iris_base gets h2 rows only if its binary
# answers HTTP/2.
set -euo pipefail
# IRIS_BIN as given, relative to the directory the script was started from.
IRIS_BIN=${IRIS_BIN:-}
case $IRIS_BIN in "" | /*) ;; *) IRIS_BIN="$PWD/$IRIS_BIN" ;; esac
cd "$(dirname "$0")/../../.."
REPO=$(pwd)

DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-"1 64 1000"}
BIG_CONNS=${BIG_CONNS:-"64"}
SERVERS=${SERVERS:-"nginx iris_np iris axum actix"}
PROTOCOLS=${PROTOCOLS:-h1}
H2_TESTS=${H2_TESTS:-"h2c:1k.bin:1:1 h2c:1k.bin:64:10 h2:1k.bin:64:10 h2:1k.bin:1000:1 h2:1m.bin:16:1"}
BASELINE_IRIS=${BASELINE_IRIS:-}
if [ -n "$BASELINE_IRIS" ]; then
    [ -x "$BASELINE_IRIS" ] || { echo "error: BASELINE_IRIS=$BASELINE_IRIS is not an executable" >&2; exit 2; }
    SERVERS="$SERVERS iris_base"
fi
if [ -n "$IRIS_BIN" ] && ! [ -x "$IRIS_BIN" ]; then
    echo "error: IRIS_BIN=$IRIS_BIN is not an executable" >&2; exit 2
fi
BASE_PORT=${BASE_PORT:-18200}

for p in $PROTOCOLS; do
    case $p in h1 | h2c | h2) ;; *) echo "error: PROTOCOLS: unknown protocol $p (h1 h2c h2)" >&2; exit 2 ;; esac
done
wants() { [[ " $PROTOCOLS " == *" $1 "* ]]; }
selected() { [[ " $SERVERS " == *" $1 "* ]]; }
H2=""
if wants h2c || wants h2; then H2=yes; fi

# shellcheck source-path=SCRIPTDIR source=debian.sh disable=SC1091 # followed with -x
. examples/iris/scripts/debian.sh
# nginx lives in /usr/sbin, which a user's PATH may lack.
[ -x /usr/sbin/nginx ] || debian_install nginx
if wants h1; then debian_install wrk; fi
if [ -n "$H2" ]; then debian_install h2load=nghttp2-client openssl; fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# 1,000 connections on each side of loopback need descriptors.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 65536 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 4096 ]; then
    echo "warning: ulimit -n is $(ulimit -n); 1,000 connections may fail" >&2
fi

IRIS=""
if [ -n "$IRIS_BIN" ]; then
    IRIS=$IRIS_BIN
    echo "iris_http: $IRIS (IRIS_BIN, not built)"
elif selected iris_np || selected iris; then
    echo "building iris_http (release)"
    cargo build --release -q -p iris --bin iris_http
    IRIS="${CARGO_TARGET_DIR:-$REPO/target}/release/iris_http"
fi
HC_TARGET="${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/http-compare}"
HC_TARGET="${HC_TARGET:-$REPO/http-compare/target}"
if selected axum || selected actix; then
    echo "building http-compare (release)"
    CARGO_TARGET_DIR="$HC_TARGET" cargo build --release -q --manifest-path http-compare/Cargo.toml
fi
AXUM="$HC_TARGET/release/axum_files"
ACTIX="$HC_TARGET/release/actix_files"

TMP=$(mktemp -d /tmp/http_compare.XXXXXX)
ROOT="$TMP/root"
mkdir -p "$ROOT" "$TMP/nginx/tmp" "$TMP/results" "$TMP/logs"
head -c 1024 /dev/urandom >"$ROOT/1k.bin"
head -c 1048576 /dev/urandom >"$ROOT/1m.bin"

# The servers' ports, and from BASE_PORT+6 the HTTP/2 ones: nginx's h2c and h2 (TLS) ports,
# and the TLS instances of the iris_http variants (`_tls`).
declare -A PORT PID
i=0
for s in nginx iris_np iris axum actix iris_base nginx_h2c nginx_h2 iris_np_tls iris_tls iris_base_tls; do
    PORT[$s]=$((BASE_PORT + i)); i=$((i + 1))
done

cleanup() {
    for s in "${!PID[@]}"; do
        kill -TERM "${PID[$s]}" 2>/dev/null || true
    done
    for s in "${!PID[@]}"; do
        wait "${PID[$s]}" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# HTTP/2 over TLS: a self-signed certificate for nginx and iris_http, and nginx's h2c and h2
# server blocks (nginx 1.22 syntax: `http2` on the listen line).
h2_servers=""
if [ -n "$H2" ]; then
    mkdir -p "$TMP/tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$TMP/tls/key.pem" -out "$TMP/tls/cert.pem" -subj /CN=localhost -days 30 2>/dev/null
    h2_servers="
    server {
        listen 127.0.0.1:${PORT[nginx_h2c]} http2;
        http2_max_concurrent_streams 128;
        # With sendfile, nginx 1.22's h2c waits for delayed ACKs: 23 requests/s on one
        # connection with one stream (TLS does not use sendfile).
        sendfile off;
        location /files/ { alias $ROOT/; }
    }
    server {
        listen 127.0.0.1:${PORT[nginx_h2]} ssl http2;
        ssl_certificate $TMP/tls/cert.pem;
        ssl_certificate_key $TMP/tls/key.pem;
        http2_max_concurrent_streams 128;
        location /files/ { alias $ROOT/; }
    }"
fi

user_line=""
if [ "$(id -u)" -eq 0 ]; then user_line="user $(id -un) $(id -gn);"; fi
cat >"$TMP/nginx/nginx.conf" <<EOF
$user_line
worker_processes 2;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 100000000;
    default_type application/octet-stream;
    client_body_temp_path $TMP/nginx/tmp/body;
    proxy_temp_path $TMP/nginx/tmp/proxy;
    fastcgi_temp_path $TMP/nginx/tmp/fastcgi;
    uwsgi_temp_path $TMP/nginx/tmp/uwsgi;
    scgi_temp_path $TMP/nginx/tmp/scgi;
    server {
        listen 127.0.0.1:${PORT[nginx]};
        location /files/ { alias $ROOT/; }
    }$h2_servers
}
EOF

# Answers `GET /files/1k.bin` with 200, or fails.
check_200() {
    local port=$1 status=""
    exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
    printf 'GET /files/1k.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3
    read -r -t 5 _ status _ <&3 || true
    exec 3<&- 3>&-
    [ "$status" = 200 ]
}

# Accepts connections on its port (the TLS instances: HTTP/2 is checked later).
check_listening() {
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    exec 3<&- 3>&-
}

start() {
    local s=$1 port=${PORT[$1]} log="$TMP/logs/$1.log" check=check_200
    local tls=(--tls-cert "$TMP/tls/cert.pem" --tls-key "$TMP/tls/key.pem")
    case $s in
        nginx) "$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" >"$log" 2>&1 & ;;
        iris_np) "$IRIS" --port "$port" --root "$ROOT" --work-us 0 --no-predicates >"$log" 2>&1 & ;;
        iris) "$IRIS" --port "$port" --root "$ROOT" --work-us 0 >"$log" 2>&1 & ;;
        iris_base) "$BASELINE_IRIS" --port "$port" --root "$ROOT" --work-us 0 --no-predicates >"$log" 2>&1 & ;;
        iris_np_tls) "$IRIS" --port "$port" --root "$ROOT" --work-us 0 --no-predicates "${tls[@]}" >"$log" 2>&1 & ;;
        iris_tls) "$IRIS" --port "$port" --root "$ROOT" --work-us 0 "${tls[@]}" >"$log" 2>&1 & ;;
        iris_base_tls) "$BASELINE_IRIS" --port "$port" --root "$ROOT" --work-us 0 --no-predicates "${tls[@]}" >"$log" 2>&1 & ;;
        axum) "$AXUM" "$port" "$ROOT" >"$log" 2>&1 & ;;
        actix) "$ACTIX" "$port" "$ROOT" >"$log" 2>&1 & ;;
        *) echo "unknown server $s" >&2; exit 2 ;;
    esac
    PID[$s]=$!
    [[ $s == *_tls ]] && check=check_listening
    for _ in $(seq 100); do
        if "$check" "$port" 2>/dev/null; then return 0; fi
        if ! kill -0 "${PID[$s]}" 2>/dev/null; then break; fi
        sleep 0.1
    done
    if [ "$check" = check_200 ]; then
        echo "error: $s did not start (or did not answer GET /files/1k.bin with 200) on port $port:" >&2
    else
        echo "error: $s did not start (or did not listen) on port $port:" >&2
    fi
    cat "$log" >&2
    [ "$s" = nginx ] && cat "$TMP/nginx/error.log" >&2 2>/dev/null
    exit 1
}

# The process (the key of PID and of the logs) that serves server $1 over protocol $2: nginx
# serves every protocol itself, an iris_http variant h2 from its TLS instance.
instance() {
    case $2:$1 in
        h2:nginx) echo nginx ;;
        h2:*) echo "${1}_tls" ;;
        *) echo "$1" ;;
    esac
}

# The URL of file $3 on server $1 over protocol $2.
url() {
    case $2:$1 in
        h2c:nginx) echo "http://127.0.0.1:${PORT[nginx_h2c]}/files/$3" ;;
        h2:nginx) echo "https://127.0.0.1:${PORT[nginx_h2]}/files/$3" ;;
        h2:*) echo "https://127.0.0.1:${PORT[${1}_tls]}/files/$3" ;;
        *) echo "http://127.0.0.1:${PORT[$1]}/files/$3" ;;
    esac
}

# Resident memory of server $1, kB: the process, and for nginx its workers too.
rss_kb() {
    local pid=${PID[$1]} total=0 p kb
    for p in $pid $(pgrep -P "$pid" || true); do
        kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
        total=$((total + ${kb:-0}))
    done
    echo "$total"
}

# Context switches (voluntary and not) of server $1 so far: every thread of the process, and
# for nginx of its workers too.
switches() {
    local pid=${PID[$1]} p
    for p in $pid $(pgrep -P "$pid" || true); do
        cat /proc/"$p"/task/*/status 2>/dev/null || true
    done | awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ {n += $2} END {print n + 0}'
}

# CPU time (user and system) server $1 has used so far, in clock ticks: the process (all its
# threads), and for nginx its workers too.
cpu_ticks() {
    local pid=${PID[$1]} p
    for p in $pid $(pgrep -P "$pid" || true); do
        # Fields 14 and 15 of /proc/PID/stat, counted after the command name's closing paren.
        sed 's/.*) //' /proc/"$p"/stat 2>/dev/null || true
    done | awk '{n += $12 + $13} END {print n + 0}'
}
TICKS_PER_SECOND=$(getconf CLK_TCK)

# wrk's latency (`123.45us`, `1.20ms`, `2.00s`) in ms.
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /m$/) n *= 60000; else if (v ~ /s$/) n *= 1000
        printf "%.3f", n }'
}

# The 99th percentile (nearest rank), ms, of the response times in h2load's log $1 (start,
# status, microseconds), over the requests that got an answer (status -1: a failed stream).
h2load_p99() {
    awk -F'\t' '$2 >= 0 {print $3}' "$1" | sort -n | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "0.000"; exit }
            i = int(NR * 0.99); if (i < NR * 0.99) i++; if (i < 1) i = 1
            printf "%.3f", v[i] / 1000
        }'
}

# The tests: PROTOCOL:FILE:CONNECTIONS:STREAMS (STREAMS only for HTTP/2).
tests=()
if wants h1; then
    for c in $CONNS; do tests+=("h1:1k.bin:$c:1"); done
    for c in $BIG_CONNS; do tests+=("h1:1m.bin:$c:1"); done
fi
for t in $H2_TESTS; do
    if wants "${t%%:*}"; then tests+=("$t"); fi
done

# A test's label in the tables.
label() {
    local proto file c m
    IFS=: read -r proto file c m <<<"$1"
    case $proto in
        h1) echo "$file c=$c" ;;
        h2) if [ "$c" = 64 ] && [ "$m" = 10 ]; then echo "$file h2 (TLS) c=$c m=$m"; else echo "$file h2 c=$c m=$m"; fi ;;
        *) echo "$file $proto c=$c m=$m" ;;
    esac
}
# The widths of the tables' first column and of the test in the lines of the runs: as before for
# HTTP/1.1 alone, wider for the h2 labels.
NW=9
if [ -n "$H2" ]; then NW=20; fi
W=22
if [ -n "$H2" ]; then W=34; fi

# One wrk or h2load run: server $1, test $2, round $3. Appends
# `req/s p99_ms non2xx_fraction rss_kb switches_per_request cpu_us_per_request` to the results
# file of server and test.
run() {
    local s=$1 test=$2 round=$3 proto file c m
    IFS=: read -r proto file c m <<<"$test"
    local p threads=2 out rss=0 rss_pid="" url
    p=$(instance "$s" "$proto")
    url=$(url "$s" "$proto" "$file")
    [ "$c" -lt 2 ] && threads=1
    # h2load's figures and log are of the DURATION after its warm-up second (connections, TLS
    # handshakes): the server's CPU and switches are read from then on too.
    local warm_up=0
    [ "$proto" = h1 ] || warm_up=1
    if [ "$c" -ge 1000 ]; then
        (sleep "$(awk -v d="$DURATION" -v w="$warm_up" 'BEGIN {print w + d / 2}')"; rss_kb "$p" >"$TMP/rss") &
        rss_pid=$!
    fi
    local before ticks_before
    if [ "$proto" = h1 ]; then
        before=$(switches "$p")
        ticks_before=$(cpu_ticks "$p")
        out=$(wrk -t"$threads" -c"$c" -d"${DURATION}s" --latency "$url" 2>&1) || {
            echo "error: wrk failed against $s:" >&2; echo "$out" >&2; exit 1; }
    else
        rm -f "$TMP/h2load.log"
        h2load -t"$threads" -c"$c" -m"$m" -D"$DURATION" --warm-up-time "$warm_up" --npn-list=h2 \
            --log-file "$TMP/h2load.log" "$url" >"$TMP/h2load.out" 2>&1 &
        local h2load_pid=$!
        sleep "$warm_up"
        before=$(switches "$p")
        ticks_before=$(cpu_ticks "$p")
        wait "$h2load_pid" || {
            echo "error: h2load failed against $s ($url):" >&2; cat "$TMP/h2load.out" >&2; exit 1; }
        out=$(cat "$TMP/h2load.out")
    fi
    if [ -n "$rss_pid" ]; then wait "$rss_pid"; rss=$(cat "$TMP/rss"); fi
    if ! kill -0 "${PID[$p]}" 2>/dev/null; then
        echo "error: $p exited during $test:" >&2; cat "$TMP/logs/$p.log" >&2; exit 1
    fi
    local reqs total non2xx p99 errors
    if [ "$proto" = h1 ]; then
        reqs=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
        total=$(awk '/requests in/ {print $1}' <<<"$out")
        non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
        errors=$(grep -E "Socket errors" <<<"$out" || true)
        p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
        [ -n "$reqs" ] || { echo "error: no Requests/sec from wrk against $s:" >&2; echo "$out" >&2; exit 1; }
    else
        # finished in 3.00s, 12345.67 req/s, 12.06MB/s
        # requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout
        # status codes: N 2xx, N 3xx, N 4xx, N 5xx
        # (`failed` counts the non-2xx answers and the streams without an answer, `errored`.)
        reqs=$(awk '/^finished in/ {print $4}' <<<"$out")
        total=$(awk '/^requests:/ {print $6}' <<<"$out")
        non2xx=$(awk '/^status codes:/ {print $5 + $7 + $9}' <<<"$out")
        errors=$(awk -v n="${non2xx:-0}" '/^requests:/ && ($10 > n || $12 > 0 || $14 > 0) {
            printf "h2load: %d failed without an answer, %d errored, %d timeout", $10 - n, $12, $14 }' <<<"$out")
        if [ -z "$reqs" ] || [ -z "$total" ] || [ ! -s "$TMP/h2load.log" ] ||
            ! grep -qx "Application protocol: $proto" <<<"$out"; then
            echo "error: no req/s (or no requests, or not $proto) from h2load against $s ($url):" >&2
            echo "$out" >&2; exit 1
        fi
        p99=$(h2load_p99 "$TMP/h2load.log")
    fi
    local frac
    frac=$(awk -v n="${non2xx:-0}" -v t="${total:-1}" 'BEGIN {printf "%.4f", (t > 0 ? n / t : 0)}')
    local per_request
    per_request=$(awk -v a="$before" -v b="$(switches "$p")" -v t="${total:-0}" \
        'BEGIN {printf "%.3f", (t > 0 ? (b - a) / t : 0)}')
    local cpu_us
    cpu_us=$(awk -v a="$ticks_before" -v b="$(cpu_ticks "$p")" -v t="${total:-0}" -v hz="$TICKS_PER_SECOND" \
        'BEGIN {printf "%.2f", (t > 0 ? (b - a) * 1e6 / hz / t : 0)}')
    echo "$reqs $p99 $frac $rss $per_request $cpu_us" >>"$TMP/results/$s.$test"
    local name="$file:$c"
    [ "$proto" = h1 ] || name="$proto:$file:c$c:m$m"
    printf "  round %d  %-8s %-${NW}s %10.0f req/s  p99 %8.2f ms%s%s\n" "$round" "$s" "$name" "$reqs" "$p99" \
        "$( [ "${non2xx:-0}" != 0 ] && echo "  non-2xx ${non2xx}/${total}" )" \
        "$( [ -n "$errors" ] && echo "  (${errors#"${errors%%[! ]*}"})" )"
}

read -r -a servers <<<"$SERVERS"
for s in "${servers[@]}"; do start "$s"; done
# The TLS instances of the iris_http variants, for the h2 rows.
if wants h2; then
    for s in iris_np iris iris_base; do
        if selected "$s"; then start "${s}_tls"; fi
    done
fi
up="$(for s in "${servers[@]}"; do printf '%s:%s ' "$s" "${PORT[$s]}"; done)"
if [ -n "$H2" ] && selected nginx; then up+="nginx_h2c:${PORT[nginx_h2c]} nginx_h2:${PORT[nginx_h2]} "; fi
for s in iris_np_tls iris_tls iris_base_tls; do
    if [ -n "${PID[$s]:-}" ]; then up+="$s:${PORT[$s]} "; fi
done
echo "servers up: $up"

# The servers of each protocol: all of them for HTTP/1.1; for HTTP/2, nginx and the iris_http
# variants, each checked with one request (iris_base is left out if it does not answer).
declare -A PSERVERS
PSERVERS[h1]="${servers[*]}"
for proto in h2c h2; do
    wants "$proto" || continue
    PSERVERS[$proto]=""
    for s in "${servers[@]}"; do
        case $s in nginx | iris_np | iris | iris_base) ;; *) continue ;; esac
        u=$(url "$s" "$proto" 1k.bin)
        # Only h2 offered over TLS: h2load's default list ends with http/1.1.
        out=$(h2load -n1 -c1 -t1 --npn-list=h2 "$u" 2>&1 || true)
        if grep -qx "Application protocol: $proto" <<<"$out" &&
            grep -q '^requests: 1 total, 1 started, 1 done, 1 succeeded' <<<"$out" &&
            grep -q '^status codes: 1 2xx' <<<"$out"; then
            PSERVERS[$proto]+="${PSERVERS[$proto]:+ }$s"
        elif [ "$s" = iris_base ]; then
            echo "warning: iris_base does not answer $proto at $u: no $proto rows for it" >&2
        else
            echo "error: $s does not answer $proto (GET $u with h2load):" >&2
            echo "$out" >&2
            exit 1
        fi
    done
done

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
    for ti in "${!tests[@]}"; do
        read -r -a tservers <<<"${PSERVERS[${tests[$ti]%%:*}]}"
        n=${#tservers[@]}
        # A different order each round (and each test): rotate by round and test.
        for k in $(seq 0 $((n - 1))); do
            run "${tservers[$(( (k + round + ti) % n ))]}" "${tests[$ti]}" "$round"
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Median (min-max) of column $2 of file $1, scaled by $3.
stat() {
    awk -v col="$2" -v scale="${3:-1}" '{print $col * scale}' "$1" | sort -g | awk '
        { v[NR] = $1 }
        END {
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.0f %.0f %.0f\n", m, v[1], v[NR]
        }'
}
median() { stat "$@" | cut -d' ' -f1; }
# Median (min-max), or `-` for a server without that test (axum and actix have no h2 rows).
cell() {
    local m lo hi
    if [ ! -s "$1" ]; then printf -- '-'; return; fi
    read -r m lo hi < <(stat "$@"); printf '%s (%s-%s)' "$m" "$lo" "$hi"
}

# A row labelled $1 for test $2: for every server, the middle value over the rounds (the lower
# of the two middle ones for an even count) of the awk expression $3 of its results' columns,
# printed with format $4 (`-` for a server without that test).
middle_row() {
    local label=$1 t=$2 expr=$3 format=$4 s
    printf "%-${W}s" "$label"
    for s in "${servers[@]}"; do
        if [ ! -s "$TMP/results/$s.$t" ]; then printf '%-26s' -; continue; fi
        printf '%-26s' "$(awk "{print $expr}" "$TMP/results/$s.$t" | sort -g |
            awk -v f="$format" '{v[NR]=$1} END {printf f, v[int((NR+1)/2)]}')"
    done
    echo
}

echo
if wants h1; then
    echo "## medians (min-max) of $ROUNDS round(s) of ${DURATION}s; wrk -t2 keep-alive; $(nproc) cores"
else
    echo "## medians (min-max) of $ROUNDS round(s) of ${DURATION}s; $(nproc) cores"
fi
if [ -n "$H2" ]; then
    echo "## h2c/h2 rows: h2load -t2 -c C -m M (-t1 for c=1) --warm-up-time 1; h2c by prior knowledge, h2 over TLS (ALPN h2 only);"
    echo "## nginx 1.22 \`listen ... http2\` (h2c port, sendfile off), \`listen ... ssl http2\` (h2 port), http2_max_concurrent_streams 128;"
    echo "## iris_http: h2c on its plain port, h2 from a --tls-cert/--tls-key instance; axum, actix: HTTP/1.1 only (-)"
fi
printf "%-${W}s" "test"
for s in "${servers[@]}"; do printf '%-26s' "$s"; done
echo
# shellcheck disable=SC2016 # awk expressions, for awk to expand
for t in "${tests[@]}"; do
    IFS=: read -r _ file c _ <<<"$t"
    lab=$(label "$t")
    printf "%-${W}s" "$lab req/s"
    for s in "${servers[@]}"; do printf '%-26s' "$(cell "$TMP/results/$s.$t" 1)"; done
    echo
    if [ "$file" = 1m.bin ]; then
        printf "%-${W}s" "$lab MB/s"
        for s in "${servers[@]}"; do printf '%-26s' "$(cell "$TMP/results/$s.$t" 1 1.048576)"; done
        echo
    fi
    middle_row "  p99 ms" "$t" '$2' "%.2f"
    middle_row "  non-2xx" "$t" '$3 * 100' "%.2f%%"
    middle_row "  CPU us/request" "$t" '$6' "%.2f"
    middle_row "  switches/request" "$t" '$5' "%.2f"
    if [ "$c" -ge 1000 ]; then
        printf "%-${W}s" "  RSS MB"
        for s in "${servers[@]}"; do printf '%-26s' "$(cell "$TMP/results/$s.$t" 4 0.001024)"; done
        echo
    fi
done

has() { [[ " ${servers[*]} " == *" $1 "* ]]; }
echo
echo "## ratios of medians (req/s; >1 means iris_http is faster)"
for iris in iris_np iris; do
    has "$iris" || continue
    # `iris_base` runs --no-predicates: compared with `iris_np` only.
    others="nginx axum actix"
    [ "$iris" = iris_np ] && others="$others iris_base"
    printf "%-${W}s" "test"
    for other in $others; do has "$other" && printf '%-18s' "$iris/$other"; done
    echo
    for t in "${tests[@]}"; do
        printf "%-${W}s" "$(label "$t")"
        for other in $others; do
            has "$other" || continue
            if [ ! -s "$TMP/results/$iris.$t" ] || [ ! -s "$TMP/results/$other.$t" ]; then
                printf '%-18s' -; continue
            fi
            mi=$(median "$TMP/results/$iris.$t" 1)
            mo=$(median "$TMP/results/$other.$t" 1)
            printf '%-18s' "$(awk -v a="$mi" -v b="$mo" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
        done
        echo
    done
done
