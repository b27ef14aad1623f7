#!/usr/bin/env bash
# iris_http against nginx (Debian), axum + tower-http ServeDir and actix-web + actix-files
# (http-compare/), serving a 1 KiB and a 1 MiB file: wrk with keep-alive, interleaved rounds
# (the servers in a different order each round), medians (min-max) and the ratios of
# iris_http to each of the others.
#
#   bash examples/iris/scripts/http_compare.sh                 # from anywhere in the repository
#   DURATION=3 ROUNDS=1 bash examples/iris/scripts/http_compare.sh       # a quick look
#   SERVERS="nginx iris_np" CONNS="1 64" bash examples/iris/scripts/http_compare.sh
#
# Environment: DURATION seconds per wrk run (10), ROUNDS interleaved rounds (3), CONNS the
# connection counts for the 1 KiB file (1 64 1000), BIG_CONNS those for the 1 MiB file (64),
# SERVERS a subset of "nginx iris_np iris axum actix", BASE_PORT (18200: six ports from it),
# BASELINE_IRIS an older iris_http binary to run too, as `iris_base` (--no-predicates), to
# compare a change with the code before it in the same interleaved run.
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
set -euo pipefail
cd "$(dirname "$0")/../../.."
REPO=$(pwd)

DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-"1 64 1000"}
BIG_CONNS=${BIG_CONNS:-"64"}
SERVERS=${SERVERS:-"nginx iris_np iris axum actix"}
BASELINE_IRIS=${BASELINE_IRIS:-}
if [ -n "$BASELINE_IRIS" ]; then
    [ -x "$BASELINE_IRIS" ] || { echo "error: BASELINE_IRIS=$BASELINE_IRIS is not an executable" >&2; exit 2; }
    SERVERS="$SERVERS iris_base"
fi
BASE_PORT=${BASE_PORT:-18200}

. examples/iris/scripts/debian.sh
# nginx lives in /usr/sbin, which a user's PATH may lack.
[ -x /usr/sbin/nginx ] || debian_install nginx
debian_install wrk
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# 1,000 connections on each side of loopback need descriptors.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 65536 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 4096 ]; then
    echo "warning: ulimit -n is $(ulimit -n); 1,000 connections may fail" >&2
fi

echo "building iris_http and http-compare (release)"
cargo build --release -q -p iris --bin iris_http
IRIS="${CARGO_TARGET_DIR:-$REPO/target}/release/iris_http"
HC_TARGET="${CARGO_TARGET_DIR:+$CARGO_TARGET_DIR/http-compare}"
HC_TARGET="${HC_TARGET:-$REPO/http-compare/target}"
CARGO_TARGET_DIR="$HC_TARGET" cargo build --release -q --manifest-path http-compare/Cargo.toml
AXUM="$HC_TARGET/release/axum_files"
ACTIX="$HC_TARGET/release/actix_files"

TMP=$(mktemp -d /tmp/http_compare.XXXXXX)
ROOT="$TMP/root"
mkdir -p "$ROOT" "$TMP/nginx/tmp" "$TMP/results" "$TMP/logs"
head -c 1024 /dev/urandom >"$ROOT/1k.bin"
head -c 1048576 /dev/urandom >"$ROOT/1m.bin"

declare -A PORT PID
i=0
for s in nginx iris_np iris axum actix iris_base; do PORT[$s]=$((BASE_PORT + i)); i=$((i + 1)); done

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
    }
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

start() {
    local s=$1 port=${PORT[$1]} log="$TMP/logs/$1.log"
    case $s in
        nginx) "$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" >"$log" 2>&1 & ;;
        iris_np) "$IRIS" --port "$port" --root "$ROOT" --work-us 0 --no-predicates >"$log" 2>&1 & ;;
        iris) "$IRIS" --port "$port" --root "$ROOT" --work-us 0 >"$log" 2>&1 & ;;
        iris_base) "$BASELINE_IRIS" --port "$port" --root "$ROOT" --work-us 0 --no-predicates >"$log" 2>&1 & ;;
        axum) "$AXUM" "$port" "$ROOT" >"$log" 2>&1 & ;;
        actix) "$ACTIX" "$port" "$ROOT" >"$log" 2>&1 & ;;
        *) echo "unknown server $s" >&2; exit 2 ;;
    esac
    PID[$s]=$!
    for _ in $(seq 100); do
        if check_200 "$port" 2>/dev/null; then return 0; fi
        if ! kill -0 "${PID[$s]}" 2>/dev/null; then break; fi
        sleep 0.1
    done
    echo "error: $s did not start (or did not answer GET /files/1k.bin with 200) on port $port:" >&2
    cat "$log" >&2
    [ "$s" = nginx ] && cat "$TMP/nginx/error.log" >&2 2>/dev/null
    exit 1
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

# One wrk run: server $1, test $2 (file:connections), round $3. Appends
# `req/s p99_ms non2xx_fraction rss_kb` to the results file of server and test.
run() {
    local s=$1 test=$2 round=$3 file=${2%%:*} c=${2##*:}
    local threads=2 out rss=0 rss_pid=""
    [ "$c" -lt 2 ] && threads=1
    local url="http://127.0.0.1:${PORT[$s]}/files/$file"
    if [ "$c" -ge 1000 ]; then
        (sleep "$(awk -v d="$DURATION" 'BEGIN {print d / 2}')"; rss_kb "$s" >"$TMP/rss") &
        rss_pid=$!
    fi
    local before ticks_before
    before=$(switches "$s")
    ticks_before=$(cpu_ticks "$s")
    out=$(wrk -t"$threads" -c"$c" -d"${DURATION}s" --latency "$url" 2>&1) || {
        echo "error: wrk failed against $s:" >&2; echo "$out" >&2; exit 1; }
    if [ -n "$rss_pid" ]; then wait "$rss_pid"; rss=$(cat "$TMP/rss"); fi
    if ! kill -0 "${PID[$s]}" 2>/dev/null; then
        echo "error: $s exited during $test:" >&2; cat "$TMP/logs/$s.log" >&2; exit 1
    fi
    local reqs total non2xx p99 errors
    reqs=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    total=$(awk '/requests in/ {print $1}' <<<"$out")
    non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
    errors=$(grep -E "Socket errors" <<<"$out" || true)
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
    [ -n "$reqs" ] || { echo "error: no Requests/sec from wrk against $s:" >&2; echo "$out" >&2; exit 1; }
    local frac
    frac=$(awk -v n="${non2xx:-0}" -v t="${total:-1}" 'BEGIN {printf "%.4f", (t > 0 ? n / t : 0)}')
    local per_request
    per_request=$(awk -v a="$before" -v b="$(switches "$s")" -v t="${total:-0}" \
        'BEGIN {printf "%.3f", (t > 0 ? (b - a) / t : 0)}')
    local cpu_us
    cpu_us=$(awk -v a="$ticks_before" -v b="$(cpu_ticks "$s")" -v t="${total:-0}" -v hz="$TICKS_PER_SECOND" \
        'BEGIN {printf "%.2f", (t > 0 ? (b - a) * 1e6 / hz / t : 0)}')
    echo "$reqs $p99 $frac $rss $per_request $cpu_us" >>"$TMP/results/$s.$test"
    printf '  round %d  %-8s %-9s %10.0f req/s  p99 %8.2f ms%s%s\n' "$round" "$s" "$test" "$reqs" "$p99" \
        "$( [ "${non2xx:-0}" != 0 ] && echo "  non-2xx ${non2xx}/${total}" )" \
        "$( [ -n "$errors" ] && echo "  ($(echo "$errors" | sed 's/^ *//'))" )"
}

read -r -a servers <<<"$SERVERS"
for s in "${servers[@]}"; do start "$s"; done
echo "servers up: $(for s in "${servers[@]}"; do printf '%s:%s ' "$s" "${PORT[$s]}"; done)"

tests=()
for c in $CONNS; do tests+=("1k.bin:$c"); done
for c in $BIG_CONNS; do tests+=("1m.bin:$c"); done

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
n=${#servers[@]}
for round in $(seq "$ROUNDS"); do
    for ti in "${!tests[@]}"; do
        # A different order each round (and each test): rotate by round and test.
        for k in $(seq 0 $((n - 1))); do
            run "${servers[$(( (k + round + ti) % n ))]}" "${tests[$ti]}" "$round"
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
cell() { local m lo hi; read -r m lo hi < <(stat "$@"); printf '%s (%s-%s)' "$m" "$lo" "$hi"; }

# A row labelled $1 for test $2: for every server, the middle value over the rounds (the lower
# of the two middle ones for an even count) of the awk expression $3 of its results' columns,
# printed with format $4.
middle_row() {
    local label=$1 t=$2 expr=$3 format=$4 s
    printf '%-22s' "$label"
    for s in "${servers[@]}"; do
        printf '%-26s' "$(awk "{print $expr}" "$TMP/results/$s.$t" | sort -g |
            awk -v f="$format" '{v[NR]=$1} END {printf f, v[int((NR+1)/2)]}')"
    done
    echo
}

echo
echo "## medians (min-max) of $ROUNDS round(s) of ${DURATION}s; wrk -t2 keep-alive; $(nproc) cores"
printf '%-22s' "test"
for s in "${servers[@]}"; do printf '%-26s' "$s"; done
echo
for t in "${tests[@]}"; do
    file=${t%%:*} c=${t##*:}
    printf '%-22s' "$file c=$c req/s"
    for s in "${servers[@]}"; do printf '%-26s' "$(cell "$TMP/results/$s.$t" 1)"; done
    echo
    if [ "$file" = 1m.bin ]; then
        printf '%-22s' "$file c=$c MB/s"
        for s in "${servers[@]}"; do printf '%-26s' "$(cell "$TMP/results/$s.$t" 1 1.048576)"; done
        echo
    fi
    middle_row "  p99 ms" "$t" '$2' "%.2f"
    middle_row "  non-2xx" "$t" '$3 * 100' "%.2f%%"
    middle_row "  CPU us/request" "$t" '$6' "%.2f"
    middle_row "  switches/request" "$t" '$5' "%.2f"
    if [ "$c" -ge 1000 ]; then
        printf '%-22s' "  RSS MB"
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
    printf '%-22s' "test"
    for other in $others; do has "$other" && printf '%-18s' "$iris/$other"; done
    echo
    for t in "${tests[@]}"; do
        printf '%-22s' "${t%%:*} c=${t##*:}"
        mi=$(median "$TMP/results/$iris.$t" 1)
        for other in $others; do
            has "$other" || continue
            mo=$(median "$TMP/results/$other.$t" 1)
            printf '%-18s' "$(awk -v a="$mi" -v b="$mo" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
        done
        echo
    done
done
