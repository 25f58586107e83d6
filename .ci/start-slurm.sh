#!/usr/bin/env bash
# Start a single-node Slurm cluster on this machine, for the tests labelled
# `slurm` (tests/slurm/) in CI and for trying the templates in slurm/ by hand.
#
#   .ci/start-slurm.sh          # as root; needs: apt-get install slurm-wlm munge
#
# What it does (for a root shell in a container without systemd):
#   1. a munge key (/etc/munge/munge.key, created if missing) and munged,
#      running as the munge user;
#   2. a minimal /etc/slurm/slurm.conf for this host alone: the node line from
#      `slurmd -C` (CPUs, sockets, cores, RealMemory of this machine), one
#      partition "debug", select/cons_tres over cores, proctrack/linuxproc,
#      task/none, no accounting database (accounting_storage/none,
#      jobcomp/none), PMIx available to srun (MpiDefault=none);
#   3. slurmctld and slurmd as daemons (as root), then waits until `sinfo`
#      shows the node idle.
#
# Idempotent: when munged answers and the controller answers with the node
# idle (or busy) it does nothing; daemons already running are left alone; the
# configuration is rewritten only if it is ours (first line marker) and
# changed. A slurm.conf not written by this script is never overwritten.
#
# Environment: SLURM_START_TIMEOUT (seconds to wait for the node, default 60).
# Logs: /var/log/slurm/slurmctld.log, /var/log/slurm/slurmd.log.
set -euo pipefail

MARK="# written by lumosim .ci/start-slurm.sh"
CONF=/etc/slurm/slurm.conf
TIMEOUT=${SLURM_START_TIMEOUT:-60}

die() { echo "start-slurm: error: $*" >&2; exit 1; }
say() { echo "start-slurm: $*"; }

[ "$(id -u)" -eq 0 ] || die "must run as root"
for b in munged munge unmunge slurmctld slurmd sinfo scontrol; do
    command -v "$b" >/dev/null 2>&1 || die "$b not found (apt-get install slurm-wlm munge)"
done

# --- 1. munge ---------------------------------------------------------------
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then
    say "creating a munge key"
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile=/etc/munge/munge.key
    else
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    fi
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    say "starting munged"
    runuser -u munge -- munged
    for _ in $(seq 1 50); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.2
    done
    munge -n | unmunge >/dev/null || die "munged does not answer (see /var/log/munge/munged.log)"
fi
say "munge ok"

# --- 2. slurm.conf ----------------------------------------------------------
host=$(hostname -s)
# the node line as slurmd sees this machine (CPUs, topology, RealMemory in MB)
node=$(slurmd -C | sed -n 's/^NodeName=[^ ]* //p' | head -n 1)
[ -n "$node" ] || die "slurmd -C printed no node description"
# the host name need not resolve: everything talks over the loopback address
newconf=$(cat <<EOF
$MARK
# Single-node test cluster for lumosim (tests/slurm/, docs/slurm.md).
ClusterName=lumosim
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName=$host NodeAddr=127.0.0.1 $node State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
)
changed=0
if [ -e "$CONF" ] && ! head -n 1 "$CONF" | grep -qxF "$MARK"; then
    die "$CONF exists and was not written by this script; not touching it"
fi
if [ ! -e "$CONF" ] || [ "$(cat "$CONF")" != "$newconf" ]; then
    say "writing $CONF"
    install -d /etc/slurm
    printf '%s\n' "$newconf" > "$CONF.tmp.$$"
    mv -f "$CONF.tmp.$$" "$CONF"
    changed=1
fi
# No cgroup.conf: with proctrack/linuxproc and task/none slurmd 22.05 runs
# without one (its "CgroupPlugin=disabled" only exists from 23.02 on).
install -d -m 0755 /var/spool/slurmctld /var/spool/slurmd /var/log/slurm

# --- 3. daemons -------------------------------------------------------------
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
if running /run/slurmctld.pid; then
    if [ $changed -eq 1 ]; then say "reconfiguring the running slurmctld"; scontrol reconfigure || true; fi
else
    say "starting slurmctld"
    slurmctld || { tail -n 20 /var/log/slurm/slurmctld.log >&2; die "slurmctld did not start"; }
fi
if ! running /run/slurmd.pid; then
    say "starting slurmd"
    slurmd || { tail -n 20 /var/log/slurm/slurmd.log >&2; die "slurmd did not start"; }
fi

say "waiting up to ${TIMEOUT}s for node $host"
state=""
for _ in $(seq 1 $((TIMEOUT * 2))); do
    state=$(sinfo -h -n "$host" -o '%T' 2>/dev/null | head -n 1 || true)
    case "$state" in
    idle | mixed | allocated | completing) break ;;
    down* | drain* | fail*)
        # a node remembered as down from an earlier run of the daemons
        scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
done
case "$state" in
idle | mixed | allocated | completing) ;;
*)
    sinfo -N -l >&2 || true
    tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
    die "node $host is '${state:-unknown}', not idle, after ${TIMEOUT}s"
    ;;
esac
scontrol ping
sinfo
say "slurm is up (node $host: $state)"
