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

import numpy as np

from teflon_py import ir
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.common import Padding
from teflon_py.ops.pool import QUANTIZED, PoolGeometry, geometry, pool_types_reason, window_counts
from teflon_py.ops.pool import pool_geometry as _pool_geometry

__all__ = ["FLOAT_MAX", "QUANTIZED", "PoolGeometry", "out_size", "pool_geometry", "window_counts", "window_taps"]

FLOAT_MAX = float(np.finfo(np.float32).max)


def out_size(padding: ir.Padding, size: int, filter_size: int, stride: int) -> int:
    """TFLite's ComputeOutSize (dilation 1), for a TFLite padding code (MediaPipe's pool structs)."""
    p = Padding.tf_same() if padding == ir.Padding.SAME else Padding.valid()
    return geometry(p, size, 1, (filter_size, 1), (stride, 1)).out_h


def pool_geometry(node: Node, height: int, width: int) -> PoolGeometry:
    """The node's pool windows (``ops.pool.pool_geometry``: LiteRT's parameter checks)."""
    return _pool_geometry(node.attrs, height, width, node.op.describe())


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


def _prepare(node: Node, x: np.ndarray) -> tuple[PoolGeometry, tuple[float, float] | tuple[int, int]]:
    """Checks shared by both pools; returns the window geometry and the activation clamp bounds."""
    xt, yt = node.inputs[0], node.outputs[0]
    if x.ndim != 4:
        raise node.error(f"input must be 4-D NHWC, got shape {x.shape}")
    reason = pool_types_reason(node.op.name, xt.dtype, yt.dtype)
    if reason:
        raise node.error(reason)
    act = node.attrs.activation
    g = pool_geometry(node, x.shape[1], x.shape[2])
    if yt.dtype == np.float32:
        lo, hi = act.range(yt.dtype)
        return g, (max(lo, -FLOAT_MAX), min(hi, FLOAT_MAX))
    if yt.quantization is None:
        raise node.error(f"quantized {yt.dtype} output needs quantization parameters")
    return g, act.range(yt.dtype, yt.scale, yt.zero_point)


@register("AVERAGE_POOL_2D")
def average_pool_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Mean of each window's in-bounds elements, then the fused activation."""
    x = inputs[0]
    g, (lo, hi) = _prepare(node, x)
    counts = window_counts(g, x.shape[1], x.shape[2])
    if not counts.all():  # ops.pool.empty_window
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
