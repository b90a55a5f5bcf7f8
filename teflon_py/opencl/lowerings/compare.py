"""Ops whose tensors are not all float32, as kernels of ``compare.cl`` (after ``broadcast.cl``):
comparisons (float32, int32, bool -> bool), LOGICAL_AND / OR / NOT, SELECT / SELECT_V2 and CAST (float16 <-> float32 too).

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
    broadcast_reason,
    broadcast_spec,
    check_unary,
    flat_spec,
    geometry_reason,
)
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.elementwise import select_layout

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


def _dtype(t: ir.Tensor) -> str:
    return "bool" if t.dtype == np.bool_ else np.dtype(t.dtype).name


# -- comparisons and logical ops ----------------------------------------------------------------

def check_compare(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    """Both operands of one type, a bool output, shapes that broadcast."""
    reason = broadcast_reason(tensors)
    if reason:
        return reason
    a, b, y = (_dtype(t) for t in (tensors.inputs[0], tensors.inputs[1], tensors.outputs[0]))
    if a != b:
        return f"operand types {a} and {b} differ"
    if y != "bool":
        return f"output type {y} is not bool"
    return None


def compare_args(name: str, dtype: str) -> dict[str, int]:
    """compare.cl's ``type`` and ``table`` arguments for op ``name`` on operands of ``dtype``."""
    table = BOOL_TABLES[name] if dtype == "bool" else ORDERED_TABLES[name]
    return {"type": COMPARE_TYPES[dtype], "table": table}


@register(*COMPARISONS, check=check_compare, dtypes=("float32", "bool"), max_rank=6)
@register(*COMPARISONS, kind="int32", check=check_compare, dtypes=("int32", "bool"), max_rank=6)
@register("EQUAL", "NOT_EQUAL", "LOGICAL_AND", "LOGICAL_OR", kind="bool", check=check_compare, max_rank=6)
def compare(ctx: OpEmit, attrs: object) -> None:
    """x OP y with broadcasting, one byte 0/1 out (a NaN compares unequal to everything)."""
    a, b = ctx.operand(0), ctx.operand(1)
    args = compare_args(ctx.op.name, _dtype(ctx.graph.tensors[a]))
    spec = broadcast_spec(FILES, "compare", [ctx.shape(a), ctx.shape(b)], ctx.shape(ctx.op.outputs[0]), ("a", "b"),
                          **args)
    ctx.launch(spec, a=a, b=b, output=ctx.output())


# -- SELECT, SELECT_V2 --------------------------------------------------------------------------

def _select_reason(name: str, tensors: OpTensors) -> str | None:
    if len(tensors.inputs) != 3 or any(t is None for t in tensors.inputs):
        return "needs three operands"
    c, x, y, out = (_dtype(t) for t in (*tensors.inputs, tensors.outputs[0]))
    if c != "bool":
        return f"condition type {c} is not bool"
    if not x == y == out:
        return f"x, y and output types ({x}, {y}, {out}) differ"
    layout = select_layout(name, *(tuple(t.shape) for t in tensors.inputs), tuple(tensors.outputs[0].shape))
    if isinstance(layout, str):
        return layout
    return geometry_reason(*layout)


def check_select(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    return _select_reason("SELECT", tensors)


def check_select_v2(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    return _select_reason("SELECT_V2", tensors)


def select_spec(shapes: list[tuple[int, ...]], out: tuple[int, ...], itemsize: int) -> KernelSpec:
    """cond ? x : y broadcast, copying values of ``itemsize`` bytes (4 or 1)."""
    return broadcast_spec(FILES, "select_values", shapes, out, ("c", "x", "y"), bytes=itemsize)


SELECT_TYPES = ("bool", "float32", "int32", "int8", "uint8")


@register("SELECT", kind="bool", dtypes=SELECT_TYPES, check=check_select, max_rank=6)
@register("SELECT_V2", kind="bool", dtypes=SELECT_TYPES, check=check_select_v2, max_rank=6)
def select(ctx: OpEmit, attrs: object) -> None:
    """The stored values of x or y (quantization parameters are not looked at, as in TFLite)."""
    c, x, y = (ctx.operand(k) for k in range(3))
    layout = select_layout(ctx.op.name, ctx.shape(c), ctx.shape(x), ctx.shape(y), ctx.shape(ctx.op.outputs[0]))
    if isinstance(layout, str):
        raise ValueError(layout)  # noqa: TRY004  (check_select said so first)
    shapes, out = layout
    ctx.launch(select_spec(shapes, out, ctx.graph.tensors[x].dtype.itemsize), c=c, x=x, y=y, output=ctx.output())


# -- CAST, LOGICAL_NOT ----------------------------------------------------------------------------

#: cast_half's op per (source, destination): float16 <-> float32 only
HALF_CASTS = {("float16", "float32"): 0, ("float32", "float16"): 1}
CAST_DTYPES = (*CAST_TYPES, "float16")


def check_cast(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    x, y = tensors.inputs[0], tensors.outputs[0]
    if int(np.prod(x.shape)) != int(np.prod(y.shape)):
        return f"output shape {list(y.shape)} holds a different number of values than input {list(x.shape)}"
    pair = (_dtype(x), _dtype(y))
    if "float16" in pair and pair not in HALF_CASTS:
        return f"cast from {pair[0]} to {pair[1]} is not supported (float16 casts to and from float32 only)"
    return None


@register("CAST", kind="float16", dtypes=CAST_DTYPES, check=check_cast, max_rank=None)
@register("CAST", kind="float32", dtypes=CAST_DTYPES, check=check_cast, max_rank=None)
@register("CAST", kind="int32", dtypes=CAST_DTYPES, check=check_cast, max_rank=None)
@register("CAST", kind="int8", dtypes=CAST_DTYPES, check=check_cast, max_rank=None)
@register("CAST", kind="uint8", dtypes=CAST_DTYPES, check=check_cast, max_rank=None)
@register("CAST", kind="bool", dtypes=CAST_DTYPES, check=check_cast, max_rank=None)
def cast(ctx: OpEmit, attrs: object) -> None:
    """static_cast as TFLite: integers wrap, non-zero is true, float to integer saturates (NaN -> max)."""
    x, y = ctx.operand(0), ctx.op.outputs[0]
    pair = (_dtype(ctx.graph.tensors[x]), _dtype(ctx.graph.tensors[y]))
    n = int(np.prod(ctx.shape(x)))
    if pair in HALF_CASTS:  # float16 rounds to nearest even, as NumPy's astype
        ctx.launch(flat_spec(FILES, "cast_half", n, op=HALF_CASTS[pair]), input=x, output=ctx.output())
        return
    code = CAST_TYPES.index(pair[0]) * 5 + CAST_TYPES.index(pair[1])
    ctx.launch(flat_spec(FILES, "cast_values", n, op=code), input=x, output=ctx.output())


@register("LOGICAL_NOT", kind="bool", check=check_unary, max_rank=None)
def logical_not(ctx: OpEmit, attrs: object) -> None:
    x = ctx.operand(0)
    spec = flat_spec(FILES, "cast_values", int(np.prod(ctx.shape(x))), op=LOGICAL_NOT_CODE)
    ctx.launch(spec, input=x, output=ctx.output())
