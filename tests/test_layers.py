"""The layers of the house, enforced: every import of the four packages, lazy ones
(inside functions) included, is read from the source with :mod:`ast` and checked
against the layers below, bottom first.  A module belongs to the layer of the
longest package prefix in :data:`LAYERS`; every other module of ``mtpp`` is the API,
which composes the layers.

* ``mtpp.core``: the graph, problem, cost model, evaluators, machines, rounding,
  validation, errors; imports nothing outside itself;
* ``solvers``: the backends over one neutral model; the core only;
* ``mtpp.bounds`` (the combinatorial bounds): the core only;
* ``formulations`` (model builders): the core, the bounds and the solver layer's
  neutral model;
* ``heuristics``: the core and the bounds (never a solver);
* the API (``mtpp``'s other modules): anything.

And no import circles: the modules of the four packages, linked by every import,
form no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mtpp", "formulations", "solvers", "heuristics")
LAYERS: dict[str, tuple[str, ...]] = {
    "mtpp.core": ("mtpp.core",),
    "solvers": ("mtpp.core", "solvers"),
    "mtpp.bounds": ("mtpp.core", "mtpp.bounds"),
    "formulations": ("mtpp.core", "mtpp.bounds", "solvers", "formulations"),
    "heuristics": ("mtpp.core", "mtpp.bounds", "heuristics"),
}
"""Layer (a package) -> the packages its modules may import."""


def modules() -> dict[str, set[str]]:
    """Every module of the four packages and the modules of ours it imports."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            imported = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module)
                    imported |= {f"{node.module}.{a.name}" for a in node.names}  # a submodule, if it is one
            found[name] = {m for m in imported if m.split(".")[0] in PACKAGES}
    known = set(found)
    return {
        name: {m if m in known else m.rsplit(".", 1)[0] for m in imported} & known for name, imported in found.items()
    }


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer(name: str) -> str | None:
    """The layer of module ``name`` (``None``: the API)."""
    return max((p for p in LAYERS if within(name, p)), key=len, default=None)


def violations() -> list[str]:
    bad = []
    for name, imported in sorted(modules().items()):
        own = layer(name)
        if own is None:
            continue
        for m in sorted(imported):
            if not any(within(m, allowed) for allowed in LAYERS[own]):
                bad.append(f"{name} ({own}) imports {m}")
    return bad


def circles() -> list[list[str]]:
    """The import circles: strongly connected sets of more than one module (a package's
    ``__init__`` counts as the package, importing its own submodules is no circle)."""
    graph = nx.DiGraph()
    for name, imported in modules().items():
        graph.add_node(name)
        graph.add_edges_from((name, m) for m in imported if not within(m, name))
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def test_every_import_respects_the_layers() -> None:
    assert modules(), "no modules found"
    assert violations() == []


def test_no_import_circles() -> None:
    assert circles() == []


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        ("solvers.highs", "heuristics.kahn"),
        ("heuristics.kahn", "mtpp.partitioner"),
        ("mtpp.core.cost", "heuristics.kahn"),
        ("mtpp.bounds.cut", "formulations.bounds"),
    ],
)
def test_the_checker_sees_a_violation(monkeypatch: pytest.MonkeyPatch, module: str, imported: str) -> None:
    real = modules()
    monkeypatch.setattr(
        __import__(__name__, fromlist=["modules"]), "modules", lambda: {**real, module: real[module] | {imported}}
    )
    assert any(module in v and imported in v for v in violations())


def test_the_checker_sees_a_circle(monkeypatch: pytest.MonkeyPatch) -> None:
    real = modules()
    planted = {**real, "mtpp.core.graph": real["mtpp.core.graph"] | {"mtpp.core.problem"}}
    monkeypatch.setattr(__import__(__name__, fromlist=["modules"]), "modules", lambda: planted)
    assert any("mtpp.core.graph" in c and "mtpp.core.problem" in c for c in circles())
