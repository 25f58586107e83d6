#!/bin/sh
# models_cli.sh MODE  (environment: LUMOSIM)
#
#   run   lumosim synth of the shipped Llama 3 shapes by name and of a model
#         file, simulated; the model kinds' kernels are in the graphs
#         (and in FP8, recorded in the options); routing that is not
#         balanced: Zipf, a measured histogram, a Dirichlet draw around it
#   bad   model files and layouts refused (issue 36), FP8 on an A100: one "lumosim: error:"
#         line naming the file or field, exit 1, empty stdout, nothing written
set -u
mode=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "models_cli $mode: $*"; exit 1; }
small="--tp 8 --pp 1 --dp 1 --micro-batch 1 --global-batch 2 --sequence-parallel"
printf '{"layers": 2, "hidden": 512, "ffn": 1376, "heads": 8, "kv_heads": 2, "head_dim": 64, "seq": 256, "vocab": 1024, "mlp": "swiglu", "norm": "rmsnorm", "rope": true, "tie_embeddings": false, "bias": false}\n' >"$tmp/toy.json"

case $mode in
run)
    "$LUMOSIM" synth --model llama3-8b --layers 4 $small -o "$tmp/l8.h5" >"$tmp/out" 2>"$tmp/err" ||
        fail "llama3-8b: $(cat "$tmp/err")"
    "$LUMOSIM" sim "$tmp/l8.h5" >"$tmp/sim.txt" || fail "sim of llama3-8b failed"
    grep -q "synth:llama3-8b/gpu0" "$tmp/sim.txt" || fail "the model's name is not in the source"
    "$LUMOSIM" synth --model "$tmp/toy.json" --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 4 -o "$tmp/toy.h5" \
        >/dev/null 2>"$tmp/err" || fail "toy model file: $(cat "$tmp/err")"
    "$LUMOSIM" sim --json "$tmp/toy.h5" >/dev/null || fail "sim of the toy model failed"
    "$LUMOSIM" synth --model llama3-8b --layers 4 $small --precision fp8 --fp8-scaling delayed -o "$tmp/f8.h5" \
        >/dev/null 2>"$tmp/err" || fail "fp8: $(cat "$tmp/err")"
    "$LUMOSIM" sim "$tmp/f8.h5" >"$tmp/f8.txt" || fail "sim of fp8 failed"
    grep -q "opts:sp,fp8=delayed" "$tmp/f8.txt" || fail "fp8 is not in the options: $(grep -m1 synth: "$tmp/f8.txt")"
    "$LUMOSIM" synth --model qwen3-30b-a3b --layers 2 --seq 512 --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 \
        --global-batch 4 -o "$tmp/moe.h5" >/dev/null 2>"$tmp/err" || fail "qwen3-30b-a3b --ep 4: $(cat "$tmp/err")"
    "$LUMOSIM" sim "$tmp/moe.h5" >"$tmp/moe.txt" || fail "sim of the EP job failed"
    grep -q "opts:ep=4" "$tmp/moe.txt" || fail "ep is not in the options: $(grep -m1 synth: "$tmp/moe.txt")"
    grep -q "alltoall" "$tmp/moe.txt" || fail "no all-to-all in the EP job"
    # skewed routing: skew 0 gives one step (p5 = p95 over sim --samples),
    # a Zipf skew spreads it (each GPU's experts get other loads)
    for z in 0 1; do
        "$LUMOSIM" synth --model qwen3-30b-a3b --layers 4 --seq 512 --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 \
            --global-batch 8 --routing-skew $z -o "$tmp/z$z.h5" >"$tmp/z$z.out" 2>"$tmp/err" || fail "skew $z: $(cat "$tmp/err")"
        "$LUMOSIM" sim --samples 20 "$tmp/z$z.h5" >"$tmp/z$z.txt" 2>&1 || fail "sim --samples of skew $z failed"
    done
    set -- $(awk '/^GPU 0 window/ {print $4, $6; exit}' "$tmp/z0.txt")
    [ $# -eq 2 ] && [ "$1" = "$2" ] || fail "skew 0: p5 $* not equal to p95"
    set -- $(awk '/^GPU 0 window/ {print $4, $6; exit}' "$tmp/z1.txt")
    [ $# -eq 2 ] && awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > a) }' || fail "skew 1: p95 not above p5 ($*)"
    "$LUMOSIM" sim "$tmp/z1.h5" | grep -q "opts:ep=4,skew=1" || fail "skew is not in the options"
    # a measured histogram (one row of counts for every MoE layer): one
    # expert of each GPU's 32 takes 3 x the tokens of the others, so the
    # grouped GEMMs cost more than the balanced job's (tile waves) and the
    # step is longer; a Dirichlet draw around it spreads the step
    printf '# tokens per expert\n' >"$tmp/hist.csv"
    awk 'BEGIN { for (e = 0; e < 128; e++) printf "%s%d", e ? "," : "", e % 32 == 0 ? 3000 : 1000; print "" }' \
        >>"$tmp/hist.csv"
    for r in "hist" "dir"; do
        extra="--routing-hist $tmp/hist.csv"
        [ $r = dir ] && extra="$extra --routing-dirichlet 2"
        "$LUMOSIM" synth --model qwen3-30b-a3b --layers 4 --seq 512 --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 \
            --global-batch 8 $extra -o "$tmp/$r.h5" >/dev/null 2>"$tmp/err" || fail "$r: $(cat "$tmp/err")"
        "$LUMOSIM" sim "$tmp/$r.h5" >"$tmp/$r.txt" 2>&1 || fail "sim of $r failed"
    done
    grep -q "opts:ep=4,hist=1 " "$tmp/hist.txt" || fail "the histogram is not in the options"
    # one hot expert (45 of 128, on GPU 1 with EP 4): synth names it and its GPU
    awk 'BEGIN { for (e = 0; e < 128; e++) printf "%s%d", e ? " " : "", e == 45 ? 8000 : 1000; print "" }' >"$tmp/hot.csv"
    "$LUMOSIM" synth --model qwen3-30b-a3b --layers 4 --seq 512 --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 \
        --global-batch 8 --routing-hist "$tmp/hot.csv" -o "$tmp/hot.h5" >"$tmp/hot.out" 2>"$tmp/err" || fail "hot: $(cat "$tmp/err")"
    grep -q "routing: the most loaded GPU is 1 (EP rank 1 of group ep:0:0), 1.16x .* the most loaded expert is 45 on GPU 1, 7.59x" \
        "$tmp/hot.out" || fail "the hot expert is not named: $(cat "$tmp/hot.out")"
    # the memory estimate holds the most loaded GPU's routed activations:
    # the hot expert's job estimates more activations than the balanced one
    act() { sed -n 's/.* activations \([0-9.]*\) .*/\1/p' "$1" | head -n 1; }
    ah=$(act "$tmp/hot.out") ab=$(act "$tmp/z0.out")
    [ -n "$ah" ] && [ -n "$ab" ] && awk -v a="$ah" -v b="$ab" 'BEGIN { exit !(a > b) }' ||
        fail "hot expert: activations '$ah' GB not above the balanced job's '$ab' GB"
    # a row per MoE layer: the hot expert in layer 0's row only, so only
    # layer 0 has it (1.04x over the step's 4 layers, not 1.16x); expert 34
    # of 128 over EP 4 is on GPU 34 / 32 = 1 (not 34 mod 4 = 2)
    awk 'BEGIN { for (l = 0; l < 4; l++) { for (e = 0; e < 128; e++) printf "%s%d", e ? " " : "", \
        (l == 0 && e == 34) ? 8000 : 1000; print "" } }' >"$tmp/rows.csv"
    "$LUMOSIM" synth --model qwen3-30b-a3b --layers 4 --seq 512 --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 \
        --global-batch 8 --routing-hist "$tmp/rows.csv" -o "$tmp/rows.h5" >"$tmp/rows.out" 2>"$tmp/err" ||
        fail "rows: $(cat "$tmp/err")"
    grep -q "most loaded GPU is 1 (EP rank 1 of group ep:0:0), 1.04x the mean GPU's token copies over the step; the most loaded expert is 34 on GPU 1, 7.59x its balanced share (layer 0," \
        "$tmp/rows.out" || fail "layer 0's row is not layer 0's: $(cat "$tmp/rows.out")"
    grep -q "opts:ep=4,dirichlet=2,hist=1 " "$tmp/dir.txt" || fail "the Dirichlet draw is not in the options"
    step() { "$LUMOSIM" sim --json "$1" | sed -n 's/.*"job": *{[^}]*"predicted_ns": *\([0-9]*\).*/\1/p'; }
    h=$(step "$tmp/hist.h5")
    b=$(step "$tmp/z0.h5")
    [ -n "$h" ] && [ -n "$b" ] && [ "$h" -gt "$b" ] || fail "histogram: step '$h' ns not above the balanced '$b' ns"
    # a capacity of 1 x the balanced share drops the hot experts' excess:
    # the step falls below the histogram's
    "$LUMOSIM" synth --model qwen3-30b-a3b --layers 4 --seq 512 --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 \
        --global-batch 8 --routing-hist "$tmp/hist.csv" --capacity-factor 1 -o "$tmp/cap.h5" >/dev/null 2>"$tmp/err" ||
        fail "capacity: $(cat "$tmp/err")"
    c=$(step "$tmp/cap.h5")
    [ -n "$c" ] && [ "$c" -lt "$h" ] || fail "capacity 1: step '$c' ns not below the histogram's '$h' ns"
    # balanced routing fits a capacity of 1 x the balanced share of the EP
    # group's tokens exactly: nothing dropped, the balanced job's step
    "$LUMOSIM" synth --model qwen3-30b-a3b --layers 4 --seq 512 --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 \
        --global-batch 8 --routing-skew 0 --capacity-factor 1 -o "$tmp/cap0.h5" >/dev/null 2>"$tmp/err" ||
        fail "capacity of balanced routing: $(cat "$tmp/err")"
    c0=$(step "$tmp/cap0.h5")
    [ -n "$c0" ] && [ "$c0" = "$b" ] || fail "capacity 1 of balanced routing: step '$c0' ns, not the balanced '$b' ns"
    "$LUMOSIM" sim --samples 20 "$tmp/dir.h5" >"$tmp/dirs.txt" 2>&1 || fail "sim --samples of the Dirichlet job failed"
    set -- $(awk '/^GPU 0 window/ {print $4, $6; exit}' "$tmp/dirs.txt")
    [ $# -eq 2 ] && awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > a) }' || fail "Dirichlet: p95 not above p5 ($*)"
    echo "ok: Llama 3 by name, a model file and a MoE job with EP synthesized and simulated; routing skew spreads the step"
    ;;
bad)
    expect() { # expect NEEDLE ARGS...
        needle=$1
        shift
        "$LUMOSIM" synth "$@" -o "$tmp/bad.h5" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq 1 ] || fail "exit $rc, expected 1: $*"
        [ -s "$tmp/out" ] && fail "stdout not empty: $*"
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "not one error line: $(cat "$tmp/err")"
        grep -q -- "$needle" "$tmp/err" || fail "'$needle' not in: $(cat "$tmp/err")"
        [ -e "$tmp/bad.h5" ] && fail "a file was written: $*"
        return 0
    }
    expect "kv_heads: 8 KV heads are not divisible by TP = 16" --model llama3-70b --tp 16 --pp 8 --dp 1 \
        --micro-batch 1 --global-batch 8
    sed 's/"kv_heads": 2/"kv_heads": 3/' "$tmp/toy.json" >"$tmp/kv3.json"
    expect "kv3.json: key kv_heads: 8 query heads are not divisible by 3 KV heads" --model "$tmp/kv3.json" $small
    sed 's/"bias": false/"bias": false, "expertz": 8/' "$tmp/toy.json" >"$tmp/unk.json"
    expect "unk.json: key expertz: unknown" --model "$tmp/unk.json" $small
    # mixture of experts: top-k above the experts (the file), experts not
    # divisible by EP (the layout)
    sed 's/"bias": false/"bias": false, "experts": 8, "top_k": 9, "expert_ffn": 256/' "$tmp/toy.json" >"$tmp/topk.json"
    expect "topk.json: key top_k: 9 experts per token is more than the 8 experts" --model "$tmp/topk.json" $small
    expect "ep 3: the 128 experts of model qwen3-30b-a3b are not divisible by EP = 3" --model qwen3-30b-a3b \
        --layers 2 --tp 1 --pp 1 --dp 3 --ep 3 --micro-batch 1 --global-batch 3
    expect "ep 2: model llama3-8b has no experts" --model llama3-8b --layers 4 $small --ep 2
    expect "routing-skew -1: not a Zipf exponent" --model qwen3-30b-a3b --layers 2 --tp 1 --pp 1 --dp 4 --ep 4 \
        --micro-batch 1 --global-batch 4 --routing-skew=-1
    moe4="--model qwen3-30b-a3b --layers 2 --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 --global-batch 4"
    printf '1 2 3\n' >"$tmp/h3.csv"
    expect "h3.csv: line 1: 3 values, the model has 128 experts" $moe4 --routing-hist "$tmp/h3.csv"
    awk 'BEGIN { for (e = 0; e < 128; e++) printf "%s%d", e ? " " : "", e == 5 ? -1 : 1; print "" }' >"$tmp/hneg.csv"
    expect "hneg.csv: line 1: value 6 is -1" $moe4 --routing-hist "$tmp/hneg.csv"
    awk 'BEGIN { for (e = 0; e < 128; e++) printf "%s0", e ? " " : ""; print "" }' >"$tmp/h0.csv"
    expect "h0.csv: line 1: the values sum to 0: not a distribution" $moe4 --routing-hist "$tmp/h0.csv"
    expect "nonexistent.csv: cannot open" $moe4 --routing-hist "$tmp/nonexistent.csv"
    expect "routing-dirichlet -2: not a Dirichlet concentration" $moe4 --routing-dirichlet=-2
    expect "routing-skew with --routing-dirichlet" $moe4 --routing-dirichlet 1 --routing-skew 1
    expect "pad-to-capacity needs --capacity-factor" $moe4 --pad-to-capacity
    expect "capacity-factor -1: not a capacity factor" $moe4 --capacity-factor=-1
    expect "routing-hist $tmp/h3.csv: model llama3-8b has no experts" --model llama3-8b --layers 4 $small \
        --routing-hist "$tmp/h3.csv"
    sed 's/"swiglu"/"relu"/' "$tmp/toy.json" >"$tmp/mlp.json"
    expect "mlp.json: key mlp: expected" --model "$tmp/mlp.json" $small
    expect "unknown model 'llama3-9b'" --model llama3-9b $small
    expect "attention-kernel fa2: the GPU spec a100 has no FlashAttention-2 curve" --model llama3-8b --layers 4 $small \
        --gpu a100 --attention-kernel fa2
    expect "fp8-all-gather needs --precision fp8 and --fsdp" --model llama3-8b --layers 4 $small --fp8-all-gather
    expect "precision fp8: the a100 has no FP8 tensor cores" --model llama3-8b --layers 4 $small --gpu a100 --precision fp8
    echo "ok: bad models and layouts refused, nothing written"
    ;;
*) fail "unknown mode" ;;
esac
