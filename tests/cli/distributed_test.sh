#!/usr/bin/env bash
# Distributed training on a dev cluster of two nodes (dev's own agent and a second one joined to
# it): a 2-worker Kubeflow PyTorchJob whose ranks, one per node, meet through the rendezvous
# Tessera gives them and agree on a gloo all_reduce, with Debian's python3-torch.
set -euo pipefail
TESSERA=$1
TEST_NAME=distributed
source "$(dirname "$0")/dev_env.sh"
PYTHON=/usr/bin/python3
"$PYTHON" -c "import torch.distributed" || fail "Debian's python3-torch is not installed"

start_dev "$TESSERA" --fake-gpus 8xH100-80GB --container-runtime none
server=$(sed -n 's/^server: //p' "$HOME/.tessera/config")
ca=$(sed -n 's/^ca: //p' "$HOME/.tessera/config")
(umask 077 && "$TESSERA" token create --agent >"$WORK/join.token")
AGENT_PID=
trap '[ -z "$AGENT_PID" ] || kill "$AGENT_PID" 2>/dev/null || true; cleanup' EXIT
"$TESSERA" agent --server "$server" --ca-file "$ca" --join-token-file "$WORK/join.token" \
  --name second --advertise-address 127.0.0.1 --fake-gpus 8xH100-80GB \
  --work-dir "$WORK/second" --container-runtime none --cgroup-root "" >"$WORK/second.out" 2>&1 &
AGENT_PID=$!
for _ in $(seq 200); do "$TESSERA" get nodes 2>/dev/null | grep -q "^second" && break; sleep 0.05; done
"$TESSERA" get nodes | grep -q "^second" || fail "second agent did not join: $(cat "$WORK/second.out")"

cat <<'PY' >"$WORK/allreduce.py"
import torch
import torch.distributed as dist

dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from Tessera
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"rank {dist.get_rank()}/{dist.get_world_size()} sum {int(t.item())}", flush=True)
dist.destroy_process_group()
PY
# Each worker takes a whole node's 8 GPUs, so the two ranks run on the two nodes.
cat <<YAML >allreduce.yaml
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: allreduce}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            command: ["$PYTHON", "$WORK/allreduce.py"]
            resources: {limits: {nvidia.com/gpu: 8}}
YAML
"$TESSERA" apply -f allreduce.yaml >/dev/null
wait_phase "$TESSERA" allreduce Admitted
job=$("$TESSERA" get job allreduce -o json)
grep -q '"node": "dev"' <<<"$job" && grep -q '"node": "second"' <<<"$job" ||
  fail "the ranks are not on both nodes: $job"
for _ in $(seq 600); do
  "$TESSERA" get job allreduce -o json | grep -q '"phase": "\(Succeeded\|Failed\)"' && break
  sleep 0.05
done
for _ in $(seq 100); do
  log=$("$TESSERA" logs allreduce)
  [ "$(grep -c " sum " <<<"$log")" = 2 ] && break
  sleep 0.1
done
grep -q "\[worker-0\] rank 0/2 sum 3" <<<"$log" || fail "rank 0: $log"
grep -q "\[worker-1\] rank 1/2 sum 3" <<<"$log" || fail "rank 1: $log"
"$TESSERA" get job allreduce -o json | grep -q '"phase": "Succeeded"' ||
  fail "not Succeeded: $("$TESSERA" get job allreduce -o json)"
echo "distributed_test: ok"
