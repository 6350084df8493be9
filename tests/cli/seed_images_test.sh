#!/usr/bin/env bash
# The seeds' Pod (01) and Volcano gang (05), with their images, run on tessera dev through the
# container runtime it finds (a stand-in podman that records its calls: the images cannot be
# pulled here): each pod's container gets its image, its GPUs by CDI name and, in the gang, the
# rendezvous of its members; with no runtime, the Pod fails saying which runtimes were looked
# for and how to name one.
set -euo pipefail
TESSERA=$1
SEEDS=$2
TEST_NAME=seedimages
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/dev_env.sh"
mkdir -p "$WORK/bin"
cp "$HERE/recording_runtime.sh" "$WORK/bin/podman"
export KUBECONFIG=$HOME/.tessera/kubeconfig

# Seed 01 asks for a V100 node (nodeSelector accelerator) and 2 GPUs; seed 05 for 4 x 8 GPUs:
# dev's node and two more agents of 16 GPUs each.
PATH="$WORK/bin:$PATH" start_dev "$TESSERA" --fake-gpus 16xV100-32GB
server=$(sed -n 's/^server: //p' "$HOME/.tessera/config")
ca=$(sed -n 's/^ca: //p' "$HOME/.tessera/config")
AGENTS=()
trap 'for p in "${AGENTS[@]}"; do kill "$p" 2>/dev/null || true; done; pkill -f "sleep 311" || true; cleanup' EXIT
for name in second third; do
  (umask 077 && "$TESSERA" token create --agent >"$WORK/$name.token")
  "$TESSERA" agent --server "$server" --ca-file "$ca" --join-token-file "$WORK/$name.token" \
    --name "$name" --advertise-address 127.0.0.1 --fake-gpus 16xV100-32GB \
    --work-dir "$WORK/$name" --container-runtime "$WORK/bin/podman" --cgroup-root "" \
    >"$WORK/$name.out" 2>&1 &
  AGENTS+=($!)
done
for _ in $(seq 200); do [ "$("$TESSERA" get nodes 2>/dev/null | grep -c "^\(dev\|second\|third\) ")" = 3 ] && break; sleep 0.05; done
[ "$("$TESSERA" get nodes | grep -c "^\(dev\|second\|third\) ")" = 3 ] || fail "nodes: $("$TESSERA" get nodes)"
kubectl label node dev accelerator=nvidia-tesla-v100 >/dev/null
"$TESSERA" apply -f "$SEEDS/01-pod-gpu-training.yaml" >/dev/null
"$TESSERA" apply -f "$SEEDS/05-volcano-gang.yaml" >/dev/null
running() {  # running JOB PODS: until PODS pods of JOB run
  for _ in $(seq 200); do
    [ "$("$TESSERA" get job "$1" -o json | grep -c '"phase": "Running"')" = "$2" ] && return 0
    sleep 0.05
  done
  fail "$1: not $2 pods running: $("$TESSERA" get job "$1" -o json)"
}
running gpu-training 1
running pytorch-distributed 4
# A pod runs once its runtime process has started; the stand-in records its call a moment later.
for _ in $(seq 200); do
  [ "$(grep -c "^run --rm --name tessera-default_\(gpu-training\|pytorch-distributed\)_" \
    "$WORK/bin/podman.calls" 2>/dev/null)" -ge 5 ] && break
  sleep 0.05
done
calls=$(cat "$WORK/bin/podman.calls")
pod=$(grep "^run --rm --name tessera-default_gpu-training_trainer-0 " <<<"$calls") ||
  fail "seed 01 not run: $calls"
grep -q " nvcr.io/nvidia/pytorch:23.10-py3$" <<<"$pod" || fail "seed 01 image: $pod"
[ "$(grep -o -- "--device nvidia.com/gpu=GPU-[^ ]*" <<<"$pod" | wc -l)" = 2 ] ||
  fail "seed 01 devices: $pod"
# The pod's own NVIDIA_VISIBLE_DEVICES=all does not reach past its two GPUs.
grep -q -- "-e NVIDIA_VISIBLE_DEVICES=GPU-[^ ,]*,GPU-[^ ]* " <<<"$pod" || fail "seed 01 env: $pod"
grep -q -- "-e NVIDIA_DRIVER_CAPABILITIES=compute,utility " <<<"$pod" || fail "seed 01 env: $pod"
for i in 0 1 2 3; do
  w=$(grep "^run --rm --name tessera-default_pytorch-distributed_worker-$i " <<<"$calls") ||
    fail "seed 05 worker-$i not run: $calls"
  grep -q " pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime python -m torch.distributed.launch --nproc_per_node=8 train.py$" <<<"$w" ||
    fail "seed 05 image and command: $w"
  [ "$(grep -o -- "--device nvidia.com/gpu=" <<<"$w" | wc -l)" = 8 ] || fail "seed 05 devices: $w"
  grep -q -- "-e RANK=$i " <<<"$w" || fail "seed 05 rank: $w"
  grep -q -- "-e WORLD_SIZE=4 " <<<"$w" || fail "seed 05 world: $w"
  grep -q -- "-e MASTER_ADDR=127.0.0.1 " <<<"$w" || fail "seed 05 master: $w"
  grep -q -- "-e VC_WORKER_NUM=4 " <<<"$w" || fail "seed 05 hosts: $w"
done
for p in "${AGENTS[@]}"; do kill "$p" 2>/dev/null || true; done
kill "$DEV_PID"
wait 2>/dev/null || true
DEV_PID=

# No runtime: the Pod fails, and says why and what to do.
rm -rf "$WORK/.tessera"
start_dev "$TESSERA" --fake-gpus 8xV100-32GB --container-runtime none
for _ in $(seq 100); do "$TESSERA" get nodes 2>/dev/null | grep -q "^dev " && break; sleep 0.05; done
kubectl label node dev accelerator=nvidia-tesla-v100 >/dev/null
"$TESSERA" apply -f "$SEEDS/01-pod-gpu-training.yaml" >/dev/null
wait_phase "$TESSERA" gpu-training Failed
out=$("$TESSERA" get job gpu-training -o json)
grep -q "nvcr.io/nvidia/pytorch:23.10-py3" <<<"$out" || fail "which image: $out"
grep -q "none of podman, docker, nerdctl is on the agent's PATH" <<<"$out" || fail "reason: $out"
echo "seed_images_test: ok"
