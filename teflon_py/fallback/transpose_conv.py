"""TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias: TFLite's scatter kernels, vectorised.

The reference kernels scatter: every input pixel adds ``x[n, y, x, :] . w[o, ky, kx, :]`` into
output ``(y*sh - pad_top + ky, x*sw - pad_left + kx)`` when that lies inside the output. Here one
matmul ``[N*H*W, C] @ [C, KH*KW*O]`` computes every contribution, and col2im adds each tap's
slab into a strided view of an uncropped output (one whole-tensor add per tap), which is then
cropped by the padding. Quantized accumulators are exact: the matmul runs in float64 on integers
whose products sum below 2^53. TRANSPOSE_CONV's quantized path is LiteRT's: an int32 (int64 for
16x8) scratch accumulator, the bias added to it, then per-channel fixed-point requantization with
the multipliers CONV_2D derives (PopulateConvolutionQuantizationParams: double product for int8
and int16, float32 product for uint8), the output zero point, and the fused activation's clamp.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops import conv as ops_conv
from teflon_py.ops.common import FusedActivation

FLOAT_MAX = float(np.finfo(np.float32).max)
_QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


def scatter_taps(
    x: np.ndarray, w: np.ndarray, stride: tuple[int, int], pad: tuple[int, int], out_hw: tuple[int, int]
) -> np.ndarray:
    """Sum of every input pixel's ``w``-weighted footprint, cropped to ``out_hw``: NHWC in x's dtype.

    ``x`` is [N, H, W, C], ``w`` [O, KH, KW, C], both in the accumulation dtype.
    """
    n, h, wd, c = x.shape
    o, kh, kw, _ = w.shape
    (sh, sw), (top, left), (oh, ow) = stride, pad, out_hw
    cols = x.reshape(-1, c) @ w.transpose(3, 1, 2, 0).reshape(c, kh * kw * o)
    cols = cols.reshape(n, h, wd, kh, kw, o)
    span_h, span_w = (h - 1) * sh + 1, (wd - 1) * sw + 1
    full = np.zeros((n, max(span_h + kh - 1, top + oh), max(span_w + kw - 1, left + ow), o), cols.dtype)
    for ky in range(kh):  # one strided whole-tensor add per tap
        for kx in range(kw):
            full[:, ky : ky + span_h : sh, kx : kx + span_w : sw] += cols[:, :, :, ky, kx]
    return full[:, top : top + oh, left : left + ow]


def _activation_bounds(node: Node, act: FusedActivation) -> tuple[float, float] | tuple[int, int]:
    """Clamp range of the fused activation: +-FLT_MAX for float NONE (TFLite clamps infinities)."""
    out = node.outputs[0]
    reason = ops_conv.activation_reason(act)
    if reason:
        raise node.error(reason)
    if out.dtype == np.float32:
        lo, hi = act.range(out.dtype)
        return max(lo, -FLOAT_MAX), min(hi, FLOAT_MAX)
    return act.range(out.dtype, out.scale, out.zero_point)


def _check_types(node: Node) -> np.dtype:
    """TRANSPOSE_CONV's accepted types (transpose_conv.cc Prepare); returns the input's."""
    w, x = node.inputs[1], node.inputs[2]
    b = node.inputs[3] if len(node.inputs) > 3 else None
    out = node.outputs[0]
    dtype = np.dtype(x.dtype)
    if dtype == np.float32:
        want_w, want_b = np.dtype(np.float32), np.dtype(np.float32)
    elif dtype in _QUANTIZED:
        want_w = np.dtype(np.int8) if dtype == np.int16 else dtype
        want_b = np.dtype(np.int64) if dtype == np.int16 else np.dtype(np.int32)
        for t in (x, w, out):
            if t.quantization is None:
                raise node.error(f"{t.describe()} of type {t.dtype} has no quantization parameters")
        if dtype == np.int16 and (x.zero_point != 0 or out.zero_point != 0):
            raise node.error("int16 input and output need zero point 0")
        if w.quantization.per_channel and w.quantization.quantized_dimension != 0:
            raise node.error("per-channel weights must be quantized along dimension 0 (output channels)")
    else:
        raise node.error(f"{dtype} inputs are not supported (float32, int8, uint8, int16 are)")
    if w.dtype != want_w:
        raise node.error(f"{dtype} input takes {want_w} weights, got {w.dtype}")
    if out.dtype != dtype:
        raise node.error(f"output type {out.dtype} differs from input type {dtype}")
    if b is not None and b.dtype != want_b:
        raise node.error(f"{dtype} input takes {want_b} bias, got {b.dtype}")
    return dtype


def _requantize(node: Node, acc: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Exact integer accumulators (+ bias) -> outputs, per output channel (last axis)."""
    x, w, out = node.inputs[2], node.inputs[1], node.outputs[0]
    multiplier, shift = node.memo(
        "multipliers", lambda: quant.conv_output_multipliers("TRANSPOSE_CONV", x, w, out)
    )
    if out.dtype == np.int16:  # int64 scratch: the 16-bit reduced multiplier of the int64 overload
        y = quant.multiply_by_quantized_multiplier_int64(acc, multiplier, shift)
        return np.clip(y, lo, hi).astype(np.int16)
    return quant.requantize(quant.wrap_int(acc), multiplier, shift, out.zero_point, lo, hi, out.dtype)


@register("TRANSPOSE_CONV")
def transpose_conv(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """TRANSPOSE_CONV (output shape, OHWI weights, NHWC input, optional bias): scatter + epilogue."""
    shape, w, x = inputs[0], inputs[1], inputs[2]
    bias = inputs[3] if len(inputs) > 3 else None
    if x.ndim != 4 or w.ndim != 4 or shape.size != 4:
        raise node.error(
            f"needs 4-D input, weights and output shape, got {x.shape}, {w.shape}, {shape.size} dims"
        )
    n, oh, ow, oc = (int(v) for v in shape.reshape(-1))
    if n != x.shape[0] or oc != w.shape[0] or x.shape[3] != w.shape[3]:
        raise node.error(f"output shape {tuple(shape)} does not fit input {x.shape} and weights {w.shape}")
    dtype = _check_types(node)
    attrs = node.attrs
    reason = ops_conv.transpose_conv_reason(attrs, (n, oh, ow, oc), w.shape, x.shape)
    if reason:
        raise node.error(reason)
    sh, sw = attrs.strides
    _, kh, kw, _ = w.shape
    pad = ops_conv.transpose_pads(attrs, (oh, ow), kh, kw)
    lo, hi = _activation_bounds(node, attrs.activation)
    if dtype == np.float32:
        acc = scatter_taps(x, w, (sh, sw), pad, (oh, ow))
        if bias is not None:
            acc += bias
        return np.clip(acc, np.float32(lo), np.float32(hi)).astype(np.float32, copy=False)
    xq = x.astype(np.float64) - node.inputs[2].zero_point
    wq = w.astype(np.float64)
    if dtype == np.uint8:  # the int8 / int16 kernels never read the weights' zero point
        wq -= node.inputs[1].zero_point
    acc = scatter_taps(xq, wq, (sh, sw), pad, (oh, ow)).astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64)
    return _requantize(node, acc, lo, hi)


@register("Convolution2DTransposeBias")
def convolution_2d_transpose_bias(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """MediaPipe's float transpose conv with bias: the output size follows from the input.

    mediapipe/util/tflite/operations/transpose_conv_bias.cc (``ops.conv.transpose_bias_geometry``).
    """
    x, w, bias = inputs[0], inputs[1], inputs[2]
    reason = ops_conv.transpose_bias_reason(node.attrs, x.shape, w.shape, None if bias is None else bias.shape)
    if reason:
        raise node.error(reason)
    if x.dtype != np.float32 or w.dtype != np.float32 or bias.dtype != np.float32:
        raise node.error("only float32 is supported (as MediaPipe's kernel)")
    out_hw, pads = ops_conv.transpose_bias_geometry(node.attrs, x.shape[1:3], w.shape[1:3])
    acc = scatter_taps(x, w, node.attrs.strides, pads, out_hw)
    acc += bias
    return acc.astype(np.float32, copy=False)
