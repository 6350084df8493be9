#!/usr/bin/env bash
# kubectl (the one on PATH: Debian's kubernetes-client where the set-up installed it) against
# `tessera dev` through the kubeconfig dev writes: HTTPS with dev's own CA, the admin token,
# discovery, Tessera's kinds in their group, core/v1 Nodes with their GPUs, and the seeds'
# manifests applied, listed, changed and deleted as Kubernetes objects.
set -euo pipefail
TESSERA=$1
TEST_NAME=kubectl
source "$(dirname "$0")/dev_env.sh"
command -v kubectl >/dev/null || fail "kubectl is not installed (scripts/install-deps.sh installs it)"
start_dev "$TESSERA" --fake-gpus 4xA100-80GB --container-runtime none
grep -q "listening on https://" "$WORK/dev.out" || fail "dev did not serve HTTPS: $(cat "$WORK/dev.out")"
export KUBECONFIG=$HOME/.tessera/kubeconfig
[ "$(stat -c %a "$KUBECONFIG")" = 600 ] || fail "kubeconfig is not private"
echo "kubectl: $(kubectl version --client 2>/dev/null | head -1)"

# Waits (5 s at most) until each pod named is Running.
await_running() {
  for pod in "$@"; do
    for _ in $(seq 100); do
      [ "$(kubectl get pod "$pod" -o jsonpath='{.status.phase}' 2>&1)" = Running ] && break
      sleep 0.05
    done
  done
}

out=$(kubectl version 2>&1) || fail "kubectl version: $out"
grep -q "Server Version" <<<"$out" || fail "no server version: $out"

out=$(kubectl api-resources 2>&1) || fail "api-resources: $out"
grep -qE '^nodes +no +v1 +false +Node' <<<"$out" || fail "core nodes not discovered: $out"
grep -qE '^jobs +tessera.io/v1 +true +Job' <<<"$out" || fail "tessera jobs not discovered: $out"
grep -qE '^podgroups +pg +tessera.io/v1 +true +PodGroup' <<<"$out" || fail "podgroups: $out"
grep -qE '^pods +metrics.k8s.io/v1beta1 +true +PodMetrics' <<<"$out" || fail "podmetrics: $out"

# kubectl explain walks into Pods' and Jobs' fields (the issue's case: no field was found), and
# says which fields Tessera does not act on.
out=$(kubectl explain pod.spec.containers 2>&1) || fail "explain pod.spec.containers: $out"
grep -q "FIELD: containers <\[\]Container>" <<<"$out" || fail "explain containers: $out"
grep -qE '^  resources	<ResourceRequirements>' <<<"$out" || fail "explain fields: $out"
out=$(kubectl explain pod.spec.hostNetwork 2>&1) || fail "explain hostNetwork: $out"
grep -q "not acted on" <<<"$out" || fail "explain hostNetwork said: $out"
out=$(kubectl explain job.spec.template.spec.containers.resources.limits 2>&1) ||
  fail "explain job limits: $out"
grep -q "FIELD: limits <map\[string\]Quantity>" <<<"$out" || fail "explain limits: $out"
out=$(kubectl explain vcjob.spec.tasks 2>&1) || fail "explain vcjob.spec.tasks: $out"
grep -q "FIELD: tasks <\[\]TaskSpec>" <<<"$out" || fail "explain vcjob tasks: $out"
out=$(kubectl explain pytorchjob.spec.elasticPolicy.rdzvBackend 2>&1) || fail "explain rdzv: $out"
grep -q "not acted on" <<<"$out" || fail "explain rdzvBackend said: $out"
out=$(kubectl explain mpijob.spec.sshAuthMountPath 2>&1) || fail "explain mpijob: $out"
grep -q "through tessera exec, not ssh" <<<"$out" || fail "explain mpijob said: $out"
out=$(kubectl explain tfjob.spec.tfReplicaSpecs 2>&1) || fail "explain tfjob: $out"
grep -q "FIELD: tfReplicaSpecs <map\[string\]ReplicaSpec>" <<<"$out" || fail "explain tfjob said: $out"
out=$(kubectl explain clusterqueue.spec.admissionChecks 2>&1) || fail "explain cq: $out"
grep -q "not acted on: Tessera has no admission check controllers" <<<"$out" || fail "explain cq said: $out"
# Every served kind is described: Volcano's queues and gangs, Kueue's cohorts and workloads,
# the device plugin's ConfigMaps, PriorityClasses, and Tessera's own kinds.
out=$(kubectl explain podgroup.spec.minResources 2>&1) || fail "explain podgroup: $out"
grep -q "not acted on: a gang's needs are counted from its pods' requests" <<<"$out" ||
  fail "explain podgroup said: $out"
out=$(kubectl explain queues.spec.guarantee --api-version=scheduling.volcano.sh/v1beta1 2>&1) ||
  fail "explain volcano queue: $out"
grep -q "nominal quota" <<<"$out" || fail "explain volcano queue said: $out"
out=$(kubectl explain cohort.spec 2>&1) || fail "explain cohort: $out"
grep -qE '^  parentName	<string>' <<<"$out" || fail "explain cohort said: $out"
out=$(kubectl explain workload.spec.podSets 2>&1) || fail "explain workload: $out"
out=$(kubectl explain configmap.binaryData 2>&1) || fail "explain configmap: $out"
grep -q "not acted on: device-plugin configs are text" <<<"$out" || fail "explain cm said: $out"
out=$(kubectl explain priorityclass.value 2>&1) || fail "explain pc: $out"
out=$(kubectl explain jobs.spec.tasks.resources --api-version=tessera.io/v1 2>&1) ||
  fail "explain tessera job: $out"
grep -q "nvidia.com/gpu.shared" <<<"$out" || fail "explain tessera job said: $out"
out=$(kubectl explain gpusharingconfig.spec.timeSlicing 2>&1) || fail "explain gsc: $out"
out=$(kubectl explain pod.spec.nope 2>&1) && fail "explain nope: $out"
grep -q 'field "nope" does not exist' <<<"$out" || fail "explain nope said: $out"

for _ in $(seq 200); do kubectl get nodes 2>/dev/null | grep -q "^dev " && break; sleep 0.05; done
out=$(kubectl get nodes 2>&1) || fail "get nodes: $out"
grep -qE '^NAME +STATUS +ROLES +AGE +VERSION +GPUS' <<<"$out" || fail "columns: $out"
grep -qE '^dev +Ready +<none> +[0-9]+s +tessera-agent +4/4' <<<"$out" || fail "node row: $out"
out=$(kubectl get nodes -o wide 2>&1) || fail "get nodes -o wide: $out"
grep -qE 'A100-80GB' <<<"$out" || fail "wide shows no GPU model: $out"
out=$(kubectl get node dev -o json 2>&1) || fail "get node -o json: $out"
python3 - "$out" <<'PY' || fail "node JSON: $out"
import json, sys
n = json.loads(sys.argv[1])
assert n["apiVersion"] == "v1" and n["kind"] == "Node", n
assert n["status"]["capacity"]["nvidia.com/gpu"] == "4", n["status"]
assert n["status"]["conditions"][0]["type"] == "Ready"
assert n["status"]["conditions"][0]["status"] == "True"
assert n["metadata"]["labels"]["kubernetes.io/hostname"] == "dev"
PY
out=$(kubectl get nodes -l tessera.io/simulated=true -o name 2>&1) || fail "selector: $out"
[ "$out" = "node/dev" ] || fail "label selector: $out"
out=$(kubectl get nodes -l tessera.io/simulated=false 2>&1) || fail "selector: $out"
grep -q "No resources found" <<<"$out" || fail "selector matched: $out"

# Operating nodes as with Kubernetes: cordon, label, taint (and undo), as the Node records them.
out=$(kubectl cordon dev 2>&1) || fail "cordon: $out"
grep -q "node/dev cordoned" <<<"$out" || fail "cordon said: $out"
out=$(kubectl get nodes 2>&1) || fail "get nodes: $out"
grep -qE '^dev +Ready,SchedulingDisabled' <<<"$out" || fail "not cordoned: $out"
out=$(kubectl get nodes.tessera.io dev -o jsonpath='{.spec.unschedulable}' 2>&1)
[ "$out" = true ] || fail "the Tessera node is not unschedulable: $out"
kubectl uncordon dev >/dev/null 2>&1 || fail "uncordon"
out=$(kubectl label node dev team=vision 2>&1) || fail "label node: $out"
out=$(kubectl get nodes -l team=vision -o name 2>&1)
[ "$out" = node/dev ] || fail "node label: $out"
out=$(kubectl taint node dev gpu=a100:NoSchedule 2>&1) || fail "taint: $out"
grep -q "node/dev tainted" <<<"$out" || fail "taint said: $out"
out=$(kubectl get nodes.tessera.io dev -o jsonpath='{.spec.taints[0].key}' 2>&1)
[ "$out" = gpu ] || fail "taint not on the Tessera node: $out"
kubectl taint node dev gpu- >/dev/null 2>&1 || fail "untaint"
out=$(kubectl get node dev -o jsonpath='{.spec.taints}' 2>&1)
[ -z "$out" ] || fail "taint left: $out"
# One GPU cordoned through the API with kubectl annotate (Tessera's per-GPU cordon), and back.
out=$(kubectl annotate node dev tessera.io/cordoned-gpus=0 2>&1) || fail "annotate: $out"
out=$("$TESSERA" top gpus 2>&1) || fail "top gpus: $out"
grep -qE "^dev +0 .*Healthy,Cordoned$" <<<"$out" || fail "GPU 0 not cordoned: $out"
kubectl annotate node dev tessera.io/cordoned-gpus- >/dev/null 2>&1 || fail "annotate -"
out=$(kubectl get nodes.tessera.io dev -o jsonpath='{.metadata.annotations}' 2>&1)
grep -q "cordoned-gpus" <<<"$out" && fail "the cordon stayed: $out"

# Tessera's own kinds, in their group.
out=$(kubectl get nodes.tessera.io dev -o jsonpath='{.status.gpus[0].model}' 2>&1) ||
  fail "tessera node: $out"
[ "$out" = "A100-80GB" ] || fail "tessera node GPU model: $out"
out=$(kubectl get jobs.tessera.io -A 2>&1) || fail "get jobs: $out"
grep -q "No resources found" <<<"$out" || fail "jobs: $out"

# The seeds' manifests through kubectl apply: created, unchanged when re-applied, configured
# when changed; kubectl's own validation leaves the fields to the server (OpenAPI).
SEEDS=$2
for f in "$SEEDS"/*.yaml; do
  case $(basename "$f") in
    10-*) continue ;;  # Prometheus rules: loaded into Prometheus, not applied
    09-*) continue ;;  # a Helm values block, not a Kubernetes object (tessera apply takes it)
  esac
  out=$(kubectl apply -f "$f" 2>&1) || fail "apply $f: $out"
  grep -q " created" <<<"$out" || fail "apply $f created nothing: $out"
  grep -q "error" <<<"$out" && fail "apply $f: $out"
  out=$(kubectl apply -f "$f" 2>&1) || fail "re-apply $f: $out"
  grep -q " configured\| created" <<<"$out" && fail "re-apply $f changed something: $out"
  grep -q " unchanged" <<<"$out" || fail "re-apply $f: $out"
  # Server-side apply of the same takes a share of the fields kubectl's client-side apply set.
  out=$(kubectl apply --server-side -f "$f" 2>&1) || fail "server-side apply $f: $out"
  grep -q " serverside-applied" <<<"$out" || fail "server-side apply $f: $out"
done
# The device plugin's time-slicing config (seed 02, 4 replicas a card) shows in the Node's
# capacity as its plugin would advertise it: 4 cards, 16 nvidia.com/gpu.
out=$(kubectl get node dev -o jsonpath='{.status.capacity.nvidia\.com/gpu}' 2>&1)
[ "$out" = 16 ] || fail "time-sliced capacity: $out"
sed 's/nominalQuota: 64/nominalQuota: 48/' "$SEEDS/06-kueue-queue-and-job.yaml" >"$WORK/06.yaml"
out=$(kubectl apply -f "$WORK/06.yaml" 2>&1) || fail "apply changed 06: $out"
grep -q "clusterqueue.kueue.x-k8s.io/gpu-cluster-queue configured" <<<"$out" || fail "06: $out"
grep -q "job.batch/llm-training unchanged" <<<"$out" || fail "06 job: $out"
out=$(kubectl get queues.tessera.io gpu-cluster-queue \
  -o jsonpath='{.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota}' 2>&1)
[ "$out" = 48 ] || fail "the changed quota did not reach the Queue: $out"
# What a manifest says and Tessera does not act on comes back as kubectl's warnings.
cat >"$WORK/deadline.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: deadline
spec:
  podReplacementPolicy: Failed
  template:
    spec:
      containers:
      - name: c
        image: busybox
        command: ["true"]
YAML
out=$(kubectl apply -f "$WORK/deadline.yaml" 2>&1) || fail "apply deadline: $out"
grep -q "Warning: .*spec.podReplacementPolicy: not acted on" <<<"$out" || fail "no warning: $out"
# A typo is refused by the server, naming the field.
sed 's/image:/imag:/' "$WORK/deadline.yaml" | sed 's/name: deadline/name: typo/' >"$WORK/typo.yaml"
out=$(kubectl apply -f "$WORK/typo.yaml" 2>&1) && fail "typo accepted: $out"
grep -q "imag: unknown field" <<<"$out" || fail "typo: $out"

# Server-side apply: created, unchanged when re-applied (the same resourceVersion), a field
# another manager changed refused until forced, a field left out removed.
cat >"$WORK/ssa.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: ssa
  labels: {team: ssa}
spec:
  suspend: true
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        command: ["true"]
YAML
ssa_rv() { kubectl get job ssa -o jsonpath='{.metadata.resourceVersion}'; }
out=$(kubectl apply --server-side -f "$WORK/ssa.yaml" 2>&1) || fail "ssa: $out"
grep -q "job.batch/ssa serverside-applied" <<<"$out" || fail "ssa: $out"
rv=$(ssa_rv)
kubectl apply --server-side -f "$WORK/ssa.yaml" >/dev/null 2>&1 || fail "ssa again"
[ "$(ssa_rv)" = "$rv" ] || fail "an unchanged server-side apply wrote: $rv, $(ssa_rv)"
out=$(kubectl get --raw /apis/batch/v1/namespaces/default/jobs/ssa 2>&1) || fail "raw ssa: $out"
python3 - "$out" <<'PY' || fail "ssa managedFields: $out"
import json, sys
m = json.loads(sys.argv[1])["metadata"]["managedFields"]
assert [(e["manager"], e["operation"]) for e in m] == [("kubectl", "Apply")], m
assert "f:parallelism" in m[0]["fieldsV1"]["f:spec"], m
PY
kubectl patch job ssa --type=merge -p '{"spec":{"parallelism":3}}' >/dev/null 2>&1 || fail "patch"
out=$(kubectl apply --server-side -f "$WORK/ssa.yaml" 2>&1) && fail "no conflict: $out"
grep -q "conflict with .*\.spec\.parallelism" <<<"$out" || fail "conflict: $out"
out=$(kubectl apply --server-side --force-conflicts -f "$WORK/ssa.yaml" 2>&1) || fail "force: $out"
[ "$(kubectl get job ssa -o jsonpath='{.spec.parallelism}')" = 2 ] || fail "force kept 3"
sed -i '/labels:/d' "$WORK/ssa.yaml"
kubectl apply --server-side -f "$WORK/ssa.yaml" >/dev/null 2>&1 || fail "ssa without labels"
out=$(kubectl get job ssa -o jsonpath='{.metadata.labels}')
[ -z "$out" ] || fail "a label left out stayed: $out"
kubectl delete job ssa >/dev/null 2>&1 || fail "delete ssa"

# Namespaces: written with labels, holding a Pod, deleted with it (kubectl waits until it is
# gone); default stays.
cat >"$WORK/ns.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata:
  name: team-z
  labels: {tier: gold}
YAML
out=$(kubectl apply -f "$WORK/ns.yaml" 2>&1) || fail "apply namespace: $out"
grep -q "namespace/team-z created" <<<"$out" || fail "namespace: $out"
kubectl label namespace team-z owner=ml >/dev/null 2>&1 || fail "label namespace"
out=$(kubectl get namespace -l tier=gold -o jsonpath='{.items[0].metadata.labels.owner}' 2>&1)
[ "$out" = ml ] || fail "namespace labels: $out"
kubectl run z -n team-z --image=busybox --restart=Never --command -- true >/dev/null 2>&1 || fail "run in team-z"
out=$(timeout 60 kubectl delete namespace team-z 2>&1) || fail "delete namespace: $out"
out=$(kubectl get pods -n team-z 2>&1)
grep -q "No resources found" <<<"$out" || fail "pods outlived their namespace: $out"
out=$(kubectl get namespace team-z 2>&1) && fail "namespace outlived its deletion: $out"
out=$(kubectl delete namespace default 2>&1) && fail "default deleted: $out"
grep -q "may not be deleted" <<<"$out" || fail "delete default: $out"

# kubectl create's typed objects (kubectl 1.30+ sends them as protobuf, 1.20 as JSON).
kubectl create namespace team-y >/dev/null 2>&1 || fail "create namespace: $(kubectl create namespace team-y 2>&1)"
out=$(kubectl create priorityclass urgent --value=1000000 --preemption-policy=Never \
  --description="on call" 2>&1) || fail "create priorityclass: $out"
[ "$(kubectl get priorityclasses.tessera.io urgent -o jsonpath='{.spec.value}')" = 1000000 ] ||
  fail "priority class value"
out=$(kubectl create quota gpus -n team-y --hard=requests.nvidia.com/gpu=4 2>&1) ||
  fail "create quota: $out"
out=$(kubectl get namespacequotas.tessera.io gpus -n team-y -o jsonpath='{.spec.hard}' 2>&1)
grep -q '"requests.nvidia.com/gpu":"4"' <<<"$out" || fail "quota: $out"
out=$(kubectl create job hello -n team-y --image=busybox -- sh -c 'echo hi' 2>&1) ||
  fail "create job: $out"
out=$(kubectl get job hello -n team-y -o jsonpath='{.spec.template.spec.containers[0].command[2]}')
[ "$out" = "echo hi" ] || fail "job command: $out"
kubectl delete namespace team-y >/dev/null 2>&1 || fail "delete team-y"
kubectl delete priorityclass urgent >/dev/null 2>&1 || fail "delete priorityclass"

# Kubeflow's PyTorchJob through kubectl: created, its status in the training operator's shape.
cat >"$WORK/pytorch.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  runPolicy: {suspend: true}
  pytorchReplicaSpecs:
    Master:
      template:
        spec:
          containers: [{name: pytorch, image: busybox, command: ["true"]}]
YAML
out=$(kubectl apply -f "$WORK/pytorch.yaml" 2>&1) || fail "apply pytorchjob: $out"
grep -q "pytorchjob.kubeflow.org/pt created" <<<"$out" || fail "pytorchjob: $out"
out=$(kubectl get pytorchjob pt -o jsonpath='{.status.conditions[*].type}' 2>&1)
[ "$out" = "Created Suspended" ] || fail "pytorchjob conditions: $out"
kubectl delete pytorchjob pt >/dev/null 2>&1 || fail "delete pytorchjob"

out=$(kubectl get pods 2>&1) || fail "get pods: $out"
grep -qE '^NAME +READY +STATUS +RESTARTS +AGE' <<<"$out" || fail "pod columns: $out"
grep -qE '^gpu-training +' <<<"$out" || fail "seed pod missing: $out"
out=$(kubectl get jobs.batch llm-training -o json 2>&1) || fail "get batch job: $out"
python3 - "$out" <<'PY' || fail "batch job JSON: $out"
import json, sys
j = json.loads(sys.argv[1])
assert j["apiVersion"] == "batch/v1" and j["kind"] == "Job", j
assert j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
assert "kubectl.kubernetes.io/last-applied-configuration" in j["metadata"]["annotations"]
assert len(j["metadata"]["uid"]) == 36
PY
out=$(kubectl get vcjob,podgroups.scheduling.volcano.sh,cq,pc -A 2>&1) || fail "get kinds: $out"
for want in job.batch.volcano.sh/pytorch-distributed podgroup.scheduling.volcano.sh/distributed-training \
    clusterqueue.kueue.x-k8s.io/gpu-cluster-queue priorityclass.scheduling.k8s.io/online-inference; do
  grep -q "$want" <<<"$(kubectl get vcjob,podgroups.scheduling.volcano.sh,cq,pc -A -o name)" ||
    fail "$want not listed: $out"
done
out=$(kubectl get -f "$SEEDS/05-volcano-gang.yaml" -o name 2>&1) || fail "get -f: $out"
[ "$(wc -l <<<"$out")" = 2 ] || fail "get -f 05: $out"
out=$(kubectl label pod gpu-training team=vision 2>&1) || fail "label: $out"
out=$(kubectl get pods -l team=vision -o name 2>&1) || fail "get -l: $out"
[ "$out" = "pod/gpu-training" ] || fail "label selector on pods: $out"

# Kueue's Workloads and namespaces, as Kueue and Kubernetes list them.
out=$(kubectl get workloads -o name 2>&1) || fail "get workloads: $out"
grep -qx "workload.kueue.x-k8s.io/job-llm-training" <<<"$out" || fail "workloads: $out"
out=$(kubectl get workload job-llm-training -o jsonpath='{.spec.queueName}' 2>&1) || fail "$out"
[ "$out" = gpu-queue ] || fail "workload queue: $out"
out=$(kubectl get cq gpu-cluster-queue -o jsonpath='{.status.admittedWorkloads}' 2>&1) ||
  fail "cq status: $out"
[ "$out" = 0 ] || fail "cq admitted: $out"
# A patch that changes nothing is answered as the object reads, status included, so kubectl
# says so (the issue's case: it printed "patched").
kubectl label cq gpu-cluster-queue tier=gold >/dev/null 2>&1 || fail "label cq"
out=$(kubectl patch cq gpu-cluster-queue -p '{"metadata":{"labels":{"tier":"gold"}}}' 2>&1) ||
  fail "patch cq: $out"
grep -q "clusterqueue.kueue.x-k8s.io/gpu-cluster-queue patched (no change)" <<<"$out" ||
  fail "no-op patch: $out"
out=$(kubectl get namespaces 2>&1) || fail "get namespaces: $out"
grep -qE '^default +Active' <<<"$out" || fail "namespaces: $out"

# Volcano's queue states: the Command vcctl queue operate creates, through kubectl create; a
# queue that is not Open refuses new jobs as Volcano's webhook does.
cat >"$WORK/vq.yaml" <<'YAML'
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 1}
YAML
cat >"$WORK/vq-job.yaml" <<'YAML'
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vq-job}
spec:
  schedulerName: volcano
  queue: research
  tasks:
  - replicas: 1
    name: worker
    template:
      spec:
        containers: [{name: c, command: ["true"]}]
YAML
command_yaml() {
  printf 'apiVersion: bus.volcano.sh/v1alpha1\nkind: Command\nmetadata: {generateName: research-%s-}\naction: %s\ntarget: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: research}\n' \
    "${1,,}" "$1" >"$WORK/command.yaml"
}
queue_state() { kubectl get queues.scheduling.volcano.sh research -o jsonpath='{.status.state}' 2>&1; }
kubectl apply -f "$WORK/vq.yaml" >/dev/null 2>&1 || fail "apply volcano queue"
out=$(queue_state)
[ "$out" = Open ] || fail "new queue state: $out"
command_yaml CloseQueue
out=$(kubectl create -f "$WORK/command.yaml" 2>&1) || fail "create CloseQueue: $out"
grep -qE '^command.bus.volcano.sh/research-closequeue-[a-z0-9]{5} created$' <<<"$out" ||
  fail "create said: $out"
out=$(queue_state)
[ "$out" = Closed ] || fail "closed queue state: $out"
out=$(kubectl create -f "$WORK/vq-job.yaml" 2>&1) && fail "job to a closed queue created: $out"
grep -qF 'can only submit job to queue with state `Open`, queue `research` status is `Closed`' \
  <<<"$out" || fail "closed queue refusal: $out"
command_yaml OpenQueue
kubectl create -f "$WORK/command.yaml" >/dev/null 2>&1 || fail "create OpenQueue"
out=$(queue_state)
[ "$out" = Open ] || fail "reopened queue state: $out"
out=$(kubectl create -f "$WORK/vq-job.yaml" 2>&1) || fail "job to an open queue: $out"
kubectl delete -f "$WORK/vq-job.yaml" >/dev/null 2>&1 || fail "delete vq-job"
kubectl delete -f "$WORK/vq.yaml" >/dev/null 2>&1 || fail "delete volcano queue"

# Every Job's pods, describe with the scheduler's events, logs, and a watch.
out=$(kubectl get pods -A 2>&1) || fail "get pods -A: $out"
grep -qE '^default +pytorch-distributed-worker-3 +0/1 +Pending' <<<"$out" || fail "gang pods: $out"
out=$(kubectl describe pod gpu-training 2>&1) || fail "describe: $out"
grep -q "Node-Selectors: *accelerator=nvidia-tesla-v100" <<<"$out" || fail "describe spec: $out"
# kube-scheduler's Warning FailedScheduling, as kubectl describe readers look for it.
grep -qE "Warning +FailedScheduling +[0-9]+s +tessera-scheduler .*node selector mismatch" <<<"$out" ||
  fail "describe shows no scheduler event: $out"
cat >"$WORK/hello.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  restartPolicy: Never
  containers:
  - name: main
    command: ["sh", "-c", "echo hello from kubectl; echo second line"]
    resources:
      limits:
        nvidia.com/gpu: 1
YAML
timeout 20 kubectl get pods -w -l app!=none >"$WORK/watch.out" 2>&1 &
WATCH_PID=$!
kubectl apply -f "$WORK/hello.yaml" >/dev/null 2>&1 || fail "apply hello"
for _ in $(seq 200); do
  [ "$(kubectl get pod hello -o jsonpath='{.status.phase}' 2>/dev/null)" = Succeeded ] && break
  sleep 0.05
done
out=$(kubectl logs hello 2>&1) || fail "logs: $out"
[ "$out" = "$(printf 'hello from kubectl\nsecond line')" ] || fail "logs said: $out"
out=$(kubectl logs hello --tail=1 -c main 2>&1) || fail "logs --tail: $out"
[ "$out" = "second line" ] || fail "logs --tail said: $out"
# -f on a pod that has ended returns its output at once; a pod with no node yet is refused as
# kube-apiserver refuses it, not waited on (the issue's case: both hung).
out=$(timeout 10 kubectl logs -f hello 2>&1) || fail "logs -f of an ended pod: $out"
[ "$out" = "$(printf 'hello from kubectl\nsecond line')" ] || fail "logs -f said: $out"
# A Pod and a Job of one name live side by side, as in Kubernetes (the issue's case: kubectl run
# hello failed with AlreadyExists while Job hello existed); each is read, logged and deleted as
# itself.
cat >"$WORK/twins.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: twin}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, command: ["sh", "-c", "echo from the job; sleep 60"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: twin}
spec:
  restartPolicy: Never
  containers: [{name: main, command: ["sh", "-c", "echo from the pod; sleep 60"]}]
YAML
out=$(kubectl apply -f "$WORK/twins.yaml" 2>&1) || fail "twins: $out"
await_running twin twin-main-0
for _ in $(seq 100); do [ -n "$(kubectl logs twin 2>/dev/null)" ] && break; sleep 0.05; done
[ "$(kubectl logs twin 2>&1)" = "from the pod" ] || fail "pod twin's log: $(kubectl logs twin 2>&1)"
for _ in $(seq 100); do [ -n "$(kubectl logs job/twin 2>/dev/null)" ] && break; sleep 0.05; done
[ "$(kubectl logs job/twin 2>&1)" = "from the job" ] || fail "job twin's log: $(kubectl logs job/twin 2>&1)"
kubectl delete pod twin >/dev/null 2>&1 || fail "delete pod twin"
kubectl get job twin >/dev/null 2>&1 || fail "deleting pod twin took job twin"
kubectl delete job twin >/dev/null 2>&1 || fail "delete job twin"

# A pod that ends while followed: logs -f and attach return when it does (the issue's case:
# logs -f never returned). attach shows what comes after it attached.
cat >"$WORK/ticker.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: ticker}
spec:
  restartPolicy: Never
  containers: [{name: tick, command: ["sh", "-c", "sleep 1; for i in 1 2 3; do echo tick $i; sleep 0.5; done"]}]
YAML
kubectl apply -f "$WORK/ticker.yaml" >/dev/null 2>&1 || fail "apply ticker"
await_running ticker
out=$(timeout 20 kubectl attach ticker 2>/dev/null) || fail "attach: $out"
grep -q "^tick 3$" <<<"$out" || fail "attach said: $out"
out=$(timeout 10 kubectl attach -i ticker 2>&1) && fail "attach -i: $out"
grep -q "completed pod\|stdin" <<<"$out" || fail "attach -i said: $out"
kubectl delete pod ticker >/dev/null 2>&1 || fail "delete ticker"
kubectl apply -f "$WORK/ticker.yaml" >/dev/null 2>&1 || fail "apply ticker again"
await_running ticker
out=$(timeout 20 kubectl logs -f ticker 2>&1) || fail "logs -f while it runs: $out"
[ "$out" = "$(printf 'tick 1\ntick 2\ntick 3')" ] || fail "logs -f while it runs said: $out"
kubectl delete pod ticker >/dev/null 2>&1 || fail "delete ticker"
out=$(timeout 10 kubectl logs -f pytorch-distributed-worker-3 2>&1) && rc=0 || rc=$?
[ $rc = 1 ] || fail "logs -f of a pending pod: exit $rc: $out"
grep -q "does not have a host assigned" <<<"$out" || fail "logs -f of a pending pod said: $out"
for _ in $(seq 100); do grep -qE '^hello +0/1 +Completed' "$WORK/watch.out" && break; sleep 0.05; done
kill "$WATCH_PID" 2>/dev/null || true
grep -qE '^hello +0/1 +Completed' "$WORK/watch.out" || fail "watch: $(cat "$WORK/watch.out")"

# An Indexed Job (Kubernetes' array): kubectl reads Kubernetes' own progress fields, and its
# table's COMPLETIONS.
cat >"$WORK/indexed.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: indexed}
spec:
  completions: 6
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        command: ["sh", "-c", "echo $JOB_COMPLETION_INDEX"]
        resources: {limits: {nvidia.com/gpu: 1}}
YAML
kubectl apply -f "$WORK/indexed.yaml" >/dev/null 2>&1 || fail "apply indexed"
for _ in $(seq 200); do
  [ "$(kubectl get job indexed -o jsonpath='{.status.succeeded}' 2>/dev/null)" = 6 ] && break
  sleep 0.05
done
out=$(kubectl get job indexed -o jsonpath='{.status.succeeded} {.status.completedIndexes} {.status.conditions[*].type}' 2>&1)
[ "$out" = "6 0-5 SuccessCriteriaMet Complete" ] || fail "indexed job status: $out"
out=$(kubectl get job indexed 2>&1) || fail "get indexed: $out"
grep -qE '^indexed +Complete +6/6 ' <<<"$out" || fail "indexed job table: $out"

# Waits (15 s at most) until kubectl get job $1 -o jsonpath=$2 prints $3.
await_job() {
  for _ in $(seq 300); do
    [ "$(kubectl get job "$1" -o jsonpath="$2" 2>/dev/null)" = "$3" ] && return 0
    sleep 0.05
  done
}

# kubectl drain: cordon, then policy/v1 evictions of the node's pods. A Job that succeeded on
# the node keeps its outcome and never runs again, after uncordon too (the issue's case: drain
# re-queued it and it ran twice); running work goes back to its queue.
mkdir -m 1777 "$WORK/runs"
cat >"$WORK/once.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        command: ["sh", "-c", "echo ran >> $WORK/runs/once"]
YAML
kubectl apply -f "$WORK/once.yaml" >/dev/null 2>&1 || fail "apply once"
await_job once '{.status.succeeded}' 1
[ "$(cat "$WORK/runs/once" 2>/dev/null)" = ran ] || fail "once did not run: $(kubectl get job once -o yaml 2>&1)"
out=$(timeout 60 kubectl drain dev --ignore-daemonsets --timeout=45s 2>&1) || fail "drain: $out"
grep -q "pod/once-main-0 evicted" <<<"$out" || fail "drain did not evict once: $out"
grep -q "node/dev drained" <<<"$out" || fail "drain said: $out"
out=$(kubectl get pods --field-selector spec.nodeName=dev -o name 2>&1)
[ -z "$out" ] || fail "pods left on the drained node: $out"
kubectl uncordon dev >/dev/null 2>&1 || fail "uncordon after drain"
sleep 3
[ "$(cat "$WORK/runs/once")" = ran ] || fail "once ran again: $(cat "$WORK/runs/once")"
out=$(kubectl get job once -o jsonpath='{.status.succeeded} {.status.conditions[1].type}' 2>&1)
[ "$out" = "1 Complete" ] || fail "once after drain: $out"

# backoffLimit as Kubernetes' Job controller counts it: with restartPolicy Never (what kubectl
# create job writes) a failed pod is tried again until status.failed passes the limit, 6 when
# none is given (the issue's case: backoffLimit 2 failed after one attempt; absent, it was 0).
# Ported from Kubernetes' test/e2e/apps/job.go, "should fail to exceed backoffLimit": a Never
# Job that always fails ends Failed with reason BackoffLimitExceeded after backoffLimit + 1 pods
# (here attempts, counted in status.failed).
for case in "limited|  backoffLimit: 2|3" "default||7"; do
  IFS='|' read -r name limit runs <<<"$case"
  cat >"$WORK/$name.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $name}
spec:
$limit
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        command: ["sh", "-c", "echo try >> $WORK/runs/$name; exit 3"]
YAML
  kubectl apply -f "$WORK/$name.yaml" >/dev/null 2>&1 || fail "apply $name"
  await_job "$name" '{.status.conditions[1].type}' Failed
  # Kubernetes 1.31+: FailureTarget, then Failed, with the same reason.
  out=$(kubectl get job "$name" -o jsonpath='{.status.failed} {.status.conditions[*].type} {.status.conditions[1].reason}' 2>&1)
  [ "$out" = "$runs FailureTarget Failed BackoffLimitExceeded" ] || fail "$name: $out $(kubectl get jobs.tessera.io "$name" -o json 2>&1)"
  [ "$(wc -l <"$WORK/runs/$name")" = "$runs" ] || fail "$name ran $(wc -l <"$WORK/runs/$name") times"
done

# podFailurePolicy, ported from Kubernetes' test/e2e/apps/job.go: "should allow to use the pod
# failure policy on exit code to fail the job early" (a FailJob rule on the exit code ends the
# Job after one pod, whatever its backoffLimit, with reason PodFailurePolicy) and "should allow
# to use the pod failure policy to not count the failure towards the backoffLimit" (an Ignore
# rule: the pod that failed once runs again uncounted and the Job completes with backoffLimit 0).
cat >"$WORK/pfp.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: fail-early}
spec:
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: main, operator: In, values: [42]}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        command: ["sh", "-c", "echo try >> $WORK/runs/fail-early; exit 42"]
---
apiVersion: batch/v1
kind: Job
metadata: {name: fail-once}
spec:
  backoffLimit: 0
  podFailurePolicy:
    rules:
    - action: Ignore
      onExitCodes: {operator: In, values: [3]}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        command: ["sh", "-c", "if [ -e $WORK/runs/failed-once ]; then exit 0; fi; touch $WORK/runs/failed-once; exit 3"]
YAML
kubectl apply -f "$WORK/pfp.yaml" >/dev/null 2>&1 || fail "apply pod failure policies"
await_job fail-early '{.status.conditions[1].type}' Failed
out=$(kubectl get job fail-early -o jsonpath='{.status.failed} {.status.conditions[1].reason}' 2>&1)
[ "$out" = "1 PodFailurePolicy" ] || fail "fail-early: $out $(kubectl get job fail-early -o yaml 2>&1)"
kubectl get job fail-early -o jsonpath='{.status.conditions[1].message}' |
  grep -q "^Container main for pod default/fail-early-main-0 failed with exit code 42 matching FailJob rule at index 0$" ||
  fail "fail-early's message: $(kubectl get job fail-early -o jsonpath='{.status.conditions}')"
[ "$(wc -l <"$WORK/runs/fail-early")" = 1 ] || fail "fail-early ran $(wc -l <"$WORK/runs/fail-early") times"
await_job fail-once '{.status.succeeded}' 1
out=$(kubectl get job fail-once -o jsonpath='{.status.failed}' 2>&1)
[ "$out" = "" ] || [ "$out" = 0 ] || fail "fail-once counted its ignored failure: $out"
# Kubernetes' validation: only with restartPolicy Never.
out=$(kubectl create -f - 2>&1 <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: pfp-onfailure}
spec:
  podFailurePolicy:
    rules: [{action: FailJob, onExitCodes: {operator: In, values: [1]}}]
  template:
    spec:
      restartPolicy: OnFailure
      containers: [{name: main, command: ["true"]}]
YAML
) && fail "podFailurePolicy with OnFailure accepted: $out"
grep -q 'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported' <<<"$out" ||
  fail "podFailurePolicy with OnFailure: $out"
kubectl delete job fail-early fail-once >/dev/null 2>&1 || fail "delete pod failure policy jobs"

# kubectl logs job/X reads X's pod: the Job's selector (Kubernetes' default, its uid) matches its
# pods alone, among the other Jobs' pods here (the issue's case: "Found 16 pods, using" another's).
cat >"$WORK/sayhi.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: sayhi}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: greeter, command: ["sh", "-c", "echo hi from sayhi"]}]
YAML
kubectl apply -f "$WORK/sayhi.yaml" >/dev/null 2>&1 || fail "apply sayhi"
await_job sayhi '{.status.succeeded}' 1
out=$(kubectl logs job/sayhi 2>&1) || fail "logs job/sayhi: $out"
[ "$out" = "hi from sayhi" ] || fail "logs job/sayhi said: $out"
# The container keeps the name it was given (it was rewritten to main).
# --since, --since-time, --timestamps and --limit-bytes, as kubelet answers them: each line has
# the time it was received (the issue's case: they were not acted on).
out=$(kubectl logs job/sayhi --since=1h --timestamps 2>&1) || fail "logs --since: $out"
grep -Eq "^$(date -u +%Y-%m-%d)T[0-9:.]+Z hi from sayhi$" <<<"$out" || fail "logs --timestamps said: $out"
sleep 1.1
out=$(kubectl logs job/sayhi --since=1s 2>&1) || fail "logs --since=1s: $out"
[ -z "$out" ] || fail "logs --since=1s showed older lines: $out"
out=$(kubectl logs job/sayhi --since-time="$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)" 2>&1) ||
  fail "logs --since-time: $out"
[ "$out" = "hi from sayhi" ] || fail "logs --since-time said: $out"
out=$(kubectl logs job/sayhi --limit-bytes=5 2>&1) || fail "logs --limit-bytes: $out"
[ "$out" = "hi fr" ] || fail "logs --limit-bytes said: $out"
out=$(kubectl logs job/sayhi -c greeter 2>&1) || fail "logs -c greeter: $out"
[ "$out" = "hi from sayhi" ] || fail "logs -c greeter said: $out"
out=$(kubectl get pod sayhi-main-0 -o jsonpath='{.spec.containers[0].name}' 2>&1)
[ "$out" = greeter ] || fail "the pod's container: $out"
uid=$(kubectl get job sayhi -o jsonpath='{.metadata.uid}')
out=$(kubectl get job sayhi -o jsonpath='{.spec.selector.matchLabels}' 2>&1)
grep -q "\"batch.kubernetes.io/controller-uid\":\"$uid\"" <<<"$out" || fail "selector: $out"
out=$(kubectl get pods -l "batch.kubernetes.io/controller-uid=$uid" -o name 2>&1)
[ "$out" = pod/sayhi-main-0 ] || fail "the selector's pods: $out"
out=$(kubectl get job sayhi -o yaml 2>&1 | kubectl replace -f - 2>&1) || fail "replace: $out"
grep -qi "warning" <<<"$out" && fail "replace of the served Job warned: $out"
# A log belongs to one Job: sayhi deleted and created again under its name shows the new run's
# output alone (the issue's case: the old log went on, and the server's copy repeated lines).
kubectl delete job sayhi >/dev/null 2>&1 || fail "delete sayhi"
sed 's/echo hi from sayhi/echo hi again/' "$WORK/sayhi.yaml" | kubectl apply -f - >/dev/null 2>&1 ||
  fail "apply sayhi again"
await_job sayhi '{.status.succeeded}' 1
sleep 1.5  # the agent ships output each second
out=$(kubectl logs job/sayhi 2>&1) || fail "logs job/sayhi again: $out"
[ "$out" = "hi again" ] || fail "the second sayhi's log: $out"

# kubectl logs shows the container's current run, --previous the one before (the kubelet's
# rules; the issue's case: --previous was refused). A restarted container's follow ends with its
# run. A container that has not run before has no previous log: 400, as kubelet says it.
out=$(kubectl logs job/sayhi --previous 2>&1) && fail "logs --previous of a first run: $out"
grep -q 'previous terminated container "greeter" in pod "sayhi-main-0" not found' <<<"$out" ||
  fail "logs --previous of a first run said: $out"
cat >"$WORK/twice.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: twice}
spec:
  backoffLimit: 3
  template:
    spec:
      restartPolicy: OnFailure
      containers:
      - name: counter
        command: ["sh", "-c", "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n >count; echo run $n; [ $n -ge 2 ]"]
YAML
kubectl apply -f "$WORK/twice.yaml" >/dev/null 2>&1 || fail "apply twice"
await_job twice '{.status.succeeded}' 1
out=$(kubectl get pod twice-main-0 -o jsonpath='{.status.containerStatuses[0].restartCount}')
[ "$out" = 1 ] || fail "twice restarted $out times"
out=$(kubectl logs twice-main-0 2>&1) || fail "logs twice: $out"
[ "$out" = "run 2" ] || fail "logs of the current run said: $out"
out=$(kubectl logs twice-main-0 --previous 2>&1) || fail "logs --previous: $out"
[ "$out" = "run 1" ] || fail "logs --previous said: $out"
out=$(kubectl logs twice-main-0 -p -c counter --tail=1 2>&1) || fail "logs -p -c --tail: $out"
[ "$out" = "run 1" ] || fail "logs -p -c --tail said: $out"
# Tessera's own logs show every run.
out=$("$TESSERA" logs twice 2>&1) || fail "tessera logs twice: $out"
[ "$out" = "$(printf 'run 1\nrun 2')" ] || fail "tessera logs twice said: $out"
out=$("$TESSERA" logs twice --previous 2>&1) || fail "tessera logs --previous: $out"
[ "$out" = "run 1" ] || fail "tessera logs --previous said: $out"
kubectl delete job twice >/dev/null 2>&1 || fail "delete twice"

# Delete through kubectl removes the Tessera objects too.
out=$(kubectl delete -f "$SEEDS/01-pod-gpu-training.yaml" 2>&1) || fail "delete: $out"
grep -q 'pod "gpu-training" deleted' <<<"$out" || fail "delete said: $out"
out=$(kubectl get jobs.tessera.io gpu-training 2>&1) && fail "tessera job left: $out"
out=$(kubectl delete -f "$SEEDS/06-kueue-queue-and-job.yaml" 2>&1) || fail "delete 06: $out"
out=$(kubectl get cq 2>&1) || fail "get cq: $out"
grep -q "No resources found" <<<"$out" || fail "cq left: $out"

# kubectl auth can-i and whoami, answered from the token's scope (the issue's case: both 415).
out=$(kubectl auth can-i create jobs 2>&1) || fail "auth can-i create jobs: $out"
[ "$out" = yes ] || fail "auth can-i said: $out"
out=$(kubectl auth can-i create deployments 2>&1) || true
grep -q "the server doesn't have a resource type 'deployments'" <<<"$out" ||
  fail "can-i deployments said: $out"
# Impersonation is refused, not answered as the token's own user.
out=$(kubectl auth can-i get pods --as=nobody 2>&1) && fail "impersonation honoured: $out"
grep -q "impersonation .* is not supported" <<<"$out" || fail "impersonation said: $out"
out=$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}' 2>&1) || fail "whoami: $out"
[ "$out" = tessera:admin ] || fail "whoami said: $out"
out=$(kubectl create deployment web --image=busybox 2>&1) && fail "deployment created: $out"
grep -qi "the server could not find the requested resource\|doesn't have a resource type" <<<"$out" ||
  fail "create deployment: $out"

# kubectl cluster-info names the control plane (it lists kube-system's Services: Tessera has
# none, a pod shares its node's network); get svc says none; creating one is refused saying why.
out=$(kubectl cluster-info 2>&1) || fail "cluster-info: $out"
grep -q "Kubernetes control plane is running at https://127.0.0.1:" <<<"$out" || fail "cluster-info said: $out"
out=$(kubectl get svc -A 2>&1) || fail "get svc: $out"
grep -q "No resources found" <<<"$out" || fail "get svc said: $out"
out=$(kubectl create service clusterip web --tcp=80:80 2>&1) && fail "service created: $out"
grep -q "Tessera has no Services: a pod shares its node's network" <<<"$out" ||
  fail "create service said: $out"
out=$(kubectl auth can-i create services 2>&1) && fail "can-i create services: $out"
grep -q "^no - Tessera has no Services" <<<"$out" || fail "can-i create services said: $out"
# kubectl get all: the workloads' category (Pods and batch/v1 Jobs, as Kubernetes lists them).
out=$(kubectl get all 2>&1) || fail "get all: $out"
grep -q "^pod/sayhi-main-0 " <<<"$out" || fail "get all without the pod: $out"
grep -q "^job.batch/sayhi " <<<"$out" || fail "get all without the job: $out"

# kubectl get ns -w: a namespace is ADDED with its first object and DELETED with it (the
# issue's case: namespace watches were not served).
kubectl get ns -w --output-watch-events -o jsonpath='{.type} {.object.metadata.name}{"\n"}' \
  >"$WORK/ns.watch" 2>&1 &
watcher=$!
sleep 1
kubectl create job nsw -n watched --image=busybox -- true >/dev/null 2>&1 || fail "create job nsw"
kubectl delete namespace watched >/dev/null 2>&1 || fail "delete namespace watched"
for _ in $(seq 100); do grep -q "^DELETED watched" "$WORK/ns.watch" && break; sleep 0.05; done
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true
grep -q "^ADDED default" "$WORK/ns.watch" || fail "ns watch did not start with default: $(cat "$WORK/ns.watch")"
grep -q "^ADDED watched" "$WORK/ns.watch" || fail "ns watch: no ADDED watched: $(cat "$WORK/ns.watch")"
grep -q "^DELETED watched" "$WORK/ns.watch" || fail "ns watch: no DELETED watched: $(cat "$WORK/ns.watch")"

# A pod asking more GPUs than any node has says it can never fit (the issue's case: it read
# "insufficient free GPUs", as if waiting could help). The seed's time-slicing goes first: its
# replicas count as GPUs.
kubectl delete -f "$SEEDS/02-time-slicing-config.yaml" >/dev/null 2>&1 || fail "delete 02"
out=$(kubectl run big --image=busybox --restart=Never \
  --overrides='{"spec":{"containers":[{"name":"big","image":"busybox","resources":{"limits":{"nvidia.com/gpu":"16"}}}]}}' \
  2>&1) || fail "run big: $out"
for _ in $(seq 100); do
  out=$(kubectl get pod big -o jsonpath='{.status.conditions[0].message}' 2>&1)
  grep -q "fewer GPUs than the pod asks: it can never fit" <<<"$out" && break
  sleep 0.05
done
grep -q "1 node has fewer GPUs than the pod asks: it can never fit" <<<"$out" ||
  fail "big: $out $(kubectl get pod big -o yaml 2>&1)"
kubectl delete pod big >/dev/null 2>&1 || fail "delete big"

# kubectl exec over the WebSocket stream protocol (v5.channel.k8s.io): output on stdout and
# stderr, the command's exit code as kubectl's; what is not served says why (the issue's case:
# "pods has no subresource exec").
kubectl uncordon dev >/dev/null 2>&1 || true
cat >"$WORK/sleeper.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: sleeper}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, command: ["sh", "-c", "sleep 120"]}]
YAML
kubectl apply -f "$WORK/sleeper.yaml" >/dev/null 2>&1 || fail "apply sleeper"
await_job sleeper '{.status.active}' 1
await_running sleeper-main-0
out=$(timeout 30 kubectl exec sleeper-main-0 -- echo hello from exec 2>&1) || fail "exec: $out"
[ "$out" = "hello from exec" ] || fail "exec said: $out"
out=$(timeout 30 kubectl exec sleeper-main-0 -- sh -c 'echo out; echo err >&2; exit 3' 2>"$WORK/exec.err") &&
  rc=0 || rc=$?
[ "$rc" = 3 ] || fail "exec exit code: $rc ($out $(cat "$WORK/exec.err"))"
[ "$out" = out ] || fail "exec stdout: $out"
grep -q "^err$" "$WORK/exec.err" || fail "exec stderr: $(cat "$WORK/exec.err")"
grep -q "command terminated with exit code 3" "$WORK/exec.err" || fail "exec: $(cat "$WORK/exec.err")"
out=$(timeout 30 kubectl exec job/sleeper -- sh -c 'echo $((6*7))' 2>&1) || fail "exec job/: $out"
[ "$out" = 42 ] || fail "exec job/sleeper said: $out"
# A pod shares its node's network: its IP is its node's InternalIP.
node_ip=$(kubectl get node dev -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
[ -n "$node_ip" ] || fail "node dev has no InternalIP: $(kubectl get node dev -o yaml)"
[ "$(kubectl get pod sleeper-main-0 -o jsonpath='{.status.podIP}')" = "$node_ip" ] ||
  fail "pod IP: $(kubectl get pod sleeper-main-0 -o jsonpath='{.status}')"
# port-forward says why it is not served and where the pod's ports are.
out=$(timeout 10 kubectl port-forward sleeper-main-0 18080:80 2>&1) && fail "port-forward: $out"
grep -q "shares its node's network" <<<"$out" || fail "port-forward said: $out"
# stdin (-i): the command reads what kubectl sends, to its end (v5's close of stdin).
out=$(printf 'line one\nline two\n' | timeout 30 kubectl exec -i sleeper-main-0 -- wc -l 2>&1) ||
  fail "exec -i: $out"
[ "$out" = 2 ] || fail "exec -i counted: $out"
out=$(timeout 30 kubectl exec sleeper-main-0 -c other -- true 2>&1) && fail "exec -c other: $out"
grep -q 'has one container, "main"' <<<"$out" || fail "exec -c other said: $out"
printf 'copied text\n' >"$WORK/runs/to-copy"
out=$(timeout 30 kubectl cp "sleeper-main-0:$WORK/runs/to-copy" "$WORK/copied" 2>&1) || fail "cp: $out"
[ "$(cat "$WORK/copied")" = "copied text" ] || fail "cp copied: $(cat "$WORK/copied" 2>&1)"
# Binary files both ways, byte for byte (1 MiB of every byte value; the output was JSON text).
head -c 1048576 /dev/urandom >"$WORK/blob"
mkdir -p "$WORK/runs/into" && chmod 777 "$WORK/runs/into"  # the task runs as its Job's own uid
out=$(timeout 60 kubectl cp "$WORK/blob" "sleeper-main-0:$WORK/runs/into/blob" 2>&1) ||
  fail "cp into the pod: $out"
cmp "$WORK/blob" "$WORK/runs/into/blob" || fail "cp into the pod changed the file"
out=$(timeout 60 kubectl cp "sleeper-main-0:$WORK/runs/into/blob" "$WORK/blob.back" 2>&1) ||
  fail "cp from the pod: $out"
cmp "$WORK/blob" "$WORK/blob.back" || fail "cp from the pod changed the file"
# kubectl debug hears that there are no ephemeral containers (it crashed on a Status without
# details).
out=$(timeout 30 kubectl debug sleeper-main-0 --image=busybox --profile=general 2>&1) && rc=0 || rc=$?
grep -q "ephemeral containers are disabled for this cluster" <<<"$out" || fail "debug ($rc): $out"
# kubectl top: metrics.k8s.io, from what the agent measures of the node and the pod each beat
# (the issue's case: "Metrics API not available"). A rate needs two beats.
for _ in $(seq 200); do
  out=$(kubectl top pod sleeper-main-0 --no-headers 2>&1) && break
  sleep 0.1
done
grep -Eq '^sleeper-main-0 +[0-9]+m +[0-9]+Mi *$' <<<"$out" || fail "top pod: $out"
out=$(kubectl top pod --containers --no-headers 2>&1) || fail "top pod --containers: $out"
grep -Eq '^sleeper-main-0 +main +[0-9]+m +[0-9]+Mi *$' <<<"$out" || fail "top --containers: $out"
out=$(kubectl top node --no-headers 2>&1) || fail "top node: $out"
grep -Eq '^dev +[0-9]+m +[0-9]+% +[0-9]+Mi +[0-9]+% *$' <<<"$out" || fail "top node said: $out"
kubectl delete job sleeper >/dev/null 2>&1 || fail "delete sleeper"

# What is not served says so, and a bad token is refused.
out=$(kubectl get deployments 2>&1) && fail "deployments listed: $out"
grep -qi "the server doesn't have a resource type\|could not find the requested resource" <<<"$out" ||
  fail "deployments: $out"
out=$(kubectl --token nope get nodes 2>&1) && fail "bad token accepted: $out"
grep -qi "unauthorized\|must be logged in" <<<"$out" || fail "bad token: $out"
echo "PASS"
