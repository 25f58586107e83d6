#!/bin/sh
# bench/whatif_matrix.sh [LUMOSIM] -- what-if self-consistency matrix.
#
# For GPT-3 15B and 44B at TP 2, PP 2, micro-batch 1 and 4 micro-batches per
# pipeline (global batch 4 x DP), every pair A -> B among DP {1, 2, 4, 8}
# (from DP 1 the gradient buckets are emitted for the new replicas), layers
# {24, 48} at each DP, a topology change and a GPU change; at PP 2, DP 2:
# every pair among TP {1, 2, 4, 8} (from TP 1 the all-reduces are emitted), TP and DP together on the
# same GPUs (TP4 DP2 <-> TP2 DP4, TP8 DP2 -> TP4 DP4), hidden x 2/3 and
# FFN x 2:
# lumosim whatif (synth(A) -> B) is simulated and compared with synth(B)
# simulated; pipeline rows (PP {1, 2, 4} pairs, 1F1B <-> interleaved:2,
# micro-batches 4 <-> 8, DP at a fixed global batch, TP 8 PP 4 from TP 2
# PP 2) the same way. Prints a markdown table: configuration, what-if prediction,
# synthesized prediction, their difference, and the what-if command. Exit 1
# when a case is more than 1 % off. Self-consistency, not accuracy: both
# sides come from synth's own emitter and cost functions (src/synth/gbuild.c,
# src/whatif/pipeline.c), so agreement says the transformations invert the
# synthesizer, not that either is close to a real run.
set -u
L=${1:-build/lumosim}
T=data/topology/example_4gpu_eth100.json
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
pred() {
    "$L" sim --json "$1" | tr -d ' \n' | sed 's/.*"job":{[^}]*"predicted_ns":\([0-9]*\).*/\1/'
}
synth() { # synth NAME MODEL DP LAYERS [EXTRA...]  (TP 2 unless EXTRA has --tp)
    n=$1 m=$2 d=$3 l=$4
    shift 4
    # GPT-3 15B and 44B at TP 2 x PP 2 need more memory per GPU than an H100
    # has; the matrix checks what-if against synthesis, not the fit
    # TP 2 and PP 2 unless EXTRA gives its own (an option may be given once)
    tp=2 pp=2 gb=$((4 * d))
    case " $* " in *" --tp "*) tp= ;; esac
    case " $* " in *" --pp "*) pp= ;; esac
    case " $* " in *" --global-batch "*) gb= ;; esac
    [ -e "$tmp/$n.h5" ] || "$L" synth --model "$m" ${tp:+--tp $tp} ${pp:+--pp $pp} --dp "$d" --micro-batch 1 \
        ${gb:+--global-batch $gb} --layers "$l" --no-memory-check "$@" -o "$tmp/$n.h5" >/dev/null || exit 1
}
row() { # row LABEL SOURCE TARGET WHATIF-ARGS...
    r_label=$1 r_src=$2 r_dst=$3
    shift 3
    "$L" whatif --force "$tmp/$r_src.h5" "$@" -o "$tmp/w.h5" >/dev/null || { echo "| $r_label | failed | | | |"; bad=1; return; }
    p=$(pred "$tmp/w.h5")
    q=$(pred "$tmp/$r_dst.h5")
    awk -v l="$r_label" -v p="$p" -v q="$q" -v c="lumosim whatif $r_src.h5 $*" 'BEGIN {
        e = (p - q) / q; printf "| %s | %.3f | %.3f | %+.4f %% | `%s` |\n", l, p / 1e6, q / 1e6, 100 * e, c;
        exit !(e <= 0.01 && e >= -0.01) }' || bad=1
}
echo "| configuration | what-if ms | synth ms | what-if - synth | command |"
echo "|---|---|---|---|---|"
for m in gpt3-15b gpt3-44b; do
    for d in 1 2 4 8; do
        for l in 24 48; do synth "$m-dp$d-l$l" "$m" "$d" "$l"; done
    done
    synth "$m-topo" "$m" 2 48 --topology "$T"
    synth "$m-a100" "$m" 2 48 --gpu a100
    for a in 1 2 4 8; do
        for b in 1 2 4 8; do
            [ "$a" = "$b" ] && continue
            row "$m TP2 PP2 DP $a -> $b" "$m-dp$a-l48" "$m-dp$b-l48" --dp "$b"
        done
    done
    for d in 1 2 4 8; do
        row "$m TP2 PP2 DP$d layers 48 -> 24" "$m-dp$d-l48" "$m-dp$d-l24" --layers 24
        row "$m TP2 PP2 DP$d layers 24 -> 48" "$m-dp$d-l24" "$m-dp$d-l48" --layers 48
    done
    row "$m TP2 PP2 DP2 DP 4 -> 2 and layers 48 -> 24" "$m-dp4-l48" "$m-dp2-l24" --dp 2 --layers 24
    row "$m TP2 PP2 DP2 network -> example_4gpu_eth100" "$m-dp2-l48" "$m-topo" --topology "$T"
    row "$m TP2 PP2 DP2 GPU h100 -> a100" "$m-dp2-l48" "$m-a100" --gpu a100
    # tensor parallel and width (a row's --tp replaces the default)
    for t in 1 4 8; do synth "$m-tp$t" "$m" 2 48 --tp "$t"; done
    synth "$m-tp4dp4" "$m" 4 48 --tp 4
    synth "$m-tp8dp2" "$m" 2 48 --tp 8
    for a in 1 2 4 8; do
        for b in 1 2 4 8; do
            [ "$a" = "$b" ] && continue
            sa=$m-tp$a sb=$m-tp$b
            [ "$a" = 2 ] && sa=$m-dp2-l48
            [ "$b" = 2 ] && sb=$m-dp2-l48
            row "$m PP2 DP2 TP $a -> $b" "$sa" "$sb" --tp "$b"
        done
    done
    synth "$m-tp8dp1" "$m" 1 48 --tp 8
    synth "$m-tp4-l24" "$m" 2 24 --tp 4
    row "$m PP2 TP4 DP2 -> TP2 DP4" "$m-tp4" "$m-dp4-l48" --tp 2 --dp 4
    row "$m PP2 TP2 DP4 -> TP4 DP2" "$m-dp4-l48" "$m-tp4" --tp 4 --dp 2
    row "$m PP2 TP8 DP2 -> TP4 DP4" "$m-tp8dp2" "$m-tp4dp4" --tp 4 --dp 4
    row "$m PP2 TP4 DP2 -> TP8 DP1" "$m-tp4" "$m-tp8dp1" --tp 8 --dp 1
    hid=$(case $m in gpt3-15b) echo 4096 ;; *) echo 8192 ;; esac)
    ffn=$(case $m in gpt3-15b) echo 24576 ;; *) echo 49152 ;; esac)
    synth "$m-h" "$m" 2 48 --hidden "$hid"
    synth "$m-f" "$m" 2 48 --ffn "$ffn"
    synth "$m-tp4hf" "$m" 2 48 --tp 4 --hidden "$hid" --ffn "$ffn"
    row "$m TP2 PP2 DP2 hidden -> $hid" "$m-dp2-l48" "$m-h" --hidden "$hid"
    row "$m TP2 PP2 DP2 FFN -> $ffn" "$m-dp2-l48" "$m-f" --ffn "$ffn"
    row "$m PP2 DP2 TP 2 -> 4, hidden -> $hid, FFN -> $ffn" "$m-dp2-l48" "$m-tp4hf" --tp 4 --hidden "$hid" --ffn "$ffn"
    row "$m TP2 PP2 DP4 -> TP4 DP2 and layers 48 -> 24" "$m-dp4-l48" "$m-tp4-l24" --tp 4 --dp 2 --layers 24
    # pipeline depth, schedule, micro-batches (a row's --pp / --global-batch replace the defaults)
    for p in 1 4; do synth "$m-pp$p" "$m" 2 48 --pp "$p"; done
    synth "$m-i2" "$m" 2 48 --schedule interleaved:2
    synth "$m-pp4i2" "$m" 2 48 --pp 4 --schedule interleaved:2
    synth "$m-m8" "$m" 2 48 --global-batch 16
    synth "$m-pp4m8" "$m" 2 48 --pp 4 --global-batch 16
    synth "$m-dp4m2" "$m" 4 48 --global-batch 8
    synth "$m-tp8pp4" "$m" 2 48 --tp 8 --pp 4
    for a in 1 2 4; do
        for b in 1 2 4; do
            [ "$a" = "$b" ] && continue
            sa=$m-pp$a sb=$m-pp$b
            [ "$a" = 2 ] && sa=$m-dp2-l48
            [ "$b" = 2 ] && sb=$m-dp2-l48
            row "$m TP2 DP2 PP $a -> $b" "$sa" "$sb" --pp "$b"
        done
    done
    row "$m TP2 PP2 DP2 1F1B -> interleaved:2" "$m-dp2-l48" "$m-i2" --schedule interleaved:2
    row "$m TP2 PP2 DP2 interleaved:2 -> 1F1B" "$m-i2" "$m-dp2-l48" --schedule 1f1b
    row "$m TP2 DP2 PP 4 interleaved:2 -> PP 2 1F1B" "$m-pp4i2" "$m-dp2-l48" --pp 2 --schedule 1f1b
    row "$m TP2 PP2 DP2 micro-batches 4 -> 8" "$m-dp2-l48" "$m-m8" --micro-batches 8
    row "$m TP2 PP2 DP2 micro-batches 8 -> 4" "$m-m8" "$m-dp2-l48" --micro-batches 4
    row "$m TP2 DP2 PP 2 -> 4, micro-batches 4 -> 8" "$m-dp2-l48" "$m-pp4m8" --pp 4 --micro-batches 8
    row "$m TP2 PP2 DP 2 -> 4 at global batch 8 (micro-batches 4 -> 2)" "$m-dp2-l48" "$m-dp4m2" --dp 4 --micro-batches 2
    row "$m DP2 TP2 PP2 -> TP8 PP4" "$m-dp2-l48" "$m-tp8pp4" --tp 8 --pp 4
done
exit $bad
