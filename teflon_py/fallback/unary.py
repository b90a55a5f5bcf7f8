"""Unary elementwise ops (plus PRELU and CAST): float32 maths and TFLite's quantized algorithms.

Quantized forms follow LiteRT's reference kernels: EXP, LOG, ELU, GELU and 8-bit TANH read a
lookup table that Prepare fills from float32 maths (``quant.lut_populate_int8`` / ``_int16``);
ABS, LEAKY_RELU, PRELU and RELU_N1_TO_1 / RELU_0_TO_1 requantize with fixed-point multipliers;
int8 RSQRT runs gemmlowp's Newton-Raphson inverse square root; int16 TANH reads TFLite's sigmoid
table; quantized SQRT dequantizes, takes a float square root and truncates. NEG and 8/16-bit
integer ops without quantization work on the raw integers, as TFLite does.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from teflon_py import ir, quant
from teflon_py.errors import TeflonError
from teflon_py.fallback.registry import Node, register

F32 = np.float32
FLOAT32 = np.dtype(np.float32)
INT8, UINT8, INT16 = np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)
INT32, INT64, BOOL = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_)
FLOAT16 = np.dtype(np.float16)

Transform = Callable[[np.ndarray], np.ndarray]


# -- shared checks and float32 maths -----------------------------------------------------------

def same_type(node: Node, allowed: Sequence[np.dtype]) -> np.dtype:
    """The dtype shared by input 0 and output 0, which must be one of ``allowed``."""
    dtype = node.outputs[0].dtype
    if node.inputs[0].dtype != dtype:
        raise node.error(f"input type {node.inputs[0].dtype} differs from output type {dtype}")
    if dtype not in allowed:
        raise node.error(f"type {dtype} is not supported (LiteRT takes {', '.join(str(d) for d in allowed)})")
    return dtype


def qparams(node: Node, t: ir.Tensor) -> tuple[np.float32, int]:
    """(float32 scale, zero point) of a per-tensor quantized tensor."""
    if t.quantization is None:
        raise node.error(f"{t.describe()} of type {t.dtype} has no quantization parameters")
    return F32(t.scale), t.zero_point


def is_quantized(t: ir.Tensor) -> bool:
    """Whether ``t`` carries quantization parameters (TFLite's kTfLiteAffineQuantization)."""
    return t.quantization is not None and t.quantization.scale.size > 0


def clamp(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Saturate int64 values to ``dtype``'s range and store them as ``dtype``."""
    lo, hi = quant.QRANGE[np.dtype(dtype)]
    return np.clip(x, lo, hi).astype(dtype)


def in_float64(fn: Callable[[np.ndarray], np.ndarray]) -> Transform:
    """A float32 -> float32 function evaluated in float64 and rounded once, like a libm ``f`` call."""
    return lambda v: fn(np.asarray(v, np.float64)).astype(np.float32)


def erfc(x: np.ndarray) -> np.ndarray:
    """Complementary error function in float64 (NumPy has none): an everywhere-positive Taylor
    series of erf below 2.5, a continued fraction above; relative error below 2e-12."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = np.minimum(a, 2.5)
    term, total, two_x2 = small.copy(), small.copy(), 2.0 * small * small
    for n in range(1, 90):  # erf(x) = 2/sqrt(pi) e^-x^2 sum 2^n x^(2n+1) / (2n+1)!!
        term = term * two_x2 / (2 * n + 1)
        total = total + term
        if n > 8 and not np.any(term > 1e-17 * total):
            break
    erfc_small = 1.0 - 2.0 / math.sqrt(math.pi) * np.exp(-small * small) * total
    big = np.maximum(a, 2.5)
    k = big.copy()
    for n in range(60, 0, -1):  # erfc(x) = e^-x^2 / sqrt(pi) / (x + (1/2) / (x + 1 / (x + ...)))
        k = big + (n / 2.0) / k
    erfc_big = np.exp(-big * big) / math.sqrt(math.pi) / k
    r = np.where(a < 2.5, erfc_small, erfc_big)
    return np.where(x < 0, 2.0 - r, r)


def gelu_f32(x: np.ndarray, approximate: bool) -> np.ndarray:
    """TFLite's GeluTransform / GeluTransformApproximate, operation by operation in float32."""
    x = np.asarray(x, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        if approximate:
            sqrt_2_over_pi = F32(2.0 / math.sqrt(math.pi) * math.sqrt(0.5))
            inner = sqrt_2_over_pi * (x + F32(0.044715) * x * x * x)
            return F32(0.5) * x * (F32(1) + in_float64(np.tanh)(inner))
        return F32(0.5) * x * in_float64(erfc)(x * F32(-math.sqrt(0.5)))


def lut_op(node: Node, x: np.ndarray, transform: Transform, *, key: str = "lut") -> np.ndarray:
    """A quantized op that TFLite computes through a table built at prepare time from float maths."""
    def build() -> np.ndarray:
        s_in, z_in = qparams(node, node.inputs[0])
        s_out, z_out = qparams(node, node.outputs[0])
        dtype = node.outputs[0].dtype
        if dtype == INT16:
            return quant.lut_populate_int16(transform, s_in, z_in, s_out, z_out)
        return quant.lut_populate_int8(transform, s_in, z_in, s_out, z_out, dtype)

    return quant.lut_lookup(x, node.memo(key, build))


def _symmetric_int16(node: Node, what: str) -> None:
    """LiteRT's elementwise int16 kernels take zero points 0 only."""
    if node.outputs[0].dtype == INT16 and (node.inputs[0].zero_point or node.outputs[0].zero_point):
        raise node.error(f"quantized int16 {what} needs zero points 0")


def _float_op(node: Node, x: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    same_type(node, (FLOAT32,))
    with np.errstate(all="ignore"):
        return fn(x).astype(np.float32)


# -- float32-only maths ---------------------------------------------------------------------------

@register("SIN")
def sin(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """sin(x), float32."""
    return _float_op(node, inputs[0], np.sin)


@register("COS")
def cos(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """cos(x), float32."""
    return _float_op(node, inputs[0], np.cos)


@register("SQUARE")
def square(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """x * x, float32 (LiteRT has no integer SQUARE)."""
    return _float_op(node, inputs[0], np.square)


@register("FLOOR")
def floor(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """floor(x), float32."""
    return _float_op(node, inputs[0], np.floor)


@register("CEIL")
def ceil(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """ceil(x), float32."""
    return _float_op(node, inputs[0], np.ceil)


@register("ROUND")
def round_(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Round half to even (banker's rounding, TFLite's RoundToNearest), float32."""
    return _float_op(node, inputs[0], np.rint)


@register("SIGN")
def sign(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """(x > 0) - (x < 0) for float32 and int32; NaN stays NaN."""
    dtype = same_type(node, (FLOAT32, INT32))
    x = inputs[0]
    result = ((x > 0).astype(dtype) - (x < 0).astype(dtype)).astype(dtype)
    return np.where(np.isnan(x), x, result) if dtype == FLOAT32 else result


# -- ABS, NEG ---------------------------------------------------------------------------------

def _abs_params(node: Node) -> tuple[int, int, int, int, bool]:
    """(input zp, output zp, multiplier, shift, rescale?) of quantized ABS (elementwise.cc)."""
    s_in, z_in = qparams(node, node.inputs[0])
    s_out, z_out = qparams(node, node.outputs[0])
    _symmetric_int16(node, "ABS")
    m, e = quant.quantize_multiplier(float(s_in / s_out))  # divided in float32
    return z_in, z_out, int(m), int(e), bool(s_in != s_out)


@register("ABS")
def abs_(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """|x|: float32, int32, raw int16, and quantized int8/int16 (|q - zp| requantized)."""
    dtype = same_type(node, (FLOAT32, INT32, INT16, INT8))
    x = inputs[0]
    if dtype in (FLOAT32, INT32):
        return np.abs(x)
    if dtype == INT16 and not is_quantized(node.inputs[0]):
        return np.abs(x.astype(np.int32)).astype(np.int16)
    z_in, z_out, m, e, rescale = node.memo("abs", lambda: _abs_params(node))
    value = np.abs(x.astype(np.int64) - z_in)
    if rescale:
        value = quant.multiply_by_quantized_multiplier(value, m, e)
    return clamp(value + z_out, dtype)


@register("NEG")
def neg(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """-x on the stored values (integers wrap; quantization parameters are ignored, as in TFLite)."""
    same_type(node, (FLOAT32, INT8, INT16, INT32, INT64))
    return np.negative(inputs[0])


# -- EXP, LOG, SQRT, RSQRT ---------------------------------------------------------------------------

@register("EXP")
def exp(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """e^x: float32; int8/int16 through TFLite's lookup table."""
    dtype = same_type(node, (FLOAT32, INT8, INT16))
    if dtype == FLOAT32:
        return _float_op(node, inputs[0], np.exp)
    _symmetric_int16(node, "EXP")
    return lut_op(node, inputs[0], in_float64(np.exp))


@register("LOG")
def log(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """ln(x): float32; int8/int16 by table, where x <= 0 maps to the lowest output value."""
    dtype = same_type(node, (FLOAT32, INT8, INT16))
    if dtype == FLOAT32:
        return _float_op(node, inputs[0], np.log)
    _symmetric_int16(node, "LOG")
    s_out, z_out = qparams(node, node.outputs[0])
    output_min = F32(quant.QRANGE[dtype][0] - z_out) * s_out

    def transform(v: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v <= 0, output_min, in_float64(np.log)(v)).astype(np.float32)

    return lut_op(node, inputs[0], transform)


def _dequantized_non_negative(node: Node, x: np.ndarray, what: str) -> np.ndarray:
    s_in, z_in = qparams(node, node.inputs[0])
    real = s_in * (x.astype(np.int64) - z_in).astype(np.float32)
    if np.any(real < 0):
        raise TeflonError(f"{node.op.describe()}: {what} is only defined for non-negative inputs")
    return real


@register("SQRT")
def sqrt(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """sqrt(x): float32; int8/int16 dequantize, take a float32 root, truncate onto the output grid."""
    dtype = same_type(node, (FLOAT32, INT8, INT16))
    if dtype == FLOAT32:
        return _float_op(node, inputs[0], np.sqrt)
    _symmetric_int16(node, "SQRT")
    s_out, z_out = qparams(node, node.outputs[0])
    root = np.sqrt(_dequantized_non_negative(node, inputs[0], "SQRT"))
    return clamp(np.trunc(root / s_out).astype(np.int64) + z_out, dtype)


def _rsqrt_int8_table(node: Node) -> np.ndarray:
    """RSQRT's int8 result for every input value (elementwise.cc's fixed-point inverse sqrt)."""
    s_in, z_in = qparams(node, node.inputs[0])
    s_out, z_out = qparams(node, node.outputs[0])
    m_out, e_out = quant.quantize_multiplier(1.0 / float(np.sqrt(s_in) * s_out))
    value = np.arange(-128, 128, dtype=np.int64) - z_in
    k_shift = 20  # keeps the intermediate an integer
    m, e = quant.get_inv_sqrt_quantized_multiplier_exp(np.maximum(value, 0), -1)
    data = quant.multiply_by_quantized_multiplier(np.ones_like(value), m, e + k_shift)
    out = quant.multiply_by_quantized_multiplier(data, int(m_out), int(e_out) - k_shift) + z_out
    return clamp(np.where(value == 0, 127, out), INT8)


@register("RSQRT")
def rsqrt(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """1 / sqrt(x): float32; int8 in gemmlowp fixed point; int16 by table."""
    dtype = same_type(node, (FLOAT32, INT8, INT16))
    x = inputs[0]
    if dtype == FLOAT32:
        return _float_op(node, x, lambda v: F32(1) / np.sqrt(v))
    _symmetric_int16(node, "RSQRT")
    if np.any(x.astype(np.int64) < node.inputs[0].zero_point):
        raise TeflonError(f"{node.op.describe()}: RSQRT is only defined for positive values")
    if dtype == INT8:
        return node.memo("rsqrt", lambda: _rsqrt_int8_table(node))[x.astype(np.int64) + 128]
    s_out = F32(node.outputs[0].scale)
    at_zero = F32(quant.INT16_MAX) * s_out

    def transform(v: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v <= 0, at_zero, F32(1) / np.sqrt(v)).astype(np.float32)

    return lut_op(node, x, transform)


# -- activations ----------------------------------------------------------------------------------

@register("TANH")
def tanh(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """tanh(x): float32; int8/uint8 by table; int16 (output scale 2^-15) from TFLite's sigmoid table."""
    dtype = same_type(node, (FLOAT32, INT8, UINT8, INT16))
    x = inputs[0]
    if dtype == FLOAT32:
        return _float_op(node, x, np.tanh)
    if dtype != INT16:
        return lut_op(node, x, in_float64(np.tanh))

    def params() -> tuple[int, int]:
        s_in, z_in = qparams(node, node.inputs[0])
        s_out, z_out = qparams(node, node.outputs[0])
        if z_in or z_out:
            raise node.error("int16 TANH needs zero points 0")
        if quant.checked_log2(s_out) != (True, -15):
            raise node.error("int16 TANH needs output scale 2^-15")
        return quant.int16_tanh_params(s_in)

    return quant.tanh_int16(x, *node.memo("tanh16", params))


def _relu_range_params(node: Node, act_min: float, act_max: float) -> tuple[int, int, int, int, int, int]:
    """(input zp, output zp, multiplier, shift, qmin, qmax) of TFLite's QuantizedReluX."""
    s_in, z_in = qparams(node, node.inputs[0])
    s_out, z_out = qparams(node, node.outputs[0])
    m, e = quant.quantize_multiplier(float(s_in / s_out))  # divided in float32, as activations.cc
    qmin, qmax = quant.QRANGE[node.outputs[0].dtype]
    lo = max(qmin, z_out + int(quant.round_half_away(F32(act_min) / s_out)))
    hi = min(qmax, z_out + int(quant.round_half_away(F32(act_max) / s_out)))
    return z_in, z_out, int(m), int(e), lo, hi


def _relu_range(node: Node, x: np.ndarray, act_min: float, act_max: float) -> np.ndarray:
    dtype = same_type(node, (FLOAT32, INT8, UINT8))
    if dtype == FLOAT32:
        return np.minimum(np.maximum(x, F32(act_min)), F32(act_max))
    z_in, z_out, m, e, lo, hi = node.memo("relu", lambda: _relu_range_params(node, act_min, act_max))
    y = quant.multiply_by_quantized_multiplier(x.astype(np.int64) - z_in, m, e) + z_out
    return np.clip(y, lo, hi).astype(dtype)


@register("RELU_N1_TO_1")
def relu_n1_to_1(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """min(max(x, -1), 1): float32, and requantized int8/uint8."""
    return _relu_range(node, inputs[0], -1.0, 1.0)


@register("RELU_0_TO_1")
def relu_0_to_1(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """min(max(x, 0), 1): float32, and requantized int8/uint8."""
    return _relu_range(node, inputs[0], 0.0, 1.0)


def _leaky_relu_params(node: Node) -> tuple[int, int, int, int, int, int]:
    """(input zp, output zp, alpha multiplier, shift, identity multiplier, shift) of LEAKY_RELU."""
    s_in, z_in = qparams(node, node.inputs[0])
    s_out, z_out = qparams(node, node.outputs[0])
    if node.outputs[0].dtype == INT16 and (z_in or z_out):
        raise node.error("int16 LEAKY_RELU needs zero points 0")
    alpha = F32(node.attrs.alpha)
    m_alpha, e_alpha = quant.quantize_multiplier(float(s_in * alpha / s_out))  # float32 maths
    m_id, e_id = quant.quantize_multiplier(float(s_in / s_out))
    return z_in, z_out, int(m_alpha), int(e_alpha), int(m_id), int(e_id)


@register("LEAKY_RELU")
def leaky_relu(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """x > 0 ? x : alpha * x: float32; int8/uint8/int16 with one multiplier per branch."""
    dtype = same_type(node, (FLOAT32, INT8, UINT8, INT16))
    x = inputs[0]
    if dtype == FLOAT32:
        alpha = F32(node.attrs.alpha)
        with np.errstate(invalid="ignore"):
            return np.where(x > 0, x, x * alpha).astype(np.float32)
    z_in, z_out, m_alpha, e_alpha, m_id, e_id = node.memo("leaky", lambda: _leaky_relu_params(node))
    value = x.astype(np.int64) - z_in
    identity = quant.multiply_by_quantized_multiplier(value, m_id, e_id)
    # the reference scales negative values by |multiplier| and negates: it rounds like alpha > 0
    scaled = quant.multiply_by_quantized_multiplier(value, abs(m_alpha), e_alpha)
    negative = -scaled if m_alpha < 0 else scaled
    return clamp(np.where(value >= 0, identity, negative) + z_out, dtype)


@register("ELU")
def elu(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """x < 0 ? e^x - 1 : x: float32; int8 by table."""
    dtype = same_type(node, (FLOAT32, INT8))
    expm1 = in_float64(np.expm1)

    def transform(v: np.ndarray) -> np.ndarray:
        return np.where(v < 0, expm1(np.minimum(v, 0)), v).astype(np.float32)

    if dtype == FLOAT32:
        return transform(inputs[0])
    return lut_op(node, inputs[0], transform)


@register("GELU")
def gelu(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """x * Phi(x) (erfc form) or its tanh approximation: float32; int8/uint8/int16 by table."""
    dtype = same_type(node, (FLOAT32, INT8, UINT8, INT16))
    approximate = node.attrs.approximate
    if dtype == FLOAT32:
        return gelu_f32(inputs[0], approximate)
    return lut_op(node, inputs[0], lambda v: gelu_f32(v, approximate))


def _prelu_params(node: Node) -> tuple[int, int, int, int, int, int, int]:
    """(input zp, alpha zp, output zp, m1, e1, m2, e2): x >= 0 scales by s_in / s_out, x < 0 by
    s_in * s_alpha / s_out (both in float32, as activations.cc)."""
    s_in, z_in = qparams(node, node.inputs[0])
    s_alpha, z_alpha = qparams(node, node.inputs[1])
    s_out, z_out = qparams(node, node.outputs[0])
    m1, e1 = quant.quantize_multiplier(float(s_in / s_out))
    m2, e2 = quant.quantize_multiplier(float(s_in * s_alpha / s_out))
    return z_in, z_alpha, z_out, int(m1), int(e1), int(m2), int(e2)


@register("PRELU")
def prelu(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """x >= 0 ? x : alpha * x, alpha broadcast: float32, int8, uint8, and int16 x with int8 alpha."""
    dtype = same_type(node, (FLOAT32, INT8, UINT8, INT16))
    x, alpha = inputs[0], inputs[1]
    alpha_type = node.inputs[1].dtype
    if dtype == FLOAT32:
        if alpha_type != FLOAT32:
            raise node.error(f"alpha type {alpha_type} differs from input type float32")
        with np.errstate(invalid="ignore"):
            return np.where(x >= 0, x, x * alpha).astype(np.float32)
    if alpha_type != (INT8 if dtype == INT16 else dtype):
        # LiteRT 2.3.0 accepts an int16 alpha but reads its bytes as int8: not reproduced here
        raise node.error(f"alpha type {alpha_type} is not supported with {dtype} input "
                         f"({'int8' if dtype == INT16 else dtype} alpha is)")
    z_in, z_alpha, z_out, m1, e1, m2, e2 = node.memo("prelu", lambda: _prelu_params(node))
    value = x.astype(np.int64) - z_in
    positive = quant.multiply_by_quantized_multiplier(value, m1, e1)
    negative = quant.multiply_by_quantized_multiplier(value * (alpha.astype(np.int64) - z_alpha), m2, e2)
    return clamp(np.where(value >= 0, positive, negative) + z_out, dtype)


# -- logical, CAST, ZEROS_LIKE -------------------------------------------------------------------------

@register("LOGICAL_NOT")
def logical_not(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """not x, bool."""
    same_type(node, (BOOL,))
    return np.logical_not(inputs[0])


#: CAST's types (LiteRT casts between any two of them, ignoring quantization parameters).
CAST_TYPES = (FLOAT32, FLOAT16, INT8, UINT8, INT16, INT32, INT64, BOOL, np.dtype(np.uint16),
              np.dtype(np.uint32), np.dtype(np.float64))


def _saturating_float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """TFLite's SaturatingCastFloatingToInteger from float32 or float64: NaN -> max, clamp, truncate."""
    info = np.iinfo(dtype)
    ftype = x.dtype.type
    v = np.asarray(x, np.float64)
    top = ftype(info.max)  # max in the source float type may round above max: step back one ulp
    if int(top) > info.max:
        top = np.nextafter(top, ftype(0))
    lo, hi = float(ftype(info.min)), float(top)
    nan = np.isnan(v)
    t = np.trunc(np.clip(np.where(nan, 0.0, v), lo, hi)).astype(np.uint64 if dtype == np.uint64 else np.int64)
    return np.where(nan | (v > hi), info.max, t).astype(dtype)


@register("CAST")
def cast(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """static_cast between numeric and bool types: integers wrap, floats saturate (NaN -> max)
    into integers, any non-zero is true, float16 rounds to nearest even via float32."""
    src, dst = node.inputs[0].dtype, node.outputs[0].dtype
    if src not in CAST_TYPES or dst not in CAST_TYPES:
        raise node.error(f"cast from {src} to {dst} is not supported")
    x = inputs[0]
    if dst == BOOL:
        return x != 0
    if src.kind == "f" and dst.kind in "iu":
        return _saturating_float_to_int(x.astype(np.float32) if src == FLOAT16 else x, dst)
    with np.errstate(over="ignore"):
        return x.astype(np.float32).astype(np.float16) if dst == FLOAT16 else x.astype(dst)


@register("ZEROS_LIKE")
def zeros_like(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Zeros of the input's shape and type (float32, int32, int64)."""
    same_type(node, (FLOAT32, INT32, INT64))
    return np.zeros_like(inputs[0])
