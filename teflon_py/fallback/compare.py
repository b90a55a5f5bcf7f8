"""Comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL) and LOGICAL_AND / OR.

Float, int32, int64 and bool compare directly. Quantized uint8/int8 inputs (and quantized int16 in
EQUAL / NOT_EQUAL) are brought onto one grid first, as ``comparisons.cc`` does: (q - zp) << 8,
times the input's own scale as a fixed-point multiplier, so inputs with different scales and zero
points compare by real value (to that precision). int16 LESS / GREATER and friends compare the
stored integers, ignoring quantization, exactly like LiteRT.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.binary import same_types
from teflon_py.fallback.registry import Node, register
from teflon_py.fallback.unary import BOOL, FLOAT32, INT8, INT16, INT32, INT64, UINT8, is_quantized, qparams

Compare = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: Input types of EQUAL / NOT_EQUAL, and of the ordering comparisons.
EQUALITY_TYPES = (FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL)
ORDER_TYPES = (FLOAT32, INT8, UINT8, INT16, INT32, INT64)

LEFT_SHIFT = 8


def _input_types(node: Node, allowed: Sequence[np.dtype]) -> np.dtype:
    if node.outputs[0].dtype != BOOL:
        raise node.invalid(f"output type {node.outputs[0].dtype} must be bool")
    a, b = node.inputs[0].dtype, node.inputs[1].dtype
    if a != b:
        raise node.invalid(f"input types {a} and {b} must match")
    if a not in allowed:
        raise node.error(f"type {a} is not supported")
    return a


def _rescaled(node: Node, index: int, x: np.ndarray) -> np.ndarray:
    """ComparisonWithScaling's view of input ``index``: ((q - zp) << 8) times its scale, fixed point."""
    def params() -> tuple[int, int, int]:
        scale, zp = qparams(node, node.inputs[index])
        m, e = quant.quantize_multiplier(float(scale))
        return zp, int(m), int(e)

    zp, m, e = node.memo(f"compare{index}", params)
    shifted = (x.astype(np.int64) - zp) << LEFT_SHIFT
    return quant.multiply_by_quantized_multiplier_smaller_than_one_exp(shifted, m, e)


def _compare(node: Node, inputs: Sequence[np.ndarray | None], op: Compare, allowed: Sequence[np.dtype],
             scaled: bool) -> np.ndarray:
    """``op`` on the raw values, or on the rescaled ones for quantized 8-bit (and, when ``scaled``
    is set, quantized int16) inputs."""
    dtype = _input_types(node, allowed)
    a, b = inputs[0], inputs[1]
    quantized = dtype in (INT8, UINT8) or (dtype == INT16 and scaled and is_quantized(node.inputs[0]))
    if quantized:
        a, b = _rescaled(node, 0, a), _rescaled(node, 1, b)
    return np.asarray(op(a, b), np.bool_)


@register("EQUAL")
def equal(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a == b."""
    return _compare(node, inputs, np.equal, EQUALITY_TYPES, scaled=True)


@register("NOT_EQUAL")
def not_equal(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a != b (LiteRT computes int16 only when quantized)."""
    if node.inputs[0].dtype == INT16 and not is_quantized(node.inputs[0]):
        raise node.error("NOT_EQUAL on int16 without quantization is not computed by LiteRT")
    return _compare(node, inputs, np.not_equal, EQUALITY_TYPES, scaled=True)


@register("LESS")
def less(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a < b."""
    return _compare(node, inputs, np.less, ORDER_TYPES, scaled=False)


@register("LESS_EQUAL")
def less_equal(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a <= b."""
    return _compare(node, inputs, np.less_equal, ORDER_TYPES, scaled=False)


@register("GREATER")
def greater(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a > b."""
    return _compare(node, inputs, np.greater, ORDER_TYPES, scaled=False)


@register("GREATER_EQUAL")
def greater_equal(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a >= b."""
    return _compare(node, inputs, np.greater_equal, ORDER_TYPES, scaled=False)


@register("LOGICAL_AND")
def logical_and(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a and b, bool, broadcast."""
    same_types(node, (BOOL,))
    return np.logical_and(inputs[0], inputs[1])


@register("LOGICAL_OR")
def logical_or(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a or b, bool, broadcast."""
    same_types(node, (BOOL,))
    return np.logical_or(inputs[0], inputs[1])
