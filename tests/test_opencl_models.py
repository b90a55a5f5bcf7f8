"""Whole float32 networks on the OpenCL delegate: one partition, no fallback, LiteRT's numbers.

The zoo's MobileNet V1/V2-shaped graphs (96x96, alpha 0.5, seeded random weights) must run as a
single OpenCL partition within relative L2 1e-4 of LiteRT's reference kernels, with V2's
residual ADDs folded into the convolutions before them, and a second process must find the
compiled programs in the on-disk caches (allocate_tensors >= 5x faster). The residual fold is
also checked on small blocks, including ones it must leave alone.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from teflon_py import ir, zoo
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder
from tests.harness import check_model, run_teflon

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.model
REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["mobilenet_v1", "mobilenet_v2"])
def test_float_mobilenet_is_one_opencl_partition(family: str, name: str) -> None:
    model = zoo.build(name, dtype="float32")
    x = np.random.default_rng(0).uniform(-1.0, 1.0, (1, 96, 96, 3)).astype(np.float32)
    it = check_model(model, "opencl", inputs=[x], float_tol=1e-4)
    placements = it.placements()
    assert [p.backend for p in placements] == ["opencl"] * len(placements)
    (part,) = it.partitions()
    assert part["index"] == 0 and part["backend"] == "opencl" and part["nodes"] == list(range(len(placements)))
    assert part["kernel_family"] == family
    kernels = {la.info["kernel"] for la in compiled_partition(it).launch_list.launches}
    gpu_style = {k for k in kernels if k.startswith("gpu_")}
    assert gpu_style if family == "gpu" else not gpu_style
    stats = compiled_partition(it).stats
    adds = [op.index for op in it.graph.operations if op.name == "ADD"]
    assert set(adds) <= set(stats["folded"])  # every residual ADD rides on the conv before it
    assert stats["launches"] == len(placements) - len(stats["folded"]) - stats["aliases"]


def compiled_partition(it):
    """The OpenCL partition of an interpreter planned as one partition."""
    (step,) = [s for s in it._runnable(0).steps if getattr(s, "compiled", None) is not None]
    return step.compiled


F32 = np.float32


def residual_block(case: str, ch: int = 24) -> bytes:
    """x -> conv 1x1 (RELU6) -> conv 3x3 -> ADD with x (or its variants), as MobileNetV2 does, over
    ``ch`` channels (8: the narrow-column gemm)."""
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 6, 7, ch), F32)

    def conv(inp: int, k: int, act: ir.Activation, name: str) -> int:
        c = g.graph.tensors[inp].shape[3]
        w = g.add_constant(f"{name}/w", (rng.standard_normal((ch, k, k, c)) / np.sqrt(k * k * c)).astype(F32))
        b = g.add_constant(f"{name}/b", rng.standard_normal(ch).astype(F32))
        y = g.add_tensor(name, (1, 6, 7, ch), F32)
        g.add_op("CONV_2D", [inp, w, b], [y], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1,
                                                             fused_activation_function=act))
        return y

    h = conv(x, 1, ir.Activation.RELU6, "expand")
    y = conv(h, 3 if not case.startswith("gemm") else 1, ir.Activation.RELU if case == "both-act" else ir.Activation.NONE, "project")
    other = x
    if case == "late-operand":  # the ADD's other operand is made after the conv, by no conv: no fold
        other = g.add_tensor("late", (1, 6, 7, ch), F32)
        g.add_op("RELU", [x], [other])
    if case == "late-conv":  # the other operand is a later conv's output: the ADD folds into that one
        other = conv(x, 1, ir.Activation.NONE, "late")
    add_act = ir.Activation.RELU6 if case in ("both-act", "relu-after") else ir.Activation.NONE
    inputs = [other, y] if case == "swapped" else [y, other]
    out = g.add_tensor("sum", (1, 6, 7, ch), F32)
    g.add_op("ADD", inputs, [out], O.AddOptions(fused_activation_function=add_act))
    outputs = [out]
    if case == "relu-after":
        r = g.add_tensor("relu", (1, 6, 7, ch), F32)
        g.add_op("RELU", [out], [r])
        outputs = [r]
    if case == "shared":  # the conv's output is also a graph output: no fold
        outputs.append(y)
    g.mark_outputs(*outputs)
    return mb.build()


@pytest.mark.parametrize("case, folds", [("gemm", True), ("gemm-narrow", True), ("conv3x3", True), ("swapped", True),
                                         ("both-act", True), ("relu-after", True), ("late-conv", True),
                                         ("late-operand", False), ("shared", False)])
def test_residual_add_folds_into_the_conv(family: str, case: str, folds: bool) -> None:
    ch = 8 if case == "gemm-narrow" else 24
    x = np.random.default_rng(1).standard_normal((1, 6, 7, ch)).astype(np.float32)
    it = check_model(residual_block(case, ch), "opencl", inputs=[x])
    add = next(op.index for op in it.graph.operations if op.name == "ADD")
    assert (add in compiled_partition(it).stats["folded"]) == folds


def padded_residual_block(c: int, oc: int, pad_reader: str = "add") -> bytes:
    """BlazeFace's block: x -> depthwise 3x3 -> conv 1x1 (c -> oc channels); PAD x with oc - c
    zero channels (listed after the conv, as MediaPipe's graphs list it); ADD the two; RELU.
    ``pad_reader`` "output": the padded x is a graph output too."""
    rng = np.random.default_rng(7)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 8, 9, c), F32)
    dw_w = g.add_constant("dw/w", rng.standard_normal((1, 3, 3, c)).astype(F32))
    dw_b = g.add_constant("dw/b", rng.standard_normal(c).astype(F32))
    d = g.add_tensor("dw", (1, 8, 9, c), F32)
    g.add_op("DEPTHWISE_CONV_2D", [x, dw_w, dw_b], [d],
             O.DepthwiseConv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1))
    pw_w = g.add_constant("pw/w", (rng.standard_normal((oc, 1, 1, c)) / np.sqrt(c)).astype(F32))
    pw_b = g.add_constant("pw/b", rng.standard_normal(oc).astype(F32))
    y = g.add_tensor("pw", (1, 8, 9, oc), F32)
    g.add_op("CONV_2D", [d, pw_w, pw_b], [y], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1))
    paddings = g.add_constant("paddings", np.array([[0, 0], [0, 0], [0, 0], [0, oc - c]], np.int32))
    xp = g.add_tensor("padded", (1, 8, 9, oc), F32)
    g.add_op("PAD", [x, paddings], [xp])
    s = g.add_tensor("sum", (1, 8, 9, oc), F32)
    g.add_op("ADD", [y, xp], [s], O.AddOptions())
    out = g.add_tensor("out", (1, 8, 9, oc), F32)
    g.add_op("RELU", [s], [out])
    g.mark_outputs(out, *([xp] if pad_reader == "output" else []))
    return mb.build()


@pytest.mark.parametrize("c, oc, pad_reader, folds", [(24, 28, "add", True), (16, 32, "add", True),
                                                      (24, 28, "output", True)])
def test_a_channel_padded_residual_folds_into_the_conv(family: str, c: int, oc: int, pad_reader: str,
                                                       folds: bool) -> None:
    """The PAD that widens BlazeFace's residual comes after the block's conv in the graph; it is
    launched right after its input is written instead, so the ADD (and the RELU after it) fold
    into the conv (a padded x that is also a graph output still comes out whole)."""
    x = np.random.default_rng(2).standard_normal((1, 8, 9, c)).astype(np.float32)
    it = check_model(padded_residual_block(c, oc, pad_reader), "opencl", inputs=[x])
    add = next(op.index for op in it.graph.operations if op.name == "ADD")
    assert (add in compiled_partition(it).stats["folded"]) == folds


def conv_prelu(k: int, ch: int, with_add: bool, alpha: str, shared: bool = False, producer: str = "conv",
               relu_after: bool = False, shape: tuple[int, ...] = (1, 6, 7), stride: int = 1) -> bytes:
    """x -> conv kxk (``producer`` "conv", or "depthwise"; SAME, ``stride``) [-> ADD with x, at
    stride 1] -> PRELU (per-channel or one slope) [-> RELU6], as MediaPipe's blocks; ``shared``:
    the PRELU's input is also a graph output (nothing may fold into its writer)."""
    rng = np.random.default_rng(5)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (*shape, ch), F32)
    shape = (shape[0], -(-shape[1] // stride), -(-shape[2] // stride), ch)
    b = g.add_constant("b", rng.standard_normal(ch).astype(F32))
    y = g.add_tensor("conv", shape, F32)
    if producer == "conv":
        w = g.add_constant("w", (rng.standard_normal((ch, k, k, ch)) / np.sqrt(k * k * ch)).astype(F32))
        g.add_op("CONV_2D", [x, w, b], [y],
                 O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=stride, stride_h=stride))
    else:
        w = g.add_constant("w", rng.standard_normal((1, k, k, ch)).astype(F32))
        g.add_op("DEPTHWISE_CONV_2D", [x, w, b], [y],
                 O.DepthwiseConv2DOptions(padding=ir.Padding.SAME, stride_w=stride, stride_h=stride,
                                           depth_multiplier=1))
    if with_add:
        s = g.add_tensor("sum", shape, F32)
        g.add_op("ADD", [y, x], [s], O.AddOptions())
        y = s
    slopes = rng.uniform(-0.5, 0.5, (1, 1, ch) if alpha == "channel" else (1,)).astype(F32)
    a = g.add_constant("alpha", slopes)
    out = g.add_tensor("out", shape, F32)
    g.add_op("PRELU", [y, a], [out])
    if relu_after:
        clamped = g.add_tensor("clamped", shape, F32)
        g.add_op("RELU6", [out], [clamped])
        out = clamped
    g.mark_outputs(out, *([y] if shared else []))
    return mb.build()


@pytest.mark.parametrize("k, ch, with_add, alpha", [(1, 24, True, "channel"), (1, 8, True, "channel"),
                                                    (3, 24, True, "scalar"), (3, 8, False, "channel"),
                                                    (1, 40, False, "scalar")])
def test_prelu_folds_into_the_conv(family: str, k: int, ch: int, with_add: bool, alpha: str) -> None:
    """A PRELU after a conv (after the ADD folded into it) runs in the conv's epilogue on the cpu
    family (gemm, gemm_narrow, conv2d), and stays its own launch on the gpu family; LiteRT's
    numbers either way."""
    x = np.random.default_rng(2).standard_normal((1, 6, 7, ch)).astype(np.float32)
    it = check_model(conv_prelu(k, ch, with_add, alpha), "opencl", inputs=[x])
    prelu = next(op.index for op in it.graph.operations if op.name == "PRELU")
    assert (prelu in compiled_partition(it).stats["folded"]) == (family == "cpu")


@pytest.mark.parametrize("ch, stride, with_add, alpha, shape", [
    (8, 1, True, "channel", (2, 9, 13)), (8, 2, False, "channel", (1, 12, 18)), (12, 1, True, "scalar", (1, 6, 11)),
    (4, 1, True, "channel", (2, 5, 6)), (1, 2, False, "channel", (1, 9, 9))])
def test_prelu_and_add_fold_into_a_narrow_conv(family: str, ch: int, stride: int, with_add: bool, alpha: str,
                                                shape: tuple[int, ...]) -> None:
    """A 3x3 conv with fewer than 16 channels runs conv2d_narrow.cl on the cpu family, its residual
    ADD and PRELU in that kernel's epilogue (whole 8-channel vectors, or the rolled tail below 8
    channels or 8 pixels a row); LiteRT's numbers, batches and strides included."""
    x = np.random.default_rng(3).standard_normal((*shape, ch)).astype(np.float32)
    it = check_model(conv_prelu(3, ch, with_add, alpha, shape=shape, stride=stride), "opencl", inputs=[x])
    part = compiled_partition(it)
    prelu = next(op.index for op in it.graph.operations if op.name == "PRELU")
    assert (prelu in part.stats["folded"]) == (family == "cpu")
    kernels = {la.info["kernel"] for la in part.launch_list.launches}
    assert any(k.startswith("conv2d_narrow_") for k in kernels) == (family == "cpu"), kernels


@pytest.mark.parametrize("k, ch, launches", [(1, 8, 1), (1, 5, 1), (3, 24, 2)])
def test_prelu_folds_into_the_depthwise(family: str, k: int, ch: int, launches: int) -> None:
    """On the cpu family a PRELU after a 1x1 depthwise runs in its one ``channel_map`` launch
    (x * w + b, then the slopes), and after any other depthwise as a ``channel_map`` of its
    output; the gpu family keeps it apart. LiteRT's numbers either way."""
    it = check_model(conv_prelu(k, ch, False, "channel", producer="depthwise", shape=(2, 9, 7)), "opencl")
    prelu = next(op.index for op in it.graph.operations if op.name == "PRELU")
    stats = compiled_partition(it).stats
    assert (prelu in stats["folded"]) == (family == "cpu")
    if family == "cpu":
        assert stats["launches"] == launches


@pytest.mark.parametrize("producer", ["conv", "depthwise"])
def test_a_prelu_with_a_folded_relu_stays_its_own_launch(family: str, producer: str) -> None:
    """conv -> PRELU -> RELU6: the RELU6 folds into the PRELU, which then keeps its launch (an
    epilogue ends at the slopes), so the clamp is not lost."""
    it = check_model(conv_prelu(1, 8, False, "channel", producer=producer, relu_after=True), "opencl")
    prelu = next(op.index for op in it.graph.operations if op.name == "PRELU")
    assert prelu not in compiled_partition(it).stats["folded"]


def test_a_prelu_whose_input_is_read_elsewhere_does_not_fold(family: str) -> None:
    it = check_model(conv_prelu(1, 24, True, "channel", shared=True), "opencl")
    prelu = next(op.index for op in it.graph.operations if op.name == "PRELU")
    assert prelu not in compiled_partition(it).stats["folded"]


def conv_act(act: str, producer: str, k: int, ch: int, *, with_add: bool = False, case: str = "") -> bytes:
    """x -> ``producer`` ("conv" kxk, "depthwise" kxk, "depthwise2": depth multiplier 2, or "dwpw":
    a 3x3 depthwise then a 1x1 conv) [-> ADD with x] -> ``act`` ("hard_swish"; "swish":
    LOGISTIC then MUL(y, logistic); "swish-swapped": MUL(logistic, y)), as MobileNetV3's and
    EfficientNet's blocks. ``case``: "shared" (the activation's input is also a graph output),
    "logistic-out" (the swish's logistic is too), "relu-after" (a RELU6 after the activation),
    "mul-relu" (the swish's MUL has a fused RELU), "other-reader" (a second op reads the input)."""
    rng = np.random.default_rng(11)
    mb = ModelBuilder()
    g = mb.main
    shape = (1, 9, 7, ch)
    x = g.add_input("x", shape, F32)
    oc = 2 * ch if producer == "depthwise2" else ch
    out_shape = (*shape[:3], oc)
    y = g.add_tensor("conv", out_shape, F32)
    b = g.add_constant("b", rng.standard_normal(oc).astype(F32))
    if producer == "conv":
        w = g.add_constant("w", (3 * rng.standard_normal((ch, k, k, ch)) / np.sqrt(k * k * ch)).astype(F32))
        g.add_op("CONV_2D", [x, w, b], [y], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1))
    elif producer == "dwpw":
        d = g.add_tensor("dw", shape, F32)
        dw_w = g.add_constant("dw/w", rng.standard_normal((1, 3, 3, ch)).astype(F32))
        g.add_op("DEPTHWISE_CONV_2D", [x, dw_w, g.add_constant("dw/b", rng.standard_normal(ch).astype(F32))], [d],
                 O.DepthwiseConv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1))
        w = g.add_constant("w", (3 * rng.standard_normal((ch, 1, 1, ch)) / np.sqrt(ch)).astype(F32))
        g.add_op("CONV_2D", [d, w, b], [y], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1))
    else:
        w = g.add_constant("w", rng.standard_normal((1, k, k, oc)).astype(F32))
        g.add_op("DEPTHWISE_CONV_2D", [x, w, b], [y], O.DepthwiseConv2DOptions(
            padding=ir.Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=oc // ch))
    if with_add:
        s = g.add_tensor("sum", out_shape, F32)
        g.add_op("ADD", [y, x], [s], O.AddOptions())
        y = s
    out = g.add_tensor("out", out_shape, F32)
    outputs = [out]
    if act == "hard_swish":
        g.add_op("HARD_SWISH", [y], [out])
    else:
        sig = g.add_tensor("sigmoid", out_shape, F32)
        g.add_op("LOGISTIC", [y], [sig])
        mul_act = ir.Activation.RELU if case == "mul-relu" else ir.Activation.NONE
        g.add_op("MUL", [sig, y] if act == "swish-swapped" else [y, sig], [out],
                 O.MulOptions(fused_activation_function=mul_act))
        if case == "logistic-out":
            outputs.append(sig)
    if case == "relu-after":
        clamped = g.add_tensor("clamped", out_shape, F32)
        g.add_op("RELU6", [out], [clamped])
        outputs[0] = clamped
    if case == "shared":
        outputs.append(y)
    if case == "other-reader":
        neg = g.add_tensor("neg", out_shape, F32)
        g.add_op("NEG", [y], [neg])
        outputs.append(neg)
    g.mark_outputs(*outputs)
    return mb.build()


def _activation_ops(it) -> list[int]:
    return [op.index for op in it.graph.operations if op.name in ("HARD_SWISH", "LOGISTIC", "MUL")]


@pytest.mark.parametrize("act, producer, k, ch, with_add", [
    ("hard_swish", "conv", 1, 24, False), ("swish", "conv", 1, 40, True), ("swish-swapped", "conv", 1, 8, False),
    ("hard_swish", "conv", 3, 24, True), ("swish", "conv", 3, 5, False), ("hard_swish", "conv", 1, 5, False),
    ("swish", "depthwise", 3, 24, False), ("hard_swish", "depthwise", 5, 40, False),
    ("swish-swapped", "depthwise", 3, 8, False), ("hard_swish", "depthwise", 1, 24, False),
    ("swish", "depthwise", 1, 5, False), ("hard_swish", "depthwise2", 3, 8, False),
    ("swish", "dwpw", 1, 24, True), ("hard_swish", "dwpw", 1, 16, False)])
def test_swish_folds_into_the_producer(family: str, act: str, producer: str, k: int, ch: int,
                                       with_add: bool) -> None:
    """A HARD_SWISH or a swish (LOGISTIC, then MUL by its input) after a conv or depthwise (after
    the ADD folded into it) runs in that op's epilogue on the cpu family: gemm, gemm_narrow,
    conv2d, the depthwise kernels (fast, rows, any, channel_map) and dwpw's 1x1 stage, one launch
    for the block; the gpu family keeps it apart. LiteRT's numbers either way."""
    x = np.random.default_rng(2).standard_normal((1, 9, 7, ch)).astype(np.float32)
    it = check_model(conv_act(act, producer, k, ch, with_add=with_add), "opencl", inputs=[x])
    stats = compiled_partition(it).stats
    folded = set(_activation_ops(it)) <= set(stats["folded"])
    assert folded == (family == "cpu")
    if family == "cpu":
        assert stats["launches"] == 1


@pytest.mark.parametrize("act, producer, k, ch", [("hard_swish", "conv", 1, 24), ("swish", "conv", 3, 24),
                                                   ("swish", "depthwise", 3, 24), ("hard_swish", "depthwise", 3, 8)])
def test_folded_swish_matches_the_unfused_graph(family: str, act: str, producer: str, k: int, ch: int) -> None:
    """The folded activation computes what the unfused one does (the same formulas, common.cl's
    hard_swish16 and logistic16): the fused graph's output against the same graph with the
    activation's input also an output (nothing folds), within a few float roundings."""
    x = np.random.default_rng(4).standard_normal((1, 9, 7, ch)).astype(np.float32)
    (fused,), _ = run_teflon(conv_act(act, producer, k, ch), [x], "opencl")
    (unfused, _), it = run_teflon(conv_act(act, producer, k, ch, case="shared"), [x], "opencl")
    assert not set(_activation_ops(it)) & set(compiled_partition(it).stats["folded"])
    np.testing.assert_allclose(fused, unfused, rtol=4e-7, atol=1e-7)


@pytest.mark.parametrize("act, case", [("hard_swish", "shared"), ("swish", "shared"), ("swish", "logistic-out"),
                                       ("hard_swish", "relu-after"), ("swish", "relu-after"),
                                       ("swish", "mul-relu"), ("swish-swapped", "other-reader")])
def test_swish_whose_input_is_read_elsewhere_does_not_fold(family: str, act: str, case: str) -> None:
    """The activation stays its own launch(es) when its input (or the swish's logistic) is a graph
    output or has another reader, or when a clamp follows it (folded into the activation or the
    MUL): an epilogue ends at the activation."""
    it = check_model(conv_act(act, "conv", 1, 24, case=case), "opencl")
    assert not set(_activation_ops(it)) & set(compiled_partition(it).stats["folded"])


def dw_block(c: int, oc: int, k: int, stride: int, add: bool, prelu: bool, *, batch: int = 1, case: str = "",
             size: tuple[int, int] = (9, 7)) -> bytes:
    """x -> DEPTHWISE_CONV_2D kxk (SAME, ``stride``) -> CONV_2D 1x1 to ``oc`` [-> ADD -> PRELU], as
    MediaPipe's blocks; the ADD's other operand is x when the shapes allow, else a second input.
    ``case``: "relu6" (the depthwise clamps), "pad" (a PAD then a VALID depthwise), "shared" (the
    depthwise output is also a graph output), "twice" (a second 1x1 conv reads it too), "pw3x3"
    (the conv after it is 3x3)."""
    rng = np.random.default_rng(7)
    mb = ModelBuilder()
    g = mb.main
    h, w = size
    x = g.add_input("x", (batch, h, w, c), F32)
    dw_in, padding = x, ir.Padding.SAME
    if case == "pad":
        pads = g.add_constant("pads", np.array([[0, 0], [k // 2, k // 2], [k // 2, k // 2], [0, 0]], np.int32))
        dw_in = g.add_tensor("padded", (batch, h + k - 1, w + k - 1, c), F32)
        g.add_op("PAD", [x, pads], [dw_in])
        padding = ir.Padding.VALID
    oh, ow = -(-h // stride), -(-w // stride)
    dw_w = g.add_constant("dw/w", rng.standard_normal((1, k, k, c)).astype(F32))
    dw_b = g.add_constant("dw/b", rng.standard_normal(c).astype(F32))
    d = g.add_tensor("dw", (batch, oh, ow, c), F32)
    act = ir.Activation.RELU6 if case == "relu6" else ir.Activation.NONE
    g.add_op("DEPTHWISE_CONV_2D", [dw_in, dw_w, dw_b], [d], O.DepthwiseConv2DOptions(
        padding=padding, stride_w=stride, stride_h=stride, depth_multiplier=1, fused_activation_function=act))

    def conv(inp: int, kk: int, name: str) -> int:
        wt = g.add_constant(f"{name}/w", (rng.standard_normal((oc, kk, kk, c)) / np.sqrt(kk * kk * c)).astype(F32))
        b = g.add_constant(f"{name}/b", rng.standard_normal(oc).astype(F32))
        y = g.add_tensor(name, (batch, oh, ow, oc), F32)
        g.add_op("CONV_2D", [inp, wt, b], [y], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1))
        return y

    y = conv(d, 3 if case == "pw3x3" else 1, "pw")
    outputs = []
    if add:
        other = x if (stride, oc) == (1, c) else g.add_input("skip", (batch, oh, ow, oc), F32)
        s = g.add_tensor("sum", (batch, oh, ow, oc), F32)
        g.add_op("ADD", [y, other], [s], O.AddOptions())
        y = s
    if prelu:
        a = g.add_constant("alpha", rng.uniform(-0.5, 0.5, (1, 1, oc)).astype(F32))
        out = g.add_tensor("out", (batch, oh, ow, oc), F32)
        g.add_op("PRELU", [y, a], [out])
        y = out
    outputs.append(y)
    if case == "shared":
        outputs.append(d)
    if case == "twice":
        outputs.append(conv(d, 1, "pw2"))
    g.mark_outputs(*outputs)
    return mb.build()


@pytest.mark.parametrize("c, oc, k, stride, add, prelu, batch, case", [
    (16, 8, 3, 1, True, True, 1, ""), (24, 48, 5, 2, True, True, 1, ""), (40, 16, 3, 2, False, False, 2, ""),
    (24, 24, 3, 1, True, True, 1, "relu6"), (40, 48, 5, 1, False, True, 1, ""), (16, 16, 5, 2, True, False, 1, ""),
    (24, 8, 3, 1, False, True, 1, "pad"), (40, 40, 3, 1, True, True, 1, "")])
def test_depthwise_folds_into_the_1x1_conv(family: str, c: int, oc: int, k: int, stride: int, add: bool,
                                           prelu: bool, batch: int, case: str) -> None:
    """On the cpu family a depthwise conv whose only reader is a 1x1 conv runs inside that conv's
    launch (``dwpw.cl``), with the conv's folded ADD and PRELU: one launch for the whole block;
    the gpu family keeps two. LiteRT's numbers either way."""
    it = check_model(dw_block(c, oc, k, stride, add, prelu, batch=batch, case=case), "opencl")
    ops = it.graph.operations
    dw = next(op.index for op in ops if op.name == "DEPTHWISE_CONV_2D")
    stats = compiled_partition(it).stats
    assert (dw in stats["folded"]) == (family == "cpu")
    if family == "cpu":
        (launch,) = compiled_partition(it).launch_list.launches
        assert launch.info["kernel"].startswith("dwpw_")


@pytest.mark.parametrize("c, case, size", [(24, "shared", (9, 7)), (24, "twice", (9, 7)), (24, "pw3x3", (9, 7)),
                                           (8, "", (9, 7)), (16, "", (97, 96))])
def test_depthwise_that_is_not_a_private_1x1_input_does_not_fold(family: str, c: int, case: str,
                                                                  size: tuple[int, int]) -> None:
    """The depthwise stays its own launch when its output is a graph output, has a second
    reader, or feeds a conv that is not 1x1; and where the fused kernel does not pay: fewer
    than 16 channels, or a map larger than 96x96 (``dwpw_specs.fold_reason``)."""
    it = check_model(dw_block(c, 16, 3, 1, True, True, case=case, size=size), "opencl")
    dw = next(op.index for op in it.graph.operations if op.name == "DEPTHWISE_CONV_2D")
    assert dw not in compiled_partition(it).stats["folded"]


_ALLOCATE = textwrap.dedent("""
    import json, time
    import numpy as np
    import teflon_py
    from teflon_py import zoo
    model = zoo.build("mobilenet_v1", dtype="float32")
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=[teflon_py.load_delegate("opencl")])
    start = time.perf_counter()
    it.allocate_tensors()
    seconds = time.perf_counter() - start
    it.set_tensor(it.get_input_details()[0]["index"], np.zeros((1, 96, 96, 3), np.float32))
    it.invoke()
    print(json.dumps({"seconds": seconds, "backends": sorted({p.backend for p in it.placements()})}))
""")


def test_second_process_finds_programs_in_the_cache(device, tmp_path: Path) -> None:
    env = dict(os.environ, TEFLON_CACHE_DIR=str(tmp_path / "teflon"), POCL_CACHE_DIR=str(tmp_path / "pocl"),
               PYTHONPATH=str(REPO))
    def cached_files() -> set[Path]:
        return {p for d in ("teflon", "pocl") for p in (tmp_path / d).rglob("*")
                if p.is_file() and not p.name.startswith("tempfile_")}  # PoCL's scratch files

    runs, files = [], []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _ALLOCATE], env=env, cwd=REPO, capture_output=True,
                              text=True, check=False, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        files.append(cached_files())
    assert all(r["backends"] == ["opencl"] for r in runs)
    # cache statistics, not timings (a loaded machine makes timings flaky): the first process fills
    # the caches (PoCL's, with its kernel cache on; ours otherwise), the second builds nothing new
    assert files[0], "the first process cached no program"
    assert files[1] == files[0], f"the second process compiled again: {sorted(map(str, files[1] - files[0]))}"
