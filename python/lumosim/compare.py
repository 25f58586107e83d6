"""Two runs side by side: ``python3 -m lumosim.compare A.h5 B.h5 [--run A] [--run B]``.

Per rank: the window, each iteration's time and the iteration's breakdown
components (predicted side by default, ``--side actual``), run A's value, run
B's, the difference B - A (ns) and the ratio B / A; and the job span. GPUs are
matched by rank, iterations by their position within the rank.

The ratio is exactly 1.0 when the two values are equal (0 and 0 included),
NaN when A is 0 and B is not. Exit status: 0, or 1 for a file or run that
cannot be read, 2 for bad arguments; the reason is one line on stderr.

As a library: ``compare_runs(a, run_a, b, run_b)`` -> DataFrame with
columns rank, iteration, name, metric, a_ns, b_ns, diff_ns, ratio.
"""

import sys

import numpy as np

from ._cli import OneLineParser, fail, fmt_table, run_main

PROG = "lumosim.compare"


def _results(x, path_for_error):
    import lumosim
    if isinstance(x, str):
        x = lumosim.load(x, kernels=False)
    if getattr(x, "kind", None) != "lumosim-results":
        raise lumosim.LumosimFileError(path_for_error, "is a lumosim graph store, not a result archive "
                                                       "(simulate it: lumosim sim JOB.h5 -o RESULT.h5)")
    return x


def _ratio(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(a != 0, b / np.where(a != 0, a, 1.0), np.nan)
    return np.where(a == b, 1.0, r)


def _rows(res, run, side):
    """Long table (rank, iteration, name, metric, value) of one run."""
    import pandas as pd
    rk = res.ranks[res.ranks["run"] == run]
    it = res.iterations[res.iterations["run"] == run]
    bd = res.breakdown[res.breakdown["run"] == run]
    col = "%s_ns" % side
    parts = [pd.DataFrame({"rank": rk["rank"], "iteration": -1, "name": "", "metric": "window",
                           "value": rk["window_%s_ns" % side]}),
             pd.DataFrame({"rank": it["rank"], "iteration": it["iteration"], "name": it["name"],
                           "metric": "iteration", "value": it[col]}),
             pd.DataFrame({"rank": bd["rank"], "iteration": bd["iteration"], "name": bd["name"],
                           "metric": bd["component"].astype(str), "value": bd[col]})]
    df = pd.concat(parts, ignore_index=True)
    df["order"] = np.where(df["metric"] == "window", 0, np.where(df["metric"] == "iteration", 1, 2))
    return df


def compare_runs(a, run_a=None, b=None, run_b=None, side="predicted"):
    """Compare run ``run_a`` of ``a`` with run ``run_b`` of ``b`` (Results
    objects or paths; ``b`` defaults to ``a``). Returns a DataFrame: rank,
    iteration (-1 for the window and the job), name, metric (``window``,
    ``iteration``, a breakdown component, or ``job`` for the job span), a_ns,
    b_ns (nullable Int64: absent on one side), diff_ns = b - a, ratio = b / a
    (1.0 when equal, NaN when a is 0 and b is not or a side is absent)."""
    import pandas as pd
    if side not in ("predicted", "actual"):
        raise ValueError("side must be 'predicted' or 'actual'")
    b = a if b is None else b
    a = _results(a, a if isinstance(a, str) else getattr(a, "path", "?"))
    b = _results(b, b if isinstance(b, str) else getattr(b, "path", "?"))
    run_a = a.run(run_a)
    run_b = b.run(run_b if run_b is not None else run_a if b is a else None)
    ra, rb = _rows(a, run_a, side), _rows(b, run_b, side)
    key = ["rank", "iteration", "metric", "order"]
    m = ra.merge(rb, on=key, how="outer", suffixes=("_a", "_b"))
    m["name"] = m["name_a"].where(m["name_a"].notna(), m["name_b"])
    names_differ = m["name_a"].notna() & m["name_b"].notna() & (m["name_a"] != m["name_b"])
    m.loc[names_differ, "name"] = m.loc[names_differ, "name_a"] + "|" + m.loc[names_differ, "name_b"]
    m = m.sort_values(["rank", "iteration", "order"], kind="mergesort")
    out = pd.DataFrame({
        "rank": m["rank"].astype(np.int64),
        "iteration": m["iteration"].astype(np.int64),
        "name": m["name"].fillna(""),
        "metric": m["metric"],
        "a_ns": m["value_a"].astype("Int64"),
        "b_ns": m["value_b"].astype("Int64"),
    })
    ja = a.runs.set_index("run").loc[run_a, "job_%s_ns" % side]
    jb = b.runs.set_index("run").loc[run_b, "job_%s_ns" % side]
    job = pd.DataFrame({"rank": [-1], "iteration": [-1], "name": [""], "metric": ["job"],
                        "a_ns": pd.array([None if pd.isna(ja) else int(ja)], dtype="Int64"),
                        "b_ns": pd.array([None if pd.isna(jb) else int(jb)], dtype="Int64")})
    out = pd.concat([out, job], ignore_index=True)
    out["diff_ns"] = out["b_ns"] - out["a_ns"]
    both = out["a_ns"].notna() & out["b_ns"].notna()
    ratio = np.full(len(out), np.nan)
    ratio[both.to_numpy()] = _ratio(out.loc[both, "a_ns"].astype(np.int64), out.loc[both, "b_ns"].astype(np.int64))
    out["ratio"] = ratio
    out.attrs.update({"a": a.path, "run_a": run_a, "b": b.path, "run_b": run_b, "side": side})
    return out


def _text(df):
    import pandas as pd

    def v(x):
        return "-" if pd.isna(x) else str(int(x))

    rows = []
    for r in df.itertuples(index=False):
        what = {"window": "window", "job": "span"}.get(r.metric) or (
            "%s %s" % (r.name, "time" if r.metric == "iteration" else r.metric))
        rank = "job" if r.metric == "job" else str(r.rank)
        ratio = "-" if pd.isna(r.ratio) else "%.6f" % r.ratio
        rows.append([rank, what, v(r.a_ns), v(r.b_ns), v(r.diff_ns), ratio])
    return fmt_table(rows, ["rank", "what", "A_ns", "B_ns", "B-A_ns", "B/A"], right=[0, 2, 3, 4, 5])


def main(argv=None):
    p = OneLineParser(prog=PROG, description="Print two runs of lumosim result archives side by side.")
    p.add_argument("a", metavar="A.h5", help="result archive of run A")
    p.add_argument("b", metavar="B.h5", nargs="?", help="result archive of run B (default: A.h5)")
    p.add_argument("--run", action="append", default=[], metavar="NAME",
                   help="run name: the first --run is A's, the second B's (one: both); "
                        "needed for an archive of several runs")
    p.add_argument("--side", choices=("predicted", "actual"), default="predicted",
                   help="compare the simulated (default) or the traced times")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    o = p.parse_args(argv)
    if len(o.run) > 2:
        return fail(PROG, "at most two --run options (A's and B's)", 2)
    try:
        import lumosim
    except ImportError as e:  # pragma: no cover
        return fail(PROG, e)
    ra = o.run[0] if o.run else None
    rb = o.run[1] if len(o.run) > 1 else ra
    try:
        a = lumosim.load(o.a, kernels=False)
        b = a if o.b is None or o.b == o.a else lumosim.load(o.b, kernels=False)
        df = compare_runs(a, ra, b, rb, side=o.side)
    except lumosim.LumosimFileError as e:
        return fail(PROG, e)
    except ImportError as e:
        return fail(PROG, "%s (install python3-h5py and python3-pandas)" % e)
    if o.csv:
        df.to_csv(sys.stdout, index=False)
        return 0
    at = df.attrs
    print("A: %s, run %s" % (at["a"], at["run_a"]))
    print("B: %s, run %s" % (at["b"], at["run_b"]))
    print("%s times in ns; ratio B/A (1 when equal)" % at["side"])
    print()
    print(_text(df))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
