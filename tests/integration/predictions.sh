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
#                2 of the 14 steps cross nodes), and DP 8 with the tree
#                forced (2 x the buffer at 0.9 of the bandwidth, latency
#                2 (chain + log2 nodes) hops), and PP 2 x DP 4 (pipeline
#                sends between nodes: one NIC, the network's latency); the
#                buckets carry the
#                model's fp32 gradients once. An all-reduce twice as
#                fast (algorithm bandwidth taken for bus bandwidth) is off
#                by a factor 2.
#   fsdp         synth --fsdp 4: the all-gathers (bf16 shards, 2 P / 4
#                bytes) and reduce-scatters (fp32 gradients, 4 P) of each
#                layer and of the embedding, sized and timed by formula.
#   cp           synth --cp 2: the ring attention's K/V blocks (2 b s/CP
#                heads head_dim x 2 bytes), sized and timed by formula.
#   whatif_dp    lumosim whatif --dp 4 of the DP 2 job, --topology and
#                --from-topology the same file: the copied and the old
#                all-reduces must be re-timed for the new group of 4 (the
#                same formula with n = 4, 1 ns rounding); the group size
#                written for each is 4. A --dp what-if that leaves them at
#                DP 2's time is 50 % short on each.
#   memory       synth --dp 4 (TP 1, PP 1) with and without
#                --distributed-optimizer, with --fsdp 4, and PP 2 (both stages): sim
#                --json's memory terms (and the NCCL buffers, the reserve,
#                the total) against
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
#   nccl         DP 16 and 32 across nodes on the AWS p5 topology (NCCL's
#                algorithm and protocol choice on), and on it with a 2:1
#                oversubscribed spine: each all-reduce at the (algorithm,
#                protocol) NCCL's tuning model picks, timed with the fitted
#                efficiencies (the model written out here from tuning.cc).
#   attention    flash attention kernels (causal, forward and backward) at
#                the roofline of their FLOP count on the A100 spec.
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
SHAPE0="--model gpt3-15b --layers 2 --hidden 1024 --ffn 4096 --heads 8 --tp 1 --micro-batch 1 --gpu a100"
SHAPE="$SHAPE0 --pp 1"

# coll_check TRACE [DP]: every collective of the predicted trace against
# NCCL's ring alpha-beta time for its kind, bytes and group (the group's
# GPUs consecutive, 4 per node): all-reduce 2(n-1) steps moving
# 2(n-1)/n x bytes, reduce-scatter n-1 steps moving (n-1)/n x bytes,
# all-gather n-1 steps moving (n-1) x bytes (bytes: each GPU's input),
# a send/receive pair one step moving bytes (docs/cost-models.md; NCCL's
# PERFORMANCE.md). A collective may wait for its peers, never finish early:
# none is shorter than its formula, and the shortest of each kind, size and
# group meets it to 1 ns. With DP: every all-reduce's group is DP wide.
coll_check() {
    python3 - "$1" "${2:-0}" "${3:-ring}" <<'PY' || fail "$1: collective times differ from the alpha-beta formulas (above)"
import json, math, sys
tr, dp, algo = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
base, lat_in, lat_out, bw_in, bw_nic, gpn = 6600, 1000, 5000, 100e9, 12.5e9, 4
def formula(kind, b, n, cross):
    nodes = (n + gpn - 1) // gpn
    # across nodes a ring leaves each node through its GPUs' NICs, capped by NVLink
    bw = bw_in if nodes == 1 else min(min(n, gpn) * bw_nic, bw_in)
    if kind in ("send", "recv"):  # one NIC when the pair is on two nodes
        return base + (lat_out if cross else lat_in) + b / (bw_nic if cross else bw_in) * 1e9
    if kind == "allreduce" and algo == "tree":
        # NCCL's tree: a chain in each node and a double binary tree across
        # nodes, traversed up and down (2 x the buffer), its bandwidth
        # derated to 0.9 (tuning.cc: busBw * .9, ratio .5)
        per = min(n, gpn)
        lat = 2 * ((per - 1) * lat_in + math.ceil(math.log2(nodes)) * lat_out)
        return base + lat + 2 * b / (0.9 * bw) * 1e9
    steps, cross, moved = {"allreduce": (2 * (n - 1), 2 * (nodes - 1), 2 * (n - 1) / n * b),
                           "reducescatter": (n - 1, nodes - 1, (n - 1) / n * b),
                           "allgather": (n - 1, nodes - 1, (n - 1) * b)}[kind]
    return base + (steps - cross) * lat_in + cross * lat_out + moved / bw * 1e9
shortest, bad = {}, 0
for e in tr["traceEvents"]:
    a = e.get("args", {})
    if e.get("ph") != "X" or "collective" not in a:
        continue
    # a send lasts until its receive is posted: the pair's transfer is the
    # shorter; its group "p2p:A->B" names the two GPUs
    p2p = a["collective"] in ("send", "recv")
    cross = 0
    if p2p:
        ends = a["group"].split(":")[1].split("#")[0].split("->")
        cross = int(ends[0]) // gpn != int(ends[1]) // gpn
    key = ("send" if p2p else a["collective"], a["bytes"], a["group_size"], cross)
    got = round(e["dur"] * 1000)
    shortest[key] = min(shortest.get(key, got), got)
    if dp and a["collective"] == "allreduce" and a["group_size"] != dp:
        print("%s: an all-reduce over %d GPUs, DP is %d" % (e["name"], a["group_size"], dp)); bad += 1
if not shortest:
    sys.exit("no collective in the predicted trace")
for (kind, b, n, cross), got in sorted(shortest.items()):
    want = formula(kind, b, n, cross)
    if got < want - 1 or got > want + 1:
        print("%s of %d bytes over %d GPUs: %d ns, the formula gives %.0f ns" % (kind, b, n, got, want)); bad += 1
sys.exit(1 if bad else 0)
PY
    echo "ok: $1: every collective at its alpha-beta formula"
}

# coll_bytes TRACE KIND NAME_PART: the sorted distinct sizes of GPU 0's
# collectives of that kind whose name holds NAME_PART, and their count
coll_bytes() {
    python3 - "$@" <<'PY'
import json, sys
tr, kind, part = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
b = [e["args"]["bytes"] for e in tr["traceEvents"] if e.get("ph") == "X" and e.get("args", {}).get("collective") == kind
     and e["args"].get("device", 0) == 0 and e["pid"] < 1000000 and part in e["name"]]
print(" ".join(str(x) for x in sorted(set(b))), len(b))
PY
}

# the shape's parameters (Narayanan et al. 2021 section 5.1: 12h^2 + 13h a
# layer, A = h, f = 4h) and the word embedding's (vocabulary x h)
LAYER_PARAMS=$((12 * 1024 * 1024 + 13 * 1024))
WORD_PARAMS=$((51200 * 1024))

case $mode in
collectives)
    for dp in 2 4 8; do
        "$LUMOSIM" synth $SHAPE --dp $dp --global-batch $dp --topology "$tmp/topo.json" -o "$tmp/s$dp.h5" >/dev/null ||
            fail "synth --dp $dp failed"
        "$LUMOSIM" sim --trace-out "$tmp/t$dp.json" "$tmp/s$dp.h5" >/dev/null || fail "sim --dp $dp failed"
        coll_check "$tmp/t$dp.json" $dp
    done
    # the same network with NCCL's tree forced: DP 8 over 2 nodes
    sed 's/"algo": "ring"/"algo": "tree"/' "$tmp/topo.json" >"$tmp/tree.json"
    "$LUMOSIM" synth $SHAPE --dp 8 --global-batch 8 --topology "$tmp/tree.json" -o "$tmp/tree.h5" >/dev/null ||
        fail "synth --dp 8 on the tree failed"
    "$LUMOSIM" sim --trace-out "$tmp/tree.json.out" "$tmp/tree.h5" >/dev/null || fail "sim (tree) failed"
    coll_check "$tmp/tree.json.out" 8 tree
    # PP 2 x DP 4: the stages on two nodes, every pipeline send crosses them
    "$LUMOSIM" synth $SHAPE0 --pp 2 --dp 4 --global-batch 8 --topology "$tmp/topo.json" -o "$tmp/pp.h5" >/dev/null ||
        fail "synth --pp 2 --dp 4 failed"
    "$LUMOSIM" sim --trace-out "$tmp/pp.json" "$tmp/pp.h5" >/dev/null || fail "sim (PP 2) failed"
    coll_check "$tmp/pp.json" 4
    grep -q '"collective":"recv"' "$tmp/pp.json" || fail "PP 2: no pipeline receive in the trace"
    # PP 2 x TP 2 with the scatter/gather optimization: each pipeline send
    # carries its TP rank's share of the activation, s b h x 2 bytes / TP
    # (Narayanan et al. 2021 section 4.1; sequence 2048, micro-batch 1,
    # hidden 1024)
    "$LUMOSIM" synth --model gpt3-15b --layers 2 --hidden 1024 --ffn 4096 --heads 8 --micro-batch 1 --gpu a100 \
        --tp 2 --pp 2 --dp 2 --global-batch 4 --scatter-gather -o "$tmp/sg.h5" >/dev/null || fail "synth --scatter-gather failed"
    "$LUMOSIM" sim --trace-out "$tmp/sg.json" "$tmp/sg.h5" >/dev/null || fail "sim (scatter/gather) failed"
    got=$(coll_bytes "$tmp/sg.json" send send_next | cut -d' ' -f1)
    [ "$got" = "$((2048 * 1024 * 2 / 2))" ] ||
        fail "scatter/gather: pipeline sends of $got bytes, the TP rank's share is $((2048 * 1024 * 2 / 2))"
    # the gradient buckets carry every layer's and the word embedding's fp32
    # gradient once (4 bytes a parameter); the learned positions (s h) and
    # the final norm (2h) may ride along: between the two sums
    python3 - "$tmp/t2.json" $((4 * (2 * LAYER_PARAMS + WORD_PARAMS))) $((4 * (2 * LAYER_PARAMS + WORD_PARAMS + 2048 * 1024 + 2 * 1024))) <<'PY' ||
import json, sys
tr, lo, hi = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
b = sum(e["args"]["bytes"] for e in tr["traceEvents"] if e.get("ph") == "X" and e["pid"] < 1000000
        and e.get("args", {}).get("collective") == "allreduce")
print("GPU 0's gradient all-reduces: %d bytes, the model's fp32 gradients %d to %d" % (b, lo, hi))
sys.exit(0 if lo <= b <= hi else 1)
PY
        fail "the gradient all-reduces do not carry the model's gradients once"
    ;;
fsdp)
    # FSDP over 4 GPUs (ZeRO-3, torchtitan's mixed precision): each unit (a
    # layer; the embedding) all-gathers its bf16 shard (2 bytes x params / 4
    # per GPU) and reduce-scatters its fp32 gradient (4 bytes x params)
    "$LUMOSIM" synth $SHAPE --dp 4 --fsdp 4 --global-batch 4 --topology "$tmp/topo.json" -o "$tmp/f.h5" >/dev/null ||
        fail "synth --fsdp 4 failed"
    "$LUMOSIM" sim --trace-out "$tmp/f.json" "$tmp/f.h5" >/dev/null || fail "sim --fsdp 4 failed"
    coll_check "$tmp/f.json"
    got=$(coll_bytes "$tmp/f.json" allgather fsdp_allgather | cut -d' ' -f1,2)
    want="$((2 * LAYER_PARAMS / 4)) $((2 * WORD_PARAMS / 4))"
    [ "$got" = "$want" ] || fail "FSDP all-gathers of $got bytes, the bf16 shards are $want"
    got=$(coll_bytes "$tmp/f.json" reducescatter fsdp_reducescatter | cut -d' ' -f1,2)
    want="$((4 * LAYER_PARAMS)) $((4 * WORD_PARAMS))"
    [ "$got" = "$want" ] || fail "FSDP reduce-scatters of $got bytes, the fp32 gradients are $want"
    # Float8 all-gather (torchao's Float8Linear, --fp8-all-gather, on the
    # H100): a layer's linear weights, 12 h^2, gathered at 1 byte, its
    # biases and norms, 13 h, at 2; the embedding stays bf16
    "$LUMOSIM" synth $(echo "$SHAPE" | sed 's/--gpu a100/--gpu h100/') --dp 4 --fsdp 4 --global-batch 4 \
        --precision fp8 --fp8-all-gather --topology "$tmp/topo.json" -o "$tmp/f8.h5" >/dev/null ||
        fail "synth --fsdp 4 --fp8-all-gather failed"
    "$LUMOSIM" sim --trace-out "$tmp/f8.json" "$tmp/f8.h5" >/dev/null || fail "sim --fp8-all-gather failed"
    got=$(coll_bytes "$tmp/f8.json" allgather fsdp_allgather | cut -d' ' -f1,2)
    want="$(((2 * 13 * 1024 + 12 * 1024 * 1024) / 4)) $((2 * WORD_PARAMS / 4))"
    [ "$got" = "$want" ] || fail "FP8 FSDP all-gathers of $got bytes, the shards at 1 byte a linear weight are $want"
    echo "ok: FSDP's all-gathers and reduce-scatters carry the shards and gradients (FP8 linear weights at 1 byte)"
    ;;
cp)
    # context parallelism over 2 GPUs (ring attention): each step passes the
    # rank's K and V, 2 x micro-batch x seq/CP x heads x head_dim x 2 bytes
    "$LUMOSIM" synth $SHAPE --dp 1 --cp 2 --global-batch 1 --topology "$tmp/topo.json" -o "$tmp/c.h5" >/dev/null ||
        fail "synth --cp 2 failed"
    "$LUMOSIM" sim --trace-out "$tmp/c.json" "$tmp/c.h5" >/dev/null || fail "sim --cp 2 failed"
    coll_check "$tmp/c.json"
    got=$(coll_bytes "$tmp/c.json" recv cp_kv_recv)
    # one K/V block received per layer per pass (CP - 1 = 1 step), forward
    # and the backward's own: 2 layers x 2
    [ "$got" = "$((2 * 1 * 1024 * 8 * 128 * 2)) 4" ] || fail "CP K/V receives: $got (bytes count), want $((2 * 1024 * 8 * 128 * 2)) 4"
    echo "ok: CP's ring passes K and V of the rank's tokens"
    ;;
whatif_dp)
    "$LUMOSIM" synth $SHAPE --dp 2 --global-batch 2 --topology "$tmp/topo.json" -o "$tmp/s2.h5" >/dev/null ||
        fail "synth failed"
    "$LUMOSIM" whatif "$tmp/s2.h5" --dp 4 --topology "$tmp/topo.json" --from-topology "$tmp/topo.json" \
        -o "$tmp/w4.h5" >/dev/null || fail "whatif --dp 4 failed"
    "$LUMOSIM" sim --trace-out "$tmp/w4.json" "$tmp/w4.h5" >/dev/null || fail "sim of the what-if failed"
    coll_check "$tmp/w4.json" 4
    ;;
memory)
    for case in "dp 4" "dp 4 --distributed-optimizer" "dp 4 --fsdp 4" "pp 2"; do
        set -- $case
        if [ "$1" = dp ]; then lay="--pp 1 --dp 4 --global-batch 4 ${3:-} ${4:-}"; else lay="--pp 2 --dp 1 --global-batch 4"; fi
        "$LUMOSIM" synth $SHAPE0 $lay -o "$tmp/m.h5" --force >/dev/null || fail "synth $lay failed"
        "$LUMOSIM" sim --json "$tmp/m.h5" >"$tmp/m.json" 2>/dev/null || fail "sim --json ($lay) failed"
        python3 - "$tmp/m.json" "$case" <<'PY' || fail "memory terms ($lay) (above)"
import json, sys
m, case = json.load(open(sys.argv[1]))["memory"], sys.argv[2].split()
L, h, f, s, V, b = 2, 1024, 4096, 2048, 51200, 1
dp = 4 if case[0] == "dp" else 1
pp = 2 if case[0] == "pp" else 1
distopt = "--distributed-optimizer" in case
fsdp = 4 if "--fsdp" in case else 0
m_b = 4 // dp  # micro-batches per pipeline (global batch 4, micro-batch 1)
# Narayanan et al. 2021 section 5.1: 12h^2 + 13h per layer (A = h, f = 4h);
# word embeddings V h and learned positions s h on the first stage; the
# final LayerNorm (2h) on the last, with the output layer: the word
# embedding itself on one stage (tied), a copy of it on the last of several
layer = 12 * h * h + 13 * h
tok, sbh, MiB = s * b, s * b * h, 1 << 20
want_stages = []
for st in range(pp):
    first, last = st == 0, st == pp - 1
    params = (L // pp) * layer + (V * h + s * h if first else 0) + (2 * h + (V * h if pp > 1 else 0) if last else 0)
    # 1F1B: stage st holds min(pp - st, micro-batches) forwards at its peak
    # (Korthikanti et al. 2022 section 4.2.3); flash attention: 34 sbh bytes
    # a layer at TP 1 (no s x s term); the embedding's dropout mask (sbh)
    # and int64 token ids per micro-batch in flight on the first stage; the
    # final norm's and output layer's inputs (4 sbh) and fp32 logits (4 s b V)
    # on the last
    infl = min(pp - st, m_b)
    act = infl * (L // pp) * 34 * sbh + (infl * (sbh + 8 * tok) if first else 0) + (4 * sbh + 4 * tok * V if last else 0)
    # NCCL: 24 channels x 2 connections x 4 MiB per communicator the GPU is
    # in (DP; the pipeline's; the embedding group of the first and last
    # stage); the pipeline's activation and gradient buffers, 2 sbh each
    comms = (dp > 1) + (pp > 1) + (pp > 1 and (first or last))
    comm = comms * 24 * 2 * 4 * MiB + (2 * 2 * sbh if pp > 1 else 0)
    # the CUDA context with PyTorch's kernels (666,632,192 bytes, PyTorch
    # PR #86509) and 5 % of the activations for temporaries (Megatron-LM's
    # theoretical_memory_usage.py)
    reserve = 666632192 + 0.05 * act
    w = {"params": params, "weights_bytes": 2 * params, "gradients_bytes": 4 * params,
         "optimizer_bytes": 12 * params / (dp if distopt else 1), "activations_bytes": act,
         "comm_bytes": comm, "reserve_bytes": reserve}
    if fsdp:
        # ZeRO-3 (Rajbhandari et al. 2020, section 5.3) as torchtitan's FSDP2
        # runs it: fp32 gradient and Adam's state (4 + 12 bytes) sharded over
        # the 4 ranks; bf16 weights whole only for the unit running and the
        # one prefetched, a unit the largest of a layer and the word embedding
        w.update(weights_bytes=2 * 2 * max(layer, V * h), gradients_bytes=4 * params / fsdp,
                 optimizer_bytes=12 * params / fsdp)
    w["total_bytes"] = sum(w[k] for k in w if k.endswith("_bytes"))
    want_stages.append(w)
bad = 0
if len(m["stages"]) != pp or m["dp"] != dp or m["pp"] != pp:
    sys.exit("%d stages, DP %s, PP %s: want %d, %d, %d" % (len(m["stages"]), m["dp"], m["pp"], pp, dp, pp))
for st, w in enumerate(want_stages):
    for k, v in w.items():
        if abs(m["stages"][st][k] - v) > 1e-9 * v + 1:
            print("%s: stage %d: %s is %.0f, the formula gives %.0f" % (" ".join(case), st, k, m["stages"][st][k], v))
            bad += 1
sys.exit(1 if bad else 0)
PY
        echo "ok: memory terms at the formulas ($lay)"
    done
    ;;
nccl)
    # NCCL's own algorithm and protocol choice across nodes (nccl_tuning):
    # DP 16 and 32 on the shipped AWS p5 topology (fitted to the published
    # nccl-tests rows, data/topology/aws_p5_efa.json) and on the same with 2
    # nodes per leaf behind a 2:1 oversubscribed spine; buckets of 310 MB and
    # 28 MB. Each all-reduce against NCCL's tuning model written out here
    # (NVIDIA/nccl src/graph/tuning.cc): the (algorithm, protocol) its
    # nominal model predicts fastest, timed with the fitted efficiencies.
    # The cases pick the tree on 2 nodes (where no node both sends and
    # receives: 1 x the buffer through the NIC), the ring on 4, LL128.
    [ -n "$tools" ] || fail "usage: predictions.sh nccl TOPOLOGY_DIR"
    python3 - "$tools/aws_p5_efa.json" "$tmp/p5_leaf2.json" <<'PY' || fail "cannot write the oversubscribed topology"
import json, sys
t = json.load(open(sys.argv[1]))
t.pop("sources", None)
t.update(name="p5_leaf2", nodes_per_leaf=2, oversubscription=2.0)
json.dump(t, open(sys.argv[2], "w"))
PY
    for topo in "$tools/aws_p5_efa.json" "$tmp/p5_leaf2.json"; do
        for dp in 16 32; do
            for h in 1024 128; do
                "$LUMOSIM" synth --model gpt3-15b --layers 2 --hidden $h --ffn $((4 * h)) --heads $((h / 128)) --tp 1 --pp 1 \
                    --micro-batch 1 --gpu h100 --dp $dp --global-batch $dp --topology "$topo" -o "$tmp/n.h5" --force \
                    >/dev/null 2>"$tmp/err" || fail "synth --dp $dp --hidden $h on $topo: $(cat "$tmp/err")"
                "$LUMOSIM" sim --trace-out "$tmp/n.json" "$tmp/n.h5" >/dev/null || fail "sim failed"
                python3 - "$topo" "$tmp/n.json" "$dp" <<'PY' || fail "$topo, DP $dp, hidden $h: all-reduces off NCCL's model (above)"
import json, math, sys
t, tr, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
gpn = t["gpus_per_node"]
nodes, g = -(-n // gpn), min(n, gpn)
# tuning.cc: LL, LL128, Simple bandwidth relative to Simple's (ring 1/4,
# 0.92; tree 1/3.8, 0.915) and step latency relative to Simple's on the
# network (hwLat NET ring 2.7, 4.0, 9.6 us; tree 5.0, 8.5, 50 us); the
# tree's nominal bus bandwidth derated to 0.9
PBW = [[0.25, 0.92, 1.0], [1 / 3.8, 0.915, 1.0]]
PLAT = [[2.7 / 9.6, 4.0 / 9.6, 1.0], [5.0 / 50.0, 8.5 / 50.0, 1.0]]
egress = g * t["inter_bw"]  # one NIC per GPU, rings rotated over them
if t.get("nodes_per_leaf", 0) > 0 and nodes > t["nodes_per_leaf"] and t.get("oversubscription", 1) > 1:
    egress /= t["oversubscription"]
def time(b, tree, p, nominal):
    if tree:  # a chain in the node, a double binary tree across nodes, up and down
        lat = 2 * ((g - 1) + math.ceil(math.log2(nodes))) * t["tree_hop_ns"]
        traffic = (1 if nodes == 2 else 2) * b
        eff = 0.9 if nominal else t["tree_eff"]
    else:
        lat = 2 * (n - 1) * t["ring_step_ns"]
        traffic = 2 * (n - 1) / n * b
        eff = 1.0 if nominal else t["ring_eff"]
    bw = min(egress * eff, t["intra_bw"]) if g > 1 else egress * eff
    return t.get("coll_base_ns", 0) + lat * PLAT[tree][p] + traffic / (bw * PBW[tree][p]) * 1e9
bad, seen = 0, 0
for e in tr["traceEvents"]:
    a = e.get("args", {})
    if e.get("ph") != "X" or a.get("collective") != "allreduce":
        continue
    seen += 1
    b = a["bytes"]
    _, tree, p = min((time(b, x, q, 1), x, q) for x in (0, 1) for q in (0, 1, 2))
    want, got = time(b, tree, p, 0), round(e["dur"] * 1000)
    if abs(got - want) > 1:
        print("%d bytes over %d GPUs: %d ns; NCCL's choice (%s, %s) gives %.0f ns"
              % (b, n, got, ("ring", "tree")[tree], ("LL", "LL128", "Simple")[p], want)); bad += 1
sys.exit(1 if bad or not seen else 0)
PY
            done
        done
        echo "ok: $topo: DP 16 and 32 all-reduces at NCCL's choice and time"
    done
    ;;
attention)
    # flash attention's kernel time, forward and backward: FLOPs 4 b h s^2
    # d, half of them under a causal mask, backward 2.5 x the forward
    # (FlashAttention-2, Dao 2023, section 3: five matmuls against two), at
    # the roofline with the spec's attention efficiency curve, (F + half) /
    # (peak x eff_max), or its memory floor; attn_check SPEC TRACE FWD BWD:
    # every attention kernel of TRACE (4: 2 layers, forward and backward)
    # with the curves SPEC names FWD_max/FWD_half and BWD_...
    attn_check() {
        python3 - "$@" <<'PY'
import json, sys
g, tr, fwd, bwd_key = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
bhsd, s = 1 * 8 * 2048 * 128, 2048
bad, seen = 0, 0
for e in tr["traceEvents"]:
    if e.get("ph") != "X" or "stream" not in e.get("args", {}) or not e["name"].endswith(".attn"):
        continue
    bwd = ".bwd." in e["name"]
    flops = 4 * bhsd * s * 0.5 * (2.5 if bwd else 1.0)
    k = bwd_key if bwd else fwd
    t = (flops + g[k + "half"]) / (g["peak_flops"] * g[k + "max"])
    t = max(t, (8 if bwd else 4) * bhsd * 2 / (g["mem_bw"] * g["mem_eff"]))  # bf16 Q K V O (+ dO dQ dK dV)
    want, got = max(round(t * 1e9), g["kernel_min_ns"]), round(e["dur"] * 1000)
    seen += 1
    if abs(got - want) > 1:
        print("%s: %d ns, the FLOP count gives %d ns" % (e["name"], got, want)); bad += 1
sys.exit(1 if bad or seen != 4 else 0)
PY
    }
    [ -n "$tools" ] || fail "usage: predictions.sh attention GPU_DIR"
    # the shipped A100 spec: one curve for both directions
    "$LUMOSIM" synth $SHAPE --dp 1 --global-batch 1 -o "$tmp/a.h5" >/dev/null || fail "synth failed"
    "$LUMOSIM" sim --trace-out "$tmp/a.json" "$tmp/a.h5" >/dev/null || fail "sim failed"
    attn_check "$tools/a100.json" "$tmp/a.json" attn_eff_ attn_eff_ || fail "attention kernels off the FLOP count (above)"
    python3 - "$tools/a100.json" "$tmp/a.json" <<'PY' || fail "Adam off 30 bytes a parameter (above)"
import json, sys
g, tr = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# Adam, memory-bound: per layer 30 bytes a parameter (the fp32 gradient
# read; master weight and two moments read and written; the bf16 weight
# written: docs/synthesis.md) at the spec's achieved bandwidth
layer = 12 * 1024 * 1024 + 13 * 1024
bad, seen = 0, 0
for e in tr["traceEvents"]:
    if e.get("ph") != "X" or "stream" not in e.get("args", {}) or not e["name"].startswith("L0.opt."):
        continue
    want, got = round(30 * layer / (g["mem_bw"] * g["mem_eff"]) * 1e9), round(e["dur"] * 1000)
    seen += 1
    if abs(got - want) > 1:
        print("%s: %d ns, 30 bytes a parameter give %d ns" % (e["name"], got, want)); bad += 1
sys.exit(1 if bad or seen != 1 else 0)
PY
    # the H100 with --attention-kernel fa2 (torchtitan's SDPA): the
    # FlashAttention-2 curves fitted to the FlashAttention-3 paper's points,
    # read from the documented spec (data/gpu/h100.json), the backward on
    # its own curve
    "$LUMOSIM" synth $(echo "$SHAPE" | sed 's/--gpu a100/--gpu h100/') --dp 1 --global-batch 1 --attention-kernel fa2 \
        -o "$tmp/h.h5" >/dev/null || fail "synth --gpu h100 --attention-kernel fa2 failed"
    "$LUMOSIM" sim --trace-out "$tmp/h.json" "$tmp/h.h5" >/dev/null || fail "sim failed"
    attn_check "$tools/h100.json" "$tmp/h.json" attn_fa2_eff_ attn_fa2_bwd_eff_ ||
        fail "fa2 attention kernels off the FLOP count (above)"
    # with the distributed optimizer each of DP 4 ranks steps a quarter of
    # the parameters (Megatron-LM distrib_optimizer.md)
    "$LUMOSIM" synth $SHAPE --dp 4 --global-batch 4 --distributed-optimizer -o "$tmp/d.h5" >/dev/null || fail "synth failed"
    "$LUMOSIM" sim --trace-out "$tmp/d.json" "$tmp/d.h5" >/dev/null || fail "sim failed"
    python3 - "$tools/a100.json" "$tmp/d.json" <<'PY' || fail "--distributed-optimizer: Adam off a quarter of the parameters (above)"
import json, sys
g, tr = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = round(30 * (12 * 1024 * 1024 + 13 * 1024) / 4 / (g["mem_bw"] * g["mem_eff"]) * 1e9)
got = [round(e["dur"] * 1000) for e in tr["traceEvents"] if e.get("ph") == "X" and "stream" in e.get("args", {})
       and e["name"].startswith("L0.opt.")]
print("L0's Adam on the 4 GPUs: %s ns, a quarter of the layer gives %d ns" % (got, want))
sys.exit(0 if len(got) == 4 and all(abs(x - want) <= 1 for x in got) else 1)
PY
    echo "ok: 2 layers' flash attention forward and backward at the FLOP count's roofline (A100; H100 FlashAttention-2), Adam at 30 bytes a parameter"
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
