#!/bin/sh
# match_parts.sh DATA   (environment: LUMOSIM)
#
# sim --match-parts (job.h lsim_job_match_ex; docs/scaling.md "The match
# in parts"): the collective match in N parts gives the same job, so the
# same archive (h5diff, the run's provenance excluded) and the same JSON
# report as one part:
#  1. a Llama 405B-class job of 384 GPUs (TP 8 PP 16 DP 3, sequence
#     parallelism, full recomputation: tensor, data and pipeline groups)
#     at 2 and 16 parts;
#  2. the same without --match-parts, under a memory limit half-way
#     between the peaks of one part and of 16 (each read from --stats):
#     the run picks more than one part by itself, stays under the limit,
#     and writes the same archive (left out when MATCH_PARTS_NO_RSS is
#     set: under the sanitizers, peak RSS is their shadow memory);
#  3. the traced jobs of DATA/rooted (3 ranks, rooted broadcasts) and
#     DATA/late (4 ranks, one entering its collectives 5 ms late: observed
#     waiting) at 2 and 3 parts (test_job_parts compares clock offsets
#     and observed waiting array for array);
#  4. --match-parts 0 and 17: usage errors (exit 2) naming 1..16.
set -u
: "${LUMOSIM:?}"
data=${1:?usage: match_parts.sh DATA}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "match_parts: $*"; exit 1; }

# run STORE NAME [ARGS...]: sim -o NAME.h5 --json > NAME.json, --stats in NAME.err
run() {
    st=$1 name=$2
    shift 2
    "$LUMOSIM" sim --stats --json "$st" -o "$tmp/$name.h5" "$@" >"$tmp/$name.json" 2>"$tmp/$name.err" ||
        fail "sim $st $*: $(cat "$tmp/$name.err")"
}
same() {
    h5diff -q --exclude-path /runs/sim/provenance "$tmp/$1.h5" "$tmp/$2.h5" >"$tmp/d" 2>&1 ||
        fail "$2: the archive differs from $1's: $(head -5 "$tmp/d")"
    cmp -s "$tmp/$1.json" "$tmp/$2.json" || fail "$2: the report differs from $1's"
}
parts() { sed -n 's/^lumosim: stats: match: \([0-9]*\) parts$/\1/p' "$tmp/$1.err"; }
peak() { sed -n 's/.*peak RSS \([0-9]*\)\.[0-9]* MiB$/\1/p' "$tmp/$1.err"; }

# 1.
"$LUMOSIM" synth --model llama3.1-405b --layers 128 --tp 8 --pp 16 --dp 3 --micro-batch 1 --global-batch 96 \
    --sequence-parallel --distributed-optimizer --recompute full -o "$tmp/l.h5" >/dev/null 2>"$tmp/err" ||
    fail "synth: $(cat "$tmp/err")"
run "$tmp/l.h5" one --match-parts 1
[ -z "$(parts one)" ] || fail "one part: --stats names $(parts one) parts"
for p in 2 16; do
    run "$tmp/l.h5" p$p --match-parts $p
    [ "$(parts p$p)" = "$p" ] || fail "--match-parts $p: --stats says '$(parts p$p)' parts"
    same one p$p
done

# 2.
a=$(peak one) b=$(peak p16) auto="memory step left out"
[ -n "$a" ] && [ -n "$b" ] || fail "no peak RSS in --stats"
if [ -z "${MATCH_PARTS_NO_RSS:-}" ]; then
    [ "$a" -gt $((b + 40)) ] || fail "one part peaks at $a MiB, 16 at $b: the parts save nothing"
    limit=$(((a + b) / 2))
    LUMOSIM_MEM_LIMIT=${limit}M run "$tmp/l.h5" auto
    n=$(parts auto) c=$(peak auto)
    [ -n "$n" ] && [ "$n" -gt 1 ] || fail "under ${limit}M (one part peaks at $a MiB) the run took '${n:-1}' part(s)"
    [ "$c" -le "$limit" ] || fail "in $n parts the run peaked at $c MiB, over its ${limit}M"
    same one auto
    auto="under ${limit}M: $n parts, $c MiB"
fi

# 3.
for fx in rooted late; do
    "$LUMOSIM" build "$data/$fx" -o "$tmp/$fx.h5" >/dev/null 2>"$tmp/err" || fail "build $fx: $(cat "$tmp/err")"
    run "$tmp/$fx.h5" ${fx}1
    grep -q '"window":{"actual_ns":[0-9]' "$tmp/${fx}1.json" || fail "$fx: nothing observed: it tests nothing"
    for p in 2 3; do
        run "$tmp/$fx.h5" $fx$p --match-parts $p
        same ${fx}1 $fx$p
    done
done

# 4.
for bad in 0 17; do
    "$LUMOSIM" sim "$tmp/late.h5" --match-parts $bad >"$tmp/out" 2>"$tmp/err"
    st=$?
    [ $st -eq 2 ] || fail "--match-parts $bad: exit $st, expected 2"
    grep -q "needs an integer in 1\.\.16" "$tmp/err" || fail "--match-parts $bad: $(cat "$tmp/err")"
done
echo "match_parts: ok (one part $a MiB, 16 parts $b MiB; $auto)"
