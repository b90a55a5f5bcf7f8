"""Data movement on OpenCL for every element type: ``movement.cl``, one program whose kernels copy
bits (one per element size), with sizes, strides and offsets as kernel arguments.

- a rank-5 strided copy (source and destination strides; a tiled variant when the source is
  contiguous along another axis than the output's, as in NHWC <-> NCHW): SPLIT, SPLIT_V, PACK,
  UNPACK, TRANSPOSE, SLICE, STRIDED_SLICE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, REVERSE_V2 and
  BROADCAST_TO here, CONCATENATION in ``ops_shape``;
- a gather through per-axis offset tables: TILE here, MIRROR_PAD in ``ops_shape``,
  RESIZE_NEAREST_NEIGHBOR in ``ops_resize``; a constant pad (PAD, PADV2 in ``ops_shape``);
- a row gather (GATHER: constant positions, or runtime int32 ones) and ONE_HOT.

Each op has one ``plan_<op>(attrs, tensors)``, pure, that both its check and its emitter call: the
check cannot claim what the emitter cannot build. A plan applies the op layer's rules
(``teflon_py.ops``: a ModelError for a broken model) and raises UnsupportedError (``refuse``) for
what these kernels do not compute; its check turns only the latter into a reason. Copies name
their source by operand number, which the emitter resolves through ``ctx.input``. Quantized tensors pass through as raw integers, so
every data operand and output must share one quantization ("requantizing copy not supported").
Zero-copy CONCATENATION/SPLIT would need aliases at an offset, which partitions do not place
(arena tensors are sub-buffers aligned to 128 bytes or more): every part is copied. The copy
geometry, offset tables and kernel specs the plans build on are ``movement_plan``'s.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.errors import UnsupportedError
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.movement_plan import (
    FILES,
    KINDS,
    SUFFIX,
    Copy,
    Gather,
    Moves,
    copy_reason,
    copy_specs,
    data_tensors,
    dense_strides,
    elements,
    fill_value,
    launches_reason,
    output_reason,
    permute,
    refuse,
    split_moves,
    table_spec,
    tensor_table_reason,
    values,
)
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.registry import OpTensors, register
from teflon_py.ops import indexing as irules
from teflon_py.ops import movement as rules
from teflon_py.ops import shape as srules
from teflon_py.ops.indexing import strided_slice_ranges

LABEL = "OpenCL"  # how the op layer's rules name the op in a ModelError raised while planning


def launch(ctx: Any, spec: KernelSpec, **bindings: Any) -> None:
    """``ctx.launch``, with graph constants moved into the spec's own constants: their bytes reach
    the kernel as they are, whatever a partition does with the constant tensors it places."""
    constants = {}
    for name, ref in list(bindings.items()):
        data = ctx.constant(ref) if isinstance(ref, int) else None
        if data is not None:
            constants[name] = np.ascontiguousarray(data)
            del bindings[name]
    if constants:
        spec = dataclasses.replace(spec, constants={**spec.constants, **constants})
    ctx.launch(spec, **bindings)


def sfx_of(t: ir.Tensor) -> str:
    """The kernel suffix for the elements of ``t``."""
    return SUFFIX[np.dtype(t.dtype).name]


def _name(t: ir.Tensor) -> str:
    return np.dtype(t.dtype).name


# -- copy-based ops ----------------------------------------------------------------------------


def plan_split(attrs: rules.SplitAttrs, ts: OpTensors) -> Moves:
    """SPLIT (axis, input): ``num_splits`` equal parts."""
    x = ts.input(1)
    shape = tuple(x.shape)
    axis = rules.normalize_axis(attrs.axis if attrs.axis is not None else values(ts.input(0))[0],
                                len(shape), LABEL)
    sizes = rules.split_sizes(shape[axis], attrs.num_splits, LABEL)
    if len(sizes) != len(ts.outputs):
        raise refuse(f"{len(sizes)} parts for {len(ts.outputs)} outputs")
    return split_moves(1, shape, axis, sizes)


def plan_split_v(attrs: rules.SplitAttrs, ts: OpTensors) -> Moves:
    """SPLIT_V (input, sizes, axis): parts of the given sizes, one of them -1 (the remainder)."""
    shape = tuple(ts.input(0).shape)
    axis = rules.normalize_axis(attrs.axis if attrs.axis is not None else values(ts.input(2))[0],
                                len(shape), LABEL)
    sizes = rules.split_v_sizes(shape[axis], values(ts.input(1)), LABEL)
    if len(sizes) != len(ts.outputs):
        raise refuse(f"{len(sizes)} parts for {len(ts.outputs)} outputs")
    return split_moves(0, shape, axis, sizes)


def plan_unpack(attrs: rules.UnpackAttrs, ts: OpTensors) -> Moves:
    """UNPACK: output k is index k along ``axis``, that axis removed."""
    shape = tuple(ts.input(0).shape)
    axis = rules.normalize_axis(attrs.axis, len(shape), LABEL)
    if len(ts.outputs) != shape[axis]:
        raise refuse(f"{len(ts.outputs)} outputs for dimension {shape[axis]}")
    moves = split_moves(0, shape, axis, [1] * shape[axis])
    moves.shapes = {k: s[:axis] + s[axis + 1:] for k, s in moves.shapes.items()}
    return moves


def plan_pack(attrs: rules.PackAttrs, ts: OpTensors) -> Moves:
    """PACK: input k becomes index k along a new ``axis``."""
    shape = tuple(ts.input(0).shape)
    axis = rules.normalize_axis(attrs.axis, len(shape) + 1, LABEL)
    out = shape[:axis] + (len(ts.inputs),) + shape[axis:]
    strides = dense_strides(out)
    dst = strides[:axis] + strides[axis + 1:]
    copies = []
    for k, t in enumerate(ts.inputs):
        if tuple(t.shape) != shape:
            raise refuse(f"input {k} has shape {list(t.shape)}, input 0 {list(shape)}")
        copies.append((Copy(shape, dense_strides(shape), dst, 0, k * strides[axis]), k, 0))
    return Moves(copies, {0: out})


def plan_transpose(attrs: Any, ts: OpTensors) -> Moves:
    """TRANSPOSE by a constant ``perm`` (negative entries count from the end)."""
    shape = tuple(ts.input(0).shape)
    copy = permute(shape, rules.permutation(values(ts.input(1)), len(shape), LABEL))
    return Moves([(copy, 0, 0)], {0: copy.dims})


def plan_slice(attrs: Any, ts: OpTensors) -> Moves:
    """SLICE: ``input[begin : begin + size]`` per axis, size -1 up to the end."""
    shape = tuple(ts.input(0).shape)
    bounds = irules.slice_bounds(shape, values(ts.input(1)), values(ts.input(2)), LABEL)
    dims = [e - b for b, e in bounds]
    strides = dense_strides(shape)
    copy = Copy(tuple(dims), strides, dense_strides(dims), sum(b * s for (b, _), s in zip(bounds, strides)))
    return Moves([(copy, 0, 0)], {0: copy.dims})


def plan_strided_slice(attrs: irules.StridedSliceAttrs, ts: OpTensors) -> Moves:
    """STRIDED_SLICE with every mask: the op layer's index computation, done once at compile time."""
    view, axes = strided_slice_ranges(attrs, ts.input(0).shape, values(ts.input(1)), values(ts.input(2)),
                                      values(ts.input(3)), label=LABEL)
    strides = dense_strides(view)
    dims, src, offset = [], [], 0
    for a, s in zip(axes, strides):
        if isinstance(a, int):
            offset += a * s
            continue
        dims.append(len(a))
        src.append(a.step * s)
        if a:
            offset += a.start * s
    return Moves([(Copy(tuple(dims), tuple(src), dense_strides(dims), offset), 0, 0)], {0: tuple(dims)})


def plan_depth_to_space(attrs: rules.BlockAttrs, ts: OpTensors) -> Moves:
    """NHWC: channel blocks (ih*b + iw)*C + c into b x b spatial tiles."""
    shape = tuple(ts.input(0).shape)
    out = rules.depth_to_space_shape(shape, attrs.block_size, LABEL)
    n, h, w, c = shape
    b = attrs.block_size
    copy = permute((n, h, w, b, b, c // (b * b)), (0, 1, 3, 2, 4, 5))
    return Moves([(copy, 0, 0)], {0: out})


def plan_space_to_depth(attrs: rules.BlockAttrs, ts: OpTensors) -> Moves:
    """NHWC: each b x b spatial tile folded into channels."""
    shape = tuple(ts.input(0).shape)
    out = rules.space_to_depth_shape(shape, attrs.block_size, LABEL)
    n, h, w, c = shape
    b = attrs.block_size
    copy = permute((n, h // b, b, w // b, b, c), (0, 1, 3, 2, 4, 5))
    return Moves([(copy, 0, 0)], {0: out})


def plan_reverse_v2(attrs: Any, ts: OpTensors) -> Moves:
    """REVERSE_V2: a copy that walks the listed axes backwards."""
    shape = tuple(ts.input(0).shape)
    axes = set(rules.reverse_axes(values(ts.input(1)), len(shape), LABEL))
    strides = dense_strides(shape)
    src = tuple(-s if k in axes else s for k, s in enumerate(strides))
    offset = sum((shape[k] - 1) * strides[k] for k in axes)
    return Moves([(Copy(shape, src, strides, offset), 0, 0)], {0: shape})


def plan_broadcast_to(attrs: Any, ts: OpTensors) -> Moves:
    """BROADCAST_TO: a copy that reads broadcast axes with stride 0."""
    x = tuple(ts.input(0).shape)
    out = srules.broadcast_to_shape(x, values(ts.input(1)), LABEL)
    shape = (1,) * (len(out) - len(x)) + x
    src = tuple(s if d == o else 0 for d, o, s in zip(shape, out, dense_strides(shape)))
    return Moves([(Copy(out, src, dense_strides(out)), 0, 0)], {0: out})


MovesPlan = Callable[[Any, OpTensors], Moves]


def moves_reason(attrs: Any, ts: OpTensors, plan: MovesPlan) -> str | None:
    """Why a copy plan cannot serve the op: it refuses, a copy takes too many launches, or its
    output shapes disagree."""
    try:
        moves = plan(attrs, ts)
    except UnsupportedError as e:
        return str(e)
    reasons = [launches_reason(copy) for copy, _, _ in moves.copies]
    reasons += [output_reason(ts, k, shape) for k, shape in moves.shapes.items()]
    return next((r for r in reasons if r), None)


def moves_checker(plan: MovesPlan, params: Sequence[int]) -> Callable[[Any, OpTensors, Any], str | None]:
    """The check of a copy-based op: the data can be copied, its plan builds, the shapes agree."""

    def check(attrs: Any, ts: OpTensors, caps: Any) -> str | None:
        return copy_reason(data_tensors(ts, params)) or moves_reason(attrs, ts, plan)

    return check


def emit_moves(ctx: Any, moves: Moves) -> None:
    """One strided-copy launch (or a few) per planned copy."""
    sfx = sfx_of(ctx.graph.tensors[ctx.op.outputs[0]])
    for copy, src, k in moves.copies:
        for spec in copy_specs(sfx, copy):
            launch(ctx, spec, input=ctx.input(src), output=ctx.output(k))


def tensors(ctx: Any) -> OpTensors:
    """What the op's plan reads, from an emitter's context."""
    return OpTensors.of(ctx.graph, ctx.op)


#: copy-based op -> (plan, operands that must be constant)
MOVES: dict[str, tuple[MovesPlan, tuple[int, ...]]] = {
    "SPLIT": (plan_split, (0,)),
    "SPLIT_V": (plan_split_v, (1, 2)),
    "UNPACK": (plan_unpack, ()),
    "PACK": (plan_pack, ()),
    "TRANSPOSE": (plan_transpose, (1,)),
    "SLICE": (plan_slice, (1, 2)),
    "STRIDED_SLICE": (plan_strided_slice, (1, 2, 3)),
    "DEPTH_TO_SPACE": (plan_depth_to_space, ()),
    "SPACE_TO_DEPTH": (plan_space_to_depth, ()),
    "REVERSE_V2": (plan_reverse_v2, (1,)),
    "BROADCAST_TO": (plan_broadcast_to, (1,)),
}


def copies(ctx: Any, attrs: Any) -> None:
    """Emitter of every op in ``MOVES``."""
    emit_moves(ctx, MOVES[ctx.op.name][0](attrs, tensors(ctx)))


# -- table gathers ------------------------------------------------------------------------------


def plan_tile(attrs: Any, ts: OpTensors) -> Gather:
    """TILE: output index i along axis k reads input index i mod size."""
    shape = tuple(ts.input(0).shape)
    multiples = rules.tile_multiples(values(ts.input(1)), len(shape), LABEL)
    if min(multiples, default=1) < 1:
        raise refuse(f"multiples {multiples} give an empty output")
    strides = dense_strides(shape)
    tables = [(np.arange(d * m) % d) * s for d, m, s in zip(shape, multiples, strides)]
    return Gather(tables, tuple(d * m for d, m in zip(shape, multiples)))


TablePlan = Callable[[Any, OpTensors], Gather]


def table_checker(plan: TablePlan, params: Sequence[int]) -> Callable[[Any, OpTensors, Any], str | None]:
    """The check of a table-gather op: raw copies, an input the tables can address, its plan."""

    def check(attrs: Any, ts: OpTensors, caps: Any) -> str | None:
        reason = copy_reason(data_tensors(ts, params)) or tensor_table_reason(ts.input(0))
        if reason:
            return reason
        try:
            gather = plan(attrs, ts)
        except UnsupportedError as e:
            return str(e)
        return output_reason(ts, 0, gather.shape)

    return check


def emit_table(ctx: Any, gather: Gather) -> None:
    """One table-gather launch from input 0."""
    x = ctx.graph.tensors[ctx.input(0)]
    spec = table_spec(sfx_of(x), gather.tables, fill_value(0, _name(x)))
    launch(ctx, spec, input=ctx.input(0), output=ctx.output())


def tile(ctx: Any, attrs: Any) -> None:
    """TILE: one table gather."""
    emit_table(ctx, plan_tile(attrs, tensors(ctx)))


# -- GATHER and ONE_HOT -------------------------------------------------------------------------


@dataclass
class Positions:
    """GATHER as rows of ``inner`` elements: output row (b, o, j) is input row (b, o, idx[b][j]),
    for ``batches`` x ``outer`` x ``count`` output rows and an axis of ``axis`` input rows."""

    batches: int
    outer: int
    axis: int
    inner: int
    count: int
    shape: tuple[int, ...]


def plan_gather(attrs: irules.GatherAttrs, ts: OpTensors) -> Positions:
    """GATHER: positions constant (any integer type) or runtime int32, any batch_dims."""
    x, idx = ts.input(0), ts.input(1)
    axis, bd, shape = irules.gather_geometry(x.shape, idx.shape, attrs, LABEL)
    if idx.is_constant:
        irules.check_indices(idx.data, x.shape[axis], "gather", LABEL)
    elif idx.dtype != np.int32:
        raise refuse(f"runtime {np.dtype(idx.dtype).name} positions not supported (int32 only)")
    return Positions(elements(x.shape[:bd]), elements(x.shape[bd:axis]), x.shape[axis],
                     elements(x.shape[axis + 1:]), elements(idx.shape[bd:]), shape)


def check_gather(attrs: irules.GatherAttrs, ts: OpTensors, caps: Any) -> str | None:
    """GATHER: one element type in and out, raw copies, a plan that builds, its output shape."""
    if _name(ts.outputs[0]) != _name(ts.input(0)):
        return "output type differs from the input's"
    reason = copy_reason([ts.input(0), ts.outputs[0]])
    if reason:
        return reason
    try:
        plan = plan_gather(attrs, ts)
    except UnsupportedError as e:
        return str(e)
    return output_reason(ts, 0, plan.shape)


def gather_spec(sfx: str, plan: Positions) -> KernelSpec:
    """``gather_<sfx>`` for ``plan``; the caller binds the positions ("indices")."""
    rows = plan.batches * plan.outer * plan.count
    global_size, rpi, chunk = kernels.row_blocks(rows, plan.inner)
    args = kernels.scalars(rows=rows, rpi=rpi, n4=plan.inner, chunk=chunk, npos=plan.count, outer=plan.outer,
                           axis=plan.axis)
    return KernelSpec(files=FILES, name=f"gather_{sfx}", defines={}, global_size=global_size,
                      local_size=(1, 1), args=("input", "indices", "output", *args), scalars=args)


def gather(ctx: Any, attrs: irules.GatherAttrs) -> None:
    """One row gather; constant positions are uploaded as int32, runtime ones read as they come."""
    x, idx = ctx.input(0), ctx.input(1)
    spec = gather_spec(sfx_of(ctx.graph.tensors[x]), plan_gather(attrs, tensors(ctx)))
    positions = ctx.constant(idx)
    if positions is not None:
        spec = dataclasses.replace(spec, constants={"indices": np.asarray(positions, np.int32)})
        launch(ctx, spec, input=x, output=ctx.output())
    else:
        launch(ctx, spec, input=x, indices=idx, output=ctx.output())


@dataclass
class OneHot:
    """ONE_HOT as (outer, depth, inner) over the output, with its on/off values."""

    depth: int
    inner: int
    on: np.generic
    off: np.generic
    shape: tuple[int, ...]


def plan_one_hot(attrs: irules.OneHotAttrs, ts: OpTensors) -> OneHot:
    """ONE_HOT: constant depth, on and off values of the output's type, the new axis."""
    idx, depth, on, off = (ts.input(k) for k in range(4))
    y = ts.outputs[0]
    dtype = _name(y)
    if dtype not in SUFFIX:
        raise refuse(f"{dtype} outputs not supported")
    if on.dtype != y.dtype or off.dtype != y.dtype or elements(on.shape) != 1 or elements(off.shape) != 1:
        raise refuse("on and off values must be single elements of the output's type")
    depth = values(depth)[0]
    shape = irules.one_hot_shape(idx.shape, depth, attrs.axis, LABEL)
    axis = rules.normalize_axis(attrs.axis, len(idx.shape) + 1, LABEL)
    on_v, off_v = (fill_value(np.asarray(t.data).reshape(-1)[0], dtype) for t in (on, off))
    return OneHot(depth, elements(idx.shape[axis:]), on_v, off_v, shape)


def check_one_hot(attrs: irules.OneHotAttrs, ts: OpTensors, caps: Any) -> str | None:
    """ONE_HOT: four operands, an output type the kernels store, its plan and output shape."""
    if len(ts.inputs) != 4 or any(t is None for t in ts.inputs):
        return "needs indices, depth, on and off values"
    reason = copy_reason(list(ts.outputs))
    if reason:
        return reason
    try:
        plan = plan_one_hot(attrs, ts)
    except UnsupportedError as e:
        return str(e)
    return output_reason(ts, 0, plan.shape)


def one_hot(ctx: Any, attrs: irules.OneHotAttrs) -> None:
    """One flat ONE_HOT launch; of int64 indices only the low int word counts (TFLite casts to int)."""
    plan = plan_one_hot(attrs, tensors(ctx))
    n = elements(plan.shape)
    (pieces, _), _, chunk = kernels.row_blocks(1, n)
    wide = int(_name(ctx.graph.tensors[ctx.input(0)]) == "int64")
    args = {**kernels.scalars(n=n, chunk=chunk, depth=plan.depth, inner=plan.inner, wide=wide),
            "on": plan.on, "off": plan.off}
    spec = KernelSpec(files=FILES, name=f"one_hot_{sfx_of(ctx.graph.tensors[ctx.op.outputs[0]])}", defines={},
                      global_size=(pieces,), local_size=(1,), args=("indices", "output", *args), scalars=args)
    launch(ctx, spec, indices=ctx.input(0), output=ctx.output())


# -- registrations ------------------------------------------------------------------------------

#: (op, dtype) pairs LiteRT itself does not compute (its Prepare refuses them): nothing to lower
NO_ORACLE = {("DEPTH_TO_SPACE", "bool"), ("DEPTH_TO_SPACE", "int16"), ("SPACE_TO_DEPTH", "bool"),
             ("SPACE_TO_DEPTH", "int16"), ("PACK", "bool"), ("UNPACK", "int64"), ("SPLIT", "bool"),
             ("SPLIT_V", "bool")}

for _kind in KINDS:
    for _name_, (_plan, _params) in MOVES.items():
        if (_name_, _kind) in NO_ORACLE:
            continue
        register(_name_, kind=_kind, check=moves_checker(_plan, _params), params=_params, max_rank=None)(copies)
    register("TILE", kind=_kind, check=table_checker(plan_tile, (1,)), params=(1,), max_rank=None)(tile)
    register("GATHER", kind=_kind, dtypes=(_kind, "int32", "int64", "int16"), check=check_gather,
             max_rank=None)(gather)
for _kind in ("int32", "int64"):
    register("ONE_HOT", kind=_kind, dtypes=(_kind, *KINDS), check=check_one_hot, params=(1, 2, 3),
             max_rank=None)(one_hot)
