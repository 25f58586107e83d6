#!/bin/sh
# comm_like.sh DEEPEP_DIR   (environment: LUMOSIM)
# tests/data/deepep's DeepEP kernels renamed to a name no row of the table
# of communication kernels knows ("my_ep::all_to_all_*"): they are replayed
# as compute, but counted and named (JSON unknown_comm_kernels, a text
# warning), never kept silently.
set -u
: "${LUMOSIM:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "comm_like: FAIL: $*"; exit 1; }
mkdir "$tmp/job" || fail "mkdir"
for r in 0 1; do sed 's/deep_ep::intranode::/my_ep::all_to_all_/' "$1/rank$r.json" >"$tmp/job/rank$r.json" || fail "copy"; done
n=$(grep -c '"name": "void my_ep::all_to_all_' "$tmp/job/rank0.json")
[ "$n" = 2 ] || fail "the fixture has $n renamed kernels on rank 0, want 2"
"$LUMOSIM" replay --json "$tmp/job" >"$tmp/rep.json" || fail "replay --json"
"$LUMOSIM" replay "$tmp/job" >"$tmp/rep.txt" || fail "replay"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for r in d['ranks']:
    u = r.get('unknown_comm_kernels')
    assert u and u['count'] == int(sys.argv[2]) and 'my_ep::all_to_all_' in u['example'], u
" "$tmp/rep.json" "$n" || fail "JSON unknown_comm_kernels"
[ "$(grep -c 'kernels look like communication' "$tmp/rep.txt")" = 2 ] || fail "text: no warning per rank"
"$LUMOSIM" replay --json "$1" | grep -q unknown_comm_kernels && fail "the known DeepEP names are reported as unknown"
echo "comm_like: unknown communication-like kernels counted and named"
