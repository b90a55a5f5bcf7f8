"""RESHAPE/SQUEEZE/EXPAND_DIMS (aliases: same bytes, no kernel), CONCATENATION and PAD."""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl import kernels
from teflon_py.opencl.kernels import KernelSpec
from teflon_py.opencl.lowering import EmitContext, lowering, options
from teflon_py.tflite.options import ConcatenationOptions

FILES = ("common.cl", "elementwise.cl")


def check_alias(graph: ir.Graph, op: ir.Operation) -> str | None:
    x, y = graph.tensors[op.inputs[0]].shape, graph.tensors[op.outputs[0]].shape
    if int(np.prod(x, dtype=np.int64)) != int(np.prod(y, dtype=np.int64)):
        return f"output shape {list(y)} holds a different number of values than input {list(x)}"
    return None


@lowering("RESHAPE", "SQUEEZE", "EXPAND_DIMS", check=check_alias, params=(1,), max_rank=None)
def alias(ctx: EmitContext, op: ir.Operation) -> None:
    """The output is the input's bytes under another shape: an alias, no launch."""
    ctx.alias(op.outputs[0], op.inputs[0])


def check_concatenation(graph: ir.Graph, op: ir.Operation) -> str | None:
    opts = options(op, ConcatenationOptions)
    if opts.fused_activation_function != ir.Activation.NONE:
        return "fused activation not supported"
    shapes = [graph.tensors[t].shape for t in op.inputs]
    out = graph.tensors[op.outputs[0]].shape
    rank = len(out)
    if rank == 0 or not -rank <= opts.axis < rank:
        return f"axis {opts.axis} out of range for rank {rank}"
    axis = opts.axis % rank
    for s in shapes:
        if len(s) != rank or any(d != o for i, (d, o) in enumerate(zip(s, out)) if i != axis):
            return f"input shape {list(s)} does not match output {list(out)} off axis {axis}"
    if sum(s[axis] for s in shapes) != out[axis]:
        return "input sizes along the axis do not add up to the output's"
    return None


def copy2d_spec(rows: int, cols: int, s_stride: int, d_stride: int, s_off: int = 0, d_off: int = 0) -> KernelSpec:
    """``rows`` x ``cols`` floats from one strided layout into another."""
    global_size, rpi, chunk = kernels.row_blocks(rows, cols)
    args = kernels.scalars(s_off=s_off, d_off=d_off, rows=rows, rpi=rpi, cols=cols, chunk=chunk,
                           s_stride=s_stride, d_stride=d_stride)
    return KernelSpec(files=FILES, name="copy2d", defines={}, global_size=global_size, local_size=(1, 1),
                      args=("input", "output", *args), scalars=args)


@lowering("CONCATENATION", check=check_concatenation, max_rank=None)
def concatenation(ctx: EmitContext, op: ir.Operation) -> None:
    """One strided copy per input into its slice of the output."""
    out = ctx.shape(op.outputs[0])
    axis = options(op, ConcatenationOptions).axis % len(out)
    outer = int(np.prod(out[:axis], dtype=np.int64))
    row = int(np.prod(out[axis:], dtype=np.int64))
    offset = 0
    for t in op.inputs:
        cols = int(np.prod(ctx.shape(t)[axis:], dtype=np.int64))
        ctx.launch(copy2d_spec(outer, cols, cols, row, 0, offset), input=t, output=ctx.output(op))
        offset += cols


def pad_geometry(shape: tuple[int, ...], paddings: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """(input dims, before-pads, after-pads) collapsed to four: an unpadded dim merges into the one
    before it. ValueError when more than four dims remain."""
    dims: list[list[int]] = []  # [size, before, after]
    for d, (before, after) in zip(shape, paddings.tolist()):
        if dims and before == 0 and after == 0:
            dims[-1] = [dims[-1][0] * d, dims[-1][1] * d, dims[-1][2] * d]
        else:
            dims.append([d, int(before), int(after)])
    if len(dims) > 4:
        raise ValueError(f"padding needs {len(dims)} dimensions after collapsing (at most 4)")
    dims = [[1, 0, 0]] * (4 - len(dims)) + dims
    return [d for d, _, _ in dims], [b for _, b, _ in dims], [a for _, _, a in dims]


def _paddings(graph: ir.Graph, op: ir.Operation) -> np.ndarray:
    rank = len(graph.tensors[op.inputs[0]].shape)
    p = np.asarray(graph.tensors[op.inputs[1]].data).astype(np.int64)
    if p.shape != (rank, 2):
        raise ValueError(f"paddings of shape {list(p.shape)} for rank {rank}")
    return p


def check_pad(graph: ir.Graph, op: ir.Operation) -> str | None:
    try:
        p = _paddings(graph, op)
        if (p < 0).any():
            return "negative paddings"
        x = graph.tensors[op.inputs[0]].shape
        if tuple(d + a + b for d, (a, b) in zip(x, p.tolist())) != tuple(graph.tensors[op.outputs[0]].shape):
            return "output shape does not follow from the paddings"
        pad_geometry(x, p)
    except ValueError as e:
        return str(e)
    return None


@lowering("PAD", check=check_pad, params=(1,), max_rank=None)
def pad(ctx: EmitContext, op: ir.Operation) -> None:
    """Each output row (innermost dim) filled from its input row and zeros (float PAD pads with 0)."""
    x = op.inputs[0]
    dims, before, after = pad_geometry(ctx.shape(x), _paddings(ctx.graph, op))
    out = [d + b + a for d, b, a in zip(dims, before, after)]
    rows = out[0] * out[1] * out[2]
    rpi = max(1, 4096 // out[3])
    args = kernels.scalars(rows=rows, rpi=rpi, o1=out[1], o2=out[2], o3=out[3], i0=dims[0], i1=dims[1], i2=dims[2],
                           i3=dims[3], p0=before[0], p1=before[1], p2=before[2], p3=before[3], value=0.0)
    spec = KernelSpec(files=FILES, name="pad4", defines={}, global_size=(1, -(-rows // rpi)), local_size=(1, 1),
                      args=("input", "output", *args), scalars=args)
    ctx.launch(spec, input=x, output=ctx.output(op))
