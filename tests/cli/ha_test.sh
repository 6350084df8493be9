#!/usr/bin/env bash
# Two `tessera server` replicas on a three-member etcd (Debian's etcd-server, started here on
# free loopback ports): both serve the API, one runs the scheduling loop. kill -9 of the leader:
# the other schedules within the election's TTL plus a few seconds, the task that was running
# keeps its PID, and every acknowledged job is there. SIGSTOP of the new leader past its lease:
# a third replica takes over, and the stopped one, continued, writes nothing (its fence is gone).
# One etcd member killed: service goes on; two: writes fail with 503 until they return. The
# accounting a recorded is b's to answer: the ledger is in etcd.
# Usage: ha_test.sh TESSERA_BINARY
set -euo pipefail
TESSERA=$1
WORK=$(mktemp -d /tmp/tessera-ha-XXXXXX)
chmod 711 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
  for _ in 1 2 3 4 5 6 7 8 9 10; do rm -rf "$WORK" 2>/dev/null && break; sleep 0.2; done
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$WORK"/*.out; do echo "--- $f" >&2; tail -20 "$f" >&2; done
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
command -v etcd >/dev/null || fail "Debian's etcd-server is not installed"

# Three etcd members.
CLIENT=() PEER=() ETCD_PID=()
for i in 0 1 2; do CLIENT+=("$(free_port)"); PEER+=("$(free_port)"); done
cluster="e0=http://127.0.0.1:${PEER[0]},e1=http://127.0.0.1:${PEER[1]},e2=http://127.0.0.1:${PEER[2]}"
start_etcd() {
  local i=$1
  etcd --name "e$i" --data-dir "$WORK/etcd$i" \
    --listen-client-urls "http://127.0.0.1:${CLIENT[$i]}" --advertise-client-urls "http://127.0.0.1:${CLIENT[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${PEER[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${PEER[$i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new --logger zap --log-outputs "$WORK/etcd$i.log" &
  ETCD_PID[$i]=$!
  PIDS+=("$!")
}
for i in 0 1 2; do start_etcd "$i"; done
for _ in $(seq 200); do curl -s "http://127.0.0.1:${CLIENT[0]}/health" | grep -q '"true"' && break; sleep 0.05; done
curl -s "http://127.0.0.1:${CLIENT[0]}/health" | grep -q '"true"' || fail "etcd did not become healthy"
STORE="etcd://127.0.0.1:${CLIENT[0]},127.0.0.1:${CLIENT[1]},127.0.0.1:${CLIENT[2]}/ha"

# A replica named $1 on its own data directory; its address in ADDR_$1.
start_replica() {
  local name=$1
  "$TESSERA" server --data-dir "$WORK/$name" --listen 127.0.0.1:0 --plain-http --store "$STORE" \
    --replica-id "$name" --leader-ttl-seconds 5 --node-grace-seconds 30 \
    --compact-interval-seconds 2 >"$WORK/$name.out" 2>&1 &
  PIDS+=("$!")
  eval "PID_$name=$!"
  for _ in $(seq 300); do grep -q "listening on" "$WORK/$name.out" && break; sleep 0.05; done
  grep -q "listening on" "$WORK/$name.out" || fail "replica $name did not start"
  eval "ADDR_$name=$(sed -n 's/^listening on //p' "$WORK/$name.out")"
}
start_replica a
export TESSERA_TOKEN=$(cat "$WORK/a/admin.token")
metric() { curl -s -H "Authorization: Bearer $TESSERA_TOKEN" "http://$1/metrics" | sed -n "s/^$2 //p"; }
for _ in $(seq 200); do [ "$(metric "$ADDR_a" tessera_leader)" = 1 ] && break; sleep 0.05; done
[ "$(metric "$ADDR_a" tessera_leader)" = 1 ] || fail "replica a never led"
start_replica b
sleep 1
[ "$(metric "$ADDR_b" tessera_leader)" = 0 ] || fail "b leads beside a"

# tessera store status: the leader, both replicas with their watch's lag, the three members.
for _ in $(seq 100); do
  status=$("$TESSERA" store status --store "$STORE" -o json)
  [ "$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["replicas"]))' <<<"$status")" = 2 ] && break
  sleep 0.1
done
python3 - "$status" <<'PYEOF' || fail "store status: $status"
import json, sys
s = json.loads(sys.argv[1])
assert s["leader"] == "a", s["leader"]
replicas = {r["id"]: r for r in s["replicas"]}
assert set(replicas) == {"a", "b"}, replicas
assert replicas["a"]["leader"] and not replicas["b"]["leader"], replicas
assert all(0 <= r["lag"] < 1000 and r["address"] for r in replicas.values()), replicas
assert len(s["members"]) == 3 and all(m["dbSize"] > 0 and m["version"] for m in s["members"]), s["members"]
assert sum(m["isLeader"] for m in s["members"]) == 1, s["members"]
assert s["alarms"] == [], s["alarms"]
PYEOF
"$TESSERA" store status --store "$STORE" | grep -q "scheduler leader: a" || fail "store status as text"

# An agent and the client given both replicas, the leader first: when it dies they go on with b.
export TESSERA_ADDR=$ADDR_a,$ADDR_b
join=$("$TESSERA" token create --agent)
printf '%s\n' "$join" >"$WORK/join.token" && chmod 600 "$WORK/join.token"
"$TESSERA" agent --fake-gpus 2xH100-80GB --name n1 --join-token-file "$WORK/join.token" \
  --server "$ADDR_a,$ADDR_b" --heartbeat-seconds 1 --work-dir "$WORK/agent" >"$WORK/agent.out" 2>&1 &
PIDS+=("$!")
job() { printf 'apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: %s}\nspec: {tasks: [{name: main, command: ["sleep", "%s"], resources: {limits: {nvidia.com/gpu: 1}}}]}\n' "$1" "$2"; }
# The Job's phase, or Running once its first pod runs.
phase() {
  "$TESSERA" get job "$1" -o json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin).get("status", {})
pods = s.get("pods") or [{}]
print("Running" if s.get("phase") == "Admitted" and (pods[0] or {}).get("state", {}).get("phase") == "Running" else s.get("phase", ""))' 2>/dev/null || true
}
# Two Jobs in one apply, bound in one cycle: one etcd transaction, so one revision for both.
# The agent's watch shows each, and it runs both.
{ job pair-a 0; echo ---; job pair-b 0; } | "$TESSERA" apply -f - >/dev/null
for _ in $(seq 400); do [ "$(phase pair-a) $(phase pair-b)" = "Succeeded Succeeded" ] && break; sleep 0.05; done
[ "$(phase pair-a) $(phase pair-b)" = "Succeeded Succeeded" ] ||
  fail "Jobs bound in one transaction did not both run: $(phase pair-a) $(phase pair-b)"
{ job long 300; echo ---; job brief 1; } | "$TESSERA" apply -f - >/dev/null
for _ in $(seq 300); do [ "$(phase long) $(phase brief)" = "Running Succeeded" ] && break; sleep 0.05; done
[ "$(phase long)" = Running ] || fail "job long not Running: $(phase long)"
[ "$(phase brief)" = Succeeded ] || fail "job brief did not end: $(phase brief)"
# a's accountant records brief's end in the ledger (a cycle after it ended).
sleep 1
pid_before=$(pgrep -f "sleep 300" | head -1)
[ -n "$pid_before" ] || fail "no process for job long"

# kill -9 the leader; a job created after it is placed by b.
kill -9 "$PID_a"
killed=$(date +%s.%N)
job after 1 | "$TESSERA" apply -f - >/dev/null || fail "the client did not go on with b after a died"
for _ in $(seq 400); do case $(phase after) in Running | Succeeded) break ;; esac; sleep 0.05; done
took=$(python3 -c "import time; print(round(time.time() - $killed, 1))")
case $(phase after) in Running | Succeeded) ;; *) fail "b did not schedule within 20 s of the kill: $(phase after)" ;; esac
[ "$(metric "$ADDR_b" tessera_leader)" = 1 ] || fail "b does not say it leads"
[ "$(pgrep -f "sleep 300" | head -1)" = "$pid_before" ] || fail "the running task's PID changed"
[ "$(phase long)" = Running ] || fail "job long disturbed: $(phase long)"
echo "ha_test: leader killed, b scheduled after ${took} s"
# The accounting ledger lives in etcd: b answers with what a recorded, brief's GPU-time included.
usage=$("$TESSERA" usage --by job --since 1h -o csv) || fail "usage after the kill: $usage"
grep -q "^default,brief,0\.000[1-9]" <<<"$usage" || fail "b's ledger lacks brief, which ran under a: $usage"

# SIGSTOP b (the leader) past its lease: c takes over; b continued writes nothing.
start_replica c
kill -STOP "$PID_b"
export TESSERA_ADDR=$ADDR_c,$ADDR_b
for _ in $(seq 400); do [ "$(metric "$ADDR_c" tessera_leader)" = 1 ] && break; sleep 0.05; done
[ "$(metric "$ADDR_c" tessera_leader)" = 1 ] || fail "c never took over from the stopped b"
kill -CONT "$PID_b"
sleep 2
[ "$(metric "$ADDR_b" tessera_leader)" = 0 ] || fail "b, continued, still says it leads"
grep -q "no longer leads" "$WORK/b.out" && echo "ha_test: b's late writes were fenced off" || true

# The leader compacts etcd's history: a list at a compacted revision is 410 Gone, as
# kube-apiserver answers (clients list again).
code=
for _ in $(seq 100); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TESSERA_TOKEN" \
    "http://$ADDR_c/apis/tessera.io/v1/namespaces/default/jobs?resourceVersion=2&resourceVersionMatch=Exact")
  [ "$code" = 410 ] && break
  sleep 0.1
done
[ "$code" = 410 ] || fail "a list at a compacted revision answered $code"

# One etcd member down: writes go on. Two down: 503, then back.
kill -9 "${ETCD_PID[2]}"
job one-down 1 | "$TESSERA" apply -f - >/dev/null || fail "apply failed with one etcd member down"
kill -9 "${ETCD_PID[1]}"
set +e
out=$(job two-down 1 | timeout 60 "$TESSERA" apply -f - 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "apply succeeded without an etcd quorum"
grep -q "503\|Unavailable\|unavailable" <<<"$out" || fail "no clear 503 without a quorum: $out"
echo "ha_test: without a quorum: $out"
start_etcd 1
start_etcd 2
for _ in $(seq 600); do job back 1 | "$TESSERA" apply -f - >/dev/null 2>&1 && break; sleep 0.1; done
job back 1 | "$TESSERA" apply -f - >/dev/null || fail "writes did not come back with the quorum"
echo "ha_test: ok"
