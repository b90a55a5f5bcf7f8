"""RESHAPE, SQUEEZE, EXPAND_DIMS, RANK, FILL: shapes made or reported (op layer: the TFLite ops
of the same names).

SQUEEZE's dimensions are an operand in NNAPI and an attribute in the op layer, so their values
are read (a constant, or a model input the graph is specialised to). Where every dimension is
squeezed NNAPI gives shape [1] (TFLite: a scalar), and an empty list given squeezes nothing (the
spec's "only squeezes the dimensions listed", as Android's reference implementation): both are
a RESHAPE.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.copies import (
    CLASSIC,
    int_constant,
    rank_between,
    reshape,
    same_quantization,
    vector_shape,
)
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.shape import ExpandDimsAttrs, ReshapeAttrs, SqueezeAttrs

RESHAPE_LEVELS = {**CLASSIC, T.TENSOR_INT32: 6}
SQUEEZE_LEVELS = {**CLASSIC, T.TENSOR_FLOAT32: 2, T.TENSOR_QUANT8_ASYMM: 2}
EXPAND_LEVELS = {T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3, T.TENSOR_INT32: 3, T.TENSOR_QUANT8_ASYMM: 3,
                 T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
RANK_LEVELS = {t: 4 for t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
                              T.TENSOR_QUANT16_SYMM, T.TENSOR_BOOL8, T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                              T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)}
#: FILL: output type -> its value scalar's type
FILL_VALUE = {T.TENSOR_FLOAT16: T.FLOAT16, T.TENSOR_FLOAT32: T.FLOAT32, T.TENSOR_INT32: T.INT32}


@signature(Op.RESHAPE)
def reshape_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, RESHAPE_LEVELS)
    s.expect([t, T.TENSOR_INT32], [t])


@lowering(Op.RESHAPE)
def lower_reshape(c: Call) -> None:
    shape = c.shape(0)
    rank_between(c, 0, 0, 4)
    vector_shape(c, 1)
    target = int_constant(c, 1)
    if target is not None:
        size, known = int(np.prod(shape, dtype=np.int64)), int(np.prod(target[target != -1], dtype=np.int64))
        if (target == -1).sum() > 1 or (target < -1).any():
            raise c.error(f"shape {target.tolist()} may hold one -1 and no other negative value", 1)
        if (known != size) if -1 not in target else (known == 0 or size % known):
            raise c.error(f"shape {target.tolist()} does not hold the input's {size} elements", 1)
    same_quantization(c)
    attrs = ReshapeAttrs(None if target is None else tuple(target.tolist()))
    c.emit("RESHAPE", attrs, [c.input(0), c.input(1)], [c.output(0)])


@signature(Op.SQUEEZE)
def squeeze_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, SQUEEZE_LEVELS)
    s.expect([t, T.TENSOR_INT32], [t], optional=1)


@lowering(Op.SQUEEZE)
def lower_squeeze(c: Call) -> None:
    shape = c.shape(0)
    rank = rank_between(c, 0, 1, 4)
    same_quantization(c)
    x, y = c.input(0), c.output(0)
    if c.omitted(1):
        axes = [d for d in range(rank) if shape[d] == 1]
    else:
        vector_shape(c, 1)
        axes = []
        for d in np.asarray(c.value(1)).reshape(-1).tolist():
            if not -rank <= d < rank or shape[d % rank] != 1:
                raise c.error(f"dimension {d} cannot be squeezed from shape {list(shape)}", 1)
            axes.append(d % rank)
    kept = tuple(n for d, n in enumerate(shape) if d not in axes)
    if not axes or not kept:  # nothing squeezed, or everything: shape [1]
        reshape(c, x, kept or (1,), y)
        return
    c.emit("SQUEEZE", SqueezeAttrs(tuple(sorted(set(axes)))), [x], [y])


@signature(Op.EXPAND_DIMS)
def expand_dims_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, EXPAND_LEVELS)
    s.expect([t, T.INT32], [t])


@lowering(Op.EXPAND_DIMS)
def lower_expand_dims(c: Call) -> None:
    rank = rank_between(c, 0, 1, None)
    axis = c.scalar(1)
    if not -(rank + 1) <= axis < rank + 1:
        raise c.error(f"axis {axis} is outside [{-(rank + 1)}, {rank + 1})", 1)
    axis %= rank + 1
    same_quantization(c)
    c.emit("EXPAND_DIMS", ExpandDimsAttrs(axis), [c.input(0), c.const(np.array([axis], np.int32), what="axis")],
           [c.output(0)])


@signature(Op.RANK)
def rank_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, RANK_LEVELS)
    s.expect([t], [T.INT32])


@lowering(Op.RANK)
def lower_rank(c: Call) -> None:
    rank_between(c, 0, 1, None)
    c.emit("RANK", ops.NoAttrs(), [c.input(0)], [c.output(0)])


@signature(Op.FILL)
def fill_signature(s: Sig) -> None:
    t = s.output_type(0)
    s.supported(t, {k: 4 for k in FILL_VALUE}, "output 0")
    s.expect([T.TENSOR_INT32, FILL_VALUE[t]], [t])


@lowering(Op.FILL)
def lower_fill(c: Call) -> None:
    vector_shape(c, 0)
    dims = int_constant(c, 0)
    if dims is not None and (dims.size == 0 or (dims < 0).any()):
        raise c.error(f"the shape {dims.tolist()} must have one or more dimensions, none negative", 0)
    y = c.output(0)  # float32 for a float16 output, which the framework rounds back
    value = c.const(np.array(c.scalar(1), c.ir_tensor(y).dtype), what="value")
    c.emit("FILL", ops.NoAttrs(), [c.input(0), value], [y])
