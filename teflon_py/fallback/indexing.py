"""Indexing kernels: slices, gathers and scatters, one-hot, where, top-k, embedding lookup.

Like the movement kernels these copy raw elements (quantized tensors pass through unchanged),
except EMBEDDING_LOOKUP's hybrid form, which dequantizes int8/uint8 rows into float32. Index
validation follows TFLite's reference kernels: out-of-range indices are errors, not wrap-arounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon_py.fallback.movement import dense, int_list, normalize_axis
from teflon_py.fallback.registry import Node, register


def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


@register("SLICE")
def slice_(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """``input[begin : begin + size]`` per axis; size -1 means up to the end."""
    x, begin, size = inputs
    begin, size = int_list(begin), int_list(size)
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise node.error(f"begin {begin} / size {size} do not fit an input of rank {x.ndim}")
    index = []
    for b, s, d in zip(begin, size, x.shape):
        end = d if s == -1 else b + s
        if not 0 <= b <= end <= d:
            raise node.error(f"slice [{b}, {end}) is out of range for dimension {d}")
        index.append(slice(b, end))
    return dense(x[tuple(index)])


@dataclass
class SlicePlan:
    """STRIDED_SLICE in dense form: the input viewed with new axes added, per-axis spec and masks."""

    shape: list[int]
    begin: list[int]
    end: list[int]
    strides: list[int]
    begin_mask: int = 0
    end_mask: int = 0
    shrink_mask: int = 0


def strided_slice_plan(
    opts: object, in_shape: Sequence[int], begin: list[int], end: list[int], strides: list[int]
) -> SlicePlan:
    """Expand ellipsis and new-axis entries into one spec per effective axis, as TFLite does."""
    n, rank = len(begin), len(in_shape)
    ell, new = opts.ellipsis_mask, opts.new_axis_mask
    num_add = sum(1 for i in range(n) if not _bit(ell, i) and _bit(new, i))
    dims = rank + num_add
    eff_ell = eff_new = 0
    ell_start, expanded, i = dims, 0, 0
    while i < dims:
        if _bit(ell, i):
            ell_start = i
            ell_end = max(i + 1, min(i + 1 + num_add + rank - n, dims))
            expanded = ell_end - ell_start - 1
            for j in range(i, ell_end):
                eff_ell |= 1 << j
            i = ell_end
            continue
        if _bit(new, i - expanded):
            eff_new |= 1 << i
        i += 1
    plan = SlicePlan([0] * dims, [0] * dims, [0] * dims, [1] * dims)
    added_ell = added_axes = 0
    for i in range(dims):
        if _bit(eff_ell, i):
            added_ell = max(0, i - ell_start)
            plan.begin_mask |= 1 << i
            plan.end_mask |= 1 << i
            plan.shape[i] = in_shape[i - added_axes]
        elif _bit(eff_new, i):
            plan.end[i] = 1
            plan.shape[i] = 1
            added_axes += 1
        elif i >= n + expanded:
            plan.begin_mask |= 1 << i
            plan.end_mask |= 1 << i
            plan.shape[i] = in_shape[i - added_axes]
        else:
            k = i - added_ell
            plan.begin[i], plan.end[i], plan.strides[i] = begin[k], end[k], strides[k]
            plan.begin_mask |= _bit(opts.begin_mask, k) << i
            plan.end_mask |= _bit(opts.end_mask, k) << i
            plan.shrink_mask |= _bit(opts.shrink_axis_mask, k) << i
            plan.shape[i] = in_shape[i - added_axes]
    return plan


def axis_start(plan: SlicePlan, axis: int) -> int:
    """First index along ``axis``: TFLite's StartForAxis (wrap negatives, clamp, then begin_mask)."""
    size, start, stride = plan.shape[axis], plan.begin[axis], plan.strides[axis]
    if start < 0:
        start += size
    start = min(max(start, 0), size) if stride > 0 else min(max(start, -1), size - 1)
    if _bit(plan.begin_mask, axis):
        start = 0 if stride > 0 else size - 1
    return start


def axis_stop(plan: SlicePlan, axis: int, start: int, offset: bool) -> int:
    """One past the last index: TFLite's EndForAxis (``offset`` makes end relative to start)."""
    size, end, stride = plan.shape[axis], plan.end[axis], plan.strides[axis]
    if offset:
        end += start
    if end < 0:
        end += size
    end = min(max(end, 0), size) if stride > 0 else min(max(end, -1), size - 1)
    if _bit(plan.end_mask, axis):
        end = size if stride > 0 else -1
    return end


def strided_slice_ranges(
    opts: object, in_shape: Sequence[int], begin: list[int], end: list[int], strides: list[int]
) -> tuple[list[int], list[range | int]]:
    """TFLite's effective STRIDED_SLICE, computed once for the fallback and the OpenCL lowering:
    the shape to view the input as (new axes inserted) and, per axis of that view, the range of
    indices taken, or the one index of a shrunk axis. ValueError on malformed parameters."""
    if not len(begin) == len(end) == len(strides):
        raise ValueError("begin, end and strides differ in length")
    if 0 in strides:
        raise ValueError("stride value has to be non-zero")
    plan = strided_slice_plan(opts, in_shape, begin, end, strides)
    axes: list[range | int] = []
    for axis in range(len(plan.shape)):
        start, stride = axis_start(plan, axis), plan.strides[axis]
        if _bit(plan.shrink_mask, axis):
            if not 0 <= start < plan.shape[axis]:
                raise ValueError(
                    f"shrunk index {plan.begin[axis]} is out of range for dimension {plan.shape[axis]}"
                )
            axes.append(start)
        else:  # a negative stride runs down to -1 at most, so range() holds exactly the indices
            axes.append(range(start, axis_stop(plan, axis, start, bool(opts.offset)), stride))
    return plan.shape, axes


def _as_index(axis: range | int) -> slice | int:
    """A NumPy index for one entry of ``strided_slice_ranges``."""
    if isinstance(axis, int):
        return axis
    if not axis:
        return slice(0, 0)
    return slice(axis.start, axis.stop if axis.stop >= 0 else None, axis.step)


@register("STRIDED_SLICE")
def strided_slice(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Strided slice with begin/end/ellipsis/new-axis/shrink masks and the ``offset`` option."""
    x, begin, end, strides = inputs
    try:
        params = (int_list(v) for v in (begin, end, strides))
        shape, axes = strided_slice_ranges(node.attrs, x.shape, *params)
    except ValueError as e:
        raise node.error(str(e)) from None
    return dense(x.reshape(shape)[tuple(_as_index(a) for a in axes)])


def check_range(node: Node, idx: np.ndarray, limit: int, what: str) -> None:
    """Error unless every index lies in ``[0, limit)``."""
    if idx.size and (idx.min() < 0 or idx.max() >= limit):
        raise node.error(f"{what} index out of range [0, {limit}): min {idx.min()}, max {idx.max()}")


@register("GATHER")
def gather(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """``input`` indexed by ``positions`` along ``axis``, the first ``batch_dims`` axes paired up."""
    x, idx = inputs
    axis = normalize_axis(node, node.attrs.axis, x.ndim)
    batch_dims = node.attrs.batch_dims
    if batch_dims < 0:
        batch_dims += idx.ndim
    if not 0 <= batch_dims <= min(axis, idx.ndim) or x.shape[:batch_dims] != idx.shape[:batch_dims]:
        raise node.error(
            f"batch_dims {node.attrs.batch_dims} does not fit input {x.shape}, positions {idx.shape}"
        )
    check_range(node, idx, x.shape[axis], "gather")
    out_shape = x.shape[:axis] + idx.shape[batch_dims:] + x.shape[axis + 1 :]
    if batch_dims == 0:
        return dense(np.take(x, idx.astype(np.intp), axis=axis))
    b = int(np.prod(x.shape[:batch_dims]))
    x4 = x.reshape(b, int(np.prod(x.shape[batch_dims:axis])), x.shape[axis], -1)
    i2 = idx.reshape(b, -1).astype(np.intp)
    y = x4[np.arange(b)[:, None], :, i2]  # (b, positions, pre, post)
    return dense(y.transpose(0, 2, 1, 3)).reshape(out_shape)


def flat_rows(node: Node, indices: np.ndarray, shape: Sequence[int], what: str) -> np.ndarray:
    """Row numbers, in ``shape[:depth]`` flattened, of the index tuples in the last axis of
    ``indices``; every coordinate must lie inside its dimension (LiteRT checks each one)."""
    depth = indices.shape[-1]
    if depth > len(shape):
        raise node.error(f"index depth {depth} exceeds the rank {len(shape)}")
    tuples = indices.reshape(-1, depth).astype(np.int64)
    for k in range(depth):
        check_range(node, tuples[:, k], shape[k], what)
    strides = np.cumprod((list(shape[1:depth]) + [1])[::-1])[::-1].astype(np.int64)
    return tuples @ strides


@register("GATHER_ND")
def gather_nd(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Slices of ``params`` at the index tuples in the last axis of ``indices``."""
    params, indices = inputs
    depth = indices.shape[-1]
    rows = flat_rows(node, indices, params.shape, "gather_nd")
    slices = params.reshape((int(np.prod(params.shape[:depth])),) + params.shape[depth:])[rows]
    return dense(slices).reshape(indices.shape[:-1] + params.shape[depth:])


@register("SCATTER_ND")
def scatter_nd(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Zeros of ``shape`` with ``updates`` added at the index tuples (duplicates accumulate)."""
    indices, updates, shape = inputs
    shape = int_list(shape)
    depth = indices.shape[-1]
    rows = flat_rows(node, indices, shape, "scatter_nd")
    out = np.zeros([int(np.prod(shape[:depth]))] + shape[depth:], updates.dtype)
    np.add.at(out, rows, updates.reshape((rows.size,) + tuple(shape[depth:])))
    return out.reshape(shape)


@register("ONE_HOT")
def one_hot(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """``on_value`` where ``indices == k`` along a new axis of length ``depth``, else ``off_value``."""
    indices, depth, on, off = inputs
    depth = int_list(depth)[0]
    if depth < 0:
        raise node.error(f"depth {depth} is negative")
    axis = node.attrs.axis
    axis = normalize_axis(node, axis, indices.ndim + 1)
    hot = indices.astype(np.int32)[..., None] == np.arange(depth)  # LiteRT: static_cast<int>(index)
    dtype = node.outputs[0].dtype
    y = np.where(hot, np.asarray(on).reshape(()), np.asarray(off).reshape(())).astype(dtype)
    return dense(np.moveaxis(y, -1, axis))


@register("WHERE")
def where(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Coordinates of the true (non-zero) elements, row-major, as ``[count, rank]`` int64."""
    return np.argwhere(inputs[0]).astype(node.outputs[0].dtype)


@register("TOPK_V2")
def topk_v2(node: Node, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The ``k`` largest of each last-axis row, descending; ties keep the lower index first."""
    x, k = inputs
    k = int_list(k)[0]
    n = x.shape[-1]
    if k > n:
        raise node.error(f"k = {k} exceeds the last dimension {n}")
    k = max(k, 0)
    # a stable ascending sort of the reversed row, reversed again: descending, ties by index
    order = (n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable"))[..., ::-1][..., :k]
    values = np.take_along_axis(x, order, axis=-1)
    return [dense(values), order.astype(node.outputs[1].dtype)]


@register("EMBEDDING_LOOKUP")
def embedding_lookup(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Rows of ``value`` picked by ``lookup``; int8/uint8 rows into float32 output are dequantized
    (hybrid: stored bytes read as int8 times the row's scale, zero point 0)."""
    lookup, value = inputs
    check_range(node, lookup, value.shape[0], "embedding_lookup")
    rows = value[lookup.astype(np.intp)]
    out = node.outputs[0]
    if value.dtype == out.dtype:
        return dense(rows)
    if (
        out.dtype != np.float32
        or value.dtype not in (np.int8, np.uint8)
        or node.inputs[1].quantization is None
    ):
        raise node.error(f"lookup from {value.dtype} into {out.dtype} is not supported")
    scale = node.inputs[1].quantization.scale.astype(np.float32)
    row_scale = scale[lookup] if scale.size > 1 else np.repeat(scale[0], lookup.size)
    return rows.view(np.int8).astype(np.float32) * row_scale.reshape((-1,) + (1,) * (rows.ndim - 1))
