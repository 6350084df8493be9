#!/usr/bin/env bash
# tessera dev: server and agent in one process; the client commands work from the config file
# it writes, with no flags; a job runs on a simulated GPU and its output comes back.
set -euo pipefail
TESSERA=$1
TEST_NAME=dev
source "$(dirname "$0")/dev_env.sh"
"$TESSERA" dev --listen 127.0.0.1:0 --nvml-free 2>/dev/null && fail "unknown flag accepted"
start_dev "$TESSERA" --container-runtime none
[ -f "$HOME/.tessera/config" ] || fail "no config written"
[ "$(stat -c %a "$HOME/.tessera/config")" = 600 ] || fail "config is not private"
[ -d "$WORK/.tessera/server" ] || fail "state not in ./.tessera"
# This machine has no GPU driver: the node is simulated, and says so.
grep -q "simulating 8xH100-80GB" "$WORK/dev.out" || fail "no simulation notice: $(cat "$WORK/dev.out")"
for _ in $(seq 100); do "$TESSERA" get nodes 2>/dev/null | grep -q "^dev" && break; sleep 0.05; done
out=$("$TESSERA" get node dev -o json)
grep -q '"tessera.io/simulated": "true"' <<<"$out" || fail "node not labelled simulated: $out"
grep -q '"nvidia.com/gpu.count": "8"' <<<"$out" || fail "node GPUs: $out"

cat <<'YAML' >job.yaml
apiVersion: tessera.io/v1
kind: Job
metadata: {name: hello}
spec:
  tasks:
  - name: main
    command: ["sh", "-c", "echo hello from $CUDA_VISIBLE_DEVICES"]
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
"$TESSERA" apply -f job.yaml >/dev/null
wait_phase "$TESSERA" hello Succeeded
for _ in $(seq 100); do
  log=$("$TESSERA" logs hello)
  [ -n "$log" ] && break
  sleep 0.05
done
uuid=$("$TESSERA" get job hello -o json | grep -o '"uuid": "GPU-[^"]*"' | head -1 | cut -d'"' -f4)
[ "$log" = "hello from $uuid" ] || fail "logs: '$log', bound to $uuid"

# tessera exec: a command in a running pod's environment, its output and exit code back.
cat <<'YAML' >sleeper.yaml
apiVersion: tessera.io/v1
kind: Job
metadata: {name: sleeper}
spec:
  tasks:
  - name: main
    command: ["sleep", "302"]
    env: {FOO: bar}
YAML
"$TESSERA" apply -f sleeper.yaml >/dev/null
for _ in $(seq 200); do
  "$TESSERA" get job sleeper -o json | grep -q '"phase": "Running"' && break
  sleep 0.05
done
code=0
out=$("$TESSERA" exec sleeper -- sh -c 'echo $FOO $TESSERA_POD; echo oops >&2; exit 4' 2>exec.err) ||
  code=$?
[ "$code" = 4 ] || fail "exec exit code: $code"
[ "$out" = "bar main-0" ] || fail "exec output: '$out'"
[ "$(cat exec.err)" = oops ] || fail "exec stderr: $(cat exec.err)"
"$TESSERA" exec sleeper -p main-3 -- true 2>exec.err && fail "exec into a pod that is not there"
grep -q "main-3 is not a pod of Job default/sleeper (its pods: main-0)" exec.err ||
  fail "exec error: $(cat exec.err)"
"$TESSERA" exec hello -- true 2>exec.err && fail "exec into a finished job"
grep -q "has no running pod" exec.err || fail "exec error: $(cat exec.err)"
"$TESSERA" delete job sleeper >/dev/null

# A job of two pods: each knows where to meet the other (MASTER_ADDR is dev's node, the port
# the first reserved there), its rank, and the hosts.
cat <<'YAML' >ddp.yaml
apiVersion: tessera.io/v1
kind: Job
metadata: {name: ddp}
spec:
  tasks:
  - name: worker
    replicas: 2
    command: ["sh", "-c", "echo rank=$RANK/$WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT hosts=$VC_WORKER_HOSTS; cat $TESSERA_HOSTFILE"]
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
"$TESSERA" apply -f ddp.yaml >/dev/null
wait_phase "$TESSERA" ddp Succeeded
for _ in $(seq 100); do
  log=$("$TESSERA" logs ddp)
  [ "$(grep -c slots <<<"$log")" = 2 ] && break
  sleep 0.05
done
grep -q "\[worker-0\] rank=0/2 at 127.0.0.1:29500 hosts=127.0.0.1,127.0.0.1" <<<"$log" ||
  fail "rank 0: $log"
grep -q "\[worker-1\] rank=1/2 at 127.0.0.1:29500" <<<"$log" || fail "rank 1: $log"
grep -q "\[worker-1\] 127.0.0.1 slots=2" <<<"$log" || fail "hostfile: $log"

# Kubeflow's PyTorchJob: the master is rank 0 and MASTER_ADDR; the worker rank 1.
cat <<'YAML' >pytorch.yaml
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, command: ["sh", "-c", "echo rank=$RANK/$WORLD_SIZE"]}]
    Worker:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, command: ["sh", "-c", "echo rank=$RANK/$WORLD_SIZE"]}]
YAML
"$TESSERA" apply -f pytorch.yaml >/dev/null
for _ in $(seq 200); do
  log=$("$TESSERA" logs pt 2>/dev/null || true)
  [ "$(grep -c rank= <<<"$log")" = 2 ] && break
  sleep 0.05
done
grep -q "\[master-0\] rank=0/2" <<<"$log" || fail "master: $log"
grep -q "\[worker-0\] rank=1/2" <<<"$log" || fail "worker: $log"

# Kubeflow's TFJob: every pod gets TF_CONFIG (each server at its own port); the job completes
# with its chief, and the parameter server, which never exits, is stopped then.
cat <<'YAML' >tf.yaml
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    Chief:
      template:
        spec:
          containers: [{name: tensorflow, command: ["sh", "-c", "sleep 1; echo $TF_CONFIG"]}]
    PS:
      template:
        spec:
          containers: [{name: tensorflow, command: ["sleep", "309"]}]
YAML
"$TESSERA" apply -f tf.yaml >/dev/null
wait_phase "$TESSERA" tf Succeeded
for _ in $(seq 100); do
  log=$("$TESSERA" logs tf -p chief-0)
  [ -n "$log" ] && break
  sleep 0.05
done
grep -q '"cluster":{"chief":\["127.0.0.1:[0-9]*"\],"ps":\["127.0.0.1:[0-9]*"\]}' <<<"$log" ||
  fail "TF_CONFIG: $log"
grep -q '"task":{"index":0,"type":"chief"}' <<<"$log" || fail "TF_CONFIG task: $log"
[ "$(grep -o '127.0.0.1:[0-9]*' <<<"$log" | sort -u | wc -l)" = 2 ] || fail "one port for two: $log"
for _ in $(seq 200); do pgrep -f "sleep 309" >/dev/null || break; sleep 0.05; done
pgrep -f "sleep 309" >/dev/null && fail "the parameter server still runs"
# An Indexed array (Kubernetes' batch/v1 form): 20 tasks, 4 at a time, each with its index.
cat <<'YAML' >array.yaml
apiVersion: batch/v1
kind: Job
metadata: {name: arr}
spec:
  completions: 20
  parallelism: 4
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        command: ["sh", "-c", "echo index=$JOB_COMPLETION_INDEX"]
        resources: {limits: {nvidia.com/gpu: 1}}
YAML
"$TESSERA" apply -f array.yaml >/dev/null
wait_phase "$TESSERA" arr Succeeded
for i in 0 7 19; do
  for _ in $(seq 100); do
    log=$("$TESSERA" logs arr --pod main-$i)
    [ -n "$log" ] && break
    sleep 0.05
  done
  [ "$log" = "index=$i" ] || fail "array task $i logged '$log'"
done
"$TESSERA" get jobs | grep -Eq '^arr +.* Succeeded +20/20 ' || fail "progress: $("$TESSERA" get jobs)"
out=$("$TESSERA" describe job arr)
grep -q "^Completed Indexes: 0-19$" <<<"$out" || fail "describe: $out"
grep -q "^Pods Statuses: 0 Active / 20 Succeeded / 0 Failed$" <<<"$out" || fail "describe: $out"

# A dev whose node's agent cannot run stops with it, saying why, rather than serving a cluster
# without its node (work would wait forever: "no nodes in the cluster"). As root, tasks run as
# users of their own, who cannot pass through a private directory.
if [ "$(id -u)" = 0 ]; then
  mkdir -m 700 "$WORK/private"
  rc=0
  (cd "$WORK/private" && timeout 30 "$TESSERA" dev --listen 127.0.0.1:0 --fake-gpus 1xH100-80GB \
    --container-runtime none --data-dir "$WORK/private/state") >"$WORK/private.out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "dev with an agent that cannot run: exit $rc: $(cat "$WORK/private.out")"
  grep -q "cannot pass through $WORK/private" "$WORK/private.out" ||
    fail "dev did not say why its agent stopped: $(cat "$WORK/private.out")"
else
  echo "dev_test: not root: the agent's work directory check (a root-only case) is not run"
fi

echo "dev_test: ok"
