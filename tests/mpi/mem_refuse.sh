#!/bin/sh
# mem_refuse.sh MPIEXEC [FLAGS...] -- (launcher given for 2 ranks)
# Issue 20: a job that will not fit in the ranks' memory is refused before
# loading, with the estimate per rank and the K that would fit.
# A synthesized 8-GPU store (DP 2: the default mapping gives each of 2 ranks
# one replica) is simulated under LUMOSIM_MEM_LIMIT set between the
# estimate at K = 2 and at K = 1, both computed here from the store's
# counts (`lumosim info`) and the coefficients documented in memlimit.h
# (32 MiB + 80 KiB per graph + 132 B per node + 20 B per edge + 48 B per
# string; 16 B a node less when the engines keep no deciding edges, as
# plain `sim` does; 8 B a node more when it writes an archive, -o), not by
# the code under test. Checks:
#   - serially: exit 1, exactly one line on stderr, "lumosim: error: s.h5:"
#     naming the estimate per rank (in MiB, as computed here) at K = 1, the
#     limit, and "K >= 2"; nothing on stdout; no result file, nothing new
#     in the directory, the store unchanged (cmp);
#   - under the launcher at 2 ranks, the same limit: accepted (exit 0), the
#     result written: the K the message names does fit;
#   - a limit under the estimate of one GPU per rank (K = 8): refused, "no K
#     fits";
#   - with --detail nodes (the deciding edges kept), serially, under a limit
#     between the two estimates of K = 1: refused with the 140-byte figure
#     (132 + 8 for the archive),
#     while plain `sim` under it is not refused by the check.
# Every run is bounded by `timeout`. Environment: LUMOSIM.
set -u
launcher=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "mem_refuse: $*"; exit 1; }
mkdir "$tmp/w" && cd "$tmp/w" || exit 1
# every GPU's rows of its own: the flat estimate below (a store with shared
# structure is estimated for less: tests/python/test_shared_structure.py)
"$LUMOSIM" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 8 \
    --no-shared-structure -o s.h5 >/dev/null ||
    fail "synth"
cp s.h5 s.orig || exit 1
# "  8 GPUs: 4464 nodes, 7460 edges, 64 processors, 8 iterations, 376 collectives, 2296 strings"
counts=$("$LUMOSIM" info s.h5 | sed -n 's/^ *\([0-9]*\) GPUs: \([0-9]*\) nodes, \([0-9]*\) edges, .* \([0-9]*\) strings$/\1 \2 \3 \4/p')
[ -n "$counts" ] || fail "no counts in lumosim info"
# est K: the per-rank estimate with the job split evenly over K ranks
# (shares rounded up), bytes
est() {
    echo "$counts" | awk -v k="$1" -v nb="${2:-124}" 'function up(x) { return int(x / k) + (x % k != 0) }
        { printf "%.0f\n", 33554432 + 81920 * up($1) + nb * up($2) + 20 * up($3) + 48 * up($4) }'
}
e1=$(est 1) e2=$(est 2) ngpu=$(echo "$counts" | cut -d' ' -f1)
e8=$(est "$ngpu" 116) # the "no K fits" run below writes no archive
[ "$e2" -lt "$e1" ] || fail "estimates $e1 (K = 1) and $e2 (K = 2) do not fall"
lim=$(( (e1 + e2) / 2 ))
mib1=$(awk -v b="$e1" 'BEGIN { printf "%.1f MiB", b / 1048576 }')
miblim=$(awk -v b="$lim" 'BEGIN { printf "%.1f MiB", b / 1048576 }')
ls >../before.txt

timeout 120 env LUMOSIM_MEM_LIMIT="$lim" "$LUMOSIM" sim s.h5 -o res.h5 >../out.txt 2>../err.txt
rc=$?
[ $rc -eq 1 ] || { cat ../err.txt; fail "K = 1 under a limit of $lim B: exit $rc, expected 1"; }
[ "$(wc -l <../err.txt)" -eq 1 ] || { cat ../err.txt; fail "not exactly one line on stderr"; }
for needle in "lumosim: error: s.h5: $ngpu graph(s)" "need about $mib1 per rank at K = 1" \
              "more than the $miblim each rank may use (LUMOSIM_MEM_LIMIT)" "the job fits at K >= 2 MPI ranks"; do
    grep -qF -- "$needle" ../err.txt || { cat ../err.txt; fail "the message lacks '$needle'"; }
done
[ ! -s ../out.txt ] || { cat ../out.txt; fail "something on stdout"; }
[ ! -e res.h5 ] || fail "res.h5 written"
ls >../after.txt
cmp -s ../before.txt ../after.txt || { diff ../before.txt ../after.txt; fail "files left behind"; }
cmp -s s.h5 s.orig || fail "the store changed"
echo "ok: refused at K = 1 with 'about $mib1 per rank' and 'K >= 2'"

# shellcheck disable=SC2086
timeout 300 env LUMOSIM_MEM_LIMIT="$lim" $launcher "$LUMOSIM" sim s.h5 -o res2.h5 >../out.txt 2>../err.txt
rc=$?
[ $rc -eq 0 ] || { cat ../err.txt; fail "K = 2 under the same limit: exit $rc, expected 0"; }
[ -s res2.h5 ] || fail "K = 2: no result"
echo "ok: accepted at K = 2"

lim8=$((e8 - 1))
timeout 120 env LUMOSIM_MEM_LIMIT="$lim8" "$LUMOSIM" sim s.h5 >../out.txt 2>../err.txt
rc=$?
[ $rc -eq 1 ] || { cat ../err.txt; fail "limit $lim8: exit $rc, expected 1"; }
grep -qF "no K fits: even one GPU per rank (K = $ngpu)" ../err.txt || { cat ../err.txt; fail "no 'no K fits'"; }
echo "ok: no K fits under $lim8 B"

# the deciding edges: 16 B a node more with --detail nodes (and -o)
eb=$(est 1 140)
[ "$eb" -gt "$e1" ] || fail "estimates $eb (kept) and $e1 (not kept) do not differ"
limb=$(( (eb + e1) / 2 ))
mibb=$(awk -v b="$eb" 'BEGIN { printf "%.1f MiB", b / 1048576 }')
rm -f res.h5
timeout 120 env LUMOSIM_MEM_LIMIT="$limb" "$LUMOSIM" sim s.h5 -o res.h5 --detail nodes >../out.txt 2>../err.txt
rc=$?
[ $rc -eq 1 ] || { cat ../err.txt; fail "--detail nodes under $limb B: exit $rc, expected 1"; }
grep -qF "need about $mibb per rank at K = 1" ../err.txt || { cat ../err.txt; fail "--detail nodes: not '$mibb'"; }
[ ! -e res.h5 ] || fail "--detail nodes: res.h5 written"
timeout 120 env LUMOSIM_MEM_LIMIT="$limb" "$LUMOSIM" sim s.h5 -o res.h5 >../out.txt 2>../err.txt
rc=$?
[ $rc -eq 0 ] || { cat ../err.txt; fail "plain sim under $limb B: exit $rc, expected 0"; }
echo "ok: --detail nodes -o counted at 140 B a node ($mibb), sim -o at 124"
