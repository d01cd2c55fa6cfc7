"""Training data from proofs: graphs with a teacher's order, stored as a versioned data set.

An exact teacher (``mtpp train ... --teacher exact``, built by :mod:`mtpp.teacher_data`)
gives, per generated graph, an order and what was proven about it:

* peak memory: the order of the best-first search with its peak and proven lower
  bound (``optimal`` when they meet, Topoformer Eq. 1-3, 15);
* the MTPP bottleneck, at each ``k`` of the spec's ``ks``: the partition of
  :func:`mtpp.certify` written as an order whose blocks are contiguous, in a
  topological order of the quotient graph, so SliceGraph's DP (MTPP Algorithm 1)
  can cut it back into that partition; its value is the order's SliceGraph
  bottleneck (at most the partition's, Eq. 3) and its lower bound the certificate's.
  One example per ``(graph, k)``.

This module holds only the file format, so the training loop reads the data without
importing the solvers that made it.

A data set is a directory:

* ``manifest.json``: ``{"format": "mtpp-teacher-data", "version": 2, "spec": {...}}``,
  the options that define every example (objective, graph family, node range,
  seed, count, the teacher's time limit, shard size, the ks of the bottleneck);
  version 1 (peak memory only, before the ks) is still read;
* ``shard-00000.npz``, ...: ``shard_size`` consecutive examples each, written
  atomically (a temporary file renamed into place) when the whole shard is done, so an
  interrupted build resumes at the first missing shard and never reads half a file.

A shard holds the graphs themselves (weights and edges, concatenated with per-graph
offsets), not only their seeds: a later change of a generator cannot silently pair
an order with another graph.  Graph ``i`` is fully determined by ``(spec, i)``; its
examples are the teacher's labels at each k (one for peak memory).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mtpp.core.errors import InvalidParameterError
from mtpp.core.graph import Graph

FORMAT = "mtpp-teacher-data"
VERSION = 2
READABLE = (1, 2)  # version 1: peak memory only, no ks, no k per example
MANIFEST = "manifest.json"
FAMILIES = ("layered", "regal", "models")
OBJECTIVES = ("peak", "mtpp")
TEACHERS = ("approx", "exact")


def check_teacher(teacher: str, teacher_data: object, max_gap: object, imitation_epochs: int) -> tuple[str, ...]:
    """Check a trainer's teacher options; the data set directories as a tuple of str."""
    if teacher not in TEACHERS:
        raise InvalidParameterError(f"teacher must be one of {', '.join(TEACHERS)}, got {teacher!r}")
    if isinstance(teacher_data, (str, bytes, os.PathLike)) or not hasattr(teacher_data, "__iter__"):
        raise InvalidParameterError(f"teacher_data must be a sequence of directories, got {teacher_data!r}")
    data = tuple(str(d) for d in teacher_data)
    if teacher == "exact" and imitation_epochs and not data:
        raise InvalidParameterError("teacher 'exact' needs teacher_data: the data sets of proven orders to imitate")
    if isinstance(max_gap, bool) or not isinstance(max_gap, (int, float)) or not 0 <= max_gap < float("inf"):
        raise InvalidParameterError(f"max_gap must be a number >= 0, got {max_gap!r}")
    return data


@dataclass(frozen=True)
class DataSpec:
    """What a data set holds: ``count`` graphs of ``family`` with ``nodes = (lo, hi)``
    ops (uniform), graph ``i`` drawn from ``seed`` and ``i``; each labelled by the
    exact teacher for ``objective`` within ``time_limit`` seconds per graph (for
    ``"mtpp"``: one certify call for all of ``ks``, the numbers of blocks)."""

    objective: str = "peak"
    family: str = "layered"
    nodes: tuple[int, int] = (100, 250)
    count: int = 1024
    seed: int = 0
    time_limit: float = 10.0
    shard_size: int = 64
    ks: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise InvalidParameterError(f"objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        ks = self.ks
        if isinstance(ks, (str, bytes)) or not hasattr(ks, "__iter__"):
            raise InvalidParameterError(f"ks must be a sequence of block counts, got {ks!r}")
        ks = tuple(ks)
        if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
            raise InvalidParameterError(f"ks must be integers >= 1, got {self.ks!r}")
        ks = tuple(sorted({int(k) for k in ks}))
        if self.objective == "mtpp" and not ks:
            raise InvalidParameterError("a data set for objective 'mtpp' needs ks: the numbers of blocks to label")
        if self.objective == "peak" and ks:
            raise InvalidParameterError(f"ks are for objective 'mtpp'; a peak-memory data set has none, got {ks}")
        object.__setattr__(self, "ks", ks)
        if self.family not in FAMILIES:
            raise InvalidParameterError(f"family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        try:
            lo, hi = (int(v) for v in self.nodes)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(f"nodes must be a pair (lo, hi), got {self.nodes!r}") from exc
        if not 3 <= lo <= hi:
            raise InvalidParameterError(f"nodes must satisfy 3 <= lo <= hi, got {self.nodes!r}")
        object.__setattr__(self, "nodes", (lo, hi))
        for name in ("count", "shard_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InvalidParameterError(f"{name} must be an integer >= 1, got {value!r}")
        if not (isinstance(self.time_limit, (int, float)) and 0 < self.time_limit < float("inf")):
            raise InvalidParameterError(f"time_limit must be a number of seconds > 0, got {self.time_limit!r}")

    @property
    def shards(self) -> int:
        return -(-self.count // self.shard_size)

    def shard_range(self, shard: int) -> range:
        """The example indices of ``shard``."""
        return range(shard * self.shard_size, min(self.count, (shard + 1) * self.shard_size))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["nodes"] = list(self.nodes)
        d["ks"] = list(self.ks)
        return d


@dataclass(frozen=True)
class Example:
    """One labelled graph: the teacher's ``order`` (node indices), its ``value`` (the
    peak, or the bottleneck of the order sliced into at most ``k`` blocks), the
    ``lower_bound`` proven on the graph, ``optimal`` when they meet; ``k`` is 0 for
    peak memory."""

    index: int
    graph: Graph
    order: np.ndarray
    value: float
    lower_bound: float
    optimal: bool
    seconds: float
    k: int = 0

    @property
    def gap(self) -> float:
        """``value / lower_bound - 1`` (0 when proven optimal)."""
        return 0.0 if self.optimal else self.value / self.lower_bound - 1.0 if self.lower_bound > 0 else float("inf")


def shard_path(root: Path, shard: int) -> Path:
    return root / f"shard-{shard:05d}.npz"


def write_manifest(root: Path, spec: DataSpec) -> None:
    """Create ``root/manifest.json``, or check that the one there has the same spec."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / MANIFEST
    doc = {"format": FORMAT, "version": VERSION, "spec": spec.to_dict()}
    if path.is_file():
        if read_spec(root) != spec:
            raise InvalidParameterError(f"{root} holds a data set with other options; use another directory")
        return
    tmp = path.with_name(f".{MANIFEST}.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


def read_spec(root: str | os.PathLike[str]) -> DataSpec:
    """The spec in ``root/manifest.json``; a missing or foreign file is a clear error."""
    path = Path(root) / MANIFEST
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise InvalidParameterError(f"{root} is not a teacher data set (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise InvalidParameterError(f"cannot read {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("spec"), dict):
        raise InvalidParameterError(f"{path} is not an {FORMAT} manifest")
    if doc.get("version") not in READABLE:
        raise InvalidParameterError(
            f"{path} has version {doc.get('version')!r}; this mtpp reads versions {', '.join(map(str, READABLE))}"
        )
    spec = dict(doc["spec"])
    spec["nodes"] = tuple(spec.get("nodes", ()))
    spec["ks"] = tuple(spec.get("ks", ()))
    return DataSpec(**spec)


def write_shard(root: Path, shard: int, examples: list[Example]) -> None:
    """Write one shard atomically."""
    graphs = [e.graph for e in examples]
    arrays: dict[str, Any] = {
        "index": np.array([e.index for e in examples], dtype=np.int64),
        "n": np.array([g.n for g in graphs], dtype=np.int64),
        "m": np.array([g.m for g in graphs], dtype=np.int64),
        "work": np.concatenate([g.work for g in graphs]),
        "size_param": np.concatenate([g.size_param for g in graphs]),
        "size_out": np.concatenate([g.size_out for g in graphs]),
        "edge_src": np.concatenate([g.edge_src for g in graphs]).astype(np.int32),
        "edge_dst": np.concatenate([g.edge_dst for g in graphs]).astype(np.int32),
        "order": np.concatenate([e.order for e in examples]).astype(np.int32),
        "value": np.array([e.value for e in examples]),
        "lower_bound": np.array([e.lower_bound for e in examples]),
        "optimal": np.array([e.optimal for e in examples]),
        "seconds": np.array([e.seconds for e in examples]),
        "k": np.array([e.k for e in examples], dtype=np.int64),
    }
    target = shard_path(root, shard)
    tmp = target.with_name(f".{target.stem}.tmp.npz")
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    os.replace(tmp, target)


def read_shard(root: Path, shard: int) -> list[Example]:
    """The examples of one shard, graphs rebuilt."""
    with np.load(shard_path(root, shard)) as z:
        a = {k: z[k] for k in z.files}
    node_at = np.concatenate([[0], np.cumsum(a["n"])])
    edge_at = np.concatenate([[0], np.cumsum(a["m"])])
    ks = a.get("k", np.zeros(len(a["index"]), dtype=np.int64))  # version 1: peak memory
    out = []
    for j, index in enumerate(a["index"].tolist()):
        nodes, edges = slice(node_at[j], node_at[j + 1]), slice(edge_at[j], edge_at[j + 1])
        graph = Graph.from_arrays(
            a["work"][nodes],
            a["size_param"][nodes],
            a["size_out"][nodes],
            np.stack([a["edge_src"][edges], a["edge_dst"][edges]], axis=1),
            name=f"teacher-{index}",
        )
        out.append(
            Example(
                index,
                graph,
                a["order"][nodes].astype(np.int64),
                float(a["value"][j]),
                float(a["lower_bound"][j]),
                bool(a["optimal"][j]),
                float(a["seconds"][j]),
                int(ks[j]),
            )
        )
    return out


def done_shards(root: Path, spec: DataSpec) -> list[int]:
    """The shards already written."""
    return [s for s in range(spec.shards) if shard_path(root, s).is_file()]


def load_examples(root: str | os.PathLike[str], max_gap: float = 0.0) -> list[Example]:
    """Every example of a complete data set whose teacher order is within ``max_gap``
    of its proven bound (default: proven optimal only).  An incomplete data set is
    an error naming the missing shards (build it to the end first)."""
    path = Path(root)
    spec = read_spec(path)
    missing = sorted(set(range(spec.shards)) - set(done_shards(path, spec)))
    if missing:
        raise InvalidParameterError(
            f"{root} is incomplete: {len(missing)} of {spec.shards} shards missing (first: {missing[0]}); "
            "build it again to resume"
        )
    return [e for s in range(spec.shards) for e in read_shard(path, s) if e.gap <= max_gap]


def epoch_picks(total: int, seed: int, epoch: int, per_epoch: int) -> list[int]:
    """Indices of the examples of imitation epoch ``epoch``: the next ``per_epoch`` of
    a seeded shuffle of all ``total`` (a fresh shuffle for each pass), so a resumed
    run sees what an uninterrupted one would."""
    picks = []
    for at in range(epoch * per_epoch, (epoch + 1) * per_epoch):
        perm = np.random.default_rng([seed, 25, at // total]).permutation(total)
        picks.append(int(perm[at % total]))
    return picks


def teacher_examples(roots: tuple[str, ...], max_gap: float, objective: str = "peak", k: int = 0) -> list[Example]:
    """The examples of every data set in ``roots`` within ``max_gap`` for a run that
    trains ``objective`` (for ``"mtpp"``: the examples labelled at ``k``).  A data set
    of the other objective, or none within ``max_gap`` at ``k``, is an error."""
    examples = []
    for root in roots:
        spec = read_spec(root)
        if spec.objective != objective:
            raise InvalidParameterError(f"{root} holds {spec.objective!r} labels; this run trains {objective!r}")
        if objective == "mtpp" and k not in spec.ks:
            raise InvalidParameterError(f"{root} holds partitions for k in {list(spec.ks)}; this run trains k = {k}")
        examples += [e for e in load_examples(root, max_gap) if objective != "mtpp" or e.k == k]
    if not examples:
        at = f" at k = {k}" if objective == "mtpp" else ""
        raise InvalidParameterError(f"the teacher data sets {list(roots)} hold no example{at} within max_gap {max_gap}")
    return examples
