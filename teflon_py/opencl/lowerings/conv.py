"""CONV_2D and DEPTHWISE_CONV_2D: register-blocked kernels (1x1 stride-1 convolutions as GEMM)."""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.registry import EmitContext, activation_reason, lowering, options
from teflon_py.tflite.options import Conv2DOptions, DepthwiseConv2DOptions


def _geometry_reason(graph: ir.Graph, op: ir.Operation, opts: object, kh: int, kw: int) -> str | None:
    """Strides, dilations, activation and the output shape against TFLite's arithmetic."""
    stride = (opts.stride_h, opts.stride_w)
    dilation = (opts.dilation_h_factor, opts.dilation_w_factor)
    if min(stride) < 1 or min(dilation) < 1:
        return f"strides {stride} and dilations {dilation} must be at least 1"
    reason = activation_reason(opts.fused_activation_function)
    if reason:
        return reason
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(x.shape) != 4 or len(y.shape) != 4:
        return "input and output must be 4-D (NHWC)"
    wh = kernels.window(x.shape[1], kh, stride[0], dilation[0], opts.padding)
    ww = kernels.window(x.shape[2], kw, stride[1], dilation[1], opts.padding)
    if (wh.out, ww.out) != tuple(y.shape[1:3]) or y.shape[0] != x.shape[0] or min(wh.out, ww.out) < 1:
        return f"output shape {list(y.shape)} does not follow from input {list(x.shape)} and the options"
    return None


def _bias_reason(graph: ir.Graph, op: ir.Operation, channels: int) -> str | None:
    bias = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] != ir.NO_TENSOR else None
    if bias is not None and bias.data.size != channels:
        return f"bias has {bias.data.size} values for {channels} channels"
    return None


def _bias(ctx: EmitContext, op: ir.Operation) -> np.ndarray | None:
    return ctx.constant(op.inputs[2]) if len(op.inputs) > 2 else None


def check_conv_2d(graph: ir.Graph, op: ir.Operation) -> str | None:
    opts = options(op, Conv2DOptions)
    x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    if len(w.shape) != 4 or len(x.shape) != 4:
        return "input and filter must be 4-D"
    if w.shape[3] != x.shape[3]:
        return f"grouped convolution (filter depth {w.shape[3]}, input depth {x.shape[3]}) not supported yet"
    if graph.tensors[op.outputs[0]].shape[-1] != w.shape[0]:
        return "output channels differ from the filter's"
    return _geometry_reason(graph, op, opts, w.shape[1], w.shape[2]) or _bias_reason(graph, op, w.shape[0])


@lowering("CONV_2D", check=check_conv_2d, constants=(1, 2), fuses_activation=True, folds_pad=True)
def conv_2d(ctx: EmitContext, op: ir.Operation) -> None:
    """Implicit-GEMM convolution (``conv2d.cl``), or ``gemm.cl`` over pixels for 1x1 stride 1;
    an ADD that ``compiled.plan_residuals`` folded into it is added in the epilogue."""
    opts = options(op, Conv2DOptions)
    x = ctx.input(op)
    residual = ctx.residual(op) if hasattr(ctx, "residual") else None  # a following ADD folded in
    spec = kernels.conv2d_spec(ctx.shape(x), ctx.constant(op.inputs[1]), _bias(ctx, op),
                               stride=(opts.stride_h, opts.stride_w),
                               dilation=(opts.dilation_h_factor, opts.dilation_w_factor),
                               padding=opts.padding, activation=ctx.clamp(op), pads=ctx.pads(op),
                               residual=residual.clamp if residual is not None else None)
    if residual is not None:
        ctx.launch(spec, input=x, output=ctx.output(op), residual=residual.tensor)
    else:
        ctx.launch(spec, input=x, output=ctx.output(op))


def check_depthwise_conv_2d(graph: ir.Graph, op: ir.Operation) -> str | None:
    opts = options(op, DepthwiseConv2DOptions)
    x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    if len(w.shape) != 4 or w.shape[0] != 1:
        return f"filter must be [1, KH, KW, C*multiplier], got {list(w.shape)}"
    if len(x.shape) != 4:
        return "input must be 4-D (NHWC)"
    oc, c = w.shape[3], x.shape[3]
    if oc % c or graph.tensors[op.outputs[0]].shape[-1] != oc:
        return f"filter channels {oc} are not a multiple of input channels {c}, or differ from the output's"
    return _geometry_reason(graph, op, opts, w.shape[1], w.shape[2]) or _bias_reason(graph, op, oc)


@lowering("DEPTHWISE_CONV_2D", check=check_depthwise_conv_2d, constants=(1, 2), fuses_activation=True,
          folds_pad=True)
def depthwise_conv_2d(ctx: EmitContext, op: ir.Operation) -> None:
    """16 channels x a row of pixels per work-item (``depthwise.cl``); any depth multiplier."""
    opts = options(op, DepthwiseConv2DOptions)
    x = ctx.input(op)
    w = ctx.constant(op.inputs[1])
    shape = ctx.shape(x)
    spec = kernels.depthwise_spec(shape, w, _bias(ctx, op), depth_multiplier=w.shape[3] // shape[3],
                                  stride=(opts.stride_h, opts.stride_w),
                                  dilation=(opts.dilation_h_factor, opts.dilation_w_factor),
                                  padding=opts.padding, activation=ctx.clamp(op), pads=ctx.pads(op))
    ctx.launch(spec, input=x, output=ctx.output(op))
