"""SOFTMAX over the last axis, as TFLite's reference kernels compute it.

Float: ``exp((x - max) * beta)`` in float32, summed in order, each term divided by the sum.
int8/uint8 (LiteRT's BUILTIN_REF uses the gemmlowp fixed-point kernel, not the optimized float
LUT): ``beta * input_scale`` becomes a Q5.26 multiplier (PreprocessSoftmaxScaling); each
difference to the row maximum above ``diff_min`` is rescaled, exponentiated with
``exp_on_negative_values``, the Q12.19 sum inverted with GetReciprocal, and the product shifted
down to 8 bits. The output grid is implied: 1/256 with zero point -128 (int8) or 0 (uint8).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register

SCALED_DIFF_INTEGER_BITS = 5
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
        multiplier, left_shift = quant.preprocess_softmax_scaling(
            float(np.float32(node.options.beta)), float(np.float32(node.inputs[0].scale)),
            SCALED_DIFF_INTEGER_BITS)
    except ValueError as e:
        raise node.error(str(e)) from None
    diff_min = -quant.calculate_input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)
    return multiplier, left_shift, diff_min


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
    if exponent.max() > 31:  # TFLITE_CHECK(exponent <= 31): LiteRT aborts on such rows
        raise ValueError("a row's sum of exponentials is 512 or more, where every output rounds to 0")
    unsat = quant.rounding_divide_by_pot(quant.saturating_rounding_doubling_high_mul(shifted_scale, exp), exponent)
    qmin, qmax = quant.QRANGE[np.dtype(dtype)]
    return np.where(used, np.clip(unsat + qmin, qmin, qmax), qmin).astype(dtype)


@register("SOFTMAX")
def softmax(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """exp(beta * x) normalised over the last axis."""
    x = inputs[0]
    xt, yt = node.inputs[0], node.outputs[0]
    if x.ndim < 1:
        raise node.error("input must have at least one dimension")
    if yt.dtype == np.float32 and xt.dtype == np.float32:
        return softmax_float(x, node.options.beta)
    if xt.dtype not in (np.int8, np.uint8) or yt.dtype != xt.dtype:
        raise node.error(f"{xt.dtype} input with {yt.dtype} output is not supported")
    if xt.quantization is None or yt.quantization is None:
        raise node.error(f"quantized {xt.dtype} tensors need quantization parameters")
    if yt.dtype == np.int8 and (yt.zero_point != -128 or abs(yt.scale - 1 / 256) > 0.001 / 256):
        raise node.error("int8 output needs scale 1/256 and zero point -128")
    multiplier, left_shift, diff_min = node.memo("softmax", lambda: softmax_params(node))
    try:
        return softmax_quantized(x, multiplier, left_shift, diff_min, yt.dtype)
    except ValueError as e:
        raise node.error(f"{e} (TFLite's reference kernel aborts here)") from None
