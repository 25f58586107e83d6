#!/usr/bin/env python3
"""Which participants a broadcast's receivers wait for, measured on a real job.

    rooted_rules.py DDP4_DIR      (../shared/traces/ddp4_mi300)

For every broadcast of the 4-rank RCCL job (root: rank 0, c10d::broadcast_'s
root_rank), the traced end of each participant against the end three rules
give from the traced starts, T being the traced duration of the participant
that started last (what src/job.c takes as the instance's transfer):

  root:       the root ends at its own start + T (it waits for nobody)
  root-only:  a receiver ends at max(own start, root start) + T
  all-wait:   a receiver ends at max(every start) + T

Prints per broadcast the errors (rule - traced, us) and per rule the sum and
the largest |error| over all receiver ends: the figures behind the rule in
docs/cost-models.md ("Rooted collectives"). All ranks share one clock here
(lumosim's clock offsets for this job are under 3 us).
"""
import gzip
import json
import sys
from decimal import Decimal

d = sys.argv[1]
K = {}
for r in range(4):
    ev = json.load(gzip.open("%s/rank%d.json.gz" % (d, r)), parse_float=Decimal)["traceEvents"]
    K[r] = sorted((e for e in ev if e.get("cat") == "kernel" and e.get("args", {}).get("Collective name") == "broadcast"),
                  key=lambda e: e["ts"])
err = {"root": [], "root-only": [], "all-wait": []}
for i in range(len(K[0])):
    s = [K[r][i]["ts"] for r in range(4)]
    e = [K[r][i]["ts"] + K[r][i]["dur"] for r in range(4)]
    last = max(range(4), key=lambda r: s[r])
    T = e[last] - s[last]
    err["root"].append(s[0] + T - e[0])
    for r in (1, 2, 3):
        err["root-only"].append(max(s[r], s[0]) + T - e[r])
        err["all-wait"].append(max(s) + T - e[r])
    print("broadcast %d (%6d elements): root %7.1f | receivers root-only %s | all-wait %s" % (
        i, K[0][i]["args"]["In msg nelems"], err["root"][-1],
        " ".join("%8.1f" % x for x in err["root-only"][-3:]), " ".join("%6.1f" % x for x in err["all-wait"][-3:])))
for k, v in err.items():
    print("%-9s %2d ends: sum |rule - traced| %8.1f us, max %7.1f us" % (k, len(v), sum(abs(x) for x in v),
                                                                        max(abs(x) for x in v)))
