"""The convolutions: CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D.

Op layer: CONV_2D (filter [depth_out, h, w, depth_in]; a filter of depth depth_in / G computes
G groups, which is GROUPED_CONV_2D), DEPTHWISE_CONV_2D (filter [1, h, w, depth_in * multiplier])
and TRANSPOSE_CONV (TFLite's operand order: output shape, filter, input, bias), all in NHWC; an
NCHW operation computes between transposes. Quantized operands whose filter the op layer takes
in the other signedness move there first (``quantized.quantized_domain``).
"""
from __future__ import annotations

import numpy as np

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.quantized import check_bias_scale, quantized_domain
from teflon_py.nnapi.operations.window import scalar_types, window_params
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.common import Padding
from teflon_py.ops.conv import ConvAttrs, DepthwiseConvAttrs, TransposeConvAttrs

#: input type -> (filter types, bias type)
CONV_TYPES = {
    T.TENSOR_FLOAT32: ((T.TENSOR_FLOAT32,), T.TENSOR_FLOAT32),
    T.TENSOR_FLOAT16: ((T.TENSOR_FLOAT16,), T.TENSOR_FLOAT16),
    T.TENSOR_QUANT8_ASYMM: ((T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL), T.TENSOR_INT32),
    T.TENSOR_QUANT8_ASYMM_SIGNED: ((T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM_PER_CHANNEL), T.TENSOR_INT32),
}
_SINCE_1 = {T.TENSOR_FLOAT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
_SINCE_3 = {T.TENSOR_FLOAT32: 3, T.TENSOR_QUANT8_ASYMM: 3, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
#: the feature level that added each input type
LEVELS = {Op.CONV_2D: _SINCE_1, Op.DEPTHWISE_CONV_2D: _SINCE_1, Op.GROUPED_CONV_2D: _SINCE_3,
          Op.TRANSPOSE_CONV_2D: _SINCE_3}
#: the filter dimension a per-channel filter's scales run along (the output channels)
CHANNEL_DIM = {Op.CONV_2D: 0, Op.DEPTHWISE_CONV_2D: 3, Op.GROUPED_CONV_2D: 0, Op.TRANSPOSE_CONV_2D: 0}


@signature(Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D)
def conv_signature(s: Sig) -> None:
    """Input, filter, bias, then the window scalars: DEPTHWISE_CONV_2D's depth multiplier and
    GROUPED_CONV_2D's group count after the strides; GROUPED_CONV_2D requires the layout flag and
    has no dilation."""
    t = s.input_type(0)
    s.supported(t, LEVELS[s.op])
    filters, bias = CONV_TYPES[t]
    grouped = s.op == Op.GROUPED_CONV_2D
    scalars, optional = scalar_types(s.inputs, 3, 0 if s.op == Op.CONV_2D else 1, dilation=not grouped,
                                     layout_required=grouped)
    s.expect([t, filters, bias, *scalars], [t], optional=optional)


@signature(Op.TRANSPOSE_CONV_2D)
def transpose_conv_signature(s: Sig) -> None:
    """Explicit padding (11 inputs: four pads, strides, FuseCode, layout) or the output-shape
    tensor with a PaddingCode (9 inputs), as Android's reference tells them apart."""
    t = s.input_type(0)
    s.supported(t, LEVELS[s.op])
    filters, bias = CONV_TYPES[t]
    if s.n_in == 9:
        scalars = [T.TENSOR_INT32, T.INT32, T.INT32, T.INT32, T.INT32, T.BOOL]
    else:
        scalars = [T.INT32] * 7 + [T.BOOL]
    s.expect([t, filters, bias, *scalars], [t])


def _check_operands(c: Call) -> tuple[tuple[int, int, int, int], tuple[int, ...]]:
    """Ranks (4-D input and filter, 1-D bias), a per-channel filter's channel dimension and the
    bias scale; returns the input's NHWC dimensions (layout from ``nchw``) and the filter's."""
    if c.rank(0) != 4 or c.rank(1) != 4 or c.rank(2) != 1:
        raise c.error(f"takes a 4-D input and filter and a 1-D bias, got ranks {c.rank(0)}, {c.rank(1)}, {c.rank(2)}")
    want = CHANNEL_DIM[c.op]
    if c.type(1) == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and c.operand(1).channel_dim != want:
        raise c.error(f"a per-channel filter's channel dimension must be {want}, got {c.operand(1).channel_dim}", 1)
    check_bias_scale(c, 0, 1, 2)
    return c.shape(0), c.shape(1)


def _nhwc_dims(shape: tuple[int, ...], nchw: bool) -> tuple[int, int, int, int]:
    n, a, b, d = shape
    return (n, b, d, a) if nchw else (n, a, b, d)


def _check_bias(c: Call, channels: int) -> None:
    if c.shape(2)[0] != channels:
        raise c.error(f"the bias has {c.shape(2)[0]} values, the filter {channels} output channels", 2)


def _emit(c: Call, opcode: str, attrs: object, nchw: bool, transpose_shape: int | None = None) -> None:
    """The op in NHWC, in the quantized domain the op layer computes the filter's types in."""
    x = c.nhwc(c.input(0), nchw)
    y = c.nhwc_output(0, nchw)
    x, w, y = quantized_domain(c, x, c.input(1), y)
    if transpose_shape is None:
        c.emit(opcode, attrs, [x, w, c.input(2)], [y])
    else:
        c.emit(opcode, attrs, [transpose_shape, w, x, c.input(2)], [y])


@lowering(Op.CONV_2D)
def lower_conv(c: Call) -> None:
    p = window_params(c, 3, dilation=True)
    x, w = _check_operands(c)
    cin = _nhwc_dims(x, p.nchw)[3]
    if w[3] != cin:
        raise c.error(f"the filter's depth {w[3]} differs from the input's {cin} channels", 1)
    _check_bias(c, w[0])
    attrs = ConvAttrs(padding=p.padding, strides=p.strides, dilations=p.dilations, activation=p.activation)
    _emit(c, "CONV_2D", attrs, p.nchw)


@lowering(Op.DEPTHWISE_CONV_2D)
def lower_depthwise_conv(c: Call) -> None:
    p = window_params(c, 3, extra=1, dilation=True)
    (multiplier,) = p.extra
    x, w = _check_operands(c)
    cin = _nhwc_dims(x, p.nchw)[3]
    if multiplier < 1:
        raise c.error(f"the depth multiplier must be >= 1, got {multiplier}", p.extra_at)
    if w[0] != 1:
        raise c.error(f"the filter must be [1, height, width, depth_out], got {list(w)}", 1)
    if w[3] != cin * multiplier:
        raise c.error(f"the filter's depth_out {w[3]} is not the input's {cin} channels x depth multiplier "
                      f"{multiplier}", 1)
    _check_bias(c, w[3])
    attrs = DepthwiseConvAttrs(padding=p.padding, strides=p.strides, dilations=p.dilations,
                               depth_multiplier=multiplier, activation=p.activation)
    _emit(c, "DEPTHWISE_CONV_2D", attrs, p.nchw)


@lowering(Op.GROUPED_CONV_2D)
def lower_grouped_conv(c: Call) -> None:
    """The op layer's CONV_2D computes ``depth_in / filter depth`` groups, output channel ``o``
    in group ``o // (depth_out / groups)``: the spec's grouping."""
    p = window_params(c, 3, extra=1)
    (groups,) = p.extra
    x, w = _check_operands(c)
    cin = _nhwc_dims(x, p.nchw)[3]
    if groups < 1:
        raise c.error(f"the number of groups must be >= 1, got {groups}", p.extra_at)
    if w[3] * groups != cin:
        raise c.error(f"the input's {cin} channels are not {groups} groups of the filter's depth {w[3]}", 1)
    if w[0] % groups:
        raise c.error(f"the filter's depth_out {w[0]} is not divisible by the {groups} groups", 1)
    _check_bias(c, w[0])
    attrs = ConvAttrs(padding=p.padding, strides=p.strides, activation=p.activation)
    _emit(c, "CONV_2D", attrs, p.nchw)


def transpose_same_padding(out: int, stride: int, kernel: int) -> tuple[int, int]:
    """PADDING_SAME of a transpose convolution along one axis, from the output size the shape
    tensor gives: Android's calculateExplicitPaddingTransposeConv (the tail fits the last stride
    tightly, so it may be negative)."""
    tmp = ((out + stride - 1) // stride - 1) * stride + kernel
    head = (tmp - out) // 2 if tmp > out else 0
    return head, tmp - out - head


@lowering(Op.TRANSPOSE_CONV_2D)
def lower_transpose_conv(c: Call) -> None:
    """Op layer TRANSPOSE_CONV with explicit per-side padding: its kernels crop the scattered
    output at the top / left padding and take the output size from the shape tensor, which is
    Android's ``stride * (in - 1) + filter - head - tail`` (computed here in both forms: in the
    implicit one the shape tensor only sets the padding, as in the reference)."""
    implicit = c.n_in == 9
    k = 5 if implicit else 7
    stride_w, stride_h = c.scalar(k), c.scalar(k + 1)
    if stride_w < 1 or stride_h < 1:
        raise c.error(f"strides (width {stride_w}, height {stride_h}) must be >= 1", k)
    activation = c.fuse(k + 2)
    nchw = c.nchw(k + 3)
    x, w = _check_operands(c)
    n, h, wd, cin = _nhwc_dims(x, nchw)
    cout, kh, kw, depth = w
    if depth != cin:
        raise c.error(f"the filter's depth {depth} differs from the input's {cin} channels", 1)
    _check_bias(c, cout)
    if implicit:
        shape = c.value(3).reshape(-1) if c.rank(3) == 1 else None
        if shape is None or shape.size != 4:
            raise c.error(f"the output shape must be a 1-D tensor of 4 values, got shape {list(c.shape(3))}", 3)
        out_h, out_w = (int(shape[2]), int(shape[3])) if nchw else (int(shape[1]), int(shape[2]))
        if c.padding_code(4).same:
            (top, bottom), (left, right) = (transpose_same_padding(out_h, stride_h, kh),
                                            transpose_same_padding(out_w, stride_w, kw))
        else:
            top = bottom = left = right = 0
    else:
        left, right, top, bottom = (c.scalar(i) for i in range(3, 7))
        if left < 0 or top < 0:  # the reference lets right and bottom go negative (a longer output)
            raise c.error(f"the left and top paddings must be >= 0, got {left} and {top}", 3 if left < 0 else 5)
    oh, ow = stride_h * (h - 1) + kh - top - bottom, stride_w * (wd - 1) + kw - left - right
    if oh < 1 or ow < 1:
        raise c.error(f"the output would be {oh}x{ow}: the paddings (left {left}, right {right}, top {top}, "
                      f"bottom {bottom}) exceed the {stride_h * (h - 1) + kh}x{stride_w * (wd - 1) + kw} "
                      "scattered output")
    attrs = TransposeConvAttrs(padding=Padding(((top, bottom), (left, right))), strides=(stride_h, stride_w),
                               activation=activation)
    shape_t = c.const(np.array([n, oh, ow, cout], np.int32), what="output shape")
    _emit(c, "TRANSPOSE_CONV", attrs, nchw, transpose_shape=shape_t)

