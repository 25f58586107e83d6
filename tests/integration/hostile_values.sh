#!/bin/bash
# hostile_values.sh
#
# Issue 40, "Impossible values pass silently" and the two signed overflows:
# one value of a small store or result archive set out of its range in
# place (h5poke), and every command that reads it refuses with exit 1, one
# line naming the file, the dataset and the value, nothing written and the
# input byte-identical (refuse_lib.sh). Before, whatif --dp 4 of a store
# whose colls/bytes were INT64_MAX overflowed a signed sum (UBSan) and wrote
# a new store; collect of an archive whose window_predicted was INT64_MAX
# printed a wrapped, negative job time. The ranges are lsim_graph_check_tables
# (graph.h) and the archive reader's window and breakdown checks
# (h5_archive.c).
# Environment: LUMOSIM, H5POKE.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
: "${H5POKE:?set H5POKE to the h5poke helper}"
L=$LUMOSIM

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-hostile.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
w=$tmp/w
mkdir "$w" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
. "$(dirname "$0")/refuse_lib.sh" || exit 1

cd "$w" || exit 1
# dp 2: the what-if --dp 4 below has data-parallel all-reduces to sum
"$L" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 4 -o s.h5 >/dev/null ||
    { echo "FAIL: synth"; exit 1; }
"$L" sim s.h5 -o res.h5 --run A >/dev/null || { echo "FAIL: sim -o res.h5"; exit 1; }
bad() { # NAME FROM DATASET VALUE INDEX...
    local name=$1 from=$2 ds=$3 val=$4 i
    shift 4
    cp "$from" "$name" || exit 1
    for i in "$@"; do "$H5POKE" "$name" "$ds" "$i" "$val" || { echo "FAIL: h5poke $name $ds $i $val"; exit 1; }; done
}
MAX=9223372036854775807
ncoll=$(h5ls s.h5/colls/bytes 2>/dev/null | sed -n 's/.*{\([0-9]*\).*/\1/p')
[ -n "$ncoll" ] && [ "$ncoll" -gt 0 ] || { echo "FAIL: s.h5 has no /colls/bytes"; exit 1; }
# every collective's bytes at INT64_MAX: the sum whatif/ident.c made overflowed
bad bytes_max.h5 s.h5 /colls/bytes "$MAX" $(seq 0 $((ncoll - 1)))
bad bytes_neg.h5 s.h5 /colls/bytes -5 3
bad group_big.h5 s.h5 /colls/group_size 1073741824 0 # 2^30 on a world of 8
bad group_zero.h5 s.h5 /colls/group_size 0 0
bad group_neg.h5 s.h5 /colls/group_size -2 0         # -1 is "unknown"
bad world_zero.h5 s.h5 /gpus/world_size 0 0
bad lat_neg.h5 s.h5 /gpus/launch_latency_ns -1000000000000000 3
bad lat_max.h5 s.h5 /gpus/launch_latency_ns "$MAX" 0
# a self-loop: the first node with an in-edge gets that edge from itself
v=
for i in $(seq 0 63); do
    [ "$("$H5POKE" s.h5 /nodes/in_off $((i + 1)))" -gt "$("$H5POKE" s.h5 /nodes/in_off "$i")" ] && { v=$i; break; }
done
[ -n "$v" ] || { echo "FAIL: no node with an in-edge among the first 64 of s.h5"; exit 1; }
k=$("$H5POKE" s.h5 /nodes/in_off "$v")
bad self_loop.h5 s.h5 /edges/in_src "$v" "$k"
bad win_max.h5 res.h5 /runs/A/gpus/window_predicted "$MAX" 0
bad win_start.h5 res.h5 /runs/A/gpus/window_actual_start -9223372036854775000 1
# the memory figures and a broadcast's root (sim printed "peak allocated
# -1000000.00 GB" with exit 0)
bad mem_neg.h5 s.h5 /gpus/mem_peak_allocated -1000000000000000 0
bad mem_src.h5 s.h5 /gpus/mem_source 2147483647 0
bad root_big.h5 s.h5 /colls/root 1048576 0 # 2^20: past any group
# a breakdown part and a wait out of range (collect printed
# -9223372036854775808, add-run copied it, report --html overflowed in
# report_html.c); element 2 of row 0 is GPU 0's exposed_comm (n x 4)
MIN=-9223372036854775808
bad bd_min.h5 res.h5 /runs/A/gpus/breakdown_predicted "$MIN" 2
bad wait_big.h5 res.h5 /runs/A/gpus/exposed_comm_wait_predicted "$MAX" 0
bad iter_bd.h5 res.h5 /runs/A/iterations/breakdown_actual -5 0

# ---- the two overflows ------------------------------------------------------
refuse bytes_max_whatif_dp 1 "bytes_max.h5" "colls/bytes" "$MAX" -- "$L" whatif bytes_max.h5 --dp 4 -o new.h5
refuse win_max_collect 1 "win_max.h5" "window_predicted" "$MAX" -- "$L" collect win_max.h5 -o sweep.csv
refuse win_max_html 1 "win_max.h5" "window_predicted" "$MAX" -- "$L" report win_max.h5 --html new.html
refuse win_max_info 1 "win_max.h5" "window_predicted" "$MAX" -- "$L" info win_max.h5
# adding a run copies the others: a damaged one is refused, the file unchanged
refuse win_max_addrun 1 "win_max.h5" "window_predicted" "run 'A' would be copied" -- \
    "$L" sim s.h5 -o win_max.h5 --run B
refuse win_start_collect 1 "win_start.h5" "window_actual_start" "-9223372036854775000" -- \
    "$L" collect win_start.h5 -o sweep.csv

# ---- breakdowns and waits of an archive, by every reader ---------------------
for r in collect html info addrun; do
    case $r in
        collect) cmd=("$L" collect NAME -o sweep.csv) ;;
        html) cmd=("$L" report NAME --html new.html) ;;
        info) cmd=("$L" info NAME) ;;
        addrun) cmd=("$L" sim s.h5 -o NAME --run B) ;;
    esac
    for x in "bd_min|gpus/breakdown_predicted of GPU 0: exposed_comm|$MIN" \
        "wait_big|gpus/exposed_comm_wait_predicted of GPU 0|$MAX" \
        "iter_bd|iterations/breakdown_actual of row 0 (GPU 0): exposed_compute|-5"; do
        IFS='|' read -r f what val <<<"$x"
        # info of an archive reads its per-GPU table, not the iteration rows
        [ "$r$f" = infoiter_bd ] && continue
        refuse "${f}_$r" 1 "$f.h5" "$what" "$val" -- "${cmd[@]/NAME/$f.h5}"
    done
done

# ---- each column, by sim and whatif (what one refuses, the other does) -------
col() { # NAME DATASET VALUE
    refuse "$1_sim" 1 "$1.h5" "$2" "$3" -- "$L" sim "$1.h5"
    refuse "$1_whatif" 1 "$1.h5" "$2" "$3" -- "$L" whatif "$1.h5" --slow-gpu 0:2 -o new.h5
}
col bytes_max colls/bytes "$MAX"
col bytes_neg colls/bytes -5
col group_big colls/group_size 1073741824
col group_zero colls/group_size "group_size 0"
col group_neg colls/group_size -2
col world_zero gpus/world_size "world_size 0"
col lat_neg gpus/launch_latency_ns -1000000000000000
col lat_max gpus/launch_latency_ns "$MAX"
col self_loop "self-loop" "node $v"
col mem_neg gpus/mem_peak_allocated -1000000000000000
col mem_src gpus/mem_source 2147483647
col root_big colls/root 1048576
refuse bytes_max_search 1 "bytes_max.h5" "colls/bytes" -- "$L" search --from bytes_max.h5 --dp 4 --top 1
# info checks every graph as sim does: the /gpus table, the collectives and the edges
refuse world_zero_info 1 "world_zero.h5" "gpus/world_size" -- "$L" info world_zero.h5
# a collective mismatch in a store names the store the user gave first, the
# GPU's synth label after it (it named only "synth:gpt3-15b/gpu1" before)
bad mismatch.h5 s.h5 /colls/bytes 12345 0
refuse match_names_store 1 "lumosim: error: mismatch.h5: GPU 1 (synth:gpt3-15b/gpu1): collective #0" \
    "but 12345 on rank 0 (mismatch.h5: GPU 0 (synth:gpt3-15b/gpu0))" -- "$L" sim mismatch.h5
refuse lat_neg_info 1 "lat_neg.h5" "gpus/launch_latency_ns" -- "$L" info lat_neg.h5
refuse mem_neg_info 1 "mem_neg.h5" "gpus/mem_peak_allocated" -1000000000000000 -- "$L" info mem_neg.h5
refuse mem_src_info 1 "mem_src.h5" "gpus/mem_source" 2147483647 -- "$L" info mem_src.h5
refuse root_big_info 1 "root_big.h5" "colls/root" 1048576 -- "$L" info root_big.h5
refuse group_big_info 1 "group_big.h5" "colls/group_size" 1073741824 -- "$L" info group_big.h5
refuse bytes_neg_info 1 "bytes_neg.h5" "colls/bytes" -5 -- "$L" info bytes_neg.h5
refuse self_loop_info 1 "self_loop.h5" "self-loop" "node $v" -- "$L" info self_loop.h5

# ---- work caps, refused up front with the cap stated (docs/reliability.md) ---
refuse cap_whatif_world 1 "new.h5" "4000000 GPUs" "2^20" -- "$L" whatif s.h5 --dp 1000000 -o new.h5
refuse cap_whatif_work 1 "new.h5" "400000 GPUs x" "over the cap of 1e+08" "--force-large" -- \
    "$L" whatif s.h5 --dp 100000 -o new.h5
# a what-if that keeps the layout is refused from the store's GPU table
# alone, before any graph is read (issue 39; at 98,304 GPUs the refusal
# came after 314 s of identifying every GPU): every GPU of keep.h5 claims
# GPU 0's rows at 2e7 nodes, 1.6e8 in all, which reading the graphs would
# refuse (/nodes holds a few hundred rows) -- so the cap's line proves the
# graphs were not read
cp s.h5 keep.h5 || exit 1
for i in 0 1 2 3 4 5 6 7; do
    for f in "node_count 20000000" "node_offset $("$H5POKE" s.h5 /gpus/node_offset 0)" \
        "edge_offset $("$H5POKE" s.h5 /gpus/edge_offset 0)" "edge_count $("$H5POKE" s.h5 /gpus/edge_count 0)"; do
        set -- $f
        "$H5POKE" keep.h5 "/gpus/$1" "$i" "$2" || { echo "FAIL: h5poke keep.h5 $1"; exit 1; }
    done
done
refuse cap_whatif_keep 1 "new.h5" "8 GPUs x 20000000 nodes a GPU" "over the cap of 1e+08" -- \
    "$L" whatif keep.h5 --slow-gpu 1:1.5 -o new.h5
# a refusal that needs only the store's recorded synth options comes before
# any graph is read too (issue 39: a distributed-optimizer store of 4,096
# GPUs was refused after 17 s of reading): distbad.h5 is dist.h5 with every
# collective's bytes at INT64_MAX, which reading any GPU's graph refuses
# (distbad_read) -- so the options' line, the same as on the intact store,
# proves no graph was read; --dp 2 (the store's own) waits for the graphs
"$L" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 4 \
    --distributed-optimizer -o dist.h5 >/dev/null || { echo "FAIL: synth --distributed-optimizer"; exit 1; }
nd=$(h5ls dist.h5/colls/bytes 2>/dev/null | sed -n 's/.*{\([0-9]*\).*/\1/p')
[ -n "$nd" ] && [ "$nd" -gt 0 ] || { echo "FAIL: dist.h5 has no /colls/bytes"; exit 1; }
bad distbad.h5 dist.h5 /colls/bytes "$MAX" $(seq 0 $((nd - 1)))
for c in "dp 4|--dp" "tp 4|--tp, --hidden and --ffn" "layers 8|--layers" \
    "pp 4|--pp, --schedule, --micro-batches (and DP or TP from width 1)"; do
    opt=${c%%|*} what=${c#*|}
    line="synthesized with non-default options (distopt), which $what cannot carry over by editing the graphs"
    refuse "distopt_${opt% *}" 1 "dist.h5: $line" -- "$L" whatif dist.h5 --${opt% *} ${opt#* } -o new.h5
    cp "$tmp/err" "$tmp/err.intact"
    refuse "distopt_${opt% *}_unread" 1 "distbad.h5: $line" -- "$L" whatif distbad.h5 --${opt% *} ${opt#* } -o new.h5
    [ "$(sed 's/distbad\.h5/dist.h5/' "$tmp/err")" = "$(cat "$tmp/err.intact")" ] ||
        fail "distopt_${opt% *}: the early line differs from the intact store's: $(cat "$tmp/err") vs $(cat "$tmp/err.intact")"
done
refuse distbad_read 1 "distbad.h5" "colls/bytes" "$MAX" -- "$L" whatif distbad.h5 --slow-gpu 0:2 -o new.h5
refuse distbad_dp_same 1 "distbad.h5" "colls/bytes" "$MAX" -- "$L" whatif distbad.h5 --dp 2 -o new.h5
refuse cap_search_from_world 1 "s.h5" "DP 1000000" "2^20" -- "$L" search --from s.h5 --dp 1000000 --top 1
refuse cap_search_from_work 1 "s.h5" "over the cap of 1e+08" "--force-large" -- \
    "$L" search --from s.h5 --dp 100000 --top 1
# 100,000 (the documented maximum) x the store's nodes
refuse cap_samples 1 "s.h5" "--samples 100000 x" "over the cap of 1e+08" "--force-large" -- "$L" sim s.h5 --samples 100000
refuse cap_synth_world 1 "new.h5" "1048640 GPUs" "2^20" -- \
    "$L" synth --model gpt3-15b --tp 8 --pp 8 --dp 16385 --global-batch 16385 --micro-batch 1 -o new.h5
refuse cap_synth_work 1 "new.h5" "1000000 GPUs x" "over the cap of 1e+08" "--force-large" -- \
    "$L" synth --model gpt3-15b --tp 8 --pp 8 --dp 15625 --global-batch 15625 --micro-batch 1 -o new.h5
# 10^6 GPUs of 78 nodes each: 7.8e7 nodes passed the cap before, and took
# 247 s; each GPU's own cost (LSIM_CLI_SYNTH_GPU_WORK, cli.h) counts now
refuse cap_synth_per_gpu 1 "new.h5" "1000000 GPUs x (78 nodes of GPU 0 + 170 a GPU)" "over the cap of 1e+08" \
    "--force-large" -- "$L" synth --model gpt3-15b --layers 8 --tp 8 --pp 8 --dp 15625 --global-batch 15625 \
    --micro-batch 1 -o new.h5
# an output's directory that is a file is named as one
: >afile
refuse dir_is_file 1 "afile/new.h5: cannot write: afile: is not a directory" -- "$L" whatif s.h5 --dp 4 -o afile/new.h5
rm -f afile
refuse force_large_twice 2 "--force-large given twice" -- "$L" sim s.h5 --samples 3 --force-large --force-large
# caps on the command line state the cap; a long value is echoed in part
refuse cap_pp 2 "--pp needs a positive integer up to 100000" -- "$L" whatif s.h5 --pp 1000000 -o new.h5
refuse cap_gpus 2 "--gpus needs a comma-separated list of at most" "up to 1000000" -- \
    "$L" search --model gpt3-15b --gpus 1048576 --global-batch 1024
refuse cap_top 2 "--top needs an integer in 0..1000000" -- "$L" search --from s.h5 --top 1000000000
long=$(seq -s, 1 1000)
refuse long_list 2 "--dp needs a comma-separated list" "1,2,3,4" "..." -- "$L" search --from s.h5 --dp "$long"
[ "$(wc -c <"$tmp/err")" -lt 300 ] || fail "long_list: the 1000-item list echoed whole ($(wc -c <"$tmp/err") bytes)"

# ---- and the untouched inputs pass ------------------------------------------
"$L" whatif s.h5 --dp 4 -o ok.h5 >/dev/null || fail "whatif --dp 4 of the good store refused"
"$L" sim ok.h5 >/dev/null || fail "sim of the whatif --dp 4 refused"
"$L" collect res.h5 -o ok.csv >/dev/null || fail "collect of the good archive refused"
rm -f ok.h5 ok.csv

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "PASS"
