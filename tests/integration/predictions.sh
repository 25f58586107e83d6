#!/bin/sh
# predictions.sh MODE [TOOLS_DIR]  (environment: LUMOSIM)
#
# End-to-end checks of numbers a user reads, each against a value computed
# here from a published formula or from the input file, never from lumosim's
# own output (issue 41: bugs that only a unit test caught). Every check
# fails on the bug it names (bench/mutate.sh plants each one):
#
#   collectives  lumosim synth of a small DP job (TP 1, PP 1) on a ring
#                topology written here, then sim --trace-out: every gradient
#                all-reduce lasts exactly the ring's alpha-beta time,
#                base + 2(n-1) step latencies + 2(n-1)/n x bytes / bandwidth
#                (NCCL's ring all-reduce, docs/cost-models.md; "bus
#                bandwidth" = algorithm bandwidth x 2(n-1)/n in NCCL's
#                PERFORMANCE.md), inside one node (DP 2, 4) and across two
#                (DP 8: each node's egress 4 NICs wide, capped by NVLink;
#                2 of the 14 steps cross nodes). An all-reduce twice as
#                fast (algorithm bandwidth taken for bus bandwidth) is off
#                by a factor 2.
#   whatif_dp    lumosim whatif --dp 4 of the DP 2 job, --topology and
#                --from-topology the same file: the copied and the old
#                all-reduces must be re-timed for the new group of 4 (the
#                same formula with n = 4, 1 ns rounding); the group size
#                written for each is 4. A --dp what-if that leaves them at
#                DP 2's time is 50 % short on each.
#   memory       synth --dp 4 (TP 1, PP 1) with and without
#                --distributed-optimizer: sim --json's memory terms against
#                the formulas of docs/memory.md, written out here:
#                parameters 12h^2 + 13h per layer (Narayanan et al. 2021,
#                section 5.1) + the word and position embeddings + the final
#                norm; weights 2 bytes, fp32 gradients 4, Adam 12 bytes per
#                parameter, divided by DP only with the distributed
#                optimizer (Megatron-LM distrib_optimizer.md: 18 vs
#                6 + 12/d); activations sbh (10 + 24/t) per layer
#                (Korthikanti et al. 2022, flash attention) plus the
#                embedding's and the logits' (section 4.3). Optimizer
#                memory divided by DP without the distributed optimizer is
#                4x too small.
#   iterations   a 4-step training trace (tests/data/tools/make_train_trace.py),
#                lumosim replay --json: each step's actual_ns is its row of
#                the GPU partition, computed here from the trace alone: a
#                kernel belongs to the step whose ProfilerStep holds the
#                CPU call that launched it (by correlation id), a step's row
#                runs from its first kernel's start to the next step's (the
#                first from the window's start, the last to its end); the
#                window is every event's span. An iteration boundary one
#                off moves a whole step's worth of time between rows.
#
# python3 reads the JSON; without it the test is skipped (77).
set -u
mode=$1
tools=${2:-}
command -v python3 >/dev/null 2>&1 || { echo "predictions $mode: python3 missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "predictions $mode: $*"; exit 1; }

# A ring-only network whose figures are all given here (nothing defaulted):
# 4 GPUs per node, 100 GB/s NVLink, 12.5 GB/s per NIC, 1 us and 5 us per
# step, 6.6 us per call.
cat >"$tmp/topo.json" <<'EOF'
{"name": "predictions_ring", "gpus_per_node": 4, "intra_bw": 100e9, "intra_lat_ns": 1000,
 "inter_bw": 12.5e9, "inter_lat_ns": 5000, "coll_base_ns": 6600, "algo": "ring"}
EOF
# a 2-layer GPT (h 1024, 8 heads of 128, FFN 4096; GPT-3's sequence and
# vocabulary): seconds to synthesize and simulate
SHAPE="--model gpt3-15b --layers 2 --hidden 1024 --ffn 4096 --heads 8 --tp 1 --pp 1 --micro-batch 1 --gpu a100"

# ring_check TRACE DP: every all-reduce of the predicted trace against the
# ring formula for DP GPUs, 4 per node
ring_check() {
    python3 - "$1" "$2" <<'PY' || fail "$1: all-reduce times differ from the ring formula (above)"
import json, sys
tr, n = json.load(open(sys.argv[1])), int(sys.argv[2])
base, lat_in, lat_out, bw_in, bw_nic, gpn = 6600, 1000, 5000, 100e9, 12.5e9, 4
nodes = (n + gpn - 1) // gpn
per_node = min(n, gpn)
# across nodes the ring leaves each node through its GPUs' NICs, capped by NVLink
bw = bw_in if nodes == 1 else min(per_node * bw_nic, bw_in)
steps, cross = 2 * (n - 1), 2 * (nodes - 1)
ar = [e for e in tr["traceEvents"] if e.get("ph") == "X" and e.get("args", {}).get("collective") == "allreduce"]
if not ar:
    sys.exit("no all-reduce in the predicted trace")
bad = 0
for e in ar:
    a = e["args"]
    want = base + (steps - cross) * lat_in + cross * lat_out + 2 * (n - 1) / n * a["bytes"] / bw * 1e9
    got = round(e["dur"] * 1000)
    if a["group_size"] != n or abs(got - want) > 1:
        print("%s (%d bytes, group %d): %d ns, the ring formula for %d GPUs gives %.0f ns"
              % (e["name"], a["bytes"], a["group_size"], got, n, want))
        bad += 1
sys.exit(1 if bad else 0)
PY
    echo "ok: $1: every all-reduce at the ring formula for $2 GPUs"
}

case $mode in
collectives)
    for dp in 2 4 8; do
        "$LUMOSIM" synth $SHAPE --dp $dp --global-batch $dp --topology "$tmp/topo.json" -o "$tmp/s$dp.h5" >/dev/null ||
            fail "synth --dp $dp failed"
        "$LUMOSIM" sim --trace-out "$tmp/t$dp.json" "$tmp/s$dp.h5" >/dev/null || fail "sim --dp $dp failed"
        ring_check "$tmp/t$dp.json" $dp
    done
    ;;
whatif_dp)
    "$LUMOSIM" synth $SHAPE --dp 2 --global-batch 2 --topology "$tmp/topo.json" -o "$tmp/s2.h5" >/dev/null ||
        fail "synth failed"
    "$LUMOSIM" whatif "$tmp/s2.h5" --dp 4 --topology "$tmp/topo.json" --from-topology "$tmp/topo.json" \
        -o "$tmp/w4.h5" >/dev/null || fail "whatif --dp 4 failed"
    "$LUMOSIM" sim --trace-out "$tmp/w4.json" "$tmp/w4.h5" >/dev/null || fail "sim of the what-if failed"
    ring_check "$tmp/w4.json" 4
    ;;
memory)
    for opt in "" --distributed-optimizer; do
        "$LUMOSIM" synth $SHAPE --dp 4 --global-batch 4 $opt -o "$tmp/m.h5" --force >/dev/null || fail "synth $opt failed"
        "$LUMOSIM" sim --json "$tmp/m.h5" >"$tmp/m.json" 2>/dev/null || fail "sim --json $opt failed"
        python3 - "$tmp/m.json" "${opt:-none}" <<'PY' || fail "memory terms ${opt:-without the distributed optimizer} (above)"
import json, sys
m, opt = json.load(open(sys.argv[1]))["memory"], sys.argv[2]
L, h, f, s, V, b, dp = 2, 1024, 4096, 2048, 51200, 1, 4
# Narayanan et al. 2021 section 5.1: 12h^2 + 13h per layer (A = h, f = 4h);
# word embeddings V h and learned positions s h on the first stage; the
# final LayerNorm (2h) on the last; with one stage the output layer is the
# word embedding itself (tied)
params = L * (12 * h * h + 13 * h) + V * h + s * h + 2 * h
tok, sbh = s * b, s * b * h
# Korthikanti et al. 2022 (flash attention: no s x s term): 34 sbh bytes per
# layer at TP 1; one micro-batch in flight on one stage; the embedding's
# dropout mask (sbh) and int64 token ids; the last stage's norm and output
# layer inputs (4 sbh) and fp32 logits (4 s b V)
act = L * 34 * sbh + (sbh + 8 * tok) + 4 * sbh + 4 * tok * V
want = {"params": params, "weights_bytes": 2 * params, "gradients_bytes": 4 * params,
        "optimizer_bytes": 12 * params / (dp if opt != "none" else 1), "activations_bytes": act}
st = m["stages"][0]
bad = 0
for k, v in want.items():
    if abs(st[k] - v) > 1e-9 * v + 1:
        print("%s: %s is %.0f, the formula gives %.0f" % (opt, k, st[k], v))
        bad += 1
if m["dp"] != dp:
    print("dp %s, not %d" % (m["dp"], dp)); bad += 1
sys.exit(1 if bad else 0)
PY
        echo "ok: memory terms at the formulas (${opt:-no distributed optimizer})"
    done
    ;;
iterations)
    [ -n "$tools" ] || fail "usage: predictions.sh iterations TOOLS_DIR"
    python3 "$tools/make_train_trace.py" "$tmp/t.json" --steps 4 --layers 2 >/dev/null || fail "make_train_trace.py failed"
    "$LUMOSIM" replay --json "$tmp/t.json" >"$tmp/r.json" || fail "replay failed"
    python3 - "$tmp/t.json" "$tmp/r.json" <<'PY' || fail "iteration rows differ from the trace's ProfilerSteps (above)"
import json, sys
t, rep = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
ns = lambda us: round(us * 1000)
steps = sorted((ns(e["ts"]), ns(e["ts"] + e["dur"]), e["name"]) for e in ev if e["name"].startswith("ProfilerStep#"))
launch = {e["args"]["correlation"]: ns(e["ts"]) for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
first = [None] * len(steps)
for e in ev:
    if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
        continue
    s = launch[e["args"]["correlation"]]
    for i, (a, z, _) in enumerate(steps):
        if a <= s < z:
            first[i] = ns(e["ts"]) if first[i] is None else min(first[i], ns(e["ts"]))
if len(steps) != 4 or None in first:
    sys.exit("the fixture has %d steps, GPU work in %s" % (len(steps), first))
w0 = min(ns(e["ts"]) for e in ev)
w1 = max(ns(e["ts"] + e["dur"]) for e in ev)
bounds = [w0] + first[1:] + [w1]
r = rep["ranks"][0] if "ranks" in rep else rep
its = r["iterations"]
bad = 0
if r["window"]["actual_ns"] != w1 - w0:
    print("window %s ns, the trace's span is %d ns" % (r["window"]["actual_ns"], w1 - w0)); bad += 1
if [i["name"] for i in its] != [x[2] for x in steps]:
    print("iterations %s, the trace's steps %s" % ([i["name"] for i in its], [x[2] for x in steps])); bad += 1
for i, it in enumerate(its[:len(steps)]):
    want = bounds[i + 1] - bounds[i]
    if it["actual_ns"] != want:
        print("%s: actual %s ns, the trace gives %d ns" % (it["name"], it["actual_ns"], want)); bad += 1
sys.exit(1 if bad else 0)
PY
    echo "ok: 4 iterations' actual rows at the trace's ProfilerStep boundaries"
    ;;
*) fail "unknown mode" ;;
esac
