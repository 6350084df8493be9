#!/usr/bin/env bash
# Tasks hold no credentials (docs/SECURITY.md, "Task identity"): with the agent as root, a task
# without securityContext, and one with runAsUser 1000, runs as an unprivileged user and reads
# none of the agent's token, the join and admin tokens, the server's state, the agent's state and
# logs, another Job's files or the agent's environment. runAsUser 0 is refused unless the admin
# marks the namespace privileged, which a namespace token cannot do.
source "$(dirname "$0")/server_env.sh" "$1"
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: tasks run as other users only under an agent that is root"
  exit 77
fi
start_server
expect_exit 0 "$TESSERA" token create --agent
printf '%s\n' "$OUT" >"$WORK/join.token" && chmod 600 "$WORK/join.token"
AGENT_PID=
trap '[ -z "$AGENT_PID" ] || kill "$AGENT_PID" 2>/dev/null || true; cleanup' EXIT
"$TESSERA" agent --fake-gpus 2xH100-80GB --name n1 --join-token-file "$WORK/join.token" \
  --heartbeat-seconds 1 --work-dir "$WORK/agent" --container-runtime none --stop-grace-seconds 1 \
  >"$WORK/agent.out" 2>&1 &
AGENT_PID=$!
for _ in $(seq 100); do grep -q "registered" "$WORK/agent.out" && break; sleep 0.05; done
grep -q "registered" "$WORK/agent.out" || fail "agent did not register: $(cat "$WORK/agent.out")"
grep -q "run as a uid of their Job's own" "$WORK/agent.out" || fail "no word on task users: $(cat "$WORK/agent.out")"

job() {  # name, namespace, extra task field (YAML), command
  cat <<YAML
apiVersion: tessera.io/v1
kind: Job
metadata: {name: $1, namespace: $2}
spec:
  tasks:
  - name: main
    command: ["sh", "-c", "$4"]
    restartPolicy: Never
    $3
YAML
}
wait_phase() {  # name, phase (of the Job or its pod), namespace
  await_out "\"phase\": \"$2\"" "$TESSERA" get job "$1" -n "${3:-default}" -o json
}

# A Job with a secret in its working directory and its log.
job victim default "" "echo victim-log-secret; echo victim-file-secret >\$HOME/secret; exec sleep 300" >"$WORK/victim.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/victim.yaml"
wait_phase victim Running
victim_dir="$WORK/agent/work/default/victim/main-0"
for _ in $(seq 100); do [ -f "$victim_dir/secret" ] && break; sleep 0.05; done
[ -f "$victim_dir/secret" ] || fail "the victim wrote no secret"

# Every path a task might read a credential or another's work from.
victim_log=$(ls "$WORK/agent/logs/default/victim/"main-0.*.log | head -1)
[ -f "$victim_log" ] || fail "the victim has no log file"
files=("$WORK/agent/node.token" "$WORK/join.token" "$WORK/data/admin.token" "$WORK/data/state.db"
  "$WORK/data/usage.db" "$victim_log" "$victim_dir/secret"
  "/proc/$AGENT_PID/environ" "/proc/$SERVER_PID/environ")
dirs=("$WORK/agent" "$WORK/agent/run" "$WORK/agent/logs" "$WORK/agent/work"
  "$WORK/agent/work/default" "$victim_dir" "$WORK/data")
probe="echo uid=\$(id -u) gid=\$(id -g);"
for f in "${files[@]}"; do probe+=" if cat '$f' >/dev/null 2>&1; then echo READ $f; else echo DENIED $f; fi;"; done
for d in "${dirs[@]}"; do probe+=" if ls '$d' >/dev/null 2>&1; then echo LISTED $d; else echo DENIED $d; fi;"; done
probe+=" echo probed"
for variant in "none|" "user1000|runAsUser: 1000"; do
  name=probe-${variant%%|*}
  job "$name" default "${variant#*|}" "$probe" >"$WORK/$name.yaml"
  expect_exit 0 "$TESSERA" apply -f "$WORK/$name.yaml"
  wait_phase "$name" Succeeded
  await_out "probed" "$TESSERA" logs "$name"
  grep -q "^uid=0 " <<<"$OUT" && fail "$name ran as root: $OUT"
  grep -qE "^(READ|LISTED) " <<<"$OUT" && fail "$name reached what is not its own: $OUT"
  [ "$(grep -c "^DENIED " <<<"$OUT")" = $((${#files[@]} + ${#dirs[@]})) ] || fail "$name: $OUT"
  grep -qF -- "victim-file-secret" <<<"$OUT" && fail "$name read the victim's file: $OUT"
  grep -qF -- "victim-log-secret" <<<"$OUT" && fail "$name read the victim's log: $OUT"
  if [ "$name" = probe-user1000 ]; then grep -q "^uid=1000 " <<<"$OUT" || fail "runAsUser: $OUT"; fi
done
# The Job's own directory is its user's, and no one else's.
probe_dir="$WORK/agent/work/default/probe-none/main-0"
[ ! -e "$probe_dir" ] || [ "$(stat -c %a "$probe_dir")" = 700 ] || fail "work dir mode $(stat -c %a "$probe_dir")"

# Root: refused outside a namespace the admin marks privileged.
job rooted default "runAsUser: 0" "id -u" >"$WORK/rooted.yaml"
expect_exit 1 "$TESSERA" apply -f "$WORK/rooted.yaml"
expect_out "runAsUser: 0 (root) runs only in a namespace the admin marks privileged"
expect_exit 0 "$TESSERA" token create --namespace ops
tenant=$OUT
cat <<YAML >"$WORK/ops.yaml"
apiVersion: v1
kind: Namespace
metadata:
  name: ops
  labels: {pod-security.kubernetes.io/enforce: privileged}
YAML
expect_exit 1 "$TESSERA" apply -f "$WORK/ops.yaml" --token "$tenant"
expect_out "Forbidden"
job rooted ops "runAsUser: 0" "id -u" >"$WORK/rooted-ops.yaml"
expect_exit 1 "$TESSERA" apply -f "$WORK/rooted-ops.yaml" --token "$tenant"
expect_out "runAsUser: 0"
expect_exit 0 "$TESSERA" apply -f "$WORK/ops.yaml"
expect_exit 0 "$TESSERA" apply -f "$WORK/rooted-ops.yaml" --token "$tenant"
wait_phase rooted Succeeded ops
await_out "0" "$TESSERA" logs rooted -n ops
[ "$OUT" = 0 ] || fail "the privileged namespace's task: $OUT"
echo "task_identity_test: ok"
