"""MEAN, REDUCE_SUM/PROD/MAX/MIN/ANY/ALL, ARGMAX, ARGMIN and TOPK_V2.

The reductions become the op layer's MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL (TFLite's reduce
kernels; quantized MEAN is LiteRT's QuantizedMeanOrSum, which rounds where Android's older
reference truncated) and ARGMAX/ARGMIN its ARG_MAX/ARG_MIN with int32 indices. NNAPI's rank-0
results are shape [1] (a RESHAPE after the op).

TOPK_V2: NNAPI orders equal values by larger index first (Android's reference sorts (value,
index) pairs and reverses them), TFLite by smaller index first. The op layer's TOPK_V2 runs on the
input reversed along the last axis, which turns one rule into the other, and the indices it finds
are mapped back (``last - index``).
"""
from __future__ import annotations

import numpy as np

from teflon_py import ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.axes import read_axis, then_reshape
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.elementwise import BinaryAttrs
from teflon_py.ops.reduce import ArgAttrs, ReduceAttrs, normalize_axes, reduced_shape

Q8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

#: operation -> (op-layer op, input type -> feature level)
REDUCTIONS = {
    Op.MEAN: ("MEAN", {T.TENSOR_FLOAT32: 2, T.TENSOR_QUANT8_ASYMM: 2, T.TENSOR_FLOAT16: 3,
                       T.TENSOR_QUANT8_ASYMM_SIGNED: 4}),
    Op.REDUCE_SUM: ("SUM", {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3}),
    Op.REDUCE_PROD: ("REDUCE_PROD", {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3}),
    Op.REDUCE_MAX: ("REDUCE_MAX", {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM: 3,
                                   T.TENSOR_QUANT8_ASYMM_SIGNED: 4}),
    Op.REDUCE_MIN: ("REDUCE_MIN", {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM: 3,
                                   T.TENSOR_QUANT8_ASYMM_SIGNED: 4}),
    Op.REDUCE_ANY: ("REDUCE_ANY", {T.TENSOR_BOOL8: 3}),
    Op.REDUCE_ALL: ("REDUCE_ALL", {T.TENSOR_BOOL8: 3}),
}
#: ARGMAX, ARGMIN and TOPK_V2 input types -> feature level
INDEXED = {T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3, T.TENSOR_INT32: 3, T.TENSOR_QUANT8_ASYMM: 3,
           T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
MAX_RANK = 4


def same_grid(c: Call, k_in: int, k_out: int) -> None:
    """A quantized output must keep input ``k_in``'s scale and zero point (the spec's rule)."""
    if c.type(k_in) not in Q8:
        return
    x, y = c.operand(k_in), c.out_operand(k_out)
    if np.float32(x.scale) != np.float32(y.scale) or x.zero_point != y.zero_point:
        raise c.error(f"scale and zero point ({y.scale}, {y.zero_point}) must equal input {k_in}'s "
                      f"({x.scale}, {x.zero_point})", k_out, "output")


def at_least_1d(c: Call, k_out: int, shape: tuple[int, ...]) -> int:
    """Where to compute output ``k_out`` whose op-layer result has ``shape``: NNAPI gives a
    rank-0 result as shape [1], so a scalar result is reshaped into it."""
    y = c.output(k_out)
    return then_reshape(c, y, (1,), "scalar result") if shape == () else y


@signature(*REDUCTIONS)
def reduce_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, REDUCTIONS[s.op][1])
    keep_dims = T.INT32 if s.op == Op.MEAN else T.BOOL
    s.expect([t, T.TENSOR_INT32, keep_dims], [t])


@lowering(*REDUCTIONS)
def lower_reduce(c: Call) -> None:
    shape = c.shape(0)
    rank = len(shape)
    if rank > MAX_RANK:
        raise c.error(f"ranks up to {MAX_RANK} are supported, got {rank}", 0)
    values = c.value(1)
    if values.ndim != 1:
        raise c.error(f"the axes must be a 1-D tensor, got shape {list(values.shape)}", 1)
    for a in values.tolist():
        if not -rank <= a < rank:
            raise c.error(f"axis {a} is out of range for a rank-{rank} input (must be in [{-rank}, {rank}))", 1)
    keep = c.scalar(2)
    keep_dims = keep > 0 if c.op == Op.MEAN else bool(keep)  # MEAN: "if positive"
    same_grid(c, 0, 0)
    axes = normalize_axes(values, rank)
    attrs = ReduceAttrs(axes, keep_dims)
    out_shape = reduced_shape(shape, axes, keep_dims)
    y = at_least_1d(c, 0, out_shape)
    c.emit(REDUCTIONS[c.op][0], attrs, [c.input(0), c.const(np.array(axes, np.int32), what="axes")], [y])


@signature(Op.ARGMAX, Op.ARGMIN)
def arg_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, INDEXED)
    s.expect([t, T.INT32], [T.TENSOR_INT32])


@lowering(Op.ARGMAX, Op.ARGMIN)
def lower_arg(c: Call) -> None:
    shape = c.shape(0)
    rank = len(shape)
    if rank < 1 or 0 in shape:
        raise c.error(f"must be a non-empty tensor of rank 1 or more, got shape {list(shape)}", 0)
    axis = read_axis(c, 1, rank)
    y = at_least_1d(c, 0, shape[:axis] + shape[axis + 1:])
    opcode = "ARG_MAX" if c.op == Op.ARGMAX else "ARG_MIN"
    c.emit(opcode, ArgAttrs(axis, np.dtype(np.int32)), [c.input(0), c.const(np.array([axis], np.int32), what="axis")],
           [y])


@signature(Op.TOPK_V2)
def topk_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, INDEXED)
    s.expect([t, T.INT32], [t, T.TENSOR_INT32])


@lowering(Op.TOPK_V2)
def lower_topk(c: Call) -> None:
    shape = c.shape(0)
    if len(shape) < 1:
        raise c.error("must have rank 1 or more", 0)
    n = shape[-1]
    k = c.scalar(1)
    if not 1 <= k <= n:
        raise c.error(f"k = {k} must be in [1, {n}] (the last dimension)", 1)
    same_grid(c, 0, 0)
    x = c.input(0)
    last = c.const(np.array([len(shape) - 1], np.int32), what="last axis")
    reversed_x = c.temp(like=x, what="input reversed along the last axis")
    c.emit("REVERSE_V2", ops.NoAttrs(), [x, last], [reversed_x])
    reversed_index = c.temp(np.int32, what="indices into the reversed input")
    c.emit("TOPK_V2", ops.NoAttrs(), [reversed_x, c.const(np.array([k], np.int32), what="k")],
           [c.output(0), reversed_index])
    c.emit("SUB", BinaryAttrs(), [c.const(np.array([n - 1], np.int32), what="last index"), reversed_index],
           [c.output(1)])
