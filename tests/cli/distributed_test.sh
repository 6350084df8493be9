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
# Admitted, or already ended: two ranks on an idle machine can finish within a second, between
# two looks.
for _ in $(seq 200); do
  case $(job_phase "$TESSERA" allreduce) in Admitted | Succeeded | Failed) break ;; esac
  sleep 0.05
done
case $(job_phase "$TESSERA" allreduce) in
  Admitted | Succeeded | Failed) ;;
  *) fail "allreduce was never admitted: $("$TESSERA" get job allreduce -o json)" ;;
esac
job=$("$TESSERA" get job allreduce -o json)
grep -q '"node": "dev"' <<<"$job" && grep -q '"node": "second"' <<<"$job" ||
  fail "the ranks are not on both nodes: $job"
for _ in $(seq 1800); do
  case $(job_phase "$TESSERA" allreduce) in Succeeded | Failed) break ;; esac
  sleep 0.05
done
for _ in $(seq 100); do
  log=$("$TESSERA" logs allreduce)
  [ "$(grep -c " sum " <<<"$log")" = 2 ] && break
  sleep 0.1
done
grep -q "\[worker-0\] rank 0/2 sum 3" <<<"$log" || fail "rank 0: $log"
grep -q "\[worker-1\] rank 1/2 sum 3" <<<"$log" || fail "rank 1: $log"
[ "$(job_phase "$TESSERA" allreduce)" = Succeeded ] ||
  fail "not Succeeded: $("$TESSERA" get job allreduce -o json)"

# Kubeflow's MPIJob: the launcher's mpirun (Debian's openmpi-bin) starts one rank in each worker
# pod, on both nodes, through the rsh agent Tessera gives it (tessera exec with a token for this
# job only); the job ends with the launcher and the workers stop. Both agents advertise
# 127.0.0.1, so Open MPI's daemons are told to meet on the loopback interface, not on whatever
# other interface this machine has (on a busy machine a contact address there can stall them).
command -v mpirun >/dev/null || fail "Debian's openmpi-bin is not installed"
cat <<'YAML' >mpi.yaml
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: hello-mpi}
spec:
  slotsPerWorker: 1
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            env:
            - {name: OMPI_MCA_oob_tcp_if_include, value: lo}
            - {name: OMPI_MCA_btl_tcp_if_include, value: lo}
            command: ["mpirun", "--allow-run-as-root", "-np", "2", "sh", "-c",
                      "echo rank $OMPI_COMM_WORLD_RANK/$OMPI_COMM_WORLD_SIZE in $TESSERA_POD on $TESSERA_NODE"]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: worker
            resources: {limits: {nvidia.com/gpu: 8}}
YAML
"$TESSERA" apply -f mpi.yaml >apply.out 2>&1 || fail "MPIJob refused: $(cat apply.out)"
grep -q "cleanPodPolicy" apply.out || fail "no warning for cleanPodPolicy: $(cat apply.out)"
for _ in $(seq 1800); do
  case $(job_phase "$TESSERA" hello-mpi) in Succeeded | Failed) break ;; esac
  sleep 0.05
done
for _ in $(seq 100); do
  log=$("$TESSERA" logs hello-mpi -p launcher-0)
  [ "$(grep -c "^rank " <<<"$log")" = 2 ] && break
  sleep 0.1
done
job=$("$TESSERA" get job hello-mpi -o json)
[ "$(job_phase "$TESSERA" hello-mpi)" = Succeeded ] ||
  fail "MPIJob not Succeeded: $job; launcher: $log; dev: $(tail -30 "$WORK/dev.out"); second agent: $(tail -30 "$WORK/second.out"); processes: $(ps -eo pid,ppid,etimes,args | grep -E 'orted|mpirun|prterun|tessera exec|rsh' | grep -v grep)"
grep -q "^rank 0/2 in worker-[01] on \(dev\|second\)$" <<<"$log" || fail "rank 0: $log"
grep -q "^rank 1/2 in worker-[01] on \(dev\|second\)$" <<<"$log" || fail "rank 1: $log"
[ "$(grep -o " on [a-z]*" <<<"$log" | sort -u | wc -l)" = 2 ] || fail "ranks not on both nodes: $log"
# The workers (sleep 365d) stop once the launcher is done.
for _ in $(seq 200); do pgrep -f "sleep 365d" >/dev/null || break; sleep 0.05; done
pgrep -f "sleep 365d" >/dev/null && fail "the workers still run"
echo "distributed_test: ok"
