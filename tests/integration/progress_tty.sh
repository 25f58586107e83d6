#!/bin/sh
# progress_tty.sh TRACE
# A progress line goes to stderr only when stderr is a terminal: under a
# pseudo-terminal (script(1)) the output must contain the progress text;
# with stderr redirected to a file, stderr must stay empty.
# Environment: LUMOSIM = the lumosim binary. Exits 77 without script(1).
set -u
command -v script >/dev/null 2>&1 || { echo "script(1) not available: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$LUMOSIM" replay "$1" >"$tmp/out" 2>"$tmp/err" || { echo "replay failed"; exit 1; }
if [ -s "$tmp/err" ]; then
    echo "stderr is not a terminal, yet something was written to it:"; cat "$tmp/err"; exit 1
fi
script -qec "\"$LUMOSIM\" replay \"$1\" >/dev/null" "$tmp/typescript" >/dev/null 2>&1 </dev/null || { echo "replay under a pty failed"; exit 1; }
if ! grep -q "simulating" "$tmp/typescript"; then
    echo "no progress line under a terminal:"; cat "$tmp/typescript"; exit 1
fi
echo "ok: progress only on a terminal"
