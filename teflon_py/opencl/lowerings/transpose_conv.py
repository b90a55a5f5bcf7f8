"""TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias (float32): a gather-form kernel.

``transpose_conv.cl`` computes each output pixel from the input pixels TFLite's scatter adds into
it (no atomics), register-blocked over output pixels of one stride phase x 16*NV output channels,
with the weights packed once as the conv kernel's panels. A stride-1 transpose convolution is an
ordinary convolution with the kernel flipped and the padding mirrored; it runs on
``kernels.conv2d_spec`` (a GEMM for 1x1) whenever that mirrored padding is non-negative. A
kernel as large as its stride with no crop (the 2x2 stride-2 upsampling of segmentation heads)
gives every input pixel its own output tile: on the cpu family, with fewer than 16 output
channels (where the gather kernel's 16-channel vectors are mostly padding), it runs as a GEMM
over input pixels into KH * KW * OC columns, then one copy placing each pixel's columns as its tile.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels import gpu_specs, packing
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.cpu_tiles import AVX512, CpuTiles
from teflon_py.opencl.kernels.movement_plan import SUFFIX, copy_specs, permute
from teflon_py.opencl.kernels.specs import Clamp, KernelSpec, Pads
from teflon_py.opencl.params import CPU, KernelParams
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops import conv as ops_conv
from teflon_py.ops.conv import TransposeConvAttrs, TransposeConvBiasAttrs
from teflon_py.ops.elementwise import activation_reason as elementwise_activation_reason

MEDIAPIPE = "Convolution2DTransposeBias"


@dataclass(frozen=True)
class Geometry:
    """One transpose convolution: input NHWC, output H/W, strides and the top/left crop."""

    input_shape: tuple[int, int, int, int]
    out_hw: tuple[int, int]
    stride: tuple[int, int]
    pad: tuple[int, int]

    def mirrored_pads(self, kh: int, kw: int) -> Pads | None:
        """Stride 1 only: the ((top, bottom), (left, right)) padding of the input under which a
        VALID convolution with the KH x KW kernel flipped computes this transpose convolution
        (KH-1-PT before, whatever makes the output OH after); None when one would be negative."""
        if self.stride != (1, 1):
            return None
        _, ih, iw, _ = self.input_shape
        top, left = kh - 1 - self.pad[0], kw - 1 - self.pad[1]
        bottom, right = self.out_hw[0] - ih - top + kh - 1, self.out_hw[1] - iw - left + kw - 1
        if min(top, left, bottom, right) < 0:
            return None
        return ((top, bottom), (left, right))


def transpose_conv_spec(g: Geometry, filt: np.ndarray, bias: np.ndarray | None,
                        activation: ir.Activation | int | Clamp = ir.Activation.NONE,
                        pw: int | None = None, nv: int | None = None, tiles: CpuTiles = AVX512) -> KernelSpec:
    """The gather kernel for filter [OC][KH][KW][IC] (TFLite's layout, packed here); ``pw``
    output columns x ``nv`` 16-channel vectors per work-item, by default within ``tiles``."""
    nb, ih, iw, ic = g.input_shape
    oc, kh, kw, fic = filt.shape
    if fic != ic:
        raise ValueError(f"filter has {fic} input channels, input has {ic}")
    (oh, ow), (sh, sw), (pt, pl) = g.out_hw, g.stride, g.pad
    nv = nv or min(kernels.vectors_for(oc), max(tiles.tile_rows))
    ocb = 16 * nv
    ocp = packing.round_up(oc, ocb)
    nj = -(-ow // sw)  # output columns of the widest phase
    pw = min(pw or tiles.rows_for(nv), nj)
    defines = {"NB": nb, "IH": ih, "IW": iw, "IC": ic, "OH": oh, "OW": ow, "OC": oc, "OCP": ocp, "KH": kh,
               "KW": kw, "SH": sh, "SW": sw, "PT": pt, "PL": pl, "PW": pw, "NV": nv, "NJ": nj,
               **kernels.activation_defines(activation)}
    return KernelSpec(
        files=("common.cl", "transpose_conv.cl"), name="transpose_conv", defines=defines,
        global_size=(ocp // ocb, sw * -(-nj // pw), nb * oh), local_size=(1, 1, 1),
        args=("input", "weights", "bias", "zeros", "output"),
        constants={"weights": packing.pack_conv_weights(np.asarray(filt, np.float32), ocb),
                   "bias": packing.pad_vector(bias, oc, ocp)},
        zeros=ic, flops=2 * nb * ih * iw * ic * kh * kw * oc,
    )


def as_conv_spec(g: Geometry, filt: np.ndarray, bias: np.ndarray | None,
                 activation: ir.Activation | int | Clamp, params: KernelParams | None = None) -> KernelSpec | None:
    """Stride 1: the equivalent CONV_2D (flipped kernel, VALID over an input padded by KH-1-PT
    before and whatever makes the output OH after), on ``params``'s kernel family; None when
    that padding would be negative."""
    pads = g.mirrored_pads(filt.shape[1], filt.shape[2])
    if pads is None:
        return None
    flipped = np.ascontiguousarray(np.asarray(filt, np.float32)[:, ::-1, ::-1, :])
    if params is not None and params.gpu:
        return gpu_specs.conv2d_spec(params, g.input_shape, flipped, bias, padding=ir.Padding.VALID,
                                     activation=activation, pads=pads)
    return kernels.conv2d_spec(g.input_shape, flipped, bias, padding=ir.Padding.VALID, activation=activation,
                               pads=pads, tiles=(params or CPU).tiles)


def spec_for(g: Geometry, filt: np.ndarray, bias: np.ndarray | None,
             activation: ir.Activation | int | Clamp, params: KernelParams | None = None) -> KernelSpec:
    """Stride 1 as a convolution (``params``'s family), else the scatter-free transpose kernel."""
    return as_conv_spec(g, filt, bias, activation, params) or transpose_conv_spec(
        g, filt, bias, activation, tiles=(params or CPU).tiles)


def tiles_per_pixel(g: Geometry, filt_shape: tuple[int, ...]) -> bool:
    """Whether each input pixel writes exactly its own KH x KW output tile: kernel = stride, no
    crop, output = input x stride (no overlap, no gap)."""
    _, kh, kw, _ = filt_shape
    _, ih, iw, _ = g.input_shape
    return (g.stride == (kh, kw) and g.pad == (0, 0) and g.out_hw == (ih * kh, iw * kw)
            and (kh, kw) != (1, 1))


def emit(ctx: OpEmit, x: int, g: Geometry, filt: np.ndarray, bias: np.ndarray | None) -> None:
    """The op as ``spec_for`` runs it, or, for few output channels with one tile per input pixel
    on the cpu family, a GEMM [pixels][IC] x [IC][KH*KW*OC] (bias and clamp in its epilogue)
    into a scratch buffer and a copy of each pixel's KH*KW*OC values into its output tile."""
    oc, kh, kw, ic = filt.shape
    if ctx.params.gpu or oc >= 16 or not tiles_per_pixel(g, filt.shape):
        ctx.launch(spec_for(g, filt, bias, ctx.clamp(), ctx.params), input=x, output=ctx.output())
        return
    nb, ih, iw, _ = g.input_shape
    b_kn = np.asarray(filt, np.float32).transpose(3, 1, 2, 0).reshape(ic, kh * kw * oc)  # [IC][(ky, kx, oc)]
    tiled_bias = np.tile(packing.pad_vector(bias, oc, oc), kh * kw)
    m, n = nb * ih * iw, kh * kw * oc
    gemm = kernels.gemm_spec(m, n, ic, b_kn, tiled_bias, ctx.clamp(), tiles=ctx.params.tiles)
    cols = ctx.scratch(4 * m * n)
    ctx.launch(gemm, input=x, output=cols)
    tile_rows = permute((nb, ih, iw, kh, kw * oc), (0, 1, 3, 2, 4))  # [n][iy][ky][ix][(kx, oc)]
    for spec in copy_specs(SUFFIX["float32"], tile_rows):
        ctx.launch(spec, input=cols, output=ctx.output())


# -- TRANSPOSE_CONV ---------------------------------------------------------------------------------

def _bias_tensor(op: ir.Operation) -> int:
    return op.inputs[3] if len(op.inputs) > 3 else ir.NO_TENSOR


def transpose_conv_geometry(graph: ir.Graph, op: ir.Operation, attrs: TransposeConvAttrs) -> Geometry:
    """TFLite's geometry: the padding of the forward conv that maps the output to the input."""
    x = graph.tensors[op.inputs[2]].shape
    _, kh, kw, _ = graph.tensors[op.inputs[1]].shape
    oh, ow = (int(v) for v in np.asarray(graph.tensors[op.inputs[0]].data).reshape(-1)[1:3])
    return Geometry(tuple(x), (oh, ow), tuple(attrs.strides), ops_conv.transpose_pads(attrs, (oh, ow), kh, kw))


def check_transpose_conv(attrs: TransposeConvAttrs, tensors: OpTensors, caps: object) -> str | None:
    """4-D operands that agree with the output-shape tensor, positive strides, a clamp activation."""
    if len(tensors.inputs) < 3 or any(t is None for t in tensors.inputs[:3]):
        return "needs output shape, weights and input"
    if min(attrs.strides) < 1:
        return f"strides {tuple(attrs.strides)} must be at least 1"
    reason = elementwise_activation_reason(attrs.activation)
    if reason:
        return reason
    s, wt, xt = tensors.inputs[:3]
    shape = np.asarray(s.data).reshape(-1)
    w, x, y = wt.shape, xt.shape, tensors.outputs[0].shape
    if len(w) != 4 or len(x) != 4 or shape.size != 4:
        return "weights, input and output shape must be 4-D"
    if tuple(int(v) for v in shape) != tuple(y):
        return f"output shape tensor {shape.tolist()} differs from the output's {list(y)}"
    reason = ops_conv.transpose_conv_reason(attrs, tuple(int(v) for v in shape), tuple(w), tuple(x))
    if reason:
        return reason
    bias = tensors.input(3)
    if bias is not None and bias.data.size != w[0]:
        return f"bias has {bias.data.size} values for {w[0]} channels"
    return None


@register("TRANSPOSE_CONV", check=check_transpose_conv, params=(0,), constants=(1, 3), fuses_activation=True)
def transpose_conv(ctx: OpEmit, attrs: TransposeConvAttrs) -> None:
    op = ctx.op
    bias = _bias_tensor(op)
    emit(ctx, op.inputs[2], transpose_conv_geometry(ctx.graph, op, attrs), ctx.constant(op.inputs[1]),
         None if bias == ir.NO_TENSOR else ctx.constant(bias))


# -- MediaPipe's Convolution2DTransposeBias -----------------------------------------------------------

def mediapipe_geometry(graph: ir.Graph, op: ir.Operation, attrs: TransposeConvBiasAttrs) -> Geometry:
    """transpose_conv_bias.cc's geometry (``ops.conv.transpose_bias_geometry``)."""
    x = tuple(graph.tensors[op.inputs[0]].shape)
    _, kh, kw, _ = graph.tensors[op.inputs[1]].shape
    out_hw, pads = ops_conv.transpose_bias_geometry(attrs, (x[1], x[2]), (kh, kw))
    return Geometry(x, out_hw, tuple(attrs.strides), pads)


def check_mediapipe(attrs: TransposeConvBiasAttrs, tensors: OpTensors, caps: object) -> str | None:
    """Input, OHWI weights and bias that fit, the output shape the attributes give."""
    if len(tensors.inputs) != 3 or any(t is None for t in tensors.inputs):
        return "needs input, weights and bias"
    x, w, b = (t.shape for t in tensors.inputs)
    y = tensors.outputs[0].shape
    reason = ops_conv.transpose_bias_reason(attrs, tuple(x), tuple(w), tuple(b))
    if reason:
        return reason
    out_hw, _ = ops_conv.transpose_bias_geometry(attrs, (x[1], x[2]), (w[1], w[2]))
    if tuple(y) != (x[0], *out_hw, w[0]):
        return f"output shape {list(y)} differs from the {[x[0], *out_hw, w[0]]} the options give"
    return None


@register(MEDIAPIPE, check=check_mediapipe, constants=(1, 2), fuses_activation=True)
def convolution_2d_transpose_bias(ctx: OpEmit, attrs: TransposeConvBiasAttrs) -> None:
    op = ctx.op
    emit(ctx, op.inputs[0], mediapipe_geometry(ctx.graph, op, attrs), ctx.constant(op.inputs[1]),
         ctx.constant(op.inputs[2]))
