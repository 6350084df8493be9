#!/usr/bin/env bash
# The node agent with fake GPUs against a real server: it registers its node with discovered
# labels and GPUs, keeps a heartbeat, and the scheduler binds work to its devices.
source "$(dirname "$0")/server_env.sh" "$1"
start_server

expect_exit 0 "$TESSERA" token create --agent
join=$OUT
printf '%s\n' "$join" >"$WORK/join.token" && chmod 600 "$WORK/join.token"
AGENT_PID=
stop_agent() { if [ -n "$AGENT_PID" ]; then kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; fi; }
trap 'stop_agent; cleanup' EXIT

# Bad flags are refused before anything is registered.
expect_exit 2 "$TESSERA" agent --fake-gpus 3xB300 --join-token-file "$WORK/join.token" --name x
expect_out 'unknown product "B300"'
expect_exit 2 "$TESSERA" agent --fake-gpus 1xT4 --taints bad --join-token-file "$WORK/join.token" --name x
expect_out "--taints"
expect_exit 1 "$TESSERA" agent --nvml-library /nonexistent/libnvidia-ml.so.1 --join-token-file "$WORK/join.token"
expect_out "cannot load NVML"
printf 'labels: [a]\n' >"$WORK/bad-agent.yaml"
expect_exit 2 "$TESSERA" agent --fake-gpus 1xT4 --config "$WORK/bad-agent.yaml" --join-token-file "$WORK/join.token"
expect_out "labels (a map)"
printf 'labels: {rack: r7}\ntaints: [{key: maintenance, effect: PreferNoSchedule}]\n' >"$WORK/agent.yaml"

# A directory standing in for a cgroup v2 mount.
mkdir -p "$WORK/cgroup" && echo "cpu memory" >"$WORK/cgroup/cgroup.controllers"

# A stand-in container runtime that records how it was called, then runs the command.
cp "$(dirname "$0")/recording_runtime.sh" "$WORK/runtime.sh"

"$TESSERA" agent --fake-gpus 2xH100-80GB,1xT4 --name fake-1 --join-token-file "$WORK/join.token" \
  --labels team=research --taints dedicated=ml:NoSchedule --heartbeat-seconds 1 \
  --config "$WORK/agent.yaml" \
  --work-dir "$WORK/agent" --container-runtime "$WORK/runtime.sh" --stop-grace-seconds 1 \
  --cgroup-root "$WORK/cgroup" \
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
expect_out '"rack": "r7"'
expect_out '"key": "maintenance"'
expect_out '"xidCount": 0'
expect_out '"key": "dedicated"'
expect_out '"model": "T4"'
node_version=$(grep -o '"resourceVersion": "[^"]*"' <<<"$OUT")
# Beats renew the node's Lease (stamped by the server) and leave the Node as it is while its
# status does not change.
for _ in $(seq 100); do "$TESSERA" get lease fake-1 >/dev/null 2>&1 && break; sleep 0.1; done
expect_exit 0 "$TESSERA" get lease fake-1 -o json
expect_out '"holderIdentity": "fake-1"'
first_beat=$(grep -o '"renewTime": "[^"]*"' <<<"$OUT")
sleep 2.5
expect_exit 0 "$TESSERA" get lease fake-1 -o json
[ "$(grep -o '"renewTime": "[^"]*"' <<<"$OUT")" != "$first_beat" ] || fail "no new heartbeat"
expect_exit 0 "$TESSERA" get node fake-1 -o json
[ "$(grep -o '"resourceVersion": "[^"]*"' <<<"$OUT")" = "$node_version" ] ||
  fail "the beats rewrote the Node: $node_version, now $(grep -o '"resourceVersion": "[^"]*"' <<<"$OUT")"
# kubectl's view of the node is Ready by the Lease; `tessera get nodes` shows the columns
# `kubectl get nodes` has, with the GPUs (healthy of all).
expect_exit 0 "$TESSERA" get nodes
expect_out "fake-1"
grep -qE '^NAME +STATUS +ROLES +AGE +VERSION +GPUS$' <<<"$OUT" || fail "node columns: $OUT"
grep -qE '^fake-1 +Ready +<none> +[0-9]+s +tessera-agent +3/3$' <<<"$OUT" || fail "node row: $OUT"
expect_exit 0 "$TESSERA" get node fake-1 -o wide
grep -qE '^fake-1 +Ready .* 3/3 +H100-80GB ' <<<"$OUT" || fail "wide node row: $OUT"

# A cordon survives the agent's heartbeats.
expect_exit 0 "$TESSERA" cordon fake-1
sleep 1.5
expect_exit 0 "$TESSERA" get node fake-1 -o json
expect_out '"unschedulable": true'
expect_exit 0 "$TESSERA" get nodes
grep -qE '^fake-1 +Ready,SchedulingDisabled ' <<<"$OUT" || fail "cordoned node's status: $OUT"
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
# (Bound, the agent runs it at once: with nothing to run it fails, so wait for the binding.)
await_out '"node": "fake-1"' "$TESSERA" get job on-fake -o json
expect_out '"uuid": "GPU-'

# Jobs run as processes with their devices in the environment; their outcome and output come
# back to the server.
job() {  # name, extra task fields (YAML flow), command
  cat <<YAML
apiVersion: tessera.io/v1
kind: Job
metadata: {name: $1, namespace: default}
spec:
  tasks:
  - name: main
    command: ["sh", "-c", "$3"]
    resources: {limits: {nvidia.com/gpu: 1}}
    tolerations: [{key: dedicated, operator: Exists}]
    $2
YAML
}
wait_phase() {  # name, phase
  await_out "\"phase\": \"$2\"" "$TESSERA" get job "$1" -o json
}
expect_exit 0 "$TESSERA" delete job on-fake
job env-check "restartPolicy: Never" 'echo gpus=$CUDA_VISIBLE_DEVICES kind=$TESSERA_GPU_KIND' >"$WORK/env.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/env.yaml"
wait_phase env-check Succeeded
uuid=$(grep -o '"uuid": "GPU-[^"]*"' <<<"$OUT" | head -1 | cut -d'"' -f4)
expect_out '"exitCode": 0'
expect_out '"limits": "cpu.max=max, memory.max=max"'
await_out "gpus=" "$TESSERA" logs env-check
[ "$OUT" = "gpus=$uuid kind=whole" ] || fail "env-check printed '$OUT', bound to $uuid"

# A task sees none of the agent's secrets: not in its environment, not on its monitor's or the
# agent's command line; the agent's own token sits in a file only the agent's user reads.
node_token=$(cat "$WORK/agent/node.token")
[ "$(stat -c %a "$WORK/agent/node.token")" = 600 ] || fail "node.token is not mode 600"
job snoop "restartPolicy: Never" 'env; xargs -0 echo </proc/$PPID/cmdline; read -r _ _ _ agent _ </proc/$PPID/stat; xargs -0 echo </proc/$agent/cmdline; echo snooped' >"$WORK/snoop.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/snoop.yaml"
wait_phase snoop Succeeded
await_out "snooped" "$TESSERA" logs snoop
for secret in "$node_token" "$join" "$TESSERA_TOKEN" "${node_token#*.}" "${join#*.}" "${TESSERA_TOKEN#*.}"; do
  ! grep -qF -- "$secret" <<<"$OUT" || fail "a task saw a token: $OUT"
done
! grep -q "^TESSERA_TOKEN=" <<<"$OUT" || fail "a task inherited TESSERA_TOKEN: $OUT"
grep -q "^CUDA_VISIBLE_DEVICES=GPU-" <<<"$OUT" || fail "the task's own env is missing: $OUT"
grep -q -- "--join-token-file" <<<"$OUT" || fail "the agent's command line was not read: $OUT"
grep -q -- "tessera-monitor --ready 3" <<<"$OUT" || fail "the task's monitor is not tessera-monitor: $OUT"
# The node's token acts for fake-1 only: not another node, not a queue, not other jobs' logs.
expect_exit 1 "$TESSERA" get node other --token "$node_token"
expect_out "Forbidden"
expect_exit 1 "$TESSERA" apply -f "$WORK/job.yaml" --token "$node_token"
expect_out "Forbidden"
# The join token has done its one job: fake-1 has a token, so it cannot mint another.
expect_exit 0 "$TESSERA" token list
grep -qE "agent +- +fake-1" <<<"$OUT" || fail "token list: $OUT"

job fails "restartPolicy: Never" 'exit 3' >"$WORK/fails.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/fails.yaml"
wait_phase fails Failed
expect_out 'pod main-0 failed: exit code 3'

job retries "{restartPolicy: OnFailure, maxRetries: 2}" 'exit 1' >"$WORK/retries.yaml"
sed -i 's/^    {restartPolicy: OnFailure, maxRetries: 2}/    restartPolicy: OnFailure\n    maxRetries: 2/' "$WORK/retries.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/retries.yaml"
wait_phase retries Failed
expect_out '"restarts": 2'

job sleeper "restartPolicy: Never" 'echo started; exec sleep 300' >"$WORK/sleeper.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/sleeper.yaml"
wait_phase sleeper Running
# The sleeper is the child of its group's leader, whose pid the agent records (a "sleep 300"
# of another test or user may run beside it).
leader=$(awk 'NR == 1 {print $1}' "$WORK/agent/run/default_sleeper_main-0.pid")
pid=$(pgrep -P "$leader" -f "sleep 300" | head -1)
[ -n "$pid" ] || fail "the sleeper is not running"
expect_exit 0 "$TESSERA" delete job sleeper
# Running: it exists and is not a zombie waiting for a parent to reap it.
runs() { [ -n "$(ps -o stat= -p "$1" 2>/dev/null | grep -v Z)" ]; }
for _ in $(seq 200); do runs "$pid" || break; sleep 0.05; done
if runs "$pid"; then
  ps -eo pid,pgid,ppid,stat,etimes,cmd | grep -v grep | grep -E "sleep|tessera" >&2 || true
  tail -20 "$WORK/agent.out" >&2
  fail "the deleted job's process $pid still runs"
fi

job imaged "image: busybox" 'echo from-runtime' >"$WORK/imaged.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/imaged.yaml"
wait_phase imaged Succeeded
grep -q -- "run --rm --name tessera-default_imaged_main-0 --device nvidia.com/gpu=GPU-" "$WORK/runtime.sh.calls" || fail "runtime called as: $(cat "$WORK/runtime.sh.calls")"
grep -q -- "-e CUDA_VISIBLE_DEVICES=GPU-" "$WORK/runtime.sh.calls" || fail "runtime env: $(cat "$WORK/runtime.sh.calls")"
echo "agent_test: ok"
