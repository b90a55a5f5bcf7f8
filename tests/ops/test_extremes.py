"""Integer ops at their types' edges: min, max, 0, +-1 and, for quantized tensors, the zero point
+- 1 (``random_input(extremes=True)``), on every backend, bit-exact with LiteRT's reference
kernels. Random full-range inputs rarely hit the saturations, overflows and rounding ties that live
at the edges; these cases put most elements there."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.tflite import options as O
from tests.harness import check_model, quantization, single_op
from tests.ops.test_conv import Case, conv_model, depthwise_model
from tests.ops.test_fully_connected import fc_model
from tests.ops.test_softmax import softmax_model

I8, U8, I16, I32 = np.int8, np.uint8, np.int16, np.int32
#: a quantized binary op's (input a, input b, output) grids per type: zero points off centre, and an
#: output grid fine enough that sums and products of the edges saturate
GRIDS = {
    I8: (quantization(0.05, -3), quantization(0.07, 10), quantization(0.04, -20)),
    U8: (quantization(0.05, 131), quantization(0.03, 120), quantization(0.06, 128)),
    I16: (quantization(0.002), quantization(0.003), quantization(0.0025)),
}
BINARY_OPTIONS = {"ADD": O.AddOptions(), "SUB": O.SubOptions(), "MUL": O.MulOptions(),
                  "MAXIMUM": O.MaximumMinimumOptions(), "MINIMUM": O.MaximumMinimumOptions()}
IDS = {I8: "i8", U8: "u8", I16: "i16", I32: "i32"}


def binary(op: str, dtype: type, a: tuple, b: tuple, grids: tuple = (None, None, None),
           act: ir.Activation = ir.Activation.NONE) -> bytes:
    options = BINARY_OPTIONS[op]
    if act != ir.Activation.NONE:
        options = type(options)(fused_activation_function=act)
    return single_op(op, [{"shape": a, "dtype": dtype, "quant": grids[0]}, {"shape": b, "dtype": dtype, "quant": grids[1]}],
                     [{"shape": np.broadcast_shapes(a, b), "dtype": dtype, "quant": grids[2]}], options)


@pytest.mark.parametrize("shapes", [((4, 40), (4, 40)), ((3, 5, 16), (16,))], ids=["same", "broadcast"])
@pytest.mark.parametrize("dtype", [I8, U8, I16], ids=IDS.get)
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
def test_quantized_arithmetic(backend: str, op: str, dtype: type, shapes: tuple) -> None:
    check_model(binary(op, dtype, *shapes, GRIDS[dtype]), backend, extremes=True)


@pytest.mark.parametrize("act", [ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1],
                         ids=lambda a: a.name)
@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_quantized_arithmetic_activations(backend: str, op: str, act: ir.Activation) -> None:
    check_model(binary(op, I8, (2, 50), (2, 50), GRIDS[I8], act), backend, extremes=True, seed=1)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"])
def test_int32_arithmetic(backend: str, op: str) -> None:
    """int32 without quantization: sums and products of the edges wrap in LiteRT's kernels."""
    check_model(binary(op, I32, (4, 40), (40,)), backend, extremes=True)


@pytest.mark.parametrize("dtype", [I8, U8, I16], ids=IDS.get)
@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
def test_quantized_max_min(backend: str, op: str, dtype: type) -> None:
    q = GRIDS[dtype][0]
    check_model(binary(op, dtype, (3, 20), (20,), (q, q, q)), backend, extremes=True)


CONV_CASES = [Case((1, 6, 6, 8), (3, 3), 16), Case((1, 7, 7, 5), (3, 3), 7, stride=(2, 2)),
              Case((2, 4, 4, 32), (1, 1), 20, padding=ir.Padding.VALID)]


@pytest.mark.parametrize("mode", ["int8", "int8_per_channel", "uint8"])
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_quantized_conv_2d(backend: str, case: Case, mode: str) -> None:
    check_model(conv_model(case, mode, ir.Activation.NONE, seed=2), backend, extremes=True)


@pytest.mark.parametrize("mode", ["int8", "int8_per_channel", "uint8"])
def test_quantized_depthwise_conv_2d(backend: str, mode: str) -> None:
    check_model(depthwise_model(Case((1, 6, 6, 8), (3, 3), 8), mode, ir.Activation.RELU6, seed=2), backend,
                extremes=True)


def test_conv_2d_with_extreme_weights(backend: str) -> None:
    """int8 weights at +-127 (and 0) over extreme inputs: the largest accumulators a layer can make."""
    rng = np.random.default_rng(4)
    w = rng.choice(np.array([-127, -1, 0, 1, 127]), (8, 3, 3, 16)).astype(I8)
    bias = rng.choice(np.array([-(1 << 20), 0, 1 << 20]), 8).astype(I32)
    model = single_op("CONV_2D", [{"shape": (1, 5, 5, 16), "dtype": I8, "quant": quantization(0.02, -128 + 5)},
                                  {"data": w, "dtype": I8, "quant": quantization(0.01, 0)},
                                  {"data": bias, "dtype": I32, "quant": quantization(0.0002, 0)}],
                      [{"shape": (1, 5, 5, 8), "dtype": I8, "quant": quantization(1.5, 3)}],
                      O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1))
    check_model(model, backend, extremes=True)


@pytest.mark.parametrize("mode", ["int8", "int8_per_channel", "uint8"])
@pytest.mark.parametrize("shape,units,depth", [((3, 16), 8, 16), ((1, 40), 100, 40)], ids=["rows", "one-row"])
def test_quantized_fully_connected(backend: str, shape: tuple, units: int, depth: int, mode: str) -> None:
    check_model(fc_model(shape, units, depth, False, mode, ir.Activation.NONE, seed=3), backend, extremes=True)


POOL_GRIDS = {I8: quantization(0.05, -3), U8: quantization(0.04, 131), I16: quantization(0.001)}


@pytest.mark.parametrize("dtype", [I8, U8, I16], ids=IDS.get)
@pytest.mark.parametrize("window,stride,padding", [((2, 2), (2, 2), ir.Padding.VALID),
                                                   ((3, 3), (1, 1), ir.Padding.SAME)], ids=["2x2", "3x3same"])
@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pools(backend: str, op: str, window: tuple, stride: tuple, padding: ir.Padding, dtype: type) -> None:
    (fh, fw), (sh, sw) = window, stride
    h = w = 6
    oh = -(-h // sh) if padding == ir.Padding.SAME else (h - fh) // sh + 1
    q = POOL_GRIDS[dtype]
    model = single_op(op, [{"shape": (2, h, w, 5), "dtype": dtype, "quant": q}],
                      [{"shape": (2, oh, oh, 5), "dtype": dtype, "quant": q}],
                      O.Pool2DOptions(padding=padding, stride_w=sw, stride_h=sh, filter_width=fw, filter_height=fh))
    check_model(model, backend, extremes=True)


@pytest.mark.parametrize("in_scale", [0.01, 0.1], ids=["fine", "coarse"])
@pytest.mark.parametrize("dtype", [I8, U8], ids=IDS.get)
def test_softmax(backend: str, dtype: type, in_scale: float) -> None:
    """Rows of edges: many ties at the maximum, and differences spanning the whole input range."""
    check_model(softmax_model((4, 12), 1.0, dtype, in_scale), backend, extremes=True)


@pytest.mark.parametrize("dtype", [I8, I16, I32], ids=IDS.get)
def test_reshape_and_concatenation(backend: str, dtype: type) -> None:
    q = quantization(0.1, 0) if dtype != I32 else None
    from teflon_py.tflite.builder import ModelBuilder

    mb = ModelBuilder()
    g = mb.main
    a, b = g.add_input("a", (2, 3, 4), dtype, quantization=q), g.add_input("b", (2, 3, 2), dtype, quantization=q)
    c = g.add_tensor("concat", (2, 3, 6), dtype, quantization=q)
    g.add_op("CONCATENATION", [a, b], [c], O.ConcatenationOptions(axis=2))
    r = g.add_tensor("reshaped", (6, 6), dtype, quantization=q)
    g.add_op("RESHAPE", [c, g.add_constant("shape", np.array([6, 6], np.int32))], [r])
    g.mark_outputs(r)
    check_model(mb.build(), backend, extremes=True)


@pytest.mark.parametrize("op", ["ABS", "NEG"])
def test_int32_abs_neg(backend: str, op: str) -> None:
    """-min and |min| of int32 wrap to min in LiteRT's kernels."""
    check_model(single_op(op, [{"shape": (5, 16), "dtype": I32}], [{"shape": (5, 16), "dtype": I32}]), backend,
                extremes=True)


@pytest.mark.parametrize("dtype", [I8, I16], ids=IDS.get)
@pytest.mark.parametrize("op", ["ABS", "NEG"])
def test_quantized_abs_neg(backend: str, op: str, dtype: type) -> None:
    if op == "NEG":  # LiteRT's NEG keeps the grid (it negates the stored integers)
        qin = qout = quantization(0.05, 0 if dtype == I16 else -3)
    else:
        qin, qout = quantization(0.05, 0 if dtype == I16 else -3), quantization(0.04, 0 if dtype == I16 else 7)
    check_model(single_op(op, [{"shape": (4, 16), "dtype": dtype, "quant": qin}],
                          [{"shape": (4, 16), "dtype": dtype, "quant": qout}]), backend, extremes=True)


@pytest.mark.parametrize("op", ["RELU", "RELU6", "RELU_N1_TO_1"])
@pytest.mark.parametrize("dtype", [I8, U8], ids=IDS.get)
def test_quantized_relus(backend: str, op: str, dtype: type) -> None:
    qin = quantization(0.05, -3 if dtype == I8 else 131)
    qout = quantization(0.03, -100 if dtype == I8 else 20)
    check_model(single_op(op, [{"shape": (4, 16), "dtype": dtype, "quant": qin}],
                          [{"shape": (4, 16), "dtype": dtype, "quant": qout}]), backend, extremes=True)


@pytest.mark.parametrize("src,dst", [(I8, I8), (I8, U8), (U8, I8), (I16, I16), (I16, I8)],
                         ids=lambda d: IDS[d])
def test_requantize(backend: str, src: type, dst: type) -> None:
    """QUANTIZE from one grid to another: the edges saturate in the output type."""
    zp = {I8: -3, U8: 131, I16: 0}
    model = single_op("QUANTIZE", [{"shape": (3, 20), "dtype": src, "quant": quantization(0.05, zp[src])}],
                      [{"shape": (3, 20), "dtype": dst, "quant": quantization(0.02, zp[dst] // 2)}])
    check_model(model, backend, extremes=True)


@pytest.mark.parametrize("dtype", [I8, U8, I16], ids=IDS.get)
def test_dequantize(backend: str, dtype: type) -> None:
    q = quantization(0.05, {I8: -3, U8: 131, I16: 0}[dtype])
    model = single_op("DEQUANTIZE", [{"shape": (3, 20), "dtype": dtype, "quant": q}],
                      [{"shape": (3, 20), "dtype": np.float32}])
    check_model(model, backend, extremes=True, float_tol=0.0)


@pytest.mark.parametrize("dtype", [I8, U8], ids=IDS.get)
def test_quantized_mean(backend: str, dtype: type) -> None:
    q = quantization(0.05, -3 if dtype == I8 else 131)
    model = single_op("MEAN", [{"shape": (2, 5, 5, 8), "dtype": dtype, "quant": q},
                               {"data": np.array([1, 2], np.int32), "dtype": np.int32}],
                      [{"shape": (2, 8), "dtype": dtype, "quant": quantization(0.02, 1)}],
                      O.ReducerOptions(keep_dims=False))
    check_model(model, backend, extremes=True)
