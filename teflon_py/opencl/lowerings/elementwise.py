"""ADD/SUB/MUL with broadcasting and fused activation, and the common float activations (RELU,
RELU6, RELU_N1_TO_1, RELU_0_TO_1, LOGISTIC, TANH, HARD_SWISH): one shape-generic program,
``elementwise.cl``, whose sizes and strides are kernel arguments. The broadcast geometry and spec
helpers here also serve ``ops_math`` (``math.cl``: DIV, POW, ..., unary maths) and ``ops_compare``
(``compare.cl``: comparisons, logical ops, SELECT, CAST).

A new hot binary op is a line ``BINARY(name, expr)`` in ``elementwise.cl`` plus its name in
``BINARY_KERNELS``; a new unary one ``UNARY(name, expr)`` and ``UNARY_KERNELS``. Rarer ops go to
``math.cl`` as one more case of its switch kernels: PoCL compiles every kernel of a program when
its binary is cached, ~0.1 s each cold, so kernels are few and hold several ops.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon_py import ir
from teflon_py.opencl.fusion import intersect
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.registry import EmitContext, activation_reason, lowering

FILES = ("common.cl", "elementwise.cl")
BINARY_KERNELS = {"ADD": "add", "SUB": "sub", "MUL": "mul"}
#: op -> (kernel, clamp it applies itself)
UNARY_KERNELS = {
    "RELU": ("clip", (0.0, math.inf)),
    "RELU6": ("clip", (0.0, 6.0)),
    "RELU_N1_TO_1": ("clip", (-1.0, 1.0)),
    "RELU_0_TO_1": ("clip", (0.0, 1.0)),
    "LOGISTIC": ("logistic", kernels.UNBOUNDED),
    "TANH": ("tanh_", kernels.UNBOUNDED),
    "HARD_SWISH": ("hard_swish", kernels.UNBOUNDED),
}
OUTER_DIMS = 4  # the broadcast kernels' outer index dimensions (plus one inner)


@dataclass(frozen=True)
class Geometry:
    """A numpy broadcast collapsed for the kernels: ``OUTER_DIMS`` outer sizes (leading ones 1),
    each operand's strides along them, the inner size and each operand's inner stride (1 or 0)."""

    dims: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]
    inner: int
    inner_strides: tuple[int, ...]

    @property
    def rows(self) -> int:
        return int(np.prod(self.dims))


def broadcast_geometry_n(shapes: Sequence[tuple[int, ...]], out: tuple[int, ...]) -> Geometry:
    """Collapse the broadcast of ``shapes`` to ``out``: size-1 output dims are dropped and
    neighbours merged where every operand stays contiguous (or broadcast) across them.
    ValueError when more than ``OUTER_DIMS`` outer dims remain."""
    rank = len(out)

    def strides(shape: tuple[int, ...]) -> list[int]:
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        s, step = [], 1
        for d, o in zip(reversed(padded), reversed(out)):
            s.append(step if d == o and o > 1 else 0)
            step *= d
        return s[::-1]

    per_operand = [strides(s) for s in shapes]
    dims = [(d, [s[k] for s in per_operand]) for k, d in enumerate(out) if d > 1]
    merged: list[tuple[int, list[int]]] = []
    for d, st in dims:
        if merged and all(prev == cur * d for prev, cur in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * d, st)
        else:
            merged.append((d, st))
    if not merged:
        merged = [(1, [1] * len(shapes))]
    *outer, (inner, inner_st) = merged
    if len(outer) > OUTER_DIMS:
        raise ValueError(f"broadcast needs {len(outer) + 1} dimensions after collapsing (at most {OUTER_DIMS + 1})")
    outer = [(1, [0] * len(shapes))] * (OUTER_DIMS - len(outer)) + outer
    return Geometry(tuple(d for d, _ in outer), tuple(tuple(st[k] for _, st in outer) for k in range(len(shapes))),
                    inner, tuple(inner_st))


def broadcast_geometry(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> tuple[
        list[int], list[int], list[int], int, int, int]:
    """Two operands' geometry as (outer dims, a strides, b strides, inner, a inner, b inner)
    (used by ``ops_qelementwise``)."""
    g = broadcast_geometry_n([a, b], out)
    return list(g.dims), list(g.strides[0]), list(g.strides[1]), g.inner, g.inner_strides[0], g.inner_strides[1]


def broadcast_scalars(g: Geometry, names: Sequence[str]) -> tuple[
        tuple[int, int], dict[str, np.int32 | np.float32]]:
    """The broadcast kernels' global size and size arguments, in their order: rows, rpi, inner,
    chunk, each operand's inner stride, d1..d3, then each operand's four outer strides."""
    global_size, rpi, chunk = kernels.row_blocks(g.rows, g.inner)
    values: dict[str, int] = {"rows": g.rows, "rpi": rpi, "inner": g.inner, "chunk": chunk}
    values.update({f"s{n}_in": s for n, s in zip(names, g.inner_strides)})
    values.update({f"d{i}": g.dims[i] for i in range(1, OUTER_DIMS)})
    for n, st in zip(names, g.strides):
        values.update({f"s{n}{i}": s for i, s in enumerate(st)})
    return global_size, kernels.scalars(**values)


def broadcast_spec(files: tuple[str, ...], kernel: str, shapes: Sequence[tuple[int, ...]], out: tuple[int, ...],
                   names: Sequence[str], **tail: float) -> KernelSpec:
    """A broadcasting kernel over operands bound as ``names`` (strides ``s<name>...``) and
    "output", followed by the by-value arguments ``tail`` (clamp bounds, op code)."""
    global_size, sizes = broadcast_scalars(broadcast_geometry_n(shapes, out), names)
    args = {**sizes, **kernels.scalars(**tail)}
    return KernelSpec(files=files, name=kernel, defines={}, global_size=global_size, local_size=(1, 1),
                      args=(*names, "output", *args), scalars=args)


def flat_spec(files: tuple[str, ...], kernel: str, n: int, **tail: float) -> KernelSpec:
    """A kernel over ``n`` contiguous elements ("input" to "output") in ``chunk``-long pieces,
    followed by the by-value arguments ``tail``."""
    (pieces, _), _, chunk = kernels.row_blocks(1, n)
    args = kernels.scalars(n=n, chunk=chunk, **tail)
    return KernelSpec(files=files, name=kernel, defines={}, global_size=(pieces,), local_size=(1,),
                      args=("input", "output", *args), scalars=args)


def binary_spec(kernel: str, a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...],
                clamp: kernels.Clamp) -> KernelSpec:
    """The broadcasting ``kernel`` (add, sub, mul) for these shapes: sizes as scalar arguments."""
    return broadcast_spec(FILES, kernel, [a, b], out, ("a", "b"), lo=float(clamp[0]), hi=float(clamp[1]))


def unary_spec(kernel: str, n: int, clamp: kernels.Clamp) -> KernelSpec:
    """``kernel`` over ``n`` contiguous floats, then the clamp."""
    return flat_spec(FILES, kernel, n, lo=float(clamp[0]), hi=float(clamp[1]))


def fused_activation(op: ir.Operation) -> ir.Activation | int:
    """The op's fused activation (NONE for ops whose options have none)."""
    return getattr(op.attrs, "fused_activation_function", ir.Activation.NONE)


def broadcast_reason(graph: ir.Graph, op: ir.Operation, count: int = 2) -> str | None:
    """Why the ``count`` inputs of ``op`` do not broadcast to its output within the kernels' limits."""
    if len(op.inputs) != count or ir.NO_TENSOR in op.inputs[:count]:
        return f"needs {count} operands"
    shapes = [tuple(graph.tensors[t].shape) for t in op.inputs]
    out = tuple(graph.tensors[op.outputs[0]].shape)
    try:
        if tuple(np.broadcast_shapes(*shapes)) != out:
            return f"output shape {list(out)} is not the broadcast of {', '.join(str(list(s)) for s in shapes)}"
        broadcast_geometry_n(shapes, out)
    except ValueError as e:
        return str(e)
    return None


def check_binary(graph: ir.Graph, op: ir.Operation) -> str | None:
    return activation_reason(fused_activation(op)) or broadcast_reason(graph, op)


@lowering("ADD", "SUB", "MUL", check=check_binary, fuses_activation=True, max_rank=6)
def binary(ctx: EmitContext, op: ir.Operation) -> None:
    a, b = op.inputs[0], op.inputs[1]
    spec = binary_spec(BINARY_KERNELS[op.name], ctx.shape(a), ctx.shape(b), ctx.shape(op.outputs[0]), ctx.clamp(op))
    ctx.launch(spec, a=a, b=b, output=ctx.output(op))


def check_unary(graph: ir.Graph, op: ir.Operation) -> str | None:
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if tuple(x.shape) != tuple(y.shape):
        return f"output shape {list(y.shape)} differs from the input's {list(x.shape)}"
    return None


@lowering("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", check=check_unary, fuses_activation=True, max_rank=None)
def relu(ctx: EmitContext, op: ir.Operation) -> None:
    """A clamp (when not folded into its producer by fusion)."""
    kernel, clamp = UNARY_KERNELS[op.name]
    x = op.inputs[0]
    n = int(np.prod(ctx.shape(x)))
    ctx.launch(unary_spec(kernel, n, intersect(clamp, ctx.clamp(op))), input=x, output=ctx.output(op))


@lowering("LOGISTIC", "TANH", "HARD_SWISH", check=check_unary, fuses_activation=True, max_rank=None)
def transcendental(ctx: EmitContext, op: ir.Operation) -> None:
    """TFLite's reference float formulas with OpenCL's accurate exp/tanh."""
    kernel, _ = UNARY_KERNELS[op.name]
    x = op.inputs[0]
    ctx.launch(unary_spec(kernel, int(np.prod(ctx.shape(x))), ctx.clamp(op)), input=x, output=ctx.output(op))
