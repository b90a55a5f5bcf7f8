"""The elementwise family: attributes, rules and shape inference.

Binary arithmetic (ADD, SUB, MUL, DIV carry a fused activation; ADD/SUB also TFLite's
``pot_scale_int16`` switch), the other binary maths (no attributes), comparisons and logical ops
(bool outputs), ADD_N, SELECT and SELECT_V2. The rules here (broadcasting, a fused activation
that is a clamp, per-tensor quantization) are the ones the fallback and OpenCL both call.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon_py import ir
from teflon_py.errors import UnsupportedError
from teflon_py.ops.common import NO_ACTIVATION, FusedActivation, NoAttrs
from teflon_py.ops.registry import Inputs, Meta, define


@dataclass(frozen=True)
class BinaryAttrs:
    """ADD, SUB, MUL, DIV: the fused activation; ADD/SUB's int16 power-of-two switch."""

    activation: FusedActivation = NO_ACTIVATION
    pot_scale_int16: bool = False


#: ops with a fused activation (BinaryAttrs)
ACTIVATED = ("ADD", "SUB", "MUL", "DIV")
#: binary ops without attributes
PLAIN_BINARY = ("POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV", "FLOOR_MOD", "ATAN2")
COMPARISONS = ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")
LOGICAL = ("LOGICAL_AND", "LOGICAL_OR")


def activation_reason(activation: FusedActivation) -> str | None:
    """Why a fused activation cannot be applied as a clamp (TANH, SIGN_BIT), or None."""
    if activation.is_clamp:
        return None
    return f"fused activation {activation.kind.name} not supported"


def check_activation(activation: FusedActivation, label: str) -> None:
    """UnsupportedError where the fused activation is not a clamp."""
    reason = activation_reason(activation)
    if reason:
        raise UnsupportedError(f"{label}: {reason}")


def broadcast(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    """NumPy's broadcast of ``shapes``, or None where they do not broadcast."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        return None


def broadcast_reason(shapes: Sequence[Sequence[int]], out: Sequence[int]) -> str | None:
    """Why ``out`` is not the broadcast of ``shapes``, or None."""
    b = broadcast(shapes)
    if b is None or b != tuple(out):
        return f"output shape {list(out)} is not the broadcast of {', '.join(str(list(s)) for s in shapes)}"
    return None


def per_tensor_reason(tensors: Sequence[ir.Tensor]) -> str | None:
    """Why quantized tensors lack the one scale and zero point per tensor binary ops need."""
    for t in tensors:
        if t.quantization is None or t.quantization.scale.size == 0:
            return f"{t.describe()} of type {t.dtype} has no quantization parameters"
        if t.quantization.per_channel:
            return f"{t.describe()} is quantized per channel; only per-tensor is supported"
    return None


Shapes = tuple[int, ...]


def select_layout(name: str, c: Shapes, x: Shapes, y: Shapes,
                  out: Shapes | None) -> tuple[list[Shapes], Shapes] | str:
    """SELECT / SELECT_V2's (condition, x, y) shapes as they broadcast and the output shape, or
    the reason the shapes break the op's rules.

    SELECT's condition may be x's shape, a scalar, or one flag per row (axis 0): the latter two
    become x's rank with trailing 1s. All-single-element operands index one element, whatever
    their declared ranks (``out`` None: not checked against a declared output).
    """
    if out is not None and all(int(np.prod(s)) == 1 for s in (c, x, y, out)):
        return [(), (), ()], ()
    if name == "SELECT":
        if x != y:
            return f"x {list(x)} and y {list(y)} must have one shape (SELECT does not broadcast them)"
        if c != x:
            if len(c) > 1 or (len(c) == 1 and (not x or c[0] != x[0])):
                return f"condition {list(c)} must match x {list(x)}, be a scalar, or match its first axis"
            c = c + (1,) * (len(x) - len(c))
    b = broadcast([c, x, y])
    if b is None or (out is not None and b != out):
        return f"output shape {list(out or ())} is not the broadcast of {list(c)}, {list(x)} and {list(y)}"
    return [c, x, y], b


def _operands(ins: Inputs, count: int) -> list[ir.Tensor]:
    ts = [ins[k] for k in range(count)]
    if len(ins) < count or any(t is None for t in ts):
        raise ins.error(f"needs {count} operands")
    return ts  # type: ignore[return-value]


def _broadcast_meta(ins: Inputs, ts: Sequence[ir.Tensor], dtype: np.dtype) -> list[Meta]:
    shape = broadcast([t.shape for t in ts])
    if shape is None:
        raise ins.error(f"input shapes {', '.join(str(list(t.shape)) for t in ts)} do not broadcast")
    return [Meta(shape, np.dtype(dtype))]


@define(*ACTIVATED, attrs=BinaryAttrs)
def infer_activated(attrs: BinaryAttrs, ins: Inputs) -> list[Meta]:
    """Broadcast of the two inputs, in the declared type; quantized types need per-tensor
    parameters on both inputs and the output."""
    ts = _operands(ins, 2)
    out = ins.outputs[0]
    if np.dtype(out.dtype) in (np.int8, np.uint8, np.int16) and ts[0].dtype == out.dtype:
        reason = per_tensor_reason([*ts, out])
        if reason:
            raise ins.error(reason)
    return _broadcast_meta(ins, ts, out.dtype)


@define(*PLAIN_BINARY, "PRELU", attrs=NoAttrs)
def infer_binary(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    """Broadcast of the two inputs (ATAN2: one shape), in the declared type."""
    ts = _operands(ins, 2)
    if ins.op == "ATAN2" and tuple(ts[0].shape) != tuple(ts[1].shape):
        raise ins.error(f"input shapes {list(ts[0].shape)} and {list(ts[1].shape)} differ (ATAN2 does not broadcast)")
    return _broadcast_meta(ins, ts, ins.outputs[0].dtype)


@define(*COMPARISONS, *LOGICAL, attrs=NoAttrs)
def infer_compare(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    """Broadcast of two operands of one type; the result is bool."""
    ts = _operands(ins, 2)
    if ts[0].dtype != ts[1].dtype:
        raise ins.error(f"operand types {ts[0].dtype} and {ts[1].dtype} differ")
    return _broadcast_meta(ins, ts, np.bool_)


@define("ADD_N", attrs=NoAttrs)
def infer_add_n(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    """All inputs of one shape and type."""
    ts = _operands(ins, max(len(ins), 1))
    shapes = {tuple(t.shape) for t in ts}
    if len(shapes) != 1:
        raise ins.error(f"input shapes {[list(s) for s in sorted(shapes)]} differ")
    return [Meta(shapes.pop(), np.dtype(ts[0].dtype))]


@define("SELECT", "SELECT_V2", attrs=NoAttrs)
def infer_select(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    """cond ? x : y: a bool condition, x and y of one type; SELECT's or SELECT_V2's shapes."""
    c, x, y = _operands(ins, 3)
    if c.dtype != np.bool_:
        raise ins.error(f"condition type {c.dtype} must be bool")
    if x.dtype != y.dtype:
        raise ins.error(f"x and y types {x.dtype} and {y.dtype} differ")
    declared = tuple(ins.outputs[0].shape) if ins.outputs else None
    layout = select_layout(ins.op or "SELECT_V2", tuple(c.shape), tuple(x.shape), tuple(y.shape), None)
    if isinstance(layout, str):
        raise ins.error(layout)
    shape = layout[1]
    if declared is not None and int(np.prod(declared)) == 1 and int(np.prod(shape)) == 1:
        shape = declared  # TFLite keeps the declared scalar-like shape
    return [Meta(shape, np.dtype(x.dtype))]
