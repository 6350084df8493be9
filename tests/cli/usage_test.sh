#!/usr/bin/env bash
# Accounting and idle GPUs through the binary: `tessera usage` (table, csv, json, bad flags) and
# `tessera get jobs --idle` against a server with a short idle window and a price of its own.
source "$(dirname "$0")/server_env.sh" "$1"
SERVER_ARGS="--idle-window 2s --price H100=98 --currency USD"
start_server
cat <<'YAML' >"$WORK/cluster.yaml"
apiVersion: tessera.io/v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "16", memory: 64Gi}
  gpus:
  - {index: 0, uuid: GPU-busy, model: H100-80GB, memoryMiB: 81920}
  - {index: 1, uuid: GPU-idle, model: H100-80GB, memoryMiB: 81920}
  telemetry:
  - {index: 0, utilizationPct: 90}
  - {index: 1, utilizationPct: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: busy, namespace: team-a}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/cluster.yaml"
for _ in $(seq 100); do
  "$TESSERA" get job busy -n team-a -o json | grep -q '"phase": "Admitted"' && break
  sleep 0.05
done
cat <<'YAML' >"$WORK/idle.yaml"
apiVersion: v1
kind: Pod
metadata: {name: idle, namespace: team-b}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/idle.yaml"
# The idle window is 2 s: team-b's job shows as idle, team-a's does not.
for _ in $(seq 100); do
  "$TESSERA" get jobs -A --idle 2>/dev/null | grep -q "^team-b *idle" && break
  sleep 0.1
done
expect_exit 0 "$TESSERA" get jobs -A --idle
expect_out "idle"
grep -q "busy" <<<"$OUT" && fail "a busy job listed as idle: $OUT"
expect_exit 0 "$TESSERA" get job idle -n team-b --idle -o json
expect_out '"pods": ['
expect_exit 1 "$TESSERA" get job busy -n team-a --idle
expect_out "holds no idle GPUs"
expect_exit 0 "$TESSERA" events -n team-b
expect_out "held GPUs below 5% utilisation since"

expect_exit 0 "$TESSERA" usage --by namespace
expect_out "COST(USD)"
expect_out "team-a"
expect_out "TOTAL"
expect_exit 0 "$TESSERA" usage --by job -o csv
expect_out "namespace,job,gpu_hours,idle_gpu_hours,cost,wasted_cost"
expect_out "team-b,idle,"
expect_exit 0 "$TESSERA" usage --by queue --since 1h -o json
expect_out '"queue": "tessera-unqueued"'
expect_out '"currency": "USD"'
expect_exit 2 "$TESSERA" usage --by team
expect_out "--by: must be namespace, queue or job"
expect_exit 2 "$TESSERA" usage --since yesterday
expect_out "--since"
expect_exit 2 "$TESSERA" get queues --idle
# A namespace token sees its own namespace's usage only.
expect_exit 0 "$TESSERA" token create --namespace team-a
TESSERA_TOKEN=$OUT expect_exit 0 "$TESSERA" usage -o csv
expect_out "team-a"
grep -q "team-b" <<<"$OUT" && fail "team-a's token sees team-b: $OUT"
echo "usage_test: ok"
