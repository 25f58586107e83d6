"""lumosim: read lumosim's HDF5 graph stores and result archives with pandas.

    import lumosim
    res = lumosim.load("result.h5")     # Results: runs, ranks, iterations, breakdown, kernels
    job = lumosim.load("job.h5")        # GraphStore: gpus (and nodes=True: one GPU's nodes)

Every file problem raises LumosimFileError ("PATH: what is wrong").
Tables and columns: docs/python.md; file layout: docs/hdf5-schema.md.
"""

import os

from ._h5 import LumosimFileError
from . import _schema

__version__ = "0.1.0"
__all__ = ["load", "LumosimFileError", "Results", "GraphStore", "__version__"]


def load(path, *, nodes=False, gpu=0, run=None, kernels=True):
    """Read a lumosim HDF5 file.

    - a result archive (``lumosim sim ... -o res.h5``) -> ``Results``;
      ``kernels=False`` skips the per-kernel summary (it reads every node);
    - a graph store (``lumosim build`` / ``synth`` / ``whatif``) ->
      ``GraphStore``;
    - a search result (``lumosim search ... -o search.h5``) -> ``SearchResult``.

    ``nodes=True`` also reads GPU ``gpu``'s node table into ``.nodes`` (for
    an archive: of run ``run``, default the only run; needs embedded graphs).

    Raises ``LumosimFileError`` (a ``ValueError``) naming the file and what
    is wrong: missing, not HDF5 or truncated, not a lumosim file, an unknown
    schema version, a missing or malformed dataset, inconsistent offsets.
    """
    try:
        import pandas  # noqa: F401
        import h5py  # noqa: F401
    except ImportError as e:
        raise LumosimFileError(os.fspath(path), "cannot read it: %s (install python3-h5py and python3-pandas)" % e)
    from ._h5 import Reader
    from .results import read_results
    from .store import read_store

    from .search import read_search

    with Reader(path) as r:
        if r.kind == _schema.KIND_RESULTS:
            return read_results(r, kernels=kernels, nodes=nodes, gpu=gpu, run=run)
        if r.kind == _schema.KIND_SEARCH:
            return read_search(r)
        return read_store(r, nodes=nodes, gpu=gpu)


def __getattr__(name):  # Results / GraphStore without importing pandas eagerly
    if name == "Results":
        from .results import Results
        return Results
    if name == "SearchResult":
        from .search import SearchResult
        return SearchResult
    if name == "GraphStore":
        from .store import GraphStore
        return GraphStore
    raise AttributeError(name)
