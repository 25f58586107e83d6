#!/bin/sh
# calibrate.sh megatron SHARED_TRACES | bad TEST_DATA | nccl TEST_DATA
# (environment: LUMOSIM, SPEC_LOAD = the spec_load program)
#
# megatron: lumosim calibrate on all eight ranks of megatron_tp8_a100 (exit
#   77 without the shared traces or python3): the GPU spec and topology it
#   writes load; the fitted A100 GEMM efficiency is plausible; the number of
#   GEMM kernels it attributed equals python3's count of kernels whose launch
#   call lies inside an innermost aten::mm/addmm/bmm/baddbmm/matmul/linear.
# nccl: a fixture trace plus an nccl-tests file: the topology's inter-node
#   fields from the file's generating parameters (by hand, see below).
# bad: bad inputs give exit 1, one "lumosim: error:" line naming the
#   culprit, nothing on stdout, no output file.
set -u
mode=$1
dir=$2
: "${LUMOSIM:?}" "${SPEC_LOAD:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "calibrate $mode: $*"; exit 1; }
field() { sed -n "s/^$1=//p" "$2"; }

case $mode in
megatron)
    M=$dir/megatron_tp8_a100
    [ -d "$M" ] || { echo "shared traces missing: skipped"; exit 77; }
    command -v python3 >/dev/null || { echo "python3 missing: skipped"; exit 77; }
    "$LUMOSIM" calibrate "$M" -o "$tmp/gpu.json" --topology-out "$tmp/topo.json" >"$tmp/out" 2>"$tmp/err" ||
        fail "exit $?: $(cat "$tmp/err")"
    cat "$tmp/out"
    "$SPEC_LOAD" gpu "$tmp/gpu.json" >"$tmp/g" || fail "gpu.json does not load"
    "$SPEC_LOAD" topo "$tmp/topo.json" >"$tmp/t" || fail "topo.json does not load"
    [ "$(field name "$tmp/g")" = a100-cal ] || fail "base spec not a100 (deviceProperties)"
    awk -v e="$(field gemm_eff_max "$tmp/g")" 'BEGIN { exit !(e >= 0.3 && e <= 0.95) }' ||
        fail "gemm_eff_max $(field gemm_eff_max "$tmp/g") outside 0.3..0.95"
    awk -v h="$(field gemm_eff_half "$tmp/g")" 'BEGIN { exit !(h > 0 && h < 1e12) }' || fail "gemm_eff_half"
    got=$(sed -n 's/.* launched kernels: \([0-9]*\) kernels attributed/\1/p' "$tmp/out")
    want=$(python3 - "$M" <<'PY'
import bisect, collections, glob, gzip, json, sys
GEMM = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"}
TOL = 1.0  # us, as the reader nests
total = 0
for path in sorted(glob.glob(sys.argv[1] + "/rank*.json.gz")):
    if ".et." in path:
        continue
    ev = [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("ph") == "X"]
    ops = collections.defaultdict(list)
    calls = {}
    for e in ev:
        cat = e.get("cat", "")
        if cat == "cpu_op":
            ops[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["dur"]), e["name"]))
        elif cat in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            calls[e["args"]["correlation"]] = e
    for k in ops:
        ops[k].sort(key=lambda o: (o[0], -o[1]))
    starts = {k: [o[0] for o in v] for k, v in ops.items()}
    for e in ev:
        if e.get("cat") != "kernel":
            continue
        if "nccl" in e["name"].lower():
            continue
        c = calls.get(e.get("args", {}).get("correlation"))
        if c is None:
            continue
        k = (c["pid"], c["tid"])
        ts, end = float(c["ts"]), float(c["ts"]) + float(c["dur"])
        i = bisect.bisect_right(starts.get(k, []), ts + TOL)
        while i > 0:  # the latest-starting op that contains the call is the innermost
            i -= 1
            o = ops[k][i]
            if o[0] <= ts + TOL and end <= o[0] + o[1] + TOL:
                total += o[2] in GEMM
                break
print(total)
PY
) || fail "python3 count failed"
    [ -n "$got" ] && [ "$got" -eq "$want" ] || fail "attributed $got GEMM kernels, python3 counts $want"
    [ "$want" -gt 0 ] || fail "python3 found no GEMM kernels"
    echo "GEMM kernels attributed: $got (python3: $want)"
    ;;
nccl)
    # all_reduce_perf_2x8_h100.txt: 16 ranks on 2 nodes, t = 25 us + size / 80e9.
    # Bus bandwidth 80e9 * 2 * 15/16 = 150e9, over 8 NICs per node: inter_bw
    # 18.75e9; inter_lat (25000 - 6600 - 28 * 600) / 2 = 800 ns with the
    # A100 default topology's coll_base 6600 and intra_lat 600.
    # the fixture's GEMMs follow the efficiency curve: an A100 spec without
    # an SM count (the tile-and-wave model is test_calibrate's)
    printf '{"name": "a100", "peak_flops": 312e12, "mem_bw": 2.039e12, "gemm_eff_max": 0.8, "gemm_eff_half": 1e9, "attn_eff_max": 0.65, "attn_eff_half": 2e9, "mem_eff": 0.85, "kernel_min_ns": 2000, "launch_cpu_ns": 4000, "launch_latency_ns": 6000}\n' >"$tmp/curve.json"
    "$LUMOSIM" calibrate --gpu "$tmp/curve.json" --nccl-tests "$dir/nccl_tests/all_reduce_perf_2x8_h100.txt" \
        "$dir/calibrate/gemm_curve.json" -o "$tmp/gpu.json" --topology-out "$tmp/topo.json" >"$tmp/out" 2>"$tmp/err" ||
        fail "exit $?: $(cat "$tmp/err")"
    "$SPEC_LOAD" topo "$tmp/topo.json" >"$tmp/t" || fail "topo.json does not load"
    awk -v b="$(field inter_bw "$tmp/t")" 'BEGIN { exit !(b > 18.75e9 * 0.98 && b < 18.75e9 * 1.02) }' ||
        fail "inter_bw $(field inter_bw "$tmp/t"), want 18.75e9"
    awk -v l="$(field inter_lat_ns "$tmp/t")" 'BEGIN { exit !(l >= 500 && l <= 1100) }' ||
        fail "inter_lat_ns $(field inter_lat_ns "$tmp/t"), want 800"
    [ "$(field algo "$tmp/t")" = ring ] || fail "algo not ring"
    "$SPEC_LOAD" gpu "$tmp/gpu.json" >"$tmp/g" || fail "gpu.json does not load"
    awk -v e="$(field gemm_eff_max "$tmp/g")" 'BEGIN { exit !(e > 0.7 * 0.98 && e < 0.7 * 1.02) }' ||
        fail "gemm_eff_max $(field gemm_eff_max "$tmp/g"), want 0.7"
    ;;
bad)
    # NAME EXPECTED-TEXT ARGS...
    bad() {
        name=$1 want=$2
        shift 2
        mkdir "$tmp/o" || exit 1
        "$LUMOSIM" calibrate "$@" -o "$tmp/o/gpu.json" --topology-out "$tmp/o/topo.json" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq 1 ] || fail "$name: exit $rc, want 1"
        [ ! -s "$tmp/out" ] || fail "$name: output on stdout"
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: not one line on stderr: $(cat "$tmp/err")"
        grep -q "^lumosim: error: .*$want" "$tmp/err" || fail "$name: want '$want' in: $(cat "$tmp/err")"
        [ -z "$(ls -A "$tmp/o")" ] || fail "$name: left files: $(ls -A "$tmp/o")"
        rmdir "$tmp/o"
    }
    printf '{"name": "a100", "peak_flops": 1e12' >"$tmp/badgpu.json"
    bad no_gemm "cuda_graph.json: no GEMM kernel" --gpu a100 "$dir/cuda_graph.json"
    bad missing "does_not_exist.json: cannot open" --gpu a100 "$dir/does_not_exist.json"
    bad not_a_trace "bad_not_a_trace.json" --gpu a100 "$dir/bad_not_a_trace.json"
    bad bad_gpu_name "--gpu x100: unknown GPU" --gpu x100 "$dir/calibrate/gemm_curve.json"
    bad bad_gpu_file "badgpu.json" --gpu "$tmp/badgpu.json" "$dir/calibrate/gemm_curve.json"
    bad no_gpu_known "hip_trace.json: cannot tell the GPU model" "$dir/hip_trace.json"
    bad nccl_one_row "one_row.txt" --gpu a100 --nccl-tests "$dir/nccl_tests/one_row.txt" "$dir/calibrate/gemm_curve.json"
    bad good_then_bad "bad_malformed.json" "$dir/calibrate/gemm_curve.json" "$dir/bad_malformed.json"
    # a stdout that cannot be written (issue 40): one line, exit 1, and
    # neither output written (before: exit 1 in silence, gpu.json written)
    if [ -w /dev/full ]; then
        mkdir "$tmp/o" || exit 1
        "$LUMOSIM" calibrate --gpu a100 "$dir/calibrate/gemm_curve.json" -o "$tmp/o/gpu.json" \
            --topology-out "$tmp/o/topo.json" >/dev/full 2>"$tmp/err"
        rc=$?
        [ $rc -eq 1 ] || fail "stdout full: exit $rc, want 1"
        [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^lumosim: error: cannot write the report to stdout" "$tmp/err" ||
            fail "stdout full: want one line 'cannot write the report to stdout', got: $(cat "$tmp/err")"
        [ -z "$(ls -A "$tmp/o")" ] || fail "stdout full: left files: $(ls -A "$tmp/o")"
        rm -rf "$tmp/o"
    fi
    # usage errors: exit 2
    "$LUMOSIM" calibrate "$dir/calibrate/gemm_curve.json" >/dev/null 2>&1
    [ $? -eq 2 ] || fail "missing -o: want exit 2"
    "$LUMOSIM" calibrate --bogus x -o "$tmp/gpu.json" >/dev/null 2>&1
    [ $? -eq 2 ] || fail "unknown option: want exit 2"
    [ ! -e "$tmp/gpu.json" ] || fail "usage error wrote gpu.json"
    ;;
*) fail "unknown mode" ;;
esac
echo "calibrate $mode: ok"
