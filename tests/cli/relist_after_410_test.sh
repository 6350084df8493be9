#!/usr/bin/env bash
# Clients list again after 410 Gone, as they do against kube-apiserver. A `tessera server` replica
# on etcd is killed while kubectl waits on an object. While it is down, etcd moves on and its
# history is compacted. The replica comes back on the same address with a watch cache that starts
# after the waiter's resourceVersion.
# - kubectl's watch resumes from that version and gets 410 Gone. Its reflector lists again, sees
#   the change, and the wait ends.
# - Kubernetes' Python client (python3-kubernetes) gets 410 on a watch from a compacted version.
#   As its documentation says, it retries once and then raises ApiException(410). Listing again
#   and watching from the list's version sees the next change.
# Usage: relist_after_410_test.sh TESSERA_BINARY
set -euo pipefail
TESSERA=$1
WORK=$(mktemp -d /tmp/tessera-relist-XXXXXX)
chmod 711 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for _ in 1 2 3 4 5 6 7 8 9 10; do rm -rf "$WORK" 2>/dev/null && break; sleep 0.2; done
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$WORK"/*.out; do echo "--- $f" >&2; tail -30 "$f" >&2; done
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
command -v etcd >/dev/null || fail "Debian's etcd-server is not installed"
command -v kubectl >/dev/null || fail "kubectl is not installed"
/usr/bin/python3 -c "import kubernetes" 2>/dev/null || fail "python3-kubernetes is not installed"

client=$(free_port) peer=$(free_port)
etcd --name e --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$client" \
  --advertise-client-urls "http://127.0.0.1:$client" --listen-peer-urls "http://127.0.0.1:$peer" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "e=http://127.0.0.1:$peer" \
  --logger zap --log-outputs "$WORK/etcd.log" &
PIDS+=("$!")
for _ in $(seq 200); do curl -s "http://127.0.0.1:$client/health" | grep -q '"true"' && break; sleep 0.05; done
gateway() { curl -sf -X POST "http://127.0.0.1:$client/v3/$1" -d "$2"; }

port=$(free_port)
start_server() {
  "$TESSERA" server --data-dir "$WORK/data" --listen "127.0.0.1:$port" \
    --store "etcd://127.0.0.1:$client/relist" --replica-id r >"$WORK/server.out" 2>&1 &
  SERVER=$!
  PIDS+=("$SERVER")
  for _ in $(seq 300); do grep -q "listening on" "$WORK/server.out" && break; sleep 0.05; done
  grep -q "listening on" "$WORK/server.out" || fail "the server did not start"
}
start_server
# kubectl sends a token over TLS only: the server's own CA (in its data directory) is trusted.
export KUBECONFIG=$WORK/kubeconfig
cat >"$KUBECONFIG" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: t, cluster: {server: "https://127.0.0.1:$port", certificate-authority: "$WORK/data/tls/ca.crt"}}]
users: [{name: admin, user: {token: "$(cat "$WORK/data/admin.token")"}}]
contexts: [{name: t, context: {cluster: t, user: admin}}]
current-context: t
YAML
chmod 600 "$KUBECONFIG"

kubectl create namespace relist >/dev/null || fail "kubectl create namespace"
old_rv=$(kubectl get --raw /api/v1/namespaces |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
[ -n "$old_rv" ] || fail "no resourceVersion on the list"
kubectl wait --for=jsonpath='{.metadata.labels.done}'=yes namespace/relist --timeout=120s -v=6 \
  >"$WORK/wait.out" 2>&1 &
WAITER=$!
PIDS+=("$WAITER")
for _ in $(seq 200); do grep -q "watch=true" "$WORK/wait.out" && break; sleep 0.05; done
grep -q "watch=true" "$WORK/wait.out" || fail "kubectl wait never watched"
# A watch that ends within a second makes client-go list again at once; this one lasts longer, so
# the reflector resumes it from its resourceVersion.
sleep 2

# The replica dies; etcd moves on (another writer's key) and compacts its history meanwhile.
kill -9 "$SERVER"
wait "$SERVER" 2>/dev/null || true
put=$(gateway kv/put "{\"key\":\"$(printf '/relist/_elsewhere' | base64)\",\"value\":\"eA==\"}")
rev=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["header"]["revision"])' "$put")
gateway kv/compaction "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null || fail "compaction"
start_server

# kubectl: its watch from before gets 410; it lists again and sees the label.
for _ in $(seq 300); do grep -q "watch=true 410 Gone" "$WORK/wait.out" && break; sleep 0.05; done
grep -q "resourceVersion=$old_rv&.*watch=true 410 Gone" "$WORK/wait.out" ||
  fail "kubectl's watch from $old_rv was not answered 410"
kubectl label namespace relist done=yes >/dev/null || fail "kubectl label"
rc=0
wait "$WAITER" || rc=$?
[ "$rc" = 0 ] || fail "kubectl wait did not see the change after 410 (exit $rc)"
# After the 410: a list, then a watch from the list's newer version.
python3 - "$WORK/wait.out" "$old_rv" <<'PY' || fail "kubectl did not list again after 410"
import re, sys
lines = [l for l in open(sys.argv[1]) if "GET https" in l and "/api/v1/namespaces?" in l]
gone = next(i for i, l in enumerate(lines) if "watch=true 410 Gone" in l)
after = lines[gone + 1:]
assert after and "watch=true" not in after[0] and " 200 OK" in after[0], after[:1]
rv = [int(m.group(1)) for l in after[1:] if "watch=true" in l
      for m in [re.search(r"resourceVersion=(\d+)", l)] if m]
assert rv and rv[0] > int(sys.argv[2]), rv
print("kubectl: watch from %s answered 410, listed again, watched from %d" % (sys.argv[2], rv[0]))
PY

# The Python client: 410 from the compacted version, then list and watch again.
timeout 60 /usr/bin/python3 - "$old_rv" <<'PY' >"$WORK/python.out" 2>&1 || fail "python client: $(cat "$WORK/python.out")"
import sys, threading, time
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
config.load_kube_config()
v1 = client.CoreV1Api()
try:
    for e in watch.Watch().stream(v1.list_namespace, resource_version=sys.argv[1]):
        sys.exit("an event from a compacted version: %s" % e["type"])
except ApiException as e:
    assert e.status == 410, "not 410: %s" % e
listed = v1.list_namespace()
threading.Thread(target=lambda: (time.sleep(1), v1.create_namespace(
    client.V1Namespace(metadata=client.V1ObjectMeta(name="relist-py"))))).start()
w = watch.Watch()
for e in w.stream(v1.list_namespace, resource_version=listed.metadata.resource_version,
                  timeout_seconds=30):
    if e["object"].metadata.name == "relist-py" and e["type"] == "ADDED":
        print("python: 410, listed again, saw relist-py added")
        w.stop()
        break
else:
    sys.exit("the watch from the new list saw nothing")
PY
cat "$WORK/python.out"
echo "relist_after_410_test: ok"
