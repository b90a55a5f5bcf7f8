"""The normalization family: SOFTMAX and LOG_SOFTMAX over the last axis, L2_NORMALIZATION and
LOCAL_RESPONSE_NORMALIZATION. Each output is shaped and typed as its input; the rules below are
LiteRT's Prepare checks, shared by the NumPy fallback and the OpenCL lowerings."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py import ir, quant
from teflon_py.errors import UnsupportedError
from teflon_py.ops.common import NO_ACTIVATION, Act, FusedActivation, NoAttrs
from teflon_py.ops.registry import Inputs, Meta, define

SCALED_DIFF_INTEGER_BITS = 5
#: output zero point LiteRT's LOG_SOFTMAX requires (the scale is always 16/256)
LOG_OUT_ZERO_POINT = {np.dtype(np.int8): 127, np.dtype(np.uint8): 255}
#: output zero point LiteRT's quantized L2_NORMALIZATION requires (the scale is always 1/128)
L2_OUT_ZERO_POINT = {np.dtype(np.uint8): 128, np.dtype(np.int8): 0}


@dataclass(frozen=True)
class SoftmaxAttrs:
    """SOFTMAX: ``exp(beta * x)`` normalised over the last axis."""

    beta: float = 1.0


@dataclass(frozen=True)
class L2NormAttrs:
    """L2_NORMALIZATION: its fused activation (LiteRT computes only NONE)."""

    activation: FusedActivation = NO_ACTIVATION


@dataclass(frozen=True)
class LRNAttrs:
    """LOCAL_RESPONSE_NORMALIZATION: ``x * (bias + alpha * sum of squares within radius)^-beta``.

    ``inclusive``: the window of channel c is ``[c - radius, c + radius]`` (NNAPI's formula, and
    TFLite's optimized kernel); by default it is TFLite's reference kernel's ``[c - radius,
    c + radius)``, which the TFLite frontend reproduces."""

    radius: int = 0
    bias: float = 0.0
    alpha: float = 0.0
    beta: float = 0.0
    inclusive: bool = False


def _quant_missing(x: ir.Tensor, y: ir.Tensor) -> bool:
    return x.quantization is None or y.quantization is None


def softmax_reason(x: ir.Tensor, y: ir.Tensor) -> str | None:
    """SOFTMAX's type rules: float32, or int8/uint8 in and out with int8's 1/256, -128 grid."""
    if len(x.shape) < 1:
        return "input must have at least one dimension"
    if x.dtype == np.float32 and y.dtype == np.float32:
        return None
    if x.dtype not in (np.int8, np.uint8) or y.dtype != x.dtype:
        return f"{x.dtype} input with {y.dtype} output is not supported"
    if _quant_missing(x, y):
        return f"quantized {x.dtype} tensors need quantization parameters"
    if y.dtype == np.int8 and (y.zero_point != -128 or abs(y.scale - 1 / 256) > 0.001 / 256):
        return "int8 output needs scale 1/256 and zero point -128"
    return None


def softmax_scaling(beta: float, input_scale: float) -> tuple[int, int, int]:
    """(input multiplier, left shift, diff_min) of the quantized reference softmax
    (UnsupportedError where LiteRT's PreprocessSoftmaxScaling rejects beta * scale)."""
    try:
        multiplier, left_shift = quant.preprocess_softmax_scaling(
            float(np.float32(beta)), float(np.float32(input_scale)), SCALED_DIFF_INTEGER_BITS)
    except ValueError as e:
        raise UnsupportedError(str(e)) from None
    diff_min = -quant.calculate_input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)
    return multiplier, left_shift, diff_min


def log_softmax_reason(x: ir.Tensor, y: ir.Tensor) -> str | None:
    """LOG_SOFTMAX's type rules: float32, or int8/uint8 with output grid 16/256 and zero point
    127 (int8) or 255 (uint8)."""
    if len(x.shape) < 1:
        return "input must have at least one dimension"
    if x.dtype != y.dtype:
        return f"input type {x.dtype} differs from output type {y.dtype}"
    dtype = np.dtype(y.dtype)
    if dtype == np.float32:
        return None
    if dtype not in LOG_OUT_ZERO_POINT:
        return f"type {dtype} is not supported (LiteRT takes float32, int8 and uint8)"
    if _quant_missing(x, y):
        return f"quantized {dtype} tensors need quantization parameters"
    if np.float32(y.scale) != np.float32(16 / 256) or y.zero_point != LOG_OUT_ZERO_POINT[dtype]:
        return f"{dtype} output needs scale 16/256 and zero point {LOG_OUT_ZERO_POINT[dtype]}"
    return None


def l2_norm_reason(attrs: L2NormAttrs, x: ir.Tensor, y: ir.Tensor) -> str | None:
    """L2_NORMALIZATION's rules: rank 1 to 4, no fused activation, float32 or 8-bit with output
    grid 1/128 and zero point 128 (uint8) or 0 (int8)."""
    dtype = np.dtype(y.dtype)
    if x.dtype != dtype:
        return f"input type {x.dtype} differs from output type {dtype}"
    if not 1 <= len(x.shape) <= 4:
        return f"input rank {len(x.shape)} is not supported (1 to 4)"
    if attrs.activation.kind != Act.NONE:
        return f"fused activation {attrs.activation.kind.name} is not supported (LiteRT takes NONE)"
    if dtype == np.float32:
        return None
    if dtype not in L2_OUT_ZERO_POINT:
        return f"type {dtype} is not supported (LiteRT takes float32, uint8 and int8)"
    if _quant_missing(x, y):
        return f"quantized {dtype} tensors need quantization parameters"
    if np.float32(y.scale) != np.float32(1 / 128) or y.zero_point != L2_OUT_ZERO_POINT[dtype]:
        return f"{dtype} output needs scale 1/128 and zero point {L2_OUT_ZERO_POINT[dtype]}"
    return None


def lrn_reason(x: ir.Tensor, y: ir.Tensor) -> str | None:
    """LOCAL_RESPONSE_NORMALIZATION's rules: 4-D float32."""
    if x.dtype != np.float32 or y.dtype != np.float32:
        return f"type {x.dtype} is not supported (LiteRT takes float32)"
    if len(x.shape) != 4:
        return f"input rank {len(x.shape)} is not supported (LiteRT takes 4-D)"
    return None


def _infer(rule):
    def infer(attrs: object, ins: Inputs) -> list[Meta]:
        x, y = ins[0], ins.outputs[0]
        if x is None:
            raise ins.error("input 0 is missing")
        reason = rule(attrs, x, y)
        if reason:
            raise ins.error(reason)
        return [Meta(tuple(x.shape), np.dtype(y.dtype))]

    return infer


define("SOFTMAX", attrs=SoftmaxAttrs)(_infer(lambda attrs, x, y: softmax_reason(x, y)))
define("LOG_SOFTMAX", attrs=NoAttrs)(_infer(lambda attrs, x, y: log_softmax_reason(x, y)))
define("L2_NORMALIZATION", attrs=L2NormAttrs)(_infer(l2_norm_reason))
define("LOCAL_RESPONSE_NORMALIZATION", attrs=LRNAttrs)(_infer(lambda attrs, x, y: lrn_reason(x, y)))
