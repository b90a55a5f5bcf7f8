"""XNNPACK graphs (``payload.XGraph``) to the op layer: one ``ir.Graph`` per delegate payload.

XNNPACK's conventions are close to TFLite's, which the op layer shares: NHWC activations (the
graph transposes NCHW externals itself with ``XNNStaticTranspose``), filters ``[O, KH, KW, I/g]``,
depthwise filters ``[1, KH, KW, C]``, fully connected weights ``[O, I]``. What differs is spelled
out here: explicit per-side padding (or ``TENSORFLOW_SAME_PADDING``), ``output_min_max`` as a fused
clamp (an explicit MAXIMUM/MINIMUM pair where the op fuses none), static shapes and permutations
as attributes that become constant operands, and quantization per datatype (``qint8`` per tensor,
``qcint8``/``qcint32`` per channel; convolutions and fully connected layers requantize by
XNNPACK's float32 rule, ``ops.common.Requantization.FLOAT32``). Each XNode type has one translator in ``TRANSLATORS``; a type
without one is an ``UnsupportedError`` naming the node.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from teflon_py import ir, ops
from teflon_py.errors import ModelError, TeflonError, UnsupportedError
from teflon_py.executorch.xnnpack.payload import DATATYPE_NAMES, NO_ID, XGraph, XNode, XValue
from teflon_py.ops.common import FusedActivation, Padding

# XNNPACK's node flags (xnnpack.h)
FLAG_TRANSPOSE_WEIGHTS = 0x1  # fully connected: weights are [I, O]; batch matmul: B is transposed
FLAG_TENSORFLOW_SAME_PADDING = 0x4
FLAG_TENSORFLOW_LEGACY_MODE = 0x4  # resize: no half-pixel centres
FLAG_ALIGN_CORNERS = 0x8
FLAG_KEEP_DIMS = 0x40

#: quantized convolutions and fully connected layers requantize as XNNPACK does (float32)
XNNPACK_RULE = ops.common.Requantization.FLOAT32

#: datatype -> (NumPy dtype of the op layer's tensor, quantized?)
DTYPES = {
    "fp32": np.dtype(np.float32), "fp16": np.dtype(np.float16), "bf16": np.dtype(np.float32),
    "qint8": np.dtype(np.int8), "quint8": np.dtype(np.uint8), "qint32": np.dtype(np.int32),
    "qcint8": np.dtype(np.int8), "qcint32": np.dtype(np.int32), "int32": np.dtype(np.int32),
}


@dataclass
class DelegateGraph:
    """One payload in the op layer: the graph, and for each of its inputs and outputs the
    position k of the delegate call's argument it binds to (``external_id``)."""

    graph: ir.Graph
    input_args: tuple[int, ...]
    output_args: tuple[int, ...]
    nodes: list[XNode]  # the payload's nodes, for inspect
    sources: list[int]  # per op of ``graph``: the xnode it came from


class _Builder:
    """Builds the ``ir.Graph``: a tensor per XValue (by id), constants and ops added in order."""

    def __init__(self, xg: XGraph, what: str):
        self.xg = xg
        self.what = what
        self.tensors: list[ir.Tensor] = []
        self.by_id: dict[int, int] = {}
        self.operations: list[ir.Operation] = []
        self.sources: list[int] = []
        self.node: XNode | None = None
        self.pending: list[tuple[int, int, FusedActivation]] = []  # clamps to add after the node
        self.dynamic: dict[int, int] = {}  # a qdint8 tensor -> its run-time per-row parameters
        for vid in sorted(xg.values):
            self.by_id[vid] = self._value_tensor(xg.values[vid])

    # -- tensors ----------------------------------------------------------------------------------

    def fail(self, message: str) -> ModelError:
        where = f"{self.node.describe()}: " if self.node is not None else ""
        return ModelError(f"{self.what}: {where}{message}")

    def unsupported(self, message: str) -> UnsupportedError:
        where = f"{self.node.describe()}: " if self.node is not None else ""
        return UnsupportedError(f"{self.what}: {where}{message}")

    def _value_tensor(self, v: XValue) -> int:
        if v.datatype == "qdint8":
            dtype, quant = np.dtype(np.int8), None  # per-row parameters decided at run time
        elif v.datatype == "invalid" or v.datatype not in DATATYPE_NAMES.values():
            raise ModelError(f"{self.what}: xvalue {v.id}: datatype {v.datatype} is not an XNNPACK datatype")
        elif v.datatype not in DTYPES:
            raise UnsupportedError(f"{self.what}: xvalue {v.id}: datatype {v.datatype} is not supported")
        else:
            dtype, quant = DTYPES[v.datatype], self._quantization(v)
        data = v.data
        if data is not None and data.dtype != dtype:
            data = data.astype(dtype)
        if data is not None:
            data.flags.writeable = False
        return self.add_tensor(f"xvalue{v.id}", v.dims, dtype, quant, data)

    def _quantization(self, v: XValue) -> ir.Quantization | None:
        q = v.quant
        if q is None:
            if v.datatype in ("qint8", "quint8", "qint32", "qcint8", "qcint32"):
                raise ModelError(f"{self.what}: xvalue {v.id}: {v.datatype} value without quantization")
            return None
        if q.kind == "PerTensorQuant":
            return ir.Quantization(q.scale.astype(np.float32), q.zero_point.astype(np.int64))
        if q.kind == "PerChannelQuant":
            if not 0 <= q.channel_dim < max(len(v.dims), 1) or (v.dims and q.scale.size != v.dims[q.channel_dim]):
                raise ModelError(f"{self.what}: xvalue {v.id}: {q.scale.size} scales on dim {q.channel_dim} "
                                 f"of a {list(v.dims)} value")
            return ir.Quantization(q.scale.astype(np.float32), q.zero_point.astype(np.int64), q.channel_dim)
        raise UnsupportedError(f"{self.what}: xvalue {v.id}: {q.kind} quantization is not supported")

    def add_tensor(self, name: str, shape: tuple[int, ...], dtype: np.dtype, quant: ir.Quantization | None = None,
                   data: np.ndarray | None = None) -> int:
        index = len(self.tensors)
        self.tensors.append(ir.Tensor(index, name, tuple(int(d) for d in shape), np.dtype(dtype), quant, data))
        return index

    def constant(self, name: str, data: np.ndarray, quant: ir.Quantization | None = None) -> int:
        data = np.ascontiguousarray(data)
        data.flags.writeable = False
        return self.add_tensor(name, data.shape, data.dtype, quant, data)

    def tensor(self, vid: int, field: str = "value") -> int:
        if vid == NO_ID:
            return ir.NO_TENSOR
        if vid not in self.by_id:
            raise self.fail(f"{field} {vid} names no xvalue")
        return self.by_id[vid]

    def meta(self, vid: int) -> ir.Tensor:
        return self.tensors[self.tensor(vid)]

    def like(self, index: int, suffix: str) -> int:
        """A new intermediate tensor with the shape, dtype and quantization of ``index``."""
        t = self.tensors[index]
        return self.add_tensor(f"{t.name}_{suffix}", t.shape, t.dtype, t.quantization)

    # -- ops --------------------------------------------------------------------------------------

    def op(self, opcode: str, inputs: list[int], outputs: list[int], attrs: object = None) -> None:
        assert self.node is not None
        index = len(self.operations)
        op = ir.Operation(index, opcode, tuple(inputs), tuple(outputs),
                          attrs if attrs is not None else ops.common.NoAttrs())
        self.operations.append(op)
        self.sources.append(self.node.index)

    def activation(self) -> FusedActivation:
        """The node's output_min_max as a fused activation."""
        n = self.node
        if n is None or n.output_min is None:
            return ops.common.NO_ACTIVATION
        return FusedActivation.clamp(n.output_min, n.output_max)

    def clamp_after(self, out: int) -> int:
        """For an op that fuses no activation: the tensor it should write; the node's clamp into
        ``out`` follows it (``out`` itself when the node has no clamp)."""
        act = self.activation()
        if act.kind == ops.common.Act.NONE:
            return out
        raw = self.like(out, "unclamped")
        self.pending.append((raw, out, act))
        return raw

    def clamp(self, src: int, out: int, act: FusedActivation) -> None:
        """``out`` = ``src`` clamped to ``act``'s range: RELU/RELU6/RELU_N1_TO_1 where the bounds
        are theirs, else MAXIMUM and MINIMUM with constant bounds."""
        named = {ops.common.Act.RELU: "RELU", ops.common.Act.RELU6: "RELU6",
                 ops.common.Act.RELU_N1_TO_1: "RELU_N1_TO_1"}.get(act.kind)
        if named:
            self.op(named, [src], [out])
            return
        steps = [(name, bound) for name, bound in (("MAXIMUM", act.lo), ("MINIMUM", act.hi))
                 if not math.isinf(bound)]
        if not steps:
            self.op("RESHAPE", [src, self.constant("shape", _i32(self.tensors[out].shape))], [out],
                    ops.shape.ReshapeAttrs(tuple(self.tensors[out].shape)))
            return
        for k, (name, bound) in enumerate(steps):
            dst = out if k == len(steps) - 1 else self.like(out, "lower_clamped")
            self.op(name, [src, self.bound(self.tensors[out], bound)], [dst])
            src = dst

    def bound(self, t: ir.Tensor, real: float) -> int:
        """A one-element constant holding ``real`` in ``t``'s domain (quantized with its parameters)."""
        if t.quantization is None:
            return self.constant(f"{t.name}_bound", np.asarray([real], t.dtype))
        info = np.iinfo(t.dtype)
        q = int(np.clip(round(real / t.scale) + t.zero_point, info.min, info.max))
        return self.constant(f"{t.name}_bound", np.asarray([q], t.dtype), t.quantization)


def translate(xg: XGraph, what: str) -> DelegateGraph:
    """The op-layer graph of one XNNPACK payload (``what`` names it in errors)."""
    b = _Builder(xg, what)
    for node in xg.nodes:
        b.node = node
        b.pending = []
        fn = TRANSLATORS.get(node.type)
        if fn is None:
            raise b.unsupported(f"XNNPACK node type {node.type} is not supported")
        try:
            fn(b, node)
        except (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
            if isinstance(e, TeflonError):
                raise
            # fields out of the range of what they feed (an id past 2**31 as a permutation entry)
            raise ModelError(f"{what}: {node.describe()}: its fields do not make a valid node: "
                             f"{type(e).__name__}: {e}") from e
        for raw, out, act in b.pending:  # the clamp after an op that fuses none
            b.clamp(raw, out, act)
    b.node = None
    externals_in = sorted((v.external_id, v.id) for v in xg.values.values() if v.is_external_input)
    externals_out = sorted((v.external_id, v.id) for v in xg.values.values() if v.is_external_output)
    for ext, vid in externals_in + externals_out:
        if ext is None:
            raise b.fail(f"external xvalue {vid} has no external id")
    graph = ir.Graph(b.tensors, b.operations, tuple(b.by_id[v] for _, v in externals_in),
                     tuple(b.by_id[v] for _, v in externals_out), name=what)
    for op in graph.operations:
        _check_shapes(graph, op, xg.nodes[b.sources[op.index]], what)
    return DelegateGraph(graph, tuple(e for e, _ in externals_in), tuple(e for e, _ in externals_out),
                         list(xg.nodes), b.sources)


def _check_shapes(graph: ir.Graph, op: ir.Operation, node: XNode, what: str) -> None:
    """The op layer's rules for the op (attributes, operands, shapes) against the payload's
    declared output shapes: a mismatch is a broken payload, named by its xnode."""
    try:
        metas = ops.infer(graph, op)
    except ModelError as e:
        raise ModelError(f"{what}: {node.describe()}: {e}") from e
    for meta, out in zip(metas or (), op.outputs):
        t = graph.tensors[out]
        if meta.shape is not None and tuple(meta.shape) != t.shape:
            raise ModelError(f"{what}: {node.describe()}: output {t.name} is declared {list(t.shape)}, "
                             f"the op computes {list(meta.shape)}")


# -- translators ---------------------------------------------------------------------------------


def _i32(values: object) -> np.ndarray:
    return np.asarray(values, np.int32)


def _binary(opcode: str) -> Callable[[_Builder, XNode], None]:
    def run(b: _Builder, n: XNode) -> None:
        f = n.fields
        a, c, out = b.tensor(f["input1_id"]), b.tensor(f["input2_id"]), b.tensor(f["output_id"])
        if opcode in ops.elementwise.ACTIVATED:
            b.op(opcode, [a, c], [out], ops.elementwise.BinaryAttrs(b.activation()))
        else:
            b.op(opcode, [a, c], [b.clamp_after(out)])
    return run


def _unary(opcode: str, attrs: object = None) -> Callable[[_Builder, XNode], None]:
    def run(b: _Builder, n: XNode) -> None:
        b.op(opcode, [b.tensor(n.fields["input_id"])], [b.clamp_after(b.tensor(n.fields["output_id"]))], attrs)
    return run


def _clamp(b: _Builder, n: XNode) -> None:
    b.clamp(b.tensor(n.fields["input_id"]), b.tensor(n.fields["output_id"]), b.activation())


def _padding(f: dict, same_flag: bool) -> Padding:
    if same_flag and f["flags"] & FLAG_TENSORFLOW_SAME_PADDING:
        return Padding.tf_same()
    return Padding(((f["padding_top"], f["padding_bottom"]), (f["padding_left"], f["padding_right"])))


def _conv(b: _Builder, n: XNode) -> None:
    f = n.fields
    x, w, bias, out = (b.tensor(f["input1_id"]), b.tensor(f["filter_id"]), b.tensor(f["bias_id"]),
                       b.tensor(f["output_id"]))
    if f["adjustment_height"] or f["adjustment_width"]:
        raise b.fail("a convolution with output adjustment")
    attrs = ops.conv.ConvAttrs(_padding(f, True), (f["subsampling_height"], f["subsampling_width"]),
                               (f["dilation_height"], f["dilation_width"]), b.activation(),
                               requantization=XNNPACK_RULE)
    if x in b.dynamic:  # qd8: the input was quantized per image at run time
        b.op("DYNAMIC_CONV_2D", [x, b.dynamic[x], w, bias], [out], attrs)
    else:
        b.op("CONV_2D", [x, w, bias], [out], attrs)


def _depthwise(b: _Builder, n: XNode) -> None:
    f = n.fields
    x, w, bias, out = (b.tensor(f["input1_id"]), b.tensor(f["filter_id"]), b.tensor(f["bias_id"]),
                       b.tensor(f["output_id"]))
    if f["group_input_channels"] != 1:
        raise b.fail(f"depthwise convolution with {f['group_input_channels']} input channels per group")
    b.op("DEPTHWISE_CONV_2D", [x, w, bias], [out], ops.conv.DepthwiseConvAttrs(
        _padding(f, True), (f["subsampling_height"], f["subsampling_width"]),
        (f["dilation_height"], f["dilation_width"]), f["group_output_channels"], b.activation(),
        XNNPACK_RULE))


def _deconv(b: _Builder, n: XNode) -> None:
    f = n.fields
    x, w, bias, out = (b.tensor(f["input1_id"]), b.tensor(f["filter_id"]), b.tensor(f["bias_id"]),
                       b.tensor(f["output_id"]))
    if f["groups"] != 1 or f["dilation_height"] != 1 or f["dilation_width"] != 1:
        raise b.unsupported(f"transposed convolution with groups {f['groups']}, dilation "
                            f"({f['dilation_height']}, {f['dilation_width']})")
    shape = b.constant("output_shape", _i32(b.tensors[out].shape))
    b.op("TRANSPOSE_CONV", [shape, w, x, bias], [out], ops.conv.TransposeConvAttrs(
        _padding(f, False), (f["subsampling_height"], f["subsampling_width"]), b.activation()))


def _fully_connected(b: _Builder, n: XNode) -> None:
    f = n.fields
    x, w, bias, out = (b.tensor(f["input1_id"]), b.tensor(f["filter_id"]), b.tensor(f["bias_id"]),
                       b.tensor(f["output_id"]))
    if f["flags"] & FLAG_TRANSPOSE_WEIGHTS:
        wt = b.tensors[w]
        if wt.data is None:
            raise b.unsupported("fully connected with transposed runtime weights")
        w = b.constant(f"{wt.name}_oi", np.ascontiguousarray(wt.data.T), wt.quantization)
    keep = len(b.tensors[out].shape) == len(b.tensors[x].shape)
    attrs = ops.matmul.FullyConnectedAttrs(activation=b.activation(), keep_num_dims=keep,
                                           requantization=XNNPACK_RULE)
    if x in b.dynamic:  # qd8: the input was quantized per row at run time
        b.op("DYNAMIC_FULLY_CONNECTED", [x, b.dynamic[x], w, bias], [out], attrs)
    else:
        b.op("FULLY_CONNECTED", [x, w, bias], [out], attrs)


def _batch_matmul(b: _Builder, n: XNode) -> None:
    f = n.fields
    b.op("BATCH_MATMUL", [b.tensor(f["input1_id"]), b.tensor(f["input2_id"])],
         [b.clamp_after(b.tensor(f["output_id"]))],
         ops.matmul.BatchMatMulAttrs(adj_y=bool(f["flags"] & FLAG_TRANSPOSE_WEIGHTS)))


def _pool(opcode: str) -> Callable[[_Builder, XNode], None]:
    def run(b: _Builder, n: XNode) -> None:
        f = n.fields
        if f["dilation_height"] > 1 or f["dilation_width"] > 1:
            raise b.unsupported("dilated pooling")
        attrs = ops.pool.PoolAttrs((f["pooling_height"], f["pooling_width"]),
                                   (f["stride_height"], f["stride_width"]), _padding(f, True), b.activation())
        b.op(opcode, [b.tensor(f["input_id"])], [b.tensor(f["output_id"])], attrs)
    return run


def _global_avg_pool(b: _Builder, n: XNode) -> None:
    f = n.fields
    x = b.tensor(f["input_id"])
    if len(b.tensors[x].shape) != 4:
        raise b.fail(f"global average pooling of a rank-{len(b.tensors[x].shape)} input")
    b.op("MEAN", [x, b.constant("axes", _i32([1, 2]))], [b.clamp_after(b.tensor(f["output_id"]))],
         ops.reduce.ReduceAttrs((1, 2), True, XNNPACK_RULE))


def _softmax(b: _Builder, n: XNode) -> None:
    f = n.fields
    b.op("SOFTMAX", [b.tensor(f["input_id"])], [b.clamp_after(b.tensor(f["output_id"]))],
         ops.normalization.SoftmaxAttrs(1.0))


def _transpose(b: _Builder, n: XNode) -> None:
    f = n.fields
    perm = list(f["perm"])
    if len(perm) != f["num_dims"]:
        raise b.fail(f"num_dims {f['num_dims']} but {len(perm)} permutation entries")
    b.op("TRANSPOSE", [b.tensor(f["input_id"]), b.constant("perm", _i32(perm))], [b.tensor(f["output_id"])])


def _reshape(b: _Builder, n: XNode) -> None:
    f = n.fields
    out = b.tensor(f["output_id"])
    shape = b.tensors[out].shape
    b.op("RESHAPE", [b.tensor(f["input_id"]), b.constant("shape", _i32(shape))], [out],
         ops.shape.ReshapeAttrs(tuple(shape)))


def _copy(b: _Builder, n: XNode) -> None:
    _reshape(b, n)


def _slice(b: _Builder, n: XNode) -> None:
    f = n.fields
    out = b.tensor(f["output_id"])
    offsets = list(f["offsets"])
    if len(offsets) != f["num_dims"]:
        raise b.fail(f"num_dims {f['num_dims']} but {len(offsets)} offsets")
    b.op("SLICE", [b.tensor(f["input_id"]), b.constant("begin", _i32(offsets)),
                   b.constant("size", _i32(b.tensors[out].shape))], [out])


def _pad(b: _Builder, n: XNode) -> None:
    f = n.fields
    x, out = b.tensor(f["input_id"]), b.tensor(f["output_id"])
    pre, post = list(f["pre_paddings"]), list(f["post_paddings"])
    rank = len(b.tensors[x].shape)
    if len(pre) < rank or len(post) < rank:
        raise b.fail(f"{len(pre)}/{len(post)} paddings for a rank-{rank} input")
    t = b.tensors[x]
    value = b.bound(t, f["padding_value"])
    b.op("PADV2", [x, b.constant("paddings", _i32([pre[:rank], post[:rank]]).T.copy()), value], [out])


def _concat(count: int) -> Callable[[_Builder, XNode], None]:
    def run(b: _Builder, n: XNode) -> None:
        f = n.fields
        ins = [b.tensor(f[f"input{k}_id"], f"input{k}_id") for k in range(1, count + 1)]
        b.op("CONCATENATION", ins, [b.tensor(f["output_id"])],
             ops.movement.ConcatenationAttrs(int(f["axis"]), b.activation()))
    return run


def _resize_bilinear(b: _Builder, n: XNode) -> None:
    f = n.fields
    size = b.constant("size", _i32([f["new_height"], f["new_width"]]))
    align = bool(f["flags"] & FLAG_ALIGN_CORNERS)
    half = not align and not f["flags"] & FLAG_TENSORFLOW_LEGACY_MODE
    b.op("RESIZE_BILINEAR", [b.tensor(f["input_id"]), size], [b.tensor(f["output_id"])],
         ops.resize.ResizeAttrs(align, half))


def _leaky_relu(b: _Builder, n: XNode) -> None:
    f = n.fields
    b.op("LEAKY_RELU", [b.tensor(f["input_id"])], [b.clamp_after(b.tensor(f["output_id"]))],
         ops.unary.LeakyReluAttrs(float(f["negative_slope"])))


def _elu(b: _Builder, n: XNode) -> None:
    f = n.fields
    if not math.isclose(f["alpha"], 1.0):
        raise b.unsupported(f"ELU with alpha {f['alpha']} (only 1.0)")
    b.op("ELU", [b.tensor(f["input_id"])], [b.clamp_after(b.tensor(f["output_id"]))])


def _convert(b: _Builder, n: XNode) -> None:
    f = n.fields
    x, out = b.tensor(f["input_id"]), b.tensor(f["output_id"])
    src, dst = b.tensors[x], b.tensors[out]
    if b.xg.values[f["output_id"]].datatype == "qdint8":
        quant = b.xg.values[f["output_id"]].quant
        dims = quant.num_nonbatch_dims if quant is not None else 1
        # XNNPACK gives a qdint8 value its input's shape when it runs, whatever the dims it declares
        dst.shape = src.shape
        rows = ops.matmul.dynamic_rows(ops.matmul.DynamicQuantizeAttrs(dims), src.shape)
        params = b.add_tensor(f"{dst.name}_row_params", (rows, 2), np.dtype(np.float32))
        b.dynamic[out] = params
        b.op("DYNAMIC_QUANTIZE", [x], [out, params], ops.matmul.DynamicQuantizeAttrs(dims))
        return
    if src.quantization is None and dst.quantization is not None:
        b.op("QUANTIZE", [x], [out])
    elif src.quantization is not None and dst.quantization is None:
        b.op("DEQUANTIZE", [x], [out])
    elif src.quantization is not None:
        b.op("QUANTIZE", [x], [out])  # requantize
    else:
        b.op("CAST", [x], [out])


TRANSLATORS: dict[str, Callable[[_Builder, XNode], None]] = {
    "XNNAdd": _binary("ADD"),
    "XNNSubtract": _binary("SUB"),
    "XNNMultiply": _binary("MUL"),
    "XNNDiv": _binary("DIV"),
    "XNNMinimum": _binary("MINIMUM"),
    "XNNMaximum": _binary("MAXIMUM"),
    "XNNPReLU": _binary("PRELU"),
    "XNNBatchMatrixMultiply": _batch_matmul,
    "XNNFullyConnected": _fully_connected,
    "XNNConv2d": _conv,
    "XNNDepthwiseConv2d": _depthwise,
    "XNNConvTranspose2d": _deconv,
    "XNNAvgPooling2d": _pool("AVERAGE_POOL_2D"),
    "XNNMaxPooling2d": _pool("MAX_POOL_2D"),
    "XNNGlobalAvgPooling2d": _global_avg_pool,
    "XNNSoftmax": _softmax,
    "XNNSigmoid": _unary("LOGISTIC"),
    "XNNTanh": _unary("TANH"),
    "XNNClamp": _clamp,
    "XNNFloor": _unary("FLOOR"),
    "XNNCeiling": _unary("CEIL"),
    "XNNSquareRoot": _unary("SQRT"),
    "XNNReciprocalSquareRoot": _unary("RSQRT"),
    "XNNSquare": _unary("SQUARE"),
    "XNNAbs": _unary("ABS"),
    "XNNNegate": _unary("NEG"),
    "XNNExp": _unary("EXP"),
    "XNNLog": _unary("LOG"),
    "XNNSin": _unary("SIN"),
    "XNNCos": _unary("COS"),
    "XNNGelu": _unary("GELU", ops.unary.GeluAttrs(False)),
    "XNNHardswish": _unary("HARD_SWISH"),
    "XNNLeakyReLU": _leaky_relu,
    "XNNELU": _elu,
    "XNNStaticTranspose": _transpose,
    "XNNStaticReshape": _reshape,
    "XNNCopy": _copy,
    "XNNStaticSlice": _slice,
    "XNNStaticConstantPad": _pad,
    "XNNConcatenate2": _concat(2),
    "XNNConcatenate3": _concat(3),
    "XNNConcatenate4": _concat(4),
    "XNNConcatenate5": _concat(5),
    "XNNStaticResizeBilinear2D": _resize_bilinear,
    "XNNConvert": _convert,
}
