# Slurm on this machine, for comparisons: Debian's munged with a key of its own and slurmctld on
# free loopback ports, both in a directory of their own, stopped by PID. One node is declared
# and no slurmd runs, so a submitted job is accepted and stays pending: what is measured is the
# submission. Usage (bash): source bench/slurm_env.sh; StartSlurm; ... ; StopSlurm
# StartSlurm sets SLURM_WORK and SLURM_CONF (sbatch, squeue and scontrol read it).

FreePort() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

StartSlurm() {
  SLURM_WORK=$(mktemp -d /tmp/tessera-slurm-XXXXXX)
  chmod 700 "$SLURM_WORK"
  mkdir "$SLURM_WORK/state" "$SLURM_WORK/spool"
  head -c 1024 /dev/urandom >"$SLURM_WORK/munge.key"
  chmod 600 "$SLURM_WORK/munge.key"
  local force=()
  [ "$(id -u)" -eq 0 ] && force=(--force)
  munged -F "${force[@]}" --key-file="$SLURM_WORK/munge.key" --socket="$SLURM_WORK/munge.sock" \
    --pid-file="$SLURM_WORK/munged.pid" --log-file="$SLURM_WORK/munged.log" \
    --seed-file="$SLURM_WORK/munged.seed" >/dev/null 2>&1 &
  MUNGED_PID=$!
  local host
  host=$(hostname -s)
  SLURM_CONF=$SLURM_WORK/slurm.conf
  cat >"$SLURM_CONF" <<EOF
ClusterName=tessera-bench
SlurmctldHost=$host
SlurmctldPort=$(FreePort)
SlurmdPort=$(FreePort)
AuthType=auth/munge
AuthInfo=socket=$SLURM_WORK/munge.sock
CredType=cred/munge
StateSaveLocation=$SLURM_WORK/state
SlurmdSpoolDir=$SLURM_WORK/spool
SlurmctldPidFile=$SLURM_WORK/slurmctld.pid
SlurmctldLogFile=$SLURM_WORK/slurmctld.log
SlurmUser=$(id -un)
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MaxJobCount=200000
NodeName=$host CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF
  for _ in $(seq 100); do [ -S "$SLURM_WORK/munge.sock" ] && break; sleep 0.05; done
  slurmctld -D -f "$SLURM_CONF" >"$SLURM_WORK/slurmctld.out" 2>&1 &
  SLURMCTLD_PID=$!
  for _ in $(seq 200); do
    scontrol ping 2>/dev/null | grep -q "is UP" && return 0
    sleep 0.05
  done
  echo "slurmctld did not start: $(tail -5 "$SLURM_WORK/slurmctld.log" 2>/dev/null)" >&2
  return 1
}

StopSlurm() {
  kill -9 "${SLURMCTLD_PID:-}" "${MUNGED_PID:-}" 2>/dev/null || true
  wait "${SLURMCTLD_PID:-}" "${MUNGED_PID:-}" 2>/dev/null || true
  rm -rf "$SLURM_WORK"
  SLURM_WORK=
}
