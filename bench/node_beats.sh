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
source "$(dirname "$0")/dev_env.sh"
StartDev beats ${FAKE:+--fake-gpus "$FAKE"}
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
