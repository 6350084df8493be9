#!/usr/bin/env bash
# Kubernetes' Python client (Debian's python3-kubernetes) against `tessera dev` through the
# kubeconfig dev writes: typed lists of nodes, pods and events, creating a Pod and a batch/v1
# Job, a Kueue ClusterQueue through the custom objects API, a watch, a pod's log, and deletes.
set -euo pipefail
TESSERA=$1
TEST_NAME=pyclient
source "$(dirname "$0")/dev_env.sh"
# Debian's interpreter, where Debian's package is (another python3 may come first on PATH).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c "import kubernetes" 2>/dev/null ||
  fail "python3-kubernetes is not installed (scripts/install-deps.sh installs it)"
start_dev "$TESSERA" --fake-gpus 2xA100-80GB --container-runtime none
"$PY" - "$HOME/.tessera/kubeconfig" <<'PY' || fail "python client: see above; dev said: $(tail -5 "$WORK/dev.out")"
import sys, time
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
core, batch = client.CoreV1Api(), client.BatchV1Api()
custom = client.CustomObjectsApi()

# The node, typed, with its GPUs.
for _ in range(100):
    nodes = core.list_node().items
    if nodes:
        break
    time.sleep(0.05)
assert [n.metadata.name for n in nodes] == ["dev"], nodes
assert nodes[0].status.capacity["nvidia.com/gpu"] == "2", nodes[0].status.capacity

# A Pod that runs a command on one GPU (no image: a process on the node), created through the
# typed API, watched until done, and its log read.
pod = client.V1Pod(
    metadata=client.V1ObjectMeta(name="hello", labels={"team": "py"}),
    spec=client.V1PodSpec(restart_policy="Never", containers=[client.V1Container(
        name="main", command=["sh", "-c", "echo hello from python"],
        resources=client.V1ResourceRequirements(limits={"nvidia.com/gpu": "1"}))]))
made = core.create_namespaced_pod("default", pod)
assert made.metadata.uid and made.status.phase == "Pending", made.status
# Watched from the version the create returned: every change after it, however soon the pod
# ran and ended (a one-line task can end before a watch from now would start).
phases = []
w = watch.Watch()
for event in w.stream(core.list_namespaced_pod, "default", label_selector="team=py",
                      resource_version=made.metadata.resource_version, timeout_seconds=20):
    assert event["object"].kind == "Pod" or isinstance(event["object"], client.V1Pod)
    phases.append(event["object"].status.phase)
    if phases[-1] in ("Succeeded", "Failed"):
        w.stop()
print("phases seen:", phases)
order = ["Pending", "Running", "Succeeded"]
assert phases and all(p in order for p in phases), phases
assert [order.index(p) for p in phases] == sorted(order.index(p) for p in phases), phases
assert phases[-1] == "Succeeded", phases
log = core.read_namespaced_pod_log("hello", "default", container="main")
assert log == "hello from python\n", repr(log)
# No run before this one: 400, as the kubelet answers.
try:
    core.read_namespaced_pod_log("hello", "default", previous=True)
    raise AssertionError("a previous log of a first run was read")
except client.exceptions.ApiException as e:
    assert e.status == 400 and "previous terminated container" in e.body, (e.status, e.body)
pods = core.list_namespaced_pod("default", label_selector="team=py").items
assert [p.metadata.name for p in pods] == ["hello"], pods
events = core.list_namespaced_event(
    "default", field_selector="involvedObject.name=hello,involvedObject.kind=Pod").items
assert events and all(e.involved_object.name == "hello" for e in events), events

# A batch/v1 Job and a Kueue ClusterQueue (a custom kind), listed back.
job = client.V1Job(metadata=client.V1ObjectMeta(name="train"), spec=client.V1JobSpec(
    suspend=True, template=client.V1PodTemplateSpec(spec=client.V1PodSpec(
        restart_policy="Never", containers=[client.V1Container(
            name="t", image="busybox", command=["true"])]))))
batch.create_namespaced_job("default", job)
assert [j.metadata.name for j in batch.list_namespaced_job("default").items] == ["train"]
# Its status subresource (it was 404); suspended, it has no pods, as Kubernetes makes none.
status = batch.read_namespaced_job_status("train", "default")
assert status.metadata.name == "train" and status.status.conditions[0].type == "Suspended", status
assert status.spec.suspend is True, status.spec
assert core.list_namespaced_pod("default", label_selector="job-name=train").items == []
cq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
      "metadata": {"name": "py-queue"},
      "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
          {"name": "default", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}]}]}]}}
custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", cq)
got = custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", "py-queue")
assert got["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 2

# A bad field is refused with the field named.
try:
    custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues",
        {**cq, "metadata": {"name": "bad"}, "spec": {"cohortt": "x"}})
    raise SystemExit("a misspelt field was accepted")
except client.exceptions.ApiException as e:
    assert e.status == 400 and "cohortt" in e.body, e.body

# metrics.k8s.io through CustomObjectsApi, as the client's users read kubectl top's figures: the
# node's usage once its agent has measured two beats.
import time
deadline = time.time() + 20
while True:
    nodes = custom.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")["items"]
    if nodes or time.time() > deadline:
        break
    time.sleep(0.2)
assert [n["metadata"]["name"] for n in nodes] == ["dev"], nodes
assert nodes[0]["usage"]["cpu"].endswith("n") and nodes[0]["usage"]["memory"].endswith("Ki"), nodes

# Deletes: one by name, a collection by label.
core.delete_namespaced_pod("hello", "default")
batch.delete_collection_namespaced_job("default", label_selector="app!=none")
assert batch.list_namespaced_job("default").items == []
custom.delete_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues", "py-queue")
assert core.list_namespaced_pod("default").items == []
print("ok")
PY
echo "PASS"
