#!/bin/sh
# whatif_cli.sh MODE [EXAMPLE_TRACE]  (environment: LUMOSIM, JSON_CHECK)
#
#   consistency  GPT-3 15B (TP2 PP2, micro-batch 1, small global batches):
#                whatif(synth(A) -> B) simulated must match synth(B) simulated
#                within 1 % of the iteration time, for DP 2->4, DP 4->2,
#                DP 1->2 and 1->4 (buckets emitted; node counts as synth's),
#                layers 48->24, layers 24->48 and a topology change; the
#                record's node counts must equal the difference of the
#                stores' node counts as sim reports them
#   width        GPT-3 15B (PP2, DP2, micro-batch 1): TP 2->4, 4->2, 2->1,
#                1->2, 1->4 (all-reduces emitted; node counts as synth's),
#                TP4 DP2 -> TP2 DP4 (same 16 GPUs), hidden 6144->4096, FFN
#                12288->24576, each within 1 % of synth(B); the record names
#                the shapes and the new layout
#   real         the bundled Kineto trace: whatif with no transformation
#                predicts what the source predicts; --identify finds 40
#                layers from the kernel structure; --layers 20, 60 and 80
#                cut and copy those layers: the GPU's exposed compute grows
#                by the same amount per 20 layers (within 1 %), the record's
#                node counts equal the stores' difference, and the new
#                store's structure shows the new count; --layers 40 changes
#                nothing; --pp 2 and 4 cut the 40 layers into stages: the
#                stages' exposed compute adds up to the trace's, the record
#                matches the stores, each stage shows 40/P layers, more
#                stages take longer (one micro-batch), --layers 80 --pp 4
#                doubles a middle stage's compute; --micro-batches copies
#                the forward pass (twice as long without stages, all the
#                compute there, faster with more stages); what --pp cannot do on a
#                trace is refused; --hidden without --model names the
#                missing shape
#   real_annotated  the bundled trace annotated with layer[i]
#                (tests/data/tools/annotate_layers.py; skipped, 77, without
#                python3): layers from the annotations cut as the kernel
#                structure's do
#   megatron     the eight shared megatron_tp8_a100 ranks (skipped, 77,
#                without them): --identify's layers and kernels per layer
#                against a python3 count over the trace JSON; --tp 4 --dp 2
#                and --tp 2 --dp 4 on the same 8 GPUs run; TP8 -> TP4 DP2 ->
#                TP8 within 1 % of the traced prediction; --trace-layers;
#                --pp 2 (16 GPUs) keeps the job's compute, --tp 4 --pp 2
#                holds half of --tp 4 --dp 2's, PP 2 is slower than PP 1;
#                a training trace's repeating gradient buckets are not
#                taken for layers
#   pipeline     GPT-3 15B (TP2, DP2, micro-batch 1): PP 2->4, 4->2, 2->1,
#                1->4, 1F1B <-> interleaved:2, micro-batches 4 <-> 8, DP 2->4
#                at a fixed global batch (--micro-batches 2), PP + TP + layers
#                together, each within 1 % of synth(B); the record names the
#                change and its node counts equal the stores' difference
#   bad          transformations that cannot apply (--layers on a trace with
#                no layer structure among them): one error line, exit 1
#                (2 for usage), empty stdout, nothing written
set -u
mode=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "whatif_cli $mode: $*"; exit 1; }
# GPT-3 15B at TP 2 x PP 2 needs about 81 GB per GPU (weights, fp32
# gradients, Adam state, activations), a little more than an H100 has: the
# what-if checks are about structure, so the memory check is off
M="--model gpt3-15b --tp 2 --pp 2 --micro-batch 1 --no-memory-check"
T=$(dirname "$0")/../../data/topology/example_4gpu_eth100.json

pred() { # the job's predicted iteration time, ns
    "$LUMOSIM" sim --json "$1" >"$tmp/p.json" || fail "sim $1 failed"
    "$JSON_CHECK" "$tmp/p.json" "job.predicted_ns > 0" >/dev/null || fail "no predicted time for $1"
    tr -d ' \n' <"$tmp/p.json" | sed 's/.*"job":{[^}]*"predicted_ns":\([0-9]*\).*/\1/'
}
nodes() { # total nodes of a store, from sim's table
    "$LUMOSIM" sim "$1" | awk '$1 == "graph" { s += $2 } END { print s }'
}
count() { # count RECORD TRANSFORMATION FIELD: the sum over node kinds
    tr -d ' \n' <"$1" | sed 's/{"name":/\n/g' | grep "^\"$2\"" |
        sed "s/.*\"$3\":{\([^}]*\)}.*/\1/" | tr ',' '\n' | awk -F: '{ s += $2 } END { print s + 0 }'
}
c() { # rank 0's predicted exposed compute of a store, us (sim's table)
    "$LUMOSIM" sim "$1" | awk '$1 == "exposed" && $2 == "compute" { print $(NF - 1) * 1000; exit }'
}
cr() { # cr STORE RANK: that rank's predicted exposed compute, us
    "$LUMOSIM" sim "$1" | awk -v r="$2" '$1 == "exposed" && $2 == "compute" && i++ == r { print $(NF - 1) * 1000; exit }'
}
cbusy() { # the predicted compute of every rank together, exposed or overlapped, us
    "$LUMOSIM" sim "$1" | awk '$1 == "exposed" && $2 == "compute" || $1 == "overlapped" { s += $(NF - 1) * 1000 }
        END { printf "%.3f\n", s }'
}
csum() { # the predicted exposed compute of every rank together, us
    "$LUMOSIM" sim "$1" | awk '$1 == "exposed" && $2 == "compute" { s += $(NF - 1) * 1000 } END { printf "%.3f\n", s }'
}
same() { # same NAME GOT WANT: within 0.01 % (sums of per-rank figures printed to the microsecond)
    awk -v n="$1" -v g="$2" -v w="$3" 'BEGIN { e = (g - w) / w; if (e < 0) e = -e;
        printf "%-28s %.3f us, expected %.3f us\n", n, g, w; exit !(e <= 0.0001) }' || fail "$1: $2 us, expected $3 us"
}
refused() { # refused NEEDLE ARGS...: one error line naming NEEDLE, exit 1, nothing written
    needle=$1
    shift
    "$LUMOSIM" whatif --force "$@" -o "$tmp/bad.h5" >"$tmp/out" 2>"$tmp/err" && fail "accepted: $*"
    [ $? -eq 1 ] || fail "not exit 1: $*"
    [ -s "$tmp/out" ] && fail "stdout not empty: $*"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one error line: $(cat "$tmp/err")"
    grep -q -- "$needle" "$tmp/err" || fail "'$needle' not in: $(cat "$tmp/err")"
    [ -e "$tmp/bad.h5" ] && fail "a store was written: $*"
    return 0
}
within() { # within NAME GOT WANT: |got - want| <= 1 % of want
    awk -v n="$1" -v g="$2" -v w="$3" 'BEGIN { e = (g - w) / w; if (e < 0) e = -e;
        printf "%-16s whatif %d ns, synth %d ns, error %.4f %%\n", n, g, w, 100 * e; exit !(e <= 0.01) }' ||
        fail "$1: whatif $2 ns vs synth $3 ns: more than 1 % apart"
}

case $mode in
consistency)
    "$LUMOSIM" synth $M --dp 2 --global-batch 8 -o "$tmp/dp2.h5" || fail "synth dp2"
    "$LUMOSIM" synth $M --dp 4 --global-batch 16 -o "$tmp/dp4.h5" || fail "synth dp4"
    "$LUMOSIM" synth $M --dp 2 --global-batch 8 --layers 24 -o "$tmp/l24.h5" || fail "synth l24"
    "$LUMOSIM" synth $M --dp 2 --global-batch 8 --topology "$T" -o "$tmp/topo.h5" || fail "synth topo"
    "$LUMOSIM" whatif --force "$tmp/dp2.h5" --dp 4 -o "$tmp/w_dp4.h5" >"$tmp/rec.json" || fail "whatif --dp 4"
    # the record is kept in the store: lumosim info prints it as written
    "$LUMOSIM" info "$tmp/w_dp4.h5" | sed -n 's/^  what-if record: //p' >"$tmp/rec_info.json"
    cmp -s "$tmp/rec.json" "$tmp/rec_info.json" || fail "the record printed and the one kept in the store differ"
    "$JSON_CHECK" "$tmp/rec.json" "gpus_in == 8" "gpus_out == 16" "layout_out.dp == 4" \
        "transformations.1.name == dp" "transformations.1.gpus_added == 8" \
        "structure.layout.tp == 2" "structure.layout.pp == 2" "structure.layout.dp == 2" \
        "structure.layers.layers == 48" >/dev/null || fail "record: $(cat "$tmp/rec.json")"
    n0=$(nodes "$tmp/dp2.h5")
    n1=$(nodes "$tmp/w_dp4.h5")
    added=$(count "$tmp/rec.json" dp nodes_added)
    [ "$((n1 - n0))" -eq "$added" ] || fail "dp record adds $added nodes, the stores differ by $((n1 - n0))"
    within "dp 2->4" "$(pred "$tmp/w_dp4.h5")" "$(pred "$tmp/dp4.h5")"
    "$LUMOSIM" whatif --force "$tmp/dp4.h5" --dp 2 -o "$tmp/w_dp2.h5" >/dev/null || fail "whatif --dp 2"
    within "dp 4->2" "$(pred "$tmp/w_dp2.h5")" "$(pred "$tmp/dp2.h5")"
    "$LUMOSIM" whatif --force "$tmp/dp2.h5" --layers 24 -o "$tmp/w_l24.h5" >"$tmp/rec.json" || fail "whatif --layers 24"
    n1=$(nodes "$tmp/w_l24.h5")
    removed=$(count "$tmp/rec.json" layers nodes_removed)
    [ "$((n0 - n1))" -eq "$removed" ] || fail "layers record removes $removed nodes, the stores differ by $((n0 - n1))"
    [ "$n1" -eq "$(nodes "$tmp/l24.h5")" ] || fail "48->24 layers has $n1 nodes, synth of 24 layers $(nodes "$tmp/l24.h5")"
    within "layers 48->24" "$(pred "$tmp/w_l24.h5")" "$(pred "$tmp/l24.h5")"
    "$LUMOSIM" whatif --force "$tmp/l24.h5" --layers 48 -o "$tmp/w_l48.h5" >/dev/null || fail "whatif --layers 48"
    within "layers 24->48" "$(pred "$tmp/w_l48.h5")" "$(pred "$tmp/dp2.h5")"
    "$LUMOSIM" whatif --force "$tmp/dp2.h5" --topology "$T" -o "$tmp/w_topo.h5" >/dev/null || fail "whatif --topology"
    within "topology" "$(pred "$tmp/w_topo.h5")" "$(pred "$tmp/topo.h5")"
    # the what-if changes something: the slower network is slower
    [ "$(pred "$tmp/w_topo.h5")" -gt "$(pred "$tmp/dp2.h5")" ] || fail "the slower network is not slower"
    # from DP 1 (no gradient all-reduce to copy): the buckets are emitted
    # for the new replicas, node for node what synthesis makes
    "$LUMOSIM" synth $M --dp 1 --global-batch 4 -o "$tmp/dp1.h5" || fail "synth dp1"
    "$LUMOSIM" whatif --force "$tmp/dp1.h5" --dp 2 -o "$tmp/w1_dp2.h5" >"$tmp/rec.json" || fail "whatif --dp 2 from DP 1"
    "$JSON_CHECK" "$tmp/rec.json" "gpus_in == 4" "gpus_out == 8" "layout_out.dp == 2" \
        "transformations.1.name == pipeline" "transformations.1.collectives_retimed.dp > 0" \
        "transformations.2.name == dp" >/dev/null || fail "record from DP 1: $(cat "$tmp/rec.json")"
    [ "$(nodes "$tmp/w1_dp2.h5")" -eq "$n0" ] || fail "DP 1 -> 2 has $(nodes "$tmp/w1_dp2.h5") nodes, synth of DP 2 $n0"
    within "dp 1->2" "$(pred "$tmp/w1_dp2.h5")" "$(pred "$tmp/dp2.h5")"
    "$LUMOSIM" whatif --force "$tmp/dp1.h5" --dp 4 -o "$tmp/w1_dp4.h5" >/dev/null || fail "whatif --dp 4 from DP 1"
    within "dp 1->4" "$(pred "$tmp/w1_dp4.h5")" "$(pred "$tmp/dp4.h5")"
    [ "$(pred "$tmp/w1_dp4.h5")" -gt "$(pred "$tmp/dp1.h5")" ] || fail "the gradient all-reduces of DP 4 cost nothing"
    echo "ok: what-if matches synthesis"
    ;;
width)
    W="--model gpt3-15b --pp 2 --micro-batch 1 --no-memory-check"
    "$LUMOSIM" synth $W --tp 2 --dp 2 --global-batch 8 -o "$tmp/tp2.h5" || fail "synth tp2"
    "$LUMOSIM" synth $W --tp 4 --dp 2 --global-batch 8 -o "$tmp/tp4.h5" || fail "synth tp4"
    "$LUMOSIM" synth $W --tp 1 --dp 2 --global-batch 8 -o "$tmp/tp1.h5" || fail "synth tp1"
    "$LUMOSIM" synth $W --tp 2 --dp 4 --global-batch 16 -o "$tmp/tp2dp4.h5" || fail "synth tp2 dp4"
    "$LUMOSIM" synth $W --tp 2 --dp 2 --global-batch 8 --hidden 4096 -o "$tmp/h4k.h5" || fail "synth hidden"
    "$LUMOSIM" synth $W --tp 2 --dp 2 --global-batch 8 --ffn 24576 -o "$tmp/f24k.h5" || fail "synth ffn"
    "$LUMOSIM" whatif --force "$tmp/tp2.h5" --tp 4 -o "$tmp/w.h5" >"$tmp/rec.json" || fail "whatif --tp 4"
    "$JSON_CHECK" "$tmp/rec.json" "gpus_in == 8" "gpus_out == 16" "layout_out.tp == 4" "layout_out.dp == 2" \
        "transformations.1.name == shape" "transformations.1.args.from.tp == 2" "transformations.1.args.to.tp == 4" \
        "transformations.1.args.from.micro_batch == 1" "transformations.2.name == tp" \
        "transformations.2.gpus_added == 8" >/dev/null || fail "record: $(cat "$tmp/rec.json")"
    t4=$(pred "$tmp/tp4.h5")
    within "tp 2->4" "$(pred "$tmp/w.h5")" "$t4"
    [ "$t4" -lt "$(pred "$tmp/tp2.h5")" ] || fail "TP 4 is not faster than TP 2"
    "$LUMOSIM" whatif --force "$tmp/tp4.h5" --tp 2 -o "$tmp/w.h5" >/dev/null || fail "whatif --tp 2"
    within "tp 4->2" "$(pred "$tmp/w.h5")" "$(pred "$tmp/tp2.h5")"
    "$LUMOSIM" whatif --force "$tmp/tp2.h5" --tp 1 -o "$tmp/w.h5" >"$tmp/rec.json" || fail "whatif --tp 1"
    [ "$(nodes "$tmp/w.h5")" -eq "$(nodes "$tmp/tp1.h5")" ] || fail "TP 1 has $(nodes "$tmp/w.h5") nodes, synth $(nodes "$tmp/tp1.h5")"
    within "tp 2->1" "$(pred "$tmp/w.h5")" "$(pred "$tmp/tp1.h5")"
    # from TP 1: the TP all-reduces emitted where synthesis places them
    "$LUMOSIM" whatif --force "$tmp/tp1.h5" --tp 2 -o "$tmp/w.h5" >"$tmp/rec.json" || fail "whatif --tp 2 from TP 1"
    "$JSON_CHECK" "$tmp/rec.json" "layout_out.tp == 2" "transformations.2.name == pipeline" \
        "transformations.2.collectives_retimed.tp > 0" >/dev/null || fail "record from TP 1: $(cat "$tmp/rec.json")"
    [ "$(nodes "$tmp/w.h5")" -eq "$(nodes "$tmp/tp2.h5")" ] || fail "TP 1 -> 2 has $(nodes "$tmp/w.h5") nodes, synth $(nodes "$tmp/tp2.h5")"
    within "tp 1->2" "$(pred "$tmp/w.h5")" "$(pred "$tmp/tp2.h5")"
    "$LUMOSIM" whatif --force "$tmp/tp1.h5" --tp 4 -o "$tmp/w.h5" >/dev/null || fail "whatif --tp 4 from TP 1"
    within "tp 1->4" "$(pred "$tmp/w.h5")" "$t4"
    "$LUMOSIM" whatif --force "$tmp/tp4.h5" --tp 2 --dp 4 -o "$tmp/w.h5" >/dev/null || fail "whatif --tp 2 --dp 4"
    within "tp4dp2->tp2dp4" "$(pred "$tmp/w.h5")" "$(pred "$tmp/tp2dp4.h5")"
    "$LUMOSIM" whatif --force "$tmp/tp2.h5" --hidden 4096 -o "$tmp/w.h5" >"$tmp/rec.json" || fail "whatif --hidden"
    "$JSON_CHECK" "$tmp/rec.json" "transformations.1.args.to.hidden == 4096" "gpus_out == 8" >/dev/null ||
        fail "record: $(cat "$tmp/rec.json")"
    within "hidden ->4096" "$(pred "$tmp/w.h5")" "$(pred "$tmp/h4k.h5")"
    "$LUMOSIM" whatif --force "$tmp/tp2.h5" --ffn 24576 -o "$tmp/w.h5" >/dev/null || fail "whatif --ffn"
    within "ffn ->24576" "$(pred "$tmp/w.h5")" "$(pred "$tmp/f24k.h5")"
    # a synth store whose shape differs from its model's name: refused
    "$LUMOSIM" whatif --force "$tmp/h4k.h5" --hidden 6144 -o "$tmp/w2.h5" >/dev/null 2>"$tmp/err" && fail "wrong shape accepted"
    grep -q "give --model" "$tmp/err" || fail "not named: $(cat "$tmp/err")"
    printf '{"layers":48,"hidden":4096,"ffn":12288,"heads":48}\n' >"$tmp/m.json"
    "$LUMOSIM" whatif --force "$tmp/h4k.h5" --model "$tmp/m.json" --hidden 6144 -o "$tmp/w.h5" >/dev/null || fail "--model"
    within "hidden ->6144" "$(pred "$tmp/w.h5")" "$(pred "$tmp/tp2.h5")"
    echo "ok: width and TP match synthesis"
    ;;
real)
    ex=$2
    "$LUMOSIM" build "$ex" -o "$tmp/ex.h5" >/dev/null 2>&1 || fail "build failed"
    "$LUMOSIM" whatif --force "$tmp/ex.h5" --identify >"$tmp/id.json" || fail "identify failed"
    # no tags: layers and roles from the repeating kernel structure (40 layers)
    "$JSON_CHECK" "$tmp/id.json" "gpus == 1" "layers.source == kernel structure" "layers.layers == 40" >/dev/null ||
        fail "identify: $(cat "$tmp/id.json")"
    "$LUMOSIM" whatif --force "$tmp/ex.h5" -o "$tmp/same.h5" >/dev/null || fail "whatif failed"
    a=$(pred "$tmp/ex.h5")
    b=$(pred "$tmp/same.h5")
    [ "$a" -eq "$b" ] || fail "no transformation, yet the prediction moved from $a to $b ns"
    "$LUMOSIM" sim --json "$tmp/same.h5" >"$tmp/s.json" || fail "sim failed"
    "$JSON_CHECK" "$tmp/s.json" "job.actual_ns == null" >/dev/null || fail "a what-if has actual times"
    "$LUMOSIM" whatif --force "$tmp/ex.h5" --slow-gpu 0:2 -o "$tmp/slow.h5" >/dev/null || fail "slow-gpu failed"
    [ "$(pred "$tmp/slow.h5")" -gt "$a" ] || fail "a GPU twice as slow is not slower"
    # --layers on the trace: the layers recovered from the kernel structure
    # are cut (20) or copied (60, 80) with their launches and CPU work
    n0=$(nodes "$tmp/ex.h5")
    for L in 20 60 80; do
        "$LUMOSIM" whatif --force "$tmp/ex.h5" --layers $L -o "$tmp/l$L.h5" >"$tmp/rec$L.json" || fail "--layers $L on the trace"
        "$JSON_CHECK" "$tmp/rec$L.json" "transformations.1.name == layers" "transformations.1.args.from == 40" \
            "transformations.1.args.to == $L" >/dev/null || fail "record: $(cat "$tmp/rec$L.json")"
        added=$(count "$tmp/rec$L.json" layers nodes_added)
        removed=$(count "$tmp/rec$L.json" layers nodes_removed)
        [ "$(($(nodes "$tmp/l$L.h5") - n0))" -eq "$((added - removed))" ] ||
            fail "--layers $L record: +$added -$removed nodes, the stores differ by $(($(nodes "$tmp/l$L.h5") - n0))"
        "$LUMOSIM" whatif --force "$tmp/l$L.h5" --identify >"$tmp/idl.json" || fail "identify after --layers $L"
        "$JSON_CHECK" "$tmp/idl.json" "layers.source == kernel structure" "layers.layers == $L" \
            "layers.kernels_per_layer == 14" >/dev/null || fail "after --layers $L: $(cat "$tmp/idl.json")"
    done
    c20=$(c "$tmp/l20.h5") c40=$(c "$tmp/ex.h5") c60=$(c "$tmp/l60.h5") c80=$(c "$tmp/l80.h5")
    awk -v a="$c20" -v b="$c40" -v c="$c60" -v d="$c80" 'BEGIN { s = (d - a) / 3;
        printf "exposed compute 20/40/60/80 layers: %.0f %.0f %.0f %.0f us, %.1f us per 20 layers\n", a, b, c, d, s;
        for (i = 0; i < 3; i++) { x = (i == 0 ? b - a : i == 1 ? c - b : d - c) - s; if (x < 0) x = -x;
            if (s <= 0 || x > 0.01 * s) exit 1 } }' || fail "exposed compute not linear in layers: $c20 $c40 $c60 $c80 us"
    [ "$(pred "$tmp/l20.h5")" -lt "$a" ] && [ "$(pred "$tmp/l80.h5")" -gt "$a" ] || fail "the iteration does not follow the layers"
    "$LUMOSIM" whatif --force "$tmp/ex.h5" --layers 40 -o "$tmp/l40.h5" >/dev/null || fail "--layers 40"
    [ "$(pred "$tmp/l40.h5")" -eq "$a" ] || fail "--layers 40 (the trace's own) moved the prediction"
    # --pp on the trace: the 40 layers cut into stages with a transfer at
    # each boundary; every kernel lands on exactly one stage with its own
    # duration, so the stages' exposed compute adds up to the trace's (one
    # forward micro-batch: nothing overlaps across stages)
    n40=$(nodes "$tmp/ex.h5")
    for P in 2 4; do
        "$LUMOSIM" whatif --force "$tmp/ex.h5" --pp $P -o "$tmp/p$P.h5" >"$tmp/recp.json" || fail "--pp $P on the trace"
        "$JSON_CHECK" "$tmp/recp.json" "gpus_out == $P" "layout_out.pp == $P" "transformations.1.name == pipeline" \
            "transformations.1.args.pp.from == 1" "transformations.1.args.pp.to == $P" \
            "transformations.1.collectives_retimed.pp == $((2 * (P - 1)))" \
            "transformations.1.nodes_added.kernel == $((2 * (P - 1)))" "transformations.1.nodes_removed.kernel == 0" \
            >/dev/null || fail "--pp $P record: $(cat "$tmp/recp.json")"
        added=$(count "$tmp/recp.json" pipeline nodes_added)
        removed=$(count "$tmp/recp.json" pipeline nodes_removed)
        [ "$(($(nodes "$tmp/p$P.h5") - n40))" -eq "$((added - removed))" ] ||
            fail "--pp $P record: +$added -$removed nodes, the stores differ by $(($(nodes "$tmp/p$P.h5") - n40))"
        "$LUMOSIM" whatif --force "$tmp/p$P.h5" --identify >"$tmp/idp.json" || fail "identify after --pp $P"
        "$JSON_CHECK" "$tmp/idp.json" "layout.pp == $P" "layers.layers == $((40 / P))" "collectives.pp == $((2 * (P - 1)))" \
            >/dev/null || fail "after --pp $P: $(cat "$tmp/idp.json")"
        same "--pp $P: compute of all stages" "$(csum "$tmp/p$P.h5")" "$(csum "$tmp/ex.h5")"
    done
    # one micro-batch: stage after stage, so more stages take longer
    p1=$a p2=$(pred "$tmp/p2.h5") p4=$(pred "$tmp/p4.h5")
    [ "$p2" -gt "$p1" ] && [ "$p4" -gt "$p2" ] || fail "PP 1/2/4: $p1 $p2 $p4 ns, not increasing"
    # layers and stages together: 80 layers on 4 stages put 20 layers on
    # each middle stage, twice the 10 of --pp 4
    "$LUMOSIM" whatif --force "$tmp/ex.h5" --layers 80 --pp 4 -o "$tmp/l80p4.h5" >/dev/null || fail "--layers 80 --pp 4"
    same "stage 1, 80 layers / 4 stages" "$(cr "$tmp/l80p4.h5" 1)" "$(awk -v x="$(cr "$tmp/p4.h5" 1)" 'BEGIN { print 2 * x }')"
    echo "trace PP 1/2/4: $p1 $p2 $p4 ns"
    refused "the trace's 40 layers are not divisible by PP x V = 3 x 1" "$tmp/ex.h5" --pp 3
    refused "more pipeline stages than the trace's 40 layers" "$tmp/ex.h5" --pp 64
    refused "with --micro-batches 4 on a trace" "$tmp/ex.h5" --pp 2 --schedule interleaved:2 --micro-batches 4
    # micro-batches: the forward pass copied once per micro-batch on every
    # stage. Without stages they run one after another (the host-bound
    # trace takes exactly twice as long); with stages they overlap, so more
    # stages now take less time, and every copy's compute is there
    "$LUMOSIM" whatif --force "$tmp/ex.h5" --micro-batches 2 -o "$tmp/m2.h5" >/dev/null || fail "--micro-batches 2 on the trace"
    same "2 micro-batches, no stages" "$(pred "$tmp/m2.h5")" "$((2 * a))"
    for P in 1 2 4; do
        "$LUMOSIM" whatif --force "$tmp/ex.h5" --pp $P --micro-batches 4 -o "$tmp/p${P}m4.h5" >"$tmp/recm.json" ||
            fail "--pp $P --micro-batches 4"
        same "--pp $P, 4 micro-batches: compute" "$(cbusy "$tmp/p${P}m4.h5")" "$(awk -v x="$(cbusy "$tmp/ex.h5")" 'BEGIN { printf "%.3f", 4 * x }')"
    done
    "$JSON_CHECK" "$tmp/recm.json" "transformations.1.args.micro_batches.from == 1" \
        "transformations.1.args.micro_batches.to == 4" >/dev/null || fail "micro-batches record: $(cat "$tmp/recm.json")"
    m1=$(pred "$tmp/p1m4.h5") m2=$(pred "$tmp/p2m4.h5") m4=$(pred "$tmp/p4m4.h5")
    [ "$m2" -lt "$m1" ] && [ "$m4" -lt "$m2" ] || fail "4 micro-batches on PP 1/2/4: $m1 $m2 $m4 ns, not pipelined"
    echo "trace, 4 micro-batches, PP 1/2/4: $m1 $m2 $m4 ns"
    refused "1 micro-batches per pipeline are not divisible by PP = 2" "$tmp/ex.h5" --pp 2 --schedule interleaved:2
    refused "already has a pipeline (PP = 2)" "$tmp/p2.h5" --pp 4
    # from TP 1 (the bundled rank is taken as a one-GPU job): nothing to split
    refused "tensor-parallel width 1" "$tmp/ex.h5" --tp 2
    # the same trace annotated with layer[i]: mode real_annotated (needs python3)
    "$LUMOSIM" whatif --force "$tmp/ex.h5" --hidden 2048 -o "$tmp/l.h5" >"$tmp/out" 2>"$tmp/err" && fail "--hidden on a trace succeeded"
    grep -q "give the source's shape with --model" "$tmp/err" || fail "not named: $(cat "$tmp/err")"
    [ -e "$tmp/l.h5" ] && fail "a store was written"
    echo "ok: real trace"
    ;;
real_annotated)
    ex=$2
    command -v python3 >/dev/null 2>&1 ||
        { echo "SKIP: python3 missing: tests/data/tools/annotate_layers.py cannot annotate the trace"; exit 77; }
    "$LUMOSIM" build "$ex" -o "$tmp/ex.h5" >/dev/null 2>&1 || fail "build failed"
    a=$(pred "$tmp/ex.h5")
    for L in 20 80; do
        "$LUMOSIM" whatif --force "$tmp/ex.h5" --layers $L -o "$tmp/l$L.h5" >/dev/null || fail "--layers $L on the trace"
    done
    "$LUMOSIM" whatif --force "$tmp/ex.h5" --pp 4 -o "$tmp/p4.h5" >/dev/null || fail "--pp 4 on the trace"
    p4=$(pred "$tmp/p4.h5")
    # the same trace with record_function("layer[i]") annotations (added by
    # tests/data/tools/annotate_layers.py from the trace's own LayerNorm
    # launches): the layers come from the annotations, and cutting them
    # gives what the kernel structure gives -- two independent methods
    python3 "$(dirname "$0")/../data/tools/annotate_layers.py" "$ex" "$tmp/ann.json.gz" >/dev/null ||
        fail "annotate_layers.py failed"
    "$LUMOSIM" build "$tmp/ann.json.gz" -o "$tmp/ann.h5" >/dev/null 2>&1 || fail "build the annotated trace"
    [ "$(pred "$tmp/ann.h5")" -eq "$a" ] || fail "annotations moved the replay"
    "$LUMOSIM" whatif --force "$tmp/ann.h5" --identify >"$tmp/ida.json" || fail "identify the annotated trace"
    "$JSON_CHECK" "$tmp/ida.json" "layers.source == annotations" "layers.layers == 40" \
        "layers.kernel_structure_layers == 40" "layers.forward_only == true" >/dev/null ||
        fail "annotated: $(cat "$tmp/ida.json")"
    for L in 20 80; do
        "$LUMOSIM" whatif --force "$tmp/ann.h5" --layers $L -o "$tmp/al$L.h5" >/dev/null || fail "--layers $L from annotations"
        same "annotations, --layers $L" "$(csum "$tmp/al$L.h5")" "$(csum "$tmp/l$L.h5")"
    done
    "$LUMOSIM" whatif --force "$tmp/ann.h5" --pp 4 -o "$tmp/ap4.h5" >/dev/null || fail "--pp 4 from annotations"
    for r in 0 1 2 3; do same "annotations, --pp 4, stage $r" "$(cr "$tmp/ap4.h5" $r)" "$(cr "$tmp/p4.h5" $r)"; done
    within "annotations --pp 4" "$(pred "$tmp/ap4.h5")" "$p4"
    echo "ok: annotated trace: layers from the annotations cut as the kernel structure's"
    ;;
pipeline)
    P="--model gpt3-15b --micro-batch 1 --no-memory-check" # --tp and --dp per job: an option given twice is an error
    for c in "pp1 --tp 2 --dp 2 --pp 1 --global-batch 8" "pp2 --tp 2 --dp 2 --pp 2 --global-batch 8" \
        "pp4 --tp 2 --dp 2 --pp 4 --global-batch 8" "i2 --tp 2 --dp 2 --pp 2 --global-batch 8 --schedule interleaved:2" \
        "m8 --tp 2 --dp 2 --pp 2 --global-batch 16" "pp4tp4l24 --dp 2 --pp 4 --global-batch 8 --tp 4 --layers 24"; do
        set -- $c
        n=$1
        shift
        "$LUMOSIM" synth $P "$@" -o "$tmp/$n.h5" >/dev/null || fail "synth $n"
    done
    "$LUMOSIM" synth $P --tp 2 --pp 2 --dp 4 --global-batch 8 -o "$tmp/dp4m2.h5" >/dev/null || fail "synth dp4m2"
    "$LUMOSIM" whatif --force "$tmp/pp2.h5" --pp 4 -o "$tmp/w.h5" >"$tmp/rec.json" || fail "whatif --pp 4"
    "$JSON_CHECK" "$tmp/rec.json" "gpus_in == 8" "gpus_out == 16" "layout_out.pp == 4" \
        "transformations.1.name == pipeline" "transformations.1.args.pp.from == 2" "transformations.1.args.pp.to == 4" \
        "transformations.1.args.micro_batches.to == 4" "transformations.1.gpus_added == 8" \
        "transformations.1.collectives_retimed.pp > 0" >/dev/null || fail "record: $(cat "$tmp/rec.json")"
    n0=$(nodes "$tmp/pp2.h5")
    n1=$(nodes "$tmp/w.h5")
    added=$(count "$tmp/rec.json" pipeline nodes_added)
    removed=$(count "$tmp/rec.json" pipeline nodes_removed)
    [ "$((n1 - n0))" -eq "$((added - removed))" ] ||
        fail "pipeline record: +$added -$removed nodes, the stores differ by $((n1 - n0))"
    [ "$n1" -eq "$(nodes "$tmp/pp4.h5")" ] || fail "PP 4 has $n1 nodes, synth of PP 4 $(nodes "$tmp/pp4.h5")"
    # the new stages' gradient buckets carry what synthesis's do: GPU 0's
    # data-parallel all-reduces sum to its stage's fp32 gradients (8 layers:
    # the same buckets' rule, a smaller trace)
    for pp in 2 4; do
        "$LUMOSIM" synth $P --tp 2 --dp 2 --pp $pp --global-batch 8 --layers 8 -o "$tmp/l8pp$pp.h5" >/dev/null ||
            fail "synth --layers 8 --pp $pp"
    done
    "$LUMOSIM" whatif "$tmp/l8pp2.h5" --pp 4 -o "$tmp/l8w.h5" >/dev/null || fail "whatif --pp 4 (8 layers)"
    "$LUMOSIM" sim --trace-out "$tmp/w.trace.json" "$tmp/l8w.h5" >/dev/null || fail "sim of the PP 4 what-if"
    "$LUMOSIM" sim --trace-out "$tmp/pp4.trace.json" "$tmp/l8pp4.h5" >/dev/null || fail "sim of PP 4"
    python3 - "$tmp/w.trace.json" "$tmp/pp4.trace.json" <<'PY' || fail "the PP 4 what-if's gradient buckets differ from synthesis's"
import json, sys
def dp_bytes(path):
    tr = json.load(open(path))
    return sum(e["args"]["bytes"] for e in tr["traceEvents"] if e.get("ph") == "X" and e["pid"] < 1000000
               and e.get("args", {}).get("collective") == "allreduce" and e["args"].get("device", 0) == 0
               and "dp_allreduce" in e["name"])
w, s = dp_bytes(sys.argv[1]), dp_bytes(sys.argv[2])
print("GPU 0's gradient all-reduces: %d bytes in the what-if, %d synthesized" % (w, s))
sys.exit(0 if w == s and s > 0 else 1)
PY
    p4=$(pred "$tmp/pp4.h5")
    within "pp 2->4" "$(pred "$tmp/w.h5")" "$p4"
    [ "$p4" -lt "$(pred "$tmp/pp2.h5")" ] || fail "PP 4 is not faster than PP 2"
    "$LUMOSIM" whatif --force "$tmp/pp4.h5" --pp 2 -o "$tmp/w.h5" >/dev/null || fail "whatif --pp 2"
    within "pp 4->2" "$(pred "$tmp/w.h5")" "$(pred "$tmp/pp2.h5")"
    "$LUMOSIM" whatif --force "$tmp/pp2.h5" --pp 1 -o "$tmp/w.h5" >"$tmp/rec.json" || fail "whatif --pp 1"
    "$JSON_CHECK" "$tmp/rec.json" "gpus_out == 4" "transformations.1.gpus_removed == 4" >/dev/null ||
        fail "record: $(cat "$tmp/rec.json")"
    within "pp 2->1" "$(pred "$tmp/w.h5")" "$(pred "$tmp/pp1.h5")"
    "$LUMOSIM" whatif --force "$tmp/pp1.h5" --pp 4 -o "$tmp/w.h5" >/dev/null || fail "whatif --pp 4 from PP 1"
    within "pp 1->4" "$(pred "$tmp/w.h5")" "$p4"
    "$LUMOSIM" whatif --force "$tmp/pp2.h5" --schedule interleaved:2 -o "$tmp/w.h5" >"$tmp/rec.json" || fail "whatif interleaved"
    "$JSON_CHECK" "$tmp/rec.json" "transformations.1.args.schedule.from == 1f1b" \
        "transformations.1.args.schedule.to == interleaved:2" >/dev/null || fail "record: $(cat "$tmp/rec.json")"
    i2=$(pred "$tmp/i2.h5")
    within "1f1b->interleaved" "$(pred "$tmp/w.h5")" "$i2"
    [ "$i2" -lt "$(pred "$tmp/pp2.h5")" ] || fail "interleaved is not faster than 1F1B"
    "$LUMOSIM" whatif --force "$tmp/i2.h5" --schedule 1f1b -o "$tmp/w.h5" >/dev/null || fail "whatif 1f1b"
    within "interleaved->1f1b" "$(pred "$tmp/w.h5")" "$(pred "$tmp/pp2.h5")"
    "$LUMOSIM" whatif --force "$tmp/pp2.h5" --micro-batches 8 -o "$tmp/w.h5" >/dev/null || fail "whatif --micro-batches 8"
    within "m 4->8" "$(pred "$tmp/w.h5")" "$(pred "$tmp/m8.h5")"
    "$LUMOSIM" whatif --force "$tmp/m8.h5" --micro-batches 4 -o "$tmp/w.h5" >/dev/null || fail "whatif --micro-batches 4"
    within "m 8->4" "$(pred "$tmp/w.h5")" "$(pred "$tmp/pp2.h5")"
    "$LUMOSIM" whatif --force "$tmp/pp2.h5" --dp 4 --micro-batches 2 -o "$tmp/w.h5" >/dev/null || fail "whatif fixed batch"
    within "dp 2->4 gb 8" "$(pred "$tmp/w.h5")" "$(pred "$tmp/dp4m2.h5")"
    "$LUMOSIM" whatif --force "$tmp/pp2.h5" --pp 4 --tp 4 --layers 24 -o "$tmp/w.h5" >/dev/null || fail "whatif pp+tp+layers"
    within "pp+tp+layers" "$(pred "$tmp/w.h5")" "$(pred "$tmp/pp4tp4l24.h5")"
    echo "ok: pipeline changes match synthesis"
    ;;
megatron)
    S=${2:-}
    [ -n "$S" ] && [ -f "$S/megatron_tp8_a100/rank0.json.gz" ] || { echo "shared traces missing: skipped"; exit 77; }
    command -v python3 >/dev/null || { echo "python3 missing: skipped"; exit 77; }
    MJ=$(dirname "$0")/../data/models/megatron_tp8_a100.json
    # independent counts from the trace JSON (rank 0): the layer GEMM
    # shape occurs once per layer; a layer's compute-stream kernels lie
    # between its first layer norm and the next layer's first layer norm
    python3 - "$S/megatron_tp8_a100/rank0.json.gz" >"$tmp/py" <<'PY' || fail "python3 count failed"
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
mm = [e for e in ev if e.get("name") == "aten::mm" and "Input Dims" in e.get("args", {})]
qkv = sum(1 for e in mm if e["args"]["Input Dims"][1] == [4096, 1536])
k = sorted((e for e in ev if e.get("cat") == "kernel" and "nccl" not in e["name"].lower()), key=lambda e: e["ts"])
ln = [i for i, e in enumerate(k) if "LayerNorm" in e["name"]]
# layer l: from its ln1 (ln[2l]) to the next ln1, less the leading add of
# layer 0 that the embedding owns (none) -- the next layer's add is this one's
per = [ln[2 * l + 2] - ln[2 * l] for l in range(qkv - 1)]
print(qkv, min(per), max(per))
PY
    read -r nl kmin kmax <"$tmp/py"
    "$LUMOSIM" build "$S/megatron_tp8_a100" -o "$tmp/mg.h5" >/dev/null 2>&1 || fail "build failed"
    "$LUMOSIM" whatif --force "$tmp/mg.h5" --identify >"$tmp/id.json" || fail "identify failed"
    "$JSON_CHECK" "$tmp/id.json" "gpus == 8" "layout.tp == 8" "layout.dp == 1" "layers.source == kernel structure" \
        "layers.found == true" "layers.layers == $nl" "layers.micro_batches == 1" "layers.allreduces_per_layer == 2" \
        "layers.kernels_per_layer == $kmin" "layers.roles_per_layer.qkv_gemm == 1" "layers.roles_per_layer.attn == 5" \
        "layers.all_ranks.unassigned_why.position_in_layer == 0" >/dev/null || fail "identify ($nl layers, $kmin..$kmax kernels per layer expected): $(cat "$tmp/id.json")"
    [ "$nl" -eq 40 ] && [ "$kmin" -eq "$kmax" ] || fail "python3 count: $nl layers, $kmin..$kmax kernels per layer"
    # the override: 40 holds, 20 (two layers' worth each) holds, 7 does not
    "$LUMOSIM" whatif --force "$tmp/mg.h5" --trace-layers 20 --identify >"$tmp/id20.json" || fail "--trace-layers 20"
    "$JSON_CHECK" "$tmp/id20.json" "layers.layers == 20" "layers.forced == true" "layers.kernels_per_layer == $((2 * kmin))" >/dev/null ||
        fail "--trace-layers 20: $(cat "$tmp/id20.json")"
    "$LUMOSIM" whatif --force "$tmp/mg.h5" --trace-layers 7 --identify >"$tmp/out" 2>"$tmp/err" && fail "--trace-layers 7 accepted"
    grep -q "does not repeat consistently" "$tmp/err" || fail "not named: $(cat "$tmp/err")"
    W="--model $MJ --from-gpu a100"
    "$LUMOSIM" whatif --force "$tmp/mg.h5" -o "$tmp/t8.h5" >/dev/null || fail "whatif identity"
    "$LUMOSIM" whatif --force "$tmp/mg.h5" $W --tp 4 --dp 2 -o "$tmp/t4.h5" >"$tmp/rec.json" || fail "whatif --tp 4 --dp 2"
    "$JSON_CHECK" "$tmp/rec.json" "gpus_out == 8" "layout_out.tp == 4" "layout_out.dp == 2" \
        "transformations.1.args.from.micro_batch == 4" "transformations.1.nodes_retimed.kernel > 0" >/dev/null ||
        fail "record: $(cat "$tmp/rec.json")"
    "$LUMOSIM" whatif --force "$tmp/mg.h5" $W --tp 2 --dp 4 -o "$tmp/t2.h5" >/dev/null || fail "whatif --tp 2 --dp 4"
    "$LUMOSIM" whatif --force "$tmp/t4.h5" $W --tp 8 --dp 1 -o "$tmp/t48.h5" >/dev/null || fail "whatif TP4 DP2 -> TP8"
    p8=$(pred "$tmp/t8.h5")
    p4=$(pred "$tmp/t4.h5")
    p2=$(pred "$tmp/t2.h5")
    within "tp 8->4->8" "$(pred "$tmp/t48.h5")" "$p8"
    # the layers' GPU work grows as TP shrinks (exposed compute of rank 0)
    c8=$(c "$tmp/t8.h5")
    c4=$(c "$tmp/t4.h5")
    awk -v a="$c8" -v b="$c4" 'BEGIN { exit !(b > 1.5 * a) }' || fail "TP 4 compute $c4 us not 1.5 x TP 8's $c8 us"
    # layers on all eight ranks: their copies' collectives must pair up
    # across ranks, and the iteration grows with them
    "$LUMOSIM" whatif --force "$tmp/mg.h5" --layers 20 -o "$tmp/l20.h5" >/dev/null || fail "--layers 20 on the job"
    "$LUMOSIM" whatif --force "$tmp/mg.h5" --layers 80 -o "$tmp/l80.h5" >/dev/null || fail "--layers 80 on the job"
    p20=$(pred "$tmp/l20.h5")
    p80=$(pred "$tmp/l80.h5")
    [ "$p20" -lt "$p8" ] && [ "$p80" -gt "$p8" ] || fail "layers 20/40/80: $p20 $p8 $p80 ns, not increasing"
    # pipeline stages on the job: TP 8 PP 2 on 16 GPUs keeps every kernel
    # once; TP 4 PP 2 on the same 8 GPUs holds half of TP 4 DP 2's work
    # (each replica all 40 layers, each stage 20); the transfers pair up
    # across ranks (sim matches every send with its receive)
    "$LUMOSIM" whatif --force "$tmp/mg.h5" $W --pp 2 -o "$tmp/pp2.h5" >"$tmp/rec.json" || fail "whatif --pp 2 on the job"
    "$JSON_CHECK" "$tmp/rec.json" "gpus_out == 16" "layout_out.pp == 2" "transformations.1.collectives_retimed.pp == 16" \
        >/dev/null || fail "--pp 2 record: $(cat "$tmp/rec.json")"
    same "--pp 2: compute of 16 GPUs" "$(csum "$tmp/pp2.h5")" "$(csum "$tmp/t8.h5")"
    "$LUMOSIM" whatif --force "$tmp/mg.h5" $W --tp 4 --pp 2 -o "$tmp/t4p2.h5" >/dev/null || fail "whatif --tp 4 --pp 2"
    same "TP4 PP2: compute of 8 GPUs" "$(csum "$tmp/t4p2.h5")" "$(awk -v x="$(csum "$tmp/t4.h5")" 'BEGIN { printf "%.3f", x / 2 }')"
    pp2=$(pred "$tmp/pp2.h5")
    t4p2=$(pred "$tmp/t4p2.h5")
    [ "$pp2" -gt "$p8" ] || fail "PP 2 with one micro-batch ($pp2 ns) is not slower than PP 1 ($p8 ns)"
    # a training trace whose gradient buckets repeat (3 steps x 5 all-reduces
    # on one GPU, nccl_parser_config from HTA): not a transformer layer, so
    # no layers are found
    H=$S/hta_single/nccl_parser_config__nccl_data.json.gz
    if [ -f "$H" ]; then
        "$LUMOSIM" build "$H" -o "$tmp/h.h5" >/dev/null 2>&1 || fail "build $H"
        "$LUMOSIM" whatif --force "$tmp/h.h5" --identify >"$tmp/idh.json" || fail "identify $H"
        "$JSON_CHECK" "$tmp/idh.json" "layers.source == kernel structure" "layers.found == false" >/dev/null &&
            grep -q "not a transformer layer" "$tmp/idh.json" || fail "gradient buckets taken for layers: $(cat "$tmp/idh.json")"
        # one rank of a two-GPU job (its all-reduces name a group of 2): not
        # matched as a job, as sim takes it; no transformation, same prediction
        "$LUMOSIM" whatif --force "$tmp/h.h5" -o "$tmp/hw.h5" >/dev/null || fail "whatif on one rank of a job"
        [ "$(pred "$tmp/hw.h5")" -eq "$(pred "$tmp/h.h5")" ] || fail "one rank: the identity moved the prediction"
    fi
    echo "megatron_tp8_a100: TP8 $p8 ns (no transformation), TP4 DP2 $p4 ns, TP2 DP4 $p2 ns; 20 layers $p20 ns, 80 layers $p80 ns; TP8 PP2 $pp2 ns, TP4 PP2 $t4p2 ns (no ground truth)"
    echo "ok: megatron trace layers and TP"
    ;;
bad)
    "$LUMOSIM" synth $M --dp 2 --global-batch 8 -o "$tmp/job.h5" || fail "synth"
    expect() { # expect CODE NEEDLE ARGS...
        code=$1 needle=$2
        shift 2
        "$LUMOSIM" whatif --force "$@" -o "$tmp/bad.h5" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq "$code" ] || fail "exit $rc, expected $code: $* ($(cat "$tmp/err"))"
        [ -s "$tmp/out" ] && fail "stdout not empty: $*"
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one error line: $(cat "$tmp/err")"
        grep -q -- "$needle" "$tmp/err" || fail "'$needle' not in: $(cat "$tmp/err")"
        [ -e "$tmp/bad.h5" ] && fail "a store was written: $*"
        ls "$tmp" | grep -q '^bad\.h5' && fail "something was written: $*"
        ls "$tmp" | grep -q tmp- && fail "a temporary file was left: $*"
        return 0
    }
    expect 2 "positive integer" "$tmp/job.h5" --dp 0
    expect 1 "--layers 25 is not divisible by PP x V = 2 x 1" "$tmp/job.h5" --layers 25
    expect 1 "--slow-gpu 8:2: the job has ranks 0..7" "$tmp/job.h5" --slow-gpu 8:2
    expect 1 "--slow-gpu 16:2: the transformed job has ranks 0..15" "$tmp/job.h5" --dp 4 --slow-gpu 16:2
    expect 2 "RANK:FACTOR" "$tmp/job.h5" --slow-gpu 3:0
    expect 2 "relative std-dev" "$tmp/job.h5" --jitter -0.1
    expect 1 "more pipeline stages than the model's 48 layers" "$tmp/job.h5" --pp 64
    expect 1 "48 layers are not divisible by PP x V = 5 x 1" "$tmp/job.h5" --pp 5
    expect 1 "6 micro-batches per pipeline are not divisible by PP = 4" "$tmp/job.h5" --pp 4 --schedule interleaved:2 --micro-batches 6
    expect 1 "needs --pp >= 2" "$tmp/job.h5" --pp 1 --schedule interleaved:2
    expect 2 "unknown --schedule" "$tmp/job.h5" --schedule gpipe
    expect 2 "positive integer" "$tmp/job.h5" --micro-batches 0
    expect 1 "TP 5 does not divide the model (heads 48" "$tmp/job.h5" --tp 5
    expect 1 "TP 2 does not divide the model" "$tmp/job.h5" --ffn 12289
    expect 2 "positive integer" "$tmp/job.h5" --hidden -4
    expect 2 "unknown option" "$tmp/job.h5" --frobnicate 1
    expect 1 "JSON" "$tmp/job.h5" --topology "$tmp/job.h5"
    expect 1 "unknown" "$tmp/job.h5" --gpu v100
    expect 1 "nothing.h5" "$tmp/nothing.h5" --dp 2
    # a trace with no repeating layers between tensor-parallel all-reduces
    "$LUMOSIM" build "$(dirname "$0")/../data/cuda_graph.json" -o "$tmp/cg.h5" >/dev/null 2>&1 || fail "build cuda_graph"
    expect 1 "layer structure unknown" "$tmp/cg.h5" --layers 4
    expect 1 "layer structure unknown (no layer tags, annotations or tensor-parallel all-reduces)" "$tmp/cg.h5" --pp 2
    echo "ok: bad input refused"
    ;;
*) fail "unknown mode" ;;
esac
