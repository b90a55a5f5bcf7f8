"""int8 / uint8 TRANSPOSE_CONV (UNet decoders), bit-exact with LiteRT's reference kernels and the
NumPy fallback (``teflon_py.fallback.transpose_conv``): int32 sums of (x - x_zp) * w from the
bias, per-channel fixed-point requantization (``quant.conv_output_multipliers``), the output
zero point and the fused activation's clamp. The int8 kernel never reads the weights' zero
point (LiteRT's does not); uint8 weights have theirs subtracted.

Stride 1 with a non-negative mirrored padding runs on the int8 convolution (``qconv.cl``) with
the kernel flipped: its padding taps read the input zero point, so they add exactly 0, as the
scatter adds nothing there. Other strides run the gather kernel ``qtranspose_conv.cl``, whose
taps outside the input read the zero point too.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ir, quant
from teflon_py.opencl.kernels import qspecs
from teflon_py.opencl.kernels.qspecs import ConvGeometry, Requant
from teflon_py.opencl.kernels.qtranspose_conv import qtranspose_conv_spec
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.lowerings.qconv import KINDS
from teflon_py.opencl.lowerings.transpose_conv import Geometry, check_transpose_conv, transpose_conv_geometry
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops import conv as ops_conv
from teflon_py.ops.common import Padding
from teflon_py.ops.conv import TransposeConvAttrs, conv_types_reason

#: elements an int32 index of the kernels reaches
MAX_ELEMENTS = 2**31 - 1


def check_qtranspose_conv(attrs: TransposeConvAttrs, tensors: OpTensors, caps: object) -> str | None:
    """The float rules (shapes, strides, activation), LiteRT's quantized conv types (per-tensor
    uint8 weights, int32 bias), and what the kernels compute exactly: zero points within the
    8-bit type, per-channel scales along the output channels, a non-negative crop, multipliers
    whose left shift stays below 31, tensors an int32 index covers."""
    reason = check_transpose_conv(attrs, tensors, caps)
    if reason:
        return reason
    w, x, b, y = tensors.inputs[1], tensors.inputs[2], tensors.input(3), tensors.outputs[0]
    reason = conv_types_reason(x, w, b, y)
    if reason:
        return reason
    qlo, qhi = quant.QRANGE[np.dtype(x.dtype)]
    for t in (x, y) if x.dtype == np.int8 else (x, w, y):
        if not qlo <= t.zero_point <= qhi:
            return f"{t.describe()} has zero point {t.zero_point} outside {x.dtype}'s range"
    scales = np.size(w.quantization.scale)
    if w.quantization.per_channel and (w.quantization.quantized_dimension != 0 or scales != w.shape[0]):
        return "per-channel weights must have one scale per output channel (dimension 0)"
    out_hw = tuple(int(v) for v in np.asarray(tensors.inputs[0].data).reshape(-1)[1:3])
    if min(ops_conv.transpose_pads(attrs, out_hw, w.shape[1], w.shape[2])) < 0:
        return "negative padding (the kernels' tap phases assume a crop)"
    _, shift = quant.conv_output_multipliers("TRANSPOSE_CONV", x, w, y)
    if np.max(shift) > 30:
        return f"output multiplier's left shift {int(np.max(shift))} is beyond what the int32 epilogue takes"
    for t in (x, y):
        if int(np.prod(t.shape, dtype=np.int64)) > MAX_ELEMENTS:
            return f"{t.describe()} has more elements than an int32 index reaches"
    return None


def zero_point_free_weights(w: ir.Tensor) -> np.ndarray:
    """The weights as the reference kernels multiply them (int64): int8 as stored, its zero point
    ignored; uint8 less its (per-tensor) zero point."""
    data = np.asarray(w.data, np.int64)
    return data if w.dtype == np.int8 else data - w.zero_point


def as_qconv_spec(g: Geometry, dtype: np.dtype, x_zp: int, w: np.ndarray, bias: np.ndarray | None,
                  requant: Requant, params: object) -> KernelSpec | None:
    """Stride 1: ``qconv`` with the kernel flipped over an input padded by KH-1-PT before and
    whatever makes the output OH after (padding taps read the input zero point); None when a
    padding would be negative."""
    nb, ih, iw, ic = g.input_shape
    oc, kh, kw, _ = w.shape
    pads = g.mirrored_pads(kh, kw)
    if pads is None:
        return None
    geo = ConvGeometry(nb, ih, iw, xs=ic, xoff=0, ys=oc, yoff=0, kh=kh, kw=kw, stride=(1, 1), dilation=(1, 1),
                       padding=Padding.valid(), pads=pads)
    flipped = np.ascontiguousarray(w[:, ::-1, ::-1, :])
    return qspecs.qconv_spec(geo, dtype, x_zp, flipped, bias, requant, tiles=params.tiles,
                             madd=params.qconv_madd)


@register("TRANSPOSE_CONV", kind="int8", dtypes=KINDS["int8"], check=check_qtranspose_conv, params=(0,),
          constants=(1, 3))
@register("TRANSPOSE_CONV", kind="uint8", dtypes=KINDS["uint8"], check=check_qtranspose_conv, params=(0,),
          constants=(1, 3))
def qtranspose_conv(ctx: OpEmit, attrs: TransposeConvAttrs) -> None:
    graph, op = ctx.graph, ctx.op
    wt, xt, yt = graph.tensors[op.inputs[1]], graph.tensors[op.inputs[2]], graph.tensors[op.outputs[0]]
    bias = None
    if len(op.inputs) > 3 and op.inputs[3] != ir.NO_TENSOR:
        bias = np.asarray(graph.tensors[op.inputs[3]].data, np.int64).reshape(-1)
    w = zero_point_free_weights(wt)
    multiplier, shift = quant.conv_output_multipliers("TRANSPOSE_CONV", xt, wt, yt)
    lo, hi = qspecs.clamp_range(attrs.activation, yt)
    requant = Requant(yt.zero_point, lo, hi, multiplier=multiplier, shift=shift)
    g = transpose_conv_geometry(graph, op, attrs)
    spec = as_qconv_spec(g, xt.dtype, xt.zero_point, w, bias, requant, ctx.params) or qtranspose_conv_spec(
        g, xt.dtype, xt.zero_point, w, bias, requant, tiles=ctx.params.tiles)
    qspecs.launch(ctx, spec, input=op.inputs[2], output=ctx.output())
