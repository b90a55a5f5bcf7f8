"""CONV_2D and DEPTHWISE_CONV_2D: TFLite's reference convolutions, vectorised.

CONV_2D is im2col + one BLAS matmul: the input is padded with its zero point (so a padded tap adds
nothing, as the reference kernels skip taps outside the image), a strided view gathers every
output pixel's window into one row, and the rows are multiplied by the weights, laid out
``[KH*KW*C, O]`` once per node. DEPTHWISE_CONV_2D reduces over no channel, so it accumulates the
KH*KW shifted input slices instead, in the reference kernel's tap order.

Quantized accumulators are exact: a BLAS matmul in floating point adds integers exactly while
every partial sum stays below the mantissa's range, and ``sum |x| * |w| <= max|x| * sum |w|``
bounds them all whatever order BLAS adds in. The plan picks float32 where that bound is below
2^24 and float64 (exact below 2^53, i.e. always for 8-bit operands) otherwise; NumPy's own integer
matmul is not BLAS and ~20x slower. The input zero point is folded into a per-channel offset:
``sum (x - zx) w = sum x w - zx sum w``, so the gather copies raw 8-bit values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from teflon_py import ir, quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops import conv as ops_conv
from teflon_py.ops.common import Requantization

#: Largest integer every float32 partial sum must stay below for exact accumulation.
_FLOAT32_EXACT = 1 << 24


# -- window geometry (ops.common.window) ------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """A 2-D sliding window over NHWC: kernel, strides, dilations, output size, top/left padding."""

    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    oh: int
    ow: int
    pad_top: int
    pad_left: int

    @property
    def span(self) -> tuple[int, int]:
        """Input rows and columns (padding included) the windows of all outputs cover."""
        return (
            (self.oh - 1) * self.sh + (self.kh - 1) * self.dh + 1,
            (self.ow - 1) * self.sw + (self.kw - 1) * self.dw + 1,
        )


def window(node: Node, in_h: int, in_w: int, kh: int, kw: int) -> Window:
    """The window of a CONV_2D / DEPTHWISE_CONV_2D node over an ``in_h`` x ``in_w`` input."""
    attrs = node.attrs
    reason = ops_conv.conv_window_reason(attrs, in_h, in_w, kh, kw)
    if reason:  # strides / dilations below 1, or no output: LiteRT's rules
        raise node.invalid(reason)
    wh, ww = ops_conv.windows(attrs, in_h, in_w, kh, kw)
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilations
    return Window(kh=kh, kw=kw, sh=sh, sw=sw, dh=dh, dw=dw, oh=wh.out, ow=ww.out, pad_top=wh.before,
                  pad_left=ww.before)


def pad_input(x: np.ndarray, win: Window, fill: float) -> np.ndarray:
    """``x`` (NHWC) padded with ``fill`` (or cropped) to exactly the rows and columns ``win`` reads."""
    n, h, w, c = x.shape
    hp, wp = win.span
    top, left = win.pad_top, win.pad_left
    if top == 0 and left == 0 and hp <= h and wp <= w:
        return x[:, :hp, :wp]
    out = np.full((n, hp, wp, c), fill, x.dtype)
    rows, cols = min(h, hp - top), min(w, wp - left)
    out[:, top : top + rows, left : left + cols] = x[:, :rows, :cols]
    return out


def im2col(xp: np.ndarray, win: Window, dtype: np.dtype, groups: int = 1) -> np.ndarray:
    """Padded NHWC input -> ``[G, N*OH*OW, KH*KW*C/G]`` rows in ``dtype``, one gather-and-convert pass.

    Each group's rows hold its own C/G channels of every tap, ordered (KH, KW, C/G) like the weights.
    """
    n, hp, wp, c = xp.shape
    cg = c // groups
    if win.kh == win.kw == 1:
        taps = xp[:, :: win.sh, :: win.sw].reshape(n * win.oh * win.ow, groups, cg).transpose(1, 0, 2)
        return np.asarray(taps, dtype)
    eff_h, eff_w = (win.kh - 1) * win.dh + 1, (win.kw - 1) * win.dw + 1
    views = sliding_window_view(xp.reshape(n, hp, wp, groups, cg), (eff_h, eff_w), axis=(1, 2))
    views = views[:, :: win.sh, :: win.sw, :, :, :: win.dh, :: win.dw]  # N, OH, OW, G, C/G, KH, KW
    cols = np.empty((groups, n, win.oh, win.ow, win.kh, win.kw, cg), dtype)
    cols[...] = views.transpose(3, 0, 1, 2, 5, 6, 4)
    return cols.reshape(groups, n * win.oh * win.ow, win.kh * win.kw * cg)  # explicit: N may be 0


# -- the shared epilogue: bias, requantization, activation -----------------------------------------


@dataclass(frozen=True)
class Plan:
    """Prepare-time constants of one conv / FC node: weights as the kernel multiplies them, epilogue.

    Float: ``offset`` is the float32 bias (or None). Quantized: ``offset`` is the int64 bias minus
    ``input zero point * column sums of the weights``, added to the exact integer accumulator,
    which is requantized into [lo, hi] per output channel: by fixed-point ``multiplier``/``shift``
    (convolutions), or by the float64 ``scale`` (FULLY_CONNECTED; see ``teflon_py.quant``).
    """

    weights: np.ndarray
    compute: np.dtype  # dtype of the gathered input and the matmul
    offset: np.ndarray | None
    out_dtype: np.dtype
    lo: float
    hi: float
    multiplier: np.ndarray | None = None
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None
    scale32: np.ndarray | None = None  # XNNPACK's float32 rule (``ops.common.Requantization``)
    zero_point: int = 0

    @property
    def quantized(self) -> bool:
        return self.multiplier is not None or self.scale is not None or self.scale32 is not None


def check_types(node: Node) -> np.dtype:
    """Input, weight, bias and output types of a conv / FC node as LiteRT accepts them; the input's."""
    b = node.inputs[2] if len(node.inputs) > 2 else None
    fault = ops_conv.conv_types_fault(node.inputs[0], node.inputs[1], b, node.outputs[0])
    if fault:
        raise node.invalid(fault)
    reason = ops_conv.conv_types_reason(node.inputs[0], node.inputs[1], b, node.outputs[0])
    if reason:
        raise node.error(reason)
    return np.dtype(node.inputs[0].dtype)


def activation_bounds(node: Node) -> tuple[float, float] | tuple[int, int]:
    """The fused activation's clamp range in the output's domain (floats, or quantized integers);
    an unbounded float side is -FLT_MAX / FLT_MAX (TFLite's CalculateActivationRange), so
    infinities come out as the largest finite floats, and NaN stays."""
    out = node.outputs[0]
    activation = node.attrs.activation
    reason = ops_conv.activation_reason(activation)
    if reason:
        raise node.error(reason)
    if out.dtype == np.float32:
        lo, hi = activation.range(out.dtype)
        big = float(np.finfo(np.float32).max)
        return max(lo, -big), min(hi, big)
    return activation.range(out.dtype, out.scale, out.zero_point)


def weight_offset(node: Node, w: ir.Tensor, ignore_zero_point: bool) -> np.ndarray | int:
    """The weight zero point(s) to subtract, broadcast along the quantized dimension.

    LiteRT's int8 DEPTHWISE_CONV_2D and per-channel FULLY_CONNECTED kernels never read the
    weights' zero points (they accept nonzero ones); ``ignore_zero_point`` mirrors that. int8
    CONV_2D rejects nonzero ones at prepare; uint8 and per-tensor int8 FC subtract them.
    """
    if ignore_zero_point:
        return 0
    zp = np.asarray(w.quantization.zero_point, np.int64)
    if zp.size == 1:
        return int(zp[0])
    shape = [1] * len(w.shape)
    shape[w.quantization.quantized_dimension] = zp.size
    return zp.reshape(shape)


def compute_dtype(bound: int) -> np.dtype:
    """float32 if every partial sum of the integer dot products stays below 2^24 (exact), else float64."""
    return np.dtype(np.float32) if bound < _FLOAT32_EXACT else np.dtype(np.float64)


def float_plan(node: Node, weights: np.ndarray, bias: np.ndarray | None) -> Plan:
    """Plan of a float32 node: weights as given, float32 bias, float activation range."""
    lo, hi = activation_bounds(node)
    offset = None if bias is None else np.asarray(bias, np.float32)
    return Plan(
        np.ascontiguousarray(weights, np.float32), np.dtype(np.float32), offset, np.dtype(np.float32), lo, hi
    )


def quantized_plan(
    node: Node,
    weights: np.ndarray,
    bias: np.ndarray | None,
    colsum: np.ndarray,
    bound: int,
    input_offset: int,
) -> Plan:
    """Plan of a quantized node from the zero-point-free integer weights (as LiteRT's Prepare)."""
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    lo, hi = activation_bounds(node)
    offset = -np.int64(input_offset) * colsum.astype(np.int64)
    if bias is not None:
        offset = offset + np.asarray(bias, np.int64).reshape(-1)
    dtype = compute_dtype(bound)
    requant: dict = {}
    if getattr(node.attrs, "requantization", Requantization.TFLITE) == Requantization.FLOAT32:
        requant["scale32"] = quant.float32_output_scales(x, w, out)
    elif node.op.opcode == "FULLY_CONNECTED":
        requant["scale"] = quant.fully_connected_output_scales(x, w, out)
    else:
        multiplier, shift = quant.conv_output_multipliers(node.op.opcode, x, w, out)
        requant.update(multiplier=multiplier.astype(np.int64), shift=shift.astype(np.int64))
    return Plan(
        np.ascontiguousarray(weights, dtype),
        dtype,
        offset,
        np.dtype(out.dtype),
        lo,
        hi,
        zero_point=out.zero_point,
        **requant,
    )


def epilogue(acc: np.ndarray, plan: Plan) -> np.ndarray:
    """Accumulators (last axis = output channels) -> outputs: bias, requantization, activation."""
    if not plan.quantized:
        if plan.offset is not None:
            acc += plan.offset
        if np.isfinite(plan.lo) or np.isfinite(plan.hi):
            np.clip(acc, plan.lo, plan.hi, out=acc)
        return acc.astype(np.float32, copy=False)
    total = acc.astype(np.int64)  # exact: the float accumulators hold integers
    total += plan.offset
    if plan.scale32 is not None:
        return quant.requantize_float32(total, plan.scale32, plan.zero_point, plan.lo, plan.hi, plan.out_dtype)
    if plan.scale is not None:
        return quant.requantize_scaled(total, plan.scale, plan.zero_point, plan.lo, plan.hi, plan.out_dtype)
    return quant.requantize(
        total, plan.multiplier, plan.shift, plan.zero_point, plan.lo, plan.hi, plan.out_dtype
    )


def input_bound(dtype: np.dtype, zero_point_folded: bool, zero_point: int = 0) -> int:
    """Largest |input value| the accumulation multiplies: raw 8-bit values, or ``x - zero point``."""
    qmin, qmax = quant.QRANGE[np.dtype(dtype)]
    if zero_point_folded:
        return max(-qmin, qmax)
    return max(qmax - zero_point, zero_point - qmin)


def memo_plan(
    node: Node, inputs: Sequence[np.ndarray | None], build: Callable[[np.ndarray, np.ndarray | None], Plan]
) -> Plan:
    """``build(weights, bias)`` once per node when weights and bias are constants, else per call."""
    w, b = inputs[1], inputs[2] if len(inputs) > 2 else None
    constant = all(t is None or t.is_constant for t in node.inputs[1:3])
    if constant:
        return node.memo("plan", lambda: build(w, b))
    return build(w, b)


# -- CONV_2D ---------------------------------------------------------------------------------------


def _conv_plan(node: Node, w: np.ndarray, b: np.ndarray | None, groups: int) -> Plan:
    """CONV_2D weights [O, KH, KW, C/G] -> [G, KH*KW*C/G, O/G] and the epilogue constants."""
    o = w.shape[0]
    if check_types(node) == np.float32:
        return float_plan(node, w.reshape(groups, o // groups, -1).transpose(0, 2, 1), b)
    dtype = np.dtype(node.inputs[0].dtype)
    wt = node.inputs[1]
    if dtype == np.int8 and np.any(wt.quantization.zero_point != 0):
        raise node.invalid(f"{wt.describe()}: int8 weights need zero points 0 (LiteRT's conv.cc rejects others)")
    wq = (np.asarray(w, np.int64) - weight_offset(node, wt, ignore_zero_point=False)).reshape(o, -1)
    bound = input_bound(dtype, zero_point_folded=True) * int(np.abs(wq).sum(axis=1).max(initial=0))
    weights = wq.reshape(groups, o // groups, -1).transpose(0, 2, 1)
    return quantized_plan(node, weights, b, wq.sum(axis=1), bound, node.inputs[0].zero_point)


@register("CONV_2D")
def conv_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """CONV_2D (NHWC input, OHWI weights, bias): im2col + one matmul per group + epilogue.

    Grouped convolution (weights with C/G input channels) as LiteRT's reference kernel: output
    channel ``oc`` belongs to group ``oc // (O/G)`` and reads that group's input channels.
    """
    x, w = inputs[0], inputs[1]
    reason = ops_conv.conv_groups_reason(x.shape, w.shape)
    if reason:
        raise node.error(reason)
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    groups = c // cg
    plan = memo_plan(node, inputs, lambda w_, b_: _conv_plan(node, w_, b_, groups))
    win = window(node, h, wd, kh, kw)
    fill = node.inputs[0].zero_point if plan.quantized else 0.0
    acc = im2col(pad_input(x, win, fill), win, plan.compute, groups) @ plan.weights  # G, P, O/G
    acc = acc[0] if groups == 1 else acc.transpose(1, 0, 2).reshape(-1, o)
    return epilogue(acc, plan).reshape(n, win.oh, win.ow, o)


# -- DEPTHWISE_CONV_2D -----------------------------------------------------------------------------


def _depthwise_plan(node: Node, w: np.ndarray, b: np.ndarray | None) -> Plan:
    """DEPTHWISE weights [1, KH, KW, C*M] -> [KH, KW, C*M] and the epilogue constants.

    The input zero point is subtracted from the input instead of folded (no matmul here), so the
    exactness bound uses ``|x - zx|``.
    """
    if check_types(node) == np.float32:
        return float_plan(node, w[0], b)
    dtype = np.dtype(node.inputs[0].dtype)
    offset = weight_offset(node, node.inputs[1], ignore_zero_point=dtype == np.int8)
    wq = (np.asarray(w, np.int64) - offset)[0]
    reach = input_bound(dtype, zero_point_folded=False, zero_point=node.inputs[0].zero_point)
    bound = reach * int(np.abs(wq).sum(axis=(0, 1)).max(initial=0))
    return quantized_plan(node, wq, b, np.zeros(wq.shape[-1], np.int64), bound, 0)


@register("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """DEPTHWISE_CONV_2D: output channel ``c*M + m`` filters input channel ``c``; sums KH*KW tap slices."""
    x, w = inputs[0], inputs[1]
    reason = ops_conv.depthwise_reason(node.attrs, x.shape, w.shape)
    if reason:
        raise node.error(reason)
    n, h, wd, c = x.shape
    _, kh, kw, oc = w.shape
    mult = oc // c
    plan = memo_plan(node, inputs, lambda w_, b_: _depthwise_plan(node, w_, b_))
    win = window(node, h, wd, kh, kw)
    if plan.quantized:
        xs = x.astype(plan.compute)
        xs -= plan.compute.type(node.inputs[0].zero_point)
    else:
        xs = x
    xp = pad_input(xs, win, 0)
    weights = plan.weights.reshape(kh, kw, c, mult)
    acc = np.zeros((n, win.oh, win.ow, c, mult), plan.compute)
    term = np.empty_like(acc)
    rows, cols = (win.oh - 1) * win.sh + 1, (win.ow - 1) * win.sw + 1
    for ky in range(kh):  # a loop over the KH*KW taps; each step is one whole-tensor multiply-add
        for kx in range(kw):
            y0, x0 = ky * win.dh, kx * win.dw
            tap = xp[:, y0 : y0 + rows : win.sh, x0 : x0 + cols : win.sw, :, None]
            np.multiply(tap, weights[ky, kx], out=term)
            acc += term
    return epilogue(acc.reshape(n, win.oh, win.ow, oc), plan)
