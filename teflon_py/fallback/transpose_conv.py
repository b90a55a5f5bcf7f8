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

import struct
from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops import conv as ops_conv
from teflon_py.ops.common import FusedActivation

FLOAT_MAX = float(np.finfo(np.float32).max)
_QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
#: TfLitePadding in the MediaPipe op's raw custom options (not the schema's Padding enum).
_TFLITE_PADDING_SAME = 1


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


def _mediapipe_options(node: Node) -> tuple[bool, int, int]:
    """(SAME padding, stride_h, stride_w) from the raw TfLiteTransposeConvParams custom options."""
    raw = node.op.custom_options or b""
    if len(raw) < 12:
        raise node.error(f"custom options hold {len(raw)} bytes; TransposeConvParams needs 12")
    padding, stride_w, stride_h = struct.unpack_from("<iii", raw)
    if min(stride_w, stride_h) < 1:
        raise node.error(f"strides ({stride_h}, {stride_w}) must be positive")
    return padding == _TFLITE_PADDING_SAME, stride_h, stride_w


@register("Convolution2DTransposeBias")
def convolution_2d_transpose_bias(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """MediaPipe's float transpose conv with bias: the output size follows from the input.

    mediapipe/util/tflite/operations/transpose_conv_bias.cc: with SAME padding the total padding
    is ``max(0, K - (in - 1) % stride - 1)`` (VALID: 0), the output is
    ``stride * (in - 1) + K - total`` and the top/left padding ``total // 2``.
    """
    x, w, bias = inputs[0], inputs[1], inputs[2]
    if x.ndim != 4 or w.ndim != 4 or bias is None or bias.ndim != 1:
        raise node.error("needs a 4-D input, 4-D OHWI weights and a 1-D bias")
    if x.dtype != np.float32 or w.dtype != np.float32 or bias.dtype != np.float32:
        raise node.error("only float32 is supported (as MediaPipe's kernel)")
    if w.shape[3] != x.shape[3] or w.shape[0] != bias.shape[0]:
        raise node.error(f"weights {w.shape} do not fit input {x.shape} and bias {bias.shape}")
    same, sh, sw = _mediapipe_options(node)
    _, h, wd, _ = x.shape
    _, kh, kw, _ = w.shape
    total_h = max(0, kh - (h - 1) % sh - 1) if same else 0
    total_w = max(0, kw - (wd - 1) % sw - 1) if same else 0
    out_hw = (sh * (h - 1) + kh - total_h, sw * (wd - 1) + kw - total_w)
    acc = scatter_taps(x, w, (sh, sw), (total_h // 2, total_w // 2), out_hw)
    acc += bias
    return acc.astype(np.float32, copy=False)
