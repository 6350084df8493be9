#!/bin/bash
# The scale harness: `tessera server` (SQLite, plain HTTP on a free loopback port) driven by
# tessera_scale's simulated nodes and jobs (bench/scale_harness.cc); the results go to OUT.json
# and a chart to OUT.svg (bench/scale_plot.py).
#   bench/scale.sh [TESSERA] [TESSERA_SCALE] [OUT] [tessera_scale flags...]
# e.g. bench/scale.sh build/tessera build/bench/tessera_scale /tmp/scale --nodes 1000 --jobs 100000 --rate 1000
set -euo pipefail
TESSERA=$(realpath "${1:-build/tessera}")
SCALE=$(realpath "${2:-build/bench/tessera_scale}")
OUT=$(realpath -m "${3:-scale}")
shift 3 || true
WORK=$(mktemp -d /tmp/tessera-scale-XXXXXX)
SERVER_PID=
trap 'if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi; rm -rf "$WORK"' EXIT
# Many simulated agents hold a watch and a connection each.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$TESSERA" server --data-dir "$WORK/server" --listen 127.0.0.1:0 --plain-http >"$WORK/server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 300); do grep -q "listening on" "$WORK/server.out" && break; sleep 0.05; done
grep -q "listening on" "$WORK/server.out" || { cat "$WORK/server.out"; exit 1; }
ADDR=$(sed -n 's|^listening on \(http://\)\{0,1\}||p' "$WORK/server.out" | head -1)
"$SCALE" --server "$ADDR" --token "$(cat "$WORK/server/admin.token")" --server-pid "$SERVER_PID" \
  --data-dir "$WORK/server" --out "$OUT.json" "$@"
python3 "$(dirname "$0")/scale_plot.py" "$OUT.json" "$OUT.svg"
