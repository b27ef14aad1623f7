#!/usr/bin/env python3
"""Where a server's slow answers fall, while another load generator keeps it busy.

Opens N keep-alive connections to PORT and, for SECONDS, sends `GET PATH` on each again as
soon as its answer (head and a body of BODY bytes) has arrived, timing every request. Prints
the percentiles, a histogram in 10 ms buckets, how evenly the connections were served, and,
for each 100 ms window, the count, median and maximum: slow answers spread over every
connection and every window point at the order in which the server runs its work; slow
answers in a few windows at a stall; on a few connections at a starved connection.

    wrk -t2 -c950 -d9s http://127.0.0.1:8080/files/1k.bin &
    sleep 2; python3 examples/iris/scripts/latency_probe.py 8080 50 5

Arguments: PORT N SECONDS [PATH (/files/1k.bin)] [BODY (1024)]. One thread, stdlib only: it
adds few requests to the load, and measures them from the outside.
"""

import collections
import selectors
import socket
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    path = sys.argv[4] if len(sys.argv) > 4 else "/files/1k.bin"
    body = int(sys.argv[5]) if len(sys.argv) > 5 else 1024
    request = f"GET {path} HTTP/1.1\r\nHost: probe\r\n\r\n".encode()

    selector = selectors.DefaultSelector()
    conns = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        conns.append(s)
        selector.register(s, selectors.EVENT_READ, i)
    pending = [b""] * n
    sent = [0.0] * n
    timed = []  # (sent, latency, connection), seconds
    start = time.monotonic()
    for i, s in enumerate(conns):
        sent[i] = time.monotonic()
        s.sendall(request)
    while time.monotonic() - start < seconds:
        for key, _ in selector.select(0.5):
            i, s = key.data, key.fileobj
            data = s.recv(65536)
            if not data:
                sys.exit(f"connection {i} closed by the server")
            pending[i] += data
            head = pending[i].find(b"\r\n\r\n")
            if head < 0 or len(pending[i]) < head + 4 + body:
                continue
            now = time.monotonic()
            timed.append((sent[i] - start, now - sent[i], i))
            pending[i] = pending[i][head + 4 + body:]
            sent[i] = now
            s.sendall(request)
    if not timed:
        sys.exit("no answer arrived")

    ms = sorted(t[1] * 1e3 for t in timed)
    pct = lambda p: ms[min(len(ms) - 1, len(ms) * p // 100)]
    print(f"{len(ms)} requests on {n} connections: p50 {pct(50):.1f} p90 {pct(90):.1f} "
          f"p99 {pct(99):.1f} max {ms[-1]:.1f} ms")
    buckets = collections.Counter(min(int(m) // 10, 30) for m in ms)
    print("histogram, 10 ms buckets (300: 300 ms or more): "
          + " ".join(f"{b * 10}:{buckets[b]}" for b in sorted(buckets)))
    per_conn = collections.Counter(t[2] for t in timed)
    counts = sorted(per_conn[i] for i in range(n))
    print(f"answers per connection: min {counts[0]} median {counts[n // 2]} max {counts[-1]}")
    windows = collections.defaultdict(list)
    for at, latency, _ in timed:
        windows[int(at * 10)].append(latency * 1e3)
    print("per 100 ms window, count/median/max ms:")
    print(" ".join(f"{len(w)}/{sorted(w)[len(w) // 2]:.0f}/{max(w):.0f}"
                   for _, w in sorted(windows.items())))
    slow = [t for t in timed if t[1] > 4 * pct(50) / 1e3]
    print(f"over 4x the median: {len(slow)} answers, on {len(set(t[2] for t in slow))} "
          f"of {n} connections")


if __name__ == "__main__":
    main()
