#!/usr/bin/env bash
# A real Prometheus (Debian's package) scrapes `tessera dev` on fake GPUs with the shipped
# deploy/prometheus config and rules. One GPU is driven to 90 °C through the fake NVML library;
# Prometheus's own /api/v1/alerts shows the seeds' GPUHighTemperature pending, then firing once
# its `for: 5m` has passed (so this test takes a little over five minutes), for that GPU only.
set -euo pipefail
TESSERA=$1
FAKE_NVML=$2
DEPLOY=$3
WORK=$(mktemp -d /tmp/tessera-prom-XXXXXX)
# Tasks run as users of their own (docs/SECURITY.md): they pass through it to their work.
chmod 711 "$WORK"
DEV_PID=
PROM_PID=
cleanup() {
  for p in $PROM_PID $DEV_PID; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$WORK/prom.out" ] && tail -20 "$WORK/prom.out" >&2
  exit 1
}

# Two H100s; GPU 0 at $1 °C. Written whole, then renamed: the agent never reads half a file.
gpus() {
  cat >"$WORK/gpus.tmp" <<JSON
{"driver": "550.54.15", "nvml": "12.550.54.15",
 "devices": [
  {"uuid": "GPU-hot", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559,
   "busId": "00000000:18:00.0", "util": 70, "usedMiB": 1024, "temp": $1, "powerMw": 350000},
  {"uuid": "GPU-cool", "name": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559,
   "busId": "00000000:2A:00.0", "util": 0, "usedMiB": 0, "temp": 40, "powerMw": 60000}]}
JSON
  mv "$WORK/gpus.tmp" "$WORK/gpus.json"
}
gpus 40
export HOME=$WORK/home TESSERA_FAKE_NVML=$WORK/gpus.json
mkdir -p "$HOME"
"$TESSERA" dev --data-dir "$WORK/dev" --listen 127.0.0.1:0 --no-config \
  --nvml-library "$FAKE_NVML" >"$WORK/dev.out" 2>&1 &
DEV_PID=$!
for _ in $(seq 200); do grep -q "listening on" "$WORK/dev.out" && break; sleep 0.05; done
ADDR=$(sed -n 's/^listening on //p' "$WORK/dev.out")
[ -n "$ADDR" ] || fail "dev did not start: $(cat "$WORK/dev.out")"
TESSERA_ADDR=$ADDR TESSERA_TOKEN=$(cat "$WORK/dev/server/admin.token") \
  TESSERA_CA=$WORK/dev/server/tls/ca.crt \
  "$TESSERA" token create --metrics >"$WORK/metrics.token"

# A free loopback port for Prometheus: one nothing answers on.
PORT=
for _ in $(seq 100); do
  p=$((20000 + RANDOM % 40000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then PORT=$p; break; fi
done
[ -n "$PORT" ] || fail "no free port"
mkdir -p "$WORK/prom"
cp "$DEPLOY"/prometheus/*.yml "$WORK/prom/"
sed -i -e 's/: 15s/: 1s/' -e "s|/etc/tessera/metrics.token|$WORK/metrics.token|" \
  -e "s|127.0.0.1:8443|${ADDR#https://}|" -e "s|/etc/tessera/ca.crt|$WORK/dev/server/tls/ca.crt|" \
  "$WORK/prom/prometheus.yml"
promtool check config "$WORK/prom/prometheus.yml" >/dev/null || fail "promtool rejects the config"
prometheus --config.file="$WORK/prom/prometheus.yml" --storage.tsdb.path="$WORK/prom/data" \
  --web.listen-address="127.0.0.1:$PORT" >"$WORK/prom.out" 2>&1 &
PROM_PID=$!

# GET from Prometheus's HTTP API, body only (bash's /dev/tcp: no client needed).
get() {
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}
# Waits up to $1 seconds for `get $2` to contain $3.
wait_for() {
  local deadline=$((SECONDS + $1))
  while [ $SECONDS -lt $deadline ]; do
    if get "$2" 2>/dev/null | grep -q -- "$3"; then return 0; fi
    sleep 1
  done
  fail "after $1 s, $2 does not show $3: $(get "$2" 2>/dev/null | head -c 2000)"
}

wait_for 60 /-/ready "Ready"
# Scraped with the token, DCGM names and labels, holder labels kept as scraped.
wait_for 60 '/api/v1/query?query=DCGM_FI_DEV_GPU_TEMP' '"UUID":"GPU-hot"'
wait_for 30 '/api/v1/query?query=DCGM_FI_DEV_GPU_TEMP' '"modelName":"H100-80GB"'
wait_for 30 '/api/v1/query?query=tessera_cluster_gpus' '"state":"total"'
out=$(get '/api/v1/rules')
grep -q '"name":"GPUHighTemperature"' <<<"$out" || fail "seed rules not loaded: $out"
grep -q '"health":"err"' <<<"$out" && fail "a rule fails to evaluate: $out"

gpus 90
wait_for 30 '/api/v1/query?query=DCGM_FI_DEV_GPU_TEMP%3E85' '"UUID":"GPU-hot"'
wait_for 30 /api/v1/alerts '"alertname":"GPUHighTemperature"'
out=$(get /api/v1/alerts)
grep -q '"state":"pending"' <<<"$out" || fail "not pending first: $out"
echo "GPUHighTemperature pending; waiting out its for: 5m"
wait_for 400 /api/v1/alerts '"state":"firing"'
out=$(get /api/v1/alerts)
grep -q '"alertname":"GPUHighTemperature".*"UUID":"GPU-hot"\|"UUID":"GPU-hot".*"alertname":"GPUHighTemperature"' <<<"$out" ||
  fail "the alert is not about GPU-hot: $out"
grep -q '"UUID":"GPU-cool"' <<<"$out" && fail "the cool GPU alerts too: $out"
echo "prometheus_test: GPUHighTemperature firing for GPU-hot"
