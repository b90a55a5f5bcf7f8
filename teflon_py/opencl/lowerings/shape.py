"""RESHAPE/SQUEEZE/EXPAND_DIMS (aliases: same bytes, no kernel), CONCATENATION, and the pads PAD,
PADV2 (a constant) and MIRROR_PAD (reflections), for every element type, on ``ops_movement``'s
kernels (``movement.cl``): strided copies, the pad kernel, table gathers. A uint8 CONCATENATION
input on another grid than the output's (LiteRT requantizes those; int8 ones must match) first
goes through its 256-entry table (``ops_qelementwise.concat_requantize_table``, ``qlut``)."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.movement_plan import (
    FILES,
    KINDS,
    RANK,
    Copy,
    Gather,
    Moves,
    copy_reason,
    copy_specs,
    data_tensors,
    dense_strides,
    elements,
    fill_value,
    flat_copy_spec,
    output_reason,
    refuse,
)
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.lowerings.movement import (
    LABEL,
    emit_table,
    launch,
    moves_reason,
    sfx_of,
    table_checker,
    tensors,
)
from teflon_py.opencl.registry import OpTensors, Ref, register
from teflon_py.ops import movement as rules
from teflon_py.ops.common import Act
from teflon_py.ops.movement import mirror_indices, mirror_offset


def check_alias(attrs: Any, ts: OpTensors, caps: Any) -> str | None:
    """An alias holds as many values as its input, and the same quantization."""
    x, y = ts.input(0).shape, ts.outputs[0].shape
    if elements(x) != elements(y):
        return f"output shape {list(y)} holds a different number of values than input {list(x)}"
    return copy_reason(data_tensors(ts, (1,)))


def alias(ctx: Any, attrs: Any) -> None:
    """The output is the input's bytes under another shape: an alias, no launch (a constant
    input is copied instead: it travels as raw bytes in the launch's spec)."""
    x = ctx.input(0)
    if ctx.constant(x) is not None:
        launch(ctx, flat_copy_spec(elements(ctx.shape(x)), ctx.graph.tensors[x].dtype), input=x,
               output=ctx.output())
    else:
        ctx.alias(ctx.op.outputs[0], x)


def plan_concatenation(attrs: rules.ConcatenationAttrs, ts: OpTensors) -> Moves:
    """Input k copied into its run of indices along ``axis`` of the output."""
    if attrs.activation.kind != Act.NONE:
        raise refuse("fused activation not supported")
    out = tuple(ts.outputs[0].shape)
    shape = rules.concat_shape([t.shape for t in ts.inputs], attrs.axis, LABEL)
    if shape != out:
        raise refuse(f"output has shape {list(out)}, the inputs give {list(shape)}")
    axis = rules.normalize_axis(attrs.axis, len(out), LABEL)
    strides = dense_strides(out)
    moves = Moves([], {0: out})
    offset = 0
    for k, t in enumerate(ts.inputs):
        moves.copies.append((Copy(tuple(t.shape), dense_strides(t.shape), strides, 0, offset * strides[axis]), k, 0))
        offset += t.shape[axis]
    return moves


def requantize_tables(graph: ir.Graph, op: ir.Operation) -> dict[int, np.ndarray]:
    """uint8 CONCATENATION: input number -> the 256-entry table moving it onto the output's grid
    (TFLite's ConcatenationWithScaling), for the inputs whose scale or zero point differ."""
    from teflon_py.opencl.lowerings.qelementwise import concat_requantize_table

    if graph.tensors[op.outputs[0]].dtype != np.uint8:
        return {}
    tables = {k: concat_requantize_table(graph, op, k) for k in range(len(op.inputs))}
    return {k: t for k, t in tables.items() if t is not None}


def concat_quantization_reason(ts: OpTensors) -> str | None:
    """uint8 inputs may differ from the output's per-tensor quantization (a table requantizes them);
    other types are raw copies that must share it (LiteRT refuses int8 rescaling)."""
    operands = data_tensors(ts, ())
    if np.dtype(ts.outputs[0].dtype) != np.uint8:
        return copy_reason(operands)
    if any(np.dtype(t.dtype) != np.uint8 for t in operands):
        return "all inputs must have the output's type"
    if any(t.quantization is None or t.quantization.per_channel for t in operands) and any(
            t.quantization != operands[0].quantization for t in operands[1:]):
        return "requantizing copy needs per-tensor quantization on every operand"
    reason = next((r for r in (copy_reason([t]) for t in operands) if r), None)
    if reason is None and any(t.quantization is not None and not (np.isfinite(t.scale) and t.scale > 0)
                              for t in operands):
        return "requantizing copy needs positive finite scales"
    return reason


def check_concatenation(attrs: rules.ConcatenationAttrs, ts: OpTensors, caps: Any) -> str | None:
    """CONCATENATION: operands that copy (uint8 ones through a requantizing table), a plan whose
    copies build, the output shape it gives."""
    return concat_quantization_reason(ts) or moves_reason(attrs, ts, plan_concatenation)


def concatenation(ctx: Any, attrs: rules.ConcatenationAttrs) -> None:
    """One strided copy per input into its slice of the output (a plain row copy per outer index);
    a uint8 input on another grid goes through its table first (``qlut`` into a scratch buffer, or
    on the host for a constant)."""
    from teflon_py.opencl.kernels import qspecs as qkernels
    from teflon_py.opencl.lowerings.qelementwise import lut_spec

    moves = plan_concatenation(attrs, tensors(ctx))
    tables = requantize_tables(ctx.graph, ctx.op)
    sfx = sfx_of(ctx.graph.tensors[ctx.op.outputs[0]])
    for k, (copy, operand, _) in enumerate(moves.copies):
        src = ctx.input(operand)
        source: Ref = src
        table = tables.get(k)
        data = ctx.constant(src)
        if table is not None and data is not None:  # a constant input: requantized here, uploaded raw
            requantized = np.ascontiguousarray(table[np.asarray(data, np.uint8)])
            for spec in copy_specs(sfx, copy):
                ctx.launch(dataclasses.replace(spec, constants={**spec.constants, "input": requantized}),
                           output=ctx.output())
            continue
        if table is not None:
            n = elements(ctx.shape(src))
            source = ctx.scratch(n)
            qkernels.launch(ctx, lut_spec(n, np.dtype(np.uint8), table), input=src, output=source)
        for spec in copy_specs(sfx, copy):
            launch(ctx, spec, input=source, output=ctx.output())


# -- pads -------------------------------------------------------------------------------------


def collapse_pads(shape: Sequence[int], paddings: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(input size, before, after) per dim, an unpadded dim merged into the one before it."""
    dims: list[tuple[int, int, int]] = []
    for d, (before, after) in zip(shape, paddings):
        if dims and before == 0 and after == 0:
            dims[-1] = (dims[-1][0] * d, dims[-1][1] * d, dims[-1][2] * d)
        else:
            dims.append((d, before, after))
    return dims


def pad_rank_reason(shape: Sequence[int], paddings: Sequence[tuple[int, int]]) -> str | None:
    """Why the pad kernel cannot take these paddings: more than five dims after collapsing."""
    n = len(collapse_pads(shape, paddings))
    return f"padding needs {n} dimensions after collapsing (at most {RANK})" if n > RANK else None


def pad_geometry(shape: Sequence[int], paddings: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """``collapse_pads`` padded in front to five (``pad_rank_reason`` has accepted it)."""
    dims = collapse_pads(shape, paddings)
    return [(1, 0, 0)] * (RANK - len(dims)) + dims


def paddings_of(ts: OpTensors) -> list[tuple[int, int]]:
    """The constant ``[rank, 2]`` paddings operand as non-negative (before, after) pairs."""
    return rules.pad_widths(np.asarray(ts.input(1).data), len(ts.input(0).shape), LABEL)


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


def check_pad_shape(ts: OpTensors, params: Sequence[int]) -> str | None:
    """The checks PAD and PADV2 share: raw copies, paddings that fit, the output shape they give."""
    reason = copy_reason(data_tensors(ts, params))
    if reason:
        return reason
    shape = ts.input(0).shape
    paddings = paddings_of(ts)
    return pad_rank_reason(shape, paddings) or output_reason(ts, 0, rules.padded_shape(shape, paddings))


def pad_value(ts: OpTensors) -> np.generic:
    """PAD/PADV2's fill: the value operand (raw), else the output zero point (0 unless quantized)."""
    y = ts.outputs[0]
    v = ts.input(2)
    value = np.asarray(v.data).reshape(-1)[0] if v is not None else y.zero_point
    return fill_value(value, np.dtype(y.dtype).name)


def emit_pad(ctx: Any, attrs: Any) -> None:
    """PAD and PADV2: one ``pad`` launch."""
    x = ctx.input(0)
    ts = tensors(ctx)
    spec = pad_spec(sfx_of(ctx.graph.tensors[x]), ctx.shape(x), paddings_of(ts), pad_value(ts))
    launch(ctx, spec, input=x, output=ctx.output())


def check_padv2(attrs: Any, ts: OpTensors, caps: Any) -> str | None:
    """PADV2: PAD's checks, and a pad value of one element of the input's type."""
    reason = check_pad_shape(ts, (1, 2))
    v = ts.input(2)
    if reason is None and v is not None and (v.dtype != ts.input(0).dtype or elements(v.shape) != 1):
        return "the pad value must be one element of the input's type"
    return reason


def check_pad(attrs: Any, ts: OpTensors, caps: Any) -> str | None:
    """PAD: raw copies, paddings that fit, the output shape they give."""
    return check_pad_shape(ts, (1,))


def plan_mirror_pad(attrs: rules.MirrorPadAttrs, ts: OpTensors) -> Gather:
    """MIRROR_PAD: TFLite's per-axis source index (REFLECT excludes the edge, SYMMETRIC repeats it)."""
    shape = ts.input(0).shape
    offset = mirror_offset(attrs.mode)
    tables, out = [], []
    for d, s, (left, right) in zip(shape, dense_strides(shape), paddings_of(ts)):
        rules.mirror_check(d, left, right, attrs.mode, LABEL)
        tables.append(mirror_indices(d + left + right, left, d, offset) * s)
        out.append(d + left + right)
    return Gather(tables, tuple(out))


def mirror_pad(ctx: Any, attrs: rules.MirrorPadAttrs) -> None:
    """MIRROR_PAD: one table gather."""
    emit_table(ctx, plan_mirror_pad(attrs, tensors(ctx)))


for _kind in KINDS:
    register("RESHAPE", "SQUEEZE", "EXPAND_DIMS", kind=_kind, check=check_alias, params=(1,), max_rank=None)(alias)
    register("CONCATENATION", kind=_kind, check=check_concatenation, max_rank=None)(concatenation)
    register("PAD", kind=_kind, check=check_pad, params=(1,), max_rank=None)(emit_pad)
    register("PADV2", kind=_kind, check=check_padv2, params=(1, 2), max_rank=None)(emit_pad)
    register("MIRROR_PAD", kind=_kind, check=table_checker(plan_mirror_pad, (1,)), params=(1,),
             max_rank=None)(mirror_pad)
