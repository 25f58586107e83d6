#!/usr/bin/env python3
"""Check a gen_trace output against its seed (developer tool, used by run.sh).

    check_gen.py SEED OUT

Verifies: OUT is valid JSON; the top-level fields other than traceEvents equal
the seed's; repetition 0 equals the seed event for event; every repetition k
equals the seed with ts shifted by exactly k*shift (decimal arithmetic, no
float rounding), ids offset by k*id_step and ProfilerStep#N renumbered; and
correlation / External id / flow ids are unique across repetitions (the number
of distinct values is K times the seed's). Exit 0 if all hold.
"""
import copy
import gzip
import json
import re
import sys
from decimal import Decimal

ID_ARGS = ("correlation", "External id", "wait_on_cuda_event_record_corr_id")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def load(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Decimal)


def once(ev):
    if ev.get("ph") == "M":
        return True
    if ev.get("cat") == "Trace" and ev.get("ph") == "X":
        return True
    return ev.get("ph") == "i" and ev.get("s") == "g"


def ids_of(ev):
    out = []
    if isinstance(ev.get("id"), int) and ev["id"] >= 0:
        out.append(("flow", ev["id"]))
    args = ev.get("args") or {}
    for k in ID_ARGS:
        v = args.get(k)
        if isinstance(v, int) and v >= 0:
            out.append((k, v))
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    seed, out = load(sys.argv[1]), load(sys.argv[2])
    errs = []
    for k in seed:
        if k != "traceEvents" and seed[k] != out.get(k):
            errs.append("top-level field %r differs" % k)
    if list(seed.keys()) != list(out.keys()):
        errs.append("top-level key order differs")
    sev = [e for e in seed["traceEvents"] if isinstance(e, dict)]
    rep = [e for e in sev if not once(e)]
    oev = out["traceEvents"]
    nonce = len(sev) - len(rep)
    if (len(oev) - nonce) % len(rep):
        errs.append("event count %d is not %d + K*%d" % (len(oev), nonce, len(rep)))
        print("\n".join(errs))
        return 1
    K = (len(oev) - nonce) // len(rep)
    ts = [e["ts"] for e in sev if "ts" in e and e.get("ph") != "M"]
    hi = [e["ts"] + e.get("dur", 0) for e in sev if "ts" in e and e.get("ph") != "M"]
    span = max(hi) - min(ts)
    idmax = max([v for e in sev for _, v in ids_of(e)] or [-1])
    steps = [int(STEP.match(e["name"]).group(1)) for e in rep
             if isinstance(e.get("name"), str) and STEP.match(e["name"])]
    stepspan = (max(steps) - min(steps) + 1) if steps else 0

    # repetition 0 is the seed itself (once-events aside, which are stretched)
    first = oev[:len(sev)]
    for i, (a, b) in enumerate(zip(sev, first)):
        if once(a):
            continue
        if a != b:
            errs.append("rep 0 event %d differs from the seed: %s vs %s" % (i, a, b))
            break
    # shift: from the first repeated event with a ts
    j0 = next(i for i, e in enumerate(rep) if "ts" in e)
    shift = oev[len(sev) + j0]["ts"] - rep[j0]["ts"] if K > 1 else 0
    if K > 1 and shift < span:
        errs.append("shift %s smaller than the seed span %s" % (shift, span))
    for k in range(1, K):
        base = len(sev) + (k - 1) * len(rep)
        for j, a in enumerate(rep):
            b = oev[base + j]
            exp = copy.deepcopy(a)
            if "ts" in exp:
                exp["ts"] = a["ts"] + k * shift
            off = k * (idmax + 1)
            if isinstance(exp.get("id"), int) and exp["id"] >= 0:
                exp["id"] += off
            for key in ID_ARGS:
                v = (exp.get("args") or {}).get(key)
                if isinstance(v, int) and v >= 0:
                    exp["args"][key] = v + off
            m = STEP.match(exp.get("name", "")) if isinstance(exp.get("name"), str) else None
            if m:
                exp["name"] = "ProfilerStep#%d" % (int(m.group(1)) + k * stepspan)
            if exp != b:
                errs.append("rep %d event %d: expected %s got %s" % (k, j, exp, b))
                break
        if len(errs) > 5:
            break
    # uniqueness across repetitions
    for kind in ("flow",) + ID_ARGS:
        s_ids = {v for e in sev for kk, v in ids_of(e) if kk == kind}
        o_ids = {v for e in oev for kk, v in ids_of(e) if kk == kind}
        if len(o_ids) != K * len(s_ids):
            errs.append("%s: %d distinct ids, expected %d x %d" % (kind, len(o_ids), K, len(s_ids)))
    names = [e["name"] for e in oev if isinstance(e.get("name"), str)
             and STEP.match(e["name"]) and not once(e)]
    if len(set(names)) != K * len(set("ProfilerStep#%d" % s for s in steps)):
        errs.append("ProfilerStep names not unique per repetition")
    if errs:
        print("check_gen: FAIL\n  " + "\n  ".join(errs[:10]))
        return 1
    print("check_gen: OK: %d repetitions, %d events, shift %s us, id step %d, %d steps/rep"
          % (K, len(oev), shift, idmax + 1, stepspan))
    return 0


if __name__ == "__main__":
    sys.exit(main())
