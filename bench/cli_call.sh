#!/bin/bash
# One CLI call, by turns: `tessera` started with nothing to do, and `tessera apply` of one small
# Job over plain HTTP and over HTTPS, for each binary given (old and new builds, say), in
# alternating rounds; then Slurm's `sbatch` of one job against a slurmctld on this machine
# (bench/slurm_env.sh), when slurm-wlm is installed. Each figure is `perf stat -r RUNS`'s mean
# elapsed time, in ms. Every command runs under `env -i`, with only what it needs set.
# Then what start-up costs without Tessera's code: an empty program linked with the first
# binary's shared libraries, and with libstdc++ alone; and a TLS client's steps against the
# HTTPS server (bench/tls_cost.cc, build/bench/tessera_tls_cost).
#   bench/cli_call.sh TESSERA [OTHER_TESSERA] [ROUNDS]
# The servers are the first binary's.
set -euo pipefail
BINS=("$(realpath "$1")")
[ -n "${2:-}" ] && BINS+=("$(realpath "$2")")
ROUNDS=${3:-2}
RUNS=${RUNS:-40}
command -v perf >/dev/null || { echo "cli_call: needs perf (linux-perf)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/tessera-cli-call-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  [ -n "${SLURM_WORK:-}" ] && StopSlurm
  rm -rf "$WORK"
}
trap cleanup EXIT

# Starts a server in $WORK/$1 with the remaining arguments; sets ADDR, TOKEN, CA.
serve() {
  local dir=$WORK/$1
  shift
  "${BINS[0]}" server --data-dir "$dir" --listen 127.0.0.1:0 "$@" >"$dir.out" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 200); do grep -q "listening on" "$dir.out" 2>/dev/null && break; sleep 0.05; done
  ADDR=$(sed -n 's/^listening on //p' "$dir.out")
  [ -n "$ADDR" ] || { cat "$dir.out" >&2; exit 1; }
  TOKEN=$(cat "$dir/admin.token")
  CA=$(sed -n 's/^CA: //p' "$dir.out")
}
serve plain --plain-http
PLAIN=(TESSERA_ADDR="$ADDR" TESSERA_TOKEN="$TOKEN")
serve tls
TLS=(TESSERA_ADDR="$ADDR" TESSERA_TOKEN="$TOKEN" TESSERA_CA="$CA")
cat >"$WORK/job.yaml" <<'YAML'
apiVersion: tessera.io/v1
kind: Job
metadata: {name: one, namespace: default}
spec:
  tasks:
  - name: main
    command: ["true"]
YAML

# The mean elapsed ms of RUNS runs of the command.
ms() {
  perf stat -r "$RUNS" "$@" 2>&1 >/dev/null |
    awk '/seconds time elapsed/ {printf "%.2f", $1 * 1000}'
}

for round in $(seq "$ROUNDS"); do
  for bin in "${BINS[@]}"; do
    printf '%s round %d: start-up %s ms, apply HTTP %s ms, apply HTTPS %s ms\n' "$bin" "$round" \
      "$(ms env -i "$bin")" \
      "$(ms env -i "${PLAIN[@]}" "$bin" apply -f "$WORK/job.yaml")" \
      "$(ms env -i "${TLS[@]}" "$bin" apply -f "$WORK/job.yaml")"
  done
  if command -v slurmctld >/dev/null; then
    if [ -z "${SLURM_WORK:-}" ]; then
      source "$(dirname "$0")/slurm_env.sh"
      StartSlurm
      sbatch --wrap true -o /dev/null | grep -q "Submitted batch job" || exit 1
    fi
    printf 'sbatch round %d: %s ms\n' "$round" \
      "$(ms env -i SLURM_CONF="$SLURM_CONF" sbatch --wrap true -o /dev/null)"
  fi
  printf '/bin/true round %d: %s ms\n' "$round" "$(ms env -i /bin/true)"
done

# Start-up without Tessera's code: an empty main linked with the same libraries.
echo 'int main() { return 0; }' >"$WORK/empty.cc"
libs=$(readelf -d "${BINS[0]}" | sed -n 's/.*NEEDED.*\[\(.*\)\]/-l:\1/p' |
  grep -v -E '^-l:lib(c|m|gcc_s|stdc\+\+)\.so' | tr '\n' ' ')
# shellcheck disable=SC2086
g++ -O2 "$WORK/empty.cc" -o "$WORK/empty-all" -Wl,--no-as-needed $libs
g++ -O2 "$WORK/empty.cc" -o "$WORK/empty-std" -Wl,--no-as-needed -lstdc++
printf 'an empty program linked with %s: %s ms; with libstdc++ alone: %s ms\n' "$libs" \
  "$(ms env -i "$WORK/empty-all")" "$(ms env -i "$WORK/empty-std")"
TLS_COST=$(dirname "${BINS[0]}")/bench/tessera_tls_cost
if [ -x "$TLS_COST" ]; then
  for _ in $(seq 20); do "$TLS_COST" "$CA" "${ADDR##*:}"; done |
    awk '{for (i = 1; i < NF; i += 2) sum[i] += $(i + 1); for (i = 1; i < NF; i += 2) key[i] = $i}
         END {printf "a TLS client, mean of %d:", NR;
              for (i = 1; i in key; i += 2) printf " %s %.2f ms", key[i], sum[i] / NR; print ""}'
fi
