#!/usr/bin/env bash
# A 2-pod gang on 2 agents; one agent is killed: its fence keeper stops the pod it left running,
# then its node goes NotReady, the gang is scheduled again whole (not half) and the surviving
# agent stops its pod. When the killed agent returns, the gang runs again: never more than two
# pods.
SERVER_ARGS="--node-grace-seconds 2"
source "$(dirname "$0")/server_env.sh" "$1"
start_server
expect_exit 0 "$TESSERA" token create --agent
join=$OUT
printf '%s\n' "$join" >"$WORK/join.token" && chmod 600 "$WORK/join.token"
AGENTS=()
stop_agents() { for p in "${AGENTS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap 'stop_agents; pkill -9 -f "sleep 307" || true; cleanup' EXIT
agent() {  # name
  "$TESSERA" agent --fake-gpus 2xH100-80GB --name "$1" --join-token-file "$WORK/join.token" \
    --heartbeat-seconds 1 --fence-seconds 2 --stop-grace-seconds 1 --work-dir "$WORK/$1" --cgroup-root "" \
    >"$WORK/$1.out" 2>&1 &
  AGENTS+=($!)
}
agent node-a
A=$!
agent node-b
cat <<'YAML' >"$WORK/gang.yaml"
apiVersion: tessera.io/v1
kind: Job
metadata: {name: gang}
spec:
  minMember: 2
  tasks:
  - name: worker
    replicas: 2
    command: ["sh", "-c", "exec sleep 307"]
    resources: {limits: {nvidia.com/gpu: 2}}
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/gang.yaml"
running() { pgrep -fx "sleep 307" | wc -l; }  # the tasks, not their monitors
for _ in $(seq 200); do [ "$(running)" -eq 2 ] && break; sleep 0.05; done
[ "$(running)" -eq 2 ] || fail "the gang's two pods are not both running: $(running)"
expect_exit 0 "$TESSERA" get job gang -o json
expect_out '"node": "node-a"'
expect_out '"node": "node-b"'

kill -9 "$A"
# node-a's pod outlives its killed agent only until the fence (2 s + 1 s grace): the keeper
# stops it while the job is still bound there (the server waits fenceSeconds 5 s + 2 s).
for _ in $(seq 200); do
  [ "$(running)" -le 1 ] && break
  sleep 0.05
done
[ "$(running)" -eq 1 ] || fail "node-a's fence keeper should stop its pod: $(running) running"
expect_exit 0 "$TESSERA" get job gang -o json
expect_out '"phase": "Admitted"'
grep -q "SIGTERM default/gang/" "$WORK/node-a/run/keeper.log" ||
  fail "the keeper's log names no stopped pod: $(cat "$WORK/node-a/run/keeper.log")"
for _ in $(seq 200); do
  expect_exit 0 "$TESSERA" get job gang -o json
  grep -q '"phase": "Pending"' <<<"$OUT" && break
  sleep 0.05
done
expect_out '"phase": "Pending"'
expect_exit 0 "$TESSERA" describe job gang
expect_out "node node-a is NotReady"
for _ in $(seq 100); do [ "$(running)" -eq 0 ] && break; sleep 0.05; done
[ "$(running)" -eq 0 ] || fail "node-b still runs its pod of the unbound gang"

agent node-a
for _ in $(seq 200); do
  expect_exit 0 "$TESSERA" get job gang -o json
  grep -q '"phase": "Admitted"' <<<"$OUT" && [ "$(running)" -eq 2 ] && break
  sleep 0.05
done
[ "$(running)" -eq 2 ] || fail "the gang should run exactly two pods again, runs $(running)"
expect_out '"node": "node-a"'
expect_out '"node": "node-b"'
pkill -9 -f "sleep 307" || true
echo "node_failure_test: ok"
