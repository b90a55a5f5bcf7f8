"""A squeeze-excite gate MUL folded into the 1x1 conv after it (``fusion.plan_gate``, cpu family):
the block's projection reads x and the gate, scaling each weight row by g[k] on load (gemm.cl's
gated instantiation), and y = x * g is never written. LiteRT's numbers either way; the fold only
where y has that conv as its sole reader and the conv is 1x1, stride 1.
"""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder
from tests.harness import check_model
from tests.test_opencl_models import compiled_partition

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.model
F32 = np.float32


def se_block(case: str = "", *, c: int = 24, oc: int = 16, size: tuple[int, int] = (6, 7), batch: int = 1) -> bytes:
    """x -> MEAN over H, W -> conv 1x1 (RELU) -> conv 1x1 -> LOGISTIC = g; y = MUL(x, g) -> CONV_2D
    1x1 to ``oc`` (bias), as EfficientNet's blocks. ``case``: "swapped" (MUL(g, x)), "relu6" (the
    conv clamps), "add" (an ADD after the conv folds into it too), "input-gate" (g is a graph
    input [1,1,1,c], shared by every batch), "shared" (y is also a graph output), "twice" (a
    second 1x1 conv reads y), "conv3x3", "stride2" (the conv after the MUL), "mul-relu" (the MUL
    has a fused RELU)."""
    rng = np.random.default_rng(11)
    mb = ModelBuilder()
    g = mb.main
    h, w = size
    x = g.add_input("x", (batch, h, w, c), F32)
    if case == "input-gate":
        gate = g.add_input("gate", (1, 1, 1, c), F32)
    else:
        m = g.add_tensor("mean", (batch, 1, 1, c), F32)
        g.add_op("MEAN", [x, g.add_constant("axes", np.array([1, 2], np.int32))], [m], O.ReducerOptions(keep_dims=True))
        r = max(4, c // 4)
        s1 = _conv(g, rng, m, r, 1, 1, ir.Activation.RELU, "squeeze")
        s2 = _conv(g, rng, s1, c, 1, 1, ir.Activation.NONE, "excite")
        gate = g.add_tensor("gate", (batch, 1, 1, c), F32)
        g.add_op("LOGISTIC", [s2], [gate])
    y = g.add_tensor("y", (batch, h, w, c), F32)
    mul_act = ir.Activation.RELU if case == "mul-relu" else ir.Activation.NONE
    g.add_op("MUL", [gate, x] if case == "swapped" else [x, gate], [y], O.MulOptions(fused_activation_function=mul_act))
    k, stride = (3 if case == "conv3x3" else 1), (2 if case == "stride2" else 1)
    out = _conv(g, rng, y, oc, k, stride, ir.Activation.RELU6 if case == "relu6" else ir.Activation.NONE, "project")
    if case == "add":
        s = g.add_tensor("sum", g.graph.tensors[out].shape, F32)
        g.add_op("ADD", [out, x], [s], O.AddOptions())
        out = s
    outputs = [out]
    if case == "shared":
        outputs.append(y)
    if case == "twice":
        outputs.append(_conv(g, rng, y, 8, 1, 1, ir.Activation.NONE, "second"))
    g.mark_outputs(*outputs)
    return mb.build()


def _conv(g, rng: np.random.Generator, x: int, oc: int, k: int, stride: int, act: ir.Activation, name: str) -> int:
    """A SAME k x k CONV_2D to ``oc`` channels with a random bias."""
    n, h, w, c = g.graph.tensors[x].shape
    wt = g.add_constant(f"{name}/w", (rng.standard_normal((oc, k, k, c)) / np.sqrt(k * k * c)).astype(F32))
    b = g.add_constant(f"{name}/b", rng.standard_normal(oc).astype(F32))
    y = g.add_tensor(name, (n, -(-h // stride), -(-w // stride), oc), F32)
    g.add_op("CONV_2D", [x, wt, b], [y], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=stride, stride_h=stride,
                                                        fused_activation_function=act))
    return y


def _mul_and_gated(it) -> tuple[int, list[str]]:
    """The MUL's op index and the kernels of the launches that took a folded gate."""
    mul = next(op.index for op in it.graph.operations if op.name == "MUL")
    gated = [la.info["kernel"] for la in compiled_partition(it).launch_list.launches if "fused_gate" in la.info]
    return mul, gated


@pytest.mark.parametrize("case, c, oc, size, batch", [
    ("", 24, 16, (6, 7), 1), ("swapped", 24, 40, (6, 7), 1), ("relu6", 40, 24, (5, 5), 1),
    ("add", 24, 24, (6, 7), 1), ("", 16, 8, (9, 7), 1), ("input-gate", 24, 16, (6, 7), 2),
    ("", 576, 96, (7, 7), 1)])
def test_gate_mul_folds_into_the_1x1_conv(family: str, case: str, c: int, oc: int, size: tuple[int, int],
                                          batch: int) -> None:
    """On the cpu family the MUL runs inside the projection conv's gemm (one launch fewer): with
    the MUL's operands either way round, a clamping conv, a residual ADD folded into the conv too,
    fewer than 16 output channels (not the narrow gemm), a gate shared by two batches. The gpu family keeps the MUL. LiteRT's numbers either way."""
    it = check_model(se_block(case, c=c, oc=oc, size=size, batch=batch), "opencl")
    mul, gated = _mul_and_gated(it)
    stats = compiled_partition(it).stats
    assert (mul in stats["folded"]) == (family == "cpu")
    assert len(gated) == (family == "cpu") and all(k.startswith("gemm_") and k.endswith("_gated") for k in gated)
    if case == "add":
        add = next(op.index for op in it.graph.operations if op.name == "ADD")
        assert add in stats["folded"]


@pytest.mark.parametrize("case, batch, c, oc, size", [
    ("shared", 1, 24, 16, (6, 7)), ("twice", 1, 24, 16, (6, 7)), ("conv3x3", 1, 24, 16, (6, 7)),
    ("stride2", 1, 24, 16, (6, 7)), ("mul-relu", 1, 24, 16, (6, 7)), ("", 2, 24, 16, (6, 7)),
    ("", 1, 96, 120, (1, 1)), ("", 1, 1152, 320, (7, 7))])
def test_gate_mul_that_cannot_fold_stays(family: str, case: str, batch: int, c: int, oc: int,
                                         size: tuple[int, int]) -> None:
    """The MUL keeps its launch when y is a graph output or has a second reader, when the conv
    reading it is not 1x1 stride 1, when a RELU clamps the MUL, when each of two batches has its
    own gate (a per-batch [2,1,1,C] gate is not one vector over the gemm's rows), and where the
    fold does not pay (``specs.gate_fold_reason``): one pixel (fewer rows than a gated gemm takes), a 7x7 map
    under 320 columns of weights."""
    it = check_model(se_block(case, c=c, oc=oc, size=size, batch=batch), "opencl")
    mul, gated = _mul_and_gated(it)
    assert mul not in compiled_partition(it).stats["folded"] and not gated
