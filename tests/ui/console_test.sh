#!/usr/bin/env bash
# The web console in Debian's Chromium, headless, against `tessera dev` (console_test.py drives
# it through chromium-driver and Selenium), with seeds 01 and 03 placed among jobs of its own.
# Screenshots of each view go to $2.
# Usage: console_test.sh TESSERA SCREENSHOT_DIR SEEDS
TEST_NAME=console
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../cli/dev_env.sh"
TESSERA=$1
SHOTS=$2
SEEDS=$3
mkdir -p "$SHOTS"
trap 'pkill -f "sleep 311" || true; cleanup' EXIT
command -v chromium >/dev/null && command -v chromedriver >/dev/null ||
  fail "chromium and chromium-driver are not installed (make deps installs them)"

# Sixteen simulated H100s: GPU 4 cut into seven MIG slices, GPU 5 four time-slice replicas,
# GPU 6 shared by fractions; the others whole. The seeds' images run through a stand-in
# runtime that records its calls and sleeps (they cannot be pulled here).
mkdir -p "$WORK/bin"
cp "$HERE/../cli/recording_runtime.sh" "$WORK/bin/podman"
start_dev "$TESSERA" --fake-gpus 16xH100-80GB --data-dir "$WORK/state" \
  --container-runtime "$WORK/bin/podman"
# The tessera commands read the address, token and CA from the config dev wrote.
addr=$(sed -n 's/^server: //p' "$HOME/.tessera/config")
admin_token=$(sed -n 's/^token: //p' "$HOME/.tessera/config")
[ -n "$addr" ] && [ -n "$admin_token" ] || fail "dev wrote no config"
case $addr in http://* | https://*) ;; *) addr=https://$addr ;; esac
cat >"$WORK/cluster.yaml" <<'YAML'
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: mig-4}
spec: {nodeSelector: {tessera.io/dev: "true"}, gpus: ["4"], mig: {layout: {1g.10gb: 7}}}
---
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: slices-5}
spec: {nodeSelector: {tessera.io/dev: "true"}, gpus: ["5"], timeSlicing: {replicas: 4, renameByDefault: true}}
---
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: shares-6}
spec: {nodeSelector: {tessera.io/dev: "true"}, gpus: ["6"], shared: {mps: false}}
YAML
"$TESSERA" apply -f "$WORK/cluster.yaml" >/dev/null || fail "sharing configs not applied"
# Kueue's queues in a cohort: team-a-cq borrows from team-b-cq; and a Volcano queue.
cat >"$WORK/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a-cq}
spec:
  namespaceSelector: {}
  cohort: research
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-b-cq}
spec:
  namespaceSelector: {}
  cohort: research
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 2, lendingLimit: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: a, namespace: default}
spec: {clusterQueue: team-a-cq}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: volcano-q}
spec: {weight: 2, reclaimable: true}
YAML
"$TESSERA" apply -f "$WORK/queues.yaml" >/dev/null || fail "queues not applied"
job() {  # job NAME NAMESPACE RESOURCES [COMMAND]
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $2}
spec:
  containers:
  - name: c
    command: [sh, -c, "${4:-sleep 600}"]
    resources: {limits: {$3}}
YAML
}
{
  job trainer default "nvidia.com/gpu: 2" 'i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done'
  echo ---; job infer default "nvidia.com/mig-1g.10gb: 1"
  echo ---; job sliced default "nvidia.com/gpu.shared: 1"
  echo ---; job tenant-job team-a "nvidia.com/gpu: 1"
  # In team-a-cq: the second borrows team-b-cq's GPU.
  for q in qa1 qa2; do
    echo ---; job $q default "nvidia.com/gpu: 1" | sed 's/^metadata: {\(.*\)}$/metadata: {\1, labels: {kueue.x-k8s.io\/queue-name: a}}/'
  done
} >"$WORK/jobs.yaml"
# Seed 03 first (Alibaba cGPU shares of memory, and of memory and compute): an empty shared
# card may also be given whole, and the whole jobs below would be free to take GPU 6.
"$TESSERA" apply -f "$SEEDS/03-cgpu-pods.yaml" >/dev/null || fail "seed 03 not applied"
for j in cgpu-pod cgpu-full-isolation; do wait_phase "$TESSERA" "$j" Admitted; done
"$TESSERA" apply -f "$WORK/jobs.yaml" >/dev/null || fail "jobs not applied"
# Seed 01: two GPUs on a V100 node (its selector, given to dev's node).
kubectl --kubeconfig "$HOME/.tessera/kubeconfig" label node dev accelerator=nvidia-tesla-v100 \
  >/dev/null || fail "node not labelled"
"$TESSERA" apply -f "$SEEDS/01-pod-gpu-training.yaml" >/dev/null || fail "seed 01 not applied"
for j in trainer infer sliced qa1 qa2 gpu-training; do wait_phase "$TESSERA" "$j" Admitted; done
# Two that wait, created in this order (the queue's order after priority): the head never fits
# (sixteen whole cards; three of the node's are shared); the other (nine of 13) waits for room.
job huge default "nvidia.com/gpu: 16" | "$TESSERA" apply -f - >/dev/null || fail "huge not applied"
sleep 0.1
job waiter default "nvidia.com/gpu: 9" | "$TESSERA" apply -f - >/dev/null || fail "waiter not applied"
team_token=$("$TESSERA" token create --namespace team-a) || fail "no namespace token"

/usr/bin/python3 "$HERE/console_test.py" --url "${addr%/}/ui/" \
  --admin-token "$admin_token" --namespace-token "$team_token" --shots "$SHOTS" \
  --kubeconfig "$HOME/.tessera/kubeconfig" --tessera "$TESSERA" || fail "the console test failed"
echo PASS
