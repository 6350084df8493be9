#!/usr/bin/env bash
# Failover time of the scheduler on etcd: a three-member etcd (Debian's etcd-server) and two
# `tessera server` replicas with the default election TTL (10 s) on this machine, one node agent
# given both. KILLS times (10): kill -9 the leader, create a one-GPU Job through the survivor, and
# time from the kill to the Job's placement; then start the killed replica again as the standby.
# Prints each time, then the median and the maximum.
# Usage: bench/failover.sh [TESSERA_BINARY] [KILLS]
set -euo pipefail
TESSERA=${1:-build/tessera}
KILLS=${2:-10}
WORK=$(mktemp -d /tmp/tessera-failover-XXXXXX)
chmod 711 "$WORK"  # tasks run as users of their own
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$WORK" 2>/dev/null || true
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CLIENT=() PEER=()
for i in 0 1 2; do CLIENT+=("$(free_port)"); PEER+=("$(free_port)"); done
cluster="e0=http://127.0.0.1:${PEER[0]},e1=http://127.0.0.1:${PEER[1]},e2=http://127.0.0.1:${PEER[2]}"
for i in 0 1 2; do
  etcd --name "e$i" --data-dir "$WORK/etcd$i" \
    --listen-client-urls "http://127.0.0.1:${CLIENT[$i]}" --advertise-client-urls "http://127.0.0.1:${CLIENT[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${PEER[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${PEER[$i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new --logger zap --log-outputs "$WORK/etcd$i.log" &
  PIDS+=("$!")
done
for _ in $(seq 200); do curl -s "http://127.0.0.1:${CLIENT[0]}/health" | grep -q '"true"' && break; sleep 0.05; done
STORE="etcd://127.0.0.1:${CLIENT[0]},127.0.0.1:${CLIENT[1]},127.0.0.1:${CLIENT[2]}/bench"
declare -A PORT PID
PORT[a]=$(free_port)
PORT[b]=$(free_port)
start_replica() {
  "$TESSERA" server --data-dir "$WORK/$1" --listen "127.0.0.1:${PORT[$1]}" --plain-http --store "$STORE" \
    --replica-id "$1" >>"$WORK/$1.out" 2>&1 &
  PID[$1]=$!
  PIDS+=("$!")
  for _ in $(seq 300); do curl -s "http://127.0.0.1:${PORT[$1]}/healthz" >/dev/null && return; sleep 0.05; done
  echo "replica $1 did not start" >&2
  exit 1
}
start_replica a
export TESSERA_TOKEN=$(cat "$WORK/a/admin.token")
start_replica b
export TESSERA_ADDR="127.0.0.1:${PORT[a]},127.0.0.1:${PORT[b]}"
"$TESSERA" token create --agent >"$WORK/join.token"
chmod 600 "$WORK/join.token"
"$TESSERA" agent --fake-gpus 8xH100-80GB --name n1 --join-token-file "$WORK/join.token" \
  --heartbeat-seconds 1 --work-dir "$WORK/agent" >"$WORK/agent.out" 2>&1 &
PIDS+=("$!")
leader() {
  for r in a b; do
    [ "$(curl -s -H "Authorization: Bearer $TESSERA_TOKEN" "http://127.0.0.1:${PORT[$r]}/metrics" |
      sed -n 's/^tessera_leader //p')" = 1 ] && echo "$r" && return
  done
}
admitted() {
  "$TESSERA" get job "$1" -o json 2>/dev/null | grep -q '"phase": "\(Admitted\|Succeeded\)"'
}
times=()
for k in $(seq "$KILLS"); do
  for _ in $(seq 600); do [ -n "$(leader)" ] && break; sleep 0.05; done
  l=$(leader)
  [ -n "$l" ] || { echo "no leader before kill $k" >&2; exit 1; }
  kill -9 "${PID[$l]}"
  wait "${PID[$l]}" 2>/dev/null || true
  t0=$(date +%s.%N)
  printf 'apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: after-%d}\nspec: {tasks: [{name: main, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]}\n' "$k" |
    "$TESSERA" apply -f - >/dev/null
  for _ in $(seq 1200); do admitted "after-$k" && break; sleep 0.05; done
  admitted "after-$k" || { echo "job after-$k not placed within 60 s of kill $k" >&2; exit 1; }
  t=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  times+=("$t")
  echo "kill $k: leader $l killed, the job placed after $t s"
  start_replica "$l"
done
printf '%s\n' "${times[@]}" | sort -n | python3 -c '
import sys, statistics
t = [float(x) for x in sys.stdin]
print(f"failover over {len(t)} kills: median {statistics.median(t):.1f} s, max {max(t):.1f} s")'
