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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon_py.opencl.fusion import intersect
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops import elementwise as rules
from teflon_py.ops import unary as unary_rules
from teflon_py.ops.common import NO_ACTIVATION

FILES = ("common.cl", "elementwise.cl")
BINARY_KERNELS = {"ADD": "add", "SUB": "sub", "MUL": "mul"}
#: op -> (kernel, clamp it applies itself: the RELUs' ranges come from ``ops.unary.clamp_of``)
UNARY_KERNELS = {
    "RELU": ("clip", None),
    "RELU6": ("clip", None),
    "RELU_N1_TO_1": ("clip", None),
    "RELU_0_TO_1": ("clip", None),
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


def _collapse(shapes: Sequence[tuple[int, ...]], out: tuple[int, ...]) -> list[tuple[int, list[int]]]:
    """The broadcast of ``shapes`` to ``out`` as merged (size, per-operand strides) dims: size-1
    output dims dropped, neighbours merged where every operand stays contiguous (or broadcast)."""
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
    return merged or [(1, [1] * len(shapes))]


def geometry_reason(shapes: Sequence[tuple[int, ...]], out: tuple[int, ...]) -> str | None:
    """Why the broadcast of ``shapes`` to ``out`` needs more dims than the kernels index, or None."""
    n = len(_collapse(shapes, out))
    if n > OUTER_DIMS + 1:
        return f"broadcast needs {n} dimensions after collapsing (at most {OUTER_DIMS + 1})"
    return None


def broadcast_geometry_n(shapes: Sequence[tuple[int, ...]], out: tuple[int, ...]) -> Geometry:
    """Collapse the broadcast of ``shapes`` to ``out`` (``_collapse``) for the kernels; ValueError
    when more than ``OUTER_DIMS`` outer dims remain (``geometry_reason`` says so first)."""
    reason = geometry_reason(shapes, out)
    if reason:
        raise ValueError(reason)
    *outer, (inner, inner_st) = _collapse(shapes, out)
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


def broadcast_reason(tensors: OpTensors, count: int = 2) -> str | None:
    """Why the ``count`` inputs do not broadcast to the output within the kernels' limits."""
    ins = tensors.inputs
    if len(ins) != count or any(t is None for t in ins[:count]):
        return f"needs {count} operands"
    shapes = [tuple(t.shape) for t in ins]
    out = tuple(tensors.outputs[0].shape)
    return rules.broadcast_reason(shapes, out) or geometry_reason(shapes, out)


def check_binary(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    """A fused activation that is a clamp (ops with one), shapes that broadcast."""
    return rules.activation_reason(getattr(attrs, "activation", NO_ACTIVATION)) or broadcast_reason(tensors)


@register("ADD", "SUB", "MUL", check=check_binary, fuses_activation=True, max_rank=6)
def binary(ctx: OpEmit, attrs: object) -> None:
    a, b = ctx.operand(0), ctx.operand(1)
    spec = binary_spec(BINARY_KERNELS[ctx.op.name], ctx.shape(a), ctx.shape(b), ctx.shape(ctx.op.outputs[0]),
                       ctx.clamp())
    ctx.launch(spec, a=a, b=b, output=ctx.output())


def check_unary(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    x, y = tensors.inputs[0], tensors.outputs[0]
    if tuple(x.shape) != tuple(y.shape):
        return f"output shape {list(y.shape)} differs from the input's {list(x.shape)}"
    return None


@register("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", check=check_unary, fuses_activation=True, max_rank=None)
def relu(ctx: OpEmit, attrs: object) -> None:
    """A clamp (when not folded into its producer by fusion)."""
    kernel, _ = UNARY_KERNELS[ctx.op.name]
    own = kernels.clamp_of(unary_rules.clamp_of(ctx.op.name))
    x = ctx.operand(0)
    n = int(np.prod(ctx.shape(x)))
    ctx.launch(unary_spec(kernel, n, intersect(own, ctx.clamp())), input=x, output=ctx.output())


@register("LOGISTIC", "TANH", "HARD_SWISH", check=check_unary, fuses_activation=True, max_rank=None)
def transcendental(ctx: OpEmit, attrs: object) -> None:
    """TFLite's reference float formulas with OpenCL's accurate exp/tanh."""
    kernel, _ = UNARY_KERNELS[ctx.op.name]
    x = ctx.operand(0)
    ctx.launch(unary_spec(kernel, int(np.prod(ctx.shape(x))), ctx.clamp()), input=x, output=ctx.output())
