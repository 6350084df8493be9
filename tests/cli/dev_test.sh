#!/usr/bin/env bash
# tessera dev: server and agent in one process; the client commands work from the config file
# it writes, with no flags; a job runs on a simulated GPU and its output comes back.
set -euo pipefail
TESSERA=$1
WORK=$(mktemp -d /tmp/tessera-dev-XXXXXX)
DEV_PID=
cleanup() {
  if [ -n "$DEV_PID" ]; then kill "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export HOME=$WORK/home
unset TESSERA_ADDR TESSERA_TOKEN
mkdir -p "$HOME"
cd "$WORK"
"$TESSERA" dev --listen 127.0.0.1:0 --nvml-free 2>/dev/null && fail "unknown flag accepted"
"$TESSERA" dev --listen 127.0.0.1:0 >"$WORK/dev.out" 2>&1 &
DEV_PID=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/dev.out" && break; sleep 0.05; done
grep -q "listening on" "$WORK/dev.out" || fail "dev did not start: $(cat "$WORK/dev.out")"
[ -f "$HOME/.tessera/config" ] || fail "no config written"
[ "$(stat -c %a "$HOME/.tessera/config")" = 600 ] || fail "config is not private"
[ -d "$WORK/.tessera/server" ] || fail "state not in ./.tessera"
# This machine has no GPU driver: the node is simulated, and says so.
grep -q "simulating 8xH100-80GB" "$WORK/dev.out" || fail "no simulation notice: $(cat "$WORK/dev.out")"
for _ in $(seq 100); do "$TESSERA" get nodes 2>/dev/null | grep -q "^dev" && break; sleep 0.05; done
out=$("$TESSERA" get node dev -o json)
grep -q '"tessera.io/simulated": "true"' <<<"$out" || fail "node not labelled simulated: $out"
grep -q '"nvidia.com/gpu.count": "8"' <<<"$out" || fail "node GPUs: $out"

cat <<'YAML' >job.yaml
apiVersion: tessera.io/v1
kind: Job
metadata: {name: hello}
spec:
  tasks:
  - name: main
    command: ["sh", "-c", "echo hello from $CUDA_VISIBLE_DEVICES"]
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
"$TESSERA" apply -f job.yaml >/dev/null
for _ in $(seq 200); do
  "$TESSERA" get job hello -o json | grep -q '"phase": "Succeeded"' && break
  sleep 0.05
done
"$TESSERA" get job hello -o json | grep -q '"phase": "Succeeded"' || fail "job did not succeed"
for _ in $(seq 100); do
  log=$("$TESSERA" logs hello)
  [ -n "$log" ] && break
  sleep 0.05
done
uuid=$("$TESSERA" get job hello -o json | grep -o '"uuid": "GPU-[^"]*"' | head -1 | cut -d'"' -f4)
[ "$log" = "hello from $uuid" ] || fail "logs: '$log', bound to $uuid"
echo "dev_test: ok"
