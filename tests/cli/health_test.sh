#!/usr/bin/env bash
# GPU health through the real NVML code path (the fake libnvidia-ml.so): a critical XID makes a
# GPU unhealthy, the scheduler stops using it and an event says why; an ignored XID changes
# nothing; after a quiet period the GPU recovers by itself and work lands on it again. The
# server carries out no Xid action here (--no-gpu-quarantine): the agent's health alone is
# tested; quarantine_test.sh tests the actions.
source "$(dirname "$0")/server_env.sh" "$1"
FAKE_NVML=$2
SERVER_ARGS="${SERVER_ARGS:-} --no-gpu-quarantine"
start_server
expect_exit 0 "$TESSERA" token create --agent
join=$OUT
printf '%s\n' "$join" >"$WORK/join.token" && chmod 600 "$WORK/join.token"
cat <<'JSON' >"$WORK/gpus.json"
{"driver": "550.54.15", "nvml": "12.550.54.15",
 "devices": [
  {"uuid": "GPU-h0", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559, "busId": "00000000:18:00.0",
   "ecc": true, "util": 12, "temp": 40, "processes": []},
  {"uuid": "GPU-h1", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559, "busId": "00000000:2A:00.0",
   "ecc": true}]}
JSON
export TESSERA_FAKE_NVML=$WORK/gpus.json TESSERA_FAKE_NVML_XIDS=$WORK/xids
"$TESSERA" agent --nvml-library "$FAKE_NVML" --name gpu-1 --join-token-file "$WORK/join.token" \
  --heartbeat-seconds 1 --health-quiet-seconds 3 --work-dir "$WORK/agent" --cgroup-root "" \
  >"$WORK/agent.out" 2>&1 &
AGENT=$!
trap 'kill -9 $AGENT 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 100); do grep -q registered "$WORK/agent.out" && break; sleep 0.05; done
grep -q registered "$WORK/agent.out" || fail "agent: $(cat "$WORK/agent.out")"
expect_exit 0 "$TESSERA" get node gpu-1 -o json
expect_out '"uuid": "GPU-h0"'
expect_out '"utilizationPct": 12'
expect_out '"nvidia.com/gpu.driver": "550.54.15"'

health_of() {  # gpu index -> Healthy | Unhealthy
  "$TESSERA" get node gpu-1 -o json | tr -d '\n ' | grep -o "\"health\":\"[A-Za-z]*\",\"index\":$1" | cut -d'"' -f4
}
echo "0 13" >"$WORK/xids"  # an application's fault: ignored
sleep 1.5
[ -z "$(health_of 0)" ] || [ "$(health_of 0)" = Healthy ] || fail "XID 13 made GPU 0 $(health_of 0)"

echo "0 79" >"$WORK/xids"  # the GPU fell off the bus
for _ in $(seq 100); do [ "$(health_of 0)" = Unhealthy ] && break; sleep 0.05; done
[ "$(health_of 0)" = Unhealthy ] || fail "XID 79 did not make GPU 0 unhealthy"
expect_exit 0 "$TESSERA" events -n tessera-system
expect_out "GPU 0 is unhealthy: XID 79 (GPU has fallen off the bus): RESTART_BM"

cat <<'YAML' >"$WORK/two.yaml"
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 2}}}]
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/two.yaml"
sleep 1
expect_exit 0 "$TESSERA" get job two -o json
expect_out '"phase": "Pending"'

# Quiet for 3 s: healthy again, and the 2-GPU job runs.
for _ in $(seq 200); do [ "$(health_of 0)" = Healthy ] && break; sleep 0.05; done
[ "$(health_of 0)" = Healthy ] || fail "GPU 0 did not recover"
expect_exit 0 "$TESSERA" events -n tessera-system
expect_out "GPU 0 is healthy again"
await_out '"node": "gpu-1"' "$TESSERA" get job two -o json
echo "health_test: ok"
