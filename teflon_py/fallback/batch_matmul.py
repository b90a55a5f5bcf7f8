"""BATCH_MATMUL: batched matrix products with broadcast batch dimensions, as TFLite computes them.

``adj_x`` / ``adj_y`` transpose the last two axes of the LHS / RHS first; batch dimensions (rank
2 to 5) broadcast as in NumPy (LiteRT requires equal sizes or a 1). Quantized operands (int8, or
int16 with zero points 0) are per tensor: each has its zero point subtracted, products accumulate
exactly (int32 for int8, int64 for int16; here a float64 matmul of small integers, exact below
2^53), and one fixed-point multiplier -- derived from the float32 product of the two input scales,
LiteRT's three-tensor GetQuantizedConvolutionMultipler -- requantizes to the output. There is no
fused activation: the output saturates at its type's range. int32 operands (NNAPI's
TENSOR_INT32 BATCH_MATMUL; TFLite has none) multiply and accumulate in int32, wrapping, as
Android's reference kernel (TFLite's reference BatchMatMul instantiated for int32).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops import matmul as ops_matmul

_QUANTIZED = (np.dtype(np.int8), np.dtype(np.int16))


def _operands(node: Node, lhs: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both operands with their adjoint flags applied, after LiteRT's shape checks."""
    attrs = node.attrs
    reason = ops_matmul.matmul_reason(attrs, lhs.shape, rhs.shape)
    if reason:
        raise node.error(reason)
    if attrs.adj_x:
        lhs = np.swapaxes(lhs, -1, -2)
    if attrs.adj_y:
        rhs = np.swapaxes(rhs, -1, -2)
    return lhs, rhs


def _check_types(node: Node) -> np.dtype:
    """Same type on both sides and the output; quantized ones per tensor (int16: zero points 0)."""
    lt, rt, out = node.inputs[0], node.inputs[1], node.outputs[0]
    dtype = np.dtype(lt.dtype)
    if dtype == np.float32 and rt.dtype == np.int8:
        raise node.error("hybrid float32 x int8 BATCH_MATMUL is not supported")
    if rt.dtype != dtype or out.dtype != dtype:
        raise node.error(f"operand types {lt.dtype}, {rt.dtype} -> {out.dtype} must all match")
    if dtype in (np.float32, np.int32):
        return dtype
    if dtype not in _QUANTIZED:
        raise node.error(f"{dtype} is not supported (float32, int8, int16, int32 are)")
    for t in (lt, rt, out):
        if t.quantization is None or t.quantization.per_channel:
            raise node.error(f"{t.describe()} needs per-tensor quantization parameters")
        if dtype == np.int16 and t.zero_point != 0:
            raise node.error(f"int16 {t.describe()} needs zero point 0")
    return dtype


@register("BATCH_MATMUL")
def batch_matmul(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """``lhs @ rhs`` over broadcast batch dimensions; quantized: exact accumulation, one requantization."""
    dtype = _check_types(node)
    lhs, rhs = _operands(node, inputs[0], inputs[1])
    if dtype == np.float32:
        return np.matmul(lhs, rhs).astype(np.float32, copy=False)
    if dtype == np.int32:  # int64 arithmetic wraps mod 2^64, so its low 32 bits are int32's wrapping sum
        return np.matmul(lhs.astype(np.int64), rhs.astype(np.int64)).astype(np.int32)
    lt, rt, out = node.inputs[0], node.inputs[1], node.outputs[0]
    acc = np.matmul(lhs.astype(np.float64) - lt.zero_point, rhs.astype(np.float64) - rt.zero_point)
    acc = acc.astype(np.int64)
    multiplier, shift = node.memo("multiplier", lambda: quant.batch_matmul_output_multiplier(lt, rt, out))
    lo, hi = quant.QRANGE[dtype]
    if dtype == np.int16:  # int64 accumulator: the reduced 16-bit multiplier of the int64 overload
        y = quant.multiply_by_quantized_multiplier_int64(acc, multiplier, shift)
        return np.clip(y, lo, hi).astype(dtype)
    return quant.requantize(quant.wrap_int(acc), multiplier, shift, out.zero_point, lo, hi, dtype)
