"""Binary elementwise ops with NumPy broadcasting: DIV, POW, MAXIMUM/MINIMUM, SQUARED_DIFFERENCE,
FLOOR_DIV, FLOOR_MOD, ATAN2, plus ADD_N, SELECT and SELECT_V2.

TFLite's quirks kept here: float DIV clamps to the fused activation's range even without one, so
x / 0 gives +-FLT_MAX rather than inf; quantized DIV divides by gemmlowp's fixed-point reciprocal,
with its output multiplier derived in float32 and, where its final rounding shift passes 31 bits,
the shift-count wrap of LiteRT's compiled kernel (``quant.rounding_divide_by_pot_int32_x86``);
int8 SQUARED_DIFFERENCE rescales both inputs onto twice the larger input scale (left shift 7)
before squaring; MAXIMUM/MINIMUM, FLOOR_DIV, FLOOR_MOD and SELECT act on the stored integers;
integer POW goes through double ``pow``; FLOOR_DIV divides in double.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.errors import TeflonError
from teflon_py.fallback.registry import Node, register
from teflon_py.fallback.unary import BOOL, FLOAT32, INT8, INT16, INT32, INT64, UINT8, clamp, qparams
from teflon_py.ops.common import FusedActivation
from teflon_py.ops.elementwise import select_layout

F32 = np.float32


def same_types(node: Node, allowed: Sequence[np.dtype], count: int = 2) -> np.dtype:
    """The dtype shared by the first ``count`` inputs and the output; one of ``allowed``."""
    dtype = node.outputs[0].dtype
    types = [t.dtype for t in node.inputs[:count]]
    if any(t != dtype for t in types):
        raise node.invalid(f"input types {', '.join(map(str, types))} and output type {dtype} must match")
    if dtype not in allowed:
        raise node.error(f"type {dtype} is not supported (LiteRT takes {', '.join(str(d) for d in allowed)})")
    return dtype


def _check_nonzero(node: Node, divisor: np.ndarray, zero: int = 0) -> None:
    """LiteRT refuses to run integer (and FLOOR_DIV float) division by zero: so do we."""
    if np.any(divisor == zero):
        raise TeflonError(f"{node.op.describe()}: division by zero")


def _activation(node: Node) -> FusedActivation:
    act = node.attrs.activation
    if not act.is_clamp:
        raise node.error(f"fused activation {act.kind.name} is not supported")
    return act


def clamp_activation(node: Node, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """TFLite's CalculateActivationRange clamp for float / plain-integer outputs: with no activation
    the bounds are the type's lowest and max, so float infinities become +-FLT_MAX (NaN stays)."""
    act = _activation(node)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    lo = info.min if act.lo == -np.inf else act.lo
    hi = info.max if act.hi == np.inf else act.hi
    return np.minimum(np.maximum(x, dtype.type(lo)), dtype.type(hi)).astype(dtype)


# -- DIV ----------------------------------------------------------------------------------------------

def _div_params(node: Node) -> tuple[int, int, int, int, int, int, int]:
    """(input zps, output zp, multiplier, shift, activation bounds) of quantized DIV (div.cc)."""
    s1, z1 = qparams(node, node.inputs[0])
    s2, z2 = qparams(node, node.inputs[1])
    so, zo = qparams(node, node.outputs[0])
    m, e = quant.quantize_multiplier(float(s1 / (s2 * so)))  # float32 maths, then widened
    lo, hi = _activation(node).range(node.outputs[0].dtype, float(so), zo)
    return z1, z2, zo, int(m), int(e), lo, hi


def _div_quantized(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """DivElementwise: numerator over gemmlowp's reciprocal of the denominator, then rescaled."""
    z1, z2, zo, m, e, lo, hi = node.memo("div", lambda: _div_params(node))
    _check_nonzero(node, b, z2)
    num = a.astype(np.int64) - z1
    den = b.astype(np.int64) - z2
    num, den = np.broadcast_arrays(np.where(den < 0, -num, num), np.abs(den))
    reciprocal, recip_shift = quant.get_reciprocal(den, 31)
    headroom = quant.count_leading_sign_bits32(num)
    unscaled = quant.saturating_rounding_doubling_high_mul(quant.wrap_int(num << headroom), reciprocal)
    total_shift = e - recip_shift - headroom
    out = quant.multiply_by_quantized_multiplier_smaller_than_one_exp(unscaled, m, total_shift) + zo
    return np.clip(out, lo, hi).astype(node.outputs[0].dtype)


@register("DIV")
def div(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a / b: float32 (clamped: x/0 -> +-FLT_MAX), int32 (truncating), quantized int8/uint8/int16."""
    dtype = same_types(node, (FLOAT32, INT32, INT8, UINT8, INT16))
    a, b = inputs[0], inputs[1]
    if dtype == FLOAT32:
        with np.errstate(divide="ignore", invalid="ignore"):
            return clamp_activation(node, np.divide(a, b), dtype)
    if dtype == INT32:
        _check_nonzero(node, b)
        q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64)) * np.sign(a) * np.sign(b)  # C truncation
        return clamp_activation(node, quant.wrap_int(q), dtype)
    return _div_quantized(node, a, b)


# -- POW, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, ATAN2 ----------------------------------------------

@register("POW")
def pow_(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a ** b: float32 (powf); int32 through double pow (b >= 0), out-of-range results -> INT32_MIN."""
    dtype = same_types(node, (FLOAT32, INT32))
    a, b = inputs[0], inputs[1]
    if dtype == FLOAT32:
        with np.errstate(all="ignore"):
            return np.power(a, b).astype(np.float32)
    if np.any(b < 0):
        raise TeflonError(f"{node.op.describe()}: POW does not support negative exponents for int32")
    with np.errstate(all="ignore"):
        r = np.power(a.astype(np.float64), b.astype(np.float64))
    inside = np.abs(r) < 2.0**31  # x86's conversion of an out-of-range double gives INT32_MIN
    return np.where(inside, np.trunc(np.where(inside, r, 0)), quant.INT32_MIN).astype(np.int32)


#: Types of MAXIMUM / MINIMUM (quantized ones compare the stored values, as TFLite does).
MAX_MIN_TYPES = (FLOAT32, INT8, UINT8, INT16, INT32, INT64)


@register("MAXIMUM")
def maximum(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a > b ? a : b (a NaN in b wins, one in a does not, as in the C expression)."""
    same_types(node, MAX_MIN_TYPES)
    a, b = inputs[0], inputs[1]
    return np.where(a > b, a, b)


@register("MINIMUM")
def minimum(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a < b ? a : b."""
    same_types(node, MAX_MIN_TYPES)
    a, b = inputs[0], inputs[1]
    return np.where(a < b, a, b)


#: int8 SQUARED_DIFFERENCE's left shift of each offset input before rescaling
SQDIFF_LEFT_SHIFT = 7


def squared_difference_params(node: Node) -> tuple[int, ...]:
    """(zero points z1, z2, zo, input multipliers and shifts m1, e1, m2, e2, output multiplier and
    shift mo, eo) of int8 SQUARED_DIFFERENCE, as squared_difference.cc prepares them."""
    s1, z1 = qparams(node, node.inputs[0])
    s2, z2 = qparams(node, node.inputs[1])
    so, zo = qparams(node, node.outputs[0])
    twice_max = float(F32(2) * max(s1, s2))  # a float32 product, then double
    m1, e1 = quant.quantize_multiplier(float(s1) / twice_max)
    m2, e2 = quant.quantize_multiplier(float(s2) / twice_max)
    mo, eo = quant.quantize_multiplier(twice_max * twice_max / float(F32(1 << (2 * SQDIFF_LEFT_SHIFT)) * so))
    return z1, z2, zo, int(m1), int(e1), int(m2), int(e2), int(mo), int(eo)


def squared_difference_input(q: np.ndarray, zero_point: int, multiplier: int, shift: int) -> np.ndarray:
    """One int8 SQUARED_DIFFERENCE input on the common grid: (q - zero point) << 7 times its
    multiplier (below 1). A function of each input value alone (the OpenCL kernel's tables)."""
    smaller = quant.multiply_by_quantized_multiplier_smaller_than_one_exp
    return smaller((np.asarray(q).astype(np.int64) - zero_point) << SQDIFF_LEFT_SHIFT, multiplier, shift)


@register("SQUARED_DIFFERENCE")
def squared_difference(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """(a - b)^2: float32, int32 (wrapping), quantized int8."""
    dtype = same_types(node, (FLOAT32, INT32, INT8))
    a, b = inputs[0], inputs[1]
    if dtype == FLOAT32:
        d = np.subtract(a, b)
        return (d * d).astype(np.float32)
    if dtype == INT32:
        d = quant.wrap_int(a.astype(np.int64) - b.astype(np.int64))
        return quant.wrap_int(d * d).astype(np.int32)
    z1, z2, zo, m1, e1, m2, e2, mo, eo = node.memo("sqdiff", lambda: squared_difference_params(node))
    diff = squared_difference_input(a, z1, m1, e1) - squared_difference_input(b, z2, m2, e2)
    smaller = quant.multiply_by_quantized_multiplier_smaller_than_one_exp
    return clamp(smaller(diff * diff, mo, eo) + zo, INT8)


@register("ATAN2")
def atan2(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """atan2(y, x), float32; y and x of one shape (LiteRT's ATAN2 does not broadcast)."""
    same_types(node, (FLOAT32,))
    if inputs[0].shape != inputs[1].shape:
        raise node.error(f"input shapes {inputs[0].shape} and {inputs[1].shape} differ (ATAN2 does not broadcast)")
    return np.arctan2(inputs[0], inputs[1]).astype(np.float32)


# -- FLOOR_DIV, FLOOR_MOD -------------------------------------------------------------------------

@register("FLOOR_DIV")
def floor_div(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """floor(a / b) with the division in double (float32, int8, int16, int32); b = 0 is an error."""
    dtype = same_types(node, (FLOAT32, INT8, INT16, INT32))
    a, b = inputs[0], inputs[1]
    _check_nonzero(node, b)
    q = np.floor(a.astype(np.float64) / b.astype(np.float64))
    return q.astype(dtype)


@register("FLOOR_MOD")
def floor_mod(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """a mod b with the sign of b: C's truncated remainder, plus b when the signs differ."""
    dtype = same_types(node, (FLOAT32, INT8, INT16, INT32, INT64))
    a, b = inputs[0], inputs[1]
    if dtype != FLOAT32:
        _check_nonzero(node, b)
    with np.errstate(invalid="ignore"):
        r = np.fmod(a, b)
    return np.where((r != 0) & ((b < 0) != (r < 0)), r + b, r).astype(dtype)


# -- ADD_N, SELECT ------------------------------------------------------------------------------------

@register("ADD_N")
def add_n(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """The sum of all inputs, accumulated left to right (float32; int32 wraps)."""
    dtype = same_types(node, (FLOAT32, INT32), count=len(node.inputs))
    total = inputs[0].astype(np.int64 if dtype == INT32 else dtype)
    for x in inputs[1:]:
        total = total + x
    return (quant.wrap_int(total) if dtype == INT32 else total).astype(dtype)


#: Types SELECT copies (bit copies: quantization parameters are not looked at).
SELECT_TYPES = (FLOAT32, INT8, UINT8, INT16, INT32, INT64, BOOL)


def _select(node: Node, inputs: Sequence[np.ndarray | None], v2: bool) -> np.ndarray:
    if node.inputs[0].dtype != BOOL:
        raise node.invalid(f"condition type {node.inputs[0].dtype} must be bool")
    if node.inputs[1].dtype != node.inputs[2].dtype or node.inputs[1].dtype != node.outputs[0].dtype:
        raise node.invalid("x, y and output types must match")
    if node.outputs[0].dtype not in SELECT_TYPES:
        raise node.error(f"type {node.outputs[0].dtype} is not supported")
    cond, x, y = inputs[0], inputs[1], inputs[2]
    out_shape = node.outputs[0].shape
    if cond.size == 1 and x.size == 1 and y.size == 1 and int(np.prod(out_shape)) == 1:
        return np.where(cond, x, y).reshape(out_shape)  # TFLite keeps the declared scalar-like shape
    if v2:
        return np.where(cond, x, y)
    layout = select_layout("SELECT", cond.shape, x.shape, y.shape, None)  # rank-1 cond selects whole rows
    if isinstance(layout, str):
        raise node.error(layout)
    return np.where(cond.reshape(layout[0][0]), x, y)


@register("SELECT")
def select(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """cond ? x : y, cond the same shape as x, a scalar, or one flag per row (axis 0)."""
    return _select(node, inputs, v2=False)


@register("SELECT_V2")
def select_v2(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """cond ? x : y with all three broadcast together (stored values copied, no requantization)."""
    return _select(node, inputs, v2=True)

