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
