"""CONCATENATION, PACK, SPLIT, TRANSPOSE, CHANNEL_SHUFFLE, TILE, REVERSE: elements moved whole
(op layer: the TFLite ops of the same names; REVERSE is REVERSE_V2; CHANNEL_SHUFFLE, which TFLite
lacks, is a RESHAPE / TRANSPOSE / RESHAPE composition).

CONCATENATION is the one that may compute: QUANT8_ASYMM inputs may differ in scale and zero point
from the output (since feature level 3) and are requantized as TFLite's uint8 kernel does; so may
QUANT8_ASYMM_SIGNED inputs, which Android's reference implementation shifts to uint8 (zero point +
128, exact), concatenates as uint8 and shifts back, as done here.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.copies import (
    CLASSIC,
    LEVEL3,
    axis_in,
    int_constant,
    rank_between,
    requantize,
    reshape,
    same_quantization,
    shifted,
    vector_shape,
)
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.movement import ConcatenationAttrs, PackAttrs, SplitAttrs

LEVEL6 = {T.TENSOR_FLOAT16: 6, T.TENSOR_FLOAT32: 6, T.TENSOR_QUANT8_ASYMM: 6, T.TENSOR_QUANT8_ASYMM_SIGNED: 6,
          T.TENSOR_INT32: 6}
LEVEL7 = {t: 7 for t in LEVEL6}
SHUFFLE = {T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3, T.TENSOR_QUANT8_ASYMM: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}


# -- CONCATENATION ------------------------------------------------------------------------------

@signature(Op.CONCATENATION)
def concatenation_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, CLASSIC)
    if s.n_in < 2:
        raise s.error(f"takes one or more tensors and the axis, got {s.n_in} inputs")
    s.expect([t] * (s.n_in - 1) + [T.INT32], [t])


@lowering(Op.CONCATENATION)
def lower_concatenation(c: Call) -> None:
    n = c.n_in - 1
    rank = rank_between(c, 0, 1, 4)
    axis = axis_in(c, n, rank, lo=0)  # Android's reference takes 0 <= axis < rank
    first = c.shape(0)
    for k in range(1, n):
        shape = c.shape(k)
        if len(shape) != rank or any(a != b for i, (a, b) in enumerate(zip(shape, first)) if i != axis):
            raise c.error(f"shape {list(shape)} does not match input 0's {list(first)} off axis {axis}", k)
    xs = [c.input(k) for k in range(n)]
    attrs = ConcatenationAttrs(axis)
    out, y = c.out_operand(0), c.output(0)
    if c.type(0) == T.TENSOR_QUANT8_ASYMM_SIGNED and any(
            (c.operand(k).scale, c.operand(k).zero_point) != (out.scale, out.zero_point) for k in range(n)):
        # Android's reference: int8 shifted to uint8 (exact), the rescaling uint8 concatenation, shifted back
        wide = [requantize(c, x, np.uint8, 128, f"input {k} as uint8") for k, x in enumerate(xs)]
        joined = c.temp(np.uint8, shifted(out.quantization(), 128), what="result as uint8")
        c.emit("CONCATENATION", attrs, wide, [joined])
        c.emit("QUANTIZE", ops.NoAttrs(), [joined], [y])
        return
    c.emit("CONCATENATION", attrs, xs, [y])


# -- PACK / SPLIT -------------------------------------------------------------------------------

@signature(Op.PACK)
def pack_signature(s: Sig) -> None:
    t = s.input_type(1)
    s.supported(t, LEVEL6, "input 1")
    s.expect([T.INT32] + [t] * (s.n_in - 1), [t])


@lowering(Op.PACK)
def lower_pack(c: Call) -> None:
    rank = rank_between(c, 1, 1, None)
    axis = axis_in(c, 0, rank + 1, lo=0)  # the spec: [0, R + 1)
    shape = c.shape(1)
    for k in range(2, c.n_in):
        if c.shape(k) != shape:
            raise c.error(f"shape {list(c.shape(k))} differs from input 1's {list(shape)}", k)
    if c.type(1) in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        for k in range(2, c.n_in):
            if (c.operand(k).scale, c.operand(k).zero_point) != (c.operand(1).scale, c.operand(1).zero_point):
                raise c.error("every input must have input 1's scale and zero point", k)
        same_quantization(c, 1)
    c.emit("PACK", PackAttrs(axis, c.n_in - 1), [c.input(k) for k in range(1, c.n_in)], [c.output(0)])


@signature(Op.SPLIT)
def split_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVEL3)
    if s.n_out < 1:
        raise s.error("takes one or more outputs")
    s.expect([t, T.INT32, T.INT32], [t] * s.n_out)


@lowering(Op.SPLIT)
def lower_split(c: Call) -> None:
    rank = rank_between(c, 0, 1, None)
    axis = axis_in(c, 1, rank)
    parts = c.scalar(2)
    size = c.shape(0)[axis]
    if parts != c.n_out:
        raise c.error(f"num_splits {parts} differs from the {c.n_out} outputs", 2)
    if size % parts:
        raise c.error(f"num_splits {parts} does not divide dimension {axis} of size {size}", 2)
    for k in range(c.n_out):
        same_quantization(c, 0, k)
    axis_t = c.const(np.array([axis], np.int32), what="axis")
    c.emit("SPLIT", SplitAttrs(parts, axis), [axis_t, c.input(0)], [c.output(k) for k in range(c.n_out)])


# -- TRANSPOSE / CHANNEL_SHUFFLE -------------------------------------------------------------------

@signature(Op.TRANSPOSE)
def transpose_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, {**CLASSIC, T.TENSOR_FLOAT32: 2, T.TENSOR_QUANT8_ASYMM: 2})
    s.expect([t, T.TENSOR_INT32], [t], optional=1)


@lowering(Op.TRANSPOSE)
def lower_transpose(c: Call) -> None:
    rank = rank_between(c, 0, 1, 4)
    same_quantization(c)
    if c.omitted(1):  # the spec: no perm reverses the dimensions
        perm = c.const(np.arange(rank - 1, -1, -1, dtype=np.int32), what="perm")
    else:
        vector_shape(c, 1, rank)
        p = int_constant(c, 1)
        if p is not None and sorted(p.tolist()) != list(range(rank)):
            raise c.error(f"perm {p.tolist()} is not a permutation of {rank} dimensions", 1)
        perm = c.input(1)
    c.emit("TRANSPOSE", ops.NoAttrs(), [c.input(0), perm], [c.output(0)])


@signature(Op.CHANNEL_SHUFFLE)
def channel_shuffle_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, SHUFFLE)
    s.expect([t, T.INT32, T.INT32], [t])


@lowering(Op.CHANNEL_SHUFFLE)
def lower_channel_shuffle(c: Call) -> None:
    """output channel k * groups + g = input channel g * group_size + k: the channel axis viewed as
    [groups, group_size], those two swapped, viewed as one axis again. A composition of existing
    ops rather than a new op: RESHAPE and TRANSPOSE copy bit-exactly for every type and both run
    on OpenCL already."""
    shape = c.shape(0)
    rank = rank_between(c, 0, 1, 4)
    groups = c.scalar(1)
    axis = axis_in(c, 2, rank)
    channels = shape[axis]
    if groups < 1 or channels % groups:
        raise c.error(f"num_groups {groups} must be positive and divide the {channels} channels", 1)
    same_quantization(c)
    pre, post = int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis + 1:], dtype=np.int64))
    x = c.input(0)
    grouped = c.temp(like=x, what="channels as [groups, group size]")
    reshape(c, x, (pre, groups, channels // groups, post), grouped)
    swapped = c.temp(like=x, what="groups swapped")
    c.emit("TRANSPOSE", ops.NoAttrs(), [grouped, c.const(np.array([0, 2, 1, 3], np.int32), what="perm")],
           [swapped])
    reshape(c, swapped, shape, c.output(0))


# -- TILE / REVERSE -------------------------------------------------------------------------------

@signature(Op.TILE)
def tile_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVEL3)
    s.expect([t, T.TENSOR_INT32], [t])


@lowering(Op.TILE)
def lower_tile(c: Call) -> None:
    rank = rank_between(c, 0, 1, None)
    vector_shape(c, 1, rank)
    m = int_constant(c, 1)
    if m is not None and (m < 0).any():
        raise c.error(f"multiples {m.tolist()} must be >= 0", 1)
    same_quantization(c)
    c.emit("TILE", ops.NoAttrs(), [c.input(0), c.input(1)], [c.output(0)])


@signature(Op.REVERSE)
def reverse_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVEL7)
    s.expect([t, T.TENSOR_INT32], [t])


@lowering(Op.REVERSE)
def lower_reverse(c: Call) -> None:
    rank = rank_between(c, 0, 1, 8)
    vector_shape(c, 1, 1)
    axis = int_constant(c, 1)
    if axis is not None and not 0 <= int(axis[0]) < rank:
        raise c.error(f"axis {int(axis[0])} is outside [0, {rank})", 1)
    same_quantization(c)
    c.emit("REVERSE_V2", ops.NoAttrs(), [c.input(0), c.input(1)], [c.output(0)])
