"""SOFTMAX against LiteRT's reference kernels: float32 on ranks 1-4, int8 and uint8, several betas."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.errors import ModelError
from teflon_py.tflite import options
from tests.harness import check_model, quantization, run_teflon, single_op

SHAPES = [(10,), (6, 1), (3, 7), (2, 3, 16), (2, 4, 5, 11), (1, 1001)]
#: quantized rows stay short: with a sum of exponentials of 512 or more LiteRT aborts the process
QSHAPES = [(10,), (6, 1), (3, 7), (2, 3, 16), (2, 4, 5, 11)]
BETAS = [1.0, 0.5, 2.0, 0.1]
#: output grid TFLite's 8-bit softmax assumes: 1/256, zero point at the type's minimum
OUT_QUANT = {np.int8: quantization(1 / 256, -128), np.uint8: quantization(1 / 256, 0)}
IN_ZERO_POINT = {np.int8: 5, np.uint8: 120}


def softmax_model(shape: tuple, beta: float, dtype: type, in_scale: float | None = None) -> bytes:
    qin = None if in_scale is None else quantization(in_scale, IN_ZERO_POINT[dtype])
    qout = OUT_QUANT.get(dtype)
    return single_op("SOFTMAX", [{"shape": shape, "dtype": dtype, "quant": qin}],
                     [{"shape": shape, "dtype": dtype, "quant": qout}], options.SoftmaxOptions(beta=beta))


@pytest.mark.parametrize("beta", BETAS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_softmax_float(backend: str, shape: tuple, beta: float) -> None:
    check_model(softmax_model(shape, beta, np.float32), backend, seed=len(shape))


@pytest.mark.parametrize("in_scale", [0.01, 0.05, 0.1, 0.5])
@pytest.mark.parametrize("beta", BETAS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
@pytest.mark.parametrize("shape", QSHAPES, ids=lambda s: "x".join(map(str, s)))
def test_softmax_quantized(backend: str, shape: tuple, dtype: type, beta: float, in_scale: float) -> None:
    check_model(softmax_model(shape, beta, dtype, in_scale), backend, seed=len(shape))


@pytest.mark.parametrize("in_scale,beta", [(0.1, 1.0), (0.5, 0.5), (0.05, 2.0)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
def test_softmax_quantized_long_rows(backend: str, dtype: type, in_scale: float, beta: float) -> None:
    """1001 classes, with input ranges wide enough that the row sums stay below 512."""
    check_model(softmax_model((2, 1001), beta, dtype, in_scale), backend)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
def test_softmax_quantized_capped_multiplier(backend: str, dtype: type) -> None:
    """beta * scale * 2^26 beyond int32: TFLite caps the multiplier; only near-maxima survive."""
    check_model(softmax_model((4, 50), 200.0, dtype, 0.5), backend)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
def test_softmax_quantized_near_ties(backend: str, dtype: type) -> None:
    """Rows of few distinct values (many equal maxima) exercise the sum and the reciprocal."""
    rng = np.random.default_rng(7)
    lo = np.iinfo(dtype).min
    x = (lo + 100 + rng.integers(0, 4, (6, 300))).astype(dtype)
    check_model(softmax_model((6, 300), 1.0, dtype, 0.08), backend, inputs=[x])


def test_softmax_quantized_sum_too_large_is_an_error() -> None:
    """Where LiteRT's TFLITE_CHECK aborts (row sum >= 512), the NumPy kernel raises instead: the
    model's quantization breaks the op's rules (a ModelError)."""
    model = softmax_model((1, 1001), 0.1, np.int8, 0.01)
    with pytest.raises(ModelError, match=r"node 0 \(SOFTMAX\): .*aborts"):
        run_teflon(model, [np.zeros((1, 1001), np.int8)])


# -- LOG_SOFTMAX ------------------------------------------------------------------------------------

#: output grid LiteRT's 8-bit LOG_SOFTMAX requires: 16/256, zero point at the type's maximum
LOG_OUT_QUANT = {np.int8: quantization(16 / 256, 127), np.uint8: quantization(16 / 256, 255)}


def log_softmax_model(shape: tuple, dtype: type, in_scale: float | None = None) -> bytes:
    qin = None if in_scale is None else quantization(in_scale, IN_ZERO_POINT[dtype])
    return single_op("LOG_SOFTMAX", [{"shape": shape, "dtype": dtype, "quant": qin}],
                     [{"shape": shape, "dtype": dtype, "quant": LOG_OUT_QUANT.get(dtype)}], options.LogSoftmaxOptions())


@pytest.mark.parametrize("shape", SHAPES + [(3, 4000)], ids=lambda s: "x".join(map(str, s)))
def test_log_softmax_float(backend: str, shape: tuple) -> None:
    check_model(log_softmax_model(shape, np.float32), backend, seed=len(shape))


def test_log_softmax_float_wide_range(backend: str) -> None:
    """Inputs far below the row maximum: exp underflows to 0, the log stays finite."""
    x = (np.random.default_rng(4).standard_normal((4, 50)) * 40).astype(np.float32)
    check_model(log_softmax_model((4, 50), np.float32), backend, inputs=[x])


@pytest.mark.parametrize("in_scale", [0.005, 0.02, 0.05, 0.1, 0.3, 1.0])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
@pytest.mark.parametrize("shape", QSHAPES + [(2, 1001)], ids=lambda s: "x".join(map(str, s)))
def test_log_softmax_quantized(backend: str, shape: tuple, dtype: type, in_scale: float) -> None:
    check_model(log_softmax_model(shape, dtype, in_scale), backend, seed=len(shape))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
def test_log_softmax_quantized_near_ties(backend: str, dtype: type) -> None:
    """Rows of few distinct values near the maximum, and constant rows (log sum of exps = log n)."""
    rng = np.random.default_rng(11)
    lo = np.iinfo(dtype).min
    x = (lo + 100 + rng.integers(0, 4, (6, 300))).astype(dtype)
    x[0] = lo + 7
    check_model(log_softmax_model((6, 300), dtype, 0.08), backend, inputs=[x])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
def test_log_softmax_quantized_needs_fixed_output_grid(dtype: type) -> None:
    """LiteRT refuses any output grid but 16/256 with zero point 127 (int8) / 255 (uint8); so does teflon-py."""
    model = single_op("LOG_SOFTMAX", [{"shape": (2, 5), "dtype": dtype, "quant": quantization(0.1, 3)}],
                      [{"shape": (2, 5), "dtype": dtype, "quant": quantization(1 / 16, 0)}], options.LogSoftmaxOptions())
    with pytest.raises(ModelError, match=r"node 0 \(LOG_SOFTMAX\): .* output needs scale 16/256"):
        run_teflon(model, [np.zeros((2, 5), dtype)])
