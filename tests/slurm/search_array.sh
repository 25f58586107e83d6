#!/usr/bin/env bash
# slurm/search_array.sbatch as a 3-task job array (--shard I/3), then the
# same template as a dependent merge job (--dependency=afterok): the merged
# ranking equals an unsharded `lumosim search` of the same space run
# directly (every row, in order, to the nanosecond), each shard simulated
# exactly its candidates (index mod 3), and the merged search.h5 holds every
# candidate. Then the same around a synthesized job (--from). A SEARCH that
# sets -o itself fails its task, and the merge does not run.
. "$(dirname "$0")/lib.sh"
space="--model gpt3-15b --gpus 16 --global-batch 32 --tp 2,4 --pp 1,2 --micro-batch 1,2 --recompute none --distributed-optimizer on"
# shellcheck disable=SC2086
"$LUMOSIM" search $space --top 0 --json >"$tmp/direct.json" || fail "direct search failed"

# run_array SEARCH NAME: the array and its merge; D := the output directory
run_array() {
    local id mid
    id=$(SEARCH="$1" LAUNCHER=none submit --array=0-2 --job-name="$2" "$SRC/slurm/search_array.sbatch")
    mid=$(SEARCH_DIR="runs/$2_$id" TOP=0 submit --dependency=afterok:"$id" --job-name="$2-merge" \
        --output="%x_%j.out" "$SRC/slurm/search_array.sbatch")
    expect_ok "$id" 240
    expect_ok "$mid" 120
    D=$tmp/runs/$2_$id
}
run_array "$space" lsim-search
d=$D
for i in 0 1 2; do [ -f "$d/shard$i.h5" ] || fail "$d/shard$i.h5 missing"; done
for f in search.h5 ranking.json ranking.csv ranking.txt merge.config.txt; do [ -f "$d/$f" ] || fail "$d/$f missing"; done
python3 - "$tmp/direct.json" "$d" <<'PY' || fail "the merged ranking differs from the unsharded one"
import json, subprocess, sys, os
direct, d = json.load(open(sys.argv[1])), sys.argv[2]
merged = json.load(open(os.path.join(d, "ranking.json")))
assert merged["ranking"] == direct["ranking"], "ranking differs:\n%s\n%s" % (merged["ranking"], direct["ranking"])
assert merged["reasons"] == direct["reasons"] and merged["simulated"] == direct["simulated"] == direct["feasible"]
print("merged ranking = unsharded: %d rows" % len(merged["ranking"]))
PY
# each shard simulated exactly the feasible candidates i mod 3 == I
for i in 0 1 2; do
    n=$(h5dump -d /search/candidates/simulated "$d/shard$i.h5" | sed -n '/DATA {/,/}/p' | grep -o '[0-9]*: [0-9, ]*' |
        sed 's/^[0-9]*: //' | tr ',' '\n' | awk -v i="$i" 'NF { if ($1 == 1 && (k % 3) != i) bad = 1; k++ } END { print bad + 0 }')
    [ "$n" = 0 ] || fail "shard $i simulated a candidate of another shard"
done

# around a synthesized job, with the what-if transforms
"$LUMOSIM" synth --model gpt3-15b --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 16 --layers 8 -o "$tmp/s.h5" >/dev/null ||
    fail "synth failed"
from="--from $tmp/s.h5 --tp 1,2,4 --pp 1,2 --dp 1,2"
# shellcheck disable=SC2086
"$LUMOSIM" search $from --top 0 --json >"$tmp/from.json" || fail "direct search --from failed"
run_array "$from" lsim-from
d=$D
python3 - "$tmp/from.json" "$d/ranking.json" <<'PY' || fail "the merged --from ranking differs from the unsharded one"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["ranking"] and a["ranking"] == b["ranking"], (a["ranking"], b["ranking"])
assert a["reasons"] == b["reasons"] and a["refused"] == b["refused"]
print("merged --from ranking = unsharded: %d rows" % len(a["ranking"]))
PY

# a SEARCH that sets -o: the tasks fail, the afterok merge never runs
id=$(SEARCH="$space -o x.h5" LAUNCHER=none submit --array=0-1 --job-name=lsim-bad "$SRC/slurm/search_array.sbatch")
st=$(wait_job "$id")
printf '%s\n' "$st" | grep -qv '^COMPLETED$' || fail "a SEARCH with -o completed"
grep -q "set by the template" "$tmp"/lsim-bad_"$id"_0.out || fail "no clear message for -o in SEARCH"
echo "ok: search as a 3-task array and a merge, equal to the unsharded ranking (model space and --from)"
