"""RELU and RELU6: a clamp for floats; for quantized types TFLite's ReluX (rescale, then clamp).

The quantized form requantizes ``q - zp_in`` by ``s_in / s_out`` (divided in float, as
``activations.cc`` does) before clamping to the quantized bounds of [0, inf) or [0, 6] on the
output grid; with equal scales the multiplier is exactly 1 and it is a shifted clamp.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register

QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


def _relu_params(node: Node, act_max: float) -> tuple[int, int, int, int, int, int]:
    """(input zp, output zp, multiplier, shift, qmin, qmax) of TFLite's QuantizedReluX."""
    x, y = node.inputs[0], node.outputs[0]
    if x.quantization is None or y.quantization is None:
        raise node.error(f"quantized {x.dtype} tensors need quantization parameters")
    if x.dtype == np.int16 and (x.zero_point or y.zero_point):
        raise node.error("int16 needs zero points 0")
    m, e = quant.quantize_multiplier(float(np.float32(x.scale) / np.float32(y.scale)))
    qmin, qmax = quant.QRANGE[y.dtype]
    scale = np.float32(y.scale)
    lo = max(qmin, y.zero_point + int(quant.round_half_away(np.float32(0.0) / scale)))
    hi = qmax
    if not np.isinf(act_max):
        hi = min(qmax, y.zero_point + int(quant.round_half_away(np.float32(act_max) / scale)))
    return x.zero_point, y.zero_point, int(m), int(e), lo, hi


def relu_x(node: Node, x: np.ndarray, act_max: float) -> np.ndarray:
    """max(0, x), capped at ``act_max``, for float32 and quantized int8/uint8/int16."""
    dtype = node.outputs[0].dtype
    if node.inputs[0].dtype != dtype:
        raise node.invalid(f"input type {node.inputs[0].dtype} differs from output type {dtype}")
    if dtype == np.float32:
        return np.minimum(np.maximum(x, np.float32(0)), np.float32(act_max))
    if dtype not in QUANTIZED:
        raise node.error(f"type {dtype} is not supported")
    zp_in, zp_out, m, e, lo, hi = node.memo("relu", lambda: _relu_params(node, act_max))
    y = quant.multiply_by_quantized_multiplier(x.astype(np.int64) - zp_in, m, e) + zp_out
    return np.clip(y, lo, hi).astype(dtype)


@register("RELU")
def relu(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """max(0, x)."""
    return relu_x(node, inputs[0], np.inf)


@register("RELU6")
def relu6(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """min(max(0, x), 6)."""
    return relu_x(node, inputs[0], 6.0)
