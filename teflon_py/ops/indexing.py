"""The indexing family: SLICE, STRIDED_SLICE, GATHER, GATHER_ND, SCATTER_ND, ONE_HOT, WHERE,
TOPK_V2, EMBEDDING_LOOKUP, DENSIFY: attributes, rules and shape inference.

STRIDED_SLICE's index computation (TFLite's, masks and all) is ``strided_slice_ranges``, which
the NumPy kernel and the OpenCL lowering both call.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon_py.errors import ModelError
from teflon_py.ops.common import NoAttrs, normalize_axis
from teflon_py.ops.registry import Inputs, Meta, declared, define
from teflon_py.ops.shape import constant, int_list


def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


# -- SLICE --------------------------------------------------------------------------------------

def slice_bounds(shape: Sequence[int], begin: Sequence[int], size: Sequence[int],
                 label: str) -> list[tuple[int, int]]:
    """SLICE: ``[begin, begin + size)`` per axis (size -1: to the end), inside the input (ModelError)."""
    begin, size = [int(b) for b in begin], [int(s) for s in size]
    if len(begin) != len(shape) or len(size) != len(shape):
        raise ModelError(f"{label}: begin {begin} / size {size} do not fit an input of rank {len(shape)}")
    bounds = []
    for b, s, d in zip(begin, size, shape):
        end = d if s == -1 else b + s
        if not 0 <= b <= end <= d:
            raise ModelError(f"{label}: slice [{b}, {end}) is out of range for dimension {d}")
        bounds.append((b, end))
    return bounds


@define("SLICE", attrs=NoAttrs)
def infer_slice(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, b, s = ins[0], constant(ins[1]), constant(ins[2])
    if b is None or s is None:
        return [Meta(None, np.dtype(x.dtype))]
    bounds = slice_bounds(x.shape, int_list(b), int_list(s), ins.label)
    return [Meta(tuple(e - a for a, e in bounds), np.dtype(x.dtype))]


# -- STRIDED_SLICE --------------------------------------------------------------------------------

@dataclass(frozen=True)
class StridedSliceAttrs:
    """STRIDED_SLICE's masks (bit i: entry i of begin/end/strides) and ``offset`` (end relative
    to begin)."""

    begin_mask: int = 0
    end_mask: int = 0
    ellipsis_mask: int = 0
    new_axis_mask: int = 0
    shrink_axis_mask: int = 0
    offset: bool = False


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


def strided_slice_plan(attrs: StridedSliceAttrs, in_shape: Sequence[int], begin: list[int], end: list[int],
                       strides: list[int]) -> SlicePlan:
    """Expand ellipsis and new-axis entries into one spec per effective axis, as TFLite does."""
    n, rank = len(begin), len(in_shape)
    ell, new = attrs.ellipsis_mask, attrs.new_axis_mask
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
            plan.begin_mask |= _bit(attrs.begin_mask, k) << i
            plan.end_mask |= _bit(attrs.end_mask, k) << i
            plan.shrink_mask |= _bit(attrs.shrink_axis_mask, k) << i
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


def strided_slice_ranges(attrs: StridedSliceAttrs, in_shape: Sequence[int], begin: Sequence[int],
                         end: Sequence[int], strides: Sequence[int],
                         label: str = "STRIDED_SLICE") -> tuple[list[int], list[range | int]]:
    """TFLite's effective STRIDED_SLICE, for every backend: the shape to view the input as (new
    axes inserted) and, per axis of that view, the range of indices taken, or the one index of a
    shrunk axis. ModelError on malformed parameters."""
    begin, end, strides = ([int(v) for v in p] for p in (begin, end, strides))
    if not len(begin) == len(end) == len(strides):
        raise ModelError(f"{label}: begin, end and strides differ in length")
    if 0 in strides:
        raise ModelError(f"{label}: stride value has to be non-zero")
    plan = strided_slice_plan(attrs, in_shape, begin, end, strides)
    axes: list[range | int] = []
    for axis in range(len(plan.shape)):
        start, stride = axis_start(plan, axis), plan.strides[axis]
        if _bit(plan.shrink_mask, axis):
            if not 0 <= start < plan.shape[axis]:
                raise ModelError(f"{label}: shrunk index {plan.begin[axis]} is out of range for "
                                 f"dimension {plan.shape[axis]}")
            axes.append(start)
        else:  # a negative stride runs down to -1 at most, so range() holds exactly the indices
            axes.append(range(start, axis_stop(plan, axis, start, bool(attrs.offset)), stride))
    return plan.shape, axes


@define("STRIDED_SLICE", attrs=StridedSliceAttrs)
def infer_strided_slice(attrs: StridedSliceAttrs, ins: Inputs) -> list[Meta]:
    x = ins[0]
    params = [constant(ins[k]) for k in (1, 2, 3)]
    if any(p is None for p in params):
        return [Meta(None, np.dtype(x.dtype))]
    _, axes = strided_slice_ranges(attrs, x.shape, *(int_list(p) for p in params), label=ins.label)
    return [Meta(tuple(len(a) for a in axes if not isinstance(a, int)), np.dtype(x.dtype))]


# -- GATHER / GATHER_ND / SCATTER_ND ------------------------------------------------------------------

@dataclass(frozen=True)
class GatherAttrs:
    """GATHER: the axis of the input (normalised where the rank allows it) and batch_dims (as
    given; negative counts from the positions' rank)."""

    axis: int = 0
    batch_dims: int = 0


def gather_geometry(shape: Sequence[int], positions: Sequence[int], attrs: GatherAttrs,
                    label: str) -> tuple[int, int, tuple[int, ...]]:
    """(axis, batch_dims, output shape) of GATHER, both normalised (ModelError)."""
    shape, positions = tuple(shape), tuple(positions)
    axis = normalize_axis(attrs.axis, len(shape), label)
    bd = attrs.batch_dims + (len(positions) if attrs.batch_dims < 0 else 0)
    if not 0 <= bd <= min(axis, len(positions)) or shape[:bd] != positions[:bd]:
        raise ModelError(f"{label}: batch_dims {attrs.batch_dims} does not fit input {list(shape)}, "
                         f"positions {list(positions)}")
    return axis, bd, shape[:axis] + positions[bd:] + shape[axis + 1:]


def check_indices(idx: np.ndarray, limit: int, what: str, label: str) -> None:
    """ModelError unless every index lies in ``[0, limit)``."""
    idx = np.asarray(idx)
    if idx.size and (idx.min() < 0 or idx.max() >= limit):
        raise ModelError(f"{label}: {what} index out of range [0, {limit}): min {idx.min()}, max {idx.max()}")


@define("GATHER", attrs=GatherAttrs)
def infer_gather(attrs: GatherAttrs, ins: Inputs) -> list[Meta]:
    x, idx = ins[0], ins[1]
    axis, _, shape = gather_geometry(x.shape, idx.shape, attrs, ins.label)
    if idx.data is not None:
        check_indices(idx.data, x.shape[axis], "gather", ins.label)
    return [Meta(shape, np.dtype(x.dtype))]


@define("GATHER_ND", attrs=NoAttrs)
def infer_gather_nd(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    params, indices = ins[0], ins[1]
    depth = indices.shape[-1]
    if depth > len(params.shape):
        raise ins.error(f"index depth {depth} exceeds the rank {len(params.shape)}")
    return [Meta(tuple(indices.shape[:-1]) + tuple(params.shape[depth:]), np.dtype(params.dtype))]


@define("SCATTER_ND", attrs=NoAttrs)
def infer_scatter_nd(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    shape = constant(ins[2])
    return [Meta(None if shape is None else tuple(int_list(shape)), np.dtype(ins[1].dtype))]


# -- ONE_HOT / WHERE / TOPK_V2 / EMBEDDING_LOOKUP / DENSIFY ---------------------------------------------

@dataclass(frozen=True)
class OneHotAttrs:
    """ONE_HOT: the new axis, against the output rank (as given: -1 is the last)."""

    axis: int = -1


def one_hot_shape(shape: Sequence[int], depth: int, axis: int, label: str) -> tuple[int, ...]:
    if depth < 0:
        raise ModelError(f"{label}: depth {depth} is negative")
    axis = normalize_axis(axis, len(shape) + 1, label)
    return tuple(shape[:axis]) + (depth,) + tuple(shape[axis:])


@define("ONE_HOT", attrs=OneHotAttrs)
def infer_one_hot(attrs: OneHotAttrs, ins: Inputs) -> list[Meta]:
    depth = constant(ins[1])
    if depth is None:
        return [declared(ins, 0, None)]
    return [declared(ins, 0, one_hot_shape(ins[0].shape, int_list(depth)[0], attrs.axis, ins.label))]


@define("WHERE", attrs=NoAttrs)
def infer_where(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    return [declared(ins, 0, None)]


@define("TOPK_V2", attrs=NoAttrs)
def infer_topk_v2(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, k = ins[0], constant(ins[1])
    if k is None:
        return [Meta(None, np.dtype(x.dtype)), declared(ins, 1, None)]
    k = int_list(k)[0]
    if k > x.shape[-1]:
        raise ins.error(f"k = {k} exceeds the last dimension {x.shape[-1]}")
    shape = tuple(x.shape[:-1]) + (max(k, 0),)
    return [Meta(shape, np.dtype(x.dtype)), declared(ins, 1, shape)]


@define("EMBEDDING_LOOKUP", attrs=NoAttrs)
def infer_embedding_lookup(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    lookup, value = ins[0], ins[1]
    return [declared(ins, 0, (int(np.prod(lookup.shape)),) + tuple(value.shape[1:]))]


@define("DENSIFY", attrs=NoAttrs)
def infer_densify(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    t = ins[0]
    if t is None or t.sparsity is None or not t.is_constant:
        raise ins.unsupported("input must be a constant tensor with sparsity parameters")
    return [Meta(tuple(t.shape), np.dtype(t.dtype))]
