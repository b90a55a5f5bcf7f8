"""AVERAGE_POOL_2D and MAX_POOL_2D on NHWC tensors, as TFLite's reference kernels compute them.

Padding is TFLite's: SAME pads top/left by ``((out - 1) * stride + filter - in) // 2`` and lets the
last windows run past the bottom/right edge; only in-bounds elements take part, so an average
divides by their count. Float sums are accumulated tap by tap in float32, in the reference order
(filter rows, then columns). Quantized pools work on the raw values: the average rounds
``(sum +- count/2) / count`` with C's truncating division, the output keeps the input's scale and
zero point (LiteRT only debug-checks that they match) and the fused activation clamps on the
output's grid.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from teflon_py import ir, quant
from teflon_py.fallback.registry import Node, register

QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
FLOAT_MAX = float(np.finfo(np.float32).max)


class PoolGeometry(NamedTuple):
    """Window placement of one pool: output size, top/left padding, filter and strides."""

    out_h: int
    out_w: int
    pad_h: int
    pad_w: int
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int


def out_size(padding: ir.Padding, size: int, filter_size: int, stride: int) -> int:
    """TFLite's ComputeOutSize (dilation 1)."""
    if padding == ir.Padding.SAME:
        return (size + stride - 1) // stride
    return (size + stride - filter_size) // stride


def pool_geometry(node: Node, height: int, width: int) -> PoolGeometry:
    """TFLite's ComputePaddingHeightWidth for a pool's options, with its parameter checks."""
    o = node.attrs
    fh, fw, sh, sw = o.filter_height, o.filter_width, o.stride_h, o.stride_w
    if min(fh, fw, sh, sw) <= 0:
        raise node.error(f"filter {fh}x{fw} and strides {sh}x{sw} must be positive")
    padding = ir.Padding(int(o.padding))
    oh, ow = out_size(padding, height, fh, sh), out_size(padding, width, fw, sw)
    if oh <= 0 or ow <= 0:
        raise node.error(f"filter {fh}x{fw} does not fit the {height}x{width} input with VALID padding")
    pad_h = max(((oh - 1) * sh + fh - height) // 2, 0)
    pad_w = max(((ow - 1) * sw + fw - width) // 2, 0)
    return PoolGeometry(oh, ow, pad_h, pad_w, fh, fw, sh, sw)


def window_taps(x: np.ndarray, g: PoolGeometry, fill: float) -> Iterator[np.ndarray]:
    """The (N, out_h, out_w, C) slice under each filter tap, row by row, off-image places = ``fill``."""
    _, h, w, _ = x.shape
    bottom = max(0, (g.out_h - 1) * g.stride_h + g.filter_h - g.pad_h - h)
    right = max(0, (g.out_w - 1) * g.stride_w + g.filter_w - g.pad_w - w)
    padded = np.pad(x, ((0, 0), (g.pad_h, bottom), (g.pad_w, right), (0, 0)), constant_values=fill)
    span_h, span_w = (g.out_h - 1) * g.stride_h + 1, (g.out_w - 1) * g.stride_w + 1
    for fy in range(g.filter_h):
        for fx in range(g.filter_w):
            yield padded[:, fy:fy + span_h:g.stride_h, fx:fx + span_w:g.stride_w, :]


def window_counts(g: PoolGeometry, height: int, width: int) -> np.ndarray:
    """(out_h, out_w, 1) number of in-bounds elements under each window."""
    y0 = np.arange(g.out_h) * g.stride_h - g.pad_h
    x0 = np.arange(g.out_w) * g.stride_w - g.pad_w
    rows = np.minimum(g.filter_h, height - y0) - np.maximum(0, -y0)
    cols = np.minimum(g.filter_w, width - x0) - np.maximum(0, -x0)
    return (np.maximum(rows, 0)[:, None] * np.maximum(cols, 0)[None, :])[:, :, None]


def _prepare(node: Node, x: np.ndarray) -> tuple[PoolGeometry, tuple[float, float] | tuple[int, int]]:
    """Checks shared by both pools; returns the window geometry and the activation clamp bounds."""
    xt, yt = node.inputs[0], node.outputs[0]
    if x.ndim != 4:
        raise node.error(f"input must be 4-D NHWC, got shape {x.shape}")
    if xt.dtype != yt.dtype:
        raise node.error(f"input type {xt.dtype} differs from output type {yt.dtype}")
    if yt.dtype != np.float32 and yt.dtype not in QUANTIZED:
        raise node.error(f"type {yt.dtype} is not supported")
    act = node.attrs.fused_activation_function
    g = pool_geometry(node, x.shape[1], x.shape[2])
    if yt.dtype == np.float32:
        lo, hi = quant.activation_range(act, yt.dtype)
        return g, (max(lo, -FLOAT_MAX), min(hi, FLOAT_MAX))
    if yt.quantization is None:
        raise node.error(f"quantized {yt.dtype} output needs quantization parameters")
    return g, quant.activation_range(act, yt.dtype, yt.scale, yt.zero_point)


@register("AVERAGE_POOL_2D")
def average_pool_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Mean of each window's in-bounds elements, then the fused activation."""
    x = inputs[0]
    g, (lo, hi) = _prepare(node, x)
    counts = window_counts(g, x.shape[1], x.shape[2])
    if not counts.all():
        raise node.error("a pooling window lies entirely in the padding")
    dtype = node.outputs[0].dtype
    if dtype == np.float32:
        total = np.zeros((x.shape[0], g.out_h, g.out_w, x.shape[3]), np.float32)
        for tap in window_taps(x, g, 0.0):
            total = total + tap
        return np.clip(total / counts.astype(np.float32), np.float32(lo), np.float32(hi))
    acc = sum(tap.astype(np.int64) for tap in window_taps(x, g, 0))
    half = counts // 2
    mean = np.where(acc > 0, (acc + half) // counts, -((half - acc) // counts))  # C division truncates
    return np.clip(mean, lo, hi).astype(dtype)


@register("MAX_POOL_2D")
def max_pool_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Max of each window's in-bounds elements, then the fused activation."""
    x = inputs[0]
    g, (lo, hi) = _prepare(node, x)
    dtype = node.outputs[0].dtype
    fill = np.finfo(dtype).min if dtype == np.float32 else np.iinfo(dtype).min
    taps = window_taps(x, g, fill)
    result = next(taps)
    for tap in taps:
        result = np.fmax(result, tap)  # std::max keeps the running max when a NaN comes
    return np.clip(result, lo, hi).astype(dtype)
