"""CONV_2D and DEPTHWISE_CONV_2D: register-blocked kernels (1x1 stride-1 convolutions as GEMM).

The checks are shared with the int8 / uint8 lowerings (``qconv``): ``check_conv_2d`` and
``check_depthwise_conv_2d`` pick the quantized rules by the output type.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels import depthwise_specs, dwpw_specs, gpu_small, gpu_specs
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.channel_specs import channel_map_spec
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops import conv as ops_conv
from teflon_py.ops.conv import ConvAttrs, DepthwiseConvAttrs
from teflon_py.ops.elementwise import activation_reason


def geometry_reason(attrs: ConvAttrs | DepthwiseConvAttrs, tensors: OpTensors, kh: int, kw: int) -> str | None:
    """Strides, dilations, activation and the output shape against the op layer's windows."""
    reason = activation_reason(attrs.activation)
    if reason:
        return reason
    x, y = tensors.inputs[0].shape, tensors.outputs[0].shape
    if len(x) != 4 or len(y) != 4:
        return "input and output must be 4-D (NHWC)"
    reason = ops_conv.conv_window_reason(attrs, x[1], x[2], kh, kw) or kernels.index_range_reason(
        (*attrs.strides, *attrs.dilations))
    if reason:
        return reason
    wh, ww = ops_conv.windows(attrs, x[1], x[2], kh, kw)
    if (wh.out, ww.out) != tuple(y[1:3]) or y[0] != x[0]:
        return f"output shape {list(y)} does not follow from input {list(x)} and the attributes"
    return None


def bias_reason(tensors: OpTensors, channels: int) -> str | None:
    bias = tensors.input(2)
    if bias is not None and bias.data is not None and bias.data.size != channels:
        return f"bias has {bias.data.size} values for {channels} channels"
    return None


def _quantized_reason(tensors: OpTensors) -> str | None:
    """LiteRT's type and quantization rules (the fallback's), for an int8 / uint8 conv."""
    x, w, b, y = tensors.inputs[0], tensors.inputs[1], tensors.input(2), tensors.outputs[0]
    return ops_conv.conv_types_reason(x, w, b, y)


def _is_quantized(tensors: OpTensors) -> bool:
    return np.dtype(tensors.outputs[0].dtype).kind != "f"


def check_conv_2d(attrs: ConvAttrs, tensors: OpTensors, caps: object) -> str | None:
    """CONV_2D on either path: float (no groups) or int8 / uint8 (groups, LiteRT's zero points)."""
    quantized = _is_quantized(tensors)
    if quantized:
        reason = _quantized_reason(tensors)
        if reason:
            return reason
    x, w, y = tensors.inputs[0], tensors.inputs[1], tensors.outputs[0]
    if len(w.shape) != 4 or len(x.shape) != 4:
        return "input and filter must be 4-D"
    if quantized:
        reason = ops_conv.conv_groups_reason(tuple(x.shape), tuple(w.shape))
        if reason:
            return reason
    elif w.shape[3] != x.shape[3]:
        return f"grouped convolution (filter depth {w.shape[3]}, input depth {x.shape[3]}) not supported yet"
    if y.shape[-1] != w.shape[0]:
        return "output channels differ from the filter's"
    if quantized:
        if w.dtype == np.int8 and np.any(w.quantization.zero_point != 0):
            return "int8 weights need zero points 0 (LiteRT rejects others)"
        if w.quantization.per_channel and w.quantization.quantized_dimension != 0:
            return "per-channel weights must be quantized along dimension 0"
    return geometry_reason(attrs, tensors, w.shape[1], w.shape[2]) or bias_reason(tensors, w.shape[0])


def check_depthwise_conv_2d(attrs: DepthwiseConvAttrs, tensors: OpTensors, caps: object) -> str | None:
    """DEPTHWISE_CONV_2D on either path (any depth multiplier)."""
    quantized = _is_quantized(tensors)
    if quantized:
        reason = _quantized_reason(tensors)
        if reason:
            return reason
    x, w, y = tensors.inputs[0], tensors.inputs[1], tensors.outputs[0]
    if len(w.shape) != 4 or w.shape[0] != 1:
        return f"filter must be [1, KH, KW, C*multiplier], got {list(w.shape)}"
    if len(x.shape) != 4:
        return "input must be 4-D (NHWC)"
    oc, c = w.shape[3], x.shape[3]
    if c == 0 or oc % c or y.shape[-1] != oc:
        return f"filter channels {oc} are not a multiple of input channels {c}, or differ from the output's"
    reason = ops_conv.depthwise_reason(attrs, tuple(x.shape), tuple(w.shape))
    if reason:
        return reason
    if quantized and w.quantization.per_channel and w.quantization.quantized_dimension != 3:
        return "per-channel weights must be quantized along dimension 3"
    return geometry_reason(attrs, tensors, w.shape[1], w.shape[2]) or bias_reason(tensors, oc)


def _bias(ctx: OpEmit) -> np.ndarray | None:
    b = ctx.operand(2)
    return None if b == ir.NO_TENSOR else ctx.constant(b)


@register("CONV_2D", check=check_conv_2d, constants=(1, 2), fuses_activation=True, folds_pad=True,
          fuses_prelu=True, fuses_swish=True)
def conv_2d(ctx: OpEmit, attrs: ConvAttrs) -> None:
    """Implicit-GEMM convolution (``conv2d.cl``), or ``gemm.cl`` over pixels for 1x1 stride 1
    (the GPU family: both in ``gpu_gemm.cl``); an ADD that ``compiled.plan_residuals`` folded
    into it is added in the epilogue, then a folded PRELU, HARD_SWISH or swish (cpu family). A
    depthwise conv folded into a 1x1 conv (``fusion.plan_depthwise_pointwise``, cpu family) runs
    with it as one ``dwpw.cl`` launch; a channel-wise gate MUL folded into a 1x1 conv
    (``fusion.plan_gate``, cpu family) is the gemm's gated instantiation, reading the MUL's input
    and gate."""
    x = ctx.input()
    gate = ctx.gate()
    bindings: dict[str, int] = {}  # the gate and residual tensors, when folded in
    if gate is not None:
        x = gate.input
        bindings["gate"] = gate.gate
    residual = ctx.residual()  # a following ADD folded in
    res_clamp = residual.clamp if residual is not None else None
    dw = ctx.depthwise()
    if dw is not None:
        x = dw.input
        spec = dwpw_specs.dwpw_spec(ctx.shape(x), dw.weights, dw.bias, ctx.constant(ctx.operand(1)), _bias(ctx),
                                    stride=dw.strides, padding=dw.padding, pads=dw.pads, dw_clamp=dw.clamp,
                                    activation=ctx.clamp(), residual=res_clamp, alpha=ctx.prelu(),
                                    post_act=ctx.post_act(), tiles=ctx.params.tiles)
    else:
        kw = {"stride": attrs.strides, "dilation": attrs.dilations, "padding": attrs.padding,
              "activation": ctx.clamp(), "pads": ctx.pads(), "residual": res_clamp}
        if ctx.params.gpu:
            spec = gpu_specs.conv2d_spec(ctx.params, ctx.shape(x), ctx.constant(ctx.operand(1)), _bias(ctx), **kw)
        else:
            spec = kernels.conv2d_spec(ctx.shape(x), ctx.constant(ctx.operand(1)), _bias(ctx),
                                       tiles=ctx.params.tiles, alpha=ctx.prelu(), post_act=ctx.post_act(),
                                       gate=gate is not None, **kw)
    if residual is not None:
        bindings["residual"] = residual.tensor
    ctx.launch(spec, input=x, output=ctx.output(), **bindings)


@register("DEPTHWISE_CONV_2D", check=check_depthwise_conv_2d, constants=(1, 2), fuses_activation=True,
          folds_pad=True, fuses_prelu=True, fuses_swish=True)
def depthwise_conv_2d(ctx: OpEmit, attrs: DepthwiseConvAttrs) -> None:
    """16 channels x a row of pixels per work-item (``depthwise.cl``), or on the GPU family one
    channel x a small pixel patch per work-item (``gpu_depthwise.cl``); any depth multiplier. A
    1x1 kernel at stride 1 is a per-channel x * w + b over the flat tensor (``channel_map``, on
    the cpu family); a PRELU folded in (cpu family) runs in that launch, or after the others as
    a ``channel_map`` of their output; a folded HARD_SWISH or swish (cpu family) runs in the
    epilogue of each."""
    x = ctx.input()
    w = ctx.constant(ctx.operand(1))
    shape = ctx.shape(x)
    multiplier = w.shape[3] // shape[3]
    slopes, post_act = ctx.prelu(), ctx.post_act()
    if (not ctx.params.gpu and w.shape[1:3] == (1, 1) and multiplier == 1 and tuple(attrs.strides) == (1, 1)
            and ctx.pads() == kernels.NO_PADS):
        spec = channel_map_spec(int(np.prod(shape)), shape[3], weights=w.reshape(-1), bias=_bias(ctx),
                                slopes=slopes, clamp=ctx.clamp(), post_act=post_act)
        ctx.launch(spec, input=x, output=ctx.output())
        return
    kw = {"depth_multiplier": multiplier, "stride": attrs.strides, "dilation": attrs.dilations,
          "padding": attrs.padding, "activation": ctx.clamp(), "pads": ctx.pads()}
    if ctx.params.gpu:
        spec = gpu_small.depthwise_gpu_spec(shape, w, _bias(ctx), params=ctx.params, **kw)
    else:
        spec = depthwise_specs.depthwise_spec(shape, w, _bias(ctx), tiles=ctx.params.tiles, post_act=post_act, **kw)
    if slopes is None:
        ctx.launch(spec, input=x, output=ctx.output())
        return
    out_shape = ctx.shape(ctx.op.outputs[0])
    n = int(np.prod(out_shape))
    y = ctx.scratch(4 * n)
    ctx.launch(spec, input=x, output=y)
    ctx.launch(channel_map_spec(n, out_shape[3], slopes=slopes), input=y, output=ctx.output())
