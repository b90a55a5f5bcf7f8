"""Reductions over constant axes (MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL), SOFTMAX and LOG_SOFTMAX over the
last axis, CUMSUM along a constant axis: ``reduce.cl``, one program for every shape and type.

Every output folds its elements sequentially in the input's row-major order, exactly as TFLite's
reference kernels (and the NumPy fallback) do, so float sums and products round the same way.
SUM/PROD/MAX/MIN and CUMSUM also run on int32 and int64 tensors (wrapping as C's integers do),
REDUCE_ANY/ALL on bool tensors (one byte each).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.errors import UnsupportedError
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.registry import OpEmit, OpTensors, op_kind, register
from teflon_py.ops.common import NoAttrs
from teflon_py.ops.normalization import SoftmaxAttrs, log_softmax_reason, softmax_reason, softmax_scaling
from teflon_py.ops.reduce import CumsumAttrs, ReduceAttrs, one_axis_reason, reduce_shape_reason

FILES = ("common.cl", "reduce.cl")
#: reduce.cl's kernel per op, and its suffix per dtype
REDUCERS = {"SUM": "sum", "REDUCE_PROD": "prod", "REDUCE_MAX": "max", "REDUCE_MIN": "min"}
SUFFIX = {"float32": "f32", "int32": "i32", "int64": "i64", "bool": "b8"}
LOGICAL = {"REDUCE_ANY": "any", "REDUCE_ALL": "all"}


def mean_axes(attrs: ReduceAttrs) -> list[int]:
    """The reduced axes (recorded by the frontend, checked in range), in increasing order."""
    return sorted(attrs.axes)


def check_mean(attrs: ReduceAttrs, tensors: OpTensors, caps: object) -> str | None:
    """Every reduction, float and 8-bit: constant axes in range, the output's size follows from
    them (with or without keep_dims); 8-bit MEAN also needs per-tensor quantization, one type."""
    x, y = tensors.inputs[0], tensors.outputs[0]
    if np.dtype(x.dtype) in (np.int8, np.uint8):
        if x.dtype != y.dtype:
            return f"input type {x.dtype} differs from output type {y.dtype}"
        reason = quantization_reason(tensors)
        if reason:
            return reason
    return reduce_shape_reason(attrs, x, y)


def reduce_spec(shape: tuple[int, ...], axes: list[int], kernel: str = "mean") -> KernelSpec:
    """Kept x reduced index spaces (each padded to four dims) as strides into the input.

    ``kernel``: "mean" or one of reduce.cl's ``<op>_<type>`` folds. A float MAX/MIN over every
    axis is seeded with the first element (TFLite's ReduceAllDims), the others with the neutral.
    """
    strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
    kept = [(d, s) for i, (d, s) in enumerate(zip(shape, strides)) if i not in axes]
    red = [(d, s) for i, (d, s) in enumerate(zip(shape, strides)) if i in axes]
    kept = [(1, 0)] * (4 - len(kept)) + kept
    red = [(1, 0)] * (4 - len(red)) + red
    n_out = int(np.prod([d for d, _ in kept]))
    count = int(np.prod([d for d, _ in red]))
    opi = max(1, min(64, 4096 // max(count, 1)))
    seed_first = int(len(axes) == len(shape) and kernel in ("max_f32", "min_f32"))
    args = kernels.scalars(n_out=n_out, opi=opi, k1=kept[1][0], k2=kept[2][0], k3=kept[3][0],
                           **{f"ks{i}": s for i, (_, s) in enumerate(kept)},
                           **{f"r{i}": d for i, (d, _) in enumerate(red)},
                           **{f"rs{i}": s for i, (_, s) in enumerate(red)}, seed_first=seed_first,
                           count=float(count))
    return KernelSpec(files=FILES, name=kernel, defines={}, global_size=(-(-n_out // opi),), local_size=(1,),
                      args=("input", "output", *args), scalars=args)


#: Work-items a ``mean_mid`` launch aims for (each sums whole 16-channel blocks).
MEAN_ITEMS = 8


def mean_mid_geometry(shape: Sequence[int], axes: list[int]) -> tuple[int, int, int, tuple[int]] | None:
    """(n, inner, bpi, global size) of a MEAN over the consecutive ``axes`` (increasing) with 16+
    elements after them, as ``[outer][n][inner] -> [outer][inner]`` 16 outputs at a time, ``bpi``
    blocks of 16 per work-item (``mean_mid``, int8's ``qmean_mid``); None for any other MEAN."""
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        return None
    outer = int(np.prod(shape[:axes[0]], dtype=np.int64))
    n = int(np.prod(shape[axes[0]:axes[-1] + 1], dtype=np.int64))
    inner = int(np.prod(shape[axes[-1] + 1:], dtype=np.int64))
    if inner < 16 or n < 1 or outer < 1:
        return None
    blocks = -(-inner // 16)
    bpi = max(1, min(blocks, outer * blocks // MEAN_ITEMS))
    return n, inner, bpi, (outer * -(-blocks // bpi),)


def mean_spec(shape: tuple[int, ...], axes: list[int]) -> KernelSpec:
    """MEAN: the float sum of each output's elements in order, divided by their count; over
    consecutive axes with 16+ elements after them (an average over HxW), 16 outputs at a time."""
    geometry = mean_mid_geometry(shape, axes)
    if geometry is None:
        return reduce_spec(shape, axes, "mean")
    n, inner, bpi, global_size = geometry
    args = kernels.scalars(n=n, inner=inner, bpi=bpi, count=float(n))
    return KernelSpec(files=FILES, name="mean", defines={}, global_size=global_size,
                      local_size=(1,), args=("input", "output", *args), scalars=args, entry="mean_mid")


@register("MEAN", check=check_mean, params=(1,))
def mean(ctx: OpEmit, attrs: ReduceAttrs) -> None:
    """The gpu family takes the one-output-per-work-item fold (``reduce_spec``, which the
    partition's GPU grid gives one output per work-item) over ``mean_mid``'s 16-wide blocks."""
    x = ctx.operand(0)
    shape, axes = ctx.shape(x), mean_axes(attrs)
    spec = reduce_spec(shape, axes, "mean") if ctx.params.gpu else mean_spec(shape, axes)
    ctx.launch(spec, input=x, output=ctx.output())


def reduce_(ctx: OpEmit, attrs: ReduceAttrs) -> None:
    """SUM, REDUCE_PROD/MAX/MIN (float32, int32, int64), REDUCE_ANY/ALL (bool): one fold per output."""
    x = ctx.operand(0)
    kernel = f"{(REDUCERS | LOGICAL)[ctx.op.name]}_{SUFFIX[op_kind(ctx.graph, ctx.op)]}"
    ctx.launch(reduce_spec(ctx.shape(x), mean_axes(attrs), kernel), input=x, output=ctx.output())


for _kind in ("float32", "int32", "int64"):
    register(*REDUCERS, kind=_kind, check=check_mean, params=(1,))(reduce_)
register(*LOGICAL, kind="bool", check=check_mean, params=(1,))(reduce_)


def quantization_reason(tensors: OpTensors) -> str | None:
    """The 8-bit lowerings' rule: the first input and the output carry per-tensor quantization."""
    for t in (tensors.inputs[0], tensors.outputs[0]):
        if t.quantization is None or t.quantization.scale.size == 0:
            return f"{t.describe()} has no quantization parameters"
        if t.quantization.per_channel:
            return f"{t.describe()} is quantized per channel"
    return None


def check_softmax(attrs: SoftmaxAttrs | NoAttrs, tensors: OpTensors, caps: object) -> str | None:
    """SOFTMAX and LOG_SOFTMAX, float and 8-bit: the output shaped as the input and the op
    layer's type rules; 8-bit SOFTMAX also needs LiteRT's fixed-point scaling of beta * scale."""
    x, y = tensors.inputs[0], tensors.outputs[0]
    if len(x.shape) < 1:
        return "input must have at least one dimension"
    if tuple(x.shape) != tuple(y.shape):
        return "output shape differs from the input's"
    quantized = x.dtype.kind != "f"
    reason = (quantized and quantization_reason(tensors)) or (
        softmax_reason(x, y) if isinstance(attrs, SoftmaxAttrs) else log_softmax_reason(x, y))
    if reason or not quantized or not isinstance(attrs, SoftmaxAttrs):
        return reason or None
    try:
        softmax_scaling(attrs.beta, x.scale)
    except UnsupportedError as e:
        return str(e)
    return None


def _rows(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, depth) of a tensor seen as rows of its last axis."""
    return int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]


@register("SOFTMAX", check=check_softmax, max_rank=None)
def softmax(ctx: OpEmit, attrs: SoftmaxAttrs) -> None:
    """One row per work-item: max, exp((x - max) * beta) and its running sum, then the division."""
    x = ctx.operand(0)
    rows, depth = _rows(ctx.shape(x))
    args = kernels.scalars(depth=depth, beta=float(np.float32(attrs.beta)))
    spec = KernelSpec(files=FILES, name="softmax", defines={}, global_size=(rows,), local_size=(1,),
                      args=("input", "output", *args), scalars=args)
    ctx.launch(spec, input=x, output=ctx.output())


@register("LOG_SOFTMAX", check=check_softmax, max_rank=None)
def log_softmax(ctx: OpEmit, attrs: NoAttrs) -> None:
    """One row per work-item: max, the running sum of exp(x - max), then (x - max) - log(sum)."""
    x = ctx.operand(0)
    rows, depth = _rows(ctx.shape(x))
    args = kernels.scalars(depth=depth)
    spec = KernelSpec(files=FILES, name="log_softmax", defines={}, global_size=(rows,), local_size=(1,),
                      args=("input", "output", *args), scalars=args)
    ctx.launch(spec, input=x, output=ctx.output())


def check_cumsum(attrs: CumsumAttrs, tensors: OpTensors, caps: object) -> str | None:
    """A rank >= 1 input shaped as the output, a constant int32 axis in range."""
    x, y = tensors.inputs[0].shape, tensors.outputs[0].shape
    if len(x) < 1 or tuple(x) != tuple(y):
        return "input must have at least one dimension and the output's shape"
    if tensors.inputs[1].dtype != np.int32:
        return "the axis tensor must be int32"
    if attrs.axis is None:
        return "the axis tensor must hold one value"
    return one_axis_reason(attrs.axis, len(x))


def cumsum_spec(shape: tuple[int, ...], axis: int, dtype: str, exclusive: bool, reverse: bool) -> KernelSpec:
    """One work-item per column along ``axis``: a sequential scan in the input type."""
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    columns = outer * inner
    args = kernels.scalars(columns=columns, n=shape[axis], inner=inner, exclusive=int(exclusive),
                           reverse=int(reverse))
    return KernelSpec(files=FILES, name=f"cumsum_{SUFFIX[dtype]}", defines={}, global_size=(columns,),
                      local_size=(1,), args=("input", "output", *args), scalars=args)


def cumsum(ctx: OpEmit, attrs: CumsumAttrs) -> None:
    """CUMSUM, inclusive or exclusive, forward or reversed."""
    x = ctx.operand(0)
    spec = cumsum_spec(ctx.shape(x), attrs.axis, op_kind(ctx.graph, ctx.op), attrs.exclusive, attrs.reverse)
    ctx.launch(spec, input=x, output=ctx.output())


for _kind in ("float32", "int32", "int64"):
    register("CUMSUM", kind=_kind, check=check_cumsum, params=(1,))(cumsum)
