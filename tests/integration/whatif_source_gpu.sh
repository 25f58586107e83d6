#!/bin/sh
# whatif_source_gpu.sh TRACE_A100 FIXTURE   (environment: LUMOSIM, JSON_CHECK)
#
# The source GPU of a what-if on a trace comes from the trace's
# deviceProperties (the store's "device" attribute), not from an H100
# assumed in silence:
#   - --gpu a100 on an A100 trace changes nothing: the simulated job is the
#     plain one to the nanosecond (with H100 assumed it was re-timed);
#   - the record names where the source GPU came from;
#   - a trace that names no GPU: --gpu is refused with one line asking for
#     --from-gpu, and works with it; the store's GPU is carried to the
#     what-if's output store for the next what-if.
set -u
: "${LUMOSIM:?}" "${JSON_CHECK:?}"
L=$LUMOSIM
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "whatif_source_gpu: FAIL: $*"; exit 1; }
"$L" build "$1" -o "$tmp/a.h5" >/dev/null 2>&1 || fail "build"
"$L" sim --json "$tmp/a.h5" >"$tmp/plain.json" || fail "sim"
"$L" whatif "$tmp/a.h5" --gpu a100 -o "$tmp/aa.h5" >"$tmp/rec.json" || fail "whatif --gpu a100"
"$L" sim --json "$tmp/aa.h5" >"$tmp/aa.json" || fail "sim aa"
want=$(grep -o '"predicted_ns":[0-9]*' "$tmp/plain.json" | tail -1 | cut -d: -f2)
"$JSON_CHECK" "$tmp/aa.json" "job.predicted_ns==$want" >/dev/null || fail "--gpu a100 on an A100 trace changed the job ($(grep -o '"predicted_ns":[0-9]*' "$tmp/aa.json" | tail -1) vs $want)"
grep -q '"from_how":"deviceProperties","from":"a100"' "$tmp/rec.json" || fail "the record does not say the source GPU came from deviceProperties"
# the chained what-if knows the GPU of its source store
"$L" whatif "$tmp/aa.h5" --gpu h100 -o "$tmp/ah.h5" >"$tmp/rec2.json" || fail "whatif of a what-if"
grep -q '"from":"a100"' "$tmp/rec2.json" || fail "the what-if store did not keep its GPU"
# no deviceProperties: refused without --from-gpu, one line, nothing written
sed 's/"deviceProperties"/"removedProperties"/' "$2" >"$tmp/nodev.json"
"$L" build "$tmp/nodev.json" -o "$tmp/n.h5" >/dev/null 2>&1 || fail "build nodev"
"$L" whatif "$tmp/n.h5" --gpu h100 -o "$tmp/nh.h5" >"$tmp/out" 2>"$tmp/err"
st=$?
[ "$st" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- '--from-gpu' "$tmp/err" && [ ! -e "$tmp/nh.h5" ] ||
    fail "no deviceProperties: exit $st, $(cat "$tmp/err")"
"$L" whatif "$tmp/n.h5" --gpu h100 --from-gpu a100 -o "$tmp/nh.h5" >/dev/null 2>&1 || fail "--from-gpu a100 refused"
echo "whatif_source_gpu: ok"
