"""MEAN over any constant axes and SOFTMAX over the last axis (``reduce.cl``, one program)."""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl import kernels
from teflon_py.opencl.kernels import KernelSpec
from teflon_py.opencl.lowering import EmitContext, lowering, options
from teflon_py.tflite.options import ReducerOptions, SoftmaxOptions

FILES = ("common.cl", "reduce.cl")


def mean_axes(graph: ir.Graph, op: ir.Operation) -> list[int]:
    """The reduced axes, normalised and deduplicated, in increasing order."""
    rank = len(graph.tensors[op.inputs[0]].shape)
    axes = np.asarray(graph.tensors[op.inputs[1]].data).reshape(-1).astype(int)
    if ((axes < -rank) | (axes >= rank)).any():
        raise ValueError(f"axes {axes.tolist()} out of range for rank {rank}")
    return sorted({int(a) % rank for a in axes})


def check_mean(graph: ir.Graph, op: ir.Operation) -> str | None:
    x = graph.tensors[op.inputs[0]].shape
    try:
        axes = mean_axes(graph, op)
    except ValueError as e:
        return str(e)
    keep = options(op, ReducerOptions).keep_dims
    expected = tuple(1 if i in axes else d for i, d in enumerate(x) if keep or i not in axes)
    if tuple(graph.tensors[op.outputs[0]].shape) != expected and int(np.prod(expected)) != int(
            np.prod(graph.tensors[op.outputs[0]].shape)):
        return f"output shape {list(graph.tensors[op.outputs[0]].shape)} does not follow from the axes"
    return None


def mean_spec(shape: tuple[int, ...], axes: list[int]) -> KernelSpec:
    """Kept x reduced index spaces (each padded to four dims) as strides into the input."""
    strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
    kept = [(d, s) for i, (d, s) in enumerate(zip(shape, strides)) if i not in axes]
    red = [(d, s) for i, (d, s) in enumerate(zip(shape, strides)) if i in axes]
    kept = [(1, 0)] * (4 - len(kept)) + kept
    red = [(1, 0)] * (4 - len(red)) + red
    n_out = int(np.prod([d for d, _ in kept]))
    count = int(np.prod([d for d, _ in red]))
    opi = max(1, min(64, 4096 // max(count, 1)))
    args = kernels.scalars(n_out=n_out, opi=opi, k1=kept[1][0], k2=kept[2][0], k3=kept[3][0],
                           **{f"ks{i}": s for i, (_, s) in enumerate(kept)},
                           **{f"r{i}": d for i, (d, _) in enumerate(red)},
                           **{f"rs{i}": s for i, (_, s) in enumerate(red)}, count=float(count))
    return KernelSpec(files=FILES, name="mean", defines={}, global_size=(-(-n_out // opi),), local_size=(1,),
                      args=("input", "output", *args), scalars=args)


@lowering("MEAN", check=check_mean, params=(1,))
def mean(ctx: EmitContext, op: ir.Operation) -> None:
    x = op.inputs[0]
    ctx.launch(mean_spec(ctx.shape(x), mean_axes(ctx.graph, op)), input=x, output=ctx.output(op))


def check_softmax(graph: ir.Graph, op: ir.Operation) -> str | None:
    x, y = graph.tensors[op.inputs[0]].shape, graph.tensors[op.outputs[0]].shape
    if len(x) < 1:
        return "input must have at least one dimension"
    if tuple(x) != tuple(y):
        return "output shape differs from the input's"
    return None


@lowering("SOFTMAX", check=check_softmax, max_rank=None)
def softmax(ctx: EmitContext, op: ir.Operation) -> None:
    """One row per work-item: max, exp((x - max) * beta) and its running sum, then the division."""
    x = op.inputs[0]
    shape = ctx.shape(x)
    depth = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    args = kernels.scalars(depth=depth, beta=float(np.float32(options(op, SoftmaxOptions).beta)))
    spec = KernelSpec(files=FILES, name="softmax", defines={}, global_size=(rows,), local_size=(1,),
                      args=("input", "output", *args), scalars=args)
    ctx.launch(spec, input=x, output=ctx.output(op))
