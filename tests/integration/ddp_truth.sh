#!/usr/bin/env bash
# ddp_truth.sh DDP4_DIR   (environment: LUMOSIM, JSON_CHECK)
#
# Predictions of a real 4-rank DDP training job (ddp4_mi300: forward,
# backward with bucketed gradient all-reduces from the autograd thread,
# optimizer; RCCL) checked against the job that really ran -- ground truth,
# not self-consistency:
#   layout     the world-group all-reduces launched by the backward thread
#              are data parallel: DP 4, TP 1 (not TP 4)
#   identity   whatif --dp 4 of the traced job simulates to exactly the
#              plain replay's prediction
#   replicate  --replicate-from 0 with the whole job given: every rank's
#              "actual" is that rank's own trace (the real job), and the job
#              span and each rank's window are predicted within 5 %
#   dp 1 -> 4  the job cut to one GPU (buckets kept in a group of one) and
#              widened back to four: job span and each rank's window within
#              5 % of the real job
#   buckets    DDP's bucket rule over each rank's AccumulateGrad sizes
#              (whatif --identify, gradients.first_pass_bytes) gives exactly
#              the all-reduces the rank really launched
#   DP-1 trace rank 0 with every collective removed (tests/data/tools/
#              strip_collectives.py: a DP-1 training trace), widened to four
#              with the buckets inserted from its AccumulateGrad sizes: job
#              span and each rank's window within 5 % of the real job
# Exits 77 (skipped) when the shared traces are absent.
set -u
: "${LUMOSIM:?}" "${JSON_CHECK:?}"
D=$1
[ -e "$D/rank0.json.gz" ] || { echo "ddp_truth: $D missing: skipped"; exit 77; }
command -v python3 >/dev/null || { echo "ddp_truth: python3 missing: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "ddp_truth: FAIL: $*"; exit 1; }
L=$LUMOSIM
mkdir "$tmp/job" && cp "$D"/rank[0-3].json.gz "$tmp/job/"
"$L" replay --json "$tmp/job" >"$tmp/real.json" || fail "replay of the real job"
"$L" build "$tmp/job" -o "$tmp/ddp.h5" >/dev/null || fail "build"
"$L" whatif "$tmp/ddp.h5" --identify >"$tmp/id.json" || fail "identify"
"$JSON_CHECK" "$tmp/id.json" "layout.dp==4" "layout.tp==1" "layout.pp==1" >/dev/null || fail "layout is not DP 4: $(head -c 200 "$tmp/id.json")"

"$L" whatif "$tmp/ddp.h5" --dp 4 -o "$tmp/same.h5" >/dev/null || fail "whatif --dp 4 (identity)"
"$L" sim --json "$tmp/same.h5" >"$tmp/same.json" || fail "sim identity"

"$L" replay --json --replicate-from 0 "$tmp/job" >"$tmp/rep.json" || fail "replay --replicate-from 0"

"$L" whatif "$tmp/ddp.h5" --dp 1 -o "$tmp/dp1.h5" >/dev/null || fail "whatif --dp 1"
"$L" whatif "$tmp/dp1.h5" --dp 4 -o "$tmp/dp14.h5" >/dev/null || fail "whatif --dp 4 from the DP 1 cut"
"$L" sim --json "$tmp/dp14.h5" >"$tmp/dp14.json" || fail "sim of the widened job"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
python3 "$SRC/tests/data/tools/strip_collectives.py" "$D/rank0.json.gz" "$tmp/dp1.json.gz" >/dev/null || fail "strip_collectives.py"
"$L" build "$tmp/dp1.json.gz" -o "$tmp/trace1.h5" >/dev/null || fail "build of the DP-1 trace"
"$L" whatif "$tmp/trace1.h5" --dp 4 -o "$tmp/trace14.h5" >"$tmp/trace14.rec" || fail "whatif --dp 4 from the DP-1 trace"
"$L" sim --json "$tmp/trace14.h5" >"$tmp/trace14.json" || fail "sim of the DP-1 trace widened"

python3 - "$tmp" <<'PY' || exit 1
import json, sys
t = sys.argv[1]
real = json.load(open(t + "/real.json"))
same = json.load(open(t + "/same.json"))
rep = json.load(open(t + "/rep.json"))
w = json.load(open(t + "/dp14.json"))
bad = []
def within(name, pred, act, tol):
    e = (pred - act) / act
    print("%-28s predicted %10.3f ms  real %10.3f ms  error %+6.2f %%" % (name, pred / 1e6, act / 1e6, 100 * e))
    if abs(e) > tol:
        bad.append(name)
if same["job"]["predicted_ns"] != real["job"]["predicted_ns"]:
    bad.append("identity: %d != %d" % (same["job"]["predicted_ns"], real["job"]["predicted_ns"]))
ja = real["job"]["actual_ns"]
# --replicate-from: measured against the real job, not rank 0's own trace
if rep["job"]["actual_ns"] != ja:
    bad.append("replicate: job actual %d is not the real job's %d" % (rep["job"]["actual_ns"], ja))
for r, x in zip(real["ranks"], rep["ranks"]):
    if x["window"]["actual_ns"] != r["window"]["actual_ns"]:
        bad.append("replicate: a rank's actual window is not its own trace's")
within("replicate-from 0: job", rep["job"]["predicted_ns"], ja, 0.05)
for i, (r, x) in enumerate(zip(real["ranks"], rep["ranks"])):
    within("replicate-from 0: rank %d" % i, x["window"]["predicted_ns"], r["window"]["actual_ns"], 0.05)
within("dp 1 -> 4: job", w["job"]["predicted_ns"], ja, 0.05)
for i, (r, x) in enumerate(zip(real["ranks"], w["ranks"])):
    within("dp 1 -> 4: rank %d" % i, x["window"]["predicted_ns"], r["window"]["actual_ns"], 0.05)
# DDP's bucket rule against the buckets each rank really launched
ident = json.load(open(t + "/id.json"))
for r in ident["ranks"]:
    tr = r["training"]
    real_b = [b["bytes"] for b in tr["ddp_buckets"]["listed"] if b["pass"] == 0]
    pred_b = tr["gradients"]["first_pass_bytes"]
    print("rank %d buckets: traced %s, DDP rule %s" % (r["rank"], real_b, pred_b))
    if real_b != pred_b or tr["gradients"]["ddp_buckets"] != tr["ddp_buckets"]["count"]:
        bad.append("rank %d: DDP rule buckets %s, traced %s" % (r["rank"], pred_b, real_b))
rec = json.load(open(t + "/trace14.rec"))
ins = [x for x in rec["transformations"] if x["name"] == "grad-buckets"]
if not ins or ins[0]["nodes_added"]["kernel"] != len(ident["ranks"][0]["training"]["gradients"]["first_pass_bytes"]) * 3:
    bad.append("the DP-1 trace's widening did not insert 5 buckets x 3 passes: %s" % (ins,))
t14 = json.load(open(t + "/trace14.json"))
within("DP-1 trace -> 4: job", t14["job"]["predicted_ns"], ja, 0.05)
for i, (r, x) in enumerate(zip(real["ranks"], t14["ranks"])):
    within("DP-1 trace -> 4: rank %d" % i, x["window"]["predicted_ns"], r["window"]["actual_ns"], 0.05)
if bad:
    print("ddp_truth: FAIL:", "; ".join(bad))
    sys.exit(1)
print("ddp_truth: all within 5 % of the real job")
PY
