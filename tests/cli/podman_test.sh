#!/usr/bin/env bash
# tessera dev with real podman (Debian's package), where this machine lets podman run
# containers: a local image made from Debian's busybox-static (no registry), a Pod with an
# image whose container sees the environment and the volume it was given, its output in
# `tessera logs`, its exit code in the Job, and `tessera exec` inside it. Exits 77 (skipped) with
# the reason when podman is missing or cannot run a container here.
set -euo pipefail
TESSERA=$1
TEST_NAME=podman
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/dev_env.sh"
skip() { echo "SKIPPED: $*"; exit 77; }
command -v podman >/dev/null || skip "podman is not installed"
[ -x /bin/busybox ] || skip "busybox-static is not installed"
IMAGE=localhost/tessera-busybox:test
mkdir -p "$WORK/rootfs/bin" "$WORK/rootfs/tmp"
cp /bin/busybox "$WORK/rootfs/bin/"
for c in sh echo cat env ls sleep id pwd test; do ln -s busybox "$WORK/rootfs/bin/$c"; done
tar -C "$WORK/rootfs" -cf "$WORK/rootfs.tar" .
podman import --quiet "$WORK/rootfs.tar" "$IMAGE" >/dev/null
trap 'podman rmi -f "$IMAGE" >/dev/null 2>&1 || true; cleanup' EXIT
probe=$(podman run --rm "$IMAGE" /bin/echo ok 2>&1) || skip "podman cannot run a container here: $probe"
[ "$probe" = ok ] || skip "podman's container said: $probe"

start_dev "$TESSERA" --fake-gpus 1xT4 --container-runtime podman
cat <<YAML >"$WORK/boxed.yaml"
apiVersion: v1
kind: Pod
metadata: {name: boxed}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: $IMAGE
    workingDir: /data
    command: ["sh", "-c", "echo \$GREETING from \$TESSERA_POD in \$(pwd); echo kept >/data/f; cat /data/f; exit 3"]
    env: [{name: GREETING, value: hello}]
    volumeMounts: [{name: scratch, mountPath: /data}]
  volumes: [{name: scratch, emptyDir: {}}]
YAML
"$TESSERA" apply -f "$WORK/boxed.yaml" >/dev/null
wait_phase "$TESSERA" boxed Failed
out=$("$TESSERA" get job boxed -o json)
grep -q '"exitCode": 3' <<<"$out" || fail "exit code: $out"
for _ in $(seq 100); do
  log=$("$TESSERA" logs boxed)
  [ -n "$log" ] && break
  sleep 0.05
done
[ "$log" = "hello from main-0 in /data
kept" ] || fail "logs: '$log'"

# exec in a running container.
cat <<YAML >"$WORK/long.yaml"
apiVersion: v1
kind: Pod
metadata: {name: long}
spec:
  containers:
  - {name: main, image: $IMAGE, command: ["sleep", "304"], env: [{name: X, value: "42"}]}
YAML
"$TESSERA" apply -f "$WORK/long.yaml" >/dev/null
for _ in $(seq 200); do
  "$TESSERA" get job long -o json | grep -q '"phase": "Running"' && break
  sleep 0.05
done
out=$("$TESSERA" exec long --wait 30 -- sh -c 'echo X=$X') || fail "exec: $out"
[ "$out" = "X=42" ] || fail "exec output: '$out'"
"$TESSERA" delete job long >/dev/null
echo "podman_test: ok"
