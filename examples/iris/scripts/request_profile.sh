#!/usr/bin/env bash
# Where iris_http's CPU goes per request, step by step: runs the server (no predicates, no
# simulated work) under wrk (1 KiB file, keep-alive), samples it with `perf record` (user and
# kernel, self time), and sorts every sampled function into a step of the request path by its
# name. Prints each step's share of the samples and its CPU per request (the share times the
# process's CPU time over the requests wrk completed while perf ran).
#
#   bash examples/iris/scripts/request_profile.sh                   # 64 connections, 10 s
#   CONNS=1 SECONDS_=5 bash examples/iris/scripts/request_profile.sh
#   IRIS_BIN=/path/to/iris_http bash examples/iris/scripts/request_profile.sh   # another build
#
# Needs perf (linux-perf) and wrk; perf must be allowed to sample the process
# (kernel.perf_event_paranoid <= 1, or root). Self time only: a step is the functions that
# run it, not what they call (malloc, the kernel and the runtime are steps of their own).
set -euo pipefail

CONNS=${CONNS:-64}
SECONDS_=${SECONDS_:-10}
PORT=${PORT:-18290}
ROOT_DIR=$(cd "$(dirname "$0")/../../.." && pwd)
IRIS=${IRIS_BIN:-$ROOT_DIR/target/release/iris_http}
WORK=$(mktemp -d)
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT

for tool in perf wrk; do
    command -v "$tool" >/dev/null || { echo "request_profile: $tool is not installed" >&2; exit 2; }
done
if [[ -z ${IRIS_BIN:-} ]]; then
    (cd "$ROOT_DIR" && cargo build --release -q -p iris --bin iris_http)
fi
mkdir -p "$WORK/root"
head -c 1024 /dev/urandom >"$WORK/root/1k.bin"

"$IRIS" --port "$PORT" --root "$WORK/root" --work-us 0 --no-predicates >"$WORK/iris.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/files/1k.bin" && break
    sleep 0.1
done

URL="http://127.0.0.1:$PORT/files/1k.bin"
# Warm up, then measure: wrk runs two seconds longer than perf, on both sides.
wrk -t2 -c"$CONNS" -d2s "$URL" >/dev/null
ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
wrk -t2 -c"$CONNS" -d"$((SECONDS_ + 2))s" "$URL" >"$WORK/wrk.txt" &
WRK=$!
sleep 1
cpu_before=$(ticks)
perf record -q -F 1999 -p "$SERVER" -o "$WORK/perf.data" -- sleep "$SECONDS_" 2>/dev/null
cpu_after=$(ticks)
wait "$WRK"
rate=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.txt")
hz=$(getconf CLK_TCK)

perf report -i "$WORK/perf.data" --no-children --sort sym -g none --percent-limit 0 2>/dev/null |
    grep -v '^#' | grep -v '^$' >"$WORK/symbols.txt"

python3 - "$WORK/symbols.txt" "$rate" "$cpu_before" "$cpu_after" "$hz" "$SECONDS_" "$CONNS" <<'EOF'
import re, sys
path, rate, before, after, hz, secs, conns = sys.argv[1:]
rate, hz, secs = float(rate), float(hz), float(secs)
cpu_s = (int(after) - int(before)) / hz
us_per_req = cpu_s / (rate * secs) * 1e6

# First match wins: the steps of the path, then what they share.
STEPS = [
    ("kernel: TCP send (and loopback delivery to wrk)", r"\[k\].*(tcp_|ip_|__dev_queue|skb|sock_|inet_|netif|napi|net_rx|__sys_send|_copy_from|sendmsg|loopback|nf_|__tcp|dst_|raw_spin_unlock_irqrestore)"),
    ("kernel: scheduler, futex, epoll, syscalls", r"\[k\].*(schedule|futex|epoll|ep_|switch|syscall|entry_|irqentry|exit_to_user|do_sys|fdget|__x64|pick_|enqueue|dequeue|update_|ttwu|try_to_wake)"),
    ("kernel: file open/stat/read/close", r"\[k\].*(path_|link_path|d_lookup|lookup|open|filp|vfs_|statx|dput|file|ext4|generic_file|__d_|inode|mnt|fsnotify)"),
    ("kernel: other", r"\[k\]"),
    ("allocator (malloc, free, Vec growth)", r"(malloc|_int_free|cfree|realloc|_int_realloc|unlink_chunk|consolidate|tcache|free@|__libc_free|calloc|arena|\bmi_|_mi_|raw_vec|grow_one)"),
    ("memcpy/memset", r"(memmove|memcpy|memset|memcmp)"),
    ("libc syscall wrappers, clock, locks", r"(__send|__libc_recv|recv|read|__close|open|statx|fstat|clock_gettime|vdso|pthread|lll_lock|sched_yield|epoll_wait|write|__GI_)"),
    ("socket process (whirl net)", r"whirl_runtime::net::"),
    ("HTTP parse and response head (whirl-http, httparse)", r"whirl_http::|httparse|httpdate|unicase"),
    ("HTTP connection (iris)", r"iris_http::server::connection"),
    ("dispatcher (iris)", r"iris_http::server::dispatcher|iris_http::routes"),
    ("file handler (iris: path, validators, headers)", r"iris_http::server::handlers|mime_guess|Validators|std::path"),
    ("iris other", r"iris_http::"),
    ("runtime: post, mailbox, turn", r"whirl_runtime::process::"),
    # A worker's loop is inlined into its thread's entry point.
    ("runtime: workers, groups, queues", r"whirl_runtime::group::|crossbeam|whirl_runtime::io::|__rust_begin_short_backtrace"),
    ("statistics, metrics, time", r"whirl_runtime::control::|whirl_runtime::time::|hdrhistogram|prometheus_client|Timespec"),
    ("runtime: other", r"whirl_runtime::|whirl::"),
    ("formatting, strings", r"core::fmt|alloc::fmt|String|format"),
]
shares = {name: 0.0 for name, _ in STEPS}
shares["other"] = 0.0
for line in open(path):
    m = re.match(r"\s*([\d.]+)%\s+(.*)", line)
    if not m:
        continue
    pct, sym = float(m.group(1)), m.group(2)
    for name, pattern in STEPS:
        if re.search(pattern, sym):
            shares[name] += pct
            break
    else:
        shares["other"] += pct
total = sum(shares.values()) or 1.0
print(f"iris_http --no-predicates, 1 KiB, {conns} connections: {rate:.0f} requests/s, "
      f"{us_per_req:.2f} us of CPU per request ({cpu_s:.2f} s of CPU over {secs:.0f} s)")
print(f"{'step':<50} {'share':>7} {'us/request':>11}")
for name, share in sorted(shares.items(), key=lambda kv: -kv[1]):
    if share < 0.05:
        continue
    print(f"{name:<50} {share / total * 100:6.1f}% {share / total * us_per_req:11.2f}")
EOF
