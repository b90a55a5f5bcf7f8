"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on NHWC tensors, as TFLite's reference kernels.

Both map each output row (column) to input rows (columns) once per axis -- the arithmetic is
per axis, so it runs on two small index vectors -- then gather. Quantized tensors resize their
raw values (the output shares the input's scale and zero point).

Bilinear, float32 and uint8 (the templated float kernel): ``scale = in / out`` (``(in - 1) /
(out - 1)`` with align_corners), source ``y * scale`` (half-pixel centres: ``(y + 0.5) * scale -
0.5``), ``y0 = max(floor, 0)``, ``y1 = min(ceil, in - 1)``, and the four-term blend evaluated
left to right in float32; uint8 rounds it half away from zero (LiteRT 2.3 rounds; older reference
kernels truncated: tests/ops/test_resize.py tells them apart). int8 and int16 take the integer
path: scales in 1/1024 units rounded by integer division, a 2^20-scaled blend in int64 rounded
half away from zero with C's truncating division.

Nearest neighbour: ``floor((y + offset) * scale)`` in float32 (align_corners: rounded half away
from zero), clamped to the input, offset 0.5 with half-pixel centres.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.resize import resize_reason, size_reason

_ONE = 1 << 10  # the integer path's fixed-point unit


def _prepare(node: Node, x: np.ndarray, size: np.ndarray) -> tuple[int, int, bool, bool]:
    """(out_h, out_w, align_corners, half_pixel_centers) after LiteRT's checks."""
    reason = resize_reason(node.op.name, node.attrs, node.inputs[0], node.outputs[0]) or size_reason(size)
    if reason:
        raise node.error(reason)
    oh, ow = (int(v) for v in size.reshape(-1))
    return oh, ow, node.attrs.align_corners, node.attrs.half_pixel_centers


def _float_scale(in_size: int, out_size: int, align: bool) -> np.float32:
    """The float32 input/output ratio of both kernels."""
    if align and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def float_axis(
    in_size: int, out_size: int, align: bool, half: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float kernel's per-output (source coordinate, lower index, upper index) along one axis."""
    scale = _float_scale(in_size, out_size, align)
    v = np.arange(out_size, dtype=np.float32)
    src = (v + np.float32(0.5)) * scale - np.float32(0.5) if half else v * scale
    lower = np.maximum(np.floor(src).astype(np.int64), 0)
    upper = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return src.astype(np.float32), lower, upper


def _cdiv(a: np.ndarray, b: int) -> np.ndarray:
    """C's truncating integer division of int64 ``a`` by a positive ``b``."""
    q = np.abs(a) // b
    return np.where(a < 0, -q, q)


def integer_axis(
    in_size: int, out_size: int, align: bool, half: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer kernel's per-output (source coordinate in 1/1024, lower index, upper index)."""
    if align and out_size > 1:
        scale = (_ONE * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = (_ONE * in_size + out_size // 2) // out_size
    v = np.arange(out_size, dtype=np.int64)
    src = v * scale + scale // 2 - (1 << 9) if half else v * scale
    lower = np.maximum(_cdiv(src, _ONE), 0)
    upper = np.minimum(_cdiv(src + _ONE - 1, _ONE), in_size - 1)
    return src, lower, upper


def _gather(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return x[:, rows][:, :, cols]


def _bilinear_float(x: np.ndarray, ys: tuple, xs: tuple) -> np.ndarray:
    """The templated float kernel: float32 blend, left to right as the C++ expression."""
    (sy, y0, y1), (sx, x0, x1) = ys, xs
    dy = (sy - y0.astype(np.float32))[None, :, None, None]
    dx = (sx - x0.astype(np.float32))[None, None, :, None]
    one = np.float32(1)
    rows0, rows1 = x[:, y0].astype(np.float32), x[:, y1].astype(np.float32)
    total = rows0[:, :, x0] * (one - dy) * (one - dx)
    total += rows1[:, :, x0] * dy * (one - dx)
    total += rows0[:, :, x1] * (one - dy) * dx
    total += rows1[:, :, x1] * dy * dx
    return total


def _bilinear_integer(x: np.ndarray, ys: tuple, xs: tuple) -> np.ndarray:
    """The int8 / int16 kernel: weights in 1/1024, the int64 blend rounded half away, truncated."""
    (sy, y0, y1), (sx, x0, x1) = ys, xs
    fy = (sy - _ONE * y0)[None, :, None, None]
    fx = (sx - _ONE * x0)[None, None, :, None]
    rows0, rows1 = x[:, y0].astype(np.int64), x[:, y1].astype(np.int64)
    total = rows0[:, :, x0] * (_ONE - fy) * (_ONE - fx)
    total += rows1[:, :, x0] * fy * (_ONE - fx)
    total += rows0[:, :, x1] * (_ONE - fy) * fx
    total += rows1[:, :, x1] * fy * fx
    total += np.where(total > 0, 1 << 19, -(1 << 19))
    return _cdiv(total, 1 << 20)


@register("RESIZE_BILINEAR")
def resize_bilinear(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Bilinear resize to ``size``: float blend for float32/uint8, LiteRT's integer path for int8/int16."""
    x = inputs[0]
    oh, ow, align, half = _prepare(node, x, inputs[1])
    dtype = np.dtype(x.dtype)
    _, h, w, _ = x.shape
    if dtype in (np.float32, np.uint8):
        out = _bilinear_float(x, float_axis(h, oh, align, half), float_axis(w, ow, align, half))
        if dtype == np.uint8:  # TfLiteRound, then the cast: the blend stays within [0, 255]
            return quant.round_half_away(out).astype(np.uint8)
        return out
    out = _bilinear_integer(x, integer_axis(h, oh, align, half), integer_axis(w, ow, align, half))
    return quant.wrap_int(out, dtype.itemsize * 8).astype(dtype)  # static_cast, as the kernel


def nearest_axis(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    """Source index of each output position along one axis (GetNearestNeighbor)."""
    scale = _float_scale(in_size, out_size, align)
    src = (np.arange(out_size, dtype=np.float32) + np.float32(0.5 if half else 0.0)) * scale
    index = quant.round_half_away(src) if align else np.floor(src)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half else index


@register("RESIZE_NEAREST_NEIGHBOR")
def resize_nearest_neighbor(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Nearest-neighbour resize to ``size``: a gather of whole pixels, any supported type."""
    x = inputs[0]
    oh, ow, align, half = _prepare(node, x, inputs[1])
    _, h, w, _ = x.shape
    return np.ascontiguousarray(
        _gather(x, nearest_axis(h, oh, align, half), nearest_axis(w, ow, align, half))
    )
