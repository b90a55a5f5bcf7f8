"""SOFTMAX over the last axis, as TFLite's reference kernels compute it.

Float: ``exp((x - max) * beta)`` in float32, summed in order, each term divided by the sum.
int8/uint8 (LiteRT's BUILTIN_REF uses the gemmlowp fixed-point kernel, not the optimized float
LUT): ``beta * input_scale`` becomes a Q5.26 multiplier (PreprocessSoftmaxScaling); each
difference to the row maximum above ``diff_min`` is rescaled, exponentiated with
``exp_on_negative_values``, the Q12.19 sum inverted with GetReciprocal, and the product shifted
down to 8 bits. The output grid is implied: 1/256 with zero point -128 (int8) or 0 (uint8).

LOG_SOFTMAX (beta 1): float ``x - max - log(sum exp(x - max))`` in float32. int8/uint8 run the
same fixed-point front end (PreprocessLogSoftmaxScalingExp), take gemmlowp's
``log_x_for_x_greater_than_or_equal_to_1`` of the Q12.19 sum in Q5.26, and shift each
``scaled diff - log sum`` down to the output grid LiteRT requires: 16/256 with zero point 127
(int8) or 255 (uint8); differences below a row's reachable range give the type's minimum.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.errors import UnsupportedError
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.normalization import (
    LOG_OUT_ZERO_POINT,
    SCALED_DIFF_INTEGER_BITS,
    log_softmax_reason,
    softmax_reason,
    softmax_scaling,
)

ACCUMULATION_INTEGER_BITS = 12


def softmax_float(x: np.ndarray, beta: float) -> np.ndarray:
    """reference_ops::Softmax for float32 on the last axis."""
    shifted = (x - x.max(axis=-1, keepdims=True)) * np.float32(beta)
    e = np.exp(shifted.astype(np.float64)).astype(np.float32)  # expf, up to glibc's rare last-bit misrounding
    total = np.cumsum(e, axis=-1, dtype=np.float32)[..., -1:]  # sequential float32 sum, as the loop does
    return e / total


def softmax_params(node: Node) -> tuple[int, int, int]:
    """(input multiplier, input left shift, diff_min) of the quantized reference softmax."""
    try:
        return softmax_scaling(node.attrs.beta, node.inputs[0].scale)
    except UnsupportedError as e:  # LiteRT's PreprocessSoftmaxScaling rejects beta * scale
        raise node.invalid(str(e)) from None


def softmax_quantized(x: np.ndarray, multiplier: int, left_shift: int, diff_min: int,
                      dtype: np.dtype) -> np.ndarray:
    """reference_ops::Softmax for 8-bit input and output: gemmlowp fixed point throughout."""
    diff = x.astype(np.int64) - x.max(axis=-1, keepdims=True).astype(np.int64)
    used = diff >= diff_min
    scaled = quant.multiply_by_quantized_multiplier_greater_than_one(np.where(used, diff, 0), multiplier, left_shift)
    exp = quant.exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS)  # Q0
    terms = np.where(used, quant.rescale(exp, 0, ACCUMULATION_INTEGER_BITS), 0)
    sum_of_exps = quant.wrap_int(terms.sum(axis=-1, keepdims=True))  # Q12, int32 accumulation
    shifted_scale, num_bits_over_unit = quant.get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS)
    exponent = num_bits_over_unit + 31 - 8 * np.dtype(dtype).itemsize
    if exponent.size and exponent.max() > 31:  # TFLITE_CHECK(exponent <= 31): LiteRT aborts on such rows
        raise ValueError("a row's sum of exponentials is 512 or more, where every output rounds to 0")
    unsat = quant.rounding_divide_by_pot(quant.saturating_rounding_doubling_high_mul(shifted_scale, exp), exponent)
    qmin, qmax = quant.QRANGE[np.dtype(dtype)]
    return np.where(used, np.clip(unsat + qmin, qmin, qmax), qmin).astype(dtype)


@register("SOFTMAX")
def softmax(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """exp(beta * x) normalised over the last axis."""
    x = inputs[0]
    xt, yt = node.inputs[0], node.outputs[0]
    reason = softmax_reason(xt, yt)
    if reason:
        raise node.error(reason)
    if yt.dtype == np.float32:
        return softmax_float(x, node.attrs.beta)
    multiplier, left_shift, diff_min = node.memo("softmax", lambda: softmax_params(node))
    try:
        return softmax_quantized(x, multiplier, left_shift, diff_min, yt.dtype)
    except ValueError as e:
        raise node.invalid(f"{e} (TFLite's reference kernel aborts here)") from None


# -- LOG_SOFTMAX --------------------------------------------------------------------------------

LOG_OUTPUT_INTEGER_BITS = 4


def log_softmax_float(x: np.ndarray) -> np.ndarray:
    """reference_ops::LogSoftmax for float32 on the last axis: (x - max) - logf(sum of expf)."""
    shifted = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shifted.astype(np.float64)).astype(np.float32)  # expf, as in softmax_float
    total = np.cumsum(e, axis=-1, dtype=np.float32)[..., -1:]  # sequential float32 sum
    return shifted - np.log(total.astype(np.float64)).astype(np.float32)


def log_softmax_params(node: Node) -> tuple[int, int, int, int, int]:
    """(input multiplier, left shift, reverse multiplier, reverse shift, diff_min) of the 8-bit kernel."""
    try:
        multiplier, left_shift, reverse_multiplier, reverse_shift = quant.preprocess_log_softmax_scaling_exp(
            1.0, float(np.float32(node.inputs[0].scale)), SCALED_DIFF_INTEGER_BITS)
    except ValueError as e:
        raise node.invalid(f"{e} (TFLite's reference kernel aborts here)") from None
    diff_min = -quant.calculate_input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)
    return multiplier, left_shift, reverse_multiplier, reverse_shift, diff_min


def log_softmax_quantized(x: np.ndarray, params: tuple[int, int, int, int, int], dtype: np.dtype) -> np.ndarray:
    """reference_integer_ops::LogSoftmax (int8) / reference_ops::LogSoftmax (uint8): gemmlowp fixed point."""
    multiplier, left_shift, reverse_multiplier, reverse_shift, diff_min = params
    diff = x.astype(np.int64) - x.max(axis=-1, keepdims=True).astype(np.int64)
    used = diff >= diff_min
    scaled = quant.multiply_by_quantized_multiplier_greater_than_one(np.where(used, diff, 0), multiplier, left_shift)
    exp = quant.exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS)
    terms = np.where(used, quant.rescale(exp, 0, ACCUMULATION_INTEGER_BITS), 0)
    sum_of_exps = quant.wrap_int(terms.sum(axis=-1, keepdims=True))  # Q12, int32 accumulation
    log_sum = quant.log_x_for_x_greater_than_or_equal_to_1(sum_of_exps, ACCUMULATION_INTEGER_BITS,
                                                           SCALED_DIFF_INTEGER_BITS)  # Q5
    reachable = quant.multiply_by_quantized_multiplier(quant.wrap_int(log_sum + quant.INT32_MIN),
                                                       reverse_multiplier, reverse_shift)
    adjusted_diff_min = np.maximum(diff_min - 1, reachable)
    exponent = 31 - SCALED_DIFF_INTEGER_BITS - LOG_OUTPUT_INTEGER_BITS
    unsat = quant.rounding_divide_by_pot(quant.wrap_int(scaled - log_sum), exponent) + LOG_OUT_ZERO_POINT[dtype]
    qmin, qmax = quant.QRANGE[dtype]
    return np.where(diff > adjusted_diff_min, np.clip(unsat, qmin, qmax), qmin).astype(dtype)


@register("LOG_SOFTMAX")
def log_softmax(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """log(softmax(x)) over the last axis."""
    x = inputs[0]
    xt, yt = node.inputs[0], node.outputs[0]
    reason = log_softmax_reason(xt, yt)
    if reason:
        raise node.error(reason)
    if yt.dtype == np.float32:
        return log_softmax_float(x)
    dtype = np.dtype(yt.dtype)
    return log_softmax_quantized(x, node.memo("log_softmax", lambda: log_softmax_params(node)), dtype)
