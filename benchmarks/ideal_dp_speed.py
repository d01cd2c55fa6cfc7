"""The ideal DP at scale (issue 21, item 3): the old per-k DP (one ``(k + 1) x N`` table
per k, loaded from commit ``BASE``) against :func:`heuristics.partition.ideal_dp.ideal_dp_all`
(one call for every k), in one process on the same lattice and the same bounds.
Run by hand: ``python benchmarks/ideal_dp_speed.py [--models inception_v2 ...]``.

The bounds are the ones ``mtpp.certify(..., bounds="simple,cut,ideal-dp",
orderer="kahn")`` hands its DP phase (recorded by running it once): per k still open,
the Kahn SliceGraph upper bound and the best lower bound proven for that k or a larger
one, on the presolved graph priced on the ``a100`` preset.  The old loop feeds each k
the better of its upper bound and the optimum found at the smaller ks, as certify
did.  Times exclude numba compilation (both paths run once on a small k first).
Columns: per k, the old DP's seconds, the new call's seconds for that k, the optimum
both found; the last line, both totals and their ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import mtpp.engine.certificate as certificate  # noqa: E402
from benchmarks.real_models import git_commit  # noqa: E402
from heuristics.partition.ideal_dp import ideal_dp_all  # noqa: E402
from heuristics.partition.ideals import enumerate_ideals  # noqa: E402
from mtpp.core.presets import get_device  # noqa: E402
from mtpp.io.onnx_model import from_onnx  # noqa: E402

BASE = "668d550"  # the last commit with the per-k DP
KS = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]


def old_modules(tmp: Path) -> tuple[ModuleType, ModuleType]:
    """The per-k DP and its lattice as they were at ``BASE``."""
    mods = []
    for name in ("ideals", "ideal_dp"):
        text = subprocess.run(
            ["git", "show", f"{BASE}:heuristics/partition/{name}.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        text = text.replace("from heuristics.partition.ideals import", "from old_ideals import")
        path = tmp / f"old_{name}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"old_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"old_{name}"] = module
        spec.loader.exec_module(module)
        mods.append(module)
    return mods[0], mods[1]


def certify_inputs(problem):  # the (problem, ks, ubs, lbs) certify's DP phase sees
    seen = {}

    def record(base, ks, *, upper_bounds, lower_bounds, lattice, time_limit):
        seen.update(problem=base, ks=list(ks), ubs=list(upper_bounds), lbs=list(lower_bounds))
        return ideal_dp_all(
            base, ks, upper_bounds=upper_bounds, lower_bounds=lower_bounds, lattice=lattice, time_limit=time_limit
        )

    saved = certificate.ideal_dp_all
    certificate.ideal_dp_all = record
    try:
        certificate.certify(problem, k=KS, bounds="simple,cut,ideal-dp", orderer="kahn")
    finally:
        certificate.ideal_dp_all = saved
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["inception_v2", "inception_v1", "resnet50"])
    args = parser.parse_args()
    import onnx

    light = Path(str(onnx.__file__)).parent / "backend" / "test" / "data" / "light"
    spec = get_device("a100")
    print(f"ideal DP speed at commit {git_commit()} (old per-k DP from {BASE}); {os.cpu_count()} cores; device a100")
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        old_ideals, old_dp = old_modules(Path(tmp))
        for name in args.models:
            g = from_onnx(light / f"light_{name}.onnx", device_spec=spec)
            seen = certify_inputs(spec.problem(g, 2))
            if not seen:
                print(f"\n{name}: every k closed before the DP")
                continue
            base, ks, ubs, lbs = seen["problem"], seen["ks"], seen["ubs"], seen["lbs"]
            old_lattice, lattice = old_ideals.enumerate_ideals(base.graph), enumerate_ideals(base.graph)
            warm = base.__class__(base.graph, 2, bandwidth=base.bandwidth, memory=base.memory, reserve=base.reserve)
            old_dp.ideal_dp(warm, lattice=old_lattice)
            ideal_dp_all(base, [2], lattice=lattice)
            print(f"\n{name}: n={base.graph.n} (presolved), {lattice.count} ideals, open ks {ks}")
            print(f"{'k':>4}{'UB':>12}{'LB':>12}{'old s':>9}{'new s':>9}{'old value':>20}{'new value':>20}")
            t0 = time.perf_counter()
            new = ideal_dp_all(base, ks, upper_bounds=ubs, lower_bounds=lbs, lattice=lattice)
            new_total = time.perf_counter() - t0
            old_total, found = 0.0, float("inf")
            for k, ub, lb, res in zip(ks, ubs, lbs, new):
                problem = base.__class__(
                    base.graph, k, bandwidth=base.bandwidth, memory=base.memory, reserve=base.reserve
                )
                t = time.perf_counter()
                old = old_dp.ideal_dp(problem, upper_bound=min(ub, found), lower_bound=lb, lattice=old_lattice)
                dt = time.perf_counter() - t
                old_total += dt
                if old.value is not None:
                    found = min(found, old.value)
                print(
                    f"{k:>4}{ub:>12.6g}{lb:>12.6g}{dt:>9.3f}{res.wall_time:>9.3f}"
                    f"{old.value!s:>20}{res.value!s:>20}  {old.status} / {res.status}",
                    flush=True,
                )
            print(f"total: old {old_total:.2f} s, new {new_total:.2f} s, ratio {old_total / new_total:.1f}x")


if __name__ == "__main__":
    main()
