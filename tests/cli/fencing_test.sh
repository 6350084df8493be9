#!/usr/bin/env bash
# Fencing (agent/fence.h), end to end with two agents:
# - an agent frozen with SIGSTOP past the grace period: its node's keeper stops the pod before
#   the server binds it elsewhere, so the pod never runs on two nodes at once, and the agent,
#   thawed, does not start it again;
# - an agent killed and restarted at once adopts its pod: the same process keeps running, and
#   the new agent still stops it when the job is deleted.
SERVER_ARGS="--node-grace-seconds 2"
source "$(dirname "$0")/server_env.sh" "$1"
start_server
expect_exit 0 "$TESSERA" token create --agent
printf '%s\n' "$OUT" >"$WORK/join.token" && chmod 600 "$WORK/join.token"
declare -A AGENT
stop_all() {
  for p in "${AGENT[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
  for p in "${AGENT[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  pkill -9 -f "fencing-task-$$" || true
}
trap 'stop_all; cleanup' EXIT
agent() {  # name
  "$TESSERA" agent --fake-gpus 1xH100-80GB --name "$1" --join-token-file "$WORK/join.token" \
    --heartbeat-seconds 1 --fence-seconds 2 --stop-grace-seconds 1 --work-dir "$WORK/$1" \
    --cgroup-root "" >>"$WORK/$1.out" 2>&1 &
  AGENT[$1]=$!
}
agent node-a
agent node-b
LOG=$WORK/task.log
# The task runs as its Job's own user (docs/SECURITY.md): it is given this file to write.
: >"$LOG" && chmod 666 "$LOG"
# Each start and stop, with the node, the pid and the time in ns.
cat <<EOF_TASK >"$WORK/fencing-task-$$"
echo "start \$TESSERA_NODE \$\$ \$(date +%s%N)" >>$LOG
trap 'echo "stop \$TESSERA_NODE \$\$ \$(date +%s%N)" >>$LOG; exit 0' TERM
while :; do sleep 0.05; done
EOF_TASK
cat <<YAML >"$WORK/job.yaml"
apiVersion: tessera.io/v1
kind: Job
metadata: {name: train}
spec:
  tasks:
  - name: worker
    command: ["sh", "$WORK/fencing-task-$$"]
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/job.yaml"
starts() { cat "$LOG" 2>/dev/null | grep -c '^start' || true; }
for _ in $(seq 200); do [ "$(starts)" -ge 1 ] && break; sleep 0.05; done
[ "$(starts)" -eq 1 ] || fail "the job did not start: $(cat "$LOG" 2>/dev/null)"
read -r _ first first_pid _ < <(grep '^start' "$LOG")
[ "$first" = node-a ] && second=node-b || second=node-a

# Freeze the first node's agent; its keeper is not frozen.
kill -STOP "${AGENT[$first]}"
for _ in $(seq 400); do [ "$(starts)" -ge 2 ] && break; sleep 0.05; done
[ "$(starts)" -eq 2 ] || fail "the job never moved to $second: $(cat "$LOG")"
read -r _ node _ started < <(grep '^start' "$LOG" | tail -1)
[ "$node" = "$second" ] || fail "the job restarted on $node, not $second: $(cat "$LOG")"
read -r _ node pid stopped < <(grep '^stop' "$LOG" | head -1) ||
  fail "the frozen node's pod was never stopped: $(cat "$LOG")"
[ "$node" = "$first" ] && [ "$pid" = "$first_pid" ] || fail "unexpected stop: $(cat "$LOG")"
[ "$stopped" -lt "$started" ] ||
  fail "the pod on $first stopped at $stopped, after it started on $second at $started"
kill -0 "$first_pid" 2>/dev/null && fail "the fenced pod $first_pid still runs"
grep -q "fenced:" "$WORK/$first/run/keeper.log" ||
  fail "the keeper logged no fence: $(cat "$WORK/$first/run/keeper.log")"

# Thawed, the first agent sees its lease expired, heartbeats again, and runs nothing: the job
# is bound to the second node now.
kill -CONT "${AGENT[$first]}"
await_out "heartbeat accepted again" cat "$WORK/$first.out"
sleep 2
[ "$(starts)" -eq 2 ] || fail "the thawed agent started the pod again: $(cat "$LOG")"

# Kill the second node's agent and start it again at once: it adopts the running pod.
read -r _ _ pid _ < <(grep '^start' "$LOG" | tail -1)
kill -9 "${AGENT[$second]}"
agent "$second"
await_out "registered with" cat "$WORK/$second.out"
sleep 4  # past the fence period and the stop grace: the adopted pod must still run
kill -0 "$pid" 2>/dev/null || fail "the restarted agent lost its pod $pid: $(cat "$LOG")"
[ "$(starts)" -eq 2 ] || fail "the restarted agent started the pod again: $(cat "$LOG")"
expect_exit 0 "$TESSERA" get job train -o json
expect_out '"phase": "Admitted"'
expect_out "\"node\": \"$second\""
expect_out '"phase": "Running"'
# The adopting agent still stops it.
expect_exit 0 "$TESSERA" delete job train
for _ in $(seq 200); do grep -q "^stop $second $pid" "$LOG" && break; sleep 0.05; done
grep -q "^stop $second $pid" "$LOG" || fail "the adopted pod was not stopped: $(cat "$LOG")"
echo "fencing_test: ok"
