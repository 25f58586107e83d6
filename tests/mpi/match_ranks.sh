#!/bin/sh
# match_ranks.sh MPIEXEC NPFLAG [FLAGS...] -- [JOB...]
# Environment: LUMOSIM, BENCH_MATCH (bench/bench_match), H5POKE.
# The distributed collective match (run_mpi.c, issue 20):
#  1. on a synthesized TP2 PP2 DP2 job (tensor, pipeline point-to-point and
#     data-parallel groups) and on each STORE given, at K = 1, 2, 3 and 4
#     ranks, every rank's matched instances, clock offsets and observed
#     waiting equal those of the gather-and-match it replaced
#     (bench_match --verify); each JOB (a job's trace directory, built into
#     a store here; skipped when missing) the same;
#  2. a job whose collectives cannot be matched gives, at K = 2, 3 and 4,
#     exactly the one error line the serial `lumosim sim` prints, exit
#     status 1 on every rank and no result file. Bad instances on several
#     GPUs (hashed to different owners): the one first in (group, position)
#     order is named, as serially.
set -u
launcher=$1
npflag=$2
shift 2
flags=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags="$flags $1"; shift; done
[ $# -gt 0 ] && shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "match_ranks: $*"; exit 1; }
"$LUMOSIM" synth --model gpt3-15b --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 16 --no-memory-check \
    -o "$tmp/job.h5" >/dev/null 2>&1 || fail "synth failed"
stores="$tmp/job.h5"
n=0
for d in "$@"; do
    [ -e "$d" ] || continue
    n=$((n + 1))
    "$LUMOSIM" build "$d" -o "$tmp/traced$n.h5" >/dev/null 2>&1 || fail "build of $d failed"
    stores="$stores $tmp/traced$n.h5"
done
for s in $stores; do
    for k in 1 2 3 4; do
        # shellcheck disable=SC2086
        $launcher $npflag $k $flags "$BENCH_MATCH" --verify "$s" >"$tmp/out" 2>&1
        rc=$?
        grep -q "verify: K = $k: the distributed match equals gather-and-match" "$tmp/out" && [ $rc -eq 0 ] ||
            { cat "$tmp/out"; fail "K = $k on $s: the distributed match differs (rc $rc)"; }
        ! grep -q MISMATCH "$tmp/out" || { cat "$tmp/out"; fail "K = $k on $s: MISMATCH"; }
    done
done
# bad jobs: one collective's position moved far away on one GPU (row 6000
# of /colls: an instance with one participant) and, in the second, also
# sizes changed on eight rows of several GPUs: failures on several owners
# (with the lowest failing rank's error instead, K = 3 names another)
cp "$tmp/job.h5" "$tmp/bad1.h5"
"$H5POKE" "$tmp/bad1.h5" /colls/seq 6000 99999 || fail "h5poke failed"
cp "$tmp/bad1.h5" "$tmp/bad2.h5"
for row in 100 1000 2000 3000 4000 5000 6000 6500; do
    "$H5POKE" "$tmp/bad2.h5" /colls/bytes $row 12345 || fail "h5poke failed"
done
for bad in bad1 bad2; do
    "$LUMOSIM" sim "$tmp/$bad.h5" -o "$tmp/res.h5" >/dev/null 2>"$tmp/err1"
    [ $? -eq 1 ] || fail "$bad: the serial sim did not fail with status 1"
    grep 'lumosim: error' "$tmp/err1" >"$tmp/line1"
    cp "$tmp/line1" "$tmp/serial_$bad"
    [ "$(wc -l <"$tmp/line1")" -eq 1 ] || fail "$bad: the serial sim printed no single error line"
    for k in 2 3 4; do
        rm -f "$tmp/res.h5" "$tmp/rcs"
        # each rank's own exit status, appended by a shell around it
        # shellcheck disable=SC2086
        $launcher $npflag $k $flags sh -c '"$1" sim "$2" -o "$3" >/dev/null; echo $? >>"$4"' sh \
            "$LUMOSIM" "$tmp/$bad.h5" "$tmp/res.h5" "$tmp/rcs" 2>"$tmp/errN"
        grep 'lumosim: error' "$tmp/errN" >"$tmp/lineN"
        cmp -s "$tmp/line1" "$tmp/lineN" || { cat "$tmp/line1" "$tmp/errN"; fail "$bad, K = $k: not the serial error line"; }
        [ "$(grep -c . "$tmp/rcs")" -eq $k ] && [ "$(grep -cx 1 "$tmp/rcs")" -eq $k ] ||
            { cat "$tmp/rcs"; fail "$bad, K = $k: not every rank exited with status 1"; }
        [ ! -e "$tmp/res.h5" ] || fail "$bad, K = $k: a result file was left"
    done
done
# two failing instances in bad2, the serial line names the other one: the
# ranks had to pick by (group, position), not by rank
! cmp -s "$tmp/serial_bad1" "$tmp/serial_bad2" || fail "bad2 does not fail at another instance than bad1"
echo "ok: the distributed match equals gather-and-match at K = 1-4 ($stores); bad jobs give the serial error line on every rank"
