"""A tiny testbed and one uninterrupted reference batch on it, shared by the batch tests.

The methods are deterministic (seeded orderers; MIPs that HiGHS solves to optimality
well inside the time limit), so any two complete runs store the same results."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mtpp.generators import layered_graph, regal_graph

ROOT = Path(__file__).resolve().parents[3]
KS = (2, 4)
METHODS = ("simple", "bottleneck", "slicegraph:random-20")
OPTIONS = {"solver": "highs", "time_limit": 30.0, "orderer": "random-20", "seed": 0}
N_GRAPHS = 3
CLI_OPTIONS = ["--solver", "highs", "--time-limit", "30", "--orderer", "random-20", "--seed", "0"]


def write_testbed(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    graphs = [regal_graph(10, seed=1), regal_graph(14, seed=3), layered_graph(12, seed=4)]
    for i, g in enumerate(graphs):
        g.to_json(str(directory / f"g{i}.json"))
    return directory


def stored(path: Path) -> dict[str, tuple]:
    """{task key: (status, bound, ub)} read with plain sqlite3, not through mtpp."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT task_key, status, bound, ub FROM results").fetchall()
    return {key: (status, bound, ub) for key, status, bound, ub in rows}


def same_results(a: dict[str, tuple], b: dict[str, tuple]) -> bool:
    if a.keys() != b.keys():
        return False
    for key in a:
        (sa, la, ua), (sb, lb, ub) = a[key], b[key]
        if sa != sb or not all(x == y or abs(x - y) <= 1e-7 * max(1.0, abs(y)) for x, y in ((la, lb), (ua, ub))):
            return False
    return True


@pytest.fixture(scope="session")
def testbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_testbed(tmp_path_factory.mktemp("testbed"))


def warm_kernel_cache() -> None:
    """Compile the kernels a task of :data:`METHODS` calls, here, so that numba's cache
    on disk holds them before any task process starts: compiling inside a task counts
    against its time limit, and on a fresh clone under load it took long enough to cut
    the reference's partition search short (its upper bounds then differed from a
    rerun's, in CI)."""
    import mtpp

    mtpp.certify(regal_graph(10, seed=1), k=KS[0], bounds="simple,bottleneck", solver="highs", orderer="random-20")


@pytest.fixture(scope="session")
def reference(testbed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store of one uninterrupted loky batch (2 workers) over the testbed."""
    from mtpp.batch import run

    warm_kernel_cache()
    path = tmp_path_factory.mktemp("reference") / "reference.db"
    summary = run(testbed, KS, METHODS, n_jobs=2, store=path, progress=False, **OPTIONS)
    assert summary.counts["ok"] == summary.tasks == N_GRAPHS * len(KS) * len(METHODS)
    return path
