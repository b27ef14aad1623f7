"""Asks the Prometheus at API (http://host:port/api/v1) about job `whirl` and fails (exit 1)
on what an SRE would call wrong: the target down, a counter or histogram series that went
down, or a histogram whose mean (`rate(_sum) / rate(_count)`) is not where its buckets say
its observations are (between `histogram_quantile` 0.001 and 0.999)."""
import json
import math
import sys
import urllib.parse
import urllib.request

api, window = sys.argv[1], sys.argv[2]


def query(q):
    url = f"{api}/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url) as r:
        answer = json.load(r)
    if answer.get("status") != "success":
        sys.exit(f"query {q} failed: {answer}")
    return answer["data"]["result"]


def labels(metric):
    return tuple(sorted((k, v) for k, v in metric.items() if k not in ("__name__", "le")))


problems = []
up = query('up{job="whirl"}')
if not up or any(float(s["value"][1]) != 1.0 for s in up):
    problems.append(f"the target is not up: {up}")

# Every sample of every cumulative series over the run: none may go down.
raw = query(f'{{job="whirl",__name__=~".+(_sum|_total|_count|_bucket)"}}[{window}]')
for s in raw:
    values = [float(v) for _, v in s["values"]]
    drops = sum(1 for a, b in zip(values, values[1:]) if b < a)
    if drops:
        problems.append(f"{s['metric']} went down {drops} times: {values}")
print(f"{len(raw)} cumulative series, {sum(len(s['values']) for s in raw)} samples: none went down" if not problems else "")

names = sorted({s["metric"]["__name__"][: -len("_count")] for s in query('{job="whirl",__name__=~".+_seconds_count"}')})
checked = 0
for name in names:
    sums = {labels(s["metric"]): float(s["value"][1]) for s in query(f"rate({name}_sum[{window}])")}
    counts = {labels(s["metric"]): float(s["value"][1]) for s in query(f"rate({name}_count[{window}])")}
    low = {labels(s["metric"]): float(s["value"][1]) for s in query(f"histogram_quantile(0.001, rate({name}_bucket[{window}]))")}
    high = {labels(s["metric"]): float(s["value"][1]) for s in query(f"histogram_quantile(0.999, rate({name}_bucket[{window}]))")}
    for k, count_rate in counts.items():
        if count_rate <= 0 or k not in sums:
            continue
        mean = sums[k] / count_rate
        lo, hi = low.get(k), high.get(k)
        if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
            problems.append(f"{name}{dict(k)}: no quantiles from the buckets")
            continue
        checked += 1
        print(f"{name}{dict(k)}: mean {mean * 1e6:.1f} us; buckets' q0.001 {lo * 1e6:.1f} us, q0.999 {hi * 1e6:.1f} us")
        if not (lo <= mean <= hi):
            problems.append(f"{name}{dict(k)}: rate(_sum)/rate(_count) = {mean} s outside the buckets' [{lo}, {hi}]")

if checked == 0:
    problems.append("no histogram moved while Prometheus scraped")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"Prometheus: the target was up, no series went down, {checked} histograms' means agree with their buckets")
