"""STRIDED_SLICE, SLICE, GATHER, EMBEDDING_LOOKUP: parts of a tensor picked by position (op
layer: the TFLite ops of the same names; GATHER's axis, an operand in NNAPI, becomes its attribute).

NNAPI's STRIDED_SLICE has no ellipsis or new-axis masks, requires a shrunk dimension's slice to
hold exactly one element, and gives shape [1] where every dimension is shrunk (TFLite: a scalar,
so a RESHAPE follows there).
"""
from __future__ import annotations

import numpy as np

from teflon_py import ops
from teflon_py.errors import ModelError
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.copies import (
    CLASSIC,
    LEVEL3,
    axis_in,
    int_constant,
    rank_between,
    reshape,
    same_quantization,
    vector_shape,
)
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.indexing import GatherAttrs, StridedSliceAttrs, strided_slice_ranges

SLICE_LEVELS = {**CLASSIC, T.TENSOR_FLOAT32: 2, T.TENSOR_QUANT8_ASYMM: 2}
LOOKUP_LEVELS = {T.TENSOR_FLOAT32: 1, T.TENSOR_INT32: 3, T.TENSOR_QUANT8_ASYMM: 3, T.TENSOR_FLOAT16: 4,
                 T.TENSOR_QUANT8_ASYMM_SIGNED: 4}


# -- STRIDED_SLICE / SLICE ---------------------------------------------------------------------------

@signature(Op.STRIDED_SLICE)
def strided_slice_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, SLICE_LEVELS)
    s.expect([t, T.TENSOR_INT32, T.TENSOR_INT32, T.TENSOR_INT32, T.INT32, T.INT32, T.INT32], [t])


@lowering(Op.STRIDED_SLICE)
def lower_strided_slice(c: Call) -> None:
    shape = c.shape(0)
    rank = rank_between(c, 0, 1, 4)
    for k in (1, 2, 3):
        vector_shape(c, k, rank)
    begin_mask, end_mask, shrink = (c.scalar(k) for k in (4, 5, 6))
    attrs = StridedSliceAttrs(begin_mask=begin_mask, end_mask=end_mask, shrink_axis_mask=shrink)
    params = [int_constant(c, k) for k in (1, 2, 3)]
    if all(p is not None for p in params):
        strides = params[2]
        if (strides == 0).any():
            raise c.error(f"strides {strides.tolist()} must be non-zero", 3)
        try:  # the ranges without shrinking: a shrunk dimension must hold one element
            _, ranges = strided_slice_ranges(StridedSliceAttrs(begin_mask, end_mask), shape, *params,
                                             label=c.label)
        except ModelError as e:
            raise c.error(str(e), 1) from None
        for d, r in enumerate(ranges):
            if shrink >> d & 1 and len(r) != 1:
                raise c.error(f"dimension {d} is shrunk, but its slice holds {len(r)} elements, not 1", 6)
    same_quantization(c)
    x, ins = c.input(0), [c.input(k) for k in (1, 2, 3)]
    every = (1 << rank) - 1
    if shrink & every != every:
        c.emit("STRIDED_SLICE", attrs, [x, *ins], [c.output(0)])
        return
    scalar = c.temp(like=x, what="shrunk to a scalar")  # the spec: every dimension shrunk gives [1]
    c.emit("STRIDED_SLICE", attrs, [x, *ins], [scalar])
    reshape(c, scalar, (1,), c.output(0))


@signature(Op.SLICE)
def slice_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVEL3)
    s.expect([t, T.TENSOR_INT32, T.TENSOR_INT32], [t])


@lowering(Op.SLICE)
def lower_slice(c: Call) -> None:
    shape = c.shape(0)
    rank = rank_between(c, 0, 1, None)
    vector_shape(c, 1, rank)
    vector_shape(c, 2, rank)
    begin, size = int_constant(c, 1), int_constant(c, 2)
    if begin is not None and ((begin < 0) | (begin > np.array(shape))).any():
        raise c.error(f"begin {begin.tolist()} must lie within the input's shape {list(shape)}", 1)
    if begin is not None and size is not None:
        for d, (b, n, dim) in enumerate(zip(begin.tolist(), size.tolist(), shape)):
            if n < -1 or (n != -1 and b + n > dim):
                raise c.error(f"size {n} from {b} exceeds dimension {d} of size {dim}", 2)
    same_quantization(c)
    c.emit("SLICE", ops.NoAttrs(), [c.input(0), c.input(1), c.input(2)], [c.output(0)])


# -- GATHER / EMBEDDING_LOOKUP ------------------------------------------------------------------------

@signature(Op.GATHER)
def gather_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVEL3)
    s.expect([t, T.INT32, T.TENSOR_INT32], [t])


def check_indices(c: Call, k: int, limit: int) -> None:
    """Where input ``k`` is a constant, each index must lie in [0, limit)."""
    idx = int_constant(c, k)
    if idx is not None and idx.size and (idx.min() < 0 or idx.max() >= limit):
        raise c.error(f"indices must lie in [0, {limit}), got {idx.min()} to {idx.max()}", k)


@lowering(Op.GATHER)
def lower_gather(c: Call) -> None:
    rank = rank_between(c, 0, 1, None)
    axis = axis_in(c, 1, rank)
    check_indices(c, 2, c.shape(0)[axis])
    same_quantization(c)
    c.emit("GATHER", GatherAttrs(axis), [c.input(0), c.input(2)], [c.output(0)])


@signature(Op.EMBEDDING_LOOKUP)
def embedding_lookup_signature(s: Sig) -> None:
    t = s.input_type(1)
    s.supported(t, LOOKUP_LEVELS, "input 1")
    s.expect([T.TENSOR_INT32, t], [t])


@lowering(Op.EMBEDDING_LOOKUP)
def lower_embedding_lookup(c: Call) -> None:
    vector_shape(c, 0)
    rank_between(c, 1, 2, None)
    check_indices(c, 0, c.shape(1)[0])
    same_quantization(c, 1)
    c.emit("EMBEDDING_LOOKUP", ops.NoAttrs(), [c.input(0), c.input(1)], [c.output(0)])
