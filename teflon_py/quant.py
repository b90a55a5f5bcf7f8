"""TFLite's quantization arithmetic, vectorised: the one home of these formulas.

Mirrors ``tensorflow/lite/kernels/internal/common.h`` and ``quantization_util.cc`` (double
rounding, the reference kernels' default): ``quantize_multiplier`` turns a real scale into an
int32 fixed-point multiplier and a power-of-two shift; ``multiply_by_quantized_multiplier``
applies it exactly as the integer kernels do. The fallback calls these on NumPy arrays; the
OpenCL lowering passes the same integers to ``cl_kernels/quant.cl``.
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
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


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
    m = (multiplier + (1 << 15)) >> 16  # reduced to 16 bits, as TFLite does for int64 inputs
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
