#!/usr/bin/env bash
# Single-node Slurm 22.05 (+ slurmdbd/MariaDB for sacct) on this machine, for CI and local testing.
#   .ci/slurm.sh up    # install if needed, start munge, mariadb, slurmdbd, slurmctld, slurmd; print SLURM_CONF
#   .ci/slurm.sh down  # stop every daemon by its pid file
# State lives in $POLAR_SLURM_DIR (default /tmp/polar-slurm). Clients need: export SLURM_CONF=$POLAR_SLURM_DIR/etc/slurm.conf
set -euo pipefail
S=${POLAR_SLURM_DIR:-/tmp/polar-slurm}
CONF=$S/etc/slurm.conf
NODE_CPUS=${POLAR_SLURM_CPUS:-16}

alive() {  # pidfile -> 0 if the process lives and is not a zombie
  local f=$1 pid
  [ -s "$f" ] || return 1
  pid=$(cat "$f" 2>/dev/null) || return 1
  [ -r "/proc/$pid/stat" ] || return 1
  [ "$(awk '{print $3}' "/proc/$pid/stat")" != "Z" ]
}

stop_pid() {
  local f=$1 pid i
  alive "$f" || { rm -f "$f"; return 0; }
  pid=$(cat "$f" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do alive "$f" || break; sleep 0.05; done
  alive "$f" && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f"
}

install() {
  if ! command -v slurmctld >/dev/null || ! command -v slurmdbd >/dev/null || ! command -v mariadbd >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      slurm-wlm munge slurmdbd slurm-wlm-mysql-plugin mariadb-server >/dev/null
  fi
}

configure() {
  mkdir -p "$S"/{etc,state,spool,run,log,db,run/munge}
  local host; host=$(hostname -s)
  local mem; mem=$(awk '/MemTotal/ {printf "%d", $2/1024 - 512}' /proc/meminfo)
  cat >"$CONF" <<CONF
ClusterName=polarci
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SlurmdParameters=config_overrides
MpiDefault=none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
ReturnToService=2
KillWait=5
MinJobAge=600
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$NODE_CPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$NODE_CPUS ThreadsPerCore=1 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  cat >"$S/etc/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
PidFile=$S/run/slurmdbd.pid
LogFile=$S/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3307
StorageUser=root
StorageLoc=slurm_acct_db
CONF
  chmod 600 "$S/etc/slurmdbd.conf"
}

up() {
  install
  configure
  mkdir -p /run/munge && chown munge:munge /run/munge "$S/run/munge"
  if ! alive "$S/run/munge/munged.pid"; then
    rm -f "$S/run/munge/munged.pid"
    runuser -u munge -- munged --force --pid-file="$S/run/munge/munged.pid"
  fi
  if ! alive "$S/run/mariadbd.pid"; then
    [ -d "$S/db/mysql" ] || mariadb-install-db --user=root --datadir="$S/db" --auth-root-authentication-method=normal >/dev/null
    rm -f "$S/run/mariadbd.pid"
    mariadbd --user=root --datadir="$S/db" --port=3307 --bind-address=127.0.0.1 --socket="$S/run/mysqld.sock" \
      --pid-file="$S/run/mariadbd.pid" --skip-grant-tables=0 >"$S/log/mariadb.log" 2>&1 &
  fi
  # the socket appears before the server answers; slurmdbd exits if its first connection fails
  for _ in $(seq 1 300); do mariadb-admin --socket="$S/run/mysqld.sock" -uroot ping >/dev/null 2>&1 && break; sleep 0.1; done
  if ! alive "$S/run/slurmdbd.pid"; then
    rm -f "$S/run/slurmdbd.pid"
    SLURM_CONF=$CONF slurmdbd
  fi
  # slurmctld registers the cluster with slurmdbd at start: wait until slurmdbd listens (DbdPort 6819)
  for _ in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/6819) 2>/dev/null && break; sleep 0.1; done
  if ! alive "$S/run/slurmctld.pid"; then rm -f "$S/run/slurmctld.pid"; slurmctld -f "$CONF"; fi
  if ! alive "$S/run/slurmd.pid"; then rm -f "$S/run/slurmd.pid"; slurmd -f "$CONF"; fi
  export SLURM_CONF=$CONF
  for _ in $(seq 1 150); do
    if timeout 2 sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then break; fi
    sleep 0.2
  done
  local ran=""
  for _ in $(seq 1 5); do timeout 20 srun -t1 true && { ran=1; break; }; sleep 2; done
  if [ -z "$ran" ]; then
    echo "slurm.sh: srun never ran a job; the last lines of $S/log/slurmctld.log:" >&2
    tail -n 20 "$S/log/slurmctld.log" >&2 || true
    exit 1
  fi
  for _ in $(seq 1 50); do timeout 5 sacct -n -X >/dev/null 2>&1 && break; sleep 0.2; done
  echo "slurm up: SLURM_CONF=$CONF"
}

down() {
  stop_pid "$S/run/slurmd.pid"
  stop_pid "$S/run/slurmctld.pid"
  stop_pid "$S/run/slurmdbd.pid"
  stop_pid "$S/run/mariadbd.pid"
  stop_pid "$S/run/munge/munged.pid"
  echo "slurm down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
