#!/bin/sh
# ablate_alone.sh JOBDIR: ablate on a job's rank files says that it
# simulates each alone (the table in its head; with --json, a note on
# stderr), its JSON says ranks_coupled false, and its full variant's window
# error per rank is exactly replay --independent's.
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
d=$1
[ -d "$d" ] || { echo "SKIP: $d is missing"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed"; exit 77; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "ablate_alone: FAIL: $*"; exit 1; }
"$LUMOSIM" ablate "$d" >"$t/table" || fail "ablate"
grep -q "^each of the [0-9]* traces is simulated alone" "$t/table" || fail "no note that the ranks run alone: $(head -3 "$t/table")"
"$LUMOSIM" ablate --json "$d" >"$t/a.json" 2>"$t/a.err" || fail "ablate --json"
grep -q "^lumosim: note: each of the [0-9]* traces is simulated alone" "$t/a.err" ||
  fail "ablate --json: no note on stderr that the ranks run alone: $(cat "$t/a.err")"
"$LUMOSIM" replay --independent --json "$d" >"$t/r.json" || fail "replay --independent"
python3 - "$t/a.json" "$t/r.json" <<'PY' || fail "see above"
import json, sys
a, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["ranks_coupled"] is False, a.get("ranks_coupled")
full = {t["source"]: t["variants"][0] for t in a["traces"]}
assert all(v["variant"] == "full" for v in full.values())
ind = {x["source"]: x["window"]["error"] for x in r["ranks"]}
assert set(full) == set(ind) and len(full) > 1, (sorted(full), sorted(ind))
for s, v in full.items():
    assert v["window_error"] == ind[s], (s, v["window_error"], ind[s])
PY
echo "ablate_alone: each rank alone, as replay --independent"
