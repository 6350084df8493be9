# Sourced by the tests that run `tessera dev`: a work directory and a private HOME (removed on
# exit, with dev stopped), fail(), and start_dev, which starts dev on a free loopback port with
# the given flags and waits until it listens.
WORK=$(mktemp -d "/tmp/tessera-${TEST_NAME:-dev}-XXXXXX")
# Tasks run as users of their own (docs/SECURITY.md): they pass through it to their work.
chmod 711 "$WORK"
DEV_PID=
cleanup() {
  if [ -n "$DEV_PID" ]; then kill "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  # An agent's fence keeper (a session of its own) may still be leaving its state directory.
  for _ in 1 2 3 4 5 6 7 8 9 10; do rm -rf "$WORK" 2>/dev/null && break; sleep 0.2; done
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export HOME=$WORK/home
unset TESSERA_ADDR TESSERA_TOKEN TESSERA_CA
mkdir -p "$HOME"
cd "$WORK"

# start_dev TESSERA [FLAGS...]: dev's output goes to $WORK/dev.out.
start_dev() {
  local tessera=$1
  shift
  "$tessera" dev --listen 127.0.0.1:0 "$@" >"$WORK/dev.out" 2>&1 &
  DEV_PID=$!
  for _ in $(seq 200); do grep -q "listening on" "$WORK/dev.out" && break; sleep 0.05; done
  grep -q "listening on" "$WORK/dev.out" || fail "dev did not start: $(cat "$WORK/dev.out")"
}

# wait_phase TESSERA JOB PHASE: until the job's status.phase (not a pod's) is PHASE (10 s), else
# fail with the job. job_phase TESSERA JOB: that phase now.
wait_phase() {
  for _ in $(seq 200); do
    "$1" get job "$2" -o json | grep -q "^    \"phase\": \"$3\"" && return 0
    sleep 0.05
  done
  fail "$2 is not $3: $("$1" get job "$2" -o json)"
}
job_phase() {
  "$1" get job "$2" -o json | sed -n 's/^    "phase": "\(.*\)",*$/\1/p'
}
