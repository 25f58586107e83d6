#!/bin/sh
# `lumosim help X` for every command of the program's own listing (the
# "commands:" section of lumosim --help, which main.c prints from its
# command table): exit 0 and exactly the bytes of `lumosim X --help`, which
# must be that command's own help ("usage: lumosim X ..."). A new command
# without a help text fails here. Then `help nosuch` exits 2 with one
# error line and nothing on stdout, and `help` alone is the main help.
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$LUMOSIM" --help >"$t/main" || fail "lumosim --help exited $?"
cmds=$(sed -n '/^commands:$/,/^$/p' "$t/main" | sed -n 's/^  \([a-z][a-z0-9_-]*\) .*/\1/p')
n=0
for c in $cmds; do
  n=$((n + 1))
  "$LUMOSIM" help "$c" >"$t/a" 2>"$t/ae"; st=$?
  [ "$st" -eq 0 ] || fail "help $c exited $st: $(cat "$t/ae")"
  "$LUMOSIM" "$c" --help >"$t/b" 2>"$t/be"; st=$?
  [ "$st" -eq 0 ] || fail "$c --help exited $st: $(cat "$t/be")"
  [ -s "$t/ae" ] && fail "help $c wrote to stderr: $(cat "$t/ae")"
  cmp -s "$t/a" "$t/b" || fail "help $c differs from $c --help: $(diff "$t/a" "$t/b" | head -5)"
  head -n 1 "$t/a" | grep -q "^usage: lumosim $c\\( \\|\$\\)" ||
    fail "help $c is not $c's help: $(head -n 1 "$t/a")"
  [ "$(wc -l <"$t/a")" -ge 3 ] || fail "help $c is $(wc -l <"$t/a") line(s), not a full help"
done
# the listing itself: every command main dispatches (11 today, help included)
[ "$n" -ge 11 ] || fail "only $n commands in the listing: $cmds"
echo "$cmds" | grep -qx help || fail "help is not listed"

"$LUMOSIM" help nosuch >"$t/o" 2>"$t/e"; st=$?
[ "$st" -eq 2 ] || fail "help nosuch exited $st, expected 2"
[ -s "$t/o" ] && fail "help nosuch wrote to stdout"
[ "$(wc -l <"$t/e")" -eq 1 ] || fail "help nosuch: $(wc -l <"$t/e") stderr lines: $(cat "$t/e")"
grep -q "^lumosim: error: .*nosuch" "$t/e" || fail "help nosuch: $(cat "$t/e")"

"$LUMOSIM" help >"$t/h" || fail "help alone exited $?"
cmp -s "$t/h" "$t/main" || fail "help alone differs from --help"
echo "ok: help for $n commands ($(echo $cmds))"
