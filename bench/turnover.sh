#!/bin/bash
# End-to-end turnover on `tessera dev` with 8 fake GPUs: N one-GPU tasks that run `true`,
# submitted in one apply; prints the submission time and the tasks completed per second from the
# end of the apply to the last one's end (every one Succeeded, checked).
#   bench/turnover.sh [TESSERA] [N] [jobs|array]
# jobs (the default): N Jobs; array: one batch/v1 Job, completions N, parallelism 8, Indexed.
# With TURNOVER_DUMP=FILE, the Jobs as they ended are written there (JSON) for analysis, and
# the server's metrics beside them (FILE.metrics).
set -euo pipefail
TESSERA=$(realpath "${1:-build/tessera}")
N=${2:-1000}
MODE=${3:-jobs}
source "$(dirname "$0")/dev_env.sh"
StartDev turnover --fake-gpus 8xH100-80GB
for _ in $(seq 100); do "$TESSERA" get nodes 2>/dev/null | grep -q Ready && break; sleep 0.1; done

if [ "$MODE" = array ]; then
  cat >"$WORK/jobs.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: array, namespace: default}
spec:
  completions: $N
  parallelism: 8
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        command: ["true"]
        resources: {limits: {nvidia.com/gpu: 1}}
YAML
else
for i in $(seq 1 "$N"); do
  cat <<YAML
---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: t$i, namespace: default}
spec:
  tasks:
  - name: main
    command: ["true"]
    resources: {limits: {nvidia.com/gpu: 1}}
YAML
done >"$WORK/jobs.yaml"
fi

now() { date +%s.%N; }
t0=$(now)
"$TESSERA" apply -f "$WORK/jobs.yaml" >/dev/null
t1=$(now)
while :; do
  done_count=$("$TESSERA" get jobs -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
ended = [j for j in items if j.get("status", {}).get("phase") in ("Succeeded", "Failed")]
bad = [j["metadata"]["name"] for j in ended if j["status"]["phase"] != "Succeeded"]
if bad: sys.exit("failed: " + ", ".join(bad[:5]))
# An array counts its tasks.
print(sum(j["status"].get("succeeded", 1) for j in ended))')
  [ "$done_count" -ge "$N" ] && break
  sleep 1
done
if [ -n "${TURNOVER_DUMP:-}" ]; then
  "$TESSERA" get jobs -o json >"$TURNOVER_DUMP"
  # The CLI's own configuration (server, token, CA) reaches /metrics too.
  python3 - "$HOME/.tessera/config" >"$TURNOVER_DUMP.metrics" <<'PY' || true
import ssl, sys, urllib.request
c = dict(line.split(": ", 1) for line in open(sys.argv[1]).read().splitlines() if ": " in line)
server = c["server"] if "://" in c["server"] else ("https://" if "ca" in c else "http://") + c["server"]
ctx = ssl.create_default_context(cafile=c["ca"]) if "ca" in c else None
req = urllib.request.Request(server + "/metrics", headers={"Authorization": "Bearer " + c["token"]})
print(urllib.request.urlopen(req, context=ctx).read().decode())
PY
fi
# The last Job's end, as its status records it.
last=$("$TESSERA" get jobs -o json | python3 -c '
import json, sys, datetime
items = json.load(sys.stdin)["items"]
ends = [datetime.datetime.fromisoformat(j["status"]["finishedAt"].replace("Z", "+00:00")).timestamp()
        for j in items]
print(max(ends))')
python3 - "$N" "$t0" "$t1" "$last" <<'PY'
import sys
n, t0, t1, last = int(sys.argv[1]), *map(float, sys.argv[2:])
print(f"tasks: {n}  apply: {t1 - t0:.2f} s  last end after apply: {last - t1:.2f} s  "
      f"turnover: {n / (last - t1):.1f} tasks/s")
PY
