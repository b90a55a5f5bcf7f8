"""RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR (op layer: the TFLite ops of the same names, in NHWC
between transposes for the NCHW layout).

The output size is given as INT32 width and height, or (since feature level 3) as scale factors:
FLOAT16 for a float16 input, else FLOAT32, the size then ``floor(float32(size) * float32(scale))``
as Android's reference implementation computes it (ResizeImageOps.cpp, prepare). Its nearest-
neighbour kernel and TFLite's pick the same pixels. For QUANT8_ASYMM_SIGNED bilinear Android
calls TFLite's generic template (a float blend) where LiteRT's int8 kernel blends in 1/1024
fixed point; the op layer computes LiteRT's, which can differ from Android's by one step.
"""
from __future__ import annotations

import math

import numpy as np

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.blocks import nhwc_shape
from teflon_py.nnapi.operations.copies import same_quantization
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.resize import ResizeAttrs

LEVELS = {
    Op.RESIZE_BILINEAR: {T.TENSOR_FLOAT32: 1, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM: 3,
                         T.TENSOR_QUANT8_ASYMM_SIGNED: 4},
    Op.RESIZE_NEAREST_NEIGHBOR: {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM: 3,
                                 T.TENSOR_QUANT8_ASYMM_SIGNED: 4},
}


@signature(Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR)
def resize_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVELS[s.op])
    by = s.input_type(1)
    scale = T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32
    if by not in (T.INT32, scale):
        raise s.error(f"input 1 has type {by.name}; the size is given as INT32 or, for this input type, "
                      f"{scale.name} scales")
    # the layout flag is optional for RESIZE_BILINEAR only (it predates it); the corner modes for both
    optional = 3 if s.op == Op.RESIZE_BILINEAR else 2
    s.expect([t, by, by, T.BOOL, T.BOOL, T.BOOL], [t], optional=optional, level=1 if by == T.INT32 else 3)


def output_size(c: Call, k: int, size: int) -> int:
    """The output extent input ``k`` gives for an input extent ``size``: itself, or by a scale."""
    if c.type(k) == T.INT32:
        out = c.scalar(k)
    else:
        out = math.floor(float(np.float32(size) * np.float32(c.scalar(k))))
    if out < 1:
        raise c.error(f"gives an output size of {out}, which must be positive", k)
    return out


@lowering(Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR)
def lower_resize(c: Call) -> None:
    nchw = c.nchw(3)
    _, h, w, _ = nhwc_shape(c, 0, nchw)
    align, half = bool(c.scalar(4, False)), bool(c.scalar(5, False))
    if align and half:
        raise c.error("half_pixel_centers takes align_corners false", 5)
    out_w, out_h = output_size(c, 1, w), output_size(c, 2, h)
    same_quantization(c)
    size = c.const(np.array([out_h, out_w], np.int32), what="size")
    c.emit(c.op.name, ResizeAttrs(align, half), [c.nhwc(c.input(0), nchw), size], [c.nhwc_output(0, nchw)])
