"""Search results (``lumosim search ... -o search.h5``) as pandas tables.
Layout: docs/hdf5-schema.md, "Search results"; columns: docs/python.md.
"""

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import pandas as pd

from . import _schema


@dataclass
class SearchResult:
    """A lumosim configuration search.

    - ``attrs``: the root attributes (``created_by``, ``lumosim_version``);
    - ``space``: the attributes of ``/search`` (model, GPU, GPUs, global
      batch, sequence, counts per reason, wall time);
    - ``candidates``: one row per configuration of the space, in the order
      lumosim enumerated them: layout, ``recompute`` and ``reason`` as
      names, peak memory, and for the simulated ones the step and breakdown
      (``*_ns``; ``NaN`` where not simulated), ``throughput_per_s`` (in
      ``throughput_unit``; ``NaN`` where not simulated or in files written
      before it), ``why`` a refusal's message; what the file does not know
      is ``NaN`` or ``<NA>``, never 0 (a traced job's ``micro_batch``, a
      ``peak_memory_bytes`` not estimated);
    - ``ranking``: the simulated candidates best first (``candidate`` is
      the row of ``candidates``), with tokens per second (``NaN`` where
      the samples or the sequence are not known);
    - ``throughput_unit``: what ``throughput_per_s`` counts
      (``samples/s``, ``micro-batches/s``, ``batches/s``), ``None`` in files
      written before it.
    """

    path: str
    attrs: Dict[str, object]
    space: Dict[str, object]
    candidates: pd.DataFrame
    ranking: pd.DataFrame
    throughput_unit: Optional[str] = None

    kind = _schema.KIND_SEARCH


_INT_COLS = ("tp", "pp", "dp", "micro_batch", "vstages", "distributed_optimizer", "peak_memory_stage", "simulated")
_UNITS = ("samples/s", "micro-batches/s", "batches/s")  # search_rank.c UNIT_NAME
_BREAKDOWN = ("exposed_compute_ns", "overlapped_ns", "exposed_comm_ns", "other_ns")


def read_search(r):
    g = "/search/candidates"
    n = r.nrows(g + "/tp")
    cols = {}
    for c in _INT_COLS:
        cols[c] = r.col("%s/%s" % (g, c), n).astype(np.int64)
    # CP, EP and FSDP (issue 36): absent in files written before them
    for c, none in (("cp", 1), ("ep", 1), ("fsdp", 0)):
        cols[c] = r.col("%s/%s" % (g, c), n).astype(np.int64) if r.has(g + "/" + c) else np.full(n, none, np.int64)
    for c, fallback in (("recompute", _schema.RECOMPUTE_MODES), ("reason", _schema.SEARCH_REASONS)):
        names = r.enum_names("%s/%s" % (g, c), fallback)
        v = r.col("%s/%s" % (g, c), n, "u").astype(np.int64)
        if v.size and int(v.max()) >= len(names):
            r.fail("%s/%s holds %d, past its %d names" % (g, c, int(v.max()), len(names)))
        cols[c] = [names[int(x)] for x in v]
    # not known, never 0: a traced job's micro-batch size (0 in the file),
    # a memory estimate not made (0)
    mb = cols["micro_batch"]
    cols["micro_batch"] = pd.arrays.IntegerArray(mb, mask=mb <= 0)
    r.units(g + "/peak_memory", "bytes")
    mem = r.col(g + "/peak_memory", n, "f").astype(np.float64)
    mem[~(mem > 0)] = np.nan
    cols["peak_memory_bytes"] = mem
    sim = cols["simulated"].astype(bool)
    # throughput (issue 39), as lumosim ranked by it; absent in older files
    unit = None
    thr = np.full(n, np.nan)
    if r.has(g + "/throughput_per_s"):
        r.units(g + "/throughput_per_s", "1/s")
        thr = r.col(g + "/throughput_per_s", n, "f").astype(np.float64)
        unit = r.attrs(g).get("throughput_unit")
        if unit not in _UNITS:
            r.fail("%s: attribute throughput_unit is %r, not one of %s" % (g, unit, ", ".join(_UNITS)))
    thr[~sim] = np.nan
    cols["throughput_per_s"] = thr
    r.units(g + "/step", "ns")
    step = r.col(g + "/step", n, "i").astype(np.float64)
    step[~sim] = np.nan
    cols["step_ns"] = step
    bd, _ = r.col2(g + "/breakdown", n, 4, "i")
    bd = bd.astype(np.float64)
    bd[~sim, :] = np.nan
    for k, name in enumerate(_BREAKDOWN):
        cols[name] = bd[:, k]
    st = r.col(g + "/sim_time", n, "i").astype(np.float64)
    st[~sim] = np.nan
    cols["sim_time_ns"] = st
    cols["why"] = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in r.col(g + "/why", n, "S")]
    cand = pd.DataFrame(cols)
    cand["simulated"] = sim
    cand["distributed_optimizer"] = cand["distributed_optimizer"].astype(bool)
    space = r.attrs("/search")
    rk = r.col("/search/ranking", None, "u").astype(np.int64)
    if rk.size and (int(rk.max()) >= n or not bool(sim[rk].all())):
        r.fail("/search/ranking names a row that is not a simulated candidate")
    seq = float(space.get("sequence", 0))
    ranking = cand.iloc[rk].copy()
    ranking.insert(0, "candidate", rk)
    ranking.insert(0, "rank", np.arange(1, rk.size + 1))
    # tokens: only where a step's samples are known (lumosim's tokens/s)
    if unit is not None:
        tok = ranking["throughput_per_s"] * seq if unit == "samples/s" and seq > 0 else np.nan
    else:
        # older files: a global batch of samples, or not known (--from)
        gb = float(space.get("global_batch", 0))
        tok = gb * seq / (ranking["step_ns"] / 1e9) if gb > 0 and seq > 0 else np.nan
    ranking["tokens_per_s"] = tok
    ranking = ranking.reset_index(drop=True)
    return SearchResult(path=r.path, attrs=r.attrs("/"), space=space, candidates=cand, ranking=ranking,
                        throughput_unit=unit)
