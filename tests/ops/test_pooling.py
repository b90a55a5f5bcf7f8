"""AVERAGE_POOL_2D and MAX_POOL_2D against LiteRT's reference kernels: float32, int8, uint8."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.tflite import options
from tests.harness import check_model, quantization, single_op

OPS = ["AVERAGE_POOL_2D", "MAX_POOL_2D"]
#: dtype -> input quantization (pools keep it for the output)
QUANT = {
    np.float32: None,
    np.int8: quantization(0.05, -3),
    np.uint8: quantization(0.04, 131),
}
#: (input NHWC shape, (filter_h, filter_w), (stride_h, stride_w))
WINDOWS = [
    ((1, 5, 5, 3), (1, 1), (1, 1)),
    ((1, 6, 7, 4), (2, 2), (2, 2)),
    ((2, 7, 6, 3), (3, 3), (1, 1)),
    ((1, 9, 8, 5), (3, 3), (2, 2)),
    ((1, 8, 9, 2), (2, 3), (3, 2)),
    ((1, 10, 11, 3), (4, 4), (3, 3)),
    ((1, 9, 7, 2), (5, 4), (1, 3)),
    ((1, 11, 12, 4), (5, 5), (2, 1)),
    ((1, 4, 4, 8), (4, 4), (1, 1)),
    ((1, 7, 7, 16), (1, 3), (3, 1)),
    ((1, 3, 3, 2), (3, 3), (3, 3)),
    ((1, 6, 5, 28), (2, 2), (2, 2)),  # 16 + 12 channels: the last block shifted back
    ((1, 5, 6, 37), (3, 3), (1, 1)),
]


def out_size(padding: ir.Padding, size: int, f: int, s: int) -> int:
    return (size + s - 1) // s if padding == ir.Padding.SAME else (size + s - f) // s


def pool_model(op: str, shape: tuple, window: tuple, strides: tuple, padding: ir.Padding, dtype: type,
               act: ir.Activation = ir.Activation.NONE, out_quant: ir.Quantization | None = None) -> bytes:
    (fh, fw), (sh, sw) = window, strides
    out = (shape[0], out_size(padding, shape[1], fh, sh), out_size(padding, shape[2], fw, sw), shape[3])
    q = QUANT[dtype]
    opts = options.Pool2DOptions(padding=padding, stride_w=sw, stride_h=sh, filter_width=fw, filter_height=fh,
                                 fused_activation_function=act)
    return single_op(op, [{"shape": shape, "dtype": dtype, "quant": q}],
                     [{"shape": out, "dtype": dtype, "quant": out_quant or q}], opts)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8], ids=["f32", "i8", "u8"])
@pytest.mark.parametrize("padding", [ir.Padding.SAME, ir.Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("shape,window,strides", WINDOWS, ids=[f"f{w[1][0]}x{w[1][1]}s{w[2][0]}x{w[2][1]}" for w in WINDOWS])
@pytest.mark.parametrize("op", OPS)
def test_pool(backend: str, op: str, shape: tuple, window: tuple, strides: tuple, padding: ir.Padding,
              dtype: type) -> None:
    check_model(pool_model(op, shape, window, strides, padding, dtype), backend, seed=sum(shape))


@pytest.mark.parametrize("padding", [ir.Padding.SAME, ir.Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("shape,window,strides", [*WINDOWS, ((2, 9, 10, 70), (3, 3), (2, 2))],
                         ids=[f"f{w[1][0]}x{w[1][1]}s{w[2][0]}x{w[2][1]}" for w in WINDOWS] + ["wide"])
@pytest.mark.parametrize("op", OPS)
def test_pool_gpu_family(gpu_family: str, op: str, shape: tuple, window: tuple, strides: tuple,
                         padding: ir.Padding) -> None:
    """The float pools on the GPU family's kernels (gpu_pool.cl), whatever the device's default."""
    act = [ir.Activation.NONE, ir.Activation.RELU6][sum(window) % 2]
    check_model(pool_model(op, shape, window, strides, padding, np.float32, act), gpu_family, seed=sum(shape))


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8], ids=["f32", "i8", "u8"])
@pytest.mark.parametrize("act", [ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1],
                         ids=lambda a: a.name.lower())
@pytest.mark.parametrize("op", OPS)
def test_pool_fused_activation(backend: str, op: str, act: ir.Activation, dtype: type) -> None:
    model = pool_model(op, (1, 8, 8, 6), (3, 3), (2, 2), ir.Padding.SAME, dtype, act)
    check_model(model, backend, seed=int(act))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
@pytest.mark.parametrize("op", OPS)
def test_pool_output_quantization_ignored(backend: str, op: str, dtype: type) -> None:
    """LiteRT pools raw values whatever the output's quantization; only the activation reads it."""
    out_q = quantization(0.1, 10)
    model = pool_model(op, (1, 6, 6, 3), (2, 2), (2, 2), ir.Padding.VALID, dtype, ir.Activation.RELU, out_q)
    check_model(model, backend)
