#!/usr/bin/env bash
# slurm/sweep.sbatch as a 3-task job array, then slurm/collect.sbatch chained
# with --dependency=afterok: one archive per task, each equal to `lumosim sim`
# with that line's options run directly and different from the others;
# config and command line recorded; the CSV has one row per (task, GPU),
# parses as RFC 4180 (a command line with a comma is quoted) and its numbers
# equal the tasks' `lumosim sim --json` reports. A task whose index has no
# line in the config file fails.
. "$(dirname "$0")/lib.sh"
make_store
printf '%s\n' "" "--drop-edges event,hidden" "--drop-edges dpro" >"$tmp/configs.txt"

id=$(JOB="$tmp/job.h5" CONFIGS="$tmp/configs.txt" submit --array=1-3 "$SRC/slurm/sweep.sbatch")
cid=$(SWEEP_DIR="runs/lumosim-sweep_$id" submit --dependency=afterok:"$id" "$SRC/slurm/collect.sbatch")
expect_ok "$id"
expect_ok "$cid"
d=$tmp/runs/lumosim-sweep_$id
for k in 1 2 3; do
    line=$(sed -n "${k}p" "$tmp/configs.txt")
    [ -f "$d/task$k.h5" ] || fail "$d/task$k.h5 missing"
    # shellcheck disable=SC2086
    "$LUMOSIM" sim --json $line "$tmp/job.h5" -o "$tmp/direct$k.h5" >"$tmp/direct$k.json" || fail "direct sim $k failed"
    cmp -s "$tmp/direct$k.json" "$d/task$k.json" || fail "task $k's report differs from lumosim sim $line"
    h5diff -q --exclude-path /runs/sim/provenance "$tmp/direct$k.h5" "$d/task$k.h5" || fail "task$k.h5 differs"
    grep -qxF "config_line=$line" "$d/task$k.config.txt" || fail "task$k.config.txt lacks the config line"
    cl=$(attr "$d/task$k.h5" /runs/sim/provenance/command_line)
    # (lumosim 0.1.0 records the command line without the word "sim")
    want="--json${line:+ $line} $tmp/job.h5 -o $d/task$k.h5 --run sim"
    case "$cl" in "lumosim sim $want" | "lumosim $want") ;; *) fail "task $k: provenance command_line '$cl'" ;; esac
done
cmp -s "$d/task1.json" "$d/task2.json" && fail "tasks 1 and 2 gave the same report"
cmp -s "$d/task2.json" "$d/task3.json" && fail "tasks 2 and 3 gave the same report"
cmp -s "$d/task1.json" "$d/task3.json" && fail "tasks 1 and 3 gave the same report"

csv=$tmp/runs/lumosim-collect_$cid/sweep.csv
[ -f "$csv" ] || fail "$csv missing"
grep -qx "command=$LUMOSIM collect runs/lumosim-sweep_$id -o $csv" "$tmp/runs/lumosim-collect_$cid/config.txt" ||
    fail "collect config.txt does not record the command"
python3 - "$csv" "$d" "$NGPUS" "runs/lumosim-sweep_$id" <<'PY' || fail "the CSV does not match the reports"
import csv, json, math, sys
path, d, ngpus, rel = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
raw = open(path, newline="").read()
assert raw.endswith("\r\n"), "rows must end in CRLF"
rows = list(csv.DictReader(open(path, newline=""), strict=True))
assert len(rows) == 3 * ngpus, "%d rows, want %d" % (len(rows), 3 * ngpus)
keys = [(r["file"], r["run"], int(r["gpu"])) for r in rows]
assert keys == sorted(keys), "rows not sorted by (file, run, gpu)"
t2 = [l for l in raw.split("\r\n") if l.startswith(rel + "/task2.h5,")]
assert len(t2) == ngpus and all(',"lumosim ' in l and "event,hidden" in l for l in t2), \
    "the command line with a comma is not a quoted field"
# Integers must be equal; ratios to 1e-14 (cJSON prints 15 significant digits
# when they read back within an epsilon, the CSV prints the exact double).
def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-14, abs_tol=1e-300)
    return a == b
def num(s):
    return float(s) if any(c in s for c in ".e") else int(s)
for k in (1, 2, 3):
    rep = json.load(open("%s/task%d.json" % (d, k)))
    mine = [r for r in rows if r["file"] == "%s/task%d.h5" % (rel, k)]
    assert len(mine) == ngpus, "task %d: %d rows" % (k, len(mine))
    for r, g in zip(mine, rep["ranks"]):
        w, ba, bp = g["window"], g["breakdown"]["actual"], g["breakdown"]["predicted"]
        want = {"rank": g["rank"], "source": g["source"],
                "window_actual_ns": w["actual_ns"], "window_predicted_ns": w["predicted_ns"],
                "window_error": w["error"], "iterations": len(g["iterations"]),
                "coupled": 1 if g.get("coupled") else 0}
        for part in ("exposed_compute", "overlapped", "exposed_comm", "exposed_comm_wait", "other"):
            want[part + "_actual_ns"] = ba.get(part + "_ns", 0)
            want[part + "_predicted_ns"] = bp.get(part + "_ns", 0)
        for c, v in want.items():
            got = r[c] if c == "source" else num(r[c])
            assert close(got, v), "task %d gpu %s: %s = %r, report says %r" % (k, r["gpu"], c, got, v)
        j = rep["job"]
        assert num(r["job_actual_ns"]) == j["actual_ns"] and num(r["job_predicted_ns"]) == j["predicted_ns"] \
            and close(num(r["job_error"]), j["error"]), "task %d: job columns differ" % k
        assert r["run"] == "sim" and r["mpi_ranks"] == "1" and r["lumosim_version"] and r["created"]
        assert r["command_line"].endswith("-o %s/task%d.h5 --run sim" % (d, k)), r["command_line"]
print("csv ok: %d rows" % len(rows))
PY

# array task 4 has no line in the 3-line config file: it fails, writes nothing
id4=$(JOB="$tmp/job.h5" CONFIGS="$tmp/configs.txt" submit --array=4 "$SRC/slurm/sweep.sbatch")
st=$(wait_job "$id4")
[ "$st" = FAILED ] || fail "array task 4 of a 3-line sweep ended $st, want FAILED"
[ ! -e "$tmp/runs/lumosim-sweep_$id4/task4.h5" ] || fail "task 4 wrote a result"
grep -q "array task 4 has no line" "$tmp/lumosim-sweep_${id4}_4.out" || fail "no clear message for task 4"
echo "ok: sweep of 3 configurations ($NGPUS GPUs each) and its CSV ($((3 * NGPUS)) rows)"
