#!/bin/bash
# End-to-end turnover on `tessera dev` with 8 fake GPUs: N one-GPU tasks that run `true`,
# submitted in one apply; prints the submission time and the tasks completed per second from the
# end of the apply to the last one's end (every one Succeeded, checked).
#   bench/turnover.sh [TESSERA] [N] [jobs|array]
# jobs (the default): N Jobs; array: one batch/v1 Job, completions N, parallelism 8, Indexed.
# With TURNOVER_GPUS=real, `tessera dev` runs on the machine's GPUs (NVML) instead of 8 fake ones.
# With TURNOVER_STORE=etcd, the state is in etcd: one member of Debian's etcd, `tessera server
# --store etcd://...` and `tessera agent` with the same fake GPUs, instead of `tessera dev`.
# With TURNOVER_DUMP=FILE, the Jobs as they ended are written there (JSON) for analysis, and
# the server's metrics beside them (FILE.metrics).
set -euo pipefail
TESSERA=$(realpath "${1:-build/tessera}")
N=${2:-1000}
MODE=${3:-jobs}
source "$(dirname "$0")/dev_env.sh"
# TURNOVER_GPUS=real: the machine's own GPUs through NVML instead of 8 fake ones.
if [ "${TURNOVER_STORE:-sqlite}" = etcd ]; then
  StartOnEtcd turnover --fake-gpus 8xH100-80GB
elif [ "${TURNOVER_GPUS:-fake}" = real ]; then
  StartDev turnover
else
  StartDev turnover --fake-gpus 8xH100-80GB
fi
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
# printf is a builtin: no process per Job.
for i in $(seq 1 "$N"); do
  printf -- '---\napiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: t%d, namespace: default}
spec:\n  tasks:\n  - name: main\n    command: ["true"]
    resources: {limits: {nvidia.com/gpu: 1}}\n' "$i"
done >"$WORK/jobs.yaml"
fi

# One Python process for the harness's reads (not a shim): the machine has two cores, and what
# the harness spends is taken from the system it measures.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
# GET PATH from the server with the CLI's own configuration (server, token, CA); with --until-ended
# N, polls /metrics every 0.2 s until N Jobs have ended (a light read: the Jobs are counted by
# phase on the server, not listed).
serverget() {
  "$PY" - "$HOME/.tessera/config" "$@" <<'PYEOF'
import re, ssl, sys, time, urllib.request
c = dict(line.split(": ", 1) for line in open(sys.argv[1]).read().splitlines() if ": " in line)
server = c["server"] if "://" in c["server"] else ("https://" if "ca" in c else "http://") + c["server"]
ctx = ssl.create_default_context(cafile=c["ca"]) if "ca" in c else None
def get(path):
    req = urllib.request.Request(server + path, headers={"Authorization": "Bearer " + c["token"]})
    return urllib.request.urlopen(req, context=ctx).read().decode()
if sys.argv[2] == "--until-ended":
    want = int(sys.argv[3])
    while True:
        ended = sum(float(m.group(2)) for m in re.finditer(
            r'^tessera_workloads\{[^}]*phase="(Succeeded|Failed)"[^}]*\} (\S+)', get("/metrics"), re.M))
        if ended >= want: break
        time.sleep(0.2)
else:
    print(get(sys.argv[2]))
PYEOF
}

now() { date +%s.%N; }
t0=$(now)
"$TESSERA" apply -f "$WORK/jobs.yaml" >/dev/null
t1=$(now)
# An array is one Job.
serverget --until-ended "$([ "$MODE" = array ] && echo 1 || echo "$N")"
"$TESSERA" get jobs -o json >"$WORK/ended.json"
"$PY" - "$WORK/ended.json" "$N" <<'PYEOF'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
bad = [j["metadata"]["name"] for j in items if j.get("status", {}).get("phase") != "Succeeded"]
if bad: sys.exit("not succeeded: " + ", ".join(bad[:5]))
# An array counts its tasks.
done = sum(j["status"].get("succeeded", 1) for j in items)
if done < int(sys.argv[2]): sys.exit(f"{done} tasks succeeded, not {sys.argv[2]}")
PYEOF
if [ -n "${TURNOVER_DUMP:-}" ]; then
  cp "$WORK/ended.json" "$TURNOVER_DUMP"
  serverget /metrics >"$TURNOVER_DUMP.metrics" || true
fi
# The last Job's end, as its status records it.
"$PY" - "$N" "$t0" "$t1" "$WORK/ended.json" <<'PYEOF'
import datetime, json, sys
n, t0, t1 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
items = json.load(open(sys.argv[4]))["items"]
last = max(datetime.datetime.fromisoformat(j["status"]["finishedAt"].replace("Z", "+00:00")).timestamp()
           for j in items)
print(f"tasks: {n}  apply: {t1 - t0:.2f} s  last end after apply: {last - t1:.2f} s  "
      f"turnover: {n / (last - t1):.1f} tasks/s")
PYEOF
