# Shared by the CLI tests: starts `tessera server` on a free loopback port over a fresh data
# directory and stops it on exit. Usage: source server_env.sh TESSERA_BINARY
set -euo pipefail
TESSERA=$1
WORK=$(mktemp -d /tmp/tessera-cli-XXXXXX)
# Tasks run as users of their own (docs/SECURITY.md): they pass through it to their work.
chmod 711 "$WORK"
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill -9 "$SERVER_PID" 2>/dev/null || true; fi
  # An agent's fence keeper (a session of its own) may still be leaving its state directory.
  for _ in 1 2 3 4 5 6 7 8 9 10; do rm -rf "$WORK" 2>/dev/null && break; sleep 0.2; done
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Starts the server (again) on the data dir; sets TESSERA_ADDR and TESSERA_TOKEN.
start_server() {
  "$TESSERA" server --data-dir "$WORK/data" --listen 127.0.0.1:0 ${SERVER_ARGS:-} \
    >"$WORK/server.out" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do
    if grep -q "listening on" "$WORK/server.out"; then break; fi
    sleep 0.05
  done
  grep -q "listening on" "$WORK/server.out" || fail "server did not start: $(cat "$WORK/server.out")"
  export TESSERA_ADDR=$(sed -n 's/^listening on //p' "$WORK/server.out")
  export TESSERA_TOKEN=$(cat "$WORK/data/admin.token")
  # HTTPS with the server's own CA unless SERVER_ARGS says --plain-http.
  TESSERA_CA=$(sed -n 's/^CA: //p' "$WORK/server.out")
  if [ -n "$TESSERA_CA" ]; then export TESSERA_CA; else unset TESSERA_CA; fi
}

# Runs a command expecting exit code $1; its stdout+stderr are left in $OUT.
expect_exit() {
  local want=$1
  shift
  set +e
  OUT=$("$@" 2>&1)
  local got=$?
  set -e
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, want $want: $OUT"
}

# Runs a command (expecting exit 0) until its output, left in $OUT, contains $1; fails after 10 s.
await_out() {
  local want=$1
  shift
  for _ in $(seq 200); do
    expect_exit 0 "$@"
    grep -qF -- "$want" <<<"$OUT" && return 0
    sleep 0.05
  done
  fail "'$*' never printed '$want': $OUT"
}

expect_out() {
  grep -qF -- "$1" <<<"$OUT" || fail "expected '$1' in: $OUT"
}
