"""LOGISTIC and HARD_SWISH, as TFLite's reference kernels compute them.

LOGISTIC: float32 with the reference cut-offs (1 above 16.619..., ``exp(x)`` below -9). For int8
and uint8 LiteRT's reference kernel looks the result up in a 256-entry table that LUTPopulate
fills in float32 from ``1 / (1 + exp(-x))``; the output scale must be exactly 1/256.

HARD_SWISH: float32 ``x * relu6(x + 3) / 6``. For int8/uint8 the reference kernel's int16
fixed-point path (hard_swish.h): the input is moved to a 2^-7 finer "hires" scale, multiplied by
a rounding 16-bit output multiplier, and by a "reluish" factor in [0, 1] (the input rescaled
so 3.0 maps to 2^15, saturated, then mapped onto [0, 1]) with a truncating doubling high mul.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register

QUANTIZED_8BIT = (np.dtype(np.int8), np.dtype(np.uint8))


def _check(node: Node) -> np.dtype:
    """The tensor type, after checking input and output agree and are float32 or 8-bit quantized."""
    xt, yt = node.inputs[0], node.outputs[0]
    if xt.dtype != yt.dtype:
        raise node.error(f"input type {xt.dtype} differs from output type {yt.dtype}")
    if yt.dtype != np.float32 and yt.dtype not in QUANTIZED_8BIT:
        raise node.error(f"type {yt.dtype} is not supported")
    if yt.dtype in QUANTIZED_8BIT and (xt.quantization is None or yt.quantization is None):
        raise node.error(f"quantized {yt.dtype} tensors need quantization parameters")
    return yt.dtype


def _sigmoid_float32(x: np.ndarray) -> np.ndarray:
    """``1.0f / (1.0f + std::exp(-x))`` in float32; exp rounded from double (glibc's expf differs ~1e-4 of the time by 1 ulp)."""
    with np.errstate(over="ignore"):
        e = np.exp(-x.astype(np.float64)).astype(np.float32)
    return np.float32(1) / (np.float32(1) + e)


def logistic_float(x: np.ndarray) -> np.ndarray:
    """reference_ops::Logistic<float>: sigmoid with its two cut-offs."""
    with np.errstate(over="ignore"):
        small = np.exp(x.astype(np.float64)).astype(np.float32)
    return np.where(x > np.float32(16.619047164916992188), np.float32(1),
                    np.where(x < np.float32(-9), small, _sigmoid_float32(x))).astype(np.float32)


def logistic_table(node: Node) -> np.ndarray:
    """The 256-entry LUT of LiteRT's 8-bit LOGISTIC, indexed by ``q - qmin``."""
    xt, yt = node.inputs[0], node.outputs[0]
    if np.float32(yt.scale) != np.float32(1 / 256):
        raise node.error(f"quantized output scale must be 1/256, got {yt.scale}")
    return quant.lut_populate_int8(_sigmoid_float32, xt.scale, xt.zero_point, yt.scale, yt.zero_point, yt.dtype)


@register("LOGISTIC")
def logistic(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """1 / (1 + exp(-x))."""
    x = inputs[0]
    dtype = _check(node)
    if dtype == np.float32:
        return logistic_float(x)
    table = node.memo("lut", lambda: logistic_table(node))
    return table[x.astype(np.int64) - quant.QRANGE[dtype][0]]


def hard_swish_params(node: Node) -> tuple[int, int, int, int, int, int]:
    """(input zp, output zp, output multiplier and exponent, reluish multiplier and exponent), int16."""
    xt, yt = node.inputs[0], node.outputs[0]
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(xt.scale)
    reluish_scale = np.float32(3.0) / np.float32(32768.0)
    output_multiplier, output_exponent = quant.quantize_multiplier(float(hires_input_scale / np.float32(yt.scale)))
    if output_exponent > 0:
        raise node.error("output scale must exceed input scale / 128")
    reluish_multiplier, reluish_exponent = quant.quantize_multiplier(float(hires_input_scale / reluish_scale))
    return (xt.zero_point, yt.zero_point,
            quant.downscale_int32_to_int16_multiplier(int(output_multiplier)), int(output_exponent),
            quant.downscale_int32_to_int16_multiplier(int(reluish_multiplier)), int(reluish_exponent))


def hard_swish_quantized(x: np.ndarray, params: tuple[int, int, int, int, int, int], dtype: np.dtype) -> np.ndarray:
    """reference_ops::HardSwish for 8-bit types, every intermediate an int16 as in the C++."""
    zp_in, zp_out, out_mult, out_exp, relu_mult, relu_exp = params
    srdhm16 = quant.saturating_rounding_doubling_high_mul_int16
    hires = (x.astype(np.int64) - zp_in) * 128  # |x - zp| <= 255: fits int16
    preshift_output = srdhm16(hires, out_mult)
    reluish = hires
    if relu_exp > 0:
        reluish = quant.saturating_left_shift_int16(reluish, relu_exp - 1)
    reluish = srdhm16(reluish, relu_mult)
    if relu_exp > 0:
        reluish = quant.saturating_left_shift_int16(reluish, 1)
    if relu_exp < 0:
        reluish = quant.rounding_divide_by_pot(reluish, -relu_exp)
    reluish = (reluish + (1 << 15)) >> 1  # [-1, 1] -> [0, 1]
    preshift = quant.saturating_doubling_high_mul_int16(reluish, preshift_output)
    y = quant.wrap_int(quant.rounding_divide_by_pot(preshift, -out_exp) + zp_out, 16)
    qmin, qmax = quant.QRANGE[np.dtype(dtype)]
    return np.clip(y, qmin, qmax).astype(dtype)


@register("HARD_SWISH")
def hard_swish(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """x * relu6(x + 3) / 6."""
    x = inputs[0]
    dtype = _check(node)
    if dtype == np.float32:
        return x * np.minimum(np.float32(6), np.maximum(np.float32(0), x + np.float32(3))) / np.float32(6)
    return hard_swish_quantized(x, node.memo("hard_swish", lambda: hard_swish_params(node)), dtype)
