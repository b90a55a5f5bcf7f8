"""The shape family: RESHAPE, SQUEEZE, EXPAND_DIMS, SHAPE, RANK, BROADCAST_TO, BROADCAST_ARGS,
FILL, RANGE (ZEROS_LIKE is a unary op, in ``ops.unary``): attributes, rules and shape inference.

Shapes given as constant operands are read here (``tensor.data``); a runtime one makes the output
data-dependent (``Meta(shape=None)``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon_py import ir
from teflon_py.errors import ModelError
from teflon_py.ops.common import NoAttrs, normalize_axis
from teflon_py.ops.registry import Inputs, Meta, declared, define


def int_list(value: object) -> list[int]:
    """A parameter (scalar or vector of any integer type) as Python ints."""
    return [int(v) for v in np.asarray(value).reshape(-1)]


def constant(t: ir.Tensor | None) -> np.ndarray | None:
    """A tensor's constant data, or None (absent or runtime)."""
    return None if t is None or t.data is None else np.asarray(t.data)


@dataclass(frozen=True)
class ReshapeAttrs:
    """RESHAPE: the requested shape (one entry may be -1), None when it is a runtime tensor."""

    shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class SqueezeAttrs:
    """SQUEEZE: the dims to drop (as given; negative count from the end), () for every size-1 dim."""

    dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class ExpandDimsAttrs:
    """EXPAND_DIMS: the new axis (as given, in [-rank-1, rank]), None when it is a runtime tensor."""

    axis: int | None = None


def reshape_operand_is_shape(t: ir.Tensor | None) -> bool:
    """Whether RESHAPE's second operand gives the shape (LiteRT: a 1-D int32 tensor)."""
    return t is not None and np.dtype(t.dtype) == np.int32 and len(t.shape) == 1


def resolve_shape(shape: Sequence[int], size: int, label: str) -> tuple[int, ...]:
    """``shape`` with its one -1 resolved to hold ``size`` elements, as reshape.cc (ModelError)."""
    shape = [int(d) for d in shape]
    stretch = [i for i, d in enumerate(shape) if d == -1]
    if len(stretch) > 1:
        raise ModelError(f"{label}: new shape {shape} has more than one -1")
    if any(d < -1 for d in shape):
        raise ModelError(f"{label}: new shape {shape} has a negative dimension")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if stretch:
        if known == 0 or size % known:
            raise ModelError(f"{label}: cannot reshape {size} elements into {shape}")
        shape[stretch[0]] = size // known
    elif known != size:
        raise ModelError(f"{label}: cannot reshape {size} elements into {shape}")
    return tuple(shape)


@define("RESHAPE", attrs=ReshapeAttrs)
def infer_reshape(attrs: ReshapeAttrs, ins: Inputs) -> list[Meta]:
    x = ins[0]
    shape = attrs.shape
    if shape is None and reshape_operand_is_shape(ins[1]) and ins[1].is_constant:
        shape = tuple(int(d) for d in ins[1].data)  # a shape the plan folded (``shape_folding``)
    if shape is None:
        return [Meta(None, np.dtype(x.dtype))]
    return [Meta(resolve_shape(shape, int(np.prod(x.shape, dtype=np.int64)), ins.label), np.dtype(x.dtype))]


def squeeze_shape(shape: Sequence[int], dims: Sequence[int], label: str) -> tuple[int, ...]:
    """SQUEEZE's output shape: the listed size-1 dims dropped, or every size-1 dim (ModelError)."""
    if not dims:
        return tuple(d for d in shape if d != 1)
    rank = len(shape)
    axes = set()
    for d in dims:
        a = d + rank if d < 0 else d
        if not 0 <= a < rank or shape[a] != 1:
            raise ModelError(f"{label}: cannot squeeze dim {d} of shape {tuple(shape)}")
        axes.add(a)
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@define("SQUEEZE", attrs=SqueezeAttrs)
def infer_squeeze(attrs: SqueezeAttrs, ins: Inputs) -> list[Meta]:
    x = ins[0]
    return [Meta(squeeze_shape(x.shape, attrs.dims, ins.label), np.dtype(x.dtype))]


@define("EXPAND_DIMS", attrs=ExpandDimsAttrs)
def infer_expand_dims(attrs: ExpandDimsAttrs, ins: Inputs) -> list[Meta]:
    x = ins[0]
    axis = attrs.axis
    if axis is None and ins[1] is not None and ins[1].is_constant and np.size(ins[1].data) == 1:
        axis = int(np.asarray(ins[1].data).reshape(-1)[0])  # an axis the plan folded
    if axis is None:
        return [Meta(None, np.dtype(x.dtype))]
    axis = normalize_axis(axis, len(x.shape) + 1, ins.label)
    shape = tuple(x.shape)
    return [Meta(shape[:axis] + (1,) + shape[axis:], np.dtype(x.dtype))]


@define("SHAPE", attrs=NoAttrs)
def infer_shape(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    return [declared(ins, 0, (len(ins[0].shape),))]


@define("RANK", attrs=NoAttrs)
def infer_rank(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    return [declared(ins, 0, ())]


def broadcast_shape(a: Sequence[int], b: Sequence[int], label: str) -> tuple[int, ...]:
    """NumPy's (and TFLite's) broadcast of two shapes (ModelError where they do not broadcast)."""
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        raise ModelError(f"{label}: shapes {list(a)} and {list(b)} do not broadcast") from None


def broadcast_to_shape(shape: Sequence[int], target: Sequence[int], label: str) -> tuple[int, ...]:
    """BROADCAST_TO's output: ``target``, which ``shape`` must broadcast to (ModelError)."""
    target = tuple(int(d) for d in target)
    padded = (1,) * (len(target) - len(shape)) + tuple(shape)
    if len(padded) != len(target) or any(d not in (1, t) for d, t in zip(padded, target)):
        raise ModelError(f"{label}: cannot broadcast {tuple(shape)} to {list(target)}")
    return target


@define("BROADCAST_TO", attrs=NoAttrs)
def infer_broadcast_to(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x, shape = ins[0], constant(ins[1])
    if shape is None:
        return [Meta(None, np.dtype(x.dtype))]
    return [Meta(broadcast_to_shape(x.shape, int_list(shape), ins.label), np.dtype(x.dtype))]


@define("BROADCAST_ARGS", attrs=NoAttrs)
def infer_broadcast_args(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    a, b = constant(ins[0]), constant(ins[1])
    if a is not None and b is not None:
        return [declared(ins, 0, (len(broadcast_shape(int_list(a), int_list(b), ins.label)),))]
    return [declared(ins, 0, (max(int(np.prod(ins[0].shape)), int(np.prod(ins[1].shape))),))]


def fill_shape(dims: Sequence[int], label: str) -> tuple[int, ...]:
    """FILL's output shape: ``dims``, none negative (ModelError)."""
    dims = tuple(int(d) for d in dims)
    if min(dims, default=0) < 0:
        raise ModelError(f"{label}: negative dimension in {list(dims)}")
    return dims


@define("FILL", attrs=NoAttrs)
def infer_fill(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    dims = constant(ins[0])
    return [declared(ins, 0, None if dims is None else fill_shape(int_list(dims), ins.label))]



def range_size(start: object, limit: object, delta: object, label: str) -> int:
    """Element count of RANGE: ceil(|limit - start| / |delta|) for integers, in float32 for floats
    (as LiteRT); a ModelError when it is empty or endless."""
    start, limit, delta = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    if delta == 0 or not ((start >= limit and delta < 0) or (start <= limit and delta > 0)):
        raise ModelError(f"{label}: range({start}, {limit}, {delta}) is empty or endless")
    if start.dtype.kind == "f":
        return int(np.ceil(np.abs((limit - start) / delta)))
    s, lim, d = int(start), int(limit), int(delta)
    return (abs(lim - s) + abs(d) - 1) // abs(d)


@define("RANGE", attrs=NoAttrs)
def infer_range(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    if ins[0] is not None and ins[0].quantization is not None:
        raise ins.unsupported("quantized RANGE is not supported")
    values = [constant(ins[k]) for k in range(3)]
    if any(v is None for v in values):
        return [declared(ins, 0, None)]
    return [declared(ins, 0, (range_size(*values, ins.label),))]
