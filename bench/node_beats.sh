#!/bin/bash
# What an idle node's beats write: runs `tessera dev` (real GPUs through NVML, or the fake
# GPUs given) and prints every 5 s GPU 0's telemetry, the Node's resourceVersion and its
# Lease's renewTime. A Node rewritten by telemetry noise shows as a version that moves on
# every beat; renewals held by the server as a renewTime that moves while the version stays.
#   bench/node_beats.sh [TESSERA] [SAMPLES] [FAKE_GPUS]
set -euo pipefail
TESSERA=$(realpath "${1:-build/tessera}")
SAMPLES=${2:-10}
FAKE=${3:-}
WORK=$(mktemp -d /tmp/tessera-beats-XXXXXX)
DEV_PID=
cleanup() {
  if [ -n "$DEV_PID" ]; then kill "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
export HOME=$WORK/home
unset TESSERA_ADDR TESSERA_TOKEN TESSERA_CA
mkdir -p "$HOME"
cd "$WORK"
"$TESSERA" dev --listen 127.0.0.1:0 --container-runtime none ${FAKE:+--fake-gpus "$FAKE"} \
  >"$WORK/dev.out" 2>&1 &
DEV_PID=$!
for _ in $(seq 200); do grep -q "listening on" "$WORK/dev.out" && break; sleep 0.05; done
grep -q "listening on" "$WORK/dev.out" || { cat "$WORK/dev.out"; exit 1; }
grep "GPUs (" "$WORK/dev.out" || true
for _ in $(seq 100); do "$TESSERA" get nodes 2>/dev/null | grep -q . && break; sleep 0.1; done
NODE=$("$TESSERA" get nodes | awk 'NR==2 {print $1}')
for _ in $(seq "$SAMPLES"); do
  "$TESSERA" get node "$NODE" -o json >"$WORK/node.json"
  NODE_NOW=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = (d["status"].get("telemetry") or [{}])[0]
keys = ("utilizationPct", "memoryUsedMiB", "temperatureC", "powerMw", "smClockMhz")
print("node version", d["metadata"]["resourceVersion"], " gpu0", {k: t.get(k) for k in keys})
' "$WORK/node.json")
  LEASE=$("$TESSERA" get lease "$NODE" -o json 2>/dev/null | grep -o '"renewTime": "[^"]*"' || echo "no lease")
  echo "$(date +%T) $NODE_NOW  lease $LEASE"
  sleep 5
done
