#!/bin/sh
# sm_contention.sh MAKER   (environment: LUMOSIM)
#
# Concurrent kernels competing for SMs (issue 16; graph.h LSIM_EDGE_SM,
# the rule in include/internal/sched_inline.h sched_sm_hold), on the one-GPU trace
# tests/data/tools/make_sm_contention.py writes: a long kernel that fills
# every SM with a small kernel launched on another stream while it runs,
# then a long kernel limited by shared memory that leaves room beside it,
# with a small kernel launched the same way. Asserted against the
# predicted trace (--trace-out), with the waves and the room computed here
# from the fixture's own grid, block, registers, shared memory and
# deviceProperties:
#  - with --sm-contention on, the held kernel starts when the long one's
#    last wave begins: predicted start(L) + dur(L) - dur(L) / waves(L);
#  - with it off (the default), it starts before that, when its launch
#    makes it ready (the long kernel's second wave at the latest);
#  - the kernel that fits starts at the same time on and off (not delayed),
#    and the long kernels do not move;
#  - --latency observed reproduces the trace exactly either way (the SM
#    edge agrees with the traced schedule), and on adds exactly one edge.
set -u
: "${LUMOSIM:?}"
MAKER=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sm_contention: FAIL: $*"; exit 1; }
python3 "$MAKER" "$tmp/sm.json" || fail "fixture maker"
for m in off on; do
    "$LUMOSIM" replay --sm-contention $m --trace-out "$tmp/$m.trace.json" "$tmp/sm.json" >/dev/null || fail "replay ($m)"
    "$LUMOSIM" replay --json --sm-contention $m "$tmp/sm.json" >"$tmp/$m.json" || fail "replay --json ($m)"
    "$LUMOSIM" replay --json --latency observed --sm-contention $m "$tmp/sm.json" >"$tmp/$m.obs.json" ||
        fail "replay --latency observed ($m)"
done
python3 - "$tmp" <<'PY' || exit 1
import json, sys
from decimal import Decimal
tmp = sys.argv[1]
fx = json.load(open(tmp + "/sm.json"))
dev = fx["deviceProperties"][0]
cfg = {e["name"]: e for e in fx["traceEvents"] if e.get("cat") == "kernel"}

def resident(a):
    thr = a["block"][0] * a["block"][1] * a["block"][2]
    warps = -(-thr // dev["warpSize"])
    r = min(32, dev["maxThreadsPerMultiprocessor"] // dev["warpSize"] // warps,
            dev["regsPerMultiprocessor"] // (a["registers per thread"] * thr))
    if a["shared memory"]:
        r = min(r, dev["sharedMemPerMultiprocessor"] // a["shared memory"])
    return r, thr, warps

def blocks(a):
    return a["grid"][0] * a["grid"][1] * a["grid"][2]

def waves(name):
    a = cfg[name]["args"]
    r = resident(a)[0]
    return -(-blocks(a) // (dev["numSms"] * r))

def fits(long, small):
    a, b = cfg[long]["args"], cfg[small]["args"]
    r, ta, wa = resident(a)
    _, tb, wb = resident(b)
    return ((r * wa + wb) * dev["warpSize"] <= dev["maxThreadsPerMultiprocessor"] and
            r * a["registers per thread"] * ta + b["registers per thread"] * tb <= dev["regsPerMultiprocessor"] and
            r * a["shared memory"] + b["shared memory"] <= dev["sharedMemPerMultiprocessor"] and r + 1 <= 32)

def kernels(m):
    d = json.load(open("%s/%s.trace.json" % (tmp, m)), parse_float=Decimal)
    return {e["name"]: (int(e["ts"] * 1000), int(e["dur"] * 1000)) for e in d["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") == "kernel"}

ok = True
def check(c, msg):
    global ok
    if not c:
        print("sm_contention: FAIL:", msg)
        ok = False

# the fixture is what this test is about: one kernel that holds every SM, one that leaves room
check(waves("L_fill") >= 2 and not fits("L_fill", "K_small"), "fixture: L_fill should fill the GPU for K_small")
check(waves("L_smem") >= 2 and fits("L_smem", "K_fit"), "fixture: K_fit should fit beside L_smem")
on, off = kernels("on"), kernels("off")
ls, ld = on["L_fill"]
want = ls + ld - ld // waves("L_fill")
check(on["K_small"][0] == want, "K_small starts at %d ns with --sm-contention on, expected %d "
      "(L_fill's last wave: %d + %d - %d / %d waves)" % (on["K_small"][0], want, ls, ld, ld, waves("L_fill")))
check(off["K_small"][0] < off["L_fill"][0] + ld * 2 // waves("L_fill"),
      "K_small starts at %d ns with --sm-contention off, expected before L_fill's second wave ends" % off["K_small"][0])
check(on["K_fit"] == off["K_fit"], "K_fit (fits beside L_smem) moved: %s on, %s off" % (on["K_fit"], off["K_fit"]))
ms, md = on["L_smem"]
check(ms <= on["K_fit"][0] < ms + md - md // waves("L_smem"),
      "K_fit starts at %d ns, expected before L_smem's last wave (it runs beside L_smem's full waves)" % on["K_fit"][0])
for k in ("L_fill", "L_smem"):
    check(on[k] == off[k], "%s moved: %s on, %s off" % (k, on[k], off[k]))
for m in ("on", "off"):
    ne = json.load(open("%s/%s.obs.json" % (tmp, m)))["ranks"][0]["node_error"]
    check(ne["max_abs_start_ns"] == 0 and ne["max_abs_end_ns"] == 0,
          "--latency observed --sm-contention %s: node error %d / %d ns, expected 0" % (
              m, ne["max_abs_start_ns"], ne["max_abs_end_ns"]))
gon = json.load(open(tmp + "/on.json"))["ranks"][0]["graph"]["inferred_edges"]
goff = json.load(open(tmp + "/off.json"))["ranks"][0]["graph"]["inferred_edges"]
check(gon == goff + 1, "inferred edges %d on, %d off: expected one SM edge (K_small's)" % (gon, goff))
sys.exit(0 if ok else 1)
PY
echo "sm_contention: ok"
