#!/usr/bin/env bash
# kubectl (the one on PATH: Debian's kubernetes-client where the set-up installed it) against
# `tessera dev` through the kubeconfig dev writes: HTTPS with dev's own CA, the admin token,
# discovery, Tessera's kinds in their group, and core/v1 Nodes with their GPUs.
set -euo pipefail
TESSERA=$1
WORK=$(mktemp -d /tmp/tessera-kubectl-XXXXXX)
DEV_PID=
cleanup() {
  if [ -n "$DEV_PID" ]; then kill "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v kubectl >/dev/null || fail "kubectl is not installed (scripts/install-deps.sh installs it)"
export HOME=$WORK/home
unset TESSERA_ADDR TESSERA_TOKEN TESSERA_CA
mkdir -p "$HOME"
cd "$WORK"
"$TESSERA" dev --listen 127.0.0.1:0 --fake-gpus 4xA100-80GB >"$WORK/dev.out" 2>&1 &
DEV_PID=$!
for _ in $(seq 200); do grep -q "listening on" "$WORK/dev.out" && break; sleep 0.05; done
grep -q "listening on https://" "$WORK/dev.out" || fail "dev did not serve HTTPS: $(cat "$WORK/dev.out")"
export KUBECONFIG=$HOME/.tessera/kubeconfig
[ "$(stat -c %a "$KUBECONFIG")" = 600 ] || fail "kubeconfig is not private"
echo "kubectl: $(kubectl version --client 2>/dev/null | head -1)"

out=$(kubectl version 2>&1) || fail "kubectl version: $out"
grep -q "Server Version" <<<"$out" || fail "no server version: $out"

out=$(kubectl api-resources 2>&1) || fail "api-resources: $out"
grep -qE '^nodes +no +v1 +false +Node' <<<"$out" || fail "core nodes not discovered: $out"
grep -qE '^jobs +tessera.io/v1 +true +Job' <<<"$out" || fail "tessera jobs not discovered: $out"
grep -qE '^podgroups +pg +tessera.io/v1 +true +PodGroup' <<<"$out" || fail "podgroups: $out"

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

# Tessera's own kinds, in their group.
out=$(kubectl get nodes.tessera.io dev -o jsonpath='{.status.gpus[0].model}' 2>&1) ||
  fail "tessera node: $out"
[ "$out" = "A100-80GB" ] || fail "tessera node GPU model: $out"
out=$(kubectl get jobs -A 2>&1) || fail "get jobs: $out"
grep -q "No resources found" <<<"$out" || fail "jobs: $out"

# What is not served says so, and a bad token is refused.
out=$(kubectl get pods 2>&1) && fail "pods listed: $out"
grep -qi "the server doesn't have a resource type\|could not find the requested resource" <<<"$out" ||
  fail "pods: $out"
out=$(kubectl --token nope get nodes 2>&1) && fail "bad token accepted: $out"
grep -qi "unauthorized\|must be logged in" <<<"$out" || fail "bad token: $out"
echo "PASS"
