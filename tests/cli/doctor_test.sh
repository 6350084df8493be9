#!/usr/bin/env bash
# `tessera doctor` on a real server and agent, the GPU faults injected through the fake
# libnvidia-ml.so (the agent's real NVML path): each fault, each Xid action class and each
# queue misconfiguration is reported with its evidence and fix; a job that can never fit and a
# job that ran out of CUDA memory are diagnosed; exit codes say whether anything is critical;
# `doctor --local` reports a driver/library version mismatch.
source "$(dirname "$0")/server_env.sh" "$1"
FAKE_NVML=$2
start_server
expect_exit 0 "$TESSERA" token create --agent
printf '%s\n' "$OUT" >"$WORK/join.token" && chmod 600 "$WORK/join.token"
# GPU 0: double-bit ECC errors, a pending page retirement, one NVLink link down, hardware
# slowdown. GPU 1: a PCIe link at x8 while busy, a process no task holds, another VBIOS. GPU 2:
# a row remap that failed.
cat <<'JSON' >"$WORK/gpus.json"
{"driver": "550.54.15", "nvml": "12.550.54.15",
 "devices": [
  {"uuid": "GPU-d0", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559, "busId": "00000000:18:00.0",
   "ecc": true, "eccUncorrected": 2, "vbios": "96.00.89.00.01", "retiredSbe": 0, "retiredDbe": 1,
   "retirePending": true, "nvlink": ["00000000:2A:00.0", "00000000:2A:00.0"], "nvlinkDown": [1],
   "throttle": 8, "processes": []},
  {"uuid": "GPU-d1", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559, "busId": "00000000:2A:00.0",
   "vbios": "96.00.99.00.01", "pcieGen": 5, "pcieGenMax": 5, "pcieWidth": 8, "pcieWidthMax": 16,
   "util": 95, "pcieRxKBps": 5000000, "processes": [{"pid": 4242, "usedMiB": 3000}]},
  {"uuid": "GPU-d2", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559, "busId": "00000000:3A:00.0",
   "vbios": "96.00.89.00.01", "remappedUncorrectable": 8, "remapFailed": true}]}
JSON
export TESSERA_FAKE_NVML=$WORK/gpus.json TESSERA_FAKE_NVML_XIDS=$WORK/xids
"$TESSERA" agent --nvml-library "$FAKE_NVML" --name gpu-1 --join-token-file "$WORK/join.token" \
  --labels tessera.io/expected-gpus=4 --heartbeat-seconds 1 --work-dir "$WORK/agent" \
  --cgroup-root "" >"$WORK/agent.out" 2>&1 &
AGENT=$!
trap 'kill -9 $AGENT 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 100); do grep -q registered "$WORK/agent.out" && break; sleep 0.05; done
grep -q registered "$WORK/agent.out" || fail "agent: $(cat "$WORK/agent.out")"
await_out '"remappedRows"' "$TESSERA" get node gpu-1 -o json
expect_out '"pcieRxKiBps": 5000000'

# The queues: a Kueue ClusterQueue applied without a namespaceSelector, a LocalQueue pointing
# nowhere, a flavor no node has, and 16 GPUs of quota promised on a node of 3.
cat <<'YAML' >"$WORK/queues.yaml"
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {gpu-pool: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: closed}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: promised}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: default}
spec: {clusterQueue: closed}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lost, namespace: default}
spec: {clusterQueue: nowhere}
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/queues.yaml"

# A pod larger than any node, and a task that runs out of CUDA memory.
cat <<'YAML' >"$WORK/jobs.yaml"
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 6}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: oom}
spec:
  restartPolicy: Never
  containers:
  - name: c
    command: ["sh", "-c", "echo 'RuntimeError: CUDA out of memory. Tried to allocate 20.00 GiB'; exit 1"]
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
expect_exit 0 "$TESSERA" apply -f "$WORK/jobs.yaml"
await_out '"phase": "Failed"' "$TESSERA" get job oom -o json

# Xids of each action class: 13 RESTART_APP, 63 IGNORE, 95 RESET_GPU (GPU 2 quarantined), 79
# RESTART_BM (the node marked for reboot and drained), 48 a workflow (the node is marked already).
printf '0 13\n0 63\n2 95\n' >"$WORK/xids"
await_out '"xid": 95' "$TESSERA" get node gpu-1 -o json
await_out 'gpu-quarantine' "$TESSERA" get node gpu-1 -o json
printf '2 79\n2 48\n' >"$WORK/xids"
await_out '"xid": 48' "$TESSERA" get node gpu-1 -o json
await_out 'reboot' "$TESSERA" get node gpu-1 -o json

# The whole cluster: critical findings, so exit 1.
expect_exit 1 "$TESSERA" doctor -o json
echo "$OUT" >"$WORK/doctor.json"
has() {  # check subject
  /usr/bin/python3 - "$WORK/doctor.json" "$1" "$2" <<'PY' || fail "doctor: no $1 for $2 in $(cat "$WORK/doctor.json")"
import json, sys
found = json.load(open(sys.argv[1]))["findings"]
assert any(f["check"] == sys.argv[2] and f["subject"] == sys.argv[3] and f["fix"] for f in found)
PY
}
has node.gpu-missing node/gpu-1
has node.vbios-mismatch node/gpu-1
has gpu.ecc-uncorrected node/gpu-1/gpu/0
has gpu.retired-pages node/gpu-1/gpu/0
has gpu.nvlink-down node/gpu-1/gpu/0
has gpu.throttled node/gpu-1/gpu/0
has gpu.pcie-degraded node/gpu-1/gpu/1
has gpu.stray-process node/gpu-1/gpu/1
has gpu.row-remap-failed node/gpu-1/gpu/2
has gpu.xid node/gpu-1/gpu/0
has gpu.xid node/gpu-1/gpu/2
has queue.namespace-not-admitted localqueue/default/team
has localqueue.no-queue localqueue/default/lost
has flavor.no-node resourceflavor/a100
has quota.above-capacity resourceflavor/h100
has job.never-fits job/default/big
has gpu.quarantined node/gpu-1/gpu/2
has node.reboot-required node/gpu-1
# The agent runs without --allow-gpu-reset: the reset requested is never carried out.
expect_exit 0 "$TESSERA" get node gpu-1 -o json
if grep -q '"resets"' <<<"$OUT"; then fail "a GPU was reset without --allow-gpu-reset: $OUT"; fi
expect_out '\"resetRequested\":true'
# Each Xid by its catalog action.
for want in "XID 13 (.*): RESTART_APP" "XID 63 (.*): IGNORE" "XID 95 (.*): RESET_GPU" \
  "XID 79 (.*): RESTART_BM" "XID 48 (.*): WORKFLOW"; do
  grep -q "$want" "$WORK/doctor.json" || fail "doctor: no \"$want\""
done

# One node as text; one GPU; a job.
expect_exit 1 "$TESSERA" doctor node/gpu-1
expect_out "CRITICAL  node/gpu-1/gpu/0: GPU 0 (GPU-d0) has uncorrectable (double-bit) ECC errors"
expect_out "fix:      nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER -i 0"
expect_exit 0 "$TESSERA" doctor gpu/gpu-1/1
expect_out "node/gpu-1/gpu/1: GPU 1 (GPU-d1)'s PCIe link runs below the card's maximum"
if grep -q "gpu/0" <<<"$OUT"; then fail "doctor gpu/gpu-1/1 reported GPU 0: $OUT"; fi
expect_exit 1 "$TESSERA" doctor job/big
expect_out "a pod asks for more GPUs than any node has"
expect_out "queue "
expect_exit 0 "$TESSERA" doctor job/oom
expect_out "pod c-0 ran out of GPU memory"
expect_out "Tried to allocate 20.00 GiB"
expect_exit 2 "$TESSERA" doctor pod/x
expect_exit 1 "$TESSERA" doctor node/nope
expect_out 'nodes "nope" not found'

# On the node itself: a driver whose kernel module and library differ.
echo '{"initError": 18, "devices": []}' >"$WORK/mismatch.json"
TESSERA_FAKE_NVML=$WORK/mismatch.json expect_exit 1 "$TESSERA" doctor --local --nvml-library "$FAKE_NVML"
expect_out "NVML and the loaded kernel driver are of different versions"
expect_out "Driver/library version mismatch"
# DCGM's level-1 diagnostics when dcgmi is installed (a stand-in on PATH answering as dcgmi).
mkdir -p "$WORK/bin"
cat <<'SH' >"$WORK/bin/dcgmi"
#!/bin/sh
[ "$*" = "diag -r 1 -j" ] || { echo "unexpected: $*"; exit 2; }
echo '{"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [{"status": "Fail", "gpu_id": "2", "warnings": [{"warning": "Error using CUDA API cudaMalloc"}]}]}]}]}}'
exit 226
SH
chmod +x "$WORK/bin/dcgmi"
PATH="$WORK/bin:$PATH" TESSERA_FAKE_NVML=$WORK/gpus.json expect_exit 1 "$TESSERA" doctor --local \
  --nvml-library "$FAKE_NVML" -o json
expect_out '"gpu.row-remap-failed"'
expect_out '"DCGM diagnostic Hardware/GPU Memory: Fail"'
expect_out 'Error using CUDA API cudaMalloc'
echo "doctor_test: ok"
