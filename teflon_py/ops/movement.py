"""The movement family: CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V, TRANSPOSE, PAD, PADV2,
MIRROR_PAD, TILE, REVERSE_V2, DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND: attributes, rules and shape inference.

The rules (split sizes, paddings, mirror indices, block shapes) are public functions here that
both backends call; each raises ``ModelError`` naming the op.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon_py.errors import ModelError
from teflon_py.ops.common import NO_ACTIVATION, FusedActivation, NoAttrs, normalize_axis
from teflon_py.ops.registry import Inputs, Meta, define
from teflon_py.ops.shape import constant, int_list


@dataclass(frozen=True)
class ConcatenationAttrs:
    """CONCATENATION: the axis (normalised where the rank allows it) and a fused activation."""

    axis: int = 0
    activation: FusedActivation = NO_ACTIVATION


@dataclass(frozen=True)
class PackAttrs:
    """PACK: the new axis (normalised against the output rank) and the number of inputs."""

    axis: int = 0
    count: int = 0


@dataclass(frozen=True)
class UnpackAttrs:
    """UNPACK: the axis removed (normalised) and the number of outputs."""

    axis: int = 0
    count: int = 0


@dataclass(frozen=True)
class SplitAttrs:
    """SPLIT / SPLIT_V: the number of parts and the axis (from its constant operand, normalised;
    None when the axis is a runtime tensor)."""

    num_splits: int = 0
    axis: int | None = None


@dataclass(frozen=True)
class BlockAttrs:
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH: the block size."""

    block_size: int = 0


class MirrorMode(enum.Enum):
    """MIRROR_PAD: REFLECT excludes the edge, SYMMETRIC repeats it."""

    REFLECT = "reflect"
    SYMMETRIC = "symmetric"


@dataclass(frozen=True)
class MirrorPadAttrs:
    mode: MirrorMode = MirrorMode.REFLECT


def _x(ins: Inputs, k: int = 0):
    x = ins[k]
    if x is None:
        raise ins.error(f"input {k} is missing")
    return x


def _dtype(ins: Inputs, k: int = 0) -> np.dtype:
    return np.dtype(_x(ins, k).dtype)


# -- CONCATENATION ----------------------------------------------------------------------------

def concat_shape(shapes: Sequence[Sequence[int]], axis: int, label: str) -> tuple[int, ...]:
    """The inputs joined along ``axis`` (in range): equal ranks, equal off-axis dims (ModelError)."""
    first = tuple(shapes[0])
    axis = normalize_axis(axis, len(first), label)
    total = 0
    for s in shapes:
        if len(s) != len(first) or any(d != f for i, (d, f) in enumerate(zip(s, first)) if i != axis):
            raise ModelError(f"{label}: input shape {list(s)} does not match {list(first)} off axis {axis}")
        total += s[axis]
    return first[:axis] + (total,) + first[axis + 1:]


@define("CONCATENATION", attrs=ConcatenationAttrs)
def infer_concatenation(attrs: ConcatenationAttrs, ins: Inputs) -> list[Meta]:
    xs = [t for t in ins.inputs if t is not None]
    out = ins.outputs[0]
    if any(np.dtype(t.dtype) != np.dtype(out.dtype) for t in xs):
        raise ins.error("all inputs must have the output's type")
    return [Meta(concat_shape([t.shape for t in xs], attrs.axis, ins.label), np.dtype(out.dtype))]


# -- PACK / UNPACK ------------------------------------------------------------------------------

@define("PACK", attrs=PackAttrs)
def infer_pack(attrs: PackAttrs, ins: Inputs) -> list[Meta]:
    shape = tuple(_x(ins).shape)
    if any(tuple(t.shape) != shape for t in ins.inputs):
        raise ins.error("all inputs must have one shape")
    axis = normalize_axis(attrs.axis, len(shape) + 1, ins.label)
    return [Meta(shape[:axis] + (len(ins.inputs),) + shape[axis:], _dtype(ins))]


@define("UNPACK", attrs=UnpackAttrs)
def infer_unpack(attrs: UnpackAttrs, ins: Inputs) -> list[Meta]:
    shape = tuple(_x(ins).shape)
    axis = normalize_axis(attrs.axis, len(shape), ins.label)
    if len(ins.outputs) != shape[axis]:
        raise ins.error(f"{len(ins.outputs)} outputs for dimension {shape[axis]}")
    return [Meta(shape[:axis] + shape[axis + 1:], _dtype(ins)) for _ in ins.outputs]


# -- SPLIT / SPLIT_V ----------------------------------------------------------------------------

def split_sizes(dim: int, num_splits: int, label: str) -> list[int]:
    """SPLIT: ``num_splits`` equal parts of ``dim`` (ModelError)."""
    if num_splits <= 0 or dim % num_splits:
        raise ModelError(f"{label}: cannot split dimension {dim} into {num_splits} equal parts")
    return [dim // num_splits] * num_splits


def split_v_sizes(dim: int, sizes: Sequence[int], label: str) -> list[int]:
    """SPLIT_V: the given sizes, one -1 resolved to the remainder (ModelError)."""
    sizes = [int(s) for s in sizes]
    if sizes.count(-1) > 1:
        raise ModelError(f"{label}: at most one split size may be -1")
    if -1 in sizes:
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    if sum(sizes) != dim or min(sizes, default=0) < 0:
        raise ModelError(f"{label}: split sizes {sizes} do not add up to dimension {dim}")
    return sizes


def _split_metas(ins: Inputs, x, axis: int, sizes: list[int]) -> list[Meta]:
    if len(sizes) != len(ins.outputs):
        raise ins.error(f"{len(sizes)} parts for {len(ins.outputs)} outputs")
    shape = tuple(x.shape)
    return [Meta(shape[:axis] + (s,) + shape[axis + 1:], np.dtype(x.dtype)) for s in sizes]


@define("SPLIT", attrs=SplitAttrs)
def infer_split(attrs: SplitAttrs, ins: Inputs) -> list[Meta]:
    x = _x(ins, 1)
    if attrs.axis is None:
        return [Meta(None, np.dtype(x.dtype)) for _ in ins.outputs]
    axis = normalize_axis(attrs.axis, len(x.shape), ins.label)
    return _split_metas(ins, x, axis, split_sizes(x.shape[axis], attrs.num_splits, ins.label))


@define("SPLIT_V", attrs=SplitAttrs)
def infer_split_v(attrs: SplitAttrs, ins: Inputs) -> list[Meta]:
    x, sizes = _x(ins), constant(ins[1])
    if attrs.axis is None or sizes is None:
        return [Meta(None, np.dtype(x.dtype)) for _ in ins.outputs]
    axis = normalize_axis(attrs.axis, len(x.shape), ins.label)
    return _split_metas(ins, x, axis, split_v_sizes(x.shape[axis], int_list(sizes), ins.label))


# -- TRANSPOSE / REVERSE_V2 / TILE ----------------------------------------------------------------

def permutation(perm: Sequence[int], rank: int, label: str) -> list[int]:
    """TRANSPOSE's ``perm`` normalised (negative entries count from the end); a permutation."""
    perm = [normalize_axis(int(p), rank, label) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise ModelError(f"{label}: perm {perm} is not a permutation of {rank} axes")
    return perm


@define("TRANSPOSE", attrs=NoAttrs)
def infer_transpose(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, perm = _x(ins), constant(ins[1])
    if perm is None:
        return [Meta(None, np.dtype(x.dtype))]
    perm = permutation(int_list(perm), len(x.shape), ins.label)
    return [Meta(tuple(x.shape[p] for p in perm), np.dtype(x.dtype))]


def reverse_axes(axes: Sequence[int], rank: int, label: str) -> list[int]:
    """REVERSE_V2's axes, normalised."""
    return [normalize_axis(int(a), rank, label) for a in axes]


@define("REVERSE_V2", attrs=NoAttrs)
def infer_reverse_v2(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, axes = _x(ins), constant(ins[1])
    if axes is not None:
        reverse_axes(int_list(axes), len(x.shape), ins.label)
    return [Meta(tuple(x.shape), np.dtype(x.dtype))]


def tile_multiples(multiples: Sequence[int], rank: int, label: str) -> list[int]:
    """TILE's multiples: one per axis, none negative (ModelError)."""
    multiples = [int(m) for m in multiples]
    if len(multiples) != rank or min(multiples, default=0) < 0:
        raise ModelError(f"{label}: multiples {multiples} do not fit an input of rank {rank}")
    return multiples


@define("TILE", attrs=NoAttrs)
def infer_tile(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, m = _x(ins), constant(ins[1])
    if m is None:
        return [Meta(None, np.dtype(x.dtype))]
    m = tile_multiples(int_list(m), len(x.shape), ins.label)
    return [Meta(tuple(d * k for d, k in zip(x.shape, m)), np.dtype(x.dtype))]


# -- pads -----------------------------------------------------------------------------------------

def pad_widths(paddings: object, rank: int, label: str) -> list[tuple[int, int]]:
    """A ``[rank, 2]`` paddings tensor as (before, after) pairs, all non-negative (ModelError)."""
    p = np.asarray(paddings).astype(np.int64)
    if p.shape != (rank, 2) or (p < 0).any():
        raise ModelError(f"{label}: paddings {p.tolist()} do not fit an input of rank {rank}")
    return [(int(a), int(b)) for a, b in p]


def padded_shape(shape: Sequence[int], widths: Sequence[tuple[int, int]]) -> tuple[int, ...]:
    return tuple(d + a + b for d, (a, b) in zip(shape, widths))


@define("PAD", "PADV2", attrs=NoAttrs)
def infer_pad(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, p = _x(ins), constant(ins[1])
    if p is None:
        return [Meta(None, np.dtype(x.dtype))]
    return [Meta(padded_shape(x.shape, pad_widths(p, len(x.shape), ins.label)), np.dtype(x.dtype))]


def mirror_offset(mode: MirrorMode) -> int:
    """1 for REFLECT (the edge is not repeated), 0 for SYMMETRIC."""
    return 1 if mode == MirrorMode.REFLECT else 0


def mirror_check(size: int, left: int, right: int, mode: MirrorMode, label: str) -> None:
    """MIRROR_PAD's rule: each side at most the dim (less one for REFLECT)."""
    offset = mirror_offset(mode)
    if left > size - offset or right > size - offset:
        raise ModelError(f"{label}: padding ({left}, {right}) too large for dimension {size} in this mode")


def mirror_indices(out_size: int, left: int, size: int, offset: int) -> np.ndarray:
    """Source index of each output position along one axis, TFLite's GetInputDimension formula."""
    p = np.arange(out_size)
    before = (left + offset - 1) - np.minimum(p, left - 1)
    q = p - left - size
    after_origin = size - 1 - offset
    after = after_origin - np.minimum(q, after_origin)
    return np.where(p < left, before, np.where(q >= 0, after, p - left))


@define("MIRROR_PAD", attrs=MirrorPadAttrs)
def infer_mirror_pad(attrs: MirrorPadAttrs, ins: Inputs) -> list[Meta]:
    x, p = _x(ins), constant(ins[1])
    if p is None:
        return [Meta(None, np.dtype(x.dtype))]
    widths = pad_widths(p, len(x.shape), ins.label)
    for d, (a, b) in zip(x.shape, widths):
        mirror_check(d, a, b, attrs.mode, ins.label)
    return [Meta(padded_shape(x.shape, widths), np.dtype(x.dtype))]


# -- block reshuffles -------------------------------------------------------------------------------

def depth_to_space_shape(shape: Sequence[int], b: int, label: str) -> tuple[int, ...]:
    if len(shape) != 4:
        raise ModelError(f"{label}: input must be 4-D NHWC, got {list(shape)}")
    n, h, w, c = shape
    if b <= 0 or c % (b * b):
        raise ModelError(f"{label}: depth {c} is not divisible by block_size^2 = {b * b}")
    return (n, h * b, w * b, c // (b * b))


def space_to_depth_shape(shape: Sequence[int], b: int, label: str) -> tuple[int, ...]:
    if len(shape) != 4:
        raise ModelError(f"{label}: input must be 4-D NHWC, got {list(shape)}")
    n, h, w, c = shape
    if b <= 0 or h % b or w % b:
        raise ModelError(f"{label}: spatial size {h}x{w} is not divisible by block_size {b}")
    return (n, h // b, w // b, b * b * c)


@define("DEPTH_TO_SPACE", attrs=BlockAttrs)
def infer_depth_to_space(attrs: BlockAttrs, ins: Inputs) -> list[Meta]:
    return [Meta(depth_to_space_shape(_x(ins).shape, attrs.block_size, ins.label), _dtype(ins))]


@define("SPACE_TO_DEPTH", attrs=BlockAttrs)
def infer_space_to_depth(attrs: BlockAttrs, ins: Inputs) -> list[Meta]:
    return [Meta(space_to_depth_shape(_x(ins).shape, attrs.block_size, ins.label), _dtype(ins))]


def block_shape(block: Sequence[int], rank: int, label: str) -> list[int]:
    """The block shape: positive, one per spatial axis between batch and the rest (ModelError)."""
    block = [int(b) for b in block]
    if rank < len(block) + 1 or min(block, default=1) < 1:
        raise ModelError(f"{label}: block shape {block} does not fit an input of rank {rank}")
    return block


def space_to_batch_shape(shape: Sequence[int], block: Sequence[int], paddings: object,
                         label: str) -> tuple[int, ...]:
    block = block_shape(block, len(shape), label)
    m = len(block)
    widths = pad_widths(np.asarray(paddings).reshape(m, 2), m, label)
    spatial = [d + a + b for d, (a, b) in zip(shape[1:m + 1], widths)]
    if any(s % b for s, b in zip(spatial, block)):
        raise ModelError(f"{label}: padded spatial shape {spatial} is not divisible by block shape {block}")
    return (shape[0] * int(np.prod(block)), *(s // b for s, b in zip(spatial, block)), *shape[m + 1:])


def batch_to_space_shape(shape: Sequence[int], block: Sequence[int], crops: object,
                         label: str) -> tuple[int, ...]:
    block = block_shape(block, len(shape), label)
    m, total = len(block), int(np.prod(block))
    if shape[0] % total:
        raise ModelError(f"{label}: batch {shape[0]} is not divisible by the block size {total}")
    cuts = pad_widths(np.asarray(crops).reshape(m, 2), m, label)
    spatial = [d * b for d, b in zip(shape[1:m + 1], block)]
    if any(a + b > s for s, (a, b) in zip(spatial, cuts)):
        raise ModelError(f"{label}: crops {cuts} exceed the spatial shape {spatial}")
    return (shape[0] // total, *(s - a - b for s, (a, b) in zip(spatial, cuts)), *shape[m + 1:])


@define("SPACE_TO_BATCH_ND", attrs=NoAttrs)
def infer_space_to_batch_nd(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, block, p = _x(ins), constant(ins[1]), constant(ins[2])
    if block is None or p is None:
        return [Meta(None, np.dtype(x.dtype))]
    return [Meta(space_to_batch_shape(x.shape, int_list(block), p, ins.label), np.dtype(x.dtype))]


@define("BATCH_TO_SPACE_ND", attrs=NoAttrs)
def infer_batch_to_space_nd(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, block, c = _x(ins), constant(ins[1]), constant(ins[2])
    if block is None or c is None:
        return [Meta(None, np.dtype(x.dtype))]
    return [Meta(batch_to_space_shape(x.shape, int_list(block), c, ins.label), np.dtype(x.dtype))]
