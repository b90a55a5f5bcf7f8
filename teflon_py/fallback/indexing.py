"""Indexing kernels: slices, gathers and scatters, one-hot, where, top-k, embedding lookup.

Like the movement kernels these copy raw elements (quantized tensors pass through unchanged),
except EMBEDDING_LOOKUP's hybrid form, which dequantizes int8/uint8 rows into float32. Index
validation follows TFLite's reference kernels: out-of-range indices are errors, not wrap-arounds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.movement import dense, int_list, label, normalize_axis
from teflon_py.fallback.registry import Node, register
from teflon_py.ops import indexing as rules
from teflon_py.ops.indexing import strided_slice_ranges


@register("SLICE")
def slice_(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """``input[begin : begin + size]`` per axis; size -1 means up to the end."""
    x, begin, size = inputs
    bounds = rules.slice_bounds(x.shape, int_list(begin), int_list(size), label(node))
    return dense(x[tuple(slice(b, e) for b, e in bounds)])


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
    params = (int_list(v) for v in (begin, end, strides))
    shape, axes = strided_slice_ranges(node.attrs, x.shape, *params, label=label(node))
    return dense(x.reshape(shape)[tuple(_as_index(a) for a in axes)])


def check_range(node: Node, idx: np.ndarray, limit: int, what: str) -> None:
    """Error unless every index lies in ``[0, limit)``."""
    if idx.size and (idx.min() < 0 or idx.max() >= limit):
        raise node.error(f"{what} index out of range [0, {limit}): min {idx.min()}, max {idx.max()}")


@register("GATHER")
def gather(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """``input`` indexed by ``positions`` along ``axis``, the first ``batch_dims`` axes paired up."""
    x, idx = inputs
    axis, batch_dims, out_shape = rules.gather_geometry(x.shape, idx.shape, node.attrs, label(node))
    check_range(node, idx, x.shape[axis], "gather")
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
    rules.one_hot_shape(indices.shape, depth, node.attrs.axis, label(node))
    axis = normalize_axis(node, node.attrs.axis, indices.ndim + 1)
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
