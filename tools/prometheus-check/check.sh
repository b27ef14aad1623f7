#!/usr/bin/env bash
# A real Prometheus scrapes a running whirl service and its series are checked the way an SRE
# reads them:
#   1. `promtool check metrics` finds no problem in what `curl` gets (the classic text format);
#   2. Prometheus scrapes the target (OpenMetrics, as it asks) and it is up;
#   3. no histogram `_sum`, `_count` or bucket and no counter ever went down over the run;
#   4. `rate(_sum) / rate(_count)` of each histogram that moved lies between the 0.1% and 99.9%
#      quantiles `histogram_quantile` reads from its buckets.
#
# Usage: tools/prometheus-check/check.sh URL SECONDS
#   URL: the service's metrics endpoint, e.g. http://127.0.0.1:9392/metrics
#   SECONDS: how long Prometheus scrapes (every second) before the checks.
set -euo pipefail
url=$1
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill "$prom" 2>/dev/null || true; wait "$prom" 2>/dev/null || true; rm -rf "$work"' EXIT

target=${url#http://}
host=${target%%/*}
path=/${target#*/}
sed -e "s|@HOST@|$host|" -e "s|@PATH@|$path|" "$here/prometheus.yml" > "$work/prometheus.yml"

echo "promtool check metrics < curl $url"
curl -fsS "$url" > "$work/classic.txt"
promtool check metrics < "$work/classic.txt"

port=9499
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$port" --log.level=warn > "$work/prometheus.log" 2>&1 &
prom=$!
api="http://127.0.0.1:$port/api/v1"
for _ in $(seq 1 100); do
  curl -fsS "$api/status/buildinfo" > /dev/null 2>&1 && break
  sleep 0.2
done
echo "Prometheus scrapes $url every second for $seconds s"
sleep "$seconds"

python3 "$here/judge.py" "$api" "${seconds}s"
