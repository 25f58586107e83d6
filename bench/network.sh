#!/bin/sh
# bench/network.sh: the network calibration's figures (docs/network.md,
# "Figures"), written by this script rather than by hand.
#
#   sh bench/network.sh [LUMOSIM] [--docs docs/network.md]
#
# Runs `lumosim calibrate` on the AWS p5 nccl-tests rows bundled in
# tests/data/nccl (all-reduce and all-to-all at 2, 4, 8 and 16 nodes):
#   1. fitted on 2 and 8 nodes, the other node counts held out: the fitted
#      parameters, every row's measured and modelled bus bandwidth with its
#      error, and the rms and largest error per node count;
#   2. fitted on all four node counts: the parameters, checked against those
#      data/topology/aws_p5_efa.json ships (the file says it is this fit).
# Prints the section; with --docs writes it into the document between its
# BEGIN/END markers (only from a committed tree: bench/provenance.sh).
# Fitted in a second of CPU; writes nothing but the document asked for
# (the fitted topologies go to a scratch directory, removed at the end).
set -u
cd "$(dirname "$0")/.." || exit 2
. bench/provenance.sh
L=build/lumosim
DOC=
while [ $# -gt 0 ]; do
    case "$1" in
    --docs) DOC=$2; shift 2 ;;
    -*) echo "network.sh: unknown option $1" >&2; exit 2 ;;
    *) L=$1; shift ;;
    esac
done
[ -x "$L" ] || { echo "network.sh: no lumosim at $L (build first, or give its path)" >&2; exit 2; }
if [ -n "$DOC" ]; then lsim_doc_allowed "$DOC" || exit 2; fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
CSV="--nccl-csv tests/data/nccl/nccl_p5_all_reduce.csv --nccl-csv tests/data/nccl/nccl_p5_alltoall.csv"
BASE=data/topology/aws_p5_efa.json
# shellcheck disable=SC2086
"$L" calibrate $CSV --topology "$BASE" --fit-nodes 2,8 --topology-out "$tmp/t28.json" >"$tmp/fit28.txt" 2>&1 ||
    { cat "$tmp/fit28.txt" >&2; exit 1; }
# shellcheck disable=SC2086
"$L" calibrate $CSV --topology "$BASE" --topology-out "$tmp/tall.json" >"$tmp/fitall.txt" 2>&1 ||
    { cat "$tmp/fitall.txt" >&2; exit 1; }
python3 - "$tmp" "$BASE" "$(lsim_commit)" "$CSV" >"$tmp/section.md" <<'PY' || exit 1
import json, re, sys
tmp, base, commit, csv = sys.argv[1:5]
KEYS = ("ring_step_ns", "tree_hop_ns", "ring_eff", "tree_eff", "a2a_peer_ns", "a2a_eff")

def params(path):
    t = json.load(open(path))
    return {k: t[k] for k in KEYS}

def lines(path):
    rows, summ, fits = [], [], []
    for ln in open(path):
        w = ln.split()
        if ln.startswith("fit:"):
            fits.append(ln.strip())
        elif len(w) == 8 and w[0] in ("allreduce", "alltoall") and w[7] in ("fit", "held-out"):
            rows.append(w)
        elif len(w) == 6 and w[0] in ("allreduce", "alltoall") and w[5] in ("fit", "held-out"):
            summ.append(w)
    return rows, summ, fits

def fmt(k, v):
    return "%s" % format(v, ",") if k.endswith("_ns") else "%.4f" % v

out = []
p28, pall, shipped = params(tmp + "/t28.json"), params(tmp + "/tall.json"), params(base)
rows, summ, fits = lines(tmp + "/fit28.txt")
_, summall, fitsall = lines(tmp + "/fitall.txt")
out += ["Written by `sh bench/network.sh build/lumosim --docs docs/network.md` at commit %s: `lumosim calibrate "
        "%s --topology %s --fit-nodes 2,8` (then without `--fit-nodes`: all four node counts). Busbw in GB/s, "
        "measured (nccl-tests, out-of-place) and modelled; error = (model - measured) / measured; *held-out*: "
        "node counts the fit did not see." % (commit, csv, base), ""]
out += ["### Fit on 2 and 8 nodes", "", "| parameter | value |", "|---|---:|"]
out += ["| %s | %s |" % (k, fmt(k, p28[k])) for k in KEYS]
out += ["", "The fit's own summary: " + "; ".join("`%s`" % f[5:] for f in fits), ""]
out += ["| kind | nodes | rows | rms error | max error | set |", "|---|---:|---:|---:|---:|---|"]
out += ["| %s | %s | %s | %s | %s | %s |" % tuple(s) for s in summ]
out += ["", "Every row:", "", "| kind | nodes | size MB | measured | model | error | algorithm / protocol | set |",
        "|---|---:|---:|---:|---:|---:|---|---|"]
out += ["| %s |" % " | ".join(r) for r in rows]
held = [r for r in rows if r[7] == "held-out"]
big = [r for r in held if int(r[2]) >= 512 or r[0] == "alltoall" and int(r[2]) >= 256]
worst = max(big, key=lambda r: abs(float(r[5].rstrip("%"))))
out += ["", "Held-out rows of 512 MB and up (all-reduce) and 256 MB and up (all-to-all), the sizes the tests check "
        "(calibrate:network_p5): %d rows, the worst %s at %s nodes and %s MB, %s." % (
            len(big), worst[0], worst[1], worst[2], worst[5]), ""]
out += ["### Fit on all four node counts (data/topology/aws_p5_efa.json)", "",
        "| parameter | fitted | shipped |", "|---|---:|---:|"]
out += ["| %s | %s | %s |" % (k, fmt(k, pall[k]), fmt(k, shipped[k])) for k in KEYS]
same = all(abs(pall[k] - shipped[k]) <= (0.5 if k.endswith("_ns") else 5e-5) for k in KEYS)
out += ["", "The shipped topology %s this fit." % ("holds" if same else "**does not hold**"), "",
        "| kind | nodes | rows | rms error | max error | set |", "|---|---:|---:|---:|---:|---|"]
out += ["| %s | %s | %s | %s | %s | %s |" % tuple(s) for s in summall]
print("\n".join(out))
if not same:
    sys.exit("network.sh: data/topology/aws_p5_efa.json does not hold the fit on all four node counts")
PY
if [ -n "$DOC" ]; then
    lsim_doc_section "$DOC" "$tmp/section.md" bench/network.sh
    echo "network.sh: wrote the section into $DOC"
else
    cat "$tmp/section.md"
fi
