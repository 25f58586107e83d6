#!/bin/sh
# training.sh MODE ARGS...   (environment: LUMOSIM, JSON_CHECK)
#
# The training step recovered from a trace (docs/whatif.md, "The training
# step"): whatif --identify's per-rank "training" object.
#
#   fixture FIXTURE.json
#       The hand-written step tests/data/training_step.json, field by field.
#       Expected values come from the fixture's own durations (us -> ns):
#         forward:   conv 20 + relu 5 + mul 6 = 31 us, 3 kernels
#         backward:  conv_bwd 50 + accumulate_grad 4 + all-reduce 30
#                    + relu_bwd 10 = 94 us, 4 kernels (the AccumulateGrad
#                    wrapper and the all-reduce carry no Sequence number)
#         optimizer: sgd_update 15 us; dataloader: one 3 us memcpy;
#         unknown:   the 2 us kernel without a launch (pre-window)
#         bucket:    the all-reduce of 1024 floats (4096 bytes) launched
#                    after conv_bwd + accumulate_grad (54 us, 2 kernels) of
#                    a 64 us backward pass (position 0.84375), the last
#                    backward kernel with a forward op before it conv's (7)
#         never differentiated: aten::mul (Sequence number 6), of 3.
#   shared DIR
#       The real 4-rank DDP job (ddp4_mi300): every rank's per-phase kernel
#       and memop counts and times against training_phases.py, an
#       independent reading of the trace JSON (python3; exit 77 without it
#       or without the traces).
#   oldstore OLD.h5 FIXTURE.json
#       OLD.h5 was written by lumosim before the phase columns existed
#       (the HEAD binary of the commit before them, from FIXTURE.json). It
#       must still load: info, sim (the same prediction as a store built now),
#       sim -o (the result archive embeds its graphs, copied), a what-if on
#       it, and --identify, whose training object then says the phases are
#       unknown: all 10 GPU ops without a phase.
set -u
: "${LUMOSIM:?}" "${JSON_CHECK:?}"
L=$LUMOSIM
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "training: FAIL: $*"; exit 1; }
T=ranks.0.training
mode=$1
shift
case $mode in
fixture)
    "$L" build "$1" -o "$tmp/t.h5" >/dev/null 2>"$tmp/err" || fail "build: $(cat "$tmp/err")"
    "$L" whatif "$tmp/t.h5" --identify >"$tmp/id.json" || fail "--identify"
    "$JSON_CHECK" "$tmp/id.json" \
        "gpus==1" "len(ranks)==1" "ranks.0.rank==0" "ranks.0.layers.0==-1" \
        "$T.phases_known==true" "$T.iterations==1" \
        "$T.phases.forward.kernels==3" "$T.phases.forward.kernel_ns==31000" \
        "$T.phases.forward.memops==0" \
        "$T.phases.backward.kernels==4" "$T.phases.backward.kernel_ns==94000" \
        "$T.phases.optimizer.kernels==1" "$T.phases.optimizer.kernel_ns==15000" \
        "$T.phases.dataloader.kernels==0" "$T.phases.dataloader.memops==1" "$T.phases.dataloader.memop_ns==3000" \
        "$T.phases.zero_grad.kernels==0" "$T.phases.other.kernels==0" "$T.phases.other.memops==0" \
        "$T.phases.unknown.kernels==1" "$T.phases.unknown.kernel_ns==2000" \
        "$T.optimizer_ns==15000" "$T.backward_passes==1" \
        "$T.ddp_buckets.count==1" "$T.ddp_buckets.bytes==4096" "len($T.ddp_buckets.listed)==1" \
        "$T.ddp_buckets.listed.0.pass==0" "$T.ddp_buckets.listed.0.bytes==4096" \
        "$T.ddp_buckets.listed.0.backward_ns_before==54000" "$T.ddp_buckets.listed.0.backward_kernels_before==2" \
        "$T.ddp_buckets.listed.0.position>0.8437" "$T.ddp_buckets.listed.0.position<0.8439" \
        "len($T.ddp_buckets.listed.0.after_seqs)==1" "$T.ddp_buckets.listed.0.after_seqs.0==7" \
        "$T.unrecovered.0.count==1" "$T.unrecovered.0.of==10" \
        "$T.unrecovered.1.what==backward kernels without a forward op" \
        "$T.unrecovered.1.count==2" "$T.unrecovered.1.of==4" \
        "$T.unrecovered.2.what==forward ops never differentiated" \
        "$T.unrecovered.2.count==1" "$T.unrecovered.2.of==3" >"$tmp/check" || {
        grep FAIL "$tmp/check"
        fail "the fixture's training object"
    }
    # the rank's other keys are unchanged, and the record (no roles) has none
    "$L" whatif "$tmp/t.h5" --gpu h100 --from-gpu a100 -o "$tmp/w.h5" >"$tmp/rec.json" || fail "whatif --gpu"
    grep -q '"training"' "$tmp/rec.json" && fail "the what-if record carries a training object"
    # a what-if output keeps the phases its transforms copied
    "$L" whatif "$tmp/w.h5" --identify >"$tmp/idw.json" || fail "--identify of the what-if"
    "$JSON_CHECK" "$tmp/idw.json" "$T.phases.backward.kernels==4" "$T.phases.forward.kernels==3" >/dev/null ||
        fail "the what-if output lost the phases"
    ;;
shared)
    dir=$1
    [ -f "$dir/rank0.json.gz" ] || { echo "training: no $dir, skipped"; exit 77; }
    command -v python3 >/dev/null 2>&1 || { echo "training: no python3, skipped"; exit 77; }
    here=$(dirname "$0")
    "$L" build "$dir" -o "$tmp/j.h5" >/dev/null 2>"$tmp/err" || fail "build: $(cat "$tmp/err")"
    "$L" whatif "$tmp/j.h5" --identify >"$tmp/id.json" || fail "--identify"
    for r in 0 1 2 3; do
        python3 "$here/training_phases.py" "$dir/rank$r.json.gz" "$tmp/id.json" "$r" || fail "rank $r"
    done
    # the DDP job's structure: 3 steps, one backward pass each, 5 buckets
    # per pass, every GPU op with a phase
    "$JSON_CHECK" "$tmp/id.json" "ranks.*.training.iterations==3" "ranks.*.training.backward_passes==3" \
        "ranks.*.training.ddp_buckets.count==15" "ranks.*.training.unrecovered.0.count==0" \
        "ranks.*.training.phases.optimizer.kernels>0" >"$tmp/check" || {
        grep FAIL "$tmp/check"
        fail "ddp4 structure"
    }
    ;;
oldstore)
    old=$1
    "$L" info "$old" >/dev/null 2>"$tmp/err" || fail "info of the old store: $(cat "$tmp/err")"
    "$L" build "$2" -o "$tmp/new.h5" >/dev/null 2>&1 || fail "build"
    "$L" sim --json "$old" >"$tmp/old.json" || fail "sim of the old store"
    "$L" sim --json "$tmp/new.h5" >"$tmp/new.json" || fail "sim"
    a=$(grep -o '"predicted_ns":[0-9]*' "$tmp/old.json")
    b=$(grep -o '"predicted_ns":[0-9]*' "$tmp/new.json")
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "the old store predicts differently ($a vs $b)"
    "$L" sim "$old" -o "$tmp/res.h5" >/dev/null 2>"$tmp/err" || fail "sim -o of the old store: $(cat "$tmp/err")"
    "$L" info "$tmp/res.h5" >/dev/null 2>"$tmp/err" || fail "info of its result archive: $(cat "$tmp/err")"
    "$L" whatif "$old" --identify >"$tmp/id.json" || fail "--identify of the old store"
    "$L" whatif "$tmp/new.h5" --identify >"$tmp/idn.json" || fail "--identify"
    "$JSON_CHECK" "$tmp/id.json" "$T.phases_known==false" "$T.phases.unknown.kernels==9" \
        "$T.phases.unknown.memops==1" "$T.phases.forward.kernels==0" "$T.phases.backward.kernels==0" \
        "$T.unrecovered.0.count==10" "$T.unrecovered.0.of==10" "$T.ddp_buckets.count==0" \
        "collectives.world==$(grep -o '"world":[0-9]*' "$tmp/idn.json" | head -1 | cut -d: -f2)" \
        >"$tmp/check" || {
        grep FAIL "$tmp/check"
        fail "the old store's identification"
    }
    "$L" whatif "$old" --gpu h100 --from-gpu a100 -o "$tmp/w.h5" >/dev/null 2>"$tmp/err" ||
        fail "what-if on the old store: $(cat "$tmp/err")"
    "$L" info "$tmp/w.h5" >/dev/null || fail "info of the what-if of the old store"
    ;;
*) fail "unknown mode $mode" ;;
esac
echo "training $mode: ok"
