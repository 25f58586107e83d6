#!/bin/bash
# no_data_loss_numbers.sh SOURCE_DIR
#
# Issue 17, "Numbers": saturate or refuse, never wrap; size before work.
# Every case runs one lumosim command in a work directory of inputs (a small
# synthesized store, a store built from the bundled trace, spec files,
# nccl-tests files, an existing result archive) and checks:
#   - the exit status (2: a number outside its documented range on the
#     command line; 1: a bad number in a file, a store too big);
#   - stderr is exactly one line, "lumosim: error: ...", naming the file or
#     option and the problem;
#   - stdout is empty;
#   - the work directory holds exactly the files it held before, each
#     byte-identical (cmp): no output, no *.tmp-* left, no input touched.
# The bad stores are made with h5poke (one element of one dataset set in
# place). Environment: LUMOSIM, H5POKE.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
: "${H5POKE:?set H5POKE to the h5poke helper}"
src=${1:?usage: no_data_loss_numbers.sh SOURCE_DIR}
L=$LUMOSIM

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-numbers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
w=$tmp/w
mkdir "$w" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ---- inputs --------------------------------------------------------------
cd "$w" || exit 1
"$L" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 4 -o s.h5 >/dev/null ||
    { echo "FAIL: synth"; exit 1; }
"$L" build "$src/examples/megatron_tp8_rank0.json.gz" -o x.h5 >/dev/null || { echo "FAIL: build"; exit 1; }
"$L" sim s.h5 -o res.h5 --run A >/dev/null || { echo "FAIL: sim -o res.h5"; exit 1; }
bad_store() { # NAME FROM DATASET INDEX VALUE
    cp "$2" "$1" && "$H5POKE" "$1" "$3" "$4" "$5" || { echo "FAIL: h5poke $*"; exit 1; }
}
# k: GPU 0's first compute kernel (kind 2, no collective flag)
k=
for i in $(seq 0 63); do
    if [ "$("$H5POKE" s.h5 /nodes/kind "$i")" = 2 ] && [ "$("$H5POKE" s.h5 /nodes/flags "$i")" = 0 ]; then k=$i; break; fi
done
[ -n "$k" ] || { echo "FAIL: no compute kernel among the first 64 nodes of s.h5"; exit 1; }
bad_store dur_max.h5 s.h5 /nodes/dur "$k" 9223372036854775807    # GPU 0, node k
bad_store dur_big.h5 s.h5 /nodes/dur "$k" 5000000000000          # 5e12 ns: inside the bounds
bad_store delay_big.h5 s.h5 /edges/in_delay 7 100000000000000    # 1e14 ns
bad_store release_max.h5 s.h5 /nodes/release 0 9223372036854775807
bad_store obs_end.h5 x.h5 /nodes/obs_end 3 4611686018427387909   # 2^62 + 5
sed 's/989.4e12/989.4/' "$src/data/gpu/h100.json" >tflops.json
sed 's/"mem_bw": 3.35e12/"mem_bw": 3350/' "$src/data/gpu/h100.json" >gbs.json
sed 's/"intra_bw": 450e9/"intra_bw": 450/' "$src/data/topology/dgx_h100_ib400.json" >topo_gbs.json
cp "$src/tests/data/calibrate/gemm_curve.json" gemm.json
head -n 20 "$src/tests/data/nccl_tests/all_gather_perf.txt" >ag_head.txt # header + 5 rows
nccl() { # NAME AWK-PROGRAM: the rows of ag_head.txt changed
    awk "$2" ag_head.txt >"$1"
}
nccl nccl_constant.txt '/^ +[0-9]/ { $5 = "40.00" } { print }'
nccl nccl_inf.txt '/^ +4096 / { $5 = "inf" } { print }'
nccl nccl_nan.txt '/^ +16384 / { $5 = "nan" } { print }'
nccl nccl_na.txt '/^ +65536 / { $5 = "N/A" } { print }'
grep -q ' 40.00 ' nccl_constant.txt && grep -q ' inf ' nccl_inf.txt && grep -q ' nan ' nccl_nan.txt ||
    { echo "FAIL: making the nccl-tests files"; exit 1; }
"$L" calibrate --gpu a100 --nccl-tests ag_head.txt gemm.json -o cal_ok.json >/dev/null ||
    { echo "FAIL: calibrate on the good nccl-tests rows"; exit 1; }
rm -f cal_ok.json

# ---- the check: refuse (refuse_lib.sh) ------------------------------------
. "$(dirname "$0")/refuse_lib.sh" || exit 1

# ---- GPU and network specs: physical ranges, named by file and key --------
refuse spec_tflops 1 "tflops.json" "key peak_flops" "outside the range" "not TFLOP/s" -- \
    "$L" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 4 --gpu ./tflops.json -o new.h5
refuse spec_tflops_whatif 1 "tflops.json" "key peak_flops" -- "$L" whatif s.h5 --gpu ./tflops.json -o new.h5
refuse spec_mem_bw_gbs 1 "gbs.json" "key mem_bw" "not GB/s" -- "$L" whatif s.h5 --from-gpu ./gbs.json --gpu a100 -o new.h5
refuse topo_intra_gbs 1 "topo_gbs.json" "key intra_bw" "outside the range" -- "$L" whatif s.h5 --topology ./topo_gbs.json -o new.h5

# ---- what-if factors outside their documented ranges: exit 2 -------------
refuse slow_1e11 2 "--slow-gpu 0:1e11" "outside 0.001..1000" -- "$L" whatif s.h5 --slow-gpu 0:1e11 -o new.h5
refuse slow_1e300 2 "--slow-gpu 0:1e300" "outside 0.001..1000" -- "$L" whatif s.h5 --slow-gpu 0:1e300 -o new.h5
refuse slow_tiny 2 "--slow-gpu 1:1e-5" "outside 0.001..1000" -- "$L" whatif s.h5 --slow-gpu 1:1e-5 -o new.h5
refuse jitter_1e308 2 "--jitter 1e308" "0..10" -- "$L" whatif s.h5 --jitter 1e308 -o new.h5
refuse jitter_11 2 "--jitter 11" "0..10" -- "$L" whatif s.h5 --jitter 11 -o new.h5

# ---- stores with a number outside the graph bounds: file, GPU, node -------
refuse store_dur_max_sim 1 "dur_max.h5" "GPU 0, node $k:" "duration 9223372036854775807 ns" "0..1e13" -- "$L" sim dur_max.h5
refuse store_dur_max_archive 1 "dur_max.h5" "GPU 0, node $k:" -- "$L" sim dur_max.h5 -o res.h5 --run B
refuse store_dur_max_new_archive 1 "dur_max.h5" "GPU 0, node $k:" -- "$L" sim dur_max.h5 -o new_res.h5
refuse store_dur_max_replay 1 "dur_max.h5" "GPU 0, node $k:" -- "$L" replay dur_max.h5
refuse store_dur_max_whatif 1 "dur_max.h5" "GPU 0, node $k:" -- "$L" whatif dur_max.h5 --slow-gpu 0:2 -o new.h5
refuse store_delay 1 "delay_big.h5" "GPU 0, node" "delay of 100000000000000 ns" -- "$L" sim delay_big.h5
refuse store_release 1 "release_max.h5" "GPU 0, node 0" "release time" -- "$L" sim release_max.h5
refuse store_obs_end 1 "obs_end.h5" "GPU 0, node 3" "observed" -- "$L" sim obs_end.h5

# ---- whatif checks its own output against the same bounds ----------------
# 5e12 ns is inside the bounds; 1000 times it is not: refused before the
# store is written, naming the output, the GPU and the node
refuse whatif_output 1 "new.h5: GPU 0, node $k:" "duration 5000000000000000 ns" "0..1e13" -- \
    "$L" whatif dur_big.h5 --slow-gpu 0:1000 -o new.h5
refuse whatif_output_dp 1 "new.h5: GPU 0, node $k:" "0..1e13" -- "$L" whatif dur_big.h5 --dp 2 --slow-gpu 0:1000 -o new.h5

# synth checks what it makes too: a model so wide that one GEMM lasts hours
# (the GPU-memory check, where there is one, would refuse it first)
nomem=
"$L" synth --help 2>/dev/null | grep -q -- --no-memory-check && nomem=--no-memory-check
if [ -n "$nomem" ]; then
    refuse synth_output 1 "synth:gpt3-15b/gpu0: GPU 0, node" "outside 0..1e13" -- \
        "$L" synth --model gpt3-15b --layers 4 --hidden 100000000 --ffn 400000000 --heads 8 --tp 2 --pp 2 --dp 1 \
        --micro-batch 1 --global-batch 4 $nomem -o new.h5
else
    echo "skipped: synth_output (no --no-memory-check: the memory check refuses first)"
fi

# ---- size before work ----------------------------------------------------
refuse whatif_layers 1 "new.h5" "need about" "LUMOSIM_MEM_LIMIT" -- \
    env LUMOSIM_MEM_LIMIT=2G "$L" whatif s.h5 --layers 1000000 -o new.h5
refuse whatif_micro_batches 1 "new.h5" "need about" "LUMOSIM_MEM_LIMIT" -- \
    env LUMOSIM_MEM_LIMIT=1G "$L" whatif s.h5 --micro-batches 100000 -o new.h5
refuse store_mem_sim 1 "s.h5" "graph(s) of" "nodes and" "LUMOSIM_MEM_LIMIT" -- env LUMOSIM_MEM_LIMIT=20M "$L" sim s.h5
refuse store_mem_sim_archive 1 "s.h5" "LUMOSIM_MEM_LIMIT" -- env LUMOSIM_MEM_LIMIT=20M "$L" sim s.h5 -o res.h5 --run C

# ---- degenerate calibration data: file and row ---------------------------
refuse nccl_constant 1 "nccl_constant.txt" "same time" -- \
    "$L" calibrate --gpu a100 --nccl-tests nccl_constant.txt gemm.json -o cal.json
refuse nccl_inf 1 "nccl_inf.txt: line 17" "'inf'" -- "$L" calibrate --gpu a100 --nccl-tests nccl_inf.txt gemm.json -o cal.json
refuse nccl_nan 1 "nccl_nan.txt: line 18" "'nan'" -- "$L" calibrate --gpu a100 --nccl-tests nccl_nan.txt gemm.json -o cal.json
refuse nccl_na 1 "nccl_na.txt: line 19" "'N/A'" -- "$L" calibrate --gpu a100 --nccl-tests nccl_na.txt gemm.json -o cal.json

# ---- and valid runs are untouched: in range at the ends ------------------
"$L" whatif s.h5 --slow-gpu 0:1000 --jitter 10 -o edge.h5 >/dev/null || fail "whatif at the range ends refused"
"$L" sim edge.h5 >/dev/null || fail "sim of the whatif at the range ends refused"
rm -f edge.h5

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "PASS"
