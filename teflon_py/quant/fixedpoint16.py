"""gemmlowp's FixedPoint<int16> maths (the integer LSTM's gate activations) and the hybrid kernels'
per-row input quantization."""
from __future__ import annotations

import numpy as np

from teflon_py.quant.core import round_half_away, rounding_divide_by_pot
from teflon_py.quant.fixedpoint import (
    EXP_BARREL,
    INT16_MAX,
    INT16_MIN,
    rounding_half_sum,
    saturating_rounding_doubling_high_mul_int16,
    saturating_rounding_multiply_by_pot,
    wrap_int,
)

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
    for power, multiplier in EXP_BARREL:
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
