#!/bin/sh
# html_scale.sh  (environment: LUMOSIM)
#
# The HTML report of a job of more than 64 GPUs shows the job aggregated
# (issue 39, docs/report-html.md "The job at scale"). Two synthesized GPT-3
# 15B jobs of 4 layers, TP 8 x PP 4, DP 4 (128 GPUs) and DP 16 (512 GPUs),
# GPU 41 slowed twice (whatif --slow-gpu), simulated and reported. Checked on
# the 512-GPU page, against figures read from the archive with h5dump (not
# from the page's code):
#   - the aggregated view is there: the distributions, both heat maps with one
#     cell per stage x replica (4 x 16 = 64 each), the per-stage table, the
#     per-GPU rows folded, no bar per GPU;
#   - the per-GPU rows cover every GPU once, in order; a row of several GPUs
#     holds GPUs of equal windows (the archive's, to the nanosecond) and shows
#     that window; two neighbouring unlinked rows differ at their boundary
#     (the folding is maximal), and the rows are fewer than the GPUs;
#   - the slowest GPU (largest /runs/sim/gpus/window_predicted, the lower
#     index on a tie) heads the "Slowest GPUs" table, linked to its section,
#     and that section is on the page;
#   - the predicted window's p5 / p50 / p95 / max row equals the nearest-rank
#     percentiles of the archive's windows;
#   - with more replicas than columns (DP 400), replicas binned 2 to a
#     column, each cell the largest window of its GPUs (from the archive);
#   - the page grows by at most 1,000 bytes per GPU between 128 and 512 GPUs,
#     and the 512-GPU page is at most 5 MB x 512 / 4096 (the 4,096-GPU bound
#     scaled down).
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
command -v h5dump >/dev/null 2>&1 || { echo "SKIP: h5dump not installed (hdf5-tools)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "html_scale: FAIL: $*"; exit 1; }

# $1: DP; writes $tmp/dp$1.h5 (the result) and $tmp/dp$1.html
job() {
    "$LUMOSIM" synth --model gpt3-15b --layers 4 --tp 8 --pp 4 --dp "$1" --micro-batch 1 --global-batch $((4 * $1)) \
        -o "$tmp/j$1.h5" >/dev/null || fail "synth --dp $1 failed"
    "$LUMOSIM" whatif "$tmp/j$1.h5" --slow-gpu 41:2 -o "$tmp/s$1.h5" >/dev/null || fail "whatif --dp $1 failed"
    "$LUMOSIM" sim "$tmp/s$1.h5" -o "$tmp/dp$1.h5" >/dev/null || fail "sim --dp $1 failed"
    "$LUMOSIM" report "$tmp/dp$1.h5" --html "$tmp/dp$1.html" || fail "report --dp $1 failed"
}
job 4
job 16
page=$tmp/dp16.html
has() { grep -qF -- "$1" "$page" || fail "the 512-GPU page lacks '$1'"; }
count() { grep -oF -- "$1" "$page" | wc -l; }

# the aggregated view
has "<h3 class=\"sub\">Distributions over the 512 GPUs</h3>"
has "aria-label=\"step time heat map\""
has "aria-label=\"exposed communication heat map\""
has "<h3 class=\"sub\">Per pipeline stage</h3>"
grep -qF 'aria-label="predicted breakdown per rank"' "$page" && fail "the 512-GPU page still draws a bar per GPU"
cells=$(count "<title>stage ")
[ "$cells" -eq $((2 * 4 * 16)) ] || fail "$cells heat-map cells, expected 2 maps x 4 stages x 16 replicas = 128"

# the archive's predicted windows, one per line, in GPU order
h5dump -y -w 0 -d /runs/sim/gpus/window_predicted "$tmp/dp16.h5" | sed -n '/DATA {/,/}/p' | tr -c '0-9\n' ' ' |
    tr -s ' ' '\n' | grep -E '^[0-9]+$' >"$tmp/win" || fail "h5dump found no windows"
n=$(wc -l <"$tmp/win")
[ "$n" -eq 512 ] || fail "$n windows in the archive, expected 512"
slow=$(awk '$1 > m || NR == 1 { m = $1; i = NR - 1 } END { print i }' "$tmp/win")
ranks=$(h5dump -y -w 0 -d /runs/sim/gpus/rank "$tmp/dp16.h5" | sed -n '/DATA {/,/}/p' | sed '/}/q' | tr -c '0-9\n' ' ' |
    tr -s ' ' '\n' | grep -E '^[0-9]+$')
rank=$(printf '%s\n' "$ranks" | sed -n "$((slow + 1))p")
echo "slowest GPU from the archive: index $slow, rank $rank"
first=$(grep -A2 -F '<h3 class="sub">Slowest GPUs</h3>' "$page" | sed -n 3p)
case "$first" in
"<tr><td><a href=\"#rank-$slow\">GPU $rank</a></td>"*) ;;
*) fail "the first of the slowest GPUs is not GPU $rank (#rank-$slow): $first" ;;
esac
has "<section id=\"rank-$slow\">"

# the per-GPU rows against the archive (synth numbers GPU i rank i)
[ "$(printf '%s\n' "$ranks" | awk '$1 != NR - 1' | wc -l)" -eq 0 ] || fail "the archive's ranks are not 0..511"
sed -n '/<details><summary>Every GPU (512 GPUs in [0-9]* rows/,/<\/details>/p' "$page" | grep '^<tr><td>\|^<tr><td><a' \
    >"$tmp/rows" || fail "no folded per-GPU rows"
want=$(sed -n 's/.*<summary>Every GPU (512 GPUs in \([0-9]*\) rows.*/\1/p' "$page")
awk -v want="$want" 'NR == FNR { w[FNR - 1] = $1; next }
    function fmt(x) { x /= 1e6; return sprintf(x >= 100 ? "%.1f" : "%.2f", x) }
    {
        linked = index($0, "<a href=") > 0
        split($0, td, "</td><td[^>]*>"); r = td[1]; sub(/.*<td>(<a href="#rank-[0-9]*">)?/, "", r); sub(/<\/a>/, "", r)
        a = r; b = r; if (index(r, "&ndash;")) { a = substr(r, 1, index(r, "&") - 1); b = substr(r, index(r, ";") + 1) }
        a += 0; b += 0
        if (a != next_gpu) { print "row " FNR " starts at GPU " a ", expected " next_gpu; bad = 1 }
        if (linked && b != a) { print "linked row " FNR " holds several GPUs"; bad = 1 }
        for (g = a; g <= b; g++) if (w[g] != w[a]) { print "row " FNR ": GPU " g " window " w[g] " != " w[a]; bad = 1 }
        if (td[5] != fmt(w[a])) { print "row " FNR " shows " td[5] ", the archive " fmt(w[a]); bad = 1 }
        if (FNR > 1 && !linked && !prev_linked && w[a] == w[a - 1]) { print "rows " FNR - 1 " and " FNR " could be one"; bad = 1 }
        prev_linked = linked; next_gpu = b + 1; rows++
    }
    END { if (next_gpu != 512 || rows != want || rows >= 512) { print "rows " rows " (page says " want ") end at GPU " next_gpu; bad = 1 }
          exit bad }' "$tmp/win" "$tmp/rows" || fail "the folded per-GPU rows disagree with the archive"
echo "per-GPU rows: 512 GPUs in $want rows"

# nearest-rank percentiles (k = ceil(p n / 100)), formatted as the page's ms
row=$(sort -n "$tmp/win" | awk '{ v[NR] = $1 } END {
    split("5 50 95 100", p, " "); s = "<tr><td class=\"l\">predicted window</td>"
    for (j = 1; j <= 4; j++) { k = int(p[j] * NR / 100); if (k * 100 < p[j] * NR) k++; if (k < 1) k = 1
        x = v[k] / 1e6; s = s sprintf(x >= 100 ? "<td>%.1f</td>" : "<td>%.2f</td>", x) }
    print s "</tr>" }')
has "$row"

# the size bound
s4=$(wc -c <"$tmp/dp4.html")
s16=$(wc -c <"$page")
echo "page: $s4 bytes at 128 GPUs, $s16 bytes at 512 GPUs, $(((s16 - s4) / 384)) bytes per added GPU"
[ $((s16 - s4)) -le $((1000 * 384)) ] || fail "the page grows by more than 1,000 bytes per GPU"
[ "$s16" -le $((5000000 * 512 / 4096)) ] || fail "the 512-GPU page is over 5 MB x 512 / 4096"

# More replicas than the heat map has columns (334 at 2 px): TP 1 x PP 2 x
# DP 400, GPU 401 (stage 1, replica 1) slowed twice. Replicas are binned 2
# to a column; each step-time cell is the largest window of its stage's GPUs
# in its replicas (GPU = replica + 400 x stage: Megatron's order at TP 1),
# named by the first GPU that holds it, all from the archive.
"$LUMOSIM" synth --model gpt3-15b --layers 2 --tp 1 --pp 2 --dp 400 --micro-batch 1 --global-batch 400 \
    -o "$tmp/b.h5" >/dev/null || fail "synth --dp 400 failed"
"$LUMOSIM" whatif "$tmp/b.h5" --slow-gpu 401:2 -o "$tmp/bs.h5" >/dev/null || fail "whatif --dp 400 failed"
"$LUMOSIM" sim "$tmp/bs.h5" -o "$tmp/br.h5" >/dev/null || fail "sim --dp 400 failed"
"$LUMOSIM" report "$tmp/br.h5" --html "$tmp/b.html" || fail "report --dp 400 failed"
grep -qF "columns: data-parallel replicas (400, 2 to a column)" "$tmp/b.html" || fail "the 400 replicas are not binned 2 to a column"
h5dump -y -w 0 -d /runs/sim/gpus/window_predicted "$tmp/br.h5" | sed -n '/DATA {/,/}/p' | sed '/}/q' |
    tr -c '0-9\n' ' ' | tr -s ' ' '\n' | grep -E '^[0-9]+$' >"$tmp/bwin" || fail "h5dump found no windows (DP 400)"
[ "$(wc -l <"$tmp/bwin")" -eq 800 ] || fail "$(wc -l <"$tmp/bwin") windows in the DP 400 archive, expected 800"
sed -n '/aria-label="step time heat map"/,/<\/svg>/p' "$tmp/b.html" |
    grep -o '<title>stage [0-9]*, replicas [0-9]*-[0-9]*: GPU [0-9]*, [0-9.]* ms' | tr ',:-' '   ' >"$tmp/bcells"
awk 'NR == FNR { w[FNR - 1] = $1; next }
    function fmt(x) { x /= 1e6; return sprintf(x >= 100 ? "%.1f" : "%.2f", x) }
    { s = $2; a = $4; b = $5; g = $7; m = -1
      if (b != a + 1) { print "cell " FNR ": replicas " a "-" b; bad = 1; next }
      for (r = a; r <= b; r++) if (w[400 * s + r] > m) { m = w[400 * s + r]; at = 400 * s + r }
      if (g != at || $8 != fmt(m)) { print "cell " FNR " (stage " s ", " a "-" b "): GPU " g ", " $8 "; the archive: GPU " at ", " fmt(m); bad = 1 }
      if (g == 401) slow = 1; n++ }
    END { if (n != 400 || !slow) { print n " cells (want 2 x 200), slowed GPU 401 named: " slow; bad = 1 }; exit bad }' \
    "$tmp/bwin" "$tmp/bcells" || fail "the binned heat map disagrees with the archive"
echo "binned heat map: 400 cells of 2 replicas each, as the archive's windows"
echo "ok"
