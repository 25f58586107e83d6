#!/bin/sh
# whatif_resynth.sh  (environment: LUMOSIM)
#
# lumosim whatif --ep / --etp / --cp / --fsdp on a synthesized store (issue 36;
# docs/whatif.md "Re-synthesis"): the job synthesized again from the
# store's recorded arguments. Each what-if's store must be, simulated to
# the nanosecond and node for node, what lumosim synth makes when given the
# new layout by hand here (the expected arguments are written in this
# script, not taken from the record):
#   - a MoE job's EP 2 -> 4; then its output's EP 4 -> 8 with --dp 8 (a
#     what-if of a what-if: per-replica batch kept, global batch 8 -> 16);
#   - a dense job's CP 1 -> 2 with full-shard FSDP and DP 2 -> 4;
#   - a full-shard FSDP job's --dp 2 -> 4 with --cp 2: FSDP stays full shard;
#   - --fsdp off;
#   - a model file and a routing histogram named by relative paths, the
#     what-if run from another directory;
#   - --resynth of a distributed-optimizer job's TP and DP (which the graph
#     edits refuse, naming --resynth);
# and the record names each width that changed. Refused, one line, exit 1,
# nothing written: a store a graph-editing what-if wrote (no synth_args),
# --jitter with --ep, --ep on a dense model (synth's own line), --fsdp
# that does not divide DP, a bad --fsdp word; the source or an existing
# store as the output (no --force) are refused and left byte for byte.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "whatif_resynth: $*"; exit 1; }
L=$LUMOSIM

step() { "$L" sim --json "$1" | sed -n 's/.*"job": *{[^}]*"predicted_ns": *\([0-9]*\).*/\1/p'; }
nodes() { "$L" info "$1" | sed -n 's/.*GPUs: \([0-9]*\) nodes, \([0-9]*\) edges.*/\1 \2/p'; }
same() { # same WHATIF.h5 SYNTH.h5 what
    a=$(step "$1")
    b=$(step "$2")
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "$3: what-if step '$a' ns, synth '$b' ns"
    [ "$(nodes "$1")" = "$(nodes "$2")" ] || fail "$3: nodes/edges $(nodes "$1") vs synth's $(nodes "$2")"
}
moe="--model qwen3-30b-a3b --layers 4 --seq 512 --tp 1 --pp 1 --micro-batch 1"

cd "$tmp" || exit 1
"$L" synth $moe --dp 4 --ep 2 --global-batch 8 -o e2.h5 >/dev/null 2>err || fail "synth ep 2: $(cat err)"
"$L" whatif e2.h5 --ep 4 -o w4.h5 >rec.json 2>err || fail "whatif --ep 4: $(cat err)"
grep -q '"changed":{"ep":\[2,4\]}' rec.json || fail "record: $(cat rec.json)"
"$L" synth $moe --dp 4 --ep 4 --global-batch 8 -o e4.h5 >/dev/null || fail "synth ep 4"
same w4.h5 e4.h5 "EP 2 -> 4"
"$L" whatif w4.h5 --ep 8 --dp 8 -o w8.h5 >rec.json 2>err || fail "whatif of a what-if: $(cat err)"
grep -q '"dp":\[4,8\],"ep":\[4,8\],"global_batch":\[8,16\]' rec.json || fail "record: $(cat rec.json)"
"$L" synth $moe --dp 8 --ep 8 --global-batch 16 -o e8.h5 >/dev/null || fail "synth ep 8"
same w8.h5 e8.h5 "EP 4 -> 8, DP 4 -> 8"
# expert-tensor parallelism: EP 2 -> EP 2 x ETP 2 (the 4 GPUs as ETP x EP)
"$L" whatif e2.h5 --etp 2 -o we.h5 >rec.json 2>err || fail "whatif --etp 2: $(cat err)"
grep -q '"changed":{"etp":\[1,2\]}' rec.json || fail "record: $(cat rec.json)"
"$L" synth $moe --dp 4 --ep 2 --etp 2 --global-batch 8 -o ee.h5 >/dev/null || fail "synth ep 2 etp 2"
same we.h5 ee.h5 "ETP 1 -> 2"

dense="--model llama3-8b --layers 2 --seq 1024 --tp 2 --pp 1 --micro-batch 1 --sequence-parallel"
"$L" synth $dense --dp 2 --global-batch 4 -o l.h5 >/dev/null || fail "synth llama"
"$L" whatif l.h5 --cp 2 --fsdp full --dp 4 -o lw.h5 >/dev/null 2>err || fail "whatif --cp --fsdp: $(cat err)"
"$L" synth $dense --dp 4 --cp 2 --fsdp 4 --global-batch 8 -o lr.h5 >/dev/null || fail "synth cp fsdp"
same lw.h5 lr.h5 "CP 2, FSDP full, DP 4"
"$L" synth $dense --dp 2 --fsdp 2 --global-batch 4 -o f2.h5 >/dev/null || fail "synth fsdp 2"
"$L" whatif f2.h5 --dp 4 --cp 2 -o f4.h5 >/dev/null 2>err || fail "whatif --dp of FSDP: $(cat err)"
same f4.h5 lr.h5 "full shard kept over the new DP"
"$L" whatif lr.h5 --fsdp off -o off.h5 >/dev/null 2>err || fail "whatif --fsdp off: $(cat err)"
"$L" synth $dense --dp 4 --cp 2 --global-batch 8 -o offr.h5 >/dev/null || fail "synth no fsdp"
same off.h5 offr.h5 "FSDP off"

# files by relative paths, the what-if from another directory
mkdir -p a/sub b
printf '{"layers": 2, "hidden": 512, "ffn": 1024, "heads": 8, "kv_heads": 2, "head_dim": 64, "seq": 256, "vocab": 1024, "mlp": "swiglu", "norm": "rmsnorm", "rope": true, "tie_embeddings": false, "bias": false, "experts": 8, "top_k": 2, "expert_ffn": 256}\n' >a/sub/toy.json
printf '1 2 3 4 5 6 7 8\n' >a/sub/h.csv
(cd a && "$L" synth --model sub/toy.json --routing-hist sub/h.csv --tp 1 --pp 1 --dp 4 --ep 2 --micro-batch 1 \
    --global-batch 4 -o ../t2.h5 >/dev/null 2>../err) || fail "synth toy: $(cat err)"
(cd b && "$L" whatif ../t2.h5 --ep 4 -o ../t4.h5 >/dev/null 2>../err) || fail "whatif from elsewhere: $(cat err)"
(cd a && "$L" synth --model sub/toy.json --routing-hist sub/h.csv --tp 1 --pp 1 --dp 4 --ep 4 --micro-batch 1 \
    --global-batch 4 -o ../t4r.h5 >/dev/null) || fail "synth toy ep 4"
same t4.h5 t4r.h5 "a model file and a histogram by relative paths"

# refusals
expect() { # expect NEEDLE ARGS...
    needle=$1
    shift
    "$L" whatif "$@" -o bad.h5 >out 2>err
    rc=$?
    [ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "exit $rc: $*"
    [ -s out ] && fail "stdout not empty: $*"
    [ "$(wc -l <err)" -eq 1 ] || fail "not one error line: $(cat err)"
    grep -q -- "$needle" err || fail "'$needle' not in: $(cat err)"
    [ -e bad.h5 ] && fail "a file was written: $*"
    return 0
}
"$L" whatif l.h5 --jitter 0.1 -o lj.h5 >/dev/null || fail "whatif --jitter"
expect "lj.h5: no synth_args attribute" lj.h5 --ep 2
expect "jitter with --ep, --cp, --fsdp or --resynth" l.h5 --ep 2 --jitter 0.1
expect "ep 2: model llama3-8b has no experts" l.h5 --ep 2
expect "fsdp 3 does not divide DP = 2" l.h5 --fsdp 3
expect "fsdp needs off, full or a shard group" l.h5 --fsdp most
# --resynth: a job synthesized with the distributed optimizer, which the
# graph edits cannot carry through --dp or --tp (refused, naming --resynth),
# synthesized again with TP 2 -> 4 and DP 2 -> 4 (per-replica batch kept:
# 4 micro-batches of 1, global batch 8 -> 16)
d="--model gpt3-15b --layers 4 --pp 2 --micro-batch 1 --distributed-optimizer"
"$L" synth $d --tp 2 --dp 2 --global-batch 8 -o d2.h5 >/dev/null 2>err || fail "synth distopt: $(cat err)"
"$L" whatif d2.h5 --dp 4 -o bad.h5 >/dev/null 2>err && fail "whatif --dp of a distopt store accepted without --resynth"
grep -q -- "add --resynth" err || fail "the refusal does not name --resynth: $(cat err)"
[ -e bad.h5 ] && fail "a refused what-if wrote its output"
"$L" whatif d2.h5 --dp 4 --tp 4 --resynth -o d4.h5 >recd.json 2>err || fail "whatif --resynth: $(cat err)"
"$L" synth $d --tp 4 --dp 4 --global-batch 16 -o s4.h5 >/dev/null 2>err || fail "synth tp 4 dp 4: $(cat err)"
same d4.h5 s4.h5 "--resynth --tp 4 --dp 4"
grep -q '"dp":\[2,4\]' recd.json && grep -q '"tp":\[2,4\]' recd.json || fail "the record lacks the widths: $(cat recd.json)"
expect "jitter with --ep, --cp, --fsdp or --resynth" d2.h5 --resynth --jitter 0.1
# no file the user did not name as the output is changed: the source as
# the output, and an existing store without --force, are refused as they
# are for every what-if, and both stay byte for byte
cp e2.h5 e2.bak && cp w4.h5 w4.bak || fail "copies"
"$L" whatif e2.h5 --ep 4 -o e2.h5 >/dev/null 2>err && fail "the source written over"
grep -q "e2.h5" err || fail "no line naming the source: $(cat err)"
"$L" whatif e2.h5 --ep 4 -o w4.h5 >/dev/null 2>err && fail "an existing store replaced without --force"
grep -q "force" err || fail "no --force hint: $(cat err)"
cmp -s e2.h5 e2.bak && cmp -s w4.h5 w4.bak || fail "a file not named as the output changed"
echo "ok: whatif --ep, --cp, --fsdp, --resynth re-synthesize the job node for node as synth, refusals one line"
