#!/bin/sh
# report_store.sh   (environment: LUMOSIM)
#
# report of a graph store takes sim's road (issue 39; docs/report-html.md,
# docs/scaling.md "Symmetry reduction"): the store read with its
# structures shared and sized for the symmetry-reduced run, one GPU
# simulated per class, class members taking their representative's times,
# report and critical path. A 4,096-GPU store given to report took 10.3 GB
# and 40 s of CPU when every GPU was read and walked on its own, against
# 0.6 GB and 3 s for sim. On GPT-3 175B, TP 2 PP 2 DP 8 (32 GPUs, 96
# layers: enough nodes that the estimates are not the fixed footprint;
# synthesized rank = tp + TP (dp + DP pp), docs/synthesis.md):
#  1. report --stats prints the classes the layout gives (one per pipeline
#     stage) and that one GPU per class was simulated;
#  2. report's memory check sizes the store as sim --critical-path does
#     (the same estimate in the refusal under a tiny LUMOSIM_MEM_LIMIT),
#     below sim --symmetry off's, and under a limit between the two report
#     runs and writes the same page as without a limit;
#  3. a refusal under a limit never advises running report under mpirun
#     (refused): only sim under mpirun, then report of its archive.
set -u
: "${LUMOSIM:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "report_store: $*"; exit 1; }

TP=2 PP=2 DP=8
N=$((TP * PP * DP))
st="$tmp/g.h5"
"$LUMOSIM" synth --model gpt3-175b --tp $TP --pp $PP --dp $DP --micro-batch 1 --global-batch 32 \
    --no-memory-check -o "$st" >/dev/null 2>"$tmp/err" || fail "synth: $(cat "$tmp/err")"

# 1. reduced, as the layout says
"$LUMOSIM" report --stats "$st" --html "$tmp/a.html" 2>"$tmp/err" || fail "report: $(cat "$tmp/err")"
line=$(grep '^lumosim: stats: symmetry: ' "$tmp/err") || fail "no symmetry line in report --stats: $(cat "$tmp/err")"
want="lumosim: stats: symmetry: $PP classes of $N GPUs (reduction $((N / PP)).00x), one GPU simulated per class"
[ "$line" = "$want" ] || fail "report --stats: '$line', want '$want'"
echo "ok: report of a store: $PP classes of $N GPUs, one GPU simulated per class"

# 2. sized as sim sizes it: the estimate (MiB) a refusal names
need() {
    LUMOSIM_MEM_LIMIT=1K "$LUMOSIM" "$@" >/dev/null 2>"$tmp/err" && fail "$* ran under a 1 KiB limit"
    sed -n 's/.* need about \([0-9.]*\) \([MG]\)iB per rank.*/\1 \2/p' "$tmp/err" |
        awk '{ printf "%.1f\n", $2 == "G" ? $1 * 1024 : $1 }'
}
r=$(need report "$st" --html "$tmp/x.html")
s=$(need sim --critical-path "$st")
f=$(need sim --critical-path --symmetry off "$st")
[ -n "$r" ] && [ -n "$s" ] && [ -n "$f" ] || fail "no estimate in a refusal: $(cat "$tmp/err")"
[ "$r" = "$s" ] || fail "report sizes the store at $r MiB, sim --critical-path at $s MiB"
awk -v r="$r" -v f="$f" 'BEGIN { exit !(r < f) }' || fail "report's $r MiB is not below the full run's $f MiB"
[ ! -e "$tmp/x.html" ] || fail "a refused report left its page"
mid=$(awk -v r="$r" -v f="$f" 'BEGIN { printf "%dM", (r + f) / 2 }')
LUMOSIM_MEM_LIMIT=$mid "$LUMOSIM" report "$st" --html "$tmp/b.html" 2>"$tmp/err" ||
    fail "report under $mid (reduced $r MiB, full $f MiB): $(cat "$tmp/err")"
cmp -s "$tmp/a.html" "$tmp/b.html" || fail "the page under $mid differs"
echo "ok: report sizes the store as sim does ($r MiB, full $f MiB) and runs under $mid"

# 3. the refusal's advice
LUMOSIM_MEM_LIMIT=$(awk -v r="$r" 'BEGIN { printf "%dK", r * 1024 * 0.9 }') "$LUMOSIM" report "$st" \
    --html "$tmp/x.html" >/dev/null 2>"$tmp/err" && fail "report ran under 90 % of its estimate"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "refusal not one line: $(cat "$tmp/err")"
grep -q 'mpirun -np [0-9]* lumosim sim STORE -o R.h5, then lumosim report R.h5' "$tmp/err" ||
    fail "the refusal does not advise sim under mpirun: $(cat "$tmp/err")"
sed 's/mpirun -np [0-9]* lumosim sim//' "$tmp/err" | grep -q 'mpirun -np' &&
    fail "the refusal advises report under mpirun: $(cat "$tmp/err")"
echo "ok: the refusal advises sim under mpirun, then report of its archive"
