"""The pool family: AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on NHWC tensors.

Windows are placed by ``ops.common.window`` (TensorFlow SAME or explicit padding); only in-bounds
elements take part. The shared rules (``pool_geometry``, ``pool_types_reason``, ``empty_window``)
are what the NumPy fallback and the OpenCL lowerings both call.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from teflon_py.errors import ModelError
from teflon_py.ops.common import NO_ACTIVATION, FusedActivation, Padding, window
from teflon_py.ops.registry import Inputs, Meta, define

QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


@dataclass(frozen=True)
class PoolAttrs:
    """A 2-D pool: filter (height, width), strides (height, width), padding, fused activation."""

    filter: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    padding: Padding = field(default_factory=Padding.valid)
    activation: FusedActivation = NO_ACTIVATION


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


def geometry(padding: Padding, height: int, width: int, filt: tuple[int, int],
             strides: tuple[int, int]) -> PoolGeometry:
    """The windows of a pool over a ``height`` x ``width`` input (no checks)."""
    wh = window(height, filt[0], strides[0], 1, padding, 0)
    ww = window(width, filt[1], strides[1], 1, padding, 1)
    return PoolGeometry(wh.out, ww.out, wh.before, ww.before, filt[0], filt[1], strides[0], strides[1])


def window_reason(attrs: PoolAttrs, height: int, width: int) -> str | None:
    """Why the pool's windows break LiteRT's rules over this input (non-positive filter or
    strides, no output), or None."""
    (fh, fw), (sh, sw) = attrs.filter, attrs.strides
    if min(fh, fw, sh, sw) <= 0:
        return f"filter {fh}x{fw} and strides {sh}x{sw} must be positive"
    g = geometry(attrs.padding, height, width, attrs.filter, attrs.strides)
    if g.out_h <= 0 or g.out_w <= 0:
        return f"filter {fh}x{fw} does not fit the {height}x{width} input"
    return None


def pool_geometry(attrs: PoolAttrs, height: int, width: int, label: str) -> PoolGeometry:
    """The pool's windows, with LiteRT's parameter checks (ModelError where the model is wrong)."""
    reason = window_reason(attrs, height, width)
    if reason:
        raise ModelError(f"{label}: {reason}")
    return geometry(attrs.padding, height, width, attrs.filter, attrs.strides)


def window_counts(g: PoolGeometry, height: int, width: int) -> np.ndarray:
    """(out_h, out_w, 1) number of in-bounds elements under each window."""
    y0 = np.arange(g.out_h) * g.stride_h - g.pad_h
    x0 = np.arange(g.out_w) * g.stride_w - g.pad_w
    rows = np.minimum(g.filter_h, height - y0) - np.maximum(0, -y0)
    cols = np.minimum(g.filter_w, width - x0) - np.maximum(0, -x0)
    return (np.maximum(rows, 0)[:, None] * np.maximum(cols, 0)[None, :])[:, :, None]


def empty_window(g: PoolGeometry, height: int, width: int) -> bool:
    """Whether some window lies entirely in the padding (an average would divide by zero)."""
    return not window_counts(g, height, width).all()


def pool_types_reason(name: str, x_dtype: np.dtype, y_dtype: np.dtype) -> str | None:
    """Why the pool cannot take these input / output types (LiteRT's Prepare), or None."""
    x_dtype, y_dtype = np.dtype(x_dtype), np.dtype(y_dtype)
    if x_dtype != y_dtype:
        return f"input type {x_dtype} differs from output type {y_dtype}"
    if name == "L2_POOL_2D":
        if y_dtype != np.float32:
            return f"type {y_dtype} is not supported (LiteRT's L2_POOL_2D is float32 only)"
    elif y_dtype != np.float32 and y_dtype not in QUANTIZED:
        return f"type {y_dtype} is not supported"
    return None


def _infer(name: str):
    def infer(attrs: PoolAttrs, ins: Inputs) -> list[Meta]:
        x, y = ins[0], ins.outputs[0]
        if x is None:
            raise ins.error("input 0 is missing")
        if len(x.shape) != 4:
            raise ins.error(f"input must be 4-D NHWC, got shape {tuple(x.shape)}")
        reason = pool_types_reason(name, x.dtype, y.dtype)
        if reason:
            raise ins.error(reason)
        if np.dtype(y.dtype) != np.float32 and y.quantization is None:
            raise ins.error(f"quantized {y.dtype} output needs quantization parameters")
        n, h, w, c = x.shape
        g = pool_geometry(attrs, h, w, ins.label)
        return [Meta((n, g.out_h, g.out_w, c), np.dtype(y.dtype))]

    return infer


for _name in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
    define(_name, attrs=PoolAttrs)(_infer(_name))
