# Sourced by the bench scripts: StartDev NAME [tessera dev flags...] starts `tessera dev`
# ($TESSERA) on a free loopback port in a fresh WORK directory (its HOME too, so the tessera
# commands find it), waits until it listens, and stops it and removes WORK on exit.
StartDev() {
  local name=$1
  shift
  WORK=$(mktemp -d "/tmp/tessera-$name-XXXXXX")
  # Tasks run as users of their own (docs/SECURITY.md): they pass through it to their work.
  chmod 711 "$WORK"
  DEV_PID=
  trap 'if [ -n "$DEV_PID" ]; then kill "$DEV_PID" 2>/dev/null || true; wait "$DEV_PID" 2>/dev/null || true; fi; rm -rf "$WORK"' EXIT
  export HOME=$WORK/home
  unset TESSERA_ADDR TESSERA_TOKEN TESSERA_CA
  mkdir -p "$HOME"
  cd "$WORK"
  "$TESSERA" dev --listen 127.0.0.1:0 --container-runtime none "$@" >"$WORK/dev.out" 2>&1 &
  DEV_PID=$!
  for _ in $(seq 200); do grep -q "listening on" "$WORK/dev.out" && break; sleep 0.05; done
  grep -q "listening on" "$WORK/dev.out" || { cat "$WORK/dev.out"; exit 1; }
}

# StartOnEtcd NAME [agent flags...]: instead of `tessera dev`, one member of Debian's etcd, one
# `tessera server --store etcd://...` and one `tessera agent` (its flags given), each on free
# loopback ports in a fresh WORK directory, ~/.tessera/config written for the tessera commands;
# all stopped and WORK removed on exit.
StartOnEtcd() {
  local name=$1
  shift
  command -v etcd >/dev/null || { echo "Debian's etcd-server is not installed"; exit 1; }
  WORK=$(mktemp -d "/tmp/tessera-$name-XXXXXX")
  chmod 711 "$WORK"
  PIDS=()
  trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
  export HOME=$WORK/home
  unset TESSERA_ADDR TESSERA_TOKEN TESSERA_CA
  mkdir -p "$HOME/.tessera"
  cd "$WORK"
  local free client peer
  free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
  client=$(free)
  peer=$(free)
  etcd --name e0 --data-dir "$WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "e0=http://127.0.0.1:$peer" --logger zap --log-outputs "$WORK/etcd.log" \
    >"$WORK/etcd.out" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 200); do curl -s "http://127.0.0.1:$client/health" | grep -q '"true"' && break; sleep 0.05; done
  "$TESSERA" server --data-dir "$WORK/server" --listen 127.0.0.1:0 --plain-http \
    --store "etcd://127.0.0.1:$client/$name" >"$WORK/server.out" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 300); do grep -q "listening on" "$WORK/server.out" && break; sleep 0.05; done
  grep -q "listening on" "$WORK/server.out" || { cat "$WORK/server.out"; exit 1; }
  local addr
  addr=$(sed -n 's/^listening on //p' "$WORK/server.out")
  printf 'server: %s\ntoken: %s\n' "$addr" "$(cat "$WORK/server/admin.token")" >"$HOME/.tessera/config"
  chmod 600 "$HOME/.tessera/config"
  "$TESSERA" token create --agent >"$WORK/join.token"
  chmod 600 "$WORK/join.token"
  "$TESSERA" agent --name n1 --join-token-file "$WORK/join.token" --server "$addr" \
    --work-dir "$WORK/agent" --container-runtime none "$@" >"$WORK/agent.out" 2>&1 &
  PIDS+=("$!")
}
