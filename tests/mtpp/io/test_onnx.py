"""The ONNX importer on the model-zoo architectures that ship with onnx, and on small
hand-built models whose costs are checked by hand."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import mtpp  # noqa: E402
from mtpp.core.devices import DeviceSpec  # noqa: E402
from mtpp.core.graph import NodeId  # noqa: E402
from mtpp.core.presets import DEVICES as PRESETS  # noqa: E402
from mtpp.io.onnx_model import MissingShapeError, UnsupportedOpError, folded_nodes, from_onnx  # noqa: E402
from mtpp.partitioner import partition  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]
# dtype widths of the model itself (fp32); 1 FLOP/us and no memory-bandwidth limit, so work = FLOPs
NATIVE = DeviceSpec(name="native", peak_flops=1e6, mem_bandwidth=1e30, link_bandwidth=1e6, memory=1e9)


def light(name: str) -> Path:
    path = LIGHT / f"light_{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is missing: this onnx build does not ship the light model zoo")
    return path


def weight_bytes(model: Any) -> int:
    """Bytes of every weight: an initializer's own, or for the light models (whose
    weights are ConstantOfShape of a shape initializer) the generated tensor's.  The
    shape argument of a constant-only Reshape of a weight is used up by the folding."""
    g = model.graph
    folded = folded_nodes(g)
    used_up = {node.input[1] for node, f in zip(g.node, folded) if f and node.op_type == "Reshape"}
    read = {t for node in g.node for t in node.input} - used_up
    fill = {node.input[0]: node for node in g.node if node.op_type == "ConstantOfShape"}
    total = 0
    for t in g.initializer:
        if t.name not in read:
            continue
        if t.name in fill:
            value = numpy_helper.to_array(helper.get_attribute_value(fill[t.name].attribute[0]))
            total += int(np.prod(numpy_helper.to_array(t))) * value.itemsize
        else:
            total += numpy_helper.to_array(t).nbytes
    return total


@pytest.mark.parametrize("name", MODELS)
def test_light_models(name: str) -> None:
    model = onnx.load(light(name))
    g = from_onnx(model, device_spec=NATIVE)
    inits = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    live = len(model.graph.node) - sum(folded_nodes(model.graph))
    multi = sum(1 for op in g.ops if op == "Output")
    assert g.n == live + len(inputs) + multi
    assert len(g.topological_order) == g.n  # a DAG (Graph checks acyclicity when built)
    assert "ConstantOfShape" not in g.ops
    assert g.size_param.sum() == weight_bytes(model)  # no weight is shared in these models
    assert np.all(g.work[np.array([op not in ("Input", "Output") for op in g.ops])] > 0)
    assert g.size_out.max() > 0


def test_conv_costs_by_hand() -> None:
    g = from_onnx(light("resnet50"), device_spec=NATIVE)
    first = next(i for i, op in enumerate(g.ops) if op == "Conv")
    # stem conv: 2 * 118,013,952 FLOP at 1 FLOP/us; bytes moved are far fewer
    assert g.work[first] == pytest.approx(2 * 118_013_952)
    assert g.size_out[first] == 64 * 112 * 112 * 4
    assert g.size_param[first] == 64 * 3 * 7 * 7 * 4  # fp32 weight; no bias (a BatchNorm follows)


def test_batch_size_scales_activations() -> None:
    one = from_onnx(light("squeezenet"), device_spec=NATIVE)
    four = from_onnx(light("squeezenet"), batch_size=4, device_spec=NATIVE)
    assert four.n == one.n
    assert four.size_out.sum() == pytest.approx(4 * one.size_out.sum())
    assert np.array_equal(four.size_param, one.size_param)


def test_device_precision() -> None:
    fp32 = from_onnx(light("bvlc_alexnet"), device_spec=NATIVE)
    bf16 = from_onnx(light("bvlc_alexnet"), device_spec="a100")
    assert bf16.size_param.sum() == pytest.approx(fp32.size_param.sum() / 2, rel=1e-6)


def test_resnet50_partition_round_trip() -> None:
    g = from_onnx(light("resnet50"), device_spec="a100")
    problem = PRESETS["a100"].problem(g, 4)
    sol = partition(problem, time_limit=2.0)
    ev = mtpp.evaluate(problem, sol.evaluation.assignment)
    assert ev.bottleneck == pytest.approx(sol.bottleneck)
    assert sol.lower_bound <= sol.bottleneck * (1 + 1e-9)
    assert sol.bottleneck <= g.work.sum() + 2 * g.size_out.sum() / problem.bandwidth


def _model(nodes: list, inputs: list, outputs: list, inits: list | None = None) -> Any:
    graph = helper.make_graph(nodes, "toy", inputs, outputs, initializer=inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _vi(name: str, shape: list) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_multi_output_op_gets_output_nodes() -> None:
    # x -> Split into a (2x3) and b (2x5); a -> Relu, b -> Relu
    split = numpy_helper.from_array(np.array([3, 5], dtype=np.int64), "split")
    model = _model(
        [
            helper.make_node("Split", ["x", "split"], ["a", "b"], name="sp", axis=1),
            helper.make_node("Relu", ["a"], ["ra"], name="r1"),
            helper.make_node("Relu", ["b"], ["rb"], name="r2"),
        ],
        [_vi("x", ["N", 8])],
        [_vi("ra", ["N", 3]), _vi("rb", ["N", 5])],
        [split],
    )
    g = from_onnx(model, batch_size=2, device_spec=NATIVE)
    assert set(g.ids) == {"input:x", "sp", "sp:out0", "sp:out1", "r1", "r2"}
    assert g.size_out[g.index("sp")] == (6 + 10) * 4
    assert g.size_out[g.index("sp:out0")] == 6 * 4 and g.size_out[g.index("sp:out1")] == 10 * 4
    assert g.size_param[g.index("sp")] == 16  # the int64 split sizes
    assert set(g.edges()) == {
        ("input:x", "sp"),
        ("sp", "sp:out0"),
        ("sp", "sp:out1"),
        ("sp:out0", "r1"),
        ("sp:out1", "r2"),
    }
    # the split and its outputs in block 0, r1 and r2 in block 1: each output counted once
    problem = mtpp.Problem(g, 2, bandwidth=1.0)
    a: dict[NodeId, int] = {"input:x": 0, "sp": 0, "sp:out0": 0, "sp:out1": 0, "r1": 1, "r2": 1}
    ev = mtpp.evaluate(problem, a)
    assert ev.costs.output_io[0] == (6 + 10) * 4
    assert ev.costs.input_io[1] == (6 + 10) * 4


def test_constant_subgraph_folds_into_params() -> None:
    shape = numpy_helper.from_array(np.array([4, 3], dtype=np.int64), "wshape")
    model = _model(
        [
            helper.make_node(
                "ConstantOfShape", ["wshape"], ["w"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])
            ),
            helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
        ],
        [_vi("x", ["N", 4])],
        [_vi("y", ["N", 3])],
        [shape],
    )
    g = from_onnx(model, batch_size=5, device_spec=NATIVE)
    assert g.ids == ("input:x", "mm")
    assert g.size_param[1] == 4 * 3 * 4
    assert g.work[1] == 2 * 5 * 4 * 3  # 2 M K N FLOPs at 1 FLOP/us
    assert g.size_out[0] == 5 * 4 * 4


def test_unsupported_op_and_fallback() -> None:
    model = _model(
        [helper.make_node("Einsum", ["x", "x"], ["y"], name="ein", equation="ij,ij->ij")],
        [_vi("x", [2, 2])],
        [_vi("y", [2, 2])],
    )
    with pytest.raises(UnsupportedOpError, match="'Einsum' \\(node 'ein'\\)"):
        from_onnx(model, device_spec=NATIVE)
    g = from_onnx(model, device_spec=NATIVE, fallback_cost=7.0)
    assert g.work[g.index("ein")] == 7.0
    g = from_onnx(model, device_spec=NATIVE, fallback_cost=lambda node: 3.0 if node.op_type == "Einsum" else 0.0)
    assert g.work[g.index("ein")] == 3.0


def test_shapeless_op_is_named() -> None:
    # NonZero's output length depends on the data: no static shape downstream
    model = _model(
        [helper.make_node("NonZero", ["x"], ["nz"], name="nz"), helper.make_node("Relu", ["nz"], ["y"], name="act")],
        [_vi("x", [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
    )
    with pytest.raises(MissingShapeError, match="node 'nz'"):
        from_onnx(model, device_spec=NATIVE)
    g = from_onnx(model, device_spec=NATIVE, fallback_cost=1.0)
    assert g.n == 3


def test_cli_import_handler(tmp_path: Path) -> None:
    import argparse

    from rich.console import Console

    from mtpp.cli.importer import add_import_command, cmd_import

    parser = argparse.ArgumentParser(prog="mtpp")
    add_import_command(parser.add_subparsers(dest="command"))
    out_path = tmp_path / "g.json"
    args = parser.parse_args(
        ["import", str(light("squeezenet")), "-o", str(out_path), "--batch", "2", "--device", "h100"]
    )
    console = Console(record=True, width=200)
    assert cmd_import(args, console) == 0
    g = mtpp.load_graph(str(out_path))
    assert g == from_onnx(light("squeezenet"), batch_size=2, device_spec="h100")
    assert g.machine is not None and g.machine.name == "h100" and g.machine.bandwidth == 450000
    assert "h100, bandwidth 450000 bytes/us" in console.export_text()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_cli_import_write_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from mtpp.cli import main

    assert main(["import", str(light("squeezenet")), "-o", "/dev/full", "-q"]) == 1
    assert capsys.readouterr().err.strip() == "mtpp: error: cannot write /dev/full: No space left on device"
