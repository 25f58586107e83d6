#!/bin/sh
# coupling_counts.sh JOBDIR   (environment: LUMOSIM)
#
# Each rank's "collectives" object (report JSON: per kind, collective
# kernels coupled across the job and kept with their traced duration)
# against the trace itself: on a real 8-rank job (megatron_tp8_a100) every
# rank's coupled kernels are exactly the NCCL kernels its trace holds and
# none is traced; with --independent the same kernels are all traced and
# none coupled; sim of the job's graph store gives the same counts (the
# result archive keeps them: gpus/coll_coupled, coll_traced; the MPI tests
# compare the reports read back from it). Exits 77 without the traces.
set -u
: "${LUMOSIM:?}"
D=$1
[ -e "$D/rank0.json.gz" ] || { echo "coupling_counts: $D missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "coupling_counts: FAIL: $*"; exit 1; }
"$LUMOSIM" replay --json "$D" >"$tmp/job.json" || fail "replay"
"$LUMOSIM" replay --json --independent "$D" >"$tmp/ind.json" || fail "replay --independent"
"$LUMOSIM" build "$D" -o "$tmp/job.h5" >/dev/null || fail "build"
"$LUMOSIM" sim --json "$tmp/job.h5" >"$tmp/sim.json" || fail "sim"
python3 - "$D" "$tmp" <<'PY' || exit 1
import gzip, json, os, sys
d, t = sys.argv[1], sys.argv[2]
bad = []
def nccl(path):
    ev = json.load(gzip.open(path))["traceEvents"]
    return sum(1 for e in ev if e.get("cat") == "kernel" and "nccl" in str(e.get("name", "")).lower())
for mode in ("job", "ind", "sim"):
    doc = json.load(open(os.path.join(t, mode + ".json")))
    for i, r in enumerate(doc["ranks"]):
        n = nccl(os.path.join(d, "rank%d.json.gz" % i))
        c = r["collectives"]
        coupled = sum(x["coupled"] for x in c.values())
        traced = sum(x["traced"] for x in c.values())
        want = (n, 0) if mode != "ind" else (0, n)
        if (coupled, traced) != want:
            bad.append("%s rank %d: coupled %d traced %d, the trace has %d NCCL kernels" % (mode, i, coupled, traced, n))
if bad:
    print("coupling_counts: FAIL:", "; ".join(bad)); sys.exit(1)
print("coupling_counts: every rank's NCCL kernels coupled (traced with --independent)")
PY
