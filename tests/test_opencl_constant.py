"""Load-time constants on OpenCL: float16-weight and sparse-weight models stay one partition.

The Interpreter folds float16 DEQUANTIZE and DENSIFY of constants at load time; the delegate
claims those nodes at no cost (no launch), so nothing is left on the fallback.
"""
from __future__ import annotations

import numpy as np
import pytest

import teflon_py
from teflon_py import ir
from teflon_py.fallback.constant_folding import fold_constants
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.reader import read_model
from tests.harness import check_model, quantization
from tests.ops.test_densify import encode

pytest.importorskip("pyopencl")

F32, F16 = np.float32, np.float16


def test_registry_claims_folded_constants() -> None:
    from teflon_py.opencl.lowerings import supported_ops

    assert "DEQUANTIZE" in supported_ops("float16")
    for kind in ("float32", "int8", "float16"):
        assert "DENSIFY" in supported_ops(kind), kind


def _weights(shape: tuple, seed: int, sparse: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))
    if sparse:
        w[..., ::2] = 0  # half the input channels of every tap: CSR along the last axis
    return w.astype(F32)


def _weight(g, name: str, dense: np.ndarray, storage: str) -> int:
    """A float32 weight tensor: constant, or DEQUANTIZE of float16, or DENSIFY of sparse values
    (``sparse16``: of float16 ones, then DEQUANTIZE)."""
    if storage == "float32":
        return g.add_constant(name, dense)
    dtype = F16 if storage in ("float16", "sparse16") else F32
    if storage == "float16":
        src = g.add_constant(f"{name}/f16", dense.astype(F16))
    else:
        levels = "D" * (dense.ndim - 1) + "S"
        values, sparsity = encode(dense.astype(dtype), tuple(range(dense.ndim)), (), (), levels)
        sp = g.add_constant(f"{name}/sparse", values, shape=dense.shape, sparsity=sparsity)
        src = g.add_tensor(f"{name}/dense", dense.shape, dtype)
        g.add_op("DENSIFY", [sp], [src])
        if dtype == F32:
            return src
    out = g.add_tensor(name, dense.shape, F32)
    g.add_op("DEQUANTIZE", [src], [out])
    return out


def conv_model(storage: str) -> bytes:
    """CONV_2D 3x3 + RELU6 -> DEPTHWISE 3x3 -> FULLY_CONNECTED, every weight and bias stored as ``storage``."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 8, 8, 4), F32)
    y1 = g.add_tensor("conv", (1, 8, 8, 16), F32)
    g.add_op("CONV_2D", [x, _weight(g, "w1", _weights((16, 3, 3, 4), 1, True), storage),
                         _weight(g, "b1", _weights((16,), 2), storage if storage != "sparse16" else "float16")],
             [y1], O.Conv2DOptions(padding=ir.Padding.SAME, stride_h=1, stride_w=1,
                                   fused_activation_function=ir.Activation.RELU6))
    y2 = g.add_tensor("dw", (1, 4, 4, 16), F32)
    g.add_op("DEPTHWISE_CONV_2D", [y1, _weight(g, "w2", _weights((1, 3, 3, 16), 3), storage), g.add_constant(
        "b2", np.zeros(16, F32))], [y2], O.DepthwiseConv2DOptions(padding=ir.Padding.SAME, stride_h=2, stride_w=2,
                                                                  depth_multiplier=1))
    flat = g.add_tensor("flat", (1, 256), F32)
    g.add_op("RESHAPE", [y2, g.add_constant("shape", np.array([1, 256], np.int32))], [flat],
             O.ReshapeOptions(new_shape=(1, 256)))
    y3 = g.add_tensor("fc", (1, 10), F32)
    g.add_op("FULLY_CONNECTED", [flat, _weight(g, "w3", _weights((10, 256), 4, True), storage),
                                 g.add_constant("b3", np.zeros(10, F32))], [y3], O.FullyConnectedOptions())
    g.mark_outputs(y3)
    return mb.build()


@pytest.mark.parametrize("storage", ["float16", "sparse32", "sparse16"])
def test_constant_weights_stay_one_partition(device, storage: str) -> None:
    """Every node on OpenCL, one partition, the folded nodes launching nothing; LiteRT's numbers."""
    model = conv_model(storage)
    it = check_model(model, "opencl")
    placements = it.placements()
    assert [p.backend for p in placements] == ["opencl"] * len(placements)
    assert len(it.partitions()) == 1
    graph = it.graph
    folded = [op.index for op in graph.operations if op.name in ("DEQUANTIZE", "DENSIFY")]
    assert folded and all(graph.tensors[graph.operations[i].outputs[0]].is_constant for i in folded)
    from teflon_py.opencl.compiled import Builder
    from teflon_py.opencl.fusion import FusionPlan
    from teflon_py.opencl.lowerings import lowering_for

    b = Builder(graph, range(len(graph.operations)), FusionPlan())
    for i in folded:
        b.current = i
        lowering_for(graph, graph.operations[i]).emit(b, graph.operations[i])
    assert b.launches == [] and b.aliases == {}


def _check(graph: ir.Graph, op: int) -> str | None:
    return teflon_py.load_delegate("opencl").check(graph, graph.operations[op]).reason


def test_only_folded_constants_are_claimed() -> None:
    mb = ModelBuilder()
    g = mb.main
    x16 = g.add_input("x16", (2, 3), F16)  # a runtime float16 input: a real DEQUANTIZE
    x = g.add_tensor("x", (2, 3), F32)
    g.add_op("DEQUANTIZE", [x16], [x])
    w = g.add_tensor("w", (2, 3), F32)
    g.add_op("DEQUANTIZE", [g.add_constant("w16", np.ones((2, 3), F16))], [w])
    s = g.add_tensor("s", (2, 3), F32)
    g.add_op("ADD", [x, w], [s])
    out = g.add_tensor("out", (2, 3), F32)
    g.add_op("DEQUANTIZE", [g.add_constant("c16", np.ones((2, 3), F16))], [out])  # a graph output
    g.mark_outputs(s, out)
    graph = fold_constants(read_model(mb.build()).main)
    assert "folded at load time" in _check(graph, 0)
    assert _check(graph, 1) is None
    assert "graph output" in _check(graph, 3)


def test_int8_densify_is_claimed() -> None:
    """Sparse int8 weights (for the int8 kernels): the DENSIFY itself costs nothing."""
    mb = ModelBuilder()
    g = mb.main
    dense = np.random.default_rng(0).integers(-128, 128, (4, 8)).astype(np.int8)
    dense[:, ::2] = 0
    values, sparsity = encode(dense, (0, 1), (), (), "DS")
    q = quantization(0.02, 0)
    sp = g.add_constant("sparse", values, shape=(4, 8), sparsity=sparsity, quantization=q)
    w = g.add_tensor("w", (4, 8), np.int8, quantization=q)
    g.add_op("DENSIFY", [sp], [w])
    x = g.add_input("x", (1, 8), np.int8, quantization=quantization(0.1, 0))
    y = g.add_tensor("y", (1, 4), np.int8, quantization=quantization(0.5, 0))
    g.add_op("FULLY_CONNECTED", [x, w, -1], [y], O.FullyConnectedOptions())
    g.mark_outputs(y)
    graph = fold_constants(read_model(mb.build()).main)
    assert _check(graph, 0) is None
