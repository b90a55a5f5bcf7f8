"""Requantization maths of TFLite's integer kernels: multipliers, rounding, activation ranges.

Mirrors ``kernels/internal/common.h`` and ``quantization_util.cc`` (double rounding, the
reference kernels' default): ``quantize_multiplier`` turns a real scale into an int32 fixed-point
multiplier and a power-of-two shift; ``multiply_by_quantized_multiplier`` applies it exactly as the
integer kernels do. Also how each op family derives its multipliers (``conv_output_multipliers``).
"""
from __future__ import annotations

import numpy as np

from teflon_py import ir

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

#: (min, max) of each quantized storage type.
QRANGE = {
    np.dtype(np.int8): (-128, 127),
    np.dtype(np.uint8): (0, 255),
    np.dtype(np.int16): (-32768, 32767),
    np.dtype(np.int32): (INT32_MIN, INT32_MAX),
}


def round_half_away(x: np.ndarray | float) -> np.ndarray:
    """C's ``std::round`` (TfLiteRound): halves away from zero, unlike ``np.round``."""
    x = np.asarray(x)
    if x.dtype.kind == "f" and x.itemsize < 8:  # |x| + 0.5 must be exact: widen float16/32 first
        return round_half_away(x.astype(np.float64)).astype(x.dtype)
    t = np.trunc(x)  # x - trunc(x) is exact; floor(|x| + 0.5) is not (0.49999999999999994, odd 2^52 + 1)
    with np.errstate(invalid="ignore"):  # inf - inf is NaN: both comparisons False, t (inf) is kept
        frac = x - t
    return t + (frac >= 0.5) - (frac <= -0.5)


def quantize_multiplier(real: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Real multiplier(s) -> (int32 multiplier in [2^30, 2^31), int shift), TFLite's QuantizeMultiplier."""
    real = np.asarray(real, np.float64)
    mantissa, shift = np.frexp(real)
    q = round_half_away(mantissa * float(1 << 31)).astype(np.int64)
    carry = q == (1 << 31)
    q = np.where(carry, q // 2, q)
    shift = np.where(carry, shift + 1, shift).astype(np.int64)
    tiny = shift < -31
    q = np.where(tiny, 0, q)
    shift = np.where(tiny, 0, shift)
    zero = real == 0.0
    q = np.where(zero, 0, q).astype(np.int32)
    shift = np.where(zero, 0, shift).astype(np.int32)
    return q, shift


def saturating_rounding_doubling_high_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int32 values (returned as int64)."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))  # C division truncates
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)


def rounding_divide_by_pot(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: x / 2^exponent rounded half away from zero."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def _wrap_int32(x: np.ndarray) -> np.ndarray:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier for int32 ``x``; broadcasts per-channel pairs."""
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    scaled = _wrap_int32(np.asarray(x, np.int64) << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scaled, multiplier), right)


def multiply_by_quantized_multiplier_int64(x: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """The int64-accumulator variant (16x8 kernels): round(x * m / 2^(31 - shift))."""
    x = np.asarray(x, np.int64)
    multiplier = np.asarray(multiplier, np.int64)
    total_shift = 31 - np.asarray(shift, np.int64)
    # reduced to 16 bits, as TFLite does for int64 inputs; multipliers from 0x7FFF0000 up cap at 0x7FFF
    m = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    total_shift = total_shift - 16
    rounding = np.int64(1) << (total_shift - 1)
    return (x * m + rounding) >> total_shift


def activation_range(activation: ir.Activation | int, dtype: np.dtype, scale: float = 1.0, zero_point: int = 0) -> tuple[float, float] | tuple[int, int]:
    """Clamp bounds of a fused activation: floats for float tensors, ints for quantized ones."""
    act = ir.Activation(int(activation))
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return {
            ir.Activation.NONE: (-np.inf, np.inf),
            ir.Activation.RELU: (0.0, np.inf),
            ir.Activation.RELU6: (0.0, 6.0),
            ir.Activation.RELU_N1_TO_1: (-1.0, 1.0),
        }.get(act, (-np.inf, np.inf))
    qmin, qmax = QRANGE[dtype]

    def q(real: float) -> int:
        return zero_point + int(round_half_away(np.float32(real) / np.float32(scale)))

    if act == ir.Activation.RELU:
        return max(qmin, q(0.0)), qmax
    if act == ir.Activation.RELU6:
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if act == ir.Activation.RELU_N1_TO_1:
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    return qmin, qmax


def quantize(real: np.ndarray, scale: np.ndarray | float, zero_point: np.ndarray | int, dtype: np.dtype) -> np.ndarray:
    """Float -> quantized as TFLite's AffineQuantize: round(x / scale) + zero point, clamped."""
    qmin, qmax = QRANGE[np.dtype(dtype)]
    q = round_half_away(np.asarray(real, np.float32) / np.asarray(scale, np.float32)) + np.asarray(zero_point)
    return np.clip(q, qmin, qmax).astype(dtype)


def dequantize(q: np.ndarray, scale: np.ndarray | float, zero_point: np.ndarray | int) -> np.ndarray:
    """Quantized -> float32: scale * (q - zero point)."""
    return (np.asarray(scale, np.float32) * (np.asarray(q, np.int32) - np.asarray(zero_point, np.int32)).astype(np.float32)).astype(np.float32)

# -- requantization of convolution / matmul accumulators (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED)
#
# LiteRT 2.x's reference kernels requantize these three ops in three different ways (each pinned
# by tests/ops/test_conv.py / test_fully_connected.py probes that separate them):
#   int8 CONV_2D / DEPTHWISE_CONV_2D (per tensor or per channel): fixed-point multiplier from
#       double(in_scale) * double(w_scale) / double(out_scale), gemmlowp double rounding;
#   uint8 CONV_2D / DEPTHWISE_CONV_2D: fixed-point multiplier from the float32 product
#       in_scale * w_scale (GetQuantizedConvolutionMultipler), gemmlowp double rounding;
#   FULLY_CONNECTED (int8 per tensor or per channel, uint8): no fixed point at all -- the reference
#       kernel computes round(double(acc) * (double(in) * double(w) / double(out))) in double.

#: ops whose multipliers ``conv_output_multipliers`` derives, as LiteRT's Prepare does for each
#: (TRANSPOSE_CONV's Prepare calls the same PopulateConvolutionQuantizationParams as CONV_2D).
_CONV_FAMILY = ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV")


def conv_output_multipliers(opcode: str, input: ir.Tensor, weight: ir.Tensor,
                            output: ir.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(int32 multiplier, int32 shift) arrays, one per weight scale, that LiteRT derives for ``opcode``.

    LiteRT has two formulas and picks one per input type; the quantized multipliers differ in
    their low bits: PopulateConvolutionQuantizationParams (int8/int16 inputs, per tensor or per
    channel) computes ``double(in_scale) * double(w_scale) / double(out_scale)``;
    GetQuantizedConvolutionMultipler (uint8 inputs) multiplies the two float32 scales in float32
    first. FULLY_CONNECTED uses no multiplier: see ``fully_connected_output_scales``.
    """
    if opcode not in _CONV_FAMILY:
        raise ValueError(f"conv_output_multipliers: no LiteRT fixed-point rule for {opcode}")
    in_scale = np.float32(input.scale)
    w_scales = np.asarray(weight.quantization.scale, np.float32)
    out_scale = np.float64(np.float32(output.scale))
    if np.dtype(input.dtype) == np.uint8:
        effective = (in_scale * w_scales).astype(np.float64) / out_scale
    else:
        effective = np.float64(in_scale) * w_scales.astype(np.float64) / out_scale
    return quantize_multiplier(effective)


def fully_connected_output_scales(input: ir.Tensor, weight: ir.Tensor, output: ir.Tensor) -> np.ndarray:
    """float64 scale(s), one per weight scale, LiteRT's reference FULLY_CONNECTED multiplies by.

    ``double(in_scale) * double(w_scale) / double(out_scale)``, evaluated left to right as the
    kernel does (reference_ops / reference_integer_ops FullyConnected with float scales).
    """
    w_scales = np.asarray(weight.quantization.scale, np.float32).astype(np.float64)
    return np.float64(np.float32(input.scale)) * w_scales / np.float64(np.float32(output.scale))


def batch_matmul_output_multiplier(lhs: ir.Tensor, rhs: ir.Tensor, output: ir.Tensor) -> tuple[int, int]:
    """(int32 multiplier, shift) of quantized BATCH_MATMUL: LiteRT's three-tensor
    GetQuantizedConvolutionMultipler, ``double(float32(lhs_scale * rhs_scale)) / double(out_scale)``
    (the product rounded to float32 first; pinned by tests/ops/test_batch_matmul.py's probe)."""
    product = np.float64(np.float32(lhs.scale) * np.float32(rhs.scale))
    multiplier, shift = quantize_multiplier(product / np.float64(np.float32(output.scale)))
    return int(multiplier), int(shift)


def requantize_scaled(acc: np.ndarray, scale: np.ndarray | float, zero_point: int, lo: int, hi: int,
                      dtype: np.dtype) -> np.ndarray:
    """int32 accumulators -> ``dtype`` as LiteRT's reference FULLY_CONNECTED: ``round(double(acc) *
    scale)`` (C's round: halves away from zero), + zero point, clamp to [lo, hi]."""
    y = round_half_away(np.asarray(acc, np.int64).astype(np.float64) * np.asarray(scale, np.float64))
    y += zero_point
    np.clip(y, lo, hi, out=y)
    return y.astype(dtype)


# -- the same requantization in integers only (for devices without double precision)
#
# A float64 scale s > 0 is M * 2^-k with a 53-bit integer M. For an int32 accumulator a = |acc|,
# the double product fl(a * s) rounds the exact P = a * M to 53 significant bits (to nearest,
# ties to even) at bit d = bitlen(P) - 53, then C's round takes halves away from zero. While the
# integer bit lies above the first rounding (d < k - 1, true for s <= 2^19: k >= 33, d <= 31),
# the two roundings are one: round(fl(P) / 2^k) = floor((P + 2^(k-1) + 2^(d-1)) / 2^k) (for
# d >= 1; for d <= 0 P is exact and the extra 2^(d-1) changes nothing), because fl(P) + 2^(k-1)
# crosses a multiple of 2^k exactly when P + 2^(k-1) lies within 2^(d-1) below one, ties
# included (the multiple of 2^k is the even neighbour). Bits of P below d - 1 then never matter:
# with a normalised to a_n = a << n in [2^31, 2^32) (n = clz(a)), P_n = a_n * M has d_n - 1 =
# bitlen(P_n) - 54 >= 30, so G = floor(P_n / 2^30) < 2^55 from two 32x32-bit products is all
# that is needed: G = a_n * (M >> 32) * 4 + floor(a_n * (M mod 2^32) / 2^30), and
#     |y| = (G + 2^(sh-1) + t) >> sh,  t = (G >> 54) + 1,  sh = min(k - 30 + n, 63).
# (sh >= 57 gives 0 either way.) Scales from 2^19 up are replaced by 2^19 (every nonzero
# accumulator then lands beyond any 8- or 16-bit output range, as before) and scales below 2^-34
# by 0 (|a * s| <= 2^-3 rounds to 0 either way), which keeps k - 30 in [3, 56].

#: scales from here up requantize like this one: |acc * s| >= 2^19 for every acc != 0
EXACT_SCALE_SATURATES = 2.0 ** 19
#: scales below this requantize every int32 accumulator to 0
EXACT_SCALE_VANISHES = 2.0 ** -34


def exact_scale_parts(scale: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mantissa >> 32, mantissa & 0xFFFFFFFF, k - 30) of each float64 scale = mantissa * 2^-k,
    the integer form ``requantize_scaled_exact`` (and ``quant.cl``'s ``q_requantize_exact16``)
    computes ``round(double(acc) * scale)`` from; int64 arrays, every entry below 2^32."""
    s = np.asarray(scale, np.float64)
    if not np.all(np.isfinite(s) & (s >= 0)):
        raise ValueError("requantization scales must be finite and >= 0")
    s = np.minimum(s, EXACT_SCALE_SATURATES)
    fraction, exponent = np.frexp(s)  # s = fraction * 2^exponent, fraction in [0.5, 1)
    mantissa = np.ldexp(fraction, 53).astype(np.uint64)  # exact: 53 bits
    k = 53 - exponent.astype(np.int64)
    vanishes = s < EXACT_SCALE_VANISHES
    mantissa = np.where(vanishes, np.uint64(0), mantissa)
    k = np.where(vanishes, 34, k)
    return (mantissa >> np.uint64(32)).astype(np.int64), (mantissa & np.uint64(0xFFFFFFFF)).astype(np.int64), k - 30


def requantize_scaled_exact(acc: np.ndarray, mantissa_hi: np.ndarray | int, mantissa_lo: np.ndarray | int,
                            shift: np.ndarray | int, zero_point: int, lo: int, hi: int,
                            dtype: np.dtype) -> np.ndarray:
    """``requantize_scaled`` for int32 accumulators from ``exact_scale_parts`` in integer
    arithmetic only (see the comment above; the NumPy twin of ``quant.cl``'s
    ``q_requantize_exact16``): equal to it for every int32 accumulator while |lo - zero point|
    and |hi - zero point| stay below 2^19."""
    acc = np.asarray(acc, np.int64)
    if acc.size and (acc.min() < INT32_MIN or acc.max() > INT32_MAX):
        raise ValueError("requantize_scaled_exact takes int32 accumulators")
    a = np.abs(acc).astype(np.uint64)  # |INT32_MIN| = 2^31 fits
    _, bits = np.frexp((a | np.uint64(1)).astype(np.float64))  # bit length, exact below 2^53
    n = (32 - bits).astype(np.uint64)  # clz; 31 for a = 0, as the kernel's steps leave it
    a_n = a << n
    mh = np.asarray(mantissa_hi, np.int64).astype(np.uint64)
    ml = np.asarray(mantissa_lo, np.int64).astype(np.uint64)
    g = ((a_n * mh) << np.uint64(2)) + ((a_n * ml) >> np.uint64(30))
    t = (g >> np.uint64(54)) + np.uint64(1)
    sh = np.minimum(np.asarray(shift, np.int64) + n.astype(np.int64), 63).astype(np.uint64)
    y = (g + (np.uint64(1) << (sh - np.uint64(1))) + t) >> sh
    y = np.minimum(y, np.uint64(1 << 24)).astype(np.int64)
    y = np.where(acc < 0, -y, y) + zero_point
    return np.clip(y, lo, hi).astype(dtype)


def float32_output_scales(input: ir.Tensor, weight: ir.Tensor, output: ir.Tensor) -> np.ndarray:
    """float32 scale(s), one per weight scale, of XNNPACK's requantization:
    ``in_scale * w_scale / out_scale`` in float32, left to right."""
    w_scales = np.asarray(weight.quantization.scale, np.float32)
    return (np.float32(input.scale) * w_scales / np.float32(output.scale)).astype(np.float32)


def float32_mean_scale(input_scale: float, output_scale: float, count: int) -> np.float32:
    """XNNPACK's quantized mean (global average pooling) scale: ``in_scale / (out_scale * count)``
    in float32."""
    return np.float32(np.float32(input_scale) / (np.float32(output_scale) * np.float32(count)))


def requantize_float32(acc: np.ndarray, scale: np.ndarray | float, zero_point: int, lo: int, hi: int,
                       dtype: np.dtype) -> np.ndarray:
    """int32 accumulators -> ``dtype`` as XNNPACK's fp32 requantization: ``float32(acc) * scale``,
    clamped to [lo - zero point, hi - zero point], rounded half to even, + zero point."""
    y = np.asarray(acc, np.int64).astype(np.int32).astype(np.float32) * np.asarray(scale, np.float32)
    y = np.clip(y, np.float32(lo - zero_point), np.float32(hi - zero_point))
    return (np.rint(y).astype(np.int64) + zero_point).astype(dtype)


def requantize(acc: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int, zero_point: int,
               lo: int, hi: int, dtype: np.dtype) -> np.ndarray:
    """int32 accumulators -> ``dtype``: MultiplyByQuantizedMultiplier, + zero point, clamp to [lo, hi].

    Same results as ``multiply_by_quantized_multiplier`` (tests hold them equal) in a few in-place
    passes, because the fallback requantizes every conv output: for a multiplier m > 0 (every scale
    here is positive), gemmlowp's SaturatingRoundingDoublingHighMul is ``(x*m + 2^30) >> 31``
    (its negative nudge 1 - 2^30 with truncating division equals flooring with the nudge 2^30), and
    RoundingDivideByPOT(y, r) for r > 0 is ``(y + 2^(r-1) - (y < 0)) >> r``. ``multiplier`` and
    ``shift`` broadcast against ``acc`` (per-channel arrays along the last axis).
    """
    m = np.asarray(multiplier, np.int64)
    shift = np.asarray(shift, np.int64)
    if np.any(m <= 0):  # the identities above need m > 0; keep the literal formula otherwise
        y = multiply_by_quantized_multiplier(acc, m, shift)
    else:
        x = np.asarray(acc, np.int64)
        left = np.maximum(shift, 0)
        right = np.maximum(-shift, 0)
        if np.any(left):
            x = _wrap_int32(x << left)
        y = x * m
        y += np.int64(1 << 30)
        y >>= np.int64(31)
        negative = y >> np.int64(63)  # -1 where y < 0
        negative &= -(right > 0).astype(np.int64)
        y += negative
        y += (np.int64(1) << right) >> np.int64(1)
        y >>= right
    y += np.int64(zero_point)
    np.clip(y, lo, hi, out=y)
    return y.astype(dtype)


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLite's CheckedLog2: (x is a power of two within 1e-3 in log2, rounded log2), in float32."""
    log2 = np.float32(np.log(np.float32(x))) * (np.float32(1) / np.float32(np.log(np.float32(2))))
    rounded = np.float32(round_half_away(log2))
    return bool(abs(log2 - rounded) < np.float32(1e-3)), int(rounded)
