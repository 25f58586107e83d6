#!/bin/bash
# time_reversed.sh TRACE   (environment: LUMOSIM)
# A trace whose time runs backwards (every ts negated, durations kept:
# issue 40) is refused by replay, build and report with one line that
# names the file and says time runs backwards, exit 1, nothing written.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
L=$LUMOSIM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-rev.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 - "$1" "$tmp/rev.json.gz" <<'PY' || { echo "FAIL: cannot make the reversed trace"; exit 1; }
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1], "rt"))
for e in d["traceEvents"]:
    if "ts" in e:
        e["ts"] = -float(e["ts"])
json.dump(d, gzip.open(sys.argv[2], "wt"))
PY
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cd "$tmp" || exit 1
for cmd in "replay rev.json.gz" "build rev.json.gz -o s.h5" "report rev.json.gz --html r.html"; do
    # shellcheck disable=SC2086
    "$L" $cmd >out 2>err
    rc=$?
    [ $rc -eq 1 ] || fail "$cmd: exit $rc, want 1"
    [ "$(wc -l <err)" -eq 1 ] && grep -q "rev.json.gz" err && grep -q "time runs backwards" err ||
        fail "$cmd: want one line naming rev.json.gz and 'time runs backwards': $(head -c 300 err)"
    [ ! -s out ] || fail "$cmd: wrote to stdout"
    [ ! -e s.h5 ] && [ ! -e r.html ] || fail "$cmd: wrote an output"
done
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo PASS
