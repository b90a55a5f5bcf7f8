"""The OpenCL TRANSPOSE_CONV beyond tests/ops: registry coverage, wide channel counts (every
register blocking, ragged channel tails), strides and phases, the stride-1 route through the conv
kernels, a folded RELU6, MediaPipe's op on a segmentation-sized upsampling; the int8 / uint8
routes (stride 1 on qconv, else qtranspose_conv), their wide blockings and their refusals."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import teflon_py
from teflon_py import ir, partitioner
from teflon_py.errors import ModelError
from teflon_py.opencl.lowerings import transpose_conv as tc
from teflon_py.opencl.params import KernelParams
from teflon_py.ops.common import Act, FusedActivation, Padding
from teflon_py.ops.conv import TransposeConvAttrs, TransposeConvBiasAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.reader import read_model
from tests.harness import check_model, quantization, relative_l2, run_litert, run_teflon, single_op
from tests.ops.test_transpose_conv import Case as QCase
from tests.ops.test_transpose_conv import _mediapipe_model
from tests.ops.test_transpose_conv import transpose_conv_model as qmodel

pytest.importorskip("pyopencl")

F32 = np.float32
SAME, VALID = ir.Padding.SAME, ir.Padding.VALID


def test_registry_lowers_transpose_conv() -> None:
    from teflon_py.opencl.lowerings import supported_ops

    assert {"TRANSPOSE_CONV", tc.MEDIAPIPE} <= supported_ops("float32")
    assert "TRANSPOSE_CONV" in supported_ops("int8") & supported_ops("uint8")


def natural_hw(x: tuple, k: tuple, stride: tuple, padding: ir.Padding) -> tuple[int, int]:
    return tuple(size * s if padding == SAME else (size - 1) * s + kk for size, kk, s in zip(x[1:3], k, stride))


def transpose_conv_model(x: tuple, k: tuple, oc: int, stride: tuple, padding: ir.Padding,
                         extra: tuple = (0, 0), bias: bool = True, act: ir.Activation = ir.Activation.NONE,
                         relu6: bool = False, seed: int = 0) -> bytes:
    """One TRANSPOSE_CONV (and optionally a standalone RELU6 after it) with He-scaled weights."""
    rng = np.random.default_rng(seed)
    oh, ow = (d + e for d, e in zip(natural_hw(x, k, stride, padding), extra))
    out_shape = (x[0], oh, ow, oc)
    mb = ModelBuilder()
    g = mb.main
    xt = g.add_input("x", x, F32)
    shape = g.add_constant("shape", np.array(out_shape, np.int32))
    w = g.add_constant("w", (rng.standard_normal((oc, *k, x[3])) / np.sqrt(x[3] * k[0] * k[1])).astype(F32))
    ins = [shape, w, xt]
    if bias:
        ins.append(g.add_constant("b", rng.standard_normal(oc).astype(F32)))
    y = g.add_tensor("y", out_shape, F32)
    g.add_op("TRANSPOSE_CONV", ins, [y], O.TransposeConvOptions(padding=padding, stride_h=stride[0],
                                                                 stride_w=stride[1], fused_activation_function=act))
    if relu6:
        z = g.add_tensor("z", out_shape, F32)
        g.add_op("RELU6", [y], [z])
        y = z
    g.mark_outputs(y)
    return mb.build()


#: (input, kernel, output channels, strides, padding, extra output rows/cols)
CASES = [
    ((1, 6, 5, 8), (3, 3), 40, (2, 2), SAME, (0, 0)),  # NV=3, ragged tail of 8
    ((2, 4, 4, 16), (4, 4), 70, (2, 2), SAME, (0, 0)),  # NV=4 blocks and a 6-channel tail
    ((1, 5, 9, 6), (3, 5), 17, (2, 3), VALID, (1, 2)),  # mixed strides, columns no input reaches
    ((1, 4, 4, 3), (2, 2), 20, (3, 3), VALID, (0, 0)),  # gaps between footprints
    ((1, 9, 7, 12), (3, 3), 24, (1, 1), SAME, (0, 0)),  # stride 1: the conv kernel
    ((1, 5, 6, 7), (3, 2), 9, (1, 1), VALID, (0, 0)),  # stride 1 VALID: conv with full padding
    ((2, 3, 4, 5), (5, 5), 33, (2, 1), SAME, (-1, 0)),  # odd output rows, stride 1 across
    ((1, 5, 6, 16), (2, 2), 1, (2, 2), SAME, (0, 0)),  # kernel = stride, 1 channel: GEMM + tile copy
    ((2, 3, 4, 6), (2, 3), 5, (2, 3), VALID, (0, 0)),  # the same with unequal strides, batch 2
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_transpose_conv_geometries(family: str, case: tuple) -> None:
    x, k, oc, stride, padding, extra = case
    act = [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU_N1_TO_1][CASES.index(case) % 3]
    model = transpose_conv_model(x, k, oc, stride, padding, extra, bias=CASES.index(case) != 3, act=act,
                                 seed=CASES.index(case))
    it = check_model(model, "opencl")
    assert [p.backend for p in it.placements()] == ["opencl"]


def _spec(model: bytes, params: KernelParams | None = None):
    graph = read_model(model).main
    op = graph.operations[0]
    g = tc.transpose_conv_geometry(graph, op, op.attrs)
    return tc.spec_for(g, graph.tensors[op.inputs[1]].data, None, ir.Activation.NONE, params)


def test_stride_one_runs_on_the_conv_kernels() -> None:
    """Stride 1 is a flipped convolution (1x1 a GEMM); other strides take the gather kernel."""
    assert _spec(transpose_conv_model(*CASES[4])).name == "conv2d"
    assert _spec(transpose_conv_model((1, 7, 7, 8), (1, 1), 16, (1, 1), SAME)).name == "gemm"
    assert _spec(transpose_conv_model(*CASES[6])).name == "transpose_conv"
    assert _spec(transpose_conv_model(*CASES[0])).name == "transpose_conv"
    gpu = KernelParams(family="gpu")  # the GPU family's convolution and GEMM for stride 1
    assert _spec(transpose_conv_model(*CASES[4]), gpu).name == "gpu_conv2d"
    assert _spec(transpose_conv_model((1, 7, 7, 8), (1, 1), 16, (1, 1), SAME), gpu).name == "gpu_gemm"
    assert _spec(transpose_conv_model(*CASES[0]), gpu).name == "transpose_conv"


@pytest.mark.parametrize("oc, kernels", [(1, ["gemm_narrow", "copy_u32"]), (6, ["gemm", "copy_u32"]),
                                         (16, ["transpose_conv"])])
def test_one_tile_per_pixel_runs_as_a_gemm_and_a_copy(oc: int, kernels: list[str]) -> None:
    """Kernel = stride, no crop, fewer than 16 channels (a segmentation head's 2x upsampling to a
    mask): a GEMM over input pixels, then one copy of each pixel's values into its output tile."""
    model = transpose_conv_model((1, 6, 7, 16), (2, 2), oc, (2, 2), SAME, relu6=True, seed=oc)
    graph = read_model(model).main
    d = teflon_py.load_delegate("opencl")
    parts = partitioner.partition(graph, {op.index for op in graph.operations if d.check(graph, op)})
    compiled = d.compile(graph, parts[0])
    names = [la.info["kernel"] for la in compiled.launch_list.launches]
    assert len(names) == len(kernels) and all(n.startswith(k) for n, k in zip(names, kernels)), names
    x = np.random.default_rng(1).standard_normal((1, 6, 7, 16)).astype(F32)
    (ours,), (expected,) = compiled.invoke([x]), run_litert(model, [x])
    assert relative_l2(ours, expected) <= 1e-5 and ours.max() <= 6.0


def test_relu6_folds_into_transpose_conv(device) -> None:
    model = transpose_conv_model((1, 4, 5, 6), (3, 3), 20, (2, 2), SAME, relu6=True, seed=4)
    graph = read_model(model).main
    d = teflon_py.load_delegate("opencl")
    parts = partitioner.partition(graph, {op.index for op in graph.operations if d.check(graph, op)})
    assert len(parts) == 1 and len(parts[0].nodes) == 2
    compiled = d.compile(graph, parts[0])
    assert compiled.stats["launches"] == 1 and compiled.stats["folded"] == [1]
    x = np.random.default_rng(0).standard_normal((1, 4, 5, 6)).astype(F32) * 4
    (ours,), (expected,) = compiled.invoke([x]), run_litert(model, [x])
    assert relative_l2(ours, expected) <= 1e-5 and ours.max() <= 6.0


@pytest.mark.parametrize("padding", [1, 2], ids=["SAME", "VALID"])
def test_mediapipe_upsampling(device, padding: int) -> None:
    """A segmentation decoder's 2x upsampling (4x4 kernel, stride 2): LiteRT's VALID builtin over the
    uncropped output, cropped by MediaPipe's padding, plus the bias."""
    rng = np.random.default_rng(padding)
    x_shape, k, oc, stride = (1, 12, 12, 32), (4, 4), 16, (2, 2)
    w = (rng.standard_normal((oc, *k, x_shape[3])) / np.sqrt(32 * 16)).astype(F32)
    b = rng.standard_normal(oc).astype(F32)
    x = rng.standard_normal(x_shape).astype(F32)
    total = 2 if padding == 1 else 0  # SAME: K - (in - 1) % stride - 1
    full = natural_hw(x_shape, k, stride, VALID)
    out_hw = (full[0] - total, full[1] - total)
    builtin = single_op("TRANSPOSE_CONV", [{"data": np.array([1, *full, oc], np.int32)}, {"data": w},
                                           {"shape": x_shape, "dtype": F32}],
                        [{"shape": (1, *full, oc), "dtype": F32}],
                        O.TransposeConvOptions(padding=VALID, stride_h=2, stride_w=2))
    top = total // 2
    expected = run_litert(builtin, [x])[0][:, top: top + out_hw[0], top: top + out_hw[1]] + b
    (ours,), it = run_teflon(_mediapipe_model(x_shape, w, b, padding, stride, out_hw), [x], "opencl")
    assert [p.backend for p in it.placements()] == ["opencl"]
    assert relative_l2(ours, expected) <= 1e-5


def test_unclaimed_transpose_convs_say_why() -> None:
    model = transpose_conv_model((1, 4, 4, 3), (3, 3), 5, (2, 2), SAME)
    graph = read_model(model).main
    op = graph.operations[0]
    d = teflon_py.load_delegate("opencl")
    assert d.check(graph, op)
    tanh = dataclasses.replace(op, attrs=dataclasses.replace(op.attrs, activation=FusedActivation.of(Act.TANH)))
    assert "TANH" in d.check(graph, tanh).reason
    no_strides = dataclasses.replace(op, attrs=TransposeConvAttrs(Padding.tf_same(), (0, 0)))
    assert "strides" in d.check(graph, no_strides).reason
    w = np.ones((5, 4, 4, 3), F32)
    mediapipe = read_model(_mediapipe_model((1, 4, 4, 3), w, np.ones(5, F32), 1, (2, 2), (8, 8))).main
    op = mediapipe.operations[0]
    assert d.check(mediapipe, op)
    no_strides = dataclasses.replace(op, attrs=TransposeConvBiasAttrs(Padding.tf_same(), (0, 2)))
    assert "strides" in d.check(mediapipe, no_strides).reason
    mb = ModelBuilder()  # custom options shorter than TransposeConvParams: the reader cannot decode them
    x, wt, bt = mb.main.add_input("x", (1, 4, 4, 3), F32), mb.main.add_constant("w", w), mb.main.add_constant(
        "b", np.ones(5, F32))
    y = mb.main.add_tensor("y", (1, 8, 8, 5), F32)
    mb.main.add_op("CUSTOM", [x, wt, bt], [y], custom_code=tc.MEDIAPIPE, custom_options=b"\x01\x00\x00\x00")
    mb.main.mark_outputs(y)
    with pytest.raises(ModelError, match=r"subgraph 0 operator 0 \(Convolution2DTransposeBias\): custom options hold 4 bytes"):
        read_model(mb.build())
    wrong = read_model(_mediapipe_model((1, 4, 4, 3), w, np.ones(5, F32), 1, (2, 2), (9, 8))).main
    assert "differs" in d.check(wrong, wrong.operations[0]).reason


# -- int8 / uint8 ------------------------------------------------------------------------------------


class _Recorder:
    """The part of an ``OpEmit`` the 8-bit lowering reads, recording the specs it launches."""

    def __init__(self, graph: ir.Graph, op: ir.Operation, params: KernelParams):
        self.graph, self.op, self.params, self.specs = graph, op, params, []

    def constant(self, tensor: int) -> np.ndarray | None:
        return self.graph.tensors[tensor].data

    def output(self, k: int = 0) -> int:
        return self.op.outputs[k]

    def launch(self, spec, **bindings) -> None:
        self.specs.append(spec)


def _q_kernels(model: bytes) -> list[str]:
    """The kernels the int8 TRANSPOSE_CONV lowering launches for ``model``'s one op."""
    from teflon_py.opencl.lowerings import qtranspose_conv as qtc

    graph = read_model(model).main
    op = graph.operations[0]
    rec = _Recorder(graph, op, KernelParams())
    qtc.qtranspose_conv(rec, op.attrs)
    return [s.name for s in rec.specs]


def test_8bit_stride_one_runs_on_qconv() -> None:
    """Stride 1 is the int8 convolution with the kernel flipped; any other stride the gather kernel."""
    act = ir.Activation.NONE
    assert _q_kernels(qmodel(QCase((1, 5, 5, 3), (3, 3), 4, (1, 1), SAME), "int8", True, act, 0)) == ["qconv"]
    assert _q_kernels(qmodel(QCase((1, 5, 5, 3), (3, 2), 4, (1, 1), VALID), "uint8", True, act, 0)) == ["qconv"]
    assert _q_kernels(qmodel(QCase((1, 5, 5, 3), (3, 3), 4, (2, 2), SAME), "int8", False, act, 0)) == [
        "qtranspose_conv"]
    assert _q_kernels(qmodel(QCase((1, 5, 5, 3), (1, 3), 4, (1, 2), SAME), "int8", True, act, 0)) == [
        "qtranspose_conv"]


#: (input, kernel, output channels, strides, padding): the AVX-512 tables' blockings (3 and 4 vectors
#: across channels, a ragged last vector) through both int8 routes
Q_WIDE = [((1, 6, 5, 8), (3, 3), 40, (2, 2), SAME), ((1, 4, 4, 16), (2, 2), 70, (2, 2), VALID),
          ((1, 5, 5, 12), (3, 3), 70, (1, 1), SAME)]


@pytest.mark.parametrize("case", Q_WIDE, ids=str)
def test_8bit_wide_channels(family: str, case: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_CL_TILES", "avx512")
    k = Q_WIDE.index(case)
    model = qmodel(QCase(*case), "int8_per_channel", bias=k != 1, act=ir.Activation.NONE, seed=30 + k,
                   zero_points=(-128, 3))
    it = check_model(model, "opencl", seed=k, extremes=True)
    assert [p.backend for p in it.placements()] == ["opencl"]


def test_8bit_refusals() -> None:
    """What the kernels do not compute is refused with its reason: per-channel uint8 weights (LiteRT's
    uint8 kernel requantizes per tensor) and a zero point outside the type (the padding reads it)."""
    from teflon_py.opencl.lowerings import check_op

    def verdict(x_q: ir.Quantization, w_dtype: type, w_q: ir.Quantization) -> str:
        model = single_op(
            "TRANSPOSE_CONV",
            [{"data": np.array([1, 6, 6, 2], np.int32), "dtype": np.int32},
             {"data": np.ones((2, 2, 2, 3), w_dtype), "dtype": w_dtype, "quant": w_q},
             {"shape": (1, 3, 3, 3), "dtype": w_dtype, "quant": x_q}],
            [{"shape": (1, 6, 6, 2), "dtype": w_dtype, "quant": quantization(0.5, 0)}],
            O.TransposeConvOptions(padding=SAME, stride_h=2, stride_w=2))
        graph = read_model(model).main
        return check_op(graph, graph.operations[0], None).reason or ""

    assert verdict(quantization(0.1, 0), np.int8, quantization([0.1, 0.2], 0)) == ""
    assert "quantized per tensor" in verdict(quantization(0.1, 128), np.uint8, quantization([0.1, 0.2], 128))
    assert "outside int8's range" in verdict(quantization(0.1, 300), np.int8, quantization(0.1, 0))
