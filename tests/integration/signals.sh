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
    # for good). A background job of a script starts with SIGINT and
    # SIGQUIT ignored, and lumosim leaves an ignored signal ignored (as
    # nohup needs): the subshell gives them back their default first.
    local err=err.$name
    : >"$err"
    ( trap - INT QUIT; export LUMOSIM_TEST_PAUSE=commit; exec "$@" ) >/dev/null 2>"$err" &
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

# paused NAME ERR: wait until writer pid NAME has said it is paused in ERR
# (or has ended); bound by the work, not by a deadline
paused() {
    while ! grep -q 'paused before' "$2" 2>/dev/null && kill -0 "$1" 2>/dev/null; do sleep 0.05; done
    grep -q 'paused before' "$2"
}
S1="--model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 1 --micro-batch 1 --global-batch 4" # 4 GPUs
S2="--model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 --global-batch 1" # 1 GPU
"$L" synth $S1 -o ref1.h5 >/dev/null 2>&1 && "$L" synth $S2 -o ref2.h5 >/dev/null 2>&1 || fail "synth of the references"
gpus() { "$L" info "$1" 2>/dev/null | grep -E '^  [0-9]+ GPUs: '; }
[ -n "$(gpus ref1.h5)" ] && [ "$(gpus ref1.h5)" != "$(gpus ref2.h5)" ] || fail "info cannot tell the two stores apart"

# SIGHUP inherited as ignored (nohup, issue 40) stays ignored: the run
# outlives the terminal and its output lands. The HUP is sent at the pause
# before the SIGWINCH that lets the writer go on, so a handler would have
# ended the run first (exit 129).
: >err.nohup
( trap '' HUP; export LUMOSIM_TEST_PAUSE=commit; exec "$L" sim s.h5 -o nohup.h5 ) >/dev/null 2>err.nohup &
pid=$!
if paused "$pid" err.nohup; then
    kill -s HUP "$pid"
    kill -s WINCH "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" -eq 0 ] || fail "nohup: exit $rc after SIGHUP, want 0 (SIGHUP was ignored): $(head -c 300 err.nohup)"
    "$L" info nohup.h5 >/dev/null 2>&1 || fail "nohup: nohup.h5 is not a readable archive"
    [ -z "$(ls | grep -E 'nohup\.h5\.(tmp-|lock)')" ] || fail "nohup: left $(ls | grep nohup)"
    [ "$rc" -eq 0 ] && echo "ok: nohup: SIGHUP ignored, exit 0, nohup.h5 written"
else
    fail "nohup: no pause notice: $(head -c 300 err.nohup)"
    wait "$pid"
fi

# two writers of one new store (issue 40), each a store the other did not
# check: the second is refused with one line, whether it waited for the
# lock (the first paused at its commit) or got it after the first had
# finished (itself paused before taking it); the store is the first's.
# two_writers NAME POINT: POINT is where the paused writer stops
two_writers() {
    local name=$1 point=$2 out=$1.h5 p w first second rc1 rc2
    rm -f "$out" err.a err.b
    : >err.a
    : >err.b
    if [ "$point" = commit ]; then # the first pauses holding the lock; the second waits for it
        LUMOSIM_TEST_PAUSE=commit "$L" synth $S1 -o "$out" >/dev/null 2>err.a &
        p=$!
        paused "$p" err.a || { fail "$name: no pause: $(head -c 300 err.a)"; wait "$p"; return; }
        "$L" synth $S2 -o "$out" >/dev/null 2>err.b &
        w=$!
        while ! grep -q 'waiting for another lumosim' err.b && kill -0 "$w" 2>/dev/null; do sleep 0.05; done
        grep -q 'waiting for another lumosim' err.b || fail "$name: the second did not wait: $(head -c 300 err.b)"
        kill -s WINCH "$p"
        wait "$p"
        rc1=$?
        wait "$w"
        rc2=$?
    else # the second checks first and pauses before the lock; the first runs to the end
        LUMOSIM_TEST_PAUSE=begin "$L" synth $S2 -o "$out" >/dev/null 2>err.b &
        w=$!
        paused "$w" err.b || { fail "$name: no pause: $(head -c 300 err.b)"; wait "$w"; return; }
        "$L" synth $S1 -o "$out" >/dev/null 2>err.a
        rc1=$?
        kill -s WINCH "$w"
        wait "$w"
        rc2=$?
    fi
    [ "$rc1" -eq 0 ] || fail "$name: the first writer: exit $rc1: $(head -c 300 err.a)"
    [ "$rc2" -ne 0 ] || fail "$name: the second writer exited 0: one store silently replaced"
    [ "$(grep -c 'error:' err.b)" -eq 1 ] && grep 'error:' err.b | grep -q "$out: already holds a lumosim graph store; add --force" ||
        fail "$name: the second writer did not give one line naming $out and --force: $(head -c 400 err.b)"
    [ "$(gpus "$out")" = "$(gpus ref1.h5)" ] || fail "$name: $out is not the first writer's store: $(gpus "$out")"
    [ -z "$(ls | grep -E "$name\.h5\.(tmp-|lock)")" ] || fail "$name: left $(ls | grep "$name")"
    [ "$rc2" -ne 0 ] && echo "ok: $name: the second writer refused, the first's store kept"
}
two_writers waited commit
two_writers later begin
# with --force the second replaces the first's store, as it was told to
LUMOSIM_TEST_PAUSE=begin "$L" synth $S2 -o forced.h5 --force >/dev/null 2>err.b &
w=$!
if paused "$w" err.b; then
    "$L" synth $S1 -o forced.h5 >/dev/null 2>&1 || fail "forced: the first writer failed"
    kill -s WINCH "$w"
    wait "$w" || fail "forced: the second writer (--force) failed: $(head -c 300 err.b)"
    [ "$(gpus forced.h5)" = "$(gpus ref2.h5)" ] || fail "forced: forced.h5 is not the second (--force) writer's store"
else
    fail "forced: no pause: $(head -c 300 err.b)"
    wait "$w"
fi

# and without the hook the same commands finish: the pause is the hook's only
"$L" sim s.h5 -o res.h5 >/dev/null 2>&1 || fail "sim -o res.h5 without the hook"
[ -z "$(ls | grep -E 'tmp-|\.lock')" ] || fail "a normal run left $(ls)"

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "PASS"
