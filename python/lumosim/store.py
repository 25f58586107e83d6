"""Graph stores (``lumosim build`` / ``synth`` / ``whatif`` ``-o JOB.h5``) as
pandas tables. Layout: docs/hdf5-schema.md, "Graph store"; columns:
docs/python.md.
"""

from dataclasses import dataclass, field
from typing import Dict, Optional

import pandas as pd

from . import _graph, _schema
from ._h5 import Reader


@dataclass
class GraphStore:
    """A lumosim graph store.

    - ``attrs``: the root attributes (``lumosim_version``, ``created_by``,
      ``latency_mode``, ...);
    - ``gpus``: one row per GPU -- rank, world size, source trace (path,
      size, CRC-32), node / edge / processor / iteration / collective /
      string counts, latency-model figures, edges per class;
    - ``nodes``: one GPU's node table when loaded with ``nodes=True``
      (GPU ``nodes_gpu``), else ``None``; ``node_table(gpu)`` reads any GPU.
    """

    path: str
    attrs: Dict[str, object]
    gpus: pd.DataFrame
    nodes: Optional[pd.DataFrame] = None
    nodes_gpu: Optional[int] = None
    _ext: dict = field(default_factory=dict, repr=False)

    kind = _schema.KIND_STORE

    def node_table(self, gpu=0) -> pd.DataFrame:
        """GPU ``gpu``'s nodes, in graph node order (column ``node`` = local id)."""
        with Reader(self.path) as r:
            _, ext = _graph.gpu_table(r, "")
            return _graph.node_table(r, "", ext, int(gpu))


def read_store(r, nodes=False, gpu=0):
    gpus, ext = _graph.gpu_table(r, "")
    st = GraphStore(path=r.path, attrs=r.attrs("/"), gpus=gpus, _ext=ext)
    if nodes:
        st.nodes = _graph.node_table(r, "", ext, int(gpu))
        st.nodes_gpu = int(gpu)
    return st
