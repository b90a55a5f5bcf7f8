"""TFLite's quantization arithmetic, vectorised: the one home of these formulas.

Mirrors ``tensorflow/lite/kernels/internal/common.h`` and ``quantization_util.cc`` (double
rounding, the reference kernels' default): ``quantize_multiplier`` turns a real scale into an
int32 fixed-point multiplier and a power-of-two shift; ``multiply_by_quantized_multiplier``
applies it exactly as the integer kernels do. The fallback calls these on NumPy arrays; the
OpenCL lowering passes the same integers to ``cl_kernels/quant.cl``.
"""
from __future__ import annotations

from collections.abc import Callable

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


# -- gemmlowp fixed-point maths (fixedpoint.h) and the prepare-time helpers of the 8-bit softmax,
# logistic and hard-swish kernels. Raw values travel as int64 arrays holding int32 (or int16)
# values; "Qm" below means gemmlowp's FixedPoint<int32, m> (m integer bits, 31 - m fractional).

INT16_MIN = -(1 << 15)
INT16_MAX = (1 << 15) - 1


def wrap_int(x: np.ndarray, bits: int = 32) -> np.ndarray:
    """Two's-complement wrap of int64 values to ``bits`` bits (C's unchecked int32/int16 arithmetic)."""
    half = 1 << (bits - 1)
    return ((np.asarray(x, np.int64) + half) & ((1 << bits) - 1)) - half


def saturating_rounding_doubling_high_mul_int16(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int16 values: round(a * b / 2^15), saturating."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    high = np.where(nudged >= 0, nudged >> 15, -((-nudged) >> 15))  # C division truncates
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, wrap_int(high, 16))


def saturating_doubling_high_mul_int16(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """TFLite's SaturatingDoublingHighMul (SQDMULH): a * b / 2^15 truncated toward zero, saturating."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    high = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, wrap_int(high, 16))


def saturating_left_shift_int16(x: np.ndarray, amount: int) -> np.ndarray:
    """TFLite's SaturatingLeftShift for int16 (hard_swish.h): x * 2^amount clamped to int16."""
    return np.clip(np.asarray(x, np.int64) << amount, INT16_MIN, INT16_MAX)


def saturating_rounding_multiply_by_pot(x: np.ndarray, exponent: int, bits: int = 32) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT: saturating left shift, or rounding right shift."""
    x = np.asarray(x, np.int64)
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    if exponent == 0:
        return x
    threshold = (1 << (bits - 1 - exponent)) - 1
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.where(x > threshold, hi, np.where(x < -threshold, lo, x << exponent))


def rescale(x: np.ndarray, src_integer_bits: int, dst_integer_bits: int) -> np.ndarray:
    """gemmlowp's Rescale<dst>(FixedPoint<int32, src>): change the number of integer bits."""
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


def rounding_half_sum(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """gemmlowp's RoundingHalfSum for int32: (a + b) / 2 rounded half away from zero."""
    s = np.asarray(a, np.int64) + np.asarray(b, np.int64)
    s = s + np.where(s >= 0, 1, -1)
    return np.where(s >= 0, s >> 1, -((-s) >> 1))


def count_leading_zeros32(x: np.ndarray) -> np.ndarray:
    """CountLeadingZeros of ``x`` read as uint32 (32 for zero)."""
    u = np.asarray(x, np.int64) & 0xFFFFFFFF
    _, exponent = np.frexp(u.astype(np.float64))  # exact: u < 2^32 fits a double's mantissa
    return np.where(u == 0, 32, 32 - exponent).astype(np.int64)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """exp(a) for Q0 ``a`` in [-1/4, 0): gemmlowp's Taylor expansion around -1/8."""
    srdhm = saturating_rounding_doubling_high_mul
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = wrap_int(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(wrap_int(srdhm(wrap_int(x4_over_4 + x3), constant_1_over_3) + x2), 1)
    return wrap_int(constant_term + srdhm(constant_term, wrap_int(x + poly)))


#: gemmlowp's barrel shifter of exp_on_negative_values: (power of two, Q0 exp(-2^power)).
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp's exp_on_negative_values: Q``integer_bits`` a <= 0 -> Q0 exp(a)."""
    a = np.asarray(a, np.int64)
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_one_quarter = wrap_int((a & (one_quarter - 1)) - one_quarter)
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
    remainder = wrap_int(a_mod_quarter_minus_one_quarter - a)
    for power, multiplier in _EXP_BARREL:
        if integer_bits > power:
            bit = remainder & (1 << (fractional_bits + power))
            result = np.where(bit != 0, saturating_rounding_doubling_high_mul(result, multiplier), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp's one_over_one_plus_x_for_x_in_0_1: Q0 a -> Q0 1/(1+a), three Newton-Raphson steps."""
    srdhm = saturating_rounding_doubling_high_mul
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = wrap_int(1515870810 + srdhm(half_denominator, -1010580540))  # Q2: 48/17 - 32/17 * d
    for _ in range(3):
        one_minus_half_denominator_times_x = wrap_int((1 << 29) - srdhm(half_denominator, x))
        x = wrap_int(x + rescale(srdhm(x, one_minus_half_denominator_times_x), 4, 2))
    return rescale(x, 1, 0)  # ExactMulByPot<-1> then Rescale<0>


def get_reciprocal(x: np.ndarray, x_integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetReciprocal: Q``x_integer_digits`` x > 0 -> (Q0 scale, num_bits_over_unit)."""
    x = np.asarray(x, np.int64)
    headroom_plus_one = count_leading_zeros32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_sum_minus_one = wrap_int(((x & 0xFFFFFFFF) << headroom_plus_one) - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


def multiply_by_quantized_multiplier_greater_than_one(x: np.ndarray, multiplier: int, left_shift: int) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplierGreaterThanOne (double rounding): srdhm(x * 2^shift, m)."""
    return saturating_rounding_doubling_high_mul(wrap_int(np.asarray(x, np.int64) << left_shift), multiplier)


def preprocess_softmax_scaling(beta: float, input_scale: float, input_integer_bits: int) -> tuple[int, int]:
    """TFLite's PreprocessSoftmaxScaling: beta * scale in Q``input_integer_bits`` -> (multiplier, left shift)."""
    real = min(float(beta) * float(input_scale) * float(1 << (31 - input_integer_bits)), float((1 << 31) - 1))
    if not real > 1.0:
        raise ValueError(f"softmax input multiplier {real} must be > 1 (beta * input scale too small)")
    multiplier, shift = quantize_multiplier(real)
    return int(multiplier), int(shift)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLite's CalculateInputRadius: the largest input difference that still matters, floored."""
    radius = (1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits))
              / float(1 << input_left_shift))
    return int(np.floor(radius))


def preprocess_log_softmax_scaling_exp(beta: float, input_scale: float,
                                       input_integer_bits: int) -> tuple[int, int, int, int]:
    """TFLite's PreprocessLogSoftmaxScalingExp: PreprocessSoftmaxScaling's (multiplier, left shift),
    then the inverse scaling 2^(31 - left shift) / multiplier as (multiplier, shift <= 0)."""
    multiplier, left_shift = preprocess_softmax_scaling(beta, input_scale, input_integer_bits)
    if left_shift < 1:  # 1 << 31 overflows C's int in the reverse scaling
        raise ValueError(f"log-softmax input left shift {left_shift} must be >= 1 (input scale too small)")
    reverse_multiplier, reverse_shift = quantize_multiplier(float(1 << (31 - left_shift)) / float(multiplier))
    if reverse_shift > 0:  # QuantizeMultiplierSmallerThanOneExp's TFLITE_CHECK_LE(shift, 0)
        raise ValueError("log-softmax reverse scaling must be below one")
    return multiplier, left_shift, int(reverse_multiplier), int(reverse_shift)


def saturating_rounding_multiply_by_pot_param(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """TFLite's SaturatingRoundingMultiplyByPOTParam on int32 for run-time exponents >= 0 (per element):
    x * 2^exponent, saturated to int32."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    threshold = (np.int64(1) << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, wrap_int(x << exponent)))


def log_x_for_x_greater_than_or_equal_to_1(x: np.ndarray, input_integer_bits: int,
                                           output_integer_bits: int) -> np.ndarray:
    """TFLite's log_x_for_x_greater_than_or_equal_to_1_impl: Q``input_integer_bits`` x >= 1 ->
    Q``output_integer_bits`` log(x), from the exponent (in quarter steps) plus a rational fit."""
    srdhm = saturating_rounding_doubling_high_mul
    srmbp = saturating_rounding_multiply_by_pot_param
    accum_bits = output_integer_bits + 1
    log_2, sqrt_sqrt_half, sqrt_half = 1488522236, 1805811301, 1518500250
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = int(rescale(np.int64(536870912), 0, accum_bits))  # 1/4 in Q(accum_bits)
    z_a = np.asarray(x, np.int64)
    z_a_headroom_plus_1 = count_leading_zeros32(z_a)
    r_a_raw = srmbp(srdhm(srmbp(z_a, z_a_headroom_plus_1 - 1), sqrt_half), 1)
    z_a_pow_2_adj = np.clip(srmbp(input_integer_bits - z_a_headroom_plus_1, 31 - accum_bits) + shifted_quarter,
                            INT32_MIN, INT32_MAX)  # SaturatingAddNonGemmlowp
    z_b_headroom = count_leading_zeros32(srdhm(z_a, sqrt_half)) - 1
    r_b_raw = srmbp(z_a, z_b_headroom)
    z_b_pow_2_adj = np.clip(srmbp(input_integer_bits - z_b_headroom, 31 - accum_bits) - shifted_quarter,
                            INT32_MIN, INT32_MAX)  # SaturatingSub
    r = np.minimum(r_a_raw, r_b_raw)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)
    p = rounding_half_sum(r, sqrt_sqrt_half)
    q = wrap_int(2 * wrap_int(r - sqrt_sqrt_half))
    common_sq = srdhm(q, q)
    num = wrap_int(srdhm(q, r) + srdhm(srdhm(q, common_sq), alpha_n))
    denom_minus_one_0 = wrap_int(srdhm(p, wrap_int(alpha_i + q + srdhm(alpha_d, common_sq))) + srdhm(alpha_f, q))
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0)
    num_scaled = rescale(num, 0, accum_bits)
    total = wrap_int(srdhm(z_pow_2_adj, log_2) + srdhm(num_scaled, recip_denom))
    return rescale(total, accum_bits, output_integer_bits)


def downscale_int32_to_int16_multiplier(multiplier: int) -> int:
    """TFLite's DownScaleInt32ToInt16Multiplier: the top 16 bits of an int32 multiplier, rounded."""
    if multiplier >= INT32_MAX - (1 << 15):
        return INT16_MAX
    return (int(multiplier) + (1 << 15)) >> 16


def lut_populate_int8(transform: Callable[[np.ndarray], np.ndarray], input_scale: float, input_zero_point: int, output_scale: float,
                      output_zero_point: int, dtype: np.dtype) -> np.ndarray:
    """TFLite's LUTPopulate for (u)int8, in float32: table[q - qmin] = quantize(transform(dequantize(q))).

    ``transform`` maps a float32 array to a float32 array, as the kernel's C++ lambda does.
    """
    qmin, qmax = QRANGE[np.dtype(dtype)]
    values = np.arange(qmin, qmax + 1, dtype=np.int64)
    dequantized = np.float32(input_scale) * (values - int(input_zero_point)).astype(np.float32)
    inverse_scale = np.float32(1) / np.float32(output_scale)
    transformed = np.asarray(transform(dequantized), np.float32)
    rescaled = round_half_away(transformed * inverse_scale)
    with np.errstate(invalid="ignore"):  # clamp before the cast: LiteRT saturates huge or infinite values
        quantized = np.clip(rescaled + np.float32(output_zero_point), qmin, qmax).astype(np.int64)
    return np.clip(quantized, qmin, qmax).astype(dtype)


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


# -- elementwise helpers (unary / binary / comparison kernels): int16 lookup tables, gemmlowp's
# inverse square root, TFLite's int16 tanh. Same raw-int64 conventions as above.

def count_leading_sign_bits32(x: np.ndarray) -> np.ndarray:
    """TFLite's CountLeadingSignBits for int32 (GCC's __builtin_clrsb; 31 for zero)."""
    x = np.asarray(x, np.int64)
    return count_leading_zeros32(np.where(x < 0, ~x, x)) - 1


def rounding_divide_by_pot_int32_x86(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT on int32 as LiteRT's x86 build computes it for any exponent in
    [0, 63]: below 32 the exact rounding shift; from 32 on (undefined in C, reached by quantized DIV
    with small numerators over large denominators) the int32 mask is all ones and the shift count
    wraps modulo 32, which is what the compiled kernel does."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = wrap_int((np.int64(1) << exponent) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (exponent & 31)) + ((x & mask) > threshold)


def multiply_by_quantized_multiplier_smaller_than_one_exp(x: np.ndarray, multiplier: np.ndarray | int,
                                                          left_shift: np.ndarray | int) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp (double rounding), ``left_shift`` <= 0
    (down to -63, see ``rounding_divide_by_pot_int32_x86``)."""
    return rounding_divide_by_pot_int32_x86(saturating_rounding_doubling_high_mul(x, multiplier),
                                            -np.asarray(left_shift))


def get_inv_sqrt_quantized_multiplier_exp(x: np.ndarray, reverse_shift: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp: int32 x >= 0 -> (multiplier, shift) of 1/sqrt(x).

    Five Newton-Raphson steps in gemmlowp Q3 arithmetic, as quantization_util; inputs <= 1 give
    (INT32_MAX, 0).
    """
    srdhm = saturating_rounding_doubling_high_mul
    x = np.asarray(x, np.int64)
    small = x <= 1
    shift = np.full(x.shape, 11, np.int64)
    while np.any(x >= (1 << 29)):  # at most 1 + 2 rounds for int32 inputs
        big = x >= (1 << 29)
        x = np.where(big, x // 4, x)
        shift = shift + big
    pairs = (count_leading_zeros32(np.maximum(x, 1)) - 1) // 2 - 1
    shift = shift - pairs
    x = x << (2 * np.maximum(pairs, 0))
    half_input = rounding_divide_by_pot(x >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    y = np.full(x.shape, 1 << 28, np.int64)  # Q3 one
    for _ in range(5):
        y3 = saturating_rounding_multiply_by_pot(srdhm(srdhm(y, y), y), 6)
        y = saturating_rounding_multiply_by_pot(wrap_int(srdhm(half_three, y) - srdhm(half_input, y3)), 3)
    y = srdhm(y, 1518500250)  # times sqrt(2) / 2
    y = np.where(shift < 0, wrap_int(y << np.maximum(-shift, 0)), y)
    shift = np.maximum(shift, 0) * reverse_shift
    return np.where(small, INT32_MAX, y), np.where(small, 0, shift)


def lut_populate_int16(transform, input_scale: float, input_zero_point: int, output_scale: float,
                       output_zero_point: int) -> np.ndarray:
    """TFLite's LUTPopulate<int16_t> in float32: 513 samples over the input range, each biased by
    half the interpolation error at its interval's midpoint; ``lut_lookup`` interpolates them."""
    f32 = np.float32
    input_min = f32(input_scale) * f32(INT16_MIN - int(input_zero_point))
    input_max = f32(input_scale) * f32(INT16_MAX - int(input_zero_point))
    output_min = f32(output_scale) * f32(INT16_MIN - int(output_zero_point))
    output_max = f32(output_scale) * f32(INT16_MAX - int(output_zero_point))
    step = (input_max - input_min) / f32(512)
    half_step = step / f32(2)
    scaling_inv = f32(65536) / (output_max - output_min)
    i = np.arange(512, dtype=np.float32)

    def f(v: np.ndarray) -> np.ndarray:
        return np.asarray(transform(np.asarray(v, np.float32)), np.float32)

    with np.errstate(over="ignore", invalid="ignore"):
        start = input_min + i * step
        val = f(start)
        val_mid = f(start + half_step)
        val_next = f(input_min + (i + f32(1)) * step)
        sample = round_half_away(val * scaling_inv)
        mid_interp = round_half_away((val_next * scaling_inv + round_half_away(val * scaling_inv)) / f32(2))
        mid_err = mid_interp - round_half_away(val_mid * scaling_inv)
        bias = round_half_away(mid_err / f32(2))
        last = round_half_away(f(np.array([input_max], np.float32)) * scaling_inv)
    table = np.concatenate([sample - bias, last])
    return np.clip(table, INT16_MIN, INT16_MAX).astype(np.int16)


def lut_lookup(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLite's LUTLookup: a 256-entry (u)int8 table indexed by q - qmin (``lut_populate_int8``), or
    a 513-entry int16 table read at the top 9 bits and interpolated linearly over the low 7."""
    x = np.asarray(x)
    if lut.size != 513:
        return lut[x.astype(np.int64) - QRANGE[np.dtype(lut.dtype)][0]]
    v = x.astype(np.int64)
    index = 256 + (v >> 7)
    table = lut.astype(np.int64)
    base = table[index]
    slope = wrap_int(table[index + 1] - base, 16)
    return wrap_int(base + ((slope * (v & 0x7F) + 64) >> 7), 16).astype(np.int16)


#: TFLite's sigmoid_table_uint16 (common.h): sigmoid(i / 24) in Q0.16, the table of its int16
#: LOGISTIC and TANH kernels; kept verbatim because their results depend on every entry.
SIGMOID_TABLE_UINT16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
    42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
    49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
    55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
    59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
    62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
    64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
    65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
    65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
    65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
    65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535], np.int64)


def int16_tanh_params(input_scale: float) -> tuple[int, int]:
    """(input multiplier, input left shift) of int16 TANH, as TanhPrepare: multiplier 0 marks a
    power-of-two scale 2^-12 or 2^-11; otherwise scale * 3 * 4096 doubled until above 2^14."""
    pot, log2 = checked_log2(input_scale)
    left_shift = 12 + log2
    if pot and left_shift in (0, 1):
        return 0, left_shift
    multiplier = float(np.float32(input_scale)) * 4096.0 * 3.0
    left_shift = 0
    while multiplier <= 32767.0 / 2.0 and left_shift <= 30:
        left_shift += 1
        multiplier *= 2.0
    return int(multiplier), left_shift


def tanh_int16(x: np.ndarray, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """reference_integer_ops::Tanh for int16 (output scale 2^-15): tanh(x) = 2 sigmoid(2x) - 1,
    read from ``SIGMOID_TABLE_UINT16`` with 8 bits of linear interpolation."""
    if input_multiplier == 0:  # power-of-two scale
        input_multiplier, input_left_shift = 3 << input_left_shift, 0
    rounding = (1 << (input_left_shift - 1)) if input_left_shift > 0 else 0
    data = (np.asarray(x, np.int64) * input_multiplier + rounding) >> input_left_shift
    magnitude = np.abs(data)
    high = magnitude >> 8
    low = magnitude & 0xFF
    index = np.minimum(high, 254)
    ua = SIGMOID_TABLE_UINT16[index]
    ub = SIGMOID_TABLE_UINT16[index + 1]
    result = np.where(high >= 255, 0xFFFF << 8, (ua << 8) + low * (ub - ua))
    result = np.where(data >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
    return wrap_int(result >> 8, 16).astype(np.int16)


# -- gemmlowp FixedPoint<int16> maths, the integer LSTM's gate activations (tensor_utils::ApplySigmoid
# / ApplyTanh), and the hybrid kernels' per-row input quantization (tensor_utils::BatchQuantizeFloats).
# Raw int16 values travel as int64 arrays, as above.

def _int16_constant(int32_value: int) -> int:
    """gemmlowp's RescaleConstantInitializer for int16: a Q-format int32 constant rounded to 16 bits."""
    return int(rounding_divide_by_pot(np.int64(int32_value), 16))


def _exp_on_interval_int16(a: np.ndarray) -> np.ndarray:
    """gemmlowp's exp_on_interval_between_negative_one_quarter_and_0_excl on Q0.15 ``a`` (the final
    add saturates, AddSaturatingIf16Bit)."""
    srdhm = saturating_rounding_doubling_high_mul_int16
    constant_term = _int16_constant(1895147668)
    x = wrap_int(a + (1 << 12), 16)
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(
        wrap_int(srdhm(wrap_int(x4_over_4 + x3, 16), _int16_constant(715827883)) + x2, 16), 1)
    return np.clip(constant_term + srdhm(constant_term, wrap_int(x + poly, 16)), INT16_MIN, INT16_MAX)


def exp_on_negative_values_int16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp's exp_on_negative_values for int16: Q``integer_bits`` a <= 0 -> Q0.15 exp(a)."""
    a = np.asarray(a, np.int64)
    fractional_bits = 15 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_one_quarter = wrap_int((a & (one_quarter - 1)) - one_quarter, 16)
    result = _exp_on_interval_int16(
        saturating_rounding_multiply_by_pot(a_mod_quarter_minus_one_quarter, integer_bits, bits=16))
    remainder = wrap_int(a_mod_quarter_minus_one_quarter - a, 16)
    for power, multiplier in _EXP_BARREL:
        if integer_bits > power:
            bit = remainder & (1 << (fractional_bits + power))
            result = np.where(bit != 0, saturating_rounding_doubling_high_mul_int16(
                result, _int16_constant(multiplier)), result)
    if integer_bits > 5:
        result = np.where(a < _int16_constant(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, INT16_MAX, result)


def _newton_reciprocal_int16(a: np.ndarray) -> np.ndarray:
    """The Q2.13 Newton-Raphson estimate of 1 / ((1 + a) / 2) shared by gemmlowp's int16
    one_over_one_plus_x_for_x_in_0_1 and one_minus_x_over_one_plus_x_for_x_in_0_1."""
    srdhm = saturating_rounding_doubling_high_mul_int16
    half_denominator = rounding_half_sum(a, INT16_MAX)
    x = wrap_int(_int16_constant(1515870810) + srdhm(half_denominator, _int16_constant(-1010580540)), 16)
    for _ in range(3):
        one_minus_half_denominator_times_x = wrap_int((1 << 13) - srdhm(half_denominator, x), 16)
        x = wrap_int(x + saturating_rounding_multiply_by_pot(
            srdhm(x, one_minus_half_denominator_times_x), 2, bits=16), 16)
    return x


def logistic_int16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp::logistic on FixedPoint<int16, integer_bits> raw values -> Q0.15 (ApplySigmoid: 3)."""
    a = np.asarray(a, np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, wrap_int(-a, 16))
    x = _newton_reciprocal_int16(exp_on_negative_values_int16(wrap_int(-abs_input, 16), integer_bits))
    if_positive = saturating_rounding_multiply_by_pot(x, 1, bits=16)  # Rescale<0>(ExactMulByPot<-1>(x))
    if_negative = wrap_int(INT16_MAX - if_positive, 16)
    return np.where(a == 0, _int16_constant(1 << 30), np.where(positive, if_positive, if_negative))


def tanh_gemmlowp_int16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp::tanh on FixedPoint<int16, integer_bits> raw values -> Q0.15 (ApplyTanh)."""
    a = np.asarray(a, np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap_int(-a, 16))
    x = _newton_reciprocal_int16(exp_on_negative_values_int16(n, integer_bits + 1))
    t = saturating_rounding_multiply_by_pot(wrap_int(x - (1 << 13), 16), 2, bits=16)
    return np.where(a == 0, 0, np.where(negative, wrap_int(-t, 16), t))


def _neon_round_rows(y: np.ndarray) -> np.ndarray:
    """How LiteRT's x86 build (NEON intrinsics through NEON_2_SSE) rounds float32 ``y`` in its
    Neon{Symmetric,Asymmetric}QuantizeFloats: the first multiple of 8 elements of each row go
    through RoundToNearest (add +-0.5 in float32, truncate), the rest through std::round."""
    vectorised = np.arange(y.shape[-1]) < y.shape[-1] - y.shape[-1] % 8
    neon = np.trunc(y + np.where(y < 0, np.float32(-0.5), np.float32(0.5)).astype(np.float32))
    return np.where(vectorised, neon, round_half_away(y))


def symmetric_quantize_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's SymmetricQuantizeFloats (the NEON kernel LiteRT's x86 build runs) on each row (last
    axis) of float32 ``x``: (int8 values in [-127, 127], scaling factor max|x| / 127 in float32;
    1 for an all-zero row)."""
    x = np.asarray(x, np.float32)
    r = np.maximum(np.abs(x.min(axis=-1)), np.abs(x.max(axis=-1)))
    zero = r == 0
    r = np.where(zero, np.float32(1), r)
    scale = np.where(zero, np.float32(1), r / np.float32(127)).astype(np.float32)
    q = np.clip(_neon_round_rows(x * (np.float32(127) / r)[..., None]), -127, 127)
    return np.where(zero[..., None], 0, q).astype(np.int8), scale


def asymmetric_quantize_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TFLite's AsymmetricQuantizeFloats (NeonAsymmetricQuantizeFloats, as LiteRT's x86 build runs
    it) on each row of float32 ``x``: range [min(0, x), max(0, x)] (its width in float32) over
    [-128, 127], scale and zero point in double, the zero point nudged from the closer end; values
    round(x / scale) + zero point. Returns (int8, float32 scale, int32 zero point); scale 1 and zero
    point 0 for an all-zero row."""
    x = np.asarray(x, np.float32)
    rmin = np.minimum(np.float32(0), x.min(axis=-1))
    rmax = np.maximum(np.float32(0), x.max(axis=-1))
    same = rmin == rmax
    scale = np.where(same, 1.0, (rmax - rmin).astype(np.float64) / 255.0)
    rmin, rmax = rmin.astype(np.float64), rmax.astype(np.float64)
    from_min, from_max = -128.0 - rmin / scale, 127.0 - rmax / scale
    zero_point = np.where(128.0 + np.abs(rmin / scale) < 127.0 + np.abs(rmax / scale), from_min, from_max)
    zero_point = np.where(zero_point <= -128, -128, np.where(zero_point >= 127, 127, round_half_away(zero_point)))
    zero_point = np.where(same, 0, zero_point).astype(np.int32)
    scale = np.where(same, np.float32(1), scale.astype(np.float32)).astype(np.float32)
    inverse = (1.0 / scale.astype(np.float64)).astype(np.float32)  # double division, as the NEON kernel
    q = _neon_round_rows(x * inverse[..., None]) + zero_point[..., None]
    return np.where(same[..., None], 0, np.clip(q, -128, 127)).astype(np.int8), scale, zero_point
