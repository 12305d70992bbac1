# slurm_local.sh — a Slurm controller and one node daemon on this machine for a test, in a
# temporary directory (sourced by tests/cli/test_slurm.sh). Loopback only (SlurmctldHost and
# NodeAddr 127.0.0.1), free ports chosen at random, SlurmUser root, AuthType auth/none (Debian
# 12's slurm-wlm 22.05 ships it) or munge with a private munged socket when auth/none does not
# start. slurm_local_start DIR CPUS sets SLURM_CONF and returns 0, or 1 with the reason in
# SLURM_LOCAL_WHY; slurm_local_stop kills the daemons it started, by their pids.
SLURM_LOCAL_PIDS=()
SLURM_LOCAL_WHY=""

slurm_local_conf() { # DIR AUTH CTLPORT DPORT CPUS
  local d=$1 auth=$2 cport=$3 dport=$4 cpus=$5 extra=""
  [ "$auth" = munge ] && extra="AuthInfo=socket=$d/munge.sock"
  cat > "$d/slurm.conf" <<CONF
ClusterName=kareustest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/$auth
CredType=cred/$( [ "$auth" = munge ] && echo munge || echo none )
$extra
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName=kareusnode NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=kareus Nodes=kareusnode Default=YES MaxTime=INFINITE State=UP
CONF
}

slurm_local_try() { # DIR AUTH CPUS: starts both daemons; 0 when the node is idle
  local d=$1 auth=$2 cpus=$3
  local cport=$((20000 + RANDOM % 20000)) dport
  dport=$((cport + 1))
  rm -rf "$d/state" "$d/spool"
  mkdir -p "$d/state" "$d/spool"
  slurm_local_conf "$d" "$auth" "$cport" "$dport" "$cpus"
  export SLURM_CONF="$d/slurm.conf"
  slurmctld -D -i -f "$d/slurm.conf" > "$d/slurmctld.out" 2>&1 &
  SLURM_LOCAL_PIDS+=($!)
  slurmd -D -N kareusnode -f "$d/slurm.conf" > "$d/slurmd.out" 2>&1 &
  SLURM_LOCAL_PIDS+=($!)
  local i
  for i in $(seq 1 60); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^idle'; then return 0; fi
    sleep 0.25
  done
  return 1
}

slurm_local_start() { # DIR CPUS
  local d=$1 cpus=$2
  for t in slurmctld slurmd sbatch sinfo squeue; do
    command -v "$t" >/dev/null || { SLURM_LOCAL_WHY="$t not installed (apt-get install slurm-wlm; scripts/setup.sh --tests)"; return 1; }
  done
  [ "$(id -u)" = 0 ] || { SLURM_LOCAL_WHY="not root (the test's slurmd runs as SlurmUser root)"; return 1; }
  slurm_local_try "$d" none "$cpus" && return 0
  slurm_local_stop
  if command -v munged >/dev/null && [ -r /etc/munge/munge.key ]; then
    munged -F --force --socket="$d/munge.sock" --key-file=/etc/munge/munge.key --pid-file="$d/munged.pid" \
      --log-file="$d/munged.log" --seed-file="$d/munged.seed" > "$d/munged.out" 2>&1 &
    SLURM_LOCAL_PIDS+=($!)
    sleep 0.5
    slurm_local_try "$d" munge "$cpus" && return 0
  fi
  SLURM_LOCAL_WHY="the local slurmctld/slurmd did not start: $(tail -n 2 "$d/slurmctld.log" "$d/slurmd.log" 2>/dev/null | tr '\n' ' ' | cut -c1-400)"
  slurm_local_stop
  return 1
}

slurm_local_stop() {
  local p
  for p in "${SLURM_LOCAL_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${SLURM_LOCAL_PIDS[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  SLURM_LOCAL_PIDS=()
}
