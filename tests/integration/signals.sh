#!/bin/bash
# signals.sh   (environment: LUMOSIM)
#
# Issue 40, "Leftovers after a kill": every signal whose default ends the
# program (SIGHUP, what a closed terminal or ssh session sends; SIGQUIT;
# SIGUSR1/2, a batch system's warnings; and SIGINT, SIGTERM as before)
# removes the writer's temporary NAME.tmp-PID.HOST and an archive's
# NAME.lock, and the program dies of the signal (exit 128 + its number).
# The signal lands deterministically: LUMOSIM_TEST_PAUSE=commit stops each
# writer with its temporary complete and the lock held, after a notice on
# stderr; the test waits for that notice (polling stderr, bounded by the
# notice, not by a guess of how long the work takes) and then signals.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
L=$LUMOSIM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-signals.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
ulimit -c 0 # SIGQUIT's default dumps core: not here
cd "$tmp" || exit 1
"$L" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 4 -o s.h5 >/dev/null 2>&1 ||
    { echo "FAIL: synth"; exit 1; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# killed SIG NAME OUT COMMAND...: COMMAND writes OUT; signal it at the pause
killed() {
    local sig=$1 name=$2 out=$3 pid rc i num left
    shift 3
    # each writer its own stderr file, created before it starts: a shared
    # one could still hold the previous writer's notice when the loop first
    # reads it (the child truncates it only after the fork), and the signal
    # would land before this writer's handler is installed (a background
    # job starts with SIGINT and SIGQUIT ignored: lost, the writer paused
    # for good)
    local err=err.$name
    : >"$err"
    LUMOSIM_TEST_PAUSE=commit "$@" >/dev/null 2>"$err" &
    pid=$!
    while :; do # until the notice, or the writer ends without one (bound by work: no deadline)
        grep -q 'paused before commit' "$err" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    grep -q 'paused before commit' "$err" || { fail "$name: no pause notice: $(head -c 300 "$err")"; wait "$pid"; return; }
    ls "$out".tmp-"$pid".* >/dev/null 2>&1 || fail "$name: no temporary $out.tmp-$pid.* at the pause: $(ls)"
    [ -e "$out.lock" ] || fail "$name: no lock $out.lock at the pause: $(ls)" # every writer holds one
    kill -s "$sig" "$pid"
    wait "$pid"
    rc=$?
    num=$(kill -l "$sig")
    [ "$rc" -eq $((128 + num)) ] || fail "$name: exit $rc, want $((128 + num)) (died of SIG$sig)"
    grep -q 'stopped by a signal' "$err" || fail "$name: no 'stopped by a signal' line: $(head -c 300 "$err")"
    left=$(ls | grep -F "$out" | tr '\n' ' ')
    [ -z "$left" ] || fail "$name: left $left"
    [ -n "$left" ] || echo "ok: $name: exit $rc, nothing left"
}

for sig in HUP QUIT USR1 USR2 INT TERM; do
    killed "$sig" "store_$sig" new.h5 "$L" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 1 --micro-batch 1 \
        --global-batch 4 -o new.h5
    killed "$sig" "archive_$sig" res.h5 "$L" sim s.h5 -o res.h5 # an archive holds res.h5.lock
done
# two writers of one new store (issue 40): the first pauses before its
# commit holding new2.h5.lock; a second writer that may not wait
# (LUMOSIM_LOCK_TIMEOUT=0) is refused with one line naming the file, writes
# nothing, and the first's store is the one that lands once it goes on
LUMOSIM_TEST_PAUSE=commit "$L" synth --model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 1 --micro-batch 1 \
    --global-batch 4 -o new2.h5 >/dev/null 2>err1 &
first=$!
for i in $(seq 1 3000); do
    grep -q 'paused before commit' err1 2>/dev/null && break
    kill -0 "$first" 2>/dev/null || break
    sleep 0.05
done
if grep -q 'paused before commit' err1; then
    LUMOSIM_LOCK_TIMEOUT=0 "$L" synth --model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 \
        --global-batch 1 -o new2.h5 >/dev/null 2>err2
    rc=$?
    [ "$rc" -ne 0 ] || fail "second writer of new2.h5: exit 0 while the first held the lock"
    [ "$(wc -l <err2)" -eq 1 ] && grep -q 'new2.h5' err2 || fail "second writer: not one line naming new2.h5: $(head -c 300 err2)"
    [ ! -e new2.h5 ] || fail "second writer wrote new2.h5 while the first held the lock"
    kill -TERM "$first"
    wait "$first"
    [ -z "$(ls | grep -F new2.h5)" ] || fail "two writers left $(ls | grep -F new2.h5)"
    [ "$rc" -ne 0 ] && echo "ok: a second writer of one store is refused while the first holds its lock"
else
    fail "two writers: the first never paused: $(head -c 300 err1)"
    wait "$first"
fi

# and without the hook the same commands finish: the pause is the hook's only
"$L" sim s.h5 -o res.h5 >/dev/null 2>&1 || fail "sim -o res.h5 without the hook"
[ -z "$(ls | grep -E 'tmp-|\.lock')" ] || fail "a normal run left $(ls)"

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "PASS"
