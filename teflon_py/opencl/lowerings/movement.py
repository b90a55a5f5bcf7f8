"""Data movement on OpenCL for every element type: ``movement.cl``, one program whose kernels copy
bits (one per element size), with sizes, strides and offsets as kernel arguments.

- a rank-5 strided copy (source and destination strides; a tiled variant when the source is
  contiguous along another axis than the output's, as in NHWC <-> NCHW): SPLIT, SPLIT_V, PACK,
  UNPACK, TRANSPOSE, SLICE, STRIDED_SLICE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, REVERSE_V2 and
  BROADCAST_TO here, CONCATENATION in ``ops_shape``;
- a gather through per-axis offset tables: TILE here, MIRROR_PAD in ``ops_shape``,
  RESIZE_NEAREST_NEIGHBOR in ``ops_resize``; a constant pad (PAD, PADV2 in ``ops_shape``);
- a row gather (GATHER: constant positions, or runtime int32 ones) and ONE_HOT.

Each op has one ``plan_<op>(graph, op)``, pure, that both its check and its emitter call: the check
cannot claim what the emitter cannot build. Quantized tensors pass through as raw integers, so
every data operand and output must share one quantization ("requantizing copy not supported").
Zero-copy CONCATENATION/SPLIT would need aliases at an offset, which partitions do not place
(arena tensors are sub-buffers aligned to 128 bytes or more): every part is copied. The copy
geometry, offset tables and kernel specs the plans build on are ``movement_plan``'s.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from teflon_py import ir
from teflon_py.fallback.indexing import strided_slice_ranges
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.movement_plan import (
    FILES,
    KINDS,
    SUFFIX,
    Copy,
    Gather,
    Moves,
    copy_specs,
    data_operands,
    data_reason,
    dense_strides,
    dtype_name,
    elements,
    fill_value,
    fold_tables,
    normalize_axis,
    options,
    param,
    permute,
    shape_reason,
    split_moves,
    suffix,
    table_reason,
    table_spec,
)
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.tflite.options import (
    DepthToSpaceOptions,
    GatherOptions,
    OneHotOptions,
    PackOptions,
    SpaceToDepthOptions,
    SplitOptions,
    StridedSliceOptions,
    UnpackOptions,
)

if TYPE_CHECKING:  # lowering imports every ops_* module: import it only once this one is defined
    from teflon_py.opencl.registry import EmitContext, Ref


def launch(ctx: EmitContext, spec: KernelSpec, **bindings: Ref) -> None:
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


# -- copy-based ops ----------------------------------------------------------------------------


def plan_split(graph: ir.Graph, op: ir.Operation) -> Moves:
    """SPLIT (axis, input): ``num_splits`` equal parts."""
    x = op.inputs[1]
    shape = tuple(graph.tensors[x].shape)
    axis = normalize_axis(param(graph, op, 0)[0], len(shape))
    n = options(op, SplitOptions).num_splits
    if n != len(op.outputs) or n <= 0 or shape[axis] % n:
        raise ValueError(f"cannot split dimension {shape[axis]} into {n} equal parts")
    return split_moves(x, shape, axis, [shape[axis] // n] * n)


def plan_split_v(graph: ir.Graph, op: ir.Operation) -> Moves:
    """SPLIT_V (input, sizes, axis): parts of the given sizes, one of them -1 (the remainder)."""
    x = op.inputs[0]
    shape = tuple(graph.tensors[x].shape)
    axis = normalize_axis(param(graph, op, 2)[0], len(shape))
    sizes = param(graph, op, 1)
    if sizes.count(-1) > 1:
        raise ValueError("at most one split size may be -1")
    if -1 in sizes:
        sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    if sum(sizes) != shape[axis] or min(sizes, default=0) < 0 or len(sizes) != len(op.outputs):
        raise ValueError(f"split sizes {sizes} do not add up to dimension {shape[axis]}")
    return split_moves(x, shape, axis, sizes)


def plan_unpack(graph: ir.Graph, op: ir.Operation) -> Moves:
    """UNPACK: output k is index k along ``axis``, that axis removed."""
    x = op.inputs[0]
    shape = tuple(graph.tensors[x].shape)
    axis = normalize_axis(options(op, UnpackOptions).axis, len(shape))
    if len(op.outputs) != shape[axis]:
        raise ValueError(f"{len(op.outputs)} outputs for dimension {shape[axis]}")
    moves = split_moves(x, shape, axis, [1] * shape[axis])
    moves.shapes = {k: s[:axis] + s[axis + 1:] for k, s in moves.shapes.items()}
    return moves


def plan_pack(graph: ir.Graph, op: ir.Operation) -> Moves:
    """PACK: input k becomes index k along a new ``axis``."""
    shape = tuple(graph.tensors[op.inputs[0]].shape)
    axis = normalize_axis(options(op, PackOptions).axis, len(shape) + 1)
    out = shape[:axis] + (len(op.inputs),) + shape[axis:]
    strides = dense_strides(out)
    dst = strides[:axis] + strides[axis + 1:]
    copies = []
    for k, t in enumerate(op.inputs):
        if tuple(graph.tensors[t].shape) != shape:
            raise ValueError(f"input {k} has shape {list(graph.tensors[t].shape)}, input 0 {list(shape)}")
        copies.append((Copy(shape, dense_strides(shape), dst, 0, k * strides[axis]), t, 0))
    return Moves(copies, {0: out})


def plan_transpose(graph: ir.Graph, op: ir.Operation) -> Moves:
    """TRANSPOSE by a constant ``perm`` (negative entries count from the end)."""
    x = op.inputs[0]
    shape = tuple(graph.tensors[x].shape)
    perm = [normalize_axis(p, len(shape)) for p in param(graph, op, 1)]
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"perm {perm} is not a permutation of {len(shape)} axes")
    copy = permute(shape, perm)
    return Moves([(copy, x, 0)], {0: copy.dims})


def plan_slice(graph: ir.Graph, op: ir.Operation) -> Moves:
    """SLICE: ``input[begin : begin + size]`` per axis, size -1 up to the end."""
    x = op.inputs[0]
    shape = tuple(graph.tensors[x].shape)
    begin, size = param(graph, op, 1), param(graph, op, 2)
    if len(begin) != len(shape) or len(size) != len(shape):
        raise ValueError(f"begin {begin} / size {size} do not fit an input of rank {len(shape)}")
    dims = []
    for b, s, d in zip(begin, size, shape):
        end = d if s == -1 else b + s
        if not 0 <= b <= end <= d:
            raise ValueError(f"slice [{b}, {end}) is out of range for dimension {d}")
        dims.append(end - b)
    strides = dense_strides(shape)
    copy = Copy(tuple(dims), strides, dense_strides(dims), sum(b * s for b, s in zip(begin, strides)))
    return Moves([(copy, x, 0)], {0: copy.dims})


def plan_strided_slice(graph: ir.Graph, op: ir.Operation) -> Moves:
    """STRIDED_SLICE with every mask: the fallback's index computation, done once at compile time."""
    x = op.inputs[0]
    view, axes = strided_slice_ranges(options(op, StridedSliceOptions), graph.tensors[x].shape,
                                      param(graph, op, 1), param(graph, op, 2), param(graph, op, 3))
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
    return Moves([(Copy(tuple(dims), tuple(src), dense_strides(dims), offset), x, 0)], {0: tuple(dims)})


def block_size(op: ir.Operation, cls: type) -> int:
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH's block size, which must be positive."""
    b = options(op, cls).block_size
    if b <= 0:
        raise ValueError(f"block size {b}")
    return b


def plan_depth_to_space(graph: ir.Graph, op: ir.Operation) -> Moves:
    """NHWC: channel blocks (ih*b + iw)*C + c into b x b spatial tiles."""
    x = op.inputs[0]
    n, h, w, c = graph.tensors[x].shape
    b = block_size(op, DepthToSpaceOptions)
    if c % (b * b):
        raise ValueError(f"depth {c} is not divisible by block_size^2 = {b * b}")
    copy = permute((n, h, w, b, b, c // (b * b)), (0, 1, 3, 2, 4, 5))
    return Moves([(copy, x, 0)], {0: (n, h * b, w * b, c // (b * b))})


def plan_space_to_depth(graph: ir.Graph, op: ir.Operation) -> Moves:
    """NHWC: each b x b spatial tile folded into channels."""
    x = op.inputs[0]
    n, h, w, c = graph.tensors[x].shape
    b = block_size(op, SpaceToDepthOptions)
    if h % b or w % b:
        raise ValueError(f"spatial size {h}x{w} is not divisible by block_size {b}")
    copy = permute((n, h // b, b, w // b, b, c), (0, 1, 3, 2, 4, 5))
    return Moves([(copy, x, 0)], {0: (n, h // b, w // b, b * b * c)})


def plan_reverse_v2(graph: ir.Graph, op: ir.Operation) -> Moves:
    """REVERSE_V2: a copy that walks the listed axes backwards."""
    x = op.inputs[0]
    shape = tuple(graph.tensors[x].shape)
    axes = {normalize_axis(a, len(shape)) for a in param(graph, op, 1)}
    strides = dense_strides(shape)
    src = tuple(-s if k in axes else s for k, s in enumerate(strides))
    offset = sum((shape[k] - 1) * strides[k] for k in axes)
    return Moves([(Copy(shape, src, strides, offset), x, 0)], {0: shape})


def plan_broadcast_to(graph: ir.Graph, op: ir.Operation) -> Moves:
    """BROADCAST_TO: a copy that reads broadcast axes with stride 0."""
    x = op.inputs[0]
    out = tuple(param(graph, op, 1))
    shape = (1,) * (len(out) - len(graph.tensors[x].shape)) + tuple(graph.tensors[x].shape)
    if len(shape) != len(out) or any(d not in (1, o) for d, o in zip(shape, out)):
        raise ValueError(f"cannot broadcast {list(graph.tensors[x].shape)} to {list(out)}")
    src = tuple(s if d == o else 0 for d, o, s in zip(shape, out, dense_strides(shape)))
    return Moves([(Copy(out, src, dense_strides(out)), x, 0)], {0: out})


MovesPlan = Callable[[ir.Graph, ir.Operation], Moves]


def moves_checker(plan: MovesPlan, params: Sequence[int]) -> Callable[[ir.Graph, ir.Operation], str | None]:
    """The check of a copy-based op: its plan builds, the output shapes agree, the data can be copied."""

    def check(graph: ir.Graph, op: ir.Operation) -> str | None:
        return data_reason(graph, data_operands(op, params)) or moves_reason(graph, op, plan)

    return check


def moves_reason(graph: ir.Graph, op: ir.Operation, plan: MovesPlan) -> str | None:
    """Why a copy plan cannot serve ``op``: it does not build, or its output shapes disagree."""
    try:
        moves = plan(graph, op)
        for copy, _, _ in moves.copies:
            copy_specs("u8", copy)
    except ValueError as e:
        return str(e)
    reasons = (shape_reason(graph, op, k, shape) for k, shape in moves.shapes.items())
    return next((r for r in reasons if r), None)


def emit_moves(ctx: EmitContext, op: ir.Operation, moves: Moves) -> None:
    """One strided-copy launch (or a few) per planned copy."""
    sfx = suffix(ctx.graph, op.outputs[0])
    for copy, src, k in moves.copies:
        for spec in copy_specs(sfx, copy):
            launch(ctx, spec, input=src, output=ctx.output(op, k))


def movement(*ops: str, check: Callable[[ir.Graph, ir.Operation], str | None], params: tuple[int, ...] = (),
             kinds: Sequence[str] = KINDS, extra: tuple[str, ...] = ()) -> Callable:
    """Register the decorated emitter for ``ops`` and each data dtype in ``kinds`` (``extra``:
    dtypes other operands may have, e.g. int32 positions)."""

    def wrap(fn: Callable[[EmitContext, ir.Operation], None]) -> Callable[[EmitContext, ir.Operation], None]:
        from teflon_py.opencl.registry import lowering

        for kind in kinds:
            lowering(*ops, kind=kind, dtypes=(kind, *extra), check=check, params=params, max_rank=None)(fn)
        return fn

    return wrap


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


def copies(ctx: EmitContext, op: ir.Operation) -> None:
    """Emitter of every op in ``MOVES``."""
    emit_moves(ctx, op, MOVES[op.name][0](ctx.graph, op))


# -- table gathers ------------------------------------------------------------------------------


def plan_tile(graph: ir.Graph, op: ir.Operation) -> Gather:
    """TILE: output index i along axis k reads input index i mod size."""
    shape = graph.tensors[op.inputs[0]].shape
    multiples = param(graph, op, 1)
    if len(multiples) != len(shape) or min(multiples, default=1) < 1:
        raise ValueError(f"multiples {multiples} do not fit an input of rank {len(shape)}")
    strides = dense_strides(shape)
    tables = [(np.arange(d * m) % d) * s for d, m, s in zip(shape, multiples, strides)]
    return Gather(tables, tuple(d * m for d, m in zip(shape, multiples)))


TablePlan = Callable[[ir.Graph, ir.Operation], Gather]


def table_checker(plan: TablePlan, params: Sequence[int]) -> Callable[[ir.Graph, ir.Operation], str | None]:
    """The check of a table-gather op: raw copies, an input the tables can address, its plan."""

    def check(graph: ir.Graph, op: ir.Operation) -> str | None:
        reason = data_reason(graph, data_operands(op, params)) or table_reason(graph, op.inputs[0])
        if reason:
            return reason
        try:
            gather = plan(graph, op)
            fold_tables(gather.tables)
        except ValueError as e:
            return str(e)
        return shape_reason(graph, op, 0, gather.shape)

    return check


def emit_table(ctx: EmitContext, op: ir.Operation, gather: Gather) -> None:
    """One table-gather launch from input 0."""
    x = op.inputs[0]
    spec = table_spec(suffix(ctx.graph, x), gather.tables, fill_value(0, dtype_name(ctx.graph, x)))
    launch(ctx, spec, input=x, output=ctx.output(op))


def tile(ctx: EmitContext, op: ir.Operation) -> None:
    """TILE: one table gather."""
    emit_table(ctx, op, plan_tile(ctx.graph, op))


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


def plan_gather(graph: ir.Graph, op: ir.Operation) -> Positions:
    """GATHER: positions constant (any integer type) or runtime int32, any batch_dims."""
    x, idx = (graph.tensors[t] for t in op.inputs)
    opts = options(op, GatherOptions)
    axis = normalize_axis(opts.axis, len(x.shape))
    bd = opts.batch_dims + (len(idx.shape) if opts.batch_dims < 0 else 0)
    if not 0 <= bd <= min(axis, len(idx.shape)) or tuple(x.shape[:bd]) != tuple(idx.shape[:bd]):
        raise ValueError(f"batch_dims {opts.batch_dims} does not fit input {list(x.shape)}, "
                         f"positions {list(idx.shape)}")
    if idx.is_constant:
        pos = np.asarray(idx.data)
        if pos.size and (pos.min() < 0 or pos.max() >= x.shape[axis]):
            raise ValueError(f"gather index out of range [0, {x.shape[axis]})")
    elif idx.dtype != np.int32:
        raise ValueError(f"runtime {np.dtype(idx.dtype).name} positions not supported (int32 only)")
    shape = tuple(x.shape[:axis]) + tuple(idx.shape[bd:]) + tuple(x.shape[axis + 1:])
    return Positions(elements(x.shape[:bd]), elements(x.shape[bd:axis]), x.shape[axis],
                     elements(x.shape[axis + 1:]), elements(idx.shape[bd:]), shape)


def check_gather(graph: ir.Graph, op: ir.Operation) -> str | None:
    """GATHER: one element type in and out, raw copies, a plan that builds, its output shape."""
    if dtype_name(graph, op.outputs[0]) != dtype_name(graph, op.inputs[0]):
        return "output type differs from the input's"
    reason = data_reason(graph, [op.inputs[0], op.outputs[0]])
    if reason:
        return reason
    try:
        plan = plan_gather(graph, op)
    except ValueError as e:
        return str(e)
    return shape_reason(graph, op, 0, plan.shape)


def gather_spec(sfx: str, plan: Positions) -> KernelSpec:
    """``gather_<sfx>`` for ``plan``; the caller binds the positions ("indices")."""
    rows = plan.batches * plan.outer * plan.count
    global_size, rpi, chunk = kernels.row_blocks(rows, plan.inner)
    args = kernels.scalars(rows=rows, rpi=rpi, n4=plan.inner, chunk=chunk, npos=plan.count, outer=plan.outer,
                           axis=plan.axis)
    return KernelSpec(files=FILES, name=f"gather_{sfx}", defines={}, global_size=global_size,
                      local_size=(1, 1), args=("input", "indices", "output", *args), scalars=args)


def gather(ctx: EmitContext, op: ir.Operation) -> None:
    """One row gather; constant positions are uploaded as int32, runtime ones read as they come."""
    x, idx = op.inputs
    spec = gather_spec(suffix(ctx.graph, x), plan_gather(ctx.graph, op))
    positions = ctx.constant(idx)
    if positions is not None:
        spec = dataclasses.replace(spec, constants={"indices": np.asarray(positions, np.int32)})
        launch(ctx, spec, input=x, output=ctx.output(op))
    else:
        launch(ctx, spec, input=x, indices=idx, output=ctx.output(op))


@dataclass
class OneHot:
    """ONE_HOT as (outer, depth, inner) over the output, with its on/off values."""

    depth: int
    inner: int
    on: np.generic
    off: np.generic
    shape: tuple[int, ...]


def plan_one_hot(graph: ir.Graph, op: ir.Operation) -> OneHot:
    """ONE_HOT: constant depth, on and off values of the output's type, the new axis."""
    idx, _, on, off = (graph.tensors[t] for t in op.inputs)
    y = graph.tensors[op.outputs[0]]
    dtype = np.dtype(y.dtype).name
    if dtype not in SUFFIX:
        raise ValueError(f"{dtype} outputs not supported")
    if on.dtype != y.dtype or off.dtype != y.dtype or elements(on.shape) != 1 or elements(off.shape) != 1:
        raise ValueError("on and off values must be single elements of the output's type")
    depth = param(graph, op, 1)[0]
    axis = normalize_axis(options(op, OneHotOptions).axis, len(idx.shape) + 1)
    shape = tuple(idx.shape[:axis]) + (depth,) + tuple(idx.shape[axis:])
    on_v, off_v = (fill_value(np.asarray(t.data).reshape(-1)[0], dtype) for t in (on, off))
    return OneHot(depth, elements(idx.shape[axis:]), on_v, off_v, shape)


def check_one_hot(graph: ir.Graph, op: ir.Operation) -> str | None:
    """ONE_HOT: four operands, an output type the kernels store, its plan and output shape."""
    if len(op.inputs) != 4:
        return "needs indices, depth, on and off values"
    reason = data_reason(graph, list(op.outputs))
    if reason:
        return reason
    try:
        plan = plan_one_hot(graph, op)
    except ValueError as e:
        return str(e)
    return shape_reason(graph, op, 0, plan.shape)


def one_hot(ctx: EmitContext, op: ir.Operation) -> None:
    """One flat ONE_HOT launch; of int64 indices only the low int word counts (TFLite casts to int)."""
    plan = plan_one_hot(ctx.graph, op)
    n = elements(plan.shape)
    (pieces, _), _, chunk = kernels.row_blocks(1, n)
    wide = int(dtype_name(ctx.graph, op.inputs[0]) == "int64")
    args = {**kernels.scalars(n=n, chunk=chunk, depth=plan.depth, inner=plan.inner, wide=wide),
            "on": plan.on, "off": plan.off}
    spec = KernelSpec(files=FILES, name=f"one_hot_{suffix(ctx.graph, op.outputs[0])}", defines={},
                      global_size=(pieces,), local_size=(1,), args=("indices", "output", *args), scalars=args)
    launch(ctx, spec, indices=op.inputs[0], output=ctx.output(op))


# -- registrations: last, so that ops_shape and ops_resize, which lowering imports meanwhile, find
# everything above defined even when this module is imported first ------------------------------

for _name, (_plan, _params) in MOVES.items():
    movement(_name, check=moves_checker(_plan, _params), params=_params)(copies)
movement("TILE", check=table_checker(plan_tile, (1,)), params=(1,))(tile)
movement("GATHER", check=check_gather, extra=("int32", "int64", "int16"))(gather)
movement("ONE_HOT", check=check_one_hot, params=(1, 2, 3), kinds=("int32", "int64"), extra=KINDS)(one_hot)
