"""RESHAPE/SQUEEZE/EXPAND_DIMS (aliases: same bytes, no kernel), CONCATENATION, and the pads PAD,
PADV2 (a constant) and MIRROR_PAD (reflections), for every element type, on ``ops_movement``'s
kernels (``movement.cl``): strided copies, the pad kernel, table gathers. A uint8 CONCATENATION
input on another grid than the output's (LiteRT requantizes those; int8 ones must match) first
goes through its 256-entry table (``ops_qelementwise.concat_requantize_table``, ``qlut``)."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from teflon_py import ir
from teflon_py.fallback.movement import mirror_indices
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.movement_plan import (
    FILES,
    RANK,
    Copy,
    Gather,
    Moves,
    copy_specs,
    data_operands,
    data_reason,
    dense_strides,
    elements,
    fill_value,
    flat_copy_spec,
    normalize_axis,
    param,
    shape_reason,
    suffix,
)
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.lowerings.movement import (
    emit_table,
    launch,
    movement,
    moves_reason,
    table_checker,
)
from teflon_py.opencl.registry import EmitContext, Ref, options
from teflon_py.tflite.options import ConcatenationOptions, MirrorPadOptions


def check_alias(graph: ir.Graph, op: ir.Operation) -> str | None:
    """An alias holds as many values as its input, and the same quantization."""
    x, y = graph.tensors[op.inputs[0]].shape, graph.tensors[op.outputs[0]].shape
    if elements(x) != elements(y):
        return f"output shape {list(y)} holds a different number of values than input {list(x)}"
    return data_reason(graph, data_operands(op, (1,)))


@movement("RESHAPE", "SQUEEZE", "EXPAND_DIMS", check=check_alias, params=(1,))
def alias(ctx: EmitContext, op: ir.Operation) -> None:
    """The output is the input's bytes under another shape: an alias, no launch (a constant
    input is copied instead: it travels as raw bytes in the launch's spec)."""
    x = op.inputs[0]
    if ctx.constant(x) is not None:
        launch(ctx, flat_copy_spec(elements(ctx.shape(x)), ctx.graph.tensors[x].dtype), input=x,
               output=ctx.output(op))
    else:
        ctx.alias(op.outputs[0], x)


def plan_concatenation(graph: ir.Graph, op: ir.Operation) -> Moves:
    """Input k copied into its run of indices along ``axis`` of the output."""
    opts = options(op, ConcatenationOptions)
    if opts.fused_activation_function != ir.Activation.NONE:
        raise ValueError("fused activation not supported")
    out = tuple(graph.tensors[op.outputs[0]].shape)
    axis = normalize_axis(opts.axis, len(out))
    strides = dense_strides(out)
    moves = Moves([], {0: out})
    offset = 0
    for t in op.inputs:
        shape = tuple(graph.tensors[t].shape)
        if len(shape) != len(out) or any(d != o for i, (d, o) in enumerate(zip(shape, out)) if i != axis):
            raise ValueError(f"input shape {list(shape)} does not match output {list(out)} off axis {axis}")
        moves.copies.append((Copy(shape, dense_strides(shape), strides, 0, offset * strides[axis]), t, 0))
        offset += shape[axis]
    if offset != out[axis]:
        raise ValueError("input sizes along the axis do not add up to the output's")
    return moves


def requantize_tables(graph: ir.Graph, op: ir.Operation) -> dict[int, np.ndarray]:
    """uint8 CONCATENATION: input number -> the 256-entry table moving it onto the output's grid
    (TFLite's ConcatenationWithScaling), for the inputs whose scale or zero point differ."""
    from teflon_py.opencl.lowerings.qelementwise import concat_requantize_table

    if graph.tensors[op.outputs[0]].dtype != np.uint8:
        return {}
    tables = {k: concat_requantize_table(graph, op, k) for k in range(len(op.inputs))}
    return {k: t for k, t in tables.items() if t is not None}


def concat_quantization_reason(graph: ir.Graph, op: ir.Operation) -> str | None:
    """uint8 inputs may differ from the output's per-tensor quantization (a table requantizes them);
    other types are raw copies that must share it (LiteRT refuses int8 rescaling)."""
    operands = data_operands(op, ())
    if graph.tensors[op.outputs[0]].dtype != np.uint8:
        return data_reason(graph, operands)
    ts = [graph.tensors[t] for t in operands]
    if any(t.dtype != np.uint8 for t in ts):
        return "all inputs must have the output's type"
    if any(t.quantization is None or t.quantization.per_channel for t in ts) and any(
            t.quantization != ts[0].quantization for t in ts[1:]):
        return "requantizing copy needs per-tensor quantization on every operand"
    reason = next((r for r in (data_reason(graph, [t]) for t in operands) if r), None)
    if reason is None:
        try:
            requantize_tables(graph, op)
        except (ValueError, ZeroDivisionError, OverflowError, FloatingPointError) as e:
            return f"requantizing copy cannot be prepared ({e})"
    return reason


def check_concatenation(graph: ir.Graph, op: ir.Operation) -> str | None:
    """CONCATENATION: operands that copy (uint8 ones through a requantizing table), a plan whose
    copies build, the output shape it gives."""
    return concat_quantization_reason(graph, op) or moves_reason(graph, op, plan_concatenation)


@movement("CONCATENATION", check=check_concatenation)
def concatenation(ctx: EmitContext, op: ir.Operation) -> None:
    """One strided copy per input into its slice of the output (a plain row copy per outer index);
    a uint8 input on another grid goes through its table first (``qlut`` into a scratch buffer, or
    on the host for a constant)."""
    from teflon_py.opencl.kernels import qspecs as qkernels
    from teflon_py.opencl.lowerings.qelementwise import lut_spec

    moves = plan_concatenation(ctx.graph, op)
    tables = requantize_tables(ctx.graph, op)
    sfx = suffix(ctx.graph, op.outputs[0])
    for k, (copy, src, _) in enumerate(moves.copies):
        source: Ref = src
        table = tables.get(k)
        data = ctx.constant(src)
        if table is not None and data is not None:  # a constant input: requantized here, uploaded raw
            requantized = np.ascontiguousarray(table[np.asarray(data, np.uint8)])
            for spec in copy_specs(sfx, copy):
                ctx.launch(dataclasses.replace(spec, constants={**spec.constants, "input": requantized}),
                           output=ctx.output(op))
            continue
        if table is not None:
            n = elements(ctx.shape(src))
            source = ctx.scratch(n)
            qkernels.launch(ctx, lut_spec(n, np.dtype(np.uint8), table), input=src, output=source)
        for spec in copy_specs(sfx, copy):
            launch(ctx, spec, input=source, output=ctx.output(op))


# -- pads -------------------------------------------------------------------------------------


def pad_geometry(shape: Sequence[int], paddings: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(input size, before, after) per dim, an unpadded dim merged into the one before it, padded
    in front to five. ValueError when more than five remain."""
    dims: list[tuple[int, int, int]] = []
    for d, (before, after) in zip(shape, paddings):
        if dims and before == 0 and after == 0:
            dims[-1] = (dims[-1][0] * d, dims[-1][1] * d, dims[-1][2] * d)
        else:
            dims.append((d, before, after))
    if len(dims) > RANK:
        raise ValueError(f"padding needs {len(dims)} dimensions after collapsing (at most {RANK})")
    return [(1, 0, 0)] * (RANK - len(dims)) + dims


def paddings_of(graph: ir.Graph, op: ir.Operation) -> list[tuple[int, int]]:
    """The constant ``[rank, 2]`` paddings operand as non-negative (before, after) pairs."""
    rank = len(graph.tensors[op.inputs[0]].shape)
    p = param(graph, op, 1)
    if len(p) != 2 * rank or min(p, default=0) < 0:
        raise ValueError(f"paddings {p} do not fit an input of rank {rank}")
    return [(p[2 * i], p[2 * i + 1]) for i in range(rank)]


def pad_spec(sfx: str, shape: Sequence[int], paddings: Sequence[tuple[int, int]],
             value: np.generic) -> KernelSpec:
    """``pad_<sfx>``: each output row filled from its input row and ``value``."""
    dims = pad_geometry(shape, paddings)
    out = [d + b + a for d, b, a in dims]
    rows = out[0] * out[1] * out[2] * out[3]
    rpi = max(1, 4096 // out[4])
    args = {**kernels.scalars(rows=rows, rpi=rpi, o1=out[1], o2=out[2], o3=out[3], o4=out[4],
                              **{f"i{k}": d[0] for k, d in enumerate(dims)},
                              **{f"p{k}": d[1] for k, d in enumerate(dims)}), "value": value}
    return KernelSpec(files=FILES, name=f"pad_{sfx}", defines={}, global_size=(1, -(-rows // rpi)),
                      local_size=(1, 1), args=("input", "output", *args), scalars=args)


def check_pad_shape(graph: ir.Graph, op: ir.Operation, params: Sequence[int]) -> str | None:
    """The checks PAD and PADV2 share: raw copies, paddings that fit, the output shape they give."""
    reason = data_reason(graph, data_operands(op, params))
    if reason:
        return reason
    try:
        paddings = paddings_of(graph, op)
        shape = graph.tensors[op.inputs[0]].shape
        pad_geometry(shape, paddings)
    except ValueError as e:
        return str(e)
    return shape_reason(graph, op, 0, [d + a + b for d, (a, b) in zip(shape, paddings)])


def pad_value(graph: ir.Graph, op: ir.Operation) -> np.generic:
    """PAD/PADV2's fill: the value operand (raw), else the output zero point (0 unless quantized)."""
    y = graph.tensors[op.outputs[0]]
    if len(op.inputs) > 2 and op.inputs[2] != ir.NO_TENSOR:
        value = np.asarray(graph.tensors[op.inputs[2]].data).reshape(-1)[0]
    else:
        value = y.zero_point
    return fill_value(value, np.dtype(y.dtype).name)


def emit_pad(ctx: EmitContext, op: ir.Operation) -> None:
    """PAD and PADV2: one ``pad`` launch."""
    x = op.inputs[0]
    spec = pad_spec(suffix(ctx.graph, x), ctx.shape(x), paddings_of(ctx.graph, op), pad_value(ctx.graph, op))
    launch(ctx, spec, input=x, output=ctx.output(op))


def check_padv2(graph: ir.Graph, op: ir.Operation) -> str | None:
    """PADV2: PAD's checks, and a pad value of one element of the input's type."""
    reason = check_pad_shape(graph, op, (1, 2))
    if reason is None and len(op.inputs) > 2 and op.inputs[2] != ir.NO_TENSOR:
        v = graph.tensors[op.inputs[2]]
        if v.dtype != graph.tensors[op.inputs[0]].dtype or elements(v.shape) != 1:
            return "the pad value must be one element of the input's type"
    return reason


def check_pad(graph: ir.Graph, op: ir.Operation) -> str | None:
    """PAD: raw copies, paddings that fit, the output shape they give."""
    return check_pad_shape(graph, op, (1,))


movement("PAD", check=check_pad, params=(1,))(emit_pad)
movement("PADV2", check=check_padv2, params=(1, 2))(emit_pad)


def plan_mirror_pad(graph: ir.Graph, op: ir.Operation) -> Gather:
    """MIRROR_PAD: TFLite's per-axis source index (REFLECT excludes the edge, SYMMETRIC repeats it)."""
    shape = graph.tensors[op.inputs[0]].shape
    offset = 1 if options(op, MirrorPadOptions).mode == 0 else 0
    tables, out = [], []
    for d, s, (left, right) in zip(shape, dense_strides(shape), paddings_of(graph, op)):
        if left > d - offset or right > d - offset:
            raise ValueError(f"padding ({left}, {right}) too large for dimension {d} in this mode")
        tables.append(mirror_indices(d + left + right, left, d, offset) * s)
        out.append(d + left + right)
    return Gather(tables, tuple(out))


def mirror_pad(ctx: EmitContext, op: ir.Operation) -> None:
    """MIRROR_PAD: one table gather."""
    emit_table(ctx, op, plan_mirror_pad(ctx.graph, op))


movement("MIRROR_PAD", check=table_checker(plan_mirror_pad, (1,)), params=(1,))(mirror_pad)
