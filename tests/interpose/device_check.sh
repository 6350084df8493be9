#!/usr/bin/env bash
# The share interposer on a real GPU: share_probe reaches the real driver (libcuda.so.1) as
# programs do, under a 4 GiB share, and prints what each call returned. Run from the repository
# root on a machine with an NVIDIA GPU, after a build:
#   bash tests/interpose/device_check.sh [build dir] [memory|compute|dev|stops]  (default: all)
# dev: `tessera dev` on the machine's GPUs runs a Job granted 4096 MiB of card 0, whose
# GpuSharingConfig asks for MPS.
# It changes no GPU setting. Results are recorded in docs/ISOLATION.md.
set -u
build=${1:-build}
part=${2:-all}
probe=$build/tests/share_probe
lib=$(readlink -f "$build/libtessera-share.so")
dir=$(mktemp -d)
# Tasks of `tessera dev` run as users of their own: they pass through it (docs/SECURITY.md).
chmod 711 "$dir"
trap 'rm -rf "$dir"' EXIT
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
echo "== $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
echo "== $(ldd --version | head -1)"
share() {  # share <region> <probe args...>: a process of a 4 GiB share counted in <region>
  local region=$1
  shift
  env LD_PRELOAD="$lib" TESSERA_SHARE_MEMORY_MIB=4096 TESSERA_SHARE_REGION="$dir/$region" \
    TESSERA_GPU_UUIDS="$uuid" CUDA_VISIBLE_DEVICES="$uuid" "$probe" "$@"
}
compute_check() {
  if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
    echo "== no CUDA-enabled PyTorch here: no compute check"
    return
  fi
  cat > "$dir/matmul.py" << 'PY'
import resource, sys, time, torch
a = torch.randn(8192, 8192, device="cuda")
b = torch.randn(8192, 8192, device="cuda")
for _ in range(3):
    c = a @ b
torch.cuda.synchronize()
n, start = 0, time.time()
while time.time() - start < float(sys.argv[1]):
    for _ in range(5):
        c = a @ b
    torch.cuda.synchronize()
    n += 5
wall = time.time() - start
u = resource.getrusage(resource.RUSAGE_SELF)
print(f"matmuls/s {n / wall:.1f} over {wall:.1f} s, CPU {u.ru_utime + u.ru_stime:.1f} s in all")
PY
  echo "== PyTorch 8192x8192 matmuls, back to back"
  echo "-- the whole card: $(CUDA_VISIBLE_DEVICES="$uuid" python3 "$dir/matmul.py" 10)"
  for percent in 30 70; do
    echo "-- a ${percent}% share: $(env LD_PRELOAD="$lib" TESSERA_SHARE_COMPUTE_PERCENT=$percent \
      TESSERA_SHARE_REGION="$dir/compute$percent" TESSERA_GPU_UUIDS="$uuid" \
      CUDA_VISIBLE_DEVICES="$uuid" python3 "$dir/matmul.py" 10)"
  done
}
# Copies a task's user can reach wherever the build is (the probe, the interposer beside
# tessera, and the monitor) in $dir/bin; sets tessera and probe_abs.
copy_binaries() {
  mkdir -p "$dir/bin" && chmod 755 "$dir/bin"
  cp "$build/tessera" "$build/tessera-monitor" "$lib" "$probe" "$dir/bin/"
  tessera=$dir/bin/tessera
  probe_abs=$dir/bin/share_probe
}
# In the current directory (its HOME set): `tessera dev` on this machine's GPUs, its pid in
# $dev, once its node is registered.
start_dev() {
  "$tessera" dev --listen 127.0.0.1:0 --container-runtime none > dev.out 2>&1 &
  dev=$!
  for _ in $(seq 200); do grep -q "listening on" dev.out && break; sleep 0.1; done
  for _ in $(seq 100); do "$tessera" get nodes 2> /dev/null | grep -q "^dev" && break; sleep 0.1; done
}
dev_check() {
  local tessera probe_abs work
  copy_binaries
  work=$dir/dev
  mkdir -p "$work/home"
  (
    cd "$work" || exit 1
    export HOME=$work/home
    start_dev
    cat > share.yaml << YAML
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: dev-mps}
spec: {nodeSelector: {tessera.io/dev: "true"}, gpus: ["0"], shared: {mps: true}}
---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: shared}
spec:
  tasks:
  - name: main
    command: ["sh", "-c", "echo uid=\$(id -u) isolation=\$TESSERA_SHARE_ISOLATION; exec $probe_abs proc init info alloc 3072 alloc 2048 info"]
    resources: {limits: {nvidia.com/gpumem: 4096}}
YAML
    "$tessera" apply -f share.yaml
    for _ in $(seq 300); do
      "$tessera" get job shared -o json | grep -q '"phase": "Succeeded"' && break
      sleep 0.1
    done
    echo "== tessera dev on this machine's GPUs: what it said"
    grep -E "GPU|shares|MPS|uid|cgroup" dev.out
    echo "== the Job's devices and output"
    "$tessera" get job shared -o json | grep -E '"(kind|uuid|memoryMiB|mps|phase)"'
    "$tessera" logs shared
    kill "$dev"
    wait "$dev" 2> /dev/null
  )
}
# stops: on the machine's cgroup v2 hierarchy, a pod gets its CPU and memory limits, and a
# process it starts in a session of its own (setsid) is gone once its Job is deleted.
stops_check() {
  local tessera probe_abs work marker
  copy_binaries
  work=$dir/stops
  marker=4242.$$
  mkdir -p "$work/home"
  (
    cd "$work" || exit 1
    export HOME=$work/home
    start_dev
    cat > escape.yaml << YAML
apiVersion: tessera.io/v1
kind: Job
metadata: {name: escape}
spec:
  tasks:
  - name: main
    command: ["sh", "-c", "setsid sh -c 'trap \"\" TERM; exec sleep $marker' & exec sleep 600"]
    resources: {limits: {cpu: "2", memory: 1Gi}}
YAML
    "$tessera" apply -f escape.yaml
    for _ in $(seq 100); do pgrep -f "^sleep $marker" > /dev/null && break; sleep 0.1; done
    echo "== tessera dev: $(grep -E "cgroup|uid" dev.out | tr '\n' ' ')"
    echo "== the pod's state: $("$tessera" get job escape -o json | grep -E '"limits": "')"
    pid=$(pgrep -f "^sleep $marker" | head -1)
    echo "== escaped: pid $pid, user $(ps -o user= -p "$pid"), session $(ps -o sid= -p "$pid"), cgroup $(cat /proc/"$pid"/cgroup)"
    group=$(sed -n 's/^0:://p' /proc/"$pid"/cgroup)
    echo "== its group: cpu.max $(cat /sys/fs/cgroup"$group"/cpu.max 2>&1), memory.max $(cat /sys/fs/cgroup"$group"/memory.max 2>&1)"
    "$tessera" delete job escape
    for _ in $(seq 200); do pgrep -f "^sleep $marker" > /dev/null || break; sleep 0.1; done
    if pgrep -f "^sleep $marker" > /dev/null; then echo "== FAIL: the escaped process outlived the delete"; else echo "== after the delete: no process of the pod is left"; fi
    kill "$dev"
    wait "$dev" 2> /dev/null
  )
}
case "$part" in
  stops) stops_check; exit 0 ;;
  compute) compute_check; exit 0 ;;
  dev) dev_check; exit 0 ;;
esac
echo "== without the interposer"
CUDA_VISIBLE_DEVICES="$uuid" "$probe" proc init info total nvml libnvidia-ml.so.1
for how in proc proc11 dlsym; do
  echo "== 4 GiB share, entry points by $how"
  share "$how" "$how" init info total nvml libnvidia-ml.so.1 alloc 3072 alloc 2048 info free 0 \
    alloc 2048 alloc 2048 alloc 1 info nvml libnvidia-ml.so.1
done
echo "== every allocation path: 3 GiB by it, then 2 GiB refused, then the path's free, then 2 GiB"
for path in "alloc 3072" "managed 3072" "async 3072" "vmm 3072" "pitch 1048576 3072" \
  "array 65536 12288" "array3d 1024 1024 768" "mipmap 32768 16384 4"; do
  # shellcheck disable=SC2086
  echo "-- $path: $(share "path-${path%% *}" proc init $path alloc 2048 free 0 alloc 2048 | tr '\n' ' ')"
done
echo "== a thread with no context, then the main thread"
share thread proc init thread alloc 4096 thread info alloc 4096
echo "== two processes of one share; the first killed mid-run"
mkfifo "$dir/hold"
share two proc init alloc 3072 ready wait < "$dir/hold" > "$dir/first.out" &
first=$!
exec 7> "$dir/hold"
for _ in $(seq 100); do grep -q ready "$dir/first.out" && break; sleep 0.1; done
echo "-- first: $(tr '\n' ' ' < "$dir/first.out")"
echo "-- second, while the first holds 3 GiB: $(share two proc init alloc 2048 alloc 1024 info | tr '\n' ' ')"
kill -9 "$first"
wait "$first" 2> /dev/null
exec 7>&-
echo "-- third, after kill -9 of the first: $(share two proc init alloc 3072 info | tr '\n' ' ')"
echo "== IPC: memory of the share itself, and of another share"
mkfifo "$dir/hold2"
share ipc proc init alloc 1024 export 0 ready wait < "$dir/hold2" > "$dir/exporter.out" &
exporter=$!
exec 8> "$dir/hold2"
for _ in $(seq 100); do grep -q ready "$dir/exporter.out" && break; sleep 0.1; done
handle=$(sed -n 's/^export 0 handle=//p' "$dir/exporter.out")
echo "-- same share: $(share ipc proc init import "$handle" alloc 3072 info | tr '\n' ' ')"
echo "-- other share: $(share other proc init alloc 3584 import "$handle" free 0 import "$handle" info | tr '\n' ' ')"
exec 8>&-
wait "$exporter"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  echo "== PyTorch under a 4 GiB share"
  env LD_PRELOAD="$lib" TESSERA_SHARE_MEMORY_MIB=4096 TESSERA_SHARE_REGION="$dir/torch" \
    TESSERA_GPU_UUIDS="$uuid" CUDA_VISIBLE_DEVICES="$uuid" python3 - << 'PY'
import torch
free, total = torch.cuda.mem_get_info()
print("mem_get_info MiB", free >> 20, total >> 20)
print("total_memory MiB", torch.cuda.get_device_properties(0).total_memory >> 20)
x = torch.empty(3 << 30, dtype=torch.uint8, device="cuda")
try:
    y = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    print("2 GiB more: allocated")
except RuntimeError as e:
    print("2 GiB more: refused:", str(e).splitlines()[0][:160])
PY
else
  echo "== no CUDA-enabled PyTorch here"
fi
if [ "$part" = all ]; then
  compute_check
  dev_check
fi
exit 0
