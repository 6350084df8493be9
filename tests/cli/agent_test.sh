#!/usr/bin/env bash
# The node agent with fake GPUs against a real server: it registers its node with discovered
# labels and GPUs, keeps a heartbeat, and the scheduler binds work to its devices.
source "$(dirname "$0")/server_env.sh" "$1"
start_server

expect_exit 0 "$TESSERA" token create --agent
join=$OUT
AGENT_PID=
stop_agent() { if [ -n "$AGENT_PID" ]; then kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; fi; }
trap 'stop_agent; cleanup' EXIT

# Bad flags are refused before anything is registered.
expect_exit 2 "$TESSERA" agent --fake-gpus 3xB300 --join-token "$join" --name x
expect_out 'unknown product "B300"'
expect_exit 2 "$TESSERA" agent --fake-gpus 1xT4 --taints bad --join-token "$join" --name x
expect_out "--taints"
expect_exit 1 "$TESSERA" agent --nvml-library /nonexistent/libnvidia-ml.so.1 --join-token "$join"
expect_out "cannot load NVML"

"$TESSERA" agent --fake-gpus 2xH100-80GB,1xT4 --name fake-1 --join-token "$join" \
  --labels team=research --taints dedicated=ml:NoSchedule --heartbeat-seconds 1 \
  >"$WORK/agent.out" 2>&1 &
AGENT_PID=$!
for _ in $(seq 100); do
  grep -q "registered" "$WORK/agent.out" && break
  sleep 0.05
done
grep -q "registered" "$WORK/agent.out" || fail "agent did not register: $(cat "$WORK/agent.out")"

expect_exit 0 "$TESSERA" get node fake-1 -o json
expect_out '"nvidia.com/gpu.product": "H100-80GB"'
expect_out '"nvidia.com/gpu.count": "3"'
expect_out '"tessera.io/simulated": "true"'
expect_out '"team": "research"'
expect_out '"key": "dedicated"'
expect_out '"model": "T4"'
first_beat=$(grep -o '"heartbeat": "[^"]*"' <<<"$OUT")
sleep 1.5
expect_exit 0 "$TESSERA" get node fake-1 -o json
[ "$(grep -o '"heartbeat": "[^"]*"' <<<"$OUT")" != "$first_beat" ] || fail "no new heartbeat"

# A cordon survives the agent's heartbeats.
expect_exit 0 "$TESSERA" cordon fake-1
sleep 1.5
expect_exit 0 "$TESSERA" get node fake-1 -o json
expect_out '"unschedulable": true'
expect_exit 0 "$TESSERA" uncordon fake-1

# A job that tolerates the taint lands on the agent's H100s.
cat <<'YAML' >"$WORK/job.yaml"
apiVersion: v1
kind: Pod
metadata: {name: on-fake}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]
  tolerations: [{key: dedicated, operator: Exists}]
  nodeSelector: {nvidia.com/gpu.product: H100-80GB}
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/job.yaml"
for _ in $(seq 100); do
  expect_exit 0 "$TESSERA" get job on-fake -o json
  grep -q '"phase": "Admitted"' <<<"$OUT" && break
  sleep 0.05
done
expect_out '"node": "fake-1"'
expect_out '"uuid": "GPU-'
echo "agent_test: ok"
