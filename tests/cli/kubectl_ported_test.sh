#!/usr/bin/env bash
# Cases ported from Kubernetes' own kubectl integration tests (kubernetes/kubernetes test/cmd/*.sh),
# run with Debian's kubectl against `tessera dev`. Each case names its source (file, function and
# the case's own comment there); where Tessera answers otherwise, the case says how and why.
#
# test/cmd runs kube-apiserver without a kubelet, so its pods stay Pending; here the node is
# cordoned while the pod cases run, which keeps them Pending the same way.
set -euo pipefail
TESSERA=$1
DATA=$2
TEST_NAME=kubectl-ported
source "$(dirname "$0")/dev_env.sh"
command -v kubectl >/dev/null || fail "kubectl is not installed (scripts/install-deps.sh installs it)"
start_dev "$TESSERA" --fake-gpus 4xA100-80GB --container-runtime none
export KUBECONFIG=$HOME/.tessera/kubeconfig
for _ in $(seq 200); do kubectl get nodes 2>/dev/null | grep -q "^dev " && break; sleep 0.05; done

PORTED=0
CASE=
# ported SOURCE: starts the next case.
ported() {
  PORTED=$((PORTED + 1))
  CASE="$*"
  echo "case $PORTED: $CASE"
}
# run CMD...: runs kubectl, which must succeed; its output is left in $OUT.
run() { OUT=$(kubectl "$@" 2>&1) || fail "[$CASE] kubectl $*: $OUT"; }
# refused CMD...: runs kubectl, which must fail; its output is left in $OUT.
refused() { OUT=$(kubectl "$@" 2>&1) && fail "[$CASE] kubectl $* succeeded: $OUT" || true; }
has() { grep -qE -- "$1" <<<"$OUT" || fail "[$CASE] wanted /$1/ in: $OUT"; }
hasnt() { grep -qE -- "$1" <<<"$OUT" && fail "[$CASE] did not want /$1/ in: $OUT" || true; }
# assert_get ARGS TEMPLATE WANT: kubectl get ARGS -o go-template=TEMPLATE prints exactly WANT
# (test/cmd's kube::test::get_object_assert).
assert_get() {
  local args=$1 template=$2 want=$3 got
  # shellcheck disable=SC2086
  got=$(kubectl get $args -o go-template="$template" 2>&1) || fail "[$CASE] get $args: $got"
  [ "$got" = "$want" ] || fail "[$CASE] get $args $template: got '$got', want '$want'"
}
# assert_jsonpath ARGS JSONPATH WANT (kube::test::get_object_jsonpath_assert).
assert_jsonpath() {
  local args=$1 path=$2 want=$3 got
  # shellcheck disable=SC2086
  got=$(kubectl get $args -o jsonpath="$path" 2>&1) || fail "[$CASE] get $args: $got"
  [ "$got" = "$want" ] || fail "[$CASE] get $args $path: got '$got', want '$want'"
}
ids='{{range.items}}{{.metadata.name}}:{{end}}'
taint='{{range .spec.taints}}{{if eq .key "dedicated"}}{{.key}}={{.value}}:{{.effect}}{{end}}{{end}}'
VALID_POD=$DATA/valid-pod.yaml

# ---- test/cmd/node-management.sh, run_cluster_management_tests ----
ported "node-management.sh: taint --dry-run=client and --dry-run=server add no taint"
run taint node dev --dry-run=client dedicated=foo:PreferNoSchedule
run taint node dev --dry-run=server dedicated=foo:PreferNoSchedule
assert_get "nodes dev" "$taint" ""
ported "node-management.sh: taint can add a taint (<key>=<value>:<effect>)"
run taint node dev dedicated=foo:PreferNoSchedule
assert_get "nodes dev" "$taint" "dedicated=foo:PreferNoSchedule"
ported "node-management.sh: taint can remove a taint"
run taint node dev dedicated-
assert_get "nodes dev" "$taint" ""
ported "node-management.sh: taint can add a taint (<key>:<effect>)"
run taint node dev dedicated:PreferNoSchedule
assert_get "nodes dev" "$taint" "dedicated=<no value>:PreferNoSchedule"
ported "node-management.sh: dry-run remove a taint leaves it"
run taint node dev --dry-run=client dedicated-
run taint node dev --dry-run=server dedicated-
assert_get "nodes dev" "$taint" "dedicated=<no value>:PreferNoSchedule"
run taint node dev dedicated-
assert_get "nodes dev" "$taint" ""
ported "node-management.sh: kubectl cordon update with --dry-run does not mark node unschedulable"
run cordon dev --dry-run=client
run cordon dev --dry-run=server
assert_get "nodes dev" "{{.spec.unschedulable}}" "<no value>"
ported "node-management.sh: kubectl drain update with --dry-run does not mark node unschedulable"
run drain dev --dry-run=client --force
run drain dev --dry-run=server --force
assert_get nodes "$ids" "dev:"
assert_get "nodes dev" "{{.spec.unschedulable}}" "<no value>"
ported "node-management.sh: kubectl uncordon update with --dry-run is a no-op"
run uncordon dev --dry-run=client
has "already uncordoned"
run uncordon dev --dry-run=server
has "already uncordoned"
assert_get "nodes dev" "{{.spec.unschedulable}}" "<no value>"
ported "node-management.sh: kubectl drain command fails when both --selector and a node argument are given"
run label node dev test=label
assert_get "nodes dev" "{{.metadata.labels.test}}" "label"
refused drain dev --selector test=label
has "cannot specify both a node name"
ported "node-management.sh: Test kubectl drain chunk size defaults to 500"
run --v=6 drain --force --selector test=label --dry-run=client
has 'GET https://.*/api/v1/nodes\?labelSelector=test%3Dlabel&limit=500 200 OK'
has 'GET https://.*/api/v1/pods\?fieldSelector=spec.nodeName%3Ddev&limit=500 200 OK'
ported "node-management.sh: kubectl cordon command fails when no arguments are passed"
refused cordon
has "error: USAGE: cordon NODE"
ported "node-management.sh: kubectl cordon selects no nodes with an empty --selector="
refused cordon --selector=
has "must provide one or more resources"
ported "node-management.sh: test=label matches our node"
run cordon --selector test=label
has "node/dev cordoned"
ported "node-management.sh: invalid=label does not match any nodes"
run cordon --selector invalid=label
hasnt "cordoned"
assert_get "nodes dev" "{{.spec.unschedulable}}" "true"
# The node stays cordoned through the pod cases: their pods stay Pending, as in test/cmd.

# ---- test/cmd/core.sh, run_pod_tests ----
ported "core.sh: Create POD valid-pod from JSON"
assert_get pods "$ids" ""
run create -f "$VALID_POD"
assert_get pods "$ids" "valid-pod:"
assert_get "pod valid-pod" "{{.metadata.name}}" "valid-pod"
assert_get "pod/valid-pod" "{{.metadata.name}}" "valid-pod"
assert_get "pods/valid-pod" "{{.metadata.name}}" "valid-pod"
ported "core.sh: pod has field manager for kubectl create"
run get --show-managed-fields -f "$VALID_POD" -o=jsonpath='{.metadata.managedFields[*].manager}'
has kubectl-create
ported "core.sh: Repeat above test using jsonpath template"
assert_jsonpath pods "{.items[*].metadata.name}" "valid-pod"
assert_jsonpath "pod valid-pod" "{.metadata.name}" "valid-pod"
assert_jsonpath "pod/valid-pod" "{.metadata.name}" "valid-pod"
assert_jsonpath "pods/valid-pod" "{.metadata.name}" "valid-pod"
ported "core.sh: Describe command should print detailed information"
run describe pods valid-pod
for w in "Name:" "Image:" "Node:" "Labels:" "Status:"; do has "$w"; done
ported "core.sh: Describe command (resource only) should print detailed information"
run describe pods
for w in "Name:" "Image:" "Node:" "Labels:" "Status:"; do has "$w"; done
ported "core.sh: Describe command should print events information by default"
run describe pods valid-pod
has "Events:"
run describe pods valid-pod --show-events=false
hasnt "Events:"
ported "core.sh: Delete POD valid-pod by id"
run get pod valid-pod -o yaml
DUMPED=$OUT
run delete pod valid-pod --grace-period=0 --force
assert_get pods "$ids" ""
ported "core.sh: Delete POD valid-pod by id with --now"
run create -f "$VALID_POD"
assert_get pods "$ids" "valid-pod:"
run delete pod valid-pod --now
assert_get pods "$ids" ""
ported "core.sh: Delete POD valid-pod by id with --grace-period=0"
run create -f "$VALID_POD"
run delete pod valid-pod --grace-period=0
assert_get pods "$ids" ""
ported "core.sh: Create POD valid-pod from dumped YAML"
# The dump carries what the server sets (uid, status): Tessera accepts it with warnings.
run create namespace dumped
OUT=$(sed '/namespace:/d' <<<"$DUMPED" | kubectl create -n dumped -f - 2>&1) || fail "[$CASE] $OUT"
assert_get "pods -n dumped" "$ids" "valid-pod:"
ported "core.sh: Delete POD valid-pod from JSON"
run delete -f "$VALID_POD" -n dumped --grace-period=0 --force
assert_get "pods -n dumped" "$ids" ""
ported "core.sh: Delete POD valid-pod with label"
run create -f "$VALID_POD"
assert_get "pods -l name=valid-pod" "$ids" "valid-pod:"
run delete pods -l'name in (valid-pod)' --grace-period=0 --force
assert_get "pods" "$ids" ""
ported "core.sh: get pods --field-selector metadata.name and status.phase"
run create -f "$VALID_POD"
run get pods --field-selector metadata.name=valid-pod
has valid-pod
phase=$(kubectl get pod valid-pod -o go-template='{{ .status.phase }}')
run get pods --field-selector status.phase="$phase"
has valid-pod
ported "core.sh: Delete PODs with no parameter mustn't kill everything"
refused delete pods
assert_get pods "$ids" "valid-pod:"
ported "core.sh: Delete PODs with --all and a label selector is not permitted"
refused delete --all pods -l'name in (valid-pod)'
assert_get pods "$ids" "valid-pod:"
ported "core.sh: Delete all PODs"
run delete --all pods --grace-period=0 --force
assert_get "pods -l name=valid-pod" "$ids" ""
ported "core.sh: Create two PODs"
run create -f "$VALID_POD"
run create -f "$DATA/agnhost-primary-pod.yaml"
assert_get pods "$ids" "agnhost-primary:valid-pod:"
ported "core.sh: Delete multiple PODs at once"
run delete pods valid-pod agnhost-primary --grace-period=0 --force
assert_get pods "$ids" ""
labels='{{range .metadata.labels}}{{.}}:{{end}}'
ported "core.sh: Dry-run label the valid-pod POD"
run create -f "$VALID_POD"
run label pods valid-pod new-name=new-valid-pod --dry-run=client
run label pods valid-pod new-name=new-valid-pod --dry-run=server
assert_get "pod valid-pod" "$labels" "valid-pod:"
ported "core.sh: Label the valid-pod POD"
run label pods valid-pod new-name=new-valid-pod
assert_get "pod valid-pod" "$labels" "valid-pod:new-valid-pod:"
ported "core.sh: Label the valid-pod POD with empty label value"
run label pods valid-pod emptylabel=""
assert_get "pod valid-pod" "{{.metadata.labels.emptylabel}}" ""
ported "core.sh: Dry-run annotate the valid-pod POD with empty annotation value"
run annotate pods valid-pod emptyannotation="" --dry-run=client
run annotate pods valid-pod emptyannotation="" --dry-run=server
assert_get "pod valid-pod" "{{.metadata.annotations.emptyannotation}}" "<no value>"
ported "core.sh: Annotate the valid-pod POD with empty annotation value"
run annotate pods valid-pod emptyannotation=""
assert_get "pod valid-pod" "{{.metadata.annotations.emptyannotation}}" ""
ported "core.sh: pod has field for kubectl annotate and kubectl label field managers"
assert_jsonpath "pod valid-pod" "{.metadata.managedFields[*].manager}" \
  "kubectl-create kubectl-label kubectl-annotate"
ported "core.sh: Delete POD by label"
run delete pods -lnew-name=new-valid-pod --grace-period=0 --force
assert_get pods "$ids" ""
ported "core.sh: Patch preserves precision (a patched annotation, then label and annotate)"
run create -f "$VALID_POD"
run patch pod valid-pod -p='{"metadata":{"annotations":{"patchkey": "patchvalue"}}}'
assert_get "pod valid-pod" "{{.metadata.annotations.patchkey}}" "patchvalue"
run label pods valid-pod labelkey=labelvalue
assert_get "pod valid-pod" "{{.metadata.labels.labelkey}}" "labelvalue"
run annotate pods valid-pod annotatekey=annotatevalue
assert_get "pod valid-pod" "{{.metadata.annotations.annotatekey}}" "annotatevalue"
ported "core.sh: Annotate POD YAML file locally without effecting the live pod"
run annotate --local -f "$VALID_POD" annotatekey=localvalue -o yaml
has localvalue
assert_get "pod valid-pod" "{{.metadata.annotations.annotatekey}}" "annotatevalue"
ported "core.sh: Patch can modify a local object"
run patch --local -f "$VALID_POD" --patch='{"spec": {"restartPolicy":"Never"}}' -o yaml
has "restartPolicy: Never"
ported "core.sh: Patch fails with type restore error and exit code 1"
# Kubernetes says "cannot restore map from string"; Tessera names the field.
refused patch pod valid-pod -p='{"metadata":{"labels":"invalid"}}'
has "metadata.labels: must be a map of strings"
assert_get "pod valid-pod" "{{.metadata.labels.name}}" "valid-pod"
image='{{range.items}}{{(index .spec.containers 0).image}}:{{end}}'
ported "core.sh: Patch pod can change image"
run patch pod valid-pod -p='{"spec":{"containers":[{"name": "kubernetes-serve-hostname", "image": "nginx"}]}}'
assert_get pods "$image" "nginx:"
ported "core.sh: prove that patch can use different types (json)"
run patch pod valid-pod --type="json" -p='[{"op": "replace", "path": "/spec/containers/0/image", "value":"nginx2"}]'
assert_get pods "$image" "nginx2:"
run patch pod valid-pod --type="json" -p='[{"op": "replace", "path": "/spec/containers/0/image", "value":"nginx"}]'
assert_get pods "$image" "nginx:"
ported "core.sh: Dry-run change image"
run patch pod valid-pod --dry-run=client -p='{"spec":{"containers":[{"name": "kubernetes-serve-hostname", "image": "not-nginx"}]}}'
run patch pod valid-pod --dry-run=server -p='{"spec":{"containers":[{"name": "kubernetes-serve-hostname", "image": "not-nginx"}]}}'
assert_get pods "$image" "nginx:"
ported "core.sh: prove that yaml input works too"
run patch pod valid-pod -p=$'spec:\n  containers:\n  - name: kubernetes-serve-hostname\n    image: changed-with-yaml\n'
assert_get pods "$image" "changed-with-yaml:"
run delete pod valid-pod --grace-period=0 --force

# ---- test/cmd/batch.sh, run_job_tests (Jobs from an image; Tessera has no CronJobs) ----
ported "batch.sh: Create a new namespace"
assert_get namespaces "{{range.items}}{{ if eq .metadata.name \"test-jobs\" }}found{{end}}{{end}}:" ":"
run create namespace test-jobs
assert_get "namespaces/test-jobs" "{{.metadata.name}}" "test-jobs"
ported "batch.sh: Create a job in dry-run mode"
run create job test-job --image=busybox --dry-run=client --namespace=test-jobs -o name
has "job.batch/test-job"
assert_get "jobs.batch --namespace=test-jobs" "$ids" ""
ported "batch.sh: Dry-run create a job in a specific namespace (server)"
run create job test-job --image=busybox --namespace=test-jobs --dry-run=server
assert_get "jobs.batch --namespace=test-jobs" "$ids" ""
ported "batch.sh: Create a job in a specific namespace"
run create job test-job --image=busybox --namespace=test-jobs -- true
assert_get "job/test-job --namespace=test-jobs" "{{.metadata.name}}" "test-job"
run get job/test-job --namespace=test-jobs
run describe job/test-job --namespace=test-jobs
has "Name: +test-job"
run delete job test-job --namespace=test-jobs
run delete namespace test-jobs

# ---- test/cmd/events.sh, run_kubectl_events_tests (a Pod's NotActedOn warning, for the
# dnsPolicy kubectl run writes, stands for the CronJob's InvalidSchedule: Tessera has no
# CronJobs) ----
run create namespace test-events
run run pi --image=busybox --restart=Never --namespace=test-events -- true
ported "events.sh: events --all-namespaces returns event for the pod"
run events -A
has "Warning +NotActedOn +Pod/pi"
ported "events.sh: events for test-events namespace returns event for the pod"
run events -n test-events
has "Warning +NotActedOn +Pod/pi"
ported "events.sh: events returns event for the pod when --for flag is used"
run events -n test-events --for=Pod/pi
has "Warning +NotActedOn +Pod/pi"
ported "events.sh: events returns event for the pod when watch is enabled"
OUT=$(kubectl events -n test-events --for=Pod/pi --watch --request-timeout=1 2>&1) || true
has "Warning +NotActedOn +Pod/pi"
ported "events.sh: events returns event for the pod when filtered by Warning"
run events -n test-events --for=Pod/pi --types=Warning
has "Warning +NotActedOn +Pod/pi"
ported "events.sh: events not returns event for the pod when filtered only by Normal"
run events -n test-events --for=Pod/pi --types=Normal
hasnt "NotActedOn"
ported "events.sh: events returns event for the pod without headers"
run events -n test-events --for=Pod/pi --no-headers
hasnt "LAST SEEN"
has "Warning +NotActedOn +Pod/pi"
ported "events.sh: events returns event for the pod in json format"
run events -n test-events --for=Pod/pi --output=json
has '"reason": "NotActedOn"'
ported "events.sh: events returns event for the pod in yaml format"
run events -n test-events --for=Pod/pi --output=yaml
has "reason: NotActedOn"
ported "events (the issue's case): get events --sort-by=.lastTimestamp in a namespace lists them"
run get events -n test-events --sort-by=.lastTimestamp
has "Warning +NotActedOn +pod/pi"
run delete namespace test-events

# ---- test/cmd/delete.sh, run_kubectl_delete_allnamespaces_tests (Pods for ConfigMaps:
# Tessera keeps only device-plugin ConfigMaps) ----
ported "delete.sh: delete --all-namespaces by label, dry-run first"
run create namespace ns-one
run create namespace ns-two
run create -f "$VALID_POD" --namespace=ns-one
run create -f "$VALID_POD" --namespace=ns-two
run label pod valid-pod --namespace=ns-one deletetest=true
run label pod valid-pod --namespace=ns-two deletetest=true
run delete pods --dry-run=client -l deletetest=true --all-namespaces
run delete pods --dry-run=server -l deletetest=true --all-namespaces
assert_get "pods -l deletetest -n ns-one" "$ids" "valid-pod:"
assert_get "pods -l deletetest -n ns-two" "$ids" "valid-pod:"
run delete pods -l deletetest=true --all-namespaces
assert_get "pods -l deletetest -n ns-one" "$ids" ""
assert_get "pods -l deletetest -n ns-two" "$ids" ""

# ---- test/cmd/wait.sh, run_wait_tests (Pods for Deployments: Tessera has no Deployments) ----
run create namespace test-wait
run create -f "$VALID_POD" --namespace=test-wait
ported "wait.sh: Wait with jsonpath support fields not exist in the first place"
refused wait --for=jsonpath=.status.podIP=1.2.3.4 pod/valid-pod -n test-wait --timeout=1s
has "timed out"
ported "wait.sh: wait timeout error because condition is invalid"
start_sec=$(date +%s)
refused wait pod --selector=name=valid-pod -n test-wait --for=condition=InvalidCondition --timeout=1s
has "timed out waiting for the condition"
len_sec=$(($(date +%s) - start_sec))
[ "$len_sec" -ge 1 ] && [ "$len_sec" -le 3 ] || fail "[$CASE] waited ${len_sec}s"
ported "wait.sh: Wait with jsonpath without value"
run wait --for=jsonpath='{.status.phase}' pod/valid-pod -n test-wait
has "pod/valid-pod condition met"
ported "wait.sh: Wait for all to be deleted"
run create -f "$DATA/agnhost-primary-pod.yaml" --namespace=test-wait
(sleep 2 && kubectl delete pods --all -n test-wait >/dev/null 2>&1) &
deleter=$!
run wait pods --for=delete --all -n test-wait --timeout=30s
has "valid-pod condition met"
has "agnhost-primary condition met"
wait "$deleter"

# ---- test/cmd/exec.sh, run_kubectl_exec_pod_tests and run_kubectl_exec_resource_name_tests
# (the pod is Pending on the cordoned node, as test/cmd's never runs) ----
ported "exec.sh: Test execute non-existing POD"
refused exec abc -- date
has 'pods "abc" not found'
ported "exec.sh: Test execute multiple resources"
OUT=$(printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: test}\nspec: {containers: [{name: c, image: busybox}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: test2}\nspec: {containers: [{name: c, image: busybox}]}\n' |
  kubectl exec -f - -- echo test 2>&1) && fail "[$CASE] exec -f of two pods: $OUT"
has "cannot exec into multiple objects at a time"
ported "exec.sh: Test execute existing POD"
run create -f "$VALID_POD"
refused exec valid-pod -- date
hasnt 'pods "valid-pod" not found'
hasnt "pod or type/name must be specified"
ported "exec.sh: Test execute invalid resource type"
refused exec foo/bar -- date
has "error:"
ported "exec.sh: Test execute exists and valid resource type"
refused exec pods/valid-pod -- date
hasnt "not found"
run delete pod valid-pod --grace-period=0 --force

# ---- test/cmd/auth_whoami.sh and authorization.sh ----
ported "auth_whoami.sh: should return user attributes"
run auth whoami -o json
has '"kind": "SelfSubjectReview"'
ported "authorization.sh: run_impersonation_tests --as-group without a user is refused"
refused get pods --as-group=foo
has "impersonat"

echo "PASS: $PORTED cases ported from Kubernetes' test/cmd"
[ "$PORTED" -ge 60 ] || fail "only $PORTED ported cases"
