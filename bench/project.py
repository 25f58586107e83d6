#!/usr/bin/env python3
"""Project the parallel engine's wall time at K = 64 ... 1024 MPI ranks from
runs measured at K = 1 and K = 2 on this machine.

usage: python3 bench/project.py [--hop-us 2,3,5] [--bw-gbs 12.5] [--recv-ns 20]
                                [--ks 64,128,256,512,1024] [--markdown] RAW...

RAW: files of BENCH lines (bench_phold, bench_pdes, or any other program that
prints the same keys; hook for the GPT-3 workloads of `lumosim synth`).
A BENCH line is `BENCH [WORKLOAD] key=value ...`; the keys used are

  ranks      K (required)
  wall_s     simulate time, seconds, slowest rank (sim_s is accepted too,
             and preferred when a line has both: gpt3_scaling.sh's wall_s is
             the whole command, its sim_s the simulate phase)
  windows    synchronisation windows of the run (required)
  messages   arrival pairs exchanged, all ranks (required)
  mpi_s      time inside MPI, mean over ranks (optional: 0 if absent)
  arrivals   collective participations of the job (optional: upper bound
             of messages at large K)
  nodes      node-events (optional: M events/s in the table)
  mode       runs whose mode is not `pdes` (e.g. bench_phold's serial run)
             are ignored

Runs are grouped into workloads by every key that describes the job (all keys
but the measured ones); a workload is projected when it has a K = 1 and a
K = 2 run.

Model (strong scaling, the job fixed):

  T(K) = Tc(1) / K  +  windows * (allgather(K) + allgatherv(K, m))
                    +  messages(K) * recv_ns

  Tc(1)        = wall_s - mpi_s at K = 1 (simulation work incl. per-window
                 local overhead; assumed to divide perfectly over K)
  allgather(K) = ceil(log2 K) * hop + (K-1) * 24 B / bw
                 (per window: each rank's count, earliest pending event and
                 failure flag -- mpi/pdes.c's one synchronising collective)
  allgatherv(K,m) = ceil(log2 K) * hop + m * 16 B / bw  (m = arrival pairs per
                 window, all ranks: every rank receives every pair)
  messages(K)  = arrival pairs exchanged at K: messages(2) * (1 - 1/K) / (1/2)
                 (a participant's peers on other ranks when GPUs are placed at
                 random), capped by arrivals when known
  windows      = windows measured at K = 2 (the protocol's window count does
                 not grow further with K once collectives cross ranks; see
                 docs/scaling-phold.md for the measured K = 1 vs K = 2 count)
  recv_ns      per received pair, the scan every rank makes over all
                 received pairs (mpi/pdes.c processes every pair of every
                 rank): an assumption, default 20 ns

hop (per-hop latency of a small collective step on the cluster's network,
e.g. 2-5 us on InfiniBand with MPI) and bw (per-rank bandwidth, 12.5 GB/s =
100 Gb/s) are ASSUMPTIONS, not measurements. The K = 2 line also reports the
per-window MPI cost measured on this machine and the per-hop latency it
implies (3 collectives per window, one hop each at K = 2).
"""
import argparse
import math
import sys

MEASURED = {"mode", "ranks", "wall_s", "sim_s", "windows", "messages", "allreduces", "allgathers", "mpi_s",
            "mpi_max_s", "mpi_allreduce_s", "mpi_allgather_s", "peak_rss_mb", "build_s", "match_s", "load_s",
            "node_events_per_s_per_rank", "cross_instances", "cross_arrivals", "result_hash",
            "job_end", "sim_end_ns", "runs", "scaling", "label", "write_report_s", "peak_rss_mb_per_rank"}


def measured(k):
    """Keys that are measurements, not a description of the job."""
    return k in MEASURED or k.startswith("phase_")


def parse(paths):
    rows = []
    for p in paths:
        for line in open(p):
            t = line.split()
            if not t or t[0] != "BENCH":
                continue
            name = "pdes"
            kv = {}
            for x in t[1:]:
                if "=" in x:
                    k, v = x.split("=", 1)
                    kv[k] = v
                else:
                    name = x
            if kv.get("mode", "pdes") != "pdes" or "ranks" not in kv or "windows" not in kv:
                continue
            kv["_name"] = name
            rows.append(kv)
    return rows


def key_of(r):
    return tuple(sorted((k, v) for k, v in r.items() if not measured(k)))


def wall(r):
    return float(r.get("sim_s", r.get("wall_s", "nan")))


def label(key):
    d = dict(key)
    parts = [d.pop("_name")]
    for k in ("gpus", "events", "coll_frac", "group", "cross", "lookahead_ns"):
        if k in d:
            parts.append("%s=%s" % (k, d.pop(k)))
    if "local_lat_ns" in d and d.get("local_lat_ns") != dict(key).get("lookahead_ns"):
        parts.append("local_lat_ns=%s" % d["local_lat_ns"])
    return " ".join(parts)


def project(r1, r2, ks, hop, bw, recv_ns):
    t1 = wall(r1)
    tc1 = t1 - float(r1.get("mpi_s", 0))
    w = float(r2["windows"])
    m2 = float(r2["messages"])
    cap = float(r2["arrivals"]) if "arrivals" in r2 else float("inf")
    out = []
    for k in ks:
        lg = math.ceil(math.log2(k))
        mk = min(cap, m2 * (1 - 1 / k) / 0.5)
        mw = mk / w if w else 0.0
        per_win = 2 * lg * hop + (k - 1) * 24 / bw + mw * 16 / bw
        tk = tc1 / k + w * per_win + mk * recv_ns
        out.append((k, tk, t1 / (k * tk), w * per_win / tk, mk))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw", nargs="+")
    ap.add_argument("--hop-us", default="2,3,5", help="per-hop latencies to project with, us (default 2,3,5)")
    ap.add_argument("--bw-gbs", type=float, default=12.5, help="per-rank bandwidth, GB/s (default 12.5)")
    ap.add_argument("--recv-ns", type=float, default=20.0, help="cost per received arrival pair, ns (default 20)")
    ap.add_argument("--ks", default="64,128,256,512,1024")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables (docs/scaling-phold.md)")
    a = ap.parse_args()
    hops = [float(x) * 1e-6 for x in a.hop_us.split(",")]
    ks = [int(x) for x in a.ks.split(",")]
    bw = a.bw_gbs * 1e9
    recv = a.recv_ns * 1e-9
    by = {}
    for r in parse(a.raw):
        by.setdefault(key_of(r), {})[int(r["ranks"])] = r
    md = a.markdown
    n = 0
    for key in sorted(by, key=label):
        runs = by[key]
        if 1 not in runs or 2 not in runs:
            continue
        n += 1
        r1, r2 = runs[1], runs[2]
        t1, t2 = wall(r1), wall(r2)
        w2 = float(r2["windows"])
        mpi2 = float(r2.get("mpi_s", 0))
        tc1 = t1 - float(r1.get("mpi_s", 0))
        tc2 = t2 - mpi2
        per_win = mpi2 / w2 if w2 else 0.0
        head = ("measured: T(1) = %.3f s (compute %.3f s), T(2) = %.3f s (compute %.3f s, MPI %.3f s), "
                "efficiency at K = 2 %.0f %%; windows %d at K = 1, %d at K = 2; MPI per window at K = 2 on this "
                "machine %.1f us (%.1f us per collective)" % (
                    t1, tc1, t2, tc2, mpi2, 100 * t1 / (2 * t2), int(r1["windows"]), int(w2), per_win * 1e6,
                    per_win / 2 * 1e6))
        if md:
            print("**%s**  \n%s.\n" % (label(key), head))
            print("| K | " + " | ".join("T(K) s, hop %g us | eff. | sync share" % (h * 1e6) for h in hops) + " |")
            print("|---:|" + "---:|---:|---:|" * len(hops))
        else:
            print("%s\n  %s" % (label(key), head))
            print("  %6s " % "K" + "".join("  hop %g us: T(K) s   eff  sync" % (h * 1e6) for h in hops))
        proj = [project(r1, r2, ks, h, bw, recv) for h in hops]
        for i, k in enumerate(ks):
            if md:
                print("| %d | " % k + " | ".join("%.4f | %.1f %% | %.0f %%" % (p[i][1], 100 * p[i][2], 100 * p[i][3])
                                                  for p in proj) + " |")
            else:
                print("  %6d " % k + "".join("  %18.4f %5.1f%% %4.0f%%" % (p[i][1], 100 * p[i][2], 100 * p[i][3])
                                              for p in proj))
        # what it would take: node-events per rank per window for 80 % efficiency at each K (hop = middle
        # value): compute per window per rank (events / rate) >= 4 x sync cost per window
        nodes = float(r1.get("nodes", "nan"))
        h = hops[len(hops) // 2]
        rate1 = nodes / tc1 if tc1 > 0 else float("nan")
        need = []
        for k in ks:
            lg = math.ceil(math.log2(k))
            need.append((k, 4 * 2 * lg * h * rate1))
        have = nodes / w2 if w2 else float("nan")
        txt = ("for 80 %% efficiency the compute per window must be 4x the sync cost: at hop %g us and %.1f M "
               "node-events/s (K = 1), each rank needs per window %s node-events; this job has %.0f per window "
               "in all (%.0f per rank at K = 2)" % (
                   h * 1e6, rate1 / 1e6, ", ".join("%.0f at K = %d" % (v, k) for k, v in need), have, have / 2))
        print(txt + (".\n" if md else ""))
        print()
    if not n:
        print("project.py: no workload has both a K = 1 and a K = 2 run", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
