#!/bin/sh
# synth_ranks.sh MPIEXEC NPFLAG [FLAGS...] --
# lumosim synth under the launcher (issue 20): each rank synthesizes its
# share of the GPUs and the store is written collectively.
#  1. At K = 1, 2, 3 and 4 the store equals the serial one: h5diff finds no
#     difference in any dataset or attribute (the command line included:
#     every run is made from its own directory with the same arguments),
#     every dataset has the serial one's type, shape, chunks and filters
#     (h5dump -p -H, less the allocation time, which parallel HDF5 makes
#     early), and rank 0 prints the serial memory estimate. Jobs: 1F1B with
#     a GPU count no K divides evenly; interleaved with the Megatron
#     options; a 2-GPU job at K = 3 and 4 (ranks with no GPU at all); and
#     each of them again written in batches of one GPU
#     (LUMOSIM_SYNTH_BATCH_MB=1: many rounds, the 64 Ki-row chunks filled
#     by several ranks and rounds).
#  2. Bad arguments, a bad model, an output that cannot be written or is
#     an input: at K = 2 and 3, exactly the serial error line, the
#     serial exit status on every rank, no store and no temporary left.
# Environment: LUMOSIM; PART=stores or errors runs only that part; ONLY_K=K
# writes each store at that K only (the sanitizer build: K = 3 runs the
# uneven split and, with the 2-GPU job, a rank without GPUs).
set -u
PART=${PART:-all}
launcher=$1
npflag=$2
shift 2
flags=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags="$flags $1"; shift; done
[ $# -gt 0 ] && shift
for t in h5diff h5dump; do
    command -v $t >/dev/null 2>&1 || { echo "SKIP: $t not found"; exit 77; }
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "synth_ranks: $*"; exit 1; }

# the dataset properties h5dump shows, less the file name and the
# allocation time (parallel HDF5 allocates chunks early)
props() { h5dump -p -H "$1" | sed -e '1d' -e '/H5D_ALLOC_TIME/d'; }

# same_store NAME K: run K's store against the serial one
same_store() {
    h5diff -q "$tmp/s/$1.h5" "$tmp/k$2/$1.h5" >/dev/null 2>&1 ||
        { h5diff "$tmp/s/$1.h5" "$tmp/k$2/$1.h5" | head -20; fail "$1, K = $2: the store differs from the serial one"; }
    props "$tmp/s/$1.h5" >"$tmp/p1"
    props "$tmp/k$2/$1.h5" >"$tmp/pk"
    cmp -s "$tmp/p1" "$tmp/pk" || { diff "$tmp/p1" "$tmp/pk" | head -20; fail "$1, K = $2: dataset properties differ"; }
    cmp -s "$tmp/s/$1.out" "$tmp/k$2/$1.out" || { cat "$tmp/k$2/$1.out"; fail "$1, K = $2: not the serial report"; }
}

# job NAME KS SYNTH-OPTIONS...: serial, then under the launcher at each K
job() {
    name=$1 ks=${ONLY_K:-$2}
    shift 2
    mkdir -p "$tmp/s"
    (cd "$tmp/s" && "$LUMOSIM" synth "$@" -o "$name.h5" >"$name.out" 2>"$tmp/err") ||
        { cat "$tmp/err"; fail "$name: serial synth failed"; }
    for k in $ks; do
        mkdir -p "$tmp/k$k"
        # shellcheck disable=SC2086
        (cd "$tmp/k$k" && $launcher $npflag "$k" $flags "$LUMOSIM" synth "$@" -o "$name.h5" >"$name.out" 2>"$tmp/err") ||
            { cat "$tmp/err"; fail "$name: synth at K = $k failed"; }
        same_store "$name" "$k"
        ls "$tmp/k$k" | grep -q 'tmp-' && fail "$name, K = $k: a temporary file was left"
    done
    echo "ok: $name: the serial store at K = $ks"
}
if [ "$PART" != errors ]; then
job 1f1b "1 2 3 4" --model gpt3-15b --tp 2 --pp 2 --dp 3 --micro-batch 1 --global-batch 12 --no-memory-check
job interleaved "2 3 4" --model gpt3-15b --tp 2 --pp 4 --dp 1 --micro-batch 1 --global-batch 8 \
    --schedule interleaved:2 --sequence-parallel --distributed-optimizer --recompute selective --no-memory-check
job small "3 4" --model gpt3-15b --tp 2 --pp 1 --dp 1 --micro-batch 1 --global-batch 2 --no-memory-check
# batches of one GPU: the serial writer in many batches equals the default,
# and every K writes in many rounds (the ranks inherit the launcher's
# environment)
export LUMOSIM_SYNTH_BATCH_MB=1
mkdir -p "$tmp/b"
(cd "$tmp/b" && "$LUMOSIM" synth --model gpt3-15b --tp 2 --pp 2 --dp 3 --micro-batch 1 --global-batch 12 \
    --no-memory-check -o 1f1b.h5 >/dev/null) || fail "serial synth in batches of one GPU failed"
h5diff -q "$tmp/s/1f1b.h5" "$tmp/b/1f1b.h5" || fail "the serial store in batches of one GPU differs"
rm -rf "$tmp/s" "$tmp"/k?
job 1f1b_rounds "2 3 4" --model gpt3-15b --tp 2 --pp 2 --dp 3 --micro-batch 1 --global-batch 12 --no-memory-check
job interleaved_rounds "3" --model gpt3-15b --tp 2 --pp 4 --dp 1 --micro-batch 1 --global-batch 8 \
    --schedule interleaved:2 --no-memory-check
unset LUMOSIM_SYNTH_BATCH_MB
fi
[ "$PART" = stores ] && exit 0

# bad NAME STATUS SYNTH-ARGS...: the serial line and status at K = 2, 3
good="--model gpt3-15b --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 4 --no-memory-check"
bad() {
    name=$1 want=$2
    shift 2
    d=$tmp/bad
    rm -rf "$d"
    mkdir -p "$d/out.h5.dir"
    printf '{"layers":4,"hidden":1024,"ffn":4096,"heads":16}\n' >"$d/model.json"
    (cd "$d" && "$LUMOSIM" synth "$@" >/dev/null 2>"$d/err1")
    [ $? -eq "$want" ] || fail "$name: the serial synth did not exit with $want"
    grep 'lumosim: error' "$d/err1" >"$d/line1"
    [ "$(wc -l <"$d/line1")" -eq 1 ] || { cat "$d/err1"; fail "$name: no single serial error line"; }
    for k in 2 3; do
        rm -f "$d/rcs"
        # each rank's own exit status, appended by a shell around it
        # shellcheck disable=SC2086
        (cd "$d" && $launcher $npflag $k $flags sh -c 'lsim=$1; rcs=$2; shift 2; "$lsim" synth "$@" >/dev/null; echo $? >>"$rcs"' \
            sh "$LUMOSIM" "$d/rcs" "$@" 2>"$d/errN")
        grep 'lumosim: error' "$d/errN" >"$d/lineN"
        cmp -s "$d/line1" "$d/lineN" || { cat "$d/line1" "$d/errN"; fail "$name, K = $k: not the serial error line, once"; }
        [ "$(grep -c . "$d/rcs")" -eq $k ] && [ "$(grep -cx "$want" "$d/rcs")" -eq $k ] ||
            { cat "$d/rcs"; fail "$name, K = $k: not every rank exited with $want"; }
        ls "$d" | grep -q 'tmp-' && fail "$name, K = $k: a temporary file was left"
        [ ! -e "$d/job.h5" ] || fail "$name, K = $k: a store was left"
        grep -q '"heads":16}' "$d/model.json" || fail "$name, K = $k: the input model.json was overwritten"
    done
    echo "ok: $name: the serial error line once, status $want on every rank"
}
# shellcheck disable=SC2086
bad usage 2 $good --tp 2 -o job.h5
bad bad_value 2 --model gpt3-15b --tp two --pp 2 --dp 1 --micro-batch 1 --global-batch 4 -o job.h5
bad model 1 --model no-such-model --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 4 -o job.h5
# shellcheck disable=SC2086
bad gpus 1 $good --gpus 5 -o job.h5
# shellcheck disable=SC2086
bad no_dir 1 $good -o no/such/dir/job.h5
# shellcheck disable=SC2086
bad is_dir 1 $good -o out.h5.dir
bad input_as_output 1 --model model.json --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 4 -o model.json
export LUMOSIM_SYNTH_BATCH_MB=0
# shellcheck disable=SC2086
bad batch_env 1 $good -o job.h5
unset LUMOSIM_SYNTH_BATCH_MB
echo "ok: synth under the launcher"
