"""Batch runs of the bound hierarchy over a testbed, a results store, tables and plots.

* :func:`run` (:mod:`mtpp.batch.runner`): every ``(graph, k, method)`` task on joblib
  (loky on one machine, or a Dask cluster), each in a sandbox with its own time limit;
* :class:`ResultStore` (:mod:`mtpp.batch.store`): SQLite, one row per task, committed
  as each task finishes; a rerun skips what is done;
* :mod:`mtpp.batch.report`: the paper's Tables 1-3 from a store (markdown, csv, latex);
* :mod:`mtpp.batch.plots`: its Figures 4-5 and LB / UB by k (PNG and SVG).
"""

from mtpp.batch.runner import BatchSummary, run
from mtpp.batch.store import Record, ResultStore, open_store
from mtpp.batch.tasks import Settings, Task, graph_hash, parse_methods

__all__ = [
    "BatchSummary",
    "Record",
    "ResultStore",
    "Settings",
    "Task",
    "graph_hash",
    "open_store",
    "parse_methods",
    "run",
]
