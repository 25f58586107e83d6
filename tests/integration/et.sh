#!/bin/sh
# et.sh bad DATA_DIR        bad execution traces beside a good Kineto trace
# et.sh megatron SHARED_DIR the execution traces of the Megatron set
# Environment: LUMOSIM, JSON_CHECK, ET_DUMP (tests/integration/et_dump.c).
#
# bad: tests/data/et/mini.json is staged with each tests/data/et/bad_*.et.json*
# as its sibling execution trace; replay must exit 1 with one error line
# naming the execution trace and nothing on stdout. The good sibling
# (mini.et.json) pairs both collective kernels.
#
# megatron: what lsim_et_read finds in rank*.et.json.gz (ops, kernel-launching
# ops, bytes, groups as size/op-count pairs) must equal python3's own reading
# of the JSON; a replay of the directory pairs every NCCL kernel (counted by
# python3 in each rank*.json.gz) with an ET op; an ET whose k-th call has
# another kind, or one call fewer, is refused naming both files. Exits 77
# without ../shared or python3.
set -u
mode=$1
dir=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-et.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# one_error NAME WANT... : the last replay in $tmp/out, $tmp/err
one_error() {
    name=$1
    shift
    [ "$rc" -eq 1 ] || fail "$name: exit $rc, want 1 ($(cat "$tmp/err"))"
    [ ! -s "$tmp/out" ] || fail "$name: output on stdout"
    [ "$(wc -l <"$tmp/err" | tr -d ' ')" -eq 1 ] || fail "$name: not one error line: $(cat "$tmp/err")"
    grep -q '^lumosim: error: ' "$tmp/err" || fail "$name: not an error line: $(cat "$tmp/err")"
    for w in "$@"; do
        grep -qF -- "$w" "$tmp/err" || fail "$name: error does not say '$w': $(cat "$tmp/err")"
    done
    echo "ok: $name: $(cat "$tmp/err")"
}

case "$mode" in
bad)
    D=$dir/et
    mkdir "$tmp/s"
    cp "$D/mini.json" "$tmp/s/mini.json" || exit 1
    cp "$D/mini.et.json" "$tmp/s/mini.et.json" || exit 1
    "$LUMOSIM" replay --stats --json "$tmp/s/mini.json" >"$tmp/out" 2>"$tmp/err" || fail "good sibling: $(cat "$tmp/err")"
    grep -qF "execution trace $tmp/s/mini.et.json: 2 of 2 collective kernels paired, 2 took their process group from it" \
        "$tmp/err" || fail "good sibling: no pairing line: $(cat "$tmp/err")"
    "$JSON_CHECK" "$tmp/out" "len(ranks)==1" >/dev/null || fail "good sibling: report"
    for f in "$D"/bad_*.et.json*; do
        rm -f "$tmp/s/mini.et.json" "$tmp/s/mini.et.json.gz"
        case "$f" in
        *.gz) et=$tmp/s/mini.et.json.gz ;;
        *) et=$tmp/s/mini.et.json ;;
        esac
        cp "$f" "$et" || exit 1
        "$LUMOSIM" replay "$tmp/s/mini.json" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        one_error "$(basename "$f")" "$et"
    done
    echo "PASS"
    ;;
megatron)
    M=$dir/megatron_tp8_a100
    [ -f "$M/rank0.et.json.gz" ] || { echo "SKIP: $M/rank0.et.json.gz missing"; exit 77; }
    command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
    for r in 0 1 2 3 4 5 6 7; do
        python3 - "$M/rank$r.et.json.gz" >"$tmp/want" <<'EOF' || fail "python3 on rank $r"
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
ops = []
groups = {}
for n in d["nodes"]:
    if n["name"] != "record_param_comms":
        continue
    v = n["inputs"]
    pos = next(i for i, x in enumerate(v) if isinstance(x, str))
    name = v[pos]
    if name == "wait":
        continue
    size = v[-1]
    pg = v[pos - 2]
    nbytes = 0
    if pos >= 4:
        for t in v[0]:
            nbytes += t[3] * t[4]
    ops.append((name, size, nbytes))
    g = groups.setdefault(pg, [size, 0])
    g[1] += 1
launching = sum(1 for o in ops if o[0] != "barrier" and o[1] != 1)
print("ops=%d launching=%d in_bytes=%d allreduce=%d groups=%d" % (
    len(ops), launching, sum(o[2] for o in ops), sum(1 for o in ops if o[0] == "allreduce"), len(groups)))
for size, n in sorted(groups.values(), reverse=True):
    print("group size=%d ops=%d" % (size, n))
EOF
        "$ET_DUMP" "$M/rank$r.et.json.gz" >"$tmp/got" || fail "et_dump on rank $r"
        diff "$tmp/want" "$tmp/got" >"$tmp/diff" || fail "rank $r: reader and python3 disagree: $(cat "$tmp/diff")"
        echo "rank $r: $(tr '\n' ' ' <"$tmp/got")"
    done
    # every NCCL kernel of each rank paired with an ET call
    "$LUMOSIM" replay --stats --json "$M" >"$tmp/r.json" 2>"$tmp/err" || fail "replay of the job: $(cat "$tmp/err")"
    "$JSON_CHECK" "$tmp/r.json" "len(ranks)==8" "ranks.*.coupled==true" >/dev/null || fail "job report"
    for r in 0 1 2 3 4 5 6 7; do
        k=$(python3 -c 'import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
print(sum(1 for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower()))' \
            "$M/rank$r.json.gz") || fail "python3 on rank$r.json.gz"
        grep -qF "$M/rank$r.json.gz: execution trace $M/rank$r.et.json.gz: $k of $k collective kernels paired, $k took their process group from it" \
            "$tmp/err" || fail "rank $r: $k kernels not all paired: $(grep "rank$r.json.gz: execution" "$tmp/err")"
    done
    echo "ok: every rank's $k NCCL kernels paired with its execution trace"
    # a call of another kind at position 9 (counting kernel-launching calls
    # from 0, in node id order), and a call missing
    mkdir "$tmp/b"
    cp "$M/rank0.json.gz" "$tmp/b/rank0.json.gz" || exit 1
    python3 - "$M/rank0.et.json.gz" "$tmp/b/rank0.et.json.gz" "$tmp/c.et.json.gz" <<'EOF' || fail "python3 edit"
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
calls = []
for n in sorted(d["nodes"], key=lambda n: n["id"]):
    if n["name"] != "record_param_comms":
        continue
    v = n["inputs"]
    pos = next(i for i, x in enumerate(v) if isinstance(x, str))
    if v[pos] != "wait" and v[-1] != 1:
        calls.append((n, pos))
n, pos = calls[9]
n["inputs"][pos] = "reduce_scatter"
with gzip.open(sys.argv[2], "wt") as f:
    json.dump(d, f)
n["inputs"][pos] = "allreduce"
d["nodes"].remove(calls[20][0])
with gzip.open(sys.argv[3], "wt") as f:
    json.dump(d, f)
EOF
    "$LUMOSIM" replay "$tmp/b/rank0.json.gz" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    one_error kind_mismatch "$tmp/b/rank0.json.gz and $tmp/b/rank0.et.json.gz" "collective #9" "different kinds"
    mv "$tmp/c.et.json.gz" "$tmp/b/rank0.et.json.gz"
    "$LUMOSIM" replay "$tmp/b/rank0.json.gz" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    one_error call_missing "$tmp/b/rank0.et.json.gz" "$k collective kernels in the trace, $((k - 1)) communication calls"
    echo "PASS"
    ;;
*)
    echo "usage: et.sh bad DATA_DIR | megatron SHARED_DIR" >&2
    exit 2
    ;;
esac
