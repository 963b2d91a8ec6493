#!/usr/bin/env bash
# tests/slurm/local_cluster.sh — a throw-away one-node Slurm cluster for tests:
# munged, slurmctld and slurmd on localhost, everything (key, config, state, logs,
# sockets, pid files) inside DIR, free ports, no cgroups (proctrack/linuxproc, task/none).
# Usage: local_cluster.sh start DIR   (then export SLURM_CONF=DIR/slurm.conf)
#        local_cluster.sh stop DIR    (cancels its jobs, ends its daemons and whatever they left)
#        local_cluster.sh pids DIR    (prints the processes of this cluster still alive)
set -euo pipefail

cmd=${1:?usage: local_cluster.sh start|stop DIR}
dir=${2:?usage: local_cluster.sh start|stop DIR}

# Ends the daemon whose pid file is DIR/NAME.pid (TERM, then KILL after 5 s), if it is
# still this cluster's (a stale pid file may name an unrelated process by now).
stop_one() {
  local pidfile=$dir/$1.pid pid i
  [ -s "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  grep -qzxF "TB_SLURM_CLUSTER=$dir" "/proc/$pid/environ" 2>/dev/null || { rm -f "$pidfile"; return 0; }
  kill -TERM "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

# Every process of this cluster: the daemons and the slurmstepd they fork carry
# TB_SLURM_CLUSTER=DIR, srun and the tasks SLURM_CONF=DIR/slurm.conf. Not this script
# nor its callers (the test exports SLURM_CONF itself); $BASHPID: this subshell too.
cluster_pids() {
  local mine=" " p=$BASHPID e pid
  while [ "$p" -gt 1 ] 2>/dev/null; do
    mine+="$p "
    p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null || echo 0)
  done
  for e in /proc/[0-9]*/environ; do
    pid=${e#/proc/}; pid=${pid%/environ}
    [[ "$mine" == *" $pid "* ]] && continue
    grep -qzxF -e "TB_SLURM_CLUSTER=$dir" -e "SLURM_CONF=$dir/slurm.conf" "$e" 2>/dev/null && echo "$pid"
  done
  return 0
}

# A TCP port nothing listens on (the kernel picks it; a tiny race is acceptable here).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits up to $2 seconds for command $1 to succeed.
wait_for() {
  local i
  for i in $(seq $(($2 * 5))); do eval "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}

case "$cmd" in
pids)
  cluster_pids
  exit 0 ;;
stop)
  # Jobs first, while slurmctld and slurmd can still end them; then the daemons; then
  # anything left (a slurmstepd outlives its slurmd, and tasks outlive a killed slurmstepd).
  export SLURM_CONF=$dir/slurm.conf
  if [ -s "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    timeout 10 scancel --user="$(id -un)" 2>/dev/null || true
    wait_for "[ -z \"\$(timeout 5 squeue -h 2>/dev/null)\" ]" 10 || true
  fi
  stop_one slurmd; stop_one slurmctld; stop_one munged
  left=$(cluster_pids)
  if [ -n "$left" ]; then
    kill -KILL $left 2>/dev/null || true
    echo "local_cluster.sh: killed leftover processes $(echo $left)" >&2
  fi
  exit 0 ;;
start) ;;
*) echo "local_cluster.sh: unknown command '$cmd' (allowed: start, stop, pids)" >&2; exit 2 ;;
esac

mkdir -p "$dir"/{munge,state,spool,log}
export TB_SLURM_CLUSTER=$dir  # marks the daemons and their slurmstepd (cluster_pids)
chmod 700 "$dir" "$dir/munge"
# munged: its own key and socket; it refuses insecure paths, hence the 0700 folders.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
wait_for "[ -S '$dir/munge/munge.socket' ]" 10 || { echo "munged did not start (log: $dir/log/munged.log)" >&2; exit 1; }

cpus=$(nproc); [ "$cpus" -ge 4 ] || cpus=4   # room for 2-4 tasks on a small machine
node=tbnode
cat > "$dir/slurm.conf" <<EOF
ClusterName=tbtest
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
KillWait=5
InactiveLimit=0
MinJobAge=5
NodeName=$node NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=tb Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$dir/slurm.conf
# -D: no fork (backgrounded here, so this script knows the pids); -i: ignore old state.
slurmctld -D -i > "$dir/log/slurmctld.out" 2>&1 &
echo $! > "$dir/slurmctld.pid"
wait_for "scontrol ping | grep -q UP" 20 || { echo "slurmctld did not start (log: $dir/log/slurmctld.log)" >&2; exit 1; }
slurmd -D -N "$node" > "$dir/log/slurmd.out" 2>&1 &
echo $! > "$dir/slurmd.pid"
wait_for "sinfo -h -N -o %t | grep -qE '^(idle|mix|alloc)'" 30 ||
  { echo "slurmd did not register (log: $dir/log/slurmd.log)" >&2; sinfo -N >&2 || true; exit 1; }
