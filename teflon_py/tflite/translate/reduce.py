"""TFLite options <-> op-layer attributes: the reduce family (see ``teflon_py.ops.reduce``).

The axes operand, where constant, becomes the attributes' axes; it stays an operand of the op
(TFLite's encoding), so writing back needs nothing more than the options table."""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.ops.reduce import REDUCTIONS, ArgAttrs, CumsumAttrs, ReduceAttrs, normalize_axes
from teflon_py.tflite.options import ArgMaxOptions, ArgMinOptions, CumsumOptions, ReducerOptions
from teflon_py.tflite.schema import fb
from teflon_py.tflite.translate.registry import Source, parses, writes

#: ArgMax/ArgMinOptions.output_type (a TensorType) <-> dtype
INDEX_TYPES = {fb.TensorType.INT32: np.dtype(np.int32), fb.TensorType.INT64: np.dtype(np.int64),
               fb.TensorType.FLOAT32: np.dtype(np.float32), fb.TensorType.INT16: np.dtype(np.int16),
               fb.TensorType.UINT8: np.dtype(np.uint8), fb.TensorType.INT8: np.dtype(np.int8)}
INDEX_CODES = {v: k for k, v in INDEX_TYPES.items()}
ARG_OPTIONS = {"ARG_MAX": ArgMaxOptions, "ARG_MIN": ArgMinOptions}


def _constant(src: Source, k: int) -> np.ndarray | None:
    t = src.input(k)
    return None if t is None or t.data is None else np.asarray(t.data)


def _rank(src: Source) -> int:
    x = src.input(0)
    return len(x.shape) if x is not None else 0


def _one_axis(src: Source) -> int | None:
    data = _constant(src, 1)
    if data is None or data.size != 1:
        return None
    (axis,) = normalize_axes(data, _rank(src))
    return axis


@parses(*REDUCTIONS)
def parse_reduce(src: Source) -> ReduceAttrs:
    data = _constant(src, 1)
    axes = None if data is None else normalize_axes(data, _rank(src))
    return ReduceAttrs(axes, bool(src.option(ReducerOptions).keep_dims))


@writes(*REDUCTIONS)
def write_reduce(attrs: ReduceAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return ReducerOptions(keep_dims=attrs.keep_dims)


@parses("ARG_MAX", "ARG_MIN")
def parse_arg(src: Source) -> ArgAttrs:
    code = int(src.option(ARG_OPTIONS[src.name]).output_type)
    if code not in INDEX_TYPES:
        raise src.fail(f"unknown output type {code}")
    return ArgAttrs(_one_axis(src), INDEX_TYPES[code])


@writes("ARG_MAX", "ARG_MIN")
def write_arg(attrs: ArgAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return ARG_OPTIONS[op.name](output_type=INDEX_CODES[np.dtype(attrs.output_type)])


@parses("CUMSUM")
def parse_cumsum(src: Source) -> CumsumAttrs:
    o = src.option(CumsumOptions)
    return CumsumAttrs(_one_axis(src), bool(o.exclusive), bool(o.reverse))


@writes("CUMSUM")
def write_cumsum(attrs: CumsumAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return CumsumOptions(exclusive=attrs.exclusive, reverse=attrs.reverse)
