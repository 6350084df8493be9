#!/usr/bin/env bash
# tessera dev runs a task with an image through the container runtime it finds on PATH (here a
# stand-in podman that records its calls and runs the command), named after the pod, with the
# pod's GPU by CDI name and its CPU and memory; with no runtime, such a task fails saying what
# was looked for and how to name one.
set -euo pipefail
TESSERA=$1
TEST_NAME=devruntime
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/dev_env.sh"
mkdir -p "$WORK/bin"
cp "$HERE/recording_runtime.sh" "$WORK/bin/podman"

job() {  # job NAME: a pod with an image on one GPU, half a CPU and 512 MiB
  cat <<YAML >"$WORK/$1.yaml"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo from \$CUDA_VISIBLE_DEVICES"]
    resources: {limits: {nvidia.com/gpu: 1, cpu: 500m, memory: 512Mi}}
YAML
  "$TESSERA" apply -f "$WORK/$1.yaml" >/dev/null
}

PATH="$WORK/bin:$PATH" start_dev "$TESSERA" --fake-gpus 1xA100-80GB
grep -q "container runtime: $WORK/bin/podman" "$WORK/dev.out" ||
  fail "runtime not found on PATH: $(cat "$WORK/dev.out")"
job boxed
wait_phase "$TESSERA" boxed Succeeded
calls=$(cat "$WORK/bin/podman.calls")
uuid=$("$TESSERA" get job boxed -o json | grep -o '"uuid": "GPU-[^"]*"' | head -1 | cut -d'"' -f4)
grep -q "^run --rm --name tessera-default_boxed_main-0 " <<<"$calls" || fail "name: $calls"
grep -q -- "--device nvidia.com/gpu=$uuid" <<<"$calls" || fail "device: $calls"
grep -q -- "--cpus=0.500 --memory=512m" <<<"$calls" || fail "limits: $calls"
for _ in $(seq 100); do
  log=$("$TESSERA" logs boxed)
  [ -n "$log" ] && break
  sleep 0.05
done
[ "$log" = "from $uuid" ] || fail "logs: '$log'"
# tessera exec in a running container: through the runtime's exec, in the pod's container.
cat <<YAML >"$WORK/long.yaml"
apiVersion: v1
kind: Pod
metadata: {name: long}
spec:
  containers:
  - {name: main, image: busybox, command: ["sleep", "303"]}
YAML
"$TESSERA" apply -f "$WORK/long.yaml" >/dev/null
for _ in $(seq 200); do
  "$TESSERA" get job long -o json | grep -q '"phase": "Running"' && break
  sleep 0.05
done
code=0
out=$("$TESSERA" exec long -- sh -c 'echo inside; exit 5') || code=$?
[ "$code" = 5 ] || fail "exec exit code: $code"
[ "$out" = inside ] || fail "exec output: '$out'"
grep -q "^exec tessera-default_long_main-0 sh -c echo inside; exit 5$" "$WORK/bin/podman.calls" ||
  fail "exec call: $(cat "$WORK/bin/podman.calls")"
"$TESSERA" delete job long >/dev/null
kill "$DEV_PID"
wait "$DEV_PID" 2>/dev/null || true
DEV_PID=

# None: the task fails, and says why.
start_dev "$TESSERA" --fake-gpus 1xA100-80GB --container-runtime none
grep -q "no container runtime (looked for podman, docker, nerdctl on PATH)" "$WORK/dev.out" ||
  fail "no notice: $(cat "$WORK/dev.out")"
job bare
wait_phase "$TESSERA" bare Failed
out=$("$TESSERA" get job bare -o json)
grep -q "none of podman, docker, nerdctl is on the agent's PATH" <<<"$out" || fail "reason: $out"
grep -q "container-runtime" <<<"$out" || fail "how to name one: $out"
echo "dev_runtime_test: ok"
