"""ARG_MAX, ARG_MIN and CUMSUM: reductions and scans along one axis given by a one-element tensor.

LiteRT registers a single kernel for each (the optimized one, also under BUILTIN_REF).
ARG_MAX / ARG_MIN (float32, uint8, int8, int32, bool; axis int32 or int64; int32 or int64
indices) keep the first index of the best value, comparing with C's ``>`` / ``<`` on the raw
values: quantized inputs compare their integers, NaN never wins, and a leading NaN sticks.
CUMSUM (float32, int32, int64) accumulates along the axis in order, in the input type (float32
sums one add at a time, integers wrap); ``exclusive`` shifts the sums by one, ``reverse`` runs
from the end.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.registry import Node, register
from teflon_py.ops.reduce import one_axis_reason

ARG_TYPES = tuple(np.dtype(t) for t in (np.float32, np.uint8, np.int8, np.int32, np.bool_))
INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
CUMSUM_TYPES = tuple(np.dtype(t) for t in (np.float32, np.int32, np.int64))


def resolve_axis(node: Node, axis: np.ndarray, ndim: int) -> int:
    """The one axis (the frontend's record of a constant, else the one-element runtime tensor's),
    negative values counted from the end."""
    recorded = getattr(node.attrs, "axis", None)
    if recorded is not None:
        reason = one_axis_reason(recorded, ndim)
        if reason:
            raise node.error(reason)
        return recorded
    flat = np.asarray(axis).reshape(-1)
    if flat.size != 1:
        raise node.error(f"the axis tensor must hold one element, not {flat.size}")
    value = int(flat[0])
    current = value + ndim if value < 0 else value
    if not 0 <= current < ndim:
        raise node.error(f"axis {value} is out of range for a rank-{ndim} input")
    return current


def arg_best(x: np.ndarray, axis: int, largest: bool) -> np.ndarray:
    """Index of the first largest (smallest) element along ``axis``, as TFLite's compare loop finds it."""
    if x.dtype.kind != "f":
        return np.argmax(x, axis) if largest else np.argmin(x, axis)
    nan = np.isnan(x)
    clean = np.where(nan, -np.inf if largest else np.inf, x)  # NaN never beats the running best
    index = np.argmax(clean, axis) if largest else np.argmin(clean, axis)
    leading_nan = np.take(nan, 0, axis=axis)  # the loop's seed: nothing beats a NaN
    return np.where(leading_nan, 0, index)


@register("ARG_MAX", "ARG_MIN")
def arg_max_min(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Index of the largest (ARG_MAX) or smallest (ARG_MIN) element along the axis; ties -> first."""
    x, axis = inputs[0], inputs[1]
    if node.inputs[0].dtype not in ARG_TYPES:
        raise node.error(f"input type {node.inputs[0].dtype} is not supported "
                         f"(LiteRT takes {', '.join(map(str, ARG_TYPES))})")
    out_type = np.dtype(node.outputs[0].dtype)
    if out_type not in INDEX_TYPES:
        raise node.error(f"output type {out_type} is not supported (int32 or int64 indices)")
    if x.ndim < 1:
        raise node.invalid("input must have at least one dimension")
    a = resolve_axis(node, axis, x.ndim)
    if x.shape[a] == 0:
        raise node.error("the reduced axis is empty")
    return arg_best(x, a, node.op.name == "ARG_MAX").astype(out_type)


@register("CUMSUM")
def cumsum(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Running sums along the axis; ``exclusive`` leaves each element out of its own sum."""
    x, axis = inputs[0], inputs[1]
    dtype = np.dtype(node.inputs[0].dtype)
    if dtype not in CUMSUM_TYPES or node.outputs[0].dtype != dtype:
        raise node.error(f"{dtype} input with {node.outputs[0].dtype} output is not supported "
                         f"(LiteRT takes {', '.join(map(str, CUMSUM_TYPES))})")
    if node.inputs[1].dtype != np.int32:
        raise node.error(f"the axis tensor must be int32, not {node.inputs[1].dtype}")
    if x.ndim < 1:
        raise node.invalid("input must have at least one dimension")
    a = resolve_axis(node, axis, x.ndim)
    options = node.attrs
    y = np.flip(x, a) if options.reverse else x
    sums = np.cumsum(y, axis=a, dtype=dtype)  # sequential, in the input type
    if options.exclusive and x.shape[a]:
        head = np.zeros_like(np.take(sums, [0], axis=a))
        sums = np.concatenate([head, np.delete(sums, -1, axis=a)], axis=a)
    return np.ascontiguousarray(np.flip(sums, a) if options.reverse else sums)
