"""Quantized operands of the NNAPI-only detection ops, converted as Android's reference CPU
implementation converts them (``convertQuantToFloat32`` / ``convertFloat32ToQuant`` in
CpuOperationUtils.h): ``(float(q) - zero_point) * scale`` in float32, and back
``round(x / scale + zero_point)`` (halves away from zero, in float32) clamped to the storage type.
The second differs from TFLite's QUANTIZE, which rounds before adding the zero point, so these
ops use their own conversions. No kernels here.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.fallback.registry import Node
from teflon_py.quant.core import round_half_away


def is_quantized(t: ir.Tensor) -> bool:
    """An integer tensor with quantization parameters (not an index or count tensor)."""
    return np.dtype(t.dtype).kind in "iu" and t.quantization is not None and t.quantization.scale.size > 0


def to_float(node: Node, k: int, x: np.ndarray) -> np.ndarray:
    """Input ``k`` in float32: dequantized where it is quantized."""
    t = node.inputs[k]
    if not is_quantized(t):
        return np.asarray(x, np.float32)
    scale, zero_point = np.float32(t.scale), np.float32(t.zero_point)
    return (x.astype(np.float32) - zero_point) * scale


def from_float(node: Node, k: int, y: np.ndarray) -> np.ndarray:
    """Float32 values as output ``k`` stores them: requantized where it is quantized."""
    t = node.outputs[k]
    dtype = np.dtype(t.dtype)
    if not is_quantized(t):
        return np.asarray(y).astype(dtype)
    scale, zero_point = np.float32(t.scale), np.float32(t.zero_point)
    info = np.iinfo(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        q = round_half_away(np.asarray(y, np.float32) / scale + zero_point)
    return np.clip(np.nan_to_num(q), info.min, info.max).astype(dtype)
