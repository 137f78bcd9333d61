#!/usr/bin/env bash
# slurm-test-cluster.sh start|stop|status -- a throwaway one-node Slurm cluster (munge +
# slurmctld + slurmd on localhost) for tally's Slurm executor tests.
#
# start: writes /etc/slurm/slurm.conf (and cgroup.conf) -- the path every Slurm client reads, so
# the tests and tally need no SLURM_CONF -- starts munged (unless one already answers), slurmctld
# and slurmd with state, spool, logs and pid files in target/slurm-test, waits until the node is
# idle and one probe batch job has completed (this also absorbs the ~3 s before slurmctld's first
# scheduling pass). Idempotent: a healthy cluster is reused. Needs root (munged runs as user
# munge, slurmd must be root to run jobs) and no systemd.
# stop: cancels every job (their processes outlive the daemons otherwise), stops the daemons
# (TERM, then KILL after a timeout), kills whatever is left in Slurm's freezer cgroup, removes the
# config files it wrote and target/slurm-test. A munged it did not start is left running.
# Installs nothing: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge
# (docs/team.md#slurm-tests).
# Knobs: SLURM_TEST_DIR, SLURM_CONF (refuses to overwrite a file it did not write),
# SLURM_TEST_CPUS (must not exceed the real count), SLURM_TEST_OVERSUBSCRIBE (default FORCE:8:
# up to 8 jobs per CPU, so that tests running at once do not queue), SLURM_TEST_PROCTRACK
# (default: proctrack/cgroup when a cgroup v1 freezer is mounted, else proctrack/linuxproc),
# SLURM_TEST_TIMEOUT (seconds, each wait).
set -euo pipefail
# The daemons and munged live in /usr/sbin, which a non-login shell's PATH may lack.
export PATH="$PATH:/usr/sbin:/sbin"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${SLURM_TEST_DIR:-$ROOT/target/slurm-test}
CONF=${SLURM_CONF:-/etc/slurm/slurm.conf}
CPUS=${SLURM_TEST_CPUS:-$(nproc)}
OVERSUBSCRIBE=${SLURM_TEST_OVERSUBSCRIBE:-FORCE:8}
TIMEOUT=${SLURM_TEST_TIMEOUT:-30}
PROCTRACK=${SLURM_TEST_PROCTRACK:-}
if [ -z "$PROCTRACK" ]; then
  # Only proctrack/cgroup kills every process of a cancelled job (orphans, setsid children,
  # TERM-ignoring ones); Slurm 22.05's cgroup/v2 wants systemd-delegated cgroups, so cgroup is
  # used where a v1 freezer is mounted.
  if grep -qs ' /sys/fs/cgroup/freezer cgroup ' /proc/mounts; then
    PROCTRACK=proctrack/cgroup
  else
    PROCTRACK=proctrack/linuxproc
  fi
fi
MARK="# written by slurm-test-cluster.sh"

say() { echo "slurm-test-cluster: $*" >&2; }

# alive PID NAME: the process exists, is not a zombie, and is NAME.
alive() {
  local pid=$1 name=$2 st
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 1
  st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ "$st" != Z ]
}

# stop_pidfile FILE NAME: TERM the daemon named in FILE, KILL it after TIMEOUT.
stop_pidfile() {
  local f=$1 name=$2 pid i
  pid=$(cat "$f" 2>/dev/null || true)
  if alive "$pid" "$name"; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < TIMEOUT * 10; i++)); do alive "$pid" "$name" || break; sleep 0.1; done
    if alive "$pid" "$name"; then say "$name ($pid) ignored TERM, killing"; kill -9 "$pid" || true; fi
  fi
  rm -f "$f"
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s.
wait_for() {
  local secs=$1 i
  shift
  for ((i = 0; i < secs * 10; i++)); do "$@" && return 0; sleep 0.1; done
  return 1
}

munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
cluster_ok() {
  alive "$(cat "$DIR/slurmctld.pid" 2>/dev/null || true)" slurmctld &&
    alive "$(cat "$DIR/slurmd.pid" 2>/dev/null || true)" slurmd &&
    [[ "$(timeout 5 sinfo -h -n localhost -o %T 2>/dev/null)" =~ ^(idle|mixed|allocated|completing)$ ]]
}
probe_done() { timeout 5 scontrol show job -o "$1" 2>/dev/null | grep -q 'JobState=COMPLETED'; }
no_jobs() { [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null)" ]; }
ours() { [ -f "$1" ] && head -n 1 "$1" | grep -qxF "$MARK"; }

start_munge() {
  if munge_ok; then return 0; fi
  if [ ! -s /etc/munge/munge.key ]; then # the Debian package normally makes it
    install -d -o munge -g munge -m 0700 /etc/munge
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key && chmod 0600 /etc/munge/munge.key
  fi
  # No systemd: nobody makes munged's runtime directory.
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  runuser -u munge -- /usr/sbin/munged # forks; pid in /run/munge/munged.pid
  : >"$DIR/munge.ours"                 # so that stop only stops a munged it started
  wait_for "$TIMEOUT" munge_ok || { say "munged not ready"; tail -n 20 /var/log/munge/munged.log >&2 || true; return 1; }
}

write_conf() {
  local mem
  # RealMemory above what slurmd sees makes the node unusable.
  mem=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 - 512))
  install -d "$(dirname "$CONF")"
  cat >"$CONF" <<EOF
$MARK
ClusterName=tallytest
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
CommunicationParameters=NoInAddrAny
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=$PROCTRACK
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
ReturnToService=2
KillWait=5
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName=localhost CPUs=$CPUS RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=$OVERSUBSCRIBE
EOF
  if [ "$PROCTRACK" = proctrack/cgroup ]; then
    cat >"$(dirname "$CONF")/cgroup.conf" <<EOF
$MARK
CgroupPlugin=autodetect
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
EOF
  fi
}

stop() {
  if alive "$(cat "$DIR/slurmctld.pid" 2>/dev/null || true)" slurmctld; then
    timeout 10 scancel --partition=debug 2>/dev/null || true
    wait_for "$TIMEOUT" no_jobs || say "jobs still listed after ${TIMEOUT}s"
  fi
  stop_pidfile "$DIR/slurmd.pid" slurmd
  stop_pidfile "$DIR/slurmctld.pid" slurmctld
  # proctrack/cgroup backstop: kill whatever is left in Slurm's freezer cgroup.
  local cg=/sys/fs/cgroup/freezer/slurm_localhost d p i
  if [ -d "$cg" ]; then
    for d in $(find "$cg" -type d); do echo THAWED >"$d/freezer.state" 2>/dev/null || true; done
    for p in $(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    for ((i = 0; i < 50; i++)); do
      find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$cg" ] || break
      sleep 0.1
    done
  fi
  if [ -e "$DIR/munge.ours" ]; then stop_pidfile /run/munge/munged.pid munged; fi
  for f in "$CONF" "$(dirname "$CONF")/cgroup.conf"; do
    if ours "$f"; then rm -f "$f"; fi
  done
  rm -rf "$DIR"
}

start() {
  if cluster_ok; then say "already up"; return 0; fi
  [ "$(id -u)" = 0 ] || { say "must run as root (munged runs as user munge, slurmd as root)"; return 1; }
  for p in munged slurmctld slurmd sbatch; do
    command -v "$p" >/dev/null || {
      say "no $p: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"
      return 1
    }
  done
  # Another checkout's cluster: writing the conf under it would break it (and its ports are busy).
  if pgrep -x slurmctld >/dev/null 2>&1 &&
    ! alive "$(cat "$DIR/slurmctld.pid" 2>/dev/null || true)" slurmctld; then
    say "a slurmctld already runs ($(grep -h '^StateSaveLocation=' "$CONF" 2>/dev/null || echo 'not from this checkout')); use it, or stop it with its checkout's scripts/slurm-test-cluster.sh stop"
    return 1
  fi
  if [ -f "$CONF" ] && ! ours "$CONF"; then
    say "$CONF exists and was not written by this script; set SLURM_CONF to another path"
    return 1
  fi
  stop # leftovers of an earlier run
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
  start_munge
  write_conf
  # Both daemons fork into the background and write their pid files.
  slurmctld -f "$CONF" && slurmd -f "$CONF" -N localhost &&
    wait_for "$TIMEOUT" cluster_ok || {
    say "cluster not ready after ${TIMEOUT}s"
    timeout 5 sinfo -N -l >&2 || true
    tail -n 30 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
    return 1
  }
  local id
  id=$(timeout 10 sbatch --parsable --job-name=tally-probe -o /dev/null --wrap true) &&
    wait_for "$TIMEOUT" probe_done "$id" || {
    say "the probe job did not complete"
    timeout 5 scontrol show job "${id:-0}" >&2 || true
    tail -n 30 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
    return 1
  }
  say "up ($PROCTRACK, OverSubscribe=$OVERSUBSCRIBE): $(sinfo -h -o '%P %a %D %T %c cpus')"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if cluster_ok; then sinfo; else echo "slurm-test-cluster: down"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
