"""gemmlowp's fixed-point maths on int32 raw values, and the prepare-time helpers of the 8-bit
softmax, log-softmax, logistic and hard-swish kernels."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from teflon_py.quant.core import (
    INT32_MAX,
    INT32_MIN,
    QRANGE,
    quantize_multiplier,
    round_half_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)

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
EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
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
    for power, multiplier in EXP_BARREL:
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
