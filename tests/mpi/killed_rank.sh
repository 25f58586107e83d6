#!/bin/sh
# killed_rank.sh MPIEXEC [FLAGS...] -- JOBDIR      (environment: LUMOSIM)
# A rank killed (SIGKILL, no chance to clean up) at any moment of a 2-rank
# `sim -o` must end the whole job with a non-zero status and a clear message,
# leave no temporary file, and never leave a result file that is not a
# complete archive. Two kinds of kill:
# - deterministic: with LUMOSIM_TEST_PAUSE=commit the writing rank stops with
#   its temporary complete and the lock held; the other rank is SIGKILLed
#   there, so the kill lands mid-write on any machine, fast or loaded. Each
#   such run must end non-zero with nothing left beside the result's name
#   (the paused writer gets mpirun's SIGTERM and removes its files); then the
#   writer itself is SIGKILLed there, and the other rank, ended by mpirun,
#   must remove the writer's temporary and lock;
# - timed: 8 delays over start-up, simulation and the collective write. Where
#   they land depends on the machine's speed (on a fast one the job may end
#   first, as CI showed), so they only check that whatever happened left a
#   complete result or none; they are not required to land.
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
[ -e "$1" ] || { echo "$1 missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$LUMOSIM" build "$1" -o "$tmp/job.h5" >/dev/null || { echo "build failed"; exit 1; }

# the pids of the lumosim rank processes whose command line names $1 (from
# /proc, so no procps is needed). The pattern is anchored at the start: the
# launcher's own command line also contains "lumosim sim ... res.h5", and
# killing the launcher instead of a rank proves nothing (it dies silently).
# The pids are sorted numerically, since the glob sorts them as strings.
ranks_of() {
    for d in /proc/[0-9]*; do
        c=$( (tr '\0' ' ' <"$d/cmdline") 2>/dev/null) || continue
        # a rank is a child of the launcher ($mp); the writer's watchdog
        # (tmpfiles.h), with the same command line, is not
        [ "$( (cut -d' ' -f4 "$d/stat") 2>/dev/null)" = "$mp" ] || continue
        case "$c" in "$LUMOSIM sim "*"$1"*) echo "${d#/proc/}" ;; esac
    done | sort -n
}

# the outcome of run $out whose launcher exited with $rc (after a kill at $d)
check_run() {
    out=$1 rc=$2 d=$3
    # nothing but the result may appear beside it (no temporary file, no
    # lock, no MPI-IO lock-test file)
    extra=$(ls "$out" | grep -vxE 'res\.h5|stdout|stderr')
    if [ -n "$extra" ]; then echo "kill after $d left: $extra"; exit 1; fi
    if [ "$rc" -eq 0 ]; then
        # finished before the kill: the result must be complete
        "$LUMOSIM" info "$out/res.h5" >/dev/null 2>&1 || { echo "rc 0 but no readable result after $d"; exit 1; }
        return 1
    fi
    grep -qiE "signal 9|killed|lumosim: error" "$out/stderr" || { echo "no clear message after $d:"; cat "$out/stderr"; exit 1; }
    if [ -e "$out/res.h5" ]; then
        # killed after the rename: then the archive is complete
        "$LUMOSIM" info "$out/res.h5" >/dev/null 2>&1 || { echo "partial result after $d"; exit 1; }
        return 1
    fi
    return 0
}

# run_paused OUT: the job started in the background ($mp), its output in
# OUT, the writer stopped before its commit; $writer: the writer's pid (the
# notice names it)
run_paused() {
    out=$1
    shift
    mkdir "$out"
    # shellcheck disable=SC2086
    LUMOSIM_TEST_PAUSE=commit $launcher "$LUMOSIM" sim "$tmp/job.h5" -o "$out/res.h5" "$@" >"$out/stdout" 2>"$out/stderr" &
    mp=$!
    # bounded by the job itself: without the pause it ends and so does this
    while ! grep -q "paused before commit" "$out/stderr" 2>/dev/null && kill -0 $mp 2>/dev/null; do sleep 0.1; done
    writer=$(sed -n 's/.*paused before commit.*pid \([0-9]*\)).*/\1/p' "$out/stderr" | head -n 1)
    [ -n "$writer" ] || { echo "the writer never paused before its commit:"; cat "$out/stderr"; exit 1; }
}

# deterministic: kill the rank that is not paused while the writer waits
# before its commit
for n in p0 p1; do
    run_paused "$tmp/run$n"
    victim=$(ranks_of "$out/res.h5" | grep -vx "$writer" | head -n 1)
    [ -n "$victim" ] || { echo "no second rank beside the paused writer $writer"; kill -TERM "$writer"; exit 1; }
    kill -9 "$victim"
    wait $mp
    rc=$?
    check_run "$out" "$rc" "a kill mid-write (paused writer $writer)" \
        || { echo "the job survived a rank killed mid-write"; exit 1; }
done

# deterministic: the writer itself SIGKILLed while paused before its commit.
# It cannot clean up; mpirun ends the other rank with SIGTERM, and that
# rank removes the temporary and the lock, whose names rank 0 gave it when
# the collective write began (io/h5_util.c h5s_begin_tmp)
run_paused "$tmp/runw"
kill -9 "$writer"
wait $mp
rc=$?
check_run "$out" "$rc" "the writer killed before its commit (pid $writer)" ||
    { echo "the job survived its writer's SIGKILL"; exit 1; }

# deterministic: with --trace-out, rank 0 alone writes the predicted trace
# and the CSV after the collective write, holding the archive under its
# temporary name until they are complete. SIGKILLed while paused before the
# trace's commit, it leaves the archive's temporary and lock and the
# trace's; the other rank, which rank 0 told each name as it appeared
# (run_mpi.c lsim_mpi_rank0_writes), must remove all four, and no trace or
# CSV may appear
run_paused "$tmp/runt" --trace-out "$tmp/runt/t.json" --csv "$tmp/runt/k.csv"
grep -q "t.json: paused before commit" "$out/stderr" ||
    { echo "the writer paused elsewhere than before the trace's commit:"; cat "$out/stderr"; exit 1; }
kill -9 "$writer"
wait $mp
rc=$?
check_run "$out" "$rc" "rank 0 killed before the trace's commit (pid $writer)" ||
    { echo "the job survived its writer's SIGKILL during the trace"; exit 1; }

n=0 killed=0
for d in 0 0.02 0.05 0.1 0.16 0.25 0.4 0.6; do
    out="$tmp/run$n"
    mkdir "$out"
    # shellcheck disable=SC2086
    $launcher "$LUMOSIM" sim "$tmp/job.h5" -o "$out/res.h5" >"$out/stdout" 2>"$out/stderr" &
    mp=$!
    pids=""
    i=0
    while [ "$(echo $pids | wc -w)" -lt 2 ] && [ $i -lt 2000 ] && kill -0 $mp 2>/dev/null; do
        pids=$(ranks_of "$out/res.h5")
        i=$((i + 1))
    done
    sleep "$d"
    victim=$(echo $pids | awk '{print $NF}')
    [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
    wait $mp
    rc=$?
    check_run "$out" "$rc" "${d}s" && killed=$((killed + 1))
    n=$((n + 1))
done
echo "ok: 4 runs killed mid-write (the writer twice, once while it wrote the trace alone) and $killed of $n timed kills landed before a result existed; none left a temporary or partial file"
