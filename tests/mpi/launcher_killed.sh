#!/bin/sh
# launcher_killed.sh MPIEXEC [FLAGS...] -- JOBDIR      (environment: LUMOSIM)
# mpirun SIGKILLed during the collective write of a 2-rank `sim -o` (issue
# 40). The ranks get no signal: about a second later Open MPI _exits them
# (status 195) when they lose their PMIx server, so no handler runs; the
# writer's watchdog (tmpfiles.h lsim_tmp_watch) must remove the temporary
# and the lock. Bounded by work: the kill lands when the writer says it is
# paused before its commit (LUMOSIM_TEST_PAUSE=commit), and the check runs
# once every process of the job is gone (a bounded poll on their pids).
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
[ -e "$1" ] || { echo "$1 missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$LUMOSIM" build "$1" -o "$tmp/job.h5" >/dev/null || { echo "build failed"; exit 1; }

# every process started from the job's command line (ranks and their
# watchdogs), from /proc so that no procps is needed
job_pids() {
    for d in /proc/[0-9]*; do
        c=$( (tr '\0' ' ' <"$d/cmdline") 2>/dev/null) || continue
        case "$c" in "$LUMOSIM sim "*"$1"*) echo "${d#/proc/}" ;; esac
    done
}

for run in 1 2 3; do
    out="$tmp/run$run"
    mkdir "$out"
    # shellcheck disable=SC2086
    LUMOSIM_TEST_PAUSE=commit $launcher "$LUMOSIM" sim "$tmp/job.h5" -o "$out/R.h5" >"$out/stdout" 2>"$out/stderr" &
    mp=$!
    while ! grep -q "paused before commit" "$out/stderr" 2>/dev/null && kill -0 $mp 2>/dev/null; do sleep 0.1; done
    grep -q "paused before commit" "$out/stderr" || { echo "the writer never paused:"; cat "$out/stderr"; exit 1; }
    ls "$out" | grep -q '^R\.h5\.tmp-' || { echo "no temporary while paused: the kill would prove nothing"; exit 1; }
    pids=$(job_pids "$out/R.h5")
    [ "$(echo $pids | wc -w)" -ge 2 ] || { echo "fewer than 2 ranks: $pids"; exit 1; }
    kill -9 $mp
    wait $mp
    # the ranks end by themselves (Open MPI's lost-server exit); 600 polls
    # is far beyond that, and the loop stops as soon as they are gone
    i=0 alive=$pids
    while [ -n "$alive" ] && [ $i -lt 600 ]; do
        alive=""
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
        [ -n "$alive" ] && sleep 0.1
        i=$((i + 1))
    done
    if [ -n "$alive" ]; then
        echo "run $run: the ranks outlived their launcher:$alive"
        for p in $alive; do kill -9 "$p" 2>/dev/null; done
        exit 1
    fi
    left=$(ls "$out" | grep -E '^R\.h5')
    [ -z "$left" ] || { echo "run $run: mpirun killed mid-write left: $left"; exit 1; }
done
echo "ok: 3 runs with mpirun SIGKILLed before the commit left no temporary, no lock and no R.h5"
