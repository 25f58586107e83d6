#!/usr/bin/env python3
"""csv_cli.py MODE ARGS...  (environment: LUMOSIM; stdlib only)

  replay TRACE SMALL_TRACE
        replay --csv on TRACE checked against replay --json; a trace copied
        under a name with a comma, a quote and a blank round-trips in the
        source column; --csv naming an input is refused (one line, exit 1,
        the input unchanged, nothing left behind); --csv - is the same bytes
        on standard output; --csv - with --json is a usage error
  synth
        a tiny synthesized job (no observed times): sim --csv against sim
        --json, actual-side fields empty
  mpi NP LAUNCHER...
        the synthesized job under the launcher with NP ranks (sim -o, --csv):
        the CSV byte for byte the serial one's, also with --trace-out

Checks: header, row count = sum over ranks of (iterations + 1), every
value equal to the --json value, each row's four breakdown components
summing to its span (docs/report-json.md, Breakdown), RFC 4180 parsing.
"""
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

LUMOSIM = os.environ["LUMOSIM"]
COLUMNS = ["source", "gpu", "rank", "scope", "iteration", "iteration_name", "latency_mode", "coupled",
           "clock_offset_ns", "observed", "actual_ns", "predicted_ns", "error",
           "exposed_compute_actual_ns", "overlapped_actual_ns", "exposed_comm_actual_ns",
           "exposed_comm_wait_actual_ns", "other_actual_ns",
           "exposed_compute_predicted_ns", "overlapped_predicted_ns", "exposed_comm_predicted_ns",
           "exposed_comm_wait_predicted_ns", "other_predicted_ns", "cpu_actual_ns", "cpu_predicted_ns"]
PARTS = ["exposed_compute", "overlapped", "exposed_comm", "other"]
TINY = ("--model gpt3-15b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 8").split()


def fail(msg):
    print("csv_cli %s: %s" % (sys.argv[1], msg))
    sys.exit(1)


def run(args, ok=True, **kw):
    p = subprocess.run([LUMOSIM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if ok and p.returncode != 0:
        fail("lumosim %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
    return p


def read_csv(data):
    if not data.endswith(b"\r\n"):
        fail("the CSV does not end with CRLF")
    text = data.decode("utf-8")  # must be valid UTF-8
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    if rows[0] != COLUMNS:
        fail("header %r" % rows[0])
    for r in rows[1:]:
        if len(r) != len(COLUMNS):
            fail("a row of %d fields: %r" % (len(r), r))
    return [dict(zip(COLUMNS, r)) for r in rows[1:]]


def num(field):
    if field == "":
        return None
    return float(field) if any(c in field for c in ".eE") else int(field)


def check_int(row, col, want, where):
    got = num(row[col])
    if want is None:
        if row[col] != "":
            fail("%s: %s is %r, expected empty (null in --json)" % (where, col, row[col]))
        return
    if not isinstance(got, int) or got != want:
        fail("%s: %s is %r, --json says %r" % (where, col, row[col], want))


def check_float(row, col, want, where):
    if want is None:
        if row[col] != "":
            fail("%s: %s is %r, expected empty" % (where, col, row[col]))
        return
    if row[col] == "" or float(row[col]) != float(want):
        fail("%s: %s is %r, --json says %r" % (where, col, row[col], want))


def check_bd(row, side, bd, where, with_wait):
    for p in PARTS:
        check_int(row, "%s_%s_ns" % (p, side), None if bd is None else bd[p + "_ns"], where)
    col = "exposed_comm_wait_%s_ns" % side
    if bd is None:
        check_int(row, col, None, where)
    elif with_wait:  # --json prints it on window breakdowns only, and only when not 0
        check_int(row, col, bd.get("exposed_comm_wait_ns", 0), where)
    elif num(row[col]) is None or not 0 <= num(row[col]) <= num(row["exposed_comm_%s_ns" % side]):
        fail("%s: %s = %r outside [0, exposed_comm]" % (where, col, row[col]))


def check_sum(row, where):
    for side in ("actual", "predicted"):
        span = num(row[side + "_ns"])
        if span is None:
            continue
        s = sum(num(row["%s_%s_ns" % (p, side)]) for p in PARTS)
        if s != span:
            fail("%s: the %s breakdown sums to %d, the span is %d" % (where, side, s, span))


def compare(rows, doc, what):
    """Every CSV value against the --json document."""
    ranks = doc["ranks"]
    want = sum(len(r["iterations"]) + 1 for r in ranks)
    if len(rows) != want:
        fail("%s: %d rows, --json has %d ranks and %d iterations (%d rows expected)"
             % (what, len(rows), len(ranks), want - len(ranks), want))
    k = 0
    for g, r in enumerate(ranks):
        obs = r.get("observed", True)
        its = r["iterations"]
        for side in ("actual_ns", "predicted_ns") if its else ():
            # the iterations partition the GPU timeline (docs/report-json.md)
            if (obs or side == "predicted_ns") and sum(it[side] for it in its) != r["window"][side]:
                fail("%s: gpu %d: the iterations' %s add up to %d, the window is %d"
                     % (what, g, side, sum(it[side] for it in its), r["window"][side]))
        scopes = [("iteration", i, it) for i, it in enumerate(r["iterations"])] + [("window", None, r["window"])]
        for scope, i, span in scopes:
            row = rows[k]
            k += 1
            where = "%s row %d (gpu %d %s %s)" % (what, k, g, scope, i)
            if row["source"] != r["source"]:
                fail("%s: source %r, --json %r" % (where, row["source"], r["source"]))
            check_int(row, "gpu", g, where)
            check_int(row, "rank", r["rank"], where)
            if row["scope"] != scope:
                fail("%s: scope %r" % (where, row["scope"]))
            if row["latency_mode"] != doc["latency_mode"]:
                fail("%s: latency_mode %r" % (where, row["latency_mode"]))
            check_int(row, "coupled", 1 if r.get("coupled") else 0, where)
            check_int(row, "clock_offset_ns", r.get("clock_offset_ns", 0), where)
            check_int(row, "observed", 1 if obs else 0, where)
            check_int(row, "actual_ns", span["actual_ns"], where)
            check_int(row, "predicted_ns", span["predicted_ns"], where)
            check_float(row, "error", span["error"], where)
            if scope == "iteration":
                check_int(row, "iteration", i, where)
                if row["iteration_name"] != span["name"]:
                    fail("%s: iteration_name %r, --json %r" % (where, row["iteration_name"], span["name"]))
                bd = span["breakdown"]
                check_bd(row, "actual", bd["actual"], where, False)
                check_bd(row, "predicted", bd["predicted"], where, False)
                check_int(row, "cpu_actual_ns", span["cpu_actual_ns"], where)
                check_int(row, "cpu_predicted_ns", span["cpu_predicted_ns"], where)
            else:
                if row["iteration"] != "" or row["iteration_name"] != "":
                    fail("%s: a window row with an iteration" % where)
                check_bd(row, "actual", r["breakdown"]["actual"], where, True)
                check_bd(row, "predicted", r["breakdown"]["predicted"], where, True)
                check_int(row, "cpu_actual_ns", None, where)
                check_int(row, "cpu_predicted_ns", None, where)
            check_sum(row, where)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def mode_replay(tmp, trace, small):
    out = os.path.join(tmp, "out.csv")
    doc = json.loads(run(["replay", "--json", trace]).stdout)
    p = run(["replay", trace, "--csv", out])
    if not p.stdout:
        fail("replay --csv FILE printed no table")
    with open(out, "rb") as f:
        data = f.read()
    rows = read_csv(data)
    compare(rows, doc, "replay")
    if not any(r["scope"] == "iteration" for r in rows):
        fail("no iteration row for %s" % trace)
    # standard output: the same bytes, no table
    for name in ("-", "/dev/stdout"):
        p = run(["replay", trace, "--csv", name])
        if p.stdout != data:
            fail("--csv %s differs from the file" % name)
    p = run(["replay", "--json", trace, "--csv", "-"], ok=False)
    if p.returncode != 2 or p.stdout:
        fail("--csv - with --json: exit %d, stdout %r (expected a usage error)" % (p.returncode, p.stdout[:80]))
    # a name with a comma, a quote and blanks round-trips
    odd = os.path.join(tmp, 'a,b "c" d.json')
    shutil.copy(small, odd)
    odd_out = os.path.join(tmp, 'o,u"t.csv')
    doc = json.loads(run(["replay", "--json", odd]).stdout)
    run(["replay", odd, "--csv", odd_out])
    with open(odd_out, "rb") as f:
        rows = read_csv(f.read())
    compare(rows, doc, "odd name")
    if rows[-1]["source"] != odd:
        fail("source %r, expected %r" % (rows[-1]["source"], odd))
    # --csv naming an input: refused before anything is written
    before = sha(odd)
    listing = sorted(os.listdir(tmp))
    p = run(["replay", odd, "--csv", odd], ok=False)
    err = p.stderr.decode(errors="replace")
    if p.returncode != 1 or p.stdout or err.count("\n") != 1 or "--csv" not in err or "input" not in err:
        fail("--csv naming the input: exit %d, stdout %r, stderr %r" % (p.returncode, p.stdout[:80], err))
    if sha(odd) != before or sorted(os.listdir(tmp)) != listing:
        fail("--csv naming the input changed it or left a file behind")
    # a failing run leaves no CSV
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write("{not json")
    gone = os.path.join(tmp, "never.csv")
    p = run(["replay", small, bad, "--csv", gone], ok=False)
    if p.returncode != 1 or os.path.exists(gone) or any(".tmp-" in n for n in os.listdir(tmp)):
        fail("a failing replay left a CSV (exit %d)" % p.returncode)


def synth(tmp):
    job = os.path.join(tmp, "job.h5")
    run(["synth"] + TINY + ["-o", job])
    return job


def mode_synth(tmp):
    job = synth(tmp)
    out = os.path.join(tmp, "sim.csv")
    doc = json.loads(run(["sim", "--json", job]).stdout)
    run(["sim", job, "--csv", out])
    with open(out, "rb") as f:
        rows = read_csv(f.read())
    compare(rows, doc, "sim")
    if len(doc["ranks"]) != 8 or any(r["observed"] != "0" or r["actual_ns"] or r["error"] for r in rows):
        fail("the synthesized job's rows are not all unobserved with empty actual fields")
    # the same from the result archive (report --csv)
    res = os.path.join(tmp, "res.h5")
    run(["sim", job, "-o", res, "--csv", os.path.join(tmp, "sim2.csv")])
    run(["report", res, "--html", os.path.join(tmp, "r.html"), "--csv", os.path.join(tmp, "rep.csv")])
    for other in ("sim2.csv", "rep.csv"):
        if sha(os.path.join(tmp, other)) != sha(out):
            fail("%s differs from sim --csv" % other)


def mode_mpi(tmp, np_, launcher):
    job = synth(tmp)
    serial = os.path.join(tmp, "serial.csv")
    run(["sim", job, "-o", os.path.join(tmp, "res1.h5"), "--csv", serial])
    with open(serial, "rb") as f:
        want = f.read()
    doc = json.loads(run(["sim", "--json", job]).stdout)
    compare(read_csv(want), doc, "serial sim")
    for extra in ([], ["--trace-out", os.path.join(tmp, "t.json")]):
        par = os.path.join(tmp, "par.csv")
        res = os.path.join(tmp, "resN.h5")
        for f in (par, res):
            if os.path.exists(f):
                os.remove(f)
        cmd = launcher + [LUMOSIM, "sim", job, "-o", res, "--csv", par] + extra
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            fail("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.decode(errors="replace")[-2000:]))
        with open(par, "rb") as f:
            got = f.read()
        if got != want:
            fail("the CSV at %s ranks %s differs from the serial one" % (np_, " ".join(extra)))
        # standard output: rank 0 alone writes it
        cmd = launcher + [LUMOSIM, "sim", job, "-o", res, "--replace", "--csv", "-"] + extra
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0 or p.stdout != want:
            fail("--csv - at %s ranks %s: exit %d, %d bytes (serial %d)"
                 % (np_, " ".join(extra), p.returncode, len(p.stdout), len(want)))


def main():
    mode = sys.argv[1]
    tmp = tempfile.mkdtemp()
    try:
        if mode == "replay":
            for a in sys.argv[2:4]:
                if not os.path.exists(a):
                    print("SKIP: %s missing" % a)
                    sys.exit(77)
            mode_replay(tmp, sys.argv[2], sys.argv[3])
        elif mode == "synth":
            mode_synth(tmp)
        elif mode == "mpi":
            mode_mpi(tmp, sys.argv[2], sys.argv[3:])
        else:
            fail("unknown mode")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("csv_cli %s: ok" % mode)


main()
