#!/usr/bin/env bash
# Xid actions carried out, through a real server and agent over the fake NVML: an Xid whose
# action is RESET_GPU quarantines that GPU (annotation, node condition, event), the job on it
# moves to the other GPU, the agent (allowed with --allow-gpu-reset) resets the card once it is
# idle, and the card comes back when it passes its checks; a workflow Xid quarantines without a
# reset until an admin uncordons the GPU.
source "$(dirname "$0")/server_env.sh" "$1"
FAKE_NVML=$2
start_server
expect_exit 0 "$TESSERA" token create --agent
printf '%s\n' "$OUT" >"$WORK/join.token" && chmod 600 "$WORK/join.token"
cat <<'JSON' >"$WORK/gpus.json"
{"driver": "550.54.15", "nvml": "12.550.54.15",
 "devices": [
  {"uuid": "GPU-q0", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559, "busId": "00000000:18:00.0",
   "ecc": true, "processes": []},
  {"uuid": "GPU-q1", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559, "busId": "00000000:2A:00.0",
   "ecc": true, "processes": []}]}
JSON
export TESSERA_FAKE_NVML=$WORK/gpus.json TESSERA_FAKE_NVML_XIDS=$WORK/xids
"$TESSERA" agent --nvml-library "$FAKE_NVML" --name gpu-1 --join-token-file "$WORK/join.token" \
  --heartbeat-seconds 1 --work-dir "$WORK/agent" --cgroup-root "" --allow-gpu-reset \
  --gpu-reset-command "touch $WORK/reset-{index}" >"$WORK/agent.out" 2>&1 &
AGENT=$!
# The job's task outlives a killed agent until its fence stops it: stopped here at the end.
trap 'kill -9 $AGENT 2>/dev/null || true; pkill -9 -f -- "--record $WORK/" || true; cleanup' EXIT
for _ in $(seq 100); do grep -q registered "$WORK/agent.out" && break; sleep 0.05; done
grep -q registered "$WORK/agent.out" || fail "agent: $(cat "$WORK/agent.out")"

cat <<'YAML' >"$WORK/job.yaml"
apiVersion: v1
kind: Pod
metadata: {name: train}
spec:
  containers: [{name: c, command: ["sleep", "600"], resources: {limits: {nvidia.com/gpu: 1}}}]
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/job.yaml"
await_out '"phase": "Running"' "$TESSERA" get job train -o json
quarantined() {  # the GPU indexes the loop has quarantined on gpu-1
  "$TESSERA" get node gpu-1 -o json | /usr/bin/python3 -c '
import json, sys
a = json.load(sys.stdin)["metadata"].get("annotations", {}).get("tessera.io/gpu-quarantine")
print(",".join(str(g["index"]) for g in json.loads(a).get("gpus", [])) if a else "")'
}
held() {  # the GPU index the job's pod holds
  "$TESSERA" get job train -o json | /usr/bin/python3 -c '
import json, sys
pods = json.load(sys.stdin)["status"].get("pods") or [None]
print(pods[0]["devices"][0]["index"] if pods[0] else "")'
}
first=$(held)
[ -n "$first" ] || fail "the job holds no GPU"
other=$((1 - first))

# RESET_GPU on the job's GPU: quarantined; the job moves to the other GPU.
echo "$first 95" >"$WORK/xids"
for _ in $(seq 200); do [ "$(quarantined)" = "$first" ] && break; sleep 0.05; done
[ "$(quarantined)" = "$first" ] || fail "GPU $first was not quarantined: $(quarantined)"
expect_exit 0 "$TESSERA" events -n tessera-system
expect_out "GPU $first of node gpu-1 quarantined: XID 95"
for _ in $(seq 200); do [ "$(held)" = "$other" ] && break; sleep 0.05; done
[ "$(held)" = "$other" ] || fail "the job did not move off GPU $first: $("$TESSERA" get job train -o json)"
for _ in $(seq 100); do "$TESSERA" get job train -o json | grep -q '"Running"' && break; sleep 0.1; done
"$TESSERA" get job train -o json | grep -q '"Running"' || fail "not running again: $("$TESSERA" get job train -o json | grep -B3 -A30 '"pods"' | grep -v -e gpuMilli -e memoryMiB -e uuid -e cpuMilli; ps -ef | grep "sleep 600" | grep -v grep)"
expect_exit 0 "$TESSERA" events -n default
expect_out "is quarantined: XID 95"

# The agent resets the idle card; it passes its checks and comes back.
for _ in $(seq 200); do [ -e "$WORK/reset-$first" ] && break; sleep 0.05; done
[ -e "$WORK/reset-$first" ] || fail "the agent did not reset GPU $first: $(cat "$WORK/agent.out")"
[ ! -e "$WORK/reset-$other" ] || fail "the agent reset GPU $other, which was not quarantined"
for _ in $(seq 200); do [ -z "$(quarantined)" ] && break; sleep 0.05; done
[ -z "$(quarantined)" ] || fail "GPU $first is still quarantined"
expect_exit 0 "$TESSERA" get node gpu-1 -o json
expect_out '"resets"'
expect_exit 0 "$TESSERA" events -n tessera-system
expect_out "GPU $first reset:"
expect_out "GPU $first of node gpu-1 was reset and passes its checks: back in service"

# A workflow Xid (48) quarantines the other GPU without a reset; an admin brings it back.
echo "$other 48" >"$WORK/xids"
for _ in $(seq 200); do [ "$(quarantined)" = "$other" ] && break; sleep 0.05; done
[ "$(quarantined)" = "$other" ] || fail "GPU $other was not quarantined: $(quarantined)"
expect_exit 0 "$TESSERA" get node gpu-1 -o json
expect_out '\"resetRequested\":false'
expect_exit 0 "$TESSERA" top gpus
expect_out "Quarantined"
expect_exit 1 "$TESSERA" doctor node/gpu-1 -o json
expect_out '"gpu.quarantined"'
expect_exit 0 "$TESSERA" uncordon gpu-1 --gpu "$other"
[ -z "$(quarantined)" ] || fail "uncordon left the quarantine: $(quarantined)"
[ ! -e "$WORK/reset-$other" ] || fail "a workflow Xid's GPU was reset"
expect_exit 0 "$TESSERA" delete job train
echo "quarantine_test: ok"
