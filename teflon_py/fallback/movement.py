"""Data-movement and shape kernels: transpose, split/pack, tile, broadcast, pads, block reshuffles.

Every kernel here copies elements without arithmetic, so quantized tensors pass through as raw
integers (TFLite requires equal input/output quantization for these ops and never requantizes).
Parameters (perm, axis, multiples, paddings, block shapes) may be constants or runtime tensors:
shapes are computed from the values seen at invoke.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.registry import Node, register
from teflon_py.ops import movement as rules
from teflon_py.ops import shape as shape_rules
from teflon_py.ops.movement import mirror_indices, mirror_offset


def dense(a: np.ndarray | np.generic) -> np.ndarray:
    """``a`` as a C-contiguous ndarray, copied only if needed; 0-d stays 0-d (unlike ascontiguousarray)."""
    return np.asarray(a, order="C")


def int_list(value: np.ndarray) -> list[int]:
    """A parameter tensor (scalar or vector of any integer type) as Python ints."""
    return [int(v) for v in np.asarray(value).reshape(-1)]


def label(node: Node) -> str:
    """How the op layer's rules name the node in their errors."""
    return node.op.describe()


def normalize_axis(node: Node, axis: int, rank: int) -> int:
    """``axis`` in ``[-rank, rank)`` made non-negative, or an error naming the node."""
    if not -rank <= axis < rank:
        raise node.error(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def pad_value(node: Node, constant: np.ndarray | None) -> object:
    """The fill value of a pad: the constant operand, else the output zero point (0 if not quantized)."""
    if constant is not None:
        return np.asarray(constant).reshape(-1)[0]
    return node.outputs[0].zero_point


@register("EXPAND_DIMS")
def expand_dims(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Insert a size-1 axis; a negative axis counts from the end of the output rank."""
    x, axis = inputs
    axis = node.attrs.axis if node.attrs.axis is not None else int_list(axis)[0]
    return np.expand_dims(x, normalize_axis(node, axis, x.ndim + 1))


@register("TRANSPOSE")
def transpose(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Permute axes by ``perm`` (negative entries count from the end, as TFLite allows)."""
    x, perm = inputs
    perm = rules.permutation(int_list(perm), x.ndim, label(node))
    return dense(np.transpose(x, perm))


@register("SPLIT")
def split(node: Node, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Split into ``num_splits`` equal parts; operands are (axis, input)."""
    axis, x = inputs
    axis = node.attrs.axis if node.attrs.axis is not None else int_list(axis)[0]
    axis = normalize_axis(node, axis, x.ndim)
    sizes = rules.split_sizes(x.shape[axis], node.attrs.num_splits, label(node))
    return [dense(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=axis)]


@register("SPLIT_V")
def split_v(node: Node, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Split into parts of the given sizes; one size may be -1 (the remainder)."""
    x, sizes, axis = inputs
    axis = node.attrs.axis if node.attrs.axis is not None else int_list(axis)[0]
    axis = normalize_axis(node, axis, x.ndim)
    sizes = rules.split_v_sizes(x.shape[axis], int_list(sizes), label(node))
    return [dense(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=axis)]


@register("PACK")
def pack(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Stack equally shaped inputs along a new axis."""
    rank = inputs[0].ndim + 1
    return np.stack(list(inputs), axis=normalize_axis(node, node.attrs.axis, rank))


@register("UNPACK")
def unpack(node: Node, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Split along an axis into its slices, that axis removed."""
    x = inputs[0]
    axis = normalize_axis(node, node.attrs.axis, x.ndim)
    return [dense(np.take(x, i, axis=axis)) for i in range(x.shape[axis])]


@register("TILE")
def tile(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Repeat the whole tensor ``multiples[i]`` times along each axis."""
    x, multiples = inputs
    multiples = rules.tile_multiples(int_list(multiples), x.ndim, label(node))
    return np.tile(x, multiples)


@register("BROADCAST_TO")
def broadcast_to(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Broadcast to the shape given as a tensor (NumPy's rules, which are TFLite's)."""
    x, shape = inputs
    return np.array(np.broadcast_to(x, shape_rules.broadcast_to_shape(x.shape, int_list(shape), label(node))))


@register("BROADCAST_ARGS")
def broadcast_args(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The broadcast shape of two shape vectors, in their integer type."""
    s0, s1 = inputs
    shape = shape_rules.broadcast_shape(int_list(s0), int_list(s1), label(node))
    return np.array(shape, node.outputs[0].dtype)


def pad_widths(node: Node, paddings: np.ndarray, rank: int) -> list[tuple[int, int]]:
    """A ``[rank, 2]`` paddings tensor as (before, after) pairs, all non-negative."""
    return rules.pad_widths(paddings, rank, label(node))


@register("PADV2")
def padv2(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Pad with a constant: the value operand (raw, quantized alike), else the output zero point."""
    x, paddings = inputs[0], inputs[1]
    value = pad_value(node, inputs[2] if len(inputs) > 2 else None)
    return np.pad(x, pad_widths(node, paddings, x.ndim), constant_values=value).astype(x.dtype, copy=False)


@register("MIRROR_PAD")
def mirror_pad(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Pad by reflection: REFLECT (mode 0) excludes the edge, SYMMETRIC (mode 1) repeats it."""
    x, paddings = inputs
    offset = mirror_offset(node.attrs.mode)
    out = x
    for axis, (left, right) in enumerate(pad_widths(node, paddings, x.ndim)):
        size = x.shape[axis]
        rules.mirror_check(size, left, right, node.attrs.mode, label(node))
        out = np.take(out, mirror_indices(size + left + right, left, size, offset), axis=axis)
    return dense(out)


@register("DEPTH_TO_SPACE")
def depth_to_space(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """NHWC: move ``b*b`` channel blocks into ``b x b`` spatial tiles (depth index (ih*b+iw)*C+c)."""
    x = inputs[0]
    b = node.attrs.block_size
    rules.depth_to_space_shape(x.shape, b, label(node))
    n, h, w, c = x.shape
    y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return dense(y).reshape(n, h * b, w * b, c // (b * b))


@register("SPACE_TO_DEPTH")
def space_to_depth(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """NHWC: fold each ``b x b`` spatial tile into channels, the inverse of DEPTH_TO_SPACE."""
    x = inputs[0]
    b = node.attrs.block_size
    rules.space_to_depth_shape(x.shape, b, label(node))
    n, h, w, c = x.shape
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return dense(y).reshape(n, h // b, w // b, b * b * c)


def block_shape(node: Node, block: np.ndarray, rank: int) -> list[int]:
    """The block shape as ints: positive, one per spatial axis between batch and the rest."""
    return rules.block_shape(int_list(block), rank, label(node))


@register("SPACE_TO_BATCH_ND")
def space_to_batch_nd(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Pad the spatial axes (with the output zero point if quantized, else 0), then move each
    block offset into the batch: ``[n, o1*b1, .., r] -> [b1*..*bm*n, o1, .., r]``, offsets major."""
    x, block, paddings = inputs
    block = block_shape(node, block, x.ndim)
    m = len(block)
    widths = [(0, 0), *pad_widths(node, np.asarray(paddings).reshape(m, 2), m)] + [(0, 0)] * (x.ndim - m - 1)
    xp = np.pad(x, widths, constant_values=pad_value(node, None)).astype(x.dtype, copy=False)
    n, spatial, rest = xp.shape[0], xp.shape[1 : m + 1], xp.shape[m + 1 :]
    if any(s % b for s, b in zip(spatial, block)):
        raise node.error(f"padded spatial shape {spatial} is not divisible by block shape {block}")
    outer = [s // b for s, b in zip(spatial, block)]
    y = xp.reshape([n, *(d for pair in zip(outer, block) for d in pair), *rest])  # n, o1, b1, .., om, bm, r
    order = (
        [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(2 * m + 1, y.ndim))
    )
    return dense(y.transpose(order)).reshape([n * int(np.prod(block)), *outer, *rest])


@register("BATCH_TO_SPACE_ND")
def batch_to_space_nd(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Move block offsets from the batch back into the spatial axes (SPACE_TO_BATCH_ND's inverse),
    then crop each spatial axis."""
    x, block, crops = inputs
    block = block_shape(node, block, x.ndim)
    m, total = len(block), int(np.prod(block))
    if x.shape[0] % total:
        raise node.error(f"batch {x.shape[0]} is not divisible by the block size {total}")
    n, spatial, rest = x.shape[0] // total, x.shape[1 : m + 1], x.shape[m + 1 :]
    y = x.reshape([*block, n, *spatial, *rest])  # b1, .., bm, n, s1, .., sm, r
    order = [m] + [a for i in range(m) for a in (m + 1 + i, i)] + list(range(2 * m + 1, y.ndim))
    y = dense(y.transpose(order)).reshape([n, *(s * b for s, b in zip(spatial, block)), *rest])
    cuts = pad_widths(node, np.asarray(crops).reshape(m, 2), m)
    if any(a + b > y.shape[1 + i] for i, (a, b) in enumerate(cuts)):
        raise node.error(f"crops {cuts} exceed the spatial shape {y.shape[1 : m + 1]}")
    return dense(y[(slice(None), *(slice(a, y.shape[1 + i] - b) for i, (a, b) in enumerate(cuts)))])


@register("REVERSE_V2")
def reverse_v2(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """Reverse the order of elements along each listed axis."""
    x, axes = inputs
    axes = rules.reverse_axes(int_list(axes), x.ndim, label(node))
    return dense(np.flip(x, axis=tuple(axes))) if axes else x.copy()


@register("SHAPE")
def shape(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The input's shape as a vector of the output type (int32 or int64, ``out_type``)."""
    return np.array(inputs[0].shape, node.outputs[0].dtype)


@register("RANK")
def rank(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The input's number of dimensions as a scalar."""
    return np.array(inputs[0].ndim, node.outputs[0].dtype)


@register("FILL")
def fill(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """A tensor of shape ``dims`` holding the scalar ``value`` (raw, quantized alike)."""
    dims, value = inputs
    dims = shape_rules.fill_shape(int_list(dims), label(node))
    return np.full(dims, np.asarray(value).reshape(-1)[0], node.outputs[0].dtype)


def accumulate(start: np.ndarray, delta: np.ndarray, count: int) -> np.ndarray:
    """``start, start+delta, ...`` by repeated addition (TFLite's loop), so float rounding matches."""
    steps = np.full(count, delta, start.dtype)
    if count:
        steps[0] = start
    return np.add.accumulate(steps, dtype=start.dtype)


@register("RANGE")
def range_(node: Node, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """``[start, limit)`` by ``delta`` (int32, int64, float32), by repeated addition like TFLite."""
    start, limit, delta = (np.asarray(v).reshape(()) for v in inputs)
    if node.inputs[0].quantization is not None:
        raise node.error("quantized RANGE is not supported")
    return accumulate(start, delta, shape_rules.range_size(start, limit, delta, label(node)))
