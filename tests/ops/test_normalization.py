"""L2_NORMALIZATION (float32, uint8, int8) and LOCAL_RESPONSE_NORMALIZATION (float32) against
LiteRT's reference kernels."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.errors import ModelError
from teflon_py.tflite import options
from tests.harness import check_model, quantization, run_teflon, single_op

L2_SHAPES = [(10,), (6, 1), (3, 7), (2, 3, 16), (2, 4, 5, 11), (1, 1, 1, 1001)]
#: output grid LiteRT's 8-bit L2_NORMALIZATION requires: 1/128, zero point 128 (uint8) / 0 (int8)
L2_OUT_QUANT = {np.uint8: quantization(1 / 128, 128), np.int8: quantization(1 / 128, 0)}
#: input zero points: off-centre, at the centre, at an end of the range
L2_IN_ZERO_POINTS = {np.uint8: [128, 100, 0], np.int8: [0, -20, 127]}


def l2_model(shape: tuple, dtype: type, qin=None, activation: ir.Activation = ir.Activation.NONE) -> bytes:
    return single_op("L2_NORMALIZATION", [{"shape": shape, "dtype": dtype, "quant": qin}],
                     [{"shape": shape, "dtype": dtype, "quant": L2_OUT_QUANT.get(dtype)}],
                     options.L2NormOptions(fused_activation_function=activation))


@pytest.mark.parametrize("shape", L2_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_l2_normalization_float(backend: str, shape: tuple) -> None:
    check_model(l2_model(shape, np.float32), backend, seed=len(shape))


def test_l2_normalization_float_tiny_rows(backend: str) -> None:
    """Rows whose norm is below the 1e-6 epsilon (and an all-zero row) are divided by the epsilon."""
    x = np.array([[0.0, 0.0, 0.0], [1e-7, -2e-7, 3e-8], [3.0, -4.0, 0.0]], np.float32)
    check_model(l2_model((3, 3), np.float32), backend, inputs=[x])


@pytest.mark.parametrize("zp_index", [0, 1, 2])
@pytest.mark.parametrize("in_scale", [0.01, 0.1, 2.0])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
@pytest.mark.parametrize("shape", L2_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_l2_normalization_quantized(backend: str, shape: tuple, dtype: type, in_scale: float, zp_index: int) -> None:
    qin = quantization(in_scale, L2_IN_ZERO_POINTS[dtype][zp_index])
    check_model(l2_model(shape, dtype, qin), backend, seed=zp_index + len(shape))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
def test_l2_normalization_quantized_small_rows(backend: str, dtype: type) -> None:
    """Rows at the zero point (sum of squares 0), and at distance 1 (sum 1): the inverse-sqrt special cases."""
    zp = L2_IN_ZERO_POINTS[dtype][1]
    x = np.full((4, 8), zp, dtype)
    x[1, 3] = zp + 1
    x[2, :2] = [zp - 1, zp + 1]
    x[3] = zp + np.arange(-4, 4)
    check_model(l2_model((4, 8), dtype, quantization(0.05, zp)), backend, inputs=[x])


def test_l2_normalization_rejects_activation() -> None:
    """LiteRT refuses any fused activation but NONE for L2_NORMALIZATION (the op's rules: a
    ModelError); so does teflon-py."""
    with pytest.raises(ModelError, match=r"node 0 \(L2_NORMALIZATION\): fused activation RELU"):
        run_teflon(l2_model((2, 3), np.float32, activation=ir.Activation.RELU), [np.ones((2, 3), np.float32)])


#: (radius, bias, alpha, beta)
LRN_PARAMS = [(0, 1.0, 1.0, 0.5), (1, 1.0, 1.0, 1.0), (2, 1.0, 1e-4, 0.75), (5, 2.0, 0.5, 0.75),
              (3, 0.5, 0.2, 0.3), (20, 1.0, 0.1, 1.5)]
LRN_SHAPES = [(1, 1, 1, 6), (1, 3, 4, 16), (2, 5, 5, 3), (1, 2, 2, 64)]


@pytest.mark.parametrize("params", LRN_PARAMS, ids=lambda p: "r{}-b{}-a{}-p{}".format(*p))
@pytest.mark.parametrize("shape", LRN_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_local_response_normalization(backend: str, shape: tuple, params: tuple) -> None:
    radius, bias, alpha, beta = params
    model = single_op("LOCAL_RESPONSE_NORMALIZATION", [{"shape": shape, "dtype": np.float32}],
                      [{"shape": shape, "dtype": np.float32}],
                      options.LocalResponseNormalizationOptions(radius=radius, bias=bias, alpha=alpha, beta=beta))
    check_model(model, backend, seed=radius)


def test_local_response_normalization_window_stops_short(backend: str) -> None:
    """TFLite sums channels [c - radius, c + radius): one impulse shows exactly which channels see it."""
    x = np.zeros((1, 1, 1, 9), np.float32)
    x[..., 4] = 2.0
    x[..., 0] = 1.0
    model = single_op("LOCAL_RESPONSE_NORMALIZATION", [{"shape": x.shape, "dtype": np.float32}],
                      [{"shape": x.shape, "dtype": np.float32}],
                      options.LocalResponseNormalizationOptions(radius=2, bias=1.0, alpha=1.0, beta=1.0))
    check_model(model, backend, inputs=[x + np.float32(0.5)])
