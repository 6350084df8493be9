#!/usr/bin/env bash
# The kubectl-style CLI against a real server: apply the seed examples, get, delete, tokens,
# and the exit codes of every failure kind.
source "$(dirname "$0")/server_env.sh" "$1"
SEEDS=$2
start_server

# Every seed but the Prometheus rules is applied; the rules file is refused with advice, so
# the command exits 1.
expect_exit 1 "$TESSERA" apply -f "$SEEDS"
expect_out "jobs/pytorch-distributed (namespace default) applied"
expect_out "queues/gpu-cluster-queue applied"
expect_out "namespacequotas/gpu-quota (namespace team-a) applied"
expect_out "load them into Prometheus"

# Applying the same file again changes nothing: same resourceVersion. The scheduling loop
# writes the job's status once it sees the job, so wait for that before comparing.
await_out '"phase"' "$TESSERA" get job pytorch-distributed -o json
expect_exit 0 "$TESSERA" apply -f "$SEEDS/05-volcano-gang.yaml"
first=$OUT
expect_exit 0 "$TESSERA" apply -f "$SEEDS/05-volcano-gang.yaml"
[ "$OUT" = "$first" ] || fail "re-apply changed versions: $first / $OUT"

expect_exit 0 "$TESSERA" get jobs -A
expect_out "pytorch-distributed"
grep -qE "^default +pytorch-distributed +<none> +4 +4 +[A-Za-z]+ +0/4 +-$" <<<"$OUT" ||
  fail "gang row wrong: $OUT"
expect_exit 0 "$TESSERA" get job pytorch-distributed -o json
expect_out '"minMember": 4'
expect_exit 0 "$TESSERA" get pc -o yaml
expect_out "value: 100000"
expect_exit 0 "$TESSERA" get cq
expect_out "gpu-cluster-queue"

# Apply from stdin, into a namespace given on the command line.
cat <<'YAML' >"$WORK/pod.yaml"
apiVersion: v1
kind: Pod
metadata:
  name: stdin-pod
  labels: {team: a}
spec:
  containers:
  - name: c
    resources:
      limits: {nvidia.com/gpu: 1}
YAML
expect_exit 0 "$TESSERA" apply -f - -n team-a <"$WORK/pod.yaml"
expect_out "jobs/stdin-pod (namespace team-a) applied"
# A field Tessera does not act on is applied with a warning, as kubectl shows the API's; a
# misspelt one is refused naming the closest field.
sed 's/^spec:/spec:\n  serviceAccountName: trainer/' "$WORK/pod.yaml" >"$WORK/pod-sa.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/pod-sa.yaml" -n team-a
expect_out "Warning: Job team-a/stdin-pod: spec.serviceAccountName: not acted on"
sed 's/^spec:/spec:\n  nodeSelecter: {a: b}/' "$WORK/pod.yaml" >"$WORK/pod-typo.yaml"
expect_exit 1 "$TESSERA" apply -f "$WORK/pod-typo.yaml" -n team-a
expect_out 'spec.nodeSelecter: unknown field (did you mean "nodeSelector"?)'
expect_exit 0 "$TESSERA" get jobs -n team-a -l team=a
expect_out "stdin-pod"
expect_exit 0 "$TESSERA" get jobs -n team-a -l team=b
expect_out "No resources found."

# Bad input: the server names the field; nothing is written.
cat <<'YAML' >"$WORK/bad.yaml"
apiVersion: batch/v1
kind: Job
metadata: {name: bad, namespace: team-a}
spec:
  template:
    spec:
      containers:
      - name: c
        resources:
          limits: {nvidia.com/gpu: "-2"}
YAML
expect_exit 1 "$TESSERA" apply -f "$WORK/bad.yaml"
expect_out 'spec.template.spec.containers[0].resources.limits.nvidia.com/gpu'
expect_exit 1 "$TESSERA" get job bad -n team-a
expect_out "NotFound"

# Tokens: a namespace token sees its namespace only.
expect_exit 0 "$TESSERA" token create --namespace team-a
team_token=$OUT
expect_exit 0 "$TESSERA" get jobs -n team-a --token "$team_token"
expect_out "stdin-pod"
expect_exit 1 "$TESSERA" get jobs -A --token "$team_token"
expect_out "Forbidden"
expect_exit 1 "$TESSERA" get jobs --token wrong.token
expect_out "Unauthorized"

expect_exit 0 "$TESSERA" delete job stdin-pod -n team-a
expect_out "jobs/stdin-pod deleted"
expect_exit 1 "$TESSERA" delete job stdin-pod -n team-a
expect_exit 2 "$TESSERA" get widgets
expect_out 'resource type "widgets"'
expect_exit 2 "$TESSERA" get jobs -o xml
# A flag the parser rejects is a usage error too.
expect_exit 2 "$TESSERA" get jobs --no-such-flag
expect_out "no-such-flag"
expect_exit 2 "$TESSERA" sim --node-order nope
expect_out "--node-order"

# Config file instead of the environment.
mkdir -p "$WORK/home/.tessera"
printf 'server: %s\ntoken: %s\n' "$TESSERA_ADDR" "$TESSERA_TOKEN" >"$WORK/home/.tessera/config"
expect_exit 0 env -u TESSERA_ADDR -u TESSERA_TOKEN HOME="$WORK/home" "$TESSERA" get pc
expect_out "online-inference"

# The server's scheduling loop binds work to a node's exact GPUs and records why. The seeds'
# jobs and sharing configs are removed first, so that what lands where is deterministic.
for cfg in gpu-configs-default-config gpu-configs-nodex-config time-slicing-config-any; do
  expect_exit 0 "$TESSERA" delete gpusharingconfig "$cfg"
done
for job in gpu-training cgpu-pod cgpu-full-isolation gpu-topology-aware pytorch-distributed \
  llm-training mig-inference; do
  "$TESSERA" delete job "$job" >/dev/null 2>&1 || true
done
expect_exit 0 "$TESSERA" get jobs -A
[ "$OUT" = "No resources found." ] || fail "left over jobs: $OUT"
cat <<'YAML' >"$WORK/node.yaml"
apiVersion: tessera.io/v1
kind: Node
metadata: {name: gpu-node-1, labels: {nvidia.com/gpu.count: "8"}}
status:
  allocatable: {cpu: "64", memory: 512Gi}
  gpus:
  - {index: 0, uuid: GPU-0, model: A100-80GB, memoryMiB: 81920}
  - {index: 1, uuid: GPU-1, model: A100-80GB, memoryMiB: 81920}
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/node.yaml"
expect_exit 0 "$TESSERA" apply -f - -n team-a <"$WORK/pod.yaml"
await_out '"phase": "Admitted"' "$TESSERA" get job stdin-pod -n team-a -o json
expect_out '"node": "gpu-node-1"'
expect_out '"uuid": "GPU-0"'
expect_exit 0 "$TESSERA" get events -n team-a
expect_out "Scheduled to gpu-node-1 GPU 0"
expect_exit 0 "$TESSERA" get jobs -n team-a
expect_out "Admitted"

# Draining the node sends its job back to the queue; the loop binds it to the other node.
sed 's/gpu-node-1/gpu-node-2/; s/GPU-0/GPU-20/; s/GPU-1/GPU-21/; s/labels: {nvidia.com\/gpu.count: "8"}/labels: {}/' \
  "$WORK/node.yaml" >"$WORK/node2.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/node2.yaml"
expect_exit 0 "$TESSERA" drain gpu-node-1
expect_out "pods/stdin-pod (namespace team-a): evicted: pod stdin-pod was evicted (policy/v1 Eviction); job stdin-pod goes back to its queue whole"
expect_out "nodes/gpu-node-1 drained (1 pod evicted)"
await_out '"node": "gpu-node-2"' "$TESSERA" get job stdin-pod -n team-a -o json
expect_exit 0 "$TESSERA" describe job stdin-pod -n team-a
expect_out "Scheduled to gpu-node-2 GPU 0"
expect_out "Scheduled to gpu-node-1 GPU 0"
expect_exit 0 "$TESSERA" get node gpu-node-1 -o json
expect_out '"unschedulable": true'
expect_exit 0 "$TESSERA" uncordon gpu-node-1
expect_out "nodes/gpu-node-1 uncordoned"
expect_exit 1 "$TESSERA" cordon no-such-node
expect_out "NotFound"

# Allocation views and the event log.
expect_exit 0 "$TESSERA" top nodes
grep -qE "^gpu-node-2 +2 +1 \(50%\) +0m +1 +yes$" <<<"$OUT" || fail "top nodes: $OUT"
grep -qE "^gpu-node-1 +2 +0 \(0%\) +0m +0 +yes$" <<<"$OUT" || fail "top nodes: $OUT"
expect_exit 0 "$TESSERA" top gpus
grep -qE "^gpu-node-2 +0 +GPU-20 +A100-80GB +100% +1 +Healthy$" <<<"$OUT" ||
  fail "top gpus: $OUT"
expect_exit 0 "$TESSERA" top queues
expect_out "gpu-cluster-queue"
expect_exit 2 "$TESSERA" top pods
expect_exit 0 "$TESSERA" events -n team-a
expect_out "Scheduled  Job/stdin-pod  Scheduled to gpu-node-2 GPU 0"

# One GPU out of service by hand (a per-GPU cordon, by index or UUID): gpu-node-1's two cards
# take no new work, so a two-GPU pod waits, saying why; uncordoned, it is placed there.
expect_exit 0 "$TESSERA" cordon gpu-node-1 --gpu 0
expect_out "nodes/gpu-node-1 GPU GPU-0 cordoned"
expect_exit 0 "$TESSERA" cordon gpu-node-1 --gpu GPU-1
expect_exit 0 "$TESSERA" get node gpu-node-1 -o json
expect_out '"tessera.io/cordoned-gpus": "GPU-0,GPU-1"'
expect_exit 1 "$TESSERA" cordon gpu-node-1 --gpu 7
expect_out 'reports no GPU "7"'
expect_exit 0 "$TESSERA" top gpus
grep -qE "^gpu-node-1 +1 +GPU-1 +A100-80GB +0% +0 +Healthy,Cordoned$" <<<"$OUT" ||
  fail "top gpus does not show the cordon: $OUT"
sed 's/name: stdin-pod/name: two-gpus/; s/nvidia.com\/gpu: 1/nvidia.com\/gpu: 2/' "$WORK/pod.yaml" |
  "$TESSERA" apply -f - -n team-a >/dev/null || fail "two-gpus not applied"
await_out "cordoned GPUs" "$TESSERA" describe job two-gpus -n team-a
expect_exit 0 "$TESSERA" uncordon gpu-node-1 --gpu GPU-0
expect_out "nodes/gpu-node-1 GPU GPU-0 uncordoned"
expect_exit 0 "$TESSERA" uncordon gpu-node-1 --gpu 1
await_out '"phase": "Admitted"' "$TESSERA" get job two-gpus -n team-a -o json
expect_out '"node": "gpu-node-1"'
expect_exit 0 "$TESSERA" get node gpu-node-1 -o json
grep -q "cordoned-gpus" <<<"$OUT" && fail "the annotation outlived its last GPU: $OUT"
expect_exit 0 "$TESSERA" delete job two-gpus -n team-a

# A node's agent token reads the jobs bound to its node and writes its own Node, not queues.
expect_exit 0 "$TESSERA" token create --agent --node gpu-node-2
agent_token=$OUT
expect_exit 0 "$TESSERA" get jobs -A --token "$agent_token"
expect_out "stdin-pod"
expect_exit 0 "$TESSERA" apply -f "$WORK/node2.yaml" --token "$agent_token"
expect_exit 1 "$TESSERA" apply -f "$WORK/node.yaml" --token "$agent_token"
expect_out "Forbidden"
expect_exit 1 "$TESSERA" apply -f "$SEEDS/06-kueue-queue-and-job.yaml" --token "$agent_token"
expect_out "Forbidden"

# Logs: the agent ships a pod's output (a raw HTTP POST here); the CLI reads it.
ship() {
  local body=$1 hostport=${TESSERA_ADDR#https://}
  printf 'POST /apis/tessera.io/v1/namespaces/team-a/jobs/stdin-pod/logs?pod=c-0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$agent_token" "${#body}" "$body" |
    openssl s_client -quiet -connect "$hostport" -CAfile "$TESSERA_CA" -verify_return_error \
      >/dev/null 2>&1 || true  # what arrived is checked by reading the logs below
}
ship $'step 1\nstep 2\n'
expect_exit 0 "$TESSERA" logs stdin-pod -n team-a
[ "$OUT" = $'step 1\nstep 2' ] || fail "logs: $OUT"
expect_exit 0 "$TESSERA" logs stdin-pod -n team-a --tail 1
[ "$OUT" = "step 2" ] || fail "logs --tail 1: $OUT"
expect_exit 1 "$TESSERA" logs no-such-job -n team-a
expect_out "NotFound"
expect_exit 2 "$TESSERA" token create
expect_exit 2 "$TESSERA" token create --namespace a --agent

# Tokens are listed without secrets and revoked at once.
expect_exit 0 "$TESSERA" token list
expect_out "admin"
grep -qE "namespace +team-a" <<<"$OUT" || fail "token list: $OUT"
grep -qF -- "${team_token#*.}" <<<"$OUT" && fail "token list shows a secret: $OUT"
expect_exit 0 "$TESSERA" get jobs -n team-a --token "$team_token"
expect_exit 0 "$TESSERA" token revoke "${team_token%%.*}"
expect_exit 1 "$TESSERA" get jobs -n team-a --token "$team_token"
expect_out "Unauthorized"
expect_exit 1 "$TESSERA" token revoke admin

kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
expect_exit 3 "$TESSERA" get jobs
expect_out "cannot reach the server"
echo "cli_test: ok"
