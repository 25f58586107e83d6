#!/usr/bin/env bash
# no_data_loss.sh TRACE
#
# The writers' contract (src/write/output.c, docs/cli.md "Outputs"): no command
# destroys or changes a file that the user did not name as this run's
# output. Each refused case checks
#   - the exit status,
#   - exactly one stderr line "lumosim: error: ..." naming the file,
#   - that every file that existed before is byte-identical afterwards (cmp
#     against a copy taken before the run) and that nothing new was left
#     (no output, no temporary).
# The cases that must write check what they wrote.
#
# TRACE: a small Kineto trace (examples/megatron_tp8_rank0.json.gz).
# Environment: LUMOSIM = the lumosim binary.
set -u
: "${LUMOSIM:?set LUMOSIM to the lumosim binary}"
E=$1
L=$LUMOSIM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lsim-ndl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
pass=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { pass=$((pass + 1)); }

# --- fixtures: a trace, a graph store, a result archive with run A --------
mkdir w snap traces
cp "$E" w/in.json.gz
cp "$E" traces/rank0.json.gz
"$L" build "$E" -o w/j.h5 >/dev/null 2>&1 || { echo "setup: build failed"; exit 1; }
"$L" sim w/j.h5 -o w/r.h5 --run A >/dev/null 2>&1 || { echo "setup: sim failed"; exit 1; }
echo "keep me" > w/notes.txt

# snapshot: copy every file of w/ (and traces/) aside
snapshot() {
    rm -rf snap && mkdir snap && cp -a w traces snap/
}
# unchanged NAME: every file in the snapshot is still there, byte-identical,
# and no other file appeared
unchanged() {
    local name=$1 f
    for f in $(cd snap && find w traces -type f -o -type l | sort); do
        if [ -L "snap/$f" ]; then
            [ -L "$f" ] && [ "$(readlink "$f")" = "$(readlink "snap/$f")" ] || { fail "$name: $f is no longer the same link"; return; }
        else
            cmp -s "snap/$f" "$f" || { fail "$name: $f changed"; return; }
        fi
    done
    local before after
    before=$(cd snap && find w traces | sort)
    after=$(find w traces | sort)
    [ "$before" = "$after" ] || { fail "$name: files appeared: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"; return; }
    ok
}
# refuse NAME STATUS NEEDLE -- CMD...: exit STATUS, one error line holding
# NEEDLE, empty stdout, nothing changed
refuse() {
    local name=$1 want=$2 needle=$3
    shift 4
    snapshot
    "$L" "$@" >out 2>err </dev/null
    local st=$?
    [ "$st" = "$want" ] || { fail "$name: exit $st, want $want ($(head -c 300 err))"; return; }
    [ "$(wc -l <err)" = 1 ] || { fail "$name: stderr is not one line: $(cat err)"; return; }
    grep -q '^lumosim: error: ' err || { fail "$name: not an error line: $(cat err)"; return; }
    grep -qF -- "$needle" err || { fail "$name: error does not name '$needle': $(cat err)"; return; }
    [ ! -s out ] || { fail "$name: stdout not empty"; return; }
    unchanged "$name"
}
runs_of() { h5ls "$1/runs" 2>/dev/null | awk '{print $1}' | sort | tr '\n' ' '; }

# --- 1. an output is never one of the inputs ----------------------------
refuse collect_in_is_out 1 "w/r.h5" -- collect w/r.h5 -o w/r.h5
refuse build_in_is_out 1 "w/in.json.gz" -- build w/in.json.gz -o w/in.json.gz
# build --model writes through the streaming writer: the same rules
refuse build_model_in_is_out 1 "w/in.json.gz" -- build w/in.json.gz --model gpt3-15b -o w/in.json.gz
refuse build_model_over_store 1 "w/j.h5" -- build w/in.json.gz --model gpt3-15b -o w/j.h5
refuse build_model_over_archive 1 "w/r.h5" -- build w/in.json.gz --model gpt3-15b -o w/r.h5
refuse whatif_in_is_out 1 "w/j.h5" -- whatif w/j.h5 --dp 2 -o w/j.h5
refuse calibrate_in_is_out 1 "w/in.json.gz" -- calibrate w/in.json.gz -o w/in.json.gz
refuse report_in_is_out 1 "w/r.h5" -- report w/r.h5 --html w/r.h5
# report's CSV of an archive (drawn from its tables): the same rules
refuse report_csv_is_in 1 "w/r.h5" -- report w/r.h5 --html w/p.html --csv w/r.h5
refuse replay_trace_out_is_in 1 "w/in.json.gz" -- replay w/in.json.gz --trace-out w/in.json.gz
refuse sim_in_is_out 1 "w/j.h5" -- sim w/j.h5 -o w/j.h5
# through a symlink: still the same file
ln -s in.json.gz w/alias.json.gz
refuse build_out_links_to_in 1 "w/alias.json.gz" -- build w/in.json.gz -o w/alias.json.gz
# inside a directory given as input, under a name it reads
refuse replay_out_in_input_dir 1 "traces/rank0.json.gz" -- replay traces --trace-out traces/rank0.json.gz

# --- 2. two outputs, one file --------------------------------------------
refuse sim_two_roles 1 "w/r.h5" -- sim w/j.h5 -o w/r.h5 --run B --trace-out w/r.h5
refuse calibrate_two_roles 1 "w/x.json" -- calibrate w/in.json.gz -o w/x.json --topology-out w/x.json
refuse report_two_roles 1 "w/p.html" -- report w/in.json.gz --html w/p.html --trace-out w/p.html

# --- 3. a file of another kind -------------------------------------------
refuse build_over_archive 1 "result archive" -- build "$E" -o w/r.h5
refuse build_over_store 1 "--force" -- build "$E" -o w/j.h5
refuse synth_over_store 1 "w/j.h5" -- synth --model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 --global-batch 1 -o w/j.h5
refuse whatif_over_archive 1 "w/r.h5" -- whatif w/j.h5 --dp 2 -o w/r.h5
refuse build_over_trace 1 "Kineto" -- build "$E" -o w/in.json.gz
refuse report_over_trace 1 "w/in.json.gz" -- report "$E" --html w/in.json.gz
refuse report_over_store 1 "w/j.h5" -- report "$E" --html w/j.h5
refuse report_csv_over_store 1 "w/j.h5" -- report w/r.h5 --html w/p.html --csv w/j.h5
refuse collect_over_archive 1 "w/r.h5" -- collect w/r.h5 -o w/r.h5
refuse calibrate_over_store 1 "w/j.h5" -- calibrate "$E" -o w/j.h5
refuse sim_trace_over_store 1 "w/j.h5" -- sim w/j.h5 -o w/r2.h5 --trace-out w/j.h5
refuse output_is_dir 1 "w" -- replay "$E" --trace-out w
refuse force_twice 2 "--force" -- build --force --force "$E" -o w/j.h5
# A device node of our own stands for /dev/null (as root; else /dev/null
# itself for the writers that must write through): a writer that regressed
# to replacing devices would otherwise replace the machine's /dev/null.
if mknod "$tmp/null" c 1 3 2>/dev/null; then NULLDEV=$tmp/null; else NULLDEV=; fi
# HDF5 needs a regular file
if [ -n "$NULLDEV" ]; then
    refuse build_to_device 1 "$NULLDEV" -- build "$E" -o "$NULLDEV"
    [ -c "$NULLDEV" ] || fail "build -o DEVICE: the device node was replaced"
fi

# --force replaces a store with a store (the run named it)
snapshot
if "$L" build --force "$E" -o w/j.h5 >/dev/null 2>err; then
    [ "$("$L" info w/j.h5 2>/dev/null | grep -c 'graph store')" -ge 1 ] || h5ls w/j.h5/gpus >/dev/null 2>&1 || fail "build --force: w/j.h5 is not a store"
    ok
else
    fail "build --force over a store failed: $(cat err)"
fi

# --- 4. symlinks, devices, modes ------------------------------------------
ln -s r.h5 w/link.h5
chmod 640 w/r.h5
if "$L" sim w/j.h5 -o w/link.h5 --run L >/dev/null 2>err; then
    [ -L w/link.h5 ] || fail "sim -o link: the symlink was replaced by a file"
    case " $(runs_of w/r.h5) " in *" L "*) ok ;; *) fail "sim -o link: run L is not in the link's target (runs: $(runs_of w/r.h5))" ;; esac
    [ "$(stat -c %a w/r.h5)" = 640 ] || fail "sim -o link: mode $(stat -c %a w/r.h5), want 640 kept"
else
    fail "sim -o link failed: $(cat err)"
fi
# a dangling link names the file to create
ln -s made.h5 w/dangling.h5
"$L" sim w/j.h5 -o w/dangling.h5 >/dev/null 2>err || fail "sim -o dangling link failed: $(cat err)"
[ -L w/dangling.h5 ] && [ -f w/made.h5 ] && ok || fail "sim -o dangling link: link replaced or target not made"
# a text output keeps its mode too
chmod 600 w/notes.txt
"$L" collect w/r.h5 -o w/notes.txt >/dev/null 2>err || fail "collect -o notes.txt failed: $(cat err)"
[ "$(stat -c %a w/notes.txt)" = 600 ] && head -1 w/notes.txt | grep -q '^file,run' && ok || fail "collect: mode or content of notes.txt"
# devices are written through, never replaced
ND=${NULLDEV:-/dev/null}
"$L" replay "$E" --trace-out "$ND" >/dev/null 2>err || fail "--trace-out $ND failed: $(cat err)"
"$L" report "$E" --html "$ND" >/dev/null 2>err || fail "--html $ND failed: $(cat err)"
"$L" collect w/r.h5 -o "$ND" >/dev/null 2>err || fail "collect -o $ND failed: $(cat err)"
[ -c "$ND" ] && ok || fail "$ND was replaced"
# --csv follows the same rules: through a link (kept, mode kept), into a
# device (written through), never over an input
echo "old" > w/mine.csv && chmod 640 w/mine.csv && ln -s mine.csv w/csvlink.csv
"$L" replay "$E" --csv w/csvlink.csv >/dev/null 2>err || fail "--csv through a link failed: $(cat err)"
[ -L w/csvlink.csv ] && [ "$(stat -c %a w/mine.csv)" = 640 ] && head -1 w/mine.csv | grep -q '^source,gpu,rank' && ok ||
    fail "--csv through a link: link, mode or content of mine.csv"
"$L" replay "$E" --csv "$ND" >/dev/null 2>err || fail "--csv $ND failed: $(cat err)"
[ -c "$ND" ] && ok || fail "--csv: $ND was replaced"
refuse csv_over_input 1 "w/j.h5" -- sim w/j.h5 --csv w/j.h5
# search --csv (its only output): never over its model file or another kind
# of file; through a link the link is kept; into a device the device stays
printf '{"layers":2,"hidden":1024,"ffn":4096,"heads":16,"seq":512,"vocab":32000}' >w/m.json
S="search --model w/m.json --gpus 8 --global-batch 8 --tp 8 --pp 1 --micro-batch 1 --schedule 1f1b --recompute none --distributed-optimizer off"
# shellcheck disable=SC2086
refuse search_csv_over_model 1 "w/m.json" -- search --model w/m.json --gpus 8 --global-batch 8 --tp 8 --pp 1 \
    --micro-batch 1 --schedule 1f1b --recompute none --distributed-optimizer off --csv w/m.json
# shellcheck disable=SC2086
refuse search_csv_over_store 1 "w/j.h5" -- $S --csv w/j.h5
echo "old" >w/mine2.csv && chmod 640 w/mine2.csv && ln -s mine2.csv w/csvlink2.csv
# shellcheck disable=SC2086
"$L" $S --csv w/csvlink2.csv >/dev/null 2>err || fail "search --csv through a link failed: $(cat err)"
[ -L w/csvlink2.csv ] && [ "$(stat -c %a w/mine2.csv)" = 640 ] && head -1 w/mine2.csv | grep -q '^rank,tp,pp' && ok ||
    fail "search --csv through a link: link, mode or content of mine2.csv"
# shellcheck disable=SC2086
"$L" $S --csv "$ND" >/dev/null 2>err || fail "search --csv $ND failed: $(cat err)"
[ -c "$ND" ] && ok || fail "search --csv: $ND was replaced"
# search -o (an HDF5 search result): never over its model file, a store,
# an archive or a trace; into a device refused (HDF5 needs a regular file);
# its own earlier result is replaced
# shellcheck disable=SC2086
refuse search_h5_over_model 1 "w/m.json" -- search --model w/m.json --gpus 8 --global-batch 8 --tp 8 --pp 1 \
    --micro-batch 1 --schedule 1f1b --recompute none --distributed-optimizer off -o w/m.json
# shellcheck disable=SC2086
refuse search_h5_over_store 1 "w/j.h5" -- $S -o w/j.h5
# shellcheck disable=SC2086
refuse search_h5_over_archive 1 "w/r.h5" -- $S -o w/r.h5
# shellcheck disable=SC2086
refuse search_h5_over_trace 1 "w/in.json.gz" -- $S -o w/in.json.gz
# shellcheck disable=SC2086
refuse search_h5_into_device 1 "$ND" -- $S -o "$ND"
[ -c "$ND" ] && ok || fail "search -o: $ND was replaced"
# shellcheck disable=SC2086
"$L" $S -o w/s.h5 >/dev/null 2>err && "$L" $S -o w/s.h5 >/dev/null 2>err && "$L" info w/s.h5 | grep -q "search result" &&
    ok || fail "search -o over its own earlier result: $(cat err)"
# search --merge -o: never over one of its parts, its model or a store
# shellcheck disable=SC2086
"$L" $S --shard 0/2 -o w/p0.h5 >/dev/null 2>err && "$L" $S --shard 1/2 -o w/p1.h5 >/dev/null 2>>err ||
    fail "search --shard: $(cat err)"
refuse merge_over_part 1 "w/p0.h5" -- search --merge w/p0.h5 w/p1.h5 -o w/p0.h5
refuse merge_over_store 1 "w/j.h5" -- search --merge w/p0.h5 w/p1.h5 -o w/j.h5
refuse merge_over_trace 1 "w/in.json.gz" -- search --merge w/p0.h5 w/p1.h5 -o w/in.json.gz
"$L" search --merge w/p0.h5 w/p1.h5 -o w/all.h5 >/dev/null 2>err && "$L" info w/all.h5 | grep -q "search result" &&
    ok || fail "search --merge -o: $(cat err)"
"$L" collect w/r.h5 -o /dev/stdout >csv 2>err || fail "collect -o /dev/stdout failed: $(cat err)"
if [ ! -L /dev/stdout ]; then # a regression replaced it: put it back
    rm -f /dev/stdout && ln -s /proc/self/fd/1 /dev/stdout
    fail "collect -o /dev/stdout replaced /dev/stdout"
fi
head -1 csv | grep -q '^file,run' && [ "$(grep -c '^w/r.h5,' csv)" -ge 2 ] && ok || fail "collect -o /dev/stdout: no CSV on stdout"
# appended, not truncated, when stdout is a file opened for appending
echo "first line" > app.txt
"$L" collect w/r.h5 -o /dev/stdout >>app.txt 2>err || fail "collect -o /dev/stdout >> failed"
head -1 app.txt | grep -q '^first line' && ok || fail "-o /dev/stdout truncated a file opened with >>"

# --- 5. concurrent writers: both runs survive, 10 times ------------------
lost=0
for t in 1 2 3 4 5 6 7 8 9 10; do
    rm -f c.h5
    "$L" sim w/j.h5 -o c.h5 --run B >/dev/null 2>e1 &
    "$L" sim w/j.h5 -o c.h5 --run C >/dev/null 2>e2
    s2=$?
    wait $!
    s1=$?
    [ "$s1" = 0 ] && [ "$s2" = 0 ] || { fail "concurrent trial $t: exit $s1 / $s2: $(cat e1 e2)"; lost=1; break; }
    [ "$(runs_of c.h5)" = "B C " ] || { fail "concurrent trial $t: runs '$(runs_of c.h5)', want 'B C'"; lost=1; break; }
done
[ "$lost" = 0 ] && ok
ls c.h5.lock >/dev/null 2>&1 && fail "the lock file was left behind"
# a lock held by someone else: a bounded wait, then one line naming the holder
if command -v flock >/dev/null 2>&1; then
    snapshot
    # the holder keeps the lock until told to let go (a file, not a sleep):
    # on a loaded machine a timed holder could start late or let go before
    # lumosim asks
    rm -f held release
    flock w/r.h5.lock sh -c 'touch held; while [ ! -e release ]; do sleep 0.05; done' &
    holder=$!
    while [ ! -e held ] && kill -0 $holder 2>/dev/null; do sleep 0.05; done
    LUMOSIM_LOCK_TIMEOUT=0.5 "$L" sim w/j.h5 -o w/r.h5 --run Z >out 2>err
    st=$?
    touch release; wait $holder 2>/dev/null
    rm -f w/r.h5.lock held release
    [ "$st" = 1 ] && grep -q 'gave up' err && ! grep -q ' Z ' <<<" $(runs_of w/r.h5) " && ok ||
        fail "held lock: exit $st: $(cat err)"
fi

# --- 6. commit order: the archive is committed last -----------------------
refuse_like_trace_out_fails() {
    snapshot
    "$L" sim w/j.h5 -o w/r.h5 --run T --trace-out /dev/full >out 2>err
    local st=$?
    [ "$st" = 1 ] && [ "$(wc -l <err)" = 1 ] && grep -q '/dev/full' err || { fail "trace-out to /dev/full: exit $st: $(cat err)"; return; }
    unchanged "trace-out fails: archive untouched"
    "$L" sim w/j.h5 -o w/r.h5 --run T >/dev/null 2>err || fail "retry after a failed --trace-out refused: $(cat err)"
}
refuse_like_trace_out_fails

# --- 7. temporaries of dead processes are removed, live ones kept ---------
sh -c 'exit 0' &
dead=$!
wait $dead
echo junk > "w/r.h5.tmp-$dead"
echo junk > "w/r.h5.tmp-$dead.some-other-host"
echo junk > "w/r.h5.tmp-$$"
"$L" sim w/j.h5 -o w/r.h5 --run S >/dev/null 2>err || fail "sim with stale temporaries failed: $(cat err)"
[ ! -e "w/r.h5.tmp-$dead" ] && grep -q "removed.*r.h5.tmp-$dead" err && ok || fail "stale temporary of dead pid $dead not removed/reported: $(cat err)"
[ -e "w/r.h5.tmp-$dead.some-other-host" ] && [ -e "w/r.h5.tmp-$$" ] && ok || fail "a temporary of another host or a live process was removed"
rm -f w/r.h5.tmp-*
# a real SIGKILL in the middle of a write: the writer paused with its
# temporary complete, just before the rename (LUMOSIM_TEST_PAUSE=commit), so
# the kill lands mid-write on any machine; its watchdog child (tmpfiles.h
# lsim_tmp_watch) removes the temporary and the lock once it is gone (issue
# 40; a rerun removing a dead process's temporary is checked above)
LUMOSIM_TEST_PAUSE=commit "$L" synth --model gpt3-15b --layers 2 --tp 1 --pp 1 --dp 1 --micro-batch 1 --global-batch 1 \
    -o big.h5 >/dev/null 2>pause.err &
k=$!
while ! grep -q 'paused before commit' pause.err 2>/dev/null && kill -0 $k 2>/dev/null; do sleep 0.05; done
ls big.h5.tmp-* >/dev/null 2>&1 || fail "no temporary at the pause before commit: $(cat pause.err)"
dog=$(cat /proc/$k/task/*/children 2>/dev/null)
kill -9 $k 2>/dev/null; wait $k 2>/dev/null
[ -n "$dog" ] || fail "no watchdog beside the writer paused before its commit"
i=0
while [ $i -lt 600 ] && for p in $dog; do kill -0 "$p" 2>/dev/null && break; done; do sleep 0.05; i=$((i + 1)); done
ls big.h5.tmp-* big.h5.lock big.h5 >/dev/null 2>&1 && fail "after SIGKILL before the commit: left $(ls big.h5*)" || ok

# --- 8. standard output that cannot be written ----------------------------
for cmd in "replay --json $E" "replay $E" "sim w/j.h5" "info w/j.h5" "whatif w/j.h5 --identify" "ablate $E"; do
    # shellcheck disable=SC2086
    "$L" $cmd >/dev/full 2>err
    st=$?
    # (with --json the one line is a JSON object: {"error": ...})
    [ "$st" != 0 ] && [ "$(wc -l <err)" = 1 ] && grep -q '^lumosim: error: \|^{"error":' err && ok ||
        fail "'$cmd' > /dev/full: exit $st, stderr: $(cat err)"
done
# a closed pipe: the reader is gone before lumosim writes; it ends quietly,
# killed by SIGPIPE as coreutils are (issue 39), never exit 0
( "$L" replay --json "$E" 2>err; echo $? >st ) | true
[ "$(cat st)" != 0 ] && [ ! -s err ] && ok || fail "closed pipe: exit $(cat st), stderr: $(cat err)"

echo "no_data_loss: $pass passed, $fails failed"
[ "$fails" = 0 ]
