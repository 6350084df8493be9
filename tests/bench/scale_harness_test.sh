#!/usr/bin/env bash
# The scale harness (bench/scale.sh) at a small size: 20 simulated nodes, 300 jobs of the mix at
# 200/s, every job ending, the results and the chart written.
#   scale_harness_test.sh TESSERA TESSERA_SCALE
set -euo pipefail
TESSERA=$1
SCALE=$2
OUT=$(mktemp -d /tmp/tessera-scale-test-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
bash "$(dirname "$0")/../../bench/scale.sh" "$TESSERA" "$SCALE" "$OUT/run" \
  --nodes 20 --jobs 300 --rate 200 --timeout 90 >"$OUT/log" 2>&1 || { cat "$OUT/log"; fail "the run failed"; }
[ -s "$OUT/run.svg" ] || fail "no chart"
python3 - "$OUT/run.json" <<'PY' || { cat "$OUT/log"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
assert s["jobs_created"] == 300, s
assert s["jobs_completed"] == 300, s
# The mix has multi-pod jobs (gangs, arrays): more pods start than there are jobs.
assert s["pods_started"] > 300, s
# The final results, not a checkpoint; no pod's report was refused.
assert s["partial"] is False, s
assert s["reports_refused"] == 0, s
lat = s["start_latency_ms"]
assert 0 <= lat["p50"] <= lat["p99"] <= lat["max"], lat
rows = d["timeline"]
assert sum(r.get("created", 0) for r in rows) == 300, rows
assert sum(r.get("completed", 0) for r in rows) == 300, rows
assert any(r.get("server_rss_mb", 0) > 0 for r in rows), "no server samples"
assert any(r.get("store_mb", 0) > 0 for r in rows), "no store samples"
assert any(r.get("cycles", 0) > 0 for r in rows), "no scheduling cycles read from /metrics"
PY
echo "scale harness: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"])' "$OUT/run.json")"
