#!/usr/bin/env bash
# tessera dev holds a fractional GPU share to its memory by default: a job granted 4096 MiB of a
# card runs a CUDA program (share_probe, on the fake driver) that is refused past 4096 MiB and
# sees 4096 MiB as the card's size; a whole card's job is not limited.
set -euo pipefail
TESSERA=$1
PROBE=$2
FAKE_CUDA_DIR=$3
TEST_NAME=share
source "$(dirname "$0")/dev_env.sh"
start_dev "$TESSERA" --container-runtime none
grep -q "fractional GPU shares: held to their memory by .*libtessera-share.so" "$WORK/dev.out" ||
  fail "no interposer notice: $(cat "$WORK/dev.out")"
for _ in $(seq 100); do "$TESSERA" get nodes 2>/dev/null | grep -q "^dev" && break; sleep 0.05; done

cat <<YAML >share.yaml
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: dev-shared}
spec: {nodeSelector: {tessera.io/dev: "true"}, gpus: ["0"], shared: {}}
---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: shared}
spec:
  tasks:
  - name: main
    command: ["$PROBE", "proc", "init", "alloc", "3072", "alloc", "2048", "info"]
    env: {LD_LIBRARY_PATH: "$FAKE_CUDA_DIR"}
    resources: {limits: {nvidia.com/gpumem: 4096}}
---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: whole}
spec:
  tasks:
  - name: main
    command: ["$PROBE", "proc", "init", "alloc", "3072", "alloc", "2048", "info"]
    env: {LD_LIBRARY_PATH: "$FAKE_CUDA_DIR"}
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
"$TESSERA" apply -f share.yaml >/dev/null
wait_phase "$TESSERA" shared Succeeded
wait_phase "$TESSERA" whole Succeeded
logs() {
  for _ in $(seq 100); do
    log=$("$TESSERA" logs "$1")
    [ -n "$log" ] && break
    sleep 0.05
  done
  echo "$log" | tr '\n' ' '
}
got=$(logs shared)
[ "$got" = "init 0 alloc 0 alloc 2 info 0 free=1024 total=4096 " ] ||
  fail "the share's program: '$got' ($("$TESSERA" get job shared -o json))"
# Counted in the pod's region, in a directory any container user can write.
region_dir=$(find "$WORK/.tessera" -type d -name .tessera-share | head -1)
[ -n "$region_dir" ] && [ -s "$region_dir/region" ] || fail "no region: $(find "$WORK/.tessera" | grep share)"
[ "$(stat -c %a "$region_dir")" = 1777 ] || fail "region directory mode: $(stat -c %a "$region_dir")"
# Its whole output (the agent keeps its own copy only until the server has it).
full=$("$TESSERA" logs shared)
grep -q "tessera-share:" <<<"$full" && fail "the interposer complained: $full"
got=$(logs whole)
[ "$got" = "init 0 alloc 0 alloc 0 info 0 free=76800 total=81920 " ] ||
  fail "the whole card's program: '$got'"
echo PASS
