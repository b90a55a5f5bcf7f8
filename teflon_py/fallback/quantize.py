"""QUANTIZE and DEQUANTIZE: float <-> integer grids, and integer-to-integer requantization.

QUANTIZE from float is TFLite's AffineQuantize (float32 division, halves away from zero); from an
integer type it is ``Requantize``: ``(q - zp_in)`` times the fixed-point form of ``s_in / s_out``
(divided in double here, unlike most ops), plus ``zp_out``, saturated. DEQUANTIZE is
``scale * (q - zp)``; float16 inputs (constant half-precision weights) are widened.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ir, quant
from teflon_py.fallback.registry import Node, register

_INTEGER = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32))


def _channel_params(q: ir.Quantization, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Scales (float32) and zero points shaped to broadcast along the quantized dimension."""
    shape = [1] * ndim
    if q.per_channel:
        shape[q.quantized_dimension] = q.scale.size
    return q.scale.astype(np.float32).reshape(shape), q.zero_point.astype(np.int64).reshape(shape)


def _requantize_params(node: Node) -> tuple[int, int, int, int]:
    """(input zp, output zp, multiplier, shift) of TFLite's Requantize, from s_in / s_out in double."""
    x, y = node.inputs[0], node.outputs[0]
    for t in (x, y):
        if t.quantization is None or t.quantization.per_channel:
            raise node.error(f"{t.describe()} needs per-tensor quantization for requantization")
    m, e = quant.quantize_multiplier(np.float64(np.float32(x.scale)) / np.float64(np.float32(y.scale)))
    return x.zero_point, y.zero_point, int(m), int(e)


def requantize(node: Node, x: np.ndarray) -> np.ndarray:
    """Integer -> integer on a new scale and zero point, saturated to the output type."""
    zp_in, zp_out, m, e = node.memo("requantize", lambda: _requantize_params(node))
    y = quant.multiply_by_quantized_multiplier(x.astype(np.int64) - zp_in, m, e) + zp_out
    lo, hi = quant.QRANGE[node.outputs[0].dtype]
    return np.clip(y, lo, hi).astype(node.outputs[0].dtype)


@register("QUANTIZE")
def quantize(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """float32 -> int8/uint8/int16 (per tensor or per channel), or requantize between integer types."""
    x = inputs[0]
    src, out = node.inputs[0], node.outputs[0]
    if out.dtype not in _INTEGER or out.quantization is None:
        raise node.error(f"output type {out.dtype} must be a quantized integer type")
    if src.dtype == np.float32:
        scale, zero_point = _channel_params(out.quantization, x.ndim)
        return quant.quantize(x, scale, zero_point, out.dtype)
    if src.dtype in _INTEGER:
        return requantize(node, x)
    raise node.error(f"input type {src.dtype} is not supported")


@register("DEQUANTIZE")
def dequantize(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """int8/uint8/int16 -> float32 as scale * (q - zp), per tensor or channel; float16 -> float32."""
    x = inputs[0]
    src, out = node.inputs[0], node.outputs[0]
    if out.dtype != np.float32:
        raise node.error(f"output type {out.dtype} is not supported")
    if src.dtype == np.float16:
        return x.astype(np.float32)
    if src.dtype not in _INTEGER or src.quantization is None:
        raise node.error(f"input type {src.dtype} is not supported")
    scale, zero_point = _channel_params(src.quantization, x.ndim)
    # scale is a double in TFLite; the product of a float32 and a small integer rounds once either way
    return (scale.astype(np.float64) * (x.astype(np.int64) - zero_point)).astype(np.float32)
