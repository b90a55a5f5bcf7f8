"""The resize family: RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on NHWC tensors, to the size
its second operand holds (new height, new width)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py import ir
from teflon_py.ops.registry import Inputs, Meta, define

TYPES = (np.dtype(np.float32), np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16))


@dataclass(frozen=True)
class ResizeAttrs:
    """The coordinate mode: corners aligned, or half-pixel centres (bilinear: not both)."""

    align_corners: bool = False
    half_pixel_centers: bool = False


def resize_reason(name: str, attrs: ResizeAttrs, x: ir.Tensor, y: ir.Tensor) -> str | None:
    """LiteRT's rules of both resizes on the data: 4-D, a supported type kept by the output,
    and for bilinear not both coordinate modes."""
    if len(x.shape) != 4:
        return f"input must be 4-D NHWC, got shape {tuple(x.shape)}"
    if np.dtype(x.dtype) not in TYPES:
        return f"type {x.dtype} is not supported (float32, uint8, int8, int16 are)"
    if y.dtype != x.dtype:
        return f"output type {y.dtype} differs from input type {x.dtype}"
    if name == "RESIZE_BILINEAR" and attrs.align_corners and attrs.half_pixel_centers:
        return "align_corners and half_pixel_centers cannot both be set"
    return None


def size_reason(size: np.ndarray | None) -> str | None:
    """The size operand's rule: two positive values."""
    if size is None or np.asarray(size).size != 2:
        return "size must hold two values (new height, new width)"
    oh, ow = (int(v) for v in np.asarray(size).reshape(-1))
    if oh < 1 or ow < 1:
        return f"output size {oh}x{ow} must be positive"
    return None


def _infer(name: str):
    def infer(attrs: ResizeAttrs, ins: Inputs) -> list[Meta]:
        x, size, y = ins[0], ins[1], ins.outputs[0]
        if x is None or size is None:
            raise ins.error("input and size are required")
        reason = resize_reason(name, attrs, x, y)
        if reason:
            raise ins.error(reason)
        if size.data is None:
            return [Meta(None, np.dtype(y.dtype))]
        reason = size_reason(size.data)
        if reason:
            raise ins.error(reason)
        oh, ow = (int(v) for v in np.asarray(size.data).reshape(-1))
        return [Meta((x.shape[0], oh, ow, x.shape[3]), np.dtype(y.dtype))]

    return infer


for _name in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
    define(_name, attrs=ResizeAttrs)(_infer(_name))
