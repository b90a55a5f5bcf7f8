"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION over the last axis, as LiteRT's reference kernels.

L2_NORMALIZATION (rank <= 4, no fused activation): float ``x / max(sqrt(sum x*x), 1e-6)`` with the
squares summed in order in float32. Quantized, the output grid is fixed at 1/128 (zero point 128
for uint8, 0 for int8); the int32 sum of squared differences to the zero point goes through
gemmlowp's Newton-Raphson inverse square root (GetInvSqrtQuantizedMultiplierExp), then uint8
rescales ``128 * diff`` (reference_ops) and int8 rescales ``diff`` with 7 more bits of shift
(reference_integer_ops), which round differently.

LOCAL_RESPONSE_NORMALIZATION (4-D float32): ``x * (bias + alpha * sum)^-beta`` where the sum of
squares runs over channels ``[c - radius, c + radius)``: TFLite's loop stops one short of
``c + radius``. With ``inclusive`` (NNAPI's formula) the window is ``[c - radius, c + radius]``,
summed in the same order.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from teflon_py import quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.normalization import L2_OUT_ZERO_POINT, l2_norm_reason, lrn_reason

L2_EPSILON = np.float32(1e-6)
L2_OUTPUT_SCALE_BITS = 7


def l2_normalization_float(x: np.ndarray) -> np.ndarray:
    """reference_ops::L2Normalization for float32."""
    squares = np.cumsum(x * x, axis=-1, dtype=np.float32)[..., -1:]  # sequential float32 sum
    return x / np.maximum(np.sqrt(squares), L2_EPSILON)


def l2_normalization_quantized(x: np.ndarray, zero_point: int, dtype: np.dtype) -> np.ndarray:
    """The 8-bit reference kernels: per row, an inverse-sqrt multiplier applied to each difference."""
    diff = x.astype(np.int64) - zero_point
    squares = quant.wrap_int((diff * diff).sum(axis=-1, keepdims=True))
    multiplier, shift = quant.get_inv_sqrt_quantized_multiplier_exp(squares, -1)  # shift <= 0
    if dtype == np.uint8:
        rescaled = quant.multiply_by_quantized_multiplier_smaller_than_one_exp(128 * diff, multiplier, shift)
    else:
        rescaled = quant.multiply_by_quantized_multiplier(diff, multiplier, shift + L2_OUTPUT_SCALE_BITS)
    qmin, qmax = quant.QRANGE[dtype]
    return np.clip(rescaled + L2_OUT_ZERO_POINT[dtype], qmin, qmax).astype(dtype)


@register("L2_NORMALIZATION")
def l2_normalization(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Each row over the last axis divided by its L2 norm."""
    x = inputs[0]
    xt, yt = node.inputs[0], node.outputs[0]
    dtype = np.dtype(yt.dtype)
    reason = l2_norm_reason(node.attrs, xt, yt)
    if reason:
        raise node.error(reason)
    if dtype == np.float32:
        return l2_normalization_float(x)
    return l2_normalization_quantized(x, xt.zero_point, dtype)


def window_sums_of_squares(x: np.ndarray, radius: int, inclusive: bool = False) -> np.ndarray:
    """For each channel c, the float32 sum of x^2 over channels [c - radius, c + radius), or
    [c - radius, c + radius] when ``inclusive``, in order.

    Zero padding at both ends keeps the sequence of float32 adds exact (adding 0 is exact)."""
    width = 2 * radius + int(inclusive)
    if width <= 0:  # the channel loop is empty
        return np.zeros_like(x)
    squares = x * x
    pad = [(0, 0)] * (x.ndim - 1) + [(radius, radius)]
    windows = sliding_window_view(np.pad(squares, pad), width, axis=-1)[..., : x.shape[-1], :]
    return np.add.accumulate(windows, axis=-1, dtype=np.float32)[..., -1]


@register("LOCAL_RESPONSE_NORMALIZATION")
def local_response_normalization(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """x * (bias + alpha * sum of neighbouring squares)^-beta across channels."""
    x = inputs[0]
    reason = lrn_reason(node.inputs[0], node.outputs[0])
    if reason:
        raise node.error(reason)
    o = node.attrs
    accum = window_sums_of_squares(x, int(o.radius), bool(o.inclusive))
    base = np.float32(o.bias) + np.float32(o.alpha) * accum
    with np.errstate(divide="ignore", invalid="ignore"):  # powf's own infinities and NaNs
        multiplier = np.power(base.astype(np.float64), -float(np.float32(o.beta))).astype(np.float32)
    return x * multiplier
