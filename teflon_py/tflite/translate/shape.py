"""TFLite options <-> op-layer attributes: the shape family (see ``teflon_py.ops.shape``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.ops.common import NoAttrs
from teflon_py.ops.shape import ExpandDimsAttrs, ReshapeAttrs, SqueezeAttrs, reshape_operand_is_shape
from teflon_py.tflite import options as O
from teflon_py.tflite.schema import fb
from teflon_py.tflite.translate.common import register_empty
from teflon_py.tflite.translate.registry import Source, parses, writes

#: ops without attributes -> their (empty) options table
EMPTY = {"RANK": O.RankOptions, "BROADCAST_TO": O.BroadcastToOptions, "BROADCAST_ARGS": None,
         "FILL": O.FillOptions, "RANGE": O.RangeOptions}


def constant_ints(t: ir.Tensor | None) -> tuple[int, ...] | None:
    """A constant operand's values as ints (None: absent or runtime)."""
    if t is None or t.data is None:
        return None
    return tuple(int(v) for v in np.asarray(t.data).reshape(-1))


def axis_in(axis: int, rank: int) -> int:
    """``axis`` made non-negative where it lies in [-rank, rank); else as given (``infer`` refuses it)."""
    return axis % rank if rank > 0 and -rank <= axis < rank else axis


register_empty(EMPTY)


@parses("RESHAPE")
def parse_reshape(src: Source) -> ReshapeAttrs:
    operand = src.input(1)
    if reshape_operand_is_shape(operand):
        if operand.data is None and tuple(operand.shape) != (0,):
            return ReshapeAttrs(None)
        return ReshapeAttrs(constant_ints(operand) or ())
    new_shape = src.options.new_shape if isinstance(src.options, O.ReshapeOptions) else None
    if new_shape is not None:
        shape = tuple(int(d) for d in new_shape)
        return ReshapeAttrs(() if shape == (0,) else shape)  # legacy models write [0] for a scalar
    return ReshapeAttrs(tuple(src.outputs[0].shape))


@writes("RESHAPE")
def write_reshape(attrs: ReshapeAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.ReshapeOptions(new_shape=None if attrs.shape is None else tuple(attrs.shape))


@parses("SQUEEZE")
def parse_squeeze(src: Source) -> SqueezeAttrs:
    return SqueezeAttrs(tuple(int(d) for d in (src.option(O.SqueezeOptions).squeeze_dims or ())))


@writes("SQUEEZE")
def write_squeeze(attrs: SqueezeAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.SqueezeOptions(squeeze_dims=tuple(attrs.dims))


@parses("EXPAND_DIMS")
def parse_expand_dims(src: Source) -> ExpandDimsAttrs:
    axis = constant_ints(src.input(1))
    if not axis:
        return ExpandDimsAttrs(None)
    x = src.input(0)
    return ExpandDimsAttrs(axis_in(axis[0], len(x.shape) + 1) if x is not None else axis[0])


@writes("EXPAND_DIMS")
def write_expand_dims(attrs: ExpandDimsAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.ExpandDimsOptions()


@parses("SHAPE")
def parse_shape(src: Source) -> NoAttrs:
    return NoAttrs()  # out_type is the output's declared dtype


@writes("SHAPE")
def write_shape(attrs: NoAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    dtype = np.dtype(graph.tensors[op.outputs[0]].dtype)
    return O.ShapeOptions(out_type=fb.TensorType.INT64 if dtype == np.int64 else fb.TensorType.INT32)
