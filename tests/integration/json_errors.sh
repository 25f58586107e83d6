#!/bin/sh
# json_errors.sh TRACE: with --json, an error is one JSON object on stderr,
# {"error": MESSAGE, "file": PATH or null}, with the exit code of the same
# command without --json, whose one "lumosim: error: " line carries the same
# MESSAGE; nothing on stdout either way. And every command takes --version.
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
trace=$1
[ -e "$trace" ] || { echo "SKIP: $trace missing"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is needed to parse the JSON"; exit 77; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "json_errors: FAIL: $*"; exit 1; }
echo "not a trace" >"$t/bad.json"
"$LUMOSIM" synth --model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 --global-batch 1 -o "$t/job.h5" \
    >/dev/null 2>&1 || fail "synth"
n=0
# each case: FILE-OR-null COMMAND... (the command gets --json added first)
check() {
    want_file=$1
    shift
    cmd=$1
    shift
    "$LUMOSIM" "$cmd" "$@" >"$t/out1" 2>"$t/err1"
    st1=$?
    "$LUMOSIM" "$cmd" --json "$@" >"$t/out2" 2>"$t/err2"
    st2=$?
    [ "$st1" -ne 0 ] || fail "$cmd $*: exited 0"
    [ "$st1" = "$st2" ] || fail "$cmd $*: exit $st1 without --json, $st2 with it"
    [ -s "$t/out1" ] || [ -s "$t/out2" ] && fail "$cmd $*: something on stdout"
    [ "$(wc -l <"$t/err1")" = 1 ] && [ "$(wc -l <"$t/err2")" = 1 ] || fail "$cmd $*: not one stderr line: $(cat "$t/err1" "$t/err2")"
    python3 - "$t/err1" "$t/err2" "$want_file" <<'PY' || fail "$cmd $*: $(cat "$t/err2")"
import json, sys
text = open(sys.argv[1]).read().rstrip("\n")
obj = json.loads(open(sys.argv[2]).read())
assert text.startswith("lumosim: error: "), text
assert set(obj) == {"error", "file"}, obj
assert obj["error"] == text[len("lumosim: error: "):], (obj["error"], text)
want = None if sys.argv[3] == "null" else sys.argv[3]
assert obj["file"] == want, (obj["file"], want)
PY
    n=$((n + 1))
}
check "$t/nosuch.json" replay "$t/nosuch.json"
check "$t/bad.json" replay "$t/bad.json"
check null replay --no-such-option "$trace"
check "$t/bad.json" sim "$t/bad.json"
check null sim "$t/job.h5" --bin-ms 0
check "$t/nosuch.json" ablate "$t/nosuch.json"
check null search --model nosuch --gpus 8 --global-batch 8
for c in replay sim build synth whatif info report ablate calibrate collect search; do
    v=$("$LUMOSIM" $c --version) || fail "$c --version exited $?"
    [ "$v" = "$("$LUMOSIM" --version)" ] || fail "$c --version printed '$v'"
done
echo "json_errors: $n errors as JSON objects, with the exit codes and messages of the text form; --version on every command"
