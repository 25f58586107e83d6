#!/bin/sh
# comm_kernels.sh JOBDIR: the table of communication kernels that are not
# NCCL's (src/read/kineto.c, docs/execution-trace.md). The shared Megatron job's
# NCCL all-reduce kernels renamed as a custom all-reduce
# (cross_device_reduce_2stage) replay exactly as the original: the same
# collectives per kind, coupled, the same breakdown. Renamed as DeepEP
# kernels, without the execution traces (DeepEP records no
# record_param_comms), they are all-to-all communication that keeps its
# traced durations: every one counted, exposed communication > 0. Renamed
# to a name no table row knows, they are compute and the exposed
# communication is gone -- what the table is for.
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
d=$1
[ -d "$d" ] || { echo "SKIP: $d is missing"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
tool=$here/../data/tools/rename_kernels.py
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "comm_kernels: FAIL: $*"; exit 1; }
"$LUMOSIM" replay --json "$d" >"$t/orig.json" || fail "replay of $d"
for v in "custom:void cross_device_reduce_2stage<half, 8>(RankData*, RankSignals, Signal*, half*, int, int)" \
         "deepep:void deep_ep::intranode::combine<8, 768>(int4*, float*, int4 const*, float const*)" \
         "unknown:void my_fused_kernel<half>(half*, int)"; do
    name=${v%%:*} kname=${v#*:}
    et=""
    [ "$name" = custom ] || et=--no-et
    python3 "$tool" $et "$d" "$t/$name" ncclDevKernel_AllReduce "$kname" >/dev/null || fail "rename ($name)"
    "$LUMOSIM" replay --json "$t/$name" >"$t/$name.json" || fail "replay ($name)"
done
python3 - "$t" <<'PY' || fail "see above"
import json, os, sys
t = sys.argv[1]
load = lambda n: json.load(open(os.path.join(t, n + ".json")))
o = load("orig")
def summary(d):
    ranks = d["ranks"]
    return ([(r["collectives"], r["breakdown"]["predicted"]) for r in ranks],
            d["job"]["predicted_ns"] if "job" in d else None)
so = summary(o)
assert any(k != "other" and v.get("coupled", 0) > 0 for r in o["ranks"] for k, v in r["collectives"].items()
           if isinstance(v, dict)), "the original has no coupled collective"
assert summary(load("custom")) == so, "custom all-reduce: differs from the NCCL original"
comm = lambda d: sum(r["breakdown"]["predicted"]["exposed_comm_ns"] for r in d["ranks"])
assert comm(o) > 0, "no exposed communication in the original"
dp = load("deepep")
for ro, rd in zip(o["ranks"], dp["ranks"]):
    n = sum(v["coupled"] + v["traced"] for v in ro["collectives"].values())
    c = rd["collectives"]
    assert set(c) == {"alltoall"} and c["alltoall"]["traced"] + c["alltoall"]["coupled"] == n, (c, n)
assert comm(dp) > 0, "DeepEP kernels: no exposed communication"
u = load("unknown")
assert comm(u) == 0, "renamed to an unknown kernel, communication remains: %d" % comm(u)
PY
echo "comm_kernels: a custom all-reduce replays as NCCL's, DeepEP kernels are all-to-all communication, an unknown name is compute"
