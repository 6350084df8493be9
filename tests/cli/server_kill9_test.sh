#!/usr/bin/env bash
# Acknowledged writes survive kill -9 of the server: a client applies jobs one by one and
# records each acknowledgement; the server is killed mid-stream and restarted; every
# acknowledged job is there.
source "$(dirname "$0")/server_env.sh" "$1"
start_server

(
  i=0
  while true; do
    printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers: [{name: c}]\n' "$i" |
      "$TESSERA" apply -f - >/dev/null 2>&1 || exit 0
    echo "$i" >>"$WORK/acked"
    i=$((i + 1))
  done
) &
CLIENT=$!
for _ in $(seq 200); do
  [ -f "$WORK/acked" ] && [ "$(wc -l <"$WORK/acked")" -ge 40 ] && break
  sleep 0.05
done
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
wait "$CLIENT" 2>/dev/null || true
SERVER_PID=
acked=$(wc -l <"$WORK/acked")
[ "$acked" -ge 40 ] || fail "only $acked applies acknowledged before the kill"

# Restarted with --fsync-every-commit: the same database opens, and writes go on.
SERVER_ARGS="${SERVER_ARGS:-} --fsync-every-commit" start_server
expect_exit 0 "$TESSERA" get jobs -o json
present=$(echo "$OUT" | grep -c '"name": "p[0-9]*"' || true)
last=$(tail -n 1 "$WORK/acked")
expect_exit 0 "$TESSERA" get job "p$last" -o json
[ "$present" -ge "$acked" ] || fail "$acked acknowledged, $present present after restart"
printf 'apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: after}\nspec: {tasks: [{name: main, command: ["true"]}]}\n' >"$WORK/after.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/after.yaml"
echo "server_kill9_test: $acked acknowledged, $present present after kill -9 and restart: ok"
