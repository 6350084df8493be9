#!/usr/bin/env bash
# Moving to replicas: a server's state on SQLite copied to etcd (`tessera store copy`), then a
# server on etcd serves the same objects and the same accounting, and the tokens made before work
# there. A running server's directory, an etcd prefix that holds objects, and a bad URL are
# refused. The etcd client is a module of its own, and the binary runs without it.
source "$(dirname "$0")/server_env.sh" "$1"
command -v etcd >/dev/null || fail "Debian's etcd-server is not installed"
SERVER_ARGS=--plain-http start_server
for i in 1 2 3; do
  printf 'apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: j%d, namespace: team-a}\nspec: {tasks: [{name: main, command: ["true"]}]}\n' "$i" >>"$WORK/jobs.yaml"
  printf -- '---\n' >>"$WORK/jobs.yaml"
done
expect_exit 0 "$TESSERA" apply -f "$WORK/jobs.yaml"
expect_exit 0 "$TESSERA" token create --namespace team-a
team=$OUT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
peer=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
etcd --name e --data-dir "$WORK/etcd" --listen-client-urls "http://127.0.0.1:$port" \
  --advertise-client-urls "http://127.0.0.1:$port" --listen-peer-urls "http://127.0.0.1:$peer" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "e=http://127.0.0.1:$peer" \
  --logger zap --log-outputs "$WORK/etcd.log" &
ETCD=$!
trap 'kill -9 $ETCD 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 200); do curl -s "http://127.0.0.1:$port/health" | grep -q '"true"' && break; sleep 0.05; done

# The server still runs: its directory is refused.
expect_exit 1 "$TESSERA" store copy --from "$WORK/data" --to "etcd://127.0.0.1:$port/moved"
expect_out "data directory"
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
# The ledger holds two GPU-hours of j1 (ended an hour ago) and j2's holding, still open.
python3 - "$WORK/data/usage.db" <<'PY'
import sqlite3, sys, time
now = int(time.time() * 1000)
db = sqlite3.connect(sys.argv[1])
row = "INSERT INTO segments(kind, key, ns, queue, job, pod, model, gpu_milli, start_ms, end_ms) VALUES(0, ?, 'team-a', 'q', ?, 'main-0', 'A100', 1000, ?, ?)"
db.execute(row, ("team-a/j1/main-0/0", "j1", now - 3 * 3600_000, now - 3600_000))
db.execute(row, ("team-a/j2/main-0/0", "j2", now - 3600_000, -1))
db.commit()
PY
expect_exit 2 "$TESSERA" store copy --from "$WORK/data" --to "http://127.0.0.1:$port"
expect_out "--to"
expect_exit 0 "$TESSERA" store copy --from "sqlite:$WORK/data" --to "etcd://127.0.0.1:$port/moved"
expect_out "copied"
expect_out "Job: 3"
expect_out "usage segments: 2 (1 open)"
# Again into the same prefix: refused, nothing overwritten.
expect_exit 1 "$TESSERA" store copy --from "$WORK/data" --to "etcd://127.0.0.1:$port/moved"
expect_out "holds objects already"

# A server on etcd (a fresh data directory) serves them, to the tokens made before.
mv "$WORK/data" "$WORK/sqlite-data"
SERVER_ARGS="--plain-http --store etcd://127.0.0.1:$port/moved" start_server
export TESSERA_TOKEN=$(cat "$WORK/sqlite-data/admin.token")
expect_exit 0 "$TESSERA" get jobs -n team-a
expect_out "j1"
expect_out "j3"
TESSERA_TOKEN=$team expect_exit 0 "$TESSERA" get job j2 -n team-a
TESSERA_TOKEN=$team expect_exit 1 "$TESSERA" get jobs -n team-b
# The accounting came along: j1's two GPU-hours, read from etcd's ledger.
expect_exit 0 "$TESSERA" usage --by job --since 7d -o csv
expect_out "team-a,j1,2.000000,"

# etcd's client is a module beside the binary (store/etcd_module.h): the binary itself needs none
# of gRPC's libraries, and a command that reaches etcd without the module says what is missing.
if readelf -d "$TESSERA" | grep -E "NEEDED.*(grpc|protobuf|absl)"; then
  fail "the binary links gRPC's libraries itself"
fi
mkdir "$WORK/alone"
cp "$TESSERA" "$WORK/alone/tessera"
expect_exit 1 "$WORK/alone/tessera" store status --store "etcd://127.0.0.1:$port/moved"
expect_out "libtessera-etcd.so (built with this binary, kept beside it) cannot be loaded"
expect_exit 0 "$WORK/alone/tessera" get jobs -n team-a
expect_out "j1"
echo "store_copy_test: ok"
