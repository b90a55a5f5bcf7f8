"""ADD/SUB/MUL with broadcasting and fused activation, and the float activations
(RELU, RELU6, RELU_N1_TO_1, LOGISTIC, TANH, HARD_SWISH): one shape-generic program,
``elementwise.cl``, whose sizes and strides are kernel arguments.

A new binary op is a line ``BINARY(name, expr)`` in ``elementwise.cl`` plus its name in
``BINARY_KERNELS``; a new unary one ``UNARY(name, expr)`` and ``UNARY_KERNELS``.
"""
from __future__ import annotations

import math

import numpy as np

from teflon_py import ir
from teflon_py.opencl import kernels
from teflon_py.opencl.fusion import intersect
from teflon_py.opencl.kernels import KernelSpec
from teflon_py.opencl.lowering import EmitContext, activation_reason, lowering, options
from teflon_py.tflite.options import AddOptions, MulOptions, SubOptions

FILES = ("common.cl", "elementwise.cl")
BINARY_KERNELS = {"ADD": "add", "SUB": "sub", "MUL": "mul"}
BINARY_OPTIONS = {"ADD": AddOptions, "SUB": SubOptions, "MUL": MulOptions}
#: op -> (kernel, clamp it applies itself)
UNARY_KERNELS = {
    "RELU": ("clip", (0.0, math.inf)),
    "RELU6": ("clip", (0.0, 6.0)),
    "RELU_N1_TO_1": ("clip", (-1.0, 1.0)),
    "LOGISTIC": ("logistic", kernels.UNBOUNDED),
    "TANH": ("tanh_", kernels.UNBOUNDED),
    "HARD_SWISH": ("hard_swish", kernels.UNBOUNDED),
}
OUTER_DIMS = 4  # the binary kernel's outer index dimensions (plus one inner)


def broadcast_geometry(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> tuple[
        list[int], list[int], list[int], int, int, int]:
    """Collapse a numpy broadcast to (outer dims, a strides, b strides, inner, a inner, b inner).

    Size-1 output dims are dropped and neighbours merged where both operands stay contiguous (or
    both broadcast) across them; the innermost dim is read with stride 1 or 0 by each operand.
    ValueError when more than ``OUTER_DIMS`` outer dims remain.
    """
    rank = len(out)
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)

    def strides(shape: tuple[int, ...]) -> list[int]:
        s, step = [], 1
        for d, o in zip(reversed(shape), reversed(out)):
            s.append(step if d == o and o > 1 else 0)
            step *= d
        return s[::-1]

    sa, sb = strides(pa), strides(pb)
    dims: list[list[int]] = [[d, x, y] for d, x, y in zip(out, sa, sb) if d > 1]
    merged: list[list[int]] = []
    for d, x, y in dims:
        if merged and merged[-1][1] == x * d and merged[-1][2] == y * d:
            merged[-1] = [merged[-1][0] * d, x, y]
        else:
            merged.append([d, x, y])
    if not merged:
        merged = [[1, 1, 1]]
    *outer, (inner, a_in, b_in) = merged
    if len(outer) > OUTER_DIMS:
        raise ValueError(f"broadcast needs {len(outer) + 1} dimensions after collapsing (at most {OUTER_DIMS + 1})")
    outer = [[1, 0, 0]] * (OUTER_DIMS - len(outer)) + outer
    return [d for d, _, _ in outer], [x for _, x, _ in outer], [y for _, _, y in outer], inner, a_in, b_in


def binary_spec(kernel: str, a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...],
                clamp: kernels.Clamp) -> KernelSpec:
    """The broadcasting ``kernel`` (add, sub, mul) for these shapes: sizes as scalar arguments."""
    dims, sa, sb, inner, a_in, b_in = broadcast_geometry(a, b, out)
    rows = int(np.prod(dims))
    global_size, rpi, chunk = kernels.row_blocks(rows, inner)
    args = kernels.scalars(rows=rows, rpi=rpi, inner=inner, chunk=chunk, sa_in=a_in, sb_in=b_in, d1=dims[1],
                           d2=dims[2], d3=dims[3], **{f"sa{i}": s for i, s in enumerate(sa)},
                           **{f"sb{i}": s for i, s in enumerate(sb)}, lo=float(clamp[0]), hi=float(clamp[1]))
    return KernelSpec(files=FILES, name=kernel, defines={}, global_size=global_size, local_size=(1, 1),
                      args=("a", "b", "output", *args), scalars=args)


def unary_spec(kernel: str, n: int, clamp: kernels.Clamp) -> KernelSpec:
    """``kernel`` over ``n`` contiguous floats, then the clamp."""
    (pieces, _), _, chunk = kernels.row_blocks(1, n)
    args = kernels.scalars(n=n, chunk=chunk, lo=float(clamp[0]), hi=float(clamp[1]))
    return KernelSpec(files=FILES, name=kernel, defines={}, global_size=(pieces,), local_size=(1,),
                      args=("input", "output", *args), scalars=args)


def check_binary(graph: ir.Graph, op: ir.Operation) -> str | None:
    reason = activation_reason(options(op, BINARY_OPTIONS[op.name]).fused_activation_function)
    if reason:
        return reason
    if len(op.inputs) != 2:
        return "needs two operands"
    a, b = (graph.tensors[t].shape for t in op.inputs)
    out = graph.tensors[op.outputs[0]].shape
    try:
        if tuple(np.broadcast_shapes(tuple(a), tuple(b))) != tuple(out):
            return f"output shape {list(out)} is not the broadcast of {list(a)} and {list(b)}"
        broadcast_geometry(a, b, out)
    except ValueError as e:
        return str(e)
    return None


@lowering("ADD", "SUB", "MUL", check=check_binary, fuses_activation=True, max_rank=6)
def binary(ctx: EmitContext, op: ir.Operation) -> None:
    a, b, y = op.inputs[0], op.inputs[1], ctx.output(op)
    spec = binary_spec(BINARY_KERNELS[op.name], ctx.shape(a), ctx.shape(b), ctx.shape(op.outputs[0]), ctx.clamp(op))
    ctx.launch(spec, a=a, b=b, output=y)


def check_unary(graph: ir.Graph, op: ir.Operation) -> str | None:
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if tuple(x.shape) != tuple(y.shape):
        return f"output shape {list(y.shape)} differs from the input's {list(x.shape)}"
    return None


@lowering("RELU", "RELU6", "RELU_N1_TO_1", check=check_unary, fuses_activation=True, max_rank=None)
def relu(ctx: EmitContext, op: ir.Operation) -> None:
    """A clamp (when not folded into its producer by fusion)."""
    kernel, clamp = UNARY_KERNELS[op.name]
    x = op.inputs[0]
    n = int(np.prod(ctx.shape(x)))
    ctx.launch(unary_spec(kernel, n, intersect(clamp, ctx.clamp(op))), input=x, output=ctx.output(op))


@lowering("LOGISTIC", "TANH", "HARD_SWISH", check=check_unary, max_rank=None)
def transcendental(ctx: EmitContext, op: ir.Operation) -> None:
    """TFLite's reference float formulas with OpenCL's accurate exp/tanh."""
    kernel, clamp = UNARY_KERNELS[op.name]
    x = op.inputs[0]
    ctx.launch(unary_spec(kernel, int(np.prod(ctx.shape(x))), clamp), input=x, output=ctx.output(op))
