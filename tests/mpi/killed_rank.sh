#!/bin/sh
# killed_rank.sh MPIEXEC [FLAGS...] -- JOBDIR      (environment: LUMOSIM)
# A rank killed (SIGKILL, no chance to clean up) at any moment of a 2-rank
# `sim -o` must end the whole job with a non-zero status and a clear message,
# leave no temporary file, and never leave a result file that is not a
# complete archive. The kill lands at 12 delays, most in the first 0.3 s (start-up,
# simulation, collective write); at least a third of the runs must really be
# killed before a result exists, or the test proves nothing and fails.
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
        case "$c" in "$LUMOSIM sim "*"$1"*) echo "${d#/proc/}" ;; esac
    done | sort -n
}

n=0 killed=0
for d in 0 0.02 0.05 0.08 0.1 0.13 0.16 0.2 0.25 0.3 0.4 0.6; do
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
    # nothing but the result may appear beside it (no temporary file, no
    # MPI-IO lock-test file)
    extra=$(ls "$out" | grep -vxE 'res\.h5|stdout|stderr')
    if [ -n "$extra" ]; then echo "kill after ${d}s left: $extra"; exit 1; fi
    if [ $rc -eq 0 ]; then
        # finished before the kill: the result must be complete
        "$LUMOSIM" info "$out/res.h5" >/dev/null 2>&1 || { echo "rc 0 but no readable result after ${d}s"; exit 1; }
    else
        grep -qiE "signal 9|killed|lumosim: error" "$out/stderr" || { echo "no clear message after ${d}s:"; cat "$out/stderr"; exit 1; }
        if [ -e "$out/res.h5" ]; then
            # killed after the rename: then the archive is complete
            "$LUMOSIM" info "$out/res.h5" >/dev/null 2>&1 || { echo "partial result after ${d}s"; exit 1; }
        else
            killed=$((killed + 1))
        fi
    fi
    n=$((n + 1))
done
[ $((killed * 3)) -ge $n ] || { echo "only $killed of $n kills landed before the result existed"; exit 1; }
echo "ok: $killed of $n runs killed before a result existed; none left a temporary or partial file"
