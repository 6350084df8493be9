#!/usr/bin/env bash
# The web console's GPU map at scale, in Debian's Chromium (bench/console_bench.py): 1,250 fake
# nodes of 8 H100s (10,000 GPUs; every eighth node's first two cards cut into MIG slices),
# 5,000 one-GPU Jobs placed on them by the scheduler, then 1% of the cards changing each second.
# No agent runs: `tessera server` keeps the nodes Ready (--node-grace-seconds) and the Jobs stay
# bound. Prints the figures as JSON.
# Usage: bench/console_bench.sh build/tessera [NODES] [JOBS] [SECONDS]
set -euo pipefail
TESSERA=$(realpath "$1")
NODES=${2:-1250}
JOBS=${3:-5000}
SECONDS_OF_UPDATES=${4:-20}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/tessera-console-bench-XXXXXX)
SERVER_PID=
trap 'if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi; rm -rf "$WORK"' EXIT
"$TESSERA" server --data-dir "$WORK/server" --listen 127.0.0.1:0 --plain-http \
  --node-grace-seconds 86400 >"$WORK/server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 300); do grep -q "listening on" "$WORK/server.out" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$WORK/server.out")
[ -n "$addr" ] || { cat "$WORK/server.out"; exit 1; }
case $addr in http://*) ;; *) addr=http://$addr ;; esac
/usr/bin/python3 "$HERE/console_bench.py" --url "$addr" --token "$(cat "$WORK/server/admin.token")" \
  --nodes "$NODES" --jobs "$JOBS" --seconds "$SECONDS_OF_UPDATES"
