"""Ops whose tensors are not all float32, as kernels of ``compare.cl`` (after ``broadcast.cl``):
comparisons (float32, int32, bool -> bool), LOGICAL_AND / OR / NOT, SELECT / SELECT_V2 and CAST.

bool tensors live on the device as NumPy stores them, one byte holding 0 or 1 (``uchar`` in the
kernels), so graph inputs and outputs of type bool are wrapped zero-copy like any other array.
Quantized int8/uint8 comparisons (which rescale) are not lowered here; CAST and SELECT copy
stored values and ignore quantization, as TFLite does, so they take int8/uint8 too.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.lowerings.elementwise import (
    broadcast_geometry_n,
    broadcast_reason,
    broadcast_spec,
    check_unary,
    flat_spec,
)
from teflon_py.opencl.registry import EmitContext, lowering

FILES = ("broadcast.cl", "compare.cl")
COMPARISONS = ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
#: compare's type argument per operand dtype
COMPARE_TYPES = {"float32": 0, "int32": 1, "bool": 2}
#: Truth tables (bit k: the result for outcome k) over ordered outcomes: 0 x < y, 1 x == y,
#: 2 x > y, 3 unordered (a NaN is unequal to everything, so only NOT_EQUAL holds)...
ORDERED_TABLES = {"EQUAL": 0b0010, "NOT_EQUAL": 0b1101, "LESS": 0b0001, "LESS_EQUAL": 0b0011,
                  "GREATER": 0b0100, "GREATER_EQUAL": 0b0110}
#: ... and over bool outcomes k = 2 x + y.
BOOL_TABLES = {"EQUAL": 0b1001, "NOT_EQUAL": 0b0110, "LOGICAL_AND": 0b1000, "LOGICAL_OR": 0b1110}
#: cast_values' type numbers: op code = source * 5 + destination (LOGICAL_NOT: 25)
CAST_TYPES = ("float32", "int32", "int8", "uint8", "bool")
LOGICAL_NOT_CODE = 25


def _dtype(graph: ir.Graph, t: int) -> str:
    dtype = graph.tensors[t].dtype
    return "bool" if dtype == np.bool_ else np.dtype(dtype).name


# -- comparisons and logical ops ----------------------------------------------------------------

def check_compare(graph: ir.Graph, op: ir.Operation) -> str | None:
    """Both operands of one type, a bool output, shapes that broadcast."""
    reason = broadcast_reason(graph, op)
    if reason:
        return reason
    a, b, y = (_dtype(graph, t) for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    if a != b:
        return f"operand types {a} and {b} differ"
    if y != "bool":
        return f"output type {y} is not bool"
    return None


def compare_args(graph: ir.Graph, op: ir.Operation) -> dict[str, int]:
    """compare.cl's ``type`` and ``table`` arguments for the op."""
    dtype = _dtype(graph, op.inputs[0])
    table = BOOL_TABLES[op.name] if dtype == "bool" else ORDERED_TABLES[op.name]
    return {"type": COMPARE_TYPES[dtype], "table": table}


@lowering(*COMPARISONS, check=check_compare, dtypes=("float32", "bool"), max_rank=6)
@lowering(*COMPARISONS, kind="int32", check=check_compare, dtypes=("int32", "bool"), max_rank=6)
@lowering("EQUAL", "NOT_EQUAL", "LOGICAL_AND", "LOGICAL_OR", kind="bool", check=check_compare, max_rank=6)
def compare(ctx: EmitContext, op: ir.Operation) -> None:
    """x OP y with broadcasting, one byte 0/1 out (a NaN compares unequal to everything)."""
    a, b = op.inputs[0], op.inputs[1]
    spec = broadcast_spec(FILES, "compare", [ctx.shape(a), ctx.shape(b)], ctx.shape(op.outputs[0]), ("a", "b"),
                          **compare_args(ctx.graph, op))
    ctx.launch(spec, a=a, b=b, output=ctx.output(op))


# -- SELECT, SELECT_V2 --------------------------------------------------------------------------

def select_shapes(graph: ir.Graph, op: ir.Operation) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
    """(condition, x, y) shapes as they broadcast, and the output shape to index.

    SELECT's condition may be x's shape, a scalar, or one flag per row (axis 0): the latter two
    become x's rank with trailing 1s. All-single-element operands index one element, whatever
    their declared ranks. ValueError when the shapes do not fit the op's rules.
    """
    shapes = [tuple(graph.tensors[t].shape) for t in op.inputs[:3]]
    out = tuple(graph.tensors[op.outputs[0]].shape)
    if all(int(np.prod(s)) == 1 for s in (*shapes, out)):
        return [(), (), ()], ()
    c, x, y = shapes
    if op.name == "SELECT":
        if x != y:
            raise ValueError(f"x {list(x)} and y {list(y)} must have one shape (SELECT does not broadcast them)")
        if c != x:
            if len(c) > 1 or (len(c) == 1 and (not x or c[0] != x[0])):
                raise ValueError(f"condition {list(c)} must match x {list(x)}, be a scalar, or match its first axis")
            c = c + (1,) * (len(x) - len(c))
    if tuple(np.broadcast_shapes(c, x, y)) != out:
        raise ValueError(f"output shape {list(out)} is not the broadcast of {list(c)}, {list(x)} and {list(y)}")
    broadcast_geometry_n([c, x, y], out)
    return [c, x, y], out


def check_select(graph: ir.Graph, op: ir.Operation) -> str | None:
    if len(op.inputs) != 3 or ir.NO_TENSOR in op.inputs:
        return "needs three operands"
    c, x, y, out = (_dtype(graph, t) for t in (*op.inputs, op.outputs[0]))
    if c != "bool":
        return f"condition type {c} is not bool"
    if not x == y == out:
        return f"x, y and output types ({x}, {y}, {out}) differ"
    try:
        select_shapes(graph, op)
    except ValueError as e:
        return str(e)
    return None


def select_spec(shapes: list[tuple[int, ...]], out: tuple[int, ...], itemsize: int) -> KernelSpec:
    """cond ? x : y broadcast, copying values of ``itemsize`` bytes (4 or 1)."""
    return broadcast_spec(FILES, "select_values", shapes, out, ("c", "x", "y"), bytes=itemsize)


@lowering("SELECT", "SELECT_V2", kind="bool", dtypes=("bool", "float32", "int32", "int8", "uint8"),
          check=check_select, max_rank=6)
def select(ctx: EmitContext, op: ir.Operation) -> None:
    """The stored values of x or y (quantization parameters are not looked at, as in TFLite)."""
    shapes, out = select_shapes(ctx.graph, op)
    c, x, y = op.inputs[:3]
    ctx.launch(select_spec(shapes, out, ctx.graph.tensors[x].dtype.itemsize), c=c, x=x, y=y, output=ctx.output(op))


# -- CAST, LOGICAL_NOT ----------------------------------------------------------------------------

def check_cast(graph: ir.Graph, op: ir.Operation) -> str | None:
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if int(np.prod(x.shape)) != int(np.prod(y.shape)):
        return f"output shape {list(y.shape)} holds a different number of values than input {list(x.shape)}"
    return None


@lowering("CAST", kind="float32", dtypes=CAST_TYPES, check=check_cast, max_rank=None)
@lowering("CAST", kind="int32", dtypes=CAST_TYPES, check=check_cast, max_rank=None)
@lowering("CAST", kind="int8", dtypes=CAST_TYPES, check=check_cast, max_rank=None)
@lowering("CAST", kind="uint8", dtypes=CAST_TYPES, check=check_cast, max_rank=None)
@lowering("CAST", kind="bool", dtypes=CAST_TYPES, check=check_cast, max_rank=None)
def cast(ctx: EmitContext, op: ir.Operation) -> None:
    """static_cast as TFLite: integers wrap, non-zero is true, float to integer saturates (NaN -> max)."""
    x = op.inputs[0]
    code = CAST_TYPES.index(_dtype(ctx.graph, x)) * 5 + CAST_TYPES.index(_dtype(ctx.graph, op.outputs[0]))
    ctx.launch(flat_spec(FILES, "cast_values", int(np.prod(ctx.shape(x))), op=code), input=x, output=ctx.output(op))


@lowering("LOGICAL_NOT", kind="bool", check=check_unary, max_rank=None)
def logical_not(ctx: EmitContext, op: ir.Operation) -> None:
    x = op.inputs[0]
    spec = flat_spec(FILES, "cast_values", int(np.prod(ctx.shape(x))), op=LOGICAL_NOT_CODE)
    ctx.launch(spec, input=x, output=ctx.output(op))
