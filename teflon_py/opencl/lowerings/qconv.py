"""int8 / uint8 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: int32 accumulation and TFLite's
requantization in one kernel (``qconv.cl``, ``qdepthwise.cl``), bit-exact with LiteRT's reference.

The weights' zero points are handled as the fallback (``teflon_py.fallback.conv``) handles them,
with its own helpers: int8 CONV_2D needs them 0, int8 DEPTHWISE and per-channel FC ignore them,
the rest subtract them. Grouped convolutions run one launch per group. FULLY_CONNECTED is a 1x1
convolution over its rows, requantized as LiteRT's reference kernel does, round(double(acc) *
scale), but in integer arithmetic (``quant.requantize_scaled_exact``), so no device needs fp64.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ir, quant
from teflon_py.fallback import conv as fallback_conv
from teflon_py.fallback.registry import Node
from teflon_py.opencl.kernels import qspecs as qkernels
from teflon_py.opencl.kernels.qspecs import ConvGeometry
from teflon_py.opencl.lowerings.conv import check_conv_2d, check_depthwise_conv_2d
from teflon_py.opencl.lowerings.matmul import check_fully_connected
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.common import Padding, Requantization
from teflon_py.ops.conv import ConvAttrs, DepthwiseConvAttrs
from teflon_py.ops.matmul import FullyConnectedAttrs

KINDS = {"int8": ("int8", "int32"), "uint8": ("uint8", "int32")}


def _weights(graph: ir.Graph, op: ir.Operation, ignore_zero_point: bool) -> np.ndarray:
    """The constant weights less their zero point(s), as int64 (``fallback.conv.weight_offset``)."""
    w = graph.tensors[op.inputs[1]]
    offset = fallback_conv.weight_offset(Node.of(graph, op), w, ignore_zero_point)
    return np.asarray(w.data, np.int64) - offset


def _bias(graph: ir.Graph, op: ir.Operation) -> np.ndarray | None:
    if len(op.inputs) > 2 and op.inputs[2] != ir.NO_TENSOR:
        return np.asarray(graph.tensors[op.inputs[2]].data, np.int64).reshape(-1)
    return None


@register("CONV_2D", kind="int8", dtypes=KINDS["int8"], check=check_conv_2d, constants=(1, 2), folds_pad=True,
          fuses_swish=True)
@register("CONV_2D", kind="uint8", dtypes=KINDS["uint8"], check=check_conv_2d, constants=(1, 2), folds_pad=True,
          fuses_swish=True)
def conv_2d(ctx: OpEmit, attrs: ConvAttrs) -> None:
    """``qconv.cl`` over output pixels x channels; one launch per group of a grouped convolution;
    8-bit ops folded in (``ctx.table_ops()``) as one table in the epilogue, after a folded ADD."""
    graph, op = ctx.graph, ctx.op
    x = ctx.input()
    xt = graph.tensors[op.inputs[0]]  # quantization of the declared input (a folded PAD's output)
    nb, ih, iw, c = ctx.shape(x)
    w = _weights(graph, op, ignore_zero_point=False)
    bias = _bias(graph, op)
    oc, kh, kw, cg = w.shape
    groups = c // cg
    ocg = oc // groups
    requant = qkernels.conv_requant(graph, op, attrs.activation)
    res = ctx.residual()
    residual, res_binding = None, {}
    if res is not None:
        if residual_reason(graph, op, graph.operations[res.add]):
            raise ValueError("a residual ADD was folded into a conv that cannot take it")
        residual = residual_add(graph, op, graph.operations[res.add])
        res_binding = {"res": res.tensor}
    table = _table(ctx)
    for g in range(groups):
        geo = ConvGeometry(nb, ih, iw, xs=c, xoff=g * cg, ys=oc, yoff=g * ocg, kh=kh, kw=kw,
                           stride=attrs.strides, dilation=attrs.dilations, padding=attrs.padding,
                           pads=ctx.pads())
        lo, hi = g * ocg, (g + 1) * ocg
        part_bias = None if bias is None else bias[lo:hi]
        spec = qkernels.qconv_spec(geo, xt.dtype, xt.zero_point, w[lo:hi], part_bias,
                                   requant.channels(lo, hi), residual, tiles=ctx.params.tiles,
                                   madd=ctx.params.qconv_madd, table=table)
        qkernels.launch(ctx, spec, input=x, output=ctx.output(), **res_binding)


def _table(ctx: OpEmit) -> np.ndarray | None:
    """The epilogue table of the 8-bit ops folded into the op (``fusion.plan_table_activations``)."""
    from teflon_py.opencl.lowerings import qelementwise as ops_qelementwise

    folded = ctx.table_ops()
    return None if folded is None else ops_qelementwise.epilogue_table(ctx.graph, folded)


def _add_params(graph: ir.Graph, add: ir.Operation) -> dict:
    """add.cc's constants of the ADD (``quant.add_sub_params``; ``binary_reason`` checked it first)."""
    a, b, y = (graph.tensors[t] for t in (add.inputs[0], add.inputs[1], add.outputs[0]))
    return quant.add_sub_params(a, b, y, add.attrs.activation)


def residual_reason(graph: ir.Graph, conv: ir.Operation, add: ir.Operation) -> str | None:
    """Why the int8 ADD ``add`` cannot fold into ``conv`` (the producer of one operand), if so.

    Exact: the epilogue clamps the conv's int8 output as before, then runs add.cc's integer
    arithmetic on it (``qkernels.ResidualAdd``), as the unfused ADD does on the stored bytes.
    """
    x, w, y = (graph.tensors[t] for t in (conv.inputs[0], conv.inputs[1], conv.outputs[0]))
    if conv.name != "CONV_2D" or y.dtype != np.int8 or w.dtype != np.int8:
        return "only int8 CONV_2D takes a residual ADD"
    if w.shape[3] != x.shape[3]:
        return "grouped convolution"
    if conv.attrs.requantization != Requantization.TFLITE:
        return "the conv requantizes by XNNPACK's float32 rule; the folded ADD assumes fixed point"
    if conv.outputs[0] not in add.inputs[:2] or any(graph.tensors[t].dtype != np.int8 for t in add.inputs):
        return "the ADD does not read the conv's output alongside another int8 tensor"
    from teflon_py.opencl.lowerings import qelementwise as ops_qelementwise

    reason = ops_qelementwise.binary_reason(add.name, add.attrs, OpTensors.of(graph, add))
    if reason:
        return reason
    p = _add_params(graph, add)
    if p["left_shift"] != 20 or min(p["m1"], p["m2"], p["mo"]) <= 0 or max(p["e1"], p["e2"]) > 0:
        return "the ADD's multipliers are not the positive, below-one ones the epilogue assumes"
    return None


def residual_add(graph: ir.Graph, conv: ir.Operation, add: ir.Operation) -> qkernels.ResidualAdd:
    """``add``'s input rescales (the conv's operand first) and requantization (``qconv``'s RESID)."""
    p = _add_params(graph, add)
    first, second = (p["off1"], p["m1"], -p["e1"]), (p["off2"], p["m2"], -p["e2"])
    if add.inputs[0] != conv.outputs[0]:
        first, second = second, first
    return qkernels.ResidualAdd(first, second, p["mo"], p["eo"], p["out_off"], p["lo"], p["hi"])


@register("DEPTHWISE_CONV_2D", kind="int8", dtypes=KINDS["int8"], check=check_depthwise_conv_2d,
          constants=(1, 2), folds_pad=True, fuses_swish=True)
@register("DEPTHWISE_CONV_2D", kind="uint8", dtypes=KINDS["uint8"], check=check_depthwise_conv_2d,
          constants=(1, 2), folds_pad=True, fuses_swish=True)
def depthwise_conv_2d(ctx: OpEmit, attrs: DepthwiseConvAttrs) -> None:
    """``qdepthwise.cl``: 16 channels x a row of pixels per work-item; any depth multiplier."""
    graph, op = ctx.graph, ctx.op
    x = ctx.input()
    xt = graph.tensors[op.inputs[0]]
    shape = ctx.shape(x)
    w = _weights(graph, op, ignore_zero_point=xt.dtype == np.int8)[0]  # LiteRT's int8 kernel ignores them
    requant = qkernels.conv_requant(graph, op, attrs.activation)
    spec = qkernels.qdepthwise_spec(shape, xt.dtype, xt.zero_point, w, _bias(graph, op), requant,
                                    depth_multiplier=w.shape[2] // shape[3], stride=attrs.strides,
                                    dilation=attrs.dilations, padding=attrs.padding, pads=ctx.pads(),
                                    tiles=ctx.params.tiles, table=_table(ctx))
    qkernels.launch(ctx, spec, input=x, output=ctx.output())


@register("FULLY_CONNECTED", kind="int8", dtypes=KINDS["int8"], check=check_fully_connected, constants=(1, 2),
          max_rank=None, fuses_swish=True)
@register("FULLY_CONNECTED", kind="uint8", dtypes=KINDS["uint8"], check=check_fully_connected, constants=(1, 2),
          max_rank=None, fuses_swish=True)
def fully_connected(ctx: OpEmit, attrs: FullyConnectedAttrs) -> None:
    """A 1x1 ``qconv.cl`` over the input's rows, requantized as LiteRT's reference rounds in double."""
    op = ctx.op
    graph = ctx.graph
    xt, wt = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    w = _weights(graph, op, ignore_zero_point=wt.quantization.per_channel)
    units, depth = w.shape
    rows = int(np.prod(ctx.shape(op.inputs[0]), dtype=np.int64)) // depth
    geo = ConvGeometry(1, 1, rows, xs=depth, xoff=0, ys=units, yoff=0, kh=1, kw=1, stride=(1, 1),
                       dilation=(1, 1), padding=Padding.valid())
    spec = qkernels.qconv_spec(geo, xt.dtype, xt.zero_point, w.reshape(units, 1, 1, depth), _bias(graph, op),
                               qkernels.conv_requant(graph, op, attrs.activation), tiles=ctx.params.tiles,
                               madd=ctx.params.qconv_madd, table=_table(ctx))
    qkernels.launch(ctx, spec, input=op.inputs[0], output=ctx.output())
