#!/bin/sh
# link_sharing.sh TEST_DATA   (environment: LUMOSIM)
#
# lumosim sim --link-sharing (netshare.h, docs/network.md "Link sharing")
# on synthesized jobs over the test fabrics of TEST_DATA/netshare:
#  1. GPT-3 15B (4 layers) at TP 2 PP 2 DP 2 on fat2 (2 GPUs per node, one
#     node per leaf, 2:1 uplinks): the pipeline and data-parallel transfers
#     cross nodes and share NICs and uplinks, so the job is slower with
#     sharing than without, and --stats reports the flows and that some
#     were slowed; the stats say the passes reached a fixed point.
#  2. TP 2 alone (one node): no network flow, the report is the same
#     as without sharing but for its "network" object (0 flows).
#  3. Bad input: a missing topology file, an oversubscribed fat tree
#     without "link_sharing": true, --share-passes 0 and --share-passes
#     without --link-sharing: exit non-zero, one "lumosim: error:" line
#     naming the file or the flag, no archive written.
set -u
dir=$1/netshare
: "${LUMOSIM:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "link sharing: $*"; exit 1; }

"$LUMOSIM" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 8 \
    --topology "$dir/fat2.json" --no-memory-check -o "$tmp/j.h5" >/dev/null 2>"$tmp/err" || fail "synth: $(cat "$tmp/err")"
"$LUMOSIM" sim --json "$tmp/j.h5" >"$tmp/alone.json" 2>"$tmp/err" || fail "sim: $(cat "$tmp/err")"
"$LUMOSIM" sim --json --stats --link-sharing "$dir/fat2.json" "$tmp/j.h5" >"$tmp/shared.json" 2>"$tmp/err" ||
    fail "sim --link-sharing: $(cat "$tmp/err")"
span() { sed -n 's/.*"job":{[^}]*"predicted_ns":\([0-9]*\).*/\1/p' "$1"; }
a=$(span "$tmp/alone.json")
s=$(span "$tmp/shared.json")
[ -n "$a" ] && [ -n "$s" ] || fail "no job span in the reports"
[ "$s" -gt "$a" ] || fail "with sharing the job took $s ns, not more than $a ns without"
grep -q "link sharing: [1-9][0-9]* passes (a fixed point), [1-9][0-9]* flows, [1-9][0-9]* slowed" "$tmp/err" ||
    fail "no fixed point, no flows or none slowed: $(cat "$tmp/err")"
# the report's network object (docs/report-json.md): only with sharing
grep -q '"network":{"model":"link_sharing","passes":[1-9][0-9]*,"converged":true,"flows":[1-9]' "$tmp/shared.json" ||
    fail "no network object in the shared report"
grep -q '"network"' "$tmp/alone.json" && fail "a network object without --link-sharing"
"$LUMOSIM" sim --json --link-sharing "$dir/fat2.json" --share-passes 1 "$tmp/j.h5" >"$tmp/p1.json" 2>"$tmp/err" ||
    fail "--share-passes 1: $(cat "$tmp/err")"
echo "ok: fat2 TP2 PP2 DP2: $a ns alone, $s ns shared, $(span "$tmp/p1.json") ns after one pass"

"$LUMOSIM" synth --model gpt3-15b --layers 4 --tp 2 --pp 1 --dp 1 --micro-batch 1 --global-batch 2 \
    --topology "$dir/fat2.json" --no-memory-check -o "$tmp/one.h5" >/dev/null 2>"$tmp/err" || fail "synth: $(cat "$tmp/err")"
"$LUMOSIM" sim --json "$tmp/one.h5" >"$tmp/o1.json" && "$LUMOSIM" sim --json --link-sharing "$dir/fat2.json" \
    "$tmp/one.h5" >"$tmp/o2.json" || fail "sim of the one-node job failed"
python3 - "$tmp/o1.json" "$tmp/o2.json" <<'PY' || fail "one node: the report changed with sharing"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
n = b.pop("network")
assert n["flows"] == 0 and n["slowed"] == 0, n
assert a == b
PY
echo "ok: one node: the same report, with a network object of no flow"

# bad input: exit status, one error line naming what is wrong, no archive
bad() {
    what=$1 names=$2
    shift 2
    "$LUMOSIM" sim "$@" "$tmp/j.h5" -o "$tmp/r.h5" >"$tmp/out" 2>"$tmp/err" && fail "$what: accepted"
    [ "$(grep -c 'lumosim: error:' "$tmp/err")" -eq 1 ] || fail "$what: not one error line: $(cat "$tmp/err")"
    grep -q -- "$names" "$tmp/err" || fail "$what: the line does not name $names: $(cat "$tmp/err")"
    [ -e "$tmp/r.h5" ] && fail "$what: an archive was written"
    echo "ok: $what: $(cat "$tmp/err")"
}
bad "missing file" "$tmp/none.json" --link-sharing "$tmp/none.json"
sed '/link_sharing/d; s/"oversubscription": 2,/"oversubscription": 2/' "$dir/fat2.json" >"$tmp/nokey.json"
bad "fat tree without link_sharing" "$tmp/nokey.json: .*link_sharing" --link-sharing "$tmp/nokey.json"
bad "passes 0" "--share-passes" --link-sharing "$dir/fat2.json" --share-passes 0
"$LUMOSIM" sim --share-passes 2 "$tmp/j.h5" >/dev/null 2>"$tmp/err" && fail "--share-passes alone: accepted"
grep -q -- "--link-sharing" "$tmp/err" || fail "--share-passes alone: $(cat "$tmp/err")"
echo "ok: --share-passes alone refused"
