"""Elementwise helpers of the unary / binary / comparison kernels: int16 lookup tables, gemmlowp's
inverse square root, TFLite's int16 tanh."""
from __future__ import annotations

import numpy as np

from teflon_py.quant.core import (
    INT32_MAX,
    QRANGE,
    checked_log2,
    round_half_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)
from teflon_py.quant.fixedpoint import (
    INT16_MAX,
    INT16_MIN,
    count_leading_zeros32,
    saturating_rounding_multiply_by_pot,
    wrap_int,
)

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
