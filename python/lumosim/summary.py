"""The run table of result archives as text: ``python3 -m lumosim.summary FILE.h5...``.

For a result archive: one line per run (GPUs, iterations, mean predicted
and actual iteration time, mean error, job span, command); ``--ranks`` adds
the per-rank table, ``--kernels N`` the N GPU ops with the most predicted
time. For a graph store: its per-GPU table. For a search result: its space
and the ``--top N`` best layouts (default 10, 0 for all) with step time and
throughput, in the order lumosim ranked them. ``--csv`` prints the full
DataFrame (every column: the runs, the GPUs, or the search's ranking)
instead. Exit status 1 with one line on stderr for
a file that cannot be read.
"""

import sys

from ._cli import OneLineParser, fail, fmt_table, run_main

PROG = "lumosim.summary"


def _ms(x):
    try:
        return "-" if x != x else "%.3f" % x
    except TypeError:
        return "-"


def _pct(x):
    return "-" if x != x else "%+.2f%%" % (100.0 * x)


def _runs_text(res):
    rows = []
    for r in res.runs.itertuples(index=False):
        rows.append([r.run, r.ngpus, r.nnodes, r.iterations, _ms(r.iter_predicted_mean_ms), _ms(r.iter_actual_mean_ms),
                     _pct(r.iter_error_mean), _ms(r.job_predicted_ms), _ms(r.job_actual_ms), r.command])
    return fmt_table(rows, ["run", "gpus", "nodes", "iters", "iter_pred_ms", "iter_act_ms", "iter_err",
                            "job_pred_ms", "job_act_ms", "command"], right=range(1, 9))


def _ranks_text(res):
    rows = []
    for r in res.ranks.itertuples(index=False):
        rows.append([r.run, r.gpu, r.rank, r.nodes, _ms(r.window_predicted_ms),
                     _ms(r.window_actual_ms) if r.observed else "-", _pct(r.window_error),
                     _ms(r.exposed_compute_predicted_ns / 1e6), _ms(r.overlapped_predicted_ns / 1e6),
                     _ms(r.exposed_comm_predicted_ns / 1e6), _ms(r.other_predicted_ns / 1e6), r.source])
    return fmt_table(rows, ["run", "gpu", "rank", "nodes", "pred_ms", "act_ms", "error", "compute_ms",
                            "overlap_ms", "comm_ms", "other_ms", "source"], right=range(1, 11))


def _kernels_text(res, n):
    k = res.kernels.groupby("run", sort=False).head(n)
    rows = [[r.run, r.kind, r.count, _ms(r.predicted_total_ns / 1e6), _ms(r.predicted_mean_ms),
             _ms(r.actual_total_ns / 1e6) if r.observed_count else "-", _ms(r.actual_mean_ms),
             r.name if len(r.name) <= 70 else r.name[:67] + "..."] for r in k.itertuples(index=False)]
    return fmt_table(rows, ["run", "kind", "count", "pred_total_ms", "pred_mean_ms", "act_total_ms", "act_mean_ms",
                            "name"], right=range(2, 7))


def _gpus_text(st):
    rows = [[r.gpu, r.rank, r.world_size, r.nodes, r.edges, r.procs, r.iterations, r.collectives, r.latency_mode,
             r.source] for r in st.gpus.itertuples(index=False)]
    return fmt_table(rows, ["gpu", "rank", "world", "nodes", "edges", "procs", "iters", "colls", "latency", "source"],
                     right=range(0, 8))


def _na(x, f):
    """f % x, or "-" for what the file does not know (NaN, <NA>)."""
    try:
        return "-" if x is None or x != x else f % x
    except TypeError:  # pandas.NA
        return "-"


def _search_text(x, top):
    sp = x.space
    unit = x.throughput_unit or "throughput"
    # a space of a model (search --model) or of a traced job (--from)
    head = ("from %s, %s GPUs" % (sp["from"], sp.get("gpus")) if sp.get("from")
            else "%s on %s %s GPUs, global batch %s" % (sp.get("model"), sp.get("gpus"), sp.get("gpu"),
                                                       sp.get("global_batch")))
    lines = ["%s, %d configurations, %d simulated; ranked by %s%s"
             % (head, len(x.candidates), len(x.ranking), sp.get("rank_by", "step"),
                " (%s)" % x.throughput_unit if x.throughput_unit else "")]
    rk = x.ranking if top <= 0 else x.ranking.head(top)
    rows = [[r.rank, r.tp, r.pp, r.dp, r.cp, r.ep, _na(r.micro_batch, "%d"),
             "inter:%d" % r.vstages if r.vstages > 1 else "1f1b", r.recompute,
             "on" if r.distributed_optimizer else "off", _na(r.step_ns / 1e9, "%.3f"),
             _na(r.throughput_per_s, "%.2f"), _na(r.tokens_per_s, "%.0f"), _na(r.peak_memory_bytes / 1e9, "%.1f")]
            for r in rk.itertuples(index=False)]
    lines.append(fmt_table(rows, ["rank", "tp", "pp", "dp", "cp", "ep", "mb", "schedule", "recompute", "dist-opt",
                                  "step_s", unit, "tokens/s", "peak_GB"], right=range(0, 14)))
    if len(rk) < len(x.ranking):
        lines.append("(best %d of %d; --top 0 for all)" % (len(rk), len(x.ranking)))
    return "\n".join(lines)


def main(argv=None):
    p = OneLineParser(prog=PROG, description="Summarize lumosim result archives and graph stores.")
    p.add_argument("files", nargs="+", metavar="FILE.h5")
    p.add_argument("--ranks", action="store_true", help="also the per-rank table of each run")
    p.add_argument("--kernels", type=int, default=0, metavar="N",
                   help="also the N GPU ops (by name) with the most predicted time, per run")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="a search result's N best layouts (default 10; 0: all)")
    p.add_argument("--csv", action="store_true",
                   help="print the runs (or GPU, or search ranking) DataFrame as CSV, every column")
    o = p.parse_args(argv)
    try:
        import lumosim
    except ImportError as e:  # pragma: no cover
        return fail(PROG, e)
    for i, path in enumerate(o.files):
        try:
            x = lumosim.load(path, kernels=o.kernels > 0)
        except lumosim.LumosimFileError as e:
            return fail(PROG, e)
        except ImportError as e:
            return fail(PROG, "%s (install python3-h5py and python3-pandas)" % e)
        if o.csv:
            (x.runs if x.kind == "lumosim-results" else x.ranking if x.kind == "lumosim-search"
             else x.gpus).to_csv(sys.stdout, index=False)
            continue
        if i:
            print()
        if x.kind == "lumosim-results":
            print("%s: lumosim result archive, schema %s, %d run(s)" % (path, x.attrs.get("schema_version"), len(x.runs)))
            print(_runs_text(x))
            if o.ranks:
                print()
                print(_ranks_text(x))
            if o.kernels > 0:
                print()
                if x.kernels is None:
                    print("(no per-kernel summary: no run embeds its graphs)")
                else:
                    print(_kernels_text(x, o.kernels))
        elif x.kind == "lumosim-search":
            print("%s: lumosim search result, schema %s, written by: %s"
                  % (path, x.attrs.get("schema_version"), x.attrs.get("created_by", "")))
            print(_search_text(x, o.top))
        else:
            print("%s: lumosim graph store, schema %s, %d GPU(s), written by: %s"
                  % (path, x.attrs.get("schema_version"), len(x.gpus), x.attrs.get("created_by", "")))
            print(_gpus_text(x))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
