"""The conv family: CONV_2D and DEPTHWISE_CONV_2D attributes, rules and shape inference.

The shared rules (``conv_types_reason``, ``conv_window_reason``, ``conv_shape_reason``,
``depthwise_shape_reason``) are what the NumPy fallback and the OpenCL lowerings both call.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from teflon_py import ir
from teflon_py.ops.common import (
    NO_ACTIVATION,
    Act,
    FusedActivation,
    Padding,
    Requantization,
    Window1D,
    window,
)
from teflon_py.ops.registry import Inputs, Meta, define

#: Fused activations LiteRT's convolutions apply (a clamp).
CLAMPS = (Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1)


@dataclass(frozen=True)
class ConvAttrs:
    """CONV_2D: padding, strides (h, w), dilations (h, w), fused activation, TFLite's bias type."""

    padding: Padding = field(default_factory=Padding.tf_same)
    strides: tuple[int, int] = (1, 1)
    dilations: tuple[int, int] = (1, 1)
    activation: FusedActivation = NO_ACTIVATION
    quantized_bias_type: int = 0
    requantization: Requantization = Requantization.TFLITE


@dataclass(frozen=True)
class DepthwiseConvAttrs:
    """DEPTHWISE_CONV_2D: as CONV_2D, plus the declared depth multiplier (0: not declared)."""

    padding: Padding = field(default_factory=Padding.tf_same)
    strides: tuple[int, int] = (1, 1)
    dilations: tuple[int, int] = (1, 1)
    depth_multiplier: int = 0
    activation: FusedActivation = NO_ACTIVATION
    requantization: Requantization = Requantization.TFLITE


def windows(attrs: ConvAttrs | DepthwiseConvAttrs, height: int, width: int, kh: int,
            kw: int) -> tuple[Window1D, Window1D]:
    """The conv's windows along height and width (no checks)."""
    return (window(height, kh, attrs.strides[0], attrs.dilations[0], attrs.padding, 0),
            window(width, kw, attrs.strides[1], attrs.dilations[1], attrs.padding, 1))


def conv_window_reason(attrs: ConvAttrs | DepthwiseConvAttrs, height: int, width: int, kh: int,
                       kw: int) -> str | None:
    """Why the windows break LiteRT's rules (non-positive strides / dilations, no output), or None."""
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilations
    if min(sh, sw, dh, dw) < 1:
        return f"strides ({sh}, {sw}) and dilations ({dh}, {dw}) must be positive"
    wh, ww = windows(attrs, height, width, kh, kw)
    if wh.out < 1 or ww.out < 1:
        return f"a {kh}x{kw} window does not fit the {height}x{width} input"
    return None


def activation_reason(activation: FusedActivation) -> str | None:
    """Why the convolutions cannot apply this fused activation, or None."""
    if activation.kind in CLAMPS:
        return None
    return f"fused activation {activation.kind.name} is not supported"


def conv_types_fault(x: ir.Tensor, w: ir.Tensor, b: ir.Tensor | None, out: ir.Tensor) -> str | None:
    """Why the types break LiteRT's rules for a conv / FC (it rejects them too), or None; what
    ``conv_types_reason`` adds to this is valid but not computed here."""
    dtype = np.dtype(x.dtype)
    if dtype in (np.int8, np.uint8):
        if w.dtype == np.float32:
            return f"{dtype} input with {w.dtype} weights"
        for t in (x, w, out):
            if t.quantization is None:
                return f"{t.describe()} of type {t.dtype} has no quantization parameters"
        if b is not None and b.dtype != np.int32:
            return f"bias of type {b.dtype}; {dtype} inputs take int32 bias"
    if dtype in (np.float32, np.int8, np.uint8) and out.dtype != dtype:
        return f"output type {out.dtype} differs from input type {dtype}"
    if dtype == np.float32 and w.dtype == np.float32 and b is not None and b.dtype != np.float32:
        return f"bias of type {b.dtype}; float32 inputs take float32 bias"
    return None


def conv_types_reason(x: ir.Tensor, w: ir.Tensor, b: ir.Tensor | None, out: ir.Tensor) -> str | None:
    """Input, weight, bias and output types of a conv / FC as LiteRT accepts them, or why not."""
    dtype = np.dtype(x.dtype)
    if dtype == np.float32:
        if w.dtype != np.float32:
            return f"hybrid float32 input with {w.dtype} weights is not supported"
        want_bias = np.dtype(np.float32)
    elif dtype in (np.int8, np.uint8):
        if w.dtype != dtype:
            return f"{dtype} input with {w.dtype} weights is not supported"
        for t in (x, w, out):
            if t.quantization is None:
                return f"{t.describe()} of type {t.dtype} has no quantization parameters"
        if x.quantization.per_channel or out.quantization.per_channel:
            return "per-channel quantized activations are not supported"
        if dtype == np.uint8 and w.quantization.per_channel:
            return "uint8 weights must be quantized per tensor"
        want_bias = np.dtype(np.int32)
    else:
        return f"{dtype} inputs are not supported (float32, int8, uint8 are)"
    if out.dtype != dtype:
        return f"output type {out.dtype} differs from input type {dtype}"
    if b is not None and b.dtype != want_bias:
        return f"bias of type {b.dtype}; {dtype} inputs take {want_bias} bias"
    return None


def conv_groups_reason(x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> str | None:
    """Why CONV_2D's input and [O, KH, KW, C/G] filter do not form groups, or None."""
    if len(x_shape) != 4 or len(w_shape) != 4:
        return f"needs 4-D input and weights, got {tuple(x_shape)} and {tuple(w_shape)}"
    c, (o, _, _, cg) = x_shape[3], w_shape
    if cg == 0 or c % cg or o % (c // cg):
        return f"{c} input channels and {o} filters of depth {cg} do not form groups"
    return None


def depthwise_reason(attrs: DepthwiseConvAttrs, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> str | None:
    """Why DEPTHWISE_CONV_2D's input and [1, KH, KW, C*M] filter do not fit together, or None."""
    if len(x_shape) != 4 or len(w_shape) != 4 or w_shape[0] != 1:
        return f"needs 4-D input and [1, KH, KW, C*M] weights, got {tuple(x_shape)} and {tuple(w_shape)}"
    c, oc = x_shape[3], w_shape[3]
    if c == 0 or oc % c:
        return f"{oc} output channels are not a multiple of the {c} input channels"
    if attrs.depth_multiplier not in (0, oc // c):
        return f"depth_multiplier {attrs.depth_multiplier} does not match {c} -> {oc} channels"
    return None


def _infer(name: str):
    def infer(attrs: ConvAttrs | DepthwiseConvAttrs, ins: Inputs) -> list[Meta]:
        if len(ins.outputs) != 1:
            raise ins.error(f"takes one output, the model gives {len(ins.outputs)}")
        x, w, y = ins[0], ins[1], ins.outputs[0]
        if x is None or w is None:
            raise ins.error("input and filter are required")
        if name == "CONV_2D":
            reason = conv_groups_reason(tuple(x.shape), tuple(w.shape))
            oc = w.shape[0] if len(w.shape) == 4 else 0
        else:
            reason = depthwise_reason(attrs, tuple(x.shape), tuple(w.shape))
            oc = w.shape[3] if len(w.shape) == 4 else 0
        reason = reason or conv_window_reason(attrs, x.shape[1], x.shape[2], w.shape[1], w.shape[2])
        b = ins[2]
        if not reason and b is not None and math.prod(b.shape) != oc:  # LiteRT: NumElements(bias)
            reason = f"bias {b.describe()} of shape {list(b.shape)} does not match the {oc} output channels"
        if reason:
            raise ins.error(reason)
        wh, ww = windows(attrs, x.shape[1], x.shape[2], w.shape[1], w.shape[2])
        return [Meta((x.shape[0], wh.out, ww.out, oc), np.dtype(y.dtype))]

    return infer


for _name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
    define(_name, attrs=ConvAttrs if _name == "CONV_2D" else DepthwiseConvAttrs)(_infer(_name))


# -- TRANSPOSE_CONV ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransposeConvAttrs:
    """TRANSPOSE_CONV: padding of the forward conv (output -> input), strides, fused activation."""

    padding: Padding = field(default_factory=Padding.tf_same)
    strides: tuple[int, int] = (1, 1)
    activation: FusedActivation = NO_ACTIVATION
    quantized_bias_type: int = 0


def transpose_pads(attrs: TransposeConvAttrs, out_hw: tuple[int, int], kh: int, kw: int) -> tuple[int, int]:
    """Top / left crop of the scattered output: the forward conv's padding over the output."""
    wh = window(out_hw[0], kh, attrs.strides[0], 1, attrs.padding, 0)
    ww = window(out_hw[1], kw, attrs.strides[1], 1, attrs.padding, 1)
    return wh.before, ww.before


def transpose_conv_reason(attrs: TransposeConvAttrs, shape: tuple[int, ...] | None, w: tuple[int, ...],
                          x: tuple[int, ...]) -> str | None:
    """Why the output shape (None: not constant), [O, KH, KW, C] weights and NHWC input of a
    TRANSPOSE_CONV do not fit together, or None."""
    if min(attrs.strides) < 1:
        return f"strides {tuple(attrs.strides)} must be positive"
    if len(x) != 4 or len(w) != 4 or (shape is not None and len(shape) != 4):
        return f"needs 4-D input, weights and output shape, got {tuple(x)}, {tuple(w)}, {shape}"
    if shape is not None and (shape[0] != x[0] or shape[3] != w[0]) or x[3] != w[3]:
        return f"output shape {shape} does not fit input {tuple(x)} and weights {tuple(w)}"
    return None


@define("TRANSPOSE_CONV", attrs=TransposeConvAttrs)
def infer_transpose_conv(attrs: TransposeConvAttrs, ins: Inputs) -> list[Meta]:
    s, w, x, y = ins[0], ins[1], ins[2], ins.outputs[0]
    if s is None or w is None or x is None:
        raise ins.error("output shape, weights and input are required")
    shape = None if s.data is None else tuple(int(v) for v in np.asarray(s.data).reshape(-1))
    reason = transpose_conv_reason(attrs, shape, tuple(w.shape), tuple(x.shape))
    if reason:
        raise ins.error(reason)
    return [Meta(shape, np.dtype(y.dtype))]


# -- CONV_3D -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conv3DAttrs:
    """CONV_3D: padding, strides (d, h, w), dilations (d, h, w), fused activation."""

    padding: Padding = field(default_factory=Padding.tf_same)
    strides: tuple[int, int, int] = (1, 1, 1)
    dilations: tuple[int, int, int] = (1, 1, 1)
    activation: FusedActivation = NO_ACTIVATION


def conv3d_windows(attrs: Conv3DAttrs, spatial: tuple[int, ...], kernel: tuple[int, ...]) -> list[Window1D]:
    """The windows along D, H, W (no checks)."""
    return [window(size, k, s, d, attrs.padding, axis)
            for axis, (size, k, s, d) in enumerate(zip(spatial, kernel, attrs.strides, attrs.dilations))]


def conv3d_reason(attrs: Conv3DAttrs, x: tuple[int, ...], w: tuple[int, ...]) -> str | None:
    """Why CONV_3D's NDHWC input and [KD, KH, KW, C, O] filter break LiteRT's rules, or None."""
    if len(x) != 5 or len(w) != 5:
        return f"needs 5-D input and filter, got {tuple(x)} and {tuple(w)}"
    if x[4] != w[3]:
        return f"input has {x[4]} channels, the filter expects {w[3]}"
    if min(attrs.strides + attrs.dilations) < 1:
        return f"strides {tuple(attrs.strides)} and dilations {tuple(attrs.dilations)} must be positive"
    if any(win.out < 1 for win in conv3d_windows(attrs, tuple(x[1:4]), tuple(w[:3]))):
        return f"a {tuple(w[:3])} filter does not fit the {tuple(x[1:4])} input"
    return None


@define("CONV_3D", attrs=Conv3DAttrs)
def infer_conv_3d(attrs: Conv3DAttrs, ins: Inputs) -> list[Meta]:
    x, w, y = ins[0], ins[1], ins.outputs[0]
    if x is None or w is None:
        raise ins.error("input and filter are required")
    reason = conv3d_reason(attrs, tuple(x.shape), tuple(w.shape))
    if reason:
        raise ins.error(reason)
    outs = conv3d_windows(attrs, tuple(x.shape[1:4]), tuple(w.shape[:3]))
    return [Meta((x.shape[0], *(win.out for win in outs), w.shape[4]), np.dtype(y.dtype))]


# -- MediaPipe's Convolution2DTransposeBias ------------------------------------------------------------


@dataclass(frozen=True)
class TransposeConvBiasAttrs:
    """MediaPipe's Convolution2DTransposeBias (TfLiteTransposeConvParams): SAME or VALID, strides."""

    padding: Padding = field(default_factory=Padding.valid)
    strides: tuple[int, int] = (1, 1)


def transpose_bias_geometry(attrs: TransposeConvBiasAttrs, in_hw: tuple[int, int],
                            k_hw: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """transpose_conv_bias.cc: ((out_h, out_w), (pad_top, pad_left)). With SAME padding the total
    padding is ``max(0, K - (in - 1) % stride - 1)`` (VALID: 0), the output
    ``stride * (in - 1) + K - total`` and the top/left padding ``total // 2``."""
    out, pads = [], []
    for size, k, s in zip(in_hw, k_hw, attrs.strides):
        total = max(0, k - (size - 1) % s - 1) if attrs.padding.same else 0
        out.append(s * (size - 1) + k - total)
        pads.append(total // 2)
    return (out[0], out[1]), (pads[0], pads[1])


def transpose_bias_reason(attrs: TransposeConvBiasAttrs, x: tuple[int, ...], w: tuple[int, ...],
                          b: tuple[int, ...] | None) -> str | None:
    """Why the input, OHWI weights and bias of a Convolution2DTransposeBias do not fit, or None."""
    if min(attrs.strides) < 1:
        return f"strides {tuple(attrs.strides)} must be positive"
    if len(x) != 4 or len(w) != 4 or b is None or len(b) != 1:
        return "needs a 4-D input, 4-D OHWI weights and a 1-D bias"
    if w[3] != x[3] or w[0] != b[0]:
        return f"weights {tuple(w)} do not fit input {tuple(x)} and bias {tuple(b)}"
    return None


@define("Convolution2DTransposeBias", attrs=TransposeConvBiasAttrs)
def infer_transpose_conv_bias(attrs: TransposeConvBiasAttrs, ins: Inputs) -> list[Meta]:
    x, w, b, y = ins[0], ins[1], ins[2], ins.outputs[0]
    if x is None or w is None:
        raise ins.error("input and weights are required")
    reason = transpose_bias_reason(attrs, tuple(x.shape), tuple(w.shape), None if b is None else tuple(b.shape))
    if reason:
        raise ins.error(reason)
    out_hw, _ = transpose_bias_geometry(attrs, (x.shape[1], x.shape[2]), (w.shape[1], w.shape[2]))
    return [Meta((x.shape[0], *out_hw, w.shape[0]), np.dtype(y.dtype))]
