"""Result archives (``lumosim sim STORE -o RESULTS.h5``) as pandas tables.

Layout: docs/hdf5-schema.md, "Result file"; columns: docs/python.md.
"""

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import pandas as pd

from . import _graph, _schema
from ._h5 import LumosimFileError, Reader, texts


@dataclass
class Results:
    """A lumosim result archive, read whole into DataFrames.

    Tables (columns with units in docs/python.md):

    - ``runs``: one row per run -- name, command, provenance, deterministic
      run attributes and an iteration-time summary;
    - ``ranks``: one row per (run, GPU) -- window, breakdown over the window,
      node agreement, critical-path totals, mean duty cycle;
    - ``iterations``: one row per (run, GPU, ``ProfilerStep#N``) -- actual and
      predicted time and relative error;
    - ``breakdown``: one row per (run, GPU, iteration, component) --
      ``actual_ns`` and ``predicted_ns``; the components of one iteration
      sum to its ``actual_ns`` / ``predicted_ns`` in ``iterations``;
    - ``kernels``: per (run, node kind, name) over the GPU nodes (kernel,
      memcpy, memset) of all GPUs: count, total and mean duration, actual
      and predicted -- the sum over GPUs of ``gpu_kernels``;
    - ``gpu_kernels``: the same per (run, GPU, kind, name), as the archive
      stores it (``/runs/NAME/kernels``), read when first used (the other
      tables never expand a GPU's shared rows: a GPU that shares its
      structure counts its holder's rows). For runs written before that
      table, both are computed from the graphs the run embeds
      (``graph/nodes``: kind, name, ``obs_start``/``obs_end``) and the
      simulated ``nodes/start``/``end``; such a run without embedded
      graphs has no rows. ``None`` when no run has rows (or
      ``load(..., kernels=False)``).

    ``nodes`` is one GPU's node table (``load(..., nodes=True)``), else
    ``None``; ``node_table(run, gpu)`` reads any other.

    An "actual" figure exists only for a GPU whose graph has observed times
    (column ``observed``); for others (``lumosim synth`` / ``whatif``) the
    archive stores 0, kept as 0 in the ``*_ns`` columns, and the errors are
    NaN (``null`` in ``sim --json``).
    """

    path: str
    attrs: Dict[str, object]
    runs: pd.DataFrame
    ranks: pd.DataFrame
    iterations: pd.DataFrame
    breakdown: pd.DataFrame
    kernels: Optional[pd.DataFrame] = None
    nodes: Optional[pd.DataFrame] = None
    _graph_ext: Dict[str, dict] = field(default_factory=dict, repr=False)
    # the per-GPU kernel table, or a function that reads it (made on first
    # use: a row per GPU and kernel name is 800 M rows at 65,536 GPUs)
    _gpu_kernels: object = field(default=None, repr=False)

    kind = _schema.KIND_RESULTS

    @property
    def gpu_kernels(self) -> Optional[pd.DataFrame]:
        if callable(self._gpu_kernels):
            self._gpu_kernels = self._gpu_kernels()
        return self._gpu_kernels

    @property
    def run_names(self) -> List[str]:
        return list(self.runs["run"])

    def run(self, name=None) -> str:
        """Resolve a run name: ``None`` means the only run of the archive."""
        names = self.run_names
        if name is None:
            if len(names) != 1:
                raise LumosimFileError(self.path, "holds %d runs (%s): choose one (run=NAME, --run NAME)" % (len(names), ", ".join(names)))
            return names[0]
        if name not in names:
            raise LumosimFileError(self.path, "no run %r (runs: %s)" % (name, ", ".join(names) or "none"))
        return name

    def node_table(self, run=None, gpu=0) -> pd.DataFrame:
        """One GPU's nodes in a run: the embedded graph's node table (as
        ``GraphStore.node_table``) plus the simulated ``start_ns``, ``end_ns``
        (and ``bind_start``, ``bind_end``: in-edge that decided them, -1
        none, when the archive has them)."""
        run = self.run(run)
        with Reader(self.path) as r:
            return _run_node_table(r, run, gpu)

    def network_flows(self, run=None) -> Optional[pd.DataFrame]:
        """Every network flow of a ``sim --link-sharing`` run (the archive's
        ``net_flows``, its last sweep): one row per collective instance or
        send/receive pair that crosses nodes, in the sweep's order (start,
        then first participant). Columns: ``gpu``, ``node`` (its first
        participant's GPU and graph node), ``kind``, ``participants``,
        ``bytes`` (-1 unknown), ``links`` (links it loads), ``start_ns``,
        ``alone_ns`` (its transfer alone on an idle fabric), ``shared_ns``
        (as simulated), ``slowdown`` (shared / alone). ``None`` for a run
        without link sharing."""
        run = self.run(run)
        with Reader(self.path) as r:
            return _net_flows(r, "/runs/%s/net_flows" % run)

    def network_links(self, run=None) -> Optional[pd.DataFrame]:
        """Every link that carried traffic in a ``sim --link-sharing`` run
        (the archive's ``net_links``), by id: ``link``, ``name`` ("gpu 3 nic
        tx", "leaf 0 up", ...), ``flows`` (that load it), ``busy_ns`` (time at
        full load), ``utilization`` (busy over the flows' span, the run's
        ``network["span_ns"]``). ``None`` for a run without link sharing."""
        run = self.run(run)
        with Reader(self.path) as r:
            return _net_links(r, "/runs/%s" % run)

    def graph(self, run=None) -> pd.DataFrame:
        """The per-GPU table of a run's embedded graph (as ``GraphStore.gpus``)."""
        run = self.run(run)
        with Reader(self.path) as r:
            base = "/runs/%s/graph" % run
            if not r.has(base):
                r.fail("run %s does not embed its graphs" % run)
            return _graph.gpu_table(r, base)[0]


def _run_node_table(r, run, gpu):
    base = "/runs/%s" % run
    if r.attrs(base).get("detail") == "summary":
        r.fail("run %s was written with --detail summary: it has no per-node rows (rerun lumosim sim with "
               "--detail ops)" % run)
    if not r.has(base + "/graph"):
        r.fail("run %s does not embed its graphs (no %s/graph): node tables need them" % (run, base))
    _, ext = _graph.gpu_table(r, base + "/graph")
    df = _graph.node_table(r, base + "/graph", ext, gpu)
    G = r.nrows(base + "/gpus/rank")
    off, cnt = r.extents_shared(base + "/gpus", "node", G, base + "/nodes/start", r.nrows(base + "/nodes/start"))
    o, n = int(off[gpu]), int(cnt[gpu])
    if n != len(df):
        r.fail("%s/gpus/node_count of GPU %d is %d, its embedded graph has %d nodes" % (base, gpu, n, len(df)))
    df["start_ns"] = r.col(base + "/nodes/start", None, "i", o, o + n).astype(np.int64)
    df["end_ns"] = r.col(base + "/nodes/end", None, "i", o, o + n).astype(np.int64)
    for b in ("bind_start", "bind_end"):
        if r.has(base + "/nodes/" + b):
            df[b] = r.col(base + "/nodes/" + b, None, "i", o, o + n).astype(np.int64)
    return df


_NET_FLOW_COLS = (("gpu", "u", "1"), ("node", "u", "1"), ("kind", "i", "1"), ("participants", "i", "1"),
                  ("bytes", "i", "bytes"), ("links", "i", "1"), ("start", "i", "ns"), ("alone", "i", "ns"),
                  ("shared", "i", "ns"))


def _net_flows(r, base):
    if not r.exists(base):
        return None
    n = r.nrows(base + "/gpu")
    d = {}
    for c, k, u in _NET_FLOW_COLS:
        r.units("%s/%s" % (base, c), u)
        d[c + "_ns" if u == "ns" else c] = r.col("%s/%s" % (base, c), n, k).astype(np.int64)
    names = r.enum_names(base + "/kind", _schema.COLL_KINDS)
    if n and (d["kind"].min() < 0 or d["kind"].max() >= len(names)):
        r.fail("%s/kind holds a value outside its %d names" % (base, len(names)))
    df = pd.DataFrame(d)
    df["kind"] = [names[k] for k in d["kind"]]
    df["slowdown"] = np.where(df["alone_ns"] > 0, df["shared_ns"] / df["alone_ns"].where(df["alone_ns"] > 0, 1), 1.0)
    return df


def _net_links(r, run):
    base = run + "/net_links"
    if not r.exists(base):
        return None
    n = r.nrows(base + "/link")
    r.units(base + "/busy", "ns")
    df = pd.DataFrame({"link": r.col(base + "/link", n, "u").astype(np.int64),
                       "name": texts(r.col(base + "/name", n, "S")),
                       "flows": r.col(base + "/flows", n, "u").astype(np.int64),
                       "busy_ns": r.col(base + "/busy", n, "f").astype(np.float64)})
    net = _network(r, run.rsplit("/", 1)[-1], r.attrs(run))
    span = float(net["span_ns"]) if net else 0.0
    df["utilization"] = df["busy_ns"] / span if span > 0 else 0.0
    return df


def _network(r, name, ra):
    """sim --link-sharing's figures (the run's attribute ``network``, the
    report's JSON object), a dict; None for a run without link sharing."""
    t = ra.get("network")
    if t is None:
        return None
    try:
        d = json.loads(t)
    except ValueError:
        d = None
    if not isinstance(d, dict) or not isinstance(d.get("hottest_links"), list):
        r.fail("run %s: the attribute network is not the link-sharing figures" % name)
    return d


def _err(pred, act, observed):
    pred = np.asarray(pred, dtype=np.float64)
    act = np.asarray(act, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(act != 0, (pred - act) / np.where(act != 0, act, 1), 0.0)
    return np.where(observed, e, np.nan)


def _duty_means(r, base, gp, G, side):
    """Each GPU's mean duty-cycle bin (NaN without bins), read in slices
    that end at GPU boundaries: a 98,304-GPU run's bins were 10 GB. A GPU
    may share an earlier GPU's bins (docs/hdf5-schema.md, "Shared
    structure"): only the GPUs holding rows are read, the others take the
    mean of the rows they point at."""
    where = "%s/duty/%s" % (base, side)
    nd = r.nrows(where)
    off, cnt = r.extents_shared(gp, "duty_" + side, G, where, nd)
    r.col(where, nd, "f", 0, 0)  # its shape and type
    own = np.zeros(G, dtype=bool)
    acc = 0
    for i in range(G):  # the holders: offsets that are the prefix sums
        if off[i] == acc:
            own[i] = True
            acc += int(cnt[i])
    ho = np.nonzero(own)[0]
    sums = np.zeros(G, dtype=np.float64)
    g = 0
    while g < len(ho):
        a, e = int(off[ho[g]]), g
        while e < len(ho) and int(off[ho[e]] + cnt[ho[e]]) - a <= (1 << 24) or e == g:  # at least one GPU a slice
            e += 1
        b = int(off[ho[e - 1]] + cnt[ho[e - 1]])
        if b > a:
            vals = r.col(where, nd, "f", a, b).astype(np.float64)
            nz = ho[g:e][cnt[ho[g:e]] > 0]
            sums[nz] = np.add.reduceat(vals, off[nz] - a)
        g = e
    held = {(int(off[i]), int(cnt[i])): sums[i] for i in ho}
    for i in np.nonzero(~own)[0]:
        sums[i] = held[(int(off[i]), int(cnt[i]))]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cnt > 0, sums / np.where(cnt > 0, cnt, 1), np.nan)


def _breakdown(r, table, side, rows, row, wait):
    """``TABLE/breakdown_SIDE`` (rows x 4, the C reader's width) checked as
    the C reader checks it (io/h5_archive.c check_breakdowns): each part
    0..TIME_MAX ns, the wait (``TABLE/exposed_comm_wait_SIDE``; None: an
    archive written before it, 0) within the exposed communication.
    Returns (array, column names, wait)."""
    comps = _schema.BREAKDOWN_COMPONENTS
    where = "%s/breakdown_%s" % (table, side)
    a, names = r.col2(where, rows, len(comps), "i")
    names = names or list(comps)
    if sorted(names) != sorted(comps):
        r.fail("%s: attribute columns names %s, expected %s" % (where, ", ".join(names), ", ".join(comps)))
    a = a.astype(np.int64)
    for j, comp in enumerate(names):
        r.check("%s (%s)" % (where, comp), a[:, j], 0, _schema.TIME_MAX, row, unit=" ns")
    wait = np.zeros(rows, dtype=np.int64) if wait is None else np.asarray(wait, dtype=np.int64)
    r.check("%s/exposed_comm_wait_%s" % (table, side), wait, 0, a[:, names.index("exposed_comm")], row,
            unit=" ns")
    return a, names, wait


def _read_run(r, name, want_kernels):
    base = "/runs/%s" % name
    gp = base + "/gpus"
    ra = r.attrs(base)
    prov = r.attrs(base + "/provenance") if r.has(base + "/provenance") else {}
    G = r.nrows(gp + "/rank")
    if "ngpus" in ra and int(ra["ngpus"]) != G:
        r.fail("%s/rank has %d rows, the run's attribute ngpus is %d" % (gp, G, int(ra["ngpus"])))

    if ra.get("detail") == "summary":
        # lumosim sim --detail summary: no per-node rows (docs/hdf5-schema.md,
        # "Level of detail"); the node counts are the run's own, and a GPU
        # whose times are an earlier GPU's points at that GPU's offset, as
        # at the other levels
        node_off, node_cnt = r.extents_shared(gp, "node", G)
        nnode = int(node_cnt.sum())
    else:
        nnode = r.nrows(base + "/nodes/start")
        node_off, node_cnt = r.extents_shared(gp, "node", G, base + "/nodes/start", nnode)
        r.col(base + "/nodes/end", nnode, "i")  # shape check only
    niter = r.nrows(base + "/iterations/actual")
    iter_off, iter_cnt = r.extents(gp, "iter", G, base + "/iterations/actual", niter)
    duty = {side: _duty_means(r, base, gp, G, side) for side in ("actual", "predicted")}
    r.extents(gp, "cp", G, base + "/critical_path/node", r.nrows(base + "/critical_path/node"))

    def c(col, kinds="iu"):
        return r.col("%s/%s" % (gp, col), G, kinds)

    embedded = r.has(base + "/graph")
    gext = None
    flat = None
    if embedded:
        _, gext = _graph.gpu_table(r, base + "/graph")
        if len(gext["node"][1]) != G or np.any(gext["node"][1] != node_cnt):
            r.fail("%s/graph/gpus/node_count disagrees with %s/node_count" % (base, gp))
        observed = _graph.gpus_observed(r, base + "/graph", gext)
        if want_kernels and not r.has(base + "/kernels"):
            flat = _graph.flat_gpu_nodes(r, base + "/graph", gext)
    else:
        # no graph: a GPU has observed times when its actual window is not 0
        observed = c("window_actual") != 0

    rank = c("rank").astype(np.int64)
    # the ranges of the C reader (io/h5_archive.c read_run_gpus): starts
    # within +-TIME_MAX, windows ending within it, every span 0..TIME_MAX
    T = _schema.TIME_MAX
    was = r.check(gp + "/window_actual_start", c("window_actual_start"), -T, T, unit=" ns")
    wps = r.check(gp + "/window_predicted_start", c("window_predicted_start"), -T, T, unit=" ns")
    wa = r.check(gp + "/window_actual", c("window_actual"), 0, T - was, unit=" ns")
    wp = r.check(gp + "/window_predicted", c("window_predicted"), 0, T - wps, unit=" ns")
    ranks = pd.DataFrame({
        "run": name,
        "gpu": np.arange(G, dtype=np.int64),
        "rank": rank,
        "source": texts(c("source", "S")),
        "observed": observed,
        "coupled": c("coupled").astype(bool),
        "clock_offset_ns": c("clock_offset").astype(np.int64),
        "nodes": node_cnt,
        "gpu_nodes": c("gpu_nodes").astype(np.int64),
        "iterations": iter_cnt,
        "window_actual_ns": _measured(wa, observed),
        "window_predicted_ns": wp,
        "window_error": np.where(observed, c("window_error", "f").astype(np.float64), np.nan),
        "window_actual_ms": np.where(observed, wa / 1e6, np.nan),
        "window_predicted_ms": wp / 1e6,
        "window_actual_start_ns": _measured(was, observed),
        "window_predicted_start_ns": wps,
    })
    for side in ("actual", "predicted"):
        a, names, wait = _breakdown(r, gp, side, G, "GPU", c("exposed_comm_wait_" + side))
        keep = _measured if side == "actual" else (lambda v, _: v.astype(np.int64))
        for j, comp in enumerate(names):
            ranks["%s_%s_ns" % (comp, side)] = keep(a[:, j], observed)
        ranks["exposed_comm_wait_%s_ns" % side] = keep(wait, observed)
    for side in ("actual", "predicted"):
        ranks["duty_%s_mean" % side] = duty[side]
    ranks["bin_ns"] = c("bin_ns").astype(np.int64)
    ranks["max_abs_start_err_ns"] = c("max_abs_start_err").astype(np.int64)
    ranks["max_abs_end_err_ns"] = c("max_abs_end_err").astype(np.int64)
    ranks["nodes_exact"] = c("nodes_exact").astype(np.int64)
    hcp = c("has_critical_path").astype(bool)
    ranks["has_critical_path"] = hcp
    ranks["cp_length_ns"] = c("cp_length").astype(np.int64)
    a, names = r.col2(gp + "/cp_by_cat", G, None, "i")
    for j, cat in enumerate(names or ()):
        ranks["cp_%s_ns" % cat] = a[:, j].astype(np.int64)

    # iterations
    ip = base + "/iterations"
    ig = r.col(ip + "/gpu", niter, "u").astype(np.int64)
    want_gpu = np.repeat(np.arange(G, dtype=np.int64), iter_cnt)
    bad = np.nonzero(ig != want_gpu)[0]
    if bad.size:
        r.fail("%s/gpu: row %d belongs to GPU %d, the offsets give GPU %d" % (ip, bad[0], ig[bad[0]], want_gpu[bad[0]]))
    ia = r.check(ip + "/actual", r.col(ip + "/actual", niter, "i"), 0, T, "row", unit=" ns")
    ipr = r.check(ip + "/predicted", r.col(ip + "/predicted", niter, "i"), 0, T, "row", unit=" ns")
    iobs = observed[ig] if niter else np.zeros(0, dtype=bool)
    index_in_gpu = np.arange(niter, dtype=np.int64) - iter_off[ig] if niter else np.zeros(0, dtype=np.int64)
    iters = pd.DataFrame({
        "run": name,
        "gpu": ig,
        "rank": rank[ig] if niter else np.zeros(0, dtype=np.int64),
        "iteration": index_in_gpu,
        "name": texts(r.col(ip + "/name", niter, "S")),
        "observed": iobs,
        "actual_ns": _measured(ia, iobs),
        "predicted_ns": ipr,
        "error": np.where(iobs, r.col(ip + "/error", niter, "f").astype(np.float64), np.nan),
        "actual_ms": np.where(iobs, ia / 1e6, np.nan),
        "predicted_ms": ipr / 1e6,
    })
    # the waits of the iteration's breakdown (optional columns: an archive
    # written before them has none, NaN here; the C reader gives 0)
    bds = {}
    for side in ("actual", "predicted"):
        w = ip + "/exposed_comm_wait_" + side
        bds[side] = _breakdown(r, ip, side, niter, "row", r.col(w, niter, "i") if r.has(w) else None)
        wv = bds[side][2].astype(np.float64) if r.has(w) else np.full(niter, np.nan)
        iters["exposed_comm_wait_%s_ns" % side] = np.where(iobs, wv, np.nan) if side == "actual" else wv

    # breakdown, long: (iteration row) x component
    (ba, na, _), (bp, np_, _) = bds["actual"], bds["predicted"]
    comps = na
    if np_ != na:
        r.fail("%s: breakdown_actual and breakdown_predicted name different columns" % ip)
    K = len(comps)
    rep = np.repeat(np.arange(niter), K)
    bd = pd.DataFrame({
        "run": name,
        "gpu": ig[rep],
        "rank": iters["rank"].to_numpy()[rep],
        "iteration": index_in_gpu[rep],
        "name": iters["name"].to_numpy()[rep],
        "component": pd.Categorical(np.tile(np.array(comps, dtype=object), niter), categories=comps),
        "observed": iobs[rep],
        "actual_ns": _measured(ba.reshape(-1), iobs[rep]),
        "predicted_ns": bp.reshape(-1).astype(np.int64),
    })

    # the run row
    any_obs = bool(observed.any())
    ws, we = ranks["window_predicted_start_ns"], ranks["window_predicted_start_ns"] + ranks["window_predicted_ns"]
    # the file's numbers (0 where not observed), as the C readers take the span
    wae = was + wa
    job_p = int(we.max() - ws.min()) if G else 0
    job_a = int(wae.max() - was.min()) if G else 0
    ob = iters[iters["observed"]]
    row = {
        "run": name,
        "command": prov.get("command_line", ""),
        "lumosim_version": prov.get("lumosim_version", ""),
        "host": prov.get("host", ""),
        "created": prov.get("created", ""),
        "mpi_ranks": prov.get("mpi_ranks"),
        "mapping": prov.get("mapping"),
        "config": prov.get("config"),
        "wall_seconds": prov.get("wall_seconds"),
        "ngpus": int(ra.get("ngpus", G)),
        "nnodes": int(ra.get("nnodes", nnode)),
        "events": ra.get("events"),
        "latency_mode": ra.get("latency_mode", ""),
        "graphs_embedded": bool(embedded),
        "detail": ra.get("detail", "nodes"),
        "network": _network(r, name, ra),
        "observed": any_obs,
        "iterations": int(niter),
        "iter_predicted_mean_ms": float(ipr.mean() / 1e6) if niter else np.nan,
        "iter_predicted_min_ns": int(ipr.min()) if niter else pd.NA,
        "iter_predicted_max_ns": int(ipr.max()) if niter else pd.NA,
        "iter_actual_mean_ms": float(ob["actual_ns"].mean() / 1e6) if len(ob) else np.nan,
        "iter_error_mean": float(ob["error"].mean()) if len(ob) else np.nan,
        "iter_abs_error_max": float(ob["error"].abs().max()) if len(ob) else np.nan,
        "job_predicted_ns": job_p,
        "job_actual_ns": job_a if any_obs else pd.NA,
        "job_error": float(_err([job_p], [job_a], [any_obs])[0]),
        "job_predicted_ms": job_p / 1e6,
        "job_actual_ms": job_a / 1e6 if any_obs else np.nan,
    }
    for pn, ps in zip(prov.get("phase_names", []) or [], prov.get("phase_seconds", []) or []):
        row["phase_%s_s" % pn] = float(ps)

    gk = kern = None
    if want_kernels and r.has(base + "/kernels"):
        held, weight = _gpu_kernels_from_file(r, base, name, G, rank, expand=False)
        kern = _job_kernels(held, name, weight)
        path = r.path
        def gk():  # every GPU's rows, expanded on demand (a holder's rows once per GPU sharing them)
            with Reader(path) as r2:
                return _gpu_kernels_from_file(r2, base, name, G, rank)
    elif flat is not None:
        gk = _gpu_kernels_from_graph(r, base, name, flat, nnode, _graph.node_rows({"node": (node_off, node_cnt)}),
                                     rank)
        kern = _job_kernels(gk, name)
    return row, ranks, iters, bd, kern, gk, gext



# The per-kernel summary: one row per (GPU, kind, name) of GPU work, the
# GPU's rows in the order of their first node -- what /runs/NAME/kernels
# holds (docs/hdf5-schema.md), or, for archives written before it, the same
# rows summed here from the embedded graph and the simulated times.
_GK_INT = ("count", "observed_count", "actual_total_ns", "predicted_total_ns")


def _gk_frame(name, gpu, rank, kind, names, count, obs, coll, atot, ptot):
    gk = pd.DataFrame({
        "run": name,
        "gpu": np.asarray(gpu, dtype=np.int64),
        "rank": np.asarray(rank, dtype=np.int64),
        "kind": pd.Categorical(list(kind), categories=list(_schema.GPU_NODE_KINDS)),
        "name": np.asarray(list(names), dtype=object),
        "count": np.asarray(count, dtype=np.int64),
        "observed_count": np.asarray(obs, dtype=np.int64),
        "collective": np.asarray(coll, dtype=bool),
        "actual_total_ns": np.asarray(atot, dtype=np.int64),
        "predicted_total_ns": np.asarray(ptot, dtype=np.int64),
    })
    _means(gk)
    return gk


def _means(k):
    oc = k["observed_count"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        k["actual_mean_ms"] = np.where(oc > 0, k["actual_total_ns"] / np.where(oc > 0, oc, 1) / 1e6, np.nan)
    k["predicted_mean_ms"] = k["predicted_total_ns"] / k["count"] / 1e6
    k["error"] = _err(k["predicted_total_ns"], k["actual_total_ns"], oc > 0)


def _gpu_kernels_from_file(r, base, name, G, rank, expand=True):
    """Every GPU's kernel rows (expand), or the stored rows once each with,
    per row, the number of GPUs that read it (not expand: what the
    job-wide summary needs, without a row per GPU of a 100,000-GPU job)."""
    kp = base + "/kernels"
    nk = r.nrows(kp + "/count")
    off, cnt = r.extents_shared(base + "/gpus", "kernel", G, kp + "/count", nk)
    # a GPU whose rows are another's (shared structure) reads that GPU's
    # rows; each row names the GPU that holds it
    holder = np.arange(G, dtype=np.int64)
    first = {}
    for g in range(G):
        if cnt[g]:
            holder[g] = first.setdefault(int(off[g]), g)
    weight = None
    if expand:
        rows = _graph.node_rows({"node": (off, cnt)})
        gpu = np.repeat(np.arange(G, dtype=np.int64), cnt)
    else:
        own = np.nonzero((holder == np.arange(G)) & (cnt > 0))[0]  # the holders, in GPU order
        rows = _graph.node_rows({"node": (off[own], cnt[own])})
        gpu = np.repeat(own, cnt[own])
        weight = np.bincount(holder[cnt > 0], minlength=G)[gpu]
        cnt = np.where(holder == np.arange(G), cnt, 0)
    stored = r.col(kp + "/gpu", nk, "u").astype(np.int64)[rows]
    want = np.repeat(holder, cnt)
    bad = np.nonzero(stored != want)[0]
    if bad.size:
        r.fail("%s/gpu: row %d belongs to GPU %d, the offsets give GPU %d"
               % (kp, rows[bad[0]], stored[bad[0]], want[bad[0]]))
    nk_all = len(rows)
    kinds = r.enum_names(kp + "/kind", _schema.NODE_KINDS)
    kind = r.col(kp + "/kind", nk, "u").astype(np.int64)[rows]
    bad = np.nonzero(kind >= len(kinds))[0]
    if not bad.size:
        bad = np.nonzero(~np.isin(np.array(kinds, dtype=object)[kind], list(_schema.GPU_NODE_KINDS)))[0]
    if bad.size:
        r.fail("%s/kind: row %d has kind %d, not GPU work" % (kp, bad[0], kind[bad[0]]))
    for c in ("actual_total", "predicted_total"):
        r.units("%s/%s" % (kp, c), "ns")
    cols = {c: r.col("%s/%s" % (kp, c), nk, "iu").astype(np.int64)[rows]
            for c in ("count", "observed_count", "collective", "actual_total", "predicted_total")}
    if nk_all and np.any(cols["count"] <= 0):
        r.fail("%s/count: a row of no nodes" % kp)
    knames = texts(r.col(kp + "/name", nk, "S"))
    gk = _gk_frame(name, gpu, rank[gpu] if nk_all else gpu, [kinds[int(x)] for x in kind], [knames[int(i)] for i in rows],
                   cols["count"], cols["observed_count"], cols["collective"] != 0, cols["actual_total"],
                   cols["predicted_total"])
    return gk if expand else (gk, weight)


def _gpu_kernels_from_graph(r, base, name, flat, nnode, rows, rank):
    """rows: every GPU's rows of the run's node tables, GPU after GPU
    (shared rows read again for each GPU sharing them)."""
    start = r.col(base + "/nodes/start", nnode, "i").astype(np.int64)[rows]
    end = r.col(base + "/nodes/end", nnode, "i").astype(np.int64)[rows]
    kinds = flat["kinds"]
    gpu_codes = [kinds.index(k) for k in _schema.GPU_NODE_KINDS if k in kinds]
    sel = np.isin(flat["kind"], gpu_codes)
    obs = flat["obs_start"][sel] != _schema.OBS_NONE
    k = pd.DataFrame({
        "gpu": flat["gpu"][sel],
        "kind": np.array(kinds, dtype=object)[flat["kind"][sel]] if sel.any() else np.array([], dtype=object),
        "name": flat["strings"][flat["name_row"][sel]] if sel.any() else np.array([], dtype=object),
        "collective": (flat["flags"][sel] & _schema.NODE_FLAGS["collective"]) != 0,
        "obs": obs,
        "adur": np.where(obs, flat["obs_end"][sel] - flat["obs_start"][sel], 0).astype(np.int64),
        "pdur": (end[sel] - start[sel]).astype(np.int64),
    })
    gb = k.groupby(["gpu", "kind", "name"], sort=False)
    s = pd.DataFrame({
        "count": gb.size(),
        "observed_count": gb["obs"].sum(),
        "collective": gb["collective"].any(),
        "actual_total_ns": gb["adur"].sum(),
        "predicted_total_ns": gb["pdur"].sum(),
    }).reset_index()
    g = s["gpu"].to_numpy(dtype=np.int64)
    return _gk_frame(name, g, rank[g] if len(g) else g, s["kind"], s["name"], s["count"], s["observed_count"],
                     s["collective"], s["actual_total_ns"], s["predicted_total_ns"])


def _job_kernels(gk, name, weight=None):
    """The job-wide summary: gk's rows summed over GPUs per (kind, name).
    weight: per row of gk, the number of GPUs that hold it (gk then has each
    shared row once, in the order of the first GPU reading it: the groups
    come out in the order the expanded rows would give them)."""
    if weight is not None:
        w = np.asarray(weight, dtype=np.int64)
        gk = gk.assign(count=gk["count"] * w, observed_count=gk["observed_count"] * w,
                       actual_total_ns=gk["actual_total_ns"] * w, predicted_total_ns=gk["predicted_total_ns"] * w,
                       _gpus=w)
    gb = gk.groupby(["kind", "name"], observed=True, sort=False)
    kern = pd.DataFrame({
        "count": gb["count"].sum(),
        "gpus": gb["_gpus"].sum() if weight is not None else gb["gpu"].nunique(),
        "collective": gb["collective"].any(),
        "observed_count": gb["observed_count"].sum(),
        "actual_total_ns": gb["actual_total_ns"].sum(),
        "predicted_total_ns": gb["predicted_total_ns"].sum(),
    }).reset_index()
    kern["kind"] = pd.Categorical(kern["kind"].astype(str), categories=list(_schema.GPU_NODE_KINDS))
    for col in ("count", "gpus") + _GK_INT[1:]:
        kern[col] = kern[col].astype(np.int64)
    kern["collective"] = kern["collective"].astype(bool)
    _means(kern)
    kern.insert(0, "run", name)
    kern = kern.sort_values(["predicted_total_ns", "name"], ascending=[False, True], kind="mergesort")
    return kern.reset_index(drop=True)


def _measured(values, observed):
    """A column of figures that exist only for an observed GPU (the file
    stores 0 for the others): nullable Int64, <NA> where not observed."""
    a = pd.array(np.asarray(values).astype(np.int64), dtype="Int64")
    a[~np.asarray(observed, dtype=bool)] = pd.NA
    return a


def read_results(r, kernels=True, nodes=False, gpu=0, run=None):
    runs_grp = r.group("/runs")
    names = sorted(runs_grp.keys())
    rows, ranks, iters, bds, kerns, gkerns, exts = [], [], [], [], [], [], {}
    for n in names:
        row, rk, it, bd, kern, gk, gext = _read_run(r, n, kernels)
        rows.append(row)
        ranks.append(rk)
        iters.append(it)
        bds.append(bd)
        if kern is not None:
            kerns.append(kern)
            gkerns.append(gk)
        exts[n] = gext
    runs = pd.DataFrame(rows)
    if len(runs) == 0:
        runs = pd.DataFrame({"run": pd.Series([], dtype=object)})
    for col in ("iter_predicted_min_ns", "iter_predicted_max_ns", "job_actual_ns"):
        if col in runs:
            runs[col] = runs[col].astype("Int64")

    def cat(frames):
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def gpu_kernels():
        return cat([g() if callable(g) else g for g in gkerns]) if gkerns else None

    res = Results(path=r.path, attrs=r.attrs("/"), runs=runs, ranks=cat(ranks), iterations=cat(iters),
                  breakdown=cat(bds), kernels=cat(kerns) if kerns else None, _graph_ext=exts,
                  _gpu_kernels=gpu_kernels if any(callable(g) for g in gkerns) else gpu_kernels())
    if nodes:
        res.nodes = _run_node_table(r, res.run(run), gpu)
    return res
