#!/bin/sh
# report_tables.sh [SHARED_TRACES_DIR]  (environment: LUMOSIM)
#
# lumosim report RESULT.h5 --html [--csv] draws the page and the CSV from the
# archive's tables and reads the graphs of the GPUs it shows in full only
# (issue 39: reading every graph held three times the memory of the sim that
# wrote a 4,096-GPU archive). Checked on a synthesized 512-GPU job (GPT-3 15B,
# 4 layers, TP 8 x PP 4 x DP 16, GPU 41 slowed twice: three timings per
# stage):
#   - the page and CSV from the tables are byte for byte those drawn from
#     every graph (LUMOSIM_TEST_REPORT_GRAPHS=1 takes that path), and the CSV
#     is the one sim --csv wrote (the iterations' waits for peers included:
#     an archive without their columns gave 0);
#   - it reads the graphs of as many GPUs as it shows in full, and no more:
#     under a memory limit that the every-graph path is refused at, the
#     tables path writes its page (LUMOSIM_MEM_LIMIT; the reader's own
#     estimate before reading names the GPUs it would read);
#   - a --detail summary archive is smaller than the full one and its tables
#     are the full one's (h5diff); it is shown: its overview is the full
#     archive's, each GPU in full says what the run did not keep, and its
#     --csv is the full archive's;
#   - with the shared traces, a replay (observed times, kernels with actual
#     durations, critical paths) gives the same page both ways.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "report_tables: FAIL: $*"; exit 1; }
L=$LUMOSIM
shared=${1:-}

"$L" synth --model gpt3-15b --layers 4 --tp 8 --pp 4 --dp 16 --micro-batch 1 --global-batch 64 -o "$tmp/j.h5" \
    >/dev/null || fail "synth"
"$L" whatif "$tmp/j.h5" --slow-gpu 41:2 -o "$tmp/s.h5" >/dev/null || fail "whatif"
"$L" sim "$tmp/s.h5" -o "$tmp/r.h5" --csv "$tmp/sim.csv" >/dev/null || fail "sim"
"$L" sim "$tmp/s.h5" -o "$tmp/sum.h5" --detail summary >/dev/null || fail "sim --detail summary"

# both ways
G="env LUMOSIM_TEST_REPORT_GRAPHS=1"
"$L" report "$tmp/r.h5" --html "$tmp/t.html" --csv "$tmp/t.csv" || fail "report from the tables"
$G "$L" report "$tmp/r.h5" --html "$tmp/g.html" --csv "$tmp/g.csv" || fail "report from the graphs"
cmp -s "$tmp/t.html" "$tmp/g.html" || fail "the page from the tables differs from the page from the graphs: $(cmp "$tmp/t.html" "$tmp/g.html")"
cmp -s "$tmp/t.csv" "$tmp/g.csv" || fail "the CSV from the tables differs from the CSV from the graphs: $(cmp "$tmp/t.csv" "$tmp/g.csv")"
cmp -s "$tmp/t.csv" "$tmp/sim.csv" || fail "report --csv of the archive differs from sim --csv: $(cmp "$tmp/t.csv" "$tmp/sim.csv")"
awk -F, '$4 == "iteration" && $22 > 0 { n++ } END { exit !(n > 0) }' "$tmp/t.csv" ||
    fail "no iteration waits for peers in the CSV: the check above proves nothing"
grep -qF "Kernels by name, all ranks" "$tmp/t.html" || fail "the page has no kernels table"

# how many graphs each way reads: the reader's estimate, refused before it reads
need() { sed -n 's/.* \([0-9][0-9]*\) graph(s) of .* need about \([0-9.]*\) MiB.*/\1 \2/p' "$1"; }
LUMOSIM_MEM_LIMIT=1K "$L" report "$tmp/r.h5" --html "$tmp/x.html" --csv "$tmp/x.csv" 2>"$tmp/e1" &&
    fail "a 1 KiB limit was not refused"
LUMOSIM_MEM_LIMIT=1K $G "$L" report "$tmp/r.h5" --html "$tmp/x.html" --csv "$tmp/x.csv" 2>"$tmp/e2" &&
    fail "a 1 KiB limit was not refused (every graph)"
[ ! -e "$tmp/x.html" ] && [ ! -e "$tmp/x.csv" ] || fail "a refused report left output"
set -- $(need "$tmp/e1") $(need "$tmp/e2")
[ $# -eq 4 ] || fail "no memory estimate in the refusals: $(cat "$tmp/e1" "$tmp/e2")"
few=$1 few_mib=$2 all=$3 all_mib=$4
sections=$(grep -c '<section id="rank-' "$tmp/t.html")
[ "$all" -eq 512 ] || fail "the every-graph path reads $all graphs, expected 512"
[ "$few" -eq "$sections" ] || fail "the tables path reads $few graphs for $sections GPUs shown in full"
[ "$few" -le 16 ] || fail "$few GPUs shown in full (at most 16)"
# a limit between the two: the tables path fits, the every-graph path does not
mid=$(awk -v a="$few_mib" -v b="$all_mib" 'BEGIN { printf "%d", (a + b) / 2 }')
awk -v a="$few_mib" -v b="$all_mib" 'BEGIN { exit !(a * 2 < b) }' || fail "$few_mib MiB is not under half of $all_mib MiB"
LUMOSIM_MEM_LIMIT=${mid}M "$L" report "$tmp/r.h5" --html "$tmp/m.html" --csv "$tmp/m.csv" ||
    fail "refused under ${mid} MiB"
cmp -s "$tmp/m.html" "$tmp/t.html" && cmp -s "$tmp/m.csv" "$tmp/t.csv" || fail "the page or CSV under a limit differs"
LUMOSIM_MEM_LIMIT=${mid}M $G "$L" report "$tmp/r.h5" --html "$tmp/m2.html" --csv "$tmp/m2.csv" 2>/dev/null &&
    fail "the every-graph path fit in ${mid} MiB: the check above proves nothing"

# a --detail summary archive: smaller than the full one (a GPU whose times
# are another's keeps no kernel rows of its own there either), its tables
# the full one's value for value
[ "$(wc -c <"$tmp/sum.h5")" -lt "$(wc -c <"$tmp/r.h5")" ] ||
    fail "the summary archive ($(wc -c <"$tmp/sum.h5") bytes) is not smaller than the full one ($(wc -c <"$tmp/r.h5"))"
if command -v h5diff >/dev/null 2>&1; then
    for g in gpus iterations kernels duty critical_path; do
        h5diff "$tmp/r.h5" "$tmp/sum.h5" /runs/sim/$g /runs/sim/$g >"$tmp/diff" 2>&1 ||
            fail "/runs/sim/$g differs between the full and the summary archive: $(head -3 "$tmp/diff")"
    done
fi
"$L" report "$tmp/sum.h5" --html "$tmp/sum.html" --csv "$tmp/sum.csv" || fail "report of a --detail summary archive"
cmp -s "$tmp/sum.csv" "$tmp/t.csv" || fail "the summary archive's CSV differs from the full one's"
head_of() { awk '/<details><summary>Rank/ { exit } { print }' "$1"; }
head_of "$tmp/t.html" >"$tmp/th"
head_of "$tmp/sum.html" >"$tmp/sh"
[ -s "$tmp/th" ] && cmp -s "$tmp/th" "$tmp/sh" || fail "the summary archive's overview differs from the full archive's"
n=$(grep -c 'The run keeps no graph of this GPU' "$tmp/sum.html")
[ "$n" -eq "$sections" ] || fail "$n GPUs say the run keeps no graph, $sections are shown in full"

# a replay: observed times, actual kernel durations, critical paths
T=$shared/ddp4_mi300
if [ -n "$shared" ] && [ -d "$T" ]; then
    "$L" build "$T"/rank0.json.gz "$T"/rank1.json.gz "$T"/rank2.json.gz "$T"/rank3.json.gz -o "$tmp/d.h5" >/dev/null ||
        fail "build ddp4"
    "$L" sim "$tmp/d.h5" -o "$tmp/dr.h5" --critical-path >/dev/null || fail "sim ddp4"
    "$L" report "$tmp/dr.h5" --html "$tmp/dt.html" --csv "$tmp/dt.csv" || fail "report ddp4 from the tables"
    $G "$L" report "$tmp/dr.h5" --html "$tmp/dg.html" --csv "$tmp/dg.csv" || fail "report ddp4 from the graphs"
    cmp -s "$tmp/dt.html" "$tmp/dg.html" || fail "the replay's page differs between the two paths"
    cmp -s "$tmp/dt.csv" "$tmp/dg.csv" || fail "the replay's CSV differs between the two paths"
    awk -F, '$10 == 1 && $11 != "" { n++ } END { exit !(n > 0) }' "$tmp/dt.csv" || fail "the replay's CSV has no actual times"
    grep -qF "Critical path" "$tmp/dt.html" || fail "the replay's page has no critical path"
else
    echo "report_tables: shared traces not found: the replay case was not run"
fi
echo "report_tables: ok ($few of 512 graphs read, $few_mib of $all_mib MiB by the reader's estimate)"
