"""The layers of the house, enforced (issue 22): every import, lazy ones included, is
read from the source with :mod:`ast` and checked against the design card.

* ``solvers/`` is the bottom layer: it imports nothing of ``mtpp``, ``formulations``
  or ``heuristics``;
* ``formulations/`` imports only ``solvers/`` and mtpp's core modules;
* ``heuristics/`` imports only mtpp's core modules (and ``solvers/``' neutral pieces);
* mtpp's core modules (the graph, problem, cost model, evaluator, bounds, generators,
  importers, devices, errors) import neither ``formulations/`` nor ``heuristics/``,
  and of ``solvers/`` only the root exception;
* only mtpp's API modules (:data:`API`, :data:`API_PACKAGES`) compose the layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mtpp", "formulations", "solvers", "heuristics")
API = (
    "mtpp",
    "mtpp.__main__",
    "mtpp.certificate",
    "mtpp.certify_phases",
    "mtpp.background_anneal",
    "mtpp.cross_check",
    "mtpp.partitioner",
    "mtpp.scheduling",
    "mtpp.teacher_data",
    "mtpp.results_schema",
    "mtpp.placement",
    "mtpp.placement.api",
)
API_PACKAGES = ("mtpp.batch", "mtpp.cli", "mtpp.pipelining")
CORE_MAY_USE = ("solvers.errors",)


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
            found[name] = {m for m in imported if m.split(".")[0] in PACKAGES}
    return found


def is_api(name: str) -> bool:
    return name in API or any(name == p or name.startswith(p + ".") for p in API_PACKAGES)


def violations() -> list[str]:
    bad = []
    for name, imported in sorted(modules().items()):
        top = name.split(".")[0]
        for m in sorted(imported):
            other = m.split(".")[0]
            if top == "solvers" and other != "solvers":
                bad.append(f"{name} (solvers: the bottom layer) imports {m}")
            elif top in ("formulations", "heuristics") and other == "mtpp" and is_api(m):
                bad.append(f"{name} imports mtpp's API module {m}")
            elif top == "heuristics" and other == "formulations":
                bad.append(f"{name} (heuristics) imports {m}")
            elif top == "mtpp" and not is_api(name) and other in ("formulations", "heuristics"):
                bad.append(f"{name} (mtpp core) imports {m}")
            elif top == "mtpp" and not is_api(name) and other == "solvers" and m not in CORE_MAY_USE:
                bad.append(f"{name} (mtpp core) imports {m}")
    return bad


def test_every_import_respects_the_layers() -> None:
    assert modules(), "no modules found"
    assert violations() == []


@pytest.mark.parametrize(
    ("module", "imported"),
    [("solvers.highs", "mtpp.graph"), ("heuristics.kahn", "mtpp.certificate"), ("mtpp.cost", "heuristics.kahn")],
)
def test_the_checker_sees_a_violation(monkeypatch: pytest.MonkeyPatch, module: str, imported: str) -> None:
    real = modules()
    monkeypatch.setattr(
        __import__(__name__, fromlist=["modules"]), "modules", lambda: {**real, module: real[module] | {imported}}
    )
    assert any(module in v and imported in v for v in violations())
