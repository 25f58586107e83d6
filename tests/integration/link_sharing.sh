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
#  1b. The figures in the archive (attribute network), the text report,
#     report RESULT.h5 --html and the Python reader, against the --json
#     report's network object; each busiest link busy at most the span.
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

# 1b. the figures everywhere a user reads them (issue 37's reporting): the
# archive's attribute network is the --json report's network object; its
# busiest links are busy at most the flows' span (a link shared max-min
# fairly is never loaded past its capacity) and utilization = busy / span;
# the text report names the busiest link with that utilization; report
# RESULT.h5 --html draws the card with every busiest link; the Python
# reader gives the same dict. A run without sharing has no attribute.
"$LUMOSIM" sim --link-sharing "$dir/fat2.json" "$tmp/j.h5" -o "$tmp/net.h5" >"$tmp/shared.txt" 2>"$tmp/err" ||
    fail "sim --link-sharing -o: $(cat "$tmp/err")"
"$LUMOSIM" sim "$tmp/j.h5" -o "$tmp/net0.h5" >/dev/null 2>"$tmp/err" || fail "sim -o: $(cat "$tmp/err")"
"$LUMOSIM" report "$tmp/net.h5" --html "$tmp/net.html" 2>"$tmp/err" || fail "report --html: $(cat "$tmp/err")"
if python3 -c "import h5py" 2>/dev/null; then
    PYTHONPATH="${LSIM_SOURCE_DIR:-$(dirname "$0")/../..}/python${PYTHONPATH:+:$PYTHONPATH}" python3 - "$tmp" <<'PY' || fail "the archive's network figures"
import json, sys, h5py
t = sys.argv[1]
rep = json.load(open(t + "/shared.json"))["network"]
with h5py.File(t + "/net.h5", "r") as f:
    a = f["/runs/sim"].attrs["network"]
    net = json.loads(a.decode() if isinstance(a, bytes) else a)
with h5py.File(t + "/net0.h5", "r") as f:
    assert "network" not in f["/runs/sim"].attrs, "a network attribute without --link-sharing"
assert net == rep, ("the archive's network differs from the report's", net, rep)
hot = net["hottest_links"]
assert net["flows"] > 0 and net["slowed"] > 0 and len(hot) > 0, net
for h in hot:
    assert 0 < h["busy_ns"] <= net["span_ns"], h
    assert abs(h["utilization"] - h["busy_ns"] / net["span_ns"]) < 1e-12, h
assert [h["busy_ns"] for h in hot] == sorted((h["busy_ns"] for h in hot), reverse=True), hot
# per kind: the kinds' figures add up to the totals; the most delayed are
# slowed flows, most delayed first, no more delayed than the worst slowdown
kinds = net["by_kind"]
assert sum(k["flows"] for k in kinds) == net["flows"], kinds
assert sum(k["slowed"] for k in kinds) == net["slowed"], kinds
assert sum(k["alone_ns"] for k in kinds) == net["alone_ns"] and sum(k["shared_ns"] for k in kinds) == net["shared_ns"], kinds
late = net["most_delayed"]
assert 0 < len(late) <= 8, late
d = [x["shared_ns"] - x["alone_ns"] for x in late]
assert all(v > 0 for v in d) and d == sorted(d, reverse=True), late
assert all(x["shared_ns"] <= net["max_slowdown"] * x["alone_ns"] * (1 + 1e-9) for x in late), late
txt = open(t + "/shared.txt").read()
k0 = next(k for k in kinds)
want = "%s %d flows (%d slowed) %.3f -> %.3f ms" % (k0["kind"], k0["flows"], k0["slowed"], k0["alone_ns"] * 1e-6, k0["shared_ns"] * 1e-6)
assert want in txt, (want, txt[-800:])
want = "busiest links (utilization over the flows' span): %s %.1f %%" % (hot[0]["link"], 100 * hot[0]["utilization"])
assert want in txt, (want, txt[-600:])
page = open(t + "/net.html").read()
assert "<h3>Network (link sharing)</h3>" in page
for h in hot:
    row = "<td class=\"l\">%s</td><td>%.3f</td><td>%.1f %%</td>" % (h["link"], h["busy_ns"] * 1e-6, 100 * h["utilization"])
    assert row in page, ("no card row", row)
for k in kinds:
    row = "<td class=\"l\">%s</td><td>%d</td><td>%d</td><td>%.3f</td><td>%.3f</td>" % (
        k["kind"], k["flows"], k["slowed"], k["alone_ns"] * 1e-6, k["shared_ns"] * 1e-6)
    assert row in page, ("no kind row", row)
try:
    import lumosim
except ImportError:
    lumosim = None
if lumosim is not None:
    runs = lumosim.load(t + "/net.h5", kernels=False).runs
    assert runs.loc[0, "network"] == net, "the Python reader's network differs"
print("ok: the archive, the text, the page and the reader carry the report's network figures (%d links)" % len(hot))

# 1c. Every flow and every loaded link (the archive's net_flows and
# net_links): the rows add up to the report's figures, the quantiles are
# the rows' (nearest rank, computed here), and the NIC links carry exactly
# the flows' transfers: alone, a collective loads each participant's NIC
# both ways at full rate, a send the sender's transmit and the receiver's
# receive, so the NICs' busy time is sum(alone x 2 x participants) over
# collectives plus sum(alone x 2) over sends, however the flows shared.
import math
with h5py.File(t + "/net.h5", "r") as f:
    F = {k: f["/runs/sim/net_flows/" + k][()] for k in f["/runs/sim/net_flows"]}
    L = {k: f["/runs/sim/net_links/" + k][()] for k in f["/runs/sim/net_links"]}
    kn = [x.decode() for x in f["/runs/sim/net_flows/kind"].attrs["enum_names"]]
with h5py.File(t + "/net0.h5", "r") as f:
    assert "net_flows" not in f["/runs/sim"] and "net_links" not in f["/runs/sim"], "tables without sharing"
n = len(F["gpu"])
assert n == net["flows"], (n, net["flows"])
assert sum(int(x) for x in F["alone"]) == net["alone_ns"] and sum(int(x) for x in F["shared"]) == net["shared_ns"]
assert sum(1 for a, b in zip(F["alone"], F["shared"]) if b > a) == net["slowed"]
assert all(b >= a > 0 for a, b in zip(F["alone"], F["shared"])), "a flow faster shared than alone"
for k in kinds:
    rows = [i for i in range(n) if kn[F["kind"][i]] == k["kind"]]
    assert len(rows) == k["flows"] and sum(int(F["shared"][i]) for i in rows) == k["shared_ns"], k
order = [(int(F["start"][i]), int(F["gpu"][i]) << 32 | int(F["node"][i])) for i in range(n)]
assert order == sorted(order), "flows not in the sweep's (start, key) order"
slow = sorted(int(b) / int(a) for a, b in zip(F["alone"], F["shared"]))
rank = lambda x, q: x[max(1, math.ceil(q * len(x))) - 1]
assert abs(max(slow) - net["max_slowdown"]) < 1e-9 * net["max_slowdown"]
assert abs(rank(slow, 0.5) - net["flow_slowdown"]["p50"]) < 1e-12 and abs(rank(slow, 0.95) - net["flow_slowdown"]["p95"]) < 1e-12
m = len(L["link"])
assert m == net["links_used"] and list(L["link"]) == sorted(L["link"]), "links not every loaded one, by id"
names = [x.decode() for x in L["name"]]
busy = [float(x) for x in L["busy"]]
top = sorted(range(m), key=lambda i: (-busy[i], int(L["link"][i])))[:len(hot)]
assert [(names[i], busy[i]) for i in top] == [(h["link"], h["busy_ns"]) for h in hot], "hottest links differ from the table"
util = sorted(b / net["span_ns"] for b in busy)
assert abs(rank(util, 0.5) - net["link_utilization"]["p50"]) < 1e-12 and abs(rank(util, 0.9) - net["link_utilization"]["p90"]) < 1e-12
nic = sum(b for b, nm in zip(busy, names) if " nic " in nm)
assert abs(nic - net["busy_ns"]["nic"]) <= 1e-9 * nic and abs(sum(busy) - nic - net["busy_ns"]["leaf_uplink"]) <= 1e-9 * sum(busy)
want = sum(int(F["alone"][i]) * 2 * (1 if kn[F["kind"][i]] == "sendrecv" else int(F["participants"][i])) for i in range(n))
assert abs(nic - want) <= 1e-6 * want, ("the NICs carry %.0f ns, the flows put %d on them" % (nic, want))
assert all(0 < b <= net["span_ns"] * (1 + 1e-12) for b in busy) and all(int(x) >= 1 for x in L["flows"])
txt_line = "every link: %d carried traffic, utilization median %.1f %%, p90 %.1f %%" % (
    m, 100 * net["link_utilization"]["p50"], 100 * net["link_utilization"]["p90"])
assert txt_line in txt, (txt_line, txt[-900:])
assert ("Every link: %d carried traffic" % m) in page
# the histograms (tenths of utilization; slowdown from the edges the JSON
# gives), recomputed from the rows, in the report, the text and the page
uh = [0] * 10
for u in util:
    uh[min(9, int(math.floor(u * 10)))] += 1
edges = net["flow_slowdown"]["edges"]
assert edges == [1, 1.1, 1.25, 1.5, 2, 3, 4], edges
sh = [0] * len(edges)
for x in slow:
    sh[max(k for k in range(len(edges)) if x >= edges[k])] += 1
assert net["link_utilization"]["histogram"] == uh and net["flow_slowdown"]["histogram"] == sh, (net, uh, sh)
assert ("links by utilization (tenths, 0-10 % first): " + " ".join(map(str, uh))) in txt, txt[-900:]
assert ("): " + " ".join(map(str, sh)) + "\n") in txt, txt[-900:]
for k in range(10):
    assert ("<tr><td class=\"l\">%d-%d %%</td><td>%d</td>" % (10 * k, 10 * k + 10, uh[k])) in page, k
if lumosim is not None:
    res = lumosim.load(t + "/net.h5", kernels=False)
    fl, li = res.network_flows(), res.network_links()
    assert len(fl) == n and list(fl["shared_ns"]) == [int(x) for x in F["shared"]] and list(fl["kind"]) == [kn[k] for k in F["kind"]]
    assert list(li["name"]) == names and abs(li["utilization"].max() - hot[0]["utilization"]) < 1e-12
    assert lumosim.load(t + "/net0.h5", kernels=False).network_flows() is None
print("ok: %d flows and %d links in the archive add up to the report; the NICs carry the flows' transfers" % (n, m))
PY
else
    echo "skipped part 1b: python3-h5py is not installed"
fi

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

# 4. The symmetry reduction under link sharing (symmetry.h, docs/scaling.md
# "Symmetry reduction"): the classes are computed again after each sweep,
# the shared transfers in the instances' colours. GPT-3 15B TP2 PP2 DP8
# (32 GPUs). On fat2 the same links lie under every replica: the 2 pipeline
# stages' classes stay, one GPU simulated per class. On ecmp2 the flows hash
# onto different paths, the replicas' transfers differ and the classes
# split until every GPU is its own (the run goes on with every GPU's
# engine). Either way the archive and the report are --symmetry off's.
for case in fat2:2 ecmp2:32; do
    top=${case%%:*} want=${case##*:}
    "$LUMOSIM" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 8 --micro-batch 1 --global-batch 32 \
        --topology "$dir/$top.json" --no-memory-check -o "$tmp/s_$top.h5" >/dev/null 2>"$tmp/err" ||
        fail "synth DP 8 on $top: $(cat "$tmp/err")"
    opts="--json --critical-path --detail nodes --link-sharing $dir/$top.json"
    # shellcheck disable=SC2086
    "$LUMOSIM" sim --stats $opts "$tmp/s_$top.h5" -o "$tmp/on.h5" >"$tmp/on.json" 2>"$tmp/err" ||
        fail "sim on $top: $(cat "$tmp/err")"
    classes=$(sed -n 's/^lumosim: stats: symmetry: \([0-9]*\) classes of 32 GPUs.*/\1/p' "$tmp/err")
    [ "$classes" = "$want" ] || fail "$top: ${classes:-no} classes after sharing, expected $want: $(cat "$tmp/err")"
    if [ "$want" = 2 ]; then
        grep -q "symmetry: 2 classes of 32 GPUs .*one GPU simulated per class" "$tmp/err" ||
            fail "$top: not reduced: $(cat "$tmp/err")"
    fi
    # shellcheck disable=SC2086
    "$LUMOSIM" sim --symmetry off $opts "$tmp/s_$top.h5" -o "$tmp/off.h5" >"$tmp/off.json" 2>"$tmp/err" ||
        fail "sim --symmetry off on $top: $(cat "$tmp/err")"
    h5diff -q --exclude-path /runs/sim/provenance "$tmp/on.h5" "$tmp/off.h5" >/dev/null 2>&1 ||
        fail "$top: the reduced archive under sharing differs from the full one"
    cmp -s "$tmp/on.json" "$tmp/off.json" || fail "$top: the reduced report under sharing differs from the full one"
    rm -f "$tmp/on.h5" "$tmp/off.h5"
    echo "ok: $top DP 8 with sharing: $classes classes, the same results as every GPU simulated"
done
